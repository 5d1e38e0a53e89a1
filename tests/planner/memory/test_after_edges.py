"""``after`` edges (control, no tensor) on a memory-planned device with several streams.

Found by a fuzz run (session 10): the level problem knows only the data it moves, so the
re-timing started ``o3`` (after ``o0``, on another stream of the same device) before ``o0``
ended, and the replay refused the plan: exit 3 on a valid spec, with or without shared
bandwidth.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app

runner = CliRunner()

_T = [("t0", "input"), ("t1", "activation"), ("t2", "weight"), ("t3", "output"), ("t4", "weight"),
      ("t5", "weight"), ("t6", "output"), ("t7", "output")]
SPEC = {
    "version": 1, "name": "after-edge",
    "hardware": {"devices": [{"name": "k0", "profile": "edge-npu", "streams": 3},
                             {"name": "k1", "profile": "tpu-v4", "count": 3, "streams": 3},
                             {"name": "k2", "profile": "tpu-v4", "count": 2, "streams": 3}],
                 "topology": {"kind": "ring", "bandwidth": "18 GB/s", "latency": "1 us"}},
    "models": [{"name": "m0", "graph": {
        "tensors": [{"name": n, "shape": [1], "dtype": "fp32", "kind": k} for n, k in _T],
        "ops": [{"name": "o0", "type": "softmax", "inputs": ["t0"], "outputs": ["t1"], "attrs": {"axis": -1}},
                {"name": "o1", "type": "layernorm", "inputs": ["t1", "t2"], "outputs": ["t3"], "attrs": {"axis": 0}},
                {"name": "o2", "type": "add", "inputs": ["t2", "t2"], "outputs": ["t6"]},
                {"name": "o3", "type": "sigmoid", "inputs": ["t0"], "outputs": ["t7"], "after": ["o0"]}]}}],
    "objective": "latency", "solver": {"time_limit": "1 s", "workers": 1, "seed": 3},
    "memory": {"plan": True}}


@pytest.mark.parametrize("bandwidth", [None, "shared"])
def test_an_after_edge_across_streams_of_a_memory_planned_device_is_kept(tmp_path, bandwidth):
    spec = json.loads(json.dumps(SPEC))
    if bandwidth:
        spec["memory"]["bandwidth"] = bandwidth
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["solve", str(path), "-o", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    ops = {o["name"]: o for o in json.loads((tmp_path / "out" / "plan.json").read_text())["ops"]}
    o0, o3 = ops["m0/o0"], ops["m0/o3"]
    assert (o0["device"], o3["device"]) == ("k00", "k00") and o0["stream"] != o3["stream"]
    assert o3["start_cycle"] >= o0["start_cycle"] + o0["duration_cycles"]
