"""A memory spec whose address searches meet the wall-clock safety net, end to end.

The memory plan's assembly packs each device's slow level (``planner.memory.assemble``), and its
baselines and the lowering's address pass pack theirs: every such search the net stops is
collected (``collecting_net_stops``) into plan.json's ``solver`` (``net_stops``, ``stopped_by:
wall_clock``, ``reproducible: false``), which report.md and the terminal state; the plan is
still valid and verified, so ``plan solve`` exits 0 (README: "0 solved"). Only the lowering's
address pass had such a test (tests/planner/lowering/test_address_net_stop.py, taskgraph)."""

from __future__ import annotations

import inspect
import json

from typer.testing import CliRunner

from planner.cli import app
from planner.memory import addresses
from tests.planner.lowering.test_address_net_stop import RefusingGreedy, fired_budget


def test_a_memory_plans_address_net_stop_reaches_plan_json_the_report_and_the_terminal(monkeypatch, tmp_path):
    # Only the memory plans' assembly meets the net; the lowering's address pass (of the
    # main-memory baseline) searches under the real one, so the stop comes from the assembly.
    callers = []
    real_budget = addresses.offset_budget

    def fired_in_the_assembly():
        callers.append(inspect.stack()[2].frame.f_globals["__name__"])  # who called assign_addresses
        return fired_budget() if callers[-1] == "planner.memory.assemble" else real_budget()

    monkeypatch.setattr(addresses, "GreedyBySizeOffsetSolver", RefusingGreedy)
    monkeypatch.setattr(addresses, "offset_budget", fired_in_the_assembly)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["solve", "specs/memory-mlp.yaml", "-o", str(out), "--quiet",
                                   "--time-limit", "2", "--workers", "1"])
    assert res.exit_code == 0, res.output
    solver = json.loads((out / "plan.json").read_text())["solver"]
    assert solver["memory"] == "memory plan"  # the memory plan was kept, its addresses packed under the net
    # The memory plan and its greedy baseline each pack tpu0's ddr3 in their assembly: one name.
    assert callers.count("planner.memory.assemble") == 2 and "planner.memory.address_pass" in callers
    assert solver["net_stops"] == ["addresses tpu0/ddr3"]
    assert (solver["search"], solver["stopped_by"], solver["reproducible"]) == ("deterministic", "wall_clock", False)
    report = (out / "report.md").read_text()
    assert "NOT reproducible" in report and "stopped a solve (addresses tpu0/ddr3) before" in report
    assert "warning: this plan is not reproducible" in res.output
    assert "search (addresses tpu0/ddr3) before" in " ".join(res.output.split())
