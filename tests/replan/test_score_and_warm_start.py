"""``plan score`` (a given placement, not optimised) and ``plan solve --warm-start`` (a previous plan as the hint)."""

from __future__ import annotations

import copy
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


def _plan_json(directory: Path) -> dict:
    return json.loads((directory / "plan.json").read_text())


def _placement(directory: Path) -> dict[str, str]:
    return {o["name"]: o["device"] for o in _plan_json(directory)["ops"]}


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """taskgraph and mlp solved once (both OPTIMAL: their objective is the best for their placement)."""
    base = tmp_path_factory.mktemp("solved")
    for spec in (TASKGRAPH, MLP):
        res = runner.invoke(app, ["solve", str(spec), "-o", str(base / spec.stem), "--quiet"])
        assert res.exit_code == 0, res.output
    return base


@pytest.mark.parametrize("spec", [TASKGRAPH, MLP], ids=["taskgraph", "mlp"])
def test_score_of_a_plans_own_placement_is_the_plans_objective(solved, tmp_path, spec):
    plan = _plan_json(solved / spec.stem)
    assert plan["status"] == "OPTIMAL"
    res = runner.invoke(app, ["score", str(spec), "--placement", str(solved / spec.stem), "-o", str(tmp_path / "s"),
                              "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["objective"] == plan["objective"]
    assert _placement(tmp_path / "s") == _placement(solved / spec.stem)
    assert runner.invoke(app, ["simulate", str(tmp_path / "s")]).exit_code == 0


def test_score_of_a_json_placement_keeps_every_op_where_it_is_told(tmp_path):
    """All four tasks on the slow device: 2000 + 4000 + 4000 + 2000 cycles in a row, nothing to transfer."""
    placement = tmp_path / "p.json"
    placement.write_text(json.dumps({f"tg/{op}": "slow0" for op in "abcd"}))
    res = runner.invoke(app, ["score", str(TASKGRAPH), "--placement", str(placement), "-o", str(tmp_path / "s"),
                              "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["objective"] == 12000
    assert set(_placement(tmp_path / "s").values()) == {"slow0"}


@pytest.mark.parametrize("placement, fragment", [
    ({"tg/a": "slow0"}, "op 'tg/b' is not placed (and 2 more)"),
    ({**{f"tg/{op}": "slow0" for op in "abcd"}, "tg/z": "slow0"}, "op 'tg/z' is not in the spec's graph"),
    ({f"tg/{op}": "gpu7" for op in "abcd"}, "op 'tg/a': unknown device 'gpu7' (the spec's devices: fast0, slow0)"),
    (["tg/a"], "expected one JSON object mapping op names to device names"),
])
def test_score_refuses_a_bad_placement_with_exit_2(tmp_path, placement, fragment):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(placement))
    res = runner.invoke(app, ["score", str(TASKGRAPH), "--placement", str(path), "-o", str(tmp_path / "s")])
    assert res.exit_code == EXIT_BAD_INPUT, res.output
    assert fragment in res.output and "Traceback" not in res.output
    assert not (tmp_path / "s").exists()


def _edited_taskgraph(tmp_path: Path) -> Path:
    """taskgraph with op b removed (d reads c only) and a new op e after d."""
    doc = copy.deepcopy(read_yaml(TASKGRAPH.read_text()))
    graph = doc["models"][0]["graph"]
    graph["ops"] = [o for o in graph["ops"] if o["name"] != "b"]
    graph["tensors"] = [t for t in graph["tensors"] if t["name"] not in ("ab", "bd")]
    ops = {o["name"]: o for o in graph["ops"]}
    ops["a"]["outputs"] = ["ac"]
    ops["d"]["inputs"] = ["cd"]
    graph["tensors"] = [dict(t, kind="activation") if t["name"] == "out" else t for t in graph["tensors"]]
    graph["tensors"].append({"name": "final", "shape": [100], "dtype": "uint8", "kind": "output"})
    graph["ops"].append({"name": "e", "type": "task", "inputs": ["out"], "outputs": ["final"],
                         "cycles": {"fast": 500, "slow": 700}})
    path = tmp_path / "edited.yaml"
    path.write_text(json.dumps(doc))
    return path


def test_warm_start_from_an_edited_specs_plan_covers_the_ops_that_remain(solved, tmp_path):
    edited = _edited_taskgraph(tmp_path)
    runs = []
    for name in ("w1", "w2"):
        res = runner.invoke(app, ["solve", str(edited), "--warm-start", str(solved / "taskgraph"),
                                  "-o", str(tmp_path / name), "--json"])
        assert res.exit_code == 0, res.output
        runs.append(json.loads(res.output))
    warm = runs[0]["warm_start"]
    assert (warm["ops_placed"], warm["ops"]) == (3, 4)  # a, c, d kept; b gone; e new
    assert runs[0]["objective"] <= warm["objective"]
    # a -> c -> d -> e all on fast: 1000 + 3000 + 1000 + 500 = 5500 cycles, the best there is
    assert runs[0]["objective"] == 5500
    assert _plan_json(tmp_path / "w1")["solver"]["warm_start"] == warm
    assert "## Warm start" in (tmp_path / "w1" / "report.md").read_text()
    for f in ("plan.json", "trace.json", "report.md"):
        a, b = (tmp_path / "w1" / f).read_text(), (tmp_path / "w2" / f).read_text()
        if f == "plan.json":
            a, b = (json.loads(x) for x in (a, b))
            for d in (a, b):
                d.pop("seal"), d["files"].pop("report.md", None), d["files"].pop("report.html", None)
        assert a == b, f


def test_warm_start_is_never_worse_than_the_plan_it_starts_from(solved, tmp_path):
    res = runner.invoke(app, ["solve", str(MLP), "--warm-start", str(solved / "mlp"), "-o", str(tmp_path / "w"),
                              "--json", "--time-limit", "2"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["warm_start"]["ops_placed"] == summary["warm_start"]["ops"]
    assert summary["objective"] <= summary["warm_start"]["objective"]


def test_a_poor_warm_start_never_leaves_the_plan_worse_than_the_heuristic(tmp_path):
    # every demo op on one edge NPU: 9x HEFT's makespan, more than a 0.2-s budget repairs
    demo = ROOT / "specs" / "demo.yaml"
    solo = tmp_path / "solo.json"
    res = runner.invoke(app, ["solve", str(demo), "-o", str(tmp_path / "d"), "--time-limit", "0.2", "--quiet",
                              "--no-numeric"])
    assert res.exit_code == 0, res.output
    solo.write_text(json.dumps({op: "small1" for op in _placement(tmp_path / "d")}))
    res = runner.invoke(app, ["score", str(demo), "--placement", str(solo), "-o", str(tmp_path / "s"), "--quiet",
                              "--no-numeric"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["solve", str(demo), "--warm-start", str(tmp_path / "s"), "-o", str(tmp_path / "w"),
                              "--time-limit", "0.2", "--quiet", "--no-numeric"])
    assert res.exit_code == 0, res.output
    plan = _plan_json(tmp_path / "w")
    assert plan["solver"]["warm_start"]["objective"] == _plan_json(tmp_path / "s")["objective"] > 5_000_000
    assert plan["objective"] == plan["heuristic_objective"] == 607_739  # HEFT's, not the start's
    # the exact scheduler started from HEFT's schedule (better than the start, the portfolio's choice of hint)
    # and kept it: its own name, the start's objective on record
    assert plan["solver"]["name"] == "lns+cpsat"
    assert runner.invoke(app, ["simulate", str(tmp_path / "w")]).exit_code == 0


def test_warm_start_needs_a_plan_directory(tmp_path):
    res = runner.invoke(app, ["solve", str(TASKGRAPH), "--warm-start", str(tmp_path / "nowhere"),
                              "-o", str(tmp_path / "w")])
    assert res.exit_code == EXIT_BAD_INPUT and "expected a plan directory" in res.output
