"""Optimization formulations over plain numeric problem data.

Nothing here imports ``planner``: a capacity-planning script can build a problem from
plain integers and call a solver directly.

Glossary
--------
problem   a frozen dataclass of dense integer arrays (``solvers.<family>.problem``).
solver    an object with ``name`` and ``solve(problem, options) -> SolveResult``.
bound     a proven lower bound on the optimum (minimization everywhere).
gap       ``|objective - bound| / max(1, |objective|)``.

Families: ``placement`` (max-load partitioning), ``scheduling`` (placement + sequencing:
HEFT, list search, CP-SAT), ``memory``, ``colocation``, and ``learned``: a REINFORCE
grouper + placer policy (numpy only; :class:`solvers.learned.ReinforceScheduler`, registered
as ``learned.reinforce``) trained against the list scheduler's makespan, as in the
device-placement-with-reinforcement-learning papers. It is a baseline for
``benchmarks/learned.py``, not part of ``plan solve``: it proves nothing beyond the lower
bound it reports and needs many schedules to learn what HEFT finds in one.
"""
from solvers.core import Accepting, ProgressPoint, SolveOptions, SolveResult, Solver, Status, failure_result, relative_gap

__all__ = ["Accepting", "ProgressPoint", "SolveOptions", "SolveResult", "Solver", "Status", "failure_result", "relative_gap"]
