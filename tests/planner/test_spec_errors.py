"""Bad specs: exactly one SpecError with the message, file, line and spec path."""

from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec import load_spec

BAD = Path(__file__).resolve().parents[1] / "data" / "specs" / "bad"

# fixture, line, path, fragments of the message
CASES = [
    ("malformed_yaml", 5, None,
     ["malformed YAML: did not find expected ',' or '}'", "flow mapping started on line 4"]),
    ("unknown_key", 8, "hardware.devices[0].memory[0].capacty",
     ["unknown key 'capacty'; did you mean 'capacity'?"]),
    ("missing_unit", 8, "hardware.devices[0].memory[1].capacity",
     ['expected a size such as "16 GiB", got 4096 (missing unit)']),
    ("wrong_unit", 7, "hardware.topology.bandwidth",
     ['expected a bandwidth such as "900 GB/s", got "900 MHz"', '"MHz" is a frequency']),
    ("zero_capacity", 8, "hardware.devices[1].memory[0].capacity", ['size must be > 0, got "0 MiB"']),
    ("unknown_profile", 5, "hardware.devices[1].profile",
     ["unknown profile 'tpu-v5'", "known: edge-npu, generic, tpu-v1, tpu-v4, tpu-v4-host"]),
    ("missing_tensor", 13, "models[0].graph.ops[0].outputs[0]", ["op 'fc' references unknown tensor 'h'"]),
    ("unknown_pin_device", 11, "constraints.pins[1].device",
     ["unknown device 'big2'", "instances: big0, big1; kinds: big"]),
    ("pattern_no_match", 12, "constraints.pins[0].ops[1]",
     ["pattern 'gpt/layer9/*' matches no op", "names under 'gpt/': gpt/layer0/, gpt/ln_f"]),
    ("graph_cycle", 12, "models[0].graph.ops[0]", ["the graph has a cycle: loop/a -> loop/b -> loop/a"]),
    ("unknown_cycles_kind", 16, "models[0].graph.ops[1].cycles.gpu",
     ["op 'tg/b' gives cycles for unknown device kind 'gpu'; did you mean 'cpu'?"]),
    ("no_links", 3, "hardware", ["devices big0 and small0 cannot exchange data: add links or a topology"]),
    ("pin_conflict", 12, "constraints.pins[1]",
     ["pins conflict on op 'm/fc1'", "constraints.pins[0] puts it on big", "constraints.pins[1] on small"]),
    ("duplicate_key", 8, "objective", ["duplicate key 'objective' (first given on line 7)"]),
    ("generator_typo", 9, "models[0].generator.layer", ["unknown key 'layer'; did you mean 'layers'?"]),
    # found by the spec fuzzer: an output no op writes reached the numeric replay (exit 3)
    ("unproduced_output", 11, "models[0].graph.tensors[2].kind",
     ["tensor 'z' is an output of the graph, but no op produces it"]),
]


@pytest.mark.parametrize("name, line, path, fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_fixture(name, line, path, fragments):
    file = BAD / f"{name}.yaml"
    with pytest.raises(SpecError) as info:
        load_spec(file)
    err = info.value
    assert err.file == str(file)
    assert err.line == line
    assert err.path == path
    for fragment in fragments:
        assert fragment in err.message
    text = str(err)
    assert text.startswith(f"{file}:{line}: ")
    assert "Traceback" not in text and "pydantic" not in text and "\n" not in text
    assert err.__suppress_context__ or err.__cause__ is None   # no chained traceback material


def test_every_fixture_is_tested():
    assert {p.stem for p in BAD.glob("*.yaml")} == {c[0] for c in CASES}


# Inline cases: (yaml text, line, path, fragment)
BASE = """version: 1
hardware:
  devices:
    - {name: cpu, profile: generic, count: 2}
  topology: {kind: bus, bandwidth: 1 GB/s}
models:
  - name: m
    generator: {kind: mlp, layers: 2, width: 8}
"""
INLINE = [
    (BASE + "objective: latncy\n", 9, "objective",
     "expected 'latency', 'throughput' or 'max-load', got 'latncy'; did you mean 'latency'?"),
    (BASE.replace("version: 1", "version: 2"), 1, "version", "unsupported spec version 2"),
    (BASE.replace("kind: mlp,", "kind: mpl,"), 8, "models[0].generator.kind",
     "unknown kind 'mpl'; did you mean 'mlp'?"),
    (BASE.replace("count: 2", "count: 0"), 4, "hardware.devices[0].count", "greater than or equal to 1"),
    (BASE.replace("count: 2", "count: two"), 4, "hardware.devices[0].count", "valid integer, got 'two'"),
    (BASE.replace("kind: bus", "kind: star"), 5, "hardware.topology.kind",
     "expected 'all-to-all', 'ring' or 'bus', got 'star'"),
    (BASE.replace("profile: generic, ", ""), 4, "hardware.devices[0]", "missing required key 'profile'"),
    (BASE + "solver: {time_limit: 30}\n", 9, "solver.time_limit", "(missing unit)"),
    (BASE + "constraints:\n  colocate:\n    - [m/fc0, m/fc9]\n", 11, "constraints.colocate[0][1]",
     "unknown op 'm/fc9'; did you mean 'm/fc1'?"),
    (BASE + "constraints:\n  memory_limits:\n    - {device: gpu, max: 1 GiB}\n", 11,
     "constraints.memory_limits[0].device", "unknown device 'gpu'; did you mean 'cpu'?"),
    (BASE + "constraints:\n  pins:\n    - {ops: fc0, device: cpu}\n", 11, "constraints.pins[0].ops",
     "unknown op 'fc0'; did you mean 'm/fc0'?"),
    (BASE + "constraints:\n  pins:\n    - {ops: 'lay*', device: cpu}\n", 11, "constraints.pins[0].ops",
     "pattern 'lay*' matches no op (op names start with their model's name: m/)"),
    (BASE + "  - name: m\n    generator: {kind: mlp}\n", 9, "models[1].name", "model 'm' is declared twice"),
    (BASE.replace("generator: {kind: mlp, layers: 2, width: 8}", "graph: {ops: [{name: t, type: task}]}"),
     8, "models[0].graph.ops[0]", "task op 't' needs cycles"),
    (BASE.replace("generator: {kind: mlp, layers: 2, width: 8}",
                  "graph: {ops: [{name: t, type: task, cycles: {cpu: 1}, after: [s]}]}"),
     8, "models[0].graph.ops[0].after[0]", "op 't' comes after unknown op 's'"),
    (BASE.replace("generator: {kind: mlp, layers: 2, width: 8}", "graph: {ops: [{name: t, type: matmull}]}"),
     8, "models[0].graph.ops[0].type", "did you mean 'matmul'?"),
    (BASE.replace("generator: {kind: mlp, layers: 2, width: 8}", "generator: {kind: transformer, d_model: 100}"),
     8, "models[0].generator", "d_model (100) must be divisible by heads (8)"),
    (BASE.replace("    generator: {kind: mlp, layers: 2, width: 8}\n", ""), 7, "models[0]",
     "a model needs exactly one of generator or graph"),
    (BASE.replace("  topology: {kind: bus, bandwidth: 1 GB/s}",
                  "  links:\n    - {name: l, between: [cpu0, cpu9], bandwidth: 1 GB/s}"), 6,
     "hardware.links[0].between[1]", "unknown device instance 'cpu9'"),
    (BASE.replace("  topology: {kind: bus, bandwidth: 1 GB/s}",
                  "  links:\n    - {name: l, between: [cpu0, cpu1], bandwidth: 1 GB/s, latency: 2 uss}"), 6,
     "hardware.links[0].latency", 'unknown unit "uss"'),
    (BASE + "constraints:\n  pins:\n    - ops:\n        - m/fc0\n        - 5\n      device: cpu\n", 13,
     "constraints.pins[0].ops[1]", "input should be a valid string, got 5"),
    (BASE.replace("name: m", "name: a/b"), 7, "models[0].name", "'a/b' is not a valid name"),
    (BASE.replace("{kind: mlp, layers: 2, width: 8}", "{layers: 2}"), 8, "models[0].generator",
     "missing required key 'kind' (mlp | transformer | resnet)"),
    (BASE.replace("hardware:\n  devices:", "hardware:\n  devices: 3\n  x:"), 3, "hardware.devices",
     "expected a list, got 3"),
    ("[1, 2]\n", 1, None, "the spec must be a mapping"),
    ("", None, None, "the spec is empty"),
    ("a: !!python/object:os.system {}\n", 1, "a", "YAML tag tag:yaml.org,2002:python/object:os.system is not "
     "supported"),
]


@pytest.mark.parametrize("text, line, path, fragment", INLINE)
def test_inline_errors(tmp_path, text, line, path, fragment):
    file = tmp_path / "s.yaml"
    file.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(file)
    err = info.value
    assert fragment in err.message, err.message
    assert (err.line, err.path) == (line, path), str(err)


def test_dict_input_has_path_but_no_line():
    spec = {"version": 1, "hardware": {"devices": [{"name": "cpu", "profile": "generic",
                                                     "memory": [{"name": "m", "capacity": "-4 GiB",
                                                                 "bandwidth": "1 GB/s"}]}]},
            "models": [{"name": "m", "generator": {"kind": "mlp"}}]}
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    err = info.value
    assert (err.file, err.line, err.path) == (None, None, "hardware.devices[0].memory[0].capacity")
    assert str(err) == 'hardware.devices[0].memory[0].capacity: size must be > 0, got "-4 GiB"'


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nope.yaml")


def test_onnx_missing_file(tmp_path):
    file = tmp_path / "s.yaml"
    file.write_text(BASE.replace("generator: {kind: mlp, layers: 2, width: 8}", "graph: {onnx: nope.onnx}"))
    with pytest.raises(SpecError) as info:
        load_spec(file)
    assert info.value.line == 8 and info.value.path == "models[0].graph.onnx"
    assert f"ONNX file not found: {tmp_path / 'nope.onnx'}" in info.value.message
