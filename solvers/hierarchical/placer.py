"""Hierarchical placement: group the ops, place the groups with CP-SAT, schedule the fine graph.

Notes
-----
1. **Group** (:func:`~solvers.hierarchical.grouping.coarsen`) into ``groups`` groups
   (default :func:`default_groups`).
2. **Place the groups**: :class:`~solvers.scheduling.cpsat.CpSatScheduler` on the coarse
   problem (one op per group: durations, weights and transfers summed), which places and
   sequences the groups with communication and per-device load; it is warm-started from
   the warm start's placement projected onto the groups (each group on the device holding
   most of its members' work; colocated groups on the first one's device).
3. **Uncoarsen**, two ways, keeping the better valid one: (a) :func:`expand_schedule`
   runs each group's members one after the other, in topological order, from the group's
   coarse start on its stream, and each coarse transfer's fine transfers one after the other
   inside it (a valid fine schedule with the coarse makespan, activation memory aside), then
   compacts it (:func:`~solvers.hierarchical.state.compact`: never later); (b) HEFT's list
   scheduler sequences the fine graph on the groups' placement
   (:func:`~solvers.scheduling.heft.heft_schedule` with ``placement``, memory-aware).

The result is the better of that schedule and the warm start (never worse than the warm
start, HEFT by default). It proves nothing (``bound`` is None): the coarse problem's bound
is not a bound of the fine one. Deterministic when the coarse CP-SAT solve is (a
deterministic-time budget, :mod:`solvers.scheduling.cpsat`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.dag import kahn_order
from solvers.hierarchical.grouping import Coarsening, coarsen
from solvers.hierarchical.state import GraphIndex, ScheduleState, compact, warm_start
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.cpsat.scheduler import CpSatScheduler
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.problem import ScheduledTransfer, SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["HierarchicalOptions", "HierarchicalScheduler", "default_groups", "project_placement",
           "place_groups", "expand_schedule"]


def default_groups(problem: SchedulingProblem) -> int:
    """Groups to aim for: enough to spread work over the devices, few enough for CP-SAT.

    ``clamp(num_ops / 8, 8 * num_devices, 160)``, never more than the ops.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 4000, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> default_groups(p)
    160
    """
    n, nd = problem.num_ops, problem.num_devices
    return max(1, min(n, max(8 * nd, min(160, n // 8))))


@dataclass(frozen=True, slots=True)
class HierarchicalOptions:
    """Tunables of :class:`HierarchicalScheduler`.

    Examples
    --------
    >>> HierarchicalOptions().groups is None
    True
    """

    # Target number of groups; None: default_groups(problem).
    groups: int | None = None
    # The coarse solve: full placement (the coarse problem is small), no segment work.
    coarse: CpSatOptions = field(default_factory=lambda: CpSatOptions(
        max_full_ops=1000, segment_bound_share=0.0, segment_schedule_share=0.0,
        bound_probe_share=0.0))


def project_placement(problem: SchedulingProblem, coarsening: Coarsening,
                      solution: SchedulingSolution) -> tuple[int, ...]:
    """Each group's device: where the fine ``solution`` runs most of its members' work.

    Only devices every member may use count; colocated groups follow the first one.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (1, 1), (1, 1)), ((0, 1, 8), (1, 2, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> c = coarsen(p, 1)
    >>> project_placement(p, c, SchedulingSolution((1, 0, 0), (0,) * 3, (0, 5, 6), (4, 1, 1), ()))
    (1,)
    """
    cp = coarsening.problem
    out = []
    for g, members in enumerate(coarsening.members):
        allowed = cp.allowed_devices(g)
        work = {d: 0 for d in allowed}
        for i in members:
            d = solution.op_device[i]
            if d in work:
                work[d] += solution.op_duration[i]
        out.append(max(allowed, key=lambda d: (work[d], -d)))
    for grp in cp.colocation_groups:
        for g in grp[1:]:
            out[g] = out[grp[0]]
    return tuple(out)


def expand_schedule(problem: SchedulingProblem, coarsening: Coarsening,
                    coarse: SchedulingSolution) -> SchedulingSolution:
    """The coarse schedule run op by op (module Notes, step 3a), before compaction.

    Examples
    --------
    >>> p = SchedulingProblem(((2, 2), (3, 3), (1, 1)), ((0, 1, 8), (1, 2, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((4,), (4,)))
    >>> c = coarsen(p, 2)
    >>> c.members
    ((0, 1), (2,))
    >>> coarse = SchedulingSolution((0, 1), (0, 0), (0, 9), (5, 1), (ScheduledTransfer(0, 0, 5, 4),))
    >>> s = expand_schedule(p, c, coarse)
    >>> s.op_start, s.transfers
    ((0, 2, 9), (ScheduledTransfer(edge=1, link=0, start_cycle=5, duration_cycles=4),))
    """
    n = problem.num_ops
    pos = {op: k for k, op in enumerate(kahn_order(n, problem.edges))}
    dev, stream, start, dur = [0] * n, [0] * n, [0] * n, [0] * n
    for g, members in enumerate(coarsening.members):
        d = coarse.op_device[g]
        t = coarse.op_start[g]
        for i in sorted(members, key=pos.__getitem__):
            dev[i], stream[i], start[i] = d, coarse.op_stream[g], t
            dur[i] = problem.durations_cycles[i][d]
            t += dur[i]
    cp = coarsening.problem
    coarse_edge = {(u, v): e for e, (u, v, _) in enumerate(cp.edges)}
    coarse_tr = {t.edge: t for t in coarse.transfers}
    cursor: dict[int, int] = {}
    transfers = []
    for e, (u, v, _) in enumerate(problem.edges):
        if dev[u] == dev[v]:
            continue
        ce = coarse_edge[coarsening.group_of[u], coarsening.group_of[v]]
        link = problem.link_of[dev[u]][dev[v]]
        t = cursor.get(ce, coarse_tr[ce].start_cycle)
        c = problem.transfer_cycles[e][link]
        transfers.append(ScheduledTransfer(e, link, t, c))
        cursor[ce] = t + c
    return SchedulingSolution(tuple(dev), tuple(stream), tuple(start), tuple(dur), tuple(transfers))


def place_groups(problem: SchedulingProblem, coarsening: Coarsening, warm: SchedulingSolution | None,
                 options: SolveOptions, cfg: HierarchicalOptions) -> tuple[SchedulingSolution | None, dict]:
    """Steps 2 and 3 of the module Notes: the fine schedule of the coarse placement, or None."""
    coarse = coarsening.problem
    hint = None
    if warm is not None:
        sol = heft_schedule(coarse, project_placement(problem, coarsening, warm))
        if sol is not None and not validate_schedule(coarse, sol):
            hint = sol
    r = CpSatScheduler(cfg.coarse).solve(coarse, replace(options, hint=hint, progress=None))
    stats: dict[str, Any] = {"groups": coarsening.num_groups, "coarse_edges": len(coarse.edges),
                             "coarse_status": r.status.value, "coarse_objective": r.objective,
                             "coarse_hint_objective": None if hint is None else objective_value(coarse, hint),
                             "coarse_dtime": r.stats.get("dtime_used"),
                             "coarse_stopped_by": r.stats.get("stopped_by")}
    if not r.status.has_solution:
        return None, stats
    state = ScheduleState(GraphIndex.of(problem), expand_schedule(problem, coarsening, r.solution))
    compact(state)
    candidates = []
    for k, sol in enumerate((state.to_solution(),
                             heft_schedule(problem, coarsening.placement(r.solution.op_device)))):
        if sol is not None and not validate_schedule(problem, sol):
            candidates.append((objective_value(problem, sol), k, sol))
    stats["uncoarsened_objectives"] = {"expanded": None, "list scheduled": None}
    for obj, k, _ in candidates:
        stats["uncoarsened_objectives"]["expanded" if k == 0 else "list scheduled"] = obj
    if not candidates:
        stats["uncoarsened"] = "neither uncoarsening is valid (memory)"
        return None, stats
    return min(candidates, key=lambda c: (c[0], c[1]))[2], stats


class HierarchicalScheduler(Accepting):
    """Group, place groups with CP-SAT, list-schedule the fine graph (module Notes).

    Parameters
    ----------
    config : HierarchicalOptions, optional

    Examples
    --------
    Two independent chains of four ops; HEFT's hint runs them on one device, the groups
    go one per device:

    >>> e = [(0, 1, 1), (1, 2, 1), (2, 3, 1), (4, 5, 1), (5, 6, 1), (6, 7, 1)]
    >>> p = SchedulingProblem(((2, 2),) * 8, e, (1, 1), ((-1, 0), (0, -1)), ((1,),) * 6)
    >>> r = HierarchicalScheduler(HierarchicalOptions(groups=2)).solve(p, SolveOptions(time_limit_s=5))
    >>> r.status.value, r.objective, r.stats["groups"]
    ('FEASIBLE', 8, 2)
    """

    name = "hierarchical"
    problem_type = SchedulingProblem

    def __init__(self, config: HierarchicalOptions = HierarchicalOptions()) -> None:
        self.config = config

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        warm = warm_start(problem, options)
        groups = self.config.groups or default_groups(problem)
        coarsening = coarsen(problem, groups)
        fine, stats = place_groups(problem, coarsening, warm, options, self.config)
        stats["grouping_s"] = round(time.perf_counter() - t0, 3)
        stats["stopped_by"] = stats.get("coarse_stopped_by") or "finished"
        candidates = [(objective_value(problem, s), k, s) for k, s in enumerate((fine, warm))
                      if s is not None]
        wall = time.perf_counter() - t0
        if not candidates:
            return failure_result(Status.UNKNOWN, self.name, wall, **stats)
        obj, k, best = min(candidates, key=lambda c: (c[0], c[1]))
        stats["returned"] = "uncoarsened coarse placement" if k == 0 else "warm start"
        return SolveResult(Status.FEASIBLE, obj, None, best, wall, self.name, stats)
