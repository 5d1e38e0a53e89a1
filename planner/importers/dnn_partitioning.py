"""DNN device-placement workloads of Tarnawski et al. (NeurIPS 2020) → ordinary specs.

Input JSON: ``maxSizePerFPGA`` (bytes per accelerator), ``maxFPGAs`` (k), ``maxCPUs``,
``nodes`` (``id``, ``supportedOnFpga``, ``cpuLatency``, ``fpgaLatency``,
``isBackwardNode``, optional ``colorClass`` and ``size``) and ``edges`` (``sourceId``,
``destId``, ``cost``: the time to move the source's output between an accelerator and
CPU memory, equal on all out-edges of a node). "FPGA" means any accelerator.

Spec mapping (times are in the paper's unit, milliseconds):

* devices: kind ``acc`` (``count: maxFPGAs``) and kind ``cpu`` (``count: maxCPUs``), both
  profile ``generic`` (1 GHz, so one cycle is one nanosecond);
* each node is an op ``n<id>`` of type ``task`` with ``cycles: {acc: round(fpgaLatency
  * 1e6), cpu: round(cpuLatency * 1e6)}`` (:data:`CYCLES_PER_MS`; nanoseconds, rounded to
  the nearest integer); ``supportedOnFpga: 0`` gives only ``cpu`` cycles;
* ``size`` becomes a weight tensor ``n<id>_w`` of ``size`` bytes (``uint8``), and
  ``maxSizePerFPGA`` a memory limit on ``acc``;
* each node with out-edges produces a tensor ``n<id>_out`` of ``round(cost * 1000)``
  bytes (the cost in microseconds), and links run all-to-all at 1 MB/s with zero
  latency, so moving it takes ``cost`` rounded to the microsecond (1 byte = 1000 cycles);
  consumers read that tensor (a node whose cost rounds to 0 sends nothing: its consumers
  list it under ``after:``). The workloads give no activation sizes for every edge, so
  these stand-in bytes are kept small (a few kB) to leave the memory limit to the weights;
* colour classes with two or more nodes become ``colocate`` constraints;
* ``isBackwardNode: 1`` becomes ``attrs: {backward: true}`` (the forward/backward split
  that contiguity is defined on);
* the objective: ``max-load`` for the throughput inputs (the paper's objective),
  ``latency`` for the latency inputs, or as asked.

``objective: max-load`` (``{kind: max-load, contiguous: true|false}``) is the paper's own
objective, planned by :mod:`planner.max_load` through the whole pipeline. Its spec keeps
every cost to the nanosecond, like the latencies: links run at 1 GB/s and each output
tensor has ``round(cost * 1e6)`` bytes, so moving it takes exactly the cost's rounded
nanoseconds, and the planner's max-load equals :func:`max_load` × :data:`CYCLES_PER_MS` up
to that rounding of each time (exactly the max-load of the workload with every time
rounded to the ns). The other objectives keep the microsecond stand-in bytes above.

The planner's generic throughput objective charges transfers on links instead;
:func:`max_load` evaluates the paper's objective here, in the paper's units, for any split
(e.g. the human experts').
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from planner.importers._spec import format_error

__all__ = [
    "CYCLES_PER_MS",
    "OBJECTIVES",
    "DnnNode",
    "DnnWorkload",
    "parse_dnn_json",
    "read_dnn_json",
    "dnn_to_spec",
    "import_dnn",
    "read_expert_split",
    "max_load",
    "is_dnn_json",
]

#: Spec cycles (ns at 1 GHz) per millisecond of the paper's latencies.
CYCLES_PER_MS = 1_000_000

#: Objectives :func:`dnn_to_spec` can emit (``max_load`` is accepted for ``max-load``).
OBJECTIVES = ("max-load", "throughput", "latency")


@dataclass(frozen=True, slots=True)
class DnnNode:
    """One node of a workload, in the paper's units (ms, bytes).

    Examples
    --------
    >>> n = parse_dnn_json(_TINY).nodes[1]
    >>> n.id, n.fpga_latency, n.out_cost, n.color_class
    (2, 2.0, 0.25, None)
    """

    id: int
    name: str
    supported_on_fpga: bool
    cpu_latency: float
    fpga_latency: float
    is_backward: bool
    color_class: int | None
    size: float
    out_cost: float  # cost of moving its output (0 when it has no out-edges)


@dataclass(frozen=True, slots=True)
class DnnWorkload:
    """A parsed workload: nodes in file order, edges as index pairs.

    Examples
    --------
    >>> w = parse_dnn_json(_TINY)
    >>> len(w.nodes), w.edges, w.max_fpgas, w.max_cpus
    (3, ((0, 1), (1, 2)), 2, 1)
    >>> w.color_classes()
    ((0, 2),)
    """

    nodes: tuple[DnnNode, ...]
    edges: tuple[tuple[int, int], ...]
    max_size_per_fpga: float
    max_fpgas: int
    max_cpus: int

    def index_of(self) -> dict[int, int]:
        return {n.id: i for i, n in enumerate(self.nodes)}

    def color_classes(self) -> tuple[tuple[int, ...], ...]:
        """Node-index groups of size >= 2 that must share a device (in first-seen order)."""
        groups: dict[int, list[int]] = {}
        for i, n in enumerate(self.nodes):
            if n.color_class is not None:
                groups.setdefault(n.color_class, []).append(i)
        return tuple(tuple(g) for g in groups.values() if len(g) > 1)


_TINY = json.dumps({
    "maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1,
    "nodes": [
        {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0,
         "colorClass": 7, "size": 60},
        {"id": 2, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 2, "isBackwardNode": 0, "size": 50},
        {"id": 3, "supportedOnFpga": 0, "cpuLatency": 3, "fpgaLatency": 0, "isBackwardNode": 1,
         "colorClass": 7},
    ],
    "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 2, "destId": 3, "cost": 0.25}],
}, indent=1)


def _line_of(text: str, pattern: str) -> int | None:
    m = re.search(pattern, text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _number(obj: Mapping[str, Any], key: str, what: str, text: str, anchor: str,
            path: Path | str | None, default: Any = None) -> Any:
    if key not in obj:
        if default is not None:
            return default
        raise format_error(f"{what}: missing key {key!r}", path, _line_of(text, anchor))
    v = obj[key]
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, (int, float)):
        raise format_error(f"{what}: {key!r} must be a number, got {v!r}", path,
                           _line_of(text, anchor))
    return v


def parse_dnn_json(text: str, path: Path | str | None = None) -> DnnWorkload:
    """Parse a workload; malformed input raises :class:`~planner.errors.SpecError` with a line.

    Examples
    --------
    >>> parse_dnn_json('{"maxFPGAs": 2,\\n "nodes": [}')
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 2: invalid JSON: Expecting value (column 12)
    >>> parse_dnn_json('{"maxSizePerFPGA": 1, "maxFPGAs": 1, "maxCPUs": 1,\\n'
    ...                '"nodes": [{"id": 4,\\n "cpuLatency": 1}], "edges": []}')
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 2: node 4: missing key 'supportedOnFpga'
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise format_error(f"invalid JSON: {e.msg} (column {e.colno})", path, e.lineno) from None
    if not isinstance(data, dict):
        raise format_error("expected a JSON object with 'nodes' and 'edges'", path, 1)
    for key in ("maxSizePerFPGA", "maxFPGAs", "maxCPUs", "nodes", "edges"):
        if key not in data:
            raise format_error(f"missing top-level key {key!r}", path, 1)
    max_size = _number(data, "maxSizePerFPGA", "top level", text, '"maxSizePerFPGA"', path)
    k = _number(data, "maxFPGAs", "top level", text, '"maxFPGAs"', path)
    c = _number(data, "maxCPUs", "top level", text, '"maxCPUs"', path)
    if k < 0 or c < 0 or int(k) != k or int(c) != c:
        raise format_error("maxFPGAs and maxCPUs must be non-negative integers", path,
                           _line_of(text, '"maxFPGAs"'))
    raw_nodes, raw_edges = data["nodes"], data["edges"]
    if not isinstance(raw_nodes, list) or not isinstance(raw_edges, list):
        raise format_error("'nodes' and 'edges' must be lists", path, _line_of(text, '"nodes"'))
    out_cost: dict[int, float] = {}
    ids: dict[int, int] = {}
    for i, nd in enumerate(raw_nodes):
        if not isinstance(nd, dict) or "id" not in nd:
            raise format_error(f"nodes[{i}] must be an object with an 'id'", path, _line_of(text, '"nodes"'))
        if nd["id"] in ids:
            raise format_error(f"node id {nd['id']} appears twice", path,
                               _line_of(text, rf'"id"\s*:\s*{nd["id"]}\b'))
        ids[nd["id"]] = i
    edges: list[tuple[int, int]] = []
    for e_i, ed in enumerate(raw_edges):
        anchor = rf'"sourceId"\s*:\s*{ed.get("sourceId") if isinstance(ed, dict) else "x"}\b'
        what = f"edges[{e_i}]"
        if not isinstance(ed, dict):
            raise format_error(f"{what} must be an object", path, _line_of(text, '"edges"'))
        u = _number(ed, "sourceId", what, text, anchor, path)
        v = _number(ed, "destId", what, text, anchor, path)
        cost = _number(ed, "cost", what, text, anchor, path)
        for end in (u, v):
            if end not in ids:
                raise format_error(f"{what} names unknown node {end}", path, _line_of(text, anchor))
        if u in out_cost and abs(out_cost[u] - cost) > 1e-6:
            raise format_error(f"node {u} has two different outgoing costs ({out_cost[u]} and {cost}); "
                               "the model needs one cost per source node", path, _line_of(text, anchor))
        out_cost[u] = cost
        edges.append((ids[u], ids[v]))
    nodes = []
    for nd in raw_nodes:
        nid = nd["id"]
        anchor, what = rf'"id"\s*:\s*{nid}\b', f"node {nid}"
        sup = _number(nd, "supportedOnFpga", what, text, anchor, path)
        cpu = _number(nd, "cpuLatency", what, text, anchor, path)
        fpga = _number(nd, "fpgaLatency", what, text, anchor, path, default=0.0)
        bwd = _number(nd, "isBackwardNode", what, text, anchor, path, default=0)
        size = _number(nd, "size", what, text, anchor, path, default=0.0)
        if min(cpu, fpga, size) < 0:
            raise format_error(f"{what}: latencies and size must be >= 0", path, _line_of(text, anchor))
        cc = nd.get("colorClass")
        nodes.append(DnnNode(nid, str(nd.get("name", f"n{nid}")), bool(sup), float(cpu), float(fpga),
                             bool(bwd), None if cc is None else int(cc), float(size),
                             float(out_cost.get(nid, 0.0))))
    return DnnWorkload(tuple(nodes), tuple(edges), float(max_size), int(k), int(c))


def read_dnn_json(path: Path | str) -> DnnWorkload:
    """Read and parse a workload file.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "w.json"; _ = p.write_text(_TINY)
    ...     read_dnn_json(p).max_size_per_fpga
    100.0
    """
    path = Path(path)
    return parse_dnn_json(path.read_text(), path)


def is_dnn_json(text: str) -> bool:
    """Whether JSON text looks like a dnn-partitioning workload.

    >>> is_dnn_json(_TINY), is_dnn_json('{"a": 1}')
    (True, False)
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(data, dict) and "nodes" in data and "maxFPGAs" in data


def _cycles(ms: float) -> int:
    return int(round(ms * CYCLES_PER_MS))


def _transfer_bytes(ms: float) -> int:
    return int(round(ms * 1000))  # microseconds; 1 byte takes 1 us at 1 MB/s


def _transfer_bytes_ns(ms: float) -> int:
    return _cycles(ms)  # nanoseconds; 1 byte takes 1 ns at 1 GB/s


def dnn_to_spec(w: DnnWorkload, name: str = "dnn", objective: str = "throughput", *,
                contiguous: bool = False) -> dict[str, Any]:
    """The spec dict of a workload (see the module notes for the mapping).

    ``objective`` is one of :data:`OBJECTIVES`; ``contiguous`` applies to ``max-load``.

    Examples
    --------
    >>> spec = dnn_to_spec(parse_dnn_json(_TINY), "tiny")
    >>> [(d["name"], d["count"]) for d in spec["hardware"]["devices"]]
    [('acc', 2), ('cpu', 1)]
    >>> ops = spec["models"][0]["graph"]["ops"]
    >>> ops[0]["cycles"], ops[2]["cycles"]
    ({'acc': 1000000, 'cpu': 10000000}, {'cpu': 3000000})
    >>> spec["constraints"]["colocate"], spec["constraints"]["memory_limits"]
    ([['tiny/n1', 'tiny/n3']], [{'device': 'acc', 'max': '100 B'}])
    >>> ml = dnn_to_spec(parse_dnn_json(_TINY), "tiny", "max-load", contiguous=True)
    >>> ml["objective"], ml["hardware"]["topology"]["bandwidth"]
    ({'kind': 'max-load', 'contiguous': True}, '1 GB/s')
    >>> [t["shape"] for t in ml["models"][0]["graph"]["tensors"] if t["name"].endswith("_out")]
    [[500000], [250000]]
    >>> ml["models"][0]["graph"]["ops"][2]["attrs"]
    {'backward': True}
    """
    objective = "max-load" if objective == "max_load" else objective
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if contiguous and objective != "max-load":
        raise ValueError("contiguous applies to the max-load objective only")
    exact = objective == "max-load"
    _bytes = _transfer_bytes_ns if exact else _transfer_bytes
    devices = []
    if w.max_fpgas:
        devices.append({"name": "acc", "profile": "generic", "count": w.max_fpgas})
    if w.max_cpus:
        devices.append({"name": "cpu", "profile": "generic", "count": w.max_cpus})
    has_out = {u for u, _ in w.edges if _bytes(w.nodes[u].out_cost) > 0}
    tensors: list[dict[str, Any]] = []
    ops: list[dict[str, Any]] = []
    inputs: dict[int, list[str]] = {i: [] for i in range(len(w.nodes))}
    after: dict[int, list[str]] = {i: [] for i in range(len(w.nodes))}
    for u, v in w.edges:
        if _bytes(w.nodes[u].out_cost) == 0:  # nothing to move: a control dependency
            if f"n{w.nodes[u].id}" not in after[v]:
                after[v].append(f"n{w.nodes[u].id}")
            continue
        t = f"n{w.nodes[u].id}_out"
        if t not in inputs[v]:
            inputs[v].append(t)
    for i, n in enumerate(w.nodes):
        ins = list(inputs[i])
        if n.size >= 1:
            wt = f"n{n.id}_w"
            tensors.append({"name": wt, "shape": [int(round(n.size))], "dtype": "uint8", "kind": "weight"})
            ins.append(wt)
        outs = []
        if i in has_out:
            outs = [f"n{n.id}_out"]
            tensors.append({"name": outs[0], "shape": [_bytes(n.out_cost)], "dtype": "uint8",
                            "kind": "activation"})
        cycles = {"acc": _cycles(n.fpga_latency)} if n.supported_on_fpga and w.max_fpgas else {}
        cycles["cpu"] = _cycles(n.cpu_latency)
        op: dict[str, Any] = {"name": f"n{n.id}", "type": "task", "inputs": ins, "outputs": outs,
                              "cycles": cycles}
        if after[i]:
            op["after"] = after[i]
        if n.is_backward:
            op["attrs"] = {"backward": True}
        ops.append(op)
    constraints: dict[str, Any] = {}
    groups = [[f"{name}/n{w.nodes[i].id}" for i in g] for g in w.color_classes()]
    if groups:
        constraints["colocate"] = groups
    if w.max_fpgas and w.max_size_per_fpga > 0:
        constraints["memory_limits"] = [{"device": "acc", "max": f"{int(w.max_size_per_fpga)} B"}]
    spec: dict[str, Any] = {
        "version": 1,
        "name": name,
        "hardware": {"devices": devices,
                     "topology": {"kind": "all-to-all", "bandwidth": "1 GB/s" if exact else "1 MB/s",
                                  "latency": 0}},
        "models": [{"name": name, "graph": {"tensors": tensors, "ops": ops}}],
        "objective": {"kind": "max-load", "contiguous": contiguous} if exact else objective,
    }
    if constraints:
        spec["constraints"] = constraints
    return spec


def import_dnn(path: Path | str, objective: str | None = None, contiguous: bool = False) -> dict[str, Any]:
    """Read a workload file and return its spec dict.

    The objective defaults to ``latency`` for files under a ``latency-inputs`` directory,
    ``max-load`` (the paper's objective) under ``throughput-inputs``, and ``throughput``
    otherwise; ``contiguous`` applies to ``max-load``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "w.json"; _ = p.write_text(_TINY)
    ...     import_dnn(p)["objective"], import_dnn(p, "max-load", contiguous=True)["objective"]
    ...     (Path(d) / "throughput-inputs").mkdir(); _ = (Path(d) / "throughput-inputs" / "w.json").write_text(_TINY)
    ...     import_dnn(Path(d) / "throughput-inputs" / "w.json")["objective"]
    ('throughput', {'kind': 'max-load', 'contiguous': True})
    {'kind': 'max-load', 'contiguous': False}
    """
    path = Path(path)
    if objective is None:
        objective = ("latency" if "latency-inputs" in path.parts
                     else "max-load" if "throughput-inputs" in path.parts else "throughput")
    return dnn_to_spec(read_dnn_json(path), name=path.stem, objective=objective, contiguous=contiguous)


def read_expert_split(path: Path | str, w: DnnWorkload) -> tuple[int, ...]:
    """A human-expert split as a device per node: accelerators ``0..k-1``, then CPUs.

    The expert files list node ids per ``fpgas`` and ``cpus`` entry; nodes not listed go
    to CPU 0 (the paper's convention: the CPU holds what no accelerator takes).

    Examples
    --------
    >>> import tempfile
    >>> w = parse_dnn_json(_TINY)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "e.json"
    ...     _ = p.write_text('{"fpgas": [{"nodes": [1, 2]}], "cpus": [{"nodes": [3]}]}')
    ...     read_expert_split(p, w)
    (0, 0, 2)
    """
    path = Path(path)
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise format_error(f"invalid JSON: {e.msg} (column {e.colno})", path, e.lineno) from None
    index = w.index_of()
    k = w.max_fpgas
    dev = [k] * len(w.nodes) if w.max_cpus else [-1] * len(w.nodes)
    fpgas = data.get("fpgas", [])
    if len(fpgas) > k:
        raise format_error(f"the split uses {len(fpgas)} accelerators, the workload allows {k}", path, 1)
    for kind, offset in (("fpgas", 0), ("cpus", k)):
        for d, entry in enumerate(data.get(kind, [])):
            for nid in entry.get("nodes", []):
                if nid not in index:
                    raise format_error(f"{kind}[{d}] names unknown node {nid}", path,
                                       _line_of(text, rf"\b{nid}\b"))
                dev[index[nid]] = offset + d
    return tuple(dev)


def max_load(w: DnnWorkload, device_of: Sequence[int]) -> float:
    """The paper's max-load of a split, in ms (devices: accelerators ``0..k-1``, then CPUs).

    load(accelerator) = its nodes' ``fpgaLatency`` + ``cost(u)`` once for every node u that
    is on it and feeds another device, and once for every node u elsewhere that feeds it;
    load(CPU) = its nodes' ``cpuLatency``. The result is the largest load.

    Examples
    --------
    >>> w = parse_dnn_json(_TINY)
    >>> max_load(w, (0, 1, 2))  # acc0: 1 + 0.5 (n1 out); acc1: 2 + 0.5 (n1 in) + 0.25 (n2 out); cpu: 3
    3.0
    >>> max_load(w, (0, 0, 2))  # acc0: 1 + 2 + 0.25
    3.25
    """
    k = w.max_fpgas
    loads = [0.0] * (k + w.max_cpus)
    for i, d in enumerate(device_of):
        n = w.nodes[i]
        loads[d] += n.fpga_latency if d < k else n.cpu_latency
    pays: set[tuple[int, int]] = set()
    for u, v in w.edges:
        du, dv = device_of[u], device_of[v]
        if du != dv:
            if du < k:
                pays.add((u, du))
            if dv < k:
                pays.add((u, dv))
    for u, d in sorted(pays):
        loads[d] += w.nodes[u].out_cost
    return max(loads, default=0.0)
