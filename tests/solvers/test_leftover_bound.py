"""The leftover bound stage (CpSatScheduler._leftover_bound) and what it resumes: pinned moves
carried over in a memo, forced-cut probes from a raised floor with a smaller first step, and
the probes giving up for the pinned moves. Every value stays below the exhaustive optimum on
small random memory-forced graphs, a hand-checked case where the stage proves what the
scheduler reported without it, and the same figures twice.

The default run draws a small slice (15 and 12 graphs); a wider sweep, e.g.
``PLAN_LEFTOVER_BOUND_EXAMPLES=200 python -m pytest -q -p no:cacheprovider tests/solvers/test_leftover_bound.py``,
draws that many of each.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem, lower_bound
from solvers.scheduling.forced_cuts import forced_cut_bound
from solvers.scheduling.pinned_moves import pinned_move_bound
from tests.solvers.test_pinned_moves import _fork_join, memory_forced_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force

_WIDE = int(os.environ.get("PLAN_LEFTOVER_BOUND_EXAMPLES", "0"))
_ONE = SolveOptions(num_workers=1)


def _settings(default: int):
    return settings(max_examples=_WIDE or default, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_settings(15)
@given(memory_forced_graphs())
def test_resumed_pinned_moves_stay_below_the_optimum_and_never_fall(p):
    opt = brute_force(p)
    if opt is None:
        return
    memo: dict = {}
    first, _ = pinned_move_bound(p, _ONE, Budget.start(0.02, SCHEDULING), memo)
    again, stats = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    assert first <= again <= opt, (first, again, opt)
    fresh, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert fresh <= opt


def test_a_settled_move_is_not_proved_again():
    p = _fork_join()
    memo: dict = {}
    value, stats = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    moves = [v for k, v in memo.items() if isinstance(k, tuple)]  # the memo also keeps the weight options
    assert value == 12 and stats["pinned_moves_settled"] == 1 and moves == [(11.0, True)]  # the step after c0
    budget = Budget.start(5, SCHEDULING)
    again, _ = pinned_move_bound(p, _ONE, budget, memo)
    assert again == 12
    assert not any(line["stage"] == "cpsat" for line in budget.log)  # only the DP ranking was charged
    assert budget.used < 0.001


def _two_splits() -> SchedulingProblem:
    # tests/solvers/test_forced_cuts.py's hand-checked chain: static bounds 18, optimum 29.
    return SchedulingProblem(((3, 3), (1, 1), (2, 2), (3, 3), (3, 3)),
                             ((0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 4, 0), (1, 3, 0)), (1, 1), ((-1, 0), (0, -1)),
                             ((1,), (8,), (8,), (5,), (1,)), device_memory_bytes=(7, 7),
                             op_resident_bytes=(4, 2, 3, 1, 4))


def test_probes_from_a_raised_floor_with_a_small_first_step_reach_the_optimum():
    p = _two_splits()
    assert lower_bound(p) == 18 and brute_force(p) == 29
    for floor in (18, 25):
        for step in (0, 128):
            value, stats = forced_cut_bound(p, _ONE, Budget.start(5, SCHEDULING), floor=floor, first_step=step)
            assert value == 29, (floor, step, stats)
    # a refutation first: giving up never stops probes that are raising the bound
    assert forced_cut_bound(p, _ONE, Budget.start(5, SCHEDULING), floor=18, give_up=True)[0] == 29


# The main solve fixes the hint's placement (max_full_ops 0) and proves nothing for the whole
# problem: only the stages' bounds count. The first-stage forced cuts and pinned moves are off.
_SEQUENCING = dict(max_full_ops=0, forced_cut_share=0.0, forced_cut_start_share=0.0, pinned_move_share=0.0,
                   placement_lns_share=0.0, bound_probe_share=0.0)


def test_the_leftover_stage_proves_what_the_stages_left_open():
    p = _two_splits()
    options = SolveOptions(time_limit_s=5, num_workers=1)
    off = CpSatScheduler(CpSatOptions(leftover_bound_share=0.0, **_SEQUENCING)).solve(p, options)
    on = CpSatScheduler(CpSatOptions(**_SEQUENCING)).solve(p, options)
    assert off.bound == 18 and "leftover_bound" not in off.stats
    assert on.objective == off.objective and on.solution == off.solution  # the plan is untouched
    assert on.bound == 29 and on.stats["leftover_bound"]["stage"] == "forced_cut_bound"
    assert on.stats["lower_bound"] == 29
    assert on.status.value == ("OPTIMAL" if on.objective == 29 else "FEASIBLE")
    again = CpSatScheduler(CpSatOptions(**_SEQUENCING)).solve(p, options)
    assert (again.bound, again.stats["leftover_bound"]) == (on.bound, on.stats["leftover_bound"])


@_settings(12)
@given(memory_forced_graphs())
def test_the_scheduler_bound_with_the_leftover_stage_stays_below_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    cfg = dict(_SEQUENCING, pinned_move_share=0.1)
    r = CpSatScheduler(CpSatOptions(**cfg)).solve(p, SolveOptions(time_limit_s=1, num_workers=1))
    assert r.bound is not None and r.bound <= opt <= r.objective, (r.bound, opt, r.objective)
