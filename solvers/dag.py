"""Directed acyclic graphs over dense integer node ids, shared by the solver families."""

from __future__ import annotations

import heapq
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

__all__ = ["WaitDeadlock", "kahn_order", "list_starts"]


class WaitDeadlock(ValueError):
    """Activities wait on each other in a cycle, so a re-timing or replay can never finish.

    A ``ValueError`` (callers that treat any bad input alike still catch it), typed so that
    callers that drop a deadlocking candidate tell it from a bug by its class, not its message.

    Examples
    --------
    >>> isinstance(WaitDeadlock("deadlock: ['a'] waits on itself"), ValueError)
    True
    """


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


def list_starts(deps: Mapping[Hashable, Iterable[Hashable]], length: Mapping[Hashable, int],
                floor: Mapping[Hashable, int] | None = None, priority: Mapping[Hashable, Any] | None = None,
                gate: Callable[[Hashable, int], int] | None = None) -> dict:
    """A list schedule over a dependency DAG of keys: each key starts once every key it waits
    for (``deps``) has ended (start + ``length``), not before its ``floor`` entry.

    Of the ready keys the one of lowest ``(priority, key)`` goes next (keys must then be
    comparable); ``gate(key, earliest)`` may move its start later and records it (a resource
    such as shared bandwidth). Without a gate every key starts at its earliest time, whatever
    the order.

    Raises
    ------
    WaitDeadlock
        When some keys wait on each other (a cycle).

    Examples
    --------
    >>> list_starts({"a": [], "b": ["a"], "c": []}, {"a": 3, "b": 2, "c": 4}, floor={"c": 1})
    {'a': 0, 'b': 3, 'c': 1}
    >>> list_starts({"a": ["b"], "b": ["a"]}, {"a": 1, "b": 1})
    Traceback (most recent call last):
    ...
    solvers.dag.WaitDeadlock: deadlock: ['a', 'b'] wait on each other
    """
    floor = floor or {}
    users: dict = {k: [] for k in deps}
    missing = {k: 0 for k in deps}
    for k, v in deps.items():
        for d in v:
            users[d].append(k)
            missing[k] += 1
    rank = (lambda k: priority[k]) if priority is not None else (lambda k: 0)
    ready = [(rank(k), k) for k, m in missing.items() if m == 0]
    heapq.heapify(ready)
    start: dict = {}
    while ready:
        _, k = heapq.heappop(ready)
        t = max([floor.get(k, 0)] + [start[d] + length[d] for d in deps[k]])
        start[k] = gate(k, t) if gate is not None else t
        for u in users[k]:
            missing[u] -= 1
            if missing[u] == 0:
                heapq.heappush(ready, (rank(u), u))
    if len(start) != len(deps):
        stuck = sorted(k for k in deps if k not in start)[:4]
        raise WaitDeadlock(f"deadlock: {stuck} wait on each other")
    return start
