"""Optimization formulations over plain numeric problem data.

Nothing here imports ``planner``: a capacity-planning script can build a problem from
plain integers and call a solver directly.

Glossary
--------
problem   a frozen dataclass of dense integer arrays (``solvers.<family>.problem``).
solver    an object with ``name`` and ``solve(problem, options) -> SolveResult``.
bound     a proven lower bound on the optimum (minimization everywhere).
gap       ``|objective - bound| / max(1, |objective|)``.
"""
from solvers.core import Accepting, ProgressPoint, SolveOptions, SolveResult, Solver, Status, failure_result, relative_gap

__all__ = ["Accepting", "ProgressPoint", "SolveOptions", "SolveResult", "Solver", "Status", "failure_result", "relative_gap"]
