"""A plan bound for devices with several compute streams: sound over every order and level assignment.

The two-level problem's own bound (:func:`~solvers.memory.levels.validate.makespan_lower_bound`)
holds for its fixed merged order and per-stream op lists only. This module bounds every plan
of the same ops on a device with ``num_streams`` compute streams and one DMA engine: any
assignment of ops to streams, any order that respects the data dependencies, any level
assignment, prefetch and eviction schedule (unsplit: a split plan is a different problem).

Notes
-----
A relaxation, solved by CP-SAT; its proven bound (``best_objective_bound``) is a bound of
every plan, whether or not the search finishes.

Sets: ops ``i``; their accesses ``(i, t)`` of tensors with bytes; *slow-born* tensors ``S``
(no producer: weights, graph inputs, received copies); *live-out* produced tensors ``L``.

Variables: ``fast[i,t]`` (the access is fast; 1 on a fast-only op); ``dma[t]`` for ``t`` in
``S`` (prefetched at least once) and in ``L`` (evicted); op durations ``dur[i]`` (the exact
roofline, as in :func:`~solvers.memory.levels.cpsat.add_durations`); starts ``start[i]``;
``makespan``.

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

Objective: minimize ``makespan``. Capacity over time, the memory order and the per-stream
order are dropped, so the bound holds whatever they are.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions
from solvers.memory.levels.problem import LevelProblem, cycles_for_bytes
from solvers.memory.levels.validate import op_duration_lower_bounds

__all__ = ["stream_plan_floor", "build_stream_bound_model", "stream_plan_lower_bound"]


def stream_plan_floor(problem: LevelProblem, num_streams: int) -> int:
    """The closed-form part of the bound: the per-op duration bounds
    (:func:`~solvers.memory.levels.validate.op_duration_lower_bounds`) shared over
    ``num_streams`` streams, and along the longest data-dependency path.

    Examples
    --------
    Two independent 8-cycle ops and a third that reads both: 8 + 8 on two streams.

    >>> p = LevelProblem((8, 8, 8), ((), (), (0, 1)), ((0,), (1,), ()), (0, 0), (8, 99), (4, 1))
    >>> stream_plan_floor(p, 2), stream_plan_floor(p, 1)
    (16, 24)
    """
    if problem.splits:
        raise ValueError("stream_plan_floor bounds unsplit plans; the problem has split groups")
    shortest = op_duration_lower_bounds(problem)
    finish = [0] * problem.num_ops
    for i in range(problem.num_ops):
        ready = max((finish[problem.accesses(t)[0]] for t in problem.reads[i]
                     if problem.is_real(problem.accesses(t)[0])), default=0)
        finish[i] = ready + shortest[i]
    load = -(-sum(shortest) // max(1, num_streams))
    return max([load, *finish], default=0)


def _horizon(problem: LevelProblem) -> int:
    """Larger than the relaxation's value at any of its solutions with every op at its longest."""
    return problem.roofline_horizon() + 3 * sum(problem.dma_cycles(t) for t in range(problem.num_tensors)) + 1


def build_stream_bound_model(problem: LevelProblem, num_streams: int) -> tuple[cp_model.CpModel, cp_model.IntVar]:
    """The relaxation of the module Notes; returns the model and its makespan variable.

    Examples
    --------
    A 16-byte weight read by a 2-cycle op: slow at 1 B/cycle takes 16 cycles; fast takes 4
    after a 16-cycle prefetch, so 16 either way:

    >>> p = LevelProblem((2,), ((0,),), ((),), (16,), (64, 99), (4, 1))
    >>> model, makespan = build_stream_bound_model(p, 2)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(makespan)
    16
    """
    if problem.splits:
        raise ValueError("the stream bound is over unsplit plans; the problem has split groups")
    n = problem.num_ops
    h = _horizon(problem)
    model = cp_model.CpModel()
    (pf, qf), (ps, qs) = ((r.numerator, r.denominator) for r in problem.bandwidth_bytes_per_cycle)
    cap = problem.capacity_bytes[0]
    fast_only = set(problem.fast_only_ops)
    shortest = op_duration_lower_bounds(problem)
    rows = problem.op_accesses()
    fast: dict[tuple[int, int], object] = {}
    start, dur = [], []
    makespan = model.new_int_var(0, h, "makespan")
    for i, row in enumerate(rows):
        sized = [t for t, _ in row if problem.tensor_bytes[t]]
        for t in sized:
            fast[i, t] = 1 if i in fast_only else model.new_bool_var(f"fast_{i}_{t}")
        fb = sum(problem.tensor_bytes[t] * fast[i, t] for t in sized)
        total = sum(problem.tensor_bytes[t] for t in sized)
        model.add(fb <= cap)
        cf = model.new_int_var(0, cycles_for_bytes(total, problem.bandwidth_bytes_per_cycle[0]), f"cf_{i}")
        cs = model.new_int_var(0, cycles_for_bytes(total, problem.bandwidth_bytes_per_cycle[1]), f"cs_{i}")
        model.add(pf * cf >= qf * fb)
        model.add(ps * cs >= qs * (total - fb))
        d = model.new_int_var(shortest[i], h, f"dur_{i}")
        model.add(d >= problem.compute_cycles[i])
        model.add(d >= cf + cs)
        dur.append(d)
        start.append(model.new_int_var(0, h, f"start_{i}"))
        model.add(makespan >= start[i] + d)
    for i in range(n):
        for t in problem.reads[i]:
            a = problem.accesses(t)[0]
            if problem.is_real(a):
                model.add(start[i] >= start[a] + dur[a])
    model.add(max(1, num_streams) * makespan >= sum(dur))
    _add_dma_engine(model, problem, fast, start, dur, makespan)
    model.minimize(makespan)
    return model, makespan


def _add_dma_engine(model: cp_model.CpModel, problem: LevelProblem, fast: dict, start: list, dur: list,
                    makespan: cp_model.IntVar) -> None:
    """The prefetches of slow-born tensors, the evictions of live-out ones, their heads and
    tails, and the engine's load with the tail of its last transfer (module Notes)."""
    dma: dict[int, cp_model.IntVar] = {}
    readers_of_slow: dict[int, list] = {}  # op -> its fast reads of slow-born tensors
    evictions = []
    intervals = []
    horizon = _horizon(problem)
    for t in range(problem.num_tensors):
        if not problem.tensor_bytes[t]:
            continue
        acc = problem.accesses(t)
        cycles = problem.dma_cycles(t)
        if not problem.is_real(acc[0]):
            uses = [(a, fast[a, t]) for a in acc[1:] if problem.is_real(a)]
            if not uses:
                continue
            y = dma[t] = model.new_bool_var(f"dma_{t}")
            begin = model.new_int_var(0, horizon, f"prefetch_start_{t}")
            intervals.append(model.new_optional_fixed_size_interval_var(begin, cycles, y, f"prefetch_{t}"))
            for a, x in uses:
                _implies(model, x, y)
                _when(model, start[a] >= begin + cycles, x)
                readers_of_slow.setdefault(a, []).append(x)
        elif acc[-1] == problem.num_ops:
            x = fast[acc[0], t]
            y = dma[t] = model.new_bool_var(f"dma_{t}")
            begin = model.new_int_var(0, horizon, f"evict_start_{t}")
            intervals.append(model.new_optional_fixed_size_interval_var(begin, cycles, y, f"evict_{t}"))
            _implies(model, x, y)
            _when(model, begin >= start[acc[0]] + dur[acc[0]], y)
            _when(model, makespan >= begin + cycles, y)
            evictions.append(y)
    if not dma:
        return
    model.add_no_overlap(intervals)
    load = sum(problem.dma_cycles(t) * y for t, y in dma.items())
    cases = []
    movable = [problem.dma_cycles(t) for t in range(problem.num_tensors)
               if problem.tensor_bytes[t] and any(problem.is_real(a) for a in problem.accesses(t))]
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
    model.add_bool_or(cases)


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
                            options: SolveOptions = SolveOptions(num_workers=1, random_seed=0)) -> int:
    """A lower bound on the makespan of every unsplit plan of ``problem``'s ops on a device with
    ``num_streams`` compute streams (module Notes): CP-SAT's proven bound on the relaxation
    within ``amount`` units of ``budget`` (None: a 10-s memory-levels budget), never below
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
    floor = stream_plan_floor(problem, num_streams)
    model, _ = build_stream_bound_model(problem, num_streams)
    if budget is None:
        budget = Budget.start(10.0, MEMORY_LEVELS)
        amount = budget.left
    status, solver, _ = budget.run_cpsat(model, options, amount, "stream_plan_bound", interleave=False)
    if status.value in ("INFEASIBLE", "MODEL_INVALID"):
        return floor
    return max(floor, int(-(-solver.best_objective_bound // 1)))
