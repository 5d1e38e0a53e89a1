"""Importers on hostile input: each case is one SpecError naming the file (and line, tensor or
node), read within the limits, and never a spec that `plan validate` would reject."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import SpecError
from planner.importers import detect_format, import_file, import_model
from planner.input_files import MAX_TEXT_BYTES, parse_json_bounded
from planner.importers.dnn_partitioning import parse_dnn_json
from planner.importers.jobshop import MAX_MACHINES, parse_jobshop
from planner.importers.stg import MAX_TASK_CYCLES, MAX_TASKS, parse_stg

DATA = Path(__file__).resolve().parent.parent / "data" / "importers"
runner = CliRunner()


def _error(path: Path, **options) -> SpecError:
    with pytest.raises(SpecError) as e:
        import_model(path, **options)
    assert str(path) in str(e.value)  # every error names the file
    return e.value


# ----------------------------------------------------------------------------- reading

@pytest.mark.parametrize("data, line, words", [
    (b"1\n0 0 0\n1 5 1 0\n2 \xff 1 1\n", 4, "not UTF-8 text: byte 0xff at column 3"),
    (b"1\n0 0 0\n\x00\x01\x02", 3, "a binary file (a NUL byte at offset 8)"),
])
def test_text_that_is_not_utf8_names_the_line(tmp_path, data, line, words):
    p = tmp_path / "x.stg"
    p.write_bytes(data)
    e = _error(p)
    assert e.line == line and words in e.message


def test_devices_directories_and_oversized_files_are_refused_before_reading(tmp_path):
    assert "not a regular file (a character device)" in _error(Path("/dev/zero")).message
    assert "not a regular file (a directory)" in _error(tmp_path).message
    big = tmp_path / "big.stg"
    with open(big, "wb") as f:  # sparse: nothing is written, the size alone is over the limit
        f.truncate(MAX_TEXT_BYTES + 1)
    assert f"the file has {MAX_TEXT_BYTES + 1:,} bytes; at most 64 MiB are read" in _error(big).message


def test_json_rejects_nan_infinity_overflow_and_deep_nesting():
    for text, line, words in [('{"a":\n NaN}', 2, "NaN is not a number JSON allows"),
                              ('{"a": 1,\n"b": -Infinity}', 2, "-Infinity is not a number JSON allows"),
                              ('{"a": 1e999}', 1, "the number 1e999 overflows a float"),
                              ("{\n" + '"a": [' * 40 + "]" * 40 + "}", 2, "JSON nested deeper than 32 levels")]:
        with pytest.raises(SpecError) as e:
            parse_json_bounded(text, "w.json")
        assert e.value.line == line and words in e.value.message, text[:30]
    assert parse_json_bounded('{"a": "[[[[ NaN"}') == {"a": "[[[[ NaN"}  # inside strings: data


# ----------------------------------------------------------------------------- STG and jsplib

@pytest.mark.parametrize("text, line, words", [
    ("999999999999\n0 0 0\n", 1, f"999,999,999,999 tasks; at most {MAX_TASKS:,}"),
    ("1\n0 0 0\n1 -5 1 0\n2 0 1 1\n", 3, "task 1 has a negative cost -5"),
    (f"1\n0 0 0\n1 {MAX_TASK_CYCLES + 1} 1 0\n2 0 1 1\n", 3, "task 1 costs 1,000,000,000,001; at most"),
    ("1\n0 0 0\n1 " + "9" * 40 + " 1 0\n2 0 1 1\n", 3, "is too large (more than 18 digits)"),
    ("2\n0 0 0\n1 5 1 0\n2 5 2 1 1\n3 0 1 2\n", 4, "task 2 lists a predecessor twice: [1, 1]"),
    ("3\n0 0 0\n1 5 1 0\n2 5 1 1\n", 4, "expected 5 task lines (ids 0..4) after the task count, found 3"),
])
def test_stg_bounds_and_malformed_lines(text, line, words):
    with pytest.raises(SpecError) as e:
        parse_stg(text, "t.stg")
    assert e.value.line == line and words in e.value.message


@pytest.mark.parametrize("text, line, words", [
    (f"1 {MAX_MACHINES + 1}\n0 3\n", 1, f"1 jobs on {MAX_MACHINES + 1:,} machines; at most"),
    ("1 2\n0 3 1 -2\n", 2, "negative duration -2"),
    ("1 2\n0 3 1 10000000000000\n", 2, "duration 10,000,000,000,000 is above the limit"),
    ("3 2\n0 3 1 2\n1 2 0 4\n", 3, "expected 3 job lines after 'n m', found 2"),
    ("2 2\n0 3 1 2\n1 2 0 x\n", 3, "expected integers"),
])
def test_jobshop_bounds_and_malformed_lines(text, line, words):
    with pytest.raises(SpecError) as e:
        parse_jobshop(text, "j")
    assert e.value.line == line and words in e.value.message


# ----------------------------------------------------------------------------- dnn-partitioning

def _dnn(**changes) -> str:
    data = json.loads((DATA / "tiny_dnn.json").read_text())
    data.update(changes)
    return json.dumps(data, indent=1)


@pytest.mark.parametrize("text, words", [
    (_dnn(nodes=[{"id": "(", "supportedOnFpga": 1, "cpuLatency": 1}]), "'id' must be an integer"),
    (_dnn(nodes=[{"id": 1.5, "supportedOnFpga": 1, "cpuLatency": 1}]), "'id' must be an integer"),
    (_dnn(nodes=[{"id": 1, "supportedOnFpga": 1, "cpuLatency": 1, "colorClass": "red"}], edges=[]),
     "'colorClass' must be an integer, got 'red'"),
    (_dnn(nodes=[{"id": 1, "supportedOnFpga": 1, "cpuLatency": 1e9}], edges=[]), "'cpuLatency' is 1000000000.0"),
    (_dnn(maxFPGAs=10**6), "'maxFPGAs' must be an integer in 0..1,024"),
    (_dnn(maxFPGAs=0, maxCPUs=0), "maxFPGAs + maxCPUs is 0"),
    (_dnn(maxCPUs=0), "node 4 can run on no device"),
    (_dnn(edges=[{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 2, "destId": 1, "cost": 0.5}]),
     "the edges form a cycle: node 1 -> node 2 -> node 1"),
    (_dnn(edges=[{"sourceId": 3, "destId": 3, "cost": 0.5}]), "the edges form a cycle: node 3 -> node 3"),
    (_dnn(edges=[{"sourceId": 1, "destId": 2, "cost": -1}]), "'cost' is -1; expected a number in 0..1e+06"),
    ('{"nodes": [], "maxFPGAs": 1, "x": ' + "[" * 100 + "]" * 100 + "}", "nested deeper than 32"),
])
def test_dnn_malformed_values_are_named(text, words):
    with pytest.raises(SpecError) as e:
        parse_dnn_json(text, "w.json")
    assert words in e.value.message


def test_dnn_bad_utf8_and_infinity_through_import(tmp_path):
    p = tmp_path / "w.json"
    p.write_bytes(_dnn().encode().replace(b'"maxCPUs": 1', b'"maxCPUs": 1, "x": "\xc3\x28"'))
    assert "not UTF-8 text" in _error(p).message
    p.write_text(_dnn().replace('"cost": 0.25', '"cost": Infinity'))
    e = _error(p)
    assert "Infinity is not a number JSON allows" in e.message and e.line is not None


# ----------------------------------------------------------------------------- formats

def test_unknown_format_is_named_with_the_formats_listed(tmp_path):
    readme = Path(__file__).resolve().parents[2] / "README.md"
    e = _error(readme)
    assert e.message.startswith("unknown format: its first line of data 'A declarative")
    for words in ("ONNX models (.onnx)", "STG task graphs", "jsplib job shops", "dnn-partitioning workloads"):
        assert words in e.message
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    assert "a binary file" in _error(tmp_path / "blob.bin").message
    (tmp_path / "s.yaml").write_text("version: 1\n")
    assert "a YAML file (a spec already?" in _error(tmp_path / "s.yaml").message


def test_formats_are_recognized_by_content_without_an_extension(tmp_path):
    (tmp_path / "tasks").write_text((DATA / "tiny.stg").read_text())
    (tmp_path / "shop").write_text((DATA / "tiny.jsp").read_text())
    (tmp_path / "work").write_text((DATA / "tiny_dnn.json").read_text())
    assert [detect_format(tmp_path / n) for n in ("tasks", "shop", "work")] == ["stg", "jobshop", "dnn"]
    assert len(import_model(tmp_path / "tasks")["models"][0]["graph"]["ops"]) == 4


def test_options_that_do_not_apply_are_refused(tmp_path):
    assert "option 'processors' does not apply to jsplib" in _error(DATA / "tiny.jsp", processors=3).message


def test_a_spec_the_loader_rejects_is_an_import_error(monkeypatch):
    import planner.importers as importers

    real = importers.import_jobshop

    def broken(path):  # an importer bug or an input the loader rejects: both end here
        spec = real(path)
        spec["models"][0]["graph"]["ops"][1]["after"] = ["no_such_op"]
        return spec

    monkeypatch.setattr(importers, "import_jobshop", broken)
    e = _error(DATA / "tiny.jsp")
    assert e.message.startswith("the spec made from this file is invalid: models[0].graph.ops[1].after")
    assert "no_such_op" in e.message


def test_file_names_become_valid_spec_names(tmp_path):
    p = tmp_path / "my job shop (v2)"
    p.write_text((DATA / "tiny.jsp").read_text())
    spec = import_model(p)
    assert spec["name"] == "my_job_shop__v2_" and spec["models"][0]["name"] == "my_job_shop__v2_"


# ----------------------------------------------------------------------------- the command

def test_cli_import_writes_nothing_on_error_and_refuses_a_directory(tmp_path):
    out = tmp_path / "x.yaml"
    res = runner.invoke(app, ["import", str(Path(__file__).resolve().parents[2] / "README.md"), "-o", str(out)])
    assert res.exit_code == 2 and "unknown format" in res.output and "Traceback" not in res.output
    assert not out.exists() and os.listdir(tmp_path) == []
    res = runner.invoke(app, ["import", str(DATA / "tiny.jsp"), "-o", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output
    assert os.listdir(tmp_path) == []  # no temporary left behind


def test_cli_import_output_validates(tmp_path):
    out = tmp_path / "t.yaml"
    res = runner.invoke(app, ["import", str(DATA / "tiny.stg"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("# imported from tiny.stg by plan import (stg)\n")
    assert yaml.safe_load(out.read_text())["name"] == "tiny"
    res = runner.invoke(app, ["validate", str(out)])
    assert res.exit_code == 0 and "valid" in res.output


def test_import_file_reports_no_notes_for_exact_formats():
    r = import_file(DATA / "tiny_dnn.json")
    assert (r.format, r.notes) == ("dnn", ())
