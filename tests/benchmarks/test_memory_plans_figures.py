"""benchmarks/memory_plans.py's fast-level columns: a greedy-by-size figure is shown only where
the planner stored a valid one (a kept cycle-time plan's is valid since session 14:
tests/planner/memory/test_stream_greedy_figure.py)."""

from __future__ import annotations

from benchmarks.memory_plans import GREEDY_LEFT_OUT, _fast_figures, _greedy_text, _targets


def test_a_plan_without_a_valid_greedy_by_size_figure_shows_none_and_is_judged_on_the_bound():
    stats = {"fast_peak_bytes": 256, "fast_live_lower_bound_bytes": 256, "fast_peak_greedy_by_size_bytes": None,
             "by_address": {"time_model": {"kept": True}}}
    row = {**_fast_figures(stats), "offsets_status": "FEASIBLE", "tensors": 3}
    assert row["fast_greedy_by_size"] is None and row["fast_greedy_by_size_note"] == GREEDY_LEFT_OUT
    assert _greedy_text(row) == "-" and _targets(row)["peak_target"] is True


def test_a_kept_cycle_time_plan_keeps_its_valid_figure():
    stats = {"fast_peak_bytes": 1_507_328, "fast_live_lower_bound_bytes": 1_507_328,
             "fast_peak_greedy_by_size_bytes": 1_507_328, "by_address": {"time_model": {"kept": True}}}
    row = {**_fast_figures(stats), "offsets_status": "FEASIBLE", "tensors": 3}
    assert "fast_greedy_by_size_note" not in row and _greedy_text(row) == "1,507,328"
    assert _targets(row)["peak_target"] is True


def test_other_plans_keep_their_greedy_by_size_figure_and_are_judged_against_it():
    stats = {"fast_peak_bytes": 300, "fast_live_lower_bound_bytes": 256, "fast_peak_greedy_by_size_bytes": 280,
             "by_address": {"time_model": {"kept": False}}}
    figures = _fast_figures(stats)
    assert figures == {"fast_peak": 300, "fast_live_lb": 256, "fast_greedy_by_size": 280}
    row = {**figures, "offsets_status": "OPTIMAL", "tensors": 3}
    assert _greedy_text(row) == "280" and _targets(row)["peak_target"] is False  # above greedy-by-size
    assert _targets({**row, "fast_peak": 270})["peak_target"] is True
