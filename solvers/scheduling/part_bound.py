"""The part bound (LATENCY with memory limits): the problem cut at a few clean cut ops into
*parts* that keep their memory limits, each bounded by the forced-cut relaxation with its
contention terms; the parts' bounds add up.

Notes
-----
**Why parts.** The forced-cut relaxation (:mod:`solvers.scheduling.forced_cuts`) sees every
device change memory forces, but on a whole dnn operator graph CP-SAT proves little about it
within a benchmark's budget (ResNet-50 operators: 334-340 ms against its optimum of 372.3,
which took 67 s). The graph's clean cut ops split it into stretches that CP-SAT solves
exactly in a few hundredths of a unit each, *with* the window terms for stream and link
contention; what the split loses is only what couples two parts (which device a part ends
on, memory the next part could reuse).

**Soundness.** Take cut ops ``c_1 < ... < c_k`` (every other op precedes or follows each;
:func:`~solvers.scheduling.structure.cut_vertices`). In any schedule the makespan telescopes
into ``end(c_1) + sum_j (end(c_(j+1)) - end(c_j)) + (makespan - end(c_k))``. The ops of part
j (those after ``c_j`` and up to ``c_(j+1)`` in topological order) all descend from ``c_j``
and precede or are ``c_(j+1)``, so they run inside ``[end(c_j), end(c_(j+1))]`` together with
the transfers of the edges among them. Shifted by ``end(c_j)``, with ``c_j`` taking no time
on its device at 0, they are a schedule of the *part problem*: those ops and the edges among
them, every device's memory limit and streams, every op's weights (``c_j``'s included: it
does sit on that device). Links carry no other transfers than the real ones, memory holds no
more than the real weights, so the part's optimum is at most ``end(c_(j+1)) - end(c_j)``.
The head (ops up to ``c_1``) and the tail (from ``c_k``) are parts alike. So the sum of the
parts' optima, and of any sound bounds on them, is at most the makespan. Each part is bounded
by the larger of its static bound
(:func:`~solvers.scheduling.bounds.lower_bound`) and, when its weights do not fit one of its
devices (:func:`~solvers.scheduling.forced_cuts.memory_forces_cuts`), the bound CP-SAT proves
on its forced-cut relaxation with contention (the open objective, not probes: on parts it
finishes). Which cut ops split the problem changes only how tight the sum is.

**Where to cut** (:func:`part_cuts`). At the clean cut ops
(:func:`~solvers.scheduling.structure.clean_cut_vertices`: a device change inside a part
then pays every edge it crosses, residual ones included) where the transfer out of the chain
*drops*: the least transfer out of the cut op is larger than the next clean cut op's and that
one is not free. In a CNN these are the ends of its stages (the activations shrink at each
downsampling), so each part has one tensor size, and a stage whose weights need several
devices is one part. Measured on the dnn ResNet-50 operator input (the pruned 230-op graph,
42 clean cut ops; one CP-SAT worker, open objective per part): stages as parts 371.6 ms
(0.19 units in all), the same relaxation with parts of just over one device of weights 345.4,
of just over two 355.9; without the contention terms 361.7. The whole graph's relaxation
without contention is 372.3 (67 s), and the reported bound before this stage was 338.4.

**Sequenced parts** (session 15; since session 16 in place of the plain relaxation, which runs
only on the forced parts whose sequenced proof did not finish). Each part gets CP-SAT's proven
bound on its relaxation with every device's ops run one at a time
(:mod:`solvers.scheduling.slot_sequencing`; the devices the whole problem's weights need kept
apart, so a part that fits one accelerator still sees them as nine), smallest parts first,
equal shares of what is left; then the parts that proof settled, cheapest first, get the
same with each link's transfers one at a time, each with all that is left. Each is a
relaxation of the part problem (that module's Notes), so any bound CP-SAT proves on it bounds
the part; a part keeps the larger value. ResNet-50 operators (offline, one worker): 373.11 ->
383.76 ms with 0.30 units of sequencing (stages 1, 3, 4: 187.87, 71.20, 24.45), 385.22 when
the links settle stage 2 (101.27, 0.20-0.25 units, seed-dependent), 388.25 when they settle
stage 1 too (1.04 units).

**Link probes** (session 17, in place of the open link objective). After the sequenced pass
(and the plain relaxation where it did not finish), every part, smallest first, gets probes
"makespan <= B" on its sequenced model with link terms, hinted with the plain pass's
incumbent (:func:`_probe_part`). A probe CP-SAT refutes proves the link model, hence the part,
needs more than B; a probe it answers or leaves open proves nothing and only steers the next
B. So the value rises only by refutations and stays a bound on the part whatever the
probes find, and it never passes the link model's optimum. Why probes: a tight cap
propagates far better than an open objective (as in
:func:`~solvers.scheduling.forced_cuts.forced_cut_bound`), and the first probe (3 % above
the plain value) returns a solution whose latest op end is the link model's optimum on every
ResNet-50 operators stage, so the next probe, one cycle below it, settles the part. Stage 1
(one worker, offline, seeds 0-2): the open link objective proved 190.907 ms in 0.26-1.2 units
or not at all; the probes in 0.11-0.16, the refutation alone 0.08-0.09. Stage 2 (101.27) 0.054
-0.073 against 0.13-0.17 or nothing (seeds 1 and 5). Restricting the link pairs instead
(only pairs with one of the first m slots of a class: a subset of constraints, so sound) did
not make the open objective robust: m = 4 proved 190.91 in 0.26 / 0.43 / 1.02 units on seeds
0-2 and nothing in 0.6 on seeds 3 and 4; m = 2 or 3 proved only 189.39.

**Measured truth** (ResNet-50 operators, parts = stages, ``CpSatScheduler`` on each part on one
worker, outside any benchmark; docs/bounds.md, Parts; ``benchmarks/dnn_parts.py``): 190.91 (300
s), 101.27, 71.20 and 24.88 ms, each proven optimal (their relaxations: 183.55, 99.81, 67.26,
21.0). So the optimum is at least 388.25 ms; the plan spends 212.04, 121.33, 76.58 and 25.43 ms
in those parts, so it is the weaker side (the stages solved one after another and stitched
give a valid 411.25-ms plan).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from solvers.budget import Budget
from solvers.core import SolveOptions, Status
from solvers.scheduling.bounds import bound_segments, lower_bound, out_edge_lists, subproblem
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.forced_cuts import cut_slots, forced_cut_model, memory_forces_cuts
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.slot_sequencing import sequenced_cut_model
from solvers.scheduling.structure import clean_cut_vertices, segment_ranges, topological_order

__all__ = ["LEFTOVER_SHARE", "PART_FLOOR_SHARE", "part_problems", "part_cuts", "part_bound"]

LEFTOVER_SHARE = 1.0  # of what the CP-SAT scheduler's main solve leaves (its leftover stage; the probes get what
# the parts leave): on ResNet-50 operators at the dnn benchmark's 60 s 0.6 of the 0.85 left reached 368.6, 0.56 units 371.6

LINK_PROBES = 8  # per part (ResNet-50 operators' parts close in one to three, offline)
LINK_PROBE_SHARE = 2  # each link probe may use half of what is left: stage 1's refutation of 190.907 ms takes
# 0.08-0.09 units, one worker (the open link objective 0.26-1.2 units, seed-dependent)
_FIRST_STEP = 32  # the first link probe asks for 1/32 (3 %) above the part's value

PART_FLOOR_SHARE = 0.05  # of what is left, for each part's ``part_floor`` (CP-SAT segment proofs: ResNet-50
# operators' six parts took 0.0007 units each, one worker)

def part_problems(problem: SchedulingProblem, cuts: Sequence[int]
                  ) -> list[tuple[SchedulingProblem, tuple[int, ...]]]:
    """The parts between the cut ops ``cuts`` (a subset of
    :func:`~solvers.scheduling.structure.cut_vertices`, in topological order) as problems with
    their ops: each opening cut op takes no time, every device keeps its memory limit and every
    op its weights (module Notes, Soundness).

    Examples
    --------
    a -> b -> c, 5 bytes each, cut at b: parts [a, b] and [b*, c], b* taking no time.

    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()),
    ...                       device_memory_bytes=(12,), op_resident_bytes=(5, 5, 5))
    >>> [(ops, sub.durations_cycles, sub.op_resident_bytes) for sub, ops in part_problems(p, [1])]
    [((0, 1), ((2,), (3,)), (5, 5)), ((1, 2), ((0,), (4,)), (5, 5))]
    """
    if not cuts:
        return [(problem, tuple(range(problem.num_ops)))]
    order = topological_order(problem)
    out_edges = out_edge_lists(problem)
    parts = []
    for lo, hi, source, _ in segment_ranges(problem, cuts):
        ops = list(order[lo:hi + 1])
        sub = subproblem(problem, ops, source, out_edges)
        sub = replace(sub, device_memory_bytes=problem.device_memory_bytes,
                      op_resident_bytes=tuple(problem.resident_floor_bytes(i) for i in ops))
        parts.append((sub, tuple(ops)))
    return parts


def _least_out_transfer(problem: SchedulingProblem, op: int, out_edges: list[list[int]]) -> int | None:
    costs = [min(problem.transfer_cycles[e], default=0) for e in out_edges[op]]  # over any link
    return min(costs) if costs else None


def part_cuts(problem: SchedulingProblem) -> tuple[int, ...]:
    """The clean cut ops where the transfer out of the chain drops (module Notes, Where to
    cut): the least transfer out of the op is larger than the next clean cut op's, which is
    not free. Empty when there are none.

    Examples
    --------
    A chain on two devices whose tensors shrink from 8 to 2 cycles after op 1:

    >>> p = SchedulingProblem(((1, 1),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((8,), (8,), (2,)))
    >>> part_cuts(p)
    (1,)
    """
    clean = clean_cut_vertices(problem)
    out_edges = out_edge_lists(problem)
    least = [_least_out_transfer(problem, c, out_edges) for c in clean]
    return tuple(c for k, c in enumerate(clean[:-1])
                 if least[k] is not None and least[k + 1] is not None and 0 < least[k + 1] < least[k])


def _part_floor(part: SchedulingProblem) -> int:
    return lower_bound(part, segments=False, lp=False)


def part_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget, floor: int = 0,
               part_floor: Callable[[SchedulingProblem, Budget], int] | None = None,
               relaxed: dict[int, list] | None = None) -> tuple[int, dict]:
    """The part bound of the module Notes within ``budget``: ``(bound, stats)``, the bound at
    least ``floor``; ``(floor, {})`` when it does not apply (THROUGHPUT, no memory limit that
    forces a cut, or fewer than two parts).

    Each part starts from its static bound, raised by ``part_floor(part, budget)`` when given
    (any sound bound on the part problem; the scheduler passes its CP-SAT segment proofs) with
    ``PART_FLOOR_SHARE`` of what is left. Then every part gets an equal share of what is left
    for CP-SAT on its sequenced relaxation, on one worker (the proven bound counts, whatever
    stops the search); a part whose weights need several devices and whose sequenced proof did
    not finish gets its plain forced-cut relaxation (:func:`_relax_parts`), and the parts the
    sequencing settled the link terms (module Notes, Sequenced parts). Deterministic: the
    shares depend only on what earlier parts charged. ``relaxed``, when given, receives per
    part the solutions CP-SAT found for its sequenced relaxations (:func:`_sequence_parts`),
    for :mod:`~solvers.scheduling.relaxed_parts_start`.

    Examples
    --------
    A chain of four 2-cycle ops, 6 bytes each, on two 12-byte devices; its tensors shrink
    after op 1 (transfers of 5, 5, then 2 cycles). The parts are [0, 1], which fits one device
    (4), and [1*, 2, 3], whose 18 bytes must cross once, cheapest at the 2-cycle edge (6). The
    optimum is 13 (0 and 1 on one device, 2 and 3 on the other): the second part does not know
    the first part's weights fill a device.

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,), (5,), (2,)), device_memory_bytes=(12, 12),
    ...                       op_resident_bytes=(6, 6, 6, 6))
    >>> part_bound(p, SolveOptions(num_workers=1), Budget.start(5, SCHEDULING))[0]
    10
    """
    if problem.objective is not Objective.LATENCY or not memory_forces_cuts(problem):
        return floor, {}
    pruned, _ = bound_segments(problem)
    cuts = part_cuts(pruned)
    if not cuts:
        return floor, {}
    parts = [sub for sub, _ in part_problems(pruned, cuts)]
    forced = [memory_forces_cuts(sub) for sub in parts]
    values: list[int] = []
    one = replace(options, num_workers=1)
    for k, sub in enumerate(parts):
        value = _part_floor(sub)
        if part_floor is not None and budget.left > 0 and not budget.wall_expired():
            child = budget.child(PART_FLOOR_SHARE * budget.left / (len(parts) - k))
            value = max(value, part_floor(sub, child))
            budget.charge(child.used)
        values.append(value)
    # smallest parts first (cheap proofs do not wait behind an expensive one); the plain
    # relaxation only where sequencing did not finish; then the link terms on the parts
    # sequencing settled, cheapest first (module Notes, Sequenced parts)
    weights = pruned.total_resident_floor_bytes()
    order = sorted(range(len(parts)), key=lambda k: (parts[k].num_ops, k))
    solutions: dict[int, list[int]] = {}
    sequenced = sorted(_sequence_parts(parts, values, one, budget, weights, order, solutions=solutions,
                                       relaxed=relaxed))
    settled = {k for _, k in sequenced}
    proven = _relax_parts(parts, values, one, budget, [k for k in order if forced[k] and k not in settled])
    linked = _probe_links(parts, values, one, budget, weights, order, solutions, relaxed)
    total = sum(values)
    budget.note("part_bound", 0.0, parts=len(parts), forced_parts=sum(forced), proven_parts=proven,
                sequenced_parts=len(sequenced), linked_parts=len(linked))
    return max(floor, total), {"part_bound": total, "part_bound_parts": len(parts),
                               "part_bound_proven_parts": proven, "part_bound_sequenced_parts": len(sequenced),
                               "part_bound_linked_parts": len(linked)}


def _relax_parts(parts: list[SchedulingProblem], values: list[int], one: SolveOptions, budget: Budget,
                 order: list[int]) -> int:
    """Raise ``values`` by CP-SAT's proven bound on the forced-cut relaxation with contention of
    the parts in ``order``, each with an equal share of what is left; how many it ran. Only
    for parts whose sequenced proof did not finish: where it finishes its optimum is at least
    the relaxation's (the sequenced model is the relaxation on slots that refine its slots,
    plus constraints), so the relaxation would only have spent units (0.17 of the 0.68 on
    ResNet-50 operators, which the sequencing of stage 1 then missed with seed 1)."""
    ran = 0
    for n, k in enumerate(order):
        if budget.left <= 0 or budget.wall_expired():
            break
        built = forced_cut_model(restrict_placements(parts[k]), values[k], contention=True)
        values[k] = budget.proven_lower_bound(built.model, one, budget.left / (len(order) - n), None, values[k])
        ran += 1
    return ran


def _sequence_parts(parts: list[SchedulingProblem], values: list[int], one: SolveOptions, budget: Budget,
                    total: int, order: list[int], solutions: dict[int, list[int]] | None = None,
                    relaxed: dict[int, list] | None = None) -> list[tuple[float, int]]:
    """Raise ``values`` (each a proven bound on its part) by CP-SAT's proven bound on the
    sequenced relaxation (:mod:`solvers.scheduling.slot_sequencing`; devices that cannot hold
    all ``total`` bytes of the whole problem's weights apart) of the parts in ``order``, each
    with an equal share of what is left; a part keeps the larger value. Returns (units, part)
    for each part proved to optimality. ``solutions`` receives each part's incumbent (the link
    probes hint it: :func:`_probe_links`). ``relaxed[k]`` (when given) receives each solution
    found as (its makespan, the devices of each op's slot)."""
    solutions = {} if solutions is None else solutions
    finished = []
    for n, k in enumerate(order):
        if budget.left <= 0 or budget.wall_expired():
            break
        # no floor in the model: with the part's value as the makespan's least value CP-SAT
        # took 0.77 units on ResNet-50 operators' parts where it takes 0.30 without
        restricted = restrict_placements(parts[k])
        built = sequenced_cut_model(restricted, total=total)
        before = budget.used
        values[k], found = budget.proven_bound_and_incumbent(built.model, one, budget.left / (len(order) - n), None,
                                                             values[k])
        if found is not None:
            solutions[k] = found[1]
            if relaxed is not None:
                relaxed.setdefault(k, []).append((found[0], _slot_devices(restricted, total, built, found[1])))
        if budget.last_stop == "finished":
            finished.append((budget.used - before, k))
    return finished


def _probe_links(parts: list[SchedulingProblem], values: list[int], one: SolveOptions, budget: Budget, total: int,
                 order: list[int], solutions: dict[int, list[int]], relaxed: dict[int, list] | None) -> list[int]:
    """Raise ``values`` by probes on the sequenced relaxation with link terms
    (:mod:`solvers.scheduling.slot_sequencing`, Links) of the parts in ``order``, each with what
    is left (:func:`_probe_part`); the parts whose probes closed their range (the link model's
    optimum reached). ``solutions[k]`` (the plain pass's incumbent) is hinted on each probe of
    part k; ``relaxed[k]`` receives each probe's solution as :func:`_sequence_parts` does."""
    closed = []
    for k in order:
        if budget.left <= 0 or budget.wall_expired():
            break
        restricted = restrict_placements(parts[k])
        found = None if relaxed is None else relaxed.setdefault(k, [])
        values[k], done = _probe_part(restricted, values[k], one, budget, total, solutions.get(k), found)
        if done:
            closed.append(k)
    return closed


def _probe_part(restricted: SchedulingProblem, lo: int, one: SolveOptions, budget: Budget, total: int,
                hint: Sequence[int] | None, found: list | None) -> tuple[int, bool]:
    """Probes "makespan <= B" on the link model of one part from its proven value ``lo``, each
    with ``1 / LINK_PROBE_SHARE`` of what is left, at most ``LINK_PROBES``: (the proven value,
    whether the range closed). A refuted probe proves ``B + 1``; a solution's latest op end
    becomes the range's top. While a top is known the next probe asks for one cycle less than
    it (one refutation then proves the top, the link model's optimum), unless the last
    solution's latest end sat at its probe's B (its ends need not be tight then) or a probe
    answered nothing (the top is lowered to its B; no solution reaches it): then the next probe
    asks for the least of
    ``lo`` plus a step (``lo / 32``, doubled at each refutation) and the middle of the range.
    Only refutations raise the value, so it is sound whatever the probes find (module Notes,
    Link probes)."""
    top, reached, step, descend = None, None, max(1, lo // _FIRST_STEP), False
    for _ in range(LINK_PROBES):
        if (top is not None and lo >= top) or budget.left <= 0 or budget.wall_expired():
            break
        target = top - 1 if descend else lo + step if top is None else min(lo + step, lo + (top - lo) // 2)
        built = sequenced_cut_model(restricted, total=total, links=True, hint=hint, cap=target)
        status, solver, _ = budget.run_cpsat(built.model, one, budget.left / LINK_PROBE_SHARE, None, interleave=False)
        if status is Status.INFEASIBLE:
            lo, step, descend = target + 1, step * 2, reached is not None and reached == top
        elif status in (Status.OPTIMAL, Status.FEASIBLE):
            latest = max(solver.value(end) for end in built.ends)
            top = reached = max(lo, latest)
            descend = latest < target
            step = max(1, (top - lo) // 4)
            if found is not None:
                found.append((top, _slot_devices(restricted, total, built, list(solver.response_proto.solution))))
        else:
            top, descend, step = target, False, max(1, (target - lo) // 4)
    # closed only against a solution's top: an open probe lowers ``top`` to its B with no solution there
    return lo, reached is not None and lo >= reached


def _slot_devices(restricted: SchedulingProblem, total: int, built, values: list[int]) -> tuple:
    """The devices of the slot each op of ``built`` (a sequenced model of ``restricted``) runs in,
    read from the solution ``values`` in proto order."""
    slots = cut_slots(restricted, total)
    return tuple(next(slots[s].devices for s, x in enumerate(row) if x is not None and values[x.index])
                 for row in built.place)
