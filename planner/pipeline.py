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
time limit for the stages after the solve (:func:`planner.stage_timing.post_solve_reserve_s`). Fleets (:mod:`planner.fleet`) have
their own spec and outputs; :func:`planner.fleet.solve_fleet` is their route.

Examples
--------
>>> from planner.pipeline import run
>>> outcome = run("specs/taskgraph.yaml", time_limit_s=5, workers=1)
>>> outcome.plan.status, outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
(<PlanStatus.OPTIMAL: 'OPTIMAL'>, True)
>>> sorted(OBJECTIVES)
['latency', 'max-load', 'throughput']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from planner.lower_and_replay import lower_stage
from planner.max_load import max_load_outcome, solve_max_load
from planner.reductions.max_load import to_placement_problem
from planner.reductions.memory import plan_memory_after
from planner.reductions.scheduling import to_problem
from planner.scheduling import solve_schedule
from planner.spec import Spec, load_spec
from planner.stage_timing import stage
from planner.stages import Outcome, Problem, RunSettings, Solved
from solvers.core import ProgressPoint

__all__ = ["Route", "OBJECTIVES", "run"]


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


#: Objective kind -> its route (the spec's ``objective``).
OBJECTIVES: dict[str, Route] = {
    "latency": Route(to_problem, solve_schedule, memory_planning=True),
    "throughput": Route(to_problem, solve_schedule, memory_planning=True),
    "max-load": Route(to_placement_problem, solve_max_load, finish=max_load_outcome),
}


def run(spec_or_path: Spec | str | Path | dict, *, time_limit_s: float | None = None, workers: int | None = None,
        seed: int | None = None, progress: Callable[[ProgressPoint], None] | None = None,
        solver_log: Callable[[str], None] | None = None, search: str | None = None) -> Outcome:
    """Plan a spec end to end and verify it by replaying the binaries.

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
    spec = load_spec(spec_or_path) if isinstance(spec_or_path, (str, Path, dict)) else spec_or_path
    settings = RunSettings.of(spec, time_limit_s, workers, seed, search, progress, solver_log)
    route = OBJECTIVES[spec.objective]
    with stage("solve"):  # the reduction is timed on its own first: the stages are listed in first-run order
        problem = Problem(spec, settings, *route.reduce(spec))
    with stage("solve"):  # the stages nested in a strategy (its costing for lowering) count as theirs
        solved = route.solve(problem)
    memory = None
    if route.memory_planning and spec.memory.enabled:
        with stage("memory"):
            memory = plan_memory_after(solved, spec, settings)
    chosen = solved.plan if memory is None else memory.plan
    lowered, listings, allocation = lower_stage(chosen, spec, None if memory is None else memory.memory_plan,
                                                None if memory is None else memory.lowered)
    plan = replace(chosen, wall_time_s=time.perf_counter() - settings.started_s)
    return route.finish(Outcome.of(solved, memory, lowered, plan=plan, listings=listings, allocation=allocation),
                        solved)
