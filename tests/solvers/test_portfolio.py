"""Portfolio: never worse than its heuristic, honest status and bound."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.placement import CpSatPlacementSolver, GreedyPlacementSolver, PlacementProblem, max_load
from solvers.portfolio import Portfolio, PortfolioRun, best_of
from solvers.scheduling import (CpSatScheduler, HeftScheduler, ListSearchScheduler, SchedulingProblem,
                                objective_value, validate_schedule)
from tests.solvers.test_scheduling_bruteforce import brute_force, problems


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_scheduling_portfolio_is_never_worse_than_heft_and_honest(p):
    # A tiny budget, so the exact solver sometimes stops before it matches HEFT.
    run = Portfolio(HeftScheduler(), CpSatScheduler()).run(p, SolveOptions(time_limit_s=0.01))
    best, heft, exact = run
    opt = brute_force(p)
    if opt is None:
        assert best.status is Status.INFEASIBLE and best.solution is None
        return
    if heft.status.has_solution:
        assert best.status.has_solution and best.objective <= heft.objective
    if best.status.has_solution:
        assert validate_schedule(p, best.solution) == []
        assert best.objective == objective_value(p, best.solution) >= opt
        assert best.solver_name in (heft.solver_name, exact.solver_name)
    if best.bound is not None:
        assert best.bound <= opt
        assert best.bound == max(b for b in (heft.bound, exact.bound) if b is not None)
    assert (best.status is Status.OPTIMAL) == (best.status.has_solution and best.bound == best.objective)
    if best.status is Status.OPTIMAL:
        assert best.objective == opt


def _result(kind: str, objective: int, bound: int | None, name: str) -> SolveResult:
    if kind == "solved":
        status = Status.OPTIMAL if bound == objective else Status.FEASIBLE
        return SolveResult(status, objective, bound, f"{name}-solution", 1.0, name)
    return failure_result(Status[kind], name, 1.0, bound=bound)


@st.composite
def result_pairs(draw):
    """A heuristic and an exact result of one problem whose optimum is 10 (bounds <= 10 <= objectives)."""
    h_kind = draw(st.sampled_from(["solved", "UNKNOWN"]))
    e_kind = draw(st.sampled_from(["solved", "UNKNOWN"] + (["INFEASIBLE"] if h_kind != "solved" else [])))
    heuristic = _result(h_kind, draw(st.integers(10, 20)), None, "heuristic")
    e_objective = draw(st.integers(10, 20))
    e_bound = draw(st.one_of(st.none(), st.integers(0, 10)))
    if e_kind == "solved" and e_bound is not None and e_objective == 10 and draw(st.booleans()):
        e_bound = 10
    exact = _result(e_kind, e_objective, None if e_kind == "INFEASIBLE" else e_bound, "exact")
    return heuristic, exact


@given(result_pairs())
def test_best_of_keeps_the_better_solution_and_the_best_bound(pair):
    heuristic, exact = pair
    best = best_of(heuristic, exact)
    solved = [r for r in pair if r.status.has_solution]
    if not solved:
        want = Status.INFEASIBLE if exact.status is Status.INFEASIBLE else exact.status
        assert best.status is want and best.solution is None
        return
    assert best.objective == min(r.objective for r in solved)
    winner = next(r for r in (exact, heuristic) if r.status.has_solution and r.objective == best.objective)
    assert best.solution == winner.solution and best.solver_name == winner.solver_name
    bounds = [r.bound for r in pair if r.bound is not None]
    proven = bool(bounds) and max(bounds) >= best.objective
    assert best.status is (Status.OPTIMAL if proven else Status.FEASIBLE)
    assert best.bound == (best.objective if proven else (max(bounds) if bounds else None))
    assert best.stats["portfolio"]["heuristic_objective"] == heuristic.objective


def test_an_exact_solver_worse_than_the_heuristic_loses():
    heuristic = SolveResult(Status.FEASIBLE, 9, None, "h", 0.1, "heft")
    exact = SolveResult(Status.FEASIBLE, 12, 8, "e", 1.0, "cpsat")
    best = best_of(heuristic, exact)
    assert (best.status, best.objective, best.bound, best.solution) == (Status.FEASIBLE, 9, 8, "h")


def test_a_tie_goes_to_the_exact_solver_and_its_proof():
    best = best_of(SolveResult(Status.FEASIBLE, 9, None, "h", 0.1, "heft"),
                   SolveResult(Status.OPTIMAL, 9, 9, "e", 1.0, "cpsat"))
    assert (best.status, best.solution, best.solver_name) == (Status.OPTIMAL, "e", "cpsat")


class _Recorder(Accepting):
    """An 'exact' solver that records the hint it was given and refuses odd-sized problems."""

    name, problem_type = "recorder", SchedulingProblem

    def __init__(self):
        self.hints = []

    def refusal(self, problem):
        return Accepting.refusal(self, problem) or (None if problem.num_ops % 2 == 0 else "odd")

    def solve(self, problem, options=SolveOptions()):
        self.hints.append(options.hint)
        return failure_result(Status.UNKNOWN, self.name, 0.0)


_TWO_OPS = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))


def test_the_exact_solver_is_warm_started_from_the_heuristic():
    recorder = _Recorder()
    run = Portfolio(HeftScheduler(), recorder).run(_TWO_OPS, SolveOptions(time_limit_s=1))
    assert recorder.hints == [run.heuristic.solution]
    assert run.best.solution == run.heuristic.solution and run.best.status is Status.FEASIBLE


def test_a_refusing_solver_is_skipped_not_run():
    recorder = _Recorder()
    one_op = SchedulingProblem(((4,),), (), (1,), ((-1,),), ())
    run = Portfolio(HeftScheduler(), recorder).run(one_op, SolveOptions(time_limit_s=1))
    assert recorder.hints == [] and run.exact is None and run.best.objective == 4
    # list search refuses two devices: the portfolio runs the exact solver alone
    run = Portfolio(ListSearchScheduler(), CpSatScheduler()).run(_TWO_OPS, SolveOptions(time_limit_s=1))
    assert run.heuristic is None and run.best.status is Status.OPTIMAL and run.best.objective == 7
    both = Portfolio(ListSearchScheduler(), _Recorder())
    three_ops_two_devices = SchedulingProblem(((1, 1),) * 3, (), (1, 1), ((-1, 0), (0, -1)), ())
    assert not both.accepts(three_ops_two_devices)
    with pytest.raises(ValueError, match="odd"):
        both.solve(three_ops_two_devices)


def test_placement_portfolio_is_never_worse_than_greedy():
    p = PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (1, 1, 1, 0), ((0, 1), (1, 2), (2, 3)), 2, 0)
    run = Portfolio(GreedyPlacementSolver(), CpSatPlacementSolver()).run(p, SolveOptions(time_limit_s=2))
    assert run.best.objective <= run.heuristic.objective
    assert run.best.objective == max_load(p, run.best.solution.device_of) == 7
    assert run.best.status is Status.OPTIMAL


def test_the_first_progress_point_is_the_heuristics():
    # CP-SAT reports its warm start (HEFT's 12) and its proof at once: those points must come after HEFT's
    p = SchedulingProblem(((4, 4), (3, 3), (5, 5)), ((0, 1, 64), (0, 2, 64)), (1, 1),
                          ((-1, 0), (0, -1)), ((50,), (50,)))
    points = []
    run = Portfolio(HeftScheduler(), CpSatScheduler()).run(p, SolveOptions(time_limit_s=2, progress=points.append))
    assert points[0].source == "heuristic"
    assert (points[0].objective, points[0].bound) == (run.heuristic.objective, run.heuristic.bound)
    assert all(q.source == "search" for q in points[1:])
    assert points[-1].objective == run.best.objective


def test_no_heuristic_point_without_a_heuristic_solution():
    points = []
    Portfolio(_Recorder(), HeftScheduler()).run(_TWO_OPS, SolveOptions(time_limit_s=1, progress=points.append))
    assert points == []  # the recorder found nothing and HEFT, as the 'exact' solver here, reports no points


@pytest.mark.usefixtures("wide_net")
def test_best_with_exact_stop_reports_how_the_exact_search_ended_when_the_heuristic_wins():
    heuristic = SolveResult(Status.FEASIBLE, 9, None, "h", 0.1, "greedy", {"stopped_by": "finished"})
    exact = SolveResult(Status.FEASIBLE, 12, 5, "e", 1.0, "cpsat", {"stopped_by": "deterministic_budget"})
    run = PortfolioRun(best_of(heuristic, exact), heuristic, exact)
    assert run.best.solver_name == "greedy" and run.best.stats["stopped_by"] == "finished"
    reported = run.best_with_exact_stop()
    assert reported.stats["stopped_by"] == "deterministic_budget"
    assert (reported.objective, reported.bound, reported.solution) == (9, 5, "h")
    # without an exact run the heuristic's own words stay
    assert PortfolioRun(heuristic, heuristic, None).best_with_exact_stop() is heuristic
