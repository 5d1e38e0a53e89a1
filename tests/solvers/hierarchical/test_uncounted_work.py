"""Work no solver counts (model building, presolve, static bounds, the contiguous split, HEFT,
grouping and uncoarsening) is
predicted from sizes and capped or charged, never timed (issue 11, the budget at scale)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from solvers.budget import (BOUND_ELEMENTS_PER_UNIT, FULL_MODEL_FREE_ELEMENTS, MODEL_ELEMENTS_PER_UNIT, SCHEDULING,
                            Budget)
from solvers.core import SolveOptions
from solvers.hierarchical import StrategyOptions, StrategyScheduler
from solvers.hierarchical.budget import (CONTIGUOUS_ELEMENTS_PER_UNIT, FLOOR_ELEMENTS_PER_UNIT,
                                         GROUPING_ELEMENTS_PER_UNIT, HEFT_ELEMENTS_PER_UNIT,
                                         STATIC_BOUND_SHARE,
                                         contiguous_cost_s, floor_units, grouping_cost_s, heft_cost_s,
                                         static_bound_cost_s)
from solvers.scheduling import CpSatScheduler
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.cpsat.search import full_model_elements, sequencing_only
from solvers.scheduling.problem import SchedulingProblem


def _chain(n: int, k: int) -> SchedulingProblem:
    links = tuple(tuple(-1 if a == b else 0 for b in range(k)) for a in range(k))
    durations = tuple(tuple(10 + (i * 7 + d) % 5 for d in range(k)) for i in range(n))
    edges = tuple((i, i + 1, 64) for i in range(n - 1))
    return SchedulingProblem(durations, edges, (1,) * k, links, ((3,),) * (n - 1))


def test_the_full_model_size_is_counted_exactly():
    p = _chain(200, 8)
    assert full_model_elements(p) == 200 * 8 + 199 * 8 * 8  # placements + transfer pairs per edge
    assert full_model_elements(_chain(10, 2)) == 10 * 2 + 9 * 4


def test_a_model_too_big_for_its_budget_is_only_sequenced():
    p = _chain(200, 8)  # 14,336 elements: 0.287 units to build
    units = full_model_elements(p) / MODEL_ELEMENTS_PER_UNIT
    assert full_model_elements(p) > FULL_MODEL_FREE_ELEMENTS
    just_enough = 2 * units / SCHEDULING.units_per_second  # FULL_MODEL_SHARE = 0.5 of the budget
    assert not sequencing_only(p, Budget.start(just_enough * 1.01, SCHEDULING), CpSatOptions())
    assert sequencing_only(p, Budget.start(just_enough * 0.99, SCHEDULING), CpSatOptions())
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=0.5, num_workers=1))
    assert r.status.has_solution and r.stats["mode"] == "sequencing (hint placement fixed)"


def test_a_small_model_is_always_built_in_full():
    p = _chain(20, 4)
    assert not sequencing_only(p, Budget.start(0.01, SCHEDULING), CpSatOptions())
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=0.1, num_workers=1))
    assert r.stats["mode"] == "full"


def test_pre_search_costs_are_predicted_from_sizes():
    p = _chain(1000, 8)
    rate = SCHEDULING.units(10.0, 2) / 10.0
    assert contiguous_cost_s(p, 60.0, 2) == pytest.approx(1000 * 8 / CONTIGUOUS_ELEMENTS_PER_UNIT / rate)
    elements = (1000 + 999) * 8
    static = static_bound_cost_s(p, 60.0, 2)
    assert static == pytest.approx(elements / BOUND_ELEMENTS_PER_UNIT / rate)
    assert static_bound_cost_s(p, static / STATIC_BOUND_SHARE * 0.99, 2) is None  # capped above the share


def test_the_hierarchical_path_charges_the_static_bounds_or_skips_them():
    p = _chain(60, 2)
    hier = StrategyScheduler(StrategyOptions(strategy="hierarchical"))
    charged = hier.solve(p, SolveOptions(time_limit_s=0.5, num_workers=1))
    stages = charged.stats["strategy_stages"]
    assert stages["charged"]["static_bound_s"] == pytest.approx(static_bound_cost_s(p, 0.5, 1), abs=1e-3)
    assert "static_bound" in stages["bound"]
    tiny = (60 + 59) * 2 / BOUND_ELEMENTS_PER_UNIT / SCHEDULING.units_per_second / STATIC_BOUND_SHARE * 0.5
    skipped = hier.solve(p, SolveOptions(time_limit_s=tiny, num_workers=1))
    stages = skipped.stats["strategy_stages"]
    assert stages["charged"]["static_bound_s"] is None and "static_bound" not in stages["bound"]
    assert skipped.objective >= skipped.bound


def test_the_contiguous_split_is_charged_only_where_it_runs():
    # No memory limit: the split never runs (it is for latency under memory limits), so its
    # predicted cost must not come off the placer's and LNS's time.
    p = _chain(60, 2)
    assert contiguous_cost_s(p, 0.5, 1) > 0
    r = StrategyScheduler(StrategyOptions(strategy="hierarchical")).solve(p, SolveOptions(time_limit_s=0.5, num_workers=1))
    assert r.stats["strategy_stages"]["charged"]["contiguous_s"] == 0.0 and r.stats["warm_start"] == "heft"


def test_heft_and_grouping_costs_are_exact_functions_of_sizes():
    p = _chain(1000, 8)
    rate = SCHEDULING.units(10.0, 2) / 10.0  # 0.112 units per second at two workers
    elements = (1000 + 999) * 8
    assert heft_cost_s(p, 60.0, 2) == pytest.approx(elements / HEFT_ELEMENTS_PER_UNIT / rate)
    assert grouping_cost_s(p, 60.0, 2) == pytest.approx(elements / GROUPING_ELEMENTS_PER_UNIT / rate)
    # transformer-10k's size (10,020 ops, 15,843 edges, 8 devices): about 1 s each
    big = (10_020 + 15_843) * 8
    assert big / HEFT_ELEMENTS_PER_UNIT / rate == pytest.approx(0.924, abs=0.001)
    assert big / GROUPING_ELEMENTS_PER_UNIT / rate == pytest.approx(1.026, abs=0.001)
    # linear in the size (HEFT's memory profile is no longer quadratic): 30x the chain, 30x the cost
    huge = _chain(30_000, 8)
    ratio = (30_000 + 29_999) / (1000 + 999)
    assert heft_cost_s(huge, 60.0, 2) == pytest.approx(ratio * heft_cost_s(p, 60.0, 2))
    assert grouping_cost_s(huge, 600.0, 2) == pytest.approx(ratio * grouping_cost_s(p, 600.0, 2))
    # one worker: the family's rate is lower, so the same work is more seconds of the limit
    assert heft_cost_s(p, 60.0, 1) == pytest.approx(elements / HEFT_ELEMENTS_PER_UNIT / SCHEDULING.units_per_second)


def test_the_hierarchical_path_charges_heft_and_grouping():
    p = _chain(60, 2)
    r = StrategyScheduler(StrategyOptions(strategy="hierarchical")).solve(p, SolveOptions(time_limit_s=2.0, num_workers=1))
    charged = r.stats["strategy_stages"]["charged"]
    assert charged["heft_s"] == round(heft_cost_s(p, 2.0, 1), 3) and charged["heft_s"] > 0
    assert charged["grouping_s"] == round(grouping_cost_s(p, 2.0, 1), 3)
    assert "skipped" not in r.stats["strategy_stages"]["placer"]


def test_the_placer_is_skipped_when_grouping_does_not_fit_its_share():
    p = _chain(60, 2)
    cfg = StrategyOptions(strategy="hierarchical")
    fits = grouping_cost_s(p, 1.0, 1) / cfg.placer_share  # the limit where grouping just fits
    hier = StrategyScheduler(cfg)
    skipped = hier.solve(p, SolveOptions(time_limit_s=fits * 0.99, num_workers=1))
    stages = skipped.stats["strategy_stages"]
    assert "skipped" in stages["placer"] and stages["charged"]["grouping_s"] is None
    assert "lns" in stages and skipped.objective >= skipped.bound
    assert skipped.objective <= skipped.stats["heft_objective"]
    placed = hier.solve(p, SolveOptions(time_limit_s=fits * 1.01, num_workers=1))
    assert "groups" in placed.stats["strategy_stages"]["placer"]


def test_predicted_charges_keep_results_identical_under_load():
    # the charges are arithmetic on sizes, never the clock: a CPU hog next to the solve
    # changes nothing
    p = _chain(120, 4)
    hier = StrategyScheduler(StrategyOptions(strategy="hierarchical"))
    opts = SolveOptions(time_limit_s=1.0, num_workers=1)
    quiet = hier.solve(p, opts)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = hier.solve(p, opts)
    finally:
        hog.kill()
        hog.wait()
    assert loaded.solution == quiet.solution and loaded.bound == quiet.bound
    assert loaded.stats["strategy_stages"]["charged"] == quiet.stats["strategy_stages"]["charged"]


def test_the_segment_floors_are_charged_to_the_proofs_or_skip_them():
    assert floor_units(_chain(1000, 8)) == (1000 + 999) * 8 / FLOOR_ELEMENTS_PER_UNIT
    hier = StrategyScheduler(StrategyOptions(strategy="hierarchical"))
    small = _chain(60, 2)
    r = hier.solve(small, SolveOptions(time_limit_s=2.0, num_workers=1))
    bound = r.stats["strategy_stages"]["bound"]
    assert bound["floors_dtime"] == round(floor_units(small), 6) and isinstance(bound["segment_proofs"], int)
    # 1,500 ops on 8 devices: 0.03 units of floors against a proofs' budget of 0.1 s x 0.07 units
    big = _chain(1500, 8)
    r = hier.solve(big, SolveOptions(time_limit_s=1.0, num_workers=1))
    bound = r.stats["strategy_stages"]["bound"]
    assert bound["floors_dtime"] == round(floor_units(big), 6) > 0.1 * SCHEDULING.units_per_second
    assert bound["segment_proofs"].startswith("skipped") and r.objective >= r.bound
