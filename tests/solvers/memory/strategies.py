"""Hypothesis strategies for small level-assignment problems, shared by the memory tests."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from solvers.memory.levels import LevelProblem

__all__ = ["level_problems", "stream_level_problems", "draw_ops_and_tensors"]


def draw_ops_and_tensors(draw, n: int, nt: int) -> tuple[list[int], list[tuple[int, ...]], list[tuple[int, ...]]]:
    """(producer per tensor, -1 for an input; reads per op; writes per op): each tensor written by
    at most one op, each op reading up to two tensors written before it (``draw`` is a
    :func:`hypothesis.strategies.composite`'s)."""
    producer = [draw(st.integers(-1, n - 1)) for _ in range(nt)]
    writes = [tuple(t for t in range(nt) if producer[t] == i) for i in range(n)]
    reads = []
    for i in range(n):
        cand = [t for t in range(nt) if producer[t] < i]
        reads.append(tuple(sorted(draw(st.sets(st.sampled_from(cand), max_size=2))) if cand else ()))
    return producer, reads, writes


@st.composite
def level_problems(draw, *, min_ops: int = 1, max_ops: int = 3, max_tensors: int = 3, fast_rates=(4,),
                   slow_rates=(1,), dma_rates=(1, 2), max_latency: int = 0, fast_only_one_in: int = 5,
                   slow_capacity: int = 10**6) -> LevelProblem:
    """Ops in order, each tensor written by at most one earlier op (or an input), reads of up to
    two earlier tensors, a fast level of 4-14 bytes, rates drawn from the given choices; about
    one op in ``fast_only_one_in`` is fast-only, and some produced tensors are live-out."""
    n = draw(st.integers(min_ops, max_ops))
    nt = draw(st.integers(1, max_tensors))
    producer, reads, writes = draw_ops_and_tensors(draw, n, nt)
    return LevelProblem(
        compute_cycles=tuple(draw(st.integers(0, 12)) for _ in range(n)), reads=tuple(reads), writes=tuple(writes),
        tensor_bytes=tuple(draw(st.integers(1, 8)) for _ in range(nt)),
        capacity_bytes=(draw(st.integers(4, 14)), slow_capacity),
        bandwidth_bytes_per_cycle=(draw(st.sampled_from(fast_rates)), draw(st.sampled_from(slow_rates))),
        dma_bytes_per_cycle=draw(st.sampled_from(dma_rates)), dma_latency_cycles=draw(st.integers(0, max_latency)),
        live_out=tuple(t for t in range(nt) if producer[t] >= 0 and draw(st.booleans())),
        fast_only_ops=tuple(i for i in range(n) if draw(st.integers(0, fast_only_one_in - 1)) == 0),
    )


@st.composite
def stream_level_problems(draw, *, min_ops: int, max_ops: int, max_tensors: int, streams: int = 3,
                          max_latency: int = 1) -> LevelProblem:
    """:func:`level_problems` with each op on one of ``streams`` compute streams."""
    p = draw(level_problems(min_ops=min_ops, max_ops=max_ops, max_tensors=max_tensors, max_latency=max_latency))
    return replace(p, op_streams=tuple(draw(st.integers(0, streams - 1)) for _ in range(p.num_ops)))
