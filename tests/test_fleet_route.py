"""A fleet spec is a route of the pipeline driver, like the objectives of a model spec."""

from __future__ import annotations

import dataclasses

import pytest

import planner
from planner.errors import SpecError
from planner.fleet import FleetResult, load_fleet_spec, solve_fleet
from planner.pipeline import OBJECTIVES, FleetRoute, load, route_name, run
from planner.spec import Spec


def _decisions(result: FleetResult) -> dict:
    """What a fleet's plan decides, without the wall times."""
    return {name: dataclasses.replace(m, wall_time_s=0.0) for name, m in result.modes.items()}


def test_run_plans_a_fleet_spec_as_solve_fleet_does():
    spec = load("specs/fleet-variants.yaml")
    assert route_name(spec) == "fleet" and isinstance(OBJECTIVES["fleet"], FleetRoute)
    via_driver = run("specs/fleet-variants.yaml", time_limit_s=5, workers=1, seed=3)
    direct = solve_fleet(load_fleet_spec("specs/fleet-variants.yaml"), time_limit_s=5, workers=1, seed=3)
    assert isinstance(via_driver, FleetResult)
    assert (via_driver.chosen, via_driver.variants) == (direct.chosen, direct.variants)
    assert _decisions(via_driver) == _decisions(direct)


def test_load_tells_a_fleet_spec_from_a_model_spec():
    assert isinstance(load("specs/taskgraph.yaml"), Spec) and route_name(load("specs/taskgraph.yaml")) == "latency"
    with pytest.raises(SpecError, match="unknown ISA profile"):
        load({"fleet": {"pools": [{"name": "p", "profile": "tpu-v9"}],
                        "tenants": [{"name": "a", "rate": 1, "requirements": {"ops": 1}}]}})


def test_the_plan_api_refuses_a_fleet_spec_clearly():
    with pytest.raises(SpecError, match="fleet spec has no single plan.*FleetResult"):
        planner.solve("specs/fleet-colocation.yaml")
