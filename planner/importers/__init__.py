"""Importers: public formats in, ordinary spec dicts out.

Glossary
--------
STG         Standard Task Graph Set files (``.stg``): P|prec|Cmax on identical processors
            (:mod:`planner.importers.stg`).
jsplib      job-shop instances (``n m`` then ``machine duration`` pairs per job)
            (:mod:`planner.importers.jobshop`).
dnn-partitioning
            the JSON workloads of Tarnawski et al., NeurIPS 2020: accelerators, CPUs,
            per-node latencies, sizes, colour classes (:mod:`planner.importers.dnn_partitioning`).
ONNX        models (``.onnx``) mapped to the ISA op types (:mod:`planner.importers.onnx`).
spec dict   the v1 spec of ``docs/architecture.md`` as plain dicts and lists; validate it
            with ``planner.spec.load_spec`` and write it with :func:`write_spec_yaml`.

Every importer raises :class:`planner.errors.SpecError` with the file and line number on
malformed input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.errors import SpecError
from planner.importers._spec import write_spec_yaml
from planner.importers.dnn_partitioning import import_dnn, is_dnn_json
from planner.importers.jobshop import import_jobshop
from planner.importers.stg import import_stg

__all__ = ["import_model", "write_spec_yaml", "import_stg", "import_jobshop", "import_dnn",
           "import_onnx_to_spec", "FORMATS"]

#: Formats :func:`import_model` recognizes, by name.
FORMATS = ("onnx", "stg", "jobshop", "dnn")


def import_onnx_to_spec(path: Path | str, inline: bool = True) -> dict[str, Any]:
    """A spec dict for an ONNX model (see :func:`planner.importers.onnx.import_onnx_to_spec`).

    Examples
    --------
    >>> callable(import_onnx_to_spec)
    True
    """
    from planner.importers.onnx import import_onnx_to_spec as _imp
    return _imp(path, inline=inline)


def _detect(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".stg":
        return "stg"
    text = path.read_text(errors="replace")
    if suffix == ".json" or text.lstrip().startswith("{"):
        if is_dnn_json(text):
            return "dnn"
        raise SpecError("JSON file is not a dnn-partitioning workload (needs 'nodes' and 'maxFPGAs')",
                        file=str(path))
    return "jobshop"


def import_model(path: Path | str, format: str | None = None, **options: Any) -> dict[str, Any]:
    """Import a model or benchmark instance and return an ordinary spec dict.

    ``format`` is one of :data:`FORMATS`; by default it is chosen by extension and
    content: ``.onnx``, ``.stg``, a ``.json`` dnn-partitioning workload, otherwise
    jsplib text. ``options`` go to the format's importer (e.g. ``processors=8`` for STG,
    ``objective="latency"`` for dnn-partitioning).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "ft00"; _ = p.write_text("# two jobs\\n2 1\\n0 3\\n0 4\\n")
    ...     spec = import_model(p)
    >>> [o["name"] for o in spec["models"][0]["graph"]["ops"]]
    ['j0_o0', 'j1_o0']
    """
    path = Path(path)
    if not path.exists():
        raise SpecError("file not found", file=str(path))
    fmt = format or _detect(path)
    if fmt == "onnx":
        return import_onnx_to_spec(path, **options)
    if fmt == "stg":
        return import_stg(path, **options)
    if fmt == "dnn":
        return import_dnn(path, **options)
    if fmt == "jobshop":
        return import_jobshop(path, **options)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
