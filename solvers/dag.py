"""Directed acyclic graphs over dense integer node ids, shared by the solver families."""

from __future__ import annotations

import heapq
from typing import Iterable, Sequence

__all__ = ["kahn_order"]


def kahn_order(num_nodes: int, edges: Iterable[Sequence[int]]) -> tuple[int, ...]:
    """Kahn's topological order, smallest index first among the ready nodes.

    Each edge starts with ``(src, dst)``; anything after that (bytes, costs) is ignored.

    Raises
    ------
    ValueError
        When the edges contain a cycle.

    Examples
    --------
    >>> kahn_order(3, [(2, 0), (0, 1, 64)])
    (2, 0, 1)
    >>> kahn_order(2, [(0, 1), (1, 0)])
    Traceback (most recent call last):
    ...
    ValueError: the edges contain a cycle
    """
    indeg = [0] * num_nodes
    succ: list[list[int]] = [[] for _ in range(num_nodes)]
    for edge in edges:
        u, v = edge[0], edge[1]
        succ[u].append(v)
        indeg[v] += 1
    ready = [i for i in range(num_nodes) if indeg[i] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        u = heapq.heappop(ready)
        out.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    if len(out) != num_nodes:
        raise ValueError("the edges contain a cycle")
    return tuple(out)
