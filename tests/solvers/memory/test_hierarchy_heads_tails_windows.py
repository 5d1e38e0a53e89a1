"""The N-level re-solve under heads and tails above the whole model's size (issue 14): windows of
the op order re-optimised exactly around the best re-timed baseline, never worse than it."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, example, given, settings

from solvers.core import Status
from solvers.memory.levels.hierarchy_heads_tails import (
    HeadsTails, hierarchy_heads_tails_lower_bound, hierarchy_objective, retime_hierarchy_heads_tails, solve_hierarchy_heads_tails,
    validate_hierarchy_heads_tails,
)
from solvers.memory.levels.hierarchy_model import HierarchyProblem
from tests.solvers.memory.test_hierarchy_heads_tails import ARRIVAL, arrival_problem, options, problems_with_heads
from tests.sweeps import examples, random_sweep


def test_windows_reach_the_plan_that_sees_the_arrival_hand_checked():
    # test_hierarchy_heads_tails' arrival problem with the whole model's size set to 1 op: the best
    # re-timed baseline takes 28 (the greedy fetches x first, and under the arrival w waits behind
    # it); the one window over all three ops puts w first and reads x in place: 21, the optimum
    # (x arrives at 12, then op 1 takes 8 and op 2 one). The bound is the chain's (12 + 1 + 1).
    p = arrival_problem()
    r = solve_hierarchy_heads_tails(p, ARRIVAL, options(), max_model_ops=1)
    assert r.stats["baseline_objective"] == 28
    assert (r.status, r.objective, r.bound) == (Status.FEASIBLE, 21, 14)
    assert r.stats["window_search"]["windows_improved"] == 1
    assert r.solution.level == ((2, 2), (2, 0)) and r.solution.op_start == (0, 12, 20)
    assert validate_hierarchy_heads_tails(p, r.solution, ARRIVAL) == []


@random_sweep
@settings(max_examples=examples(12, 100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems_with_heads())
@example((  # CI drew it: the output fits only in host memory, so no re-timed baseline fits
    HierarchyProblem((0,), ((),), ((1,),), (1, 6), (2, 6, 1000), (Fraction(4), Fraction(2), Fraction(1)), 1,
                     ((0, 1), (1, 2)), tensor_home=(1, 1)),
    HeadsTails(op_release=(0,), op_tail=(0,), tensor_ready=(0, 0), tensor_tail=(0, 0))))
def test_windows_under_heads_are_valid_never_worse_than_the_baseline_nor_below_the_optimum(case):
    p, ht = case
    exact = solve_hierarchy_heads_tails(p, ht, options())
    windows = solve_hierarchy_heads_tails(p, ht, options(), max_model_ops=0)
    if exact.solution is None:
        assert windows.solution is None
        return
    if windows.solution is None:  # above the model's size only a re-timed baseline starts the windows
        assert windows.status is Status.UNKNOWN and windows.stats["baseline_objective"] is None
        return
    assert exact.status is Status.OPTIMAL
    s = windows.solution
    assert validate_hierarchy_heads_tails(p, s, ht) == []
    assert hierarchy_objective(p, retime_hierarchy_heads_tails(p, s, ht), ht) == windows.objective
    assert exact.objective <= windows.objective <= windows.stats["baseline_objective"]
    assert hierarchy_heads_tails_lower_bound(p, ht) == windows.bound <= exact.objective
    again = solve_hierarchy_heads_tails(p, ht, options(), max_model_ops=0)  # deterministic
    assert (again.objective, again.solution) == (windows.objective, s)
