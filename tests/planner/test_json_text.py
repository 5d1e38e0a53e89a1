"""planner.json_text.dumps writes exactly json.dumps's indented text (it replaces it for every plan file)."""

from __future__ import annotations

import enum
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.json_text import dumps


class _Status(enum.StrEnum):
    OK = "ok\u00e9"


class _Level(enum.IntEnum):
    TWO = 2


_SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=6)
            | st.sampled_from([_Status.OK, _Level.TWO, -0.0, math.inf, "\n\"\\\u2028"]))
_KEYS = st.text(max_size=4) | st.sampled_from([_Status.OK])
_VALUES = st.recursive(_SCALARS, lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                                                | st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=30)


@given(_VALUES, st.integers(0, 4), st.booleans())
def test_dumps_is_json_dumps(value, indent, sort_keys):
    assert dumps(value, indent=indent, sort_keys=sort_keys) == json.dumps(value, indent=indent, sort_keys=sort_keys)


@given(st.dictionaries(st.integers(-5, 5) | st.floats(allow_nan=False) | st.none() | st.booleans(),
                       _VALUES, max_size=4), st.integers(0, 3))
def test_non_string_keys_are_written_as_json_dumps_writes_them(value, depth):
    nested = value
    for _ in range(depth):
        nested = {"k": [nested]}
    assert dumps(nested) == json.dumps(nested, indent=2)


@pytest.mark.parametrize("value", [{"a": object()}, [1, {2, 3}], {"a": {1: 2, "b": 3}}])
def test_what_json_dumps_refuses_is_refused_with_its_message(value):
    try:
        expected = json.dumps(value, indent=2, sort_keys=True)
    except TypeError as e:
        with pytest.raises(TypeError, match=str(e)):
            dumps(value, sort_keys=True)
    else:
        assert dumps(value, sort_keys=True) == expected


def test_a_plan_directory_s_files_rewrite_to_the_same_bytes(tmp_path):
    # The files plan solve writes with dumps, read back and written by json.dumps: the same text.
    from typer.testing import CliRunner

    from planner.cli import app

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["solve", "specs/mlp.yaml", "-o", str(out), "--quiet", "--no-numeric"])
    assert result.exit_code == 0, result.output
    for name in ("plan.json", "allocation.json", "graph.json", "trace.json"):
        text = (out / name).read_text()
        assert json.dumps(json.loads(text), indent=2) + "\n" == text, name
