"""One scenario of a fleet sweep: allocate it, write its directory, or find it done.

A fleet scenario's directory is what ``plan solve`` writes for a fleet spec
(:func:`planner.fleet.write_fleet_outputs`: ``allocation.json``, ``report.md``, ``report.html``),
put in place atomically, so it is complete or absent. Fleet directories have no independent
verifier (nothing is lowered or replayed), so a scenario counts as done when its directory holds
only what plan wrote, its ``allocation.json`` is a fleet allocation, and its ``report.html``
redraws byte for byte from that ``allocation.json``; the row is read from ``allocation.json``,
never from the process that solved it, so a resumed sweep writes the same table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from planner.fleet import solve_fleet, write_fleet_outputs
from planner.fleet.pipeline import expand_items
from planner.fleet.resolve import FleetSpec, resolve_fleet
from planner.fleet.spec import read_fleet_document
from planner.report.fleet_html import render_fleet_html
from planner.safe_output import atomic_directory, is_plan_output

__all__ = ["load_fleet_scenario", "check_fleet_scenario", "plan_fleet_scenario", "finished_fleet_allocation", "priced"]

_ALLOCATION = "plan-fleet-allocation"


def load_fleet_scenario(spec: Mapping[str, Any], base_dir: str | Path) -> FleetSpec:
    """A scenario's fleet spec, its tenants' model and plan files found beside the base spec.

    Examples
    --------
    >>> spec = load_fleet_scenario({"fleet": {"pools": [{"name": "p", "profile": "generic"}],
    ...     "tenants": [{"name": "a", "rate": 1, "requirements": {"ops": 1}}]}}, ".")
    >>> [p.name for p in spec.pools]
    ['p']
    """
    doc, locator, _ = read_fleet_document(spec)
    return resolve_fleet(doc, locator, base_dir=Path(base_dir))


def check_fleet_scenario(spec: Mapping[str, Any], base_dir: str | Path) -> None:
    """Refuse a scenario before any runs: its spec, and (without variants, whose mixes need a solve) every
    tenant instance fitting some processor and its deadline, as the fleet solver checks first.

    Examples
    --------
    >>> check_fleet_scenario({"fleet": {"pools": [{"name": "p", "profile": "generic", "capacity": {"ops": 10}}],
    ...     "tenants": [{"name": "a", "rate": 1, "requirements": {"ops": 20}}]}}, ".")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: fleet.tenants[0]: tenant 'a' fits no processor: it needs 20 ops/s of ops on pool 'p', which offers 10 ops/s (short by 10 ops/s, 100.0%); give it replicas: 2 or more
    """
    fleet = load_fleet_scenario(spec, base_dir)
    if not any(t.variants for t in fleet.tenants):
        expand_items(fleet, {})


def priced(spec: Mapping[str, Any]) -> bool:
    """Whether the fleet spec gives any pool a price (``cost:``); without one, cost is not a cost.

    Examples
    --------
    >>> priced({"fleet": {"pools": [{"name": "p", "cost": 3}]}}), priced({"fleet": {"pools": [{"name": "p"}]}})
    (True, False)
    """
    pools = (spec.get("fleet") or {}).get("pools") or []
    return any(isinstance(p, Mapping) and "cost" in p for p in pools)


def plan_fleet_scenario(spec: Mapping[str, Any], base_dir: str, target: str, inputs: tuple[str, ...], *,
                        time_limit_s: float | None, workers: int | None, seed: int | None,
                        search: str | None) -> dict[str, Any]:
    """Allocate the scenario, write its directory in place atomically, and return its ``allocation.json``."""
    result = solve_fleet(load_fleet_scenario(spec, base_dir), time_limit_s=time_limit_s, workers=workers,
                         seed=seed, search=search)
    with atomic_directory(target, force=True, inputs=inputs) as tmp:  # force: a stale scenario of this sweep
        write_fleet_outputs(result, tmp)
    return json.loads((Path(target) / "allocation.json").read_text(encoding="utf-8"))


def finished_fleet_allocation(target: str | Path) -> dict[str, Any] | None:
    """The ``allocation.json`` of a scenario directory that is whole; None when it must be planned again."""
    target = Path(target)
    if not target.is_dir() or not is_plan_output(target):
        return None
    try:
        allocation = json.loads((target / "allocation.json").read_text(encoding="utf-8"))
        html = (target / "report.html").read_text(encoding="utf-8")
        if not (isinstance(allocation, dict) and allocation.get("format") == _ALLOCATION
                and (target / "report.md").is_file()):
            return None
        return allocation if render_fleet_html(allocation) == html else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # not whole, or not this version's: planned again, replacing it
