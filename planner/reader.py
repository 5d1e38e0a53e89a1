"""Bounded reading of YAML and JSON input: size, nesting depth and alias expansion limits.

A spec is untrusted input. PyYAML's own loaders build the whole node tree first (about
0.7 KB of Python objects per value), recurse once per nesting level, and let an alias
stand for its anchor's whole subtree, so a 1 KB "billion laughs" document or a few
thousand ``[`` exhaust the stack, the memory or the time of everything that walks the
result. This module reads the event stream of the C parser (libyaml, when available)
instead and builds the plain Python data itself, checking every limit *before* the
value that would exceed it exists:

- the text is at most :attr:`ReadLimits.max_bytes` (checked before reading a file);
- no value is nested deeper than :attr:`ReadLimits.max_depth`;
- the document holds at most :attr:`ReadLimits.max_values` values counted with every
  alias *expanded* (an alias counts its anchor's full size, so "billion laughs" is
  refused at the alias that crosses the limit, before anything is copied);
- an alias may not refer to an anchor that is still open (a recursive structure);
- keys are plain scalars, and a key appears once per mapping (the error names the line
  of its first appearance).

Scalars get PyYAML's safe (YAML 1.1) types; merge keys (``<<: *base``) are supported.
Line numbers are not kept while reading (PyYAML's node tree would multiply the memory of
a large spec several times); :func:`find_lines` re-reads the same, already accepted text
when an error needs one.
"""

from __future__ import annotations

import json
import re
from array import array
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from planner.errors import SpecError

__all__ = ["ReadLimits", "DEFAULT_READ_LIMITS", "find_lines", "format_path", "read_yaml", "read_json",
           "read_text_file"]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
_SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
_Parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """What one input document may hold (``docs/architecture.md``, "Input limits").

    Attributes
    ----------
    max_bytes : int
        Size of the text (16 MiB: an inline graph of 10^5 ops is about 11 MiB).
    max_depth : int
        Nesting of mappings and sequences (a spec needs about 8).
    max_values : int
        Scalars, mappings and sequences together, aliases expanded.

    Examples
    --------
    >>> ReadLimits().max_bytes == 16 * 2**20
    True
    """

    max_bytes: int = 16 * 2**20
    max_depth: int = 64
    max_values: int = 4_000_000


DEFAULT_READ_LIMITS = ReadLimits()


def format_path(loc: Sequence[str | int]) -> str:
    """``("hardware", "devices", 1, "clock")`` -> ``"hardware.devices[1].clock"``.

    Examples
    --------
    >>> format_path(("hardware", "devices", 1, "memory", 0, "capacity"))
    'hardware.devices[1].memory[0].capacity'
    >>> format_path(())
    ''
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n:,} bytes"


def read_text_file(path: str | Path, *, what: str = "spec",
                   limits: ReadLimits = DEFAULT_READ_LIMITS) -> str:
    """The UTF-8 text of ``path``, refused beyond ``limits.max_bytes`` without reading more.

    Raises
    ------
    SpecError
        No such file, not readable, too large, or not UTF-8 (with the line of the first bad byte).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "s.yaml")
    ...     _ = open(p, "wb").write(b"a: 1\\nb: \\xff\\n")
    ...     read_text_file(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: .../s.yaml:2: the spec is not UTF-8 text (byte 0xff at column 4)
    """
    path = Path(path)
    try:
        with path.open("rb") as f:  # a bounded read: /dev/zero or a huge file stops at the limit
            data = f.read(limits.max_bytes + 1)
    except FileNotFoundError:
        raise SpecError(f"no such {what} file", file=str(path)) from None
    except IsADirectoryError:
        raise SpecError(f"expected a {what} file, got a directory", file=str(path)) from None
    except OSError as e:
        raise SpecError(f"cannot read the {what}: {e.strerror or e}", file=str(path)) from None
    if len(data) > limits.max_bytes:
        raise SpecError(f"the {what} is larger than {_mib(limits.max_bytes)}, the limit for one input file",
                        file=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise SpecError(f"the {what} is not UTF-8 text (byte 0x{data[e.start]:02x} at column {column})",
                        file=str(path), line=line) from None


class _Frame:
    """One open mapping or sequence while reading."""

    __slots__ = ("is_map", "value", "anchor", "size", "height", "line", "key", "has_key", "first_line",
                 "merges")

    def __init__(self, is_map: bool, anchor: str | None, line: int) -> None:
        self.is_map, self.anchor, self.line = is_map, anchor, line
        self.value: Any = {} if is_map else []
        self.size, self.height = 1, 1
        self.key: Any = None
        self.has_key = False
        self.first_line: dict[Any, int] = {}
        self.merges: list[Any] = []


# libyaml (PyYAML >= 6.0.3's wheels) refuses values nested deeper than this itself, and for flow
# collections while scanning ahead for a possible key: before the event that would cross a lower
# max_depth. Older wheels, or PyYAML without libyaml, have no such limit, so ours never relies on
# it: no value deeper than LIBYAML_MAX_DEPTH - 1 (_deepest_allowed), and a text whose brackets
# nest deeper is refused before any parser sees it (_refuse_deep_brackets).
LIBYAML_MAX_DEPTH = 1000


def _deepest_allowed(max_depth: int) -> int:
    """The nesting our reader accepts: ``max_depth``, and never what libyaml (if present) refuses."""
    return min(max_depth, LIBYAML_MAX_DEPTH - 1)


def _refuse_deep_brackets(text: str, file: str | None, max_depth: int) -> None:
    """Refuse flow collections nested deeper than libyaml would scan, before a parser sees them.

    Counts ``[``/``{`` outside double-quoted strings (:func:`_json_depth`); the error is at the
    line where the count first passes :func:`_deepest_allowed`, where the reader's own event
    check would refuse it. Only a depth beyond libyaml's limit is decided here, so a bracket in
    a comment or a plain scalar cannot refuse a spec within the usual limits.
    """
    if text.count("[") + text.count("{") < LIBYAML_MAX_DEPTH or _bracket_depth(text) < LIBYAML_MAX_DEPTH:
        return
    allowed = _deepest_allowed(max_depth)
    _, at = _json_depth(text, allowed + 1)
    raise SpecError(f"values are nested more than {allowed} levels deep", file=file,
                    line=text.count("\n", 0, at) + 1)


def _syntax_error(e: yaml.YAMLError, file: str | None, max_depth: int) -> SpecError:
    """A parser error as a SpecError with its line and column."""
    if not isinstance(e, yaml.MarkedYAMLError):
        return SpecError(f"malformed YAML: {e}", file=file)
    mark = e.problem_mark or e.context_mark
    if "maximum nesting depth" in (e.problem or ""):  # libyaml's own limit: say ours, which is lower
        return SpecError(f"values are nested more than {_deepest_allowed(max_depth)} levels deep", file=file,
                         line=mark.line + 1 if mark else None)
    what = e.problem or e.context or "cannot parse"
    if e.context and e.problem:
        where = (f" started on line {e.context_mark.line + 1}"
                 if e.context_mark and e.problem_mark and e.context_mark.line != e.problem_mark.line else "")
        what += f" ({e.context}{where})"
    return SpecError(f"malformed YAML: {what}", file=file, line=mark.line + 1 if mark else None,
                     column=mark.column + 1 if mark else None)


def _events(text: str, file: str | None, max_depth: int) -> Iterator[Any]:
    """The parser's events; a syntax error becomes a SpecError with its line and column."""
    loader = _Parser(text)
    end = yaml.StreamEndEvent
    try:
        while True:
            event = loader.get_event()
            if event is None or type(event) is end:
                return
            yield event
    except yaml.YAMLError as e:
        raise _syntax_error(e, file, max_depth) from None
    finally:
        loader.dispose()


def find_lines(text: str, locs: Iterable[tuple],
               limits: ReadLimits = DEFAULT_READ_LIMITS) -> dict[tuple, tuple[int, int]]:
    """``(value line, key line)`` of every existing prefix of each path in ``locs`` (1-based).

    One pass over the event stream that descends only into the subtrees on the way to a
    requested path, so it keeps no tree and costs little beyond parsing. Mapping keys
    match by their text; a path through an alias stops at the alias (its line). Nesting
    deeper than ``limits.max_depth`` raises SpecError, as :func:`read_yaml` would (libyaml
    spends time quadratic in the depth of flow collections).

    One function because the event loop and its two helpers share one state (the stack of
    tracked collections and the depth skipped); a class would spread the same state apart.

    Examples
    --------
    >>> found = find_lines("a:\\n  - 1\\n  - {b: 2}\\n", [("a", 1, "b"), ("a", 5)])
    >>> found[("a", 1, "b")], found[("a",)], ("a", 5) in found
    ((3, 3), (2, 1), False)
    """
    prefixes = {tuple(loc[:i]) for loc in locs for i in range(len(loc) + 1)}
    found: dict[tuple, tuple[int, int]] = {}
    stack: list[list] = []  # tracked collections: [is_map, path, index or key text, expecting key, key line]
    skip = 0  # depth inside a collection no requested path enters

    def place(line: int) -> tuple | None:
        """The path of the value starting here (None for a mapping key), recording its line."""
        if not stack:
            found[()] = (line, line)
            return ()
        frame = stack[-1]
        if frame[0]:
            if frame[3]:
                return None
            path = (*frame[1], frame[2])
            key_line = frame[4]
        else:
            path = (*frame[1], frame[2])
            key_line = line
        if path in prefixes:
            found[path] = (line, key_line)
            return path
        return ("skip",)

    def done() -> None:
        """A value (or a key) of the innermost tracked collection is complete."""
        if stack:
            frame = stack[-1]
            if frame[0]:
                frame[3] = not frame[3]
            else:
                frame[2] += 1

    for event in _events(text, None, limits.max_depth):
        kind = type(event)
        if kind in (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent):
            continue
        line = event.start_mark.line + 1
        if kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent) and len(stack) + skip >= limits.max_depth:
            raise SpecError(f"values are nested more than {limits.max_depth} levels deep", line=line)
        if skip:
            if kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
                skip += 1
            elif kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
                skip -= 1
                if not skip:
                    done()
            continue
        if kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
            stack.pop()
            done()
            continue
        is_key = bool(stack) and stack[-1][0] and stack[-1][3]
        if is_key and kind is yaml.ScalarEvent:
            stack[-1][2], stack[-1][4] = event.value, line
            done()
            continue
        path = None if is_key else place(line)
        if kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
            if path is None or path == ("skip",):
                skip = 1
            else:
                is_map = kind is yaml.MappingStartEvent
                stack.append([is_map, path, None if is_map else 0, True, line])
        else:
            done()
    return found


class _Reader:
    """Builds the data of one document from the YAML event stream, within limits."""

    def __init__(self, text: str, file: str | None, limits: ReadLimits) -> None:
        self.text, self.file, self.limits = text, file, limits
        self.deepest = _deepest_allowed(limits.max_depth)
        self.anchors: dict[str, tuple[Any, int, int]] = {}  # value, size (expanded), height
        self.open_anchors: set[str] = set()
        self.total = 0
        self.stack: list[_Frame] = []
        self.result: list[Any] = []
        self.constructor = SafeConstructor()
        self.resolvers = Resolver.yaml_implicit_resolvers

    def fail(self, message: str, line: int | None, *, key: Any = None) -> SpecError:
        """A SpecError at the value being read (under ``key`` of the innermost mapping, if given)."""
        loc: list[str | int] = []
        for i, frame in enumerate(self.stack):
            inner = i == len(self.stack) - 1
            if frame.is_map and (frame.has_key or (inner and key is not None)):
                loc.append(str(key if inner and key is not None else frame.key))
            elif not frame.is_map:
                loc.append(len(frame.value))
        shown = format_path(loc) if len(loc) <= 16 else f"{format_path(loc[:8])}... ({len(loc)} levels)"
        return SpecError(message, file=self.file, line=line, path=shown or None)

    def run(self) -> Any:
        if len(self.text) > self.limits.max_bytes:
            raise self.fail(f"the input is larger than {_mib(self.limits.max_bytes)}, the limit for one input "
                            "file", None)
        _refuse_deep_brackets(self.text, self.file, self.limits.max_depth)
        loader = _Parser(self.text)
        try:
            self.consume(loader.get_event)
        except yaml.YAMLError as e:
            raise _syntax_error(e, self.file, self.limits.max_depth) from None
        finally:
            loader.dispose()
        return self.result[0] if self.result else None

    def consume(self, get_event: Any) -> None:
        """Build the document from the events (the hot loop: a plain scalar inside a
        collection, the most common event by far, is handled inline)."""
        documents = 0
        scalar, alias, end = yaml.ScalarEvent, yaml.AliasEvent, yaml.StreamEndEvent
        starts, ends = (yaml.MappingStartEvent, yaml.SequenceStartEvent), (yaml.MappingEndEvent,
                                                                         yaml.SequenceEndEvent)
        stack, max_values = self.stack, self.limits.max_values
        while True:
            event = get_event()
            kind = type(event)
            if kind is scalar:
                value = self.scalar(event)
                self.total += 1
                if self.total > max_values:
                    self.count(0, event.start_mark.line + 1)
                parent = stack[-1] if stack else None
                if parent is None or event.anchor is not None or (parent.is_map and not parent.has_key):
                    self.add(value, 1, 0, event.start_mark.line + 1, event.anchor)
                    continue
                parent.size += 1
                if not parent.is_map:
                    parent.value.append(value)
                else:
                    parent.has_key = False
                    if parent.key is _MERGE:
                        parent.merges.append(value)
                    else:
                        parent.value[parent.key] = value
            elif kind in starts:
                self.open(event, kind is yaml.MappingStartEvent)
            elif kind in ends:
                frame = stack.pop()
                if frame.anchor is not None:
                    self.open_anchors.discard(frame.anchor)
                value = self.merged(frame) if frame.merges else frame.value
                self.add(value, frame.size, frame.height, frame.line, frame.anchor)
            elif kind is alias:
                self.alias(event.anchor, event.start_mark.line + 1)
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise self.fail("expected a single YAML document, found a second one",
                                    event.start_mark.line + 1)
            elif event is None or kind is end:
                return

    def open(self, event: Any, is_map: bool) -> None:
        line = event.start_mark.line + 1
        if event.tag not in (_MAP_TAGS if is_map else _SEQ_TAGS):
            raise self.fail(f"YAML tag {event.tag} is not supported in a spec", line)
        if len(self.stack) + 1 > self.deepest:
            raise self.fail(f"values are nested more than {self.deepest} levels deep", line)
        self.count(1, line)
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        self.stack.append(_Frame(is_map, event.anchor, line))

    def alias(self, anchor: str, line: int) -> None:
        if anchor in self.open_anchors:
            raise self.fail(f"alias *{anchor} refers to its own enclosing value (a recursive structure)", line)
        if anchor not in self.anchors:
            raise self.fail(f"alias *{anchor} refers to no anchor &{anchor} defined before it", line)
        value, size, height = self.anchors[anchor]
        if len(self.stack) + height > self.deepest:
            raise self.fail(f"alias *{anchor} nests values more than {self.deepest} levels deep", line)
        self.count(size, line)  # before the alias is used: nothing is copied, but consumers would expand it
        self.add(value, size, height, line, None)

    def count(self, size: int, line: int | None) -> None:
        self.total += size
        if self.total > self.limits.max_values:
            raise self.fail(f"the document holds more than {self.limits.max_values:,} values (aliases "
                            "counted at their expanded size)", line)

    def scalar(self, event: Any) -> Any:
        """The scalar's value with PyYAML's safe types (YAML 1.1 implicit resolution)."""
        tag, value = event.tag, event.value
        if tag is None or tag == "!":
            if not event.implicit[0]:
                return value  # quoted: a string
            if value.isdigit() and value.isascii() and (value[0] != "0" or len(value) == 1) and len(value) < 4000:
                return int(value)  # a plain decimal integer (a leading 0 would be YAML 1.1 octal)
            for tag, regexp in self.resolvers.get(value[:1], ()):
                if regexp.match(value):
                    break
            else:
                return value
        if tag == _MERGE_TAG:
            return _MERGE
        if tag == "tag:yaml.org,2002:str":
            return value
        build = SafeConstructor.yaml_constructors.get(tag)
        line = event.start_mark.line + 1
        if build is None or tag in ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"):
            raise self.fail(f"YAML tag {tag} is not supported in a spec", line)
        try:
            return build(self.constructor, yaml.ScalarNode(tag, value, event.start_mark, event.end_mark,
                                                           event.style))
        except (ValueError, OverflowError, yaml.YAMLError) as e:
            shown = value if len(value) <= 40 else value[:37] + "..."
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise self.fail(f"cannot read the value {shown!r} as {tag.rsplit(':', 1)[-1]} ({reason})",
                            line) from None

    def add(self, value: Any, size: int, height: int, line: int, anchor: str | None) -> None:
        """Put a finished value (already counted) into its parent, or make it the document."""
        if anchor is not None:
            self.anchors[anchor] = (value, size, height)
        if not self.stack:
            self.result.append(value)
            return
        parent = self.stack[-1]
        parent.size += size
        if height >= parent.height:
            parent.height = height + 1
        if not parent.is_map:
            parent.value.append(value)
        elif not parent.has_key:
            self.set_key(parent, value, line)
        else:
            parent.has_key = False
            if parent.key is _MERGE:
                parent.merges.append(value)
            else:
                parent.value[parent.key] = value

    def set_key(self, parent: _Frame, key: Any, line: int) -> None:
        if key is not _MERGE:
            try:
                first = parent.first_line.get(key)
            except TypeError:
                raise self.fail("a mapping key must be a plain value (a name or a number), "
                                f"not a {type(key).__name__}", line) from None
            if first is not None:
                raise self.fail(f"duplicate key {key!r} (first given on line {first})", line, key=key)
            parent.first_line[key] = line
        parent.key, parent.has_key = key, True

    def merged(self, frame: _Frame) -> dict:
        """The mapping with its ``<<`` merges applied: explicit keys win, earlier merges first."""
        out = dict(frame.value)
        for value in frame.merges:
            for source in value if isinstance(value, list) else [value]:
                if not isinstance(source, dict):
                    raise self.fail("a merge key (<<) takes a mapping or a list of mappings", frame.line)
                for k, v in source.items():
                    out.setdefault(k, v)
        return out


class _MergeKey:
    def __repr__(self) -> str:
        return "<<"


_MERGE = _MergeKey()


def read_yaml(text: str, file: str | None = None, limits: ReadLimits = DEFAULT_READ_LIMITS) -> Any:
    """The data of one YAML document, read within ``limits`` (see the module docstring).

    Raises
    ------
    SpecError
        Malformed YAML, a limit exceeded, a recursive or undefined alias, a duplicate or
        non-scalar key, an unsupported tag; with the file and line.

    Examples
    --------
    >>> read_yaml("a: &x [1, 2]\\nb: *x\\nc: {<<: {d: 1}, e: 2}\\n")
    {'a': [1, 2], 'b': [1, 2], 'c': {'e': 2, 'd': 1}}
    >>> laughs = "a: &a [x, x]\\n" + "".join(f"a{i}: &a{i} [*a{i - 1 if i > 1 else ''}, "
    ...                                      f"*a{i - 1 if i > 1 else ''}]\\n" for i in range(1, 40))
    >>> read_yaml(laughs, "bomb.yaml")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: bomb.yaml:20: a19[1]: the document holds more than 4,000,000 values (aliases counted at their expanded size)
    >>> read_yaml("a: 1\\nb: 2\\na: 3\\n", "s.yaml")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: s.yaml:3: a: duplicate key 'a' (first given on line 1)
    """
    return _Reader(text, file, limits).run()


_NOT_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[^\[\]{}"]+')
_BRACKET_STEPS = bytes.maketrans(b"[{]}\"", b"\x01\x01\xff\xff\x00")


def _bracket_depth(text: str) -> int:
    """:func:`_json_depth`'s depth at C speed (an inline graph of 10^5 ops, 11 MiB, in 0.2 s, not 0.4 s):
    strings and other characters dropped by one regex, the brackets summed as signed bytes."""
    steps = array("b", _NOT_BRACKETS.sub("", text).encode("ascii").translate(_BRACKET_STEPS))
    return max(0, max(accumulate(steps), default=0))


def _json_depth(text: str, stop_at: int | None = None) -> tuple[int, int]:
    """The deepest nesting of ``[``/``{`` outside strings, and the offset where it is reached
    (or the first offset where it reaches ``stop_at``)."""
    depth = best = at = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > best:
                best, at = depth, m.start()
                if best == stop_at:
                    break
        elif c in "]}":
            depth -= 1
    return best, at


def read_json(text: str, file: str | None = None, limits: ReadLimits = DEFAULT_READ_LIMITS) -> Any:
    """The data of a JSON document, read within ``limits``; NaN, infinities and duplicate keys refused.

    Raises
    ------
    SpecError
        Too large, nested too deeply, not JSON, a non-finite number, or a duplicate key (with the line).

    Examples
    --------
    >>> read_json('{"a": [1, 2.5, "x"]}')
    {'a': [1, 2.5, 'x']}
    >>> read_json('{"a": NaN}', "g.json")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: g.json: NaN is not a finite number
    >>> read_json("[" * 100 + "]" * 100, "g.json")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: g.json:1: values are nested more than 64 levels deep
    """
    if len(text) > limits.max_bytes:
        raise SpecError(f"the input is larger than {_mib(limits.max_bytes)}, the limit for one input file",
                        file=file)
    depth, at = _json_depth(text)
    if depth > limits.max_depth:
        raise SpecError(f"values are nested more than {limits.max_depth} levels deep", file=file,
                        line=text.count("\n", 0, at) + 1)

    def constant(name: str) -> Any:
        raise SpecError(f"{name} is not a finite number", file=file)

    def pairs(items: list[tuple[str, Any]]) -> dict:
        out: dict = {}
        for k, v in items:
            if k in out:
                raise SpecError(f"duplicate key {k!r}", file=file)
            out[k] = v
        return out

    def number(s: str) -> float:
        value = float(s)
        if value in (float("inf"), float("-inf")):
            raise SpecError(f"the number {s[:40]} is too large", file=file)
        return value

    try:
        return json.loads(text, parse_constant=constant, object_pairs_hook=pairs, parse_float=number)
    except SpecError:
        raise
    except json.JSONDecodeError as e:
        raise SpecError(f"not JSON: {e.msg}", file=file, line=e.lineno, column=e.colno) from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise SpecError(f"not JSON: {e}", file=file) from None
