"""``plan simulate --slow/--noise``: the what-if replay of a verified plan and the stats it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import EXIT_BAD_INPUT

ROOT = Path(__file__).resolve().parent.parent.parent
TASKGRAPH = ROOT / "specs" / "taskgraph.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory):
    """taskgraph's optimum: a 0-1000 and c 1000-4000 on fast0, b 1200-5200 on slow0, d 5400-6400 on fast0."""
    out = tmp_path_factory.mktemp("sim") / "tg"
    assert runner.invoke(app, ["solve", str(TASKGRAPH), "-o", str(out), "--quiet"]).exit_code == 0
    return out


def _simulate(plan_dir, tmp_path, *flags):
    res = runner.invoke(app, ["simulate", str(plan_dir), "--stats-out", str(tmp_path / "s.json"), "--json", *flags])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["what_if"], json.loads((tmp_path / "s.json").read_text())


def test_no_slowdown_measures_the_plan_itself(plan_dir, tmp_path):
    summary, stats = _simulate(plan_dir, tmp_path)
    assert summary["makespan_cycles"] == 6400
    assert all(m["measured_cycles"] == m["planned_cycles"] for m in stats["ops"].values())


def test_a_device_slowed_2x_doubles_its_ops_and_delays_what_waits_for_them(plan_dir, tmp_path):
    summary, stats = _simulate(plan_dir, tmp_path, "--slow", "fast0=2")
    ops = stats["ops"]
    assert {n: (m["device"], m["measured_cycles"]) for n, m in ops.items()} == {
        "tg/a": ("fast0", 2000), "tg/b": ("slow0", 4000), "tg/c": ("fast0", 6000), "tg/d": ("fast0", 2000)}
    # a 0-2000 and c 2000-8000 on fast0; b waits for a's transfer: 2200-6200; d after c and b's transfer (6400):
    assert ops["tg/b"]["start_cycle"] == 2200 and ops["tg/d"]["start_cycle"] == 8000
    assert summary["makespan_cycles"] == 10000 and stats["makespan_cycles"] == 10000


def test_noise_is_deterministic_per_seed_and_bounded(plan_dir, tmp_path):
    _, one = _simulate(plan_dir, tmp_path, "--noise", "5", "--seed", "7")
    (tmp_path / "s.json").unlink()
    _, two = _simulate(plan_dir, tmp_path, "--noise", "5", "--seed", "7")
    assert one == two
    ratios = [m["measured_cycles"] / m["planned_cycles"] for m in one["ops"].values()]
    assert all(0.95 <= r <= 1.05 for r in ratios) and len(set(ratios)) > 1


def test_the_trace_has_one_event_per_op_with_its_measured_cycles(plan_dir, tmp_path):
    res = runner.invoke(app, ["simulate", str(plan_dir), "--slow", "slow0=3", "--trace-out", str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    assert "what-if replay (not the plan's timing)" in res.output
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e.get("cat") == "op"]
    assert {e["name"]: e["args"]["measured_cycles"] for e in events}["tg/b"] == 12000


@pytest.mark.parametrize("flags, fragment", [
    (["--slow", "gpu0=2"], "--slow: unknown device or link 'gpu0' (devices: fast0, slow0; links: wire)"),
    (["--slow", "fast0=0"], "--slow: fast0: expected a factor above 0, got '0'"),
    (["--slow", "fast0=-1"], "expected a factor above 0"),
    (["--slow", "fast0"], "--slow: expected NAME=FACTOR, got 'fast0'"),
    (["--noise", "-5"], "--noise: expected a percentage from 0 to below 100"),
])
def test_bad_what_if_flags_exit_2_and_write_nothing(plan_dir, tmp_path, flags, fragment):
    res = runner.invoke(app, ["simulate", str(plan_dir), "--stats-out", str(tmp_path / "s.json"), *flags])
    assert res.exit_code == EXIT_BAD_INPUT, res.output
    assert fragment in res.output and "Traceback" not in res.output
    assert not (tmp_path / "s.json").exists()


def test_the_what_if_replay_re_times_memory_dmas():
    """d0 prefetches b's weight w (cycles 0-20) while a runs (0-10); b reads w at 20-30. With d0 slowed
    2x the prefetch takes 40 cycles, a 20, and b waits for the prefetch: 40-60 (without the DMA it would
    start when a ends, at 20). Unslowed, the replay is the plan; without the ops' tensors the DMA is ignored."""
    from planner.simulator import OpTiming, SimulationResult
    from planner.simulator.replay import DmaTiming
    from planner.simulator.slowdown import MeasuredDma, parse_slowdown, what_if
    sim = SimulationResult(30, {"a": OpTiming("d0", 0, 0, 10), "b": OpTiming("d0", 0, 20, 30)}, {}, {}, 0, (),
                           ("d0",), (DmaTiming("d0", "prefetch:w@fast.0", "prefetch", "w", "w@fast.0", "slow", "fast",
                                               64, 0, 20),))
    tensors = {"a": ("x",), "b": ("w", "x")}
    slow = what_if(sim, [], parse_slowdown("d0=2", ["d0"], []), tensors)
    assert (slow.ops["a"].start_cycle, slow.ops["b"].start_cycle, slow.makespan_cycles) == (0, 40, 60)
    assert slow.dmas == (MeasuredDma("d0", "prefetch:w@fast.0", 0, 40, 20),)
    same = what_if(sim, [], parse_slowdown(None, ["d0"], []), tensors)
    assert (same.ops["b"].start_cycle, same.makespan_cycles, same.dmas[0].start_cycle) == (20, 30, 0)
    assert what_if(sim, [], parse_slowdown("d0=2", ["d0"], [])).makespan_cycles == 40


def test_the_what_if_replay_takes_an_op_split_into_memory_instances():
    """p and its consumer c each run as two memory instances, interleaved p#0 c#0 p#1 c#1 (10 cycles each)
    on one stream: c#0 waits for p#0 only (waiting for p#1 as well was a cycle, specs/memory-cnn.yaml's
    what-if failed so). d0 slowed 2x: 20 cycles each, one after the other, 80."""
    from planner.simulator import OpTiming, SimulationResult
    from planner.simulator.slowdown import parse_slowdown, what_if
    ops = {n: OpTiming("d0", 0, 10 * k, 10 * k + 10) for k, n in enumerate(("p#0", "c#0", "p#1", "c#1"))}
    sim = SimulationResult(40, ops, {}, {}, 0)
    slow = what_if(sim, [("p", "c")], parse_slowdown("d0=2", ["d0"], []))
    assert [slow.ops[n].start_cycle for n in ("p#0", "c#0", "p#1", "c#1")] == [0, 20, 40, 60]
    assert slow.makespan_cycles == 80
