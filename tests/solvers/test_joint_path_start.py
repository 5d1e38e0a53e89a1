"""The joint-cell DP's path as a start (solvers.scheduling.joint_path_start): its placement keeps
every memory limit, its schedule is valid and repeats, and where it meets the bound the
scheduler returns it as OPTIMAL."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions, Status
from solvers.scheduling import CpSatScheduler, SchedulingProblem
from solvers.scheduling.joint_cells import joint_cell_bound
from solvers.scheduling.joint_path_start import SOURCE, joint_path_start, path_placement
from solvers.scheduling.move_arrivals import move_arrival_bound
from solvers.scheduling.pinned_moves import pinned_move_bound, pinned_moves
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_joint_cells import _fork_too_heavy_for_both_ends
from tests.solvers.test_pinned_moves import memory_forced_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1)
_SWEEP = settings(max_examples=examples(12, 150), deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _proved(p: SchedulingProblem) -> dict:
    """The pinned moves' memo with both sides' cells and the joint cells, as the scheduler's
    arrival stage leaves it."""
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    joint_cell_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    return memo


def _path_meets_the_bound() -> SchedulingProblem:
    # c0 -> {c1 -> c3, c2 -> c3} on three devices of 2 bytes (c0, c1, c3 weigh 1): found by a
    # search over memory_forced_graphs where HEFT (11), the forced-cut start (9) and the segment
    # runs (7) miss the optimum 5 and the joint-cell path realises it
    return SchedulingProblem(((1, 4, 1), (0, 0, 2), (1, 1, 1), (2, 1, 1)),
                             ((0, 1, 0), (2, 3, 0), (1, 3, 0), (0, 2, 0)), (1, 1, 1),
                             ((-1, 0, 1), (0, -1, 2), (1, 2, -1)), ((4, 3, 5), (4, 5, 2), (4, 4, 1), (6, 3, 2)),
                             device_memory_bytes=(2, 2, 2), op_resident_bytes=(1, 1, 0, 1))


def test_the_path_of_the_fork_keeps_every_memory_limit():
    # y (3 bytes) fits beside neither end (5 bytes a device, both ends 3): the path puts it on a
    # third device, and no device holds more than its 5 bytes
    p = _fork_too_heavy_for_both_ends()
    memo = _proved(p)
    moves = pinned_moves(p)
    placement = path_placement(moves.pruned, moves, memo, _ONE, Budget.start(5, SCHEDULING))
    assert placement is not None
    assert len({placement[0], placement[2], placement[3]}) == 3
    assert all(sum(p.resident_bytes(o) for o in range(4) if placement[o] == d) <= 5 for d in range(3))


def test_the_path_realises_the_optimum_and_repeats():
    p = _path_meets_the_bound()
    first = joint_path_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    again = joint_path_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    assert first == again
    sol, stats = first
    assert not validate_schedule(p, sol)
    assert objective_value(p, sol) == 5 == brute_force(p) == stats["joint_path_objective"]
    assert stats["joint_path_objective"] <= stats["joint_path_heft"]


def test_the_scheduler_returns_the_path_as_optimal():
    p = _path_meets_the_bound()
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=2, num_workers=1))
    assert r.status is Status.OPTIMAL and r.objective == r.bound == 5
    assert r.stats["hint_source"] == SOURCE
    assert min(v for k, v in r.stats["start_candidates"].items() if k != SOURCE and v is not None) > 5
    assert "traced_start" not in [line["stage"] for line in r.stats["stages"]]  # settled: nothing after it


def test_nothing_without_joint_cells():
    p = _path_meets_the_bound()
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    assert joint_path_start(p, Budget.start(5, SCHEDULING), memo, _ONE) == (None, {})


@random_sweep
@_SWEEP
@given(memory_forced_graphs())
def test_the_candidate_is_a_valid_schedule_and_repeats(p):
    first = joint_path_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    again = joint_path_start(p, Budget.start(5, SCHEDULING), _proved(p), _ONE)
    assert first == again
    sol, stats = first
    if sol is None:
        return
    assert not validate_schedule(p, sol)
    assert objective_value(p, sol) >= brute_force(p)
    assert stats["joint_path_objective"] <= stats["joint_path_heft"]  # the exact sequencing never loses
