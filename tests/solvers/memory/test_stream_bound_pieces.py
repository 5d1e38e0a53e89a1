"""Piece timing in the several-stream plan bound (solvers.memory.levels.stream_bound, "Piece
timing"): what an op reads fast of a tensor with no producer was prefetched on the one DMA
engine, from cycle 0, before it reads it. Hand-checked where the bound is strictly stronger than
before and meets the best plan over every order, stream assignment and split factor; the random
problems of ``test_stream_bound_splits.py`` and ``test_stream_bound_capacity.py`` check it never
exceeds the best plan (their default slices, and ``PLAN_TEST_BOUND_EXAMPLES`` /
``PLAN_FULL_SWEEPS``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.memory.levels import LevelProblem
from solvers.memory.levels.stream_bound import build_stream_bound_model, stream_plan_lower_bound
from tests.solvers.memory.test_stream_bound_splits import best_split_plan
from tests.sweeps import examples, random_sweep


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


def test_a_prefetched_weight_waits_for_room_beside_a_pair_by_hand():
    # Ops 0 and 1 (compute 1 and 3) read inputs of 7 and 4 B and write 2 and 4 B (live-out);
    # op 2 (compute 6) reads a 5-B weight. The fast level holds 9 B (4 B/cycle; slow 1 B/cycle;
    # the engine 2 B/cycle, the weight 3 cycles). Op 0 may run in halves. Without the residency
    # rule the bound is 7 (the weight may sit in the fast level beside both ops of the pair
    # running whole with their fast copies); with it, 8; the best plan on two streams takes 10.
    p = LevelProblem((1, 3, 6), ((0,), (1,), (4,)), ((2,), (3,), ()), (7, 4, 2, 4, 5), (9, 10**9), (4, 1),
                     dma_bytes_per_cycle=2, live_out=(2, 3))
    assert _bound(p, (0,), (2,), 2) == 8
    assert best_split_plan(p, (0,), (2,), (1, 2), 2) == 10


def test_a_prefetched_weight_that_fits_beside_a_pair_is_not_delayed_by_hand():
    # Ops 0 and 1 (compute 10) read 6-B inputs slow and write 1 B each; op 2 is fast-only and
    # reads an 8-B weight (4 cycles on a 2-B/cycle engine). Three streams, a fast level of 10 B:
    # the best plan prefetches the weight at once and runs op 2 beside the pair, their outputs
    # and the weight fitting together (10 B): 10. The residency rule must allow it (a rule
    # without its "fit together" and "fetched again" cases proves 12). The input may be cut,
    # so the piece model runs.
    p = LevelProblem((10, 10, 0), ((0,), (1,), (4,)), ((2,), (3,), ()), (6, 6, 1, 1, 8), (10, 10**9), (4, 1),
                     dma_bytes_per_cycle=2, live_out=(2, 3), fast_only_ops=(2,))
    assert _bound(p, (), (0,), 3) == 10 == best_split_plan(p, (), (), (1, 2), 3)


@st.composite
def prefetch_beside_a_pair(draw):
    """Ops 0 and 1 each read an input and write a tensor, independent of each other; op 2 reads
    a weight and perhaps what they wrote. A small fast level: the weight's prefetch may have to
    wait for the pair, or be fetched again. Either op 0 may run in halves, or no op may and only
    input 0 is offered as cut (so the piece model runs and the pair runs whole)."""
    sizes = [draw(st.integers(1, 8)) for _ in range(5)]  # in0, in1, out0, out1, w
    last = (4, *sorted(draw(st.sets(st.sampled_from((2, 3))))))
    p = LevelProblem(tuple(draw(st.integers(0, 12)) for _ in range(3)), ((0,), (1,), tuple(sorted(last))),
                     ((2,), (3,), ()), tuple(sizes), (draw(st.integers(4, 14)), 10**9), (4, 1),
                     dma_bytes_per_cycle=draw(st.sampled_from((1, 2))), dma_latency_cycles=draw(st.integers(0, 1)),
                     live_out=tuple(t for t in (2, 3) if t not in last))
    if draw(st.booleans()):
        return p, (), (0,)
    return p, (0,), (0, 2) if draw(st.booleans()) else (2,)


@random_sweep
@settings(max_examples=examples(4, 80), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(prefetch_beside_a_pair(), st.integers(1, 2))
def test_never_above_the_best_plan_with_a_prefetch_beside_a_pair(drawn, k):
    p, ops, cut = drawn
    best = best_split_plan(p, ops, cut if ops else (), (1, 2), k)
    if best is not None:
        assert stream_plan_lower_bound(p, k, splittable_ops=frozenset(ops), splittable_tensors=frozenset(cut)) <= best
