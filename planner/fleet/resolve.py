"""Resolve a fleet document: pools in base units, and every tenant's exact needs per pool.

A processor offers three resources (the *dimensions* of co-location):

``ops``      operations per second: by default the profile's peak, ``clock x mxu_rows x mxu_cols``;
``io``       IO bytes per second: by default the main-memory bandwidth;
``storage``  resident bytes: by default the main-memory capacity.

A tenant given by ``requirements`` states operations and IO bytes per request and resident
bytes. A tenant given as a model graph (``generator`` or ``graph``) or a compiled plan is
measured with the cost model on each pool's profile: its serial busy time per request,
``t`` seconds, is worth ``t x peak ops/s`` operations on that pool (so a model that keeps a
processor busy half the time uses half its ``ops``), IO is its input plus output bytes and
storage its weight bytes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import SpecError
from planner.hardware import Hardware
from planner.isa.profiles import PROFILES, get_profile
from planner.spec.loader import Locator, did_you_mean
from planner.fleet.spec import FleetDocument, RequirementsSpec

__all__ = ["DIMENSIONS", "Pool", "Need", "Variant", "Tenant", "FleetSpec", "resolve_fleet"]

DIMENSIONS = ("ops", "io", "storage")


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool of identical processors, capacities in base units (per second where a rate).

    >>> Pool("p", "generic", 2, 1, 10**9, 100_000, 10**11, 10**12).capacity
    (100000, 100000000000, 1000000000000)
    """

    name: str
    profile: str
    count: int
    cost: int
    clock_hz: int
    ops_per_s: int
    io_bytes_per_s: int
    storage_bytes: int

    @property
    def capacity(self) -> tuple[int, int, int]:
        return (self.ops_per_s, self.io_bytes_per_s, self.storage_bytes)

    def processor(self, k: int) -> str:
        return f"{self.name}{k}"

    def allocatable(self, max_utilization: float) -> tuple[int, int, int]:
        """Capacity that may be allocated: ops and io capped at ``max_utilization``, storage whole.

        >>> Pool("p", "generic", 1, 1, 10**9, 1000, 500, 64).allocatable(0.8)
        (800, 400, 64)
        """
        return (math.floor(self.ops_per_s * max_utilization + 1e-9),
                math.floor(self.io_bytes_per_s * max_utilization + 1e-9), self.storage_bytes)


@dataclass(frozen=True, slots=True)
class Need:
    """What one request (ops, IO) and one resident instance (storage) need on one pool.

    >>> Need(20_000, 20_000, 30 * 10**9, 0).demand(2.0)
    (40000, 60000000000, 0)
    """

    ops_per_request: int
    ops_max_per_request: int  # worst case, for quotes
    io_bytes_per_request: int
    storage_bytes: int

    def demand(self, rate_rps: float) -> tuple[int, int, int]:
        """Per-second demand at ``rate_rps`` (rounded up) and storage."""
        return (math.ceil(self.ops_per_request * rate_rps - 1e-9),
                math.ceil(self.io_bytes_per_request * rate_rps - 1e-9), self.storage_bytes)


@dataclass(frozen=True, slots=True)
class Variant:
    """One model variant of a tenant's task.

    >>> Variant("int8", 0.9, 100.0, {"p": Need(10, 10, 0, 0)}).needs["p"].demand(100.0)
    (1000, 0, 0)
    """

    name: str
    precision: float
    capacity_rps: float
    needs: dict[str, Need]  # pool name -> needs


@dataclass(frozen=True, slots=True)
class Tenant:
    """A resolved tenant: needs per allowed pool (or variants), rate and priority.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> t = spec.tenant("b")
    >>> t.rate_rps, t.needs["p"].ops_per_request, t.source
    (1.0, 80000, 'requirements')
    """

    name: str
    rate_rps: float
    priority: int
    replicas: int
    deadline_s: float | None
    precision: float | None
    batch: bool
    needs: dict[str, Need]  # allowed pool -> needs; empty for variant tenants
    variants: tuple[Variant, ...] = ()
    source: str = "requirements"
    where: tuple = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """A resolved fleet spec.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> spec.name, [p.name for p in spec.pools], spec.pool("p").capacity
    ('issue-example', ['p'], (100000, 100000000000, 1099511627776))
    """

    name: str
    pools: tuple[Pool, ...]
    tenants: tuple[Tenant, ...]
    objective: str
    max_utilization: float
    time_limit_s: float
    workers: int
    seed: int
    document: FleetDocument
    locator: Any = field(default=None, compare=False)
    source: Path | None = None
    search: str = "deterministic"

    def pool(self, name: str) -> Pool:
        return next(p for p in self.pools if p.name == name)

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.tenants if t.name == name)


def _pool(doc_pool, where: tuple, locator: Locator) -> Pool:
    if doc_pool.profile not in PROFILES:
        raise locator.error(f"unknown ISA profile {doc_pool.profile!r}" + did_you_mean(doc_pool.profile, list(PROFILES))
                            + f" (known: {', '.join(sorted(PROFILES))})", (*where, "profile"))
    prof = get_profile(doc_pool.profile)
    clock = doc_pool.clock or prof.clock_hz
    cap = doc_pool.capacity
    return Pool(
        name=doc_pool.name, profile=prof.name, count=doc_pool.count, cost=doc_pool.cost, clock_hz=clock,
        ops_per_s=cap.ops if cap.ops is not None else clock * prof.mxu_rows * prof.mxu_cols,
        io_bytes_per_s=cap.io if cap.io is not None else prof.main_memory.bandwidth_bytes_per_s,
        storage_bytes=cap.storage if cap.storage is not None else prof.main_memory.capacity_bytes,
    )


def _explicit(req: RequirementsSpec) -> Need:
    return Need(req.ops, max(req.ops, req.ops_max or 0), req.io or 0, req.storage or 0)


def _measured(name: str, pools: tuple[Pool, ...], allowed: list[str], generator, graph,
              where: tuple, locator: Locator, base_dir: Path) -> dict[str, Need]:
    """Needs of a model graph on each allowed pool, from the cost model."""
    from planner.isa.resources import determine_resources
    from planner.spec.models import SpecDocument
    from planner.spec.resolve import resolve

    devices = [{"name": p.name, "profile": p.profile, "clock": f"{p.clock_hz} Hz"} for p in pools if p.name in allowed]
    model: dict[str, Any] = {"name": name}
    if generator is not None:
        model["generator"] = generator.model_dump(exclude_none=True)
    else:
        model["graph"] = graph.model_dump(exclude_none=True)
    hardware: dict[str, Any] = {"devices": devices}
    if len(devices) > 1:  # links are irrelevant here (each pool is measured on its own)
        hardware["topology"] = {"kind": "all-to-all", "bandwidth": "1 GB/s", "latency": 0}
    data = {"version": 1, "hardware": hardware, "models": [model]}
    try:
        doc = SpecDocument.model_validate(data)
        spec = resolve(doc, Locator(data), base_dir=base_dir)
    except SpecError as e:
        raise locator.error(f"model of tenant {name!r}: {e.message}", where) from None
    except Exception as e:  # pydantic ValidationError of the inner document
        raise locator.error(f"model of tenant {name!r}: {e}", where) from None
    res = determine_resources(spec.graph, spec.hardware).models[name]
    return _needs_from_totals(pools, allowed, res.timeline_cycles, spec.hardware.clock_hz,
                              res.input_bytes + res.output_bytes, res.weight_bytes)


def _needs_from_totals(pools, allowed, cycles_by_kind: dict[str, int], clock_hz: int, io: int, storage: int
                       ) -> dict[str, Need]:
    out = {}
    for p in pools:
        if p.name not in allowed or p.name not in cycles_by_kind:
            continue
        # Busy seconds per request x peak ops/s, as an exact integer (rounded up).
        ops = -(-cycles_by_kind[p.name] * p.ops_per_s // clock_hz)
        out[p.name] = Need(ops, ops, io, storage)
    return out


def _from_plan(name: str, pools, allowed, path: Path, where, locator) -> dict[str, Need]:
    """Needs of a compiled plan: its busy cycles and determined bytes (plan.json ``resources``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise locator.error(f"no such plan file {str(path)!r}", where) from None
    except (OSError, ValueError) as e:
        raise locator.error(f"cannot read plan {str(path)!r}: {e}", where) from None
    res = data.get("resources") or {}
    models = res.get("models") or {}
    devices = res.get("devices") or {}
    clock = int(data.get("clock_hz") or 1_000_000_000)
    if not models:
        raise locator.error(f"plan {str(path)!r} has no determined resources (resources.models)", where)
    busy = sum(int(d.get("busy_cycles", 0)) for d in devices.values()) if devices else None
    io = sum(int(m.get("input_bytes", 0)) + int(m.get("output_bytes", 0)) for m in models.values())
    storage = sum(int(m.get("weight_bytes", 0)) for m in models.values())
    if busy is None or busy == 0:
        # Serial time on the slowest device kind of the plan (conservative: the pool may be that kind).
        busy = sum(max(m.get("timeline_cycles", {}).values() or [0]) for m in models.values())
    cycles = {p.name: busy for p in pools}
    return _needs_from_totals(pools, allowed, cycles, clock, io, storage)


def resolve_fleet(doc: FleetDocument, locator: Locator, *, source: Path | None = None,
                  base_dir: Path | None = None) -> FleetSpec:
    """Check names and profiles, and measure every tenant on every pool it may use.

    Raises
    ------
    SpecError
        Unknown profile or pool, duplicate names, a model the cost model cannot measure.

    Examples
    --------
    >>> from planner.fleet.spec import FleetDocument
    >>> data = {"fleet": {"pools": [{"name": "p", "profile": "generic", "capacity": {"ops": 100000}}],
    ...         "tenants": [{"name": "a", "rate": 2, "requirements": {"ops": 20000, "io": "30 GB"}}]}}
    >>> spec = resolve_fleet(FleetDocument.model_validate(data), Locator(data))
    >>> spec.tenants[0].needs["p"].demand(spec.tenants[0].rate_rps)
    (40000, 60000000000, 0)
    """
    base_dir = base_dir if base_dir is not None else Path.cwd()
    f = doc.fleet
    pools: list[Pool] = []
    for i, p in enumerate(f.pools):
        if any(q.name == p.name for q in pools):
            raise locator.error(f"pool {p.name!r} is declared twice", ("fleet", "pools", i, "name"))
        pools.append(_pool(p, ("fleet", "pools", i), locator))
    names = [p.name for p in pools]
    for i, p in enumerate(pools):
        for q in pools:
            if q is not p and p.name.startswith(q.name) and p.name[len(q.name):].isdigit():
                raise locator.error(f"pool names {q.name!r} and {p.name!r} make processor names ambiguous "
                                    f"({p.name}0 could be either); rename one", ("fleet", "pools", i, "name"))
    tenants: list[Tenant] = []
    for i, t in enumerate(f.tenants):
        where = ("fleet", "tenants", i)
        if any(x.name == t.name for x in tenants):
            raise locator.error(f"tenant {t.name!r} is declared twice", (*where, "name"))
        allowed = names
        if t.pools is not None:
            for j, pn in enumerate(t.pools):
                if pn not in names:
                    raise locator.error(f"unknown pool {pn!r}" + did_you_mean(pn, names)
                                        + f" (pools: {', '.join(names)})", (*where, "pools", j))
            allowed = [n for n in names if n in t.pools]
        needs: dict[str, Need] = {}
        variants: list[Variant] = []
        source = "requirements"
        if t.requirements is not None:
            needs = {n: _explicit(t.requirements) for n in allowed}
        elif t.generator is not None or t.graph is not None:
            source = "graph"
            needs = _measured(t.name, tuple(pools), allowed, t.generator, t.graph, where, locator, base_dir)
        elif t.plan is not None:
            source = "plan"
            needs = _from_plan(t.name, tuple(pools), allowed, base_dir / t.plan, (*where, "plan"), locator)
        else:
            source = "variants"
            for j, v in enumerate(t.variants or ()):
                vw = (*where, "variants", j)
                if v.requirements is not None:
                    vn = {n: _explicit(v.requirements) for n in allowed}
                else:
                    vn = _measured(f"{t.name}.{v.name}", tuple(pools), allowed, v.generator, v.graph, vw,
                                   locator, base_dir)
                variants.append(Variant(v.name, v.precision, v.capacity, vn))
        if source != "variants" and not needs:
            raise locator.error(f"tenant {t.name!r} can run on none of the pools {allowed}", where)
        tenants.append(Tenant(t.name, t.rate, t.priority, t.replicas, t.deadline, t.precision, t.batch, needs,
                              tuple(variants), source, where))
    if f.backfill is not None and f.backfill.trace:
        known = [t.name for t in tenants]
        for j, e in enumerate(f.backfill.trace):
            if e.tenant not in known:
                raise locator.error(f"unknown tenant {e.tenant!r}" + did_you_mean(e.tenant, known),
                                    ("fleet", "backfill", "trace", j, "tenant"))
    name = doc.name or (source_stem(locator) or "fleet")
    return FleetSpec(name, tuple(pools), tuple(tenants), f.objective, f.max_utilization,
                     float(f.solver.time_limit), f.solver.workers,
                     f.solver.seed, doc, locator, None, f.solver.search)


def source_stem(locator: Locator) -> str | None:
    """The spec file's stem, when the spec came from a file.

    >>> source_stem(Locator({}, None, "specs/fleet-demo.yaml"))
    'fleet-demo'
    """
    return Path(locator.file).stem if locator.file else None
