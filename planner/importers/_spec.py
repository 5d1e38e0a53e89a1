"""Helpers shared by the importers: line-numbered errors and writing a spec as YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml

from planner.errors import SpecError
from planner.safe_output import atomic_file

__all__ = ["write_spec_yaml", "format_error"]


def format_error(message: str, path: Path | str | None, line: int | None = None) -> SpecError:
    """A :class:`~planner.errors.SpecError` naming the file and (1-based) line.

    Examples
    --------
    >>> str(format_error("expected 3 numbers", "a.stg", 4))
    'a.stg:4: expected 3 numbers'
    """
    return SpecError(message, file=str(path) if path is not None else None, line=line)


class _Dumper(yaml.SafeDumper):
    """Safe dumper that writes short lists of scalars in flow style (``[a, b]``)."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> Any:
    flow = len(data) <= 16 and all(isinstance(x, (int, float, str, bool)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def write_spec_yaml(spec: dict[str, Any], path: Path | str, *, force: bool = False,
                    inputs: Iterable[Path | str] = ()) -> Path:
    """Write an importer's spec dict as a YAML file that ``plan`` reads back unchanged.

    Keys keep their insertion order (``version`` first), short scalar lists are written
    inline. The file is written whole or not at all, and an existing file is replaced only
    with ``force`` (never one of ``inputs``): :func:`planner.safe_output.atomic_file`.
    Returns the path written.

    Examples
    --------
    >>> import tempfile, yaml
    >>> spec = {"version": 1, "name": "x", "models": [{"name": "m", "graph": {"ops": []}}]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_spec_yaml(spec, Path(d) / "x.yaml")
    ...     yaml.safe_load(p.read_text()) == spec
    True
    """
    path = Path(path)
    text = yaml.dump(spec, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)
    with atomic_file(path, force=force, inputs=inputs) as tmp:
        tmp.write_text(text)
    return path
