"""Replay of memory-planned programs: roofline with fast bytes, DMA engine, addresses, views,
buffers written more than once. Hand-made programs (tests/planner/simulator/programs.py)."""

from __future__ import annotations

import dataclasses

from planner.isa.binary import encode
from planner.isa.instructions import DMA_STREAM, Instruction, Opcode
from planner.simulator import DmaTiming, OpTiming, simulate, simulate_programs

from tests.planner.simulator.programs import (
    DRAM,
    SRAM,
    SY,
    W,
    XF,
    YF,
    alloc,
    dma,
    free,
    prefetch_compute_evict,
    program,
    relu,
    split_portions,
    sync,
    two_devices,
)


def replace(p, edit):
    return dataclasses.replace(p, instructions=tuple(edit(list(p.instructions))))


def test_prefetch_compute_evict_is_valid_and_timed_by_hand():
    # See programs.py: prefetch [0, 74), mm [74, 106) = max(26, 512/32 + 64/4) = 32, evict [106, 180).
    r = simulate({"d0": encode(prefetch_compute_evict())}, strict=True)
    assert r.makespan_cycles == 180
    assert r.ops == {"mm": OpTiming("d0", 0, 74, 106)}  # the DMAs are not ops
    assert r.dmas == (
        DmaTiming("d0", "prefetch:x@sram.0", "prefetch", "x", "x@sram.0", "dram", "sram", 256, 0, 74),
        DmaTiming("d0", "evict:y", "evict", "y@sram.0", "y", "sram", "dram", 256, 106, 180))
    # x, w and y in dram (576 B, y from 106); x@sram.0 and y@sram.0 overlap in time [74, 106).
    assert r.peak_bytes == {"d0": {"sram": 512, "dram": 576}}
    assert r.to_dict()["dmas"][1]["kind"] == "evict"


def test_roofline_uses_fast_bytes():
    # Claiming the compute-only time (26) or the all-in-main time (576 B / 4 = 144) is caught.
    v = simulate_programs({"d0": prefetch_compute_evict(mm_dur=26)}).violations
    assert "d0#7 MATMUL (mm): duration mismatch: encoded 26 cycles, the ISA formulas give 32" in v
    # All bytes declared main (and timed so): the roofline is self-consistent, but the buffers say
    # 512 B sit in sram.
    v = simulate_programs({"d0": prefetch_compute_evict(mm_fast=0, mm_mem=576, mm_dur=144)}).violations
    assert any("roofline bytes fast=0 main=576, but its operand buffers hold fast=512 main=64" in x for x in v)


def test_planted_address_overlap_and_capacity():
    # y@sram.0 at 128 overlaps x@sram.0 [0, 256) while both live at [74, 106).
    v = simulate_programs({"d0": prefetch_compute_evict(y_fast_addr=128)}).violations
    assert v == ("d0: buffers 2 (x@sram.0) at [0, 256) and 3 (y@sram.0) at [128, 384) of level sram overlap "
                 "at cycle 74",)
    # An unaddressed program (d = 0 everywhere in the old lowering) is not checked for overlaps.
    assert simulate_programs({"d0": dataclasses.replace(prefetch_compute_evict(y_fast_addr=128),
                                                        addressed=False)}).valid
    # At 800, y@sram.0 ends at 1056 > 1024.
    v = simulate_programs({"d0": prefetch_compute_evict(y_fast_addr=800)}).violations
    assert v == ("d0: buffer 3 (y@sram.0) at [800, 1056) ends beyond level sram's capacity of 1024 bytes",)


def test_views_must_lie_inside_a_live_parent():
    assert simulate_programs({"d0": split_portions()}, strict=True).valid
    # y#1 at 500: [500, 628) sticks out of y [320, 576).
    v = simulate_programs({"d0": split_portions(y1_addr=500)}).violations
    assert "d0: view 6 (y#1) at [500, 628) of level dram lies outside every live allocation at cycle 0" in v
    # A view outliving its parent: free y at 200, its views at 288.
    late = replace(split_portions(), lambda ins: [
        dataclasses.replace(i, start_cycle=200) if i.opcode == Opcode.FREE and i.a == SY else i for i in ins])
    late = dataclasses.replace(late, instructions=tuple(sorted(late.instructions, key=lambda i: (
        i.opcode == Opcode.HALT, i.start_cycle))))
    v = simulate_programs({"d0": late}).violations
    assert "d0: view 5 (y#0) lives until cycle 288, but its parent 2 (y) is freed at 200" in v
    # Views take no capacity: dram peaks at x + w + y + z = 832 B.
    assert simulate_programs({"d0": split_portions()}).peak_bytes["d0"]["dram"] == 832


def test_a_parent_is_ready_when_every_portion_is_written():
    # The relu reads y whole at 160; mm#1 writes y#1 only at [100, 180): y is ready at 180.
    v = simulate_programs({"d0": split_portions(mm1_start=100)}).violations
    assert "d0#10 VECTOR (r): dependency violation: reads buffer 2 (y) at 160, before it is ready at 180" in v
    # It also overlaps (in time and bytes) the relu's read of y: a race.
    assert any("MATMUL (mm#1) writes y#1 [448, 576) during [100, 180) while" in x
               and "(r) reads y [320, 576)" in x for x in v)


def test_dma_engine_timing_bytes_levels_and_exclusivity():
    p = prefetch_compute_evict()
    # Prefetch 256 B from dram (4 B/cycle) with a 10-cycle start-up: 74 cycles, not 64.
    short = replace(p, lambda ins: [dataclasses.replace(i, duration_cycles=64) if i.op == "prefetch:x@sram.0"
                                    and i.opcode == Opcode.DMA else i for i in ins])
    assert any("DMA (prefetch:x@sram.0): duration mismatch: encoded 64 cycles, the ISA formulas give 74" in x
               for x in simulate_programs({"d0": short}).violations)
    # Wrong byte count and wrong levels.
    bad = replace(p, lambda ins: [dataclasses.replace(i, c=128, duration_cycles=42) if i.op == "evict:y"
                                  and i.opcode == Opcode.DMA else i for i in ins])
    assert "d0#12 DMA (evict:y): moves 128 bytes; its buffers hold 256 and 256" in simulate_programs(
        {"d0": bad}).violations
    swapped = replace(p, lambda ins: [dataclasses.replace(i, a=SRAM, b=DRAM, duration_cycles=18)
                                      if i.op == "prefetch:x@sram.0" and i.opcode == Opcode.DMA else i
                                      for i in ins])
    assert any("copies level 0 -> 1, but its buffers are in levels 1 -> 0" in x
               for x in simulate_programs({"d0": swapped}).violations)
    # A second DMA on the engine at [50, 124) while the prefetch runs until 74.
    extra = program(list(p.instructions[:-1]) + [
        alloc(50, 5, DRAM, 64, 1000, stream=DMA_STREAM), dma(50, 26, "copy:w2", W, 5, DRAM, DRAM, 64),
        free(76, 5, DRAM, 64, 1000, stream=DMA_STREAM), p.instructions[-1]],
        p.buffers + ("w2",), p.kernels)
    # 64 B main -> main: no start-up, 64 / 4 = 16 cycles; encoded 26 -> also a mismatch.
    v = simulate_programs({"d0": extra}).violations
    assert "d0 DMA engine: d0#5 DMA (copy:w2) starts at 50, while d0#3 DMA (prefetch:x@sram.0) runs until 74" in v
    assert any("(copy:w2): duration mismatch: encoded 26 cycles, the ISA formulas give 16" in x for x in v)


def test_eviction_racing_a_read_and_written_twice():
    # The evict starts at 90, while the mm still writes y@sram.0 until 106: read during a write.
    v = simulate_programs({"d0": prefetch_compute_evict(evict_start=90)}).violations
    assert any("dependency violation: reads buffer 3 (y@sram.0) at 90, before it is ready at 106" in x for x in v)
    assert any("MATMUL (mm) writes y@sram.0 [256, 512) during [74, 106) while d0#" in x
               and "DMA (evict:y) reads y@sram.0 [256, 512) during [90, 164)" in x for x in v)
    # A buffer written twice (the mm, then a refresh DMA from x into y@sram.0 after the mm) is fine:
    # the evict reads the latest completed write.
    p = prefetch_compute_evict()
    twice = program([i for i in p.instructions if i.opcode != Opcode.HALT and i.op != "evict:y"
                     and not (i.opcode == Opcode.FREE and i.a == YF)] + [
        dma(106, 74, "refresh:y@sram.0", 0, YF, DRAM, SRAM, 256),
        dma(180, 74, "evict:y", YF, 4, SRAM, DRAM, 256),
        free(254, YF, SRAM, 256, 256), p.instructions[-1].__class__(Opcode.HALT, 0, 254, 0)],
        p.buffers, p.kernels)
    twice = replace(twice, lambda ins: [free(254, 4, DRAM, 256, 320) if i.opcode == Opcode.FREE and i.a == 4
                                        else i for i in ins])
    twice = dataclasses.replace(twice, instructions=tuple(sorted(twice.instructions, key=lambda i: (
        i.opcode == Opcode.HALT, i.start_cycle))))
    assert simulate_programs({"d0": twice}).violations == ()


def test_semaphores_on_the_dma_engine():
    # The DMA engine waits on semaphore 1 at 106; signalled late (at 107) by stream 0.
    p = replace(prefetch_compute_evict(), lambda ins: [
        dataclasses.replace(i, start_cycle=107) if i.opcode == Opcode.SIGNAL and i.a == 1 else i for i in ins])
    p = dataclasses.replace(p, instructions=tuple(sorted(p.instructions, key=lambda i: (
        i.opcode == Opcode.HALT, i.start_cycle))))
    v = simulate_programs({"d0": p}).violations
    assert any("WAIT: dependency violation: waits at 106 on semaphore 1, signalled only at 107" in x for x in v)


def test_kernel_must_match_its_instruction():
    p = prefetch_compute_evict()
    k = p.kernels[0]
    wrong = dataclasses.replace(k, inputs=(k.inputs[0], dataclasses.replace(k.inputs[1], buffers=(XF,))))
    v = simulate_programs({"d0": dataclasses.replace(p, kernels=(wrong,))}).violations
    assert any("reads [1, 2] and writes [3], but its kernel's operands are in [2] and [3]" in x for x in v)
    ghost = dataclasses.replace(k, op="nope")
    v = simulate_programs({"d0": dataclasses.replace(p, kernels=(k, ghost))}).violations
    assert v == ("d0: kernel 'nope' names no compute instruction of the program",)


def test_transfers_still_checked_with_the_new_rules():
    r = simulate_programs(two_devices(), strict=True)
    assert r.transfers[0].start_cycle == 32 and r.transfers[0].end_cycle == 101
    assert r.ops["r2"] == OpTiming("d1", 0, 101, 133)


def test_unwritten_read_is_reported():
    p = program([
        alloc(0, 0, DRAM, 64, 0), alloc(0, 1, DRAM, 64, 64),
        relu(0, 32, "r", 16, (0,), (1,), mem=128),
        free(32, 0, DRAM, 64, 0), free(32, 1, DRAM, 64, 64), Instruction(Opcode.HALT, 0, 32, 0)],
        ("x", "y"), fast_level=-1)
    assert simulate_programs({"d0": p}).violations == ("d0#2 VECTOR (r): reads buffer 0 (x), which nothing writes",)
