"""Graph structure the bounds share: topological order, cheapest durations and transfers,
cut ops and the segments between them.

Notes
-----
A *cut op* c is one that every other op precedes or follows (is an ancestor or a
descendant of c). In a topological order with c at position p this holds exactly when

* every op x before p reaches c: x has a successor at a position ``<= p`` (follow
  successors inside the prefix: positions grow, so the walk ends at an op without a
  successor in the prefix, and c is the only one), and
* every op y after p is reached from c: y has a predecessor at a position ``>= p``.

So x (at position ``q``, first successor at ``s``) rules out the positions strictly between
q and s, and y (last predecessor at ``r``, position ``q``) those strictly between r and q;
one difference array counts the exclusions of every position in linear time (the
ancestor/descendant bitmasks this replaces took quadratic memory). The ops strictly
between two consecutive cut ops a and b are then exactly the descendants of a that are
ancestors of b: a contiguous range of the order.
"""

from __future__ import annotations

from typing import Sequence

from solvers.dag import kahn_order
from solvers.scheduling.problem import SchedulingProblem

__all__ = ["topological_order", "min_durations", "min_transfer_cycles", "cut_vertices", "clean_cut_vertices",
           "segment_ranges"]


def topological_order(problem: SchedulingProblem) -> tuple[int, ...]:
    """Ops in topological order, ties broken by index (Kahn's algorithm with a heap).

    Raises
    ------
    ValueError
        When the edges contain a cycle.

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (1,), (1,)), ((2, 0, 0), (0, 1, 0)), (1,), ((-1,),), ((), ()))
    >>> topological_order(p)
    (2, 0, 1)
    """
    return kahn_order(problem.num_ops, problem.edges)


def min_durations(problem: SchedulingProblem) -> tuple[int, ...]:
    """Each op's smallest duration over its allowed devices.

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (3, 6)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> min_durations(p)
    (4, 3)
    """
    return tuple(min(x for x in row if x >= 0) for row in problem.durations_cycles)


def min_transfer_cycles(problem: SchedulingProblem, edge: int) -> int:
    """The cheapest communication edge ``edge`` can get (0 when its ops can share a device).

    Returns a large number when no pair of allowed devices can exchange data.

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (-1, 6)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((7,),))
    >>> min_transfer_cycles(p, 0)
    7
    """
    u, v, _ = problem.edges[edge]
    best = None
    for a in problem.allowed_devices(u):
        for b in problem.allowed_devices(v):
            if a == b:
                return 0
            link = problem.link_of[a][b]
            if link >= 0:
                c = problem.transfer_cycles[edge][link]
                best = c if best is None else min(best, c)
    return best if best is not None else 1 << 60


def cut_vertices(problem: SchedulingProblem) -> tuple[int, ...]:
    """Ops that every other op precedes or follows, in topological order (module Notes).

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,),
    ...                       ((-1,),), ((),) * 4)
    >>> cut_vertices(p)  # the fork and the join
    (0, 3)
    """
    order = topological_order(problem)
    n = len(order)
    pos = [0] * n
    for k, op in enumerate(order):
        pos[op] = k
    first_succ = [n] * n  # by position
    last_pred = [-1] * n
    for u, v, _ in problem.edges:
        pu, pv = pos[u], pos[v]
        if pv < first_succ[pu]:
            first_succ[pu] = pv
        if pu > last_pred[pv]:
            last_pred[pv] = pu
    excluded = [0] * (n + 1)
    for q in range(n):
        for lo, hi in ((q + 1, first_succ[q] - 1), (last_pred[q] + 1, q - 1)):
            if lo <= hi:
                excluded[lo] += 1
                excluded[hi + 1] -= 1
    out, running = [], 0
    for p in range(n):
        running += excluded[p]
        if running == 0:
            out.append(order[p])
    return tuple(out)


def clean_cut_vertices(problem: SchedulingProblem) -> tuple[int, ...]:
    """The cut ops no edge jumps over (no edge from an op before it to an op after it), in
    topological order: a device change between two consecutive ones moves every edge between
    them, residual connections included.

    Examples
    --------
    a -> b -> c -> d with a residual edge a -> d: b and c are cut ops, but the edge jumps them.

    >>> p = SchedulingProblem(((1,),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0), (0, 3, 0)), (1,),
    ...                       ((-1,),), ((),) * 4)
    >>> cut_vertices(p), clean_cut_vertices(p)
    ((0, 1, 2, 3), (0, 3))
    """
    cuts = cut_vertices(problem)
    if not cuts:
        return cuts
    order = topological_order(problem)
    pos = [0] * len(order)
    for k, op in enumerate(order):
        pos[op] = k
    jumped = [0] * (len(order) + 1)  # positions strictly inside some edge's span
    for u, v, _ in problem.edges:
        if pos[v] - pos[u] > 1:
            jumped[pos[u] + 1] += 1
            jumped[pos[v]] -= 1
    inside, running = [False] * len(order), 0
    for k in range(len(order)):
        running += jumped[k]
        inside[k] = running > 0
    return tuple(c for c in cuts if not inside[pos[c]])


def segment_ranges(problem: SchedulingProblem, cuts: Sequence[int] | None = None,
                   ) -> list[tuple[int, int, int | None, int | None]]:
    """The segments between cut ops as ``(first, last, source, sink)``: an inclusive position
    range of the topological order, the cut op that opens it (None for the head) and the one
    that closes it (None for the tail). Empty without cut ops. ``cuts`` (optional): a subset
    of :func:`cut_vertices` to cut at instead of all of them (e.g. :func:`clean_cut_vertices`).

    The head holds the ops up to the first cut op; each middle segment runs from a cut op
    (its source) to the next; the tail from the last cut op to the end, when ops follow it.

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,),
    ...                       ((-1,),), ((),) * 4)
    >>> segment_ranges(p)
    [(0, 0, None, 0), (0, 3, 0, 3)]
    """
    cuts = cut_vertices(problem) if cuts is None else tuple(cuts)
    if not cuts:
        return []
    order = topological_order(problem)
    pos = {op: k for k, op in enumerate(order)}
    places = [pos[c] for c in cuts]
    out: list[tuple[int, int, int | None, int | None]] = [(0, places[0], None, order[places[0]])]
    out += [(a, b, order[a], order[b]) for a, b in zip(places, places[1:])]
    if places[-1] < len(order) - 1:
        out.append((places[-1], len(order) - 1, order[places[-1]], None))
    return out
