"""Indented JSON text, byte for byte what ``json.dumps(value, indent=..., sort_keys=...)`` writes, faster.

With ``indent`` the standard library encodes in pure Python (its C encoder only writes
compact text), one generator step per item: a 10,000-op plan's plan.json, allocation.json,
graph.json and trace.json (about 40 MB) took most of ``plan solve``'s writing stage, and
the verifier renders trace.json again to compare it. Here every container whose items are
all plain scalars (``str``, ``int``, ``float`` or a subclass, ``bool``, ``None``; keyed by ``str``) is
encoded by the C encoder in one call, with the item separator carrying the line break and
the indentation of its depth; only the containers holding containers are walked in Python.
Anything else (another type, a subclass, a non-string key, a value needing ``default``) is
handed to ``json.dumps`` itself, re-indented to its depth, so the text is always the
standard library's, and so are its errors.

Examples
--------
>>> import json
>>> value = {"a": [1, 2.5, None], "b": {"c": "\u00e9", "d": []}, "e": True}
>>> dumps(value) == json.dumps(value, indent=2)
True
>>> print(dumps({"x": [1, {"y": 2}]}, indent=1))
{
 "x": [
  1,
  {
   "y": 2
  }
 ]
}
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any, Callable

try:  # the C encoder (CPython); without it, json.dumps writes everything
    from _json import make_encoder as _c_make_encoder
except ImportError:  # pragma: no cover - CPython always has it
    _c_make_encoder = None

__all__ = ["dumps"]

_SCALARS = frozenset({str, int, float, bool, type(None)})
# Subclasses of these (a StrEnum status, an IntEnum) are written as their plain value by both
# of the standard library's encoders, so they count as scalars too.
_SCALAR_BASES = (str, int, float)
_STR = frozenset({str})
# Deeper than this the walk hands over to json.dumps (whose circular-reference check then
# raises its own ValueError, instead of this walk recursing without end).
_MAX_WALK_DEPTH = 200


def _all_scalars(values: Any) -> bool:
    """Whether every value is a scalar; the types are gathered in C (a set of a few types)."""
    kinds = set(map(type, values))
    return kinds <= _SCALARS or all(k in _SCALARS or issubclass(k, _SCALAR_BASES) for k in kinds)


def _all_string_keys(value: dict) -> bool:
    kinds = set(map(type, value))
    return kinds <= _STR or all(issubclass(k, str) for k in kinds)


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


class _Writer:
    """The text of one ``dumps`` call's options, with a C encoder per depth for flat containers."""

    def __init__(self, indent: int, sort_keys: bool) -> None:
        self.indent, self.sort_keys = indent, sort_keys
        self._encoders: dict[int, Callable[[Any, int], Any]] = {}

    def flat_encoder(self, depth: int) -> Callable[[Any, int], Any]:
        """A C encoder whose item separator breaks the line and indents to ``depth + 1``."""
        encoder = self._encoders.get(depth)
        if encoder is None:
            separator = ",\n" + " " * (self.indent * (depth + 1))
            encoder = _c_make_encoder(None, _no_default, encode_basestring_ascii, None, ": ", separator,
                                      self.sort_keys, False, True)
            self._encoders[depth] = encoder
        return encoder

    def standard(self, value: Any, depth: int) -> str:
        """``json.dumps``'s own text for ``value``, its lines indented to ``depth``."""
        text = json.dumps(value, indent=self.indent, sort_keys=self.sort_keys)
        return text.replace("\n", "\n" + " " * (self.indent * depth)) if depth else text

    def text(self, value: Any, depth: int) -> str:
        kind = type(value)
        if kind is str:
            return encode_basestring_ascii(value)
        if kind is int:
            return int.__repr__(value)
        if kind is dict:
            return self._dict(value, depth)
        if kind is list or kind is tuple:
            return self._list(value, depth)
        if kind in _SCALARS or isinstance(value, _SCALAR_BASES):  # floats, bools, None, subclasses: as C writes them
            return "".join(self.flat_encoder(depth)(value, 0))
        return self.standard(value, depth)

    def _flat_text(self, value: Any, depth: int) -> str:
        body = "".join(self.flat_encoder(depth)(value, 0))
        inner = " " * (self.indent * (depth + 1))
        return f"{body[0]}\n{inner}{body[1:-1]}\n{' ' * (self.indent * depth)}{body[-1]}"

    def _dict(self, value: dict, depth: int) -> str:
        if not value:
            return "{}"
        if depth > _MAX_WALK_DEPTH or not _all_string_keys(value):
            return self.standard(value, depth)
        if _all_scalars(value.values()):
            return self._flat_text(value, depth)
        items = sorted(value.items()) if self.sort_keys else value.items()
        inner, text = " " * (self.indent * (depth + 1)), self.text
        body = f",\n{inner}".join([f"{encode_basestring_ascii(k)}: {text(v, depth + 1)}" for k, v in items])
        return f"{{\n{inner}{body}\n{' ' * (self.indent * depth)}}}"

    def _list(self, value: list | tuple, depth: int) -> str:
        if not value:
            return "[]"
        if depth > _MAX_WALK_DEPTH:
            return self.standard(value, depth)
        if _all_scalars(value):
            return self._flat_text(value, depth)
        inner = " " * (self.indent * (depth + 1))
        body = f",\n{inner}".join([self.text(v, depth + 1) for v in value])
        return f"[\n{inner}{body}\n{' ' * (self.indent * depth)}]"


def dumps(value: Any, *, indent: int = 2, sort_keys: bool = False) -> str:
    """``json.dumps(value, indent=indent, sort_keys=sort_keys)``, byte for byte.

    ``ensure_ascii``, ``allow_nan`` and the separators are the standard library's defaults
    (as every indented file the planner writes uses them).

    Examples
    --------
    >>> dumps({"b": 1, "a": [True, None]}, sort_keys=True)
    '{\\n  "a": [\\n    true,\\n    null\\n  ],\\n  "b": 1\\n}'
    >>> dumps([]), dumps(3.0), dumps("x")
    ('[]', '3.0', '"x"')
    """
    if _c_make_encoder is None or type(indent) is not int or indent < 0:  # pragma: no cover
        return json.dumps(value, indent=indent, sort_keys=sort_keys)
    return _Writer(indent, sort_keys).text(value, 0)
