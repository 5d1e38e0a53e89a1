"""First-fit decreasing (fewest bins) and decreasing least-utilized fit (balance).

The baseline every exact co-location result is compared with in the same run, and the
CP-SAT warm start.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from solvers.colocation.bounds import explain_infeasibility
from solvers.colocation.problem import BASIS_POINTS, ColocationObjective, ColocationProblem, ColocationSolution
from solvers.colocation.validate import colocation_objective, solution_cost
from solvers.core import SolveOptions, SolveResult, Status, failure_result

__all__ = ["FirstFitDecreasingSolver", "bin_completion", "decreasing_order", "first_fit_decreasing", "improve_balance"]


def _size(problem: ColocationProblem, t: int) -> tuple[float, float]:
    """(largest share, summed share) of one copy of ``t`` on its best-fitting class."""
    best = None
    for c, v in enumerate(problem.demand[t]):
        if v is None:
            continue
        shares = [x / k for x, k in zip(v, problem.capacity[c])]
        key = (max(shares), sum(shares))
        best = key if best is None or key < best else best
    assert best is not None
    return best


def decreasing_order(problem: ColocationProblem) -> list[int]:
    """Item types largest first (largest share of a bin, then summed shares, then index).

    >>> from solvers.colocation.problem import ColocationProblem
    >>> decreasing_order(ColocationProblem(((10, 10),), (3,), (((1, 1),), ((9, 1),), ((5, 5),))))
    [1, 2, 0]
    """
    return sorted(range(problem.num_types), key=lambda t: (-_size(problem, t)[0], -_size(problem, t)[1], t))


def _fits(load: list[int], v: tuple[int, ...], cap: tuple[int, ...]) -> bool:
    return all(a + x <= k for a, x, k in zip(load, v, cap))


def first_fit_decreasing(problem: ColocationProblem, bins: list[int] | None = None) -> ColocationSolution | None:
    """Pack items largest first into the first open bin they fit; open bins cheapest class first.

    ``bins`` restricts the candidate bins (in that order). Returns None when an item fits
    nowhere.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)))
    >>> first_fit_decreasing(p).bin_of_item   # both on processor 0
    (0, 0)
    """
    order_bins = list(range(problem.num_bins)) if bins is None else list(bins)
    # Open new bins cheapest class first, then by index; open bins are scanned in opening order.
    to_open = sorted(order_bins, key=lambda b: (problem.class_cost[problem.bin_class(b)], b))
    loads = {b: [0] * problem.num_dims for b in order_bins}
    opened: list[int] = []
    is_open: set[int] = set()
    where = [-1] * problem.num_items
    for t in decreasing_order(problem):
        for i in problem.type_items(t):
            placed = False
            for b in opened:
                v = problem.demand[t][problem.bin_class(b)]
                if v is not None and _fits(loads[b], v, problem.capacity[problem.bin_class(b)]):
                    placed = True
                    break
            if not placed:
                for b in to_open:
                    if b not in is_open:
                        c = problem.bin_class(b)
                        v = problem.demand[t][c]
                        if v is not None and _fits(loads[b], v, problem.capacity[c]):
                            opened.append(b)
                            is_open.add(b)
                            placed = True
                            break
            if not placed:
                return None
            v = problem.demand[t][problem.bin_class(b)]
            loads[b] = [a + x for a, x in zip(loads[b], v)]
            where[i] = b
    return ColocationSolution(tuple(where))


def _least_utilized_fit(problem: ColocationProblem, bins: list[int]) -> ColocationSolution | None:
    """Items largest first, each on the allowed bin whose utilization stays lowest."""
    loads = {b: [0] * problem.num_dims for b in bins}
    where = [-1] * problem.num_items
    for t in decreasing_order(problem):
        for i in problem.type_items(t):
            best, best_key = None, None
            for b in bins:
                c = problem.bin_class(b)
                v = problem.demand[t][c]
                if v is None or not _fits(loads[b], v, problem.capacity[c]):
                    continue
                util = max(BASIS_POINTS * (a + x) / k for a, x, k in zip(loads[b], v, problem.capacity[c]))
                key = (util, b)
                if best_key is None or key < best_key:
                    best, best_key = b, key
            if best is None:
                return None
            loads[best] = [a + x for a, x in zip(loads[best], problem.demand[t][problem.bin_class(best)])]
            where[i] = best
    return ColocationSolution(tuple(where))


@dataclass(frozen=True, slots=True)
class FirstFitDecreasingSolver:
    """The greedy baseline, with the interface of every co-location solver.

    ``MIN_COST``: first-fit decreasing. ``MIN_MAX_UTILIZATION``: decreasing least-utilized
    fit over every bin (or, under a ``cost_budget``, over the bins first-fit decreasing
    opens, falling back to its packing). Always ``FEASIBLE`` with ``bound=None`` when it
    places every item.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)))
    >>> r = FirstFitDecreasingSolver().solve(p)
    >>> r.status.name, r.objective, r.bound
    ('FEASIBLE', 1, None)
    """

    name: str = "ffd"

    def solve(self, problem: ColocationProblem, options: SolveOptions = SolveOptions()) -> SolveResult[ColocationSolution]:
        t0 = time.perf_counter()
        sol = first_fit_decreasing(problem)
        if sol is not None and problem.cost_budget is not None and solution_cost(problem, sol) > problem.cost_budget:
            sol = None
        if sol is not None and problem.objective is ColocationObjective.MIN_MAX_UTILIZATION:
            bins = list(range(problem.num_bins)) if problem.cost_budget is None else list(sol.used_bins())
            balanced = _least_utilized_fit(problem, bins)
            if balanced is not None and colocation_objective(problem, balanced) <= colocation_objective(problem, sol):
                sol = balanced
        wall = time.perf_counter() - t0
        if sol is None:
            provable = (explain_infeasibility(problem) or any(
                not any(problem.fits_alone(t, c) for c in range(problem.num_classes))
                for t in range(problem.num_types)))
            return failure_result(Status.INFEASIBLE if provable else Status.UNKNOWN, self.name, wall)
        return SolveResult(Status.FEASIBLE, colocation_objective(problem, sol), None, sol, wall, self.name)


def bin_completion(problem: ColocationProblem, num_bins: int, *, deadline_s: float,
                   max_nodes: int = 2_000_000) -> ColocationSolution | None:
    """Look for a packing of a one-class problem into ``num_bins`` bins (bin completion).

    Every packing into K bins wastes, per dimension, exactly ``K cap - total``; so each bin
    may leave at most that much room. The search fills bins one at a time: the largest
    unplaced item opens a bin, which is then completed with a subset of the other items
    whose waste fits the remaining budget; when the budget is zero, the subsets that fill
    the bin *exactly* are tried first, found by looking up the missing vector. Depth-first
    with backtracking, stopped at ``deadline_s`` (``time.perf_counter``) or ``max_nodes``.
    A returned packing is valid; None means "not found", never "impossible".

    References: R. E. Korf, "An improved algorithm for optimal bin packing", IJCAI 2003.

    Examples
    --------
    Two triplets that each fill a bin exactly (first-fit decreasing needs 3 bins):

    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((10, 10),), (3,), tuple(((a, b),) for a, b in
    ...     [(5, 1), (4, 4), (1, 5), (4, 2), (4, 5), (2, 3)]))
    >>> first_fit_decreasing(p).used_bins()
    (0, 1, 2)
    >>> sol = bin_completion(p, 2, deadline_s=time.perf_counter() + 5)
    >>> sorted(sorted(sol.items_on(b)) for b in sol.used_bins())
    [[0, 1, 2], [3, 4, 5]]
    """
    if problem.num_classes != 1 or num_bins > problem.class_count[0]:
        return None
    cap = problem.capacity[0]
    nd = problem.num_dims
    vecs = [problem.demand[problem.item_type(i)][0] for i in range(problem.num_items)]
    order = [i for t in decreasing_order(problem) for i in problem.type_items(t)]
    waste = [num_bins * cap[d] - sum(v[d] for v in vecs) for d in range(nd)]
    if any(w < 0 for w in waste):
        return None
    by_vec: dict[tuple[int, ...], list[int]] = {}
    for i in order:
        by_vec.setdefault(vecs[i], []).append(i)
    placed = [False] * problem.num_items
    where = [-1] * problem.num_items
    nodes = 0

    class _Stop(Exception):
        pass

    def tick() -> None:
        nonlocal nodes
        nodes += 1
        if nodes > max_nodes or (nodes & 1023 == 0 and time.perf_counter() > deadline_s):
            raise _Stop

    def completions(room: list[int], start: int, budget: list[int]):
        """Subsets of unplaced items after ``start`` (order positions) fitting ``room``, with
        leftover room within ``budget``; exact lookups first."""
        key = tuple(room)
        if any(room):
            for j in by_vec.get(key, ()):
                if not placed[j] and pos[j] >= start:
                    yield [j]
                    break
        for k in range(start, len(order)):
            j = order[k]
            if placed[j]:
                continue
            v = vecs[j]
            if any(x > r for x, r in zip(v, room)):
                continue
            if tuple(v) == key:
                continue  # already yielded by the lookup
            tick()
            placed[j] = True
            for rest in completions([r - x for r, x in zip(room, v)], k + 1, budget):
                yield [j] + rest
            placed[j] = False
        if all(r <= b for r, b in zip(room, budget)):
            yield []

    pos = {i: k for k, i in enumerate(order)}

    def fill(bin_index: int, budget: list[int]) -> bool:
        first = next((k for k, i in enumerate(order) if not placed[i]), None)
        if first is None:
            return True
        if bin_index >= num_bins:
            return False
        i = order[first]
        placed[i] = True
        room = [k - x for k, x in zip(cap, vecs[i])]
        for subset in completions(room, first + 1, budget):
            tick()
            left = list(room)
            for j in subset:
                placed[j] = True
                left = [r - x for r, x in zip(left, vecs[j])]
            if fill(bin_index + 1, [b - r for b, r in zip(budget, left)]):
                where[i] = bin_index
                for j in subset:
                    where[j] = bin_index
                return True
            for j in subset:
                placed[j] = False
        placed[i] = False
        return False

    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * problem.num_items + 1000))
    try:
        found = fill(0, waste)
    except _Stop:
        found = False
    finally:
        sys.setrecursionlimit(old)
    return ColocationSolution(tuple(where)) if found else None


def improve_balance(problem: ColocationProblem, solution: ColocationSolution, *, deadline_s: float,
                    bins: list[int] | None = None) -> ColocationSolution:
    """Lower the peak utilization of a packing by moves and swaps out of the busiest bin.

    Repeatedly takes the bin with the highest utilization (largest share over dimensions)
    and applies the move of one of its items to another bin, or the swap with an item of
    another bin, that leaves both bins below the current peak and lowest; stops when the
    busiest bin cannot be relieved, or at ``deadline_s``. ``bins`` limits the bins items may
    move to (default: every bin). The result is feasible whenever the input is.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationObjective, ColocationProblem, ColocationSolution
    >>> from solvers.colocation.validate import colocation_objective
    >>> p = ColocationProblem(((10,),), (2,), (((6,),), ((3,),), ((5,),), ((4,),)),
    ...                       objective=ColocationObjective.MIN_MAX_UTILIZATION)
    >>> s = ColocationSolution((0, 0, 1, 1))           # 9 | 9 -> already balanced
    >>> colocation_objective(p, improve_balance(p, s, deadline_s=time.perf_counter() + 1))
    9000
    >>> s = ColocationSolution((0, 1, 1, 0))           # 6+4 = 10 | 3+5 = 8 -> swap 4 and 3: 9 | 9
    >>> colocation_objective(p, improve_balance(p, s, deadline_s=time.perf_counter() + 1))
    9000
    """
    allowed_bins = list(range(problem.num_bins)) if bins is None else list(bins)
    where = list(solution.bin_of_item)
    caps = [problem.capacity[problem.bin_class(b)] for b in range(problem.num_bins)]
    dem = [[problem.demand[problem.item_type(i)][c] for c in range(problem.num_classes)]
           for i in range(problem.num_items)]
    cls = [problem.bin_class(b) for b in range(problem.num_bins)]
    loads = [[0] * problem.num_dims for _ in range(problem.num_bins)]
    members: list[list[int]] = [[] for _ in range(problem.num_bins)]
    for i, b in enumerate(where):
        members[b].append(i)
        for d, x in enumerate(dem[i][cls[b]]):
            loads[b][d] += x

    def util(load, b) -> float:
        return max(x / k for x, k in zip(load, caps[b]))

    def fits(load, b) -> bool:
        return all(x <= k for x, k in zip(load, caps[b]))

    while time.perf_counter() < deadline_s:
        worst = max(range(problem.num_bins), key=lambda b: (util(loads[b], b), -b))
        peak = util(loads[worst], worst)
        best = None  # (new peak of the pair, kind, i, j, target)
        for i in members[worst]:
            vi = dem[i][cls[worst]]
            rest = [x - y for x, y in zip(loads[worst], vi)]
            for b in allowed_bins:
                if b == worst or dem[i][cls[b]] is None:
                    continue
                vb = dem[i][cls[b]]
                moved = [x + y for x, y in zip(loads[b], vb)]
                if fits(moved, b):
                    key = max(util(rest, worst), util(moved, b))
                    if key < peak - 1e-12 and (best is None or key < best[0]):
                        best = (key, "move", i, -1, b)
                for j in members[b]:
                    if dem[j][cls[worst]] is None or problem.item_type(j) == problem.item_type(i):
                        continue
                    a = [x + y for x, y in zip(rest, dem[j][cls[worst]])]
                    c = [x - y + z for x, y, z in zip(loads[b], dem[j][cls[b]], vb)]
                    if fits(a, worst) and fits(c, b):
                        key = max(util(a, worst), util(c, b))
                        if key < peak - 1e-12 and (best is None or key < best[0]):
                            best = (key, "swap", i, j, b)
        if best is None:
            break
        _, kind, i, j, b = best
        for item, src, dst in ((i, worst, b),) + (((j, b, worst),) if kind == "swap" else ()):
            members[src].remove(item)
            members[dst].append(item)
            for d in range(problem.num_dims):
                loads[src][d] -= dem[item][cls[src]][d]
                loads[dst][d] += dem[item][cls[dst]][d]
            where[item] = dst
    return ColocationSolution(tuple(where))
