"""plan solve keeps a several-stream plan timed by offsets packed for its cycles when it is
strictly shorter (planner.memory.streams): replayed from the binaries, numerically equal."""

from __future__ import annotations

import yaml

from benchmarks.memory_plans import two_branch_spec
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric


def test_two_branches_run_side_by_side_and_compute_the_same_numbers(tmp_path):
    # Two branches of 6 layers (a 256 KiB weight and a relu each) on an edge NPU's two streams.
    # Under the point-axis memory order a branch's fast allocations wait for the other's frees
    # at shared addresses; the plan kept here is the greedy for half the SRAM with its slow
    # weight reads spread, timed by offsets that keep the branches apart.
    spec_file = tmp_path / "two-branches.yaml"
    spec_file.write_text(yaml.safe_dump(two_branch_spec(6)))
    spec = load_spec(spec_file)
    outcome = run(spec, time_limit_s=4, workers=1)  # InternalError if the replay disagrees
    assert outcome.memory_choice == "memory plan"
    stats = outcome.memory.memory.devices["npu0"].stats
    figures = stats["by_address"]
    assert figures["kept_device_cycles"] < figures["level_plan_device_cycles"]
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    assert outcome.plan.makespan_cycles < outcome.memory_baselines["all in main memory"]
    assert outcome.plan.bound <= outcome.plan.makespan_cycles
    assert compare_numeric(outcome.binaries, spec.graph).ok
