"""N levels on one device of several (issue 14): each device without link transfers gets its N-level plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import plan_in_process as run_plan

ROOT = Path(__file__).resolve().parents[3]
TWO = ROOT / "tests" / "data" / "specs" / "memory-4level-two-devices.yaml"


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("n-level-devices") / "two"
    done = run_plan("solve", str(TWO), "-o", str(out), "--quiet", cwd=out.parent)
    assert done.returncode == 0, done.stderr
    return out


def test_the_four_level_device_is_planned_over_every_level_hand_checked(two):
    # npu0 at 1 GHz: dram 16, l2 32 B/cycle; x, h, y 32 KiB each; relu's compute (128) is
    # below every roofline. Two levels (sram cannot hold h, no splits): act1 reads x and
    # writes h at dram, 2,048 + 2,048; act2 likewise: 8,192. Four levels: h at l2, so each
    # act is 2,048 (dram) + 1,024 (l2) = 3,072: 6,144, with no DMA at all.
    memory = json.loads((two / "memory.json").read_text())
    plan = json.loads((two / "plan.json").read_text())
    npu = memory["devices"]["npu0"]
    assert npu["stats"]["levels"] == ["sram", "l2", "dram", "host"]
    assert [(a["instance"], a["inputs"], a["outputs"], a["level_bytes"]) for a in npu["accesses"]] == [
        ("a/act1", [["a/x"]], [["a/h@l2.0"]], {"sram": 0, "l2": 32768, "dram": 32768, "host": 0}),
        ("a/act2", [["a/h@l2.0"]], [["a/y"]], {"sram": 0, "l2": 32768, "dram": 32768, "host": 0})]
    assert npu["transfers"] == []
    assert [(o["name"], o["start_cycle"], o["duration_cycles"]) for o in plan["ops"] if o["device"] == "npu0"] == [
        ("a/act1", 0, 3072), ("a/act2", 3072, 3072)]
    # edge0 (two levels, its own model) keeps its two-level plan, which ends first.
    edge = memory["devices"]["edge0"]
    assert "levels" not in edge["stats"] and all("level_bytes" not in a for a in edge["accesses"])
    assert max(o["start_cycle"] + o["duration_cycles"] for o in plan["ops"] if o["device"] == "edge0") < 6144
    assert plan["makespan_cycles"] == 6144
    assert memory["choice"] == "memory plan" and memory["baselines"]["all in main memory"] == 8192
    assert (two / "bin" / "npu0.bin").read_bytes()[8:10] == (3).to_bytes(2, "little")  # level bytes
    assert (two / "bin" / "edge0.bin").read_bytes()[8:10] == (2).to_bytes(2, "little")


def test_two_device_directory_replays_numerically(two):
    done = run_plan("simulate", str(two), "--numeric", cwd=two.parent)
    assert done.returncode == 0 and "equal to the reference" in done.stdout, done.stdout + done.stderr


def test_a_device_with_link_transfers_keeps_two_levels(tmp_path):
    # act2 pinned to edge0: h crosses the link, so npu0 is planned by the cross-device choice,
    # which offers its N-level plan but keeps it only when the whole plan ends strictly earlier:
    # act1 reads x and writes the sent h at dram over four levels too, so it does not.
    spec = tmp_path / "s.yaml"
    spec.write_text(TWO.read_text().replace('    - {ops: "a/*", device: npu0}\n',
                                            '    - {ops: "a/act1", device: npu0}\n'
                                            '    - {ops: "a/act2", device: edge0}\n'))
    out = tmp_path / "out"
    done = run_plan("solve", str(spec), "-o", str(out), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["transfers"], "the spec must cross a link for this test to mean anything"
    memory = json.loads((out / "memory.json").read_text())
    for dp in memory["devices"].values():
        assert "levels" not in dp["stats"] and all("level_bytes" not in a for a in dp["accesses"])
