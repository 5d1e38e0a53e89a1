"""Static SVG charts and HTML summary cards: a Gantt chart, step lines against a limit, horizontal bars.

Drawn by ``report.html`` (:mod:`planner.report.html`) and by a plan's notebook display
(``Plan._repr_html_``), so it imports nothing from the planner but the byte format
(:mod:`planner.units`): it sits with the base modules. Plain SVG text with no dependency, so the report is complete wherever the planner runs,
opens offline and is the same bytes for the same plan. Sizes are bounded whatever the plan's
size: bars narrower than a pixel that touch are drawn as one aggregate bar (its
``data-count`` says how many it stands for, its tooltip names the span), and a step line
keeps at most two points per pixel column (the column's minimum and maximum, so no peak is
lost). Every bar and line carries its figures in cycles as ``data-*`` attributes, so a test
or a script can read the chart's numbers back.

Examples
--------
>>> svg = gantt_svg(["d0 / stream 0"], [GanttBar(0, 0, 5, "op", "a")], 10)
>>> svg.count('class="bar op"'), 'data-count="1"' in svg
(1, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any, Callable, Mapping, Sequence

from planner.instances import base_op_name
from planner.units import format_bytes

__all__ = ["GanttBar", "Series", "gantt_svg", "gantt_section", "dma_transfers", "step_chart_svg", "bars_svg", "nice_step", "summary_cards",
           "time_formatter", "stacked_bars_svg", "KIND_COLORS", "PALETTE", "STYLE", "NOTEBOOK_STYLE"]

# Colour-blind-safe categorical palette (Okabe & Ito) for models; transfers and DMAs in fixed greys/oranges.
PALETTE = ("#0072B2", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#D55E00", "#F0E442", "#999999")
KIND_COLORS = {"transfer": "#6C7A89", "dma-in": "#E69F00", "dma-out": "#D55E00", "dma": "#E69F00"}
FONT = "font-family=\"system-ui,-apple-system,'Segoe UI',Roboto,sans-serif\" font-size=\"11\""


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



# The cards and legend alone, scoped to the notebook display's own <div> (a notebook's page is not ours).
NOTEBOOK_STYLE = """
.plan-nb .cards{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.plan-nb .card{border:1px solid #e3e8ee;border-radius:6px;padding:6px 10px;min-width:100px}
.plan-nb .card .k{font-size:10px;color:#5b6b7b;text-transform:uppercase}
.plan-nb .card .v{font-size:15px;font-weight:600}
.plan-nb .card .u{font-size:10px;color:#5b6b7b}
.plan-nb .legend{font-size:11px;margin:4px 0}
.plan-nb .legend span{display:inline-block;width:9px;height:9px;border-radius:2px;margin:0 3px 0 10px}
"""


@dataclass(frozen=True, slots=True)
class GanttBar:
    """One interval on one row of a Gantt chart (cycles of the plan's reference clock)."""

    row: int
    start_cycle: int
    duration_cycles: int
    kind: str  # "op", "transfer", "dma-in", "dma-out": the bar's class
    label: str  # the tooltip
    color: str = PALETTE[0]

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles


@dataclass(frozen=True, slots=True)
class Series:
    """A step function: ``values[i]`` holds from ``cycles[i]`` until ``cycles[i + 1]``."""

    label: str
    cycles: tuple[int, ...]
    values: tuple[int, ...]
    limit: int | None = None  # drawn as a dashed line (a capacity)


def nice_step(span: float, ticks: int = 8) -> float:
    """A round tick spacing (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks over ``span``.

    >>> nice_step(57095), nice_step(10), nice_step(0)
    (10000, 2, 1)
    """
    if span <= 0:
        return 1
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return int(step) if step >= 1 else step


def _axis(horizon: int, x0: float, width: float, y: float, fmt: Callable[[float], str]) -> list[str]:
    out = [f'<line x1="{x0}" y1="{y}" x2="{x0 + width}" y2="{y}" stroke="#888"/>']
    step = nice_step(horizon)
    t = 0
    while t <= horizon:
        x = round(x0 + width * t / max(horizon, 1), 1)
        out.append(f'<line x1="{x}" y1="{y}" x2="{x}" y2="{y + 4}" stroke="#888"/>'
                   f'<text x="{x}" y="{y + 15}" text-anchor="middle" fill="#555">{escape(fmt(t))}</text>')
        t += step
    return out


def _merge_thin(bars: list[GanttBar], scale: float) -> list[tuple[GanttBar, int, int, int]]:
    """(first bar, count, start, end) per drawn rectangle: bars under a pixel that touch become one."""
    runs: list[list] = []
    for b in sorted(bars, key=lambda b: (b.start_cycle, b.end_cycle, b.label)):
        thin = b.duration_cycles * scale < 1.0
        last = runs[-1] if runs else None
        if (thin and last is not None and last[4] and last[0].kind == b.kind
                and (b.start_cycle - last[3]) * scale < 1.0 and (b.end_cycle - last[2]) * scale < 2.0):
            last[1] += 1
            last[3] = max(last[3], b.end_cycle)
        else:
            runs.append([b, 1, b.start_cycle, b.end_cycle, thin])
    return [(r[0], r[1], r[2], r[3]) for r in runs]


def gantt_svg(rows: Sequence[str], bars: Sequence[GanttBar], horizon: int, *, width: int = 1100,
              label_width: int = 190, row_height: int = 20, fmt: Callable[[float], str] = str) -> str:
    """A Gantt chart: one row per resource (``rows``), one rectangle per bar, a time axis below.

    ``horizon`` (cycles) spans the drawing's width; ``fmt`` labels the axis ticks (cycles in).

    Examples
    --------
    >>> bars = [GanttBar(0, i, 1, "op", f"op{i}") for i in range(10_000)]
    >>> svg = gantt_svg(["d0"], bars, 10_000, width=300)
    >>> svg.count("<rect") < 400, sum(int(p.split('"')[1]) for p in svg.split("data-count=")[1:])
    (True, 10000)
    """
    plot = width - label_width - 30  # room for the last tick's label
    scale = plot / max(horizon, 1)
    height = row_height * len(rows) + 28
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gantt" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT}>']
    for i, name in enumerate(rows):
        y = i * row_height
        if i % 2:
            out.append(f'<rect x="0" y="{y}" width="{width}" height="{row_height}" fill="#F5F7FA"/>')
        out.append(f'<text x="{label_width - 6}" y="{y + row_height * 0.68:.1f}" text-anchor="end" '
                   f'fill="#333">{escape(name)}</text>')
    by_row: dict[int, list[GanttBar]] = {}
    for b in bars:
        by_row.setdefault(b.row, []).append(b)
    for row in sorted(by_row):
        y = row * row_height + 3
        for first, count, start, end in _merge_thin(by_row[row], scale):
            x, w = label_width + start * scale, max((end - start) * scale, 0.6)
            tip = first.label if count == 1 else f"{count} {first.kind}s, cycles {start:,}-{end:,}"
            out.append(f'<rect class="bar {first.kind}" x="{x:.2f}" y="{y}" width="{w:.2f}" '
                       f'height="{row_height - 6}" rx="2" fill="{first.color}" data-count="{count}" '
                       f'data-start="{start}" data-end="{end}"><title>{escape(tip)}</title></rect>')
    out += _axis(horizon, label_width, plot, row_height * len(rows) + 2, fmt)
    out.append("</svg>")
    return "\n".join(out)


def _envelope(series: Series, scale: float) -> list[tuple[float, int]]:
    """The step line's points, at most two per pixel column (its minimum and maximum there)."""
    points: list[tuple[float, int]] = []
    prev = 0
    columns: dict[int, list[int]] = {}
    for c, v in zip(series.cycles, series.values):
        columns.setdefault(int(c * scale), []).append(v)
    for column in sorted(columns):
        values = columns[column]
        lo, hi = min(values), max(values)
        points.append((column, prev))
        points += [(column, hi), (column, lo)] if lo != hi else [(column, hi)]
        prev = values[-1]
        points.append((column, prev))
    return points


def step_chart_svg(series: Series, horizon: int, *, width: int = 540, height: int = 170,
                   fmt: Callable[[float], str] = str, value_fmt: Callable[[int], str] = str) -> str:
    """A filled step line of ``series`` over ``[0, horizon]`` cycles, with its limit dashed.

    Examples
    --------
    >>> svg = step_chart_svg(Series("sram", (0, 5, 8), (4, 10, 0), limit=16), 10)
    >>> 'data-peak="10"' in svg, 'data-limit="16"' in svg, 'class="limit"' in svg
    (True, True, True)
    >>> 'class="limit"' in step_chart_svg(Series("hbm", (0, 5), (4, 0), limit=10**9), 10)  # far above: named only
    False
    """
    left, top, plot_w, plot_h = 70, 20, width - 100, height - 45
    peak = max(series.values, default=0)
    # A capacity far above the peak would flatten the line: then the axis ends above the peak, the
    # capacity is named in the title, and the dashed line is left out.
    limit_drawn = series.limit is not None and series.limit <= 4 * peak
    top_value = max(peak * 1.1, series.limit if limit_drawn else 0, 1)
    sx, sy = plot_w / max(horizon, 1), plot_h / top_value
    pts = _envelope(series, sx)
    line = " ".join(f"{left + x:.1f},{top + plot_h - v * sy:.1f}" for x, v in pts)
    end_value = series.values[-1] if series.values else 0
    line += f" {left + plot_w:.1f},{top + plot_h - end_value * sy:.1f}"
    title = series.label + (f": peak {value_fmt(peak)} of {value_fmt(series.limit)} "
                            f"({100 * peak / series.limit:.2g}%)" if series.limit else "")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="memory" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT}>',
           f'<text x="{left}" y="12" fill="#333" font-weight="600">{escape(title)}</text>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>',
           f'<polygon points="{left},{top + plot_h} {line} {left + plot_w},{top + plot_h}" fill="#0072B2" '
           f'fill-opacity="0.18"/>',
           f'<polyline class="usage" points="{line}" fill="none" stroke="#0072B2" stroke-width="1.4" '
           f'data-peak="{peak}" data-limit="{series.limit}"><title>{escape(title)}</title></polyline>',
           f'<text x="{left - 4}" y="{top + plot_h - peak * sy + 4:.1f}" text-anchor="end" fill="#0072B2">'
           f'{escape(value_fmt(peak))}</text>']
    if limit_drawn:
        y = top + plot_h - series.limit * sy
        out.append(f'<line class="limit" x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#D55E00" '
                   f'stroke-dasharray="5,3"><title>capacity {escape(value_fmt(series.limit))}</title></line>'
                   f'<text x="{left + plot_w}" y="{y - 3:.1f}" text-anchor="end" fill="#D55E00">capacity '
                   f'{escape(value_fmt(series.limit))}</text>')
    out += _axis(horizon, left, plot_w, top + plot_h, fmt)
    out.append("</svg>")
    return "\n".join(out)


def bars_svg(items: Sequence[tuple[str, float]], *, width: int = 540, row_height: int = 22) -> str:
    """Horizontal bars of fractions in [0, 1], labelled with their percentage.

    >>> 'data-value="0.25"' in bars_svg([("d0", 0.25)])
    True
    """
    label_w, plot = 200, width - 260
    height = row_height * len(items) + 6
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="utilisation" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT}>']
    for i, (label, value) in enumerate(items):
        y = i * row_height + 3
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" fill="#333">{escape(label)}</text>'
                   f'<rect x="{label_w}" y="{y}" width="{plot}" height="{row_height - 6}" fill="#EEF1F5"/>'
                   f'<rect class="util" x="{label_w}" y="{y}" width="{plot * min(max(value, 0), 1):.1f}" '
                   f'height="{row_height - 6}" fill="#009E73" data-value="{value:.6g}"/>'
                   f'<text x="{label_w + plot + 6}" y="{y + 13}" fill="#333">{100 * value:.1f}%</text>')
    out.append("</svg>")
    return "\n".join(out)


def stacked_bars_svg(rows: Sequence[tuple[str, Sequence[tuple[str, float, str]], float]], *, width: int = 620,
                     row_height: int = 20, label_width: int = 170) -> str:
    """Horizontal bars on a 0-100% scale, each made of coloured segments: ``(label, [(part, value, colour)], total)``.

    ``total`` is the bar's figure (``data-value``, printed beside it); the segments show what
    makes it up (their tooltips name them).

    >>> svg = stacked_bars_svg([("p0 · ops", [("a", 0.25, "#000"), ("b", 0.5, "#111")], 0.75)])
    >>> svg.count('class="segment"'), 'data-value="0.75"' in svg
    (2, True)
    """
    plot = width - label_width - 70
    height = row_height * len(rows) + 6
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="stacked" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT}>']
    for i, (label, parts, total) in enumerate(rows):
        y = i * row_height + 3
        out.append(f'<text x="{label_width - 6}" y="{y + 12}" text-anchor="end" fill="#333">{escape(label)}</text>'
                   f'<rect class="track" x="{label_width}" y="{y}" width="{plot}" height="{row_height - 6}" '
                   f'fill="#EEF1F5" data-value="{total:.6g}"/>')
        x = float(label_width)
        for part, value, color in parts:
            w = plot * max(value, 0)
            out.append(f'<rect class="segment" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row_height - 6}" '
                       f'fill="{color}"><title>{escape(part)}: {100 * value:.2f}%</title></rect>')
            x += w
        out.append(f'<text x="{label_width + plot + 6}" y="{y + 12}" fill="#333">{100 * total:.1f}%</text>')
    out.append("</svg>")
    return "\n".join(out)


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


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


def _card(key: str, value: str, unit: str = "", field: str = "", raw: Any = None) -> str:
    data = f' data-field="{field}" data-value="{escape(str(raw))}"' if field else ""
    return (f'<div class="card"{data}><div class="k">{escape(key)}</div><div class="v">{escape(value)}</div>'
            f'<div class="u">{escape(unit)}</div></div>')


def summary_cards(doc: Mapping[str, Any]) -> str:
    """The headline figures of a plan document (objective, bound, gap, makespan, ops, devices).

    ``doc``: ``plan.json``'s fields (``devices`` and ``links`` as lists). Each card carries its
    raw value as ``data-value``.

    >>> cards = summary_cards({"objective_kind": "latency", "objective": 5, "bound": 4, "gap": 0.2, "status": "FEASIBLE",
    ...                        "makespan_cycles": 5, "clock_hz": 10**9, "ops": [], "transfers": [], "devices": [],
    ...                        "links": []})
    >>> 'data-field="gap" data-value="0.2"' in cards, "20.00%" in cards
    (True, True)
    """
    fmt = time_formatter(doc["clock_hz"], doc["makespan_cycles"])

    def cycles(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"

    bound = doc.get("bound")
    return '<div class="cards">' + "".join([
        _card(f"objective ({doc['objective_kind']})", cycles(doc["objective"]), f"cycles · {fmt(doc['objective'])}",
              "objective", doc["objective"]),
        _card("lower bound", cycles(bound), "cycles" + ("" if bound is None else f" · {fmt(bound)}"), "bound", bound),
        _card("gap", "-" if doc.get("gap") is None else f"{100 * doc['gap']:.2f}%", "proved optimal" if doc["status"] == "OPTIMAL" else "to the bound",
              "gap", doc.get("gap")),
        _card("makespan", cycles(doc["makespan_cycles"]), f"cycles · {fmt(doc['makespan_cycles'])}",
              "makespan_cycles", doc["makespan_cycles"]),
        _card("ops", f"{len(doc['ops']):,}", _count(len(doc["transfers"]), "transfer"), "ops", len(doc["ops"])),
        _card("devices", f"{len(doc['devices'])}", _count(len(doc["links"]), "link"), "devices", len(doc["devices"])),
    ]) + "</div>"


def dma_transfers(memory: Mapping[str, Any] | None) -> dict[str, list[Mapping[str, Any]]]:
    """Device -> its DMAs (memory.json ``devices.<name>.transfers``), by device name; ``{}`` without memory.json."""
    return {name: list(dp.get("transfers", ())) for name, dp in sorted(((memory or {}).get("devices") or {}).items())}


def _op_colors(doc: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
    """Colour per legend entry, and the entry of an op: its model, or its unit when the plan has one model."""
    ops = (doc.get("resources") or {}).get("ops") or {}
    kind_of = {d["name"]: d["kind"] for d in doc["devices"]}
    if len({info.get("model", "") for info in ops.values()}) > 1:
        def key(op: Mapping[str, Any]) -> str:
            return (ops.get(base_op_name(op["name"])) or {}).get("model", "ops")
    else:
        def key(op: Mapping[str, Any]) -> str:
            units = (ops.get(base_op_name(op["name"])) or {}).get("units") or {}
            if kind_of.get(op["device"]) in units:
                return f"{units[kind_of[op['device']]]} unit"
            unanimous = set(units.values())  # the device's kind unknown (a bare Plan): the unit if every kind agrees
            return f"{unanimous.pop()} unit" if len(unanimous) == 1 else "ops"
    names = sorted({key(o) for o in doc["ops"]})
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(names)}, key


def gantt_section(doc: Mapping[str, Any], memory: Mapping[str, Any] | None = None, *, width: int = 1100) -> str:
    """The Gantt chart of a plan document with its legend: device streams, DMA engines, links."""
    colors, key = _op_colors(doc)
    streams = {(o["device"], o["stream"]) for o in doc["ops"]}
    rows: list[str] = []
    row_of: dict[tuple[str, Any], int] = {}
    dmas = dma_transfers(memory)
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
    present = {b.kind for b in bars}  # only what the chart draws
    legend += "".join(f'<span style="background:{KIND_COLORS[kind]}"></span>{name}' for kind, name in
                      (("transfer", "transfer"), ("dma-in", "DMA prefetch"), ("dma-out", "DMA evict")) if kind in present)
    horizon = max([doc["makespan_cycles"], *(b.end_cycle for b in bars)])
    svg = gantt_svg(rows, bars, horizon, width=width, fmt=time_formatter(doc["clock_hz"], horizon))
    return f'<div class="legend">{legend}</div>\n<div class="scroll">{svg}</div>'
