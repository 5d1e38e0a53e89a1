"""Fleets: many models on many processors (co-location, datacenter modes, backfill, variants, quotes).

Glossary
--------
pool        identical processors of one ISA profile, with a capacity per resource.
tenant      a model to host (explicit requirements, a model graph, a compiled plan or
            variants) at a request rate, with a priority and optional deadline/precision.
item        one instance to place: a tenant replica or a variant instance.
resources   ``ops`` (operations/s), ``io`` (bytes/s), ``storage`` (bytes) per processor.
power       mode: fewest (cheapest) processors, then balanced among them.
spread      mode: lowest peak utilization over every processor.
backfill    lending idle allocated capacity to lower-priority batch tenants (simulated).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from planner.errors import SpecError
from planner.fleet.pipeline import FleetResult, solve_fleet
from planner.fleet.quotes import QuoteResult, quote
from planner.fleet.report import fleet_summary_rows, write_fleet_outputs
from planner.fleet.resolve import FleetSpec, resolve_fleet
from planner.fleet.spec import fleet_json_schema, is_fleet_data, read_fleet_document
from planner.reader import find_lines, read_text_file


__all__ = ["FleetSpec", "FleetResult", "QuoteResult", "is_fleet_spec", "load_fleet_spec", "solve_fleet",
           "write_fleet_outputs", "fleet_summary_rows", "quote", "fleet_json_schema"]


def is_fleet_spec(data_or_path: Any) -> bool:
    """Whether a spec (mapping or YAML file) is a fleet spec: it has a top-level ``fleet:`` key.

    Examples
    --------
    >>> is_fleet_spec({"version": 1, "fleet": {"pools": [], "tenants": []}})
    True
    >>> is_fleet_spec({"version": 1, "hardware": {}})
    False
    """
    if isinstance(data_or_path, Mapping):
        return is_fleet_data(data_or_path)
    try:  # the bounded reader, and no data built: the spec's own loader reads it again
        return ("fleet",) in find_lines(read_text_file(data_or_path), [("fleet",)])
    except SpecError:
        return False  # unreadable or malformed: the spec loader says why


def load_fleet_spec(path: str | Path | Mapping[str, Any]) -> FleetSpec:
    """Read, validate and resolve a fleet spec (a YAML file or a mapping).

    Raises
    ------
    planner.errors.SpecError
        One error naming the file, line and spec path.

    Examples
    --------
    >>> spec = load_fleet_spec({"fleet": {"pools": [{"name": "p", "profile": "tpu-v9"}],
    ...                                   "tenants": [{"name": "a", "rate": 1, "requirements": {"ops": 1}}]}})
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: fleet.pools[0].profile: unknown ISA profile 'tpu-v9'; did you mean 'tpu-v4'? (known: edge-npu, generic, tpu-v1, tpu-v4, tpu-v4-host)
    """
    doc, locator, base = read_fleet_document(path)
    spec = resolve_fleet(doc, locator, base_dir=base)
    if not isinstance(path, Mapping):
        spec = replace(spec, source=Path(path))
    return spec
