"""The segment chain bound (LATENCY): per-segment bounds joined at the cut ops, where each
cut op sits on one device for both segments it bounds.

Notes
-----
With cut ops ``c_1 < ... < c_k`` (:func:`~solvers.scheduling.structure.cut_vertices`) the
makespan is ``end(c_1) + sum_j (end(c_(j+1)) - end(c_j)) + (makespan - end(c_k))`` and the
ops between ``c_j`` and ``c_(j+1)`` run inside ``[end(c_j), end(c_(j+1))]``
(:mod:`~solvers.scheduling.bounds`, Segments). The plain segment bound sums one bound per
segment, each free to put the shared cut op wherever suits it. Here each term is bounded
*given* the devices a of ``c_j`` and b of ``c_(j+1)``:

``step_j(a, b) = max(floor_j, D_j(a, b))``

where ``floor_j`` is any lower bound on the segment alone (the caller's: the cheap bounds,
or CP-SAT's proven ones) and ``D_j(a, b)`` is the placement-aware earliest finish of
``c_(j+1)`` on b in the segment with ``c_j`` a zero-duration source on a
(:func:`~solvers.scheduling.path_bounds.pool_finish_from_source`; edges from outside the
segment are dropped, a relaxation). The head term is ``max(floor_0, F[c_1][b])``, the tail
``max(floor_tail, max_v min_d F_a[v][d])`` over the ops after ``c_k`` with ``c_k`` on a.
:func:`~solvers.scheduling.path_bounds.chain_bound` then minimises over the cut ops'
devices, with their weights held in memory run by run. The result is never below the
plain sum of the floors (every term is at least its floor).

**Free ends.** Ops that take no time on any device and have no predecessor (weights read
from memory, constants) or no successor do not take part in any path's length, yet a
weight source feeding a late layer is not ordered with the early ones and so hides every
cut op. :func:`prune_free_ends` drops them (with their edges: a relaxation) before the
segments are formed, and moves each dropped op's weights onto a kept op of its colocation
group (they share its device), so memory still counts them.

**Side ends.** An op with a real duration but no predecessor (an embedding lookup, a
classifier head's own input) hides every cut op before its consumer just as a free source
does. :func:`main_span` keeps only the ops on some path from the start of the longest path to
its end (the rest and their edges are dropped, their weights moved onto a kept op of their
colocation group): the restriction of any schedule to a subset of its ops is a schedule of
the smaller problem (precedences, streams, links and memory only lose ops), so every bound
on it is a bound on the whole. It is used for the segments only when it shows more cut ops
than the whole graph: on the dnn BERT-L 12 operator graph (two embedding sources of 0.3 ms
and a 2.9 ms head source, 3.5 ms of work dropped) it turns 0 cut ops into 260.

A cut op shared by two segments can no longer be placed twice: e.g. a layer whose
attention runs best across two devices and whose next layer would rather start on the
other one now pays for the move.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from solvers.scheduling.forced import colocation_closure, held_weights
from solvers.scheduling.path_bounds import DevicePools, chain_bound, pool_finish, pool_finish_from_source
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.structure import min_durations, segment_ranges, topological_order

__all__ = ["chain_segment_bound", "segment_chain_terms", "prune_free_ends", "main_span", "span_with_map"]


def _floored(values: np.ndarray, floor: float) -> np.ndarray:
    return np.where(np.isfinite(values), np.maximum(values, floor), values)


def chain_segment_bound(problem: SchedulingProblem,
                        segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
                        floors: Sequence[int], cuts: Sequence[int] | None = None) -> int:
    """The chain bound of the module Notes.

    Parameters
    ----------
    problem : SchedulingProblem
    segments : sequence
        :func:`~solvers.scheduling.bounds.segment_problems` of ``problem`` (head, middle
        segments, tail), each a subproblem and its ops.
    floors : sequence of int
        A lower bound on each segment's own optimum, in the same order.
    cuts : sequence of int, optional
        The cut ops the segments were cut at, when not all of them
        (``segment_problems(problem, cuts)``).

    Returns
    -------
    int
        A lower bound on the makespan, at least ``sum(floors)``; 0 without segments or for
        THROUGHPUT.

    Examples
    --------
    a -> {b, c} -> d -> e on two devices with 3-cycle transfers: a (1 cycle) runs only on
    device 0; b and c take 4, d 1 anywhere; e takes 9 on device 0 but 1 on device 1. Alone,
    the fork-join segment may start anywhere and split b and c (fractional load: ``ceil((4 +
    4 + 1) / 2) = 5``; window load: the device without a idles 3 cycles before its ops and,
    without d, 3 + 1 after them, ``2 C - 7 >= 9``: 8) and e may run on device 1 (floor 1):
    1 + 8 + 1 = 10. Chained, a is on device 0:
    d on device 1 ends at best 3 + 4 + 1 = 8 after a (b or c must cross), then e 1 more;
    d on device 0 ends at best 4 + 4 + 1 = 9 or 4 + 3 + 1 = 8 (c across and back), then e
    costs 9 there or 3 + 1 elsewhere. So 1 + 8 + 1 = 10, the optimum.

    >>> from solvers.scheduling.bounds import lower_bound, segment_problems
    >>> p = SchedulingProblem(((1, -1), (4, 4), (4, 4), (1, 1), (9, 1)),
    ...                       ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8), (3, 4, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((3,),) * 5)
    >>> segs = segment_problems(p)
    >>> floors = [lower_bound(sub, segments=False) for sub, _ in segs]
    >>> floors, chain_segment_bound(p, segs, floors)
    ([1, 8, 1], 10)
    """
    if problem.objective is not Objective.LATENCY or not segments:
        return 0
    plain = sum(int(f) for f in floors)
    terms = segment_chain_terms(problem, segments, floors, cuts)
    if terms is None:
        return plain
    pools, first, steps, last, cuts, _ = terms
    value = chain_bound(first, lambda j: steps[j], last, held_weights(problem, cuts), pools.capacity)
    if not math.isfinite(value):
        return plain
    return max(plain, int(value))


def segment_chain_terms(problem: SchedulingProblem, segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
                        floors: Sequence[int], cuts: Sequence[int] | None = None) -> tuple | None:
    """The terms :func:`chain_segment_bound` chains (module Notes), for it and for
    :func:`~solvers.scheduling.segment_runs.segment_run_bound`.

    Returns
    -------
    tuple or None
        ``(pools, first, steps, last, cuts, middles)``: the device pools, the head term per
        pool, per middle segment ``(stay, move)`` (the diagonal and the pool-to-pool table,
        floored), the tail term per pool, the cut ops, and the middle segments as
        ``(subproblem, ops)``; None for THROUGHPUT or without segments.

    Examples
    --------
    >>> from solvers.scheduling.bounds import segment_problems
    >>> p = SchedulingProblem(((1,), (2,), (3,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    >>> pools, first, steps, last, cuts, middles = segment_chain_terms(p, segment_problems(p), [1, 2, 3])
    >>> first.tolist(), [s.tolist() for s, _ in steps], cuts, [ops for _, ops in middles]
    ([1.0], [[2.0], [3.0]], [0, 1, 2], [(0, 1), (1, 2)])
    """
    if problem.objective is not Objective.LATENCY or not segments:
        return None
    ranges = segment_ranges(problem, cuts)
    if len(ranges) != len(segments) or len(floors) != len(segments):
        raise ValueError("segments and floors must follow segment_problems(problem)")
    pools = DevicePools(problem)
    head, _ = segments[0]
    first = _floored(pool_finish(head, DevicePools(head, pools.pools))[head.num_ops - 1], float(floors[0]))
    cuts = [sink for _, _, _, sink in ranges if sink is not None]
    steps, middles = [], []
    for j, ((sub, ops), (_, _, source, sink)) in enumerate(zip(segments, ranges)):
        if source is not None and sink is not None:
            reach = _floored(pool_finish_from_source(sub, 0, DevicePools(sub, pools.pools))[:, sub.num_ops - 1, :],
                             float(floors[j]))
            # one device for both cut ops: the diagonal; two devices (of one pool or not): the
            # pool table is a bound for them too (it lets the segment move for free inside a pool)
            steps.append((np.diagonal(reach).copy(), reach))
            middles.append((sub, ops))
    last = np.zeros(pools.size)
    if ranges[-1][3] is None:  # a tail after the last cut op
        sub, _ = segments[-1]
        tail = pool_finish_from_source(sub, 0, DevicePools(sub, pools.pools))[:, 1:, :].min(axis=2).max(axis=1)
        last = np.maximum(np.where(np.isfinite(tail), tail, 0.0), float(floors[-1]))
    return pools, first, steps, last, cuts, middles


def prune_free_ends(problem: SchedulingProblem) -> SchedulingProblem:
    """The problem without zero-duration sources and sinks (module Notes, Free ends).

    Applied until none is left; returns ``problem`` itself when there is none, or when
    every op would go.

    Examples
    --------
    A weight source w (0 cycles, 6 bytes, colocated with c) feeds the last of a -> b -> c:
    a is no cut op (w is not ordered with it) until w goes, and c then holds w's weights.

    >>> from solvers.scheduling.structure import cut_vertices
    >>> p = SchedulingProblem(((1,), (1,), (1,), (0,)), ((0, 1, 0), (1, 2, 0), (3, 2, 0)), (1,),
    ...                       ((-1,),), ((),) * 3, op_resident_bytes=(0, 0, 1, 6),
    ...                       colocation_groups=((2, 3),))
    >>> q = prune_free_ends(p)
    >>> cut_vertices(p), cut_vertices(q), q.op_resident_bytes
    ((2,), (0, 1, 2), (0, 0, 7))
    """
    kept = _free_end_survivors(problem)
    if len(kept) == problem.num_ops or not kept:
        return problem
    return _keep(problem, kept)


def _free_end_survivors(problem: SchedulingProblem) -> list[int]:
    """The ops :func:`prune_free_ends` keeps (every op when it drops none), in index order."""
    n = problem.num_ops
    free = [all(x <= 0 for x in row) for row in problem.durations_cycles]
    preds = [0] * n
    succs = [0] * n
    for u, v, _ in problem.edges:
        preds[v] += 1
        succs[u] += 1
    dropped = [False] * n
    stack = [i for i in range(n) if free[i] and (preds[i] == 0 or succs[i] == 0)]
    out_of: list[list[int]] = [[] for _ in range(n)]
    into: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in problem.edges:
        out_of[u].append(v)
        into[v].append(u)
    while stack:
        i = stack.pop()
        if dropped[i]:
            continue
        dropped[i] = True
        for v in out_of[i]:
            preds[v] -= 1
            if free[v] and not dropped[v] and preds[v] == 0:
                stack.append(v)
        for u in into[i]:
            succs[u] -= 1
            if free[u] and not dropped[u] and succs[u] == 0:
                stack.append(u)
    return [i for i in range(n) if not dropped[i]]


def main_span(problem: SchedulingProblem) -> SchedulingProblem:
    """The ops on the paths from the first op of the longest path (by least durations) to its
    last op, as a problem of their own (module Notes, Side ends); ``problem`` itself when that
    is every op.

    Examples
    --------
    A side source s (2 cycles) feeds the last op of a -> b -> c and hides a and b as cut ops:

    >>> from solvers.scheduling.structure import cut_vertices
    >>> p = SchedulingProblem(((1,), (1,), (1,), (2,)), ((0, 1, 0), (1, 2, 0), (3, 2, 0)), (1,),
    ...                       ((-1,),), ((),) * 3, op_resident_bytes=(0, 0, 1, 6),
    ...                       colocation_groups=((2, 3),))
    >>> q = main_span(p)
    >>> cut_vertices(p), cut_vertices(q), q.num_ops, q.op_resident_bytes
    ((2,), (0, 1, 2), 3, (0, 0, 7))
    """
    kept = _main_span_ops(problem)
    return problem if len(kept) == problem.num_ops else _keep(problem, kept)


def span_with_map(problem: SchedulingProblem) -> tuple[SchedulingProblem, list[int]]:
    """``prune_free_ends(main_span(problem))`` and, for each of its ops, the op of ``problem``
    it is (the span is ``problem`` itself, with the identity, when it drops nothing).

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (1,), (1,), (2,)), ((0, 1, 0), (1, 2, 0), (3, 2, 0)), (1,),
    ...                       ((-1,),), ((),) * 3)
    >>> span, ops = span_with_map(p)
    >>> span.num_ops, ops
    (3, [0, 1, 2])
    """
    kept = _main_span_ops(problem)
    span = problem if len(kept) == problem.num_ops else _keep(problem, kept)
    survivors = _free_end_survivors(span)
    if len(survivors) == span.num_ops or not survivors:
        return span, kept
    return _keep(span, survivors), [kept[i] for i in survivors]


def _main_span_ops(problem: SchedulingProblem) -> list[int]:
    """The ops :func:`main_span` keeps, in index order (every op of an empty problem)."""
    n = problem.num_ops
    if n == 0:
        return []
    order = topological_order(problem)
    m = min_durations(problem)
    into: list[list[int]] = [[] for _ in range(n)]
    out_of: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in problem.edges:
        into[v].append(u)
        out_of[u].append(v)
    finish = [0] * n
    back = [-1] * n
    for i in order:
        best = max(into[i], key=lambda u: (finish[u], -u), default=-1)
        finish[i] = m[i] + (finish[best] if best >= 0 else 0)
        back[i] = best
    last = max(range(n), key=lambda i: (finish[i], -i))
    first = last
    while back[first] >= 0:
        first = back[first]
    below = _reach(first, out_of, n)
    above = _reach(last, into, n)
    return [i for i in range(n) if below[i] and above[i]]


def _reach(start: int, nxt: list[list[int]], n: int) -> list[bool]:
    seen = [False] * n
    seen[start] = True
    stack = [start]
    while stack:
        for j in nxt[stack.pop()]:
            if not seen[j]:
                seen[j] = True
                stack.append(j)
    return seen


def _keep(problem: SchedulingProblem, kept: list[int]) -> SchedulingProblem:
    index = {op: k for k, op in enumerate(kept)}
    resident = [problem.resident_floor_bytes(i) for i in kept]
    for i, group in enumerate(colocation_closure(problem)):
        if i not in index:
            home = next((j for j in group if j in index), None)
            if home is not None:
                resident[index[home]] += problem.resident_floor_bytes(i)
    edges, transfer = [], []
    for e, (u, v, b) in enumerate(problem.edges):
        if u in index and v in index:
            edges.append((index[u], index[v], b))
            transfer.append(problem.transfer_cycles[e])
    groups = tuple(g2 for g2 in (tuple(index[i] for i in g if i in index) for g in problem.colocation_groups)
                   if len(g2) > 1)
    return SchedulingProblem(
        tuple(problem.durations_cycles[i] for i in kept), tuple(edges), problem.device_streams,
        problem.link_of, tuple(transfer), problem.objective, problem.device_memory_bytes, tuple(resident),
        tuple(problem.output_bytes(i) for i in kept) if problem.op_output_bytes else (),
        groups, problem.device_class, tuple(problem.op_name(i) for i in kept))

