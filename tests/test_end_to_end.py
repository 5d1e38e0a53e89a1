"""End to end: `plan` on specs, through solve, lowering, replay and the output contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from tests.planner.report.html_figures import check_html_report
from tests.planner.verify.report_figures import check_report

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

# Two identical devices joined by one link; a fork-join of explicit-cycle tasks.
#   a(4) -> b(6), a -> c(6), b -> d(2), c -> d
# One device: 4 + 6 + 6 + 2 = 18. Two devices: a on d0, b on d0 and c on d1 in parallel, but
# c needs a's 1000 bytes over a 1 GB/s link with 1-cycle latency: 1 + 1000 = 1001 cycles, so the
# split costs far more than it saves: the optimum keeps everything on one device: 18.
FORK_JOIN = {
    "version": 1,
    "name": "forkjoin",
    "hardware": {
        "devices": [{"name": "p", "profile": "generic", "count": 2}],
        "links": [{"name": "l0", "between": ["p0", "p1"], "bandwidth": "1 GB/s", "latency": "1 ns"}],
    },
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": n, "shape": [250], "dtype": "fp32"} for n in ("ta", "tb", "tc")],
        "ops": [
            {"name": "a", "type": "task", "outputs": ["ta"], "cycles": {"p": 4}},
            {"name": "b", "type": "task", "inputs": ["ta"], "outputs": ["tb"], "cycles": {"p": 6}},
            {"name": "c", "type": "task", "inputs": ["ta"], "outputs": ["tc"], "cycles": {"p": 6}},
            {"name": "d", "type": "task", "inputs": ["tb", "tc"], "cycles": {"p": 2}},
        ]}}],
    "objective": "latency",
    "solver": {"time_limit": "10 s", "workers": 1, "seed": 0},
}


def write_spec(tmp_path: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def solve_cli(spec_path: Path, out: Path, *extra: str):
    return runner.invoke(app, ["solve", str(spec_path), "-o", str(out), "--quiet", *extra])


def test_fork_join_solves_to_hand_checked_optimum(tmp_path):
    out = tmp_path / "out"
    res = solve_cli(write_spec(tmp_path, FORK_JOIN), out)
    assert res.exit_code == 0, res.output
    plan = json.loads((out / "plan.json").read_text())
    assert plan["status"] == "OPTIMAL"
    assert plan["objective"] == 18 and plan["bound"] == 18 and plan["gap"] == 0
    assert plan["makespan_cycles"] == 18
    assert {op["device"] for op in plan["ops"]} == {"p0"}  # splitting would cost a 1001-cycle transfer
    assert plan["transfers"] == []
    for name in ("report.md", "allocation.json", "trace.json", "bin/p0.bin", "bin/p0.lst", "bin/p1.bin"):
        assert (out / name).is_file(), name
    assert "OPTIMAL" in (out / "report.md").read_text()


def test_cheap_link_makes_splitting_pay(tmp_path):
    # Same graph, a 1 TB/s link with 0 latency: moving ta (1000 B) takes 1 cycle, so
    # b and c run in parallel: a 0-4, transfer 4-5, c 5-11 on p1, b 4-10 on p0, d 11-13 = 13.
    spec = json.loads(json.dumps(FORK_JOIN))
    spec["hardware"]["links"][0].update(bandwidth="1 TB/s", latency="0 ns")
    out = tmp_path / "out"
    res = solve_cli(write_spec(tmp_path, spec), out)
    assert res.exit_code == 0, res.output
    plan = json.loads((out / "plan.json").read_text())
    assert plan["objective"] == 13 and plan["status"] == "OPTIMAL"
    assert len(plan["transfers"]) == 2 or len(plan["transfers"]) == 1
    assert all(t["duration_cycles"] == 1 for t in plan["transfers"])


def test_simulate_verifies_and_rejects_tampering(tmp_path):
    spec = json.loads(json.dumps(FORK_JOIN))
    spec["hardware"]["links"][0].update(bandwidth="1 TB/s", latency="0 ns")
    out = tmp_path / "out"
    assert solve_cli(write_spec(tmp_path, spec), out).exit_code == 0
    ok = runner.invoke(app, ["simulate", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "13" in ok.output

    # A flipped byte in a binary fails its checksum.
    flipped = tmp_path / "flipped"
    flipped.mkdir()
    for f in out.rglob("*"):
        if f.is_file():
            dest = flipped / f.relative_to(out)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(f.read_bytes())
    data = bytearray((flipped / "bin" / "p0.bin").read_bytes())
    data[-3] ^= 0xFF
    (flipped / "bin" / "p0.bin").write_bytes(bytes(data))
    bad = runner.invoke(app, ["simulate", str(flipped)])
    assert bad.exit_code == 2
    assert "checksum" in bad.output.lower()

    # A plan.json edited to claim an earlier start no longer matches the binaries.
    plan = json.loads((out / "plan.json").read_text())
    plan["ops"][-1]["start_cycle"] -= 1
    (out / "plan.json").write_text(json.dumps(plan))
    bad = runner.invoke(app, ["simulate", str(out)])
    assert bad.exit_code == 2
    name = plan["ops"][-1]["name"]
    assert f"plan.json: ops[{len(plan['ops']) - 1}] {name!r}: expected" in bad.output


def test_same_seed_and_workers_give_identical_bytes(tmp_path):
    spec_path = write_spec(tmp_path, FORK_JOIN)
    a, b = tmp_path / "a", tmp_path / "b"
    assert solve_cli(spec_path, a).exit_code == 0
    assert solve_cli(spec_path, b).exit_code == 0
    for name in ("plan.json", "bin/p0.bin", "bin/p1.bin", "bin/p0.lst", "trace.json", "allocation.json", "report.md",
                 "graph.json", "report.html"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_infeasible_memory_exits_1_and_writes_nothing(tmp_path):
    spec = json.loads(json.dumps(FORK_JOIN))
    spec["hardware"]["devices"][0]["memory"] = [{"name": "mem", "capacity": "1 KiB", "bandwidth": "1 GB/s"}]
    spec["models"][0]["graph"]["tensors"].append({"name": "w", "shape": [1024], "dtype": "fp32", "kind": "weight"})
    spec["models"][0]["graph"]["ops"][1]["inputs"] = ["ta", "w"]
    out = tmp_path / "out"
    res = solve_cli(write_spec(tmp_path, spec), out)
    assert res.exit_code == 1, res.output
    assert "memory" in res.output and "m/b" in res.output
    assert "Traceback" not in res.output
    assert not out.exists()


def test_bad_spec_exits_2_with_location_and_no_output(tmp_path):
    spec = json.loads(json.dumps(FORK_JOIN))
    spec["hardware"]["devices"][0]["cuont"] = 2
    out = tmp_path / "out"
    res = solve_cli(write_spec(tmp_path, spec, "bad.yaml"), out)
    assert res.exit_code == 2
    assert "bad.yaml" in res.output and "count" in res.output  # did-you-mean
    assert "Traceback" not in res.output
    assert not out.exists()


def test_missing_file_exits_2(tmp_path):
    res = solve_cli(tmp_path / "nope.yaml", tmp_path / "out")
    assert res.exit_code == 2
    assert "nope.yaml" in res.output


def test_json_summary(tmp_path):
    res = runner.invoke(app, ["solve", str(write_spec(tmp_path, FORK_JOIN)), "-o", str(tmp_path / "o"), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["objective"] == 18 and summary["simulated_makespan_cycles"] == 18


def test_flags_override_spec_solver_settings(tmp_path):
    out = tmp_path / "out"
    res = solve_cli(write_spec(tmp_path, FORK_JOIN), out, "--time-limit", "3", "--workers", "2", "--seed", "7")
    assert res.exit_code == 0, res.output
    solver = json.loads((out / "plan.json").read_text())["solver"]
    assert solver["time_limit_s"] == 3 and solver["workers"] == 2 and solver["seed"] == 7


def test_trace_has_a_track_per_stream_and_link(tmp_path):
    spec = json.loads(json.dumps(FORK_JOIN))
    spec["hardware"]["links"][0].update(bandwidth="1 TB/s", latency="0 ns")
    out = tmp_path / "out"
    assert solve_cli(write_spec(tmp_path, spec), out).exit_code == 0
    events = json.loads((out / "trace.json").read_text())["traceEvents"]
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert sorted(e["name"] for e in ops) == ["m/a", "m/b", "m/c", "m/d"]
    names = {e["args"]["name"] for e in events if e["name"] in ("process_name", "thread_name")}
    assert {"p0", "p1", "links", "l0"} <= names


def test_validate_and_schema(tmp_path):
    res = runner.invoke(app, ["validate", str(write_spec(tmp_path, FORK_JOIN))])
    assert res.exit_code == 0 and "4 ops" in res.output
    res = runner.invoke(app, ["schema"])
    assert res.exit_code == 0
    model_form, fleet_form = json.loads(res.stdout)["oneOf"]  # plan schema covers both kinds of spec
    assert "hardware" in model_form["properties"] and "fleet" in fleet_form["properties"]


def test_python_api_returns_verified_plan():
    from planner import solve

    plan = solve(FORK_JOIN, time_limit_s=5, workers=1)
    assert plan.objective == 18 and plan.status == "OPTIMAL" and plan.heuristic_objective >= 18


@pytest.mark.parametrize("spec_path", sorted(p for p in (ROOT / "specs").glob("*.yaml")
                                             if not p.name.startswith("fleet")), ids=lambda p: p.stem)
def test_shipped_specs_solve_and_verify(spec_path, tmp_path):
    out = tmp_path / "out"
    res = solve_cli(spec_path, out, "--time-limit", "4", "--workers", "2")
    assert res.exit_code == 0, res.output
    plan = json.loads((out / "plan.json").read_text())
    assert plan["status"] in ("OPTIMAL", "FEASIBLE")
    assert plan["bound"] is not None and plan["bound"] <= plan["objective"]
    assert plan["objective"] <= plan["heuristic_objective"]
    assert runner.invoke(app, ["simulate", str(out)]).exit_code == 0
    check_report(out)  # every figure of report.md is the files' (issue 9)
    check_html_report(out)  # and every figure report.html draws (issue 12)


def test_unmeetable_pin_exits_1_with_explanation(tmp_path):
    # Task b gives cycles only for kind p, but is pinned to q0: it can run nowhere it may go.
    spec = json.loads(json.dumps(FORK_JOIN))
    spec["hardware"]["devices"].append({"name": "q", "profile": "generic"})
    spec["hardware"]["links"].append({"name": "l1", "between": ["p0", "q0"], "bandwidth": "1 GB/s", "latency": "1 ns"})
    spec["constraints"] = {"pins": [{"ops": "m/b", "device": "q0"}]}
    out = tmp_path / "out"
    res = solve_cli(write_spec(tmp_path, spec), out)
    assert res.exit_code == 1, res.output
    assert "'m/b' is pinned to ['q0']" in res.output and "['p']" in res.output
    assert not out.exists()


def test_control_dependency_across_devices_costs_the_link_latency():
    # a and b (10 cycles each) run in parallel on p0 and p1; c comes after both. Whichever
    # device c shares, the other predecessor's signal crosses the 5 ns link: 10 + 5 + 10 = 25.
    # (On one device it would be 10 + 10 + 10 = 30.) The replay must agree.
    from planner import solve

    spec = {
        "version": 1, "name": "ctl",
        "hardware": {"devices": [{"name": "p", "profile": "generic", "count": 2}],
                     "links": [{"name": "l0", "between": ["p0", "p1"], "bandwidth": "1 GB/s", "latency": "5 ns"}]},
        "models": [{"name": "m", "graph": {"tensors": [], "ops": [
            {"name": "a", "type": "task", "cycles": {"p": 10}},
            {"name": "b", "type": "task", "cycles": {"p": 10}},
            {"name": "c", "type": "task", "after": ["a", "b"], "cycles": {"p": 10}},
        ]}}],
        "solver": {"time_limit": "5 s", "workers": 1},
    }
    plan = solve(spec)
    assert plan.status == "OPTIMAL" and plan.objective == 25
    (t,) = plan.transfers
    assert t.size_bytes == 0 and t.duration_cycles == 5
