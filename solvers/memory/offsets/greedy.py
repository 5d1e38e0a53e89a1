"""Greedy offset assignment: greedy-by-size (TFLite's arena planner) and first-fit.

Both place buffers one at a time, each at the lowest aligned offset where it overlaps in
address no already-placed buffer that is live at the same time; they differ only in the
order. Heuristics: status FEASIBLE with ``bound=None``, or UNKNOWN when the arena they
build exceeds the capacity (which proves nothing).
"""

from __future__ import annotations

import time
from typing import Sequence

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.memory.offsets.problem import OffsetProblem, OffsetSolution
from solvers.memory.offsets.validate import fragmentation, live_bytes_lower_bound, peak_bytes

__all__ = ["place_in_order", "GreedyBySizeOffsetSolver", "FirstFitOffsetSolver"]


def place_in_order(problem: OffsetProblem, order: Sequence[int]) -> OffsetSolution:
    """Place buffers in ``order``, each at the lowest aligned offset that fits.

    Examples
    --------
    >>> p = OffsetProblem(size_bytes=(4, 2, 6), start=(0, 0, 1), end=(2, 1, 2), capacity_bytes=16)
    >>> place_in_order(p, [0, 1, 2]).offsets
    (0, 4, 4)
    """
    size, align = problem.size_bytes, problem.alignment
    offsets = [0] * problem.num_buffers
    placed: list[int] = []
    for i in order:
        if size[i]:
            conflicts = sorted((offsets[j], j) for j in placed if problem.overlaps_in_time(i, j))
            candidate = 0
            a = align(i)
            for o, j in conflicts:
                aligned = -(-candidate // a) * a
                if aligned + size[i] <= o:
                    break
                candidate = max(candidate, o + size[j])
            offsets[i] = -(-candidate // a) * a
            placed.append(i)
    return OffsetSolution(tuple(offsets))


class _OrderedGreedy(Accepting):
    name = "greedy"
    problem_type = OffsetProblem

    def _order(self, problem: OffsetProblem) -> list[int]:
        raise NotImplementedError

    def solve(self, problem: OffsetProblem, options: SolveOptions = SolveOptions()) -> SolveResult[OffsetSolution]:
        t0 = time.perf_counter()
        solution = place_in_order(problem, self._order(problem))
        peak = peak_bytes(problem, solution)
        lb = live_bytes_lower_bound(problem)
        stats = {"peak_bytes": peak, "lower_bound_bytes": lb, "fragmentation": fragmentation(peak, lb)}
        if peak > problem.capacity_bytes:
            return failure_result(Status.UNKNOWN, self.name, time.perf_counter() - t0, **stats)
        return SolveResult(Status.FEASIBLE, peak, None, solution, time.perf_counter() - t0, self.name, stats)


class GreedyBySizeOffsetSolver(_OrderedGreedy):
    """TFLite arena planner: largest first (ties: earlier start, then index).

    Examples
    --------
    >>> p = OffsetProblem(size_bytes=(2, 4, 4), start=(0, 0, 1), end=(1, 2, 2), capacity_bytes=16)
    >>> r = GreedyBySizeOffsetSolver().solve(p)
    >>> r.status.value, r.objective, r.solution.offsets
    ('FEASIBLE', 8, (4, 0, 4))
    """

    name = "greedy-by-size"

    def _order(self, problem: OffsetProblem) -> list[int]:
        return sorted(range(problem.num_buffers), key=lambda i: (-problem.size_bytes[i], problem.start[i], i))


class FirstFitOffsetSolver(_OrderedGreedy):
    """First-fit in order of start step (ties: larger first, then index).

    Examples
    --------
    Here first-fit puts the 3-byte buffer above the 1-byte one (peak 6); greedy-by-size
    places it first and reaches the lower bound 4:

    >>> p = OffsetProblem(size_bytes=(1, 2, 3), start=(0, 0, 1), end=(2, 1, 3), capacity_bytes=16)
    >>> FirstFitOffsetSolver().solve(p).objective, GreedyBySizeOffsetSolver().solve(p).objective
    (6, 4)
    """

    name = "first-fit"

    def _order(self, problem: OffsetProblem) -> list[int]:
        return sorted(range(problem.num_buffers), key=lambda i: (problem.start[i], -problem.size_bytes[i], i))
