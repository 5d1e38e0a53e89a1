"""How the hierarchical solvers spend the shared budget (:class:`solvers.budget.Budget`).

LNS is a loop of many small one-worker CP-SAT solves with Python work between them
(building window models, compacting the schedule). Both are charged to one
:class:`~solvers.budget.Budget` of the :data:`LNS` calibration: CP-SAT's deterministic time
through :meth:`~solvers.budget.Budget.account`, the Python work counted in elementary steps
and converted at :data:`STEPS_PER_UNIT` (:func:`charge_steps`). Neither depends on how busy
the machine is, so the same problem, seed and workers end in the same place; the wall clock
is the budget's net only. Under ``search: until-limit`` the same budget counts wall seconds
and the loop runs until the limit.

Examples
--------
>>> from solvers.budget import Budget
>>> b = Budget.start(10.0, LNS)
>>> b.total, LNS.per_worker
(1.0, False)
>>> charge_steps(b, 500_000); round(b.left, 3), exhausted(b)
(0.75, False)
"""

from __future__ import annotations

from solvers.budget import Budget, Calibration

__all__ = ["LNS", "STEPS_PER_UNIT", "charge_steps", "exhausted"]

LNS = Calibration("lns", 0.1)
"""LNS refinement (``solvers.hierarchical.lns``): work units per second of limit, one CP-SAT
worker whatever ``num_workers`` (single-worker search is deterministic without interleaved
batches, and many small solves gained more per unit than few large ones). Measured
2026-11-23 on the shared 2-core machine at load 6-10: one worker spends 0.05-0.1
deterministic time per wall second on window models, so the deterministic budget, not the
net, ends a run there; on an idle machine a run ends in about half the limit."""

STEPS_PER_UNIT = 2_000_000
"""Counted Python steps (tasks compacted, model elements built) worth one work unit: about
what the window models' building and compaction do per wall second of one core."""


def charge_steps(budget: Budget, steps: int) -> None:
    """Charge ``steps`` counted Python steps to ``budget`` (a no-op under until-limit search,
    whose budget is the wall clock itself).

    Examples
    --------
    >>> b = Budget.start(10.0, LNS); charge_steps(b, 2 * STEPS_PER_UNIT); b.charged
    2.0
    """
    budget.charge(steps / STEPS_PER_UNIT)


def exhausted(budget: Budget) -> bool:
    """Whether ``budget`` is spent or its wall clock ran out (recorded in ``stopped_by``).

    Examples
    --------
    >>> b = Budget.start(10.0, LNS); b.charge(1.0); exhausted(b)
    True
    """
    return budget.left <= 0 or budget.wall_expired()
