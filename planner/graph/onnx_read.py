"""Reading an ONNX file for import: bounded, parsed and checked before any conversion.

:func:`read_onnx_model` returns a model whose graph is known to be well formed, with
shapes inferred, or raises one :class:`~planner.errors.SpecError` naming the file and
the node or tensor at fault:

* the file is a regular file of at most :data:`~planner.input_files.MAX_ONNX_BYTES`
  that parses as an ONNX ``ModelProto`` with a graph of 1..:data:`MAX_ONNX_NODES` nodes;
* every tensor is produced once (by one node, or as a graph input or initializer), the
  nodes form no cycle (they are put in a topological order when the file lists them out
  of order), every graph output is produced;
* every node of a standard op type has an input and output count its ONNX schema allows
  (``onnx.defs``), and shape inference (strict) accepts the model;
* symbolic dimensions can be given values before inference (``dims={"N": 1}``, the
  ``--dim N=1`` option of ``plan import``).

Tensor-level checks (positive, bounded dimensions; supported element types) are made when
a tensor enters the imported graph, by :func:`tensor_shape` and :func:`tensor_dtype`, so a
tensor the graph never uses (shape metadata) may be anything.
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from planner.errors import SpecError
from planner.input_files import MAX_ONNX_BYTES, read_input_bytes

__all__ = ["MAX_ONNX_NODES", "MAX_DIM", "MAX_ELEMENTS", "ONNX_DTYPES", "read_onnx_model", "sort_and_check_nodes",
           "tensor_shape", "tensor_dtype", "check_elements", "opset_version", "parse_dim_options"]

#: At most this many nodes (the largest public CNNs and transformers have a few thousand).
MAX_ONNX_NODES = 100_000
#: A dimension of an imported tensor is at most this.
MAX_DIM = 2**31 - 1
#: An imported tensor has at most this many elements (4 TiB of fp32).
MAX_ELEMENTS = 2**40

#: ONNX element type -> IR dtype, for the types the planner supports.
ONNX_DTYPES: dict[int, str] = {1: "fp32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
                               10: "fp16", 11: "fp64", 16: "bf16", 17: "fp8", 18: "fp8", 19: "fp8", 20: "fp8"}

_INITIALIZER_KEEP_BYTES = 4096  # payloads above this are dropped before shape inference (never read)


def _error(path: Path, message: str) -> SpecError:
    return SpecError(message, file=str(path))


def opset_version(model: Any, domain: str = "") -> int:
    """The model's opset version for ``domain`` (the default ONNX domain when ``""``).

    >>> from onnx import helper
    >>> opset_version(helper.make_model(helper.make_graph([], "g", [], []),
    ...                                 opset_imports=[helper.make_opsetid("", 13)]))
    13
    """
    for o in model.opset_import:
        if (o.domain or "") in ((domain, "ai.onnx") if domain == "" else (domain,)):
            return int(o.version)
    return 1


def _node_label(node: Any, index: int) -> str:
    return f"node {node.name or index!r} ({node.op_type})" if node.name else f"node #{index} ({node.op_type})"


def _check_arity(node: Any, index: int, opset: int, path: Path) -> None:
    """Input and output counts against the op's ONNX schema (standard domain only)."""
    from onnx import defs  # optional dependency (onnx extra)

    if node.domain not in ("", "ai.onnx"):
        return
    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except Exception:  # noqa: BLE001 - SchemaError: not a standard op; strict inference names it
        return
    for what, n, lo, hi in (("input", len(node.input), schema.min_input, schema.max_input),
                            ("output", len(node.output), schema.min_output, schema.max_output)):
        if not lo <= n <= hi:
            allowed = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**30 else f"at least {lo}"
            raise _error(path, f"{_node_label(node, index)} has {n} {what}{'s' if n != 1 else ''}; "
                               f"{node.op_type} (opset {opset}) takes {allowed}")


def sort_and_check_nodes(graph: Any, path: Path, opset: int = 13) -> list[int]:
    """Node indices in a topological order; raises on duplicate producers, cycles, bad arity.

    Examples
    --------
    >>> from onnx import helper
    >>> g = helper.make_graph([helper.make_node("Relu", ["b"], ["c"], name="second"),
    ...                        helper.make_node("Relu", ["a"], ["b"], name="first")], "g", [], [])
    >>> sort_and_check_nodes(g, Path("m.onnx"))
    [1, 0]
    >>> g = helper.make_graph([helper.make_node("Relu", ["b"], ["a"], name="x"),
    ...                        helper.make_node("Relu", ["a"], ["b"], name="y")], "g", [], [])
    >>> sort_and_check_nodes(g, Path("m.onnx"))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: m.onnx: the nodes form a cycle: node 'y' (Relu) -> node 'x' (Relu) -> node 'y' (Relu)
    """
    nodes = list(graph.node)
    external = {i.name for i in graph.initializer} | {i.name for i in graph.input}
    producer: dict[str, int] = {}
    for k, node in enumerate(nodes):
        _check_arity(node, k, opset, path)
        for out in node.output:
            if not out:
                continue
            if out in producer:
                raise _error(path, f"tensor {out!r} is produced twice: by {_node_label(nodes[producer[out]], producer[out])} "
                                   f"and by {_node_label(node, k)}")
            if out in external:
                raise _error(path, f"tensor {out!r} is a graph input or initializer and also the output of "
                                   f"{_node_label(node, k)}")
            producer[out] = k
    for vi in graph.output:
        if vi.name not in producer and vi.name not in external:
            raise _error(path, f"graph output {vi.name!r} is produced by no node")
    preds = [sorted({producer[x] for x in node.input if x in producer}) for node in nodes]
    succs: list[list[int]] = [[] for _ in nodes]
    for k, ps in enumerate(preds):
        for p in ps:
            succs[p].append(k)
    indegree = [len(ps) for ps in preds]
    ready = [k for k, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for s in succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, s)
    if len(order) < len(nodes):
        raise _error(path, "the nodes form a cycle: " + _cycle_text(nodes, preds, indegree))
    return order


def _cycle_text(nodes: list, preds: list[list[int]], indegree: list[int]) -> str:
    """One cycle among the nodes left with a positive in-degree, as text."""
    start = next(k for k, d in enumerate(indegree) if d > 0)
    seen: dict[int, int] = {}
    path: list[int] = []
    k = start
    while k not in seen:
        seen[k] = len(path)
        path.append(k)
        k = next(p for p in preds[k] if indegree[p] > 0)
    cycle = path[seen[k]:][::-1]  # predecessors walked backwards: reverse into data order
    cycle.append(cycle[0])
    return " -> ".join(_node_label(nodes[i], i) for i in cycle)


def _check_text(model: Any, path: Path) -> None:
    """Names must be text: protobuf hands strings that are not UTF-8 back as bytes."""
    g = model.graph

    def strings():
        for o in model.opset_import:
            yield "an opset domain", o.domain
        for k, node in enumerate(g.node):
            where = f"node #{k}"
            yield f"{where}'s name", node.name
            yield f"{where}'s op type", node.op_type
            yield f"{where}'s domain", node.domain
            for x in (*node.input, *node.output):
                yield f"a tensor name of {where}", x
            for a in node.attribute:
                yield f"an attribute name of {where}", a.name
        for v in (*g.input, *g.output, *g.value_info, *g.initializer):
            yield "a tensor name", v.name
        for v in (*g.input, *g.output, *g.value_info):
            if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape"):
                for d in v.type.tensor_type.shape.dim:
                    yield f"a dimension name of {v.name!r}", d.dim_param

    for what, text in strings():
        if not isinstance(text, str):
            raise _error(path, f"not an ONNX model: {what} is not UTF-8 text ({bytes(text)[:40]!r})")


def _apply_dims(graph: Any, dims: Mapping[str, int], path: Path) -> None:
    """Give symbolic dimensions (``dim_param``) the values in ``dims``."""
    found: set[str] = set()
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                found.add(d.dim_param)
                if d.dim_param in dims:
                    d.dim_value = int(dims[d.dim_param])
    unknown = sorted(set(dims) - found)
    if unknown:
        names = ", ".join(sorted(found)) or "none"
        raise _error(path, f"--dim {unknown[0]}: the model has no symbolic dimension of that name "
                           f"(its symbolic dimensions: {names})")


def parse_dim_options(values: Sequence[str]) -> dict[str, int]:
    """``["N=1", "seq=128"]`` (the ``--dim`` options) -> ``{"N": 1, "seq": 128}``.

    Examples
    --------
    >>> parse_dim_options(["N=1", "seq = 128"])
    {'N': 1, 'seq': 128}
    >>> parse_dim_options(["N=0"])
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: --dim N=0: expected NAME=VALUE with a whole VALUE in 1..2,147,483,647
    """
    out: dict[str, int] = {}
    for text in values:
        name, sep, value = text.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value.isdigit() or not 1 <= int(value) <= MAX_DIM:
            raise SpecError(f"--dim {text}: expected NAME=VALUE with a whole VALUE in 1..{MAX_DIM:,}")
        if name in out:
            raise SpecError(f"--dim {text}: {name!r} is given twice")
        out[name] = int(value)
    return out


def _drop_payloads(graph: Any) -> None:
    """Clear large initializer payloads: only dims and types are read (saves a copy in inference)."""
    for init in graph.initializer:
        if init.ByteSize() > _INITIALIZER_KEEP_BYTES:
            for name in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                         "string_data"):
                init.ClearField(name)


def read_onnx_model(path: Path | str, dims: Mapping[str, int] | None = None) -> Any:
    """Read, check and shape-infer an ONNX model (see the module notes for the checks).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "m.onnx"; _ = p.write_bytes(b"# not a model\\n")
    ...     read_onnx_model(p)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: ...m.onnx: not an ONNX model: the protobuf does not parse (Error parsing message...)
    """
    import onnx  # optional dependency (onnx extra)
    from onnx import shape_inference  # optional dependency (onnx extra)

    path = Path(path)
    data = read_input_bytes(path, MAX_ONNX_BYTES)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
        text = str(e).split(":")[0] or type(e).__name__
        raise _error(path, f"not an ONNX model: the protobuf does not parse ({text})") from None
    del data
    if not model.HasField("graph") or not model.graph.node:
        raise _error(path, "not an ONNX model: it has no graph nodes")
    _check_text(model, path)
    if len(model.graph.node) > MAX_ONNX_NODES:
        raise _error(path, f"the graph has {len(model.graph.node):,} nodes; at most {MAX_ONNX_NODES:,} are imported")
    if not model.graph.output:
        raise _error(path, "the graph declares no outputs")
    order = sort_and_check_nodes(model.graph, path, opset_version(model))
    if order != sorted(order):
        nodes = [model.graph.node[k] for k in order]
        model.graph.ClearField("node")
        model.graph.node.extend(nodes)
    _apply_dims(model.graph, dims or {}, path)
    _drop_payloads(model.graph)
    try:
        model = shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as e:  # noqa: BLE001 - InferenceError, ValidationError, RuntimeError
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _error(path, f"ONNX shape inference rejects the model: {first}") from None
    return model


def tensor_shape(name: str, type_proto: Any) -> tuple[tuple[int, ...] | None, str | None]:
    """``(shape, None)`` for a fully known, positive, bounded tensor shape, else ``(None, why)``.

    ``(None, None)`` when the type carries no shape at all.

    Examples
    --------
    >>> from onnx import helper, TensorProto
    >>> tensor_shape("x", helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3]))
    ((2, 3), None)
    >>> tensor_shape("x", helper.make_tensor_type_proto(TensorProto.FLOAT, ["N", 3]))[1]
    "tensor 'x' has the symbolic dimension 'N' (shape [N, 3]); give it a value with --dim N=<value>"
    >>> tensor_shape("x", helper.make_tensor_type_proto(TensorProto.FLOAT, [0, 3]))[1]
    "tensor 'x' has dimension 0 of size 0 (shape [0, 3]); every dimension must be >= 1"
    """
    if not type_proto.HasField("tensor_type"):
        return None, f"tensor {name!r} is not a tensor (a sequence, map or optional value)"
    if not type_proto.tensor_type.HasField("shape"):
        return None, None
    dims = list(type_proto.tensor_type.shape.dim)
    text = "[" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in dims) + "]"
    out = []
    for i, d in enumerate(dims):
        if d.HasField("dim_value"):
            v = int(d.dim_value)
            if v < 1:
                return None, f"tensor {name!r} has dimension {i} of size {v} (shape {text}); every dimension must be >= 1"
            if v > MAX_DIM:
                return None, f"tensor {name!r} has dimension {i} of size {v:,} (shape {text}); at most {MAX_DIM:,}"
            out.append(v)
        elif d.dim_param:
            return None, (f"tensor {name!r} has the symbolic dimension {d.dim_param!r} (shape {text}); "
                          f"give it a value with --dim {d.dim_param}=<value>")
        else:
            return None, (f"tensor {name!r}: dimension {i} is unknown after shape inference (shape {text}); "
                          "give the graph inputs fixed shapes")
    return check_elements(name, tuple(out))


def check_elements(name: str, shape: tuple[int, ...]) -> tuple[tuple[int, ...] | None, str | None]:
    """``(shape, None)`` when the shape is positive and has at most :data:`MAX_ELEMENTS` elements.

    >>> check_elements("w", (2**21, 2**20))[1]
    "tensor 'w' has 2,199,023,255,552 elements (shape [2097152, 1048576]); at most 1,099,511,627,776"
    """
    if any(d < 1 for d in shape):
        return None, f"tensor {name!r} has a dimension below 1 (shape {list(shape)}); every dimension must be >= 1"
    n = math.prod(shape)
    if n > MAX_ELEMENTS or any(d > MAX_DIM for d in shape):
        return None, f"tensor {name!r} has {n:,} elements (shape {list(shape)}); at most {MAX_ELEMENTS:,}"
    return shape, None


def tensor_dtype(name: str, elem_type: int) -> tuple[str | None, str | None]:
    """``(dtype, None)`` for a supported ONNX element type, else ``(None, why)``.

    Examples
    --------
    >>> tensor_dtype("x", 10)
    ('fp16', None)
    >>> tensor_dtype("s", 8)[1]
    "tensor 's' has element type STRING, which the planner does not support (supported: BFLOAT16, BOOL, DOUBLE, FLOAT, FLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, INT16, INT32, INT64, INT8, UINT8)"
    """
    from onnx import TensorProto  # optional dependency (onnx extra)

    if elem_type in ONNX_DTYPES:
        return ONNX_DTYPES[elem_type], None
    try:
        tname = TensorProto.DataType.Name(elem_type)
    except ValueError:
        tname = f"#{elem_type}"
    supported = ", ".join(sorted(TensorProto.DataType.Name(t) for t in ONNX_DTYPES))
    return None, f"tensor {name!r} has element type {tname}, which the planner does not support (supported: {supported})"
