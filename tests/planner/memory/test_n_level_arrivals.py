"""A linked device's N-level plan re-solved under arrivals, tails and send deadlines (issue 14)."""

from __future__ import annotations

from planner.memory.mixed_assemble import N_LEVELS, HierarchyLevels, assemble_mixed
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from solvers.memory.levels import TransferKind

SPEC = "tests/data/specs/memdevices/four-level-arrivals.yaml"


def test_the_plan_that_sees_the_arrival_beats_the_plan_made_alone_hand_checked(choices):
    # edge0's act0 and act3 take 3,856 each, each 32 KiB transfer 3,048: x arrives at 6,904.
    # Alone, npu0's N-level plan fetches x from dram to l2 during pre (8,192 device cycles on its
    # own); re-timed with the arrival that fetch runs after it, 50 + 2,048 (the DMA's latency and
    # 32 KiB at 16 B/cycle) + 2,048 for act1: 21,026.
    # Re-solved under the arrival, act1 reads x in place at dram (2,048) and writes h at l2
    # (1,024); act2 reads h at l2 and writes the sent y at dram: 6,904 + 3,072 + 3,072 + 3,048 +
    # 3,856 = 19,952, against 22,000 in main memory.
    spec = load_spec(SPEC)
    outcome = run(spec)
    assert outcome.plan.makespan_cycles == 6904 + 3072 + 3072 + 3048 + 3856 == 19952
    assert outcome.memory_baselines["all in main memory"] == 22000
    npu = outcome.memory.cross_device["npu0"]
    assert npu.plan == f"{N_LEVELS} heads/tails" and npu.n_level_cycles == 8192
    (args, chosen), = choices
    spine, graph, hardware, candidates, alignment = args[:5]
    alone = candidates["npu0"][N_LEVELS]
    x = alone.bridge.problem.tensor_names.index("a/x@edge0->a/act1")
    assert [(m.kind, m.src_level, m.dst_level, m.trigger_op) for m in alone.solution.moves if m.tensor == x] == [
        (TransferKind.PREFETCH, 2, 1, -1)]
    assert assemble_mixed(spine, graph, hardware, {"npu0": alone}, alignment)[0].makespan_cycles == 21026
    kept = chosen.levels["npu0"]
    assert isinstance(kept, HierarchyLevels) and not [m for m in kept.solution.moves if m.tensor == x]
    assert kept.stats["heads_tails_status"] == "OPTIMAL"
    ops = {o.name: (o.device, o.start_cycle, o.duration_cycles) for o in outcome.plan.ops}
    assert ops["a/act1"] == ("npu0", 6904, 3072) and ops["a/act2"] == ("npu0", 9976, 3072)
    assert ops["a/act3"] == ("edge0", 16096, 3856)
    assert compare_numeric(outcome.binaries, spec.graph, seed=0).ok


def test_the_plan_directory_verifies_and_the_report_names_the_re_solve(tmp_path):
    # write_plan_dir verifies the directory (every file against the replay) as plan solve does.
    spec = load_spec(SPEC)
    verdict = write_plan_dir(run(spec), spec, tmp_path / "out")
    assert verdict.plan.makespan_cycles == 19952 and verdict.numeric.comparison.ok
    report = (tmp_path / "out" / "report.md").read_text()
    assert "- npu0: its plan over all its levels re-solved under the other devices' arrivals" in report


def test_the_n_level_candidate_is_offered_with_a_gang_and_the_gang_starts_on_one_cycle():
    # g0 (npu0) and g1 (edge0) form a gang: the whole plan's re-timing starts both when the later
    # can start (g0 after pre, at 4,096); npu0 still uses its N-level plan re-solved under x's
    # arrival, and the replayed binaries agree (run() replays and checks the gang).
    spec = load_spec("tests/data/specs/memdevices/four-level-gang.yaml")
    assert spec.gangs == (("a/g0", "a/g1"),)
    outcome = run(spec)
    assert outcome.memory.cross_device["npu0"].plan == f"{N_LEVELS} heads/tails"
    ops = {o.name: o.start_cycle for o in outcome.plan.ops}
    assert ops["a/g0"] == ops["a/g1"] == 4096
    assert outcome.plan.makespan_cycles == 19952 < outcome.memory_baselines["all in main memory"] == 22000
    assert compare_numeric(outcome.binaries, spec.graph, seed=0).ok
