"""Memory planning over every level through ``plan solve`` (issue 14, stages 3-4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from tests.fuzz.plan_dirs import reseal

ROOT = Path(__file__).resolve().parents[3]
THREE = ROOT / "tests" / "data" / "specs" / "memory-3level.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("n-levels") / "three"
    result = runner.invoke(app, ["solve", str(THREE), "-o", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_three_level_spec_through_plan_solve(three):
    # tests/planner/memory/test_hierarchy_bridge.py has the arithmetic: w staged host -> dram
    # (4146 cycles) -> sram (306), then two 384-cycle matmuls; everything at home takes 9216. The
    # greedy baseline is the best of the N-level greedies (plain, cost-aware, all at home).
    plan = json.loads((three / "plan.json").read_text())
    memory = json.loads((three / "memory.json").read_text())
    assert plan["makespan_cycles"] == 5220 and plan["status"] == "FEASIBLE"
    assert memory["choice"] == "memory plan"
    assert memory["baselines"] == {"memory plan": 5220, "all at home": 9216, "greedy prefetch + greedy-by-size": 5334}
    dev = memory["devices"]["npu0"]
    assert [(t["src_buffer"], t["dst_buffer"], t["start_cycle"], t["end_cycle"]) for t in dev["transfers"]] == [
        ("m/w", "m/w@dram.0", 0, 4146), ("m/w@dram.0", "m/w@sram.0", 4146, 4452)]
    assert {b["name"]: b["level"] for b in dev["buffers"]} == {
        "m/x": "dram", "m/w": "host", "m/w@dram.0": "dram", "m/w@sram.0": "sram", "m/h@sram.0": "sram", "m/y": "dram"}
    assert [a["level_bytes"] for a in dev["accesses"]] == [{"sram": 8192, "dram": 4096, "host": 0},
                                                          {"sram": 8192, "dram": 4096, "host": 0}]
    fig = memory["figures"]["all at home"]["npu0"]
    assert fig["op_bytes"] == {"sram": 0, "dram": 16384, "host": 8192}  # w read twice from host
    assert memory["figures"]["memory plan"]["npu0"]["dma_bytes"] == {"dram->sram": 4096, "sram->dram": 0,
                                                                     "host->dram": 4096}
    assert (three / "bin" / "npu0.bin").read_bytes()[8:10] == (3).to_bytes(2, "little")  # level bytes: version 3
    assert "Planned over every level: sram, dram, host" in (three / "report.md").read_text()


def test_three_level_directory_verifies_and_replays_numerically(three):
    result = runner.invoke(app, ["simulate", str(three), "--numeric"])
    assert result.exit_code == 0, result.output
    assert "equal to the reference" in result.output


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc["devices"]["npu0"]["accesses"][0]["level_bytes"].update(host=1),
     "memory.json: devices.npu0.accesses[0] 'm/mm1'.level_bytes"),
    (lambda doc: doc["devices"]["npu0"]["accesses"][1].pop("level_bytes"),
     "memory.json: devices.npu0.accesses[1] 'm/mm2'.level_bytes"),
    (lambda doc: doc["figures"]["memory plan"]["npu0"]["dma_bytes"].update({"host->dram": 1}),
     "memory.json: figures.memory plan.npu0.dma_bytes"),
])
def test_tampered_level_figures_are_refused(three, tmp_path, change, message):
    d = tmp_path / "three"
    shutil.copytree(three, d)
    path = d / "memory.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    reseal(d)
    result = runner.invoke(app, ["simulate", str(d)])
    assert result.exit_code == 2 and message in result.output, result.output


def test_without_homes_a_tie_keeps_the_two_level_plan(tmp_path):
    # The same graph with w in main memory: the three-level plan cannot beat the two-level one
    # (host holds nothing), so the two-level path's plan and files stay (no level bytes).
    spec = tmp_path / "s.yaml"
    spec.write_text(THREE.read_text().replace("  home: {m/w: host}\n", ""))
    out = tmp_path / "out"
    result = runner.invoke(app, ["solve", str(spec), "-o", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    memory = json.loads((out / "memory.json").read_text())
    assert "all in main memory" in memory["baselines"]
    assert all("level_bytes" not in a for a in memory["devices"]["npu0"]["accesses"])
    assert (out / "bin" / "npu0.bin").read_bytes()[8:10] == (2).to_bytes(2, "little")


def test_three_level_binaries_take_the_screened_fast_path(three):
    from planner.isa.binary import decode_tables
    from planner.simulator.screen import screened_replay

    tables = {p.stem: decode_tables(p.read_bytes(), name=p.stem) for p in sorted((three / "bin").glob("*.bin"))}
    assert len(tables["npu0"].level_rows) == 2  # the two matmuls carry level bytes
    assert screened_replay(tables) is not None
