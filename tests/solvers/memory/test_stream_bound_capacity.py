"""Capacity over time in the several-stream plan bound (solvers.memory.levels.stream_bound,
"Capacity over time"): two ops that run whole at once hold their fast copies together, and a
split op re-reads an uncut tensor in every portion. Hand-checked where the bound is strictly
stronger than before, and never above the best plan over every order, stream assignment and
split factor on small two-branch problems.

The default run draws a small slice; every draw of the sweep:
``PLAN_FULL_SWEEPS=1 python -m pytest -q -p no:cacheprovider -m random_sweep
tests/solvers/memory/test_stream_bound_capacity.py``.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.memory.levels import LevelProblem
from solvers.memory.levels.stream_bound import stream_plan_floor, stream_plan_lower_bound
from tests.solvers.memory.test_stream_bound import best_over_every_plan
from tests.solvers.memory.test_stream_bound_splits import best_split_plan
from tests.sweeps import examples, random_sweep


def test_two_branches_that_do_not_fit_together_take_turns_by_hand():
    # Ops 0 and 1 each write an 8-byte tensor that ops 2 and 3 read; the fast level holds 8
    # bytes (4 B/cycle fast, 1 B/cycle slow). Fast, a branch takes 2 + 2 cycles; slow, 8 + 8.
    # On two streams the branches cannot both be fast at once, so the best plan runs them in
    # turn: 8. Without capacity over time the bound let them overlap: 4.
    p = LevelProblem((0, 0, 0, 0), ((), (), (0,), (1,)), ((0,), (1,), (), ()), (8, 8), (8, 99), (4, 1))
    assert stream_plan_floor(p, 2) == 4
    assert stream_plan_lower_bound(p, 2) == 8
    assert best_over_every_plan(p, 2) == 8


def test_branches_that_fit_together_still_overlap_by_hand():
    # The same with a 16-byte fast level: both branches fast at once, 4 cycles, and the bound 4.
    p = LevelProblem((0, 0, 0, 0), ((), (), (0,), (1,)), ((0,), (1,), (), ()), (8, 8), (16, 99), (4, 1))
    assert stream_plan_lower_bound(p, 2) == 4 == best_over_every_plan(p, 2)


def test_a_splittable_op_and_the_other_branch_by_hand():
    # Op 0 (compute 2) reads a 6-byte weight (slow-born, uncut) and writes 5 bytes that op 1
    # reads; op 2 (compute 3) on its own branch writes 6 bytes that op 3 reads. The fast level
    # holds 6 bytes (4 and 1 B/cycle; the DMA engine 2 B/cycle). Op 0 may run in halves, each
    # re-reading the whole weight. The best plan over every order, stream and factor takes 12;
    # the bound was 5 (a split op 0 read its weight slow once while everything else overlapped
    # fast), 7 with capacity over time, and is 8 with piece timing (a portion reads the weight
    # fast only after its 3-cycle prefetch; test_stream_bound_pieces.py).
    p = LevelProblem((2, 0, 3, 0), ((2,), (0,), (), (1,)), ((0,), (), (1,), ()), (5, 6, 6), (6, 99), (4, 1),
                     dma_bytes_per_cycle=2)
    bound = stream_plan_lower_bound(p, 2, splittable_ops=frozenset({0}), splittable_tensors=frozenset({0}))
    assert bound == 8
    assert best_split_plan(p, 0, (0,), (1, 2), 2) == 12


@st.composite
def two_branch_problems(draw):
    """Two independent ops (each reads a slow-born tensor, perhaps the same one, or nothing, and
    writes one) and a third op reading one or both outputs: the pair may run at once on two
    streams, and the fast level (4-16 bytes) may not hold both. Op 0 may run in halves over
    what it writes and perhaps its input."""
    sizes = [draw(st.integers(1, 8)) for _ in range(4)]  # in0, in1, out0, out1
    reads0, reads1 = ((0,) if draw(st.booleans()) else ()), draw(st.sampled_from(((), (1,), (0,))))
    last = tuple(sorted(draw(st.sets(st.sampled_from((2, 3)), min_size=1))))
    p = LevelProblem(tuple(draw(st.integers(0, 4)) for _ in range(3)), (reads0, reads1, last), ((2,), (3,), ()),
                     tuple(sizes), (draw(st.integers(4, 16)), 10**9), (4, 1),
                     dma_bytes_per_cycle=draw(st.sampled_from((1, 2))), dma_latency_cycles=draw(st.integers(0, 1)),
                     live_out=tuple(t for t in (2, 3) if t not in last and draw(st.booleans())))
    p = replace(p, shared_bandwidth=draw(st.booleans()))
    cut = (2, 0) if reads0 and draw(st.booleans()) else (2,)
    return p, tuple(sorted(cut))


@random_sweep
@settings(max_examples=examples(5, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(two_branch_problems(), st.integers(1, 2))
def test_never_above_the_best_plan_of_two_branches(drawn, k):
    p, cut = drawn
    best = best_over_every_plan(p, k)
    if best is not None:
        assert stream_plan_floor(p, k) <= stream_plan_lower_bound(p, k) <= best
    best_split = best_split_plan(p, 0, cut, (1, 2), k)
    if best_split is not None:
        bound = stream_plan_lower_bound(p, k, splittable_ops=frozenset({0}), splittable_tensors=frozenset(cut))
        assert bound <= best_split
