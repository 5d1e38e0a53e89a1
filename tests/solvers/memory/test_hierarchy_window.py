"""Window models over N levels (issue 14): exact around an incumbent, valid, never worse than it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions, Status
from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver, build_hierarchy_model
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_all_home, plan_hierarchy_best, plan_hierarchy_greedy
from solvers.memory.levels.hierarchy_validate import validate_hierarchy
from solvers.memory.levels.hierarchy_window import WindowSettings, window_search
from tests.solvers.memory.test_hierarchy import chain_problem, four_level_problems, hierarchy_problems

OPTIONS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def solve(model: cp_model.CpModel) -> tuple[int, cp_model.CpSolver]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 10
    return solver.solve(model), solver


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_window_model_holds_its_incumbent_and_its_solutions_are_valid(data):
    # Any window and margin around a greedy or everything-at-home plan: the incumbent is one of
    # the model's solutions (so it always has one), and what it finds passes the validator as
    # extracted (no re-timing needed) and is never longer.
    p = data.draw(st.one_of(four_level_problems(max_ops=6, max_tensors=6), hierarchy_problems(3, 3)))
    incumbent = plan_hierarchy_greedy(p) if data.draw(st.booleans()) else plan_hierarchy_all_home(p)
    if incumbent is None:
        return
    first = data.draw(st.integers(0, p.num_ops - 1))
    free = range(first, data.draw(st.integers(first + 1, p.num_ops)))
    model, v = build_hierarchy_model(p, incumbent.makespan_cycles, incumbent, fixed=incumbent, free_ops=free,
                                     margin=data.draw(st.integers(0, 3)))
    status, solver = solve(model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    found = v.extract(solver)
    assert validate_hierarchy(p, found) == []
    assert found.makespan_cycles <= incumbent.makespan_cycles


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(four_level_problems(max_ops=4, max_tensors=4))
def test_a_window_over_every_op_is_the_exact_model(p):
    # Every op free and a margin past both ends: nothing is kept from the incumbent but the
    # levels of virtual accesses, so the optimum is the whole model's.
    incumbent = plan_hierarchy_all_home(p)
    exact = CpSatHierarchySolver().solve(p, OPTIONS)
    if incumbent is None or exact.status is not Status.OPTIMAL:
        return
    model, v = build_hierarchy_model(p, incumbent.makespan_cycles, incumbent, fixed=incumbent,
                                     free_ops=range(p.num_ops), margin=p.num_ops + 1)
    status, solver = solve(model)
    assert status == cp_model.OPTIMAL and solver.value(v.makespan) == exact.objective


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(four_level_problems(max_ops=4, max_tensors=4))
def test_windows_reach_the_optimum_above_the_model_size(p):
    # Above its model size (1 op here) the solver starts from its baselines; its first window
    # covers every op (24 > 4), so it ends at the one model's optimum, whatever the baselines.
    exact = CpSatHierarchySolver().solve(p, OPTIONS)
    r = CpSatHierarchySolver(max_model_ops=1).solve(p, OPTIONS)
    if exact.status is Status.OPTIMAL and p.num_ops > 1:
        assert r.objective == exact.objective and validate_hierarchy(p, r.solution) == []
        baseline = CpSatHierarchySolver(max_model_ops=1, search_windows=False).solve(p, OPTIONS)
        if baseline.objective > exact.objective:
            assert r.stats["window_search"]["windows_improved"] >= 1


def test_window_search_improves_the_chain_and_repeats():
    # The 70-op chain: from the best greedy plan, windows find a shorter valid plan within a
    # deterministic budget, and the same budget gives the same plan again.
    p = chain_problem(blocks=35)
    start = plan_hierarchy_best(p)

    def run():
        return window_search(p, start, Budget.start(1.0, MEMORY_LEVELS), OPTIONS, 0, WindowSettings(window_ops=12))

    best, info = run()
    assert best.makespan_cycles < start.makespan_cycles and validate_hierarchy(p, best) == []
    assert info["windows_improved"] >= 1 and info["windows"] >= info["windows_improved"]
    again, _ = run()
    assert again == best
