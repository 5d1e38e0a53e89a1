"""Window search in cycle time (solvers/memory/levels/stream_time_windows.py).

Judges: hand cases with the arithmetic shown; on random several-stream problems, every window
model's own solution (before the safety net of the replay and the validator) is a valid plan
that the independent per-cycle sweep finds inside the level and apart, the plan it starts from is
a solution of every window model (the restrictions never cut it), the result is never longer than
the start nor shorter than the exact model's optimum, and it repeats.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from solvers.core import SolveOptions, Status
from solvers.memory.levels import (LevelProblem, LevelSolution, fast_pieces, plan_all_slow, plan_greedy,
                                   replay_levels, validate_levels)
from solvers.memory.levels.stream_offsets import pack_tighter, retime_with_offsets, timed_by
from solvers.memory.levels.stream_time import solve_stream_time
from solvers.memory.levels.stream_time_windows import access_offsets, build_window_model, solve_stream_time_windows
from tests.solvers.memory.strategies import stream_level_problems
from tests.solvers.memory.test_stream_waits import sweep
from tests.sweeps import examples, random_sweep
from ortools.sat.python import cp_model

_OPTIONS = SolveOptions(time_limit_s=5, num_workers=1, random_seed=0)


def _two_streams(capacity: int) -> LevelProblem:
    # As in test_stream_time: op 0 (stream 0, compute 4) reads weight 0 (16 B); op 1 (stream 1,
    # compute 4) writes tensor 1 (16 B). Fast 8 B/cycle, slow 1 B/cycle, DMA 8 B/cycle: op 0 reads
    # fast after a 2-cycle prefetch in 4 cycles (slow: 16); op 1 writes fast in 4 (slow: 16).
    return LevelProblem((4, 4), ((0,), ()), ((), (1,)), (16, 16), (capacity, 10**6), (8, 1),
                        dma_bytes_per_cycle=8, op_streams=(0, 1))


def _start(p: LevelProblem, plan: LevelSolution) -> LevelSolution:
    """``plan`` timed by offsets packed for its streams (a valid incumbent with its offsets)."""
    timed = retime_with_offsets(p, plan)
    assert timed is not None and validate_levels(p, timed) == []
    return timed


def _solve(model: cp_model.CpModel, seconds: float = 5.0) -> tuple[cp_model.CpSolver, str]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = seconds
    status = solver.solve(model)
    return solver, solver.status_name(status)


def test_one_window_over_both_streams_finds_the_exact_optimum():
    # Everything slow: op 0 reads 16 B at 1 B/cycle (16), op 1 writes 16 B (16), side by side: 16.
    # One window of both ops: the prefetch [0, 2), op 0 fast [2, 6), op 1 fast [0, 4), apart in a
    # 32-B level: 6, the exact model's optimum.
    p = _two_streams(32)
    start = _start(p, plan_all_slow(p))
    assert start.makespan_cycles == 16
    r = solve_stream_time_windows(p, start, _OPTIONS, window_ops=2)
    assert r.objective == 6 and validate_levels(p, r.solution) == []
    assert sorted(r.solution.fast_offsets) == [0, 16]
    assert solve_stream_time(p, _OPTIONS).objective == 6


def test_a_window_of_one_op_moves_only_that_op():
    # Window of op 1 alone, op 0 fixed slow (its 16 cycles): op 1 writes fast (4), the plan still
    # takes 16 (op 0). Window of op 0 alone (op 1 fixed slow, 16): op 0 fast ends at 6, the plan
    # 16. So with one-op windows nothing gets shorter than 16, and the sweep doubles to two ops: 6.
    p = _two_streams(32)
    start = _start(p, plan_all_slow(p))
    r = solve_stream_time_windows(p, start, _OPTIONS, window_ops=1, max_window_ops=1)
    assert r.status is Status.UNKNOWN and r.solution is None
    r = solve_stream_time_windows(p, start, _OPTIONS, window_ops=1, max_window_ops=2)
    assert r.objective == 6


def test_a_full_level_keeps_the_streams_in_turn():
    # A 16-B level holds one of the two: the exact optimum is 10 (op 1's write waits for op 0's
    # free at one address: 2 + 4, then 4); the windows reach it, offsets both 0.
    p = _two_streams(16)
    start = _start(p, plan_all_slow(p))
    r = solve_stream_time_windows(p, start, _OPTIONS, window_ops=2)
    assert r.objective == 10 == solve_stream_time(p, _OPTIONS).objective
    assert r.solution.fast_offsets == (0, 0)


def test_offsets_off_the_alignment_are_not_taken():
    p = _two_streams(32)
    s = LevelSolution(((False, True), (True,)), ((False, False), (False,)), (), (0, 0), (4, 4), fast_offsets=(0, 8))
    assert access_offsets(p, s, 8) == {(0, 1): 0, (1, 0): 1}
    assert access_offsets(p, s, 16) is None


def test_what_window_search_does_not_take():
    p = _two_streams(32)
    one = LevelProblem((4,), ((),), ((0,),), (8,), (16, 99), (4, 1))
    try:
        solve_stream_time_windows(one, plan_all_slow(one), _OPTIONS)
    except ValueError as e:
        assert "several-stream" in str(e)
    else:
        raise AssertionError("one stream was taken")
    assert solve_stream_time_windows(p, _start(p, plan_all_slow(p)), _OPTIONS, window_ops=2).status in (
        Status.OPTIMAL, Status.FEASIBLE)


@random_sweep
@settings(max_examples=examples(12, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(stream_level_problems(min_ops=3, max_ops=6, max_tensors=4, streams=3))
def test_every_window_solution_is_a_valid_plan_and_the_start_is_one(p):
    if not p.multi_stream:
        return
    plan = plan_greedy(p)
    start = retime_with_offsets(p, plan) if plan is not None else None
    if start is None:
        return
    offsets = access_offsets(p, start, 1)
    for width in (1, 2):
        for lo in range(p.num_ops):
            window = range(lo, min(p.num_ops, lo + width))
            model, v, _ = build_window_model(p, start, window, 1, offsets)
            solver, status = _solve(model)
            # the start is a solution: the model finds a plan at most as long
            assert status in ("OPTIMAL", "FEASIBLE"), (window, status)
            found = v.extract(solver)
            assert found.makespan_cycles <= start.makespan_cycles
            # the model's own plan, before any replay, is valid with its offsets ...
            assert validate_levels(p, found) == [], (window, validate_levels(p, found)[:3])
            times = replay_levels(p, found)
            # ... and the replay of its offsets finds every live piece inside the level and apart
            sweep(p, found, found.fast_offsets, times.op_start, times.transfer_start)


@random_sweep
@settings(max_examples=examples(12, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(stream_level_problems(min_ops=3, max_ops=6, max_tensors=4, streams=2))
def test_window_search_is_never_longer_than_its_start_nor_shorter_than_the_optimum(p):
    if not p.multi_stream:
        return
    plan = plan_all_slow(p) or plan_greedy(p)
    start = retime_with_offsets(p, plan) if plan is not None else None
    if start is None:
        return
    r = solve_stream_time_windows(p, start, _OPTIONS, window_ops=2)
    again = solve_stream_time_windows(p, start, _OPTIONS, window_ops=2)
    assert (r.objective, r.solution) == (again.objective, again.solution)
    exact = solve_stream_time(p, _OPTIONS)
    if r.solution is None:
        assert r.status is Status.UNKNOWN
        return
    assert validate_levels(p, r.solution) == []
    assert r.objective < start.makespan_cycles
    assert exact.status is Status.OPTIMAL and exact.objective <= r.objective
    assert r.bound <= exact.objective


def _peak(p: LevelProblem, s: LevelSolution) -> int:
    return max((at + p.tensor_bytes[t] for at, (t, _, _) in zip(s.fast_offsets, fast_pieces(p, s))
                if p.tensor_bytes[t]), default=0)


def test_packing_tighter_shares_addresses_only_between_pieces_in_one_order_on_both_axes():
    # Op 0 (stream 0) writes tensor 0 (8 B) fast over cycles [0, 4); op 1 (stream 0) writes tensor
    # 1 over [4, 8); op 2 (stream 1) writes tensor 2 over [0, 4). Offsets 0, 8, 16: 24 bytes.
    # Tensor 2 meets tensor 0 in cycles (apart) and is before tensor 1 on the points ([5, 6) vs
    # [3, 4): after it) but before it in cycles: apart too. Tensors 0 and 1 are in one order on
    # both axes: one address. 16 bytes, the same 8 cycles.
    p = LevelProblem((4, 4, 4), ((), (), ()), ((0,), (1,), (2,)), (8, 8, 8), (32, 99), (4, 1),
                     op_streams=(0, 0, 1), live_out=())
    s = LevelSolution(((True,), (True,), (True,)), ((False,), (False,), (False,)), (), (0, 4, 0), (4, 4, 4),
                      fast_offsets=(0, 8, 16))
    assert validate_levels(p, s) == [] and _peak(p, s) == 24
    q = pack_tighter(p, s)
    assert q.fast_offsets[0] == q.fast_offsets[1] != q.fast_offsets[2] and _peak(p, q) == 16
    assert q.makespan_cycles == 8 and validate_levels(p, q) == []
    assert pack_tighter(p, q) is None  # nothing lower


@random_sweep
@settings(max_examples=examples(40, 300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(stream_level_problems(min_ops=2, max_ops=6, max_tensors=4, streams=3))
def test_packing_tighter_keeps_the_makespan_and_every_piece_apart_at_every_cycle(p):
    if not p.multi_stream:
        return
    # The greedy's plan with every fast piece at its own address (when they fit side by side):
    # valid, and no piece waits for another's free.
    plan = plan_greedy(p)
    if plan is None:
        return
    pieces = fast_pieces(p, plan)
    apart = tuple(sum(p.tensor_bytes[t] for t, _, _ in pieces[:n]) for n in range(len(pieces)))
    if sum(p.tensor_bytes[t] for t, _, _ in pieces) > p.capacity_bytes[0]:
        return
    start = timed_by(plan, replay_levels(p, plan, fast_offsets=apart), apart)
    assert validate_levels(p, start) == []
    q = pack_tighter(p, start)
    if q is None:
        return
    assert validate_levels(p, q) == []
    assert q.makespan_cycles == start.makespan_cycles and _peak(p, q) < _peak(p, start)
    times = replay_levels(p, q)
    sweep(p, q, q.fast_offsets, times.op_start, times.transfer_start)
