"""The contiguous split's free sources (solvers.scheduling.contiguous): weight sources listed
first by the topological order are split next to their consumers, never worse than before."""

from __future__ import annotations

import random

import pytest

from solvers.scheduling.contiguous import contiguous_schedule, sources_at_first_use
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, validate_schedule


def _weights_first_chain(length: int) -> SchedulingProblem:
    """Weight sources 0..length-1 (0 cycles, 3 bytes, 5-cycle transfers) feed a chain of
    1-cycle ops length..2*length-1 (1-cycle transfers); two devices of 6 bytes. Kahn's order
    by index lists every source before the chain."""
    edges = [(length + i, length + i + 1, 0) for i in range(length - 1)] + [(i, length + i, 0) for i in range(length)]
    transfer = [(1,)] * (length - 1) + [(5,)] * length
    return SchedulingProblem(((0, 0),) * length + ((1, 1),) * length, tuple(edges), (1, 1), ((-1, 0), (0, -1)),
                             tuple(transfer), device_memory_bytes=(6, 6),
                             op_resident_bytes=(3,) * length + (0,) * length)


def test_sources_move_next_to_their_consumers():
    p = _weights_first_chain(4)
    assert topological_order(p) == (0, 1, 2, 3, 4, 5, 6, 7)
    assert sources_at_first_use(p, topological_order(p)) == (0, 4, 1, 5, 2, 6, 3, 7)


def test_split_keeps_each_weight_with_its_consumer():
    # With the plain order the first block holds w0, w1 and the chain waits 5 cycles for each
    # of their transfers (makespan 13); next to their consumers: a, b | c, d with one 1-cycle
    # transfer between them (1 + 1 + 1 + 1 + 1).
    p = _weights_first_chain(4)
    s = contiguous_schedule(p)
    assert s.op_device == (0, 0, 1, 1, 0, 0, 1, 1)
    assert objective_value(p, s) == 5


@pytest.mark.parametrize("seed", range(20))
def test_reordering_keeps_a_topological_order(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    edges = sorted({(u, v, 0) for _ in range(2 * n) for u, v in [sorted(rng.sample(range(n), 2))]})
    durations = tuple((0,) if rng.random() < 0.4 else (rng.randint(1, 4),) for _ in range(n))
    p = SchedulingProblem(durations, tuple(edges), (1,), ((-1,),), ((),) * len(edges))
    order = sources_at_first_use(p, topological_order(p))
    pos = {op: k for k, op in enumerate(order)}
    assert sorted(order) == list(range(n))
    assert all(pos[u] < pos[v] for u, v, _ in edges)
    has_pred = {v for _, v, _ in edges}
    for op in order:  # a free source with a successor sits right before its first successor
        succ = [v for u, v, _ in edges if u == op]
        if succ and op not in has_pred and durations[op] == (0,):
            first = min(succ, key=topological_order(p).index)
            k = pos[first] - 1
            while order[k] != op:  # other sources of the same consumer may sit between
                assert order[k] not in has_pred and durations[order[k]] == (0,)
                k -= 1


@pytest.mark.parametrize("seed", range(10))
def test_never_worse_than_the_plain_order(seed, monkeypatch):
    import solvers.scheduling.contiguous as contiguous

    rng = random.Random(seed)
    n = 6
    chain = [(n + i, n + i + 1, 0) for i in range(n - 1)]
    edges = tuple(chain + [(i, n + rng.randrange(n), 0) for i in range(n)])
    p = SchedulingProblem(((0, 0),) * n + tuple((d, d) for d in (rng.randint(1, 3) for _ in range(n))), edges,
                          (1, 1), ((-1, 0), (0, -1)), tuple((rng.randint(0, 4),) for _ in edges),
                          device_memory_bytes=(10, 10),
                          op_resident_bytes=tuple(rng.randint(1, 3) for _ in range(n)) + (0,) * n)
    both = contiguous_schedule(p)
    monkeypatch.setattr(contiguous, "sources_at_first_use", lambda problem, order: order)
    plain = contiguous_schedule(p)
    assert both is not None and not validate_schedule(p, both)
    assert plain is None or objective_value(p, both) <= objective_value(p, plain)
