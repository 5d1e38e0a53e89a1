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

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import PlannerError, SpecError
from planner.fleet.spec import MAX_OPS, MAX_POOL_PROCESSORS, FleetDocument, RequirementsSpec
from planner.hardware import Hardware
from planner.input_files import parse_json_bounded, read_input_text
from planner.isa.profiles import PROFILES, get_profile
from planner.isa.resources import determine_resources
from planner.spec.locator import Locator, did_you_mean
from planner.spec.models import SpecDocument
from planner.spec.resolve import resolve

#: All instances of a fleet (tenant replicas and the fewest variant instances the rates need).
MAX_ITEMS = 10_000
#: Item kinds (tenants and variants) x processors: the assignment models have one variable per pair
#: (1,000 tenants on 250 processors plan in ~20 s with --time-limit 2 on a busy 2-core machine).
MAX_ASSIGNMENT_PAIRS = 250_000
#: Instances x processors: the greedy baselines try every instance on every processor.
MAX_PLACEMENT_PAIRS = 1_000_000
#: Requests the backfill simulation steps through (rates x horizon, over all tenants).
MAX_BACKFILL_REQUESTS = 200_000  # 100,000 take ~4 s with the solve on a busy machine
_MAX_PLAN_BYTES = 64 * 2**20

__all__ = ["DIMENSIONS", "MAX_ITEMS", "MAX_ASSIGNMENT_PAIRS", "MAX_PLACEMENT_PAIRS", "MAX_BACKFILL_REQUESTS", "Pool", "Need", "Variant",
           "Tenant", "FleetSpec", "resolve_fleet"]

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
    try:
        res = determine_resources(spec.graph, spec.hardware).models[name]
    except (PlannerError, ValueError) as e:  # GraphError: a model the cost model cannot measure
        raise locator.error(f"model of tenant {name!r}: {e}", where) from None
    return _needs_from_totals(name, pools, allowed, res.timeline_cycles, spec.hardware.clock_hz,
                              res.input_bytes + res.output_bytes, res.weight_bytes, where, locator)


def _needs_from_totals(name: str, pools, allowed, cycles_by_kind: dict[str, int], clock_hz: int, io: int,
                       storage: int, where: tuple, locator: Locator) -> dict[str, Need]:
    out = {}
    for p in pools:
        if p.name not in allowed or p.name not in cycles_by_kind:
            continue
        # Busy seconds per request x peak ops/s, as an exact integer (rounded up).
        ops = -(-cycles_by_kind[p.name] * p.ops_per_s // clock_hz)
        if max(ops, io, storage) > MAX_OPS:
            raise locator.error(f"tenant {name!r} measures {ops:,} operations, {io:,} IO bytes and {storage:,} "
                                f"storage bytes per request on pool {p.name!r}; each must be at most {MAX_OPS:.0e}",
                                where)
        out[p.name] = Need(ops, ops, io, storage)
    return out


def _plan_int(value: Any, what: str, path: Path, where: tuple, locator: Locator) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OPS:
        raise locator.error(f"plan {str(path)!r}: {what} must be an integer in 0..{MAX_OPS:.0e}, got {value!r:.40}",
                            where)
    return value


def _read_plan(path: Path, where: tuple, locator: Locator) -> dict:
    """plan.json as a dict, read with a size and depth limit (a SpecError at the tenant otherwise)."""
    try:
        data = parse_json_bounded(read_input_text(path, _MAX_PLAN_BYTES), path)
    except SpecError as e:
        raise locator.error(f"cannot read plan {str(path)!r}: {e}", where) from None
    if not isinstance(data, dict):
        raise locator.error(f"plan {str(path)!r} is not a plan.json (expected a JSON object)", where)
    return data


def _from_plan(name: str, pools, allowed, path: Path, where, locator) -> dict[str, Need]:
    """Needs of a compiled plan: its busy cycles and determined bytes (plan.json ``resources``)."""
    data = _read_plan(path, where, locator)
    res = data.get("resources") or {}
    models = res.get("models") if isinstance(res, dict) else None
    devices = (res.get("devices") or {}) if isinstance(res, dict) else None
    if not models:
        raise locator.error(f"plan {str(path)!r} has no determined resources (resources.models)", where)
    if (not isinstance(models, dict) or not isinstance(devices, dict)
            or not all(isinstance(m, dict) for m in (*models.values(), *devices.values()))):
        raise locator.error(f"plan {str(path)!r}: resources.models and resources.devices must map names to "
                            "objects", where)
    clock = _plan_int(data.get("clock_hz", 1_000_000_000), "clock_hz", path, where, locator)
    if clock < 1:
        raise locator.error(f"plan {str(path)!r}: clock_hz must be >= 1", where)

    def total(items, key: str) -> int:
        return sum(_plan_int(x.get(key, 0), f"{key}", path, where, locator) for x in items)

    busy = total(devices.values(), "busy_cycles") if devices else 0
    io = total(models.values(), "input_bytes") + total(models.values(), "output_bytes")
    storage = total(models.values(), "weight_bytes")
    if busy == 0:
        # Serial time on the slowest device kind of the plan (conservative: the pool may be that kind).
        for m in models.values():
            cycles = m.get("timeline_cycles") or {}
            if not isinstance(cycles, dict):
                raise locator.error(f"plan {str(path)!r}: timeline_cycles must map device kinds to cycles", where)
            busy += max((_plan_int(c, "timeline_cycles", path, where, locator) for c in cycles.values()), default=0)
    cycles = {p.name: busy for p in pools}
    return _needs_from_totals(name, pools, allowed, cycles, clock, io, storage, where, locator)


def _resolve_pools(doc: FleetDocument, locator: Locator) -> list[Pool]:
    pools: list[Pool] = []
    for i, p in enumerate(doc.fleet.pools):
        if any(q.name == p.name for q in pools):
            raise locator.error(f"pool {p.name!r} is declared twice", ("fleet", "pools", i, "name"))
        pools.append(_pool(p, ("fleet", "pools", i), locator))
    for i, p in enumerate(pools):
        for q in pools:
            if q is not p and p.name.startswith(q.name) and p.name[len(q.name):].isdigit():
                raise locator.error(f"pool names {q.name!r} and {p.name!r} make processor names ambiguous "
                                    f"({p.name}0 could be either); rename one", ("fleet", "pools", i, "name"))
    for i, p in enumerate(pools):
        for dim, cap in zip(DIMENSIONS, p.allocatable(doc.fleet.max_utilization)):
            if cap < 1:
                raise locator.error(f"pool {p.name!r}: max_utilization {doc.fleet.max_utilization:g} of its {dim} "
                                    f"capacity {p.capacity[DIMENSIONS.index(dim)]:,} leaves nothing to allocate",
                                    ("fleet", "pools", i, "capacity"))
    total = sum(p.count for p in pools)
    if total > MAX_POOL_PROCESSORS:
        raise locator.error(f"the pools hold {total:,} processors; at most {MAX_POOL_PROCESSORS:,} in all",
                            ("fleet", "pools"))
    return pools


def _allowed_pools(t, names: list[str], where: tuple, locator: Locator) -> list[str]:
    if t.pools is None:
        return names
    for j, pn in enumerate(t.pools):
        if pn not in names:
            raise locator.error(f"unknown pool {pn!r}" + did_you_mean(pn, names)
                                + f" (pools: {', '.join(names)})", (*where, "pools", j))
        if pn in t.pools[:j]:
            raise locator.error(f"pool {pn!r} is listed twice", (*where, "pools", j))
    return [n for n in names if n in t.pools]


def _variants(t, pools: tuple[Pool, ...], allowed: list[str], where: tuple, locator: Locator,
              base_dir: Path) -> list[Variant]:
    if t.rate < 1e-3:
        raise locator.error(f"tenant {t.name!r} with variants needs a rate of at least 0.001 requests/s "
                            f"(variant mixes are chosen in milli-requests per second), got {t.rate:g}", (*where, "rate"))
    variants: list[Variant] = []
    for j, v in enumerate(t.variants or ()):
        vw = (*where, "variants", j)
        if any(x.name == v.name for x in variants):
            raise locator.error(f"variant {v.name!r} of tenant {t.name!r} is declared twice", (*vw, "name"))
        if v.capacity < 1e-3:
            raise locator.error(f"variant {v.name!r}: capacity must be at least 0.001 requests/s, got {v.capacity:g}",
                                (*vw, "capacity"))
        if v.requirements is not None:
            vn = {n: _explicit(v.requirements) for n in allowed}
        else:
            vn = _measured(f"{t.name}.{v.name}", pools, allowed, v.generator, v.graph, vw, locator, base_dir)
        if not vn:
            raise locator.error(f"variant {v.name!r} of tenant {t.name!r} can run on none of the pools {allowed}", vw)
        variants.append(Variant(v.name, v.precision, v.capacity, vn))
    return variants


def _resolve_tenant(t, i: int, pools: tuple[Pool, ...], locator: Locator, base_dir: Path) -> Tenant:
    where = ("fleet", "tenants", i)
    allowed = _allowed_pools(t, [p.name for p in pools], where, locator)
    needs: dict[str, Need] = {}
    variants: list[Variant] = []
    if t.requirements is not None:
        source, needs = "requirements", {n: _explicit(t.requirements) for n in allowed}
    elif t.generator is not None or t.graph is not None:
        source, needs = "graph", _measured(t.name, pools, allowed, t.generator, t.graph, where, locator, base_dir)
    elif t.plan is not None:
        source, needs = "plan", _from_plan(t.name, pools, allowed, base_dir / t.plan, (*where, "plan"), locator)
    else:
        source, variants = "variants", _variants(t, pools, allowed, where, locator, base_dir)
    if source != "variants" and not needs:
        raise locator.error(f"tenant {t.name!r} can run on none of the pools {allowed}", where)
    return Tenant(t.name, t.rate, t.priority, t.replicas, t.deadline, t.precision, t.batch, needs,
                  tuple(variants), source, where)


def _check_size(doc: FleetDocument, pools: list[Pool], tenants: list[Tenant], locator: Locator) -> None:
    """Bound what the solvers and the simulation will build, before they build it."""
    items = 0
    for t in tenants:
        if t.variants:  # at least the instances the rate needs at the largest capacity
            items += math.ceil(t.rate_rps / max(v.capacity_rps for v in t.variants) - 1e-9)
        else:
            items += t.replicas
        if items > MAX_ITEMS:
            raise locator.error(f"the tenants need at least {items:,} instances (replicas and variant instances) "
                                f"up to tenant {t.name!r}; at most {MAX_ITEMS:,} are placed", t.where)
    kinds = sum(max(1, len(t.variants)) for t in tenants)
    processors = sum(p.count for p in pools)
    if items * processors > MAX_PLACEMENT_PAIRS:
        raise locator.error(f"at least {items:,} instances on {processors:,} processors make {items * processors:,} "
                            f"pairs; at most {MAX_PLACEMENT_PAIRS:,} (fewer processors or replicas)", ("fleet",))
    if kinds * processors > MAX_ASSIGNMENT_PAIRS:
        raise locator.error(f"{kinds:,} tenants and variants on {processors:,} processors make "
                            f"{kinds * processors:,} pairs; at most {MAX_ASSIGNMENT_PAIRS:,} (fewer processors, or "
                            "tenants grouped into replicas)", ("fleet",))
    bf = doc.fleet.backfill
    if bf is not None:
        rates = 0.0 if bf.trace else sum(t.rate_rps for t in tenants if not t.batch)
        requests = rates * bf.horizon + len(bf.trace or ())
        if requests > MAX_BACKFILL_REQUESTS:
            raise locator.error(f"the backfill simulation would step through about {requests:,.0f} requests "
                                f"(rates x horizon); at most {MAX_BACKFILL_REQUESTS:,}: shorten the horizon",
                                ("fleet", "backfill", "horizon"))
    if not math.isfinite(doc.fleet.solver.time_limit):
        raise locator.error("the time limit must be finite", ("fleet", "solver", "time_limit"))


def resolve_fleet(doc: FleetDocument, locator: Locator, *, source: Path | None = None,
                  base_dir: Path | None = None) -> FleetSpec:
    """Check names, profiles and sizes, and measure every tenant on every pool it may use.

    Raises
    ------
    SpecError
        Unknown profile or pool, duplicate names (pools, tenants, variants), a model the
        cost model cannot measure, a fleet beyond the documented limits.

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
    pools = _resolve_pools(doc, locator)
    tenants: list[Tenant] = []
    for i, t in enumerate(f.tenants):
        if any(x.name == t.name for x in tenants):
            raise locator.error(f"tenant {t.name!r} is declared twice", ("fleet", "tenants", i, "name"))
        tenants.append(_resolve_tenant(t, i, tuple(pools), locator, base_dir))
    if f.backfill is not None and f.backfill.trace:
        known = [t.name for t in tenants]
        for j, e in enumerate(f.backfill.trace):
            if e.tenant not in known:
                raise locator.error(f"unknown tenant {e.tenant!r}" + did_you_mean(e.tenant, known),
                                    ("fleet", "backfill", "trace", j, "tenant"))
    _check_size(doc, pools, tenants, locator)
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
