"""Heads and tails under shared bandwidth (issue 14, item 4 with item 3): the exact model is the
level model (its Cumulatives) with the heads as start bounds and the tails in the objective; the
replay of a headed shared plan is the list schedule over the dependency graph with floors.
Checked against the brute force over decisions and start orders (test_shared_streams)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.memory.levels import LevelProblem, plan_greedy
from solvers.memory.levels.bandwidth import slow_traffic_lower_bound
from solvers.memory.levels.heads_tails import (
    HeadsTails, heads_tails_lower_bound, objective_cycles, retime_heads_tails, solve_heads_tails,
    validate_heads_tails,
)
from tests.solvers.memory.strategies import level_problems
from tests.solvers.memory.test_shared_streams import shared_brute_force

OPTS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def test_a_tail_flips_which_stream_takes_the_slow_level_first():
    # Op 0 (stream 0) reads A (8 B) and op 1 (stream 1, released at 2) reads B (4 B), both from
    # the slow level at 1 B/cycle: memory-bound, each holds all of it, so they take turns.
    # Op 1 has a tail of 5; the fast level (2 B) holds neither. Op 0 first: op 1 [8, 12) + 5 = 17.
    # Op 1 first: [2, 6) + 5 = 11 and op 0 [6, 14): 14, the optimum (the slow traffic alone is
    # 12). Separately: 11.
    p = LevelProblem((0, 0), ((0,), (1,)), ((), ()), (8, 4), (2, 10**6), (4, 1), op_streams=(0, 1),
                     shared_bandwidth=True)
    ht = HeadsTails(op_release=(0, 2), op_tail=(0, 5))
    r = solve_heads_tails(p, ht, OPTS)
    assert (r.status, r.objective, r.solution.op_start) == (Status.OPTIMAL, 14, (6, 2))
    assert validate_heads_tails(p, r.solution, ht) == [] and shared_brute_force(p, ht) == 14
    assert solve_heads_tails(replace(p, shared_bandwidth=False), ht, OPTS).objective == 11
    assert heads_tails_lower_bound(p, ht) == slow_traffic_lower_bound(p) == 12


def test_the_headed_shared_replay_keeps_releases_and_shares():
    # One stream: op 0, released at 3, reads A (8 B) slow; op 1 reads B (4 B). Reading both slow:
    # [3, 11), [11, 15). Better: B is prefetched while op 0 waits for its release ([0, 4), all
    # of the slow level, so op 0 waits for the DMA too: [4, 12)), and op 1 reads it fast [12, 13).
    p = LevelProblem((0, 0), ((0,), (1,)), ((), ()), (8, 4), (4, 10**6), (4, 1), shared_bandwidth=True)
    ht = HeadsTails(op_release=(3, 0))
    r = solve_heads_tails(p, ht, OPTS)
    assert (r.status, r.objective, r.solution.op_start) == (Status.OPTIMAL, 13, (4, 12))
    assert [(tr.kind.value, tr.start_cycle) for tr in r.solution.transfers] == [("prefetch", 0)]
    assert retime_heads_tails(p, r.solution, ht) == r.solution and shared_brute_force(p, ht) == 13
    # without the shares the prefetch would run beside op 0: [3, 11), op 1 [11, 12)
    assert solve_heads_tails(replace(p, shared_bandwidth=False), ht, OPTS).objective == 12


@st.composite
def _shared_problems_with_heads_tails(draw):
    p = draw(level_problems(min_ops=2, max_ops=3, slow_capacity=10**6, dma_rates=(1, 2, 0), fast_rates=(2, 4)))
    streams = [draw(st.integers(0, 1)) for _ in range(p.num_ops - 1)]
    streams.append(1 - streams[0] if len(set(streams)) == 1 else draw(st.integers(0, 1)))  # both streams used
    if draw(st.booleans()):  # or one stream
        streams = []
    rows = st.integers(0, 6)
    ht = HeadsTails(op_release=tuple(draw(rows) for _ in range(p.num_ops)),
                    op_tail=tuple(draw(rows) for _ in range(p.num_ops)),
                    tensor_ready=tuple(draw(rows) for _ in range(p.num_tensors)),
                    tensor_tail=tuple(draw(rows) for _ in range(p.num_tensors)))
    return replace(p, op_streams=tuple(streams), shared_bandwidth=True), ht


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_shared_problems_with_heads_tails())
def test_shared_heads_tails_equal_the_brute_force_and_the_bound_stays_below(case):
    p, ht = case
    expected = shared_brute_force(p, ht)
    r = solve_heads_tails(p, ht, OPTS)
    if expected is None:
        assert not r.status.has_solution
        return
    assert heads_tails_lower_bound(p, ht) <= expected
    assert r.status is Status.OPTIMAL  # also without a baseline (CP-SAT alone under a horizon)
    assert validate_heads_tails(p, r.solution, ht) == []
    assert r.objective == expected == objective_cycles(p, r.solution, ht)
    assert r.bound is not None and r.bound <= expected
    g = plan_greedy(p)
    if g is not None:
        g = retime_heads_tails(p, g, ht)
        assert validate_heads_tails(p, g, ht) == [] and objective_cycles(p, g, ht) >= r.objective
