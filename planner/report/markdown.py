"""``report.md``: the optimality report, with the baselines side by side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from planner.instances import base_op_name
from planner.plan import Plan
from planner.units import format_bytes  # re-exported: the report's byte format

__all__ = ["DeviceFacts", "LinkFacts", "ReportHardware", "device_rows", "link_rows", "render_report", "format_bytes",
           "net_stops_text", "format_gap", "format_levels", "level_capacities", "markdown_table", "op_count", "report_hardware",
           "search_cell", "strategy_line", "search_line"]


def format_gap(gap: float | None) -> str:
    """A relative gap as a percentage.

    >>> format_gap(0.0123), format_gap(None)
    ('1.23%', '-')
    """
    return "-" if gap is None else f"{100 * gap:.2f}%"


def search_cell(solver: dict[str, Any]) -> str:
    """The report's short word on the search: deterministic and reproducible, or why not.

    >>> search_cell({"search": "deterministic", "stopped_by": "deterministic_budget", "reproducible": True})
    'deterministic (reproducible)'
    >>> search_cell({"search": "deterministic", "stopped_by": "wall_clock", "reproducible": False})
    'deterministic, stopped by the wall-clock safety net: NOT reproducible'
    >>> search_cell({"search": "until-limit", "stopped_by": "time_limit", "reproducible": False})
    'until-limit: NOT reproducible'
    """
    search = solver.get("search", "deterministic")
    if solver.get("reproducible", True):
        return f"{search} (reproducible)"
    if search == "deterministic":
        return "deterministic, stopped by the wall-clock safety net: NOT reproducible"
    return f"{search}: NOT reproducible"


def search_line(solver: dict[str, Any]) -> str:
    """The report's sentence on how the search ended and whether the same inputs repeat it.

    >>> search_line({"search": "until-limit", "stopped_by": "time_limit", "reproducible": False})[:44]
    '**Search: until-limit.** It searched until t'
    """
    search = solver.get("search", "deterministic")
    if search == "until-limit":
        return ("**Search: until-limit.** It searched until the wall clock, so this run is **not reproducible**: "
                "another run of the same spec may give a different plan. `search: deterministic` (the default) "
                "gives the same files for the same spec, seed and workers.")
    if not solver.get("reproducible", True):
        return ("**Search: deterministic, but NOT reproducible.** The wall-clock safety net (3 x the time limit "
                f"+ 5 s) stopped a solve{net_stops_text(solver)} before its deterministic budget was spent: "
                "the machine was more than three times slower than the calibration machine, or very busy. "
                "Another run may give a different "
                "plan; run again on a less busy machine for the reproducible result.")
    how = ("its deterministic budget" if solver.get("stopped_by") == "deterministic_budget"
           else "finishing (every stage proved or converged)")
    return (f"**Search: deterministic**, ended by {how}: the same spec, seed and workers give the same "
            "files on any machine, busy or idle.")


def net_stops_text(solver: dict[str, Any]) -> str:
    """The solves plan.json's ``solver.net_stops`` names, as a parenthesis ("" when none).

    >>> net_stops_text({"net_stops": ["addresses d0/hbm"]}), net_stops_text({})
    (' (addresses d0/hbm)', '')
    """
    stops = solver.get("net_stops") or []
    return f" ({', '.join(str(s) for s in stops)})" if stops else ""


def level_capacities(device) -> dict[str, int]:
    """Capacity per memory level of a device (its main level capped as the spec says), as its binary's header has it."""
    main = device.profile.main_memory.name
    return {lv.name: device.memory_capacity_bytes if lv.name == main else lv.capacity_bytes
            for lv in device.profile.memory}


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """What the report shows of a device: its names, streams, main level and each level's capacity.

    ``plan solve`` takes them from the spec's hardware (:func:`report_hardware`); the verifier
    from plan.json's device entries and each binary's header, so the two must agree.
    """

    name: str
    kind: str
    profile: str
    streams: int
    main_level: str
    capacities: Mapping[str, int]  # level -> bytes, in the profile's order


@dataclass(frozen=True, slots=True)
class LinkFacts:
    """What the report shows of a link: its name and its two devices."""

    name: str
    devices: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReportHardware:
    """The hardware as report.md draws it (devices and links in the spec's order)."""

    devices: tuple[DeviceFacts, ...]
    links: tuple[LinkFacts, ...]


def report_hardware(hardware) -> ReportHardware:
    """The report's view of a spec's :class:`~planner.hardware.Hardware`.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> facts = report_hardware(load_spec("specs/taskgraph.yaml").hardware)
    >>> [(d.name, d.main_level, len(d.capacities)) for d in facts.devices], [l.name for l in facts.links]
    ([('fast0', 'mem', 1), ('slow0', 'mem', 1)], ['wire'])
    """
    devices = tuple(DeviceFacts(d.name, d.kind, d.profile.name, d.streams, d.profile.main_memory.name,
                                level_capacities(d)) for d in hardware.devices)
    return ReportHardware(devices, tuple(LinkFacts(l.name, tuple(l.devices)) for l in hardware.links))


def op_count(names: list[str], graph=None) -> str:
    """``"17 ops"``, or ``"17 ops (68 instances)"`` when split ops run as several instances.

    Examples
    --------
    >>> op_count(["a", "b"]), op_count(["fc#0", "fc#1", "relu"], None), op_count(["a"])
    ('2 ops', '3 ops', '1 op')
    >>> from planner.graph.ir import Graph, Op
    >>> op_count(["fc#0", "fc#1", "relu"], Graph([], [Op("fc", "task"), Op("relu", "task")]))
    '2 ops (3 instances)'
    """
    bases = set(names) if graph is None else {base_op_name(name, graph.ops) for name in names}
    ops = f"{len(bases)} op" + ("" if len(bases) == 1 else "s")
    return ops + (f" ({len(names)} instances)" if len(bases) != len(names) else "")


def device_rows(plan: Plan, hardware: ReportHardware, peak_bytes: dict[str, dict[str, int]] | None = None,
                graph=None) -> list[dict[str, Any]]:
    """Per device: ops (and op instances), busy cycles, utilization, and per memory level the
    replayed peak against that level's capacity (``levels``: level -> (peak, capacity)).

    A level's peak is compared with its own capacity only: the peaks of several levels are
    never summed. Levels the binaries never use are left out, except the main level.
    """
    rows = []
    span = max(plan.makespan_cycles, 1)
    for dev in hardware.devices:
        ops = [o for o in plan.ops if o.device == dev.name]
        busy = sum(o.duration_cycles for o in ops)
        peaks = (peak_bytes or {}).get(dev.name) or {}
        levels = {name: (peaks.get(name, 0), cap) for name, cap in dev.capacities.items()
                  if peaks.get(name) or name == dev.main_level}
        rows.append({
            "device": dev.name, "kind": dev.kind, "profile": dev.profile, "streams": dev.streams,
            "ops": op_count([o.name for o in ops], graph), "instances": len(ops), "busy_cycles": busy,
            "utilization": busy / (span * dev.streams), "levels": levels,
        })
    return rows


def format_levels(levels: dict[str, tuple[int, int]]) -> str:
    """``"sram 3.36 MiB of 4.00 MiB; lpddr 1.06 MiB of 4.00 GiB"``.

    >>> format_levels({"hbm": (1024, 2048)})
    'hbm 1.00 KiB of 2.00 KiB'
    """
    return "; ".join(f"{name} {format_bytes(peak)} of {format_bytes(cap)}" for name, (peak, cap) in levels.items())


def link_rows(plan: Plan, hardware: ReportHardware) -> list[dict[str, Any]]:
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



def strategy_line(solver: dict[str, Any]) -> str:
    """Which scheduler path ran, and why.

    >>> strategy_line({"name": "hierarchical+lns", "strategy": "hierarchical",
    ...                 "strategy_requested": "auto", "groups": 160})
    'hierarchical (chosen by auto from the graph size): 160 groups placed by CP-SAT, then LNS'
    >>> strategy_line({"name": "lns+cpsat", "strategy": "flat", "strategy_requested": "flat"})
    'flat: LNS, then CP-SAT over the whole graph'
    >>> strategy_line({"name": "hierarchical", "strategy": "hierarchical", "strategy_requested": "auto",
    ...                "stages": {"segments": "ran", "bound": "ran",
    ...                           "placer": "the incumbent meets the proven bound",
    ...                           "lns": "the incumbent meets the proven bound"}}).split(": ", 1)[1]
    'glued segments; bound; placer skipped (the incumbent meets the proven bound); LNS skipped (the same)'
    """
    why = " (chosen by auto from the graph size)" if solver.get("strategy_requested") == "auto" else ""
    groups = solver.get("groups", "?")
    how = {"lns+cpsat": "LNS, then CP-SAT over the whole graph", "cpsat": "CP-SAT over the whole graph",
           "hierarchical+lns": f"{groups} groups placed by CP-SAT, then LNS",
           "hierarchical": f"{groups} groups placed by CP-SAT"}.get(solver.get("name"), solver.get("name"))
    if "stages" in solver:  # the hierarchical path says which of its stages ran
        how = _stages_phrase(solver["stages"], groups)
    return f"{solver['strategy']}{why}: {how}"


def _stages_phrase(stages: Mapping[str, str], groups: Any) -> str:
    """``glued segments; bound; placer skipped (why); ...``: each stage that ran, in order, or
    why it was skipped."""
    words = {"segments": "glued segments", "bound": "bound", "placer": f"{groups} groups placed by CP-SAT",
             "lns": "LNS"}
    parts, last_reason = [], None
    for name, state in stages.items():
        if state == "ran":
            parts.append(words.get(name, name))
        else:
            label = {"lns": "LNS", "segments": "segment glue"}.get(name, name)
            parts.append(f"{label} skipped ({'the same' if state == last_reason else state})")
            last_reason = state
    return "; ".join(parts)


def render_report(plan: Plan, hardware: ReportHardware, *, baselines: Sequence[Mapping[str, Any]],
                  peak_bytes: dict[str, dict[str, int]] | None = None, replay: dict[str, Any] | None = None,
                  sections: list[str] | None = None, graph=None) -> str:
    """The whole report as Markdown.

    ``baselines`` rows have ``solver``, ``status``, ``objective``, ``bound`` (the planner's own
    result first); ``peak_bytes`` the replayed peak per device and level; ``replay`` the
    simulator's figures (``makespan_cycles``, ``instructions``), whether memory.json was
    verified (``memory``) and the numeric replay's line (``numeric``); ``graph`` lets the
    device table count split ops once.

    The report holds no wall-clock time (the terminal prints it): the same spec, seed and
    workers give the same bytes, and plan.json records the report's sha256.
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
        *([["strategy", strategy_line(plan.solver)]] if "strategy" in plan.solver else []),
        ["search", search_cell(plan.solver)],
    ]))
    if plan.solver.get("search") is not None:
        out += ["", search_line(plan.solver)]
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
                f"cycles, identical to the plan, with no dependency, stream, link or memory violation. "
                f"The independent verifier (`plan simulate` runs it again) checked every figure of plan.json"
                f"{', memory.json' if replay.get('memory') else ''} and allocation.json against that replay."]
        if replay.get("numeric"):
            out += ["", f"- {replay['numeric']}"]
        if replay.get("bandwidth"):  # memory.bandwidth: shared (planner.simulator.bandwidth)
            out += ["", "Ops and DMAs shared each level's bandwidth (`memory.bandwidth: shared`, 1000 shares a "
                    "level); the replay checked that no level was ever over-subscribed:", "",
                    markdown_table(["device", "level", "peak shares", "cycles shared by 2+", "cycles fully held"],
                                   [[d, lv, f["peak_shares"], f["shared_cycles"], f["full_cycles"]]
                                    for d, levels in sorted(replay["bandwidth"].items())
                                    for lv, f in levels.items()])]
    out += ["", "## Devices", ""]
    out.append(markdown_table(["device", "kind", "profile", "streams", "ops", "busy cycles", "utilization",
                               "memory: peak of capacity, per level"], [
        [r["device"], r["kind"], r["profile"], r["streams"], r["ops"], r["busy_cycles"],
         f"{100 * r['utilization']:.1f}%", format_levels(r["levels"])]
        for r in device_rows(plan, hardware, peak_bytes, graph)]))
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
