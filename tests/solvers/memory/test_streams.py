"""Level problems on several compute streams: ops overlap across streams, the fast level is shared.

The memory-order rule (solvers/memory/levels/problem.py, docs/memory.md "Several compute
streams") keeps the point-axis capacity check sound when ops overlap; here an independent
sweep over cycles checks that every solver's plan fits the fast level at every cycle.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.memory.levels import (
    CpSatLevelSolver, GreedyLevelSolver, LevelProblem, LevelSolution, SplitGroup, Transfer, TransferKind,
    fast_pieces,
    makespan_lower_bound, memory_waits, plan_all_slow, plan_greedy, replay_levels, retime, validate_levels,
)
from tests.solvers.memory.strategies import level_problems
from tests.solvers.test_memory_levels import brute_force
from tests.sweeps import examples, random_sweep

_OPTIONS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def _cycle_peak(problem: LevelProblem, solution: LevelSolution) -> int:
    """The most fast bytes live at one cycle, from the plan's own times (independent of the
    point axis): a piece lives from its producer's start or its prefetch's start until its
    last access's end or its eviction's end; at one cycle, frees come before allocations."""
    ends = [s + d for s, d in zip(solution.op_start, solution.op_duration)]
    prefetch = {(tr.tensor, 2 * tr.trigger_op + 2): tr for tr in solution.transfers
                if tr.kind is TransferKind.PREFETCH}
    evict = {(tr.tensor, 2 * tr.release_op + 1): tr for tr in solution.transfers if tr.kind is TransferKind.EVICT}
    events = []
    for t, lo, hi in fast_pieces(problem, solution):
        begin = solution.op_start[lo // 2] if lo % 2 else prefetch[t, lo].start_cycle
        finish = ends[hi // 2 - 1] if hi % 2 == 0 else evict[t, hi].end_cycle
        events += [(begin, 1, problem.tensor_bytes[t]), (finish, 0, -problem.tensor_bytes[t])]
    live = peak = 0
    for _, _, delta in sorted(events):
        live += delta
        peak = max(peak, live)
    return peak


def test_two_streams_overlap_where_one_stream_runs_in_series():
    # Op 0 (stream 0) reads weight w0, op 1 (stream 1) reads w1; 8 bytes each, compute 6,
    # fast 4 B/cycle (8/4 = 2 < 6), slow 1 B/cycle (8 cycles), a DMA of 8 B takes 1 cycle,
    # fast level 8 B: one weight at a time.
    # Two streams: both read slow, side by side: max(6, 8) = 8. (w0 fast: its prefetch
    # [0,1), op 0 [1,7), while op 1 reads slow [0,8): also 8; w1 fast too needs w0 freed.)
    # One stream: w0 prefetched [0,1), op 0 [1,7), w1 prefetched after it [7,8), op 1
    # [8,14): 14 (both slow: 16).
    two = LevelProblem((6, 6), ((0,), (1,)), ((), ()), (8, 8), (8, 10**6), (4, 1), dma_bytes_per_cycle=8,
                       op_streams=(0, 1))
    one = replace(two, op_streams=())
    r2, r1 = CpSatLevelSolver().solve(two, _OPTIONS), CpSatLevelSolver().solve(one, _OPTIONS)
    assert (r2.objective, r1.objective) == (8, 14)
    assert r1.status is r2.status is Status.OPTIMAL and r2.bound == 8
    assert makespan_lower_bound(two) == 6  # the static bound: 6 per stream
    assert validate_levels(two, r2.solution) == []
    assert GreedyLevelSolver().solve(two, _OPTIONS).objective >= 8
    assert _cycle_peak(two, r2.solution) <= 8


def test_a_fast_allocation_waits_for_the_frees_before_it():
    # Op 0 (stream 0) reads weight 0 fast-only, freed at its end (point 2); op 1 (stream 1)
    # writes tensor 1 fast-only, allocated at its start (point 3). The prefetch takes 8
    # cycles, op 0 max(4, 8/4) = 4 [8, 12), so op 1 waits for it: [12, 16).
    p = LevelProblem((4, 4), ((0,), ()), ((), (1,)), (8, 8), (16, 10**6), (4, 1), op_streams=(0, 1),
                     fast_only_ops=(0, 1))
    r = CpSatLevelSolver().solve(p, _OPTIONS)
    assert r.objective == 16
    assert r.solution.op_start == (8, 12)
    assert validate_levels(p, r.solution) == []
    early = replace(r.solution, op_start=(8, 0))  # op 1 before op 0 frees: out of memory order
    errors = validate_levels(p, early)
    assert len(errors) == 1 and errors[0].startswith("memory order: op 1 allocates fast memory at cycle 0")
    assert replay_levels(p, early).op_start == (8, 12)  # the replay restores the wait


def test_data_dependencies_cross_streams():
    # Op 0 (stream 0) writes x (8 B) slow, op 1 (stream 1) reads it: it starts after op 0 ends.
    p = LevelProblem((5, 3), ((), (0,)), ((0,), ()), (8,), (4, 10**6), (4, 1), op_streams=(0, 1))
    s = plan_all_slow(p)
    assert s.op_start == (0, 8) and s.makespan_cycles == 16  # max(5, 8) + max(3, 8)
    errors = validate_levels(p, replace(s, op_start=(0, 7)))
    assert errors == ["op 1 starts at 7 before op 0, which writes 0, ends at 8"]


def test_several_streams_need_one_stream_per_split_group():
    with pytest.raises(ValueError, match="spans several streams"):
        LevelProblem((4, 4), ((), (0,)), ((0,), (1,)), (8, 8), (16, 99), (4, 1), op_streams=(0, 1),
                     splits=(SplitGroup(0, 1, (0, 1)),))


@st.composite
def _stream_problems(draw):
    p = draw(level_problems(max_ops=5, max_tensors=4))
    return replace(p, op_streams=tuple(draw(st.integers(0, 1)) for _ in range(p.num_ops)))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_stream_problems())
def test_every_solver_gives_a_valid_plan_that_fits_in_cycles(p):
    greedy = plan_greedy(p)
    cpsat = CpSatLevelSolver().solve(p, _OPTIONS)
    plans = [s for s in (greedy, plan_all_slow(p), cpsat.solution) if s is not None]
    for s in plans:
        assert validate_levels(p, s) == []
        assert _cycle_peak(p, s) <= p.capacity_bytes[0]
        assert retime(p, s).makespan_cycles <= s.makespan_cycles
        assert makespan_lower_bound(p) <= s.makespan_cycles
    if greedy is not None:
        assert cpsat.objective <= greedy.makespan_cycles
    if cpsat.solution is None:
        assert greedy is None and cpsat.status is Status.INFEASIBLE
    elif cpsat.bound is not None:
        assert cpsat.bound <= cpsat.objective


@settings(max_examples=30, deadline=None, derandomize=True)
@given(level_problems(max_ops=4, max_tensors=3))
def test_one_stream_given_explicitly_is_the_one_stream_problem(p):
    zeros = replace(p, op_streams=(0,) * p.num_ops)
    assert not zeros.multi_stream
    assert plan_greedy(zeros) == plan_greedy(p)
    a, b = CpSatLevelSolver().solve(p, _OPTIONS), CpSatLevelSolver().solve(zeros, _OPTIONS)
    assert (a.status, a.objective, a.bound, a.solution) == (b.status, b.objective, b.bound, b.solution)


def test_transfer_waits_for_a_later_queued_eviction_deadlock_is_reported():
    # A hand-made plan whose DMA queue lists a prefetch before the eviction it must wait for
    # (the eviction frees the fast level at a point before the prefetch's trigger).
    p = LevelProblem((2, 2, 2), ((), (), (1,)), ((0,), (), ()), (8, 8), (8, 10**6), (4, 1),
                     dma_bytes_per_cycle=8, live_out=(0,), op_streams=(0, 1, 1))
    pf = Transfer(TransferKind.PREFETCH, 1, 1, 1, 2, 0, 1)
    ev = Transfer(TransferKind.EVICT, 0, 1, 0, 1, 0, 1)
    s = LevelSolution(((True, False), (False, True)), ((False, False), (False, False)), (pf, ev),
                      (0, 0, 0), (2, 2, 2))
    try:
        replay_levels(p, s)
    except ValueError as e:
        assert "deadlock" in str(e)
    else:  # pragma: no cover
        raise AssertionError("a prefetch queued before the eviction it waits for must deadlock")


@st.composite
def _tiny_stream_problems(draw):
    p = draw(level_problems(max_ops=4, slow_capacity=10**9))
    return replace(p, op_streams=tuple(draw(st.integers(0, 1)) for _ in range(p.num_ops)))


@random_sweep
@settings(max_examples=examples(25, 60), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_tiny_stream_problems())
def test_cpsat_and_the_bound_against_brute_force(p):
    # The brute force (every residency, trigger, release and DMA queue order, replayed) is the
    # optimum of the several-stream semantics: the replay re-times fixed decisions as early as
    # their waits allow. CP-SAT's model is exact (it forbids only a dominated case,
    # _forbid_refetch_into_the_copy), so it proves that optimum, and its bound never exceeds it.
    opt = brute_force(p)
    r = CpSatLevelSolver().solve(p, _OPTIONS)
    if opt is None:
        assert r.status is Status.INFEASIBLE
        return
    assert makespan_lower_bound(p) <= opt
    assert validate_levels(p, r.solution) == []
    assert r.status is Status.OPTIMAL and r.objective == r.bound == opt


def test_a_prefetch_of_a_produced_tensor_waits_for_its_producer_on_another_stream():
    # Op 0 (stream 0, 10 cycles) writes tensor 0 slow; op 1 (stream 1) touches nothing and ends at
    # 1; op 2 (stream 1) reads tensor 0 fast, prefetched with trigger op 1. The trigger is after
    # the producer in the merged order but ends first: the DMA must still wait for op 0, which
    # wrote the slow copy it reads (found by the replay of a 41-op two-branch spec).
    p = LevelProblem((10, 1, 1), ((), (), (0,)), ((0,), (), ()), (8,), (16, 99), (8, 8), op_streams=(0, 1, 1))
    early = Transfer(TransferKind.PREFETCH, 0, 1, 1, 2, 1, 1)
    s = LevelSolution(((False, True),), ((False, False),), (early,), (0, 0, 10), (10, 1, 1))
    assert validate_levels(p, s) == ["prefetch of 0 starts at 1 before its producer op 0 ends at 10"]
    assert memory_waits(p, s) == {("dma", 0): {("op", 0)}}
    timed = retime(p, s)
    assert timed.transfers[0].start_cycle == 10 and validate_levels(p, timed) == []
    r = CpSatLevelSolver().solve(p, _OPTIONS)
    assert r.status is Status.OPTIMAL and validate_levels(p, r.solution) == []
