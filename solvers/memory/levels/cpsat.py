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
  (cf = ceil(FB/bw_f), exact for fractional bandwidths), same for cs with SB = bytes - FB; ``dur = max(compute, cf + cs)``; ``start[i+1] >= start[i] + dur[i]``;
* prefetch (optional interval on ``prefetch``): start >= end of op ``trigger`` (an element
  constraint over the op ends), end <= ``start[a_j]``, start >= end of the tensor's
  eviction; ``trigger >= release`` when the eviction is in the same gap;
* eviction (optional interval on ``evict``): start >= end of ``a_{j-1}``, end <= start of op
  ``release`` (element; index ``num_ops`` is the makespan);
* one DMA engine: ``NoOverlap`` over all DMA intervals;
* fast capacity: ``Cumulative`` on the point axis over the pieces of every tensor (access
  point ``[2a+1, 2a+2)``, kept gap ``[2a_{j-1}+2, 2a_j+1)``, prefetch
  ``[2*trigger+2, 2a_j+1)``, eviction ``[2a_{j-1}+2, 2*release+1)``) with demands = bytes;
* ``makespan >= end of the last op``, ``makespan >= LB`` (:func:`makespan_lower_bound`),
  ``makespan <= U`` with U the best baseline's makespan.

Objective: minimize ``makespan``. Warm start: the better of the greedy and all-in-HBM
plans as a hint; the result is re-timed by the replay (never later) and never worse than
the hint. Split groups: every factor vector is expanded and solved (outer enumeration),
so the split choice is exact when every expansion is.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

from ortools.sat.python import cp_model

from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.cpsat_support import run_cpsat
from solvers.memory.levels.greedy import plan_all_slow, plan_greedy, retime
from solvers.memory.levels.problem import LevelProblem, LevelSolution, Transfer, TransferKind, cycles_for_bytes
from solvers.memory.levels.split import expand_splits, split_factor_choices
from solvers.memory.levels.validate import level_metrics, makespan_lower_bound, validate_levels

__all__ = [
    "LevelVars", "build_level_model", "exact_model_fits", "add_residency", "add_durations", "add_transfers",
    "add_fast_capacity", "add_makespan", "CpSatLevelSolver",
]

_LOG = logging.getLogger(__name__)


@dataclass
class LevelVars:
    """Variable handles of the level model; ``extract`` reads a solution back.

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
    fast: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 0
    kept: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 0
    orig: dict = field(default_factory=dict)  # (t, j) -> BoolVar | 0
    prefetch: dict = field(default_factory=dict)  # (t, j) -> BoolVar
    evict: dict = field(default_factory=dict)  # (t, j) -> BoolVar
    trigger: dict = field(default_factory=dict)  # (t, j) -> IntVar (offset from trigger_base)
    trigger_base: dict = field(default_factory=dict)  # (t, j) -> the earliest trigger op allowed
    release: dict = field(default_factory=dict)  # (t, j) -> IntVar (offset from a_{j-1}+1)
    dma_start: dict = field(default_factory=dict)  # (kind, t, j) -> IntVar
    trigger_end: dict = field(default_factory=dict)  # (t, j) -> IntVar, end of the trigger op
    release_start: dict = field(default_factory=dict)  # (t, j) -> IntVar, start of the release op
    start: list = field(default_factory=list)
    dur: list = field(default_factory=list)
    cf: list = field(default_factory=list)
    cs: list = field(default_factory=list)
    makespan: cp_model.IntVar | None = None

    def end(self, op: int):
        return 0 if op < 0 else self.start[op] + self.dur[op]

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
            if solver.value(lit):
                acc = p.accesses(t)
                transfers.append(Transfer(TransferKind.PREFETCH, t, j,
                                          self.trigger_base[t, j] + solver.value(self.trigger[t, j]),
                                          acc[j], solver.value(self.dma_start["p", t, j]), p.dma_cycles(t)))
        for (t, j), lit in self.evict.items():
            if solver.value(lit):
                acc = p.accesses(t)
                transfers.append(Transfer(TransferKind.EVICT, t, j, acc[j - 1],
                                          acc[j - 1] + 1 + solver.value(self.release[t, j]),
                                          solver.value(self.dma_start["e", t, j]), p.dma_cycles(t)))
        transfers.sort(key=lambda tr: (tr.start_cycle, tr.release_op, tr.kind is TransferKind.PREFETCH,
                                       tr.tensor, tr.gap))
        return LevelSolution(in_fast, kept, tuple(transfers), tuple(solver.value(s) for s in self.start),
                             tuple(solver.value(d) for d in self.dur))


def _horizon(problem: LevelProblem) -> int:
    bf, bs = problem.bandwidth_bytes_per_cycle
    h = 0
    for i, row in enumerate(problem.op_accesses()):
        b = sum(problem.tensor_bytes[t] for t, _ in row)
        h += problem.compute_cycles[i] + cycles_for_bytes(b, bf) + cycles_for_bytes(b, bs)
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
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        for j, a in enumerate(acc):
            if problem.is_real(a):
                v.fast[t, j] = model.new_bool_var(f"fast_{t}_{j}")
                if a in fast_only:
                    model.add(v.fast[t, j] == 1)
            else:
                v.fast[t, j] = 0
        v.orig[t, 0] = v.fast[t, 0]
        for j in range(1, len(acc)):
            x_prev, x = v.fast[t, j - 1], v.fast[t, j]
            if problem.is_real(acc[j - 1]) and problem.is_real(acc[j]):
                k = v.kept[t, j] = model.new_bool_var(f"kept_{t}_{j}")
                model.add_implication(k, x_prev)
                model.add_implication(k, x)
            else:
                k = v.kept[t, j] = 0
            if problem.is_real(acc[j]):
                pf = v.prefetch[t, j] = model.new_bool_var(f"prefetch_{t}_{j}")
                model.add(pf == x - k)
            o_prev = v.orig[t, j - 1]
            if isinstance(o_prev, int):
                v.orig[t, j] = 0
                continue
            if isinstance(k, int):
                v.orig[t, j] = 0
                v.evict[t, j] = o_prev
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
    for i, row in enumerate(problem.op_accesses()):
        total = sum(problem.tensor_bytes[t] for t, _ in row)
        fb = sum(problem.tensor_bytes[t] * v.fast[t, j] for t, j in row)
        cf, cs = v.cf[i], v.cs[i]
        # cf = ceil(FB / (pf/qf)) = ceil(qf*FB / pf); likewise cs for SB = total - FB.
        model.add(pf * cf >= qf * fb)
        model.add(pf * cf <= qf * fb + pf - 1)
        model.add(ps * cs >= qs * (total - fb))
        model.add(ps * cs <= qs * (total - fb) + ps - 1)
        model.add_max_equality(v.dur[i], [problem.compute_cycles[i], cf + cs])
        if i:
            model.add(v.start[i] >= v.end(i - 1))


def add_transfers(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """DMA intervals with their triggers and releases, on one engine.

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> sorted(v.dma_start), v.trigger_base[0, 1]
    ([('p', 0, 1)], -1)
    """
    n, h = problem.num_ops, v.horizon
    starts_ext = [*v.start, v.makespan]
    intervals = []
    for (t, j), pf in v.prefetch.items():
        acc = problem.accesses(t)
        lo, hi, d = acc[j - 1], acc[j], problem.dma_cycles(t)
        if v.prefetch_window_ops is not None:
            lo = max(lo, hi - v.prefetch_window_ops)
        v.trigger_base[t, j] = lo
        trig = v.trigger[t, j] = model.new_int_var(0, hi - 1 - lo, f"trigger_{t}_{j}")
        s = v.dma_start["p", t, j] = model.new_int_var(0, h, f"prefetch_start_{t}_{j}")
        intervals.append(model.new_optional_fixed_size_interval_var(s, d, pf, f"prefetch_{t}_{j}"))
        ready = v.trigger_end[t, j] = model.new_int_var(0, h, f"trigger_end_{t}_{j}")
        model.add_element(trig, [v.end(k) for k in range(lo, hi)], ready)
        model.add(s >= ready).only_enforce_if(pf)
        model.add(s + d <= v.start[hi]).only_enforce_if(pf)
    for (t, j), ev in v.evict.items():
        acc = problem.accesses(t)
        lo, hi, d = acc[j - 1], acc[j], problem.dma_cycles(t)
        rel = v.release[t, j] = model.new_int_var(0, hi - lo - 1, f"release_{t}_{j}")
        s = v.dma_start["e", t, j] = model.new_int_var(0, h, f"evict_start_{t}_{j}")
        intervals.append(model.new_optional_fixed_size_interval_var(s, d, ev, f"evict_{t}_{j}"))
        deadline = v.release_start[t, j] = model.new_int_var(0, h, f"release_start_{t}_{j}")
        model.add_element(rel, starts_ext[lo + 1:hi + 1], deadline)
        model.add(s >= v.end(lo)).only_enforce_if(ev)
        model.add(s + d <= deadline).only_enforce_if(ev)
        for (t2, j2), pf in v.prefetch.items():
            if t2 == t and j2 >= j:
                model.add(v.dma_start["p", t, j2] >= s + d).only_enforce_if([ev, pf])
                if j2 == j:
                    model.add(v.trigger_base[t, j] + v.trigger[t, j] >= lo + 1 + rel).only_enforce_if([ev, pf])
    model.add_no_overlap(intervals)


def add_fast_capacity(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars) -> None:
    """Cumulative on the point axis: fast bytes at every point <= the fast capacity.

    Examples
    --------
    A 16-byte weight cannot be read fast from an 8-byte fast level:

    >>> p = LevelProblem((4,), ((0,),), ((),), (16,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> _ = model.add(v.fast[0, 1] == 1)
    >>> cp_model.CpSolver().solve(model) == cp_model.INFEASIBLE
    True
    """
    intervals, demands = [], []
    for t in range(problem.num_tensors):
        size = problem.tensor_bytes[t]
        if not size:
            continue
        acc = problem.accesses(t)
        for j, a in enumerate(acc):
            x = v.fast[t, j]
            if not isinstance(x, int):
                intervals.append(model.new_optional_fixed_size_interval_var(2 * a + 1, 1, x, f"at_{t}_{j}"))
                demands.append(size)
            if j == 0:
                continue
            k = v.kept.get((t, j), 0)
            if not isinstance(k, int):
                lo = 2 * acc[j - 1] + 2
                intervals.append(model.new_optional_fixed_size_interval_var(lo, 2 * a + 1 - lo, k, f"keep_{t}_{j}"))
                demands.append(size)
            if (t, j) in v.prefetch:
                begin = 2 * (v.trigger_base[t, j] + v.trigger[t, j]) + 2
                intervals.append(model.new_optional_interval_var(begin, 2 * a + 1 - begin, 2 * a + 1,
                                                                 v.prefetch[t, j], f"pf_pts_{t}_{j}"))
                demands.append(size)
            if (t, j) in v.evict:
                lo = 2 * acc[j - 1] + 2
                finish = 2 * (acc[j - 1] + 1 + v.release[t, j]) + 1
                intervals.append(model.new_optional_interval_var(lo, finish - lo, finish, v.evict[t, j],
                                                                 f"ev_pts_{t}_{j}"))
                demands.append(size)
    model.add_cumulative(intervals, demands, problem.capacity_bytes[0])


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
    if problem.num_ops:
        model.add(v.makespan >= v.end(problem.num_ops - 1))
    return v.makespan


def build_level_model(problem: LevelProblem, upper_cycles: int | None = None, lower_cycles: int = 0,
                      hint: LevelSolution | None = None,
                      prefetch_window_ops: int | None = None) -> tuple[cp_model.CpModel, LevelVars]:
    """The CP-SAT model of an unsplit problem, with ``lower <= makespan <= upper``.

    ``prefetch_window_ops`` (None = unrestricted) limits a prefetch's trigger to the last
    that many ops before its consumer (XLA's prefetch interval picker does the same);
    the model is then a restriction and its bound is not a bound of the problem.

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> model, v = build_level_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)  # read 8 bytes from slow: max(4, 8/1) = 8
    8
    """
    if problem.splits:
        raise ValueError("expand split groups first (solvers.memory.levels.split.expand_splits)")
    if not exact_model_fits(problem):
        raise ValueError("bandwidth fractions too fine for an exact CP-SAT roofline (64-bit overflow); "
                         "see exact_model_fits")
    model = cp_model.CpModel()
    h = upper_cycles if upper_cycles is not None else _horizon(problem)
    v = LevelVars(problem, h, prefetch_window_ops)
    bf, bs = problem.bandwidth_bytes_per_cycle
    for i, row in enumerate(problem.op_accesses()):
        b = sum(problem.tensor_bytes[t] for t, _ in row)
        v.start.append(model.new_int_var(0, h, f"start_{i}"))
        v.dur.append(model.new_int_var(0, h, f"dur_{i}"))
        v.cf.append(model.new_int_var(0, cycles_for_bytes(b, bf), f"cf_{i}"))
        v.cs.append(model.new_int_var(0, cycles_for_bytes(b, bs), f"cs_{i}"))
        model.add(v.start[i] + v.dur[i] <= h)
    v.makespan = model.new_int_var(min(lower_cycles, h), h, "makespan")
    add_residency(model, problem, v)
    add_durations(model, problem, v)
    add_transfers(model, problem, v)
    add_fast_capacity(model, problem, v)
    model.minimize(add_makespan(model, problem, v))
    if hint is not None:
        _add_hint(model, problem, v, hint)
    return model, v


def _add_hint(model: cp_model.CpModel, problem: LevelProblem, v: LevelVars, s: LevelSolution) -> None:
    seen: set[int] = set()

    def hint(var, value) -> None:
        if not isinstance(var, int) and var.index not in seen:
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
        hint(v.dma_start["p", t, j], tr.start_cycle if tr else 0)
    for (t, j) in v.evict:
        tr = present.get((TransferKind.EVICT, t, j))
        lo = problem.accesses(t)[j - 1]
        r = tr.release_op if tr else lo + 1
        hint(v.release[t, j], r - lo - 1)
        hint(v.release_start[t, j], starts_ext[r])
        hint(v.dma_start["e", t, j], tr.start_cycle if tr else 0)
    bf, bs = problem.bandwidth_bytes_per_cycle
    for i, row in enumerate(problem.op_accesses()):
        fb = sum(problem.tensor_bytes[t] for t, j in row if s.in_fast[t][j])
        sb = sum(problem.tensor_bytes[t] for t, j in row) - fb
        hint(v.start[i], s.op_start[i])
        hint(v.dur[i], s.op_duration[i])
        hint(v.cf[i], cycles_for_bytes(fb, bf))
        hint(v.cs[i], cycles_for_bytes(sb, bs))
    hint(v.makespan, s.makespan_cycles)


class CpSatLevelSolver:
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

    def __init__(self, prefetch_window_ops: int | None | str = "auto", auto_window_ops: int = 16,
                 auto_above_ops: int = 64) -> None:
        # Trigger window: None = exact (any earlier op may trigger a prefetch); an int limits
        # it to that many ops before the consumer; "auto" = exact up to ``auto_above_ops``
        # ops, else ``auto_window_ops``. A restricted run never claims OPTIMAL unless its
        # makespan meets the problem's lower bound, and reports that bound.
        self.prefetch_window_ops = prefetch_window_ops
        self.auto_window_ops = auto_window_ops
        self.auto_above_ops = auto_above_ops

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
        for n_left, factors in zip(range(len(choices), 0, -1), choices):
            expanded = expand_splits(problem, factors)[0] if problem.splits else problem
            remaining = options.time_limit_s - (time.perf_counter() - t0)
            opts = options
            if isinstance(options.hint, LevelSolution) and problem.splits:  # a hint for this split choice only
                h = options.hint
                opts = replace(options, hint=replace(h, split_factors=()) if h.split_factors == tuple(factors)
                               else None)
            status, sol, b, prog = self._solve_unsplit(expanded, opts, max(0.05, remaining / n_left))
            progress.extend(prog)
            per_choice.append({"factors": list(factors), "status": status.value,
                               "objective": None if sol is None else sol.makespan_cycles, "bound": b})
            if status is Status.MODEL_INVALID:
                return failure_result(status, self.name, time.perf_counter() - t0, per_split=per_choice)
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
            return failure_result(status, self.name, wall, bound=bound, per_split=per_choice)
        objective = best.makespan_cycles
        status = Status.OPTIMAL if all_proven and bound is not None and bound >= objective else Status.FEASIBLE
        stats = level_metrics(problem, best).as_dict()
        stats["per_split"] = per_choice
        return SolveResult(status, objective, min(bound, objective) if bound is not None else None, best, wall,
                           self.name, stats, tuple(progress))

    def _solve_unsplit(self, problem: LevelProblem, options: SolveOptions, time_limit_s: float):
        t0 = time.perf_counter()
        lb = makespan_lower_bound(problem)
        window = self._window(problem)
        candidates = [s for s in (plan_greedy(problem, window), plan_all_slow(problem)) if s is not None]
        if isinstance(options.hint, LevelSolution) and not validate_levels(problem, options.hint):
            candidates.append(options.hint)
        best = min(candidates, key=lambda s: s.makespan_cycles, default=None)
        if best is not None and best.makespan_cycles <= lb:
            return Status.OPTIMAL, best, lb, ()
        if not exact_model_fits(problem):
            _LOG.warning("level model: bandwidth fractions too fine for CP-SAT; keeping the best baseline")
            return (Status.FEASIBLE if best else Status.UNKNOWN), best, lb, ()
        upper = None if best is None else best.makespan_cycles
        hint = best if best is None or window is None or all(
            tr.kind is TransferKind.EVICT or tr.release_op - tr.trigger_op <= window for tr in best.transfers) else None
        model, v = build_level_model(problem, upper, lb, hint, window)
        # Large chains: probing in presolve costs more than it gives; LNS from the hint wins.
        big = problem.num_ops > self.auto_above_ops
        # Keep ~2% of the budget for extraction and the replay that re-times the result.
        remaining = max(0.05, 0.98 * time_limit_s - (time.perf_counter() - t0))
        status, solver, progress = run_cpsat(model, options, remaining,
                                             **({"cp_model_probing_level": 0, "symmetry_level": 0} if big else {}))
        if window is not None:  # a restriction: its proofs say nothing about the problem
            if status is Status.INFEASIBLE:
                return (Status.FEASIBLE, best, lb, progress) if best else (Status.UNKNOWN, None, lb, progress)
            if status is Status.OPTIMAL:
                status = Status.FEASIBLE
        if status is Status.MODEL_INVALID:
            return status, None, None, progress
        if status is Status.INFEASIBLE:
            if best is None:
                return Status.INFEASIBLE, None, None, progress
            return Status.OPTIMAL, best, best.makespan_cycles, progress
        if not status.has_solution:
            return (Status.FEASIBLE if best else Status.UNKNOWN), best, lb, progress
        found = retime(problem, v.extract(solver))
        if best is None or found.makespan_cycles < best.makespan_cycles:
            best = found
        bound = max(lb, int(solver.best_objective_bound)) if window is None else lb
        return (Status.OPTIMAL if bound >= best.makespan_cycles else Status.FEASIBLE), best, bound, progress
