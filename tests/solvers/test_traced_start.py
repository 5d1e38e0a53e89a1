"""The bound's own runs as a start (solvers.scheduling.traced_start): its traced DP equals the
segment-run bound with both sides' weight options, its runs realise a valid schedule (the
optimum on a hand case), the same inputs give the same schedule, and the scheduler keeps it only
when it beats the start it would replace."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatScheduler, SchedulingProblem
from solvers.scheduling.move_arrivals import ARRIVALS, combined_options, move_arrival_bound
from solvers.scheduling.pinned_moves import (WEIGHT_CELLS, move_floor_tables, move_proof_key, pinned_move_bound,
                                             pinned_moves)
from solvers.scheduling.segment_runs import segment_run_bound
from solvers.scheduling.traced_start import SOURCE, traced_runs, traced_start
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_move_arrivals import _fork_join_with_dear_join
from tests.solvers.test_pinned_moves import memory_forced_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1)
_SWEEP = settings(max_examples=examples(12, 150), deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _proved(p: SchedulingProblem) -> dict:
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    return memo


def _traced(p: SchedulingProblem):
    memo = _proved(p)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    moves = pinned_moves(p)
    keys = [move_proof_key(q) for _, _, q in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    options = combined_options(moves, keys, memo, memo.get(WEIGHT_CELLS, {}), memo.get(ARRIVALS, {}))
    bound = segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts, move_floors=tables,
                              move_options=options)
    return bound, traced_runs(moves, tables, options)


def test_the_runs_of_a_hand_case_realise_its_optimum():
    # c0 -> {x, y} -> c1, c0 and c1 on two devices, c1's holding at most one of x and y: the
    # bound with the arrivals is 13, the optimum, and the realised runs schedule to it
    p = _fork_join_with_dear_join()
    bound, (value, runs) = _traced(p)
    assert bound == value == 13
    assert [(pool, first, last) for pool, first, last, _, _ in runs] == [(0, 0, 0), (0, 1, 1)]
    memo = _proved(p)
    sol, stats = traced_start(p, Budget.start(5, SCHEDULING), memo, _ONE)
    assert not validate_schedule(p, sol)
    assert objective_value(p, sol) == 13 == brute_force(p)
    assert sol.op_device[0] != sol.op_device[3]
    assert stats["traced_start_value"] == 13 and memo.get(ARRIVALS)  # the arrivals stay for the leftover stage


@random_sweep
@_SWEEP
@given(memory_forced_graphs())
def test_the_traced_dp_equals_the_bound(p):
    if pinned_moves(p) is None:
        return
    bound, (value, _) = _traced(p)
    assert bound == (int(value) if math.isfinite(value) else 0), (bound, value)


@random_sweep
@_SWEEP
@given(memory_forced_graphs())
def test_the_candidate_is_a_valid_schedule_and_repeats(p):
    first = traced_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    again = traced_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    assert first == again
    sol, stats = first
    if sol is None:
        return
    assert not validate_schedule(p, sol)
    assert objective_value(p, sol) >= brute_force(p)
    rows = [row for row in stats["traced_start_variants"].values() if "objective" in row]
    assert all(row["objective"] <= row["heft"] for row in rows)  # the exact sequencing never loses
    assert objective_value(p, sol) == min(row["objective"] for row in rows)  # the shortest variant


def test_the_scheduler_keeps_the_candidate_only_when_it_is_shorter():
    p = _fork_join_with_dear_join()
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=2, num_workers=1))
    candidates = r.stats.get("start_candidates", {})
    assert r.objective == 13
    if SOURCE in candidates:
        assert r.stats["hint_objective"] <= candidates[SOURCE]
        assert (r.stats["hint_source"] == SOURCE) == (candidates[SOURCE] < min(
            v for k, v in candidates.items() if k != SOURCE and v is not None))


def _fork_join_too_heavy_for_its_ends() -> SchedulingProblem:
    # c0 -> {x, y} -> c1 on four interchangeable devices (one link per pair), c0 and c1 1 cycle,
    # x and y 10, every edge 1; c0 and c1 weigh 5 of a device's 6 bytes and x and y 2 each, so
    # c0 and c1 sit on two devices and x and y on neither: the move's role E. On two helpers
    # they run side by side, c0 [0, 1], x and y [2, 12], c1 [13, 14]: 14, the optimum; on one
    # helper they run in turn, 24.
    links = ((-1, 0, 1, 2), (0, -1, 3, 4), (1, 3, -1, 5), (2, 4, 5, -1))
    return SchedulingProblem(((1,) * 4, (10,) * 4, (10,) * 4, (1,) * 4), ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)),
                             (1,) * 4, links, ((1,) * 6,) * 4, device_memory_bytes=(6,) * 4,
                             op_resident_bytes=(5, 2, 2, 5), device_class=(0,) * 4)


def test_the_branches_a_move_sends_away_run_side_by_side():
    p = _fork_join_too_heavy_for_its_ends()
    sol, _ = traced_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    assert not validate_schedule(p, sol)
    assert objective_value(p, sol) == 14 == brute_force(p)
    assert len({sol.op_device[o] for o in range(4)}) == 4  # x and y on two helpers, not one
