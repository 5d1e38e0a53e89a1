"""Whole plans whose devices mix N-level and two-level memory plans across link transfers (issue 14).

:func:`~planner.memory.assemble.assemble` re-times a plan whose memory-planned devices each
have a two-level plan (:class:`~planner.memory.assemble.DeviceLevels`);
:func:`~planner.memory.hierarchy_assemble.assemble_hierarchy` one device alone over all its
levels. Here a device with link transfers may have an N-level plan (:class:`HierarchyLevels`)
next to two-level and unplanned devices, so the cross-device choice can offer it:

* activities: the two-level and unplanned devices' as :func:`~planner.memory.assemble.plan_activities`
  makes them; an N-level device's op instances run on its one compute resource in the level
  solver's order (its solution is planned in series), each after the hops it releases and
  the transfers into its op; each hop on the device's DMA engine in queue order, after its
  trigger, the previous hop of its move and (a fetch's first hop) the tensor's eviction, as
  :mod:`~planner.memory.hierarchy_assemble` times them, and a fetch of a received copy also
  after the transfer that brings it (the copy is in main memory only then);
* a transfer out of an N-level device after its producer's last instance and after each sent
  tensor is in main memory: its producer's write when that is at home, else the last hop of
  its eviction;
* its memory plan: the solution's pieces at the re-timed cycles (points mapped as in
  :mod:`~planner.memory.assemble`, the device's end including its sends and receives; a
  received copy's home buffer lives from cycle 0, a sent tensor's to the device's end), a
  zero-byte control copy per control edge into it, its DMAs at their re-timed cycles.

Lowering turns sends and receives into SEND/RECV as for any memory-planned device: the
buffers carry the two-level plan's names (a received copy ``<tensor>@<src>-><op>``, a sent
tensor's home copy the tensor's name).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from planner.errors import UnsupportedError
from planner.graph.ir import Graph
from planner.hardware import Hardware
from planner.memory.assemble import DeviceLevels, DeviceTimes, assemble, plan_activities, retimed_parts
from planner.memory.hierarchy_assemble import (
    Expansion, Pieces, activity_durations, instance_accesses, memory_transfers, move_deps, placed_buffers,
)
from planner.memory.hierarchy_bridge import HierarchyBridge
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan
from planner.memory.retime import Activity, list_schedule
from planner.memory.shared_bandwidth import mixed_gate, unplanned_shares
from planner.plan import PlacedOp, PlacedTransfer, Plan
from solvers.memory.levels import HierarchySolution, TransferKind

__all__ = ["N_LEVELS", "HierarchyLevels", "assemble_mixed", "mixed_activities"]

N_LEVELS = "n levels"  # the cross-device choice's name for a device's N-level candidate


@dataclass(frozen=True)
class HierarchyLevels:
    """A device's N-level solution, a candidate of the cross-device choice.

    Examples
    --------
    See :func:`assemble_mixed`.
    """

    bridge: HierarchyBridge
    solution: HierarchySolution
    stats: Mapping[str, Any] = field(default_factory=dict)  # memory.json's figures of the N-level solve
    # Re-solved with its link transfers as link holds (shared bandwidth): each transfer's planned
    # start (device cycles) by transfer_key, so the joint gate keeps the device's order with its
    # transfers in it (as cross_device.HeldLevels for two levels); empty otherwise.
    link_order: tuple[tuple[str, int], ...] = ()

    @property
    def device(self) -> str:
        return self.bridge.device.name


def _split(levels: Mapping[str, Any]) -> tuple[dict[str, DeviceLevels], dict[str, HierarchyLevels]]:
    many = {d: lv for d, lv in levels.items() if isinstance(lv, HierarchyLevels)}
    return {d: lv for d, lv in levels.items() if d not in many}, many


def mixed_activities(plan: Plan, graph: Graph, hardware: Hardware, levels: Mapping[str, Any]
                     ) -> tuple[list[Activity], dict[str, tuple[str, ...]], list[PlacedTransfer]]:
    """:func:`~planner.memory.assemble.plan_activities` with N-level devices among ``levels``
    (see the module docstring): every activity, each sequence's order, the transfers."""
    two, many = _split(levels)
    acts, sequences, transfers = plan_activities(plan, graph, hardware, two)
    if not many:
        return acts, sequences, transfers
    return (*_with_n_level_devices(acts, sequences, transfers, plan, hardware, many), transfers)


def _with_n_level_devices(acts: list[Activity], sequences: dict[str, tuple[str, ...]],
                          transfers: list[PlacedTransfer], plan: Plan, hardware: Hardware,
                          many: Mapping[str, HierarchyLevels]) -> tuple[list[Activity], dict[str, tuple[str, ...]]]:
    """``acts`` and ``sequences`` with each N-level device's ops (built as unplanned ones) replaced
    by its instances and hops; transfers out of it after its last instances and slow copies."""
    by_name = {a.name: a for a in acts}
    sequences = {r: order for r, order in sequences.items()
                 if not any(r.startswith(f"stream:{d}:") for d in many)}
    last: dict[str, str] = {}  # "op:<op>" of an N-level device -> its last instance's activity
    ready: dict[tuple[str, str], list[str]] = {}  # (device, sent tensor) -> what puts it in main memory
    for d, hl in many.items():
        into = {o.name: [x for x in by_name.pop(f"op:{o.name}").deps if x.startswith("xfer:")]
                for o in plan.ops if o.device == d}
        mine, order = _device_activities(d, hl, into, transfers, hardware)
        for a in mine:
            by_name[a.name] = a
        sequences[f"compute:{d}"] = order
        ex = Expansion.of(hl.bridge, hl.solution)
        for i, inst in enumerate(ex.instances):
            last[f"op:{hl.bridge.ops[ex.op_origin[i][0]]}"] = f"op:{inst}"
        ready.update(_slow_ready(d, hl, ex))
    for k, t in enumerate(transfers):
        a = by_name[f"xfer:{k}"]
        deps = [last.get(x, x) for x in a.deps]
        if t.src_device in many:
            deps += [r for x in t.tensors for r in ready.get((t.src_device, x), [])]
        by_name[a.name] = replace(a, deps=tuple(dict.fromkeys(deps)))
    return list(by_name.values()), sequences


def _device_activities(d: str, hl: HierarchyLevels, into: Mapping[str, list[str]], transfers: list[PlacedTransfer],
                       hardware: Hardware) -> tuple[list[Activity], tuple[str, ...]]:
    """The N-level device's instances (``op:<instance>``, on ``compute:<d>``) and hops
    (``dma:<d>:<q>``, on ``dma:<d>``), and its instances' order."""
    bridge, solution = hl.bridge, hl.solution
    ex = Expansion.of(bridge, solution)
    duration = activity_durations(hardware, bridge, ex, solution)
    deps = move_deps(ex, solution)

    def named(act: str) -> str:
        return f"dma:{d}:{act[4:]}" if act.startswith("dma:") else act

    arrivals = _arrivals(bridge, ex, transfers)
    acts = []
    for q, m in enumerate(solution.moves):
        extra = arrivals.get(m.tensor, []) if m.kind is TransferKind.PREFETCH and m.hop == 0 else []
        acts.append(Activity(f"dma:{d}:{q}", f"dma:{d}", duration[f"dma:{q}"],
                             tuple(named(x) for x in deps[f"dma:{q}"]) + tuple(extra), priority=q))
    order = []
    for i, inst in enumerate(ex.instances):
        op = bridge.ops[ex.op_origin[i][0]]
        acts.append(Activity(f"op:{inst}", f"compute:{d}", duration[f"op:{inst}"],
                             tuple(named(x) for x in deps[f"op:{inst}"]) + tuple(into.get(op, []))))
        order.append(f"op:{inst}")
    return acts, tuple(order)


def _arrivals(bridge: HierarchyBridge, ex: Expansion, transfers: list[PlacedTransfer]) -> dict[int, list[str]]:
    """Expanded tensor -> the transfers that bring it (a received copy), for its fetches."""
    out: dict[int, list[str]] = {}
    for t, (orig, _) in enumerate(ex.tensor_origin):
        lt = bridge.tensors[orig]
        if lt.role == "received":
            out[t] = [f"xfer:{k}" for k, x in enumerate(transfers) if (x.src_op, x.dst_op) == lt.transfer]
    return out


def _slow_ready(d: str, hl: HierarchyLevels, ex: Expansion) -> dict[tuple[str, str], list[str]]:
    """(device, tensor) -> per portion of a sent tensor what puts it at home (main memory): its
    producer's write there, else the last hop of its first eviction."""
    p, solution = ex.problem, hl.solution
    out: dict[tuple[str, str], list[str]] = {}
    for orig in hl.bridge.base.sent:
        acts = []
        for t in ex.portions_of(orig):
            producer = p.accesses(t)[0]
            if p.is_real(producer) and solution.level[t][0] == p.home(t):
                acts.append(f"op:{ex.instances[producer]}")
                continue
            hops = [q for q, m in enumerate(solution.moves)
                    if m.tensor == t and m.kind is TransferKind.EVICT and m.dst_level == p.home(t)]
            if hops:
                acts.append(f"dma:{d}:{hops[0]}")
            elif p.is_real(producer):
                acts.append(f"op:{ex.instances[producer]}")
        out[(d, hl.bridge.tensors[orig].tensor)] = acts
    return out


def assemble_mixed(plan: Plan, graph: Graph, hardware: Hardware, levels: Mapping[str, Any], alignment_bytes: int,
                   stats: Mapping[str, Mapping] | None = None,
                   gangs: Sequence[Sequence[str]] = (), shared_bandwidth: bool = False) -> tuple[Plan, MemoryPlan]:
    """:func:`~planner.memory.assemble.assemble` where some of ``levels`` are :class:`HierarchyLevels`
    (the same when none is, ``shared_bandwidth`` included). Under ``shared_bandwidth`` (or a
    level plan that shares) one gate holds every device's shares in the one list schedule
    (:func:`_joint_gate`). Each of ``gangs`` starts on one cycle (an N-level device's member by
    its first instance, on its one compute resource).

    Raises
    ------
    InfeasibleError
        A level's buffers do not pack at aligned addresses.
    UnsupportedError
        Two hops of an N-level plan write one buffer (as :func:`~planner.memory.hierarchy_assemble.assemble_hierarchy`).
    RetimingDeadlock
        The devices' fixed orders wait on each other (the cross-device choice drops the combination).
    """
    two, many = _split(levels)
    if not many:
        return assemble(plan, graph, hardware, levels, alignment_bytes, stats, gangs, shared_bandwidth)
    acts, sequences, transfers = mixed_activities(plan, graph, hardware, levels)
    shared_bandwidth = shared_bandwidth or any(lv.expanded.shared_bandwidth for lv in two.values()) or any(
        hl.bridge.problem.shared_bandwidth for hl in many.values())
    gate = _joint_gate(plan, graph, hardware, two, many, transfers) if shared_bandwidth else None
    start = list_schedule(acts, sequences, gate, gangs=_gang_activities(acts, gangs))
    duration = {a.name: a.duration for a in acts}

    rest, device_plans = retimed_parts(replace(plan, ops=tuple(o for o in plan.ops if o.device not in many)), graph,
                                       hardware, two, start, duration, transfers, alignment_bytes, stats)
    new_ops: list[PlacedOp] = []
    for d, hl in many.items():
        device_plans[d], ops = _device_plan_n_levels(d, hl, start, duration, transfers, hardware, alignment_bytes,
                                                     (stats or {}).get(d, {}))
        new_ops += ops
    ops = tuple(sorted((*rest.ops, *new_ops), key=lambda o: (o.start_cycle, o.device, o.stream, o.name)))
    return replace(rest, ops=ops), MemoryPlan(dict(sorted(device_plans.items())))


def _joint_gate(plan: Plan, graph: Graph, hardware: Hardware, two: Mapping[str, DeviceLevels],
                many: Mapping[str, HierarchyLevels], transfers: list[PlacedTransfer]):
    """Under ``bandwidth: shared``, the one gate of the whole re-timing
    (:func:`~planner.memory.shared_bandwidth.mixed_gate`): the two-level devices' ops and DMAs,
    the N-level devices' instances and hops over every level, the unplanned devices' ops and
    each link transfer's ends, all holding their shares in one list schedule."""
    instances = {d: tuple(lv.bridge.ops[orig] + (f"#{p}" if lv.factors_of_op[orig] > 1 else "")
                          for orig, p in lv.op_origin) for d, lv in two.items()}  # assemble's instance names
    n_level = {}
    for d, hl in many.items():
        ex = Expansion.of(hl.bridge, hl.solution)
        n_level[d] = (ex.problem, hl.solution, tuple(f"op:{n}" for n in ex.instances),
                      tuple(f"dma:{d}:{q}" for q in range(len(hl.solution.moves))), hl.link_order)
    return mixed_gate(two, instances, n_level, transfers, {lk.name: lk.bandwidth_bytes_per_s for lk in hardware.links},
                      unplanned_shares(plan, graph, hardware, set(two) | set(many)), hardware)


def _gang_activities(acts: Sequence[Activity], gangs: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each gang's members as the activities that start them: an op's own, or its first portion's
    (``op#0``, on a two-level or N-level device that splits it), as
    :func:`~planner.memory.assemble.assemble` lines them up."""
    names = {a.name for a in acts}
    return [[f"op:{op}" if f"op:{op}" in names else f"op:{op}#0" for op in gang] for gang in gangs]


def _device_plan_n_levels(d: str, hl: HierarchyLevels, start: Mapping[str, int], duration: Mapping[str, int],
                          transfers: list[PlacedTransfer], hardware: Hardware, alignment: int,
                          stats: Mapping) -> tuple[DeviceMemoryPlan, list[PlacedOp]]:
    """The N-level device's memory plan and placed instances at the re-timed cycles."""
    bridge, solution = hl.bridge, hl.solution
    ex = Expansion.of(bridge, solution)
    pieces = Pieces(bridge, ex, solution)
    destinations = [pieces.at(m.dst_level, m.tensor, 2 * m.trigger_op + 2) for m in solution.moves]
    if len(set(destinations)) != len(destinations):  # as assemble_hierarchy: one DMA per buffer in the binary
        raise UnsupportedError(f"device {d}: two DMAs write the same buffer")
    local_start = {f"op:{n}": start[f"op:{n}"] for n in ex.instances}
    local_start |= {f"dma:{q}": start[f"dma:{d}:{q}"] for q in range(len(solution.moves))}
    local_duration = {f"op:{n}": duration[f"op:{n}"] for n in ex.instances}
    local_duration |= {f"dma:{q}": duration[f"dma:{d}:{q}"] for q in range(len(solution.moves))}
    linked = [k for k, t in enumerate(transfers) if d in (t.src_device, t.dst_device)]
    ends = [local_start[a] + local_duration[a] for a in local_start]
    ends += [start[f"xfer:{k}"] + duration[f"xfer:{k}"] for k in linked]
    times = DeviceTimes([local_start[f"op:{n}"] for n in ex.instances],
                        [local_start[f"op:{n}"] + local_duration[f"op:{n}"] for n in ex.instances], max([*ends, 0]))
    buffers = placed_buffers(bridge, ex, pieces, times, hardware, alignment)
    buffers += _control_copies(d, bridge, ex, transfers, start, duration, times)
    buffers = sorted(buffers, key=lambda x: (x.start_cycle, x.level, x.address, x.name))
    factors = {label: k for label, k in zip(bridge.base.group_labels, solution.split_factors)}
    dp = DeviceMemoryPlan(d, bridge.levels[0], bridge.levels[ex.problem.main_level], ex.instances,
                          instance_accesses(bridge, ex, solution, pieces), tuple(buffers),
                          memory_transfers(bridge, ex, pieces, solution, local_start, local_duration), factors,
                          dict(stats))
    ops = [PlacedOp(n, d, 0, local_start[f"op:{n}"], local_duration[f"op:{n}"]) for n in ex.instances]
    return dp, ops


def _control_copies(d: str, bridge: HierarchyBridge, ex: Expansion, transfers: list[PlacedTransfer],
                    start: Mapping[str, int], duration: Mapping[str, int], times: DeviceTimes) -> list[MemoryBuffer]:
    """A zero-byte main-memory buffer per control edge into the device, live until its consumer's
    instances end (as :mod:`~planner.memory.assemble` gives a two-level device)."""
    main = bridge.levels[ex.problem.main_level]
    out = []
    for k, t in enumerate(transfers):
        if t.dst_device != d or t.tensors:
            continue
        ends = [times.inst_end[i] for i, (o, _) in enumerate(ex.op_origin) if bridge.ops[o] == t.dst_op]
        out.append(MemoryBuffer(f"after:{t.src_op}@{t.src_device}->{t.dst_op}", "", -1, main, 0, 0,
                                start[f"xfer:{k}"], max(start[f"xfer:{k}"] + duration[f"xfer:{k}"], *ends)))
    return out
