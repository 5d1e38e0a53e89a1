"""Sequenced slots: the forced-cut relaxation with every slot's ops run within its streams, for
the part bound (:mod:`solvers.scheduling.part_bound`).

Notes
-----
The forced-cut relaxation (:mod:`solvers.scheduling.forced_cuts`) charges a device's ops one
after another only inside fan-out/fan-in windows, and from the window's opening op: an op
that waits for a transfer into the window still counts from the opening op's end. On ResNet-50
operators' first stage its optimum (183.55 ms) keeps a residual block's shortcut and the
block's last convolutions on one accelerator at once: the shortcut's three ops need 14.8 ms of
that device after a 12-ms transfer, the convolutions 16.0 ms after another, and the window
holds 37.2 ms from its opening op but 25.2 from the transfers.

This module adds, per slot, an optional interval ``[T_i - dur[i][s], T_i)`` present iff op i
sits on slot s (ops of no duration left out), and a NoOverlap of them on a one-stream
single-device slot, a Cumulative of unit demands with the slot's streams elsewhere.

**Soundness.** Map a feasible schedule to the relaxation as its module Notes do (``T_i`` the
op's end, ``x[i][s]`` its device's slot). On a single-device slot ``dur[i][s]`` is the op's
real duration, so the interval is the op's run on that device, and a device runs at most
``streams`` ops at a time (one stream: none overlap). On a pooled slot ``dur[i][s]`` is the
least duration over the pool, so the interval lies inside the op's real run, which ends at
``T_i``; at any instant the pool's devices run at most the sum of their streams. So every
schedule still gives a solution with its makespan, the relaxation's optimum (and CP-SAT's
proven bound on it) stays at most the optimum, and the slots stay interchangeable within a
group (the intervals depend only on the slot's durations and streams), so the value
precedence among them holds as before.

**Slots.** :func:`~solvers.scheduling.forced_cuts.cut_slots` pools the devices of a part
that could hold all of *the part's* weights, so on a part whose weights fit one accelerator
the accelerators are one slot with nine streams and the sequencing sees nothing. With the
whole problem's weights as the threshold (:func:`sequenced_cut_model`'s ``total``) they stay
apart, while devices with room for everything (CPUs with 1 TB) stay pooled: splitting those
too left a ResNet-50 operators stage unproven (bound 80.2 after 0.5 units, where the pooled
model proves 99.81 in 0.06).

**Links** (``links=True``). Per edge whose transfer costs something, a start ``ts_e`` with
``ts_e >= T_u`` and ``ts_e + tc_e <= T_v - D_v`` when the edge is cut (``z_e``), and per pair
of single-device slots a Boolean ``j >= x[u][a] + x[v][b] - 1`` (either way round) with an
optional interval ``[ts_e, ts_e + tc_e)`` present iff ``j``; the intervals of one link
(``link_of`` of the two devices) never overlap. Sound: in a schedule, a transfer between two
devices starts after its producer ends, lasts at least the least transfer ``tc_e`` and ends
before its consumer starts, on the one link of those devices, which carries one transfer at a
time; set ``ts_e`` to its start and ``j`` true exactly for its pair. The terms depend on which
link joins two slots, so they are added only when every group of interchangeable slots lies
in one class of devices verified interchangeable with their links
(:func:`~solvers.scheduling.cpsat.symmetry.interchangeable_classes`); else the value
precedence among the slots could cut off every relabelling of an optimum.

**Measured** (ResNet-50 operators, the part bound's pruned parts, one worker, 2026-11-29 03:20-
03:55 UTC, load 15-30 on 2 cores; ms, deterministic units): forced-cut relaxation with
contention -> sequenced -> sequenced with links:

======================  ==========  ==================  =======================  ============
part                    relaxation  sequenced (units)   with links (units)       exact [1]_
======================  ==========  ==================  =======================  ============
stage 1 (48 ops)        183.55      **187.87** (0.08)   **190.91** (1.04)        190.91
stage 2 (56)            99.81       99.81 (0.07)        **101.27** (0.20-0.25;   101.27
                                                        seed 0: none in 0.6)
stage 3 (82)            67.26       **71.20** (0.12)    71.20 (0.19)             71.20
stage 4 (43, unforced)  22.06 [2]_  **24.45** (0.03)    24.45 (0.06)             24.88
======================  ==========  ==================  =======================  ============

.. [1] ``CpSatScheduler`` on the part, 24-300 s (docs/bounds.md, Parts).
.. [2] The segment proofs; the part fits one device, so it had no relaxation.

**Hints** (session 16). A hint changes only where CP-SAT's search starts, never what it proves,
so a bound proved with one is as sound as without. The link model of a part is the plain
sequenced model plus variables added after it, so the plain model's solution (which the part
bound has already found) is a partial hint of the link model: its placement, ends and cuts.
Without it CP-SAT with seed 0 proved nothing above 99.81 on stage 2 in 0.6 units (its
incumbent stayed at 111.75); with it 101.27 in 0.27 (one worker, offline), and inside the part
bound at the benchmark's 0.678 units in 0.14 (seed 0; with seed 1 the hinted proof did not finish in
0.6 where the unhinted one took 0.20: how soon a proof finishes still depends on the seed).

With links the parts' relaxations reach the parts' exact optima but for stage 4 (190.91 +
101.27 + 71.20 + 24.45 + 0.43 for the two 3-op parts = 388.25 ms); how soon CP-SAT proves the
link model depends on its seed.
"""

from __future__ import annotations

from typing import Sequence

from solvers.scheduling.cpsat.symmetry import interchangeable_classes
from solvers.scheduling.forced_cuts import Slot, cut_slots, forced_cut_model
from solvers.scheduling.problem import SchedulingProblem

__all__ = ["sequenced_cut_model"]


def _add_slot_sequencing(built, problem: SchedulingProblem, slots: list[Slot]) -> None:
    """The intervals of the module Notes on ``built`` (a forced-cut model over ``slots``)."""
    m = built.model
    for s, slot in enumerate(slots):
        intervals = []
        for i in range(problem.num_ops):
            x = built.place[i][s]
            if x is None:
                continue
            dur = _slot_duration(problem, i, slot)
            if dur <= 0:
                continue
            start = m.new_int_var(0, built.horizon, f"S{i}_{s}")
            m.add(start == built.ends[i] - dur).only_enforce_if(x)
            intervals.append(m.new_optional_fixed_size_interval_var(start, dur, x, f"run{i}_{s}"))
        if len(intervals) < 2:
            continue
        if len(slot.devices) == 1 and slot.streams == 1:
            m.add_no_overlap(intervals)
        else:
            m.add_cumulative(intervals, [1] * len(intervals), slot.streams)


def _slot_duration(problem: SchedulingProblem, op: int, slot: Slot) -> int:
    return min(problem.durations_cycles[op][d] for d in slot.devices if problem.durations_cycles[op][d] >= 0)


def _links_symmetric(problem: SchedulingProblem, slots: list[Slot]) -> bool:
    """Whether every group of two or more single-device slots lies in one class of verified
    interchangeable devices (links included), so that the link terms keep the value
    precedence among them sound."""
    classes = [set(c) for c in interchangeable_classes(problem)]
    groups: dict[int, set[int]] = {}
    for slot in slots:
        if len(slot.devices) == 1:
            groups.setdefault(slot.group, set()).add(slot.devices[0])
    return all(len(g) < 2 or any(g <= c for c in classes) for g in groups.values())


def _add_link_sequencing(built, problem: SchedulingProblem, slots: list[Slot]) -> None:
    """The link terms of the module Notes on ``built``: per cut edge a transfer start after its
    producer's end, ending by its consumer's start, and per pair of single-device slots an
    interval present when the edge joins them, the intervals of one link never overlapping."""
    m = built.model
    single = [s for s, slot in enumerate(slots) if len(slot.devices) == 1]
    length = [sum(_slot_duration(problem, i, slots[s]) * x for s, x in enumerate(built.place[i]) if x is not None)
              for i in range(problem.num_ops)]
    per_link: dict[int, list] = {}
    for e, cut in sorted(built.cuts.items()):
        u, v, _ = problem.edges[e]
        least = min(problem.transfer_cycles[e])
        start = m.new_int_var(0, built.horizon, f"ts{e}")
        m.add(start >= built.ends[u]).only_enforce_if(cut)
        m.add(start + least <= built.ends[v] - length[v]).only_enforce_if(cut)
        for k, a in enumerate(single):
            for b in single[k + 1:]:
                link = problem.link_of[slots[a].devices[0]][slots[b].devices[0]]
                ways = [(built.place[u][p], built.place[v][q]) for p, q in ((a, b), (b, a))]
                ways = [(xu, xv) for xu, xv in ways if xu is not None and xv is not None]
                if link < 0 or not ways:
                    continue
                joined = m.new_bool_var(f"j{e}_{a}_{b}")
                for xu, xv in ways:
                    m.add(joined >= xu + xv - 1)
                per_link.setdefault(link, []).append(
                    m.new_optional_fixed_size_interval_var(start, least, joined, f"tr{e}_{a}_{b}"))
    for intervals in per_link.values():
        if len(intervals) >= 2:
            m.add_no_overlap(intervals)


def sequenced_cut_model(problem: SchedulingProblem, floor: int = 0, total: int | None = None,
                        links: bool = False, hint: Sequence[int] | None = None, cap: int | None = None):
    """The forced-cut model with contention of ``problem`` (restricted already; makespan at
    least ``floor``) with its slots sequenced (module Notes); ``total``: the weights a pool must
    hold to be one slot (default: ``problem``'s); ``links``: the transfers over each link too,
    where the slots' groups are verified interchangeable with their links (module Notes,
    Links); ``cap``: a probe, the makespan at most ``cap`` and no objective (the variables are
    the same, so a hint applies alike). Returns the built model (``.model``, ``.makespan``,
    minimised unless ``cap``).

    Examples
    --------
    a (0 cycles) feeds s and b (4 cycles each), b feeds c (3; the edge is free), s and c feed
    d (4); every other transfer costs 3, and s and c weigh 6 each on two 10-byte devices, so
    they sit apart. The optimum is 14 (a, b, c on one device, s on the other: s ends at 3 + 4,
    its tensor arrives at 10, d ends at 14). The relaxation without the intervals runs s and b
    on one device at once (the window from a to d holds their 8 cycles), c and d on the other:
    12.

    >>> from ortools.sat.python import cp_model
    >>> from solvers.scheduling.forced_cuts import forced_cut_model
    >>> p = SchedulingProblem(((0, 0), (4, 4), (4, 4), (3, 3), (4, 4)),
    ...                       ((0, 1, 0), (0, 2, 0), (2, 3, 0), (1, 4, 0), (3, 4, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((3,), (3,), (0,), (3,), (3,)),
    ...                       device_memory_bytes=(10, 10), op_resident_bytes=(0, 6, 0, 6, 0))
    >>> def optimum(built):
    ...     solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    ...     solver.solve(built.model); return int(solver.objective_value)
    >>> optimum(forced_cut_model(p)), optimum(sequenced_cut_model(p))
    (12, 14)
    """
    slots = cut_slots(problem, total)
    built = forced_cut_model(problem, floor, cap=cap, contention=True, slots=slots)
    _add_slot_sequencing(built, problem, slots)
    if links and _links_symmetric(problem, slots):
        _add_link_sequencing(built, problem, slots)
    if hint is not None:
        _add_hint(built.model, hint)
    return built


def _add_hint(model, values: Sequence[int]) -> None:
    """Hint ``values`` on ``model``'s first ``len(values)`` variables (in proto order)."""
    for index, value in enumerate(values):
        model.add_hint(model.get_int_var_from_proto_index(index), value)
