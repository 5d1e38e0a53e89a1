"""The prefetch-or-slow floor of the several-stream plan bound (solvers.memory.levels.prefetch_floor).

Hand-checked where it is strictly above the closed-form floor it joins (per-op durations over
the streams and along the longest path), and never above the best plan over every order and
stream assignment (the brute force of tests/solvers/memory/test_stream_bound.py) on random
problems built around its choices: weights read by one op or two, ops reading two weights,
live-out outputs, fast-only ops, a fast level too small for everything. Every draw:
``PLAN_FULL_SWEEPS=1 python -m pytest -q -p no:cacheprovider -m random_sweep
tests/solvers/memory/test_prefetch_floor.py``.
"""

from __future__ import annotations

import random

import pytest

from solvers.memory.levels import LevelProblem
from solvers.memory.levels.prefetch_floor import prefetch_or_slow_floor
from solvers.memory.levels.stream_bound import stream_plan_floor, stream_plan_lower_bound
from solvers.memory.levels.validate import op_duration_lower_bounds
from tests.solvers.memory.test_stream_bound import best_over_every_plan
from tests.sweeps import examples, random_sweep

# fast 4 B/cycle, slow 1 B/cycle; the DMA engine at the slow rate, no latency: a DMA of b bytes is b cycles


def _floor(p: LevelProblem, k: int) -> int:
    return prefetch_or_slow_floor(p, k, op_duration_lower_bounds(p))


def test_a_weight_two_ops_read_is_fetched_once_or_read_slow_by_both():
    # Ops 0 and 1 (compute 2) each read one 16-B weight: 4 cycles fast, 16 slow. Fetching a
    # fraction y: T >= 2 (4 + 12 (1 - y)) = 32 - 24 y and T >= 16 y, so y = 4/5, T >= 12.8: 13.
    # Per-op durations alone: (4 + 4) / 1 = 8. The best plan prefetches it first and reads it
    # fast twice: 16 + 4 + 4 = 24 (both slow: 32; a prefetch for op 1 alone starts after op 0,
    # its previous access: 16 + 16 + 4).
    p = LevelProblem((2, 2), ((0,), (0,)), ((), ()), (16,), (64, 99), (4, 1))
    assert _floor(p, 1) == 13
    assert stream_plan_floor(p, 1) == 13 > 8
    assert best_over_every_plan(p, 1) == 24


def test_an_op_reading_two_weights_pays_for_each_slow_one():
    # One op (compute 0) reads weights of 16 B and 8 B: 6 cycles both fast, 18 the large one
    # slow, 12 the small one slow, 24 both slow. Rows: d >= 6 + 12 (1 - y16), d >= 6 + 6 (1 -
    # y8), and the memory time d >= 24 - 3/4 (16 y16 + 8 y8); the engine T >= 16 y16 + 8 y8.
    # With s = 2 y16 + y8: T >= 24 - 6 s and T >= 8 s, so s = 12/7, T >= 96/7 = 13.7: 14 (the
    # op alone: 6). The best plan reads both slow: 24.
    p = LevelProblem((0,), ((0, 1),), ((),), (16, 8), (64, 99), (4, 1))
    assert stream_plan_floor(p, 1) == _floor(p, 1) == 14 > op_duration_lower_bounds(p)[0] == 6
    assert best_over_every_plan(p, 1) == 24


def test_a_live_out_output_is_written_slow_or_evicted():
    # One op (compute 0) writes a 16-B live-out tensor: fast 4 then a 16-cycle eviction, or
    # slow 16. T >= 4 + 12 (1 - y) and T >= 16 y: y = 4/7, T >= 64/7 = 9.1: 10 (the op alone: 4).
    p = LevelProblem((0,), ((),), ((0,),), (16,), (64, 99), (4, 1), live_out=(0,))
    assert _floor(p, 1) == 10
    assert best_over_every_plan(p, 1) == 16


def test_a_fast_only_reader_forces_the_prefetch():
    # A fast-only op must read its 16-B weight fast: the 16-cycle prefetch is on the engine
    # whatever the plan (then 4 cycles of op: 20).
    p = LevelProblem((0,), ((0,),), ((),), (16,), (64, 99), (4, 1), fast_only_ops=(0,))
    assert _floor(p, 1) == 16
    assert best_over_every_plan(p, 1) == 20


def test_cut_tensors_and_split_ops_are_no_choice():
    # A weight a split may cut may be fetched in pieces (as fast as it fits); a split op takes
    # its own least duration: either way nothing is left to choose, so nothing is added.
    p = LevelProblem((2, 2), ((0,), (0,)), ((), ()), (16,), (64, 99), (4, 1))
    assert prefetch_or_slow_floor(p, 1, (4, 4), cut=frozenset({0})) == 0
    assert prefetch_or_slow_floor(p, 1, (4, 4), split_ops=frozenset({0, 1})) == 0


def test_the_two_branch_case_is_raised_and_the_relaxation_still_above():
    # Two ops on two streams each read a 16-B weight and write 4 B, a third reads both (the
    # hand-checked case of test_stream_bound.py): the floor is 14 (load and path alone: 7),
    # the relaxation 19, the optimum.
    p = LevelProblem((2, 2, 2), ((0,), (1,), (2, 3)), ((2,), (3,), ()), (16, 16, 4, 4), (64, 99), (4, 1),
                     op_streams=(0, 1, 0))
    assert _floor(p, 2) == 14
    assert stream_plan_lower_bound(p, 2) == 19


def _choice_problem(seed: int) -> LevelProblem:
    """Two ops (or one), weights of 4-16 B read by one op or both, an op reading two weights,
    an output read by the next op, maybe live-out; a fast level sometimes too small for an
    op's every access; sometimes a fast-only op."""
    rng = random.Random(seed)
    n = rng.choice((1, 2, 2))
    sizes = [rng.randint(4, 16) for _ in range(rng.randint(1, 2))]
    reads, writes = [], []
    for i in range(n):
        ins = sorted(rng.sample(range(len(sizes)), rng.randint(1, len(sizes)))) if i == 0 else \
            sorted({rng.randrange(len(sizes)), *([len(sizes) - 1] if rng.random() < 0.5 else [])})
        reads.append(tuple(ins))
        if i < n - 1 or rng.random() < 0.5:
            sizes.append(rng.randint(1, 8))
            writes.append((len(sizes) - 1,))
        else:
            writes.append(())
    outs = [t for w in writes for t in w]
    return LevelProblem(tuple(rng.randint(0, 6) for _ in range(n)), tuple(reads), tuple(writes), tuple(sizes),
                        (rng.randint(12, 32), 10**9), (4, 1), dma_bytes_per_cycle=rng.choice((1, 2)),
                        dma_latency_cycles=rng.randint(0, 2),
                        live_out=(outs[-1],) if outs and rng.random() < 0.5 else (),
                        fast_only_ops=(rng.randrange(n),) if rng.random() < 0.2 else ())


@random_sweep
@pytest.mark.parametrize("seed", range(examples(30, 400)))
def test_the_floor_never_exceeds_the_best_plan_over_every_order_and_stream(seed):
    p = _choice_problem(seed)
    for k in (1, 2):
        best = best_over_every_plan(p, k)
        if best is None:
            continue
        assert _floor(p, k) <= stream_plan_floor(p, k) <= best
