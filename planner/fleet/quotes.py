"""Quotes: a price per request from the exactly determined operation counts.

``price = per_gop x ops / 10^9 x (1 - priority discount) x (1 - off-peak discount)``.
Operations are the worst case: ``ops_max`` when a tenant's count depends on its data,
and for a model measured on several pools the largest count over the pools it may use.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from planner.errors import SpecError
from planner.fleet.resolve import FleetSpec
from planner.safe_output import atomic_file

__all__ = ["QuoteLine", "QuoteResult", "quote"]


@dataclass(frozen=True, slots=True)
class QuoteLine:
    """One priced tenant (or tenant variant).

    >>> QuoteLine("a", 0, 10**9, False, 1.0, 0.5, 0.4, 1800.0).price_per_request_peak
    0.5
    """

    tenant: str
    priority: int
    ops_per_request: int
    worst_case: bool
    rate_rps: float
    price_per_request_peak: float
    price_per_request_off_peak: float
    price_per_hour_peak: float


@dataclass(frozen=True, slots=True)
class QuoteResult:
    """Every line of a quote, its currency and its terms.

    >>> q = QuoteResult("s", "USD", 0.5, 0.2, {}, (QuoteLine("a", 0, 10**9, False, 1.0, 0.5, 0.4, 1800.0),))
    >>> q.quote_rows[1]
    ['a', '0', '1,000,000,000', '1', '0.5', '0.4', '1800']
    """

    spec_name: str
    currency: str
    per_gop: float
    off_peak_discount: float
    priority_discounts: dict[int, float]
    lines: tuple[QuoteLine, ...]

    @property
    def quote_rows(self) -> list[list[str]]:
        """Rows for a terminal table (header first)."""
        c = self.currency
        rows = [["tenant", "priority", "ops/request", "rate (req/s)", f"peak ({c}/req)", f"off-peak ({c}/req)",
                 f"peak ({c}/hour)"]]
        for q in self.lines:
            rows.append([q.tenant, str(q.priority), f"{q.ops_per_request:,}" + (" (worst case)" if q.worst_case else ""),
                         f"{q.rate_rps:g}", f"{q.price_per_request_peak:.6g}", f"{q.price_per_request_off_peak:.6g}",
                         f"{q.price_per_hour_peak:.6g}"])
        return rows

    def to_dict(self) -> dict:
        return {"spec": self.spec_name, "currency": self.currency, "per_gop": self.per_gop,
                "off_peak_discount": self.off_peak_discount,
                "priority_discounts": {str(k): v for k, v in sorted(self.priority_discounts.items())},
                "lines": [asdict(q) for q in self.lines]}

    def to_json(self) -> str:
        """The quote as JSON text; never ``NaN`` or ``Infinity`` (every price is checked finite).

        >>> QuoteResult("s", "USD", 0.5, 0.2, {}, ()).to_json().splitlines()[1]
        '  "spec": "s",'
        """
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def write_quote_json(self, path: str | Path, *, force: bool = False, inputs: Iterable[str | Path] = ()) -> None:
        """Write the quote as JSON, whole or not at all; an existing file is replaced only with
        ``force`` (never one of ``inputs``): :func:`planner.safe_output.atomic_file`."""
        with atomic_file(path, force=force, inputs=inputs) as tmp:
            tmp.write_text(self.to_json(), encoding="utf-8")


def quote(spec: FleetSpec) -> QuoteResult:
    """Price every tenant of a fleet spec (needs a ``pricing`` section).

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec
    >>> spec = load_fleet_spec({"fleet": {
    ...     "pools": [{"name": "p", "profile": "generic", "capacity": {"ops": "1 Tops/s"}}],
    ...     "tenants": [{"name": "a", "rate": 10, "priority": 1,
    ...                  "requirements": {"ops": "2 Gops", "ops_max": "3 Gops"}}],
    ...     "pricing": {"per_gop": 0.01, "priority_discounts": {1: 0.5}, "off_peak_discount": 0.2}}})
    >>> q = quote(spec).lines[0]
    >>> q.ops_per_request, q.price_per_request_peak, q.price_per_request_off_peak   # 3 x 0.01 x 0.5
    (3000000000, 0.015, 0.012)
    """
    pricing = spec.document.fleet.pricing
    if pricing is None:
        raise SpecError("the spec has no pricing section (fleet.pricing: {per_gop: ...})", file=spec.locator.file
                        if spec.locator is not None else None)
    lines = []
    for t in spec.tenants:
        parts = ([(t.name, t.needs, t.rate_rps)] if not t.variants else
                 [(f"{t.name}.{v.name}", v.needs, t.rate_rps) for v in t.variants])
        for label, needs, rate in parts:
            ops = max(n.ops_max_per_request for n in needs.values())
            worst = any(n.ops_max_per_request > n.ops_per_request for n in needs.values())
            factor = 1.0 - pricing.priority_discounts.get(t.priority, 0.0)
            peak = round(pricing.per_gop * ops / 1e9 * factor, 12)
            off = round(peak * (1.0 - pricing.off_peak_discount), 12)
            hour = round(peak * rate * 3600, 9)
            if not all(math.isfinite(x) for x in (peak, off, hour)):  # unreachable within the spec's limits
                raise SpecError(f"tenant {label!r}: the price is not a finite number (per_gop {pricing.per_gop!r}, "
                                f"{ops:,} operations per request)", path="fleet.pricing.per_gop")
            lines.append(QuoteLine(label, t.priority, ops, worst, rate, peak, off, hour))
    return QuoteResult(spec.name, pricing.currency, pricing.per_gop, pricing.off_peak_discount,
                       dict(pricing.priority_discounts), tuple(lines))
