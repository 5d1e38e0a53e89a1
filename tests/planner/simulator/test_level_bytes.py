"""Level bytes (binary format version 3): a roofline over three levels, encoded, replayed and screened.

The device of :mod:`tests.planner.simulator.programs` (1 GHz, 4x4 array, DMA start-up 10)
with a third level: ``sram`` (fast, 1024 B, 32 B/cycle), ``dram`` (main, 1 MiB, 4 B/cycle),
``host`` (1 MiB, 1 B/cycle).

y = x @ w with x[16, 4] (256 B) preloaded in dram, w[4, 4] (64 B) preloaded in host, y
written in sram: compute 2*4 + 4 + 16 - 2 = 26; memory 256/32 + 256/4 + 64/1 = 8 + 64 + 64
= 136 cycles, [0, 136).
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct

import pytest

from planner.errors import BinaryFormatError
from planner.isa.binary import HEADER, decode, decode_tables, encode, format_version, listing
from planner.isa.instructions import LevelInfo, Program, expected_duration_cycles
from planner.simulator import simulate, simulate_programs
from planner.simulator.screen import screened_replay
from tests.planner.simulator.programs import alloc, free, halt, matmul, op

SRAM, DRAM, HOST = 0, 1, 2
LEVELS3 = (LevelInfo("sram", 1024, 32 * 10**9), LevelInfo("dram", 1 << 20, 4 * 10**9),
           LevelInfo("host", 1 << 20, 10**9))
X, W, YF = range(3)


def three_levels(*, level_bytes=(256, 256, 64), mem: int = 256, fast: int = 256, dur: int = 136,
                 alloc_level_bytes=()) -> Program:
    mm = dataclasses.replace(matmul(0, dur, "mm", 16, (X, W), (YF,), mem=mem, fast=fast), level_bytes=level_bytes)
    end = max(dur, 1)
    ins = (alloc(0, X, DRAM, 256, 0, pre=True),
           dataclasses.replace(alloc(0, W, HOST, 64, 0, pre=True), level_bytes=alloc_level_bytes),
           alloc(0, YF, SRAM, 256, 0), mm,
           free(end, X, DRAM, 256, 0), free(end, W, HOST, 64, 0), free(end, YF, SRAM, 256, 0), halt(end))
    kernels = (op("mm", "matmul", [((16, 4), (X,)), ((4, 4), (W,))], [((16, 4), (YF,))]),)
    return Program("d0", "test", 10**9, 10**9, 4, 4, 4, 10, LEVELS3, DRAM, (), 1, ("x", "w", "y@sram.0"), ins,
                   fast_level=SRAM, kernels=kernels, addressed=True)


def _slow(p: Program):
    return simulate_programs({"d0": decode(encode(p), name="d0")})


def test_roofline_sums_every_level():
    p = three_levels()
    assert expected_duration_cycles(p.instructions[3], p) == 136
    # Without level bytes the two-field roofline ignores host: 8 + 64 = 72 cycles.
    two = dataclasses.replace(p.instructions[3], level_bytes=())
    assert expected_duration_cycles(two, p) == 72


def test_version_3_round_trip_and_layout():
    p = three_levels()
    data = encode(p)
    assert format_version(p) == 3
    assert struct.unpack_from("<H", data, 8) == (3,)
    assert struct.unpack_from("<I", data, 100) == (1,)  # one level-bytes row
    # The table comes last: record index 3, reserved 0, then one u64 per level.
    assert struct.unpack_from("<IIQQQ", data, len(data) - 32) == (3, 0, 256, 256, 64)
    q = decode(data)
    assert q == p and q.instructions[3].level_bytes == (256, 256, 64) and q.instructions[0].level_bytes == ()
    assert encode(q) == data
    t = decode_tables(data)
    assert t.level_rows.tolist() == [3] and t.level_bytes.tolist() == [[256, 256, 64]]
    assert "levels=sram:256B,dram:256B,host:64B" in listing(p) and listing(p).startswith("; plan ISA v3 ")


def _patched(data: bytes, at: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    out[HEADER.size - 32:HEADER.size] = hashlib.sha256(bytes(out[:HEADER.size - 32]) + bytes(out[HEADER.size:])).digest()
    return bytes(out)


def test_bad_versions_and_tables_are_refused():
    data = encode(three_levels())
    with pytest.raises(BinaryFormatError, match="format version 4 is not supported .*reads versions 2 and 3"):
        decode(_patched(data, 8, "<H", 4), name="d0.bin")
    with pytest.raises(BinaryFormatError, match="record indices must increase"):
        decode(_patched(data, len(data) - 32, "<I", 99), name="d0.bin")
    for decoder in (decode, decode_tables):
        with pytest.raises(BinaryFormatError, match="record indices must increase"):
            decoder(_patched(data, len(data) - 28, "<I", 1), name="d0.bin")  # reserved field
    # A version-2 header over the same body announces the wrong section sizes.
    with pytest.raises(BinaryFormatError, match="section sizes add up"):
        decode(_patched(data, 8, "<H", 2), name="d0.bin")


def test_valid_three_level_program_takes_the_fast_path():
    p = three_levels()
    slow = _slow(p)
    assert slow.valid, slow.violations
    assert screened_replay({"d0": decode_tables(encode(p))}) is not None
    assert simulate({"d0": encode(p)}) == slow
    assert slow.makespan_cycles == 136


PLANTED = {
    # dram 320 (as if y were in dram too) and no host: 8 + 80 = 88 cycles, timed right.
    "level bytes not the operand buffers'": (dict(level_bytes=(256, 320, 0), mem=320, dur=88),
                                             "level bytes sram=256, dram=320, host=0, but its operand buffers hold "
                                             "sram=256, dram=256, host=64"),
    "mem_bytes not the main entry": (dict(mem=0), "disagree with its level bytes"),
    "a wrong duration": (dict(dur=72), "duration mismatch"),
    "level bytes on an ALLOC": (dict(alloc_level_bytes=(0, 0, 0)), "has level bytes, which only"),
    "a third level without level bytes": (dict(level_bytes=(), dur=72), "neither the fast nor the main level"),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_level_byte_violations_fail_both_paths(name):
    changes, text = PLANTED[name]
    p = three_levels(**changes)
    binaries = {"d0": encode(p)}
    assert screened_replay({"d0": decode_tables(binaries["d0"])}) is None
    result = simulate(binaries)
    assert result == _slow(p)
    assert not result.valid and any(text in v for v in result.violations), result.violations
