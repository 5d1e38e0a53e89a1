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
* times: a list schedule (:func:`~planner.memory.retime.list_schedule`; shared bandwidth: with the
  gate of :func:`~planner.memory.shared_bandwidth.hierarchy_gate`) of the ops in order
  and the hops on the DMA engine, each hop after its trigger op, the previous hop of its
  move and (a fetch's first hop) the tensor's eviction; an op after the hops it releases;
* addresses: per level, greedy-by-size then CP-SAT over the pieces' cycle lifetimes
  (:func:`~planner.memory.addresses.assign_addresses`), each level at its capacity;
* several streams: the same plan with each op on its stream (:func:`_overlapped`), kept when
  strictly shorter, its buffers over their writers' and readers' cycles and every cross-stream
  ordering a memory wait (``docs/memory.md``, "N levels in plan solve", several streams).

Points map to cycles as in :mod:`~planner.memory.assemble` (monotone, so pieces disjoint in
points are disjoint in cycles and the solver's per-level capacity holds in cycles).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from planner.errors import InfeasibleError, UnsupportedError
from planner.hardware import Hardware
from planner.memory.addresses import Lifetime, assign_addresses
from planner.memory.assemble import DeviceTimes
from planner.memory.hierarchy_bridge import HierarchyBridge
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan, MemoryTransfer, OpAccess
from planner.memory.retime import Activity, list_schedule
from planner.memory.shared_bandwidth import hierarchy_gate
from planner.plan import PlacedOp, Plan
from solvers.memory.levels import (
    HierarchyProblem, HierarchySolution, TransferKind, expand_hierarchy_splits, hierarchy_op_durations, level_pieces,
    op_level_bytes,
)

__all__ = ["assemble_hierarchy", "Expansion", "Pieces", "instance_accesses", "activity_durations", "move_deps",
           "memory_transfers", "placed_buffers"]


@dataclass(frozen=True)
class Expansion:
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
    def of(cls, bridge: HierarchyBridge, solution: HierarchySolution) -> "Expansion":
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


class Pieces:
    """The solution's buffers by (level, expanded tensor), with names and point intervals."""

    def __init__(self, bridge: HierarchyBridge, ex: Expansion, solution: HierarchySolution) -> None:
        p = ex.problem
        self.rows: list[tuple[int, int, int, int, str]] = []  # (level, tensor, lo, hi, name)
        count: dict[tuple[int, int], int] = {}
        for lv, t, lo, hi in sorted(_one_writer_each(p, solution), key=lambda x: (x[1], x[0], x[2])):
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


def _one_writer_each(p: HierarchyProblem, solution: HierarchySolution) -> list[tuple[int, int, int, int]]:
    """:func:`~solvers.memory.levels.level_pieces`, cut where a hop's copy starts inside a merged
    piece: a copy dropped after op k and fetched again by a hop triggered by k into the same
    level are contiguous on the point axis, but two buffers (each written once, by one DMA)."""
    cuts: dict[tuple[int, int], set[int]] = {}
    for m in solution.moves:
        cuts.setdefault((m.dst_level, m.tensor), set()).add(2 * m.trigger_op + 2)
    out = []
    for lv, t, lo, hi in level_pieces(p, solution):
        edges = [lo, *sorted(c for c in cuts.get((lv, t), ()) if lo < c < hi), hi]
        out += [(lv, t, a, b) for a, b in zip(edges, edges[1:])]
    return out


def instance_accesses(bridge: HierarchyBridge, ex: Expansion, solution: HierarchySolution,
              pieces: Pieces) -> dict[str, OpAccess]:
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


def move_deps(ex: Expansion, solution: HierarchySolution) -> dict[str, list[str]]:
    """Per activity (``op:<instance>``, ``dma:<q>``) what it waits for from the moves: a hop its
    trigger op, the previous hop of its move and (a fetch's first hop) the tensor's eviction; an
    op the hops it releases (in queue order)."""
    deps: dict[str, list[str]] = {f"op:{n}": [] for n in ex.instances}
    previous: dict[tuple, str] = {}
    evicted: dict[int, str] = {}  # tensor -> its eviction's last hop
    for q, m in enumerate(solution.moves):
        act = f"dma:{q}"
        mine = [f"op:{ex.instances[m.trigger_op]}"] if m.trigger_op >= 0 else []
        chain = (m.kind, m.tensor, m.gap)
        if m.hop > 0:
            mine.append(previous[chain])
        elif m.kind is TransferKind.PREFETCH and m.tensor in evicted:
            mine.append(evicted[m.tensor])
        previous[chain] = act
        if m.kind is TransferKind.EVICT:
            evicted[m.tensor] = act
        deps[act] = mine
        if m.release_op < ex.problem.num_ops:
            deps[f"op:{ex.instances[m.release_op]}"].append(act)
    return deps


def _schedule(bridge: HierarchyBridge, ex: Expansion, solution: HierarchySolution,
              hardware: Hardware) -> dict[str, int]:
    """The list schedule's start cycle per activity (``op:<instance>``, ``dma:<q>``), every op on
    one stream in the solver's order."""
    duration = activity_durations(hardware, bridge, ex, solution)
    deps = move_deps(ex, solution)
    acts = [Activity(f"dma:{q}", "dma", duration[f"dma:{q}"], tuple(deps[f"dma:{q}"]), priority=q)
            for q in range(len(solution.moves))]
    acts += [Activity(f"op:{n}", "compute", duration[f"op:{n}"], tuple(deps[f"op:{n}"])) for n in ex.instances]
    gate = hierarchy_gate(bridge.device.name, ex.problem, solution, tuple(f"op:{n}" for n in ex.instances),
                          tuple(f"dma:{q}" for q in range(len(solution.moves))))
    return list_schedule(acts, {"compute": tuple(f"op:{n}" for n in ex.instances)}, gate)


def assemble_hierarchy(plan: Plan, hardware: Hardware, bridge: HierarchyBridge, solution: HierarchySolution,
                       alignment_bytes: int, stats: Mapping | None = None) -> tuple[Plan, MemoryPlan]:
    """The re-timed plan and the memory plan of ``bridge``'s device over all its levels.

    A split solution (``solution.split_factors``) runs its split ops as instances ``op#p``
    over portion buffers, as a two-level split plan does. On a device whose ops use several
    streams, the plan with each op on its stream (:func:`_overlapped`) is kept when it is
    strictly shorter than the one-stream plan and its buffers pack.

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
    ex = Expansion.of(bridge, solution)
    pieces = Pieces(bridge, ex, solution)
    accesses = instance_accesses(bridge, ex, solution, pieces)
    destinations = [pieces.at(m.dst_level, m.tensor, 2 * m.trigger_op + 2) for m in solution.moves]
    if len(set(destinations)) != len(destinations):
        # Two hops into one (merged) buffer would give two DMAs one name in the binary.
        raise UnsupportedError(f"device {d}: two DMAs write the same buffer "
                               f"{next(x for x in destinations if destinations.count(x) > 1)!r}")
    serial = _serial(plan, hardware, bridge, ex, pieces, accesses, solution, alignment_bytes, stats)
    stream_of = {o.name: o.stream for o in plan.ops}
    streams = tuple(stream_of[bridge.ops[o]] for o, _ in ex.op_origin)
    if len(set(streams)) < 2:
        return serial
    try:
        overlapped = _overlapped(plan, hardware, bridge, ex, pieces, accesses, solution, alignment_bytes, stats,
                                 streams)
    except InfeasibleError:  # its buffers do not pack: the one-stream plan stands
        return serial
    return overlapped if overlapped[0].makespan_cycles < serial[0].makespan_cycles else serial


def activity_durations(hardware: Hardware, bridge: HierarchyBridge, ex: Expansion, solution: HierarchySolution
               ) -> dict[str, int]:
    """Timeline cycles per activity (``op:<instance>``, ``dma:<q>``)."""
    p, dev = ex.problem, bridge.device
    out = {f"op:{n}": hardware.to_timeline_cycles(c, dev)
           for n, c in zip(ex.instances, hierarchy_op_durations(p, solution.level))}
    for q, m in enumerate(solution.moves):
        out[f"dma:{q}"] = hardware.to_timeline_cycles(p.hop_cycles(m.tensor, m.src_level, m.dst_level), dev)
    return out


def memory_transfers(bridge: HierarchyBridge, ex: Expansion, pieces: Pieces, solution: HierarchySolution,
                      start: Mapping[str, int], duration: Mapping[str, int]) -> tuple[MemoryTransfer, ...]:
    p = ex.problem
    out = []
    for q, m in enumerate(solution.moves):
        point = 2 * m.trigger_op + 2
        lt = bridge.tensors[ex.tensor_origin[m.tensor][0]]
        out.append(MemoryTransfer(
            m.kind.value, lt.tensor, ex.portion(m.tensor), pieces.at(m.src_level, m.tensor, point),
            pieces.at(m.dst_level, m.tensor, point), p.tensor_bytes[m.tensor],
            ex.instances[m.trigger_op] if m.trigger_op >= 0 else "",
            ex.instances[m.release_op] if m.release_op < p.num_ops else "", start[f"dma:{q}"],
            duration[f"dma:{q}"]))
    return tuple(out)


def _result(plan: Plan, bridge: HierarchyBridge, ex: Expansion, solution: HierarchySolution, accesses,
            buffers, transfers, stats, start: Mapping[str, int], duration: Mapping[str, int],
            streams: tuple[int, ...] | None, waits: tuple[tuple[str, str], ...] = ()) -> tuple[Plan, MemoryPlan]:
    d, p = bridge.device.name, ex.problem
    factors = {label: k for label, k in zip(bridge.base.group_labels, solution.split_factors)}
    order = ex.instances if streams is None else tuple(
        n for _, _, n in sorted((start[f"op:{n}"], i, n) for i, n in enumerate(ex.instances)))
    device_plan = DeviceMemoryPlan(d, bridge.levels[0], bridge.levels[p.main_level], order, accesses,
                                   tuple(buffers), tuple(transfers), factors, dict(stats or {}), memory_waits=waits)
    new_ops = tuple(sorted((PlacedOp(n, d, 0 if streams is None else streams[i], start[f"op:{n}"],
                                     duration[f"op:{n}"]) for i, n in enumerate(ex.instances)),
                           key=lambda o: (o.start_cycle, o.device, o.stream, o.name)))
    makespan = max([start[a] + duration[a] for a in duration] + [0])
    return (replace(plan, ops=new_ops, makespan_cycles=makespan, objective=makespan),
            MemoryPlan({d: device_plan}))


def _serial(plan: Plan, hardware: Hardware, bridge: HierarchyBridge, ex: Expansion, pieces: Pieces, accesses,
            solution: HierarchySolution, alignment_bytes: int, stats) -> tuple[Plan, MemoryPlan]:
    """Every op on stream 0 in the solver's order; buffers over the points mapped to cycles."""
    start = _schedule(bridge, ex, solution, hardware)
    duration = activity_durations(hardware, bridge, ex, solution)
    end = {a: start[a] + duration[a] for a in duration}
    inst_start = [start[f"op:{n}"] for n in ex.instances]
    inst_end = [end[f"op:{n}"] for n in ex.instances]
    times = DeviceTimes(inst_start, inst_end, max([*end.values(), 0]))
    buffers = placed_buffers(bridge, ex, pieces, times, hardware, alignment_bytes)
    transfers = memory_transfers(bridge, ex, pieces, solution, start, duration)
    return _result(plan, bridge, ex, solution, accesses, buffers, transfers, stats, start, duration, None)


class _Uses:
    """Which activity writes each buffer piece and which read it (``op:<instance>``, ``dma:<q>``)."""

    def __init__(self, ex: Expansion, pieces: Pieces, solution: HierarchySolution) -> None:
        p = ex.problem
        self.writer: dict[str, str] = {}
        self.readers: dict[str, list[str]] = {}
        self.reads: dict[str, list[str]] = {}  # activity -> the pieces it reads
        for t in range(p.num_tensors):
            for j, a in enumerate(p.accesses(t)):
                if not p.is_real(a):
                    continue
                act, name = f"op:{ex.instances[a]}", pieces.at(solution.level[t][j], t, 2 * a + 1)
                if t in p.writes[a]:
                    self.writer[name] = act
                else:
                    self._read(act, name)
        for q, m in enumerate(solution.moves):
            point = 2 * m.trigger_op + 2
            self._read(f"dma:{q}", pieces.at(m.src_level, m.tensor, point))
            self.writer[pieces.at(m.dst_level, m.tensor, point)] = f"dma:{q}"

    def _read(self, act: str, name: str) -> None:
        self.readers.setdefault(name, []).append(act)
        self.reads.setdefault(act, []).append(name)


def _overlapped(plan: Plan, hardware: Hardware, bridge: HierarchyBridge, ex: Expansion, pieces: Pieces, accesses,
                solution: HierarchySolution, alignment_bytes: int, stats,
                streams: tuple[int, ...]) -> tuple[Plan, MemoryPlan]:
    """Each op on its stream (in the solver's order per stream), DMAs on the engine as ready.

    The solver's plan runs its ops in series; here an op starts after the previous op of its
    stream, the hops it releases and the writer of every buffer it reads (so a copy is written
    before it is read, whatever stream reads it); a hop after its trigger, the previous hop of
    its move, the tensor's eviction (a fetch) and the writer of its source. A buffer lives from
    its writer's start (a home copy from cycle 0 if preloaded) to its last reader's end (a home
    copy to the end), and each level packs its buffers over those cycles (capacity is checked
    there, not on the solver's points). Every ordering the timing relies on between two
    streams, or a stream and the DMA engine, is a memory wait that lowering turns into a
    SIGNAL/WAIT pair: the reads above, and address reuse (a buffer allocated where one freed
    earlier lay waits for that free).
    """
    p = ex.problem
    uses = _Uses(ex, pieces, solution)
    duration = activity_durations(hardware, bridge, ex, solution)
    deps = _overlapped_deps(ex, solution, uses)
    acts = [Activity(a, "dma" if a.startswith("dma:") else f"s{streams[i]}", duration[a], tuple(deps[a]),
                     priority=i) for i, a in enumerate([*(f"op:{n}" for n in ex.instances),
                                                         *(f"dma:{q}" for q in range(len(solution.moves)))])]
    sequences = {}
    for i, n in enumerate(ex.instances):
        sequences.setdefault(f"s{streams[i]}", []).append(f"op:{n}")
    # shared bandwidth: only the shares, not the solver's (serial) order, which would undo the overlap
    gate = hierarchy_gate(bridge.device.name, p, solution, tuple(f"op:{n}" for n in ex.instances),
                          tuple(f"dma:{q}" for q in range(len(solution.moves))), in_order=False)
    start = list_schedule(acts, {k: tuple(v) for k, v in sequences.items()}, gate)
    end = {a: start[a] + duration[a] for a in duration}
    device_end = max([*end.values(), 0])
    life: dict[str, tuple[int, int]] = {}
    for lv, t, _, _, name in pieces.rows:
        home = lv == p.home(t)
        writer = uses.writer.get(name)
        first = start[writer] if writer else 0
        last = device_end if home else max([end[r] for r in uses.readers.get(name, [])]
                                           + ([end[writer]] if writer else []))
        life[name] = (first, last)
    buffers = placed_buffers(bridge, ex, pieces, None, hardware, alignment_bytes, life)
    resource = {a.name: a.resource for a in acts}
    allocated_by = dict(uses.writer)
    for b in buffers:  # a split tensor's whole home copy: allocated by its first portion's writer
        if b.view_of and uses.writer.get(b.name) is not None:
            w = uses.writer[b.name]
            if b.view_of not in allocated_by or start[w] < start[allocated_by[b.view_of]]:
                allocated_by[b.view_of] = w
    waits = _read_waits(deps, resource, solution, ex) | _reuse_waits(buffers, uses, allocated_by, resource, end)
    transfers = memory_transfers(bridge, ex, pieces, solution, start, duration)
    return _result(plan, bridge, ex, solution, accesses, buffers, transfers, stats, start, duration, streams,
                   tuple(sorted(waits)))


def _overlapped_deps(ex: Expansion, solution: HierarchySolution, uses: _Uses) -> dict[str, list[str]]:
    """:func:`move_deps`, and every activity after the writer of each buffer it reads."""
    deps = move_deps(ex, solution)
    for act, names in uses.reads.items():
        for name in names:
            w = uses.writer.get(name)
            if w is not None and w != act and w not in deps[act]:
                deps[act].append(w)
    return deps


def _read_waits(deps: Mapping[str, list[str]], resource: Mapping[str, str], solution: HierarchySolution,
                ex: Expansion) -> set[tuple[str, str]]:
    """The dependencies between two resources that lowering does not already order (a DMA's
    trigger and release are its own semaphores; DMA after DMA is the engine's order)."""
    own = set()
    for q, m in enumerate(solution.moves):
        if m.trigger_op >= 0:
            own.add((f"dma:{q}", f"op:{ex.instances[m.trigger_op]}"))
        if m.release_op < ex.problem.num_ops:
            own.add((f"op:{ex.instances[m.release_op]}", f"dma:{q}"))
    return {(_plan_name(a), _plan_name(d)) for a, ds in deps.items() for d in ds
            if resource[a] != resource[d] and (a, d) not in own}


def _reuse_waits(buffers: list[MemoryBuffer], uses: _Uses, allocated_by: Mapping[str, str],
                 resource: Mapping[str, str], end: Mapping[str, int]) -> set[tuple[str, str]]:
    """Per level, a buffer allocated at addresses an earlier buffer freed waits for that free
    (its last reader, the latest one per other resource)."""
    def freed_by(b: MemoryBuffer) -> str | None:
        readers = uses.readers.get(b.name, [])
        return max(readers, key=lambda r: (end[r], r)) if readers else uses.writer.get(b.name)

    waits: set[tuple[str, str]] = set()
    placed = [b for b in buffers if not b.view_of and b.size_bytes > 0]
    for b in placed:
        w = allocated_by.get(b.name)
        if w is None:
            continue
        latest: dict[str, str] = {}
        for c in placed:
            if c is b or c.level != b.level or c.end_cycle > b.start_cycle:
                continue
            if c.address >= b.address + b.size_bytes or b.address >= c.address + c.size_bytes:
                continue
            f = freed_by(c)
            if f is None or resource[f] == resource[w]:
                continue
            if resource[f] not in latest or end[f] > end[latest[resource[f]]]:
                latest[resource[f]] = f
        waits |= {(_plan_name(w), _plan_name(f)) for f in latest.values()}
    return waits


def _plan_name(act: str) -> str:
    """A memory wait's name: the op instance, or ``dma:<q>`` (the transfer's index)."""
    return act[3:] if act.startswith("op:") else act


def placed_buffers(bridge: HierarchyBridge, ex: Expansion, pieces: Pieces, times: DeviceTimes | None,
                    hardware: Hardware, alignment: int,
                    life: Mapping[str, tuple[int, int]] | None = None) -> list[MemoryBuffer]:
    """Every piece as a buffer at its cycles (its points mapped by ``times``, or ``life``'s
    cycles), with an address per level; a split tensor's home portions as views inside one
    whole home buffer."""
    p = ex.problem
    raw: list[MemoryBuffer] = []
    split_homes: dict[int, list[tuple[int, int]]] = {}  # bridge tensor -> its portions' home cycles
    for lv, t, lo, hi, name in pieces.rows:
        orig = ex.tensor_origin[t][0]
        lt = bridge.tensors[orig]
        home_preloaded = lv == p.home(t) and lt.preloaded
        if life is None:
            first, last = (0 if home_preloaded else times.point_start(lo)), times.point_end(hi)
        else:
            first, last = (0 if home_preloaded else life[name][0]), life[name][1]
        if lv == p.home(t) and ex.factor_of_tensor[orig] > 1:
            split_homes.setdefault(orig, []).append((first, last))
            continue
        raw.append(MemoryBuffer(name, lt.tensor, ex.portion(t), bridge.levels[lv], 0, p.tensor_bytes[t], first,
                                last, preloaded=home_preloaded))
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
