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
  lower bound ``step_j(a, b)`` on ``end(c_(j+1)) - end(c_j)`` when they are on a and b, and
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

All values are exact integers carried in float64 (exact below 2**53 cycles); the functions
give 0 when the serial horizon reaches 2**52, which no real plan does.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable, Sequence

import numpy as np

from solvers.scheduling.structure import min_durations, topological_order
from solvers.scheduling.forced import colocation_closure, held_weights
from solvers.scheduling.problem import Objective, SchedulingProblem

__all__ = [
    "transfer_costs",
    "earliest_finish",
    "finish_from_source",
    "tail_times",
    "placement_path_bound",
    "chain_bound",
    "memory_path_bound",
    "longest_path",
]

_EXACT = float(1 << 52)


def _durations(problem: SchedulingProblem) -> np.ndarray:
    d = np.asarray(problem.durations_cycles, dtype=np.float64).reshape(problem.num_ops, problem.num_devices)
    d[d < 0] = np.inf
    return d


def _exact_enough(problem: SchedulingProblem) -> bool:
    serial = (sum(max(r) for r in problem.durations_cycles)
              + sum(max(r, default=0) for r in problem.transfer_cycles))
    return serial < _EXACT


def transfer_costs(problem: SchedulingProblem, edges: Sequence[int] | np.ndarray,
                   rows: np.ndarray | None = None) -> np.ndarray:
    """``tc[k, a, b]``: the cycles edge ``edges[k]`` costs from device a to device b.

    0 on the diagonal, ``inf`` where ``link_of`` is -1. ``rows`` may pass
    ``transfer_cycles`` as an array already (it is converted otherwise).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 2, ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> transfer_costs(p, [0]).tolist()
    [[[0.0, 5.0], [5.0, 0.0]]]
    """
    nd = problem.num_devices
    edges = np.asarray(edges, dtype=np.int64)
    link = np.asarray(problem.link_of, dtype=np.int64).reshape(nd, nd)
    if problem.num_links == 0 or len(edges) == 0:
        tc = np.full((len(edges), nd, nd), np.inf)
    else:
        if rows is None:
            rows = _transfer_rows(problem)
        tc = rows[edges][:, np.maximum(link, 0)]
        tc[:, link < 0] = np.inf
    idx = np.arange(nd)
    tc[:, idx, idx] = 0.0
    return tc


def _transfer_rows(problem: SchedulingProblem) -> np.ndarray:
    return np.asarray(problem.transfer_cycles, dtype=np.float64).reshape(len(problem.edges), problem.num_links)


def _levels(problem: SchedulingProblem, order: Sequence[int]) -> list[np.ndarray]:
    depth = [0] * problem.num_ops
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        preds[v].append(u)
    for i in order:
        depth[i] = 1 + max((depth[u] for u in preds[i]), default=-1)
    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(depth[i], []).append(i)
    return [np.asarray(groups[k], dtype=np.int64) for k in sorted(groups)]


def _forward(problem: SchedulingProblem, dur: np.ndarray, ready: np.ndarray) -> np.ndarray:
    """Earliest finish for a batch: ``dur`` and ``ready`` are ``(batch, num_ops, num_devices)``."""
    n = problem.num_ops
    fin = np.full(dur.shape, np.inf)
    out_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (u, _, _) in enumerate(problem.edges):
        out_edges[u].append(e)
    src = np.asarray([u for u, _, _ in problem.edges], dtype=np.int64)
    dst = np.asarray([v for _, v, _ in problem.edges], dtype=np.int64)
    rows = _transfer_rows(problem)
    for level in _levels(problem, topological_order(problem)):
        fin[:, level] = ready[:, level] + dur[:, level]
        es = [e for i in level.tolist() for e in out_edges[i]]
        if not es:
            continue
        es_a = np.asarray(es, dtype=np.int64)
        reach = (fin[:, src[es_a]][:, :, :, None] + transfer_costs(problem, es_a, rows)[None]).min(axis=2)
        np.maximum.at(ready, (slice(None), dst[es_a]), reach)
    return fin


def earliest_finish(problem: SchedulingProblem, start: np.ndarray | None = None) -> np.ndarray:
    """``F[i, d]``: a lower bound on op i's end in any schedule that puts i on d (module Notes).

    ``start`` (optional, ``(num_ops, num_devices)``) gives per op and device a time before
    which the op cannot start; default 0.

    Examples
    --------
    Op 0 runs only on device 0 (4 cycles), op 1 takes 1 cycle on device 1 or 6 on device 0,
    and the transfer costs 2: op 1 ends at 4 + 2 + 1 = 7 on device 1, 10 on device 0.

    >>> p = SchedulingProblem(((4, -1), (6, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> earliest_finish(p).tolist()
    [[4.0, inf], [10.0, 7.0]]
    """
    n, nd = problem.num_ops, problem.num_devices
    ready = np.zeros((1, n, nd)) if start is None else np.array(start, dtype=np.float64)[None]
    return _forward(problem, _durations(problem)[None], ready)[0]


def finish_from_source(problem: SchedulingProblem, source: int) -> np.ndarray:
    """``F[a, i, d]``: :func:`earliest_finish` when op ``source`` takes no time and sits on a.

    For a segment whose first op is the cut op that opens it (time 0 = that op's end).

    Examples
    --------
    >>> p = SchedulingProblem(((0, 0), (3, 3)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> finish_from_source(p, 0)[:, 1].tolist()  # op 1 beside the source, or after a transfer
    [[3.0, 5.0], [5.0, 3.0]]
    """
    n, nd = problem.num_ops, problem.num_devices
    dur = np.repeat(_durations(problem)[None], nd, axis=0)
    allowed = np.isfinite(dur[0, source])
    dur[:, source] = np.inf
    for a in range(nd):
        if allowed[a]:
            dur[a, source, a] = 0.0
    return _forward(problem, dur, np.zeros((nd, n, nd)))


def tail_times(problem: SchedulingProblem) -> np.ndarray:
    """``Q[i, d]``: a lower bound on ``makespan - end_i`` when op i is on d (module Notes).

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (6, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((2,),))
    >>> tail_times(p).tolist()  # after op 0 on device 0: min(6, 2 + 1)
    [[3.0, 0.0], [0.0, 0.0]]
    """
    n, nd = problem.num_ops, problem.num_devices
    dur = _durations(problem)
    tail = np.zeros((n, nd))
    in_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (_, v, _) in enumerate(problem.edges):
        in_edges[v].append(e)
    src = np.asarray([u for u, _, _ in problem.edges], dtype=np.int64)
    dst = np.asarray([v for _, v, _ in problem.edges], dtype=np.int64)
    rows = _transfer_rows(problem)
    rev = tuple(reversed(topological_order(problem)))
    depth = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in problem.edges:
        succ[u].append(v)
    for i in rev:
        depth[i] = 1 + max((depth[w] for w in succ[i]), default=-1)
    groups: dict[int, list[int]] = {}
    for i in rev:
        groups.setdefault(depth[i], []).append(i)
    for k in sorted(groups):
        es = [e for w in groups[k] for e in in_edges[w]]
        if not es:
            continue
        es_a = np.asarray(es, dtype=np.int64)
        after = (dur[dst[es_a]] + tail[dst[es_a]])[:, None, :] + transfer_costs(problem, es_a, rows)
        np.maximum.at(tail, src[es_a], after.min(axis=2))
    tail[~np.isfinite(dur)] = 0.0  # a forbidden placement needs no tail
    return tail


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
    if problem.objective is not Objective.LATENCY or problem.num_ops == 0 or not _exact_enough(problem):
        return 0
    through = earliest_finish(problem) + tail_times(problem)
    return _as_int(float(through.min(axis=1).max()))


def chain_bound(first: np.ndarray, steps: Callable[[int], np.ndarray], last: np.ndarray,
                resident: Sequence[int], capacity: Sequence[int]) -> float:
    """The memory-aware chain minimum of the module Notes.

    Parameters
    ----------
    first : array (num_devices,)
        Lower bound on the first chain op's end on each device (``inf`` = not allowed).
    steps : callable
        ``steps(j)`` is the ``(num_devices, num_devices)`` array ``step_j(a, b)`` between chain
        ops j and j+1 (``inf`` where that pair of devices is impossible).
    last : array (num_devices,)
        Lower bound on ``makespan - end`` of the last chain op on each device.
    resident : sequence of int
        Weights of each chain op.
    capacity : sequence of int
        Memory per device, 0 = unlimited.

    Returns
    -------
    float
        The minimum over admissible device sequences (``inf`` when there is none).

    Examples
    --------
    Three ops of 5 bytes, each 1 cycle on device 0 or 10 on device 1 (both hold 10 bytes),
    transfers 2 cycles. Device 0 cannot hold all three: two there, the third on device 1
    after a transfer, ``1 + 1 + (2 + 10) = 14``.

    >>> step = np.array([[0 + 1, 2 + 10], [2 + 1, 0 + 10]], dtype=float)
    >>> chain_bound(np.array([1.0, 10.0]), lambda j: step, np.zeros(2), [5, 5, 5], [10, 10])
    14.0
    """
    nd = len(first)
    cap = [c if c > 0 else math.inf for c in capacity]
    value = np.array(first, dtype=np.float64)  # V_j(b): chain ops 0..j done, op j ends on b
    queues: list[deque] = [deque() for _ in range(nd)]  # (run start t, In_t(b) - P_b(t))
    reset = [True] * nd  # the next op starts a fresh window on b
    prefix = [0.0] * nd  # P_b(j): sum of step_i(b, b) since the window base
    low = [0] * nd  # earliest run start the memory window allows
    held = [0] * nd  # weights in the window
    for j in range(len(resident)):
        if j == 0:
            enter, diag = value, np.zeros(nd)
        else:
            step = steps(j - 1)
            diag = np.diagonal(step).copy()
            off = step.copy()
            np.fill_diagonal(off, np.inf)
            enter = (value[:, None] + off).min(axis=0)
        value = np.full(nd, np.inf)
        for b in range(nd):
            q = queues[b]
            if resident[j] > cap[b] or not (math.isfinite(diag[b]) or math.isfinite(enter[b])):
                q.clear()  # no run on b contains op j
                reset[b] = True
                continue
            if reset[b] or not math.isfinite(diag[b]):  # a run on b can only start at op j
                q.clear()
                reset[b], prefix[b], low[b], held[b] = False, 0.0, j, 0
            else:
                prefix[b] += diag[b]
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
    res = [sum(problem.resident_bytes(j) for j in closure[i]) for i in range(problem.num_ops)]
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
    fin = earliest_finish(problem)
    tail = tail_times(problem)
    dur = _durations(problem)
    caps = [problem.memory_bytes(d) for d in range(problem.num_devices)]
    rows = _transfer_rows(problem)
    best = 0.0
    for ops, edges in (paths if paths is not None else _candidate_paths(problem)):
        tc = transfer_costs(problem, list(edges), rows)
        # several edges may join two consecutive path ops: the consumer waits for all of them
        value = chain_bound(fin[ops[0]], lambda j: tc[j] + dur[ops[j + 1]][None, :], tail[ops[-1]],
                            held_weights(problem, ops), caps)
        if math.isfinite(value):
            best = max(best, value)
    return int(best)
