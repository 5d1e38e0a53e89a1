"""A kept cycle-time plan's greedy-by-size figure is a valid packing of its pieces (memory.json
and report.md): never below the live-bytes bound, and offsets that keep apart every two pieces
that meet on the point axis or in the plan's cycles."""

from __future__ import annotations

import yaml

from benchmarks.memory_plans import two_branch_spec
from planner.memory.streams import _conflict_greedy_peak
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec
from solvers.memory.levels import fast_pieces
from solvers.memory.levels.problem import LevelProblem, LevelSolution
from solvers.memory.levels.stream_offsets import greedy_by_size_conflict_offsets


def test_a_kept_cycle_time_plans_greedy_figure_is_a_packing_at_or_above_the_live_bound(tmp_path):
    # Two branches of 6 layers on an edge NPU's two streams: the cycle-time model's plan is
    # kept, its peak at the live bound 1,507,328. The figure used to pack the pieces' cycle
    # lifetimes alone and read 1,048,576, below the bound: no packing at all.
    path = tmp_path / "two-branches-25.yaml"
    path.write_text(yaml.safe_dump(two_branch_spec(6)))
    spec = load_spec(path)
    outcome = run(spec, time_limit_s=spec.time_limit_s, workers=spec.workers, seed=spec.seed)
    (st,) = (dp.stats for dp in outcome.memory.memory.devices.values())
    assert st["by_address"]["time_model"]["kept"]
    assert st["fast_live_lower_bound_bytes"] == st["fast_peak_bytes"] == 1_507_328
    assert st["fast_peak_greedy_by_size_bytes"] == 1_507_328
    write_plan_dir(outcome, spec, tmp_path / "out", numeric="off")  # verified on the way out
    report = (tmp_path / "out" / "report.md").read_text()
    assert "greedy-by-size offsets on the same buffers need 1.44 MiB." in report


def _two_stream_case():
    # Ops 0 (stream 0) and 1 (stream 1) write 8-byte tensors fast that nobody reads, at the
    # same cycles; op 2 (stream 0) writes another after op 0. On the point axis the three
    # pieces are disjoint (one point each), so point-axis greedy packs all at 0 (8 bytes).
    p = LevelProblem((4, 4, 4), ((), (), ()), ((0,), (1,), (2,)), (8, 8, 8), (32, 99), (4, 1),
                     op_streams=(0, 1, 0), live_out=())
    s = LevelSolution(((True,), (True,), (True,)), ((False,), (False,), (False,)), (), (0, 0, 4), (4, 4, 4),
                      fast_offsets=(0, 8, 0))
    return p, s


def test_pieces_live_at_once_in_cycles_are_packed_apart():
    p, s = _two_stream_case()
    offsets = greedy_by_size_conflict_offsets(p, s)
    pieces = fast_pieces(p, s)
    assert len(pieces) == 3 and offsets[0] != offsets[1]  # ops 0 and 1 run at once: apart
    peak = _conflict_greedy_peak(p, s, 1)
    assert peak == 16 and peak >= max(o + 8 for o in offsets)
