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
