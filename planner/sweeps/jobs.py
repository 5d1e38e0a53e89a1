"""One scenario of a sweep, planned or found done: the unit of work the backends run.

A scenario is planned through the normal pipeline and written by
:func:`planner.output.write_plan_dir` (verified before it is put in place), so its directory is
either complete and verified or absent. A scenario counts as done when its directory exists,
holds only what plan wrote, and passes :func:`planner.verify.verify_plan_dir` again. A fleet
scenario (``fleet=True``) is allocated and checked by :mod:`planner.sweeps.fleet_jobs` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from planner.errors import EXIT_INFEASIBLE, EXIT_NO_SOLUTION, PlannerError
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.safe_output import is_plan_output
from planner.spec import load_spec
from planner.sweeps.fleet_jobs import finished_fleet_allocation, plan_fleet_scenario
from planner.sweeps.table import FLEET_TAIL, failed_row, fleet_row, scenario_row
from planner.verify import verify_plan_dir

__all__ = ["ScenarioJob", "run_job", "finished_row"]


@dataclass(frozen=True)
class ScenarioJob:
    """Everything a worker process (or a Ray task) needs to plan one scenario; plain picklable data."""

    name: str
    values: tuple[tuple[str, Any], ...]
    spec: Mapping[str, Any]
    base_dir: str
    target: str
    inputs: tuple[str, ...]
    time_limit_s: float | None = None
    workers: int | None = None
    seed: int | None = None
    search: str | None = None
    numeric: str = "default"
    fleet: bool = False  # a fleet spec's scenario (planner.sweeps.fleet_jobs)
    priced: bool = False  # a fleet spec that prices its pools: its cost column is a cost


_NO_PLAN = {EXIT_INFEASIBLE: "INFEASIBLE", EXIT_NO_SOLUTION: "NO_PLAN"}


def run_job(job: ScenarioJob) -> tuple[dict[str, Any], bool]:
    """One scenario's table row, and whether it was done before (its directory verified, not planned again).

    Otherwise the scenario is planned, written and verified. An infeasible scenario, or one
    without a plan within its time limit, gives a row with that status and the message; any
    other error propagates (bad input, or a bug). The check of a finished directory replays
    it, so it runs here, in the worker, in parallel with the others.
    """
    row = finished_row(job)
    if row is not None:
        return row, True
    if job.fleet:
        return _run_fleet_job(job), False
    try:
        spec = load_spec(dict(job.spec), base_dir=job.base_dir)
        outcome = run(spec, time_limit_s=job.time_limit_s, workers=job.workers, seed=job.seed, search=job.search)
        verdict = write_plan_dir(outcome, spec, Path(job.target), numeric=job.numeric, inputs=job.inputs)
    except PlannerError as e:
        if e.exit_code not in _NO_PLAN:
            raise
        return failed_row(job.name, job.values, _NO_PLAN[e.exit_code], str(e)), False
    return scenario_row(job.name, job.values, verdict.plan, verdict.simulation), False


def _run_fleet_job(job: ScenarioJob) -> dict[str, Any]:
    try:
        allocation = plan_fleet_scenario(job.spec, job.base_dir, job.target, job.inputs,
                                         time_limit_s=job.time_limit_s, workers=job.workers, seed=job.seed,
                                         search=job.search)
    except PlannerError as e:
        if e.exit_code not in _NO_PLAN:
            raise
        return failed_row(job.name, job.values, _NO_PLAN[e.exit_code], str(e), FLEET_TAIL)
    return fleet_row(job.name, job.values, allocation, job.priced)


def finished_row(job: ScenarioJob) -> dict[str, Any] | None:
    """The row of a scenario whose directory is complete and verifies; None when it must be planned."""
    if job.fleet:
        allocation = finished_fleet_allocation(job.target)
        return None if allocation is None else fleet_row(job.name, job.values, allocation, job.priced)
    target = Path(job.target)
    if not target.is_dir() or not is_plan_output(target):
        return None
    try:
        verdict = verify_plan_dir(target)
    except PlannerError:
        return None  # written by plan but not whole or not this version's: planned again, replacing it
    return scenario_row(job.name, job.values, verdict.plan, verdict.simulation)
