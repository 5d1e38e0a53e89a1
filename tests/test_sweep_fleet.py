"""``plan sweep`` on a fleet spec: one fleet directory per scenario, the fleet's columns (cost honest about
prices, utilisation peaks per resource), resuming, and (marked ``ray``) the Ray backend."""

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
from planner.errors import EXIT_BAD_INPUT
from planner.report.fleet_html import render_fleet_html

ROOT = Path(__file__).resolve().parent.parent
SETS = ["fleet.pools[0].count=1,2", "fleet.objective=power,spread"]
NAMES = ["count-1_objective-power", "count-1_objective-spread", "count-2_objective-power",
         "count-2_objective-spread"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The shipped co-location fleet (no prices) over 1 or 2 processors and both modes, in this process
    (tests/test_sweep.py covers the process pool)."""
    out = tmp_path_factory.mktemp("fleet-sweep") / "grid"
    res = CliRunner().invoke(app, ["sweep", str(ROOT / "specs" / "fleet-colocation.yaml"),
                                   *(a for s in SETS for a in ("--set", s)), "-o", str(out), "--json"])
    return out, res


def test_every_scenario_is_a_fleet_directory_of_its_own(swept):
    out, res = swept
    assert res.exit_code == 0, res.output
    for name in NAMES:
        assert sorted(p.name for p in (out / name).iterdir()) == [".plan-output", "allocation.json", "report.html",
                                                                 "report.md"]
    spread = json.loads((out / NAMES[3] / "allocation.json").read_text())
    assert spread["mode"] == "spread" and spread["processors_used"] == 2


def test_the_table_has_the_fleets_columns_read_from_each_allocation(swept):
    out, _ = swept
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert list(rows[0])[:4] == ["scenario", "fleet.pools[0].count", "fleet.objective", "status"]
    assert [r["scenario"] for r in rows] == NAMES
    assert [r["mode"] for r in rows] == ["power", "spread", "power", "spread"]
    # both tenants fit one processor exactly (100,000 ops, 40 GB of 100 GB/s); spread splits them 80/20
    assert [r["processors_used"] for r in rows] == ["1", "1", "1", "2"]
    assert [float(r["peak_util.ops"]) for r in rows] == [1.0, 1.0, 1.0, 0.8]
    assert [float(r["peak_util.io"]) for r in rows] == [0.4, 0.4, 0.4, 0.3]
    assert [r["objective"] for r in rows] == ["1", "10000", "1", "8000"]
    assert {r["cost"] for r in rows} == {""}  # the spec prices no pool: no cost, not a processor count


def test_the_terminal_table_says_none_for_an_unpriced_cost(swept):
    out, _ = swept
    res = CliRunner().invoke(app, ["sweep", str(ROOT / "specs" / "fleet-colocation.yaml"),
                                   *(a for s in SETS for a in ("--set", s)), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "none" in res.stdout and "peak ops" in res.stdout and "4 plan directories (4 done before)" in res.stdout


def test_a_priced_fleet_reports_its_cost(tmp_path):
    spec = yaml.safe_load((ROOT / "specs" / "fleet-colocation.yaml").read_text())
    spec["fleet"]["pools"][0]["cost"] = 5
    (tmp_path / "priced.yaml").write_text(yaml.safe_dump(spec))
    result = planner.sweep(tmp_path / "priced.yaml", {"fleet.pools[0].count": [2]}, tmp_path / "out")
    (row,) = result.rows
    assert row["cost"] == 5 == json.loads((tmp_path / "out" / "count-2" / "allocation.json").read_text())["cost"]
    assert "cost" in result.columns and "makespan_us" not in result.columns


def test_one_plot_per_varied_parameter(swept):
    out, _ = swept
    plots = sorted(p.name for p in out.glob("objective-*.svg"))
    assert plots == ["objective-fleet.objective.svg", "objective-fleet.pools_0_.count.svg"]
    assert (out / plots[1]).read_text().count("<circle") == 4


def test_resuming_reuses_whole_scenarios_and_replans_an_edited_one(swept):
    out, _ = swept
    table = (out / "results.csv").read_bytes()
    inode = os.stat(out / NAMES[1] / "allocation.json").st_ino
    html = out / NAMES[0] / "report.html"
    assert "OPTIMAL" in html.read_text()
    html.write_text(html.read_text().replace("OPTIMAL", "FEASIBLE"))
    result = planner.sweep(ROOT / "specs" / "fleet-colocation.yaml", SETS, out)
    assert result.reused == tuple(NAMES[1:]) and os.stat(out / NAMES[1] / "allocation.json").st_ino == inode
    allocation = json.loads((out / NAMES[0] / "allocation.json").read_text())
    assert html.read_text() == render_fleet_html(allocation)
    assert (out / "results.csv").read_bytes() == table


def test_a_scenario_the_fleet_spec_refuses_exits_2_before_anything_runs(tmp_path):
    res = CliRunner().invoke(app, ["sweep", str(ROOT / "specs" / "fleet-colocation.yaml"), "--set",
                                   "fleet.pools[0].count=1,0", "-o", str(tmp_path / "out"), "--json"])
    assert res.exit_code == EXIT_BAD_INPUT
    assert "scenario count-0 (fleet.pools[0].count=0): fleet.pools[0].count" in json.loads(res.stdout)["error"]
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_the_ray_backend_writes_the_same_fleet_directories(swept, tmp_path):
    pytest.importorskip("ray", reason="the Ray backend needs the optional extra: pip install 'plan[ray]'")
    out, _ = swept
    planner.sweep(ROOT / "specs" / "fleet-colocation.yaml", SETS, tmp_path / "ray", jobs=2, backend="ray")
    for name in ["results.csv", "results.jsonl", *(f"{n}/{f}" for n in NAMES for f in ("allocation.json",
                                                                                        "report.md", "report.html"))]:
        assert (out / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name


def test_a_tenant_no_processor_fits_exits_2_before_anything_runs(tmp_path):
    res = CliRunner().invoke(app, ["sweep", str(ROOT / "specs" / "fleet-colocation.yaml"), "--set",
                                   "fleet.tenants[1].rate=1/s,2/s", "-o", str(tmp_path / "out"), "--json"])
    assert res.exit_code == EXIT_BAD_INPUT
    error = json.loads(res.stdout)["error"]
    assert "scenario rate-2_s (fleet.tenants[1].rate='2/s'): fleet.tenants[1]: tenant 'large' fits no processor" \
        in error, error
    assert not (tmp_path / "out").exists()
