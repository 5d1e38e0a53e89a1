"""Checks that a spec stays within the documented limits (:mod:`planner.spec.limits`).

Each check runs *before* the work whose size it bounds: device instances are counted
before they are named, topology links before they are generated, a generator's ops
before it builds them, and every op's duration before the scheduling problem holds it.
Every failure is a :class:`~planner.errors.SpecError` at the offending value's line.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from planner.errors import UnsupportedError
from planner.graph.generators import generator_size
from planner.graph.ir import Graph, GraphError, Op, Tensor
from planner.graph.shapes import check_graph_op
from planner.hardware import Hardware
from planner.isa.cost import cycles_table
from planner.spec.limits import (
    MAX_COST_TABLE,
    MAX_CYCLES,
    MAX_DEVICES,
    MAX_DIM,
    MAX_DURATION_TABLE,
    MAX_LINKS,
    MAX_ATTRS_BYTES,
    MAX_OP_IO,
    MAX_OP_REFERENCES,
    MAX_OPS,
    MAX_PATTERN_WORK,
    MAX_RANK,
    MAX_TENSOR_ELEMENTS,
    MAX_TENSORS,
    MAX_TRANSFER_TABLE,
)

__all__ = ["check_device_count", "check_topology_size", "check_generator_size", "check_pattern_work",
           "check_counts", "check_graph_size", "check_op_shapes", "cost_table"]


def check_device_count(document: Any, locator: Any) -> None:
    """At most :data:`MAX_DEVICES` device instances, counted before any is named.

    Examples
    --------
    >>> from planner.spec.locator import Locator
    >>> from planner.spec.models import SpecDocument
    >>> data = {"hardware": {"devices": [{"name": f"k{i}", "profile": "generic", "count": 200}
    ...                                  for i in range(2)]}, "models": [{"name": "m", "generator": {"kind": "mlp"}}]}
    >>> check_device_count(SpecDocument.model_validate(data), Locator(data))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: hardware.devices[1].count: the device kinds declare 400 instances; the limit is 256
    """
    total = 0
    for i, d in enumerate(document.hardware.devices):
        total += d.count
        if total > MAX_DEVICES:
            sums = sum(x.count for x in document.hardware.devices)
            raise locator.error(f"the device kinds declare {sums:,} instances; the limit is {MAX_DEVICES}",
                                ("hardware", "devices", i, "count"))


def check_topology_size(document: Any, instances: int, locator: Any) -> None:
    """At most :data:`MAX_LINKS` links, explicit plus generated, counted before generating."""
    topo = document.hardware.topology
    explicit = len(document.hardware.links or [])
    generated = 0
    if topo is not None and instances > 1:
        generated = {"all-to-all": instances * (instances - 1) // 2,
                     "ring": instances if instances > 2 else 1}.get(topo.kind, 1)
    if explicit + generated > MAX_LINKS:
        hint = (f"; topology {topo.kind} over {instances} devices gives {generated:,}: use ring or bus, or fewer "
                "devices" if generated else "")
        raise locator.error(f"the hardware has {explicit + generated:,} links; the limit is {MAX_LINKS:,}{hint}",
                            ("hardware", "topology") if generated else ("hardware", "links"))


def check_generator_size(kind: str, params: Mapping[str, Any], ops_before: int, loc: tuple, locator: Any) -> int:
    """The generator's op count, checked against :data:`MAX_OPS` before it builds anything.

    Examples
    --------
    >>> from planner.spec.locator import Locator
    >>> check_generator_size("transformer", {"layers": 10**10}, 0, ("models", 0, "generator"), Locator({}))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: models[0].generator: transformer generator would make 430,000,000,001 ops; all models together may have at most 131,072
    """
    try:
        ops, _ = generator_size(kind, params)
    except ValueError as e:
        raise locator.error(str(e), loc) from None
    if ops_before + ops > MAX_OPS:
        before = f" (after {ops_before:,} of the models before it)" if ops_before else ""
        raise locator.error(f"{kind} generator would make {ops:,} ops{before}; all models together may have "
                            f"at most {MAX_OPS:,}", loc)
    return ops


def check_pattern_work(patterns: int, ops: int, locator: Any) -> None:
    """Glob patterns in pins and colocation groups, each matched against every op name."""
    if patterns * ops > MAX_PATTERN_WORK:
        raise locator.error(f"the constraints hold {patterns:,} op-name patterns, each matched against {ops:,} "
                            f"ops; patterns x ops may be at most {MAX_PATTERN_WORK:,}: name ops exactly or use "
                            "fewer patterns", ("constraints",))


def check_counts(ops: Sequence[Op], tensors: Sequence[Tensor], locator: Any,
                 op_loc: Mapping[str, tuple] | None = None) -> None:
    """Ops, tensors and op references of all models within the limits, before the graph is built."""
    if len(ops) > MAX_OPS:
        raise locator.error(f"the models have {len(ops):,} ops; the limit is {MAX_OPS:,}", ("models",))
    if len(tensors) > MAX_TENSORS:
        raise locator.error(f"the models have {len(tensors):,} tensors; the limit is {MAX_TENSORS:,}", ("models",))
    for o in ops:  # generators and imported models are not checked by the typed models
        longest = max(len(o.inputs), len(o.outputs), len(o.after))
        if longest > MAX_OP_IO:
            raise locator.error(f"op {o.name!r} has {longest:,} inputs, outputs or after entries; one op may have "
                                f"at most {MAX_OP_IO:,} of each", (op_loc or {}).get(o.name, ("models",)))
        if o.attrs and len(json.dumps(o.attrs, sort_keys=True, separators=(",", ":"), default=str)) > MAX_ATTRS_BYTES:
            raise locator.error(f"op {o.name!r} has attributes larger than {MAX_ATTRS_BYTES:,} bytes as JSON",
                                (op_loc or {}).get(o.name, ("models",)))
    refs = sum(len(o.inputs) + len(o.outputs) + len(o.after) for o in ops)
    if refs > MAX_OP_REFERENCES:
        raise locator.error(f"the ops have {refs:,} inputs, outputs and after entries together; the limit is "
                            f"{MAX_OP_REFERENCES:,}", ("models",))


def check_graph_size(graph: Graph, hw: Hardware, op_loc: Mapping[str, tuple], tensor_loc: Mapping[str, tuple],
                     locator: Any) -> None:
    """Tensor shapes and the scheduling problem's tables within the limits."""
    n_ops = len(graph.ops)
    for name, t in graph.tensors.items():
        if len(t.shape) > MAX_RANK or any(d > MAX_DIM for d in t.shape) or t.num_elements > MAX_TENSOR_ELEMENTS:
            raise locator.error(f"tensor {name!r} has shape {list(t.shape)}: at most {MAX_RANK} dimensions of at "
                                f"most 2^31 - 1 and 2^36 elements", tensor_loc.get(name, ("models",)))
    kinds = len({d.kind for d in hw.devices})
    for what, count, limit in (("ops x devices", n_ops * len(hw.devices), MAX_DURATION_TABLE),
                               ("ops x device kinds", n_ops * kinds, MAX_COST_TABLE),
                               ("graph edges x links", graph.dag.number_of_edges() * len(hw.links),
                                MAX_TRANSFER_TABLE)):
        if count > limit:
            raise locator.error(f"{what} is {count:,}, more than the {limit:,} the scheduling problem may "
                                "tabulate: use fewer devices, kinds or links, or a smaller graph", ("models",))


def check_op_shapes(graph: Graph, op_loc: Mapping[str, tuple], locator: Any) -> None:
    """Every op against its type's shape contract (:func:`planner.graph.shapes.check_op`)."""
    for op in graph.ops.values():
        try:
            check_graph_op(op, graph)
        except GraphError as e:
            raise locator.error(str(e), op_loc.get(op.name, ("models",))) from None


def cost_table(graph: Graph, hw: Hardware, op_loc: Mapping[str, tuple], locator: Any,
               explicit_links: int = 0) -> dict[tuple[str, str], int | None]:
    """Every op's duration on every device kind (the pipeline's table), each within
    :data:`MAX_CYCLES`, and every link's longest transfer too.

    Examples
    --------
    >>> from planner.graph.ir import Op
    >>> from planner.hardware import Device
    >>> from planner.isa.profiles import get_profile
    >>> from planner.spec.locator import Locator
    >>> hw = Hardware((Device("c0", "c", get_profile("generic")),), ())
    >>> cost_table(Graph([], [Op("m/t", "task", cycles={"c": 5})]), hw, {}, Locator({}))
    {('m/t', 'c'): 5}
    >>> cost_table(Graph([], [Op("m/t", "task", cycles={"c": 2**41})]), hw, {}, Locator({}))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: models: op 'm/t' would take 2,199,023,255,552 cycles on c (generic); the limit is 2^40 = 1,099,511,627,776 (check its shapes and cycles, and the device's clock and bandwidth)
    """
    try:
        table = cycles_table(graph, hw)
    except (GraphError, UnsupportedError) as e:
        name = getattr(e, "op", None)
        raise locator.error(str(e), op_loc.get(name or "", ("models",))) from None
    profiles = {d.kind: d.profile.name for d in hw.devices}
    for (name, kind), cycles in table.items():
        if cycles is not None and cycles > MAX_CYCLES:
            raise locator.error(f"op {name!r} would take {cycles:,} cycles on {kind} ({profiles[kind]}); the limit "
                                f"is 2^40 = {MAX_CYCLES:,} (check its shapes and cycles, and the device's clock "
                                "and bandwidth)", op_loc.get(name, ("models",)))
    _check_transfers(graph, hw, locator, explicit_links)
    return table


def _check_transfers(graph: Graph, hw: Hardware, locator: Any, explicit_links: int) -> None:
    largest = max((graph.edge_bytes(u, v) for u, v in graph.dag.edges), default=0)
    for j, link in enumerate(hw.links):  # the explicit links first, then the topology's
        cycles = link.transfer_cycles(largest, hw.clock_hz)
        if cycles > MAX_CYCLES:
            where = ("hardware", "links", j) if j < explicit_links else ("hardware", "topology")
            raise locator.error(f"link {link.name!r} would take {cycles:,} cycles to move the largest transfer "
                                f"({largest:,} bytes); the limit is 2^40 = {MAX_CYCLES:,} (raise its bandwidth or "
                                "lower its latency)", where)
