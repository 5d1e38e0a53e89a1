"""Quick benchmark smoke test: a handful of public instances must reach their known optima.

Skipped when the shared benchmark data is not present (``<repo>/../shared/benchmarks`` or
``$PLAN_BENCHMARK_DATA``).
"""

from __future__ import annotations

import argparse
import json

import pytest

from benchmarks._common import data_dir, select

ROOT = data_dir()
pytestmark = pytest.mark.skipif(not (ROOT / "stg").exists(), reason="shared benchmark data not found")


def test_stg_known_optima():
    from benchmarks.stg import load_known, run_instance

    # 50/rand0000: 131 on 2 processors, 66 on 4 (Case50_*_OPT.csv)
    for procs, opt in ((2, 131), (4, 66)):
        known = load_known(ROOT, 50, procs)
        assert known["50/rand0000.stg"] == (opt, opt)
        row = run_instance(ROOT, "50/rand0000.stg", procs, known["50/rand0000.stg"], time_limit_s=10,
                           workers=1, seed=0)
        assert row["match"] and row["objective"] == opt and row["proven"], row


def test_stg_bounds_only_rows_parse():
    from benchmarks.stg import load_known

    known = load_known(ROOT, 100, 2)
    assert known["100/rand0012.stg"] == (296, 312)  # "file,processors,lo,hi"


def test_jobshop_known_optima():
    from benchmarks.jobshop import load_catalog, run_instance

    cat = load_catalog(ROOT)
    for name, opt in (("ft06", 55), ("la01", 666), ("la05", 593)):
        assert cat[name]["optimum"] == opt
        row = run_instance(ROOT, cat[name], time_limit_s=20, workers=1, seed=0)
        assert row["objective"] == opt and row["proven"], row


def test_dnn_bert24_matches_the_dp_and_beats_the_expert(tmp_path):
    from benchmarks.dnn import published_results, run_throughput

    pub = published_results(ROOT / "dnn-partitioning" / "..")
    assert pub["LayerGraphs/bert24_inference"]["dp"] == 17.790
    assert pub["LayerGraphs/inceptionv3_inference"]["dp"] is None
    args = argparse.Namespace(time_limit=1.5, workers=1, seed=0, scale=1e5, search="deterministic")
    row = run_throughput(ROOT, "LayerGraphs/bert24_inference", args, pub)
    # the DP's contiguous optimum is 17.790 ms; ours may not be worse (the greedy hint already is)
    assert row["contig_max_load"] <= 17.790 * 1.001
    assert row["within_1pct_of_dp"] and row["not_worse_than_expert"] and row["not_worse_than_pipedream"]
    assert row["contig_bound"] <= row["contig_max_load"]
    assert abs(row["expert_max_load"] - 20.084) < 0.001  # the human expert's split, scored by max-load
    json.dumps(row)


def test_select_subset():
    assert select(["a", "b", "c", "d"], "2") == ["a", "c"]
    assert select(["ft06", "la01"], "la*") == ["la01"]
