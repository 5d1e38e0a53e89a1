"""An N-level solution back to the user's world: buffers in every level, DMA hops, a re-timed plan.

The N-level counterpart of :mod:`~planner.memory.assemble` (issue 14, stage 3), for one
memory-planned device that exchanges nothing with other devices (the spec's only device):

* splits: a solution with split factors is one of the expanded problem
  (:func:`~solvers.memory.levels.expand_hierarchy_splits`): op instances ``op#p`` and portion
  tensors ``x#p``, named as the two-level plan names them (:mod:`~planner.memory.plan`);
* buffers: the solution's pieces (:func:`~solvers.memory.levels.level_pieces`: every copy of
  a tensor in a level over a point interval, contiguous pieces merged). A tensor's copy at
  its home is named like the tensor (``x``; in main memory the host reads outputs there);
  a split tensor's home copy is one whole buffer ``x`` over its portions' home lifetimes, each
  portion ``x#p`` a view inside it (as in the two-level plan); any other copy
  ``x@<level>.<n>`` or ``x#p@<level>.<n>`` (n counts the copies in that level in time
  order; a two-level plan's names exactly);
* accesses: instance i uses the piece of the access's level that holds point ``2i+1`` (an
  op outside a split group reads every portion of a split tensor, concatenated); its
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

from dataclasses import dataclass, replace
from typing import Mapping

from planner.errors import UnsupportedError
from planner.hardware import Hardware
from planner.memory.addresses import Lifetime, assign_addresses
from planner.memory.assemble import DeviceTimes
from planner.memory.hierarchy_bridge import HierarchyBridge
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan, MemoryTransfer, OpAccess
from planner.memory.retime import Activity, list_schedule
from planner.plan import PlacedOp, Plan
from solvers.memory.levels import (
    HierarchyProblem, HierarchySolution, TransferKind, expand_hierarchy_splits, hierarchy_op_durations, level_pieces,
    op_level_bytes,
)

__all__ = ["assemble_hierarchy"]


@dataclass(frozen=True)
class _Expansion:
    """The problem a solution is over (its split groups unrolled by the solution's factors),
    mapped back to the bridge's ops and tensors, with the instance and portion names."""

    problem: HierarchyProblem
    op_origin: tuple[tuple[int, int], ...]  # expanded op -> (bridge op, portion)
    tensor_origin: tuple[tuple[int, int], ...]  # expanded tensor -> (bridge tensor, portion)
    factor_of_op: tuple[int, ...]  # per bridge op (1: whole)
    factor_of_tensor: tuple[int, ...]  # per bridge tensor
    instances: tuple[str, ...]  # per expanded op: "op" or "op#p"
    portion_names: tuple[str, ...]  # per expanded tensor: "x" or "x#p"

    @classmethod
    def of(cls, bridge: HierarchyBridge, solution: HierarchySolution) -> "_Expansion":
        p = bridge.problem
        if p.splits:
            q, smap = expand_hierarchy_splits(p, solution.split_factors)
            op_origin, tensor_origin = smap.op_origin, smap.tensor_origin
        else:
            q = p
            op_origin = tuple((i, 0) for i in range(p.num_ops))
            tensor_origin = tuple((t, 0) for t in range(p.num_tensors))
        fo, ft = [1] * p.num_ops, [1] * p.num_tensors
        for g, k in zip(p.splits, solution.split_factors):
            for i in g.ops:
                fo[i] = k
            for t in g.tensors:
                ft[t] = k
        instances = tuple(f"{bridge.ops[o]}#{k}" if fo[o] > 1 else bridge.ops[o] for o, k in op_origin)
        names = tuple(f"{bridge.tensors[t].name}#{k}" if ft[t] > 1 else bridge.tensors[t].name
                      for t, k in tensor_origin)
        return cls(q, tuple(op_origin), tuple(tensor_origin), tuple(fo), tuple(ft), instances, names)

    def portion(self, t: int) -> int:
        """The portion expanded tensor ``t`` holds (-1: its tensor is whole)."""
        orig, k = self.tensor_origin[t]
        return k if self.factor_of_tensor[orig] > 1 else -1

    def portions_of(self, orig: int) -> list[int]:
        """The expanded tensors of bridge tensor ``orig``, in portion order."""
        return [t for t, (o, _) in enumerate(self.tensor_origin) if o == orig]


class _Pieces:
    """The solution's buffers by (level, expanded tensor), with names and point intervals."""

    def __init__(self, bridge: HierarchyBridge, ex: _Expansion, solution: HierarchySolution) -> None:
        p = ex.problem
        self.rows: list[tuple[int, int, int, int, str]] = []  # (level, tensor, lo, hi, name)
        count: dict[tuple[int, int], int] = {}
        for lv, t, lo, hi in sorted(level_pieces(p, solution), key=lambda x: (x[1], x[0], x[2])):
            base = ex.portion_names[t]
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


def _accesses(bridge: HierarchyBridge, ex: _Expansion, solution: HierarchySolution,
              pieces: _Pieces) -> dict[str, OpAccess]:
    p = ex.problem
    where: dict[tuple[int, int], int] = {}
    for t in range(p.num_tensors):
        for j, a in enumerate(p.accesses(t)):
            if p.is_real(a):
                where[(a, t)] = j
    per_level = op_level_bytes(p, solution.level)
    out: dict[str, OpAccess] = {}
    for i, (orig, k) in enumerate(ex.op_origin):
        factor = ex.factor_of_op[orig]

        def buffers(bridge_tensor: int) -> tuple[str, ...]:
            ids = ex.portions_of(bridge_tensor)
            if len(ids) > 1 and factor > 1:  # in its split group: this instance's portion
                ids = [ids[k]]
            return tuple(pieces.at(solution.level[t][where[(i, t)]], t, 2 * i + 1) for t in ids)

        lb = per_level[i]
        inst = ex.instances[i]
        out[inst] = OpAccess(inst, bridge.ops[orig], k if factor > 1 else -1, factor,
                             tuple(buffers(t) for t in bridge.base.op_inputs[orig]),
                             tuple(buffers(t) for t in bridge.base.op_outputs[orig]), lb.get(0, 0),
                             lb.get(p.main_level, 0),
                             tuple((bridge.levels[lv], lb.get(lv, 0)) for lv in range(p.num_levels)))
    return out


def _schedule(bridge: HierarchyBridge, ex: _Expansion, solution: HierarchySolution,
              hardware: Hardware) -> dict[str, int]:
    """The list schedule's start cycle per activity (``op:<instance>``, ``dma:<q>``)."""
    p, dev = ex.problem, bridge.device
    durations = hierarchy_op_durations(p, solution.level)
    acts: list[Activity] = []
    released: dict[int, list[str]] = {}
    previous: dict[tuple, str] = {}
    evicted: dict[int, str] = {}  # tensor -> its eviction's last hop
    for q, m in enumerate(solution.moves):
        deps = [f"op:{ex.instances[m.trigger_op]}"] if m.trigger_op >= 0 else []
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
    for i, name in enumerate(ex.instances):
        acts.append(Activity(f"op:{name}", "compute", hardware.to_timeline_cycles(durations[i], dev),
                             tuple(released.get(i, ()))))
    return list_schedule(acts, {"compute": tuple(f"op:{n}" for n in ex.instances)})


def assemble_hierarchy(plan: Plan, hardware: Hardware, bridge: HierarchyBridge, solution: HierarchySolution,
                       alignment_bytes: int, stats: Mapping | None = None) -> tuple[Plan, MemoryPlan]:
    """The re-timed plan and the memory plan of ``bridge``'s device over all its levels.

    A split solution (``solution.split_factors``) runs its split ops as instances ``op#p``
    over portion buffers, as a two-level split plan does.

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
    ex = _Expansion.of(bridge, solution)
    p = ex.problem
    pieces = _Pieces(bridge, ex, solution)
    accesses = _accesses(bridge, ex, solution, pieces)
    start = _schedule(bridge, ex, solution, hardware)
    durations = {f"op:{n}": hardware.to_timeline_cycles(c, bridge.device)
                 for n, c in zip(ex.instances, hierarchy_op_durations(p, solution.level))}
    moves = solution.moves
    dma_end = [start[f"dma:{q}"] + hardware.to_timeline_cycles(p.hop_cycles(m.tensor, m.src_level, m.dst_level),
                                                                 bridge.device) for q, m in enumerate(moves)]
    inst_start = [start[f"op:{n}"] for n in ex.instances]
    inst_end = [start[f"op:{n}"] + durations[f"op:{n}"] for n in ex.instances]
    times = DeviceTimes(inst_start, inst_end, max([*inst_end, *dma_end, 0]))
    buffers = _placed_buffers(bridge, ex, pieces, times, hardware, alignment_bytes)
    transfers = []
    destinations = [pieces.at(m.dst_level, m.tensor, 2 * m.trigger_op + 2) for m in moves]
    if len(set(destinations)) != len(destinations):
        # Two hops into one (merged) buffer would give two DMAs one name in the binary.
        raise UnsupportedError(f"device {d}: two DMAs write the same buffer "
                               f"{next(x for x in destinations if destinations.count(x) > 1)!r}")
    for q, m in enumerate(moves):
        point = 2 * m.trigger_op + 2
        lt = bridge.tensors[ex.tensor_origin[m.tensor][0]]
        transfers.append(MemoryTransfer(
            m.kind.value, lt.tensor, ex.portion(m.tensor), pieces.at(m.src_level, m.tensor, point),
            pieces.at(m.dst_level, m.tensor, point), p.tensor_bytes[m.tensor],
            ex.instances[m.trigger_op] if m.trigger_op >= 0 else "",
            ex.instances[m.release_op] if m.release_op < p.num_ops else "", start[f"dma:{q}"],
            dma_end[q] - start[f"dma:{q}"]))
    factors = {label: k for label, k in zip(bridge.base.group_labels, solution.split_factors)}
    device_plan = DeviceMemoryPlan(d, bridge.levels[0], bridge.levels[p.main_level], ex.instances, accesses,
                                   tuple(buffers), tuple(transfers), factors, dict(stats or {}))
    new_ops = tuple(sorted((PlacedOp(n, d, 0, inst_start[i], durations[f"op:{n}"])
                            for i, n in enumerate(ex.instances)),
                           key=lambda o: (o.start_cycle, o.device, o.stream, o.name)))
    makespan = times.device_end
    return (replace(plan, ops=new_ops, makespan_cycles=makespan, objective=makespan),
            MemoryPlan({d: device_plan}))


def _placed_buffers(bridge: HierarchyBridge, ex: _Expansion, pieces: _Pieces, times: DeviceTimes,
                    hardware: Hardware, alignment: int) -> list[MemoryBuffer]:
    """Every piece as a buffer at its cycles, with an address per level; a split tensor's home
    portions as views inside one whole home buffer."""
    p = ex.problem
    raw: list[MemoryBuffer] = []
    split_homes: dict[int, list[tuple[int, int]]] = {}  # bridge tensor -> its portions' home cycles
    for lv, t, lo, hi, name in pieces.rows:
        orig = ex.tensor_origin[t][0]
        lt = bridge.tensors[orig]
        home_preloaded = lv == p.home(t) and lt.preloaded
        first = 0 if home_preloaded else times.point_start(lo)
        if lv == p.home(t) and ex.factor_of_tensor[orig] > 1:
            split_homes.setdefault(orig, []).append((first, times.point_end(hi)))
            continue
        raw.append(MemoryBuffer(name, lt.tensor, ex.portion(t), bridge.levels[lv], 0, p.tensor_bytes[t], first,
                                times.point_end(hi), preloaded=home_preloaded))
    for orig, spans in sorted(split_homes.items()):
        lt = bridge.tensors[orig]
        raw.append(MemoryBuffer(lt.name, lt.tensor, -1, bridge.levels[bridge.problem.home(orig)], 0, lt.size_bytes,
                                min(s for s, _ in spans), max(e for _, e in spans), preloaded=lt.preloaded))
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
    by_name = {b.name: b for b in placed}
    for orig in sorted(split_homes):
        parent = by_name[bridge.tensors[orig].name]
        k = ex.factor_of_tensor[orig]
        part = parent.size_bytes // k
        placed += [MemoryBuffer(f"{parent.name}#{j}", parent.tensor, j, parent.level, parent.address + j * part, part,
                                parent.start_cycle, parent.end_cycle, view_of=parent.name) for j in range(k)]
    return sorted(placed, key=lambda x: (x.start_cycle, x.level, x.address, x.name))
