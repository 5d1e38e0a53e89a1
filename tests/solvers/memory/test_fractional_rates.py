"""Level assignment with exact fractional bandwidths: hand-checked cycles, optima, brute force.

Rates are bytes per device cycle, ``Fraction(bytes_per_s, clock_hz)``; the ISA rounds a
memory time as ``ceil(bytes * clock_hz / bytes_per_s)`` and a DMA as
``latency + ceil(bytes / min(bw_src, bw_dst))``, so must the solver, to the cycle.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.memory.levels import (
    AllSlowLevelSolver, CpSatLevelSolver, GreedyLevelSolver, LevelProblem, SplitGroup, build_level_model,
    cycles_for_bytes, exact_model_fits, expand_splits, makespan_lower_bound, op_duration_lower_bounds,
    op_durations, plan_greedy, replay_levels, retime, validate_levels,
)
from tests.solvers.test_memory_levels import brute_force
from tests.solvers.memory.strategies import level_problems

BIG = 10**9
CLOCK_HZ = 1_050_000_000
HBM = Fraction(1_200_000_000_000, CLOCK_HZ)  # 1200 GB/s at 1.05 GHz = 8000/7 B/cycle
VMEM = Fraction(4_800_000_000_000, CLOCK_HZ)  # 4800 GB/s = 32000/7 B/cycle


@pytest.fixture
def default_options() -> SolveOptions:
    return SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def test_rates_are_exact_fractions_in_lowest_terms():
    assert HBM == Fraction(8000, 7) and VMEM == Fraction(32000, 7)
    p = LevelProblem((0,), ((),), ((0,),), (1,), (64, BIG), (VMEM, HBM), dma_bytes_per_cycle=min(VMEM, HBM))
    assert p.bandwidth_bytes_per_cycle == (Fraction(32000, 7), Fraction(8000, 7))
    assert all(type(r) is Fraction for r in (*p.bandwidth_bytes_per_cycle, p.dma_bytes_per_cycle))
    # Ints are stored as Fractions and compare equal to them.
    q = LevelProblem((0,), ((),), ((0,),), (1,), (64, BIG), (8, 2))
    assert q.bandwidth_bytes_per_cycle == (Fraction(8), Fraction(2)) and q.dma_rate == 2


@pytest.mark.parametrize("nbytes, cycles", [
    (1000, 1),  # 1000 * 7 / 8000 = 0.875 -> 1
    (8000, 7),  # exactly 7
    (8001, 8),  # 8001 * 7 / 8000 = 7.000875 -> 8
    (0, 0),
    (1_200_000_000_000, 1_050_000_000),  # one second of HBM traffic = one second of cycles
])
def test_hbm_cycles_by_hand(nbytes, cycles):
    assert cycles_for_bytes(nbytes, HBM) == cycles
    p = LevelProblem((0,), ((),), ((0,),), (nbytes,), (BIG, 10**13), (VMEM, HBM))
    assert p.op_cycles(0, 0, nbytes) == cycles  # written to slow
    assert op_durations(p, ((False,),)) == (cycles,)


def test_each_level_is_rounded_on_its_own():
    # Fast 7/2, slow 2/3 B/cycle: 50 B fast = ceil(14.29) = 15, 11 B slow = ceil(16.5) = 17,
    # so 32 cycles (one ceil over the sum would give ceil(30.79) = 31).
    p = LevelProblem((1,), ((0, 1),), ((),), (50, 11), (64, BIG), (Fraction(7, 2), Fraction(2, 3)))
    assert p.op_cycles(0, 50, 11) == 32
    assert op_durations(p, ((False, True), (False, False))) == (32,)


def test_rates_refuse_inexact_floats():
    with pytest.raises(ValueError, match="Fraction"):
        LevelProblem((0,), ((),), ((0,),), (1,), (64, BIG), (1200e9 / 1.05e9, 1))
    with pytest.raises(ValueError, match="dma_bytes_per_cycle"):
        LevelProblem((0,), ((),), ((0,),), (1,), (64, BIG), (8, 2), dma_bytes_per_cycle=0.5)
    with pytest.raises(ValueError, match="> 0"):
        LevelProblem((0,), ((),), ((0,),), (1,), (64, BIG), (Fraction(0), 1))
    # Integral floats stay accepted (they are exact).
    assert LevelProblem((0,), ((),), ((0,),), (1,), (64, BIG), (8.0, 2)).bandwidth_bytes_per_cycle[0] == 8


# A DMA with latency 500 at min(VMEM, HBM) = 8000/7 B/cycle: W (8001 B) takes
# 500 + ceil(7.000875) = 508 cycles. Op 0 (compute c) touches nothing; op 1 (compute 0)
# reads W: from HBM ceil(8001*7/8000) = 8 cycles, from VMEM ceil(8001*7/32000) = ceil(1.75) = 2.
# * prefetch at program start: op 1 starts at max(c, 508) and takes 2 -> max(c, 508) + 2;
# * read slow: c + 8.
# c = 501: 510 vs 509 -> slow (509); c = 503: 510 vs 511 -> prefetch (510); c = 1000: 1002.
@pytest.mark.parametrize("compute, expected, fast", [(501, 509, False), (503, 510, True), (1000, 1002, True)])
def test_dma_latency_and_min_bandwidth_by_hand(compute, expected, fast, default_options):
    p = LevelProblem((compute, 0), ((), (0,)), ((), ()), (8001,), (1 << 20, BIG), (VMEM, HBM),
                     dma_bytes_per_cycle=min(VMEM, HBM), dma_latency_cycles=500)
    assert p.dma_cycles(0) == 508
    r = CpSatLevelSolver().solve(p, default_options)
    assert r.status is Status.OPTIMAL and r.objective == expected
    assert r.solution.in_fast == ((False, fast),)
    assert validate_levels(p, r.solution) == [] and replay_levels(p, r.solution).makespan_cycles == expected
    if fast:
        (pf,) = r.solution.transfers
        assert (pf.trigger_op, pf.start_cycle, pf.duration_cycles) == (-1, 0, 508)


# Fast 55 B at 7/2 B/cycle; slow and DMA 2/3 B/cycle (1.5 cycles per byte), DMA latency 5.
# Op 0 (compute 40) touches nothing; op 1 (compute 1) reads weights W (50 B) and X (11 B);
# 50 + 11 = 61 > 55, so at most one of them is read fast.
# * both slow: op 1 = ceil(61 * 3/2) = ceil(91.5) = 92 -> 132;
# * X fast: its prefetch 5 + ceil(16.5) = 22 hides under op 0; op 1 = ceil(11*2/7) +
#   ceil(50*3/2) = 4 + 75 = 79 -> 119;
# * W fast: its prefetch 5 + 75 = 80 (exposed 40 past op 0); op 1 = ceil(50*2/7) +
#   ceil(11*3/2) = 15 + 17 = 32 -> 80 + 32 = 112 (the optimum).
FRAC = LevelProblem(compute_cycles=(40, 1), reads=((), (0, 1)), writes=((), ()), tensor_bytes=(50, 11),
                    capacity_bytes=(55, BIG), bandwidth_bytes_per_cycle=(Fraction(7, 2), Fraction(2, 3)),
                    dma_latency_cycles=5, tensor_names=("W", "X"))


def test_fractional_optimum_by_hand(default_options):
    r = CpSatLevelSolver().solve(FRAC, default_options)
    assert r.status is Status.OPTIMAL and r.objective == 112 and r.gap == pytest.approx(0)
    s = r.solution
    assert s.in_fast == ((False, True), (False, False))
    assert (s.op_start, s.op_duration) == ((0, 80), (40, 32))
    assert [(t.tensor, t.trigger_op, t.start_cycle, t.duration_cycles) for t in s.transfers] == [(0, -1, 0, 80)]
    assert AllSlowLevelSolver().solve(FRAC).objective == 132
    g = GreedyLevelSolver().solve(FRAC)
    assert validate_levels(FRAC, g.solution) == [] and g.objective >= 112
    # Per-op bounds: op 0 = 40; op 1 = min(92, W fast 32, X fast 79) = 32 -> 72 <= 112.
    assert op_duration_lower_bounds(FRAC) == (40, 32) and makespan_lower_bound(FRAC) == 72


def test_greedy_hint_is_exactly_feasible_with_fractions():
    # The CP-SAT roofline p*cf >= q*FB, p*cf <= q*FB + p - 1 accepts the greedy's exact times.
    for p in (FRAC, LevelProblem((503, 0), ((), (0,)), ((), ()), (8001,), (1 << 20, BIG), (VMEM, HBM),
                                 dma_latency_cycles=500)):
        hint = plan_greedy(p)
        model, v = build_level_model(p, hint.makespan_cycles, 0, hint)
        solver = cp_model.CpSolver()
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.num_workers = 1
        assert solver.solve(model) == cp_model.OPTIMAL
        assert retime(p, v.extract(solver)).makespan_cycles == hint.makespan_cycles


def _scaled(p: LevelProblem, rates) -> LevelProblem:
    return LevelProblem(p.compute_cycles, p.reads, p.writes, p.tensor_bytes, p.capacity_bytes, rates[:2],
                        dma_bytes_per_cycle=rates[2], dma_latency_cycles=p.dma_latency_cycles,
                        live_out=p.live_out, fast_only_ops=p.fast_only_ops, splits=p.splits)


def test_ints_and_equal_fractions_give_identical_solutions():
    # A 4-layer chain: weights 24 B, activations 16 B, fast 64 B at 8, slow 2, DMA 3 B/cycle.
    compute, reads, writes, sizes, x = [], [], [], [16], 0
    for _ in range(4):
        sizes += [24, 16]
        compute.append(3)
        reads.append((x, len(sizes) - 2))
        writes.append((len(sizes) - 1,))
        x = len(sizes) - 1
    ints = LevelProblem(tuple(compute), tuple(reads), tuple(writes), tuple(sizes), (64, BIG), (8, 2),
                        dma_bytes_per_cycle=3, dma_latency_cycles=1, live_out=(x,))
    fracs = _scaled(ints, (Fraction(16, 2), Fraction(6, 3), Fraction(9, 3)))
    assert ints == fracs
    opts = SolveOptions(time_limit_s=5, num_workers=1, random_seed=7)
    a, b = CpSatLevelSolver().solve(ints, opts), CpSatLevelSolver().solve(fracs, opts)
    assert a.status is b.status is Status.OPTIMAL
    assert a.solution == b.solution and a.objective == b.objective
    assert plan_greedy(ints) == plan_greedy(fracs)


def test_split_expansion_keeps_exact_rates():
    p = LevelProblem((4, 10), ((), (0, 1)), ((0,), ()), (8, 6), (16, BIG), (VMEM, HBM),
                     dma_bytes_per_cycle=Fraction(5, 3), splits=(SplitGroup(1, 1, (0,)),))
    q, _ = expand_splits(p, (2,))
    assert q.bandwidth_bytes_per_cycle == (VMEM, HBM) and q.dma_bytes_per_cycle == Fraction(5, 3)


def test_coefficients_too_fine_for_cpsat_fall_back_to_the_baseline():
    # Slow 1e-12 B/cycle: W (1e9 B) read slow would take 1e21 cycles, and 1e12 * 1e9 does
    # not fit CP-SAT's 64-bit terms. Fast and DMA 1 B/cycle: W's prefetch (1e9) overlaps
    # op 0 (5e8), op 1 reads it fast in 1e9 -> 2e9, the greedy plan, kept as FEASIBLE
    # with the bound 5e8 + 1e9 (the bound ignores the exposed half of the DMA).
    p = LevelProblem((5 * 10**8, 0), ((), (0,)), ((), ()), (10**9,), (10**10, 10**10),
                     (1, Fraction(1, 10**12)), dma_bytes_per_cycle=1)
    assert not exact_model_fits(p)
    with pytest.raises(ValueError, match="overflow"):
        build_level_model(p)
    r = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=1))
    assert r.status is Status.FEASIBLE and validate_levels(p, r.solution) == []
    assert (r.objective, r.bound) == (2 * 10**9, 15 * 10**8)


# ------------------------------------------------------------------- brute force ---------

RATES = [Fraction(4), Fraction(7, 2), Fraction(8, 3)]
SLOW_RATES = [Fraction(1), Fraction(2, 3), Fraction(3, 2)]
DMA_RATES = [Fraction(0), Fraction(1), Fraction(3, 4), Fraction(5, 3)]


def tiny_fractional_problems():
    return level_problems(fast_rates=RATES, slow_rates=SLOW_RATES, dma_rates=DMA_RATES, max_latency=2,
                          slow_capacity=BIG)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_fractional_problems())
def test_cpsat_equals_brute_force_with_fractional_rates(p):
    expected = brute_force(p)
    r = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=10, num_workers=1, random_seed=0))
    if expected is None:
        assert r.status is Status.INFEASIBLE
        return
    assert r.status is Status.OPTIMAL
    assert validate_levels(p, r.solution) == []
    assert r.objective == expected == replay_levels(p, r.solution).makespan_cycles
    assert makespan_lower_bound(p) <= expected
    g = GreedyLevelSolver().solve(p)
    if g.solution is not None:
        assert validate_levels(p, g.solution) == [] and g.objective >= expected
