"""Piece timing in the several-stream plan bound (solvers.memory.levels.stream_bound, "Piece
timing"): what an op reads fast of a tensor with no producer was prefetched on the one DMA
engine, from cycle 0, before it reads it. Hand-checked where the bound is strictly stronger than
before and meets the best plan over every order, stream assignment and split factor; the random
problems of ``test_stream_bound_splits.py`` and ``test_stream_bound_capacity.py`` check it never
exceeds the best plan (their default slices, and ``PLAN_TEST_BOUND_EXAMPLES`` /
``PLAN_FULL_SWEEPS``).
"""

from __future__ import annotations

from solvers.memory.levels import LevelProblem
from solvers.memory.levels.stream_bound import build_stream_bound_model, stream_plan_lower_bound
from tests.solvers.memory.test_stream_bound_splits import best_split_plan


def _bound(p: LevelProblem, ops, cut, streams: int, piece_timing: bool = True) -> int:
    if not piece_timing:  # the relaxation without the windows, proven to its optimum
        from ortools.sat.python import cp_model

        model, _ = build_stream_bound_model(p, streams, frozenset(ops), frozenset(cut), piece_timing=False)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(model) == cp_model.OPTIMAL
        return int(solver.objective_value)
    return stream_plan_lower_bound(p, streams, splittable_ops=frozenset(ops), splittable_tensors=frozenset(cut))


def test_an_op_run_whole_waits_for_the_pieces_it_reads_fast_by_hand():
    # Op 0 (compute 0) may run in halves over x (16 B, a graph input) and y (4 B); op 1 runs
    # whole and reads x and y. Fast 4 B/cycle, slow 1 B/cycle, the DMA engine 1 B/cycle. Op 1
    # reads f bytes of x fast only after f cycles of prefetch and 16 - f slow: at least 16 +
    # f/4 from cycle 0, and op 0 comes first. Before, the relaxation let op 1 start at 0 with
    # x fast: 14. Now 20; the best plan takes 22.
    p = LevelProblem((0, 0), ((0,), (0, 1)), ((1,), ()), (16, 4), (64, 99), (4, 1), dma_bytes_per_cycle=1)
    assert _bound(p, (0,), (0, 1), 1, piece_timing=False) == 14
    assert _bound(p, (0,), (0, 1), 1) == 20
    assert best_split_plan(p, (0,), (0, 1), (1, 2), 1) == 22


def test_a_split_op_reads_a_weight_fast_only_after_its_prefetch_by_hand():
    # Op 0 (compute 2) may run in halves over what it writes (y, 4 B); every portion reads the
    # whole weight w (16 B; 8 cycles on a 2-B/cycle engine, 16 slow). Op 1 reads y. Before, a
    # portion could read w fast while its prefetch ran: 8. Now the portions that read it fast
    # end after the prefetch, and if every one does, the op starts after it: 8 + 5 (20 B fast) + 1 =
    # 14, the best plan (w prefetched, op 0 whole, then op 1), on one stream or two.
    p = LevelProblem((2, 0), ((1,), (0,)), ((0,), ()), (4, 16), (64, 99), (4, 1), dma_bytes_per_cycle=2)
    for streams in (1, 2):
        assert _bound(p, (0,), (0,), streams, piece_timing=False) == 8
        assert _bound(p, (0,), (0,), streams) == 14 == best_split_plan(p, (0,), (0,), (1, 2), streams)
