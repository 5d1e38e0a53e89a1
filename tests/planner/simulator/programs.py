"""Hand-made memory-planned programs for the simulator tests (no lowering involved).

The device: 1 GHz device and reference clocks (a device cycle is a timeline cycle), a
4x4 systolic array, 4 vector lanes, DMA start-up 10 cycles, two levels:
``sram`` (fast, 1024 B, 32 B/cycle) and ``dram`` (main, 1 MiB, 4 B/cycle).
"""

from __future__ import annotations

import numpy as np

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

SRAM, DRAM = 0, 1
LEVELS = (LevelInfo("sram", 1024, 32 * 10**9), LevelInfo("dram", 1 << 20, 4 * 10**9))
LINK = LinkInfo(0, "l0", 10**9, 5)  # 1 B/cycle, 5 cycles latency


def alloc(t: int, buf: int, level: int, size: int, addr: int, *, pre: bool = False, view: bool = False,
          stream: int = 0) -> Instruction:
    flags = (ALLOC_PRELOADED if pre else 0) | (ALLOC_VIEW if view else 0)
    return Instruction(Opcode.ALLOC, stream, t, 0, subop=flags, a=buf, b=level, c=size, d=addr)


def free(t: int, buf: int, level: int, size: int, addr: int, *, view: bool = False, stream: int = 0) -> Instruction:
    return Instruction(Opcode.FREE, stream, t, 0, subop=ALLOC_VIEW if view else 0, a=buf, b=level, c=size, d=addr)


def dma(t: int, dur: int, name: str, src: int, dst: int, src_level: int, dst_level: int, size: int) -> Instruction:
    return Instruction(Opcode.DMA, DMA_STREAM, t, dur, op=name, a=src_level, b=dst_level, c=size,
                       reads=(src,), writes=(dst,))


def sync(t: int, sem: int, from_stream: int, to_stream: int) -> tuple[Instruction, Instruction]:
    return (Instruction(Opcode.SIGNAL, from_stream, t, 0, a=sem), Instruction(Opcode.WAIT, to_stream, t, 0, a=sem))


def matmul(t: int, dur: int, name: str, rows: int, reads, writes, *, mem: int, fast: int = 0) -> Instruction:
    return Instruction(Opcode.MATMUL, 0, t, dur, op=name, a=rows, b=4, c=4, d=1, mem_bytes=mem, fast_bytes=fast,
                       reads=tuple(reads), writes=tuple(writes))


def relu(t: int, dur: int, name: str, elements: int, reads, writes, *, mem: int, fast: int = 0) -> Instruction:
    return Instruction(Opcode.VECTOR, 0, t, dur, op=name, subop=int(VectorOp.RELU), a=elements, b=1,
                       mem_bytes=mem, fast_bytes=fast, reads=tuple(reads), writes=tuple(writes))


def halt(t: int) -> Instruction:
    return Instruction(Opcode.HALT, 0, t, 0)


def op(name: str, type_: str, inputs, outputs) -> Kernel:
    """A kernel; ``inputs``/``outputs`` are ``(shape, buffer ids)`` pairs, all fp32."""
    return Kernel(name, type_, "{}", tuple(Operand(s, "fp32", b) for s, b in inputs),
                  tuple(Operand(s, "fp32", b) for s, b in outputs))


def program(instructions, buffers, kernels=(), *, device: str = "d0", fast_level: int = SRAM,
            addressed: bool = True, links=()) -> Program:
    ins = sorted(instructions, key=lambda i: (i.opcode == Opcode.HALT, i.start_cycle))
    return Program(device, "test", 10**9, 10**9, 4, 4, 4, 10, LEVELS, DRAM, tuple(links), 1, tuple(buffers),
                   tuple(ins), fast_level=fast_level, kernels=tuple(sorted(kernels, key=lambda k: k.op)),
                   addressed=addressed)


# -- prefetch x, y = x @ w in sram, evict y ------------------------------------------------
#
# x[16, 4] and w[4, 4] fp32 are preloaded in dram (256 B and 64 B).
# prefetch x -> x@sram.0: 10 + ceil(256 B / 4 B/cycle) = 74 cycles, [0, 74).
# mm: T=16, K=4, N=4 on 4x4: compute = 2*4 + 4 + 16 - 2 = 26;
#     fast bytes = x@sram.0 + y@sram.0 = 512 -> 512/32 = 16; main bytes = w = 64 -> 64/4 = 16;
#     roofline max(26, 16 + 16) = 32 cycles, [74, 106).
# evict y@sram.0 -> y: 10 + 256/4 = 74 cycles, [106, 180). HALT at 180.
X, W, XF, YF, Y = range(5)
PCE_BUFFERS = ("x", "w", "x@sram.0", "y@sram.0", "y")


def prefetch_compute_evict(*, y_fast_addr: int = 256, evict_start: int = 106, mm_fast: int = 512,
                           mm_mem: int = 64, mm_dur: int = 32) -> Program:
    ins = [
        alloc(0, X, DRAM, 256, 0, pre=True), alloc(0, W, DRAM, 64, 256, pre=True),
        alloc(0, XF, SRAM, 256, 0, stream=DMA_STREAM),
        dma(0, 74, "prefetch:x@sram.0", X, XF, DRAM, SRAM, 256),
        *sync(74, 0, DMA_STREAM, 0),
        alloc(74, YF, SRAM, 256, y_fast_addr),
        matmul(74, mm_dur, "mm", 16, (XF, W), (YF,), mem=mm_mem, fast=mm_fast),
        *sync(106, 1, 0, DMA_STREAM),
        free(106, XF, SRAM, 256, 0),
        alloc(106, Y, DRAM, 256, 320, stream=DMA_STREAM),
        dma(evict_start, 74, "evict:y", YF, Y, SRAM, DRAM, 256),
        free(180, YF, SRAM, 256, y_fast_addr), free(180, Y, DRAM, 256, 320),
        halt(max(180, evict_start + 74)),
    ]
    kernels = [op("mm", "matmul", [((16, 4), (XF,)), ((4, 4), (W,))], [((16, 4), (YF,))])]
    return program(ins, PCE_BUFFERS, kernels)


# -- a matmul split in two row portions writing views of one dram buffer -----------------
#
# x[16, 4] preloaded at dram [0, 256) with views x#0 [0, 128), x#1 [128, 256);
# w[4, 4] at [256, 320); y[16, 4] at [320, 576) with views y#0 [320, 448), y#1 [448, 576).
# mm#p: T=8: compute 2*4 + 4 + 8 - 2 = 18; main bytes 128 + 64 + 128 = 320 -> 80 cycles.
# mm#0 [0, 80), mm#1 [80, 160); relu(y) -> z at [576, 832): 64 elements / 4 lanes = 16,
# main bytes 512 -> 128 cycles, [160, 288).
SX, SW, SY, SX0, SX1, SY0, SY1, SZ = range(8)
SPLIT_BUFFERS = ("x", "w", "y", "x#0", "x#1", "y#0", "y#1", "z")


def split_portions(*, y1_addr: int = 448, mm1_start: int = 80, relu_reads_portions: bool = False) -> Program:
    ins = [
        alloc(0, SX, DRAM, 256, 0, pre=True), alloc(0, SW, DRAM, 64, 256, pre=True),
        alloc(0, SY, DRAM, 256, 320),
        alloc(0, SX0, DRAM, 128, 0, view=True), alloc(0, SX1, DRAM, 128, 128, view=True),
        alloc(0, SY0, DRAM, 128, 320, view=True), alloc(0, SY1, DRAM, 128, y1_addr, view=True),
        matmul(0, 80, "mm#0", 8, (SX0, SW), (SY0,), mem=320),
        matmul(mm1_start, 80, "mm#1", 8, (SX1, SW), (SY1,), mem=320),
        free(mm1_start + 80, SX0, DRAM, 128, 0, view=True), free(mm1_start + 80, SX1, DRAM, 128, 128, view=True),
        alloc(160, SZ, DRAM, 256, 576),
        relu(160, 128, "r", 64, (SY0, SY1) if relu_reads_portions else (SY,), (SZ,), mem=512),
        free(288, SY0, DRAM, 128, 320, view=True), free(288, SY1, DRAM, 128, y1_addr, view=True),
        free(288, SY, DRAM, 256, 320), free(288, SZ, DRAM, 256, 576),
        halt(max(288, mm1_start + 80)),
    ]
    y_in = ((16, 4), (SY0, SY1)) if relu_reads_portions else ((16, 4), (SY,))
    kernels = [op(f"mm#{p}", "matmul", [((8, 4), (xb,)), ((4, 4), (SW,))], [((8, 4), (yb,))])
               for p, xb, yb in ((0, SX0, SY0), (1, SX1, SY1))]
    kernels.append(op("r", "relu", [y_in], [((16, 4), (SZ,))]))
    return program(ins, SPLIT_BUFFERS, kernels)


# -- relu on d0, its result sent to d1, relu again there ---------------------------------
#
# d0: x[4, 4] preloaded (64 B); relu x -> y: 16 elements / 4 = 4 cycles, main bytes 128 / 4 = 32
# cycles, [0, 32); SEND y over l0: 5 + 64 B / 1 B/cycle = 69 cycles, [32, 101).
# d1: RECV into "y@d0->r2" [32, 101); relu -> z, [101, 133).
def two_devices() -> dict[str, Program]:
    d0 = program([
        alloc(0, 0, DRAM, 64, 0, pre=True), alloc(0, 1, DRAM, 64, 64),
        relu(0, 32, "r1", 16, (0,), (1,), mem=128),
        Instruction(Opcode.SEND, TRANSFER_STREAM, 32, 69, op="r1", a=0, b=64, c=0, reads=(1,), peer="d1"),
        free(101, 1, DRAM, 64, 64), halt(101),
    ], ("x", "y"), [op("r1", "relu", [((4, 4), (0,))], [((4, 4), (1,))])], device="d0", fast_level=-1,
        links=(LINK,))
    d1 = program([
        alloc(32, 0, DRAM, 64, 0, stream=TRANSFER_STREAM),
        Instruction(Opcode.RECV, TRANSFER_STREAM, 32, 69, op="r2", a=0, b=64, c=0, writes=(0,), peer="d0"),
        alloc(101, 1, DRAM, 64, 64), relu(101, 32, "r2", 16, (0,), (1,), mem=128),
        free(133, 0, DRAM, 64, 0), free(133, 1, DRAM, 64, 64), halt(133),
    ], ("y@d0->r2", "z"), [op("r2", "relu", [((4, 4), (0,))], [((4, 4), (1,))])], device="d1", fast_level=-1,
        links=(LINK,))
    return {"d0": d0, "d1": d1}


def chain(n: int, *, size: int = 4) -> Program:
    """A synthetic program of ``n`` small kernels (for throughput): ``x -> relu -> add -> relu...``.

    Each op i reads the previous value (and x for the adds), writes a fresh buffer at one of
    two alternating addresses, and is surrounded by its ALLOC, FREE and a SIGNAL/WAIT pair,
    so about 5 instructions per kernel. Durations are 1 cycle (the replay's timing checks
    are not the point here).
    """
    nbytes = size * size * 4
    ins = [alloc(0, 0, DRAM, nbytes, 0, pre=True)]
    kernels = []
    buffers = ["x"]
    prev = 0
    for i in range(n):
        b = len(buffers)
        buffers.append(f"t{i}")
        addr = nbytes * (1 + i % 2)
        kind = "add" if i % 2 else "relu"
        reads = (prev, 0) if kind == "add" else (prev,)
        ins.append(alloc(i, b, DRAM, nbytes, addr))
        ins.append(Instruction(Opcode.VECTOR, 0, i, 1, op=f"k{i}", subop=int(VectorOp.ADD if i % 2 else VectorOp.RELU),
                               a=size * size, b=1, reads=reads, writes=(b,)))
        ins.extend(sync(i + 1, i, 0, 0))
        kernels.append(op(f"k{i}", kind, [((size, size), (r,)) for r in reads], [((size, size), (b,))]))
        if prev:
            ins.append(free(i + 1, prev, DRAM, nbytes, nbytes * (1 + (i - 1) % 2)))
        prev = b
    ins.append(halt(n + 1))
    return program(ins, buffers, kernels, fast_level=-1)


def reference_chain(x: np.ndarray, n: int) -> np.ndarray:
    """What :func:`chain` computes, in float64 rounded to fp32 after each op."""
    y = x
    for i in range(n):
        y = (y.astype(np.float64) + x.astype(np.float64)).astype(np.float32) if i % 2 else np.maximum(y, 0)
    return y
