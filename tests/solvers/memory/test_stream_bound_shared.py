"""The several-stream plan bound under shared bandwidth (solvers.memory.levels.stream_bound,
"Shared bandwidth"): each level's share-cycles bound the makespan; never above the best plan
over every order and stream assignment, hand-checked where sharing makes the streams take turns.

A wider sweep: ``PLAN_TEST_BOUND_EXAMPLES=200 python -m pytest -q -p no:cacheprovider
tests/solvers/memory/test_stream_bound_shared.py``.
"""

from __future__ import annotations

import os
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.memory.levels import LevelProblem
from solvers.memory.levels.stream_bound import stream_plan_lower_bound
from tests.solvers.memory.strategies import level_problems
from tests.solvers.memory.test_shared_streams import shared_brute_force
from tests.solvers.memory.test_stream_bound_splits import best_split_plan

EXAMPLES = int(os.environ.get("PLAN_TEST_BOUND_EXAMPLES", "0"))


def best_shared_plan(p: LevelProblem, num_streams: int) -> int | None:
    """The proven optimum under sharing over every order and stream assignment (CP-SAT, exact
    for each: tests/solvers/memory/test_shared_streams.py); None when one is not proven."""
    return best_split_plan(p, (), (), (1,), num_streams)


def test_two_memory_bound_ops_take_turns_on_the_slow_level_by_hand():
    # Each op reads 8 slow bytes at 1 B/cycle (fast memory holds 4: they cannot be fast). On two
    # streams they overlap with separate bandwidth (8), but each holds all of the slow level:
    # 16 shared, the optimum (tests/solvers/memory/test_shared_streams.py).
    p = LevelProblem((0, 0), ((0,), (1,)), ((), ()), (8, 8), (4, 10**6), (4, 1), op_streams=(0, 1),
                     shared_bandwidth=True)
    assert stream_plan_lower_bound(replace(p, shared_bandwidth=False), 2) == 8
    assert stream_plan_lower_bound(p, 2) == 16 == shared_brute_force(p)


def test_a_prefetch_shares_the_slow_level_with_the_other_streams_reads_by_hand():
    # Op 0 reads A (4 B) slow; op 1 (compute 2) reads W (8 B): slow (8 cycles) or prefetched (8
    # DMA cycles holding all of the slow level). Either way the slow level carries 4 + 8 = 12
    # cycles: 12, the optimum; separately 8 (W's prefetch under op 0's read, then op 1).
    p = LevelProblem((0, 2), ((0,), (1,)), ((), ()), (4, 8), (64, 10**6), (4, 1), op_streams=(0, 1),
                     shared_bandwidth=True)
    assert stream_plan_lower_bound(replace(p, shared_bandwidth=False), 2) < 12
    assert stream_plan_lower_bound(p, 2) == 12 == best_shared_plan(p, 2)


@settings(max_examples=EXAMPLES or 8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(level_problems(max_ops=3, max_tensors=3, max_latency=1, slow_capacity=10**9, dma_rates=(1, 2, 0),
                      fast_rates=(2, 4)), st.integers(1, 2))
def test_never_above_the_best_shared_plan_over_every_order_and_stream(p, k):
    p = replace(p, shared_bandwidth=True)
    best = best_shared_plan(p, k)
    if best is not None:
        assert stream_plan_lower_bound(p, k) <= best
