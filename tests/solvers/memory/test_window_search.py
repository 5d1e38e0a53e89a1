"""Window search: the model around a fixed plan, and the search that re-optimises windows."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from benchmarks.memory import transformer_levels
from solvers.core import SolveOptions, Status
from solvers.memory.levels import (
    CpSatLevelSolver, GreedyLevelSolver, build_level_model, plan_all_slow, plan_greedy, retime,
    validate_levels,
)
from tests.solvers.memory.strategies import level_problems

BIG = 10**6


def _solve(model: cp_model.CpModel, fix_to_hint: bool = False) -> tuple[int, cp_model.CpSolver]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = 10
    solver.parameters.fix_variables_to_their_hinted_value = fix_to_hint
    return solver.solve(model), solver


def small_problems():
    return level_problems(min_ops=2, max_ops=5, max_tensors=4, fast_rates=(4, Fraction(7, 2)),
                          slow_rates=(1, Fraction(2, 3)), dma_rates=(0, 1, Fraction(3, 4)), max_latency=2,
                          fast_only_one_in=6, slow_capacity=BIG)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_every_window_model_accepts_its_plan_and_returns_valid_plans(p):
    # Around a valid plan (greedy, or all-slow), each window model must (1) accept that
    # plan exactly (its hint, every variable fixed to it), (2) return plans that validate
    # and are never longer; with every op free it is the exact model (same optimum).
    plan = plan_greedy(p) or plan_all_slow(p)
    if plan is None:
        return
    n = p.num_ops
    for a in range(n):
        for b in range(a + 1, n + 1):
            model, v = build_level_model(p, plan.makespan_cycles, 0, plan, fixed=plan, free_ops=range(a, b))
            status, solver = _solve(model, fix_to_hint=True)
            assert status == cp_model.OPTIMAL, (a, b)
            assert retime(p, v.extract(solver)).makespan_cycles == plan.makespan_cycles
            status, solver = _solve(model)
            assert status == cp_model.OPTIMAL
            found = retime(p, v.extract(solver))
            assert validate_levels(p, found) == [] and found.makespan_cycles <= plan.makespan_cycles
            assert found.makespan_cycles <= solver.objective_value  # the replay is never later
    model, v = build_level_model(p, plan.makespan_cycles, 0, plan, fixed=plan, free_ops=range(0, n))
    exact, _ = build_level_model(p, plan.makespan_cycles, 0, plan)
    (s1, a1), (s2, a2) = _solve(model), _solve(exact)
    assert s1 == s2 == cp_model.OPTIMAL and a1.objective_value == a2.objective_value


def test_frozen_before_shifted_after():
    # Ops 0..5 of a 2-layer transformer; free ops 4..5: ops 0..3 keep their times
    # (constants), ops 6.. are the plan's starts + one shift variable <= 0.
    p = transformer_levels(2, 64)
    plan = plan_greedy(p)
    model, v = build_level_model(p, plan.makespan_cycles, 0, plan, fixed=plan, free_ops=range(4, 6))
    assert v.start[:4] == list(plan.op_start[:4])
    assert isinstance(v.start[4], cp_model.IntVar) and isinstance(v.start[5], cp_model.IntVar)
    assert v.shift is not None and str(v.start[6]) == f"(shift + {plan.op_start[6]})"
    assert all(isinstance(v.fast[t, j], int) for (t, j) in v.fast if not 4 <= p.accesses(t)[j] <= 5)


# transformer_levels(2, 64) (10 ops) and (4, 64) (20 ops): the exact model proves 56,320 and
# 111,872 (greedy: 60,160 and 119,168); windows of 6 ops reach both optima.
@pytest.mark.parametrize("layers, optimum, greedy", [(2, 56320, 60160), (4, 111872, 119168)])
def test_window_search_reaches_the_proven_optimum(layers, optimum, greedy):
    p = transformer_levels(layers, 64)
    exact = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=20, num_workers=1, random_seed=0))
    assert exact.status is Status.OPTIMAL and exact.objective == optimum
    assert GreedyLevelSolver().solve(p).objective == greedy
    windows = CpSatLevelSolver(window_above_ops=4, window_ops=6)
    r = windows.solve(p, SolveOptions(time_limit_s=10, num_workers=1, random_seed=0))
    assert validate_levels(p, r.solution) == [] and r.objective == optimum
    assert r.status is Status.FEASIBLE and r.bound < optimum  # the bound is only the lower bound
    info = r.stats["per_split"][0]
    assert info["windows"] >= 1 and info["windows_improved"] >= 1
    again = windows.solve(p, SolveOptions(time_limit_s=10, num_workers=1, random_seed=0))
    assert again.solution == r.solution


@pytest.mark.usefixtures("wide_net")
def test_window_budget_is_counted_not_timed():
    # 1 window unit per second of budget: a 2-s budget allows 4 windows of window_ops ops
    # (the floor), whatever the machine.
    p = transformer_levels(4, 64)
    r = CpSatLevelSolver(window_above_ops=4, window_ops=4).solve(p, SolveOptions(time_limit_s=2))
    info = r.stats["per_split"][0]
    assert info["windows"] == 4 and info["stopped_by"] == "deterministic_budget"
    assert validate_levels(p, r.solution) == [] and r.objective <= GreedyLevelSolver().solve(p).objective
