"""Split tensors in the N-level plan through ``plan solve`` (issue 14): portion programs in every level."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from planner.memory.hierarchy_assemble import assemble_hierarchy
from planner.memory.hierarchy_bridge import build_hierarchy_problem, solve_hierarchy
from planner.spec import load_spec
from solvers.core import SolveOptions, Status
from solvers.memory.levels import CpSatHierarchySolver, validate_hierarchy
from tests.cli_process import plan_in_process as run_plan
from tests.planner.memory.test_hierarchy_bridge import spine_plan

ROOT = Path(__file__).resolve().parents[3]
SPLIT = ROOT / "tests" / "data" / "specs" / "memory-4level-split.yaml"


@pytest.fixture(scope="module")
def solved():
    spec = load_spec(SPLIT)
    plan = spine_plan(spec)
    bridge = build_hierarchy_problem(spec.graph, spec.hardware, plan, spec.hardware.devices[0], spec.memory)
    return spec, plan, bridge, solve_hierarchy(bridge, time_limit_s=5)


def test_the_bridge_offers_the_split_group(solved):
    _, _, bridge, _ = solved
    p = bridge.problem
    assert bridge.levels == ("sram", "l2", "dram", "host") and p.main_level == 2
    # relu touches x and y (64 KiB each) > sram's 16 KiB - 2 KiB reserve: one group, 64 rows / 2.
    assert [(g.first_op, g.last_op, g.tensors, g.factors) for g in p.splits] == [(0, 0, (0, 1), (1, 2))]
    assert bridge.base.group_labels == ("m/act..m/act",)


def test_four_level_split_hand_checked(solved):
    # 1 GHz; sram 64, l2 32, dram 16, host 1 B/cycle; a hop takes 50 + bytes / (slower end).
    # Unsplit: x (64 KiB) fits no level above dram whole and y (64 KiB, live-out) not l2, so
    # the best is x read at host (65,536) + y written at dram (4,096) = 69,632 (staging x in
    # dram first costs 65,586 on the DMA engine, then 8,192: 73,778).
    # Split in two (32 KiB portions): act#0 reads x#0 at host (32,768) and writes y#0 in l2
    # (1,024): 33,792, while the DMA engine stages x#1 host -> dram (50 + 32,768 = 32,818);
    # act#1 reads x#1 at dram (2,048) and writes y#1 at dram (2,048): 33,792 + 4,096 = 37,888;
    # y#0 goes l2 -> dram (50 + 2,048) behind act#1, ending 35,890. Staging x#1 on to l2
    # (+2,098, ending 34,916) would make act#1 end at 37,988; both portions over one route
    # cost >= 65,536 on one resource.
    _, _, bridge, out = solved
    p, s = bridge.problem, out.solution
    assert s.split_factors == (2,) and validate_hierarchy(p, s) == []
    assert (out.best.status, out.best.objective, out.best.bound) == (Status.OPTIMAL, 37_888, 37_888)
    assert out.all_home.objective == 69_632
    unsplit = CpSatHierarchySolver().solve(dataclasses.replace(p, splits=()), SolveOptions(5, num_workers=1))
    assert (unsplit.status, unsplit.objective) == (Status.OPTIMAL, 69_632)
    assert out.plan_bound <= 37_888  # the plan bound holds over every split


def test_split_plan_assembles_in_portions_lowers_and_replays(solved):
    from planner.lower_and_replay import replay
    from planner.verify.compare import compare_numeric

    spec, plan, bridge, out = solved
    new_plan, memory = assemble_hierarchy(plan, spec.hardware, bridge, out.solution, 64)
    assert new_plan.makespan_cycles == 37_888
    assert [(o.name, o.start_cycle, o.duration_cycles) for o in new_plan.ops] == [
        ("m/act#0", 0, 33_792), ("m/act#1", 33_792, 4_096)]
    mp = memory.devices["npu0"]
    assert mp.split_factors == {"m/act..m/act": 2}
    assert [(t.kind, t.portion, t.src_buffer, t.dst_buffer, t.start_cycle, t.end_cycle, t.release_op)
            for t in mp.transfers] == [
        ("prefetch", 1, "m/x#1", "m/x#1@dram.0", 0, 32_818, "m/act#1"),
        ("evict", 0, "m/y#0@l2.0", "m/y#0", 33_792, 35_890, "")]
    buffers = {b.name: (b.level, b.portion, b.size_bytes, b.view_of) for b in mp.buffers}
    assert buffers == {
        "m/x": ("host", -1, 65_536, ""), "m/x#0": ("host", 0, 32_768, "m/x"), "m/x#1": ("host", 1, 32_768, "m/x"),
        "m/x#1@dram.0": ("dram", 1, 32_768, ""), "m/y#0@l2.0": ("l2", 0, 32_768, ""),
        "m/y": ("dram", -1, 65_536, ""), "m/y#0": ("dram", 0, 32_768, "m/y"), "m/y#1": ("dram", 1, 32_768, "m/y")}
    views = {b.name: b.address - next(p.address for p in mp.buffers if p.name == b.view_of)
             for b in mp.buffers if b.view_of}
    assert views == {"m/x#0": 0, "m/x#1": 32_768, "m/y#0": 0, "m/y#1": 32_768}
    assert dict(mp.accesses["m/act#0"].level_bytes) == {"sram": 0, "l2": 32_768, "dram": 0, "host": 32_768}
    assert dict(mp.accesses["m/act#1"].level_bytes) == {"sram": 0, "l2": 0, "dram": 65_536, "host": 0}
    lowered = replay(new_plan, spec, memory)
    assert lowered.simulation.valid and lowered.simulation.makespan_cycles == 37_888
    relu = [(i.op, i.level_bytes, i.duration_cycles) for i in lowered.programs["npu0"].instructions
            if i.opcode.name == "VECTOR"]
    assert relu == [("m/act#0", (0, 32_768, 0, 32_768), 33_792), ("m/act#1", (0, 0, 65_536, 0), 4_096)]
    numeric = compare_numeric(lowered.binaries, spec.graph)
    assert all(c.ok for c in numeric.checks) and {c.tensor for c in numeric.checks if c.graph_output} == {"m/y"}


def test_split_plan_through_plan_solve_verifies_numerically(tmp_path):
    out = tmp_path / "out"
    done = run_plan("solve", str(SPLIT), "-o", str(out), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    memory = json.loads((out / "memory.json").read_text())
    assert memory["baselines"] == {"memory plan": 37_888, "all at home": 69_632,
                                   "greedy prefetch + greedy-by-size": 69_632}
    assert memory["devices"]["npu0"]["split_factors"] == {"m/act..m/act": 2}
    assert memory["devices"]["npu0"]["stats"]["split_factors"] == [2]
    assert "`m/act..m/act` in 2 portions" in (out / "report.md").read_text()
    check = run_plan("simulate", str(out), "--numeric", cwd=tmp_path)
    assert check.returncode == 0 and "equal to the reference" in check.stdout, check.stdout + check.stderr


def test_a_factor_that_divides_nothing_plans_unsplit():
    # 64 rows: a factor of 3 is not offered (docs/memory.md, Limits), so no split group.
    spec = load_spec(SPLIT)
    spec = dataclasses.replace(spec, memory=dataclasses.replace(spec.memory, split_factors=(1, 3)))
    bridge = build_hierarchy_problem(spec.graph, spec.hardware, spine_plan(spec), spec.hardware.devices[0],
                                     spec.memory)
    assert bridge.problem.splits == ()
    assert solve_hierarchy(bridge, 5).best.objective == 69_632


def test_a_tensor_its_home_cannot_hold_is_infeasible_not_split(tmp_path):
    # Host memory of 32 KiB cannot hold x (64 KiB) whole; portions would not help, since the
    # home copy is whole: exit 1 (infeasible), the tensor and sizes named, nothing written.
    spec = tmp_path / "s.yaml"
    spec.write_text(SPLIT.read_text().replace("{name: host, capacity: 16 MiB", "{name: host, capacity: 32 KiB"))
    done = run_plan("solve", str(spec), "-o", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "tensor 'm/x' (65,536 B) does not fit its home level host (32,768 B)" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def _refetch_spec() -> dict:
    """x (4x16 fp32) homed in host memory, read by seven matmuls; found by
    tests/planner/memory/test_n_level_property.py."""
    tensors = [{"name": "x", "shape": [4, 16], "dtype": "fp32", "kind": "input"}]
    ops = []
    for i in range(7):
        tensors += [{"name": f"w{i}", "shape": [16, 16], "dtype": "fp32", "kind": "weight"},
                    {"name": f"t{i}", "shape": [4, 16], "dtype": "fp32", "kind": "output" if i == 6 else "activation"}]
        ops.append({"name": f"o{i}", "type": "matmul", "inputs": ["x", f"w{i}"], "outputs": [f"t{i}"]})
    levels = [{"name": "sram", "capacity": "12 KiB", "bandwidth": "128 GB/s"},
              {"name": "l2", "capacity": "24 KiB", "bandwidth": "48 GB/s"},
              {"name": "lpddr", "capacity": "1 GiB", "bandwidth": "4 GB/s"},
              {"name": "host", "capacity": "1 GiB", "bandwidth": "2 GB/s"}]
    return {"version": 1, "name": "refetch", "hardware": {"devices": [{
        "name": "npu", "profile": "edge-npu", "memory": levels, "main": "lpddr",
        "dma_paths": [["sram", "l2"], ["l2", "lpddr"], ["sram", "lpddr"], ["lpddr", "host"]]}]},
        "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}], "objective": "latency",
        "memory": {"plan": True, "split": False, "home": {"m/x": "host"}},
        "solver": {"time_limit": "2 s", "workers": 1, "seed": 0}}


def test_a_copy_fetched_again_where_the_last_one_ended_gets_its_own_buffer():
    # The plan drops x's lpddr copy after o5 and fetches x host -> lpddr -> sram again, triggered
    # by o5: on the point axis the two lpddr copies touch, and level_pieces merges them; each
    # DMA must write its own buffer (this used to stop the run: "two DMAs write the same buffer").
    from planner.pipeline import run
    from planner.verify.compare import compare_numeric

    outcome = run(_refetch_spec())
    mp = outcome.memory.memory.devices["npu0"]
    into = [t.dst_buffer for t in mp.transfers if t.tensor == "m/x" and t.dst_buffer.startswith("m/x@lpddr")]
    assert into == ["m/x@lpddr.0", "m/x@lpddr.1"]
    first, second = mp.buffer("m/x@lpddr.0"), mp.buffer("m/x@lpddr.1")
    assert first.end_cycle <= second.start_cycle
    assert outcome.plan.makespan_cycles == outcome.simulation.makespan_cycles
    assert compare_numeric(outcome.binaries, load_spec(_refetch_spec()).graph, seed=2).ok
