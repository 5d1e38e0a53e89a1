"""benchmarks/memory_plans.py's fast-level columns: a greedy-by-size figure is shown only where it is valid."""

from __future__ import annotations

import yaml

from benchmarks.memory_plans import GREEDY_LEFT_OUT, _fast_figures, _greedy_text, _targets, run_one, two_branch_spec


def test_a_kept_cycle_time_plan_has_no_greedy_by_size_figure(tmp_path):
    # 25 ops on an edge NPU's two streams: the cycle-time model's plan is kept, its fast peak
    # 1,507,328 bytes is the live bound. The stats' greedy-by-size packs the pieces' cycle
    # lifetimes only and reads 1,048,576, below the bound: no packing at all, so it is left out
    # (and the peak target, which compares with it, is judged on the bound alone).
    spec = tmp_path / "two-branches-25.yaml"
    spec.write_text(yaml.safe_dump(two_branch_spec(6)))
    row = run_one("two-branches-25-ops", spec, None, numeric=False)
    assert row["time_model_kept"]
    assert row["fast_peak"] == row["fast_live_lb"] == 1_507_328
    assert row["fast_greedy_by_size"] is None and row["fast_greedy_by_size_note"] == GREEDY_LEFT_OUT
    assert _greedy_text(row) == "-"
    assert _targets(row)["peak_target"] is True


def test_other_plans_keep_their_greedy_by_size_figure_and_are_judged_against_it():
    stats = {"fast_peak_bytes": 300, "fast_live_lower_bound_bytes": 256, "fast_peak_greedy_by_size_bytes": 280,
             "by_address": {"time_model": {"kept": False}}}
    figures = _fast_figures(stats)
    assert figures == {"fast_peak": 300, "fast_live_lb": 256, "fast_greedy_by_size": 280}
    row = {**figures, "offsets_status": "OPTIMAL", "tensors": 3}
    assert _greedy_text(row) == "280" and _targets(row)["peak_target"] is False  # above greedy-by-size
    assert _targets({**row, "fast_peak": 270})["peak_target"] is True
