"""How the stages before the main solve share one budget.

One job: :class:`StageShares`, the allowance of each stage in the order they run.

Notes
-----
**Plain** (every problem but the memory-forced latency ones, unchanged since the stages were
added): a stage may use its share of the whole budget, or what is left when less; the shares
need not add up to one, so the later stages get what the earlier ones left, not their share.

**Cumulative** (latency problems whose weights need several devices, where eight stages run
before the main solve): the shares add up to at most ``1 - main_share`` and stage ``k`` may use
the sum of the shares of stages ``1..k`` less what was charged since the first one. A stage gets
its share, what an earlier stage left flows to the next, and what one overran (CP-SAT overshoots
a deterministic limit by up to a batch) is taken from the next, so the charges of the stages
before the main solve stay within their shares in sum and the main solve keeps at least
``main_share`` of the budget (until session 13 the stages charged 3.32 of Inception-V3's 3.36
units and the main solve's floor of a fifth took the total to 3.74).
"""
from __future__ import annotations

from solvers.budget import Budget

__all__ = ["StageShares"]


class StageShares:
    """The allowances of the stages that run one after the other on ``budget`` (module Notes).

    Examples
    --------
    >>> from solvers.budget import SCHEDULING
    >>> b = Budget.start(10.0, SCHEDULING)  # 0.7 units
    >>> s = StageShares(b, cumulative=True)
    >>> round(s.allowance(0.5), 6)
    0.35
    >>> b.note("first", 0.1)  # the first stage used 0.1 of its 0.35
    >>> round(s.allowance(0.25), 6)  # the second gets its 0.175 and the 0.25 the first left
    0.425
    >>> b.note("second", 0.5)  # and overran by 0.075
    >>> round(s.allowance(0.2), 6), round(StageShares(b).allowance(0.2), 6)
    (0.065, 0.14)
    """

    def __init__(self, budget: Budget, cumulative: bool = False) -> None:
        self.budget = budget
        self.cumulative = cumulative
        self._start = budget.used
        self._shares = 0.0

    def allowance(self, share: float) -> float:
        """What the next stage, of share ``share``, may use (in the budget's units); 0 when
        the earlier stages took its share."""
        if not self.cumulative:
            return share * self.budget.total
        self._shares += share
        return max(0.0, self._start + self._shares * self.budget.total - self.budget.used)
