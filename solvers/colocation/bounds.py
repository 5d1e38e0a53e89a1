"""Lower bounds and infeasibility explanations for co-location.

The bounds are relaxations that any packing obeys; the CP-SAT model adds them as
constraints and the report quotes them next to the objective.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solvers.colocation.problem import BASIS_POINTS, ColocationProblem
from solvers.budget import COLOCATION, NET_SLOWDOWN_ENV, Budget
from solvers.core import SolveOptions, Status

__all__ = ["Shortfall", "cost_lower_bound", "class_mix_bound", "max_utilization_lower_bound",
           "explain_infeasibility", "min_demand", "CLASS_MIX_DTIME"]

_LOG = logging.getLogger(__name__)

# Above this many classes the Hall-style subset check is skipped (2^k subsets).
_MAX_SUBSET_CLASSES = 8
# Deterministic units the several-class bound's integer program may use: a variable per class,
# proven at once in practice; the limit only guards a pathological class mix. Kept from the
# fixed 0.5 it had, so the bound (and every plan built on it) is unchanged.
CLASS_MIX_DTIME = 0.5


def min_demand(problem: ColocationProblem, t: int, d: int) -> int:
    """The smallest demand of one copy of type ``t`` in dimension ``d`` over allowed classes.

    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((10,), (10,)), (1, 1), (((4,), (3,)),))
    >>> min_demand(p, 0, 0)
    3
    """
    return min(v[d] for v in problem.demand[t] if v is not None)


def cost_lower_bound(problem: ColocationProblem, budget: Budget | None = None) -> int:
    """A lower bound on the cost of any packing (the number of bins with unit costs).

    The largest of: the volume bound (per dimension, the cheapest choice of bins whose
    summed capacity covers the summed demand; ``max_d ceil(sum / capacity)`` for one class),
    and, for one class, the count of items above half the capacity in one dimension (no two
    of them share a bin). Several classes take a tiny integer program
    (:func:`class_mix_bound`), charged to ``budget`` and stopped only by its net.

    Examples
    --------
    Triplets summing exactly to the capacity: the bound is n/3.

    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((10, 10),), (4,), tuple(((a, b),) for a, b in
    ...     [(2, 5), (3, 3), (5, 2), (6, 1), (2, 2), (2, 7)]))
    >>> cost_lower_bound(p)
    2
    """
    nd = problem.num_dims
    totals = [sum(problem.multiplicity[t] * min_demand(problem, t, d) for t in range(problem.num_types))
              for d in range(nd)]
    if problem.num_classes == 1:
        cap = problem.capacity[0]
        volume = max(-(-totals[d] // cap[d]) for d in range(nd))
        big = 0
        for d in range(nd):
            n = sum(problem.multiplicity[t] for t in range(problem.num_types)
                    if 2 * problem.demand[t][0][d] > cap[d])
            big = max(big, n)
        return max(volume, big, 1 if problem.num_items else 0) * problem.class_cost[0]
    return class_mix_bound(problem, totals, budget)


def class_mix_bound(problem: ColocationProblem, totals: list[int], budget: Budget | None = None) -> int:
    """The cheapest number of bins per class whose summed capacity covers ``totals`` (the summed
    smallest demand per dimension): CP-SAT's proven bound on that integer program, sound however
    its search stops (any packing's open bins are such a choice).

    The search is CP-SAT's deterministic limit of :data:`CLASS_MIX_DTIME` units, charged to
    ``budget`` under its wall-clock net: a net stop is the budget's ``stopped_by:
    wall_clock`` (the solver's stats say so). Without ``budget`` the net is that of a
    co-location budget of the same units (:func:`~solvers.budget.net_seconds` of their seconds), and
    a net stop is logged: the bound may then be weaker than on an idle machine.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((10,), (4,)), (3, 3), (((9,), None), ((3,), (3,))), class_cost=(5, 1))
    >>> b = Budget.start(10.0, COLOCATION)
    >>> class_mix_bound(p, [12], b), b.stopped_by   # 10 + 4 covers 12 for 6; 4+4+4 for 3: 3
    (3, None)
    """
    model = cp_model.CpModel()
    n = [model.new_int_var(0, problem.class_count[c], f"n_{c}") for c in range(problem.num_classes)]
    for d in range(problem.num_dims):
        model.add(sum(n[c] * problem.capacity[c][d] for c in range(problem.num_classes)) >= totals[d])
    if problem.num_items:
        model.add(sum(n) >= 1)
    model.minimize(sum(n[c] * problem.class_cost[c] for c in range(problem.num_classes)))
    own = budget is None
    if own:
        budget = Budget.start(CLASS_MIX_DTIME / COLOCATION.units_per_second, COLOCATION)
    # seed 1 is CP-SAT's default, kept; stage None: no stats line, so plans stay byte-identical
    status, solver, _ = budget.run_cpsat(model, SolveOptions(num_workers=1, random_seed=1),
                                         budget.scale(CLASS_MIX_DTIME), None, interleave=False)
    if own and budget.last_stop == "wall_clock":
        _LOG.warning("the co-location class-mix bound stopped on the wall-clock safety net (raise %s): "
                     "the bound may be weaker than on an idle machine", NET_SLOWDOWN_ENV)
    if status is Status.INFEASIBLE:
        return sum(problem.class_count[c] * problem.class_cost[c] for c in range(problem.num_classes)) + 1
    return int(round(solver.best_objective_bound))


def max_utilization_lower_bound(problem: ColocationProblem) -> int:
    """A lower bound, in basis points, on the largest utilization of any packing.

    The largest of every item's own utilization on its best class, and per dimension the
    total demand over the total capacity of all bins (the busiest bin is at least as busy
    as the average).

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationObjective, ColocationProblem
    >>> p = ColocationProblem(((10,),), (2,), (((3,),), ((3,),), ((6,),)),
    ...                       objective=ColocationObjective.MIN_MAX_UTILIZATION)
    >>> max_utilization_lower_bound(p)  # one item alone is 60%; the average is 12/20 = 60%
    6000
    """
    best = 0
    for t in range(problem.num_types):
        per_class = [max(-(-BASIS_POINTS * x // k) for x, k in zip(v, problem.capacity[c]))
                     for c, v in enumerate(problem.demand[t]) if v is not None]
        best = max(best, min(per_class))
    for d in range(problem.num_dims):
        total = sum(problem.multiplicity[t] * min_demand(problem, t, d) for t in range(problem.num_types))
        cap = sum(problem.class_count[c] * problem.capacity[c][d] for c in range(problem.num_classes))
        best = max(best, -(-BASIS_POINTS * total // cap))
    return best


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A set of classes whose capacity in one dimension is below the demand that must use it.

    >>> Shortfall((0,), 1, 120, 100).missing
    20
    """

    classes: tuple[int, ...]
    dim: int
    demand: int
    capacity: int

    @property
    def missing(self) -> int:
        return self.demand - self.capacity


def explain_infeasibility(problem: ColocationProblem) -> list[Shortfall]:
    """Why no packing exists, when a counting argument shows it.

    For every set S of classes (all of them when there are few), the items whose allowed
    classes all lie in S must fit the summed capacity of S in each dimension; each
    violated set and dimension is one :class:`Shortfall`, smallest sets first. Types
    that fit no empty bin of any allowed class are reported with ``dim=-1``-free
    shortfalls by the caller (see :func:`ColocationProblem.fits_alone`).

    An empty list does not prove feasibility (bin packing is harder than counting).

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((10, 10),), (2,), (((8, 1),), ((8, 1),), ((8, 1),)))
    >>> explain_infeasibility(p)
    [Shortfall(classes=(0,), dim=0, demand=24, capacity=20)]
    """
    k = problem.num_classes
    if k <= _MAX_SUBSET_CLASSES:
        subsets = [s for r in range(1, k + 1) for s in itertools.combinations(range(k), r)]
    else:
        subsets = [(c,) for c in range(k)] + [tuple(range(k))]
    out: list[Shortfall] = []
    for s in subsets:
        inside = set(s)
        types = [t for t in range(problem.num_types)
                 if {c for c, v in enumerate(problem.demand[t]) if v is not None} <= inside]
        if not types:
            continue
        for d in range(problem.num_dims):
            need = sum(problem.multiplicity[t] * min(problem.demand[t][c][d] for c in s
                                                      if problem.demand[t][c] is not None)
                       for t in types)
            have = sum(problem.class_count[c] * problem.capacity[c][d] for c in s)
            if need > have:
                out.append(Shortfall(tuple(s), d, need, have))
    return out
