"""``plan sweep`` and :func:`planner.sweep`: plan the cross product of what-if variations of one spec,
on a process pool or Ray.

:mod:`~planner.sweeps.grid` turns ``--set PATH=V1,V2`` options into scenarios,
:mod:`~planner.sweeps.jobs` plans (or finds done) one scenario, :mod:`~planner.sweeps.backends`
runs them locally or as Ray tasks, :mod:`~planner.sweeps.table` and :mod:`~planner.sweeps.plot`
write the results, and :mod:`~planner.sweeps.driver` ties them together.
"""

from planner.sweeps.driver import SweepResult, sweep
from planner.sweeps.grid import Scenario, Variation, parse_set, scenarios

__all__ = ["SweepResult", "sweep", "Scenario", "Variation", "parse_set", "scenarios"]

