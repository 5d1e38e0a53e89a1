"""Large-neighbourhood search with CP-SAT over placement and sequencing together.

Notes
-----
Starting from a valid schedule (the warm start), repeat until the work budget is spent:

1. **Pick a neighbourhood** (:class:`~solvers.hierarchical.window.Neighbourhood`), seeded and
   counted, never timed:

   * ``window``: every op starting in a time window ``[t0, t1)`` holding about ``size`` ops,
     free to move to any device. Windows sweep the schedule from the start to the end, each
     overlapping the previous one by half, with a seeded jitter; the next sweep starts over.
   * ``devices``: the ops of two devices (chosen by a seeded draw weighted towards the busiest)
     in a window holding about ``size`` of them, free to swap between those two devices
     only; it reaches further in time than a window of all devices.

2. **Solve** the neighbourhood model (:func:`~solvers.hierarchical.window.build_window`)
   warm-started from the incumbent, within ``sub_dtime`` deterministic time.
3. **Apply** the move (free ops re-placed and re-timed, the tail shifted by ``delta``) and
   **compact** the whole schedule (:func:`~solvers.hierarchical.state.compact`). The model's
   makespan is at most the incumbent's and compaction never delays a task, so the schedule
   never gets worse. On devices whose memory limit can bind, the activation buffers of the
   new schedule are checked exactly; a move that breaks them is undone.
4. **Adapt** the neighbourhood size: a model solved to optimality grows it by ``grow``, one
   stopped by its budget shrinks it by ``shrink`` (within ``[min_size, max_size]``).

**Determinism.** Neighbourhoods come from a ``random.Random(seed)``; each CP-SAT solve runs
on one worker (single-worker search is deterministic) and stops on deterministic time. One
worker on purpose: with two interleaved workers a 0.5-dtime solve of a 40-op window used
1.7 dtime on average (batches finish past the limit), so a budget bought a third of the
neighbourhoods; the second core is left to the rest of the machine. The budget is the shared
:class:`~solvers.budget.Budget` of the :data:`~solvers.hierarchical.budget.LNS` calibration: it
counts CP-SAT deterministic time plus the Python work of building models and compacting
(:mod:`solvers.hierarchical.budget`). Same problem, seed and workers, same result, however
busy the machine, unless the wall-clock safety net fires (``stats["stopped_by"] ==
"wall_clock"``). Under ``search: until-limit`` each neighbourhood solve gets the wall-clock
equivalent of ``sub_dtime`` and the loop runs until the limit (``"time_limit"``).

**Scale.** One step costs the neighbourhood model (its size depends on the neighbourhood)
plus O(n log n) vectorised or single-pass work on the whole schedule (classifying tasks,
sorting starts, compacting).

THROUGHPUT problems are returned unchanged (LATENCY only for now: the objective there is a
load, not a time, and the warm start's placement search is the flat model's job).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.budget import Budget, Calibration
from solvers.hierarchical.budget import LNS, charge_steps, exhausted
from solvers.hierarchical.state import GraphIndex, ScheduleState, compact
from solvers.hierarchical.window import (Neighbourhood, add_window_hint, apply_move, build_window,
                                         compute_boundary, extract_window)
from solvers.scheduling.heft import HeftScheduler
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import memory_profile, objective_value, validate_schedule

__all__ = ["LnsOptions", "LnsScheduler", "refine"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LnsOptions:
    """Tunables of :class:`LnsScheduler` and :func:`refine`.

    Examples
    --------
    >>> LnsOptions().initial_size
    20
    """

    # Work units (CP-SAT deterministic time + counted steps) per second of the time limit;
    # None: the LNS calibration (solvers.hierarchical.budget.LNS, where it is measured).
    work_per_second: float | None = None
    # Free ops in the first neighbourhood, and the range the adaptation keeps it in.
    initial_size: int = 20
    min_size: int = 8
    max_size: int = 240
    # Size factor after a neighbourhood solved to optimality / stopped by its budget.
    grow: float = 1.15
    shrink: float = 0.85
    # Deterministic time one neighbourhood solve may use (many small solves gained more per
    # unit than few large ones on the demo and inception-v1: 0.1 with 20 ops vs 0.5 with 40).
    sub_dtime: float = 0.1
    # Neighbourhood kinds, drawn in turn (see the module Notes).
    kinds: tuple[str, ...] = ("window", "window", "devices")
    # Stop after this many consecutive sweeps over the schedule without improvement.
    max_idle_sweeps: int = 2
    # A proven lower bound on the makespan (None: none known): the search stops the moment the
    # schedule meets it, as nothing shorter exists (the hierarchical strategy passes its bound;
    # on transformer-10k the glued plan met it and LNS searched 71 neighbourhoods for nothing).
    stop_at_objective: int | None = None


def _solve_model(model: cp_model.CpModel, budget: Budget, amount: float, options: SolveOptions):
    """One neighbourhood solve within ``amount`` of ``budget`` (charged), on one worker
    whatever ``options.num_workers`` (module Notes)."""
    # Progress and logs are the strategy's, not each neighbourhood's: the sub-solves report neither.
    quiet = replace(options, num_workers=1, progress=None, log=None)
    status, solver, _ = budget.run_cpsat(model, quiet, amount, None, interleave=False, cp_model_probing_level=0)
    return status, solver


class _Sweeper:
    """Chooses neighbourhoods (module Notes), deterministically from a seed."""

    def __init__(self, state: ScheduleState, cfg: LnsOptions, seed: int) -> None:
        self.state = state
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.cursor = 0
        self.sweeps = 0
        self.turn = 0
        nd = state.graph.problem.num_devices
        self.all_devices = tuple(range(nd))

    def next(self, size: int) -> Neighbourhood | None:
        kinds = self.cfg.kinds
        kind = kinds[self.turn % len(kinds)]
        self.turn += 1
        if kind == "devices" and len(self.all_devices) > 2:
            nb = self._devices(size)
            if nb is not None:
                return nb
        return self._window(size)

    def _window(self, size: int) -> Neighbourhood:
        st = self.state
        order = np.argsort(st.start, kind="stable")
        starts = st.start[order]
        n = len(order)
        if self.cursor >= n:
            self.cursor = 0
            self.sweeps += 1
        p = self.cursor
        t0 = int(starts[p])
        q = min(n, p + max(1, size))
        t1 = int(starts[q]) if q < n else st.makespan() + 1
        if t1 <= t0:  # many ops start together: take them all
            t1 = t0 + 1
        lo, hi = np.searchsorted(starts, t0, "left"), np.searchsorted(starts, t1, "left")
        ops = tuple(sorted(order[lo:hi].tolist()))
        step = max(1, (hi - lo) // 2)
        self.cursor = p + step + self.rng.randrange(max(1, step // 2))
        return Neighbourhood(ops, t0, t1, self.all_devices, "window")

    def _devices(self, size: int) -> Neighbourhood | None:
        st = self.state
        nd = len(self.all_devices)
        loads = np.bincount(st.dev, weights=st.dur, minlength=nd)
        busiest = int(np.argmax(loads))
        other = self.rng.randrange(nd - 1)
        other = other if other < busiest else other + 1
        pair = (min(busiest, other), max(busiest, other))
        mask = (st.dev == pair[0]) | (st.dev == pair[1])
        idx = np.flatnonzero(mask)
        if len(idx) < 2:
            return None
        order = idx[np.argsort(st.start[idx], kind="stable")]
        starts = st.start[order]
        p = self.rng.randrange(max(1, len(order) - size + 1))
        t0 = int(starts[p])
        q = min(len(order), p + size)
        t1 = int(starts[q]) if q < len(order) else st.makespan() + 1
        if t1 <= t0:
            t1 = t0 + 1
        lo, hi = np.searchsorted(starts, t0, "left"), np.searchsorted(starts, t1, "left")
        ops = tuple(sorted(order[lo:hi].tolist()))
        return Neighbourhood(ops, t0, t1, pair, "devices")


def _unchanged(state: ScheduleState, move) -> bool:
    if move.delta:
        return False
    for i, d, k, s in move.ops:
        if state.dev[i] != d or state.stream[i] != k or state.start[i] != s:
            return False
    for e, link, s in move.transfers:
        if state.t_link[e] != link or (link >= 0 and state.t_start[e] != s):
            return False
    return True


def _memory_ok(state: ScheduleState) -> bool:
    g = state.graph
    if not g.memory_devices:
        return True
    p = g.problem
    sol = state.to_solution()
    for d in g.memory_devices:
        cap = p.memory_bytes(d)
        resident = p.device_resident_bytes(d, state.dev.tolist())  # a shared weight or input once
        events = []
        for s, e, b, _ in memory_profile(p, sol, d):
            if e > s:
                events += [(e, 0, -b), (s, 1, b)]
        live = 0
        for _t, _k, delta in sorted(events):
            live += delta
            if resident + live > cap:
                return False
        if resident > cap:
            return False
    return True


def _snapshot(state: ScheduleState) -> tuple:
    return (state.dev.copy(), state.stream.copy(), state.start.copy(), state.dur.copy(),
            state.t_link.copy(), state.t_start.copy(), state.t_dur.copy())


def _restore(state: ScheduleState, snap: tuple) -> None:
    (state.dev, state.stream, state.start, state.dur, state.t_link, state.t_start,
     state.t_dur) = snap
    state.invalidate()


def _meets(state: ScheduleState, target: int | None) -> bool:
    """Whether the schedule's makespan is at most ``target`` (a proven bound; None: never)."""
    return target is not None and state.makespan() <= target


def refine(problem: SchedulingProblem, start: SchedulingSolution, budget: Budget,
           options: SolveOptions, cfg: LnsOptions = LnsOptions(),
           graph: GraphIndex | None = None) -> tuple[SchedulingSolution, dict[str, Any]]:
    """Improve a valid LATENCY schedule by LNS until ``budget`` is spent (module Notes).

    Returns the best schedule (never worse than ``start``) and statistics.

    Examples
    --------
    Four independent 4-cycle ops queued on one of two devices; LNS spreads them:

    >>> p = SchedulingProblem(((4, 4),) * 4, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> s = SchedulingSolution((0,) * 4, (0,) * 4, (0, 4, 8, 12), (4,) * 4, ())
    >>> best, stats = refine(p, s, Budget.start(10, LNS), SolveOptions())
    >>> best.makespan_cycles, stats["improvements"] > 0
    (8, True)
    """
    graph = graph or GraphIndex.of(problem)
    state = ScheduleState(graph, start)
    sweeper = _Sweeper(state, cfg, options.random_seed)
    size = float(cfg.initial_size)
    stats: dict[str, Any] = {"iterations": 0, "improvements": 0, "moves": 0, "rejected_memory": 0,
                             "optimal_neighbourhoods": 0, "start_objective": state.makespan()}
    by_kind: dict[str, list[int]] = {}
    sweeps_seen, sweep_best, idle = 0, state.makespan(), 0
    while not exhausted(budget):
        if _meets(state, cfg.stop_at_objective):
            stats["stopped"] = f"the schedule meets the proven bound {cfg.stop_at_objective}"
            stats["met_bound"] = True
            break
        nb = sweeper.next(int(size))
        boundary = compute_boundary(state, nb)
        model, v = build_window(state, nb, boundary)
        add_window_hint(model, state, v)
        charge_steps(budget, len(state.dev) // 8 + 50 * nb.size + len(v.z) * 10 + v.num_blockers)
        amount = min(budget.scale(cfg.sub_dtime), max(0.001, budget.left))
        status, solver = _solve_model(model, budget, amount, options)
        stats["iterations"] += 1
        kind_stats = by_kind.setdefault(nb.kind, [0, 0])
        kind_stats[0] += 1
        if status is Status.OPTIMAL:
            stats["optimal_neighbourhoods"] += 1
            size = min(cfg.max_size, size * cfg.grow)
        else:
            size = max(cfg.min_size, size * cfg.shrink)
        if sweeper.sweeps > sweeps_seen:  # a sweep over the whole schedule ended
            sweeps_seen = sweeper.sweeps
            idle = 0 if state.makespan() < sweep_best else idle + 1
            sweep_best = min(sweep_best, state.makespan())
            if idle >= cfg.max_idle_sweeps:
                stats["stopped"] = f"{idle} sweeps without improvement"
                break
        if not status.has_solution:
            continue
        move = extract_window(solver, state, v)
        if _unchanged(state, move):
            continue
        before = state.makespan()
        snap = _snapshot(state)
        apply_move(state, move, boundary)
        charge_steps(budget, compact(state))
        if not _memory_ok(state):
            _restore(state, snap)
            stats["rejected_memory"] += 1
            continue
        after = state.makespan()
        if after > before:  # pragma: no cover - the model and compaction forbid it
            raise AssertionError(f"LNS move made the schedule worse: {before} -> {after}")
        stats["moves"] += 1
        if after < before:
            stats["improvements"] += 1
            kind_stats[1] += 1
    _note_stop(budget, stats)
    stats.update(sweeps=sweeper.sweeps, final_size=int(size),
                 by_kind={k: {"neighbourhoods": a, "improving": b} for k, (a, b) in sorted(by_kind.items())},
                 end_objective=state.makespan())
    return state.to_solution(), stats


def _note_stop(budget: Budget, stats: dict[str, Any]) -> None:
    """Why the search ended, in the budget's words (its stop_word, and so stats["stopped_by"])."""
    if "stopped" in stats:
        budget.note("lns", 0.0, stopped_by="target" if stats.get("met_bound") else "converged")
    else:
        budget.note("lns", 0.0, stopped_by=budget.stopped_by
                    or ("deterministic_budget" if budget.deterministic else "time_limit"))


class LnsScheduler(Accepting):
    """LNS refinement of a warm start (``options.hint``, else HEFT) as a Solver.

    FEASIBLE, never worse than the warm start; ``bound`` is None (LNS proves nothing).

    Parameters
    ----------
    config : LnsOptions, optional

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),) * 4, (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> s = SchedulingSolution((0,) * 4, (0,) * 4, (0, 4, 8, 12), (4,) * 4, ())
    >>> r = LnsScheduler().solve(p, SolveOptions(time_limit_s=5, hint=s))
    >>> r.status.value, r.objective
    ('FEASIBLE', 8)
    """

    name = "lns"
    problem_type = SchedulingProblem

    def __init__(self, config: LnsOptions = LnsOptions()) -> None:
        self.config = config

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        cfg = self.config
        hint, source = options.hint, "options"
        if hint is not None and validate_schedule(problem, hint):
            _log.warning("ignoring an invalid warm start")
            hint = None
        if hint is None:
            hint, source = HeftScheduler().solve(problem, options).solution, "heft"
        if hint is None:
            return failure_result(Status.UNKNOWN, self.name, time.perf_counter() - t0,
                                  reason="no warm start")
        stats: dict[str, Any] = {"warm_start": source,
                                 "warm_start_objective": objective_value(problem, hint)}
        best = hint
        if problem.objective is Objective.LATENCY and problem.num_ops > 0:
            calibration = LNS if cfg.work_per_second is None else Calibration("lns", cfg.work_per_second)
            budget = Budget.of(options, calibration, t0)
            best, lns_stats = refine(problem, hint, budget, options, cfg)
            stats.update(lns_stats, **{k: v for k, v in budget.stats().items() if k != "stages"})
        else:
            stats["skipped"] = "LNS refines LATENCY schedules only"
            stats["stopped_by"] = "finished"
        return SolveResult(Status.FEASIBLE, objective_value(problem, best), None, best,
                           time.perf_counter() - t0, self.name, stats)
