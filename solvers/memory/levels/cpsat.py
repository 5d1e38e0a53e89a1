"""Exact level assignment with prefetch and eviction, as one CP-SAT model.

Notes
-----
Sets: ops ``i`` in their fixed order; tensors ``t`` with accesses ``a_0..a_m``
(:meth:`~solvers.memory.levels.problem.LevelProblem.accesses`); gaps ``j = 1..m``.

Variables (booleans unless noted):

* ``fast[t,j]``: access j is in fast memory (fixed 1 on fast-only ops, 0 when virtual);
* ``kept[t,j]``: the fast copy stays across gap j (both sides real);
  ``kept => fast[t,j-1]``, ``kept => fast[t,j]``;
* ``prefetch[t,j] = fast[t,j] - kept[t,j]`` (a fast access that was not kept);
* ``orig[t,j] = orig[t,j-1] AND kept[t,j]`` with ``orig[t,0] = fast[t,0]`` when produced;
  ``evict[t,j] = orig[t,j-1] - orig[t,j]`` (the producer's copy leaves at the first gap not kept);
* integers ``trigger[t,j]`` in ``[a_{j-1}, a_j - 1]``, ``release[t,j]`` in ``[a_{j-1}+1, a_j]``;
* integers ``start[i]``, ``dur[i]``, ``cf[i]``, ``cs[i]``; DMA starts; ``makespan``.

Constraints:

* roofline, for ``bw_f = p/q`` in lowest terms: ``p*cf >= q*FB``, ``p*cf <= q*FB + p - 1``
  (cf = ceil(FB/bw_f), exact for fractional bandwidths), same for cs with SB = bytes - FB;
  ``dur = max(compute, cf + cs)``; ``start[i+1] >= start[i] + dur[i]``;
* redundant time windows: ``dur[i] >= `` :func:`op_duration_lower_bounds`, and each start
  lies between the sum of those bounds before it and ``U`` minus the sum from it on (DMA
  starts likewise), so presolve does not walk the 2n-long chain one op per loop;
* prefetch (optional interval on ``prefetch``): start >= end of op ``trigger`` (an element
  constraint over the op ends), end <= ``start[a_j]``, start >= end of the tensor's
  eviction; ``trigger >= release`` when the eviction is in the same gap;
* eviction (optional interval on ``evict``): start >= end of ``a_{j-1}``, end <= start of op
  ``release`` (element; index ``num_ops`` is the makespan);
* one DMA engine: ``NoOverlap`` over all DMA intervals;
* fast capacity: ``Cumulative`` on the point axis over the pieces of every tensor (access
  point ``[2a+1, 2a+2)``, kept gap ``[2a_{j-1}+2, 2a_j+1)``, prefetch
  ``[2*trigger+2, 2a_j+1)``, eviction ``[2a_{j-1}+2, 2*release+1)``) with demands = bytes;
* shared bandwidth (``problem.shared_bandwidth``): one ``Cumulative`` per level over the op
  and DMA intervals, demands = shares (:func:`~solvers.memory.levels.bandwidth.add_bandwidth`);
* ``makespan >= end of the last op``, ``makespan >= LB`` (:func:`makespan_lower_bound`),
  ``makespan <= U`` with U the best baseline's makespan.

Objective: minimize ``makespan``. Warm start: the better of the greedy and all-in-HBM
plans as a hint; the result is re-timed by the replay (never later) and never worse than
the hint. Split groups: every factor vector is expanded and solved (outer enumeration),
so the split choice is exact when every expansion is.

**Window search (above ``window_above_ops`` = 64 ops).** The one model of a 250-op chain
runs at ~0.01 deterministic time per wall second (each branch re-propagates the chain)
and barely improved the greedy plan. Instead, windows of ``window_ops`` consecutive ops
are re-optimised exactly around the incumbent (:func:`build_level_model` with ``fixed``
and ``free_ops``): the accesses of the window's ops and the gaps next to them are free;
every other decision is the incumbent's; ops before the window keep their times
(constants), ops after it keep theirs plus one ``shift <= 0`` variable, and so do the
DMAs triggered after it, so the model is small and each of its solutions is a valid plan
(then re-timed by the replay, kept when shorter). Windows overlap by half, sweep left to
right, and double (up to ``max_window_ops``) after a sweep without improvement. The bound
reported is :func:`makespan_lower_bound` (a window proves nothing about the problem).

**Determinism.** CP-SAT stops on deterministic time (one :class:`solvers.budget.Budget`,
``dtime_per_second`` x ``time_limit_s``, fixed up front, split between split choices by what
each charged) and window search also on counted work (``window_units_per_second`` x
``time_limit_s``; a window of k ops costs ``(k / window_ops)**2``); the wall clock is only a
safety net, and ``stats["stopped_by"]`` says ``"wall_clock"`` when it fired (the run may then
not repeat). Windows use one worker; the one-model path uses ``options.num_workers`` with
``interleave_search`` (deterministic batches) when there are several.
``options.search == "until-limit"`` splits the wall clock instead (not reproducible).

Measured (``benchmarks/memory.py``, 2 busy cores, load 2-2.5): 50-layer transformer, 250
ops / 451 tensors, 60-s budget: 1,389,568 cycles vs. the bound 1,370,368 (gap 1.4 %) in
31 s, the same plan on repeated runs; greedy 1,476,352; the one big model before:
1,426,880 in 60 s with the bound 524,800 (gap 63 %, not repeatable).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

from ortools.sat.python import cp_model

from solvers.cpsat_support import integer_objective_bound, interval_if
from solvers.budget import Budget, Calibration, MEMORY_LEVELS
from solvers.core import Accepting, ProgressPoint, SolveOptions, SolveResult, Status, failure_result
from solvers.memory.levels.bandwidth import add_bandwidth
from solvers.memory.levels.link_holds import add_link_hold_vars, add_link_hold_waits
from solvers.memory.levels.greedy import fewer_dmas, plan_all_slow, plan_greedy, retime
from solvers.memory.levels.problem import LevelProblem, LevelSolution, Transfer, TransferKind, cycles_for_bytes
from solvers.memory.levels.split import expand_splits, split_factor_choices
from solvers.memory.levels.validate import (
    level_metrics, makespan_lower_bound, op_duration_lower_bounds, validate_levels,
)

__all__ = [
    "LevelVars", "build_level_model", "build_level_decisions", "exact_model_fits", "add_residency", "add_durations", "add_transfers",
    "add_fast_capacity", "add_memory_order", "add_makespan", "CpSatLevelSolver",
]

_LOG = logging.getLogger(__name__)
# Shared bandwidth on several streams: the share of the budget the series plan (one stream) may use
# first (all of it: it keeps today's series plan at the same budget; what it leaves, e.g. once it
# proves optimality, goes to the several-stream model).
SHARED_SERIES_SHARE = 1.0


@dataclass
class LevelVars:
    """Variable handles of the level model; ``extract`` reads a solution back.

    Decisions are BoolVars / IntVars, or plain ints where they are fixed (virtual
    accesses; everything outside ``free_ops`` when the model is built around a ``fixed``
    solution, see :func:`build_level_model`). DMA dicts hold only the DMAs that may exist.

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> v.extract(solver).op_duration
    (8,)
    """

    problem: LevelProblem
    horizon: int
    prefetch_window_ops: int | None = None
    fixed: LevelSolution | None = None  # decisions outside free_ops come from this solution
    free_ops: range | None = None  # ops whose accesses (and the gaps next to them) are free
    fixed_transfers: dict = field(default_factory=dict)  # (kind, t, j) -> Transfer of ``fixed``
    # Around a fixed solution, ops before free_ops keep their times (constants) and ops
    # after it keep theirs shifted by ``shift`` (<= 0; None when free_ops reaches the end).
    shift: cp_model.IntVar | None = None
    fast: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 0 | 1
    kept: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 0 | 1
    orig: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 0 | 1
    prefetch: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 1 (absent DMAs are left out)
    evict: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 1
    trigger: dict = field(default_factory=dict)  # (t, j) -> IntVar (offset from trigger_base)
    trigger_base: dict = field(default_factory=dict)  # (t, j) -> the earliest trigger op allowed
    release: dict = field(default_factory=dict)  # (t, j) -> IntVar (offset from a_{j-1}+1)
    dma_start: dict = field(default_factory=dict)  # (kind, t, j) -> IntVar
    trigger_end: dict = field(default_factory=dict)  # (t, j) -> IntVar, end of the trigger op
    release_start: dict = field(default_factory=dict)  # (t, j) -> IntVar, start of the release op
    start: list = field(default_factory=list)
    dur: list = field(default_factory=list)
    cf: list = field(default_factory=list)  # None for an op whose accesses are all fixed
    cs: list = field(default_factory=list)
    makespan: cp_model.IntVar | None = None
    dma_intervals: list = field(default_factory=list)  # every DMA's (optional) interval
    # Time windows from the per-op duration bounds and the makespan's upper bound:
    # op i starts in [earliest[i], latest[i]]; index num_ops is the makespan.
    earliest: list = field(default_factory=list)
    latest: list = field(default_factory=list)
    shortest: list = field(default_factory=list)  # a lower bound on each op's duration
    latest_end: list | None = None  # several streams: each op's latest end (else latest[op + 1])

    def end(self, op: int):
        return 0 if op < 0 else self.start[op] + self.dur[op]

    def end_window(self, op: int) -> tuple[int, int]:
        """Earliest and latest end of ``op`` (``(0, 0)`` for the program start ``-1``)."""
        if op < 0:
            return 0, 0
        if self.latest_end is not None:
            return self.earliest[op] + self.shortest[op], self.latest_end[op]
        return self.earliest[op] + self.shortest[op], self.latest[op + 1]

    def end_span(self, lo: int, hi: int) -> tuple[int, int]:
        """Earliest and latest end of any op in ``lo..hi`` (ops of one stream end in order;
        with several streams the window's extremes are taken)."""
        if not self.problem.multi_stream:
            return self.end_window(lo)[0], self.end_window(hi)[1]
        windows = [self.end_window(op) for op in range(lo, hi + 1)]
        return min(w[0] for w in windows), max(w[1] for w in windows)

    def start_span(self, lo: int, hi: int) -> tuple[int, int]:
        """Earliest and latest start of any op in ``lo..hi`` (index ``num_ops``: the makespan)."""
        if not self.problem.multi_stream:
            return self.earliest[lo], self.latest[hi]
        return min(self.earliest[lo:hi + 1]), max(self.latest[lo:hi + 1])

    def op_is_free(self, op: int) -> bool:
        """Whether op ``op``'s accesses are decided by the model (always, without ``fixed``)."""
        return self.fixed is None or (self.problem.is_real(op) and op in self.free_ops)

    def gap_is_free(self, t: int, j: int) -> bool:
        """Gap j of tensor t is free when an access next to it is free."""
        acc = self.problem.accesses(t)
        return self.op_is_free(acc[j - 1]) or self.op_is_free(acc[j])

    def preset_dma_start(self, tr: Transfer | None):
        """A fixed DMA's start when it is frozen before free_ops (its time) or after it
        (its time + shift); None when the model decides it."""
        if tr is None:
            return None
        if tr.release_op < self.free_ops.start:
            return tr.start_cycle
        if self.shift is not None and tr.trigger_op >= self.free_ops.stop:
            return tr.start_cycle + self.shift
        return None

    def fixed_transfer(self, kind: TransferKind, t: int, j: int) -> Transfer | None:
        """The fixed solution's DMA in a fixed gap (None in a free gap or when it has none)."""
        if self.fixed is None or self.gap_is_free(t, j):
            return None
        return self.fixed_transfers.get((kind, t, j))

    def extract(self, solver: cp_model.CpSolver) -> LevelSolution:
        p = self.problem

        def val(x) -> int:
            return x if isinstance(x, int) else solver.value(x)

        in_fast = tuple(tuple(bool(val(self.fast[t, j])) for j in range(len(p.accesses(t))))
                        for t in range(p.num_tensors))
        kept = tuple(tuple(bool(val(self.kept.get((t, j), 0))) for j in range(len(p.accesses(t))))
                     for t in range(p.num_tensors))
        transfers = []
        for (t, j), lit in self.prefetch.items():
            if val(lit):
                acc = p.accesses(t)
                transfers.append(Transfer(TransferKind.PREFETCH, t, j,
                                          self.trigger_base[t, j] + solver.value(self.trigger[t, j]),
                                          acc[j], val(self.dma_start["p", t, j]), p.dma_cycles(t)))
        for (t, j), lit in self.evict.items():
            if val(lit):
                acc = p.accesses(t)
                transfers.append(Transfer(TransferKind.EVICT, t, j, acc[j - 1],
                                          acc[j - 1] + 1 + solver.value(self.release[t, j]),
                                          val(self.dma_start["e", t, j]), p.dma_cycles(t)))
        transfers.sort(key=lambda tr: (tr.start_cycle, tr.release_op, tr.kind is TransferKind.PREFETCH,
                                       tr.tensor, tr.gap))
        return LevelSolution(in_fast, kept, tuple(transfers), tuple(val(s) for s in self.start),
                             tuple(val(d) for d in self.dur))


def _horizon(problem: LevelProblem) -> int:
    h = problem.roofline_horizon()
    for t in range(problem.num_tensors):
        h += 2 * len(problem.accesses(t)) * problem.dma_cycles(t)
    return h


# Every linear constraint must stay far from int64 overflow (CP-SAT refuses the model).
_MAX_TERM = 1 << 60


def exact_model_fits(problem: LevelProblem) -> bool:
    """Whether the exact roofline constraints of every op fit CP-SAT's 64-bit arithmetic.

    For a bandwidth ``p/q`` the terms reach ``q*bytes + p``; with rates built as
    ``Fraction(bytes_per_s, clock_hz)`` ``q`` divides the clock, so this only fails for
    absurd inputs.

    Examples
    --------
    >>> from fractions import Fraction
    >>> exact_model_fits(LevelProblem((1,), ((0,),), ((),), (10**9,), (8, 10**10), (Fraction(8000, 7), 1)))
    True
    >>> exact_model_fits(LevelProblem((1,), ((0,),), ((),), (10**9,), (8, 10**10), (Fraction(1, 10**12), 1)))
    False
    """
    for row in problem.op_accesses():
        b = sum(problem.tensor_bytes[t] for t, _ in row)
        for r in problem.bandwidth_bytes_per_cycle:
            if r.denominator * b + r.numerator >= _MAX_TERM:
                return False
    return True


def _is_zero(x) -> bool:
    return isinstance(x, int) and x == 0


def _lits(*xs) -> list:
    """The non-constant literals among ``xs`` (constants here are always 1: present)."""
    return [x for x in xs if not isinstance(x, int)]


def _enforce(ct, *lits) -> None:
    ls = _lits(*lits)
    if ls:
        ct.only_enforce_if(ls)


def _add(model: cp_model.CpModel, relation, *lits) -> None:
    """``model.add(relation)`` enforced by ``lits``; a relation between constants (a
    Python bool) is checked here instead."""
    if isinstance(relation, bool):
        if not relation:
            model.add_bool_or([_lit.Not() for _lit in _lits(*lits)])
        return
    _enforce(model.add(relation), *lits)


def add_residency(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Where each access lives, kept gaps, and the prefetch/eviction each implies.

    Examples
    --------
    Weight 0 has a virtual access (slow: the constant 0) and a read that may be prefetched:

    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> sorted(v.fast), sorted(v.prefetch), v.fast[0, 0]
    ([(0, 0), (0, 1)], [(0, 1)], 0)
    """
    fast_only = set(problem.fast_only_ops)
    fx = v.fixed
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        for j, a in enumerate(acc):
            if not problem.is_real(a):
                v.fast[t, j] = 0
            elif v.op_is_free(a):
                v.fast[t, j] = model.new_bool_var(f"fast_{t}_{j}")
                if a in fast_only:
                    model.add(v.fast[t, j] == 1)
            else:
                v.fast[t, j] = int(fx.in_fast[t][j])
        v.orig[t, 0] = v.fast[t, 0]
        for j in range(1, len(acc)):
            x_prev, x = v.fast[t, j - 1], v.fast[t, j]
            if not v.gap_is_free(t, j):
                k = int(fx.kept[t][j])
            elif problem.is_real(acc[j - 1]) and problem.is_real(acc[j]) and not _is_zero(x_prev) \
                    and not _is_zero(x):
                k = model.new_bool_var(f"kept_{t}_{j}")
                for y in _lits(x_prev, x):
                    model.add_implication(k, y)
            else:
                k = 0
            v.kept[t, j] = k
            if problem.is_real(acc[j]):
                if isinstance(x, int) and isinstance(k, int):
                    pf = x - k
                elif isinstance(k, int) and k == 0:
                    pf = x
                else:
                    pf = model.new_bool_var(f"prefetch_{t}_{j}")
                    model.add(pf == x - k)
                if not (isinstance(pf, int) and pf == 0):
                    v.prefetch[t, j] = pf
            o_prev = v.orig[t, j - 1]
            if isinstance(o_prev, int) and o_prev == 0:
                v.orig[t, j] = 0
                continue
            if isinstance(k, int):
                v.orig[t, j] = o_prev if k else 0
                if not k:
                    v.evict[t, j] = o_prev
                continue
            if isinstance(o_prev, int):  # the producer's copy is surely in fast memory
                v.orig[t, j] = k
                ev = v.evict[t, j] = model.new_bool_var(f"evict_{t}_{j}")
                model.add(ev + k == 1)
                continue
            o = v.orig[t, j] = model.new_bool_var(f"orig_{t}_{j}")
            model.add(o <= o_prev)
            model.add(o <= k)
            model.add(o >= o_prev + k - 1)
            ev = v.evict[t, j] = model.new_bool_var(f"evict_{t}_{j}")
            model.add(ev == o_prev - o)


def add_durations(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Roofline durations ``max(compute, ceil(FB/bw_f) + ceil(SB/bw_s))`` and the op order.

    Examples
    --------
    Forcing op 0's read into the fast level: max(4, 8/4) = 4 cycles, after the 8-cycle prefetch.

    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> _ = model.add(v.fast[0, 1] == 1)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.dur[0]), solver.value(v.makespan)
    (4, 12)
    """
    (pf, qf), (ps, qs) = ((r.numerator, r.denominator) for r in problem.bandwidth_bytes_per_cycle)
    if problem.multi_stream:
        _add_stream_order(model, problem, v)
    for i, row in enumerate(problem.op_accesses()):
        if i and not problem.multi_stream and (v.op_is_free(i) or v.op_is_free(i - 1)):
            _add(model, v.start[i] >= v.end(i - 1))
        cf, cs = v.cf[i], v.cs[i]
        if cf is None:  # every access fixed: the duration is a constant (set by the builder)
            continue
        total = sum(problem.tensor_bytes[t] for t, _ in row)
        fb = sum(problem.tensor_bytes[t] * v.fast[t, j] for t, j in row)
        # cf = ceil(FB / (pf/qf)) = ceil(qf*FB / pf); likewise cs for SB = total - FB.
        model.add(pf * cf >= qf * fb)
        model.add(pf * cf <= qf * fb + pf - 1)
        model.add(ps * cs >= qs * (total - fb))
        model.add(ps * cs <= qs * (total - fb) + ps - 1)
        model.add_max_equality(v.dur[i], [problem.compute_cycles[i], cf + cs])


def _add_stream_order(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Several streams: each op after the previous op of its stream and after the producer of
    every tensor it reads."""
    last: dict[int, int] = {}
    for i in range(problem.num_ops):
        s = problem.stream_of(i)
        before = {last[s]} if s in last else set()
        before |= {problem.accesses(t)[0] for t in problem.reads[i] if problem.is_real(problem.accesses(t)[0])}
        for a in sorted(before):
            model.add(v.start[i] >= v.end(a))
        last[s] = i


def add_transfers(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """DMA intervals with their triggers and releases, on one engine.

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> sorted(v.dma_start), v.trigger_base[0, 1]
    ([('p', 0, 1)], -1)
    """
    starts_ext = [*v.start, v.makespan]
    intervals = []
    prefetch_gaps: dict[int, list[int]] = {}
    for (t, j), pf in v.prefetch.items():
        prefetch_gaps.setdefault(t, []).append(j)
        acc = problem.accesses(t)
        lo, hi, d = acc[j - 1], acc[j], problem.dma_cycles(t)
        tr = v.fixed_transfer(TransferKind.PREFETCH, t, j)
        if tr is not None:
            lo = hi_trig = tr.trigger_op
        else:
            if v.prefetch_window_ops is not None:
                lo = max(lo, hi - v.prefetch_window_ops)
            hi_trig = hi - 1
        v.trigger_base[t, j] = lo
        trig = v.trigger[t, j] = model.new_int_var(0, hi_trig - lo, f"trigger_{t}_{j}")
        first, last = v.end_span(lo, hi_trig)[0], v.latest[hi] - d
        if last < first:  # no room for this DMA before its consumer within the makespan bound
            model.add_bool_or([]) if isinstance(pf, int) else model.add(pf == 0)
            last = first
        s = v.preset_dma_start(tr)
        if s is None:
            s = model.new_int_var(first, last, f"prefetch_start_{t}_{j}")
        v.dma_start["p", t, j] = s
        intervals.append(interval_if(model, s, d, s + d, pf, f"prefetch_{t}_{j}"))
        ready = v.trigger_end[t, j] = model.new_int_var(first, v.end_span(lo, hi_trig)[1], f"trigger_end_{t}_{j}")
        model.add_element(trig, [v.end(k) for k in range(lo, hi_trig + 1)], ready)
        _add(model, s >= ready, pf)
        _add(model, s + d <= v.start[hi], pf)
    for (t, j), ev in v.evict.items():
        acc = problem.accesses(t)
        lo, hi, d = acc[j - 1], acc[j], problem.dma_cycles(t)
        rel_lo, rel_hi = lo + 1, hi
        tr = v.fixed_transfer(TransferKind.EVICT, t, j)
        if tr is not None:  # (an eviction that may move here from a free gap keeps a free release)
            rel_lo = rel_hi = tr.release_op
        rel = v.release[t, j] = model.new_int_var(rel_lo - lo - 1, rel_hi - lo - 1, f"release_{t}_{j}")
        first, last = v.end_window(lo)[0], v.start_span(rel_lo, rel_hi)[1] - d
        if last < first:
            model.add_bool_or([]) if isinstance(ev, int) else model.add(ev == 0)
            last = first
        s = v.preset_dma_start(tr)
        if s is None:
            s = model.new_int_var(first, last, f"evict_start_{t}_{j}")
        v.dma_start["e", t, j] = s
        intervals.append(interval_if(model, s, d, s + d, ev, f"evict_{t}_{j}"))
        deadline = v.release_start[t, j] = model.new_int_var(*v.start_span(rel_lo, rel_hi),
                                                             f"release_start_{t}_{j}")
        model.add_element(rel, starts_ext[lo + 1:hi + 1], deadline)
        _add(model, s >= v.end(lo), ev)
        _add(model, s + d <= deadline, ev)
        for j2 in prefetch_gaps.get(t, ()):
            if j2 >= j:
                pf = v.prefetch[t, j2]
                _add(model, v.dma_start["p", t, j2] >= s + d, ev, pf)
                if j2 == j:
                    _add(model, v.trigger_base[t, j] + v.trigger[t, j] >= lo + 1 + rel, ev, pf)
    model.add_no_overlap(intervals)
    v.dma_intervals = intervals  # shared bandwidth: the same intervals hold shares (bandwidth.py)


def add_fast_capacity(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Cumulative on the point axis: fast bytes at every point <= the fast capacity.

    Pieces fixed in place (around a ``fixed`` solution) are summed into a constant
    profile; only the points some free piece may cover are checked.

    Examples
    --------
    A 16-byte weight cannot be read fast from an 8-byte fast level:

    >>> p = LevelProblem((4,), ((0,),), ((),), (16,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> _ = model.add(v.fast[0, 1] == 1)
    >>> cp_model.CpSolver().solve(model) == cp_model.INFEASIBLE
    True
    """
    pieces = _FastPieces(model, 2 * problem.num_ops + 1)
    for t in range(problem.num_tensors):
        if problem.tensor_bytes[t]:
            _add_tensor_pieces(model, problem, v, pieces, t)
    intervals, demands = pieces.intervals, pieces.demands
    levels, level = [], 0
    for p in range(pieces.n_points):
        level += pieces.profile[p]
        levels.append(level)
    p, hi = pieces.region
    while p < hi:  # the constant load over the free region, as runs of equal level
        q = p
        while q < hi and levels[q] == levels[p]:
            q += 1
        if levels[p]:
            intervals.append(model.new_fixed_size_interval_var(p, q - p, f"fixed_{p}"))
            demands.append(levels[p])
        p = q
    if intervals:
        model.add_cumulative(intervals, demands, problem.capacity_bytes[0])


def add_memory_order(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Several streams: every fast allocation waits for the fast frees before it on the point
    axis (the memory-order rule of :mod:`solvers.memory.levels.problem`).

    ``alloc[i]``: op i writes a tensor fast (allocated at its start); ``frees[a]``: some fast
    copy ends with op a (a fast access of a that is neither kept nor evicted after it; a
    prefetch triggered by a into the same buffer would continue it, and the extra
    wait is never needed: :func:`_forbid_refetch_into_the_copy` rules that case out without
    loss). Then ``alloc[i] and frees[a] => start[i] >= end[a]`` for a < i on another stream;
    ``alloc[i]`` and an eviction released by an op <= i => op i after the eviction's end; a
    prefetch triggered by k starts after the end of every op a <= k that frees and of every
    eviction released by an op <= k; and the copy order (:func:`_add_copy_order`). Nothing
    with one stream.

    Examples
    --------
    Op 0 (stream 0) reads weight 0, op 1 (stream 1) writes tensor 1; both fast means op 1
    waits for op 0 (8-cycle prefetch, then 4 + 4), else they overlap:

    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> model, v = build_level_model(p)
    >>> _ = model.add(v.fast[0, 1] == 1); _ = model.add(v.fast[1, 0] == 1)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)
    16
    """
    if not problem.multi_stream:
        return
    n = problem.num_ops
    alloc = [_any_of(model, [v.fast[t, 0] for t in problem.writes[i] if problem.tensor_bytes[t]], f"alloc_{i}")
             for i in range(n)]
    frees = [_any_of(model, [_ends_at(model, problem, v, t, j) for t, j in row if problem.tensor_bytes[t]],
                     f"frees_{a}") for a, row in enumerate(problem.op_accesses())]
    for i in range(n):
        for a in range(i):
            if problem.stream_of(a) != problem.stream_of(i):
                _add_when(model, v.start[i] >= v.end(a), alloc[i], frees[a])
    evictions = [(t, j, ev) for (t, j), ev in v.evict.items() if problem.tensor_bytes[t]]
    for t, j, ev in evictions:
        lo = problem.accesses(t)[j - 1]
        released_by = lo + 1 + v.release[t, j]  # the absolute release op
        finish = v.dma_start["e", t, j] + problem.dma_cycles(t)
        for i in range(lo + 1, n):
            if not (isinstance(alloc[i], int) and not alloc[i]):
                released = _at_most(model, released_by, i, f"rel_{t}_{j}_le_{i}")
                _add_when(model, v.start[i] >= finish, alloc[i], ev, released)
    _add_copy_order(model, problem, v)
    _forbid_refetch_into_the_copy(model, problem, v)
    for (t, j), pf in v.prefetch.items():
        if not problem.tensor_bytes[t]:
            continue
        base = v.trigger_base[t, j]
        trig = base + v.trigger[t, j]
        begin = v.dma_start["p", t, j]
        for a in range(problem.accesses(t)[j]):
            if isinstance(frees[a], int) and not frees[a]:
                continue
            triggered_after = 1 if a <= base else _at_most(model, -trig, -a, f"trig_{t}_{j}_ge_{a}")
            _add_when(model, begin >= v.end(a), pf, frees[a], triggered_after)
        for t2, j2, ev in evictions:
            if t2 == t:
                continue  # its own eviction is waited for already (add_transfers)
            lo2 = problem.accesses(t2)[j2 - 1]
            if lo2 + 1 > problem.accesses(t)[j] - 1:
                continue  # released after every possible trigger
            before = _at_most(model, lo2 + 1 + v.release[t2, j2] - trig, 0, f"rel_{t2}_{j2}_le_trig_{t}_{j}")
            _add_when(model, begin >= v.dma_start["e", t2, j2] + problem.dma_cycles(t2), pf, ev, before)


def _forbid_refetch_into_the_copy(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars,
                                  fixed_gaps: bool = True) -> None:
    """Several streams: no copy is dropped after a fast access and prefetched again from the
    end of that same access (a prefetch into the piece still holding it; ``frees`` would count
    it as freed). Without loss: keeping the copy across the gap holds the same points, moves
    nothing and waits for nothing more, so some optimum never does this, and with it
    forbidden the model is exact. ``fixed_gaps=False`` (the cycle-time model's windows): a gap
    taken from ``v.fixed`` keeps what that plan does (its two accesses keep one address there)."""
    for (t, j), pf in v.prefetch.items():
        if not fixed_gaps and v.fixed is not None and not v.gap_is_free(t, j):
            continue
        acc = problem.accesses(t)
        prev = v.fast[t, j - 1]
        if not problem.is_real(acc[j - 1]) or v.trigger_base[t, j] != acc[j - 1] or (
                isinstance(prev, int) and not prev):
            continue
        _add_when(model, v.trigger[t, j] >= 1, pf, prev)


def _add_copy_order(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Several streams: a kept gap orders its two accesses (one copy's accesses run one after
    another), a slow access after an eviction of its tensor starts after the eviction, and a
    prefetch of a produced tensor starts after its producer (which wrote the slow copy)."""
    for (t, j), pf in v.prefetch.items():
        a = problem.accesses(t)[0]
        if problem.is_real(a):
            _add_when(model, v.dma_start["p", t, j] >= v.end(a), pf)
    for (t, j), k in v.kept.items():
        acc = problem.accesses(t)
        if j and problem.is_real(acc[j]) and problem.is_real(acc[j - 1]) and \
                problem.stream_of(acc[j]) != problem.stream_of(acc[j - 1]):
            _add_when(model, v.start[acc[j]] >= v.end(acc[j - 1]), k)
    for (t, j0), ev in v.evict.items():
        acc = problem.accesses(t)
        finish = v.dma_start["e", t, j0] + problem.dma_cycles(t)
        for j in range(j0, len(acc)):
            if problem.is_real(acc[j]):
                x = v.fast[t, j]
                slow = 1 - x if isinstance(x, int) else x.Not()
                _add_when(model, v.start[acc[j]] >= finish, ev, slow)


def _add_when(model: cp_model.CpModel, relation, *lits) -> None:
    """:func:`_add` unless a literal is the constant 0 (then the relation never applies)."""
    if not any(isinstance(x, int) and not x for x in lits):
        _add(model, relation, *lits)


def _any_of(model: cp_model.CpModel, lits: list, name: str):
    """A literal that is 1 when any of ``lits`` is (it may be 1 otherwise: used only to add waits)."""
    if any(isinstance(x, int) and x for x in lits):
        return 1
    lits = _lits(*lits)
    if not lits:
        return 0
    if len(lits) == 1:
        return lits[0]
    y = model.new_bool_var(name)
    for x in lits:
        model.add_implication(x, y)
    return y


def _ends_at(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, t: int, j: int):
    """1 when access j of t is fast and its copy is neither kept across the next gap nor evicted
    there (it may be 1 otherwise)."""
    x = v.fast[t, j]
    if isinstance(x, int) and not x:
        return 0
    if j + 1 >= len(problem.accesses(t)):
        return x
    k, ev = v.kept.get((t, j + 1), 0), v.evict.get((t, j + 1), 0)
    if all(isinstance(z, int) for z in (x, k, ev)):
        return int(bool(x) and not k and not ev)
    y = model.new_bool_var(f"ends_{t}_{j}")
    model.add(y >= x - k - ev)
    return y


def _at_most(model: cp_model.CpModel, expr, bound: int, name: str):
    """A literal equal to ``expr <= bound`` (a constant when the domains decide it)."""
    y = model.new_bool_var(name)
    model.add(expr <= bound).only_enforce_if(y)
    model.add(expr > bound).only_enforce_if(y.Not())
    return y


class _FastPieces:
    """The pieces of fast occupancy on the point axis: a constant profile (a difference array)
    for the pieces fixed in place, intervals and demands for the others, and the region of
    points the free pieces may cover."""

    def __init__(self, model: cp_model.CpModel, n_points: int) -> None:
        self.model, self.n_points = model, n_points
        self.profile = [0] * (n_points + 1)
        self.intervals: list = []
        self.demands: list[int] = []
        self.region = [n_points, 0]

    def add(self, start, size, end, present, lo: int, hi: int, demand: int, name: str) -> None:
        """A piece over ``[start, end)``, somewhere within ``[lo, hi)``."""
        if lo >= hi:
            return
        if isinstance(present, int) and isinstance(start, int) and isinstance(size, int):
            self.profile[start] += demand
            self.profile[start + size] -= demand
            return
        self.region[0], self.region[1] = min(self.region[0], lo), max(self.region[1], hi)
        self.intervals.append(interval_if(self.model, start, size, end, present, name))
        self.demands.append(demand)


def _add_tensor_pieces(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, pieces: _FastPieces,
                       t: int) -> None:
    """Tensor ``t``'s fast pieces, access by access: the access itself, the kept gap before it,
    its prefetch (from the trigger) and its eviction (until the release)."""
    size = problem.tensor_bytes[t]
    acc = problem.accesses(t)
    for j, a in enumerate(acc):
        x = v.fast[t, j]
        if not (isinstance(x, int) and x == 0):
            pieces.add(2 * a + 1, 1, 2 * a + 2, x, 2 * a + 1, 2 * a + 2, size, f"at_{t}_{j}")
        if j == 0:
            continue
        k = v.kept.get((t, j), 0)
        if not (isinstance(k, int) and k == 0):
            lo = 2 * acc[j - 1] + 2
            pieces.add(lo, 2 * a + 1 - lo, 2 * a + 1, k, lo, 2 * a + 1, size, f"keep_{t}_{j}")
        if (t, j) in v.prefetch:
            base = v.trigger_base[t, j]
            trig = v.trigger[t, j]
            width = _domain_max(model, trig)
            if width == 0:
                begin = 2 * base + 2
                pieces.add(begin, 2 * a + 1 - begin, 2 * a + 1, v.prefetch[t, j], begin, 2 * a + 1, size,
                           f"pf_pts_{t}_{j}")
            else:
                begin = 2 * (base + trig) + 2
                pieces.add(begin, 2 * a + 1 - begin, 2 * a + 1, v.prefetch[t, j], 2 * base + 2, 2 * a + 1, size,
                           f"pf_pts_{t}_{j}")
        if (t, j) in v.evict:
            lo = 2 * acc[j - 1] + 2
            rel = v.release[t, j]
            r_lo, r_hi = _domain_min(model, rel), _domain_max(model, rel)
            if r_lo == r_hi:
                finish = 2 * (acc[j - 1] + 1 + r_lo) + 1
                pieces.add(lo, finish - lo, finish, v.evict[t, j], lo, finish, size, f"ev_pts_{t}_{j}")
            else:
                finish = 2 * (acc[j - 1] + 1 + rel) + 1
                pieces.add(lo, finish - lo, finish, v.evict[t, j], lo, 2 * (acc[j - 1] + 1 + r_hi) + 1, size,
                           f"ev_pts_{t}_{j}")


def _domain_min(model: cp_model.CpModel, var) -> int:
    return model.proto.variables[var.index].domain[0]


def _domain_max(model: cp_model.CpModel, var) -> int:
    domain = model.proto.variables[var.index].domain  # (its wrapper reads [-1] as 0)
    return domain[len(domain) - 1]


def add_makespan(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> cp_model.IntVar:
    """``makespan >= end of the last op``; returns the objective term.

    Examples
    --------
    >>> p = LevelProblem((4, 5), ((), ()), ((), ()), (), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)
    9
    """
    if problem.num_ops and (v.shift is None or problem.multi_stream):
        # (around a fixed solution with one stream the shifted last op defines the makespan;
        # with several, the last op of another stream may be frozen or free)
        last = {problem.stream_of(i): i for i in range(problem.num_ops)}
        for i in sorted(last.values()):
            _add(model, v.makespan >= v.end(i))
    return v.makespan


def build_level_model(problem: LevelProblem, upper_cycles: int | None = None, lower_cycles: int = 0,
                      hint: LevelSolution | None = None, prefetch_window_ops: int | None = None,
                      fixed: LevelSolution | None = None,
                      free_ops: range | None = None, link_holds: tuple = ()) -> tuple[cp_model.CpModel, LevelVars]:
    """The CP-SAT model of an unsplit problem, with ``lower <= makespan <= upper``.

    ``prefetch_window_ops`` (None = unrestricted) limits a prefetch's trigger to the last
    that many ops before its consumer (XLA's prefetch interval picker does the same);
    the model is then a restriction and its bound is not a bound of the problem.

    ``fixed`` and ``free_ops`` (a neighbourhood, for window search): every decision
    except those of the accesses of ``free_ops`` and the gaps next to them is taken from
    the valid solution ``fixed`` (residency, kept gaps, DMA triggers and releases); all
    times stay free, so any solution of the model is a solution of the problem.

    ``link_holds`` (shared bandwidth, heads and tails: :mod:`~solvers.memory.levels.link_holds`):
    link transfers' ends on the device, in the slow level's Cumulative with their waits.

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)  # read 8 bytes from slow: max(4, 8/1) = 8
    8

    Op 1 fixed as in a plan that reads the weight slow; op 0 free (it touches nothing):

    >>> q = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
    >>> slow = LevelSolution(((False, False),), ((False, False),), (), (0, 8), (8, 8))
    >>> model, v = build_level_model(q, fixed=slow, free_ops=range(0, 1))
    >>> v.fast[0, 1], sorted(v.prefetch)
    (0, [])
    """
    _check_buildable(problem, fixed, free_ops)
    model = cp_model.CpModel()
    h = upper_cycles if upper_cycles is not None else _horizon(problem)
    v = LevelVars(problem, h, prefetch_window_ops, fixed, free_ops)
    lo_op, h = _add_op_windows(model, problem, v, h, fixed, free_ops)
    _add_op_times(model, problem, v, h, fixed, lo_op)
    if v.shift is not None:
        v.makespan = fixed.makespan_cycles + v.shift
    else:
        v.makespan = model.new_int_var(min(max(lower_cycles, v.earliest[problem.num_ops]), h), h, "makespan")
    add_residency(model, problem, v)
    add_durations(model, problem, v)
    add_transfers(model, problem, v)
    add_fast_capacity(model, problem, v)
    add_memory_order(model, problem, v)
    if link_holds:
        _add_link_holds(model, problem, v, link_holds, h)
    if problem.shared_bandwidth:
        add_bandwidth(model, problem, v)
    model.minimize(add_makespan(model, problem, v))
    if hint is not None:
        _add_hint(model, problem, v, hint)
    return model, v


def _add_link_holds(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, holds: tuple, h: int) -> None:
    """Link transfers' ends as intervals with their waits (shared bandwidth only: they hold shares)."""
    if not problem.shared_bandwidth:
        raise ValueError("link holds are shares of the slow level: only with shared bandwidth")
    add_link_hold_vars(model, v, holds, h)
    add_link_hold_waits(model, problem, v, holds)


def build_level_decisions(problem: LevelProblem, upper_cycles: int | None = None,
                          hint: LevelSolution | None = None, fixed: LevelSolution | None = None,
                          free_ops: range | None = None) -> tuple[cp_model.CpModel, LevelVars]:
    """Several streams: the level model's decisions and times (residency, kept gaps, DMAs on
    the one engine, the stream order, the copy order, no refetch into a copy), with
    ``makespan <= upper_cycles``, WITHOUT the point-axis fast capacity and memory order:
    :mod:`solvers.memory.levels.stream_time` adds its own, over cycles and addresses. The
    objective is the makespan; ``hint`` (a valid plan) warm-starts it. ``fixed`` and ``free_ops``:
    a neighbourhood around the valid plan ``fixed``, as in :func:`build_level_model` (ops before
    ``free_ops`` keep their times, ops after it keep theirs plus one ``shift <= 0``).

    Examples
    --------
    Two 16-byte weights read fast by ops of two streams from a 16-byte level: without a
    capacity both prefetches run (8 cycles each on the engine), so the second op ends at 20:

    >>> p = LevelProblem((4, 4), ((0,), (1,)), ((), ()), (16, 16), (16, 99), (4, 2), op_streams=(0, 1))
    >>> model, v = build_level_decisions(p)
    >>> _ = model.add(v.fast[0, 1] == 1); _ = model.add(v.fast[1, 1] == 1)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)
    20
    """
    if not problem.multi_stream:
        raise ValueError("build_level_decisions is for several streams")
    _check_buildable(problem, fixed, free_ops)
    model = cp_model.CpModel()
    h = upper_cycles if upper_cycles is not None else _horizon(problem)
    v = LevelVars(problem, h, None, fixed, free_ops)
    lo_op, h = _add_op_windows(model, problem, v, h, fixed, free_ops)
    _add_op_times(model, problem, v, h, fixed, lo_op)
    if v.shift is not None:
        v.makespan = fixed.makespan_cycles + v.shift
    else:
        v.makespan = model.new_int_var(min(max(makespan_lower_bound(problem), v.earliest[problem.num_ops]), h), h,
                                       "makespan")
    add_residency(model, problem, v)
    add_durations(model, problem, v)
    add_transfers(model, problem, v)
    _add_copy_order(model, problem, v)
    _forbid_refetch_into_the_copy(model, problem, v, fixed_gaps=False)
    model.minimize(add_makespan(model, problem, v))
    if hint is not None:
        _add_hint(model, problem, v, hint)
    return model, v


def _check_buildable(problem: LevelProblem, fixed: LevelSolution | None, free_ops: range | None) -> None:
    """Raise ValueError unless :func:`build_level_model` can model ``problem`` exactly."""
    if problem.splits:
        raise ValueError("expand split groups first (solvers.memory.levels.split.expand_splits)")
    if not exact_model_fits(problem):
        raise ValueError("bandwidth fractions too fine for an exact CP-SAT roofline (64-bit overflow); "
                         "see exact_model_fits")
    if (fixed is None) != (free_ops is None):
        raise ValueError("fixed and free_ops go together")


def _add_op_windows(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, h: int,
                    fixed: LevelSolution | None, free_ops: range | None) -> tuple[int, int]:
    """Each op's start window (``v.earliest``, ``v.latest``, ``v.shortest``; around ``fixed``, the
    shift of the ops after the free ones); returns the first free op and the horizon.

    Ops run one after another: op i starts after the shortest durations of ops 0..i-1,
    and early enough for the shortest durations of ops i..n-1 to end by the horizon.
    (Redundant windows, but presolve otherwise walks the chain one op per loop.)
    """
    n = problem.num_ops
    shortest = list(op_duration_lower_bounds(problem))
    v.earliest = [0] * (n + 1)
    v.latest = [h] * (n + 1)
    if fixed is None:
        lo_op, hi_op = 0, n
    else:
        v.fixed_transfers = {(tr.kind, tr.tensor, tr.gap): tr for tr in fixed.transfers}
        lo_op, hi_op = max(0, free_ops.start), min(n, free_ops.stop)
        for i in range(n):
            if not v.op_is_free(i):
                shortest[i] = fixed.op_duration[i]
        h = v.horizon = min(h, fixed.makespan_cycles)
        ends = [st + du for st, du in zip(fixed.op_start, fixed.op_duration)]
        for i in range(lo_op):  # frozen before the free ops
            v.earliest[i] = v.latest[i] = fixed.op_start[i]
        v.earliest[lo_op] = ends[lo_op - 1] if lo_op else 0
        v.latest[hi_op] = fixed.op_start[hi_op] if hi_op < n else h
    if problem.multi_stream:  # (around ``fixed``: the frozen and shifted ops' windows are reset below)
        _stream_windows(problem, v, shortest, h)
    else:
        for i in range(lo_op, hi_op):
            v.earliest[i + 1] = v.earliest[i] + shortest[i]
        for i in range(hi_op - 1, lo_op - 1, -1):
            v.latest[i] = v.latest[i + 1] - shortest[i]
    if fixed is not None and hi_op < n:  # shifted after the free ops, by shift in [least, 0]
        least = min(0, v.earliest[hi_op] - fixed.op_start[hi_op])
        v.shift = model.new_int_var(least, 0, "shift")
        for i in range(hi_op, n):
            v.earliest[i], v.latest[i] = fixed.op_start[i] + least, fixed.op_start[i]
        v.earliest[n], v.latest[n] = fixed.makespan_cycles + least, fixed.makespan_cycles
    v.shortest = shortest
    if v.latest[lo_op] < v.earliest[lo_op]:  # no plan fits under the horizon: well-formed, infeasible
        v.latest = [max(x, e) for x, e in zip(v.latest, v.earliest)]
        model.add_bool_or([])
    return lo_op, h


def _stream_windows(problem: LevelProblem, v: LevelVars, shortest: list[int], h: int) -> None:
    """Start windows with several streams: op i starts after the shortest durations of the
    earlier ops of its stream and early enough for those of the later ones to end by ``h``;
    ``v.latest[i+1]`` is not op i's latest end here (:meth:`LevelVars.end_window` is kept
    right by ``v.latest_end``)."""
    n = problem.num_ops
    before: dict[int, int] = {}
    for i in range(n):
        s = problem.stream_of(i)
        v.earliest[i] = before.get(s, 0)
        before[s] = v.earliest[i] + shortest[i]
    v.earliest[n] = max(before.values(), default=0)
    after: dict[int, int] = {}
    v.latest_end = [h] * n
    for i in range(n - 1, -1, -1):
        s = problem.stream_of(i)
        v.latest_end[i] = h - after.get(s, 0)
        after[s] = after.get(s, 0) + shortest[i]
        v.latest[i] = v.latest_end[i] - shortest[i]


def _add_op_times(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, h: int,
                  fixed: LevelSolution | None, lo_op: int) -> None:
    """Each op's start and duration (the fixed ops' from ``fixed``), and its compute and fast
    and slow transfer cycles (``v.cf``, ``v.cs``) when free."""
    bf, bs = problem.bandwidth_bytes_per_cycle
    shortest = v.shortest
    for i, row in enumerate(problem.op_accesses()):
        if not v.op_is_free(i):
            if i < lo_op:
                v.start.append(fixed.op_start[i])
            else:
                v.start.append(fixed.op_start[i] + v.shift)
            v.dur.append(shortest[i])
            v.cf.append(None)
            v.cs.append(None)
            continue
        v.start.append(model.new_int_var(v.earliest[i], v.latest[i], f"start_{i}"))
        b = sum(problem.tensor_bytes[t] for t, _ in row)
        longest = max(problem.compute_cycles[i], cycles_for_bytes(b, min(bf, bs)) + 1)
        v.dur.append(model.new_int_var(shortest[i], max(shortest[i], longest), f"dur_{i}"))
        v.cf.append(model.new_int_var(0, cycles_for_bytes(b, bf), f"cf_{i}"))
        v.cs.append(model.new_int_var(0, cycles_for_bytes(b, bs), f"cs_{i}"))
        model.add(v.start[i] + v.dur[i] <= h)


def _add_hint(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, s: LevelSolution) -> None:
    seen: set[int] = set()

    def hint(var, value) -> None:
        if isinstance(var, cp_model.IntVar) and var.index not in seen:
            seen.add(var.index)
            model.add_hint(var, int(value))

    orig = {}
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        o = problem.is_real(acc[0]) and s.in_fast[t][0]
        orig[t, 0] = o
        for j in range(len(acc)):
            hint(v.fast[t, j], s.in_fast[t][j])
            if j:
                hint(v.kept.get((t, j), 0), s.kept[t][j])
                if (t, j) in v.prefetch:
                    hint(v.prefetch[t, j], s.in_fast[t][j] and not s.kept[t][j])
                o = o and s.kept[t][j]
                hint(v.orig.get((t, j), 0), o)
                if (t, j) in v.evict:
                    hint(v.evict[t, j], orig[t, j - 1] and not o)
                orig[t, j] = o
    ends = [st + d for st, d in zip(s.op_start, s.op_duration)]
    starts_ext = [*s.op_start, s.makespan_cycles]
    present = {(tr.kind, tr.tensor, tr.gap): tr for tr in s.transfers}
    for (t, j) in v.prefetch:  # every DMA variable, present or not: a complete hint
        tr = present.get((TransferKind.PREFETCH, t, j))
        k = tr.trigger_op if tr else v.trigger_base[t, j]
        hint(v.trigger[t, j], k - v.trigger_base[t, j])
        hint(v.trigger_end[t, j], ends[k] if k >= 0 else 0)
        start = v.dma_start["p", t, j]
        if isinstance(start, cp_model.IntVar):
            hint(start, tr.start_cycle if tr else _domain_min(model, start))
    for (t, j) in v.evict:
        tr = present.get((TransferKind.EVICT, t, j))
        lo = problem.accesses(t)[j - 1]
        r = tr.release_op if tr else _domain_min(model, v.release[t, j]) + lo + 1
        hint(v.release[t, j], r - lo - 1)
        hint(v.release_start[t, j], starts_ext[r])
        start = v.dma_start["e", t, j]
        if isinstance(start, cp_model.IntVar):
            hint(start, tr.start_cycle if tr else _domain_min(model, start))
    bf, bs = problem.bandwidth_bytes_per_cycle
    for i, row in enumerate(problem.op_accesses()):
        fb = sum(problem.tensor_bytes[t] for t, j in row if s.in_fast[t][j])
        sb = sum(problem.tensor_bytes[t] for t, j in row) - fb
        hint(v.start[i], s.op_start[i])
        hint(v.dur[i], s.op_duration[i])
        hint(v.cf[i], cycles_for_bytes(fb, bf))
        hint(v.cs[i], cycles_for_bytes(sb, bs))
    hint(v.makespan, s.makespan_cycles)
    hint(v.shift, s.makespan_cycles - v.fixed.makespan_cycles if v.fixed is not None else 0)


def _checked_retime(problem: LevelProblem, solution: LevelSolution) -> LevelSolution | None:
    """A window's solution re-timed by the replay, or None if it deadlocks or fails the validator
    (never expected: every window model's solution is a plan; a safety net, so window search
    can only keep valid plans)."""
    try:
        found = retime(problem, solution)
    except ValueError as e:
        _LOG.warning("window solution does not replay: %s", e)
        return None
    errors = validate_levels(problem, found)
    if errors:
        _LOG.warning("window solution is invalid: %s", errors[:3])
        return None
    return found


def _checked_fewer_dmas(problem: LevelProblem, best: LevelSolution) -> LevelSolution:
    """Under sharing, the best start with the DMAs that only cost time dropped
    (:func:`~solvers.memory.levels.greedy.fewer_dmas`), kept when it validates: a plan that
    reads a weight in place is one the Belady starts never try, and the exact model reaches it
    only with a much larger budget (tests/data/specs/memory-shared.yaml)."""
    found = fewer_dmas(problem, best)
    if found is best or validate_levels(problem, found):
        return best
    return found


class CpSatLevelSolver(Accepting):
    """Minimum-makespan residency, prefetch/evict schedule and split factors.

    Examples
    --------
    Weight 0 (8 bytes) is read by op 1 (compute 2); op 0 (compute 8) touches nothing.
    Prefetching it at program start (trigger -1) hides the 8-cycle DMA under op 0, and op 1
    reads it at 4 B/cycle: 8 + max(2, 8/4) = 10 (from slow: 8 + max(2, 8/1) = 16):

    >>> p = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
    >>> r = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=5))
    >>> r.status.value, r.objective, [t.trigger_op for t in r.solution.transfers]
    ('OPTIMAL', 10, [-1])
    """

    name = "cpsat"
    problem_type = LevelProblem

    def __init__(self, prefetch_window_ops: int | None | str = "auto", auto_window_ops: int = 16,
                 auto_above_ops: int = 64, dtime_per_second: float = MEMORY_LEVELS.units_per_second,
                 window_above_ops: int = 64,
                 window_ops: int = 24, window_dtime: float = 0.2, window_units_per_second: float = 1.0,
                 max_window_ops: int = 48, window_workers: int | None = 1) -> None:
        # Trigger window: None = exact (any earlier op may trigger a prefetch); an int limits
        # it to that many ops before the consumer; "auto" = exact up to ``auto_above_ops``
        # ops, else ``auto_window_ops``. A restricted run never claims OPTIMAL unless its
        # makespan meets the problem's lower bound, and reports that bound.
        self.prefetch_window_ops = prefetch_window_ops
        self.auto_window_ops = auto_window_ops
        self.auto_above_ops = auto_above_ops
        # CP-SAT's deterministic time granted per second of ``time_limit_s`` (the budget that
        # ends the search, so runs repeat; the wall clock is only a safety net). 0.05 is the
        # scheduling family's calibration: a 40-op exact model uses 0.07 per wall second.
        self.dtime_per_second = dtime_per_second
        # Above this many ops, window search replaces the one big model: ``window_ops``
        # consecutive ops at a time are re-optimised exactly (everything else as in the
        # incumbent), each solve capped at ``window_dtime``; windows grow (x2, up to
        # ``max_window_ops``) when a sweep finds nothing. Counted work: a window of k ops
        # costs (k / window_ops)**2 units, ``window_units_per_second`` units per second of
        # budget (measured on 250 ops, 2 busy cores: 0.05-1.3 s per 24-op window, 0.5-3 s
        # per 48-op one). Window solves use ``window_workers`` CP-SAT workers (None:
        # options.num_workers, in batches; measured worse: each window is small).
        self.window_above_ops = window_above_ops
        self.window_ops = window_ops
        self.window_dtime = window_dtime
        self.window_units_per_second = window_units_per_second
        self.max_window_ops = max_window_ops
        self.window_workers = window_workers

    def _window(self, problem: LevelProblem) -> int | None:
        if self.prefetch_window_ops == "auto":
            return self.auto_window_ops if problem.num_ops > self.auto_above_ops else None
        return self.prefetch_window_ops

    def solve(self, problem: LevelProblem, options: SolveOptions = SolveOptions()) -> SolveResult[LevelSolution]:
        t0 = time.perf_counter()
        choices = split_factor_choices(problem) if problem.splits else ((),)
        best: LevelSolution | None = None
        bound = None
        all_proven = True
        progress = []
        per_choice = []
        # one budget fixed up front (solvers.budget); split choices share it by what each charged
        budget = Budget.of(options, Calibration("memory-levels", self.dtime_per_second), t0)
        windows_left = (max(4.0, self.window_units_per_second * options.time_limit_s) if budget.deterministic
                        else float("inf"))
        for n_left, factors in zip(range(len(choices), 0, -1), choices):
            expanded = expand_splits(problem, factors)[0] if problem.splits else problem
            opts = options
            if isinstance(options.hint, LevelSolution) and problem.splits:  # a hint for this split choice only
                h = options.hint
                opts = replace(options, hint=replace(h, split_factors=()) if h.split_factors == tuple(factors)
                               else None)
            child = budget.child(budget.left / n_left)
            status, sol, b, prog, info = self._solve_unsplit(expanded, opts, child, windows_left / n_left)
            budget.absorb(child, f"split{list(factors)}")
            windows_left -= info.get("window_units", 0.0)
            progress.extend(prog)
            per_choice.append({"factors": list(factors), "status": status.value,
                               "objective": None if sol is None else sol.makespan_cycles, "bound": b, **info})
            if status is Status.MODEL_INVALID:
                return failure_result(status, self.name, time.perf_counter() - t0, per_split=per_choice,
                                      **budget.stats())
            if status is Status.INFEASIBLE:
                continue
            all_proven &= status is Status.OPTIMAL
            bound = b if bound is None else min(bound, b)
            if sol is not None:
                sol = LevelSolution(sol.in_fast, sol.kept, sol.transfers, sol.op_start, sol.op_duration,
                                    tuple(factors))
                if best is None or sol.makespan_cycles < best.makespan_cycles:
                    best = sol
        wall = time.perf_counter() - t0
        if best is None:
            status = Status.INFEASIBLE if all_proven and bound is None else Status.UNKNOWN
            return failure_result(status, self.name, wall, bound=bound, per_split=per_choice, **budget.stats())
        objective = best.makespan_cycles
        status = Status.OPTIMAL if all_proven and bound is not None and bound >= objective else Status.FEASIBLE
        stats = level_metrics(problem, best).as_dict()
        stats["per_split"] = per_choice
        stats.update(budget.stats())
        return SolveResult(status, objective, min(bound, objective) if bound is not None else None, best, wall,
                           self.name, stats, tuple(progress))

    def _solve_unsplit(self, problem: LevelProblem, options: SolveOptions, budget: Budget, windows: float):
        lb = makespan_lower_bound(problem)
        window = self._window(problem)
        info: dict = {"dtime": 0.0, "lower_bound": lb}
        starts = (plan_greedy(problem, window), plan_all_slow(problem))
        if problem.multi_stream:  # several streams: also the greedy with the DMA load balanced
            starts += (plan_greedy(problem, window, balance_dma=True),)
        candidates = [s for s in starts if s is not None]
        if isinstance(options.hint, LevelSolution) and not validate_levels(problem, options.hint):
            candidates.append(retime(problem, options.hint))
        if problem.shared_bandwidth and problem.multi_stream:  # bandwidth: shared (bandwidth.py)
            candidates += self._series_candidate(problem, options, budget, windows)
        best = min(candidates, key=lambda s: s.makespan_cycles, default=None)
        if problem.shared_bandwidth and best is not None:  # the DMAs that only cost time, dropped
            best = _checked_fewer_dmas(problem, best)
        if best is not None and best.makespan_cycles <= lb:
            return Status.OPTIMAL, best, lb, (), info
        if not exact_model_fits(problem):
            _LOG.warning("level model: bandwidth fractions too fine for CP-SAT; keeping the best baseline")
            return (Status.FEASIBLE if best else Status.UNKNOWN), best, lb, (), info
        if best is not None and problem.num_ops > self.window_above_ops:
            best, progress = self._window_search(problem, best, lb, window, options, budget, windows, info)
            if problem.shared_bandwidth:
                best = _checked_fewer_dmas(problem, best)
            return (Status.OPTIMAL if best.makespan_cycles <= lb else Status.FEASIBLE), best, lb, progress, info
        upper = None if best is None else best.makespan_cycles
        hint = best if best is None or window is None or all(
            tr.kind is TransferKind.EVICT or tr.release_op - tr.trigger_op <= window for tr in best.transfers) else None
        model, v = build_level_model(problem, upper, lb, hint, window)
        # Large chains: probing in presolve costs more than it gives; LNS from the hint wins.
        big = problem.num_ops > self.auto_above_ops
        params = {"cp_model_probing_level": 0, "symmetry_level": 0} if big else {}
        # one worker: plain search; several: interleaved batches, so multi-worker runs repeat
        status, solver, progress = budget.run_cpsat(model, options, budget.left, "one_model", interleave=False,
                                                    **params)
        info["dtime"] = solver.deterministic_time
        info["stopped_by"] = budget.log[-1]["stopped_by"]
        if window is not None:  # a restriction: its proofs say nothing about the problem
            if status is Status.INFEASIBLE:
                return ((Status.FEASIBLE, best, lb, progress, info) if best
                        else (Status.UNKNOWN, None, lb, progress, info))
            if status is Status.OPTIMAL:
                status = Status.FEASIBLE
        if status is Status.MODEL_INVALID:
            return status, None, None, progress, info
        if status is Status.INFEASIBLE:
            if best is None:
                return Status.INFEASIBLE, None, None, progress, info
            return Status.OPTIMAL, best, best.makespan_cycles, progress, info
        if not status.has_solution:
            return (Status.FEASIBLE if best else Status.UNKNOWN), best, lb, progress, info
        found = retime(problem, v.extract(solver))
        if best is None or found.makespan_cycles < best.makespan_cycles:
            best = found
        if problem.shared_bandwidth:  # what the search left: its DMAs that only cost time, dropped
            best = _checked_fewer_dmas(problem, best)
        bound = max(lb, integer_objective_bound(solver)) if window is None else lb
        return (Status.OPTIMAL if bound >= best.makespan_cycles else Status.FEASIBLE), best, bound, progress, info

    def _series_candidate(self, problem: LevelProblem, options: SolveOptions, budget: Budget,
                          windows: float) -> list[LevelSolution]:
        """Shared bandwidth on several streams: the plan with the ops in series (one stream),
        solved first (up to :data:`SHARED_SERIES_SHARE` of the budget), as a start. Under
        sharing the several-stream model is much harder for CP-SAT, and running the merged
        order one op at a time meets every several-stream rule (stream order, data, memory and
        copy order), so the result is never worse than the series plan; kept only if it
        validates."""
        child = budget.child(budget.share(SHARED_SERIES_SHARE))
        _, series, *_ = self._solve_unsplit(replace(problem, op_streams=()), replace(options, hint=None), child,
                                            windows)
        budget.absorb(child, "series")
        if series is None or validate_levels(problem, series):
            return []
        return [retime(problem, series)]

    def _window_search(self, problem: LevelProblem, best: LevelSolution, lb: int, window: int | None,
                       options: SolveOptions, budget: Budget, windows: float, info: dict):
        """Re-optimise windows of consecutive ops exactly, everything else as in the incumbent.

        Each window model (:func:`build_level_model` with ``fixed``/``free_ops``) keeps the
        ops before the window at their times and shifts those after it rigidly, so its
        solutions are valid plans; the replay re-times the result, which is kept when it is
        shorter. Sweeps go left to right with windows overlapping by half; a sweep that
        finds nothing doubles the window, up to ``max_window_ops``, and the search stops
        when the largest finds nothing, or the budget (deterministic time, and ``windows``
        window units) runs out.
        """
        n = problem.num_ops
        size = min(self.window_ops, n)
        solved = improved = 0
        units = 0.0
        start = budget.used
        workers = self.window_workers or options.num_workers
        window_options = replace(options, num_workers=workers, progress=None, log=None)
        progress = []
        stopped = "converged"
        while True:
            stride = max(1, size // 2)
            sweep_improved = False
            for a in range(0, max(1, n - stride), stride):
                cost = (size / self.window_ops) ** 2
                if units + cost > windows + 1e-9 or budget.left <= 0:
                    stopped = "deterministic_budget"
                    break
                if budget.wall_expired():
                    stopped = "wall_time"
                    break
                free = range(a, min(n, a + size))
                model, v = build_level_model(problem, best.makespan_cycles, lb, best, window, fixed=best,
                                             free_ops=free)
                limit = min(budget.scale(self.window_dtime), budget.left)
                status, solver, _ = budget.run_cpsat(model, window_options, limit, None, interleave=False,
                                                     cp_model_probing_level=0)
                if budget.last_stop == "wall_clock":
                    stopped = "wall_time"
                solved += 1
                units += cost
                _LOG.debug("window %d..%d (%d ops): %s in %.2fs, %.3f dtime, best %d", a, free.stop - 1, size,
                           status.value, solver.wall_time, solver.deterministic_time, best.makespan_cycles)
                if status.has_solution:
                    found = _checked_retime(problem, v.extract(solver))
                    if found is not None and found.makespan_cycles < best.makespan_cycles:
                        best = found
                        improved += 1
                        sweep_improved = True
                        point = ProgressPoint(time.perf_counter() - budget.started, best.makespan_cycles, lb)
                        progress.append(point)
                        if options.progress is not None:
                            options.progress(point)
                if best.makespan_cycles <= lb:
                    stopped = "optimal"
                    break
            else:
                if sweep_improved:
                    continue
                if size < min(n, self.max_window_ops):
                    size = min(n, 2 * size, self.max_window_ops)
                    continue
            break
        info.update(dtime=budget.used - start, windows=solved, window_units=units, windows_improved=improved,
                    window_ops=size, stopped_by=stopped)
        budget.note("window_search", 0.0, stopped_by=stopped)
        return best, tuple(progress)
