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

from planner.report.markdown import format_gap
from planner.report.svg import KIND_COLORS, PALETTE, GanttBar, Series, bars_svg, gantt_svg, step_chart_svg
from planner.units import format_bytes

__all__ = ["render_html", "gantt_section", "summary_cards", "live_bytes_series", "busy_fraction", "time_formatter",
           "STYLE"]

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d2733;background:#fff}
header{background:#1d2733;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:20px;font-weight:600}
header p{margin:4px 0 0;color:#b8c4d0;font-size:13px}
main{padding:8px 32px 32px;max-width:1160px}
h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #e3e8ee;padding-bottom:4px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-top:16px}
.card{border:1px solid #e3e8ee;border-radius:6px;padding:10px 14px;min-width:120px}
.card .k{font-size:11px;color:#5b6b7b;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:18px;font-weight:600;margin-top:2px}
.card .u{font-size:11px;color:#5b6b7b}
.status{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:#009E73;color:#fff}
.status.FEASIBLE{background:#E69F00}
table{border-collapse:collapse;font-size:13px}
td,th{padding:4px 12px;border-bottom:1px solid #e3e8ee;text-align:right}
td:first-child,th:first-child{text-align:left}
.legend{font-size:12px;color:#333;margin:6px 0}
.legend span{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 12px;vertical-align:-1px}
.charts{display:flex;flex-wrap:wrap;gap:8px}
.scroll{overflow-x:auto}
svg .bar:hover{stroke:#1d2733;stroke-width:1}
footer{font-size:12px;color:#5b6b7b;margin-top:32px}
"""


def time_formatter(clock_hz: int, horizon_cycles: int):
    """Cycles of a ``clock_hz`` clock as the time unit that suits ``horizon_cycles`` (ns, µs or ms).

    >>> f = time_formatter(10**9, 57_095); f(10_000), f(0)
    ('10 µs', '0')
    """
    seconds = horizon_cycles / clock_hz
    unit, scale = ("ms", 1e3) if seconds >= 1e-2 else ("µs", 1e6) if seconds >= 1e-5 else ("ns", 1e9)

    def fmt(cycles: float) -> str:
        return "0" if cycles == 0 else f"{cycles * scale / clock_hz:.4g} {unit}"

    return fmt


def _base(name: str) -> str:
    head, sep, tail = name.rpartition("#")
    return head if sep and tail.isdigit() else name


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


def _dmas(memory: Mapping[str, Any] | None) -> dict[str, list[Mapping[str, Any]]]:
    return {name: list(dp.get("transfers", ())) for name, dp in sorted(((memory or {}).get("devices") or {}).items())}


def _op_colors(doc: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
    """Colour per legend entry, and the entry of an op: its model, or its unit when the plan has one model."""
    ops = (doc.get("resources") or {}).get("ops") or {}
    kind_of = {d["name"]: d["kind"] for d in doc["devices"]}
    if len({info.get("model", "") for info in ops.values()}) > 1:
        def key(op: Mapping[str, Any]) -> str:
            return (ops.get(_base(op["name"])) or {}).get("model", "ops")
    else:
        def key(op: Mapping[str, Any]) -> str:
            units = (ops.get(_base(op["name"])) or {}).get("units") or {}
            return f"{units[kind_of[op['device']]]} unit" if kind_of[op["device"]] in units else "ops"
    names = sorted({key(o) for o in doc["ops"]})
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(names)}, key


def gantt_section(doc: Mapping[str, Any], memory: Mapping[str, Any] | None = None, *, width: int = 1100) -> str:
    """The Gantt chart of a plan document with its legend: device streams, DMA engines, links."""
    colors, key = _op_colors(doc)
    streams = {(o["device"], o["stream"]) for o in doc["ops"]}
    rows: list[str] = []
    row_of: dict[tuple[str, Any], int] = {}
    dmas = _dmas(memory)
    for d in doc["devices"]:
        for s in sorted(s for dev, s in streams if dev == d["name"]):
            row_of[(d["name"], s)] = len(rows)
            rows.append(f"{d['name']} · stream {s}")
        if dmas.get(d["name"]):
            row_of[(d["name"], "dma")] = len(rows)
            rows.append(f"{d['name']} · DMA engine")
    used_links = {t["link"] for t in doc["transfers"] if t["duration_cycles"] > 0}
    for link in doc["links"]:
        if link["name"] in used_links:
            row_of[("link", link["name"])] = len(rows)
            rows.append(f"link {link['name']}")
    bars = [GanttBar(row_of[(o["device"], o["stream"])], o["start_cycle"], o["duration_cycles"], "op",
                     f"{o['name']} on {o['device']} stream {o['stream']}: cycles {o['start_cycle']:,}+"
                     f"{o['duration_cycles']:,}", colors[key(o)]) for o in doc["ops"]]
    bars += [GanttBar(row_of[("link", t["link"])], t["start_cycle"], t["duration_cycles"], "transfer",
                      f"{t['src_op']} -> {t['dst_op']}: {format_bytes(t['size_bytes'])}, cycles "
                      f"{t['start_cycle']:,}+{t['duration_cycles']:,}", KIND_COLORS["transfer"])
             for t in doc["transfers"] if t["duration_cycles"] > 0]
    for device, transfers in dmas.items():
        bars += [GanttBar(row_of[(device, "dma")], t["start_cycle"], t["end_cycle"] - t["start_cycle"],
                          "dma-in" if t["kind"] == "prefetch" else "dma-out",
                          f"{t['kind']} {t['tensor']}: {format_bytes(t['size_bytes'])}, cycles "
                          f"{t['start_cycle']:,}-{t['end_cycle']:,}",
                          KIND_COLORS["dma-in" if t["kind"] == "prefetch" else "dma-out"]) for t in transfers]
    legend = "".join(f'<span style="background:{c}"></span>{escape(m)}' for m, c in colors.items())
    legend += (f'<span style="background:{KIND_COLORS["transfer"]}"></span>transfer'
               f'<span style="background:{KIND_COLORS["dma-in"]}"></span>DMA prefetch'
               f'<span style="background:{KIND_COLORS["dma-out"]}"></span>DMA evict')
    horizon = max([doc["makespan_cycles"], *(b.end_cycle for b in bars)])
    svg = gantt_svg(rows, bars, horizon, width=width, fmt=time_formatter(doc["clock_hz"], horizon))
    return f'<div class="legend">{legend}</div>\n<div class="scroll">{svg}</div>'


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
              for device, transfers in _dmas(memory).items() if transfers]
    items += [(f"link {l['name']}", busy_fraction(((t["start_cycle"], t["start_cycle"] + t["duration_cycles"])
                                                   for t in doc["transfers"] if t["link"] == l["name"]), horizon))
              for l in doc["links"]]
    return bars_svg(items)


def _card(key: str, value: str, unit: str = "", field: str = "", raw: Any = None) -> str:
    data = f' data-field="{field}" data-value="{escape(str(raw))}"' if field else ""
    return (f'<div class="card"{data}><div class="k">{escape(key)}</div><div class="v">{escape(value)}</div>'
            f'<div class="u">{escape(unit)}</div></div>')


def summary_cards(doc: Mapping[str, Any]) -> str:
    """The headline figures of a plan document (objective, bound, gap, makespan, ops, devices)."""
    fmt = time_formatter(doc["clock_hz"], doc["makespan_cycles"])

    def cycles(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"

    bound = doc.get("bound")
    return '<div class="cards">' + "".join([
        _card(f"objective ({doc['objective_kind']})", cycles(doc["objective"]), f"cycles · {fmt(doc['objective'])}",
              "objective", doc["objective"]),
        _card("lower bound", cycles(bound), "cycles" + ("" if bound is None else f" · {fmt(bound)}"), "bound", bound),
        _card("gap", format_gap(doc.get("gap")), "proved optimal" if doc["status"] == "OPTIMAL" else "to the bound",
              "gap", doc.get("gap")),
        _card("makespan", cycles(doc["makespan_cycles"]), f"cycles · {fmt(doc['makespan_cycles'])}",
              "makespan_cycles", doc["makespan_cycles"]),
        _card("ops", f"{len(doc['ops']):,}", f"{len(doc['transfers']):,} transfers", "ops", len(doc["ops"])),
        _card("devices", f"{len(doc['devices'])}", f"{len(doc['links'])} links", "devices", len(doc["devices"])),
    ]) + "</div>"


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


def render_html(doc: Mapping[str, Any], allocation: Mapping[str, Any], memory: Mapping[str, Any] | None = None) -> str:
    """``report.html``'s text from a plan directory's ``plan.json``, ``allocation.json`` and ``memory.json``.

    Deterministic: the same documents give the same bytes.
    """
    status = str(doc["status"])
    dma_count = sum(len(t) for t in _dmas(memory).values())
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>plan · {escape(doc['spec'])}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<style>{STYLE}</style></head><body>",
        f"<header><h1>{escape(doc['spec'])} <span class=\"status {escape(status)}\">{escape(status)}</span></h1>"
        f"<p>{escape(doc['objective_kind'])} objective · {len(doc['ops']):,} ops on {len(doc['devices'])} devices · "
        f"{dma_count:,} DMAs · reference clock {doc['clock_hz'] / 1e9:g} GHz</p></header><main>",
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
