"""From a schedule to one level-assignment problem per memory-planned device.

The spine's schedule fixes each device's op order (start cycle, then stream, then name);
the ops a device runs, in that order, become a
:class:`~solvers.memory.levels.LevelProblem` over the device's fast level and its main
(slow) level, costed by the ISA so that the solver's roofline is the binary's to the
cycle: compute cycles are the ISA's ``compute_cycles`` (device cycles), bandwidths are
exact fractions ``bytes_per_s / clock_hz`` and a DMA takes the ISA's ``latency +
ceil(bytes / min(bandwidths))``.

Tensors: weights and graph inputs start slow (preloaded); a tensor produced on another
device arrives as a *received copy* in the slow level (one per transfer, as lowering
does); graph outputs and tensors sent to other devices are live-out (they end slow).

Streams: on a device whose ops use two streams or more, each op keeps its stream
(``LevelProblem.op_streams``; docs/memory.md, "Several compute streams"); with one stream
used the problem has none, as before.

Split groups: maximal runs of consecutive *row-separable* ops (of one stream) (their output rows depend
only on the same rows of their non-weight inputs, along dimension 0), offered only where
some op touches more bytes than the fast level holds; every non-weight tensor a group
touches is split, and a factor is offered only when it divides dimension 0 of every one.

Examples
--------
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/memory-mlp.yaml")  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from planner.graph.ir import Graph, Tensor
from planner.hardware import Device, Hardware
from planner.isa.cost import op_cost
from planner.memory.shared_bandwidth import main_memory_share
from planner.spec.memory_options import MemoryOptions
from planner.plan import Plan
from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions
from solvers.memory.levels import LevelProblem, SplitGroup
from solvers.memory.levels.stream_bound import all_slow_floor, stream_plan_lower_bound

__all__ = ["LevelTensor", "DeviceBridge", "device_order", "fast_level_name", "skip_reason",
           "build_device_problem", "portion_graph", "row_separable", "stream_plan_bound", "main_memory_cycles",
           "main_memory_share_cycles", "stream_bound_covers_splits",
           "MAX_SPLIT_GROUPS"]

MAX_SPLIT_GROUPS = 3  # split factors are enumerated: 3 groups of 3 factors = 27 solves
_ELEMENTWISE = ("add", "sub", "mul", "relu", "gelu", "sigmoid", "tanh")
_BATCHED = ("conv2d", "maxpool", "avgpool", "global_avgpool")


@dataclass(frozen=True, slots=True)
class LevelTensor:
    """A tensor of a device's level problem.

    ``name`` is its buffer base name (the graph tensor's name, or for a received copy
    ``"<tensor>@<src device>-><consumer op>"``); ``role`` is ``weight``, ``input`` (a
    graph input), ``activation`` (produced on this device) or ``received``.

    Examples
    --------
    >>> LevelTensor("x", "x", "input", 64).preloaded
    True
    """

    name: str
    tensor: str
    role: str
    size_bytes: int
    transfer: tuple[str, str] | None = None  # (src op, dst op) of a received copy

    @property
    def preloaded(self) -> bool:
        return self.role in ("weight", "input")


@dataclass(frozen=True)
class DeviceBridge:
    """One device's level problem and the names to map its solution back."""

    device: Device
    fast_level: str
    slow_level: str
    ops: tuple[str, ...]  # level-problem op index -> graph op
    tensors: tuple[LevelTensor, ...]  # level-problem tensor index -> tensor
    op_inputs: tuple[tuple[int, ...], ...]  # per op, per graph input (in order) -> tensor index
    op_outputs: tuple[tuple[int, ...], ...]
    problem: LevelProblem
    sent: frozenset[int]  # tensor indices read by transfers to other devices
    group_labels: tuple[str, ...]  # per split group, "first..last"
    reserve_bytes: int  # fast capacity held back for address alignment


def device_order(plan: Plan, device: str, graph: Graph | None = None) -> tuple[str, ...]:
    """The ops ``device`` runs, in the schedule's order: start, end, then the graph's
    topological order (a zero-cycle op and its consumer may start at the same cycle).

    Examples
    --------
    >>> from planner.plan import PlacedOp
    >>> p = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9,
    ...          (PlacedOp("b", "d", 1, 0, 5), PlacedOp("a", "d", 0, 0, 2), PlacedOp("c", "e", 0, 0, 1)), ())
    >>> device_order(p, "d")
    ('a', 'b')
    """
    rank = {n: i for i, n in enumerate(graph.topological_order())} if graph is not None else {}
    return tuple(o.name for o in sorted((o for o in plan.ops if o.device == device),
                                        key=lambda o: (o.start_cycle, o.end_cycle, rank.get(o.name, 0),
                                                       o.stream, o.name)))


def fast_level_name(device: Device, options: MemoryOptions) -> str:
    """The fast level of ``device``: the one the options name for its kind, else its fastest.

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> fast_level_name(Device("t", "tpu", get_profile("tpu-v4")), MemoryOptions(enabled=True))
    'vmem'
    """
    return options.fast_level(device.kind) or device.profile.memory[0].name


def skip_reason(device: Device, ops: tuple[str, ...], graph: Graph, options: MemoryOptions) -> str | None:
    """Why ``device`` is not memory-planned, or None when it is.

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> skip_reason(Device("g", "g", get_profile("generic")), ("a",), None, MemoryOptions(enabled=True))
    'its profile has one memory level'
    """
    if len(device.profile.memory) < 2:
        return "its profile has one memory level"
    if fast_level_name(device, options) == device.profile.main_memory.name:
        return f"its fast level is its main memory {device.profile.main_memory.name}"
    if not ops:
        return "it runs no ops"
    explicit = [n for n in ops if device.kind in graph.ops[n].cycles or graph.ops[n].type == "task"]
    if explicit:
        return f"op {explicit[0]!r} has explicit cycles, which do not depend on where its data lives"
    return None


def _is_weight(graph: Graph, tensor: str) -> bool:
    return graph.tensors[tensor].kind == "weight"


def row_separable(graph: Graph, op_name: str) -> bool:
    """Whether rows (dimension 0) of the op's outputs depend only on the same rows of its
    non-weight inputs, so the op can run on portions along dimension 0.

    Examples
    --------
    >>> from planner.graph.ir import Op
    >>> g = Graph([Tensor("x", (8, 4), kind="input"), Tensor("w", (4, 2), kind="weight"),
    ...            Tensor("y", (8, 2), kind="output")], [Op("fc", "matmul", ("x", "w"), ("y",))])
    >>> row_separable(g, "fc")
    True
    """
    op = graph.ops[op_name]
    shape = graph.tensors
    data = [t for t in op.inputs if not _is_weight(graph, t)]
    if not op.outputs or not data:
        return False
    d0 = shape[op.outputs[0]].shape[0]
    if any(shape[t].shape[0] != d0 for t in (*data, *op.outputs)):
        return False
    rank = len(shape[op.outputs[0]].shape)
    if op.type in _ELEMENTWISE:
        out = shape[op.outputs[0]].shape
        weights_ok = all(len(shape[t].shape) < rank or shape[t].shape[0] == 1
                         for t in op.inputs if _is_weight(graph, t))
        return all(shape[t].shape == out for t in data) and weights_ok
    if op.type == "matmul":
        return (len(op.inputs) >= 2 and not _is_weight(graph, op.inputs[0]) and _is_weight(graph, op.inputs[1])
                and len(shape[op.inputs[1]].shape) == 2 and rank >= 2)
    if op.type == "softmax":
        axis = int(op.attrs.get("axis", -1))
        return rank >= 2 and axis % rank != 0
    if op.type == "layernorm":
        return rank >= 2
    if op.type in _BATCHED:
        return rank == 4 and len(data) == 1 and data[0] == op.inputs[0]
    if op.type == "transpose":
        perm = tuple(op.attrs.get("perm", ()))
        return bool(perm) and perm[0] == 0
    if op.type in ("concat", "split"):
        return rank >= 2 and int(op.attrs.get("axis", 0)) % rank != 0
    if op.type == "reshape":
        return len(data) == 1
    return False


def portion_graph(graph: Graph, split_tensors: frozenset[str] | set[str], factor: int) -> Graph:
    """``graph`` with every tensor of ``split_tensors`` cut to ``1/factor`` along dimension 0.

    Examples
    --------
    >>> from planner.graph.ir import Op
    >>> g = Graph([Tensor("x", (8, 4), kind="input"), Tensor("y", (8, 4), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",))])
    >>> portion_graph(g, {"x", "y"}, 4).tensors["y"].shape
    (2, 4)
    """
    tensors = []
    for t in graph.tensors.values():
        if t.name in split_tensors:
            tensors.append(Tensor(t.name, (t.shape[0] // factor, *t.shape[1:]), t.dtype, t.kind))
        else:
            tensors.append(t)
    return Graph(tensors, graph.ops.values())


def _fraction(bytes_per_s: int, clock_hz: int) -> Fraction:
    return Fraction(int(bytes_per_s), int(clock_hz))


def build_device_problem(graph: Graph, hardware: Hardware, plan: Plan, device: Device,
                         options: MemoryOptions, reserve_factor: int | None = 0) -> DeviceBridge:
    """The level problem of ``device`` for the order ``plan`` gives it.

    The fast capacity the solver sees is the level's minus a reserve: ``32`` alignments
    (``reserve_factor`` 0), else ``reserve_factor`` percent of the capacity, and at most an
    eighth of it: room for rounding buffer addresses up and for fragmentation. ``None``: no
    reserve, the whole level (:mod:`planner.memory.full_level`).
    Call :func:`skip_reason` first; this assumes the device can be memory-planned.
    """
    profile = device.profile
    ops = device_order(plan, device.name, graph)
    placed = {o.name: o.device for o in plan.ops}
    fast = profile.level(fast_level_name(device, options))
    slow = profile.main_memory

    tensors: list[LevelTensor] = []
    index: dict[str, int] = {}

    def tensor_id(name: str, tensor: str, role: str, transfer=None) -> int:
        if name not in index:
            index[name] = len(tensors)
            tensors.append(LevelTensor(name, tensor, role, graph.tensors[tensor].size_bytes, transfer))
        return index[name]

    op_inputs: list[tuple[int, ...]] = []
    op_outputs: list[tuple[int, ...]] = []
    for name in ops:
        op = graph.ops[name]
        ins = []
        for t in op.inputs:
            producer = graph.producer(t)
            if producer is None:
                ins.append(tensor_id(t, t, "weight" if _is_weight(graph, t) else "input"))
            elif placed[producer] == device.name:
                ins.append(tensor_id(t, t, "activation"))
            else:
                ins.append(tensor_id(f"{t}@{placed[producer]}->{name}", t, "received", (producer, name)))
        op_inputs.append(tuple(ins))
        op_outputs.append(tuple(tensor_id(t, t, "activation") for t in op.outputs))

    sent: set[int] = set()
    for t in plan.transfers:
        if t.src_device == device.name:
            for x in t.tensors:
                if x in index:
                    sent.add(index[x])
    live_out = sorted(sent | {i for i, lt in enumerate(tensors)
                              if lt.role == "activation" and graph.tensors[lt.tensor].kind == "output"})

    reads = [tuple(sorted(set(ins))) for ins in op_inputs]
    writes = [tuple(sorted(set(outs))) for outs in op_outputs]
    compute = [op_cost(graph.ops[n], graph, profile, device.kind).compute_cycles for n in ops]

    reserve = (0 if reserve_factor is None else 32 * options.alignment_bytes if reserve_factor == 0
               else fast.capacity_bytes * reserve_factor // 100)
    reserve = min(fast.capacity_bytes // 8, reserve)
    capacity_fast = max(1, fast.capacity_bytes - reserve)
    stream_of = {o.name: o.stream for o in plan.ops}
    streams = tuple(stream_of[n] for n in ops) if len({stream_of[n] for n in ops}) > 1 else ()
    linked = _linked_ops(plan, device.name, ops)
    groups, labels = _split_groups(graph, ops, tensors, op_inputs, op_outputs, capacity_fast, options,
                                   profile, device.kind, streams, linked) if options.split else ((), ())
    problem = LevelProblem(
        compute_cycles=tuple(compute), reads=tuple(reads), writes=tuple(writes),
        tensor_bytes=tuple(lt.size_bytes for lt in tensors),
        capacity_bytes=(capacity_fast, device.memory_capacity_bytes),
        bandwidth_bytes_per_cycle=(_fraction(fast.bandwidth_bytes_per_s, profile.clock_hz),
                                   _fraction(slow.bandwidth_bytes_per_s, profile.clock_hz)),
        dma_bytes_per_cycle=_fraction(profile.dma_bandwidth(fast.name, slow.name), profile.clock_hz),
        dma_latency_cycles=profile.dma_latency_cycles,
        live_out=tuple(live_out), splits=groups, op_streams=streams,
        shared_bandwidth=options.shared_bandwidth, op_names=ops,
        tensor_names=tuple(lt.name for lt in tensors))
    return DeviceBridge(device, fast.name, slow.name, ops, tuple(tensors), tuple(op_inputs), tuple(op_outputs),
                        problem, frozenset(sent), labels, reserve)


def _linked_ops(plan: Plan, device: str, ops: tuple[str, ...]) -> frozenset[int]:
    """The device's ops that send or receive over a link: they run whole (a plan's transfer names
    one op, and lowering pairs it with one plan entry, not a split op's portions)."""
    ends = {t.src_op for t in plan.transfers if t.src_device == device}
    ends |= {t.dst_op for t in plan.transfers if t.dst_device == device}
    return frozenset(i for i, name in enumerate(ops) if name in ends)


def _split_groups(graph: Graph, ops, tensors, op_inputs, op_outputs, capacity_fast: int,
                  options: MemoryOptions, profile, kind, streams: tuple[int, ...] = (),
                  linked: frozenset[int] = frozenset()) -> tuple[tuple[SplitGroup, ...], tuple[str, ...]]:
    def touched(i: int) -> set[int]:
        return {t for t in (*op_inputs[i], *op_outputs[i]) if tensors[t].role != "weight"}

    runs: list[tuple[int, int, set[int]]] = []
    used: set[int] = set()
    current: list[int] = []
    current_tensors: set[int] = set()

    def close() -> None:
        nonlocal current, current_tensors
        if current:
            runs.append((current[0], current[-1], current_tensors))
            used.update(current_tensors)
        current, current_tensors = [], set()

    for i, name in enumerate(ops):
        mine = touched(i)
        if streams and current and streams[current[-1]] != streams[i]:
            close()  # a split group runs on one stream
        if not row_separable(graph, name) or mine & used or i in linked:
            close()
            continue
        current.append(i)
        current_tensors |= mine
    close()

    candidates = []
    for first, last, split in runs:
        biggest = max(sum(tensors[t].size_bytes for t in {*op_inputs[i], *op_outputs[i]})
                      for i in range(first, last + 1))
        if biggest <= capacity_fast:
            continue
        dims = {graph.tensors[tensors[t].tensor].shape[0] for t in split}
        factors = tuple(k for k in sorted({1, *options.split_factors}) if all(d % k == 0 for d in dims))
        if len(factors) < 2:
            continue
        candidates.append((biggest, first, last, split, factors))
    chosen = sorted(sorted(candidates, key=lambda c: (-c[0], c[1]))[:MAX_SPLIT_GROUPS], key=lambda c: c[1])
    groups, labels = [], []
    for _, first, last, split, factors in chosen:
        names = {tensors[t].tensor for t in split}
        portion_compute = []
        for k in factors:
            pg = portion_graph(graph, names, k) if k > 1 else graph
            portion_compute.append(tuple(op_cost(pg.ops[ops[i]], pg, profile, kind).compute_cycles
                                         for i in range(first, last + 1)))
        groups.append(SplitGroup(first, last, tuple(sorted(split)), factors, portion_compute=tuple(portion_compute)))
        labels.append(f"{ops[first]}..{ops[last]}")
    return tuple(groups), tuple(labels)


# The share of a device's memory budget the several-stream plan bound may use (CP-SAT
# deterministic time; memory-streams' relaxation proves its optimum in about 0.02 s).
STREAM_BOUND_SHARE = 0.3


def stream_plan_bound(bridge: DeviceBridge, options: MemoryOptions, time_limit_s: float, seed: int = 0,
                      search: str = "deterministic", graph: Graph | None = None,
                      stops: list | None = None) -> int | None:
    """A lower bound (device cycles) on every plan of this device's ops on its streams, or None.

    Only for a device whose ops use several streams (the several-stream path): the relaxation
    of :mod:`solvers.memory.levels.stream_bound` over any order, stream assignment and level
    assignment, at the fast level's full capacity (the reserve is the planner's own
    restriction). At most the everything-in-main-memory bound
    (:func:`~solvers.memory.levels.stream_bound.all_slow_floor` with the ISA's durations, and
    under sharing the main-memory shares its ops hold): that baseline is a candidate, timed by
    the ISA (a view op is free), so the relaxation does not bound it. When splitting is on and some op
    touches more bytes than the fast level holds after the largest reserve (so some order
    may offer a split group), it also covers
    every split of the row-separable ops and the non-weight tensors they touch (as the
    N-level plan bound). ``graph`` is needed (None: no bound). ``stops`` receives how its budget
    ended when the wall-clock net fired (a bound cut short is lower, still sound: recorded).
    """
    problem = bridge.problem
    if not problem.multi_stream or graph is None:
        return None
    fast = bridge.device.profile.level(bridge.fast_level)
    split_ops, split_tensors = frozenset(), frozenset()
    if stream_bound_covers_splits(bridge, options):
        split_ops = frozenset(i for i, name in enumerate(bridge.ops) if row_separable(graph, name))
        split_tensors = frozenset(t for i in split_ops for t in (*bridge.op_inputs[i], *bridge.op_outputs[i])
                                  if bridge.tensors[t].role != "weight")
    full = replace(problem, capacity_bytes=(fast.capacity_bytes, problem.capacity_bytes[1]))
    budget = Budget.start(max(0.1, STREAM_BOUND_SHARE * time_limit_s), MEMORY_LEVELS, search=search)
    bound = stream_plan_lower_bound(full, bridge.device.streams, budget, budget.left,
                                    SolveOptions(num_workers=1, random_seed=seed, search=search),
                                    split_ops, split_tensors)
    if stops is not None:
        stops.append(budget.stopped_by)
    # The everything-in-main-memory baseline is a candidate too, timed by the ISA (a view op
    # is free there; the level problem charges its bytes): bound it apart.
    return min(bound, all_slow_floor(replace(full, splits=(), shared_bandwidth=False), bridge.device.streams,
                                     main_memory_cycles(graph, bridge.device, bridge.ops),
                                     main_memory_share_cycles(graph, bridge.device, bridge.ops)
                                     if problem.shared_bandwidth else None))


def stream_bound_covers_splits(bridge: DeviceBridge, options: MemoryOptions) -> bool:
    """Whether :func:`stream_plan_bound` covers split plans: the problem has split groups, or
    splitting is on and some op touches more bytes than the fast level holds after the largest
    reserve (so some order may offer a split group)."""
    problem = bridge.problem
    fast = bridge.device.profile.level(bridge.fast_level)
    smallest = fast.capacity_bytes - fast.capacity_bytes // 8  # no reserve holds back more than 1/8
    return bool(problem.splits) or (options.split and any(k > 1 for k in options.split_factors) and any(
        sum(problem.tensor_bytes[t] for t in {*problem.reads[i], *problem.writes[i]}) > smallest
        for i in range(problem.num_ops)))


def main_memory_share_cycles(graph: Graph, device: Device, ops: tuple[str, ...]) -> tuple[int, ...]:
    """Under ``bandwidth: shared``, what each of ``ops`` holds of main memory with everything
    there: its shares times its device cycles, by the simulator's rule for an op's record
    (``ceil(SHARE_UNITS * memory cycles / cycles)`` for a matrix or vector op; an op with
    explicit cycles or a copy holds none; :func:`planner.memory.shared_bandwidth.main_memory_share`).

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> from planner.graph.ir import Op
    >>> g = Graph([Tensor("x", (256,), kind="input"), Tensor("y", (256,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",))])
    >>> main_memory_share_cycles(g, Device("n", "npu", get_profile("edge-npu")), ("r",))  # memory-bound: 121 cycles
    (121000,)
    """
    costs = [op_cost(graph.ops[n], graph, device.profile, device.kind) for n in ops]
    return tuple(main_memory_share(cost) * cost.cycles for cost in costs)


def main_memory_cycles(graph: Graph, device: Device, ops: tuple[str, ...]) -> tuple[int, ...]:
    """The device cycles of each of ``ops`` with everything in main memory (the ISA's cost, as
    the spine times it).

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> from planner.graph.ir import Op
    >>> g = Graph([Tensor("x", (4, 16), kind="input"), Tensor("y", (4, 16), kind="output")],
    ...           [Op("v", "reshape", ("x",), ("y",), {"shape": [4, 16]})])
    >>> main_memory_cycles(g, Device("n", "npu", get_profile("edge-npu")), ("v",))
    (0,)
    """
    return tuple(op_cost(graph.ops[n], graph, device.profile, device.kind).cycles for n in ops)
