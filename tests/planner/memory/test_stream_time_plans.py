"""plan solve keeps the cycle-time model's plan (solvers/memory/levels/stream_time.py) when it is
strictly shorter: lowered with its own offsets, replayed from the binaries, numerically equal,
and the report and memory.json say what it is."""

from __future__ import annotations

import yaml

from benchmarks.memory_plans import two_branch_spec
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric


def test_two_short_branches_get_the_cycle_time_optimum(tmp_path):
    # Two branches of 2 layers (a 256 KiB weight and a relu each) on an edge NPU's two streams.
    # The level solver's plan timed by its own offsets takes 47,421 device cycles; the by-address
    # candidates do not beat it. The cycle-time model proves 43,161 for the merged order, and the
    # several-stream relaxation (every order and stream) proves the same bound, so the plan is OPTIMAL.
    spec_file = tmp_path / "two-branches.yaml"
    spec_file.write_text(yaml.safe_dump(two_branch_spec(2)))
    spec = load_spec(spec_file)
    outcome = run(spec, time_limit_s=10, workers=1)  # InternalError if the replay disagrees
    assert outcome.memory_choice == "memory plan"
    figures = outcome.memory.memory.devices["npu0"].stats["by_address"]
    model = figures["time_model"]
    assert model["kept"] and model["status"] == "OPTIMAL"
    assert figures["level_plan_device_cycles"] == 47_421
    assert figures["kept_device_cycles"] == model["device_cycles"] == model["model_bound_device_cycles"] == 43_161
    assert outcome.plan.makespan_cycles == outcome.simulation.makespan_cycles == 43_161
    assert outcome.plan.status == "OPTIMAL" and outcome.plan.bound == 43_161
    assert compare_numeric(outcome.binaries, spec.graph).ok
    write_plan_dir(outcome, spec, tmp_path / "out", numeric="off")  # the verifier checks memory.json's figures
    report = (tmp_path / "out" / "report.md").read_text()
    assert "kept the cycle-time model's plan (offsets in the model; OPTIMAL for the fixed merged op order" in report
    assert "43161 device cycles against 47421" in report
