"""Memory plans across devices: a mixed choice per device, improved Gauss-Seidel style with heads and tails.

Each memory-planned device's level problem sees its own ops only, in the spine's order, from
cycle 0. On a multi-device plan the whole plan's makespan also depends on when a device
receives data and how much work elsewhere waits for what it sends, so a plan that shortens
the device's own ops can lengthen the whole plan. This module chooses, per device, one of

* ``main``: every tensor in main memory (the schedule's own ops and streams),
* ``memory plan``: the level solver's plan (CP-SAT), ``greedy``: the greedy baseline,
* ``heads/tails``: the level problem re-solved under the heads and tails the rest of the
  current whole plan imposes (:mod:`solvers.memory.levels.heads_tails`): each op's release
  (the end of the link transfers into it), each received copy's arrival, each sent tensor's
  tail (the longest path after its transfer through the other devices' ops and links);

and keeps a combination only by the whole re-timed makespan (:func:`planner.memory.assemble.assemble`,
the list schedule the binaries replay). Iteration: start from the better of "every device
its memory plan" and "every device main"; then, device by device in the spec's order, derive
its heads and tails from the current whole plan, re-solve it, and move it to whichever of its
candidates makes the whole plan strictly shorter; repeat until a pass changes nothing (at
most :data:`MAX_PASSES`). Every step is a complete, valid plan, so the result is never slower
than its start, and the caller still replays it against everything in main memory.

Budgets are deterministic: each re-solve gets a fixed share of the device's memory budget in
CP-SAT deterministic time.

The :class:`DeviceExplanation` of each planned device gives the report its numbers: what the
memory plan saves on the device's own ops, what it does to the whole plan on its own, and the
device's slack in the kept plan (zero on the critical path).
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import Any, Callable, Collection, Mapping, Sequence

from planner.errors import InfeasibleError, UnsupportedError
from planner.hardware import Hardware
from planner.memory.access_paths import PathContext, access_choice_bound
from planner.memory.assemble import DeviceLevels, expand, plan_activities
from planner.memory.mixed_assemble import N_LEVELS, HierarchyLevels, assemble_mixed, mixed_activities
from planner.memory.retime import Activity, RetimingDeadlock
from planner.plan import Plan
from solvers.core import SolveOptions
from solvers.memory.levels import expand_hierarchy_splits, expand_splits, op_duration_lower_bounds, plan_all_slow
from planner.memory.shared_bandwidth import (
    bandwidth_gate, n_level_transfer_share, transfer_key, transfer_share, unplanned_shares,
)
from solvers.memory.levels.bandwidth import SHARE_UNITS
from planner.memory.shared_bound import shared_main_memory_bound
from solvers.memory.levels.link_holds import LinkHold
from solvers.memory.levels.heads_tails import (
    HeadsTails, SentDeadline, objective_cycles, one_machine_lower_bound, retime_heads_tails, solve_heads_tails,
    with_split_factors,
)
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_all_home
from solvers.memory.levels.hierarchy_heads_tails import (hierarchy_objective, retime_hierarchy_heads_tails,
                                                           solve_hierarchy_heads_tails)

__all__ = ["ALL_HOME", "MAX_PASSES", "MAX_SUBSET_DEVICES", "HEADS_TAILS_SHARE", "DeviceExplanation", "CrossDeviceChoice", "choose_across_devices",
           "critical_tails", "device_heads_tails", "bridge_heads_tails", "device_slack", "sent_deadlines", "memory_plan_bound",
           "memory_plan_bound_parts",
           "shortest_op_cycles", "any_level_op_cycles", "bound_entry", "link_serial_bound", "HeldLevels",
           "round_trips", "shared_send_tails"]

log = logging.getLogger(__name__)

MAX_PASSES = 3
MAX_SUBSET_DEVICES = 5  # up to 2**5 whole-plan re-timings to start from the best subset
# Of a device's memory budget (seconds of the time limit, turned into deterministic time),
# the share each heads/tails re-solve gets.
HEADS_TAILS_SHARE = 0.15
MAIN = "main"
HEADS_TAILS = "heads/tails"
# A device that reads tensors homed outside main memory (``memory.home``): every tensor read
# from its home, its floor in place of MAIN (which would ignore the homes).
ALL_HOME = "all at home"


@dataclass(frozen=True)
class DeviceExplanation:
    """Why a device keeps the plan it keeps, in numbers (device cycles for its own ops, plan
    cycles for whole plans)."""

    plan: str  # which candidate the kept plan uses on this device
    own_memory_cycles: int | None  # the level solver's makespan of its ops alone (memory plan)
    own_main_cycles: int | None  # the same ops with every tensor in main memory
    alone_makespan: int | None  # the whole plan with only this device memory-planned (None: does not fit)
    main_makespan: int  # the whole plan with no device memory-planned (re-timed alike)
    slack_cycles: int  # in the kept plan: how far its ops could slip without delaying the end
    # The last re-solve under the heads and tails (device cycles of its objective): the best plan
    # found, a lower bound over every plan of its ops, and everything in main memory. For a device
    # whose kept plan is over N levels, its N-level re-solve's: then the last is everything at
    # its home (main memory unless memory.home says otherwise) and resolved_levels is "all".
    resolved_cycles: int | None = None
    resolved_bound_cycles: int | None = None
    resolved_main_cycles: int | None = None
    resolved_levels: str | None = None
    # Offered an N-level candidate (more than two levels): its level solver's makespan of its ops
    # alone over every level (device cycles); None when not offered (and then not in memory.json).
    n_level_cycles: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"plan": self.plan, "own_memory_cycles": self.own_memory_cycles,
                "own_main_cycles": self.own_main_cycles, "alone_makespan": self.alone_makespan,
                "main_makespan": self.main_makespan, "slack_cycles": self.slack_cycles,
                "resolved_cycles": self.resolved_cycles, "resolved_bound_cycles": self.resolved_bound_cycles,
                "resolved_main_cycles": self.resolved_main_cycles,
                **({"resolved_levels": self.resolved_levels} if self.resolved_levels is not None else {}),
                **({"n_level_cycles": self.n_level_cycles} if self.n_level_cycles is not None else {})}


@dataclass(frozen=True)
class CrossDeviceChoice:
    """The kept combination: per device its candidate, the re-timed plan and memory plan."""

    choice: dict[str, str]
    levels: dict[str, DeviceLevels]
    plan: Plan
    memory: Any  # planner.memory.plan.MemoryPlan
    passes: int
    explanations: dict[str, DeviceExplanation]
    stops: tuple[str | None, ...] = ()
    # Devices whose re-solve under heads, tails and sent-tensor deadlines still deadlocked with
    # the other devices' plans it was solved against (dropped like any such combination).
    resolve_deadlocks: tuple[str, ...] = ()
    # A lower bound on every memory plan of the spine's placement and orders (plan cycles,
    # :func:`memory_plan_bound`); None when not computed.
    bound_cycles: int | None = None
    # Its parts (:func:`memory_plan_bound_parts`): the paths and links, and under ``bandwidth:
    # shared`` main memory's share-cycles per device (None without sharing).
    path_bound_cycles: int | None = None
    shared_bound_cycles: int | None = None


def _node_graph(plan: Plan, graph, exclude: str) -> tuple[dict[str, int], dict[str, int], dict[str, list[str]]]:
    """The re-timed plan as a precedence graph without ``exclude``'s ops: per node its start and
    duration, and its successors (the next op on its stream, graph edges on one device, a
    transfer after its source op's last instance and before its destination op's first
    instance, the next transfer on its link). Instances ``op#p`` belong to ``op``."""
    start: dict[str, int] = {}
    duration: dict[str, int] = {}
    succ: dict[str, list[str]] = {}
    first: dict[tuple[str, str], str] = {}
    last: dict[tuple[str, str], str] = {}
    streams: dict[tuple[str, int], list] = {}
    for o in plan.ops:
        if o.device == exclude:
            continue
        name = f"op:{o.device}:{o.name}"
        start[name], duration[name] = o.start_cycle, o.duration_cycles
        succ[name] = []
        streams.setdefault((o.device, o.stream), []).append(o)
        base = (o.device, o.name.split("#")[0])
        if base not in first or (o.start_cycle, o.name) < (start[first[base]], first[base]):
            first[base] = name
        if base not in last or (o.end_cycle, o.name) > (start[last[base]] + duration[last[base]], last[base]):
            last[base] = name
    for ops in streams.values():
        ops.sort(key=lambda o: (o.start_cycle, o.end_cycle, o.name))
        for a, b in zip(ops, ops[1:]):
            succ[f"op:{a.device}:{a.name}"].append(f"op:{b.device}:{b.name}")
    instances: dict[tuple[str, str], list[str]] = {}
    for name in sorted(start, key=lambda n: (start[n], n)):
        if name.startswith("op:"):
            device, inst = name[3:].split(":", 1)
            instances.setdefault((device, inst.split("#")[0]), []).append(name)
    for (device, op), mine in instances.items():
        for nxt in graph.dag.successors(op):
            for name in mine:  # each instance to the first instance of nxt after it (split portions interleave)
                after = next((n for n in instances.get((device, nxt), ())
                              if start[n] >= start[name] + duration[name]), None)
                if after is not None:
                    succ[name].append(after)
    links: dict[str, list[tuple[int, str]]] = {}
    for k, t in enumerate(plan.transfers):
        name = f"xfer:{k}"
        start[name], duration[name] = t.start_cycle, t.duration_cycles
        succ[name] = []
        if (t.dst_device, t.dst_op) in first:
            succ[name].append(first[(t.dst_device, t.dst_op)])
        if (t.src_device, t.src_op) in last:
            succ[last[(t.src_device, t.src_op)]].append(name)
        links.setdefault(t.link, []).append((t.start_cycle, name))
    for row in links.values():
        row.sort()
        for (_, a), (_, b) in zip(row, row[1:]):
            succ[a].append(b)
    return start, duration, succ


def critical_tails(plan: Plan, graph, exclude: str) -> dict[str, int]:
    """Per node of the plan without ``exclude``: the longest path from its start to the end of
    the plan through its successors, itself included (durations only; the waits the other
    devices' DMAs add are not counted, so the tails are optimistic estimates)."""
    start, duration, succ = _node_graph(plan, graph, exclude)
    order = sorted(start, key=lambda n: (start[n], duration[n], n), reverse=True)
    # Successors start no earlier than a node ends, except zero-cycle chains at one cycle:
    # relax until nothing changes (a handful of sweeps).
    tail = {n: duration[n] for n in start}
    changed = True
    while changed:
        changed = False
        for n in order:
            value = duration[n] + max((tail[s] for s in succ[n]), default=0)
            if value > tail[n]:
                tail[n], changed = value, True
    return tail


def _to_device(cycles: int, hardware: Hardware, device) -> int:
    """Plan cycles to the device's own, rounded down (heads and tails stay optimistic)."""
    return max(0, cycles) * device.profile.clock_hz // hardware.clock_hz


def device_heads_tails(plan: Plan, graph, hardware: Hardware, lv: DeviceLevels,
                       deadlines: tuple[SentDeadline, ...] = (),
                       round_trips: Mapping[str, tuple[int, Mapping[str, int]]] | None = None,
                       spine: Plan | None = None, others: Mapping[str, Any] | None = None) -> HeadsTails:
    """The heads and tails the rest of ``plan`` imposes on ``lv``'s device, over its expanded
    problem, with the sent-tensor ``deadlines`` (over the bridge's problem, :func:`sent_deadlines`)
    and, under sharing, its link transfers as link holds with their ``round_trips``
    (:func:`round_trips`) and, given the ``spine`` and the ``others``' plans, tails that also
    count the other devices' DMA waits (:func:`shared_send_tails`)."""
    tails = critical_tails(plan, graph, lv.bridge.device.name)
    if lv.expanded.shared_bandwidth and spine is not None and others is not None:
        tails = shared_send_tails(tails, plan, spine, graph, hardware, others, lv.bridge.device.name)
    holds = _link_holds(plan, hardware, lv, tails, round_trips or {}) if lv.expanded.shared_bandwidth else ()
    return bridge_heads_tails(plan, graph, hardware, lv.bridge, lv.solution.split_factors, deadlines, holds, tails)


def shared_send_tails(tails: Mapping[str, int], plan: Plan, spine: Plan, graph, hardware: Hardware,
                      others: Mapping[str, Any], device: str) -> dict[str, int]:
    """``tails`` (:func:`critical_tails` of ``plan``) with each transfer's at least its longest
    path to the end through the whole plan's re-timing graph with the other devices on their
    plans (``others``; the rest in main memory) and ``device``'s ops left out: their op
    instances and DMAs in their orders, a prefetch after the transfer that brings its tensor, so
    a receiver's DMA waits count; and at least its duration plus, on each other device, the
    main-memory share-cycles of what follows it there over :data:`SHARE_UNITS` a cycle
    (:func:`_share_floor`: everything after the transfer starts after its end and shares that
    device's main memory), so the receiver's shares count. The other devices' plans are the ones
    the re-solve is judged with, so the tail holds in each of its re-timings."""
    acts, sequences, transfers = mixed_activities(spine, graph, hardware, others)
    succ, duration = _successors(acts, sequences, lambda a: a.resource.startswith(f"stream:{device}:"))
    shares = _main_shares(spine, graph, hardware, others, device, transfers, duration)
    resource = {a.name: a.resource for a in acts}
    longest: dict[str, int] = {}
    for n in reversed(_topological(succ)):
        longest[n] = duration[n] + max((longest[m] for m in succ[n]), default=0)
    by_key = {transfer_key(t): max(longest.get(name, 0), duration.get(name, 0) + _share_floor(
                  _reachable(name, succ), shares, duration, resource)) for k, t in enumerate(transfers)
              for name in (f"xfer:{k}",)}
    out = dict(tails)
    for k, t in enumerate(plan.transfers):
        name = f"xfer:{k}"
        out[name] = max(out.get(name, 0), by_key.get(transfer_key(t), 0))
    return out


def _main_shares(spine: Plan, graph, hardware: Hardware, others: Mapping[str, Any], device: str,
                 transfers, duration: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Per activity of the whole plan's re-timing graph with ``others`` on their two-level plans
    (the rest in main memory), the main-memory shares it holds on each device other than
    ``device`` and the N-level ones: the re-timing gate's shares
    (:func:`~planner.memory.shared_bandwidth.bandwidth_gate`), a link transfer on both ends."""
    two = {e: lv for e, lv in others.items() if not isinstance(lv, HierarchyLevels)}
    skip = {device} | (set(others) - set(two))
    instances = {e: tuple(lv.bridge.ops[orig] + (f"#{p}" if lv.factors_of_op[orig] > 1 else "")
                          for orig, p in lv.op_origin) for e, lv in two.items()}  # assemble's instance names
    gate = bandwidth_gate(two, instances, True, transfers, {lk.name: lk.bandwidth_bytes_per_s for lk in hardware.links},
                          unplanned_shares(spine, graph, hardware, set(others) | {device}), hardware)
    out: dict[str, dict[str, int]] = {}
    for name, rows in (gate.shares.items() if gate is not None else ()):
        for dev, level, u in rows:
            if level == 1 and dev not in skip and name in duration:
                row = out.setdefault(name, {})
                row[dev] = row.get(dev, 0) + u
    return out


def _reachable(source: str, succ: Mapping[str, list[str]]) -> set[str]:
    """Every node after ``source`` (not itself)."""
    seen: set[str] = set()
    todo = list(succ.get(source, ()))
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(succ.get(n, ()))
    return seen


def _share_floor(between: Collection[str], shares: Mapping[str, Mapping[str, int]], duration: Mapping[str, int],
                 resource: Mapping[str, str]) -> int:
    """Plan cycles the activities ``between`` need at least on the busiest main memory, under
    the re-timing gate (at most :data:`SHARE_UNITS` shares held at once): the larger of

    * their share-cycles there over :data:`SHARE_UNITS` a cycle, rounded up, and
    * the durations of activities of which no two overlap (:func:`_apart_cycles`: one resource,
      or shares summing above :data:`SHARE_UNITS`), so a receive holding most of a device's
      main memory runs beside none of its ops that hold more than the rest.

    Examples
    --------
    Shares 600 for 2 cycles and 500 for 3 on one device cannot overlap (5); 200 beside them adds
    no cycle by either rule:

    >>> sh = {"a": {"d": 600}, "b": {"d": 500}, "c": {"d": 200}, "x": {"d": 1000}}
    >>> dur = {"a": 2, "b": 3, "c": 4, "x": 9}
    >>> _share_floor({"a", "b", "c"}, sh, dur, {"a": "s0", "b": "s1", "c": "s2", "x": "s0"})
    5
    """
    per: dict[str, list[tuple[int, int, str]]] = {}
    for n in between:
        for dev, u in shares.get(n, {}).items():
            per.setdefault(dev, []).append((u, duration[n], resource.get(n, n)))
    best = 0
    for rows in per.values():
        energy = sum(u * dur for u, dur, _ in rows)
        best = max(best, -(-energy // SHARE_UNITS), _apart_cycles(rows))
    return best


def _apart_cycles(rows: list[tuple[int, int, str]]) -> int:
    """The longest total duration of a set of ``(shares, duration, resource)`` uses of one level
    of which no two overlap (same resource, or shares summing above :data:`SHARE_UNITS`), found
    greedily from each resource's uses and from the largest share down (any such set is a bound)."""
    def clash(a, b) -> bool:
        return a[2] == b[2] or a[0] + b[0] > SHARE_UNITS

    seeds = [[r for r in rows if r[2] == res] for res in sorted({r[2] for r in rows})]
    seeds.append([])
    by_share = sorted(rows, key=lambda r: (-r[0], -r[1], r[2]))
    by_length = sorted(rows, key=lambda r: (-r[1], -r[0], r[2]))
    best = 0
    for seed in seeds:
        for pool in (by_share, by_length):
            chosen = list(seed)
            for r in pool:
                if r not in chosen and all(clash(r, c) for c in chosen):
                    chosen.append(r)
            best = max(best, sum(dur for _, dur, _ in chosen))
    return best


def bridge_heads_tails(plan: Plan, graph, hardware: Hardware, bridge, split_factors: Sequence[int],
                       deadlines: tuple[SentDeadline, ...] = (), holds: tuple[LinkHold, ...] = (),
                       tails: Mapping[str, int] | None = None) -> HeadsTails:
    """:func:`device_heads_tails` of the device of ``bridge`` (a two-level
    :class:`~planner.memory.bridge.DeviceBridge`; an N-level device's is its ``base``, index for
    index), over the problem expanded by ``split_factors``; with link ``holds`` (shared
    bandwidth), what a received transfer brings waits for its hold's end instead of the
    transfer's planned end; ``tails`` per node (default: :func:`critical_tails`)."""
    dev = bridge.device
    d = dev.name
    tails = critical_tails(plan, graph, d) if tails is None else tails
    arrive: dict[tuple[str, str], int] = {}
    into: dict[str, int] = {}
    sent_tail: dict[str, int] = {}
    for k, t in enumerate(plan.transfers):
        end = t.start_cycle + t.duration_cycles
        if t.dst_device == d and not holds:  # with holds, what it brings waits for its hold's end
            arrive[(t.src_op, t.dst_op)] = max(arrive.get((t.src_op, t.dst_op), 0), end)
            into[t.dst_op] = max(into.get(t.dst_op, 0), end)
        if t.src_device == d:
            for x in t.tensors:
                sent_tail[x] = max(sent_tail.get(x, 0), tails[f"xfer:{k}"])
    op_release = tuple(_to_device(into.get(bridge.ops[i], 0), hardware, dev) for i in range(len(bridge.ops)))
    ready, tail = [], []
    for i, lt in enumerate(bridge.tensors):
        ready.append(_to_device(arrive.get(lt.transfer, 0), hardware, dev) if lt.role == "received" else 0)
        tail.append(_to_device(sent_tail.get(lt.tensor, 0), hardware, dev) if i in bridge.sent else 0)
    ht = HeadsTails(op_release=op_release, tensor_ready=tuple(ready), tensor_tail=tuple(tail), deadlines=deadlines,
                    link_holds=holds)
    if bridge.problem.splits:
        _, smap = expand_splits(bridge.problem, tuple(split_factors))
        ht = ht.expanded(bridge.problem, smap)
    return ht


@dataclass(frozen=True)
class HeldLevels(DeviceLevels):
    """A device's level plan re-solved with its link transfers' ends as link holds (shared
    bandwidth): ``link_order`` gives each transfer's planned start (device cycles) by
    :func:`~planner.memory.shared_bandwidth.transfer_key`, so the re-timing's gate keeps the
    device's order with its transfers in it (:mod:`planner.memory.shared_bandwidth`)."""

    link_order: tuple[tuple[str, int], ...] = ()


def _link_holds(plan: Plan, hardware: Hardware, lv: DeviceLevels, tails: Mapping[str, int],
                round_trips: Mapping[str, tuple[int, Mapping[str, int]]]) -> tuple[LinkHold, ...]:
    """Under shared bandwidth, every transfer into or out of ``lv``'s device as a link hold of its
    main memory (:mod:`solvers.memory.levels.link_holds`, device cycles): its share
    (:func:`~planner.memory.shared_bandwidth.transfer_share`) for its duration; a receive before
    its destination op and the copies it brings, from its head (the end of its source op and of
    the link's previous transfer elsewhere in ``plan``); a send after its source op and its slow
    copies, its tail the longest path after it (``tails``, :func:`critical_tails`); one after
    the other on a link. A transfer in ``round_trips`` (it waits, through the other devices, for
    transfers out of this device) takes its head from there (device cycles, the device's own
    transfers at 0) and starts at least each lag after those transfers' holds start."""
    bridge = _two_level_bridge(lv)  # an N-level plan's holds: over its base, index for index
    dev = bridge.device
    d = dev.name
    bandwidth = {lk.name: lk.bandwidth_bytes_per_s for lk in hardware.links}
    src_end: dict[tuple[str, str], int] = {}
    for o in plan.ops:
        key = (o.device, o.name.split("#")[0])
        src_end[key] = max(src_end.get(key, 0), o.end_cycle)
    ops = {name: i for i, name in enumerate(bridge.ops)}
    previous: dict[str, int] = {}  # link -> the transfer before, in the plan's order on it
    index: dict[int, int] = {}  # transfer -> its hold
    holds: list[LinkHold] = []
    for k in sorted(range(len(plan.transfers)), key=lambda k: (plan.transfers[k].start_cycle, k)):
        t = plan.transfers[k]
        before, previous[t.link] = previous.get(t.link), k
        if d not in (t.src_device, t.dst_device):
            continue
        head = max(0, plan.transfers[before].end_cycle if before is not None and before not in index else 0)
        common = dict(duration_cycles=_to_device(t.duration_cycles, hardware, dev), name=transfer_key(t),
                      shares=_end_share(bandwidth[t.link], lv, hardware),
                      after=index.get(before, -1) if before is not None else -1)
        if t.dst_device == d:
            head = max(head, src_end.get((t.src_device, t.src_op), 0))
            hold = LinkHold("recv", head=_to_device(head, hardware, dev), op=ops.get(t.dst_op, -1),
                            tensors=tuple(i for i, lt in enumerate(bridge.tensors)
                                          if lt.role == "received" and lt.transfer == (t.src_op, t.dst_op)), **common)
        else:
            hold = LinkHold("send", head=_to_device(head, hardware, dev), op=ops.get(t.src_op, -1),
                            tail=_to_device(tails[f"xfer:{k}"] - t.duration_cycles, hardware, dev),
                            tensors=tuple(i for i in sorted(bridge.sent) if bridge.tensors[i].tensor in t.tensors),
                            **common)
        index[k] = len(holds)
        holds.append(hold)
    by_name = {h.name: j for j, h in enumerate(holds)}
    for j, h in enumerate(holds):
        if h.name in round_trips:
            head, lags = round_trips[h.name]
            holds[j] = replace(h, head=head, lags=tuple((by_name[x], lag) for x, lag in sorted(lags.items())
                                                        if x in by_name and by_name[x] != j))
    return tuple(holds)


def _end_share(link_bytes_per_s: int, lv, hardware: Hardware) -> int:
    """A link transfer end's main-memory shares on ``lv``'s device (two-level or N-level plan)."""
    if isinstance(lv, HierarchyLevels):
        return n_level_transfer_share(link_bytes_per_s, lv.bridge.problem, hardware.device(lv.device))
    return transfer_share(link_bytes_per_s, lv)


def round_trips(spine: Plan, graph, hardware: Hardware, others: Mapping[str, DeviceLevels],
                lv: DeviceLevels) -> dict[str, tuple[int, dict[str, int]]]:
    """Per transfer into or out of ``lv``'s device (by :func:`~planner.memory.shared_bandwidth.transfer_key`)
    that waits, through the other devices (``others``' plans, the rest in main memory), for a
    transfer out of it: its earliest start with this device's transfers out at cycle 0 and its
    own ops left out, and per such transfer out the longest wait from its start to this one's
    start (durations, device cycles rounded down), as in :func:`sent_deadlines`, and at least the
    transfer out's duration plus what runs between the two needs of any other device's main
    memory (:func:`_share_floor`). The heads of a round trip then move with the device's own
    sends instead of staying where the current plan has them."""
    dev = lv.bridge.device
    d = dev.name
    acts, sequences, transfers = mixed_activities(spine, graph, hardware, others)
    succ, duration = _successors(acts, sequences, lambda a: a.resource.startswith(f"stream:{d}:"))
    shares = _main_shares(spine, graph, hardware, others, d, transfers, duration)
    resource = {a.name: a.resource for a in acts}
    preds: dict[str, list[str]] = {n: [] for n in succ}
    for n, ms in succ.items():
        for m in ms:
            preds[m].append(n)
    order = _topological(succ)
    earliest = {n: 0 for n in order}
    for n in order:
        for m in succ[n]:
            if m in earliest:
                earliest[m] = max(earliest[m], earliest[n] + duration[n])
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for k, t in enumerate(transfers):
        if t.src_device != d:
            continue
        longest = _longest_from(f"xfer:{k}", order, succ, duration)
        after = _reachable(f"xfer:{k}", succ)
        for k2, back in enumerate(transfers):
            name = f"xfer:{k2}"
            if k2 == k or d not in (back.src_device, back.dst_device) or name not in longest:
                continue
            head, lags = out.setdefault(transfer_key(back), (_to_device(earliest.get(name, 0), hardware, dev), {}))
            # what runs between the two holds shares the other devices' main memory too
            between = after & _reachable(name, preds)
            lag = _to_device(max(longest[name] - duration[name],
                                 duration[f"xfer:{k}"] + _share_floor(between, shares, duration, resource)), hardware, dev)
            lags[transfer_key(t)] = max(lags.get(transfer_key(t), 0), lag)
    return out


def _successors(acts, sequences: Mapping[str, tuple[str, ...]], skip) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The activity graph without the activities ``skip`` names: successors (a dependency's
    waiters, a sequence's next) and durations."""
    duration = {a.name: a.duration for a in acts if not skip(a)}
    succ: dict[str, list[str]] = {n: [] for n in duration}
    for a in acts:
        if a.name in duration:
            for dep in a.deps:
                if dep in duration:
                    succ[dep].append(a.name)
    for order in sequences.values():
        for a, b in zip(order, order[1:]):
            if a in duration and b in duration:
                succ[a].append(b)
    return succ, duration


def _topological(succ: Mapping[str, list[str]]) -> list[str]:
    """Kahn's order (deterministic: it follows the order of ``succ``); a node on a cycle is left out."""
    missing = {n: 0 for n in succ}
    for n in succ:
        for m in succ[n]:
            missing[m] += 1
    ready = sorted(n for n, k in missing.items() if k == 0)
    order = []
    while ready:
        n = ready.pop()
        order.append(n)
        for m in succ[n]:
            missing[m] -= 1
            if missing[m] == 0:
                ready.append(m)
    return order


def sent_deadlines(spine: Plan, graph, hardware: Hardware, others: Mapping[str, DeviceLevels],
                   lv: DeviceLevels) -> tuple[SentDeadline, ...]:
    """The sent-tensor deadlines of ``lv``'s device when the other devices run ``others``' plans
    (the rest in main memory), over the bridge's (unsplit) problem.

    The whole plan's re-timing (:func:`planner.memory.plan_activities`) without this device's
    activities: from each transfer out of it, every transfer back into it that waits on it (its
    dependencies and every resource's fixed order, through the other devices' ops, DMAs and
    links), and the longest such wait in durations (transfer start to arrival, rounded down to
    device cycles). The ops the arrival releases, and the prefetches of the copy it brings,
    then wait for the sent tensor's slow copy by at least that lag: a plan of this device that
    copies it out later deadlocks with ``others``. Per sent tensor and stream only the
    deadlines no earlier op of the stream already implies (a later op starts later) are kept.
    """
    bridge = lv.bridge.base if isinstance(lv, HierarchyLevels) else lv.bridge  # index for index
    dev = bridge.device
    d = dev.name
    acts, sequences, transfers = mixed_activities(spine, graph, hardware, others)
    succ, duration = _successors(acts, sequences, lambda a: a.resource.startswith(f"stream:{d}:"))
    order = _topological(succ)
    sent_index: dict[str, list[int]] = {}
    for i in bridge.sent:
        sent_index.setdefault(bridge.tensors[i].tensor, []).append(i)
    best: dict[tuple[int, int, int], int] = {}  # (sent tensor, op, received tensor) -> lag
    for k, t in enumerate(transfers):
        if t.src_device != d or not any(x in sent_index for x in t.tensors):
            continue
        longest = _longest_from(f"xfer:{k}", order, succ, duration)
        for k2, back in enumerate(transfers):
            if back.dst_device != d or f"xfer:{k2}" not in longest:
                continue
            lag = _to_device(longest[f"xfer:{k2}"], hardware, dev)
            events = [(bridge.ops.index(back.dst_op), -1)] + [
                (-1, r) for r, lt in enumerate(bridge.tensors)
                if lt.role == "received" and lt.transfer == (back.src_op, back.dst_op)]
            for x in t.tensors:
                for i in sent_index.get(x, ()):
                    for op, received in events:
                        key = (i, op, received)
                        best[key] = max(best.get(key, 0), lag)
    return _undominated(bridge.problem, best)


def _longest_from(source: str, order: list[str], succ: Mapping[str, list[str]],
                  duration: Mapping[str, int]) -> dict[str, int]:
    """Per node reachable from ``source``: the longest path from ``source``'s start to its end."""
    if source not in order:  # on a cycle: the whole plan could not have been re-timed
        return {}
    longest = {source: duration[source]}
    for n in order[order.index(source):]:
        if n in longest:
            for m in succ[n]:
                longest[m] = max(longest.get(m, 0), longest[n] + duration[m])
    return longest


def _undominated(problem, best: Mapping[tuple[int, int, int], int]) -> tuple[SentDeadline, ...]:
    """The deadlines as rows, dropping an op's when an earlier op of its stream has a lag at least as large."""
    rows = []
    reach: dict[tuple[int, int], int] = {}  # (sent tensor, stream) -> the largest lag so far
    for (i, op, received), lag in sorted(best.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if op >= 0:
            key = (i, problem.stream_of(op))
            if key in reach and reach[key] >= lag:
                continue
            reach[key] = lag
            rows.append(SentDeadline(i, op=op, lag_cycles=lag))
        else:
            rows.append(SentDeadline(i, received=received, lag_cycles=lag))
    return tuple(rows)


def shortest_op_cycles(bridge) -> dict[str, int]:
    """Per op of the bridge's device: a lower bound on its device cycles in any memory plan
    (:func:`~solvers.memory.levels.validate.op_duration_lower_bounds`: every byte it can hold
    at the faster level). An op a split may cut runs in portions whose fast bytes each fit, not
    together, so its bound drops the capacity (all its bytes at the faster level); the sum of
    its portions is at least that (splitting never lowers compute in this ISA, a weight is
    read by every portion, and a sum of ceilings is at least the ceiling of the sum)."""
    problem = bridge.problem
    bounds = op_duration_lower_bounds(problem)
    split_ops = {i for g in problem.splits for i in range(g.first_op, g.last_op + 1)}
    if split_ops:
        roomy = replace(problem, splits=(), capacity_bytes=(sum(problem.tensor_bytes) + 1,
                                                           problem.capacity_bytes[1]), fast_only_ops=())
        free = op_duration_lower_bounds(roomy)
        bounds = tuple(min(b, free[i]) if i in split_ops else b for i, b in enumerate(bounds))
    return {op: bounds[i] for i, op in enumerate(bridge.ops)}


# Per op, at most this many level assignments of its tensors are enumerated; beyond, the
# fractional relaxation (fastest levels filled first) stands in.
ANY_LEVEL_ASSIGNMENTS = 4096


def any_level_op_cycles(bridge) -> dict[str, int]:
    """Per op of the bridge's device: a lower bound on its device cycles in any plan over its
    levels from the fast one on (two-level plans included).

    The N-level roofline is ``max(compute, sum over levels of ceil(B_l / bw_l))``, and the bytes
    an op touches at one level are live there together, so at most that level's full capacity:
    the least over every level of every tensor it touches (each whole), or with more than
    :data:`ANY_LEVEL_ASSIGNMENTS` assignments the fractional relaxation (the fastest levels
    filled first, each up to its capacity; a sum of ceilings is at least the ceiling of the sum).
    An op a split may cut runs in portions whose bytes fit one at a time: it gets every byte at
    the fastest level (its portions together move at least the op's bytes, as in
    :func:`shortest_op_cycles`).

    Examples
    --------
    See ``tests/planner/memory/test_n_level_linked.py`` (hand-checked and against every assignment).
    """
    problem, dev = bridge.problem, bridge.device
    profile = dev.profile
    names = [m.name for m in profile.memory]
    main = profile.main_memory.name
    levels = [(Fraction(m.bandwidth_bytes_per_s, profile.clock_hz),
               max(m.capacity_bytes, dev.memory_capacity_bytes) if m.name == main else m.capacity_bytes)
              for m in profile.memory[names.index(bridge.fast_level):]]
    split_ops = {i for g in problem.splits for i in range(g.first_op, g.last_op + 1)}
    accesses = problem.op_accesses()
    out = {}
    for i, op in enumerate(bridge.ops):
        sizes = [problem.tensor_bytes[t] for t in sorted({t for t, _ in accesses[i]})]
        if i in split_ops:
            memory = math.ceil(Fraction(sum(sizes)) / max(rate for rate, _ in levels))
        elif len(levels) ** len(sizes) <= ANY_LEVEL_ASSIGNMENTS:
            memory = _least_assignment(sizes, levels)
        else:
            memory = _least_fractional(sum(sizes), levels)
        out[op] = max(problem.compute_cycles[i], memory)
    return out


def _least_assignment(sizes: list[int], levels: list[tuple[Fraction, int]]) -> int:
    """The least ``sum over levels of ceil(load / rate)`` over every level of each size (whole),
    each level's load at most its capacity (0 if nothing fits: no bound)."""
    best = None
    for choice in itertools.product(range(len(levels)), repeat=len(sizes)):
        load = [0] * len(levels)
        for size, lv in zip(sizes, choice):
            load[lv] += size
        if any(b > cap for b, (_, cap) in zip(load, levels)):
            continue
        cycles = sum(math.ceil(Fraction(b) / rate) for b, (rate, _) in zip(load, levels) if b)
        best = cycles if best is None else min(best, cycles)
    return best or 0


def _least_fractional(total: int, levels: list[tuple[Fraction, int]]) -> int:
    """The fractional relaxation of :func:`_least_assignment` (0 if the levels cannot hold ``total``)."""
    cycles, left = Fraction(0), total
    for rate, capacity in sorted(levels, reverse=True):
        take = min(left, capacity)
        cycles += Fraction(take) / rate
        left -= take
    return 0 if left else math.ceil(cycles)


def memory_plan_bound(spine: Plan, graph, hardware: Hardware, bridges: Mapping[str, Any],
                      any_level: Collection[str] = ()) -> int:
    """The larger of :func:`memory_plan_bound_parts`: a lower bound on the makespan of every
    memory plan of ``spine``'s placement and orders (plan cycles)."""
    path, shared = memory_plan_bound_parts(spine, graph, hardware, bridges, any_level)
    return max(path, shared or 0)


def memory_plan_bound_parts(spine: Plan, graph, hardware: Hardware, bridges: Mapping[str, Any],
                            any_level: Collection[str] = (),
                            hierarchies: Mapping[str, Any] | None = None) -> tuple[int, int | None]:
    """Two lower bounds (the paths and links; main memory's share-cycles, None without
    ``bandwidth: shared``) on the makespan of every memory plan of ``spine``'s placement and orders
    (plan cycles), whichever plan each device in ``bridges`` uses (main memory included).

    The first, a lower bound on the makespan of every memory plan of ``spine``'s placement and orders
    (plan cycles), whichever plan each device in ``bridges`` uses (main memory included).

    The longest path through the whole plan's re-timing graph (:func:`planner.memory.plan_activities`
    with no device planned: every stream's fixed order, the data dependencies and the link
    transfers, each after its producer): an op of a planned device at its shortest duration in
    any memory plan (:func:`shortest_op_cycles`, converted to plan cycles rounding up like the
    re-timing, and never above its duration in main memory), any other op and every transfer at
    its own. A split op's portions run in series within their group, so a chain through the
    group is no longer than the portions (see :func:`shortest_op_cycles`). DMA engines and
    capacity are relaxed away, so only waits every plan has are counted; each link then runs
    its transfers one at a time (:func:`link_serial_bound`).

    A device in ``any_level`` may also use an N-level plan (its other levels between the fast
    one and main memory): its ops count at :func:`any_level_op_cycles` and its link transfers
    add nothing at its end (:func:`_with_link_ends` reasons over two levels); with its
    ``HierarchyBridge`` in ``hierarchies`` its ops get every level choice of their accesses in
    the paths (:mod:`planner.memory.hierarchy_access_paths`).

    The second (:func:`planner.memory.shared_bound.shared_main_memory_bound`) counts only where
    some two-level device's problem shares bandwidth.
    """
    acts, sequences, transfers = plan_activities(spine, graph, hardware, {})
    device_of = {o.name: o.device for o in spine.ops}
    shortest = {d: any_level_op_cycles(b) if d in any_level else shortest_op_cycles(b) for d, b in bridges.items()}
    two_level = {d: b for d, b in bridges.items() if d not in any_level}

    def cycles(a) -> int:
        if not a.name.startswith("op:"):
            return a.duration
        op = a.name[3:]
        d = device_of[op]
        if d not in shortest or op not in shortest[d]:
            return a.duration
        return min(a.duration, hardware.to_timeline_cycles(shortest[d][op], hardware.device(d)))

    main = {a.name: a.duration for a in acts}  # everything in main memory: the schedule's durations
    acts = _with_link_ends([replace(a, duration=cycles(a)) for a in acts], main, transfers, two_level, hardware)
    succ, duration = _successors(acts, sequences, lambda a: False)
    order = _topological(succ)
    end: dict[str, int] = {}
    for n in reversed(order):  # reversed Kahn: every successor first; longest path to the end
        end[n] = duration[n] + max((end[m] for m in succ[n]), default=0)
    paths = access_choice_bound(order, succ, duration, end,
                                PathContext(two_level, hardware, transfers, device_of, main,
                                            {d: h for d, h in (hierarchies or {}).items() if d in any_level}))
    path = max([*end.values(), link_serial_bound(acts, order, succ, duration, end), paths], default=0)
    if not any(b.problem.shared_bandwidth for b in two_level.values()):
        return path, None
    return path, shared_main_memory_bound(order, succ, duration, end, graph, hardware, spine.ops, transfers,
                                          two_level, main, any_level, hierarchies)


def link_serial_bound(acts, order: list[str], succ: Mapping[str, list[str]], duration: Mapping[str, int],
                      end: Mapping[str, int]) -> int:
    """Per link, its transfers one at a time (:func:`~solvers.memory.levels.heads_tails.one_machine_lower_bound`),
    each after its head (the longest path to its start) and before its tail (the longest path
    from its end, ``end`` less its duration): the largest over the links.

    Every memory plan's re-timing runs a link's transfers one at a time and respects every edge
    of the relaxed graph (its durations are the least any plan has), so each head and tail holds
    in every plan and so does the one-machine bound.

    Examples
    --------
    Two transfers a and b on one link after op s (3 cycles), each 4 cycles, each then an op of 2:
    the longest path is 3 + 4 + 2 = 9, the link makes it 3 + 4 + 4 + 2 = 13.

    >>> acts = [Activity("s", "stream", 3), Activity("a", "link:l", 4, ("s",)), Activity("b", "link:l", 4, ("s",)),
    ...         Activity("x", "stream2", 2, ("a",)), Activity("y", "stream3", 2, ("b",))]
    >>> succ = {"s": ["a", "b"], "a": ["x"], "b": ["y"], "x": [], "y": []}
    >>> duration = {a.name: a.duration for a in acts}
    >>> end = {"x": 2, "y": 2, "a": 6, "b": 6, "s": 9}
    >>> link_serial_bound(acts, ["s", "a", "b", "x", "y"], succ, duration, end)
    13
    """
    head = {n: 0 for n in order}
    for n in order:
        for m in succ[n]:
            head[m] = max(head[m], head[n] + duration[n])
    links: dict[str, list[tuple[int, int, int]]] = {}
    for a in acts:
        if a.resource.startswith("link:") and a.name in head:
            links.setdefault(a.resource, []).append((head[a.name], duration[a.name], end[a.name] - duration[a.name]))
    return max((one_machine_lower_bound(jobs) for jobs in links.values() if len(jobs) > 1), default=0)


def bound_entry(path_bound_cycles: int, plan: Plan, shared_bound_cycles: int | None = None) -> dict[str, Any]:
    """memory.json's ``cross_device_bound``: the best proven bound on the memory plans of the
    spine's placement and orders (the largest of :func:`memory_plan_bound_parts` and ``plan``'s
    own bound, which holds over every plan), and the written ``plan``'s gap to it. The shared
    term is written only under ``bandwidth: shared`` (``shared_bound_cycles`` not None).

    Examples
    --------
    >>> p = Plan("s", "latency", "FEASIBLE", 110, 80, 0.27, 110, 10**9, (), ())
    >>> bound_entry(100, p)
    {'bound_cycles': 100, 'path_bound_cycles': 100, 'spine_bound_cycles': 80, 'makespan_cycles': 110, 'gap': 0.090909}
    >>> bound_entry(100, p, 105)["bound_cycles"]
    105
    """
    spine_bound = None if plan.bound is None else int(plan.bound)
    bound = max(path_bound_cycles, spine_bound or 0, shared_bound_cycles or 0)
    makespan = plan.makespan_cycles
    shared = {} if shared_bound_cycles is None else {"shared_bound_cycles": shared_bound_cycles}
    return {"bound_cycles": bound, "path_bound_cycles": path_bound_cycles, **shared, "spine_bound_cycles": spine_bound,
            "makespan_cycles": makespan, "gap": round(max(0, makespan - bound) / max(1, makespan), 6)}


def _with_link_ends(acts, main: Mapping[str, int], transfers, bridges: Mapping[str, Any], hardware: Hardware) -> list:
    """The bound's activities with what every memory plan adds at both ends of a link transfer.

    A sent tensor is in main memory before its transfer starts: written there by its producer
    (which then takes at least its shortest duration with that write slow) or evicted after it
    (at least one DMA), or everything stays in main memory (the producer's own duration). A
    ``send:<k>`` node after the producer holds the least of these beyond the producer's own
    bound. Likewise a received copy arrives in main memory: its consumer reads it there, or
    after a prefetch, or runs in main memory; ``recv:<k>`` sits between the transfer and the
    consumer. Split ops keep no such node (their portions write and read in part). An op that
    both receives and sends holds both extras only up to its main-memory duration
    (:func:`_capped_send`)."""
    by_name = {a.name: a for a in acts}
    extra: list = []
    received = {}  # consumer op -> the largest recv extra before it
    for t in transfers:
        recv = _recv_cycles(t, bridges, hardware, by_name, main)
        received[t.dst_op] = max(received.get(t.dst_op, 0), recv)
    for k, t in enumerate(transfers):
        xfer = f"xfer:{k}"
        send = _capped_send(t, _send_cycles(t, bridges, hardware, by_name, main), received, by_name, main)
        if send:
            extra.append(Activity(f"send:{k}", "bound", send, (f"op:{t.src_op}",)))
            by_name[xfer] = replace(by_name[xfer], deps=by_name[xfer].deps + (f"send:{k}",))
        recv = _recv_cycles(t, bridges, hardware, by_name, main)
        if recv:
            extra.append(Activity(f"recv:{k}", "bound", recv, (xfer,)))
            consumer = by_name[f"op:{t.dst_op}"]
            by_name[consumer.name] = replace(consumer, deps=tuple(f"recv:{k}" if x == xfer else x
                                                                  for x in consumer.deps))
    return list(by_name.values()) + extra


def _capped_send(t, send: int, received: Mapping[str, int], by_name, main_of: Mapping[str, int]) -> int:
    """The send extra of ``t``'s producer, at most what is left of its main-memory duration after
    its own bound and its largest recv extra: each extra is a least over the producer's choices
    that include keeping the device in main memory, where the two are not both paid (with both
    the path through the op was one cycle above a kept plan on a random spec)."""
    recv = received.get(t.src_op, 0)
    if not recv or not send:
        return send
    producer = by_name[f"op:{t.src_op}"]
    return min(send, max(0, main_of[producer.name] - producer.duration - recv))


def _least_beyond(bridge, op: str, tensor: int, main_cycles: int, own_cycles: int, hardware: Hardware) -> int:
    """Plan cycles that ``op`` with ``tensor`` in main memory (read or written there, or moved by
    one DMA next to it, or everything in main memory) needs at least beyond ``own_cycles``."""
    problem, dev = bridge.problem, bridge.device
    i = bridge.ops.index(op)
    if any(g.first_op <= i <= g.last_op for g in problem.splits):
        return 0
    conv = lambda c: hardware.to_timeline_cycles(c, dev)  # noqa: E731 - device to plan cycles, rounding up
    shortest = shortest_op_cycles(bridge)[op]
    options = [main_cycles, conv(shortest) + conv(problem.dma_cycles(tensor))]
    slow = _shortest_with_slow(problem, i, tensor)
    if slow is not None:
        options.append(conv(slow))
    return max(0, min(options) - own_cycles)


def _send_cycles(t, bridges, hardware: Hardware, by_name, main_of: Mapping[str, int]) -> int:
    bridge = bridges.get(t.src_device)
    if bridge is None:
        return 0
    producer = by_name[f"op:{t.src_op}"]
    main = main_of[producer.name]
    sent = [i for i in bridge.sent if bridge.tensors[i].tensor in t.tensors]
    return max((_least_beyond(bridge, t.src_op, i, main, producer.duration, hardware) for i in sent), default=0)


def _recv_cycles(t, bridges, hardware: Hardware, by_name, main_of: Mapping[str, int]) -> int:
    bridge = bridges.get(t.dst_device)
    if bridge is None:
        return 0
    consumer = by_name[f"op:{t.dst_op}"]
    main = main_of[consumer.name]
    received = [i for i, lt in enumerate(bridge.tensors) if lt.role == "received" and lt.transfer == (t.src_op, t.dst_op)]
    return max((_least_beyond(bridge, t.dst_op, i, main, consumer.duration, hardware) for i in received), default=0)


def _shortest_with_slow(problem, op: int, tensor: int) -> int | None:
    """A lower bound on op's device cycles when ``tensor``'s access is slow (None: a fast-only
    op, or too many accesses to enumerate): the other tensors' bytes split between the levels
    as in :func:`~solvers.memory.levels.op_duration_lower_bounds`."""
    if op in problem.fast_only_ops:
        return None
    sizes = [problem.tensor_bytes[u] for u, _ in problem.op_accesses()[op] if u != tensor and problem.tensor_bytes[u]]
    if len(sizes) > 16:
        return None
    cap = problem.capacity_bytes[0]
    sums = {0}
    for b in sizes:
        sums |= {x + b for x in sums if x + b <= cap}
    return min(problem.op_cycles(op, fb, sum(sizes) - fb + problem.tensor_bytes[tensor]) for fb in sums)


def device_slack(plan: Plan, graph, device: str) -> int:
    """How many cycles ``device``'s ops could all slip without delaying the plan's end: the
    smallest ``makespan - start - tail`` over its ops (0: the critical path runs through it)."""
    tails = critical_tails(plan, graph, "")
    slack = [plan.makespan_cycles - start - tails[f"op:{o.device}:{o.name}"]
             for o in plan.ops if o.device == device
             for start in (o.start_cycle,)]
    return max(0, min(slack, default=0))


class _Evaluator:
    """Whole-plan makespans of per-device choices (memoised: assembling re-times the whole plan)."""

    def __init__(self, spine: Plan, graph, hardware: Hardware, alignment: int, stats: Mapping[str, Mapping],
                 gangs: Sequence[Sequence[str]] = ()) -> None:
        self.spine, self.graph, self.hardware, self.alignment, self.stats = spine, graph, hardware, alignment, stats
        self.gangs = gangs  # every combination starts each gang on one cycle
        self.cache: dict[tuple, tuple[Plan, Any]] = {}
        self.deadlocked: set[tuple] = set()  # the keys whose orders waited on each other
        self.shared_bandwidth = False  # devices left in main memory share it (bandwidth: shared)

    def __call__(self, levels: Mapping[str, tuple[DeviceLevels, Mapping]], key: tuple) -> tuple[Plan, Any] | None:
        """The re-timed plan and memory plan, or None when the combination's slow copies do not
        fit main memory (each device's plan was checked with the others in main memory only) or
        its devices' fixed orders wait on each other (a sent tensor copied to main memory after
        an op that waits for what its receiver sends back)."""
        if key not in self.cache:
            try:
                self.cache[key] = assemble_mixed(self.spine, self.graph, self.hardware,
                                           {d: lv for d, (lv, _) in levels.items()}, self.alignment,
                                           {d: st for d, (_, st) in levels.items()}, self.gangs,
                                           self.shared_bandwidth)
            except (InfeasibleError, UnsupportedError) as e:  # Unsupported: an N-level plan (mixed_assemble)
                log.info("memory plans %s do not fit together: %s", key, e)
                self.cache[key] = None
            except RetimingDeadlock as e:  # each device's order is valid alone, not together
                log.info("memory plans %s wait on each other across devices: %s", key, e)
                self.cache[key] = None
                self.deadlocked.add(key)
        return self.cache[key]


def choose_across_devices(spine: Plan, graph, hardware: Hardware, candidates: Mapping[str, Mapping[str, DeviceLevels]],
                          alignment: int, stats: Mapping[str, Mapping], budgets: Mapping[str, float], seed: int,
                          search: str,
                          offsets_of: Callable[[Any, Any], tuple[tuple[int, ...], dict] | None],
                          gangs: Sequence[Sequence[str]] = ()) -> CrossDeviceChoice:
    """The best combination found (see the module docstring). ``candidates`` per device its level
    plans by name (``"memory plan"`` first); ``budgets`` per device its memory budget in seconds;
    ``offsets_of(bridge, solution)`` packs a new solution's fast buffers: ``(offsets, stats)``
    (the fast capacity and footprint memory.json states), or None when they do not fit. Every
    combination starts each of ``gangs`` on one cycle (:func:`planner.memory.assemble.assemble`)."""
    evaluate = _Evaluator(spine, graph, hardware, alignment, stats, gangs)
    evaluate.shared_bandwidth = _shares_bandwidth(candidates)  # a device left in main memory shares it too
    names = list(candidates)
    # per device its floor: main memory, or everything at home where it reads homed tensors
    floor = {d: ALL_HOME if ALL_HOME in candidates[d] else MAIN for d in names}
    # per device, per candidate: (its level plan, the stats memory.json gives it), None for main
    options: dict[str, dict[str, tuple[DeviceLevels, Mapping] | None]] = {
        d: {**({MAIN: None} if floor[d] == MAIN else {}),
            **{c: (lv, _candidate_stats(c, lv, stats.get(d, {}))) for c, lv in candidates[d].items()}}
        for d in names}

    def levels_of(choice: Mapping[str, str]) -> dict[str, tuple[DeviceLevels, Mapping]]:
        return {d: options[d][c] for d, c in choice.items() if options[d][c] is not None}

    def run(choice: Mapping[str, str]) -> Plan | None:
        found = evaluate(levels_of(choice), tuple(sorted(choice.items())))
        return None if found is None else found[0]

    def span(choice: Mapping[str, str]) -> float:
        plan = run(choice)
        return math.inf if plan is None else plan.makespan_cycles

    none = dict(floor)  # always fits: no level plan at all (or every tensor at its home)
    seen = ([_seen_transfers(spine, graph, hardware, options, run(none), budgets, seed, search, offsets_of)]
            if evaluate.shared_bandwidth else [])  # sharing: every plan also solved seeing its transfers
    choice = dict(min(_starts(floor) + seen, key=lambda c: (span(c), sum(v == floor[d] for d, v in c.items()))))
    stops: list[str | None] = []
    resolved: dict[str, tuple[int | None, int | None, int | None]] = {}
    resolved_n: dict[str, tuple[int | None, int | None, int | None]] = {}  # the N-level re-solves'
    resolve_deadlocks: list[str] = []
    passes = 0
    for passes in range(1, MAX_PASSES + 1):
        changed = False
        for d in names:
            current = run(choice)
            lv = _two_level_incumbent(options[d], choice[d])
            others = {e: lv_e for e, (lv_e, _) in levels_of(choice).items() if e != d}
            deadlines = sent_deadlines(spine, graph, hardware, others, lv or options[d]["memory plan"][0])
            if lv is not None:  # over two levels (none where it reads homed tensors)
                trips = round_trips(spine, graph, hardware, others, lv) if lv.expanded.shared_bandwidth else None
                found, stop, resolved[d] = _resolve(lv, current, graph, hardware, budgets[d] * HEADS_TAILS_SHARE,
                                                    seed, search, offsets_of, deadlines, trips, spine, others)
                stops.append(stop)
                resolve_deadlocks += _offer(options[d], f"{HEADS_TAILS} {passes}", found, d, choice, span,
                                            evaluate.deadlocked)  # never, if the deadlines are right (tested)
            if N_LEVELS in options[d] or lv is None:  # its N-level plan re-solved under the same heads, tails and deadlines
                found, stop, resolved_n[d] = _resolve_n_levels(_n_level_incumbent(options[d], choice[d]), current, graph,
                                                               hardware, budgets[d] * HEADS_TAILS_SHARE, seed, search,
                                                               deadlines, (spine, others))
                stops.append(stop)
                resolve_deadlocks += _offer(options[d], f"{N_LEVELS} {HEADS_TAILS} {passes}", found, d, choice, span,
                                            evaluate.deadlocked)
            best = min(options[d], key=lambda c: (span({**choice, d: c}), c != choice[d], c))
            if span({**choice, d: best}) < current.makespan_cycles:
                choice[d], changed = best, True
        if not changed:
            break
    plan, memory = evaluate(levels_of(choice), tuple(sorted(choice.items())))
    main_makespan = run(none).makespan_cycles
    kept = levels_of(choice)
    explanations = {d: DeviceExplanation(
        plan=_plan_label(choice[d]), own_memory_cycles=stats.get(d, {}).get("level_makespan_device_cycles"),
        own_main_cycles=stats.get(d, {}).get("all_in_main_makespan_device_cycles"),
        alone_makespan=_finite(span({**none, d: "memory plan"})), main_makespan=main_makespan,
        slack_cycles=device_slack(plan, graph, d), n_level_cycles=_n_level_cycles(candidates[d]),
        **_resolved_figures(d, kept.get(d), resolved, resolved_n)) for d in names}
    path, shared = _choice_bound(spine, graph, hardware, candidates)
    return CrossDeviceChoice(dict(choice), {d: lv for d, (lv, _) in levels_of(choice).items()}, plan, memory, passes,
                             explanations, tuple(stops), tuple(resolve_deadlocks), max(path, shared or 0), path, shared)


def _resolved_figures(device: str, kept, two: Mapping[str, tuple], n: Mapping[str, tuple]) -> dict[str, Any]:
    """The ``resolved_*`` fields of a device's explanation: its N-level re-solve's figures when its
    kept plan is over N levels (or it had no two-level re-solve), else its two-level re-solve's."""
    names = ("resolved_cycles", "resolved_bound_cycles", "resolved_main_cycles")
    n_levels = device in n and (isinstance(kept and kept[0], HierarchyLevels) or device not in two)
    figures = n[device] if n_levels else two.get(device, (None,) * 3)
    return {**dict(zip(names, figures)), "resolved_levels": "all" if n_levels else None}


def _choice_bound(spine: Plan, graph, hardware: Hardware,
                  candidates: Mapping[str, Mapping[str, Any]]) -> tuple[int, int | None]:
    """:func:`memory_plan_bound_parts` over the devices of ``candidates``, each offered an N-level plan at any level."""
    bridges = {d: _two_level_bridge(c["memory plan"]) for d, c in candidates.items()}
    any_level = {d for d, c in candidates.items() if any(isinstance(lv, HierarchyLevels) for lv in c.values())}
    hierarchies = {d: next(lv.bridge for lv in c.values() if isinstance(lv, HierarchyLevels)) for d, c in candidates.items()
                   if d in any_level}
    return memory_plan_bound_parts(spine, graph, hardware, bridges, any_level, hierarchies)


def _shares_bandwidth(candidates: Mapping[str, Mapping[str, Any]]) -> bool:
    """``bandwidth: shared`` (one switch for the spec), read off the candidates' problems."""
    return any(lv.bridge.problem.shared_bandwidth if isinstance(lv, HierarchyLevels) else lv.expanded.shared_bandwidth
               for c in candidates.values() for lv in c.values())


SEEN_TRANSFERS = "heads/tails 0"


def _seen_transfers(spine: Plan, graph, hardware: Hardware, options: dict, main_plan: Plan,
                    budgets: Mapping[str, float], seed: int, search: str, offsets_of) -> dict[str, str]:
    """Under sharing, each device's memory plan re-solved with its link transfers as link holds,
    their heads, tails and round trips read off everything in main memory (``main_plan``; the
    other devices in main memory), as the Gauss-Seidel passes do from the current plan: the
    plain solve knows no transfer times. Offered as :data:`SEEN_TRANSFERS`; the start it
    returns takes it on every device that has one (else the memory plan)."""
    start = {}
    for d, row in options.items():
        lv = row["memory plan"][0]
        if isinstance(lv, HierarchyLevels):
            start[d] = "memory plan"
            continue
        deadlines = sent_deadlines(spine, graph, hardware, {}, lv)
        trips = round_trips(spine, graph, hardware, {}, lv)
        found, _, _ = _resolve(lv, main_plan, graph, hardware, budgets[d] * HEADS_TAILS_SHARE, seed, search,
                               offsets_of, deadlines, trips, spine, {})
        if found is not None:
            row[SEEN_TRANSFERS] = found
        start[d] = SEEN_TRANSFERS if found is not None else "memory plan"
    return start


def _two_level_incumbent(row: Mapping[str, tuple[DeviceLevels, Mapping] | None], chosen: str) -> DeviceLevels | None:
    """The two-level plan a device's heads/tails re-solve starts from: its chosen one, its
    memory plan when it is in main memory or on N levels (re-solved over two levels, the
    heads/tails model's); None for a device that reads homed tensors (every candidate over
    all its levels: a plan over two levels would not honour the homes)."""
    lv = (row[chosen] or row["memory plan"])[0]
    if not isinstance(lv, HierarchyLevels):
        return lv
    memory_plan = row["memory plan"][0]
    return None if isinstance(memory_plan, HierarchyLevels) else memory_plan


def _two_level_bridge(lv):
    """A candidate's two-level bridge (an N-level plan's base, index for index), which the bound reads."""
    return lv.bridge.base if isinstance(lv, HierarchyLevels) else lv.bridge


def _offer(row: dict, name: str, found, d: str, choice: Mapping[str, str], span, deadlocked) -> list[str]:
    """Add ``found`` (a re-solved plan and its stats, or None) to device ``d``'s candidates ``row``
    as ``name``; ``[d]`` when the whole plan with it deadlocks (its deadlines missed a wait), else []."""
    if found is None:
        return []
    row[name] = found
    trial = {**choice, d: name}
    return [d] if span(trial) == math.inf and tuple(sorted(trial.items())) in deadlocked else []


def _n_level_incumbent(row: Mapping[str, Any], current: str) -> HierarchyLevels:
    """The N-level plan a device's N-level re-solve starts from: its current one, if it uses one."""
    kept = row[current]
    return kept[0] if kept is not None and isinstance(kept[0], HierarchyLevels) else (
        row.get(N_LEVELS) or row["memory plan"])[0]


def _plan_label(candidate: str) -> str:
    """A candidate's name without its pass number (``heads/tails 2`` -> ``heads/tails``)."""
    for name in (HEADS_TAILS, f"{N_LEVELS} {HEADS_TAILS}"):
        if candidate.startswith(f"{name} "):
            return name
    return candidate


def _n_level_cycles(candidates: Mapping[str, Any]) -> int | None:
    """The N-level candidate's own makespan over every level (device cycles), if one is offered."""
    return next((lv.stats.get("level_makespan_device_cycles") for lv in candidates.values()
                 if isinstance(lv, HierarchyLevels)), None)


def _candidate_stats(name: str, lv, own: Mapping) -> Mapping:
    """The figures memory.json gives a device's candidate: the device's own for its memory plan,
    the N-level solve's for an N-level plan, none for the others."""
    if isinstance(lv, HierarchyLevels):
        return lv.stats
    return own if name == "memory plan" else {}


def _finite(value: float) -> int | None:
    return None if value == math.inf else int(value)


def _starts(floor: Mapping[str, str]) -> list[dict[str, str]]:
    """Where the iteration may start: every device's memory plan, none (each device at its
    ``floor``: main memory, or everything at home), and with at most
    :data:`MAX_SUBSET_DEVICES` devices every subset (one device's plan may only pay off
    together with another's, which single-device moves never find)."""
    names = list(floor)
    if len(names) > MAX_SUBSET_DEVICES:
        return [{d: "memory plan" for d in names}, dict(floor)]
    return [{d: ("memory plan" if bit else floor[d]) for d, bit in zip(names, bits)}
            for bits in itertools.product((True, False), repeat=len(names))]


def _resolve(lv: DeviceLevels, current: Plan, graph, hardware: Hardware, time_limit_s: float, seed: int,
             search: str, offsets_of, deadlines: tuple[SentDeadline, ...] = (),
             trips: Mapping[str, tuple[int, Mapping[str, int]]] | None = None,
             spine: Plan | None = None, others: Mapping[str, Any] | None = None
             ) -> tuple[tuple[DeviceLevels, Mapping] | None, str | None, tuple]:
    """``lv``'s device re-solved under the heads and tails of ``current`` and the sent-tensor
    ``deadlines`` (:func:`sent_deadlines`; its split factors kept; under sharing its tails also
    through ``others``' plans of ``spine``, :func:`shared_send_tails`):
    the new plan with its stats (None: nothing new that packs), how the solve stopped, and its
    figures (objective, lower bound, everything in main memory's objective)."""
    bridge = lv.bridge
    problem = lv.expanded
    ht = device_heads_tails(current, graph, hardware, lv, deadlines, trips, spine, others)
    incumbent = replace(lv.solution, split_factors=())
    opts = SolveOptions(time_limit_s=max(0.1, time_limit_s), num_workers=1, random_seed=seed, search=search)
    result = solve_heads_tails(problem, ht, opts, incumbent=incumbent)
    stop = result.stats.get("stopped_by")
    figures = (result.objective, result.bound, _all_slow_objective(problem, ht))
    if not result.status.has_solution:
        return None, stop, figures
    solution = with_split_factors(result.solution, lv.solution.split_factors)
    if not ht.link_holds and solution.in_fast == lv.solution.in_fast and solution.kept == lv.solution.kept and [
            (t.kind, t.tensor, t.gap, t.trigger_op, t.release_op) for t in solution.transfers] == [
            (t.kind, t.tensor, t.gap, t.trigger_op, t.release_op) for t in lv.solution.transfers]:
        return None, stop, figures  # the same decisions: nothing new to try (with link holds, its order is new)
    packed = offsets_of(bridge, solution)
    if packed is None:
        log.info("device %s: the heads/tails plan's fast buffers do not pack; not tried", bridge.device.name)
        return None, stop, figures
    offsets, offset_stats = packed
    levels = expand(bridge, solution, offsets)
    if ht.link_holds:  # its order with the transfers in it is kept in the re-timing
        levels = HeldLevels(**{f.name: getattr(levels, f.name) for f in fields(DeviceLevels)},
                            link_order=tuple((h.name, s) for h, s in zip(ht.link_holds, solution.link_starts)))
    return (levels, {
        "heads_tails_solver": result.solver_name, "heads_tails_status": result.status.value,
        "heads_tails_objective_device_cycles": result.objective, "heads_tails_bound_device_cycles": result.bound,
        "split_factors": list(solution.split_factors), **offset_stats}), stop, figures


def _all_slow_objective(problem, ht: HeadsTails) -> int | None:
    """Everything in main memory under ``ht`` (None: no such plan, or it breaks a deadline)."""
    all_slow = plan_all_slow(problem)
    if all_slow is None:
        return None
    try:
        return objective_cycles(problem, retime_heads_tails(problem, all_slow, ht), ht)
    except ValueError:
        return None


def _n_level_holds(current: Plan, spine: Plan, graph, hardware: Hardware, others: Mapping[str, Any],
                   hl: HierarchyLevels) -> tuple[tuple[LinkHold, ...], dict[str, int]]:
    """Under sharing, an N-level device's link transfers as link holds of its main level (as a
    two-level re-solve's, :func:`_link_holds`, over its base bridge), with their round trips
    (:func:`round_trips`: measured without the device's own activities, so the same for any of
    its plans, two-level or N-level) and the tails they were read with (sends' tails count the
    other devices' shares and DMA waits, :func:`shared_send_tails`)."""
    d = hl.device
    tails = shared_send_tails(critical_tails(current, graph, d), current, spine, graph, hardware, others, d)
    return _link_holds(current, hardware, hl, tails, round_trips(spine, graph, hardware, others, hl)), tails


def _resolve_n_levels(hl: HierarchyLevels, current: Plan, graph, hardware: Hardware, time_limit_s: float, seed: int,
                      search: str, deadlines: tuple[SentDeadline, ...] = (),
                      context: tuple[Plan, Mapping[str, Any]] | None = None
                      ) -> tuple[tuple[HierarchyLevels, Mapping] | None, str | None, tuple]:
    """``hl``'s device re-solved over all its levels under the heads and tails of ``current`` and the
    sent-tensor ``deadlines`` (its split factors kept; :mod:`~solvers.memory.levels.hierarchy_heads_tails`),
    under sharing (its problem shares; ``context``: the spine and the other devices' plans) with
    its link transfers as link holds (:func:`_n_level_holds`): the new plan with the figures
    memory.json gives it (None: no plan, or the same decisions), how the solve stopped, and its
    figures (objective, lower bound, everything at home's objective)."""
    bridge = hl.bridge
    factors = tuple(hl.solution.split_factors)
    problem = expand_hierarchy_splits(bridge.problem, factors)[0] if bridge.problem.splits else bridge.problem
    shared = context is not None and problem.shared_bandwidth
    holds, tails = _n_level_holds(current, context[0], graph, hardware, context[1], hl) if shared else ((), None)
    ht = bridge_heads_tails(current, graph, hardware, bridge.base, factors, deadlines, holds, tails)
    opts = SolveOptions(time_limit_s=max(0.1, time_limit_s), num_workers=1, random_seed=seed, search=search)
    result = solve_hierarchy_heads_tails(problem, ht, opts, incumbent=replace(hl.solution, split_factors=()))
    stop = result.stats.get("stopped_by")
    figures = (result.objective, result.bound, _all_home_objective(problem, ht))
    if not result.status.has_solution:
        return None, stop, figures
    solution = replace(result.solution, split_factors=factors)
    if not ht.link_holds and (solution.level, solution.kept) == (hl.solution.level, hl.solution.kept) and [
            m.key + (m.trigger_op, m.release_op) for m in solution.moves] == [
            m.key + (m.trigger_op, m.release_op) for m in hl.solution.moves]:
        return None, stop, figures  # the same decisions: nothing new to try (with link holds, its order is new)
    stats = {**hl.stats, "heads_tails_solver": result.solver_name, "heads_tails_status": result.status.value,
             "heads_tails_objective_device_cycles": result.objective,
             "heads_tails_bound_device_cycles": result.bound}
    order = tuple((h.name, s) for h, s in zip(ht.link_holds, solution.link_starts))  # the joint gate keeps it
    return (HierarchyLevels(bridge, solution, stats, order), stats), stop, figures


def _all_home_objective(problem, ht) -> int | None:
    """Everything at its home under ``ht`` (None: no such plan, or it breaks a deadline)."""
    at_home = plan_hierarchy_all_home(problem)
    if at_home is None:
        return None
    try:
        return hierarchy_objective(problem, retime_hierarchy_heads_tails(problem, at_home, ht), ht)
    except ValueError:
        return None
