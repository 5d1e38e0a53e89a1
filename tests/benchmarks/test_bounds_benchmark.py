"""The bounds benchmark's rows, and the dnn benchmark's reading of the experts' splits.

Skipped when the shared benchmark data is not present.
"""

from __future__ import annotations

import argparse

import pytest

from benchmarks._common import data_dir

ROOT = data_dir()
pytestmark = pytest.mark.skipif(not (ROOT / "dnn-partitioning").exists(), reason="shared benchmark data not found")


def test_bounds_row_on_a_dnn_input():
    from benchmarks.bounds import instances, measure

    chosen = dict(instances(ROOT))
    args = argparse.Namespace(repeats=1, no_solve=True)
    # BERT-24 layers: 32 ops, 5 accelerators of 600 MiB; its weights (1.8 GB) need 3 of them
    # on the critical path, so the memory path (96.312 ms) beats the critical path (92.406),
    # and a schedule of exactly that length is known (the planner's HEFT finds it).
    row = measure("dnn/LayerGraphs/bert24_inference", chosen["dnn/LayerGraphs/bert24_inference"](), args,
                  {"dnn/LayerGraphs/bert24_inference": 96_312_000})
    assert row["old_bound"] == 92_406_000
    assert row["new_bound"] == 96_312_000 and row["new_from"] == "memory_path"
    assert row["gap_new_static"] == 0.0 and row["gap_old"] > 0.04


def test_experts_splits_break_the_latency_inputs_memory():
    from benchmarks.dnn import expert_misfit
    from planner.importers.dnn_partitioning import read_dnn_json, read_expert_split

    rel = "LayerGraphs/resnet50_inference"
    split_path = ROOT / "dnn-partitioning" / "human-experts" / "resnet50_inference_expert.json"
    for kind, fits in (("throughput-inputs", True), ("latency-inputs", False)):
        w = read_dnn_json(ROOT / "dnn-partitioning" / kind / f"{rel}.json")
        misfit = expert_misfit(w, read_expert_split(split_path, w))
        assert (misfit is None) == fits, misfit
    assert "7.08 GiB" in misfit and "2.00 GiB" in misfit
