"""A part re-solved through its sequenced relaxation in the room the plan leaves: the linked
relaxation of the part problem, hinted with the plan's own schedule of the part, its
placement realised and sequenced exactly, for the part re-solve
(:mod:`~solvers.scheduling.part_resolve`).

Notes
-----
**Why.** On ResNet-50 operators the plan spends 113.23 ms in the second stage, where the part's
exact optimum is 101.27. The part bound's sequenced relaxation with links
(:mod:`~solvers.scheduling.slot_sequencing`) reaches the parts' optima, and its optimal
placement, scheduled exactly, is a plan at its value; but solved on the part alone it packs the
stage onto accelerators the plan's other parts fill (docs/bounds.md, Relaxed parts realised).
Solved on part re-solve's problem instead (the room the plan's other parts leave, both cut ops
pinned: :func:`~solvers.scheduling.part_resolve.resolve_problem`) every accelerator is a slot
of its own and its placement fits beside the plan; session 16 measured 113.23 -> 109.56 on the
second stage (0.33 units, no hint), which no stage had to spare.

**Hint.** The plan's restriction to the part (its times shifted to the part's start) is a valid
schedule of the part problem, so it maps to a solution of the relaxation (placement, ends, cut
edges and makespan as the relaxation's soundness argument maps any schedule): CP-SAT starts
from the plan's own window instead of searching for a first solution. A hint moves only where
the search starts.

**Realised** (:func:`room_relaxed_part`). Each op goes to its slot's devices (one device on an
accelerator, the pool for a pooled slot); HEFT sequences that placement and CP-SAT with it fixed
shortens the sequence (:func:`~solvers.scheduling.traced_start.fixed_schedule`). The result is a
valid schedule of the part problem or None; the caller splices it only when the whole plan
stays valid and gets shorter.

**Budget.** Counted, never timed: CP-SAT's deterministic time through the budget, the HEFT pass
charged as one placement-LNS pass of the part. Same part, plan and budget: same result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from solvers.budget import Budget, build_units
from solvers.core import SolveOptions
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.forced_cuts import Slot, cut_slots
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT
from solvers.scheduling.problem import FORBIDDEN, SchedulingProblem, SchedulingSolution
from solvers.scheduling.slot_sequencing import sequenced_cut_model
from solvers.scheduling.structure import topological_order
from solvers.scheduling.traced_start import fixed_schedule
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["REALISE_UNITS", "plan_hint", "restricted_rows", "room_relaxed_part"]

REALISE_UNITS = 0.02
"""CP-SAT units for the realised placement's sequence (the relaxed parts' figure:
ResNet-50 operators' stages reach OPTIMAL with a fixed placement in 0.0003 units or less)."""


def _precedent_slots(problem: SchedulingProblem, slots: Sequence[Slot], plan: SchedulingSolution) -> list[int]:
    """Each op's slot in ``plan``, the single-device slots of a group renamed so that they are
    first used in the order the model's value precedence asks (topological order, the group's
    slots in index order): a hint against that order would be no solution of the model. The
    slots of a group are interchangeable, so the renamed plan maps to a solution as the plan
    does."""
    slot_of = {d: s for s, slot in enumerate(slots) for d in slot.devices}
    at = [slot_of[d] for d in plan.op_device]
    members: dict[int, list[int]] = {}
    for s, slot in enumerate(slots):
        members.setdefault(slot.group, []).append(s)
    rename: dict[int, int] = {}
    taken: dict[int, int] = {}
    for i in topological_order(problem):
        group = slots[at[i]].group
        if at[i] not in rename and len(members[group]) > 1:
            rename[at[i]] = members[group][taken.get(group, 0)]
            taken[group] = taken.get(group, 0) + 1
    return [rename.get(s, s) for s in at]


def plan_hint(built, problem: SchedulingProblem, slots: Sequence[Slot], plan: SchedulingSolution) -> None:
    """Hint the valid schedule ``plan`` of ``problem`` on ``built`` (its sequenced model over
    ``slots``): each op's slot and end, each cut edge, the makespan (module Notes, Hint); the
    slots of a group of interchangeable accelerators renamed to the model's value precedence.

    Examples
    --------
    A chain a -> b -> c -> d of 2-cycle, 6-byte ops on three 12-byte accelerators; its tensors
    shrink after b (transfers 5, 5, 2). A plan with a and b on the third accelerator and c, d on
    the first (13 cycles) is hinted as the slots 0 and 1 the value precedence asks for; with
    every hinted variable fixed the model still solves, at the plan's makespan:

    >>> from solvers.scheduling.heft import heft_schedule
    >>> links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    >>> p = SchedulingProblem(((2, 2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1, 1), links,
    ...                       ((5,) * 3, (5,) * 3, (2,) * 3), device_memory_bytes=(12,) * 3,
    ...                       op_resident_bytes=(6,) * 4)
    >>> from ortools.sat.python import cp_model
    >>> plan = heft_schedule(p, (2, 2, 0, 0))
    >>> slots = cut_slots(p, 24)
    >>> built = sequenced_cut_model(p, total=24, links=True)
    >>> plan_hint(built, p, slots, plan)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> solver.parameters.fix_variables_to_their_hinted_value = True
    >>> _precedent_slots(p, slots, plan), solver.solve(built.model) == cp_model.OPTIMAL, solver.objective_value
    ([0, 0, 1, 1], True, 13.0)
    """
    m = built.model
    at = _precedent_slots(problem, slots, plan)
    for i, row in enumerate(built.place):
        for s, x in enumerate(row):
            if x is not None:
                m.add_hint(x, s == at[i])
        m.add_hint(built.ends[i], plan.op_start[i] + plan.op_duration[i])
    for e, cut in built.cuts.items():
        u, v, _ = problem.edges[e]
        m.add_hint(cut, at[u] != at[v])
    m.add_hint(built.makespan, objective_value(problem, plan))


def restricted_rows(sub: SchedulingProblem, allowed: Sequence[tuple[int, ...] | None]) -> SchedulingProblem | None:
    """``sub`` with op j allowed only on ``allowed[j]`` (None: as it was), ops of a colocation
    group on what its members allow together; None when an op is left no device.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 2), (3, 4)), ((0, 1, 0),), (1, 1), ((-1, 0), (0, -1)), ((1,),))
    >>> restricted_rows(p, [(1,), None]).durations_cycles, restricted_rows(p, [(), None])
    (((-1, 2), (3, 4)), None)
    """
    allowed = list(allowed)
    for group in sub.colocation_groups:
        common = set(range(sub.num_devices))
        for j in group:
            if allowed[j] is not None:
                common &= set(allowed[j])
        for j in group:
            allowed[j] = tuple(sorted(common))
    rows = tuple(row if devices is None else tuple(c if d in devices else FORBIDDEN for d, c in enumerate(row))
                 for row, devices in zip(sub.durations_cycles, allowed))
    if any(all(c < 0 for c in row) for row in rows):
        return None
    return replace(sub, durations_cycles=rows)


def _pass_units(problem: SchedulingProblem) -> float:
    return build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)


def room_relaxed_part(sub: SchedulingProblem, plan: SchedulingSolution | None, options: SolveOptions,
                      budget: Budget, total: int) -> SchedulingSolution | None:
    """The part problem ``sub``'s sequenced relaxation with links (accelerators apart where
    they cannot hold ``total`` bytes, the whole problem's weights), hinted with ``plan`` (a
    valid schedule of ``sub``, or None), solved within ``budget`` on one worker and its
    placement realised (module Notes): a valid schedule of ``sub``, or None.

    Examples
    --------
    The chain of :func:`plan_hint`, from a plan with three crossings (20 cycles): the
    relaxation's placement crosses once, at the cheap edge c -> d (13, the optimum):

    >>> from solvers.scheduling.heft import heft_schedule
    >>> links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    >>> p = SchedulingProblem(((2, 2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1, 1), links,
    ...                       ((5,) * 3, (5,) * 3, (2,) * 3), device_memory_bytes=(12,) * 3,
    ...                       op_resident_bytes=(6,) * 4)
    >>> from solvers.budget import SCHEDULING
    >>> plan = heft_schedule(p, (0, 1, 2, 0))
    >>> found = room_relaxed_part(p, plan, SolveOptions(num_workers=1), Budget.start(2, SCHEDULING), 24)
    >>> objective_value(p, plan), objective_value(p, found), validate_schedule(p, found)
    (20, 13, [])
    """
    restricted = restrict_placements(sub)
    slots = cut_slots(restricted, total)
    built = sequenced_cut_model(restricted, total=total, links=True)
    if plan is not None:
        plan_hint(built, restricted, slots, plan)
    one = replace(options, num_workers=1, hint=None, progress=None)
    _, found = budget.proven_bound_and_incumbent(built.model, one, max(0.0, budget.left - budget.scale(REALISE_UNITS)),
                                                 None, 0)
    if found is None:
        return None
    values = found[1]
    devices = [next(slots[s].devices for s, x in enumerate(row) if x is not None and values[x.index])
               for row in built.place]
    rows = restricted_rows(sub, devices)
    budget.charge(budget.scale(_pass_units(sub)))
    start = None if rows is None else heft_schedule(rows)
    if start is None or validate_schedule(sub, start):
        return None
    return fixed_schedule(sub, start, one, budget, min(budget.left, budget.scale(REALISE_UNITS)))
