"""Max-load partitioning: hand-checked optima, the communication model, contiguity,
bounds, greedy, and CP-SAT against brute force on random small graphs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.placement import (CpSatPlacementSolver, GreedyPlacementSolver, PlacementProblem, PlacementSolution,
                               contiguity_violations, device_loads, greedy_placement, lower_bound, max_load,
                               validate_placement)


@pytest.fixture
def options() -> SolveOptions:
    return SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def chain(times, comm, k, c=0, cpu=None, contiguous=False, **kw) -> PlacementProblem:
    n = len(times)
    return PlacementProblem(tuple(times), tuple(cpu or [100 * t for t in times]), tuple(comm),
                            tuple((i, i + 1) for i in range(n - 1)), k, c, contiguous=contiguous, **kw)


# ----------------------------------------------------------------------------- the objective

def test_comm_is_paid_once_per_source_and_consuming_accelerator():
    # u=0 feeds 1, 2 (on acc1) and 3 (on acc2): acc0 pays cost(u)=5 once, acc1 once, acc2 once.
    p = PlacementProblem((1, 1, 1, 1), (9, 9, 9, 9), (5, 0, 0, 0), ((0, 1), (0, 2), (0, 3)), 3, 0)
    assert device_loads(p, (0, 1, 1, 2)) == (1 + 5, 2 + 5, 1 + 5)
    # the CPU pays no communication: u on the CPU, consumers on acc0
    p2 = PlacementProblem((1, 1), (9, 9), (5, 0), ((0, 1),), 1, 1)
    assert device_loads(p2, (1, 0)) == (1 + 5, 9)


def test_validator_catches_each_rule():
    p = PlacementProblem((1, -1, 1), (9, 9, 9), (0, 0, 0), ((0, 1), (1, 2)), 2, 1, size_bytes=(3, 0, 3),
                         memory_bytes=5, color_classes=((0, 2),))
    assert validate_placement(p, PlacementSolution((0, 2, 0))) == ["accelerator 0 holds 6 bytes > 5"]
    assert validate_placement(p, PlacementSolution((0, 0, 0))) == ["node 1 may not run on an accelerator (device 0)"]
    assert validate_placement(p, PlacementSolution((0, 2, 1))) == ["colour class [0, 2] is split over devices [0, 1]"]
    assert validate_placement(p, PlacementSolution((2, 2, 2))) == []


def test_contiguity_ignores_backward_nodes():
    # forward 0 -> 1 -> 2, backward 3 fed by 2 and feeding 0's gradient... device 0 = {0, 2} is not convex.
    p = PlacementProblem((1,) * 4, (1,) * 4, (0,) * 4, ((0, 1), (1, 2), (2, 3)), 2, 0,
                         is_backward=(False, False, False, True), contiguous=True)
    assert contiguity_violations(p, (0, 1, 0, 1))
    assert contiguity_violations(p, (0, 0, 1, 0)) == []  # node 3 is backward: not constrained


# ----------------------------------------------------------------------------- exact optima

def test_chain_split_in_the_middle(options):
    # 4 x 3 on two accelerators; a cut after node 1 costs comm 1 on both sides: 3 + 3 + 1 = 7.
    p = chain([3, 3, 3, 3], [1, 1, 1, 0], k=2)
    r = CpSatPlacementSolver().solve(p, options)
    assert (r.status, r.objective, r.bound) == (Status.OPTIMAL, 7, 7)
    assert not validate_placement(p, r.solution)


def test_non_contiguous_beats_contiguous(options):
    # chain 1 -> 4 -> 1 on two accelerators, no communication cost.
    # contiguous: {0,1}|{2} or {0}|{1,2}: 5.  Non-contiguous: {0, 2}|{1}: max(2, 4) = 4.
    nc = chain([1, 4, 1], [0, 0, 0], k=2)
    co = chain([1, 4, 1], [0, 0, 0], k=2, contiguous=True)
    r_nc = CpSatPlacementSolver().solve(nc, options)
    r_co = CpSatPlacementSolver().solve(co, options)
    assert (r_nc.status, r_nc.objective) == (Status.OPTIMAL, 4)
    assert (r_co.status, r_co.objective) == (Status.OPTIMAL, 5)
    assert not contiguity_violations(co, r_co.solution.device_of)


def test_memory_colour_and_cpu_only(options):
    # The tiny dnn file in ms x 1000: node 0 (2000, 60 B), {1, 2} colour class (2000 + 1000, 70 B),
    # node 3 CPU only (500). Memory 100 B keeps 0 apart from {1, 2}.
    # acc0 {0}: 2000 + 250 out; acc1 {1,2}: 3000 + 250 in + 125 out (2 -> CPU); CPU {3}: 500 -> 3375.
    p = PlacementProblem((2000, 2000, 1000, -1), (10000, 10000, 10000, 500), (250, 500, 125, 0),
                         ((0, 1), (1, 2), (2, 3)), 2, 1, size_bytes=(60, 60, 10, 0), memory_bytes=100,
                         color_classes=((1, 2),))
    r = CpSatPlacementSolver().solve(p, options)
    assert (r.status, r.objective) == (Status.OPTIMAL, 3375)
    dev = r.solution.device_of
    assert dev[3] == 2 and dev[1] == dev[2] != dev[0]


def test_hint_is_used_and_checked(options):
    p = chain([3, 3, 3, 3], [1, 1, 1, 0], k=2)
    from dataclasses import replace
    from ortools.sat.python import cp_model

    from solvers.placement.cpsat import add_hint, build, canonical

    model, v = build(p)
    add_hint(model, p, v, canonical(p, (1, 1, 0, 0), v.groups))
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL  # the hint is complete and feasible
    assert solver.value(v.maxload) == 7
    r = CpSatPlacementSolver().solve(p, replace(options, hint=PlacementSolution((1, 1, 0, 0))))
    assert r.objective == 7


def test_bounds_are_proven_and_greedy_is_feasible():
    p = chain([5, 5, 5], [1, 1, 1], k=2, c=1, cpu=[50, 50, 50])
    # fractional: the CPU may take 8 units of time (8/50 of a node): 15 - 0.8 <= 2 * 8, 7 fails
    assert lower_bound(p) == 8
    g = greedy_placement(p)
    assert g is not None and not validate_placement(p, g)
    assert max_load(p, g.device_of) >= 8
    r = GreedyPlacementSolver().solve(p)
    assert r.status is Status.FEASIBLE and r.bound is None


# ----------------------------------------------------------------------------- brute force

def _brute(p: PlacementProblem) -> int | None:
    best = None
    for dev in itertools.product(range(p.num_devices), repeat=p.num_nodes):
        if validate_placement(p, PlacementSolution(dev)):
            continue
        m = max_load(p, dev)
        best = m if best is None or m < best else best
    return best


@st.composite
def small_problems(draw):
    n = draw(st.integers(2, 5))
    edges = tuple((u, v) for u in range(n) for v in range(u + 1, n) if draw(st.booleans()))
    acc = tuple(draw(st.integers(0, 9)) if draw(st.integers(0, 5)) else -1 for _ in range(n))
    cpu = tuple(draw(st.integers(0, 30)) for _ in range(n))
    comm = tuple(draw(st.integers(0, 4)) for _ in range(n))
    k = draw(st.integers(1, 2))
    c = draw(st.integers(0, 1))
    if c == 0:
        acc = tuple(max(a, 0) for a in acc)
    size = tuple(draw(st.integers(0, 3)) for _ in range(n))
    mem = draw(st.sampled_from([0, 4, 6]))
    contiguous = draw(st.booleans())
    cls = ((0, n - 1),) if n >= 3 and draw(st.booleans()) else ()
    return PlacementProblem(acc, cpu, comm, edges, k, c, size_bytes=size, memory_bytes=mem,
                            color_classes=cls, contiguous=contiguous)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_cpsat_matches_brute_force(p):
    best = _brute(p)
    r = CpSatPlacementSolver().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    if best is None:
        assert not r.status.has_solution
        return
    assert r.status is Status.OPTIMAL
    assert r.objective == best
    assert not validate_placement(p, r.solution)
    assert lower_bound(p) <= best
    g = greedy_placement(p)
    if g is not None:
        assert not validate_placement(p, g) and max_load(p, g.device_of) >= best
