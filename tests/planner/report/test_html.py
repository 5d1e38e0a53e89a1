"""report.html: its figures are the plan directory's, its size is bounded, and a real browser opens it cleanly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from planner.report.html import busy_fraction, live_bytes_series, render_html
from tests.planner.report.html_figures import check_html_report, elements

ROOT = Path(__file__).resolve().parents[3]


def _doc(ops: int, *, devices: int = 2) -> dict:
    """A plan document of ``ops`` back-to-back ops of one cycle spread over ``devices`` devices."""
    names = [f"d{i}" for i in range(devices)]
    placed = [{"name": f"op{i}", "device": names[i % devices], "stream": 0, "start_cycle": i // devices,
               "duration_cycles": 1} for i in range(ops)]
    return {"spec": "synthetic", "objective_kind": "latency", "status": "FEASIBLE", "objective": ops // devices + 1,
            "bound": ops // devices, "gap": 0.01, "makespan_cycles": ops // devices + 1, "clock_hz": 10**9,
            "baselines": [{"solver": "s", "status": "FEASIBLE", "objective": ops // devices + 1, "bound": None}],
            "resources": {}, "devices": [{"name": n, "kind": "k", "profile": "p", "streams": 1} for n in names],
            "links": [], "ops": placed, "transfers": []}


def test_a_large_plan_is_drawn_in_bounded_size_with_every_op_counted():
    doc = _doc(10_000)
    page = render_html(doc, {"devices": {}})
    bars = [a for tag, a in elements(page) if tag == "rect" and a.get("class") == "bar op"]
    assert sum(int(a["data-count"]) for a in bars) == 10_000  # aggregated, none lost
    assert len(bars) < 2_000 and len(page) < 1_000_000
    assert render_html(doc, {"devices": {}}) == page  # the same plan, the same bytes


def test_a_small_plan_draws_one_bar_per_op_at_its_cycles():
    doc = _doc(6)
    bars = [a for tag, a in elements(render_html(doc, {"devices": {}})) if a.get("class") == "bar op"]
    assert sorted((int(a["data-start"]), int(a["data-end"])) for a in bars) == [(0, 1), (0, 1), (1, 2), (1, 2),
                                                                                 (2, 3), (2, 3)]
    assert {a["data-count"] for a in bars} == {"1"}


def test_live_bytes_and_busy_fraction():
    buffers = [{"level": "l", "size_bytes": 8, "start_cycle": 2, "end_cycle": 6, "view": False},
               {"level": "l", "size_bytes": 8, "start_cycle": 2, "end_cycle": 6, "view": True},  # a view: no bytes
               {"level": "m", "size_bytes": 99, "start_cycle": 0, "end_cycle": 9, "view": False},
               {"level": "l", "size_bytes": 4, "start_cycle": 6, "end_cycle": 7, "view": False}]
    assert live_bytes_series(buffers, "l") == ((2, 6, 7), (8, 4, 0))
    assert busy_fraction([(5, 10), (0, 2), (1, 3)], 20) == 0.4


def test_the_page_draws_dma_engines_and_memory_against_capacity(tmp_path):
    doc = _doc(4, devices=1)
    memory = {"devices": {"d0": {"transfers": [
        {"kind": "prefetch", "tensor": "w", "size_bytes": 64, "start_cycle": 0, "end_cycle": 1},
        {"kind": "evict", "tensor": "y", "size_bytes": 32, "start_cycle": 2, "end_cycle": 3}]}}}
    allocation = {"devices": {"d0": {"memory": {"sram": {"capacity_bytes": 100}}, "buffers": [
        {"level": "sram", "size_bytes": 64, "start_cycle": 0, "end_cycle": 3, "view": False}]}}}
    found = elements(render_html(doc, allocation, memory))
    assert [a["class"] for tag, a in found if a.get("class", "").startswith("bar dma")] == ["bar dma-in", "bar dma-out"]
    assert [(a["data-peak"], a["data-limit"]) for tag, a in found if a.get("class") == "usage"] == [("64", "100")]
    assert any(a.get("class") == "limit" for tag, a in found)  # a capacity near the peak is drawn


def test_every_figure_of_a_memory_planned_report_is_the_files(memory_plan_dir):
    check_html_report(memory_plan_dir)
    page = (memory_plan_dir / "report.html").read_text()
    assert page.count('class="bar dma-') > 0  # memory-mlp moves tensors with DMAs


def _chromium() -> str | None:
    for name in (os.environ.get("PLAN_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _open_in_browser(page: Path) -> tuple[str, list[str]]:
    """The DOM Chromium built from ``page`` and the console messages it logged."""
    run = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                          "--v=0", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, [line for line in run.stderr.splitlines() if ":CONSOLE" in line]


browser = pytest.mark.skipif(_chromium() is None, reason="no Chromium found (install the `chromium` package, or "
                                                         "set PLAN_CHROMIUM to a Chromium or Chrome executable)")


@pytest.mark.browser
@browser
def test_chromium_opens_the_report_without_console_messages_and_draws_every_op(memory_plan_dir):
    dom, console = _open_in_browser(memory_plan_dir / "report.html")
    assert console == []
    import json

    plan = json.loads((memory_plan_dir / "plan.json").read_text())
    found = elements(dom)
    assert sum(int(a["data-count"]) for tag, a in found if a.get("class") == "bar op") == len(plan["ops"])
    assert sum(tag == "svg" for tag, _ in found) >= 3  # the Gantt chart, memory over time, utilisation


@pytest.mark.browser
@browser
def test_the_browser_check_sees_a_page_that_fails(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>console.error('x'); not_defined();</script></body></html>")
    _, console = _open_in_browser(bad)
    assert len(console) == 2 and "not_defined" in console[1]
