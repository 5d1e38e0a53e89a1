"""The hierarchical path proves its bound before the placer and LNS: a plan that already meets
it skips them, and LNS stops the moment it meets it (issue 11: transformer-10k within 120 s)."""

from __future__ import annotations

from dataclasses import replace

from solvers.core import SolveOptions
from solvers.hierarchical import LnsOptions, StrategyOptions, StrategyScheduler
from solvers.hierarchical.lns import refine
from solvers.budget import Budget
from solvers.hierarchical.budget import LNS
from solvers.scheduling import CpSatOptions, SchedulingProblem, SchedulingSolution, validate_schedule
from tests.solvers.hierarchical.random_problems import random_problem
from tests.solvers.hierarchical.test_placer_and_strategy import FAST, _small_budgets
from tests.solvers.hierarchical.test_segment_glue import repeated_blocks

MEETS = "the incumbent meets the proven bound"
GLUE = CpSatOptions(segment_window_ops=4, segment_min_ops=2)


def _stages(r) -> dict:
    return r.stats["strategy_stages"]


def test_a_glued_plan_that_meets_the_bound_skips_the_placer_and_lns():
    p = repeated_blocks(8)  # the glue reaches the optimum 1 + 9 x 8; the segment proofs prove it
    first, last = (StrategyScheduler(StrategyOptions(strategy="hierarchical", cpsat=GLUE, bound_first=b)).solve(
        p, SolveOptions(time_limit_s=5, num_workers=1)) for b in (True, False))
    assert first.status.value == "OPTIMAL" and first.objective == first.bound == 73
    assert validate_schedule(p, first.solution) == []
    stages = _stages(first)
    assert list(stages) == ["charged", "segments", "bound", "placer", "lns"]
    assert stages["placer"]["skipped"] == stages["lns"]["skipped"] == MEETS
    assert first.solver_name == "hierarchical" and first.stats["stopped_by"] == "finished"
    # the bound last (as before): the same plan and bound, after the placer and LNS searched
    assert (last.objective, last.bound) == (73, 73) and last.solver_name == "hierarchical+lns"
    assert "skipped" not in _stages(last)["placer"] and _stages(last)["lns"]["iterations"] > 0
    assert _stages(first)["bound"]["segment_proofs"] == _stages(last)["bound"]["segment_proofs"] == 73


def test_a_plan_below_the_bound_still_runs_the_placer_and_lns_as_before():
    # glue and placer end above the bound (241 against 222): both orders search the same
    p = random_problem(4, 120, 4, memory=True)
    cfg = _small_budgets(lns_work=0.0004, strategy="hierarchical", groups=12)
    first, last = (StrategyScheduler(replace(cfg, bound_first=b)).solve(p, FAST) for b in (True, False))
    assert first.objective > first.bound
    assert first.solution == last.solution and (first.objective, first.bound) == (last.objective, last.bound)
    for r in (first, last):
        assert "groups" in _stages(r)["placer"] and _stages(r)["lns"]["iterations"] > 3
    assert list(_stages(first))[-3:] == ["bound", "placer", "lns"]


def test_lns_stops_the_moment_it_meets_the_bound():
    p = random_problem(2, 80, 4, memory=True)  # the placer ends 2 cycles above the proven optimum
    cfg = _small_budgets(strategy="hierarchical", groups=12)
    first, last = (StrategyScheduler(replace(cfg, bound_first=b)).solve(p, FAST) for b in (True, False))
    assert first.objective == first.bound == last.objective == last.bound
    lns = _stages(first)["lns"]
    assert lns["stopped_by"] == "finished" and "meets the proven bound" in lns["stopped"]
    assert lns["iterations"] < _stages(last)["lns"]["iterations"]


def _four_on_one() -> tuple[SchedulingProblem, SchedulingSolution]:
    """Four independent 4-cycle ops queued on one of two devices (optimum 8: two per device)."""
    p = SchedulingProblem(((4, 4),) * 4, (), (1, 1), ((-1, 0), (0, -1)), ())
    return p, SchedulingSolution((0,) * 4, (0,) * 4, (0, 4, 8, 12), (4,) * 4, ())


def test_refine_stops_at_its_target_and_never_before_it():
    p, start = _four_on_one()
    free, _ = refine(p, start, Budget.start(10, LNS), SolveOptions())
    met, stats = refine(p, start, Budget.start(10, LNS), SolveOptions(), LnsOptions(stop_at_objective=8))
    assert free.makespan_cycles == met.makespan_cycles == 8 and stats["met_bound"]
    # a target below the optimum is never met: the search ends as without one
    low, low_stats = refine(p, start, Budget.start(10, LNS), SolveOptions(), LnsOptions(stop_at_objective=7))
    assert low.makespan_cycles == 8 and "met_bound" not in low_stats
    # met from the start: not one neighbourhood
    done, done_stats = refine(p, met, Budget.start(10, LNS), SolveOptions(), LnsOptions(stop_at_objective=8))
    assert done == met and done_stats["iterations"] == 0


def test_the_bound_first_path_repeats_itself():
    p = random_problem(2, 80, 4, memory=True)
    cfg = _small_budgets(strategy="hierarchical", groups=12)
    a, b = (StrategyScheduler(cfg).solve(p, FAST) for _ in range(2))
    assert a.solution == b.solution and (a.objective, a.bound) == (b.objective, b.bound)
    assert _stages(a)["lns"]["iterations"] == _stages(b)["lns"]["iterations"]
