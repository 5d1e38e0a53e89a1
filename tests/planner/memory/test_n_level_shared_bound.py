"""The N-level plan bound under shared bandwidth, end to end: the report's bound on the shared
four-level spec sees the host traffic every plan carries."""

from __future__ import annotations

from pathlib import Path

from planner.pipeline import run
from planner.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]


def test_host_weights_bound_the_shared_four_level_plan_by_their_host_traffic():
    # tests/data/specs/memory-4level-host-shared.yaml: four 16 MiB host weights at 15 B/cycle,
    # 4 x 1,118,481.07 = 4,473,924.3 device cycles of host time in any plan. Before, the plan
    # bound was the unshared relaxation's 2,436,798 device cycles (2,320,760 on the timeline)
    # against a plan of 4,261,181; now 4,474,152 device cycles (host time plus the ops that
    # cannot overlap it), a gap below 0.01%.
    spec = load_spec(ROOT / "tests" / "data" / "specs" / "memory-4level-host-shared.yaml")
    outcome = run(spec, time_limit_s=2, workers=1)
    stats = outcome.memory.memory.devices["tpu0"].stats
    assert stats["plan_bound_device_cycles"] == 4_474_152
    assert 4_473_925 <= stats["plan_bound_device_cycles"] <= stats["level_makespan_device_cycles"]
    assert outcome.plan.bound <= outcome.plan.makespan_cycles and outcome.plan.gap < 1e-4
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
