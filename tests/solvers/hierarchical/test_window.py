"""The neighbourhood model: the incumbent solves it, and every solution is a valid schedule."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solvers.hierarchical import (GraphIndex, Neighbourhood, ScheduleState, add_window_hint,
                                  apply_move, build_window, compact, compute_boundary, extract_window)
from solvers.scheduling import HeftScheduler, SchedulingProblem, SchedulingSolution, validate_schedule
from tests.solvers.hierarchical.random_problems import problems


def _neighbourhood(state: ScheduleState, seed: int, size: int, kind: str) -> Neighbourhood:
    """Ops starting in a random time window; ``kind == "devices"``: only those on two devices."""
    rng = random.Random(seed)
    starts = sorted(set(state.start.tolist()))
    t0 = rng.choice(starts)
    later = [s for s in starts if s > t0]
    t1 = later[min(len(later) - 1, size)] if later else state.makespan() + 1
    nd = state.graph.problem.num_devices
    devices = tuple(range(nd))
    if kind == "devices" and nd > 2:
        devices = tuple(sorted(rng.sample(range(nd), 2)))
    ops = tuple(i for i in range(len(state.dev)) if t0 <= state.start[i] < t1
                and (kind != "devices" or state.dev[i] in devices))
    return Neighbourhood(ops, t0, t1, devices, kind)


def _solve(model: cp_model.CpModel, fix: bool = False) -> tuple[int, cp_model.CpSolver]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = 5.0
    solver.parameters.fix_variables_to_their_hinted_value = fix
    return solver.solve(model), solver


def _heft_state(p: SchedulingProblem) -> ScheduleState | None:
    r = HeftScheduler().solve(p)
    return None if r.solution is None else ScheduleState(GraphIndex.of(p), r.solution)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=20, memory=True, colocation=True), st.integers(0, 10**6), st.integers(1, 8),
       st.sampled_from(["window", "devices"]))
def test_the_incumbent_is_a_solution_of_every_neighbourhood_model(p, seed, size, kind):
    state = _heft_state(p)
    assume(state is not None)
    nb = _neighbourhood(state, seed, size, kind)
    assume(nb.ops)
    model, v = build_window(state, nb)
    add_window_hint(model, state, v)
    code, solver = _solve(model, fix=True)
    assert code in (cp_model.OPTIMAL, cp_model.FEASIBLE), solver.status_name(code)
    move = extract_window(solver, state, v)
    assert move.delta == 0 and move.makespan == state.makespan()
    assert {(i, d, s) for i, d, _k, s in move.ops} == {(i, int(state.dev[i]), int(state.start[i]))
                                                       for i in nb.ops}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=20, colocation=True), st.integers(0, 10**6), st.integers(1, 8),
       st.sampled_from(["window", "devices"]))
def test_the_best_move_is_a_valid_schedule_no_longer_than_before(p, seed, size, kind):
    state = _heft_state(p)
    assume(state is not None)
    nb = _neighbourhood(state, seed, size, kind)
    assume(nb.ops)
    before = state.makespan()
    boundary = compute_boundary(state, nb)
    model, v = build_window(state, nb, boundary)
    add_window_hint(model, state, v)
    code, solver = _solve(model)
    assert code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    move = extract_window(solver, state, v)
    apply_move(state, move, boundary)
    assert validate_schedule(p, state.to_solution()) == []
    assert state.makespan() <= move.makespan <= before
    compact(state)
    assert validate_schedule(p, state.to_solution()) == []
    assert state.makespan() <= move.makespan


def test_a_window_moves_an_op_to_an_idle_device_and_the_tail_follows():
    # a(4) -> b(4) -> c(4) on device 0, and x(4) independent after a on device 0 too:
    # a [0,4), x [4,8), b [8,12), c [12,16). Freeing x (window [4, 5)) lets it run on the
    # idle device 1 (from t0 = 4: free ops never start before the window); b and c are
    # shifted by delta = -4: a, b, c back to back = 12.
    p = SchedulingProblem(((4, 4),) * 4, ((0, 1, 0), (1, 2, 0)), (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    s = SchedulingSolution((0, 0, 0, 0), (0,) * 4, (0, 8, 12, 4), (4,) * 4, ())
    state = ScheduleState(GraphIndex.of(p), s)
    nb = Neighbourhood((3,), 4, 5, (0, 1))
    boundary = compute_boundary(state, nb)
    assert boundary.delta_floor == -4  # b may start when a ends, 4 cycles earlier
    model, v = build_window(state, nb, boundary)
    add_window_hint(model, state, v)
    code, solver = _solve(model)
    assert code == cp_model.OPTIMAL
    move = extract_window(solver, state, v)
    assert move.delta == -4 and move.makespan == 12 and move.ops[0][1] == 1
    apply_move(state, move, boundary)
    assert state.start.tolist() == [0, 4, 8, 4] and validate_schedule(p, state.to_solution()) == []


def test_compaction_keeps_each_resource_order_and_never_delays():
    p = SchedulingProblem(((3, 3), (2, 2), (4, 4)), ((0, 2, 8), (1, 2, 8)), (1, 1),
                          ((-1, 0), (0, -1)), ((5,), (5,)))
    # op 1 on device 1 runs late and its transfer waits: compaction pulls both in
    s = SchedulingSolution((0, 1, 0), (0, 0, 0), (0, 10, 20), (3, 2, 4),
                           (__import__("solvers.scheduling", fromlist=["ScheduledTransfer"])
                            .ScheduledTransfer(1, 0, 13, 5),))
    state = ScheduleState(GraphIndex.of(p), s)
    compact(state)
    assert state.start.tolist() == [0, 0, 7] and state.t_start.tolist() == [0, 2]
    assert validate_schedule(p, state.to_solution()) == [] and state.makespan() == 11
    assert np.all(state.start <= np.array(s.op_start))
