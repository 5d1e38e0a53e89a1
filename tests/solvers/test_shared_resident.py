"""Shared resident tensors (``SchedulingProblem.shared_resident``): a tensor several ops read
is held once per device. The brute force (tests/solvers/test_scheduling_bruteforce.py) counts
it so; CP-SAT must reach that optimum, heuristics stay valid, and every bound (which counts
each reader's share ``bytes // k``) stays at most the optimum."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.scheduling import (CpSatScheduler, HeftScheduler, SchedulingProblem, lower_bound, lower_bounds,
                                objective_value, validate_schedule)
from solvers.scheduling.linear_relaxation import lp_relaxation
from solvers.scheduling.path_bounds import memory_path_bound, placement_path_bound
from tests.solvers.test_bounds_soundness import problems
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep


@st.composite
def shared_problems(draw):
    """A problem of test_bounds_soundness with memory, plus one or two resident tensors that
    two or more ops read (their bytes added to each reader's resident bytes)."""
    p = draw(problems())
    n = p.num_ops
    if n < 2:
        return p
    resident = list(p.op_resident_bytes or (0,) * n)
    shared = []
    for _ in range(draw(st.integers(1, 2))):
        readers = sorted(set(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=n))))
        if len(readers) < 2:
            continue
        size = draw(st.integers(1, 6))
        for i in readers:
            resident[i] += size
        shared.append((size, tuple(readers)))
        if draw(st.booleans()):  # readers on one device: where counting per reader overstates most
            p = replace(p, colocation_groups=p.colocation_groups + (tuple(readers),))
    memory = p.device_memory_bytes or tuple(draw(st.sampled_from([0, 6, 9, 12])) for _ in range(p.num_devices))
    edges = tuple((u, v, 0) for u, v, _ in p.edges)  # the brute force counts resident bytes, no buffers
    return replace(p, edges=edges, op_resident_bytes=tuple(resident), device_memory_bytes=memory,
                   shared_resident=tuple(shared))


def test_a_device_holds_a_shared_tensor_once_and_the_validator_counts_so():
    # Ops 0 and 1 each read a 6-byte input and nothing else; the device holds 8 bytes: counted
    # per reader (12) nothing fits, counted once both run there.
    p = SchedulingProblem(((2,), (3,)), (), (1,), ((-1,),), (), device_memory_bytes=(8,),
                          op_resident_bytes=(6, 6), shared_resident=((6, (0, 1)),))
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    assert (r.status, r.objective) == (Status.OPTIMAL, 5)
    assert validate_schedule(p, r.solution) == []
    assert validate_schedule(replace(p, shared_resident=()), r.solution) != []  # per reader: 12 > 8
    assert brute_force(p) == 5 and brute_force(replace(p, shared_resident=())) is None


def test_bounds_count_a_shared_tensor_at_most_once_per_device():
    # The same two ops, colocated, may also run on a slow device without a memory limit. Both
    # fit on the fast one (6 bytes of 8 held once): optimum 5. Counted per reader (12 > 8) the
    # bounds' forced placements would send both to the slow device and claim 50.
    p = SchedulingProblem(((2, 20), (3, 30)), (), (1, 1), ((-1, 0), (0, -1)), (), device_memory_bytes=(8, 0),
                          op_resident_bytes=(6, 6), colocation_groups=((0, 1),), shared_resident=((6, (0, 1)),))
    assert brute_force(p) == 5
    parts = lower_bounds(p)
    parts.update(placement_path=placement_path_bound(p), memory_path=memory_path_bound(p),
                 lp=lp_relaxation(p).bound, overall=lower_bound(p))
    assert max(parts.values()) <= 5, parts
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    assert (r.status, r.objective, r.bound) == (Status.OPTIMAL, 5, 5)


_SETTINGS = settings(max_examples=examples(25, 200), deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@random_sweep
@_SETTINGS
@given(shared_problems())
def test_with_shared_tensors_cpsat_reaches_the_optimum_and_every_bound_stays_below(p):
    opt = brute_force(p)
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    if opt is None:
        assert r.status is Status.INFEASIBLE
        return
    assert r.status is Status.OPTIMAL, r.stats
    assert validate_schedule(p, r.solution) == []
    assert r.objective == objective_value(p, r.solution) == opt
    parts = lower_bounds(p)
    parts.update(placement_path=placement_path_bound(p), memory_path=memory_path_bound(p),
                 lp=lp_relaxation(p).bound, overall=lower_bound(p), cpsat=r.bound)
    for name, value in parts.items():
        assert value <= opt, (name, value, opt, parts)
    h = HeftScheduler().solve(p)
    if h.solution is not None:
        assert validate_schedule(p, h.solution) == [] and h.objective >= opt


def test_the_hint_sets_every_held_literal_and_fixing_to_it_is_feasible():
    # Ops 0 and 2 read a 6-byte input on two devices of 10 bytes; the hint splits them, so
    # both devices hold it: held[0, d] is hinted true on each (a complete hint).
    from ortools.sat.python import cp_model

    from solvers.scheduling import SchedulingSolution, build
    from solvers.scheduling.cpsat.hints import add_hint
    p = SchedulingProblem(((2, 2), (2, 2), (2, 2)), (), (1, 1), ((-1, 0), (0, -1)), (), device_memory_bytes=(10, 10),
                          op_resident_bytes=(6, 4, 6), shared_resident=((6, (0, 2)),))
    hint = SchedulingSolution((0, 0, 1), (0, 0, 0), (0, 2, 0), (2, 2, 2), ())
    assert validate_schedule(p, hint) == []  # device 0 holds 6 + 4, device 1 holds 6
    model, v = build(p, horizon=4, symmetry_breaking=False)
    add_hint(model, p, v, hint)
    assert sorted(v.held) == [(0, 0), (0, 1)]
    hinted = dict(zip(model.proto.solution_hint.vars, model.proto.solution_hint.values))
    assert [hinted.get(v.held[0, d].index) for d in (0, 1)] == [1, 1]  # complete: every held literal hinted
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.fix_variables_to_their_hinted_value = True
    assert solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert v.extract(solver).op_device == hint.op_device
