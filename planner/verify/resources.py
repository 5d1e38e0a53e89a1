"""The ``resources`` of ``plan.json`` and ``allocation.json`` against graph.json and the placement.

Resources are determined from the graph and the hardware before anything runs
(:mod:`planner.isa.resources`). What follows from graph.json and the replayed placement is
recomputed: per op its model and the bytes it reads, writes, holds as weights, takes as
graph input and gives as graph output; per model its op count and totals; per device
(``allocation.json`` only: ``plan.json`` has no placement) the ops placed there, their
totals, and the weights, inputs and outputs they touch, counted once per tensor. The cost
model's own counts (MACs, FLOPs, cycles per device kind) are checked for consistency
(every total is the sum of its ops'), not recomputed: they are the cost model's, which
the replay already re-times instruction by instruction.

Examples
--------
>>> _sum_of([{"macs": 2}, {"macs": 3}], "macs")
5
"""

from __future__ import annotations

from typing import Annotated, Any, Mapping, Optional

from pydantic import Field

from planner.errors import VerificationError
from planner.verify.documents import StrictModel, validate_document

__all__ = ["check_resources"]

_Count = Annotated[int, Field(ge=0, lt=1 << 63)]


class _OpRes(StrictModel):
    op: str
    model: str
    macs: _Count
    flops: _Count
    bytes_read: _Count
    bytes_written: _Count
    weight_bytes: _Count
    input_bytes: _Count
    output_bytes: _Count
    device_cycles: dict[str, _Count]
    timeline_cycles: dict[str, _Count]
    units: dict[str, str]


class _DevRes(StrictModel):
    device: str
    kind: str
    profile: str
    ops: _Count
    macs: _Count
    flops: _Count
    busy_cycles: _Count
    weight_bytes: dict[str, _Count]
    input_bytes: _Count
    output_bytes: _Count


class _ModelRes(StrictModel):
    model: str
    ops: _Count
    macs: _Count
    flops: _Count
    weight_bytes: _Count
    input_bytes: _Count
    output_bytes: _Count
    timeline_cycles: dict[str, _Count]


class _Resources(StrictModel):
    ops: dict[str, _OpRes]
    devices: dict[str, _DevRes]
    models: dict[str, _ModelRes]


def _sum_of(rows: list[Any], key: str) -> int:
    return sum(r[key] if isinstance(r, dict) else getattr(r, key) for r in rows)


def _bytes(graph: Any, tensors: set[str], kind: str) -> int:
    return sum(graph.tensors[t].size_bytes for t in tensors if graph.tensors[t].kind == kind)


def _expect(label: str, field: str, want: Any, got: Any) -> None:
    if want != got:
        raise VerificationError(label, field, expected=f"{want!r} (graph.json and the placement)", found=repr(got))


def _check_ops(res: _Resources, graph: Any, label: str) -> None:
    _expect(label, "resources.ops", list(graph.topological_order()), list(res.ops))
    for name, r in res.ops.items():
        op = graph.ops[name]
        ins = [graph.tensors[t] for t in op.inputs]
        want = {"op": name, "model": op.model, "bytes_read": sum(t.size_bytes for t in ins),
                "bytes_written": graph.output_bytes(name), "weight_bytes": graph.weight_bytes(name),
                "input_bytes": sum(t.size_bytes for t in ins if t.kind == "input"),
                "output_bytes": _bytes(graph, set(op.outputs), "output")}
        for key, value in want.items():
            _expect(label, f"resources.ops.{name}.{key}", value, getattr(r, key))


def _check_models(res: _Resources, graph: Any, label: str) -> None:
    models = sorted({op.model for op in graph.ops.values()})
    _expect(label, "resources.models", models, sorted(res.models))
    for model, r in res.models.items():
        names = [n for n in graph.topological_order() if graph.ops[n].model == model]
        tensors = {t for n in names for t in (*graph.ops[n].inputs, *graph.ops[n].outputs)}
        rows = [res.ops[n] for n in names]
        want = {"model": model, "ops": len(names), "macs": _sum_of(rows, "macs"), "flops": _sum_of(rows, "flops"),
                "weight_bytes": _bytes(graph, tensors, "weight"), "input_bytes": _bytes(graph, tensors, "input"),
                "output_bytes": _bytes(graph, tensors, "output"),
                "timeline_cycles": {k: sum(res.ops[n].timeline_cycles[k] for n in names)
                                    for k in r.timeline_cycles if all(k in res.ops[n].timeline_cycles for n in names)}}
        for key, value in want.items():
            _expect(label, f"resources.models.{model}.{key}", value, getattr(r, key))


def _check_devices(res: _Resources, graph: Any, device_of: Mapping[str, str], devices: list[Any],
                   levels: Mapping[str, tuple[list[str], str]], label: str) -> None:
    _expect(label, "resources.devices", [d.name for d in devices], list(res.devices))
    for d in devices:
        r = res.devices[d.name]
        names = [n for n in graph.topological_order() if device_of.get(n) == d.name]
        read = {t for n in names for t in graph.ops[n].inputs}
        written = {t for n in names for t in graph.ops[n].outputs}
        level_names, main = levels[d.name]
        rows = [res.ops[n] for n in names]
        want = {"device": d.name, "kind": d.kind, "profile": d.profile, "ops": len(names),
                "macs": _sum_of(rows, "macs"), "flops": _sum_of(rows, "flops"),
                "busy_cycles": sum(res.ops[n].timeline_cycles.get(d.kind, 0) for n in names),
                "weight_bytes": {lv: _bytes(graph, read, "weight") if lv == main else 0 for lv in level_names},
                "input_bytes": _bytes(graph, read, "input"), "output_bytes": _bytes(graph, written, "output")}
        for key, value in want.items():
            _expect(label, f"resources.devices.{d.name}.{key}", value, getattr(r, key))


def check_resources(resources: Any, graph: Any, label: str, *, device_of: Optional[Mapping[str, str]] = None,
                    devices: Optional[list[Any]] = None,
                    levels: Optional[Mapping[str, tuple[list[str], str]]] = None) -> None:
    """Refuse ``resources`` (of the file ``label``) that graph.json and the placement contradict.

    ``device_of`` maps graph ops to devices, ``devices`` are plan.json's, ``levels`` maps a
    device to (its level names, its main level); without them ``resources.devices`` must
    be empty (plan.json's resources are determined before placement).
    """
    res = validate_document(_Resources, resources, f"{label} resources")
    _check_ops(res, graph, label)
    _check_models(res, graph, label)
    if device_of is None:
        _expect(label, "resources.devices", {}, res.devices)
    else:
        _check_devices(res, graph, device_of, devices or [], levels or {}, label)
