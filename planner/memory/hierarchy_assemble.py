"""An N-level solution back to the user's world: buffers in every level, DMA hops, a re-timed plan.

The N-level counterpart of :mod:`~planner.memory.assemble` (issue 14, stage 3), for one
memory-planned device that exchanges nothing with other devices (the spec's only device):

* buffers: the solution's pieces (:func:`~solvers.memory.levels.level_pieces`: every copy of
  a tensor in a level over a point interval, contiguous pieces merged). A tensor's copy at
  its home is named like the tensor (``x``; in main memory the host reads outputs there);
  any other copy ``x@<level>.<n>`` (n counts the tensor's copies in that level in time
  order; a two-level plan's names exactly);
* accesses: op i uses the piece of the access's level that holds point ``2i+1``; its
  roofline bytes per level are :func:`~solvers.memory.levels.op_level_bytes`;
* DMAs: one per hop of every move, in the solver's queue order, from the piece holding the
  hop's trigger point ``2k+2`` in the source level to the one holding it in the destination;
* times: a list schedule (:func:`~planner.memory.retime.list_schedule`) of the ops in order
  and the hops on the DMA engine, each hop after its trigger op, the previous hop of its
  move and (a fetch's first hop) the tensor's eviction; an op after the hops it releases;
* addresses: per level, greedy-by-size then CP-SAT over the pieces' cycle lifetimes
  (:func:`~planner.memory.addresses.assign_addresses`), each level at its capacity.

Points map to cycles as in :mod:`~planner.memory.assemble` (monotone, so pieces disjoint in
points are disjoint in cycles and the solver's per-level capacity holds in cycles).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from planner.errors import UnsupportedError
from planner.hardware import Hardware
from planner.memory.addresses import Lifetime, assign_addresses
from planner.memory.assemble import DeviceTimes
from planner.memory.hierarchy_bridge import HierarchyBridge
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan, MemoryTransfer, OpAccess
from planner.memory.retime import Activity, list_schedule
from planner.plan import PlacedOp, Plan
from solvers.memory.levels import HierarchySolution, TransferKind, hierarchy_op_durations, level_pieces, op_level_bytes

__all__ = ["assemble_hierarchy"]


class _Pieces:
    """The solution's buffers by (level, tensor), with names and point intervals."""

    def __init__(self, bridge: HierarchyBridge, solution: HierarchySolution) -> None:
        p = bridge.problem
        self.rows: list[tuple[int, int, int, int, str]] = []  # (level, tensor, lo, hi, name)
        count: dict[tuple[int, int], int] = {}
        for lv, t, lo, hi in sorted(level_pieces(p, solution), key=lambda x: (x[1], x[0], x[2])):
            base = bridge.tensors[t].name
            if lv == p.home(t):
                name = base
            else:
                n = count.get((lv, t), 0)
                count[(lv, t)] = n + 1
                name = f"{base}@{bridge.levels[lv]}.{n}"
            self.rows.append((lv, t, lo, hi, name))
        self.by_key: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
        for lv, t, lo, hi, name in self.rows:
            self.by_key.setdefault((lv, t), []).append((lo, hi, name))
        homes = [name for lv, t, _, _, name in self.rows if lv == p.home(t)]
        if len(homes) != len(set(homes)):
            raise UnsupportedError(f"device {bridge.device.name}: a tensor has two home copies")

    def at(self, level: int, t: int, point: int) -> str:
        for lo, hi, name in self.by_key.get((level, t), ()):
            if lo <= point < hi:
                return name
        raise ValueError(f"tensor {t} has no buffer in level {level} at point {point}")


def _accesses(bridge: HierarchyBridge, solution: HierarchySolution, pieces: _Pieces) -> dict[str, OpAccess]:
    p = bridge.problem
    where: dict[tuple[int, int], int] = {}
    for t in range(p.num_tensors):
        for j, a in enumerate(p.accesses(t)):
            if p.is_real(a):
                where[(a, t)] = j
    per_level = op_level_bytes(p, solution.level)
    out: dict[str, OpAccess] = {}
    for i, name in enumerate(bridge.ops):
        def buffers(t: int) -> tuple[str, ...]:
            return (pieces.at(solution.level[t][where[(i, t)]], t, 2 * i + 1),)

        lb = per_level[i]
        out[name] = OpAccess(name, name, -1, 1, tuple(buffers(t) for t in bridge.base.op_inputs[i]),
                             tuple(buffers(t) for t in bridge.base.op_outputs[i]), lb.get(0, 0),
                             lb.get(p.main_level, 0),
                             tuple((bridge.levels[lv], lb.get(lv, 0)) for lv in range(p.num_levels)))
    return out


def _schedule(bridge: HierarchyBridge, solution: HierarchySolution, hardware: Hardware) -> dict[str, int]:
    """The list schedule's start cycle per activity (``op:<name>``, ``dma:<q>``)."""
    p, dev = bridge.problem, bridge.device
    durations = hierarchy_op_durations(p, solution.level)
    acts: list[Activity] = []
    released: dict[int, list[str]] = {}
    previous: dict[tuple, str] = {}
    evicted: dict[int, str] = {}  # tensor -> its eviction's last hop
    for q, m in enumerate(solution.moves):
        deps = [f"op:{bridge.ops[m.trigger_op]}"] if m.trigger_op >= 0 else []
        chain = (m.kind, m.tensor, m.gap)
        if m.hop > 0:
            deps.append(previous[chain])
        elif m.kind is TransferKind.PREFETCH and m.tensor in evicted:
            deps.append(evicted[m.tensor])
        previous[chain] = f"dma:{q}"
        if m.kind is TransferKind.EVICT:
            evicted[m.tensor] = f"dma:{q}"
        cycles = p.hop_cycles(m.tensor, m.src_level, m.dst_level)
        acts.append(Activity(f"dma:{q}", "dma", hardware.to_timeline_cycles(cycles, dev), tuple(deps), priority=q))
        if m.release_op < p.num_ops:
            released.setdefault(m.release_op, []).append(f"dma:{q}")
    for i, name in enumerate(bridge.ops):
        acts.append(Activity(f"op:{name}", "compute", hardware.to_timeline_cycles(durations[i], dev),
                             tuple(released.get(i, ()))))
    return list_schedule(acts, {"compute": tuple(f"op:{n}" for n in bridge.ops)})


def assemble_hierarchy(plan: Plan, hardware: Hardware, bridge: HierarchyBridge, solution: HierarchySolution,
                       alignment_bytes: int, stats: Mapping | None = None) -> tuple[Plan, MemoryPlan]:
    """The re-timed plan and the memory plan of ``bridge``'s device over all its levels.

    Raises
    ------
    UnsupportedError
        The plan has other devices or transfers (the N-level plan covers one device alone).
    InfeasibleError
        A level's buffers do not pack at aligned addresses (the message names the level).
    """
    d = bridge.device.name
    if plan.transfers or any(o.device != d for o in plan.ops):
        raise UnsupportedError("memory planning over more than two levels covers a single device without "
                               "transfers")
    p = bridge.problem
    pieces = _Pieces(bridge, solution)
    accesses = _accesses(bridge, solution, pieces)
    start = _schedule(bridge, solution, hardware)
    durations = {f"op:{n}": hardware.to_timeline_cycles(c, bridge.device)
                 for n, c in zip(bridge.ops, hierarchy_op_durations(p, solution.level))}
    moves = solution.moves
    dma_end = [start[f"dma:{q}"] + hardware.to_timeline_cycles(p.hop_cycles(m.tensor, m.src_level, m.dst_level),
                                                                 bridge.device) for q, m in enumerate(moves)]
    inst_start = [start[f"op:{n}"] for n in bridge.ops]
    inst_end = [start[f"op:{n}"] + durations[f"op:{n}"] for n in bridge.ops]
    times = DeviceTimes(inst_start, inst_end, max([*inst_end, *dma_end, 0]))
    buffers = _placed_buffers(bridge, pieces, times, hardware, alignment_bytes)
    transfers = []
    destinations = [pieces.at(m.dst_level, m.tensor, 2 * m.trigger_op + 2) for m in moves]
    if len(set(destinations)) != len(destinations):
        # Two hops into one (merged) buffer would give two DMAs one name in the binary.
        raise UnsupportedError(f"device {d}: two DMAs write the same buffer "
                               f"{next(x for x in destinations if destinations.count(x) > 1)!r}")
    for q, m in enumerate(moves):
        point = 2 * m.trigger_op + 2
        lt = bridge.tensors[m.tensor]
        transfers.append(MemoryTransfer(
            m.kind.value, lt.tensor, -1, pieces.at(m.src_level, m.tensor, point),
            pieces.at(m.dst_level, m.tensor, point), p.tensor_bytes[m.tensor],
            bridge.ops[m.trigger_op] if m.trigger_op >= 0 else "",
            bridge.ops[m.release_op] if m.release_op < p.num_ops else "", start[f"dma:{q}"],
            dma_end[q] - start[f"dma:{q}"]))
    device_plan = DeviceMemoryPlan(d, bridge.levels[0], bridge.levels[p.main_level], bridge.ops, accesses,
                                   tuple(buffers), tuple(transfers), {}, dict(stats or {}))
    new_ops = tuple(sorted((PlacedOp(n, d, 0, inst_start[i], durations[f"op:{n}"]) for i, n in enumerate(bridge.ops)),
                           key=lambda o: (o.start_cycle, o.device, o.stream, o.name)))
    makespan = times.device_end
    return (replace(plan, ops=new_ops, makespan_cycles=makespan, objective=makespan),
            MemoryPlan({d: device_plan}))


def _placed_buffers(bridge: HierarchyBridge, pieces: _Pieces, times: DeviceTimes, hardware: Hardware,
                    alignment: int) -> list[MemoryBuffer]:
    """Every piece as a buffer at its cycles, with an address per level."""
    p = bridge.problem
    raw: list[MemoryBuffer] = []
    for lv, t, lo, hi, name in pieces.rows:
        lt = bridge.tensors[t]
        home_preloaded = lv == p.home(t) and lt.preloaded
        first = 0 if home_preloaded else times.point_start(lo)
        raw.append(MemoryBuffer(name, lt.tensor, -1, bridge.levels[lv], 0, lt.size_bytes, first,
                                times.point_end(hi), preloaded=home_preloaded))
    placed: list[MemoryBuffer] = []
    dev = bridge.device
    for lv, level in enumerate(bridge.levels):
        mine = [b for b in raw if b.level == level]
        sized = [b for b in mine if b.size_bytes > 0]
        capacity = dev.memory_capacity_bytes if lv == p.main_level else dev.profile.level(level).capacity_bytes
        addresses = assign_addresses([Lifetime(b.name, b.size_bytes, b.start_cycle, b.end_cycle) for b in sized],
                                     capacity, alignment, device=dev.name, level=level)
        address = dict(zip((b.name for b in sized), addresses))
        placed += [replace(b, address=address.get(b.name, 0)) for b in mine]
    return sorted(placed, key=lambda x: (x.start_cycle, x.level, x.address, x.name))

