"""Where a spec error is, and how it reads: spec paths to file lines, pydantic errors to one SpecError.

:class:`Locator` maps a spec path (``hardware.devices[1].memory[0].capacity``) to the line
of the YAML text it came from, found only when an error needs it
(:func:`planner.reader.find_lines`); :func:`validation_error` turns pydantic's errors
into the one :class:`~planner.errors.SpecError` shown, the earliest in the file, with a
did-you-mean for a misspelt key or kind. The loader, the resolver and the fleet spec all
report through it.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any, Mapping, Sequence, Union

from pydantic import BaseModel, ValidationError

from planner.errors import SpecError
from planner.graph.generators import GENERATOR_PARAMS
from planner.reader import find_lines, format_path, read_yaml
from planner.spec.models import SpecDocument

__all__ = ["Locator", "did_you_mean", "unwrap_annotation", "validation_error", "Loc"]

Loc = tuple[Union[str, int], ...]
# pydantic's names of union members and wrappers that appear in error locations
_TYPE_TAG = re.compile(r"^(str|int|float|bool|none|[a-z]+(-[a-z]+)+|[a-z-]+\[.*\])$")


class Locator:
    """Maps spec paths to file lines, and builds SpecErrors.

    Parameters
    ----------
    data : object
        The spec as plain Python data.
    text : str or None
        The YAML text it was read from (None for a dict): lines are looked up in it only
        when an error needs one (:func:`planner.reader.find_lines`).
    file : str or None
        The file name shown in messages.

    Examples
    --------
    >>> text = "hardware:\\n  devices:\\n    - name: a\\n      count: 0\\n"
    >>> loc = Locator.from_yaml(text, "s.yaml")
    >>> loc.line(("hardware", "devices", 0, "count"))
    4
    >>> str(loc.error("must be >= 1", ("hardware", "devices", 0, "count")))
    's.yaml:4: hardware.devices[0].count: must be >= 1'
    """

    def __init__(self, data: Any, text: str | None = None, file: str | None = None) -> None:
        self.data, self.text, self.file = data, text, file
        self._lines: dict[tuple, tuple[int, int]] = {}
        self._looked_up: set[tuple] = set()

    @classmethod
    def from_yaml(cls, text: str, file: str | None = None) -> "Locator":
        """Read YAML text within the input limits (:mod:`planner.reader`); SpecError when
        malformed, too large, too deep, or with a duplicate key."""
        return cls(read_yaml(text, file), text, file)

    def prefetch(self, locs: Sequence[Sequence[str | int]]) -> None:
        """Look up the lines of several paths in one pass over the text."""
        wanted = [tuple(loc) for loc in locs if tuple(loc) not in self._looked_up]
        if self.text is None or not wanted:
            return
        self._lines.update(find_lines(self.text, wanted))
        self._looked_up.update(wanted)

    def clean(self, loc: Sequence[str | int], *, keep_last: bool = False) -> Loc:
        """Drop the parts of a pydantic location that are not keys of the document
        (union member tags such as ``"transformer"`` or ``"list[str]"``); a missing or
        unknown last key is kept when ``keep_last``."""
        out: list[str | int] = []
        cur = self.data
        for i, part in enumerate(loc):
            last = i == len(loc) - 1
            if isinstance(cur, Mapping) and isinstance(part, str):
                if part in cur:
                    out.append(part)
                    cur = cur[part]
                    continue
                if last and keep_last:
                    out.append(part)  # a missing or unknown key: keep it in the path
                continue
            if isinstance(cur, (list, tuple)) and isinstance(part, int) and 0 <= part < len(cur):
                out.append(part)
                cur = cur[part]
                continue
            if isinstance(part, str) and _TYPE_TAG.match(part):
                continue
            cur = None
            if last or isinstance(part, int):
                out.append(part)
        return tuple(out)

    def line(self, loc: Sequence[str | int], *, key: bool = False) -> int | None:
        """1-based line of the value at ``loc`` (of its key when ``key``), or of its nearest
        existing ancestor; None without a YAML text."""
        if self.text is None:
            return None
        loc = tuple(loc)
        self.prefetch([loc])
        for end in range(len(loc), -1, -1):
            found = self._lines.get(loc[:end])
            if found is not None:
                return found[1] if key and end == len(loc) else found[0]
        return None

    def error(self, message: str, loc: Sequence[str | int] = (), *, key: bool = False) -> SpecError:
        """A SpecError at ``loc`` (already clean)."""
        return SpecError(message, file=self.file, line=self.line(loc, key=key),
                         path=format_path(loc) or None)


def unwrap_annotation(tp: Any) -> Any:
    """The type inside ``Annotated[...]`` and ``Optional[...]`` wrappers (a real union stays).

    Examples
    --------
    >>> from typing import Annotated, Optional
    >>> unwrap_annotation(Optional[Annotated[int, "x"]]), unwrap_annotation(int | str)
    (<class 'int'>, int | str)
    """
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
            else:
                return tp
        else:
            return tp


def _known_keys(raw_loc: Sequence[str | int]) -> list[str] | None:
    """Field names of the model at a pydantic location (for did-you-mean), if known."""
    cur: Any = SpecDocument
    for part in raw_loc:
        cur = unwrap_annotation(cur)
        origin = typing.get_origin(cur)
        if isinstance(cur, type) and issubclass(cur, BaseModel) and isinstance(part, str):
            if part not in cur.model_fields:
                return None
            cur = cur.model_fields[part].annotation
        elif origin in (list, tuple) and isinstance(part, int):
            cur = typing.get_args(cur)[0]
        elif origin is dict and isinstance(part, str):
            cur = typing.get_args(cur)[1]
        elif origin in (Union, types.UnionType) and isinstance(part, str):
            members = [m for m in map(unwrap_annotation, typing.get_args(cur))
                       if isinstance(m, type) and issubclass(m, BaseModel) and "kind" in m.model_fields
                       and part in typing.get_args(m.model_fields["kind"].annotation)]
            if not members:
                return None
            cur = members[0]
        else:
            return None
    cur = unwrap_annotation(cur)
    if isinstance(cur, type) and issubclass(cur, BaseModel):
        return list(cur.model_fields)
    return None


def did_you_mean(word: Any, choices: Sequence[str], *, quote: bool = True) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""``.

    Examples
    --------
    >>> did_you_mean("capacty", ["name", "capacity", "bandwidth"])
    "; did you mean 'capacity'?"
    """
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {close[0]!r}?" if quote else f"; did you mean {close[0]}?"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _expected_words(expected: str) -> list[str]:
    return re.findall(r"'([^']*)'", expected)


def validation_error(exc: ValidationError, locator: Locator) -> SpecError:
    """The one SpecError shown for a pydantic ValidationError: the earliest in the file.

    Examples
    --------
    >>> from planner.spec.models import SpecDocument
    >>> text = "version: 1\\nhardware:\\n  devices: []\\nmodels: []\\nobjectiv: latency\\n"
    >>> loc = Locator.from_yaml(text, "s.yaml")
    >>> try:
    ...     SpecDocument.model_validate(loc.data)
    ... except ValidationError as exc:
    ...     print(validation_error(exc, loc))
    s.yaml:3: hardware.devices: list should have at least 1 item after validation, not 0
    """
    candidates = []
    errors = exc.errors(include_url=False)
    # A misspelt key shows up twice: unknown 'capacty' and missing 'capacity'. Keep the first.
    extra_parents = {tuple(e["loc"])[:-1] for e in errors if e["type"] == "extra_forbidden"}
    locator.prefetch([locator.clean(tuple(e["loc"]), keep_last=True) for e in errors[:1000]])
    for index, err in enumerate(errors):
        raw = tuple(err["loc"])
        kind = err["type"]
        if kind == "missing" and raw[:-1] in extra_parents:
            continue
        loc = locator.clean(raw, keep_last=kind in ("missing", "extra_forbidden"))
        ctx = err.get("ctx") or {}
        value = err.get("input")
        key = False
        if kind == "extra_forbidden":
            known = _known_keys(raw[:-1]) or []
            message = f"unknown key {raw[-1]!r}" + (did_you_mean(raw[-1], known)
                                                     or (f"; expected one of: {', '.join(known)}" if known else ""))
            key = True
        elif kind == "missing":
            message = f"missing required key {raw[-1]!r}"
            loc = loc[:-1] if loc and loc[-1] == raw[-1] else loc
        elif kind == "literal_error" and raw == ("version",):
            message = f"unsupported spec version {_short(value)}; this planner reads version 1"
        elif kind == "literal_error":
            words = _expected_words(ctx.get("expected", ""))
            message = f"expected {ctx.get('expected')}, got {_short(value)}" + did_you_mean(value, words)
        elif kind == "union_tag_invalid":
            words = _expected_words(ctx.get("expected_tags", ""))
            loc = (*loc, "kind")
            message = (f"unknown kind {ctx.get('tag')!r}" + did_you_mean(ctx.get("tag"), words)
                       + f" (expected one of {ctx.get('expected_tags')})")
        elif kind == "union_tag_not_found":
            message = f"missing required key 'kind' ({' | '.join(GENERATOR_PARAMS)})"
        elif kind in ("model_type", "dict_type", "model_attributes_type"):
            message = f"expected a mapping of keys, got {_short(value)}"
        elif kind == "list_type":
            message = f"expected a list, got {_short(value)}"
        elif kind == "string_pattern_mismatch" and "x00" in str(ctx.get("pattern", "")):
            message = f"{_short(value)} is not a valid op or tensor name: no control characters"
        elif kind == "string_pattern_mismatch":
            message = (f"{_short(value)} is not a valid name: use letters, digits, '_', '.' and '-', "
                       "starting with a letter, a digit or '_'")
        elif kind in ("value_error", "assertion_error"):
            message = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        else:
            msg = str(err["msg"])
            message = msg[:1].lower() + msg[1:]
            if not isinstance(value, (Mapping, list)) or kind.endswith("_type"):
                message += f", got {_short(value)}"
        line = locator.line(loc, key=key)
        candidates.append((line if line is not None else 1 << 30, index, message, loc, key))
    # Union members report at different depths (ops: "a string" vs "a list whose item 1
    # is not a string"): the deeper report is the precise one.
    locs = [c[3] for c in candidates]
    precise = [c for c in candidates
               if not any(len(o) > len(c[3]) and o[:len(c[3])] == c[3] for o in locs)]
    _, _, message, loc, key = min(precise or candidates)
    return locator.error(message, loc, key=key)
