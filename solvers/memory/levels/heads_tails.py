"""Heads and tails for the level problem: what the rest of a multi-device plan imposes on one device.

A device's :class:`~solvers.memory.levels.problem.LevelProblem` times its ops alone, from
cycle 0, and minimises its own makespan. In a plan over several devices, the device also
waits for data it receives (*heads*, release times) and its results feed work elsewhere
(*tails*, the critical path that must follow them). :class:`HeadsTails` says both, in the
device's cycles:

``op_release[i]``      op i starts at or after this cycle (its received inputs arrive then);
``tensor_ready[t]``    a prefetch of tensor t starts at or after this cycle (a received copy
                       reaches the slow level then);
``op_tail[i]``         the plan cannot end before ``end(i) + op_tail[i]``;
``tensor_tail[t]``     the plan cannot end before ``t`` is in the slow level (its producer's
                       end when written slow, else its eviction's end) ``+ tensor_tail[t]``
                       (a sent tensor: the link transfer waits for the slow copy).

Objective: ``max(makespan, end(i) + op_tail[i], slow_ready(t) + tensor_tail[t])`` over ops and
tensors (:func:`objective_cycles`). Empty tuples mean none (every entry 0): the objective is
then the makespan and every solver here gives the plain problem's plans.

Solvers over an unsplit problem (a split solution's problem expanded first, see
:meth:`HeadsTails.expanded`): the greedy's decisions and everything in slow memory re-timed
under the heads (:func:`retime_heads_tails`), and :func:`solve_heads_tails`, the exact CP-SAT
model of :mod:`solvers.memory.levels.cpsat` with the heads as start bounds and the tails in
its objective, hinted by and never worse than the best of those plans (and of a given
incumbent). :func:`validate_heads_tails` checks a solution independently.

Examples
--------
Op 1 (compute 2) reads weight 0 (8 bytes); op 0 (compute 8) touches nothing. Alone, the
weight is prefetched under op 0 and the plan takes 10 cycles; if op 0 also cannot start
before cycle 5, everything moves by 5:

>>> from solvers.core import SolveOptions
>>> p = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
>>> ht = HeadsTails(op_release=(5, 0))
>>> r = solve_heads_tails(p, ht, SolveOptions(time_limit_s=5))
>>> r.status.value, r.objective, r.solution.op_start
('OPTIMAL', 15, (5, 13))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from solvers.budget import MEMORY_LEVELS, Budget, Calibration
from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.memory.levels.bandwidth import slow_traffic_lower_bound
from solvers.memory.levels.cpsat import build_level_model, exact_model_fits
from solvers.memory.levels.greedy import plan_all_slow, plan_greedy
from solvers.memory.levels.problem import LevelProblem, LevelSolution, Transfer, TransferKind
from solvers.memory.levels.split import SplitMap
from solvers.memory.levels.validate import op_duration_lower_bounds, replay_levels, validate_levels

__all__ = ["HeadsTails", "objective_cycles", "retime_heads_tails", "validate_heads_tails", "solve_heads_tails",
           "heads_tails_lower_bound",
           "with_split_factors",
           "HEADS_TAILS_WINDOW_ABOVE_OPS"]

# Above this many ops a prefetch's trigger is limited to the 16 ops before its consumer, as
# the level solver's own "auto" window does (the unrestricted model grows quadratically).
HEADS_TAILS_WINDOW_ABOVE_OPS = 64
_TRIGGER_WINDOW_OPS = 16


@dataclass(frozen=True, slots=True)
class HeadsTails:
    """Release times and tails of one device's level problem (device cycles; see the module).

    Examples
    --------
    >>> ht = HeadsTails(op_release=(0, 7), tensor_tail=(3,))
    >>> ht.release(1), ht.release(0), ht.tail_of_tensor(0), ht.tail_of_op(1), ht.is_empty
    (7, 0, 3, 0, False)
    >>> HeadsTails().is_empty
    True
    """

    op_release: tuple[int, ...] = ()
    op_tail: tuple[int, ...] = ()
    tensor_ready: tuple[int, ...] = ()
    tensor_tail: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("op_release", "op_tail", "tensor_ready", "tensor_tail"):
            values = tuple(int(x) for x in getattr(self, name))
            if any(x < 0 for x in values):
                raise ValueError(f"heads and tails must be >= 0, got {name}={values}")
            object.__setattr__(self, name, values)

    @staticmethod
    def _at(values: tuple[int, ...], k: int) -> int:
        return values[k] if 0 <= k < len(values) else 0

    def release(self, op: int) -> int:
        return self._at(self.op_release, op)

    def ready(self, tensor: int) -> int:
        return self._at(self.tensor_ready, tensor)

    def tail_of_op(self, op: int) -> int:
        return self._at(self.op_tail, op)

    def tail_of_tensor(self, tensor: int) -> int:
        return self._at(self.tensor_tail, tensor)

    @property
    def is_empty(self) -> bool:
        return not any((*self.op_release, *self.op_tail, *self.tensor_ready, *self.tensor_tail))

    def check(self, problem: LevelProblem) -> None:
        """Raise ValueError unless every row fits ``problem`` (empty, or one entry per op/tensor)."""
        for name, n in (("op_release", problem.num_ops), ("op_tail", problem.num_ops),
                        ("tensor_ready", problem.num_tensors), ("tensor_tail", problem.num_tensors)):
            if getattr(self, name) and len(getattr(self, name)) != n:
                raise ValueError(f"{name} needs {n} entries, got {len(getattr(self, name))}")

    def expanded(self, problem: LevelProblem, smap: SplitMap) -> "HeadsTails":
        """The same heads and tails over a split expansion: every portion of an op or tensor
        gets the original's (later portions start later anyway; the last ends last).

        Examples
        --------
        >>> p = LevelProblem((4, 4), ((0,), (1,)), ((1,), ()), (8, 8), (64, 99), (4, 1))
        >>> HeadsTails(op_release=(0, 9)).expanded(p, SplitMap(((0, 0), (1, 0), (1, 1)), ((0, 0), (1, 0)),
        ...                                                     (2,))).op_release
        (0, 9, 9)
        """
        def rows(values, origin):
            return tuple(values[o] for o, _ in origin) if values else ()
        return HeadsTails(rows(self.op_release, smap.op_origin), rows(self.op_tail, smap.op_origin),
                          rows(self.tensor_ready, smap.tensor_origin), rows(self.tensor_tail, smap.tensor_origin))


def _slow_ready(problem: LevelProblem, solution: LevelSolution) -> dict[int, int]:
    """Per tensor with a tail: the cycle its copy is in the slow level (producer end or eviction end)."""
    evicted = {tr.tensor: tr.end_cycle for tr in solution.transfers if tr.kind is TransferKind.EVICT}
    ready = {}
    for t in range(problem.num_tensors):
        producer = problem.accesses(t)[0]
        if t in evicted:
            ready[t] = evicted[t]
        elif problem.is_real(producer):
            ready[t] = solution.op_start[producer] + solution.op_duration[producer]
        else:
            ready[t] = 0
    return ready


def objective_cycles(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> int:
    """``max(makespan, end(i) + op_tail[i], slow_ready(t) + tensor_tail[t])`` (unsplit problem).

    Examples
    --------
    >>> p = LevelProblem((4,), ((),), ((0,),), (8,), (8, 99), (4, 1))
    >>> s = LevelSolution(((False,),), ((False,),), (), (0,), (4,))
    >>> objective_cycles(p, s, HeadsTails()), objective_cycles(p, s, HeadsTails(tensor_tail=(10,)))
    (4, 14)
    """
    best = solution.makespan_cycles
    for i in range(problem.num_ops):
        if ht.tail_of_op(i):
            best = max(best, solution.op_start[i] + solution.op_duration[i] + ht.tail_of_op(i))
    if ht.tensor_tail:
        ready = _slow_ready(problem, solution)
        best = max([best] + [ready[t] + ht.tail_of_tensor(t) for t in range(problem.num_tensors)
                             if ht.tail_of_tensor(t)])
    return best


def retime_heads_tails(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> LevelSolution:
    """The same decisions, every op and DMA as soon as the plan and the heads allow."""
    r = replay_levels(problem, solution, op_release=ht.op_release, tensor_ready=ht.tensor_ready)
    transfers = tuple(Transfer(tr.kind, tr.tensor, tr.gap, tr.trigger_op, tr.release_op, s, tr.duration_cycles)
                      for tr, s in zip(solution.transfers, r.transfer_start))
    return LevelSolution(solution.in_fast, solution.kept, transfers, r.op_start, r.op_duration,
                         solution.split_factors)


def validate_heads_tails(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> list[str]:
    """Every violated rule: :func:`~solvers.memory.levels.validate.validate_levels`, then no op
    before its release and no prefetch before its tensor is ready (unsplit problem).

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> s = LevelSolution(((False, False),), ((False, False),), (), (0,), (8,))
    >>> validate_heads_tails(p, s, HeadsTails(op_release=(3,)))
    ['op 0 starts at 0 before its release 3']
    """
    errs = validate_levels(problem, solution)
    if errs:
        return errs
    for i, s in enumerate(solution.op_start):
        if s < ht.release(i):
            errs.append(f"op {problem.op_name(i)} starts at {s} before its release {ht.release(i)}")
    for tr in solution.transfers:
        if tr.kind is TransferKind.PREFETCH and tr.start_cycle < ht.ready(tr.tensor):
            errs.append(f"prefetch of tensor {problem.tensor_name(tr.tensor)} starts at {tr.start_cycle} "
                        f"before it is ready at {ht.ready(tr.tensor)}")
    return errs


def heads_tails_lower_bound(problem: LevelProblem, ht: HeadsTails) -> int:
    """A lower bound on :func:`objective_cycles` over every plan of the unsplit ``problem``.

    Each op takes at least its shortest duration (:func:`op_duration_lower_bounds`: every byte
    at the faster level) and starts no earlier than its release, the end of the previous op of
    its stream (all of them run in order on one stream) and the ends of the producers of what it
    reads, so op i cannot end before ``e_i = max(e_prev(i), e_producers(i), release_i) +
    shortest_i``; a tensor is in slow memory no earlier than its producer ends (an input from
    cycle 0). Capacity and DMAs are dropped. With shared bandwidth, also the slow level's forced
    traffic (:func:`~solvers.memory.levels.bandwidth.slow_traffic_lower_bound`), a bound on the
    makespan and so on the objective.

    Examples
    --------
    >>> p = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
    >>> heads_tails_lower_bound(p, HeadsTails(op_release=(5, 0), op_tail=(0, 3)))  # 5 + 8 + 2 + 3
    18
    """
    shortest = op_duration_lower_bounds(problem)
    end, best = [], 0
    stream_end: dict[int, int] = {}
    for i in range(problem.num_ops):
        producers = (problem.accesses(t)[0] for t in problem.reads[i])
        ready = max([stream_end.get(problem.stream_of(i), 0), ht.release(i)]
                    + [end[p] for p in producers if problem.is_real(p)])
        end.append(ready + shortest[i])
        stream_end[problem.stream_of(i)] = end[i]
        best = max(best, end[i] + ht.tail_of_op(i))
    for t in range(problem.num_tensors):
        if ht.tail_of_tensor(t):
            producer = problem.accesses(t)[0]
            best = max(best, (end[producer] if problem.is_real(producer) else 0) + ht.tail_of_tensor(t))
    if problem.shared_bandwidth:  # bandwidth: shared (bandwidth.py): the objective is at least the makespan
        best = max(best, slow_traffic_lower_bound(problem))
    return best


def _baselines(problem: LevelProblem, ht: HeadsTails, incumbent: LevelSolution | None) -> list[LevelSolution]:
    window = _TRIGGER_WINDOW_OPS if problem.num_ops > HEADS_TAILS_WINDOW_ABOVE_OPS else None
    plans = [s for s in (plan_greedy(problem, window), plan_all_slow(problem)) if s is not None]
    if incumbent is not None and not validate_levels(problem, incumbent):
        plans.append(incumbent)
    return [retime_heads_tails(problem, s, ht) for s in plans]


def _add_if(model, relation, literal) -> None:
    """``relation`` when ``literal`` holds (a constant 1: always; the model fixes absent DMAs' out)."""
    ct = model.add(relation)
    if not isinstance(literal, int):
        ct.only_enforce_if(literal)


def _add_heads_tails(model, problem: LevelProblem, v, ht: HeadsTails, upper: int):
    """Start bounds for the heads, and the objective ``max(makespan, ends + tails)`` (returned)."""
    for i in range(problem.num_ops):
        if ht.release(i):
            model.add(v.start[i] >= ht.release(i))
    for (kind, t, j), s in v.dma_start.items():
        if kind == "p" and ht.ready(t):
            _add_if(model, s >= ht.ready(t), v.prefetch[t, j])
    objective = model.new_int_var(0, upper, "objective")
    model.add(objective >= v.makespan)
    for i in range(problem.num_ops):
        if ht.tail_of_op(i):
            model.add(objective >= v.end(i) + ht.tail_of_op(i))
    for t in range(problem.num_tensors):
        tail = ht.tail_of_tensor(t)
        producer = problem.accesses(t)[0]
        if not tail:
            continue
        # the transfer waits for the producer in any case (an input is in slow memory from 0)
        model.add(objective >= (v.end(producer) if problem.is_real(producer) else 0) + tail)
        for (kind, t2, j), s in v.dma_start.items():
            if kind == "e" and t2 == t:
                _add_if(model, objective >= s + problem.dma_cycles(t) + tail, v.evict[t, j])
    return objective


def solve_heads_tails(problem: LevelProblem, ht: HeadsTails, options: SolveOptions = SolveOptions(),
                      incumbent: LevelSolution | None = None,
                      calibration: Calibration = MEMORY_LEVELS) -> SolveResult[LevelSolution]:
    """Minimum :func:`objective_cycles` over the unsplit ``problem`` under ``ht``.

    The greedy, everything-in-slow and ``incumbent`` (if valid) plans re-timed under the
    heads are the baselines; the best hints the CP-SAT model, which is bounded by it, so the
    result is never worse. Above :data:`HEADS_TAILS_WINDOW_ABOVE_OPS` ops the prefetch
    triggers are limited to a window (a restriction: its proofs say nothing, the status is
    FEASIBLE). Deterministic: CP-SAT stops on its deterministic-time budget.
    """
    t0 = time.perf_counter()
    if problem.splits:
        raise ValueError("expand split groups first (HeadsTails.expanded)")
    ht.check(problem)
    plans = _baselines(problem, ht, incumbent)
    if not plans:
        return failure_result(Status.UNKNOWN, "cpsat-heads-tails", time.perf_counter() - t0)
    best = min(plans, key=lambda s: objective_cycles(problem, s, ht))
    best_obj = objective_cycles(problem, best, ht)
    lower = heads_tails_lower_bound(problem, ht)
    stats: dict = {"baseline_objective": best_obj, "lower_bound": lower}
    if best_obj <= lower or not exact_model_fits(problem):
        return SolveResult(Status.OPTIMAL if best_obj <= lower else Status.FEASIBLE, best_obj, min(lower, best_obj),
                           best, time.perf_counter() - t0, "cpsat-heads-tails", stats)
    window = _TRIGGER_WINDOW_OPS if problem.num_ops > HEADS_TAILS_WINDOW_ABOVE_OPS else None
    hint = best if window is None or all(tr.kind is TransferKind.EVICT or tr.release_op - tr.trigger_op <= window
                                         for tr in best.transfers) else None
    model, v = build_level_model(problem, best_obj, 0, hint, window)
    objective = _add_heads_tails(model, problem, v, ht, best_obj)
    model.add(objective >= lower)
    model.add_hint(objective, best_obj)
    model.minimize(objective)
    budget = Budget.of(options, calibration, t0)
    status, solver, progress = budget.run_cpsat(model, options, budget.left, "heads_tails", interleave=False)
    stats.update(budget.stats())
    bound = lower
    if status.has_solution:
        found = retime_heads_tails(problem, v.extract(solver), ht)
        if objective_cycles(problem, found, ht) < best_obj:
            best, best_obj = found, objective_cycles(problem, found, ht)
        if window is None:
            bound = max(bound, int(solver.best_objective_bound))
    elif status is Status.INFEASIBLE and window is None:  # nothing below the baseline: it is optimal
        bound = best_obj
    bound = min(bound, best_obj)
    proven = bound >= best_obj
    return SolveResult(Status.OPTIMAL if proven else Status.FEASIBLE, best_obj, bound, best,
                       time.perf_counter() - t0, "cpsat-heads-tails", stats, progress)


def with_split_factors(solution: LevelSolution, factors: tuple[int, ...]) -> LevelSolution:
    """An expanded problem's solution as a solution of the split problem it came from."""
    return replace(solution, split_factors=tuple(factors))
