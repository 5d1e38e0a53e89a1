"""A given placement: read it (a plan directory or a JSON ``{op: device}`` map), check it
against a spec, and pin it into a scheduling problem.

The JSON shape ``plan score --placement`` takes is one object whose keys are the spec's op
names and whose values are device instance names (``{"a": "fast0", "b": "slow0"}``); a plan
directory's ``plan.json`` gives the same map (an op planned as several memory instances
``op#p`` keeps the device of its first instance).

Examples
--------
>>> from planner.reductions.scheduling import to_problem
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/taskgraph.yaml")
>>> problem, reduction = to_problem(spec)
>>> placement = check_placement({"tg/a": "fast0", "tg/b": "fast0", "tg/c": "slow0", "tg/d": "fast0"}, spec, "map")
>>> pinned = pin(problem, reduction, placement)
>>> [pinned.allowed_devices(i) for i in range(pinned.num_ops)]
[(0,), (0,), (1,), (0,)]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from planner.errors import SpecError
from planner.instances import base_op_name
from planner.reader import read_json, read_text_file
from planner.reductions.scheduling import op_device_cycles
from planner.spec import Spec
from planner.scheduling import PlacementStart, pin_devices
from solvers.scheduling import SchedulingProblem

__all__ = ["placement_of", "read_placement", "check_placement", "usable_placement", "pin"]


def _plan_dir_placement(directory: Path) -> dict[str, str]:
    """op -> device of a plan directory's plan.json (memory instances ``op#p`` folded)."""
    path = directory / "plan.json"
    if not path.is_file():
        raise SpecError(f"{directory}: no plan.json: expected a directory `plan solve` wrote, or a JSON "
                        "{op: device} file")
    doc = read_json(read_text_file(path, what="plan.json"), str(path))
    ops = doc.get("ops") if isinstance(doc, dict) else None
    if not isinstance(ops, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str)
                                            and isinstance(o.get("device"), str) for o in ops):
        raise SpecError(f"{path}: ops: expected a list of {{name, device, ...}} objects")
    return placement_of((o["name"], o["device"]) for o in ops)


def placement_of(ops: Iterable[tuple[str, str]]) -> dict[str, str]:
    """op -> device from planned ``(name, device)`` pairs, memory instances folded into their op
    (the first instance's device).

    >>> placement_of([("m/a#0", "d0"), ("m/a#1", "d1"), ("m/b", "d1")])
    {'m/a': 'd0', 'm/b': 'd1'}
    """
    placement: dict[str, str] = {}
    for name, device in ops:
        placement.setdefault(base_op_name(name), device)
    return placement


def read_placement(source: str | Path) -> dict[str, str]:
    """The ``{op: device}`` map of a plan directory or a JSON file (unchecked: see :func:`check_placement`).

    Raises
    ------
    SpecError
        A missing file, malformed JSON, or a value that is not an op-to-device map.

    Examples
    --------
    >>> import json, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.json")
    >>> _ = open(path, "w").write(json.dumps({"tg/a": "fast0"}))
    >>> read_placement(path)
    {'tg/a': 'fast0'}
    """
    path = Path(source)
    if path.is_dir():
        return _plan_dir_placement(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such file or directory (expected a plan directory or a JSON {{op: device}} map)")
    doc = read_json(read_text_file(path, what="placement"), str(path))
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise SpecError(f"{path}: expected one JSON object mapping op names to device names, "
                        'e.g. {"a": "fast0", "b": "slow0"}')
    return dict(doc)


def _why_not(spec: Spec, op: str, device: str, cycles: Mapping[tuple[str, str], int | None]) -> str | None:
    """Why ``op`` may not run on ``device`` (None when it may); ``cycles`` as :func:`_cycles`."""
    hardware = spec.hardware
    names = [d.name for d in hardware.devices]
    if device not in names:
        return f"unknown device {device!r} (the spec's devices: {', '.join(names)})"
    allowed = spec.allowed_devices.get(op)
    if allowed is not None and device not in allowed:
        return f"pinned to {', '.join(sorted(allowed))}, not {device!r}"
    if cycles.get((op, hardware.device(device).kind)) is None:
        return f"cannot run on {device!r} (its kind has no cost for it)"
    return None


def _cycles(spec: Spec) -> Mapping[tuple[str, str], int | None]:
    """(op, device kind) -> cycles, None where the op cannot run (the spec's own table when costed)."""
    return spec.device_cycles or op_device_cycles(spec.graph, spec.hardware)


def check_placement(placement: Mapping[str, str], spec: Spec, source: str) -> dict[str, str]:
    """``placement`` when it places every op of ``spec`` exactly on a device it may run on.

    Raises
    ------
    SpecError
        An op the spec does not have, an op left unplaced, or a device the op may not use
        (the message names ``source``, the op and the device).
    """
    ops = spec.graph.ops
    unknown = sorted(set(placement) - set(ops))
    if unknown:
        raise SpecError(f"{source}: op {unknown[0]!r} is not in the spec's graph"
                        + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""))
    missing = [op for op in spec.graph.topological_order() if op not in placement]
    if missing:
        raise SpecError(f"{source}: op {missing[0]!r} is not placed"
                        + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    cycles = _cycles(spec)
    for op in spec.graph.topological_order():
        why = _why_not(spec, op, placement[op], cycles)
        if why is not None:
            raise SpecError(f"{source}: op {op!r}: {why}")
    return dict(placement)


def usable_placement(placement: Mapping[str, str], spec: Spec) -> dict[str, str]:
    """The part of a previous plan's placement that still applies to ``spec``: ops that no
    longer exist, and ops whose device is gone or no longer allowed, are dropped.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> usable_placement({"tg/a": "fast0", "tg/gone": "fast0", "tg/b": "nowhere0"}, load_spec("specs/taskgraph.yaml"))
    {'tg/a': 'fast0'}
    """
    cycles = _cycles(spec)
    return {op: dev for op, dev in placement.items()
            if op in spec.graph.ops and _why_not(spec, op, dev, cycles) is None}


def pin(problem: SchedulingProblem, reduction: Any, placement: Mapping[str, str]) -> SchedulingProblem:
    """``problem`` with every op of ``placement`` allowed on its device only (the others as
    they were): :func:`planner.scheduling.pin_devices` by name."""
    return pin_devices(problem, PlacementStart.of(reduction, placement).device_of)
