"""LNS: never worse than its warm start, always valid, and the same result twice."""

from __future__ import annotations

import time
from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.budget import UNTIL_LIMIT, Budget
from solvers.hierarchical import LnsOptions, LnsScheduler, refine
from solvers.scheduling import (HeftScheduler, Objective, SchedulingProblem, SchedulingSolution,
                                objective_value, validate_schedule)
from tests.solvers.hierarchical.random_problems import problems, random_problem
from tests.sweeps import examples, random_sweep

SMALL = LnsOptions(initial_size=6, min_size=2, sub_dtime=0.05)


def units(total: float) -> Budget:
    """A deterministic budget of ``total`` units whose wall-clock net (15 minutes) never fires."""
    return Budget(total, time.perf_counter() + 900)


@random_sweep
@settings(max_examples=examples(12, 30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=24, memory=True, colocation=True), st.integers(0, 5))
def test_lns_is_valid_and_never_worse_than_its_warm_start(p, seed):
    heft = HeftScheduler().solve(p)
    assume(heft.status.has_solution)
    best, stats = refine(p, heft.solution, units(0.1), SolveOptions(random_seed=seed),
                         SMALL)
    assert validate_schedule(p, best) == []
    assert best.makespan_cycles <= heft.objective
    assert stats["end_objective"] == best.makespan_cycles and stats["iterations"] > 0


def _serial(p: SchedulingProblem) -> SchedulingSolution:
    """Every op on device 0, one after the other in index order (a poor but valid start)."""
    start, t = [], 0
    for i in range(p.num_ops):
        start.append(t)
        t += p.durations_cycles[i][0]
    return SchedulingSolution((0,) * p.num_ops, (0,) * p.num_ops, tuple(start),
                              tuple(r[0] for r in p.durations_cycles), ())


def test_lns_spreads_independent_chains_over_the_devices():
    # four independent chains of three 5-cycle ops, queued on device 0 (makespan 60); with
    # four identical devices one chain each takes 15 cycles, and no window is needed for more.
    edges = [(3 * c + k, 3 * c + k + 1, 8) for c in range(4) for k in range(2)]
    link_of = tuple(tuple(-1 if a == b else 0 for b in range(4)) for a in range(4))
    p = SchedulingProblem(((5, 5, 5, 5),) * 12, edges, (1,) * 4, link_of, ((1,),) * len(edges))
    start = _serial(p)
    r = LnsScheduler(LnsOptions(initial_size=6)).solve(p, SolveOptions(time_limit_s=20, hint=start))
    assert r.status is Status.FEASIBLE and validate_schedule(p, r.solution) == []
    assert r.stats["warm_start_objective"] == 60
    assert r.objective <= 30, r.stats  # at least two chains moved off device 0


def test_same_problem_seed_and_workers_give_the_same_schedule():
    p = random_problem(11, 90, 4, memory=True, colocation=True)
    heft = HeftScheduler().solve(p).solution
    cfg = LnsOptions(initial_size=12, sub_dtime=0.05)
    runs = []
    for _ in range(2):
        # the wall clock is a net far above what the deterministic budget needs
        best, stats = refine(p, heft, units(0.15),
                             SolveOptions(random_seed=3, num_workers=1), cfg)
        runs.append((best, stats))
    (a, sa), (b, sb) = runs
    assert sa["iterations"] > 5 and sa["improvements"] > 0, sa
    assert a == b
    assert {k: sa[k] for k in ("iterations", "improvements", "moves", "sweeps")} == \
        {k: sb[k] for k in ("iterations", "improvements", "moves", "sweeps")}


def test_two_workers_repeat_too():
    p = random_problem(5, 60, 3)
    heft = HeftScheduler().solve(p).solution
    cfg = LnsOptions(initial_size=10, sub_dtime=0.05)
    out = [refine(p, heft, units(0.1), SolveOptions(random_seed=1, num_workers=2),
                  cfg)[0] for _ in range(2)]
    assert out[0] == out[1]


def test_throughput_problems_are_returned_unchanged():
    p = replace(random_problem(2, 20, 3), objective=Objective.THROUGHPUT)
    heft = HeftScheduler().solve(p)
    r = LnsScheduler().solve(p, SolveOptions(time_limit_s=5, hint=heft.solution))
    assert r.solution == heft.solution and r.objective == objective_value(p, heft.solution)
    assert "skipped" in r.stats


def test_the_result_says_the_deterministic_budget_stopped_it():
    p = random_problem(5, 60, 3)
    # 0.05 units of a 100-s limit: the net (305 s) is far above what the budget needs
    cfg = LnsOptions(initial_size=10, sub_dtime=0.05, max_idle_sweeps=10**6, work_per_second=0.0005)
    r = LnsScheduler(cfg).solve(p, SolveOptions(time_limit_s=100, hint=HeftScheduler().solve(p).solution))
    assert (r.stats["search"], r.stats["stopped_by"]) == ("deterministic", "deterministic_budget")
    assert r.stats["dtime_used"] >= r.stats["dtime_budget"]  # spent: CP-SAT time plus counted steps


def test_until_limit_search_runs_until_the_wall_clock():
    p = random_problem(5, 60, 3)
    cfg = LnsOptions(initial_size=10, sub_dtime=0.01, max_idle_sweeps=10**6, work_per_second=10**-6)
    t0 = time.perf_counter()
    r = LnsScheduler(cfg).solve(p, SolveOptions(time_limit_s=1.5, search=UNTIL_LIMIT,
                                                hint=HeftScheduler().solve(p).solution))
    # a deterministic budget of 1.5e-6 units would stop after one solve; the clock ends this one
    assert time.perf_counter() - t0 >= 1.5 and r.stats["stopped_by"] == "time_limit"
    assert r.stats["iterations"] > 1 and validate_schedule(p, r.solution) == []
