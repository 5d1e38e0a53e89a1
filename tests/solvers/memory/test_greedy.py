"""Greedy level plans: regressions found by the brute-force property test."""

from __future__ import annotations

from solvers.memory.levels import GreedyLevelSolver, LevelProblem, plan_greedy, validate_levels


def test_eviction_release_leaves_room_for_the_prefetch_of_the_same_gap():
    # Tensor 0 (1 B) is written fast by fast-only op 0 and read fast by fast-only op 2;
    # op 1 writes tensor 1 (5 B > the 4-B fast level, so slow). The greedy drops tensor 0
    # at op 1, so it is evicted and prefetched in the same gap; the eviction's release
    # may not be pushed to op 2, since the prefetch is triggered at or after it (by op 1).
    p = LevelProblem((0, 0, 0), ((), (), (0,)), ((0,), (1,), ()), (1, 5), (4, 10**6), (4, 1),
                     dma_bytes_per_cycle=1, fast_only_ops=(0, 2))
    s = plan_greedy(p)
    assert validate_levels(p, s) == []
    (ev,) = [t for t in s.transfers if t.kind.value == "evict"]
    (pf,) = [t for t in s.transfers if t.kind.value == "prefetch"]
    assert ev.release_op == 1 and pf.trigger_op == 1
    assert validate_levels(p, GreedyLevelSolver().solve(p).solution) == []


def test_an_eviction_is_held_longer_only_where_every_other_eviction_still_fits():
    # Fast level 4 B, every op fast-only. Op 0 writes t0, t1 (1 B each); op 1 writes t2 (1 B,
    # live-out); op 2 reads t3 (3 B input); op 3 reads t0 again. t0 is evicted after op 0,
    # t2 after op 1. Holding t0's eviction to op 2 looked free while only t0's own span was
    # counted, but t2's span (from the gap before op 2) and t3's fetch land there too:
    # 1 + 1 + 3 = 5 > 4. Every eviction's span is now counted before any is held longer.
    p = LevelProblem((0, 0, 0, 0), ((), (), (3,), (0,)), ((0, 1), (2,), (), ()), (1, 1, 1, 3), (4, 10**6),
                     (4, 1), dma_bytes_per_cycle=1, live_out=(2,), fast_only_ops=(0, 1, 2, 3))
    s = plan_greedy(p)
    assert validate_levels(p, s) == []
    assert {(t.tensor, t.release_op) for t in s.transfers if t.kind.value == "evict"} == {(0, 1), (2, 3)}
