"""The claims of ``plan.json`` no single op carries: objective, bound, gap, status, transfers' data.

Each is recomputed from the replay of the binaries and ``graph.json``, never read back:

* the objective, by its kind (the definitions of :mod:`solvers.scheduling.problem` and
  :mod:`planner.max_load`, restated here so that nothing is imported from the solve stage):

  - ``latency``: the makespan, the last cycle any binary runs;
  - ``throughput``: the largest load, a device's load being the sum of its ops' replayed
    durations and a link's the sum of its transfers';
  - ``max-load``: the largest load of the "calls" model: a device's ops' replayed durations,
    plus, on an accelerator, ``comm(u)`` once for every op ``u`` whose output crosses between
    it and another device (``comm(u)``: the slowest link's time for ``u``'s largest out-edge);
    the per-device loads ``plan.json`` ``solver.loads`` gives must be these;

* ``bound <= objective``; ``gap`` = :func:`planner.plan.relative_gap` exactly (``None``
  exactly when the bound is); ``OPTIMAL`` only with ``bound == objective``;
* every transfer joins two ops of a graph edge whose ends sit on different devices, carries
  that edge's tensors and their bytes, and every such edge has its transfer;
* the report's baseline rows (``baselines``): the first is the plan's own status, objective
  and bound; the heuristic's objective is ``heuristic_objective``; with memory planning,
  every other memory plan's row is its replayed makespan in memory.json; the lower bound
  is at most the objective;
* every kernel of the binaries computes its graph op: the op's type and attributes, one
  operand per input and output of the op's dtype and shape (a split op's portion: dimension
  0 divided by its number of instances); every op with arithmetic meaning has one.

Examples
--------
>>> check_bound_and_gap("OPTIMAL", 10, 9, 0.1)
Traceback (most recent call last):
...
planner.errors.VerificationError: plan.json: bound: expected 10 (an OPTIMAL plan's bound is its objective), found 9
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Mapping, Sequence

from planner.errors import VerificationError
from planner.isa.cost import DATA_MOVEMENT_OPS, MATRIX_OPS, VECTOR_OPS
from planner.plan import relative_gap
from planner.verify.documents import MaxLoadClaims, validate_document

__all__ = ["check_bound_and_gap", "recompute_objective", "max_load_loads", "check_transfers_against_graph",
           "check_kernels_against_graph", "check_baselines"]

# json.dumps(value, sort_keys=True, separators=(",", ":")), without building an encoder per kernel.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def check_bound_and_gap(status: str, objective: int, bound: int | None, gap: float | None) -> None:
    """Refuse a bound above the objective, a gap other than the formula's, an OPTIMAL plan with a gap.

    Examples
    --------
    >>> check_bound_and_gap("FEASIBLE", 110, 100, 10 / 110)
    >>> check_bound_and_gap("FEASIBLE", 110, 100, 0.05)
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: plan.json: gap: expected 0.09090909090909091 ((objective - bound) / objective), found 0.05
    """
    if bound is not None and bound > objective:
        raise VerificationError("plan.json", "bound", expected=f"at most the objective {objective}", found=str(bound),
                                detail="a lower bound above the objective is no bound")
    want = relative_gap(objective, bound)
    if (want is None) != (gap is None) or (want is not None and gap != want):
        raise VerificationError("plan.json", "gap", expected=f"{want} ((objective - bound) / objective)",
                                found=str(gap))
    if status == "OPTIMAL" and bound != objective:
        raise VerificationError("plan.json", "bound", expected=f"{objective} (an OPTIMAL plan's bound is its "
                                                               "objective)", found=str(bound))


def _loads(simulation: Any, devices: Sequence[str]) -> dict[str, int]:
    loads = {d: 0 for d in devices}
    for timing in simulation.ops.values():
        loads[timing.device] = loads.get(timing.device, 0) + timing.end_cycle - timing.start_cycle
    return loads


def _largest_out_edge(graph: Any) -> dict[str, int]:
    largest: dict[str, int] = {}
    for src, dst, _ in graph.op_edges():
        largest[src] = max(largest.get(src, 0), graph.edge_bytes(src, dst))
    return largest


def max_load_loads(simulation: Any, graph: Any, base: Mapping[str, str], devices: Sequence[str],
                   accelerators: set[str], links: Sequence[Any], clock_hz: int) -> dict[str, int]:
    """The max-load model's load of every device, from the replay, ``graph.json`` and the links.

    ``base`` maps each replayed op (or op instance) to its graph op; ``links`` carry
    ``bandwidth_bytes_per_s`` and ``latency_cycles``.
    """
    loads = _loads(simulation, devices)
    device_of = {base[name]: t.device for name, t in simulation.ops.items()}

    def comm(op: str, size: int) -> int:
        return max((l.latency_cycles + -(-size * clock_hz // l.bandwidth_bytes_per_s) for l in links), default=0)

    largest = _largest_out_edge(graph)
    charged: set[tuple[str, str]] = set()
    for src, dst, _ in graph.op_edges():
        a, b = device_of[src], device_of[dst]
        if a == b:
            continue
        for dev in (a, b):
            if dev in accelerators and (src, dev) not in charged:
                charged.add((src, dev))
                loads[dev] += comm(src, largest[src])
    return loads


def _max_load_objective(doc: Any, simulation: Any, graph: Any, base: Mapping[str, str]) -> int:
    claims = validate_document(MaxLoadClaims, doc.solver, "plan.json solver")
    devices = [d.name for d in doc.devices]
    roles = [*claims.accelerators, *claims.cpus]
    if sorted(roles) != sorted(devices) or len(set(roles)) != len(roles):
        raise VerificationError("plan.json", "solver.accelerators/cpus", expected=f"the devices {devices}, each once",
                                found=str(roles))
    loads = max_load_loads(simulation, graph, base, devices, set(claims.accelerators), doc.links, doc.clock_hz)
    for dev in devices:
        if claims.loads.get(dev) != loads[dev]:
            raise VerificationError("plan.json", f"solver.loads.{dev}", expected=f"{loads[dev]} (recomputed from "
                                    "the replay and graph.json)", found=str(claims.loads.get(dev)))
    if set(claims.loads) != set(devices):
        raise VerificationError("plan.json", "solver.loads", expected=f"a load for each of {devices}",
                                found=str(sorted(claims.loads)))
    return max(loads.values(), default=0)


def recompute_objective(doc: Any, simulation: Any, graph: Any, base: Mapping[str, str]) -> int:
    """The objective of ``doc.objective_kind`` recomputed from the replay (and graph.json for max-load).

    Raises
    ------
    VerificationError
        For max-load, per-device loads in ``solver.loads`` other than the recomputed ones.
    """
    kind = doc.objective_kind
    if kind == "latency":
        return simulation.makespan_cycles
    if kind == "throughput":
        link_loads: dict[str, int] = defaultdict(int)
        for t in simulation.transfers.values():
            link_loads[t.link] += t.end_cycle - t.start_cycle
        loads = [*_loads(simulation, [d.name for d in doc.devices]).values(), *link_loads.values()]
        return max(loads, default=0)
    return _max_load_objective(doc, simulation, graph, base)


def check_transfers_against_graph(transfers: Sequence[Any], graph: Any, base: Mapping[str, str],
                                  device_of: Mapping[str, str]) -> None:
    """Each transfer carries its graph edge's tensors and bytes; each cross-device edge has one.

    ``base`` maps plan op names (instances included) to graph ops; ``device_of`` graph ops
    to devices.
    """
    edges = {(src, dst): tuple(tensors) for src, dst, tensors in graph.op_edges()}
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(transfers):
        key = (base.get(t.src_op, t.src_op), base.get(t.dst_op, t.dst_op))
        where = f"transfers[{i}] {t.src_op}->{t.dst_op}"
        if key not in edges:
            raise VerificationError("plan.json", where, detail="graph.json has no edge between these ops")
        if tuple(t.tensors) != edges[key]:
            raise VerificationError("plan.json", f"{where}.tensors", expected=f"{list(edges[key])} (graph.json)",
                                    found=str(list(t.tensors)))
        size = graph.edge_bytes(*key)
        if t.size_bytes != size:
            raise VerificationError("plan.json", f"{where}.size_bytes", expected=f"{size} (graph.json)",
                                    found=str(t.size_bytes))
        seen.add(key)
    for key in edges:
        if device_of[key[0]] != device_of[key[1]] and key not in seen:
            raise VerificationError("plan.json", "transfers", detail=f"no transfer carries edge {key[0]}->{key[1]} "
                                    f"from {device_of[key[0]]} to {device_of[key[1]]}")


def _operand_fits(operand: Any, tensor: Any, parts: int) -> bool:
    shape, want = tuple(operand.shape), tuple(tensor.shape)
    if operand.dtype != tensor.dtype:
        return False
    return shape == want or (parts > 1 and len(shape) == len(want) and shape[1:] == want[1:]
                             and shape[0] * parts == want[0])


def check_kernels_against_graph(programs: Mapping[str, Any], graph: Any, base: Mapping[str, str]) -> None:
    """Each binary's kernels compute graph.json's ops (type, attributes, operand dtypes and shapes).

    Raises
    ------
    VerificationError
        A kernel of another type, attributes, operand count, dtype or shape, a kernel for an
        op of no graph op, or an op with arithmetic meaning and no kernel.
    """
    arithmetic = {*MATRIX_OPS, *VECTOR_OPS, *DATA_MOVEMENT_OPS}
    parts: dict[str, int] = defaultdict(int)
    for name, op in base.items():
        parts[op] += 1
    seen: set[str] = set()
    for device, program in programs.items():
        for k in program.kernels:
            op = graph.ops.get(base.get(k.op, ""))
            where = f"bin/{device}.bin"
            if op is None:
                raise VerificationError(where, f"kernel {k.op!r}", detail="not an op of plan.json and graph.json")
            attrs = _CANONICAL.encode(op.attrs)
            if (k.type, k.attrs_json) != (op.type, attrs):
                raise VerificationError("graph.json", f"ops {op.name!r}", expected=f"{k.type} {k.attrs_json} (the "
                                        f"kernel in {where})", found=f"{op.type} {attrs}")
            tensors = [graph.tensors[t] for t in (*op.inputs, *op.outputs)]
            operands = [*k.inputs, *k.outputs]
            if len(operands) != len(tensors) or not all(
                    _operand_fits(o, t, parts[op.name]) for o, t in zip(operands, tensors)):
                raise VerificationError("graph.json", f"ops {op.name!r}", detail=f"its tensors are not the operands "
                                        f"of the kernel of {k.op!r} in {where}")
            seen.add(k.op)
    missing = sorted(n for n, op in base.items() if graph.ops[op].type in arithmetic and n not in seen)
    if missing:
        raise VerificationError("bin", f"kernel {missing[0]!r}", detail=f"no binary computes this "
                                f"{graph.ops[base[missing[0]]].type} op")


def check_baselines(doc: Any, memory: Any | None) -> None:
    """The baseline rows against the plan's own figures and memory.json's (see the module notes).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> doc = NS(status="OPTIMAL", objective=5, bound=5, heuristic_objective=7, solver={"heuristic": "heft"},
    ...          baselines=[NS(solver="cpsat", status="OPTIMAL", objective=5, bound=5),
    ...                     NS(solver="heft", status="FEASIBLE", objective=6, bound=None),
    ...                     NS(solver="lower bound", status="-", objective=None, bound=4)])
    >>> check_baselines(doc, None)
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: plan.json: baselines[1] 'heft': expected objective 7 (heuristic_objective), found 6
    """
    rows = doc.baselines
    if not rows or (rows[0].status, rows[0].objective, rows[0].bound) != (doc.status, doc.objective, doc.bound):
        raise VerificationError("plan.json", "baselines[0]", expected=f"the plan's own {doc.status} {doc.objective} "
                                f"bound {doc.bound}", found=str(rows[0].model_dump() if rows else None))
    names = [r.solver for r in rows]
    if len(set(names)) != len(names) or names[-1] != "lower bound":
        raise VerificationError("plan.json", "baselines", expected="one row per solver, the lower bound last",
                                found=str(names))
    want: dict[str, int | None] = {}
    extra = doc.solver.get("baselines")  # max-load: every baseline placement's max-load by name
    if memory is None and isinstance(extra, dict):
        if sorted(names[1:-1]) != sorted(extra):
            raise VerificationError("plan.json", "baselines", expected=f"a row for each of solver.baselines "
                                    f"{sorted(extra)}", found=str(names[1:-1]))
        for i, row in enumerate(rows[1:-1], start=1):  # the heuristic's too: report.md draws solver.baselines
            if row.solver not in extra or extra[row.solver] != row.objective:
                raise VerificationError("plan.json", f"baselines[{i}] {row.solver!r}", expected=f"a baseline of "
                                        f"solver.baselines {sorted(extra)} with its max-load", found=str(row.objective))
    if memory is not None:
        want = {name: value for name, value in memory.baselines.items() if name != memory.choice}
        names = [r.solver for r in rows[1:] if r.solver != "lower bound"]
        if rows[0].solver != f"planner ({memory.choice})" or sorted(names) != sorted(want):
            raise VerificationError("plan.json", "baselines", expected=f"the planner ({memory.choice}) and "
                                    f"{sorted(want)} (memory.json)", found=str([r.solver for r in rows]))
    elif isinstance(doc.solver.get("heuristic"), str):  # the second row, under the heuristic's name
        if len(rows) < 2 or not rows[1].solver.startswith(doc.solver["heuristic"]) or (
                not isinstance(extra, dict) and len(rows) != 3):
            raise VerificationError("plan.json", "baselines[1]", expected=f"the heuristic {doc.solver['heuristic']!r}",
                                    found=str(rows[1].solver if len(rows) > 1 else None))
        want = {rows[1].solver: doc.heuristic_objective}
    for i, row in enumerate(rows):
        solved = row.status in ("OPTIMAL", "FEASIBLE")
        if (row.solver == "lower bound") != (row.status == "-") or (
                row.solver != "lower bound" and solved != (row.objective is not None)) or (
                row.status not in ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN", "INVALID", "-")):
            raise VerificationError("plan.json", f"baselines[{i}] {row.solver!r}.status", expected="OPTIMAL or "
                                    "FEASIBLE with an objective, INVALID, INFEASIBLE or UNKNOWN without one, '-' for "
                                    "the lower bound", found=f"{row.status!r} with objective {row.objective}")
        if row.bound is not None and row.objective is not None and row.bound > row.objective:
            raise VerificationError("plan.json", f"baselines[{i}] {row.solver!r}.bound",
                                    expected=f"at most its objective {row.objective}", found=str(row.bound))
        if row.solver in want and i > 0 and row.objective != want[row.solver]:
            source = "memory.json baselines" if memory is not None else "heuristic_objective"
            raise VerificationError("plan.json", f"baselines[{i}] {row.solver!r}",
                                    expected=f"objective {want[row.solver]} ({source})", found=str(row.objective))
        if row.solver == "lower bound" and row.bound is not None and row.bound > doc.objective:
            raise VerificationError("plan.json", f"baselines[{i}] 'lower bound'",
                                    expected=f"at most the objective {doc.objective}", found=str(row.bound))
