"""report.md's own figures agree with the files (issue 9): per-level peaks, op counts, one name per baseline."""

from __future__ import annotations

import json

import pytest

from planner.report.markdown import format_bytes
from tests.fuzz.plan_dirs import MAX_LOAD_SPEC, _solve, _spec_dict
from tests.planner.verify.report_figures import check_report, sections, tables


@pytest.fixture(scope="module")
def memory_cnn(tmp_path_factory):
    return _solve(_spec_dict("memory-cnn"), tmp_path_factory.mktemp("report") / "memory-cnn")


def test_memory_cnn_report_compares_each_level_with_its_own_capacity(memory_cnn):
    check_report(memory_cnn)
    parts = sections((memory_cnn / "report.md").read_text())
    (row,) = tables(parts["Devices"])[0][1:]
    alloc = json.loads((memory_cnn / "allocation.json").read_text())["devices"]["npu0"]["memory"]
    # sram against sram's 4 MiB, lpddr against lpddr's 4 GiB: never their sum against main memory.
    assert row[-1] == (f"sram {format_bytes(alloc['sram']['reserved_bytes'])} of 4.00 MiB; "
                       f"lpddr {format_bytes(alloc['lpddr']['reserved_bytes'])} of 4.00 GiB")
    assert row[4] == "17 ops (68 instances)"  # 17 ops, each split in 4 portions


def test_memory_cnn_report_names_each_baseline_once_with_one_number(memory_cnn):
    text = (memory_cnn / "report.md").read_text()
    memory = json.loads((memory_cnn / "memory.json").read_text())
    assert "all in lpddr" not in text  # the level solver's own all-in-slow figure is not a second baseline
    for name, makespan in memory["baselines"].items():
        for line in text.splitlines():
            if line.startswith(f"| {name} |") or line.startswith(f"| planner ({name}) |"):
                assert f"| {makespan} |" in line, line  # the same number wherever the name appears


def test_max_load_report(tmp_path):
    out = _solve(MAX_LOAD_SPEC, tmp_path / "max-load")
    check_report(out)
    baselines = tables(sections((out / "report.md").read_text())["Baselines, same run"])[0]
    assert [r[0] for r in baselines[1:]] == ["cpsat-placement", "greedy (linear split + local search)",
                                             "linear split", "one accelerator", "lower bound"]
