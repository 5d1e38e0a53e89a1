"""Independent checker and objective for co-location solutions (plain code, no solver)."""

from __future__ import annotations

from solvers.colocation.problem import BASIS_POINTS, ColocationObjective, ColocationProblem, ColocationSolution

__all__ = ["bin_loads", "utilization_bp", "validate_colocation", "colocation_objective", "solution_cost"]


def bin_loads(problem: ColocationProblem, solution: ColocationSolution) -> list[list[int]]:
    """Sum of demands per bin and dimension (items on forbidden classes count as 0).

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem, ColocationSolution
    >>> p = ColocationProblem(((10, 10),), (2,), (((4, 1),), ((5, 9),)))
    >>> bin_loads(p, ColocationSolution((0, 0)))
    [[9, 10], [0, 0]]
    """
    loads = [[0] * problem.num_dims for _ in range(problem.num_bins)]
    for i, b in enumerate(solution.bin_of_item):
        if not 0 <= b < problem.num_bins:
            continue
        v = problem.demand[problem.item_type(i)][problem.bin_class(b)]
        if v is None:
            continue
        for d, x in enumerate(v):
            loads[b][d] += x
    return loads


def utilization_bp(load: int, capacity: int) -> int:
    """``ceil(10 000 * load / capacity)``: utilization in basis points, rounded up.

    >>> utilization_bp(1, 3), utilization_bp(3, 3)
    (3334, 10000)
    """
    return -(-BASIS_POINTS * load // capacity)


def solution_cost(problem: ColocationProblem, solution: ColocationSolution) -> int:
    """Sum of class costs over used bins.

    >>> from solvers.colocation.problem import ColocationProblem, ColocationSolution
    >>> p = ColocationProblem(((10,), (20,)), (1, 1), (((4,), (4,)), ((5,), (5,))), class_cost=(1, 3))
    >>> solution_cost(p, ColocationSolution((0, 1)))
    4
    """
    return sum(problem.class_cost[problem.bin_class(b)] for b in solution.used_bins())


def colocation_objective(problem: ColocationProblem, solution: ColocationSolution) -> int:
    """The objective value of ``solution`` under ``problem.objective``.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationObjective, ColocationProblem, ColocationSolution
    >>> p = ColocationProblem(((10, 10),), (2,), (((4, 1),), ((5, 9),)))
    >>> colocation_objective(p, ColocationSolution((0, 1)))
    2
    >>> q = ColocationProblem(((10, 10),), (2,), (((4, 1),), ((5, 9),)),
    ...                       objective=ColocationObjective.MIN_MAX_UTILIZATION)
    >>> colocation_objective(q, ColocationSolution((0, 1)))  # 9/10 on bin 1
    9000
    """
    if problem.objective is ColocationObjective.MIN_COST:
        return solution_cost(problem, solution)
    loads = bin_loads(problem, solution)
    return max(utilization_bp(loads[b][d], problem.capacity[problem.bin_class(b)][d])
               for b in range(problem.num_bins) for d in range(problem.num_dims))


def validate_colocation(problem: ColocationProblem, solution: ColocationSolution) -> list[str]:
    """Every violated rule, in words; empty when the solution is feasible.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem, ColocationSolution
    >>> p = ColocationProblem(((10, 10),), (2,), (((4, 1),), ((7, 9),)))
    >>> validate_colocation(p, ColocationSolution((0, 1)))
    []
    >>> validate_colocation(p, ColocationSolution((0, 0)))
    ['bin 0 (class0) dim0: load 11 > capacity 10']
    """
    errors: list[str] = []
    if len(solution.bin_of_item) != problem.num_items:
        return [f"expected {problem.num_items} items, got {len(solution.bin_of_item)}"]
    for i, b in enumerate(solution.bin_of_item):
        if not 0 <= b < problem.num_bins:
            errors.append(f"item {i} on bin {b}, which does not exist")
            continue
        t, c = problem.item_type(i), problem.bin_class(b)
        if problem.demand[t][c] is None:
            errors.append(f"item {i} ({problem.type_name(t)}) on bin {b} of class "
                          f"{problem.class_name(c)}, which its type may not use")
    loads = bin_loads(problem, solution)
    for b, row in enumerate(loads):
        c = problem.bin_class(b)
        for d, x in enumerate(row):
            if x > problem.capacity[c][d]:
                errors.append(f"bin {b} ({problem.class_name(c)}) {problem.dim_name(d)}: "
                              f"load {x} > capacity {problem.capacity[c][d]}")
    if problem.cost_budget is not None:
        cost = solution_cost(problem, solution)
        if cost > problem.cost_budget:
            errors.append(f"cost {cost} > budget {problem.cost_budget}")
    return errors
