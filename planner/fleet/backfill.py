"""Backfill: lend a primary tenant's idle allocated capacity to lower-priority batch work.

A processor serves its tenants' requests at full speed, highest priority first (FIFO
within a priority, one request at a time, never preempting another request). Between
requests it is idle; with backfill, a batch tenant of lower priority borrows it, with an
unbounded backlog of work, until the next primary request arrives:

* ``preempt``: the borrower stops at once; the unfinished part of its current ``chunk``
  is lost. The primary is not delayed.
* ``checkpoint``: the borrower saves its state (``checkpoint`` time, during which the
  primary waits) and later pays ``resume`` time before useful work continues; nothing
  is lost.

The simulation is exact on integer nanoseconds. A processor where lending would make a
primary request miss a deadline it meets without lending is not lent out (the report says
so), so the report can confirm that backfill never causes a missed deadline.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from planner.fleet.reduction import pool_of, processor_key

__all__ = ["Request", "ProcessorTrace", "BackfillResult", "simulate_processor", "simulate_fleet", "generate_arrivals"]


@dataclass(frozen=True, slots=True)
class Request:
    """One request: arrival, service time at full speed and relative deadline (ns).

    >>> Request("a", 5_000_000, 2_000_000, 3_000_000).service_ns
    2000000
    """

    tenant: str
    arrival_ns: int
    service_ns: int
    deadline_ns: int | None = None
    priority: int = 0


@dataclass(frozen=True, slots=True)
class ProcessorTrace:
    """What one processor did over the horizon (ns).

    >>> simulate_processor([Request("a", 0, 5)], 10, lend=False).primary_busy_ns
    5
    """

    primary_busy_ns: int
    borrowed_useful_ns: int
    overhead_ns: int  # checkpoint + resume + lost chunks
    misses: tuple[str, ...]  # "tenant@arrival" of requests past their deadline
    max_response_ns: dict[str, int]
    segments: tuple[tuple[str, int, int], ...] = field(default=(), compare=False)  # (what, start, end)


def simulate_processor(requests: list[Request], horizon_ns: int, *, lend: bool, mode: str = "preempt",
                       chunk_ns: int = 1_000_000, checkpoint_ns: int = 0, resume_ns: int = 0) -> ProcessorTrace:
    """Simulate one processor (see the module docstring).

    Examples
    --------
    A primary request arrives mid-period (5 ms into 10 ms) and takes 2 ms. Without
    lending the processor is busy 2 ms. With preemption and 2 ms borrower chunks the
    borrower completes chunks 0-2 and 2-4 (4-5 is lost), then 7-9 (9-10 ends with the
    horizon unfinished): 6 ms useful.

    >>> req = [Request("a", 5_000_000, 2_000_000, 3_000_000)]
    >>> t = simulate_processor(req, 10_000_000, lend=True, mode="preempt", chunk_ns=2_000_000)
    >>> t.primary_busy_ns, t.borrowed_useful_ns, t.overhead_ns, t.misses
    (2000000, 6000000, 2000000, ())

    With checkpointing (0.5 ms to save, 0.25 ms to resume) the primary waits 0.5 ms and
    answers in 2.5 ms (deadline 3 ms); the borrower is useful 0-5 and 7.75-10: 7.25 ms.

    >>> t = simulate_processor(req, 10_000_000, lend=True, mode="checkpoint",
    ...                        checkpoint_ns=500_000, resume_ns=250_000)
    >>> t.borrowed_useful_ns, t.overhead_ns, t.max_response_ns
    (7250000, 750000, {'a': 2500000})
    """
    reqs = sorted((r for r in requests if r.arrival_ns < horizon_ns), key=lambda r: (r.arrival_ns, -r.priority, r.tenant))
    pending: list[Request] = []
    t = 0
    k = 0
    busy = useful = overhead = 0
    misses: list[str] = []
    worst: dict[str, int] = {}
    segments: list[tuple[str, int, int]] = []
    started_once = False

    def borrow(start: int, end: int) -> None:
        nonlocal useful, overhead, started_once
        if end <= start:
            return
        span = end - start
        if mode == "preempt":
            done = (span // chunk_ns) * chunk_ns
            useful += done
            overhead += span - done
        else:
            pay = min(span, resume_ns) if started_once else 0
            overhead += pay
            useful += span - pay
        started_once = True
        segments.append(("borrow", start, end))

    while t < horizon_ns:
        while k < len(reqs) and reqs[k].arrival_ns <= t:
            pending.append(reqs[k])
            k += 1
        if not pending:
            nxt = reqs[k].arrival_ns if k < len(reqs) else horizon_ns
            if lend and nxt > t:
                borrow(t, nxt)
                if k < len(reqs) and mode == "checkpoint" and nxt < horizon_ns:
                    # Save the borrower's state before the primary runs.
                    end = min(horizon_ns, nxt + checkpoint_ns)
                    overhead += end - nxt
                    segments.append(("checkpoint", nxt, end))
                    t = end
                    continue
            t = nxt
            continue
        pending.sort(key=lambda r: (-r.priority, r.arrival_ns, r.tenant))
        r = pending.pop(0)
        end = t + r.service_ns
        segments.append((r.tenant, t, end))
        busy += min(end, horizon_ns) - t
        response = end - r.arrival_ns
        worst[r.tenant] = max(worst.get(r.tenant, 0), response)
        if r.deadline_ns is not None and response > r.deadline_ns:
            misses.append(f"{r.tenant}@{r.arrival_ns}")
        t = end
    return ProcessorTrace(busy, useful, overhead, tuple(misses), dict(sorted(worst.items())), tuple(segments))


def generate_arrivals(rate_rps: float, horizon_ns: int, seed: str) -> list[int]:
    """Poisson arrivals (exponential gaps) at ``rate_rps`` over the horizon, seeded.

    >>> generate_arrivals(1000.0, 5_000_000, "s") == generate_arrivals(1000.0, 5_000_000, "s")
    True
    """
    rng = random.Random(seed)
    out, t = [], 0.0
    while True:
        t += rng.expovariate(rate_rps)
        ns = int(t * 1e9)
        if ns >= horizon_ns:
            return out
        out.append(ns)


@dataclass(frozen=True, slots=True)
class ProcessorBackfill:
    processor: str
    tenants: tuple[str, ...]
    requests: int
    lent: bool
    borrower: str | None
    utilization_before: float
    utilization_after: float
    overhead: float
    misses_before: int
    misses_after: int
    max_response_ms: dict[str, float]
    note: str = ""


@dataclass(frozen=True, slots=True)
class BackfillResult:
    """Backfill over the chosen allocation: per processor and in total.

    >>> BackfillResult("preempt", 0.01, "spec", ()).to_dict()["gained"]
    0.0
    """

    mode: str
    horizon_s: float
    trace_source: str
    processors: tuple[ProcessorBackfill, ...]

    @property
    def utilization_before(self) -> float:
        return sum(p.utilization_before for p in self.processors) / max(1, len(self.processors))

    @property
    def utilization_after(self) -> float:
        return sum(p.utilization_after for p in self.processors) / max(1, len(self.processors))

    @property
    def gained(self) -> float:
        return self.utilization_after - self.utilization_before

    @property
    def deadline_misses_caused(self) -> int:
        return sum(max(0, p.misses_after - p.misses_before) for p in self.processors)

    def to_dict(self) -> dict:
        return {
            "mode": self.mode, "horizon_s": self.horizon_s, "trace": self.trace_source,
            "utilization_before": round(self.utilization_before, 6),
            "utilization_after": round(self.utilization_after, 6), "gained": round(self.gained, 6),
            "deadline_misses_caused_by_backfill": self.deadline_misses_caused,
            "processors": [{
                "processor": p.processor, "tenants": list(p.tenants), "requests": p.requests, "lent": p.lent,
                "borrower": p.borrower, "utilization_before": round(p.utilization_before, 6),
                "utilization_after": round(p.utilization_after, 6), "overhead": round(p.overhead, 6),
                "deadline_misses_without_backfill": p.misses_before, "deadline_misses_with_backfill": p.misses_after,
                "max_response_ms": p.max_response_ms, "note": p.note} for p in self.processors],
        }


def simulate_fleet(result) -> BackfillResult:
    """Simulate every used processor of the chosen allocation over the spec's trace.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> spec = load_fleet_spec({"fleet": {
    ...     "pools": [{"name": "p", "profile": "generic", "capacity": {"ops": 1000000}}],
    ...     "tenants": [{"name": "a", "rate": 100, "priority": 1, "requirements": {"ops": 2000}},
    ...                 {"name": "b", "rate": 1, "batch": True, "requirements": {"ops": 1}}],
    ...     "backfill": {"horizon": "10 ms", "chunk": "2 ms", "trace": [{"tenant": "a", "at": "5 ms"}]}}})
    >>> p = simulate_fleet(solve_fleet(spec, time_limit_s=2, workers=1)).processors[0]
    >>> p.borrower, round(p.utilization_before, 3), round(p.utilization_after, 3)
    ('b', 0.2, 0.8)
    """
    spec = result.spec
    bf = spec.document.fleet.backfill
    horizon = int(round(bf.horizon * 1e9))
    alloc = result.allocation
    by_label = {it.label: it for it in result.items}
    on: dict[str, list] = {}
    for label, proc in alloc.placement.items():
        on.setdefault(proc, []).append(by_label[label])
    # Trace: explicit entries go round-robin to a tenant's items; otherwise Poisson per item.
    arrivals: dict[str, list[int]] = {it.label: [] for it in result.items}
    if bf.trace:
        source = "spec"
        count: dict[str, int] = {}
        for e in sorted(bf.trace, key=lambda e: (e.at, e.tenant)):
            its = [it for it in result.items if it.tenant == e.tenant]
            n = count.get(e.tenant, 0)
            count[e.tenant] = n + 1
            arrivals[its[n % len(its)].label].append(int(round(e.at * 1e9)))
    else:
        source = f"generated from rates (Poisson, seed {bf.seed})"
        for it in result.items:
            if not spec.tenant(it.tenant).batch:
                arrivals[it.label] = generate_arrivals(it.rate_rps, horizon, f"{bf.seed}:{it.label}")
    batch = [t for t in spec.tenants if t.batch]
    out = []
    for proc in sorted(on, key=lambda p: result_key(spec, p)):
        pool = pool_of(spec, proc)
        items = on[proc]
        reqs = []
        for it in items:
            t = spec.tenant(it.tenant)
            if t.batch:
                continue
            need = (t.needs.get(pool.name) if not it.variant
                    else next(v for v in t.variants if v.name == it.variant).needs[pool.name])
            service = math.ceil(need.ops_per_request * 1e9 / pool.ops_per_s)
            deadline = None if t.deadline_s is None else int(round(t.deadline_s * 1e9))
            reqs += [Request(it.label, a, service, deadline, t.priority) for a in arrivals[it.label]]
        primaries = [spec.tenant(it.tenant) for it in items if not spec.tenant(it.tenant).batch]
        floor = min((t.priority for t in primaries), default=None)
        borrower = next((b.name for b in sorted(batch, key=lambda b: (b.priority, b.name))
                         if (floor is None or b.priority < floor) and (pool.name in b.needs or b.variants)), None)
        kw = dict(mode=bf.mode, chunk_ns=max(1, int(round(bf.chunk * 1e9))),
                  checkpoint_ns=int(round(bf.checkpoint * 1e9)), resume_ns=int(round(bf.resume * 1e9)))
        base = simulate_processor(reqs, horizon, lend=False, **kw)
        note = ""
        lent = borrower is not None
        after = simulate_processor(reqs, horizon, lend=True, **kw) if lent else base
        if lent and len(after.misses) > len(base.misses):
            note = (f"not lent: checkpointing would make {len(after.misses) - len(base.misses)} request(s) "
                    f"miss a deadline")
            lent, after = False, base
        if borrower is None:
            note = "no lower-priority batch tenant can use this pool"
        out.append(ProcessorBackfill(
            proc, tuple(sorted({it.tenant for it in items})), len(reqs), lent, borrower if lent else None,
            base.primary_busy_ns / horizon, (after.primary_busy_ns + after.borrowed_useful_ns) / horizon,
            after.overhead_ns / horizon, len(base.misses), len(after.misses),
            {k: v / 1e6 for k, v in after.max_response_ns.items()}, note))
    return BackfillResult(bf.mode, bf.horizon, source, tuple(out))


def result_key(spec, processor: str):
    return processor_key(spec, processor)
