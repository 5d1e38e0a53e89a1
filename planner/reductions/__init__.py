"""Reductions (as in cvxpy): each turns the user's world into a solver problem and keeps what maps the solution back.

* :mod:`planner.reductions.scheduling` — latency and throughput: spec → scheduling problem;
* :mod:`planner.reductions.max_load` — max-load: spec → placement problem;
* :mod:`planner.reductions.memory` — memory planning, chained after scheduling.

A fleet's reduction (tenants → co-location problem) is :mod:`planner.fleet.reduction`, inside
the fleet package with the fleet's own spec types.

Each module gives ``to_…problem(...) -> (solver_problem, inverse)`` and the inverse step
(``from_solution`` or the inverse object's own method).
"""

__all__ = []  # nothing here: each reduction is its own module
