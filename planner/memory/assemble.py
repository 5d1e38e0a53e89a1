"""Level solutions back to the user's world: op instances, buffers, DMAs, a re-timed plan.

Given each memory-planned device's :class:`~planner.memory.bridge.DeviceBridge` and a
:class:`~solvers.memory.levels.LevelSolution` (with fast-level offsets), this builds the
:class:`~planner.memory.plan.MemoryPlan` and the re-timed :class:`~planner.plan.Plan`
whose ops are the instances the binaries run. Durations are the ISA's, to the cycle:
an instance takes the level solver's roofline of the bytes it moves per level, converted
to the plan's timeline; a DMA the ISA's DMA time.

Capacity time ("points") to cycles: point ``2i+1`` is op i, point ``2i`` the gap before
it. A fast buffer over points ``[lo, hi)`` is allocated at the start of op i when
``lo = 2i+1`` and at the end of op ``i-1`` when ``lo = 2i`` (cycle 0 for ``i = 0``), and
freed at the start of op i when ``hi = 2i+1`` (the device's end for ``i = n``) and at the
end of op ``i-1`` when ``hi = 2i``. The map is monotone, so buffers disjoint in points
are disjoint in cycles and the offsets found over points stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from planner.graph.ir import Graph
from planner.hardware import Hardware
from planner.memory.addresses import Lifetime, assign_addresses
from planner.memory.bridge import DeviceBridge
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan, MemoryTransfer, OpAccess
from planner.memory.retime import Activity, list_schedule
from planner.memory.shared_bandwidth import bandwidth_gate, unplanned_shares
from planner.plan import PlacedOp, PlacedTransfer, Plan
from solvers.memory.levels import (
    LevelProblem, LevelSolution, TransferKind, expand_splits, fast_pieces, memory_waits, op_durations,
)

__all__ = ["DeviceLevels", "DeviceTimes", "expand", "assemble", "plan_activities", "retimed_parts"]


@dataclass(frozen=True)
class DeviceLevels:
    """A device's level solution, its expanded problem and fast-buffer offsets.

    ``fast_offsets[n]`` is the address of the n-th fast piece
    (:func:`solvers.memory.levels.fast_pieces` order, zero-byte pieces included).
    """

    bridge: DeviceBridge
    solution: LevelSolution
    expanded: LevelProblem
    op_origin: tuple[tuple[int, int], ...]  # expanded op -> (bridge op, portion)
    tensor_origin: tuple[tuple[int, int], ...]  # expanded tensor -> (bridge tensor, portion)
    factors_of_tensor: tuple[int, ...]  # per bridge tensor: its split factor (1 = whole)
    factors_of_op: tuple[int, ...]  # per bridge op
    fast_offsets: tuple[int, ...]


def expand(bridge: DeviceBridge, solution: LevelSolution, fast_offsets: tuple[int, ...]) -> DeviceLevels:
    """Resolve the split expansion the solution is over.

    Examples
    --------
    See :func:`planner.memory.plan_memory`.
    """
    problem = bridge.problem
    if problem.splits:
        expanded, smap = expand_splits(problem, solution.split_factors)
        op_origin, tensor_origin = smap.op_origin, smap.tensor_origin
    else:
        expanded = problem
        op_origin = tuple((i, 0) for i in range(problem.num_ops))
        tensor_origin = tuple((t, 0) for t in range(problem.num_tensors))
    ft = [1] * problem.num_tensors
    fo = [1] * problem.num_ops
    for g, k in zip(problem.splits, solution.split_factors):
        for t in g.tensors:
            ft[t] = k
        for i in g.ops:
            fo[i] = k
    return DeviceLevels(bridge, solution, expanded, tuple(op_origin), tuple(tensor_origin), tuple(ft), tuple(fo),
                        tuple(fast_offsets))


class _Names:
    """Instance and buffer names of one device's expanded problem."""

    def __init__(self, lv: DeviceLevels) -> None:
        b = lv.bridge
        self.lv = lv
        self.instances = []
        for orig, p in lv.op_origin:
            name = b.ops[orig]
            self.instances.append(f"{name}#{p}" if lv.factors_of_op[orig] > 1 else name)
        self.slow = []  # expanded tensor -> its slow buffer name
        self.new_ids: dict[int, list[int]] = {}
        for t, (orig, p) in enumerate(lv.tensor_origin):
            base = b.tensors[orig].name
            self.slow.append(f"{base}#{p}" if lv.factors_of_tensor[orig] > 1 else base)
            self.new_ids.setdefault(orig, []).append(t)
        pieces = fast_pieces(lv.expanded, lv.solution)
        if len(pieces) != len(lv.fast_offsets):
            raise ValueError(f"{len(lv.fast_offsets)} fast offsets for {len(pieces)} fast buffers")
        self.pieces = []  # (tensor, lo, hi, name, address)
        count: dict[int, int] = {}
        for (t, lo, hi), address in zip(pieces, lv.fast_offsets):
            n = count.get(t, 0)
            count[t] = n + 1
            self.pieces.append((t, lo, hi, f"{self.slow[t]}@{b.fast_level}.{n}", address))
        self.by_tensor: dict[int, list[tuple[int, int, str]]] = {}
        for t, lo, hi, name, _ in self.pieces:
            self.by_tensor.setdefault(t, []).append((lo, hi, name))

    def fast_at(self, t: int, point: int) -> str:
        for lo, hi, name in self.by_tensor.get(t, ()):
            if lo <= point < hi:
                return name
        raise ValueError(f"tensor {self.lv.expanded.tensor_name(t)} has no fast buffer at point {point}")

    def access_buffer(self, t: int, j: int) -> str:
        a = self.lv.expanded.accesses(t)[j]
        return self.fast_at(t, 2 * a + 1) if self.lv.solution.in_fast[t][j] else self.slow[t]


def _op_accesses(lv: DeviceLevels, names: _Names) -> dict[str, OpAccess]:
    e, b, s = lv.expanded, lv.bridge, lv.solution
    where: dict[tuple[int, int], int] = {}  # (expanded op, expanded tensor) -> access index
    for t in range(e.num_tensors):
        for j, a in enumerate(e.accesses(t)):
            if e.is_real(a):
                where[(a, t)] = j
    out: dict[str, OpAccess] = {}
    for i, (orig, p) in enumerate(lv.op_origin):
        in_group = lv.factors_of_op[orig] > 1

        def buffers(bridge_tensor: int) -> tuple[str, ...]:
            ids = names.new_ids[bridge_tensor]
            if len(ids) > 1 and in_group:
                ids = [ids[p]]
            return tuple(names.access_buffer(t, where[(i, t)]) for t in ids)

        fast = slow = 0
        for t in sorted({*e.reads[i], *e.writes[i]}):
            if s.in_fast[t][where[(i, t)]]:
                fast += e.tensor_bytes[t]
            else:
                slow += e.tensor_bytes[t]
        inst = names.instances[i]
        out[inst] = OpAccess(inst, b.ops[orig], p if lv.factors_of_op[orig] > 1 else -1, lv.factors_of_op[orig],
                             tuple(buffers(t) for t in b.op_inputs[orig]),
                             tuple(buffers(t) for t in b.op_outputs[orig]), fast, slow)
    return out


_DmaRow = tuple[str, int, int, str, str, int, str, str, int]  # see _transfers


def _transfers(lv: DeviceLevels, names: _Names) -> list[_DmaRow]:
    """(kind, tensor, portion, src, dst, bytes, trigger, release, dma device cycles) in queue order."""
    e = lv.expanded
    rows = []
    for tr in lv.solution.transfers:
        acc = e.accesses(tr.tensor)
        if tr.kind is TransferKind.PREFETCH:
            src, dst = names.slow[tr.tensor], names.fast_at(tr.tensor, 2 * acc[tr.gap] + 1)
        else:
            src, dst = names.fast_at(tr.tensor, 2 * acc[tr.gap - 1] + 1), names.slow[tr.tensor]
        orig, p = lv.tensor_origin[tr.tensor]
        trigger = names.instances[tr.trigger_op] if 0 <= tr.trigger_op < e.num_ops else ""
        release = names.instances[tr.release_op] if 0 <= tr.release_op < e.num_ops else ""
        rows.append((tr.kind.value, orig, p if lv.factors_of_tensor[orig] > 1 else -1, src, dst,
                     e.tensor_bytes[tr.tensor], trigger, release, e.dma_cycles(tr.tensor)))
    return rows


def assemble(plan: Plan, graph: Graph, hardware: Hardware, levels: Mapping[str, DeviceLevels],
             alignment_bytes: int, stats: Mapping[str, Mapping] | None = None,
             gangs: Sequence[Sequence[str]] = (), shared_bandwidth: bool = False) -> tuple[Plan, MemoryPlan]:
    """The re-timed plan (instances on memory-planned devices) and its memory plan.

    Every op instance, DMA and transfer becomes an :class:`~planner.memory.retime.Activity`;
    the list schedule re-times them, each of ``gangs`` (``constraints.gang``'s ops) starting on
    one cycle (a split op by its first instance); each memory-planned device's buffers and DMAs
    are then read off the new times. ``shared_bandwidth`` (``memory.bandwidth: shared``, also
    implied by a level plan that shares): the devices without a memory plan share their main
    memory too (:func:`~planner.memory.shared_bandwidth.unplanned_shares`).

    Raises
    ------
    InfeasibleError
        The slow copies do not fit the main memory (the message names the level, the
        busiest cycle and its biggest buffers).
    """
    names = {d: _Names(lv) for d, lv in levels.items()}
    accesses = {d: _op_accesses(levels[d], names[d]) for d in levels}
    dmas = {d: _transfers(levels[d], names[d]) for d in levels}
    acts, sequences, transfers = _activities(plan, graph, hardware, levels, names, dmas)
    shared_bandwidth = shared_bandwidth or any(lv.expanded.shared_bandwidth for lv in levels.values())
    gate = bandwidth_gate(levels, {d: names[d].instances for d in levels}, not transfers,  # bandwidth: shared
                          transfers, {lk.name: lk.bandwidth_bytes_per_s for lk in hardware.links},
                          unplanned_shares(plan, graph, hardware, levels) if shared_bandwidth else None, hardware)
    first = _first_instances(plan, levels, names)
    start = list_schedule(acts, sequences, gate, [[first[op] for op in gang] for gang in gangs])
    duration = {a.name: a.duration for a in acts}

    def end(name: str) -> int:
        return start[name] + duration[name]

    device_plans = {d: _device_plan(d, lv, names[d], accesses[d], dmas[d], start, end, transfers, graph,
                                    hardware, alignment_bytes, (stats or {}).get(d, {}))
                    for d, lv in levels.items()}
    return _retimed_plan(plan, levels, names, start, duration, transfers), MemoryPlan(device_plans)


def plan_activities(plan: Plan, graph: Graph, hardware: Hardware, levels: Mapping[str, DeviceLevels]
                    ) -> tuple[list[Activity], dict[str, tuple[str, ...]], list[PlacedTransfer]]:
    """What :func:`assemble` re-times: every activity (``op:``, ``dma:<device>:<q>``,
    ``xfer:<k>``), each sequence resource's fixed order, and the transfers (``xfer:<k>`` is the
    k-th). The cross-device choice reads the waits across devices off it."""
    names = {d: _Names(lv) for d, lv in levels.items()}
    return _activities(plan, graph, hardware, levels, names, {d: _transfers(levels[d], names[d]) for d in levels})


def _activities(plan: Plan, graph: Graph, hardware: Hardware, levels: Mapping[str, DeviceLevels],
                names: Mapping[str, "_Names"], dmas: Mapping[str, list["_DmaRow"]]
                ) -> tuple[list[Activity], dict[str, tuple[str, ...]], list[PlacedTransfer]]:
    transfers = sorted(plan.transfers, key=lambda t: (t.start_cycle, t.src_op, t.dst_op, t.link))
    sequences, last_instance = _sequences(plan, graph, levels, names)
    evict_of = _evictions(levels, names, dmas)
    into: dict[str, list[str]] = {}
    for k, t in enumerate(transfers):
        into.setdefault(t.dst_op, []).append(f"xfer:{k}")
    acts: list[Activity] = []
    for d, lv in levels.items():
        acts += _device_activities(d, lv, names[d], dmas[d], evict_of, transfers, into, hardware)
    acts = _after_same_device_predecessors(acts, plan, graph, levels, names, last_instance)
    acts += _unplanned_activities(plan, graph, levels, last_instance, into)
    acts += _transfer_activities(transfers, levels, last_instance, _slow_ready(levels, names, evict_of))
    return acts, sequences, transfers


def _after_same_device_predecessors(acts: list[Activity], plan: Plan, graph: Graph,
                                    levels: Mapping[str, DeviceLevels], names: Mapping[str, "_Names"],
                                    last_instance: Mapping[str, str]) -> list[Activity]:
    """A memory-planned op's instances also wait for its control predecessors on their device.

    The level problem knows only the data it moves, so an ``after`` edge (control, no tensor)
    between two ops on different streams of one device was lost: the re-timing started the
    waiter early and the replay refused the plan (exit 3). Only edges without tensors: a data
    edge is waited for instance by instance (a split reader's portion after the writer's
    portion it reads, not after the writer's last), and on one stream the order implies it."""
    device = {o.name: o.device for o in plan.ops}
    op_of = {f"op:{inst}": lv.bridge.ops[lv.op_origin[i][0]]
             for d, lv in levels.items() for i, inst in enumerate(names[d].instances)}
    out = []
    for a in acts:
        op = op_of.get(a.name)
        if op is not None and device[op] in levels:
            extra = [last_instance[p] for p, _, tensors in graph.dag.in_edges(op, data="tensors")
                     if not tensors and device.get(p) == device[op]]
            a = replace(a, deps=tuple(dict.fromkeys(a.deps + tuple(extra))))
        out.append(a)
    return out


def _sequences(plan: Plan, graph: Graph, levels: Mapping[str, DeviceLevels],
               names: Mapping[str, _Names]) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """The fixed order of each resource's activities, and each op's last instance activity.

    A memory-planned device runs its instances in the level problem's order on one compute
    resource; any other stream keeps the schedule's order: start, end, then the graph's
    topological order, since a zero-cycle op (a reshape, an op with explicit zero cycles) and
    its consumer may start on the same cycle (by name, "fc" would come before the "flatten"
    it waits for).
    """
    sequences: dict[str, tuple[str, ...]] = {}
    last_instance: dict[str, str] = {}  # op -> activity of its last instance
    for d, lv in levels.items():
        for i, inst in enumerate(names[d].instances):
            last_instance[lv.bridge.ops[lv.op_origin[i][0]]] = f"op:{inst}"
            resource = _compute_resource(d, lv, i)
            sequences[resource] = sequences.get(resource, ()) + (f"op:{inst}",)
    rank = {n: i for i, n in enumerate(graph.topological_order())}
    for o in sorted(plan.ops, key=lambda o: (o.device, o.stream, o.start_cycle, o.end_cycle, rank[o.name])):
        if o.device not in levels:
            last_instance[o.name] = f"op:{o.name}"
            sequences.setdefault(f"stream:{o.device}:{o.stream}", ())
            sequences[f"stream:{o.device}:{o.stream}"] += (f"op:{o.name}",)
    return sequences, last_instance


def _first_instances(plan: Plan, levels: Mapping[str, DeviceLevels], names: Mapping[str, _Names]) -> dict[str, str]:
    """Op -> the activity of its first instance (a split op starts with its first portion)."""
    first = {o.name: f"op:{o.name}" for o in plan.ops if o.device not in levels}
    for d, lv in levels.items():
        for i, inst in enumerate(names[d].instances):
            first.setdefault(lv.bridge.ops[lv.op_origin[i][0]], f"op:{inst}")
    return first


def _compute_resource(d: str, lv: DeviceLevels, i: int) -> str:
    """The compute resource of expanded op ``i``: the device's one (one stream) or its stream's."""
    return f"compute:{d}:{lv.expanded.stream_of(i)}" if lv.expanded.multi_stream else f"compute:{d}"


def _evictions(levels: Mapping[str, DeviceLevels], names: Mapping[str, _Names],
               dmas: Mapping[str, list[_DmaRow]]) -> dict[tuple[str, int], str]:
    """(device, expanded tensor) -> the activity of the DMA that evicts it."""
    evict_of: dict[tuple[str, int], str] = {}
    for d in levels:
        for q, row in enumerate(dmas[d]):
            kind, orig, p = row[0], row[1], row[2]
            if kind == "evict":
                evict_of[(d, _expanded_id(names[d], orig, p))] = f"dma:{d}:{q}"
    return evict_of


def _slow_ready(levels: Mapping[str, DeviceLevels], names: Mapping[str, _Names],
                evict_of: Mapping[tuple[str, int], str]) -> dict[tuple[str, str], list[str]]:
    """(device, tensor) -> what makes a tensor sent from a planned device ready in slow memory:
    its producer (written slow) or its eviction, per portion."""
    slow_ready: dict[tuple[str, str], list[str]] = {}
    for d, lv in levels.items():
        e = lv.expanded
        for orig_t in lv.bridge.sent:
            ready = []
            for t in names[d].new_ids[orig_t]:
                producer = e.accesses(t)[0]
                if (d, t) in evict_of:
                    ready.append(evict_of[(d, t)])
                elif e.is_real(producer):
                    ready.append(f"op:{names[d].instances[producer]}")
            slow_ready[(d, lv.bridge.tensors[orig_t].tensor)] = ready
    return slow_ready


def _device_activities(d: str, lv: DeviceLevels, names: _Names, dmas: list[_DmaRow],
                       evict_of: Mapping[tuple[str, int], str], transfers: list[PlacedTransfer],
                       into: Mapping[str, list[str]], hardware: Hardware) -> list[Activity]:
    """A memory-planned device's DMAs (after their trigger, a prefetch after the eviction of its
    tensor and the transfer that received it) and instances (after the DMAs they release and
    the transfers into their op; with several streams, also after their waits across streams,
    :func:`_stream_waits`), timed by the ISA on the device's clock."""
    dev = hardware.device(d)
    cycles = op_durations(lv.expanded, lv.solution.in_fast)
    acts: list[Activity] = []
    released: dict[int, list[str]] = {}
    waits = _stream_waits(d, lv, names)
    for q, row in enumerate(dmas):
        kind, orig, p, _, _, _, trigger, release, dev_cycles = row
        t = _expanded_id(names, orig, p)
        deps = [f"op:{trigger}"] if trigger else []
        if kind == "prefetch":
            if (d, t) in evict_of:
                deps.append(evict_of[(d, t)])
            lt = lv.bridge.tensors[orig]
            if lt.role == "received":
                deps += [f"xfer:{k}" for k, x in enumerate(transfers) if (x.src_op, x.dst_op) == lt.transfer]
        deps += waits.get(f"dma:{d}:{q}", [])
        acts.append(Activity(f"dma:{d}:{q}", f"dma:{d}", hardware.to_timeline_cycles(dev_cycles, dev),
                             tuple(deps), priority=q))
        if release:
            released.setdefault(names.instances.index(release), []).append(f"dma:{d}:{q}")
    for i, inst in enumerate(names.instances):
        op = lv.bridge.ops[lv.op_origin[i][0]]
        acts.append(Activity(f"op:{inst}", _compute_resource(d, lv, i), hardware.to_timeline_cycles(cycles[i], dev),
                             tuple(released.get(i, []) + into.get(op, []) + waits.get(f"op:{inst}", []))))
    return acts


def _activity(d: str, names: _Names, who: tuple[str, int]) -> str:
    return f"op:{names.instances[who[1]]}" if who[0] == "op" else f"dma:{d}:{who[1]}"


def _stream_waits(d: str, lv: DeviceLevels, names: _Names) -> dict[str, list[str]]:
    """Several streams: activity -> what it waits for besides its own stream's order: the
    producers of what it reads on other streams, the copy order and the memory order
    (:func:`solvers.memory.levels.memory_waits`). Empty with one stream."""
    e = lv.expanded
    if not e.multi_stream:
        return {}
    waits: dict[str, list[str]] = {}
    for i in range(e.num_ops):
        producers = sorted({e.accesses(t)[0] for t in e.reads[i] if e.is_real(e.accesses(t)[0])})
        cross = [f"op:{names.instances[a]}" for a in producers if e.stream_of(a) != e.stream_of(i)]
        if cross:
            waits[f"op:{names.instances[i]}"] = cross
    for waiter, waited in memory_waits(e, lv.solution, lv.fast_offsets).items():
        waits.setdefault(_activity(d, names, waiter), []).extend(sorted(_activity(d, names, w) for w in waited))
    return waits


def _unplanned_activities(plan: Plan, graph: Graph, levels: Mapping[str, DeviceLevels],
                          last_instance: Mapping[str, str], into: Mapping[str, list[str]]) -> list[Activity]:
    """The ops of devices without a memory plan: after their predecessors on the device and
    the transfers into them, with the schedule's durations."""
    placed = {o.name: o for o in plan.ops}
    acts = []
    for o in plan.ops:
        if o.device in levels:
            continue
        deps = [last_instance[p] for p in graph.dag.predecessors(o.name)
                if placed[p].device == o.device] + into.get(o.name, [])
        acts.append(Activity(f"op:{o.name}", f"stream:{o.device}:{o.stream}", o.duration_cycles, tuple(deps)))
    return acts


def _transfer_activities(transfers: list[PlacedTransfer], levels: Mapping[str, DeviceLevels],
                         last_instance: Mapping[str, str],
                         slow_ready: Mapping[tuple[str, str], list[str]]) -> list[Activity]:
    """Each transfer on its link, in the schedule's order: after its producer's last instance
    and, from a planned device, after its tensors are ready in slow memory."""
    acts = []
    for k, t in enumerate(transfers):
        deps = [last_instance[t.src_op]]
        if t.src_device in levels:
            for x in t.tensors:
                deps += slow_ready.get((t.src_device, x), [])
        acts.append(Activity(f"xfer:{k}", f"link:{t.link}", t.duration_cycles, tuple(dict.fromkeys(deps)),
                             priority=k))
    return acts


def _retimed_plan(plan: Plan, levels: Mapping[str, DeviceLevels], names: Mapping[str, _Names],
                  start: Mapping[str, int], duration: Mapping[str, int], transfers: list[PlacedTransfer]) -> Plan:
    """The plan at the list schedule's times, instances in place of ops on planned devices."""
    new_ops: list[PlacedOp] = []
    for o in plan.ops:
        if o.device not in levels:
            new_ops.append(replace(o, start_cycle=start[f"op:{o.name}"]))
    for d, lv in levels.items():
        for i, inst in enumerate(names[d].instances):
            new_ops.append(PlacedOp(inst, d, lv.expanded.stream_of(i), start[f"op:{inst}"], duration[f"op:{inst}"]))
    new_transfers = tuple(replace(t, start_cycle=start[f"xfer:{k}"]) for k, t in enumerate(transfers))
    makespan = max([start[a] + duration[a] for a in duration], default=0)
    return replace(plan, ops=tuple(sorted(new_ops, key=lambda o: (o.start_cycle, o.device, o.stream, o.name))),
                   transfers=new_transfers, makespan_cycles=makespan, objective=makespan)


def _expanded_id(names: _Names, orig: int, portion: int) -> int:
    ids = names.new_ids[orig]
    return ids[portion] if portion >= 0 else ids[0]


@dataclass(frozen=True)
class DeviceTimes:
    """A planned device's re-timed instances and its end, with the point → cycle map (module docstring).

    Examples
    --------
    >>> t = DeviceTimes([0, 10], [10, 25], 30)
    >>> t.point_start(3), t.point_end(2), t.point_end(5)  # op 1 starts; op 0 ends; the device's end
    (10, 10, 30)
    """

    inst_start: list[int]
    inst_end: list[int]
    device_end: int

    def point_start(self, p: int) -> int:
        i = p // 2
        if p % 2:
            return self.inst_start[i]
        return self.inst_end[i - 1] if i > 0 else 0

    def point_end(self, p: int) -> int:
        i = p // 2
        if p % 2:
            return self.inst_start[i] if i < len(self.inst_start) else self.device_end
        return self.inst_end[i - 1]


def _device_plan(d, lv: DeviceLevels, names: _Names, accesses, dma_rows, start, end, transfers, graph: Graph,
                 hardware: Hardware, alignment: int, stats) -> DeviceMemoryPlan:
    """One device's memory plan at the re-timed cycles: fast pieces, slow copies (portions as
    views), zero-byte control copies, and the DMAs."""
    b = lv.bridge
    dma_names = [f"dma:{d}:{q}" for q in range(len(dma_rows))]
    sends = [k for k, t in enumerate(transfers) if t.src_device == d]
    recvs = [k for k, t in enumerate(transfers) if t.dst_device == d]
    inst_end = [end(f"op:{x}") for x in names.instances]
    times = DeviceTimes([start[f"op:{x}"] for x in names.instances], inst_end, max(
        [*inst_end, *(end(x) for x in dma_names), *(end(f"xfer:{k}") for k in sends + recvs), 0]))
    life = _fast_lifetimes(lv, names, times, dma_names, start, end)
    fast = [MemoryBuffer(name, b.tensors[lv.tensor_origin[t][0]].tensor, _portion(lv, t), b.fast_level, address,
                         lv.expanded.tensor_bytes[t], *life[k])
            for k, (t, lo, hi, name, address) in enumerate(names.pieces)]
    uses = _slow_uses(names, accesses, dma_rows, dma_names, times, start, end)
    slow, views = _slow_copies(lv, uses, _sent_cycles(transfers, sends, start, end), transfers, graph, times,
                               start, end)
    slow += _control_copies(lv, transfers, recvs, times, start, end)
    slow = _place_slow(slow, hardware, d, alignment, b)
    by_name = {x.name: x for x in slow}
    for name, parent, orig, p, offset in views:
        par = by_name[parent]
        fast.append(MemoryBuffer(name, par.tensor, p, b.slow_level, par.address + offset,
                                 par.size_bytes // lv.factors_of_tensor[orig], par.start_cycle, par.end_cycle,
                                 view_of=parent))
    buffers = sorted(slow + fast, key=lambda x: (x.start_cycle, x.level, x.address, x.name))
    mem_transfers = tuple(
        MemoryTransfer(row[0], b.tensors[row[1]].tensor, row[2], row[3], row[4], row[5], row[6], row[7],
                       start[dma_names[q]], end(dma_names[q]) - start[dma_names[q]])
        for q, row in enumerate(dma_rows))
    factors = {label: k for label, k in zip(b.group_labels, lv.solution.split_factors)}
    order = tuple(names.instances)
    waits: tuple[tuple[str, str], ...] = ()
    if lv.expanded.multi_stream:  # streams overlap: the order is by start, and the memory order is kept
        order = tuple(x for _, _, x in sorted((times.inst_start[i], i, x) for i, x in enumerate(names.instances)))
        waits = tuple((_plan_name(names, w), _plan_name(names, x))
                      for w, xs in sorted(memory_waits(lv.expanded, lv.solution, lv.fast_offsets).items())
                      for x in sorted(xs))
    return DeviceMemoryPlan(d, b.fast_level, b.slow_level, order, accesses, tuple(buffers),
                            mem_transfers, factors, dict(stats), memory_waits=waits)


def _plan_name(names: _Names, who: tuple[str, int]) -> str:
    return names.instances[who[1]] if who[0] == "op" else f"dma:{who[1]}"


def _fast_lifetimes(lv: DeviceLevels, names: _Names, times: DeviceTimes, dma_names: list[str], start,
                    end) -> list[tuple[int, int]]:
    """Each fast piece's cycles: its points mapped by :class:`DeviceTimes`; with several streams
    a prefetched piece starts with its DMA and an evicted one ends with its DMA (the memory
    order's allocation and free; docs/memory.md, "Several compute streams")."""
    life = [(times.point_start(lo), times.point_end(hi)) for _, lo, hi, _, _ in names.pieces]
    if not lv.expanded.multi_stream:
        return life
    prefetch_at, evict_at = {}, {}
    for q, tr in enumerate(lv.solution.transfers):
        if tr.kind is TransferKind.PREFETCH:
            prefetch_at[tr.tensor, 2 * tr.trigger_op + 2] = dma_names[q]
        else:
            evict_at[tr.tensor, 2 * tr.release_op + 1] = dma_names[q]
    for k, (t, lo, hi, _, _) in enumerate(names.pieces):
        begin, finish = life[k]
        if lo % 2 == 0 and (t, lo) in prefetch_at:
            begin = start[prefetch_at[t, lo]]
        if hi % 2 and (t, hi) in evict_at:
            finish = end(evict_at[t, hi])
        life[k] = (begin, finish)
    return life


def _portion(lv: DeviceLevels, t: int) -> int:
    """The portion an expanded tensor holds (-1: its tensor is whole)."""
    orig, p = lv.tensor_origin[t]
    return p if lv.factors_of_tensor[orig] > 1 else -1


def _slow_uses(names: _Names, accesses: Mapping[str, OpAccess], dma_rows: list[_DmaRow], dma_names: list[str],
               times: DeviceTimes, start, end) -> dict[str, list[int]]:
    """Slow buffer name -> the cycles it must cover: the instances that access it, the DMAs that read or write it."""
    uses: dict[str, list[int]] = {}
    slow_names = set(names.slow)
    for inst, acc in accesses.items():
        i = names.instances.index(inst)
        for group in (*acc.inputs, *acc.outputs):
            for name in group:
                if name in slow_names:
                    uses.setdefault(name, []).extend((times.inst_start[i], times.inst_end[i]))
    for q, row in enumerate(dma_rows):
        slow_name = row[3] if row[0] == "prefetch" else row[4]
        uses.setdefault(slow_name, []).extend((start[dma_names[q]], end(dma_names[q])))
    return uses


def _sent_cycles(transfers, sends: list[int], start, end) -> dict[str, list[int]]:
    """Tensor -> the cycles the transfers sending it from the device run."""
    sent: dict[str, list[int]] = {}
    for k in sends:
        for x in transfers[k].tensors:
            sent.setdefault(x, []).extend((start[f"xfer:{k}"], end(f"xfer:{k}")))
    return sent


def _slow_copies(lv: DeviceLevels, uses: Mapping[str, list[int]], sent: Mapping[str, list[int]], transfers,
                 graph: Graph, times: DeviceTimes, start,
                 end) -> tuple[list[MemoryBuffer], list[tuple[str, str, int, int, int]]]:
    """One whole slow buffer (address 0 until placed) per bridge tensor that ever lives slow, and
    its portions' views: (name, parent, tensor index, portion, offset)."""
    b = lv.bridge
    slow: list[MemoryBuffer] = []
    views: list[tuple[str, str, int, int, int]] = []
    for orig, lt in enumerate(b.tensors):
        k = lv.factors_of_tensor[orig]
        members = [lt.name] if k == 1 else [f"{lt.name}#{p}" for p in range(k)]
        cycles = [c for m in members for c in uses.get(m, [])]
        if lt.role == "activation":
            cycles += sent.get(lt.tensor, [])
            if graph.tensors[lt.tensor].kind == "output":
                cycles.append(times.device_end)  # the host reads graph outputs after the run
        if lt.role == "received":
            k_x = [x for x, tr in enumerate(transfers) if (tr.src_op, tr.dst_op) == lt.transfer]
            cycles += [start[f"xfer:{x}"] for x in k_x] + [end(f"xfer:{x}") for x in k_x]
        if lt.preloaded:
            lo, hi = 0, times.device_end
        elif not cycles:
            continue
        else:
            lo, hi = min(cycles), max(cycles)
        slow.append(MemoryBuffer(lt.name, lt.tensor, -1, b.slow_level, 0, lt.size_bytes, lo, hi,
                                 preloaded=lt.preloaded))
        if k > 1:
            part = lt.size_bytes // k
            views += [(f"{lt.name}#{p}", lt.name, orig, p, p * part) for p in range(k)]
    return slow, views


def _control_copies(lv: DeviceLevels, transfers, recvs: list[int], times: DeviceTimes, start,
                    end) -> list[MemoryBuffer]:
    """A zero-byte slow buffer per control edge into the device, live until its consumer's instances end."""
    b = lv.bridge
    copies = []
    for k in recvs:
        t = transfers[k]
        if not t.tensors:
            copies.append(MemoryBuffer(f"after:{t.src_op}@{t.src_device}->{t.dst_op}", "", -1, b.slow_level, 0, 0,
                                       start[f"xfer:{k}"], max(end(f"xfer:{k}"), *(
                                           times.inst_end[i] for i, o in enumerate(lv.op_origin)
                                           if b.ops[o[0]] == t.dst_op))))
    return copies


def _place_slow(buffers: list[MemoryBuffer], hardware: Hardware, device: str, alignment: int,
                bridge: DeviceBridge) -> list[MemoryBuffer]:
    """Addresses for the slow copies over their cycle lifetimes (:func:`assign_addresses`: greedy-by-size,
    then CP-SAT; an InfeasibleError names the busiest cycle and its biggest buffers)."""
    sized = [x for x in buffers if x.size_bytes > 0]
    addresses = assign_addresses([Lifetime(x.name, x.size_bytes, x.start_cycle, x.end_cycle) for x in sized],
                                 hardware.device(device).memory_capacity_bytes, alignment,
                                 device=device, level=bridge.slow_level)
    address = dict(zip((x.name for x in sized), addresses))
    return [replace(x, address=address.get(x.name, 0)) for x in buffers]


def retimed_parts(plan: Plan, graph: Graph, hardware: Hardware, levels: Mapping[str, DeviceLevels],
                  start: Mapping[str, int], duration: Mapping[str, int], transfers: list[PlacedTransfer],
                  alignment_bytes: int, stats: Mapping[str, Mapping] | None = None
                  ) -> tuple[Plan, dict[str, DeviceMemoryPlan]]:
    """:func:`assemble`'s results at times a caller's list schedule gave (over :func:`plan_activities`'
    activities and more): ``plan`` re-timed (instances on ``levels``' devices) and each of those
    devices' memory plan. :mod:`planner.memory.mixed_assemble` adds its N-level devices to both.

    Examples
    --------
    See :func:`planner.memory.mixed_assemble.assemble_mixed`.
    """
    names = {d: _Names(lv) for d, lv in levels.items()}

    def end(name: str) -> int:
        return start[name] + duration[name]

    plans = {d: _device_plan(d, lv, names[d], _op_accesses(lv, names[d]), _transfers(lv, names[d]), start, end,
                             transfers, graph, hardware, alignment_bytes, (stats or {}).get(d, {}))
             for d, lv in levels.items()}
    return _retimed_plan(plan, levels, names, start, duration, transfers), plans
