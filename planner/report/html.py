"""``report.html``: the plan drawn, from the verified plan directory's own files.

:func:`render_html` takes the parsed ``plan.json``, ``allocation.json`` and (when memory
planning ran) ``memory.json`` and nothing else, so every figure on the page is one of
theirs: a Gantt chart with a row per device stream, per DMA engine and per link; the
memory in use over time per device and level against its capacity (from the buffer
lifetimes of ``allocation.json``); the busy fraction of every device, DMA engine and link;
the objective, bound, gap and baselines. One self-contained file: inline SVG and CSS, no
script, no network, the same bytes for the same plan.

Examples
--------
>>> doc = {"spec": "s", "objective_kind": "latency", "status": "OPTIMAL", "objective": 5, "bound": 5,
...        "gap": 0.0, "makespan_cycles": 5, "clock_hz": 10**9, "baselines": [], "resources": {},
...        "devices": [{"name": "d0", "kind": "cpu", "profile": "p", "streams": 1}], "links": [],
...        "ops": [{"name": "a", "device": "d0", "stream": 0, "start_cycle": 0, "duration_cycles": 5}],
...        "transfers": []}
>>> page = render_html(doc, {"devices": {}})
>>> page.startswith("<!DOCTYPE html>"), page.count('class="bar op"')
(True, 1)
"""

from __future__ import annotations

from html import escape
from typing import Any, Iterable, Mapping

from planner.charts import STYLE, Series, bars_svg, dma_transfers, gantt_section, step_chart_svg, summary_cards, \
    time_formatter
from planner.units import format_bytes

__all__ = ["render_html", "live_bytes_series", "busy_fraction"]

def busy_fraction(intervals: Iterable[tuple[int, int]], horizon: int) -> float:
    """The part of ``[0, horizon]`` covered by at least one ``(start, end)`` interval.

    >>> busy_fraction([(0, 4), (2, 6), (8, 10)], 10)
    0.8
    """
    covered, reach = 0, 0
    for start, end in sorted(intervals):
        start = max(start, reach)
        if end > start:
            covered += end - start
            reach = end
    return covered / horizon if horizon > 0 else 0.0


def live_bytes_series(buffers: Iterable[Mapping[str, Any]], level: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Bytes allocated in ``level`` over time from buffer lifetimes (views not counted): change points and values.

    >>> live_bytes_series([{"level": "l", "size_bytes": 4, "start_cycle": 0, "end_cycle": 5, "view": False},
    ...                    {"level": "l", "size_bytes": 2, "start_cycle": 3, "end_cycle": 9, "view": False}], "l")
    ((0, 3, 5, 9), (4, 6, 2, 0))
    """
    delta: dict[int, int] = {}
    for b in buffers:
        if b["level"] != level or b.get("view"):
            continue
        delta[b["start_cycle"]] = delta.get(b["start_cycle"], 0) + b["size_bytes"]
        delta[b["end_cycle"]] = delta.get(b["end_cycle"], 0) - b["size_bytes"]
    cycles, values, live = [], [], 0
    for c in sorted(delta):
        live += delta[c]
        cycles.append(c)
        values.append(live)
    return tuple(cycles), tuple(values)


def _memory_section(doc: Mapping[str, Any], allocation: Mapping[str, Any]) -> str:
    horizon = doc["makespan_cycles"]
    fmt = time_formatter(doc["clock_hz"], horizon)
    out = []
    for name, device in sorted((allocation.get("devices") or {}).items()):
        charts = []
        for level, info in (device.get("memory") or {}).items():
            cycles, values = live_bytes_series(device.get("buffers") or (), level)
            if not cycles:
                continue
            series = Series(f"{name} · {level}", cycles, values, limit=info["capacity_bytes"])
            charts.append(step_chart_svg(series, horizon, fmt=fmt, value_fmt=format_bytes))
        if charts:
            out.append(f'<div class="charts" data-device="{escape(name)}">' + "\n".join(charts) + "</div>")
    return "\n".join(out) or "<p>No buffers are allocated on any device.</p>"


def _utilisation_section(doc: Mapping[str, Any], memory: Mapping[str, Any] | None) -> str:
    horizon = doc["makespan_cycles"]
    items = [(f"{d['name']} (any stream)", busy_fraction(((o["start_cycle"], o["start_cycle"] + o["duration_cycles"])
                                                         for o in doc["ops"] if o["device"] == d["name"]), horizon))
             for d in doc["devices"]]
    items += [(f"{device} DMA engine", busy_fraction(((t["start_cycle"], t["end_cycle"]) for t in transfers), horizon))
              for device, transfers in dma_transfers(memory).items() if transfers]
    items += [(f"link {l['name']}", busy_fraction(((t["start_cycle"], t["start_cycle"] + t["duration_cycles"])
                                                   for t in doc["transfers"] if t["link"] == l["name"]), horizon))
              for l in doc["links"]]
    return bars_svg(items)


def _baselines_table(doc: Mapping[str, Any]) -> str:
    rows = doc.get("baselines") or []
    if not rows:
        return ""
    objective = doc["objective"]

    def cell(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"

    body = "".join(
        f'<tr data-solver="{escape(r["solver"])}"><td>{escape(r["solver"])}</td><td>{escape(str(r["status"]))}</td>'
        f'<td data-objective="{r["objective"]}">{cell(r["objective"])}</td><td>{cell(r["bound"])}</td>'
        f'<td>{"-" if r["objective"] is None or not objective else format(r["objective"] / objective, ".3f") + "x"}'
        '</td></tr>' for r in rows)
    return ("<h2>Objective, bound and baselines</h2><table><tr><th>solver</th><th>status</th><th>objective (cycles)"
            f"</th><th>bound</th><th>vs plan</th></tr>{body}</table>")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


def render_html(doc: Mapping[str, Any], allocation: Mapping[str, Any], memory: Mapping[str, Any] | None = None) -> str:
    """``report.html``'s text from a plan directory's ``plan.json``, ``allocation.json`` and ``memory.json``.

    Deterministic: the same documents give the same bytes.
    """
    status = str(doc["status"])
    dma_count = sum(len(t) for t in dma_transfers(memory).values())
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>plan · {escape(doc['spec'])}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<style>{STYLE}</style></head><body>",
        f"<header><h1>{escape(doc['spec'])} <span class=\"status {escape(status)}\">{escape(status)}</span></h1>"
        f"<p>{escape(doc['objective_kind'])} objective · {_count(len(doc['ops']), 'op')} on "
        f"{_count(len(doc['devices']), 'device')} · {_count(dma_count, 'DMA')} · reference clock "
        f"{doc['clock_hz'] / 1e9:g} GHz</p></header><main>",
        summary_cards(doc), _baselines_table(doc),
        "<h2>Schedule</h2><p class=\"legend\">One row per device stream, DMA engine and link; hover a bar for its "
        "op, tensor and cycles. Bars narrower than a pixel are drawn merged.</p>", gantt_section(doc, memory),
        "<h2>Memory in use over time</h2><p class=\"legend\">Bytes allocated per device and memory level (from the "
        "buffer lifetimes of allocation.json), against the level's capacity.</p>", _memory_section(doc, allocation),
        "<h2>Utilisation</h2><p class=\"legend\">Part of the makespan each device (any of its streams), DMA engine "
        "and link is busy.</p>", _utilisation_section(doc, memory),
        "<footer>Drawn from plan.json, allocation.json and memory.json after the independent verifier replayed the "
        "binaries and agreed with them; report.md has the tables.</footer></main></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
