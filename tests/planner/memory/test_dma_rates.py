"""Per-path DMA rates (issue 14): a DMA path's own rate from the spec, in the planner and in the binary."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from planner.errors import BinaryFormatError, SpecError
from planner.isa.binary import DMA_RATE, FLAG_DMA_RATES, HEADER, decode, decode_tables, encode, listing
from planner.isa.instructions import DMA_STREAM, Instruction, LevelInfo, Opcode, Program, device_cycles
from planner.pipeline import run
from planner.simulator.bandwidth import instruction_shares
from planner.simulator.replay import simulate, simulate_programs
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from tests.cli_process import plan_in_process as run_plan

ROOT = Path(__file__).resolve().parents[3]
THREE = ROOT / "tests" / "data" / "specs" / "memory-3level.yaml"
RATE = "      dma_rates: [{between: [dram, host], bandwidth: 2 GB/s}]\n"


def _with_rate(tmp_path, line: str = RATE) -> Path:
    spec = tmp_path / "s.yaml"
    text = THREE.read_text()
    anchor = "      dma_paths: [[sram, dram], [dram, host]]\n"
    assert anchor in text
    spec.write_text(text.replace(anchor, anchor + line))
    return spec


def _program(rates=()) -> Program:
    levels = (LevelInfo("sram", 1 << 16, 64 * 10**9), LevelInfo("dram", 1 << 20, 16 * 10**9),
              LevelInfo("host", 1 << 24, 10**9))
    dma = Instruction(Opcode.DMA, DMA_STREAM, 0, 2098, op="prefetch:w@dram.0", a=2, b=1, c=4096)
    return Program("npu0", "edge-npu", 10**9, 10**9, 32, 32, 64, 50, levels, 1, (), 1, (), (
        dma, Instruction(Opcode.HALT, 0, 2098, 0)), dma_rates=rates)


def test_the_spec_gives_the_profile_a_path_rate(tmp_path):
    profile = load_spec(_with_rate(tmp_path)).hardware.devices[0].profile
    assert profile.dma_rates == (("dram", "host", 2 * 10**9),)
    assert profile.dma_bandwidth("host", "dram") == 2 * 10**9
    assert profile.dma_bandwidth("sram", "dram") == 16 * 10**9  # no rate: the slower level's


@pytest.mark.parametrize("line, fragment", [
    ("      dma_rates: [{between: [sram, host], bandwidth: 2 GB/s}]\n",
     "dma_rates[0].between: no DMA path joins sram and host"),
    ("      dma_rates: [{between: [dram, tape], bandwidth: 2 GB/s}]\n",
     "dma_rates[0].between[1]: profile edge-npu has no memory level 'tape'"),
    ("      dma_rates: [{between: [dram, host], bandwidth: 0 GB/s}]\n", "bandwidth must be > 0"),
    ("      dma_rates: [{between: [dram, host], bandwidth: 2 GB/s}, {between: [host, dram], bandwidth: 3 GB/s}]\n",
     "dma_rates[1]: DMA path host-dram has its rate twice"),
])
def test_bad_dma_rates_are_spec_errors(tmp_path, line, fragment):
    with pytest.raises(SpecError) as info:
        load_spec(_with_rate(tmp_path, line))
    assert fragment in str(info.value)


def test_shared_bandwidth_takes_each_hop_at_its_path_rate(tmp_path):
    # memory-3level with dram-host at 2 GB/s, w homed on host, and bandwidth shared over the
    # three levels: w staged host -> dram (50 + 4,096 / 2 = 2,098) -> sram (50 + 4,096 / 16 =
    # 306), nothing else reading host or dram meanwhile, so 3,172 as without sharing. The host
    # hop holds all of host and ceil(1000 * 2 / 16) = 125 of dram (at the slower level's rate,
    # 1 GB/s, it would hold 63); the dram -> sram hop at 16 GB/s a quarter of sram (64 GB/s).
    spec = _with_rate(tmp_path)
    spec.write_text(spec.read_text().replace("  home: {m/w: host}\n", "  home: {m/w: host}\n  bandwidth: shared\n"))
    loaded = load_spec(spec)
    assert loaded.memory.shared_bandwidth and loaded.memory.home
    outcome = run(loaded, workers=1)
    assert outcome.plan.makespan_cycles == outcome.simulation.makespan_cycles == 3172
    (program,) = outcome.programs.values()
    assert program.shared_bandwidth and program.dma_rates == ((1, 2, 2 * 10**9),)
    assert [(i.op, instruction_shares(i, program)) for i in program.instructions if i.opcode.name == "DMA"] == [
        ("prefetch:m/w@dram.0", (0, 125, 1000)), ("prefetch:m/w@sram.0", (250, 1000, 0))]
    assert outcome.simulation.valid and compare_numeric(outcome.binaries, loaded.graph, seed=3).ok


def test_the_binary_carries_the_rate_and_the_isa_times_the_dma_by_it():
    program = _program(((1, 2, 2 * 10**9),))
    # 50 + 4096 B / 2 B per cycle; without the path's rate: 50 + 4096 / 1 (host, the slower level).
    assert device_cycles(program.instructions[0], program) == 2098
    assert device_cycles(program.instructions[0], _program()) == 4146
    data = encode(program)
    assert decode(data) == program and decode_tables(data).program.dma_rates == ((1, 2, 2 * 10**9),)
    assert data[8:10] == (2).to_bytes(2, "little")  # no version change
    assert "; dma path dram-host: 2000000000 B/s" in listing(program)
    plain = encode(_program())
    assert len(data) == len(plain) + DMA_RATE.size and not HEADER.unpack_from(plain)[4] & FLAG_DMA_RATES
    # The replay times the DMA from the binary's rate; the same records without it do not match.
    # (This bare DMA moves no buffers, which the replay also reports, either way.)
    assert not any("duration" in v for v in simulate_programs({"npu0": program}).violations)
    assert "duration mismatch: encoded 2098 cycles, the ISA formulas give 4146" in " ".join(
        simulate_programs({"npu0": _program()}).violations)


def _resealed(data: bytes) -> bytes:
    at = HEADER.size - 32
    return data[:at] + hashlib.sha256(data[:at] + data[HEADER.size:]).digest() + data[HEADER.size:]


def test_a_bad_rate_row_is_refused():
    data = bytearray(encode(_program(((1, 2, 2 * 10**9),))))
    DMA_RATE.pack_into(data, len(data) - DMA_RATE.size, 1, 3, 0, 2 * 10**9)  # level 3 of 3
    with pytest.raises(BinaryFormatError, match="DMA-rate table"):
        decode(_resealed(bytes(data)))
    with pytest.raises(BinaryFormatError, match="DMA-rate table"):
        decode_tables(_resealed(bytes(data)))


def test_plan_solve_uses_the_path_rate_hand_checked(tmp_path):
    # memory-3level's plan (5,220) with w staged host -> dram at 2 B/cycle: 50 + 4096 / 2 = 2,098
    # instead of 4,146, then dram -> sram (306) and the two 384-cycle matmuls: 3,172.
    out = tmp_path / "out"
    done = run_plan("solve", str(_with_rate(tmp_path)), "-o", str(out), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads((out / "plan.json").read_text())
    dev = json.loads((out / "memory.json").read_text())["devices"]["npu0"]
    assert plan["makespan_cycles"] == 3172
    assert [(t["src_buffer"], t["dst_buffer"], t["start_cycle"], t["end_cycle"]) for t in dev["transfers"]] == [
        ("m/w", "m/w@dram.0", 0, 2098), ("m/w@dram.0", "m/w@sram.0", 2098, 2404)]
    data = (out / "bin" / "npu0.bin").read_bytes()
    assert decode(data).dma_rates == ((1, 2, 2 * 10**9),)
    check = run_plan("simulate", str(out), "--numeric", cwd=tmp_path)
    assert check.returncode == 0 and "equal to the reference" in check.stdout, check.stdout + check.stderr
    # The simulator takes the rate from the binary: the same binary without it is refused.
    stripped = encode(dataclasses.replace(decode(data), dma_rates=()))
    result = simulate({"npu0": stripped})
    assert not result.valid and any("duration" in v for v in result.violations), result.violations[:3]
