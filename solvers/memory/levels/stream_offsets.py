"""Several streams: fast offsets packed for the cycles a plan runs, and plans timed by them.

The level solvers plan several streams under the point-axis memory order (an allocation
waits for every free before it on the point axis, docs/memory.md, "Several compute
streams"); the lowered program only needs the waits between pieces that overlap in address
(:func:`~solvers.memory.levels.validate.memory_waits` with offsets). How much the streams
then overlap depends on the offsets: two pieces of different streams that share an address
make one stream wait for the other. This module chooses the offsets for that:

* :func:`pack_stream_offsets` packs the fast pieces first fit in point order, keeping apart
  every two pieces that overlap on the point axis (required: that is what makes the
  by-address order sound) and, where the level has room, every two that are live together in
  given cycles (the plan's times without memory-order waits), so those need not wait;
* :func:`retime_with_offsets` times a plan by such offsets (a few rounds: the times of one
  packing guide the next) and returns it carrying them (``LevelSolution.fast_offsets``), its
  times those of the by-address order, which
  :func:`~solvers.memory.levels.validate.validate_levels` checks;
* :func:`plan_streams_by_address` re-times the incumbent and greedy plans made for a smaller
  fast level (a plan that keeps less resident leaves room to keep the streams' pieces apart),
  and returns the shortest only when it is strictly shorter than the incumbent timed by the
  incumbent's own offsets.

Every returned plan is validated; the waits it assumes are exactly those the lowered program
has for its offsets, so the replay of the binaries times it to the cycle.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from solvers.dag import WaitDeadlock
from solvers.memory.levels.greedy import plan_greedy
from solvers.memory.levels.problem import LevelProblem, LevelSolution, Transfer
from solvers.memory.levels.validate import (Replay, fast_piece_events, fast_pieces, replay_levels,
                                            resolve_problem, validate_levels)

__all__ = ["pack_stream_offsets", "retime_with_offsets", "plan_streams_by_address", "timed_by", "unsplit",
           "replay_unless_deadlock", "pack_tighter",
           "greedy_by_size_conflict_offsets"]

# Greedy plans are made for the fast level divided by each of these (1: the level itself).
CAPACITY_DIVISORS = (1, 2, 3, 4)
# Packing rounds per plan: each packs for the times of the previous round.
RETIME_ROUNDS = 2
# Above this many ops no candidates are tried: the first-fit packing compares every two pieces
# (0.94 s of CPU for the 13 candidates of the 301-op two-branch benchmark).
MAX_OPS = 1000


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def pack_stream_offsets(problem: LevelProblem, solution: LevelSolution,
                        live_cycles: Sequence[tuple[int, int]] | None = None,
                        alignment_bytes: int = 1) -> tuple[int, ...] | None:
    """Fast offsets, one per :func:`fast_pieces` entry (zero-byte ones at 0), or None if they
    do not fit the fast level.

    First fit in point order (lowest address, multiples of ``alignment_bytes``, sizes rounded
    up to it): a piece is kept apart from every placed piece it overlaps on the point axis, and
    also from every one whose ``live_cycles`` interval (``(alloc, free)`` per piece) meets its
    own; where that does not fit, only the former.

    Examples
    --------
    Op 0 (stream 0) reads weight 0 fast; op 1 (stream 1) writes tensor 1 fast. They do not
    overlap on the point axis, but are live together in cycles ``[0, 12)`` and ``[8, 12)``:

    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (pf,), (8, 8), (4, 4))
    >>> pack_stream_offsets(p, s), pack_stream_offsets(p, s, [(0, 12), (8, 12)])
    ((0, 0), (0, 8))
    >>> pack_stream_offsets(replace(p, capacity_bytes=(8, 99)), s, [(0, 12), (8, 12)])  # no room: shared
    (0, 0)
    """
    pieces = fast_pieces(problem, solution)
    cap, a = problem.capacity_bytes[0], max(1, alignment_bytes)
    sizes = [_round_up(problem.tensor_bytes[t], a) for t, _, _ in pieces]
    order = sorted((n for n in range(len(pieces)) if sizes[n]), key=lambda n: (pieces[n][1], n))
    offsets = [0] * len(pieces)
    placed: list[int] = []

    def lowest(n: int, apart_in_cycles: bool) -> int | None:
        _, lo, hi = pieces[n]
        busy = sorted((offsets[m], offsets[m] + sizes[m]) for m in placed
                      if (pieces[m][1] < hi and lo < pieces[m][2])
                      or (apart_in_cycles and live_cycles[m][0] < live_cycles[n][1]
                          and live_cycles[n][0] < live_cycles[m][1]))
        at = 0
        for b0, b1 in busy:
            if at + sizes[n] <= b0:
                break
            at = max(at, b1)
        return at if at + sizes[n] <= cap else None

    for n in order:
        at = lowest(n, True) if live_cycles is not None else None
        if at is None:
            at = lowest(n, False)
        if at is None:
            return None
        offsets[n] = at
        placed.append(n)
    return tuple(offsets)


def _live_cycles(problem: LevelProblem, solution: LevelSolution, times: Replay) -> list[tuple[int, int]]:
    """Per fast piece, the cycles from its allocation to its free under ``times``."""
    pieces = fast_pieces(problem, solution)
    out = [(0, 0)] * len(pieces)
    for _, _, alloc, free, n in fast_piece_events(problem, solution):
        start = times.op_start[alloc[1]] if alloc[0] == "op" else times.transfer_start[alloc[1]]
        if free[0] == "op":
            end = times.op_start[free[1]] + times.op_duration[free[1]]
        else:
            end = times.transfer_start[free[1]] + solution.transfers[free[1]].duration_cycles
        out[n] = (start, end)
    return out


def unsplit(solution: LevelSolution) -> LevelSolution:
    """``solution`` as a plan of its split expansion (no split factors; the same decisions).

    Examples
    --------
    >>> unsplit(LevelSolution(((True,),), ((False,),), (), (0,), (4,), split_factors=(2,))).split_factors
    ()
    """
    return replace(solution, split_factors=()) if solution.split_factors else solution


def replay_unless_deadlock(problem: LevelProblem, solution: LevelSolution,
                           offsets: Sequence[int]) -> Replay | None:
    """:func:`replay_levels` with the fast ``offsets``, or None when its waits deadlock (a plan
    whose offsets make two streams wait on each other is no candidate: :class:`~solvers.dag.WaitDeadlock`).
    Any other error is a bug and is raised.

    Examples
    --------
    >>> p = LevelProblem((4,), ((),), ((),), (), (8, 99), (4, 1))
    >>> replay_unless_deadlock(p, LevelSolution((), (), (), (0,), (4,)), ()).makespan_cycles
    4
    """
    try:
        return replay_levels(problem, solution, fast_offsets=offsets)
    except WaitDeadlock:
        return None


def timed_by(solution: LevelSolution, times: Replay, offsets: tuple[int, ...]) -> LevelSolution:
    """``solution`` with the times of ``times`` (a replay of it) and carrying ``offsets``.

    Examples
    --------
    >>> s = LevelSolution(((True,),), ((False,),), (), (5,), (4,))
    >>> timed_by(s, Replay((0,), (4,), (), 4), (0,)).op_start
    (0,)
    """
    transfers = tuple(Transfer(tr.kind, tr.tensor, tr.gap, tr.trigger_op, tr.release_op, s, tr.duration_cycles)
                      for tr, s in zip(solution.transfers, times.transfer_start))
    return replace(solution, transfers=transfers, op_start=times.op_start, op_duration=times.op_duration,
                   fast_offsets=offsets)


def retime_with_offsets(problem: LevelProblem, solution: LevelSolution, alignment_bytes: int = 1,
                        rounds: int = RETIME_ROUNDS) -> LevelSolution | None:
    """The plan's decisions timed by the by-address memory order for offsets packed to keep its
    streams apart (:func:`pack_stream_offsets`), carrying those offsets; the shortest of
    ``rounds`` packings (the first for the times without memory-order waits, each next for the
    times of the previous). None with one stream, when the offsets do not fit or the waits
    deadlock.

    Examples
    --------
    Op 1 (stream 1) need not wait for op 0 (stream 0) to free weight 0: there is room to put
    tensor 1 beside it, so both start at once (under the point-axis order op 1 starts at 12):

    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (pf,), (8, 12), (4, 4))
    >>> r = retime_with_offsets(p, s)
    >>> r.op_start, r.fast_offsets, r.makespan_cycles
    ((8, 0), (0, 8), 12)
    """
    expanded = resolve_problem(problem, solution)
    if not expanded.multi_stream:
        return None
    flat = unsplit(solution)  # the expanded problem has no split groups: its plans carry no factors
    n_pieces = len(fast_pieces(expanded, flat))
    apart = tuple(range(0, n_pieces * (sum(expanded.tensor_bytes) + 1), sum(expanded.tensor_bytes) + 1))
    times = replay_unless_deadlock(expanded, flat, apart)  # the times without memory-order waits
    if times is None:
        return None
    best = None
    for _ in range(rounds):
        offsets = pack_stream_offsets(expanded, flat, _live_cycles(expanded, flat, times), alignment_bytes)
        if offsets is None:
            break
        times = replay_unless_deadlock(expanded, flat, offsets)
        if times is None:
            break
        if best is None or times.makespan_cycles < best.makespan_cycles:
            best = timed_by(solution, times, offsets)
    return best


def plan_streams_by_address(problem: LevelProblem, incumbent: LevelSolution,
                            incumbent_offsets: Sequence[int], alignment_bytes: int = 1,
                            divisors: Sequence[int] = CAPACITY_DIVISORS) -> LevelSolution | None:
    """A several-stream plan timed by the by-address memory order that is strictly shorter than
    the incumbent timed by its own ``incumbent_offsets``, or None.

    Candidates: the incumbent's decisions, and the greedy and DMA-balanced greedy plans
    (:func:`~solvers.memory.levels.greedy.plan_greedy`) for the fast level divided by each of
    ``divisors``, each re-timed by :func:`retime_with_offsets`; the shortest one wins
    (the earliest on ties); a candidate that fails validation raises ``ValueError`` (a bug, see
    :func:`_require_valid`). Not for shared bandwidth (whose replay also orders by the
    solution's times) nor above ``MAX_OPS`` ops: None.

    Examples
    --------
    Two streams of one op each, each reading a weight: the greedy prefetches both, one after the
    other on the one DMA engine (16 cycles each), so the second stream's op starts at 32. The
    greedy for a quarter of the fast level reads both from the slow level instead: 4 cycles
    each, the two streams at once.

    >>> p = LevelProblem((4, 4), ((0,), (1,)), ((), ()), (64, 64), (128, 9999), (64, 16),
    ...                  dma_bytes_per_cycle=4, op_streams=(0, 1))
    >>> s = plan_greedy(p)
    >>> s.makespan_cycles
    36
    >>> better = plan_streams_by_address(p, s, (0, 64))
    >>> better.makespan_cycles, better.op_start, validate_levels(p, better)
    (4, (0, 0), [])
    """
    if problem.shared_bandwidth:
        return None
    expanded = resolve_problem(problem, incumbent)
    if not expanded.multi_stream or expanded.num_ops > MAX_OPS:
        return None
    today = replay_unless_deadlock(expanded, unsplit(incumbent), tuple(incumbent_offsets))
    if today is None:
        return None
    factors = incumbent.split_factors
    plans = [incumbent]
    cap, slow = expanded.capacity_bytes
    for d in divisors:
        smaller = replace(expanded, capacity_bytes=(max(1, cap // d), slow))
        for balance, spread in ((False, False), (True, False), (True, True)):
            plan = plan_greedy(smaller, balance_dma=balance, spread=spread)
            if plan is not None:
                plans.append(replace(plan, split_factors=factors))
    best = None
    for k, plan in enumerate(plans):
        timed = retime_with_offsets(problem, plan, alignment_bytes)
        if timed is None or (best is not None and timed.makespan_cycles >= best.makespan_cycles):
            continue
        _require_valid(problem, timed, k)
        best = timed
    return best if best is not None and best.makespan_cycles < today.makespan_cycles else None


def _require_valid(problem: LevelProblem, timed: LevelSolution, candidate: int) -> None:
    """Raise when a re-timed candidate (0: the incumbent's decisions, then the greedy plans) fails
    :func:`~solvers.memory.levels.validate.validate_levels`: each is a valid plan for a fast level
    no larger than the problem's, packed within it and timed by the replay of its own offsets, so
    a failure is a bug here or in the replay, never a plan to pass over."""
    errors = validate_levels(problem, timed)
    if errors:
        raise ValueError(f"by-address candidate {candidate} (0: the incumbent, then the greedy plans) re-timed by "
                         f"its offsets does not validate: {errors[:3]}")


def pack_tighter(problem: LevelProblem, solution: LevelSolution, alignment_bytes: int = 1) -> LevelSolution | None:
    """``solution`` (a valid unsplit plan timed by its own ``fast_offsets``) with offsets packed
    into a lower fast footprint at the same makespan, or None when the packing is not lower.

    Greedy by size (largest first, then by point) over a conflict graph: two pieces stay apart
    when they overlap on the point axis (required), overlap in the plan's cycles, or are in one
    order on the point axis and the other in cycles. Any two pieces that share addresses are then
    in one order on both axes with the plan's times, so every wait the by-address order adds holds
    at those times already: the replay with the new offsets is never later (it is checked).

    Examples
    --------
    Ops 0 and 1 (stream 0, 4 cycles each) write 8-byte tensors fast that nobody reads (op 2, on
    stream 1, touches nothing): the pieces meet neither on the point axis nor in cycles, so
    offsets 0 and 8 (16 bytes) pack into 8:

    >>> p = LevelProblem((4, 4, 1), ((), (), ()), ((0,), (1,), ()), (8, 8), (16, 99), (4, 1),
    ...                  op_streams=(0, 0, 1), live_out=())
    >>> s = LevelSolution(((True,), (True,)), ((False,), (False,)), (), (0, 4, 0), (4, 4, 1), fast_offsets=(0, 8))
    >>> pack_tighter(p, s).fast_offsets, pack_tighter(p, replace(s, fast_offsets=(0, 0)))
    ((0, 0), None)
    """
    pieces = fast_pieces(problem, solution)
    if not pieces or len(solution.fast_offsets) != len(pieces):
        return None
    peak = max((solution.fast_offsets[n] + problem.tensor_bytes[t] for n, (t, _, _) in enumerate(pieces)
                if problem.tensor_bytes[t]), default=0)
    offsets = greedy_by_size_conflict_offsets(problem, solution, alignment_bytes)
    new_peak = max((offsets[n] + problem.tensor_bytes[t] for n, (t, _, _) in enumerate(pieces)
                    if problem.tensor_bytes[t]), default=0)
    if new_peak >= peak or new_peak > problem.capacity_bytes[0]:
        return None
    retimed = replay_unless_deadlock(problem, solution, tuple(offsets))
    if retimed is None or retimed.makespan_cycles != solution.makespan_cycles:
        return None  # (never later; an earlier one would change the figures the plan was kept by)
    packed = timed_by(solution, retimed, tuple(offsets))
    return packed if not validate_levels(problem, packed) else None


def greedy_by_size_conflict_offsets(problem: LevelProblem, solution: LevelSolution,
                                    alignment_bytes: int = 1) -> list[int]:
    """Fast offsets, one per :func:`fast_pieces` entry, packed greedy by size (largest first,
    then by point; lowest address, sizes rounded up to ``alignment_bytes``) over
    :func:`pack_tighter`'s conflict graph for the timed ``solution``: two pieces stay apart when
    they overlap on the point axis, overlap in the plan's cycles, or are in one order on one axis
    and the other on the other. Not capped by the fast level (a figure may exceed it).

    >>> p = LevelProblem((4, 4, 1), ((), (), ()), ((0,), (1,), ()), (8, 8), (16, 99), (4, 1),
    ...                  op_streams=(0, 0, 1), live_out=())
    >>> s = LevelSolution(((True,), (True,)), ((False,), (False,)), (), (0, 4, 0), (4, 4, 1), fast_offsets=(0, 8))
    >>> greedy_by_size_conflict_offsets(p, s), greedy_by_size_conflict_offsets(p, replace(s, op_start=(0, 0, 0)))
    ([0, 0], [0, 8])
    """
    pieces = fast_pieces(problem, solution)
    times = Replay(solution.op_start, solution.op_duration,
                   tuple(tr.start_cycle for tr in solution.transfers), solution.makespan_cycles)
    cycles = _live_cycles(problem, solution, times)
    a = max(1, alignment_bytes)
    sizes = [_round_up(problem.tensor_bytes[t], a) for t, _, _ in pieces]

    def conflict(m: int, n: int) -> bool:
        (_, lo_m, hi_m), (_, lo_n, hi_n) = pieces[m], pieces[n]
        if lo_m < hi_n and lo_n < hi_m:
            return True
        (c0_m, c1_m), (c0_n, c1_n) = cycles[m], cycles[n]
        if c0_m < c1_n and c0_n < c1_m:
            return True
        return (hi_m <= lo_n) != (c1_m <= c0_n)

    offsets = [0] * len(pieces)
    placed: list[int] = []
    for n in sorted((n for n in range(len(pieces)) if sizes[n]), key=lambda n: (-sizes[n], pieces[n][1], n)):
        busy = sorted((offsets[m], offsets[m] + sizes[m]) for m in placed if conflict(m, n))
        at = 0
        for b0, b1 in busy:
            if at + sizes[n] <= b0:
                break
            at = max(at, b1)
        offsets[n] = at
        placed.append(n)
    return offsets
