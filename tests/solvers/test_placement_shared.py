"""Max-load's placement counts a weight or graph input several nodes read once per accelerator
(``PlacementProblem.shared_resident``), as lowering allocates it: the validator, the greedy
split, CP-SAT and the group bound, checked against brute force on small random instances."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.placement import (
    CpSatPlacementSolver,
    PlacementProblem,
    PlacementSolution,
    greedy_placement,
    linear_split,
    lower_bound,
    max_load,
    validate_placement,
)
from tests.sweeps import examples, random_sweep

_OPTIONS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def _pair_on_one_accelerator() -> PlacementProblem:
    # Nodes 0 and 1 each read one 5-byte weight and hold 1 byte of their own (size 6 each); the
    # accelerator holds 7. Held once, both fit it: load 2 + 2 = 4. Counted per reader (12 > 7)
    # one must go to the CPU, 20 cycles there.
    return PlacementProblem(acc_time=(2, 2), cpu_time=(20, 20), comm_time=(0, 0), edges=((0, 1),),
                            num_accelerators=1, num_cpus=1, size_bytes=(6, 6), memory_bytes=7,
                            shared_resident=((5, (0, 1)),))


def test_the_validator_holds_a_shared_weight_once_per_accelerator():
    p = _pair_on_one_accelerator()
    assert validate_placement(p, PlacementSolution((0, 0))) == []
    assert validate_placement(replace(p, shared_resident=()), PlacementSolution((0, 0))) == [
        "accelerator 0 holds 12 bytes > 7"]


def test_greedy_and_cpsat_put_both_readers_on_the_accelerator():
    p = _pair_on_one_accelerator()
    assert linear_split(p, 4) == (0, 0)  # the split's segment holds the weight once
    assert linear_split(replace(p, shared_resident=()), 4) is None
    assert greedy_placement(p).device_of == (0, 0)
    r = CpSatPlacementSolver().solve(p, _OPTIONS)
    assert (r.status, r.objective, r.solution.device_of) == (Status.OPTIMAL, 4, (0, 0))
    per_reader = CpSatPlacementSolver().solve(replace(p, shared_resident=()), _OPTIONS)
    assert per_reader.objective == 20  # one reader refused: it runs on the CPU


def test_a_colour_class_of_readers_fits_an_accelerator_for_the_bound_and_the_model():
    # Both readers in one colour class: 7 bytes held, so the group may use the accelerator.
    p = replace(_pair_on_one_accelerator(), color_classes=((0, 1),))
    assert lower_bound(p) == 4
    assert CpSatPlacementSolver().solve(p, _OPTIONS).objective == 4
    assert lower_bound(replace(p, shared_resident=())) == 40  # per reader: CPU only


@st.composite
def shared_placements(draw):
    """2-5 nodes in a random DAG, one or two accelerators and at most one CPU, tight memory,
    one to three shared tensors."""
    n = draw(st.integers(2, 5))
    k = draw(st.integers(1, 2))
    c = draw(st.integers(0 if k else 1, 1))
    edges = tuple((u, v) for u in range(n) for v in range(u + 1, n) if draw(st.booleans()))
    size = [draw(st.integers(0, 3)) for _ in range(n)]
    shared = []
    for _ in range(draw(st.integers(1, 3))):
        readers = tuple(sorted(draw(st.sets(st.integers(0, n - 1), min_size=2, max_size=n))))
        b = draw(st.integers(1, 6))
        shared.append((b, readers))
        for i in readers:
            size[i] += b
    acc = tuple(draw(st.integers(1, 9)) for _ in range(n))
    cpu = tuple(draw(st.integers(1, 30)) for _ in range(n))
    comm = tuple(draw(st.integers(0, 4)) for _ in range(n))
    memory = draw(st.integers(max(size), sum(size)))
    return PlacementProblem(acc, cpu, comm, edges, k, c, size_bytes=tuple(size), memory_bytes=memory,
                            shared_resident=tuple(shared), contiguous=draw(st.booleans()))


def _brute_force(p: PlacementProblem) -> int | None:
    best = None
    for dev in itertools.product(range(p.num_devices), repeat=p.num_nodes):
        if not validate_placement(p, PlacementSolution(dev)):
            load = max_load(p, dev)
            best = load if best is None else min(best, load)
    return best


_SETTINGS = settings(max_examples=examples(25, 300), deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])


@random_sweep
@_SETTINGS
@given(shared_placements())
def test_cpsat_equals_brute_force_and_greedy_and_the_bound_hold_with_shared_tensors(p):
    best = _brute_force(p)
    r = CpSatPlacementSolver().solve(p, _OPTIONS)
    if best is None:
        assert r.solution is None
        return
    assert (r.status, r.objective) == (Status.OPTIMAL, best)
    assert validate_placement(p, r.solution) == []
    assert lower_bound(p) <= best
    g = greedy_placement(p)
    if g is not None:
        assert validate_placement(p, g) == [] and max_load(p, g.device_of) >= best


def test_the_brute_force_counts_shared_tensors_once():
    # The sweep's oracle itself: with the weight held once, the accelerator takes both nodes.
    assert _brute_force(_pair_on_one_accelerator()) == 4
