"""``plan sweep``: plan the cross product of what-if variations of one spec, on a process pool or Ray.

:mod:`~planner.sweep.grid` turns ``--set PATH=V1,V2`` options into scenarios,
:mod:`~planner.sweep.jobs` plans (or finds done) one scenario, :mod:`~planner.sweep.backends`
runs them locally or as Ray tasks, :mod:`~planner.sweep.table` and :mod:`~planner.sweep.plot`
write the results, and :mod:`~planner.sweep.driver` ties them together.
"""

from planner.sweep.driver import SweepResult, sweep
from planner.sweep.grid import Scenario, Variation, parse_set, scenarios

__all__ = ["SweepResult", "sweep", "Scenario", "Variation", "parse_set", "scenarios"]


class _CallableModule(type(__import__("sys"))):
    """``planner.sweep`` is both this package and the function: importing the package binds it as
    the attribute ``sweep`` of ``planner``, so the package itself calls :func:`sweep`."""

    def __call__(self, *args, **kwargs) -> SweepResult:
        return sweep(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
