"""How the search ended is never silent: plan.json, report.md and the terminal say whether a run
is reproducible (deterministic budget) or not (the wall-clock net fired, or --search until-limit)."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

import solvers.budget
from planner import solve
from planner.cli import app
from planner.pipeline import run
from planner.spec import load_spec
from tests.test_determinism_under_load import SPEC

runner = CliRunner()
SPINE = {**SPEC, "name": "search", "memory": {"plan": False}}  # 87 ops on 4 devices: CP-SAT has work to do


def _solve(tmp_path, spec: dict, *flags: str):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = tmp_path / "out"
    res = runner.invoke(app, ["solve", str(path), "-o", str(out), "--quiet", *flags])
    return res, out


@pytest.mark.usefixtures("wide_net")
def test_a_deterministic_run_says_it_is_reproducible(tmp_path):
    res, out = _solve(tmp_path, SPINE)
    assert res.exit_code == 0, res.output
    solver = json.loads((out / "plan.json").read_text())["solver"]
    assert solver["search"] == "deterministic" and solver["reproducible"] is True
    assert solver["stopped_by"] == "deterministic_budget"
    report = (out / "report.md").read_text()
    assert "| search | deterministic (reproducible) |" in report
    assert "wall time" not in report  # elapsed time would make equal inputs give different bytes
    assert "not reproducible" not in res.output


def test_when_the_wall_clock_net_fires_plan_report_and_terminal_say_so(tmp_path, monkeypatch):
    monkeypatch.delenv(solvers.budget.NET_SLOWDOWN_ENV, raising=False)  # the factor would replace NET_SLOWDOWN
    monkeypatch.setattr(solvers.budget, "NET_SLOWDOWN", 0.0)  # a 1 ms net: the first CP-SAT stage is cut
    monkeypatch.setattr(solvers.budget, "NET_CONSTANT_S", 0.001)
    res, out = _solve(tmp_path, SPINE)
    assert res.exit_code == 0, res.output  # still a valid, verified plan
    solver = json.loads((out / "plan.json").read_text())["solver"]
    assert (solver["stopped_by"], solver["reproducible"]) == ("wall_clock", False)
    report = (out / "report.md").read_text()
    assert "NOT reproducible" in report and "wall-clock safety net" in report
    assert "warning: this plan is not reproducible" in res.output


def test_plan_net_slowdown_moves_the_net_and_nothing_else(monkeypatch):
    monkeypatch.delenv(solvers.budget.NET_SLOWDOWN_ENV, raising=False)
    default = solvers.budget.Budget.start(2.0, solvers.budget.SCHEDULING, t0=100.0)
    assert default.wall_deadline == 100.0 + 3.0 * 2.0 + 5.0
    monkeypatch.setenv(solvers.budget.NET_SLOWDOWN_ENV, "30")
    wide = solvers.budget.Budget.start(2.0, solvers.budget.SCHEDULING, t0=100.0)
    assert wide.wall_deadline == 100.0 + 30.0 * 2.0 + 5.0 * 10  # the constant grows with the factor too
    assert (wide.total, wide.rate) == (default.total, default.rate)  # the budget, hence the plan, is the same


@pytest.mark.parametrize("factor, net_s", [
    (1.0, 2.0 + 5.0),     # below the default: only the limit's part shrinks
    (3.0, 6.0 + 5.0),     # the default net, exactly as before
    (6.0, 12.0 + 10.0),   # twice the default factor: twice the 5 s
    (60.0, 120.0 + 100.0),
])
def test_the_nets_constant_grows_with_a_factor_above_the_default_only(monkeypatch, factor, net_s):
    # A 2-s solve. Model building and CP-SAT's batch overshoot slow down with the machine as
    # much as the search does, so at 20x the 5 s must be 20/3 x 5 s too, or short solves
    # (island route shares, co-location bounds) meet the net on a machine the factor allows for.
    monkeypatch.setenv(solvers.budget.NET_SLOWDOWN_ENV, str(factor))
    assert solvers.budget.net_seconds(2.0) == pytest.approx(net_s, abs=1e-9)
    budget = solvers.budget.Budget.start(2.0, solvers.budget.COLOCATION, t0=100.0)
    assert budget.wall_deadline == pytest.approx(100.0 + net_s, abs=1e-9)


@pytest.mark.parametrize("value", ["fast", "0.5", "nan", "-3"])
def test_a_bad_plan_net_slowdown_is_bad_input_and_writes_nothing(tmp_path, monkeypatch, value):
    monkeypatch.setenv(solvers.budget.NET_SLOWDOWN_ENV, value)
    res, out = _solve(tmp_path, SPINE)
    assert res.exit_code == 2, res.output
    assert f"PLAN_NET_SLOWDOWN={value!r}: expected a number >= 1" in res.output
    assert "Traceback" not in res.output and not out.exists()


def test_until_limit_search_from_the_flag_or_the_spec_is_marked_not_reproducible(tmp_path):
    res, out = _solve(tmp_path, SPINE, "--search", "until-limit")
    assert res.exit_code == 0, res.output
    solver = json.loads((out / "plan.json").read_text())["solver"]
    assert (solver["search"], solver["reproducible"]) == ("until-limit", False)
    assert "until-limit: NOT reproducible" in (out / "report.md").read_text()
    assert "--search until-limit searched until the wall clock" in res.output
    spec = load_spec({**SPINE, "solver": {**SPINE["solver"], "search": "until-limit"}})
    assert spec.search == "until-limit"
    assert run(spec).plan.solver["search"] == "until-limit"


def test_a_bad_search_value_is_bad_input(tmp_path):
    res, out = _solve(tmp_path, {**SPINE, "solver": {**SPINE["solver"], "search": "fast"}})
    assert res.exit_code == 2 and not out.exists()
    assert "search" in res.output
    res, out = _solve(tmp_path, SPINE, "--search", "fast")
    assert res.exit_code == 2 and not out.exists()
    with pytest.raises(ValueError, match="search must be"):
        solve(SPINE, search="fast")


def test_the_python_api_takes_search():
    plan = solve(SPINE, search="until-limit", time_limit_s=0.3)
    assert plan.solver["search"] == "until-limit" and plan.solver["reproducible"] is False


@pytest.mark.usefixtures("wide_net")
def test_max_load_and_fleet_runs_record_their_search_too():
    from planner.fleet import load_fleet_spec, solve_fleet
    from planner.fleet.report import allocation_dict
    from planner.fleet.spec import ISSUE_EXAMPLE
    from planner.reductions.max_load import EXAMPLE as _EXAMPLE

    plan = run(load_spec(_EXAMPLE), time_limit_s=2, workers=1).plan
    assert {k: plan.solver[k] for k in ("search", "reproducible")} == {"search": "deterministic", "reproducible": True}
    fleet = solve_fleet(load_fleet_spec(ISSUE_EXAMPLE), time_limit_s=2, workers=1, search="until-limit")
    assert allocation_dict(fleet)["solver"]["reproducible"] is False
