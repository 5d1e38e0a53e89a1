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
   its resident bytes (weights; a colocation group reserves all its members' weights when
   its first op is placed, and room for the buffers its unplaced members may open: each
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

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.scheduling.bounds import topological_order
from solvers.scheduling.fallback import first_fit_placement
from solvers.scheduling.problem import (Objective, ScheduledTransfer, SchedulingProblem,
                                        SchedulingSolution, merged_colocation_groups)
from solvers.scheduling.validate import objective_value

__all__ = ["HeftScheduler", "heft_schedule", "upward_ranks", "fallback_schedule"]

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

    ``use[k]`` holds on ``[times[k], times[k + 1])``; the last entry holds to infinity.
    """

    __slots__ = ("times", "use", "peak")

    def __init__(self) -> None:
        self.times = [0]
        self.use = [0]
        self.peak = 0

    def _split(self, t: int) -> int:
        k = bisect.bisect_left(self.times, t)
        if k == len(self.times) or self.times[k] != t:
            self.times.insert(k, t)
            self.use.insert(k, self.use[k - 1])
        return k

    def add(self, start: int, end: int, nbytes: int) -> None:
        """Add ``nbytes`` over ``[start, end)`` (``end = _OPEN``: to infinity)."""
        if nbytes == 0 or end <= start:
            return
        a = self._split(start)
        b = len(self.times) if end >= _OPEN else self._split(end)
        use = self.use
        for k in range(a, b):
            use[k] += nbytes
        self.peak = max(use)

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
            live = use[bisect.bisect_right(times, p) - 1]
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
    w = []
    for i in range(n):
        ds = problem.allowed_devices(i)
        w.append(sum(problem.durations_cycles[i][d] for d in ds) / len(ds))
    out_edges: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for e, (u, v, _) in enumerate(problem.edges):
        costs = [problem.transfer_cycles[e][problem.link_of[a][b]]
                 for a in problem.allowed_devices(u) for b in problem.allowed_devices(v)
                 if a != b and problem.link_of[a][b] >= 0]
        out_edges[u].append((v, sum(costs) / len(costs) if costs else 0.0))
    rank = [0.0] * n
    for i in reversed(topological_order(problem)):
        rank[i] = w[i] + max((c + rank[j] for j, c in out_edges[i]), default=0.0)
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
    n, nd, nl = problem.num_ops, problem.num_devices, problem.num_links
    throughput = problem.objective is Objective.THROUGHPUT
    topo = topological_order(problem)
    pos = {op: k for k, op in enumerate(topo)}
    rank = upward_ranks(problem) if ranks is None else ranks
    in_edges: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for e, (u, v, _) in enumerate(problem.edges):
        in_edges[v].append(e)
        succs[u].append(v)
        indeg[v] += 1
    groups = merged_colocation_groups(problem)
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    group_device: dict[int, int] = {}

    dev = [-1] * n
    stream = [0] * n
    start = [0] * n
    dur = [0] * n
    transfers: list[ScheduledTransfer] = []
    lanes = [[[] for _ in range(problem.device_streams[d])] for d in range(nd)]
    links: list[list[tuple[int, int]]] = [[] for _ in range(nl)]
    dev_load = [0] * nd
    link_load = [0] * nl
    # memory (devices with a limit): resident bytes and the activation profile
    caps = [problem.memory_bytes(d) for d in range(nd)]
    resident = [0] * nd
    profiles = [_Profile() for _ in range(nd)]
    out_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (u, _, _) in enumerate(problem.edges):
        out_edges[u].append(e)
    pending = [len(out_edges[i]) for i in range(n)]  # consumers not yet placed
    # A placed group reserves, on its device, room for the buffers its unplaced members
    # may open (output plus every incoming edge's copy), so they always fit later.
    share = [problem.output_bytes(i) for i in range(n)]
    for u, v, b in problem.edges:
        share[v] += b
    reserve = [0] * nd
    buf_end = [0] * n

    ready = [(-rank[i], pos[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    while ready:
        _, _, i = heapq.heappop(ready)
        g = group_of.get(i)
        if g is not None and g in group_device:
            cands = (group_device[g],)
            new_resident = 0  # reserved when the group's first op was placed
            new_reserve = -share[i]  # i's reserved room becomes its real buffers
        elif g is not None:
            members = groups[g]
            cands = tuple(d for d in problem.allowed_devices(i)
                          if all(problem.durations_cycles[j][d] >= 0 for j in members))
            new_resident = sum(problem.resident_bytes(j) for j in members)
            new_reserve = sum(share[j] for j in members if j != i)
        else:
            cands = problem.allowed_devices(i)
            new_resident, new_reserve = problem.resident_bytes(i), 0
        if placement is not None:
            cands = tuple(d for d in cands if d == placement[i])
        best = None
        for d in cands:
            if problem.durations_cycles[i][d] < 0:
                continue
            if any(dev[problem.edges[e][0]] != d and problem.link_of[dev[problem.edges[e][0]]][d] < 0
                   for e in in_edges[i]):
                continue
            cap = caps[d]
            base = resident[d] + new_resident + reserve[d] + new_reserve
            if cap > 0 and base + profiles[d].peak > cap:
                continue
            # tentative transfers, in edge order
            tent: dict[int, list[tuple[int, int]]] = {}
            moves = []
            data_ready = 0
            for e in in_edges[i]:
                u = problem.edges[e][0]
                end_u = start[u] + dur[u]
                if dev[u] == d:
                    data_ready = max(data_ready, end_u)
                    continue
                link = problem.link_of[dev[u]][d]
                c = problem.transfer_cycles[e][link]
                busy = tent.setdefault(link, list(links[link]))
                t = _earliest_gap(busy, end_u, c)
                _insert(busy, t, c)
                moves.append((e, link, t, c))
                data_ready = max(data_ready, t + c)
            length = problem.durations_cycles[i][d]
            s_best, t_best = 0, None
            for s, lane in enumerate(lanes[d]):
                t = _earliest_gap(lane, data_ready, length)
                if t_best is None or t < t_best:
                    s_best, t_best = s, t
            finish = t_best + length
            if cap > 0:
                # i's output (open until its consumers are placed) and its received copies
                extra = [(t_best, _OPEN if out_edges[i] else finish, problem.output_bytes(i))]
                extra += [(ts, finish, problem.edges[e][2]) for e, _, ts, _ in moves]
                if (base + profiles[d].peak + sum(x[2] for x in extra) > cap
                        and base + profiles[d].peak_with(extra) > cap):
                    continue
            if throughput:
                dl = list(dev_load)
                dl[d] += length
                ll = list(link_load)
                for _, link, _, c in moves:
                    ll[link] += c
                key = (max(dl + ll), finish, d)
            else:
                key = (finish, d)
            if best is None or key < best[0]:
                best = (key, d, s_best, t_best, length, moves)
        if best is None:
            return None
        _, d, s, t, length, moves = best
        dev[i], stream[i], start[i], dur[i] = d, s, t, length
        _insert(lanes[d][s], t, length)
        dev_load[d] += length
        finish = t + length
        for e, link, ts, c in moves:
            _insert(links[link], ts, c)
            link_load[link] += c
            transfers.append(ScheduledTransfer(e, link, ts, c))
        if g is not None and g not in group_device:
            group_device[g] = d
        if caps[d] > 0:
            resident[d] += new_resident
            reserve[d] += new_reserve
            profiles[d].add(t, _OPEN if out_edges[i] else finish, problem.output_bytes(i))
            for e, _, ts, _ in moves:
                profiles[d].add(ts, finish, problem.edges[e][2])
        # i's producers: their buffers live until i ends (same device) or its transfer ends
        buf_end[i] = finish
        moved = {e: ts + c for e, _, ts, c in moves}
        for e in in_edges[i]:
            u = problem.edges[e][0]
            buf_end[u] = max(buf_end[u], moved.get(e, finish))
            pending[u] -= 1
            if pending[u] == 0 and caps[dev[u]] > 0:
                profiles[dev[u]].add(buf_end[u], _OPEN, -problem.output_bytes(u))
        for j in succs[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (-rank[j], pos[j], j))
    transfers.sort(key=lambda tr: tr.edge)
    return SchedulingSolution(tuple(dev), tuple(stream), tuple(start), tuple(dur), tuple(transfers))


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
