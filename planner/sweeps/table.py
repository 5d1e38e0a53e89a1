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

__all__ = ["scenario_row", "failed_row", "table_columns", "csv_text", "jsonl_text", "parquet_available",
           "write_parquet"]

_HEAD = ("scenario",)
_TAIL = ("status", "objective_kind", "objective", "bound", "gap", "makespan_cycles", "makespan_us",
         "throughput_per_s", "reproducible", "error")


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


def failed_row(name: str, values: Sequence[tuple[str, Any]], status: str, error: str) -> dict[str, Any]:
    """A scenario that has no plan (infeasible, or none within its time limit).

    Examples
    --------
    >>> failed_row("count-1", [("hardware.devices[0].count", 1)], "INFEASIBLE", "memory")["objective"] is None
    True
    """
    return {"scenario": name, **dict(values), **{c: None for c in _TAIL}, "status": status, "error": error}


def table_columns(rows: Iterable[Mapping[str, Any]], paths: Sequence[str]) -> list[str]:
    """The table's columns: scenario, the varied paths, the results, then every device's memory peaks.

    Examples
    --------
    >>> table_columns([{"peak.b0.sram_bytes": 1}, {"peak.a0.sram_bytes": 2}], ["solver.seed"])[-3:]
    ['error', 'peak.a0.sram_bytes', 'peak.b0.sram_bytes']
    """
    peaks = sorted({k for r in rows for k in r if k.startswith("peak.")})
    return [*_HEAD, *paths, *_TAIL, *peaks]


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
