"""The max-load reduction: spec → :class:`~solvers.placement.PlacementProblem`, and back.

``objective: max-load`` is the throughput objective of Tarnawski et al. (NeurIPS 2020);
:mod:`planner.max_load` describes the model and runs it. :func:`to_placement_problem` turns
the spec into the placement problem in timeline cycles: per op its cycles on the
accelerator kind and on the CPU kind (:func:`planner.reductions.scheduling.op_device_cycles`;
a ``task`` op without cycles for the accelerator kind, or pinned to the CPU kind, may not
use an accelerator), ``comm(u)`` = the transfer time over the spec's links of u's largest
out-edge (:func:`comm_cycles`: the slowest link when links differ; a control edge costs the
link latency), memory = the accelerators' main memory (a weight or graph input several ops
read held once per accelerator: ``shared_resident``), colour classes = colocation groups,
backward flags from op ``attrs: {backward: true}``. Its inverse, :class:`MaxLoadReduction`,
maps a placement back to device names (:meth:`MaxLoadReduction.device_of`).

Examples
--------
Two 30-cycle ops in a chain on two accelerators; the 10-byte output costs 10 cycles at 1 GB/s.

>>> from planner.spec import load_spec
>>> problem, red = to_placement_problem(load_spec(EXAMPLE))
>>> problem.acc_time, problem.comm_time, red.device_names
((30, 30), (10, 0), ('acc0', 'acc1'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.errors import InfeasibleError, UnsupportedError
from planner.reductions.scheduling import op_device_cycles, resident_bytes, shared_resident_tensors
from planner.spec import Spec
from solvers.placement import FORBIDDEN, PlacementProblem, PlacementSolution

__all__ = ["EXAMPLE", "MaxLoadReduction", "comm_cycles", "to_placement_problem"]

#: A max-load spec for examples: two chained 30-cycle tasks, a 10-byte tensor between them.
EXAMPLE: dict[str, Any] = {
    "version": 1, "name": "chain",
    "hardware": {"devices": [{"name": "acc", "profile": "generic", "count": 2}],
                 "topology": {"kind": "all-to-all", "bandwidth": "1 GB/s"}},
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": "a", "shape": [10], "dtype": "uint8"}],
        "ops": [{"name": "x", "type": "task", "outputs": ["a"], "cycles": {"acc": 30}},
                {"name": "y", "type": "task", "inputs": ["a"], "cycles": {"acc": 30}}]}}],
    "objective": "max-load", "solver": {"time_limit": "5 s", "workers": 1}}


@dataclass(frozen=True)
class MaxLoadReduction:
    """The inverse map of :func:`to_placement_problem`: placement indices back to names.

    ``device_names`` lists the accelerators (placement devices ``0..k-1``), then the CPUs.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> _, red = to_placement_problem(load_spec(EXAMPLE))
    >>> red.op_names, red.num_accelerators, red.cpu_kind
    (('m/x', 'm/y'), 2, None)
    """

    op_names: tuple[str, ...]
    device_names: tuple[str, ...]
    num_accelerators: int
    accelerator_kind: str | None
    cpu_kind: str | None
    contiguous: bool

    def device_of(self, solution: PlacementSolution) -> dict[str, str]:
        """Op name -> device instance name of a placement.

        Examples
        --------
        >>> r = MaxLoadReduction(("m/x", "m/y"), ("acc0", "cpu0"), 1, "acc", "cpu", False)
        >>> r.device_of(PlacementSolution((0, 1)))
        {'m/x': 'acc0', 'm/y': 'cpu0'}
        """
        return {op: self.device_names[d] for op, d in zip(self.op_names, solution.device_of)}


def comm_cycles(spec: Spec) -> dict[str, int]:
    """Per op: the transfer time of its largest out-edge over the slowest link (0: no out-edge)."""
    graph, hw = spec.graph, spec.hardware
    largest: dict[str, int] = {}
    for src, dst, _ in graph.op_edges():
        largest[src] = max(largest.get(src, 0), graph.edge_bytes(src, dst))
    if not hw.links:
        return {op: 0 for op in largest}
    return {op: max(link.transfer_cycles(b, hw.clock_hz) for link in hw.links) for op, b in largest.items()}


def to_placement_problem(spec: Spec, cycles: dict[tuple[str, str], int | None] | None = None
                         ) -> tuple[PlacementProblem, MaxLoadReduction]:
    """The spec's max-load problem in timeline cycles, and its inverse map.

    Nodes are the ops in the graph's topological order; devices the accelerator-kind
    instances, then the CPU-kind instances (see the module notes for every field).

    Raises
    ------
    UnsupportedError
        An op that cannot run on the CPU kind (the model needs a CPU time for every op).
    InfeasibleError
        An op that may run on no device (CPU-only with no CPUs).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> spec = load_spec({"version": 1,
    ...     "hardware": {"devices": [{"name": "acc", "profile": "generic"}, {"name": "cpu", "profile": "generic"}],
    ...                  "topology": {"kind": "bus", "bandwidth": "1 GB/s", "latency": 5}},
    ...     "models": [{"name": "m", "graph": {
    ...         "tensors": [{"name": "w", "shape": [64], "dtype": "uint8", "kind": "weight"},
    ...                     {"name": "a", "shape": [100], "dtype": "uint8"}],
    ...         "ops": [{"name": "x", "type": "task", "inputs": ["w"], "outputs": ["a"],
    ...                  "cycles": {"acc": 30, "cpu": 300}, "attrs": {"backward": True}},
    ...                 {"name": "y", "type": "task", "inputs": ["a"], "cycles": {"cpu": 70}}]}}],
    ...     "objective": "max-load"})
    >>> p, red = to_placement_problem(spec)
    >>> p.acc_time, p.cpu_time, p.comm_time, p.size_bytes, p.is_backward
    ((30, -1), (300, 70), (105, 0), (64, 0), (True, False))
    >>> red.device_names, red.num_accelerators, p.memory_bytes == 1 << 40
    (('acc0', 'cpu0'), 1, True)
    """
    opts = spec.max_load
    if opts is None:
        raise ValueError(f"the spec's objective is {spec.objective}, not max-load")
    graph, hw = spec.graph, spec.hardware
    cycles = op_device_cycles(graph, hw) if cycles is None else cycles
    ops = graph.topological_order()
    index = {n: i for i, n in enumerate(ops)}
    accs = [d for d in hw.devices if d.kind == opts.accelerator_kind]
    cpus = [d for d in hw.devices if d.kind == opts.cpu_kind]
    cpu_names = {d.name for d in cpus}
    acc_time, cpu_time = [], []
    for name in ops:
        allowed = spec.allowed_devices.get(name)
        pinned_to_cpu = allowed is not None and set(allowed) <= cpu_names
        a = cycles[name, accs[0].kind] if accs else None
        acc_time.append(FORBIDDEN if a is None or pinned_to_cpu else a)
        if cpus:
            c = cycles[name, cpus[0].kind]
            if c is None:
                raise UnsupportedError(
                    f"op {name!r} gives no cycles for the CPU kind {opts.cpu_kind!r}; the max-load model "
                    f"needs every op to be able to run on a CPU (give it cycles: {{{opts.cpu_kind}: ...}})")
            cpu_time.append(c)
        else:
            cpu_time.append(0)
            if acc_time[-1] == FORBIDDEN:
                raise InfeasibleError(f"op {name!r} can run on no device: it gives no cycles for the "
                                      f"accelerator kind {opts.accelerator_kind!r}, and there is no CPU kind")
    comm = comm_cycles(spec)
    edges = sorted({(index[u], index[v]) for u, v, _ in graph.op_edges()})
    problem = PlacementProblem(
        acc_time=tuple(acc_time), cpu_time=tuple(cpu_time),
        comm_time=tuple(comm.get(n, 0) for n in ops), edges=tuple(edges),
        num_accelerators=len(accs), num_cpus=len(cpus),
        size_bytes=tuple(resident_bytes(graph, n) for n in ops),
        memory_bytes=accs[0].memory_capacity_bytes if accs else 0,
        color_classes=tuple(tuple(sorted(index[n] for n in g)) for g in spec.colocation_groups),
        is_backward=tuple(bool(graph.ops[n].attrs.get("backward", False)) for n in ops),
        contiguous=opts.contiguous, node_names=tuple(ops),
        shared_resident=shared_resident_tensors(graph, index))  # held once per accelerator
    reduction = MaxLoadReduction(tuple(ops), tuple(d.name for d in (*accs, *cpus)), len(accs),
                                 opts.accelerator_kind, opts.cpu_kind, opts.contiguous)
    return problem, reduction
