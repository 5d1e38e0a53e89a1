"""Independent checker, replay, metrics and bounds for level assignment (no solver).

:func:`validate_levels` checks a solution against the semantics in
:mod:`solvers.memory.levels.problem`; :func:`replay_levels` recomputes the times the way a
lowered program runs them (every op and DMA starts as soon as its waits are satisfied,
DMAs in queue order); :func:`level_metrics` gives the report's figures.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from solvers.dag import WaitDeadlock, list_starts
from solvers.memory.levels.bandwidth import (check_bandwidth, instruction_shares, list_schedule_shared,
                                             replay_shared, slow_traffic_lower_bound)
from solvers.memory.levels.link_holds import add_hold_waits
from solvers.memory.levels.problem import LevelProblem, LevelSolution, TransferKind, cycles_for_bytes
from solvers.memory.levels.split import expand_splits

__all__ = [
    "resolve_problem", "required_transfers", "op_durations", "fast_pieces", "held_fast_pieces", "fast_occupancy",
    "fast_piece_events", "memory_waits",
    "validate_levels", "Replay", "replay_levels", "LevelMetrics", "level_metrics", "op_duration_lower_bounds",
    "makespan_lower_bound",
]


def resolve_problem(problem: LevelProblem, solution: LevelSolution) -> LevelProblem:
    """The problem the solution is over: ``problem`` itself, or its split expansion.

    Examples
    --------
    >>> p = LevelProblem((1,), ((),), ((0,),), (4,), (8, 99), (4, 1))
    >>> resolve_problem(p, LevelSolution(((True,),), ((False,),), (), (0,), (1,))) is p
    True
    """
    if not problem.splits:
        if solution.split_factors:
            raise ValueError("split_factors given for a problem without split groups")
        return problem
    return expand_splits(problem, solution.split_factors)[0]


def required_transfers(problem: LevelProblem, in_fast, kept) -> list[tuple[TransferKind, int, int]]:
    """The ``(kind, tensor, gap)`` of every DMA the residency decisions imply, sorted.

    Examples
    --------
    Tensor 0 is produced fast by op 0, not kept, read fast by op 2: evict, then prefetch.

    >>> p = LevelProblem((1, 1, 1), ((), (), (0,)), ((0,), (), ()), (4,), (8, 99), (4, 1))
    >>> [(k.value, t, j) for k, t, j in required_transfers(p, ((True, True),), ((False, False),))]
    [('evict', 0, 1), ('prefetch', 0, 1)]
    """
    out = []
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        orig = problem.is_real(acc[0]) and bool(in_fast[t][0])
        for j in range(1, len(acc)):
            if kept[t][j]:
                continue
            if orig:
                out.append((TransferKind.EVICT, t, j))
                orig = False
            if in_fast[t][j]:
                out.append((TransferKind.PREFETCH, t, j))
    return sorted(out, key=lambda x: (x[1], x[2], x[0] is TransferKind.PREFETCH))


def op_durations(problem: LevelProblem, in_fast) -> tuple[int, ...]:
    """Each op's roofline duration given where its accesses live.

    Examples
    --------
    Op 0 writes 8 bytes: fast (4 B/cycle) takes 2 cycles, slow (1 B/cycle) 8; compute is 3.

    >>> p = LevelProblem((3,), ((),), ((0,),), (8,), (8, 99), (4, 1))
    >>> op_durations(p, ((True,),)), op_durations(p, ((False,),))
    ((3,), (8,))
    """
    fb = [0] * problem.num_ops
    sb = [0] * problem.num_ops
    for t in range(problem.num_tensors):
        for j, a in enumerate(problem.accesses(t)):
            if problem.is_real(a):
                if in_fast[t][j]:
                    fb[a] += problem.tensor_bytes[t]
                else:
                    sb[a] += problem.tensor_bytes[t]
    return tuple(problem.op_cycles(i, fb[i], sb[i]) for i in range(problem.num_ops))


def fast_pieces(problem: LevelProblem, solution: LevelSolution) -> list[tuple[int, int, int]]:
    """Fast-memory buffers as ``(tensor, first point, end point)``, contiguous pieces merged.

    Examples
    --------
    Produced fast at op 0 (point 1), kept to op 2 (points 2..4), read at op 2 (point 5):

    >>> p = LevelProblem((1, 1, 1), ((), (), (0,)), ((0,), (), ()), (4,), (8, 99), (4, 1))
    >>> fast_pieces(p, LevelSolution(((True, True),), ((False, True),), (), (0, 1, 2), (1, 1, 1)))
    [(0, 1, 6)]
    """
    raw: list[tuple[int, int, int]] = []
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        for j, a in enumerate(acc):
            if problem.is_real(a) and solution.in_fast[t][j]:
                raw.append((t, 2 * a + 1, 2 * a + 2))
            if j and solution.kept[t][j]:
                raw.append((t, 2 * acc[j - 1] + 2, 2 * a + 1))
    for tr in solution.transfers:
        acc = problem.accesses(tr.tensor)
        if tr.kind is TransferKind.PREFETCH:
            raw.append((tr.tensor, 2 * tr.trigger_op + 2, 2 * acc[tr.gap] + 1))
        else:
            raw.append((tr.tensor, 2 * acc[tr.gap - 1] + 2, 2 * tr.release_op + 1))
    raw.sort()
    merged: list[tuple[int, int, int]] = []
    for t, lo, hi in raw:
        if merged and merged[-1][0] == t and merged[-1][2] == lo:
            merged[-1] = (t, merged[-1][1], hi)
        else:
            merged.append((t, lo, hi))
    return merged


def held_fast_pieces(problem: LevelProblem, solution: LevelSolution) -> list[tuple[int, int, int]]:
    """Several streams: :func:`fast_pieces` with pieces held longer on the point axis where the
    fast level has room, so fewer allocations must wait for their frees.

    A piece freed at the end of op a (``hi = 2a+2``) is held, point by point while the point
    occupancy (pieces held so far included) stays within ``capacity_bytes[0]``, up to the
    point of the next op of a's stream (``2a'+1``; the end of the axis if a is its stream's
    last). An allocation before that point then no longer waits for it under the memory order
    (an allocation by a's own stream at or after ``a'`` waits anyway, by the stream's order).
    Pieces freed by an eviction, and every piece with one stream, are as they are. Offsets
    packed over the held pieces (:func:`solvers.memory.arena.fast_offset_problem` with
    ``hold=True``) keep a piece apart in address from the allocations that no longer wait for
    it, which :func:`memory_waits` with the offsets then leaves out.

    Examples
    --------
    Op 0 (stream 0) reads weight 0 fast, freed at its end (point 2); op 1 (stream 1) writes
    tensor 1 fast at point 3. With room for both, weight 0's piece is held to the end of the
    axis (op 0 is its stream's last), past op 1's allocation (and tensor 1's likewise):

    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (pf,), (8, 12), (4, 4))
    >>> fast_pieces(p, s), held_fast_pieces(p, s)
    ([(0, 0, 2), (1, 3, 4)], [(0, 0, 5), (1, 3, 5)])
    >>> held_fast_pieces(replace(p, capacity_bytes=(8, 99)), s)  # no room at op 1: weight 0 still ends first
    [(0, 0, 3), (1, 3, 5)]
    """
    pieces = fast_pieces(problem, solution)
    if not problem.multi_stream:
        return pieces
    n = problem.num_ops
    occ = fast_occupancy(problem, solution)
    cap = problem.capacity_bytes[0]
    after: dict[int, int] = {}
    next_on_stream = [2 * n + 1] * n
    for i in range(n - 1, -1, -1):
        next_on_stream[i] = after.get(problem.stream_of(i), 2 * n + 1)
        after[problem.stream_of(i)] = 2 * i + 1
    held = list(pieces)
    for k in sorted(range(len(pieces)), key=lambda k: (pieces[k][2], pieces[k][1], k)):
        t, lo, hi = pieces[k]
        size = problem.tensor_bytes[t]
        if not size or hi % 2:
            continue
        h = hi
        while h < next_on_stream[hi // 2 - 1] and occ[h] + size <= cap:
            occ[h] += size
            h += 1
        held[k] = (t, lo, h)
    return held


def fast_occupancy(problem: LevelProblem, solution: LevelSolution) -> list[int]:
    """Fast bytes at every point ``0..2*num_ops``.

    Examples
    --------
    >>> p = LevelProblem((1, 1, 1), ((), (), (0,)), ((0,), (), ()), (4,), (8, 99), (4, 1))
    >>> fast_occupancy(p, LevelSolution(((True, True),), ((False, True),), (), (0, 1, 2), (1, 1, 1)))
    [0, 4, 4, 4, 4, 4, 0]
    """
    occ = [0] * (2 * problem.num_ops + 1)
    for t, lo, hi in fast_pieces(problem, solution):
        for p in range(lo, min(hi, len(occ))):
            occ[p] += problem.tensor_bytes[t]
    return occ


def _slow_bytes(problem: LevelProblem, solution: LevelSolution) -> int:
    total = 0
    evicted = {tr.tensor for tr in solution.transfers if tr.kind is TransferKind.EVICT}
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        if not problem.is_real(acc[0]) or not solution.in_fast[t][0] or t in evicted:
            total += problem.tensor_bytes[t]
    return total


def validate_levels(problem: LevelProblem, solution: LevelSolution) -> list[str]:
    """Every violated rule (empty when the solution is valid).

    Examples
    --------
    Weight 0 (8 bytes) is read fast by op 0, so it must be prefetched before op 0 starts:

    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> validate_levels(p, LevelSolution(((False, True),), ((False, False),), (pf,), (8,), (4,)))
    []
    >>> validate_levels(p, LevelSolution(((False, True),), ((False, False),), (pf,), (6,), (4,)))
    ['prefetch of tensor 0 ends at 8 after op 0 starts at 6']
    """
    try:
        problem = resolve_problem(problem, solution)
    except ValueError as e:
        return [str(e)]
    n, nt = problem.num_ops, problem.num_tensors
    if len(solution.in_fast) != nt or len(solution.kept) != nt:
        return [f"expected residency rows for {nt} tensors"]
    if len(solution.op_start) != n or len(solution.op_duration) != n:
        return [f"expected times for {n} ops"]
    errs = _check_residency(problem, solution)
    if errs:
        return errs
    errs = _check_transfer_set(problem, solution)
    if errs:
        return errs
    durations = op_durations(problem, solution.in_fast)
    errs = _check_op_times(problem, solution, durations)
    end = [s + d for s, d in zip(solution.op_start, durations)]
    evict_of = {tr.tensor: tr for tr in solution.transfers if tr.kind is TransferKind.EVICT}
    for tr in solution.transfers:
        errs += _check_transfer(problem, solution, tr, end, evict_of)
    errs += _check_dma_queue(solution)
    errs += _check_capacities(problem, solution)
    if solution.fast_offsets and not errs:
        errs += _check_fast_offsets(problem, solution)
    if problem.multi_stream and not errs:
        errs += (_check_address_order(problem, solution, end) if solution.fast_offsets
                 else _check_memory_order(problem, solution, end))
        for (_, i), (kind, x) in _copy_waits(problem, solution):
            ready = end[x] if kind == "op" else solution.transfers[x].end_cycle
            if solution.op_start[i] < ready:
                what = (f"op {problem.op_name(x)}" if kind == "op"
                        else f"the eviction of {problem.tensor_name(solution.transfers[x].tensor)}")
                errs.append(f"op {problem.op_name(i)} starts at {solution.op_start[i]} before {what} ends at "
                            f"{ready} (one copy's accesses in order; a slow read after its eviction)")
        for (_, q), (_, a) in _producer_waits(problem, solution):
            tr = solution.transfers[q]
            if tr.start_cycle < end[a]:
                errs.append(f"prefetch of {problem.tensor_name(tr.tensor)} starts at {tr.start_cycle} before its "
                            f"producer op {problem.op_name(a)} ends at {end[a]}")
    if problem.shared_bandwidth and not errs:  # shared bandwidth: shares per level (bandwidth.py)
        errs += check_bandwidth(problem, solution)
    return errs


def fast_piece_events(problem: LevelProblem, solution: LevelSolution) -> list:
    """Each fast piece of nonzero size as ``(lo, hi, allocator, freer, n)``, n its index in
    :func:`fast_pieces`: who allocates it
    (``("op", i)``: the producer's start; ``("dma", q)``: its prefetch's start) and who frees it
    (``("op", a)``: that op's end; ``("dma", q)``: its eviction's end), q indexing
    ``solution.transfers`` (the semantics in :mod:`solvers.memory.levels.problem`).

    Examples
    --------
    Weight 0 prefetched (DMA 0) for op 0, freed at op 0's end; tensor 1 written fast by op 1:

    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (pf,), (8, 12), (4, 4))
    >>> fast_piece_events(p, s)
    [(0, 2, ('dma', 0), ('op', 0), 0), (3, 4, ('op', 1), ('op', 1), 1)]
    """
    prefetch_at, evict_at = {}, {}
    for q, tr in enumerate(solution.transfers):
        if tr.kind is TransferKind.PREFETCH:
            prefetch_at[tr.tensor, 2 * tr.trigger_op + 2] = q
        else:
            evict_at[tr.tensor, 2 * tr.release_op + 1] = q
    out = []
    for n, (t, lo, hi) in enumerate(fast_pieces(problem, solution)):
        if not problem.tensor_bytes[t]:
            continue
        alloc = ("op", lo // 2) if lo % 2 else ("dma", prefetch_at[t, lo])
        free = ("op", hi // 2 - 1) if hi % 2 == 0 else ("dma", evict_at[t, hi])
        out.append((lo, hi, alloc, free, n))
    return out


def memory_waits(problem: LevelProblem, solution: LevelSolution,
                 fast_offsets: Sequence[int] | None = None) -> dict[tuple[str, int], set[tuple[str, int]]]:
    """The memory-order waits of a several-stream plan: ``waiter -> {what it waits for}``.

    A waiter (``("op", i)`` before its start, ``("dma", q)`` before its start) waits for the
    end of every op or DMA that frees a fast piece ending on the point axis at or before
    the point where the waiter allocates one (:mod:`solvers.memory.levels.problem`).

    With ``fast_offsets`` (an address per :func:`fast_pieces` entry, zero-byte ones included,
    from offsets packed over the point axis), only the frees of pieces whose address range
    overlaps the allocated piece's: the rest of the rule's waits are not needed. Then at any
    cycle the live pieces are pairwise disjoint in address (two that overlap on the point
    axis were packed apart; of two that do not, the later one waited for the earlier one's
    free if their addresses overlap), so the level's capacity and every buffer's data hold in
    cycles whatever the timing (docs/memory.md, "Several compute streams"). Only
    the last such freeing op of each stream is listed (ends along a stream only grow), and
    every such DMA; then the copy order's waits (one fast copy's accesses in order, a slow
    read after its tensor's eviction). Empty with one stream.

    Examples
    --------
    Op 0 (stream 0) reads weight 0 fast, freed at its end (point 2); op 1 (stream 1) writes
    tensor 1 fast at its start (point 3), so it waits for op 0's end:

    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (pf,), (8, 12), (4, 4))
    >>> memory_waits(p, s)
    {('op', 1): {('op', 0)}}
    """
    if not problem.multi_stream:
        return {}
    events = fast_piece_events(problem, solution)
    frees = sorted((hi, free, n) for _, hi, _, free, n in events)
    pieces = fast_pieces(problem, solution) if fast_offsets is not None else ()

    def apart(a: int, b: int) -> bool:
        lo_a, lo_b = fast_offsets[a], fast_offsets[b]
        return (lo_a + problem.tensor_bytes[pieces[a][0]] <= lo_b or
                lo_b + problem.tensor_bytes[pieces[b][0]] <= lo_a)

    waits: dict[tuple[str, int], set[tuple[str, int]]] = {}
    for lo, _, alloc, _, n in events:
        latest: dict = {}
        chosen = set()
        for hi, free, m in frees:
            if hi > lo:
                break
            if fast_offsets is not None and apart(n, m):
                continue
            if free[0] == "dma":  # every one: a re-timing may run ready DMAs out of queue order
                chosen.add(free)
            elif free[1] > latest.get(problem.stream_of(free[1]), -1):
                latest[problem.stream_of(free[1])] = free[1]
        # an op's own stream frees in order before it
        own = problem.stream_of(alloc[1]) if alloc[0] == "op" else None
        chosen |= {("op", a) for s, a in latest.items() if s != own}
        chosen.discard(alloc)
        if chosen:
            waits.setdefault(alloc, set()).update(chosen)
    for waiter, waited in _copy_waits(problem, solution) + _producer_waits(problem, solution):
        waits.setdefault(waiter, set()).add(waited)
    return waits


def _producer_waits(problem: LevelProblem, solution: LevelSolution) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """Several streams: a prefetch of a produced tensor starts after its producer ends (it reads
    the slow copy the producer wrote). With one stream its trigger, at or after the producer in
    the order, implies it; with several, only a trigger that is the producer or follows it on
    the producer's stream does, or the tensor's eviction (itself after the producer) that the
    prefetch waits for."""
    out = []
    evicted = {tr.tensor for tr in solution.transfers if tr.kind is TransferKind.EVICT}
    for q, tr in enumerate(solution.transfers):
        if tr.kind is not TransferKind.PREFETCH or tr.tensor in evicted:
            continue
        a = problem.accesses(tr.tensor)[0]
        if not problem.is_real(a):
            continue
        k = tr.trigger_op
        if k >= a and problem.stream_of(k) == problem.stream_of(a):
            continue
        out.append((("dma", q), ("op", a)))
    return out


def _copy_waits(problem: LevelProblem, solution: LevelSolution) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """Several streams: the accesses of one fast copy run one after another (a kept gap: its
    later access after its earlier one, so the copy is ready before each access and every
    access has ended when it is freed), and a slow access after an eviction of its tensor
    starts after that eviction (which writes the slow copy). Only the pairs on different
    streams (with one stream, the order implies them)."""
    out = []
    evict_q = {}
    for q, tr in enumerate(solution.transfers):
        if tr.kind is TransferKind.EVICT:
            evict_q[tr.tensor] = (q, tr)
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        for j in range(1, len(acc)):
            a, prev = acc[j], acc[j - 1]
            if solution.kept[t][j] and problem.stream_of(a) != problem.stream_of(prev):
                out.append((("op", a), ("op", prev)))
        if t in evict_q:
            q, tr = evict_q[t]
            for j in range(tr.gap, len(acc)):
                a = acc[j]
                if not problem.is_real(a) or solution.in_fast[t][j]:
                    continue
                implied = tr.release_op < problem.num_ops and problem.stream_of(a) == problem.stream_of(
                    tr.release_op) and a >= tr.release_op
                if not implied:
                    out.append((("op", a), ("dma", q)))
    return out


def _check_memory_order(problem: LevelProblem, solution: LevelSolution, end: list[int]) -> list[str]:
    """Several streams: every fast allocation comes, in cycles, after every fast free before
    it on the point axis (so the point capacity check holds for overlapping ops)."""
    tr = solution.transfers

    def alloc_cycle(who) -> int:
        return solution.op_start[who[1]] if who[0] == "op" else tr[who[1]].start_cycle

    def free_cycle(who) -> int:
        return end[who[1]] if who[0] == "op" else tr[who[1]].end_cycle

    events = fast_piece_events(problem, solution)
    frees = sorted((hi, free_cycle(free)) for _, hi, _, free, _ in events)
    his = [h for h, _ in frees]
    running, prefix = 0, []
    for _, c in frees:
        running = max(running, c)
        prefix.append(running)
    errs = []
    for lo, _, alloc, _, _ in events:
        k = bisect.bisect_right(his, lo)
        if k and prefix[k - 1] > alloc_cycle(alloc):
            errs.append(f"memory order: {alloc[0]} {alloc[1]} allocates fast memory at cycle {alloc_cycle(alloc)} "
                        f"(point {lo}) before a piece freed at or before that point is freed (cycle {prefix[k - 1]})")
    return errs


def _check_fast_offsets(problem: LevelProblem, solution: LevelSolution) -> list[str]:
    """A solution's own fast offsets (several streams): one per fast piece, each piece inside the
    fast level, and pieces that overlap on the point axis apart in address (so the pieces live
    at one cycle are apart, given the by-address memory order, :func:`memory_waits`)."""
    if not problem.multi_stream:
        return ["fast_offsets are for several streams only"]
    pieces = fast_pieces(problem, solution)
    offsets = solution.fast_offsets
    if len(offsets) != len(pieces):
        return [f"expected {len(pieces)} fast offsets (one per fast piece), got {len(offsets)}"]
    cap = problem.capacity_bytes[0]
    errs = []
    sized = [(lo, hi, offsets[n], offsets[n] + problem.tensor_bytes[t], t)
             for n, (t, lo, hi) in enumerate(pieces) if problem.tensor_bytes[t]]
    for lo, hi, a, b, t in sized:
        if a < 0 or b > cap:
            errs.append(f"fast piece of {problem.tensor_name(t)} at [{a}, {b}) is outside the fast level ({cap} B)")
    sized.sort()
    for k, (lo, hi, a, b, t) in enumerate(sized):  # sweep the point axis: overlapping pieces apart
        for lo2, hi2, a2, b2, t2 in sized[k + 1:]:
            if lo2 >= hi:
                break
            if a < b2 and a2 < b:
                errs.append(f"fast pieces of {problem.tensor_name(t)} and {problem.tensor_name(t2)} overlap on "
                            f"points [{lo2}, {min(hi, hi2)}) and in address")
    return errs


def _check_address_order(problem: LevelProblem, solution: LevelSolution, end: list[int]) -> list[str]:
    """Several streams with the solution's own fast offsets: every wait :func:`memory_waits` lists
    for them (an allocation after the frees of earlier pieces it overlaps in address, and the
    copy order) holds in the solution's times."""
    tr = solution.transfers

    def start_of(who) -> int:
        return solution.op_start[who[1]] if who[0] == "op" else tr[who[1]].start_cycle

    def end_of(who) -> int:
        return end[who[1]] if who[0] == "op" else tr[who[1]].end_cycle

    errs = []
    for waiter, waited in sorted(memory_waits(problem, solution, solution.fast_offsets).items()):
        for w in sorted(waited):
            if start_of(waiter) < end_of(w):
                errs.append(f"memory order by address: {waiter[0]} {waiter[1]} starts at cycle {start_of(waiter)} "
                            f"before {w[0]} {w[1]} ends at {end_of(w)}")
    return errs


def _check_residency(problem: LevelProblem, solution: LevelSolution) -> list[str]:
    """One residency flag per access; virtual accesses slow, fast-only ops' reads fast, kept
    gaps between two fast accesses (a tensor with the wrong number of flags: that alone)."""
    errs: list[str] = []
    fast_only = set(problem.fast_only_ops)
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        if len(solution.in_fast[t]) != len(acc) or len(solution.kept[t]) != len(acc):
            return [f"tensor {problem.tensor_name(t)}: expected {len(acc)} accesses"]
        for j, a in enumerate(acc):
            f = solution.in_fast[t][j]
            if not problem.is_real(a) and f:
                errs.append(f"tensor {problem.tensor_name(t)}: virtual access {j} cannot be fast")
            if a in fast_only and not f:
                errs.append(f"tensor {problem.tensor_name(t)}: fast-only op {problem.op_name(a)} reads it slow")
            if solution.kept[t][j] and (j == 0 or not (f and solution.in_fast[t][j - 1])):
                errs.append(f"tensor {problem.tensor_name(t)}: gap {j} kept without fast accesses on both sides")
    return errs


def _check_transfer_set(problem: LevelProblem, solution: LevelSolution) -> list[str]:
    """The transfers are exactly those the residency requires (:func:`required_transfers`)."""
    need = required_transfers(problem, solution.in_fast, solution.kept)
    have = sorted(((tr.kind, tr.tensor, tr.gap) for tr in solution.transfers),
                  key=lambda x: (x[1], x[2], x[0] is TransferKind.PREFETCH))
    if need == have:
        return []
    missing = [f"{k.value} {t} gap {j}" for k, t, j in need if (k, t, j) not in have]
    extra = [f"{k.value} {t} gap {j}" for k, t, j in have if (k, t, j) not in need]
    return [f"transfers do not match the residency: missing {missing}, unexpected {extra}"]


def _check_op_times(problem: LevelProblem, solution: LevelSolution, durations: list[int]) -> list[str]:
    """Each op lasts its duration under the residency, and the ops run in order from cycle 0."""
    errs: list[str] = []
    n, start = problem.num_ops, solution.op_start
    for i in range(n):
        if solution.op_duration[i] != durations[i]:
            errs.append(f"op {problem.op_name(i)} lasts {solution.op_duration[i]}, expected {durations[i]}")
    end = [s + d for s, d in zip(start, durations)]
    if problem.multi_stream:
        return errs + _check_stream_times(problem, start, end)
    if n and start[0] < 0:
        errs.append("op 0 starts before 0")
    for i in range(1, n):
        if start[i] < end[i - 1]:
            errs.append(f"op {problem.op_name(i)} starts at {start[i]} before op {i - 1} ends at {end[i - 1]}")
    return errs


def _check_stream_times(problem: LevelProblem, start, end) -> list[str]:
    """Several streams: each op after the previous op of its stream and after the producers
    of the tensors it reads (on any stream), from cycle 0."""
    errs: list[str] = []
    last: dict[int, int] = {}
    for i in range(problem.num_ops):
        if start[i] < 0:
            errs.append(f"op {problem.op_name(i)} starts before 0")
        s = problem.stream_of(i)
        if s in last and start[i] < end[last[s]]:
            errs.append(f"op {problem.op_name(i)} starts at {start[i]} before op {problem.op_name(last[s])} of "
                        f"its stream {s} ends at {end[last[s]]}")
        last[s] = i
        for t in problem.reads[i]:
            a = problem.accesses(t)[0]
            if problem.is_real(a) and start[i] < end[a]:
                errs.append(f"op {problem.op_name(i)} starts at {start[i]} before op {problem.op_name(a)}, "
                            f"which writes {problem.tensor_name(t)}, ends at {end[a]}")
    return errs


def _check_transfer(problem: LevelProblem, solution: LevelSolution, tr, end: list[int],
                    evict_of: dict) -> list[str]:
    """One transfer: its DMA duration, its trigger and release ops inside its gap (a prefetch
    after its tensor's eviction), started after its trigger ends, ended before its release starts."""
    errs: list[str] = []
    t, acc = tr.tensor, problem.accesses(tr.tensor)
    name = f"{tr.kind.value} of tensor {problem.tensor_name(t)}"
    lo, hi = acc[tr.gap - 1], acc[tr.gap]
    if tr.duration_cycles != problem.dma_cycles(t):
        errs.append(f"{name} lasts {tr.duration_cycles}, expected {problem.dma_cycles(t)}")
    if tr.kind is TransferKind.PREFETCH:
        if not (lo <= tr.trigger_op <= hi - 1) or tr.release_op != hi:
            errs.append(f"{name}: trigger {tr.trigger_op} / release {tr.release_op} outside [{lo}, {hi - 1}] / {hi}")
            return errs
        ev = evict_of.get(t)
        if ev is not None:
            if tr.start_cycle < ev.end_cycle:
                errs.append(f"{name} starts at {tr.start_cycle} before its eviction ends at {ev.end_cycle}")
            if ev.gap == tr.gap and tr.trigger_op < ev.release_op:
                errs.append(f"{name}: trigger {tr.trigger_op} before the eviction's release {ev.release_op}")
    elif tr.trigger_op != lo or not (lo + 1 <= tr.release_op <= hi):
        errs.append(f"{name}: trigger {tr.trigger_op} / release {tr.release_op} outside {lo} / [{lo + 1}, {hi}]")
        return errs
    if tr.start_cycle < (end[tr.trigger_op] if tr.trigger_op >= 0 else 0):
        errs.append(f"{name} starts at {tr.start_cycle} before its trigger op {tr.trigger_op} ends")
    start = solution.op_start
    if tr.release_op < problem.num_ops and tr.end_cycle > start[tr.release_op]:
        errs.append(f"{name} ends at {tr.end_cycle} after op {problem.op_name(tr.release_op)} starts "
                    f"at {start[tr.release_op]}")
    return errs


def _check_dma_queue(solution: LevelSolution) -> list[str]:
    """The transfers are listed in start order and one DMA runs at a time."""
    errs: list[str] = []
    for a, b in zip(solution.transfers, solution.transfers[1:]):
        if b.start_cycle < a.start_cycle:
            errs.append(f"transfers are not in queue (start) order: {a.kind.value} of {a.tensor} at "
                        f"{a.start_cycle} before {b.kind.value} of {b.tensor} at {b.start_cycle}")
        elif b.start_cycle < a.end_cycle:
            errs.append(f"DMAs overlap: {a.kind.value} of {a.tensor} ends at {a.end_cycle}, "
                        f"{b.kind.value} of {b.tensor} starts at {b.start_cycle}")
    return errs


def _check_capacities(problem: LevelProblem, solution: LevelSolution) -> list[str]:
    """Fast memory never holds more than its capacity; slow memory holds what is not fast."""
    errs: list[str] = []
    for p, b in enumerate(fast_occupancy(problem, solution)):
        if b > problem.capacity_bytes[0]:
            where = f"op {problem.op_name(p // 2)}" if p % 2 else f"the gap before op {p // 2}"
            errs.append(f"fast memory holds {b} > {problem.capacity_bytes[0]} bytes during {where}")
    if _slow_bytes(problem, solution) > problem.capacity_bytes[1]:
        errs.append("slow memory capacity exceeded")
    return errs


@dataclass(frozen=True, slots=True)
class Replay:
    """Times recomputed as a lowered program runs them (ASAP, DMAs in queue order).

    Examples
    --------
    >>> Replay((0,), (4,), (), 4).makespan_cycles
    4
    """

    op_start: tuple[int, ...]
    op_duration: tuple[int, ...]
    transfer_start: tuple[int, ...]
    makespan_cycles: int
    link_start: tuple[int, ...] = field(default=(), repr=False)  # the link holds' starts (heads and tails, sharing)


def replay_levels(problem: LevelProblem, solution: LevelSolution, separate: bool = False,
                  op_release: Sequence[int] = (), tensor_ready: Sequence[int] = (),
                  fast_offsets: Sequence[int] | None = None, link_holds: Sequence = ()) -> Replay:
    """Re-time the solution's decisions: each op starts when the previous op and every DMA
    it releases have ended; each DMA when the engine is free, its trigger op has ended and
    (prefetch) its tensor's eviction has ended. Never later than the solution's own times.
    ``op_release`` / ``tensor_ready`` (optional heads, :mod:`solvers.memory.levels.heads_tails`):
    no op starts before its release, no prefetch before its tensor is ready.
    With shared bandwidth (unless ``separate``), also in the solution's start order and when
    the shares fit (:func:`~solvers.memory.levels.bandwidth.replay_shared`; with several
    streams or heads, :func:`~solvers.memory.levels.bandwidth.list_schedule_shared`).
    ``fast_offsets`` (several streams): the fast pieces' addresses, so only the memory-order
    waits between pieces that overlap in address are kept (:func:`memory_waits`), as the
    lowered program does (default: the solution's own ``fast_offsets``, if any).
    ``link_holds`` (shared bandwidth only, :mod:`~solvers.memory.levels.link_holds`): link
    transfers' ends placed in the same list schedule by their waits and shares, in the
    solution's ``link_starts`` order (their makespan includes them).

    Raises ValueError if the waits deadlock (a DMA queued before one its trigger needs).

    Examples
    --------
    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 3, 8)
    >>> replay_levels(p, LevelSolution(((False, True),), ((False, False),), (pf,), (20,), (4,)))
    Replay(op_start=(8,), op_duration=(4,), transfer_start=(0,), makespan_cycles=12)
    """
    problem = resolve_problem(problem, solution)
    shared = problem.shared_bandwidth and not separate
    if fast_offsets is None and solution.fast_offsets:
        fast_offsets = solution.fast_offsets
    if link_holds and not shared:
        raise ValueError("link holds are shares of the slow level: only with shared bandwidth")
    if problem.multi_stream or (shared and (any(op_release) or any(tensor_ready) or link_holds)):
        return _replay_streams(problem, solution, op_release, tensor_ready, fast_offsets, shared, link_holds)
    n = problem.num_ops
    dur = op_durations(problem, solution.in_fast)
    if shared:  # shared bandwidth: in order, when shares fit
        op_start, tr_start = replay_shared(problem, solution, dur)
        ends = [s + d for s, d in zip(op_start, dur)] + [s + tr.duration_cycles
                                                         for s, tr in zip(tr_start, solution.transfers)]
        return Replay(tuple(op_start), dur, tuple(tr_start), max(ends, default=0))
    queue = solution.transfers
    releases: list[list[int]] = [[] for _ in range(n + 1)]
    for q, tr in enumerate(queue):
        releases[min(tr.release_op, n)].append(q)
    evict_q = {tr.tensor: q for q, tr in enumerate(queue) if tr.kind is TransferKind.EVICT}
    op_start = [0] * n
    op_end = [0] * n
    tr_start = [0] * len(queue)
    tr_end = [0] * len(queue)
    oi = qi = 0
    clock_op = clock_dma = 0
    while oi < n or qi < len(queue):
        progressed = False
        if oi < n and all(q < qi for q in releases[oi]):
            s = max([clock_op, op_release[oi] if op_release else 0] + [tr_end[q] for q in releases[oi]])
            op_start[oi], op_end[oi] = s, s + dur[oi]
            clock_op = op_end[oi]
            oi += 1
            progressed = True
        if qi < len(queue):
            tr = queue[qi]
            ev = evict_q.get(tr.tensor) if tr.kind is TransferKind.PREFETCH else None
            if tr.trigger_op < oi and (ev is None or ev < qi):
                s = max(clock_dma, op_end[tr.trigger_op] if tr.trigger_op >= 0 else 0,
                        tr_end[ev] if ev is not None else 0,
                        tensor_ready[tr.tensor] if tensor_ready and tr.kind is TransferKind.PREFETCH else 0)
                tr_start[qi], tr_end[qi] = s, s + tr.duration_cycles
                clock_dma = tr_end[qi]
                qi += 1
                progressed = True
        if not progressed:
            raise WaitDeadlock(f"deadlock: op {oi} and DMA {qi} wait on each other")
    makespan = max([*op_end, *tr_end], default=0)
    return Replay(tuple(op_start), dur, tuple(tr_start), makespan)


def _replay_streams(problem: LevelProblem, solution: LevelSolution, op_release: Sequence[int] = (),
                    tensor_ready: Sequence[int] = (), fast_offsets: Sequence[int] | None = None,
                    shared: bool = False, link_holds: Sequence = ()) -> Replay:
    """:func:`replay_levels` with several streams: every op and DMA as soon as the previous
    op of its stream (the previous DMA in the queue), its data dependencies, its trigger or
    released DMAs and its memory-order waits (:func:`memory_waits`) have ended, and no op
    before its release, no prefetch before its tensor is ready (the optional heads).
    ``shared``: also in the solution's start order (ops first on ties) and when the shares
    fit (:func:`~solvers.memory.levels.bandwidth.list_schedule_shared`); with one stream this
    is the shared replay with heads."""
    n, queue = problem.num_ops, solution.transfers
    dur = op_durations(problem, solution.in_fast)
    deps: dict[tuple[str, int], set[tuple[str, int]]] = {("op", i): set() for i in range(n)}
    deps.update({("dma", q): set() for q in range(len(queue))})
    last: dict[int, int] = {}
    for i in range(n):
        s = problem.stream_of(i)
        if s in last:
            deps["op", i].add(("op", last[s]))
        last[s] = i
        deps["op", i].update(("op", problem.accesses(t)[0]) for t in problem.reads[i]
                             if problem.is_real(problem.accesses(t)[0]))
    evict_q = {tr.tensor: q for q, tr in enumerate(queue) if tr.kind is TransferKind.EVICT}
    for q, tr in enumerate(queue):
        if q:
            deps["dma", q].add(("dma", q - 1))
        if tr.trigger_op >= 0:
            deps["dma", q].add(("op", tr.trigger_op))
        if tr.kind is TransferKind.PREFETCH and tr.tensor in evict_q:
            deps["dma", q].add(("dma", evict_q[tr.tensor]))
        if tr.release_op < n:
            deps["op", tr.release_op].add(("dma", q))
    for waiter, waited in memory_waits(problem, solution, fast_offsets).items():
        deps[waiter].update(waited)
    length = {("op", i): dur[i] for i in range(n)}
    length.update({("dma", q): tr.duration_cycles for q, tr in enumerate(queue)})
    floor = {("op", i): r for i, r in enumerate(op_release) if r}
    floor.update({("dma", q): tensor_ready[tr.tensor] for q, tr in enumerate(queue)
                  if tr.kind is TransferKind.PREFETCH and tensor_ready and tensor_ready[tr.tensor]})
    if shared:
        priority = {("op", i): (solution.op_start[i], 0, i) for i in range(n)}
        priority.update({("dma", q): (tr.start_cycle, 1, q) for q, tr in enumerate(queue)})
        shares = instruction_shares(problem, solution)
        if link_holds:
            add_hold_waits(problem, solution, link_holds, deps, length, floor, priority, shares)
        start = list_schedule_shared(deps, length, shares, priority, floor)
    else:
        start = list_starts(deps, length, floor)
    op_start = tuple(start["op", i] for i in range(n))
    tr_start = tuple(start["dma", q] for q in range(len(queue)))
    makespan = max([s + length[k] for k, s in start.items()], default=0)
    return Replay(op_start, dur, tr_start, makespan, tuple(start["hold", k] for k in range(len(link_holds))))


@dataclass(frozen=True, slots=True)
class LevelMetrics:
    """The report's figures for one solution.

    ``fast_peak_bytes`` is the max over points of fast bytes; ``access_bytes`` the bytes
    ops read/write in each level (index 0 fast, 1 slow); ``bytes_moved`` maps a
    ``(from level, to level)`` pair to DMA bytes; DMA cycles are split into those that
    overlap some op (hidden under compute) and the rest (exposed).

    Examples
    --------
    >>> p = LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1))
    >>> s = LevelSolution(((True, True),), ((False, True),), (), (0, 3), (3, 2))
    >>> level_metrics(p, s).as_dict()["access_bytes"]
    [16, 0]
    """

    makespan_cycles: int
    fast_peak_bytes: int
    slow_bytes: int
    access_bytes: tuple[int, int]
    bytes_moved: dict[tuple[int, int], int]
    dma_cycles: int
    dma_hidden_cycles: int
    dma_exposed_cycles: int
    num_prefetches: int
    num_evictions: int

    def as_dict(self) -> dict:
        return {
            "makespan_cycles": self.makespan_cycles, "fast_peak_bytes": self.fast_peak_bytes,
            "slow_bytes": self.slow_bytes, "access_bytes": list(self.access_bytes),
            "bytes_moved": {f"{a}->{b}": v for (a, b), v in sorted(self.bytes_moved.items())},
            "dma_cycles": self.dma_cycles, "dma_hidden_cycles": self.dma_hidden_cycles,
            "dma_exposed_cycles": self.dma_exposed_cycles, "num_prefetches": self.num_prefetches,
            "num_evictions": self.num_evictions,
        }


def level_metrics(problem: LevelProblem, solution: LevelSolution) -> LevelMetrics:
    """Peak fast bytes, bytes per level and per level pair, DMA time hidden vs exposed.

    Examples
    --------
    >>> from solvers.memory.levels.problem import Transfer, TransferKind
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> m = level_metrics(p, LevelSolution(((False, True),), ((False, False),), (pf,), (8,), (4,)))
    >>> m.fast_peak_bytes, m.bytes_moved, m.dma_hidden_cycles, m.dma_exposed_cycles
    (8, {(1, 0): 8, (0, 1): 0}, 0, 8)
    """
    problem = resolve_problem(problem, solution)
    acc = [0, 0]
    for t in range(problem.num_tensors):
        for j, a in enumerate(problem.accesses(t)):
            if problem.is_real(a):
                acc[0 if solution.in_fast[t][j] else 1] += problem.tensor_bytes[t]
    moved = {(1, 0): 0, (0, 1): 0}
    ops = _union(sorted(zip(solution.op_start, (s + d for s, d in zip(solution.op_start, solution.op_duration)))))
    hidden = total = 0
    for tr in solution.transfers:
        moved[(1, 0) if tr.kind is TransferKind.PREFETCH else (0, 1)] += problem.tensor_bytes[tr.tensor]
        total += tr.duration_cycles
        for s, e in ops:  # disjoint busy intervals, so the overlaps add up
            hidden += max(0, min(e, tr.end_cycle) - max(s, tr.start_cycle))
    return LevelMetrics(
        makespan_cycles=solution.makespan_cycles,
        fast_peak_bytes=max(fast_occupancy(problem, solution), default=0),
        slow_bytes=_slow_bytes(problem, solution),
        access_bytes=(acc[0], acc[1]), bytes_moved=moved, dma_cycles=total,
        dma_hidden_cycles=hidden, dma_exposed_cycles=total - hidden,
        num_prefetches=sum(tr.kind is TransferKind.PREFETCH for tr in solution.transfers),
        num_evictions=sum(tr.kind is TransferKind.EVICT for tr in solution.transfers),
    )


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted intervals merged where they overlap (ops of several streams may)."""
    out: list[tuple[int, int]] = []
    for s, e in intervals:
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


# Ops touching more tensors than this get the fractional (continuous) per-op bound.
_MAX_EXACT_ACCESSES = 16


def op_duration_lower_bounds(problem: LevelProblem) -> tuple[int, ...]:
    """A lower bound on each op's duration, whatever the plan, for an unsplit problem.

    An op's fast accesses all sit in fast memory during it, so its fast bytes ``FB`` are
    a sum of its tensors' sizes that is ``<= capacity_bytes[0]`` (all of them on a
    fast-only op). The bound is ``max(compute, min over such sums of ceil(FB/bw_f) +
    ceil(SB/bw_s))``, enumerated exactly over the achievable sums (at most
    ``2**16`` subsets; above that, the continuous relaxation with ``FB <= capacity``).

    Examples
    --------
    Op 0 touches 24 bytes, but fast memory holds 16: at least 8 bytes come from slow
    (1 B/cycle), so 16/4 + 8/1 = 12 cycles, not 24/4 = 6:

    >>> p = LevelProblem((3,), ((0, 1),), ((),), (16, 8), (16, 99), (4, 1))
    >>> op_duration_lower_bounds(p)
    (12,)
    """
    cap = problem.capacity_bytes[0]
    bf, bs = problem.bandwidth_bytes_per_cycle
    fast_only = set(problem.fast_only_ops)
    out = []
    for i, row in enumerate(problem.op_accesses()):
        sizes = [problem.tensor_bytes[t] for t, _ in row if problem.tensor_bytes[t]]
        total = sum(sizes)
        if i in fast_only:
            sums = {total}
        elif len(sizes) <= _MAX_EXACT_ACCESSES:
            sums = {0}
            for b in sizes:
                sums |= {x + b for x in sums if x + b <= cap}
        else:  # continuous relaxation: FB anywhere in [0, min(cap, total)]
            fb = min(cap, total) if bf >= bs else 0
            out.append(max(problem.compute_cycles[i], math.ceil(fb / bf + (total - fb) / bs)))
            continue
        out.append(max(problem.compute_cycles[i],
                       min(cycles_for_bytes(fb, bf) + cycles_for_bytes(total - fb, bs) for fb in sums)))
    return tuple(out)


def makespan_lower_bound(problem: LevelProblem) -> int:
    """A lower bound on the makespan of an unsplit problem (ops run one at a time).

    With several streams: the largest sum of :func:`op_duration_lower_bounds` over one
    stream's ops (each stream runs its ops one at a time).

    The sum of :func:`op_duration_lower_bounds`, plus, for the first op, the DMAs of the
    inputs it would read fast (they end before it starts) and, for the last op, the
    evictions of the live-out tensors it would write fast (they start after it ends),
    minimised jointly with that op's duration. (With split groups, take the minimum
    over expansions.) With shared bandwidth, the larger of that and
    :func:`~solvers.memory.levels.bandwidth.slow_traffic_lower_bound`.

    Examples
    --------
    >>> p = LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1))
    >>> makespan_lower_bound(p)  # op 0: max(3, 8/4) = 3; op 1: max(1, 8/4) = 2
    5

    Fast memory (32 B) holds only one of op 0's two 24-byte inputs, so op 0 takes at least
    24/4 + 24/1 = 30 cycles; but that fast input is first prefetched (24 cycles at the slow
    rate, before op 0 starts): 54 in all, while both read slow cost 48/1 = 48:

    >>> q = LevelProblem((2,), ((0, 1),), ((),), (24, 24), (32, 99), (4, 1))
    >>> op_duration_lower_bounds(q), makespan_lower_bound(q)
    ((30,), 48)
    """
    n = problem.num_ops
    if not n:
        return 0
    if problem.shared_bandwidth:  # also: the slow level carries every byte that must cross it
        return max(makespan_lower_bound(replace(problem, shared_bandwidth=False)), slow_traffic_lower_bound(problem))
    per_op = list(op_duration_lower_bounds(problem))
    if problem.multi_stream:  # each stream runs its own ops one at a time
        per_stream: dict[int, int] = {}
        for i, d in enumerate(per_op):
            per_stream[problem.stream_of(i)] = per_stream.get(problem.stream_of(i), 0) + d
        return max(per_stream.values())
    first_inputs = {t for t, j in problem.op_accesses()[0] if j > 0 and not problem.is_real(problem.accesses(t)[0])}
    last_outputs = {t for t, j in problem.op_accesses()[n - 1]
                    if j == 0 and problem.accesses(t)[-1] == n}
    for i in {0, n - 1}:
        row = [(t, problem.tensor_bytes[t]) for t, _ in problem.op_accesses()[i] if problem.tensor_bytes[t]]
        if len(row) > _MAX_EXACT_ACCESSES:
            continue
        extra = {t: problem.dma_cycles(t) for t, _ in row
                 if (i == 0 and t in first_inputs) or (i == n - 1 and t in last_outputs)}
        if not extra:
            continue
        cap = problem.capacity_bytes[0]
        total = sum(b for _, b in row)
        best = None
        fast_only = i in set(problem.fast_only_ops)
        for mask in range(1 << len(row)):
            if fast_only and mask != (1 << len(row)) - 1:
                continue
            fb = sum(b for k, (_, b) in enumerate(row) if mask >> k & 1)
            if fb > cap and not fast_only:
                continue
            dma = sum(extra.get(t, 0) for k, (t, _) in enumerate(row) if mask >> k & 1)
            cost = problem.op_cycles(i, fb, total - fb) + dma
            best = cost if best is None else min(best, cost)
        per_op[i] = max(per_op[i], best)
    return sum(per_op)
