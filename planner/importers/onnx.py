"""ONNX models → graph IR (``graph: {onnx: path}`` in a spec, and ``plan import model.onnx``).

Shapes come from ONNX shape inference (:func:`onnx.shape_inference.infer_shapes`); weights
are the initializers, ``Constant`` outputs and ``ConstantOfShape`` outputs with a constant
shape (so "light" models whose weights are given as shapes only import with their real
storage). Weights count toward storage as tensors of kind ``weight``.

Op mapping (ONNX → ISA op type, see :data:`OP_MAP`):

* ``Conv`` (2-D) → ``conv2d`` (x, w) with ``stride``, ``padding``, ``groups``; a bias
  becomes a separate ``add``. ``Gemm``/``MatMul`` → ``matmul`` (a ``transB`` weight is
  declared in ``[K, N]`` layout; a transposed activation gets a ``transpose``); Gemm's
  ``C`` becomes an ``add``.
* ``Add``/``Sub``/``Sum`` → ``add`` (``Sum`` of k inputs: a chain of k-1 adds);
  ``Mul``/``Div`` → ``mul``; ``Relu`` → ``relu``; ``Gelu`` → ``gelu``; other unary
  elementwise ops (``Sigmoid``, ``Tanh``, ``Clip``, ``LeakyRelu``, ``Erf``, ``Sqrt``, ``Cast``
  ...) → ``relu`` (one vector pass over the output, the same cost).
* ``BatchNormalization`` (inference) → ``mul`` by ``scale`` then ``add`` of ``B``: the
  affine form a compiler folds it to (``mean`` and ``var`` fold into those two vectors and
  are not stored). ``LayerNormalization`` → ``layernorm``; ``Softmax``/``LogSoftmax`` →
  ``softmax`` (``axis``).
* ``MaxPool``/``AveragePool`` → ``maxpool``/``avgpool`` (``kernel``, ``stride``,
  ``padding``); ``GlobalAveragePool``/``GlobalMaxPool`` → ``global_avgpool``.
* ``Reshape``/``Flatten``/``Squeeze``/``Unsqueeze``/``Identity``/``Dropout`` →
  ``reshape`` (attr ``shape``: the output shape); ``Transpose`` → ``transpose``
  (``perm``); ``Concat`` → ``concat`` (``axis``); ``Split`` → ``split`` (``axis``, ``sizes``).
  Whether these are zero-cost views or copies is the cost model's call.

Shape-only inputs (a ``Reshape`` target, ``Slice`` starts, ``Pad`` amounts...) are not
data; ops that only compute such metadata (``Shape``, ``Gather`` on shapes...) are dropped.

**Fallback for unknown op types**: an op type not in :data:`OP_MAP` (e.g. ``LRN``,
``Resize``, ``Slice``, ``ReduceMean``) becomes an op of type ``relu`` — one vector pass
over its output elements — with all its data inputs and outputs, and attrs
``{"onnx_op": <type>, "fallback": True}``. Nothing is dropped silently: every fallback is
listed in :attr:`OnnxImport.warnings` and logged once per type at WARNING level.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import SpecError, UnsupportedError
from planner.graph.ir import Op, Tensor

__all__ = ["OP_MAP", "OnnxImport", "import_onnx", "load_onnx_graph", "import_onnx_to_spec",
           "graph_to_spec_dict"]

log = logging.getLogger(__name__)

#: ONNX op type → ISA op type, for the one-to-one cases (others are handled specially).
OP_MAP: dict[str, str] = {
    "Add": "add", "Sub": "add", "Mul": "mul", "Div": "mul",
    "Relu": "relu", "Gelu": "gelu",
    "Sigmoid": "relu", "Tanh": "relu", "Clip": "relu", "LeakyRelu": "relu", "PRelu": "relu",
    "Elu": "relu", "Selu": "relu", "HardSigmoid": "relu", "HardSwish": "relu", "Softplus": "relu",
    "Erf": "relu", "Sqrt": "relu", "Exp": "relu", "Log": "relu", "Neg": "relu", "Abs": "relu",
    "Reciprocal": "relu", "Pow": "relu", "Cast": "relu", "Max": "add", "Min": "add",
    "Softmax": "softmax", "LogSoftmax": "softmax",
    "LayerNormalization": "layernorm",
    "MaxPool": "maxpool", "AveragePool": "avgpool",
    "GlobalAveragePool": "global_avgpool", "GlobalMaxPool": "global_avgpool",
    "Reshape": "reshape", "Flatten": "reshape", "Squeeze": "reshape", "Unsqueeze": "reshape",
    "Identity": "reshape", "Dropout": "reshape",
    "Transpose": "transpose", "Concat": "concat", "Split": "split",
    "Conv": "conv2d", "Gemm": "matmul", "MatMul": "matmul", "BatchNormalization": "mul",
    "Sum": "add",
}

# Input positions that carry shapes/indices/scalars, not data (by ONNX op type).
_META_INPUTS: dict[str, range] = {
    "Reshape": range(1, 2), "Expand": range(1, 2), "Tile": range(1, 2), "Squeeze": range(1, 2),
    "Unsqueeze": range(1, 2), "Split": range(1, 2), "Slice": range(1, 5), "Pad": range(1, 4),
    "Resize": range(1, 4), "Upsample": range(1, 2), "ConstantOfShape": range(0, 1),
    "ReduceMean": range(1, 2), "ReduceSum": range(1, 2), "ReduceMax": range(1, 2),
    "TopK": range(1, 2), "OneHot": range(1, 3), "Clip": range(1, 3), "Range": range(0, 3),
    "Dropout": range(1, 3), "CumSum": range(1, 2),
}
# Ops that only compute metadata when their outputs feed metadata slots.
_METADATA_OPS = {"Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Slice",
                 "Constant", "Range", "Mul", "Add", "Sub", "Div", "Equal", "Where", "Reshape",
                 "ReduceProd", "ConstantOfShape", "Floor", "Ceil"}

_WEIGHT_VIEWS = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose", "Identity", "Cast"}

_DTYPES = {1: "fp32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "fp16", 11: "fp64", 16: "bf16", 17: "fp8", 18: "fp8", 19: "fp8", 20: "fp8"}


@dataclass
class OnnxImport:
    """The result of importing one ONNX model.

    ``fallback_ops`` counts unknown ONNX op types (each costed as a vector pass over its
    output); ``warnings`` lists every approximation made, in a stable order.

    Examples
    --------
    >>> imp = OnnxImport([Tensor("w", (4, 4), kind="weight")], [])
    >>> imp.weight_bytes, imp.warnings
    (64, [])
    """

    tensors: list[Tensor]
    ops: list[Op]
    warnings: list[str] = field(default_factory=list)
    fallback_ops: dict[str, int] = field(default_factory=dict)
    onnx_op_counts: dict[str, int] = field(default_factory=dict)

    @property
    def weight_bytes(self) -> int:
        return sum(t.size_bytes for t in self.tensors if t.kind == "weight")


class _Ctx:
    def __init__(self, prefix: str, model_name: str) -> None:
        self.prefix, self.model = prefix, model_name
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self.op_names: set[str] = set()
        self.warnings: list[str] = []
        self._fresh = 0

    def n(self, name: str) -> str:
        return self.prefix + name

    def fresh(self, base: str) -> str:
        self._fresh += 1
        return f"{base}__{self._fresh}"

    def tensor(self, name: str, shape: tuple[int, ...] | None = None, dtype: str | None = None,
               kind: str | None = None) -> str:
        full = self.n(name)
        if full not in self.tensors:
            shp = shape if shape is not None else self.shapes.get(name)
            if shp is None:
                self.warnings.append(f"tensor {name!r}: shape unknown after shape inference; using [1]")
                shp = (1,)
            if any(s <= 0 for s in shp):
                self.warnings.append(f"tensor {name!r}: dynamic or zero dims in {list(shp)}; using 1")
                shp = tuple(s if s > 0 else 1 for s in shp)
            self.tensors[full] = Tensor(full, shp, dtype or self.dtypes.get(name, "fp32"),
                                        kind or self.kinds.get(name, "activation"))
        return full

    def op(self, name: str, type_: str, inputs: list[str], outputs: list[str], **attrs: Any) -> None:
        base = name
        while self.n(name) in self.op_names:
            name = self.fresh(base)
        self.op_names.add(self.n(name))
        self.ops.append(Op(self.n(name), type_, tuple(self.tensor(i) for i in inputs),
                           tuple(self.tensor(o) for o in outputs), attrs, model=self.model))


def _dims(type_proto: Any) -> tuple[int, ...] | None:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    out = []
    for d in type_proto.tensor_type.shape.dim:
        out.append(d.dim_value if d.HasField("dim_value") else 0)
    return tuple(out)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        out[a.name] = v
    return out


def _one(values: Any, default: int, what: str, ctx: _Ctx, node_name: str) -> int:
    vals = list(values) if values else []
    if not vals:
        return default
    if len(set(vals)) > 1:
        ctx.warnings.append(f"op {node_name!r}: non-uniform {what} {vals}; using {vals[0]}")
    return int(vals[0])


def import_onnx(path: Path | str, model_name: str = "") -> OnnxImport:
    """Import an ONNX file as tensors and ops of the graph IR, with its warnings.

    Names are prefixed ``"<model_name>/"`` when ``model_name`` is given, and every op's
    ``model`` is set to it.

    Examples
    --------
    >>> import tempfile
    >>> from onnx import helper, TensorProto
    >>> g = helper.make_graph(
    ...     [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"]),
    ...      helper.make_node("LRN", ["y"], ["z"], size=3)],
    ...     "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
    ...     [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])],
    ...     [helper.make_tensor("w", TensorProto.FLOAT, [8, 4], [0.0] * 32)])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "m.onnx"
    ...     helper.onnx.save(helper.make_model(g), p)
    ...     imp = import_onnx(p, "m")
    >>> [(o.name, o.type) for o in imp.ops]
    [('m/MatMul_0', 'matmul'), ('m/Relu_1', 'relu'), ('m/LRN_2', 'relu')]
    >>> imp.fallback_ops, imp.weight_bytes
    ({'LRN': 1}, 128)
    """
    import onnx
    from onnx import numpy_helper, shape_inference

    path = Path(path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf raises DecodeError and friends
        raise SpecError(f"cannot read ONNX model: {e}", file=str(path)) from None
    try:
        model = shape_inference.infer_shapes(model)
    except Exception as e:
        log.warning("ONNX shape inference failed for %s (%s); using declared shapes only", path, e)
    graph = model.graph
    ctx = _Ctx(f"{model_name}/" if model_name else "", model_name)

    consts: dict[str, Any] = {}  # name -> numpy array (small metadata values) or None
    init_names = set()
    for init in graph.initializer:
        init_names.add(init.name)
        ctx.shapes[init.name] = tuple(init.dims)
        ctx.dtypes[init.name] = _DTYPES.get(init.data_type, "fp32")
        ctx.kinds[init.name] = "weight"
        if math.prod(init.dims) <= 64 and init.data_location == 0:
            try:
                consts[init.name] = numpy_helper.to_array(init)
            except Exception:  # noqa: BLE001 - metadata only; a weight works without values
                consts[init.name] = None
        else:
            consts[init.name] = None
    for vi in (*graph.input, *graph.value_info, *graph.output):
        shp = _dims(vi.type)
        if shp is not None and vi.name not in init_names:
            ctx.shapes[vi.name] = shp
        et = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 1
        if vi.name not in init_names:
            ctx.dtypes[vi.name] = _DTYPES.get(et, "fp32")
    for vi in graph.input:
        if vi.name not in init_names:
            ctx.kinds[vi.name] = "input"
    for vi in graph.output:
        ctx.kinds[vi.name] = "output"

    nodes = list(graph.node)
    counts = Counter(n.op_type for n in nodes)
    # Constants and ConstantOfShape with a constant shape become weights (no op).
    produced_by_weight: set[str] = set()
    graph_out_names = {vi.name for vi in graph.output}
    for node in nodes:
        if node.op_type == "Constant":
            a = _attrs(node)
            t = a.get("value")
            if t is not None and hasattr(t, "dims"):
                ctx.shapes[node.output[0]] = tuple(t.dims)
                ctx.dtypes[node.output[0]] = _DTYPES.get(t.data_type, "fp32")
                consts[node.output[0]] = numpy_helper.to_array(t) if math.prod(t.dims) <= 64 else None
            else:
                ctx.shapes.setdefault(node.output[0], ())
                consts[node.output[0]] = None
            ctx.kinds[node.output[0]] = "weight"
            produced_by_weight.add(node.output[0])
        elif node.op_type == "ConstantOfShape" and node.input and consts.get(node.input[0]) is not None:
            shape = tuple(int(x) for x in consts[node.input[0]].reshape(-1))
            ctx.shapes[node.output[0]] = shape
            a = _attrs(node)
            if "value" in a and hasattr(a["value"], "data_type"):
                ctx.dtypes[node.output[0]] = _DTYPES.get(a["value"].data_type, "fp32")
            ctx.kinds[node.output[0]] = "weight"
            produced_by_weight.add(node.output[0])
        elif (node.op_type in _WEIGHT_VIEWS and node.input and len(node.output) == 1
              and all(ctx.kinds.get(x) == "weight" for x in node.input[:1])
              and node.output[0] in ctx.shapes and node.output[0] not in graph_out_names):
            # A view of a weight (e.g. Unsqueeze of a scale vector) is folded into a weight.
            ctx.kinds[node.output[0]] = "weight"
            ctx.dtypes.setdefault(node.output[0], ctx.dtypes.get(node.input[0], "fp32"))
            produced_by_weight.add(node.output[0])

    # Which tensors are consumed as data (not metadata)? Fixpoint backwards.
    def data_inputs(node: Any) -> list[str]:
        meta = _META_INPUTS.get(node.op_type, range(0))
        return [x for k, x in enumerate(node.input) if x and k not in meta]

    graph_outputs = {vi.name for vi in graph.output}
    needed: set[str] = set(graph_outputs)
    keep = [False] * len(nodes)
    changed = True
    while changed:
        changed = False
        for k in range(len(nodes) - 1, -1, -1):
            node = nodes[k]
            if keep[k] or node.op_type == "Constant" or node.output[0] in produced_by_weight:
                continue
            if node.op_type not in _METADATA_OPS or any(o in needed for o in node.output):
                keep[k] = True
                changed = True
                needed.update(data_inputs(node))
    dropped_meta = Counter(n.op_type for n, kk in zip(nodes, keep)
                           if not kk and n.op_type != "Constant" and n.output[0] not in produced_by_weight)
    if dropped_meta:
        ctx.warnings.append("shape-only ops dropped: " + ", ".join(f"{t} x{c}" for t, c in
                                                                     sorted(dropped_meta.items())))

    fallback: Counter[str] = Counter()
    for k, node in enumerate(nodes):
        if not keep[k]:
            continue
        name = node.name or f"{node.op_type}_{k}"
        ins = data_inputs(node)
        for x in ins:  # a data input nobody produces and that is no graph input: a weight
            if x not in ctx.kinds and not any(x in n.output for n in nodes):
                ctx.kinds[x] = "weight"
        outs = [o for o in node.output if o]
        _convert(ctx, node, name, ins, outs, fallback)
    for t, c in sorted(fallback.items()):
        msg = (f"unknown ONNX op type {t!r} ({c} op{'s' if c > 1 else ''}): costed as one vector "
               "pass over its output elements (type 'relu', attrs fallback=True)")
        ctx.warnings.append(msg)
        log.warning("%s: %s", path.name, msg)
    # Tensors referenced by ops, in first-use order; graph outputs keep kind "output".
    return OnnxImport(list(ctx.tensors.values()), ctx.ops, ctx.warnings, dict(sorted(fallback.items())),
                      dict(sorted(counts.items())))


def _convert(ctx: _Ctx, node: Any, name: str, ins: list[str], outs: list[str],
             fallback: Counter[str]) -> None:
    t = node.op_type
    a = _attrs(node)
    out = outs[0] if outs else None

    def per_channel(weight: str, x: str) -> None:
        # A [C] vector applied to [N, C, H, W] is declared [C, 1, 1] so it broadcasts over the
        # channel axis (numpy aligns trailing axes: [C] would meet W).
        shape, xshape = ctx.shapes.get(weight), ctx.shapes.get(x)
        if (shape is not None and len(shape) == 1 and xshape is not None and len(xshape) == 4
                and ctx.kinds.get(weight) == "weight" and ctx.n(weight) not in ctx.tensors):
            ctx.shapes[weight] = (shape[0], 1, 1)

    def add_bias(src_out: str, bias: str | None, final: str) -> None:
        if bias is None:
            return
        per_channel(bias, final)
        ctx.op(name + "_bias", "add", [src_out, bias], [final])

    if t == "Conv":
        x, w = ins[0], ins[1]
        wshape = ctx.shapes.get(w)
        if wshape is None or len(wshape) != 4:
            return _fallback(ctx, node, name, ins, outs, fallback)
        pads = list(a.get("pads", []))
        auto = a.get("auto_pad", "NOTSET")
        stride = _one(a.get("strides"), 1, "strides", ctx, name)
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pad = (wshape[2] - 1) // 2
        else:
            pad = _one(pads, 0, "pads", ctx, name)
        if any(d != 1 for d in a.get("dilations", [])):
            ctx.warnings.append(f"op {name!r}: dilation {list(a['dilations'])} costed as a dense conv2d")
        bias = ins[2] if len(ins) > 2 else None
        mid = ctx.fresh(out) if bias else out
        if bias:
            ctx.shapes[mid], ctx.dtypes[mid] = ctx.shapes.get(out), ctx.dtypes.get(out, "fp32")
        ctx.op(name, "conv2d", [x, w], [mid], stride=stride, padding=pad, groups=int(a.get("group", 1)))
        add_bias(mid, bias, out)
    elif t in ("Gemm", "MatMul"):
        A, B = ins[0], ins[1]
        sa, sb = ctx.shapes.get(A), ctx.shapes.get(B)
        if sa is None or sb is None or len(sa) < 2 or len(sb) < 2:
            return _fallback(ctx, node, name, ins, outs, fallback)
        if a.get("transA", 0):
            At = ctx.fresh(A)
            ctx.shapes[At], ctx.dtypes[At] = (*sa[:-2], sa[-1], sa[-2]), ctx.dtypes.get(A, "fp32")
            ctx.op(name + "_transA", "transpose", [A], [At], perm=[*range(len(sa) - 2), len(sa) - 1, len(sa) - 2])
            A = At
        if a.get("transB", 0):
            if ctx.kinds.get(B) == "weight" and ctx.n(B) not in ctx.tensors:
                ctx.shapes[B] = (*sb[:-2], sb[-1], sb[-2])  # declare the weight in [K, N] layout
            else:
                Bt = ctx.fresh(B)
                ctx.shapes[Bt], ctx.dtypes[Bt] = (*sb[:-2], sb[-1], sb[-2]), ctx.dtypes.get(B, "fp32")
                ctx.op(name + "_transB", "transpose", [B], [Bt],
                       perm=[*range(len(sb) - 2), len(sb) - 1, len(sb) - 2])
                B = Bt
        bias = ins[2] if t == "Gemm" and len(ins) > 2 else None
        mid = ctx.fresh(out) if bias else out
        if bias:
            ctx.shapes[mid], ctx.dtypes[mid] = ctx.shapes.get(out), ctx.dtypes.get(out, "fp32")
        ctx.op(name, "matmul", [A, B], [mid])
        add_bias(mid, bias, out)
    elif t == "BatchNormalization":
        x, scale, bias = ins[0], ins[1], ins[2]
        per_channel(scale, x)
        per_channel(bias, x)
        mid = ctx.fresh(out)
        ctx.shapes[mid], ctx.dtypes[mid] = ctx.shapes.get(out), ctx.dtypes.get(out, "fp32")
        ctx.op(name, "mul", [x, scale], [mid])
        ctx.op(name + "_shift", "add", [mid, bias], [out])
    elif t in ("Sum", "Max", "Min") and len(ins) > 2:
        acc = ins[0]
        for j, x in enumerate(ins[1:], start=1):
            dst = out if j == len(ins) - 1 else ctx.fresh(out)
            if dst != out:
                ctx.shapes[dst], ctx.dtypes[dst] = ctx.shapes.get(out), ctx.dtypes.get(out, "fp32")
            ctx.op(name if j == 1 else f"{name}_{j}", "add", [acc, x], [dst])
            acc = dst
    elif t in ("Sum", "Max", "Min", "Identity", "Dropout", "Cast") and len(ins) == 1:
        ctx.op(name, "reshape", ins, outs[:1], shape=list(ctx.shapes.get(out) or (1,)))
    elif t in ("MaxPool", "AveragePool"):
        k = list(a.get("kernel_shape", []))
        if len(k) != 2:
            return _fallback(ctx, node, name, ins, outs, fallback)
        if a.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
            pad = (k[0] - 1) // 2
        else:
            pad = _one(a.get("pads"), 0, "pads", ctx, name)
        ctx.op(name, OP_MAP[t], ins[:1], outs[:1], kernel=_one(k, 1, "kernel_shape", ctx, name),
               stride=_one(a.get("strides"), 1, "strides", ctx, name), padding=pad)
    elif t in ("Softmax", "LogSoftmax"):
        rank = len(ctx.shapes.get(ins[0]) or (1,))
        axis = int(a.get("axis", -1))
        ctx.op(name, "softmax", ins[:1], outs[:1], axis=axis % rank if rank else 0)
    elif t == "LayerNormalization":
        rank = len(ctx.shapes.get(ins[0]) or (1,))
        ctx.op(name, "layernorm", ins[:3], outs[:1], axis=int(a.get("axis", -1)) % max(rank, 1))
    elif t in ("Reshape", "Flatten", "Squeeze", "Unsqueeze"):
        ctx.op(name, "reshape", ins[:1], outs[:1], shape=list(ctx.shapes.get(out) or (1,)))
    elif t == "Transpose":
        rank = len(ctx.shapes.get(ins[0]) or ())
        perm = list(a.get("perm", range(rank - 1, -1, -1)))
        ctx.op(name, "transpose", ins[:1], outs[:1], perm=[int(p) for p in perm])
    elif t == "Concat":
        rank = len(ctx.shapes.get(out) or (1,))
        ctx.op(name, "concat", ins, outs[:1], axis=int(a.get("axis", 0)) % max(rank, 1))
    elif t == "Split":
        rank = len(ctx.shapes.get(ins[0]) or (1,))
        axis = int(a.get("axis", 0)) % max(rank, 1)
        sizes = [int((ctx.shapes.get(o) or (1,) * (axis + 1))[axis]) for o in outs]
        ctx.op(name, "split", ins[:1], outs, axis=axis, sizes=sizes)
    elif t in ("GlobalAveragePool", "GlobalMaxPool", "Relu", "Gelu") or (t in OP_MAP and OP_MAP[t] == "relu"):
        ctx.op(name, OP_MAP[t], ins[:1], outs[:1])
    elif t in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"):
        ctx.op(name, OP_MAP[t], ins[:2], outs[:1])
    else:
        _fallback(ctx, node, name, ins, outs, fallback)


def _fallback(ctx: _Ctx, node: Any, name: str, ins: list[str], outs: list[str],
              fallback: Counter[str]) -> None:
    fallback[node.op_type] += 1
    if not outs:
        ctx.warnings.append(f"op {name!r} ({node.op_type}) has no outputs; skipped")
        return
    ctx.op(name, "relu", ins, outs, onnx_op=node.op_type, fallback=True)


def load_onnx_graph(path: Path, model_name: str) -> tuple[list[Tensor], list[Op]]:
    """Tensors and ops of an ONNX model, for ``graph: {onnx: path}`` in a spec.

    Approximations and fallbacks are logged (logger ``planner.importers.onnx``); use
    :func:`import_onnx` to get them as a list.

    Examples
    --------
    >>> import tempfile
    >>> from onnx import helper, TensorProto
    >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4, 4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4, 4])])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "r.onnx"; helper.onnx.save(helper.make_model(g), p)
    ...     tensors, ops = load_onnx_graph(p, "r")
    >>> [(t.name, t.dtype, t.kind) for t in tensors]
    [('r/x', 'fp16', 'input'), ('r/y', 'fp16', 'output')]
    """
    try:
        import onnx  # noqa: F401
    except ImportError:  # pragma: no cover - onnx is a test dependency
        raise UnsupportedError("ONNX import needs the 'onnx' package: pip install 'plan[onnx]'") from None
    return (imp := import_onnx(path, model_name)).tensors, imp.ops


def graph_to_spec_dict(tensors: list[Tensor], ops: list[Op]) -> dict[str, Any]:
    """The inline ``graph:`` section (``tensors`` and ``ops``) of a spec.

    Examples
    --------
    >>> graph_to_spec_dict([Tensor("x", (2,)), Tensor("y", (2,), kind="output")],
    ...                    [Op("r", "relu", ("x",), ("y",))])["ops"]
    [{'name': 'r', 'type': 'relu', 'inputs': ['x'], 'outputs': ['y']}]
    """
    ts = [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "kind": t.kind} for t in tensors]
    os_ = []
    for o in ops:
        d: dict[str, Any] = {"name": o.name, "type": o.type, "inputs": list(o.inputs), "outputs": list(o.outputs)}
        if o.attrs:
            d["attrs"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in o.attrs.items()}
        os_.append(d)
    return {"tensors": ts, "ops": os_}


def import_onnx_to_spec(path: Path | str, inline: bool = True, profile: str = "tpu-v4") -> dict[str, Any]:
    """A spec dict for an ONNX model on one device (edit the hardware afterwards).

    With ``inline`` the graph is written out (tensors and ops, names without a model
    prefix: the spec loader adds it); otherwise the spec refers to the file
    (``graph: {onnx: <absolute path>}``).

    Examples
    --------
    >>> import tempfile
    >>> from onnx import helper, TensorProto
    >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "r.onnx"; helper.onnx.save(helper.make_model(g), p)
    ...     spec = import_onnx_to_spec(p)
    >>> spec["models"][0]["graph"]["ops"]
    [{'name': 'Relu_0', 'type': 'relu', 'inputs': ['x'], 'outputs': ['y']}]
    """
    path = Path(path)
    if inline:
        imp = import_onnx(path, "")
        graph: dict[str, Any] = graph_to_spec_dict(imp.tensors, imp.ops)
    else:
        graph = {"onnx": str(path.resolve())}
    return {
        "version": 1,
        "name": path.stem,
        "hardware": {"devices": [{"name": "acc", "profile": profile, "count": 1}]},
        "models": [{"name": path.stem, "graph": graph}],
        "objective": "latency",
    }
