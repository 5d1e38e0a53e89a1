"""Several streams: the cycle-time level model in windows, for devices too large for one model.

The exact cycle-time model (:mod:`~solvers.memory.levels.stream_time`) constrains every two
segments of fast copies that may meet: on 301 ops that is about 1.1 M pairs, so it is not built.
Here windows of consecutive ops of the merged order are re-optimised in cycle time around a valid
plan with its own fast offsets (the *incumbent*), the rest of the plan held as it is:

* **decisions**: the level model's decisions of the window's accesses and the gaps next to them
  are free, every other one is the incumbent's (:func:`~solvers.memory.levels.cpsat.build_level_decisions`
  with ``fixed`` and ``free_ops``); the fast accesses of the other ops keep their offsets;
* **times**: ops before the window keep their cycles, ops after it keep theirs plus one
  ``shift <= 0`` (and so do the DMAs frozen with them); every cycle the window decides (a window
  op's start and end, a DMA the window may move) lies in ``[T0, T1 + shift]``, the span those
  cycles take in the incumbent, so the incumbent is a solution of the window model;
* **what crosses the window**: the by-address rule (apart in address, or one before the other on
  the point axis and in cycles) between every segment the window decides and every segment that
  may meet it: a pair is left out only when bounds on both axes (the fixed segments' exact
  points and cycles, the window's widest points and ``[T0, T1]``) put one before the other in
  every solution. Two fixed segments keep their incumbent relation except where one is frozen
  and the other shifted: those pairs bound the shift from below (one linear bound).

So every solution of a window model is a plan :func:`~solvers.memory.levels.validate.validate_levels`
accepts with its offsets (each is still re-timed by the replay with its offsets and validated,
and kept only when strictly shorter): window search never returns a plan longer than its start.
A window proves nothing about the problem (its status is FEASIBLE; the bound given is
:func:`~solvers.memory.levels.validate.makespan_lower_bound`, the streams' busy time).

Budget: deterministic units, each window's solve capped at :data:`WINDOW_DTIME`; windows of
``window_ops`` overlap by half and sweep left to right, and double after a sweep without
improvement (up to ``max_window_ops``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget, build_units
from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.cpsat_support import interval_if
from solvers.memory.levels.cpsat import LevelVars, build_level_decisions, exact_model_fits
from solvers.memory.levels.problem import LevelProblem, LevelSolution, TransferKind
from solvers.memory.levels.stream_offsets import timed_by
from solvers.memory.levels.stream_time import (StreamTimeVars, add_segment_pair, add_segments, hint_access_offsets,
                                               presence_literal)
from solvers.memory.levels.validate import fast_pieces, makespan_lower_bound, replay_levels, validate_levels

__all__ = ["WINDOW_OPS", "WINDOW_DTIME", "access_offsets", "build_window_model", "solve_stream_time_windows"]

# Ops per window at the first sweep (doubled after a sweep without improvement, up to 4x).
WINDOW_OPS = 12
# Deterministic units one window's solve may use at most.
WINDOW_DTIME = 0.05
# Of which completing the hint may take (measured 0.004-0.008 units on 301 ops).
HINT_SHARE = 0.3
# A window's build (the level decisions of every op, its segments and pairs) and CP-SAT's
# presolve of it, charged as counted work: segments + pairs + ops per unit of the memory-levels
# calibration (0.05 units per second). Measured 2026-11-28 on the 301-op two-branch benchmark at
# load 13: 1,080 segments and 6,656 / 10,778 / 13,598 pairs took 1-2.5 s before the search.
# Re-measured 2026-11-29 (load 12.7-13.3, CPU seconds of build_window_model plus CP-SAT up to the
# end of presolve, probing off; 12-op windows at four places of two-branch instances of 25, 81,
# 161 and 301 ops, 16 windows): 100,942-352,393 elements per unit, median 271,304; the slowest was
# the last window of 301 ops (8,957 elements, 1.77 s). Kept at the slowest: a window is never
# charged less than its build takes (how: docs/memory.md, "Window search in cycle time").
WINDOW_ELEMENTS_PER_UNIT = 100_000


def access_offsets(problem: LevelProblem, solution: LevelSolution, alignment_bytes: int) -> dict | None:
    """``(tensor, access index) -> offset`` in alignment units of every fast access of
    ``solution`` (from its ``fast_offsets``), or None when an offset is not a multiple of the
    alignment (the model counts addresses in alignment units).

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (), (0, 0), (8, 4),
    ...                   fast_offsets=(0, 8))
    >>> access_offsets(p, s, 4), access_offsets(p, s, 16)
    ({(0, 1): 0, (1, 0): 2}, None)
    """
    a = max(1, int(alignment_bytes))
    out = {}
    for n, (t, lo, hi) in enumerate(fast_pieces(problem, solution)):
        at = solution.fast_offsets[n]
        if problem.tensor_bytes[t] and at % a:
            return None
        for j, op in enumerate(problem.accesses(t)):
            if problem.is_real(op) and lo <= 2 * op + 1 < hi:
                out[t, j] = at // a
    return out


@dataclass
class _Bounds:
    """Per segment: the widest points (lo, hi), the earliest first cycle, the latest last cycle,
    whether the window decides nothing of it (``static``), and a static segment's cycle classes
    (``c``: a frozen constant, ``s``: a constant plus the shift)."""

    point_lo: np.ndarray
    point_hi: np.ndarray
    cycle_lo_min: np.ndarray
    cycle_hi_max: np.ndarray
    static: np.ndarray
    lo_shifted: np.ndarray
    hi_frozen: np.ndarray


def _op_time(lv: LevelVars, fixed: LevelSolution, op: int, end: bool) -> tuple[str, int]:
    """``("c", cycle)`` for an op before the window, ``("s", cycle)`` after it (plus the shift),
    ``("v", 0)`` in it; the cycle is the incumbent's start or end."""
    if lv.op_is_free(op):
        return "v", 0
    at = fixed.op_start[op] + (fixed.op_duration[op] if end else 0)
    return ("c" if op < lv.free_ops.start else "s"), at


def _dma_time(lv: LevelVars, kind: TransferKind, t: int, j: int, end: bool, cycles: int) -> tuple[str, int]:
    """The class of a DMA's start (or end) as :meth:`LevelVars.preset_dma_start` sets it."""
    tr = lv.fixed_transfer(kind, t, j)
    preset = lv.preset_dma_start(tr)
    if preset is None:
        return "v", 0
    at = tr.start_cycle + (cycles if end else 0)
    return ("c" if isinstance(preset, int) else "s"), at


def _segment_times(problem: LevelProblem, lv: LevelVars, fixed: LevelSolution, key: tuple):
    """The classes and incumbent cycles of a segment's first and last cycle."""
    t, j, kind = key
    acc = problem.accesses(t)
    op = acc[j]
    if kind == "access":
        return _op_time(lv, fixed, op, False), _op_time(lv, fixed, op, True)
    if kind == "kept":
        return _op_time(lv, fixed, acc[j - 1], True), _op_time(lv, fixed, op, False)
    if kind == "prefetch":
        return _dma_time(lv, TransferKind.PREFETCH, t, j, False, 0), _op_time(lv, fixed, op, False)
    return _op_time(lv, fixed, acc[j - 1], True), _dma_time(lv, TransferKind.EVICT, t, j, True,
                                                            problem.dma_cycles(t))


def _exact_points(problem: LevelProblem, lv: LevelVars, seg) -> tuple[int, int]:
    """A segment's points when the window decides nothing of it (else its widest points)."""
    t, j, kind = seg.key
    if kind == "evict":
        tr = lv.fixed_transfer(TransferKind.EVICT, t, j)
        if tr is not None:
            return seg.points_within[0], 2 * tr.release_op + 1
    return seg.points_within


def _bounds(problem: LevelProblem, lv: LevelVars, fixed: LevelSolution, segs, least: int, t0: int,
            t1: int) -> _Bounds:
    n = len(segs)
    b = _Bounds(*(np.zeros(n, dtype=np.int64) for _ in range(4)), np.zeros(n, dtype=bool),
                np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
    for k, seg in enumerate(segs):
        (lo_c, lo_at), (hi_c, hi_at) = _segment_times(problem, lv, fixed, seg.key)
        static = isinstance(seg.present, int) and isinstance(seg.offset, int) and "v" not in (lo_c, hi_c)
        b.point_lo[k], b.point_hi[k] = _exact_points(problem, lv, seg) if static else seg.points_within
        b.cycle_lo_min[k] = t0 if lo_c == "v" else lo_at + (least if lo_c == "s" else 0)
        b.cycle_hi_max[k] = t1 if hi_c == "v" else hi_at
        b.static[k] = static
        b.lo_shifted[k] = lo_c == "s"
        b.hi_frozen[k] = hi_c == "c"
    return b


def _window_span(problem: LevelProblem, lv: LevelVars, fixed: LevelSolution) -> tuple[int, int]:
    """``(T0, T1)``: the first and last cycle the incumbent gives anything the window decides
    (its ops, and the DMAs whose start the model leaves free)."""
    cycles = []
    for op in lv.free_ops:
        cycles += [fixed.op_start[op], fixed.op_start[op] + fixed.op_duration[op]]
    for tr in fixed.transfers:
        if lv.preset_dma_start(lv.fixed_transfer(tr.kind, tr.tensor, tr.gap)) is None:
            cycles += [tr.start_cycle, tr.end_cycle]
    return min(cycles), max(cycles)


def _restrict_times(model: cp_model.CpModel, problem: LevelProblem, lv: LevelVars, t0: int, t1: int) -> None:
    """Every cycle the window decides within ``[T0, T1 + shift]`` (the incumbent's span)."""
    shift = 0 if lv.shift is None else lv.shift
    for op in lv.free_ops:
        model.add(lv.start[op] >= t0)
        model.add(lv.end(op) <= t1 + shift)
    for (kind, t, j), start in lv.dma_start.items():
        if isinstance(start, int) or lv.preset_dma_start(lv.fixed_transfer(
                TransferKind.PREFETCH if kind == "p" else TransferKind.EVICT, t, j)) is not None:
            continue
        present = (lv.prefetch if kind == "p" else lv.evict)[t, j]
        lits = [] if isinstance(present, int) else [present]
        model.add(start >= t0).only_enforce_if(lits)
        model.add(start + problem.dma_cycles(t) <= t1 + shift).only_enforce_if(lits)


def _static_shift_floor(b: _Bounds, segs, fixed_lo: dict, fixed_hi: dict) -> int | None:
    """The least shift that keeps every two fixed segments at overlapping addresses in order: a
    frozen one before a shifted one on the point axis must still end first in cycles."""
    first = [k for k in range(len(segs)) if b.static[k] and b.hi_frozen[k]]
    second = [k for k in range(len(segs)) if b.static[k] and b.lo_shifted[k]]
    if not first or not second:
        return None
    f, s = np.array(first), np.array(second)
    off = np.array([seg.offset if isinstance(seg.offset, int) else 0 for seg in segs], dtype=np.int64)
    width = np.array([seg.width for seg in segs], dtype=np.int64)
    overlap = (off[f][:, None] < off[s][None, :] + width[s][None, :]) & \
              (off[s][None, :] < off[f][:, None] + width[f][:, None])
    ordered = b.point_hi[f][:, None] <= b.point_lo[s][None, :]
    need = np.array([fixed_hi[k] for k in first])[:, None] - np.array([fixed_lo[k] for k in second])[None, :]
    mask = overlap & ordered & (f[:, None] != s[None, :])
    return int(need[mask].max()) if mask.any() else None


def _first_shifted_cycle(lv: LevelVars, fixed: LevelSolution) -> int:
    """Minus the first cycle of an op or DMA shifted with the ops after the window: with several
    streams one may have nothing before it, and the shift must not move it before cycle 0."""
    firsts = [fixed.op_start[op] for op in range(lv.free_ops.stop, lv.problem.num_ops)]
    firsts += [tr.start_cycle for tr in fixed.transfers
               if not isinstance(lv.preset_dma_start(lv.fixed_transfer(tr.kind, tr.tensor, tr.gap)), (int, type(None)))]
    return -min(firsts, default=0)


def _meeting_pairs(b: _Bounds, segs) -> list[tuple[int, int]]:
    """Pairs with a segment the window decides that may meet (neither surely before the other)."""
    pairs = []
    n = len(segs)
    for k in np.flatnonzero(~b.static):
        others = np.arange(n)
        keep = (others != k) & ((~b.static) <= (others > k))  # each pair of window segments once
        before = (b.point_hi[k] <= b.point_lo) & (b.cycle_hi_max[k] <= b.cycle_lo_min)
        after = (b.point_hi <= b.point_lo[k]) & (b.cycle_hi_max <= b.cycle_lo_min[k])
        for m in np.flatnonzero(keep & ~before & ~after):
            s, u = segs[k], segs[m]
            if s.shape.always_before(u.shape) or u.shape.always_before(s.shape):
                continue
            pairs.append((int(k), int(m)))
    return pairs


def build_window_model(problem: LevelProblem, incumbent: LevelSolution, free_ops: range, alignment_bytes: int = 1,
                       offsets: dict | None = None) -> tuple[cp_model.CpModel, StreamTimeVars, dict]:
    """The cycle-time model of the window ``free_ops`` around ``incumbent`` (a valid plan with its
    own fast offsets), ``makespan <= incumbent's``; returns the model, its handles and figures
    (segments, pairs constrained). ``offsets``: :func:`access_offsets` of ``incumbent``, when
    the caller has them."""
    lv_model, lv = build_level_decisions(problem, incumbent.makespan_cycles, incumbent, fixed=incumbent,
                                         free_ops=free_ops)
    model = lv_model
    v = StreamTimeVars(lv, max(1, int(alignment_bytes)))
    if offsets is None:
        offsets = access_offsets(problem, incumbent, v.alignment_bytes)
    add_segments(model, problem, v, offsets)
    t0, t1 = _window_span(problem, lv, incumbent)
    least = 0 if lv.shift is None else model.proto.variables[lv.shift.index].domain[0]
    _restrict_times(model, problem, lv, t0, t1)
    segs = v.segments
    b = _bounds(problem, lv, incumbent, segs, least, t0, t1)
    fixed_lo, fixed_hi = {}, {}
    for k, seg in enumerate(segs):
        if b.static[k]:
            (_, lo_at), (_, hi_at) = _segment_times(problem, lv, incumbent, seg.key)
            fixed_lo[k], fixed_hi[k] = lo_at, hi_at
    floor = _static_shift_floor(b, segs, fixed_lo, fixed_hi)
    if lv.shift is not None:
        model.add(lv.shift >= max(_first_shifted_cycle(lv, incumbent), floor if floor is not None else -lv.horizon))
    pairs = _meeting_pairs(b, segs)
    lits = [presence_literal(s.present) for s in segs]
    for k, m in pairs:
        add_segment_pair(model, segs[k], segs[m], lits[k], lits[m], f"{k}_{m}")
    _add_redundant(model, problem, v, sorted({k for pair in pairs for k in pair} | set(np.flatnonzero(~b.static))))
    hint_access_offsets(model, problem, v, incumbent)
    return model, v, {"segments": len(segs), "pairs": len(pairs)}


def _add_redundant(model: cp_model.CpModel, problem: LevelProblem, v: StreamTimeVars, which: list[int]) -> None:
    """The capacity over cycles and points and the (cycles, address) no-overlap, over the
    segments the window decides and those they may meet (a subset: still implied)."""
    time_boxes, address_boxes, demands, point_boxes = [], [], [], []
    for n in which:
        s = v.segments[n]
        length = model.new_int_var(0, v.levels.horizon, f"wseg_cycles_{n}")
        time_boxes.append(interval_if(model, s.cycle_lo, length, s.cycle_hi, s.present, f"wseg_time_{n}"))
        address_boxes.append(interval_if(model, s.offset, s.width, None, s.present, f"wseg_addr_{n}"))
        demands.append(problem.tensor_bytes[s.tensor])
        lo, hi = s.points_within
        span = model.new_int_var(0, hi - lo, f"wseg_points_{n}")
        point_boxes.append(interval_if(model, s.point_lo, span, s.point_hi, s.present, f"wseg_pts_{n}"))
    if time_boxes:
        model.add_no_overlap_2d(time_boxes, address_boxes)
        model.add_cumulative(time_boxes, demands, problem.capacity_bytes[0])
        model.add_cumulative(point_boxes, demands, problem.capacity_bytes[0])


def _checked(problem: LevelProblem, found: LevelSolution) -> LevelSolution | None:
    """``found`` re-timed by the replay with its offsets and validated; None if it fails (a
    safety net: every window solution is a valid plan)."""
    try:
        times = replay_levels(problem, found)
    except ValueError:
        return None
    found = timed_by(found, times, found.fast_offsets)
    return None if validate_levels(problem, found) else found


def _complete_hint(model: cp_model.CpModel, options: SolveOptions, budget: Budget, amount: float) -> bool:
    """Complete the incumbent's hint (the level decisions, times and offsets) with every
    auxiliary variable (the pairs' literals, segment lengths), by a solve with the hinted
    variables fixed: propagation only. Whether it did (else the hint stays as it was)."""
    status, solver, _ = budget.run_cpsat(model, options, amount, None, interleave=False,
                                         fix_variables_to_their_hinted_value=True, cp_model_probing_level=0)
    if not status.has_solution:
        return False
    values = [solver.value(model.get_int_var_from_proto_index(i)) for i in range(len(model.proto.variables))]
    model.clear_hints()
    for i, x in enumerate(values):
        model.add_hint(model.get_int_var_from_proto_index(i), x)
    return True


def _solve_window(problem: LevelProblem, best: LevelSolution, free_ops: range, alignment_bytes: int,
                  offsets: dict, options: SolveOptions, budget: Budget, amount: float) -> LevelSolution | None:
    """One window's model around ``best``: its build charged by size (:data:`WINDOW_ELEMENTS_PER_UNIT`),
    the hint completed, then solved with probing off (on 301 ops probing alone took 0.5 units
    per window and found nothing); its plan re-timed and validated, or None."""
    model, v, info = build_window_model(problem, best, free_ops, alignment_bytes, offsets)
    budget.charge(build_units(info["segments"] + info["pairs"] + problem.num_ops, WINDOW_ELEMENTS_PER_UNIT))
    before = budget.used
    _complete_hint(model, options, budget, HINT_SHARE * amount)
    status, solver, _ = budget.run_cpsat(model, options, max(1e-3, amount - (budget.used - before)), None,
                                         interleave=False, cp_model_probing_level=0)
    if not status.has_solution:
        return None
    return _checked(problem, v.extract(solver))


def solve_stream_time_windows(problem: LevelProblem, incumbent: LevelSolution, options: SolveOptions = SolveOptions(),
                              budget: Budget | None = None, amount: float | None = None, alignment_bytes: int = 1,
                              window_ops: int = WINDOW_OPS, window_dtime: float = WINDOW_DTIME,
                              max_window_ops: int | None = None) -> SolveResult[LevelSolution]:
    """Window search in cycle time from ``incumbent`` (unsplit problem; a valid plan timed by
    its own ``fast_offsets``): the plan returned is never longer, strictly shorter when a
    window improved it (FEASIBLE), or UNKNOWN with nothing when none did. Deterministic: the
    windows, their order and every solve's budget depend only on deterministic units.

    Examples
    --------
    Two ops on two streams whose 8-byte outputs the incumbent writes slow (4 + 8 cycles each
    at 1 byte per slow cycle); one window frees both, and the 16-byte level holds both fast:

    >>> p = LevelProblem((4, 4), ((), ()), ((0,), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1), live_out=())
    >>> slow = LevelSolution(((False,), (False,)), ((False,), (False,)), (), (0, 0), (8, 8), fast_offsets=())
    >>> r = solve_stream_time_windows(p, slow, SolveOptions(time_limit_s=5), window_ops=2)
    >>> r.status.value, r.objective, sorted(r.solution.fast_offsets)
    ('OPTIMAL', 4, [0, 8])
    """
    t0 = time.perf_counter()
    if problem.splits or not problem.multi_stream or problem.shared_bandwidth or not exact_model_fits(problem):
        raise ValueError("window search in cycle time is for unsplit, unshared several-stream problems")
    if budget is None:
        budget = Budget.of(options, MEMORY_LEVELS, t0)
    amount = budget.left if amount is None else amount
    start_used = budget.used
    best = incumbent
    n = problem.num_ops
    k = max(1, min(window_ops, n))
    top = max(k, min(n, max_window_ops if max_window_ops is not None else 4 * window_ops))
    windows = improved = 0
    while budget.used - start_used < amount and not budget.wall_expired():
        offsets = access_offsets(problem, best, alignment_bytes)
        if offsets is None:
            break
        better_in_sweep = False
        for lo in range(0, n, max(1, k // 2)):
            left = amount - (budget.used - start_used)
            if left <= 0 or budget.wall_expired():
                break
            found = _solve_window(problem, best, range(lo, min(n, lo + k)), alignment_bytes, offsets, options,
                                  budget, min(window_dtime, left))
            windows += 1
            if found is not None and found.makespan_cycles < best.makespan_cycles:
                best, improved, better_in_sweep = found, improved + 1, True
                offsets = access_offsets(problem, best, alignment_bytes)
                if offsets is None:
                    break
            if lo + k >= n:
                break
        if not better_in_sweep:
            if k >= top:
                break
            k = min(top, 2 * k)
    stats = {"windows": windows, "improved": improved, **budget.stats()}
    elapsed = time.perf_counter() - t0
    if best is incumbent:
        return failure_result(Status.UNKNOWN, "stream-time-windows", elapsed, **stats)
    bound = min(makespan_lower_bound(problem), best.makespan_cycles)
    status = Status.OPTIMAL if bound >= best.makespan_cycles else Status.FEASIBLE
    return SolveResult(status, best.makespan_cycles, bound, best, elapsed, "stream-time-windows", stats)
