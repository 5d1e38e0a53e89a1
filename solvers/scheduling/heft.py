"""HEFT list scheduling for :class:`SchedulingProblem` (the heuristic baseline and the hint).

Notes
-----
Heterogeneous Earliest Finish Time [1]_, extended to this problem type:

1. **Priority**: upward rank ``rank(i) = w_i + max_(i,j) (c_e + rank(j))`` with ``w_i`` the
   mean duration over i's allowed devices and ``c_e`` the mean transfer cost of edge e over
   the device pairs (a != b, linked) its ops may use. Ops are taken from the ready set
   (all predecessors placed) by decreasing rank, ties by topological position, so the order
   always respects precedence even with zero-cost ops.
2. **Device choice**: for each candidate device d, each incoming edge from another device
   gets a transfer inserted into the earliest gap of ``link_of[a][d]`` after its producer
   ends (tentatively, in edge order, so transfers of one op on one link do not overlap);
   the op is then inserted into the earliest gap of any of d's streams after its data is
   ready. LATENCY picks the earliest finish time, ties by device index. THROUGHPUT picks the
   smallest resulting max load (devices and links, as the objective counts them), then the
   earliest finish time, then the device index: the schedule stays valid and the placement
   balances load, which is what the throughput objective measures.
3. **Candidates**: devices where the op may run; for a colocation group the first op
   placed fixes the group's device and may choose only devices every member allows; a
   device d is skipped when some placed predecessor sits on a device a with
   ``link_of[a][d] == -1``, or when the placement would break the memory rule (4).
4. **Memory** (exact rule, checked as the schedule grows): each device with a limit keeps
   its resident bytes (weights and graph inputs, one several ops read once per device:
   :class:`~solvers.scheduling.resident.ResidentLedger`; a colocation group reserves all its
   members' weights when its first op is placed, and room for the buffers its unplaced members may open: each
   one's output plus all its incoming edges' bytes, released as each is placed, so a
   member forced onto the group's device always fits) and a profile of its activation
   buffers over time. Placing op i on d at ``[s, f)`` opens i's output buffer at s and
   each received copy at its transfer's start; a copy closes at f. The output buffer stays
   open (live up to infinity) until every consumer of i is placed; then it closes at the
   end of its last same-device consumer or outgoing transfer, exactly as the rule says.
   A device is admissible for i only when ``resident + reserved + peak(profile with i's
   new buffers) <= memory``. Placing i adds bytes only to d (the outputs it reads are
   already open on their devices) and closing a buffer only shrinks a profile, so every
   device stays within its limit after each placement, and the final profile is the
   exact one: the schedule passes :func:`~solvers.scheduling.validate.validate_schedule`.
   Open buffers count as live to the end of time, so the check can still reject a
   placement that a later schedule of the consumers would have made fit (sound, not
   complete).

No candidate left for some op makes :func:`heft_schedule` return None;
:class:`HeftScheduler` then tries the memory-aware first-fit placement of
:mod:`solvers.scheduling.fallback` (sequenced by the same list scheduler) and reports
``UNKNOWN`` only when that fails too (HEFT proves nothing). Every choice is a
deterministic function of the problem.

References
----------
.. [1] H. Topcuoglu, S. Hariri, M.-Y. Wu, "Performance-effective and low-complexity task
   scheduling for heterogeneous computing", IEEE TPDS 13(3):260-274, 2002.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import time

import numpy as np

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.scheduling.bounds import topological_order
from solvers.scheduling.fallback import first_fit_placement
from solvers.scheduling.problem import (Objective, ScheduledTransfer, SchedulingProblem,
                                        SchedulingSolution, merged_colocation_groups)
from solvers.scheduling.resident import ResidentLedger
from solvers.scheduling.validate import objective_value

__all__ = ["HeftScheduler", "heft_schedule", "heft_schedule_within", "upward_ranks", "PlacedRanks",
           "fallback_schedule"]

_log = logging.getLogger(__name__)


def _earliest_gap(busy: list[tuple[int, int]], ready: int, length: int) -> int:
    """Earliest ``t >= ready`` with ``[t, t + length)`` free in the sorted, disjoint ``busy``."""
    if length == 0:
        return ready
    t = ready
    k = bisect.bisect_right(busy, (ready, 1 << 62)) - 1
    if k < 0:
        k = 0
    for s, e in busy[k:]:
        if e <= t:
            continue
        if s >= t + length:
            break
        t = max(t, e)
    return t


def _insert(busy: list[tuple[int, int]], start: int, length: int) -> None:
    if length > 0:
        bisect.insort(busy, (start, start + length))


_OPEN = 1 << 62  # the end of an activation buffer whose consumers are not all placed


class _Profile:
    """Live activation bytes on one device over time, piecewise constant.

    ``use[k]`` holds on ``[times[k], times[k + 1])``; the last entry holds to infinity. ``use``
    is a numpy array because :meth:`add` needs the peak after every change: ``max`` of a
    Python list made HEFT quadratic (9 of 26 CPU seconds at 30,000 ops, most of 100,000).
    """

    __slots__ = ("times", "use", "peak")

    def __init__(self) -> None:
        self.times = [0]
        self.use = np.zeros(1, dtype=np.int64)
        self.peak = 0

    def _split(self, t: int) -> int:
        k = bisect.bisect_left(self.times, t)
        if k == len(self.times) or self.times[k] != t:
            self.times.insert(k, t)
            self.use = np.insert(self.use, k, self.use[k - 1])
        return k

    def add(self, start: int, end: int, nbytes: int) -> None:
        """Add ``nbytes`` over ``[start, end)`` (``end = _OPEN``: to infinity)."""
        if nbytes == 0 or end <= start:
            return
        a = self._split(start)
        b = len(self.times) if end >= _OPEN else self._split(end)
        self.use[a:b] += nbytes
        self.peak = int(self.use.max())

    def peak_with(self, extra: list[tuple[int, int, int]]) -> int:
        """The peak once the buffers ``extra`` (start, end, bytes) are added, exactly."""
        extra = [x for x in extra if x[2] > 0 and x[1] > x[0]]
        if not extra:
            return self.peak
        times, use = self.times, self.use
        lo = min(s for s, _, _ in extra)
        points = set(times[max(0, bisect.bisect_right(times, lo) - 1):])
        points.update(s for s, _, _ in extra)
        best = self.peak
        for p in points:
            if p < lo:
                continue
            live = int(use[bisect.bisect_right(times, p) - 1])
            live += sum(b for s, e, b in extra if s <= p < e)
            if live > best:
                best = live
        return best


def upward_ranks(problem: SchedulingProblem) -> tuple[float, ...]:
    """HEFT's upward rank of every op (mean durations and mean transfer costs).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> upward_ranks(p)  # rank(1) = 3, rank(0) = 4 + 5 + 3
    (12.0, 3.0)
    """
    n = problem.num_ops
    allowed = [problem.allowed_devices(i) for i in range(n)]
    w = []
    for i in range(n):
        ds = allowed[i]
        w.append(sum(problem.durations_cycles[i][d] for d in ds) / len(ds))
    out_edges: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for e, (u, v, _) in enumerate(problem.edges):
        costs = [problem.transfer_cycles[e][problem.link_of[a][b]]
                 for a in allowed[u] for b in allowed[v]
                 if a != b and problem.link_of[a][b] >= 0]
        out_edges[u].append((v, sum(costs) / len(costs) if costs else 0.0))
    rank = [0.0] * n
    for i in reversed(topological_order(problem)):
        rank[i] = w[i] + max((c + rank[j] for j, c in out_edges[i]), default=0.0)
    return tuple(rank)


class PlacedRanks:
    """Upward ranks of one fixed placement: ``rank(i) = w_i + max_(i,j) (c_e + rank(j))`` with
    ``w_i`` i's duration on its device and ``c_e`` the edge's transfer on the link between
    the two devices (0 on one device): the length of the longest chain from i to the end
    with that placement, transfers without contention. Used as :func:`heft_schedule`'s
    ``ranks`` when a caller sequences many placements of one problem (the placement LNS):
    HEFT's own ranks average over every device an op may take, so a CPU op that runs 10x
    longer than on an accelerator, or a cut edge, weighs the same as any other.

    Examples
    --------
    a -> b across two devices with a 5-cycle transfer, c alone:

    >>> p = SchedulingProblem(((2, 9), (9, 3), (9, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> PlacedRanks(p)((0, 1, 1))
    (10, 3, 1)
    """

    def __init__(self, problem: SchedulingProblem) -> None:
        self.problem = problem
        self.reverse_topo = topological_order(problem)[::-1]
        self.out_edges: list[list[int]] = [[] for _ in range(problem.num_ops)]
        for e, (u, _v, _) in enumerate(problem.edges):
            self.out_edges[u].append(e)

    def __call__(self, placement: tuple[int, ...]) -> tuple[int, ...]:
        problem = self.problem
        edges, dur, link_of, cost = problem.edges, problem.durations_cycles, problem.link_of, problem.transfer_cycles
        rank = [0] * problem.num_ops
        for i in self.reverse_topo:
            a, tail = placement[i], 0
            for e in self.out_edges[i]:
                j = edges[e][1]
                b = placement[j]
                r = rank[j] if a == b else rank[j] + cost[e][link_of[a][b]]
                if r > tail:
                    tail = r
            rank[i] = dur[i][a] + tail
        return tuple(rank)


def heft_schedule(problem: SchedulingProblem, placement: tuple[int, ...] | None = None,
                  ranks: tuple[float, ...] | None = None) -> SchedulingSolution | None:
    """Run HEFT (see the module Notes); None when some op has no admissible device.

    With ``placement`` every op's device is given and HEFT only sequences (same rules).
    ``ranks`` are the problem's :func:`upward_ranks` when the caller already has them (a
    caller sequencing many placements of one problem computes them once).

    Examples
    --------
    Two independent 4-cycle ops on two devices run side by side:

    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> s = heft_schedule(p)
    >>> s.op_device, s.op_start, s.makespan_cycles
    ((0, 1), (0, 0), 4)
    """
    return heft_schedule_within(problem, placement, upward_ranks(problem) if ranks is None else ranks)[0]


def heft_schedule_within(problem: SchedulingProblem, placement: tuple[int, ...] | None, ranks: tuple[float, ...],
                         cutoff: int | None = None) -> tuple[SchedulingSolution | None, int]:
    """:func:`heft_schedule` that gives up once the schedule cannot end by ``cutoff``:
    (the schedule, or None when stuck or given up; how many ops it placed).

    With ``placement`` fixed and ``ranks`` its :class:`PlacedRanks`, an op placed at ``start``
    has a chain of ``rank`` cycles (its duration, its successors', the transfers between
    them) after that start, so the makespan is at least ``start + rank``: once that exceeds
    ``cutoff`` no schedule of this placement from here ends by it. (Other ranks give no such
    bound: only pass ``cutoff`` with a placement's own ranks.)

    Examples
    --------
    a -> b across two devices (2 + 5 + 3 = 10 cycles), with the placement's own ranks:

    >>> p = SchedulingProblem(((2, 9), (9, 3)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> ranks = PlacedRanks(p)((0, 1))
    >>> s, placed = heft_schedule_within(p, (0, 1), ranks, cutoff=10)
    >>> s.makespan_cycles, placed
    (10, 2)
    >>> heft_schedule_within(p, (0, 1), ranks, cutoff=9)  # a's start + its rank 10 > 9: stop at a
    (None, 1)
    """
    topo = topological_order(problem)
    pos = {op: k for k, op in enumerate(topo)}
    state = _PartialSchedule(problem, placement)
    indeg = [0] * problem.num_ops
    for _u, v, _ in problem.edges:
        indeg[v] += 1
    ready = [(-ranks[i], pos[i], i) for i in range(problem.num_ops) if indeg[i] == 0]
    heapq.heapify(ready)
    placed = 0
    while ready:
        _, _, i = heapq.heappop(ready)
        if not state.place(i):
            return None, placed + 1
        placed += 1
        if cutoff is not None and state.start[i] + ranks[i] > cutoff:
            return None, placed
        for j in state.succs[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (-ranks[j], pos[j], j))
    return state.solution(), placed


class _PartialSchedule:
    """HEFT's schedule while it grows: the placed ops, their transfers, the busy intervals of
    every stream and link, the loads, and the memory of the devices with a limit."""

    def __init__(self, problem: SchedulingProblem, placement: tuple[int, ...] | None) -> None:
        n, nd, nl = problem.num_ops, problem.num_devices, problem.num_links
        self.problem, self.placement = problem, placement
        self.throughput = problem.objective is Objective.THROUGHPUT
        self.in_edges: list[list[int]] = [[] for _ in range(n)]
        self.out_edges: list[list[int]] = [[] for _ in range(n)]
        self.succs: list[list[int]] = [[] for _ in range(n)]
        for e, (u, v, _) in enumerate(problem.edges):
            self.in_edges[v].append(e)
            self.out_edges[u].append(e)
            self.succs[u].append(v)
        self.allowed = [problem.allowed_devices(i) for i in range(n)]
        self.groups = merged_colocation_groups(problem)
        self.group_of = {i: g for g, members in enumerate(self.groups) for i in members}
        self.group_device: dict[int, int] = {}
        self.dev, self.stream, self.start, self.dur = [-1] * n, [0] * n, [0] * n, [0] * n
        self.transfers: list[ScheduledTransfer] = []
        self.lanes = [[[] for _ in range(problem.device_streams[d])] for d in range(nd)]
        self.links: list[list[tuple[int, int]]] = [[] for _ in range(nl)]
        self.dev_load, self.link_load = [0] * nd, [0] * nl
        # memory (devices with a limit): resident bytes and the activation profile
        self.caps = [problem.memory_bytes(d) for d in range(nd)]
        self.resident = ResidentLedger(problem)  # a shared weight or input once per device
        self.profiles = [_Profile() for _ in range(nd)]
        self.pending = [len(self.out_edges[i]) for i in range(n)]  # consumers not yet placed
        # A placed group reserves, on its device, room for the buffers its unplaced members
        # may open (output plus every incoming edge's copy), so they always fit later.
        self.share = [problem.output_bytes(i) for i in range(n)]
        for _u, v, b in problem.edges:
            self.share[v] += b
        self.reserve = [0] * nd
        self.buf_end = [0] * n

    def place(self, i: int) -> bool:
        """Put op ``i`` where it finishes first (throughput: least max load); False if nowhere."""
        cands, new_ops, new_reserve = self._candidates(i)
        best = None
        for d in cands:
            option = self._option(i, d, new_ops, new_reserve)
            if option is not None and (best is None or option[0] < best[0]):
                best = option
        if best is None:
            return False
        self._commit(i, best, new_ops, new_reserve)
        return True

    def _candidates(self, i: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """The devices ``i`` may take (its group's, once placed), the ops whose resident bytes
        placing it adds there (a group's first op brings every member's) and the reserved bytes."""
        problem, share = self.problem, self.share
        g = self.group_of.get(i)
        if g is not None and g in self.group_device:
            cands = (self.group_device[g],)
            new_ops = ()  # reserved when the group's first op was placed
            new_reserve = -share[i]  # i's reserved room becomes its real buffers
        elif g is not None:
            members = self.groups[g]
            cands = tuple(d for d in self.allowed[i]
                          if all(problem.durations_cycles[j][d] >= 0 for j in members))
            new_ops = tuple(members)
            new_reserve = sum(share[j] for j in members if j != i)
        else:
            cands = self.allowed[i]
            new_ops, new_reserve = (i,), 0
        if self.placement is not None:
            cands = tuple(d for d in cands if d == self.placement[i])
        return cands, new_ops, new_reserve

    def _option(self, i: int, d: int, new_ops: tuple[int, ...], new_reserve: int):
        """``(key, d, stream, start, length, moves)`` of ``i`` on device ``d``, or None when
        ``d`` cannot run it, cannot receive its inputs, or has no room for its buffers."""
        problem = self.problem
        if problem.durations_cycles[i][d] < 0:
            return None
        if any(self.dev[problem.edges[e][0]] != d and problem.link_of[self.dev[problem.edges[e][0]]][d] < 0
               for e in self.in_edges[i]):
            return None
        cap = self.caps[d]
        base = (self.resident.held[d] + self.resident.added(new_ops, d) + self.reserve[d] + new_reserve
                if cap > 0 else 0)
        if cap > 0 and base + self.profiles[d].peak > cap:
            return None
        moves, data_ready = self._tentative_transfers(i, d)
        length = problem.durations_cycles[i][d]
        s_best, t_best = 0, None
        for s, lane in enumerate(self.lanes[d]):
            t = _earliest_gap(lane, data_ready, length)
            if t_best is None or t < t_best:
                s_best, t_best = s, t
        finish = t_best + length
        if cap > 0:
            # i's output (open until its consumers are placed) and its received copies
            extra = [(t_best, _OPEN if self.out_edges[i] else finish, problem.output_bytes(i))]
            extra += [(ts, finish, problem.edges[e][2]) for e, _, ts, _ in moves]
            if (base + self.profiles[d].peak + sum(x[2] for x in extra) > cap
                    and base + self.profiles[d].peak_with(extra) > cap):
                return None
        if self.throughput:
            dl = list(self.dev_load)
            dl[d] += length
            ll = list(self.link_load)
            for _, link, _, c in moves:
                ll[link] += c
            key = (max(dl + ll), finish, d)
        else:
            key = (finish, d)
        return key, d, s_best, t_best, length, moves

    def _tentative_transfers(self, i: int, d: int) -> tuple[list[tuple[int, int, int, int]], int]:
        """The transfers ``(edge, link, start, cycles)`` bringing ``i``'s inputs to ``d``, in edge
        order, each in its link's earliest gap, and when all of ``i``'s data is there."""
        problem = self.problem
        tent: dict[int, list[tuple[int, int]]] = {}
        moves = []
        data_ready = 0
        for e in self.in_edges[i]:
            u = problem.edges[e][0]
            end_u = self.start[u] + self.dur[u]
            if self.dev[u] == d:
                data_ready = max(data_ready, end_u)
                continue
            link = problem.link_of[self.dev[u]][d]
            c = problem.transfer_cycles[e][link]
            busy = tent.setdefault(link, list(self.links[link]))
            t = _earliest_gap(busy, end_u, c)
            _insert(busy, t, c)
            moves.append((e, link, t, c))
            data_ready = max(data_ready, t + c)
        return moves, data_ready

    def _commit(self, i: int, best, new_ops: tuple[int, ...], new_reserve: int) -> None:
        """Place ``i`` as ``best`` says: its stream and links busy, its loads and memory counted."""
        problem = self.problem
        _, d, s, t, length, moves = best
        self.dev[i], self.stream[i], self.start[i], self.dur[i] = d, s, t, length
        _insert(self.lanes[d][s], t, length)
        self.dev_load[d] += length
        finish = t + length
        for e, link, ts, c in moves:
            _insert(self.links[link], ts, c)
            self.link_load[link] += c
            self.transfers.append(ScheduledTransfer(e, link, ts, c))
        g = self.group_of.get(i)
        if g is not None and g not in self.group_device:
            self.group_device[g] = d
        if self.caps[d] > 0:
            self.resident.add(new_ops, d)
            self.reserve[d] += new_reserve
            self.profiles[d].add(t, _OPEN if self.out_edges[i] else finish, problem.output_bytes(i))
            for e, _, ts, _ in moves:
                self.profiles[d].add(ts, finish, problem.edges[e][2])
        self._release_inputs(i, finish, moves)

    def _release_inputs(self, i: int, finish: int, moves) -> None:
        """``i``'s producers' buffers live until ``i`` ends (same device) or its transfer ends;
        a producer whose consumers are all placed closes its open buffer."""
        problem = self.problem
        self.buf_end[i] = finish
        moved = {e: ts + c for e, _, ts, c in moves}
        for e in self.in_edges[i]:
            u = problem.edges[e][0]
            self.buf_end[u] = max(self.buf_end[u], moved.get(e, finish))
            self.pending[u] -= 1
            if self.pending[u] == 0 and self.caps[self.dev[u]] > 0:
                self.profiles[self.dev[u]].add(self.buf_end[u], _OPEN, -problem.output_bytes(u))

    def solution(self) -> SchedulingSolution:
        """The schedule of every placed op, transfers in edge order."""
        transfers = sorted(self.transfers, key=lambda tr: tr.edge)
        return SchedulingSolution(tuple(self.dev), tuple(self.stream), tuple(self.start), tuple(self.dur),
                                  tuple(transfers))


def fallback_schedule(problem: SchedulingProblem) -> SchedulingSolution | None:
    """First fit by weights, then conservatively, each sequenced by the list scheduler.

    Examples
    --------
    Two 6-byte weights and 10 bytes per device: the ops must split, 3 + 2 + 3 = 8.

    >>> p = SchedulingProblem(((3, 3), (3, 3)), ((0, 1, 0),), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((2,),), device_memory_bytes=(10, 10), op_resident_bytes=(6, 6))
    >>> s = fallback_schedule(p)
    >>> s.op_device, s.makespan_cycles
    ((0, 1), 8)
    """
    for conservative in (False, True):
        placement = first_fit_placement(problem, conservative=conservative)
        if placement is not None:
            sol = heft_schedule(problem, placement)
            if sol is not None:
                return sol
    return None


class HeftScheduler(Accepting):
    """HEFT as a :class:`~solvers.core.Solver`: FEASIBLE with ``bound=None``, or UNKNOWN.

    When HEFT leaves an op without a device, the first-fit placement of
    :mod:`solvers.scheduling.fallback` is tried (``stats["fallback"]`` says so).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> r = HeftScheduler().solve(p)
    >>> r.status.value, r.objective, r.bound
    ('FEASIBLE', 7, None)
    """

    name = "heft"
    problem_type = SchedulingProblem

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        sol = heft_schedule(problem)
        stats = {}
        if sol is None:
            _log.info("HEFT left some op without an admissible device; trying first fit")
            sol = fallback_schedule(problem)
            stats["fallback"] = "first-fit"
        wall = time.perf_counter() - t0
        if sol is None:
            return failure_result(Status.UNKNOWN, self.name, wall,
                                  reason="some op has no admissible device")
        return SolveResult(Status.FEASIBLE, objective_value(problem, sol), None, sol, wall,
                           self.name, stats)
