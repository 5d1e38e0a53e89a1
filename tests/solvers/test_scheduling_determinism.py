"""Same problem, seed and worker count => the same solution, even when the budget stops the search;
and when the wall-clock safety net stops it instead, the result says so."""

from __future__ import annotations

import random

import pytest

import solvers.budget
from solvers.core import SolveOptions, Status
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem, validate_schedule
from tests.determinism import assert_not_stopped_by_the_clock


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


@pytest.mark.usefixtures("wide_net")
@pytest.mark.parametrize("workers", [1, 2])
def test_same_solution_twice_under_a_deterministic_limit(workers):
    p = _random_problem()
    # a deterministic budget far below what the search needs (0.075 units with one worker); the
    # net, 3 x 25 s + 5 s, leaves room for a machine far slower than that
    solver = CpSatScheduler(CpSatOptions(dtime_per_second=0.003))
    opts = SolveOptions(time_limit_s=25, num_workers=workers, random_seed=7)
    a = solver.solve(p, opts)
    b = solver.solve(p, opts)
    assert_not_stopped_by_the_clock(a.stats["stopped_by"], b.stats["stopped_by"])
    assert a.stats["stopped_by"] == "deterministic_budget"  # the budget, not a proof, ended it
    assert a.status is Status.FEASIBLE and validate_schedule(p, a.solution) == []
    assert a.solution == b.solution
    assert (a.objective, a.bound) == (b.objective, b.bound)
    assert a.stats["dtime_used"] == b.stats["dtime_used"]
    assert a.stats["stages"] == b.stats["stages"]


def test_the_result_says_when_the_wall_clock_net_stopped_it(monkeypatch):
    monkeypatch.delenv(solvers.budget.NET_SLOWDOWN_ENV, raising=False)  # the factor would replace NET_SLOWDOWN
    # a net of 1 ms: it fires in the first stage, before any budget can run out
    monkeypatch.setattr(solvers.budget, "NET_SLOWDOWN", 0.0)
    monkeypatch.setattr(solvers.budget, "NET_CONSTANT_S", 0.001)
    r = CpSatScheduler().solve(_random_problem(), SolveOptions(time_limit_s=25, num_workers=1))
    assert r.stats["stopped_by"] == "wall_clock"
    assert r.status.has_solution and validate_schedule(_random_problem(), r.solution) == []  # still a plan


def test_until_limit_search_searches_until_the_clock_and_says_so():
    # 60 ops on 4 devices: 286 against a bound of 249-250 after 1 s on an idle machine, so no
    # proof ends it first (30 ops were proven in about 0.5 s on an idle machine, and then
    # "finished" is the right word)
    p = _random_problem(60)
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=1.0, num_workers=2, search="until-limit"))
    assert r.stats["search"] == "until-limit"
    assert r.stats["stopped_by"] == "time_limit"
    assert r.status.has_solution and validate_schedule(p, r.solution) == []
