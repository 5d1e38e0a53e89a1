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
notes       what an import approximated (ONNX op types computed differently, costed-only
            ops): :attr:`ImportResult.notes`, printed by ``plan import`` and written at the
            top of the spec.

Every importer reads its file with size (and, for JSON, depth) limits
(:mod:`planner.input_files`) and raises :class:`planner.errors.SpecError` with the
file and line number on malformed input. :func:`import_file` also loads the spec it made
(as ``plan validate`` does) before returning it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from planner.errors import SpecError
from planner.importers._spec import ImportResult, validate_imported, write_spec_yaml
from planner.importers.dnn_partitioning import import_dnn, is_dnn_json
from planner.importers.jobshop import import_jobshop
from planner.importers.onnx import import_onnx_to_spec, onnx_import_result
from planner.importers.stg import import_stg
from planner.input_files import LIMITS, read_input_head

__all__ = ["import_model", "import_file", "detect_format", "write_spec_yaml", "import_stg", "import_jobshop",
           "import_dnn", "import_onnx_to_spec", "ImportResult", "FORMATS", "LIMITS"]

#: Formats :func:`import_model` recognizes, by name, with how each is recognized.
FORMATS = {
    "onnx": "ONNX models (.onnx)",
    "stg": "STG task graphs (.stg: the task count, then 'id cost n_pred preds...' lines)",
    "jobshop": "jsplib job shops (a line 'jobs machines', then 'machine duration' pairs per job)",
    "dnn": "dnn-partitioning workloads (.json with 'nodes' and 'maxFPGAs')",
}
_OPTIONS = {"onnx": ("inline", "profile", "dims"), "stg": ("processors",), "jobshop": (),
            "dnn": ("objective", "contiguous")}
_SNIFF_BYTES = 64 * 1024


def _unknown(path: Path, seen: str, line: int | None = None) -> SpecError:
    formats = "; ".join(FORMATS.values())
    return SpecError(f"unknown format: {seen}. plan import reads {formats}", file=str(path), line=line)


def _sniff_text(path: Path, head: bytes) -> str:
    """The format of an extension-less text file, from its first data line."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # not merely a character cut at the end of the sniffed part
            raise _unknown(path, "a binary file (not UTF-8 text, not an ONNX protobuf)") from None
        text = head[:e.start].decode("utf-8")
    if text.lstrip().startswith("{"):
        return "dnn"
    for k, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        tokens = s.split()
        if all(re.fullmatch(r"[+-]?\d+", t) for t in tokens) and len(tokens) in (1, 2):
            return "stg" if len(tokens) == 1 else "jobshop"
        shown = s if len(s) <= 60 else s[:57] + "..."
        raise _unknown(path, f"its first line of data {shown!r} is neither a task count (STG) nor "
                             "'jobs machines' (jsplib)", k)
    raise _unknown(path, "the file holds no data (only blank or '#' lines)")


def detect_format(path: Path | str) -> str:
    """The format of a file, by extension and content (a key of :data:`FORMATS`).

    ``.onnx``, ``.stg`` and ``.json`` go by extension; other files by content: a binary
    file starting like an ONNX protobuf, JSON text, or text whose first data line is one
    integer (STG) or two (jsplib).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "ft00").write_text("# a job shop\\n2 1\\n0 3\\n0 4\\n")
    >>> _ = (d / "README.md").write_text("# plan\\n\\nA planner.\\n")
    >>> detect_format(d / "ft00")
    'jobshop'
    >>> detect_format(d / "README.md")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: ...README.md:3: unknown format: its first line of data 'A planner.' is neither a task count (STG) nor 'jobs machines' (jsplib). plan import reads ONNX models (.onnx); STG task graphs (.stg: the task count, then 'id cost n_pred preds...' lines); jsplib job shops (a line 'jobs machines', then 'machine duration' pairs per job); dnn-partitioning workloads (.json with 'nodes' and 'maxFPGAs')
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".onnx", ".stg"):
        return suffix[1:]
    if suffix == ".json":
        return "dnn"
    head = read_input_head(path, _SNIFF_BYTES)
    if head[:1] == b"\x08":
        return "onnx"  # a protobuf whose first field is ir_version (field 1, varint); no text starts so
    if suffix in (".yaml", ".yml"):
        raise _unknown(path, "a YAML file (a spec already? check it with plan validate)")
    return _sniff_text(path, head)


def import_file(path: Path | str, format: str | None = None, *, validate: bool = True,
                **options: Any) -> ImportResult:
    """Import a model or benchmark instance: its spec dict and the import's notes.

    ``format`` is a key of :data:`FORMATS`; by default :func:`detect_format` chooses.
    ``options`` go to the format's importer: ``processors`` (STG), ``objective`` and
    ``contiguous`` (dnn-partitioning), ``inline``, ``profile`` and ``dims`` (ONNX). With
    ``validate`` the spec is loaded as ``plan validate`` would before it is returned.

    Raises
    ------
    planner.errors.SpecError
        An unknown format (the formats are listed), a malformed file (its line), an
        option that does not apply, or a spec that does not validate.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "t.stg"; _ = p.write_text("1\\n0 0 0\\n1 5 1 0\\n2 0 1 1\\n")
    ...     r = import_file(p, processors=2)
    >>> r.format, r.spec["hardware"]["devices"][0]["streams"], r.notes
    ('stg', 2, ())
    """
    path = Path(path)
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise SpecError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    extra = sorted(k for k, v in options.items() if k not in _OPTIONS[fmt] and v is not None)
    if extra:
        raise SpecError(f"option {extra[0]!r} does not apply to {FORMATS[fmt]}", file=str(path))
    options = {k: v for k, v in options.items() if v is not None}
    if fmt == "onnx":
        result = onnx_import_result(path, **options)
    elif fmt == "stg":
        result = ImportResult(import_stg(path, **options), (), fmt)
    elif fmt == "dnn":
        result = ImportResult(import_dnn(path, **options), (), fmt)
    else:
        result = ImportResult(import_jobshop(path), (), fmt)
    if validate:
        validate_imported(result.spec, path, base_dir=path.parent)
    return result


def import_model(path: Path | str, format: str | None = None, **options: Any) -> dict[str, Any]:
    """Import a model or benchmark instance and return an ordinary spec dict (validated).

    The spec of :func:`import_file`; see there for ``format`` and ``options``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "ft00"; _ = p.write_text("# two jobs\\n2 1\\n0 3\\n0 4\\n")
    ...     spec = import_model(p)
    >>> [o["name"] for o in spec["models"][0]["graph"]["ops"]]
    ['j0_o0', 'j1_o0']
    """
    return import_file(path, format, **options).spec
