"""Plan → one timed program per device.

Each placed op becomes one compute instruction whose operands come from the graph (so
the simulator can recompute its cycles); each transfer becomes a SEND on the source
device and a RECV on the destination; a dependency between two streams of one device
becomes a SIGNAL/WAIT pair; buffers get ALLOC/FREE at the ends of their lifetimes, the
same lifetimes the scheduler's memory constraint uses
(:mod:`solvers.scheduling.problem`):

* weights and graph inputs an op on the device reads: from cycle 0 to the device's end
  (ALLOC marked preloaded: the host fills them before the run);
* each output tensor of op u: ``[start[u], max(end[u], end of u's consumers on the
  device, end of every transfer out of u))``;
* the received copy of a transfer e=(u, v): ``[start[e], end[v])`` on v's device.

Instructions are ordered by start cycle, then stream, then kind (FREE, SIGNAL, WAIT,
ALLOC, RECV, compute, SEND), then op name; HALT is last, at the device's last cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.graph.ir import Graph
from planner.hardware import Device, Hardware
from planner.isa.cost import op_cost
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    TRANSFER_STREAM,
    Instruction,
    LevelInfo,
    LinkInfo,
    Opcode,
    Program,
    VectorOp,
)
from planner.isa.resources import determine_resources
from planner.plan import Plan, PlacedTransfer

__all__ = ["lower", "allocation", "transfer_order", "peak_memory", "ALLOCATION_FORMAT_VERSION"]

ALLOCATION_FORMAT_VERSION = 1

_RANK = {Opcode.FREE: 0, Opcode.SIGNAL: 1, Opcode.WAIT: 2, Opcode.ALLOC: 3, Opcode.RECV: 4,
         Opcode.SEND: 6, Opcode.HALT: 9}
_COMPUTE_RANK = 5


@dataclass
class _Buffer:
    id: int
    name: str
    size_bytes: int


class _DeviceProgram:
    """Collects one device's buffers and instructions, then sorts them."""

    def __init__(self, device: Device) -> None:
        self.device = device
        profile = device.profile
        self.main = profile.memory.index(profile.main_memory)
        self.buffers: list[_Buffer] = []
        self.by_name: dict[str, _Buffer] = {}
        self.items: list[Instruction] = []
        self.empty: set[int] = set()

    def buffer(self, name: str, size_bytes: int) -> int:
        buf = self.by_name.get(name)
        if buf is None:
            buf = _Buffer(len(self.buffers), name, size_bytes)
            self.buffers.append(buf)
            self.by_name[name] = buf
        return buf.id

    def alloc(self, buf: int, start: int, end: int, stream: int, op: str, preloaded: bool = False) -> None:
        size = self.buffers[buf].size_bytes
        self.items.append(Instruction(Opcode.ALLOC, stream, start, 0, op=op,
                                      subop=ALLOC_PRELOADED if preloaded else 0,
                                      a=buf, b=self.main, c=size))
        self.items.append(Instruction(Opcode.FREE, stream, end, 0, op=op, a=buf, b=self.main, c=size))
        if end == start:
            self.empty.add(buf)  # an empty lifetime: list its FREE after its ALLOC

    def add(self, ins: Instruction) -> None:
        self.items.append(ins)


def _sort_key(ins: Instruction, empty: set[int]) -> tuple:
    rank = _RANK.get(ins.opcode, _COMPUTE_RANK)
    if ins.opcode == Opcode.FREE and ins.a in empty:
        rank = _RANK[Opcode.HALT]
    return (ins.opcode == Opcode.HALT, ins.start_cycle, ins.stream, rank, ins.op, ins.a, ins.c)


def transfer_order(plan: Plan) -> tuple[PlacedTransfer, ...]:
    """The plan's transfers in transfer-id order (start, source op, destination op).

    Examples
    --------
    >>> transfer_order(Plan("s", "latency", "OPTIMAL", 0, 0, 0.0, 0, 10**9, (), ()))
    ()
    """
    return tuple(sorted(plan.transfers, key=lambda t: (t.start_cycle, t.src_op, t.dst_op, t.link)))


def _compute_instruction(op_name: str, graph: Graph, device: Device, main: int,
                         stream: int, start: int, duration: int,
                         reads: tuple[int, ...], writes: tuple[int, ...]) -> Instruction:
    op = graph.ops[op_name]
    cost = op_cost(op, graph, device.profile, device.kind)
    common = dict(op=op_name, reads=reads, writes=writes)
    if cost.explicit:
        return Instruction(Opcode.TASK, stream, start, duration, a=cost.operands[0], **common)
    if cost.unit == "matrix":
        t, k, n, sets = cost.operands
        return Instruction(Opcode.MATMUL, stream, start, duration, a=t, b=k, c=n, d=sets,
                           mem_bytes=cost.bytes_moved, **common)
    if cost.unit == "vector":
        elements, window = cost.operands
        return Instruction(Opcode.VECTOR, stream, start, duration, subop=int(VectorOp.from_op_type(op.type)),
                           a=elements, b=window, mem_bytes=cost.bytes_moved, **common)
    if cost.unit == "dma":
        return Instruction(Opcode.DMA, stream, start, duration, a=main, b=main, c=cost.operands[0], **common)
    raise AssertionError(f"no instruction for unit {cost.unit!r}")  # pragma: no cover


def _check(plan: Plan, graph: Graph, hardware: Hardware) -> None:
    names = {o.name for o in plan.ops}
    missing = [n for n in graph.topological_order() if n not in names]
    extra = sorted(names - set(graph.ops))
    if missing or extra or len(names) != len(plan.ops):
        raise ValueError(f"plan and graph disagree: unplaced ops {missing[:5]}, unknown ops {extra[:5]}"
                         + (", an op placed twice" if len(names) != len(plan.ops) else ""))
    devices = {d.name: d for d in hardware.devices}
    links = {link.name for link in hardware.links}
    for o in plan.ops:
        if o.device not in devices:
            raise ValueError(f"op {o.name!r} is placed on unknown device {o.device!r}")
        if not 0 <= o.stream < devices[o.device].streams:
            raise ValueError(f"op {o.name!r} uses stream {o.stream} of {o.device!r}, "
                             f"which has {devices[o.device].streams}")
    for t in plan.transfers:
        if t.link not in links:
            raise ValueError(f"transfer {t.src_op}->{t.dst_op} uses unknown link {t.link!r}")


def lower(plan: Plan, graph: Graph, hardware: Hardware) -> dict[str, Program]:
    """One program per device of ``hardware`` (in hardware order), timed as the plan says.

    Parameters
    ----------
    plan
        The schedule: every op of ``graph`` placed once, the cross-device transfers.
    graph, hardware
        What the plan was made for.

    Returns
    -------
    dict[str, Program]
        Device name → program (a device without ops gets a program with just HALT).

    Raises
    ------
    ValueError
        The plan does not fit the graph or hardware (unplaced op, unknown device, stream
        or link, a cross-device edge without its transfer).

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device
    >>> from planner.isa.profiles import get_profile
    >>> from planner.plan import PlacedOp
    >>> g = Graph([Tensor("t", (4,))], [Op("a", "task", (), ("t",), cycles={"g": 3}),
    ...                                 Op("b", "task", ("t",), (), cycles={"g": 2})])
    >>> hw = Hardware((Device("g0", "g", get_profile("generic")),), ())
    >>> plan = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9,
    ...             (PlacedOp("a", "g0", 0, 0, 3), PlacedOp("b", "g0", 0, 3, 2)), ())
    >>> [(i.opcode.name, i.start_cycle, i.op) for i in lower(plan, g, hw)["g0"].instructions]
    [('ALLOC', 0, 'a'), ('TASK', 0, 'a'), ('TASK', 3, 'b'), ('FREE', 5, 'a'), ('HALT', 5, '')]
    """
    _check(plan, graph, hardware)
    placed = {o.name: o for o in plan.ops}
    transfers = transfer_order(plan)
    by_edge: dict[tuple[str, str], tuple[int, PlacedTransfer]] = {}
    for tid, t in enumerate(transfers):
        by_edge[(t.src_op, t.dst_op)] = (tid, t)
    outgoing: dict[str, list[PlacedTransfer]] = {}
    for t in transfers:
        outgoing.setdefault(t.src_op, []).append(t)
    link_ids = {link.name: i for i, link in enumerate(hardware.links)}
    builders = {d.name: _DeviceProgram(d) for d in hardware.devices}

    # Output buffers (one per tensor, living as long as the op's output buffer).
    for name in graph.topological_order():
        o = placed[name]
        b = builders[o.device]
        end = o.end_cycle
        for succ in sorted(graph.dag.successors(name)):
            if placed[succ].device == o.device:
                end = max(end, placed[succ].end_cycle)
        for t in outgoing.get(name, ()):
            end = max(end, t.end_cycle)
        for tensor in graph.ops[name].outputs:
            buf = b.buffer(tensor, graph.tensors[tensor].size_bytes)
            b.alloc(buf, o.start_cycle, end, o.stream, name)

    # Received copies: SEND on the source, RECV on the destination.
    received: dict[tuple[str, str], int] = {}
    for tid, t in enumerate(transfers):
        src, dst = builders[t.src_device], builders[t.dst_device]
        if placed[t.src_op].device != t.src_device or placed[t.dst_op].device != t.dst_device:
            raise ValueError(f"transfer {t.src_op}->{t.dst_op} runs {t.src_device}->{t.dst_device}, "
                             f"but the ops sit on {placed[t.src_op].device} and {placed[t.dst_op].device}")
        tensors = t.tensors or tuple(x for x in graph.ops[t.src_op].outputs
                                     if x in graph.ops[t.dst_op].inputs)
        sent = tuple(src.by_name[x].id for x in tensors if x in src.by_name)
        # Tensors name a data edge uniquely; a control edge (no tensors) is named by its source op,
        # so two control edges from one device into one consumer get two buffers.
        label = "+".join(tensors) or f"after:{t.src_op}"
        recv = dst.buffer(f"{label}@{t.src_device}->{t.dst_op}", t.size_bytes)
        received[(t.src_op, t.dst_op)] = recv
        dst.alloc(recv, t.start_cycle, max(t.end_cycle, placed[t.dst_op].end_cycle), TRANSFER_STREAM, t.dst_op)
        link = link_ids[t.link]
        src.add(Instruction(Opcode.SEND, TRANSFER_STREAM, t.start_cycle, t.duration_cycles, op=t.src_op,
                            a=link, b=t.size_bytes, c=tid, reads=sent, peer=t.dst_device))
        dst.add(Instruction(Opcode.RECV, TRANSFER_STREAM, t.start_cycle, t.duration_cycles, op=t.dst_op,
                            a=link, b=t.size_bytes, c=tid, writes=(recv,), peer=t.src_device))

    # Compute instructions, resident buffers, cross-stream semaphores.
    resident: dict[str, list[int]] = {d: [] for d in builders}
    semaphores = {d: 0 for d in builders}
    for name in graph.topological_order():
        o, op = placed[name], graph.ops[name]
        b = builders[o.device]
        reads: list[int] = []
        for tensor in op.inputs:
            producer = graph.producer(tensor)
            if producer is None:
                before = len(b.buffers)
                buf = b.buffer(tensor, graph.tensors[tensor].size_bytes)
                if len(b.buffers) > before:
                    resident[o.device].append(buf)
            elif placed[producer].device == o.device:
                buf = b.by_name[tensor].id
            elif (producer, name) in received:
                buf = received[(producer, name)]
            else:
                raise ValueError(f"op {name!r} on {o.device} reads {tensor!r} from {producer!r} on "
                                 f"{placed[producer].device}, but the plan has no transfer for it")
            if buf not in reads:
                reads.append(buf)
        writes = tuple(b.by_name[t].id for t in op.outputs)
        b.add(_compute_instruction(name, graph, b.device, b.main, o.stream, o.start_cycle,
                                   o.duration_cycles, tuple(reads), writes))
        for pred in sorted(graph.dag.predecessors(name)):
            p = placed[pred]
            if p.device == o.device and p.stream != o.stream:
                sem = semaphores[o.device]
                semaphores[o.device] += 1
                b.add(Instruction(Opcode.SIGNAL, p.stream, p.end_cycle, 0, op=pred, a=sem))
                b.add(Instruction(Opcode.WAIT, o.stream, o.start_cycle, 0, op=name, a=sem))

    programs: dict[str, Program] = {}
    for dev in hardware.devices:
        b = builders[dev.name]
        end = max((i.end_cycle for i in b.items), default=0)
        for buf in resident[dev.name]:
            b.alloc(buf, 0, end, 0, "", preloaded=True)
        b.add(Instruction(Opcode.HALT, 0, end, 0))
        used_links = {i.a for i in b.items if i.opcode in (Opcode.SEND, Opcode.RECV)}
        links = tuple(LinkInfo(i, lk.name, lk.bandwidth_bytes_per_s, lk.latency_cycles)
                      for i, lk in enumerate(hardware.links) if i in used_links or dev.name in lk.devices)
        levels = tuple(LevelInfo(lv.name, dev.memory_capacity_bytes if i == b.main else lv.capacity_bytes,
                                 lv.bandwidth_bytes_per_s) for i, lv in enumerate(dev.profile.memory))
        p = dev.profile
        programs[dev.name] = Program(
            device=dev.name, profile=p.name, device_clock_hz=p.clock_hz, reference_clock_hz=hardware.clock_hz,
            mxu_rows=p.mxu_rows, mxu_cols=p.mxu_cols, vector_lanes=p.vector_lanes,
            dma_latency_cycles=p.dma_latency_cycles, levels=levels, main_level=b.main, links=links,
            num_streams=dev.streams, buffers=tuple(x.name for x in b.buffers),
            instructions=tuple(sorted(b.items, key=lambda i: _sort_key(i, b.empty))))
    return programs


def peak_memory(program: Program) -> dict[str, int]:
    """Peak live bytes per memory level, replaying ALLOC/FREE (FREE first at equal cycles).

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> ins = (Instruction(Opcode.ALLOC, 0, 0, 0, a=0, c=8), Instruction(Opcode.FREE, 0, 5, 0, a=0, c=8),
    ...        Instruction(Opcode.ALLOC, 0, 5, 0, a=1, c=6), Instruction(Opcode.HALT, 0, 5, 0))
    >>> peak_memory(Program("d", "g", 1, 1, 1, 1, 1, 0, (LevelInfo("m", 9, 1),), 0, (), 1, ("x", "y"), ins))
    {'m': 8}
    """
    events = sorted((i.start_cycle, 0 if i.opcode == Opcode.FREE else 1, i.b, i.c)
                    for i in program.instructions if i.opcode in (Opcode.ALLOC, Opcode.FREE))
    live = [0] * len(program.levels)
    peak = [0] * len(program.levels)
    for _, is_alloc, level, size in events:
        live[level] += size if is_alloc else -size
        peak[level] = max(peak[level], live[level])
    return {lv.name: peak[i] for i, lv in enumerate(program.levels)}


def _streams_used(program: Program) -> list[int]:
    return sorted({i.stream for i in program.instructions
                   if i.opcode not in (Opcode.HALT,) and i.stream != 0xFFFF and i.op})


def allocation(plan: Plan, graph: Graph, hardware: Hardware,
               programs: dict[str, Program] | None = None) -> dict[str, Any]:
    """The ``allocation.json`` document: devices, reserved memory, op placement, resources.

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device
    >>> from planner.isa.profiles import get_profile
    >>> from planner.plan import PlacedOp
    >>> g = Graph([Tensor("t", (4,))], [Op("a", "task", (), ("t",), cycles={"g": 3})])
    >>> hw = Hardware((Device("g0", "g", get_profile("generic")),), ())
    >>> plan = Plan("s", "latency", "OPTIMAL", 3, 3, 0.0, 3, 10**9, (PlacedOp("a", "g0", 0, 0, 3),), ())
    >>> allocation(plan, g, hw)["devices"]["g0"]["memory"]["mem"]["reserved_bytes"]
    16
    """
    if programs is None:
        programs = lower(plan, graph, hardware)
    devices: dict[str, Any] = {}
    for dev in hardware.devices:
        prog = programs[dev.name]
        peak = peak_memory(prog)
        devices[dev.name] = {
            "kind": dev.kind,
            "profile": dev.profile.name,
            "clock_hz": dev.profile.clock_hz,
            "streams": dev.streams,
            "streams_used": _streams_used(prog),
            "ops": sum(1 for o in plan.ops if o.device == dev.name),
            "instructions": len(prog.instructions),
            "end_cycle": prog.end_cycle,
            "memory": {lv.name: {"capacity_bytes": lv.capacity_bytes, "reserved_bytes": peak[lv.name]}
                       for lv in prog.levels},
        }
    placed = {o.name: o for o in plan.ops}
    ops = {name: {"device": placed[name].device, "stream": placed[name].stream,
                  "start_cycle": placed[name].start_cycle, "end_cycle": placed[name].end_cycle}
           for name in graph.topological_order()}
    transfers = [{"id": i, "src_op": t.src_op, "dst_op": t.dst_op, "src_device": t.src_device,
                  "dst_device": t.dst_device, "link": t.link, "size_bytes": t.size_bytes,
                  "start_cycle": t.start_cycle, "end_cycle": t.end_cycle}
                 for i, t in enumerate(transfer_order(plan))]
    resources = determine_resources(graph, hardware, {o.name: o.device for o in plan.ops})
    return {
        "format_version": ALLOCATION_FORMAT_VERSION,
        "spec": plan.spec_name,
        "clock_hz": hardware.clock_hz,
        "devices": devices,
        "ops": ops,
        "transfers": transfers,
        "resources": resources.to_dict(),
    }
