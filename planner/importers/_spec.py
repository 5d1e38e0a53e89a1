"""Helpers shared by the importers: line-numbered errors, spec names, validation, writing YAML."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from planner.errors import SpecError
from planner.safe_output import atomic_file
from planner.spec import load_spec

__all__ = ["write_spec_yaml", "format_error", "spec_name", "ImportResult", "validate_imported"]

_MAX_NAME = 64


def format_error(message: str, path: Path | str | None, line: int | None = None) -> SpecError:
    """A :class:`~planner.errors.SpecError` naming the file and (1-based) line.

    Examples
    --------
    >>> str(format_error("expected 3 numbers", "a.stg", 4))
    'a.stg:4: expected 3 numbers'
    """
    return SpecError(message, file=str(path) if path is not None else None, line=line)


def spec_name(path: Path | str) -> str:
    """A spec and model name from a file name: the stem with characters a name may not hold
    replaced by ``_`` (names are letters, digits, ``_``, ``.`` and ``-``), at most 64 long.

    Examples
    --------
    >>> spec_name("models/my model (v2).onnx"), spec_name("ft06"), spec_name("..."), spec_name("é.stg")
    ('my_model__v2_', 'ft06', 'model', '_')
    """
    stem = Path(path).stem
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", stem)[:_MAX_NAME].strip(".")
    return name or "model"


@dataclass(frozen=True, slots=True)
class ImportResult:
    """An imported spec, its format and the notes to show with it (approximations made).

    >>> ImportResult({"version": 1}, ("Div: computed as mul (1 op)",), "onnx").notes
    ('Div: computed as mul (1 op)',)
    """

    spec: dict[str, Any]
    notes: tuple[str, ...] = ()
    format: str = ""


def validate_imported(spec: dict[str, Any], source: Path | str, base_dir: Path | str | None = None) -> None:
    """Load ``spec`` as ``plan validate`` would; a rejection names the source file.

    So ``plan import`` never writes a spec that ``plan validate`` rejects: an input whose
    spec fails (e.g. a shape the cost model cannot take) is reported as an error in the
    input, with the spec path the loader gave.

    Examples
    --------
    >>> validate_imported({"version": 1, "hardware": {"devices": []}, "models": []}, "x.stg")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: x.stg: the spec made from this file is invalid: hardware.devices: list should have at least 1 item after validation, not 0
    """
    try:
        load_spec(spec, base_dir=base_dir)
    except SpecError as e:
        where = f"{e.path}: " if e.path else ""
        raise SpecError(f"the spec made from this file is invalid: {where}{e.message}", file=str(source)) from None


class _Dumper(yaml.SafeDumper):
    """Safe dumper that writes short lists of scalars in flow style (``[a, b]``)."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> Any:
    flow = len(data) <= 16 and all(isinstance(x, (int, float, str, bool)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def write_spec_yaml(spec: dict[str, Any], path: Path | str, header: Sequence[str] = (), *,
                    force: bool = False, inputs: Iterable[Path | str] = ()) -> Path:
    """Write an importer's spec dict as a YAML file that ``plan`` reads back unchanged.

    Keys keep their insertion order (``version`` first), short scalar lists are written
    inline; ``header`` lines are written first as ``#`` comments. The file is written whole
    or not at all, and an existing file is replaced only with ``force`` (never one of
    ``inputs``): :func:`planner.safe_output.atomic_file`. Returns the path written.

    Examples
    --------
    >>> import tempfile, yaml
    >>> spec = {"version": 1, "name": "x", "models": [{"name": "m", "graph": {"ops": []}}]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_spec_yaml(spec, Path(d) / "x.yaml", header=["imported from x.onnx"])
    ...     p.read_text().splitlines()[0], yaml.safe_load(p.read_text()) == spec
    ('# imported from x.onnx', True)
    """
    path = Path(path)
    text = yaml.dump(spec, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)
    comments = "".join("# " + " ".join(line.split()) + "\n" for line in header)
    with atomic_file(path, force=force, inputs=inputs) as tmp:
        tmp.write_text(comments + text, encoding="utf-8")
    return path
