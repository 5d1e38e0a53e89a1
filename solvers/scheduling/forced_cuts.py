"""The forced-cut bound (LATENCY with memory limits): a placement that memory forces across
devices pays the transfers of every edge it cuts on the paths where they lie, proved by
CP-SAT on a contention-free relaxation.

Notes
-----
When the weights do not fit one device, every feasible placement cuts the graph somewhere,
and each cut edge ``(u, v)`` delays ``v`` by a transfer. Which edges are cut depends on the
placement, which need not be contiguous in any order, and a transfer off the critical path
costs nothing, so no count of cuts alone is a bound. This module minimises, over *every*
placement memory allows, the longest path in which each edge between two devices pays its
cheapest transfer; that is the latency of the placement with the contention between ops and
between transfers dropped. In symbols, with ``x[i][s]`` the placement of op i on slot s
(below), ``T_i`` its end and ``z_e`` whether edge e joins two slots:

* ``sum_s x[i][s] = 1`` over the slots op i may use; ``D_i = sum_s dur[i][s] x[i][s]``;
* ``T_i >= D_i`` and ``T_v >= T_u + D_v + tc_e z_e`` for every edge e = (u, v), with
  ``tc_e`` the least of its transfer durations over all links, and ``z_e >= x[u][s] -
  x[v][s]`` (both ways) for every slot;
* ``sum_i resident_i x[i][s] <= cap_s`` on every slot with a memory limit;
* ``sum_i dur[i][s] x[i][s] <= streams_s * makespan`` (a device with k streams does at most
  k x makespan of work: the work that cannot overlap);
* colocation groups share a slot; ``makespan >= T_i``; minimise the makespan.

**Soundness.** Every feasible schedule gives a solution of this model with the same
makespan: place each op on its device's slot, take ``T_i = end_i`` and ``z_e = 1`` exactly
for edges between two slots. An edge between two devices has a transfer that starts after
``end_u``, lasts at least ``tc_e`` and ends before ``start_v = end_v - D_v``; weights on a
device stay for the whole run (activation buffers only add memory, dropped here); a device's
ops run on its streams inside ``[0, makespan]``. So the model's optimum, and CP-SAT's proven
bound on it, is ``<=`` the optimum of the problem. Dropped (relaxations): activation
buffers, the link each transfer uses beyond the pairs below, and contention outside the
windows below.

**Contention** (``contention=True``; opt-in for the probes, ``CpSatOptions.forced_cut_contention``:
at the dnn benchmark's budget they refute nothing more, and CP-SAT spends 2-10 times the wall
time per deterministic unit on the larger model, docs/bounds.md). A *window* is a pair (a, d): for
an op a with two or more consumers, d is the first op in topological order that every
consumer precedes or is (their first common descendant); for an op d with two or more
producers, a is the last op that precedes or is every producer. Without such an op the window
opens at 0 or closes at the makespan. In every schedule:

* the ops strictly between a and d (descendants of a, ancestors of d) start after ``end_a``
  and end before ``start_d = T_d - D_d``; those on a device with one stream run one at a
  time, so ``T_d - D_d >= T_a + sum dur[i][s] x[i][s]`` over them, per such slot s (windows
  of more than ``_WINDOW_MAX_OPS`` ops are left out: any subset of the terms is sound);
* a's cut out-edges whose consumers sit on one single-device slot s (a not on s) all leave
  a's one device for s's one device: one link, one transfer at a time. Each starts after
  ``end_a`` and ends before its consumer starts, so before ``start_d``: ``T_d - D_d >= T_a +
  sum tc_e l_e`` with ``l_e >= x[v][s] - x[a][s]``. The same for d's cut in-edges from one
  single-device slot (each starts after its producer ends, so after ``end_a``). Without a
  common op the window is the producers' least head (longest path of least durations to
  their ends) up to the makespan less the consumers' least tail.

Every schedule still maps to a solution (``l_e`` = 1 exactly when the edge uses that link),
so the bound stays sound whatever the topology (one link per pair, a bus, pooled CPUs: only
single-device slots get the link terms, since a pooled slot's ops may sit on different
devices with different links). Interchangeable slots stay interchangeable (the terms are the
same for every slot of a group), so the value precedence below still holds.

**Slots.** A device whose memory cannot hold all the weights is a slot of its own. Devices of
one pool (:class:`~solvers.scheduling.path_bounds.DevicePools`) that hold everything (CPUs,
unlimited memory) form one slot with their streams added: two ops in it may sit on two of its
devices, so charging no transfer between them and letting them share the pooled load only
relaxes. The slots of one pool with equal streams are interchangeable in the model (the
transfers do not depend on the link), so their first uses follow the topological order
(value precedence): any solution relabelled by first use satisfies it, with the same makespan.

A known schedule (a hint) is a solution of the model, so the probes never need to look above
its makespan.

References
----------
.. [1] Tarnawski et al., "Efficient Algorithms for Device Placement of DNN Graph Operators",
   NeurIPS 2020 (the latency inputs this bound was written for).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solvers.budget import Budget
from solvers.core import SolveOptions, Status
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.path_bounds import DevicePools
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.structure import topological_order

__all__ = ["Slot", "memory_forces_cuts", "cut_slots", "forced_cut_model", "forced_cut_bound"]


@dataclass(frozen=True, slots=True)
class Slot:
    """Devices the relaxation treats as one place: their memory limit (0: none), their
    streams added, and the group of interchangeable slots it belongs to."""

    devices: tuple[int, ...]
    capacity: int
    streams: int
    group: int


def memory_forces_cuts(problem: SchedulingProblem) -> bool:
    """Whether some device's memory cannot hold every weight of the problem (then a
    placement on it must leave weights elsewhere: the bound has something to see).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_memory_bytes=(4, 4), op_resident_bytes=(6,))
    >>> memory_forces_cuts(p)
    True
    """
    total = problem.total_resident_floor_bytes()
    return problem.objective is Objective.LATENCY and any(
        0 < problem.memory_bytes(d) < total for d in range(problem.num_devices))


def cut_slots(problem: SchedulingProblem, total: int | None = None) -> list[Slot]:
    """The slots of the module Notes, limited devices one by one, groups numbered in order.
    A pool is limited when its memory holds less than ``total`` bytes (default: every weight of
    ``problem``; a part may pass its whole problem's, so that devices which must share the
    whole problem's weights stay apart).

    Examples
    --------
    Two 4-byte accelerators and two CPUs without a limit:

    >>> p = SchedulingProblem(((1, 1, 9, 9),), (), (1, 1, 1, 1), tuple(tuple(-1 if a == b else 0
    ...     for b in range(4)) for a in range(4)), (), device_memory_bytes=(4, 4, 0, 0),
    ...     op_resident_bytes=(6,))
    >>> [(s.devices, s.capacity, s.streams, s.group) for s in cut_slots(p)]
    [((0,), 4, 1, 0), ((1,), 4, 1, 0), ((2, 3), 0, 2, 1)]
    """
    if total is None:
        total = problem.total_resident_floor_bytes()
    slots: list[Slot] = []
    group = 0
    for pool in DevicePools(problem).pools:
        cap = problem.memory_bytes(pool[0])
        if 0 < cap < total:
            by_streams: dict[int, list[int]] = {}
            for d in pool:
                by_streams.setdefault(problem.device_streams[d], []).append(d)
            for streams, devices in sorted(by_streams.items()):
                slots += [Slot((d,), cap, streams, group) for d in devices]
                group += 1
        else:
            slots.append(Slot(tuple(pool), 0, sum(problem.device_streams[d] for d in pool), group))
            group += 1
    return slots


def _cheapest_transfer(problem: SchedulingProblem, e: int) -> int:
    row = problem.transfer_cycles[e]
    return min(row) if row else 0


_FIRST_STEP = 32  # the first probe asks for 1/32 (3 %) above the floor, then the step doubles
_PROBE_SHARE = 3  # each probe may use a third of what is left


def _horizon(problem: SchedulingProblem) -> int:
    """Every op serially at its slowest allowed duration plus every transfer: no solution of
    the model needs a longer makespan."""
    return (sum(max(row) for row in problem.durations_cycles)
            + sum(_cheapest_transfer(problem, e) for e in range(len(problem.edges))))


@dataclass
class _Model:
    model: cp_model.CpModel
    makespan: cp_model.IntVar
    place: list[list]  # per op, per slot: a Boolean, or None where the op may not go
    horizon: int
    ends: list = field(default_factory=list)  # per op: T_i
    cuts: dict = field(default_factory=dict)  # per edge with a transfer: z_e
    used: list = field(default_factory=list)  # (Boolean, op, slot): slot used by op or an earlier op


def forced_cut_model(problem: SchedulingProblem, floor: int = 0, cap: int | None = None,
                     contention: bool = True, slots: list[Slot] | None = None) -> _Model:
    """The CP-SAT model of the module Notes on ``problem`` (restricted already), with the
    makespan at least ``floor`` (another proven bound); with ``cap``, the makespan at most
    ``cap`` and no objective (a probe); ``contention`` adds the window terms (module Notes,
    Contention); ``slots`` (default :func:`cut_slots`) are any slots of it the Notes allow."""
    slots = cut_slots(problem) if slots is None else slots
    n, ns = problem.num_ops, len(slots)
    m = cp_model.CpModel()
    dur = [[min((row[d] for d in s.devices if row[d] >= 0), default=-1) for s in slots]
           for row in problem.durations_cycles]
    place = [[m.new_bool_var(f"x{i}_{s}") if dur[i][s] >= 0 else None for s in range(ns)] for i in range(n)]
    horizon = max(_horizon(problem), floor)
    makespan = m.new_int_var(floor, horizon, "makespan")
    ends = [m.new_int_var(0, horizon, f"T{i}") for i in range(n)]
    length = []
    cuts: dict = {}
    for i in range(n):
        m.add_exactly_one(v for v in place[i] if v is not None)
        length.append(sum(dur[i][s] * place[i][s] for s in range(ns) if place[i][s] is not None))
        m.add(ends[i] >= length[i])
        m.add(makespan >= ends[i])
    for e, (u, v, _) in enumerate(problem.edges):
        tc = _cheapest_transfer(problem, e)
        if tc == 0:
            m.add(ends[v] >= ends[u] + length[v])
            continue
        cut = m.new_bool_var(f"z{e}")
        cuts[e] = cut
        for s in range(ns):
            a, b = place[u][s], place[v][s]
            if a is not None:
                m.add(a <= cut + (b if b is not None else 0))
            if b is not None:
                m.add(b <= cut + (a if a is not None else 0))
        m.add(ends[v] >= ends[u] + length[v] + tc * cut)
    for group in problem.colocation_groups:
        for a, b in zip(group, group[1:]):
            for s in range(ns):
                xa, xb = place[a][s], place[b][s]
                m.add((xa if xa is not None else 0) == (xb if xb is not None else 0))
    for s, slot in enumerate(slots):
        on = [(i, place[i][s]) for i in range(n) if place[i][s] is not None]
        if slot.capacity:
            m.add(sum(problem.resident_floor_bytes(i) * x for i, x in on) <= slot.capacity)
        m.add(sum(dur[i][s] * x for i, x in on) <= slot.streams * makespan)
    if contention:
        _add_contention(m, problem, slots, dur, place, ends, length, makespan)
    used = _value_precedence(m, problem, slots, place)
    if cap is None:
        m.minimize(makespan)
    else:
        m.add(makespan <= cap)
    return _Model(m, makespan, place, horizon, ends, cuts, used)


_WINDOW_MAX_OPS = 64  # a stream term sums at most this many ops per slot (larger windows are left out)


def _reach(problem: SchedulingProblem, order: list[int]) -> tuple[list[int], list[int]]:
    """Per op, the bitsets of its strict descendants and strict ancestors."""
    n = problem.num_ops
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in problem.edges:
        succ[u].append(v)
        pred[v].append(u)
    desc, anc = [0] * n, [0] * n
    for i in reversed(order):
        for v in succ[i]:
            desc[i] |= desc[v] | (1 << v)
    for i in order:
        for u in pred[i]:
            anc[i] |= anc[u] | (1 << u)
    return desc, anc


def _windows(problem: SchedulingProblem, order: list[int]) -> list[tuple[int, int, tuple[int, ...], str]]:
    """The windows of the Contention terms, as (opening op or -1, closing op or -1, ops strictly
    between, kind): for an op u with two or more consumers, the first op in topological order
    that every consumer precedes or is ("out"); for an op v with two or more producers, the
    last op that precedes or is every producer ("in"). -1: none, the window opens at 0 or
    closes at the makespan."""
    desc, anc = _reach(problem, order)
    succ: dict[int, set[int]] = {}
    pred: dict[int, set[int]] = {}
    for u, v, _ in problem.edges:
        succ.setdefault(u, set()).add(v)
        pred.setdefault(v, set()).add(u)
    everything = (1 << problem.num_ops) - 1
    out = []
    for u in order:
        if len(succ.get(u, ())) >= 2:
            common = everything
            for v in succ[u]:
                common &= desc[v] | (1 << v)
            d = next((i for i in order if common >> i & 1), -1)
            between = desc[u] & (anc[d] if d >= 0 else everything)
            out.append((u, d, _members(between, order), "out"))
        if len(pred.get(u, ())) >= 2:
            common = everything
            for w in pred[u]:
                common &= anc[w] | (1 << w)
            a = next((i for i in reversed(order) if common >> i & 1), -1)
            between = anc[u] & (desc[a] if a >= 0 else everything)
            out.append((a, u, _members(between, order), "in"))
    return out


def _head_tail(problem: SchedulingProblem, order: list[int]) -> tuple[list[int], list[int]]:
    """Per op, the least time to its end (head) and from its start to the end of the run
    (tail): the longest path of least durations, no transfers."""
    n = problem.num_ops
    least = [min(c for c in row if c >= 0) for row in problem.durations_cycles]
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in problem.edges:
        succ[u].append(v)
        pred[v].append(u)
    head, tail = [0] * n, [0] * n
    for i in order:
        head[i] = max((head[u] for u in pred[i]), default=0) + least[i]
    for i in reversed(order):
        tail[i] = max((tail[v] for v in succ[i]), default=0) + least[i]
    return head, tail


def _members(bits: int, order: list[int]) -> tuple[int, ...]:
    return tuple(i for i in order if bits >> i & 1)


def _add_contention(m: cp_model.CpModel, problem: SchedulingProblem, slots: list[Slot], dur: list[list[int]],
                    place: list[list], ends: list, length: list, makespan) -> None:
    """The window terms of the module Notes (Contention): between the end of a window's opening
    op and the start of its closing op, the ops of the window that sit on a one-stream device
    run one after another, and so do the transfers that must share one link (an op's cut
    out-edges into one device, or its cut in-edges from one device)."""
    order = topological_order(problem)
    single = [s for s, slot in enumerate(slots) if len(slot.devices) == 1 and slot.streams == 1]
    linked = [s for s, slot in enumerate(slots) if len(slot.devices) == 1]
    out_edges: dict[int, list[int]] = {}
    in_edges: dict[int, list[int]] = {}
    for e, (u, v, _) in enumerate(problem.edges):
        if _cheapest_transfer(problem, e) > 0:
            out_edges.setdefault(u, []).append(e)
            in_edges.setdefault(v, []).append(e)
    head, tail = _head_tail(problem, order)
    seen: set[tuple[int, int]] = set()
    for a, d, between, kind in _windows(problem, order):
        opened = ends[a] if a >= 0 else 0
        closed = (ends[d] - length[d]) if d >= 0 else makespan
        if (a, d) not in seen and len(between) <= _WINDOW_MAX_OPS:
            seen.add((a, d))
            for s in single:
                work = [(dur[i][s], place[i][s]) for i in between if place[i][s] is not None and dur[i][s] > 0]
                if len(work) >= 2:
                    m.add(closed >= opened + sum(t * x for t, x in work))
        op, edges, far = (a, out_edges.get(a, []), 1) if kind == "out" else (d, in_edges.get(d, []), 0)
        if len(edges) < 2:
            continue
        # the transfers start after their producers' earliest ends and end before their
        # consumers' latest starts (least tails after them), a tighter window without a
        # common ancestor (descendant)
        if a < 0:
            opened = min(head[problem.edges[e][0]] for e in edges)
        if d < 0:
            closed = makespan - min(tail[problem.edges[e][1]] for e in edges)
        for s in linked:
            terms = []
            for e in edges:
                there, here = place[problem.edges[e][far]][s], place[op][s]
                if there is None:
                    continue
                on = m.new_bool_var(f"l{e}_{s}")  # at least 1 when the far end is on s and op is not
                m.add(on >= there - (here if here is not None else 0))
                terms.append(_cheapest_transfer(problem, e) * on)
            if len(terms) >= 2:
                m.add(closed >= opened + sum(terms))


def _value_precedence(m: cp_model.CpModel, problem: SchedulingProblem, slots: list[Slot],
                      place: list[list]) -> list:
    """Interchangeable slots are first used in topological order (module Notes); returns the
    first-use literals as (Boolean, op, slot)."""
    order = topological_order(problem)
    literals = []
    groups: dict[int, list[int]] = {}
    for s, slot in enumerate(slots):
        groups.setdefault(slot.group, []).append(s)
    for members in groups.values():
        if len(members) < 2:
            continue
        used = [0] * len(members)  # per slot: "used by an earlier op" (a Boolean, or 0)
        for i in order:
            if place[i][members[0]] is None:  # interchangeable: allowed on all or on none
                continue
            for k in range(1, len(members)):
                m.add(place[i][members[k]] <= used[k - 1])
            nxt = []
            for k, s in enumerate(members):
                u = m.new_bool_var(f"u{i}_{s}")
                m.add(u >= place[i][s])
                if not isinstance(used[k], int):
                    m.add(u >= used[k])
                m.add(u <= used[k] + place[i][s])
                nxt.append(u)
                literals.append((u, i, s))
            used = nxt
    return literals


def forced_cut_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget, floor: int = 0,
                     hint: SchedulingSolution | None = None, max_probes: int = 12,
                     found: list[tuple[int, ...]] | None = None, contention: bool = False,
                     give_up: bool = False, first_step: int = 0) -> tuple[int, dict]:
    """A proven bound on the relaxation of the module Notes, by probes within ``budget``;
    ``contention`` adds the window terms (module Notes, Contention) to every probe; ``give_up``
    stops at the first probe CP-SAT neither refutes nor answers while none was refuted yet
    (the lower probes that would follow rarely refute either: the caller may spend what is
    left elsewhere). ``first_step``: the first probe asks for ``1 / first_step`` above the
    floor (default :data:`_FIRST_STEP`; a floor that probes raised already is best resumed
    with a smaller step).

    Each probe asks CP-SAT for a placement of makespan at most B (the model with ``makespan
    <= B``, no objective) with a share of what is left: a proof that none exists raises the
    bound to ``B + 1``; a solution lowers the range to its makespan; running out of its share
    lowers the range to B (nothing proved above). The first B is 1/32 above the proven bound
    (at least ``floor``), each refutation doubles the step, and B never passes the middle of the
    range up to the best known makespan (the hint's, else the model's horizon). The share of
    each probe depends only on what the earlier ones charged (deterministic).
    Tight windows propagate far better than an open objective: on the dnn ResNet-50 operator
    graph a probe at 340 ms is refuted in 0.12 deterministic units where the open objective
    proved nothing above the floor in 3.3.

    Returns ``(bound, stats)``: ``(0, {})`` when the bound does not apply (THROUGHPUT, or no
    memory limit that forces a cut), else a bound ``>= floor``. With ``found``, each probe's
    placement (the slot of each op, slots of :func:`cut_slots` of the restricted problem) is
    appended to it: candidates for a start (:mod:`solvers.scheduling.forced_start`).

    Examples
    --------
    Ops a(2) -> b(2) -> c(2) of 5 weight bytes each on two 10-byte devices linked at 7 cycles:
    one edge must cross (13 = 6 + 7), though the critical path is 6.

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((7,), (7,)), device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    >>> forced_cut_bound(p, SolveOptions(num_workers=1), Budget.start(5, SCHEDULING), floor=6)[0]
    13
    """
    if not memory_forces_cuts(problem):
        return 0, {}
    restricted = restrict_placements(problem)
    if hint is not None and any(restricted.durations_cycles[i][d] < 0 for i, d in enumerate(hint.op_device)):
        hint = None  # not a feasible schedule: no cap from it
    lo = floor
    hi = _horizon(restricted) if hint is None else min(hint.makespan_cycles, _horizon(restricted))
    probes, refuted = 0, 0
    step = max(1, lo // (first_step or _FIRST_STEP))
    while lo < hi and probes < max_probes and budget.left > 0 and not budget.wall_expired():
        target = min(lo + step, lo + (hi - lo) // 2) if hi - lo > 1 else lo
        built = forced_cut_model(restricted, lo, cap=target, contention=contention)
        status, solver, _ = budget.run_cpsat(built.model, options, budget.left / _PROBE_SHARE, None)
        probes += 1
        if status is Status.INFEASIBLE:
            lo, refuted = target + 1, refuted + 1
            step *= 2
        elif give_up and not refuted and status not in (Status.OPTIMAL, Status.FEASIBLE):
            break
        else:  # a solution, or nothing proved: look below target
            hi = solver.value(built.makespan) if status in (Status.OPTIMAL, Status.FEASIBLE) else target
            if found is not None and status in (Status.OPTIMAL, Status.FEASIBLE):
                found.append(tuple(next(k for k, x in enumerate(row) if x is not None and solver.value(x))
                                   for row in built.place))
            step = max(1, (hi - lo) // 4)
    budget.note("forced_cut_bound", 0.0, stopped_by="finished" if lo >= hi else "deterministic_budget",
                probes=probes, refuted=refuted)
    return lo, {"forced_cut_bound": lo, "forced_cut_probes": probes, "forced_cut_refuted": refuted,
                "forced_cut_slots": len(cut_slots(restricted))}
