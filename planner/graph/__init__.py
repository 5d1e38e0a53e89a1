"""Graph IR: ops are nodes, tensors flow on edges."""
from planner.graph.ir import DTYPE_BYTES, TENSOR_KINDS, Graph, GraphError, Op, Tensor

__all__ = ["DTYPE_BYTES", "TENSOR_KINDS", "Graph", "GraphError", "Op", "Tensor"]
