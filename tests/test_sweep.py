"""``plan sweep`` / ``planner.sweep``: a small grid end to end, resuming after an interruption, bad input,
and (marked ``ray``, run with ``python -m pytest -m ray tests/test_sweep.py``) the Ray backend."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import EXIT_BAD_INPUT, SpecError
from planner.safe_output import OutputTargetError

ROOT = Path(__file__).resolve().parent.parent
SETS = ["models[0].generator.layers=1,2", "models[0].generator.batch=1,8"]
NAMES = ["layers-1_batch-1", "layers-1_batch-8", "layers-2_batch-1", "layers-2_batch-8"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """The shipped MLP with a 1 s limit (each scenario: 1 or 2 layers, a few seconds at most)."""
    spec = yaml.safe_load((ROOT / "specs" / "mlp.yaml").read_text())
    spec["solver"]["time_limit"] = "1 s"
    path = tmp_path_factory.mktemp("sweep-spec") / "mlp.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


class _Stop(KeyboardInterrupt):
    """Ctrl-C arriving after the second scenario finished."""


@pytest.fixture(scope="module")
def resumed(base, tmp_path_factory):
    """A sweep interrupted after two scenarios, then resumed by ``plan sweep`` on a process pool."""
    out = tmp_path_factory.mktemp("sweep") / "grid"
    finished = []

    def interrupt_after_two(name, row, reused):
        finished.append(name)
        if len(finished) == 2:
            raise _Stop

    with pytest.raises(_Stop):
        planner.sweep(base, SETS, out, jobs=1, on_scenario=interrupt_after_two)
    before = {n: os.stat(out / n / "plan.json").st_ino for n in finished}
    interrupted = sorted(p.name for p in out.iterdir())
    res = CliRunner().invoke(app, ["sweep", str(base), *(a for s in SETS for a in ("--set", s)), "-o", str(out),
                                   "-j", "2", "--json"])
    return out, finished, before, interrupted, res


def test_an_interrupted_sweep_keeps_its_finished_scenarios_and_writes_no_table(resumed):
    out, finished, _, interrupted, _ = resumed
    assert finished == NAMES[:2]
    assert interrupted == sorted([*NAMES[:2], "sweep.json"])  # no table, no partial third directory


def test_resuming_plans_only_the_missing_scenarios(resumed):
    out, finished, before, _, res = resumed
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["reused"] == NAMES[:2]
    assert {n: os.stat(out / n / "plan.json").st_ino for n in finished} == before  # not rewritten


def test_the_table_holds_each_scenarios_verified_figures(resumed):
    out, *_ = resumed
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [r["scenario"] for r in rows] == NAMES
    assert [(r["models[0].generator.layers"], r["models[0].generator.batch"]) for r in rows] == \
        [("1", "1"), ("1", "8"), ("2", "1"), ("2", "8")]
    for r in rows:
        document = json.loads((out / r["scenario"] / "plan.json").read_text())
        assert int(r["objective"]) == document["objective"] and r["status"] == document["status"]
        assert float(r["makespan_us"]) == pytest.approx(int(r["makespan_cycles"]) / 1000)  # 1 GHz clock
        assert float(r["throughput_per_s"]) == pytest.approx(1e9 / int(r["makespan_cycles"]), rel=1e-6)
        assert int(r["peak.tpu0.hbm_bytes"]) > 0
    layers = {n: int(r["objective"]) for n, r in zip(NAMES, rows)}
    assert layers["layers-2_batch-1"] > layers["layers-1_batch-1"]  # twice the layers takes longer
    jsonl = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [j["objective"] for j in jsonl] == [int(r["objective"]) for r in rows]


def test_each_scenario_directory_verifies_with_plan_simulate(resumed):
    out, *_ = resumed
    res = CliRunner().invoke(app, ["simulate", str(out / NAMES[3]), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["makespan_cycles"] == \
        int(list(csv.DictReader((out / "results.csv").open()))[3]["makespan_cycles"])


def test_one_svg_plot_per_varied_parameter_with_a_point_per_scenario(resumed):
    out, *_ = resumed
    plots = sorted(p.name for p in out.glob("objective-*.svg"))
    assert plots == ["objective-models_0_.generator.batch.svg", "objective-models_0_.generator.layers.svg"]
    layers = (out / plots[1]).read_text()
    assert layers.startswith("<svg") and layers.count("<circle") == 4 and layers.count("<polyline") == 2


def test_a_finished_sweep_reruns_nothing_and_writes_the_same_table(resumed, base):
    out, *_ = resumed
    table = (out / "results.csv").read_bytes()
    result = planner.sweep(base, SETS, out)
    assert result.reused == tuple(NAMES) and (out / "results.csv").read_bytes() == table


def test_a_tampered_scenario_is_planned_again(resumed, base):
    out, *_ = resumed
    document = json.loads((out / NAMES[0] / "plan.json").read_text())
    document["objective"] += 1
    (out / NAMES[0] / "plan.json").write_text(json.dumps(document))
    result = planner.sweep(base, SETS, out)
    assert NAMES[0] not in result.reused and len(result.reused) == 3
    assert json.loads((out / NAMES[0] / "plan.json").read_text())["objective"] == document["objective"] - 1


def test_other_options_or_a_foreign_directory_are_refused_before_anything_runs(resumed, base, tmp_path):
    out, *_ = resumed
    with pytest.raises(SpecError, match="holds a sweep with other options"):
        planner.sweep(base, SETS, out, seed=3)
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(OutputTargetError, match=r"holds files plan sweep did not write \(mine.txt\)"):
        planner.sweep(base, SETS, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


@pytest.mark.parametrize("flag, message", [
    ("models[3].generator.layers=1,2", "--set models[3].generator.layers: models has 1 entry"),
    ("hardware.devicez[0].count=1", "--set hardware.devicez[0].count: hardware.devicez is not in the spec"),
    ("models[0].generator.layers=1,0", "scenario layers-0 (models[0].generator.layers=0): "
                                       "models[0].generator.layers: input should be greater than or equal to 1"),
    ("models[0].generator.layers", "expected PATH=VALUE[,VALUE...]"),
])
def test_a_bad_path_or_value_exits_2_naming_it_and_writes_nothing(base, tmp_path, flag, message):
    res = CliRunner().invoke(app, ["sweep", str(base), "--set", flag, "-o", str(tmp_path / "out"), "--json"])
    assert res.exit_code == EXIT_BAD_INPUT
    assert message in json.loads(res.stdout)["error"] and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_the_ray_backend_writes_the_same_directories_as_the_process_pool(resumed, base, tmp_path):
    pytest.importorskip("ray", reason="the Ray backend needs the optional extra: pip install 'plan[ray]'")
    out, *_ = resumed
    result = planner.sweep(base, SETS, tmp_path / "ray", jobs=2, backend="ray")
    assert result.reused == ()
    for name in ["results.csv", "results.jsonl", *NAMES]:
        a, b = out / name, tmp_path / "ray" / name
        files = [p.relative_to(a) for p in sorted(a.rglob("*"))] if a.is_dir() else [Path()]
        for f in files:
            assert (a / f).is_dir() or (a / f).read_bytes() == (b / f).read_bytes(), f"{name}/{f}"


def test_the_parquet_table_matches_the_csv_when_pyarrow_is_installed(resumed):
    pq = pytest.importorskip("pyarrow.parquet", reason="results.parquet needs the optional extra: "
                                                       "pip install 'plan[parquet]'")
    out, *_ = resumed
    table = pq.read_table(out / "results.parquet")
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert table.column("scenario").to_pylist() == NAMES
    assert table.column("objective").to_pylist() == [int(r["objective"]) for r in rows]
