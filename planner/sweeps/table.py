"""The sweep's results table: one row per scenario, written as CSV, JSON lines and (with pyarrow) Parquet.

Every figure comes from the scenario's verified plan directory (``plan.json`` and the replay),
never from the process that planned it, so a resumed sweep, a process pool and Ray write the
same bytes. Times are in cycles of the spec's clock and in microseconds beside them.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["FLEET_TAIL", "scenario_row", "fleet_row", "failed_row", "table_columns", "csv_text", "jsonl_text",
           "parquet_available", "write_parquet"]

_HEAD = ("scenario",)
_TAIL = ("status", "objective_kind", "objective", "bound", "gap", "makespan_cycles", "makespan_us",
         "throughput_per_s", "reproducible", "error")
#: A fleet sweep's columns between the varied paths and the per-resource peaks.
FLEET_TAIL = ("status", "mode", "objective", "objective_unit", "bound", "gap", "processors_used", "cost",
              "reproducible", "error")


def scenario_row(name: str, values: Sequence[tuple[str, Any]], plan, simulation) -> dict[str, Any]:
    """A solved scenario's row from its verified plan and replay.

    ``throughput_per_s`` is inferences per second: one over the objective's period for the
    throughput objective (cycles per input in steady state), else one over the makespan.
    ``peak.<device>.<level>_bytes`` are the replay's peaks of live bytes.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(status="OPTIMAL", objective_kind="latency", objective=2_000, bound=2_000, gap=0.0,
    ...                        clock_hz=10**9, solver={"reproducible": True})
    >>> sim = SimpleNamespace(makespan_cycles=2_000, peak_bytes={"npu0": {"sram": 64}})
    >>> row = scenario_row("batch-8", [("models[0].generator.batch", 8)], plan, sim)
    >>> row["makespan_us"], row["throughput_per_s"], row["peak.npu0.sram_bytes"]
    (2.0, 500000.0, 64)
    """
    period = plan.objective if plan.objective_kind == "throughput" else simulation.makespan_cycles
    row: dict[str, Any] = {"scenario": name, **dict(values), "status": str(plan.status),
                           "objective_kind": plan.objective_kind, "objective": plan.objective, "bound": plan.bound,
                           "gap": None if plan.gap is None else round(plan.gap, 6),
                           "makespan_cycles": simulation.makespan_cycles,
                           "makespan_us": round(simulation.makespan_cycles * 1e6 / plan.clock_hz, 6),
                           "throughput_per_s": round(plan.clock_hz / period, 6) if period else None,
                           "reproducible": bool(plan.solver.get("reproducible", True)), "error": None}
    for device, levels in sorted((simulation.peak_bytes or {}).items()):
        for level, peak in sorted(levels.items()):
            row[f"peak.{device}.{level}_bytes"] = int(peak)
    return row


def fleet_row(name: str, values: Sequence[tuple[str, Any]], allocation: Mapping[str, Any],
              priced: bool) -> dict[str, Any]:
    """A fleet scenario's row from its ``allocation.json``: the chosen mode's figures and utilisation peaks.

    ``cost`` is the allocation's cost (the sum of the used processors' prices) when the spec
    prices its pools, else None (a processor count is not a cost). ``peak_util.<resource>`` is
    the highest utilisation of that resource over the processors used.

    Examples
    --------
    >>> allocation = {"mode": "power", "status": "OPTIMAL", "objective": 2, "bound": 2, "gap": 0.0,
    ...               "processors_used": 2, "cost": 4, "solver": {"reproducible": True},
    ...               "modes": {"power": {"objective_unit": "cost of the processors used"}},
    ...               "processors": {"p0": {"utilization": {"ops": 0.5, "io": 0.25}},
    ...                              "p1": {"utilization": {"ops": 0.75, "io": 0.125}}}}
    >>> row = fleet_row("count-2", [("fleet.pools[0].count", 2)], allocation, priced=False)
    >>> row["cost"], row["peak_util.ops"], row["peak_util.io"]
    (None, 0.75, 0.25)
    >>> fleet_row("count-2", [], allocation, priced=True)["cost"]
    4
    """
    mode = allocation["mode"]
    row: dict[str, Any] = {"scenario": name, **dict(values), "status": str(allocation["status"]), "mode": mode,
                           "objective": allocation["objective"],
                           "objective_unit": allocation["modes"][mode]["objective_unit"],
                           "bound": allocation["bound"],
                           "gap": None if allocation["gap"] is None else round(allocation["gap"], 6),
                           "processors_used": allocation["processors_used"],
                           "cost": allocation["cost"] if priced else None,
                           "reproducible": bool(allocation["solver"].get("reproducible", True)), "error": None}
    peaks: dict[str, float] = {}
    for processor in allocation["processors"].values():
        for resource, share in processor["utilization"].items():
            peaks[resource] = max(peaks.get(resource, 0.0), share)
    for resource, share in sorted(peaks.items()):
        row[f"peak_util.{resource}"] = round(share, 6)
    return row


def failed_row(name: str, values: Sequence[tuple[str, Any]], status: str, error: str,
               tail: Sequence[str] = _TAIL) -> dict[str, Any]:
    """A scenario that has no plan (infeasible, or none within its time limit).

    Examples
    --------
    >>> failed_row("count-1", [("hardware.devices[0].count", 1)], "INFEASIBLE", "memory")["objective"] is None
    True
    """
    return {"scenario": name, **dict(values), **{c: None for c in tail}, "status": status, "error": error}


def table_columns(rows: Iterable[Mapping[str, Any]], paths: Sequence[str], fleet: bool = False) -> list[str]:
    """The table's columns: scenario, the varied paths, the results, then every device's memory peaks
    (a fleet: every resource's utilisation peak).

    Examples
    --------
    >>> table_columns([{"peak.b0.sram_bytes": 1}, {"peak.a0.sram_bytes": 2}], ["solver.seed"])[-3:]
    ['error', 'peak.a0.sram_bytes', 'peak.b0.sram_bytes']
    """
    prefix = "peak_util." if fleet else "peak."
    peaks = sorted({k for r in rows for k in r if k.startswith(prefix)})
    return [*_HEAD, *paths, *(FLEET_TAIL if fleet else _TAIL), *peaks]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """The rows as CSV (empty cells for missing values; lists and mappings as JSON).

    Examples
    --------
    >>> print(csv_text([{"scenario": "a", "objective": 5}], ["scenario", "objective", "bound"]), end="")
    scenario,objective,bound
    a,5,
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([_cell(r.get(c)) for c in columns])
    return buffer.getvalue()


def jsonl_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """The rows as JSON lines, keys in column order (``null`` for missing values).

    Examples
    --------
    >>> print(jsonl_text([{"scenario": "a", "objective": 5}], ["scenario", "objective", "bound"]), end="")
    {"scenario": "a", "objective": 5, "bound": null}
    """
    return "".join(json.dumps({c: r.get(c) for c in columns}) + "\n" for r in rows)


def parquet_available() -> bool:
    """Whether pyarrow is installed (the optional ``parquet`` extra)."""
    return importlib.util.find_spec("pyarrow") is not None


def write_parquet(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], path) -> None:
    """Write the rows as Parquet (needs pyarrow).

    A column whose values are not all of one type (``fp16`` beside ``8``), or are lists or
    mappings, is stored as text (JSON for lists and mappings).
    """
    import pyarrow as pa  # optional dependency
    import pyarrow.parquet as pq  # optional dependency

    data = {}
    for c in columns:
        values = [r.get(c) for r in rows]
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 or kinds & {list, dict}:
            values = [None if v is None else _cell(v) for v in values]
        data[c] = values
    pq.write_table(pa.table(data), str(path))
