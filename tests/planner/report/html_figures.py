"""Read report.html back and check every figure it draws against plan.json, allocation.json and memory.json.

The page's elements carry their figures as ``data-*`` attributes (cycles and bytes, not the
formatted text); this reads them with the standard library's HTML parser and compares them
with the verified directory's files. Used by the shipped-spec test of tests/test_end_to_end.py
and by tests/planner/report/test_html.py.
"""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

__all__ = ["elements", "check_html_report"]


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))


def elements(page: str) -> list[tuple[str, dict[str, str]]]:
    """Every start tag of ``page`` with its attributes, in document order."""
    collector = _Collector()
    collector.feed(page)
    return collector.found


def _bars(found, kind: str) -> list[dict[str, str]]:
    return [a for tag, a in found if tag == "rect" and a.get("class") == f"bar {kind}"]


def _check_bars(found, plan: dict[str, Any], memory: dict[str, Any] | None) -> None:
    ops = _bars(found, "op")
    assert sum(int(a["data-count"]) for a in ops) == len(plan["ops"])
    want = Counter((o["start_cycle"], o["start_cycle"] + o["duration_cycles"]) for o in plan["ops"])
    drawn = Counter((int(a["data-start"]), int(a["data-end"])) for a in ops if a["data-count"] == "1")
    assert not drawn - want, f"bars with no op of plan.json: {sorted(drawn - want)[:3]}"
    moving = [t for t in plan["transfers"] if t["duration_cycles"] > 0]
    assert sum(int(a["data-count"]) for a in _bars(found, "transfer")) == len(moving)
    dmas = [t for dp in ((memory or {}).get("devices") or {}).values() for t in dp["transfers"]]
    drawn_dmas = _bars(found, "dma-in") + _bars(found, "dma-out")
    assert sum(int(a["data-count"]) for a in drawn_dmas) == len(dmas)
    assert sum(int(a["data-count"]) for a in _bars(found, "dma-in")) == sum(t["kind"] == "prefetch" for t in dmas)


def _peak(buffers: list[dict[str, Any]], level: str) -> int:
    """The most bytes live at once in ``level``, counted afresh at every buffer's start (views excluded)."""
    mine = [b for b in buffers if b["level"] == level and not b["view"]]
    return max((sum(b["size_bytes"] for b in mine if b["start_cycle"] <= t < b["end_cycle"])
                for t in {b["start_cycle"] for b in mine}), default=0)


def _check_memory(found, allocation: dict[str, Any], memory: dict[str, Any] | None) -> None:
    lines = [a for tag, a in found if tag == "polyline" and a.get("class") == "usage"]
    want = []
    for name, device in sorted(allocation["devices"].items()):
        for level, info in device["memory"].items():
            if any(b["level"] == level and not b["view"] for b in device["buffers"]):
                peak = _peak(device["buffers"], level)
                want.append((peak, info["capacity_bytes"]))
                chosen = ((memory or {}).get("figures") or {}).get((memory or {}).get("choice"), {}).get(name)
                if chosen is not None:  # the replay's own peak (memory.json figures) is the drawn one
                    assert chosen["peak_live_bytes"][level] == peak, (name, level)
    assert [(int(a["data-peak"]), int(a["data-limit"])) for a in lines] == want


def check_html_report(plan_dir: Path) -> None:
    """Every number report.html draws is plan.json's, allocation.json's or memory.json's."""
    page = (plan_dir / "report.html").read_text(encoding="utf-8")
    plan = json.loads((plan_dir / "plan.json").read_text())
    allocation = json.loads((plan_dir / "allocation.json").read_text())
    memory = json.loads((plan_dir / "memory.json").read_text()) if (plan_dir / "memory.json").exists() else None
    found = elements(page)
    cards = {a["data-field"]: a["data-value"] for tag, a in found if "data-field" in a}
    assert cards == {"objective": str(plan["objective"]), "bound": str(plan["bound"]), "gap": str(plan["gap"]),
                     "makespan_cycles": str(plan["makespan_cycles"]), "ops": str(len(plan["ops"])),
                     "devices": str(len(plan["devices"]))}
    rows = [(a["data-solver"]) for tag, a in found if "data-solver" in a]
    assert rows == [r["solver"] for r in plan["baselines"]]
    objectives = [a["data-objective"] for tag, a in found if "data-objective" in a]
    assert objectives == [str(r["objective"]) for r in plan["baselines"]]
    _check_bars(found, plan, memory)
    _check_memory(found, allocation, memory)
    assert "src=" not in page and "href=" not in page and "<script" not in page  # self-contained, opens offline
