"""Moves that leave weight behind (solvers.scheduling.move_weights): the weight options of a
pinned move, hand-checked, and the segment-run DP priced with them never above the exhaustive
optimum and never below the DP without them, on small random memory-forced graphs; the cells
of two blocks of one shape but other weights kept apart (and below the optimum).

The sweeps' default slices are 20 graphs each; ``PLAN_FULL_SWEEPS=1`` draws 200.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import SchedulingProblem
from solvers.scheduling.joint_cells import joint_cell_bound
from solvers.scheduling.move_arrivals import move_arrival_bound
from solvers.scheduling.move_weights import move_weight_levels, weight_cell_keys
from solvers.scheduling.pinned_moves import WEIGHT_CELLS, move_proof_key, pinned_move_bound, pinned_moves, role_model
from tests.solvers.test_pinned_moves import memory_forced_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force, draw_links
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1)


def _fork_join_with_dear_fork() -> SchedulingProblem:
    # c0 -> {x, y} -> c1 on three interchangeable devices (one link per pair), ops 1 cycle,
    # fork edges 10, join edges 1; c0 and c1 weigh 5 of a device's 6 bytes, x and y 1 each, so
    # c0 and c1 sit on two devices and c0's device keeps at most one of x and y. Kept on c0's
    # device both would cost 4 after c0 (x, y, two join transfers in turn, c1); with one of them
    # off it, that one waits 10 for its fork edge: c0 [0, 1], y [11, 12] on c1's device, c1
    # [12, 13]. The optimum is 13.
    links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    return SchedulingProblem(((1, 1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1), links,
                             ((10,) * 3, (10,) * 3, (1,) * 3, (1,) * 3), device_memory_bytes=(6, 6, 6),
                             op_resident_bytes=(5, 1, 1, 5), device_class=(0, 0, 0))


def test_the_options_of_a_move_price_the_weight_it_leaves_behind():
    p = _fork_join_with_dear_fork()
    moves = pinned_moves(p)
    (j, pair, pinned), = moves.jobs
    levels = move_weight_levels(lambda: role_model(pinned), [1, 1], 4, _ONE, Budget.start(5, SCHEDULING), 1.0)
    # nothing of {x, y} on c0's device: both wait for their fork edge, then a join transfer
    # from a third device (10 + 1 + 1 + 1); one of them: 10 + 1 + c1; both: the free move, 4
    assert levels == [(0, 13.0), (1, 12.0), (2, 4.0)]


def test_the_weight_options_lift_the_segment_runs_to_the_optimum():
    p = _fork_join_with_dear_fork()
    assert brute_force(p) == 13
    without, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), weights=False)
    value, stats = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert without == 5  # c0, then the move that keeps x and y on c0's device (which cannot hold them)
    assert value == 13 and stats["move_weights"] == stats["move_weights_done"] == 1


def test_the_weight_options_are_resumed_from_the_memo():
    p = _fork_join_with_dear_fork()
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    budget = Budget.start(5, SCHEDULING)
    again, _ = pinned_move_bound(p, _ONE, budget, memo)
    assert again == 13 and budget.used < 0.001  # only the DP ranking: no move and no option proved again


@random_sweep
@settings(max_examples=examples(20, 200), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(memory_forced_graphs())
def test_weight_options_stay_below_the_optimum_and_never_lower_the_runs(p):
    opt = brute_force(p)
    if opt is None:
        return
    without, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), weights=False)
    value, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert without <= value <= opt, (without, value, opt)


@st.composite
def dear_forks(draw):
    """``c0 -> {x_1..x_k} -> c1`` (k 2-3), sometimes followed by ``c1 -> z``, on 2-3 devices
    (links per pair or one bus, sometimes interchangeable): fork edges dearer than join edges
    (so a change keeps the branches' first ops behind), weights where c0 and c1 cannot share a
    device and c0's device holds only some branches."""
    k = draw(st.integers(2, 3))
    tail = k < 3 and draw(st.booleans())
    n = k + 2 + tail
    c1 = k + 1
    edges = [(0, i, 0) for i in range(1, k + 1)] + [(i, c1, 0) for i in range(1, k + 1)]
    edges += [(c1, c1 + 1, 0)] if tail else []
    nd = draw(st.integers(2, 3))
    link_of, nl = draw_links(draw, nd)
    dear = draw(st.integers(4, 9))
    transfer = tuple(tuple(draw(st.integers(dear - 2, dear)) if u == 0 else draw(st.integers(0, 2)) for _ in range(nl))
                     for u, _, _ in edges)
    durations = [tuple(draw(st.integers(0 if i in (0, c1) else 1, 3)) for _ in range(nd)) for i in range(n)]
    cap = draw(st.integers(5, 8))
    big = draw(st.integers(cap // 2 + 1, cap))
    resident = (big,) + tuple(draw(st.integers(1, 3)) for _ in range(k)) + (big,) + ((draw(st.integers(0, 3)),) if tail else ())
    classes = (0,) * nd if draw(st.booleans()) else ()
    return SchedulingProblem(tuple(durations), tuple(edges), (1,) * nd, tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=(cap,) * nd, op_resident_bytes=resident, device_class=classes)


@random_sweep
@settings(max_examples=examples(20, 200), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(dear_forks())
def test_weight_options_on_dear_forks_stay_below_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    without, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), weights=False)
    value, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert without <= value <= opt, (without, value, opt)


def _two_dear_forks(cap: int, cut: int, first: tuple[int, int], second: tuple[int, int]) -> SchedulingProblem:
    # c0 -> {x1, y1} -> c1 -> {x2, y2} -> c2 on three interchangeable devices (one link per
    # pair), every op 1 cycle, fork edges 10, join edges 1: the two blocks' pinned moves are one
    # problem (the same proof), but x1, y1 weigh ``first`` and x2, y2 ``second``; the cut ops
    # weigh ``cut`` of a device's ``cap`` bytes, so no two of them share a device.
    edges = ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (3, 4, 0), (3, 5, 0), (4, 6, 0), (5, 6, 0))
    links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    transfer = tuple(((10,) if u in (0, 3) else (1,)) * 3 for u, _, _ in edges)
    return SchedulingProblem(((1, 1, 1),) * 7, edges, (1, 1, 1), links, transfer, device_memory_bytes=(cap,) * 3,
                             op_resident_bytes=(cut, *first, cut, *second, cut), device_class=(0, 0, 0))


def test_segments_of_one_shape_but_other_weights_keep_their_own_cells():
    p = _two_dear_forks(7, 4, (3, 1), (2, 1))
    moves = pinned_moves(p)
    keys = [move_proof_key(pinned) for _, _, pinned in moves.jobs]
    assert [j for j, _, _ in moves.jobs] == [0, 1] and keys[0] == keys[1]  # one proof for both moves
    cell_keys = weight_cell_keys(moves, keys)
    assert [key[1] for key in cell_keys] == [(3, 1), (2, 1)]
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    # each segment's cells from its own weights: the cheap move (4, both kept on c's device)
    # leaves 4 bytes there in the first block and 3 in the second
    assert memo[WEIGHT_CELLS] == {cell_keys[0]: [(0, 12.0), (2, 12.0), (3, 12.0), (4, 4.0)],
                                  cell_keys[1]: [(0, 13.0), (1, 12.0), (2, 12.0), (3, 4.0)]}


@pytest.mark.parametrize("cap, cut, first, second, optimum", [(5, 3, (2, 1), (0, 0), 17), (7, 4, (3, 1), (2, 1), 18)])
def test_a_lighter_segment_is_not_priced_by_a_heavier_ones_cells(cap, cut, first, second, optimum):
    # (5, 3, ...): c0's device has room for x1 or y1, not both: x1 stays, y1 waits for its fork
    # edge, c1 ends at 1 + 12; x2 and y2 weigh nothing and stay on c1's device: the free move,
    # 4 more, 17. When the second block took the first one's cells (keyed by the proof alone),
    # its free move left 3 bytes on c1's device, which has room for 2: 1 + 12 + 12 = 25 (the
    # arrivals 25, the joint cells 26), above the optimum.
    p = _two_dear_forks(cap, cut, first, second)
    assert brute_force(p) == optimum
    memo: dict = {}
    moved, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    arrived, _ = move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    joint, _ = joint_cell_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    assert moved == arrived == joint == 17


@st.composite
def two_dear_forks(draw):
    """:func:`_two_dear_forks` with weights drawn: cut ops that cannot share a device and leave
    some room, the first block at least as heavy as the second, branch by branch (the case the
    second block's cells were wrong in when it took the first one's)."""
    cap = draw(st.integers(5, 9))
    cut = draw(st.integers(cap // 2 + 1, cap - 1))
    first = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    second = tuple(draw(st.integers(0, w)) for w in first)
    return _two_dear_forks(cap, cut, first, second)


@random_sweep
@settings(max_examples=examples(20, 200), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(two_dear_forks())
def test_the_cells_of_repeated_blocks_of_other_weights_stay_below_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    memo: dict = {}
    moved, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    arrived, _ = move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    joint, _ = joint_cell_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    assert max(moved, arrived, joint) <= opt, (moved, arrived, joint, opt)
