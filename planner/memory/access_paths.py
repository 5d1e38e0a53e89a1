"""The cross-device bound's paths through one op, with every fast/slow choice of its accesses.

The cross-device bound (:func:`planner.memory.cross_device.memory_plan_bound`) relaxes each
op of a memory-planned device to its shortest duration, and adds what a link transfer's ends
cost at least (its ``send``/``recv`` nodes). It leaves out that a fast copy of a tensor that
starts or ends in main memory needs a DMA: a graph input or weight read fast was prefetched
after cycle 0, a received copy read fast was prefetched after its arrival, a sent tensor
written fast is evicted before its transfer starts, and a graph output written fast is evicted
before the end.

Notes
-----
For an op ``i`` of a two-level planned device (not split: a split op's portions read and write
in part), every plan either keeps the device in main memory (``i`` takes its main-memory
duration, and nothing moves) or gives each tensor ``i`` touches one level at ``i``: a set
``F`` of fast tensors whose bytes fit the fast level (a fast-only op: all of them). Then, in
plan cycles, with ``head``/``tail`` the relaxed graph's longest paths to a node's start and
from its start (both hold in every plan):

* ``i`` starts after each predecessor ends; after a transfer's arrival, plus the prefetch of
  each received tensor in ``F``; and after the prefetch of each graph input in ``F``
  (``dma_cycles``, the engine starting at cycle 0 at the earliest);
* it runs for its roofline with ``F`` fast, the rest slow;
* after it, each successor's tail; a transfer of what ``i`` sends starts after the eviction of
  each sent tensor in ``F``; each graph output in ``F`` is evicted before the end.

The least over every ``F`` and the main-memory case of ``start + duration + longest tail`` is
a lower bound on every plan's makespan. Ops with more than :data:`MAX_TENSORS` tensors are
left out (a subset of the ops is as sound).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planner.hardware import Hardware
from planner.memory.hierarchy_access_paths import AccessOption, level_options, shares_floor

__all__ = ["MAX_TENSORS", "PathContext", "access_choice_bound"]

MAX_TENSORS = 8  # at most 2**8 choices per op


@dataclass(frozen=True)
class PathContext:
    """What :func:`access_choice_bound` needs beyond the relaxed graph: the two-level planned
    devices' bridges, the hardware, the plan's link transfers (``xfer:<k>`` is the k-th), each
    op's device and each activity's main-memory duration (plan cycles).

    Examples
    --------
    >>> PathContext({}, None, (), {}, {}).bridges
    {}
    """

    bridges: Mapping[str, Any]
    hardware: Hardware | None
    transfers: Sequence[Any]
    device_of: Mapping[str, str]
    main: Mapping[str, int]
    # Devices offered an N-level plan: their HierarchyBridges (hierarchy_access_paths' choices).
    hierarchies: Mapping[str, Any] = field(default_factory=dict)

    def fast_capacity(self, bridge) -> int:
        """The bridge's fast level at its full capacity (a reserve is the planner's own)."""
        return bridge.device.profile.level(bridge.fast_level).capacity_bytes


def access_choice_bound(order: list[str], succ: Mapping[str, list[str]], duration: Mapping[str, int],
                        end: Mapping[str, int], context: PathContext) -> int:
    """The larger of the path bound through each op (module Notes) and the forward pass that
    carries each op's least end over its choices to what follows (:func:`_forward`); 0 when no
    op qualifies. ``order`` (topological), ``succ``, ``duration`` and ``end`` are the relaxed
    graph's (``end[n]``: the longest path from ``n``'s start to the end)."""
    preds: dict[str, list[str]] = {n: [] for n in succ}
    for n, ms in succ.items():
        for m in ms:
            preds[m].append(n)
    head: dict[str, int] = {}
    for n in order:
        head[n] = max((head[p] + duration[p] for p in preds[n]), default=0)
    finish = {n: head[n] + duration[n] for n in order}
    choices = {n: c for n in order if (c := _choices(n, context)) is not None}
    best = 0
    for n, c in choices.items():
        best = max(best, min(c.start(o, preds[n], finish, duration) + o.cycles + c.tail(o, succ[n], end)
                             for o in c.options))
    return max(best, _forward(order, preds, duration, choices))


def _forward(order: list[str], preds: Mapping[str, list[str]], duration: Mapping[str, int], choices) -> int:
    """Each node's least end, in topological order: a node's start is the latest end of its
    predecessors (a transfer's also the least over the sender's choices of its end plus its
    evictions), its end that plus its duration, and an op with choices ends no earlier than
    the least over them of its start, from its inputs' arrivals and prefetches, plus its
    roofline. The largest end, or an op's least end plus its outputs' evictions: every plan
    makes its choices at every op at once, so each least holds in it. A ``send`` node's extra
    (the least a sent tensor adds beyond its producer's shortest duration) counts from the
    producer's start plus that duration, not from its least end, which may already include it."""
    finish: dict[str, int] = {}
    plain: dict[str, int] = {}  # start + the relaxed duration: what a send node's extra is measured from
    departure: dict[str, int] = {}  # xfer node -> the least over its sender's choices
    out = 0
    for n in order:
        start = max([*(plain[p] if n.startswith("send:") else finish[p] for p in preds[n]), departure.get(n, 0)],
                    default=0)
        finish[n] = plain[n] = start + duration[n]
        c = choices.get(n)
        if c is None:
            continue
        ends = [(o, c.start(o, preds[n], finish, duration) + o.cycles) for o in c.options]
        finish[n] = max(finish[n], min(e for _, e in ends))
        out = max(out, min(e + o.output_evictions for o, e in ends))
        for xfer in {x for x, _ in c.departures.values()}:
            departure[xfer] = max(departure.get(xfer, 0), min(e + o.evictions.get(xfer, 0) for o, e in ends))
    return max([*finish.values(), out], default=0)


@dataclass(frozen=True)
class _Choices:
    """An op's options (module Notes) and its link ends: predecessor node -> (transfer node,
    received tensors), successor node -> (transfer node, sent tensors)."""

    options: tuple[AccessOption, ...]
    arrivals: Mapping[str, tuple[str, list[int]]]
    departures: Mapping[str, tuple[str, list[int]]]

    def start(self, o: AccessOption, preds: list[str], finish: Mapping[str, int], duration: Mapping[str, int]) -> int:
        """The option's least start: after each predecessor's end, a transfer's arrival plus the
        option's prefetches (its recv node left out: the option says how it is read)."""
        at = max(o.inputs, shares_floor(o.uses, finish, duration)) if o.uses else o.inputs
        for p in preds:
            if p in self.arrivals:
                xfer = self.arrivals[p][0]
                at = max(at, finish[xfer] + o.prefetch.get(xfer, 0))
            else:
                at = max(at, finish[p])
        return at

    def tail(self, o: AccessOption, succs: list[str], end: Mapping[str, int]) -> int:
        """The longest path after the op's end for the option: its outputs' evictions, each
        successor's, a departing transfer's after the option's evictions (its send node left out)."""
        out = o.output_evictions
        for s in succs:
            if s in self.departures:
                xfer = self.departures[s][0]
                out = max(out, o.evictions.get(xfer, 0) + end[xfer])
            else:
                out = max(out, end[s])
        return out


def _choices(n: str, context: PathContext) -> _Choices | None:
    """The options of op node ``n`` (module Notes), or None: not an op of a planned device,
    split, or with more than :data:`MAX_TENSORS` tensors (N levels: more than
    :data:`~planner.memory.hierarchy_access_paths.MAX_ASSIGNMENTS` level assignments)."""
    if not n.startswith("op:"):
        return None
    if context.device_of.get(n[3:]) in context.hierarchies:
        return _level_choices(n, context)
    if context.device_of.get(n[3:]) not in context.bridges:
        return None
    op = n[3:]
    bridge = context.bridges[context.device_of[op]]
    problem, i = bridge.problem, bridge.ops.index(op)
    if any(g.first_op <= i <= g.last_op for g in problem.splits):
        return None
    tensors = sorted({t for t, _ in problem.op_accesses()[i] if problem.tensor_bytes[t]})
    if len(tensors) > MAX_TENSORS:
        return None
    conv = lambda c: context.hardware.to_timeline_cycles(c, bridge.device)  # noqa: E731 - device to plan cycles
    dma = {t: conv(problem.dma_cycles(t)) for t in tensors}
    arrivals, departures = _link_ends(op, bridge, context)
    received = {u for _, us in arrivals.values() for u in us}
    inputs = {t for t in tensors if not problem.is_real(problem.accesses(t)[0]) and t not in received}
    outputs = {t for t in tensors if t in problem.live_out and problem.accesses(t)[0] == i}
    sizes = {t: sum(problem.tensor_bytes[u] for u, _ in problem.op_accesses()[i] if u == t) for t in tensors}
    capacity = max(problem.capacity_bytes[0], context.fast_capacity(bridge))

    def longest(fast) -> int:
        return max((dma[t] for t in fast), default=0)

    options = [AccessOption(context.main[n], {}, 0, {}, 0)]  # the device in main memory: nothing moves
    forced = i in problem.fast_only_ops
    for picks in itertools.product((False, True), repeat=len(tensors)):
        fast = {t for t, f in zip(tensors, picks) if f}
        fb = sum(sizes[t] for t in fast)
        if fb > capacity or (forced and len(fast) < len(tensors)):
            continue
        options.append(AccessOption(conv(problem.op_cycles(i, fb, sum(sizes.values()) - fb)),
                               {x: longest(fast & set(us)) for x, us in arrivals.values()},
                               longest(fast & inputs),
                               {x: longest(fast & set(us)) for x, us in departures.values()},
                               longest(fast & outputs)))
    return _Choices(tuple(options), arrivals, departures)


def _level_choices(n: str, context: PathContext) -> _Choices | None:
    """The options of op node ``n`` of a device offered an N-level plan: the device in main
    memory, every level assignment of its accesses (:func:`level_options`), and every option
    of its two-level problem (its plans over the fast level and main memory may also be offered)."""
    device = context.device_of[n[3:]]
    hbridge = context.hierarchies[device]
    arrivals, departures = _link_ends(n[3:], hbridge.base, context)
    conv = lambda c: context.hardware.to_timeline_cycles(c, hbridge.device)  # noqa: E731 - device to plan cycles
    rates = {lk.name: lk.bandwidth_bytes_per_s for lk in context.hardware.links}
    options = level_options(n[3:], hbridge, arrivals, departures, conv, context.transfers, rates)
    two = _choices(n, replace(context, bridges={device: hbridge.base}, hierarchies={}))
    if options is None or two is None:
        return None
    return _Choices((*two.options, *options), arrivals, departures)


def _link_ends(op: str, bridge, context: PathContext) -> tuple[dict[str, tuple[str, list[int]]], dict[str, tuple[str, list[int]]]]:
    """Per predecessor node that delivers a transfer to ``op`` (the ``xfer`` node or its ``recv``
    node): the transfer's node and the received tensors; per successor node of a transfer from
    ``op`` (``xfer`` or its ``send`` node): the transfer's node and the sent tensors."""
    arrivals, departures = {}, {}
    device = bridge.device.name
    for k, t in enumerate(context.transfers):
        xfer = f"xfer:{k}"
        if t.dst_op == op and t.dst_device == device:
            received = [u for u, lt in enumerate(bridge.tensors)
                        if lt.role == "received" and lt.transfer == (t.src_op, t.dst_op)]
            arrivals[xfer] = arrivals[f"recv:{k}"] = (xfer, received)
        if t.src_op == op and t.src_device == device:
            sent = [u for u in bridge.sent if bridge.tensors[u].tensor in t.tensors]
            departures[xfer] = departures[f"send:{k}"] = (xfer, sent)
    return arrivals, departures
