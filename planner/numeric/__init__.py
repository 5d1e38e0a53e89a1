"""Numeric semantics: what every op computes, and the reference evaluation of a graph.

Glossary
--------
kernel
    The numpy arithmetic of one op type (:func:`evaluate_op`); the one definition shared
    by the reference and the simulator's numeric mode.
source tensor
    A tensor no op produces: a weight or a graph input (:func:`source_tensors`).
reference
    Every tensor's value from the graph alone (:func:`evaluate`), on deterministic random
    source values (:func:`random_inputs`).
dtype policy
    fp32, fp16 and fp64 tensors; kernels compute in float64 and round once to the output
    dtype (see :mod:`planner.numeric.kernels`).

Examples
--------
>>> from planner.graph import Graph, generate
>>> from planner.numeric import evaluate, random_inputs
>>> g = Graph(*generate("mlp", {"layers": 2, "width": 8}, "m"))
>>> evaluate(g, random_inputs(g, seed=0))["m/y"].shape
(1, 8)
"""
from planner.numeric.kernels import NUMPY_DTYPES, SUPPORTED_OP_TYPES, evaluate_op, numpy_dtype
from planner.numeric.reference import evaluate, random_inputs, source_tensors

__all__ = ["NUMPY_DTYPES", "SUPPORTED_OP_TYPES", "evaluate_op", "numpy_dtype",
           "evaluate", "random_inputs", "source_tensors"]
