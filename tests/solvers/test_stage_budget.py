"""The stage budget on memory-forced latency problems (solvers.scheduling.cpsat.stage_budget):
the stages share the budget cumulatively, so what every stage charged adds up to at most the
budget, the default shares leave the main solve its share, and the run repeats; the module
re-solve's device restriction is a restriction."""

from __future__ import annotations

import pytest

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling.bounds import lower_bound
from solvers.scheduling.cpsat.search import main_solve
from solvers.scheduling import CpSatScheduler
from solvers.scheduling.cpsat.options import CpSatOptions, forced_stage_shares
from solvers.scheduling.forced_cuts import memory_forces_cuts
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.module_resolve import _spare_devices, module_problem, modules
from solvers.scheduling.validate import validate_schedule
from tests.solvers.test_module_resolve import _stacked_modules

# 0.14 units with the wall-clock net of a 10-s solve (35 s), far from a busy machine's run here
_OPTIONS = SolveOptions(time_limit_s=10.0, num_workers=1)
_CFG = CpSatOptions(dtime_per_second=0.014)
_BATCH = 0.005  # what one interleaved CP-SAT batch may run past its limit on these small models


def _charges(stats: dict) -> dict[str, float]:
    by_stage: dict[str, float] = {}
    for line in stats["stages"]:
        by_stage[line["stage"]] = by_stage.get(line["stage"], 0.0) + line["dtime"]
    return by_stage


def _assert_within(stats: dict) -> None:
    """The stages before the main solve charged at most the budget, and the main solve at most
    what they left but for its last CP-SAT batch (CP-SAT checks its deterministic limit between
    batches: up to 0.002 units past a limit of 0.014 here)."""
    charges = _charges(stats)
    before = sum(v for k, v in charges.items() if k != "main")
    assert before <= stats["dtime_budget"]
    assert charges.get("main", 0.0) <= max(0.0, stats["dtime_budget"] - before) + _BATCH


def test_the_default_shares_leave_the_main_solve_its_share():
    cfg = CpSatOptions()
    shares = dict(forced_stage_shares(cfg))
    assert list(shares) == ["segment_bound", "pinned_move_bound", "forced_cut_bound", "forced_cut_start", "run_start",
                            "traced_start", "placement_lns", "module_resolve", "part_start", "part_resolve"]
    # the part re-solve has no share of its own: it gets what the start stages before it left
    assert shares.pop("part_resolve") == 0 and all(s > 0 for s in shares.values())
    assert sum(shares.values()) + cfg.main_share <= 1 + 1e-12


@pytest.mark.parametrize("seed", [0, 3])
def test_the_stages_charge_at_most_the_budget_on_a_forced_problem(seed):
    p = _stacked_modules(seed)
    assert memory_forces_cuts(p)
    r = CpSatScheduler(_CFG).solve(p, _OPTIONS)
    assert r.stats["stage_budget"] == "cumulative"
    charges = _charges(r.stats)
    # the stages before the main solve ran (none proved the start optimal first) ...
    assert {"pinned_move_bound", "forced_cut_bound", "placement_lns"} <= set(charges)
    # ... and every charge together, the main solve's included, stays within the budget
    _assert_within(r.stats)
    again = CpSatScheduler(_CFG).solve(p, _OPTIONS)
    assert (again.objective, again.bound, again.solution) == (r.objective, r.bound, r.solution)
    assert again.stats["stages"] == r.stats["stages"]


@pytest.mark.parametrize("cumulative", [True, False])
def test_after_cumulative_stages_the_main_solve_gets_what_is_left_not_a_fifth(cumulative):
    # plain stages (and until session 13 the memory-forced ones) let the main solve take a fifth
    # of the budget after the stages took it all; after cumulative stages it takes what is left
    p = _stacked_modules(3)
    budget = Budget.start(10.0, SCHEDULING)  # 0.7 units, the net 35 s away
    budget.note("stages", budget.total - 0.01)
    stats = {"stage_budget": "cumulative"} if cumulative else {}
    r = main_solve(p, SolveOptions(num_workers=1), budget, CpSatOptions(), heft_schedule(p), lower_bound(p), stats, 0.0)
    assert r.status.value == "FEASIBLE"  # not proved: the main solve used all it was given
    if cumulative:
        assert budget.used <= budget.total + _BATCH
    else:
        assert budget.used > 1.1 * budget.total


@pytest.mark.parametrize("seed", range(3))
def test_a_modules_spare_devices_are_a_restriction_with_its_hint_a_solution(seed):
    p = _stacked_modules(seed)
    sol = heft_schedule(p)
    for m in modules(p, 40):
        sub, hint = module_problem(p, sol, m)
        narrow = _spare_devices(sub, hint, 0)
        assert not validate_schedule(narrow, hint)
        used = set(hint.op_device)
        for d in range(sub.num_devices):
            open_ = any(row[d] >= 0 for row in narrow.durations_cycles)
            assert open_ == (d in used and any(row[d] >= 0 for row in sub.durations_cycles))
            if not open_:  # a closed device shares its class with no other device
                assert narrow.device_class.count(narrow.device_class[d]) == 1
        assert _spare_devices(sub, hint, None) is sub
