"""benchmarks/dnn_joint_path.py: the joint-cell DP's path realises a placement that keeps every
memory limit, and on the hand fork of tests/solvers/test_joint_cells.py it is the optimum's."""

from __future__ import annotations

from benchmarks.dnn_joint_path import realised_path
from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling.joint_cells import joint_cell_bound
from solvers.scheduling.move_arrivals import move_arrival_bound
from solvers.scheduling.pinned_moves import pinned_move_bound, pinned_moves
from tests.solvers.test_joint_cells import _fork_too_heavy_for_both_ends

_ONE = SolveOptions(num_workers=1)


def test_the_joint_path_realises_the_fork_within_memory():
    p = _fork_too_heavy_for_both_ends()
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    assert joint_cell_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)[0] == 4
    moves = pinned_moves(p)
    placement, steps = realised_path(moves.pruned, moves, memo, _ONE, 0)
    assert len({placement[0], placement[2], placement[3]}) == 3  # y (3 bytes) beside neither end
    assert all(sum(p.resident_bytes(o) for o in range(4) if placement[o] == d) <= 5 for d in range(3))
    (charged, realised), = steps
    assert charged <= realised
