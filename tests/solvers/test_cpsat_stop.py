"""Every CP-SAT solve can be stopped by Ctrl-C: it runs through `solve_stoppable`."""

from __future__ import annotations

import ast
import random
import threading
import time
from pathlib import Path

from ortools.sat.python import cp_model

from solvers.cpsat_support import solve_counts, solve_stoppable, stop_running_solvers

ROOT = Path(__file__).resolve().parent.parent.parent


def direct_cpsat_solves(source: str) -> list[int]:
    """Lines calling ``.solve``/``.Solve`` on a ``CpSolver()`` directly instead of through solve_stoppable.

    Docstrings (doctests) are strings to the parser, so only real code is checked.
    """
    tree = ast.parse(source)

    def is_cpsolver(node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "CpSolver")

    def own_nodes(scope: ast.AST):
        """The nodes of a function (or module) body, not those of functions nested in it."""
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(node))

    lines = []
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    for scope in scopes:
        nodes = list(own_nodes(scope))
        solver_names = {t.id for n in nodes if isinstance(n, ast.Assign) and is_cpsolver(n.value)
                        for t in n.targets if isinstance(t, ast.Name)}
        for node in nodes:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("solve", "Solve")):
                receiver = node.func.value
                if is_cpsolver(receiver) or (isinstance(receiver, ast.Name) and receiver.id in solver_names):
                    lines.append(node.lineno)
    return sorted(lines)


def test_the_check_finds_a_direct_solve():
    code = ("s = cp_model.CpSolver()\nx = s.solve(m)\ny = cp_model.CpSolver().solve(m)\nz = solve_stoppable(s, m)\n"
            "def f(m):\n    solver = cp_model.CpSolver()\n    return solver.solve(m)\n"
            "def g(solver, m):\n    return solver.solve(m)\n")  # g: not known to be a CpSolver
    assert direct_cpsat_solves(code) == [2, 3, 7]


def test_no_cpsat_solve_bypasses_the_registry():
    files = sorted([*(ROOT / "solvers").rglob("*.py"), *(ROOT / "planner").rglob("*.py")])
    found = {str(p.relative_to(ROOT)): lines for p in files if (lines := direct_cpsat_solves(p.read_text()))}
    assert found == {}


def job_shop(n: int, seed: int) -> cp_model.CpModel:
    """An n x n random job shop: far from solved to optimality in a minute."""
    rng, model, horizon = random.Random(seed), cp_model.CpModel(), 100 * n * n
    machines: dict[int, list] = {m: [] for m in range(n)}
    ends = []
    for job in range(n):
        previous = None
        for machine in rng.sample(range(n), n):
            start = model.new_int_var(0, horizon, "")
            end = model.new_int_var(0, horizon, "")
            machines[machine].append(model.new_interval_var(start, rng.randint(1, 99), end, ""))
            if previous is not None:
                model.add(start >= previous)
            previous = end
        ends.append(previous)
    for intervals in machines.values():
        model.add_no_overlap(intervals)
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, ends)
    model.minimize(makespan)
    return model


def test_stop_running_solvers_stops_a_search_from_another_thread():
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 120.0
    solver.parameters.num_workers = 2
    outcome: dict = {}
    started = solve_counts()[0]
    worker = threading.Thread(target=lambda: outcome.update(status=solve_stoppable(solver, job_shop(15, 0))))
    t0 = time.monotonic()
    worker.start()
    while solve_counts()[0] == started and worker.is_alive():
        time.sleep(0.01)
    while worker.is_alive():  # repeat: a stop that comes before the search has begun is lost
        stop_running_solvers()
        worker.join(0.05)
    assert time.monotonic() - t0 < 60  # not the 120 s limit
    assert outcome["status"] in (cp_model.FEASIBLE, cp_model.UNKNOWN)
    assert solver.parameters.catch_sigint_signal is False
    assert solve_counts()[1] == 0 and stop_running_solvers() == 0  # unregistered when done
