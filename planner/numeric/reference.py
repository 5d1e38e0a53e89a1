"""The reference evaluation of a graph: random inputs and every tensor's value.

:func:`random_inputs` draws a value for every tensor that no op produces (weights and
graph inputs); :func:`evaluate` runs the ops in the graph's topological order through
:func:`planner.numeric.kernels.evaluate_op`. The simulator's numeric mode compares a
plan's replay against this (``docs/memory.md``).

Random values
-------------
Each tensor's values come from its own generator, seeded by ``(seed, sha256(name))``, so
they depend on the seed and the tensor's name only (not on the order of the graph's
tensors or on which other tensors exist). The values are standard normal, scaled by the
role of the tensor in its first consumer (in topological order), so that deep graphs stay
finite and O(1):

=========================================  ==============================================
role                                       values
=========================================  ==============================================
matmul ``B`` (input 1)                     ``N(0, 1) / sqrt(K)``, ``K = shape[-2]``
conv2d ``w`` (input 1)                     ``N(0, 1) / sqrt(fan_in)``, ``fan_in = C/g*KH*KW``
layernorm gamma (input 1)                  ``1 + 0.1 N(0, 1)``
layernorm beta, matmul/conv2d bias (2)     ``0.1 N(0, 1)``
a weight read by ``mul`` (a scale)         ``1 + 0.1 N(0, 1)``
a weight read by ``add``/``sub`` (a shift)  ``0.1 N(0, 1)``
anything else (graph inputs...)            ``N(0, 1)``
=========================================  ==============================================
"""

from __future__ import annotations

import hashlib
import math
from typing import Mapping

import numpy as np

from planner.errors import SpecError, UnsupportedError
from planner.graph.ir import Graph, GraphError, Tensor
from planner.numeric.kernels import evaluate_op, numpy_dtype

__all__ = ["source_tensors", "random_inputs", "evaluate"]


def source_tensors(graph: Graph) -> tuple[str, ...]:
    """The tensors no op produces (weights and graph inputs), in the graph's order.

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> g = Graph([Tensor("x", (2,), kind="input"), Tensor("y", (2,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",))])
    >>> source_tensors(g)
    ('x',)
    """
    return tuple(name for name in graph.tensors if graph.producer(name) is None)


def _seed_words(seed: int, name: str) -> list[int]:
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return [int(seed), *(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))]


def _role_scale(graph: Graph, tensor: Tensor, pos: Mapping[str, int]) -> tuple[float, float]:
    """``(offset, scale)``: the values are ``offset + scale * N(0, 1)`` (module table); ``pos`` is
    each op's index in ``graph.topological_order()`` (built once per graph by the caller: built
    per tensor, it made the inputs of a 10^4-op graph quadratic, 3 of its 7 s of numeric replay)."""
    consumers = graph.consumers(tensor.name)
    if not consumers:
        return 0.0, 1.0
    op = graph.ops[min(consumers, key=pos.__getitem__)]
    slot = op.inputs.index(tensor.name)
    shape = tensor.shape
    if op.type == "matmul" and slot == 1 and len(shape) >= 2:
        return 0.0, 1.0 / math.sqrt(shape[-2])
    if op.type == "conv2d" and slot == 1:
        return 0.0, 1.0 / math.sqrt(max(1, math.prod(shape[1:])))
    if op.type == "layernorm" and slot == 1:
        return 1.0, 0.1
    if slot == 2 and op.type in ("layernorm", "matmul", "conv2d"):
        return 0.0, 0.1
    if tensor.kind == "weight" and op.type == "mul":
        return 1.0, 0.1
    if tensor.kind == "weight" and op.type in ("add", "sub"):
        return 0.0, 0.1
    return 0.0, 1.0


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic random values for every tensor no op produces.

    Parameters
    ----------
    graph : Graph
        The graph; its weights and graph inputs (tensors without a producer) get values.
    seed : int
        A non-negative seed. The same ``(seed, tensor name)`` always gives the same bytes.

    Returns
    -------
    dict of str to numpy.ndarray
        Keyed by tensor name, sorted by name; each array has the tensor's shape and dtype.

    Raises
    ------
    UnsupportedError
        A source tensor of a dtype numeric mode does not evaluate (bf16, fp8, ints...).

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> g = Graph([Tensor("x", (2, 4), kind="input"), Tensor("w", (4, 3), kind="weight"),
    ...            Tensor("y", (2, 3), kind="output")], [Op("fc", "matmul", ("x", "w"), ("y",))])
    >>> vals = random_inputs(g, seed=1)
    >>> sorted(vals), vals["w"].shape, vals["w"].dtype
    (['w', 'x'], (4, 3), dtype('float32'))
    >>> bool((random_inputs(g, seed=1)["w"] == vals["w"]).all())
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    out: dict[str, np.ndarray] = {}
    pos = {name: i for i, name in enumerate(graph.topological_order())}
    for name in sorted(source_tensors(graph)):
        t = graph.tensors[name]
        dtype = numpy_dtype(t.dtype)
        offset, scale = _role_scale(graph, t, pos)
        rng = np.random.default_rng(_seed_words(int(seed), name))
        z = rng.standard_normal(t.shape, dtype=np.float32)
        z *= np.float32(scale)
        z += np.float32(offset)
        out[name] = z.astype(dtype, copy=False)
    return out


def evaluate(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The value of every tensor of ``graph``, given the tensors no op produces.

    Ops run in :meth:`Graph.topological_order` through
    :func:`~planner.numeric.kernels.evaluate_op`.

    Parameters
    ----------
    graph : Graph
        The graph.
    inputs : mapping of str to numpy.ndarray
        A value for every tensor without a producer (see :func:`random_inputs`), of the
        tensor's shape; it is converted to the tensor's dtype.

    Returns
    -------
    dict of str to numpy.ndarray
        Every tensor's value (the given inputs included), in the graph's tensor order.

    Raises
    ------
    SpecError
        An input is missing, has the wrong shape, names no tensor of the graph, or names
        a tensor an op produces.
    UnsupportedError
        An op numeric mode cannot evaluate (``task``, unknown types, unsupported dtypes);
        the message names the op.
    GraphError
        An op whose operands contradict its type; the message names the op.

    Examples
    --------
    >>> import numpy as np
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> g = Graph([Tensor("x", (3,), kind="input"), Tensor("y", (3,)), Tensor("z", (3,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",)), Op("a", "add", ("y", "x"), ("z",))])
    >>> evaluate(g, {"x": np.array([-1.0, 2.0, 3.0])})["z"]
    array([-1.,  4.,  6.], dtype=float32)
    >>> evaluate(g, {})
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: missing input value for tensor 'x'
    """
    for name in sorted(inputs):
        if name not in graph.tensors:
            raise SpecError(f"input value for {name!r}, which is no tensor of the graph")
        producer = graph.producer(name)
        if producer is not None:
            raise SpecError(f"input value for {name!r}, which op {producer!r} produces")
    values: dict[str, np.ndarray] = {}
    for name in source_tensors(graph):
        t = graph.tensors[name]
        if name not in inputs:
            raise SpecError(f"missing input value for tensor {name!r}")
        v = np.asarray(inputs[name])
        if v.shape != t.shape:
            raise SpecError(f"input value for tensor {name!r} has shape {v.shape}, expected {t.shape}")
        values[name] = np.ascontiguousarray(v.astype(numpy_dtype(t.dtype)))
    for op_name in graph.topological_order():
        op = graph.ops[op_name]
        outs = [graph.tensors[o] for o in op.outputs]
        try:
            results = evaluate_op(op.type, op.attrs, [values[i] for i in op.inputs],
                                  [t.shape for t in outs], [t.dtype for t in outs])
        except UnsupportedError as e:
            raise UnsupportedError(f"op {op_name!r}: {e}") from e
        except GraphError as e:
            raise GraphError(f"op {op_name!r}: {e}", op=op_name) from e
        values.update(zip(op.outputs, results))
    return {name: values[name] for name in graph.tensors if name in values}
