"""Resolve a validated :class:`SpecDocument` into a :class:`Spec`.

Here the cross-references are checked and every name is made concrete: device kinds
become instances (``big0``, ``big1``...), topologies become links, models become one
merged graph with ``"<model>/"`` prefixes, pins become per-op allowed device tuples.
Each failure is a :class:`~planner.errors.SpecError` at the line of the offending value.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from pathlib import Path
from typing import Any, Sequence

from planner.errors import PlannerError, SpecError
from planner.graph.generators import generate
from planner.graph.ir import Graph, GraphError, Op, Tensor
from planner.graph.onnx_convert import load_onnx_graph
from planner.hardware import Device, Hardware, Island, Link, MemoryLevel
from planner.stage_timing import stage
from planner.isa.profiles import PROFILES, Profile, get_profile
from planner.reader import format_path
from planner.spec.islands import first_unjoined, resolve_islands
from planner.spec.limits import MAX_NAME_LENGTH
from planner.spec.locator import Locator, did_you_mean
from planner.spec.memory_options import MemoryOptions
from planner.spec.models import DeviceSpec, ModelSpec, SpecDocument, normalize_objective
from planner.spec.sizes import (
    check_device_count,
    check_generator_size,
    check_counts,
    check_graph_size,
    check_op_shapes,
    check_pattern_work,
    check_topology_size,
    cost_table,
)
from planner.spec.types import MaxLoadOptions, Spec
from planner.spec.units import parse_duration_cycles
from planner.units import format_bytes

__all__ = ["resolve", "name_from_stem", "resolve_hardware", "resolve_memory", "resolve_homes", "resolve_objective", "check_tensor_sizes"]

_GLOB = set("*?[")


def resolve_hardware(document: SpecDocument, locator: Locator) -> Hardware:
    """Device instances, links (explicit, then from the topology) and memory limits.

    Examples
    --------
    >>> from planner.spec.models import SpecDocument
    >>> doc = SpecDocument.model_validate({"hardware": {
    ...     "devices": [{"name": "n", "profile": "generic", "count": 3}],
    ...     "topology": {"kind": "ring", "bandwidth": "1 GB/s", "latency": 5}},
    ...     "models": [{"name": "m", "generator": {"kind": "mlp"}}]})
    >>> [l.name for l in resolve_hardware(doc, Locator(doc.model_dump())).links]
    ['link_n0_n1', 'link_n1_n2', 'link_n2_n0']
    """
    check_device_count(document, locator)
    devices, kinds = _resolve_devices(document, locator)
    names = [d.name for d in devices]
    check_topology_size(document, len(names), locator)
    links = _explicit_links(document, names, kinds, locator)
    islands: tuple[Island, ...] = ()
    if document.hardware.islands:
        island_links, islands = resolve_islands(document, names, kinds, links, locator)
        links += island_links
    else:
        links += _topology_links(document, names, {link.name for link in links}, locator)
    _check_connected(names, links, locator)
    limits: dict[str, int] = {}
    for j, lim in enumerate(document.constraints.memory_limits):
        targets = _device_targets(lim.device, kinds, names, locator,
                                  ("constraints", "memory_limits", j, "device"))
        for t in targets:
            limits[t] = min(limits.get(t, lim.max), lim.max)
    devices = [dataclasses.replace(d, memory_limit_bytes=limits[d.name]) if d.name in limits else d
               for d in devices]
    return Hardware(tuple(devices), tuple(links), document.hardware.clock, islands)


def _resolve_devices(document: SpecDocument, locator: Locator) -> tuple[list[Device], dict[str, tuple[str, ...]]]:
    """The device instances of every kind (``big0``, ``big1``...), and each kind's instance names;
    a name that is both a kind and an instance is refused."""
    devices: list[Device] = []
    kinds: dict[str, tuple[str, ...]] = {}
    owner: dict[str, tuple] = {}  # every instance and kind name -> where it was declared
    for i, dspec in enumerate(document.hardware.devices):
        where = ("hardware", "devices", i)
        if dspec.name in kinds:
            raise locator.error(f"device kind {dspec.name!r} is declared twice", (*where, "name"))
        profile = _device_profile(dspec, where, locator)
        instances = tuple(f"{dspec.name}{k}" for k in range(dspec.count))
        for name in (dspec.name, *instances):
            if name in owner and owner[name] != where:
                raise locator.error(
                    f"name {name!r} is ambiguous: it is both a device kind and an instance "
                    f"(declared at {format_path(owner[name])})", (*where, "name"))
            owner[name] = where
        kinds[dspec.name] = instances
        devices.extend(Device(n, dspec.name, profile, dspec.streams) for n in instances)
    return devices, kinds


def _device_profile(dspec: DeviceSpec, where: tuple, locator: Locator) -> Profile:
    """A device kind's profile, with the spec's clock and memory levels in place of the profile's."""
    try:
        profile = get_profile(dspec.profile)
    except KeyError:
        raise locator.error(f"unknown profile {dspec.profile!r}" + did_you_mean(dspec.profile, list(PROFILES))
                            + f" (known: {', '.join(sorted(PROFILES))})", (*where, "profile")) from None
    if dspec.clock is not None:
        profile = dataclasses.replace(profile, clock_hz=dspec.clock)
    if dspec.memory is not None:
        names = [m.name for m in dspec.memory]
        for j, m in enumerate(dspec.memory):
            if names.index(m.name) != j:
                raise locator.error(f"memory level {m.name!r} is listed twice", (*where, "memory", j, "name"))
        # The spec's levels replace the profile's hierarchy whole: the largest is main and a
        # DMA joins every pair, as the profile's own main level and paths name its levels.
        profile = dataclasses.replace(profile, memory=tuple(
            MemoryLevel(m.name, m.capacity, m.bandwidth) for m in dspec.memory), main_level="", dma_paths=(),
            dma_rates=())
    return _hierarchy_overrides(profile, dspec, where, locator)


def _hierarchy_overrides(profile: Profile, dspec: DeviceSpec, where: tuple, locator: Locator) -> Profile:
    """The profile with the spec's ``main`` level and ``dma_paths`` in place, each name checked."""
    names = [m.name for m in profile.memory]

    def known(name: str, loc: tuple) -> str:
        if name not in names:
            raise locator.error(f"profile {profile.name} has no memory level {name!r} (its levels: "
                                f"{', '.join(names)})" + did_you_mean(name, names), loc)
        return name

    if dspec.main is not None:
        profile = dataclasses.replace(profile, main_level=known(dspec.main, (*where, "main")))
    if dspec.dma_paths is not None:
        pairs: list[tuple[str, str]] = []
        for j, (a, b) in enumerate(dspec.dma_paths):
            pair = (known(a, (*where, "dma_paths", j, 0)), known(b, (*where, "dma_paths", j, 1)))
            if a == b:
                raise locator.error(f"a DMA path joins two different levels, got {a} twice", (*where, "dma_paths", j))
            if pair in pairs or pair[::-1] in pairs:
                raise locator.error(f"DMA path {a}-{b} is listed twice", (*where, "dma_paths", j))
            pairs.append(pair)
        profile = dataclasses.replace(profile, dma_paths=tuple(pairs))
    if dspec.dma_rates is not None:
        rates: list[tuple[str, str, int]] = []
        for j, r in enumerate(dspec.dma_rates):
            loc = (*where, "dma_rates", j)
            a, b = known(r.between[0], (*loc, "between", 0)), known(r.between[1], (*loc, "between", 1))
            if a == b:
                raise locator.error(f"a DMA rate joins two different levels, got {a} twice", (*loc, "between"))
            if not profile.has_dma_path(a, b):
                raise locator.error(f"no DMA path joins {a} and {b} (its DMA paths: "
                                    f"{', '.join(f'{x}-{y}' for x, y in profile.dma_paths)})", (*loc, "between"))
            if any({a, b} == {x, y} for x, y, _ in rates):
                raise locator.error(f"DMA path {a}-{b} has its rate twice", loc)
            if r.bandwidth <= 0:
                raise locator.error(f"a DMA rate must be positive, got {r.bandwidth} B/s", (*loc, "bandwidth"))
            rates.append((a, b, r.bandwidth))
        profile = dataclasses.replace(profile, dma_rates=tuple(rates))
    return profile


def _explicit_links(document: SpecDocument, names: list[str], kinds: dict[str, tuple[str, ...]],
                    locator: Locator) -> list[Link]:
    """The spec's ``links``, between device instances each named once."""
    links: list[Link] = []
    link_names: set[str] = set()
    for j, lspec in enumerate(document.hardware.links or []):
        where = ("hardware", "links", j)
        if lspec.name in link_names:
            raise locator.error(f"link {lspec.name!r} is declared twice", (*where, "name"))
        for k, dev in enumerate(lspec.between):
            if dev not in names:
                hint = (f"; {dev!r} is a device kind, name its instances ({', '.join(kinds[dev])})"
                        if dev in kinds else did_you_mean(dev, names))
                raise locator.error(f"unknown device instance {dev!r}{hint}", (*where, "between", k))
            if lspec.between.index(dev) != k:
                raise locator.error(f"device {dev!r} is listed twice", (*where, "between", k))
        link_names.add(lspec.name)
        links.append(Link(lspec.name, tuple(lspec.between), lspec.bandwidth,
                          parse_duration_cycles(lspec.latency, document.hardware.clock)))
    return links


def _topology_links(document: SpecDocument, names: list[str], link_names: set[str], locator: Locator) -> list[Link]:
    """The links the ``topology`` generates (all-to-all, ring or one bus), none of them named as an explicit one."""
    topo = document.hardware.topology
    if topo is None or len(names) <= 1:
        return []
    latency = parse_duration_cycles(topo.latency, document.hardware.clock)
    n = len(names)
    if topo.kind == "all-to-all":
        pairs = [(names[a], names[b]) for a in range(n) for b in range(a + 1, n)]
    elif topo.kind == "ring":
        pairs = [(names[i], names[(i + 1) % n]) for i in range(n if n > 2 else 1)]
    else:
        pairs = []
    generated = ([(f"link_{a}_{b}", (a, b)) for a, b in pairs] if topo.kind != "bus"
                 else [("bus", tuple(names))])
    links = []
    for lname, members in generated:
        if lname in link_names:
            raise locator.error(f"link {lname!r} of the topology has the name of an explicit link",
                                ("hardware", "topology"))
        link_names.add(lname)
        links.append(Link(lname, members, topo.bandwidth, latency))
    return links


def _check_connected(names: list[str], links: list[Link], locator: Locator) -> None:
    """Devices not joined directly (e.g. across a ring) simply never exchange data; devices
    in separate islands of links could never cooperate, which is a spec mistake."""
    if len(names) > 1 and not links:
        raise locator.error(f"devices {names[0]} and {names[1]} cannot exchange data: "
                            "add links or a topology", ("hardware",))
    b = first_unjoined(names, links)
    if b is not None:
        raise locator.error(f"devices {names[0]} and {b} cannot exchange data: no chain of links "
                            "joins them; add links or a topology", ("hardware", "links"))


def _device_targets(name: str, kinds: dict[str, tuple[str, ...]], instances: Sequence[str],
                    locator: Locator, loc: tuple) -> tuple[str, ...]:
    if name in kinds:
        return kinds[name]
    if name in instances:
        return (name,)
    raise locator.error(f"unknown device {name!r}" + did_you_mean(name, [*instances, *kinds])
                        + f" (instances: {', '.join(instances)}; kinds: {', '.join(kinds)})", loc)


def _prefixed(model: str, tensors: list[Tensor], ops: list[Op]) -> tuple[list[Tensor], list[Op]]:
    """Prefix names with ``model/`` unless they already are, and set each op's model."""
    pre = f"{model}/"
    if all(t.name.startswith(pre) for t in tensors) and all(o.name.startswith(pre) for o in ops):
        return tensors, [dataclasses.replace(o, model=model) for o in ops]
    p = lambda n: pre + n  # noqa: E731
    return ([dataclasses.replace(t, name=p(t.name)) for t in tensors],
            [dataclasses.replace(o, name=p(o.name), inputs=tuple(map(p, o.inputs)),
                                 outputs=tuple(map(p, o.outputs)), after=tuple(map(p, o.after)),
                                 model=model) for o in ops])


def _inline_graph(m: ModelSpec, where: tuple, locator: Locator,
                  op_loc: dict[str, tuple]) -> tuple[list[Tensor], list[Op]]:
    g = m.graph
    assert g is not None and g.ops is not None
    pre = f"{m.name}/"
    tensors: list[Tensor] = []
    tset: set[str] = set()
    for k, t in enumerate(g.tensors or []):
        tloc = (*where, "graph", "tensors", k)
        if t.name in tset:
            raise locator.error(f"tensor {t.name!r} is defined twice", (*tloc, "name"))
        tset.add(t.name)
        try:
            tensors.append(Tensor(pre + t.name, tuple(t.shape), t.dtype, t.kind))
        except GraphError as e:
            raise locator.error(str(e), tloc) from None
    tnames = [t.name for t in g.tensors or []]
    onames = {o.name for o in g.ops}
    ops: list[Op] = []
    seen: set[str] = set()
    for k, o in enumerate(g.ops):
        oloc = (*where, "graph", "ops", k)
        if o.name in seen:
            raise locator.error(f"op {o.name!r} is defined twice", (*oloc, "name"))
        seen.add(o.name)
        for field_name in ("inputs", "outputs"):
            for j, t in enumerate(getattr(o, field_name)):
                if t not in tset:
                    raise locator.error(f"op {o.name!r} references unknown tensor {t!r}"
                                        + did_you_mean(t, tnames), (*oloc, field_name, j))
        for j, a in enumerate(o.after):
            if a not in onames:
                raise locator.error(f"op {o.name!r} comes after unknown op {a!r}" + did_you_mean(a, sorted(onames)),
                                    (*oloc, "after", j))
        if o.type == "task" and not o.cycles:
            raise locator.error(f"task op {o.name!r} needs cycles for at least one device kind, "
                                "e.g. cycles: {big: 100}", oloc)
        op_loc[pre + o.name] = oloc
        ops.append(Op(pre + o.name, o.type, tuple(pre + t for t in o.inputs), tuple(pre + t for t in o.outputs),
                      dict(o.attrs), dict(o.cycles), m.name, tuple(pre + a for a in o.after)))
    written = {t for o in g.ops for t in o.outputs}
    for k, t in enumerate(g.tensors or []):
        if t.kind == "output" and t.name not in written:
            raise locator.error(f"tensor {t.name!r} is an output of the graph, but no op produces it "
                                "(make it an input or a weight, or write it by an op)", (*where, "graph", "tensors", k, "kind"))
    return tensors, ops


def _onnx_graph(m: ModelSpec, where: tuple, locator: Locator, base_dir: Path) -> tuple[list[Tensor], list[Op]]:
    assert m.graph is not None and m.graph.onnx is not None
    loc = (*where, "graph", "onnx")
    path = Path(m.graph.onnx)
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise locator.error(f"ONNX file not found: {path}", loc)
    try:
        import onnx  # noqa: F401  # optional dependency (onnx extra)
    except ImportError as e:
        raise locator.error(f"ONNX import is not available ({e})", loc) from None
    try:
        tensors, ops = load_onnx_graph(path, m.name)
    except SpecError as e:
        if e.file:
            raise
        raise locator.error(f"{path.name}: {e.message}", loc) from None
    except (PlannerError, ValueError, OSError) as e:
        raise locator.error(f"cannot import {path.name}: {e}", loc) from None
    return _prefixed(m.name, list(tensors), list(ops))


def _expand(pattern: str, op_names: Sequence[str], locator: Locator, loc: tuple,
            known: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Op names matching a name or fnmatch pattern (at least one, else a SpecError); ``known``
    is the set of ``op_names`` (for a constant-time lookup of a plain name)."""
    if not _GLOB & set(pattern):
        if pattern in (known or op_names):
            return [pattern]
        message = f"unknown op {pattern!r}"
    else:
        matched = [n for n in op_names if fnmatch.fnmatchcase(n, pattern)]
        if matched:
            return matched
        message = f"pattern {pattern!r} matches no op"
    hint = did_you_mean(pattern, op_names) if message.startswith("unknown") else ""
    if not hint and "/" in pattern:
        prefix = pattern[:min((pattern.index(c) for c in _GLOB if c in pattern), default=len(pattern))]
        prefix = prefix[:prefix.rfind("/") + 1]
        while prefix and not any(n.startswith(prefix) for n in op_names):
            prefix = prefix[:prefix[:-1].rfind("/") + 1]
        if prefix:
            below: list[str] = []
            for n in op_names:
                if n.startswith(prefix):
                    rest = n[len(prefix):]
                    entry = prefix + (rest[:rest.index("/") + 1] if "/" in rest else rest)
                    if entry not in below:
                        below.append(entry)
            shown = ", ".join(below[:8]) + (", ..." if len(below) > 8 else "")
            hint = f" (names under {prefix!r}: {shown})"
    if not hint and "/" not in pattern:
        models = sorted({n.split("/", 1)[0] for n in op_names})
        hint = f" (op names start with their model's name: {', '.join(m + '/' for m in models)})"
    raise locator.error(message + hint, loc)


def _glob_patterns(document: SpecDocument) -> int:
    """Pin and colocation entries that are patterns (each is matched against every op name)."""
    entries = [p for pin in document.constraints.pins for p in ([pin.ops] if isinstance(pin.ops, str) else pin.ops)]
    entries += [e for group in document.constraints.colocate for e in group]
    return sum(1 for e in entries if _GLOB & set(e))


def _pins(document: SpecDocument, hw: Hardware, order: Sequence[str],
          locator: Locator) -> dict[str, tuple[str, ...]]:
    kinds: dict[str, tuple[str, ...]] = {}
    for d in hw.devices:
        kinds.setdefault(d.kind, ())
        kinds[d.kind] += (d.name,)
    instances = [d.name for d in hw.devices]
    allowed: dict[str, set[str]] = {}
    source: dict[str, int] = {}
    pins = document.constraints.pins
    known = set(order)
    for i, pin in enumerate(pins):
        where = ("constraints", "pins", i)
        devices = set(_device_targets(pin.device, kinds, instances, locator, (*where, "device")))
        patterns = [pin.ops] if isinstance(pin.ops, str) else pin.ops
        for j, pattern in enumerate(patterns):
            ploc = (*where, "ops") if isinstance(pin.ops, str) else (*where, "ops", j)
            for op in _expand(pattern, order, locator, ploc, known):
                if op in allowed:
                    both = allowed[op] & devices
                    if not both:
                        first = pins[source[op]]
                        raise locator.error(
                            f"pins conflict on op {op!r}: constraints.pins[{source[op]}] puts it on "
                            f"{first.device} and constraints.pins[{i}] on {pin.device}", where)
                    allowed[op] = both
                else:
                    allowed[op], source[op] = set(devices), i
    return {op: tuple(n for n in instances if n in allowed[op]) for op in order if op in allowed}


def _colocation(document: SpecDocument, order: Sequence[str], allowed: dict[str, tuple[str, ...]],
                locator: Locator) -> tuple[tuple[str, ...], ...]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    group_of: dict[str, int] = {}
    known = set(order)
    for i, group in enumerate(document.constraints.colocate):
        where = ("constraints", "colocate", i)
        members: list[str] = []
        for j, entry in enumerate(group):
            members.extend(_expand(entry, order, locator, (*where, j), known))
        common = set(allowed.get(members[0], ())) if members[0] in allowed else None
        for op in members:
            if op in allowed:
                common = set(allowed[op]) if common is None else common & set(allowed[op])
        if common is not None and not common:
            raise locator.error("these ops must share a device, but their pins leave none in common", where)
        for op in members:
            group_of.setdefault(op, i)
            parent[find(op)] = find(members[0])
    position = {n: k for k, n in enumerate(order)}
    groups: dict[str, list[str]] = {}
    for op in sorted(parent, key=position.__getitem__):
        groups.setdefault(find(op), []).append(op)
    out = tuple(tuple(g) for g in groups.values() if len(g) > 1)
    for g in out:  # merged groups: check the pins again
        pinned = [set(allowed[o]) for o in g if o in allowed]
        if pinned and not set.intersection(*pinned):
            raise locator.error("overlapping colocation groups must share a device, but their pins leave "
                                "none in common", ("constraints", "colocate", group_of[g[0]]))
    return tuple(sorted(out, key=lambda g: position[g[0]]))


def _gangs(document: SpecDocument, order: Sequence[str], hw: Hardware,
           locator: Locator) -> tuple[tuple[str, ...], ...]:
    """``constraints.gang``: each gang's ops (graph order), at least two, in no other gang, no more
    than the largest island has devices; only with islands (memory planning keeps them:
    :func:`planner.memory.retime.list_schedule`)."""
    entries = document.constraints.gang
    if not entries:
        return ()
    where = ("constraints", "gang")
    if len(hw.islands) < 2:
        raise locator.error("gangs are planned by island: constraints.gang needs hardware.islands (two or more)",
                            where)
    largest = max(len(island.devices) for island in hw.islands)
    owner: dict[str, int] = {}
    position = {n: k for k, n in enumerate(order)}
    known = set(order)
    gangs = []
    for i, patterns in enumerate(entries):
        members = dict.fromkeys(op for j, p in enumerate(patterns)
                                for op in _expand(p, order, locator, (*where, i, j), known))
        for op in members:
            if op in owner:
                raise locator.error(f"op {op!r} is in two gangs (constraints.gang[{owner[op]}] and [{i}])",
                                    (*where, i))
            owner[op] = i
        if not 2 <= len(members) <= largest:
            raise locator.error(f"a gang needs 2 to {largest} ops (the largest island's devices, one shard each); "
                                f"this one has {len(members)}", (*where, i))
        gangs.append(tuple(sorted(members, key=position.__getitem__)))
    return tuple(gangs)


def resolve_memory(document: SpecDocument, hw: Hardware, locator: Locator) -> MemoryOptions:
    """The ``memory:`` section as :class:`~planner.spec.memory_options.MemoryOptions`.

    ``fast`` given as one level name becomes a mapping over every device kind (hardware
    order); each named level must exist on that kind and must not be its main memory (the
    largest level, where the slow copy of every tensor stays). ``split_factors`` become a
    sorted tuple without repeats that always starts with 1.

    Raises
    ------
    planner.errors.SpecError
        At ``memory.fast`` (or ``memory.fast.<kind>``) for a kind no device has, a level the
        kind lacks, or the main level; at ``memory.alignment`` for an alignment larger than a
        memory level.

    Examples
    --------
    >>> from planner.spec.models import SpecDocument
    >>> data = {"hardware": {"devices": [{"name": "tpu", "profile": "tpu-v4"},
    ...                                  {"name": "npu", "profile": "edge-npu"}],
    ...                      "topology": {"kind": "bus", "bandwidth": "1 GB/s"}},
    ...         "models": [{"name": "m", "generator": {"kind": "mlp"}}],
    ...         "memory": {"plan": True, "fast": {"npu": "sram"}, "split_factors": [4, 2]}}
    >>> doc = SpecDocument.model_validate(data)
    >>> resolve_memory(doc, resolve_hardware(doc, Locator(data)), Locator(data))
    MemoryOptions(enabled=True, fast={'npu': 'sram'}, split=True, split_factors=(1, 2, 4), alignment_bytes=64, home={}, shared_bandwidth=False)
    >>> data["memory"]["fast"] = "vmem"
    >>> resolve_memory(doc.model_validate(data), resolve_hardware(doc, Locator(data)), Locator(data))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: memory.fast: device kind 'npu' (profile edge-npu) has no memory level 'vmem' (its levels: sram, lpddr); name a level per kind with a mapping, e.g. fast: {tpu: vmem, npu: sram}
    """
    mem = document.memory
    profiles: dict[str, object] = {}
    for d in hw.devices:
        profiles.setdefault(d.kind, d.profile)
    kinds = list(profiles)
    fast: dict[str, str] = {}
    if isinstance(mem.fast, str):
        for kind in kinds:
            fast[kind] = _fast_level(kind, mem.fast, profiles, ("memory", "fast"), locator, single=True)
    elif mem.fast is not None:
        for kind, level in mem.fast.items():
            if kind not in profiles:
                raise locator.error(f"no device has kind {kind!r}" + did_you_mean(kind, kinds)
                                    + f" (kinds: {', '.join(kinds)})", ("memory", "fast", kind), key=True)
        for kind in kinds:  # hardware order, so equal specs give equal options
            if kind in mem.fast:
                fast[kind] = _fast_level(kind, mem.fast[kind], profiles, ("memory", "fast", kind), locator)
    level, owner = min(((m, kind) for kind, p in profiles.items() for m in p.memory),
                       key=lambda lk: lk[0].capacity_bytes)
    if mem.alignment > level.capacity_bytes:
        raise locator.error(f"alignment {format_bytes(mem.alignment)} is larger than memory level {level.name} of "
                            f"device kind {owner} ({format_bytes(level.capacity_bytes)}): no second buffer could "
                            "start in it", ("memory", "alignment"))
    if mem.plan:
        _check_default_fast_levels(profiles, fast, locator)
    factors = tuple(sorted({1, *mem.split_factors}))
    return MemoryOptions(enabled=mem.plan, fast=fast, split=mem.split, split_factors=factors,
                         alignment_bytes=mem.alignment, shared_bandwidth=mem.bandwidth == "shared")


def resolve_homes(document: SpecDocument, graph, hw: Hardware, locator: Locator) -> dict[str, str]:
    """``memory.home``: per weight or graph input, the level holding its persistent copy.

    Each tensor must be a weight or graph input of the merged graph (full name,
    ``"<model>/<tensor>"``), and its level a level of every device kind, listed at or after
    that kind's main memory (a home holds the copy the plan starts from; a level faster than
    main is a cache, not a home). Entries naming main memory are dropped (the default).

    Raises
    ------
    planner.errors.SpecError
        At ``memory.home.<tensor>`` for an unknown tensor, an activation or output, an unknown
        level or a level listed before main memory.
    """
    homes: dict[str, str] = {}
    profiles: dict[str, object] = {}
    for d in hw.devices:
        profiles.setdefault(d.kind, d.profile)
    for tensor, level in document.memory.home.items():
        loc = ("memory", "home", tensor)
        if tensor not in graph.tensors:
            raise locator.error(f"unknown tensor {tensor!r}" + did_you_mean(tensor, list(graph.tensors))
                                + ' (tensors are named "<model>/<tensor>")', loc, key=True)
        if graph.tensors[tensor].kind != "weight" and graph.producer(tensor) is not None:
            raise locator.error(f"tensor {tensor!r} is produced by op {graph.producer(tensor)!r}: only weights "
                                "and graph inputs have a home other than main memory", loc, key=True)
        for kind, profile in profiles.items():
            names = [m.name for m in profile.memory]
            main = profile.main_memory.name
            if level not in names:
                raise locator.error(f"device kind {kind!r} (profile {profile.name}) has no memory level {level!r} "
                                    f"(its levels: {', '.join(names)})" + did_you_mean(level, names), loc)
            if names.index(level) < names.index(main):
                below = [n for n in names[names.index(main):]]
                raise locator.error(f"device kind {kind!r}: home level {level} is listed before main memory {main}; "
                                    f"a home is main memory or a level after it ({', '.join(below)})", loc)
        if any(level != p.main_memory.name for p in profiles.values()):
            homes[tensor] = level
    return dict(sorted(homes.items()))


def _fast_level(kind: str, level: str, profiles: dict, loc: tuple, locator: Locator, *,
                single: bool = False) -> str:
    """Check that ``level`` is a level of ``kind`` other than its main memory."""
    profile = profiles[kind]
    levels = [m.name for m in profile.memory]
    if level not in levels:
        elsewhere = single and any(level in (m.name for m in p.memory) for p in profiles.values())
        if elsewhere:  # right for another kind: the mapping form is the way out
            example = ", ".join(f"{k}: {_fastest_other(p)}" for k, p in profiles.items()
                                if _fastest_other(p) is not None)
            hint = f"; name a level per kind with a mapping, e.g. fast: {{{example}}}"
        else:
            hint = did_you_mean(level, levels)
        raise locator.error(f"device kind {kind!r} (profile {profile.name}) has no memory level {level!r} "
                            f"(its levels: {', '.join(levels)})" + hint, loc)
    main = profile.main_memory.name
    if level == main:
        others = [n for n in levels if n != main]
        hint = (f" (its other levels: {', '.join(others)})" if others
                else "; it has one level only, so it cannot be memory-planned")
        raise locator.error(f"device kind {kind!r}: the fast level must differ from main memory {main}; "
                            f"memory planning keeps the slow copy in main memory" + hint, loc)
    # A named main level orders the hierarchy around it (host memory below the device's); the
    # largest-is-main rule never did, so levels listed after it stay usable there.
    if profile.main_level and levels.index(level) > levels.index(main):
        raise locator.error(f"device kind {kind!r}: the fast level {level} is listed after main memory {main} "
                            f"(levels are fastest first: {', '.join(levels)}); memory planning moves data "
                            f"from main memory up to a faster level", loc)
    if not profile.has_dma_path(level, main):
        paths = ", ".join(f"{a}-{b}" for a, b in profile.dma_paths)
        usable = [n for n in levels if n != main and profile.has_dma_path(n, main)
                  and not (profile.main_level and levels.index(n) > levels.index(main))]
        raise locator.error(f"device kind {kind!r} (profile {profile.name}): no DMA path joins {level} to main "
                            f"memory {main} (its DMA paths: {paths}); the levels between them cannot be "
                            f"skipped. Levels with a path to {main}: {', '.join(usable) or 'none'}", loc)
    return level


def _check_default_fast_levels(profiles: dict, fast: dict[str, str], locator: Locator) -> None:
    """A kind with no fast level named plans over its fastest: it too needs a DMA path to main."""
    for kind, profile in profiles.items():
        fastest = profile.memory[0].name
        if kind not in fast and fastest != profile.main_memory.name and not profile.has_dma_path(
                fastest, profile.main_memory.name):
            usable = [m.name for m in profile.memory if m.name != profile.main_memory.name
                      and profile.has_dma_path(m.name, profile.main_memory.name)]
            raise locator.error(f"device kind {kind!r}: its fastest level {fastest}, the default fast level, has "
                                f"no DMA path to main memory {profile.main_memory.name}; name a fast level with "
                                f"one (memory.fast: {{{kind}: {usable[0] if usable else '...'}}})", ("memory", "plan"))


def _fastest_other(profile) -> str | None:
    """The first level of a profile that is not its main memory (for examples in messages)."""
    main = profile.main_memory.name
    return next((m.name for m in profile.memory if m.name != main), None)


def resolve_objective(document: SpecDocument, hw: Hardware,
                      locator: Locator) -> tuple[str, MaxLoadOptions | None]:
    """The objective's canonical name and, for max-load, its resolved options.

    Max-load (Tarnawski et al., NeurIPS 2020) knows identical accelerators and identical
    CPUs: the hardware must have one accelerator kind and at most one CPU kind (named by
    ``objective.cpu``, else the kind named ``cpu`` when there are two kinds), every
    accelerator the same main memory, a link between every two devices (the model moves
    any output between any two devices), no memory planning, and pins only to CPUs (the
    model has no other per-op restriction).

    Raises
    ------
    planner.errors.SpecError
        At the offending key (``objective``, ``objective.cpu``, a pin, ``memory.plan``...).

    Examples
    --------
    >>> data = {"hardware": {"devices": [{"name": "acc", "profile": "generic", "count": 2},
    ...                                  {"name": "cpu", "profile": "generic"}],
    ...                      "topology": {"kind": "all-to-all", "bandwidth": "1 GB/s"}},
    ...         "models": [{"name": "m", "generator": {"kind": "mlp"}}],
    ...         "objective": {"kind": "max_load", "contiguous": True}}
    >>> doc = SpecDocument.model_validate(data)
    >>> resolve_objective(doc, resolve_hardware(doc, Locator(data)), Locator(data))
    ('max-load', MaxLoadOptions(contiguous=True, accelerator_kind='acc', cpu_kind='cpu'))
    >>> data["hardware"]["devices"][1]["name"] = "host"
    >>> doc = SpecDocument.model_validate(data)
    >>> resolve_objective(doc, resolve_hardware(doc, Locator(data)), Locator(data))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: objective: max-load has one accelerator kind and at most one CPU kind, but the hardware has kinds acc, host and none is named cpu; say which is the CPU, e.g. objective: {kind: max-load, cpu: host}
    """
    obj = document.objective
    kind = normalize_objective(obj.kind)
    if kind != "max-load":
        return kind, None
    kinds: dict[str, list[Device]] = {}
    for d in hw.devices:
        kinds.setdefault(d.kind, []).append(d)
    cpu, acc = _max_load_kinds(obj, list(kinds), locator)
    _check_max_load_hardware(document, hw, kinds, acc, cpu, locator)
    return kind, MaxLoadOptions(obj.contiguous, acc, cpu)


def _max_load_kinds(obj: Any, names: list[str], locator: Locator) -> tuple[str | None, str | None]:
    """The CPU kind and the one accelerator kind of a max-load objective (either may be None)."""
    if obj.cpu is not None:
        if obj.cpu not in names:
            raise locator.error(f"no device has kind {obj.cpu!r}" + did_you_mean(obj.cpu, names)
                                + f" (kinds: {', '.join(names)})", ("objective", "cpu"))
        cpu: str | None = obj.cpu
    else:
        cpu = "cpu" if "cpu" in names and len(names) > 1 else None
    accelerators = [k for k in names if k != cpu]
    if len(accelerators) > 1:
        if cpu is None and len(names) == 2:
            hint = (f" and none is named cpu; say which is the CPU, e.g. objective: "
                    f"{{kind: max-load, cpu: {names[-1]}}}")
        else:
            hint = (f"; the accelerators would be {', '.join(accelerators)}"
                    + ("" if cpu else " (name the CPU kind with objective.cpu)"))
        raise locator.error(f"max-load has one accelerator kind and at most one CPU kind, but the hardware "
                            f"has kinds {', '.join(names)}" + hint, ("objective",))
    return cpu, (accelerators[0] if accelerators else None)


def _check_max_load_hardware(document: SpecDocument, hw: Hardware, kinds: dict[str, list[Device]],
                             acc: str | None, cpu: str | None, locator: Locator) -> None:
    """Identical accelerators, a link between every two devices, no memory planning, and pins
    only to the CPU kind: what the max-load model assumes."""
    if acc is not None:
        caps = {d.name: d.memory_capacity_bytes for d in kinds[acc]}
        if len(set(caps.values())) > 1:
            shown = ", ".join(f"{n}: {format_bytes(c)}" for n, c in caps.items())
            raise locator.error(f"max-load needs identical accelerators, but the {acc} instances have different "
                                f"main memory ({shown}); give the memory limit to the kind {acc!r}",
                                ("constraints", "memory_limits"))
    devs = [d.name for d in hw.devices]
    for i, a in enumerate(devs):
        for b in devs[i + 1:]:
            if hw.link_between(a, b) is None:
                where = ("hardware", "topology") if document.hardware.topology is not None else ("hardware", "links")
                raise locator.error(f"max-load may move any op's output between any two devices, but {a} and {b} "
                                    "have no link; use topology all-to-all or bus, or add the link", where)
    if document.memory.plan:
        raise locator.error("memory planning is not available with objective max-load (its memory model is "
                            "each accelerator's weights against its main memory)", ("memory", "plan"))
    cpus = tuple(d.name for d in kinds[cpu]) if cpu else ()
    for i, pin in enumerate(document.constraints.pins):
        targets = kinds[pin.device] if pin.device in kinds else [hw.device(pin.device)]
        if pin.device != cpu and (cpu is None or tuple(d.name for d in targets) != cpus):
            raise locator.error(f"with objective max-load a pin may name only the CPU kind"
                                f"{f' ({cpu})' if cpu else ', and there is none'}: the model has no other per-op "
                                f"device restriction", ("constraints", "pins", i, "device"))


def _device_total_bytes(device: Device) -> int:
    """All levels of a device together, main memory capped by its memory limit."""
    main = device.profile.main_memory
    return device.memory_capacity_bytes + sum(m.capacity_bytes for m in device.profile.memory if m is not main)


def check_tensor_sizes(graph: Graph, hw: Hardware, allowed: dict[str, tuple[str, ...]],
                       tensor_loc: dict[str, tuple], locator: Locator) -> None:
    """Every tensor must fit, alone, in all the levels together of some device that could hold it.

    The devices that could hold a tensor are those its producer and consumers may run on
    (pins, and for ``task`` ops the kinds they give cycles for). A tensor larger than every
    such device's memory (all levels together, main memory capped by memory limits) cannot
    be placed by any plan, with or without memory planning.

    Raises
    ------
    planner.errors.SpecError
        Naming the tensor, its size and the devices' totals, at the tensor's spec path.

    Examples
    --------
    >>> from planner.hardware import Device, MemoryLevel
    >>> from planner.isa.profiles import get_profile
    >>> import dataclasses
    >>> small = dataclasses.replace(get_profile("edge-npu"), memory=(
    ...     MemoryLevel("sram", 1024, 10**9), MemoryLevel("dram", 2048, 10**9)))
    >>> hw = Hardware((Device("npu0", "npu", small),), ())
    >>> g = Graph([Tensor("m/x", (1024,), "fp32", "input"), Tensor("m/y", (1024,), "fp32", "output")],
    ...           [Op("m/r", "relu", ("m/x",), ("m/y",))])
    >>> check_tensor_sizes(g, hw, {}, {}, Locator({}))
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: models: tensor 'm/x' is 4.00 KiB, larger than all memory levels together of every device that could hold it (npu0: 3.00 KiB)
    """
    devices = hw.devices
    totals = {d.name: _device_total_bytes(d) for d in devices}
    smallest = min(totals.values())
    for name, tensor in graph.tensors.items():
        size = tensor.size_bytes
        if size <= smallest:
            continue  # fits every device: no need to find the holders
        users = [o for o in (graph.producer(name), *graph.consumers(name)) if o is not None]
        holders: list[str] = []
        for d in devices:
            for op_name in users:
                op = graph.ops[op_name]
                if (op_name not in allowed or d.name in allowed[op_name]) and (
                        op.type != "task" or d.kind in op.cycles):
                    holders.append(d.name)
                    break
        holders = holders or [d.name for d in devices]
        if all(size > totals[h] for h in holders):
            shown = ", ".join(f"{h}: {format_bytes(totals[h])}" for h in holders[:6])
            if len(holders) > 6:
                shown += f", ... ({len(holders)} devices)"
            raise locator.error(f"tensor {name!r} is {format_bytes(size)}, larger than all memory levels "
                                f"together of every device that could hold it ({shown})",
                                tensor_loc.get(name, ("models",)))


def name_from_stem(stem: str) -> str:
    """A spec's default name from its file name, within the rules of ``name:`` (it names the
    default output directory): other characters become ``_``, at most 64 characters, and a
    name that would start with ``.`` or ``-`` gets a ``spec`` prefix.

    Examples
    --------
    >>> name_from_stem("demo"), name_from_stem("my spec (v2)"), name_from_stem(".."), name_from_stem("")
    ('demo', 'my_spec__v2_', 'spec..', 'spec')
    """
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", stem)
    if not name or not re.match(r"[A-Za-z0-9_]", name):
        name = "spec" + name
    return name[:MAX_NAME_LENGTH]


def resolve(document: SpecDocument, locator: Locator, *, source: Path | None = None,
            base_dir: Path | None = None) -> Spec:
    """Check cross-references and build the :class:`Spec` (see module docstring).

    Raises
    ------
    planner.errors.SpecError
        At the line of the first offending value.

    Examples
    --------
    >>> data = {"hardware": {"devices": [{"name": "c", "profile": "generic"}]},
    ...         "models": [{"name": "m", "generator": {"kind": "mlp", "layers": 1, "width": 4}}],
    ...         "constraints": {"pins": [{"ops": "m/*", "device": "c"}]}}
    >>> spec = resolve(SpecDocument.model_validate(data), Locator(data))
    >>> spec.allowed_devices
    {'m/fc0': ('c0',)}
    """
    base_dir = base_dir if base_dir is not None else Path.cwd()
    hw = resolve_hardware(document, locator)
    models = _model_graphs(document, locator, base_dir)
    graph = _merged_graph(models, sorted({d.kind for d in hw.devices}), locator)
    op_loc, tensor_loc = models.op_loc, models.tensor_loc
    check_graph_size(graph, hw, op_loc, tensor_loc, locator)
    check_op_shapes(graph, op_loc, locator)
    with stage("costing"):
        device_cycles = cost_table(graph, hw, op_loc, locator, len(document.hardware.links or []))

    order = list(graph.ops)
    check_pattern_work(_glob_patterns(document), len(order), locator)
    allowed = _pins(document, hw, order, locator)
    groups = _colocation(document, order, allowed, locator)
    gangs = _gangs(document, order, hw, locator)
    memory = resolve_memory(document, hw, locator)
    memory = dataclasses.replace(memory, home=resolve_homes(document, graph, hw, locator))
    objective, max_load = resolve_objective(document, hw, locator)
    if memory.enabled and objective == "throughput":  # max-load: resolve_objective says why
        raise locator.error("memory planning needs objective latency (its level solver minimizes a makespan); "
                            "this spec asks for throughput", ("memory", "plan"))
    if memory.enabled:
        # Without memory planning every tensor must fit main memory, which the pipeline's
        # prechecks already explain (as an infeasible request, exit 1).
        check_tensor_sizes(graph, hw, allowed, tensor_loc, locator)
    name = document.name or (name_from_stem(source.stem) if source is not None else "spec")
    return Spec(
        name=name,
        source=source,
        hardware=hw,
        graph=graph,
        objective=objective,
        allowed_devices=allowed,
        colocation_groups=groups,
        gangs=gangs,
        time_limit_s=float(document.solver.time_limit),
        workers=document.solver.workers,
        seed=document.solver.seed,
        search=document.solver.search,
        strategy=document.solver.strategy,
        groups=document.solver.groups,
        models=tuple(models.names),
        document=document,
        memory=memory,
        max_load=max_load,
        device_cycles=device_cycles,
    )


@dataclasses.dataclass
class _Models:
    """Every model's tensors and ops (prefixed), where in the spec each op and tensor comes from, the model names."""

    tensors: list[Tensor] = dataclasses.field(default_factory=list)
    ops: list[Op] = dataclasses.field(default_factory=list)
    op_loc: dict[str, tuple] = dataclasses.field(default_factory=dict)
    tensor_loc: dict[str, tuple] = dataclasses.field(default_factory=dict)
    names: list[str] = dataclasses.field(default_factory=list)


def _model_graphs(document: SpecDocument, locator: Locator, base_dir: Path) -> _Models:
    """Each model's graph: from its generator, its ONNX file or inline; a model named twice is refused."""
    out = _Models()
    for i, m in enumerate(document.models):
        where = ("models", i)
        if m.name in out.names:
            raise locator.error(f"model {m.name!r} is declared twice", (*where, "name"))
        out.names.append(m.name)
        if m.generator is not None:
            params = m.generator.model_dump(exclude={"kind"}, exclude_none=True)
            check_generator_size(m.generator.kind, params, len(out.ops), (*where, "generator"), locator)
            try:
                mt, mo = generate(m.generator.kind, params, m.name)
            except (ValueError, GraphError) as e:
                raise locator.error(str(e), (*where, "generator")) from None
            for o in mo:
                out.op_loc[o.name] = (*where, "generator")
        elif m.graph is not None and m.graph.onnx is not None:
            mt, mo = _onnx_graph(m, where, locator, base_dir)
            for o in mo:
                out.op_loc[o.name] = (*where, "graph", "onnx")
        else:
            mt, mo = _inline_graph(m, where, locator, out.op_loc)
        if m.graph is not None and m.graph.tensors is not None:
            out.tensor_loc.update({f"{m.name}/{t.name}": (*where, "graph", "tensors", k)
                                   for k, t in enumerate(m.graph.tensors)})
        else:
            source_loc = (*where, "generator") if m.generator is not None else (*where, "graph", "onnx")
            out.tensor_loc.update({t.name: source_loc for t in mt})
        out.tensors.extend(mt)
        out.ops.extend(mo)
    return out


def _merged_graph(models: _Models, kinds: list[str], locator: Locator) -> Graph:
    """The one graph of every model, after the counts and each op's device kinds are checked."""
    op_loc = models.op_loc
    check_counts(models.ops, models.tensors, locator, op_loc)
    for op in models.ops:
        for kind in op.cycles:
            if kind not in kinds:
                loc = op_loc[op.name]
                raise locator.error(f"op {op.name!r} gives cycles for unknown device kind {kind!r}"
                                    + did_you_mean(kind, kinds) + f" (kinds: {', '.join(kinds)})",
                                    (*loc, "cycles", kind) if loc[-2:-1] == ("ops",) else loc, key=True)
    try:
        return Graph(models.tensors, models.ops)
    except GraphError as e:
        loc = op_loc.get(e.op or "", ("models",))
        raise locator.error(str(e), loc) from None
