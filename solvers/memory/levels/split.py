"""Splitting as a reduction: a factor per split group turns the problem into a larger one.

With factor k, the ops of a :class:`~solvers.memory.levels.problem.SplitGroup` run k
times in series (portion 0's ops, then portion 1's, ...). Every split tensor ``t``
becomes k portion tensors of ``ceil(size_t / k)`` bytes; portion p's copy of an op reads
and writes portion p of every split tensor and the whole of every unsplit one (weights
are re-read by each portion, and may be kept in fast memory across portions). An op
outside the group that touches a split tensor touches all k portions (a producer writes
them, a consumer reads them; the total is ``k * ceil(size/k) >= size``). A portion op's
compute is the group's ``portion_compute`` entry for k (the ISA's cost of the portion,
fill and drain included), or ``ceil(compute / k)`` when the group gives none. Prefetches and evictions of split tensors are
therefore made in k pieces, each scheduled on its own. Live-out and fast-only carry to
every portion.

The split decision is an outer enumeration: the optimum over split factors is the
minimum over factor vectors of the optimum of the expanded problem, so solving every
expansion exactly is exact (:class:`~solvers.memory.levels.cpsat.CpSatLevelSolver`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from solvers.memory.levels.problem import LevelProblem, ceil_div

__all__ = ["SplitMap", "expand_splits", "split_factor_choices"]


@dataclass(frozen=True, slots=True)
class SplitMap:
    """How an expanded problem maps back: per new op ``(original op, portion)``, per new
    tensor ``(original tensor, portion)`` (portion 0 for unsplit ones).

    Examples
    --------
    >>> SplitMap(((0, 0), (0, 1)), ((0, 0),), (2,)).op_origin[1]
    (0, 1)
    """

    op_origin: tuple[tuple[int, int], ...]
    tensor_origin: tuple[tuple[int, int], ...]
    factors: tuple[int, ...]


def split_factor_choices(problem: LevelProblem) -> tuple[tuple[int, ...], ...]:
    """Every factor vector, one factor per split group, in lexicographic order.

    Examples
    --------
    >>> from solvers.memory.levels.problem import SplitGroup
    >>> p = LevelProblem((1, 1), ((0,), (1,)), ((1,), (2,)), (8, 8, 8), (16, 99), (4, 1),
    ...                  splits=(SplitGroup(0, 0, (1,), (1, 2)), SplitGroup(1, 1, (2,), (1, 3))))
    >>> split_factor_choices(p)
    ((1, 1), (1, 3), (2, 1), (2, 3))
    """
    return tuple(itertools.product(*(g.factors for g in problem.splits)))


def expand_splits(problem: LevelProblem, factors: tuple[int, ...]) -> tuple[LevelProblem, SplitMap]:
    """The problem with every split group unrolled by its factor (no split groups left).

    Examples
    --------
    Op 1 reads x (8 bytes, split) and weight w; split by 2 it becomes two ops of half the
    compute reading 4-byte portions of x:

    >>> from solvers.memory.levels.problem import SplitGroup
    >>> p = LevelProblem(compute_cycles=(4, 10), reads=((), (0, 1)), writes=((0,), ()),
    ...                  tensor_bytes=(8, 6), capacity_bytes=(16, 99), bandwidth_bytes_per_cycle=(4, 1),
    ...                  splits=(SplitGroup(1, 1, (0,)),))
    >>> q, m = expand_splits(p, (2,))
    >>> q.compute_cycles, q.reads, q.writes, q.tensor_bytes
    ((4, 5, 5), ((), (0, 2), (1, 2)), ((0, 1), (), ()), (4, 4, 6))
    >>> m.op_origin
    ((0, 0), (1, 0), (1, 1))

    With the ISA's portion costs (a half portion costs 7, not ceil(10/2) = 5: fill and drain):

    >>> p2 = LevelProblem((4, 10), ((), (0, 1)), ((0,), ()), (8, 6), (16, 99), (4, 1),
    ...                   splits=(SplitGroup(1, 1, (0,), (1, 2), portion_compute=((10,), (7,))),))
    >>> expand_splits(p2, (2,))[0].compute_cycles
    (4, 7, 7)
    """
    if len(factors) != len(problem.splits):
        raise ValueError(f"need {len(problem.splits)} split factors, got {len(factors)}")
    for g, k in zip(problem.splits, factors):
        if k not in g.factors:
            raise ValueError(f"factor {k} is not allowed for split group {g.first_op}..{g.last_op}")
    factor_of_tensor = {t: k for g, k in zip(problem.splits, factors) for t in g.tensors}
    tensors = _PortionTensors.of(problem, factor_of_tensor)
    compute, reads, writes, origin, new_fast_only = _unrolled_ops(problem, factors, tensors)
    expanded = LevelProblem(
        compute_cycles=tuple(compute), reads=tuple(reads), writes=tuple(writes), tensor_bytes=tuple(tensors.sizes),
        capacity_bytes=problem.capacity_bytes, bandwidth_bytes_per_cycle=problem.bandwidth_bytes_per_cycle,
        dma_bytes_per_cycle=problem.dma_bytes_per_cycle, dma_latency_cycles=problem.dma_latency_cycles,
        live_out=tensors.all_portions(problem.live_out), fast_only_ops=tuple(new_fast_only), splits=(),
        op_streams=tuple(problem.stream_of(o) for o, _ in origin) if problem.op_streams else (),
        shared_bandwidth=problem.shared_bandwidth,
        op_names=tuple(f"{problem.op_name(o)}#{p}" if factor_of_op > 1 else problem.op_name(o)
                       for (o, p), factor_of_op in zip(origin, _op_factors(problem, factors, origin))),
        tensor_names=tuple(f"{problem.tensor_name(t)}#{p}" if factor_of_tensor.get(t, 1) > 1
                           else problem.tensor_name(t) for t, p in tensors.origin),
    )
    return expanded, SplitMap(tuple(origin), tuple(tensors.origin), tuple(factors))


@dataclass(frozen=True)
class _PortionTensors:
    """The expanded problem's tensors: each original tensor in order, its portions consecutive
    (``ids[t]``), with their origin ``(tensor, portion)`` and ``ceil(size / k)`` bytes."""

    ids: list[list[int]]
    origin: list[tuple[int, int]]
    sizes: list[int]

    @classmethod
    def of(cls, problem: LevelProblem, factor_of_tensor: dict[int, int]) -> "_PortionTensors":
        ids: list[list[int]] = []
        origin: list[tuple[int, int]] = []
        sizes: list[int] = []
        for t in range(problem.num_tensors):
            k = factor_of_tensor.get(t, 1)
            ids.append(list(range(len(sizes), len(sizes) + k)))
            for p in range(k):
                origin.append((t, p))
                sizes.append(ceil_div(problem.tensor_bytes[t], k))
        return cls(ids, origin, sizes)

    def all_portions(self, ts) -> tuple[int, ...]:
        """Every portion of the tensors ``ts`` (an op outside the split groups)."""
        return tuple(x for t in ts for x in self.ids[t])

    def portion(self, ts, p: int) -> tuple[int, ...]:
        """Portion ``p`` of the split tensors among ``ts``, and the unsplit ones whole."""
        return tuple(self.ids[t][p] if len(self.ids[t]) > 1 else self.ids[t][0] for t in ts)


def _unrolled_ops(problem: LevelProblem, factors: tuple[int, ...], tensors: _PortionTensors):
    """The expanded ops in order: compute, reads, writes, origin ``(op, portion)`` of each, and
    the fast-only ones; a split group's ops repeated portion by portion."""
    group_at = {g.first_op: (g, k) for g, k in zip(problem.splits, factors)}
    compute, reads, writes, origin = [], [], [], []
    fast_only = set(problem.fast_only_ops)
    new_fast_only: list[int] = []
    i = 0
    while i < problem.num_ops:
        if i in group_at:
            g, k = group_at[i]
            table = g.compute_for(k)
            per_op = table if table is not None else tuple(ceil_div(problem.compute_cycles[op], k) for op in g.ops)
            for p in range(k):
                for op, c in zip(g.ops, per_op):
                    if op in fast_only:
                        new_fast_only.append(len(compute))
                    compute.append(c)
                    reads.append(tensors.portion(problem.reads[op], p))
                    writes.append(tensors.portion(problem.writes[op], p))
                    origin.append((op, p))
            i = g.last_op + 1
            continue
        if i in fast_only:
            new_fast_only.append(len(compute))
        compute.append(problem.compute_cycles[i])
        reads.append(tensors.all_portions(problem.reads[i]))
        writes.append(tensors.all_portions(problem.writes[i]))
        origin.append((i, 0))
        i += 1
    return compute, reads, writes, origin, new_fast_only


def _op_factors(problem: LevelProblem, factors, origin) -> list[int]:
    k_of_op = {op: k for g, k in zip(problem.splits, factors) for op in g.ops}
    return [k_of_op.get(o, 1) for o, _ in origin]
