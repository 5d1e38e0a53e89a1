"""ONNX nodes → ISA ops: the conversion behind :func:`planner.importers.onnx.import_onnx`.

Works on a model :func:`~planner.graph.onnx_read.read_onnx_model` has checked (nodes in
topological order, each tensor produced once, shapes inferred). Every tensor that enters
the imported graph has a known, positive, bounded shape and a supported element type, or
the import stops with an error naming it. Every op whose computation differs from the ONNX
node's carries ``attrs: {onnx_op: <type>, approximation: <what differs>}`` and is counted in
:attr:`OnnxImport.approximations`; ops the planner only costs carry ``fallback: true``.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from planner.errors import SpecError, UnsupportedError
from planner.graph.ir import Op, Tensor
from planner.graph.onnx_read import MAX_DIM, check_elements, opset_version, read_onnx_model, tensor_dtype, tensor_shape

__all__ = ["OP_MAP", "APPROXIMATIONS", "OnnxImport", "convert_model", "import_onnx", "load_onnx_graph"]

log = logging.getLogger("planner.importers.onnx")

#: ONNX op type → ISA op type, for the one-to-one cases (others are handled specially).
OP_MAP: dict[str, str] = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "mul",
    "Relu": "relu", "Gelu": "gelu", "Sigmoid": "sigmoid", "Tanh": "tanh",
    "Clip": "relu", "LeakyRelu": "relu", "PRelu": "relu",
    "Elu": "relu", "Selu": "relu", "HardSigmoid": "relu", "HardSwish": "relu", "Softplus": "relu",
    "Erf": "relu", "Sqrt": "relu", "Exp": "relu", "Log": "relu", "Neg": "relu", "Abs": "relu",
    "Reciprocal": "relu", "Pow": "relu", "Cast": "reshape", "Max": "add", "Min": "add",
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

_UNARY_AS_RELU = ("Clip", "LeakyRelu", "PRelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Erf",
                  "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Pow")
#: ONNX op types always imported as a different computation: type → what is computed instead.
#: (Attribute-level approximations, e.g. asymmetric pads, are named per op when they occur.)
APPROXIMATIONS: dict[str, str] = {
    "Div": "computed as mul", "Max": "computed as add", "Min": "computed as add",
    "GlobalMaxPool": "computed as global_avgpool", "LogSoftmax": "computed as softmax (no log)",
    **{t: "computed as relu (one vector pass, the same cost)" for t in _UNARY_AS_RELU},
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
# Data inputs a mapped op needs (by position in node.input); fewer is a malformed node.
_REQUIRED_INPUTS = {"Conv": 2, "Gemm": 2, "MatMul": 2, "BatchNormalization": 3, "Add": 2, "Sub": 2, "Mul": 2,
                    "Div": 2, "LayerNormalization": 1}
_FLOAT_DTYPES = ("fp32", "fp16", "fp64", "bf16", "fp8")
_MAX_NAME = 200


@dataclass
class OnnxImport:
    """The result of importing one ONNX model.

    ``fallback_ops`` counts op types the planner only costs (a vector pass over the
    output); ``approximations`` counts every computation that differs from the ONNX node,
    by description; ``warnings`` lists both in words, in a stable order.

    Examples
    --------
    >>> imp = OnnxImport([Tensor("w", (4, 4), kind="weight")], [])
    >>> imp.weight_bytes, imp.warnings, imp.notes()
    (64, [], [])
    """

    tensors: list[Tensor]
    ops: list[Op]
    warnings: list[str] = field(default_factory=list)
    fallback_ops: dict[str, int] = field(default_factory=dict)
    onnx_op_counts: dict[str, int] = field(default_factory=dict)
    approximations: dict[str, int] = field(default_factory=dict)

    @property
    def weight_bytes(self) -> int:
        return sum(t.size_bytes for t in self.tensors if t.kind == "weight")

    def notes(self) -> list[str]:
        """One line per approximation and per costed-only op type (for the import output).

        >>> OnnxImport([], [], approximations={"Div: computed as mul": 2}, fallback_ops={"LRN": 1}).notes()
        ['Div: computed as mul (2 ops)', 'LRN: costed only, as one vector pass (no arithmetic; 1 op)']
        """
        out = [f"{what} ({n} op{'s' if n != 1 else ''})" for what, n in sorted(self.approximations.items())]
        out += [f"{t}: costed only, as one vector pass (no arithmetic; {n} op{'s' if n != 1 else ''})"
                for t, n in sorted(self.fallback_ops.items())]
        return out


class _Ctx:
    """Names, shapes, dtypes and kinds of the model's tensors, and the ops made so far."""

    def __init__(self, prefix: str, model_name: str, path: Path, raw_names: set[str]) -> None:
        self.prefix, self.model, self.path = prefix, model_name, path
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.problems: dict[str, str] = {}  # tensor -> why its shape cannot enter the graph
        self.dtype_problems: dict[str, str] = {}  # tensor -> why its element type cannot
        self.dtypes: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self.op_names: set[str] = set()
        self.warnings: list[str] = []
        self.approximations: Counter[str] = Counter()
        self.fallback_reasons: dict[str, set[str]] = {}
        self.raw_names = raw_names
        self._clean: dict[str, str] = {}
        self._taken: set[str] = set()
        self._fresh = 0

    def error(self, message: str) -> SpecError:
        return SpecError(message, file=str(self.path))

    def n(self, name: str) -> str:
        """The IR name of an ONNX name: printable, at most ~200 characters, unique."""
        if name not in self._clean:
            s = "".join(c if c.isprintable() and not c.isspace() else "_" for c in name) or "_"
            if len(s) > _MAX_NAME:
                s = s[:_MAX_NAME - 13] + "_" + hashlib.sha1(name.encode("utf-8", "replace")).hexdigest()[:12]
            while s in self._taken:
                s += "_"
            self._taken.add(s)
            self._clean[name] = s
        return self.prefix + self._clean[name]

    def fresh(self, base: str) -> str:
        while True:
            self._fresh += 1
            name = f"{base}__{self._fresh}"
            if name not in self.raw_names:
                return name

    def note_shape(self, name: str, shape: tuple[int, ...] | None, why: str | None) -> None:
        if shape is not None:
            self.shapes[name] = shape
            self.problems.pop(name, None)
        elif why is not None:
            self.problems.setdefault(name, why)

    def like(self, new: str, template: str | None) -> None:
        """Give a fresh tensor the shape and dtype of ``template``."""
        if template is not None and template in self.shapes:
            self.shapes[new] = self.shapes[template]
        if template is not None and template in self.problems:
            self.problems[new] = self.problems[template]
        if template is not None and template in self.dtype_problems:
            self.dtype_problems[new] = self.dtype_problems[template]
        self.dtypes[new] = self.dtypes.get(template or "", "fp32")

    def tensor(self, name: str) -> str:
        full = self.n(name)
        if full not in self.tensors:
            if name in self.dtype_problems:
                raise self.error(self.dtype_problems[name])
            shp = self.shapes.get(name)
            if shp is None:
                raise self.error(self.problems.get(name) or
                                 f"tensor {name!r}: shape unknown after shape inference; give the graph "
                                 "inputs fixed shapes")
            self.tensors[full] = Tensor(full, shp, self.dtypes.get(name, "fp32"), self.kinds.get(name, "activation"))
        return full

    def op(self, name: str, type_: str, inputs: list[str], outputs: list[str], *, onnx_op: str | None = None,
           approximation: str | None = None, **attrs: Any) -> None:
        base = name
        while self.n(name) in self.op_names:
            name = self.fresh(base)
        if approximation is not None:
            attrs.update(onnx_op=onnx_op, approximation=approximation)
            self.approximations[f"{onnx_op}: {approximation}"] += 1
        elif onnx_op is not None:
            attrs["onnx_op"] = onnx_op
        self.op_names.add(self.n(name))
        self.ops.append(Op(self.n(name), type_, tuple(self.tensor(i) for i in inputs),
                           tuple(self.tensor(o) for o in outputs), attrs, model=self.model))


class _Attrs:
    """A node's attributes, read with their types checked (a malformed one names the node)."""

    def __init__(self, node: Any, label: str, ctx: _Ctx) -> None:
        from onnx import helper  # optional dependency (onnx extra)

        self.label, self.ctx, self.values = label, ctx, {}
        for a in node.attribute:
            try:
                self.values[a.name] = helper.get_attribute_value(a)
            except Exception:  # noqa: BLE001 - an attribute of an unknown type
                self.values[a.name] = None

    def _bad(self, key: str, want: str) -> SpecError:
        return self.ctx.error(f"{self.label}: attribute {key!r} must be {want}, got {self.values.get(key)!r:.80}")

    def int(self, key: str, default: int) -> int:
        v = self.values.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or abs(v) > MAX_DIM:
            raise self._bad(key, f"an integer of at most {MAX_DIM:,} in size")
        return v

    def ints(self, key: str) -> list[int]:
        v = self.values.get(key, [])
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) and abs(x) <= MAX_DIM for x in v):
            raise self._bad(key, "a list of integers")
        return list(v)

    def float(self, key: str, default: float) -> float:
        v = self.values.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not abs(v) < 1e300:  # NaN and inf fail too
            raise self._bad(key, "a finite number")
        return float(v)

    def str(self, key: str, default: str) -> str:
        v = self.values.get(key, default)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        if not isinstance(v, str):
            raise self._bad(key, "a string")
        return v

    def has(self, key: str) -> bool:
        return key in self.values


def _label(node: Any, name: str) -> str:
    return f"node {name!r} ({node.op_type})"


# --------------------------------------------------------------------------- model level
def _collect(ctx: _Ctx, graph: Any, consts: dict[str, Any]) -> None:
    """Shapes, dtypes and kinds of initializers and declared values; small constants' values."""
    from onnx import numpy_helper  # optional dependency (onnx extra)

    for init in graph.initializer:
        ctx.note_shape(init.name, *check_elements(init.name, tuple(int(d) for d in init.dims)))
        dtype, why = tensor_dtype(init.name, init.data_type)
        if dtype is not None:
            ctx.dtypes[init.name] = dtype
        else:
            ctx.dtype_problems[init.name] = why
        ctx.kinds[init.name] = "weight"
        consts[init.name] = None
        if 0 < math.prod(init.dims) <= 64 and init.data_location == 0 and all(d > 0 for d in init.dims):
            try:
                consts[init.name] = numpy_helper.to_array(init)
            except Exception:  # noqa: BLE001 - metadata only; a weight works without values
                pass
    init_names = set(consts)
    for vi in (*graph.input, *graph.value_info, *graph.output):
        if vi.name in init_names:
            continue
        ctx.note_shape(vi.name, *tensor_shape(vi.name, vi.type))
        if vi.type.HasField("tensor_type"):
            dtype, why = tensor_dtype(vi.name, vi.type.tensor_type.elem_type)
            if dtype is not None:
                ctx.dtypes[vi.name] = dtype
                ctx.dtype_problems.pop(vi.name, None)
            else:
                ctx.dtype_problems[vi.name] = why
    for vi in graph.input:
        if vi.name not in init_names:
            ctx.kinds[vi.name] = "input"
    for vi in graph.output:
        ctx.kinds[vi.name] = "output"


def _fold_weights(ctx: _Ctx, nodes: list, consts: dict[str, Any], graph_outputs: set[str]) -> set[str]:
    """Constants, constant-shaped ConstantOfShape and views of weights become weights (no op)."""
    from onnx import numpy_helper  # optional dependency (onnx extra)

    weights: set[str] = set()
    for node in nodes:
        out = node.output[0] if node.output else ""
        if not out:
            continue
        if node.op_type == "Constant":
            t = _Attrs(node, node.op_type, ctx).values.get("value")
            consts[out] = None
            if t is not None and hasattr(t, "dims"):
                ctx.note_shape(out, *check_elements(out, tuple(int(d) for d in t.dims)))
                dtype, why = tensor_dtype(out, t.data_type)
                ctx.dtypes[out] = dtype or "fp32"
                if why:
                    ctx.dtype_problems[out] = why
                if all(d > 0 for d in t.dims) and math.prod(t.dims) <= 64:
                    try:
                        consts[out] = numpy_helper.to_array(t)
                    except Exception:  # noqa: BLE001 - metadata only
                        pass
            else:
                ctx.shapes.setdefault(out, ())
            ctx.kinds[out] = "weight"
            weights.add(out)
        elif node.op_type == "ConstantOfShape" and node.input and consts.get(node.input[0]) is not None:
            try:
                shape = tuple(int(x) for x in consts[node.input[0]].reshape(-1))
            except (TypeError, ValueError, OverflowError):
                continue
            ctx.note_shape(out, *check_elements(out, shape))
            value = _Attrs(node, node.op_type, ctx).values.get("value")
            if value is not None and hasattr(value, "data_type"):
                dtype, why = tensor_dtype(out, value.data_type)
                ctx.dtypes[out] = dtype or "fp32"
                if why:
                    ctx.dtype_problems[out] = why
            ctx.kinds[out] = "weight"
            weights.add(out)
        elif (node.op_type in _WEIGHT_VIEWS and node.input and len(node.output) == 1
              and ctx.kinds.get(node.input[0]) == "weight" and out in ctx.shapes and out not in graph_outputs):
            ctx.kinds[out] = "weight"  # a view of a weight (e.g. Unsqueeze of a scale vector)
            ctx.dtypes.setdefault(out, ctx.dtypes.get(node.input[0], "fp32"))
            weights.add(out)
    return weights


def _data_inputs(node: Any) -> list[str]:
    meta = _META_INPUTS.get(node.op_type, range(0))
    return [x for k, x in enumerate(node.input) if x and k not in meta]


def _kept_nodes(nodes: list, weights: set[str], graph_outputs: set[str]) -> list[bool]:
    """Which nodes compute data (not only shape metadata): a backward pass, repeated to a fixpoint."""
    needed: set[str] = set(graph_outputs)
    keep = [False] * len(nodes)
    changed = True
    while changed:  # nodes are in topological order, so the second pass confirms the first
        changed = False
        for k in range(len(nodes) - 1, -1, -1):
            node = nodes[k]
            if keep[k] or node.op_type == "Constant" or (node.output and node.output[0] in weights):
                continue
            if node.op_type not in _METADATA_OPS or any(o in needed for o in node.output):
                keep[k] = True
                changed = True
                needed.update(_data_inputs(node))
    return keep


def convert_model(model: Any, path: Path, model_name: str = "") -> OnnxImport:
    """Convert a checked, shape-inferred ONNX model (see the module notes).

    Examples
    --------
    >>> from onnx import helper, TensorProto
    >>> g = helper.make_graph([helper.make_node("Div", ["x", "x"], ["y"], name="d")], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    >>> imp = convert_model(helper.make_model(g), Path("d.onnx"))
    >>> imp.ops[0].type, imp.ops[0].attrs["approximation"], imp.approximations
    ('mul', 'computed as mul', {'Div: computed as mul': 1})
    """
    graph = model.graph
    nodes = list(graph.node)
    raw = ({i.name for i in graph.initializer} | {v.name for v in (*graph.input, *graph.output, *graph.value_info)}
           | {x for n in nodes for x in (*n.input, *n.output)} | {n.name for n in nodes})
    ctx = _Ctx(f"{model_name}/" if model_name else "", model_name, path, raw)
    consts: dict[str, Any] = {}
    _collect(ctx, graph, consts)
    graph_outputs = {vi.name for vi in graph.output}
    weights = _fold_weights(ctx, nodes, consts, graph_outputs)
    keep = _kept_nodes(nodes, weights, graph_outputs)
    dropped = Counter(n.op_type for n, kk in zip(nodes, keep)
                      if not kk and n.op_type != "Constant" and not (n.output and n.output[0] in weights))
    if dropped:
        ctx.warnings.append("shape-only ops dropped: " + ", ".join(f"{t} x{c}" for t, c in sorted(dropped.items())))
    produced = {o for n in nodes for o in n.output if o}
    fallback: Counter[str] = Counter()
    opset = opset_version(model)
    for k, node in enumerate(nodes):
        if not keep[k]:
            continue
        name = node.name or f"{node.op_type}_{k}"
        ins = _data_inputs(node)
        for x in ins:  # a data input nobody produces and that is no graph input: a weight
            if x not in ctx.kinds and x not in produced:
                ctx.kinds[x] = "weight"
        outs = [o for o in node.output if o]
        if not outs:
            ctx.warnings.append(f"op {name!r} ({node.op_type}) has no outputs; skipped")
            continue
        _convert(ctx, node, name, ins, outs, fallback, opset)
    for what, c in sorted(ctx.approximations.items()):
        ctx.warnings.append(f"approximation: {what} ({c} op{'s' if c > 1 else ''})")
    for t, c in sorted(fallback.items()):
        why = "; ".join(sorted(ctx.fallback_reasons.get(t, ())))
        msg = (f"ONNX op type {t!r} ({c} op{'s' if c > 1 else ''}, {why}): costed as one vector "
               "pass over its output elements (type 'relu', attrs fallback=True)")
        ctx.warnings.append(msg)
        log.warning("%s: %s", path.name, msg)
    return OnnxImport(list(ctx.tensors.values()), ctx.ops, ctx.warnings, dict(sorted(fallback.items())),
                      dict(sorted(Counter(n.op_type for n in nodes).items())), dict(sorted(ctx.approximations.items())))


# --------------------------------------------------------------------------- windows
def _same_pads(size: int, kernel: int, stride: int, upper: bool) -> tuple[int, int]:
    total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def _out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def _window(ctx: _Ctx, label: str, a: _Attrs, spatial: tuple[int, int], out_hw: tuple[int, int],
            kernel: tuple[int, int], pool: bool) -> tuple[Any, Any, list[str]] | None:
    """``(stride, padding, approximations)`` of a 2-D conv or pool whose output shape is ``out_hw``.

    Exact when the pads are symmetric per axis and there is no dilation or ceil mode;
    otherwise the symmetric padding that gives the same output shape (named as an
    approximation), or None when there is none.
    """
    strides = a.ints("strides") or [1, 1]
    dil = a.ints("dilations") or [1, 1]
    pads = a.ints("pads")
    if len(strides) != 2 or len(dil) != 2 or len(pads) not in (0, 4):
        raise ctx.error(f"{label}: strides, dilations and pads must give 2, 2 and 4 values for a 2-D window, "
                        f"got {strides}, {dil}, {pads}")
    if min(strides) < 1 or min(dil) < 1 or min(pads, default=0) < 0 or min(kernel) < 1:
        raise ctx.error(f"{label}: strides, dilations and kernel must be >= 1 and pads >= 0, got "
                        f"{strides}, {dil}, {list(kernel)}, {pads}")
    auto = a.str("auto_pad", "NOTSET")
    eff = [d * (k - 1) + 1 for d, k in zip(dil, kernel)]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pairs = [_same_pads(s, k, st, auto == "SAME_UPPER") for s, k, st in zip(spatial, eff, strides)]
    elif auto in ("NOTSET", "VALID"):
        pairs = [(pads[0], pads[2]), (pads[1], pads[3])] if pads and auto == "NOTSET" else [(0, 0), (0, 0)]
    else:
        raise ctx.error(f"{label}: unknown auto_pad {auto!r} (NOTSET, VALID, SAME_UPPER or SAME_LOWER)")
    ceil = a.int("ceil_mode", 0) != 0
    notes = []
    if dil != [1, 1]:
        notes.append(f"dilations {dil} costed and computed as a dense {kernel[0]}x{kernel[1]} window")
    if ceil:
        notes.append("ceil_mode=1 computed with floor")
    padding = []
    for axis in range(2):
        lo, hi = pairs[axis]
        if lo == hi and _out_size(spatial[axis], kernel[axis], strides[axis], lo) == out_hw[axis]:
            padding.append(lo)
            continue
        if lo == hi and dil[axis] == 1 and not ceil:
            raise ctx.error(f"{label}: the output's size {out_hw[axis]} along axis {axis + 2} disagrees with "
                            f"input {spatial[axis]}, kernel {kernel[axis]}, stride {strides[axis]}, pads {lo}")
        fits = [p for p in range(0, kernel[axis] + strides[axis] + lo + hi + 1)
                if _out_size(spatial[axis], kernel[axis], strides[axis], p) == out_hw[axis]
                and (not pool or p < kernel[axis])]
        if not fits:
            return None
        padding.append(min(fits, key=lambda p: (abs(2 * p - lo - hi), p)))
    if any(lo != hi for lo, hi in pairs):
        given = [pairs[0][0], pairs[1][0], pairs[0][1], pairs[1][1]]
        notes.append(f"pads {given} (begin h, w, end h, w) taken as {padding} on both sides")
    uniform = lambda v: v[0] if v[0] == v[1] else list(v)  # noqa: E731 - keeps attrs as before for the common case
    return uniform(strides), uniform(padding), notes


# --------------------------------------------------------------------------- ops
def _convert(ctx: _Ctx, node: Any, name: str, ins: list[str], outs: list[str], fallback: Counter[str],
             opset: int) -> None:
    t = node.op_type
    label = _label(node, name)
    a = _Attrs(node, label, ctx)
    out = outs[0]
    need = _REQUIRED_INPUTS.get(t, 1 if t in OP_MAP else 0)
    if len([x for x in node.input[:need] if x]) < need:
        raise ctx.error(f"{label}: needs {need} data inputs, got {list(node.input)}")
    convert = _CONVERTERS.get(t)
    if convert is not None:
        why = convert(ctx, node, name, label, a, ins, outs, opset)
        if why is None:
            return
        return _fallback(ctx, node, name, ins, outs, fallback, why)
    if t in OP_MAP and OP_MAP[t] in ("relu", "gelu", "sigmoid", "tanh", "global_avgpool"):
        approx = APPROXIMATIONS.get(t)
        if t == "Gelu" and a.str("approximate", "none") != "tanh":
            approx = "the erf form computed in the tanh form"
        ctx.op(name, OP_MAP[t], ins[:1], [out], onnx_op=t if approx else None, approximation=approx)
    elif t in ("Add", "Sub", "Mul", "Div"):
        approx = APPROXIMATIONS.get(t)
        ctx.op(name, OP_MAP[t], ins[:2], [out], onnx_op=t if approx else None, approximation=approx)
    else:
        _fallback(ctx, node, name, ins, outs, fallback, "no ISA op type")


def _fallback(ctx: _Ctx, node: Any, name: str, ins: list[str], outs: list[str], fallback: Counter[str],
              why: str) -> None:
    fallback[node.op_type] += 1
    ctx.fallback_reasons.setdefault(node.op_type, set()).add(why)
    ctx.op(name, "relu", ins, outs, onnx_op=node.op_type, fallback=True)


def _per_channel(ctx: _Ctx, weight: str, x: str) -> None:
    """A [C] vector applied to [N, C, H, W] is declared [C, 1, 1] so it broadcasts over the channel axis."""
    shape, xshape = ctx.shapes.get(weight), ctx.shapes.get(x)
    if (shape is not None and len(shape) == 1 and xshape is not None and len(xshape) == 4
            and ctx.kinds.get(weight) == "weight" and ctx.n(weight) not in ctx.tensors):
        ctx.shapes[weight] = (shape[0], 1, 1)


def _with_bias(ctx: _Ctx, name: str, out: str, bias: str | None) -> str:
    """The tensor the main op writes: ``out``, or a fresh one when a bias add follows."""
    if not bias:
        return out
    mid = ctx.fresh(out)
    ctx.like(mid, out)
    return mid


def _add_bias(ctx: _Ctx, name: str, mid: str, bias: str | None, out: str, note: str | None = None) -> None:
    if bias:
        _per_channel(ctx, bias, out)
        ctx.op(name + "_bias", "add", [mid, bias], [out], onnx_op=None if note is None else "Gemm",
               approximation=note)


def _conv(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    x, w = node.input[0], node.input[1]
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    xs, ws, os_ = ctx.shapes.get(x), ctx.shapes.get(w), ctx.shapes.get(outs[0])
    if any(s is None or len(s) != 4 for s in (xs, ws, os_)):
        return "not a 2-D convolution"  # or a shape problem the fallback's tensors will name
    group = a.int("group", 1)
    if group < 1 or xs[1] != ws[1] * group or ws[0] % group or os_[1] != ws[0] or os_[0] != xs[0]:
        raise ctx.error(f"{label}: input {list(xs)}, weight {list(ws)} and output {list(os_)} do not fit "
                        f"group={group} (input channels = weight channels x group, output channels = filters)")
    if a.has("kernel_shape") and a.ints("kernel_shape") != list(ws[2:]):
        raise ctx.error(f"{label}: kernel_shape {a.ints('kernel_shape')} differs from the weight's {list(ws[2:])}")
    window = _window(ctx, label, a, xs[2:], os_[2:], ws[2:], pool=False)
    if window is None:
        return "its window geometry has no symmetric-padding form"
    stride, padding, notes = window
    mid = _with_bias(ctx, name, outs[0], bias)
    ctx.op(name, "conv2d", [x, w], [mid], onnx_op="Conv" if notes else None,
           approximation="; ".join(notes) or None, stride=stride, padding=padding, groups=group)
    _add_bias(ctx, name, mid, bias, outs[0])
    return None


def _pool(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    t = node.op_type
    kernel = a.ints("kernel_shape")
    xs, os_ = ctx.shapes.get(ins[0]), ctx.shapes.get(outs[0])
    if len(kernel) != 2 or xs is None or os_ is None or len(xs) != 4 or len(os_) != 4 or xs[:2] != os_[:2]:
        return "not a 2-D pool"
    if _covers_input(a, t, xs[2:], os_[2:], kernel):
        # One output cell whose window holds every input cell: the same as a window of the
        # input's size (padded cells do not count), whatever the pads.
        hw = xs[2] if xs[2] == xs[3] else list(xs[2:])
        ctx.op(name, OP_MAP[t], ins[:1], outs[:1], kernel=hw, stride=1, padding=0)
        return None
    window = _window(ctx, label, a, xs[2:], os_[2:], tuple(kernel), pool=True)
    if window is None:
        return "its window geometry has no symmetric-padding form"
    stride, padding, notes = window
    if t == "AveragePool" and a.int("count_include_pad", 0) and padding != 0:
        notes.append("count_include_pad=1 computed without counting the padded cells")
    k = kernel[0] if kernel[0] == kernel[1] else kernel
    ctx.op(name, OP_MAP[t], ins[:1], outs[:1], onnx_op=t if notes else None, approximation="; ".join(notes) or None,
           kernel=k, stride=stride, padding=padding)
    return None


def _covers_input(a: _Attrs, t: str, spatial: tuple[int, ...], out_hw: tuple[int, ...], kernel: list[int]) -> bool:
    """Whether a pool has one output cell whose window covers the whole input (see :func:`_pool`)."""
    pads = a.ints("pads") or [0, 0, 0, 0]
    if (tuple(out_hw) != (1, 1) or a.str("auto_pad", "NOTSET") not in ("NOTSET", "VALID") or len(pads) != 4
            or min(pads) < 0 or (a.ints("dilations") or [1, 1]) != [1, 1]):
        return False
    if t == "AveragePool" and a.int("count_include_pad", 0) and any(pads):
        return False
    return all(pads[i] < kernel[i] and kernel[i] - pads[i] >= spatial[i] for i in range(2))


def _gemm(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    t = node.op_type
    A, B = node.input[0], node.input[1]
    sa, sb = ctx.shapes.get(A), ctx.shapes.get(B)
    if sa is None or sb is None or len(sa) < 2 or len(sb) < 2:
        return "an operand of rank below 2"
    notes = []
    if t == "Gemm" and (a.float("alpha", 1.0) != 1.0 or a.float("beta", 1.0) != 1.0):
        notes.append(f"alpha={a.float('alpha', 1.0):g}, beta={a.float('beta', 1.0):g} computed as 1")
    if t == "Gemm" and a.int("transA", 0):
        At = ctx.fresh(A)
        ctx.shapes[At], ctx.dtypes[At] = (*sa[:-2], sa[-1], sa[-2]), ctx.dtypes.get(A, "fp32")
        ctx.op(name + "_transA", "transpose", [A], [At], perm=[*range(len(sa) - 2), len(sa) - 1, len(sa) - 2])
        A = At
    if t == "Gemm" and a.int("transB", 0):
        if ctx.kinds.get(B) == "weight" and ctx.n(B) not in ctx.tensors:
            ctx.shapes[B] = (*sb[:-2], sb[-1], sb[-2])  # declare the weight in [K, N] layout
        else:
            Bt = ctx.fresh(B)
            ctx.shapes[Bt], ctx.dtypes[Bt] = (*sb[:-2], sb[-1], sb[-2]), ctx.dtypes.get(B, "fp32")
            ctx.op(name + "_transB", "transpose", [B], [Bt], perm=[*range(len(sb) - 2), len(sb) - 1, len(sb) - 2])
            B = Bt
    bias = node.input[2] if t == "Gemm" and len(node.input) > 2 and node.input[2] else None
    mid = _with_bias(ctx, name, outs[0], bias)
    ctx.op(name, "matmul", [A, B], [mid], onnx_op=t if notes else None, approximation="; ".join(notes) or None)
    _add_bias(ctx, name, mid, bias, outs[0])
    return None


def _batchnorm(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    if len(outs) > 1:
        return "training mode (running statistics are outputs)"
    x, scale, bias = node.input[0], node.input[1], node.input[2]
    _per_channel(ctx, scale, x)
    _per_channel(ctx, bias, x)
    mid = ctx.fresh(outs[0])
    ctx.like(mid, outs[0])
    ctx.op(name, "mul", [x, scale], [mid])
    ctx.op(name + "_shift", "add", [mid, bias], [outs[0]])
    return None


def _variadic(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    t = node.op_type
    approx = APPROXIMATIONS.get(t)
    if len(ins) == 1:
        ctx.op(name, "reshape", ins, outs[:1], shape=list(ctx.shapes.get(outs[0]) or (1,)))
        return None
    acc = ins[0]
    for j, x in enumerate(ins[1:], start=1):
        dst = outs[0] if j == len(ins) - 1 else ctx.fresh(outs[0])
        if dst != outs[0]:
            ctx.like(dst, outs[0])
        ctx.op(name if j == 1 else f"{name}_{j}", "add", [acc, x], [dst], onnx_op=t if approx else None,
               approximation=approx)
        acc = dst
    return None


def _copy(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    t = node.op_type
    src, out = ins[0], outs[0]
    si, so = ctx.shapes.get(src), ctx.shapes.get(out)
    if si is not None and so is not None and math.prod(si) != math.prod(so):
        raise ctx.error(f"{label}: input {list(si)} and output {list(so)} have different numbers of elements")
    approx = None
    if t == "Cast" and not (ctx.dtypes.get(src) in _FLOAT_DTYPES and ctx.dtypes.get(out) in _FLOAT_DTYPES):
        approx = f"cast to {ctx.dtypes.get(out, '?')} costed and computed as a copy"
    ctx.op(name, "reshape", [src], [out], onnx_op=t if approx else None, approximation=approx,
           shape=list(so or (1,)))
    return None


def _softmax(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    t = node.op_type
    shape = ctx.shapes.get(ins[0]) or (1,)
    rank = len(shape)
    axis = a.int("axis", -1 if opset >= 13 else 1)
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise ctx.error(f"{label}: axis {axis} is out of range for rank {rank}")
    axis %= max(rank, 1)
    approx = APPROXIMATIONS.get(t)
    if opset < 13 and math.prod(shape[axis + 1:]) > 1:
        approx = "; ".join(filter(None, [approx, f"normalized over axis {axis} only (opset {opset} flattens "
                                                  f"axes {axis}.. into one)"]))
    ctx.op(name, "softmax", ins[:1], outs[:1], onnx_op=t if approx else None, approximation=approx, axis=axis)
    return None


def _layernorm(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    rank = len(ctx.shapes.get(ins[0]) or (1,))
    axis = a.int("axis", -1)
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise ctx.error(f"{label}: axis {axis} is out of range for rank {rank}")
    ctx.op(name, "layernorm", ins[:3], outs[:1], axis=axis % max(rank, 1), epsilon=a.float("epsilon", 1e-5))
    return None


def _reshape(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    return _copy(ctx, node, name, label, a, ins, outs, opset)


def _transpose(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    rank = len(ctx.shapes.get(ins[0]) or ())
    perm = a.ints("perm") if a.has("perm") else list(range(rank - 1, -1, -1))
    if sorted(perm) != list(range(rank)):
        raise ctx.error(f"{label}: perm {perm} is not a permutation of the input's {rank} axes")
    ctx.op(name, "transpose", ins[:1], outs[:1], perm=perm)
    return None


def _concat(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    rank = len(ctx.shapes.get(outs[0]) or (1,))
    axis = a.int("axis", 0)
    if not -rank <= axis < rank:
        raise ctx.error(f"{label}: axis {axis} is out of range for rank {rank}")
    ctx.op(name, "concat", ins, outs[:1], axis=axis % rank)
    return None


def _split(ctx: _Ctx, node: Any, name: str, label: str, a: _Attrs, ins, outs, opset) -> bool | None:
    shape = ctx.shapes.get(ins[0]) or (1,)
    rank = len(shape)
    axis = a.int("axis", 0)
    if not -rank <= axis < rank:
        raise ctx.error(f"{label}: axis {axis} is out of range for rank {rank}")
    axis %= rank
    sizes = [(ctx.shapes.get(o) or (0,) * (axis + 1))[axis] for o in outs]
    if sum(sizes) != shape[axis]:
        raise ctx.error(f"{label}: output sizes {sizes} along axis {axis} do not add up to the input's {shape[axis]}")
    ctx.op(name, "split", ins[:1], outs, axis=axis, sizes=sizes)
    return None


_CONVERTERS = {
    "Conv": _conv, "MaxPool": _pool, "AveragePool": _pool, "Gemm": _gemm, "MatMul": _gemm,
    "BatchNormalization": _batchnorm, "Sum": _variadic, "Max": _variadic, "Min": _variadic,
    "Identity": _copy, "Dropout": _copy, "Cast": _copy, "Softmax": _softmax, "LogSoftmax": _softmax,
    "LayerNormalization": _layernorm, "Reshape": _reshape, "Flatten": _reshape, "Squeeze": _reshape,
    "Unsqueeze": _reshape, "Transpose": _transpose, "Concat": _concat, "Split": _split,
}


def import_onnx(path: Path | str, model_name: str = "", dims: Mapping[str, int] | None = None) -> OnnxImport:
    """Import an ONNX file as tensors and ops of the graph IR, with its warnings.

    Names are prefixed ``"<model_name>/"`` when ``model_name`` is given, and every op's
    ``model`` is set to it. ``dims`` gives symbolic dimensions values (``{"N": 1}``).

    Raises
    ------
    planner.errors.SpecError
        A malformed or oversized file, a cycle, a tensor produced twice, a node with the
        wrong number of inputs, a tensor with an unknown or non-positive dimension or an
        unsupported element type (each named).

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
    path = Path(path)
    return convert_model(read_onnx_model(path, dims), path, model_name)


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
        import onnx  # noqa: F401  # optional dependency (onnx extra)
    except ImportError:  # pragma: no cover - onnx is a test dependency
        raise UnsupportedError("ONNX import needs the 'onnx' package: pip install 'plan[onnx]'") from None
    return (imp := import_onnx(path, model_name)).tensors, imp.ops
