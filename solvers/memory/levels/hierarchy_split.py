"""Split groups over N levels (issue 14): expand first, as the two-level solver does.

A :class:`~solvers.memory.levels.hierarchy.HierarchyProblem` may carry split groups (the
two-level :class:`~solvers.memory.levels.problem.SplitGroup`: ops that may run in k
portions over tensors cut along one dimension). A factor per group turns it into a larger,
unsplit problem (:func:`expand_hierarchy_splits`, the two-level
:func:`~solvers.memory.levels.split.expand_splits` on the same ops and tensors, every
portion of a tensor homed where the tensor is), so a tensor larger than every fast level can
still be staged in portions that fit. The split choice is an outer enumeration
(:func:`solve_each_split`): the best plan over factor vectors is the minimum of the
expansions' best plans, so solving each exactly is exact. A solution of a split problem is
one of its expansion for ``solution.split_factors``; the validator expands and checks it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

from solvers.core import SolveResult, Status, failure_result
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.split import SplitMap, expand_splits, split_factor_choices

__all__ = ["expand_hierarchy_splits", "hierarchy_split_choices", "solve_each_split"]


def hierarchy_split_choices(problem: HierarchyProblem) -> tuple[tuple[int, ...], ...]:
    """Every factor vector, one factor per split group, in lexicographic order.

    Examples
    --------
    >>> from solvers.memory.levels.problem import SplitGroup
    >>> p = HierarchyProblem((1,), ((0,),), ((),), (32,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
    ...                      splits=(SplitGroup(0, 0, (0,), (1, 2)),))
    >>> hierarchy_split_choices(p)
    ((1,), (2,))
    """
    return split_factor_choices(problem.as_level_problem()) if problem.splits else ((),)


def expand_hierarchy_splits(problem: HierarchyProblem, factors: tuple[int, ...]
                            ) -> tuple[HierarchyProblem, SplitMap]:
    """The problem with every split group unrolled by its factor (no split groups left).

    Examples
    --------
    One op reads a 32-B tensor homed in host memory; split by 2 it is two ops reading 16-B
    portions, each homed in host memory:

    >>> from solvers.memory.levels.problem import SplitGroup
    >>> p = HierarchyProblem((2,), ((0,),), ((),), (32,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
    ...                      tensor_home=(2,), splits=(SplitGroup(0, 0, (0,), (1, 2)),))
    >>> q, m = expand_hierarchy_splits(p, (2,))
    >>> q.reads, q.tensor_bytes, q.tensor_home, q.compute_cycles, m.op_origin
    (((0,), (1,)), (16, 16), (2, 2), (1, 1), ((0, 0), (0, 1)))
    """
    expanded, split_map = expand_splits(problem.as_level_problem(), tuple(factors))
    return dataclasses.replace(
        problem, compute_cycles=expanded.compute_cycles, reads=expanded.reads, writes=expanded.writes,
        tensor_bytes=expanded.tensor_bytes, tensor_home=tuple(problem.home(t) for t, _ in split_map.tensor_origin),
        live_out=expanded.live_out, fast_only_ops=expanded.fast_only_ops, splits=(),
        op_names=expanded.op_names if problem.op_names else (),
        tensor_names=expanded.tensor_names if problem.tensor_names else ()), split_map


def solve_each_split(problem: HierarchyProblem, solve_one: Callable[[HierarchyProblem, int], SolveResult],
                     name: str) -> SolveResult[HierarchySolution]:
    """The best of ``solve_one(expansion, choices)`` over every factor vector, its solution
    marked with its factors; the bound is the least of the expansions' (None if one has
    none), OPTIMAL when it meets the best plan. ``choices`` is how many expansions share
    the caller's budget.

    Examples
    --------
    >>> from solvers.memory.levels.problem import SplitGroup
    >>> from solvers.memory.levels.hierarchy_greedy import AllHomeHierarchySolver
    >>> p = HierarchyProblem((2,), ((0,),), ((),), (32,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
    ...                      splits=(SplitGroup(0, 0, (0,), (1, 2)),))
    >>> r = solve_each_split(p, lambda q, k: AllHomeHierarchySolver().solve(q), "all-home")
    >>> r.objective, r.solution.split_factors  # read at main: 32 / 4 = 8 either way; the first kept
    (8, (1,))
    """
    t0 = time.perf_counter()
    choices = hierarchy_split_choices(problem)
    best: tuple[SolveResult, tuple[int, ...]] | None = None
    bounds: list[int | None] = []
    for factors in choices:
        expanded, _ = expand_hierarchy_splits(problem, factors)
        r = solve_one(expanded, len(choices))
        if r.status is not Status.INFEASIBLE:  # a factor vector without plans bounds nothing
            bounds.append(r.bound)
        if r.solution is not None and (best is None or r.objective < best[0].objective):
            best = (r, factors)
    wall = time.perf_counter() - t0
    if best is None:
        return failure_result(Status.UNKNOWN, name, wall)
    r, factors = best
    solution = dataclasses.replace(r.solution, split_factors=tuple(factors))
    bound = None if any(b is None for b in bounds) else min([*bounds, r.objective])
    status = Status.OPTIMAL if bound is not None and bound >= r.objective else Status.FEASIBLE
    stats = {**r.stats, "split_factors": list(factors), "split_choices": len(choices)}
    return SolveResult(status, r.objective, bound, solution, wall, name, stats)
