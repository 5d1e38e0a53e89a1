"""`plan solve` and `plan quote` on fleet specs, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from planner.cli import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_patent_example_is_colocated_on_one_processor(tmp_path):
    # 20,000 + 80,000 ops = 100,000 (exactly the processor's ops) and 30 + 10 = 40 GB <= 100 GB:
    # one processor holds both, so the optimum uses 1 of the 2.
    out = tmp_path / "fleet"
    res = runner.invoke(app, ["solve", str(ROOT / "specs/fleet-colocation.yaml"), "-o", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    alloc = json.loads((out / "allocation.json").read_text())
    assert alloc["status"] == "OPTIMAL" and alloc["processors_used"] == 1 and alloc["bound"] == 1
    assert alloc["processors"]["proc0"]["tenants"] == ["large", "small"]
    assert alloc["processors"]["proc0"]["utilization"]["ops"] == 1.0
    assert (out / "report.md").is_file()


def test_shipped_datacenter_meets_every_primary_deadline(tmp_path):
    out = tmp_path / "dc"
    res = runner.invoke(app, ["solve", str(ROOT / "specs/fleet-datacenter.yaml"), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    report = (out / "report.md").read_text()
    assert "Primary deadlines missed because of backfill: **0**" in report
    assert "even without backfill" not in report  # no queueing misses at this allocation


def test_quote_writes_json_and_needs_pricing(tmp_path):
    target = tmp_path / "q.json"
    res = runner.invoke(app, ["quote", str(ROOT / "specs/fleet-variants.yaml"), "-o", str(target)])
    assert res.exit_code == 0, res.output
    assert json.loads(target.read_text())
    res = runner.invoke(app, ["quote", str(ROOT / "specs/fleet-colocation.yaml"), "-o", str(target)])
    assert res.exit_code == 2 and "pricing" in res.output
