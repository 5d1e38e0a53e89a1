"""ONNX models → graph IR (``graph: {onnx: path}`` in a spec, and ``plan import model.onnx``).

Reading (:mod:`planner.graph.onnx_read`): the file is bounded and checked before
conversion — it must parse, every tensor is produced once, the nodes form no cycle, node
input/output counts match the ONNX schemas, strict shape inference accepts it. Every
tensor of the imported graph has positive dimensions (symbolic ones need a value:
``dims={"N": 1}``, ``plan import --dim N=1``) and a supported element type; anything else
is an error naming the tensor.

Shapes come from ONNX shape inference; weights are the initializers, ``Constant`` outputs
and ``ConstantOfShape`` outputs with a constant shape (so "light" models whose weights are
given as shapes only import with their real storage). Weights count toward storage as
tensors of kind ``weight``.

Op mapping (:mod:`planner.graph.onnx_convert`; exact unless marked):

=====================================  ==========================================  ==========
ONNX                                   ISA                                         exact?
=====================================  ==========================================  ==========
Conv (2-D)                             conv2d (+ add of the bias)                   yes [1]_
Gemm, MatMul                           matmul (+ transpose, + add of C)             yes [2]_
Add, Sub, Mul                          add, sub, mul                                yes
Sum (k inputs)                         a chain of k-1 adds                          yes
Relu, Sigmoid, Tanh                    relu, sigmoid, tanh                          yes
Gelu                                   gelu (tanh form)                             ``approximate="tanh"`` only
BatchNormalization (inference)         mul by scale, add of B                       folded [3]_
LayerNormalization                     layernorm (axis, epsilon)                    yes
Softmax                                softmax (axis)                               yes [4]_
MaxPool, AveragePool                   maxpool, avgpool                             yes [1]_
GlobalAveragePool                      global_avgpool                               yes
Reshape, Flatten, (Un)Squeeze,         reshape (a copy to the output shape)         yes
Identity, Dropout, Cast (float)
Transpose, Concat, Split               transpose, concat, split                     yes
Div; Max, Min                          mul; add                                     no
GlobalMaxPool; LogSoftmax              global_avgpool; softmax                      no
Clip, LeakyRelu, PRelu, Elu, Selu,     relu (one vector pass: the same cost)        no
HardSigmoid, HardSwish, Softplus, Erf,
Sqrt, Exp, Log, Neg, Abs, Reciprocal,
Pow; Cast (to integers)
any other op type (LRN, Resize, ...)   relu with ``fallback: true``: costed only    no
=====================================  ==========================================  ==========

.. [1] with pads symmetric per axis, no dilation, ``ceil_mode=0`` (and for AveragePool
   ``count_include_pad=0``); otherwise the symmetric padding that gives the same output
   shape, named as an approximation (or the costed-only fallback when there is none).
.. [2] ``alpha = beta = 1``; a ``transB`` weight is declared in ``[K, N]`` layout.
.. [3] the affine form a compiler folds it to: ``mean`` and ``var`` fold into the two
   vectors and are not stored (the graph has the same ops and shapes as the folded model).
.. [4] from opset 13, or when the axes after ``axis`` have size 1 (older opsets flatten
   them into one).

Every op marked "no" carries ``attrs: {onnx_op: <type>, approximation: <what>}``, is
counted in :attr:`OnnxImport.approximations` and named by :meth:`OnnxImport.notes` (the
lines ``plan import`` prints and writes at the top of the spec), so a numeric replay is
never checked against a different model without saying so. Fallback ops are listed in
:attr:`OnnxImport.fallback_ops`; numeric mode refuses them by name.

Shape-only inputs (a ``Reshape`` target, ``Slice`` starts, ``Pad`` amounts...) are not
data; ops that only compute such metadata (``Shape``, ``Gather`` on shapes...) are dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from planner.errors import UnsupportedError
from planner.graph.ir import Op, Tensor
from planner.graph.onnx_convert import APPROXIMATIONS, OP_MAP, OnnxImport, import_onnx, load_onnx_graph
from planner.importers._spec import ImportResult, spec_name

__all__ = ["OP_MAP", "APPROXIMATIONS", "OnnxImport", "import_onnx", "load_onnx_graph", "import_onnx_to_spec",
           "onnx_import_result", "graph_to_spec_dict"]


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


def import_onnx_to_spec(path: Path | str, inline: bool = True, profile: str = "tpu-v4",
                        dims: Mapping[str, int] | None = None) -> dict[str, Any]:
    """A spec dict for an ONNX model on one device (edit the hardware afterwards).

    With ``inline`` the graph is written out (tensors and ops, names without a model
    prefix: the spec loader adds it); otherwise the spec refers to the file
    (``graph: {onnx: <absolute path>}``). :func:`onnx_import_result` also gives the notes.

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
    return onnx_import_result(path, inline=inline, profile=profile, dims=dims).spec


def onnx_import_result(path: Path | str, inline: bool = True, profile: str = "tpu-v4",
                       dims: Mapping[str, int] | None = None) -> ImportResult:
    """The spec of :func:`import_onnx_to_spec` with the import's notes (approximations, fallbacks).

    Examples
    --------
    >>> import tempfile
    >>> from onnx import helper, TensorProto
    >>> g = helper.make_graph([helper.make_node("Clip", ["x"], ["y"], name="c")], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "my model.onnx"; helper.onnx.save(helper.make_model(g), p)
    ...     r = onnx_import_result(p)
    >>> r.spec["name"], r.notes
    ('my_model', ('Clip: computed as relu (one vector pass, the same cost) (1 op)',))
    >>> r.spec["models"][0]["graph"]["ops"][0]["attrs"]
    {'onnx_op': 'Clip', 'approximation': 'computed as relu (one vector pass, the same cost)'}
    """
    path = Path(path)
    imp = import_onnx(path, "", dims)
    graph: dict[str, Any] = (graph_to_spec_dict(imp.tensors, imp.ops) if inline
                             else {"onnx": str(path.resolve())})
    name = spec_name(path)
    spec = {
        "version": 1,
        "name": name,
        "hardware": {"devices": [{"name": "acc", "profile": profile, "count": 1}]},
        "models": [{"name": name, "graph": graph}],
        "objective": "latency",
    }
    return ImportResult(spec, tuple(imp.notes()), "onnx")
