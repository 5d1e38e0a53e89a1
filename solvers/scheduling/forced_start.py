"""A start candidate from the forced-cut relaxation: its best placement, sequenced on the true
problem, competes with the scheduler's other starts (HEFT, the caller's warm start, ...).

Notes
-----
The forced-cut relaxation (:mod:`solvers.scheduling.forced_cuts`) chooses, over every placement
memory allows, which edges to cut so that the transfers on the longest path cost least; it drops
the contention on streams and links. Its placements are therefore good *candidates* for the real
problem on memory-forced graphs, where HEFT (op by op) and the contiguous split (a proxy cost)
choose cuts badly, but their relaxed makespan is no schedule. This module turns one into a
schedule:

1. **Relaxed placements.** CP-SAT minimises the relaxation (the model of
   :func:`~solvers.scheduling.forced_cuts.forced_cut_model`) within the budget it is given,
   warm-started from the best placement known: the incumbent's (mapped to slots and relabelled
   to the model's first-use order of interchangeable slots, so the hint satisfies its symmetry
   breaking) or a placement the bound's probes found (``seeds``), whichever is shorter in the
   relaxation. Its result and the seeds are the candidate placements.
2. **Sequencing.** For each candidate placement, each op may use only the devices of its slot (one device, or the pooled
   devices of an unlimited slot), and HEFT (:func:`~solvers.scheduling.heft.heft_schedule`)
   places and sequences on that restriction with the true rules: streams, transfers on their
   links, activation memory. The schedule is checked by
   :func:`~solvers.scheduling.validate.validate_schedule` on the unrestricted problem. The
   shortest valid schedule is the candidate: the relaxation's best placement need not sequence
   best, because it drops the contention (on the dnn layer graphs, where transfers dominate,
   the links' contention is most of the makespan).

The caller keeps the candidate only when it is shorter than its incumbent, so a candidate never
makes a result worse. Deterministic: CP-SAT runs within deterministic units, HEFT has no
randomness, and the HEFT passes are charged from their size (no clock).
"""

from __future__ import annotations

from dataclasses import replace

from solvers.budget import MODEL_ELEMENTS_PER_UNIT, Budget, build_units
from solvers.core import SolveOptions, Status
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.forced_cuts import Slot, cut_slots, forced_cut_model, memory_forces_cuts
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "slots_of_solution", "relaxed_makespan", "sequence_slots", "forced_cut_start"]

SOURCE = "forced-cut relaxation"  # the hint source the scheduler reports for this candidate


def slots_of_solution(problem: SchedulingProblem, slots: list[Slot],
                      op_device: tuple[int, ...]) -> tuple[int, ...] | None:
    """Each op's slot under ``op_device``, interchangeable slots relabelled by first use in
    topological order (the relaxation's value precedence); None if a device is in no slot.

    Examples
    --------
    Two interchangeable 4-byte devices; the ops' first use is device 1, so it becomes slot 0:

    >>> p = SchedulingProblem(((1, 1),) * 2, ((0, 1, 1),), (1, 1), ((-1, 0), (0, -1)), ((3,),),
    ...                       device_memory_bytes=(4, 4), op_resident_bytes=(3, 3))
    >>> slots_of_solution(p, cut_slots(p), (1, 0))
    (0, 1)
    """
    slot_of_device = {d: s for s, slot in enumerate(slots) for d in slot.devices}
    if any(d not in slot_of_device for d in op_device):
        return None
    raw = [slot_of_device[d] for d in op_device]
    members: dict[int, list[int]] = {}
    for s, slot in enumerate(slots):
        members.setdefault(slot.group, []).append(s)
    relabel: dict[int, int] = {}
    taken: dict[int, int] = {}  # per group: how many of its slots are relabelled so far
    for i in topological_order(problem):
        s = raw[i]
        if s not in relabel:
            group = members[slots[s].group]
            relabel[s] = group[taken.get(slots[s].group, 0)]
            taken[slots[s].group] = taken.get(slots[s].group, 0) + 1
    return tuple(relabel[s] for s in raw)


def relaxed_makespan(problem: SchedulingProblem, slots: list[Slot], slot_of_op: tuple[int, ...]) -> int:
    """The relaxation's makespan of a placement (its least makespan in the model of
    :func:`~solvers.scheduling.forced_cuts.forced_cut_model` with the placement fixed): the
    longest path where an op lasts its fastest duration on its slot and an edge between two
    slots its cheapest transfer, or a slot's work over its streams if longer.

    Examples
    --------
    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((7,), (7,)), device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    >>> relaxed_makespan(p, cut_slots(p), (0, 0, 1)), relaxed_makespan(p, cut_slots(p), (0, 0, 0))
    (13, 6)
    """
    return _relaxed_schedule(problem, slots, slot_of_op)[1]


def _relaxed_schedule(problem: SchedulingProblem, slots: list[Slot],
                      slot_of_op: tuple[int, ...]) -> tuple[list[int], int]:
    """The earliest ends ``T_i`` of :func:`relaxed_makespan`'s longest path, and the makespan."""
    dur = [min(row[d] for d in slots[slot_of_op[i]].devices if row[d] >= 0)
           for i, row in enumerate(problem.durations_cycles)]
    preds: list[list[tuple[int, int]]] = [[] for _ in range(problem.num_ops)]
    for e, (u, v, _) in enumerate(problem.edges):
        row = problem.transfer_cycles[e]
        preds[v].append((u, (min(row) if row else 0) if slot_of_op[u] != slot_of_op[v] else 0))
    end = [0] * problem.num_ops
    for i in topological_order(problem):
        end[i] = max((end[u] + tc for u, tc in preds[i]), default=0) + dur[i]
    load = [0] * len(slots)
    for i, s in enumerate(slot_of_op):
        load[s] += dur[i]
    return end, max(max(end, default=0), max(-(-w // slots[s].streams) for s, w in enumerate(load)))


def sequence_slots(problem: SchedulingProblem, slots: list[Slot],
                   slot_of_op: tuple[int, ...]) -> SchedulingSolution | None:
    """HEFT on ``problem`` with each op restricted to its slot's devices: a valid schedule of
    ``problem``, or None when HEFT gets stuck (memory) or the schedule is not valid.

    Examples
    --------
    Ops a(2) -> b(2) -> c(2), 5 weight bytes each, two 10-byte devices, transfers of 7:

    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((7,), (7,)), device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    >>> s = sequence_slots(p, cut_slots(p), (0, 0, 1))
    >>> s.op_device, s.makespan_cycles
    ((0, 0, 1), 13)
    """
    rows = tuple(tuple(c if d in slots[slot_of_op[i]].devices else -1 for d, c in enumerate(row))
                 for i, row in enumerate(problem.durations_cycles))
    if any(all(c < 0 for c in row) for row in rows):
        return None
    sol = heft_schedule(replace(problem, durations_cycles=rows))
    if sol is None or validate_schedule(problem, sol):
        return None
    return sol


def _heft_units(problem: SchedulingProblem) -> float:
    """The predicted cost of one HEFT pass (elements: (ops + edges) x devices)."""
    return build_units((problem.num_ops + len(problem.edges)) * problem.num_devices, MODEL_ELEMENTS_PER_UNIT)


def _hint_placement(built, problem: SchedulingProblem, slots: list[Slot], slot_of_op: tuple[int, ...]) -> None:
    """Hint every variable of the relaxation's model with ``slot_of_op``'s solution (a
    complete hint: on the 783-op BERT-L 12 graph a hint of the placement alone left CP-SAT
    without any solution in 0.34 units)."""
    m = built.model
    for i, s in enumerate(slot_of_op):
        for k, x in enumerate(built.place[i]):
            if x is not None:
                m.add_hint(x, k == s)
    ends, makespan = _relaxed_schedule(problem, slots, slot_of_op)
    for i, t in enumerate(ends):
        m.add_hint(built.ends[i], t)
    for e, z in built.cuts.items():
        u, v, _ = problem.edges[e]
        m.add_hint(z, slot_of_op[u] != slot_of_op[v])
    order = {op: k for k, op in enumerate(topological_order(problem))}
    first_use = {}
    for i, s in enumerate(slot_of_op):
        first_use[s] = min(first_use.get(s, order[i]), order[i])
    for literal, i, s in built.used:
        m.add_hint(literal, s in first_use and first_use[s] <= order[i])
    m.add_hint(built.makespan, makespan)


def _minimise(restricted: SchedulingProblem, slots: list[Slot], options: SolveOptions, budget: Budget,
              start: tuple[int, ...] | None) -> tuple[tuple[int, ...] | None, str]:
    """The relaxation minimised within ``budget`` from ``start``: (slot per op, CP-SAT status)."""
    built = forced_cut_model(restricted, contention=False)  # its complete hint is a contention-free schedule
    if start is not None:
        _hint_placement(built, restricted, slots, start)
    status, solver, _ = budget.run_cpsat(built.model, options, budget.left, "forced_cut_start")
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return None, status.value
    return tuple(next(k for k, x in enumerate(row) if x is not None and solver.value(x))
                 for row in built.place), status.value


def forced_cut_start(problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                     incumbent: SchedulingSolution | None = None,
                     seeds: tuple[tuple[int, ...], ...] = ()) -> tuple[SchedulingSolution | None, dict]:
    """The relaxation's best placement within ``budget``, sequenced (module Notes).

    ``seeds`` are slot placements of the relaxation (its probes' solutions). Returns
    ``(schedule or None, stats)``; the schedule is a valid schedule of ``problem`` and may be
    longer than ``incumbent`` (the caller compares). ``(None, {})`` when memory forces no cut.

    Examples
    --------
    Ops a(2) -> b(2) -> c(2) of 5 weight bytes each on two 11-byte devices (two ops and an
    input fit one): HEFT keeps a and b together and sends b's output over the slow edge (2 +
    2 + 9 + 2 = 15); the relaxation cuts the cheap edge a -> b instead (2 + 1 + 2 + 2 = 7):

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((1,), (9,)), device_memory_bytes=(11, 11), op_resident_bytes=(5, 5, 5))
    >>> s, stats = forced_cut_start(p, SolveOptions(num_workers=1), Budget.start(5, SCHEDULING))
    >>> s.op_device, s.makespan_cycles, stats["forced_cut_start_relaxed"]
    ((0, 1, 1), 7, 7)
    """
    if not memory_forces_cuts(problem):
        return None, {}
    restricted = restrict_placements(problem)
    slots = cut_slots(restricted)
    starts = list(seeds)
    if incumbent is not None:
        mapped = slots_of_solution(restricted, slots, incumbent.op_device)
        if mapped is not None and all(restricted.durations_cycles[i][d] >= 0
                                      for i, d in enumerate(incumbent.op_device)):
            starts.append(mapped)
    # the shortest known placement in the relaxation warm-starts it (the first on a tie)
    start = min(starts, key=lambda s: relaxed_makespan(restricted, slots, s), default=None)
    placement, status = _minimise(restricted, slots, options, budget, start)
    stats: dict = {"forced_cut_start_status": status}
    # the relaxation's best need not sequence best (it drops contention): every distinct
    # placement it produced is sequenced, the shortest schedule kept (the first on a tie)
    tried = list(dict.fromkeys(([placement] if placement is not None else []) + list(reversed(seeds))))
    best, best_relaxed = None, None
    for candidate in tried:
        if best is not None and budget.wall_expired():  # the safety net fired: keep what we have
            break
        budget.note("forced_cut_start_sequencing", budget.scale(_heft_units(problem)))
        sol = sequence_slots(problem, slots, candidate)
        if sol is not None and (best is None or objective_value(problem, sol) < objective_value(problem, best)):
            best, best_relaxed = sol, relaxed_makespan(restricted, slots, candidate)
    stats["forced_cut_start_sequenced"] = len(tried)
    if placement is not None:
        stats["forced_cut_start_relaxed"] = relaxed_makespan(restricted, slots, placement)
    stats["forced_cut_start_objective"] = objective_value(problem, best) if best is not None else None
    stats["forced_cut_start_objective_relaxed"] = best_relaxed
    return best, stats
