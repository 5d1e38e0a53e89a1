"""The max-load objective in the spec: both forms, defaults, every error with its line and path, the schema."""

import jsonschema
import pytest
import yaml

from planner.errors import SpecError
from planner.spec import load_spec, spec_json_schema
from planner.spec.types import MaxLoadOptions

BASE = """\
version: 1
hardware:
  devices:
    - {name: acc, profile: generic, count: 2}
    - {name: cpu, profile: generic}
  topology: {kind: all-to-all, bandwidth: 1 GB/s}
models:
  - name: m
    generator: {kind: mlp, layers: 2, width: 8}
"""
# line of the objective key when appended to BASE
OBJ_LINE = 10


def _load(tmp_path, text):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    return load_spec(f)


@pytest.mark.parametrize("objective, contiguous", [
    ("max-load", False), ("max_load", False), ("{kind: max-load}", False),
    ("{kind: max_load, contiguous: true}", True), ("\n  kind: max-load\n  contiguous: false", False),
])
def test_both_forms_resolve(tmp_path, objective, contiguous):
    spec = _load(tmp_path, BASE + f"objective: {objective}\n")
    assert spec.objective == "max-load"
    assert spec.max_load == MaxLoadOptions(contiguous, "acc", "cpu")


def test_other_objectives_have_no_max_load_options(tmp_path):
    for text in ("latency", "throughput", "{kind: throughput}"):
        spec = _load(tmp_path, BASE + f"objective: {text}\n")
        assert spec.max_load is None and spec.objective in ("latency", "throughput")
    assert _load(tmp_path, BASE).objective == "latency"


def test_cpu_kind_explicit_and_defaults(tmp_path):
    two = BASE.replace("name: cpu,", "name: host,")
    spec = _load(tmp_path, two + "objective: {kind: max-load, cpu: host}\n")
    assert spec.max_load == MaxLoadOptions(False, "acc", "host")
    # one kind: all accelerators, no CPUs
    one = BASE.replace("    - {name: cpu, profile: generic}\n", "")
    assert _load(tmp_path, one + "objective: max-load\n").max_load == MaxLoadOptions(False, "acc", None)
    # one kind named explicitly as the CPU: CPUs only
    assert _load(tmp_path, one + "objective: {kind: max-load, cpu: acc}\n").max_load == MaxLoadOptions(
        False, None, "acc")
    # the kind named cpu may be overridden: then "cpu" instances are the accelerators
    assert _load(tmp_path, BASE + "objective: {kind: max-load, cpu: acc}\n").max_load == MaxLoadOptions(
        False, "cpu", "acc")


ERRORS = [
    (BASE + "objective: max-lod\n", OBJ_LINE, "objective",
     "expected 'latency', 'throughput' or 'max-load', got 'max-lod'; did you mean 'max-load'?"),
    (BASE + "objective: maxload\n", OBJ_LINE, "objective", "did you mean 'max-load'?"),
    (BASE + "objective: {kind: max-lod}\n", OBJ_LINE, "objective.kind", "did you mean 'max-load'?"),
    (BASE + "objective:\n  kind: max-load\n  contigous: true\n", OBJ_LINE + 2, "objective.contigous",
     "unknown key 'contigous'; did you mean 'contiguous'?"),
    (BASE + "objective: {kind: latency, contiguous: true}\n", OBJ_LINE, "objective",
     "'contiguous' applies to objective max-load only, not latency"),
    (BASE + "objective: {kind: throughput, cpu: cpu}\n", OBJ_LINE, "objective",
     "'cpu' applies to objective max-load only"),
    (BASE + "objective:\n  kind: max-load\n  contiguous: maybe\n", OBJ_LINE + 2, "objective.contiguous",
     "valid boolean"),
    (BASE + "objective: {contiguous: true}\n", OBJ_LINE, "objective", "missing required key 'kind'"),
    (BASE + "objective: [max-load]\n", OBJ_LINE, "objective", "expected an objective name"),
    (BASE + "objective:\n  kind: max-load\n  cpu: cpus\n", OBJ_LINE + 2, "objective.cpu",
     "no device has kind 'cpus'; did you mean 'cpu'? (kinds: acc, cpu)"),
    (BASE.replace("name: cpu,", "name: host,") + "objective: max-load\n", OBJ_LINE, "objective",
     "none is named cpu; say which is the CPU, e.g. objective: {kind: max-load, cpu: host}"),
    (BASE.replace("    - {name: cpu, profile: generic}\n",
                  "    - {name: cpu, profile: generic}\n    - {name: npu, profile: edge-npu}\n")
     + "objective: max-load\n",
     OBJ_LINE + 1, "objective", "the hardware has kinds acc, cpu, npu; the accelerators would be acc, npu"),
    (BASE.replace("  topology: {kind: all-to-all, bandwidth: 1 GB/s}", "  topology: {kind: ring, bandwidth: 1 GB/s}")
     .replace("count: 2", "count: 3") + "objective: max-load\n", 6, "hardware.topology",
     "acc0 and acc2 have no link; use topology all-to-all or bus"),
    (BASE + "objective: max-load\nconstraints:\n  memory_limits:\n    - {device: acc0, max: 1 GiB}\n",
     OBJ_LINE + 3, "constraints.memory_limits", "acc instances have different main memory (acc0: 1.00 GiB"),
    (BASE + "objective: max-load\nmemory: {plan: true}\n", OBJ_LINE + 1, "memory.plan",
     "memory planning is not available with objective max-load"),
    (BASE + "objective: max-load\nconstraints:\n  pins:\n    - {ops: m/fc0, device: acc1}\n", OBJ_LINE + 3,
     "constraints.pins[0].device", "a pin may name only the CPU kind (cpu)"),
]


@pytest.mark.parametrize("text, line, path, fragment", ERRORS)
def test_errors_name_line_and_path(tmp_path, text, line, path, fragment):
    with pytest.raises(SpecError) as info:
        _load(tmp_path, text)
    err = info.value
    assert fragment in err.message, err.message
    assert (err.line, err.path) == (line, path), str(err)


def test_pins_to_the_cpu_kind_are_allowed(tmp_path):
    spec = _load(tmp_path, BASE + "objective: max-load\nconstraints:\n  pins:\n    - {ops: m/fc0, device: cpu}\n")
    assert spec.allowed_devices == {"m/fc0": ("cpu0",)}


def test_dict_specs_get_the_path_without_a_line():
    data = yaml.safe_load(BASE + "objective: {kind: max-load, cpu: gpu}\n")
    with pytest.raises(SpecError) as info:
        load_spec(data)
    assert (info.value.line, info.value.path) == (None, "objective.cpu")


def test_schema_shows_and_checks_max_load():
    schema = spec_json_schema()
    prop = schema["properties"]["objective"]
    assert prop["anyOf"][0]["enum"] == ["latency", "throughput", "max-load", "max_load"]
    assert set(prop["anyOf"][1]["properties"]) == {"kind", "contiguous", "cpu"}
    assert prop["default"] == "latency" and prop["description"]
    validator = jsonschema.Draft202012Validator(schema)
    doc = yaml.safe_load(BASE)
    for good in ("max-load", "max_load", {"kind": "max-load", "contiguous": True, "cpu": "cpu"}):
        assert not list(validator.iter_errors({**doc, "objective": good})), good
    for bad in ("max-lod", {"kind": "max-load", "contigous": True}, {"kind": "max-load", "contiguous": "yes"}):
        assert list(validator.iter_errors({**doc, "objective": bad})), bad
