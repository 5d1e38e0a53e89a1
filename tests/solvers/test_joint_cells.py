"""Joint weight cells (solvers.scheduling.joint_cells): a hand-checked fork where neither side's
cells alone see that a branch fits on neither device, the traced DP equal to the bound's DP,
the scheduler's stage right after the pinned moves (whatever the start), and the joint cells
never above the exhaustive optimum nor below the arrivals on small random memory-forced graphs.

The sweeps' default slices are 8 graphs each; ``PLAN_FULL_SWEEPS=1`` draws 200.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem
from solvers.scheduling import segment_runs
from solvers.scheduling.joint_cells import JOINT_CELLS, UNIT_COUNT, JointCells, joint_cell_bound, joint_options, traced_changes
from solvers.scheduling.move_arrivals import move_arrival_bound
from solvers.scheduling.move_weights import weight_cell_keys
from solvers.scheduling.pinned_moves import move_floor_tables, move_proof_key, pinned_move_bound, pinned_moves
from tests.solvers.test_move_arrivals import dear_joins
from tests.solvers.test_pinned_moves import memory_forced_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1)


def _fork_too_heavy_for_both_ends() -> SchedulingProblem:
    # c0 -> {x, y} -> c1 on three devices (a link per pair), every device 5 bytes; c0, y and
    # c1 weigh 3, x 1, so c0 and c1 sit on two devices and y fits beside neither. c0 takes 0
    # on devices 0 and 1, c1 0 on device 2 (2 elsewhere), x and y 1 anywhere; the fork edge to y
    # costs 1 over the link 0 -> 1, join edges 2. c0 on 0, y on 1: 1 + 1 + 2 = 4 (the
    # optimum). Each side's cells alone let y sit on the other end (3: y beside c1 pays no
    # join edge); both at once leave only the third device.
    links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    return SchedulingProblem(((0, 0, 1), (1, 1, 1), (1, 1, 1), (2, 2, 0)),
                             ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1), links,
                             ((0, 0, 0), (1, 0, 0), (2, 2, 2), (2, 2, 2)), device_memory_bytes=(5, 5, 5),
                             op_resident_bytes=(3, 1, 3, 3))


def _three(p: SchedulingProblem) -> tuple[int, int, int, dict]:
    memo: dict = {}
    pinned, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    arrival, _ = move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    joint, stats = joint_cell_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    return pinned, arrival, joint, stats


def test_joint_cells_see_a_branch_that_fits_on_neither_end():
    p = _fork_too_heavy_for_both_ends()
    assert brute_force(p) == 4
    pinned, arrival, joint, stats = _three(p)
    assert (pinned, arrival, joint) == (2, 3, 4)
    assert stats["joint_cells_closed"] and stats["joint_cell_proofs"] >= 1


def test_the_joint_cells_are_resumed_from_the_memo():
    p = _fork_too_heavy_for_both_ends()
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    joint_cell_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    budget = Budget.start(5, SCHEDULING)
    again, stats = joint_cell_bound(p, _ONE, budget, memo)
    assert again == 4 and stats["joint_cell_proofs"] == 0 and budget.used < 0.001  # one traced DP


def test_a_split_keeps_each_half_at_its_parents_step():
    cells = JointCells.crossed([(0, 9.0), (10, 4.0)], [(0, 7.0)])
    cells.proved = {(0, 0), (1, 0)}
    assert cells.split(0, 5) == 0
    assert cells.source == [0, 5, 10]
    assert [cells.step[(i, 0)] for i in range(3)] == [9.0, 9.0, 7.0]
    assert cells.proved == {(2, 0)}  # the split cell's halves are open again, the one above moved up
    assert cells.upper(0, 1) == 10 and cells.upper(0, 2) == float("inf")


def _traced_and_bound(p: SchedulingProblem) -> tuple[float, int] | None:
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    moves = pinned_moves(p)
    if moves is None:
        return None
    keys = [move_proof_key(pinned) for _, _, pinned in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    terms = segment_runs._run_terms(moves.pruned, moves.segments, moves.floors, moves.cuts, tables, with_masks=False)
    if terms is None:
        return None
    options, _ = joint_options(moves, keys, memo, memo.setdefault(JOINT_CELLS, {}), weight_cell_keys(moves, keys))
    value, _ = traced_changes(terms, options)
    bound = segment_runs.segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts,
                                           move_floors=tables, move_options=options, unit_count=UNIT_COUNT)
    return value, bound


def test_the_traced_dp_is_the_bounds_dp_on_the_fork():
    value, bound = _traced_and_bound(_fork_too_heavy_for_both_ends())
    assert (value, bound) == (3.0, 3)  # the crossed cells, before any refinement


# The main solve fixes the hint's placement (max_full_ops 0); the other bound stages and the
# leftover stage are off: only the pinned moves and the stage right after them count.
_EARLY_ONLY = dict(max_full_ops=0, forced_cut_share=0.0, forced_cut_start_share=0.0, placement_lns_share=0.0,
                   bound_probe_share=0.0, segment_bound_share=0.0, segment_schedule_share=0.0,
                   leftover_bound_share=0.0, run_start_share=0.0, module_resolve_share=0.0, part_start_share=0.0)


def test_the_scheduler_prices_joint_cells_right_after_the_moves_whatever_the_start():
    p = _fork_too_heavy_for_both_ends()
    options = SolveOptions(time_limit_s=5, num_workers=1)
    plain = CpSatScheduler(CpSatOptions(**_EARLY_ONLY)).solve(p, options)
    assert plain.stats["joint_cell_bound"] == 4 and plain.bound == 4
    started = CpSatScheduler(CpSatOptions(**_EARLY_ONLY)).solve(p, SolveOptions(time_limit_s=5, num_workers=1,
                                                                                 hint=plain.solution))
    assert started.bound == plain.bound


_SWEEP = settings(max_examples=examples(8, 200), deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _check(p: SchedulingProblem) -> None:
    opt = brute_force(p)
    traced = _traced_and_bound(p)
    if traced is not None:
        assert traced[0] == float("inf") or int(traced[0]) == traced[1], traced
    if opt is None:
        return
    pinned, arrival, joint, stats = _three(p)
    assert joint <= opt, (pinned, arrival, joint, opt)
    assert not stats or arrival <= joint, (pinned, arrival, joint, opt)


# A draw where a proven cell's step is the optimum itself: one unit too many there fails
# (the planted-bug check: +1 on every proved cell passed the slice without it)
_TIGHT_CELL = SchedulingProblem(((0, 1), (1, 1), (1, 1), (0, 1)), ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1),
                                ((-1, 0), (0, -1)), ((0,), (0,), (2,), (2,)), device_memory_bytes=(5, 5),
                                op_resident_bytes=(3, 1, 1, 3))


@random_sweep
@_SWEEP
@given(dear_joins())
@example(_TIGHT_CELL)
def test_joint_cells_on_dear_joins_stay_below_the_optimum(p):
    _check(p)


@random_sweep
@_SWEEP
@given(memory_forced_graphs())
def test_joint_cells_stay_below_the_optimum_and_never_lower_the_arrivals(p):
    _check(p)
