"""Binary format version 2: fast bytes, fast level, addresses, views, DMA engine, kernels."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import BinaryFormatError
from planner.isa.binary import FORMAT_VERSION, HEADER, KERNEL, OPERAND, RECORD, decode, encode, listing
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    DMA_STREAM,
    Instruction,
    Kernel,
    LevelInfo,
    Opcode,
    Operand,
    Program,
)

LEVELS = (LevelInfo("vmem", 1 << 20, 4 * 10**12), LevelInfo("hbm", 1 << 30, 1200 * 10**9))


def memory_program(**changes) -> Program:
    """Every v2 field set: fast level 0, addresses, a view, a DMA on the DMA engine, two kernels."""
    ins = (
        Instruction(Opcode.ALLOC, 0, 0, 0, op="mm", subop=ALLOC_PRELOADED, a=0, b=1, c=64, d=0),
        Instruction(Opcode.ALLOC, 0, 0, 0, op="mm", a=1, b=1, c=128, d=64),
        Instruction(Opcode.ALLOC, 0, 0, 0, op="mm", subop=ALLOC_VIEW, a=2, b=1, c=64, d=128),
        Instruction(Opcode.ALLOC, DMA_STREAM, 0, 0, op="prefetch:w@vmem.0", a=3, b=0, c=64, d=4096),
        Instruction(Opcode.DMA, DMA_STREAM, 0, 7, op="prefetch:w@vmem.0", a=1, b=0, c=64, reads=(0,), writes=(3,)),
        Instruction(Opcode.SIGNAL, DMA_STREAM, 7, 0, op="prefetch:w@vmem.0", a=0),
        Instruction(Opcode.WAIT, 0, 7, 0, op="mm#1", a=0),
        Instruction(Opcode.MATMUL, 0, 7, 10, op="mm#1", a=2, b=4, c=4, d=1, mem_bytes=32, fast_bytes=64,
                    reads=(3,), writes=(2,)),
        Instruction(Opcode.FREE, 0, 17, 0, subop=ALLOC_VIEW, a=2, b=1, c=64, d=128),
        Instruction(Opcode.HALT, 0, 17, 0),
    )
    kernels = (
        Kernel("mm#0", "matmul", "{}", (Operand((2, 4), "fp32", (3,)), Operand((4, 4), "fp32", (0,))),
               (Operand((2, 4), "fp32", (1,)),)),
        Kernel("mm#1", "matmul", json.dumps({"alpha": 1.5, "note": "é"}, sort_keys=True),
               (Operand((4, 4), "fp16", (0, 3)), Operand((), "int8", ())), (Operand((2, 4), "fp32", (2,)),)),
    )
    p = Program("dev0", "tpu-v4", 1_050_000_000, 10**9, 128, 128, 1024, 500, LEVELS, 1, (), 2,
                ("w", "y", "y#1", "w@vmem.0"), ins, fast_level=0, kernels=kernels, addressed=True)
    return dataclasses.replace(p, **changes)


def test_round_trip_every_v2_field():
    p = memory_program()
    data = encode(p)
    q = decode(data)
    assert q == p
    assert (q.fast_level, q.addressed) == (0, True)
    assert q.instructions[7].fast_bytes == 64 and q.instructions[2].d == 128
    assert q.kernels[1].inputs[0] == Operand((4, 4), "fp16", (0, 3))
    assert q.kernels[1].inputs[1].shape == ()  # a scalar operand with no buffer survives
    assert encode(q) == data


def test_bytes_are_deterministic_and_depend_on_every_new_field():
    p = memory_program()
    assert encode(p) == encode(memory_program())
    variants = [
        memory_program(fast_level=-1, instructions=tuple(dataclasses.replace(i, fast_bytes=0)
                                                          for i in p.instructions)),
        memory_program(addressed=False),
        memory_program(kernels=p.kernels[:1]),
        memory_program(kernels=(dataclasses.replace(p.kernels[0], attrs_json='{"a": 1}'),) + p.kernels[1:]),
    ]
    for v in variants:
        assert decode(encode(v)) == v
        assert encode(v) != encode(p)


def test_v2_header_and_sections():
    p = memory_program()
    data = encode(p)
    assert (HEADER.size, RECORD.size, KERNEL.size, OPERAND.size) == (144, 80, 20, 16)
    # No level bytes: written as version 2, byte for byte as before the version-3 table.
    assert struct.unpack_from("<HHHH", data, 8) == (2, 144, 80, 1)  # flags: addressed
    assert FORMAT_VERSION == 3
    # fast level, reserved, kernels, operands (3 + 3), dims (2+2+2 + 2+0+2 = 10).
    assert struct.unpack_from("<hHIII", data, 84) == (0, 0, 2, 6, 10)
    (body_bytes,) = struct.unpack_from("<Q", data, 104)
    assert len(data) == 144 + body_bytes
    assert data[112:144] == hashlib.sha256(data[:112] + data[144:]).digest()
    # The records come last; record 7 is the MATMUL: mem_bytes at 56, fast_bytes at 64.
    first = len(data) - 80 * len(p.instructions)
    rec = RECORD.unpack_from(data, first + 80 * 7)
    assert (rec[0], rec[10], rec[11]) == (int(Opcode.MATMUL), 32, 64)
    # The dims section sits just before the records: the last operand is (2, 4).
    assert struct.unpack_from("<QQ", data, first - 16) == (2, 4)


def test_version_1_is_refused_clearly():
    data = bytearray(encode(memory_program()))
    data[8:10] = (1).to_bytes(2, "little")
    with pytest.raises(BinaryFormatError, match=r"dev0.bin: format version 1 is not supported \(this planner "
                                                r"reads versions 2 and 3"):
        decode(bytes(data), name="dev0.bin")


def test_corrupted_kernel_tables_are_refused():
    data = encode(memory_program())
    # Flip a byte inside the kernel section: the checksum catches it.
    bad = bytearray(data)
    bad[len(data) - 80 * 10 - 80 - 5] ^= 1
    with pytest.raises(BinaryFormatError, match="checksum"):
        decode(bytes(bad))
    # A bad fast level / unknown dtype / unknown flag, with a re-computed checksum.
    def patched(offset: int, fmt: str, value) -> bytes:
        b = bytearray(data)
        struct.pack_into(fmt, b, offset, value)
        b[112:144] = hashlib.sha256(bytes(b[:112]) + bytes(b[144:])).digest()
        return bytes(b)

    with pytest.raises(BinaryFormatError, match="fast level 2 out of range"):
        decode(patched(84, "<h", 2))
    with pytest.raises(BinaryFormatError, match="unknown header flags"):
        decode(patched(14, "<H", 10))  # bit 3 (bit 2 is FLAG_DMA_RATES)
    p = memory_program(kernels=(Kernel("k", "relu", "{}", (Operand((1,), "fp32", (0,)),), ()),))
    good = encode(p)
    b = bytearray(good.replace("fp32".encode(), b"fp99"))
    b[112:144] = hashlib.sha256(bytes(b[:112]) + bytes(b[144:])).digest()
    with pytest.raises(BinaryFormatError, match="unknown dtype 'fp99'"):
        decode(bytes(b))


def test_listing_shows_the_v2_fields():
    text = listing(memory_program())
    for needle in ("; addressed", "level 0 vmem: 1048576 B, 4000000000000 B/s (fast)", "(main)",
                   "; kernel mm#0: matmul (w@vmem.0[2x4 fp32], w[4x4 fp32]) -> (y[2x4 fp32])",
                   '; kernel mm#1: matmul {"alpha": 1.5, "note": "\\u00e9"} (w+w@vmem.0[4x4 fp16], [ int8]) '
                   "-> (y#1[2x4 fp32])",
                   "buf=0:w hbm bytes=64 preloaded addr=0", "buf=2:y#1 hbm bytes=64 view addr=128",
                   "dma  DMA     hbm->vmem bytes=64 | prefetch:w@vmem.0 | [0] -> [3]",
                   "MATMUL  T=2 K=4 N=4 sets=1 mem=32B fast=64B | mm#1"):
        assert needle in text, needle
    assert "addr=" not in listing(memory_program(addressed=False))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 2**40), max_size=4), st.sampled_from(["fp32", "int8", "bf16"]),
                          st.lists(st.integers(0, 3), max_size=3), st.text(max_size=5)), max_size=6),
       st.integers(-1, 1), st.booleans(), st.integers(0, 2**50))
def test_round_trip_random_kernels(operands, fast_level, addressed, fast_bytes):
    kernels = tuple(Kernel(f"k{i}", "add", json.dumps({"s": t}), (Operand(shape, dt, bufs),) * (i % 3),
                           (Operand(shape, dt, bufs),))
                    for i, (shape, dt, bufs, t) in enumerate(operands))
    ins = (Instruction(Opcode.VECTOR, 0, 0, 1, op="k0", subop=1, a=1, b=1, fast_bytes=fast_bytes),
           Instruction(Opcode.HALT, 0, 1, 0))
    p = Program("d", "g", 10**9, 10**9, 1, 1, 1, 0, LEVELS, 1, (), 1, ("a", "b", "c", "d"), ins,
                fast_level=fast_level, kernels=kernels, addressed=addressed)
    assert decode(encode(p)) == p
