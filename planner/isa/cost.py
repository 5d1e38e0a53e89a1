"""The cost model: exact integer cycles, MACs, FLOPs and bytes of one op on one profile.

Every formula here is also the ISA's timing rule: the lowering turns an op into one
compute instruction whose operands are :attr:`OpCost.operands`, and the simulator
recomputes the instruction's cycles from those operands with the same functions
(:func:`systolic_cycles`, :func:`vector_cycles`, :func:`memory_cycles`,
:func:`dma_cycles`). ``docs/isa.md`` gives each formula with a worked example.

Glossary
--------
device cycles     cycles of the device's own clock (``profile.clock_hz``); every count
                  in :class:`OpCost` is in them. The plan's timeline uses reference
                  cycles: see :func:`op_duration_cycles`.
fold              one weight tile of the ``R x C`` systolic array (SCALE-Sim's term).
roofline          an op takes ``max(compute cycles, memory cycles)``; memory cycles are
                  the bytes it reads and writes over the main memory's bandwidth.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Mapping

from planner.errors import UnsupportedError
from planner.graph.ir import Graph, GraphError, Op
from planner.graph.shapes import check_graph_op, window_pair
from planner.hardware import Device, Hardware, Profile, ceil_div

__all__ = [
    "OpCost",
    "VECTOR_OPS",
    "DATA_MOVEMENT_OPS",
    "MATRIX_OPS",
    "UNITS",
    "op_cost",
    "cached_op_cost",
    "op_duration_cycles",
    "cycles_table",
    "systolic_cycles",
    "vector_cycles",
    "memory_cycles",
    "dma_cycles",
]

UNITS = ("matrix", "vector", "dma", "none")

# Vector ops: op type -> (cycle factor per lane-wide pass, FLOPs per output element).
# add/mul/relu are one pass; gelu (tanh form: cube, fma, tanh, mul) and sigmoid/tanh
# take 4; softmax 5 (max-reduce, subtract, exp, sum-reduce, scale); layernorm 5 (mean,
# variance, subtract, scale, shift). Pools take one pass per window element (the window
# size is a separate operand), so their factor is 1 and their FLOPs are one per window
# element of each output.
VECTOR_OPS: Mapping[str, tuple[int, int]] = {
    "add": (1, 1), "sub": (1, 1), "mul": (1, 1), "relu": (1, 1),
    "gelu": (4, 8), "sigmoid": (4, 4), "tanh": (4, 4),
    "softmax": (5, 5), "layernorm": (5, 8),
    "maxpool": (1, 1), "avgpool": (1, 1), "global_avgpool": (1, 1),
}
MATRIX_OPS = ("matmul", "conv2d")
DATA_MOVEMENT_OPS = ("reshape", "transpose", "concat", "split")
_POOLS = ("maxpool", "avgpool")


@dataclass(frozen=True, slots=True)
class OpCost:
    """What one op costs on one profile (all counts in device cycles and bytes).

    ``cycles = max(compute_cycles, memory_cycles)`` for matrix and vector ops (the
    roofline), the copy time for data movement, and the given cycles for ops with
    explicit ``cycles`` (``explicit`` is then True). ``operands`` are the ISA
    instruction's operands: ``(T, K, N, sets)`` for ``matrix`` (a MATMUL),
    ``(elements, window)`` for ``vector``, ``(bytes,)`` for ``dma`` and ``(cycles,)``
    for explicit cycles.

    Examples
    --------
    >>> OpCost(10, 0, 0, 0, 0, "none").unit
    'none'
    """

    cycles: int
    macs: int
    flops: int
    bytes_read: int
    bytes_written: int
    unit: str
    compute_cycles: int = 0
    memory_cycles: int = 0
    operands: tuple[int, ...] = ()
    explicit: bool = False

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"unknown unit {self.unit!r}")
        if min(self.cycles, self.macs, self.flops, self.bytes_read, self.bytes_written) < 0:
            raise ValueError("costs must be non-negative")

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written


def systolic_cycles(rows: int, cols: int, t: int, k: int, n: int, sets: int = 1) -> int:
    """Cycles of a weight-stationary ``rows x cols`` systolic array (SCALE-Sim).

    The ``k x n`` weight matrix is cut into ``ceil(k/rows) * ceil(n/cols)`` folds; each
    fold is loaded, ``t`` rows stream through it and drain:
    ``(2*rows + cols + t - 2)`` cycles per fold. ``sets`` independent weight matrices
    (batched weights, conv groups) repeat the whole schedule.

    Examples
    --------
    A 256x256x256 matmul on TPU v1's 256x256 array: one fold, ``2*256+256+256-2``.

    >>> systolic_cycles(256, 256, t=256, k=256, n=256)
    1022
    >>> systolic_cycles(128, 128, t=10, k=300, n=129, sets=2)  # 2 * (256+128+10-2) * 3 * 2
    4704
    """
    if min(t, k, n, sets) == 0:
        return 0
    return sets * (2 * rows + cols + t - 2) * ceil_div(k, rows) * ceil_div(n, cols)


def vector_cycles(elements: int, lanes: int, factor: int, window: int = 1) -> int:
    """``ceil(elements / lanes) * factor * window`` device cycles.

    Examples
    --------
    >>> vector_cycles(1000, 256, 5)  # softmax: ceil(1000/256)=4 passes of 5
    20
    """
    return ceil_div(elements, lanes) * factor * window


def memory_cycles(size_bytes: int, clock_hz: int, bandwidth_bytes_per_s: int) -> int:
    """Device cycles to move ``size_bytes`` at a level's bandwidth: ``ceil(B*f/bw)``.

    Examples
    --------
    >>> memory_cycles(786432, 700_000_000, 34_000_000_000)  # 3 fp32 256x256 on TPU v1 DDR3
    16192
    """
    return ceil_div(size_bytes * clock_hz, bandwidth_bytes_per_s)


def dma_cycles(size_bytes: int, clock_hz: int, src_bandwidth: int, dst_bandwidth: int,
               latency_cycles: int, same_level: bool) -> int:
    """A DMA of ``size_bytes`` between two levels, at the slower level's bandwidth.

    A copy between two levels pays the profile's DMA start-up ``latency_cycles``; a copy
    inside one level (the transpose/concat/split ops, whose ``size_bytes`` counts both
    the read and the write traffic) is streamed by the memory itself and pays none.

    Examples
    --------
    >>> dma_cycles(1000, 1_000_000_000, 100_000_000_000, 10_000_000_000, 50, False)
    150
    >>> dma_cycles(1000, 1_000_000_000, 10_000_000_000, 10_000_000_000, 50, True)
    100
    """
    bw = min(src_bandwidth, dst_bandwidth)
    return (0 if same_level else latency_cycles) + memory_cycles(size_bytes, clock_hz, bw)


def _shape(graph: Graph, name: str) -> tuple[int, ...]:
    return graph.tensors[name].shape


def _matmul_operands(op: Op, graph: Graph) -> tuple[int, int, int, int, int]:
    """(T, K, N, sets, macs) of a matmul: A[..., M, K] x B[K, N] or B[batch..., K, N]
    (shapes already checked by :func:`planner.graph.shapes.check_op`)."""
    a, b = _shape(graph, op.inputs[0]), _shape(graph, op.inputs[1])
    m, k = a[-2], a[-1]
    n = b[-1]
    batch = math.prod(a[:-2])
    if len(b) == 2:
        # One weight matrix shared by every batch: stream all batch*M rows through each fold.
        return batch * m, k, n, 1, batch * m * k * n
    # One weight matrix per batch element: the fold schedule repeats per batch.
    return m, k, n, batch, batch * m * k * n


def _conv_operands(op: Op, graph: Graph) -> tuple[int, int, int, int, int]:
    """(T, K, N, sets, macs) of a conv2d mapped with im2col, one weight set per group (shapes
    already checked: the output is ``[N, F, OH, OW]``)."""
    w = _shape(graph, op.inputs[1])
    groups = int(op.attrs.get("groups", 1))
    f, cg, kh, kw = w
    nb, _, oh, ow = _shape(graph, op.outputs[0])
    t = nb * oh * ow
    k = cg * kh * kw
    n = f // groups
    return t, k, n, groups, groups * t * k * n


def _elements(op: Op, graph: Graph) -> int:
    if op.outputs:
        return sum(graph.tensors[t].num_elements for t in op.outputs)
    return max((graph.tensors[t].num_elements for t in op.inputs), default=0)


def _vector_operands(op: Op, graph: Graph) -> tuple[int, int]:
    """(elements, window) of a vector op."""
    if op.type in _POOLS:
        kh, kw = window_pair(op.attrs, "kernel", 1)
        return _elements(op, graph), kh * kw
    if op.type == "global_avgpool":
        x = _shape(graph, op.inputs[0])
        window = math.prod(x[2:]) if len(x) > 2 else 1
        return _elements(op, graph), window
    return _elements(op, graph), 1


def op_cost(op: Op, graph: Graph, profile: Profile, kind: str | None = None) -> OpCost:
    """The cost of ``op`` on a device of ``profile`` (and device kind ``kind``).

    Parameters
    ----------
    op, graph
        The op and the graph holding its tensors.
    profile
        The device's resolved profile (clock, systolic array, lanes, memory).
    kind
        The device kind; when ``op.cycles`` names it, those device cycles are used.

    Returns
    -------
    OpCost
        Device cycles, MACs, FLOPs, bytes read and written, and the unit.

    Raises
    ------
    UnsupportedError
        An op type the cost model does not know (without explicit cycles), or a ``task``
        without cycles for ``kind``.
    GraphError
        Shapes that contradict the op-type contract (:func:`planner.graph.shapes.check_op`).

    One function because it is the cost model's one table: each op family's compute
    cycles, memory cycles, unit and operands side by side, so the families can be compared.

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([Tensor("a", (256, 256), "int8", "input"), Tensor("b", (256, 256), "int8", "weight"),
    ...            Tensor("y", (256, 256), "int8", "output")], [Op("mm", "matmul", ("a", "b"), ("y",))])
    >>> c = op_cost(g.ops["mm"], g, get_profile("tpu-v1"))
    >>> c.compute_cycles, c.memory_cycles, c.cycles, c.macs  # 1022 vs ceil(196608*0.7e9/34e9)
    (1022, 4048, 4048, 16777216)
    """
    check_graph_op(op, graph)  # the one shape contract (also the spec loader's and the numeric kernels')
    # Each distinct tensor moves once: an op that reads a tensor twice (mul(x, x)) loads it once
    # (docs/isa.md, "Roofline"; the memory level solver and the simulator count the same way).
    bytes_read = sum(graph.tensors[t].size_bytes for t in dict.fromkeys(op.inputs))
    bytes_written = sum(graph.tensors[t].size_bytes for t in dict.fromkeys(op.outputs))
    moved = bytes_read + bytes_written
    main = profile.main_memory
    explicit = kind is not None and kind in op.cycles

    if op.type in MATRIX_OPS:
        t, k, n, sets, macs = (_matmul_operands if op.type == "matmul" else _conv_operands)(op, graph)
        compute = systolic_cycles(profile.mxu_rows, profile.mxu_cols, t, k, n, sets)
        mem = memory_cycles(moved, profile.clock_hz, main.bandwidth_bytes_per_s)
        unit, flops, operands = "matrix", 2 * macs, (t, k, n, sets)
    elif op.type in VECTOR_OPS:
        factor, flops_per = VECTOR_OPS[op.type]
        elements, window = _vector_operands(op, graph)
        compute = vector_cycles(elements, profile.vector_lanes, factor, window)
        mem = memory_cycles(moved, profile.clock_hz, main.bandwidth_bytes_per_s)
        unit, macs, flops, operands = "vector", 0, elements * window * flops_per, (elements, window)
    elif op.type in DATA_MOVEMENT_OPS:
        if op.type == "reshape":  # a view: no bytes move
            bytes_read = bytes_written = moved = 0
        compute = 0
        mem = dma_cycles(moved, profile.clock_hz, main.bandwidth_bytes_per_s,
                         main.bandwidth_bytes_per_s, profile.dma_latency_cycles, same_level=True)
        unit, macs, flops, operands = "dma", 0, 0, (moved,)
    elif explicit:
        compute = mem = 0
        unit, macs, flops, operands = "none", 0, 0, ()
    elif op.type == "task":
        raise UnsupportedError(
            f"task op {op.name!r} gives no cycles for device kind {kind!r} "
            f"(it names: {', '.join(sorted(op.cycles)) or 'none'})")
    else:
        raise UnsupportedError(
            f"op {op.name!r} has type {op.type!r}, which the cost model does not support; "
            f"give it explicit cycles or use one of: "
            f"{', '.join(sorted((*MATRIX_OPS, *VECTOR_OPS, *DATA_MOVEMENT_OPS, 'task')))}")

    if explicit:
        cycles = int(op.cycles[kind])  # type: ignore[index]
        if cycles < 0:
            raise GraphError(f"op {op.name!r} has negative cycles for {kind!r}", op=op.name)
        return OpCost(cycles, macs, flops, bytes_read, bytes_written, unit,
                      compute_cycles=cycles, memory_cycles=0, operands=(cycles,), explicit=True)
    return OpCost(max(compute, mem), macs, flops, bytes_read, bytes_written, unit,
                  compute_cycles=compute, memory_cycles=mem, operands=operands)


def op_duration_cycles(op: Op, graph: Graph, device: Device, hardware: Hardware) -> int:
    """The op's duration on ``device`` in reference-clock cycles of the plan's timeline.

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device, Hardware
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([Tensor("x", (1024,), kind="input"), Tensor("y", (1024,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",), cycles={"npu": 7})])
    >>> dev = Device("npu0", "npu", get_profile("tpu-v1"))
    >>> op_duration_cycles(g.ops["r"], g, dev, Hardware((dev,), ()))  # 7 cycles at 700 MHz
    10
    """
    cost = cached_op_cost(op, graph, device.profile, device.kind)
    return hardware.to_timeline_cycles(cost.cycles, device)


def cycles_table(graph: Graph, hardware: Hardware) -> dict[tuple[str, str], int | None]:
    """Timeline cycles of every op on every device kind (None where it cannot run).

    Costed once per (op, kind): instances of one kind share a profile. An op cannot run on
    a kind when it is a ``task`` without cycles for it, or when the cost model does not
    know its type and it gives cycles for other kinds only.

    Raises
    ------
    UnsupportedError
        An op type the cost model does not know, without explicit cycles.
    GraphError
        Shapes that contradict the op type's contract.

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device, Hardware
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([], [Op("t", "task", cycles={"npu": 7})])
    >>> devs = (Device("npu0", "npu", get_profile("tpu-v1")), Device("cpu0", "cpu", get_profile("generic")))
    >>> cycles_table(g, Hardware(devs, ()))  # 7 cycles at 700 MHz = 10 ns
    {('t', 'npu'): 10, ('t', 'cpu'): None}
    """
    kinds: dict[str, Device] = {}
    for dev in hardware.devices:
        kinds.setdefault(dev.kind, dev)
    table: dict[tuple[str, str], int | None] = {}
    for name in graph.topological_order():
        op = graph.ops[name]
        for kind, dev in kinds.items():
            if op.type == "task" and kind not in op.cycles:
                table[name, kind] = None
                continue
            try:
                cycles = cached_op_cost(op, graph, dev.profile, kind).cycles
            except UnsupportedError:
                if op.cycles:
                    table[name, kind] = None
                    continue
                raise
            table[name, kind] = hardware.to_timeline_cycles(cycles, dev)
    return table


# op_cost per graph, each (op, profile, kind) costed once. The stages of one run (the spec's
# cycles table, the resources report, lowering, memory planning) cost the same ops on the
# same profiles again and again; a 10,000-op graph on two kinds was costed about 70,000 times.
# A Graph is never changed after construction, and op_cost depends only on the op, the
# graph's tensors, the profile and the kind, so a cost computed once stays right for the
# graph's whole life. The table is weakly keyed by the graph: it goes with it, and no stage's
# signature has to carry it.
_COSTS: weakref.WeakKeyDictionary[Graph, dict[tuple[str, Profile, str | None], OpCost]] = \
    weakref.WeakKeyDictionary()


def cached_op_cost(op: Op, graph: Graph, profile: Profile, kind: str | None = None) -> OpCost:
    """:func:`op_cost`, computed once per (op, profile, kind) of ``graph`` (the same frozen result).

    An op that is not the graph's own (a stand-in with other shapes) is costed afresh, and
    so is every call that raises (nothing is kept for it).

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([Tensor("x", (1024,), kind="input"), Tensor("y", (1024,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",))])
    >>> first = cached_op_cost(g.ops["r"], g, get_profile("tpu-v1"))
    >>> first == op_cost(g.ops["r"], g, get_profile("tpu-v1")), cached_op_cost(g.ops["r"], g, get_profile("tpu-v1")) is first
    (True, True)
    """
    if graph.ops.get(op.name) is not op:
        return op_cost(op, graph, profile, kind)
    costs = _COSTS.get(graph)
    if costs is None:
        costs = _COSTS.setdefault(graph, {})
    key = (op.name, profile, kind)
    cost = costs.get(key)
    if cost is None:
        cost = costs[key] = op_cost(op, graph, profile, kind)
    return cost
