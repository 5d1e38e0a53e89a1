"""Joint placement and scheduling: problem and solution types.

Glossary
--------
op        a node of the dataflow graph, index ``0..num_ops-1``.
device    a processor instance, index ``0..num_devices-1``; it has ``device_streams[d]``
          identical execution lanes (streams) that each run one op at a time.
edge      ``(src_op, dst_op, bytes)``: ``dst`` may start only after ``src`` ends; when the
          two ops sit on different devices the bytes cross a link as a transfer.
link      a transfer engine between devices, index ``0..num_links-1``; it carries one
          transfer at a time. ``link_of[a][b]`` is the link used from device a to b.
cycle     the plan's one time base (reference-clock cycles); every duration is in it.

Semantics (what a feasible solution must satisfy; :mod:`solvers.scheduling.validate`
checks exactly this)
-------------------------------------------------------------------------------
* every op runs on one device d with ``durations_cycles[op][d] >= 0`` (``-1`` = forbidden),
  on one stream ``0 <= s < device_streams[d]``, from ``start`` to ``start + duration``;
* ops on the same (device, stream) do not overlap;
* edge (u, v) with both on one device: ``start[v] >= end[u]``;
* edge (u, v) across devices a != b needs ``link_of[a][b] >= 0`` (-1: a and b cannot
  exchange data, so u and v may not be split that way) and exactly one transfer on ``link_of[a][b]`` with
  duration ``transfer_cycles[e][link]``, ``start >= end[u]`` and ``start[v] >= end``;
  transfers on one link do not overlap (a transfer of zero cycles occupies no link time,
  so zero-byte control edges over a zero-latency link never serialize); an edge within
  one device has no transfer;
* ops of one colocation group share a device;
* memory (when ``device_memory_bytes[d] > 0``): at every cycle t, on device d,
  the resident bytes of d (``sum(op_resident_bytes[i] for ops i on d)``, weights stay for
  the whole run, less ``(k - 1) * bytes`` for each ``(bytes, readers)`` of
  ``shared_resident`` with k >= 1 readers on d: a resident tensor several ops read is held
  once per device, :meth:`SchedulingProblem.device_resident_bytes`)
  + the bytes of every live activation buffer on d must be ``<= device_memory_bytes[d]``.
  Op u's output buffer (``op_output_bytes[u]``) lives on u's device over
  ``[start[u], max(end[u], end of every consumer of u on that device, end of every
  transfer out of u))``; the received copy of edge e=(u, v) (the edge's bytes) lives on
  v's device over ``[transfer start, end[v])``.
* objective LATENCY: makespan = max end over ops. THROUGHPUT: max load, where the load
  of a device is the sum of its ops' durations and the load of a link is the sum of its
  transfers' durations (a pipelined stream of inputs is limited by the busiest resource).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "merged_colocation_groups",
    "Objective",
    "SchedulingProblem",
    "ScheduledTransfer",
    "SchedulingSolution",
]

FORBIDDEN = -1


class Objective(enum.Enum):
    """What the scheduler minimizes.

    Examples
    --------
    >>> Objective("latency")
    <Objective.LATENCY: 'latency'>
    """

    LATENCY = "latency"
    THROUGHPUT = "throughput"


def _as_tuple2(rows) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(x) for x in row) for row in rows)


@dataclass(frozen=True, slots=True)
class SchedulingProblem:
    """Ops, devices, links and the data between them, as dense integer arrays.

    Examples
    --------
    Two ops in a chain on two identical devices joined by one link:

    >>> p = SchedulingProblem(
    ...     durations_cycles=((4, 4), (3, 3)),
    ...     edges=((0, 1, 64),),
    ...     device_streams=(1, 1),
    ...     link_of=((-1, 0), (0, -1)),
    ...     transfer_cycles=((5,),),
    ... )
    >>> p.num_ops, p.num_devices, p.num_links
    (2, 2, 1)
    >>> p.allowed_devices(0)
    (0, 1)
    """

    durations_cycles: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int, int], ...]
    device_streams: tuple[int, ...]
    link_of: tuple[tuple[int, ...], ...]
    transfer_cycles: tuple[tuple[int, ...], ...]
    objective: Objective = Objective.LATENCY
    device_memory_bytes: tuple[int, ...] = ()  # empty or 0 per device = not enforced
    op_resident_bytes: tuple[int, ...] = ()  # empty = all zero
    op_output_bytes: tuple[int, ...] = ()  # empty = all zero
    colocation_groups: tuple[tuple[int, ...], ...] = ()
    # Devices with equal class ids are interchangeable (same durations, streams, memory,
    # links): solvers may break symmetry among them. Empty = all distinct.
    device_class: tuple[int, ...] = ()
    op_names: tuple[str, ...] = field(default=(), compare=False)  # for messages only
    # Resident tensors read by several ops, each as (bytes, readers): every reader's
    # op_resident_bytes counts the tensor in full, but a device holds it once. Empty = none.
    shared_resident: tuple[tuple[int, tuple[int, ...]], ...] = ()  # last: positional callers predate it

    def __post_init__(self) -> None:
        object.__setattr__(self, "durations_cycles", _as_tuple2(self.durations_cycles))
        object.__setattr__(self, "edges", tuple(tuple(int(x) for x in e) for e in self.edges))
        object.__setattr__(self, "link_of", _as_tuple2(self.link_of))
        object.__setattr__(self, "transfer_cycles", _as_tuple2(self.transfer_cycles))
        n, d = self.num_ops, self.num_devices
        if d == 0:
            raise ValueError("at least one device is required")
        if any(s < 1 for s in self.device_streams):
            raise ValueError("every device needs at least one stream")
        for i, row in enumerate(self.durations_cycles):
            if len(row) != d:
                raise ValueError(f"durations_cycles[{i}] has {len(row)} entries, expected {d}")
            if all(x == FORBIDDEN for x in row):
                raise ValueError(f"op {self.op_name(i)} may run on no device")
            if any(x < FORBIDDEN for x in row):
                raise ValueError(f"op {self.op_name(i)} has a negative duration")
        if len(self.link_of) != d or any(len(r) != d for r in self.link_of):
            raise ValueError(f"link_of must be {d}x{d}")
        nl = self.num_links
        for e, (u, v, b) in enumerate(self.edges):
            if not (0 <= u < n and 0 <= v < n) or u == v:
                raise ValueError(f"edge {e} ({u}, {v}) names an unknown op or a self-loop")
            if b < 0:
                raise ValueError(f"edge {e} has negative bytes")
        if len(self.transfer_cycles) != len(self.edges):
            raise ValueError("transfer_cycles needs one row per edge")
        if any(len(r) != nl or any(x < 0 for x in r) for r in self.transfer_cycles):
            raise ValueError(f"every transfer_cycles row needs {nl} non-negative entries")
        for name, arr, size in (
            ("device_memory_bytes", self.device_memory_bytes, d),
            ("op_resident_bytes", self.op_resident_bytes, n),
            ("op_output_bytes", self.op_output_bytes, n),
            ("device_class", self.device_class, d),
        ):
            if arr and len(arr) != size:
                raise ValueError(f"{name} has {len(arr)} entries, expected {size}")
            if any(x < 0 for x in arr):
                raise ValueError(f"{name} has a negative entry")
        for g in self.colocation_groups:
            if any(not 0 <= i < n for i in g):
                raise ValueError(f"colocation group {g} names an unknown op")
        object.__setattr__(self, "shared_resident", tuple(
            (int(b), tuple(sorted(int(i) for i in readers))) for b, readers in self.shared_resident))
        for b, readers in self.shared_resident:
            if b < 0 or len(set(readers)) < 2 or any(not 0 <= i < n for i in readers):
                raise ValueError(f"shared resident tensor ({b}, {readers}) needs bytes >= 0 and two "
                                 "or more distinct known readers")
            if any(self.resident_bytes(i) < b for i in readers):
                raise ValueError(f"shared resident tensor ({b}, {readers}): a reader's op_resident_bytes "
                                 "must include it")

    def op_name(self, i: int) -> str:
        """Op ``i``'s name for messages: its entry in ``op_names``, else its index.

        Examples
        --------
        >>> p = SchedulingProblem(((1,), (1,)), (), (1,), ((-1,),), (), op_names=("load",))
        >>> p.op_name(0), p.op_name(1)
        ('load', '1')
        """
        return self.op_names[i] if i < len(self.op_names) else str(i)

    @property
    def num_ops(self) -> int:
        return len(self.durations_cycles)

    @property
    def num_devices(self) -> int:
        return len(self.device_streams)

    @property
    def num_links(self) -> int:
        return 1 + max((x for row in self.link_of for x in row), default=-1)

    def allowed_devices(self, op: int) -> tuple[int, ...]:
        return tuple(d for d, c in enumerate(self.durations_cycles[op]) if c != FORBIDDEN)

    def memory_bytes(self, device: int) -> int:
        return self.device_memory_bytes[device] if self.device_memory_bytes else 0

    def resident_bytes(self, op: int) -> int:
        return self.op_resident_bytes[op] if self.op_resident_bytes else 0

    def output_bytes(self, op: int) -> int:
        return self.op_output_bytes[op] if self.op_output_bytes else 0

    def device_resident_bytes(self, device: int, op_device: Sequence[int]) -> int:
        """The resident bytes ``device`` holds when op i runs on ``op_device[i]``: each op's
        ``op_resident_bytes``, a shared resident tensor once however many readers are there.

        Examples
        --------
        Ops 0 and 1 read one 5-byte input (each also 1 byte of its own weights):

        >>> p = SchedulingProblem(((1, 1), (1, 1)), (), (1, 1), ((-1, 0), (0, -1)), (),
        ...                       op_resident_bytes=(6, 6), shared_resident=((5, (0, 1)),))
        >>> p.device_resident_bytes(0, (0, 0)), p.device_resident_bytes(0, (0, 1))
        (7, 6)
        """
        total = sum(self.resident_bytes(i) for i, d in enumerate(op_device) if d == device)
        for b, readers in self.shared_resident:
            here = sum(1 for i in readers if op_device[i] == device)
            total -= b * max(0, here - 1)
        return total

    def resident_floor_bytes(self, op: int) -> int:
        """``op_resident_bytes[op]`` with each shared resident tensor it reads counted as its
        share ``bytes // k`` (k readers). A device's readers' shares never exceed the tensor's
        bytes, so the sum over the ops on a device is at most what the device holds: bounds
        that count resident bytes per op use these (a relaxation, so they stay sound).

        Examples
        --------
        >>> p = SchedulingProblem(((1,), (1,)), (), (1,), ((-1,),), (), op_resident_bytes=(6, 5),
        ...                       shared_resident=((5, (0, 1)),))
        >>> p.resident_floor_bytes(0), p.resident_floor_bytes(1), p.resident_bytes(0)
        (3, 2, 6)
        """
        own = self.resident_bytes(op)
        for b, readers in self.shared_resident:
            if op in readers:
                own -= b - b // len(readers)
        return own

    def total_resident_floor_bytes(self) -> int:
        """The sum of :meth:`resident_floor_bytes` over every op: the weights the whole problem
        must hold somewhere (a device with less memory cannot hold them all).

        Examples
        --------
        >>> p = SchedulingProblem(((1,), (1,)), (), (1,), ((-1,),), (), op_resident_bytes=(6, 5),
        ...                       shared_resident=((5, (0, 1)),))
        >>> p.total_resident_floor_bytes()
        5
        """
        return sum(self.resident_floor_bytes(i) for i in range(self.num_ops))


@dataclass(frozen=True, slots=True)
class ScheduledTransfer:
    """The bytes of one cross-device edge moving over one link."""

    edge: int
    link: int
    start_cycle: int
    duration_cycles: int

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles


@dataclass(frozen=True, slots=True)
class SchedulingSolution:
    """A device, stream and start cycle per op, and the transfers between devices.

    Examples
    --------
    >>> s = SchedulingSolution(op_device=(0, 0), op_stream=(0, 0), op_start=(0, 4),
    ...                        op_duration=(4, 3), transfers=())
    >>> s.makespan_cycles
    7
    """

    op_device: tuple[int, ...]
    op_stream: tuple[int, ...]
    op_start: tuple[int, ...]
    op_duration: tuple[int, ...]
    transfers: tuple[ScheduledTransfer, ...]

    def op_end(self, op: int) -> int:
        return self.op_start[op] + self.op_duration[op]

    @property
    def makespan_cycles(self) -> int:
        ends = [s + d for s, d in zip(self.op_start, self.op_duration)]
        ends += [t.end_cycle for t in self.transfers]
        return max(ends, default=0)

    def device_loads(self, num_devices: int) -> tuple[int, ...]:
        loads = [0] * num_devices
        for d, dur in zip(self.op_device, self.op_duration):
            loads[d] += dur
        return tuple(loads)

    def link_loads(self, num_links: int) -> tuple[int, ...]:
        loads = [0] * num_links
        for t in self.transfers:
            loads[t.link] += t.duration_cycles
        return tuple(loads)


def merged_colocation_groups(problem: SchedulingProblem) -> list[tuple[int, ...]]:
    """Colocation groups with shared ops merged (union-find), members sorted.

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 4, (), (1,), ((-1,),), (), colocation_groups=((0, 1), (1, 2)))
    >>> merged_colocation_groups(p)
    [(0, 1, 2)]
    """
    parent = list(range(problem.num_ops))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for g in problem.colocation_groups:
        for a, b in zip(g, g[1:]):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    comps: dict[int, list[int]] = {}
    for g in problem.colocation_groups:
        for i in g:
            comps.setdefault(find(i), [])
    for i in range(problem.num_ops):
        if find(i) in comps:
            comps[find(i)].append(i)
    return [tuple(m) for _, m in sorted(comps.items()) if len(m) > 1]
