"""A fleet's report.html: every figure it draws is its allocation.json's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.fleet import load_fleet_spec, solve_fleet
from planner.fleet.report import write_fleet_outputs
from planner.fleet.spec import ISSUE_EXAMPLE
from tests.planner.report.html_figures import elements


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    write_fleet_outputs(solve_fleet(load_fleet_spec(ISSUE_EXAMPLE), time_limit_s=2, workers=1), out)
    return out


def test_the_fleet_page_draws_allocation_json(fleet_dir):
    doc = json.loads((fleet_dir / "allocation.json").read_text())
    found = elements((fleet_dir / "report.html").read_text())
    cards = {a["data-field"]: a["data-value"] for _, a in found if "data-field" in a}
    assert cards == {k: str(doc[k]) for k in ("objective", "bound", "gap", "processors_used", "cost",
                                              "peak_utilization")}
    bars = [float(a["data-value"]) for _, a in found if a.get("class") == "track"]
    want = [v for info in doc["processors"].values() for v in info["utilization"].values()]
    assert bars == pytest.approx(want, abs=1e-6)
    # each bar's segments are its tenants' shares, which add up to the processor's utilisation
    shares = sum(s for insts in doc["tenants"].values() for inst in insts for s in inst["share"].values())
    assert shares == pytest.approx(sum(want), abs=1e-4)
    assert sum(1 for _, a in found if a.get("class") == "segment") == sum(
        len(inst["share"]) for insts in doc["tenants"].values() for inst in insts)
    assert [a["data-mode"] for _, a in found if "data-mode" in a] == list(doc["modes"])
