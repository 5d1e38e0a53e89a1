"""Proven lower bounds on the max-load of a :class:`PlacementProblem`.

Both ignore communication (which only adds load) and memory (which only restricts).
"""

from __future__ import annotations

from solvers.dag import kahn_order
from solvers.placement.problem import FORBIDDEN, PlacementProblem

__all__ = ["group_bound", "fractional_bound", "lower_bound", "topological_order"]


def topological_order(problem: PlacementProblem) -> tuple[int, ...]:
    """Kahn's order of the nodes, smallest index first among the ready ones.

    Examples
    --------
    >>> topological_order(PlacementProblem((1, 1, 1), (1, 1, 1), (0, 0, 0), ((2, 0), (0, 1)), 1, 0))
    (2, 0, 1)
    """
    return kahn_order(problem.num_nodes, problem.edges)


def _group_times(problem: PlacementProblem) -> list[tuple[int | None, int | None]]:
    """(time on an accelerator or None, time on a CPU or None) per colour group."""
    out = []
    for g in problem.groups():
        acc_ok = problem.num_accelerators > 0 and all(problem.acc_time[i] != FORBIDDEN for i in g)
        if acc_ok and problem.memory_bytes > 0 and problem.held_bytes(g) > problem.memory_bytes:
            acc_ok = False
        a = sum(problem.acc_time[i] for i in g) if acc_ok else None
        c = sum(problem.cpu_time[i] for i in g) if problem.num_cpus > 0 else None
        out.append((a, c))
    return out


def group_bound(problem: PlacementProblem) -> int:
    """Every group lands somewhere: ``max_g min(time on acc, time on CPU)``.

    Examples
    --------
    >>> group_bound(PlacementProblem((5, 1), (3, 9), (0, 0), (), 1, 1, color_classes=((0, 1),)))
    6
    """
    best = 0
    for a, c in _group_times(problem):
        best = max(best, min(x for x in (a, c) if x is not None) if (a, c) != (None, None) else 0)
    return best


def fractional_bound(problem: PlacementProblem) -> int:
    """The LP bound: groups split fractionally between the k accelerators and c CPUs.

    For a load L the CPUs take up to ``c * L`` of CPU time; the accelerator work left is
    smallest when the CPUs take the groups with the largest ``acc / cpu`` ratio first
    (fractional knapsack). L is feasible when that work is ``<= k * L``; the smallest
    integer feasible L is found by bisection.

    Examples
    --------
    Work 12 on one accelerator, or 4 of it moved to one CPU at CPU cost 4:

    >>> fractional_bound(PlacementProblem((8, 4), (100, 4), (0, 0), (), 1, 1))
    8
    >>> fractional_bound(PlacementProblem((6, 6), (6, 6), (0, 0), (), 1, 1))
    6
    """
    k, c = problem.num_accelerators, problem.num_cpus
    times = _group_times(problem)
    forced_cpu = sum(ct for a, ct in times if a is None and ct is not None)
    movable = sorted(((a, ct) for a, ct in times if a is not None and ct is not None),
                     key=lambda t: (-(t[0] / t[1]) if t[1] else float("-inf"), t))
    acc_only = sum(a for a, ct in times if a is not None and ct is None)
    total_acc = acc_only + sum(a for a, _ in movable)

    def feasible(L: int) -> bool:
        cap = c * L - forced_cpu
        if cap < 0:
            return False
        acc_left = total_acc
        for a, ct in movable:
            if cap <= 0:
                break
            if ct == 0:
                acc_left -= a
                continue
            take = min(1.0, cap / ct)
            acc_left -= a * take
            cap -= ct * take
        return acc_left <= k * L + 1e-9

    lo, hi = 0, max(1, total_acc + forced_cpu + sum(ct for _, ct in movable))
    if not feasible(hi):
        return hi
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def lower_bound(problem: PlacementProblem) -> int:
    """``max(group_bound, fractional_bound)``.

    Examples
    --------
    >>> lower_bound(PlacementProblem((5, 5, 5), (50, 50, 50), (1, 1, 1), ((0, 1), (1, 2)), 2, 1))
    8
    """
    return max(group_bound(problem), fractional_bound(problem))
