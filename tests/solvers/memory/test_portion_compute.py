"""Split groups with the ISA's per-factor portion compute (fill and drain included)."""

from __future__ import annotations

import pytest

from solvers.core import SolveOptions, Status
from solvers.memory.levels import (
    CpSatLevelSolver, GreedyLevelSolver, LevelProblem, SplitGroup, expand_splits, validate_levels,
)

BIG = 10**6


@pytest.fixture
def default_options() -> SolveOptions:
    return SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def chain3(group: SplitGroup) -> LevelProblem:
    # op 0 (compute 5) writes x (8 B); op 1 (10) reads x writes y (8 B); op 2 (20) reads y
    # writes z (8 B, live-out); ops 1..2 are the split group over x, y, z.
    return LevelProblem((5, 10, 20), ((), (0,), (1,)), ((0,), (1,), (2,)), (8, 8, 8), (64, BIG), (4, 1),
                        live_out=(2,), splits=(group,))


def test_expand_uses_the_row_of_the_chosen_factor():
    p = chain3(SplitGroup(1, 2, (0, 1, 2), factors=(1, 2, 4), portion_compute=((10, 20), (6, 11), (4, 6))))
    q2, m2 = expand_splits(p, (2,))
    assert q2.compute_cycles == (5, 6, 11, 6, 11)  # not ceil(10/2), ceil(20/2) = 5, 10
    assert m2.op_origin == ((0, 0), (1, 0), (2, 0), (1, 1), (2, 1))
    assert q2.tensor_bytes == (4, 4, 4, 4, 4, 4)
    q4, _ = expand_splits(p, (4,))
    assert q4.compute_cycles == (5,) + (4, 6) * 4
    assert expand_splits(p, (1,))[0].compute_cycles == (5, 10, 20)
    # Without the table: ceil(compute / k).
    d = chain3(SplitGroup(1, 2, (0, 1, 2), factors=(1, 2, 4)))
    assert expand_splits(d, (4,))[0].compute_cycles == (5,) + (3, 5) * 4


def test_rows_follow_the_factors_when_they_are_sorted():
    g = SplitGroup(1, 2, (2, 1, 0), factors=(4, 1, 2), portion_compute=((4, 6), (10, 20), (6, 11)))
    assert g.factors == (1, 2, 4) and g.portion_compute == ((10, 20), (6, 11), (4, 6))
    assert g.compute_for(2) == (6, 11) and g.tensors == (0, 1, 2)
    # A factor listed twice with the same row is fine.
    assert SplitGroup(1, 1, (0,), factors=(2, 2), portion_compute=((7,), (7,))).factors == (2,)


@pytest.mark.parametrize("kwargs, message", [
    ({"factors": (1, 2), "portion_compute": ((10, 20),)}, r"one row per factor \(2\), got 1"),
    ({"factors": (1, 2), "portion_compute": ((10, 20), (6,))}, r"row of factor 2 needs one entry per op \(2\), got 1"),
    ({"factors": (1, 2), "portion_compute": ((10, 20), (6, -1))}, "ints >= 0"),
    ({"factors": (1, 2), "portion_compute": ((10, 20), (6, 1.5))}, "ints >= 0"),
    ({"factors": (2, 2), "portion_compute": ((6, 11), (6, 12))}, "factor 2 is listed twice"),
])
def test_bad_tables_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SplitGroup(1, 2, (0, 1, 2), **kwargs)


def test_factor_one_row_must_be_the_ops_compute():
    with pytest.raises(ValueError, match=r"portion_compute for factor 1 \(10, 21\) differs"):
        chain3(SplitGroup(1, 2, (0, 1, 2), factors=(1, 2), portion_compute=((10, 21), (6, 11))))
    with pytest.raises(ValueError, match="factor 3 is not allowed"):
        SplitGroup(1, 2, (0,), factors=(1, 2)).compute_for(3)


# The SPLIT instance of test_memory_levels with the ISA's portion cost: one fast-only op
# (compute 100) reads X (60 B, split) and W (20 B, whole), writes Y (60 B, split,
# live-out); fast 100 B at 10 B/cycle, slow and DMA 1 B/cycle. k=1: 140 B > 100,
# infeasible. k=2: a half portion costs 60 cycles (not 50). X0 and W are prefetched first
# (30 + 20 = 50, exposed) -> P0 [50, 110); X1 cannot come in during P0 (80 + 30 > 100)
# and Y0 cannot stay during P1, so after P0 the engine evicts Y0 [110, 140) and
# prefetches X1 [140, 170); P1 [170, 230); Y1 is evicted [230, 260): makespan 260
# (with ceil(100/2) = 50 per portion it is 240).
SPLIT_ISA = LevelProblem(compute_cycles=(100,), reads=((0, 1),), writes=((2,),), tensor_bytes=(60, 20, 60),
                         capacity_bytes=(100, BIG), bandwidth_bytes_per_cycle=(10, 1), live_out=(2,),
                         fast_only_ops=(0,),
                         splits=(SplitGroup(0, 0, (0, 2), (1, 2), portion_compute=((100,), (60,))),),
                         tensor_names=("X", "W", "Y"))


def test_cpsat_uses_the_portion_cost(default_options):
    r = CpSatLevelSolver().solve(SPLIT_ISA, default_options)
    assert r.status is Status.OPTIMAL and r.objective == 260
    assert r.solution.split_factors == (2,)
    assert r.solution.op_start == (50, 170) and r.solution.op_duration == (60, 60)
    assert validate_levels(SPLIT_ISA, r.solution) == []
    g = GreedyLevelSolver().solve(SPLIT_ISA)
    assert g.solution is None or (validate_levels(SPLIT_ISA, g.solution) == [] and g.objective >= 260)


# One op (compute 100) reads X (60 B, split, input) and writes Y (60 B, split, live-out);
# fast 100 B at 10 B/cycle; slow and DMA 1 B/cycle. Factors 1 and 2.
# * k=1: X + Y = 120 B > 100, so one of them is slow. X fast needs its 60-cycle prefetch
#   before the op (>= 160); Y fast needs its 60-cycle eviction after it (>= 160); both
#   slow: max(100, 120/1) = 120, the best for k=1.
# * k=2 at ceil(100/2) = 50 per portion: X1 is prefetched [0, 30) while P0 reads X0 slow
#   and writes Y0 fast (max(50, 30 + 3) = 50); P1 reads X1 fast and writes Y1 slow
#   (max(50, 3 + 30) = 50) while Y0 is evicted [50, 80): 100 = the compute, optimal.
# * k=2 at the ISA's 70 per portion: >= 140 > 120, so k=1 wins with 120.
def _one_op(table) -> LevelProblem:
    group = SplitGroup(0, 0, (0, 1), (1, 2), portion_compute=table)
    return LevelProblem((100,), ((0,),), ((1,),), (60, 60), (100, BIG), (10, 1), live_out=(1,), splits=(group,))


@pytest.mark.parametrize("table, objective, factors", [((), 100, (2,)), (((100,), (70,)), 120, (1,))])
def test_portion_cost_changes_the_split_choice(table, objective, factors, default_options):
    p = _one_op(table)
    r = CpSatLevelSolver().solve(p, default_options)
    assert r.status is Status.OPTIMAL and r.objective == objective and r.solution.split_factors == factors
    assert validate_levels(p, r.solution) == []
    per = {tuple(x["factors"]): x["objective"] for x in r.stats["per_split"]}
    assert per[(1,)] == 120 and (per[(2,)] == 100 if not table else per[(2,)] >= 140)
