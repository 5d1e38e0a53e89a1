"""Baselines for level assignment: everything in the slow level, and a Belady-like greedy.

* :class:`AllSlowLevelSolver` ("all-in-hbm"): every op reads and writes the slow level;
  no DMAs. Gives up (UNKNOWN) when an op is fast-only.
* :class:`GreedyLevelSolver` ("greedy", in the manner of XLA's memory-space assignment
  and TFLite's arena planner): walk the ops in order keeping every tensor in fast memory
  while it fits; when an op's point or the gap before it would overflow, drop the
  resident tensor whose next use is farthest (Belady), and failing that read the op's
  largest operand from the slow level. Then schedule DMAs: each eviction's release is
  pushed one op later when capacity allows (so it overlaps that op), and each prefetch
  (earliest consumer first) is triggered as early as capacity allows. Times come from
  :func:`~solvers.memory.levels.validate.replay_levels` with the DMA queue ordered by
  release op. With split groups, every factor vector is tried and the best kept.

Heuristics: FEASIBLE with ``bound=None``, or UNKNOWN when they find no plan.
"""

from __future__ import annotations

import time

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.memory.levels.problem import LevelProblem, LevelSolution, Transfer, TransferKind
from solvers.memory.levels.split import expand_splits, split_factor_choices
from solvers.memory.levels.validate import level_metrics, replay_levels

__all__ = ["retime", "plan_all_slow", "plan_greedy", "without_dmas_of", "fewer_dmas", "FEWER_DMAS_REPLAYED_OPS",
           "AllSlowLevelSolver", "GreedyLevelSolver"]


def retime(problem: LevelProblem, solution: LevelSolution, separate: bool = False) -> LevelSolution:
    """The same decisions with the replayed (as-soon-as-possible) times (``separate``: as if
    the bandwidth were not shared, see :func:`~solvers.memory.levels.validate.replay_levels`).

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> s = plan_greedy(p)
    >>> retime(p, s) == s
    True
    """
    r = replay_levels(problem, solution, separate=separate)
    transfers = tuple(Transfer(tr.kind, tr.tensor, tr.gap, tr.trigger_op, tr.release_op, s, tr.duration_cycles)
                      for tr, s in zip(solution.transfers, r.transfer_start))
    return LevelSolution(solution.in_fast, solution.kept, transfers, r.op_start, r.op_duration,
                         solution.split_factors)


def _queue_order(tr: Transfer) -> tuple:
    return (tr.release_op, tr.trigger_op, tr.kind is TransferKind.PREFETCH, tr.tensor, tr.gap)


def plan_all_slow(problem: LevelProblem) -> LevelSolution | None:
    """Every access in the slow level (None when an op is fast-only). Unsplit problems only.

    Examples
    --------
    >>> p = LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1))
    >>> plan_all_slow(p).makespan_cycles  # op 0: max(3, 8/1); op 1: max(1, 8/1)
    16
    """
    if problem.fast_only_ops:
        return None
    rows = tuple(tuple(False for _ in problem.accesses(t)) for t in range(problem.num_tensors))
    return retime(problem, LevelSolution(rows, rows, (), (0,) * problem.num_ops, (0,) * problem.num_ops))


def plan_greedy(problem: LevelProblem, prefetch_window_ops: int | None = None,
                balance_dma: bool = False, spread: bool = False) -> LevelSolution | None:
    """The Belady-like greedy plan for an unsplit problem (None when it finds none).

    ``prefetch_window_ops`` limits how many ops before its consumer a prefetch may be
    triggered (None: no limit). ``balance_dma`` (for several streams): after the residency is
    decided, single-use prefetched reads become slow reads while that lowers the larger of
    the DMA engine's load and the busiest stream's (:func:`_balance_dma_load`); with ``spread``,
    those reads are spread evenly over the op order instead of the earliest first (so the
    engine's remaining prefetches are spread too, not left to the end).

    Examples
    --------
    Weight 0 (8 bytes) prefetched at program start, then op 0 reads it from fast memory:

    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> s = plan_greedy(p)
    >>> s.in_fast, [(t.kind.value, t.trigger_op, t.start_cycle) for t in s.transfers], s.makespan_cycles
    (((False, True),), [('prefetch', -1, 0)], 12)
    """
    residency = _GreedyResidency(problem)
    for i, row in enumerate(problem.op_accesses()):
        slow = residency.make_room(i, row)
        if slow is None:
            return None
        residency.record(i, row, slow)
    if balance_dma:
        _balance_dma_load(problem, residency, spread)
    # Phase B: DMA windows on the point axis, within the fast capacity.
    acc, evictions, prefetches = residency.acc, residency.evictions, residency.prefetches
    occ = _FastOccupancy(problem)
    occ.add_residency(residency.in_fast, residency.kept)
    _hold_evictions(problem, occ, evictions, prefetches)
    triggers = _prefetch_triggers(problem, occ, evictions, prefetches, prefetch_window_ops)
    transfers = [Transfer(TransferKind.EVICT, t, g, acc[t][g - 1], r, 0, problem.dma_cycles(t))
                 for t, (g, r) in evictions.items()]
    transfers += [Transfer(TransferKind.PREFETCH, t, j, k, acc[t][j], 0, problem.dma_cycles(t))
                  for (t, j), k in triggers.items()]
    transfers.sort(key=_queue_order)
    n = problem.num_ops
    draft = LevelSolution(tuple(map(tuple, residency.in_fast)), tuple(map(tuple, residency.kept)),
                          tuple(transfers), (0,) * n, (0,) * n)
    if problem.shared_bandwidth:  # the draft has no times: order the shared replay by the separate one's
        draft = retime(problem, draft, separate=True)
    return retime(problem, draft)


FEWER_DMAS_REPLAYED_OPS = 4096  # fewer_dmas's default work: replays x ops


def without_dmas_of(problem: LevelProblem, solution: LevelSolution, tensors) -> LevelSolution | None:
    """``solution`` with every access of ``tensors`` in the slow level, so none of them is
    moved by a DMA (None when one of them is read or written by a fast-only op). Re-timed in
    the solution's own start order: dropping DMAs and fast pieces only removes waits, and a
    tensor wholly in the slow level is in no capacity or memory-order check.

    Examples
    --------
    A weight prefetched for op 0, read in place instead (8 cycles of 1 B/cycle, not 8 + 2):

    >>> p = LevelProblem((2,), ((0,),), ((),), (8,), (8, 99), (4, 1), shared_bandwidth=True)
    >>> s = plan_greedy(p)
    >>> s.makespan_cycles, without_dmas_of(p, s, {0}).makespan_cycles, without_dmas_of(p, s, {0}).transfers
    (10, 8, ())
    """
    tensors = set(tensors)
    fast_only = set(problem.fast_only_ops)
    if any(a in fast_only for t in tensors for a in problem.accesses(t)):
        return None
    in_fast = tuple(tuple(False for _ in row) if t in tensors else row for t, row in enumerate(solution.in_fast))
    kept = tuple(tuple(False for _ in row) if t in tensors else row for t, row in enumerate(solution.kept))
    transfers = tuple(tr for tr in solution.transfers if tr.tensor not in tensors)
    return retime(problem, LevelSolution(in_fast, kept, transfers, solution.op_start, solution.op_duration,
                                         solution.split_factors))


def fewer_dmas(problem: LevelProblem, solution: LevelSolution, max_replays: int | None = None) -> LevelSolution:
    """Under shared bandwidth, ``solution`` with the DMAs that only cost time dropped: first
    every moved tensor read and written in place at once, then one tensor at a time (in
    tensor order, on the best so far), each kept when the replayed makespan is strictly
    shorter; at most ``max_replays`` replays (counted, so deterministic; default
    :data:`FEWER_DMAS_REPLAYED_OPS` replayed ops in all, at least 8 and at most 64 replays: a
    300-op replay under sharing takes about 25 ms). Never worse than ``solution``.

    Why: a DMA from the slow level holds all of it (docs/memory.md, "Shared bandwidth"), so it
    runs beside an op only when that op reads the fast level alone; a weight read once is then
    better read in place (the same slow-level time, inside the op) than prefetched, which the
    Belady greedy, which keeps whatever fits, never tries.

    Examples
    --------
    Op 0 reads weight 0 (8 B, slow 1 B/cycle) and writes tensor 1, which op 1 reads; the
    greedy prefetches the weight (8 cycles, holding all of the slow level) and op 0 waits for
    it, then reads it and writes tensor 1 in the fast level (2 + 1): 8 + 3 + 1 = 12. Reading it
    in place, op 0 takes 8 + 1: 9 + 1 = 10:

    >>> p = LevelProblem((2, 1), ((0,), (1,)), ((1,), ()), (8, 4), (64, 99), (4, 1), shared_bandwidth=True)
    >>> plan_greedy(p).makespan_cycles, fewer_dmas(p, plan_greedy(p)).makespan_cycles
    (12, 10)
    """
    if max_replays is None:
        max_replays = min(64, max(8, FEWER_DMAS_REPLAYED_OPS // max(1, problem.num_ops)))
    moved = sorted({tr.tensor for tr in solution.transfers})
    best, replays = solution, 0
    for group in ([moved] if len(moved) > 1 else []) + [[t] for t in moved]:
        if replays >= max_replays:
            break
        if not any(tr.tensor in group for tr in best.transfers):
            continue
        replays += 1
        found = without_dmas_of(problem, best, group)
        if found is not None and found.makespan_cycles < best.makespan_cycles:
            best = found
    return best


def _balance_dma_load(problem: LevelProblem, residency: "_GreedyResidency", spread: bool = False) -> None:
    """Turn prefetched reads into slow reads while that lowers ``max(DMA load, busiest stream)``.

    Belady keeps every access fast that fits, so on a memory-bound model every weight crosses
    the one DMA engine while the streams wait; reading some slow spreads the slow traffic over
    the streams (with ``bandwidth: separate`` they do not share it). Candidates: prefetched
    accesses of non-fast-only ops whose copy serves that access only (the next gap is not
    kept); each step takes the one that lowers the load bound most (ties: earliest; with
    ``spread``, in a low-discrepancy order of the candidates, so equal ones are taken evenly
    over the op order).
    """
    acc, in_fast, kept = residency.acc, residency.in_fast, residency.kept
    size = problem.tensor_bytes
    n = problem.num_ops
    fb, sb = [0] * n, [0] * n
    for t in range(problem.num_tensors):
        for j, a in enumerate(acc[t]):
            if problem.is_real(a):
                if in_fast[t][j]:
                    fb[a] += size[t]
                else:
                    sb[a] += size[t]
    dur = [problem.op_cycles(i, fb[i], sb[i]) for i in range(n)]
    load: dict[int, int] = {}
    for i in range(n):
        load[problem.stream_of(i)] = load.get(problem.stream_of(i), 0) + dur[i]
    dma = sum(problem.dma_cycles(t) for t, _ in residency.prefetches)
    dma += sum(problem.dma_cycles(t) for t in residency.evictions)
    fast_only = set(problem.fast_only_ops)
    candidates = {(t, j) for t, j in residency.prefetches if size[t] and acc[t][j] not in fast_only
                  and not (j + 1 < len(acc[t]) and kept[t][j + 1])}
    by_consumer = sorted(candidates, key=lambda x: (acc[x[0]][x[1]], x))
    # Golden-ratio (Weyl) order of the candidates' ranks: every prefix is spread evenly.
    rank = {x: ((r * 2654435769) % 2**32 if spread else 0, r) for r, x in enumerate(by_consumer)}
    while candidates:
        current = max(dma, *load.values())
        best = None
        for t, j in sorted(candidates, key=rank.__getitem__):
            a = acc[t][j]
            longer = problem.op_cycles(a, fb[a] - size[t], sb[a] + size[t])
            s = problem.stream_of(a)
            after = max(dma - problem.dma_cycles(t), load[s] + longer - dur[a],
                        *(v for k, v in load.items() if k != s))
            if after < current and (best is None or after < best[0]):
                best = (after, t, j, longer)
        if best is None:
            return
        _, t, j, longer = best
        a = acc[t][j]
        candidates.discard((t, j))
        residency.prefetches.remove((t, j))
        in_fast[t][j] = False
        load[problem.stream_of(a)] += longer - dur[a]
        dur[a] = longer
        fb[a] -= size[t]
        sb[a] += size[t]
        dma -= problem.dma_cycles(t)


class _GreedyResidency:
    """Phase A of :func:`plan_greedy`: which accesses are fast, op by op, evicting as Belady does."""

    def __init__(self, problem: LevelProblem) -> None:
        self.problem = problem
        self.cap = problem.capacity_bytes[0]
        self.size = problem.tensor_bytes
        self.acc = [problem.accesses(t) for t in range(problem.num_tensors)]
        self.in_fast = [[False] * len(a) for a in self.acc]
        self.kept = [[False] * len(a) for a in self.acc]
        self.fast_only = set(problem.fast_only_ops)
        self.carried: dict[int, int] = {}  # tensor -> index of its last fast access (copy held onward)
        self.orig: set[int] = set()  # tensors whose fast copy is the producer's, not yet saved
        self.evictions: dict[int, list[int]] = {}  # tensor -> [gap, release op]
        self.prefetches: list[tuple[int, int]] = []  # (tensor, gap)

    def cut(self, t: int) -> None:
        """Stop carrying ``t`` in fast memory (saving the producer's copy to slow first)."""
        jl = self.carried.pop(t)
        if t in self.orig:
            self.orig.discard(t)
            self.evictions[t] = [jl + 1, self.acc[t][jl] + 1]

    def make_room(self, i: int, row) -> set[int] | None:
        """The tensors op ``i`` reads slow so that the op and the gap before it fit the fast
        capacity (dropping idle carried tensors first); None when nothing fits."""
        size, carried, cap = self.size, self.carried, self.cap
        touched = {t: j for t, j in row}
        slow = {t for t, _ in row if size[t] == 0}
        while True:
            fast = [t for t, _ in row if t not in slow]
            hits = [t for t in fast if t in carried]
            idle = [t for t in carried if t not in touched]
            fetch = [t for t in fast if t not in carried and touched[t] > 0]
            evicting = sum(size[t] for t, (g, r) in self.evictions.items() if r == i)
            at_op = sum(size[t] for t in fast) + sum(size[t] for t in idle)
            at_gap = sum(size[t] for t in carried) + sum(size[t] for t in fetch) + evicting
            if at_op <= cap and at_gap <= cap:
                return slow
            if idle:  # Belady: drop the resident tensor used farthest in the future
                victim = max(idle, key=lambda t: (self.acc[t][carried[t] + 1], size[t], -t))
                self.cut(victim)
                continue
            if i in self.fast_only:
                return None
            movable = fetch or [t for t in fast if touched[t] == 0] or hits
            if not movable:
                return None
            victim = max(movable, key=lambda t: (size[t], -t))
            if victim in carried:
                self.cut(victim)
            slow.add(victim)

    def record(self, i: int, row, slow: set[int]) -> None:
        """Op ``i``'s accesses: fast unless in ``slow``, kept or prefetched, carried onward or saved."""
        acc, carried, orig = self.acc, self.carried, self.orig
        for t, j in row:
            f = t not in slow
            self.in_fast[t][j] = f
            if t in carried:
                self.kept[t][j] = True
                del carried[t]
            elif f and j > 0:
                self.prefetches.append((t, j))
            if t in slow and t in carried:
                self.cut(t)
            if f:
                if j == 0:
                    orig.add(t)
                if j + 1 < len(acc[t]) and self.problem.is_real(acc[t][j + 1]):
                    carried[t] = j
                elif j + 1 < len(acc[t]):  # next is the live-out end: save to slow
                    if t in orig:
                        orig.discard(t)
                        self.evictions[t] = [j + 1, i + 1]
                else:
                    orig.discard(t)


class _FastOccupancy:
    """Fast bytes at every point ``0..2*num_ops`` as phase B of :func:`plan_greedy` lays DMAs out."""

    def __init__(self, problem: LevelProblem) -> None:
        self.problem = problem
        self.occ = [0] * (2 * problem.num_ops + 1)

    def add(self, t: int, lo: int, hi: int) -> None:
        """Tensor ``t`` over the points ``[lo, hi)``."""
        occ, size = self.occ, self.problem.tensor_bytes[t]
        for p in range(lo, min(hi, len(occ))):
            occ[p] += size

    def fits(self, t: int, p: int) -> bool:
        """Whether tensor ``t`` fits at point ``p`` too."""
        return self.occ[p] + self.problem.tensor_bytes[t] <= self.problem.capacity_bytes[0]

    def add_residency(self, in_fast: list[list[bool]], kept: list[list[bool]]) -> None:
        """The fast accesses and the kept gaps."""
        problem = self.problem
        for t in range(problem.num_tensors):
            acc = problem.accesses(t)
            for j, a in enumerate(acc):
                if problem.is_real(a) and in_fast[t][j]:
                    self.add(t, 2 * a + 1, 2 * a + 2)
                if j and kept[t][j]:
                    self.add(t, 2 * acc[j - 1] + 2, 2 * a + 1)


def _hold_evictions(problem: LevelProblem, occ: _FastOccupancy, evictions: dict[int, list[int]],
                    prefetches: list[tuple[int, int]]) -> None:
    """Lay each eviction out from its gap's start to its release, one op longer where that fits
    (so its DMA overlaps an op), leaving room for the prefetches (counted first)."""
    acc = [problem.accesses(t) for t in range(problem.num_tensors)]
    refetched = set(prefetches)
    # A prefetch occupies at least the gap right before its consumer: count that first, so
    # no eviction below is held into a gap a prefetch must land in.
    for t, j in prefetches:
        occ.add(t, 2 * acc[t][j], 2 * acc[t][j] + 1)
    order = sorted(evictions, key=lambda t: (acc[t][evictions[t][0] - 1], t))
    # Every eviction's own span before any is held longer: a hold checked against fewer
    # pieces could overflow once a later eviction's span is added.
    for t in order:
        g, r = evictions[t]
        occ.add(t, 2 * acc[t][g - 1] + 2, 2 * r + 1)
    for t in order:
        g, r = evictions[t]
        # A prefetch in the same gap is triggered at or after the release: keep one op for it.
        last = acc[t][g] - 1 if (t, g) in refetched else acc[t][g]
        if r < last and all(occ.fits(t, p) for p in (2 * r + 1, 2 * r + 2) if p < len(occ.occ)):
            occ.add(t, 2 * r + 1, 2 * r + 3)
            evictions[t][1] = r + 1


def _prefetch_triggers(problem: LevelProblem, occ: _FastOccupancy, evictions: dict[int, list[int]],
                       prefetches: list[tuple[int, int]], prefetch_window_ops: int | None) -> dict:
    """Each prefetch's trigger op: as early as fits (after its eviction in the same gap, within
    the window), earliest consumer first; its DMA is laid out from there."""
    acc = [problem.accesses(t) for t in range(problem.num_tensors)]
    triggers = {}
    for t, j in sorted(prefetches, key=lambda x: (acc[x[0]][x[1]], x[0])):
        hi = acc[t][j]
        lo = acc[t][j - 1]
        if t in evictions and evictions[t][0] == j:
            lo = max(lo, evictions[t][1])
        k = hi - 1
        if prefetch_window_ops is not None:
            lo = max(lo, hi - prefetch_window_ops)
        while k > lo and occ.fits(t, 2 * k) and occ.fits(t, 2 * k + 1):
            k -= 1
        triggers[(t, j)] = k
        occ.add(t, 2 * k + 2, 2 * hi)  # the gap right before the consumer is counted already
    return triggers


def _best_over_splits(problem: LevelProblem, plan, name: str, t0: float,
                      choices=None) -> SolveResult[LevelSolution]:
    best = None
    for factors in (choices if choices is not None else (split_factor_choices(problem) if problem.splits else ((),))):
        expanded = expand_splits(problem, factors)[0] if problem.splits else problem
        s = plan(expanded)
        if s is None:
            continue
        s = LevelSolution(s.in_fast, s.kept, s.transfers, s.op_start, s.op_duration, tuple(factors))
        if best is None or s.makespan_cycles < best.makespan_cycles:
            best = s
    if best is None:
        return failure_result(Status.UNKNOWN, name, time.perf_counter() - t0)
    return SolveResult(Status.FEASIBLE, best.makespan_cycles, None, best, time.perf_counter() - t0, name,
                       level_metrics(problem, best).as_dict())


class AllSlowLevelSolver(Accepting):
    """Everything in the slow level (the everything-in-HBM baseline).

    With split groups it uses the smallest factor of each group.

    Examples
    --------
    >>> p = LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1))
    >>> AllSlowLevelSolver().solve(p).objective
    16
    """

    name = "all-in-hbm"
    problem_type = LevelProblem

    def solve(self, problem: LevelProblem, options: SolveOptions = SolveOptions()) -> SolveResult[LevelSolution]:
        choice = (tuple(min(g.factors) for g in problem.splits),) if problem.splits else None
        return _best_over_splits(problem, plan_all_slow, self.name, time.perf_counter(), choice)


class GreedyLevelSolver(Accepting):
    """Belady-like residency with earliest-possible prefetch.

    Examples
    --------
    Op 0 writes 8 bytes that op 1 reads; fast memory (8 bytes, 4 B/cycle) holds it, so
    op 0 takes max(3, 8/4) = 3 and op 1 max(1, 8/4) = 2: 5 in all.

    >>> p = LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1))
    >>> GreedyLevelSolver().solve(p).objective
    5
    """

    name = "greedy"
    problem_type = LevelProblem

    def solve(self, problem: LevelProblem, options: SolveOptions = SolveOptions()) -> SolveResult[LevelSolution]:
        return _best_over_splits(problem, plan_greedy, self.name, time.perf_counter())
