"""Conventions every command keeps: --version, --json (errors too), the schema of every shipped spec,
tables never cut when piped, results in the user's units, the live line's phase."""

from __future__ import annotations

import json
import os
import subprocess
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import _LiveLine, app, err, main
from planner.errors import EXIT_BAD_INPUT
from planner.schema import plan_json_schema
from tests.cli_process import PLAN

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.yaml"))
runner = CliRunner()


def test_version_is_the_installed_packages():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout == f"plan {version('plan')}\n"


@pytest.mark.parametrize("args", [
    ["solve", "nosuch.yaml"], ["validate", "nosuch.yaml"], ["simulate", "nosuch-dir"], ["import", "nosuch.onnx",
    "-o", "x.yaml"], ["quote", "nosuch.yaml"], ["sweep", "nosuch.yaml", "--set", "solver.seed=1,2", "-o", "x"],
])
def test_every_command_reports_an_error_as_json_on_stdout_with_its_exit_code(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == EXIT_BAD_INPUT
    reported = json.loads(res.stdout)
    assert reported["exit_code"] == EXIT_BAD_INPUT and "nosuch" in reported["error"]
    assert list(tmp_path.iterdir()) == []


def test_a_usage_error_is_json_too_with_the_same_exit_code(capsys):
    code = main(["validate", "--jsno", "--json"])
    reported = json.loads(capsys.readouterr().out)
    assert code == reported["exit_code"] == 2 and "No such option: --jsno" in reported["error"]


def test_validate_json_counts_the_graph():
    res = runner.invoke(app, ["validate", str(ROOT / "specs" / "mlp.yaml"), "--json"])
    assert res.exit_code == 0
    assert json.loads(res.stdout) | {"spec": None} == {"spec": None, "valid": True, "kind": "model", "ops": 7,
                                                        "tensors": 12, "devices": 2, "links": 1,
                                                        "objective": "latency"}


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_every_shipped_spec_validates_against_plan_schema(spec):
    schema = json.loads(runner.invoke(app, ["schema"]).stdout)
    jsonschema.validate(yaml.safe_load(spec.read_text()), schema)


def test_the_schema_rejects_a_spec_mixing_both_forms():
    fleet = yaml.safe_load((ROOT / "specs" / "fleet-datacenter.yaml").read_text())
    model = yaml.safe_load((ROOT / "specs" / "mlp.yaml").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**model, "fleet": fleet["fleet"]}, plan_json_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**model, "objective": "fastest"}, plan_json_schema())


def test_quote_json_says_where_it_wrote(tmp_path):
    target = tmp_path / "q.json"
    res = runner.invoke(app, ["quote", str(ROOT / "specs" / "fleet-datacenter.yaml"), "-o", str(target), "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert printed["output"] == str(target) and printed["quote"] == json.loads(target.read_text())


def test_a_piped_solve_prints_whole_numbers_and_times_at_80_columns(tmp_path):
    """Piped at COLUMNS=80, rich used to cut cells ("OPTI…", "3,617,7…")."""
    env = {**os.environ, "COLUMNS": "80"}
    res = subprocess.run([*PLAN, "solve", str(ROOT / "specs" / "mlp.yaml"), "-o", str(tmp_path / "o"),
                          "--time-limit", "2"], capture_output=True, text=True, env=env, timeout=240)
    assert res.returncode == 0, res.stderr
    document = json.loads((tmp_path / "o" / "plan.json").read_text())
    assert "…" not in res.stdout and document["status"] in res.stdout
    assert f"{document['objective']:,}" in res.stdout
    assert f"{document['objective'] / 1000:.1f} µs" in res.stdout  # latency at 1 GHz, beside the cycles
    assert max(map(len, res.stdout.splitlines())) > 80


def _line(**kwargs) -> str:
    line = _LiveLine(err, **kwargs)
    line.point = SimpleNamespace(objective=1200, bound=1200)
    return str(line.__rich__())


def test_the_live_line_shows_the_phase_and_the_time_limit():
    text = _line(clock=SimpleNamespace(current="solve"), time_limit_s=30)
    assert text.startswith("placement") and "(limit 30 s)" in text and "gap 0.00%" in text
    assert _line(clock=SimpleNamespace(current="replay")).startswith("replay")


def test_the_live_line_shows_no_gap_while_memory_planning_can_still_change_the_objective():
    text = _line(clock=SimpleNamespace(current="solve"), time_limit_s=30, later_stage_changes_objective=True)
    assert "0.00%" not in text and "gap after memory planning" in text and "incumbent 1,200" in text
