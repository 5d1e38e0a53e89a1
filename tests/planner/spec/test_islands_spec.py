"""``hardware.islands`` and ``hardware.network``: resolution, every error (message, spec path,
line, exit 2 through the CLI), the JSON Schema, and a spec without islands unchanged."""

from pathlib import Path

import jsonschema
import pytest
import yaml

from planner.errors import SpecError
from planner.spec import load_spec, spec_json_schema

ROOT = Path(__file__).resolve().parents[3]

HEAD = """version: 1
hardware:
  devices:
    - {name: a, profile: generic, count: 2}
    - {name: b, profile: generic, count: 2}
"""
MODELS = """models:
  - name: m
    generator: {kind: mlp, layers: 2, width: 8}
"""
GOOD_ISLANDS = """  islands:
    - {name: x, devices: [a], topology: {kind: all-to-all, bandwidth: 10 GB/s}, host_memory: 1 GiB}
    - {name: y, devices: [b0, b1], topology: {kind: ring, bandwidth: 10 GB/s}}
"""
NETWORK = "  network: {name: dcn, bandwidth: 1 GB/s, latency: 3 us}\n"


def load_text(tmp_path, text):
    file = tmp_path / "s.yaml"
    file.write_text(text)
    return load_spec(file)


def error_of(tmp_path, text):
    with pytest.raises(SpecError) as info:
        load_text(tmp_path, text)
    return info.value


def test_islands_resolve_to_island_links_then_one_shared_network_link(tmp_path):
    spec = load_text(tmp_path, HEAD + GOOD_ISLANDS + NETWORK + MODELS)
    hw = spec.hardware
    assert [(i.name, i.devices, i.network, i.host_memory_bytes) for i in hw.islands] == [
        ("x", ("a0", "a1"), "dcn", 1 << 30), ("y", ("b0", "b1"), "dcn", None)]
    assert [l.name for l in hw.links] == ["x_link_a0_a1", "y_link_b0_b1", "dcn"]
    assert hw.links[-1].devices == ("a0", "a1", "b0", "b1")
    assert hw.links[-1].latency_cycles == 3000 and hw.links[-1].bandwidth_bytes_per_s == 10**9
    # Inside an island the fast link is chosen; across islands the one network link.
    assert hw.link_between("a0", "a1").name == "x_link_a0_a1"
    assert hw.link_between("a1", "b0").name == "dcn" and hw.link_between("b1", "a0").name == "dcn"


def test_a_spec_without_islands_has_none():
    assert load_spec(ROOT / "specs" / "demo.yaml").hardware.islands == ()


@pytest.mark.parametrize("islands, network, path, line, words", [
    ("  islands:\n    - {name: x, devices: [a, b0]}\n    - {name: y, devices: [b]}\n", NETWORK,
     "hardware.islands[1].devices[0]", 8, "device 'b0' is in two islands: 'x' and 'y'"),
    ("  islands:\n    - {name: x, devices: [a], topology: {kind: bus, bandwidth: 1 GB/s}}\n"
     "    - {name: y, devices: [b0]}\n", NETWORK,
     "hardware.islands", 7, "device 'b1' is in no island"),
    ("  islands:\n    - {name: x, devices: [a]}\n    - {name: y, devices: [b]}\n", NETWORK,
     "hardware.islands[0]", 7, "island 'x': devices a0 and a1 are not joined by the island's links"),
    ("  islands:\n    - {name: x, devices: [a], topology: {kind: bus, bandwidth: 1 GB/s}}\n"
     "    - {name: y, devices: [b], topology: {kind: bus, bandwidth: 1 GB/s}}\n", "",
     "hardware.islands[1]", 8, "island 'y' has no route to island 'x': add hardware.network"),
    ("  islands:\n    - {name: x, devices: [a], topology: {kind: bus, bandwidth: 1 GB/s}}\n"
     "    - {name: y, devices: [b], topology: {kind: bus, bandwidth: 1 GB/s}}\n",
     "  network: {bandwidth: 1 GB/s, islands: [x]}\n",
     "hardware.islands[1]", 8, "island 'y' has no route to the others"),
    ("  islands:\n    - {name: x, devices: []}\n    - {name: y, devices: [a, b]}\n", NETWORK,
     "hardware.islands[0].devices", 7, "at least 1"),
    ("  islands:\n    - {name: x, devices: [a, c0]}\n", "",
     "hardware.islands[0].devices[1]", 7, "unknown device 'c0'"),
    ("  topology: {kind: bus, bandwidth: 1 GB/s}\n  islands:\n    - {name: x, devices: [a, b]}\n", "",
     "hardware.topology", 6, "give each island its own topology"),
    ("  links:\n    - {name: l, between: [a1, b0], bandwidth: 1 GB/s}\n"
     "  islands:\n    - {name: x, devices: [a], topology: {kind: bus, bandwidth: 1 GB/s}}\n"
     "    - {name: y, devices: [b], topology: {kind: bus, bandwidth: 1 GB/s}}\n", NETWORK,
     "hardware.links[0].between", 7, "link 'l' joins islands 'x' and 'y'"),
])
def test_island_errors_name_the_file_line_and_spec_path(tmp_path, islands, network, path, line, words):
    err = error_of(tmp_path, HEAD + islands + network + MODELS)
    assert err.path == path, err
    assert err.line == line, err
    assert words in err.message, err
    assert err.file.endswith("s.yaml")


def test_an_island_error_exits_2_with_no_traceback_and_no_output(tmp_path):
    from typer.testing import CliRunner

    from planner.cli import app

    file = tmp_path / "s.yaml"
    file.write_text(HEAD + "  islands:\n    - {name: x, devices: [a, b0]}\n    - {name: y, devices: [b]}\n"
                    + NETWORK + MODELS)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["solve", str(file), "-o", str(out), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "in two islands" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_the_schema_describes_islands_and_network():
    schema = spec_json_schema()
    jsonschema.validate(yaml.safe_load(HEAD + GOOD_ISLANDS + NETWORK + MODELS), schema)
    bad = yaml.safe_load(HEAD + "  islands:\n    - {name: x, devices: [a], colour: red}\n" + MODELS)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    jsonschema.validate(yaml.safe_load((ROOT / "specs" / "islands.yaml").read_text()), schema)


@pytest.mark.parametrize("extra, path, words", [
    ("constraints:\n  gang: [[\"m/fc0\", \"m/fc1\"]]\n", "constraints.gang", "needs hardware.islands"),
    ("memory: {plan: true}\nconstraints:\n  gang: [[\"m/fc0\", \"m/fc1\"]]\n", "constraints.gang",
     "needs hardware.islands"),
])
def test_a_gang_without_islands_is_refused(tmp_path, extra, path, words):
    err = error_of(tmp_path, HEAD + "  topology: {kind: bus, bandwidth: 1 GB/s}\n" + MODELS + extra)
    assert err.path == path and words in err.message


@pytest.mark.parametrize("gang, path, words", [
    ('[["m/fc0", "m/fc1"], ["m/fc1", "m/act0"]]', "constraints.gang[1]", "op 'm/fc1' is in two gangs"),
    ('[["m/fc0"]]', "constraints.gang[0]", "a gang needs 2 to 2 ops"),
    ('[["m/fc*", "m/act0"]]', "constraints.gang[0]", "this one has 3"),
    ('[["m/nope", "m/fc0"]]', "constraints.gang[0][0]", "unknown op 'm/nope'"),
])
def test_gang_errors(tmp_path, gang, path, words):
    err = error_of(tmp_path, HEAD + GOOD_ISLANDS + NETWORK + MODELS + f"constraints:\n  gang: {gang}\n")
    assert err.path == path, err
    assert words in err.message, err
    assert err.line is not None


def test_a_gang_with_memory_planning_resolves_on_islands(tmp_path):
    # Memory planning's re-timing starts gangs together (planner.memory.retime), so the spec keeps both.
    spec = load_text(tmp_path, HEAD + GOOD_ISLANDS + NETWORK + MODELS
                     + 'memory: {plan: true}\nconstraints:\n  gang: [["m/fc0", "m/fc1"]]\n')
    assert spec.gangs == (("m/fc0", "m/fc1"),) and spec.memory.enabled


def test_a_gang_resolves_in_graph_order(tmp_path):
    spec = load_text(tmp_path, HEAD + GOOD_ISLANDS + NETWORK + MODELS + 'constraints:\n  gang: [["m/fc1", "m/fc0"]]\n')
    assert spec.gangs == (("m/fc0", "m/fc1"),)
