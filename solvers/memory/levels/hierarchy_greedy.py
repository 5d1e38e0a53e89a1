"""Baselines for level assignment over N levels: everything at home, and a Belady-like greedy.

The greedy is :mod:`solvers.memory.levels.greedy` with one Belady cache per level: each
access tries the levels faster than its tensor's home, fastest first (level 0 only on a
fast-only op); when an op's point or the gap before it would overflow a level, the
resident tensor used farthest in the future leaves that level, and failing that the op's
largest operand there moves down to its next faster-than-home level (at last, home). A
tensor kept in a level is used there. Then each eviction and fetch is laid out hop by
hop along its route (every hop of a route with the same trigger and release), evictions
held one op longer where every level on the route has room, fetches triggered as early as
every level on the route has room. With two levels this is exactly
:func:`~solvers.memory.levels.greedy.plan_greedy` (tests/solvers/memory/test_hierarchy.py).

The greedy is not cost-aware by itself: over a slow host link it may stage weights whose
fetches cost more than the reads they speed up. ``cost_aware=True`` offers an input tensor
only the levels whose fetch pays for itself, and :class:`GreedyHierarchySolver` keeps the best
of both greedy plans and everything at home (:func:`plan_hierarchy_best`), so it is never
slower than everything at home.

Heuristics: FEASIBLE with ``bound=None``, or UNKNOWN when they find no plan (the greedy
does not plan the home levels' room: a plan that overflows one is dropped).
"""

from __future__ import annotations

import time
from typing import Callable

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move
from solvers.memory.levels.hierarchy_split import solve_each_split
from solvers.memory.levels.hierarchy_validate import hierarchy_metrics, level_occupancy, replay_hierarchy
from solvers.memory.levels.problem import TransferKind, cycles_for_bytes

__all__ = ["retime_hierarchy", "plan_hierarchy_all_home", "plan_hierarchy_greedy", "plan_hierarchy_best",
           "search_stay_home",
           "AllHomeHierarchySolver", "GreedyHierarchySolver"]


def retime_hierarchy(problem: HierarchyProblem, solution: HierarchySolution) -> HierarchySolution:
    """The same decisions with the replayed (as-soon-as-possible) times.

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> s = plan_hierarchy_greedy(p)
    >>> retime_hierarchy(p, s) == s
    True
    """
    r = replay_hierarchy(problem, solution)
    moves = tuple(Move(m.kind, m.tensor, m.gap, m.hop, m.src_level, m.dst_level, m.trigger_op, m.release_op, s,
                       m.duration_cycles) for m, s in zip(solution.moves, r.move_start))
    return HierarchySolution(solution.level, solution.kept, moves, r.op_start, r.op_duration)


def _fits_everywhere(problem: HierarchyProblem, solution: HierarchySolution) -> bool:
    return all(max(row, default=0) <= cap for row, cap in zip(level_occupancy(problem, solution),
                                                              problem.capacity_bytes))


def plan_hierarchy_all_home(problem: HierarchyProblem) -> HierarchySolution | None:
    """Every access at its tensor's home (None when a fast-only op would leave level 0 or a
    level overflows).

    Examples
    --------
    >>> p = HierarchyProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> plan_hierarchy_all_home(p).makespan_cycles  # op 0: max(3, 8/4); op 1: max(1, 8/4)
    5
    """
    level = tuple(tuple(problem.home(t) for _ in problem.accesses(t)) for t in range(problem.num_tensors))
    if any(level[t][j] != 0 for row in (problem.op_accesses()[i] for i in problem.fast_only_ops) for t, j in row):
        return None
    kept = tuple(tuple(False for _ in row) for row in level)
    s = retime_hierarchy(problem, HierarchySolution(level, kept, (), (0,) * problem.num_ops, (0,) * problem.num_ops))
    return s if _fits_everywhere(problem, s) else None


def plan_hierarchy_greedy(problem: HierarchyProblem, prefetch_window_ops: int | None = None,
                          cost_aware: bool = False, stay_home: frozenset = frozenset(),
                          offered_levels: dict | None = None) -> HierarchySolution | None:
    """The Belady-like greedy plan over every level (None when it finds none).

    ``cost_aware``: an input tensor (one that starts at home) is only offered the levels
    whose fetch pays for itself: the DMA cycles along ``route(home, level)`` at most the op
    cycles its reads save there (``ceil(b/bw_home) - ceil(b/bw_level)`` per read). Over a
    slow host link, reading straight from host then beats staging through hbm.
    ``stay_home``: tensors never offered another level (e.g. those a relaxation reads in place,
    :func:`~solvers.memory.levels.hierarchy_bounds.solve_bound_relaxation`).
    ``offered_levels``: per tensor, the levels it is offered instead (fastest first; e.g. only
    main for a host weight a fetch plan stages there, :mod:`~solvers.memory.levels.fetch_balance`).

    Examples
    --------
    Tensor 0 (8 bytes) lives on host (level 2); op 0 reads it from vmem (level 0) after two
    hops from program start: host -> hbm (8 cycles at 1 B/cycle), hbm -> vmem (2 cycles):

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> s = plan_hierarchy_greedy(p)
    >>> s.level, [(m.src_level, m.dst_level, m.start_cycle) for m in s.moves], s.makespan_cycles
    (((2, 0),), [(2, 1, 0), (1, 0, 8)], 14)
    """
    residency = _Residency(problem, cost_aware, stay_home, offered_levels or {})
    for i, row in enumerate(problem.op_accesses()):
        assigned = residency.make_room(i, row)
        if assigned is None:
            return None
        residency.record(i, row, assigned)
    occ = _Occupancy(problem)
    occ.add_residency(residency.level, residency.kept)
    evictions, prefetches = residency.evictions, residency.prefetches
    _hold_evictions(problem, occ, evictions, prefetches, residency.level)
    triggers = _prefetch_triggers(problem, occ, evictions, prefetches, residency.level, prefetch_window_ops)
    moves = []
    for t, (g, r, src) in evictions.items():
        moves += _hops(problem, TransferKind.EVICT, t, g, problem.route(src, problem.home(t)),
                       problem.accesses(t)[g - 1], r)
    for (t, j), k in triggers.items():
        moves += _hops(problem, TransferKind.PREFETCH, t, j, problem.route(problem.home(t), residency.level[t][j]),
                       k, problem.accesses(t)[j])
    moves.sort(key=lambda m: (m.release_op, m.trigger_op, m.kind is TransferKind.PREFETCH, m.tensor, m.gap, m.hop))
    n = problem.num_ops
    draft = HierarchySolution(tuple(map(tuple, residency.level)), tuple(map(tuple, residency.kept)), tuple(moves),
                              (0,) * n, (0,) * n)
    s = retime_hierarchy(problem, draft)
    return s if _fits_everywhere(problem, s) else None


def _fetch_pays(problem: HierarchyProblem, t: int, lv: int) -> bool:
    """Whether an input tensor's fetch to ``lv`` costs no more DMA cycles than its reads save
    there (always, for a tensor an op produces: it need not move at all)."""
    acc = problem.accesses(t)
    if problem.is_real(acc[0]):
        return True
    home, size, bw = problem.home(t), problem.tensor_bytes[t], problem.bandwidth_bytes_per_cycle
    route = problem.route(home, lv)
    dma = sum(problem.hop_cycles(t, a, b) for a, b in zip(route, route[1:]))
    reads = sum(1 for a in acc if problem.is_real(a))
    return dma <= reads * (cycles_for_bytes(size, bw[home]) - cycles_for_bytes(size, bw[lv]))


def plan_hierarchy_best(problem: HierarchyProblem) -> HierarchySolution | None:
    """The shortest of the Belady greedy, the cost-aware greedy and everything at home (in
    that order on ties), so never slower than everything at home when that plan exists.

    Examples
    --------
    Three host weights over a slow host link (1 B/cycle): staging each through hbm into vmem
    takes 20 DMA cycles for 16 cycles of host reads, so the plain greedy (66) loses to
    reading from host (48); the cost-aware greedy reads from host:

    >>> p = HierarchyProblem((2, 2, 2), ((0,), (1,), (2,)), ((), (), ()), (16, 16, 16), (16, 32, 256, 4096),
    ...                      (16, 8, 4, 1), 2, ((0, 1), (0, 2), (1, 2), (2, 3)), tensor_home=(3, 3, 3))
    >>> plan_hierarchy_greedy(p).makespan_cycles, plan_hierarchy_best(p).makespan_cycles
    (66, 48)
    """
    plans = (plan_hierarchy_greedy(problem), plan_hierarchy_greedy(problem, cost_aware=True),
             plan_hierarchy_all_home(problem))
    return min((s for s in plans if s is not None), key=lambda s: s.makespan_cycles, default=None)


def search_stay_home(problem: HierarchyProblem, stay_home: frozenset, op_evaluations: float,
                     stop: Callable[[], bool] = lambda: False) -> tuple[HierarchySolution | None, dict]:
    """Local search over which tensors the greedy keeps home, from ``stay_home``: sweep the
    tensors that may stay home (slowest home first, where the choice weighs most; then first
    access first), flip one at a time, keep a flip when the
    greedy plan gets shorter; sweep again while a sweep improved. Never worse than its start.
    Work is counted: each greedy plan costs ``num_ops`` of ``op_evaluations`` (deterministic);
    ``stop()`` is a safety net only (then ``stopped_by`` says so).

    Examples
    --------
    Two host weights over a slow link: keeping both home costs 16 + 16 = 32. Flipping w0
    fetches it before op 0 (host -> hbm 16, hbm -> vmem 4): 20 + 2 + 16 = 38, not kept;
    flipping w1 fetches it while op 0 reads w0 from host [0, 16): its hops end at 20, op 1
    [20, 22): 22, kept:

    >>> p = HierarchyProblem((2, 2), ((0,), (1,)), ((), ()), (16, 16), (16, 32, 256, 4096), (16, 8, 4, 1), 2,
    ...                      ((0, 1), (0, 2), (1, 2), (2, 3)), tensor_home=(3, 3))
    >>> plan_hierarchy_greedy(p, stay_home=frozenset({0, 1})).makespan_cycles
    32
    >>> s, info = search_stay_home(p, frozenset({0, 1}), 100)
    >>> s.makespan_cycles, info["flips_kept"]
    (22, 1)
    """
    stay = set(stay_home)
    best = plan_hierarchy_greedy(problem, stay_home=frozenset(stay))
    order = sorted((t for t in range(problem.num_tensors) if _may_stay_home(problem, t)),
                   key=lambda t: (problem.bandwidth_bytes_per_cycle[problem.home(t)], _first_real_access(problem, t), t))
    used, tried, kept, stopped = float(problem.num_ops), 0, 0, "converged"
    improved = True
    while improved and stopped == "converged":
        improved = False
        for t in order:
            if used + problem.num_ops > op_evaluations:
                stopped = "work_budget"
                break
            if stop():
                stopped = "wall_clock"
                break
            trial = stay ^ {t}
            s = plan_hierarchy_greedy(problem, stay_home=frozenset(trial))
            used += problem.num_ops
            tried += 1
            if s is not None and (best is None or s.makespan_cycles < best.makespan_cycles):
                best, stay, improved = s, trial, True
                kept += 1
    return best, {"flips_tried": tried, "flips_kept": kept, "op_evaluations": used, "stopped_by": stopped}


def _may_stay_home(problem: HierarchyProblem, t: int) -> bool:
    """Whether keeping ``t`` home is a real choice: it has bytes, a home slower than some level,
    and no fast-only op reads it away from level 0."""
    bw, acc = problem.bandwidth_bytes_per_cycle, problem.accesses(t)
    if not problem.tensor_bytes[t] or bw[problem.home(t)] >= max(bw):
        return False
    return problem.home(t) == 0 or not any(a in problem.fast_only_ops for a in acc if problem.is_real(a))


def _first_real_access(problem: HierarchyProblem, t: int) -> int:
    return next((a for a in problem.accesses(t) if problem.is_real(a)), problem.num_ops)


def _hops(problem: HierarchyProblem, kind: TransferKind, t: int, gap: int, route, trigger: int,
          release: int) -> list[Move]:
    return [Move(kind, t, gap, h, route[h], route[h + 1], trigger, release, 0,
                 problem.hop_cycles(t, route[h], route[h + 1])) for h in range(len(route) - 1)]


class _Residency:
    """Phase A: the level of every access, op by op, one Belady cache per level."""

    def __init__(self, problem: HierarchyProblem, cost_aware: bool = False, stay_home: frozenset = frozenset(),
                 offered_levels: dict | None = None) -> None:
        self.problem = problem
        self.size = problem.tensor_bytes
        self.acc = [problem.accesses(t) for t in range(problem.num_tensors)]
        self.level = [[problem.home(t)] * len(a) for t, a in enumerate(self.acc)]
        self.kept = [[False] * len(a) for a in self.acc]
        self.fast_only = set(problem.fast_only_ops)
        bw = problem.bandwidth_bytes_per_cycle
        self.speed_order = tuple(range(problem.num_levels))  # the hierarchy's order, level 0 first
        # Per tensor, the levels above its home in that order that are worth reading from:
        # level 0 (the fast level, as in the two-level greedy) and any faster than home.
        self.candidates = [tuple(lv for lv in range(problem.home(t)) if lv == 0 or bw[lv] > bw[problem.home(t)])
                           for t in range(problem.num_tensors)]
        if cost_aware:
            self.candidates = [tuple(lv for lv in c if _fetch_pays(problem, t, lv))
                               for t, c in enumerate(self.candidates)]
        for t, levels in (offered_levels or {}).items():
            self.candidates[t] = tuple(levels)
        for t in stay_home:
            self.candidates[t] = ()
        self.carried: list[dict[int, int]] = [{} for _ in range(problem.num_levels)]  # level -> {tensor: access}
        self.orig: dict[int, int] = {}  # tensor -> level of the producer's copy, not yet saved home
        self.evictions: dict[int, list[int]] = {}  # tensor -> [gap, release op, source level]
        self.prefetches: list[tuple[int, int]] = []  # (tensor, gap)

    def carried_level(self, t: int) -> int | None:
        return next((lv for lv, c in enumerate(self.carried) if t in c), None)

    def cut(self, t: int, lv: int) -> None:
        """Stop carrying ``t`` in level ``lv`` (saving the producer's copy home first)."""
        jl = self.carried[lv].pop(t)
        if t in self.orig:
            self.evictions[t] = [jl + 1, self.acc[t][jl] + 1, self.orig.pop(t)]

    def next_level(self, t: int, lv: int, i: int) -> int | None:
        """The level ``t`` tries after ``lv`` (its home last); None on a fast-only op."""
        if i in self.fast_only:
            return None
        cands = self.candidates[t]
        later = cands[cands.index(lv) + 1:] if lv in cands else ()
        return later[0] if later else self.problem.home(t)

    def make_room(self, i: int, row) -> dict[int, int] | None:
        """The level of each of op ``i``'s accesses so that the op and the gap before it fit
        every level (dropping idle carried tensors first); None when nothing fits."""
        size, home = self.size, self.problem.home
        assigned = {}
        for t, _ in row:
            held = self.carried_level(t)
            if held not in (None, 0) and i in self.fast_only:  # a fast-only op reads it from level 0: refetch
                self.cut(t, held)
                held = None
            if held is not None:
                assigned[t] = held
            elif size[t] and (i in self.fast_only or self.candidates[t]):
                assigned[t] = 0 if i in self.fast_only else self.candidates[t][0]
            else:
                assigned[t] = home(t)
        for lv in self.speed_order:
            if not self.fit_level(i, row, lv, assigned):
                return None
        return assigned

    def fit_level(self, i: int, row, lv: int, assigned: dict[int, int]) -> bool:
        """Make op ``i``'s accesses assigned to ``lv`` fit it, demoting or dropping tensors."""
        size, carried, cap = self.size, self.carried[lv], self.problem.capacity_bytes[lv]
        touched = {t: j for t, j in row}
        while True:
            here = [t for t, _ in row if assigned[t] == lv and lv != self.problem.home(t)]
            hits = [t for t in here if t in carried]
            idle = [t for t in carried if t not in touched]
            fetch = [t for t in here if t not in carried and touched[t] > 0]
            evicting = sum(size[t] for t, (g, r, src) in self.evictions.items() if r == i and src == lv)
            at_op = sum(size[t] for t in here) + sum(size[t] for t in idle)
            at_gap = sum(size[t] for t in carried) + sum(size[t] for t in fetch) + evicting
            if at_op <= cap and at_gap <= cap:
                return True
            if idle:  # Belady: drop the resident tensor used farthest in the future
                self.cut(max(idle, key=lambda t: (self.acc[t][carried[t] + 1], size[t], -t)), lv)
                continue
            movable = fetch or [t for t in here if touched[t] == 0] or hits
            if not movable:
                return False
            victim = max(movable, key=lambda t: (size[t], -t))
            demoted = self.next_level(victim, lv, i)
            if demoted is None:
                return False
            if victim in carried:
                self.cut(victim, lv)
            assigned[victim] = demoted

    def record(self, i: int, row, assigned: dict[int, int]) -> None:
        """Op ``i``'s accesses at their levels: kept or fetched, carried onward or saved home."""
        acc = self.acc
        for t, j in row:
            lv = assigned[t]
            away = lv != self.problem.home(t)
            self.level[t][j] = lv
            if t in self.carried[lv]:
                self.kept[t][j] = True
                del self.carried[lv][t]
            elif away and j > 0:
                self.prefetches.append((t, j))
            if not away:
                continue
            if j == 0:
                self.orig[t] = lv
            if j + 1 < len(acc[t]) and self.problem.is_real(acc[t][j + 1]):
                self.carried[lv][t] = j
            elif j + 1 < len(acc[t]):  # next is the live-out end: save home
                if t in self.orig:
                    self.evictions[t] = [j + 1, i + 1, self.orig.pop(t)]
            else:
                self.orig.pop(t, None)


class _Occupancy:
    """Bytes in every level at every point as phase B lays the moves out."""

    def __init__(self, problem: HierarchyProblem, cost_aware: bool = False, stay_home: frozenset = frozenset()
                 ) -> None:
        self.problem = problem
        self.occ = [[0] * (2 * problem.num_ops + 1) for _ in range(problem.num_levels)]

    def add(self, lv: int, t: int, lo: int, hi: int) -> None:
        row, size = self.occ[lv], self.problem.tensor_bytes[t]
        for p in range(max(lo, 0), min(hi, len(row))):
            row[p] += size

    def fits(self, levels, t: int, p: int) -> bool:
        """Whether tensor ``t`` fits at point ``p`` of every level in ``levels`` too."""
        size, cap = self.problem.tensor_bytes[t], self.problem.capacity_bytes
        return all(self.occ[lv][p] + size <= cap[lv] for lv in levels)

    def add_residency(self, level, kept) -> None:
        """Accesses away from home, kept gaps, and the home copies of inputs and of tensors
        written at home."""
        problem, end = self.problem, 2 * self.problem.num_ops + 1
        for t in range(problem.num_tensors):
            acc, home = problem.accesses(t), problem.home(t)
            if not problem.is_real(acc[0]) or level[t][0] == home:
                self.add(home, t, 2 * acc[0] + 1 if problem.is_real(acc[0]) else 0, end)
            for j, a in enumerate(acc):
                if problem.is_real(a) and level[t][j] != home:
                    self.add(level[t][j], t, 2 * a + 1, 2 * a + 2)
                if j and kept[t][j]:
                    self.add(level[t][j], t, 2 * acc[j - 1] + 2, 2 * a + 1)


def _hold_evictions(problem: HierarchyProblem, occ: _Occupancy, evictions: dict, prefetches, level) -> None:
    """Lay each eviction out from its gap's start to its release (source and middle levels),
    one op longer where that fits, leaving room for the fetches (counted first); the home
    copy from the eviction on."""
    acc = [problem.accesses(t) for t in range(problem.num_tensors)]
    refetched = set(prefetches)
    for t, j in prefetches:  # every fetch occupies at least the gap right before its consumer
        for lv in problem.route(problem.home(t), level[t][j])[1:]:
            occ.add(lv, t, 2 * acc[t][j], 2 * acc[t][j] + 1)
    end = 2 * problem.num_ops + 1
    order = sorted(evictions, key=lambda t: (acc[t][evictions[t][0] - 1], t))
    # Every eviction's own span before any is held longer: a hold checked against fewer
    # pieces could overflow once a later eviction's span is added.
    for t in order:
        g, r, src = evictions[t]
        route = problem.route(src, problem.home(t))
        lo = 2 * acc[t][g - 1] + 2
        for lv in route[:-1]:
            occ.add(lv, t, lo, 2 * r + 1)
        occ.add(route[-1], t, lo, end)
    for t in order:
        g, r, src = evictions[t]
        held = problem.route(src, problem.home(t))[:-1]
        last = acc[t][g] - 1 if (t, g) in refetched else acc[t][g]
        if r < last and all(occ.fits(held, t, p) for p in (2 * r + 1, 2 * r + 2) if p < end):
            for lv in held:
                occ.add(lv, t, 2 * r + 1, 2 * r + 3)
            evictions[t][1] = r + 1


def _prefetch_triggers(problem: HierarchyProblem, occ: _Occupancy, evictions: dict, prefetches, level,
                       prefetch_window_ops: int | None) -> dict:
    """Each fetch's trigger op: as early as every level on its route has room (after its
    eviction in the same gap, within the window), earliest consumer first."""
    acc = [problem.accesses(t) for t in range(problem.num_tensors)]
    triggers = {}
    for t, j in sorted(prefetches, key=lambda x: (acc[x[0]][x[1]], x[0])):
        hi, lo = acc[t][j], acc[t][j - 1]
        if t in evictions and evictions[t][0] == j:
            lo = max(lo, evictions[t][1])
        if prefetch_window_ops is not None:
            lo = max(lo, hi - prefetch_window_ops)
        held = problem.route(problem.home(t), level[t][j])[1:]
        k = hi - 1
        while k > lo and occ.fits(held, t, 2 * k) and occ.fits(held, t, 2 * k + 1):
            k -= 1
        triggers[(t, j)] = k
        for lv in held:  # the gap right before the consumer is counted already
            occ.add(lv, t, 2 * k + 2, 2 * hi)
    return triggers


def _result(problem: HierarchyProblem, plan: Callable[[HierarchyProblem], HierarchySolution | None],
            name: str) -> SolveResult:
    """``plan(problem)`` as a solver result, its wall time included."""
    t0 = time.perf_counter()
    s = plan(problem)
    if s is None:
        return failure_result(Status.UNKNOWN, name, time.perf_counter() - t0)
    return SolveResult(Status.FEASIBLE, s.makespan_cycles, None, s, time.perf_counter() - t0, name,
                       hierarchy_metrics(problem, s).as_dict())


class AllHomeHierarchySolver(Accepting):
    """Every access at its tensor's home (the everything-in-main baseline).

    Examples
    --------
    >>> p = HierarchyProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> AllHomeHierarchySolver().solve(p).objective
    5
    """

    name = "all-home"
    problem_type = HierarchyProblem

    def solve(self, problem: HierarchyProblem, options: SolveOptions = SolveOptions()
              ) -> SolveResult[HierarchySolution]:
        if problem.splits:
            return solve_each_split(problem, lambda q, _: self.solve(q, options), self.name)
        return _result(problem, plan_hierarchy_all_home, self.name)


class GreedyHierarchySolver(Accepting):
    """Belady per level with earliest-possible fetches along each route; the best of the plain
    and cost-aware greedy and everything at home (:func:`plan_hierarchy_best`).

    Examples
    --------
    >>> p = HierarchyProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> GreedyHierarchySolver().solve(p).objective  # both accesses in level 0: 3 + 1
    4
    """

    name = "greedy"
    problem_type = HierarchyProblem

    def solve(self, problem: HierarchyProblem, options: SolveOptions = SolveOptions()
              ) -> SolveResult[HierarchySolution]:
        if problem.splits:
            return solve_each_split(problem, lambda q, _: self.solve(q, options), self.name)
        return _result(problem, plan_hierarchy_best, self.name)
