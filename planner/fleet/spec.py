"""Typed models of a fleet spec (pydantic, unknown keys rejected) and its loader.

A fleet spec is a version-1 spec with a top-level ``fleet:`` key instead of
``hardware``/``models``::

    version: 1
    name: colocation
    fleet:
      objective: power            # power: fewest processors | spread: lowest peak utilization
      pools:
        - {name: v4, profile: tpu-v4, count: 2, capacity: {ops: 100000, io: 100 GB/s}}
      tenants:
        - name: a
          rate: 1/s
          requirements: {ops: 20000, io: 30 GB}          # per request
        - {name: b, rate: 1/s, requirements: {ops: 80000, io: 10 GB}}
      solver: {time_limit: 10 s, workers: 2, seed: 0}

Line numbers, spec paths and did-you-mean come from :mod:`planner.spec.loader`.
"""

from __future__ import annotations

import math
import re
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema,
                      model_validator)

from planner.reader import ReadLimits, read_text_file, read_yaml
from planner.spec.locator import Locator, did_you_mean, unwrap_annotation, validation_error
from planner.spec.models import Bandwidth, Count, Frequency, Generator, GraphSpec, Name, NonNegative, Seconds, Size, SolverSpec
from planner.spec.units import parse_seconds

__all__ = ["FleetDocument", "ISSUE_EXAMPLE", "LIMITS", "fleet_json_schema", "parse_ops", "parse_rate", "read_fleet_document",
           "is_fleet_data", "FLEET_READ_LIMITS"]

# Documented limits (README, "Fleet limits"): every number of a fleet spec is finite and in range.
MAX_OPS = 10**18  # operations per request or per second of a processor
MAX_BYTES = 2**60  # IO bytes (per request or per second) and storage bytes
MAX_CLOCK_HZ = 10**13
MIN_RATE_RPS, MAX_RATE_RPS = 1e-6, 1e9  # requests per second
MAX_POOL_PROCESSORS = 10_000  # per pool, and over all pools (see resolve)
MAX_POOLS = 1_000
MAX_TENANTS = 10_000
MAX_REPLICAS = 10_000  # per tenant; all instances of a fleet together are bounded in resolve
MAX_VARIANTS = 64  # per tenant
MAX_COST = 10**9  # cost of one processor
MAX_PRIORITY = 10**6  # |priority|
MAX_SECONDS = 10**6  # deadlines and trace times
MAX_HORIZON_S = 3600.0  # backfill simulation
MAX_TRACE = 100_000  # explicit backfill arrivals
MAX_PRICE = 1e12  # per 10^9 operations
MAX_SPEC_BYTES = 2**20  # a fleet spec file (it holds no graphs)
MAX_YAML_DEPTH = 64  # nesting of a fleet spec's YAML
MAX_YAML_NODES = 200_000  # values of a fleet spec's YAML, with every alias expanded
#: The bounded reader's limits for a fleet spec (tighter than a spine spec's: a fleet spec
#: holds no graphs).
FLEET_READ_LIMITS = ReadLimits(max_bytes=MAX_SPEC_BYTES, max_depth=MAX_YAML_DEPTH, max_values=MAX_YAML_NODES)

#: Every limit of a fleet spec: what -> (value, why).
LIMITS: dict[str, tuple[float, str]] = {
    "operations (per request, per second)": (MAX_OPS, "exact integer arithmetic in the solvers"),
    "bytes (IO, storage)": (MAX_BYTES, "exact integer arithmetic in the solvers"),
    "processor clock (Hz)": (MAX_CLOCK_HZ, "a plausible processor"),
    "request rate (requests/s)": (MAX_RATE_RPS, "variant mixes are solved in milli-requests/s on int64"),
    "processors per pool and in all": (MAX_POOL_PROCESSORS, "the co-location models grow with processors"),
    "pools": (MAX_POOLS, "the co-location models grow with pools"),
    "tenants": (MAX_TENANTS, "each is at least one item to place"),
    "replicas per tenant": (MAX_REPLICAS, "each is an item to place"),
    "variants per tenant": (MAX_VARIANTS, "the variant model stays within int64"),
    "processor cost": (MAX_COST, "exact integer arithmetic in the solvers"),
    "|priority|": (MAX_PRIORITY, "a plausible priority"),
    "deadline, trace time (s)": (MAX_SECONDS, "nanosecond integers stay exact"),
    "backfill horizon (s)": (MAX_HORIZON_S, "the simulation steps through every request"),
    "backfill trace entries": (MAX_TRACE, "the simulation steps through every request"),
    "price per Gop": (MAX_PRICE, "finite prices"),
    "fleet spec file bytes": (MAX_SPEC_BYTES, "a fleet spec holds no graphs; more is refused before it is read"),
    "YAML nesting depth": (MAX_YAML_DEPTH, "a fleet spec needs about 6 levels"),
    "YAML values, aliases expanded": (MAX_YAML_NODES, "validation visits every expanded value"),
}

#: The co-location example of issue 4 as a spec mapping (used by examples and tests):
#: 20 000 + 80 000 ops and 30 + 10 GB per second on processors of 100 000 ops and 100 GB/s.
#:
#: >>> ISSUE_EXAMPLE["fleet"]["tenants"][1]["requirements"]
#: {'ops': 80000, 'io': '10 GB'}
ISSUE_EXAMPLE = {
    "version": 1, "name": "issue-example",
    "fleet": {
        "pools": [{"name": "p", "profile": "generic", "count": 2, "capacity": {"ops": 100000, "io": "100 GB/s"}}],
        "tenants": [{"name": "a", "rate": 1, "requirements": {"ops": 20000, "io": "30 GB"}},
                    {"name": "b", "rate": 1, "requirements": {"ops": 80000, "io": "10 GB"}}],
        "solver": {"time_limit": "5 s", "workers": 1, "seed": 0},
    },
}

_NUMBER = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_PER = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}


def parse_ops(value: Any) -> int:
    """A count of operations: a number, optionally with k/M/G/T/P and ``ops`` (``"20 Gops"``).

    A trailing ``/s`` is accepted where a rate of operations is meant (pool capacity).

    Examples
    --------
    >>> parse_ops(20000), parse_ops("20 kops"), parse_ops("1.5 Tops/s"), parse_ops("3e6")
    (20000, 20000, 1500000000000, 3000000)
    >>> parse_ops("12 flurbs")
    Traceback (most recent call last):
    ...
    ValueError: expected a number of operations such as "20 Gops", got '12 flurbs'
    >>> parse_ops("1e999")
    Traceback (most recent call last):
    ...
    ValueError: a number of operations must be in 0..1e+18, got '1e999'
    """
    if isinstance(value, bool):
        raise ValueError(f'expected a number of operations such as "20 Gops", got {value!r}')
    if isinstance(value, (int, float)):
        amount = value
    else:
        m = re.fullmatch(rf"\s*({_NUMBER})\s*([kKMGTP]?)\s*(ops?|OPS)?\s*(/\s*s)?\s*", str(value))
        if not m:
            raise ValueError(f'expected a number of operations such as "20 Gops", got {value!r}')
        amount = float(m.group(1)) * _PREFIX[m.group(5)]
    if (isinstance(amount, float) and not math.isfinite(amount)) or not 0 <= amount <= MAX_OPS:
        raise ValueError(f"a number of operations must be in 0..{MAX_OPS:.0e}, got {value!r}")
    return int(round(amount))


def parse_rate(value: Any) -> float:
    """Requests per second (must be > 0): a number, or ``"50/s"``, ``"300/min"``, ``"2/h"``.

    Examples
    --------
    >>> parse_rate(50), parse_rate("50/s"), parse_rate("300/min"), parse_rate("1.5 rps")
    (50.0, 50.0, 5.0, 1.5)
    >>> parse_rate(0)
    Traceback (most recent call last):
    ...
    ValueError: rate must be > 0 requests per second, got 0
    >>> parse_rate(float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: rate must be in 1e-06..1e+09 requests per second, got inf
    """
    if isinstance(value, bool):
        raise ValueError(f'expected a rate such as "50/s", got {value!r}')
    if isinstance(value, int) and abs(value) > 10**300:  # float() of it would overflow
        rate = math.inf if value > 0 else -math.inf
    elif isinstance(value, (int, float)):
        rate = float(value)
    else:
        m = re.fullmatch(rf"\s*({_NUMBER})\s*(/\s*(s|sec|min|h)|rps|req/s)?\s*", str(value))
        if not m:
            raise ValueError(f'expected a rate such as "50/s", "300/min" or "1.5 rps", got {value!r}')
        per = m.group(6) or "s"
        rate = float(m.group(1)) / _PER[per]
    if not rate > 0:
        raise ValueError(f"rate must be > 0 requests per second, got {value!r}")
    if not MIN_RATE_RPS <= rate <= MAX_RATE_RPS:
        raise ValueError(f"rate must be in {MIN_RATE_RPS:g}..{MAX_RATE_RPS:g} requests per second, got {value!r}")
    return rate


def _fraction(value: Any) -> float:
    """A fraction in 0..1: a number or a percentage.

    >>> _fraction("90%"), _fraction(0.25)
    (0.9, 0.25)
    >>> _fraction("x%")
    Traceback (most recent call last):
    ...
    ValueError: expected a fraction such as 0.9 or "90%", got 'x%'
    """
    shown = value
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            value = float(value.strip()[:-1]) / 100
        except ValueError:
            raise ValueError(f'expected a fraction such as 0.9 or "90%", got {shown!r}') from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'expected a fraction such as 0.9 or "90%", got {shown!r}')
    if not 0 <= value <= 1:  # NaN fails this too
        raise ValueError(f"expected a fraction in 0..1, got {shown!r}")
    return float(value)


def _bounded(low: float, high: float, what: str, *, low_open: bool = False) -> AfterValidator:
    """An after-validator: a finite value in ``low..high`` (``low`` excluded when ``low_open``)."""
    def check(value: Any) -> Any:
        finite = isinstance(value, int) or math.isfinite(value)  # exact unit values are ints of any size
        ok = value is None or (finite and (value > low if low_open else value >= low) and value <= high)
        if not ok:
            bound = f"> {low:g}" if low_open else f">= {low:g}"
            raise ValueError(f"{what} must be {bound} and <= {high:g}, got {value!r}")
        return value
    return AfterValidator(check)


Ops = Annotated[int, BeforeValidator(parse_ops),
                WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}],
                                "description": "Operations: a number or e.g. \"20 Gops\".",
                                "examples": [20000, "20 Gops"]})]
Rate = Annotated[float, BeforeValidator(parse_rate),
                 WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "string"}],
                                 "description": "Requests per second: a number or \"50/s\", \"300/min\".",
                                 "examples": ["50/s"]})]
def _seconds_overflow_guard(value: Any) -> Any:
    """Refuse durations whose number overflows (``1e999 s``) before the unit parser sees them."""
    try:
        parse_seconds(value)
    except OverflowError:
        raise ValueError(f"the duration {value!r:.40} is too large") from None
    except ValueError:
        pass  # the parser itself says what is wrong
    return value


def _solver_guard(value: Any) -> Any:
    if isinstance(value, Mapping) and "time_limit" in value:
        _seconds_overflow_guard(value["time_limit"])
    return value


_SECONDS_GUARD = BeforeValidator(_seconds_overflow_guard)
PositiveOps = Annotated[Ops, _bounded(0, MAX_OPS, "a processor's operations per second", low_open=True)]
CapacityBytes = Annotated[Size, _bounded(1, MAX_BYTES, "a capacity in bytes")]
CapacityBandwidth = Annotated[Bandwidth, _bounded(1, MAX_BYTES, "a bandwidth in bytes per second")]
Bytes = Annotated[Size, _bounded(0, MAX_BYTES, "a number of bytes")]
Clock = Annotated[Frequency, _bounded(1, MAX_CLOCK_HZ, "a clock in Hz")]
Deadline = Annotated[Seconds, _bounded(0, MAX_SECONDS, "a duration in seconds", low_open=True), _SECONDS_GUARD]
HorizonSeconds = Annotated[Seconds, _bounded(0, MAX_HORIZON_S, "a backfill duration in seconds", low_open=True),
                           _SECONDS_GUARD]
Fraction = Annotated[float, BeforeValidator(_fraction),
                     WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0, "maximum": 1},
                                               {"type": "string", "pattern": r"^\s*[\d.]+\s*%\s*$"}]})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CapacitySpec(_Model):
    """What one processor of a pool offers (overrides the profile's figures)."""

    ops: Optional[PositiveOps] = Field(None, description="Operations per second (default: clock x MXU size).")
    io: Optional[CapacityBandwidth] = Field(None, description="IO bytes per second (default: main-memory bandwidth).")
    storage: Optional[CapacityBytes] = Field(None, description="Storage bytes (default: main-memory capacity).")


class PoolSpec(_Model):
    """A pool of identical processors."""

    name: Name = Field(description="Pool name; processors are <name>0, <name>1, ...")
    profile: str = Field(description="Built-in ISA profile.", examples=["tpu-v4"])
    count: Count = Field(1, le=MAX_POOL_PROCESSORS, description="Processors in the pool.")
    cost: NonNegative = Field(1, le=MAX_COST, description="Cost of one used processor (power) for the "
                              "fewest-processors mode.")
    clock: Optional[Clock] = Field(None, description="Override of the profile's clock.")
    capacity: CapacitySpec = Field(default_factory=CapacitySpec, description="Per-processor capacity.")


class RequirementsSpec(_Model):
    """A tenant's needs given explicitly (per request, except storage)."""

    ops: Ops = Field(description="Operations per request.")
    ops_max: Optional[Ops] = Field(None, description="Worst case when the count depends on the data.")
    io: Optional[Bytes] = Field(None, description="IO bytes per request.")
    storage: Optional[Bytes] = Field(None, description="Resident bytes (weights) per instance.")


class VariantSpec(_Model):
    """One model serving the tenant's task at some precision and cost."""

    name: Name
    precision: Fraction = Field(description="Precision of this variant (0..1).")
    capacity: Rate = Field(description="Requests per second one instance serves.")
    requirements: Optional[RequirementsSpec] = None
    generator: Optional[Generator] = None
    graph: Optional[GraphSpec] = None

    @model_validator(mode="after")
    def _one_source(self) -> "VariantSpec":
        if sum(x is not None for x in (self.requirements, self.generator, self.graph)) != 1:
            raise ValueError("a variant needs exactly one of requirements, generator or graph")
        return self


class TenantSpec(_Model):
    """One model (or task) to host: its needs, rate, priority and constraints."""

    name: Name
    rate: Rate = Field(description="Requests per second.")
    priority: int = Field(0, ge=-MAX_PRIORITY, le=MAX_PRIORITY,
                          description="Higher is more important; lower tenants borrow idle capacity.")
    replicas: Count = Field(1, le=MAX_REPLICAS, description="Instances sharing the rate equally.")
    deadline: Optional[Deadline] = Field(None, description="Latency bound of one request.")
    precision: Optional[Fraction] = Field(None, description="Required mean precision (with variants).")
    batch: bool = Field(False, description="Best effort: also runs on capacity lent by higher priorities.")
    pools: Optional[list[Name]] = Field(None, description="Pools the tenant may use (default: all that fit).")
    requirements: Optional[RequirementsSpec] = None
    generator: Optional[Generator] = None
    graph: Optional[GraphSpec] = None
    plan: Optional[str] = Field(None, description="A compiled plan.json (its determined resources).")
    variants: Optional[list[VariantSpec]] = Field(None, min_length=1, max_length=MAX_VARIANTS)

    @model_validator(mode="after")
    def _one_source(self) -> "TenantSpec":
        given = [k for k in ("requirements", "generator", "graph", "plan", "variants") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a tenant needs exactly one of requirements, generator, graph, plan or variants"
                             + (f" (got {', '.join(given)})" if given else ""))
        if self.precision is not None and self.variants is None:
            raise ValueError("precision is a requirement on a choice of variants: give variants")
        return self


class TraceEntry(_Model):
    tenant: Name
    at: Annotated[Seconds, _bounded(0, MAX_SECONDS, "a trace time in seconds"), _SECONDS_GUARD] = Field(
        description="Arrival time from the start of the trace.")


class BackfillSpec(_Model):
    """Lend idle allocated capacity to lower-priority batch tenants (simulated)."""

    horizon: HorizonSeconds = Field("100 ms", validate_default=True, description="Simulated time.")
    mode: Literal["preempt", "checkpoint"] = Field("preempt", description="preempt: the borrower's unfinished "
                                                   "chunk is lost; checkpoint: saved, at a delay to the primary.")
    chunk: HorizonSeconds = Field("1 ms", validate_default=True,
                                  description="Borrower work unit (lost when preempted).")
    checkpoint: HorizonSeconds = Field("100 us", validate_default=True, description="Time to save a borrower's state.")
    resume: HorizonSeconds = Field("50 us", validate_default=True, description="Time to restore it.")
    trace: Optional[list[TraceEntry]] = Field(None, max_length=MAX_TRACE,
                                              description="Request arrivals (default: from the rates).")
    seed: NonNegative = Field(0, le=2**63 - 1, description="Seed of the generated trace.")


class PricingSpec(_Model):
    """Prices per operation with discounts."""

    per_gop: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False,
                           description="Price of 10^9 operations at peak, full priority (finite, >= 0).")
    currency: str = Field("USD", min_length=1, max_length=16)
    priority_discounts: dict[Annotated[int, Field(ge=-MAX_PRIORITY, le=MAX_PRIORITY)], Fraction] = Field(
        default_factory=dict,
                                                    description="Discount by priority (lower priority, cheaper).")
    off_peak_discount: Fraction = Field(0.0, description="Discount off peak.")


class FleetSection(_Model):
    pools: list[PoolSpec] = Field(min_length=1, max_length=MAX_POOLS)
    tenants: list[TenantSpec] = Field(min_length=1, max_length=MAX_TENANTS)
    objective: Literal["power", "spread"] = Field("power", description="power: fewest (cheapest) processors, "
                                                  "then balanced; spread: lowest peak utilization over all.")
    max_utilization: Annotated[Fraction, _bounded(0, 1, "max_utilization", low_open=True)] = Field(
        1.0, description="Cap on the ops and io share any processor may be allocated (headroom for bursts and "
                         "latency), e.g. 0.8; > 0.")
    backfill: Optional[BackfillSpec] = None
    pricing: Optional[PricingSpec] = None
    solver: Annotated[SolverSpec, BeforeValidator(_solver_guard)] = Field(default_factory=SolverSpec)


class FleetDocument(_Model):
    """A fleet spec, version 1.

    Examples
    --------
    >>> doc = FleetDocument.model_validate({"fleet": {
    ...     "pools": [{"name": "p", "profile": "generic", "capacity": {"ops": "100 kops", "io": "100 GB/s"}}],
    ...     "tenants": [{"name": "a", "rate": "1/s", "requirements": {"ops": 20000, "io": "30 GB"}}]}})
    >>> doc.fleet.pools[0].capacity.ops, doc.fleet.tenants[0].requirements.io
    (100000, 30000000000)
    """

    model_config = ConfigDict(title="plan fleet spec (version 1)")

    version: Literal[1] = 1
    name: Optional[Name] = None
    fleet: FleetSection


_FIELDS: dict[str, list[str]] = {}


def _fields_at(raw: tuple) -> list[str]:
    """Field names of the fleet model at a pydantic location (for did-you-mean)."""
    cur: Any = FleetDocument
    for part in raw:
        cur = unwrap_annotation(cur)
        origin = typing.get_origin(cur)
        if isinstance(cur, type) and issubclass(cur, BaseModel) and isinstance(part, str):
            if part not in cur.model_fields:
                return []
            cur = cur.model_fields[part].annotation
        elif origin in (list, tuple) and isinstance(part, int):
            cur = typing.get_args(cur)[0]
        else:
            return []
    cur = unwrap_annotation(cur)
    return list(cur.model_fields) if isinstance(cur, type) and issubclass(cur, BaseModel) else []


def is_fleet_data(data: Any) -> bool:
    """A fleet spec has a top-level ``fleet:`` key.

    >>> is_fleet_data({"version": 1, "fleet": {}}), is_fleet_data({"hardware": {}})
    (True, False)
    """
    return isinstance(data, Mapping) and "fleet" in data


def read_fleet_document(source: str | Path | Mapping[str, Any]) -> tuple[FleetDocument, Locator, Path]:
    """Parse and validate a fleet spec; returns the document, its locator and its directory.

    Raises
    ------
    SpecError
        One error with file, line and path.

    Examples
    --------
    >>> read_fleet_document({"fleet": {"pools": [{"name": "p", "profile": "generic"}],
    ...                                "tenants": [{"name": "a", "rate": 0, "requirements": {"ops": 1}}]}})
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: fleet.tenants[0].rate: rate must be > 0 requests per second, got 0
    """
    if isinstance(source, Mapping):
        locator, base = Locator(dict(source), None, None), Path.cwd()
    else:
        path = Path(source)
        text = read_text_file(path, what="fleet spec", limits=FLEET_READ_LIMITS)
        locator = Locator(read_yaml(text, str(path), FLEET_READ_LIMITS), text, str(path))
        base = path.parent
    if not isinstance(locator.data, Mapping):
        raise locator.error("the spec must be a mapping with a 'fleet' key")
    try:
        doc = FleetDocument.model_validate(locator.data)
    except ValidationError as exc:
        extra = [e for e in exc.errors(include_url=False) if e["type"] == "extra_forbidden"]
        if extra:
            raw = tuple(extra[0]["loc"])
            loc = locator.clean(raw, keep_last=True)
            known = _fields_at(raw[:-1])
            hint = did_you_mean(raw[-1], known) or (f"; expected one of: {', '.join(known)}" if known else "")
            first = validation_error(exc, locator)
            line = locator.line(loc, key=True)
            if first.line is None or line is None or line <= first.line:
                raise locator.error(f"unknown key {raw[-1]!r}{hint}", loc, key=True) from None
            raise first from None
        raise validation_error(exc, locator) from None
    return doc, locator, base


def fleet_json_schema() -> dict[str, Any]:
    """The JSON Schema of fleet specs, generated from the same models as the validator.

    >>> fleet_json_schema()["required"]
    ['fleet']
    """
    return FleetDocument.model_json_schema()
