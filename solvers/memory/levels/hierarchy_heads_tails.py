"""Heads and tails over N levels: arrivals and send deadlines of a linked device (issue 14).

The N-level twin of :mod:`~solvers.memory.levels.heads_tails`, with the same
:class:`~solvers.memory.levels.heads_tails.HeadsTails` rows (device cycles) over a
:class:`~solvers.memory.levels.hierarchy.HierarchyProblem`; "slow memory" there is a tensor's
**home** here (main memory for every tensor a device sends or receives):

``op_release[i]``   op i starts at or after this cycle (the transfers into it end then);
``tensor_ready[t]`` the first hop of every fetch of t starts at or after this cycle (a
                    received copy is at home only from its arrival);
``op_tail[i]``      the plan cannot end before ``end(i) + op_tail[i]``;
``tensor_tail[t]``  the plan cannot end before t is at home (its producer's end when written
                    there, else the end of its eviction's last hop) ``+ tensor_tail[t]``;
``deadlines``       :class:`~solvers.memory.levels.heads_tails.SentDeadline` rows: the sent
                    tensor is at home ``lag_cycles`` before the op (before every fetch of the
                    received tensor) starts.

Objective ``max(makespan, end(i) + op_tail[i], home_ready(t) + tensor_tail[t])``
(:func:`hierarchy_objective`). Empty rows: the plain problem. One compute stream (the
N-level model's), unsplit problems (expand the split groups first). Under shared bandwidth the
heads are floors of the shared replay, and ``link_holds`` (the device's link transfer ends,
:mod:`~solvers.memory.levels.hierarchy_link_holds`) hold main-level shares in the model, the
replay and the validator; each hold's end plus its tail joins the objective. Above
``max_model_ops`` the window models carry the holds too (a hold the incumbent runs before the
window keeps its start, one after it shifts with the ops after it, the rest are free; each
window's plan is re-timed with them and kept only when its objective is strictly lower).

:func:`solve_hierarchy_heads_tails`: the greedy plans, everything at home and an incumbent,
re-timed under the heads (:func:`retime_hierarchy_heads_tails`), are the baselines; up to
``max_model_ops`` ops the exact CP-SAT model of
:mod:`~solvers.memory.levels.hierarchy_model` with the heads as start bounds, the tails in
its objective and the deadlines as enforced constraints, hinted by and bounded by the best
baseline, so never worse; above, window models of consecutive ops around the best baseline
(:func:`heads_tails_window_search`), never worse either. :func:`validate_hierarchy_heads_tails`
checks a plan independently.

Examples
--------
Op 0 (compute 10) touches nothing; op 1 reads x (8 B, arrives at cycle 12), op 2 reads the
weight w (8 B). Main memory reads at 1 B/cycle, level 0 at 8. Alone the plan fetches x first
(hidden under op 0), then w: 17 cycles. Re-timed under the arrival its queue holds w behind x:
29. Planned with it, w goes first and x is read in place: 21.

>>> from solvers.core import SolveOptions
>>> from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver
>>> p = HierarchyProblem((10, 1, 1), ((), (0,), (1,)), ((), (), ()), (8, 8), (64, 128, 1024), (8, 4, 1), 2,
...                      ((0, 1), (1, 2), (0, 2)))
>>> ht = HeadsTails(op_release=(0, 12, 0), tensor_ready=(12, 0))
>>> alone = CpSatHierarchySolver().solve(p, SolveOptions(time_limit_s=5, num_workers=1)).solution
>>> alone.makespan_cycles, hierarchy_objective(p, retime_hierarchy_heads_tails(p, alone, ht), ht)
(17, 29)
>>> r = solve_hierarchy_heads_tails(p, ht, SolveOptions(time_limit_s=5, num_workers=1))
>>> r.status.value, r.objective
('OPTIMAL', 21)
"""

from __future__ import annotations

import time
from dataclasses import replace

from solvers.budget import MEMORY_LEVELS, Budget, Calibration
from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.cpsat_support import integer_objective_bound
from solvers.memory.levels.heads_tails import (HeadsTails, SentDeadline, copy_ready, sent_deadline_violations,
                                               settle_deadlines)
from solvers.memory.levels.link_holds import replay_to_lag_floors
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.hierarchy_bounds import op_cycle_lower_bounds
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_all_home, plan_hierarchy_greedy
from solvers.memory.levels.hierarchy_link_holds import hierarchy_hold_objective_terms, hierarchy_hold_violations
from solvers.memory.levels.hierarchy_model import build_hierarchy_model, model_horizon
from solvers.memory.levels.hierarchy_validate import replay_hierarchy, validate_hierarchy
from solvers.memory.levels.hierarchy_window import WindowGoal, WindowSettings, window_search
from solvers.memory.levels.problem import TransferKind

__all__ = ["HeadsTails", "SentDeadline", "home_ready", "hierarchy_objective", "retime_hierarchy_heads_tails",
           "hierarchy_deadline_violations", "validate_hierarchy_heads_tails", "hierarchy_heads_tails_lower_bound",
           "add_hierarchy_heads_tails", "solve_hierarchy_heads_tails", "heads_tails_goal",
           "heads_tails_window_search", "HIERARCHY_HEADS_TAILS_MODEL_OPS", "WINDOW_DTIME_PER_SECOND"]

PREFETCH, EVICT = TransferKind.PREFETCH, TransferKind.EVICT

# Above this many ops no model of the whole problem (as CpSatHierarchySolver's max_model_ops):
# window models around the best baseline (heads_tails_window_search).
HIERARCHY_HEADS_TAILS_MODEL_OPS = 64
# The window search's deterministic units per second of the limit, as CpSatHierarchySolver's
# (a window solve runs more deterministic time per CPU second than one model of the whole).
WINDOW_DTIME_PER_SECOND = 0.12


def home_ready(problem: HierarchyProblem, solution: HierarchySolution) -> dict[int, int]:
    """Per tensor, the cycle its copy is at home: the end of its eviction's last hop when it is
    evicted, else its producer's end (an input: 0).

    Examples
    --------
    >>> from solvers.memory.levels.hierarchy import Move
    >>> p = HierarchyProblem((4,), ((),), ((0,),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
    ...                      live_out=(0,))
    >>> ev = Move(EVICT, 0, 1, 0, 0, 1, 0, 1, 4, 2)
    >>> home_ready(p, HierarchySolution(((0, 1),), ((False, False),), (ev,), (0,), (4,)))
    {0: 6}
    """
    evicted: dict[int, int] = {}
    for m in solution.moves:
        if m.kind is EVICT and m.dst_level == problem.home(m.tensor):
            evicted[m.tensor] = max(evicted.get(m.tensor, 0), m.end_cycle)
    return copy_ready(problem, solution, evicted)


def hierarchy_objective(problem: HierarchyProblem, solution: HierarchySolution, ht: HeadsTails) -> int:
    """``max(makespan, end(i) + op_tail[i], home_ready(t) + tensor_tail[t])`` (unsplit problem).

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((),), ((0,),), (8,), (16, 64), (8, 4), 1, ((0, 1),), live_out=(0,))
    >>> s = HierarchySolution(((1, 1),), ((False, False),), (), (0,), (4,))
    >>> hierarchy_objective(p, s, HeadsTails()), hierarchy_objective(p, s, HeadsTails(tensor_tail=(10,)))
    (4, 14)
    """
    best = solution.makespan_cycles
    for i in range(problem.num_ops):
        if ht.tail_of_op(i):
            best = max(best, solution.op_start[i] + solution.op_duration[i] + ht.tail_of_op(i))
    if any(ht.tensor_tail):
        ready = home_ready(problem, solution)
        best = max([best] + [ready[t] + ht.tail_of_tensor(t) for t in range(problem.num_tensors)
                             if ht.tail_of_tensor(t)])
    return max([best] + hierarchy_hold_objective_terms(solution, ht.link_holds)) if ht.link_holds else best


def _retimed(problem: HierarchyProblem, solution: HierarchySolution, op_release, tensor_ready,
             link_holds=()) -> HierarchySolution:
    # round trips: each head raised to its lags, until nothing moves (as two levels; unlike them, a
    # replay whose heads do not settle is kept, not refused as a deadlock)
    r, _ = replay_to_lag_floors(lambda holds: replay_hierarchy(problem, solution, op_release, tensor_ready, holds),
                                link_holds)
    moves = tuple(replace(m, start_cycle=s) for m, s in zip(solution.moves, r.move_start))
    return HierarchySolution(solution.level, solution.kept, moves, r.op_start, r.op_duration,
                             solution.split_factors, r.link_start)


def retime_hierarchy_heads_tails(problem: HierarchyProblem, solution: HierarchySolution,
                                 ht: HeadsTails) -> HierarchySolution:
    """The same decisions, every op and hop as soon as the plan (DMAs in queue order), the heads
    and the deadlines allow. Each deadline raises its op's release (its received tensor's ready
    cycle) to the sent tensor's home cycle plus the lag, and the replay runs again until nothing
    moves (at most ``len(deadlines) + 1`` replays without a cycle). Raises ValueError on a
    deadlock (also: a deadline's op comes, in the plan's order, before the copy it waits for)."""
    return settle_deadlines(ht, problem.num_ops, problem.num_tensors,
                            lambda release, ready: _retimed(problem, solution, release, ready, ht.link_holds),
                            lambda timed: home_ready(problem, timed),
                            "a sent tensor reaches home after an op or fetch that waits for it")


def hierarchy_deadline_violations(problem: HierarchyProblem, solution: HierarchySolution,
                                  ht: HeadsTails) -> list[str]:
    """Each sent-tensor deadline the timed ``solution`` breaks (unsplit problem).

    Examples
    --------
    Op 0 writes tensor 0 (sent) at level 0 and op 1 reads it there; its eviction after op 1
    ends at 16, but op 1 waits (through the receiver) for that home copy with a lag of 3:

    >>> from solvers.memory.levels.hierarchy import Move
    >>> p = HierarchyProblem((4, 4), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1), 1, ((0, 1),), live_out=(0,))
    >>> ev = Move(EVICT, 0, 2, 0, 0, 1, 1, 2, 8, 8)
    >>> s = HierarchySolution(((0, 0, 1),), ((False, True, False),), (ev,), (0, 4), (4, 4))
    >>> hierarchy_deadline_violations(p, s, HeadsTails(deadlines=(SentDeadline(0, op=1, lag_cycles=3),)))
    ['op 1 starts at 4, before sent tensor 0 is at home at 16 + lag 3']
    """
    if not ht.deadlines:
        return []
    fetch_starts: dict[int, list[int]] = {}
    for m in solution.moves:
        if m.kind is PREFETCH and m.hop == 0:
            fetch_starts.setdefault(m.tensor, []).append(m.start_cycle)
    return sent_deadline_violations(problem, ht, home_ready(problem, solution), solution.op_start, fetch_starts,
                                    "at home", "a fetch")


def validate_hierarchy_heads_tails(problem: HierarchyProblem, solution: HierarchySolution,
                                   ht: HeadsTails) -> list[str]:
    """:func:`~solvers.memory.levels.hierarchy_validate.validate_hierarchy`, plus every op at or
    after its release, every fetch's first hop at or after its tensor's arrival, and every
    sent-tensor deadline (unsplit problem).

    Examples
    --------
    A fetch of the received tensor 0 before it arrives at cycle 5:

    >>> from solvers.memory.levels.hierarchy import Move
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> fetch = Move(PREFETCH, 0, 1, 0, 1, 0, -1, 0, 0, 2)
    >>> s = HierarchySolution(((1, 0),), ((False, False),), (fetch,), (5,), (4,))
    >>> validate_hierarchy_heads_tails(p, s, HeadsTails(op_release=(5,), tensor_ready=(5,)))
    ['a fetch of tensor 0 (hop 0) starts at 0, before it arrives at 5']
    """
    errs = validate_hierarchy(problem, solution)
    if errs:
        return errs
    for i, s in enumerate(solution.op_start):
        if s < ht.release(i):
            errs.append(f"op {problem.op_name(i)} starts at {s}, before its release {ht.release(i)}")
    for m in solution.moves:
        if m.kind is PREFETCH and m.hop == 0 and m.start_cycle < ht.ready(m.tensor):
            errs.append(f"a fetch of tensor {problem.tensor_name(m.tensor)} (hop 0) starts at {m.start_cycle}, "
                        f"before it arrives at {ht.ready(m.tensor)}")
    return errs + hierarchy_deadline_violations(problem, solution, ht) + hierarchy_hold_violations(
        problem, solution, ht.link_holds)


def hierarchy_heads_tails_lower_bound(problem: HierarchyProblem, ht: HeadsTails) -> int:
    """A lower bound on :func:`hierarchy_objective` over every plan of the unsplit ``problem``.

    The ops run in order on one stream, each at least its shortest duration over any level
    assignment (:func:`~solvers.memory.levels.hierarchy_bounds.op_cycle_lower_bounds`), from
    its release and, with a deadline, from the sent tensor's producer's end plus the lag (a
    tensor is at home no earlier than its producer ends; an op a receive hold waits, from the
    hold's head plus its length; a hold ends no earlier than its head, a send's than its
    source op's end, plus its length, then its tail); the tails follow the ends. Capacity
    beyond each op, DMAs and the engine are dropped.

    Examples
    --------
    >>> p = HierarchyProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1), 1, ((0, 1),))
    >>> hierarchy_heads_tails_lower_bound(p, HeadsTails(op_release=(5, 0), op_tail=(0, 3)))  # 5 + 8 + 2 + 3
    18
    """
    shortest = op_cycle_lower_bounds(problem)
    waits: dict[int, list[tuple[int, int]]] = {}
    for dl in ht.deadlines:
        producer = problem.accesses(dl.tensor)[0]
        if dl.op >= 0 and problem.is_real(producer):
            waits.setdefault(dl.op, []).append((producer, dl.lag_cycles))
    received = _receive_floors(problem, ht)
    end: list[int] = []
    best = 0
    for i in range(problem.num_ops):
        ready = max([end[i - 1] if i else 0, ht.release(i), received.get(i, 0)]
                    + [end[p] + lag for p, lag in waits.get(i, ()) if p < i])
        end.append(ready + shortest[i])
        best = max(best, end[i] + ht.tail_of_op(i))
    for h in ht.link_holds:  # a hold ends no earlier than its head (a send: its source op) plus its length
        after = [end[h.op]] if h.role == "send" and problem.is_real(h.op) else []
        best = max(best, max([h.head] + after) + h.duration_cycles + h.tail)
    for t in range(problem.num_tensors):
        if ht.tail_of_tensor(t):
            producer = problem.accesses(t)[0]
            best = max(best, (end[producer] if problem.is_real(producer) else 0) + ht.tail_of_tensor(t))
    return best


def _receive_floors(problem: HierarchyProblem, ht: HeadsTails) -> dict[int, int]:
    """Per op, the earliest start the receive holds allow: a recv's head plus its length for its
    op and every reader of the copies it brings."""
    out: dict[int, int] = {}
    for h in ht.link_holds:
        if h.role != "recv":
            continue
        ops = {h.op} if problem.is_real(h.op) else set()
        ops.update(a for t in h.tensors for a in problem.accesses(t)[1:] if problem.is_real(a))
        for a in ops:
            out[a] = max(out.get(a, 0), h.head + h.duration_cycles)
    return out


def add_hierarchy_heads_tails(model, problem: HierarchyProblem, v, ht: HeadsTails, upper: int):
    """On the N-level model ``v`` (:func:`~solvers.memory.levels.hierarchy_model.build_hierarchy_model`):
    the releases as start bounds, the arrivals on every fetch's first hop, the deadlines, and
    the objective ``max(makespan, ends + tails)`` (an IntVar, returned)."""
    for i in range(problem.num_ops):
        if ht.release(i):
            model.add(v.start[i] >= ht.release(i))
    fetches: dict[int, list] = {}
    evictions: dict[int, list] = {}
    for (kind, t, _, _), hops in v.chains.items():
        (fetches if kind is PREFETCH else evictions).setdefault(t, []).append(hops)
    for t, chains in fetches.items():
        if ht.ready(t):
            for hops in chains:
                _add_if(model, hops[0].start >= ht.ready(t), hops[0].present)
    objective = model.new_int_var(0, upper, "objective")
    model.add(objective >= v.makespan)
    for i in range(problem.num_ops):
        if ht.tail_of_op(i):
            model.add(objective >= v.end(i) + ht.tail_of_op(i))
    for t in range(problem.num_tensors):
        tail = ht.tail_of_tensor(t)
        if not tail:
            continue
        producer = problem.accesses(t)[0]
        model.add(objective >= (v.end(producer) if problem.is_real(producer) else 0) + tail)
        for hops in evictions.get(t, ()):
            _add_if(model, objective >= hops[-1].end + tail, hops[0].present)
    for dl in ht.deadlines:
        producer = problem.accesses(dl.tensor)[0]
        waiters = ([(v.start[dl.op], 1)] if dl.op >= 0
                   else [(hops[0].start, hops[0].present) for hops in fetches.get(dl.received, ())])
        for begin, present in waiters:
            if problem.is_real(producer):
                _add_if(model, begin >= v.end(producer) + dl.lag_cycles, present)
            for hops in evictions.get(dl.tensor, ()):
                _add_if(model, begin >= hops[-1].end + dl.lag_cycles, present, hops[0].present)
    for k, h in enumerate(ht.link_holds):  # the model was built with them (build_hierarchy_model)
        model.add(objective >= v.hold_start[k] + h.duration_cycles + h.tail)
    return objective


def _add_if(model, relation, *literals) -> None:
    """``relation`` when every literal holds (constant 1s always do)."""
    ct = model.add(relation)
    enforce = [lit for lit in literals if not isinstance(lit, int)]
    if enforce:
        ct.only_enforce_if(enforce)


def _baselines(problem: HierarchyProblem, ht: HeadsTails,
               incumbent: HierarchySolution | None) -> list[HierarchySolution]:
    """The greedy plans, everything at home and ``incumbent`` (if valid), each re-timed under
    ``ht`` (or repaired: :func:`_retimed_or_repaired`)."""
    plans = [plan_hierarchy_greedy(problem), plan_hierarchy_greedy(problem, cost_aware=True),
             plan_hierarchy_all_home(problem)]
    if incumbent is not None and not validate_hierarchy(problem, incumbent):
        plans.append(incumbent)
    timed = (_retimed_or_repaired(problem, s, ht) for s in plans if s is not None)
    return [s for s in timed if s is not None]


def _retimed_or_repaired(problem: HierarchyProblem, solution: HierarchySolution,
                         ht: HeadsTails) -> HierarchySolution | None:
    """``solution`` re-timed under ``ht``; if its decisions break a deadline (a cycle), the same
    plan with every tensor a deadline names at home only (no other copy, no move: every other
    level only gets freer, and the home copy is ready when the producer ends); None when that
    is impossible too (a fast-only op touches one) or does not replay."""
    try:
        return retime_hierarchy_heads_tails(problem, solution, ht)
    except ValueError:
        if not ht.deadlines:
            raise
    named = {dl.tensor for dl in ht.deadlines} | {dl.received for dl in ht.deadlines if dl.received >= 0}
    if any(problem.is_real(a) and a in problem.fast_only_ops for t in named for a in problem.accesses(t)):
        return None
    repaired = HierarchySolution(
        tuple(tuple(problem.home(t) for _ in row) if t in named else row for t, row in enumerate(solution.level)),
        tuple(tuple(False for _ in row) if t in named else row for t, row in enumerate(solution.kept)),
        tuple(m for m in solution.moves if m.tensor not in named), solution.op_start, solution.op_duration)
    try:
        timed = retime_hierarchy_heads_tails(problem, repaired, ht)
    except ValueError:
        return None
    return None if validate_hierarchy(problem, timed) else timed


def solve_hierarchy_heads_tails(problem: HierarchyProblem, ht: HeadsTails, options: SolveOptions = SolveOptions(),
                                incumbent: HierarchySolution | None = None,
                                calibration: Calibration = MEMORY_LEVELS,
                                max_model_ops: int = HIERARCHY_HEADS_TAILS_MODEL_OPS
                                ) -> SolveResult[HierarchySolution]:
    """Minimum :func:`hierarchy_objective` over the unsplit ``problem`` under ``ht`` (see the module).

    Above ``max_model_ops`` ops: the best baseline improved by windows
    (:func:`heads_tails_window_search`), FEASIBLE unless it meets the lower bound; UNKNOWN
    (``stats["baseline_objective"]`` None) where no re-timed baseline fits, as the windows need one.
    Deterministic: CP-SAT stops on its deterministic-time budget.
    """
    t0 = time.perf_counter()
    name = "cpsat-hierarchy-heads-tails"
    if problem.splits:
        raise ValueError("expand split groups first (expand_hierarchy_splits, HeadsTails.expanded)")
    ht.check(problem)
    plans = _baselines(problem, ht, incumbent)
    best = min(plans, key=lambda s: hierarchy_objective(problem, s, ht)) if plans else None
    lower = hierarchy_heads_tails_lower_bound(problem, ht)
    best_obj = hierarchy_objective(problem, best, ht) if best is not None else None
    stats: dict = {"baseline_objective": best_obj, "lower_bound": lower}
    too_large = problem.num_ops > max_model_ops
    if best is not None and too_large and best_obj > lower:
        best, stats["window_search"] = heads_tails_window_search(problem, ht, best, lower, options, calibration, t0)
        best_obj, stats["stopped_by"] = hierarchy_objective(problem, best, ht), stats["window_search"]["stopped_by"]
    if best is not None and (best_obj <= lower or too_large):
        status = Status.OPTIMAL if best_obj <= lower else Status.FEASIBLE
        return SolveResult(status, best_obj, min(lower, best_obj), best, time.perf_counter() - t0, name, stats)
    if too_large:  # only a re-timed baseline starts the windows, and none fits
        return failure_result(Status.UNKNOWN, name, time.perf_counter() - t0, **stats)
    upper = best_obj if best is not None else model_horizon(problem) + _head_room(ht)
    model, v = build_hierarchy_model(problem, upper, best, link_holds=ht.link_holds)
    objective = add_hierarchy_heads_tails(model, problem, v, ht, upper)
    model.add(objective >= lower)
    if best is not None:
        model.add_hint(objective, best_obj)
        for var, value in zip(getattr(v, "hold_start", ()), best.link_starts):
            model.add_hint(var, value)
    model.minimize(objective)
    budget = Budget.of(options, calibration, t0)
    status, solver, progress = budget.run_cpsat(model, options, budget.left, "hierarchy_heads_tails",
                                                interleave=False)
    stats.update(budget.stats())
    bound = lower
    if status.has_solution:
        extracted = v.extract(solver)
        if ht.link_holds:  # the holds' places rank them in the re-timing
            extracted = replace(extracted, link_starts=tuple(solver.value(x) for x in v.hold_start))
        found = retime_hierarchy_heads_tails(problem, extracted, ht)
        if best is None or hierarchy_objective(problem, found, ht) < best_obj:
            best, best_obj = found, hierarchy_objective(problem, found, ht)
        bound = max(bound, integer_objective_bound(solver))
    elif best is None:
        return failure_result(Status.INFEASIBLE if status is Status.INFEASIBLE else Status.UNKNOWN, name,
                              time.perf_counter() - t0)
    elif status is Status.INFEASIBLE:  # nothing below the baseline: it is optimal
        bound = best_obj
    bound = min(bound, best_obj)
    return SolveResult(Status.OPTIMAL if bound >= best_obj else Status.FEASIBLE, best_obj, bound, best,
                       time.perf_counter() - t0, name, stats, progress)


def heads_tails_goal(problem: HierarchyProblem, ht: HeadsTails) -> WindowGoal:
    """The window search's goal under ``ht``: :func:`hierarchy_objective`, each window model with
    the heads, tails and deadlines of :func:`add_hierarchy_heads_tails` (on a window model the
    ops after the window shift rigidly, so their releases bound the shift), its decisions
    re-timed by :func:`retime_hierarchy_heads_tails` and checked by
    :func:`validate_hierarchy_heads_tails`."""
    return WindowGoal(lambda s: hierarchy_objective(problem, s, ht),
                      lambda s: retime_hierarchy_heads_tails(problem, s, ht),
                      lambda s: validate_hierarchy_heads_tails(problem, s, ht),
                      lambda model, v, upper: add_hierarchy_heads_tails(model, problem, v, ht, upper),
                      ht.link_holds)


def heads_tails_window_search(problem: HierarchyProblem, ht: HeadsTails, best: HierarchySolution, lower: int,
                              options: SolveOptions, calibration: Calibration = MEMORY_LEVELS,
                              t0: float | None = None, settings: WindowSettings = WindowSettings()
                              ) -> tuple[HierarchySolution, dict]:
    """Above the whole model's size: windows of the op order re-optimised exactly under ``ht``
    around ``best`` (a plan timed under ``ht``), every other decision kept
    (:func:`~solvers.memory.levels.hierarchy_window.window_search` with :func:`heads_tails_goal`),
    so the result is never worse than ``best``. Its budget is deterministic: the solve's limit
    at :data:`WINDOW_DTIME_PER_SECOND` units per second, each window at most its settings' share.
    Returns the best plan and what the search did, with how its budget ended (``stopped_by``)."""
    scale = WINDOW_DTIME_PER_SECOND / calibration.units_per_second
    budget = Budget.of(options, calibration, t0)
    windows = Budget(max(1e-3, budget.left * scale), budget.wall_deadline, budget.search, budget.rate * scale) \
        if budget.deterministic else budget.child(budget.left)
    best, info = window_search(problem, best, windows, options, lower, settings, heads_tails_goal(problem, ht))
    budget.note("window_search", windows.used / scale if budget.deterministic else 0.0,
                stopped_by=windows.stopped_by or info["stopped_by"])
    return best, {**info, **budget.stats()}


def _head_room(ht: HeadsTails) -> int:
    """What the heads, tails and lags can add to a horizon every plan fits in."""
    holds = ht.link_holds
    return (max((*ht.op_release, *ht.tensor_ready, *(h.head for h in holds), 0))
            + max((*ht.op_tail, *ht.tensor_tail, *(h.tail for h in holds), 0))
            + sum(dl.lag_cycles for dl in ht.deadlines) + sum(h.duration_cycles + sum(lag for _, lag in h.lags)
                                                            for h in holds) + 1)
