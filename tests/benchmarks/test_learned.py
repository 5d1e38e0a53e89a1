"""benchmarks/learned.py runs end to end on a small generated transformer and reports sane rows."""

from __future__ import annotations

import argparse
import json

from benchmarks.learned import _transformer, run_graph


def test_run_graph_on_a_small_transformer():
    args = argparse.Namespace(episodes=16, seeds=2, seed=0, learned_cap=120.0, time_limit=1.0, workers=1,
                              search="deterministic")
    row = run_graph("transformer-1", _transformer(1), args)
    assert [r["seed"] for r in row["learned_runs"]] == [0, 1]
    assert all(r["episodes"] <= 16 for r in row["learned_runs"])
    # the exact planner starts from HEFT and proves its bound; no learned schedule beats that bound
    assert row["exact"] <= row["heft"]
    assert row["exact_bound"] <= row["learned_best"] <= row["learned_median"]
    json.dumps(row)
