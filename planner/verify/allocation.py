"""``allocation.json`` against the binaries and the replay.

Per device: kind and streams as ``plan.json`` gives them; profile, clock, fast level, the
capacity of every level, instructions and end cycle as the binary's header and records
say; the compute streams used and the ops run as replayed; the reserved bytes of every
level the replayed peak; the buffers exactly the binary's ALLOC/FREE pairs in buffer-id
order. Per graph op: its device, the stream of its first instance, the start of its
first and the end of its last instance as replayed, and the instances when it ran as
several or under another name. The transfers: the replay's, in transfer-id order. The
resources: the ones ``plan.json`` gives for the models and ops (both are determined from
the graph and the hardware before anything runs), and per device the totals of the ops
placed there (:mod:`planner.verify.resources`).

Examples
--------
>>> _instances_of({"fc#0": "fc", "fc#1": "fc", "relu": "relu"})
{'fc': ['fc#0', 'fc#1'], 'relu': ['relu']}
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.errors import VerificationError
from planner.verify.resources import check_resources

__all__ = ["check_allocation_document"]

_FILE = "allocation.json"


def _fail(field: str, expected: Any, found: Any) -> VerificationError:
    return VerificationError(_FILE, field, expected=str(expected), found=str(found))


def _instances_of(base: Mapping[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, op in base.items():
        out.setdefault(op, []).append(name)
    return out


def _check_device(name: str, entry: Any, device: Any, program: Any, facts: Any, simulation: Any) -> None:
    at = f"devices.{name}"
    ops = sum(1 for t in simulation.ops.values() if t.device == name)
    want = {"kind": device.kind, "profile": program.profile, "clock_hz": program.device_clock_hz,
            "streams": program.num_streams, "streams_used": facts.streams_used, "ops": ops,
            "instructions": len(program.instructions), "end_cycle": program.end_cycle,
            "fast_level": program.fast.name if program.fast is not None else None}
    for key, value in want.items():
        if getattr(entry, key) != value:
            raise _fail(f"{at}.{key}", f"{value!r} (the binary)", repr(getattr(entry, key)))
    peaks = simulation.peak_bytes.get(name, {})
    levels = {lv.name: (lv.capacity_bytes, peaks.get(lv.name, 0)) for lv in program.levels}
    claimed = {k: (v.capacity_bytes, v.reserved_bytes) for k, v in entry.memory.items()}
    if claimed != levels:
        raise _fail(f"{at}.memory", f"{levels} (capacity, replayed peak per level)", claimed)
    table = [(n, b.level, b.address, b.size_bytes, b.start_cycle, b.end_cycle, b.preloaded, b.view)
             for n, b in facts.buffers.items()]
    listed = [(b.name, b.level, b.address, b.size_bytes, b.start_cycle, b.end_cycle, b.preloaded, b.view)
              for b in entry.buffers]
    if listed != table:
        first = next((i for i, (x, y) in enumerate(zip(listed, table)) if x != y), min(len(listed), len(table)))
        raise _fail(f"{at}.buffers[{first}]", f"{table[first] if first < len(table) else 'no buffer'} (the binary)",
                    listed[first] if first < len(listed) else "no buffer")


def _check_ops(alloc: Any, simulation: Any, base: Mapping[str, str]) -> None:
    instances = _instances_of(base)
    if list(alloc.ops) != list(instances) and sorted(alloc.ops) != sorted(instances):
        raise _fail("ops", f"the {len(instances)} ops of graph.json", f"{len(alloc.ops)} entries")
    for op, entry in alloc.ops.items():
        timings = sorted((simulation.ops[n].start_cycle, n) for n in instances[op])
        first = simulation.ops[timings[0][1]]
        want = (first.device, first.stream, timings[0][0], max(simulation.ops[n].end_cycle for n in instances[op]))
        claim = (entry.device, entry.stream, entry.start_cycle, entry.end_cycle)
        if claim != want:
            raise _fail(f"ops.{op}", f"device, stream, start, end = {want} (the replay)", claim)
        names = sorted(instances[op])
        listed = None if entry.instances is None else sorted(entry.instances)
        if listed != (None if names == [op] else names):
            raise _fail(f"ops.{op}.instances", names, listed)


def _check_transfers(alloc: Any, simulation: Any) -> None:
    replayed = list(simulation.transfers.values())
    if len(alloc.transfers) != len(replayed):
        raise _fail("transfers", f"{len(replayed)} transfers (the binaries)", len(alloc.transfers))
    for i, (t, r) in enumerate(zip(alloc.transfers, replayed)):
        want = (r.id, r.src_op, r.dst_op, r.src_device, r.dst_device, r.link, r.size_bytes, r.start_cycle,
                r.end_cycle)
        claim = (t.id, t.src_op, t.dst_op, t.src_device, t.dst_device, t.link, t.size_bytes, t.start_cycle,
                 t.end_cycle)
        if want != claim:
            raise _fail(f"transfers[{i}]", f"{want} (the binaries)", claim)


def check_allocation_document(alloc: Any, doc: Any, programs: Mapping[str, Any], facts: Mapping[str, Any],
                              simulation: Any, graph: Any, base: Mapping[str, str]) -> None:
    """Refuse the first claim of ``allocation.json`` the binaries and the replay do not bear out.

    Parameters are the validated :class:`~planner.verify.documents.AllocationDocument`, the
    validated plan document, the decoded programs and their facts by device, the replay,
    and the map from plan op names to graph ops.
    """
    for key in ("spec", "clock_hz"):
        if getattr(alloc, key) != getattr(doc, key):
            raise _fail(key, f"{getattr(doc, key)!r} (plan.json)", repr(getattr(alloc, key)))
    devices = {d.name: d for d in doc.devices}
    if list(alloc.devices) != list(devices):
        raise _fail("devices", f"{list(devices)} (plan.json)", list(alloc.devices))
    for name, entry in alloc.devices.items():
        _check_device(name, entry, devices[name], programs[name], facts[name], simulation)
    _check_ops(alloc, simulation, base)
    _check_transfers(alloc, simulation)
    for key in ("models", "ops"):
        if alloc.resources.get(key) != doc.resources.get(key):
            raise _fail(f"resources.{key}", "the resources plan.json gives", "different figures")
    device_of = {op: t.device for name, t in simulation.ops.items() for op in [base[name]]}
    levels = {name: ([lv.name for lv in p.levels], p.main.name) for name, p in programs.items()}
    check_resources(alloc.resources, graph, _FILE, device_of=device_of, devices=list(doc.devices), levels=levels)
