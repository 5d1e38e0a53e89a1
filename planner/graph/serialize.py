"""The graph IR as JSON: a deterministic, lossless round trip (``graph.json`` of a plan).

Layout (``version`` 1)::

    {"format": "plan-graph", "version": 1,
     "tensors": [{"name", "shape", "dtype", "kind"}, ...],          # the graph's order
     "ops": [{"name", "type", "inputs", "outputs", "attrs", "cycles",
              "model", "after"}, ...]}                               # the graph's order

Every field is always written. Lists keep the IR's order wherever it carries meaning
(tensors and ops as the graph holds them, an op's inputs, outputs and ``after``); the
mappings ``attrs`` and ``cycles`` are written with sorted keys, so the same graph always
gives the same bytes with ``json.dumps(..., sort_keys=True)`` (:func:`write_graph_json`).

Attribute values must be JSON values: ``None``, bools, ints, floats, strings, lists and
string-keyed mappings of them. Tuples are written as lists (and read back as lists);
numpy scalars and arrays are converted to their Python values. Anything else raises
``TypeError`` naming the op and the attribute.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from planner.errors import BinaryFormatError, SpecError
from planner.graph.ir import Graph, GraphError, Op, Tensor
from planner.graph.shapes import check_graph_op
from planner.reader import read_json, read_text_file

__all__ = ["GRAPH_FORMAT", "GRAPH_FORMAT_VERSION", "graph_to_dict", "graph_from_dict",
           "write_graph_json", "read_graph_json"]

GRAPH_FORMAT = "plan-graph"
GRAPH_FORMAT_VERSION = 1

_TENSOR_KEYS = ("name", "shape", "dtype", "kind")
_OP_KEYS = ("name", "type", "inputs", "outputs", "attrs", "cycles", "model", "after")
# Values written as they are (exactly these types: a subclass such as an IntEnum is converted).
_PLAIN = frozenset({str, int, bool, type(None)})


def _json_value(value: Any, where: str) -> Any:
    """``value`` as plain JSON data (tuples -> lists, numpy -> Python, sorted mappings)."""
    kind = type(value)
    if kind in _PLAIN:  # most values: no isinstance against the Mapping ABC, no path text
        return value
    if (kind is list or kind is tuple) and all(type(v) in _PLAIN for v in value):  # shapes, names
        return list(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind is dict or isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{where}: mapping keys must be strings, got {sorted(map(repr, value))}")
        return {k: _json_value(value[k], f"{where}.{k}") for k in sorted(value)}
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist) and type(value).__module__ == "numpy":
        return _json_value(tolist(), where)
    raise TypeError(f"{where}: {type(value).__name__} value {value!r} is not JSON data")


def graph_to_dict(graph: Graph) -> dict[str, Any]:
    """The graph as JSON-able data (see the module docstring for the layout).

    Parameters
    ----------
    graph : Graph
        The graph to write.

    Returns
    -------
    dict
        ``{"format", "version", "tensors", "ops"}``; :func:`graph_from_dict` inverts it.

    Raises
    ------
    TypeError
        An attribute value that is not JSON data (the message names the op and attribute).

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> g = Graph([Tensor("x", (2, 3), kind="input"), Tensor("y", (3, 2), kind="output")],
    ...           [Op("t", "transpose", ("x",), ("y",), {"perm": (1, 0)}, model="m")])
    >>> d = graph_to_dict(g)
    >>> d["version"], d["tensors"][0]
    (1, {'name': 'x', 'shape': [2, 3], 'dtype': 'fp32', 'kind': 'input'})
    >>> d["ops"][0]["attrs"], d["ops"][0]["model"]
    ({'perm': [1, 0]}, 'm')
    """
    tensors = [{"name": t.name, "shape": [int(s) for s in t.shape], "dtype": t.dtype, "kind": t.kind}
               for t in graph.tensors.values()]
    ops = []
    for op in graph.ops.values():
        ops.append({
            "name": op.name,
            "type": op.type,
            "inputs": list(op.inputs),
            "outputs": list(op.outputs),
            "attrs": _json_value(dict(op.attrs), f"op {op.name!r} attrs"),
            "cycles": {k: int(op.cycles[k]) for k in sorted(op.cycles)},
            "model": op.model,
            "after": list(op.after),
        })
    return {"format": GRAPH_FORMAT, "version": GRAPH_FORMAT_VERSION, "tensors": tensors, "ops": ops}


def _bad(message: str) -> BinaryFormatError:
    return BinaryFormatError(f"graph data: {message}")


def _fields(entry: Any, keys: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise _bad(f"{where} must be a mapping, got {type(entry).__name__}")
    missing = [k for k in keys if k not in entry]
    unknown = sorted(k for k in entry if k not in keys)
    if missing or unknown:
        raise _bad(f"{where}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else [])
            + ([f"unknown {', '.join(unknown)}"] if unknown else [])))
    return entry


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(f"{where} must be a list of strings, got {value!r}")
    return tuple(value)


def _check_header(data: Any) -> None:
    """A mapping of this format and version (JSON ``true`` or ``1.0`` is not version 1)."""
    if not isinstance(data, Mapping):
        raise _bad(f"expected a mapping, got {type(data).__name__}")
    if data.get("format") != GRAPH_FORMAT:
        raise _bad(f"format is {data.get('format')!r}, expected {GRAPH_FORMAT!r}")
    version = data.get("version")
    if type(version) is not int or version != GRAPH_FORMAT_VERSION:
        raise _bad(f"unsupported version {version!r} (this planner reads version {GRAPH_FORMAT_VERSION})")


def graph_from_dict(data: Mapping[str, Any]) -> Graph:
    """The graph :func:`graph_to_dict` wrote (validated again by :class:`Graph`).

    Parameters
    ----------
    data : mapping
        ``{"format": "plan-graph", "version": 1, "tensors": [...], "ops": [...]}``.

    Returns
    -------
    Graph
        Equal to the graph written, tensor for tensor and op for op (tuple attribute
        values come back as lists).

    Raises
    ------
    BinaryFormatError
        Another format, an unsupported version, or entries with missing, unknown or
        mistyped fields (the message says where).
    GraphError
        Data that does not form a valid graph (unknown tensors, a cycle...).

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> g = Graph([], [Op("j1", "task", cycles={"cpu": 5}), Op("j2", "task", after=("j1",))])
    >>> g2 = graph_from_dict(graph_to_dict(g))
    >>> g2.ops == g.ops, g2.topological_order()
    (True, ('j1', 'j2'))
    >>> graph_from_dict({"format": "plan-graph", "version": 9, "tensors": [], "ops": []})
    Traceback (most recent call last):
    ...
    planner.errors.BinaryFormatError: graph data: unsupported version 9 (this planner reads version 1)
    """
    _check_header(data)
    _fields(data, ("format", "version", "tensors", "ops"), "the document")
    if not isinstance(data["tensors"], list) or not isinstance(data["ops"], list):
        raise _bad("tensors and ops must be lists")
    tensors = []
    for i, entry in enumerate(data["tensors"]):
        where = f"tensors[{i}]"
        e = _fields(entry, _TENSOR_KEYS, where)
        shape = e["shape"]
        if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool)
                                                  for s in shape):
            raise _bad(f"{where}.shape must be a list of ints, got {shape!r}")
        if not all(isinstance(e[k], str) for k in ("name", "dtype", "kind")):
            raise _bad(f"{where}: name, dtype and kind must be strings")
        try:
            tensors.append(Tensor(e["name"], tuple(shape), e["dtype"], e["kind"]))
        except GraphError as err:
            raise _bad(f"{where}: {err}") from None
    ops = []
    for i, entry in enumerate(data["ops"]):
        where = f"ops[{i}]"
        e = _fields(entry, _OP_KEYS, where)
        if not all(isinstance(e[k], str) for k in ("name", "type", "model")):
            raise _bad(f"{where}: name, type and model must be strings")
        attrs, cycles = e["attrs"], e["cycles"]
        if not isinstance(attrs, Mapping):
            raise _bad(f"{where}.attrs must be a mapping, got {attrs!r}")
        if not isinstance(cycles, Mapping) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in cycles.values()):
            raise _bad(f"{where}.cycles must map device kinds to ints, got {cycles!r}")
        ops.append(Op(e["name"], e["type"], _strings(e["inputs"], f"{where}.inputs"),
                      _strings(e["outputs"], f"{where}.outputs"), dict(attrs), dict(cycles),
                      e["model"], _strings(e["after"], f"{where}.after")))
    try:  # structure, then every op against its shape contract (what the numeric replay relies on)
        graph = Graph(tensors, ops)
        for op in graph.ops.values():
            check_graph_op(op, graph)
    except GraphError as err:
        raise _bad(str(err)) from None
    return graph


def write_graph_json(graph: Graph, path: Path | str) -> Path:
    """Write ``graph`` to ``path`` as JSON (sorted keys, one-space indent, final newline).

    Examples
    --------
    >>> import tempfile
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> g = Graph([Tensor("x", (4,), kind="input"), Tensor("y", (4,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",))])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_graph_json(g, Path(d) / "graph.json")
    ...     read_graph_json(p).ops == g.ops
    True
    """
    path = Path(path)
    path.write_text(json.dumps(graph_to_dict(graph), sort_keys=True, indent=1, allow_nan=True) + "\n",
                    encoding="utf-8")
    return path


def read_graph_json(path: Path | str) -> Graph:
    """Read a graph :func:`write_graph_json` wrote.

    Raises
    ------
    BinaryFormatError
        The file is not JSON or not a graph document (the message names the file).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "graph.json"
    ...     _ = p.write_text("{not json")
    ...     read_graph_json(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.errors.BinaryFormatError: .../graph.json:1: not JSON: ...
    """
    path = Path(path)
    try:  # bounded: size, nesting, no NaN or infinities
        data = read_json(read_text_file(path, what="graph"), str(path))
    except SpecError as e:
        raise BinaryFormatError(str(e)) from None
    try:
        return graph_from_dict(data)
    except BinaryFormatError as e:
        raise BinaryFormatError(f"{path}: {e}") from None

