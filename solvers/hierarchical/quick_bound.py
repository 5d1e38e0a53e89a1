"""The classic parts of :func:`solvers.scheduling.bounds.lower_bound`, computed fast on large graphs.

Since the stronger bounds of issue 11 (forced placements, placement-aware paths, the certified
LP) joined ``lower_bound``, this is at most ``lower_bound``: it computes the work, max-op,
critical-path, fractional-load and segment parts only.

Notes
-----
:func:`~solvers.scheduling.bounds.lower_bound` solves its fractional-load LP with one
variable per (op, device): on a 10,000-op graph building it takes longer than the rest of
the bound. Ops with identical duration rows can share their variables: for an LP optimum
``f``, averaging ``f`` over a class of identical ops keeps every constraint (they are
linear and the ops are interchangeable in them) and the value, so the LP is unchanged when
each class becomes one op whose durations are the row times the class size (``F = m f``
carries the same load). :func:`aggregated_rows` builds that smaller problem, and
:func:`quick_lower_bound` returns those parts of ``lower_bound(problem, segments)``, computing the
segment part's per-segment bounds once per distinct segment (repeated layers share it).
"""

from __future__ import annotations

from collections import Counter

from solvers.scheduling.bounds import (critical_path_bound, fractional_load_bound, max_op_bound,
                                       segment_problems, work_bound)
from solvers.scheduling.problem import Objective, SchedulingProblem

__all__ = ["aggregated_rows", "quick_lower_bound"]


def aggregated_rows(problem: SchedulingProblem) -> SchedulingProblem:
    """One op per distinct duration row, its durations times the row's multiplicity.

    Only the durations, streams and objective are kept (what the fractional LP reads).

    Examples
    --------
    >>> p = SchedulingProblem(((6, 2), (6, 2), (1, -1)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> aggregated_rows(p).durations_cycles
    ((1, -1), (12, 4))
    """
    counts = Counter(problem.durations_cycles)
    rows = tuple(tuple(x * m if x >= 0 else x for x in row) for row, m in
                 sorted(counts.items()))
    nd = problem.num_devices
    return SchedulingProblem(rows, (), problem.device_streams, ((-1,) * nd,) * nd, (),
                             problem.objective)


def _fractional(problem: SchedulingProblem, cache: dict) -> int:
    agg = aggregated_rows(problem)
    key = (agg.durations_cycles, agg.device_streams, agg.objective)
    if key not in cache:
        cache[key] = fractional_load_bound(agg)
    return cache[key]


def _plain_bound(problem: SchedulingProblem, cache: dict) -> int:
    if problem.num_ops == 0:
        return 0
    if problem.objective is Objective.LATENCY:
        return max(critical_path_bound(problem), work_bound(problem), _fractional(problem, cache))
    return max(max_op_bound(problem), _fractional(problem, cache))


def quick_lower_bound(problem: SchedulingProblem, segments: bool = True) -> int:
    """The classic parts of ``lower_bound(problem, segments)`` (at most it), with the LP on
    aggregated rows (module Notes).

    Examples
    --------
    >>> from solvers.scheduling.bounds import lower_bound
    >>> p = SchedulingProblem(((1,), (5,), (5,), (1,)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,), ((-1,),), ((),) * 4)
    >>> quick_lower_bound(p), lower_bound(p)
    (12, 12)
    """
    cache: dict = {}
    best = _plain_bound(problem, cache)
    if segments and problem.objective is Objective.LATENCY and problem.num_ops:
        seg = 0
        for sub, _ops in segment_problems(problem):
            seg += _plain_bound(sub, cache)
        best = max(best, seg)
    return best
