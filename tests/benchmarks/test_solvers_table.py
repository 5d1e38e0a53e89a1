"""The solver table: registry names on one problem, refusals as rows."""

from __future__ import annotations

import argparse

import pytest

from benchmarks._common import data_dir
from benchmarks.solvers_table import load_problem, run_row

ROOT = data_dir()
pytestmark = pytest.mark.skipif(not (ROOT / "stg").exists(), reason="shared benchmark data not found")
ARGS = argparse.Namespace(time_limit=1.0, workers=1, seed=0, search="deterministic")


def test_rows_for_every_solver_of_the_family():
    problem = load_problem("stg:50/rand0000.stg@4", ROOT)
    rows = {r["solver"]: r for r in (run_row("stg", problem, n, ARGS)
                                    for n in ("scheduling.heft", "scheduling.portfolio", "placement.greedy"))}
    # 66 is the published optimum of 50/rand0000 on 4 processors (Case50_4_OPT.csv)
    assert rows["scheduling.heft"]["objective"] == 66 and rows["scheduling.heft"]["bound"] is None
    assert rows["scheduling.portfolio"]["status"] == "OPTIMAL" and rows["scheduling.portfolio"]["bound"] == 66
    assert rows["placement.greedy"]["status"] == "refused"
    assert "PlacementProblem" in rows["placement.greedy"]["reason"]


def test_list_search_refuses_the_demo_before_running():
    row = run_row("demo", load_problem("specs/demo.yaml", ROOT), "scheduling.listsearch", ARGS)
    assert row["status"] == "refused" and "fixed placement" in row["reason"]
