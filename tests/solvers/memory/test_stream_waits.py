"""Fewer memory-order waits on several streams: only between pieces that overlap in address.

The rule (docs/memory.md, "Several compute streams"): pieces are held longer on the point
axis where the fast level has room (``held_fast_pieces``), offsets are packed over the held
pieces, and an allocation waits only for the frees of earlier pieces whose address range
overlaps its own (``memory_waits(..., fast_offsets)``). The judge here is independent of the
point axis: a sweep over the re-timed plan's cycles, where every live piece must lie inside
the fast level and no two live pieces may overlap in address.
"""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from solvers.core import SolveOptions
from solvers.memory import fast_offset_problem
from solvers.memory.levels import (
    CpSatLevelSolver, LevelProblem, LevelSolution, Transfer, TransferKind, fast_pieces, memory_waits, plan_greedy,
    replay_levels,
)
from solvers.memory.offsets import GreedyBySizeOffsetSolver
from tests.solvers.memory.strategies import stream_level_problems
from tests.sweeps import examples, random_sweep

_OPTIONS = SolveOptions(time_limit_s=5, num_workers=1, random_seed=0)


def packed_offsets(p: LevelProblem, s: LevelSolution) -> tuple[int, ...] | None:
    """Offsets over the held pieces (else the pieces as they are), one per fast piece."""
    for hold in (True, False):
        problem, _ = fast_offset_problem(p, s, hold=hold)
        result = GreedyBySizeOffsetSolver().solve(problem, _OPTIONS)
        if result.status.has_solution:
            it = iter(result.solution.offsets)
            return tuple(next(it) if p.tensor_bytes[t] else 0 for t, _, _ in fast_pieces(p, s))
    return None


def sweep(p: LevelProblem, s: LevelSolution, offsets, op_start, transfer_start) -> None:
    """At every cycle, the live pieces (a piece lives from its producer's or prefetch's start to
    its last access's or eviction's end) fit the level and are pairwise apart in address."""
    dur = s.op_duration
    end = [a + d for a, d in zip(op_start, dur)]
    prefetch = {(tr.tensor, 2 * tr.trigger_op + 2): q for q, tr in enumerate(s.transfers)
                if tr.kind is TransferKind.PREFETCH}
    evict = {(tr.tensor, 2 * tr.release_op + 1): q for q, tr in enumerate(s.transfers) if tr.kind is TransferKind.EVICT}
    lives = []
    for n, (t, lo, hi) in enumerate(fast_pieces(p, s)):
        if not p.tensor_bytes[t]:
            continue
        begin = op_start[lo // 2] if lo % 2 else transfer_start[prefetch[t, lo]]
        q = evict.get((t, hi))
        finish = end[hi // 2 - 1] if hi % 2 == 0 else transfer_start[q] + s.transfers[q].duration_cycles
        lives.append((begin, finish, offsets[n], offsets[n] + p.tensor_bytes[t]))
    for cycle in sorted({b for b, _, _, _ in lives}):
        live = [x for x in lives if x[0] <= cycle < x[1]]
        assert all(hi <= p.capacity_bytes[0] for _, _, _, hi in live)
        for i, a in enumerate(live):
            for b in live[i + 1:]:
                assert a[3] <= b[2] or b[3] <= a[2], (cycle, a, b)


def test_an_allocation_with_room_does_not_wait_for_the_other_streams_free():
    # Op 0 (stream 0) reads weight 0 fast after its 8-cycle prefetch; op 1 (stream 1) writes
    # tensor 1 fast. Under the point-axis rule op 1 waits for op 0's end (8 + 4): 16 cycles.
    # With 16 bytes of fast memory, weight 0's piece is held past op 1's allocation and packed
    # apart from it, so op 1 runs at once: 12 cycles.
    p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1))
    pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (pf,), (8, 12), (4, 4))
    offsets = packed_offsets(p, s)
    assert memory_waits(p, s) == {("op", 1): {("op", 0)}} and memory_waits(p, s, offsets) == {}
    assert replay_levels(p, s).makespan_cycles == 16
    assert replay_levels(p, s, fast_offsets=offsets).makespan_cycles == 12
    # Without room the piece is not held, the buffers share an address, and op 1 still waits.
    tight = replace(p, capacity_bytes=(8, 99))
    offsets = packed_offsets(tight, s)
    assert offsets == (0, 0) and replay_levels(tight, s, fast_offsets=offsets).makespan_cycles == 16


# 40 derandomized draws by default (0.8 CPU-s against 2.4 for all 150, measured 2026-11-29);
# offsets planted all at zero (buffers overlapping) fail them.
@random_sweep
@settings(max_examples=examples(40, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(stream_level_problems(min_ops=3, max_ops=6, max_tensors=5))
def test_fewer_waits_keep_every_cycle_within_capacity_and_buffers_apart(p):
    for s in (plan_greedy(p), CpSatLevelSolver().solve(p, _OPTIONS).solution):
        if s is None:
            continue
        offsets = packed_offsets(p, s)
        if offsets is None:
            continue
        strict = replay_levels(p, s)
        relaxed = replay_levels(p, s, fast_offsets=offsets)
        assert relaxed.makespan_cycles <= strict.makespan_cycles
        sweep(p, replace(s, op_duration=relaxed.op_duration), offsets, relaxed.op_start, relaxed.transfer_start)


def _two_stream_layers(seed: int) -> LevelProblem:
    """Four to six layers alternating between two streams, each reading its weight (2-6 bytes)
    and its stream's previous output; 12-30 bytes of fast memory."""
    rng = random.Random(seed)
    sizes, reads, writes, streams, last = [], [], [], [], {}
    for i in range(rng.randint(4, 6)):
        stream = i % 2
        sizes.append(rng.randint(2, 6))
        ins = [len(sizes) - 1] + ([last[stream]] if stream in last else [])
        sizes.append(rng.randint(1, 4))
        reads.append(tuple(sorted(ins)))
        writes.append((len(sizes) - 1,))
        streams.append(stream)
        last[stream] = len(sizes) - 1
    return LevelProblem(tuple(rng.randint(1, 6) for _ in streams), tuple(reads), tuple(writes), tuple(sizes),
                        (rng.randint(12, 30), 10**6), (4, 1), dma_bytes_per_cycle=rng.choice((1, 2)),
                        live_out=tuple(last.values()), op_streams=tuple(streams))


def test_the_rule_removes_waits_and_cycles_on_two_stream_layers():
    # Non-vacuity for the property above: on these problems (16 of 30 have a greedy plan) the
    # address rule drops waits on 12 and shortens 8, every cycle still within the level.
    fewer = shorter = 0
    for seed in range(30):
        p = _two_stream_layers(seed)
        s = plan_greedy(p)
        offsets = packed_offsets(p, s) if s is not None else None
        if offsets is None:
            continue
        relaxed = replay_levels(p, s, fast_offsets=offsets)
        sweep(p, replace(s, op_duration=relaxed.op_duration), offsets, relaxed.op_start, relaxed.transfer_start)
        fewer += sum(map(len, memory_waits(p, s, offsets).values())) < sum(map(len, memory_waits(p, s).values()))
        shorter += relaxed.makespan_cycles < replay_levels(p, s).makespan_cycles
    assert fewer >= 10 and shorter >= 6
