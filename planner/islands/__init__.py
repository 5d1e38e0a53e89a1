"""Island planning: a spec whose hardware has two islands or more.

:mod:`planner.islands.portions` reduces the spec to the island split
(:class:`solvers.islands.SplitProblem`) and maps the split back to ops;
:mod:`planner.islands.route` is the strategy (split, per-island solves in a process pool,
one global schedule of the islands' placement, the one-problem comparison that gives the
sound bound). Its report.md section is drawn from plan.json's ``solver.islands``
(:func:`planner.report.sections.islands_section`).
"""
from planner.islands.portions import Portions, to_split_problem
from planner.islands.route import IslandsDetails, islands_outcome, solve_islands

__all__ = ["Portions", "to_split_problem", "IslandsDetails", "islands_outcome", "solve_islands"]
