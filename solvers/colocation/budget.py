"""A deterministic work budget shared by the stages of one co-location solve.

Every stage (bin completion, local search, column generation, diving, CP-SAT) is limited by
*work*, never by elapsed wall time, so the same problem, seed and worker count give the
same result on a busy or an idle machine. The budget is ``dtime_per_second * time_limit_s``
deterministic-time units, fixed up front. CP-SAT charges its own ``deterministic_time``;
plain-Python stages charge counted work (search nodes, local-search candidates, simplex
iterations) converted at the fixed rates below. A stage receives a share of what is left
after the earlier stages *actually charged*, never of the wall time left.

The wall clock stays as a safety net only: every stage also stops at the overall deadline
(``t0 + time_limit_s * wall_slack``); when that fires first, :attr:`Budget.stopped_by`
becomes ``"wall_time"`` and the run may not repeat (the solvers copy it into their stats).

Calibration (busy 2-core machine, OR-Tools 9.15): CP-SAT spends 0.1-0.3 dtime per wall
second on the co-location models, and the conversion rates make one unit about one
second of Python work there, so the deterministic limit, not the wall clock, ends each
stage (a faster machine finishes early instead).

Examples
--------
>>> b = Budget.start(10.0, dtime_per_second=0.1)
>>> b.total, b.left
(1.0, 1.0)
>>> b.charge(0.25)
>>> round(b.left, 2), b.stopped_by
(0.75, None)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from solvers.core import ProgressPoint, SolveOptions, Status
from solvers.cpsat_support import run_cpsat

__all__ = ["Budget", "DTIME_PER_SECOND", "NODES_PER_DTIME", "WORK_PER_DTIME", "ITERATIONS_PER_DTIME"]

# Deterministic-time units per second of time limit (CP-SAT's unit).
DTIME_PER_SECOND = 0.2
# Conversion of counted Python work to deterministic time (about one wall second each).
NODES_PER_DTIME = 200_000.0  # bin-completion search nodes
WORK_PER_DTIME = 2_000_000.0  # local-search work (items x candidates examined)
ITERATIONS_PER_DTIME = 200_000.0  # GLOP simplex iterations (plus a fixed charge per LP solve)
LP_SOLVE_DTIME = 0.002


@dataclass
class Budget:
    """Deterministic budget (``total`` units) with a wall-clock safety net.

    Examples
    --------
    >>> b = Budget.start(1.0, dtime_per_second=2.0)
    >>> b.share(0.5), b.wall_expired()
    (1.0, False)
    """

    total: float
    wall_deadline: float
    used: float = 0.0
    stopped_by: str | None = None
    log: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def start(cls, time_limit_s: float, *, dtime_per_second: float = DTIME_PER_SECOND,
              wall_slack: float = 1.5, t0: float | None = None) -> "Budget":
        t0 = time.perf_counter() if t0 is None else t0
        return cls(max(1e-3, dtime_per_second * time_limit_s), t0 + wall_slack * time_limit_s + 1.0)

    @property
    def left(self) -> float:
        return max(0.0, self.total - self.used)

    def share(self, fraction: float) -> float:
        """``fraction`` of what is left (deterministic: depends only on what was charged)."""
        return fraction * self.left

    def charge(self, dtime: float) -> None:
        self.used += max(0.0, float(dtime))

    def wall_left(self) -> float:
        return self.wall_deadline - time.perf_counter()

    def wall_expired(self) -> bool:
        """Whether the safety net fired (recorded in :attr:`stopped_by`)."""
        if time.perf_counter() > self.wall_deadline:
            self.stopped_by = "wall_time"
            return True
        return False

    def note(self, stage: str, dtime: float, **facts: Any) -> None:
        """Charge ``dtime`` to ``stage`` and keep a line for the stats."""
        self.charge(dtime)
        self.log.append({"stage": stage, "dtime": round(float(dtime), 6), **facts})

    def run_cpsat(self, model: cp_model.CpModel, options: SolveOptions, dtime: float, stage: str,
                  **params: Any) -> tuple[Status, cp_model.CpSolver, tuple[ProgressPoint, ...]]:
        """Solve with at most ``dtime`` units (``interleave_search`` on for any worker count),
        the overall deadline as the wall-clock safety net; charge what CP-SAT used."""
        dtime = max(1e-3, min(dtime, self.left) if self.left > 0 else 1e-3)
        wall = max(0.05, self.wall_left())
        status, solver, points = run_cpsat(model, options, wall, max_deterministic_time=dtime,
                                           interleave_search=True, **params)
        used = solver.deterministic_time
        stopped = "finished"
        if status not in (Status.OPTIMAL, Status.INFEASIBLE):
            stopped = "deterministic_time" if used >= 0.999 * dtime else "wall_time"
        if stopped == "wall_time":
            self.stopped_by = "wall_time"
        self.note(stage, used, status=status.value, stopped_by=stopped)
        return status, solver, points

    def stats(self) -> dict[str, Any]:
        return {"dtime_budget": round(self.total, 6), "dtime_used": round(self.used, 6),
                "stopped_by": self.stopped_by or "deterministic_budget", "stages": list(self.log)}
