"""``plan replan``: re-placement from measured statistics, with hysteresis and clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import EXIT_BAD_INPUT
from planner.reader import read_yaml

ROOT = Path(__file__).resolve().parent.parent.parent
TASKGRAPH = ROOT / "specs" / "taskgraph.yaml"
MLP = ROOT / "specs" / "mlp.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """taskgraph's optimum (b on slow0, the rest on fast0: 6400 cycles) and mlp's, solved once."""
    base = tmp_path_factory.mktemp("replan")
    for spec in (TASKGRAPH, MLP):
        assert runner.invoke(app, ["solve", str(spec), "-o", str(base / spec.stem), "--quiet"]).exit_code == 0
    return base


def _stats(plan_dir: Path, out: Path, *flags: str) -> Path:
    res = runner.invoke(app, ["simulate", str(plan_dir), "--stats-out", str(out), *flags])
    assert res.exit_code == 0, res.output
    return out


def _replan(plan_dir: Path, stats: Path, spec: Path, out: Path, *flags: str) -> dict:
    res = runner.invoke(app, ["replan", str(plan_dir), "--stats", str(stats), "--spec", str(spec), "-o", str(out),
                              "--json", *flags])
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, ["simulate", str(out)]).exit_code == 0  # a verified directory as always
    return json.loads(res.stdout)  # stderr may hold a warning that the busy machine overran the limit


def _schedule(plan_dir: Path) -> list[tuple]:
    plan = json.loads((plan_dir / "plan.json").read_text())
    return [(o["name"], o["device"], o["stream"], o["start_cycle"]) for o in plan["ops"]] + [
        (t["src_op"], t["dst_op"], t["link"], t["start_cycle"]) for t in plan["transfers"]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_alone_moves_nothing(plans, tmp_path, seed):
    stats = _stats(plans / "taskgraph", tmp_path / "s.json", "--noise", "5", "--seed", str(seed))
    summary = _replan(plans / "taskgraph", stats, TASKGRAPH, tmp_path / "r")
    assert summary["replan"]["moved"] == [] and summary["replan"]["reason"].startswith("kept")
    assert summary["objective"] == 6400
    # nothing moved: the plan's own schedule is kept (no final solve), proven optimal by this spec's bound
    assert _schedule(tmp_path / "r") == _schedule(plans / "taskgraph")
    assert (summary["solver"]["name"], summary["status"], summary["bound"]) == ("kept", "OPTIMAL", 6400)


def _weighted_taskgraph(tmp_path: Path) -> Path:
    """taskgraph with a 6,400-byte weight on c, c cheaper on slow (3500 cycles), fast0 capped at 7,500 bytes.

    Optimum: c on slow0, the rest on fast0: a 0-1000; b 1000-4000; c 1200-4700 after a's 200-cycle
    transfer; its result at 4900; d 4900-5900 = 5900 cycles (b on slow instead ends at 6400)."""
    doc = read_yaml(TASKGRAPH.read_text())
    graph = doc["models"][0]["graph"]
    graph["tensors"].append({"name": "wc", "shape": [6400], "dtype": "uint8", "kind": "weight"})
    c = next(o for o in graph["ops"] if o["name"] == "c")
    c["inputs"], c["cycles"] = ["ac", "wc"], {"fast": 3000, "slow": 3500}
    doc["constraints"] = {"memory_limits": [{"device": "fast", "max": "7500 B"}]}
    path = tmp_path / "weighted.yaml"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("headroom", ["90", "100"])
def test_the_memory_headroom_guard_holds_back_a_move_that_would_fill_a_device(tmp_path, headroom):
    """slow0 3x slower: c takes 10,500 cycles there, so the plan predicts 1000 + 200 + 10500 + 200 + 1000
    = 12,900; c on fast0 instead gives all four in a row, 8,000. fast0 then holds c's 6,400-byte weight
    and the activations (about 7,000 bytes of its 7,500): within 100% of its memory, above 90% (6,750)."""
    spec = _weighted_taskgraph(tmp_path)
    assert runner.invoke(app, ["solve", str(spec), "-o", str(tmp_path / "p"), "--quiet"]).exit_code == 0
    placed = {o["name"]: o["device"] for o in json.loads((tmp_path / "p" / "plan.json").read_text())["ops"]}
    assert placed == {"tg/a": "fast0", "tg/b": "fast0", "tg/c": "slow0", "tg/d": "fast0"}
    stats = _stats(tmp_path / "p", tmp_path / "s.json", "--slow", "slow0=3")
    summary = _replan(tmp_path / "p", stats, spec, tmp_path / "r", "--headroom", headroom)
    decision = summary["replan"]
    if headroom == "90":  # c may not move: on slow0 it bounds the makespan at 12,900 whatever else moves
        assert decision["moved"] == [] and decision["reason"] == ("kept: no other placement is predicted "
                                                                  "faster at the measured speeds")
        assert (decision["predicted_current_cycles"], decision["predicted_new_cycles"]) == (12900, 12900)
        assert summary["objective"] == 5900
    else:  # migration: 6,400 bytes over the 1 GB/s wire, 100 + 6400 cycles, charged over 100 runs
        assert [(m["op"], m["from_device"], m["to_device"], m["migration_bytes"], m["migration_cycles"])
                for m in decision["moved"]] == [("tg/c", "slow0", "fast0", 6400, 6500)]
        assert (decision["predicted_current_cycles"], decision["predicted_new_cycles"]) == (12900, 8000)
        assert decision["predicted_gain"] == round((12900 - 8000 - 65) / 12900, 6)
        assert summary["objective"] == 8000


def test_a_real_slowdown_moves_the_op_off_the_slowed_device(plans, tmp_path):
    stats = _stats(plans / "taskgraph", tmp_path / "s.json", "--slow", "slow0=3")
    summary = _replan(plans / "taskgraph", stats, TASKGRAPH, tmp_path / "r")
    decision = summary["replan"]
    assert [(m["op"], m["from_device"], m["to_device"]) for m in decision["moved"]] == [("tg/b", "slow0", "fast0")]
    assert decision["ratios"]["slow0"]["task"] == 3.0 and decision["ratios"]["fast0"]["task"] == 1.0
    assert summary["objective"] == 8000  # all four tasks on fast0: 1000 + 3000 + 3000 + 1000
    # no final solve: the re-placement's schedule re-timed at the spec's costs, proven by the bound (work on fast0)
    assert (summary["solver"]["name"], summary["status"], summary["bound"]) == ("re-timed", "OPTIMAL", 8000)
    # at the measured speeds: the current plan's 14400 (b 1200-13200, its result at 13400, d till 14400) -> 8000
    assert (decision["predicted_current_cycles"], decision["predicted_new_cycles"]) == (14400, 8000)
    assert "## Re-placement" in (tmp_path / "r" / "report.md").read_text()
    # HEFT's 9,120 leaves 1,120 cycles (7.8% of 14,400) above the 8,000 bound: the exact re-solve runs, finds 8,000
    assert decision["exact"] == {"exact": "finished", "lower_bound": 8000, "room": round(1120 / 14400, 6)}


def test_the_minimum_gain_holds_back_a_smaller_gain(plans, tmp_path):
    stats = _stats(plans / "taskgraph", tmp_path / "s.json", "--slow", "slow0=3")
    decision = _replan(plans / "taskgraph", stats, TASKGRAPH, tmp_path / "r", "--min-gain", "60")["replan"]
    assert decision["moved"] == [] and "below the minimum gain 60%" in decision["reason"]


def test_the_plans_own_trace_reads_as_statistics_and_moves_nothing(plans, tmp_path):
    decision = _replan(plans / "taskgraph", plans / "taskgraph" / "trace.json", TASKGRAPH, tmp_path / "r")["replan"]
    assert decision["ratios"]["slow0"]["task"] == 1.0 and decision["moved"] == []


@pytest.mark.parametrize("case, fragment", [
    ("other-stats", "these are statistics of another plan"),
    ("other-spec", "its graph is not"),
    ("not-stats", "expected stats JSON"),
])
def test_bad_input_exits_2_without_a_traceback(plans, tmp_path, case, fragment):
    stats, spec = _stats(plans / "taskgraph", tmp_path / "s.json"), TASKGRAPH
    if case == "other-stats":
        stats = _stats(plans / "mlp", tmp_path / "m.json", "--slow", "tpu0=2")
    elif case == "other-spec":
        spec = MLP
    else:
        stats.write_text(json.dumps({"ops": {}}))
    res = runner.invoke(app, ["replan", str(plans / "taskgraph"), "--stats", str(stats), "--spec", str(spec),
                              "-o", str(tmp_path / "r")])
    assert res.exit_code == EXIT_BAD_INPUT, res.output
    assert fragment in res.output and "Traceback" not in res.output
    assert not (tmp_path / "r").exists()
