"""Graph IR: ops are nodes, tensors flow on edges.

Glossary
--------
Tensor
    A typed n-dimensional value; ``kind`` is weight, input, activation or output.
Op
    One operation reading and writing tensors; ``cycles`` overrides the cost model per kind.
Graph
    Validated ops and tensors (acyclic, one producer per tensor) with a topological order.
generate
    Built-in generators (``mlp``, ``transformer``, ``resnet``) returning tensors and ops.
"""
from planner.graph.generators import GENERATOR_PARAMS, GENERATORS, conv_output_size, generate
from planner.graph.ir import DTYPE_BYTES, TENSOR_KINDS, Graph, GraphError, Op, Tensor

__all__ = ["DTYPE_BYTES", "TENSOR_KINDS", "Graph", "GraphError", "Op", "Tensor",
           "GENERATORS", "GENERATOR_PARAMS", "conv_output_size", "generate"]
