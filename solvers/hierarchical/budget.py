"""How the hierarchical solvers spend the shared budget (:class:`solvers.budget.Budget`).

LNS is a loop of many small one-worker CP-SAT solves with Python work between them
(building window models, compacting the schedule). Both are charged to one
:class:`~solvers.budget.Budget` of the :data:`LNS` calibration: CP-SAT's deterministic time
through :meth:`~solvers.budget.Budget.account`, the Python work counted in elementary steps
and converted at :data:`STEPS_PER_UNIT` (:func:`charge_steps`). Neither depends on how busy
the machine is, so the same problem, seed and workers end in the same place; the wall clock
is the budget's net only. Under ``search: until-limit`` the same budget counts wall seconds
and the loop runs until the limit.

Examples
--------
>>> from solvers.budget import Budget
>>> b = Budget.start(10.0, LNS)
>>> b.total, LNS.per_worker
(1.0, False)
>>> charge_steps(b, 500_000); round(b.left, 3), exhausted(b)
(0.75, False)
"""

from __future__ import annotations

from solvers.budget import BOUND_ELEMENTS_PER_UNIT, SCHEDULING, Budget, Calibration, build_units
from solvers.scheduling.problem import SchedulingProblem

__all__ = ["LNS", "STEPS_PER_UNIT", "CONTIGUOUS_ELEMENTS_PER_UNIT", "CONTIGUOUS_SHARE", "STATIC_BOUND_SHARE",
           "HEFT_ELEMENTS_PER_UNIT", "GROUPING_ELEMENTS_PER_UNIT", "FLOOR_ELEMENTS_PER_UNIT", "floor_units",
           "charge_steps", "exhausted", "contiguous_cost_s", "static_bound_cost_s", "heft_cost_s",
           "grouping_cost_s", "GLUE_ELEMENTS_PER_UNIT", "segment_glue_cost_s", "GLUE_WINDOWS"]

LNS = Calibration("lns", 0.1)
"""LNS refinement (``solvers.hierarchical.lns``): work units per second of limit, one CP-SAT
worker whatever ``num_workers`` (single-worker search is deterministic without interleaved
batches, and many small solves gained more per unit than few large ones). Measured
2026-11-23 on the shared 2-core machine at load 6-10: one worker spends 0.05-0.1
deterministic time per wall second on window models, so the deterministic budget, not the
net, ends a run there; on an idle machine a run ends in about half the limit."""

STEPS_PER_UNIT = 2_000_000
"""Counted Python steps (tasks compacted, model elements built) worth one work unit: about
what the window models' building and compaction do per wall second of one core."""


def charge_steps(budget: Budget, steps: int) -> None:
    """Charge ``steps`` counted Python steps to ``budget`` (a no-op under until-limit search,
    whose budget is the wall clock itself).

    Examples
    --------
    >>> b = Budget.start(10.0, LNS); charge_steps(b, 2 * STEPS_PER_UNIT); b.charged
    2.0
    """
    budget.charge(steps / STEPS_PER_UNIT)


def exhausted(budget: Budget) -> bool:
    """Whether ``budget`` is spent or its wall clock ran out (recorded in ``stopped_by``).

    Examples
    --------
    >>> b = Budget.start(10.0, LNS); b.charge(1.0); exhausted(b)
    True
    """
    return budget.left <= 0 or budget.wall_expired()


CONTIGUOUS_ELEMENTS_PER_UNIT = 55_000
"""(op, device) pairs the contiguous split (``solvers.scheduling.contiguous``) processes per
:data:`~solvers.budget.SCHEDULING` unit. Re-measured 2026-11-28 as CPU seconds of its one
Python thread (``time.process_time``, so the machine's load of 11-12 does not inflate it, as
the wall times of the first measurement, 2026-11-23 at load 5-7, did: 74 s at 10k ops):
Inception-V3 layers 6,520 pairs 0.28 s, ResNet-50 operators 10,268 pairs 1.23 s, BERT-12
12,528 pairs 1.50 s, transformer-1k 7,920 pairs 0.55 s, transformer-3k 24,088 pairs 1.98 s,
transformer-10k 80,160 pairs 12.2 s. It grows faster than linearly; the constant is set from
the 10k row (6,600 pairs per second, 13.0 s predicted at 0.112 units per second), so it
over-predicts smaller graphs."""

CONTIGUOUS_SHARE = 0.25
"""The largest share of the limit the contiguous split's predicted cost may take; above it the
warm start is HEFT's alone (``stats["warm_start"]`` says so)."""

STATIC_BOUND_SHARE = 0.25
"""The largest share of the limit the hierarchical path's static bounds (segment parts of the
quick bound and ``lower_bound`` without the LP) may take; their predicted cost is taken off the
placer's and LNS's time, and above the share only the quick bound without segments runs."""


def _seconds(units: float, time_limit_s: float, workers: int) -> float:
    """``units`` scheduling units as seconds of the limit (the family's rate for ``workers``)."""
    rate = SCHEDULING.units(time_limit_s, workers) / time_limit_s if time_limit_s > 0 else 1.0
    return units / rate


def contiguous_cost_s(problem: SchedulingProblem, time_limit_s: float, workers: int) -> float | None:
    """Predicted seconds of the limit the contiguous split costs, or None when above
    :data:`CONTIGUOUS_SHARE` of the limit (skip it). Size-based: the same on any machine.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 1000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> round(contiguous_cost_s(p, 10.0, 2), 3), contiguous_cost_s(p, 1.0, 2)
    (0.325, None)
    """
    cost = _seconds(build_units(problem.num_ops * problem.num_devices, CONTIGUOUS_ELEMENTS_PER_UNIT),
                    time_limit_s, workers)
    return cost if cost <= CONTIGUOUS_SHARE * time_limit_s else None


def static_bound_cost_s(problem: SchedulingProblem, time_limit_s: float, workers: int) -> float | None:
    """Predicted seconds of the limit the static bounds cost, ``(ops + edges) x devices`` at
    :data:`~solvers.budget.BOUND_ELEMENTS_PER_UNIT`, or None above :data:`STATIC_BOUND_SHARE`.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 1000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> round(static_bound_cost_s(p, 10.0, 2), 3), static_bound_cost_s(p, 0.2, 2)
    (0.053, None)
    """
    elements = (problem.num_ops + len(problem.edges)) * problem.num_devices
    cost = _seconds(build_units(elements, BOUND_ELEMENTS_PER_UNIT), time_limit_s, workers)
    return cost if cost <= STATIC_BOUND_SHARE * time_limit_s else None


HEFT_ELEMENTS_PER_UNIT = 2_000_000
"""Elements, ``(ops + edges) x devices``, HEFT's warm start (ranks, list scheduling, its
validation) processes per :data:`~solvers.budget.SCHEDULING` unit (8.9 s of the limit at two
workers). Measured 2026-11-28 as CPU seconds of the one Python thread (``time.process_time``,
which load does not inflate), ``HeftScheduler.solve``: transformer-3k 62,160 elements 0.15 s,
branchy-3k 53,144 0.14 s, transformer-10k 206,904 0.52 s, branchy-10k 177,144 0.60 s,
transformer-30k 619,824 1.92 s, branchy-30k 531,288 1.94 s, transformer-100k 2,065,488 8.9 s.
Set from the slowest rate, at 100k ops (232,000 elements per second), so it over-predicts the
smaller graphs. (Before HEFT's memory profile kept its peak with numpy, recomputing ``max`` of a
Python list after every change made it quadratic: 11.7 s at 30k ops, 1,773 wall seconds at
100k under load.)"""

GROUPING_ELEMENTS_PER_UNIT = 1_800_000
"""Elements, ``(ops + edges) x devices``, the placer's work outside its coarse CP-SAT solve
(checking the warm start, grouping, the coarse problem and its hint, expanding, compacting and
list-scheduling the fine graph, validating both) processes per
:data:`~solvers.budget.SCHEDULING` unit. Measured 2026-11-28 as the CPU seconds of
``HierarchicalScheduler.solve`` with a 0.1-s limit (its coarse solve spent under 0.003
deterministic units): transformer-3k 0.43 s, branchy-3k 0.45 s, transformer-10k 0.89 s,
branchy-10k 0.84 s, transformer-30k 2.19 s, branchy-30k 1.98 s, transformer-100k 8.7 s; set
from branchy-10k (211,000 elements per second; the 3k graphs' fixed costs make them slower per
element, by at most 0.15 s)."""


def _elements(problem: SchedulingProblem) -> int:
    return (problem.num_ops + len(problem.edges)) * problem.num_devices


def heft_cost_s(problem: SchedulingProblem, time_limit_s: float, workers: int) -> float:
    """Predicted seconds of the limit HEFT's warm start costs (:data:`HEFT_ELEMENTS_PER_UNIT`).
    It always runs (it is the planner's baseline and every path's warm start), so the cost is
    charged, never capped. Size-based: the same on any machine.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 1000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> round(heft_cost_s(p, 10.0, 2), 4), round(heft_cost_s(p, 10.0, 1), 4)  # 2,000 elements
    (0.0089, 0.0143)
    """
    return _seconds(build_units(_elements(problem), HEFT_ELEMENTS_PER_UNIT), time_limit_s, workers)


def grouping_cost_s(problem: SchedulingProblem, time_limit_s: float, workers: int) -> float:
    """Predicted seconds of the limit the placer's grouping and uncoarsening cost
    (:data:`GROUPING_ELEMENTS_PER_UNIT`); the strategy skips the placer when this does not fit
    the placer's share of the limit. Size-based: the same on any machine.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 1000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> round(grouping_cost_s(p, 10.0, 2), 4)
    0.0099
    """
    return _seconds(build_units(_elements(problem), GROUPING_ELEMENTS_PER_UNIT), time_limit_s, workers)


GLUE_ELEMENTS_PER_UNIT = 1_800_000
"""Elements, ``(ops + edges) x devices``, that gluing a schedule from per-window solutions
(:func:`~solvers.scheduling.cpsat.segment_schedule` with ``reuse``: the segments, windows at
clean cut ops, re-timing and validating the glued schedule) processes per
:data:`~solvers.budget.SCHEDULING` unit, outside its CP-SAT solves. Measured 2026-11-28 as CPU
seconds (``time.process_time``) with 0.001 units for the solves: transformer-10k 206,904
elements 0.88 s, branchy-10k 177,144 0.73 s (234,000 and 243,000 per second); set at 202,000
per second (8.9 s per unit). The 1k graphs' fixed costs make them slower per element
(transformer-1k 0.19 s, branchy-1k 0.16 s), by about 0.1 s. (Before each segment and window
found its edges through each op's out-edges instead of a scan of every edge, transformer-10k
took 4.1 s.)"""


def segment_glue_cost_s(problem: SchedulingProblem, time_limit_s: float, workers: int) -> float:
    """Predicted seconds of the limit the segment glue's work outside CP-SAT costs
    (:data:`GLUE_ELEMENTS_PER_UNIT`); the strategy runs the glue only when this fits its share.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 1000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> round(segment_glue_cost_s(p, 10.0, 2), 4)
    0.0099
    """
    return _seconds(build_units(_elements(problem), GLUE_ELEMENTS_PER_UNIT), time_limit_s, workers)


GLUE_WINDOWS = Calibration("segment-glue", 0.2)
"""The segment glue's window solves (:func:`~solvers.scheduling.cpsat.segment_schedule` with
``reuse``, one CP-SAT worker): deterministic units per second of the glue's share of the limit.
Its windows are small models, on which one worker spends units about twice as fast as
:data:`~solvers.budget.SCHEDULING` grants them (0.112 per second, calibrated on whole main
solves), so under that rate a 10-s limit gave the glue a third of the unit it needs on
branchy-10k (it ended at HEFT's makespan). Measured 2026-11-28 as CPU seconds
(``time.process_time``, the window solves' thread included, the glue's own Python work, about
0.9 s, taken off: that is :func:`segment_glue_cost_s`'s): branchy-10k 0.33 units in 1.44 s,
0.60 in 1.92 s, 0.94 in 3.0 s (0.23-0.31 units per second, the bound reached with 0.94);
transformer-10k 0.95 units in 4.7 s (0.20); set from the slower."""


FLOOR_ELEMENTS_PER_UNIT = 800_000
"""Elements, ``(ops + edges) x devices`` of the whole graph, that cutting it into segments and
computing every segment's floor bound (``bound_segments`` and ``segment_floor``, with the LP)
process per :data:`~solvers.budget.SCHEDULING` unit: the Python work before the segment proofs'
CP-SAT solves. Measured 2026-11-28 as CPU seconds (``time.process_time``): transformer-1k
20,424 elements 0.18 s, branchy-1k 17,680 0.24 s, transformer-2.5k 51,504 0.57 s (90,000 per
second, 8.9 s per unit at 0.112 units per second); the dnn latency inputs 0.01-0.1 s."""


def floor_units(problem: SchedulingProblem) -> float:
    """Predicted units the segment floors cost (:data:`FLOOR_ELEMENTS_PER_UNIT`), charged to the
    segment proofs' budget before they run; the proofs are skipped when it does not fit.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 1000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> floor_units(p)
    0.0025
    """
    return build_units(_elements(problem), FLOOR_ELEMENTS_PER_UNIT)
