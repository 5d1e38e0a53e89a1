"""The hierarchical placer, the strategy and the quick bound."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.hierarchical import (HierarchicalOptions, LnsOptions, HierarchicalScheduler, StrategyOptions,
                                  StrategyScheduler, choose_strategy, coarsen, expand_schedule,
                                  quick_lower_bound)
from solvers.scheduling import (CpSatOptions, CpSatScheduler, HeftScheduler, Objective, lower_bound,
                                objective_value, validate_schedule)
from tests.solvers.hierarchical.random_problems import problems, random_problem

FAST = SolveOptions(time_limit_s=600, num_workers=1)  # the deterministic budgets end these runs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=24, colocation=True), st.integers(1, 8))
def test_an_expanded_coarse_schedule_is_valid_with_the_coarse_makespan(p, groups):
    c = coarsen(p, groups)
    coarse = HeftScheduler().solve(c.problem)
    assume(coarse.status.has_solution)
    fine = expand_schedule(p, c, coarse.solution)
    assert validate_schedule(p, fine) == []
    assert fine.makespan_cycles <= coarse.objective


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=30, memory=True, colocation=True), st.integers(2, 10))
def test_the_placer_is_valid_and_never_worse_than_heft(p, groups):
    heft = HeftScheduler().solve(p)
    assume(heft.status.has_solution)
    cfg = HierarchicalOptions(groups=groups, coarse=CpSatOptions(max_full_ops=1000, dtime_per_second=0.0002,
                                                                 segment_bound_share=0, segment_schedule_share=0))
    r = HierarchicalScheduler(cfg).solve(p, replace(FAST, hint=heft.solution))
    assert r.status is Status.FEASIBLE and validate_schedule(p, r.solution) == []
    assert r.objective <= heft.objective and r.bound is None


def test_the_placer_spreads_parallel_branches_that_heft_keeps_together():
    # 4 parallel chains of 6 ops (10 cycles each) between a source and a sink, 4 devices, a
    # link per pair, transfers of 5 cycles: with one branch per group the coarse CP-SAT puts
    # one per device: 10 + 5 + 60 + 5 + 10 = 90 (one device runs everything in 260).
    edges, n = [], 2 + 4 * 6
    for b in range(4):
        first = 1 + 6 * b
        edges.append((0, first, 8))
        edges += [(first + k, first + k + 1, 8) for k in range(5)]
        edges.append((first + 5, n - 1, 8))
    pair = {(a, d): k for k, (a, d) in enumerate((a, d) for a in range(4) for d in range(a + 1, 4))}
    link_of = tuple(tuple(-1 if a == d else pair[min(a, d), max(a, d)] for d in range(4)) for a in range(4))
    from solvers.scheduling import SchedulingProblem
    p = SchedulingProblem(((10,) * 4,) * n, edges, (1,) * 4, link_of, ((5,) * 6,) * len(edges))
    r = HierarchicalScheduler(HierarchicalOptions(groups=6)).solve(p, SolveOptions(time_limit_s=30))
    assert validate_schedule(p, r.solution) == [] and r.objective <= 90, r.stats


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=30, memory=True, colocation=True), st.booleans())
def test_quick_bound_equals_lower_bound(p, throughput):
    if throughput:
        p = replace(p, objective=Objective.THROUGHPUT)
    # lower_bound gained stronger parts (place-bounds: forced placements, paths, LP) that the
    # quick bound does not compute yet: it computes the older parts, so it is at most lower_bound
    assert quick_lower_bound(p) <= lower_bound(p)
    assert quick_lower_bound(p, segments=False) <= lower_bound(p, segments=False)


def test_auto_chooses_flat_up_to_the_threshold_and_hierarchical_above():
    p = random_problem(1, 30, 3)
    assert choose_strategy(p, StrategyOptions(flat_max_ops=30)) == "flat"
    assert choose_strategy(p, StrategyOptions(flat_max_ops=29)) == "hierarchical"
    assert choose_strategy(p, StrategyOptions(strategy="flat", flat_max_ops=1)) == "flat"


def _small_budgets(lns_work: float = 0.0008, **kw) -> StrategyOptions:
    """Deterministic budgets that end a 600-s run within a few seconds (the wall clock, far
    above, never stops it)."""
    return StrategyOptions(cpsat=CpSatOptions(dtime_per_second=0.0005),
                           lns=LnsOptions(work_per_second=lns_work, initial_size=12, sub_dtime=0.05), **kw)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=40, memory=True, colocation=True), st.sampled_from(["flat", "hierarchical"]),
       st.booleans())
def test_every_strategy_is_valid_never_worse_than_heft_and_bounded(p, strategy, throughput):
    if throughput:
        p = replace(p, objective=Objective.THROUGHPUT)
    heft = HeftScheduler().solve(p)
    assume(heft.status.has_solution)
    r = StrategyScheduler(_small_budgets(strategy=strategy, flat_lns_min_ops=10, groups=5)).solve(
        p, replace(FAST, time_limit_s=100))
    assert r.status.has_solution and validate_schedule(p, r.solution) == []
    assert r.objective == objective_value(p, r.solution) <= heft.objective
    assert r.bound is not None and r.bound <= r.objective
    assert r.stats["strategy"] == strategy


def test_the_strategy_repeats_itself():
    p = random_problem(4, 120, 4, memory=True)
    # Half the LNS work of _small_budgets: 10 iterations, 8 of them improving (19 and 8 at the
    # full 0.0008, 4.1 CPU-s a run against 2.0): as many changes of the incumbent to repeat.
    cfg = _small_budgets(lns_work=0.0004, strategy="hierarchical", groups=12)
    a, b = (StrategyScheduler(cfg).solve(p, FAST) for _ in range(2))
    assert a.stats["strategy_stages"]["lns"]["stopped_by"] != "wall_clock"
    assert a.stats["strategy_stages"]["lns"]["iterations"] > 3
    assert a.solution == b.solution and (a.objective, a.bound) == (b.objective, b.bound)
