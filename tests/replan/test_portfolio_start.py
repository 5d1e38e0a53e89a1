"""A Portfolio with a start (a warm start) beside its heuristic and exact solver: the exact solver
starts from the better of the two, the result is the best of the three and names its source; the
max-load ``--warm-start`` route uses it, so a poor start never leaves the plan worse than the greedy split."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.max_load import GivenPlacement
from planner.reductions.max_load import EXAMPLE, to_placement_problem
from planner.spec import load_spec
from planner.stages import Problem, RunSettings
from planner.max_load import solve_max_load
from solvers.core import Accepting, SolveOptions, SolveResult, Status
from solvers.portfolio import Portfolio


@dataclass(frozen=True)
class Fixed(Accepting):
    """A solver that returns one objective (None: no solution) and records the hint it was given."""

    name: str
    objective: int | None
    seen_hints: list = field(default_factory=list, compare=False)
    problem_type: Any = object

    def solve(self, problem: Any, options: SolveOptions = SolveOptions()) -> SolveResult:
        self.seen_hints.append(options.hint)
        if self.objective is None:
            return SolveResult(Status.UNKNOWN, None, None, None, 0.0, self.name)
        return SolveResult(Status.FEASIBLE, self.objective, None, f"{self.name}-solution", 0.0, self.name)


def test_the_heuristic_wins_over_a_poor_start_and_hints_the_exact_solver():
    exact = Fixed("exact", None)
    run = Portfolio(Fixed("heuristic", 12), exact, start=Fixed("start", 20)).run(object())
    assert exact.seen_hints == ["heuristic-solution"]
    assert (run.best.objective, run.best.solver_name, run.best.solution) == (12, "heuristic", "heuristic-solution")
    assert run.heuristic.objective == 12
    facts = run.best.stats["portfolio"]
    assert (facts["start_objective"], facts["plain_heuristic_objective"]) == (20, 12)


def test_a_start_that_ties_the_heuristic_is_kept_and_hints_the_exact_solver():
    exact = Fixed("exact", 15)
    run = Portfolio(Fixed("heuristic", 12), exact, start=Fixed("start", 12)).run(object())
    assert exact.seen_hints == ["start-solution"]
    assert (run.best.objective, run.best.solver_name) == (12, "start")


def test_the_exact_solver_wins_when_it_improves_on_both():
    run = Portfolio(Fixed("heuristic", 12), Fixed("exact", 9), start=Fixed("start", 11)).run(object())
    assert (run.best.objective, run.best.solver_name) == (9, "exact")
    assert Portfolio(Fixed("h", 1), Fixed("e", 1), start=Fixed("s", 1)).name == "s+h+e"


def test_without_a_start_the_portfolio_is_unchanged():
    exact = Fixed("exact", 15)
    run = Portfolio(Fixed("heuristic", 12), exact).run(object())
    assert exact.seen_hints == ["heuristic-solution"] and "start" not in run.best.stats["portfolio"]
    assert (run.best.objective, run.best.solver_name) == (12, "heuristic")
    assert "start" not in run.best.stats["portfolio"]


def test_a_max_load_warm_start_worse_than_the_greedy_split_never_leaves_the_plan_worse():
    """EXAMPLE: both ops on acc0 is 60, the split 40 (module docstring of planner.max_load); from the
    all-on-acc0 start the plan is 40, and the record keeps the start's 60."""
    spec = load_spec(EXAMPLE)
    problem, reduction = to_placement_problem(spec)
    start = {op: "acc0" for op in reduction.op_names}
    assert GivenPlacement.of(reduction, start).solve(problem).objective == 60
    solved = solve_max_load(Problem(spec, RunSettings.of(spec, time_limit_s=2, workers=1), problem, reduction),
                            start=start, start_name="warm-start")
    assert solved.plan.objective == 40
    assert solved.result.stats["portfolio"]["start_objective"] == 60
    assert solved.plan.solver["name"] in ("warm-start", "greedy", "cpsat-placement")


def _chain_split_problem():
    """solvers.islands.split's docstring: four 10-cycle portions in a chain on two one-lane islands, each
    cut edge 4 network cycles: the best split cuts once (bottleneck 20); all on one island is 40."""
    from solvers.islands import SplitProblem
    return SplitProblem(portion_work=((10, 10),) * 4, portion_memory=(0,) * 4, island_lanes=(1, 1),
                        island_memory=(100, 100), edges=((0, 1, 8), (1, 2, 8), (2, 3, 8)), network_cycles=(4, 4, 4))


def test_the_islands_split_from_a_poor_start_is_never_worse_than_cpsat_and_from_a_good_one_keeps_it():
    from planner.islands.route import GivenSplit
    from solvers.islands import CpSatSplitSolver
    p = _chain_split_problem()
    options = SolveOptions(time_limit_s=2)
    assert GivenSplit((0, 0, 0, 0)).solve(p).objective == 40
    poor = Portfolio(GivenSplit((0, 0, 0, 0)), CpSatSplitSolver()).solve(p, options)
    assert (poor.objective, poor.solver_name, poor.status.value) == (20, "cpsat-split", "OPTIMAL")
    good = Portfolio(GivenSplit((1, 1, 0, 0)), CpSatSplitSolver()).solve(p, options)
    assert good.objective == 20 and good.stats["portfolio"]["heuristic_objective"] == 20
    assert GivenSplit((0, 5, 0, 0)).solve(p).status is Status.UNKNOWN  # no island 5: not a split


def test_an_islands_warm_start_split_puts_each_portion_where_most_of_its_ops_were():
    from planner.islands.portions import to_split_problem
    from planner.islands.route import _start_split
    from tests.replan.test_islands_and_max_load import TWO_ISLANDS
    spec = load_spec(TWO_ISLANDS)
    _, portions = to_split_problem(spec)
    placement = {f"m/o{i}": ("a0" if i <= 4 else "b1") for i in range(1, 9)}
    expected = tuple(0 if all(int(op.rsplit("o", 1)[1]) <= 4 for op in ops) else 1 for ops in portions.ops_of)
    assert _start_split(spec, portions, placement) == expected
    assert _start_split(spec, portions, {"m/o1": "a0"}) is None  # a portion with no placed op: no start
