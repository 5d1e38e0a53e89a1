"""A memory-planned plan directory (memory-mlp: DMAs, split ops, two memory levels), solved once per run."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def memory_plan_dir(tmp_path_factory) -> Path:
    from typer.testing import CliRunner

    from planner.cli import app

    out = tmp_path_factory.mktemp("report") / "memory-mlp"
    res = CliRunner().invoke(app, ["solve", str(ROOT / "specs" / "memory-mlp.yaml"), "-o", str(out), "--quiet",
                                   "--time-limit", "4"])
    assert res.exit_code == 0, res.output
    return out
