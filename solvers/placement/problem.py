"""Max-load partitioning (the throughput objective of Tarnawski et al., NeurIPS 2020).

Glossary
--------
node        a graph node, index ``0..num_nodes-1``, in a topological order of ``edges``.
device      accelerators ``0..k-1``, then CPUs ``k..k+c-1`` (all accelerators identical,
            all CPUs identical).
load        accelerator: its nodes' ``acc_time`` plus communication; CPU: its nodes'
            ``cpu_time`` (data already sits in CPU memory, so CPUs pay no communication).
comm        every node u with an out-edge to another device adds ``comm_time[u]`` once to
            u's device (if an accelerator) and once to each distinct other accelerator that
            consumes u (the "calls" model: communication is not overlapped with compute).
max-load    the largest load; a pipelined stream of inputs runs at one per max-load.
contiguous  every device's node set is convex in the DAG of forward nodes: no path leaves
            the set and comes back (the restriction of the paper's DP).

Semantics (what :func:`solvers.placement.validate.validate_placement` checks): each node
on one device; ``acc_time[i] == -1`` forbids accelerators; accelerator memory: the sum of
``size_bytes`` per accelerator, a tensor several nodes read (``shared_resident``) once per
accelerator running a reader (:meth:`PlacementProblem.held_bytes`), ``<= memory_bytes``
(0 = unbounded); colour classes on one device; with ``contiguous``, convexity on forward nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PlacementProblem", "PlacementSolution", "FORBIDDEN"]

FORBIDDEN = -1


@dataclass(frozen=True, slots=True)
class PlacementProblem:
    """Nodes with per-device-type times, sizes and output costs; k accelerators, c CPUs.

    Times are integers in one unit of the caller's choice (the dnn benchmark uses ns).

    Examples
    --------
    >>> p = PlacementProblem(acc_time=(2, 3, 1), cpu_time=(20, 30, 10), comm_time=(1, 1, 0),
    ...                      edges=((0, 1), (1, 2)), num_accelerators=2, num_cpus=1)
    >>> p.num_nodes, p.num_devices, p.is_accelerator(1), p.is_accelerator(2)
    (3, 3, True, False)
    >>> p.groups()
    ((0,), (1,), (2,))
    """

    acc_time: tuple[int, ...]
    cpu_time: tuple[int, ...]
    comm_time: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    num_accelerators: int
    num_cpus: int
    size_bytes: tuple[int, ...] = ()  # empty = all zero
    memory_bytes: int = 0  # per accelerator; 0 = unbounded
    color_classes: tuple[tuple[int, ...], ...] = ()
    is_backward: tuple[bool, ...] = ()  # empty = all forward
    contiguous: bool = False
    node_names: tuple[str, ...] = field(default=(), compare=False)
    # Tensors several nodes read (a shared weight or graph input), each as (bytes, readers):
    # every reader's size_bytes counts it in full, but an accelerator holds it once, as
    # lowering allocates it. Empty = none (then memory is exactly the sum of size_bytes).
    shared_resident: tuple[tuple[int, tuple[int, ...]], ...] = ()

    def __post_init__(self) -> None:
        for name in ("acc_time", "cpu_time", "comm_time", "size_bytes"):
            object.__setattr__(self, name, tuple(int(x) for x in getattr(self, name)))
        object.__setattr__(self, "edges", tuple((int(u), int(v)) for u, v in self.edges))
        object.__setattr__(self, "color_classes", tuple(tuple(int(i) for i in g) for g in self.color_classes))
        object.__setattr__(self, "is_backward", tuple(bool(b) for b in self.is_backward))
        n = len(self.acc_time)
        if len(self.cpu_time) != n or len(self.comm_time) != n:
            raise ValueError("acc_time, cpu_time and comm_time need one entry per node")
        for name, arr in (("size_bytes", self.size_bytes), ("is_backward", self.is_backward)):
            if arr and len(arr) != n:
                raise ValueError(f"{name} has {len(arr)} entries, expected {n}")
        if self.num_accelerators < 0 or self.num_cpus < 0 or self.num_devices == 0:
            raise ValueError("need at least one device (num_accelerators + num_cpus >= 1)")
        if any(x < FORBIDDEN for x in self.acc_time) or any(x < 0 for x in self.cpu_time):
            raise ValueError("times must be >= 0 (acc_time may be -1: CPU only)")
        if any(x < 0 for x in self.comm_time) or any(x < 0 for x in self.size_bytes):
            raise ValueError("comm_time and size_bytes must be >= 0")
        if self.memory_bytes < 0:
            raise ValueError("memory_bytes must be >= 0")
        for u, v in self.edges:
            if not (0 <= u < n and 0 <= v < n) or u == v:
                raise ValueError(f"edge ({u}, {v}) names an unknown node or is a self-loop")
        seen: set[int] = set()
        for g in self.color_classes:
            for i in g:
                if not 0 <= i < n:
                    raise ValueError(f"colour class {g} names an unknown node")
                if i in seen:
                    raise ValueError(f"node {i} is in two colour classes")
                seen.add(i)
        object.__setattr__(self, "shared_resident", tuple(
            (int(b), tuple(sorted(int(i) for i in readers))) for b, readers in self.shared_resident))
        for b, readers in self.shared_resident:
            if b < 0 or len(set(readers)) < 2 or any(not 0 <= i < n for i in readers):
                raise ValueError(f"shared tensor ({b}, {readers}) needs bytes >= 0 and two or more "
                                 "distinct known readers")
        reads: dict[int, int] = {}
        for b, readers in self.shared_resident:
            for i in readers:
                reads[i] = reads.get(i, 0) + b
        for i, b in sorted(reads.items()):
            if self.size(i) < b:
                raise ValueError(f"node {i}'s size_bytes {self.size(i)} must include the {b} bytes of "
                                 "shared tensors it reads")
        if self.num_cpus == 0:
            bad = [i for i in range(n) if self.acc_time[i] == FORBIDDEN]
            if bad:
                raise ValueError(f"node {bad[0]} may run only on a CPU, and there is none")

    @property
    def num_nodes(self) -> int:
        return len(self.acc_time)

    @property
    def num_devices(self) -> int:
        return self.num_accelerators + self.num_cpus

    def is_accelerator(self, device: int) -> bool:
        return device < self.num_accelerators

    def size(self, i: int) -> int:
        return self.size_bytes[i] if self.size_bytes else 0

    def held_bytes(self, nodes) -> int:
        """The bytes one accelerator running ``nodes`` holds: their ``size_bytes``, a shared
        tensor once however many of its readers are among them.

        Examples
        --------
        Nodes 0 and 1 read one 5-byte weight (and hold 1 byte of their own each):

        >>> p = PlacementProblem((1, 1, 1), (1, 1, 1), (0, 0, 0), (), 2, 0, size_bytes=(6, 6, 2),
        ...                      shared_resident=((5, (0, 1)),))
        >>> p.held_bytes((0, 1)), p.held_bytes((0, 2)), p.held_bytes((0, 1, 2))
        (7, 8, 9)
        """
        nodes = set(nodes)
        total = sum(self.size(i) for i in nodes)
        for b, readers in self.shared_resident:
            here = sum(1 for i in readers if i in nodes)
            total -= b * max(0, here - 1)
        return total

    def backward(self, i: int) -> bool:
        return self.is_backward[i] if self.is_backward else False

    def time_on(self, i: int, device: int) -> int:
        return self.acc_time[i] if device < self.num_accelerators else self.cpu_time[i]

    def groups(self) -> tuple[tuple[int, ...], ...]:
        """Nodes that must share a device: colour classes and singletons, by smallest member."""
        grouped = {i for g in self.color_classes for i in g}
        out = [tuple(sorted(g)) for g in self.color_classes]
        out += [(i,) for i in range(self.num_nodes) if i not in grouped]
        return tuple(sorted(out))


@dataclass(frozen=True, slots=True)
class PlacementSolution:
    """A device per node (accelerators ``0..k-1``, then CPUs).

    Examples
    --------
    >>> PlacementSolution((0, 0, 2)).device_of
    (0, 0, 2)
    """

    device_of: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_of", tuple(int(d) for d in self.device_of))
