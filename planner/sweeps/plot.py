"""The sweep's plots: the objective against each varied parameter, as a small standalone SVG.

Plain SVG text (no plotting library): the varied values sit at even steps along x in the order
given on the command line (they may be numbers, words or lists); one line joins the scenarios
that share the other parameters' values, so a 3 x 4 grid draws 4 lines on the first plot and 3 on
the second. Scenarios without a plan are left out.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Mapping, Sequence

__all__ = ["objective_svg"]

_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 640, 360, 90, 190, 40, 50
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf")


_AXIS = {"latency": "latency (cycles)", "throughput": "throughput objective (cycles per input)",
         "max-load": "max load (cycles)"}


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _series(rows: Sequence[Mapping[str, Any]], path: str, paths: Sequence[str]) -> dict[str, list[tuple[Any, float]]]:
    others = [p for p in paths if p != path]
    series: dict[str, list[tuple[Any, float]]] = {}
    for r in rows:
        if r.get("objective") is None:
            continue
        key = ", ".join(f"{p.rsplit('.', 1)[-1]}={_label(r[p])}" for p in others) or "objective"
        series.setdefault(key, []).append((r[path], float(r["objective"])))
    return series


def _decimals(span: float) -> int:
    """Digits after the point for axis ticks: none for cycles, enough for a fleet's fractions."""
    return 0 if span >= 40 else 3


def objective_svg(rows: Sequence[Mapping[str, Any]], path: str, values: Sequence[Any],
                  paths: Sequence[str]) -> str:
    """An SVG plot of each scenario's objective against ``path`` (taking ``values``, in order).

    Examples
    --------
    >>> rows = [{"scenario": "c-1", "count": 1, "objective": 10, "objective_kind": "latency"},
    ...         {"scenario": "c-2", "count": 2, "objective": 6, "objective_kind": "latency"}]
    >>> svg = objective_svg(rows, "count", [1, 2], ["count"])
    >>> svg.startswith("<svg") and svg.count("<circle") == 2 and "latency (cycles)" in svg
    True
    """
    kind = next((r.get("objective_kind") or r.get("objective_unit") for r in rows
                 if r.get("objective_kind") or r.get("objective_unit")), "objective")  # a fleet: its unit
    series = _series(rows, path, paths)
    ys = [y for points in series.values() for _, y in points] or [0.0]
    low, high = min(0.0, min(ys)), max(ys) or 1.0
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    labels = [_label(v) for v in values]

    def x_of(value: Any) -> float:
        step = plot_w / max(1, len(values) - 1)
        index = labels.index(_label(value))
        return _LEFT + (index * step if len(values) > 1 else plot_w / 2)

    def y_of(y: float) -> float:
        return _TOP + plot_h - (y - low) / (high - low or 1.0) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<title>{escape(kind)} against {escape(path)}</title>',
             f'<rect width="{_W}" height="{_H}" fill="white"/>',
             f'<text x="{_LEFT}" y="20" font-size="14">{escape(_AXIS.get(kind, kind))} against {escape(path)}</text>',
             f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" y2="{_TOP + plot_h}" stroke="black"/>',
             f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}" stroke="black"/>']
    decimals = _decimals(high - low)
    for tick in range(5):
        y = low + (high - low) * tick / 4
        parts.append(f'<text x="{_LEFT - 6}" y="{y_of(y) + 4:.1f}" text-anchor="end">{y:,.{decimals}f}</text>')
    for value, label in zip(values, labels):
        parts.append(f'<text x="{x_of(value):.1f}" y="{_TOP + plot_h + 18}" text-anchor="middle">'
                     f'{escape(label)}</text>')
    parts.append(f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_H - 8}" text-anchor="middle">{escape(path)}</text>')
    for i, (key, points) in enumerate(series.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        coords = " ".join(f"{x_of(v):.1f},{y_of(y):.1f}" for v, y in points)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts += [f'<circle cx="{x_of(v):.1f}" cy="{y_of(y):.1f}" r="4" fill="{colour}">'
                  f'<title>{escape(key)}: {y:,.0f}</title></circle>' for v, y in points]
        legend_y = _TOP + 16 * i
        parts.append(f'<rect x="{_W - _RIGHT + 12}" y="{legend_y}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{_W - _RIGHT + 28}" y="{legend_y + 9}">{escape(key)}</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)
