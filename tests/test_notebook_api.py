"""The notebook and script API: a short repr, the HTML display, to_frame, planner.write and planner.read."""

from __future__ import annotations

import json
import sys

import pytest

import planner
from planner.errors import VerificationError
from planner.plan import PlacedOp, Plan
from tests.planner.report.html_figures import elements
from tests.test_end_to_end import FORK_JOIN


@pytest.fixture(scope="module")
def solved() -> Plan:
    return planner.solve(FORK_JOIN, time_limit_s=5, workers=1)


def test_repr_is_one_short_line_whatever_the_plan_size():
    ops = tuple(PlacedOp(f"model/layer{i}/matmul", f"d{i % 4}", 0, i, 1) for i in range(5_000))
    plan = Plan("big", "latency", "FEASIBLE", 5_000, 4_900, 0.02, 5_000, 10**9, ops, ())
    text = repr(plan)
    assert "\n" not in text and len(text) < 150
    assert text == "<Plan 'big' FEASIBLE: latency 5,000 cycles, bound 4,900, gap 2.00%, 5,000 ops on 4 devices>"


def test_the_html_display_has_the_figures_and_a_bar_per_op(solved):
    page = solved._repr_html_()
    found = elements(page)
    cards = {a["data-field"]: a["data-value"] for _, a in found if "data-field" in a}
    assert cards["objective"] == str(solved.objective) == "18" and cards["ops"] == str(len(solved.ops))
    assert sum(int(a["data-count"]) for _, a in found if a.get("class") == "bar op") == len(solved.ops)
    assert "<script" not in page


def test_to_frame_has_one_row_per_op(solved):
    pytest.importorskip("pandas", reason="to_frame needs pandas (the `notebook` extra)")
    frame = solved.to_frame()
    assert list(frame["name"]) == [o.name for o in solved.ops]
    assert list(frame["end_cycle"]) == [o.end_cycle for o in solved.ops]
    assert set(frame.columns) >= {"device", "stream", "start_cycle", "duration_cycles", "start_us", "model"}


def test_to_frame_without_pandas_names_the_extra(solved, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    with pytest.raises(ImportError, match=r"plan\[notebook\]"):
        solved.to_frame()


def test_write_then_read_gives_the_verified_plan(solved, tmp_path):
    out = planner.write(solved, tmp_path / "fj")
    assert (out / "report.html").is_file() and (out / "trace.json").is_file()
    back = planner.read(out)
    assert back.to_dict() == solved.to_dict()
    copy = planner.write(back, tmp_path / "copy")  # a read plan is written by copying its verified files
    assert (copy / "plan.json").read_bytes() == (out / "plan.json").read_bytes()
    assert (copy / "report.html").read_bytes() == (out / "report.html").read_bytes()


def test_read_refuses_a_tampered_directory_or_says_it_did_not_verify(solved, tmp_path):
    out = planner.write(solved, tmp_path / "fj")
    doc = json.loads((out / "plan.json").read_text())
    doc["objective"] -= 1
    (out / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(VerificationError, match="plan.json"):
        planner.read(out)
    with pytest.warns(planner.UnverifiedPlanWarning, match="WITHOUT verification"):
        assert planner.read(out, verify=False).objective == solved.objective - 1


def test_write_refuses_a_plan_whose_run_is_not_kept(tmp_path):
    stranger = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9, (PlacedOp("a", "d0", 0, 0, 5),), ())
    with pytest.raises(ValueError, match="binaries are not kept"):
        planner.write(stranger, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_write_keeps_a_plans_run_exactly_as_long_as_the_plan_lives(solved, tmp_path):
    import gc

    later = [planner.solve(FORK_JOIN, time_limit_s=5, workers=1) for _ in range(5)]  # more solves since `solved`
    assert (planner.write(solved, tmp_path / "first") / "plan.json").is_file()
    kept = len(planner._origins)
    del later
    gc.collect()
    assert len(planner._origins) == kept - 5  # the five later plans' runs went with them
