"""First-fit decreasing (fewest bins) and decreasing least-utilized fit (balance).

The baseline every exact co-location result is compared with in the same run, and the
CP-SAT warm start.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from solvers.colocation.bounds import explain_infeasibility
from solvers.colocation.problem import BASIS_POINTS, ColocationObjective, ColocationProblem, ColocationSolution
from solvers.colocation.validate import colocation_objective, solution_cost
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result

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
class FirstFitDecreasingSolver(Accepting):
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
    problem_type = ColocationProblem

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


def bin_completion(problem: ColocationProblem, num_bins: int, *, deadline_s: float | None = None,
                   max_nodes: int = 2_000_000, info: dict | None = None) -> ColocationSolution | None:
    """Look for a packing of a one-class problem into ``num_bins`` bins (bin completion).

    Every packing into K bins wastes, per dimension, exactly ``K cap - total``; so each bin
    may leave at most that much room. The search fills bins one at a time: the largest
    unplaced item opens a bin, which is then completed with a subset of the other items
    whose waste fits the remaining budget; when the budget is zero, the subsets that fill
    the bin *exactly* are tried first, found by looking up the missing vector. Depth-first
    with backtracking, stopped after ``max_nodes`` nodes (deterministic) or, as a safety net,
    at ``deadline_s`` (``time.perf_counter``). ``info``, when given, receives ``nodes`` and
    ``stopped_by`` (``"finished"``, ``"nodes"`` or ``"wall_time"``).
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
    search = _BinCompletion(problem, num_bins, deadline_s, max_nodes)
    if any(w < 0 for w in search.waste):
        return None
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * problem.num_items + 1000))
    try:
        found = search.fill(0, search.waste)
    except _Stop:
        found = False
    finally:
        sys.setrecursionlimit(old)
    if info is not None:
        info.update(nodes=search.nodes, stopped_by=search.stopped)
    return ColocationSolution(tuple(search.where)) if found else None


class _Stop(Exception):
    """Raised by :meth:`_BinCompletion.tick` when the search's budget is spent."""


class _BinCompletion:
    """The depth-first state of :func:`bin_completion`: the items in decreasing order, which
    are placed and where, the nodes counted and why the search stopped."""

    def __init__(self, problem: ColocationProblem, num_bins: int, deadline_s: float | None,
                 max_nodes: int) -> None:
        self.num_bins, self.deadline_s, self.max_nodes = num_bins, deadline_s, max_nodes
        self.cap = problem.capacity[0]
        self.vecs = [problem.demand[problem.item_type(i)][0] for i in range(problem.num_items)]
        self.order = [i for t in decreasing_order(problem) for i in problem.type_items(t)]
        # the room every packing into num_bins bins leaves, per dimension
        self.waste = [num_bins * self.cap[d] - sum(v[d] for v in self.vecs) for d in range(problem.num_dims)]
        self.by_vec: dict[tuple[int, ...], list[int]] = {}
        for i in self.order:
            self.by_vec.setdefault(self.vecs[i], []).append(i)
        self.pos = {i: k for k, i in enumerate(self.order)}
        self.placed = [False] * problem.num_items
        self.where = [-1] * problem.num_items
        self.nodes = 0
        self.stopped = "finished"

    def tick(self) -> None:
        """Count a node; raise :class:`_Stop` past ``max_nodes`` or (every 1024 nodes) the deadline."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            self.stopped = "nodes"
            raise _Stop
        if self.deadline_s is not None and self.nodes & 1023 == 0 and time.perf_counter() > self.deadline_s:
            self.stopped = "wall_time"
            raise _Stop

    def completions(self, room: list[int], start: int, budget: list[int]):
        """Subsets of unplaced items after ``start`` (order positions) fitting ``room``, with
        leftover room within ``budget``; exact lookups first."""
        placed, order = self.placed, self.order
        key = tuple(room)
        if any(room):
            for j in self.by_vec.get(key, ()):
                if not placed[j] and self.pos[j] >= start:
                    yield [j]
                    break
        for k in range(start, len(order)):
            j = order[k]
            if placed[j]:
                continue
            v = self.vecs[j]
            if any(x > r for x, r in zip(v, room)):
                continue
            if tuple(v) == key:
                continue  # already yielded by the lookup
            self.tick()
            placed[j] = True
            for rest in self.completions([r - x for r, x in zip(room, v)], k + 1, budget):
                yield [j] + rest
            placed[j] = False
        if all(r <= b for r, b in zip(room, budget)):
            yield []

    def fill(self, bin_index: int, budget: list[int]) -> bool:
        """Whether the unplaced items fill bins ``bin_index..`` wasting at most ``budget``: the
        largest opens the bin, each completion of it is tried in turn."""
        placed, order = self.placed, self.order
        first = next((k for k, i in enumerate(order) if not placed[i]), None)
        if first is None:
            return True
        if bin_index >= self.num_bins:
            return False
        i = order[first]
        placed[i] = True
        room = [k - x for k, x in zip(self.cap, self.vecs[i])]
        for subset in self.completions(room, first + 1, budget):
            self.tick()
            left = list(room)
            for j in subset:
                placed[j] = True
                left = [r - x for r, x in zip(left, self.vecs[j])]
            if self.fill(bin_index + 1, [b - r for b, r in zip(budget, left)]):
                self.where[i] = bin_index
                for j in subset:
                    self.where[j] = bin_index
                return True
            for j in subset:
                placed[j] = False
        placed[i] = False
        return False


def improve_balance(problem: ColocationProblem, solution: ColocationSolution, *, max_work: int = 10**10,
                    deadline_s: float | None = None, bins: list[int] | None = None,
                    info: dict | None = None) -> ColocationSolution:
    """Lower the peak utilization of a packing by moves and swaps out of the busiest bin.

    Repeatedly takes the bin with the highest utilization (largest share over dimensions,
    lowest index on ties) and applies the move of one of its items to another bin, or the
    swap with an item of another bin, that leaves both bins below the current peak and
    lowest (first item, then lowest bin or item index on ties); stops when the busiest bin
    cannot be relieved, after ``max_work`` units of counted work (the deterministic budget;
    one step costs ``(items in the busiest bin) x (items + bins)``) or, as a safety net, at
    ``deadline_s``. ``bins`` limits the bins items may move to (default: every bin). The
    result is feasible whenever the input is. ``info``, when given, receives ``steps``,
    ``work`` and ``stopped_by`` (``"local_optimum"``, ``"work"``, ``"wall_time"``).

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationObjective, ColocationProblem, ColocationSolution
    >>> from solvers.colocation.validate import colocation_objective
    >>> p = ColocationProblem(((10,),), (2,), (((6,),), ((3,),), ((5,),), ((4,),)),
    ...                       objective=ColocationObjective.MIN_MAX_UTILIZATION)
    >>> s = ColocationSolution((0, 0, 1, 1))           # 9 | 9 -> already balanced
    >>> colocation_objective(p, improve_balance(p, s))
    9000
    >>> s = ColocationSolution((0, 1, 1, 0))           # 6+4 = 10 | 3+5 = 8 -> swap 4 and 3: 9 | 9
    >>> colocation_objective(p, improve_balance(p, s))
    9000
    """
    a = _BalanceArrays.of(problem, bins)
    n, nb = problem.num_items, problem.num_bins
    where = np.array(solution.bin_of_item, dtype=np.int64)
    loads = np.zeros((nb, problem.num_dims), dtype=np.int64)
    np.add.at(loads, where, a.dem[np.arange(n), a.bin_class[where]])
    steps, work, stopped = 0, 0, "local_optimum"
    while True:
        if work >= max_work:
            stopped = "work"
            break
        if deadline_s is not None and time.perf_counter() > deadline_s:
            stopped = "wall_time"
            break
        steps += 1
        util = (loads * a.inv).max(axis=1)
        worst = int(np.argmax(util))
        members = np.flatnonzero(where == worst)
        work += len(members) * (n + nb)
        best = _best_relief(a, loads, where, worst, members, util[worst] - 1e-12)
        if best is None:
            steps -= 1
            break
        _, kind, i, j, b = best
        for item, src, dst in ((i, worst, b),) + (((j, b, worst),) if kind == "swap" else ()):
            loads[src] -= a.dem[item, a.bin_class[src]]
            loads[dst] += a.dem[item, a.bin_class[dst]]
            where[item] = dst
    if info is not None:
        info.update(steps=steps, work=work, stopped_by=stopped)
    return ColocationSolution(tuple(int(b) for b in where))


@dataclass(frozen=True)
class _BalanceArrays:
    """The fixed data of :func:`improve_balance` as arrays: each bin's class, capacity and its
    inverse, each item's type, demand per class and the classes it may use, and the bins
    items may move to."""

    bin_class: np.ndarray  # (bins,)
    capb: np.ndarray  # (bins, dims)
    inv: np.ndarray  # (bins, dims)
    typ: np.ndarray  # (items,)
    dem: np.ndarray  # (items, classes, dims)
    ok_cls: np.ndarray  # (items, classes)
    allowed: np.ndarray  # (bins,)
    idx: np.ndarray  # (items,): 0..items-1

    @classmethod
    def of(cls, problem: ColocationProblem, bins: list[int] | None) -> "_BalanceArrays":
        """The arrays of ``problem``; items may move to ``bins`` (None: every bin)."""
        nb, nd, nc, n = problem.num_bins, problem.num_dims, problem.num_classes, problem.num_items
        bin_class = np.array([problem.bin_class(b) for b in range(nb)], dtype=np.int64)
        capb = np.array([problem.capacity[c] for c in bin_class], dtype=np.int64)
        typ = np.array([problem.item_type(i) for i in range(n)], dtype=np.int64)
        tdem = np.zeros((problem.num_types, nc, nd), dtype=np.int64)
        tok = np.zeros((problem.num_types, nc), dtype=bool)
        for t in range(problem.num_types):
            for c, v in enumerate(problem.demand[t]):
                if v is not None:
                    tdem[t, c] = v
                    tok[t, c] = True
        allowed = np.zeros(nb, dtype=bool)
        allowed[list(range(nb)) if bins is None else list(bins)] = True
        return cls(bin_class, capb, 1.0 / capb, typ, tdem[typ], tok[typ], allowed, np.arange(n))


def _best_relief(a: _BalanceArrays, loads: np.ndarray, where: np.ndarray, worst: int, members: np.ndarray,
                 peak: float) -> tuple | None:
    """The move or swap out of bin ``worst`` that leaves both bins below ``peak`` and lowest:
    ``(key, kind, item, partner or -1, target bin)``, or None."""
    cw = a.bin_class[worst]
    src_bin = where
    src_cls = a.bin_class[src_bin]
    dem, ok_cls, inv, capb = a.dem, a.ok_cls, a.inv, a.capb
    dem_src = dem[a.idx, src_cls]  # every item's demand where it is
    in_worst = dem[:, cw]  # every item's demand on the worst bin's class
    can_enter_worst = ok_cls[:, cw] & (src_bin != worst) & a.allowed[src_bin]
    best = None  # (key, kind, i, j, target)
    for i in members:
        rest = loads[worst] - dem[i, cw]
        rest_u = (rest * inv[worst]).max()
        if rest_u >= peak:
            continue
        moved = loads + dem[i, a.bin_class]
        fit = a.allowed & ok_cls[i, a.bin_class] & (moved <= capb).all(axis=1)
        fit[worst] = False
        key = np.where(fit, np.maximum(rest_u, (moved * inv).max(axis=1)), np.inf)
        b = int(np.argmin(key))
        if key[b] < peak and (best is None or key[b] < best[0]):
            best = (float(key[b]), "move", int(i), -1, b)
        after_worst = rest + in_worst  # the worst bin after the swap, per partner j
        after_src = loads[src_bin] - dem_src + dem[i, src_cls]  # j's bin after the swap
        fit = (can_enter_worst & ok_cls[i, src_cls] & (a.typ != a.typ[i])
               & (after_worst <= capb[worst]).all(axis=1) & (after_src <= capb[src_bin]).all(axis=1))
        key = np.where(fit, np.maximum((after_worst * inv[worst]).max(axis=1),
                                       (after_src * inv[src_bin]).max(axis=1)), np.inf)
        j = int(np.argmin(key))
        if key[j] < peak and (best is None or key[j] < best[0]):
            best = (float(key[j]), "swap", int(i), j, int(src_bin[j]))
    return best
