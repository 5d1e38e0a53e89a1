"""The several-class cost bound's CP-SAT solve: its wall-clock net is the budget's (it was a
fixed 10 s, unscaled and unreported), it widens with PLAN_NET_SLOWDOWN, and a net stop is
the solver's ``stopped_by: wall_clock``."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

import solvers.budget
from solvers.budget import COLOCATION, NET_CONSTANT_S, NET_SLOWDOWN_ENV, Budget
from solvers.colocation import ColocationProblem, CpSatColocationSolver, cost_lower_bound
from solvers.colocation.bounds import CLASS_MIX_DTIME
from solvers.core import SolveOptions
from solvers.cpsat_support import WallNet

# Two classes (cap 10 at cost 5, cap 4 at cost 1), demand 3+3+3+3 = 12: by volume three small
# bins cover it (bound 3); packed, a small bin holds one item, so one big (three items) and one
# small cost 6.
TWO_CLASSES = ColocationProblem(((10,), (4,)), (3, 3), tuple(((3,), (3,)) for _ in range(4)), class_cost=(5, 1))


class RecordingNet(WallNet):
    """A net that remembers the seconds every net was armed with."""
    armed: list[float] = []

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        RecordingNet.armed.append(seconds)


class FiredNet(WallNet):
    """A net that has fired by the time the solve returns (no timer race)."""

    @contextmanager
    def watch(self, solver):
        self.fired = True
        yield


@pytest.mark.parametrize("slowdown", [3.0, 40.0])
def test_the_class_mix_bound_runs_under_a_net_that_scales_with_plan_net_slowdown(monkeypatch, slowdown):
    # Without a budget the bound makes its own: CLASS_MIX_DTIME units at the co-location rate,
    # 2.5 s of limit, so the net is slowdown x 2.5 s + 5 s, the 5 s growing above the default
    # factor of 3 (12.5 s and 100 + 5 x 40/3 s), not a fixed 10 s.
    monkeypatch.setenv(NET_SLOWDOWN_ENV, str(slowdown))
    monkeypatch.setattr(solvers.budget, "WallNet", RecordingNet)
    RecordingNet.armed = []
    assert cost_lower_bound(TWO_CLASSES) == 3
    expected = {3.0: 12.5, 40.0: 100 + 5 * 40 / 3}[slowdown]
    assert expected == slowdown * CLASS_MIX_DTIME / COLOCATION.units_per_second + NET_CONSTANT_S * max(1, slowdown / 3)
    assert len(RecordingNet.armed) == 1 and expected - 1.0 < RecordingNet.armed[0] <= expected


def test_the_class_mix_bound_charges_the_callers_budget_and_reports_its_net_stop(monkeypatch):
    budget = Budget.start(10.0, COLOCATION)
    assert cost_lower_bound(TWO_CLASSES, budget) == 3
    assert 0 < budget.used <= CLASS_MIX_DTIME + 0.1 and budget.stopped_by is None
    monkeypatch.setattr(budget, "net", lambda: FiredNet(0.0))
    cost_lower_bound(TWO_CLASSES, budget)
    assert budget.stopped_by == "wall_clock" and budget.stats()["stopped_by"] == "wall_clock"


def test_a_net_stop_in_the_cost_bound_reaches_the_solvers_stats(monkeypatch):
    # Only the first CP-SAT solve (the bound: greedy and bin completion are counted Python) gets
    # a net that fired; the solver's stats must not say the run repeats.
    first = []

    def net(self):
        first.append(self)
        return FiredNet(0.0) if len(first) == 1 else WallNet(self.wall_left())

    monkeypatch.setattr(Budget, "net", net)
    result = CpSatColocationSolver().solve(TWO_CLASSES, SolveOptions(time_limit_s=2.0, num_workers=1, random_seed=0))
    assert result.objective == 6 and result.stats["stopped_by"] == "wall_clock"
