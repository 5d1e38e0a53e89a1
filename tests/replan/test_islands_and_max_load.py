"""``plan score``, ``plan solve --warm-start`` and ``plan replan`` on islands and max-load specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import EXIT_BAD_INPUT
from planner.reductions.max_load import EXAMPLE
from planner.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent.parent
runner = CliRunner()

# Two islands of two devices each, joined by a 1 GB/s network; a chain of eight 400-cycle tasks
# passing 40 bytes (10 fp32) along, pipelined (throughput: the busiest device's or link's load).
# Optimum: two ops per device, 800 cycles (links: 4 cycles inside an island, 40 on the network).
TWO_ISLANDS = {
    "version": 1, "name": "two-islands",
    "hardware": {
        "devices": [{"name": "a", "profile": "generic", "count": 2}, {"name": "b", "profile": "generic", "count": 2}],
        "islands": [{"name": "x", "devices": ["a0", "a1"], "topology": {"kind": "all-to-all", "bandwidth": "10 GB/s",
                                                                         "latency": 0}},
                    {"name": "y", "devices": ["b0", "b1"], "topology": {"kind": "all-to-all", "bandwidth": "10 GB/s",
                                                                         "latency": 0}}],
        "network": {"bandwidth": "1 GB/s", "latency": 0}},
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": f"t{i}", "shape": [10], "kind": "activation"} for i in range(1, 8)],
        "ops": [{"name": f"o{i}", "type": "task", **({"inputs": [f"t{i - 1}"]} if i > 1 else {}),
                 "outputs": [f"t{i}"] if i < 8 else [], "cycles": {"a": 400, "b": 400}} for i in range(1, 9)]}}],
    "objective": "throughput",
    "solver": {"time_limit": "4 s", "workers": 1, "seed": 0},
}


def _json(res) -> dict:
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # stderr may hold a warning that the busy machine overran the limit


def _plan_json(directory: Path) -> dict:
    return json.loads((directory / "plan.json").read_text())


def _placement(directory: Path) -> dict[str, str]:
    return {o["name"]: o["device"] for o in _plan_json(directory)["ops"]}


@pytest.fixture(scope="module")
def islands(tmp_path_factory):
    """The two-island spec and its plan (800 cycles, OPTIMAL), solved once."""
    base = tmp_path_factory.mktemp("islands")
    spec = base / "two.yaml"
    spec.write_text(json.dumps(TWO_ISLANDS))
    summary = _json(runner.invoke(app, ["solve", str(spec), "-o", str(base / "plan"), "--json"]))
    assert (summary["objective"], summary["status"]) == (800, "OPTIMAL")
    assert "islands" in _plan_json(base / "plan")["solver"]
    return spec, base / "plan"


def test_score_agrees_with_solve_on_an_islands_plans_own_placement(islands, tmp_path):
    spec, plan = islands
    summary = _json(runner.invoke(app, ["score", str(spec), "--placement", str(plan), "-o", str(tmp_path / "s"),
                                        "--json"]))
    assert (summary["objective"], summary["status"]) == (_plan_json(plan)["objective"], "OPTIMAL")
    assert _placement(tmp_path / "s") == _placement(plan)
    assert runner.invoke(app, ["simulate", str(tmp_path / "s")]).exit_code == 0


def test_warm_start_from_an_islands_plan_keeps_its_placement_and_is_never_worse(islands, tmp_path):
    spec, plan = islands
    summary = _json(runner.invoke(app, ["solve", str(spec), "--warm-start", str(plan), "-o", str(tmp_path / "w"),
                                        "--json"]))
    assert summary["warm_start"] == {"ops_placed": 8, "ops": 8, "objective": 800}
    assert summary["objective"] == 800 and "islands" in _plan_json(tmp_path / "w")["solver"]
    assert "## Warm start" in (tmp_path / "w" / "report.md").read_text()


def _slowed_loads(plan_dir: Path, out: Path) -> dict[str, int]:
    """Each device's measured load (cycles) in the what-if replay with b0 2x slower."""
    res = runner.invoke(app, ["simulate", str(plan_dir), "--slow", "b0=2", "--stats-out", str(out), "--force"])
    assert res.exit_code == 0, res.output
    loads: dict[str, int] = {}
    for m in json.loads(out.read_text())["ops"].values():
        loads[m["device"]] = loads.get(m["device"], 0) + m["measured_cycles"]
    return loads


def test_replan_of_an_islands_plan_under_a_2x_slowdown_recovers_half_the_loss(islands, tmp_path):
    """b0 2x slower: its two ops take 1600. Best at those speeds: at most one op on b0 (800) and
    three on some other device (1200); fewer than 1200 would need seven ops on 3 x 2 + 1 slots.
    At the spec's costs that placement's busiest device is the three-op one: 1200."""
    spec, plan = islands
    assert max(_slowed_loads(plan, tmp_path / "before.json").values()) == 1600
    stats = tmp_path / "before.json"
    summary = _json(runner.invoke(app, ["replan", str(plan), "--stats", str(stats), "--spec", str(spec),
                                        "-o", str(tmp_path / "r"), "--json"]))
    decision = summary["replan"]
    assert (decision["predicted_current_cycles"], decision["predicted_new_cycles"]) == (1600, 1200)
    assert decision["predicted_gain"] == 0.25 and decision["ratios"]["b0"]["task"] == 2.0
    assert decision["moved"] and all(m["migration_bytes"] == 0 for m in decision["moved"])  # activations only
    assert (summary["objective"], summary["status"]) == (1200, "OPTIMAL")
    assert list(_placement(tmp_path / "r").values()).count("b0") <= 1
    assert runner.invoke(app, ["simulate", str(tmp_path / "r")]).exit_code == 0
    # the what-if of the new plan: 1600 -> 1200 of the 800 planned, half the loss recovered
    assert max(_slowed_loads(tmp_path / "r", tmp_path / "after.json").values()) == 1200


def test_score_refuses_a_placement_that_breaks_a_gang(tmp_path):
    """specs/islands.yaml's gangs: two heads' score matmuls, each on its own device of one island."""
    spec = ROOT / "specs" / "islands.yaml"
    placement = tmp_path / "p.json"
    placement.write_text(json.dumps({op: "tpu0" for op in load_spec(spec).graph.ops}))
    res = runner.invoke(app, ["score", str(spec), "--placement", str(placement), "-o", str(tmp_path / "s")])
    assert res.exit_code == EXIT_BAD_INPUT, res.output
    assert "the gang constraints.gang[0]" in res.output and "has two shards on one device" in res.output
    assert not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def max_load(tmp_path_factory):
    """planner.reductions.max_load.EXAMPLE (two 30-cycle ops in a chain, two accelerators; apart each
    carries 30 + 10 cycles of communication = 40, together 60) and its plan: 40, OPTIMAL."""
    base = tmp_path_factory.mktemp("max-load")
    spec = base / "max-load.json"
    spec.write_text(json.dumps(EXAMPLE))
    summary = _json(runner.invoke(app, ["solve", str(spec), "-o", str(base / "plan"), "--json"]))
    assert (summary["objective"], summary["status"]) == (40, "OPTIMAL")
    return spec, base / "plan"


def test_score_agrees_with_solve_on_a_max_load_plans_own_placement(max_load, tmp_path):
    spec, plan = max_load
    summary = _json(runner.invoke(app, ["score", str(spec), "--placement", str(plan), "-o", str(tmp_path / "s"),
                                        "--json"]))
    assert (summary["objective"], summary["status"], summary["solver"]["placement"]) == (40, "OPTIMAL", "given")
    assert _placement(tmp_path / "s") == _placement(plan)
    assert runner.invoke(app, ["simulate", str(tmp_path / "s")]).exit_code == 0


def test_score_of_a_max_load_placement_is_not_optimised(max_load, tmp_path):
    spec, _ = max_load
    placement = tmp_path / "p.json"
    placement.write_text(json.dumps({op: "acc0" for op in load_spec(spec).graph.ops}))
    summary = _json(runner.invoke(app, ["score", str(spec), "--placement", str(placement), "-o", str(tmp_path / "s"),
                                        "--json"]))
    assert summary["objective"] == 60 and set(_placement(tmp_path / "s").values()) == {"acc0"}


def test_warm_start_from_a_max_load_plan(max_load, tmp_path):
    spec, plan = max_load
    summary = _json(runner.invoke(app, ["solve", str(spec), "--warm-start", str(plan), "-o", str(tmp_path / "w"),
                                        "--json"]))
    assert summary["warm_start"] == {"ops_placed": 2, "ops": 2, "objective": 40} and summary["objective"] == 40
    assert "## Warm start" in (tmp_path / "w" / "report.md").read_text()


def _max_load_replan(max_load, tmp_path, *flags: str) -> dict:
    spec, plan = max_load
    res = runner.invoke(app, ["simulate", str(plan), "--stats-out", str(tmp_path / "s.json"), *flags])
    assert res.exit_code == 0, res.output
    summary = _json(runner.invoke(app, ["replan", str(plan), "--stats", str(tmp_path / "s.json"), "--spec", str(spec),
                                        "-o", str(tmp_path / "out"), "--json"]))
    assert runner.invoke(app, ["simulate", str(tmp_path / "out")]).exit_code == 0  # a verified directory
    return summary


def test_replan_of_a_max_load_plan_moves_the_op_off_a_3x_slowed_accelerator(max_load, tmp_path):
    """Measured loads: the op on the slowed accelerator takes 90 cycles, +10 to receive: 100 (the other 40);
    both ops on the other accelerator carry 30 + 30 = 60, no communication. Gain (100 - 60) / 100 = 40%
    (no weights to migrate). The new plan at the spec's costs: max-load 60."""
    _, plan = max_load
    slowed = _placement(plan)["m/y"]
    other = next(d for d in ("acc0", "acc1") if d != slowed)
    summary = _max_load_replan(max_load, tmp_path, "--slow", f"{slowed}=3")
    decision = summary["replan"]
    assert [(m["op"], m["from_device"], m["to_device"]) for m in decision["moved"]] == [("m/y", slowed, other)]
    assert (decision["predicted_current_cycles"], decision["predicted_new_cycles"]) == (100, 60)
    assert decision["predicted_gain"] == 0.4 and decision["ratios"][slowed]["task"] == 3.0
    assert summary["objective"] == 60 and set(_placement(tmp_path / "out").values()) == {other}
    assert "## Re-placement" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("seed", [0, 1])
def test_replan_of_a_max_load_plan_moves_nothing_under_noise(max_load, tmp_path, seed):
    _, plan = max_load
    decision = _max_load_replan(max_load, tmp_path, "--noise", "5", "--seed", str(seed))["replan"]
    assert decision["moved"] == [] and decision["reason"].startswith("kept")
    assert _placement(tmp_path / "out") == _placement(plan)
