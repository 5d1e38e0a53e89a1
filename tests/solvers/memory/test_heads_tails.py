"""Heads (release times) and tails in the level problem: hand-checked cases, brute force, random problems."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.memory.levels import (
    CpSatLevelSolver, LevelProblem, LevelSolution, Transfer, TransferKind, plan_greedy,
)
from solvers.memory.levels.heads_tails import (
    HeadsTails, heads_tails_lower_bound, objective_cycles, retime_heads_tails, solve_heads_tails,
    validate_heads_tails,
)
from tests.solvers.memory.strategies import level_problems
from tests.solvers.test_memory_levels import level_drafts

OPTS = SolveOptions(time_limit_s=10)


def test_release_delays_the_op_and_the_prefetch_hides_under_the_wait():
    # Op 1 (compute 2) reads weight 0 (8 B, DMA 8 cycles) fast; op 0 (compute 8) touches nothing.
    # Alone: prefetch at 0 under op 0, op 1 at 8, reads 8 B at 4 B/cycle: ends at 10.
    p = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
    assert solve_heads_tails(p, HeadsTails(), OPTS).objective == 10
    # Op 1 released at 20 (its other input arrives then): it starts at 20 and ends at 22.
    r = solve_heads_tails(p, HeadsTails(op_release=(0, 20)), OPTS)
    assert (r.status, r.objective, r.solution.op_start) == (Status.OPTIMAL, 22, (0, 20))


def test_a_late_received_tensor_is_read_slow_rather_than_prefetched():
    # Op 0 (compute 1) reads tensor 0 (8 B), which reaches slow memory at cycle 10.
    # Slow read: 8 B at 1 B/cycle = 8 cycles, from 10: ends at 18. A prefetch (8 cycles) from 10
    # ends at 18 and the fast read takes 2 more: 20. So the optimum reads it slow.
    p = LevelProblem((1,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    ht = HeadsTails(op_release=(10,), tensor_ready=(10,))
    r = solve_heads_tails(p, ht, OPTS)
    assert (r.status, r.objective) == (Status.OPTIMAL, 18)
    assert r.solution.in_fast == ((False, False),) and r.solution.transfers == ()
    assert validate_heads_tails(p, r.solution, ht) == []


def test_tail_of_a_sent_tensor_counts_from_its_slow_copy():
    # Op 0 (compute 50) touches nothing; op 1 (compute 4) writes tensor 0 (8 B, sent: tail 100).
    p = LevelProblem((50, 4), ((), ()), ((), (0,)), (8,), (8, 99), (4, 1), live_out=(0,))
    s = solve_heads_tails(p, HeadsTails(tensor_tail=(0, )), OPTS)
    assert s.objective == s.solution.makespan_cycles
    ht = HeadsTails(tensor_tail=(100,))
    r = solve_heads_tails(p, ht, OPTS)
    # Writing tensor 0 slow: 8 B at 1 B/cycle = 8 cycles (> compute 4), ends at 58; + 100 = 158.
    # Writing it fast (compute-bound: ends 54) then evicting it (8 cycles) ends at 62: worse.
    assert (r.status, r.objective) == (Status.OPTIMAL, 158)
    assert objective_cycles(p, r.solution, ht) == 158
    # An eviction-based plan is charged at the eviction's end.
    ev = Transfer(TransferKind.EVICT, 0, 1, 1, 2, 54, 8)
    fast = LevelSolution(((True, False),), ((False, False),), (ev,), (0, 50), (50, 4))
    assert validate_heads_tails(p, fast, ht) == [] and objective_cycles(p, fast, ht) == 162


def test_op_tail_counts_from_the_op_end():
    p = LevelProblem((5, 5), ((), ()), ((), ()), (), (8, 99), (4, 1))
    r = solve_heads_tails(p, HeadsTails(op_tail=(30, 0)), OPTS)
    assert r.objective == 35 and r.solution.makespan_cycles == 10


def test_validator_names_an_early_prefetch():
    p = LevelProblem((1,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    s = LevelSolution(((False, True),), ((False, False),), (pf,), (8,), (2,))
    assert validate_heads_tails(p, s, HeadsTails()) == []
    assert validate_heads_tails(p, s, HeadsTails(tensor_ready=(3,))) == [
        "prefetch of tensor 0 starts at 0 before it is ready at 3"]


def test_empty_heads_tails_reach_the_plain_solvers_optimum():
    p = LevelProblem((8, 2, 6), ((), (0,), (1,)), ((1,), (2,), ()), (8, 8, 8), (16, 99), (4, 1), live_out=(2,))
    plain = CpSatLevelSolver().solve(p, OPTS)
    r = solve_heads_tails(p, HeadsTails(), OPTS)
    assert plain.status is r.status is Status.OPTIMAL and r.objective == plain.objective


# ---------------------------------------------------------------- brute force ---------

def brute_force(p: LevelProblem, ht: HeadsTails) -> int | None:
    """Min over every residency, trigger, release and DMA queue order of the objective of the
    as-soon-as-possible timing under the heads (ASAP is optimal for a fixed such choice: the
    objective only grows with every time)."""
    best = None
    for draft in level_drafts(p):
        try:
            s = retime_heads_tails(p, draft, ht)
        except ValueError:
            continue
        if validate_heads_tails(p, s, ht):
            continue
        value = objective_cycles(p, s, ht)
        if best is None or value < best:
            best = value
    return best


@st.composite
def problems_with_heads_tails(draw):
    p = draw(level_problems(slow_capacity=10**6))
    rows = st.integers(0, 20)
    ht = HeadsTails(op_release=tuple(draw(rows) for _ in range(p.num_ops)),
                    op_tail=tuple(draw(rows) for _ in range(p.num_ops)),
                    tensor_ready=tuple(draw(rows) for _ in range(p.num_tensors)),
                    tensor_tail=tuple(draw(rows) for _ in range(p.num_tensors)))
    return p, ht


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems_with_heads_tails())
def test_cpsat_equals_brute_force_and_beats_greedy_under_heads_tails(case):
    p, ht = case
    expected = brute_force(p, ht)
    r = solve_heads_tails(p, ht, OPTS)
    if expected is None:
        assert not r.status.has_solution
        return
    assert r.status is Status.OPTIMAL
    assert validate_heads_tails(p, r.solution, ht) == []
    assert r.objective == expected == objective_cycles(p, r.solution, ht)
    assert r.bound is not None and r.bound <= expected  # the bound is sound
    assert heads_tails_lower_bound(p, ht) <= expected
    g = plan_greedy(p)
    if g is not None:
        g = retime_heads_tails(p, g, ht)
        assert validate_heads_tails(p, g, ht) == [] and objective_cycles(p, g, ht) >= r.objective


@st.composite
def larger_problems_with_heads_tails(draw):
    p = draw(level_problems(min_ops=4, max_ops=8, max_tensors=6, max_latency=3, slow_capacity=10**6))
    rows = st.integers(0, 40)
    ht = HeadsTails(op_release=tuple(draw(rows) for _ in range(p.num_ops)),
                    tensor_ready=tuple(draw(rows) for _ in range(p.num_tensors)),
                    tensor_tail=tuple(draw(rows) for _ in range(p.num_tensors)))
    return p, ht


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(larger_problems_with_heads_tails())
def test_larger_random_problems_validate_and_never_lose_to_greedy(case):
    p, ht = case
    r = solve_heads_tails(p, ht, SolveOptions(time_limit_s=2))
    g = plan_greedy(p)
    if g is None:
        return
    assert r.status.has_solution and validate_heads_tails(p, r.solution, ht) == []
    assert r.objective == objective_cycles(p, r.solution, ht)
    assert r.objective <= objective_cycles(p, retime_heads_tails(p, g, ht), ht)
    if r.bound is not None:
        assert r.bound <= r.objective
    assert heads_tails_lower_bound(p, ht) <= r.objective


@st.composite
def stream_problems_with_heads_tails(draw):
    p, ht = draw(problems_with_heads_tails())
    return replace(p, op_streams=tuple(draw(st.integers(0, 1)) for _ in range(p.num_ops))), ht


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(stream_problems_with_heads_tails())
def test_heads_tails_on_two_streams_equal_brute_force_and_the_bound_stays_below(case):
    # Ops of two streams overlap, so the lower bound chains each op after the previous op of its
    # stream and its producers only (a chain over every op in order would exceed the optimum), and
    # the several-stream replay honours the heads (without them it would start ops before their
    # releases and the plan's objective would be too small).
    p, ht = case
    expected = brute_force(p, ht)
    r = solve_heads_tails(p, ht, OPTS)
    if expected is None:
        assert not r.status.has_solution
        return
    assert heads_tails_lower_bound(p, ht) <= expected
    assert validate_heads_tails(p, r.solution, ht) == []
    assert r.objective == expected == objective_cycles(p, r.solution, ht)
    assert r.bound is not None and r.bound <= expected


def test_two_stream_bound_does_not_chain_ops_of_other_streams():
    # Two independent 8-cycle ops on two streams, each released at 0: they overlap, so nothing
    # can be proven above 8 (a one-stream chain would claim 16).
    p = LevelProblem((8, 8), ((), ()), ((), ()), (), (8, 99), (4, 1), op_streams=(0, 1))
    assert heads_tails_lower_bound(p, HeadsTails(op_release=(0, 0))) == 8
    assert heads_tails_lower_bound(replace(p, op_streams=()), HeadsTails(op_release=(0, 0))) == 16
