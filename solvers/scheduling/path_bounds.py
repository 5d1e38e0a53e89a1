"""Placement-aware path bounds (LATENCY): every op pays its own device's duration, every
edge between two devices its transfer, and memory caps how far a path can stay on one device.

Notes
-----
Write ``dur[i][d]`` (``inf`` where op i may not use d) and, for an edge e, ``tc_e(a, b)``:
0 when ``a == b``, ``transfer_cycles[e][link_of[a][b]]`` when the link exists, ``inf``
otherwise. Transfers and ops of one schedule obey ``start_v >= end_u + tc_e(dev u, dev v)``
for every edge (a transfer starts after its source ends and lasts its duration; its
consumer starts after it ends). Resource contention is ignored (a relaxation).

* **Earliest finish** ``F[i][d]``: ``dur[i][d] + max(0, max over edges (u, i) of min_a
  (F[u][a] + tc_e(a, d)))``. By induction over a topological order, ``end_i >=
  F[i][dev i]`` in every schedule: each predecessor u ended no earlier than ``F[u][dev u]``,
  which is at least the minimum over a.
* **Tail** ``Q[i][d]``: ``max(0, max over edges (i, w) of min_b (tc_e(d, b) + dur[w][b] +
  Q[w][b]))``: the makespan is at least ``end_i + Q[i][dev i]`` (the same argument run
  backwards from the sinks).
* :func:`placement_path_bound` = ``max_i min_d (F[i][d] + Q[i][d])`` (the makespan is at
  least ``end_i + Q[i][dev i]``): never below the critical path (it
  charges a transfer whenever consecutive ops of a path prefer different devices, where the
  critical path charges nothing as soon as the two ops *could* share a device).
* **Chains with memory** (:func:`chain_bound`): take ops ``c_1, ..., c_k`` that every schedule
  finishes in this order, a lower bound ``first(b)`` on ``end(c_1)`` when c_1 is on b, a
  lower bound ``step_j(a, b)`` on ``end(c_(j+1)) - end(c_j)`` when they are on a and b (on
  one device: ``stay_j(b)``; on two devices, possibly of one pool: ``move_j(a, b)``), and
  ``last(a)`` on ``makespan - end(c_k)``. The makespan is the telescoping sum, so it is at
  least the minimum over device sequences of ``first + sum step + last``. A *run* of
  consecutive chain ops on one device d holds all their weights on d for the whole run, so
  ``sum held <= cap_d`` over the run (``held``:
  :func:`~solvers.scheduling.forced.held_weights`, each colocation group's weights counted
  at its first chain op); the minimisation ranges over device sequences whose maximal runs
  each obey this (every real sequence does: the check is per run, a relaxation of the
  per-device total), by dynamic programming with a sliding window per device. That is what makes the memory limit cost time: a path whose
  weights exceed one accelerator must cross between devices, and pay a transfer each time,
  or run partly on slower devices with room.
* :func:`memory_path_bound` applies the chain to paths of the graph (``step_j(a, b) =
  tc(a, b) + dur[c_(j+1)][b]`` over the path's edge; ``first = F``, ``last = Q``): several
  candidate paths (longest by minimum duration, heaviest in weights, and a blend), the best
  bound over them.

**Pools.** Devices with equal durations and memory form a pool (:class:`DevicePools`),
and the tables are kept per pool: ``tc(K, K')`` is the cheapest transfer from a device of
K to one of K' (``K == K'``: 0 for the same device; for a *move* between two devices of one
pool, in the chains, the cheapest such transfer, ``inf`` for a pool of one). A pool's
table is at most every member's (by induction, the minimum is taken over more choices), so
every bound stays sound, and with symmetric links it loses nothing; 14 accelerators and 8
CPU cores become two pools, a 10,000-op graph on 8 devices of two kinds a 2-column table.

All values are exact integers carried in float64 (exact below 2**53 cycles); the functions
give 0 when the serial horizon reaches 2**52, which no real plan does.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable, Sequence

import numpy as np

from solvers.scheduling.forced import colocation_closure, held_weights
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.structure import min_durations, topological_order

__all__ = [
    "DevicePools",
    "pool_finish",
    "pool_finish_from_source",
    "pool_tail",
    "earliest_finish",
    "tail_times",
    "placement_path_bound",
    "path_bounds",
    "chain_bound",
    "memory_path_bound",
    "longest_path",
]

_EXACT = float(1 << 52)


class DevicePools:
    """Devices pooled by (durations, memory), with per-pool durations and transfer costs.

    ``pools`` may give the partition (e.g. a whole problem's, for its segments).

    Examples
    --------
    Two identical fast devices and one slow one, all linked at 5 cycles per transfer:

    >>> link = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    >>> p = SchedulingProblem(((2, 2, 6),), (), (1, 1, 1), link, ())
    >>> pools = DevicePools(p)
    >>> pools.pools, pools.durations.tolist()
    (((0, 1), (2,)), [[2.0, 6.0]])
    """

    def __init__(self, problem: SchedulingProblem, pools: Sequence[Sequence[int]] | None = None) -> None:
        if pools is None:
            groups: dict[tuple, list[int]] = {}
            for d in range(problem.num_devices):
                key = (tuple(row[d] for row in problem.durations_cycles), problem.memory_bytes(d))
                groups.setdefault(key, []).append(d)
            pools = list(groups.values())
        self.pools: tuple[tuple[int, ...], ...] = tuple(tuple(g) for g in pools)
        self.problem = problem
        dur = np.asarray(problem.durations_cycles, dtype=np.float64).reshape(problem.num_ops, problem.num_devices)
        dur[dur < 0] = np.inf
        # a given partition may pool unequal devices: the minimum (and the largest memory)
        # keep every table a bound for each member
        self.durations = np.stack([dur[:, list(g)].min(axis=1) for g in self.pools], axis=1)  # (ops, pools)
        mems = [[problem.memory_bytes(d) for d in g] for g in self.pools]
        self.capacity = [0 if 0 in m else max(m) for m in mems]
        nl, k = problem.num_links, len(self.pools)
        pair_links = [[sorted({problem.link_of[a][b] for a in ka for b in kb if a != b and problem.link_of[a][b] >= 0})
                       for kb in self.pools] for ka in self.pools]
        width = max(1, max(len(x) for row in pair_links for x in row))
        self._links = np.full((k, k, width), nl, dtype=np.int64)  # column nl: no link (inf)
        for a in range(k):
            for b in range(k):
                self._links[a, b, :len(pair_links[a][b])] = pair_links[a][b]
        rows = np.asarray(problem.transfer_cycles, dtype=np.float64).reshape(len(problem.edges), nl)
        self._rows = np.concatenate([rows, np.full((len(problem.edges), 1), np.inf)], axis=1)

    @property
    def size(self) -> int:
        return len(self.pools)

    def costs(self, edges: Sequence[int] | np.ndarray, moves: bool = False) -> np.ndarray:
        """``tc[k, K, K']`` for edges ``edges[k]`` (module Notes, Pools); on the diagonal 0, or
        with ``moves`` the cheapest transfer between two devices of the pool."""
        edges = np.asarray(edges, dtype=np.int64)
        tc = self._rows[edges][:, self._links].min(axis=-1)
        if not moves:
            idx = np.arange(self.size)
            tc[:, idx, idx] = 0.0
        return tc


def _exact_enough(problem: SchedulingProblem) -> bool:
    serial = (sum(max(r) for r in problem.durations_cycles)
              + sum(max(r, default=0) for r in problem.transfer_cycles))
    return serial < _EXACT


def _levels(problem: SchedulingProblem, order: Sequence[int], forward: bool = True) -> list[list[int]]:
    """Ops grouped by longest distance from the sources (``forward``) or to the sinks."""
    depth = [0] * problem.num_ops
    before: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        if forward:
            before[v].append(u)
        else:
            before[u].append(v)
    walk = order if forward else tuple(reversed(order))
    for i in walk:
        depth[i] = 1 + max((depth[u] for u in before[i]), default=-1)
    groups: dict[int, list[int]] = {}
    for i in walk:
        groups.setdefault(depth[i], []).append(i)
    return [groups[k] for k in sorted(groups)]


def _forward(problem: SchedulingProblem, pools: DevicePools, dur: np.ndarray, ready: np.ndarray) -> np.ndarray:
    """Earliest finish per pool for a batch: ``dur`` and ``ready`` are ``(batch, ops, pools)``."""
    n = problem.num_ops
    fin = np.full(dur.shape, np.inf)
    out_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (u, _, _) in enumerate(problem.edges):
        out_edges[u].append(e)
    src = np.asarray([u for u, _, _ in problem.edges], dtype=np.int64)
    dst = np.asarray([v for _, v, _ in problem.edges], dtype=np.int64)
    for level in _levels(problem, topological_order(problem)):
        lv = np.asarray(level, dtype=np.int64)
        fin[:, lv] = ready[:, lv] + dur[:, lv]
        es = [e for i in level for e in out_edges[i]]
        if not es:
            continue
        es_a = np.asarray(es, dtype=np.int64)
        reach = (fin[:, src[es_a]][:, :, :, None] + pools.costs(es_a)[None]).min(axis=2)
        np.maximum.at(ready, (slice(None), dst[es_a]), reach)
    return fin


def pool_finish(problem: SchedulingProblem, pools: DevicePools | None = None) -> np.ndarray:
    """``F[i, K]``: the earliest finish of op i on pool K (module Notes), ``(ops, pools)``.

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (6, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> pool_finish(p).tolist()
    [[4.0, inf], [10.0, 7.0]]
    """
    pools = pools or DevicePools(problem)
    shape = (1, problem.num_ops, pools.size)
    return _forward(problem, pools, pools.durations[None], np.zeros(shape))[0]


def pool_finish_from_source(problem: SchedulingProblem, source: int,
                            pools: DevicePools | None = None) -> np.ndarray:
    """``F[a, i, K]``: :func:`pool_finish` when op ``source`` takes no time and is on pool a.

    For a segment whose first op is the cut op that opens it (time 0 = that op's end).

    Examples
    --------
    Op 1 takes 3 cycles on device 0 or 4 on device 1, after the source or a 2-cycle transfer:

    >>> p = SchedulingProblem(((0, 0), (3, 4)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> pool_finish_from_source(p, 0)[:, 1].tolist()
    [[3.0, 6.0], [5.0, 4.0]]
    """
    pools = pools or DevicePools(problem)
    k = pools.size
    dur = np.repeat(pools.durations[None], k, axis=0)
    allowed = np.isfinite(dur[0, source])
    dur[:, source] = np.inf
    for a in range(k):
        if allowed[a]:
            dur[a, source, a] = 0.0
    return _forward(problem, pools, dur, np.zeros((k, problem.num_ops, k)))


def pool_tail(problem: SchedulingProblem, pools: DevicePools | None = None) -> np.ndarray:
    """``Q[i, K]``: a lower bound on ``makespan - end_i`` when op i is on pool K (module Notes).

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (6, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> pool_tail(p).tolist()  # after op 0 on device 0: min(6, 2 + 1)
    [[3.0, 0.0], [0.0, 0.0]]
    """
    pools = pools or DevicePools(problem)
    n = problem.num_ops
    dur = pools.durations
    tail = np.zeros((n, pools.size))
    in_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (_, v, _) in enumerate(problem.edges):
        in_edges[v].append(e)
    src = np.asarray([u for u, _, _ in problem.edges], dtype=np.int64)
    dst = np.asarray([v for _, v, _ in problem.edges], dtype=np.int64)
    for level in _levels(problem, topological_order(problem), forward=False):
        es = [e for w in level for e in in_edges[w]]
        if not es:
            continue
        es_a = np.asarray(es, dtype=np.int64)
        after = (dur[dst[es_a]] + tail[dst[es_a]])[:, None, :] + pools.costs(es_a)
        np.maximum.at(tail, src[es_a], after.min(axis=2))
    tail[~np.isfinite(dur)] = 0.0  # a forbidden placement needs no tail
    return tail


def earliest_finish(problem: SchedulingProblem) -> np.ndarray:
    """``F[i, d]``: a lower bound on op i's end in any schedule that puts i on device d.

    Examples
    --------
    Op 0 runs only on device 0 (4 cycles), op 1 takes 1 cycle on device 1 or 6 on device 0,
    and the transfer costs 2: op 1 ends at 4 + 2 + 1 = 7 on device 1, 10 on device 0.

    >>> p = SchedulingProblem(((4, -1), (6, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> earliest_finish(p).tolist()
    [[4.0, inf], [10.0, 7.0]]
    """
    pools = DevicePools(problem)
    return pool_finish(problem, pools)[:, _pool_index(pools)]


def tail_times(problem: SchedulingProblem) -> np.ndarray:
    """``Q[i, d]``: a lower bound on ``makespan - end_i`` when op i is on device d.

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (6, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> tail_times(p).tolist()
    [[3.0, 0.0], [0.0, 0.0]]
    """
    pools = DevicePools(problem)
    return pool_tail(problem, pools)[:, _pool_index(pools)]


def _pool_index(pools: DevicePools) -> list[int]:
    of = {d: k for k, devs in enumerate(pools.pools) for d in devs}
    return [of[d] for d in range(pools.problem.num_devices)]


def _as_int(x: float) -> int:
    return int(x) if math.isfinite(x) else 0


def placement_path_bound(problem: SchedulingProblem) -> int:
    """``max_i min_d (F[i][d] + Q[i][d])`` (module Notes): a critical path that knows where
    ops can run.

    LATENCY only (0 otherwise).

    Examples
    --------
    a -> b -> c where a and c are fast on device 0, b on device 1 (1 vs 9 cycles), and
    transfers cost 3: the critical path charges ``1 + 1 + 1`` (every pair could share a
    device), but b either runs slowly beside a and c (11) or pays two transfers (9).

    >>> p = SchedulingProblem(((1, 9), (9, 1), (1, 9)), ((0, 1, 8), (1, 2, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((3,), (3,)))
    >>> from solvers.scheduling.bounds import critical_path_bound
    >>> critical_path_bound(p), placement_path_bound(p)
    (3, 9)
    """
    return path_bounds(problem, memory=False)[0]


def path_bounds(problem: SchedulingProblem, memory: bool = True) -> tuple[int, int]:
    """:func:`placement_path_bound` and :func:`memory_path_bound` (0 unless ``memory``) from
    one pair of tables.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 10),) * 3, ((0, 1, 8), (1, 2, 8)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,), (2,)), device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    >>> path_bounds(p)
    (3, 14)
    """
    if problem.objective is not Objective.LATENCY or problem.num_ops == 0 or not _exact_enough(problem):
        return 0, 0
    pools = DevicePools(problem)
    fin, tail = pool_finish(problem, pools), pool_tail(problem, pools)
    placement = _as_int(float((fin + tail).min(axis=1).max()))
    if not memory:
        return placement, 0
    return placement, _memory_paths(problem, pools, fin, tail, _candidate_paths(problem))


def chain_bound(first: np.ndarray, steps: Callable[[int], tuple[np.ndarray, np.ndarray]], last: np.ndarray,
                resident: Sequence[int], capacity: Sequence[int]) -> float:
    """The memory-aware chain minimum of the module Notes.

    Parameters
    ----------
    first : array (pools,)
        Lower bound on the first chain op's end on each pool (``inf`` = not allowed).
    steps : callable
        ``steps(j)`` gives ``(stay, move)`` between chain ops j and j+1: ``stay[b]`` when both
        are on one device of pool b, ``move[a, b]`` when they are on two devices (pools a
        and b, possibly equal); ``inf`` where impossible.
    last : array (pools,)
        Lower bound on ``makespan - end`` of the last chain op on each pool.
    resident : sequence of int
        Weights each chain op puts on its device.
    capacity : sequence of int
        Memory per device of each pool, 0 = unlimited.

    Returns
    -------
    float
        The minimum over admissible sequences (``inf`` when there is none).

    Examples
    --------
    Three ops of 5 bytes, each 1 cycle on device 0 or 10 on device 1 (both hold 10 bytes),
    transfers 2 cycles. Device 0 cannot hold all three: two there, the third on device 1
    after a transfer, ``1 + 1 + (2 + 10) = 14``.

    >>> inf = float("inf")
    >>> stay, move = np.array([1.0, 10.0]), np.array([[inf, 2 + 10], [2 + 1, inf]])
    >>> chain_bound(np.array([1.0, 10.0]), lambda j: (stay, move), np.zeros(2), [5, 5, 5], [10, 10])
    14.0
    """
    k = len(first)
    cap = [c if c > 0 else math.inf for c in capacity]
    value = np.array(first, dtype=np.float64)  # V_j(b): chain ops 0..j done, op j ends on pool b
    queues: list[deque] = [deque() for _ in range(k)]  # (run start t, In_t(b) - P_b(t))
    reset = [True] * k  # the next op starts a fresh window on b
    prefix = [0.0] * k  # P_b(j): sum of stay steps since the window base
    low = [0] * k  # earliest run start the memory window allows
    held = [0] * k  # weights in the window
    for j in range(len(resident)):
        if j == 0:
            enter, stay = value, np.zeros(k)
        else:
            stay, move = steps(j - 1)
            enter = (value[:, None] + move).min(axis=0)  # a run starting at j, after another run
        value = np.full(k, np.inf)
        for b in range(k):
            q = queues[b]
            if resident[j] > cap[b] or not (math.isfinite(stay[b]) or math.isfinite(enter[b])):
                q.clear()  # no run on b contains op j
                reset[b] = True
                continue
            if reset[b] or not math.isfinite(stay[b]):  # a run on b can only start at op j
                q.clear()
                reset[b], prefix[b], low[b], held[b] = False, 0.0, j, 0
            else:
                prefix[b] += stay[b]
            held[b] += resident[j]
            while held[b] > cap[b]:
                held[b] -= resident[low[b]]
                low[b] += 1
            entry = enter[b] - prefix[b]
            if math.isfinite(entry):
                while q and q[-1][1] >= entry:
                    q.pop()
                q.append((j, entry))
            while q and q[0][0] < low[b]:
                q.popleft()
            if q:
                value[b] = prefix[b] + q[0][1]
    return float((value + np.asarray(last, dtype=np.float64)).min())


def longest_path(problem: SchedulingProblem, op_weight: Sequence[float],
                 edge_weight: Sequence[float]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The heaviest path: its ops and the edges between them, ties broken by lower index.

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (5,), (2,), (1,)), ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)),
    ...                       (1,), ((-1,),), ((),) * 4)
    >>> longest_path(p, [1, 5, 2, 1], [0, 0, 0, 0])
    ((0, 1, 3), (0, 2))
    """
    n = problem.num_ops
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for e, (u, v, _) in enumerate(problem.edges):
        preds[v].append((u, e))
    best = [0.0] * n
    back: list[tuple[int, int] | None] = [None] * n
    for i in topological_order(problem):
        top, arg = 0.0, None
        for u, e in preds[i]:
            x = best[u] + edge_weight[e]
            if arg is None or x > top:
                top, arg = x, (u, e)
        best[i] = top + op_weight[i]
        back[i] = arg
    end = max(range(n), key=lambda i: (best[i], -i))
    ops, edges = [end], []
    while back[ops[-1]] is not None:
        u, e = back[ops[-1]]
        edges.append(e)
        ops.append(u)
    return tuple(reversed(ops)), tuple(reversed(edges))


def _candidate_paths(problem: SchedulingProblem) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    m = min_durations(problem)
    closure = colocation_closure(problem)
    res = [sum(problem.resident_floor_bytes(j) for j in closure[i]) for i in range(problem.num_ops)]
    zero = [0.0] * len(problem.edges)
    total_m, total_r = max(1, sum(m)), max(1, sum(res))
    blend = [m[i] / total_m + res[i] / total_r for i in range(problem.num_ops)]
    out = []
    for w in (m, res, blend):
        path = longest_path(problem, w, zero)
        if path not in out:
            out.append(path)
    return out


def memory_path_bound(problem: SchedulingProblem,
                      paths: Sequence[tuple[Sequence[int], Sequence[int]]] | None = None) -> int:
    """The chain bound (module Notes) over candidate paths, the best of them.

    ``paths`` (optional): ``(ops, edges)`` pairs, ``edges[j]`` joining ``ops[j]`` to
    ``ops[j+1]``; default: the longest, the heaviest-in-weights and a blended path.
    LATENCY only (0 otherwise).

    Examples
    --------
    A chain of three 5-byte ops, 1 cycle on device 0 or 10 on device 1, both devices hold 10
    bytes, transfers cost 2 cycles: device 0 cannot hold all three, so the best is two there
    and the third on device 1 after a transfer, ``1 + 1 + 2 + 10 = 14`` (critical path: 3).

    >>> p = SchedulingProblem(((1, 10),) * 3, ((0, 1, 8), (1, 2, 8)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,), (2,)), device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    >>> memory_path_bound(p)
    14
    """
    if problem.objective is not Objective.LATENCY or problem.num_ops == 0 or not _exact_enough(problem):
        return 0
    pools = DevicePools(problem)
    return _memory_paths(problem, pools, pool_finish(problem, pools), pool_tail(problem, pools),
                         paths if paths is not None else _candidate_paths(problem))


def _memory_paths(problem: SchedulingProblem, pools: DevicePools, fin: np.ndarray, tail: np.ndarray,
                  paths: Sequence[tuple[Sequence[int], Sequence[int]]]) -> int:
    dur = pools.durations
    best = 0.0
    for ops, edges in paths:
        if len(ops) < 2:
            continue
        move = pools.costs(list(edges), moves=True)

        def steps(j: int) -> tuple[np.ndarray, np.ndarray]:
            return dur[ops[j + 1]], move[j] + dur[ops[j + 1]][None, :]

        value = chain_bound(fin[ops[0]], steps, tail[ops[-1]], held_weights(problem, ops), pools.capacity)
        if math.isfinite(value):
            best = max(best, value)
    return int(best)
