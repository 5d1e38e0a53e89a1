"""Shared bandwidth through plan solve (issue 14, item 4): spec switch, retiming, binary flag,
the simulator's check (a plan timed without contention fails it), numbers equal."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from planner.cli import app
from planner.isa.binary import FLAG_SHARED_BANDWIDTH, HEADER, decode, decode_tables, encode
from planner.isa.instructions import DMA_STREAM
from planner.lower_and_replay import replay
from planner.memory.retime import Activity, list_schedule
from planner.memory.shared_bandwidth import BandwidthGate
from planner.pipeline import run
from planner.simulator import simulate
from planner.graph.serialize import read_graph_json
from planner.replan.stats import what_if_stats
from planner.simulator.bandwidth import SHARE_UNITS as SIMULATOR_UNITS
from planner.simulator.bandwidth import instruction_shares, record_holdings
from planner.simulator.slowdown import parse_slowdown, what_if
from planner.verify.directory import verify_plan_dir
from planner.simulator.replay import SimulationError
from planner.simulator.screen import screened_replay
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from solvers.core import SolveOptions, Status
from solvers.memory.levels import CpSatLevelSolver
from solvers.memory.levels.bandwidth import SHARE_UNITS as SOLVER_UNITS
from tests.planner.memory.test_memory_property import memory_specs

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "tests" / "data" / "specs" / "memory-shared.yaml"


@pytest.fixture(scope="module")
def planned():
    """The test spec planned with shared bandwidth and, switched off, with separate bandwidth."""
    spec = load_spec(SPEC)
    shared = run(spec, time_limit_s=3, workers=1)
    separate = run(replace(spec, memory=replace(spec.memory, shared_bandwidth=False)), time_limit_s=3, workers=1)
    return spec, shared, separate


def test_the_switch_resolves_and_defaults_to_separate():
    assert load_spec(SPEC).memory.shared_bandwidth is True
    assert load_spec(ROOT / "specs" / "memory-mlp.yaml").memory.shared_bandwidth is False
    assert SIMULATOR_UNITS == SOLVER_UNITS == 1000


FOUR = ROOT / "tests" / "data" / "specs" / "memory-4level-shared.yaml"


@pytest.fixture(scope="module")
def four_levels():
    """The four-level test spec (weights homed in host memory) planned shared and separate."""
    spec = load_spec(FOUR)
    shared = run(spec, time_limit_s=5, workers=1)
    separate = run(replace(spec, memory=replace(spec.memory, shared_bandwidth=False)), time_limit_s=5, workers=1)
    return spec, shared, separate


def test_shared_bandwidth_with_homes_plans_every_level_by_hand(four_levels):
    # 1 GHz; x, w1, w2, h, y are 4 KiB each; host 1, dram 16, sram 64 B/cycle, DMA latency 50.
    # Separate: mm1 reads x (dram, 256), w1 (host, 4,096) and writes h (sram, 64): 4,416, while
    # w2 goes host -> dram (4,146) -> sram (306) by 4,452; mm2 reads h, w2 (sram, 64 + 64) and
    # writes y (dram, 256): 4,452 + 384 = 4,836. Shared: the host hop holds all of host, mm1
    # holds ceil(1000 * 4096 / 4416) = 928 of it, so the fetch would wait for mm1; reading w2 in
    # place is as good: 2 x 4,416 = 8,832 (and every shared plan moves both weights over host
    # at 1 B/cycle: >= 8,192).
    spec, shared, separate = four_levels
    assert (shared.plan.makespan_cycles, separate.plan.makespan_cycles) == (8832, 4836)
    stats = shared.memory.memory.devices["npu0"].stats
    assert stats["levels"] == ["sram", "cmem", "dram", "host"] and stats["level_status"] == "OPTIMAL"
    assert stats["level_makespan_device_cycles"] == 8832
    sim = shared.simulation
    assert sim.valid and sim.makespan_cycles == 8832
    (program,) = shared.programs.values()
    assert program.shared_bandwidth and decode(shared.binaries["npu0"]).shared_bandwidth
    assert sim.bandwidth["npu0"]["host"] == {"peak_shares": 928, "shared_cycles": 0, "full_cycles": 0}
    report = compare_numeric(shared.binaries, spec.graph, seed=5)
    assert report.ok, report.failures()


def test_the_four_level_separate_plan_fails_the_shared_replay(four_levels):
    # Planted: the separate plan claimed shared: its host fetch runs under mm1's host read.
    _, _, separate = four_levels
    program = decode(separate.binaries["npu0"])
    result = simulate({"npu0": encode(replace(program, shared_bandwidth=True))})
    assert not result.valid
    assert any("npu0 host: bandwidth over-subscribed" in v for v in result.violations)


STREAMS_4L = ROOT / "tests" / "data" / "specs" / "memory-4level-streams.yaml"


def _shared_copy(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / f"{path.stem}-shared.yaml"
    out.write_text(path.read_text().replace("  split: false", "  split: false\n  bandwidth: shared"))
    return out


def test_everything_in_main_memory_shares_main_memory_too(tmp_path):
    # Two branches of two relus over 16 KiB fp32 tensors, one branch per stream, DRAM 16 B/cycle
    # (1 GHz). In main memory a relu reads and writes DRAM: 32,768 B / 16 = 2,048 cycles, all of
    # DRAM's shares, so the four take turns: 8,192 (before: 4,096, the two streams each reading
    # DRAM at its full rate). The memory plan keeps the intermediates in l2 (32 B/cycle): a relu
    # moves 16 KiB over DRAM (1,024) and 16 KiB over l2 (512) in 1,536 cycles and holds
    # ceil(1000 * 1024 / 1536) = 667 of DRAM, so two never overlap either: 4 x 1,536 = 6,144,
    # which now beats main memory (before, main memory's 4,096 was kept).
    spec = _shared_copy(STREAMS_4L, tmp_path)
    out = tmp_path / "plan"
    r = CliRunner().invoke(app, ["solve", str(spec), "-o", str(out), "--quiet", "--workers", "1"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["simulate", str(out), "--numeric"])
    assert r.exit_code == 0 and "verified" in r.output, r.output
    loaded = load_spec(spec)
    outcome = run(loaded, workers=1)
    assert outcome.memory_choice == "memory plan"
    assert outcome.memory_baselines["memory plan"] == 4 * 1_536 == 6_144
    assert outcome.memory_baselines["all in main memory"] == 4 * 2_048 == 8_192
    assert outcome.plan.makespan_cycles == outcome.simulation.makespan_cycles == 6_144
    assert compare_numeric(outcome.binaries, loaded.graph, seed=7).ok
    # separately the two streams overlap in main memory: 4,096
    separate = run(load_spec(STREAMS_4L), workers=1)
    assert separate.memory_baselines["all in main memory"] == 4_096


def test_main_memory_timed_without_its_shares_fails_the_shared_replay(tmp_path):
    # Planted: everything in main memory as the schedule times it (the two streams' relus read
    # DRAM together), under the flag: the replay refuses it.
    text = STREAMS_4L.read_text().replace("  plan: true", "  plan: false")
    (tmp_path / "main.yaml").write_text(text)
    spine = run(load_spec(tmp_path / "main.yaml"), workers=1)
    assert spine.plan.makespan_cycles == 4_096
    program = decode(spine.binaries["npu0"])
    assert not program.shared_bandwidth and program.fast_level < 0
    result = simulate({"npu0": encode(replace(program, shared_bandwidth=True))})
    assert not result.valid
    assert any("npu0 dram: bandwidth over-subscribed: 2000 of 1000" in v for v in result.violations)


def test_shared_bandwidth_takes_a_dma_at_its_own_path_rate(tmp_path):
    # The test spec with sram <-> lpddr at 34 GB/s of its own (dma_rates; before: a spec error):
    # a prefetch holds ceil(1000 * 34 / 128) = 266 of SRAM (at the slower level's rate, 17 GB/s:
    # 133) and all of LPDDR (34 > 17). Planned, replayed, numbers equal.
    text = SPEC.read_text().replace(
        "    - {name: npu, profile: edge-npu}",
        "    - name: npu\n      profile: edge-npu\n      dma_rates: [{between: [sram, lpddr], bandwidth: 34 GB/s}]", 1)
    (tmp_path / "rates.yaml").write_text(text)
    spec = load_spec(tmp_path / "rates.yaml")
    assert spec.memory.shared_bandwidth and spec.hardware.devices[0].profile.dma_rates
    outcome = run(spec, time_limit_s=3, workers=1)
    assert outcome.memory_choice == "memory plan"
    sim = outcome.simulation
    assert sim.valid and sim.makespan_cycles == outcome.plan.makespan_cycles
    (program,) = outcome.programs.values()
    assert program.shared_bandwidth and program.dma_rates
    dmas = [i for i in program.instructions if i.opcode.name == "DMA" and i.stream == DMA_STREAM]
    assert dmas and {instruction_shares(i, program) for i in dmas} == {(266, SIMULATOR_UNITS)}
    assert sim.bandwidth["npu0"]["lpddr"]["peak_shares"] <= SOLVER_UNITS
    report = compare_numeric(outcome.binaries, spec.graph, seed=5)
    assert report.ok, report.failures()


# The test spec's shared optimum, by hand (1 GHz, SRAM 128 and LPDDR 17 B/cycle; activations
# 131,072 B, weights 1,048,576 B): every weight and x read in place, the activations kept in SRAM,
# y written to LPDDR, no DMA. fc0 = 1,024 (y to SRAM) + ceil((131,072 + 1,048,576) / 17) = 70,416
# (compute 40,448); act0 = act1 = 1,024 + 1,024; fc1 = 1,024 + ceil(1,048,576 / 17) + 1,024 = 63,729;
# fc2 = 1,024 + ceil((1,048,576 + 131,072) / 17) = 70,416: 208,657. A prefetch holds all of LPDDR,
# and a weight is read once, so moving it only adds its SRAM read.
SHARED_OPTIMUM = 70_416 + 2_048 + 63_729 + 2_048 + 70_416


def test_shared_plan_is_replayed_verified_and_numerically_equal(planned):
    # Before the in-place start (greedy.fewer_dmas) the level solver kept the greedy's prefetches
    # and ended FEASIBLE at 239,496 (bound 200,464) within the spec's 3 s.
    spec, shared, _ = planned
    assert shared.memory_choice == "memory plan"
    assert shared.plan.makespan_cycles == SHARED_OPTIMUM == 208_657
    stats = shared.memory.memory.devices["npu0"].stats
    assert stats["level_status"] == "OPTIMAL"
    sim = shared.simulation
    assert sim.valid and sim.makespan_cycles == shared.plan.makespan_cycles
    (program,) = shared.programs.values()
    assert program.shared_bandwidth and decode(shared.binaries["npu0"]).shared_bandwidth
    assert not any(i.opcode.name == "DMA" and i.stream == DMA_STREAM for i in program.instructions)
    report = compare_numeric(shared.binaries, spec.graph, seed=5)
    assert report.ok, report.failures()
    # The spec's reference clock is the device's, so the retimed plan's makespan is the level
    # solver's own, to the cycle: the retiming's gate and the solver's replay agree.
    assert stats["level_makespan_device_cycles"] == shared.plan.makespan_cycles


def test_sharing_is_slower_and_the_replay_shows_where_levels_were_shared(planned):
    _, shared, separate = planned
    assert shared.plan.makespan_cycles > separate.plan.makespan_cycles
    assert separate.simulation.bandwidth == {}
    bw = shared.simulation.bandwidth["npu0"]
    # No DMA and one op at a time: nothing shares a level. fc0 and fc2 hold
    # ceil(1000 * 69,392 / 70,416) = 986 of LPDDR, never all of it.
    assert bw["lpddr"]["peak_shares"] == 986 and bw["lpddr"]["shared_cycles"] == bw["lpddr"]["full_cycles"] == 0
    assert bw["sram"]["shared_cycles"] == 0 and bw["sram"]["peak_shares"] <= SOLVER_UNITS
    assert shared.simulation.to_dict()["bandwidth"] == shared.simulation.bandwidth
    assert "bandwidth" not in separate.simulation.to_dict()


def test_a_plan_timed_without_contention_fails_the_replay(planned):
    # Planted: the separate plan's binaries, claimed under shared bandwidth. Its prefetches run
    # while layers read DDR3, so the replay must refuse them.
    _, _, separate = planned
    program = decode(separate.binaries["npu0"])
    assert not program.shared_bandwidth
    planted = {"npu0": encode(replace(program, shared_bandwidth=True))}
    result = simulate(planted)
    assert not result.valid
    assert any("npu0 lpddr: bandwidth over-subscribed" in v and "prefetch:" in v for v in result.violations)
    with pytest.raises(SimulationError):
        simulate(planted, strict=True)
    assert simulate(separate.binaries).valid


def test_the_screen_hands_shared_binaries_to_the_full_replay(planned):
    _, shared, separate = planned
    assert screened_replay({n: decode_tables(b) for n, b in shared.binaries.items()}) is None
    assert screened_replay({n: decode_tables(b) for n, b in separate.binaries.items()}) is not None


def test_switch_off_writes_no_flag():
    spec = load_spec(ROOT / "specs" / "memory-mlp.yaml")
    outcome = run(spec, time_limit_s=2, workers=1)
    for data in outcome.binaries.values():
        flags = HEADER.unpack_from(data)[4]
        assert not flags & FLAG_SHARED_BANDWIDTH
        assert encode(decode(data)) == data


def test_retiming_gate_holds_the_next_activity_until_its_shares_fit():
    # op a (800 main shares, 5 cycles) and DMA 0 (1000 main, 3 cycles) cannot overlap; op b
    # (holds nothing) may. Order a, dma, b: the DMA waits for a; b follows a on the stream.
    gate = BandwidthGate({"op:a": (("d", 1, 800),), "dma:d:0": (("d", 1, 1000),), "op:b": ()},
                         {"d": ("op:a", "dma:d:0", "op:b")})
    acts = [Activity("op:a", "compute", 5), Activity("op:b", "compute", 2), Activity("dma:d:0", "dma", 3)]
    assert list_schedule(acts, {"compute": ("op:a", "op:b")}, gate) == {"op:a": 0, "dma:d:0": 5, "op:b": 5}
    assert list_schedule(acts, {"compute": ("op:a", "op:b")}) == {"op:a": 0, "dma:d:0": 0, "op:b": 5}


def test_without_order_the_gate_only_waits_for_shares():
    # In a plan with transfers the level solutions' order is not enforced: op b may start before
    # the DMA listed ahead of it, and the DMA still waits until op a's shares are released.
    gate = BandwidthGate({"op:a": (("d", 1, 800),), "dma:d:0": (("d", 1, 1000),), "op:b": (("d", 0, 100),)},
                         {"d": ("op:a", "dma:d:0", "op:b")}, in_order=False)
    acts = [Activity("op:a", "compute", 5), Activity("op:b", "compute", 2, deps=("x",)),
            Activity("x", "link", 1), Activity("dma:d:0", "dma", 3, deps=("op:b",))]
    assert list_schedule(acts, {"compute": ("op:a", "op:b")}, gate) == {"op:a": 0, "x": 0, "op:b": 5, "dma:d:0": 7}


def test_a_multi_device_plan_with_transfers_shares_bandwidth_on_every_planned_device(tmp_path):
    # pinned: a TPU v4 and two edge NPUs exchanging activations; each device's level solution is
    # timed alone, so the retiming keeps only the shares (no order) and cannot deadlock.
    text = (ROOT / "specs" / "pinned.yaml").read_text() + "memory:\n  plan: true\n  bandwidth: shared\n"
    (tmp_path / "p.yaml").write_text(text)
    spec = load_spec(tmp_path / "p.yaml")
    outcome = run(spec, time_limit_s=2, workers=1)
    assert outcome.plan.transfers and outcome.simulation.valid
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    planned = [p for p in outcome.programs.values() if p.fast_level >= 0]
    # A device left in main memory shares it too (its ops and the transfers at its ends), so
    # main memory is no longer a free ride for the small NPUs: every device keeps its memory plan,
    # and the whole plan beats everything in main memory timed under the same rule. (Before,
    # only big0's plan was kept, at 32,931, beside small NPUs timed without contention.)
    assert outcome.memory_choice == "memory plan" and [p.device for p in planned] == ["big0", "small0", "small1"]
    assert all(p.shared_bandwidth for p in outcome.programs.values())
    assert set(outcome.simulation.bandwidth) == set(outcome.programs)
    assert outcome.memory_baselines["memory plan"] < outcome.memory_baselines["all in main memory"]
    big0 = planned[0]
    ends = [instruction_shares(i, big0) for i in big0.instructions if i.opcode.name in ("SEND", "RECV")]
    assert ends and all(sh[big0.main_level] > 0 for sh in ends)
    assert compare_numeric(outcome.binaries, spec.graph, seed=6).ok


def test_a_link_transfer_holds_main_memory_shares_in_the_replay():
    # A SEND at 1 GB/s from a DRAM of 1 GB/s holds all of it: beside a VECTOR reading DRAM
    # (334 shares) the level is over-subscribed; the same program without the flag is not checked.
    from planner.isa.instructions import TRANSFER_STREAM, Instruction, LevelInfo, LinkInfo, Opcode, Program
    from planner.simulator.bandwidth import check_shared_bandwidth

    send = Instruction(Opcode.SEND, TRANSFER_STREAM, 0, 8, a=0, b=8, c=0, peer="d1", op="x")
    vec = Instruction(Opcode.VECTOR, 0, 2, 3, subop=1, a=3, b=1, mem_bytes=1, op="v")
    p = Program("d0", "g", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("sram", 1 << 20, 4 * 10**9),
                LevelInfo("dram", 1 << 30, 10**9)), 1, (LinkInfo(0, "l", 10**9, 0),), 1, (), (send, vec),
                fast_level=0, shared_bandwidth=True)
    assert instruction_shares(send, p) == (0, SIMULATOR_UNITS)
    v: list[str] = []
    check_shared_bandwidth(p, v)
    assert v == ["d0 dram: bandwidth over-subscribed: 1334 of 1000 shares at cycle 2 (x, v)"]


def test_the_gate_holds_a_transfer_until_both_ends_have_their_shares():
    # xfer:0 holds 500 of d's and 700 of e's main memory; op:a (d, 600) runs [0, 5): the transfer,
    # ready at once, starts when a ends; op:b (e, 300) is not ordered behind it and overlaps.
    gate = BandwidthGate({"op:a": (("d", 1, 600),), "op:b": (("e", 1, 300),),
                          "xfer:0": (("d", 1, 500), ("e", 1, 700))},
                         {"d": ("op:a",), "e": ("op:b",)}, in_order=False)
    acts = [Activity("op:a", "cd", 5), Activity("op:b", "ce", 9), Activity("xfer:0", "link", 3)]
    assert list_schedule(acts, {"cd": ("op:a",), "ce": ("op:b",)}, gate) == {"op:a": 0, "op:b": 0, "xfer:0": 5}


def test_plan_solve_and_simulate_from_the_cli(tmp_path):
    runner = CliRunner()
    out = tmp_path / "plan"
    r = runner.invoke(app, ["solve", str(SPEC), "-o", str(out), "--quiet", "--time-limit", "3"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["simulate", str(out)])
    assert r.exit_code == 0 and "verified" in r.output, r.output
    report = (out / "report.md").read_text()
    assert "Ops and DMAs shared each level's bandwidth" in report and "| npu0 | lpddr | 986 | 0 |" in report


@settings(max_examples=int(os.environ.get("SHARED_PROPERTY_EXAMPLES", 6)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(memory_specs())
def test_random_memory_specs_with_shared_bandwidth_replay_and_compute_the_same_numbers(spec):
    # The memory property test's random graphs (splits, zero-cycle reshapes, a second device
    # with transfers, explicit-cycle models) with shared bandwidth: every plan replays exactly
    # (run raises otherwise), its claimed bound holds, and the numbers are the reference's.
    spec["memory"]["bandwidth"] = "shared"
    spec["solver"]["time_limit"] = "1 s"
    outcome = run(spec)
    assert outcome.simulation.valid and outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    assert outcome.plan.bound <= outcome.plan.makespan_cycles
    # every device shares its main memory, with a memory plan or without (docs/memory.md)
    assert all(p.shared_bandwidth for p in outcome.programs.values())
    report = compare_numeric(outcome.binaries, load_spec(spec).graph, seed=2)
    assert report.ok, report.failures()


# ------------------------------------------------------------------ several compute streams

STREAMS_SPEC = ROOT / "tests" / "data" / "specs" / "memory-streams-shared.yaml"


def _series_optimum(levels) -> int:
    """The level problem's optimum with its ops in series (one stream), proven."""
    series = CpSatLevelSolver().solve(replace(levels.expanded, op_streams=()), SolveOptions(time_limit_s=30,
                                                                                            num_workers=1))
    assert series.status is Status.OPTIMAL
    return series.objective


def test_two_streams_share_bandwidth_and_overlap_where_the_series_plan_cannot():
    # The relus (SRAM only) run on one stream beside the matmul reading LPDDR on the other;
    # in series the best is 245,522. The device clock is the reference clock, so cycles agree.
    # (233,557 from the several-stream window search and DMA-balanced start until the search's
    # result had its DMAs that only cost time dropped, greedy.fewer_dmas: two of its four DMAs.)
    spec = load_spec(STREAMS_SPEC)
    outcome = run(spec, workers=1)
    assert outcome.memory_choice == "memory plan"
    levels = outcome.memory.device_levels["npu0"]["memory plan"]
    assert levels.expanded.multi_stream and levels.expanded.shared_bandwidth
    assert outcome.plan.makespan_cycles == levels.solution.makespan_cycles == 231_407
    assert _series_optimum(levels) == 245_522
    ops = {o.name: o for o in outcome.plan.ops}
    # every relu (SRAM only) runs beside a matmul reading LPDDR on the other stream
    relus = [o for o in ops.values() if o.name.startswith("m/r")]
    overlapping = {m: [r.name for r in relus if r.stream != ops[m].stream
                       and r.start_cycle < ops[m].end_cycle and ops[m].start_cycle < r.end_cycle]
                   for m in ("m/a0", "m/a1")}
    assert len(relus) == 6 and set().union(*overlapping.values()) == {r.name for r in relus}, overlapping
    sim = outcome.simulation
    assert sim.valid and sim.makespan_cycles == outcome.plan.makespan_cycles
    (program,) = outcome.programs.values()
    assert program.shared_bandwidth and {i.stream for i in program.instructions if i.stream != DMA_STREAM} == {0, 1}
    bw = sim.bandwidth["npu0"]
    assert bw["lpddr"]["peak_shares"] == bw["sram"]["peak_shares"] == SOLVER_UNITS
    report = compare_numeric(outcome.binaries, spec.graph, seed=3)
    assert report.ok, report.failures()


def test_memory_streams_with_shared_bandwidth_plans_on_both_streams_no_slower_than_in_series(tmp_path):
    # specs/memory-streams.yaml under sharing: its memory plan (not kept: everything in main
    # memory does not share bandwidth, docs/memory.md) is lowered, replayed and numerically
    # equal, and no slower than the same ops in series.
    text = (ROOT / "specs" / "memory-streams.yaml").read_text()
    (tmp_path / "s.yaml").write_text(text.replace("  split: false", "  split: false\n  bandwidth: shared"))
    spec = load_spec(tmp_path / "s.yaml")
    outcome = run(spec, workers=1)
    levels = outcome.memory.device_levels["npu0"]["memory plan"]
    assert levels.expanded.multi_stream and levels.expanded.shared_bandwidth
    lowered = replay(outcome.memory.plan, spec, outcome.memory.memory)
    assert lowered.simulation.valid and lowered.simulation.makespan_cycles == outcome.memory_baselines["memory plan"]
    assert all(p.shared_bandwidth for p in lowered.programs.values())
    assert outcome.memory_baselines["memory plan"] <= _series_optimum(levels)
    report = compare_numeric(lowered.binaries, spec.graph, seed=4)
    assert report.ok, report.failures()


@settings(max_examples=int(os.environ.get("SHARED_PROPERTY_EXAMPLES", 6)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(memory_specs())
def test_random_two_stream_specs_with_shared_bandwidth_replay_and_compute_the_same_numbers(spec):
    spec["hardware"]["devices"][0]["streams"] = 2
    test_random_memory_specs_with_shared_bandwidth_replay_and_compute_the_same_numbers.hypothesis.inner_test(spec)


# ------------------------------------------------------------------ what-if replays (--slow/--noise)

def _over_subscribed(what, programs, transfer_ids=()) -> list[str]:
    """Each (device, level) whose shares the what-if timing over-subscribes at some cycle, by an
    independent sweep: every record's shares from the simulator's own rule, at its measured span
    (``transfer_ids``: the replay's transfer ids, in the order of ``what.transfers``)."""
    spans = []
    by_transfer = dict(zip(sorted(transfer_ids), what.transfers))
    for p in programs.values():
        if not p.shared_bandwidth:
            continue
        timed = dict(what.ops)
        timed.update({d.op: d for d in what.dmas if d.device == p.device})
        for ins in p.instructions:
            shares = instruction_shares(ins, p)
            m = by_transfer.get(ins.c) if ins.opcode.name in ("SEND", "RECV") else timed.get(ins.op)
            if shares and m is not None and m.measured_cycles:
                spans += [(p.device, lv, m.start_cycle, m.start_cycle + m.measured_cycles, u)
                          for lv, u in enumerate(shares) if u]
    bad = []
    for device, lv in sorted({(d, lv) for d, lv, *_ in spans}):
        mine = [(s, e, u) for d, v, s, e, u in spans if (d, v) == (device, lv)]
        if any(sum(u for s2, e2, u in mine if s2 <= s < e2) > SIMULATOR_UNITS for s, _e, _u in mine):
            bad.append(f"{device}:{lv}")
    return bad


@pytest.fixture(scope="module")
def streams_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ss") / "plan"
    r = CliRunner().invoke(app, ["solve", str(STREAMS_SPEC), "-o", str(out), "--quiet", "--workers", "1"])
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize("slow, noise, seed", [("npu0=1", 0.0, 0), ("npu0=2", 0.0, 0), (None, 10.0, 5)])
def test_what_if_replays_keep_the_shares_of_a_shared_plan(streams_dir, slow, noise, seed):
    verdict = verify_plan_dir(streams_dir)
    graph = read_graph_json(streams_dir / "graph.json")
    edges = [(u, v) for u, v, _ in graph.op_edges()]
    tensors = {name: (*op.inputs, *op.outputs) for name, op in graph.ops.items()}
    slowdown = parse_slowdown(slow, ["npu0"], [], noise_pct=noise, seed=seed)
    held = record_holdings(verdict.programs, verdict.simulation)
    assert len(held) == len(verdict.simulation.ops) + len(verdict.simulation.dmas)  # every record holds shares
    shared = what_if(verdict.simulation, edges, slowdown, tensors, held)
    assert _over_subscribed(shared, verdict.programs) == []
    alone = what_if(verdict.simulation, edges, slowdown, tensors)  # the shares ignored (before this change)
    if slow == "npu0=1":  # no slowdown: the plan itself, either way
        assert shared == alone
        assert {n: m.start_cycle for n, m in shared.ops.items()} == {
            n: t.start_cycle for n, t in verdict.simulation.ops.items()}
    else:  # ignoring the shares over-subscribes LPDDR, and the shares make the run slower
        assert "npu0:1" in _over_subscribed(alone, verdict.programs)
        assert shared.makespan_cycles > alone.makespan_cycles
    replay, stats = what_if_stats(verdict, slow, noise, seed)  # what plan simulate --slow/--noise writes
    assert replay == shared and stats["makespan_cycles"] == shared.makespan_cycles


def test_what_if_replays_hold_the_link_transfers_shares(tmp_path):
    # pinned with sharing: big0's memory plan is kept, its SENDs hold HBM shares; slowed down 3x
    # (and with noise), nothing is over-subscribed, transfers included.
    text = (ROOT / "specs" / "pinned.yaml").read_text() + "memory:\n  plan: true\n  bandwidth: shared\n"
    (tmp_path / "p.yaml").write_text(text)
    out = tmp_path / "plan"
    r = CliRunner().invoke(app, ["solve", str(tmp_path / "p.yaml"), "-o", str(out), "--quiet", "--time-limit", "2",
                                 "--workers", "1"])
    assert r.exit_code == 0, r.output
    verdict = verify_plan_dir(out)
    held = record_holdings(verdict.programs, verdict.simulation)
    assert any(node[0] == "tx" for node in held)
    for slow, noise in (("big0=3", 0.0), (None, 30.0)):
        replay, _ = what_if_stats(verdict, slow, noise, 2)
        assert _over_subscribed(replay, verdict.programs, verdict.simulation.transfers) == []


def test_a_received_tensor_holds_the_receivers_lpddr_while_it_arrives(tmp_path):
    # memory-bound-two-devices with sharing: the NPU receives over PCIe (16 GB/s) into LPDDR
    # (17 GB/s), so each RECV holds ceil(1000 * 16 / 17) = 942 of its 1000 shares; both memory
    # plans are kept, the replay checks every cycle, and the numbers are the reference's.
    text = (ROOT / "tests" / "data" / "specs" / "memdevices" / "memory-bound-two-devices.yaml").read_text()
    shared = text.replace("memory:\n  plan: true\n", "memory:\n  plan: true\n  bandwidth: shared\n")
    (tmp_path / "s.yaml").write_text(shared)
    spec = load_spec(tmp_path / "s.yaml")
    outcome = run(spec, workers=1)
    assert {d: c.plan for d, c in outcome.memory.cross_device.items()} == {"tpu0": "memory plan", "npu0": "memory plan"}
    npu = outcome.programs["npu0"]
    recvs = [instruction_shares(i, npu) for i in npu.instructions if i.opcode.name == "RECV"]
    assert recvs and all(sh[npu.main_level] == 942 for sh in recvs)
    assert outcome.simulation.valid and outcome.simulation.bandwidth["npu0"]["lpddr"]["peak_shares"] == 942
    assert compare_numeric(outcome.binaries, spec.graph, seed=7).ok
