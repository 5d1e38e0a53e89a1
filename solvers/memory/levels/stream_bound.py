"""A plan bound for devices with several compute streams: sound over every order and level assignment.

The two-level problem's own bound (:func:`~solvers.memory.levels.validate.makespan_lower_bound`)
holds for its fixed merged order and per-stream op lists only. This module bounds every plan
of the same ops on a device with ``num_streams`` compute streams and one DMA engine: any
assignment of ops to streams, any order that respects the data dependencies, any level
assignment, prefetch and eviction schedule. With ``splittable_ops``/``splittable_tensors`` (the
ops a plan may run in portions and the tensors it may cut; a problem's own split groups always
count) it bounds every split of them too ("Splits" below).

Notes
-----
A relaxation, solved by CP-SAT; its proven bound (``best_objective_bound``) is a bound of
every plan, whether or not the search finishes. Never below :func:`stream_plan_floor`, whose
engine part (:mod:`~solvers.memory.levels.prefetch_floor`: a certified LP over fractional
prefetch choices) holds where the search stops on its budget.

Sets: ops ``i``; their accesses ``(i, t)`` of tensors with bytes; *slow-born* tensors ``S``
(no producer: weights, graph inputs, received copies); *live-out* produced tensors ``L``.

Variables: ``fast[i,t]`` (the access is fast; 1 on a fast-only op); ``dma[t]`` for ``t`` in
``S`` (prefetched at least once) and in ``L`` (evicted); op durations ``dur[i]`` (the exact
roofline, as in :func:`~solvers.memory.levels.cpsat.add_durations`); starts ``start[i]``,
ends ``end[i] >= start[i] + dur[i]``; ``makespan >= end[i]``.

Constraints, each true of any plan (with ``fast``/``dma`` read off the plan):

* per op, its fast accesses fit the fast level (they are all live during the op);
* ``fast[i,t] => dma[t]`` for ``t`` in ``S`` (a slow-born tensor is fast only after a
  prefetch), ``fast[producer,t] => dma[t]`` for ``t`` in ``L`` (it must end slow);
* ``start[i] >= end[producer]`` for every tensor op i reads (data dependencies);
  ``start[i] >= dma_cycles(t)`` when op i reads ``t`` in ``S`` fast (its prefetch ends before
  op i starts, and starts at 0 at the earliest); ``makespan >= end[i] + dma_cycles(t)`` when
  op i writes ``t`` in ``L`` fast (its eviction starts after op i);
* ``num_streams * makespan >= sum(dur)`` (each stream runs one op at a time);
* one DMA engine: an optional interval per ``dma[t]`` (``NoOverlap``): the *first* prefetch
  of ``t`` in ``S`` (every fast read of ``t`` starts after it ends) and the eviction of ``t``
  in ``L`` (it starts after its producer ends and ends by the makespan); the DMAs a plan may
  add (a second prefetch, a spill) only take more of the engine;
* redundant, for the linear relaxation: the engine's load ``D = sum(dma[t] *
  dma_cycles(t))`` and ``makespan >= D + tail`` where the tail is, by the case of the plan:
  a DMA the relaxation does not count (its duration, at least ``min dma_cycles``); else the
  last DMA is an eviction (0; some ``dma[t]`` of ``L``), or the prefetch of a ``t`` in ``S``
  released by an op ``r`` reading it fast (``dur[r]``), or there is none (``D = 0``).

Objective: minimize ``makespan``. The memory order and the per-stream order are dropped, and
capacity over time is kept only as "Capacity over time" below says, so the bound holds
whatever they are.

Shared bandwidth (:mod:`~solvers.memory.levels.bandwidth`): contention only delays, so every
constraint above stays true; and each level gives ``SHARE_UNITS`` shares a cycle, so
``SHARE_UNITS * makespan >= SHARE_UNITS * sum(c_l[i]) + sum(dma[t] * share_l * dma_cycles(t))``
per level ``l`` (an op holds ``ceil(SHARE_UNITS * c_l / D)`` for its ``D`` cycles, at least
``SHARE_UNITS * c_l`` share-cycles; a DMA its shares for its cycles), with ``cf``/``cs`` as
``c_l``, the cut tensors' pieces counted at their least cycles.

Splits. A split op runs as portions on its own stream, one after another (portion ``p`` reads
portion ``p`` of every cut tensor and the whole of every other one; an op outside the group
touches every portion), so ``start[i]`` stands for its first portion's start and ``dur[i]`` for
its portions' summed durations: they run in turn, so the last ends at least ``dur[i]`` after
the first starts. A split group is a run of ops on one stream, in portions one after another.
``end[i]`` is then the largest ``start[h] + dur`` summed along a chain of pipelined ops from
``h`` to ``i`` (below), at most op i's last end. Each true of every split plan:

* a *cut* tensor (one a split may cut, or one a split op writes) may be fast in part: an
  access of it has integer fast bytes ``fb`` in ``0..b`` (its portions, each fast or slow, add
  up to at least ``b``); ``fast[i,t]`` is then "some of it is fast";
* a split op may still run whole (factor 1: ``whole[i]``); then its accesses fit the fast level
  together, and it passes its tensors whole (no pipelining with it);
* each portion of a split op reads an uncut tensor whole, fast or slow: ``fast[i,t]`` is "some
  portion reads it fast" (which needs its prefetch); its fast bytes are ``b`` when every
  portion does (else 0), its slow bytes at least ``b`` when some portion reads it slow, and at
  least ``2 b`` when none reads it fast and the op runs in two portions or more;
* a split op's accesses need not fit the fast level together (its portions may); it takes at
  least its compute (the ISA fills and drains per portion, so portions never take less; a
  problem's split group's own ``portion_compute`` times its factor, when smaller) and all its
  bytes at the faster level;
* a reader and producer both split, joined by a cut tensor, may pipeline portion by portion
  (same group): ``start[reader] >= start[producer]`` (its first portion reads what the
  producer's first wrote), and ``end[reader] >= end[producer] + dur[reader]``: along a chain
  of such ops in one group, every portion lies between the head's first start and the
  reader's last end (the reader's last portion reads the producer's last), on one stream, in
  turn; across groups the dependency is whole, which implies it. An op outside the group
  waits for every portion: ``start[i] >= end[producer]``;
* a cut tensor's DMAs are pieces: no interval on the engine and nothing in the tail cases'
  load; a piece takes at least ``dma_latency_cycles + 1`` (the "uncounted DMA" tail case).
  But its fast bytes in any access (slow-born) or in its write (live-out) were moved, so the
  engine's whole load, with ``pieces[t] >= fb / dma_rate``, is at most the makespan;
* a split op reading an uncut slow-born tensor fast needs its prefetch, but the portion that
  reads it may start after the op's first: no start constraint, and its tail case is
  ``makespan >= load``.

Capacity over time. Two ops that each run whole (an unsplit op, or a split op with
``whole[i]``) hold every fast copy they touch for their whole run; if they run at the same
time, those copies are in the fast level together. So for two such ops ``i``, ``j`` neither of
which depends on the other: ``end[i] <= start[j]``, or ``end[j] <= start[i]``, or their fast
bytes fit together (a tensor both touch counted once, at the larger of the two). Only pairs
whose bytes together exceed the fast level get the rule (else it is void), at most
:data:`MAX_CAPACITY_PAIRS` (a subset is as sound). Portions are left out: a split op's copies
need only be live during its portions, which other ops may separate.

Piece timing (a model of its own, ``piece_timing``; only where something may be split). A
tensor with no producer is fast only after the one DMA engine, starting at cycle 0 at the
earliest, moved it (whole, or a cut tensor's fast bytes in pieces, each piece at the DMA rate
and at least one latency). So, per op ``i``, with ``E_i`` the engine cycles of what it reads
fast of such tensors (``dma_cycles(t) * fast[i,t]`` for an uncut one, ``fb / dma_rate +
latency * fast[i,t]`` for a cut one):

* an op that runs whole (unsplit, or a split op with ``whole[i]``) starts after ``E_i``: every
  fast copy it reads is in place when it starts (the summed form of the engine's intervals,
  which also counts the cut tensors' pieces);
* a split op's portions each start after what they read fast arrived, so its last portion
  ends after ``E_i``: a variable ``last[i] >= end[i]`` (``end[i]`` may be less than the last
  portion's end, see "Splits"), at most the makespan, after each pipelined producer's last end
  (the reader's last portion reads what the producer's last wrote); a reader that is not
  pipelined with it starts after ``last[i]``; and when every portion reads an uncut tensor fast,
  the op starts after the sum of those tensors' prefetches;
* a split op's last portion ends after the first prefetch of an uncut tensor some portion
  reads fast, and it starts after it when every portion does (with that prefetch's interval);
* residency: the first prefetch of an uncut slow-born tensor ``w`` ends before a fast reader
  ``j`` reads it, and between the two ``w`` sits in the fast level unless the plan fetches it
  again. So for two independent ops ``i, k`` (a pair of :func:`capacity_pairs`) that run whole
  and do not touch ``w``: one of them ends by the prefetch's end or starts after ``j`` starts,
  or they do not overlap, or their fast bytes and ``w`` fit together, or ``w`` is fetched a
  second time (its cycles more on the engine's load). (Three intervals that meet pairwise share
  an instant, when all of it is in the level.) The same rule for a single op was true too, but
  it made the proof 35 times slower on memory-streams-split for nothing more.

The same fact for evictions (a live-out cut tensor's fast bytes leave after its producer
starts) is true too, but it made CP-SAT's proof 60 times slower on memory-streams-split for 0.5%
more, so it is left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions
from solvers.memory.levels.bandwidth import SHARE_UNITS, dma_shares
from solvers.memory.levels.prefetch_floor import prefetch_or_slow_floor
from solvers.memory.levels.problem import LevelProblem, cycles_for_bytes
from solvers.memory.levels.validate import op_duration_lower_bounds

__all__ = ["SplitView", "split_view", "stream_plan_floor", "all_slow_floor", "build_stream_bound_model",
           "capacity_pairs", "stream_plan_lower_bound"]


@dataclass(frozen=True, slots=True)
class SplitView:
    """What a plan may split (module Notes, "Splits"): the ops that may run in portions, the
    tensors that may be cut, and per op the least compute its portions take together.

    Examples
    --------
    >>> SplitView(frozenset({1}), frozenset({2}), (4, 6)).ops
    frozenset({1})
    """

    ops: frozenset
    cut: frozenset
    compute_cycles: tuple[int, ...]

    def pipelined(self, producer: int, reader: int, t: int) -> bool:
        """Whether ``reader`` may start its portions before ``producer`` has written all of ``t``."""
        return producer in self.ops and reader in self.ops and t in self.cut


def split_view(problem: LevelProblem, splittable_ops: frozenset = frozenset(),
               splittable_tensors: frozenset = frozenset()) -> SplitView:
    """The :class:`SplitView` of ``problem`` with these ops and tensors splittable, its own split
    groups' ops and tensors, and every tensor a splittable op writes (a group cuts what it
    writes).

    Examples
    --------
    A group may run op 1 in halves at 7 cycles each (fill and drain): 14 is below its 16.

    >>> from solvers.memory.levels.problem import SplitGroup
    >>> p = LevelProblem((4, 16), ((), (0,)), ((0,), (1,)), (8, 8), (16, 99), (4, 1),
    ...                  splits=(SplitGroup(1, 1, (0, 1), (1, 2), portion_compute=((16,), (7,))),))
    >>> v = split_view(p)
    >>> sorted(v.ops), sorted(v.cut), v.compute_cycles
    ([1], [0, 1], (4, 14))
    """
    ops = set(splittable_ops) | {i for g in problem.splits for i in g.ops}
    cut = set(splittable_tensors) | {t for g in problem.splits for t in g.tensors}
    cut |= {t for i in ops for t in problem.writes[i]}
    compute = list(problem.compute_cycles)
    for g in problem.splits:
        for k in g.factors:
            table = g.compute_for(k)
            if table is None:  # ceil(compute / k) per portion: never below compute in all
                continue
            for op, c in zip(g.ops, table):
                compute[op] = min(compute[op], k * c)
    return SplitView(frozenset(ops), frozenset(cut), tuple(compute))


def _unsplit(problem: LevelProblem, view: SplitView) -> LevelProblem:
    """The problem without split groups, each op at the least compute of its portions."""
    if not problem.splits and view.compute_cycles == problem.compute_cycles:
        return problem
    return replace(problem, splits=(), compute_cycles=view.compute_cycles)


def _shortest(problem: LevelProblem, view: SplitView) -> tuple[int, ...]:
    """Per op, a lower bound on its duration (a split op's: on its portions' together): the exact
    :func:`~solvers.memory.levels.validate.op_duration_lower_bounds` for an op that touches no
    cut tensor; a split op's bytes all at the faster level; else fast bytes anywhere in
    ``0..min(capacity, total)`` (a cut tensor may be fast in part)."""
    exact = op_duration_lower_bounds(problem)
    if not view.ops and not view.cut:
        return exact
    bf, bs = problem.bandwidth_bytes_per_cycle
    cap = problem.capacity_bytes[0]
    fast_only = set(problem.fast_only_ops)
    out = []
    for i, row in enumerate(problem.op_accesses()):
        total = sum(problem.tensor_bytes[t] for t, _ in row)
        c = problem.compute_cycles[i]
        if i in view.ops:
            out.append(max(c, cycles_for_bytes(total, bf if i in fast_only or bf >= bs else bs)))
        elif any(t in view.cut for t, _ in row):
            fb = total if i in fast_only else (min(cap, total) if bf >= bs else 0)
            out.append(max(c, math.ceil(fb / bf + (total - fb) / bs)))
        else:
            out.append(exact[i])
    return tuple(out)


def stream_plan_floor(problem: LevelProblem, num_streams: int, splittable_ops: frozenset = frozenset(),
                      splittable_tensors: frozenset = frozenset()) -> int:
    """The closed-form part of the bound: the per-op duration bounds
    (:func:`~solvers.memory.levels.validate.op_duration_lower_bounds`; with splits, module
    Notes) shared over ``num_streams`` streams, along the longest data-dependency path
    (a pipelined pair of split ops only in start order), and each slow-born tensor prefetched
    on the one DMA engine or read slow, each live-out one evicted or written slow
    (:func:`~solvers.memory.levels.prefetch_floor.prefetch_or_slow_floor`: what the CP-SAT
    relaxation may not prove within its budget on large problems).

    Examples
    --------
    Two independent 8-cycle ops and a third that reads both: 8 + 8 on two streams.

    >>> p = LevelProblem((8, 8, 8), ((), (), (0, 1)), ((0,), (1,), ()), (0, 0), (8, 99), (4, 1))
    >>> stream_plan_floor(p, 2), stream_plan_floor(p, 1)
    (16, 24)

    If every op may run in portions, op 2's first portion may start right after op 0's first,
    but a group's portions run in turn on one stream: still 8 + 8 along the path.

    >>> stream_plan_floor(p, 4, frozenset({0, 1, 2}))
    16

    Two ops each read their own 16-byte weight (compute 2; fast 4 B/cycle, slow 1 B/cycle):
    4 cycles after a 16-cycle prefetch on the one engine, or 16 slow. On one stream, not 4 +
    4 but 19 (the fractional choice of :func:`~solvers.memory.levels.prefetch_floor.prefetch_or_slow_floor`;
    the best plan: 20):

    >>> stream_plan_floor(LevelProblem((2, 2), ((0,), (1,)), ((), ()), (16, 16), (64, 99), (4, 1)), 1)
    19
    """
    view = split_view(problem, splittable_ops, splittable_tensors)
    problem = _unsplit(problem, view)
    shortest = _shortest(problem, view)
    first, last = [0] * problem.num_ops, [0] * problem.num_ops
    for i in range(problem.num_ops):
        chained = []
        for t in problem.reads[i]:
            a = problem.accesses(t)[0]
            if not problem.is_real(a):
                continue
            if view.pipelined(a, i, t):
                first[i] = max(first[i], first[a])
                chained.append(last[a])
            else:
                first[i] = max(first[i], last[a])
        last[i] = max([first[i], *chained]) + shortest[i]
    load = -(-sum(shortest) // max(1, num_streams))
    engine = prefetch_or_slow_floor(problem, num_streams, shortest, view.ops, view.cut)
    return max([load, engine, *last], default=0)


def all_slow_floor(problem: LevelProblem, num_streams: int, durations: tuple[int, ...] | None = None,
                   share_cycles: tuple[int, ...] | None = None) -> int:
    """A lower bound on every plan that keeps every tensor in the slow level, on
    ``num_streams`` streams in any order: each op's duration shared over the streams, and
    along the longest data-dependency path. The durations are ``durations`` (the
    everything-in-main-memory schedule's own, e.g. a view op's 0) or, None, each op's all-slow
    roofline (fast-only ops fast). (The planner's everything-in-main-memory baseline is timed
    by the ISA; this bounds it where the level relaxations do not.) Under shared bandwidth,
    ``share_cycles`` are what each op holds of the slow level (its shares times its duration):
    the level's :data:`~solvers.memory.levels.bandwidth.SHARE_UNITS` over the makespan carry
    them all.

    Examples
    --------
    Two ops each read 8 slow bytes at 1 B/cycle: 8 on two streams, 16 on one; with the
    baseline's own durations (the second a free view): 8 either way.

    >>> p = LevelProblem((0, 0), ((0,), (1,)), ((), ()), (8, 8), (4, 99), (4, 1))
    >>> all_slow_floor(p, 2), all_slow_floor(p, 1), all_slow_floor(p, 1, (8, 0))
    (8, 16, 8)

    Under sharing, both memory-bound (all of the slow level's shares for 8 cycles each): in
    series whatever the streams.

    >>> all_slow_floor(p, 2, share_cycles=(8000, 8000))
    16
    """
    fast_only = set(problem.fast_only_ops)
    if durations is None:
        durations = []
        for i, row in enumerate(problem.op_accesses()):
            total = sum(problem.tensor_bytes[t] for t, _ in row)
            durations.append(problem.op_cycles(i, total, 0) if i in fast_only else problem.op_cycles(i, 0, total))
    finish = [0] * problem.num_ops
    for i in range(problem.num_ops):
        ready = max((finish[a] for t in problem.reads[i] if problem.is_real(a := problem.accesses(t)[0])), default=0)
        finish[i] = ready + durations[i]
    shared = -(-sum(share_cycles) // SHARE_UNITS) if share_cycles else 0
    return max([-(-sum(durations) // max(1, num_streams)), shared, *finish], default=0)


def _horizon(problem: LevelProblem) -> int:
    """Larger than the relaxation's value at any of its solutions with every op at its longest."""
    return problem.roofline_horizon() + 3 * sum(problem.dma_cycles(t) for t in range(problem.num_tensors)) + 1


def build_stream_bound_model(problem: LevelProblem, num_streams: int, splittable_ops: frozenset = frozenset(),
                             splittable_tensors: frozenset = frozenset(), capacity: bool = True,
                             piece_timing: bool = False) -> tuple[cp_model.CpModel, cp_model.IntVar]:
    """The relaxation of the module Notes (the pairwise capacity rule if ``capacity``, "Piece
    timing" if ``piece_timing``); returns the model and its makespan variable.

    Examples
    --------
    A 16-byte weight read by a 2-cycle op: slow at 1 B/cycle takes 16 cycles; fast takes 4
    after a 16-cycle prefetch, so 16 either way:

    >>> p = LevelProblem((2,), ((0,),), ((),), (16,), (64, 99), (4, 1))
    >>> model, makespan = build_stream_bound_model(p, 2)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model); solver.value(makespan)
    16

    Cut in portions, some pieces may be prefetched while the others are read slow: ``f`` bytes
    fetched take ``f`` engine cycles, the op ``f/4 + (16 - f)`` cycles; both are at most the
    makespan, so at least 64/7, 10 cycles (e.g. 8 bytes fetched while 8 are read slow, then
    the fetched half read fast: 8 + 2):

    >>> model, makespan = build_stream_bound_model(p, 2, frozenset({0}), frozenset({0}))
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(makespan)
    10
    """
    view = split_view(problem, splittable_ops, splittable_tensors)
    problem = _unsplit(problem, view)
    h = _horizon(problem)
    model = cp_model.CpModel()
    (pf, qf), (ps, qs) = ((r.numerator, r.denominator) for r in problem.bandwidth_bytes_per_cycle)
    cap = problem.capacity_bytes[0]
    shortest = _shortest(problem, view)
    rows = problem.op_accesses()
    fast: dict[tuple[int, int], object] = {}
    fast_bytes: dict[tuple[int, int], object] = {}
    every: dict[tuple[int, int], object] = {}  # a split op's uncut read: every portion reads it fast
    start, dur, end, level_cycles = [], [], [], ([], [])
    makespan = model.new_int_var(0, h, "makespan")
    whole = {i: model.new_bool_var(f"whole_{i}") for i in sorted(view.ops)}  # runs as one portion
    for i, row in enumerate(rows):
        sized = [t for t, _ in row if problem.tensor_bytes[t]]
        slow_bytes = _add_accesses(model, problem, view, (fast, fast_bytes, every), i, sized, whole.get(i))
        fb = sum(fast_bytes[i, t] for t in sized)
        total = sum(problem.tensor_bytes[t] for t in sized)
        fits = model.add(fb <= cap)
        if i in view.ops:  # a split op's portions may each fit where the whole op does not
            fits.only_enforce_if(whole[i])
        cf = model.new_int_var(0, cycles_for_bytes(total, problem.bandwidth_bytes_per_cycle[0]), f"cf_{i}")
        cs = model.new_int_var(0, cycles_for_bytes(2 * total, problem.bandwidth_bytes_per_cycle[1]), f"cs_{i}")
        level_cycles[0].append(cf)
        level_cycles[1].append(cs)
        model.add(pf * cf >= qf * fb)
        model.add(ps * cs >= qs * sum(slow_bytes))
        d = model.new_int_var(shortest[i], max(h, shortest[i]), f"dur_{i}")
        model.add(d >= problem.compute_cycles[i])
        model.add(d >= cf + cs)
        dur.append(d)
        start.append(model.new_int_var(0, h, f"start_{i}"))
        end.append(model.new_int_var(0, h, f"end_{i}"))
        model.add(end[i] >= start[i] + d)
        model.add(makespan >= end[i])
    _add_dependencies(model, problem, view, whole, (start, dur, end))
    model.add(max(1, num_streams) * makespan >= sum(dur))
    if capacity:
        _add_pairwise_capacity(model, problem, view, fast_bytes, whole, (start, end))
    pieces = _add_piece_loads(model, problem, view, fast_bytes)
    if piece_timing:
        last = _add_last_ends(model, problem, view, (start, end), makespan)
        _add_engine_windows(model, problem, view, (fast, fast_bytes, every), whole, (start, last))
    begins: dict = {}
    dma = _add_dma_engine(model, problem, view, fast, (start, dur, end), makespan, pieces, begins)
    if piece_timing:
        _add_portion_prefetches(model, problem, view, (fast, every), begins, (start, last))
        _add_prefetch_residency(model, problem, view, (fast, fast_bytes), whole, (start, end), (dma, begins, pieces),
                                makespan)
    if problem.shared_bandwidth:
        _add_shared_levels(model, problem, level_cycles, dma, pieces, makespan)
    model.minimize(makespan)
    return model, makespan


def _add_dependencies(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, whole: dict,
                      times: tuple) -> None:
    """Each reader starts after its producer ends, or, both split and pipelined (module Notes,
    "Splits"), starts after it starts and ends a whole duration after it ends."""
    start, dur, end = times
    for i in range(problem.num_ops):
        for t in problem.reads[i]:
            a = problem.accesses(t)[0]
            if not problem.is_real(a):
                continue
            if view.pipelined(a, i, t):
                model.add(start[i] >= start[a])
                model.add(end[i] >= end[a] + dur[i])
                for op in (a, i):  # a group run whole (factor 1) passes its tensors whole
                    model.add(start[i] >= end[a]).only_enforce_if(whole[op])
            else:
                model.add(start[i] >= end[a])


def _add_last_ends(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, times: tuple,
                   makespan: cp_model.IntVar) -> list:
    """Per op, when its last portion ends (module Notes, "Piece timing"): ``end[i]`` for an op
    that runs whole; for a split op a new variable, at least ``end[i]`` and at most the makespan,
    after its pipelined producers' last ends (its last portion reads what theirs wrote); every
    reader that is not pipelined with it starts after it."""
    start, end = times
    last = list(end)
    for i in sorted(view.ops):
        last[i] = model.new_int_var(0, _horizon(problem), f"last_end_{i}")
        model.add(last[i] >= end[i])
        model.add(makespan >= last[i])
    for i in range(problem.num_ops):
        for t in problem.reads[i]:
            a = problem.accesses(t)[0]
            if not problem.is_real(a) or a not in view.ops:
                continue
            if view.pipelined(a, i, t):
                model.add(last[i] >= last[a])
            else:
                model.add(start[i] >= last[a])
    return last


def _add_engine_windows(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, literals: tuple,
                        whole: dict, times: tuple) -> None:
    """The engine's work before an op (module Notes, "Piece timing"): the fast bytes of the
    slow-born tensors an op reads were prefetched, on the one engine from cycle 0, before it
    starts (a split op: before its last portion ends; an uncut tensor every portion reads
    fast, before it starts)."""
    fast, fast_bytes, every = literals
    start, last = times
    num, den = problem.dma_rate.numerator, problem.dma_rate.denominator
    lat = problem.dma_latency_cycles
    fast_only = set(problem.fast_only_ops)
    for i, row in enumerate(problem.op_accesses()):
        if i in fast_only:  # its reads are constants; the engine intervals already order them
            continue
        before, before_every = [], []  # engine time (in bytes at the DMA rate) its reads need
        for t, _ in row:
            if not problem.tensor_bytes[t] or problem.is_real(problem.accesses(t)[0]):
                continue
            if t in view.cut:
                before.append(den * fast_bytes[i, t] + num * lat * fast[i, t])
            else:
                before.append(num * problem.dma_cycles(t) * fast[i, t])
                if (i, t) in every:
                    before_every.append(num * problem.dma_cycles(t) * every[i, t])
        if not before:
            continue
        if i not in view.ops:
            model.add(num * start[i] >= sum(before))
            continue
        model.add(num * last[i] >= sum(before))
        model.add(num * start[i] >= sum(before)).only_enforce_if(whole[i])
        if before_every:
            model.add(num * start[i] >= sum(before_every))


def _add_portion_prefetches(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, literals: tuple,
                            begins: dict, times: tuple) -> None:
    """A split op's portions after the first prefetch of an uncut tensor they read fast (module
    Notes, "Piece timing"): its last portion ends after it when some portion reads it fast, and
    the op starts after it when every portion does."""
    fast, every = literals
    start, last = times
    for w, begin in sorted(begins.items()):
        ready = begin + problem.dma_cycles(w)
        for a in problem.accesses(w)[1:]:
            if not problem.is_real(a) or a not in view.ops or (a, w) not in every:
                continue
            model.add(last[a] >= ready).only_enforce_if(fast[a, w])
            model.add(start[a] >= ready).only_enforce_if(every[a, w])


def _add_prefetch_residency(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, literals: tuple,
                            whole: dict, times: tuple, engine: tuple, makespan: cp_model.IntVar) -> None:
    """A prefetched weight sits in the fast level from its first prefetch's end until a fast
    reader reads it, unless the plan fetches it again (module Notes, "Piece timing"). For the
    uncut slow-born tensor ``w``, a fast reader ``j`` of it, and one op ``i`` or two independent
    ops ``i, k`` (a pair of :func:`capacity_pairs`) that run whole and do not touch ``w``:
    either an op ends by the prefetch's end or starts after ``j`` does, or the two do not
    overlap, or their fast bytes and ``w`` fit together (a tensor both touch once), or ``w`` is
    prefetched a second time (its cycles more on the engine, whose load is at most the
    makespan). Intervals that meet pairwise share an instant, when all of it is in the level."""
    fast, fast_bytes = literals
    start, end = times
    dma, begins, pieces = engine
    cap = problem.capacity_bytes[0]
    sizes = problem.tensor_bytes
    touched = [{t for t, _ in row if sizes[t]} for row in problem.op_accesses()]
    groups = capacity_pairs(problem)
    refetched = {}
    for w, begin in sorted(begins.items()):
        ready = begin + problem.dma_cycles(w)
        readers = [j for j in problem.accesses(w)[1:] if problem.is_real(j)]
        for group in groups:
            held = set().union(*(touched[x] for x in group))
            if w in held or sum(sizes[t] for t in held) + sizes[w] <= cap:
                continue
            for j in readers:
                if j in group:
                    continue
                refetched.setdefault(w, model.new_bool_var(f"refetched_{w}"))
                options = [refetched[w], _fit_with(model, problem, group, fast_bytes, touched, w)]
                for x in group:
                    before, after = (model.new_bool_var(f"{name}_{w}_{x}_{j}_{len(group)}") for name in ("ends_before", "starts_after"))
                    model.add(end[x] <= ready).only_enforce_if(before)
                    model.add(start[x] >= start[j]).only_enforce_if(after)
                    options += [before, after] + ([whole[x].Not()] if x in whole else [])
                if len(group) == 2:
                    i, k = group
                    apart = [model.new_bool_var(f"apart_{w}_{i}_{k}_{j}_{n}") for n in range(2)]
                    model.add(end[i] <= start[k]).only_enforce_if(apart[0])
                    model.add(end[k] <= start[i]).only_enforce_if(apart[1])
                    options += apart
                if not isinstance(fast[j, w], int):
                    options.append(fast[j, w].Not())
                model.add_bool_or(options)
    if refetched:
        load = sum(problem.dma_cycles(t) * y for t, y in dma.items()) + sum(pieces)
        model.add(makespan >= load + sum(problem.dma_cycles(w) * r for w, r in refetched.items()))


def _fit_with(model: cp_model.CpModel, problem: LevelProblem, group: tuple, fast_bytes: dict, touched: list,
              w: int) -> cp_model.IntVar:
    """A literal: the fast bytes of the ops of ``group`` (a tensor two touch counted once, at
    the larger) and the tensor ``w`` fit the fast level together."""
    fits = model.new_bool_var(f"fit_with_{w}_{'_'.join(map(str, group))}")
    terms = []
    for t in sorted(set().union(*(touched[x] for x in group))):
        users = [x for x in group if t in touched[x]]
        if len(users) == 1:
            terms.append(fast_bytes[users[0], t])
            continue
        both = model.new_int_var(0, problem.tensor_bytes[t], f"fast_bytes_with_{w}_{t}_{'_'.join(map(str, group))}")
        for x in users:
            model.add(both >= fast_bytes[x, t])
        terms.append(both)
    model.add(sum(terms) + problem.tensor_bytes[w] <= problem.capacity_bytes[0]).only_enforce_if(fits)
    return fits


def _add_accesses(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, literals: tuple, i: int,
                  sized: list[int], whole) -> list:
    """Op ``i``'s accesses of the ``sized`` tensors: sets ``fast[i,t]`` and ``fast_bytes[i,t]``
    (``(fast, fast_bytes, every) = literals``) and returns the slow bytes of each (module Notes,
    "Splits": a split op's uncut reads by :func:`_split_uncut_read`, which sets ``every[i,t]``)."""
    fast, fast_bytes, every = literals
    slow_bytes = []
    for t in sized:
        if i in view.ops and t not in view.cut and i not in set(problem.fast_only_ops):
            fast_bytes[i, t], slow, every[i, t] = _split_uncut_read(model, problem, fast, i, t, whole)
        else:
            fast_bytes[i, t] = _fast_bytes(model, problem, view, fast, i, t)
            slow = problem.tensor_bytes[t] - fast_bytes[i, t]
        slow_bytes.append(slow)
    return slow_bytes


def _add_shared_levels(model: cp_model.CpModel, problem: LevelProblem, level_cycles: tuple, dma: dict,
                       pieces: list, makespan: cp_model.IntVar) -> None:
    """Shared bandwidth: each level gives ``SHARE_UNITS`` shares a cycle, so ``SHARE_UNITS *
    makespan`` is at least its ops' ``SHARE_UNITS * c_l`` (an op holds ``ceil(SHARE_UNITS *
    c_l / D)`` for its ``D`` cycles) plus each counted DMA's shares times its cycles and each
    cut tensor's pieces' (module Notes, "Shared bandwidth")."""
    shares = dma_shares(problem)
    for lv in range(2):
        terms = [SHARE_UNITS * c for c in level_cycles[lv]]
        terms += [shares[lv] * problem.dma_cycles(t) * y for t, y in dma.items()]
        terms += [shares[lv] * p for p in pieces]
        model.add(SHARE_UNITS * makespan >= sum(terms))


def _fast_bytes(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, fast: dict, i: int, t: int):
    """Op ``i``'s fast bytes of ``t``, setting ``fast[i,t]`` (1 on a fast-only op; a literal
    "fast", or "some of it fast" where it may be fast in part: ``t`` cut or ``i`` split)."""
    b = problem.tensor_bytes[t]
    if i in set(problem.fast_only_ops):
        fast[i, t] = 1
        return b
    lit = fast[i, t] = model.new_bool_var(f"fast_{i}_{t}")
    if t not in view.cut and i not in view.ops:
        return b * lit
    part = model.new_int_var(0, b, f"fast_bytes_{i}_{t}")
    model.add(part <= b * lit)
    return part


def _split_uncut_read(model: cp_model.CpModel, problem: LevelProblem, fast: dict, i: int, t: int, whole):
    """Split op ``i``'s read of the uncut tensor ``t`` (module Notes, "Splits"): each portion reads
    all of it, fast or slow. Returns its fast bytes (all of it when every portion reads it fast)
    and its slow bytes over the portions: at least ``b`` when some portion reads it slow, at
    least ``2 b`` when none reads it fast and the op runs in two portions or more; sets
    ``fast[i,t]`` to "some portion reads it fast" (which needs the prefetch), and the literal
    "every portion reads it fast"."""
    b = problem.tensor_bytes[t]
    some = fast[i, t] = model.new_bool_var(f"fast_{i}_{t}")
    every = model.new_bool_var(f"all_fast_{i}_{t}")
    model.add_implication(every, some)
    model.add(some == every).only_enforce_if(whole)  # one portion
    slow = model.new_int_var(0, 2 * b, f"slow_bytes_{i}_{t}")
    model.add(slow + b * every >= b)
    model.add(slow + 2 * b * some + 2 * b * whole >= 2 * b)
    return b * every, slow, every


# At most this many pairs of ops get the pairwise capacity rule (a subset is as sound as all).
MAX_CAPACITY_PAIRS = 400


def _add_pairwise_capacity(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, fast_bytes: dict,
                           whole: dict, times: tuple) -> None:
    """Capacity over time between two ops that run whole (module Notes, "Capacity over time"):
    either one ends before the other starts, or the fast copies both touch fit the fast level
    together (a tensor both touch counted once, at the larger of its two fast byte counts).
    Only for pairs neither of which depends on the other, whose bytes together exceed the
    fast level (otherwise the rule is void), the first :data:`MAX_CAPACITY_PAIRS` in op order."""
    start, end = times
    cap = problem.capacity_bytes[0]
    sizes = problem.tensor_bytes
    touched = [{t for t, _ in row if sizes[t]} for row in problem.op_accesses()]
    for i, j in capacity_pairs(problem):
        first, second, fits = (model.new_bool_var(f"{name}_{i}_{j}") for name in ("before", "after", "fit_together"))
        model.add(end[i] <= start[j]).only_enforce_if(first)
        model.add(end[j] <= start[i]).only_enforce_if(second)
        terms = [fast_bytes[i, t] for t in touched[i] - touched[j]]
        terms += [fast_bytes[j, t] for t in touched[j] - touched[i]]
        for t in sorted(touched[i] & touched[j]):
            both = model.new_int_var(0, sizes[t], f"fast_bytes_{i}_{j}_{t}")
            model.add(both >= fast_bytes[i, t])
            model.add(both >= fast_bytes[j, t])
            terms.append(both)
        model.add(sum(terms) <= cap).only_enforce_if(fits)
        model.add_bool_or([first, second, fits, *(whole[x].Not() for x in (i, j) if x in whole)])


def capacity_pairs(problem: LevelProblem) -> list[tuple[int, int]]:
    """The pairs of ops that get the capacity rule (module Notes, "Capacity over time"): neither
    depends on the other and their bytes together exceed the fast level; the first
    :data:`MAX_CAPACITY_PAIRS` in op order.

    Examples
    --------
    Two independent ops each touching 8 bytes, a fast level of 8: one pair; of 16: none.

    >>> p = LevelProblem((0, 0), ((), ()), ((0,), (1,)), (8, 8), (8, 99), (4, 1))
    >>> capacity_pairs(p), capacity_pairs(replace(p, capacity_bytes=(16, 99)))
    ([(0, 1)], [])
    """
    cap = problem.capacity_bytes[0]
    sizes = problem.tensor_bytes
    touched = [{t for t, _ in row if sizes[t]} for row in problem.op_accesses()]
    totals = [sum(sizes[t] for t in ts) for ts in touched]
    before = _ancestors(problem)
    pairs = [(i, j) for j in range(problem.num_ops) for i in range(j)
             if totals[i] + totals[j] > cap and not (before[j] >> i) & 1 and not (before[i] >> j) & 1
             and sum(sizes[t] for t in touched[i] | touched[j]) > cap]
    return pairs[:MAX_CAPACITY_PAIRS]


def _ancestors(problem: LevelProblem) -> list[int]:
    """Per op, the bit set of every op it depends on through the data (transitively)."""
    preds = [{a for t in problem.reads[i] if problem.is_real(a := problem.accesses(t)[0]) and a != i}
             for i in range(problem.num_ops)]
    out = [0] * problem.num_ops
    waiting = [len(p) for p in preds]
    readers: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for i, p in enumerate(preds):
        for a in p:
            readers[a].append(i)
    ready = [i for i in range(problem.num_ops) if not waiting[i]]
    while ready:
        a = ready.pop()
        for i in readers[a]:
            out[i] |= out[a] | (1 << a)
            waiting[i] -= 1
            if not waiting[i]:
                ready.append(i)
    return out


def _add_piece_loads(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, fast_bytes: dict) -> list:
    """Per cut tensor, the least engine cycles of its pieces (module Notes, "Splits"): a
    slow-born one's fast bytes in any access were prefetched, a live-out one's fast-written
    bytes are evicted, each byte at the DMA rate (latencies left out)."""
    rate = problem.dma_rate
    loads = []
    for t in sorted(view.cut):
        if not problem.tensor_bytes[t]:
            continue
        acc = problem.accesses(t)
        if not problem.is_real(acc[0]):
            moved = [fast_bytes[a, t] for a in acc[1:] if problem.is_real(a)]
        elif acc[-1] == problem.num_ops:
            moved = [fast_bytes[acc[0], t]]
        else:
            continue
        if not moved:
            continue
        cycles = model.new_int_var(0, problem.dma_cycles(t), f"piece_cycles_{t}")
        for fb in moved:
            model.add(rate.numerator * cycles >= rate.denominator * fb)
        loads.append(cycles)
    return loads


def _add_dma_engine(model: cp_model.CpModel, problem: LevelProblem, view: SplitView, fast: dict, times: tuple,
                    makespan: cp_model.IntVar, piece_loads: list, prefetch_begins: dict) -> dict:
    """The prefetches of slow-born tensors (each first one's start into ``prefetch_begins``), the
    evictions of live-out ones, their heads and tails, the engine's load with the tail of its
    last transfer, and the load with the cut tensors' pieces (module Notes); returns the counted
    DMAs' literals by tensor."""
    start, dur, end = times
    dma: dict[int, cp_model.IntVar] = {}
    readers_of_slow: dict[int, list] = {}  # op -> its fast reads of slow-born tensors
    split_readers = []  # fast reads of uncut slow-born tensors by split ops
    evictions = []
    intervals = []
    movable = []  # the shortest DMA each tensor may need (a cut tensor's: a piece)
    horizon = _horizon(problem)
    for t in range(problem.num_tensors):
        if not problem.tensor_bytes[t]:
            continue
        acc = problem.accesses(t)
        if any(problem.is_real(a) for a in acc):
            movable.append(problem.dma_latency_cycles + 1 if t in view.cut else problem.dma_cycles(t))
        if t in view.cut:  # moved in pieces: nothing on the engine
            continue
        cycles = problem.dma_cycles(t)
        if not problem.is_real(acc[0]):
            uses = [(a, fast[a, t]) for a in acc[1:] if problem.is_real(a)]
            if not uses:
                continue
            y = dma[t] = model.new_bool_var(f"dma_{t}")
            begin = prefetch_begins[t] = model.new_int_var(0, horizon, f"prefetch_start_{t}")
            intervals.append(model.new_optional_fixed_size_interval_var(begin, cycles, y, f"prefetch_{t}"))
            for a, x in uses:
                _implies(model, x, y)
                if a in view.ops:  # the portion reading it fast may start after the op's first
                    split_readers.append(x)
                    continue
                _when(model, start[a] >= begin + cycles, x)
                readers_of_slow.setdefault(a, []).append(x)
        elif acc[-1] == problem.num_ops:
            x = fast[acc[0], t]
            y = dma[t] = model.new_bool_var(f"dma_{t}")
            begin = model.new_int_var(0, horizon, f"evict_start_{t}")
            intervals.append(model.new_optional_fixed_size_interval_var(begin, cycles, y, f"evict_{t}"))
            _implies(model, x, y)
            _when(model, begin >= end[acc[0]], y)
            _when(model, makespan >= begin + cycles, y)
            evictions.append(y)
    load = sum(problem.dma_cycles(t) * y for t, y in dma.items())
    if piece_loads:  # the engine runs every counted DMA and every piece
        model.add(makespan >= load + sum(piece_loads))
    if not dma:
        return dma
    model.add_no_overlap(intervals)
    cases = []
    extra = model.new_bool_var("tail_uncounted_dma")  # a DMA the relaxation does not count
    model.add(makespan >= load + min(movable)).only_enforce_if(extra)
    cases.append(extra)
    none = model.new_bool_var("tail_no_dma")
    for y in dma.values():
        model.add_implication(none, y.Not())
    cases.append(none)
    if evictions:
        last_evict = model.new_bool_var("tail_eviction")
        model.add_bool_or(evictions).only_enforce_if(last_evict)
        model.add(makespan >= load).only_enforce_if(last_evict)
        cases.append(last_evict)
    for r, lits in sorted(readers_of_slow.items()):
        z = model.new_bool_var(f"tail_prefetch_released_by_{r}")
        if not any(isinstance(x, int) for x in lits):  # (a constant is 1: a fast-only op reads fast)
            model.add_bool_or(lits).only_enforce_if(z)
        model.add(makespan >= load + dur[r]).only_enforce_if(z)
        cases.append(z)
    if split_readers:
        z = model.new_bool_var("tail_prefetch_released_by_a_portion")
        if not any(isinstance(x, int) for x in split_readers):
            model.add_bool_or(split_readers).only_enforce_if(z)
        model.add(makespan >= load).only_enforce_if(z)
        cases.append(z)
    model.add_bool_or(cases)
    return dma


def _implies(model: cp_model.CpModel, x, y) -> None:
    """``x => y`` for a literal or the constant 1 ``x``."""
    if isinstance(x, int):
        if x:
            model.add(y == 1)
    else:
        model.add_implication(x, y)


def _when(model: cp_model.CpModel, relation, x) -> None:
    """``relation`` enforced by the literal ``x`` (always, for the constant 1)."""
    ct = model.add(relation)
    if not isinstance(x, int):
        ct.only_enforce_if(x)


def stream_plan_lower_bound(problem: LevelProblem, num_streams: int, budget: Budget | None = None,
                            amount: float = 0.5,
                            options: SolveOptions = SolveOptions(num_workers=1, random_seed=0),
                            splittable_ops: frozenset = frozenset(),
                            splittable_tensors: frozenset = frozenset()) -> int:
    """A lower bound on the makespan of every plan of ``problem``'s ops on a device with
    ``num_streams`` compute streams (module Notes; split plans of its groups and of the
    splittable ops and tensors too): CP-SAT's proven bound on the relaxation within ``amount``
    units of ``budget`` (None: a 10-s memory-levels budget), never below
    :func:`stream_plan_floor`.

    Examples
    --------
    Two ops each read their own 16-byte weight (compute 2; fast 4 B/cycle, slow 1 B/cycle,
    a DMA 16 cycles). On two streams: both slow (16), or one prefetched (16 + 4 = 20), so
    16; on one stream: slow and slow 32, or prefetch one while the other reads slow (16 +
    4 = 20):

    >>> p = LevelProblem((2, 2), ((0,), (1,)), ((), ()), (16, 16), (64, 99), (4, 1))
    >>> stream_plan_lower_bound(p, 2), stream_plan_lower_bound(p, 1)
    (16, 20)
    """
    split = frozenset(splittable_ops), frozenset(splittable_tensors)
    floor = stream_plan_floor(problem, num_streams, *split)
    if budget is None:
        budget = Budget.start(10.0, MEMORY_LEVELS)
        amount = budget.left
    view = split_view(problem, *split)
    # Each model gets an even share of what the earlier ones left.
    models = [(False, False, "stream_plan_bound")]
    if capacity_pairs(_unsplit(problem, view)):
        # The capacity rule's disjunctions may slow the proof: the relaxation without them too,
        # and the larger proven bound. (Handing the first bound to the second model as a floor
        # constraint stalled CP-SAT's proof at that floor on memory-streams-split.)
        models.append((True, False, "stream_plan_capacity_bound"))
    else:
        models = [(True, False, "stream_plan_bound")]
    if _has_piece_timing(view):
        # The engine's windows ("Piece timing") change what CP-SAT proves quickly: a model of
        # their own (without the capacity rule, whose disjunctions slowed its proof 60-fold).
        models.append((False, True, "stream_plan_piece_bound"))
    used = budget.used
    for k, (capacity, timed, stage) in enumerate(models):
        share = max(0.0, amount - (budget.used - used)) / (len(models) - k)
        model, _ = build_stream_bound_model(problem, num_streams, *split, capacity=capacity, piece_timing=timed)
        floor = budget.proven_lower_bound(model, options, share, stage, floor)
    return floor


def _has_piece_timing(view: SplitView) -> bool:
    """Whether "Piece timing" constrains anything: some op may run in portions, or some tensor
    may be cut."""
    return bool(view.ops or view.cut)
