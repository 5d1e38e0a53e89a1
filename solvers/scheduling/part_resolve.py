"""Part re-solve: each part of a valid schedule (between the part bound's cut ops) searched
afresh by a nested scheduler in the room the incumbent's other parts leave, spliced back only
when the whole plan gets shorter.

Notes
-----
**Why.** On the dnn-partitioning ResNet-50 operator graph (604 ops) the whole solve cannot
improve its plan: the placement LNS sits at a local optimum (435.38 ms), and above
``max_full_ops`` the main solve only re-sequences its placement. The first stage (the part
up to the first stage end, 126 ops) is where the plan loses most: it spends 212.04 ms there,
and searched from the incumbent's restriction nothing shorter is found (the LNS and CP-SAT's
full model from it, 1.07 units). The part's *own* scheduler run without the hint, in the same
room, finds 198.55-201.35 ms in 0.23-0.49 units (:data:`PART_UNITS`): its placement LNS from
HEFT's or the forced-cut relaxation's placement of the part reaches a seven-device placement far
from the incumbent's four-device one; the second stage likewise 121.33 -> 113.23
(docs/bounds.md, Part re-solve).

**The part problem** (:func:`resolve_problem`): part ``k`` of
:func:`~solvers.scheduling.part_start.original_parts` (its weight sources with it) as
:func:`~solvers.scheduling.part_start.part_problem` builds it, its opening cut op pinned to the
incumbent's device and taking no time, every device's memory less the weights the incumbent's
*other* parts (earlier and later) keep there, and its closing cut op pinned to the incumbent's
device (the later parts then stay valid as they are).

**Splice** (:func:`splice_part`): the part's ops and the transfers among them take the part
schedule's places, shifted to start where the opening cut op ends in the incumbent; every op
of a later part and every transfer leaving the closing cut op or a later part shifts by the
change of the closing cut op's end (an op without predecessors that would then start before 0,
a weight source taking no time, starts at 0); earlier ones stay. The parts' windows meet only
at the cut ops (clean: no edge jumps over one), so links and streams never meet; the result is
checked by :func:`~solvers.scheduling.validate.validate_schedule` and kept only when strictly
shorter, so the search never returns worse than its start.

**Search** (:func:`part_resolve`): the parts in the order of what the incumbent spends in them
above their static floor (largest first), each solved once by ``solve_part(part problem,
child budget)`` with at most :data:`PART_UNITS` deterministic units, while at least
:data:`MIN_UNITS` are left. Counted, never timed: same problem, start and budget, same result
(the wall-clock net aside).

**Room relaxation first** (``options`` given, :func:`_room_pass`): before the nested
scheduler, each part (the parts the stage before shortened first, then by gap) is re-solved
through its sequenced relaxation with links in the same room
(:func:`~solvers.scheduling.room_relaxation.room_relaxed_part`), hinted with the plan's own
schedule of the part, at most :data:`ROOM_UNITS` each; the nested scheduler gets what is left.
Measured on ResNet-50 operators (the same 413.79-ms start and 0.264 units, one worker, seed 0,
2026-11-29, load 5-7 on 2 cores): the first stage 198.55 -> **190.91** (0.08 units; its exact
optimum), the second 113.23 -> **109.56** (0.08), the third nothing (0.08): 402.47 where the
nested scheduler alone reaches 411.80 (the third stage's 74.59 for all 0.264 units). Unhinted,
the second stage's relaxation finds 162.27 with 0.13 units.

**Parts not shortened first** (``earlier``, :func:`searched_parts`): given the plan the stage before
started from, the parts that stage shortened go last. That stage (the stitched parts,
:mod:`~solvers.scheduling.part_start`) searched each part afresh from the part's own HEFT
schedule, so where it found a shorter part, that part already left the whole graph's local
optimum and a fresh search by the nested scheduler meets what it found; a part it did not
shorten is still the whole-graph placement LNS's, where a fresh search is what pays. Measured
on ResNet-50 operators (the benchmark's 60 s, the 413.79-ms incumbent the stitched parts return, 0.264 units
left, one worker; 2026-11-29, load 20-24 on 2 cores): the first stage (window 198.55 ms, largest
gap, shortened by the stitched parts) re-solved with all 0.225 units it took finds 212.04 (nothing
shorter; 198.55 needs about 0.49); the third (76.58, not shortened) finds **74.59** with 0.264 units
(77.94 with 0.18, nothing with 0.13), the second (113.23, shortened) nothing shorter with 0.22, the
fourth (25.00, shortened) 27.99 with 0.26.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from solvers.budget import Budget
from solvers.core import SolveOptions
from solvers.scheduling.bounds import bound_segments, lower_bound
from solvers.scheduling.part_bound import part_cuts
from solvers.scheduling.part_start import original_parts, part_problem, pinned_op, restricted_schedule
from solvers.scheduling.problem import (FORBIDDEN, Objective, ScheduledTransfer, SchedulingProblem,
                                        SchedulingSolution)
from solvers.scheduling.room_relaxation import room_relaxed_part
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "PART_UNITS", "ROOM_UNITS", "MIN_UNITS", "resolve_problem", "splice_part", "searched_parts",
           "part_resolve"]

SOURCE = "part re-solve"  # the hint source the scheduler reports for this candidate

PART_UNITS = 0.3
"""At most this many units per part. ResNet-50 operators, the nested scheduler with only the
forced-cut bound, its start and the placement LNS (one worker, no hint, in the room of the
incumbent's other parts): the first stage 212.04 -> 201.35 ms (0.23 units, the same with 0.56),
the second 121.33 -> 113.23 (0.30), the third none shorter than 76.58 (77.94 with 0.37). With
every stage of the scheduler but the leftover bound the first reaches 198.55 with 0.49 units but
215.25 with 0.30, the second 121.52 with 0.34."""

ROOM_UNITS = 0.1
"""At most this many units per part for its room relaxation (ResNet-50 operators, the 413.79-ms
plan the stitched parts return, one worker, seed 0, hinted with the plan: the first stage
198.55 -> 190.91 ms with 0.1 (195.32 with 0.06), the second 113.23 -> 109.56 with 0.08 (nothing
with 0.06), the fourth 25.00 -> 24.45 with 0.03, the third nothing with 0.15)."""

MIN_UNITS = 0.05
"""A part is tried only with at least this many units left (less finds nothing: the nested
forced-cut bound and start alone take about 0.16 on ResNet-50 operators' 126-op first stage)."""


def _part_cut_ops(problem: SchedulingProblem) -> list[int]:
    """The part bound's cut ops (found on its pruned problem) as ops of ``problem``: the
    pruned problem keeps op names, so with the indices as names they map back."""
    named = replace(problem, op_names=tuple(str(i) for i in range(problem.num_ops)))
    pruned, _ = bound_segments(named)
    return [int(pruned.op_name(c)) for c in part_cuts(pruned)]


def _windows(problem: SchedulingProblem, sol: SchedulingSolution, cuts: Sequence[int]) -> list[int]:
    """What ``sol`` spends in each part: from the end of its opening cut op (0 for the head) to
    the end of its closing one (the makespan for the tail)."""
    ends = [0] + [sol.op_start[c] + sol.op_duration[c] for c in cuts] + [objective_value(problem, sol)]
    return [b - a for a, b in zip(ends, ends[1:])]


def _weights_elsewhere(problem: SchedulingProblem, sol: SchedulingSolution, part: Sequence[int], k: int) -> list[int]:
    """Per device, the weights ``sol`` keeps there for the ops of every part but ``k`` (a
    shared tensor once)."""
    elsewhere = [-1 if part[i] == k else d for i, d in enumerate(sol.op_device)]
    return [problem.device_resident_bytes(d, elsewhere) for d in range(problem.num_devices)]


def resolve_problem(problem: SchedulingProblem, sol: SchedulingSolution, part: Sequence[int],
                    cuts: Sequence[int], k: int) -> tuple[SchedulingProblem, list[int], list[int]]:
    """Part ``k``'s problem in the room ``sol``'s other parts leave, both cut ops pinned to
    their devices in ``sol`` (module Notes): (problem, its ops, the original index of each of
    its edges), its opening cut op first (``k > 0``).

    Examples
    --------
    A chain of three 1-cycle ops, 4 bytes each, on two 8-byte devices; cut at op 1, op 2 on
    device 1. Part 1 is [1*, 2]: device 0 keeps op 0 and op 1 (8 bytes), so it is full (its
    room shows as one byte, as 0 would mean no limit) and op 2 may not go there.

    >>> p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,), (2,)), device_memory_bytes=(8, 8), op_resident_bytes=(4, 4, 4))
    >>> sol = SchedulingSolution((0, 0, 1), (0, 0, 0), (0, 1, 4), (1, 1, 1),
    ...                          (ScheduledTransfer(1, 0, 2, 2),))
    >>> sub, ops, inside = resolve_problem(p, sol, [0, 0, 1], [1], 1)
    >>> ops, inside, sub.device_memory_bytes, sub.durations_cycles
    ([1, 2], [1], (1, 8), ((0, -1), (-1, 1)))
    """
    held = _weights_elsewhere(problem, sol, part, k)
    opening = sol.op_device[cuts[k - 1]] if k > 0 else -1
    sub, ops, inside = part_problem(problem, part, cuts, k, opening, held)
    full = [d for d in range(problem.num_devices) if problem.memory_bytes(d) and held[d] >= problem.memory_bytes(d)]
    if full:  # the part problem keeps a byte on a full device (0 would mean no limit): no weight goes there
        sub = replace(sub, durations_cycles=tuple(
            tuple(FORBIDDEN if d in full and sub.resident_bytes(j) > 0 else c for d, c in enumerate(row))
            for j, row in enumerate(sub.durations_cycles)))
    if k < len(cuts):
        sub = pinned_op(sub, ops.index(cuts[k]), sol.op_device[cuts[k]])
    return sub, ops, inside


def splice_part(problem: SchedulingProblem, sol: SchedulingSolution, part: Sequence[int], cuts: Sequence[int],
                k: int, ops: Sequence[int], inside: Sequence[int], sub_sol: SchedulingSolution) -> SchedulingSolution:
    """``sol`` with part ``k`` from ``sub_sol`` (a solution of :func:`resolve_problem`'s
    problem, whose ops and edges are ``ops`` and ``inside``), later parts shifted (module
    Notes, **Splice**). Not checked.

    Examples
    --------
    The chain of :func:`resolve_problem`, part 1 re-solved onto device 0 (op 2 right after op 1):

    >>> p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,), (2,)))
    >>> sol = SchedulingSolution((0, 0, 1), (0, 0, 0), (0, 1, 4), (1, 1, 1),
    ...                          (ScheduledTransfer(1, 0, 2, 2),))
    >>> sub = SchedulingSolution((0, 0), (0, 0), (0, 0), (0, 1), ())
    >>> new = splice_part(p, sol, [0, 0, 1], [1], 1, [1, 2], [1], sub)
    >>> new.op_device, new.op_start, new.makespan_cycles, validate_schedule(p, new)
    ((0, 0, 0), (0, 1, 2), 3, [])
    """
    n = problem.num_ops
    offset = sol.op_start[cuts[k - 1]] + sol.op_duration[cuts[k - 1]] if k > 0 else 0
    local = {op: j for j, op in enumerate(ops)}
    delta = 0
    if k < len(cuts):
        j = local[cuts[k]]
        delta = offset + sub_sol.op_start[j] + sub_sol.op_duration[j] - (sol.op_start[cuts[k]] + sol.op_duration[cuts[k]])
    has_pred = [False] * n
    for _u, v, _b in problem.edges:
        has_pred[v] = True
    device, stream, start, duration = (list(sol.op_device), list(sol.op_stream), list(sol.op_start),
                                       list(sol.op_duration))
    for i in range(n):
        if part[i] > k:
            start[i] = start[i] + delta if has_pred[i] else max(0, start[i] + delta)
    for j, op in enumerate(ops):
        if k > 0 and j == 0:
            continue  # the opening cut op stays as it is
        device[op], stream[op] = sub_sol.op_device[j], sub_sol.op_stream[j]
        start[op], duration[op] = offset + sub_sol.op_start[j], sub_sol.op_duration[j]
    replaced = set(inside)
    closing = cuts[k] if k < len(cuts) else None
    transfers = []
    for t in sol.transfers:
        if t.edge in replaced:
            continue
        u = problem.edges[t.edge][0]
        moved = delta if part[u] > k or u == closing else 0
        transfers.append(ScheduledTransfer(t.edge, t.link, t.start_cycle + moved, t.duration_cycles))
    transfers += [ScheduledTransfer(inside[t.edge], t.link, offset + t.start_cycle, t.duration_cycles)
                  for t in sub_sol.transfers]
    return SchedulingSolution(tuple(device), tuple(stream), tuple(start), tuple(duration),
                              tuple(sorted(transfers, key=lambda t: (t.start_cycle, t.edge))))


def _floor(sub: SchedulingProblem) -> int:
    return lower_bound(sub, segments=False, lp=False)


def searched_parts(problem: SchedulingProblem, start: SchedulingSolution, earlier: SchedulingSolution | None,
                   cuts: Sequence[int]) -> set[int]:
    """The parts where ``start`` spends less than ``earlier`` (the plan the stage before started
    from): the parts that stage's search shortened (module Notes, **Parts not shortened first**).
    None for ``earlier``: no part.

    Examples
    --------
    A chain of three 1-cycle ops cut at op 1; the second part lost its transfer:

    >>> p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,), (2,)))
    >>> before = SchedulingSolution((0, 0, 1), (0, 0, 0), (0, 1, 4), (1, 1, 1),
    ...                             (ScheduledTransfer(1, 0, 2, 2),))
    >>> after = SchedulingSolution((0, 0, 0), (0, 0, 0), (0, 1, 2), (1, 1, 1), ())
    >>> searched_parts(p, after, before, [1]), searched_parts(p, after, None, [1])
    ({1}, set())
    """
    if earlier is None:
        return set()
    return {k for k, (now, then) in enumerate(zip(_windows(problem, start, cuts), _windows(problem, earlier, cuts)))
            if now < then}


def _tried(problem: SchedulingProblem, best: SchedulingSolution, part: Sequence[int], cuts: Sequence[int], k: int,
           ops: Sequence[int], inside: Sequence[int], sub: SchedulingProblem, found: SchedulingSolution | None,
           row: dict[str, Any]) -> SchedulingSolution | None:
    """``best`` with part ``k`` from ``found`` (a schedule of ``sub``) when that is valid and
    strictly shorter, else None; ``row`` receives what the part found and the whole objective."""
    row["found"] = None if found is None else objective_value(sub, found)
    if found is None or validate_schedule(sub, found):
        return None
    trial = splice_part(problem, best, part, cuts, k, ops, inside, found)
    row["objective"] = objective_value(problem, trial)
    if row["objective"] < objective_value(problem, best) and not validate_schedule(problem, trial):
        return trial
    return None


def _room_pass(problem: SchedulingProblem, best: SchedulingSolution, part: Sequence[int], cuts: Sequence[int],
               order: Sequence[int], budget: Budget, options: SolveOptions, stats: dict[str, Any]) -> SchedulingSolution:
    """Each part in ``order`` re-solved through its room relaxation hinted with ``best``'s own
    schedule of it (:func:`~solvers.scheduling.room_relaxation.room_relaxed_part`, at most
    :data:`ROOM_UNITS` each), spliced in when the plan gets shorter (module Notes, **Room
    relaxation first**): the shortest plan."""
    total = problem.total_resident_floor_bytes()
    nd = problem.num_devices

    def relaxed(sub: SchedulingProblem, ops, inside, best: SchedulingSolution, k: int, child: Budget):
        plan = restricted_schedule(problem, sub, ops, inside, best, list(range(nd)), k > 0)
        return room_relaxed_part(sub, plan, options, child, total)

    for k in order:
        if budget.left < budget.scale(MIN_UNITS) or budget.wall_expired():
            break
        best = _try_part(problem, best, part, cuts, k, budget, ROOM_UNITS, relaxed, stats, "part_resolve_room")
    return best


def _try_part(problem: SchedulingProblem, best: SchedulingSolution, part: Sequence[int], cuts: Sequence[int], k: int,
              budget: Budget, units: float, solve: Callable, stats: dict[str, Any], rows: str) -> SchedulingSolution:
    """``best`` with part ``k`` re-solved by ``solve(sub, ops, inside, best, k, child)`` in the
    room ``best`` leaves (a child budget of at most ``units``, charged), spliced in when the plan
    stays valid and gets strictly shorter; ``stats[rows]`` receives the part's row."""
    sub, ops, inside = resolve_problem(problem, best, part, cuts, k)  # the room may have changed
    child = budget.child(min(budget.left, budget.scale(units)))
    found = solve(sub, ops, inside, best, k, child)
    budget.charge(child.used)
    row: dict[str, Any] = {"part": k, "window": _windows(problem, best, cuts)[k], "units": round(child.used, 6)}
    trial = _tried(problem, best, part, cuts, k, ops, inside, sub, found, row)
    stats[rows].append(row)
    if trial is None:
        return best
    stats["part_resolve_accepted"] += 1
    return trial


def part_resolve(problem: SchedulingProblem, start: SchedulingSolution, budget: Budget,
                 solve_part: Callable[[SchedulingProblem, Budget], SchedulingSolution | None],
                 earlier: SchedulingSolution | None = None,
                 options: SolveOptions | None = None) -> tuple[SchedulingSolution, dict[str, Any]]:
    """The parts of the valid schedule ``start`` re-solved one at a time within ``budget``: with
    ``options``, first through their room relaxations (:func:`_room_pass`, the parts ``earlier``
    spends more on first), then by ``solve_part`` with what is left (module Notes), the parts
    ``earlier`` spends as much on first: (the shortest schedule found, never worse than
    ``start``; statistics, empty where no part cut applies or for THROUGHPUT).

    Examples
    --------
    A chain a -> b -> c -> d of 2-cycle ops on two devices whose tensors shrink after b
    (transfers 5, 5, 2): the parts are [a, b] and [b*, c, d]. From c alone on device 1 (two
    crossings, 15 cycles), re-solving the second part (here by HEFT) keeps it on device 0:

    >>> from solvers.budget import SCHEDULING
    >>> from solvers.scheduling.heft import heft_schedule
    >>> p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,), (5,), (2,)))
    >>> start = heft_schedule(p, (0, 0, 1, 0))
    >>> best, stats = part_resolve(p, start, Budget.start(5, SCHEDULING), lambda sub, b: heft_schedule(sub))
    >>> start.makespan_cycles, best.makespan_cycles, best.op_device, stats["part_resolve_accepted"]
    (15, 8, (0, 0, 0, 0), 1)
    """
    if problem.objective is not Objective.LATENCY:
        return start, {}
    cuts = _part_cut_ops(problem)
    part = original_parts(problem, cuts) if cuts else None
    if part is None:
        return start, {}
    best = start
    stats: dict[str, Any] = {"part_resolve_parts": len(cuts) + 1, "part_resolve_start": objective_value(problem, start),
                             "part_resolve_room": [], "part_resolve_solved": [], "part_resolve_accepted": 0}
    shortened = searched_parts(problem, start, earlier, cuts)
    stats["part_resolve_shortened"] = sorted(shortened)
    if options is not None:
        best = _room_pass(problem, best, part, cuts, _open_parts(problem, best, part, cuts, shortened, first=True),
                          budget, options, stats)
    for k in _open_parts(problem, best, part, cuts, shortened, first=False):
        if budget.left < budget.scale(MIN_UNITS) or budget.wall_expired():
            break
        best = _try_part(problem, best, part, cuts, k, budget, PART_UNITS,
                         lambda sub, _ops, _inside, _best, _k, child: solve_part(sub, child), stats,
                         "part_resolve_solved")
    stats["part_resolve_objective"] = objective_value(problem, best)
    return best, stats


def _open_parts(problem: SchedulingProblem, best: SchedulingSolution, part: Sequence[int], cuts: Sequence[int],
                shortened: set[int], first: bool) -> list[int]:
    """The parts where ``best`` spends more than their static floor, largest gap first, the
    ``shortened`` ones first when ``first``, else last (module Notes)."""
    windows = _windows(problem, best, cuts)
    gaps = []
    for k in range(len(cuts) + 1):
        sub, _ops, _inside = resolve_problem(problem, best, part, cuts, k)
        gap = windows[k] - _floor(sub)
        if gap > 0:
            gaps.append(((k in shortened) != first, -gap, k))
    return [k for _, _, k in sorted(gaps)]
