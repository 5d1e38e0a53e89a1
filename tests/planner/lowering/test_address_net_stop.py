"""An address search the wall-clock safety net stopped reaches what ``plan solve`` writes:
plan.json's ``solver`` (``stopped_by: wall_clock``, ``reproducible: false``, ``net_stops``
naming the device and level), report.md's search line, and the terminal's warning. Before,
the stop was only logged, and plan.json called the run reproducible."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import replace

from typer.testing import CliRunner

from planner.cli import app
from planner.memory import addresses
from planner.memory.addresses import Lifetime, assign_addresses, collecting_net_stops, offset_budget
from solvers.core import Status
from solvers.cpsat_support import WallNet
from solvers.memory.offsets import GreedyBySizeOffsetSolver


class FiredNet(WallNet):
    """A net that has fired by the time the solve returns (no timer race)."""

    @contextmanager
    def watch(self, solver):
        self.fired = True
        yield


def fired_budget():
    budget = offset_budget()
    budget.net = lambda: FiredNet(0.0)
    return budget


class RefusingGreedy(GreedyBySizeOffsetSolver):
    """Greedy-by-size that never packs, so every level goes to CP-SAT."""

    def solve(self, problem, options=None):
        found = super().solve(problem)
        return replace(found, status=Status.UNKNOWN, objective=None, solution=None)


def test_collectors_nest_and_see_only_their_blocks_stops(monkeypatch):
    monkeypatch.setattr(addresses, "GreedyBySizeOffsetSolver", RefusingGreedy)
    monkeypatch.setattr(addresses, "offset_budget", fired_budget)
    bufs = [Lifetime("x", 64, 0, 2), Lifetime("y", 64, 1, 3)]
    with collecting_net_stops() as outer:
        assign_addresses(bufs, 256, device="d0", level="hbm")
        with collecting_net_stops() as inner:
            assign_addresses(bufs, 256, device="d1", level="sram")
    assert outer == ["addresses d0/hbm", "addresses d1/sram"] and inner == ["addresses d1/sram"]
    assign_addresses(bufs, 256, device="d2", level="hbm")  # no collector: only logged
    assert outer == ["addresses d0/hbm", "addresses d1/sram"]


def test_an_address_net_stop_reaches_plan_json_the_report_and_the_terminal(monkeypatch, tmp_path):
    monkeypatch.setattr(addresses, "GreedyBySizeOffsetSolver", RefusingGreedy)
    monkeypatch.setattr(addresses, "offset_budget", fired_budget)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["solve", "specs/taskgraph.yaml", "-o", str(out), "--quiet",
                                   "--time-limit", "1", "--workers", "1"])
    assert res.exit_code == 0, res.output
    solver = json.loads((out / "plan.json").read_text())["solver"]
    # taskgraph's two devices each address their main level in the lowering's address pass
    assert solver["net_stops"] == ["addresses fast0/mem", "addresses slow0/mem"]
    assert (solver["stopped_by"], solver["reproducible"]) == ("wall_clock", False)
    assert "stopped a solve (addresses fast0/mem, addresses slow0/mem) before" in (out / "report.md").read_text()
    assert "search (addresses fast0/mem, addresses slow0/mem) before" in " ".join(res.output.split())
