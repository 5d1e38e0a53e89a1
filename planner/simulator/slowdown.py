"""What-if replay: the replayed plan re-timed with devices and links slowed down (and noise).

This is not a check of the plan (the verified replay is, :mod:`planner.simulator.replay`): it
asks what the same binaries would measure on slower hardware. Every op keeps its device,
stream and order, every transfer its link and order; op ``i`` on a device slowed by factor
``f`` takes ``round(f x its cycles x jitter)``, with ``jitter`` uniform in
``[1 - noise, 1 + noise]`` drawn per op from the seed and the op's name (so the same seed
gives the same jitter whatever else changes). An op starts at its planned cycle or, when
later, once its stream, its inputs on the same device and its incoming transfers are done;
a transfer once its producer and the previous transfer on its link are done. Memory DMAs
(prefetches and evictions between memory levels) are re-timed too, when the ops' tensors are
given: a DMA takes its device's factor, runs in order on its device's DMA engine, after the ops
of that device that touch its tensor and ended before it in the plan, and before those that
started after it. With no slowdown and no noise the what-if replay is the plan itself.
Under shared bandwidth (the binaries' header flag, docs/memory.md) every op, memory DMA and
link transfer end keeps the shares it held, for its measured duration, and starts only when
they fit (:func:`what_if`'s ``shares``).

Examples
--------
>>> from planner.simulator import OpTiming, SimulationResult, TransferTiming
>>> sim = SimulationResult(30, {"a": OpTiming("d0", 0, 0, 10), "b": OpTiming("d1", 0, 14, 30)},
...                        {0: TransferTiming(0, "d0", "d1", "l", 8, 10, 14, "a", "b")}, {}, 0)
>>> r = what_if(sim, [("a", "b")], parse_slowdown("d0=2", ["d0", "d1"], ["l"]))
>>> r.ops["a"], r.ops["b"], r.makespan_cycles
(MeasuredOp(device='d0', stream=0, start_cycle=0, measured_cycles=20, planned_cycles=10), \
MeasuredOp(device='d1', stream=0, start_cycle=24, measured_cycles=16, planned_cycles=16), 40)
"""

from __future__ import annotations

import heapq
import math
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np

from planner.errors import SpecError
from planner.instances import base_op_name
from planner.simulator.bandwidth import SHARE_UNITS

__all__ = ["Slowdown", "MeasuredOp", "MeasuredTransfer", "MeasuredDma", "WhatIf", "parse_slowdown", "what_if"]


@dataclass(frozen=True)
class Slowdown:
    """Factors by device and link name (1 where absent), and ``noise`` (a fraction, 0.05 = ±5%) with its seed."""

    factors: Mapping[str, float] = field(default_factory=dict)
    noise: float = 0.0
    seed: int = 0

    def cycles(self, name: str, where: str, planned: int) -> int:
        """The measured cycles of ``name`` (an op or a transfer) on ``where`` (its device or link)."""
        jitter = 1.0
        if self.noise > 0:
            rng = np.random.default_rng([self.seed, zlib.crc32(name.encode("utf-8"))])
            jitter = 1.0 + self.noise * (2.0 * float(rng.random()) - 1.0)
        return int(round(planned * self.factors.get(where, 1.0) * jitter))


def parse_slowdown(text: str | None, devices: Iterable[str], links: Iterable[str], *, noise_pct: float = 0.0,
                   seed: int = 0) -> Slowdown:
    """``"tpu0=2,pcie=1.5"`` as a :class:`Slowdown` over the plan's ``devices`` and ``links``.

    Raises
    ------
    SpecError
        A name that is neither a device nor a link, a factor that is not a finite number
        above 0, a name given twice, or a noise outside [0, 100) percent.

    Examples
    --------
    >>> parse_slowdown("d0=2", ["d0", "d1"], ["l"]).factors
    {'d0': 2.0}
    >>> parse_slowdown("d9=2", ["d0", "d1"], ["l"])
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: --slow: unknown device or link 'd9' (devices: d0, d1; links: l)
    """
    devices, links = list(devices), list(links)
    if not (math.isfinite(noise_pct) and 0 <= noise_pct < 100):
        raise SpecError(f"--noise: expected a percentage from 0 to below 100, got {noise_pct!r}")
    factors: dict[str, float] = {}
    for item in [] if not text else text.split(","):
        name, sep, value = item.strip().partition("=")
        if not sep:
            raise SpecError(f"--slow: expected NAME=FACTOR, got {item.strip()!r}")
        if name not in devices and name not in links:
            raise SpecError(f"--slow: unknown device or link {name!r} (devices: {', '.join(devices)}; "
                            f"links: {', '.join(links) or 'none'})")
        try:
            factor = float(value)
        except ValueError:
            factor = math.nan
        if not (math.isfinite(factor) and factor > 0):
            raise SpecError(f"--slow: {name}: expected a factor above 0, got {value!r}")
        if name in factors:
            raise SpecError(f"--slow: {name} is given twice")
        factors[name] = factor
    return Slowdown(factors, noise_pct / 100.0, seed)


class MeasuredOp(NamedTuple):
    """An op as the what-if replay measured it (reference cycles)."""

    device: str
    stream: int
    start_cycle: int
    measured_cycles: int
    planned_cycles: int


class MeasuredTransfer(NamedTuple):
    """A transfer as the what-if replay measured it (reference cycles)."""

    src_op: str
    dst_op: str
    link: str
    size_bytes: int
    start_cycle: int
    measured_cycles: int
    planned_cycles: int


class MeasuredDma(NamedTuple):
    """A memory DMA as the what-if replay measured it (reference cycles)."""

    device: str
    op: str
    start_cycle: int
    measured_cycles: int
    planned_cycles: int


@dataclass(frozen=True)
class WhatIf:
    """The what-if replay: every op, transfer and memory DMA measured, and the makespan (of the
    ops and transfers, as the plan's)."""

    ops: Mapping[str, MeasuredOp]
    transfers: tuple[MeasuredTransfer, ...]
    makespan_cycles: int
    dmas: tuple[MeasuredDma, ...] = ()


def _dependencies(simulation: Any, op_edges: Iterable[tuple[str, str]]) -> dict[Any, set[Any]]:
    """Node -> the nodes it waits for: stream and link order, same-device inputs, transfers."""
    ops, transfers = simulation.ops, simulation.transfers
    preds: dict[Any, set[Any]] = {("op", n): set() for n in ops}
    preds.update({("tx", i): set() for i in transfers})
    lanes: dict[tuple, list] = defaultdict(list)
    for n, t in ops.items():
        lanes[("stream", t.device, t.stream)].append((t.start_cycle, t.end_cycle, n, ("op", n)))
    for i, t in transfers.items():
        lanes[("link", t.link)].append((t.start_cycle, t.end_cycle, str(i), ("tx", i)))
        preds[("tx", i)].update({("op", t.src_op)} & preds.keys())
        if ("op", t.dst_op) in preds:
            preds[("op", t.dst_op)].add(("tx", i))
    for lane in lanes.values():
        lane.sort()
        for before, after in zip(lane, lane[1:]):
            preds[after[3]].add(before[3])
    instances: dict[str, list[str]] = defaultdict(list)
    for n in ops:
        instances[base_op_name(n)].append(n)
    for u, v in op_edges:
        for a in instances.get(u, ()):
            for b in instances.get(v, ()):
                # an op split into memory instances (op#p) feeds its consumer's instances in parts: an
                # instance waits for the producer's instances that ended before it in the plan, not for
                # later ones (that would be a cycle)
                if ops[a].device == ops[b].device and ops[a].end_cycle <= ops[b].start_cycle:
                    preds[("op", b)].add(("op", a))
    return preds


def _dma_tensor(dma: Any) -> str:
    """The tensor a DMA moves: its buffers are the tensor's name, at a level ``name@level.k``."""
    return dma.src_buffer.split("@", 1)[0] if dma.kind == "prefetch" else dma.dst_buffer.split("@", 1)[0]


def _add_dmas(preds: dict[Any, set[Any]], simulation: Any, op_tensors: Mapping[str, Iterable[str]]) -> None:
    """DMA nodes: in plan order on their device's DMA engine, after the device's ops touching their
    tensor that ended before them, before those that started after them (module docstring)."""
    touching: dict[tuple[str, str], list[str]] = defaultdict(list)
    for n, t in simulation.ops.items():
        for tensor in op_tensors.get(base_op_name(n), ()):
            touching[t.device, tensor].append(n)
    engine: dict[str, list] = defaultdict(list)
    for k, dma in enumerate(simulation.dmas):
        node = ("dma", k)
        preds[node] = set()
        engine[dma.device].append((dma.start_cycle, dma.end_cycle, dma.op, node))
        for n in touching.get((dma.device, _dma_tensor(dma)), ()):
            t = simulation.ops[n]
            if t.end_cycle <= dma.start_cycle:
                preds[node].add(("op", n))
            elif t.start_cycle >= dma.end_cycle:
                preds[("op", n)].add(node)
    for lane in engine.values():
        lane.sort()
        for before, after in zip(lane, lane[1:]):
            preds[after[3]].add(before[3])


class _SharedDevices:
    """Shared bandwidth in the what-if replay: per device, the shares held over time by what was
    placed, every placed holder started by the device's ``last_start`` (so the load ahead only
    falls and checking a start suffices, as in the level solver's replay)."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[int, int, tuple[int, ...]]]] = defaultdict(list)
        self.last_start: dict[str, int] = defaultdict(int)

    def place(self, holds, ready: int, cycles: int) -> int:
        """The first time ``>= max(ready, last starts)`` at which every ``(device, shares)`` of
        ``holds`` fits (a transfer holds at both ends); placed there."""
        t = max([ready] + [self.last_start[d] for d, _ in holds])
        times = sorted({t, *(e for d, _ in holds for _s, e, _u in self.spans[d] if e > t)})
        start = next(when for when in times if all(self._fits(d, shares, when) for d, shares in holds))
        for d, shares in holds:
            self.last_start[d] = start
            self.spans[d] = [sp for sp in self.spans[d] if sp[1] > start] + [(start, start + cycles, shares)]
        return start

    def _fits(self, device: str, shares: tuple[int, ...], when: int) -> bool:
        spans = self.spans[device]
        return all(u + sum(h[lv] for s, e, h in spans if s <= when < e) <= SHARE_UNITS for lv, u in enumerate(shares))


def _time_order(preds: dict[Any, set[Any]], planned_start: Mapping[Any, int]) -> Iterable[Any]:
    """The nodes in dependency order, among the ready ones the earliest planned start first
    (ops, then DMAs, then transfers, then by key on a tie)."""
    users: dict[Any, list[Any]] = defaultdict(list)
    missing = {n: len(p) for n, p in preds.items()}
    for n, p in preds.items():
        for d in p:
            users[d].append(n)
    rank = {"op": 0, "dma": 1, "tx": 2}
    heap = [((planned_start[n], rank[n[0]], str(n[1])), n) for n, m in missing.items() if m == 0]
    heapq.heapify(heap)
    while heap:
        _, n = heapq.heappop(heap)
        yield n
        for u in users[n]:
            missing[u] -= 1
            if missing[u] == 0:
                heapq.heappush(heap, ((planned_start[u], rank[u[0]], str(u[1])), u))


def what_if(simulation: Any, op_edges: Iterable[tuple[str, str]], slowdown: Slowdown,
            op_tensors: Mapping[str, Iterable[str]] | None = None,
            shares: Mapping[Any, tuple[tuple[str, tuple[int, ...]], ...]] | None = None) -> WhatIf:
    """The replayed ``simulation`` (:class:`~planner.simulator.SimulationResult`) re-timed under
    ``slowdown``; ``op_edges`` are the graph's ``(producer, consumer)`` op pairs; ``op_tensors``
    the tensors each graph op reads or writes (None: memory DMAs are not re-timed).

    ``shares`` (shared bandwidth, :func:`planner.simulator.bandwidth.record_holdings`): node
    (``("op", name)``, ``("dma", k)``, ``("tx", id)``) -> each device it holds shares on with
    the shares of each level, for its whole measured duration. The nodes are then taken in
    planned start order (among those whose dependencies are placed), and a holder starts at
    the first time, not before the previous holder of its devices started, at which its shares
    fit beside those still held. Without slowdown and noise the plan (valid under sharing) is
    re-timed to itself.

    Examples
    --------
    Two ops of two streams each hold 600 of a level's shares: slowed down twice, the first runs
    [0, 20) and the second, planned at 10, waits for it (without the shares it would start at 10):

    >>> from planner.simulator import OpTiming, SimulationResult
    >>> sim = SimulationResult(20, {"a": OpTiming("d0", 0, 0, 10), "b": OpTiming("d0", 1, 10, 20)}, {}, {}, 0)
    >>> held = {("op", "a"): (("d0", (600,)),), ("op", "b"): (("d0", (600,)),)}
    >>> what_if(sim, [], parse_slowdown("d0=2", ["d0"], []), shares=held).ops["b"].start_cycle
    20
    >>> what_if(sim, [], parse_slowdown("d0=2", ["d0"], [])).ops["b"].start_cycle
    10
    """
    ops, transfers = simulation.ops, simulation.transfers
    dmas = getattr(simulation, "dmas", ()) if op_tensors is not None else ()
    end: dict[Any, int] = {}
    measured_ops: dict[str, MeasuredOp] = {}
    measured_tx: dict[int, MeasuredTransfer] = {}
    measured_dma: dict[int, MeasuredDma] = {}
    preds = _dependencies(simulation, op_edges)
    if dmas:
        _add_dmas(preds, simulation, op_tensors)

    def timing(node: Any) -> Any:
        kind, key = node
        return ops[key] if kind == "op" else transfers[key] if kind == "tx" else dmas[key]

    if shares:
        order: Iterable[Any] = _time_order(preds, {n: timing(n).start_cycle for n in preds})
        devices = _SharedDevices()
    else:
        order = TopologicalSorter(preds).static_order()
    for node in order:
        kind, key = node
        t = timing(node)
        ready = max((end[p] for p in preds[node]), default=0)
        start = max(t.start_cycle, ready)
        planned = t.end_cycle - t.start_cycle
        if kind == "op":
            cycles = slowdown.cycles(key, t.device, planned)
        elif kind == "tx":
            cycles = slowdown.cycles(f"{t.src_op}->{t.dst_op}#{t.id}", t.link, planned)
        else:
            cycles = slowdown.cycles(f"dma:{t.device}:{t.op}", t.device, planned)
        if shares and node in shares and cycles > 0:
            start = devices.place(shares[node], start, cycles)
        if kind == "op":  # recorded at the start the shares allow (a transfer's too)
            measured_ops[key] = MeasuredOp(t.device, t.stream, start, cycles, planned)
        elif kind == "tx":
            measured_tx[key] = MeasuredTransfer(t.src_op, t.dst_op, t.link, t.size_bytes, start, cycles, planned)
        elif kind == "dma":
            measured_dma[key] = MeasuredDma(t.device, t.op, start, cycles, planned)
        end[node] = start + cycles
    if len(end) != len(preds):  # (the unshared order raises this itself)
        raise CycleError("what-if replay: the dependencies form a cycle")
    ordered = {n: measured_ops[n] for n in sorted(measured_ops)}
    makespan = max((v for n, v in end.items() if n[0] != "dma"), default=0)
    return WhatIf(ordered, tuple(measured_tx[i] for i in sorted(measured_tx)), makespan,
                  tuple(measured_dma[k] for k in sorted(measured_dma)))
