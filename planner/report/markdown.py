"""``report.md``: the optimality report, with the baselines side by side."""

from __future__ import annotations

from typing import Any

from planner.hardware import Hardware
from planner.plan import Plan

__all__ = ["device_rows", "link_rows", "render_report", "format_bytes", "format_gap", "markdown_table"]


def format_bytes(n: int | None) -> str:
    """Human size with binary units.

    >>> format_bytes(3 * 2**20), format_bytes(12)
    ('3.00 MiB', '12 B')
    """
    if n is None:
        return "-"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def format_gap(gap: float | None) -> str:
    """A relative gap as a percentage.

    >>> format_gap(0.0123), format_gap(None)
    ('1.23%', '-')
    """
    return "-" if gap is None else f"{100 * gap:.2f}%"


def device_rows(plan: Plan, hardware: Hardware, peak_bytes: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Per device: ops, busy cycles, utilization over the makespan, peak and capacity of memory."""
    rows = []
    span = max(plan.makespan_cycles, 1)
    for dev in hardware.devices:
        ops = [o for o in plan.ops if o.device == dev.name]
        busy = sum(o.duration_cycles for o in ops)
        rows.append({
            "device": dev.name, "kind": dev.kind, "profile": dev.profile.name, "streams": dev.streams,
            "ops": len(ops), "busy_cycles": busy,
            "utilization": busy / (span * dev.streams),
            "peak_memory_bytes": (peak_bytes or {}).get(dev.name),
            "memory_capacity_bytes": dev.memory_capacity_bytes,
        })
    return rows


def link_rows(plan: Plan, hardware: Hardware) -> list[dict[str, Any]]:
    """Per link: transfers, bytes moved and busy cycles."""
    rows = []
    for link in hardware.links:
        ts = [t for t in plan.transfers if t.link == link.name]
        rows.append({"link": link.name, "devices": list(link.devices), "transfers": len(ts),
                     "bytes": sum(t.size_bytes for t in ts), "busy_cycles": sum(t.duration_cycles for t in ts)})
    return rows


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table; None cells print as "-".

    >>> print(markdown_table(["a", "b"], [[1, None]]))
    | a | b |
    |---|---|
    | 1 | - |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("-" if c is None else str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)



def _strategy_line(solver: dict[str, Any]) -> str:
    """Which scheduler path ran, and why.

    >>> _strategy_line({"name": "hierarchical+lns", "strategy": "hierarchical",
    ...                 "strategy_requested": "auto", "groups": 160})
    'hierarchical (chosen by auto from the graph size): 160 groups placed by CP-SAT, then LNS'
    >>> _strategy_line({"name": "lns+cpsat", "strategy": "flat", "strategy_requested": "flat"})
    'flat: LNS, then CP-SAT over the whole graph'
    """
    why = " (chosen by auto from the graph size)" if solver.get("strategy_requested") == "auto" else ""
    groups = solver.get("groups", "?")
    how = {"lns+cpsat": "LNS, then CP-SAT over the whole graph", "cpsat": "CP-SAT over the whole graph",
           "hierarchical+lns": f"{groups} groups placed by CP-SAT, then LNS",
           "hierarchical": f"{groups} groups placed by CP-SAT"}.get(solver.get("name"), solver.get("name"))
    return f"{solver['strategy']}{why}: {how}"


def render_report(plan: Plan, hardware: Hardware, *, baselines: list[dict[str, Any]],
                  peak_bytes: dict[str, int] | None = None, replay: dict[str, Any] | None = None,
                  sections: list[str] | None = None) -> str:
    """The whole report as Markdown.

    ``baselines`` rows have ``solver``, ``status``, ``objective``, ``bound`` (the planner's own
    result first); ``replay`` carries the simulator's figures (makespan, instructions).
    """
    us = plan.makespan_cycles * 1e6 / plan.clock_hz
    unit = "cycles (makespan)" if plan.objective_kind == "latency" else "cycles (max load)"
    out = [f"# Plan report: {plan.spec_name}", ""]
    out.append(markdown_table(["", ""], [
        ["status", plan.status],
        ["objective", f"{plan.objective_kind}: {plan.objective} {unit}"],
        ["best bound", plan.bound if plan.bound is not None else "-"],
        ["gap", format_gap(plan.gap)],
        ["makespan", f"{plan.makespan_cycles} cycles = {us:.3f} us at {plan.clock_hz / 1e9:g} GHz"],
        ["solver", f"{plan.solver.get('name', '?')} (workers {plan.solver.get('workers')}, "
                   f"seed {plan.solver.get('seed')}, limit {plan.solver.get('time_limit_s')} s)"],
        *([["strategy", _strategy_line(plan.solver)]] if "strategy" in plan.solver else []),
        ["wall time", f"{plan.wall_time_s:.2f} s"],
    ]))
    out += ["", "## Baselines, same run", ""]
    best = plan.objective
    out.append(markdown_table(["solver", "status", "objective", "bound", "vs planner"], [
        [b["solver"], b["status"], b["objective"] if b["objective"] is not None else "-",
         b["bound"] if b.get("bound") is not None else "-",
         "-" if b["objective"] is None else f"{100 * (b['objective'] - best) / max(best, 1):+.2f}%"]
        for b in baselines]))
    if replay:
        out += ["", "## Replay", "",
                f"The simulator decoded the binaries, recomputed every instruction's cycles from the ISA and "
                f"replayed {replay.get('instructions', '?')} instructions: makespan {replay['makespan_cycles']} "
                f"cycles, identical to the plan, with no dependency, stream, link or memory violation."]
    out += ["", "## Devices", ""]
    out.append(markdown_table(["device", "kind", "profile", "streams", "ops", "busy cycles", "utilization",
                       "peak memory", "capacity"], [
        [r["device"], r["kind"], r["profile"], r["streams"], r["ops"], r["busy_cycles"],
         f"{100 * r['utilization']:.1f}%", format_bytes(r["peak_memory_bytes"]),
         format_bytes(r["memory_capacity_bytes"])] for r in device_rows(plan, hardware, peak_bytes)]))
    links = link_rows(plan, hardware)
    if links:
        out += ["", "## Links", ""]
        out.append(markdown_table(["link", "devices", "transfers", "bytes", "busy cycles"], [
            [r["link"], " ".join(r["devices"]), r["transfers"], format_bytes(r["bytes"]), r["busy_cycles"]]
            for r in links]))
    for section in sections or ():
        out += ["", section.rstrip()]
    models = plan.resources.get("models") if isinstance(plan.resources, dict) else None
    if models:
        out += ["", "## Resources determined before running", ""]
        keys = [k for k in ("ops", "macs", "flops", "weight_bytes", "io_bytes") if k in next(iter(models.values()))]
        out.append(markdown_table(["model", *keys], [[m, *[v.get(k) for k in keys]] for m, v in sorted(models.items())]))
    out += ["", "## How to read this", "",
            "- **status** OPTIMAL means the solver proved no plan is better; FEASIBLE means the plan is valid and "
            "the optimum lies between **best bound** and the objective; **gap** = (objective - bound) / objective.",
            "- **Baselines** were computed in the same run on the same problem; the planner is never worse than its "
            "own heuristic, which is also its warm start.",
            "- Times are cycles of the plan's reference clock; `trace.json` opens in https://ui.perfetto.dev.", ""]
    return "\n".join(out)
