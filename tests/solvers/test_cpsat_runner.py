"""One CP-SAT runner: ``solvers.cpsat_support.run_cpsat`` is the only code that makes a
``CpSolver``; budgeted solves reach it through ``Budget.run_cpsat``."""

from __future__ import annotations

import ast
from pathlib import Path

from ortools.sat.python import cp_model

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions

ROOT = Path(__file__).resolve().parent.parent.parent
RUNNER = ROOT / "solvers" / "cpsat_support.py"


def cpsolver_constructions(source: str) -> list[int]:
    """Lines of code (not docstrings) that call ``CpSolver()``."""
    return sorted(n.lineno for n in ast.walk(ast.parse(source))
                  if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "CpSolver")


def test_the_check_finds_a_construction():
    assert cpsolver_constructions('"""\n>>> cp_model.CpSolver()\n"""\ns = cp_model.CpSolver()\nt = CpSolver()\n') == [4, 5]


def test_only_the_runner_makes_a_cpsat_solver():
    files = sorted([*(ROOT / "solvers").rglob("*.py"), *(ROOT / "planner").rglob("*.py")])
    found = {str(p.relative_to(ROOT)): lines for p in files
             if p != RUNNER and (lines := cpsolver_constructions(p.read_text()))}
    assert found == {}
    assert cpsolver_constructions(RUNNER.read_text())  # the runner itself does


def test_budgeted_runs_charge_the_budget_and_say_how_they_stopped():
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.maximize(x)
    budget = Budget.start(10.0, SCHEDULING)
    seen = []

    class Collect(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            seen.append(self.value(x))

    status, solver, progress = budget.run_cpsat(model, SolveOptions(), 0.1, None, callback=Collect())
    assert status.value == "OPTIMAL" and solver.value(x) == 10
    assert seen and seen[-1] == 10 and progress == ()  # the caller's callback, not the recorder
    assert budget.log == [] and budget.last_stop == "finished"  # stage None: no stats line
    assert budget.charged == solver.deterministic_time > 0
    assert solver.parameters.random_seed == 0 and solver.parameters.num_workers == 1
    assert solver.parameters.max_deterministic_time == 0.1
