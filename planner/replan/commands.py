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
from planner.pipeline import OBJECTIVES, Route, route_name
from planner.reductions.scheduling import to_problem
from planner.replan.placement import check_placement, pin, read_placement, usable_placement
from planner.replan.warm import with_warm_start_section
from planner.scheduling import solve_schedule
from planner.spec import Spec
from planner.stages import Outcome, RunSettings

__all__ = ["warm_started", "solve_warm", "score_placement", "scored", "warm_start_lines", "check_flat_route"]


def check_flat_route(spec: Spec, command: str) -> None:
    """Refuse a spec the planner does not plan on the flat latency/throughput route (max-load, islands).

    Raises
    ------
    SpecError
        Such a spec, naming ``command``.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> check_flat_route(load_spec("specs/islands.yaml"), "plan score")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: plan score takes latency and throughput specs without islands; this spec is planned by the islands route
    """
    name = route_name(spec)
    if name not in ("latency", "throughput"):
        raise SpecError(f"{command} takes latency and throughput specs without islands; this spec is planned by "
                        f"the {name} route")


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
    check_flat_route(spec, "plan solve --warm-start")
    route = replace(OBJECTIVES[spec.objective], solve=partial(solve_schedule, warm_start=usable_placement(placement, spec)),
                    finish=with_warm_start_section)
    return route.plan(spec, RunSettings.of(spec, time_limit_s, workers, seed, search, progress))


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
    check_flat_route(spec, "plan score")
    placement = check_placement(placement, spec, source)
    route = Route(_pinned_reduction(placement, built), partial(solve_schedule, warm_start=placement, exact=exact),
                  memory_planning=True, finish=partial(_given_placement, source))
    return route.plan(spec, RunSettings.of(spec, time_limit_s, workers, seed, search, progress))


def _given_placement(source: str, outcome: Outcome, solved: Any) -> Outcome:
    """A scored plan says so: ``solver.placement`` in plan.json and a report.md section."""
    plan = replace(outcome.plan, solver={**outcome.plan.solver, "placement": "given"})
    section = (f"## Placement given\n\n`plan score` placed every op as {Path(source).name} says and did not "
               "optimise the placement: the status, bound and gap are those of the schedule for that placement.")
    return replace(outcome, plan=plan, report_sections=(*outcome.report_sections, section))


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
    return {"warm_start": warm}, [f"warm start: {warm['ops_placed']} of {warm['ops']} ops placed as in the "
                                  f"previous plan (its schedule: objective {warm['objective']})"]

