"""What ``plan solve --warm-start`` and ``plan score`` plan with, in place of :func:`planner.pipeline.run`.

Each returns a function ``plan_with(spec, **run_settings)`` that ``plan solve``'s body calls
instead of :func:`planner.pipeline.run`, and (for the report) what the command adds; nothing
here prints.

Examples
--------
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/taskgraph.yaml")
>>> outcome = score_placement(spec, {"tg/a": "fast0", "tg/b": "fast0", "tg/c": "slow0", "tg/d": "fast0"},
...                           time_limit_s=5, workers=1)
>>> outcome.plan.objective, {o.name: o.device for o in outcome.plan.ops}["tg/c"]
(6400, 'slow0')
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping

from planner.errors import SpecError
from planner.islands import solve_islands
from planner.max_load import GivenPlacement, solve_max_load
from planner.islands.gang import align_gangs, replayed_gang_record
from planner.pipeline import OBJECTIVES, Route, route_name
from planner.reductions.scheduling import to_problem
from planner.replan.placement import check_placement, pin, read_placement, usable_placement
from planner.scheduling import solve_schedule
from planner.spec import Spec
from planner.stages import Outcome, Problem, RunSettings, Solved

__all__ = ["warm_started", "solve_warm", "score_placement", "scored", "warm_start_lines", "check_route",
           "check_gangs", "PLACEMENT_ROUTES"]


#: The routes a given placement can be planned on: a flat machine's, and the islands' (whose plan is the
#: global schedule of a placement, so a given one takes the split's and the per-island solves' place).
PLACEMENT_ROUTES = ("latency", "throughput", "islands", "max-load")


def check_route(spec: Spec, command: str, routes: tuple[str, ...] = PLACEMENT_ROUTES) -> None:
    """Refuse a spec whose route ``command`` does not plan (every route in ``routes``; fleet specs
    are refused before this).

    Raises
    ------
    SpecError
        Such a spec, naming ``command``.

    Examples
    --------
    >>> from planner.reductions.max_load import EXAMPLE
    >>> from planner.spec import load_spec
    >>> try:
    ...     check_route(load_spec(EXAMPLE), "a command", ("latency", "throughput", "islands"))
    ... except SpecError as error:
    ...     print(error)
    a command takes latency, throughput and islands specs; this spec is planned by the max-load route
    """
    name = route_name(spec)
    if name not in routes:
        raise SpecError(f"{command} takes {', '.join(routes[:-1])} and {routes[-1]} specs; this spec is planned "
                        f"by the {name} route")


def check_gangs(spec: Spec, placement: Mapping[str, str], source: str) -> None:
    """A placement keeps every gang (``constraints.gang``) in one island, one shard per device.

    Raises
    ------
    SpecError
        A gang split over islands or with two shards on one device.
    """
    island_of = {d: island.name for island in spec.hardware.islands for d in island.devices}
    for k, gang in enumerate(spec.gangs):
        devices = [placement[op] for op in gang]
        if len({island_of.get(d) for d in devices}) > 1:
            raise SpecError(f"{source}: the gang constraints.gang[{k}] ({', '.join(gang)}) is placed over several "
                            "islands; a gang's shards run in one island")
        if len(set(devices)) < len(devices):
            raise SpecError(f"{source}: the gang constraints.gang[{k}] ({', '.join(gang)}) has two shards on one "
                            "device; a gang's shards start together, each on its own device")


def warm_started(plan_dir: Path | None) -> Callable[..., Any] | None:
    """``plan solve --warm-start DIR``: :func:`planner.pipeline.run` warm-started from DIR's placement
    (None without a DIR).

    Raises
    ------
    SpecError
        DIR is not a plan directory.
    """
    if plan_dir is None:
        return None
    if not Path(plan_dir).is_dir():
        raise SpecError(f"--warm-start {plan_dir}: expected a plan directory `plan solve` wrote")
    return partial(solve_warm, read_placement(plan_dir))


def solve_warm(placement: Mapping[str, str], spec: Spec, *, time_limit_s: float | None = None,
               workers: int | None = None, seed: int | None = None, search: str | None = None,
               progress: Callable | None = None) -> Outcome:
    """:func:`planner.pipeline.run` warm-started from a previous placement ``{op: device}``: the
    ops that still exist keep their devices where they still may, new ops are placed by the
    heuristic, and the plan is never worse than that start (when it is feasible).

    Raises
    ------
    SpecError
        A spec whose objective is not latency or throughput.
    """
    if not isinstance(spec, Spec):
        raise SpecError("a warm start applies to model specs, not fleet specs")
    check_route(spec, "plan solve --warm-start")
    usable = usable_placement(placement, spec)
    name = route_name(spec)
    # Each records ``solver.warm_start``, which report.md's warm-start section is drawn from.
    if name == "islands":  # the islands route warm-started (planner.islands.route.solve_islands)
        route = replace(OBJECTIVES[name], solve=partial(solve_islands, warm_start=usable))
    elif name == "max-load":  # CP-SAT's placement starts from the previous one when it places every op
        route = replace(OBJECTIVES[name], solve=partial(_max_load_warm, usable))
    else:
        route = replace(OBJECTIVES[name], solve=partial(solve_schedule, warm_start=usable))
    return route.plan(spec, RunSettings.of(spec, time_limit_s, workers, seed, search, progress))


def _then_given(finish: Callable[[Outcome, Any], Outcome], source: str, outcome: Outcome, solved: Any) -> Outcome:
    return _given_placement(source, finish(outcome, solved), solved)


def _max_load_warm(usable: Mapping[str, str], problem: Problem) -> Solved:
    """The max-load strategy started from a previous placement (when it places every op), with
    ``plan.solver["warm_start"]`` saying how much of it applied."""
    ops = problem.spec.graph.ops
    complete = all(op in usable for op in ops)
    solved = solve_max_load(problem, start=dict(usable) if complete else None, start_name="warm-start")
    objective = None
    if complete:
        _, reduction = problem.solver_problem, problem.inverse
        objective = int(GivenPlacement.of(reduction, usable).solve(problem.solver_problem).objective)
    warm = {"ops_placed": len(usable), "ops": len(ops), "objective": objective}
    return replace(solved, plan=replace(solved.plan, solver={**solved.plan.solver, "warm_start": warm}))


def _pinned_reduction(placement: Mapping[str, str], built: tuple[Any, Any] | None) -> Callable[[Spec], tuple[Any, Any]]:
    def reduce(spec: Spec) -> tuple[Any, Any]:
        problem, reduction = built or to_problem(spec)
        return pin(problem, reduction, placement), reduction
    return reduce


def score_placement(spec: Spec, placement: Mapping[str, str], *, time_limit_s: float | None = None,
                    workers: int | None = None, seed: int | None = None, search: str | None = None,
                    progress: Callable | None = None, source: str = "--placement",
                    built: tuple[Any, Any] | None = None, exact: Any = None) -> Outcome:
    """A given placement scheduled (each op on its device), lowered, replayed: the placement is
    not optimised, only the order and start of the ops on each device and the transfers.

    ``built`` is ``to_problem(spec)`` when the caller has it already (so it is built once);
    ``exact`` replaces the exact scheduler (``plan replan`` keeps a plan's schedule so:
    :class:`planner.replan.kept.KeptSchedule`).

    Raises
    ------
    SpecError
        A placement that does not place every op of ``spec`` on a device it may run on, or a
        spec whose objective is not latency or throughput.
    """
    check_route(spec, "plan score")
    placement = check_placement(placement, spec, source)
    check_gangs(spec, placement, source)
    if route_name(spec) == "max-load":  # the placement's max-load and its one-sample schedule
        route = replace(OBJECTIVES["max-load"], solve=partial(solve_max_load, start=placement, start_name="given"),
                        finish=partial(_then_given, OBJECTIVES["max-load"].finish, source))
        return route.plan(spec, RunSettings.of(spec, time_limit_s, workers, seed, search, progress))
    route = Route(_pinned_reduction(placement, built), partial(_schedule_given, placement, exact),
                  memory_planning=True, finish=partial(_given_placement, source))
    return route.plan(spec, RunSettings.of(spec, time_limit_s, workers, seed, search, progress))


def _schedule_given(placement: Mapping[str, str], exact: Any, problem: Problem) -> Solved:
    """The pinned problem scheduled; on islands every gang then starts on one cycle (the islands
    route's global schedule, :func:`planner.islands.gang.align_gangs`)."""
    solved = solve_schedule(problem, warm_start=placement, exact=exact)
    if not problem.spec.gangs:
        return solved
    solved = align_gangs(solved, problem.spec)
    starts = {o.name: o.start_cycle for o in solved.plan.ops}
    gangs = [{"ops": list(g), "start_cycle": starts[g[0]]} for g in problem.spec.gangs]
    return replace(solved, plan=replace(solved.plan, solver={**solved.plan.solver, "gangs": gangs}))


def _given_placement(source: str, outcome: Outcome, solved: Any) -> Outcome:
    """A scored plan says so: ``solver.placement`` in plan.json (report.md's section is drawn from it,
    :func:`planner.report.sections.given_placement_section`); on islands, the replayed binaries
    start every gang on the cycle the plan says."""
    solver = dict(outcome.plan.solver)
    if solver.get("gangs"):  # as the final plan starts them (memory planning re-times)
        solver["gangs"] = replayed_gang_record(outcome.plan, outcome.simulation.ops,
                                               [g["ops"] for g in solver["gangs"]])
    # The source's name too: report.md names it, and the verifier redraws report.md from plan.json.
    plan = replace(outcome.plan, solver={**solver, "placement": "given", "placement_source": Path(source).name})
    return replace(outcome, plan=plan)


def scored(source: Path) -> Callable[..., Outcome]:
    """``plan score --placement SOURCE``: :func:`score_placement` of SOURCE's placement."""
    placement = read_placement(source)

    def plan_with(spec: Spec, **settings: Any) -> Outcome:
        if not isinstance(spec, Spec):
            raise SpecError("plan score evaluates a model spec, not a fleet spec")
        return score_placement(spec, placement, source=str(source), **settings)
    return plan_with


def warm_start_lines(outcome: Outcome) -> tuple[dict[str, Any], list[str]]:
    """What ``plan solve --warm-start`` adds: the JSON field and the line saying how much it covered."""
    warm = outcome.plan.solver.get("warm_start")
    if warm is None:
        return {}, []
    line = f"warm start: {warm['ops_placed']} of {warm['ops']} ops placed as in the previous plan"
    return {"warm_start": warm}, [line + ("" if warm["objective"] is None else
                                          f" (its schedule: objective {warm['objective']})")]

