"""The post-solve reserve: a function of the graph's size, which leaves small specs' budgets alone."""

from __future__ import annotations

import pytest

from planner.stage_timing import (RESERVE_FREE_NEED_S, RESERVE_FULL_RATE_OPS, RESERVE_S_PER_MAC,
                                  RESERVE_S_PER_OP, RESERVE_S_PER_OP_BEYOND, post_solve_reserve_s)


def _old_reserve(num_ops: int, macs: int, limit: float) -> float:
    """The rule before 2026-11-28: 1.2 ms per op, nothing reserved below a 10-s limit."""
    return round(min(1.2e-3 * num_ops + 0.7e-9 * macs, 0.5 * max(0.0, limit - 10.0)), 3)


# (ops, numeric MACs, limit) of every shipped spec that is not a fleet (specs/*.yaml at 867980a):
# their reserves, and so their solve budgets and plan.json bytes, must not move.
SHIPPED = [(29, 20_643_840, 10.0), (259, 2_517_630_976, 30.0), (109, 1_677_721_600, 20.0), (7, 134_217_728, 10.0),
           (17, 490_012_672, 10.0), (7, 150_994_944, 10.0), (7, 67_108_864, 10.0), (55, 419_430_400, 10.0),
           (7, 33_554_432, 10.0), (20, 52_428_800, 10.0), (4, 0, 5.0), (11, 100_663_296, 10.0)]


@pytest.mark.parametrize("ops, macs, limit", SHIPPED)
def test_shipped_specs_keep_their_reserve(ops, macs, limit):
    assert post_solve_reserve_s(ops, macs, limit) == _old_reserve(ops, macs, limit)


def test_graphs_up_to_the_full_rate_ops_keep_the_old_rule_when_their_later_stages_are_short():
    for ops in (1, 50, 400, 800):
        for limit in (1.0, 5.0, 10.0, 30.0, 120.0):
            assert post_solve_reserve_s(ops, 0, limit) == _old_reserve(ops, 0, limit)


def test_a_large_graph_gets_a_reserve_at_a_ten_second_limit():
    # 1.2 + 9,000 x 0.56 ms = 6.24 s predicted; capped at half of the limit
    assert post_solve_reserve_s(10_000, 0, 10.0) == 5.0
    assert post_solve_reserve_s(10_000, 0, 30.0) == 6.24
    assert post_solve_reserve_s(10_000, 0, 2.0) == 1.0
    assert _old_reserve(10_000, 0, 10.0) == 0.0  # what overran before


def test_the_rate_beyond_the_first_ops_is_the_measured_one():
    more = post_solve_reserve_s(RESERVE_FULL_RATE_OPS + 1000, 0, 1000.0) - post_solve_reserve_s(
        RESERVE_FULL_RATE_OPS, 0, 1000.0)
    assert more == pytest.approx(1000 * RESERVE_S_PER_OP_BEYOND, abs=1e-3)
    assert post_solve_reserve_s(RESERVE_FULL_RATE_OPS, 0, 1000.0) == pytest.approx(
        RESERVE_FULL_RATE_OPS * RESERVE_S_PER_OP, abs=1e-3)


def test_the_free_seconds_end_where_the_predicted_later_stages_exceed_the_threshold():
    macs_at = int(RESERVE_FREE_NEED_S / RESERVE_S_PER_MAC)  # no ops: the need is the MACs' alone
    assert post_solve_reserve_s(0, macs_at - 10**6, 8.0) == 0.0
    assert post_solve_reserve_s(0, macs_at + 10**6, 8.0) == pytest.approx(1.001, abs=1e-3)
    # the reserve never exceeds half of the limit, nor the predicted need
    for ops in (0, 10, 1000, 5000, 10**5):
        for limit in (0.5, 3.0, 10.0, 60.0):
            r = post_solve_reserve_s(ops, 0, limit)
            assert 0.0 <= r <= limit / 2 + 1e-9
