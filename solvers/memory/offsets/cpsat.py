"""Exact offset assignment with CP-SAT (``NoOverlap2D`` over time x address).

Notes
-----
Sets: buffers ``i`` with ``size_bytes[i] > 0`` (zero-size buffers get offset 0).

Variables: ``k_i`` integer, offset ``o_i = alignment_i * k_i`` in
``[0, U - size_i]``; ``peak`` in ``[LB, U]``, where ``U = min(capacity, greedy peak)``
(a solution worse than the greedy one is never wanted) and LB is
:func:`~solvers.memory.offsets.validate.live_bytes_lower_bound`.

Constraints: one rectangle per buffer, x = the fixed live interval ``[start, end)``,
y = ``[o_i, o_i + size_i)``; ``NoOverlap2D`` over all rectangles;
``peak >= o_i + size_i``; a redundant cumulative over time with demands ``size_i`` and
capacity ``peak`` (strengthens the bound).

Objective: minimize ``peak``. Warm start: the better of greedy-by-size and first-fit,
as a complete hint; the returned plan is never worse than that hint (if the search finds
nothing better in the time limit, the hint is returned with CP-SAT's proven bound).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solvers.budget import Budget, Calibration, MEMORY_OFFSETS
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.memory.offsets.greedy import FirstFitOffsetSolver, GreedyBySizeOffsetSolver
from solvers.memory.offsets.problem import OffsetProblem, OffsetSolution
from solvers.memory.offsets.validate import fragmentation, live_bytes_lower_bound, peak_bytes
from solvers.cpsat_support import integer_objective_bound

__all__ = ["OffsetVars", "build_offset_model", "add_no_overlap", "add_peak", "CpSatOffsetSolver"]


@dataclass
class OffsetVars:
    """Variable handles of the offset model; ``extract`` reads a solution back.

    Examples
    --------
    >>> p = OffsetProblem(size_bytes=(4, 4), start=(0, 0), end=(1, 1), capacity_bytes=16,
    ...                   alignment_bytes=(4, 4))
    >>> model, v = build_offset_model(p, 16)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> sorted(v.extract(solver).offsets)
    [0, 4]
    """

    slots: dict[int, cp_model.IntVar]  # buffer -> k (offset / alignment), nonzero sizes only
    peak: cp_model.IntVar
    alignment: tuple[int, ...]
    num_buffers: int

    def offset(self, i: int):
        return self.alignment[i] * self.slots[i] if i in self.slots else 0

    def extract(self, solver: cp_model.CpSolver) -> OffsetSolution:
        return OffsetSolution(tuple(self.alignment[i] * solver.value(self.slots[i]) if i in self.slots else 0
                                    for i in range(self.num_buffers)))


def add_no_overlap(model: cp_model.CpModel, problem: OffsetProblem, v: OffsetVars) -> None:
    """Rectangles (live interval x address range) of distinct buffers do not overlap.

    Examples
    --------
    Two 4-byte buffers live together cannot both fit below 7 bytes:

    >>> p = OffsetProblem(size_bytes=(4, 4), start=(0, 0), end=(1, 1), capacity_bytes=16)
    >>> model, v = build_offset_model(p, 7)
    >>> cp_model.CpSolver().solve(model) == cp_model.INFEASIBLE
    True
    """
    xs, ys, demands, times = [], [], [], []
    for i in sorted(v.slots):
        s = problem.size_bytes[i]
        t = model.new_fixed_size_interval_var(problem.start[i], problem.end[i] - problem.start[i], f"live_{i}")
        y = model.new_fixed_size_interval_var(v.offset(i), s, f"addr_{i}")
        xs.append(t)
        ys.append(y)
        demands.append(s)
    model.add_no_overlap_2d(xs, ys)
    if xs:
        model.add_cumulative(xs, demands, v.peak)


def add_peak(model: cp_model.CpModel, problem: OffsetProblem, v: OffsetVars) -> cp_model.IntVar:
    """``peak >= offset + size`` for every buffer; returns the objective term.

    Examples
    --------
    >>> p = OffsetProblem(size_bytes=(3,), start=(0,), end=(1,), capacity_bytes=16)
    >>> model, v = build_offset_model(p, 16)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.peak)
    3
    """
    for i in sorted(v.slots):
        model.add(v.peak >= v.offset(i) + problem.size_bytes[i])
    return v.peak


def build_offset_model(problem: OffsetProblem, upper_bytes: int, lower_bytes: int = 0,
                       hint: OffsetSolution | None = None) -> tuple[cp_model.CpModel, OffsetVars]:
    """The CP-SAT model with offsets in ``[0, upper_bytes]`` and ``peak >= lower_bytes``.

    Examples
    --------
    >>> p = OffsetProblem(size_bytes=(4, 4), start=(0, 0), end=(1, 1), capacity_bytes=16)
    >>> model, v = build_offset_model(p, 16, 8)
    >>> solver = cp_model.CpSolver()
    >>> solver.solve(model) == cp_model.OPTIMAL, solver.value(v.peak)
    (True, 8)
    """
    model = cp_model.CpModel()
    align = tuple(problem.alignment(i) for i in range(problem.num_buffers))
    slots = {}
    for i in range(problem.num_buffers):
        s = problem.size_bytes[i]
        if s:
            slots[i] = model.new_int_var(0, max(0, (upper_bytes - s) // align[i]), f"slot_{i}")
    peak = model.new_int_var(min(lower_bytes, upper_bytes), upper_bytes, "peak")
    v = OffsetVars(slots, peak, align, problem.num_buffers)
    add_no_overlap(model, problem, v)
    model.minimize(add_peak(model, problem, v))
    if hint is not None:
        for i, var in slots.items():
            model.add_hint(var, hint.offsets[i] // align[i])
        model.add_hint(peak, peak_bytes(problem, hint))
    return model, v


class CpSatOffsetSolver(Accepting):
    """Minimum-peak offsets; never worse than greedy-by-size or first-fit.

    Examples
    --------
    Greedy-by-size reaches 9 here (buffer 2 lands above buffer 3 at 7); the optimum is
    the live bound 8 = 3 + 3 + 2 at step 2 (buffer 3 at 0, buffers 0 and 1 at 3, buffer 2
    at 6):

    >>> p = OffsetProblem(size_bytes=(4, 3, 2, 3), start=(1, 2, 2, 1), end=(2, 3, 3, 4), capacity_bytes=16)
    >>> GreedyBySizeOffsetSolver().solve(p).objective
    9
    >>> r = CpSatOffsetSolver().solve(p, SolveOptions(time_limit_s=5))
    >>> r.status.value, r.objective, r.bound
    ('OPTIMAL', 8, 8)
    """

    name = "cpsat"
    problem_type = OffsetProblem

    def __init__(self, dtime_per_second: float = MEMORY_OFFSETS.units_per_second) -> None:
        # CP-SAT stops on deterministic time (dtime_per_second x time_limit_s; see
        # solvers.budget), so the same problem, seed and workers give the same offsets; the
        # wall clock is only a safety net.
        self.dtime_per_second = dtime_per_second

    def solve(self, problem: OffsetProblem, options: SolveOptions = SolveOptions()) -> SolveResult[OffsetSolution]:
        t0 = time.perf_counter()
        lb = live_bytes_lower_bound(problem)
        if lb > problem.capacity_bytes:
            return failure_result(Status.INFEASIBLE, self.name, time.perf_counter() - t0,
                                  bound=lb, lower_bound_bytes=lb)
        candidates = [r for r in (GreedyBySizeOffsetSolver().solve(problem), FirstFitOffsetSolver().solve(problem))
                      if r.solution is not None]
        if isinstance(options.hint, OffsetSolution):
            candidates.append(SolveResult(Status.FEASIBLE, peak_bytes(problem, options.hint), None,
                                          options.hint, 0.0, "hint"))
        best = min(candidates, key=lambda r: r.objective, default=None)
        upper = problem.capacity_bytes if best is None else int(best.objective)
        stats = {"lower_bound_bytes": lb, "greedy_peak_bytes": None if best is None else int(best.objective)}

        def done(status, peak, bound, solution, progress=()):
            stats.update(peak_bytes=peak, fragmentation=None if peak is None else fragmentation(peak, lb))
            return SolveResult(status, peak, bound, solution, time.perf_counter() - t0, self.name, stats,
                               progress)

        if best is not None and best.objective <= lb:
            return done(Status.OPTIMAL, int(best.objective), lb, best.solution)
        model, v = build_offset_model(problem, upper, lb, None if best is None else best.solution)
        budget = Budget.of(options, Calibration("memory-offsets", self.dtime_per_second), t0)
        # one worker: plain search; several: interleaved batches, so multi-worker runs repeat
        status, solver, progress = budget.run_cpsat(model, options, budget.total, "cpsat", interleave=False)
        stats["dtime"] = solver.deterministic_time
        stats.update(budget.stats())
        stats["cpsat_status"] = status.value
        if status is Status.INFEASIBLE:
            # Nothing fits below min(capacity, greedy peak): the greedy plan is optimal or
            # (without a greedy plan) no plan fits the capacity.
            if best is None:
                return failure_result(Status.INFEASIBLE, self.name, time.perf_counter() - t0, bound=lb, **stats)
            return done(Status.OPTIMAL, int(best.objective), int(best.objective), best.solution, progress)
        bound = max(lb, integer_objective_bound(solver)) if status.has_solution else lb
        if status is Status.UNKNOWN:
            bound = lb
        if status.has_solution:
            solution = v.extract(solver)
            peak = peak_bytes(problem, solution)
            if best is not None and best.objective <= peak:
                solution, peak = best.solution, int(best.objective)
        elif best is not None:
            solution, peak = best.solution, int(best.objective)
        else:
            return failure_result(status, self.name, time.perf_counter() - t0, bound=lb, **stats)
        final = Status.OPTIMAL if peak <= bound else Status.FEASIBLE
        return done(final, peak, min(bound, peak), solution, progress)
