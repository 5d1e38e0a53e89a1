"""The latency and throughput strategy: HEFT, then the size strategy warm-started from it (a portfolio),
inverted into a plan.

:func:`best_of_heuristic_and_exact` runs the heuristic and the exact scheduler (:func:`solver_choice`:
:class:`solvers.hierarchical.StrategyScheduler`, flat CP-SAT or hierarchical placement by size and the
spec's ``solver.strategy``) as a :class:`~solvers.portfolio.Portfolio` on a
:class:`~solvers.scheduling.SchedulingProblem` and checks every schedule either returns
(:func:`solvers.scheduling.validate_schedule`); :func:`solve_schedule` is the strategy of
:mod:`planner.pipeline`'s objective table: it keeps part of the time limit for the stages after
the solve (:func:`planner.stage_timing.post_solve_reserve_s`), maps the solver's statuses to the
user's errors and inverts the schedule into a :class:`~planner.stages.Solved` stage
(:func:`planner.reductions.scheduling.from_solution`).

Examples
--------
>>> from planner.reductions.scheduling import to_problem
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/taskgraph.yaml")
>>> solved = solve_schedule(Problem(spec, RunSettings.of(spec, time_limit_s=2, workers=1), *to_problem(spec)))
>>> solved.plan.objective >= solved.plan.bound, solved.plan.objective <= solved.plan.heuristic_objective
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping

from planner.errors import InfeasibleError, InternalError, TimeLimitError
from planner.isa.resources import determine_resources
from planner.reductions.scheduling import explain_infeasible, from_solution
from planner.spec import Spec
from planner.stage_timing import post_solve_reserve_s, stage
from planner.stages import Problem, RunSettings, Solved
from planner.verify.numeric import NUMERIC_DEFAULT_MAX_MACS
from solvers.budget import run_summary
from solvers.core import Accepting, SolveOptions, SolveResult, Solver, Status, failure_result
from solvers.hierarchical import StrategyOptions, StrategyScheduler
from solvers.portfolio import Portfolio
from solvers.scheduling import HeftScheduler, SchedulingProblem, SchedulingSolution, validate_schedule
from solvers.scheduling.problem import FORBIDDEN

__all__ = ["solver_choice", "best_of_heuristic_and_exact", "solve_schedule", "run_reserve_s", "pin_devices",
           "PlacementStart"]


def _check_solution(problem: SchedulingProblem, result: SolveResult) -> None:
    violations = validate_schedule(problem, result.solution)
    if violations:
        raise InternalError(f"{result.solver_name} returned an invalid schedule:\n  " + "\n  ".join(violations[:20]))


def solver_choice(spec: Spec | None = None) -> tuple[Solver, Solver]:
    """The heuristic that gives the baseline and the warm start, and the scheduler that runs:
    the size strategy with the spec's ``solver.strategy`` and ``solver.groups`` (``auto``
    without a spec: flat CP-SAT up to its size limit, hierarchical placement above).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> heuristic, exact = solver_choice(load_spec("specs/taskgraph.yaml"))
    >>> heuristic.name, exact.name, exact.config.strategy
    ('heft', 'strategy', 'auto')
    """
    strategy = StrategyOptions(strategy=getattr(spec, "strategy", "auto"), groups=getattr(spec, "groups", None))
    return HeftScheduler(), StrategyScheduler(strategy)


def pin_devices(problem: SchedulingProblem, device_of: tuple[int, ...]) -> SchedulingProblem:
    """``problem`` with op ``i`` allowed on device ``device_of[i]`` only (-1: as it was).
    Device classes are dropped: pinned devices are no longer interchangeable.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> pin_devices(p, (1, -1)).durations_cycles
    ((-1, 4), (3, 3))
    """
    rows = tuple(row if d < 0 or row[d] == FORBIDDEN else tuple(c if i == d else FORBIDDEN for i, c in enumerate(row))
                 for d, row in zip(device_of, problem.durations_cycles))
    return replace(problem, durations_cycles=rows, device_class=())


@dataclass(frozen=True)
class PlacementStart(Accepting):
    """A warm start from a previous placement: HEFT with op ``i`` pinned to device ``device_of[i]``
    (-1: HEFT places it). Its schedule is valid for the unpinned problem too, so the exact
    scheduler takes it as its hint (``plan solve --warm-start``).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> r = PlacementStart((1, 1)).solve(p)
    >>> r.solver_name, r.solution.op_device, r.objective
    ('warm-start', (1, 1), 7)
    """

    device_of: tuple[int, ...]
    name: str = "warm-start"
    problem_type: ClassVar[type] = SchedulingProblem

    @classmethod
    def of(cls, reduction: Any, placement: Mapping[str, str]) -> "PlacementStart":
        """The start keeping ``placement`` (``{op: device}`` by name; ops it lacks are left to HEFT)."""
        device_index = {name: i for i, name in enumerate(reduction.device_names)}
        return cls(tuple(device_index.get(placement.get(name, ""), -1) for name in reduction.op_names))

    @property
    def covered(self) -> int:
        """How many ops the previous placement places."""
        return sum(1 for d in self.device_of if d >= 0)

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        """HEFT on the pinned problem."""
        result = HeftScheduler().solve(pin_devices(problem, self.device_of), options)
        return replace(result, solver_name=self.name)


def best_of_heuristic_and_exact(problem: SchedulingProblem, options: SolveOptions,
                                solvers: tuple[Solver, Solver] | None = None,
                                start: Solver | None = None) -> tuple[SolveResult, SolveResult]:
    """The heuristic, then the exact scheduler warm-started from it: :class:`solvers.portfolio.Portfolio`.

    ``solvers`` is ``(heuristic, exact)``, by default :func:`solver_choice`'s. Returns the
    heuristic's result (the baseline the report shows) and the portfolio's (the better of
    the two, never worse than the heuristic), each schedule checked. With ``start`` (a warm
    start, :class:`PlacementStart`) the portfolio has three candidates: the exact scheduler is
    hinted from the better of the start's and the heuristic's schedules (the start's on a tie),
    and the result is the best of the three, so never worse than the start or the heuristic (a
    poor start, such as every op on one device, must not leave the plan worse than a cold
    solve's heuristic).

    Examples
    --------
    >>> from planner.reductions.scheduling import to_problem
    >>> from planner.spec import load_spec
    >>> problem, _ = to_problem(load_spec("specs/taskgraph.yaml"))
    >>> heft, best = best_of_heuristic_and_exact(problem, SolveOptions(time_limit_s=2, num_workers=1))
    >>> heft.solver_name, best.objective <= heft.objective
    ('heft', True)
    """
    heuristic_solver, exact_solver = solvers or solver_choice()
    run = Portfolio(heuristic_solver, exact_solver, start=start).run(problem, options)
    if start is not None:
        run = run._replace(best=_named_if_the_heuristic_won(heuristic_solver, run.best))
    checked: set[int] = set()  # the best is one of the others: each schedule is checked once (10^4 ops: ~0.3 s)
    for result in (run.heuristic, run.exact, run.best):
        if result is not None and result.status.has_solution and id(result.solution) not in checked:
            _check_solution(problem, result)
            checked.add(id(result.solution))
    heuristic = run.heuristic or failure_result(Status.UNKNOWN, heuristic_solver.name, 0.0)  # it refused
    return heuristic, run.best


def _named_if_the_heuristic_won(heuristic: Solver, best: SolveResult) -> SolveResult:
    """A warm-started result that is the plain heuristic's schedule says so in its name (a poor
    start, e.g. every op on one device, that the budget could not repair)."""
    if best.solver_name != heuristic.name:
        return best
    return replace(best, solver_name=f"{best.solver_name} (better than the warm start)")


def solve_schedule(problem: Problem, warm_start: Mapping[str, str] | None = None,
                   exact: Solver | None = None) -> Solved:
    """The latency/throughput strategy: solve the scheduling reduction and invert it into a plan.

    ``warm_start`` is a previous placement ``{op: device}`` (already cut to the ops and devices
    that still apply: :func:`planner.replan.placement.usable_placement`): the exact solve starts
    from it and ``plan.solver["warm_start"]`` says how many ops it placed. ``exact`` replaces the
    exact scheduler of :func:`solver_choice` (``plan replan`` keeps a plan's own schedule so).

    Raises
    ------
    InfeasibleError
        The solver proved that no schedule satisfies the constraints (the message says which).
    TimeLimitError
        No schedule found within the time limit.
    InternalError
        An invalid model or schedule (a bug).
    """
    spec, settings = problem.spec, problem.settings
    sproblem, reduction = problem.solver_problem, problem.inverse
    with stage("lowering"):
        resources = determine_resources(spec.graph, spec.hardware)
    # The solve leaves part of the limit to lowering, replay, numeric replay and writing: a
    # function of the graph, so the deterministic budget still depends on the spec alone.
    reserve_s = post_solve_reserve_s(sproblem.num_ops, _numeric_macs(resources), settings.time_limit_s)
    options = settings.solve_options(time_limit_s=settings.time_limit_s - reserve_s)
    start = None if warm_start is None else PlacementStart.of(reduction, warm_start)
    heuristic_solver, exact_solver = solver_choice(spec)
    heuristic, result = best_of_heuristic_and_exact(sproblem, options, (heuristic_solver, exact or exact_solver), start)
    if result.status is Status.INFEASIBLE:
        raise InfeasibleError(explain_infeasible(spec, sproblem))
    if result.status is Status.MODEL_INVALID:
        raise InternalError(f"the CP-SAT model is invalid: {result.stats}")
    if not result.status.has_solution:
        raise TimeLimitError(
            f"no plan found within {settings.time_limit_s:g} s (status {result.status.value}); "
            "raise --time-limit or relax the constraints")
    plan = from_solution(
        result, reduction, sproblem, spec_name=spec.name,
        heuristic_objective=int(heuristic.objective) if heuristic.status.has_solution else None,
        solver_info=_solver_info(settings, result, heuristic, reserve_s, start),
        resources=resources.to_dict() if hasattr(resources, "to_dict") else dict(resources))
    return Solved(plan, sproblem, reduction, result, heuristic, post_solve_reserve_s=reserve_s)


def run_reserve_s(spec: Spec, time_limit_s: float) -> float:
    """The part of a run's ``time_limit_s`` kept for the stages after the solve, for a route that
    splits the rest among several solves of its own (the verifier checks plan.json's figure is this)."""
    return post_solve_reserve_s(len(spec.graph.ops),
                                _numeric_macs(determine_resources(spec.graph, spec.hardware)), time_limit_s)


def _numeric_macs(resources: Any) -> int:
    """The multiply-accumulates the numeric replay will execute by default: the graph's, or 0
    when they are over its default limit (then it is skipped)."""
    macs = sum(op.macs for op in resources.ops.values())
    return macs if macs <= NUMERIC_DEFAULT_MAX_MACS else 0


def _solver_info(settings: RunSettings, result: SolveResult, heuristic: SolveResult,
                 reserve_s: float, start: PlacementStart | None = None) -> dict[str, Any]:
    """plan.json's ``solver`` record of a latency or throughput run."""
    warm = {} if start is None else {"warm_start": {
        "ops_placed": start.covered, "ops": len(start.device_of),
        "objective": result.stats.get("portfolio", {}).get("start_objective")}}
    return {**warm, "name": result.solver_name, "heuristic": heuristic.solver_name, "workers": settings.workers,
            "seed": settings.seed, "time_limit_s": settings.time_limit_s, "post_solve_reserve_s": reserve_s,
            **run_summary(settings.search, [result.stats.get("stopped_by")]),
            **_strategy_info(result.stats)}


def _strategy_info(stats: dict[str, Any]) -> dict[str, Any]:
    """What plan.json's solver dict says about the strategy that ran (when one did)."""
    if "strategy" not in stats:
        return {}
    info = {"strategy": stats["strategy"], "strategy_requested": stats.get("requested_strategy", "auto")}
    stages = stats.get("strategy_stages", {})
    groups = stages.get("placer", {}).get("groups")
    if groups is not None:
        info["groups"] = groups
    if stats["strategy"] == "hierarchical":  # which stages ran, in order, and why one was skipped
        info["stages"] = {name: stage.get("skipped", "ran") for name, stage in stages.items() if name != "charged"}
    return info
