"""The simulator's shared-bandwidth check on hand-made programs: each record's shares, the
per-level figures, the header flag round trip."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.errors import BinaryFormatError
from planner.isa.binary import FLAG_SHARED_BANDWIDTH, HEADER, decode, encode
from planner.isa.instructions import DMA_STREAM, Instruction, LevelInfo, Opcode, Program
from planner.simulator.bandwidth import check_shared_bandwidth, instruction_shares

# 1 GHz; sram 32 B/cycle, dram 4 B/cycle, host 1 B/cycle; main dram.
LEVELS = (LevelInfo("sram", 1 << 20, 32 * 10**9), LevelInfo("dram", 1 << 30, 4 * 10**9),
          LevelInfo("host", 1 << 32, 10**9))


def program(*instructions: Instruction, shared: bool = True) -> Program:
    return Program("d0", "g", 10**9, 10**9, 4, 4, 4, 0, LEVELS, 1, (), 1, (), instructions, fast_level=0,
                   shared_bandwidth=shared)


def vector(start: int, duration: int, elements: int, **bytes_) -> Instruction:
    return Instruction(Opcode.VECTOR, 0, start, duration, subop=1, a=elements, b=1, op=f"v{start}", **bytes_)


def test_roofline_shares_per_level():
    # 16 elements on 4 lanes: 4 compute cycles. 64 fast bytes (2 cycles at 32 B/cycle) and 8 main
    # bytes (2 cycles at 4 B/cycle): D = max(4, 4) = 4, so half of each level.
    assert instruction_shares(vector(0, 4, 16, fast_bytes=64, mem_bytes=8), program()) == (500, 500, 0)
    # Level bytes (format version 3): 3 host bytes take 3 cycles at 1 B/cycle; D = 4 + ... = max(4, 3).
    lb = vector(0, 4, 16, level_bytes=(0, 0, 3))
    assert instruction_shares(lb, program()) == (0, 0, 750)
    # Memory-bound: 40 main bytes, 10 cycles: all of dram.
    assert instruction_shares(vector(0, 10, 16, mem_bytes=40), program()) == (0, 1000, 0)
    # A compute-stream copy (data movement) is a roofline too; bookkeeping holds nothing.
    copy = Instruction(Opcode.DMA, 0, 0, 2, a=1, b=1, c=8, mem_bytes=8)
    assert instruction_shares(copy, program()) == (0, 1000, 0)
    assert instruction_shares(Instruction(Opcode.SIGNAL, 0, 0, 0, a=1), program()) is None


def test_dma_shares_at_the_slower_levels_rate():
    # host -> dram at host's 1 B/cycle: all of host, a quarter of dram; sram <-> dram at dram's rate.
    assert instruction_shares(Instruction(Opcode.DMA, DMA_STREAM, 0, 8, a=2, b=1, c=8), program()) == (0, 250, 1000)
    assert instruction_shares(Instruction(Opcode.DMA, DMA_STREAM, 0, 2, a=1, b=0, c=8), program()) == (125, 1000, 0)


def test_figures_and_the_first_over_subscription_per_level():
    # A prefetch dram -> sram [0, 2) (125 sram, 1000 dram) beside a VECTOR on sram alone
    # [0, 4) (64 fast bytes: 500 sram): fits; a second VECTOR reading dram at [1, 5) does not.
    dma = Instruction(Opcode.DMA, DMA_STREAM, 0, 2, a=1, b=0, c=8, op="prefetch:x")
    fine = program(dma, vector(0, 4, 16, fast_bytes=64))
    v: list[str] = []
    figures = check_shared_bandwidth(fine, v)
    assert v == [] and figures == {"sram": {"peak_shares": 625, "shared_cycles": 2, "full_cycles": 0},
                                   "dram": {"peak_shares": 1000, "shared_cycles": 0, "full_cycles": 2}}
    bad = program(dma, replace(vector(1, 4, 16, mem_bytes=8), stream=1))
    check_shared_bandwidth(bad, v)
    assert v == ["d0 dram: bandwidth over-subscribed: 1500 of 1000 shares at cycle 1 (prefetch:x, v1)"]


def test_header_flag_round_trip_and_unknown_bits_refused():
    p = program(Instruction(Opcode.HALT, 0, 0, 0))
    data = encode(p)
    assert HEADER.unpack_from(data)[4] & FLAG_SHARED_BANDWIDTH and decode(data).shared_bandwidth
    plain = encode(replace(p, shared_bandwidth=False))
    assert not HEADER.unpack_from(plain)[4] & FLAG_SHARED_BANDWIDTH and not decode(plain).shared_bandwidth
    import hashlib
    from planner.isa import binary

    forged = bytearray(plain)
    forged[14:16] = (8).to_bytes(2, "little")  # bit 3: unknown (bit 2 is FLAG_DMA_RATES)
    forged[binary._CHECKSUM_AT:HEADER.size] = hashlib.sha256(
        bytes(forged[:binary._CHECKSUM_AT]) + bytes(forged[HEADER.size:])).digest()
    with pytest.raises(BinaryFormatError, match="unknown header flags 0x8"):
        decode(bytes(forged))
