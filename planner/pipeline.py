"""The planner's driver: one spec through every stage, by a table of objectives.

::

    spec (planner.spec)                          Spec
      └─ reduce (planner.reductions.*)           Problem      solver problem + inverse data
           └─ solve, invert (strategy)           Solved       plan in the user's names
                └─ memory (chained reduction)    MemoryPlanned   latency/throughput with memory: on
                     └─ lower, replay, verify    Lowered      binaries whose replay matches the plan
                          └─                     Outcome      written by planner.output

:data:`OBJECTIVES` maps each objective to its :class:`Route`: the reduction (spec → solver
problem and inverse), the strategy that solves and inverts it (every strategy returns a
:class:`~planner.stages.Solved`), whether memory planning chains after it, and what the
objective adds to the :class:`~planner.stages.Outcome`. Each stage is timed
(:func:`planner.stage_timing.stage`: solve, memory, lowering, replay; ``plan solve`` adds spec,
costing, numeric, writing and verify), and the latency/throughput strategy keeps part of the
time limit for the stages after the solve (:func:`planner.stage_timing.post_solve_reserve_s`).
A fleet spec (:mod:`planner.fleet`: many models on many processors) takes the ``"fleet"``
route, a :class:`FleetRoute`: its own reductions per co-location mode and no lowering, so it
returns a :class:`~planner.fleet.FleetResult`, which :func:`planner.fleet.write_fleet_outputs`
writes.

Examples
--------
>>> from planner.pipeline import run
>>> outcome = run("specs/taskgraph.yaml", time_limit_s=5, workers=1)
>>> outcome.plan.status, outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
(<PlanStatus.OPTIMAL: 'OPTIMAL'>, True)
>>> run("specs/fleet-colocation.yaml", time_limit_s=5, workers=1).allocation.status
'OPTIMAL'
>>> sorted(OBJECTIVES)
['fleet', 'islands', 'latency', 'max-load', 'throughput']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from planner.clock_stops import with_clock_stops
from planner.fleet import FleetResult, FleetSpec, is_fleet_spec, load_fleet_spec
from planner.fleet.pipeline import plan_fleet
from planner.islands import islands_outcome, solve_islands, to_split_problem
from planner.lower_and_replay import lower_stage
from planner.memory.addresses import collecting_net_stops
from planner.max_load import max_load_outcome, solve_max_load
from planner.reductions.max_load import to_placement_problem
from planner.reductions.memory import plan_memory_after
from planner.reductions.scheduling import to_problem
from planner.scheduling import solve_schedule
from planner.spec import Spec, load_spec
from planner.stage_timing import stage
from planner.stages import Outcome, Problem, RunSettings, Solved
from solvers.core import ProgressPoint

__all__ = ["Route", "FleetRoute", "OBJECTIVES", "route_name", "load", "run"]


def _as_is(outcome: Outcome, solved: Solved) -> Outcome:
    return outcome


@dataclass(frozen=True)
class Route:
    """How one objective is planned.

    ``reduce`` turns the spec into the solver's problem and its inverse data; ``solve``
    solves that :class:`~planner.stages.Problem` and inverts the result into a
    :class:`~planner.stages.Solved`; ``memory_planning`` says whether the memory-planning
    reduction chains after it (when the spec turns it on); ``finish`` adds what the
    objective reports to the outcome.
    """

    reduce: Callable[[Spec], tuple[Any, Any]]
    solve: Callable[[Problem], Solved]
    memory_planning: bool = False
    finish: Callable[[Outcome, Solved], Outcome] = _as_is

    def plan(self, spec: Spec, settings: RunSettings) -> Outcome:
        """Reduce, solve and invert, chain memory planning, lower and replay: the verified outcome
        (an address search the wall-clock net stopped on the way is in its ``solver``:
        :func:`~planner.clock_stops.with_clock_stops`)."""
        with stage("solve"):  # the reduction is timed on its own first: the stages are listed in first-run order
            problem = Problem(spec, settings, *self.reduce(spec))
        with stage("solve"):  # the stages nested in a strategy (its costing for lowering) count as theirs
            solved = self.solve(problem)
        memory = None
        with collecting_net_stops() as net_stops:
            if self.memory_planning and spec.memory.enabled:
                with stage("memory"):
                    memory = plan_memory_after(solved, spec, settings)
            chosen = solved.plan if memory is None else memory.plan
            lowered, listings, allocation = lower_stage(chosen, spec, None if memory is None else memory.memory_plan,
                                                        None if memory is None else memory.lowered)
        solver = with_clock_stops(chosen.solver, [(name, "wall_clock") for name in net_stops])
        plan = replace(chosen, solver=solver, wall_time_s=time.perf_counter() - settings.started_s)
        return self.finish(Outcome.of(solved, memory, lowered, plan=plan, listings=listings,
                                      allocation=allocation), solved)


@dataclass(frozen=True)
class FleetRoute:
    """How a fleet spec is planned: ``solve`` places the tenants in each co-location mode
    (each mode its own reduction, :mod:`planner.fleet.reduction`), picks the spec's mode and
    simulates backfill. There is nothing to lower: the outcome is the allocation.
    """

    solve: Callable[[FleetSpec, RunSettings], FleetResult] = plan_fleet

    def plan(self, spec: FleetSpec, settings: RunSettings) -> FleetResult:
        """The fleet's :class:`~planner.fleet.FleetResult` (timed as the solve stage)."""
        with stage("solve"):
            return self.solve(spec, settings)


#: Route name -> its route: a model spec's ``objective``, or ``"fleet"`` (:func:`route_name`).
OBJECTIVES: dict[str, Route | FleetRoute] = {
    "latency": Route(to_problem, solve_schedule, memory_planning=True),
    "throughput": Route(to_problem, solve_schedule, memory_planning=True),
    "max-load": Route(to_placement_problem, solve_max_load, finish=max_load_outcome),
    "fleet": FleetRoute(),
    # A latency/throughput spec whose hardware has two islands or more (planner.islands).
    "islands": Route(to_split_problem, solve_islands, memory_planning=True, finish=islands_outcome),
}


def route_name(spec: Spec | FleetSpec) -> str:
    """The :data:`OBJECTIVES` key that plans ``spec``: ``"fleet"`` for a fleet spec, else its objective.

    Examples
    --------
    >>> route_name(load("specs/throughput.yaml")), route_name(load("specs/fleet-backfill.yaml"))
    ('throughput', 'fleet')
    >>> route_name(load("specs/islands.yaml"))
    'islands'
    """
    if isinstance(spec, FleetSpec):
        return "fleet"
    if len(spec.hardware.islands) > 1 and spec.objective in ("latency", "throughput"):
        return "islands"
    return spec.objective


def load(spec_or_path: Spec | FleetSpec | str | Path | dict) -> Spec | FleetSpec:
    """A loaded spec: a fleet spec (it has a top-level ``fleet:`` key) or a model spec.

    Raises
    ------
    SpecError
        Bad input (one error naming the file, line and spec path).

    Examples
    --------
    >>> type(load("specs/demo.yaml")).__name__, type(load("specs/fleet-variants.yaml")).__name__
    ('Spec', 'FleetSpec')
    """
    if not isinstance(spec_or_path, (str, Path, dict)):
        return spec_or_path
    return load_fleet_spec(spec_or_path) if is_fleet_spec(spec_or_path) else load_spec(spec_or_path)


def run(spec_or_path: Spec | FleetSpec | str | Path | dict, *, time_limit_s: float | None = None,
        workers: int | None = None, seed: int | None = None,
        progress: Callable[[ProgressPoint], None] | None = None,
        solver_log: Callable[[str], None] | None = None, search: str | None = None) -> Outcome | FleetResult:
    """Plan a spec end to end and verify it by replaying the binaries (a fleet: allocate it).

    The spec's route (:func:`route_name`, :data:`OBJECTIVES`) plans it: a model spec gives an
    :class:`~planner.stages.Outcome` (:func:`planner.output.write_plan_dir` writes it), a
    fleet spec a :class:`~planner.fleet.FleetResult` (:func:`planner.fleet.write_fleet_outputs`).

    ``time_limit_s``, ``workers``, ``seed`` and ``search`` override the spec's ``solver:``
    settings. With ``search="deterministic"`` (the default) every solve stops on a budget of
    deterministic work calibrated from the time limit (:mod:`solvers.budget`), so the same
    spec, seed and workers give the same plan; ``plan.solver`` records ``search``,
    ``stopped_by`` and ``reproducible`` (False when the wall-clock safety net stopped a solve
    first, or with ``search="until-limit"``, which searches until the wall clock).

    Raises
    ------
    SpecError
        Bad input.
    InfeasibleError
        A valid spec that no plan satisfies (the message says which constraint).
    TimeLimitError
        No plan found within the time limit.
    InternalError
        A plan that fails its own checks (a bug).
    """
    spec = load(spec_or_path)
    settings = RunSettings.of(spec, time_limit_s, workers, seed, search, progress, solver_log)
    return OBJECTIVES[route_name(spec)].plan(spec, settings)
