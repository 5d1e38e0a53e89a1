"""Offset assignment: hand-checked optima, planted overlaps, conformance, hypothesis."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st
from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.memory.offsets import (
    CpSatOffsetSolver, FirstFitOffsetSolver, GreedyBySizeOffsetSolver, OffsetProblem, OffsetSolution,
    build_offset_model, live_bytes_lower_bound, peak_bytes, place_in_order, validate_offsets,
)


@pytest.fixture
def default_options() -> SolveOptions:
    return SolveOptions(time_limit_s=5, num_workers=1, random_seed=0)


# (problem, optimal peak). Arithmetic in the comments.
INSTANCES = {
    # Two buffers live together: 4 + 4 = 8; the third reuses address 0 later.
    "pair_then_reuse": (OffsetProblem((4, 4, 8), (0, 0, 1), (1, 1, 2), 64), 8),
    # Greedy-by-size gives 9; at step 2 the live bytes are 3 + 2 + 3 = 8 and 8 is reachable
    # (buffer 3 at 0, buffers 0 and 1 at 3, buffer 2 at 6).
    "greedy_suboptimal": (OffsetProblem((4, 3, 2, 3), (1, 2, 2, 1), (2, 3, 3, 4), 64), 8),
    # Alignment 4: sizes 3, 3, 3 live together. Offsets 0, 4, 8 -> peak 8 + 3 = 11
    # (= 4 + 4 + 3, the rounded live bound).
    "aligned": (OffsetProblem((3, 3, 3), (0, 0, 0), (1, 1, 1), 64, alignment_bytes=(4, 4, 4)), 11),
    # Staircase a=2 [0,2), b=2 [1,3), c=3 [2,4), d=1 [0,4). Live: t0 a+d=3, t1 a+b+d=5,
    # t2 b+c+d=6, t3 c+d=4 -> LB 6, reached by d=0, b=1, a=3, c=3 (a and c never live together).
    "staircase": (OffsetProblem((2, 2, 3, 1), (0, 1, 2, 0), (2, 3, 4, 4), 64), 6),
    # Interval graph with no overlap at all: every buffer at 0, peak = the largest (7).
    "disjoint": (OffsetProblem((5, 7, 3), (0, 1, 2), (1, 2, 3), 64), 7),
}

SOLVERS = [CpSatOffsetSolver(), GreedyBySizeOffsetSolver(), FirstFitOffsetSolver()]


def brute_force_peak(p: OffsetProblem) -> int:
    """Some order's lowest-fit placement is optimal (push an optimal plan down in offset order)."""
    return min(peak_bytes(p, place_in_order(p, order)) for order in itertools.permutations(range(p.num_buffers)))


def test_planted_overlap_is_rejected():
    p = OffsetProblem((4, 4, 4), (0, 1, 3), (2, 3, 4), 64)
    assert validate_offsets(p, OffsetSolution((0, 4, 0))) == []
    # Buffers 0 [0,2) and 1 [1,3) share step 1; addresses [0,4) and [2,6) share 2..3.
    errors = validate_offsets(p, OffsetSolution((0, 2, 0)))
    assert len(errors) == 1 and "buffers 0 [0, 4) and 1 [2, 6) overlap" in errors[0]
    # Buffer 2 [3,4) and 0 [0,2) never live together: same address is fine.
    assert validate_offsets(p, OffsetSolution((0, 4, 0))) == []


def test_validator_rejects_misalignment_and_capacity():
    p = OffsetProblem((4, 4), (0, 1), (1, 2), 8, alignment_bytes=(4, 4))
    assert validate_offsets(p, OffsetSolution((2, 0)))[0].endswith("is not a multiple of 4")
    assert "capacity 8" in validate_offsets(p, OffsetSolution((0, 8)))[0]
    assert validate_offsets(p, OffsetSolution((0,))) == ["expected 2 offsets, got 1"]


def test_lower_bound_rounds_for_alignment():
    p, _ = INSTANCES["aligned"]
    assert live_bytes_lower_bound(p) == 11  # 4 + 4 + 3


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_brute_force_agrees_with_hand_optimum(name):
    p, opt = INSTANCES[name]
    assert brute_force_peak(p) == opt


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.name)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_conformance(solver, name, default_options):
    p, opt = INSTANCES[name]
    r = solver.solve(p, default_options)
    assert r.status.has_solution
    assert validate_offsets(p, r.solution) == []
    assert r.objective == peak_bytes(p, r.solution)
    assert r.objective >= opt
    if r.bound is not None:
        assert r.bound <= r.objective
    if r.status is Status.OPTIMAL:
        assert r.gap == pytest.approx(0)
    if solver.name == "cpsat":
        assert r.status is Status.OPTIMAL and r.objective == opt
        assert r.objective <= GreedyBySizeOffsetSolver().solve(p).objective


def test_greedy_by_size_is_suboptimal_where_expected():
    p, _ = INSTANCES["greedy_suboptimal"]
    assert GreedyBySizeOffsetSolver().solve(p).objective == 9


def test_infeasible_capacity_is_proven():
    # Live bytes at step 0: 4 + 4 = 8 > capacity 6.
    r = CpSatOffsetSolver().solve(OffsetProblem((4, 4), (0, 0), (1, 1), 6))
    assert r.status is Status.INFEASIBLE and r.solution is None and r.bound == 8


def test_capacity_between_greedy_and_optimum():
    # Greedy needs 9 but capacity is 8: the heuristic gives up, CP-SAT finds the 8.
    p0, _ = INSTANCES["greedy_suboptimal"]
    p = OffsetProblem(p0.size_bytes, p0.start, p0.end, 8)
    assert GreedyBySizeOffsetSolver().solve(p).status is Status.UNKNOWN
    r = CpSatOffsetSolver().solve(p, SolveOptions(time_limit_s=5))
    assert r.status is Status.OPTIMAL and r.objective == 8 and validate_offsets(p, r.solution) == []


def test_greedy_hint_is_feasible_in_the_model():
    p, _ = INSTANCES["greedy_suboptimal"]
    hint = GreedyBySizeOffsetSolver().solve(p).solution
    model, v = build_offset_model(p, 9, live_bytes_lower_bound(p), hint)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    assert v.extract(solver) == hint and solver.value(v.peak) == 9


def test_zero_size_buffers_take_no_space():
    p = OffsetProblem((0, 5, 0), (0, 0, 0), (1, 1, 1), 5)
    r = CpSatOffsetSolver().solve(p)
    assert r.objective == 5 and validate_offsets(p, r.solution) == []


@st.composite
def small_problems(draw):
    n = draw(st.integers(1, 5))
    sizes = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    starts = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    lengths = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    align = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    return OffsetProblem(tuple(sizes), tuple(starts), tuple(s + d for s, d in zip(starts, lengths)), 1000,
                         alignment_bytes=tuple(align))


@settings(max_examples=60, deadline=None)
@given(small_problems())
def test_cpsat_equals_brute_force(p):
    r = CpSatOffsetSolver().solve(p, SolveOptions(time_limit_s=5))
    assert r.status is Status.OPTIMAL
    assert validate_offsets(p, r.solution) == []
    assert r.objective == brute_force_peak(p)
    assert live_bytes_lower_bound(p) <= r.objective


def place_by_definition(p: OffsetProblem, order) -> tuple[int, ...]:
    """place_in_order's definition, one pair at a time (its Python loop before numpy): each
    buffer at the lowest aligned offset below the first conflict, scanned by (offset, index)."""
    offsets, placed = [0] * p.num_buffers, []
    for i in order:
        if p.size_bytes[i]:
            candidate, a = 0, p.alignment(i)
            for o, j in sorted((offsets[j], j) for j in placed if p.overlaps_in_time(i, j)):
                if -(-candidate // a) * a + p.size_bytes[i] <= o:
                    break
                candidate = max(candidate, o + p.size_bytes[j])
            offsets[i] = -(-candidate // a) * a
            placed.append(i)
    return tuple(offsets)


@pytest.mark.parametrize("seed", range(4))
def test_place_in_order_equals_its_definition_on_random_problems(seed):
    # The placed buffers are kept sorted by (offset, index) with ties in offset common (zero-
    # size buffers, equal sizes, alignments): the offsets must be the one-pair-at-a-time loop's.
    rng = random.Random(seed)
    for _ in range(150):
        n = rng.randint(0, 30)
        sizes = tuple(rng.choice([0, 1, 3, 8, 64, 100, 128]) for _ in range(n))
        starts = [rng.randint(0, 15) for _ in range(n)]
        ends = tuple(s + rng.randint(1, 8) for s in starts)
        align = tuple(rng.choice([1, 2, 8, 64]) for _ in range(n)) if rng.random() < 0.7 else ()
        p = OffsetProblem(size_bytes=sizes, start=tuple(starts), end=ends, capacity_bytes=10**6,
                          alignment_bytes=align)
        order = list(range(n))
        rng.shuffle(order)
        assert place_in_order(p, order).offsets == place_by_definition(p, order)
