"""Window search on several streams (solvers.memory.levels.cpsat, above ``window_above_ops``).

Windows of consecutive ops of the merged order are re-optimised exactly around the incumbent:
ops before a window keep their times, ops after it shift together, every other decision is
the incumbent's. With several streams a frozen or shifted op may overlap the window's, so
every stream, data, memory-order and copy-order constraint between them stays in the model;
each result is re-timed, validated and kept only when shorter.
"""

from __future__ import annotations

import logging
import random

from hypothesis import HealthCheck, given, settings

from solvers.core import SolveOptions
from solvers.memory.levels import CpSatLevelSolver, LevelProblem, plan_greedy, retime, validate_levels
from tests.solvers.memory.strategies import stream_level_problems
from tests.solvers.memory.test_streams import _cycle_peak


def two_chains(layers: int, fast_bytes: int, seed: int = 0) -> LevelProblem:
    """Two independent chains of layers, one per stream, interleaved in the merged order: each
    layer reads its weight (16-32 B) and the previous activation (16 B), compute 3-10 cycles;
    fast 8 B/cycle, slow 2 B/cycle, DMA latency 1."""
    rng = random.Random(seed)
    compute, reads, writes, sizes, streams = [], [], [], [16, 16], []
    last = [0, 1]
    for _ in range(layers):
        for branch in (0, 1):
            sizes += [rng.choice((16, 24, 32)), 16]
            w, y = len(sizes) - 2, len(sizes) - 1
            compute.append(rng.choice((3, 6, 10)))
            reads.append(tuple(sorted((last[branch], w))))
            writes.append((y,))
            streams.append(branch)
            last[branch] = y
    return LevelProblem(tuple(compute), tuple(reads), tuple(writes), tuple(sizes), (fast_bytes, 10**9), (8, 2),
                        dma_latency_cycles=1, live_out=tuple(last), op_streams=tuple(streams))


def test_windows_improve_the_greedy_on_two_streams_and_repeat():
    # 72 ops (above the 64-op one-model limit): the greedy takes 1,176 cycles, the DMA-balanced
    # greedy 977 (the start); 12-op windows at a 1-s budget (deterministic time) find 893, a
    # valid plan that fits the fast level at every cycle, and the same plan again.
    p = two_chains(36, 96)
    solver = CpSatLevelSolver(window_ops=12, max_window_ops=24)
    options = SolveOptions(time_limit_s=1, num_workers=1, random_seed=0)
    first, again = solver.solve(p, options), solver.solve(p, options)
    assert plan_greedy(p, 16).makespan_cycles == 1176 and plan_greedy(p, 16, balance_dma=True).makespan_cycles == 977
    assert first.objective == 893 and first.stats["per_split"][0]["windows_improved"] >= 1
    assert validate_levels(p, first.solution) == []
    assert _cycle_peak(p, first.solution) <= p.capacity_bytes[0]
    assert first.solution == again.solution


class _Rejections(logging.Handler):
    """Collects the window search's warnings about a solution it had to reject."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "window solution" in record.getMessage():
            self.messages.append(record.getMessage())


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(stream_level_problems(min_ops=5, max_ops=8, max_tensors=6))
def test_window_results_are_valid_and_never_worse_than_the_start(p):
    # Tiny windows on tiny problems (window search from 4 ops on, windows of 2-4 ops) put
    # frozen, free and shifted ops on every stream next to each other.
    solver = CpSatLevelSolver(window_above_ops=4, window_ops=2, max_window_ops=4)
    rejected = _Rejections()
    logging.getLogger("solvers.memory.levels.cpsat").addHandler(rejected)
    try:
        result = solver.solve(p, SolveOptions(time_limit_s=2, num_workers=1, random_seed=0))
    finally:
        logging.getLogger("solvers.memory.levels.cpsat").removeHandler(rejected)
    assert rejected.messages == []  # every window model's solution is a plan (the net never fires)
    start = plan_greedy(p, solver._window(p))
    if result.solution is None:
        assert start is None
        return
    assert validate_levels(p, result.solution) == []
    assert _cycle_peak(p, result.solution) <= p.capacity_bytes[0]
    assert retime(p, result.solution).makespan_cycles == result.objective
    if start is not None:
        assert result.objective <= start.makespan_cycles


def test_the_dma_balanced_greedy_reads_some_weights_slow_and_wins_on_two_chains():
    # Belady prefetches all 40 weights (and the two live-out evictions), so the one DMA engine
    # carries every weight while both streams wait: 657 cycles. Reading some weights slow on
    # the streams (their slow reads do not share the DMA's bandwidth) balances the load: 19
    # prefetches fewer, 551 cycles, a valid plan within the fast level at every cycle. The
    # solver starts from the better of the two.
    p = two_chains(20, 96)
    plain, balanced = plan_greedy(p, 16), plan_greedy(p, 16, balance_dma=True)
    assert (plain.makespan_cycles, len(plain.transfers)) == (657, 44)
    assert (balanced.makespan_cycles, len(balanced.transfers)) == (551, 25)
    assert validate_levels(p, balanced) == [] and _cycle_peak(p, balanced) <= p.capacity_bytes[0]
    assert CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=1, num_workers=1)).objective <= 551
