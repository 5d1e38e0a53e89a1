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

from planner.errors import SpecError
from planner.importers._spec import format_error, spec_name
from planner.input_files import parse_json_bounded, read_input_text

__all__ = [
    "CYCLES_PER_MS",
    "MAX_NODES",
    "MAX_EDGES",
    "MAX_DEVICES",
    "MAX_MS",
    "MAX_BYTES",
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


#: Limits on a workload (the published ones have up to 2,012 nodes, 3 accelerators, 1 CPU).
MAX_NODES = 100_000
MAX_EDGES = 1_000_000
MAX_DEVICES = 1024  # accelerators plus CPUs: each is a device of the spec
MAX_MS = 1e6  # a latency or transfer cost, in ms (1e12 cycles at 1 GHz)
MAX_BYTES = 2**40  # a node's size and an accelerator's memory
_MAX_ID = 2**53


def _line_of(text: str, pattern: str) -> int | None:
    m = re.search(pattern, text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _id_anchor(node_id: Any) -> str:
    """A regex finding ``"id": <node_id>`` (the id escaped: it comes from the file)."""
    return rf'"id"\s*:\s*{re.escape(str(node_id))}\b'


def _number(obj: Mapping[str, Any], key: str, what: str, text: str, anchor: str,
            path: Path | str | None, default: Any = None, high: float = MAX_MS) -> Any:
    """A finite number in ``0..high`` (JSON's parse already refused NaN and infinities)."""
    if key not in obj:
        if default is not None:
            return default
        raise format_error(f"{what}: missing key {key!r}", path, _line_of(text, anchor))
    v = obj[key]
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, (int, float)):
        raise format_error(f"{what}: {key!r} must be a number, got {v!r:.60}", path, _line_of(text, anchor))
    if not 0 <= v <= high:
        raise format_error(f"{what}: {key!r} is {v!r:.30}; expected a number in 0..{high:g}", path,
                           _line_of(text, anchor))
    return v


def _integer(obj: Mapping[str, Any], key: str, what: str, text: str, anchor: str, path: Path | str | None,
             low: int = 0, high: int = _MAX_ID) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise format_error(f"{what}: {key!r} must be an integer in {low:,}..{high:,}, got {v!r:.60}", path,
                           _line_of(text, anchor))
    return v


def _check_acyclic(edges: list[tuple[int, int]], ids: list[int], path: Path | str | None, text: str) -> None:
    """Raise naming a cycle of node ids when the edges have one."""
    succ: dict[int, list[int]] = {}
    for u, v in edges:
        succ.setdefault(u, []).append(v)
    state = [0] * len(ids)  # 0 new, 1 on the stack, 2 done
    for root in range(len(ids)):
        if state[root]:
            continue
        stack = [(root, iter(succ.get(root, ())))]
        state[root] = 1
        trail = [root]
        while stack:
            u, it = stack[-1]
            v = next(it, None)
            if v is None:
                stack.pop()
                trail.pop()
                state[u] = 2
            elif state[v] == 1:
                cycle = trail[trail.index(v):] + [v]
                raise format_error("the edges form a cycle: " + " -> ".join(f"node {ids[i]}" for i in cycle),
                                   path, _line_of(text, rf'"sourceId"\s*:\s*{ids[cycle[0]]}\b'))
            elif state[v] == 0:
                state[v] = 1
                trail.append(v)
                stack.append((v, iter(succ.get(v, ()))))


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
    >>> parse_dnn_json('{"maxSizePerFPGA": 1, "maxFPGAs": 1, "maxCPUs": 1, "nodes": [],\\n'
    ...                '"edges": [{"sourceId": 1, "destId": 2, "cost": Infinity}]}')
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 2: Infinity is not a number JSON allows; give a finite number
    """
    data = parse_json_bounded(text, path)
    if not isinstance(data, dict) or "nodes" not in data or "maxFPGAs" not in data:
        raise format_error("JSON file is not a dnn-partitioning workload (needs 'nodes' and 'maxFPGAs')", path, 1)
    for key in ("maxSizePerFPGA", "maxFPGAs", "maxCPUs", "nodes", "edges"):
        if key not in data:
            raise format_error(f"missing top-level key {key!r}", path, 1)
    max_size = _number(data, "maxSizePerFPGA", "top level", text, '"maxSizePerFPGA"', path, high=MAX_BYTES)
    k = _integer(data, "maxFPGAs", "top level", text, '"maxFPGAs"', path, high=MAX_DEVICES)
    c = _integer(data, "maxCPUs", "top level", text, '"maxCPUs"', path, high=MAX_DEVICES)
    if not 1 <= k + c <= MAX_DEVICES:
        raise format_error(f"maxFPGAs + maxCPUs is {k + c}; expected 1..{MAX_DEVICES}", path,
                           _line_of(text, '"maxFPGAs"'))
    raw_nodes, raw_edges = data["nodes"], data["edges"]
    if not isinstance(raw_nodes, list) or not isinstance(raw_edges, list):
        raise format_error("'nodes' and 'edges' must be lists", path, _line_of(text, '"nodes"'))
    if len(raw_nodes) > MAX_NODES or len(raw_edges) > MAX_EDGES:
        raise format_error(f"{len(raw_nodes):,} nodes and {len(raw_edges):,} edges; at most {MAX_NODES:,} and "
                           f"{MAX_EDGES:,} are imported", path, _line_of(text, '"nodes"'))
    ids: dict[int, int] = {}
    for i, nd in enumerate(raw_nodes):
        if not isinstance(nd, dict) or "id" not in nd:
            raise format_error(f"nodes[{i}] must be an object with an 'id'", path, _line_of(text, '"nodes"'))
        nid = _integer(nd, "id", f"nodes[{i}]", text, '"nodes"', path, low=-_MAX_ID)
        if nid in ids:
            raise format_error(f"node id {nid} appears twice", path, _line_of(text, _id_anchor(nid)))
        ids[nid] = i
    out_cost, edges = _parse_edges(raw_edges, ids, text, path)
    _check_acyclic(edges, list(ids), path, text)
    nodes = [_parse_node(nd, out_cost, k, c, text, path) for nd in raw_nodes]
    return DnnWorkload(tuple(nodes), tuple(edges), float(max_size), k, c)


def _parse_edges(raw_edges: list, ids: dict[int, int], text: str, path: Path | str | None
                 ) -> tuple[dict[int, float], list[tuple[int, int]]]:
    out_cost: dict[int, float] = {}
    edges: list[tuple[int, int]] = []
    for e_i, ed in enumerate(raw_edges):
        what = f"edges[{e_i}]"
        if not isinstance(ed, dict):
            raise format_error(f"{what} must be an object", path, _line_of(text, '"edges"'))
        src = ed.get("sourceId")
        anchor = rf'"sourceId"\s*:\s*{re.escape(str(src))}\b' if isinstance(src, int) else '"edges"'
        u = _integer(ed, "sourceId", what, text, anchor, path, low=-_MAX_ID)
        v = _integer(ed, "destId", what, text, anchor, path, low=-_MAX_ID)
        cost = _number(ed, "cost", what, text, anchor, path)
        for end in (u, v):
            if end not in ids:
                raise format_error(f"{what} names unknown node {end}", path, _line_of(text, anchor))
        if u in out_cost and abs(out_cost[u] - cost) > 1e-6:
            raise format_error(f"node {u} has two different outgoing costs ({out_cost[u]} and {cost}); "
                               "the model needs one cost per source node", path, _line_of(text, anchor))
        out_cost[u] = cost
        edges.append((ids[u], ids[v]))
    return out_cost, edges


def _parse_node(nd: dict, out_cost: dict[int, float], k: int, c: int, text: str, path: Path | str | None
                ) -> DnnNode:
    nid = nd["id"]
    anchor, what = _id_anchor(nid), f"node {nid}"
    sup = _number(nd, "supportedOnFpga", what, text, anchor, path, high=1)
    cpu = _number(nd, "cpuLatency", what, text, anchor, path)
    fpga = _number(nd, "fpgaLatency", what, text, anchor, path, default=0.0)
    bwd = _number(nd, "isBackwardNode", what, text, anchor, path, default=0, high=1)
    size = _number(nd, "size", what, text, anchor, path, default=0.0, high=MAX_BYTES)
    cc = nd.get("colorClass")
    if cc is not None and (isinstance(cc, bool) or not isinstance(cc, int)):
        raise format_error(f"{what}: 'colorClass' must be an integer, got {cc!r:.60}", path, _line_of(text, anchor))
    if not (sup and k) and not c:
        raise format_error(f"{what} can run on no device: it is {'not ' if not sup else ''}supported on "
                           f"accelerators and maxCPUs is 0", path, _line_of(text, anchor))
    return DnnNode(nid, str(nd.get("name", f"n{nid}"))[:200], bool(sup), float(cpu), float(fpga), bool(bwd), cc,
                   float(size), float(out_cost.get(nid, 0.0)))


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
    return parse_dnn_json(read_input_text(path), path)


def is_dnn_json(text: str) -> bool:
    """Whether JSON text looks like a dnn-partitioning workload.

    >>> is_dnn_json(_TINY), is_dnn_json('{"a": 1}')
    (True, False)
    """
    try:
        data = parse_json_bounded(text)
    except SpecError:
        return False
    return isinstance(data, dict) and "nodes" in data and "maxFPGAs" in data


def _cycles(ms: float) -> int:
    return int(round(ms * CYCLES_PER_MS))


def _transfer_bytes(ms: float) -> int:
    return int(round(ms * 1000))  # microseconds; 1 byte takes 1 us at 1 MB/s


def _transfer_bytes_ns(ms: float) -> int:
    return _cycles(ms)  # nanoseconds; 1 byte takes 1 ns at 1 GB/s


def _graph_sections(w: DnnWorkload, _bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``tensors`` and ``ops`` of the workload's graph: an edge that moves bytes becomes the
    producer's output tensor, one that moves none an ``after`` dependency; a node's size its
    weight tensor."""
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
    return tensors, ops


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
    tensors, ops = _graph_sections(w, _bytes)
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
    return dnn_to_spec(read_dnn_json(path), name=spec_name(path), objective=objective, contiguous=contiguous)


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
    text = read_input_text(path)
    data = parse_json_bounded(text, path)
    if not isinstance(data, dict):
        raise format_error("expected a JSON object with 'fpgas' and 'cpus'", path, 1)
    index = w.index_of()
    k = w.max_fpgas
    dev = [k] * len(w.nodes) if w.max_cpus else [-1] * len(w.nodes)
    fpgas = data.get("fpgas", [])
    if isinstance(data.get("cpus", []), list) and len(data.get("cpus", [])) > w.max_cpus:
        raise format_error(f"the split uses {len(data['cpus'])} CPUs, the workload allows {w.max_cpus}", path, 1)
    if isinstance(fpgas, list) and len(fpgas) > k:
        raise format_error(f"the split uses {len(fpgas)} accelerators, the workload allows {k}", path, 1)
    for kind, offset in (("fpgas", 0), ("cpus", k)):
        entries = data.get(kind, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("nodes", []), list)
                                                    for e in entries):
            raise format_error(f"{kind!r} must be a list of objects with a list of 'nodes'", path, 1)
        for d, entry in enumerate(entries):
            for nid in entry.get("nodes", []):
                if isinstance(nid, bool) or not isinstance(nid, int) or nid not in index:
                    raise format_error(f"{kind}[{d}] names unknown node {nid!r:.40}", path,
                                       _line_of(text, rf"\b{re.escape(str(nid))}\b"))
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
