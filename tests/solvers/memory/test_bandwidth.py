"""Shared bandwidth (issue 14, item 4): ops and DMAs contend for each level's bandwidth."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.memory.levels import (
    AllSlowLevelSolver, CpSatLevelSolver, GreedyLevelSolver, LevelProblem, LevelSolution, Transfer, TransferKind,
    build_level_model, makespan_lower_bound, replay_levels, retime, validate_levels,
)
from solvers.memory.levels.bandwidth import SHARE_UNITS, check_bandwidth, dma_shares, op_shares
from solvers.memory.levels.greedy import fewer_dmas, plan_greedy
from tests.solvers.memory.strategies import level_problems
from tests.solvers.test_memory_levels import brute_force

BIG = 10**6

# Op 0 (compute 4) reads input A (4 B) from the slow level at 1 B/cycle: 4 cycles, memory-bound,
# so it holds every share of the slow level. Op 1 (compute 4) touches nothing. Op 2 (compute 2)
# reads weight W (8 B) from the fast level (4 B/cycle: 2 cycles), prefetched at program start
# (trigger -1) by a DMA at the slow level's 1 B/cycle: 8 cycles, all of the slow level too.
# * separate bandwidth: the prefetch runs [0, 8) under ops 0 and 1; op 2 at 8, ends at 10;
# * shared: op 0 starts first (ties: ops first) and the prefetch waits for it: [4, 12), so
#   op 2 starts at 12, ends at 14: delayed by exactly op 0's 4 cycles.
DELAY = LevelProblem(compute_cycles=(4, 4, 2), reads=((0,), (), (1,)), writes=((), (), ()), tensor_bytes=(4, 8),
                     capacity_bytes=(64, BIG), bandwidth_bytes_per_cycle=(4, 1), shared_bandwidth=True)
DECISIONS = LevelSolution(in_fast=((False, False), (False, True)), kept=((False, False), (False, False)),
                          transfers=(Transfer(TransferKind.PREFETCH, 1, 1, -1, 2, 0, 8),),
                          op_start=(0, 4, 8), op_duration=(4, 4, 2))


def separate(p: LevelProblem) -> LevelProblem:
    return replace(p, shared_bandwidth=False)


def test_prefetch_under_a_memory_bound_op_delays_the_next_op_by_its_duration():
    assert op_shares(DELAY, 0, 0, 4) == (0, SHARE_UNITS) and dma_shares(DELAY) == (250, SHARE_UNITS)
    alone = replay_levels(separate(DELAY), DECISIONS)
    shared = replay_levels(DELAY, DECISIONS)
    assert alone.op_start == (0, 4, 8) and alone.transfer_start == (0,) and alone.makespan_cycles == 10
    assert shared.op_start == (0, 4, 12) and shared.transfer_start == (4,) and shared.makespan_cycles == 14
    # the separate timing breaks the shared rule, by the prefetch's and op 0's shares of the slow level
    assert validate_levels(separate(DELAY), DECISIONS) == []
    assert validate_levels(DELAY, DECISIONS) == [
        "slow level bandwidth: 2000 of 1000 shares at cycle 0 (op 0, prefetch of tensor 1)"]
    assert validate_levels(DELAY, retime(DELAY, DECISIONS)) == []


def test_cpsat_finds_the_shared_optimum_of_the_hand_checked_case():
    # Reading W slow instead: 4 + 4 + max(2, 8) = 16; prefetching A too (4 cycles, exposed) and
    # reading it fast (op 0 then holds 250 fast shares, the W prefetch 250): the W prefetch runs
    # [4, 12) beside op 0 [4, 8) and op 1 [8, 12): op 2 at 12, 14. Nothing ends before 14:
    # op 2 needs W, 8 cycles of slow bandwidth, which op 0 (4 cycles of it, or A's prefetch)
    # also needs before cycle 8... the solver proves it.
    r = CpSatLevelSolver().solve(DELAY, SolveOptions(time_limit_s=10, num_workers=1))
    assert r.status is Status.OPTIMAL and r.objective == 14
    # A and W must cross the slow level (4 + 8 cycles at 1 B/cycle), whatever the plan: 12;
    # separately the ops' own bound is 4 + 4 + 2 = 10.
    assert makespan_lower_bound(DELAY) == 12 and makespan_lower_bound(separate(DELAY)) == 10
    assert validate_levels(DELAY, r.solution) == []
    assert CpSatLevelSolver().solve(separate(DELAY), SolveOptions(time_limit_s=10, num_workers=1)).objective == 10


def test_share_products_solve_the_hand_checked_case(monkeypatch):
    import solvers.memory.levels.bandwidth as bandwidth
    from ortools.sat.python import cp_model

    monkeypatch.setattr(bandwidth, "_MAX_TABLE_ACCESSES", 0)
    model, v = build_level_model(DELAY)
    assert "share_dur_1_0" in str(model.proto)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL and solver.value(v.makespan) == 14
    assert validate_levels(DELAY, v.extract(solver)) == []


def test_model_refuses_the_separate_timing_when_shared():
    model, v = build_level_model(DELAY)
    for i, s in enumerate(DECISIONS.op_start):
        model.add(v.start[i] == s)
    model.add(v.fast[1, 1] == 1)
    from ortools.sat.python import cp_model
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.INFEASIBLE


def test_switch_off_gives_todays_plans():
    # Today's optimum (10) overlaps the prefetch with op 0: valid separately, not when shared.
    r = CpSatLevelSolver().solve(separate(DELAY), SolveOptions(time_limit_s=5, num_workers=1))
    assert r.status is Status.OPTIMAL and r.objective == 10
    assert validate_levels(separate(DELAY), r.solution) == [] and check_bandwidth(DELAY, r.solution) != []


def tiny():
    return level_problems(slow_capacity=BIG, dma_rates=(1, 2, 0), fast_rates=(2, 4))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_random_shared_problems_every_solver_valid_and_replayed_equal(p):
    p = replace(p, shared_bandwidth=True)
    opts = SolveOptions(time_limit_s=10, num_workers=1)
    results = {s.name: s.solve(p, opts) for s in (CpSatLevelSolver(), GreedyLevelSolver(), AllSlowLevelSolver())}
    exact = results["cpsat"]
    if exact.solution is None:
        assert exact.status is Status.INFEASIBLE
        return
    for name, r in results.items():
        if r.solution is None:
            continue
        assert validate_levels(p, r.solution) == [], name
        assert replay_levels(p, r.solution).makespan_cycles == r.objective == r.solution.makespan_cycles, name
        assert r.objective >= exact.objective or exact.status is not Status.OPTIMAL, name
    # sharing never helps, and the exact optimum is no worse than any replayed set of decisions
    assert exact.status is Status.OPTIMAL
    assert brute_force(separate(p)) <= exact.objective <= brute_force(p)
    assert exact.bound is not None and exact.bound <= exact.objective


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_switch_off_is_todays_model(p):
    assert not p.shared_bandwidth
    opts = SolveOptions(time_limit_s=10, num_workers=1)
    a = CpSatLevelSolver().solve(p, opts)
    model, v = build_level_model(p)
    assert v.dma_intervals is not None
    assert "bw_" not in str(model.proto)
    if a.solution is not None:
        assert replay_levels(p, a.solution) == replay_levels(p, a.solution, separate=True)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_share_products_give_the_table_optimum(p):
    # Ops with more than 16 accesses get their shares from u * dur products instead of a table;
    # forced on every op here, the optimum must not move.
    import solvers.memory.levels.bandwidth as bandwidth

    p = replace(p, shared_bandwidth=True)
    opts = SolveOptions(time_limit_s=10, num_workers=1)
    table = CpSatLevelSolver().solve(p, opts)
    saved = bandwidth._MAX_TABLE_ACCESSES
    bandwidth._MAX_TABLE_ACCESSES = 0
    try:
        products = CpSatLevelSolver().solve(p, opts)
    finally:
        bandwidth._MAX_TABLE_ACCESSES = saved
    assert products.status is table.status
    if table.solution is not None:
        assert products.objective == table.objective and validate_levels(p, products.solution) == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_the_shared_lower_bound_never_exceeds_the_optimum(p):
    # The optimum of the exact model built without any lower bound (so an unsound bound cannot
    # hide behind the model's own makespan >= LB).
    from ortools.sat.python import cp_model

    p = replace(p, shared_bandwidth=True)
    model, v = build_level_model(p)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 10
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return
    assert status == cp_model.OPTIMAL
    assert makespan_lower_bound(p) <= solver.value(v.makespan)
    assert makespan_lower_bound(separate(p)) <= makespan_lower_bound(p)


# ------------------------------------------------------------------ the in-place start (fewer_dmas)

def test_reading_a_weight_in_place_beats_prefetching_it_under_sharing():
    # Op 0 (compute 2) reads weight W (8 B, slow 1 B/cycle) and writes T (4 B) that op 1 reads.
    # The greedy prefetches W (8 cycles, all of the slow level), then op 0 reads W and writes T
    # in SRAM (2 + 1): 8 + 3 + 1 = 12. Read in place, op 0 takes 8 + 1 = 9: 10, the optimum.
    p = LevelProblem((2, 1), ((0,), (1,)), ((1,), ()), (8, 4), (64, BIG), (4, 1), shared_bandwidth=True)
    greedy = plan_greedy(p)
    assert greedy.makespan_cycles == 12 and [tr.tensor for tr in greedy.transfers] == [0]
    fewer = fewer_dmas(p, greedy)
    assert fewer.makespan_cycles == 10 and fewer.transfers == () and fewer.in_fast[1] == (True, True)
    assert validate_levels(p, fewer) == []
    exact = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=5, num_workers=1))
    assert exact.status is Status.OPTIMAL and exact.objective == 10


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(level_problems(min_ops=2, max_ops=5, max_tensors=5, slow_capacity=BIG, dma_rates=(1, 2), fast_rates=(2, 4)),
       st.integers(0, 2))
def test_fewer_dmas_is_valid_and_never_worse(p, streams):
    p = replace(p, shared_bandwidth=True, op_streams=tuple(i % streams for i in range(p.num_ops)) if streams else ())
    for start in (plan_greedy(p), plan_greedy(p, balance_dma=True) if p.multi_stream else None):
        if start is None:
            continue
        fewer = fewer_dmas(p, start)
        assert validate_levels(p, fewer) == []
        assert fewer.makespan_cycles <= start.makespan_cycles
        assert replay_levels(p, fewer).makespan_cycles <= fewer.makespan_cycles  # a valid plan: never later
        assert {tr.tensor for tr in fewer.transfers} <= {tr.tensor for tr in start.transfers}
