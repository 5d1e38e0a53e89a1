"""A mutable working copy of a schedule, the indices large-neighbourhood search needs, and compaction.

Glossary
--------
task        an op ``i`` (id ``i``) or the transfer of edge ``e`` (id ``num_ops + e``).
resource    what a task occupies: a device stream (id ``stream_base[d] + s``) or a link
            (id ``num_stream_resources + link``). Zero-duration tasks occupy nothing.
compaction  :func:`compact`: every task as early as its inputs and its resource allow,
            keeping each resource's order (a left shift: never later, so never worse).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from solvers.core import SolveOptions
from solvers.dag import kahn_order
from solvers.scheduling.heft import HeftScheduler
from solvers.scheduling.problem import (ScheduledTransfer, SchedulingProblem, SchedulingSolution,
                                        merged_colocation_groups)
from solvers.scheduling.validate import validate_schedule

__all__ = ["GraphIndex", "ScheduleState", "compact", "warm_start"]


def warm_start(problem: SchedulingProblem, options: SolveOptions) -> SchedulingSolution | None:
    """The schedule a hierarchical solver starts from: ``options.hint`` when it is valid,
    else HEFT's (None when HEFT finds none).

    Examples
    --------
    >>> p = SchedulingProblem(((2,), (3,)), ((0, 1, 0),), (1,), ((-1,),), ((),))
    >>> warm_start(p, SolveOptions()).op_start
    (0, 2)
    """
    if options.hint is not None and not validate_schedule(problem, options.hint):
        return options.hint
    return HeftScheduler().solve(problem, options).solution


@dataclass(frozen=True)
class GraphIndex:
    """Adjacency, topological positions and resource numbering of one problem (built once).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 2), ((-1, 0), (0, -1)), ((5,),))
    >>> g = GraphIndex.of(p)
    >>> g.in_edges[1], g.stream_base, g.num_resources
    ((0,), (0, 1), 4)
    """

    problem: SchedulingProblem
    edge_u: np.ndarray
    edge_v: np.ndarray
    in_edges: tuple[tuple[int, ...], ...]
    out_edges: tuple[tuple[int, ...], ...]
    topo_pos: tuple[int, ...]
    allowed: tuple[tuple[int, ...], ...]
    stream_base: tuple[int, ...]
    num_stream_resources: int
    num_resources: int
    coloc_groups: tuple[tuple[int, ...], ...]
    coloc_of: dict
    memory_devices: tuple[int, ...]

    @classmethod
    def of(cls, problem: SchedulingProblem) -> "GraphIndex":
        n = problem.num_ops
        ins: list[list[int]] = [[] for _ in range(n)]
        outs: list[list[int]] = [[] for _ in range(n)]
        for e, (u, v, _b) in enumerate(problem.edges):
            outs[u].append(e)
            ins[v].append(e)
        order = kahn_order(n, problem.edges)
        pos = [0] * n
        for k, i in enumerate(order):
            pos[i] = k
        base, acc = [], 0
        for s in problem.device_streams:
            base.append(acc)
            acc += s
        groups = tuple(merged_colocation_groups(problem))
        coloc_of = {i: k for k, g in enumerate(groups) for i in g}
        eu = np.fromiter((u for u, _, _ in problem.edges), np.int64, len(problem.edges))
        ev = np.fromiter((v for _, v, _ in problem.edges), np.int64, len(problem.edges))
        return cls(problem, eu, ev, tuple(map(tuple, ins)), tuple(map(tuple, outs)), tuple(pos),
                   tuple(problem.allowed_devices(i) for i in range(n)), tuple(base), acc,
                   acc + problem.num_links, groups, coloc_of, _memory_devices(problem))

    def resource_of_op(self, device: int, stream: int) -> int:
        return self.stream_base[device] + stream

    def resource_of_link(self, link: int) -> int:
        return self.num_stream_resources + link


def _memory_devices(problem: SchedulingProblem) -> tuple[int, ...]:
    """Devices whose limit could be exceeded: all the bytes that could ever land there exceed it."""
    out = []
    for d in range(problem.num_devices):
        cap = problem.memory_bytes(d)
        if cap <= 0:
            continue
        total = 0
        for i in range(problem.num_ops):
            if problem.durations_cycles[i][d] >= 0:
                total += problem.resident_bytes(i) + problem.output_bytes(i)
        total += sum(b for (_u, v, b) in problem.edges if problem.durations_cycles[v][d] >= 0)
        if total > cap:
            out.append(d)
    return tuple(out)


class ScheduleState:
    """A schedule as numpy arrays that LNS rewrites in place, with per-resource indices.

    ``t_link[e]`` is the link of edge e's transfer, -1 when its ops share a device.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> s = SchedulingSolution((0, 1), (0, 0), (0, 9), (4, 3), (ScheduledTransfer(0, 0, 4, 5),))
    >>> st = ScheduleState(GraphIndex.of(p), s)
    >>> st.makespan(), st.to_solution() == s
    (12, True)
    """

    def __init__(self, graph: GraphIndex, solution: SchedulingSolution) -> None:
        p = graph.problem
        self.graph = graph
        self.dev = np.array(solution.op_device, dtype=np.int64)
        self.stream = np.array(solution.op_stream, dtype=np.int64)
        self.start = np.array(solution.op_start, dtype=np.int64)
        self.dur = np.array(solution.op_duration, dtype=np.int64)
        m = len(p.edges)
        self.t_link = np.full(m, -1, dtype=np.int64)
        self.t_start = np.zeros(m, dtype=np.int64)
        self.t_dur = np.zeros(m, dtype=np.int64)
        for t in solution.transfers:
            self.t_link[t.edge] = t.link
            self.t_start[t.edge] = t.start_cycle
            self.t_dur[t.edge] = t.duration_cycles
        self._index: list | None = None

    def end(self) -> np.ndarray:
        return self.start + self.dur

    def makespan(self) -> int:
        ends = self.start + self.dur
        best = int(ends.max()) if len(ends) else 0
        has = self.t_link >= 0
        if has.any():
            best = max(best, int((self.t_start + self.t_dur)[has].max()))
        return best

    def to_solution(self) -> SchedulingSolution:
        transfers = tuple(ScheduledTransfer(int(e), int(self.t_link[e]), int(self.t_start[e]),
                                            int(self.t_dur[e]))
                          for e in np.flatnonzero(self.t_link >= 0))
        return SchedulingSolution(tuple(self.dev.tolist()), tuple(self.stream.tolist()),
                                  tuple(self.start.tolist()), tuple(self.dur.tolist()), transfers)

    def invalidate(self) -> None:
        """Forget the per-resource index (call after any change to the arrays)."""
        self._index = None

    def resource_index(self) -> list[tuple[list[int], list[int], list[int]]]:
        """Per resource, its tasks of positive duration as sorted ``(starts, ends, task ids)``."""
        if self._index is None:
            self._index = self._build_index()
        return self._index

    def _build_index(self) -> list[tuple[list[int], list[int], list[int]]]:
        g = self.graph
        n = len(self.dev)
        base = np.array(g.stream_base, dtype=np.int64)
        res_op = base[self.dev] + self.stream
        op_ids = np.flatnonzero(self.dur > 0)
        tr_ids = np.flatnonzero((self.t_link >= 0) & (self.t_dur > 0))
        res = np.concatenate([res_op[op_ids], g.num_stream_resources + self.t_link[tr_ids]])
        starts = np.concatenate([self.start[op_ids], self.t_start[tr_ids]])
        ends = np.concatenate([self.start[op_ids] + self.dur[op_ids],
                               self.t_start[tr_ids] + self.t_dur[tr_ids]])
        ids = np.concatenate([op_ids, n + tr_ids])
        order = np.lexsort((starts, res))
        res, starts, ends, ids = res[order], starts[order], ends[order], ids[order]
        bounds = np.searchsorted(res, np.arange(g.num_resources + 1))
        out = []
        for r in range(g.num_resources):
            a, b = bounds[r], bounds[r + 1]
            out.append((starts[a:b].tolist(), ends[a:b].tolist(), ids[a:b].tolist()))
        return out

    def first_at_or_after(self, resource: int, t: int) -> int:
        """Position in the resource's index of its first task starting at or after ``t``."""
        return bisect.bisect_left(self.resource_index()[resource][0], t)


def compact(state: ScheduleState) -> int:
    """Left-shift every task in place, keeping each resource's order; return the counted steps.

    Tasks are taken by ``(start, end, rank)``, where an op's rank is twice its topological
    position and a transfer's is one more than its producer's: that order lists every task
    after its inputs (an input ends no later than its consumer starts, and ties between
    zero-length tasks fall to the rank) and keeps each resource's order (tasks of positive
    length on one resource never overlap). Each task then starts at the later of its inputs'
    ends and its resource's last end, which by induction is no later than before: the
    makespan never grows.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> s = SchedulingSolution((0, 1), (0, 0), (2, 20), (4, 3), (ScheduledTransfer(0, 0, 9, 5),))
    >>> st = ScheduleState(GraphIndex.of(p), s); _ = compact(st)
    >>> st.start.tolist(), st.t_start.tolist(), st.makespan()
    ([0, 9], [4], 12)
    """
    g = state.graph
    p = g.problem
    n = len(state.dev)
    dev, stream = state.dev.tolist(), state.stream.tolist()
    start, dur = state.start.tolist(), state.dur.tolist()
    t_link, t_start, t_dur = state.t_link.tolist(), state.t_start.tolist(), state.t_dur.tolist()
    pos = g.topo_pos
    keys = [(start[i], start[i] + dur[i], 2 * pos[i], i) for i in range(n)]
    eu = g.edge_u.tolist()
    keys += [(t_start[e], t_start[e] + t_dur[e], 2 * pos[eu[e]] + 1, n + e)
             for e in range(len(t_link)) if t_link[e] >= 0]
    keys.sort()
    free = [0] * g.num_resources
    op_end = [0] * n
    t_end = [0] * len(t_link)
    base, nsr = g.stream_base, g.num_stream_resources
    edges, in_edges = p.edges, g.in_edges
    for _s, _e, _r, task in keys:
        if task < n:
            ready = 0
            for e in in_edges[task]:
                r = t_end[e] if t_link[e] >= 0 else op_end[edges[e][0]]
                if r > ready:
                    ready = r
            d = dur[task]
            if d > 0:
                res = base[dev[task]] + stream[task]
                if free[res] > ready:
                    ready = free[res]
                free[res] = ready + d
            start[task] = ready
            op_end[task] = ready + d
        else:
            e = task - n
            ready = op_end[eu[e]]
            d = t_dur[e]
            if d > 0:
                res = nsr + t_link[e]
                if free[res] > ready:
                    ready = free[res]
                free[res] = ready + d
            t_start[e] = ready
            t_end[e] = ready + d
    state.start = np.array(start, dtype=np.int64)
    state.t_start = np.array(t_start, dtype=np.int64)
    state.invalidate()
    return len(keys)
