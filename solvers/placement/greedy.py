"""Greedy baseline for max-load partitioning: a balanced linear split of a topological order.

The colour groups are ordered by the topological position of their first forward node;
for a target load L, consecutive groups fill accelerator 0 while its exact load (compute
plus communication, counting every not-yet-placed neighbour as "elsewhere") stays within
L and memory (a shared tensor held once), then accelerator 1, and so on; groups that may not run on an accelerator,
and whatever is left after the last accelerator, go to the least-loaded CPU. The smallest
L that works is found by bisection. A contiguous segment of a topological order is
convex, so the split is contiguous whenever the colour groups and CPU-only nodes allow.
The best of that split, everything on one accelerator and everything on the CPUs is
returned, after a local search (:func:`improve_placement`) that moves colour groups off
the most loaded device while that lowers the max-load.
"""

from __future__ import annotations

import time

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.placement.bounds import lower_bound, topological_order
from solvers.placement.problem import FORBIDDEN, PlacementProblem, PlacementSolution
from solvers.placement.validate import device_loads, max_load, validate_placement

__all__ = ["GreedyPlacementSolver", "greedy_placement", "linear_split", "improve_placement"]


def _group_order(problem: PlacementProblem) -> list[tuple[int, ...]]:
    pos = {v: i for i, v in enumerate(topological_order(problem))}

    def key(g: tuple[int, ...]) -> tuple[int, int]:
        fwd = [pos[i] for i in g if not problem.backward(i)]
        return (min(fwd) if fwd else min(pos[i] for i in g), g[0])

    return sorted(problem.groups(), key=key)


class _Segment:
    """Incremental load of one accelerator's node set S under the paper's comm model."""

    def __init__(self, problem: PlacementProblem, succ: list[list[int]], pred: list[list[int]]) -> None:
        self.p, self.succ, self.pred = problem, succ, pred
        self.shared_of: dict[int, list[int]] = {}  # node -> the shared tensors it reads
        for t, (_, readers) in enumerate(problem.shared_resident):
            for i in readers:
                self.shared_of.setdefault(i, []).append(t)
        self.members: set[int] = set()
        self.compute = 0
        self.size = 0  # a shared tensor once (PlacementProblem.held_bytes)
        self.readers: dict[int, int] = {}  # shared tensor -> its readers in S
        self.out_count: dict[int, int] = {}  # u in S -> successors outside S
        self.in_count: dict[int, int] = {}  # u outside S -> successors inside S
        self.comm = 0

    def _pays(self, u: int) -> bool:
        return self.out_count.get(u, 0) > 0 if u in self.members else self.in_count.get(u, 0) > 0

    def add(self, group: tuple[int, ...]) -> list:
        """Add a group's nodes; return an undo log for :meth:`undo`."""
        log: list = [(self.compute, self.size, self.comm)]
        for x in group:
            touched = {x, *self.pred[x]}
            before = {u: self._pays(u) for u in touched}
            log.append(("x", x, self.in_count.get(x)))
            self.members.add(x)
            self.compute += self.p.acc_time[x]
            self.size += self.p.size(x)
            for t in self.shared_of.get(x, ()):
                if self.readers.get(t, 0):
                    self.size -= self.p.shared_resident[t][0]  # already held
                self.readers[t] = self.readers.get(t, 0) + 1
                log.append(("t", t, None))
            self.in_count.pop(x, None)
            self.out_count[x] = sum(1 for v in self.succ[x] if v not in self.members)
            for u in self.pred[x]:
                if u in self.members:
                    log.append(("o", u, self.out_count[u]))
                    self.out_count[u] -= 1
                else:
                    log.append(("i", u, self.in_count.get(u)))
                    self.in_count[u] = self.in_count.get(u, 0) + 1
            for u in touched:
                after = self._pays(u)
                if after != before[u]:
                    self.comm += self.p.comm_time[u] if after else -self.p.comm_time[u]
        return log

    def undo(self, log: list) -> None:
        self.compute, self.size, self.comm = log[0]
        for kind, u, old in reversed(log[1:]):
            if kind == "x":
                self.members.discard(u)
                self.out_count.pop(u, None)
                if old is not None:
                    self.in_count[u] = old
            elif kind == "o":
                self.out_count[u] = old
            elif kind == "t":
                self.readers[u] -= 1
            elif old is None:
                self.in_count.pop(u, None)
            else:
                self.in_count[u] = old

    @property
    def load(self) -> int:
        return self.compute + self.comm


def linear_split(problem: PlacementProblem, target: int) -> tuple[int, ...] | None:
    """The greedy split for a target load, or None when it does not fit.

    Examples
    --------
    >>> p = PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (0, 0, 0, 0), ((0, 1), (1, 2), (2, 3)), 2, 1)
    >>> linear_split(p, 6), linear_split(p, 5)
    ((0, 0, 1, 1), None)
    """
    k, c = problem.num_accelerators, problem.num_cpus
    n = problem.num_nodes
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for u, v in problem.edges:
        succ[u].append(v)
        pred[v].append(u)
    dev = [-1] * n
    cpu_load = [0] * c
    a = 0
    seg = _Segment(problem, succ, pred) if k else None
    for g in _group_order(problem):
        acc_ok = k > 0 and all(problem.acc_time[i] != FORBIDDEN for i in g)
        placed = False
        while acc_ok and a < k and not placed:
            log = seg.add(g)
            fits_mem = problem.memory_bytes == 0 or seg.size <= problem.memory_bytes
            if seg.load <= target and fits_mem:
                for i in g:
                    dev[i] = a
                placed = True
            else:
                seg.undo(log)
                if not seg.members:
                    break  # g alone does not fit an empty accelerator
                a += 1
                seg = _Segment(problem, succ, pred)
        if not placed:
            if c == 0:
                return None
            t = sum(problem.cpu_time[i] for i in g)
            j = min(range(c), key=lambda q: (cpu_load[q], q))
            if cpu_load[j] + t > target:
                return None
            cpu_load[j] += t
            for i in g:
                dev[i] = k + j
    return tuple(dev)


def greedy_placement(problem: PlacementProblem, max_evaluations: int = 2000) -> PlacementSolution | None:
    """The best valid split of the greedy family (see the module notes), or None.

    Examples
    --------
    >>> p = PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (1, 1, 1, 0), ((0, 1), (1, 2), (2, 3)), 2, 1)
    >>> s = greedy_placement(p); s.device_of, max_load(p, s.device_of)
    ((0, 0, 1, 1), 7)
    """
    cands: list[tuple[int, ...]] = []
    n, k, c = problem.num_nodes, problem.num_accelerators, problem.num_cpus
    if c:
        cands.append(tuple([k] * n))
    if k:
        cands.append(tuple(0 if problem.acc_time[i] != FORBIDDEN else k for i in range(n)))
    lo = lower_bound(problem)
    hi = sum(max(problem.acc_time[i], problem.cpu_time[i]) + problem.comm_time[i] for i in range(n)) + 1
    if linear_split(problem, hi) is not None:
        while lo < hi:
            mid = (lo + hi) // 2
            if linear_split(problem, mid) is not None:
                hi = mid
            else:
                lo = mid + 1
        cands.append(linear_split(problem, hi))
    best = None
    for dev in cands:
        if validate_placement(problem, PlacementSolution(dev)):
            continue
        if best is None or max_load(problem, dev) < max_load(problem, best):
            best = dev
    if best is None:
        return None
    return PlacementSolution(improve_placement(problem, best, max_evaluations=max_evaluations))


def improve_placement(problem: PlacementProblem, device_of: tuple[int, ...],
                      max_evaluations: int = 2000) -> tuple[int, ...]:
    """Hill climbing: move one colour group off the most loaded device while that helps.

    A move is kept when it lowers ``(max-load, sum of squared loads)`` and the placement
    stays valid (memory, CPU-only nodes, and contiguity when the problem asks for it).
    At most ``max_evaluations`` candidate placements are scored (deterministic).

    Examples
    --------
    >>> p = PlacementProblem((4, 4, 4), (40, 40, 40), (0, 0, 0), (), 2, 0)
    >>> improve_placement(p, (0, 0, 0))  # loads 12 | 0 -> 8 | 4
    (0, 0, 1)
    """
    dev = list(device_of)
    groups = problem.groups()
    loads = device_loads(problem, dev)
    score = (max(loads), sum(x * x for x in loads))
    evals = 0
    while evals < max_evaluations:
        worst = max(range(problem.num_devices), key=lambda d: (loads[d], -d))
        improving = []
        for g in groups:
            if dev[g[0]] != worst:
                continue
            for d in range(problem.num_devices):
                if d == worst or evals >= max_evaluations:
                    continue
                if d < problem.num_accelerators and any(problem.acc_time[i] == FORBIDDEN for i in g):
                    continue
                trial = list(dev)
                for i in g:
                    trial[i] = d
                evals += 1
                tl = device_loads(problem, trial)
                ts = (max(tl), sum(x * x for x in tl))
                if ts < score:
                    improving.append((ts, trial, tl))
        improving.sort(key=lambda m: (m[0], m[1]))
        best_move = next((m for m in improving
                          if not validate_placement(problem, PlacementSolution(tuple(m[1])))), None)
        if best_move is None:
            break
        score, dev, loads = best_move
    return tuple(dev)


class GreedyPlacementSolver(Accepting):
    """:func:`greedy_placement` behind the :class:`~solvers.core.Solver` interface.

    Examples
    --------
    >>> p = PlacementProblem((3, 3), (30, 30), (0, 0), ((0, 1),), 2, 0)
    >>> r = GreedyPlacementSolver().solve(p); r.status.value, r.objective, r.bound
    ('FEASIBLE', 3, None)
    """

    name = "greedy"
    problem_type = PlacementProblem

    def solve(self, problem: PlacementProblem, options: SolveOptions = SolveOptions()) -> SolveResult[PlacementSolution]:
        t0 = time.perf_counter()
        sol = greedy_placement(problem)
        wall = time.perf_counter() - t0
        if sol is None:
            return failure_result(Status.UNKNOWN, self.name, wall)
        return SolveResult(Status.FEASIBLE, max_load(problem, sol.device_of), None, sol, wall, self.name)
