"""A fleet's ``report.html``: its allocation drawn, from the fleet's ``allocation.json`` alone.

The headline figures of the chosen mode (objective, bound, gap, processors, cost, peak
utilisation), every mode against the first-fit-decreasing baseline, and per processor the
utilisation of each resource (ops, I/O, storage), each bar made of its tenants' shares;
with backfill, each processor's utilisation before and after. Inline SVG and CSS, no script.

Examples
--------
>>> doc = {"spec": "f", "mode": "power", "status": "OPTIMAL", "objective": 3, "bound": 3, "gap": 0.0,
...        "processors_used": 1, "cost": 3, "peak_utilization": 0.5, "modes": {}, "backfill": None,
...        "tenants": {"a": [{"instance": "a", "processor": "p0", "share": {"ops": 0.5, "io": 0.1}}]},
...        "processors": {"p0": {"pool": "x", "utilization": {"ops": 0.5, "io": 0.1}}}}
>>> page = render_fleet_html(doc)
>>> page.count('class="segment"'), 'data-value="0.5"' in page
(2, True)
"""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from planner.charts import KIND_COLORS, PALETTE, STYLE, stacked_bars_svg

__all__ = ["render_fleet_html"]


def _card(key: str, value: Any, field: str) -> str:
    shown = "-" if value is None else f"{100 * value:.2f}%" if field in ("gap", "peak_utilization") else f"{value:,}"
    return (f'<div class="card" data-field="{field}" data-value="{escape(str(value))}"><div class="k">{escape(key)}'
            f'</div><div class="v">{escape(shown)}</div></div>')


def _modes_table(doc: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr data-mode="{escape(name)}"><td>{escape(name)}{" (chosen)" if name == doc["mode"] else ""}</td>'
        f'<td>{escape(str(m["status"]))}</td><td>{m["objective"]:,}</td><td style="text-align:left">{escape(m["objective_unit"])}</td>'
        f'<td>{m["processors_used"]}</td><td>{m["cost"]:,}</td><td>{m["baseline"]["objective"]:,}</td>'
        f'<td>{m["baseline"]["processors_used"]}</td></tr>' for name, m in (doc.get("modes") or {}).items())
    if not rows:
        return ""
    return ("<h2>Modes against first-fit decreasing</h2><table><tr><th>mode</th><th>status</th><th>objective</th>"
            '<th style="text-align:left">unit</th><th>processors</th><th>cost</th><th>FFD objective</th>'
            f"<th>FFD processors</th></tr>{rows}</table>")


def _utilisation(doc: Mapping[str, Any]) -> str:
    tenants = sorted(doc.get("tenants") or {})
    color = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(tenants)}
    shares: dict[tuple[str, str], list[tuple[str, float, str]]] = {}
    for tenant in tenants:
        for inst in doc["tenants"][tenant]:
            for resource, value in inst["share"].items():
                shares.setdefault((inst["processor"], resource), []).append((inst["instance"], value, color[tenant]))
    rows = [(f"{proc} · {resource}", shares.get((proc, resource), []), value)
            for proc, info in doc["processors"].items() for resource, value in info["utilization"].items()]
    legend = "".join(f'<span style="background:{c}"></span>{escape(t)}' for t, c in color.items())
    return f'<div class="legend">{legend}</div>{stacked_bars_svg(rows)}'


def _backfill(doc: Mapping[str, Any]) -> str:
    backfill = doc.get("backfill")
    if not backfill:
        return ""
    served, lent = KIND_COLORS["transfer"], KIND_COLORS["dma-in"]
    rows = []
    for p in backfill["processors"]:
        before, after = p["utilization_before"], p["utilization_after"]
        rows += [(f"{p['processor']} before", [("its tenants", before, served)], before),
                 (f"{p['processor']} after", [("its tenants", before, served),
                                              (f"backfill ({p['borrower'] or '-'})", after - before, lent)], after)]
    legend = f'<div class="legend"><span style="background:{served}"></span>its tenants' \
             f'<span style="background:{lent}"></span>backfill</div>'
    return (f"<h2>Backfill ({escape(backfill['mode'])})</h2><p class=\"legend\">Busy fraction of each processor over "
            f"{backfill['horizon_s']:g} s before and after lending its idle time; deadline misses caused: "
            f"{backfill['deadline_misses_caused_by_backfill']}.</p>{legend}{stacked_bars_svg(rows)}")


def render_fleet_html(doc: Mapping[str, Any]) -> str:
    """A fleet's ``report.html`` from its ``allocation.json`` document (the same document, the same bytes)."""
    cards = "".join([_card("objective", doc["objective"], "objective"), _card("bound", doc["bound"], "bound"),
                     _card("gap", doc["gap"], "gap"), _card("processors used", doc["processors_used"],
                                                            "processors_used"),
                     _card("cost", doc["cost"], "cost"), _card("peak utilisation", doc["peak_utilization"],
                                                                "peak_utilization")])
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>plan · {escape(doc['spec'])}</title>", f"<style>{STYLE}</style></head><body>",
             f"<header><h1>{escape(doc['spec'])} <span class=\"status {escape(str(doc['status']))}\">"
             f"{escape(str(doc['status']))}</span></h1><p>fleet · mode {escape(doc['mode'])} · "
             f"{len(doc.get('tenants') or {})} tenants on {len(doc['processors'])} processors</p></header><main>",
             f'<div class="cards">{cards}</div>', _modes_table(doc),
             "<h2>Utilisation per processor and resource</h2><p class=\"legend\">Each bar is a processor's load of one "
             "resource over its capacity, made of its tenants' shares (hover a segment for the instance).</p>",
             _utilisation(doc), _backfill(doc),
             "<footer>Drawn from allocation.json; report.md has the tables.</footer></main></body></html>"]
    return "\n".join(p for p in parts if p) + "\n"
