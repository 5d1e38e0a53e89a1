"""benchmarks/dnn_runs.py: its exhaustive traced DP equals the segment-run bound with both sides'
weight options (a check of each against the other), and its runs realise a valid placement."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings

from benchmarks.dnn_runs import realised_placement, traced_runs
from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling.move_arrivals import ARRIVALS, combined_options, move_arrival_bound
from solvers.scheduling.pinned_moves import (WEIGHT_CELLS, move_floor_tables, move_proof_key, pinned_move_bound,
                                             pinned_moves)
from solvers.scheduling.segment_runs import segment_run_bound
from tests.solvers.test_move_arrivals import _fork_join_with_dear_join
from tests.solvers.test_pinned_moves import memory_forced_graphs

_ONE = SolveOptions(num_workers=1)


def _traced(p):
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    moves = pinned_moves(p)
    keys = [move_proof_key(q) for _, _, q in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    options = combined_options(moves, keys, memo, memo.get(WEIGHT_CELLS, {}), memo.get(ARRIVALS, {}))
    bound = segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts, move_floors=tables,
                              move_options=options)
    return moves, bound, traced_runs(moves, tables, options)


def test_the_traced_dp_is_the_bound_and_its_runs_realise_the_optimum_on_a_hand_case():
    p = _fork_join_with_dear_join()
    moves, bound, (value, runs) = _traced(p)
    assert bound == value == 13
    assert [(pool, first, last) for pool, first, last, _ in runs] == [(0, 0, 0), (0, 1, 1)]
    placement = realised_placement(moves.pruned, moves, runs, list(moves.cuts))
    assert placement[0] != placement[3]  # c0 and c1 cannot share a device
    assert sum(p.resident_bytes(o) for o in range(4) if placement[o] == placement[3]) <= 6


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(memory_forced_graphs())
def test_the_traced_dp_equals_the_bound(p):
    if pinned_moves(p) is None:
        return
    _, bound, (value, _) = _traced(p)
    assert bound == (int(value) if math.isfinite(value) else 0), (bound, value)
