"""The joint-cell path's cap on each device change (solvers.scheduling.joint_path_start): the
interior split may leave on each side at most the upper edge of the cell the path charged, less
one, and no more than the bytes the side's device has left; the role split keeps to it."""

from __future__ import annotations

import math

import solvers.scheduling.joint_path_start as jps
from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import SchedulingProblem
from solvers.scheduling.joint_cells import JOINT_CELLS
from solvers.scheduling.pinned_moves import pinned_moves
from solvers.scheduling.traced_start import role_split
from tests.solvers.test_joint_path_start import _proved

_ONE = SolveOptions(num_workers=1)


def _chain_with_a_shortcut() -> SchedulingProblem:
    # c0 -> x -> y -> c1 (and c0 -> y, x -> c1) on two devices of 4 bytes; c0 weighs 3, x 1, y 2,
    # c1 0, so c0 (device 0) and c1 (device 1) are the cut ops and x, y the one change's interior.
    # Found by a search over memory_forced_graphs where the charged cell is tighter than the bytes
    # device 0 has left: the cell's upper edge on c0's side is 1 (cap 0), device 0 has 4 - 3 = 1
    # byte left; c1's side: edge 5 (cap 4), 4 bytes left.
    return SchedulingProblem(((0, 1), (0, 0), (3, 1), (2, 0)),
                             ((0, 1, 0), (1, 2, 0), (2, 3, 0), (1, 3, 0), (0, 2, 0)), (2, 2), ((-1, 0), (0, -1)),
                             ((5,), (5,), (4,), (0,), (2,)), device_memory_bytes=(4, 4), op_resident_bytes=(3, 1, 2, 0))


def test_the_role_split_of_the_change_gets_the_charged_cell_and_the_bytes_left(monkeypatch):
    p = _chain_with_a_shortcut()
    memo, moves = _proved(p), pinned_moves(p)
    (change,), origins = jps._traced_path(moves, memo)
    key, edges = origins[change.middle][(change.source, change.sink)][change.option]
    grid = memo[JOINT_CELLS][key]
    upper = [grid.upper(side, grid.index(side, edges[side])) for side in (0, 1)]
    assert upper == [1, 5]
    rooms = []

    def spy(problem, moves, j, a, b, room, *args, **kwargs):
        rooms.append(room)
        return role_split(problem, moves, j, a, b, room, *args, **kwargs)

    monkeypatch.setattr(jps, "role_split", spy)
    placement = jps.path_placement(moves.pruned, moves, memo, _ONE, Budget.start(5, SCHEDULING))
    # min(cell 1 - 1, bytes left 4 - 3) on c0's side; min(5 - 1, 4 - 0) on c1's
    assert rooms == [(0, 4)]
    assert placement == (0, 1, 1, 1)  # x and y beside c1: nothing added to c0's side


def test_the_role_split_keeps_each_side_within_its_room():
    # Uncapped, the shortest split puts x and y beside c0 (3 + 1 + 2 = 6 bytes on a 4-byte device).
    p = _chain_with_a_shortcut()
    moves = pinned_moves(p)

    def split(room):
        return role_split(moves.pruned, moves, 0, 0, 1, room, _ONE, Budget.start(5, SCHEDULING), 0.02,
                          weigh_both=True)

    assert split((math.inf, math.inf)) == [0, 0]
    assert split((0, 4)) == [1, 1]  # no byte beside c0
    assert split((4, 0)) == [0, 0]  # no byte beside c1
    assert split((0, 0)) is None  # y must go somewhere: no split of two devices
