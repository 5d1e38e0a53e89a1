"""Random small graphs on a four-level device through memory planning (issue 14): splits, several
streams, several devices and per-path DMA rates, each plan replayed and numerically equal.

The graphs are :func:`tests.planner.memory.test_memory_property.memory_specs`' on a device whose
hierarchy is sram over l2 over lpddr (main) over host, with one or two streams, sometimes a
slow l2-lpddr DMA path and sometimes the input homed in host memory (one memory-planned
device only: a device running explicit-cycle ops is not memory-planned, and homes need one).
``MEMORY_PROPERTY_EXAMPLES=500`` runs more examples.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.pipeline import run
from tests.planner.memory.test_memory_property import assert_every_plan_computes_the_reference, memory_specs


@st.composite
def four_level_specs(draw):
    spec = draw(memory_specs())
    device = spec["hardware"]["devices"][0]
    sram = device["memory"][0]
    device["memory"] = [sram, {"name": "l2", "capacity": draw(st.sampled_from(["24 KiB", "96 KiB"])),
                               "bandwidth": "48 GB/s"},
                        device["memory"][1], {"name": "host", "capacity": "1 GiB", "bandwidth": "2 GB/s"}]
    device["main"] = "lpddr"
    device["dma_paths"] = [["sram", "l2"], ["l2", "lpddr"], ["sram", "lpddr"], ["lpddr", "host"]]
    device["streams"] = draw(st.integers(1, 2))
    if draw(st.booleans()):
        device["dma_rates"] = [{"between": ["l2", "lpddr"], "bandwidth": draw(st.sampled_from(["1 GB/s", "64 GB/s"]))}]
    if device["count"] == 1 and len(spec["models"]) == 1 and draw(st.booleans()):
        spec["memory"]["home"] = {"m/x": "host"}
    return spec


@settings(max_examples=int(os.environ.get("MEMORY_PROPERTY_EXAMPLES", 10)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(four_level_specs())
def test_random_four_level_plans_replay_and_compute_the_same_numbers(spec):
    outcome = run(spec)  # raises InternalError if the replay disagrees with the plan
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    assert outcome.plan.bound <= outcome.plan.makespan_cycles
    assert_every_plan_computes_the_reference(outcome, spec)
