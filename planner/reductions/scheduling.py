"""The scheduling reduction (latency and throughput): spec → :class:`~solvers.scheduling.SchedulingProblem`, and back.

Like cvxpy's reductions, :func:`to_problem` turns the user's world (a resolved
:class:`~planner.spec.Spec`: names, units, pins) into the solver's (integer indices and
timeline cycles) and returns the :class:`Reduction` it needs to invert the result;
:func:`from_solution` maps a solver result back to a :class:`~planner.plan.Plan` in the
user's names. The prechecks that need no solver, and the explanation when the solver proves
infeasibility, are in the user's names too, so they live here beside the reduction.

Examples
--------
>>> from planner.spec import load_spec
>>> problem, reduction = to_problem(load_spec("specs/taskgraph.yaml"))
>>> problem.num_ops == len(reduction.op_names), reduction.objective_kind
(True, 'latency')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.errors import InfeasibleError
from planner.graph.ir import Graph
from planner.hardware import Hardware
from planner.isa.cost import cycles_table
from planner.plan import PlacedOp, PlacedTransfer, Plan
from planner.report.markdown import format_bytes
from planner.spec import Spec
from solvers.core import SolveResult
from solvers.scheduling import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.problem import FORBIDDEN

__all__ = ["Reduction", "op_device_cycles", "resident_bytes", "shared_resident_tensors", "to_problem", "from_solution", "explain_infeasible"]


@dataclass(frozen=True)
class Reduction:
    """The inverse map of :func:`to_problem`: integer indices back to the user's names."""

    op_names: tuple[str, ...]
    device_names: tuple[str, ...]
    link_names: tuple[str, ...]
    edges: tuple[tuple[str, str, tuple[str, ...], int], ...]  # (src, dst, tensors, bytes)
    clock_hz: int
    objective_kind: str


def op_device_cycles(graph: Graph, hardware: Hardware) -> dict[tuple[str, str], int | None]:
    """Timeline cycles of every op on every device kind (None where it cannot run):
    :func:`planner.isa.cost.cycles_table`."""
    return cycles_table(graph, hardware)


def _device_classes(spec: Spec, hardware: Hardware) -> tuple[int, ...]:
    """Interchangeable devices share a class id, so the solver may break their symmetry.

    Two instances are interchangeable when they have the same kind, streams and memory,
    no pin names either one individually, and the links are uniform (every pair joined
    by links of one bandwidth and latency, or one bus for all).
    """
    devices = hardware.devices
    names = [d.name for d in devices]
    pinned_instances = {dev for devs in spec.allowed_devices.values() for dev in devs
                        if len(devs) < sum(1 for d in devices if d.kind == hardware.device(dev).kind)}
    links = hardware.links
    uniform = bool(links) and len({(l.bandwidth_bytes_per_s, l.latency_cycles) for l in links}) == 1 and all(
        hardware.link_between(a, b) is not None for i, a in enumerate(names) for b in names[i + 1:])
    if len(devices) == 1:
        uniform = True
    classes: dict[tuple, int] = {}
    out = []
    for i, d in enumerate(devices):
        if not uniform or d.name in pinned_instances:
            key: tuple = ("own", i)
        else:
            key = (d.kind, d.streams, d.memory_capacity_bytes)
        out.append(classes.setdefault(key, len(classes)))
    return tuple(out)


def to_problem(spec: Spec, cycles: dict[tuple[str, str], int | None] | None = None) -> tuple[SchedulingProblem, Reduction]:
    """Turn a resolved spec into a scheduling problem and its inverse map.

    Raises
    ------
    InfeasibleError
        When a constraint can be seen to fail before solving (an op that may run on no
        device, weights that fit no allowed device, a colocation group split by pins).
    """
    graph: Graph = spec.graph
    hw: Hardware = spec.hardware
    if cycles is None:  # the spec loader costed every op already (and checked the magnitudes)
        cycles = spec.device_cycles or op_device_cycles(graph, hw)
    ops = graph.topological_order()
    op_index = {n: i for i, n in enumerate(ops)}
    devices = hw.devices

    durations = []
    for name in ops:
        allowed = spec.allowed_devices.get(name)
        row = []
        for dev in devices:
            c = cycles[name, dev.kind]
            ok = c is not None and (allowed is None or dev.name in allowed)
            row.append(c if ok else FORBIDDEN)
        if all(x == FORBIDDEN for x in row):
            raise InfeasibleError(_no_device_message(spec, name, cycles))
        durations.append(tuple(row))

    edges = []
    edge_meta = []
    for src, dst, tensors in graph.op_edges():
        size = graph.edge_bytes(src, dst)
        edges.append((op_index[src], op_index[dst], size))
        edge_meta.append((src, dst, tuple(tensors), size))
    link_index = {l.name: i for i, l in enumerate(hw.links)}
    link_of = [[FORBIDDEN] * len(devices) for _ in devices]
    for a, da in enumerate(devices):
        for b, db in enumerate(devices):
            if a != b:
                link = hw.link_between(da.name, db.name)
                link_of[a][b] = link_index[link.name] if link else FORBIDDEN
    # A control dependency between devices is a zero-byte message: it costs the link's
    # latency, exactly as the ISA charges the SEND/RECV the lowering emits for it.
    transfer = [tuple(l.transfer_cycles(size, hw.clock_hz) for l in hw.links) for (_, _, size) in edges]

    groups = tuple(tuple(op_index[n] for n in g) for g in spec.colocation_groups)
    problem = SchedulingProblem(
        durations_cycles=tuple(durations),
        edges=tuple(edges),
        device_streams=tuple(d.streams for d in devices),
        link_of=tuple(tuple(r) for r in link_of),
        transfer_cycles=tuple(transfer),
        objective=Objective(spec.objective),
        device_memory_bytes=tuple(d.memory_capacity_bytes for d in devices),
        op_resident_bytes=tuple(resident_bytes(graph, n) for n in ops),
        op_output_bytes=tuple(graph.output_bytes(n) for n in ops),
        colocation_groups=groups,
        device_class=_device_classes(spec, hw),
        op_names=ops,
        shared_resident=shared_resident_tensors(graph, op_index),
    )
    _precheck_memory(spec, problem)
    reduction = Reduction(ops, tuple(d.name for d in devices), tuple(l.name for l in hw.links),
                          tuple(edge_meta), hw.clock_hz, spec.objective)
    return problem, reduction


def resident_bytes(graph: Graph, op: str) -> int:
    """Weights and graph inputs an op reads: lowering keeps both in memory from cycle 0
    (one buffer per tensor, however often the op names it)."""
    return sum(graph.tensors[t].size_bytes for t in _resident_tensors(graph, op))


def _resident_tensors(graph: Graph, op: str) -> list[str]:
    """The weights and graph inputs ``op`` reads, each once, in its input order."""
    return [t for t in dict.fromkeys(graph.ops[op].inputs) if graph.tensors[t].kind in ("weight", "input")]


def shared_resident_tensors(graph: Graph, op_index: dict[str, int]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Resident tensors read by several ops, as (bytes, readers): lowering allocates such a
    tensor once on each device that runs a reader, so the memory rule counts it once there.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> from planner.reductions.max_load import EXAMPLE
    >>> graph = load_spec(EXAMPLE).graph
    >>> shared_resident_tensors(graph, {"m/x": 0, "m/y": 1})  # nothing read twice
    ()
    """
    readers: dict[str, list[int]] = {}
    for name, i in op_index.items():
        for t in _resident_tensors(graph, name):
            readers.setdefault(t, []).append(i)
    return tuple((graph.tensors[t].size_bytes, tuple(sorted(r))) for t, r in readers.items() if len(r) > 1)


def _distinct_resident_bytes(graph: Graph, ops) -> int:
    """The bytes of the resident tensors ``ops`` read, each tensor once (what one device
    holding all of them keeps)."""
    return sum(graph.tensors[t].size_bytes for t in dict.fromkeys(t for op in ops for t in _resident_tensors(graph, op)))


def _no_device_message(spec: Spec, name: str, cycles) -> str:
    kinds = sorted({d.kind for d in spec.hardware.devices})
    runnable = [k for k in kinds if cycles[name, k] is not None]
    allowed = spec.allowed_devices.get(name)
    if not runnable:
        return (f"op {name!r} can run on no device: it gives cycles only for "
                f"{sorted(spec.graph.ops[name].cycles) or 'no kind'}, and the hardware has kinds {kinds}")
    return (f"op {name!r} is pinned to {list(allowed or [])}, but it can run only on kinds {runnable}")


def _precheck_memory(spec: Spec, problem: SchedulingProblem) -> None:
    """Explain the memory infeasibilities that need no solver, in the user's names."""
    names = problem.op_names
    devices = spec.hardware.devices
    for i in range(problem.num_ops):
        need = problem.resident_bytes(i) + problem.output_bytes(i)
        fits = [d for d in problem.allowed_devices(i) if need <= problem.memory_bytes(d)]
        if not fits:
            best = max(problem.allowed_devices(i), key=problem.memory_bytes)
            raise InfeasibleError(
                f"memory: op {names[i]!r} needs {format_bytes(need)} (weights and output) but the largest "
                f"device it may use, {devices[best].name}, holds {format_bytes(problem.memory_bytes(best))}")
    graph = spec.graph
    total_weights = _distinct_resident_bytes(graph, names)
    total_memory = sum(problem.memory_bytes(d) for d in range(problem.num_devices))
    if total_weights > total_memory:
        raise InfeasibleError(
            f"memory: the models' weights total {format_bytes(total_weights)}, more than all devices "
            f"together hold ({format_bytes(total_memory)})")
    for g in problem.colocation_groups:
        common = set(problem.allowed_devices(g[0]))
        for i in g[1:]:
            common &= set(problem.allowed_devices(i))
        if not common:
            raise InfeasibleError(
                f"colocation group {[names[i] for i in g]} has no device every member may use")
        need = _distinct_resident_bytes(graph, [names[i] for i in g])
        if all(need > problem.memory_bytes(d) for d in common):
            raise InfeasibleError(
                f"memory: colocation group {[names[i] for i in g]} needs {format_bytes(need)} of weights "
                f"on one device; the largest it may use holds "
                f"{format_bytes(max(problem.memory_bytes(d) for d in common))}")


def explain_infeasible(spec: Spec, problem: SchedulingProblem) -> str:
    """A user-level explanation when the solver proves infeasibility after the prechecks."""
    devices = spec.hardware.devices
    parts = []
    pinned_ops: dict[int, list[str]] = {}
    for i in range(problem.num_ops):
        allowed = problem.allowed_devices(i)
        if len(allowed) == 1:
            pinned_ops.setdefault(allowed[0], []).append(problem.op_names[i])
    weights_by_dev = {d: _distinct_resident_bytes(spec.graph, ops) for d, ops in pinned_ops.items()}
    for d, w in sorted(weights_by_dev.items()):
        parts.append(f"{devices[d].name}: pinned weights {format_bytes(w)} of {format_bytes(problem.memory_bytes(d))}")
    unreachable = [(devices[a].name, devices[b].name) for a in range(problem.num_devices)
                   for b in range(a + 1, problem.num_devices) if problem.link_of[a][b] == FORBIDDEN]
    msg = ("no plan satisfies the memory limits, pins, colocation groups and links together "
           "(the solver proved it)")
    if unreachable:
        msg += f"; devices without a link between them: {unreachable[:5]}"
    if parts:
        msg += "; " + "; ".join(parts)
    return msg


def from_solution(result: SolveResult, reduction: Reduction, problem: SchedulingProblem,
                  *, spec_name: str, heuristic_objective: int | None = None,
                  solver_info: dict[str, Any] | None = None, resources: dict[str, Any] | None = None) -> Plan:
    """Map a solver result back to the user's names."""
    sol: SchedulingSolution = result.solution
    ops = tuple(
        PlacedOp(name, reduction.device_names[sol.op_device[i]], sol.op_stream[i], sol.op_start[i],
                 sol.op_duration[i])
        for i, name in enumerate(reduction.op_names))
    transfers = []
    for t in sol.transfers:
        src, dst, tensors, size = reduction.edges[t.edge]
        u, v, _ = problem.edges[t.edge]
        transfers.append(PlacedTransfer(
            src, dst, tensors, size, reduction.device_names[sol.op_device[u]],
            reduction.device_names[sol.op_device[v]], reduction.link_names[t.link], t.start_cycle,
            t.duration_cycles))
    transfers.sort(key=lambda t: (t.start_cycle, t.link, t.src_op, t.dst_op))
    bound = None if result.bound is None else int(result.bound)
    return Plan(
        spec_name=spec_name, objective_kind=reduction.objective_kind, status=result.status.value,
        objective=int(result.objective), bound=bound, gap=result.gap, makespan_cycles=sol.makespan_cycles,
        clock_hz=reduction.clock_hz, ops=ops, transfers=tuple(transfers),
        heuristic_objective=heuristic_objective, wall_time_s=result.wall_time_s,
        solver=dict(solver_info or {}), resources=dict(resources or {}))
