"""The segment-run bound (LATENCY with memory limits): runs of cut ops on one device must
hold their segments' weights too, or pay for sending a branch away and back.

Notes
-----
With cut ops ``c_0 < ... < c_(S-1)`` (:func:`~solvers.scheduling.structure.cut_vertices`)
the makespan telescopes into ``end(c_0) + sum_j (end(c_(j+1)) - end(c_j)) + (makespan -
end(c_(S-1)))`` (:mod:`~solvers.scheduling.decomposition`). Every schedule splits the cut
ops into *runs*: maximal stretches of consecutive cut ops on one device. Take a run
``c_s .. c_t`` on device d and a segment j inside it (``s <= j < t``: both ``c_j`` and
``c_(j+1)`` on d). Its *interior* ops (strictly between them) descend from ``c_j`` and
precede ``c_(j+1)``, so one of these holds:

* **full**: every interior op is on d. Then d holds their weights, and the step ``end(c_(j+1))
  - end(c_j)`` is at least the work of the interior ops and ``c_(j+1)`` on d divided by d's
  streams (they all run on d in that window);
* **split**: some interior op x is on a device ``d' != d``. A path ``c_j -> .. -> x -> .. ->
  c_(j+1)`` leaves d and comes back, so the step is at least ``F(x, d') + R(x, d') -
  dur(x, d') + dur(c_(j+1), d)``, where F is the earliest finish of x after ``c_j``
  (:func:`~solvers.scheduling.path_bounds.pool_finish_from_source`, ``c_j`` a zero-duration
  source on d) and R the same run backwards from ``c_(j+1)`` on d (x's duration plus the
  least time from x's end to ``c_(j+1)``'s start): call it ``through(x)``.

So if the step is s, every interior op with ``through(x) > s`` is on d. For every threshold t
among the ``through`` values the segment offers the option (weight of the interior ops with
``through > t``, step ``max(t, their work and c_(j+1)'s on d / streams)``), besides the full
option; a schedule whose off-device ops have the largest ``through`` t fits that option, one
with none off fits the full one. (A segment without interior weights offers one option of
weight 0 and no step beyond the floors: there is nothing to trade.)

Either way the step is also at least the plain segment terms of
:func:`~solvers.scheduling.decomposition.segment_chain_terms` (its floor and the pooled
earliest finish). The run's weight on d (its cut ops' and the weights its segments' options
count, each colocation group counted once, :func:`~solvers.scheduling.forced.held_weights`
over the topological order) is at most d's memory. Between runs (``c_j`` on a, ``c_(j+1)``
on another device b) the step is at least the pooled earliest finish of ``c_(j+1)`` on b after ``c_j`` on a; when a
and b are two devices of one pool this is computed with a and b as pools of their own, so
the path pays a real transfer (the plain chain lets a pool move for free).

The bound is the minimum over sequences of runs, by dynamic programming over the cut ops
with, per device pool and run start, the least run time for each weight (a knapsack). The
weights are counted in units of ``capacity / _UNITS`` *rounded down*: any run that fits
has at most ``_UNITS`` rounded units, so every real placement stays admissible (a
relaxation). Runs on a pool whose memory holds every weight of the problem are not limited.
A run's start can be dropped once a later start is at least as good at every weight (the
same steps follow both, so it stays so).

Nothing above needs *every* cut op: the argument holds for any subset of them (the segments
between the chosen ones are then longer). Cut at the clean ones only
(:func:`~solvers.scheduling.structure.clean_cut_vertices`, ``cuts``), a segment holds every
edge that spans it, residual connections included, so a device change inside it pays for
them; cut at all of them, a residual edge jumping a cut op lies in no segment and a change
after a free chain edge costs nothing (docs/bounds.md, Memory-forced device changes).

Each run is checked on its own device only; two runs on one device, or weights outside the
counted ones, are not added up (relaxations again). The bound is sound whatever the chosen
sequence, and never below the plain chain of :func:`~solvers.scheduling.decomposition.chain_segment_bound`'s
terms without memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from solvers.scheduling.decomposition import segment_chain_terms
from solvers.scheduling.forced import held_weights
from solvers.scheduling.path_bounds import DevicePools, pool_finish_from_source
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.structure import topological_order

__all__ = ["SegmentRun", "segment_run_bound", "segment_run_trace", "reversed_problem", "MoveOptions"]

_UNITS = 1024

# Per pool pair (ka, kb): the (weight left on the device of ka, step) options of a device change,
# or (weight left on it, weight taken onto the device of kb, step) ones.
MoveOptions = dict


def reversed_problem(problem: SchedulingProblem) -> SchedulingProblem:
    """The problem with every edge turned around (and the link table transposed, so an edge's
    transfer uses the same link).

    A path's earliest finish in it, from an op as zero-duration source, bounds the time from
    a path op's start to that op's start in the original (the same durations and transfers,
    read backwards).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 2), (3, 4)), ((0, 1, 8),), (1, 1), ((-1, 0), (1, -1)), ((5, 6),))
    >>> q = reversed_problem(p)
    >>> q.edges, q.link_of
    (((1, 0, 8),), ((-1, 1), (0, -1)))
    """
    nd = problem.num_devices
    return SchedulingProblem(problem.durations_cycles, tuple((v, u, b) for u, v, b in problem.edges),
                             problem.device_streams, tuple(tuple(problem.link_of[b][a] for b in range(nd))
                                                           for a in range(nd)),
                             problem.transfer_cycles, Objective.LATENCY)


def _split_pools(pools: DevicePools, b: int) -> tuple[list[tuple[int, ...]], int | None]:
    """The pools with pool b's first device alone (index 0) and, when b has more, its second
    alone too (index 1); also the index of that second device's pool (None without one)."""
    members = pools.pools[b]
    parts: list[tuple[int, ...]] = [(members[0],)]
    other = None
    if len(members) > 1:
        parts.append((members[1],))
        other = 1
        if len(members) > 2:
            parts.append(tuple(members[2:]))
    parts += [g for k, g in enumerate(pools.pools) if k != b]
    return parts, other


def _segment_options(sub: SchedulingProblem, parts: list[tuple[int, ...]], other: int | None,
                     held_inner: Sequence[int]) -> tuple[list[tuple[int, float]], float]:
    """For a middle segment ``sub`` (source first, sink last) whose cut ops both sit on device
    ``parts[0][0]``: the (interior weight on the device, step) options of the module Notes,
    before floors, and the step when the sink moves to ``parts[other]`` (another device of
    the pool)."""
    n = sub.num_ops
    d = parts[0][0]
    fwd = pool_finish_from_source(sub, 0, DevicePools(sub, parts))[0]  # (ops, parts), source on d
    move = float(fwd[n - 1, other]) if other is not None else math.inf
    sink_d = sub.durations_cycles[n - 1][d]
    if sink_d < 0:
        return [], move
    inner = list(range(1, n - 1))
    dur_d = np.array([x if x >= 0 else np.inf for x in (sub.durations_cycles[i][d] for i in inner)])

    def serial(on: np.ndarray) -> float:  # the ops on d and the sink share d's streams
        work = float(dur_d[on].sum()) + sink_d
        return float(-(-work // sub.device_streams[d])) if math.isfinite(work) else math.inf

    if not inner:
        return [(0, serial(np.zeros(0, dtype=bool)))], move
    if sum(held_inner) == 0:  # no weight to save: only the floors hold
        return [(0, 0.0)], move
    rev = reversed_problem(sub)
    rev_pools = DevicePools(rev, parts)
    back = pool_finish_from_source(rev, n - 1, rev_pools)[0]
    dur = rev_pools.durations[inner, 1:]
    allowed = np.isfinite(dur)
    through = np.where(allowed, fwd[inner, 1:] + back[inner, 1:] - np.where(allowed, dur, 0.0), np.inf)
    held = np.asarray(held_inner, dtype=np.int64)
    options = [(int(held.sum()), serial(np.ones(len(inner), dtype=bool)))]
    if through.shape[1] == 0:  # d is the only device: every interior op is on it
        return options, move
    through = through.min(axis=1) + sink_d  # x off d: the step is at least this
    for t in np.unique(through[np.isfinite(through)]):
        on = through > t  # every op off d has through <= t, so these are on d
        options.append((int(held[on].sum()), max(float(t), serial(on))))
    return options, move


def segment_run_bound(problem: SchedulingProblem, segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
                      floors: Sequence[int], cuts: Sequence[int] | None = None,
                      move_floors: Sequence[np.ndarray | None] | None = None,
                      move_options: Sequence[MoveOptions | None] | None = None, unit_count: int = _UNITS) -> int:
    """The segment-run bound of the module Notes.

    Parameters
    ----------
    problem : SchedulingProblem
        With free ends pruned, as for :func:`~solvers.scheduling.decomposition.chain_segment_bound`.
    segments : sequence
        :func:`~solvers.scheduling.bounds.segment_problems` of ``problem``.
    floors : sequence of int
        A lower bound on each segment's own optimum, in the same order.
    cuts : sequence of int, optional
        The cut ops the segments were cut at, when not all of them.
    move_floors : sequence, optional
        Per middle segment (one with a cut op at both ends, in order), None or a proven lower
        bound on its step when its two cut ops sit on two different devices, as a
        ``pools x pools`` table (the diagonal: two devices of one pool), e.g. the pinned
        proofs of :mod:`~solvers.scheduling.pinned_moves` (link contention included).
    move_options : sequence, optional
        Per middle segment, None or a dict ``{(ka, kb): [(weight, step), ...]}``: when given
        for a pool pair, a device change there is priced by these options instead of the
        plain move (each option's step at least the move's), the weight charged to the run
        the change leaves (module Notes, **Moves that leave weight behind**). An option may
        also be ``(weight, arriving, step)``: ``arriving`` is charged to the run the change
        opens (:mod:`~solvers.scheduling.move_arrivals`). The options must cover every
        schedule: one of weight 0 (and arriving 0) is required.
    unit_count : int, optional
        The units a memory-limited pool's capacity is counted in (weights rounded down: any
        count is sound; more see more and cost more).

    Returns
    -------
    int
        A lower bound on the makespan (0 for THROUGHPUT, without segments or without a
        memory limit).

    Examples
    --------
    A chain of three fork-joins ``c_j -> {x_j, y_j} -> c_(j+1)`` on two devices that each hold
    10 of the 18 weight bytes (x and y hold 3 each), every op 1 cycle, transfers 5. Without
    memory everything runs on one device in 10 cycles; here some segment must send a branch
    away and back (5 + 1 + 5) or change device at a cut op (5 more).

    >>> from solvers.scheduling.bounds import bound_segments, segment_floor, lower_bound
    >>> edges = [e for j in range(3) for e in ((3 * j, 3 * j + 1, 1), (3 * j, 3 * j + 2, 1),
    ...                                         (3 * j + 1, 3 * j + 3, 1), (3 * j + 2, 3 * j + 3, 1))]
    >>> p = SchedulingProblem(((1, 1),) * 10, edges, (1, 1), ((-1, 0), (0, -1)), ((5,),) * 12,
    ...                       device_memory_bytes=(10, 10),
    ...                       op_resident_bytes=(0,) + (3, 3, 0) * 3)
    >>> pruned, segs = bound_segments(p)
    >>> lower_bound(p, segments=False), segment_run_bound(pruned, segs, [segment_floor(s) for s, _ in segs])
    (10, 14)
    """
    terms = _run_terms(problem, segments, floors, cuts, move_floors, with_masks=False)
    if terms is None:
        return 0
    pools, first, moves, last, stays, own, total, _ = terms
    value = _chain(pools, first, moves, last, stays, own, total, move_options, unit_count)
    return int(value) if math.isfinite(value) else 0


def _run_terms(problem: SchedulingProblem, segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
               floors: Sequence[int], cuts: Sequence[int] | None,
               move_floors: Sequence[np.ndarray | None] | None, with_masks: bool):
    """What the run DP reads, for the bound and its trace alike: ``(pools, first, moves, last,
    stays, own, total, cut ops)`` with ``stays[b][j]`` the (weight, time) options of staying on
    pool b through middle segment j (each with the mask of interior ops it keeps when
    ``with_masks``), ``own`` the cut ops' weights and ``total`` all weight; None where the DP
    has nothing to bound (not LATENCY, no segments, no memory limit, no finite terms)."""
    if problem.objective is not Objective.LATENCY or not segments:
        return None
    if not any(problem.memory_bytes(d) > 0 for d in range(problem.num_devices)):
        return None
    terms = segment_chain_terms(problem, segments, floors, cuts)
    if terms is None:
        return None
    pools, first, steps, last, cut_ops, middles = terms
    order = topological_order(problem)
    held = dict(zip(order, held_weights(problem, order)))
    stays: list[list[list[tuple]]] = [[] for _ in range(pools.size)]  # per pool, per step
    moves = [np.array(reach, dtype=np.float64) for _, reach in steps]
    for j, (sub, ops) in enumerate(middles):
        held_inner = [held[i] for i in ops[1:-1]]
        for b in range(pools.size):
            parts, other = _split_pools(pools, b)
            options, move = _segment_options(sub, parts, other, held_inner)
            base = float(steps[j][0][b])
            row = [(w, max(base, t)) for w, t in options]
            if with_masks:
                row = [(w, t, m) for (w, t), m in zip(row, _option_masks(sub, parts, held_inner, len(options)))]
            stays[b].append(row)
            # a run boundary inside pool b changes device: impossible in a pool of one
            moves[j][b, b] = max(moves[j][b, b], move)
        if move_floors is not None and move_floors[j] is not None:
            moves[j] = np.maximum(moves[j], move_floors[j])
    return pools, first, moves, last, stays, [held[c] for c in cut_ops], sum(held.values()), list(cut_ops)


def _chain(pools: DevicePools, first: np.ndarray, moves: list[np.ndarray], last: np.ndarray,
           stays: list[list[list[tuple[int, float]]]], own: list[int], total: int,
           move_options: Sequence[MoveOptions | None] | None = None, unit_count: int = _UNITS) -> float:
    """The run DP over the cut ops (module Notes): the best end of each cut op per pool, a run
    of any pool starting after a run of any other one ended (with ``move_options``, after a
    run that also held the weight an option leaves behind)."""
    count, cap = len(own), pools.capacity
    limited = [0 < c < total for c in cap]
    states = [_RunState(unit_count if limited[b] else 0) for b in range(pools.size)]

    def units(w: int, b: int) -> int:
        return w * unit_count // cap[b] if limited[b] else 0

    rows: list[np.ndarray] = [np.array([float(x)]) for x in first]  # per pool: best end at most w units
    for j in range(count):
        options = move_options[j - 1] if j and move_options is not None else None
        nxt = np.full(pools.size, np.inf)
        for b, state in enumerate(states):
            enter = float(first[b]) if j == 0 else _enter(rows, moves[j - 1], options, b, units)
            stay = None
            if j:
                stay = [(units(w + own[j], b), t) for w, t in stays[b][j - 1]]
            nxt[b] = state.advance(enter, stay, units(own[j], b))
        rows = [state.best_row() for state in states]
    best = np.array([row[-1] for row in rows])
    return float((best + np.asarray(last, dtype=np.float64)).min())


def _enter(rows: list[np.ndarray], move: np.ndarray, options: MoveOptions | None, b: int,
           units) -> float | dict[int, float]:
    """The earliest a run on pool b can start at this cut op: over every pool a, a's best end
    of the previous cut op plus the move, or, where ``options`` price the pair, with each
    option's weight still free in a's run. Where an option also brings weight onto b, a dict
    from the units the run opens with beyond its cut op (0 included) to the earliest start;
    an entry is kept only when earlier than every entry with fewer units."""
    best: dict[int, float] = {0: math.inf}
    for a, row in enumerate(rows):
        choices = None if options is None else options.get((a, b))
        if not choices:
            best[0] = min(best[0], float(row[-1]) + float(move[a, b]))
            continue
        top = len(row) - 1
        for option in choices:
            w, arriving, t = option if len(option) == 3 else (option[0], 0, option[1])
            u = units(w, a)
            if u <= top:
                extra = units(arriving, b)
                time = float(row[top - u]) + max(float(t), float(move[a, b]))
                best[extra] = min(best.get(extra, math.inf), time)
    if len(best) == 1:
        return best[0]
    kept, earliest = {}, math.inf
    for extra in sorted(best):
        if best[extra] < earliest:
            kept[extra] = earliest = best[extra]
    kept.setdefault(0, best[0])
    return kept


class _RunState:
    """The open runs of one pool: per run start, its entry time and the least run time for
    each weight in units (prefix minima: "at most w units"; ``units`` 0 = not limited)."""

    def __init__(self, units: int) -> None:
        self.units = units
        self.rows = np.empty((0, units + 1))
        self.starts = np.empty(0)
        self.opened = np.empty(0, dtype=np.int64)  # the step each open run started at (for the trace)

    def advance(self, enter: float | dict[int, float], stay: list[tuple[int, float]] | None, own: int,
                step: int = 0) -> float:
        """Extend every open run by one step (``stay``: its (units, time) options, the cut op's
        own units included), open one at this cut op (step ``step``) unless an open
        run is as good at every weight, drop runs a newer one beats, and return the best end
        of this cut op on the pool. ``enter`` is the run's start, or a dict from the units it
        opens with beyond ``own`` (what the change brought onto the device) to its start."""
        u = self.units
        if stay is not None and len(self.rows):
            nxt = np.full_like(self.rows, np.inf)
            for w, t in stay:
                if w <= u and math.isfinite(t):
                    nxt[:, w:] = np.minimum(nxt[:, w:], self.rows[:, :u + 1 - w] + t)
            self.rows = nxt
        for extra, start in (enter.items() if isinstance(enter, dict) else ((0, enter),)):
            self.open(start, own + extra, step)
        alive = np.isfinite(self.rows[:, -1])
        self.rows, self.starts, self.opened = self.rows[alive], self.starts[alive], self.opened[alive]
        return float((self.starts + self.rows[:, -1]).min()) if len(self.rows) else math.inf

    def open(self, enter: float, own: int, step: int) -> None:
        """Open a run at ``enter`` holding ``own`` units (step ``step``) unless an open run is as
        good at every weight; drop the open runs it beats."""
        u = self.units
        if own <= u and math.isfinite(enter):
            row = np.full(u + 1, np.inf)
            row[own:] = 0.0
            held = self.starts[:, None] + self.rows
            if not np.any(np.all(held <= enter + row[None, :], axis=1)):
                keep = ~np.all(enter + row[None, :] <= held, axis=1)
                self.rows = np.vstack([self.rows[keep], row])
                self.starts = np.append(self.starts[keep], enter)
                self.opened = np.append(self.opened[keep], step)

    def best_row(self) -> np.ndarray:
        """The best end of the current cut op on this pool for each weight in units (at most w
        units held so far), over the open runs."""
        if not len(self.rows):
            return np.full(self.units + 1, np.inf)
        return (self.starts[:, None] + self.rows).min(axis=0)

# --- Trace-back (for plans, not for the bound) --------------------------------------------------
# The bound above keeps only values. A start built from the bound's own choices (which device
# each run of cut ops uses and which interior ops a run keeps) needs the DP's argmin, so the
# functions below run the same DP while recording its states and walk them back. They reuse the
# bound's terms and options and leave its code path untouched.


@dataclass(frozen=True, slots=True)
class SegmentRun:
    """One run of the traced DP: cut ops ``first .. last`` (indices into the cut ops) on a
    device of pool ``pool``; ``kept[k]`` is the mask over the interior ops of the middle segment
    ``first + k`` (between cut ops ``first + k`` and ``first + k + 1``) that the chosen option
    keeps on the run's device (all True: the full option)."""

    pool: int
    first: int
    last: int
    kept: tuple[tuple[bool, ...], ...]


def segment_run_trace(problem: SchedulingProblem, segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
                      floors: Sequence[int], cuts: Sequence[int] | None = None,
                      move_floors: Sequence[np.ndarray | None] | None = None,
                      ) -> tuple[float, list[SegmentRun], list[int]] | None:
    """The DP of :func:`segment_run_bound` (same arguments), traced back: ``(value, runs, cut
    ops)`` where ``value`` is the bound's value before rounding (``int(value)`` is what
    :func:`segment_run_bound` returns) and ``runs`` the sequence of runs that attains it; None
    where the bound is 0 for want of a memory limit, segments or a finite value.

    Examples
    --------
    The three fork-joins of :func:`segment_run_bound`'s example: the DP's runs cover the three
    cut ops 0, 3, 6 and 9 on two devices, and the value is the bound's.

    >>> from solvers.scheduling.bounds import bound_segments, segment_floor
    >>> edges = [e for j in range(3) for e in ((3 * j, 3 * j + 1, 1), (3 * j, 3 * j + 2, 1),
    ...                                         (3 * j + 1, 3 * j + 3, 1), (3 * j + 2, 3 * j + 3, 1))]
    >>> p = SchedulingProblem(((1, 1),) * 10, edges, (1, 1), ((-1, 0), (0, -1)), ((5,),) * 12,
    ...                       device_memory_bytes=(10, 10),
    ...                       op_resident_bytes=(0,) + (3, 3, 0) * 3)
    >>> pruned, segs = bound_segments(p)
    >>> value, runs, cut_ops = segment_run_trace(pruned, segs, [segment_floor(s) for s, _ in segs])
    >>> value, cut_ops, sum(r.last - r.first + 1 for r in runs)
    (14.0, [0, 3, 6, 9], 4)
    """
    terms = _run_terms(problem, segments, floors, cuts, move_floors, with_masks=True)
    if terms is None:
        return None
    pools, first, moves, last, stays, own, total, cut_ops = terms
    traced = _traced_chain(pools, first, moves, last, stays, own, total)
    if traced is None:
        return None
    value, runs = traced
    return value, runs, cut_ops


def _option_masks(sub: SchedulingProblem, parts: list[tuple[int, ...]], held_inner: Sequence[int],
                  count: int) -> list[np.ndarray]:
    """For each option :func:`_segment_options` returns (``count`` of them, in its order), the
    interior ops it keeps on the run's device: all for the first (full) option, ``through > t``
    for the option of threshold t."""
    n = sub.num_ops
    inner = n - 2
    every = np.ones(max(inner, 0), dtype=bool)
    if count <= 1 or inner <= 0 or sum(held_inner) == 0:
        return [every] * count
    fwd = pool_finish_from_source(sub, 0, DevicePools(sub, parts))[0]
    rev = reversed_problem(sub)
    rev_pools = DevicePools(rev, parts)
    back = pool_finish_from_source(rev, n - 1, rev_pools)[0]
    idx = list(range(1, n - 1))
    dur = rev_pools.durations[idx, 1:]
    allowed = np.isfinite(dur)
    through = np.where(allowed, fwd[idx, 1:] + back[idx, 1:] - np.where(allowed, dur, 0.0), np.inf)
    d = parts[0][0]
    through = through.min(axis=1) + sub.durations_cycles[n - 1][d]
    masks = [every] + [through > t for t in np.unique(through[np.isfinite(through)])]
    if len(masks) != count:
        raise AssertionError("the traced options must follow _segment_options")
    return masks


def _traced_chain(pools: DevicePools, first: np.ndarray, moves: list[np.ndarray], last: np.ndarray,
                  stays: list[list[list[tuple[int, float, np.ndarray]]]], own: list[int],
                  total: int) -> tuple[float, list[SegmentRun]] | None:
    """:func:`_chain` with every state recorded, and the walk back from its best end."""
    count, cap = len(own), pools.capacity
    limited = [0 < c < total for c in cap]

    def units(w: int, b: int) -> int:
        return w * _UNITS // cap[b] if limited[b] else 0

    states = [_TracedRuns(_UNITS if limited[b] else 0) for b in range(pools.size)]
    bests = []
    best = np.asarray(first, dtype=np.float64)
    for j in range(count):
        enter = best if j == 0 else (best[:, None] + moves[j - 1]).min(axis=0)
        nxt = np.full(pools.size, np.inf)
        for b, state in enumerate(states):
            stay = None if j == 0 else [(units(w + own[j], b), t) for w, t, _ in stays[b][j - 1]]
            nxt[b] = state.advance(j, float(enter[b]), stay, units(own[j], b))
        best = nxt
        bests.append(best)
    ends = best + np.asarray(last, dtype=np.float64)
    b = int(np.argmin(ends))
    value = float(ends[b])
    if not math.isfinite(value):
        return None
    runs: list[SegmentRun] = []
    j = count - 1
    while True:
        opened, chosen = states[b].walk_back(j, bests[j][b])
        kept = tuple(tuple(bool(x) for x in stays[b][k - 1][o][2]) for k, o in zip(range(opened + 1, j + 1), chosen))
        runs.append(SegmentRun(b, opened, j, kept))
        if opened == 0:
            break
        entry = states[b].entry_of(opened)
        reach = bests[opened - 1] + moves[opened - 1][:, b]
        b = int(np.flatnonzero(reach == entry)[0])
        j = opened - 1
    return value, runs[::-1]


class _TracedRuns(_RunState):
    """:class:`_RunState` recording each step's runs (by the step that opened them) and, per
    step, the option each run's value came from, for the walk back."""

    def __init__(self, units: int) -> None:
        super().__init__(units)
        self.history: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.stays: dict[int, list[tuple[int, float]]] = {}
        self.entries: dict[int, float] = {}

    def advance(self, step: int, enter: float, stay: list[tuple[int, float]] | None, own: int) -> float:
        if stay is not None and len(self.rows):
            self.stays[step] = stay
        best = super().advance(enter, stay, own, step)
        if np.any(self.opened == step):  # a run opened here (a new row is never dropped as dead)
            self.entries[step] = enter
        self.history[step] = (self.rows.copy(), self.starts.copy(), self.opened.copy())
        return best

    def entry_of(self, opened: int) -> float:
        return self.entries[opened]

    def walk_back(self, step: int, value: float) -> tuple[int, list[int]]:
        """The run that ends at cut op ``step`` with ``value``: (the step that opened it, the
        option chosen at each later step up to ``step``, in order)."""
        rows, starts, opened = self.history[step]
        r = int(np.flatnonzero(starts + rows[:, -1] == value)[0])
        run = int(opened[r])
        w, chosen = self.units, []
        for j in range(step, run, -1):
            target = self.history[j][0][list(self.history[j][2]).index(run), w]
            prev = self.history[j - 1]
            row = prev[0][list(prev[2]).index(run)]
            for o, (ow, t) in enumerate(self.stays[j]):
                if ow <= w and math.isfinite(t) and row[w - ow] + t == target:
                    chosen.append(o)
                    w -= ow
                    break
            else:
                raise AssertionError("the traced DP lost its run")
        return run, chosen[::-1]


# Public for the traced-runs start (solvers.scheduling.traced_start), which traces this DP with
# its weight options to build plans: the weight units and the DP's terms, unchanged.
WEIGHT_UNITS = _UNITS
run_terms = _run_terms
__all__ += ["WEIGHT_UNITS", "run_terms"]
