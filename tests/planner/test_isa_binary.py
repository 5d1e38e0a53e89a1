"""Binary format: byte layout, round trips, listing."""

from __future__ import annotations

import hashlib
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.isa import (
    MAGIC,
    TRANSFER_STREAM,
    Instruction,
    LevelInfo,
    LinkInfo,
    Opcode,
    Program,
    VectorOp,
    decode,
    encode,
    listing,
)
from planner.isa.binary import HEADER, RECORD


def every_opcode_program() -> Program:
    ins = (
        Instruction(Opcode.ALLOC, 0, 0, 0, op="mm", subop=1, a=0, b=1, c=64),
        Instruction(Opcode.MATMUL, 0, 0, 10, op="mm", a=4, b=4, c=4, d=1, mem_bytes=48, reads=(0,), writes=(1,)),
        Instruction(Opcode.VECTOR, 1, 0, 3, op="sm", subop=int(VectorOp.SOFTMAX), a=16, b=1, reads=(1,)),
        Instruction(Opcode.DMA, 0, 10, 2, op="tr", a=1, b=0, c=64),
        Instruction(Opcode.SEND, TRANSFER_STREAM, 10, 7, op="mm", a=3, b=64, c=0, reads=(1,), peer="dev1"),
        Instruction(Opcode.RECV, TRANSFER_STREAM, 20, 7, op="x", a=3, b=64, c=1, writes=(2,), peer="dev1"),
        Instruction(Opcode.SIGNAL, 0, 10, 0, op="mm", a=5),
        Instruction(Opcode.WAIT, 1, 10, 0, op="sm", a=5),
        Instruction(Opcode.TASK, 1, 12, 9, op="t", a=9),
        Instruction(Opcode.FREE, 0, 30, 0, a=0, b=1, c=64),
        Instruction(Opcode.HALT, 0, 30, 0),
    )
    return Program("dev0", "tpu-v4", 1_050_000_000, 10**9, 128, 128, 1024, 500,
                   (LevelInfo("vmem", 1 << 25, 4 * 10**12), LevelInfo("hbm", 1 << 35, 1200 * 10**9)), 1,
                   (LinkInfo(3, "ici", 100 * 10**9, 2000),), 2, ("w", "y", "rx"), ins)


def test_round_trip_every_opcode():
    p = every_opcode_program()
    data = encode(p)
    assert decode(data) == p
    assert encode(decode(data)) == data


def test_header_byte_offsets():
    p = every_opcode_program()
    data = encode(p)
    assert HEADER.size == 144 and RECORD.size == 80
    assert data[0:8] == MAGIC
    assert struct.unpack_from("<HHH", data, 8) == (2, 144, 80)  # no level bytes: version 2
    assert struct.unpack_from("<QQ", data, 16) == (1_050_000_000, 10**9)  # device, reference clock
    assert struct.unpack_from("<IIII", data, 32) == (128, 128, 1024, 500)  # mxu rows/cols, lanes, dma
    assert struct.unpack_from("<HHHH", data, 56) == (2, 1, 1, 2)  # levels, main level, links, streams
    assert struct.unpack_from("<I", data, 64) == (len(p.instructions),)
    assert struct.unpack_from("<h", data, 84) == (-1,)  # fast level: none
    (body_bytes,) = struct.unpack_from("<Q", data, 104)
    assert len(data) == 144 + body_bytes
    assert data[112:144] == hashlib.sha256(data[:112] + data[144:]).digest()
    # The level table follows the header: name index, reserved, capacity, bandwidth.
    assert struct.unpack_from("<IIQQ", data, 144)[2:] == (1 << 25, 4 * 10**12)
    # The last record: HALT at cycle 30 on stream 0.
    last = RECORD.unpack_from(data, len(data) - 80)
    assert (last[0], last[2], last[4]) == (int(Opcode.HALT), 0, 30)


def test_listing_names_everything():
    text = listing(every_opcode_program())
    for needle in ("device dev0 (profile tpu-v4)", "level 1 hbm", "(main)", "link 3 ici",
                   "MATMUL  T=4 K=4 N=4 sets=1 mem=48B | mm | [0] -> [1]", "softmax elements=16",
                   "hbm->vmem bytes=64", "to=dev1 link=ici bytes=64 xfer=0", "buf=0:w hbm bytes=64 preloaded",
                   "sem=5", "cycles=9", "xfer"):
        assert needle in text, needle
    assert text.rstrip().splitlines()[-1].split() == ["30", "0", "0", "HALT"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**20), st.integers(0, 3),
                          st.text(max_size=6), st.lists(st.integers(0, 2), max_size=3)), max_size=8))
def test_round_trip_random_tasks(rows):
    ins = tuple(Instruction(Opcode.TASK, s, start, dur, op=op, a=dur, reads=tuple(r))
                for start, dur, s, op, r in rows) + (Instruction(Opcode.HALT, 0, 0, 0),)
    p = Program("d", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1, 1),), 0, (), 4,
                ("a", "b", "c"), ins)
    assert decode(encode(p)) == p
