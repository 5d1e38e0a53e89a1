"""What a compute instruction computes: kernels, and the shapes of a split op's portions.

A kernel (:class:`planner.isa.instructions.Kernel`) names the graph op's type and
attributes and, per input and output in the op's order, the full shape, dtype and the
buffers holding the value. Ops with arithmetic meaning have one: every type the cost model
knows (matrix, vector and data-movement ops), whether or not the device kind overrides its
cycles; ``task`` ops and unknown types with explicit cycles have none.

A portion ``p`` of an op split ``k`` ways computes the rows ``[p·n/k, (p+1)·n/k)`` of every
split tensor (dimension 0, ``n`` its size); tensors read whole (weights) keep their shape.
The instruction's operands are the cost model's on those portion shapes
(:func:`portion_cost`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Profile
from planner.isa.cost import DATA_MOVEMENT_OPS, MATRIX_OPS, VECTOR_OPS, OpCost, op_cost
from planner.isa.instructions import Kernel, Operand

__all__ = ["attrs_json", "has_kernel", "make_kernel", "portion_shape", "portion_cost"]

_ARITHMETIC = frozenset((*MATRIX_OPS, *VECTOR_OPS, *DATA_MOVEMENT_OPS))
# json.dumps(value, sort_keys=True, separators=(",", ":")) builds this encoder on every call; one
# per op of a 10^4-op plan cost about 0.15 s. Reused, it writes the same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """JSON-ready copy: tuples become lists, numpy-like scalars their Python value."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def attrs_json(attrs: Mapping[str, Any]) -> str:
    """The attributes as canonical JSON: sorted keys, no spaces (byte-deterministic).

    Examples
    --------
    >>> attrs_json({"stride": (2, 2), "axis": -1})
    '{"axis":-1,"stride":[2,2]}'
    >>> attrs_json({})
    '{}'
    """
    return _CANONICAL.encode(_plain(dict(attrs)))


def has_kernel(op: Op) -> bool:
    """Whether ``op`` has arithmetic meaning (a type the cost model knows; not ``task``).

    Examples
    --------
    >>> has_kernel(Op("fc", "matmul")), has_kernel(Op("t", "task", cycles={"g": 3}))
    (True, False)
    >>> has_kernel(Op("x", "custom", cycles={"g": 3}))
    False
    """
    return op.type in _ARITHMETIC


def make_kernel(name: str, op: Op, inputs: Sequence[Operand], outputs: Sequence[Operand]) -> Kernel:
    """The kernel of instruction ``name`` (the op, or one of its portions) of graph op ``op``.

    Examples
    --------
    >>> k = make_kernel("r#1", Op("r", "relu", ("x",), ("y",)), [Operand((2, 4), "fp32", (3,))],
    ...                 [Operand((2, 4), "fp32", (5,))])
    >>> k.op, k.type, k.attrs_json, k.outputs[0].buffers
    ('r#1', 'relu', '{}', (5,))
    """
    if len(inputs) != len(op.inputs) or len(outputs) != len(op.outputs):
        raise ValueError(f"kernel {name!r}: {len(inputs)} inputs and {len(outputs)} outputs given, op "
                         f"{op.name!r} has {len(op.inputs)} and {len(op.outputs)}")
    return Kernel(name, op.type, attrs_json(op.attrs), tuple(inputs), tuple(outputs))


def portion_shape(shape: Sequence[int], factor: int, *, tensor: str = "") -> tuple[int, ...]:
    """The shape of one of ``factor`` equal portions along dimension 0.

    Raises ``ValueError`` when ``factor`` does not divide dimension 0.

    Examples
    --------
    >>> portion_shape((8, 16), 2)
    (4, 16)
    >>> portion_shape((6,), 4, tensor="x")
    Traceback (most recent call last):
    ...
    ValueError: split factor 4 does not divide dimension 0 of tensor 'x' (shape (6,))
    """
    shape = tuple(int(s) for s in shape)
    if factor < 1 or not shape or shape[0] % factor:
        raise ValueError(f"split factor {factor} does not divide dimension 0 of tensor {tensor!r} "
                         f"(shape {shape})")
    return (shape[0] // factor, *shape[1:])


def portion_cost(op: Op, graph: Graph, shapes: Mapping[str, tuple[int, ...]], profile: Profile,
                 kind: str | None = None) -> OpCost:
    """``op_cost`` of ``op`` with some tensors reshaped (a split op's portion shapes).

    A small graph holding only the op and its tensors (``shapes`` overriding the graph's)
    is costed, so the operands and bytes are exactly the ISA's on the portion.

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([Tensor("x", (8, 256), "int8", "input"), Tensor("w", (256, 256), "int8", "weight"),
    ...            Tensor("y", (8, 256), "int8", "output")], [Op("fc", "matmul", ("x", "w"), ("y",))])
    >>> portion_cost(g.ops["fc"], g, {"x": (4, 256), "y": (4, 256)}, get_profile("tpu-v1")).operands
    (4, 256, 256, 1)
    """
    tensors = []
    for name in dict.fromkeys((*op.inputs, *op.outputs)):
        t = graph.tensors[name]
        tensors.append(Tensor(name, shapes.get(name, t.shape), t.dtype, t.kind))
    local = Op(op.name, op.type, op.inputs, op.outputs, op.attrs, op.cycles, op.model)
    return op_cost(local, Graph(tensors, [local]), profile, kind)
