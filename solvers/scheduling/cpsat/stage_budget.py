"""How the stages before the main solve share one budget.

One job: :class:`StageShares`, the allowance of each stage in the order they run.

Notes
-----
**Plain** (every problem but the memory-forced latency ones, unchanged since the stages were
added): a stage may use its share of the whole budget, or what is left when less; the shares
need not add up to one, so the later stages get what the earlier ones left, not their share.

**Cumulative** (the start stages of latency problems whose weights need several devices: the
forced-cut start, segment runs, placement LNS, module re-solve and stitched parts; the bound
stages before them keep plain shares, and what they leave stays for the main solve and the
leftover bound after it): stage ``k`` may use the sum of the shares of stages ``1..k`` less what
was charged since the first one, and at least its own share while the budget lasts. So a stage
gets its share, what an earlier stage left flows to the next, and what one overran (CP-SAT
overshoots a deterministic limit by up to a batch; the forced-cut start charges its HEFT passes
after its CP-SAT solve: 0.3-0.45 units for a share of 0.13 on ResNet-50 layers and BERT-L 6)
comes out of the main solve's ``main_share``, the stage that gains least on these graphs (it
re-sequences the best start's placement), which gets what is left. All shares together add up
to at most ``1 - main_share`` (:func:`~solvers.scheduling.cpsat.options.forced_stage_shares`),
so the charges stay within the budget but for the last solve's overshoot (until session 13 the
stages charged 3.32 of Inception-V3's 3.36 units and the main solve's floor of a fifth took the
run to 3.74). On ResNet-50 operators the module re-solve's unused share reaches the stitched
parts (0.66 units instead of 0.20): 435.38 -> 413.79 ms.
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
    >>> round(s.allowance(0.2), 6)
    0.14
    >>> b.note("first", 0.04)  # the first stage used 0.04 of its 0.14
    >>> round(s.allowance(0.3), 6)  # the second gets its 0.21 and the 0.1 the first left
    0.31
    >>> b.note("second", 0.4)  # and overran by 0.09
    >>> round(s.allowance(0.2), 6)  # the third still gets its share
    0.14
    >>> b.note("third", 0.14)
    >>> round(s.allowance(0.1), 6), round(b.left, 6)  # the fourth too; the main solve then gets 0.05
    (0.07, 0.12)
    >>> round(StageShares(b).allowance(0.2), 6)  # plain: a share of the whole budget
    0.14
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
        due = self._start + self._shares * self.budget.total - self.budget.used
        return max(0.0, min(max(due, share * self.budget.total), self.budget.left))
