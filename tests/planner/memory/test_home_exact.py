"""A home level exactly the size of the tensors homed there plans, replays and verifies: the
N-level problem's reserve (room to round copies up to the alignment) never holds back the
bytes of the home copies, which hold their level for the whole plan."""

from __future__ import annotations

import pytest

from planner.memory.hierarchy_bridge import build_hierarchy_problem
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec

EXACT = "tests/data/specs/memory-home-exact.yaml"
ROOMY = "tests/data/specs/memory-3level.yaml"


@pytest.fixture(scope="module")
def exact():
    spec = load_spec(EXACT)
    return spec, run(spec)


def test_the_home_level_keeps_its_homed_bytes_and_the_others_their_reserve(exact):
    spec, outcome = exact
    bridge = build_hierarchy_problem(spec.graph, spec.hardware, outcome.plan, spec.hardware.devices[0], spec.memory)
    # sram 64 KiB less 32 alignments of 64 B; dram is main (the device's capacity); host holds w
    # (4 KiB), though its reserve alone would leave 4096 - min(4096 // 8, 2048) = 3,584 B
    assert bridge.problem.capacity_bytes == (64 * 1024 - 2048, 1024 * 1024, 4096)


def test_a_home_exactly_its_tensors_size_plans_as_a_roomy_one_and_verifies(exact, tmp_path):
    spec, outcome = exact
    roomy = run(load_spec(ROOMY))
    assert outcome.memory_choice == roomy.memory_choice == "memory plan"
    placed = lambda o: [(p.name, p.device, p.start_cycle, p.duration_cycles) for p in o.plan.ops]  # noqa: E731
    assert placed(outcome) == placed(roomy) and outcome.plan.makespan_cycles == roomy.plan.makespan_cycles
    host = [(b.name, b.address, b.size_bytes, b.preloaded) for b in outcome.memory_plan.devices["npu0"].buffers
            if b.level == "host"]
    assert host == [("m/w", 0, 4096, True)]
    assert outcome.simulation.valid and outcome.simulation.peak_bytes["npu0"]["host"] == 4096
    verdict = write_plan_dir(outcome, spec, tmp_path / "out")  # replays and verifies every file
    assert verdict.simulation.makespan_cycles == outcome.plan.makespan_cycles
