"""Where a sweep's scenarios run: in this process, on a local process pool, or as Ray tasks.

Every backend runs :func:`planner.sweeps.jobs.run_job` on the same jobs and yields each row as it
finishes (in completion order; the driver puts them back in grid order). Scenarios stop on
deterministic budgets (:mod:`solvers.budget`), so the rows are the same whichever runs them.
Ray is optional (``pip install 'plan[ray]'``): it starts a local Ray instance with ``jobs`` CPUs,
or joins the cluster at ``address``.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Iterator, Sequence

from planner.errors import SpecError
from planner.sweeps.jobs import ScenarioJob, run_job

__all__ = ["BACKENDS", "run_jobs"]

BACKENDS = ("local", "ray")


def run_jobs(jobs: Sequence[ScenarioJob], *, backend: str = "local", processes: int = 1,
             address: str | None = None) -> Iterator[tuple[ScenarioJob, tuple[dict[str, Any], bool]]]:
    """Run the jobs; yield ``(job, (row, done_before))`` as each finishes."""
    if backend not in BACKENDS:
        raise SpecError(f"--backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if not jobs:
        return
    if backend == "ray":
        yield from _ray(jobs, processes, address)
    elif processes == 1 or len(jobs) == 1:
        for job in jobs:  # in this process: no start-up cost, and Ctrl-C stops the running solve at once
            yield job, run_job(job)
    else:
        yield from _pool(jobs, processes)


def _pool(jobs: Sequence[ScenarioJob], processes: int) -> Iterator[tuple[ScenarioJob, tuple]]:
    # spawn, not fork: the parent may hold OR-Tools and interrupt-watcher threads a fork would copy half-way
    with ProcessPoolExecutor(max_workers=min(processes, len(jobs)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = {pool.submit(run_job, job): job for job in jobs}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield pending.pop(future), future.result()
        finally:
            for future in pending:
                future.cancel()


def _ray(jobs: Sequence[ScenarioJob], processes: int, address: str | None) -> Iterator[tuple[ScenarioJob, tuple]]:
    try:
        import ray  # optional dependency
    except ImportError:
        raise SpecError("--backend ray needs Ray: pip install 'plan[ray]'") from None
    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = {"address": address} if address else {"num_cpus": processes}
        ray.init(**options, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(run_job)
        pending = {task.remote(job): job for job in jobs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                try:
                    yield job, ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    raise e.as_instanceof_cause() from None  # the scenario's own error (e.g. a PlannerError)
    finally:
        for ref in pending if "pending" in locals() else ():
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
