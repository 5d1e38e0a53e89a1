"""The JSON Schema: generated from the models, valid, and it accepts the shipped specs."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from planner.spec import spec_json_schema

ROOT = Path(__file__).resolve().parents[2]
# Fleet specs (a top-level `fleet:` key) have their own loader: planner.fleet.
SPECS = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet"))


@pytest.fixture(scope="module")
def validator():
    schema = spec_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_shipped_specs_validate(validator, path):
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def test_schema_is_useful_for_editors():
    schema = spec_json_schema()
    json.dumps(schema)   # serialisable
    defs = schema["$defs"]
    assert schema["properties"]["objective"]["anyOf"][0]["enum"] == ["latency", "throughput", "max-load", "max_load"]
    assert defs["TopologySpec"]["properties"]["kind"]["enum"] == ["all-to-all", "ring", "bus"]
    cap = defs["MemorySpec"]["properties"]["capacity"]
    assert cap["type"] == "string" and "16 GiB" in cap["examples"] and cap["description"]
    assert defs["DeviceSpec"]["additionalProperties"] is False
    assert "tpu-v4" in defs["DeviceSpec"]["properties"]["profile"]["examples"]
    assert "matmul" in defs["OpSpec"]["properties"]["type"]["enum"]
    assert set(defs["ModelSpec"]["properties"]["generator"]["anyOf"][0]["discriminator"]["mapping"]) == {
        "mlp", "transformer", "resnet"}


@pytest.mark.parametrize("doc, bad", [
    ({"hardware": {"devices": [{"name": "a", "profile": "generic", "memory": [
        {"name": "m", "capacity": "16 GX", "bandwidth": "1 GB/s"}]}]}, "models": [{"name": "m", "graph": {"ops": []}}]},
     "capacity"),
    ({"hardware": {"devices": [{"name": "a", "profile": "generic", "colour": 1}]},
      "models": [{"name": "m", "graph": {"ops": []}}]}, "colour"),
    ({"hardware": {"devices": [{"name": "a", "profile": "generic"}]},
      "models": [{"name": "m", "generator": {"kind": "transformer", "layer": 2}}]}, "layer"),
    ({"hardware": {"devices": [{"name": "a", "profile": "generic"}]},
      "models": [{"name": "m"}]}, "generator"),
])
def test_schema_rejects_bad_form(validator, doc, bad):
    errors = list(validator.iter_errors(doc))
    assert errors, "expected the schema to reject this document"
    assert any(bad in (str(e.message) + json.dumps(list(e.absolute_path)) + str(e.schema)) for e in errors)


@pytest.mark.parametrize("value", ["16 GiB", "1.5 KiB", "4 KB", "512 B", "100 Gbit"])
def test_size_pattern_matches_parser(validator, value):
    from planner.spec.units import parse_bytes

    parse_bytes(value)
    doc = {"hardware": {"devices": [{"name": "a", "profile": "generic", "memory": [
        {"name": "m", "capacity": value, "bandwidth": "1 GB/s"}]}]}, "models": [{"name": "m", "graph": {"ops": []}}]}
    assert list(validator.iter_errors(doc)) == []
