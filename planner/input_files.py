"""Bounded reading of importer inputs: size before reading, strict UTF-8, JSON with a depth limit.

Every importer reads its file through these functions, so a hostile or accidental input
(``/dev/zero``, a directory, a 5 GB file, a binary blob, JSON nested a million deep,
``NaN`` or ``1e999`` in JSON) becomes one :class:`~planner.errors.SpecError` naming the
file (and the line where there is one) instead of a traceback or a memory blow-up.

Limits (:data:`LIMITS` lists them with their reasons; the README's import section too)
-----------------------------------------------------------------------------------------
``MAX_TEXT_BYTES``   text formats (STG, jsplib, dnn-partitioning JSON): 64 MiB, a hundred
                     times the largest public instance.
``MAX_ONNX_BYTES``   ONNX files: 256 MiB. Importing keeps the file's bytes and the parsed
                     model in memory at once (about 2.5 x the size at the peak), so this
                     keeps an import under 1 GiB; larger models import from the
                     external-data form (``onnx.save_model(..., save_as_external_data=True)``),
                     whose weights the importer never reads.
``MAX_JSON_DEPTH``   32 levels of nesting (the workloads use 3).
"""

from __future__ import annotations

import json
import math
import re
import stat
from pathlib import Path
from typing import Any

from planner.errors import SpecError

__all__ = ["MAX_TEXT_BYTES", "MAX_ONNX_BYTES", "MAX_JSON_DEPTH", "LIMITS", "read_input_bytes",
           "read_input_head", "read_input_text", "parse_json_bounded", "check_int_range"]

MAX_TEXT_BYTES = 64 * 2**20
MAX_ONNX_BYTES = 256 * 2**20
MAX_JSON_DEPTH = 32

#: Every importer limit: name -> (value, why). Documented in the README's import section.
LIMITS: dict[str, tuple[int, str]] = {
    "text file bytes": (MAX_TEXT_BYTES, "STG, jsplib and dnn-partitioning files are read whole"),
    "ONNX file bytes": (MAX_ONNX_BYTES, "the bytes and the parsed model are held at once; "
                                        "larger models import from the external-data form"),
    "JSON nesting depth": (MAX_JSON_DEPTH, "dnn-partitioning workloads nest 3 deep"),
}


def _size_text(n: int) -> str:
    """``268435456`` -> ``'256 MiB'``.

    >>> _size_text(64 * 2**20), _size_text(1000)
    ('64 MiB', '1000 B')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _regular_file(path: Path) -> int:
    """The size of ``path``, a regular file; a SpecError for anything else."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise SpecError("no such file", file=str(path)) from None
    except OSError as e:
        raise SpecError(f"cannot read the file: {e.strerror or e}", file=str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
                else "a block device" if stat.S_ISBLK(st.st_mode) else "a pipe" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
        raise SpecError(f"not a regular file ({kind}); give a file", file=str(path))
    return st.st_size


def _read_at_most(path: Path, n: int) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as e:
        raise SpecError(f"cannot read the file: {e.strerror or e}", file=str(path)) from None


def read_input_head(path: Path | str, n: int) -> bytes:
    """The first ``n`` bytes of a regular file (for recognizing its format).

    >>> read_input_head("/nonexistent/x.stg", 10)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: /nonexistent/x.stg: no such file
    """
    path = Path(path)
    _regular_file(path)
    return _read_at_most(path, n)


def read_input_bytes(path: Path | str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (checked before reading).

    Raises
    ------
    SpecError
        No such file, not a regular file (a directory, a device such as ``/dev/zero``, a
        pipe), unreadable, or larger than ``limit``.

    Examples
    --------
    >>> read_input_bytes("/dev/zero", 10)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: /dev/zero: not a regular file (a character device); give a file
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "f"; _ = p.write_bytes(b"12345")
    ...     read_input_bytes(p, 4)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: ...: the file has 5 bytes; at most 4 B are read
    """
    path = Path(path)
    size = _regular_file(path)
    if size > limit:
        raise SpecError(f"the file has {size:,} bytes; at most {_size_text(limit)} are read", file=str(path))
    data = _read_at_most(path, limit + 1)  # the file may have grown since stat
    if len(data) > limit:
        raise SpecError(f"the file has more than {_size_text(limit)}; at most that is read", file=str(path))
    return data


def read_input_text(path: Path | str, limit: int = MAX_TEXT_BYTES) -> str:
    """A bounded regular file as UTF-8 text; binary content and invalid UTF-8 name the line.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "t.stg"; _ = p.write_bytes(b"1\\n0 0 0\\n1 \\xff 1 0\\n")
    ...     read_input_text(p)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: ...t.stg:3: not UTF-8 text: byte 0xff at column 3 cannot be decoded
    """
    path = Path(path)
    data = read_input_bytes(path, limit)
    nul = data.find(b"\0")
    if nul >= 0:
        raise SpecError(f"a binary file (a NUL byte at offset {nul}), not text",
                        file=str(path), line=data.count(b"\n", 0, nul) + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        raise SpecError(f"not UTF-8 text: byte 0x{data[e.start]:02x} at column {e.start - line_start + 1} "
                        "cannot be decoded", file=str(path), line=data.count(b"\n", 0, e.start) + 1) from None


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _check_depth(text: str, path: Path | str | None, max_depth: int) -> None:
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                raise SpecError(f"JSON nested deeper than {max_depth} levels", file=_file(path),
                                line=text.count("\n", 0, m.start()) + 1)
        elif c in "]}":
            depth -= 1


def _file(path: Path | str | None) -> str | None:
    return str(path) if path is not None else None


def parse_json_bounded(text: str, path: Path | str | None = None, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON with a nesting limit, rejecting ``NaN``, ``Infinity`` and numbers that overflow.

    Errors name the line (and the column for syntax errors).

    Examples
    --------
    >>> parse_json_bounded('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> parse_json_bounded('{"a":\\n NaN}')
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 2: NaN is not a number JSON allows; give a finite number
    >>> parse_json_bounded('{"a": 1e999}')
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 1: the number 1e999 overflows a float; give a finite number
    >>> parse_json_bounded("[" * 40 + "]" * 40)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 1: JSON nested deeper than 32 levels
    """
    _check_depth(text, path, max_depth)

    def where(token: str) -> int | None:
        m = re.search(r"(?<![\w.])" + re.escape(token) + r"(?![\w.])", text)
        return text.count("\n", 0, m.start()) + 1 if m else None

    def constant(token: str) -> Any:
        raise SpecError(f"{token} is not a number JSON allows; give a finite number", file=_file(path),
                        line=where(token))

    def real(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise SpecError(f"the number {token} overflows a float; give a finite number", file=_file(path),
                            line=where(token))
        return value

    try:
        return json.loads(text, parse_constant=constant, parse_float=real)
    except SpecError:
        raise
    except json.JSONDecodeError as e:
        raise SpecError(f"invalid JSON: {e.msg} (column {e.colno})", file=_file(path), line=e.lineno) from None
    except RecursionError:  # the depth check makes this unreachable short of a tiny stack
        raise SpecError(f"JSON nested deeper than {max_depth} levels", file=_file(path)) from None
    except ValueError as e:  # an integer literal of more than 4,300 digits
        raise SpecError(f"invalid JSON: {e}", file=_file(path)) from None


def check_int_range(value: int, low: int, high: int, what: str, path: Path | str | None,
                    line: int | None) -> int:
    """``value`` if ``low <= value <= high``, else a SpecError naming ``what`` and the range.

    Examples
    --------
    >>> check_int_range(5, 0, 10, "a cost", "a.stg", 3)
    5
    >>> check_int_range(10**20, 0, 10**12, "the cost of task 3", "a.stg", 3)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: a.stg:3: the cost of task 3 is 100000000000000000000; expected 0..1,000,000,000,000
    """
    if not low <= value <= high:
        raise SpecError(f"{what} is {value}; expected {low:,}..{high:,}", file=_file(path), line=line)
    return value
