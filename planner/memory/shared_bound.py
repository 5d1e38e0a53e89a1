"""The cross-device bound's main-memory term under ``bandwidth: shared``.

With ``memory.bandwidth: shared`` every device's main memory gives :data:`SHARE_UNITS` shares a
plan cycle (docs/memory.md, "Shared bandwidth"): the re-timing's gate
(:mod:`planner.memory.shared_bandwidth`) starts an op, DMA or link transfer end only when its
shares fit. :func:`planner.memory.cross_device.memory_plan_bound` relaxes that resource away;
this module adds it back as a one-machine relaxation per device: every plan moves some
main-memory bytes, and each such use holds its share-cycles inside a window every plan
respects.

Notes
-----
Per device, the *uses* (``(head, share-cycles, tail)``, plan cycles) every plan of the spine's
placement and orders has:

* each end of a link transfer on the device: the link's share (:func:`transfer_share`'s rule,
  also on a device without a memory plan) for the transfer's duration, inside the transfer's
  own window (the relaxed graph's head and tail);
* a device without a memory plan: each op's main-memory share times its duration (the
  schedule's), inside the op's window;
* a memory-planned device, whichever it uses:

  - everything in main memory: as a device without a memory plan;
  - a level plan (two levels): the level problem's forced slow traffic
    (:func:`~solvers.memory.levels.bandwidth.slow_traffic_lower_bound`), tensor by tensor: a
    preloaded or received tensor's first read (in place by its first reader, at least
    ``SHARE_UNITS * bytes / bw`` share-cycles, or by a prefetch, its DMA's shares times its
    cycles) lies after cycle 0 (a received copy: after its transfer's end) and before its first
    reader ends, that reader's tail after it; a live-out tensor's write (in place by its
    producer, or by an eviction after it) lies after the producer's head and before the end (a
    sent tensor: before its transfers start, their tails after);
  - an N-level plan (a device offered one): the same crossings of its main level, each at
    least the least of ``SHARE_UNITS * bytes / bw_main`` (an op reads or writes it there) and,
    per level joined to main by a DMA path, that hop's shares of main times its cycles (a copy
    elsewhere is fetched from or evicted to main along a route that starts or ends with such a
    hop); a tensor homed outside main memory (host) counts nothing, as it may be read there.
    Such a device may also be offered a two-level plan, so it takes the least of the three.

A use of ``u`` shares for ``D`` device cycles of a device at clock ``f_d`` lasts
``ceil(D * f / f_d)`` plan cycles (``f`` the plan clock), so it holds at least
``u * D * f / f_d`` share-cycles of the plan timeline. Share-cycles inside a window can be
spread at will in a relaxation, so the device's uses are jobs of a preemptive one-machine
problem whose machine does :data:`SHARE_UNITS` share-cycles a cycle: Jackson's preemptive
schedule (:func:`~solvers.memory.levels.heads_tails.one_machine_lower_bound`, over heads and
tails in milli-cycles and share-cycles rounded down) is its optimum, so no plan ends before it.
A memory-planned device takes the smallest of its cases. Everything else (durations,
orders, capacity) stays relaxed, so the bound holds for every plan of the spine's placement
and orders; tested against the brute-force optimum over every combination of per-device plans
in ``tests/planner/memory/test_shared_bound.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from fractions import Fraction
from typing import Any

from planner.hardware import Hardware
from planner.isa.cost import cached_op_cost
from planner.memory.shared_bandwidth import main_memory_share
from solvers.memory.levels.bandwidth import SHARE_UNITS, dma_share, dma_shares
from solvers.memory.levels.heads_tails import one_machine_lower_bound
from solvers.memory.levels.hierarchy_bandwidth import hop_shares

__all__ = ["shared_main_memory_bound", "main_memory_uses", "forced_traffic_uses", "n_level_traffic_uses",
           "transfer_end_uses"]

_Use = tuple[int, Fraction, int]  # (head, share-cycles, tail): plan cycles


def shared_main_memory_bound(order: Sequence[str], succ: Mapping[str, list[str]], duration: Mapping[str, int],
                             end: Mapping[str, int], graph, hardware: Hardware, plan_ops, transfers: Sequence,
                             bridges: Mapping[str, Any], main: Mapping[str, int], skip: Collection[str] = (),
                             hierarchies: Mapping[str, Any] | None = None) -> int:
    """The largest over the devices of the preemptive one-machine bound on their main memory
    (module Notes); 0 unless some bridge's problem shares bandwidth. ``order`` (topological),
    ``succ``, ``duration`` and ``end`` (the longest path from a node's start to the end) are the
    relaxed graph's; ``plan_ops`` the spine's placed ops, ``transfers`` its transfers
    (``xfer:<k>`` is the k-th), ``main`` each activity's main-memory duration (plan cycles).
    Devices in ``skip`` (offered plans over more than two levels) count nothing unless their
    ``HierarchyBridge`` is in ``hierarchies``: then the smallest of everything in main memory,
    an N-level plan's forced main-level traffic (:func:`n_level_traffic_uses`) and a two-level
    plan's over its base bridge (such a device may be offered one too)."""
    if not any(b.problem.shared_bandwidth for b in bridges.values()):
        return 0
    head = _heads(order, succ, duration)
    window = _windows(order, succ, duration, head, end)
    devices = sorted({o.device for o in plan_ops})
    hierarchies = hierarchies or {}
    best = 0
    for d in devices:
        if d in skip and d not in hierarchies:
            continue
        fixed = transfer_end_uses(d, transfers, window, hardware)
        main_uses = main_memory_uses(d, plan_ops, graph, hardware, window, main)
        cases = [fixed + main_uses]
        if d in bridges:
            cases.append(fixed + forced_traffic_uses(bridges[d], graph, hardware, transfers, window, head, duration))
        if d in skip:
            hb = hierarchies[d]
            cases.append(fixed + n_level_traffic_uses(hb, graph, hardware, transfers, window, head, duration))
            cases.append(fixed + forced_traffic_uses(hb.base, graph, hardware, transfers, window, head, duration))
        best = max(best, min(_one_machine(uses) for uses in cases))
    return best


def _heads(order: Sequence[str], succ: Mapping[str, list[str]], duration: Mapping[str, int]) -> dict[str, int]:
    """The longest path to each node's start."""
    head = {n: 0 for n in order}
    for n in order:
        for m in succ[n]:
            head[m] = max(head[m], head[n] + duration[n])
    return head


def _windows(order: Sequence[str], succ: Mapping[str, list[str]], duration: Mapping[str, int],
             head: Mapping[str, int], end: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Per node, (a start no plan's activity precedes, the least time after its end in any plan).

    A link transfer's own head and tail hold. An op's do not in full: the relaxed graph times it
    at its shortest duration and puts what a plan adds at a transfer's ends in ``recv:``/``send:``
    nodes before and after it, which a plan that keeps the op in main memory pays inside the op
    instead. So an op starts no earlier than its predecessors' ends, a ``recv:`` node counting
    from its own start (the transfer's end), and after its actual end comes the longest of its
    successors' tails from their starts, a ``send:`` node's from its transfer's start."""
    preds: dict[str, list[str]] = {n: [] for n in order}
    for n in order:
        for m in succ[n]:
            preds[m].append(n)
    out = {}
    for n in order:
        if n.startswith("op:"):
            start = max((head[p] if p.startswith("recv:") else head[p] + duration[p] for p in preds[n]), default=0)
            after = max((end[m] - duration[m] if m.startswith("send:") else end[m] for m in succ[n]), default=0)
            out[n] = (start, after)
        else:
            out[n] = (head[n], end[n] - duration[n])
    return out


def _one_machine(uses: Sequence[_Use]) -> int:
    """The preemptive one-machine bound over ``uses`` at :data:`SHARE_UNITS` share-cycles a
    cycle (in milli-cycles, share-cycles rounded down, then rounded up to cycles).

    Examples
    --------
    Two uses of all of the level for 10 and 5 cycles from cycle 0 and 3, tails 0 and 4: the
    second, released at 3, takes over (3 + 5 + 4 = 12), the first ends at 15:

    >>> _one_machine([(0, Fraction(10_000), 0), (3, Fraction(5_000), 4)])
    15
    """
    jobs = [(h * SHARE_UNITS, int(e), q * SHARE_UNITS) for h, e, q in uses if e >= 1]
    bound = one_machine_lower_bound(jobs)
    return -(-bound // SHARE_UNITS)


def transfer_end_uses(device: str, transfers: Sequence, window: Mapping[str, tuple[int, int]],
                      hardware: Hardware) -> list[_Use]:
    """Each link transfer end on ``device``: the link's share of its main memory (a DMA's at the
    link's rate, as the re-timing's gate gives it) for the transfer's duration."""
    dev = hardware.device(device)
    clock = dev.profile.clock_hz
    main_rate = Fraction(dev.profile.main_memory.bandwidth_bytes_per_s, clock)
    rates = {lk.name: lk.bandwidth_bytes_per_s for lk in hardware.links}
    uses = []
    for k, t in enumerate(transfers):
        if device in (t.src_device, t.dst_device) and t.duration_cycles > 0:
            share = dma_share(Fraction(rates[t.link], clock), main_rate)
            h, q = window[f"xfer:{k}"]
            uses.append((h, Fraction(share * t.duration_cycles), q))
    return uses


def main_memory_uses(device: str, plan_ops, graph, hardware: Hardware, window: Mapping[str, tuple[int, int]],
                     main: Mapping[str, int]) -> list[_Use]:
    """Each op of ``device`` with everything in main memory: its main-memory share (the
    simulator's rule, :func:`~planner.memory.shared_bandwidth.main_memory_share`) for its
    schedule duration."""
    dev = hardware.device(device)
    uses = []
    for o in plan_ops:
        if o.device != device:
            continue
        u = main_memory_share(cached_op_cost(graph.ops[o.name], graph, dev.profile, dev.kind))
        name = f"op:{o.name}"
        if u and name in window:
            h, q = window[name]
            uses.append((h, Fraction(u * main[name]), q))
    return uses


def forced_traffic_uses(bridge, graph, hardware: Hardware, transfers: Sequence,
                        window: Mapping[str, tuple[int, int]], head: Mapping[str, int],
                        duration: Mapping[str, int]) -> list[_Use]:
    """The forced slow-level uses of every two-level plan of ``bridge``'s problem (module Notes),
    in plan share-cycles: per tensor ``min(SHARE_UNITS * bytes / bw, DMA shares * DMA cycles)``
    device share-cycles, times the plan clock over the device's."""
    problem = bridge.problem
    bs = problem.bandwidth_bytes_per_cycle[1]
    dma_slow = dma_shares(problem)[1]

    def energy(t: int) -> Fraction:
        return min(Fraction(SHARE_UNITS * problem.tensor_bytes[t]) / bs, Fraction(dma_slow * problem.dma_cycles(t)))
    return _crossing_uses(bridge, energy, graph, hardware, transfers, window, head, duration)


def n_level_traffic_uses(hbridge, graph, hardware: Hardware, transfers: Sequence,
                         window: Mapping[str, tuple[int, int]], head: Mapping[str, int],
                         duration: Mapping[str, int]) -> list[_Use]:
    """The forced main-level uses of every N-level plan of ``hbridge``'s problem (module Notes):
    a tensor whose home is the main level crosses it as in :func:`forced_traffic_uses`, read or
    written there by an op (at least ``SHARE_UNITS * bytes / bw`` share-cycles) or by the hop
    that leaves or enters it (any route to another level starts or ends with a hop between main
    and one of its neighbours: that hop's shares of main times its cycles); a tensor homed
    elsewhere (host memory) may never touch main and counts nothing."""
    problem = hbridge.problem
    main = problem.main_level
    bw = problem.bandwidth_bytes_per_cycle[main]
    near = sorted({b for a, b in problem.dma_paths if a == main} | {a for a, b in problem.dma_paths if b == main})

    def energy(t: int) -> Fraction:
        if problem.home(t) != main:
            return Fraction(0)
        hops = [Fraction(hop_shares(problem, main, n)[main] * problem.hop_cycles(t, main, n)) for n in near]
        return min([Fraction(SHARE_UNITS * problem.tensor_bytes[t]) / bw, *hops])
    return _crossing_uses(hbridge, energy, graph, hardware, transfers, window, head, duration)


def _crossing_uses(bridge, energy_of, graph, hardware: Hardware, transfers: Sequence,
                   window: Mapping[str, tuple[int, int]], head: Mapping[str, int],
                   duration: Mapping[str, int]) -> list[_Use]:
    """Per tensor of ``bridge``'s problem that starts or ends in main memory, its crossing
    (``energy_of(t)`` device share-cycles, times the plan clock over the device's) with its
    window: a preloaded or received tensor's first read, a live-out tensor's write (module Notes)."""
    problem = bridge.problem
    dev = bridge.device
    scale = Fraction(hardware.clock_hz, dev.profile.clock_hz)
    span = _op_windows(bridge, window)
    arrival = {}  # received tensor index -> its transfer's end (head)
    sends: dict[str, list[int]] = {}  # sent tensor -> tails (from its start) of its transfers
    for k, t in enumerate(transfers):
        name = f"xfer:{k}"
        if t.dst_device == dev.name:
            for i, lt in enumerate(bridge.tensors):
                if lt.role == "received" and lt.transfer == (t.src_op, t.dst_op):
                    arrival[i] = head[name] + duration[name]
        if t.src_device == dev.name:
            for x in t.tensors:
                sends.setdefault(x, []).append(window[name][1] + duration[name])
    uses = []
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        if not problem.tensor_bytes[t]:
            continue
        energy = scale * energy_of(t)
        if acc[0] == -1 and len(acc) > 1 and problem.is_real(acc[1]):
            uses.append((arrival.get(t, 0), energy, span[acc[1]][1]))
        if problem.is_real(acc[0]) and acc[-1] == problem.num_ops:
            name = bridge.tensors[t].tensor
            output = graph.tensors[name].kind == "output"
            uses.append((span[acc[0]][0], energy, 0 if output else min(sends.get(name, [0]))))
    return uses


def _op_windows(bridge, window: Mapping[str, tuple[int, int]]) -> list[tuple[int, int]]:
    """Per op of the bridge's problem: (head, tail after its end) in the relaxed graph; an op of
    a split group gets its group's (the first op's head, the last op's tail): its portions
    interleave with the group's other ops, so only the group as a whole is in order."""
    problem = bridge.problem
    rows = [window.get(f"op:{name}", (0, 0)) for name in bridge.ops]
    for g in problem.splits:
        group = (rows[g.first_op][0], rows[g.last_op][1])
        for i in range(g.first_op, g.last_op + 1):
            rows[i] = group
    return rows
