"""Side ends back in the segment chain: prefix floors at the cut ops they feed (LATENCY).

Notes
-----
:func:`~solvers.scheduling.decomposition.main_span` drops side sources (ops with a real
duration and no predecessor once free ends are gone: an embedding lookup beside the main
input) so that the ops they are not ordered with become cut ops again. The work it drops is
lost to every segment bound. Yet a side source s that feeds the span still runs before some
cut op ``c`` of the span (the first one that descends from s), on ``c``'s way in: on the
device of the op it feeds, sharing its stream, or elsewhere and paying a transfer.

The *prefix* of a cut op ``c`` is the subproblem on ``c`` and all its ancestors in the pruned
problem (side sources included; memory dropped, free ends pruned again): every op of it
ends before ``c`` ends, so the restriction of any schedule to it is a schedule of the
prefix of makespan at most ``end(c)``, and any proven bound ``P`` on the prefix's optimum
bounds ``end(c)``. The rest of the makespan, ``makespan - end(c)``, is the chain of the span's
segments after ``c`` (:func:`~solvers.scheduling.path_bounds.chain_bound` started at ``c``
with nothing before it: a relaxation of the whole chain, whose runs may also have started
earlier and hold more weights), or at least the sum of those segments' floors. So

``makespan >= P + max(sum of floors after c, chain after c)``

for every schedule (:func:`prefix_chain_bound`). The prefixes are small only near the start
of a graph, so :func:`side_prefixes` offers them only up to ``max_ops`` ops; CP-SAT proves
``P`` (:func:`solvers.scheduling.cpsat.segments.segment_lower_bound`).

On the dnn BERT-L 12 operator graph the position and token-type embeddings (0.29 ms each)
feed the two adds after the word embedding: on one accelerator the five ops run in series
(1.47 ms before the first layer norm), and sending one elsewhere costs a 4.4-ms transfer,
where the span's chain counts the longest path, 0.88 ms. The prefix of that layer norm
(12 ops) is proven at 2.649 ms against the chain's 2.061.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from solvers.scheduling.bounds import subproblem
from solvers.scheduling.decomposition import prune_free_ends, segment_chain_terms, span_with_map
from solvers.scheduling.forced import held_weights, restrict_placements
from solvers.scheduling.path_bounds import chain_bound
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.structure import cut_vertices, min_durations, segment_ranges, topological_order

__all__ = ["side_prefixes", "prefix_chain_bound", "PREFIX_MAX_OPS", "MAX_PREFIXES"]

PREFIX_MAX_OPS = 64  # CP-SAT proves prefixes of this size in a few hundredths of a unit
MAX_PREFIXES = 3  # the longest ones: a later cut op's prefix holds the earlier side sources too


def side_prefixes(problem: SchedulingProblem, max_ops: int = PREFIX_MAX_OPS,
                  ) -> list[tuple[int, SchedulingProblem]]:
    """The prefixes worth proving (module Notes): ``(k, prefix)`` with ``k`` the position of
    the cut op among the cut ops of :func:`~solvers.scheduling.bounds.bound_segments`'s
    problem, latest first, at most :data:`MAX_PREFIXES`; empty unless that problem is the main
    span and it dropped a side op with a real duration that feeds it.

    Examples
    --------
    A side source s (2 cycles) feeds d of a -> {b, c} -> d (the span's cut ops a and d); its
    prefix at d is the whole graph:

    >>> p = SchedulingProblem(((1, 1), (4, 4), (4, 4), (1, 1), (2, 2)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (4, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((100,),) * 5)
    >>> [(k, pre.num_ops) for k, pre in side_prefixes(p)]
    [(1, 5)]
    """
    if problem.objective is not Objective.LATENCY or problem.num_ops == 0:
        return []
    pruned = prune_free_ends(restrict_placements(problem))
    span, to_pruned = span_with_map(pruned)
    if span is pruned or len(cut_vertices(span)) <= len(cut_vertices(pruned)):
        return []  # bound_segments keeps the whole problem: nothing was dropped
    cuts = [to_pruned[sink] for _, _, _, sink in segment_ranges(span) if sink is not None]
    kept = set(to_pruned)
    least = min_durations(pruned)
    preds: list[list[int]] = [[] for _ in range(pruned.num_ops)]
    for u, v, _ in pruned.edges:
        preds[v].append(u)
    order = {op: pos for pos, op in enumerate(topological_order(pruned))}
    found, seen = [], set()
    # each cut op of the span descends from the one before, so their ancestor sets grow: stop
    # at the first one above max_ops (no reach sets of the whole graph: it may have 10^4 ops)
    for k, c in enumerate(cuts):
        ops = _ancestors(preds, c, max_ops)
        if ops is None:
            break
        if any(i not in kept and i not in seen and least[i] > 0 for i in ops):  # the first cut op a side op feeds
            prefix = sorted(ops | {c}, key=order.__getitem__)
            found.append((k, prune_free_ends(subproblem(pruned, prefix, None))))
        seen |= ops
    return found[::-1][:MAX_PREFIXES]


def _ancestors(preds: list[list[int]], op: int, limit: int) -> set[int] | None:
    """The ancestors of ``op``, or None when there are ``limit`` or more."""
    found: set[int] = set()
    stack = [op]
    while stack:
        for u in preds[stack.pop()]:
            if u not in found:
                found.add(u)
                if len(found) >= limit:
                    return None
                stack.append(u)
    return found


def prefix_chain_bound(span: SchedulingProblem, segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
                       floors: Sequence[int], k: int, prefix: int) -> int:
    """``prefix + max(sum of floors after cut op k, chain after cut op k)`` (module Notes).

    ``span``, ``segments`` and ``floors`` as for
    :func:`~solvers.scheduling.decomposition.chain_segment_bound` (the problem and segments of
    :func:`~solvers.scheduling.bounds.bound_segments`); ``prefix`` a proven bound on the end
    of cut op ``k`` (0 is its first cut op).

    Examples
    --------
    A chain a(2) -> b(3) -> c(4): if a's end is proven at least 5, the makespan is at least
    5 + 3 + 4:

    >>> from solvers.scheduling.bounds import segment_problems
    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    >>> prefix_chain_bound(p, segment_problems(p), [2, 3, 4], 0, 5)
    12
    """
    rest = sum(int(f) for f in floors[k + 1:])
    terms = segment_chain_terms(span, segments, floors)
    if terms is not None:
        pools, _, steps, last, cuts, _ = terms
        resident = held_weights(span, cuts)[k:]
        # the chain from cut op k, which ends at 0 on any pool
        value = chain_bound(np.zeros(pools.size), lambda j: steps[k + j], last, resident, pools.capacity)
        if math.isfinite(value):
            rest = max(rest, int(value))
    return prefix + rest

