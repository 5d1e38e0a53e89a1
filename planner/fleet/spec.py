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

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema, model_validator

from planner.errors import SpecError
from planner.spec.loader import Locator, _validation_error, did_you_mean
from planner.spec.models import Bandwidth, Count, Frequency, Generator, GraphSpec, Name, NonNegative, Seconds, Size, SolverSpec

__all__ = ["FleetDocument", "ISSUE_EXAMPLE", "fleet_json_schema", "parse_ops", "parse_rate", "read_fleet_document", "is_fleet_data"]

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
    if amount < 0:
        raise ValueError(f"a number of operations must be >= 0, got {value!r}")
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
    """
    if isinstance(value, bool):
        raise ValueError(f'expected a rate such as "50/s", got {value!r}')
    if isinstance(value, (int, float)):
        rate = float(value)
    else:
        m = re.fullmatch(rf"\s*({_NUMBER})\s*(/\s*(s|sec|min|h)|rps|req/s)?\s*", str(value))
        if not m:
            raise ValueError(f'expected a rate such as "50/s", "300/min" or "1.5 rps", got {value!r}')
        per = m.group(6) or "s"
        rate = float(m.group(1)) / _PER[per]
    if not rate > 0:
        raise ValueError(f"rate must be > 0 requests per second, got {value!r}")
    return rate


def _fraction(value: Any) -> float:
    if isinstance(value, str) and value.strip().endswith("%"):
        value = float(value.strip()[:-1]) / 100
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'expected a fraction such as 0.9 or "90%", got {value!r}')
    if not 0 <= float(value) <= 1:
        raise ValueError(f"expected a fraction in 0..1, got {value!r}")
    return float(value)


Ops = Annotated[int, BeforeValidator(parse_ops),
                WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}],
                                "description": "Operations: a number or e.g. \"20 Gops\".",
                                "examples": [20000, "20 Gops"]})]
Rate = Annotated[float, BeforeValidator(parse_rate),
                 WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "string"}],
                                 "description": "Requests per second: a number or \"50/s\", \"300/min\".",
                                 "examples": ["50/s"]})]
Fraction = Annotated[float, BeforeValidator(_fraction),
                     WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0, "maximum": 1},
                                               {"type": "string", "pattern": r"^\s*[\d.]+\s*%\s*$"}]})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CapacitySpec(_Model):
    """What one processor of a pool offers (overrides the profile's figures)."""

    ops: Optional[Ops] = Field(None, description="Operations per second (default: clock x MXU size).")
    io: Optional[Bandwidth] = Field(None, description="IO bytes per second (default: main-memory bandwidth).")
    storage: Optional[Size] = Field(None, description="Storage bytes (default: main-memory capacity).")


class PoolSpec(_Model):
    """A pool of identical processors."""

    name: Name = Field(description="Pool name; processors are <name>0, <name>1, ...")
    profile: str = Field(description="Built-in ISA profile.", examples=["tpu-v4"])
    count: Count = Field(1, description="Processors in the pool.")
    cost: NonNegative = Field(1, description="Cost of one used processor (power) for the fewest-processors mode.")
    clock: Optional[Frequency] = Field(None, description="Override of the profile's clock.")
    capacity: CapacitySpec = Field(default_factory=CapacitySpec, description="Per-processor capacity.")


class RequirementsSpec(_Model):
    """A tenant's needs given explicitly (per request, except storage)."""

    ops: Ops = Field(description="Operations per request.")
    ops_max: Optional[Ops] = Field(None, description="Worst case when the count depends on the data.")
    io: Optional[Size] = Field(None, description="IO bytes per request.")
    storage: Optional[Size] = Field(None, description="Resident bytes (weights) per instance.")


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
    priority: int = Field(0, description="Higher is more important; lower tenants borrow idle capacity.")
    replicas: Count = Field(1, description="Instances sharing the rate equally.")
    deadline: Optional[Seconds] = Field(None, description="Latency bound of one request.")
    precision: Optional[Fraction] = Field(None, description="Required mean precision (with variants).")
    batch: bool = Field(False, description="Best effort: also runs on capacity lent by higher priorities.")
    pools: Optional[list[Name]] = Field(None, description="Pools the tenant may use (default: all that fit).")
    requirements: Optional[RequirementsSpec] = None
    generator: Optional[Generator] = None
    graph: Optional[GraphSpec] = None
    plan: Optional[str] = Field(None, description="A compiled plan.json (its determined resources).")
    variants: Optional[list[VariantSpec]] = Field(None, min_length=1)

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
    at: Seconds = Field(description="Arrival time from the start of the trace.")


class BackfillSpec(_Model):
    """Lend idle allocated capacity to lower-priority batch tenants (simulated)."""

    horizon: Seconds = Field("100 ms", validate_default=True, description="Simulated time.")
    mode: Literal["preempt", "checkpoint"] = Field("preempt", description="preempt: the borrower's unfinished "
                                                   "chunk is lost; checkpoint: saved, at a delay to the primary.")
    chunk: Seconds = Field("1 ms", validate_default=True, description="Borrower work unit (lost when preempted).")
    checkpoint: Seconds = Field("100 us", validate_default=True, description="Time to save a borrower's state.")
    resume: Seconds = Field("50 us", validate_default=True, description="Time to restore it.")
    trace: Optional[list[TraceEntry]] = Field(None, description="Request arrivals (default: from the rates).")
    seed: NonNegative = Field(0, description="Seed of the generated trace.")


class PricingSpec(_Model):
    """Prices per operation with discounts."""

    per_gop: float = Field(gt=0, description="Price of 10^9 operations at peak, full priority.")
    currency: str = Field("USD")
    priority_discounts: dict[int, Fraction] = Field(default_factory=dict,
                                                    description="Discount by priority (lower priority, cheaper).")
    off_peak_discount: Fraction = Field(0.0, description="Discount off peak.")


class FleetSection(_Model):
    pools: list[PoolSpec] = Field(min_length=1)
    tenants: list[TenantSpec] = Field(min_length=1)
    objective: Literal["power", "spread"] = Field("power", description="power: fewest (cheapest) processors, "
                                                  "then balanced; spread: lowest peak utilization over all.")
    max_utilization: Fraction = Field(1.0, description="Cap on the ops and io share any processor may be "
                                      "allocated (headroom for bursts and latency), e.g. 0.8.")
    backfill: Optional[BackfillSpec] = None
    pricing: Optional[PricingSpec] = None
    solver: SolverSpec = Field(default_factory=SolverSpec)


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
    import typing

    from planner.spec.loader import _unwrap

    cur: Any = FleetDocument
    for part in raw:
        cur = _unwrap(cur)
        origin = typing.get_origin(cur)
        if isinstance(cur, type) and issubclass(cur, BaseModel) and isinstance(part, str):
            if part not in cur.model_fields:
                return []
            cur = cur.model_fields[part].annotation
        elif origin in (list, tuple) and isinstance(part, int):
            cur = typing.get_args(cur)[0]
        else:
            return []
    cur = _unwrap(cur)
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
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SpecError("no such spec file", file=str(path)) from None
        except (OSError, UnicodeDecodeError) as e:
            raise SpecError(f"cannot read the spec: {e}", file=str(path)) from None
        locator, base = Locator.from_yaml(text, str(path)), path.parent
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
            first = _validation_error(exc, locator)
            line = locator.line(loc, key=True)
            if first.line is None or line is None or line <= first.line:
                raise locator.error(f"unknown key {raw[-1]!r}{hint}", loc, key=True) from None
            raise first from None
        raise _validation_error(exc, locator) from None
    return doc, locator, base


def fleet_json_schema() -> dict[str, Any]:
    """The JSON Schema of fleet specs, generated from the same models as the validator.

    >>> fleet_json_schema()["required"]
    ['fleet']
    """
    return FleetDocument.model_json_schema()
