"""The placement benchmark's pieces: its METIS baseline and its verdicts."""

from __future__ import annotations

import pytest

from solvers.scheduling import SchedulingProblem


def test_metis_baseline_puts_the_heaviest_part_on_the_fastest_device():
    pytest.importorskip("pymetis")
    from benchmarks.placement import metis_objective

    # two independent chains of three ops; device 1 is three times faster. Two parts, one chain
    # each: the chains weigh the same, so part order decides; each chain runs on its own device:
    # 3 * 3 = 9 on the fast one, 3 * 9 = 27 on the slow one: the makespan is 27.
    e = [(0, 1, 8), (1, 2, 8), (3, 4, 8), (4, 5, 8)]
    p = SchedulingProblem(((9, 3),) * 6, e, (1, 1), ((-1, 0), (0, -1)), ((1,),) * 4)
    assert metis_objective(p) == 27


def test_the_summary_says_which_targets_are_met():
    from benchmarks.placement import summary

    row = {"ops": 259, "gap": 0.002, "planner": 10, "metis": 12}
    out = summary({"demo": [row], "cnn": [dict(row, gap=0.05)]})
    assert out["demo_gap"]["met"] and not out["cnn_gap_max"]["met"]
    assert out["better_than_metis"] == {"rows": 2, "met": True}
