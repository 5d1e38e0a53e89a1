"""Resources determined before anything runs: per op, per device and per model.

Everything is computed from the graph, the hardware and the cost model alone (no solver,
no schedule): MACs, FLOPs, cycles, weight storage per memory level and I/O bytes. The
lowering writes them into ``allocation.json`` and the report shows them.

Glossary
--------
weight bytes   bytes of ``weight`` tensors an op reads; resident in main memory for the
               whole run (counted once per device even when several ops share a tensor).
io bytes       bytes of the graph's ``input`` tensors read plus ``output`` tensors written.
busy cycles    the sum of a device's op durations on the plan's timeline.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from planner.errors import UnsupportedError
from planner.graph.ir import Graph
from planner.hardware import Device, Hardware
from planner.isa.cost import cached_op_cost

__all__ = ["OpResources", "DeviceResources", "ModelResources", "Resources", "determine_resources"]



def _record_dict(record: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` of a record whose fields are scalars or flat dicts of scalars.

    The same dict, built without ``asdict``'s recursive deep copy of every value: a
    10,000-op plan has 10^4 of these records, written into allocation.json and plan.json.
    """
    names = _FIELD_NAMES.get(type(record))
    if names is None:  # dataclasses.fields() walks the class each call: read it once per record type
        names = _FIELD_NAMES[type(record)] = tuple(f.name for f in fields(record))
    return {name: dict(value) if type(value) is dict else value
            for name in names for value in (getattr(record, name),)}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}

@dataclass(frozen=True, slots=True)
class OpResources:
    """One op's work and storage, and its cycles on each device kind that can run it.

    ``device_cycles`` and ``timeline_cycles`` (reference clock) map a device kind to the
    op's cycles there; a kind the op cannot run on (a ``task`` without cycles) is absent.

    Examples
    --------
    >>> OpResources("fc", "", 10, 20, 8, 4, 4, 0, 0, {"npu": 3}, {"npu": 3}, {"npu": "matrix"}).to_dict()["macs"]
    10
    """

    op: str
    model: str
    macs: int
    flops: int
    bytes_read: int
    bytes_written: int
    weight_bytes: int
    input_bytes: int
    output_bytes: int
    device_cycles: dict[str, int] = field(default_factory=dict)
    timeline_cycles: dict[str, int] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return _record_dict(self)


@dataclass(frozen=True, slots=True)
class DeviceResources:
    """The load a placement puts on one device.

    Examples
    --------
    >>> DeviceResources("d0", "d", "generic", 0, 0, 0, 0, {"mem": 0}, 0, 0).to_dict()["ops"]
    0
    """

    device: str
    kind: str
    profile: str
    ops: int
    macs: int
    flops: int
    busy_cycles: int
    weight_bytes: dict[str, int]  # per memory level (weights live in main memory)
    input_bytes: int
    output_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return _record_dict(self)


@dataclass(frozen=True, slots=True)
class ModelResources:
    """Totals of one model (ops sharing ``Op.model``).

    Examples
    --------
    ``timeline_cycles`` maps a device kind to the model's serial time on one device of
    that kind (the sum of its ops' durations), for kinds that can run every op.

    >>> ModelResources("m", 1, 2, 4, 8, 16, 32).to_dict()["weight_bytes"]
    8
    """

    model: str
    ops: int
    macs: int
    flops: int
    weight_bytes: int
    input_bytes: int
    output_bytes: int
    timeline_cycles: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return _record_dict(self)


@dataclass(frozen=True, slots=True)
class Resources:
    """All determined resources; ``devices`` is empty when no placement was given.

    Examples
    --------
    >>> Resources({}, {}, {}).to_dict()
    {'ops': {}, 'devices': {}, 'models': {}}
    """

    ops: dict[str, OpResources]
    devices: dict[str, DeviceResources]
    models: dict[str, ModelResources]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ops": {k: v.to_dict() for k, v in self.ops.items()},
            "devices": {k: v.to_dict() for k, v in self.devices.items()},
            "models": {k: v.to_dict() for k, v in self.models.items()},
        }


def _kinds(hardware: Hardware) -> dict[str, Device]:
    kinds: dict[str, Device] = {}
    for d in hardware.devices:
        kinds.setdefault(d.kind, d)
    return kinds


# The per-op records of a graph on a hardware, kept for the graph's life: the solve stage and
# allocation.json (after the solve) both determine them, about 0.2 s each for 10^4 ops. A Graph
# is never changed after construction, a Hardware is frozen and the records are frozen, so the
# records computed once stay right (the same rule as planner.isa.cost.cached_op_cost's table).
_OP_RESOURCES: weakref.WeakKeyDictionary[Graph, dict[Hardware, dict[str, "OpResources"]]] = \
    weakref.WeakKeyDictionary()


def _op_resources(graph: Graph, hardware: Hardware) -> dict[str, OpResources]:
    """Each op's record (a new dict of the records kept for ``graph`` and ``hardware``)."""
    kept = _OP_RESOURCES.get(graph)
    if kept is None:
        kept = _OP_RESOURCES.setdefault(graph, {})
    ops = kept.get(hardware)
    if ops is None:
        ops = kept[hardware] = _compute_op_resources(graph, hardware)
    return dict(ops)


def _compute_op_resources(graph: Graph, hardware: Hardware) -> dict[str, OpResources]:
    kinds = _kinds(hardware)
    out: dict[str, OpResources] = {}
    for name in graph.topological_order():
        op = graph.ops[name]
        dev_cycles, timeline, units = {}, {}, {}
        work = None
        for kind, dev in kinds.items():
            try:
                cost = cached_op_cost(op, graph, dev.profile, kind)
            except UnsupportedError:
                continue
            dev_cycles[kind] = cost.cycles
            timeline[kind] = hardware.to_timeline_cycles(cost.cycles, dev)
            units[kind] = cost.unit
            work = work or cost
        tensors = [graph.tensors[t] for t in op.inputs]
        out[name] = OpResources(
            op=name, model=op.model,
            macs=work.macs if work else 0, flops=work.flops if work else 0,
            bytes_read=sum(t.size_bytes for t in tensors),
            bytes_written=graph.output_bytes(name),
            weight_bytes=graph.weight_bytes(name),
            input_bytes=sum(t.size_bytes for t in tensors if t.kind == "input"),
            output_bytes=sum(graph.tensors[t].size_bytes for t in op.outputs
                             if graph.tensors[t].kind == "output"),
            device_cycles=dev_cycles, timeline_cycles=timeline, units=units)
    return out


def determine_resources(graph: Graph, hardware: Hardware,
                        placement: Mapping[str, str] | None = None) -> Resources:
    """Per-op, per-device (when ``placement`` maps op → device) and per-model resources.

    Parameters
    ----------
    graph, hardware
        The model and the machine.
    placement
        Optional op name → device instance name (e.g. from a plan).

    Returns
    -------
    Resources

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([Tensor("x", (4, 8), kind="input"), Tensor("w", (8, 2), kind="weight"),
    ...            Tensor("y", (4, 2), kind="output")], [Op("fc", "matmul", ("x", "w"), ("y",), model="m")])
    >>> hw = Hardware((Device("g0", "g", get_profile("generic")),), ())
    >>> r = determine_resources(g, hw, {"fc": "g0"})
    >>> r.ops["fc"].macs, r.devices["g0"].weight_bytes, r.models["m"].input_bytes
    (64, {'mem': 64}, 128)
    """
    ops = _op_resources(graph, hardware)
    devices: dict[str, DeviceResources] = {}
    if placement is not None:
        for dev in hardware.devices:
            names = [n for n in graph.topological_order() if placement.get(n) == dev.name]
            weights = {t for n in names for t in graph.ops[n].inputs if graph.tensors[t].kind == "weight"}
            inputs = {t for n in names for t in graph.ops[n].inputs if graph.tensors[t].kind == "input"}
            outputs = {t for n in names for t in graph.ops[n].outputs if graph.tensors[t].kind == "output"}
            main = dev.profile.main_memory.name
            devices[dev.name] = DeviceResources(
                device=dev.name, kind=dev.kind, profile=dev.profile.name, ops=len(names),
                macs=sum(ops[n].macs for n in names), flops=sum(ops[n].flops for n in names),
                busy_cycles=sum(ops[n].timeline_cycles.get(dev.kind, 0) for n in names),
                weight_bytes={lv.name: (sum(graph.tensors[t].size_bytes for t in weights)
                                        if lv.name == main else 0) for lv in dev.profile.memory},
                input_bytes=sum(graph.tensors[t].size_bytes for t in inputs),
                output_bytes=sum(graph.tensors[t].size_bytes for t in outputs))
    models: dict[str, ModelResources] = {}
    for model in sorted({op.model for op in graph.ops.values()}):
        names = [n for n in graph.topological_order() if graph.ops[n].model == model]
        tensors = {t for n in names for t in (*graph.ops[n].inputs, *graph.ops[n].outputs)}

        def kind_bytes(kind: str) -> int:
            return sum(graph.tensors[t].size_bytes for t in tensors if graph.tensors[t].kind == kind)

        models[model] = ModelResources(
            model=model, ops=len(names), macs=sum(ops[n].macs for n in names),
            flops=sum(ops[n].flops for n in names), weight_bytes=kind_bytes("weight"),
            input_bytes=kind_bytes("input"), output_bytes=kind_bytes("output"),
            timeline_cycles={k: sum(ops[n].timeline_cycles[k] for n in names) for k in _kinds(hardware)
                             if all(k in ops[n].timeline_cycles for n in names)})
    return Resources(ops, devices, models)
