"""Fleet outputs: ``allocation.json``, ``report.md`` and rows for a terminal table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.fleet.pipeline import FleetResult, ModeResult
from planner.fleet.resolve import DIMENSIONS
from planner.fleet.reduction import pool_of
from planner.report.fleet_html import render_fleet_html
from planner.report.markdown import search_line

__all__ = ["allocation_dict", "write_fleet_outputs", "fleet_summary_rows", "report_markdown"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:g}" if isinstance(x, float) else str(x)


def allocation_dict(result: FleetResult) -> dict[str, Any]:
    """The chosen allocation: tenant → processors with the share of each resource.

    Shares are exact demand over the processor's capacity.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> result = solve_fleet(load_fleet_spec(ISSUE_EXAMPLE), time_limit_s=2, workers=1)
    >>> allocation_dict(result)["tenants"]["a"][0]["share"]
    {'ops': 0.2, 'io': 0.3, 'storage': 0.0}
    """
    spec = result.spec
    m = result.allocation
    by_label = {it.label: it for it in result.items}
    tenants: dict[str, list[dict[str, Any]]] = {}
    for label, proc in m.placement.items():
        it = by_label[label]
        pool = pool_of(spec, proc)
        dem = it.demand[pool.name]
        tenants.setdefault(it.tenant, []).append({
            "instance": label, "variant": it.variant, "processor": proc, "pool": pool.name,
            "rate_rps": round(it.rate_rps, 9),
            "demand": {"ops_per_s": dem[0], "io_bytes_per_s": dem[1], "storage_bytes": dem[2]},
            "share": {d: round(x / c, 6) for d, x, c in zip(DIMENSIONS, dem, pool.capacity)},
        })
    processors = {}
    for proc, load in result.processor_loads().items():
        pool = pool_of(spec, proc)
        processors[proc] = {
            "pool": pool.name, "profile": pool.profile,
            "tenants": sorted(l for l, p in m.placement.items() if p == proc),
            "utilization": {d: round(x / c, 6) for d, x, c in zip(DIMENSIONS, load, pool.capacity)},
        }
    return {
        "format": "plan-fleet-allocation", "version": 1, "spec": spec.name, "mode": m.mode,
        "status": m.status, "objective": m.objective, "bound": m.bound, "gap": m.gap,
        "processors_used": m.processors_used, "cost": m.cost, "peak_utilization": round(m.peak_utilization, 6),
        "tenants": {k: tenants[k] for k in sorted(tenants)}, "processors": processors,
        "variants": {v.tenant: {"instances": v.instances, "served_rps": v.served_rps,
                                "mean_precision": round(v.mean_precision, 6)} for v in result.variants},
        "modes": {name: _mode_dict(mr) for name, mr in result.modes.items()},
        "backfill": result.backfill.to_dict() if result.backfill is not None else None,
        "solver": result.solver_summary,
    }


def _mode_dict(m: ModeResult) -> dict[str, Any]:
    return {"status": m.status, "objective": m.objective, "objective_unit": m.objective_unit, "bound": m.bound,
            "gap": m.gap, "stopped_by": m.stats.get("stopped_by", "deterministic_budget"), "solver": m.solver,
            "processors_used": m.processors_used, "cost": m.cost, "peak_utilization": round(m.peak_utilization, 6),
            "baseline": {"name": "first-fit decreasing", "objective": m.baseline_objective,
                         "processors_used": m.baseline_processors, "cost": m.baseline_cost,
                         "peak_utilization": None if m.baseline_peak is None else round(m.baseline_peak, 6)}}


def report_markdown(result: FleetResult) -> str:
    """The human report: modes side by side, utilization per processor and resource, backfill.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> result = solve_fleet(load_fleet_spec(ISSUE_EXAMPLE), time_limit_s=2, workers=1)
    >>> report_markdown(result).splitlines()[0]
    '# Fleet plan: issue-example'
    """
    spec = result.spec
    out = [f"# Fleet plan: {spec.name}", ""]
    out.append(f"{len(spec.tenants)} tenants ({len(result.items)} instances) on "
               + ", ".join(f"{p.name}: {p.count} x {p.profile}" for p in spec.pools)
               + f". Chosen mode: **{result.chosen}**.")
    out += ["", search_line(result.solver_summary)]
    out += ["", "## Modes (exact solver beside first-fit decreasing, same run)", "",
            "| mode | status | objective | bound | gap | processors | cost | peak util. | FFD processors | FFD cost | FFD peak |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in result.modes.items():
        out.append(f"| {name} | {m.status} | {_num(m.objective)} | {_num(m.bound)} | {_pct(m.gap)} | "
                   f"{m.processors_used} | {m.cost} | {_pct(m.peak_utilization)} | {_num(m.baseline_processors)} | "
                   f"{_num(m.baseline_cost)} | {_pct(m.baseline_peak)} |")
    out += ["", "power: fewest (cheapest) processors, then rebalanced among them to the lowest peak; "
            "spread: lowest peak utilization over every processor (latency headroom). Objectives: "
            + "; ".join(f"{n}: {m.objective_unit}" for n, m in result.modes.items()) + ".", ""]
    if result.variants:
        out += ["## Variants", "", "| tenant | instances | requests/s | mean precision | cost (bp of a processor) |",
                "|---|---|---|---|---|"]
        for v in result.variants:
            out.append(f"| {v.tenant} | " + ", ".join(f"{k}: {n}" for k, n in v.instances.items() if n) + " | "
                       + ", ".join(f"{k}: {r:g}" for k, r in v.served_rps.items() if r) + f" | {v.mean_precision:.4f} | "
                       f"{v.cost_bp} |")
        out.append("")
    out += [f"## Utilization per processor ({result.chosen})", "",
            "| processor | pool | tenants | ops | io | storage |", "|---|---|---|---|---|---|"]
    m = result.allocation
    totals = {p.name: [0, 0, 0] for p in spec.pools}
    for proc, load in result.processor_loads().items():
        pool = pool_of(spec, proc)
        names = sorted(l for l, p in m.placement.items() if p == proc)
        shown = ", ".join(names[:6]) + (f", ... ({len(names)})" if len(names) > 6 else "")
        out.append(f"| {proc} | {pool.name} | {shown} | "
                   + " | ".join(_pct(x / c) for x, c in zip(load, pool.capacity)) + " |")
        for d in range(3):
            totals[pool.name][d] += load[d]
    out += ["", "## Utilization per pool and resource", "", "| pool | processors used | ops | io | storage |",
            "|---|---|---|---|---|"]
    for p in spec.pools:
        used = sum(1 for proc in result.processor_loads() if pool_of(spec, proc).name == p.name)
        out.append(f"| {p.name} | {used} / {p.count} | "
                   + " | ".join(_pct(totals[p.name][d] / (p.capacity[d] * p.count)) for d in range(3)) + " |")
    out.append("")
    if result.backfill is not None:
        b = result.backfill
        out += ["## Backfill", "", f"Mode {b.mode}, horizon {b.horizon_s * 1e3:g} ms, trace {b.trace_source}. "
                f"Utilization {_pct(b.utilization_before)} → {_pct(b.utilization_after)} "
                f"(gained {_pct(b.gained)}). Primary deadlines missed because of backfill: "
                f"**{b.deadline_misses_caused}**."
                + (f" Requests past their deadline even without backfill (queueing at this allocation; "
                   f"lower fleet.max_utilization): {sum(p.misses_before for p in b.processors)}."
                   if any(p.misses_before for p in b.processors) else ""), "",
                "| processor | requests | borrower | before | after | overhead | misses (without / with) | note |",
                "|---|---|---|---|---|---|---|---|"]
        for p in b.processors:
            out.append(f"| {p.processor} | {p.requests} | {p.borrower or '-'} | {_pct(p.utilization_before)} | "
                       f"{_pct(p.utilization_after)} | {_pct(p.overhead)} | {p.misses_before} / {p.misses_after} | "
                       f"{p.note} |")
        out.append("")
    return "\n".join(out)


def write_fleet_outputs(result: FleetResult, out_dir: Path) -> list[Path]:
    """Write ``allocation.json``, ``report.md`` and ``report.html`` (drawn from allocation.json) into an existing
    directory.

    Returns the paths written.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> result = solve_fleet(load_fleet_spec(ISSUE_EXAMPLE), time_limit_s=2, workers=1)
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in write_fleet_outputs(result, Path(d))]
    ['allocation.json', 'report.md', 'report.html']
    """
    out_dir = Path(out_dir)
    a = out_dir / "allocation.json"
    a.write_text(json.dumps(allocation_dict(result), indent=2) + "\n", encoding="utf-8")
    r = out_dir / "report.md"
    r.write_text(report_markdown(result) + "\n", encoding="utf-8")
    h = out_dir / "report.html"  # drawn from the file as written, so every figure is allocation.json's
    h.write_text(render_fleet_html(json.loads(a.read_text(encoding="utf-8"))), encoding="utf-8")
    return [a, r, h]


def fleet_summary_rows(result: FleetResult) -> list[list[str]]:
    """Rows for a terminal table (header first): one per mode, with the FFD baseline.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> result = solve_fleet(load_fleet_spec(ISSUE_EXAMPLE), time_limit_s=2, workers=1)
    >>> fleet_summary_rows(result)[1][:6]
    ['power *', 'OPTIMAL', '1', '1', '0.0%', '1']
    """
    rows = [["mode", "status", "objective", "bound", "gap", "processors", "peak util.", "FFD processors",
             "FFD peak", "time"]]
    for name, m in result.modes.items():
        rows.append([name + (" *" if name == result.chosen else ""), m.status, _num(m.objective), _num(m.bound),
                     _pct(m.gap), str(m.processors_used), _pct(m.peak_utilization), _num(m.baseline_processors),
                     _pct(m.baseline_peak), f"{m.wall_time_s:.2f} s"])
    if result.backfill is not None:
        b = result.backfill
        rows.append(["backfill", b.mode, f"util {_pct(b.utilization_before)} -> {_pct(b.utilization_after)}", "", "",
                     "", "", "", f"misses caused: {b.deadline_misses_caused}", ""])
    return rows
