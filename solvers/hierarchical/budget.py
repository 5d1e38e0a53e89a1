"""A deterministic work budget: CP-SAT deterministic time plus counted work, wall clock only as a net.

A stand-in for the shared ``solvers/budget.py`` being written on another branch (issue 10):
the hierarchical solvers spend their budget through this one class, so moving to the shared
one is a change in one place.

Notes
-----
The budget is fixed up front in *work units*. CP-SAT solves spend their deterministic time
(``CpSolver.deterministic_time``, one unit each); Python work the solvers do between solves
(model building, re-timing a schedule) is counted in elementary steps and converted at
``steps_per_unit``. Neither depends on how busy the machine is, so the same problem, seed
and worker count spend the budget the same way and end in the same place. The wall clock
is a safety net only: when it fires, :attr:`WorkBudget.stopped_by` says so and the run may
not repeat.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["WorkBudget"]


@dataclass
class WorkBudget:
    """Deterministic work units to spend, with a wall-clock safety net.

    Parameters
    ----------
    units : float
        Work units available (CP-SAT deterministic time plus counted steps).
    wall_limit_s : float
        Safety net: :meth:`exhausted` also turns true after this many seconds.
    steps_per_unit : int
        Counted Python steps worth one unit.

    Examples
    --------
    >>> b = WorkBudget(1.0, wall_limit_s=60, steps_per_unit=1000)
    >>> b.spend_dtime(0.25); b.spend_steps(500); round(b.left(), 3)
    0.25
    >>> b.exhausted(), b.stopped_by
    (False, None)
    >>> b.spend_dtime(0.3); b.exhausted(), b.stopped_by
    (True, 'work_budget')
    """

    units: float
    wall_limit_s: float
    steps_per_unit: int = 2_000_000
    used_dtime: float = 0.0
    used_steps: int = 0
    stopped_by: str | None = None
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def spend_dtime(self, dtime: float) -> None:
        """Charge CP-SAT deterministic time."""
        self.used_dtime += max(0.0, float(dtime))

    def spend_steps(self, steps: int) -> None:
        """Charge counted Python work."""
        self.used_steps += int(steps)

    def used(self) -> float:
        """Units spent so far."""
        return self.used_dtime + self.used_steps / self.steps_per_unit

    def left(self) -> float:
        """Units left (never negative)."""
        return max(0.0, self.units - self.used())

    def wall_s(self) -> float:
        """Seconds since the budget was made."""
        return time.perf_counter() - self._t0

    def wall_left_s(self) -> float:
        """Seconds left before the safety net fires."""
        return max(0.0, self.wall_limit_s - self.wall_s())

    def exhausted(self) -> bool:
        """True once the units are spent or the wall-clock net fired (recorded in ``stopped_by``)."""
        if self.stopped_by is None:
            if self.used() >= self.units:
                self.stopped_by = "work_budget"
            elif self.wall_s() >= self.wall_limit_s:
                self.stopped_by = "wall_time"
        return self.stopped_by is not None

    def child(self, share: float) -> "WorkBudget":
        """A budget of ``share`` of what is left, sharing this one's wall clock.

        Spend from a child is not charged here: call :meth:`absorb` when it is done.

        Examples
        --------
        >>> b = WorkBudget(2.0, wall_limit_s=60)
        >>> c = b.child(0.5); c.spend_dtime(0.4); b.absorb(c); round(b.left(), 3)
        1.6
        """
        c = WorkBudget(self.left() * share, self.wall_limit_s, self.steps_per_unit)
        c._t0 = self._t0
        return c

    def absorb(self, child: "WorkBudget") -> None:
        """Charge a child's spend to this budget (and its wall-clock stop, if any)."""
        self.used_dtime += child.used_dtime
        self.used_steps += child.used_steps
        if child.stopped_by == "wall_time":
            self.stopped_by = "wall_time"

    def stats(self) -> dict:
        """What was spent, for ``SolveResult.stats``."""
        return {"work_units": round(self.units, 4), "dtime_used": round(self.used_dtime, 4),
                "counted_steps": self.used_steps, "stopped_by": self.stopped_by or "finished",
                "wall_s": round(self.wall_s(), 3)}
