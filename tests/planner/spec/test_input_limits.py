"""Bounded input: reading limits, documented size limits, the shape contract at load time."""

from __future__ import annotations

import copy
import random
import resource
import time
from pathlib import Path

import pytest
import yaml

from planner import reader
from planner.errors import SpecError
from planner.spec import load_spec
from planner.spec.limits import LIMITS, MAX_CYCLES, MAX_OPS, limits_table
from planner.reader import ReadLimits, find_lines, read_json, read_text_file, read_yaml

ROOT = Path(__file__).resolve().parents[3]

BASE = {
    "version": 1,
    "hardware": {"devices": [{"name": "c", "profile": "generic"}]},
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": "x", "shape": [1, 4, 8, 8], "kind": "input"},
                    {"name": "y", "shape": [1, 4, 4, 4], "kind": "output"}],
        "ops": [{"name": "p", "type": "avgpool", "inputs": ["x"], "outputs": ["y"],
                 "attrs": {"kernel": 2, "stride": 2}}]}}],
}


def spec_with(**changes):
    spec = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = spec
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        node[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    return spec


def error_of(source, **kwargs) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_spec(source, **kwargs)
    return info.value


def write(tmp_path: Path, text: str | bytes, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# ------------------------------------------------------------------ reading

def test_billion_laughs_is_refused_at_the_alias_that_crosses_the_limit(tmp_path):
    # 10 levels of 10 aliases each: 10^10 values once expanded, 1 KB of text.
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = write(tmp_path, "\n".join(levels) + "\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    err = error_of(path)
    assert "more than 4,000,000 values (aliases counted at their expanded size)" in err.message
    # a_k holds (10^(k+2) - 1) / 9 values: a0..a5 together 1,234,566; a6's aliases add
    # 1,111,111 each, so its third one (a6[2]) crosses 4,000,000, on line 7.
    assert (err.line, err.path) == (7, "a6[2]")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: nothing expanded


def test_aliases_within_the_limit_are_plain_values():
    data = read_yaml("dev: &d {name: c, profile: generic}\nhardware: {devices: [*d]}\nx: {<<: *d, count: 2}\n")
    assert data["hardware"]["devices"] == [{"name": "c", "profile": "generic"}]
    assert data["x"] == {"count": 2, "name": "c", "profile": "generic"}


@pytest.mark.parametrize("text, line, fragment", [
    ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", 1, "nested more than 64 levels deep"),
    ("a: &r [1, *r]\n", 1, "alias *r refers to its own enclosing value"),
    ("a: *nowhere\n", 1, "alias *nowhere refers to no anchor"),
    ("a: 1\nb:\n  c: 2\n  c: 3\n", 4, "duplicate key 'c' (first given on line 3)"),
    ("? [1, 2]\n: x\n", 1, "a mapping key must be a plain value"),
    ("a: !!python/object:os.system {}\n", 1, "YAML tag tag:yaml.org,2002:python/object:os.system is not supported"),
    ("a: !custom 1\n", 1, "YAML tag !custom is not supported"),
    ("a: 1\n---\nb: 2\n", 2, "expected a single YAML document"),
    ("a: " + "9" * 5000 + "\n", 1, "cannot read the value '99999"),
    ("a: 2024-13-45\n", 1, "as timestamp (month must be in 1..12)"),
])
def test_malformed_documents(text, line, fragment):
    with pytest.raises(SpecError) as info:
        read_yaml(text, "s.yaml")
    assert fragment in info.value.message and info.value.line == line, str(info.value)


# libyaml's parser (PyYAML >= 6.0.3's wheels) and PyYAML's own, which has no nesting limit: the
# one PyYAML without libyaml, or with an older libyaml, reads with.
PARSERS = [pytest.param(getattr(yaml, "CSafeLoader", yaml.SafeLoader), id="libyaml"),
           pytest.param(yaml.SafeLoader, id="pure-python")]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("depth, limit, said", [(100, 64, 64), (2000, 64, 64), (2000, 5000, 999), (900, 5000, None),
                                                (1000, 5000, 999), (999, 5000, 999), (998, 5000, None)])
def test_nesting_is_refused_at_our_limit_or_libyamls_whichever_is_lower(depth, limit, said, parser, monkeypatch):
    # libyaml (PyYAML >= 6.0.3) stops values 1,000 deep, flow collections while scanning ahead
    # before any event; our own rule refuses what it would, with any parser: the message gives
    # a depth that was exceeded ("a: " adds a level: 999 brackets are 1,000 levels)
    monkeypatch.setattr(reader, "_Parser", parser)
    text = "a: " + "[" * depth + "]" * depth + "\n"
    if said is None:
        read_yaml(text, "s.yaml", ReadLimits(max_depth=limit))
        return
    with pytest.raises(SpecError) as info:
        read_yaml(text, "s.yaml", ReadLimits(max_depth=limit))
    assert info.value.message == f"values are nested more than {said} levels deep" and info.value.line == 1


@pytest.mark.parametrize("parser", PARSERS)
def test_deep_brackets_are_refused_at_the_line_our_rule_crosses_with_any_parser(parser, monkeypatch):
    # 1,200 brackets, 100 a line from line 3: the 65th and the 1,000th are on lines 3 and 12
    # ("[" in a double-quoted string does not count)
    monkeypatch.setattr(reader, "_Parser", parser)
    text = 'a: "[[[["\nb:\n' + "".join("  " + "[" * 100 + "\n" for _ in range(12)) + "  " + "]" * 1200 + "\n"
    for limit, line in ((64, 3), (5000, 12)):
        with pytest.raises(SpecError) as info:
            read_yaml(text, "s.yaml", ReadLimits(max_depth=limit))
        assert (info.value.message, info.value.line) == (f"values are nested more than {min(limit, 999)} levels "
                                                         "deep", line)


def test_the_fast_bracket_depth_is_the_scanned_one():
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice('[]{}"\\ax\n') for _ in range(rng.randint(0, 40)))
        assert reader._bracket_depth(text) == reader._json_depth(text)[0], text


def test_files_are_read_within_the_size_limit(tmp_path):
    big = write(tmp_path, b"# " + b"x" * (16 * 2**20) + b"\n")
    assert "larger than 16 MiB" in error_of(big).message
    # A device file that never ends is read up to the limit, not forever.
    assert "larger than 16 MiB" in pytest.raises(SpecError, read_text_file, "/dev/zero").value.message
    bad = write(tmp_path, b"version: 1\nname: \xff\n")
    err = error_of(bad)
    assert (err.line, err.message) == (2, "the spec is not UTF-8 text (byte 0xff at column 7)")
    assert "expected a spec file, got a directory" in error_of(tmp_path).message


def test_limits_are_parameters():
    with pytest.raises(SpecError, match="more than 5 values"):
        read_yaml("[1, 2, 3, 4, 5]", limits=ReadLimits(max_values=5))
    assert read_yaml("[1, 2, 3, 4]", limits=ReadLimits(max_values=5)) == [1, 2, 3, 4]


def test_lines_are_found_in_the_text_only_on_demand():
    text = "hardware:\n  devices:\n    - {name: c, count: 0}\nmodels: &m\n  - name: x\nalias: *m\n"
    found = find_lines(text, [("hardware", "devices", 0, "count"), ("alias", 0, "name"), ("nope", 3)])
    assert found[("hardware", "devices", 0, "count")] == (3, 3)
    assert found[("alias",)] == (6, 6) and ("alias", 0) not in found   # a path through an alias stops at it
    assert ("nope",) not in found


def test_json_reader_limits():
    assert read_json('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    for text, fragment in (('{"a": Infinity}', "Infinity is not a finite number"),
                           ('{"a": 1e999}', "the number 1e999 is too large"),
                           ('{"a": 1, "a": 2}', "duplicate key 'a'"),
                           ("[" * 65 + "]" * 65, "nested more than 64 levels deep"),
                           ('{"a": ', "not JSON")):
        with pytest.raises(SpecError, match=fragment.replace("(", r"\(")):
            read_json(text)


# ------------------------------------------------------------------ typed limits

@pytest.mark.parametrize("path, value, fragment", [
    ("version", True, "unsupported spec version True (a boolean)"),
    ("name", "..", "'..' is not a valid name"),
    ("name", "x" * 65, "at most 64 characters"),
    ("hardware.devices.0.name", "-rf", "'-rf' is not a valid name"),
    ("hardware.devices.0.count", 10**9, "less than or equal to 256"),
    ("hardware.devices.0.streams", 65, "less than or equal to 64"),
    ("models.0.graph.tensors.0.shape", [1] * 9, "at most 8 items"),
    ("models.0.graph.tensors.0.shape", [2**31, 1], "less than or equal to 2147483647"),
    ("models.0.graph.ops.0.attrs", {"kernel": float("nan")}, "an attribute must be a finite number"),
    ("models.0.graph.ops.0.attrs", {"kernel": {"a": 1}}, "an attribute is a number, a string, a boolean"),
    ("models.0.graph.ops.0.attrs", {"sizes": list(range(4000)) * 2}, "at most 4,096 values"),
    ("models.0.graph.ops.0.name", "a\x00b", "no control characters"),
])
def test_typed_limits(path, value, fragment):
    err = error_of(spec_with(**{path: value}))
    assert fragment in err.message, err.message


def test_the_default_name_from_the_file_name_is_a_valid_name(tmp_path):
    text = ("version: 1\nhardware: {devices: [{name: c, profile: generic}]}\n"
            "models: [{name: m, generator: {kind: mlp}}]\n")
    assert load_spec(write(tmp_path, text, "my spec (v2).yaml")).name == "my_spec__v2_"
    assert load_spec(write(tmp_path, text, "..yaml")).name == "spec."        # never "." or ".."
    assert load_spec(write(tmp_path, text, "x" * 200 + ".yaml")).name == "x" * 64
    err = error_of({**BASE, "hardware": {"devices": [{"name": "d" * 300, "profile": "generic"}]}})
    assert "at most 64 characters" in err.message   # it would name bin/<device>.bin


def test_units_refuse_out_of_range_numbers_before_expanding_them():
    t0 = time.process_time()
    for field, value, fragment in (
            ("capacity", "1e999999999 GB", "the number is out of range"),
            ("capacity", "2 PiB", "at most 2^50 B (1 PiB)"),
            ("bandwidth", "1e30 GB/s", "at most 2^50 B/s")):
        memory = {"name": "m", "capacity": "1 GiB", "bandwidth": "1 GB/s", field: value}
        err = error_of(spec_with(**{"hardware.devices.0.memory": [memory]}))
        assert fragment in err.message, err.message
    assert time.process_time() - t0 < 5  # 1e999999999 was never turned into an integer
    err = error_of({**BASE, "solver": {"time_limit": "1e7 s"}})
    assert "at most 1,000,000 s" in err.message


def test_generators_are_sized_before_they_build(tmp_path):
    text = ("version: 1\nhardware: {devices: [{name: c, profile: generic}]}\nmodels:\n"
            "  - name: g\n    generator: {kind: transformer, layers: 1000000000}\n")
    t0 = time.process_time()
    err = error_of(write(tmp_path, text))
    assert time.process_time() - t0 < 5
    assert (err.line, err.path) == (5, "models[0].generator")
    assert f"all models together may have at most {MAX_OPS:,}" in err.message
    err = error_of({**BASE, "models": [{"name": "r", "generator": {"kind": "resnet", "blocks": [2**31 - 1]}}]})
    assert "resnet generator would make 10,737,418,241 ops" in err.message  # 6 + 5 * (2^31 - 1)


def test_topologies_are_counted_before_they_are_generated():
    spec = spec_with(**{"hardware.devices": [{"name": "n", "profile": "generic", "count": 200}]})
    spec["hardware"]["topology"] = {"kind": "all-to-all", "bandwidth": "1 GB/s"}
    err = error_of(spec)
    assert "19,900 links; the limit is 4,096" in err.message and err.path == "hardware.topology"
    spec["hardware"]["topology"]["kind"] = "ring"
    assert len(load_spec(spec).hardware.links) == 200


# ------------------------------------------------------------------ shape contract and costs at load time

def test_an_op_whose_declared_output_differs_from_the_computed_one_is_a_spec_error(tmp_path):
    # avgpool 3x3 stride 3 on 8x8 computes (8 - 3) // 3 + 1 = 2, not 3: the cost model used to
    # accept the declared [1, 4, 3, 3] and the numeric replay of the written plan then failed.
    text = ("version: 1\nhardware:\n  devices: [{name: c, profile: generic}]\nmodels:\n  - name: m\n    graph:\n"
            "      tensors:\n        - {name: x, shape: [1, 4, 8, 8], kind: input}\n"
            "        - {name: y, shape: [1, 4, 3, 3], kind: output}\n"
            "      ops:\n"
            "        - {name: p, type: avgpool, inputs: [x], outputs: [y], attrs: {kernel: 3, stride: 3}}\n")
    err = error_of(write(tmp_path, text))
    assert (err.line, err.path) == (11, "models[0].graph.ops[0]")
    assert err.message == "op 'm/p': avgpool computes shape (1, 4, 2, 2) but the output is declared (1, 4, 3, 3)"


@pytest.mark.parametrize("op, fragment", [
    ({"type": "matmul", "inputs": ["x"]}, "matmul takes 2 to 3 inputs, got 1"),
    ({"type": "add", "inputs": ["x", "x", "x"]}, "add takes 2 inputs, got 3"),
    ({"type": "conv2d", "inputs": ["x", "x"], "attrs": {"groups": 3}}, "do not fit groups=3"),
    ({"type": "avgpool", "attrs": {"kernel": "2"}}, "attr 'kernel' must be an integer"),
    ({"type": "avgpool", "attrs": {"kernel": 2, "padding": 2}}, "0 <= padding (2, 2) < kernel"),
    ({"type": "transpose", "attrs": {"perm": [0, 1, 2, 9]}}, "is not a permutation of 4 axes"),
    ({"type": "softmax", "attrs": {"axis": 4}}, "axis 4 is out of range for rank 4"),
    ({"type": "split", "outputs": ["y", "y"]}, "tensor 'm/y' is produced"),
])
def test_arity_and_attribute_errors_name_the_op(op, fragment):
    spec = copy.deepcopy(BASE)
    spec["models"][0]["graph"]["ops"][0].update(op)
    err = error_of(spec)
    assert fragment in err.message, err.message


def test_durations_beyond_the_timeline_limit_are_spec_errors():
    # 2^30 device cycles at 1 kHz are 2^30 * 10^6 reference cycles at 1 GHz: over 2^40.
    spec = spec_with(**{"hardware.devices.0.clock": "1 kHz"})
    spec["models"][0]["graph"]["ops"][0] = {"name": "t", "type": "task", "outputs": ["y"], "cycles": {"c": 2**30}}
    err = error_of(spec)
    assert err.path == "models[0].graph.ops[0]"
    assert f"would take 1,073,741,824,000,000 cycles on c (generic); the limit is 2^40 = {MAX_CYCLES:,}" in err.message
    # A 2^34-byte tensor over a 1 B/s link: 1.7e19 cycles.
    spec = spec_with(**{"hardware.devices.0.count": 2, "models.0.graph.tensors.0.shape": [2**31 - 1, 8]})
    spec["hardware"]["topology"] = {"kind": "bus", "bandwidth": "1 B/s"}
    spec["models"][0]["graph"]["tensors"][1]["shape"] = [2**31 - 1, 8]
    spec["models"][0]["graph"]["ops"][0] = {"name": "r", "type": "relu", "inputs": ["x"], "outputs": ["y"]}
    spec["models"][0]["graph"]["ops"].append({"name": "r2", "type": "relu", "inputs": ["y"], "outputs": ["z"]})
    spec["models"][0]["graph"]["tensors"].append({"name": "z", "shape": [2**31 - 1, 8], "kind": "output"})
    err = error_of(spec)
    assert "would take" in err.message and err.path in ("hardware.topology", "models[0].graph.ops[0]")


def test_validate_refuses_what_solve_would():
    # The memory stage refused this only once the spine plan was solved (exit 2 from solve
    # after `plan validate` said valid).
    err = error_of({**BASE, "objective": "throughput", "memory": {"plan": True}})
    assert err.path == "memory.plan" and "memory planning needs objective latency" in err.message


def test_an_alignment_larger_than_a_memory_level_is_refused():
    spec = {**BASE, "hardware": {"devices": [{"name": "npu", "profile": "edge-npu"}]},
            "memory": {"plan": True, "alignment": "1 PiB"}}
    err = error_of(spec)
    assert err.path == "memory.alignment"
    assert "alignment 1024.00 TiB is larger than memory level sram of device kind npu (4.00 MiB)" in err.message
    assert load_spec({**spec, "memory": {"plan": True, "alignment": "4 MiB"}}).memory.alignment_bytes == 4 * 2**20


def test_load_time_costs_are_the_pipelines():
    from planner.isa.cost import cycles_table

    spec = load_spec(ROOT / "specs" / "cnn.yaml")
    assert spec.device_cycles == cycles_table(spec.graph, spec.hardware)
    assert all(v is None or 0 <= v <= MAX_CYCLES for v in spec.device_cycles.values())


# ------------------------------------------------------------------ the documented table

def test_the_documented_limits_table_is_the_code():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert limits_table() in doc
    assert len(LIMITS) == len(limits_table().splitlines()) - 2
