"""`plan import` options for dnn-partitioning files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app

DNN = Path(__file__).resolve().parent.parent.parent / "shared" / "benchmarks" / "dnn-partitioning"


def test_objective_and_contiguous_flags(tmp_path):
    files = sorted((DNN / "throughput-inputs").rglob("*.json"))
    if not files:
        pytest.skip("shared dnn-partitioning data not present")
    out = tmp_path / "s.yaml"
    result = CliRunner().invoke(app, ["import", str(files[0]), "-o", str(out), "--objective", "max-load",
                                      "--contiguous"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(out.read_text())["objective"] == {"kind": "max-load", "contiguous": True}
    result = CliRunner().invoke(app, ["import", str(files[0]), "-o", str(out), "--objective", "latency", "--force"])
    assert result.exit_code == 0 and yaml.safe_load(out.read_text())["objective"] == "latency"


def test_objective_flag_rejected_for_other_formats(tmp_path):
    result = CliRunner().invoke(app, ["import", "specs/mlp.yaml", "-o", str(tmp_path / "x.yaml"),
                                      "--objective", "latency"])
    assert result.exit_code == 2
    assert "dnn-partitioning JSON files only" in result.output
    assert not (tmp_path / "x.yaml").exists()
