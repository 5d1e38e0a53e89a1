"""The scenarios of a sweep: ``--set PATH=V1,V2`` variations, their cross product, stable names.

A path is dotted with list indices (``hardware.devices[0].count``, ``models[0].generator.batch``);
each value is read as YAML (``2`` is a number, ``fp16`` and ``1 GHz`` are text, ``[1, 2]`` a list),
and values are separated by commas outside brackets. A path must lead through keys and indices the
base spec has; only its last key may be new (the spec's validation then says whether it is known).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from planner.errors import SpecError

__all__ = ["Variation", "Scenario", "parse_set", "parse_path", "set_value", "scenarios"]

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]")
_MAX_NAME_BYTES = 120  # a directory name, well under NAME_MAX with room for temporaries


@dataclass(frozen=True, slots=True)
class Variation:
    """One ``--set``: a spec path and the values it takes, in the order given."""

    path: str
    steps: tuple[str | int, ...]
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One point of the grid: its directory name, the value of each varied path, and its spec."""

    name: str
    values: tuple[tuple[str, Any], ...]
    spec: Mapping[str, Any]


def parse_path(path: str) -> tuple[str | int, ...]:
    """The keys and indices of a dotted spec path.

    Examples
    --------
    >>> parse_path("hardware.devices[0].count")
    ('hardware', 'devices', 0, 'count')
    >>> parse_path("models[0].generator.batch")
    ('models', 0, 'generator', 'batch')
    >>> parse_path("hardware..clock")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: --set hardware..clock: expected a dotted path such as hardware.devices[0].count
    """
    steps: list[str | int] = []
    for i, part in enumerate(path.split(".")):
        pos, found = 0, []
        for m in _STEP.finditer(part):
            if m.start() != pos or (m.group(1) is not None and found):
                break
            found.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
            pos = m.end()
        if not found or pos != len(part) or not isinstance(found[0], str):
            raise SpecError(f"--set {path}: expected a dotted path such as hardware.devices[0].count")
        steps += found
    return tuple(steps)


def _split_values(text: str) -> list[str]:
    """Split at commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def parse_set(text: str) -> Variation:
    """A ``--set PATH=V1,V2,...`` option.

    Examples
    --------
    >>> parse_set("hardware.devices[0].count=2,4,8").values
    (2, 4, 8)
    >>> parse_set("models[0].generator.dtype=fp16, int8").values
    ('fp16', 'int8')
    >>> parse_set("hardware.links[0].between=[a0, b0],[a0, c0]").values
    (['a0', 'b0'], ['a0', 'c0'])
    >>> parse_set("solver.seed")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: --set solver.seed: expected PATH=VALUE[,VALUE...], e.g. models[0].generator.batch=1,8
    """
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path or not raw.strip():
        raise SpecError(f"--set {text}: expected PATH=VALUE[,VALUE...], e.g. models[0].generator.batch=1,8")
    values = []
    for part in _split_values(raw):
        if not part.strip():
            raise SpecError(f"--set {text}: an empty value (two commas in a row, or one at an end)")
        try:
            values.append(yaml.safe_load(part.strip()))
        except yaml.YAMLError as e:
            raise SpecError(f"--set {path}: cannot read the value {part.strip()!r} ({e.problem})") from None
    if len(set(map(repr, values))) != len(values):
        raise SpecError(f"--set {path}: a value is given twice")
    return Variation(path=path, steps=parse_path(path), values=tuple(values))


def set_value(document: Any, variation: Variation, value: Any) -> None:
    """Set ``variation``'s path to ``value`` in a spec dict (in place).

    Examples
    --------
    >>> spec = {"models": [{"generator": {"batch": 1}}]}
    >>> set_value(spec, parse_set("models[0].generator.batch=8"), 8); spec
    {'models': [{'generator': {'batch': 8}}]}
    >>> set_value(spec, parse_set("models[1].generator.batch=8"), 8)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: --set models[1].generator.batch: models has 1 entry (indices from 0 to 0)
    """
    node, where = document, ""
    for depth, step in enumerate(variation.steps):
        last = depth == len(variation.steps) - 1
        if isinstance(step, int):
            if not isinstance(node, list):
                raise SpecError(f"--set {variation.path}: {where or 'the spec'} is not a list")
            if step >= len(node):
                count = f"{len(node)} entr{'y' if len(node) == 1 else 'ies'}"
                bounds = f" (indices from 0 to {len(node) - 1})" if node else ""
                raise SpecError(f"--set {variation.path}: {where} has {count}{bounds}")
        else:
            if not isinstance(node, dict):
                raise SpecError(f"--set {variation.path}: {where or 'the spec'} is not a mapping")
            if step not in node and not last:
                known = ", ".join(sorted(map(str, node))) or "none"
                raise SpecError(f"--set {variation.path}: {where + '.' if where else ''}{step} is not in the "
                                f"spec (keys there: {known})")
        if last:
            node[step] = copy.deepcopy(value)
            return
        node = node[step]
        where += f"[{step}]" if isinstance(step, int) else (f".{step}" if where else step)


def _leaf_names(variations: Sequence[Variation]) -> list[str]:
    """The shortest path suffix naming each variation apart from the others ("count", "batch")."""
    names = []
    for v in variations:
        keys = [s for s in v.steps if isinstance(s, str)]
        for n in range(1, len(v.steps) + 1):
            suffix = _slug(".".join(map(str, v.steps[-n:])))
            others = [_slug(".".join(map(str, o.steps[-n:]))) for o in variations if o is not v]
            if suffix not in others and not (n == 1 and not keys):
                break
        names.append(suffix)
    return names


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+\-]+", "_", text).strip("_") or "_"


def _value_text(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def _scenario_name(leaves: Sequence[str], values: Sequence[Any]) -> str:
    name = "_".join(f"{leaf}-{_slug(_value_text(v))}" for leaf, v in zip(leaves, values))
    if len(name.encode()) > _MAX_NAME_BYTES:  # still stable: the hash of the full name
        name = name[:_MAX_NAME_BYTES - 17] + "-" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return name


def scenarios(base: Mapping[str, Any], variations: Sequence[Variation]) -> list[Scenario]:
    """Every combination of the variations' values applied to ``base``, in ``--set`` order.

    Examples
    --------
    >>> base = {"hardware": {"devices": [{"count": 1}]}, "models": [{"generator": {"batch": 1}}]}
    >>> grid = scenarios(base, [parse_set("hardware.devices[0].count=2,4"),
    ...                         parse_set("models[0].generator.batch=1,8")])
    >>> [s.name for s in grid]
    ['count-2_batch-1', 'count-2_batch-8', 'count-4_batch-1', 'count-4_batch-8']
    >>> grid[3].spec["hardware"]["devices"][0]["count"], base["hardware"]["devices"][0]["count"]
    (4, 1)
    """
    if not variations:
        raise SpecError("plan sweep needs at least one --set PATH=V1,V2,...")
    paths = [v.steps for v in variations]
    for i, v in enumerate(variations):
        if v.steps in paths[:i]:
            raise SpecError(f"--set {v.path}: the same path is set twice")
    leaves = _leaf_names(variations)
    grid: list[Scenario] = []
    seen: dict[str, tuple] = {}
    for combo in itertools.product(*(v.values for v in variations)):
        spec = copy.deepcopy(dict(base))
        for v, value in zip(variations, combo):
            set_value(spec, v, value)
        name = _scenario_name(leaves, combo)
        if name in seen:
            raise SpecError(f"--set: the values {seen[name]} and {combo} give the same scenario name {name}; "
                            f"give values that differ in letters or digits")
        seen[name] = combo
        grid.append(Scenario(name=name, values=tuple((v.path, x) for v, x in zip(variations, combo)), spec=spec))
    return grid
