"""Generated co-location instances for tests and benchmarks.

Examples
--------
>>> p = triplet_instance(6, seed=0)
>>> p.num_items, p.class_count
(6, (3,))
>>> sum(d[0][0] for d in p.demand) == 2 * 1000  # two triplets, each summing to the capacity
True
"""

from __future__ import annotations

import random

from solvers.colocation.problem import ColocationObjective, ColocationProblem

__all__ = ["triplet_instance", "random_fleet"]


def triplet_instance(n: int, *, seed: int = 0, cap: tuple[int, ...] = (1000, 1000, 1000)) -> ColocationProblem:
    """n items in n/3 triplets, each summing exactly to ``cap`` in every dimension: optimum n/3.

    Examples
    --------
    >>> p = triplet_instance(30, seed=1)
    >>> [sum(d[0][k] for d in p.demand) for k in range(3)]  # 10 triplets x 1000 per dimension
    [10000, 10000, 10000]
    """
    rng = random.Random(seed)
    items = []
    for _ in range(n // 3):
        trip = [[0] * len(cap) for _ in range(3)]
        for d, c in enumerate(cap):
            a = rng.randint(1, c - 2)
            b = rng.randint(1, c - a - 1)
            for k, x in enumerate((a, b, c - a - b)):
                trip[k][d] = x
        items += [tuple(t) for t in trip]
    rng.shuffle(items)
    return ColocationProblem((cap,), (n // 3 + n // 6,), tuple((it,) for it in items))


def random_fleet(n_models: int = 1000, n_types: int = 50, *, small: int = 120, large: int = 80, seed: int = 0,
                 objective: ColocationObjective = ColocationObjective.MIN_COST) -> ColocationProblem:
    """``n_models`` models of ``n_types`` types on ``small`` + ``large`` processors of two sizes.

    Demands are (ops/s, IO bytes/s, storage) in scaled units; identical models are grouped
    by multiplicity.

    Examples
    --------
    >>> p = random_fleet(100, 10, small=12, large=8)
    >>> sum(p.multiplicity), p.class_count
    (100, (12, 8))
    """
    rng = random.Random(seed)
    caps = ((100_000, 100_000, 32_000), (200_000, 150_000, 64_000))
    types = [(rng.randint(2_000, 30_000), rng.randint(1_000, 30_000), rng.randint(500, 12_000))
             for _ in range(n_types)]
    mult = [0] * n_types
    for _ in range(n_models):
        mult[rng.randrange(n_types)] += 1
    keep = [t for t in range(n_types) if mult[t] > 0]
    return ColocationProblem(caps, (small, large), tuple((types[t], types[t]) for t in keep),
                             multiplicity=tuple(mult[t] for t in keep), class_cost=(1, 1), objective=objective)
