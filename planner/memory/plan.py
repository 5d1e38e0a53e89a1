"""The memory plan of a schedule: where every buffer lives, when, at which address, and the DMAs.

This is the contract between the memory planner (:mod:`planner.memory`), lowering
(:mod:`planner.lowering`) and the report. Everything is in the user's names and on the
plan's timeline (reference-clock cycles). ``docs/memory.md`` is the reference.

Op instances
------------
An op of a split group with factor k runs k times; instance ``p`` is named ``"<op>#<p>"``
(``"fc#0"``, ``"fc#1"``...). Every other op's instance name is the op name. The schedule
(:class:`~planner.plan.Plan`) of a memory-planned device lists instances, not ops.

Buffer names
------------
``x``                 the whole tensor in the device's main (slow) level
``x#p``               portion p of a split tensor, a *view* inside ``x`` in the slow level
``x@<level>.<n>``     the n-th fast-level copy of ``x`` (n counts from 0 in time order)
``x#p@<level>.<n>``   the n-th fast copy of portion p
``<label>@<src>-><op>`` a received copy (cross-device transfer), in the slow level
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["MemoryBuffer", "MemoryTransfer", "OpAccess", "DeviceMemoryPlan", "MemoryPlan"]


@dataclass(frozen=True, slots=True)
class MemoryBuffer:
    """One allocation: ``size_bytes`` at ``address`` of ``level`` over ``[start_cycle, end_cycle)``.

    A view (``view_of`` set) occupies no capacity: it names a sub-range of a live
    allocation of the same level (a slow portion of a split tensor).

    Examples
    --------
    >>> MemoryBuffer("x@vmem.0", "x", -1, "vmem", 0, 64, 10, 20).end_cycle
    20
    """

    name: str
    tensor: str
    portion: int  # -1: the whole tensor
    level: str
    address: int
    size_bytes: int
    start_cycle: int
    end_cycle: int
    preloaded: bool = False  # filled by the host before the run (weights, graph inputs)
    view_of: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tensor": self.tensor, "portion": self.portion, "level": self.level,
                "address": self.address, "size_bytes": self.size_bytes, "start_cycle": self.start_cycle,
                "end_cycle": self.end_cycle, "preloaded": self.preloaded, "view_of": self.view_of}


@dataclass(frozen=True, slots=True)
class MemoryTransfer:
    """A DMA between levels on the device's DMA engine (one at a time, in start order).

    It starts at or after ``trigger_op`` ends (``""``: the program start) and
    ``release_op`` starts at or after it ends (``""``: before the device's program ends).

    Examples
    --------
    >>> t = MemoryTransfer("prefetch", "x", -1, "x", "x@vmem.0", 64, "a", "b", 100, 30)
    >>> t.end_cycle
    130
    """

    kind: str  # "prefetch" (slow -> fast) or "evict" (fast -> slow)
    tensor: str
    portion: int
    src_buffer: str
    dst_buffer: str
    size_bytes: int
    trigger_op: str
    release_op: str
    start_cycle: int
    duration_cycles: int

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tensor": self.tensor, "portion": self.portion,
                "src_buffer": self.src_buffer, "dst_buffer": self.dst_buffer, "size_bytes": self.size_bytes,
                "trigger_op": self.trigger_op, "release_op": self.release_op,
                "start_cycle": self.start_cycle, "end_cycle": self.end_cycle}


@dataclass(frozen=True, slots=True)
class OpAccess:
    """What one op instance reads and writes: per graph input/output (in the op's order),
    the buffer names holding it (several = portions, concatenated along dimension 0),
    and the bytes it moves in the fast and in the slow level (its roofline). A plan over
    more than two levels (issue 14) also gives ``level_bytes``: ``(level, bytes)`` for every
    level of the device, fastest first (the instruction's level-bytes row); empty otherwise.

    Examples
    --------
    >>> a = OpAccess("fc#1", "fc", 1, 2, (("x#1@vmem.0",), ("w",)), (("y#1@vmem.0",),), 96, 64)
    >>> a.fast_bytes + a.slow_bytes
    160
    """

    instance: str
    op: str
    portion: int  # -1: not split
    factor: int  # 1: not split
    inputs: tuple[tuple[str, ...], ...]
    outputs: tuple[tuple[str, ...], ...]
    fast_bytes: int
    slow_bytes: int
    level_bytes: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {"instance": self.instance, "op": self.op, "portion": self.portion, "factor": self.factor,
               "inputs": [list(x) for x in self.inputs], "outputs": [list(x) for x in self.outputs],
               "fast_bytes": self.fast_bytes, "slow_bytes": self.slow_bytes}
        if self.level_bytes:  # two-level plans keep their plan.json bytes
            out["level_bytes"] = {name: b for name, b in self.level_bytes}
        return out


@dataclass(frozen=True)
class DeviceMemoryPlan:
    """One device's memory plan: every buffer (all levels, weights and received copies
    included), every DMA, and every op instance's accesses, in execution order.

    ``split_factors`` maps a split group's label (its first and last op, ``"a..b"``) to
    its factor. ``stats`` holds the figures the report shows (status, objective, bound,
    gap of the level assignment; per-level peaks and lower bounds; baselines).
    """

    device: str
    fast_level: str
    slow_level: str
    order: tuple[str, ...]  # op instances in execution order (start cycle; then the merged order)
    accesses: Mapping[str, OpAccess]  # by instance name
    buffers: tuple[MemoryBuffer, ...]
    transfers: tuple[MemoryTransfer, ...]
    split_factors: Mapping[str, int] = field(default_factory=dict)
    stats: Mapping[str, Any] = field(default_factory=dict)
    # Several streams: (waiter, waited) memory-order waits, each an op instance or "dma:<index
    # in transfers>": the waiter starts after the waited ends (docs/memory.md, "Several compute
    # streams"); lowering enforces them with SIGNAL/WAIT. Empty with one stream.
    memory_waits: tuple[tuple[str, str], ...] = ()

    def buffer(self, name: str) -> MemoryBuffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "fast_level": self.fast_level, "slow_level": self.slow_level,
                "order": list(self.order), "accesses": [self.accesses[i].to_dict() for i in self.order],
                "buffers": [b.to_dict() for b in self.buffers],
                "transfers": [t.to_dict() for t in self.transfers],
                "split_factors": dict(sorted(self.split_factors.items())), "stats": dict(self.stats)}


@dataclass(frozen=True)
class MemoryPlan:
    """Device name -> its memory plan (devices without one keep the main-level lowering).

    Examples
    --------
    >>> MemoryPlan({}).to_dict()
    {'devices': {}}
    """

    devices: Mapping[str, DeviceMemoryPlan]

    def to_dict(self) -> dict[str, Any]:
        return {"devices": {name: self.devices[name].to_dict() for name in sorted(self.devices)}}
