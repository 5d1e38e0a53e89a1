"""Reading a plan directory's JSON files with limits: size, nesting, numbers, encoding, keys.

A plan directory may have been edited by hand or by an adversary, so its JSON is read as
untrusted input: a file larger than :data:`MAX_JSON_BYTES`, not a regular file, not UTF-8,
not JSON, nested deeper than :data:`MAX_JSON_DEPTH`, with a key given twice, with ``NaN``
or ``Infinity``, a float that overflows, or an integer longer than :data:`MAX_INT_DIGITS`
digits is refused with a :class:`~planner.errors.VerificationError` naming the file (and
the line and column where the parser can tell), never a traceback or a memory blow-up.

Examples
--------
>>> parse_json(b'{"a": [1, 2.5, "x"]}', "f.json")
{'a': [1, 2.5, 'x']}
>>> parse_json(b'{"a": NaN}', "f.json")
Traceback (most recent call last):
...
planner.errors.VerificationError: f.json: not valid JSON: NaN is not a number JSON allows
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from planner.errors import VerificationError

__all__ = ["MAX_JSON_BYTES", "MAX_JSON_DEPTH", "MAX_INT_DIGITS", "parse_json", "read_json", "read_bytes"]

# A plan of 10^5 ops writes plan.json of about 15 MB and memory.json of a few times that;
# anything past this is not a file `plan solve` wrote.
MAX_JSON_BYTES = 256 << 20
# plan.json, memory.json and allocation.json nest at most 5 levels, graph.json's op
# attributes a few more; the limit leaves room and stays far below Python's recursion limit.
MAX_JSON_DEPTH = 32
# Every integer the planner writes fits in 64 bits (at most 20 digits).
MAX_INT_DIGITS = 24


class _Refused(ValueError):
    """A value JSON allows but a plan file never holds (raised inside the parser's hooks)."""


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"{text[:40]} overflows a float")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):  # the common case, checked in C: no key twice
        return out
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _Refused(f"key {key[:80]!r} appears twice in one object")
        seen.add(key)
    raise AssertionError("unreachable: fewer keys than pairs means a key appears twice")  # pragma: no cover


# Every digit made "0": a run of MAX_INT_DIGITS + 1 zeros in the translated bytes is the only
# way an integer of the text can be longer than MAX_INT_DIGITS digits.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * (MAX_INT_DIGITS + 1)


def _may_hold_long_int(data: bytes) -> bool:
    """Whether some run of digits in ``data`` is longer than :data:`MAX_INT_DIGITS` (a few ms
    for 10 MB, where checking each integer in Python costs a call per integer)."""
    return _LONG_DIGIT_RUN in data.translate(_DIGITS_AS_ZERO)


def _depth(value: Any) -> int:
    """The nesting depth of parsed JSON (a scalar is 0), level by level, without recursion."""
    deepest, level = 0, [value] if isinstance(value, (dict, list)) else []
    while level:
        deepest += 1
        level = [x for item in level for x in (item.values() if type(item) is dict else item)
                 if type(x) is dict or type(x) is list]
    return deepest


def _position(error: Exception) -> str:
    """`` (line L, column C)`` of a parser error, when it says where (the hooks' errors do not)."""
    if isinstance(error, json.JSONDecodeError):
        return f" (line {error.lineno}, column {error.colno})"
    return ""


def parse_json(data: bytes, label: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse untrusted JSON bytes; ``label`` (the file name) starts every error message.

    Raises
    ------
    VerificationError
        Not UTF-8, not JSON, nested deeper than ``max_depth``, a duplicate key, ``NaN``,
        ``Infinity``, an overflowing float or an over-long integer.

    Examples
    --------
    >>> parse_json(b'[[[1]]]', "f.json", max_depth=2)
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: f.json: not valid JSON: nested 3 levels deep (at most 2)
    >>> parse_json(b'{"a": 1, "a": 2}', "f.json")
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: f.json: not valid JSON: key 'a' appears twice in one object
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise VerificationError(label, "", detail=f"not UTF-8 text (byte {e.start})") from None
    # Without a digit run longer than MAX_INT_DIGITS no integer can be refused, so the parser's
    # own int (in C) gives the same values as _bounded_int, without a Python call per integer.
    parse_int = _bounded_int if _may_hold_long_int(data) else None
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant,
                           parse_float=_finite_float, parse_int=parse_int)
    except RecursionError:
        raise VerificationError(label, "", detail=f"not valid JSON: nested too deeply (at most {max_depth} "
                                                  "levels)") from None
    except _Refused as e:
        raise VerificationError(label, "", detail=f"not valid JSON: {e}") from None
    except ValueError as e:
        msg = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
        raise VerificationError(label, "", detail=f"not valid JSON: {msg}{_position(e)}") from None
    depth = _depth(value)
    if depth > max_depth:
        raise VerificationError(label, "", detail=f"not valid JSON: nested {depth} levels deep (at most {max_depth})")
    return value


def read_bytes(path: Path, label: str, *, max_bytes: int) -> bytes:
    """The bytes of a regular file (no symlink, FIFO or device) of at most ``max_bytes``.

    Raises
    ------
    VerificationError
        Missing, not a regular file, or larger than ``max_bytes``.

    Examples
    --------
    >>> read_bytes(Path("/nonexistent.json"), "x.json", max_bytes=10)
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: x.json: missing
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise VerificationError(label, "", detail="missing") from None
    except OSError as e:
        raise VerificationError(label, "", detail=f"cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a directory" if stat.S_ISDIR(
            info.st_mode) else "a special file"
        raise VerificationError(label, "", detail=f"is {kind}, not a regular file `plan solve` wrote")
    if info.st_size > max_bytes:
        raise VerificationError(label, "", detail=f"{info.st_size:,} bytes, more than the {max_bytes:,} a plan "
                                                  "file may have")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise VerificationError(label, "", detail=f"cannot be read ({e.strerror})") from None
    if len(data) > max_bytes:
        raise VerificationError(label, "", detail=f"more than the {max_bytes:,} bytes a plan file may have")
    return data


def read_json(path: Path, label: str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """:func:`read_bytes` then :func:`parse_json`.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = f.write_bytes(b'{"x": [1, 2]}')
    >>> read_json(f, "a.json")
    {'x': [1, 2]}
    """
    return parse_json(read_bytes(path, label, max_bytes=max_bytes), label, max_depth=max_depth)
