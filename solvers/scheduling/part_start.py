"""A start candidate from parts: the problem cut at the part bound's cut ops, each part searched
on the memory the earlier parts left, the parts' schedules stitched one after another.

Notes
-----
**Why.** The part bound (:mod:`~solvers.scheduling.part_bound`) cuts a memory-forced LATENCY
problem at the clean cut ops where its tensors shrink (a CNN's stages). The offline study
(``benchmarks/dnn_parts.py``) stitched exact part solves of the dnn-partitioning ResNet-50
operator graph to a 411.25-ms plan where the scheduler returns 435.38; this is the budgeted
form, with the placement LNS on each part instead of exact solves. Measured (docs/bounds.md,
Parts, both sides): it finds Inception-V3 layers 955.93 -> 954.23 ms; on ResNet-50 operators
the parts confirm the incumbent's local optimum (the 411.25 needs about 2 units of CP-SAT's full
model a part).

**Parts of the original problem** (:func:`original_parts`). The cut ops are found on the
bound's pruned problem (:func:`~solvers.scheduling.part_bound.part_cuts`) and mapped back by
op; every op goes to the part of the first cut op it precedes (its weight sources with it),
an op that precedes none to its producers' part. Part ``k`` (:func:`part_problem`) is its ops
with the cut op that opens it first, pinned to that cut op's device and taking no time there,
every other device keeping what the earlier parts left of its memory; devices stay
interchangeable only with equal room.

**Stitching** (:func:`stitched`). Part ``k`` starts at the offset where part ``k - 1``'s
schedule ended (its last op or transfer, at least the end of the cut op that opens part ``k``);
the windows are disjoint, so streams and links never meet, and the weights fit by construction.
The result is checked by :func:`~solvers.scheduling.validate.validate_schedule`.

**Per part** (:func:`part_start`): up to two starts, each improved by the placement LNS
(:func:`~solvers.scheduling.placement_lns.placement_lns`) with an equal share of what is left:
the incumbent restricted to the part (its own times shifted, when they form a valid schedule of
the part, else its placement sequenced by HEFT), when its weights fit; and the part's own HEFT
schedule. The shorter result is the part's schedule. Two ways to meet the incumbent
(:data:`MODES`):

* ``keep`` (the default): each part keeps free the room the incumbent's later parts use and
  ends on the incumbent's device for its closing cut op, so the incumbent's restriction stays a
  choice in every part and each part's window is at most the incumbent's there (unless an op
  of the part ends after the closing cut op);
* ``free``: no room kept; where a part ends on another device than the incumbent did, the two
  devices are renamed in the incumbent when they are interchangeable (same class and memory).
  On the dnn inputs a part's better schedule then fills a device a later part of the incumbent
  needs, and the rest from HEFT costs more (ResNet-50 operators 471.17): opt-in.

With several modes the shortest stitched schedule is the result; the caller keeps it only when
it beats its incumbent.

**Budget.** Counted, never timed: each LNS charges its passes, each HEFT pass and restriction
check is charged as one LNS pass of the part. Same problem, incumbent, seed and budget: same
result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from solvers.budget import Budget, build_units
from solvers.scheduling.bounds import bound_segments
from solvers.scheduling.heft import PlacedRanks, heft_schedule, heft_schedule_within
from solvers.scheduling.part_bound import part_cuts
from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT, placement_lns
from solvers.scheduling.problem import (FORBIDDEN, Objective, ScheduledTransfer, SchedulingProblem,
                                        SchedulingSolution)
from solvers.scheduling.resident import ResidentLedger, restricted_shared
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "MODES", "original_parts", "part_problem", "pinned_op", "restricted_schedule", "stitched",
           "part_start"]

SOURCE = "stitched parts"  # the hint source the scheduler reports for this candidate

MODES = ("keep", "free")
"""How the parts meet the incumbent (module Notes, Per part): ``keep`` leaves its later parts
their room and its exit devices, ``free`` does not (interchangeable devices renamed instead)."""


def _cut_ops(problem: SchedulingProblem) -> list[int]:
    """The part bound's cut ops as ops of ``problem`` (the pruned problem keeps op names; with
    the indices as names they map back)."""
    named = replace(problem, op_names=tuple(str(i) for i in range(problem.num_ops)))
    pruned, _ = bound_segments(named)
    return [int(pruned.op_name(c)) for c in part_cuts(pruned)]


def original_parts(problem: SchedulingProblem, cuts: Sequence[int]) -> list[int] | None:
    """Each op's part for the cut ops ``cuts`` (in topological order): the first cut op it
    precedes or is, else its producers' latest part (the part a cut op opens, after it), else
    the last. None when an edge between two
    parts leaves from an op that is not a cut op.

    Examples
    --------
    a -> b -> c with a weight source w feeding c; cut at b:

    >>> p = SchedulingProblem(((1,), (1,), (1,), (0,)), ((0, 1, 0), (1, 2, 0), (3, 2, 0)), (1,),
    ...                       ((-1,),), ((),) * 3)
    >>> original_parts(p, [1])
    [0, 0, 1, 1]
    """
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        preds[v].append(u)
    part: list[int | None] = [None] * problem.num_ops
    for k in reversed(range(len(cuts))):  # the earliest cut op an op precedes wins
        stack, seen = [cuts[k]], {cuts[k]}
        while stack:
            x = stack.pop()
            part[x] = k
            for u in preds[x]:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
    cut_set = set(cuts)
    for i in topological_order(problem):  # after a cut op is the part it opens
        if part[i] is None:
            part[i] = max((part[u] + (u in cut_set) for u in preds[i]), default=len(cuts))
    if any(part[u] != part[v] and u not in cut_set for u, v, _ in problem.edges):
        return None
    return [int(p) for p in part]


def part_problem(problem: SchedulingProblem, part: Sequence[int], cuts: Sequence[int], k: int, device: int,
                 used: Sequence[int]) -> tuple[SchedulingProblem, list[int], list[int]]:
    """Part ``k`` on what the earlier parts left (``used`` bytes per device), its opening cut op
    (``k > 0``) first, pinned to ``device`` and weightless there: (problem, its ops, the
    original index of each of its edges). A weight or input several of its ops read is held
    once per device, as in ``problem`` (one the earlier parts already hold on a device is
    counted again: conservative, the stitched ledger counts it once).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((1,), (1,)), device_memory_bytes=(10, 10), op_resident_bytes=(4, 4, 4))
    >>> sub, ops, inside = part_problem(p, [0, 0, 1], [1], 1, 0, [8, 0])
    >>> ops, inside, sub.durations_cycles, sub.device_memory_bytes, sub.op_resident_bytes
    ([1, 2], [1], ((0, -1), (1, 1)), (2, 10), (0, 4))
    """
    nd = problem.num_devices
    ops = ([cuts[k - 1]] if k > 0 else []) + [i for i in range(problem.num_ops) if part[i] == k]
    idx = {o: j for j, o in enumerate(ops)}
    durations = [problem.durations_cycles[o] for o in ops]
    if k > 0:
        durations[0] = tuple(0 if d == device else FORBIDDEN for d in range(nd))
    inside = [e for e, (u, v, _) in enumerate(problem.edges) if u in idx and v in idx]
    groups = tuple(g for g in (tuple(idx[i] for i in grp if i in idx) for grp in problem.colocation_groups)
                   if len(g) > 1)
    cap = tuple(max(1, problem.memory_bytes(d) - used[d]) if problem.memory_bytes(d) else 0 for d in range(nd))
    kinds = problem.device_class or tuple(range(nd))
    classes: dict[tuple, int] = {}  # devices stay interchangeable only with equal room left
    dclass = tuple(classes.setdefault((kinds[d], cap[d], k > 0 and d == device), len(classes)) for d in range(nd))
    resident = tuple(0 if (k > 0 and j == 0) else problem.resident_bytes(o) for j, o in enumerate(ops))
    sub = SchedulingProblem(tuple(durations),
                            tuple((idx[problem.edges[e][0]], idx[problem.edges[e][1]], problem.edges[e][2])
                                  for e in inside),
                            problem.device_streams, problem.link_of, tuple(problem.transfer_cycles[e] for e in inside),
                            problem.objective, cap, resident, (), groups, dclass,
                            shared_resident=restricted_shared(problem, ops, weightless=(0,) if k > 0 else ()))
    return sub, ops, inside


def _window_end(sol: SchedulingSolution) -> int:
    """Where a part's schedule ends: its last op or transfer."""
    ends = [s + d for s, d in zip(sol.op_start, sol.op_duration)] + [t.start_cycle + t.duration_cycles
                                                                     for t in sol.transfers]
    return max(ends, default=0)


def stitched(problem: SchedulingProblem, part: Sequence[int], cuts: Sequence[int],
             solve: Callable[[int, SchedulingProblem, list[int], list[int]], SchedulingSolution | None],
             reserved: Sequence[Sequence[int]] | None = None) -> SchedulingSolution | None:
    """The parts solved one after another by ``solve(k, part problem, its ops, its edges)`` and
    stitched (module Notes); None when a part has no schedule or the result is not valid.
    ``reserved[k]``: bytes per device part ``k`` leaves to later parts (none by default).

    Examples
    --------
    A chain of three 2-cycle ops on two 8-byte devices, 4 bytes each, cut at op 1: the first
    part fills device 0, so the second sends b's output (3 cycles) to device 1:

    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((3,), (3,)), device_memory_bytes=(8, 8), op_resident_bytes=(4, 4, 4))
    >>> sol = stitched(p, [0, 0, 1], [1], lambda k, sub, ops, edges: heft_schedule(sub))
    >>> sol.op_device, sol.op_start, sol.makespan_cycles
    ((0, 0, 1), (0, 2, 7), 9)
    """
    n = problem.num_ops
    dev, stream, start, dur = [0] * n, [0] * n, [0] * n, [0] * n
    ledger = ResidentLedger(problem)  # what the earlier parts hold, a shared tensor once
    transfers: list[ScheduledTransfer] = []
    offset = 0
    for k in range(len(cuts) + 1):
        held = [u + r for u, r in zip(ledger.held, reserved[k])] if reserved is not None else ledger.held
        sub, ops, inside = part_problem(problem, part, cuts, k, dev[cuts[k - 1]] if k else -1, held)
        sol = solve(k, sub, ops, inside)
        if sol is None:
            return None
        for j in range(1 if k else 0, len(ops)):
            o = ops[j]
            dev[o], stream[o] = sol.op_device[j], sol.op_stream[j]
            start[o], dur[o] = offset + sol.op_start[j], sol.op_duration[j]
            ledger.add((o,), dev[o])
        transfers += [ScheduledTransfer(inside[t.edge], t.link, offset + t.start_cycle, t.duration_cycles)
                      for t in sol.transfers]
        if k < len(cuts):
            offset = max(offset + _window_end(sol), start[cuts[k]] + dur[cuts[k]])
    whole = SchedulingSolution(tuple(dev), tuple(stream), tuple(start), tuple(dur),
                               tuple(sorted(transfers, key=lambda t: (t.start_cycle, t.edge))))
    return None if validate_schedule(problem, whole) else whole


def _align(problem: SchedulingProblem, view: list[int], device: int, twin: int) -> None:
    """Rename in ``view`` so the incumbent's ``device`` maps to ``twin`` (swapping with the
    device that mapped there) when the two are interchangeable: same class, same memory."""
    at = view[device]
    classes = problem.device_class
    if at == twin or classes is None or classes[at] != classes[twin] \
            or problem.memory_bytes(at) != problem.memory_bytes(twin):
        return
    other = view.index(twin)
    view[device], view[other] = twin, at


def restricted_schedule(problem: SchedulingProblem, sub: SchedulingProblem, ops: list[int], inside: list[int],
                incumbent: SchedulingSolution, view: Sequence[int], opening: bool) -> SchedulingSolution | None:
    """The incumbent on the part's ops (devices renamed by ``view``), shifted to start where its
    opening cut op ends, when that is a valid schedule of the part; else its placement
    sequenced by HEFT; None when the placement does not fit the part (its memory, or the
    pinned opening cut op's device).

    Examples
    --------
    A chain of three 1-cycle ops on two devices cut at op 1, op 2 on device 1 after a 2-cycle
    transfer: part 1 is [1*, 2], the incumbent's part shifted to start where op 1 ends.

    >>> p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,), (2,)))
    >>> sol = SchedulingSolution((0, 0, 1), (0, 0, 0), (0, 1, 4), (1, 1, 1),
    ...                          (ScheduledTransfer(1, 0, 2, 2),))
    >>> sub, ops, inside = part_problem(p, [0, 0, 1], [1], 1, 0, [0, 0])
    >>> part = restricted_schedule(p, sub, ops, inside, sol, [0, 1], True)
    >>> part.op_device, part.op_start, part.transfers
    ((0, 1), (0, 2), (ScheduledTransfer(edge=0, link=0, start_cycle=0, duration_cycles=2),))
    """
    placement = tuple(view[incumbent.op_device[o]] for o in ops)
    if any(sub.durations_cycles[j][d] < 0 for j, d in enumerate(placement)):
        return None
    if any(sub.memory_bytes(d) and sub.device_resident_bytes(d, placement) > sub.memory_bytes(d)
           for d in range(sub.num_devices)):
        return None
    offset = incumbent.op_start[ops[0]] + incumbent.op_duration[ops[0]] if opening else 0
    starts = [max(0, incumbent.op_start[o] - offset) for o in ops]
    durs = [incumbent.op_duration[o] for o in ops]
    if opening:
        starts[0], durs[0] = 0, 0
    edge = {e: j for j, e in enumerate(inside)}
    shifted = SchedulingSolution(placement, tuple(incumbent.op_stream[o] for o in ops), tuple(starts), tuple(durs),
                                 tuple(ScheduledTransfer(edge[t.edge], t.link, t.start_cycle - offset, t.duration_cycles)
                                       for t in incumbent.transfers if t.edge in edge))
    if view == sorted(view) and not validate_schedule(sub, shifted):  # links and streams as they were
        return shifted
    sol, _ = heft_schedule_within(sub, placement, PlacedRanks(sub)(placement))
    return sol if sol is not None and not validate_schedule(sub, sol) else None


def _pass_units(problem: SchedulingProblem) -> float:
    return build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)


def pinned_op(sub: SchedulingProblem, j: int, device: int) -> SchedulingProblem:
    """``sub`` with op ``j`` allowed only on ``device`` (which then has a class of its own)."""
    row = tuple(c if d == device else FORBIDDEN for d, c in enumerate(sub.durations_cycles[j]))
    kinds = sub.device_class or tuple(range(sub.num_devices))
    classes: dict[tuple, int] = {}
    dclass = tuple(classes.setdefault((kinds[d], d == device), len(classes)) for d in range(sub.num_devices))
    return replace(sub, durations_cycles=sub.durations_cycles[:j] + (row,) + sub.durations_cycles[j + 1:],
                   device_class=dclass)


def _later_weights(problem: SchedulingProblem, part: Sequence[int], cuts: Sequence[int],
                   incumbent: SchedulingSolution) -> list[list[int]]:
    """For each part, the incumbent's weights per device in the parts after it (each part's
    shared tensors once per device)."""
    nd, nparts = problem.num_devices, len(cuts) + 1
    per_part = [[problem.device_resident_bytes(d, [x if part[i] == k else -1 for i, x in enumerate(incumbent.op_device)])
                 for d in range(nd)] for k in range(nparts)]
    out, later = [], [0] * nd
    for k in reversed(range(nparts)):
        out.append(list(later))
        later = [a + b for a, b in zip(later, per_part[k])]
    return out[::-1]


def _stitch(problem: SchedulingProblem, part: Sequence[int], cuts: Sequence[int],
            incumbent: SchedulingSolution | None, budget: Budget, seed: int, keep: bool
            ) -> tuple[SchedulingSolution | None, list[dict[str, int]]]:
    """One stitching of module Notes (Per part): (the schedule or None, each part's results by
    start). ``keep``: every part leaves the incumbent's later parts their weights and ends on
    the incumbent's device, so its restriction stays a choice everywhere."""
    windows: list[dict[str, int]] = []
    view = list(range(problem.num_devices))  # the incumbent's device -> its twin in the stitched schedule
    runs = 2 if incumbent is not None else 1

    def solve(k: int, sub: SchedulingProblem, ops: list[int], inside: list[int]) -> SchedulingSolution | None:
        starts = []
        if incumbent is not None:
            if keep and k < len(cuts):
                sub = pinned_op(sub, ops.index(cuts[k]), incumbent.op_device[cuts[k]])
            if k > 0 and not keep:
                _align(problem, view, incumbent.op_device[cuts[k - 1]], sub.allowed_devices(0)[0])
            budget.charge(budget.scale(_pass_units(sub)))
            starts.append(("incumbent", restricted_schedule(problem, sub, ops, inside, incumbent, view, k > 0)))
        budget.charge(budget.scale(_pass_units(sub)))
        starts.append(("heft", heft_schedule(sub)))
        starts = [(name, s) for name, s in starts if s is not None and not validate_schedule(sub, s)]
        row: dict[str, int] = {}
        best = None
        for m, (name, s) in enumerate(starts):
            child = budget.child(budget.left / ((len(cuts) + 1 - k) * runs - m))
            found, _ = placement_lns(sub, s, child, seed=seed)
            budget.charge(child.used)
            row[name] = objective_value(sub, found)
            if best is None or row[name] < objective_value(sub, best):
                best = found
        windows.append(row)
        return best

    reserved = _later_weights(problem, part, cuts, incumbent) if keep and incumbent is not None else None
    return stitched(problem, part, cuts, solve, reserved), windows


def part_start(problem: SchedulingProblem, incumbent: SchedulingSolution | None, budget: Budget,
               seed: int = 0, modes: Sequence[str] = ("keep",)) -> tuple[SchedulingSolution | None, dict[str, Any]]:
    """The stitched parts of module Notes within ``budget``: (the schedule or None, statistics);
    ``(None, {})`` for THROUGHPUT or where no part cut applies.

    Examples
    --------
    A chain a -> b -> c -> d of 2-cycle ops, 6 bytes each, on two 12-byte devices; its tensors
    shrink after b (transfers 5, 5, 2). Part [a, b] stays on one device, part [b, c, d] must
    cross once, at its cheap edge c -> d:

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,), (5,), (2,)), device_memory_bytes=(12, 12),
    ...                       op_resident_bytes=(6, 6, 6, 6))
    >>> sol, stats = part_start(p, None, Budget.start(1, SCHEDULING))
    >>> sol.makespan_cycles, stats["part_start_parts"]
    (13, 2)
    """
    if problem.objective is not Objective.LATENCY:
        return None, {}
    cuts = _cut_ops(problem)
    part = original_parts(problem, cuts) if cuts else None
    if part is None:
        return None, {}
    used = budget.used
    modes = [m for m in modes if m in MODES and (m == "free" or incumbent is not None)] or ["free"]
    best, stats = None, {"part_start_parts": len(cuts) + 1}
    for m, mode in enumerate(modes):
        child = budget.child(budget.left / (len(modes) - m))
        found, windows = _stitch(problem, part, cuts, incumbent, child, seed, mode == "keep")
        budget.charge(child.used)
        stats[f"part_start_{mode}"] = {"windows": windows,
                                       "objective": objective_value(problem, found) if found is not None else None}
        if found is not None and (best is None or objective_value(problem, found) < objective_value(problem, best)):
            best = found
    stats.update(part_start_objective=objective_value(problem, best) if best is not None else None,
                 part_start_units=round(budget.used - used, 6))
    return best, stats
