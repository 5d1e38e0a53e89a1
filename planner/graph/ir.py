"""The computational dataflow graph: ops are nodes, tensors flow on edges.

Every stage after the spec works on this IR. Names are strings; a model's ops and
tensors are prefixed ``"<model>/"`` when several models share one spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping


__all__ = ["DTYPE_BYTES", "TENSOR_KINDS", "Tensor", "Op", "Graph", "GraphError"]

DTYPE_BYTES: Mapping[str, int] = {
    "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
    "int64": 8, "fp64": 8, "bool": 1,
}

# weight: resident parameters; input: fed from the host before the run;
# activation: produced and consumed inside the graph; output: a result of the graph.
TENSOR_KINDS = ("weight", "input", "activation", "output")


class GraphError(ValueError):
    """A structural problem of the graph (the spec loader turns it into a SpecError)."""

    def __init__(self, message: str, *, op: str | None = None, tensor: str | None = None) -> None:
        self.op, self.tensor = op, tensor
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Tensor:
    """A typed n-dimensional value.

    Examples
    --------
    >>> Tensor("x", (2, 3), "fp16").size_bytes
    12
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "fp32"
    kind: str = "activation"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.dtype not in DTYPE_BYTES:
            raise GraphError(f"tensor {self.name!r} has unknown dtype {self.dtype!r}", tensor=self.name)
        if self.kind not in TENSOR_KINDS:
            raise GraphError(f"tensor {self.name!r} has unknown kind {self.kind!r}", tensor=self.name)
        if any(s <= 0 for s in self.shape):
            raise GraphError(f"tensor {self.name!r} has a non-positive dimension {self.shape}",
                             tensor=self.name)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def size_bytes(self) -> int:
        return self.num_elements * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True, slots=True)
class Op:
    """One operation.

    ``type`` is an ISA-level op type understood by the cost model (``matmul``, ``conv2d``,
    ``add``, ``relu``, ``softmax``, ``layernorm``, ``pool``, ``reshape``, ``task``...).
    ``cycles`` optionally overrides the cost model per device kind (device cycles).
    ``after`` lists ops this one must follow without reading their data (control
    dependencies: task graphs and job shops are precedence-only).

    Examples
    --------
    >>> Op("fc", "matmul", ("x", "w"), ("y",)).inputs
    ('x', 'w')
    """

    name: str
    type: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    cycles: Mapping[str, int] = field(default_factory=dict)
    model: str = ""
    after: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "after", tuple(self.after))


class Graph:
    """Ops and tensors with their producer/consumer relations.

    Construction validates: every referenced tensor exists, each tensor has at most one
    producer, no op reads its own output, and the op graph is acyclic (the cycle is named).

    Examples
    --------
    >>> g = Graph(
    ...     tensors=[Tensor("x", (4,)), Tensor("y", (4,)), Tensor("z", (4,), kind="output")],
    ...     ops=[Op("a", "relu", ("x",), ("y",)), Op("b", "relu", ("y",), ("z",))],
    ... )
    >>> g.topological_order()
    ('a', 'b')
    >>> g.producer("y"), g.consumers("y")
    ('a', ('b',))
    >>> g.op_edges()
    (('a', 'b', ('y',)),)

    Control dependencies give edges without tensors (zero bytes):

    >>> g2 = Graph(tensors=[], ops=[Op("j1", "task"), Op("j2", "task", after=("j1",))])
    >>> g2.op_edges(), g2.edge_bytes("j1", "j2")
    ((('j1', 'j2', ()),), 0)
    """

    def __init__(self, tensors: Iterable[Tensor], ops: Iterable[Op]) -> None:
        self.tensors: dict[str, Tensor] = {}
        for t in tensors:
            if t.name in self.tensors:
                raise GraphError(f"tensor {t.name!r} is defined twice", tensor=t.name)
            self.tensors[t.name] = t
        self.ops: dict[str, Op] = {}
        self._producer: dict[str, str] = {}
        self._consumers: dict[str, list[str]] = {name: [] for name in self.tensors}
        for op in ops:
            if op.name in self.ops:
                raise GraphError(f"op {op.name!r} is defined twice", op=op.name)
            for t in (*op.inputs, *op.outputs):
                if t not in self.tensors:
                    raise GraphError(f"op {op.name!r} references unknown tensor {t!r}", op=op.name, tensor=t)
            for t in op.outputs:
                if t in self._producer:
                    raise GraphError(
                        f"tensor {t!r} is produced by both {self._producer[t]!r} and {op.name!r}",
                        op=op.name, tensor=t)
                self._producer[t] = op.name
            for t in dict.fromkeys(op.inputs):  # an op that reads a tensor twice consumes it once
                if t in op.outputs:
                    raise GraphError(f"op {op.name!r} reads its own output {t!r}", op=op.name, tensor=t)
                self._consumers[t].append(op.name)
            self.ops[op.name] = op
        for t in self.tensors.values():  # a graph output is what some op writes (else: nothing to hold)
            if t.kind == "output" and t.name not in self._producer:
                raise GraphError(f"tensor {t.name!r} is an output of the graph, but no op produces it",
                                 tensor=t.name)
        import networkx as nx  # start-up time: a spec refused before its graph is built never loads it

        self.dag = nx.DiGraph()
        self.dag.add_nodes_from(self.ops)
        for op in self.ops.values():
            for pred in op.after:
                if pred not in self.ops:
                    raise GraphError(f"op {op.name!r} comes after unknown op {pred!r}", op=op.name)
                if pred == op.name:
                    raise GraphError(f"op {op.name!r} comes after itself", op=op.name)
                self.dag.add_edge(pred, op.name, tensors=[])
        for t, consumers in self._consumers.items():
            p = self._producer.get(t)
            if p is None:
                continue
            for c in consumers:
                if self.dag.has_edge(p, c):
                    self.dag[p][c]["tensors"].append(t)
                else:
                    self.dag.add_edge(p, c, tensors=[t])
        # Deterministic order: topological, ties broken by declaration order. A cycle is
        # looked for (and named) only when there is one: the search costs more than the sort.
        index = {name: i for i, name in enumerate(self.ops)}
        try:
            self._topo = tuple(nx.lexicographical_topological_sort(self.dag, key=index.__getitem__))
        except (nx.NetworkXUnfeasible, RuntimeError):
            cycle = nx.find_cycle(self.dag)
            names = [u for u, _ in cycle] + [cycle[0][0]]
            raise GraphError("the graph has a cycle: " + " -> ".join(names), op=names[0]) from None

    def producer(self, tensor: str) -> str | None:
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> tuple[str, ...]:
        return tuple(self._consumers[tensor])

    def topological_order(self) -> tuple[str, ...]:
        return self._topo

    def op_edges(self) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """``(src_op, dst_op, tensors)`` for each producer→consumer pair, in topological order."""
        pos = {n: i for i, n in enumerate(self._topo)}
        edges = sorted(self.dag.edges(data="tensors"), key=lambda e: (pos[e[0]], pos[e[1]]))
        return tuple((u, v, tuple(ts)) for u, v, ts in edges)

    def edge_bytes(self, src: str, dst: str) -> int:
        return sum(self.tensors[t].size_bytes for t in self.dag[src][dst]["tensors"])

    def weight_bytes(self, op: str) -> int:
        return sum(self.tensors[t].size_bytes for t in self.ops[op].inputs
                   if self.tensors[t].kind == "weight")

    def output_bytes(self, op: str) -> int:
        return sum(self.tensors[t].size_bytes for t in self.ops[op].outputs)

    def __len__(self) -> int:
        return len(self.ops)

    def __repr__(self) -> str:
        return f"Graph({len(self.ops)} ops, {len(self.tensors)} tensors)"
