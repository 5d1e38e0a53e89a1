"""Relaxed parts realised: the part bound's sequenced relaxations (a slot per op) turned into
placements of the real parts, scheduled exactly and spliced into the plan when it gets shorter.

Notes
-----
**Why.** The part bound (:mod:`~solvers.scheduling.part_bound`) solves, per part between its
cut ops, the forced-cut relaxation with every slot's ops run one at a time and (where the slots
are verified interchangeable) each link's transfers one at a time
(:mod:`~solvers.scheduling.slot_sequencing`). On ResNet-50 operators that relaxation reaches the
parts' exact optima (190.91, 101.27, 71.20 ms on the first three stages), while the plan spends
198.55, 113.23 and 74.59 there. An optimal solution of a relaxation that tight is nearly a plan:
it says which slot (a device, or a pool of devices that hold everything) each op runs on.
Measured offline on the pruned parts (one worker, 2026-11-29 06:11-06:15 UTC, load 5-12 on 2
cores): CP-SAT with the placement of the relaxation's solution fixed schedules stage 1 at
190.91 (its linked relaxation, OPTIMAL in 0.30 units), stage 3 at 71.20, stage 4 at 24.45 (both
OPTIMAL), and stage 2's unproven linked solution (111.75) at 106.32.

**Slots to devices** (:func:`device_map`). The relaxation numbers its slots in a fresh part:
its single-device slots of one group are interchangeable (value precedence picks which), its
part knows nothing of the weights the plan's other parts keep on each device, nor where the plan
puts the part's cut ops. So each single-device slot the solution uses is mapped to a device of
its group: the slot of the opening cut op to the plan's device of that op, the slot of the
closing cut op to the plan's device of that one (the later parts then stay valid as they are),
the rest by weight, heaviest slot to the device with the most room left (a matching between
slots that need room ``w`` and devices that have room ``r`` exists iff the sorted lists pair
off with ``w <= r``, so the greedy order misses none). A pooled slot keeps its devices.

**The part problem** is part re-solve's (:func:`~solvers.scheduling.part_resolve.resolve_problem`:
the part of the original problem in the room the plan's other parts leave, both cut ops pinned),
each op restricted to its mapped slot's devices; an op the bound's pruning dropped (weight
sources) goes with the op it is colocated with, else stays free. HEFT sequences it, CP-SAT with
HEFT's placement fixed shortens it (:func:`~solvers.scheduling.traced_start.fixed_schedule`,
:data:`REALISE_UNITS`), and it is spliced in
(:func:`~solvers.scheduling.part_resolve.splice_part`) only when the whole plan is then valid
(:func:`~solvers.scheduling.validate.validate_schedule`) and strictly shorter. So the result is
never worse than the plan it starts from.

**Measured** (the dnn benchmark's 60 s deterministic run, ResNet-50 operators, 2026-11-29, load
9-12 on 2 cores): 411.80 -> 411.25 ms (stage 4 at its relaxation's 24.45), 0.002 units. The big
stages do not realise beside the plan: their relaxations live in fresh memory and pack a stage
onto two accelerators (388 + 568 MB, 95 + 614 MB of 629) where the plan's other parts keep most
of several, so no map fits; what was tried beyond this is in docs/bounds.md (Relaxed parts
realised).

**Order.** The parts by what the plan spends in them above the relaxation's value (most first),
each part's solutions by value; every part is tried once per solution. Counted, never timed:
each HEFT pass and check is charged as one placement-LNS pass of the part, CP-SAT through the
budget, so the same problem, plan, solutions and budget give the same result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from solvers.budget import Budget, build_units
from solvers.core import SolveOptions
from solvers.scheduling.bounds import bound_segments
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.part_bound import part_cuts, part_problems
from solvers.scheduling.part_resolve import resolve_problem, splice_part
from solvers.scheduling.part_start import original_parts
from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.room_relaxation import restricted_rows
from solvers.scheduling.traced_start import fixed_schedule
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "REALISE_UNITS", "device_map", "realised_part", "relaxed_parts_start"]

SOURCE = "relaxed parts"  # the stats' name for this candidate

REALISE_UNITS = 0.02
"""CP-SAT units per realisation with the placement fixed (ResNet-50 operators' pruned stages:
0.00003-0.0003 units each to OPTIMAL, one worker)."""


def device_map(slot_devices: Sequence[tuple[int, ...]], weights: Sequence[int], room: Sequence[int],
               groups: dict[int, tuple[int, ...]], pinned: dict[int, int]) -> dict[int, int] | None:
    """Each single-device slot ``(d,)`` in ``slot_devices`` (one per op) mapped to a device of
    its group (``groups[d]``: the devices interchangeable with ``d``), injectively: ``pinned``
    first (slot device -> device), then the rest heaviest first to the device with the most
    ``room`` left (ties: lowest index), a slot's weight being the sum of ``weights`` of its
    ops. None when a pin clashes or a slot does not fit (module Notes, Slots to devices).

    Examples
    --------
    Slots 0 and 1 of one group of three devices, 5 and 3 bytes; device 2 must take slot 1:

    >>> groups = {d: (0, 1, 2) for d in range(3)}
    >>> device_map([(0,), (0,), (1,)], [2, 3, 3], [4, 6, 3], groups, {1: 2})
    {1: 2, 0: 1}
    >>> device_map([(0,), (1,)], [5, 5], [4, 4, 9], groups, {}) is None
    True
    """
    load: dict[int, int] = {}
    for devices, w in zip(slot_devices, weights):
        if len(devices) == 1:
            load[devices[0]] = load.get(devices[0], 0) + w
    mapping: dict[int, int] = {}
    taken: set[int] = set()
    for slot, device in sorted(pinned.items()):
        if slot not in load:
            continue
        if device in taken or device not in groups[slot] or load[slot] > room[device]:
            return None
        mapping[slot] = device
        taken.add(device)
    for slot in sorted(load, key=lambda s: (-load[s], s)):
        if slot in mapping:
            continue
        free = sorted((d for d in groups[slot] if d not in taken), key=lambda d: (-room[d], d))
        if not free or load[slot] > room[free[0]]:
            return None
        mapping[slot] = free[0]
        taken.add(free[0])
    return mapping


def _groups(problem: SchedulingProblem, slot_devices: Sequence[Sequence[tuple[int, ...]]]) -> dict[int, tuple[int, ...]]:
    """The devices interchangeable with each single-device slot (same class; all devices when
    the problem has no classes)."""
    kinds = problem.device_class or (0,) * problem.num_devices
    singles = sorted({devices[0] for solution in slot_devices for devices in solution if len(devices) == 1})
    return {d: tuple(e for e in range(problem.num_devices) if kinds[e] == kinds[d]) for d in singles}


def _pass_units(problem: SchedulingProblem) -> float:
    return build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)


def realised_part(sub: SchedulingProblem, ops: Sequence[int], slot_of: dict[int, tuple[int, ...]],
                  weights: dict[int, int], groups: dict[int, tuple[int, ...]], pinned: dict[int, int],
                  options: SolveOptions, budget: Budget) -> SchedulingSolution | None:
    """The relaxation's slots (``slot_of``: original op -> its slot's devices; ``weights``:
    original op -> its weight in the relaxation) on the part problem ``sub`` (whose ops are
    ``ops``), slots mapped to devices (:func:`device_map`, ``pinned`` slot device -> device),
    sequenced by HEFT and by CP-SAT with that placement fixed: a valid schedule of ``sub``, or
    None (module Notes, The part problem)."""
    local = [o for o in ops if o in slot_of]
    room = [sub.memory_bytes(d) or 1 << 62 for d in range(sub.num_devices)]
    mapping = device_map([slot_of[o] for o in local], [weights[o] for o in local], room, groups, pinned)
    if mapping is None:
        return None
    allowed = [None if o not in slot_of else
               (mapping[slot_of[o][0]],) if len(slot_of[o]) == 1 else slot_of[o] for o in ops]
    restricted = restricted_rows(sub, allowed)
    budget.charge(budget.scale(_pass_units(sub)))
    if restricted is None:
        return None
    start = heft_schedule(restricted)
    if start is None or validate_schedule(sub, start):
        return None
    return fixed_schedule(sub, start, options, budget, min(budget.left, budget.scale(REALISE_UNITS)))


def _pins(best: SchedulingSolution, slot_of: dict[int, tuple[int, ...]], cuts: Sequence[int],
          k: int) -> dict[int, int] | None:
    """The plan's devices of part ``k``'s cut ops, by their single-device slots; None when the
    two cut ops share a slot the plan puts them on two devices of."""
    pins: dict[int, int] = {}
    for op in ([cuts[k - 1]] if k > 0 else []) + ([cuts[k]] if k < len(cuts) else []):
        devices = slot_of.get(op)
        if devices is None or len(devices) != 1:
            continue
        if pins.setdefault(devices[0], best.op_device[op]) != best.op_device[op]:
            return None
    return pins


def _relaxed_parts(problem: SchedulingProblem, relaxed: dict[int, list]) -> tuple | None:
    """The part bound's cut ops as ops of ``problem``, each op's part, and per part its distinct
    relaxation solutions as (value, original op -> slot devices, original op -> weight); None
    where the parts do not map back."""
    named = replace(problem, op_names=tuple(str(i) for i in range(problem.num_ops)))
    pruned, _ = bound_segments(named)  # as the part bound's: the pruning ignores names
    pruned_cuts = part_cuts(pruned)
    cuts = [int(pruned.op_name(c)) for c in pruned_cuts]
    part = original_parts(problem, cuts) if cuts else None
    if part is None:
        return None
    solutions: dict[int, list[tuple[int, dict, dict]]] = {}
    for k, (sub, ops) in enumerate(part_problems(pruned, pruned_cuts)):
        originals = [int(pruned.op_name(i)) for i in ops]
        weights = {o: (0 if k > 0 and j == 0 else sub.op_resident_bytes[j]) for j, o in enumerate(originals)}
        seen = set()  # the link pass often returns the sequenced pass's placement again
        for value, slot_devices in relaxed.get(k, []):
            if len(slot_devices) == len(originals) and slot_devices not in seen:
                seen.add(slot_devices)
                solutions.setdefault(k, []).append((value, dict(zip(originals, slot_devices)), weights))
    return cuts, part, solutions


def relaxed_parts_start(problem: SchedulingProblem, incumbent: SchedulingSolution, relaxed: dict[int, list],
                        options: SolveOptions, budget: Budget) -> tuple[SchedulingSolution, dict[str, Any]]:
    """The valid schedule ``incumbent`` with each part whose realised relaxation (``relaxed``:
    :func:`~solvers.scheduling.part_bound.part_bound`'s, per part a list of (value, slot
    devices per op of the pruned part)) makes the whole plan shorter spliced in, within
    ``budget`` (module Notes): (the shortest schedule, never worse than ``incumbent``;
    statistics, empty where nothing applies).

    Examples
    --------
    A chain a -> b -> c -> d of 2-cycle ops, 6 bytes each, on two 18-byte devices; its tensors
    shrink after b (transfers 5, 5, 2). From c alone on device 1 (two crossings, 15 cycles),
    the second part's relaxation (c with b on one slot, d on another: one cheap crossing)
    realised gives 10:

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,), (5,), (2,)), device_memory_bytes=(18, 18),
    ...                       op_resident_bytes=(6, 6, 6, 6))
    >>> start = heft_schedule(p, (0, 0, 1, 0))
    >>> best, stats = relaxed_parts_start(p, start, {1: [(6, ((0,), (0,), (1,)))]}, SolveOptions(num_workers=1),
    ...                                   Budget.start(5, SCHEDULING))
    >>> start.makespan_cycles, best.makespan_cycles, best.op_device, stats["relaxed_parts_accepted"]
    (15, 10, (0, 0, 0, 1), 1)
    """
    if problem.objective is not Objective.LATENCY or not relaxed:
        return incumbent, {}
    mapped = _relaxed_parts(problem, relaxed)
    if mapped is None or not mapped[2]:
        return incumbent, {}
    cuts, part, solutions = mapped
    best, best_obj = incumbent, objective_value(problem, incumbent)
    used = budget.used
    stats: dict[str, Any] = {"relaxed_parts_start": best_obj, "relaxed_parts_tried": [],
                             "relaxed_parts_accepted": 0}
    groups = _groups(problem, [list(slot_of.values()) for rows in solutions.values() for _, slot_of, _ in rows])
    ends = [0] + [best.op_start[c] + best.op_duration[c] for c in cuts] + [best_obj]
    windows = [b - a for a, b in zip(ends, ends[1:])]  # what the plan spends in each part
    order = sorted(solutions, key=lambda k: (-(windows[k] - min(v for v, _, _ in solutions[k])), k))
    for k in order:
        for value, slot_of, weights in sorted(solutions[k], key=lambda row: row[0]):
            if budget.left <= 0 or budget.wall_expired():
                break
            pins = _pins(best, slot_of, cuts, k)
            sub, ops, inside = resolve_problem(problem, best, part, cuts, k)
            found = None if pins is None else realised_part(sub, ops, slot_of, weights, groups, pins, options, budget)
            row: dict[str, Any] = {"part": k, "relaxed": value, "found": None if found is None else objective_value(sub, found)}
            if found is not None:
                trial = splice_part(problem, best, part, cuts, k, ops, inside, found)
                row["objective"] = objective_value(problem, trial)
                if row["objective"] < best_obj and not validate_schedule(problem, trial):
                    best, best_obj = trial, row["objective"]
                    stats["relaxed_parts_accepted"] += 1
            stats["relaxed_parts_tried"].append(row)
    stats.update(relaxed_parts_objective=best_obj, relaxed_parts_units=round(budget.used - used, 6))
    return best, stats

