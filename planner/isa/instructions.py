"""The instruction set: opcodes, timed instructions and per-device programs.

Every instruction is timed on the plan's timeline (reference-clock cycles): it carries
its stream, start cycle and duration, the op it belongs to (if any) and the buffer ids
it reads and writes, so the simulator can check timing and dependencies from a binary
alone. ``docs/isa.md`` is the reference.

Glossary
--------
stream         an execution lane of the device (``0..num_streams-1``); SEND and RECV run
               on the transfer engine, stream :data:`TRANSFER_STREAM`.
buffer         a named block of one memory level, allocated by ALLOC and released by FREE;
               ids are dense per program.
operands       ``a, b, c, d``: meaning per opcode (see :class:`Opcode`).
mem_bytes      bytes a MATMUL or VECTOR reads and writes in main memory (its roofline).
fast_bytes     bytes it reads and writes in the program's fast level (memory plans, issue 3);
               the roofline is ``max(compute, ceil(fast_bytes·clk/bw_fast) + ceil(mem_bytes·clk/bw_main))``.
level_bytes    per level of the program (index order), the bytes it reads and writes there, for a
               memory plan over more than two levels (issue 14; binary format version 3); empty:
               ``fast_bytes``/``mem_bytes`` say it all. When given, its main entry is ``mem_bytes``,
               its fast entry ``fast_bytes``, and the roofline is ``max(compute, sum over levels of
               ceil(bytes_l·clk/bw_l))``.
address        ALLOC/FREE ``d``: the buffer's byte offset in its level; no two live buffers of
               one level overlap in address (views excepted, see :data:`ALLOC_VIEW`).
kernel         what a compute instruction computes, for the simulator's numeric mode: op type,
               attributes and, per operand, shape, dtype and the buffers holding it
               (:class:`Kernel`); docs/memory.md is the reference.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from planner.graph.ir import DTYPE_BYTES
from planner.hardware import ceil_div
from planner.isa.cost import VECTOR_OPS, dma_cycles, memory_cycles, systolic_cycles, vector_cycles

__all__ = [
    "Opcode",
    "VectorOp",
    "TRANSFER_STREAM",
    "DMA_STREAM",
    "ALLOC_PRELOADED",
    "ALLOC_VIEW",
    "Operand",
    "Kernel",
    "COMPUTE_OPCODES",
    "Instruction",
    "LevelInfo",
    "LinkInfo",
    "Program",
    "device_cycles",
    "expected_duration_cycles",
]

TRANSFER_STREAM = 0xFFFF  # the stream id of SEND/RECV (the device's transfer engine)
DMA_STREAM = 0xFFFE  # the stream id of memory DMAs (prefetch/evict) on the device's DMA engine
ALLOC_PRELOADED = 1  # ALLOC subop flag: the host fills the buffer before the run (weights, inputs)
ALLOC_VIEW = 2  # ALLOC/FREE subop flag: a view inside a live allocation of the same level (no capacity)


class Opcode(enum.IntEnum):
    """Instruction opcodes and the meaning of their operands ``a, b, c, d``.

    ========  =====================================================================
    MATMUL    a=T (streamed rows), b=K, c=N, d=sets (weight matrices); + mem_bytes
    CONV      reserved: conv2d is lowered to MATMUL with its im2col dimensions
    VECTOR    subop=:class:`VectorOp`, a=elements, b=window; + mem_bytes
    DMA       a=src level, b=dst level, c=bytes
    SEND      a=link id, b=bytes, c=transfer id, peer=destination device
    RECV      a=link id, b=bytes, c=transfer id, peer=source device
    SIGNAL    a=semaphore id
    WAIT      a=semaphore id
    ALLOC     a=buffer id, b=level, c=bytes, d=address; subop flags ALLOC_PRELOADED, ALLOC_VIEW
    FREE      a=buffer id, b=level, c=bytes, d=address; subop flag ALLOC_VIEW
    TASK      a=device cycles (an op with explicit cycles)
    HALT      end of the program
    ========  =====================================================================

    Examples
    --------
    >>> Opcode.MATMUL.name, int(Opcode.HALT)
    ('MATMUL', 12)
    """

    MATMUL = 1
    CONV = 2
    VECTOR = 3
    DMA = 4
    SEND = 5
    RECV = 6
    SIGNAL = 7
    WAIT = 8
    ALLOC = 9
    FREE = 10
    TASK = 11
    HALT = 12


class VectorOp(enum.IntEnum):
    """VECTOR subops; their cycle factors are :data:`planner.isa.cost.VECTOR_OPS`.

    Examples
    --------
    >>> VectorOp.from_op_type("softmax"), VectorOp.SOFTMAX.op_type
    (<VectorOp.SOFTMAX: 5>, 'softmax')
    """

    ADD = 1
    MUL = 2
    RELU = 3
    GELU = 4
    SOFTMAX = 5
    LAYERNORM = 6
    MAXPOOL = 7
    AVGPOOL = 8
    GLOBAL_AVGPOOL = 9
    SUB = 10
    SIGMOID = 11
    TANH = 12

    @property
    def op_type(self) -> str:
        return self.name.lower()

    @property
    def factor(self) -> int:
        return VECTOR_OPS[self.op_type][0]

    @classmethod
    def from_op_type(cls, op_type: str) -> "VectorOp":
        return cls[op_type.upper()]


# Opcodes that carry an op's work (exactly one per placed op).
COMPUTE_OPCODES = frozenset({Opcode.MATMUL, Opcode.CONV, Opcode.VECTOR, Opcode.DMA, Opcode.TASK})


@dataclass(frozen=True, slots=True)
class Instruction:
    """One timed instruction (cycles of the plan's reference clock).

    Examples
    --------
    >>> i = Instruction(Opcode.MATMUL, 0, 10, 1459, op="mm", a=256, b=256, c=256, d=1,
    ...                 reads=(0, 1), writes=(2,))
    >>> i.end_cycle
    1469
    """

    opcode: Opcode
    stream: int
    start_cycle: int
    duration_cycles: int
    op: str = ""
    subop: int = 0
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    mem_bytes: int = 0
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    peer: str = ""
    fast_bytes: int = 0
    level_bytes: tuple[int, ...] = ()  # per program level; () for the two-field roofline

    def __post_init__(self) -> None:
        # Decoding builds one per record: skip conversions that are already done.
        if type(self.opcode) is not Opcode:
            object.__setattr__(self, "opcode", Opcode(self.opcode))
        if type(self.reads) is not tuple:
            object.__setattr__(self, "reads", tuple(self.reads))
        if type(self.writes) is not tuple:
            object.__setattr__(self, "writes", tuple(self.writes))
        # A bitwise OR of integers is negative exactly when one of them is.
        if (self.start_cycle | self.duration_cycles | self.a | self.b | self.c | self.d
                | self.mem_bytes | self.stream | self.subop | self.fast_bytes) < 0:
            raise ValueError(f"{self.opcode.name}: fields must be non-negative")
        if self.level_bytes:
            if type(self.level_bytes) is not tuple:
                object.__setattr__(self, "level_bytes", tuple(int(x) for x in self.level_bytes))
            if min(self.level_bytes) < 0:
                raise ValueError(f"{self.opcode.name}: level bytes must be non-negative")

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles


@dataclass(frozen=True, slots=True)
class LevelInfo:
    """A memory level as a binary's header records it (capacity after any spec cap).

    Examples
    --------
    >>> LevelInfo("hbm", 32 << 30, 1200 * 10**9).capacity_bytes
    34359738368
    """

    name: str
    capacity_bytes: int
    bandwidth_bytes_per_s: int


@dataclass(frozen=True, slots=True)
class LinkInfo:
    """A link a program uses: its global id (index in the hardware), bandwidth, latency.

    Examples
    --------
    >>> LinkInfo(0, "ici0", 100 * 10**9, 2000).name
    'ici0'
    """

    id: int
    name: str
    bandwidth_bytes_per_s: int
    latency_cycles: int

    def transfer_cycles(self, size_bytes: int, clock_hz: int) -> int:
        """``latency + ceil(bytes * clock / bandwidth)`` reference cycles.

        >>> LinkInfo(0, "l", 10**9, 10).transfer_cycles(100, 10**9)
        110
        """
        return self.latency_cycles + ceil_div(size_bytes * clock_hz, self.bandwidth_bytes_per_s)


@dataclass(frozen=True, slots=True)
class Operand:
    """One input or output of a kernel: its full shape and dtype, and the buffers holding it.

    ``buffers`` are buffer ids in order; when there are several, the value is their
    contents concatenated along dimension 0 (the portions of a split tensor).

    Examples
    --------
    >>> Operand((4, 8), "fp32", (3,)).size_bytes
    128
    """

    shape: tuple[int, ...]
    dtype: str
    buffers: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(map(int, self.shape)))  # map: decoding builds thousands
        object.__setattr__(self, "buffers", tuple(map(int, self.buffers)))

    @property
    def size_bytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True, slots=True)
class Kernel:
    """What the compute instruction(s) of ``op`` compute: the graph op's type and attributes
    applied to ``inputs`` giving ``outputs`` (in the graph op's input/output order).

    ``attrs_json`` is the op's attributes as canonical JSON (sorted keys), so the binary
    stays byte-deterministic. ``op`` is the instruction's op name (a split portion's
    instance name, e.g. ``"fc#1"``, has its own kernel with portion shapes).

    Examples
    --------
    >>> k = Kernel("r", "relu", "{}", (Operand((4,), "fp32", (0,)),), (Operand((4,), "fp32", (1,)),))
    >>> k.type, k.outputs[0].buffers
    ('relu', (1,))
    """

    op: str
    type: str
    attrs_json: str
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))


@dataclass(frozen=True, slots=True)
class Program:
    """The instructions of one device, with everything needed to re-time them.

    Examples
    --------
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0,
    ...             (LevelInfo("mem", 1 << 20, 10**12),), 0, (), 1, (),
    ...             (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5), Instruction(Opcode.HALT, 0, 5, 0)))
    >>> p.main.name, p.end_cycle
    ('mem', 5)
    """

    device: str
    profile: str
    device_clock_hz: int
    reference_clock_hz: int
    mxu_rows: int
    mxu_cols: int
    vector_lanes: int
    dma_latency_cycles: int
    levels: tuple[LevelInfo, ...]
    main_level: int
    links: tuple[LinkInfo, ...]
    num_streams: int
    buffers: tuple[str, ...]  # buffer names, indexed by buffer id
    instructions: tuple[Instruction, ...]
    fast_level: int = -1  # the level fast_bytes are counted in; -1: no memory plan (all in main)
    kernels: tuple[Kernel, ...] = ()  # sorted by op name; empty when lowered without kernels
    addressed: bool = False  # ALLOC/FREE d are real addresses (the simulator checks overlaps); False: d = 0
    # Ops and memory DMAs contend for each level's bandwidth (docs/memory.md, "Shared bandwidth"):
    # the simulator checks every level's shares; False: each has the full bandwidth (as before).
    shared_bandwidth: bool = False
    # DMA paths with their own rate: (level a, level b, bytes/s), either way, a < b, sorted; a
    # memory DMA between two levels without one runs at the slower level's bandwidth.
    dma_rates: tuple[tuple[int, int, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kernels", tuple(self.kernels))
        if not -1 <= self.fast_level < len(self.levels):
            raise ValueError(f"fast level {self.fast_level} out of range")
        object.__setattr__(self, "levels", tuple(self.levels))
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "instructions", tuple(self.instructions))
        if not 0 <= self.main_level < len(self.levels):
            raise ValueError(f"main level {self.main_level} out of range")
        rates = tuple((int(a), int(b), int(r)) for a, b, r in self.dma_rates)
        if any(not 0 <= a < b < len(self.levels) or r <= 0 for a, b, r in rates) or list(rates) != sorted(
                set(rates)) or len({(a, b) for a, b, _ in rates}) != len(rates):
            raise ValueError(f"DMA rates {rates}: each joins two levels a < b once, sorted, at a positive rate")
        object.__setattr__(self, "dma_rates", rates)

    def dma_rate(self, a: int, b: int) -> int:
        """Bytes/s of the DMA path between levels ``a`` and ``b`` if it has its own rate, else 0."""
        lo, hi = min(a, b), max(a, b)
        for x, y, rate in self.dma_rates:
            if (x, y) == (lo, hi):
                return rate
        return 0

    @property
    def main(self) -> LevelInfo:
        return self.levels[self.main_level]

    @property
    def end_cycle(self) -> int:
        return max((i.end_cycle for i in self.instructions), default=0)

    @property
    def fast(self) -> LevelInfo | None:
        return self.levels[self.fast_level] if self.fast_level >= 0 else None

    def link(self, link_id: int) -> LinkInfo:
        for link in self.links:
            if link.id == link_id:
                return link
        raise KeyError(link_id)


def _roofline_memory_cycles(instr: Instruction, program: Program) -> int:
    """``ceil(fast_bytes·clk/bw_fast) + ceil(mem_bytes·clk/bw_main)`` (levels are read in series);
    with ``level_bytes``, the same sum over every level."""
    if instr.level_bytes:
        if len(instr.level_bytes) != len(program.levels):
            raise ValueError(f"{instr.opcode.name} of {instr.op!r} gives bytes for {len(instr.level_bytes)} levels, "
                             f"the program has {len(program.levels)}")
        return sum(memory_cycles(b, program.device_clock_hz, lv.bandwidth_bytes_per_s)
                   for b, lv in zip(instr.level_bytes, program.levels) if b)
    cycles = memory_cycles(instr.mem_bytes, program.device_clock_hz, program.main.bandwidth_bytes_per_s)
    if instr.fast_bytes:
        fast = program.fast
        if fast is None:
            raise ValueError(f"{instr.opcode.name} of {instr.op!r} moves fast_bytes, but the program has no fast level")
        cycles += memory_cycles(instr.fast_bytes, program.device_clock_hz, fast.bandwidth_bytes_per_s)
    return cycles


def device_cycles(instr: Instruction, program: Program) -> int:
    """Device cycles of a compute instruction, recomputed from its operands.

    Raises ``ValueError`` for an operand the ISA cannot time (unknown subop or level).

    Examples
    --------
    >>> p = Program("d0", "tpu-v1", 700_000_000, 10**9, 256, 256, 256, 100,
    ...             (LevelInfo("onchip", 1 << 20, 10**12), LevelInfo("ddr3", 1 << 30, 34 * 10**9)),
    ...             1, (), 1, (), ())
    >>> device_cycles(Instruction(Opcode.MATMUL, 0, 0, 0, a=256, b=256, c=256, d=1), p)
    1022
    """
    op = instr.opcode
    if op in (Opcode.MATMUL, Opcode.CONV):
        compute = systolic_cycles(program.mxu_rows, program.mxu_cols, instr.a, instr.b, instr.c, instr.d)
        return max(compute, _roofline_memory_cycles(instr, program))
    if op == Opcode.VECTOR:
        sub = VectorOp(instr.subop)
        compute = vector_cycles(instr.a, program.vector_lanes, sub.factor, instr.b)
        return max(compute, _roofline_memory_cycles(instr, program))
    if op == Opcode.DMA:
        if instr.mem_bytes or instr.fast_bytes or any(instr.level_bytes):
            # A data-movement op of a memory-planned program (reshape, transpose, concat, split):
            # a copy through the load/store path, timed by the roofline of the bytes it moves.
            return _roofline_memory_cycles(instr, program)
        src, dst = program.levels[instr.a], program.levels[instr.b]
        rate = program.dma_rate(instr.a, instr.b)
        if rate:  # the path's own rate, carried by the binary
            return dma_cycles(instr.c, program.device_clock_hz, rate, rate, program.dma_latency_cycles, False)
        return dma_cycles(instr.c, program.device_clock_hz, src.bandwidth_bytes_per_s,
                          dst.bandwidth_bytes_per_s, program.dma_latency_cycles, instr.a == instr.b)
    if op == Opcode.TASK:
        return instr.a
    return 0


def expected_duration_cycles(instr: Instruction, program: Program) -> int:
    """The duration an instruction must have on the timeline (reference cycles).

    Compute instructions: their device cycles converted with ``ceil(c * ref / dev)``;
    SEND/RECV: the link's transfer time; everything else: zero.

    Examples
    --------
    >>> p = Program("d0", "g", 500_000_000, 10**9, 1, 1, 1, 0, (LevelInfo("m", 1, 1),), 0,
    ...             (LinkInfo(3, "l", 10**9, 10),), 1, (), ())
    >>> expected_duration_cycles(Instruction(Opcode.TASK, 0, 0, 0, a=3), p)  # 3 cycles at 500 MHz
    6
    >>> expected_duration_cycles(Instruction(Opcode.SEND, TRANSFER_STREAM, 0, 0, a=3, b=100, peer="d1"), p)
    110
    """
    if instr.opcode in COMPUTE_OPCODES:
        return ceil_div(device_cycles(instr, program) * program.reference_clock_hz,
                        program.device_clock_hz)
    if instr.opcode in (Opcode.SEND, Opcode.RECV):
        return program.link(instr.a).transfer_cycles(instr.b, program.reference_clock_hz)
    return 0
