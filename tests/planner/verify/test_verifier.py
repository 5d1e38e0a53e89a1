"""The verifier's parts: bounded JSON, one gap formula, the numeric policy, and plan solve's use of it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import VerificationError
from planner.plan import relative_gap
from planner.verify import NUMERIC_DEFAULT_MAX_INSTRUCTIONS, parse_json
from tests.fuzz.plan_dirs import _spec_dict

runner = CliRunner()


@given(st.integers(0, 10**12), st.one_of(st.none(), st.integers(0, 10**12)))
def test_one_gap_formula(objective, bound):
    from solvers.core import relative_gap as solver_gap

    assert relative_gap(objective, bound) == solver_gap(objective, bound)


@pytest.mark.parametrize("data, message", [
    (b"\xff", "not UTF-8 text (byte 0)"),
    (b"[" * 5000, "nested too deeply"),
    (b'{"a": Infinity}', "Infinity is not a number JSON allows"),
    (b'{"a": -Infinity}', "-Infinity is not a number JSON allows"),
    (b'[1e400]', "1e400 overflows a float"),
    (b'[-' + b"1" * 30 + b"]", "an integer of 31 digits (at most 24)"),
    (b'{"k": {"x": 1, "x": 1}}', "key 'x' appears twice"),
    (b"", "Expecting value (line 1, column 1)"),
])
def test_parse_json_refuses_with_a_message(data, message):
    with pytest.raises(VerificationError, match="f.json: ") as e:
        parse_json(data, "f.json")
    assert message in str(e.value)


@given(st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.text(max_size=5)
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=20))
def test_parse_json_reads_what_json_writes(value):
    assert parse_json(json.dumps(value).encode(), "f.json") == value


def _solve(tmp_path, spec, *flags):
    import yaml

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    return runner.invoke(app, ["solve", str(path), "-o", str(out), "--time-limit", "3", *flags]), out


def test_solve_runs_the_numeric_replay_by_default_and_says_so(tmp_path):
    result, out = _solve(tmp_path, _spec_dict("mlp"))
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text())
    assert plan["numeric"]["status"] == "equal" and plan["numeric"]["tensors"] == 12
    line = "numeric replay: 12 tensors equal to the reference (fp16, rtol 1e-05)"
    assert line in result.output and f"- {line}" in (out / "report.md").read_text()


def test_no_numeric_turns_it_off_and_the_report_says_so(tmp_path):
    result, out = _solve(tmp_path, _spec_dict("mlp"), "--no-numeric")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "plan.json").read_text())["numeric"]["status"] == "off"
    assert "numeric replay: off (--no-numeric)" in (out / "report.md").read_text()


def test_a_large_plan_skips_the_numeric_replay_and_names_the_command(tmp_path, monkeypatch):
    import planner.verify.numeric as numeric

    monkeypatch.setattr(numeric, "NUMERIC_DEFAULT_MAX_INSTRUCTIONS", 10)
    result, out = _solve(tmp_path, _spec_dict("mlp"))
    assert result.exit_code == 0, result.output
    claim = json.loads((out / "plan.json").read_text())["numeric"]
    assert claim["status"] == "too-large" and claim["limit"] == 10 and claim["instructions"] > 10
    assert (f"numeric replay: skipped: {claim['instructions']:,} instructions > 10^1; run `plan simulate --numeric`"
            in (out / "report.md").read_text())
    monkeypatch.undo()
    check = runner.invoke(app, ["simulate", str(out), "--numeric"])
    assert check.exit_code == 0 and "12 tensors equal to the reference" in check.output, check.output
    assert NUMERIC_DEFAULT_MAX_INSTRUCTIONS == 100_000


def test_a_plan_of_much_arithmetic_skips_the_numeric_replay(tmp_path, monkeypatch):
    import planner.verify.numeric as numeric

    monkeypatch.setattr(numeric, "NUMERIC_DEFAULT_MAX_MACS", 1000)
    result, out = _solve(tmp_path, _spec_dict("mlp"))
    assert result.exit_code == 0, result.output
    claim = json.loads((out / "plan.json").read_text())["numeric"]
    assert claim["status"] == "too-large" and claim["macs"] == 33554432 and claim["mac_limit"] == 1000
    assert ("numeric replay: skipped: 3.36e+07 multiply-accumulates > 10^3; run `plan simulate --numeric`"
            in result.output)


def test_ops_without_numeric_semantics_are_named(tmp_path):
    result, out = _solve(tmp_path, _spec_dict("taskgraph"))
    assert result.exit_code == 0, result.output
    assert ("numeric replay: not run: ops without numeric semantics were only timed: task (4: tg/a, tg/b, tg/c, ...)"
            in result.output)


def test_a_directory_failing_its_own_verification_is_a_bug_and_is_not_written(tmp_path, monkeypatch):
    import planner.verify.directory as directory  # where the verifier looks the check up

    monkeypatch.setattr(directory, "check_bound_and_gap", lambda *a: (_ for _ in ()).throw(
        VerificationError("plan.json", "gap", expected="1", found="2")))
    result, out = _solve(tmp_path, _spec_dict("mlp"))
    assert result.exit_code == 3, result.output
    assert "fails its own verification: plan.json: gap: expected 1, found 2" in result.output
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_a_numeric_disagreement_in_solve_is_a_bug_and_nothing_is_written(tmp_path, monkeypatch):
    import planner.verify.compare as compare  # where the comparison looks the reference up

    evaluate = compare.evaluate
    monkeypatch.setattr(compare, "evaluate", lambda graph, inputs: {
        name: value * 2 + 1 for name, value in evaluate(graph, inputs).items()})
    result, out = _solve(tmp_path, _spec_dict("mlp"))
    assert result.exit_code == 3, result.output
    assert "the numeric replay of the binaries disagrees with the reference" in result.output
    assert not out.exists()


def _onnx_light(model: str):
    onnx = pytest.importorskip("onnx")
    from pathlib import Path

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{model}.onnx"
    if not path.exists():
        pytest.skip(f"the onnx package ships no {path.name}")
    return path


def test_onnx_squeezenet_solves_with_its_numeric_replay_equal(tmp_path):
    from planner.importers import import_model

    spec = import_model(_onnx_light("squeezenet"))
    result, out = _solve(tmp_path, spec)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "plan.json").read_text())["numeric"]["status"] == "equal"


def test_a_graph_whose_shapes_its_ops_do_not_compute_is_named_and_nothing_is_written(tmp_path):
    # A maxpool declared 3x3 -> 2x2 (kernel 2, stride 1 computes 2x2; declared 3x3 here): the cost
    # model prices it, the numeric reference cannot evaluate it.
    spec = {"version": 1, "name": "pool",
            "hardware": {"devices": [{"name": "d", "profile": "generic"}]},
            "models": [{"name": "m", "graph": {
                "tensors": [{"name": "x", "shape": [1, 1, 3, 3], "dtype": "fp32", "kind": "input"},
                            {"name": "y", "shape": [1, 1, 3, 3], "dtype": "fp32", "kind": "output"}],
                "ops": [{"name": "p", "type": "maxpool", "inputs": ["x"], "outputs": ["y"],
                         "attrs": {"kernel": 2, "stride": 1, "padding": 0}}]}}]}
    result, out = _solve(tmp_path, spec)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert not out.exists()
    if "graph.json" in result.output:  # (once the spec loader checks pool shapes, it refuses them first)
        assert "graph.json: op 'm/p': maxpool computes shape (1, 1, 2, 2) but the output is declared (1, 1, 3, 3)" \
            in result.output and "--no-numeric" in result.output


def _depth_reference(value) -> int:
    if isinstance(value, dict):
        value = list(value.values())
    elif not isinstance(value, list):
        return 0
    return 1 + max((_depth_reference(x) for x in value), default=0)


@given(st.recursive(st.integers(-9, 9) | st.text(max_size=2), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=2), inner, max_size=3), max_leaves=25), st.integers(0, 6))
def test_parse_json_measures_nesting_as_the_recursive_definition(value, max_depth):
    depth = _depth_reference(value)
    data = json.dumps(value).encode()
    if depth <= max_depth:
        assert parse_json(data, "f.json", max_depth=max_depth) == value
    else:
        with pytest.raises(VerificationError, match=f"nested {depth} levels deep"):
            parse_json(data, "f.json", max_depth=max_depth)


@pytest.mark.parametrize("digits, refused", [(24, False), (25, True)])
def test_parse_json_bounds_integers_at_24_digits(digits, refused):
    data = b'{"s": "' + b"9" * 40 + b'", "n": -' + b"9" * digits + b"}"
    if refused:
        with pytest.raises(VerificationError, match=f"an integer of {digits + 1} digits"):
            parse_json(data, "f.json")
    else:
        assert parse_json(data, "f.json") == {"s": "9" * 40, "n": -int("9" * digits)}


def test_parse_json_reads_long_digit_runs_in_strings():
    # A run of 40 digits inside a string is text, not an integer: the careful path reads it too.
    assert parse_json(b'["' + b"1" * 40 + b'", 1e5, 7]', "f.json") == ["1" * 40, 1e5, 7]


def test_parse_json_names_the_first_key_given_twice():
    with pytest.raises(VerificationError, match="key 'a' appears twice"):
        parse_json(b'{"a": 1, "b": 2, "a": 3, "b": 4}', "f.json")
