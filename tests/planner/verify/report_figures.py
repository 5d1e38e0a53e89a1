"""Read report.md back and check every figure it shows against plan.json, memory.json and allocation.json.

The directory is verified first (the files agree with the replay of the binaries), so a
figure that agrees with the files agrees with the replay. Used by the shipped-spec test of
tests/test_end_to_end.py and by tests/planner/verify/test_report_figures.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from planner.report.markdown import format_bytes, format_gap, op_count, search_cell, strategy_line
from planner.verify import describe, verify_plan_dir

__all__ = ["sections", "tables", "check_report"]


def sections(text: str) -> dict[str, str]:
    """``## heading`` (and ``### heading``) -> its text, the title's part under ``""``."""
    out: dict[str, str] = {}
    current, lines = "", []
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            out[current] = "\n".join(lines)
            current, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    out[current] = "\n".join(lines)
    return out


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of ``text``: rows of cells, the header first, the rule dropped."""
    out, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            if not re.fullmatch(r"\|(---\|)+", line.strip()):
                rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            out.append(rows)
            rows = []
    return out


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _check_summary(part: str, plan: dict[str, Any]) -> None:
    rows = {r[0]: r[1] for r in tables(part)[0][1:]}
    unit = "cycles (makespan)" if plan["objective_kind"] == "latency" else "cycles (max load)"
    solver = plan["solver"]
    assert rows == {
        "status": plan["status"],
        "objective": f"{plan['objective_kind']}: {plan['objective']} {unit}",
        "best bound": _cell(plan["bound"]),
        "gap": format_gap(plan["gap"]),
        "makespan": f"{plan['makespan_cycles']} cycles = {plan['makespan_cycles'] * 1e6 / plan['clock_hz']:.3f} us "
                    f"at {plan['clock_hz'] / 1e9:g} GHz",
        "solver": f"{solver['name']} (workers {solver['workers']}, seed {solver['seed']}, "
                  f"limit {solver['time_limit_s']} s)",
        **({"strategy": strategy_line(solver)} if "strategy" in solver else {}),
        "search": search_cell(solver),
    }, rows


def _check_baselines(part: str, plan: dict[str, Any]) -> None:
    shown = tables(part)[0][1:]
    best = plan["objective"]
    want = [[b["solver"], b["status"], _cell(b["objective"]), _cell(b["bound"]),
             "-" if b["objective"] is None else f"{100 * (b['objective'] - best) / max(best, 1):+.2f}%"]
            for b in plan["baselines"]]
    assert shown == want, (shown, want)


def _check_replay(part: str, plan: dict[str, Any], alloc: dict[str, Any]) -> None:
    instructions = sum(d["instructions"] for d in alloc["devices"].values())
    assert f"replayed {instructions} instructions: makespan {plan['makespan_cycles']} cycles, identical" in part, part
    assert f"- {describe(plan['numeric'])}" in part, part


def _check_devices(part: str, plan: dict[str, Any], alloc: dict[str, Any], graph: dict[str, Any],
                   plan_dir: Path) -> None:
    from planner.graph.serialize import graph_from_dict

    g = graph_from_dict(graph)
    shown = tables(part)[0][1:]
    span = max(plan["makespan_cycles"], 1)
    want = []
    for d in plan["devices"]:
        ops = [o for o in plan["ops"] if o["device"] == d["name"]]
        busy = sum(o["duration_cycles"] for o in ops)
        mem = alloc["devices"][d["name"]]["memory"]
        levels = [(name, v) for name, v in mem.items() if v["reserved_bytes"] or name == _main_level(plan_dir, d["name"])]
        want.append([d["name"], d["kind"], d["profile"], str(d["streams"]), op_count([o["name"] for o in ops], g),
                     str(busy), f"{100 * busy / (span * d['streams']):.1f}%",
                     "; ".join(f"{n} {format_bytes(v['reserved_bytes'])} of {format_bytes(v['capacity_bytes'])}"
                               for n, v in levels)])
    assert shown == want, (shown, want)


def _main_level(plan_dir: Path, device: str) -> str:
    from planner.isa.binary import decode

    return decode((plan_dir / "bin" / f"{device}.bin").read_bytes()).main.name


def _check_links(part: str, plan: dict[str, Any]) -> None:
    shown = tables(part)[0][1:]
    want = []
    for link in plan["links"]:
        ts = [t for t in plan["transfers"] if t["link"] == link["name"]]
        want.append([link["name"], " ".join(link["devices"]), str(len(ts)),
                     format_bytes(sum(t["size_bytes"] for t in ts)), str(sum(t["duration_cycles"] for t in ts))])
    assert shown == want, (shown, want)


def _check_memory(parts: dict[str, str], memory: dict[str, Any]) -> None:
    part = parts["Memory hierarchy"]
    choice = memory["choice"]
    assert f"use: **{choice}**" in part
    chosen = memory["baselines"][choice]
    assert tables(part)[0][1:] == [[n, str(v), "-" if n == choice else f"{v / chosen:.3f}x"]
                                   for n, v in memory["baselines"].items()]
    for device in sorted({d for per_plan in memory["figures"].values() for d in per_plan}):
        heading = next(h for h in parts if h.startswith(f"{device}: fast level"))
        comparison = tables(parts[heading])[0]
        names = comparison[0][1:]
        rows = {r[0]: r[1:] for r in comparison[1:]}
        for i, name in enumerate(names):
            fig = memory["figures"][name][device]
            for level, value in fig["peak_live_bytes"].items():
                key = f"peak live bytes, {level}"
                if key in rows:
                    assert rows[key][i] == format_bytes(value), (key, name)
            assert rows["simulated makespan"][i] == str(memory["baselines"][name])
            for pair, value in fig["dma_bytes"].items():
                assert rows[f"DMA {pair}"][i] == format_bytes(value)
            for level, value in fig["op_bytes"].items():
                assert rows[f"ops read/write in {level}"][i] == format_bytes(value)
        fig = memory["figures"][choice][device]
        if device in memory["devices"]:
            assert (f"- {fig['dma_count']} DMAs, {fig['dma_cycles']} cycles, of which {fig['dma_hidden_cycles']} "
                    "overlap compute.") in parts[heading]
            for label, factor in memory["devices"][device]["split_factors"].items():
                assert f"`{label}` in {factor} portions" in parts[heading]


def _check_resources(part: str, plan: dict[str, Any]) -> None:
    shown = tables(part)[0]
    models = plan["resources"]["models"]
    keys = shown[0][1:]
    assert shown[1:] == [[m, *[str(v[k]) for k in keys]] for m, v in sorted(models.items())]


def _check_max_load(part: str, plan: dict[str, Any]) -> None:
    loads = plan["solver"]["loads"]
    rows = {r[0]: r for r in tables(part)[0][1:]}
    assert {d: int(r[5]) for d, r in rows.items()} == loads, (rows, loads)
    assert all(int(r[3]) + int(r[4]) == int(r[5]) for r in rows.values())
    assert max(loads.values()) == plan["objective"]


def check_report(plan_dir: Path) -> None:
    """Assert that every figure of ``plan_dir``/report.md is the one the (verified) files give."""
    verify_plan_dir(plan_dir)
    plan = json.loads((plan_dir / "plan.json").read_text())
    alloc = json.loads((plan_dir / "allocation.json").read_text())
    graph = json.loads((plan_dir / "graph.json").read_text())
    parts = sections((plan_dir / "report.md").read_text())
    assert parts[""].startswith(f"# Plan report: {plan['spec']}\n")
    _check_summary(parts[""], plan)
    _check_baselines(parts["Baselines, same run"], plan)
    _check_replay(parts["Replay"], plan, alloc)
    _check_devices(parts["Devices"], plan, alloc, graph, plan_dir)
    if plan["links"]:
        _check_links(parts["Links"], plan)
    if plan["memory_planning"]:
        _check_memory(parts, json.loads((plan_dir / "memory.json").read_text()))
    if "Resources determined before running" in parts:
        _check_resources(parts["Resources determined before running"], plan)
    max_load = next((h for h in parts if h.startswith("Max-load")), None)
    if max_load is not None:
        _check_max_load(parts[max_load], plan)
