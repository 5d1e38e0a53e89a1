"""Same problem, seed and worker count => the same solution, even when a limit stops the search."""

from __future__ import annotations

import random

import pytest

from solvers.core import SolveOptions, Status
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem, validate_schedule


def _random_problem(n: int = 30, seed: int = 3) -> SchedulingProblem:
    rng = random.Random(seed)
    edges = []
    for v in range(1, n):
        for u in sorted(rng.sample(range(max(0, v - 6), v), min(v, rng.randint(1, 2)))):
            edges.append((u, v, rng.randint(1, 50)))
    durations = []
    for _ in range(n):
        w = rng.randint(5, 60)
        durations.append((w, w, -(-w // 3), -(-w // 3)))
    link_of = ((-1, 0, 1, 2), (0, -1, 3, 4), (1, 3, -1, 5), (2, 4, 5, -1))
    transfer = tuple(tuple(2 + b // 10 for _ in range(6)) for *_, b in edges)
    return SchedulingProblem(tuple(durations), tuple(edges), (1, 1, 1, 1), link_of, transfer,
                             device_class=(0, 0, 1, 1))


def test_same_solution_twice_under_a_deterministic_limit():
    p = _random_problem()
    # a deterministic budget far below what the search needs, the wall clock as a safety net
    solver = CpSatScheduler(CpSatOptions(dtime_per_second=0.003))
    # tests use one worker (ground rules); two interleaved workers repeat as well (checked by hand)
    opts = SolveOptions(time_limit_s=25, num_workers=1, random_seed=7)
    a = solver.solve(p, opts)
    b = solver.solve(p, opts)
    if "wall_time" in (a.stats.get("stopped_by"), b.stats.get("stopped_by")):
        pytest.skip("the wall-clock safety net fired first (machine too busy)")
    assert a.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert validate_schedule(p, a.solution) == []
    assert a.solution == b.solution
    assert a.objective == b.objective and a.bound == b.bound
