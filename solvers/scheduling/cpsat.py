"""CP-SAT formulation of joint placement and scheduling.

Notes
-----
**Sets.** ops i, devices d (``A(i)`` = devices op i may use), edges e = (u, v), links l.

**Variables.**

* ``start_i``, ``end_i`` in ``[0, H]``; ``x[i, d]`` (op i on device d, the constant true
  when ``|A(i)| = 1``) and an optional fixed-size interval ``op_iv[i, d]`` of length
  ``dur[i][d]`` on ``start_i`` (a fixed interval when ``|A(i)| = 1``);
  ``end_i = start_i + sum_d dur[i][d] x[i, d]``.
* per edge that may cross devices: ``y[e, a, b] = x[u, a] and x[v, b]`` for linked pairs
  ``a != b``; ``z[e, l] = sum_{link_of[a][b] = l} y[e, a, b]`` (the transfer uses link l);
  one transfer start ``ts_e``; an optional interval of length ``transfer_cycles[e][l]`` on
  ``ts_e`` per link, present iff ``z[e, l]``.
* memory (only on devices where the bytes that could ever land there exceed the
  capacity): ``bend_u`` (end of u's output buffer) and ``r[e, b]`` (edge e's copy is
  received on b).

**Constraints** (one ``add_<family>`` each).

* placement: ``sum_d x[i, d] = 1``;
* devices: NoOverlap of the device's intervals when it has one stream, Cumulative with
  capacity = streams (unit demands) otherwise. Streams are assigned after solving by
  interval-graph colouring (sorted by start, lowest free stream): with unit demands and at
  most k intervals live at any instant, k colours always suffice. This keeps one optional
  interval per (op, device) instead of one per (op, device, stream), and has no stream
  symmetry to break;
* precedence and transfers: ``start_v >= end_u`` always; ``ts_e >= end_u``;
  ``z[e, l] => start_v >= ts_e + c[e][l]``; ``x[u, a] + x[v, b] <= 1`` when
  ``link_of[a][b] = -1``;
* links: NoOverlap of each link's transfer intervals (zero-length transfers are left out:
  a half-open empty interval overlaps nothing);
* colocation: ``x[i, d] = x[j, d]`` within a group;
* memory: per device, a Cumulative over resident intervals ``[0, H + 1)`` present iff
  ``x[i, d]``, output buffers ``[start_u, bend_u)`` present iff ``x[u, d]`` with
  ``bend_u >= end_u``, ``bend_u >= end_v`` when u and v share d, ``bend_u >= ts_e + c``
  when the transfer uses l, and received copies ``[ts_e, end_v)`` present iff ``r[e, b]``.
  ``bend_u`` is only bounded below, so a model solution's lifetimes contain the exact
  ones (conservative); the exact lifetimes are representable, so nothing feasible is cut;
* symmetry: devices of one ``device_class`` that are verified interchangeable (equal
  durations, streams, memory, and a link relabelling that preserves ``link_of``'s -1
  pattern and transfer costs) obey value precedence along the topological order: op t may
  use the class's j-th device only if an earlier op uses its (j-1)-th. Any solution can be
  relabelled to comply (order the class's devices by first use), the hint included;
* load cuts (LATENCY): ``sum_i dur[i][d] x[i, d] <= streams[d] * makespan``: redundant,
  but it gives the LP relaxation the fractional load bound;
* bound: ``objective >= lower_bound(problem)``, and ``objective <= hint objective``.

**Objective.** LATENCY: ``makespan >= end_i``. THROUGHPUT: ``maxload >=`` each device's
``sum_i dur x`` and each link's ``sum_e c z``.

**Horizon.** LATENCY: the hint's makespan (the optimum is no later). THROUGHPUT (and
when there is no hint): ``sum_i max_d dur + sum_e max_l c``: left-shifting any feasible
schedule while keeping the order of all its start/end events keeps every constraint
(memory included) and leaves no idle instant, so some optimal schedule fits.

**Large graphs (decomposition).** Above ``CpSatOptions.max_full_ops`` ops (default 400)
the placement of the hint (HEFT's, or ``options.hint``) is fixed and CP-SAT solves only
the sequencing (every ``x`` is constant, so the model is a job shop with transfers). Its
solution is never worse than the hint (the hint is a feasible, hinted solution of the
restricted model). Its proven bound is for the restricted model only, so the result
reports only ``lower_bound(problem)`` as the bound.

**Bounds.** ``lower_bound(problem)`` (critical path, total work, fractional load,
placement- and memory-aware paths, the LP relaxation, the segment chain: see
:mod:`solvers.scheduling.bounds`) is a constraint on the objective. For LATENCY,
:func:`segment_lower_bound` then spends up to ``segment_bound_share`` of the budget proving
bounds with CP-SAT on the segments between cut ops (layers), one proof per group of
same-shape segments, joined by the segment chain. The result's bound is ``max(that, CP-SAT's
best bound)``; in the sequencing-only mode CP-SAT's own bound is for the restricted model
and is not used.

**Never worse than the hint.** ``objective <= hint objective`` is a constraint and the
hint is complete; if CP-SAT returns nothing (or nothing better) in time, the hint is
returned as FEASIBLE with the proven bound, and ``stats["returned"]`` says so.

**Determinism.** The search budget is deterministic time, not wall time: one
:class:`solvers.budget.Budget` of :data:`solvers.budget.SCHEDULING` x ``time_limit_s`` (x
:data:`~solvers.budget.PARALLEL_SPEEDUP` for several workers), fixed up front and split
between segment proofs, segment windows, the bound probe and the main solve by the
deterministic time each actually charged (never by elapsed wall time; nested solves get child
budgets). The wall clock is only a safety net (3 x the limit + 5 s, a timer that stops the
search, so ``stats["stopped_by"] == "wall_clock"`` says exactly when it fired and the run may
not repeat). Interleaved search checks the limit between batches, so a solve may overshoot
its share (the demo's repeated-layer proof used 4.3 units of a 0.6 share); the overshoot is
deterministic too, and the main solve always gets at least a fifth of the budget.
``interleave_search`` is always on in deterministic search: CP-SAT then runs its portfolio
(LNS and LP workers included) in deterministic batches for any ``num_workers``, which
OR-Tools documents as the way to make multi-worker search reproducible (plain parallel
search is not: see google/or-tools issues #2159, #4783). It also helps with one worker:
plain single-worker search is one strategy without LNS and found no improvement on a 218-op
model where the interleaved portfolio did. ``options.search == "until-limit"`` gives every
stage its share of the wall clock instead (several workers then run CP-SAT's plain parallel
portfolio); never reproducible. Presolve probing is switched off
(``cp_model_probing_level = 0``): it took 10 s of wall time for 0.9 dtime on a 218-op model.

**Bound probe (LATENCY).** When the hint is within ``bound_probe_max_gap`` of the lower
bound, the model is first solved with ``makespan == bound`` for ``bound_probe_share`` of
the deterministic budget: a schedule found there is optimal; a proof of infeasibility
raises the bound by one cycle; neither leaves everything as it was. On the STG set (one
device, p streams) this closes most instances whose optimum equals max(critical path,
ceil(work / p)) that the open search misses, at a small cost elsewhere.

**List search first (fixed placement, LATENCY).** When every op has one allowed device and
transfers cost nothing (:func:`~solvers.scheduling.listsearch.fixed_placement`: P|prec|Cmax
on one multi-stream device, job shops), :func:`~solvers.scheduling.listsearch.list_search`
(serial SGS with double justification, a seeded local search over priority lists) runs
before any CP-SAT solve, for ``list_search_work_per_second`` op placements per second of
the time limit (at most ``list_search_max_work``; counted, so deterministic), stopping at
the lower bound; its schedule replaces the hint when shorter. It runs only when some device
has several streams (cumulative resources, where CP-SAT is weakest), unless
``list_search_single_stream``. On the STG set it reaches the
static lower bound on 1,338 of 1,440 instances in milliseconds, where CP-SAT's open search
from HEFT, at 0.05 dtime per second, ended 1-2 cycles above the optimum on 16 tight
packings (no idle cycle allowed at the bound), and the bound probe's share (0.06 dtime at
5 s) was too small to find them: CP-SAT's cumulative search from the fixed bound did not
find some of them in 10 s of 2 workers either. Through the planner (5 s, 2 workers) all
1,440 then match the published optimum or bounds, 99.3 % proven, 0.12 s on average and at
most 4.2 s (CP-SAT's batches overshooting their 0.25 dtime on one instance), identical
in two runs.

**Segments (layered graphs, LATENCY).** Before the main solve, two decompositions along
the cut ops (see :mod:`solvers.scheduling.bounds`): :func:`segment_lower_bound` proves one
bound per group of same-shape segments (a repeated layer is proved once, on its
element-wise floor), and :func:`segment_schedule` solves windows of consecutive segments
(closed at cut ops no edge jumps over) one after the other, each with its source pinned
where the previous window put it, glues them in time and re-times the whole, giving the
hint when it beats HEFT. Inner solves get child budgets (their share of what is left, the
same net), so they stay reproducible.

**Measured** (2 busy cores, OR-Tools 9.15, scripts not in the repo): STG 50-task
instances (rand0000/1/2/5 on 2, 4, 8 processors, one device with p streams) all proven
at the published optimum, in at most 1.1 s; job shop (one device per machine, pinned
ops, zero-cycle links) ft06 = 55 proven at once, ft10 = 930 proven in 18-30 s with one
worker; a 1,000-op random DAG on 4 devices returns a valid plan in 42-52 s of a 60-s
budget (sequencing mode; HEFT's plan, 1.7 % above the bound, was not improved); a 218-op transformer-like DAG on 2+2 devices
(3x speed ratio, all-to-all links) ends at 972,675 vs. a proven 949,290 (gap 2.4 %) in
21-23 s of a 30-s budget on 2 workers, identically on repeated runs (HEFT: 980,614; the
critical path alone: 847,916; without the segment bound the gap stayed at ~9 %).
Wall-time-derived budgets reached 1.3 % but did not repeat.

References
----------
.. [1] L. Perron, F. Didier, "CP-SAT", Google OR-Tools, https://developers.google.com/optimization
.. [2] D. Krupke, "The CP-SAT Primer", https://d-krupke.github.io/cpsat-primer/
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ortools.sat.python import cp_model

from solvers.budget import Budget, Calibration, SCHEDULING
from solvers.cpsat_support import STATUS_MAP
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.scheduling.bounds import bound_segments, lower_bound, segment_floor, topological_order
from solvers.scheduling.decomposition import chain_segment_bound
from solvers.scheduling.heft import HeftScheduler, heft_schedule
from solvers.scheduling.listsearch import fixed_placement, list_search
from solvers.scheduling.problem import (Objective, ScheduledTransfer, SchedulingProblem,
                                        SchedulingSolution)
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = [
    "CpSatScheduler",
    "CpSatOptions",
    "SchedulingVars",
    "build",
    "create_variables",
    "add_placement",
    "add_devices",
    "add_precedence",
    "add_links",
    "add_colocation",
    "add_memory",
    "add_symmetry_breaking",
    "add_load_cuts",
    "add_objective",
    "add_hint",
    "interchangeable_classes",
    "canonical_solution",
    "assign_streams",
    "segment_lower_bound",
    "segment_schedule",
]

_log = logging.getLogger(__name__)

_STATUS_MAP = STATUS_MAP  # CP-SAT status -> Status, shared by every family

TRUE = True  # a literal known to be true (single allowed device)


@dataclass(frozen=True, slots=True)
class CpSatOptions:
    """Tunables of :class:`CpSatScheduler` beyond :class:`~solvers.core.SolveOptions`.

    Examples
    --------
    >>> CpSatOptions().max_full_ops
    400
    """

    # Above this many ops the hint's placement is fixed and only sequencing is solved.
    max_full_ops: int = 400
    # Deterministic-time units granted per second of the time limit for one worker (two or
    # more get solvers.budget.PARALLEL_SPEEDUP times as much); None: the family's calibration,
    # solvers.budget.SCHEDULING. Raise it for more search per second of limit.
    dtime_per_second: float | None = None
    # Run CP-SAT's portfolio (LNS included) in deterministic batches, for any worker count.
    interleave_search: bool = True
    # LATENCY: share of the time budget spent proving bounds on segments between cut ops
    # (see segment_lower_bound); 0 turns it off.
    segment_bound_share: float = 0.4
    # LATENCY: share of the time budget spent building a hint from per-segment solutions
    # (see segment_schedule); 0 turns it off.
    segment_schedule_share: float = 0.3
    # Segments with fewer ops than this keep their cheap bound and use HEFT.
    segment_min_ops: int = 4
    # segment_schedule solves windows of consecutive segments with at least this many ops.
    segment_window_ops: int = 24
    # Break symmetry among interchangeable devices of equal device_class.
    symmetry_breaking: bool = True
    # LATENCY: when the hint is within this relative distance of the lower bound, first
    # try "makespan = bound" as a feasibility problem (tight windows propagate far better
    # than an open objective); 0 turns it off.
    bound_probe_max_gap: float = 0.05
    # Share of the deterministic budget the bound probe may use.
    bound_probe_share: float = 0.25
    # LATENCY problems with a fixed placement and free transfers (P|prec|Cmax such as the
    # STG set, job shops; see listsearch.fixed_placement): op placements the list search
    # may spend per second of the time limit before CP-SAT starts from its schedule
    # (counted, not timed: ~5-15 us each on a busy core); 0 turns it off.
    list_search_work_per_second: int = 20_000
    # ... and at most this many in all.
    list_search_max_work: int = 200_000
    # Also run it when every device used has one stream (job shops). Off: there CP-SAT's
    # NoOverlap reasoning is strong and the search did not pay (ft10: 1,047 after 200,000
    # placements, 1.2 s, against the optimum 930 that CP-SAT proves).
    list_search_single_stream: bool = False


# ----------------------------------------------------------------------------- variables


@dataclass
class SchedulingVars:
    """Handles of the model's variables, with queries and :meth:`extract`.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> model, v = build(p, horizon=20)
    >>> sorted(v.allowed[0]), v.horizon
    ([0, 1], 20)
    """

    problem: SchedulingProblem
    horizon: int
    allowed: list[tuple[int, ...]]
    start: list[Any] = field(default_factory=list)
    end: list[Any] = field(default_factory=list)
    x: dict[tuple[int, int], Any] = field(default_factory=dict)
    op_iv: dict[tuple[int, int], Any] = field(default_factory=dict)
    ts: dict[int, Any] = field(default_factory=dict)
    y: dict[tuple[int, int, int], Any] = field(default_factory=dict)
    z: dict[tuple[int, int], Any] = field(default_factory=dict)
    t_iv: dict[tuple[int, int], Any] = field(default_factory=dict)
    bend: dict[int, Any] = field(default_factory=dict)
    recv: dict[tuple[int, int], Any] = field(default_factory=dict)
    used: dict[tuple[int, int], Any] = field(default_factory=dict)
    sym_classes: list[tuple[int, ...]] = field(default_factory=list)
    objective: Any = None

    def lit(self, i: int, d: int):
        """The literal "op i on device d" (Python True/False when fixed)."""
        if d not in self.allowed[i]:
            return False
        return self.x[i, d]

    def value_of(self, solver: cp_model.CpSolver, lit) -> bool:
        if isinstance(lit, bool):
            return lit
        return bool(solver.boolean_value(lit))

    def device_of(self, solver: cp_model.CpSolver, i: int) -> int:
        for d in self.allowed[i]:
            if self.value_of(solver, self.x[i, d]):
                return d
        raise AssertionError(f"op {i} has no device in the solution")  # pragma: no cover

    def extract(self, solver: cp_model.CpSolver) -> SchedulingSolution:
        """The solver's solution as a :class:`SchedulingSolution` (streams by colouring)."""
        p = self.problem
        dev = tuple(self.device_of(solver, i) for i in range(p.num_ops))
        start = tuple(int(solver.value(s)) for s in self.start)
        dur = tuple(p.durations_cycles[i][dev[i]] for i in range(p.num_ops))
        transfers = []
        for (e, link), zl in sorted(self.z.items()):
            if self.value_of(solver, zl):
                transfers.append(ScheduledTransfer(e, link, int(solver.value(self.ts[e])),
                                                   p.transfer_cycles[e][link]))
        stream = assign_streams(p, dev, start, dur)
        return SchedulingSolution(dev, stream, start, dur, tuple(transfers))


def assign_streams(problem: SchedulingProblem, dev, start, dur) -> tuple[int, ...]:
    """Streams by interval-graph colouring: by start time, the lowest free stream.

    Valid whenever at most ``streams[d]`` ops overlap at any instant on device d.

    Examples
    --------
    >>> p = SchedulingProblem(((2,), (2,), (2,)), (), (2,), ((-1,),), ())
    >>> assign_streams(p, (0, 0, 0), (0, 1, 2), (2, 2, 2))
    (0, 1, 0)
    """
    stream = [0] * problem.num_ops
    free: dict[int, list[int]] = {}
    for i in sorted(range(problem.num_ops), key=lambda k: (start[k], start[k] + dur[k], k)):
        if dur[i] == 0:
            continue
        lanes = free.setdefault(dev[i], [0] * problem.device_streams[dev[i]])
        for s, t in enumerate(lanes):
            if t <= start[i]:
                stream[i] = s
                lanes[s] = start[i] + dur[i]
                break
        else:  # more overlap than streams: the caller's bug; keep going, validation reports it
            stream[i] = 0
    return tuple(stream)


def _literal_and(model: cp_model.CpModel, a, b, name: str):
    """A literal equal to ``a and b`` (Python bools folded)."""
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    y = model.new_bool_var(name)
    model.add_bool_and([a, b]).only_enforce_if(y)
    model.add_bool_or([a.Not(), b.Not(), y])
    return y


def _enforce(ct, *lits) -> None:
    real = [lit for lit in lits if lit is not True]
    if real:
        ct.only_enforce_if(real)


def _memory_devices(problem: SchedulingProblem, allowed) -> list[int]:
    """Devices whose memory can overflow: the bytes that could ever land there exceed it."""
    out = []
    for d in range(problem.num_devices):
        cap = problem.memory_bytes(d)
        if cap <= 0:
            continue
        total = sum(problem.resident_bytes(i) + problem.output_bytes(i)
                    for i in range(problem.num_ops) if d in allowed[i])
        total += sum(b for (u, v, b) in problem.edges if d in allowed[v])
        if total > cap:
            out.append(d)
    return out


def create_variables(model: cp_model.CpModel, problem: SchedulingProblem, horizon: int,
                     placement: tuple[int, ...] | None = None) -> SchedulingVars:
    """Start/end, placement literals and op intervals (``placement`` fixes every op's device).

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (3, 3)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> v = create_variables(cp_model.CpModel(), p, 10)
    >>> v.lit(0, 0), v.lit(0, 1)
    (True, False)
    """
    n = problem.num_ops
    allowed = [((placement[i],) if placement is not None else problem.allowed_devices(i))
               for i in range(n)]
    v = SchedulingVars(problem, horizon, allowed)
    for i in range(n):
        s = model.new_int_var(0, horizon, f"start_{i}")
        e = model.new_int_var(0, horizon, f"end_{i}")
        v.start.append(s)
        v.end.append(e)
        if len(allowed[i]) == 1:
            d = allowed[i][0]
            v.x[i, d] = TRUE
            v.op_iv[i, d] = model.new_fixed_size_interval_var(s, problem.durations_cycles[i][d],
                                                              f"op_{i}_{d}")
            model.add(e == s + problem.durations_cycles[i][d])
            continue
        for d in allowed[i]:
            x = model.new_bool_var(f"x_{i}_{d}")
            v.x[i, d] = x
            v.op_iv[i, d] = model.new_optional_fixed_size_interval_var(
                s, problem.durations_cycles[i][d], x, f"op_{i}_{d}")
        model.add(e == s + sum(problem.durations_cycles[i][d] * v.x[i, d] for d in allowed[i]))
    return v


# ----------------------------------------------------------------------------- families


def add_placement(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Each op on exactly one of its allowed devices.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 10)
    >>> add_placement(m, p, v)
    []
    """
    for i in range(problem.num_ops):
        lits = [v.x[i, d] for d in v.allowed[i]]
        if len(lits) > 1:
            model.add_exactly_one(lits)
    return []


def add_devices(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """NoOverlap (one stream) or Cumulative with capacity = streams, per device.

    Examples
    --------
    >>> p = SchedulingProblem(((4,), (4,)), (), (2,), ((-1,),), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 10)
    >>> add_devices(m, p, v)
    []
    """
    for d in range(problem.num_devices):
        ivs = [v.op_iv[i, d] for i in range(problem.num_ops)
               if d in v.allowed[i] and problem.durations_cycles[i][d] > 0]
        if len(ivs) < 2:
            continue
        k = problem.device_streams[d]
        if k == 1:
            model.add_no_overlap(ivs)
        elif k < len(ivs):
            model.add_cumulative(ivs, [1] * len(ivs), k)
    return []


def add_precedence(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Precedence, transfer literals and intervals, and forbidden (-1) device pairs.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> add_precedence(m, p, v); sorted(v.z)
    []
    [(0, 0)]
    """
    for e, (u, w, _b) in enumerate(problem.edges):
        model.add(v.start[w] >= v.end[u])
        per_link: dict[int, list] = {}
        for a in v.allowed[u]:
            for b in v.allowed[w]:
                if a == b:
                    continue
                xa, xb = v.x[u, a], v.x[w, b]
                link = problem.link_of[a][b]
                if link < 0:
                    lits = [lit.Not() for lit in (xa, xb) if lit is not True]
                    model.add_bool_or(lits)  # empty => infeasible, as it must be
                    continue
                y = _literal_and(model, xa, xb, f"y_{e}_{a}_{b}")
                v.y[e, a, b] = y
                per_link.setdefault(link, []).append(y)
        if not per_link:
            continue
        ts = model.new_int_var(0, v.horizon, f"tstart_{e}")
        v.ts[e] = ts
        model.add(ts >= v.end[u])
        for link, ys in sorted(per_link.items()):
            c = problem.transfer_cycles[e][link]
            if len(ys) == 1:
                zl = ys[0]
            elif any(y is True for y in ys):  # pragma: no cover - at most one pair can be certain
                zl = True
            else:
                zl = model.new_bool_var(f"z_{e}_{link}")
                model.add(zl == sum(ys))
            v.z[e, link] = zl
            _enforce(model.add(v.start[w] >= ts + c), zl)
            if c > 0:
                if zl is True:
                    v.t_iv[e, link] = model.new_fixed_size_interval_var(ts, c, f"xfer_{e}_{link}")
                else:
                    v.t_iv[e, link] = model.new_optional_fixed_size_interval_var(
                        ts, c, zl, f"xfer_{e}_{link}")
    return []


def add_links(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Transfers on one link do not overlap.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20); _ = add_precedence(m, p, v)
    >>> add_links(m, p, v)
    []
    """
    per_link: dict[int, list] = {}
    for (e, link), iv in sorted(v.t_iv.items()):
        per_link.setdefault(link, []).append(iv)
    for link, ivs in sorted(per_link.items()):
        if len(ivs) > 1:
            model.add_no_overlap(ivs)
    return []


def add_colocation(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Ops of one group share a device.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       colocation_groups=((0, 1),))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> add_colocation(m, p, v)
    []
    """
    for g in problem.colocation_groups:
        members = sorted(set(g))
        devices = sorted({d for i in members for d in v.allowed[i]})
        for d in devices:
            lits = [v.lit(i, d) for i in members]
            if any(lit is False for lit in lits):
                for lit in lits:
                    if lit is True:
                        model.add_bool_or([])  # a fixed op cannot follow the group
                    elif lit is not False:
                        model.add(lit == 0)
                continue
            first = lits[0]
            for lit in lits[1:]:
                if first is True and lit is True:
                    continue
                if first is True or lit is True:
                    other = lit if first is True else first
                    model.add(other == 1)
                else:
                    model.add(lit == first)
    return []


def add_memory(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Resident bytes plus live buffers within each device's memory (see module Notes).

    Skipped on devices where every byte that could land there fits anyway.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_memory_bytes=(10, 10), op_resident_bytes=(20,))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> add_memory(m, p, v)
    []
    """
    devs = _memory_devices(problem, v.allowed)
    if not devs:
        return []
    H = v.horizon
    need_bend = sorted({u for u in range(problem.num_ops) if problem.output_bytes(u) > 0
                        and any(d in devs for d in v.allowed[u])})
    for u in need_bend:
        v.bend[u] = model.new_int_var(0, H, f"bufend_{u}")
        model.add(v.bend[u] >= v.end[u])
    for e, (u, w, _b) in enumerate(problem.edges):
        if u not in v.bend:
            continue
        for d in v.allowed[u]:
            if d in v.allowed[w]:
                _enforce(model.add(v.bend[u] >= v.end[w]), v.x[u, d], v.x[w, d])
        for (e2, link), zl in v.z.items():
            if e2 == e:
                _enforce(model.add(v.bend[u] >= v.ts[e] + problem.transfer_cycles[e][link]), zl)
    for d in devs:
        cap = problem.memory_bytes(d)
        ivs, demands = [], []
        for i in range(problem.num_ops):
            if d not in v.allowed[i]:
                continue
            xd = v.x[i, d]
            r = problem.resident_bytes(i)
            if r > 0:  # [0, H + 1) covers every instant, even with H = 0
                if xd is True:
                    ivs.append(model.new_fixed_size_interval_var(0, H + 1, f"res_{i}_{d}"))
                else:
                    ivs.append(model.new_optional_fixed_size_interval_var(0, H + 1, xd,
                                                                          f"res_{i}_{d}"))
                demands.append(r)
            ob = problem.output_bytes(i)
            if ob > 0:
                size = model.new_int_var(0, H, f"bufsize_{i}_{d}")
                if xd is True:
                    ivs.append(model.new_interval_var(v.start[i], size, v.bend[i], f"buf_{i}_{d}"))
                else:
                    ivs.append(model.new_optional_interval_var(v.start[i], size, v.bend[i], xd,
                                                               f"buf_{i}_{d}"))
                demands.append(ob)
        for e, (u, w, b) in enumerate(problem.edges):
            if b <= 0 or d not in v.allowed[w] or e not in v.ts:
                continue
            ys = [y for (e2, a, bb), y in v.y.items() if e2 == e and bb == d]
            if not ys:
                continue
            if len(ys) == 1:
                rl = ys[0]
            else:
                rl = model.new_bool_var(f"recv_{e}_{d}")
                model.add(rl == sum(ys))
            v.recv[e, d] = rl
            size = model.new_int_var(0, H, f"copysize_{e}_{d}")
            if rl is True:
                ivs.append(model.new_interval_var(v.ts[e], size, v.end[w], f"copy_{e}_{d}"))
            else:
                ivs.append(model.new_optional_interval_var(v.ts[e], size, v.end[w], rl,
                                                           f"copy_{e}_{d}"))
            demands.append(b)
        if ivs:
            model.add_cumulative(ivs, demands, cap)
        resident = [problem.resident_bytes(i) * v.x[i, d] for i in range(problem.num_ops)
                    if d in v.allowed[i] and problem.resident_bytes(i) > 0]
        if resident:  # redundant with the cumulative, but propagates on placement alone
            model.add(sum(resident) <= cap)
    return []


def interchangeable_classes(problem: SchedulingProblem,
                            allowed: list[tuple[int, ...]] | None = None) -> list[tuple[int, ...]]:
    """Groups of devices of equal ``device_class`` verified to be interchangeable.

    A group is kept when every adjacent swap of its devices preserves durations, streams,
    memory, the -1 pattern of ``link_of`` and the transfer cost of every edge under an
    induced link relabelling (adjacent swaps generate every permutation).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4, 9),), (), (1, 1, 1), ((-1, 0, 0), (0, -1, 0), (0, 0, -1)),
    ...                       (), device_class=(0, 0, 1))
    >>> interchangeable_classes(p)
    [(0, 1)]
    """
    if not problem.device_class:
        return []
    by_class: dict[int, list[int]] = {}
    for d, c in enumerate(problem.device_class):
        by_class.setdefault(c, []).append(d)
    out = []
    for c in sorted(by_class):
        devs = by_class[c]
        if len(devs) < 2:
            continue
        if all(_swap_ok(problem, a, b, allowed) for a, b in zip(devs, devs[1:])):
            out.append(tuple(devs))
    return out


def _link_map(problem: SchedulingProblem, perm: dict[int, int]) -> dict[int, int] | None:
    """The link relabelling induced by a device permutation, or None if there is none."""
    nd = problem.num_devices
    mp: dict[int, int] = {}
    for a in range(nd):
        for b in range(nd):
            l0 = problem.link_of[a][b]
            l1 = problem.link_of[perm.get(a, a)][perm.get(b, b)]
            if (l0 < 0) != (l1 < 0):
                return None
            if l0 < 0:
                continue
            if mp.setdefault(l0, l1) != l1:
                return None
    if len(set(mp.values())) != len(mp):
        return None
    return mp


def _swap_ok(problem: SchedulingProblem, a: int, b: int, allowed) -> bool:
    if problem.device_streams[a] != problem.device_streams[b]:
        return False
    if problem.memory_bytes(a) != problem.memory_bytes(b):
        return False
    for i in range(problem.num_ops):
        if problem.durations_cycles[i][a] != problem.durations_cycles[i][b]:
            return False
        if allowed is not None and ((a in allowed[i]) != (b in allowed[i])):
            return False
    mp = _link_map(problem, {a: b, b: a})
    if mp is None:
        return False
    return all(row[l0] == row[l1] for row in problem.transfer_cycles for l0, l1 in mp.items())


def canonical_solution(problem: SchedulingProblem, solution: SchedulingSolution,
                       classes: list[tuple[int, ...]]) -> SchedulingSolution:
    """Relabel interchangeable devices by first use along the topological order.

    The result satisfies :func:`add_symmetry_breaking`'s value precedence.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_class=(0, 0))
    >>> s = SchedulingSolution((1, 0), (0, 0), (0, 0), (4, 4), ())
    >>> canonical_solution(p, s, [(0, 1)]).op_device
    (0, 1)
    """
    perm: dict[int, int] = {}
    order = topological_order(problem)
    for devs in classes:
        seen: list[int] = []
        for i in order:
            d = solution.op_device[i]
            if d in devs and d not in seen:
                seen.append(d)
        seen += [d for d in devs if d not in seen]
        for new, old in zip(devs, seen):
            perm[old] = new
    if all(k == w for k, w in perm.items()):
        return solution
    lmap = _link_map(problem, perm)
    if lmap is None:
        return solution
    dev = tuple(perm.get(d, d) for d in solution.op_device)
    transfers = tuple(ScheduledTransfer(t.edge, lmap[t.link], t.start_cycle, t.duration_cycles)
                      for t in solution.transfers)
    return SchedulingSolution(dev, solution.op_stream, solution.op_start, solution.op_duration,
                              transfers)


def add_symmetry_breaking(model: cp_model.CpModel, problem: SchedulingProblem,
                          v: SchedulingVars) -> list:
    """Value precedence along the topological order within each class in ``v.sym_classes``.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_class=(0, 0))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20); v.sym_classes = [(0, 1)]
    >>> add_symmetry_breaking(m, p, v)
    []
    """
    order = topological_order(problem)
    for devs in v.sym_classes:
        prev_used: list[Any] = [False] * len(devs)  # used[j]: some earlier op uses devs[j]
        for i in order:
            lits = [v.lit(i, d) for d in devs]
            if all(lit is False for lit in lits):
                continue
            for j in range(1, len(devs)):
                if lits[j] is False:
                    continue
                if prev_used[j - 1] is False:
                    if lits[j] is True:
                        model.add_bool_or([])
                    else:
                        model.add(lits[j] == 0)
                elif prev_used[j - 1] is not True:
                    _enforce(model.add_bool_or([prev_used[j - 1]]), lits[j])
            new_used = []
            for j in range(len(devs)):
                a, b = prev_used[j], lits[j]
                if a is True or b is True:
                    new_used.append(True)
                elif a is False:
                    new_used.append(b)
                elif b is False:
                    new_used.append(a)
                else:
                    u = model.new_bool_var(f"used_{devs[j]}_{i}")
                    model.add_max_equality(u, [a, b])
                    v.used[i, devs[j]] = u
                    new_used.append(u)
            prev_used = new_used
    return []


def add_load_cuts(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """LATENCY only: ``sum_i dur x <= streams * makespan`` per device (redundant, LP-strong).

    Call after :func:`add_objective`.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20); _ = add_objective(m, p, v, 0)
    >>> add_load_cuts(m, p, v)
    []
    """
    if problem.objective is not Objective.LATENCY or v.objective is None:
        return []
    for d in range(problem.num_devices):
        terms = [problem.durations_cycles[i][d] * v.lit(i, d) for i in range(problem.num_ops)
                 if d in v.allowed[i] and v.lit(i, d) is not True]
        fixed = sum(problem.durations_cycles[i][d] for i in range(problem.num_ops)
                    if v.lit(i, d) is True)
        if terms or fixed:
            model.add(sum(terms) + fixed <= problem.device_streams[d] * v.objective)
    return []


def add_objective(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
                  bound: int, upper: int | None = None) -> list:
    """Makespan (LATENCY) or max load (THROUGHPUT) in ``[bound, upper]``; minimized.

    Returns the objective variable in a list.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> [obj.name for obj in add_objective(m, p, v, 4)]
    ['makespan']
    """
    if problem.objective is Objective.LATENCY:
        hi = v.horizon if upper is None else min(upper, v.horizon)
        obj = model.new_int_var(min(bound, hi), hi, "makespan")
        for e in v.end:
            model.add(obj >= e)
    else:
        cap = (sum(max(r) for r in problem.durations_cycles)
               + sum(max(r, default=0) for r in problem.transfer_cycles))
        hi = cap if upper is None else min(upper, cap)
        obj = model.new_int_var(min(bound, hi), hi, "maxload")
        for d in range(problem.num_devices):
            terms = [problem.durations_cycles[i][d] * v.lit(i, d) for i in range(problem.num_ops)
                     if d in v.allowed[i]]
            if terms:
                model.add(obj >= sum(terms))
        per_link: dict[int, list] = {}
        for (e, link), zl in sorted(v.z.items()):
            per_link.setdefault(link, []).append(problem.transfer_cycles[e][link] * zl)
        for link, terms in sorted(per_link.items()):
            model.add(obj >= sum(terms))
    model.minimize(obj)
    v.objective = obj
    return [obj]


def build(problem: SchedulingProblem, horizon: int, *, bound: int = 0, upper: int | None = None,
          placement: tuple[int, ...] | None = None,
          symmetry_breaking: bool = True) -> tuple[cp_model.CpModel, SchedulingVars]:
    """The full model (no solver here): variables, every family, objective.

    Parameters
    ----------
    problem : SchedulingProblem
    horizon : int
        Latest cycle any op may end.
    bound, upper : int
        Proven lower bound and known upper bound on the objective.
    placement : tuple of int, optional
        Fix every op's device (sequencing only).
    symmetry_breaking : bool
        Add value precedence among interchangeable devices.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> model, v = build(p, horizon=20, bound=7)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> solver.solve(model) == cp_model.OPTIMAL, v.extract(solver).makespan_cycles
    (True, 7)
    """
    model = cp_model.CpModel()
    v = create_variables(model, problem, horizon, placement)
    if symmetry_breaking and placement is None:
        v.sym_classes = interchangeable_classes(problem, v.allowed)
    add_placement(model, problem, v)
    add_devices(model, problem, v)
    add_precedence(model, problem, v)
    add_links(model, problem, v)
    add_colocation(model, problem, v)
    add_memory(model, problem, v)
    add_symmetry_breaking(model, problem, v)
    add_objective(model, problem, v, bound, upper)
    add_load_cuts(model, problem, v)
    return model, v


def add_hint(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
             solution: SchedulingSolution) -> None:
    """Hint every variable from a solution (complete, so fixing to it is feasible).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> model, v = build(p, horizon=20)
    >>> add_hint(model, p, v, SchedulingSolution((0, 0), (0, 0), (0, 4), (4, 3), ()))
    >>> model.has_hint() if hasattr(model, "has_hint") else True
    True
    """
    done: set[int] = set()

    def hint(var, value) -> None:  # folded literals share variables: hint each once
        if var is True or var is False or var is None:
            return
        value = int(value)
        if isinstance(var, cp_model.IntVar):
            key = var.index
        else:  # a negated literal
            key, value = var.Not().index, 1 - value
            var = var.Not()
        if key not in done:
            done.add(key)
            model.add_hint(var, value)

    dev = solution.op_device
    end = [solution.op_end(i) for i in range(problem.num_ops)]
    for i in range(problem.num_ops):
        hint(v.start[i], solution.op_start[i])
        hint(v.end[i], end[i])
        for d in v.allowed[i]:
            hint(v.x[i, d], dev[i] == d)
    t_of = {t.edge: t for t in solution.transfers}
    for e, ts in v.ts.items():
        t = t_of.get(e)
        hint(ts, t.start_cycle if t else end[problem.edges[e][0]])
    for (e, a, b), y in v.y.items():
        u, w, _ = problem.edges[e]
        hint(y, dev[u] == a and dev[w] == b)
    for (e, link), zl in v.z.items():
        t = t_of.get(e)
        hint(zl, t is not None and t.link == link)
    for (e, d), rl in v.recv.items():
        u, w, _ = problem.edges[e]
        hint(rl, dev[w] == d and dev[u] != d)
    if v.bend:
        buf_end = list(end)
        for e, (u, w, _) in enumerate(problem.edges):
            if dev[u] == dev[w]:
                buf_end[u] = max(buf_end[u], end[w])
            elif e in t_of:
                buf_end[u] = max(buf_end[u], t_of[e].end_cycle)
        for u, var in v.bend.items():
            hint(var, buf_end[u])
    if v.used:
        seen: set[int] = set()
        for i in topological_order(problem):
            seen.add(dev[i])
            for devs in v.sym_classes:
                for d in devs:
                    if (i, d) in v.used:
                        hint(v.used[i, d], d in seen)
    hint(v.objective, objective_value(problem, solution))


# ----------------------------------------------------------------------------- bounds


def _segment_signature(sub: SchedulingProblem):
    # exact repeats only: one proof on the element-wise floor of segments that merely share a
    # shape (inception modules of different widths) proved little more than the critical path
    return (sub.num_ops, sub.edges and tuple((u, v) for u, v, _ in sub.edges),
            sub.durations_cycles, sub.transfer_cycles, sub.colocation_groups)


def segment_lower_bound(problem: SchedulingProblem, options: SolveOptions,
                        budget: "Budget | float", cfg: "CpSatOptions | None" = None) -> tuple[int, dict]:
    """The segment bound of :func:`~solvers.scheduling.bounds.segment_bound`, with CP-SAT
    proving bounds on the larger segments (the segments of
    :func:`~solvers.scheduling.bounds.bound_segments`, joined by
    :func:`~solvers.scheduling.decomposition.chain_segment_bound`).

    Segments that repeat exactly (ops, edges, durations, transfers, colocation; repeated
    layers) form a group, and one CP-SAT bound serves the whole group. (Its *floor* problem
    takes, op by op and edge by edge, the smallest duration and transfer over its members:
    shrinking durations keeps any schedule feasible with starts unchanged, so the floor's
    optimum is at most each member's. Grouping by shape alone, with one floor for inception
    modules of different widths, proved no more than the critical path.) Groups are proved
    largest first (ops x members) within ``budget`` (a :class:`~solvers.budget.Budget`, or
    that many deterministic-time units with the net of ``options``); each group's share
    depends only on what the earlier ones charged. The rest keep their cheap bound.

    Returns
    -------
    (bound, stats)

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (5,), (5,), (1,)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,), ((-1,),), ((),) * 4)
    >>> segment_lower_bound(p, SolveOptions(), 1.0)[0]
    12
    """
    cfg = cfg or CpSatOptions()
    budget = _as_budget(budget, options, cfg)
    if problem.objective is not Objective.LATENCY:
        return 0, {}
    pruned, segs = bound_segments(problem)
    if not segs:
        return 0, {}
    bounds = [segment_floor(sub) for sub, _ in segs]
    groups: dict[Any, list[int]] = {}
    for k, (sub, _) in enumerate(segs):
        if sub.num_ops >= cfg.segment_min_ops and sub.num_ops < problem.num_ops:
            groups.setdefault(_segment_signature(sub), []).append(k)
    order = sorted(groups.values(), key=lambda ks: (-len(ks) * segs[ks[0]][0].num_ops, ks[0]))
    inner_cfg = _inner_config(cfg)
    proved = 0
    for gi, ks in enumerate(order):
        if budget.left <= 0 or budget.wall_expired():
            break
        members = [segs[k][0] for k in ks]
        base = members[0]
        durations = tuple(tuple(min(m.durations_cycles[i][d] for m in members)
                                for d in range(base.num_devices)) for i in range(base.num_ops))
        transfer = tuple(tuple(min(m.transfer_cycles[e][link] for m in members)
                               for link in range(base.num_links)) for e in range(len(base.edges)))
        floor = SchedulingProblem(durations, base.edges, base.device_streams, base.link_of, transfer,
                                  Objective.LATENCY, colocation_groups=base.colocation_groups,
                                  device_class=base.device_class)
        share = budget.left / max(1, min(len(order) - gi, 3))  # next 3 groups
        r = _inner_solve(inner_cfg, floor, options, budget, share, f"segment_bound[{gi}]")
        if r.bound is not None:
            proved += 1
            for k in ks:
                bounds[k] = max(bounds[k], int(r.bound))
    stats = {"segments": len(segs), "segment_groups": len(order), "segment_groups_proved": proved,
             "segment_bound_dtime": budget.used, "segment_bound_stopped_by": budget.stop_word()}
    return chain_segment_bound(pruned, segs, bounds), stats


def _as_budget(budget: "Budget | float", options: SolveOptions, cfg: "CpSatOptions") -> Budget:
    """``budget`` itself, or a budget of that many units with the net of ``options``."""
    if isinstance(budget, Budget):
        return budget
    whole = Budget.of(options, _calibration(cfg))
    return replace(whole, total=max(1e-3, float(budget)) if whole.deterministic else whole.total)


def _calibration(cfg: "CpSatOptions") -> Calibration:
    """The scheduling family's calibration, or the rate ``cfg`` sets."""
    if cfg.dtime_per_second is None:
        return SCHEDULING
    return Calibration("scheduling", cfg.dtime_per_second, per_worker=True)


def _inner_config(cfg: "CpSatOptions") -> "CpSatOptions":
    """The configuration of the per-segment solves: no nested segment stages."""
    return CpSatOptions(max_full_ops=cfg.max_full_ops, dtime_per_second=cfg.dtime_per_second,
                        symmetry_breaking=cfg.symmetry_breaking, interleave_search=cfg.interleave_search,
                        segment_bound_share=0.0, segment_schedule_share=0.0)


def _inner_solve(cfg: "CpSatOptions", sub: SchedulingProblem, options: SolveOptions, budget: Budget,
                 amount: float, stage: str) -> SolveResult:
    """Solve a subproblem within ``amount`` of ``budget`` (a child budget, same net), and
    charge what it used back to ``budget``."""
    child = budget.child(amount)
    inner = SolveOptions(time_limit_s=options.time_limit_s, num_workers=options.num_workers,
                         random_seed=options.random_seed, search=options.search)
    result = CpSatScheduler(cfg)._solve(sub, inner, child)
    budget.absorb(child, stage)
    return result


def segment_schedule(problem: SchedulingProblem, options: SolveOptions, budget: "Budget | float",
                     cfg: "CpSatOptions | None" = None,
                     stats: dict | None = None) -> SchedulingSolution | None:
    """A schedule glued from per-segment CP-SAT solutions (LATENCY, graphs with cut ops).

    Segments (see :func:`~solvers.scheduling.bounds.segment_problems`) are solved in
    order, each with its source op pinned to the device the previous segment gave it;
    segments are first merged into windows of at least ``segment_window_ops`` ops (so
    residual edges mostly stay inside a window); windows with fewer than
    ``segment_min_ops`` ops use HEFT. The window schedules are shifted to start when
    their source ends, then re-timed together keeping every stream's and link's order
    (edges between windows get their transfers there). None when that fails validation
    (e.g. memory, which windows ignore). The windows share ``budget`` (a
    :class:`~solvers.budget.Budget`, or that many deterministic-time units with the net of
    ``options``) in proportion to their ops; ``stats["dtime_used"]`` receives what they used.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5), (1, 1)),
    ...                       ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((1,),) * 4)
    >>> segment_schedule(p, SolveOptions(), 2.0, CpSatOptions(segment_min_ops=2)).makespan_cycles
    8
    """
    from solvers.scheduling.bounds import _reach_sets, _subproblem, segment_problems

    cfg = cfg or CpSatOptions()
    budget = _as_budget(budget, options, cfg)
    segs = segment_problems(problem)
    if problem.objective is not Objective.LATENCY or len(segs) < 2:
        return None
    # merge consecutive segments into windows of >= segment_window_ops ops, closed at a
    # "clean" cut op (no edge jumps over it), so residual connections stay inside a window
    anc, desc = _reach_sets(problem)

    def clean(c: int) -> bool:
        return not any(anc[c] >> u & 1 and desc[c] >> v & 1 for u, v, _ in problem.edges)

    windows: list[tuple[SchedulingProblem, tuple[int, ...]]] = []
    acc: list[int] = []
    first_source: int | None = None
    for k, (_sub, ops) in enumerate(segs):
        if not acc:
            first_source = ops[0] if k > 0 else None
            acc = list(ops)
        else:
            acc += [op for op in ops if op != acc[-1]]
        if (len(acc) >= cfg.segment_window_ops and clean(acc[-1])) or k == len(segs) - 1:
            windows.append((_subproblem(problem, acc, first_source), tuple(acc)))
            acc = []
    segs = windows
    inner_cfg = _inner_config(cfg)

    def worth(sub: SchedulingProblem) -> bool:  # huge windows would just repeat the main solve
        return cfg.segment_min_ops <= sub.num_ops <= cfg.max_full_ops

    big_ops = sum(sub.num_ops for sub, _ in segs if worth(sub))
    n = problem.num_ops
    placement, stream = [-1] * n, [0] * n
    key_op, key_tr = [0] * n, {}
    end_of = [0] * n
    for k, (sub, ops) in enumerate(segs):
        source = k > 0
        if source:  # pin the source (first op) where the previous window put it
            d0 = placement[ops[0]]
            rows = list(sub.durations_cycles)
            rows[0] = tuple(0 if d == d0 else -1 for d in range(sub.num_devices))
            sub = SchedulingProblem(tuple(rows), sub.edges, sub.device_streams, sub.link_of,
                                    sub.transfer_cycles, Objective.LATENCY,
                                    colocation_groups=sub.colocation_groups,
                                    device_class=sub.device_class)
        sol = None
        if worth(sub) and big_ops and budget.left > 0 and not budget.wall_expired():
            share = budget.left * sub.num_ops / big_ops
            big_ops -= sub.num_ops
            sol = _inner_solve(inner_cfg, sub, options, budget, share, f"segment_window[{k}]").solution
        if sol is None:
            sol = heft_schedule(sub)
        if sol is None:
            return None
        shift = end_of[ops[0]] - sol.op_end(0) if source else 0
        for local, op in enumerate(ops):
            if source and local == 0:
                continue
            placement[op], stream[op] = sol.op_device[local], sol.op_stream[local]
            key_op[op] = sol.op_start[local] + shift
            end_of[op] = sol.op_end(local) + shift
        inside = set(ops)
        global_edges = [e for e, (u, v, _) in enumerate(problem.edges) if u in inside and v in inside]
        for t in sol.transfers:
            key_tr[global_edges[t.edge]] = t.start_cycle + shift
    if stats is not None:
        stats["dtime_used"] = budget.used
    out = _retime(problem, tuple(placement), tuple(stream), key_op, key_tr)
    if out is None or validate_schedule(problem, out):
        return None
    return out


def _retime(problem: SchedulingProblem, placement, stream, key_op, key_tr) -> SchedulingSolution | None:
    """Earliest start times keeping each stream's and link's order given by the keys.

    Tasks (ops, and a transfer per cross-device edge) are taken, among those whose
    predecessors are done, by smallest key; each starts when its inputs are ready and its
    stream or link is free. Edges without a key (between windows) use the producer's end.
    """
    import heapq

    n = problem.num_ops
    for u, v, _ in problem.edges:
        if placement[u] != placement[v] and problem.link_of[placement[u]][placement[v]] < 0:
            return None
    # task ids: ops 0..n-1, transfer of edge e is n + e
    preds: dict[int, list[int]] = {i: [] for i in range(n)}
    succs: dict[int, list[int]] = {}
    links: dict[int, int] = {}
    for e, (u, v, _) in enumerate(problem.edges):
        if placement[u] == placement[v]:
            preds[v].append(u)
            succs.setdefault(u, []).append(v)
        else:
            t = n + e
            links[t] = problem.link_of[placement[u]][placement[v]]
            preds[t] = [u]
            preds[v].append(t)
            succs.setdefault(u, []).append(t)
            succs.setdefault(t, []).append(v)
    missing = {t: len(ps) for t, ps in preds.items()}
    end: dict[int, int] = {}
    lane_free: dict[tuple[int, int], int] = {}
    link_free: dict[int, int] = {}
    starts = [0] * n

    def key(t: int) -> tuple[int, int, int]:
        if t < n:
            return (key_op[t], 1, t)
        e = t - n
        return (key_tr.get(e, end_key[problem.edges[e][0]]), 0, t)

    end_key = [key_op[i] + problem.durations_cycles[i][placement[i]] for i in range(n)]
    heap = [key(t) for t, m in missing.items() if m == 0]
    heapq.heapify(heap)
    transfers = []
    while heap:
        _, _, t = heapq.heappop(heap)
        ready = max((end[q] for q in preds[t]), default=0)
        if t < n:
            dur = problem.durations_cycles[t][placement[t]]
            lane = (placement[t], stream[t])
            s0 = max(ready, lane_free.get(lane, 0)) if dur > 0 else ready
            if dur > 0:
                lane_free[lane] = s0 + dur
            starts[t] = s0
        else:
            link = links[t]
            dur = problem.transfer_cycles[t - n][link]
            s0 = max(ready, link_free.get(link, 0)) if dur > 0 else ready
            if dur > 0:
                link_free[link] = s0 + dur
            transfers.append(ScheduledTransfer(t - n, link, s0, dur))
        end[t] = s0 + dur
        for w in succs.get(t, ()):
            missing[w] -= 1
            if missing[w] == 0:
                heapq.heappush(heap, key(w))
    if len(end) != len(preds):
        return None
    transfers.sort(key=lambda tr: tr.edge)
    durs = tuple(problem.durations_cycles[i][placement[i]] for i in range(n))
    return SchedulingSolution(tuple(placement), tuple(stream), tuple(starts), durs,
                              tuple(transfers))


# ----------------------------------------------------------------------------- solver



def _serial_horizon(problem: SchedulingProblem) -> int:
    return (sum(max(r) for r in problem.durations_cycles)
            + sum(max(r, default=0) for r in problem.transfer_cycles))


class CpSatScheduler(Accepting):
    """Joint placement and scheduling with CP-SAT (see the module Notes).

    Parameters
    ----------
    config : CpSatOptions, optional

    Examples
    --------
    Splitting a fork across two devices pays off when the transfer is cheap:

    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5)), ((0, 1, 8), (0, 2, 8)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5))
    >>> r.status.value, r.objective, r.bound
    ('OPTIMAL', 7, 7)
    """

    name = "cpsat"
    problem_type = SchedulingProblem

    def __init__(self, config: CpSatOptions = CpSatOptions()) -> None:
        self.config = config

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        return self._solve(problem, options)

    def _solve(self, problem: SchedulingProblem, options: SolveOptions,
               budget: Budget | None = None) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        cfg = self.config
        # the budget is fixed up front (never derived from elapsed wall time; see solvers.budget)
        if budget is None:
            budget = Budget.of(options, _calibration(cfg), t0)
        bound = lower_bound(problem)
        hint, hint_source = self._initial_hint(problem, options)
        hint_obj = objective_value(problem, hint) if hint is not None else None
        stats: dict[str, Any] = {"lower_bound": bound, "hint_source": hint_source if hint else None,
                                 "hint_objective": hint_obj}

        def done(result: SolveResult) -> SolveResult:
            result.stats.update(budget.stats())
            return result

        hint, hint_source, bound = self._improve_hint_and_bound(problem, options, budget, hint, hint_source,
                                                                bound, stats)
        hint_obj = objective_value(problem, hint) if hint is not None else None
        if hint is not None and hint_obj <= bound:
            stats["proof"] = "hint meets the lower bound"
            return done(SolveResult(Status.OPTIMAL, hint_obj, hint_obj, hint, time.perf_counter() - t0,
                                    self.name, stats))
        if (hint is not None and problem.objective is Objective.LATENCY and cfg.bound_probe_share > 0
                and problem.num_ops <= cfg.max_full_ops
                and hint_obj - bound <= cfg.bound_probe_max_gap * hint_obj):
            probe_status, probe = _probe_bound(problem, options, bound, budget,
                                               cfg.bound_probe_share * budget.total, cfg)
            stats["bound_probe"] = probe_status.value
            if probe is not None:
                obj = objective_value(problem, probe)  # <= bound by the model, >= bound as a bound
                stats["proof"] = "a schedule meets the lower bound (bound probe)"
                return done(SolveResult(Status.OPTIMAL, obj, obj, probe, time.perf_counter() - t0,
                                        self.name, stats))
            if probe_status is Status.INFEASIBLE:
                bound += 1  # no schedule ends at the bound: the optimum is at least one more
                stats["lower_bound"] = bound
                if hint_obj <= bound:
                    stats["proof"] = "hint meets the lower bound raised by the bound probe"
                    return done(SolveResult(Status.OPTIMAL, hint_obj, hint_obj, hint,
                                            time.perf_counter() - t0, self.name, stats))
        return done(self._main_solve(problem, options, budget, hint, bound, stats, t0))

    def _initial_hint(self, problem: SchedulingProblem, options: SolveOptions):
        """``options.hint`` when valid, else HEFT's schedule: (hint or None, its source)."""
        hint = options.hint
        if hint is not None and validate_schedule(problem, hint):
            _log.warning("ignoring an invalid hint")
            hint = None
        if hint is not None:
            return hint, "options"
        # HeftScheduler, not bare HEFT: it falls back to a first-fit placement when memory
        # leaves HEFT stuck, so large memory-tight graphs still get a warm start.
        hint = HeftScheduler().solve(problem, options).solution
        if hint is not None and validate_schedule(problem, hint):  # pragma: no cover
            _log.error("HEFT produced an invalid schedule; solving without a hint")
            hint = None
        return hint, "heft"

    def _improve_hint_and_bound(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                                hint, hint_source: str, bound: int, stats: dict):
        """The stages before the main solve: list search, segment bound, segment schedule.
        Returns (hint, hint source, bound); ``stats`` receives their figures."""
        cfg = self.config
        hint_obj = objective_value(problem, hint) if hint is not None else None

        def settled() -> bool:
            return hint is not None and hint_obj <= bound

        work = min(cfg.list_search_max_work, int(cfg.list_search_work_per_second * options.time_limit_s))
        fixed = fixed_placement(problem) if work > 0 else None
        if (fixed is not None and not settled()
                and (cfg.list_search_single_stream or any(problem.device_streams[d] > 1 for d in set(fixed)))):
            # counted work, never timed: the same op placements on any machine, in either search
            # mode (it is fast); the wall clock only as the net
            found, ls_stats = list_search(problem, work, seed=options.random_seed, target=bound, hint=hint,
                                          deadline_s=budget.wall_deadline)
            budget.note("list_search", 0.0, stopped_by=ls_stats["stopped_by"])
            stats.update({f"list_search_{k}": x for k, x in ls_stats.items()})
            if found is not None and not validate_schedule(problem, found) and (
                    hint is None or objective_value(problem, found) < hint_obj):
                hint, hint_source = found, "list search"
                hint_obj = objective_value(problem, hint)
                stats.update(hint_source=hint_source, hint_objective=hint_obj)
        if cfg.segment_bound_share > 0 and problem.objective is Objective.LATENCY and not settled():
            child = budget.child(cfg.segment_bound_share * budget.total)
            seg, seg_stats = segment_lower_bound(problem, options, child, cfg)
            budget.absorb(child, "segment_bound")
            bound = max(bound, seg)
            stats.update(seg_stats, lower_bound=bound)
        if (hint_source == "heft" and cfg.segment_schedule_share > 0
                and problem.objective is Objective.LATENCY and not settled()):
            child = budget.child(cfg.segment_schedule_share * budget.total)
            glued = segment_schedule(problem, options, child, cfg)
            budget.absorb(child, "segment_schedule")
            if glued is not None and (hint is None or objective_value(problem, glued) < hint_obj):
                hint, hint_source = glued, "segments"
                hint_obj = objective_value(problem, hint)
                stats.update(hint_source=hint_source, hint_objective=hint_obj)
        return hint, hint_source, bound

    def _main_solve(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, hint,
                    bound: int, stats: dict, t0: float) -> SolveResult[SchedulingSolution]:
        """The full model (or sequencing only, above ``max_full_ops``) warm-started from ``hint``."""
        cfg = self.config
        hint_obj = objective_value(problem, hint) if hint is not None else None
        decompose = hint is not None and problem.num_ops > cfg.max_full_ops
        placement = hint.op_device if decompose else None
        stats["mode"] = "sequencing (hint placement fixed)" if decompose else "full"
        if hint is None:
            horizon = _serial_horizon(problem)
        elif problem.objective is Objective.LATENCY:
            horizon = hint.makespan_cycles
        else:
            horizon = max(_serial_horizon(problem), hint.makespan_cycles)
        sym = cfg.symmetry_breaking and placement is None
        if sym and hint is not None:
            classes = interchangeable_classes(problem, [problem.allowed_devices(i)
                                                        for i in range(problem.num_ops)])
            canon = canonical_solution(problem, hint, classes)
            if validate_schedule(problem, canon):  # pragma: no cover - defensive
                sym = False
            else:
                hint = canon
        model, v = build(problem, horizon, bound=bound, upper=hint_obj, placement=placement,
                         symmetry_breaking=sym)
        if hint is not None:
            add_hint(model, problem, v, hint)
        # the main solve gets what the stages left, and at least a fifth of the budget
        status, solver, points = _run(model, options, budget, max(0.2 * budget.total, budget.left), "main",
                                      cfg.interleave_search)
        stats.update(_run_stats(solver, status, options, cfg))
        wall = time.perf_counter() - t0
        if status is Status.MODEL_INVALID:  # our bug: the bridge raises InternalError on it
            return failure_result(Status.MODEL_INVALID, self.name, wall, None, **stats)
        found = None
        if status.has_solution:
            found = v.extract(solver)
            errs = validate_schedule(problem, found)
            if errs:
                raise AssertionError("CP-SAT solution fails validation: " + "; ".join(errs[:5]))
        cp_bound = bound
        if not decompose and status.has_solution:
            cp_bound = max(bound, math.ceil(solver.best_objective_bound - 1e-6))
        if found is not None and (hint is None or objective_value(problem, found) <= hint_obj):
            obj = objective_value(problem, found)
            if (status is Status.OPTIMAL and not decompose) or obj <= bound:
                return SolveResult(Status.OPTIMAL, obj, obj, found, wall, self.name, stats, tuple(points))
            return SolveResult(Status.FEASIBLE, obj, min(cp_bound, obj), found, wall, self.name,
                               stats, tuple(points))
        if hint is not None:
            stats["returned"] = "hint (CP-SAT found nothing better in time)"
            return SolveResult(Status.FEASIBLE, hint_obj, min(bound, hint_obj), hint, wall,
                               self.name, stats, tuple(points))
        if status is Status.INFEASIBLE:
            return failure_result(Status.INFEASIBLE, self.name, wall, None, **stats)
        return failure_result(status if not status.has_solution else Status.UNKNOWN,
                              self.name, wall, bound, **stats)


def _probe_bound(problem: SchedulingProblem, options: SolveOptions, bound: int, budget: Budget,
                 amount: float, cfg: CpSatOptions) -> tuple[Status, SchedulingSolution | None]:
    """Look for a schedule whose makespan equals ``bound``: (status, schedule or None)."""
    model, v = build(problem, bound, bound=bound, upper=bound, symmetry_breaking=cfg.symmetry_breaking)
    status, solver, _ = _run(model, replace(options, progress=None), budget, amount, "bound_probe",
                             cfg.interleave_search)
    found = None
    if status.has_solution:
        found = v.extract(solver)
        errs = validate_schedule(problem, found)
        if errs:
            raise AssertionError("CP-SAT probe solution fails validation: " + "; ".join(errs[:5]))
    return status, found


def _run(model: cp_model.CpModel, options: SolveOptions, budget: Budget, amount: float, stage: str,
         interleave: bool = True):
    """Run CP-SAT within ``amount`` of ``budget`` (the budget sets the limits and charges it).
    Nothing is added to the model here."""
    # Presolve probing costs far more wall time than its deterministic-time estimate on
    # these models (10 s of wall time for 0.9 dtime at 218 ops, twice): switch it off.
    params: dict[str, Any] = {"cp_model_probing_level": 0}
    if options.log is not None:
        params["log_to_stdout"] = False
    return budget.run_cpsat(model, options, amount, stage, interleave=interleave, **params)


def _run_stats(solver: cp_model.CpSolver, status: Status, options: SolveOptions, cfg: CpSatOptions) -> dict:
    return {"cpsat_status": status.value, "deterministic_time": solver.deterministic_time,
            "num_workers": options.num_workers, "random_seed": options.random_seed,
            "interleave_search": cfg.interleave_search,
            "cpsat_best_bound": solver.best_objective_bound if status.has_solution else None}
