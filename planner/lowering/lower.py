"""Plan (and optional memory plan) → one timed program per device, in the record order.

Each placed op (or op instance) becomes one compute instruction whose operands come from
the graph (so the simulator can recompute its cycles) and, when the op has arithmetic
meaning, a :class:`~planner.isa.instructions.Kernel`; each transfer becomes a SEND on
the source device and a RECV on the destination; a dependency between two streams of one
device becomes a SIGNAL/WAIT pair; every buffer gets ALLOC/FREE.

Devices without a memory plan keep every buffer in main memory, with the lifetimes the
scheduler's memory constraint uses (:mod:`solvers.scheduling.problem`):

* weights and graph inputs an op on the device reads: from cycle 0 to the device's end
  (ALLOC marked preloaded: the host fills them before the run);
* each output tensor of op u: ``[start[u], max(end[u], end of u's consumers on the
  device, end of every transfer out of u))``;
* each tensor of a transfer e=(u, v) gets its own received copy ``"<tensor>@<src
  device>-><v>"``, live ``[start[e], max(end[e], end[v]))`` on v's device (a control edge,
  no tensor: one zero-byte buffer ``"after:<u>@<src device>-><v>"`` that v reads, so the
  replay checks the order);

and no addresses: such a program is *unaddressed* (``Program.addressed`` False, every
ALLOC/FREE ``d = 0``) until the address pass (:mod:`planner.memory.address_pass`, which
solves) packs its buffers over the record order fixed here. Lowering itself never solves.

A device with a :class:`~planner.memory.plan.DeviceMemoryPlan` takes every buffer from it
(level, address, lifetime, preloaded, view: its program is addressed, with the plan's
addresses as the plan's claim, which the replay checks), runs its op instances (``"fc#1"``) with the
reads, writes and fast/main bytes of their :class:`~planner.memory.plan.OpAccess`, and
runs the plan's DMAs on the DMA engine (:data:`~planner.isa.instructions.DMA_STREAM`),
synchronised with their trigger and release ops by semaphores.

Instructions are ordered by start cycle and, within a cycle, in dependency order
(:func:`planner.lowering.order.order_records`: the record order ``docs/isa.md`` defines);
HALT is last, at the device's last cycle. A memory plan's addresses shape that order (a FREE
comes before an ALLOC of overlapping bytes in one cycle); unaddressed programs are ordered
with every buffer on its own bytes, and the address pass lets a buffer freed at cycle ``t``
share bytes only with buffers allocated after its FREE in that order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Mapping

from planner.graph.ir import Graph
from planner.hardware import Device, Hardware
from planner.instances import base_op_name
from planner.isa.cost import OpCost, cached_op_cost
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    DMA_STREAM,
    TRANSFER_STREAM,
    Instruction,
    Kernel,
    LevelInfo,
    LinkInfo,
    Opcode,
    Operand,
    Program,
    VectorOp,
)
from planner.isa.resources import determine_resources
from planner.lowering.kernels import has_kernel, make_kernel, portion_cost, portion_shape
from planner.lowering.order import BufferSpan, order_records
from planner.memory.plan import DeviceMemoryPlan, MemoryPlan, OpAccess
from planner.plan import PlacedOp, PlacedTransfer, Plan

__all__ = ["lower", "allocation", "transfer_order", "peak_memory", "base_op", "ALLOCATION_FORMAT_VERSION"]

ALLOCATION_FORMAT_VERSION = 2  # 2: per-device "buffers" (address, level, lifetime) and "fast_level"


@dataclass
class _Buffer:
    id: int
    name: str
    size_bytes: int
    level: int
    start: int = -1  # lifetime [start, end); -1 until allocated
    end: int = -1
    address: int | None = None
    preloaded: bool = False
    view: bool = False
    stream: int = 0  # where its ALLOC/FREE are listed
    op: str = ""
    tensor: str = ""  # memory-plan buffers: the tensor held, and its portion (-1: whole)
    portion: int = -1
    parent: int = -1  # a view's parent buffer


class _DeviceProgram:
    """Collects one device's buffers and instructions, then sorts them into the record order."""

    def __init__(self, device: Device) -> None:
        self.device = device
        profile = device.profile
        self.main = profile.memory.index(profile.main_memory)
        self.level_index = {lv.name: i for i, lv in enumerate(profile.memory)}
        self.buffers: list[_Buffer] = []
        self.by_name: dict[str, _Buffer] = {}
        self.items: list[Instruction] = []
        self.kernels: list[Kernel] = []
        self.semaphores = 0

    def capacity(self, level: int) -> int:
        lv = self.device.profile.memory[level]
        return self.device.memory_capacity_bytes if level == self.main else lv.capacity_bytes

    def buffer(self, name: str, size_bytes: int, level: int | None = None) -> int:
        buf = self.by_name.get(name)
        if buf is None:
            buf = _Buffer(len(self.buffers), name, size_bytes, self.main if level is None else level)
            self.buffers.append(buf)
            self.by_name[name] = buf
        return buf.id

    def alloc(self, buf: int, start: int, end: int, stream: int, op: str, preloaded: bool = False) -> None:
        b = self.buffers[buf]
        if b.start >= 0:
            raise AssertionError(f"buffer {b.name!r} allocated twice")  # pragma: no cover
        b.start, b.end, b.stream, b.op, b.preloaded = start, end, stream, op, preloaded

    def semaphore(self) -> int:
        self.semaphores += 1
        return self.semaphores - 1

    def sync(self, signal_stream: int, signal_cycle: int, signal_op: str,
             wait_stream: int, wait_cycle: int, wait_op: str) -> None:
        sem = self.semaphore()
        self.items.append(Instruction(Opcode.SIGNAL, signal_stream, signal_cycle, 0, op=signal_op, a=sem))
        self.items.append(Instruction(Opcode.WAIT, wait_stream, wait_cycle, 0, op=wait_op, a=sem))

    def add(self, ins: Instruction) -> None:
        self.items.append(ins)

    def end_cycle(self) -> int:
        return max([i.end_cycle for i in self.items] + [b.end for b in self.buffers], default=0)

    def emit_allocations(self) -> None:
        """ALLOC/FREE for every buffer (address 0 when it has none: the address pass gives it)."""
        for b in self.buffers:
            if b.start < 0:
                raise AssertionError(f"buffer {b.name!r} was never allocated")  # pragma: no cover
            flags = (ALLOC_PRELOADED if b.preloaded else 0) | (ALLOC_VIEW if b.view else 0)
            common = dict(op=b.op, a=b.id, b=b.level, c=b.size_bytes, d=b.address or 0)
            self.items.append(Instruction(Opcode.ALLOC, b.stream, b.start, 0, subop=flags, **common))
            self.items.append(Instruction(Opcode.FREE, b.stream, b.end, 0,
                                          subop=ALLOC_VIEW if b.view else 0, **common))

    def spans(self, addressed: bool) -> dict[int, BufferSpan]:
        """Each buffer's bytes for the record order: real addresses and views, or each its own."""
        if not addressed:
            return {b.id: BufferSpan(b.id, 0, b.size_bytes, b.level) for b in self.buffers}
        return {b.id: BufferSpan(b.parent if b.view else b.id, b.address or 0, (b.address or 0) + b.size_bytes,
                                 b.level, b.view) for b in self.buffers}


def transfer_order(plan: Plan) -> tuple[PlacedTransfer, ...]:
    """The plan's transfers in transfer-id order (start, source op, destination op).

    Examples
    --------
    >>> transfer_order(Plan("s", "latency", "OPTIMAL", 0, 0, 0.0, 0, 10**9, (), ()))
    ()
    """
    return tuple(sorted(plan.transfers, key=lambda t: (t.start_cycle, t.src_op, t.dst_op, t.link)))


def base_op(name: str, graph: Graph) -> str:
    """The graph op of a plan entry: the name itself, or ``"fc"`` for the instance ``"fc#1"``.

    Raises ``KeyError`` when neither names a graph op.

    Examples
    --------
    >>> from planner.graph.ir import Op
    >>> g = Graph([], [Op("fc", "task")])
    >>> base_op("fc#1", g), base_op("fc", g)
    ('fc', 'fc')
    """
    base = base_op_name(name, graph.ops)
    if base not in graph.ops:
        raise KeyError(name)
    return base


def _compute_instruction(name: str, cost: OpCost, op_type: str, main: int, stream: int, start: int,
                         duration: int, reads: tuple[int, ...], writes: tuple[int, ...],
                         mem_bytes: int | None = None, fast_bytes: int = 0,
                         level_bytes: tuple[int, ...] = ()) -> Instruction:
    """The instruction of one op (or instance) from its cost; ``mem_bytes`` None: the cost's;
    ``level_bytes``: per program level, for a memory plan over more than two levels."""
    common = dict(op=name, reads=reads, writes=writes)
    if level_bytes and not cost.explicit:
        common["level_bytes"] = level_bytes
    if cost.explicit:
        return Instruction(Opcode.TASK, stream, start, duration, a=cost.operands[0], **common)
    moved = cost.bytes_moved if mem_bytes is None else mem_bytes
    if cost.unit == "matrix":
        t, k, n, sets = cost.operands
        return Instruction(Opcode.MATMUL, stream, start, duration, a=t, b=k, c=n, d=sets,
                           mem_bytes=moved, fast_bytes=fast_bytes, **common)
    if cost.unit == "vector":
        elements, window = cost.operands
        return Instruction(Opcode.VECTOR, stream, start, duration, subop=int(VectorOp.from_op_type(op_type)),
                           a=elements, b=window, mem_bytes=moved, fast_bytes=fast_bytes, **common)
    if cost.unit == "dma":
        # Without a memory plan a copy inside main memory, timed as a DMA main -> main; with
        # one, the bytes it moves in each level (the roofline, as the level solver times it).
        extra = {} if mem_bytes is None else dict(mem_bytes=mem_bytes, fast_bytes=fast_bytes)
        return Instruction(Opcode.DMA, stream, start, duration, a=main, b=main, c=cost.operands[0],
                           **extra, **common)
    raise AssertionError(f"no instruction for unit {cost.unit!r}")  # pragma: no cover


@dataclass
class _Placement:
    """The plan in graph terms: each graph op's device and instances (portion order)."""

    placed: dict[str, PlacedOp]  # plan entry (op or instance) -> placed
    base: dict[str, str]  # plan entry -> graph op
    instances: dict[str, list[PlacedOp]]  # graph op -> its plan entries
    device_of: dict[str, str]  # graph op -> device
    access: dict[str, OpAccess]  # instance -> access (memory-planned devices only)


def _check_memory_plan(name: str, mp: DeviceMemoryPlan, graph: Graph, devices: Mapping[str, Device]) -> None:
    """Static checks of one device's memory plan (names, levels, views, accesses)."""
    where = f"memory plan of {name}"
    if name not in devices:
        raise ValueError(f"{where}: no such device (devices: {', '.join(devices)})")
    if mp.device != name:
        raise ValueError(f"{where}: it names device {mp.device!r}")
    dev = devices[name]
    levels = [lv.name for lv in dev.profile.memory]
    for role, level in (("fast", mp.fast_level), ("slow", mp.slow_level)):
        if level not in levels:
            raise ValueError(f"{where}: unknown {role} level {level!r} (levels: {', '.join(levels)})")
    if mp.slow_level != dev.profile.main_memory.name:
        raise ValueError(f"{where}: slow level {mp.slow_level!r} is not the main memory "
                         f"{dev.profile.main_memory.name!r}")
    buffers: dict[str, Any] = {}
    for b in mp.buffers:
        if b.name in buffers:
            raise ValueError(f"{where}: buffer {b.name!r} is listed twice")
        buffers[b.name] = b
        if b.level not in levels:
            raise ValueError(f"{where}: buffer {b.name!r} is in unknown level {b.level!r} "
                             f"(levels: {', '.join(levels)})")
        if b.tensor not in graph.tensors and (b.tensor or b.size_bytes):  # "": a control edge's 0-byte copy
            raise ValueError(f"{where}: buffer {b.name!r} holds unknown tensor {b.tensor!r}")
        if b.address < 0 or b.size_bytes < 0 or not 0 <= b.start_cycle <= b.end_cycle:
            raise ValueError(f"{where}: buffer {b.name!r} needs address, size >= 0 and 0 <= start <= end")
        index = levels.index(b.level)
        capacity = dev.memory_capacity_bytes if b.level == mp.slow_level else dev.profile.memory[index].capacity_bytes
        if b.address + b.size_bytes > capacity:
            raise ValueError(f"{where}: buffer {b.name!r} [{b.address}, {b.address + b.size_bytes}) exceeds "
                             f"level {b.level!r} (capacity {capacity} B)")
    for b in mp.buffers:
        if not b.view_of:
            continue
        parent = buffers.get(b.view_of)
        if parent is None:
            raise ValueError(f"{where}: view {b.name!r} is of unknown buffer {b.view_of!r}")
        if parent.view_of or parent.level != b.level:
            raise ValueError(f"{where}: view {b.name!r} must be of a non-view buffer of its own level "
                             f"({b.level!r}), not {parent.name!r} in {parent.level!r}")
        if not (parent.address <= b.address and b.address + b.size_bytes <= parent.address + parent.size_bytes
                and parent.start_cycle <= b.start_cycle and b.end_cycle <= parent.end_cycle):
            raise ValueError(f"{where}: view {b.name!r} ([{b.address}, {b.address + b.size_bytes}) over cycles "
                             f"[{b.start_cycle}, {b.end_cycle})) is not inside {parent.name!r} "
                             f"([{parent.address}, {parent.address + parent.size_bytes}) over "
                             f"[{parent.start_cycle}, {parent.end_cycle}))")
    if set(mp.order) != set(mp.accesses) or len(set(mp.order)) != len(mp.order):
        raise ValueError(f"{where}: its order and its accesses list different instances")
    for inst, acc in mp.accesses.items():
        if acc.instance != inst:
            raise ValueError(f"{where}: access of {inst!r} names instance {acc.instance!r}")
        op = graph.ops.get(acc.op)
        if op is None:
            raise ValueError(f"{where}: instance {inst!r} runs unknown op {acc.op!r}")
        if (acc.factor > 1) != (acc.portion >= 0) or acc.portion >= acc.factor:
            raise ValueError(f"{where}: instance {inst!r} has portion {acc.portion} of factor {acc.factor}")
        want = inst if acc.factor == 1 else f"{acc.op}#{acc.portion}"
        if inst != want:
            raise ValueError(f"{where}: instance {inst!r} of {acc.op!r} should be named {want!r}")
        if len(acc.inputs) != len(op.inputs) or len(acc.outputs) != len(op.outputs):
            raise ValueError(f"{where}: instance {inst!r} lists {len(acc.inputs)} inputs and {len(acc.outputs)} "
                             f"outputs, op {acc.op!r} has {len(op.inputs)} and {len(op.outputs)}")
        for names in (*acc.inputs, *acc.outputs):
            if not names:
                raise ValueError(f"{where}: instance {inst!r} has an operand without buffers")
            for n in names:
                if n not in buffers:
                    raise ValueError(f"{where}: instance {inst!r} uses unknown buffer {n!r}")
    for t in mp.transfers:
        for n in (t.src_buffer, t.dst_buffer):
            if n not in buffers:
                raise ValueError(f"{where}: {t.kind} of {t.tensor!r} uses unknown buffer {n!r}")
        for role, inst in (("trigger", t.trigger_op), ("release", t.release_op)):
            if inst and inst not in mp.accesses:
                raise ValueError(f"{where}: {t.kind} into {t.dst_buffer!r} has {role} op {inst!r}, "
                                 f"which is not an instance of the plan")


def _check(plan: Plan, graph: Graph, hardware: Hardware, memory: Mapping[str, DeviceMemoryPlan]) -> _Placement:
    devices = {d.name: d for d in hardware.devices}
    for name, mp in sorted(memory.items()):
        _check_memory_plan(name, mp, graph, devices)
    placed: dict[str, PlacedOp] = {}
    base: dict[str, str] = {}
    instances: dict[str, list[PlacedOp]] = defaultdict(list)
    access: dict[str, OpAccess] = {}
    twice, unknown = [], []
    for o in plan.ops:
        if o.name in placed:
            twice.append(o.name)
            continue
        placed[o.name] = o
        if o.device not in devices:
            raise ValueError(f"op {o.name!r} is placed on unknown device {o.device!r}")
        if not 0 <= o.stream < devices[o.device].streams:
            raise ValueError(f"op {o.name!r} uses stream {o.stream} of {o.device!r}, "
                             f"which has {devices[o.device].streams}")
        mp = memory.get(o.device)
        if mp is not None:
            if o.name not in mp.accesses:
                raise ValueError(f"op instance {o.name!r} on {o.device} is not in the device's memory plan "
                                 f"(instances: {', '.join(mp.order[:8])}{'...' if len(mp.order) > 8 else ''})")
            acc = mp.accesses[o.name]
            access[o.name] = acc
            base[o.name] = acc.op
        elif o.name in graph.ops:
            base[o.name] = o.name
        else:
            unknown.append(o.name)
            continue
        instances[base[o.name]].append(o)
    missing = [n for n in graph.topological_order() if n not in instances]
    if missing or unknown or twice:
        raise ValueError(f"plan and graph disagree: unplaced ops {missing[:5]}, unknown ops {sorted(unknown)[:5]}"
                         + (f", placed twice: {sorted(twice)[:5]}" if twice else ""))
    for name, mp in memory.items():
        stray = [i for i in mp.order if i not in placed or placed[i].device != name]
        if stray:
            raise ValueError(f"memory plan of {name} lists instances the plan does not place on {name}: "
                             f"{stray[:5]}")
    device_of: dict[str, str] = {}
    for op, insts in instances.items():
        devs = {o.device for o in insts}
        if len(devs) != 1:
            raise ValueError(f"the instances of op {op!r} run on several devices: {sorted(devs)}")
        device_of[op] = insts[0].device
        accs = [access[o.name] for o in insts if o.name in access]
        if accs:
            factor = accs[0].factor
            portions = sorted(a.portion for a in accs)
            if any(a.factor != factor for a in accs) or portions != ([-1] if factor == 1 else list(range(factor))):
                raise ValueError(f"op {op!r} on {device_of[op]}: the plan runs instances "
                                 f"{sorted(o.name for o in insts)}, not one per portion of factor {factor}")
            insts.sort(key=lambda o: access[o.name].portion)
    links = {link.name: link for link in hardware.links}
    for t in plan.transfers:
        if t.link not in links:
            raise ValueError(f"transfer {t.src_op}->{t.dst_op} uses unknown link {t.link!r}")
        for role, name, device in (("source", t.src_op, t.src_device), ("destination", t.dst_op, t.dst_device)):
            if name not in placed:
                raise ValueError(f"transfer {t.src_op}->{t.dst_op}: unknown {role} op {name!r}")
            if placed[name].device != device:
                raise ValueError(f"transfer {t.src_op}->{t.dst_op} runs {t.src_device}->{t.dst_device}, "
                                 f"but the ops sit on {placed[t.src_op].device} and {placed[t.dst_op].device}")
        tensors = _transfer_tensors(t, graph, base)
        if tensors and sum(graph.tensors[x].size_bytes for x in tensors) != t.size_bytes:
            raise ValueError(f"transfer {t.src_op}->{t.dst_op} carries {list(tensors)} "
                             f"({sum(graph.tensors[x].size_bytes for x in tensors)} B) but says {t.size_bytes} B")
    return _Placement(placed, base, dict(instances), device_of, access)


def _transfer_tensors(t: PlacedTransfer, graph: Graph, base: Mapping[str, str]) -> tuple[str, ...]:
    """The tensors a transfer carries (none: a control edge)."""
    if t.tensors:
        return tuple(t.tensors)
    src, dst = graph.ops[base[t.src_op]], graph.ops[base[t.dst_op]]
    return tuple(x for x in src.outputs if x in dst.inputs)


def _received_name(label: str, t: PlacedTransfer, dst_op: str) -> str:
    return f"{label}@{t.src_device}->{dst_op}"


def lower(plan: Plan, graph: Graph, hardware: Hardware, memory_plan: MemoryPlan | None = None) -> dict[str, Program]:
    """One program per device of ``hardware`` (in hardware order), timed as the plan says.

    Lowering never solves: a device with a memory plan gets the plan's addresses (its
    claim, which the replay checks); every other device's program is *unaddressed*
    (``addressed`` False, every ALLOC/FREE ``d = 0``) until the address pass
    (:func:`planner.memory.address_pass.address_programs`) packs its buffers over the
    record order these programs fix.

    Parameters
    ----------
    plan
        The schedule: every op of ``graph`` placed once (on a memory-planned device: its
        op instances, e.g. ``"fc#0"`` and ``"fc#1"`` for an op split in two), the
        cross-device transfers.
    graph, hardware
        What the plan was made for.
    memory_plan
        Per device, where every buffer lives and the DMAs between levels; devices it does
        not list keep everything in main memory.

    Returns
    -------
    dict[str, Program]
        Device name → program (a device without ops gets a program with just HALT).
        A memory-planned device's program is ``addressed``, the others are not; its
        ``kernels`` hold one kernel per compute instruction of an op with arithmetic
        meaning, sorted by op name.

    Raises
    ------
    ValueError
        The plan or memory plan does not fit the graph or hardware (unplaced op, unknown
        device, stream, link, instance, buffer or level, a cross-device edge without its
        transfer).

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
    >>> program = lower(plan, g, hw)["g0"]
    >>> program.addressed, [(i.opcode.name, i.start_cycle, i.op) for i in program.instructions]
    (False, [('ALLOC', 0, 'a'), ('TASK', 0, 'a'), ('TASK', 3, 'b'), ('FREE', 5, 'a'), ('HALT', 5, '')])
    """
    memory = dict(memory_plan.devices) if memory_plan is not None else {}
    where = _check(plan, graph, hardware, memory)
    transfers = transfer_order(plan)
    builders = {d.name: _DeviceProgram(d) for d in hardware.devices}
    for name, mp in memory.items():
        _memory_plan_buffers(mp, builders[name])
    _output_buffers(graph, where, builders, memory, transfers)
    received, control = _lower_transfers(transfers, graph, hardware, where, builders, memory)
    for name in graph.topological_order():
        dev = where.device_of[name]
        if dev in memory:
            _lower_instances(name, graph, hardware, builders[dev], where, control)
        else:
            _lower_op(name, graph, builders[dev], where, received, control)
    for name, mp in memory.items():
        _lower_dmas(mp, builders[name], where)
        _lower_memory_waits(mp, builders[name], where)
    preds = _op_predecessors(graph, where)
    return {dev.name: _finish_program(builders[dev.name], hardware, memory.get(dev.name), preds[dev.name])
            for dev in hardware.devices}


def _memory_plan_buffers(mp: DeviceMemoryPlan, b: _DeviceProgram) -> None:
    """A memory-planned device's buffers, every one from its plan as it is (address included)."""
    for mb in mp.buffers:
        buf = b.buffers[b.buffer(mb.name, mb.size_bytes, b.level_index[mb.level])]
        buf.start, buf.end, buf.address = mb.start_cycle, mb.end_cycle, mb.address
        buf.preloaded, buf.view = mb.preloaded, bool(mb.view_of)
        buf.tensor, buf.portion = mb.tensor, mb.portion
    for mb in mp.buffers:
        if mb.view_of:
            b.by_name[mb.name].parent = b.by_name[mb.view_of].id


def _output_buffers(graph: Graph, where: _Placement, builders: Mapping[str, _DeviceProgram],
                    memory: Mapping[str, DeviceMemoryPlan], transfers: tuple[PlacedTransfer, ...]) -> None:
    """Devices without a memory plan: one buffer per output tensor, from its op's start until
    its last reader on the device (or the last transfer out of it) ends."""
    outgoing: dict[str, list[PlacedTransfer]] = defaultdict(list)  # graph op -> transfers out of it
    for t in transfers:
        outgoing[where.base[t.src_op]].append(t)
    for name in graph.topological_order():
        dev = where.device_of[name]
        if dev in memory:
            continue
        o = where.placed[name]
        b = builders[dev]
        end = o.end_cycle
        for succ in sorted(graph.dag.successors(name)):
            if where.device_of[succ] == dev:
                end = max(end, max(x.end_cycle for x in where.instances[succ]))
        for t in outgoing.get(name, ()):
            end = max(end, t.end_cycle)
        for tensor in graph.ops[name].outputs:
            buf = b.buffer(tensor, graph.tensors[tensor].size_bytes)
            b.alloc(buf, o.start_cycle, end, o.stream, name)


_Received = dict[tuple[str, str, str], int]  # (producer op, consumer op, tensor) -> received buffer
_Control = dict[str, list[tuple[PlacedTransfer, int]]]  # consumer op -> its control edges' buffers


def _lower_transfers(transfers: tuple[PlacedTransfer, ...], graph: Graph, hardware: Hardware, where: _Placement,
                     builders: Mapping[str, _DeviceProgram],
                     memory: Mapping[str, DeviceMemoryPlan]) -> tuple[_Received, _Control]:
    """Every transfer: SEND on the source, RECV on the destination into one received buffer per tensor."""
    link_ids = {link.name: i for i, link in enumerate(hardware.links)}
    received: _Received = {}
    control: _Control = defaultdict(list)
    for tid, t in enumerate(transfers):
        src, dst = builders[t.src_device], builders[t.dst_device]
        src_op, dst_op = where.base[t.src_op], where.base[t.dst_op]
        tensors = _transfer_tensors(t, graph, where.base)
        if t.src_device in memory:
            for x in tensors:
                if x not in src.by_name:
                    raise ValueError(f"memory plan of {t.src_device}: no buffer {x!r} for the tensor "
                                     f"{t.src_op}->{t.dst_op} sends")
        sent = tuple(src.by_name[x].id for x in tensors if x in src.by_name)
        consumer_end = max(x.end_cycle for x in where.instances[dst_op])
        recv: list[int] = []
        for label in tensors or (f"after:{t.src_op}",):
            buf = _received_buffer(t, label, graph, dst, planned=t.dst_device in memory, carries=bool(tensors),
                                   consumer_end=consumer_end, dst_op=dst_op)
            recv.append(buf)
            if tensors:
                received[(src_op, dst_op, label)] = buf
            else:
                control[dst_op].append((t, buf))
        link = link_ids[t.link]
        src.add(Instruction(Opcode.SEND, TRANSFER_STREAM, t.start_cycle, t.duration_cycles, op=t.src_op,
                            a=link, b=t.size_bytes, c=tid, reads=sent, peer=t.dst_device))
        dst.add(Instruction(Opcode.RECV, TRANSFER_STREAM, t.start_cycle, t.duration_cycles, op=t.dst_op,
                            a=link, b=t.size_bytes, c=tid, writes=tuple(recv), peer=t.src_device))
    return received, control


def _received_buffer(t: PlacedTransfer, label: str, graph: Graph, dst: _DeviceProgram, *, planned: bool,
                     carries: bool, consumer_end: int, dst_op: str) -> int:
    """The destination's buffer for one tensor (``label``) of transfer ``t``, or its control edge's.

    Without a memory plan: a new received copy, live until the consumer ends. With one: the
    plan's copy (named for the instance or the op); a control edge the plan does not list
    gets a zero-byte copy at address 0.
    """
    lifetime = (t.start_cycle, max(t.end_cycle, consumer_end), TRANSFER_STREAM, t.dst_op)
    if not planned:
        size = graph.tensors[label].size_bytes if carries else 0
        buf = dst.buffer(_received_name(label, t, dst_op), size)
        dst.alloc(buf, *lifetime)
        return buf
    names = [_received_name(label, t, t.dst_op), _received_name(label, t, dst_op)]
    found = next((n for n in names if n in dst.by_name), None)
    if found is not None:
        return dst.by_name[found].id
    if carries:
        raise ValueError(f"memory plan of {t.dst_device}: no received-copy buffer {names[-1]!r} "
                         f"for transfer {t.src_op}->{t.dst_op}")
    buf = dst.buffer(names[0], 0)
    dst.alloc(buf, *lifetime)
    dst.buffers[buf].address = 0
    return buf


def _finish_program(b: _DeviceProgram, hardware: Hardware, mp: DeviceMemoryPlan | None,
                    preds: Mapping[str, list[str]]) -> Program:
    """One device's program: resident buffers allocated, ALLOC/FREE emitted, records in the
    record order, HALT last; addressed only when a memory plan gave the addresses."""
    dev = b.device
    planned = mp is not None
    if not planned:
        end = b.end_cycle()
        for buf in b.buffers:
            if buf.start < 0:  # weights and graph inputs, resident for the whole run
                b.alloc(buf.id, 0, end, 0, "", preloaded=True)
    b.emit_allocations()
    ordered = order_records(b.items, b.spans(planned), preds, addressed=planned, device=dev.name)
    ordered.append(Instruction(Opcode.HALT, 0, b.end_cycle(), 0))
    b.items = ordered
    used_links = {i.a for i in b.items if i.opcode in (Opcode.SEND, Opcode.RECV)}
    links = tuple(LinkInfo(i, lk.name, lk.bandwidth_bytes_per_s, lk.latency_cycles)
                  for i, lk in enumerate(hardware.links) if i in used_links or dev.name in lk.devices)
    levels = tuple(LevelInfo(lv.name, b.capacity(i), lv.bandwidth_bytes_per_s)
                   for i, lv in enumerate(dev.profile.memory))
    p = dev.profile
    return Program(
        device=dev.name, profile=p.name, device_clock_hz=p.clock_hz, reference_clock_hz=hardware.clock_hz,
        mxu_rows=p.mxu_rows, mxu_cols=p.mxu_cols, vector_lanes=p.vector_lanes,
        dma_latency_cycles=p.dma_latency_cycles, levels=levels, main_level=b.main, links=links,
        num_streams=dev.streams, buffers=tuple(x.name for x in b.buffers), instructions=tuple(ordered),
        fast_level=b.level_index[mp.fast_level] if planned else -1,
        kernels=tuple(sorted(b.kernels, key=lambda k: k.op)), addressed=planned, dma_rates=_dma_rates(p))


def _dma_rates(profile) -> tuple[tuple[int, int, int], ...]:
    """The profile's DMA paths with their own rate, as the program's level indices (a < b)."""
    index = {lv.name: i for i, lv in enumerate(profile.memory)}
    return tuple(sorted((min(index[a], index[b]), max(index[a], index[b]), rate) for a, b, rate in profile.dma_rates))


def _op_predecessors(graph: Graph, where: _Placement) -> dict[str, dict[str, list[str]]]:
    """Per device: instance name -> the instances of its graph predecessors (data and
    control edges) on the same device, for the record order within a cycle."""
    preds: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for name in graph.topological_order():
        dev = where.device_of[name]
        before = [p.name for pred in sorted(graph.dag.predecessors(name)) if where.device_of[pred] == dev
                  for p in where.instances[pred]]
        for o in where.instances[name]:
            preds[dev][o.name] = before
    return preds


def _lower_op(name: str, graph: Graph, b: _DeviceProgram, where: _Placement,
              received: Mapping[tuple[str, str, str], int],
              control: Mapping[str, list[tuple[PlacedTransfer, int]]]) -> None:
    """One op of a device without a memory plan: its instruction, kernel and semaphores."""
    o, op = where.placed[name], graph.ops[name]
    operand_buffers: list[int] = []
    for tensor in op.inputs:
        producer = graph.producer(tensor)
        if producer is None:
            buf = b.buffer(tensor, graph.tensors[tensor].size_bytes)  # resident, allocated at the end
        elif where.device_of[producer] == o.device:
            buf = b.by_name[tensor].id
        elif (producer, name, tensor) in received:
            buf = received[(producer, name, tensor)]
        else:
            raise ValueError(f"op {name!r} on {o.device} reads {tensor!r} from {producer!r} on "
                             f"{where.device_of[producer]}, but the plan has no transfer for it")
        operand_buffers.append(buf)
    reads = tuple(dict.fromkeys([*operand_buffers, *(buf for _, buf in control.get(name, ()))]))
    writes = tuple(b.by_name[t].id for t in op.outputs)
    cost = cached_op_cost(op, graph, b.device.profile, b.device.kind)
    b.add(_compute_instruction(name, cost, op.type, b.main, o.stream, o.start_cycle, o.duration_cycles,
                               reads, writes))
    if has_kernel(op):
        def operand(tensor: str, buf: int) -> Operand:
            t = graph.tensors[tensor]
            return Operand(t.shape, t.dtype, (buf,))

        b.kernels.append(make_kernel(name, op, [operand(t, x) for t, x in zip(op.inputs, operand_buffers)],
                                     [operand(t, x) for t, x in zip(op.outputs, writes)]))
    for pred in sorted(graph.dag.predecessors(name)):
        if where.device_of[pred] != o.device:
            continue
        p = where.placed[pred]
        if p.stream != o.stream:
            b.sync(p.stream, p.end_cycle, pred, o.stream, o.start_cycle, name)


def _lower_instances(name: str, graph: Graph, hardware: Hardware, b: _DeviceProgram, where: _Placement,
                     control: Mapping[str, list[tuple[PlacedTransfer, int]]]) -> None:
    """The instances of one op of a memory-planned device, as its memory plan accesses them."""
    op = graph.ops[name]
    kind = b.device.kind
    for o in where.instances[name]:
        acc = where.access[o.name]
        shapes: dict[str, tuple[int, ...]] = {}
        operands: list[Operand] = []
        for tensor, names in (*zip(op.inputs, acc.inputs), *zip(op.outputs, acc.outputs)):
            t = graph.tensors[tensor]
            bufs = [b.by_name[n] for n in names]
            wrong = [x.name for x in bufs if x.tensor != tensor]
            if wrong:
                raise ValueError(f"memory plan of {o.device}: instance {o.name!r} accesses {tensor!r} in "
                                 f"buffer(s) {wrong} of another tensor")
            shape = t.shape
            if acc.factor > 1 and len(bufs) == 1 and bufs[0].portion >= 0:
                shape = portion_shape(t.shape, acc.factor, tensor=tensor)
            if shapes.setdefault(tensor, shape) != shape:
                raise ValueError(f"memory plan of {o.device}: instance {o.name!r} reads {tensor!r} both whole "
                                 f"and as a portion")
            operands.append(Operand(shape, t.dtype, tuple(x.id for x in bufs)))
        n_in = len(op.inputs)
        ins, outs = operands[:n_in], operands[n_in:]
        ctrl = [buf for t, buf in control.get(name, ()) if t.dst_op in (o.name, name)]
        reads = tuple(dict.fromkeys([x for operand in ins for x in operand.buffers] + ctrl))
        writes = tuple(dict.fromkeys(x for operand in outs for x in operand.buffers))
        changed = {x: s for x, s in shapes.items() if s != graph.tensors[x].shape}
        cost = (portion_cost(op, graph, changed, b.device.profile, kind) if changed
                else cached_op_cost(op, graph, b.device.profile, kind))
        level_bytes = ()
        if acc.level_bytes:
            given = dict(acc.level_bytes)
            level_bytes = tuple(given.get(lv.name, 0) for lv in b.device.profile.memory)
        b.add(_compute_instruction(o.name, cost, op.type, b.main, o.stream, o.start_cycle, o.duration_cycles,
                                   reads, writes, mem_bytes=acc.slow_bytes, fast_bytes=acc.fast_bytes,
                                   level_bytes=level_bytes))
        if has_kernel(op):
            b.kernels.append(make_kernel(o.name, op, ins, outs))
        # Cross-stream order: every instance of a predecessor on this device (portion to portion
        # when both are split the same way, a split group's rows being independent).
        for pred in sorted(graph.dag.predecessors(name)):
            if where.device_of[pred] != o.device:
                continue
            for p in where.instances[pred]:
                pa = where.access[p.name]
                if pa.factor == acc.factor > 1 and pa.portion != acc.portion:
                    continue
                if p.stream != o.stream:
                    b.sync(p.stream, p.end_cycle, p.name, o.stream, o.start_cycle, o.name)


def _lower_dmas(mp: DeviceMemoryPlan, b: _DeviceProgram, where: _Placement) -> None:
    """The memory plan's DMAs on the DMA engine, with their trigger and release semaphores."""
    for t in mp.transfers:
        src, dst = b.by_name[t.src_buffer], b.by_name[t.dst_buffer]
        name = f"{t.kind}:{t.dst_buffer}"
        b.add(Instruction(Opcode.DMA, DMA_STREAM, t.start_cycle, t.duration_cycles, op=name, a=src.level,
                          b=dst.level, c=t.size_bytes, reads=(src.id,), writes=(dst.id,)))
        if t.trigger_op:
            p = where.placed[t.trigger_op]
            b.sync(p.stream, p.end_cycle, p.name, DMA_STREAM, t.start_cycle, name)
        if t.release_op:
            p = where.placed[t.release_op]
            b.sync(DMA_STREAM, t.end_cycle, name, p.stream, p.start_cycle, p.name)


def _lower_memory_waits(mp: DeviceMemoryPlan, b: _DeviceProgram, where: _Placement) -> None:
    """Several streams: the memory order (docs/memory.md, "Several compute streams") as
    semaphores: an op on another stream, or an eviction DMA, signals at its end; the op or
    prefetch DMA allocating after it waits at its start. A DMA side names no op, so the plan's
    trigger and release ops stay the only ops a DMA's semaphores name; DMA after DMA is the
    engine's own order."""
    for waiter, waited in mp.memory_waits:
        w_dma, x_dma = waiter.startswith("dma:"), waited.startswith("dma:")
        if w_dma and x_dma:
            continue
        if x_dma:
            t = mp.transfers[int(waited[4:])]
            signal = (DMA_STREAM, t.end_cycle, "")
        else:
            p = where.placed[waited]
            signal = (p.stream, p.end_cycle, p.name)
        if w_dma:
            wait = (DMA_STREAM, mp.transfers[int(waiter[4:])].start_cycle, "")
        else:
            o = where.placed[waiter]
            wait = (o.stream, o.start_cycle, o.name)
        if signal[0] != wait[0]:
            b.sync(*signal, *wait)


def peak_memory(program: Program) -> dict[str, int]:
    """Peak live bytes per memory level, replaying ALLOC/FREE in record order (as the simulator does).

    Views (``ALLOC_VIEW``) occupy no capacity and are not counted.

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> ins = (Instruction(Opcode.ALLOC, 0, 0, 0, a=0, c=8), Instruction(Opcode.FREE, 0, 5, 0, a=0, c=8),
    ...        Instruction(Opcode.ALLOC, 0, 5, 0, a=1, c=6), Instruction(Opcode.HALT, 0, 5, 0))
    >>> peak_memory(Program("d", "g", 1, 1, 1, 1, 1, 0, (LevelInfo("m", 9, 1),), 0, (), 1, ("x", "y"), ins))
    {'m': 8}
    """
    live = [0] * len(program.levels)
    peak = [0] * len(program.levels)
    for i in program.instructions:
        if i.opcode not in (Opcode.ALLOC, Opcode.FREE) or i.subop & ALLOC_VIEW:
            continue
        level = i.b
        live[level] += i.c if i.opcode == Opcode.ALLOC else -i.c
        peak[level] = max(peak[level], live[level])
    return {lv.name: peak[i] for i, lv in enumerate(program.levels)}


def _streams_used(program: Program) -> list[int]:
    return sorted({i.stream for i in program.instructions
                   if i.opcode not in (Opcode.HALT,) and i.stream not in (TRANSFER_STREAM, DMA_STREAM) and i.op})


def _buffer_table(program: Program) -> list[dict[str, Any]]:
    """Per buffer (id order): name, level, address, size and lifetime, from ALLOC/FREE."""
    rows: dict[int, dict[str, Any]] = {}
    for i in program.instructions:
        if i.opcode == Opcode.ALLOC:
            rows[i.a] = {"name": program.buffers[i.a], "level": program.levels[i.b].name, "address": i.d,
                         "size_bytes": i.c, "start_cycle": i.start_cycle, "end_cycle": None,
                         "preloaded": bool(i.subop & ALLOC_PRELOADED), "view": bool(i.subop & ALLOC_VIEW)}
        elif i.opcode == Opcode.FREE and i.a in rows:
            rows[i.a]["end_cycle"] = i.start_cycle
    return [rows[k] for k in sorted(rows)]


def allocation(plan: Plan, graph: Graph, hardware: Hardware, programs: Mapping[str, Program]) -> dict[str, Any]:
    """The ``allocation.json`` document: devices, memory and buffers, op placement, resources.

    ``programs`` are the plan's programs after the address pass
    (:func:`planner.memory.address_pass.address_programs`); an unaddressed one is refused
    (``ValueError``), its addresses being placeholders.

    Per device: kind, profile, clock, streams (and those used), ops (plan entries),
    instructions, end cycle, the fast level (None without a memory plan), memory per
    level (capacity, reserved = peak live bytes) and every buffer (name, level, address,
    size, lifetime, preloaded, view). Per graph op: device, stream, start and end (over
    its instances when split, listed under ``instances``).

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device
    >>> from planner.isa.profiles import get_profile
    >>> from planner.plan import PlacedOp
    >>> g = Graph([Tensor("t", (4,))], [Op("a", "task", (), ("t",), cycles={"g": 3})])
    >>> hw = Hardware((Device("g0", "g", get_profile("generic")),), ())
    >>> plan = Plan("s", "latency", "OPTIMAL", 3, 3, 0.0, 3, 10**9, (PlacedOp("a", "g0", 0, 0, 3),), ())
    >>> from planner.memory.address_pass import address_programs
    >>> doc = allocation(plan, g, hw, address_programs(lower(plan, g, hw)))
    >>> doc["devices"]["g0"]["memory"]["mem"]["reserved_bytes"]
    16
    >>> doc["devices"]["g0"]["buffers"]
    [{'name': 't', 'level': 'mem', 'address': 0, 'size_bytes': 16, 'start_cycle': 0, 'end_cycle': 3, \
'preloaded': False, 'view': False}]
    """
    unaddressed = [name for name, p in programs.items() if not p.addressed]
    if unaddressed:
        raise ValueError(f"allocation.json needs addressed programs; {', '.join(unaddressed)} have no addresses "
                         f"yet (run planner.memory.address_pass.address_programs first)")
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
            "fast_level": prog.fast.name if prog.fast is not None else None,
            "memory": {lv.name: {"capacity_bytes": lv.capacity_bytes, "reserved_bytes": peak[lv.name]}
                       for lv in prog.levels},
            "buffers": _buffer_table(prog),
        }
    instances: dict[str, list[PlacedOp]] = defaultdict(list)
    for o in plan.ops:
        instances[base_op(o.name, graph)].append(o)
    ops: dict[str, Any] = {}
    for name in graph.topological_order():
        insts = instances[name]
        first = insts[0]
        ops[name] = {"device": first.device, "stream": first.stream,
                     "start_cycle": min(o.start_cycle for o in insts),
                     "end_cycle": max(o.end_cycle for o in insts)}
        if len(insts) > 1 or insts[0].name != name:
            ops[name]["instances"] = [o.name for o in insts]
    transfers = [{"id": i, "src_op": t.src_op, "dst_op": t.dst_op, "src_device": t.src_device,
                  "dst_device": t.dst_device, "link": t.link, "size_bytes": t.size_bytes,
                  "start_cycle": t.start_cycle, "end_cycle": t.end_cycle}
                 for i, t in enumerate(transfer_order(plan))]
    resources = determine_resources(graph, hardware, {name: ops[name]["device"] for name in ops})
    return {
        "format_version": ALLOCATION_FORMAT_VERSION,
        "spec": plan.spec_name,
        "clock_hz": hardware.clock_hz,
        "devices": devices,
        "ops": ops,
        "transfers": transfers,
        "resources": resources.to_dict(),
    }
