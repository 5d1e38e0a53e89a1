"""Co-location's work units: how its plain-Python stages charge the common budget.

Every co-location stage (bin completion, local search, column generation, diving, CP-SAT) is
limited by one :class:`solvers.budget.Budget` started from the time limit with the
:data:`solvers.budget.COLOCATION` calibration. CP-SAT charges its own ``deterministic_time``;
the Python stages charge counted work (search nodes, local-search candidates, simplex
iterations) converted at the fixed rates below, so the same problem, seed and workers give the
same packing on any machine. A stage receives a share of what is left after the earlier
stages *actually charged*, never of the wall time left.

Calibration (busy 2-core machine, OR-Tools 9.15): CP-SAT spends 0.1-0.3 deterministic time
per wall second on the co-location models; the rates make one unit about one second of Python
work there.

Examples
--------
>>> b = Budget.start(10.0, COLOCATION)
>>> round(b.total, 6) == round(10.0 * DTIME_PER_SECOND, 6)
True
>>> b.work(0.5, NODES_PER_DTIME)
100000
"""

from __future__ import annotations

from solvers.budget import COLOCATION, Budget

__all__ = ["Budget", "COLOCATION", "DTIME_PER_SECOND", "NODES_PER_DTIME", "WORK_PER_DTIME",
           "ITERATIONS_PER_DTIME", "LP_SOLVE_DTIME"]

# Deterministic-time units per second of time limit (CP-SAT's unit): the family's calibration.
DTIME_PER_SECOND = COLOCATION.units_per_second
# Conversion of counted Python work to deterministic time (about one wall second each).
NODES_PER_DTIME = 200_000.0  # bin-completion search nodes
WORK_PER_DTIME = 2_000_000.0  # local-search work (items x candidates examined)
ITERATIONS_PER_DTIME = 200_000.0  # GLOP simplex iterations (plus a fixed charge per LP solve)
LP_SOLVE_DTIME = 0.002
