"""Fleet planning is reproducible: same spec, seed and worker count => same allocation bytes."""

from __future__ import annotations

import pytest

import json
import random

from planner.fleet import load_fleet_spec, solve_fleet
from planner.fleet.report import allocation_dict
from tests.determinism import assert_not_stopped_by_the_clock


def generated_spec(n_tenants: int = 60, seed: int = 1) -> dict:
    """Random tenants (ops, io, storage) on two pools of different sizes."""
    rng = random.Random(seed)
    tenants = [{"name": f"m{k:03d}", "rate": "1/s", "replicas": rng.choice((1, 1, 2)),
                "requirements": {"ops": rng.randint(2_000, 30_000), "io": f"{rng.randint(1, 30)} GB",
                                 "storage": f"{rng.randint(1, 12)} GB"}}
               for k in range(n_tenants)]
    return {"version": 1, "fleet": {
        "pools": [{"name": "s", "profile": "generic", "count": 12,
                   "capacity": {"ops": 100_000, "io": "100 GB/s", "storage": "32 GB"}},
                  {"name": "l", "profile": "generic", "count": 8,
                   "capacity": {"ops": 200_000, "io": "150 GB/s", "storage": "64 GB"}}],
        "tenants": tenants}}


@pytest.mark.usefixtures("wide_net")
def test_generated_fleet_gives_the_same_allocation_twice():
    spec = load_fleet_spec(generated_spec())
    runs = [solve_fleet(spec, time_limit_s=2.0, workers=2, seed=7) for _ in range(2)]
    assert_not_stopped_by_the_clock(*(m.stats.get("stopped_by") for r in runs for m in r.modes.values()))
    assert runs[0].solver_summary == {"search": "deterministic", "stopped_by": "deterministic_budget",
                                      "reproducible": True}
    a, b = (json.dumps(allocation_dict(r), indent=2, sort_keys=True) for r in runs)
    assert a == b
    # Not trivial: the baselines miss the bounds, so every budgeted stage ran (column generation,
    # diving and the integer master; local search, re-packing and CP-SAT), and the budget, not the clock,
    # ended them.
    power, spread = runs[0].modes["power"], runs[0].modes["spread"]
    assert power.baseline_objective > power.bound and spread.baseline_objective > spread.bound
    assert [s["stage"] for s in power.stats["stages"]] == ["column_generation", "dive", "integer_master"]
    assert [s["stage"] for s in spread.stats["stages"]] == ["local_search", "repack", "local_search", "cpsat"]
    assert all(m.stats["stopped_by"] == "deterministic_budget" for m in runs[0].modes.values())
    assert spread.objective < spread.baseline_objective
