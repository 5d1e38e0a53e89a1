"""Several streams: an exact level model over cycle time, with the fast offsets in it.

The level solvers (:mod:`~solvers.memory.levels.cpsat`, :mod:`~solvers.memory.levels.greedy`)
plan a several-stream device under the *point-axis* memory order (every fast allocation waits
for every fast free before it in the merged op order), so their claims are about that stricter
rule. The lowered program keeps only the waits between pieces that overlap in address
(:func:`~solvers.memory.levels.validate.memory_waits` with the plan's own offsets,
``LevelSolution.fast_offsets``). This module solves that program's plan space itself: one
CP-SAT model whose solutions are exactly the plans :func:`~solvers.memory.levels.validate.validate_levels`
accepts with their own fast offsets, for the problem's fixed merged op order, streams and
(for a split problem) split factors.

Notes
-----
Sets, decisions and times are those of :func:`~solvers.memory.levels.cpsat.build_level_model`
(residency, kept gaps, prefetch triggers, eviction releases, op and DMA starts; each op after
the previous op of its stream and the producers of what it reads; one DMA engine as a
``NoOverlap``; the copy order: a kept gap across streams orders its two accesses, a slow read
after an eviction starts after it, a prefetch of a produced tensor after its producer).
Instead of the point-axis capacity and memory order:

* **segments**: every piece of a fast copy, each an optional box over the point axis, over
  cycles and over addresses: the fast access ``j`` of tensor ``t`` (points ``[2a+1, 2a+2)``,
  cycles ``[start a, end a)``), a kept gap (``[2a_{j-1}+2, 2a_j+1)``,
  ``[end a_{j-1}, start a_j)``), a prefetch (``[2 trigger+2, 2a_j+1)``,
  ``[DMA start, start a_j)``) and an eviction (``[2a_{j-1}+2, 2 release+1)``,
  ``[end a_{j-1}, DMA end)``); a copy is a chain of segments, contiguous on both axes;
* **offsets**: an address ``alignment * y[t,j]`` per fast access, the same across a kept gap
  (one copy, one buffer); a prefetch's segment takes its access's, an eviction's the
  access before it; every segment inside the fast level;
* **the by-address rule, exactly**: for every two segments both present, either they are
  apart in address, or one is before the other *both* on the point axis and in cycles
  (``hi_s <= lo_u`` and ``end_s <= start_u``). That is what the validator accepts: pieces
  that overlap on the point axis must be apart, and of two that do not, the later waits for
  the earlier's free when their addresses overlap. Segment pairs are equivalent to copy pairs
  because a copy's segments are contiguous on both axes and share one address;
* redundant: a ``Cumulative`` of the fast capacity over cycles and over points, and a
  ``NoOverlap2D`` over (cycles, address) (both implied by the rule);
* a copy is never dropped and prefetched again from the end of the same access (as in the
  point-axis model: keeping it holds the same points and address and moves nothing, so some
  optimum never does it; without it two segments of one buffer could take two addresses).

Objective: the makespan. The model's optimum is the shortest plan whose lowered program
(offsets and the waits they imply) runs as the model times it; the replay
(:func:`~solvers.memory.levels.validate.replay_levels` with those offsets) can only start
things earlier, so a solution is re-timed by it, validated, and is never later.

**What is fixed** (so what OPTIMAL and the bound are about): the merged op order (it defines
the point axis, the trigger and release windows and which of two pieces waits), each op's
stream (so the order on each stream), the split factors, the fast capacity the problem gives
(in plan solve: after the reserve held back for alignment), the alignment, and unshared
bandwidth. The bound is the model's own; it is not a bound over other orders or streams.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.cpsat_support import integer_objective_bound, interval_if
from solvers.memory.levels.cpsat import LevelVars, build_level_decisions, exact_model_fits
from solvers.memory.levels.problem import LevelProblem, LevelSolution
from solvers.memory.levels.stream_offsets import timed_by
from solvers.memory.levels.validate import fast_pieces, replay_levels, resolve_problem, validate_levels

__all__ = ["MAKESPAN_SHARE", "MAX_SEGMENT_PAIRS", "StreamTimeVars", "segment_count", "time_model_fits",
           "windows_fit", "add_segment_pair", "hint_access_offsets", "presence_literal",
           "time_model_misfit", "build_stream_time_model", "solve_stream_time"]

# The makespan stage's share (at most) of the units granted; what it leaves goes to the fast
# footprint at that makespan (a second, lexicographic stage).
MAKESPAN_SHARE = 0.7
# Above this many pairs of segments that may meet, the model is not built (each pair is a
# disjunction of four literals; 20,000 pairs build in about a second).
MAX_SEGMENT_PAIRS = 20_000


@dataclass
class _Segment:
    """One piece of a fast copy: presence, point range, cycle range, address (in alignment units)."""

    tensor: int
    width: int  # bytes rounded up to the alignment, in alignment units
    present: object  # BoolVar or 1
    point_lo: object
    point_hi: object
    points_within: tuple[int, int]  # the widest point range it may take
    cycle_lo: object
    cycle_hi: object
    offset: object  # IntVar (alignment units), or an int when the access is fixed (window search)
    shape: "SegmentShape | None" = None  # what every plan guarantees about its cycles (pair pruning)
    key: tuple = ()  # (tensor, access index, kind) as in :func:`segment_shapes`


@dataclass
class StreamTimeVars:
    """The level model's handles (``levels``), the segments and the offsets per access.

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> model, v = build_stream_time_model(p)
    >>> sorted(v.offset), len(v.segments)  # weight 0: its read and its prefetch; tensor 1: its write
    ([(0, 1), (1, 0)], 3)
    """

    levels: LevelVars
    alignment_bytes: int = 1
    offset: dict = field(default_factory=dict)  # (t, j) -> IntVar: the copy's address / alignment
    segments: list = field(default_factory=list)
    op_end: list = field(default_factory=list)  # per op, an IntVar equal to its end (intervals take one variable)

    def extract(self, solver: cp_model.CpSolver) -> LevelSolution:
        """The plan with its fast offsets, one per :func:`fast_pieces` entry (zero-byte ones at 0)."""
        s = self.levels.extract(solver)
        p = self.levels.problem
        offsets = []
        for t, lo, hi in fast_pieces(p, s):
            at = 0
            if p.tensor_bytes[t]:
                j = next(j for j, a in enumerate(p.accesses(t)) if p.is_real(a) and lo <= 2 * a + 1 < hi)
                y = self.offset[t, j]
                at = self.alignment_bytes * (y if isinstance(y, int) else solver.value(y))
            offsets.append(at)
        return replace(s, fast_offsets=tuple(offsets))


def segment_count(problem: LevelProblem) -> int:
    """An upper bound on the segments the model may have: per sized tensor, per real access,
    the access, its kept gap, its prefetch and an eviction.

    Examples
    --------
    >>> segment_count(LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1)))
    8
    """
    return sum(4 * sum(1 for a in problem.accesses(t) if problem.is_real(a))
               for t in range(problem.num_tensors) if problem.tensor_bytes[t])


@dataclass(frozen=True)
class SegmentShape:
    """What holds for a segment in every plan of the merged order, whatever the model decides.

    ``points``: the widest point range it may take. ``ends_by`` / ``ends_kind``: ops X such that
    the segment's last cycle is at most the ``"start"`` or ``"end"`` of some op of X (a bit mask
    of op indices; None when no op bounds it, e.g. an eviction released by the plan's end).
    ``after_end`` / ``after_start``: ops x whose end / start is at most the segment's first cycle
    in every plan (bit masks).
    """

    points: tuple[int, int]
    ends_by: int | None
    ends_kind: str
    after_end: int
    after_start: int

    def always_before(self, other: "SegmentShape") -> bool:
        """Whether this segment is before ``other`` on the point axis and in cycles in every plan,
        so the by-address rule between them holds whatever their addresses.

        Examples
        --------
        >>> a = SegmentShape((1, 2), 0b01, "end", 0, 0)  # op 0's access
        >>> b = SegmentShape((3, 4), 0b10, "end", 0b01, 0b11)  # op 1's, which follows op 0
        >>> a.always_before(b), b.always_before(a)
        (True, False)
        """
        if self.ends_by is None or self.points[1] > other.points[0]:
            return False
        guaranteed = other.after_end if self.ends_kind == "end" else other.after_start
        return not self.ends_by & ~guaranteed


def _precedence(problem: LevelProblem) -> tuple[list[int], list[int]]:
    """Per op y, the bit masks of the ops x with ``x <= y`` (the op itself or a predecessor) and
    ``x < y`` (a predecessor): the model's stream order and data dependencies, closed
    transitively. Every plan starts y after the end of every strict predecessor.

    Examples
    --------
    >>> p = LevelProblem((1, 1, 1), ((), (), (0,)), ((0,), (), ()), (4,), (8, 99), (4, 1), op_streams=(0, 1, 1))
    >>> _precedence(p)  # op 2 after op 1 (its stream) and op 0 (the producer of what it reads)
    ([1, 2, 7], [0, 0, 3])
    """
    weak, strict = [], []
    last: dict[int, int] = {}
    for i in range(problem.num_ops):
        s = problem.stream_of(i)
        before = {last[s]} if s in last else set()
        before |= {problem.accesses(t)[0] for t in problem.reads[i] if problem.is_real(problem.accesses(t)[0])}
        mask = 0
        for a in before:
            mask |= weak[a]
        strict.append(mask)
        weak.append(mask | 1 << i)
        last[s] = i
    return weak, strict


def _all_of(masks: list[int], ops) -> int:
    out = -1
    for k in ops:
        out &= masks[k]
    return out


def segment_shapes(problem: LevelProblem) -> dict[tuple[int, int, str], SegmentShape]:
    """The shape of every segment the model may build, by ``(tensor, access index, kind)``, kind
    ``access``, ``kept``, ``prefetch`` or ``evict`` (an eviction after access ``j - 1``, before
    access ``j``): its points as :func:`add_segments` gives them and what bounds its cycles (its
    access op, the producer or reader before a kept gap or an eviction, the window of ops that
    may trigger a prefetch or release an eviction).

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> sorted(segment_shapes(p))  # weight 0 (slow-born) read by op 0, tensor 1 written by op 1
    [(0, 1, 'access'), (0, 1, 'prefetch'), (1, 0, 'access')]
    """
    weak, strict = _precedence(problem)
    n = problem.num_ops
    shapes = {}
    for t in range(problem.num_tensors):
        if not problem.tensor_bytes[t] or problem.tensor_bytes[t] > problem.capacity_bytes[0]:
            continue
        acc = problem.accesses(t)
        for j, op in enumerate(acc):
            if problem.is_real(op):
                shapes[t, j, "access"] = SegmentShape((2 * op + 1, 2 * op + 2), 1 << op, "end", strict[op], weak[op])
            if j == 0:
                continue
            prev = acc[j - 1]
            if problem.is_real(op) and problem.is_real(prev):
                shapes[t, j, "kept"] = SegmentShape((2 * prev + 2, 2 * op + 1), 1 << op, "start", weak[prev],
                                                    weak[prev])
            if problem.is_real(op):  # triggered by an op of [prev, op - 1] (prev = -1: from cycle 0)
                after = _all_of(weak, range(prev, op)) if prev >= 0 else 0
                shapes[t, j, "prefetch"] = SegmentShape((2 * prev + 2, 2 * op + 1), 1 << op, "start", after, after)
            if problem.is_real(prev):  # released by an op of [prev + 1, op] (op = n: the plan's end)
                window = sum(1 << k for k in range(prev + 1, op + 1)) if op < n else None
                shapes[t, j, "evict"] = SegmentShape((2 * prev + 2, 2 * op + 1), window, "start", weak[prev],
                                                     weak[prev])
    return shapes


def segment_pairs(problem: LevelProblem) -> int:
    """An upper bound on the pairs of segments the model constrains: pairs of segments it may
    build, less those one of which is before the other on the point axis and in cycles in every
    plan (:meth:`SegmentShape.always_before`: the rule holds for them whatever the addresses).

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> segment_pairs(p)  # 3 segments, 3 pairs; weight 0's prefetch ends when its read starts
    2
    """
    shapes = list(segment_shapes(problem).values())
    return sum(1 for n, a in enumerate(shapes) for b in shapes[n + 1:]
               if not (a.always_before(b) or b.always_before(a)))


def time_model_fits(problem: LevelProblem) -> bool:
    """Whether the cycle-time model is built for ``problem``: several streams, unshared,
    unsplit (expand first), and at most :data:`MAX_SEGMENT_PAIRS` pairs of segments.

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> time_model_fits(p), time_model_fits(replace(p, op_streams=()))
    (True, False)
    """
    return time_model_misfit(problem) is None


def windows_fit(problem: LevelProblem) -> bool:
    """Whether window search in cycle time (:mod:`~solvers.memory.levels.stream_time_windows`)
    takes ``problem``: what the one model takes, at any number of segment pairs.

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> windows_fit(p), windows_fit(replace(p, op_streams=()))
    (True, False)
    """
    return (problem.multi_stream and not problem.shared_bandwidth and not problem.splits
            and exact_model_fits(problem))


def time_model_misfit(problem: LevelProblem) -> str | None:
    """Why the cycle-time model is not built for ``problem`` (None when it is): the reason
    ``memory.json`` and the report give.

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> time_model_misfit(p) is None, time_model_misfit(replace(p, op_streams=()))
    (True, 'one stream')
    """
    if not problem.multi_stream:
        return "one stream"
    if problem.shared_bandwidth:
        return "shared bandwidth"
    if problem.splits:
        return "split groups (the model takes a split expansion)"
    if not exact_model_fits(problem):
        return "bandwidth fractions too fine for an exact CP-SAT roofline"
    pairs = segment_pairs(problem)
    if pairs > MAX_SEGMENT_PAIRS:
        return f"{pairs} segment pairs that may meet, above the {MAX_SEGMENT_PAIRS} the model is built for"
    return None


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def build_stream_time_model(problem: LevelProblem, upper_cycles: int | None = None, alignment_bytes: int = 1,
                            hint: LevelSolution | None = None,
                            prune: bool | None = None) -> tuple[cp_model.CpModel, StreamTimeVars]:
    """The cycle-time model of an unsplit several-stream problem, ``makespan <= upper_cycles``.

    ``hint`` (a valid plan with its own ``fast_offsets``, as :func:`validate_levels` accepts
    it) warm-starts the search. ``prune``: leave out the rule between two segments one of which
    is before the other on the point axis and in cycles in every plan (the same solutions, fewer
    constraints); default (None): only when the full model would have more than
    :data:`MAX_SEGMENT_PAIRS` pairs, so a model that fitted before is built as before.

    Examples
    --------
    Op 0 (stream 0) reads weight 0 fast after an 8-cycle prefetch; op 1 (stream 1) writes
    tensor 1 fast. The 16-byte level holds both, so op 1 need not wait for op 0's free (the
    point-axis model makes it wait: 16 cycles):

    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> model, v = build_stream_time_model(p)
    >>> _ = model.add(v.levels.fast[0, 1] == 1); _ = model.add(v.levels.fast[1, 0] == 1)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1; _ = solver.solve(model)
    >>> s = v.extract(solver)
    >>> solver.value(v.levels.makespan), sorted(s.fast_offsets), validate_levels(p, s)
    (12, [0, 8], [])
    """
    if not problem.multi_stream or problem.splits or problem.shared_bandwidth:
        raise ValueError("the cycle-time model is for unsplit, unshared several-stream problems")
    if not exact_model_fits(problem):
        raise ValueError("bandwidth fractions too fine for an exact CP-SAT roofline (64-bit overflow)")
    model, lv = build_level_decisions(problem, upper_cycles, hint)
    v = StreamTimeVars(lv, max(1, int(alignment_bytes)))
    add_segments(model, problem, v)
    if prune is None:
        n = len(v.segments)
        prune = n * (n - 1) // 2 > MAX_SEGMENT_PAIRS
    add_address_order(model, problem, v, prune)
    if hint is not None:
        hint_access_offsets(model, problem, v, hint)
    return model, v


def add_segments(model: cp_model.CpModel, problem: LevelProblem, v: StreamTimeVars,
                 fixed_offsets: dict | None = None) -> None:
    """The offsets per fast access (one per copy: equal across a kept gap) and every segment.

    ``fixed_offsets`` (window search, :mod:`~solvers.memory.levels.stream_time_windows`): the
    offset, in alignment units, of every fast access of an op the level model does not decide
    (``v.levels.op_is_free``), taken from the plan the window is built around.

    Examples
    --------
    A 16-byte weight read fast from a 16-byte level at 8-byte alignment sits at address 0:

    >>> p = LevelProblem((4, 4), ((0,), ()), ((), ()), (16,), (16, 99), (4, 1), op_streams=(0, 1))
    >>> model, v = build_stream_time_model(p, alignment_bytes=8)
    >>> [(s.tensor, s.width) for s in v.segments]
    [(0, 2), (0, 2)]
    """
    lv, a = v.levels, v.alignment_bytes
    cap = problem.capacity_bytes[0]
    shapes = segment_shapes(problem)
    v.op_end = []
    for i in range(problem.num_ops):
        end = model.new_int_var(0, lv.horizon, f"end_{i}")
        model.add(end == lv.end(i))
        v.op_end.append(end)
    for t in range(problem.num_tensors):
        size = problem.tensor_bytes[t]
        if not size:
            continue
        acc = problem.accesses(t)
        for j, op in enumerate(acc):
            x = lv.fast[t, j]
            if not problem.is_real(op) or (isinstance(x, int) and not x):
                continue
            if size > cap:  # never fits: the access is slow
                model.add(x == 0) if not isinstance(x, int) else model.add_bool_or([])
                continue
            if fixed_offsets is not None and not lv.op_is_free(op):
                v.offset[t, j] = fixed_offsets[t, j]
            else:
                v.offset[t, j] = model.new_int_var(0, (cap - size) // a, f"offset_{t}_{j}")
        width = _ceil(size, a)
        for j, op in enumerate(acc):
            if (t, j) not in v.offset:
                continue
            y = v.offset[t, j]
            _segment(v, t, width, lv.fast[t, j], 2 * op + 1, 2 * op + 2, (2 * op + 1, 2 * op + 2),
                     lv.start[op], v.op_end[op], y, shapes[t, j, "access"], (t, j, "access"))
            if j == 0:
                continue
            prev = acc[j - 1]
            k = lv.kept.get((t, j), 0)
            if not (isinstance(k, int) and not k):
                _same_address(model, y, v.offset[t, j - 1], k)
                _segment(v, t, width, k, 2 * prev + 2, 2 * op + 1, (2 * prev + 2, 2 * op + 1),
                         v.op_end[prev], lv.start[op], y, shapes[t, j, "kept"], (t, j, "kept"))
            if (t, j) in lv.prefetch:
                base = lv.trigger_base[t, j]
                lo = 2 * (base + lv.trigger[t, j]) + 2
                _segment(v, t, width, lv.prefetch[t, j], lo, 2 * op + 1, (2 * base + 2, 2 * op + 1),
                         lv.dma_start["p", t, j], lv.start[op], y, shapes[t, j, "prefetch"], (t, j, "prefetch"))
        for (t2, j), ev in lv.evict.items():
            if t2 != t or (t, j - 1) not in v.offset:
                continue
            prev = acc[j - 1]
            rel = prev + 1 + lv.release[t, j]
            widest = 2 * acc[j] + 1
            _segment(v, t, width, ev, 2 * prev + 2, 2 * rel + 1, (2 * prev + 2, widest),
                     v.op_end[prev], lv.dma_start["e", t, j] + problem.dma_cycles(t), v.offset[t, j - 1],
                     shapes[t, j, "evict"], (t, j, "evict"))


def _same_address(model: cp_model.CpModel, y, y_prev, kept) -> None:
    """A kept gap's two accesses share one address (folded when both are fixed)."""
    if isinstance(y, int) and isinstance(y_prev, int):
        if y != y_prev:
            model.add_bool_or([]) if isinstance(kept, int) else model.add(kept == 0)
        return
    model.add(y == y_prev).only_enforce_if(kept)


def _segment(v: StreamTimeVars, t: int, width: int, present, point_lo, point_hi, within, cycle_lo, cycle_hi,
             offset, shape: SegmentShape, key: tuple) -> None:
    if point_hi is not None and isinstance(point_lo, int) and isinstance(point_hi, int) and point_lo >= point_hi:
        return
    if not (shape.points[0] <= within[0] and within[1] <= shape.points[1]):  # within the shape, or pruning is unsound
        raise ValueError(f"segment of tensor {t}: points {within} but its shape says {shape.points}")
    v.segments.append(_Segment(t, width, present, point_lo, point_hi, within, cycle_lo, cycle_hi, offset, shape,
                               key))


def add_address_order(model: cp_model.CpModel, problem: LevelProblem, v: StreamTimeVars,
                      prune: bool = False) -> None:
    """The by-address rule between every two segments, and the redundant capacity checks.

    Two present segments are apart in address, or one is before the other on the point axis
    and in cycles. Segments whose widest point ranges cannot meet are ordered on the point axis
    already: only address or cycles are left to choose. ``prune``: no rule between two segments
    one of which is before the other on both axes in every plan (:meth:`SegmentShape.always_before`:
    its widest points end where the other's begin, and it ends by an op that the other's first
    cycle follows through the stream order and data dependencies); the rule holds for them
    whatever the addresses, so the model keeps exactly its solutions.

    Examples
    --------
    Two 8-byte tensors written fast by ops of two streams, in an 8-byte level: one waits for
    the other (8 cycles, not 4):

    >>> p = LevelProblem((4, 4), ((), ()), ((0,), (1,)), (8, 8), (8, 99), (4, 1), op_streams=(0, 1),
    ...                  live_out=())
    >>> model, v = build_stream_time_model(p)
    >>> _ = model.add(v.levels.fast[0, 0] == 1); _ = model.add(v.levels.fast[1, 0] == 1)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1; _ = solver.solve(model)
    >>> solver.value(v.levels.makespan)
    8
    """
    segs = v.segments
    cap_units = problem.capacity_bytes[0] // v.alignment_bytes
    lits = [presence_literal(s.present) for s in segs]
    for n, s in enumerate(segs):
        for m in range(n + 1, len(segs)):
            u = segs[m]
            if not (prune and (s.shape.always_before(u.shape) or u.shape.always_before(s.shape))):
                add_segment_pair(model, s, u, lits[n], lits[m], f"{n}_{m}")
    horizon = v.levels.horizon
    time_boxes, address_boxes, demands, point_boxes = [], [], [], []
    for n, s in enumerate(segs):
        length = model.new_int_var(0, horizon, f"seg_cycles_{n}")
        time_boxes.append(interval_if(model, s.cycle_lo, length, s.cycle_hi, s.present, f"seg_time_{n}"))
        address_boxes.append(interval_if(model, s.offset, s.width, None, s.present, f"seg_addr_{n}"))
        demands.append(problem.tensor_bytes[s.tensor])
        lo, hi = s.points_within
        span = model.new_int_var(0, hi - lo, f"seg_points_{n}")
        point_boxes.append(interval_if(model, s.point_lo, span, s.point_hi, s.present, f"seg_pts_{n}"))
    if segs:
        model.add_no_overlap_2d(time_boxes, address_boxes)
        model.add_cumulative(time_boxes, demands, problem.capacity_bytes[0])
        model.add_cumulative(point_boxes, demands, problem.capacity_bytes[0])
        if cap_units <= 0:
            model.add_bool_or([])


def presence_literal(present):
    """A segment's presence as a literal, None when it is surely present (the constant 1)."""
    return None if isinstance(present, int) else present


def add_segment_pair(model: cp_model.CpModel, s: _Segment, u: _Segment, ls, lu, name: str) -> None:
    """``s`` and ``u`` apart in address, or one before the other on points and in cycles."""
    both = [x.Not() for x in (ls, lu) if x is not None]
    options = []
    for first, second, tag in ((s, u, "l"), (u, s, "r")):
        if first.offset is second.offset:
            continue  # one variable: never apart
        if isinstance(first.offset, int) and isinstance(second.offset, int):
            if first.offset + first.width <= second.offset:
                return  # fixed apart: no rule needed
            continue
        left = model.new_bool_var(f"apart_{tag}_{name}")
        model.add(first.offset + first.width <= second.offset).only_enforce_if(left)
        options.append(left)
    for first, second, tag in ((s, u, "l"), (u, s, "r")):
        if first.points_within[1] <= second.points_within[0]:  # before on points whatever is chosen
            before = model.new_bool_var(f"before_{tag}_{name}")
            model.add(first.cycle_hi <= second.cycle_lo).only_enforce_if(before)
            options.append(before)
        elif first.points_within[0] < second.points_within[1]:  # may be before on points
            before = model.new_bool_var(f"before_{tag}_{name}")
            model.add(first.point_hi <= second.point_lo).only_enforce_if(before)
            model.add(first.cycle_hi <= second.cycle_lo).only_enforce_if(before)
            options.append(before)
    model.add_bool_or(options + both)


def hint_access_offsets(model: cp_model.CpModel, problem: LevelProblem, v: StreamTimeVars,
                        hint: LevelSolution) -> None:
    """Hint each access's offset from the piece of ``hint.fast_offsets`` that holds it."""
    if not hint.fast_offsets:
        return
    for n, (t, lo, hi) in enumerate(fast_pieces(problem, hint)):
        for j, op in enumerate(problem.accesses(t)):
            if (t, j) in v.offset and not isinstance(v.offset[t, j], int) and lo <= 2 * op + 1 < hi:
                model.add_hint(v.offset[t, j], hint.fast_offsets[n] // v.alignment_bytes)


def _checked(problem: LevelProblem, expanded: LevelProblem, found: LevelSolution, factors) -> LevelSolution:
    """``found`` re-timed by the replay with its offsets (never later), validated."""
    times = replay_levels(expanded, found)
    found = replace(timed_by(found, times, found.fast_offsets), split_factors=factors)
    errors = validate_levels(problem, found)
    if errors:
        raise ValueError(f"the cycle-time model's plan does not validate: {errors[:3]}")
    return found


def _lowest_footprint(model: cp_model.CpModel, v: StreamTimeVars, solver: cp_model.CpSolver, makespan: int,
                      options: SolveOptions, budget: Budget, amount: float) -> LevelSolution | None:
    """Second, lexicographic stage: the same model with ``makespan`` at most the first stage's,
    minimizing the fast level's footprint (highest address + size), hinted by the first stage's
    solution in full; None when it finds nothing."""
    if not v.segments:
        return None
    values = [solver.value(model.get_int_var_from_proto_index(i)) for i in range(len(model.proto.variables))]
    model.clear_hints()
    for i, x in enumerate(values):
        model.add_hint(model.get_int_var_from_proto_index(i), x)
    a = v.alignment_bytes
    peak = model.new_int_var(0, v.levels.problem.capacity_bytes[0], "fast_footprint")
    for s in v.segments:
        reaches = model.add(peak >= a * s.offset + v.levels.problem.tensor_bytes[s.tensor])
        if not isinstance(s.present, int):
            reaches.only_enforce_if(s.present)
    model.add(v.levels.makespan <= makespan)
    model.minimize(peak)
    status, second, _ = budget.run_cpsat(model, options, amount, "stream_time_footprint", interleave=False)
    return v.extract(second) if status.has_solution else None


def solve_stream_time(problem: LevelProblem, options: SolveOptions = SolveOptions(), budget: Budget | None = None,
                      amount: float | None = None, incumbent: LevelSolution | None = None,
                      alignment_bytes: int = 1, prune: bool | None = None) -> SolveResult[LevelSolution]:
    """The shortest plan of ``problem`` under the by-address memory order, timed in cycles.

    ``problem`` may have split groups: the model is built for ``incumbent``'s split factors
    (fixed). ``incumbent`` (a plan with its own ``fast_offsets``) is the hint and the upper
    bound, so the result is never longer. The result's solution is re-timed by the replay with
    its offsets and validated (an invalid one is an internal bug: ValueError). ``budget`` /
    ``amount``: the deterministic units granted (default: ``options.time_limit_s`` of the
    memory-levels calibration). Status OPTIMAL and the bound are the model's: for the fixed
    merged order, streams, split factors, capacity and alignment (module docstring).

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> r = solve_stream_time(p, SolveOptions(time_limit_s=5))
    >>> r.status.value, r.objective, validate_levels(p, r.solution)
    ('OPTIMAL', 8, [])
    """
    t0 = time.perf_counter()
    factors = incumbent.split_factors if incumbent is not None else ()
    expanded = resolve_problem(problem, incumbent) if incumbent is not None else problem
    if not time_model_fits(expanded) or alignment_bytes > expanded.capacity_bytes[0]:
        return failure_result(Status.UNKNOWN, "stream-time", time.perf_counter() - t0, reason="does not fit")
    hint = replace(incumbent, split_factors=()) if incumbent is not None else None
    upper = hint.makespan_cycles if hint is not None else None
    model, v = build_stream_time_model(expanded, upper, alignment_bytes, hint, prune)
    if budget is None:
        budget = Budget.of(options, MEMORY_LEVELS, t0)
    amount = budget.left if amount is None else amount
    before = budget.used
    status, solver, _ = budget.run_cpsat(model, options, MAKESPAN_SHARE * amount, "stream_time", interleave=False)
    if not status.has_solution:
        return failure_result(status, "stream-time", time.perf_counter() - t0, **budget.stats())
    found = _checked(problem, expanded, v.extract(solver), factors)
    lowest = _lowest_footprint(model, v, solver, found.makespan_cycles, options, budget,
                               amount - (budget.used - before))
    if lowest is not None:
        lowest = _checked(problem, expanded, lowest, factors)
        if lowest.makespan_cycles <= found.makespan_cycles:
            found = lowest
    bound = min(integer_objective_bound(solver), found.makespan_cycles)
    proven = status is Status.OPTIMAL or bound >= found.makespan_cycles
    return SolveResult(Status.OPTIMAL if proven else Status.FEASIBLE, found.makespan_cycles,
                       found.makespan_cycles if proven else bound, found, time.perf_counter() - t0, "stream-time",
                       {"segments": len(v.segments), **budget.stats()})
