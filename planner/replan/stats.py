"""Monitored statistics of a plan: written by ``plan simulate --stats-out``, read by ``plan replan``.

Two formats are read:

- our JSON (``"format": "plan-stats"``, version 1): ``graph_sha256`` (the plan's graph.json,
  so stats of another plan are refused), ``clock_hz``, ``makespan_cycles``, ``ops`` (op name
  -> ``device``, ``stream``, ``start_cycle``, ``measured_cycles``, ``planned_cycles``) and
  ``transfers`` (``src_op``, ``dst_op``, ``link``, ``size_bytes``, ``start_cycle``,
  ``measured_cycles``, ``planned_cycles``);
- a Chrome/Perfetto trace (``{"traceEvents": [...]}`` such as trace.json): every complete
  (``"ph": "X"``) event of category ``op`` is an op measured on the device its process is
  named after, for ``args.measured_cycles`` cycles or else ``dur`` microseconds.

Nothing here imports the solve stage: ``plan simulate`` writes stats without it.

Examples
--------
>>> from planner.simulator.slowdown import MeasuredOp, WhatIf
>>> doc = stats_document(WhatIf({"a": MeasuredOp("d0", 0, 0, 20, 10)}, (), 20), graph_sha256="0" * 64,
...                      clock_hz=10**9, spec="s", slowdown={"d0": 2.0})
>>> measured_ops(doc, "stats.json")["a"]
('d0', 20)
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from planner.errors import SpecError
from planner.graph.serialize import read_graph_json
from planner.simulator.bandwidth import record_holdings
from planner.simulator.slowdown import WhatIf, parse_slowdown, what_if

__all__ = ["STATS_FORMAT", "stats_document", "trace_document", "measured_ops", "measured_links", "dumps", "what_if_stats"]

STATS_FORMAT = "plan-stats"


def stats_document(what_if: WhatIf, *, graph_sha256: str, clock_hz: int, spec: str,
                   slowdown: Mapping[str, float], noise: float = 0.0, seed: int = 0) -> dict[str, Any]:
    """The stats JSON of a what-if replay (see the module docstring)."""
    return {"format": STATS_FORMAT, "version": 1, "spec": spec, "graph_sha256": graph_sha256, "clock_hz": clock_hz,
            "injected": {"slow": dict(slowdown), "noise": noise, "seed": seed},
            "makespan_cycles": what_if.makespan_cycles,
            "ops": {n: m._asdict() for n, m in what_if.ops.items()},
            "transfers": [t._asdict() for t in what_if.transfers]}


def trace_document(what_if: WhatIf, clock_hz: int) -> dict[str, Any]:
    """A Chrome/Perfetto trace of a what-if replay: a process per device and one for the links."""
    names = sorted({m.device for m in what_if.ops.values()})
    pid = {name: i + 1 for i, name in enumerate(names)}
    links = len(names) + 1
    us = 1_000_000 / clock_hz
    events: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": pid[n], "tid": 0, "args": {"name": n}}
                                    for n in names]
    events.append({"ph": "M", "name": "process_name", "pid": links, "tid": 0, "args": {"name": "links"}})
    for name, m in what_if.ops.items():
        events.append({"ph": "X", "name": name, "cat": "op", "pid": pid[m.device], "tid": m.stream,
                       "ts": m.start_cycle * us, "dur": m.measured_cycles * us,
                       "args": {"measured_cycles": m.measured_cycles, "planned_cycles": m.planned_cycles}})
    for t in what_if.transfers:
        events.append({"ph": "X", "name": f"{t.src_op} -> {t.dst_op}", "cat": "transfer", "pid": links, "tid": 0,
                       "ts": t.start_cycle * us, "dur": t.measured_cycles * us,
                       "args": {"link": t.link, "measured_cycles": t.measured_cycles,
                                "planned_cycles": t.planned_cycles}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def _bad(source: str, what: str) -> SpecError:
    return SpecError(f"{source}: {what}")


def _trace_ops(doc: Mapping[str, Any], source: str, clock_hz: int) -> dict[str, tuple[str, int]]:
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        raise _bad(source, "traceEvents: expected a list of trace events")
    process = {e.get("pid"): e.get("args", {}).get("name") for e in events
               if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"}
    ops: dict[str, tuple[str, int]] = {}
    for i, e in enumerate(events):
        if not (isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") == "op"):
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        cycles = args.get("measured_cycles")
        if not isinstance(cycles, int):
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                raise _bad(source, f"traceEvents[{i}].dur: expected microseconds >= 0, got {dur!r}")
            cycles = round(dur * clock_hz / 1_000_000)
        device = process.get(e.get("pid"))
        if not isinstance(e.get("name"), str) or not isinstance(device, str):
            raise _bad(source, f"traceEvents[{i}]: an op event needs a name and a named process (its device)")
        ops[e["name"]] = (device, cycles)
    return ops


def measured_ops(doc: Any, source: str, clock_hz: int = 10**9) -> dict[str, tuple[str, int]]:
    """Op name -> (device, measured cycles) from stats JSON or a trace (``clock_hz`` converts a trace's µs).

    Raises
    ------
    SpecError
        A document that is neither format, or a malformed entry.
    """
    if isinstance(doc, dict) and "traceEvents" in doc:
        return _trace_ops(doc, source, clock_hz)
    if not (isinstance(doc, dict) and doc.get("format") == STATS_FORMAT and doc.get("version") == 1):
        raise _bad(source, f'expected stats JSON ("format": "{STATS_FORMAT}", "version": 1) or a Chrome trace '
                           '({"traceEvents": [...]})')
    ops = doc.get("ops")
    if not isinstance(ops, dict):
        raise _bad(source, "ops: expected an object of op name -> measurements")
    out: dict[str, tuple[str, int]] = {}
    for name, m in ops.items():
        if not (isinstance(m, dict) and isinstance(m.get("device"), str) and isinstance(m.get("measured_cycles"), int)
                and m["measured_cycles"] >= 0):
            raise _bad(source, f"ops[{name!r}]: expected device and measured_cycles (an integer >= 0)")
        out[name] = (m["device"], m["measured_cycles"])
    return out


def measured_links(doc: Any) -> dict[str, list[tuple[int, int]]]:
    """Link name -> [(planned, measured) cycles] of each transfer (stats JSON only; a trace gives none).

    Examples
    --------
    >>> measured_links({"transfers": [{"link": "l", "planned_cycles": 4, "measured_cycles": 8}]})
    {'l': [(4, 8)]}
    """
    out: dict[str, list[tuple[int, int]]] = {}
    for t in doc.get("transfers", []) if isinstance(doc, dict) else []:
        if isinstance(t, dict) and isinstance(t.get("link"), str) and isinstance(t.get("planned_cycles"), int) \
                and isinstance(t.get("measured_cycles"), int):
            out.setdefault(t["link"], []).append((t["planned_cycles"], t["measured_cycles"]))
    return out


def dumps(doc: Mapping[str, Any]) -> str:
    """The bytes a stats or trace document is written as (sorted keys: the same replay, the same bytes)."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def what_if_stats(verdict: Any, slow: str | None, noise_pct: float, seed: int) -> tuple[WhatIf, dict[str, Any]]:
    """The what-if replay of a verified plan directory (:class:`planner.verify.Verdict`) under
    ``--slow``/``--noise``, and its stats document.

    Raises
    ------
    SpecError
        A bad ``--slow`` or ``--noise`` (:func:`planner.simulator.slowdown.parse_slowdown`).
    """
    doc = verdict.document
    slowdown = parse_slowdown(slow, [d.name for d in doc.devices], [link.name for link in doc.links],
                              noise_pct=noise_pct, seed=seed)
    graph = read_graph_json(verdict.plan_dir / "graph.json")
    tensors = {name: (*op.inputs, *op.outputs) for name, op in graph.ops.items()}
    held = record_holdings(verdict.programs, verdict.simulation)  # memory.bandwidth: shared (header flag)
    replay = what_if(verdict.simulation, [(u, v) for u, v, _ in graph.op_edges()], slowdown, tensors, held)
    return replay, stats_document(replay, graph_sha256=doc.files["graph.json"], clock_hz=doc.clock_hz,
                                  spec=doc.spec, slowdown=slowdown.factors, noise=slowdown.noise, seed=seed)
