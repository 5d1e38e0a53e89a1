"""The spec's ``memory:`` section: defaults, both forms of ``fast``, every error (message,
spec path, line), the tensor-size check, the shipped memory specs and the JSON Schema."""

from pathlib import Path

import jsonschema
import pytest
import yaml

from planner.errors import SpecError
from planner.spec.memory_options import MemoryOptions
from planner.spec import load_spec, spec_json_schema

ROOT = Path(__file__).resolve().parents[3]
MiB = 1 << 20

# Two kinds with different levels: tpu (vmem, cmem, hbm; main hbm), npu (sram, lpddr; main lpddr).
BASE = """version: 1
hardware:
  devices:
    - {name: tpu, profile: tpu-v4}
    - {name: npu, profile: edge-npu, count: 2}
  topology: {kind: bus, bandwidth: 1 GB/s}
models:
  - name: m
    generator: {kind: mlp, layers: 2, width: 8, batch: 4}
"""
MEMORY_LINE = 10  # the `memory:` key; its first entry is on line 11


def load_text(tmp_path, text, name="s.yaml"):
    file = tmp_path / name
    file.write_text(text)
    return load_spec(file)


def error_of(tmp_path, text):
    with pytest.raises(SpecError) as info:
        load_text(tmp_path, text)
    err = info.value
    assert "\n" not in str(err) and "pydantic" not in str(err)
    return err


# --- defaults and the resolved options -------------------------------------------------


def test_no_memory_section_gives_the_default_options(tmp_path):
    spec = load_text(tmp_path, BASE)
    assert spec.memory == MemoryOptions()
    assert (spec.memory.enabled, dict(spec.memory.fast), spec.memory.split, spec.memory.split_factors,
            spec.memory.alignment_bytes) == (False, {}, True, (1, 2, 4), 64)


def test_every_default_of_an_empty_section(tmp_path):
    spec = load_text(tmp_path, BASE + "memory: {}\n")
    assert spec.memory == MemoryOptions(enabled=False, fast={}, split=True, split_factors=(1, 2, 4),
                                        alignment_bytes=64)
    spec = load_text(tmp_path, BASE + "memory: {plan: true}\n")
    assert spec.memory == MemoryOptions(enabled=True)
    assert spec.memory.fast_level("tpu") is None   # the profile's fastest level


def test_every_key_given(tmp_path):
    spec = load_text(tmp_path, BASE + "memory:\n  plan: true\n  fast: {npu: sram, tpu: cmem}\n"
                                      "  split: false\n  split_factors: [8, 2, 2]\n  alignment: 4 KiB\n")
    assert spec.memory == MemoryOptions(enabled=True, fast={"tpu": "cmem", "npu": "sram"}, split=False,
                                        split_factors=(1, 2, 8), alignment_bytes=4096)
    assert list(spec.memory.fast) == ["tpu", "npu"]   # hardware order, whatever the spec's order


@pytest.mark.parametrize("factors, expected", [
    ("[1, 2, 4]", (1, 2, 4)),
    ("[4, 2]", (1, 2, 4)),          # 1 (no split) is always included
    ("[3, 3, 1]", (1, 3)),          # repeats dropped, sorted
    ("[]", (1,)),                   # only the unsplit op
    ("[16]", (1, 16)),
])
def test_split_factors(tmp_path, factors, expected):
    spec = load_text(tmp_path, BASE + f"memory:\n  split_factors: {factors}\n")
    assert spec.memory.split_factors == expected


@pytest.mark.parametrize("text, expected", [
    ("1 B", 1), ("64 B", 64), ("128 bytes", 128), ("4 KiB", 4096), ("1 MiB", MiB),
    ("0.5 KiB", 512),
])
def test_alignment_units(tmp_path, text, expected):
    spec = load_text(tmp_path, BASE + f"memory:\n  alignment: {text}\n")
    assert spec.memory.alignment_bytes == expected


def test_fast_as_one_name_applies_to_every_kind(tmp_path):
    # Both kinds get a level called "sram" through a memory override on the tpu.
    text = BASE.replace("    - {name: tpu, profile: tpu-v4}\n",
                        "    - name: tpu\n      profile: tpu-v4\n      memory:\n"
                        "        - {name: sram, capacity: 8 MiB, bandwidth: 4 TB/s}\n"
                        "        - {name: hbm, capacity: 32 GiB, bandwidth: 1200 GB/s}\n")
    spec = load_text(tmp_path, text + "memory:\n  plan: true\n  fast: sram\n")
    assert dict(spec.memory.fast) == {"tpu": "sram", "npu": "sram"}


def test_fast_mapping_may_name_some_kinds_only(tmp_path):
    spec = load_text(tmp_path, BASE + "memory:\n  fast:\n    npu: sram\n")
    assert dict(spec.memory.fast) == {"npu": "sram"}
    assert spec.memory.fast_level("tpu") is None


def test_dict_input(tmp_path):
    data = yaml.safe_load(BASE)
    data["memory"] = {"plan": True, "fast": {"tpu": "vmem"}, "alignment": "128 B"}
    spec = load_spec(data)
    assert spec.memory == MemoryOptions(enabled=True, fast={"tpu": "vmem"}, alignment_bytes=128)


# --- errors: (memory section text, line, path, fragments) -------------------------------

M = MEMORY_LINE
ERRORS = [
    ("memory:\n  plan: true\n  fats: vmem\n", M + 2, "memory.fats",
     ["unknown key 'fats'; did you mean 'fast'?"]),
    ("memory:\n  colour: red\n", M + 1, "memory.colour",
     ["unknown key 'colour'; expected one of: plan, fast, split, split_factors, alignment"]),
    # One name for every kind: a kind without it names its levels and shows the mapping form.
    ("memory:\n  plan: true\n  fast: vmem\n", M + 2, "memory.fast",
     ["device kind 'npu' (profile edge-npu) has no memory level 'vmem' (its levels: sram, lpddr)",
      "name a level per kind with a mapping, e.g. fast: {tpu: vmem, npu: sram}"]),
    ("memory:\n  fast: vmme\n", M + 1, "memory.fast",
     ["device kind 'tpu' (profile tpu-v4) has no memory level 'vmme' (its levels: vmem, cmem, hbm); "
      "did you mean 'vmem'?"]),
    ("memory:\n  fast:\n    tpu: vmem\n    npu: vmem\n", M + 3, "memory.fast.npu",
     ["device kind 'npu' (profile edge-npu) has no memory level 'vmem' (its levels: sram, lpddr)"]),
    ("memory:\n  fast:\n    npu: srma\n", M + 2, "memory.fast.npu",
     ["has no memory level 'srma'", "did you mean 'sram'?"]),
    # The main level cannot be the fast one.
    ("memory:\n  fast: {tpu: hbm}\n", M + 1, "memory.fast.tpu",
     ["device kind 'tpu': the fast level must differ from main memory hbm; memory planning keeps the "
      "slow copy in main memory (its other levels: vmem, cmem)"]),
    ("memory:\n  fast:\n    tpu: vmem\n    npu: lpddr\n", M + 3, "memory.fast.npu",
     ["the fast level must differ from main memory lpddr; memory planning keeps the slow copy in main memory",
      "(its other levels: sram)"]),
    # A kind no device has (the key's line), with did-you-mean and the kinds there are.
    ("memory:\n  fast:\n    tpu: vmem\n    nup: sram\n", M + 3, "memory.fast.nup",
     ["no device has kind 'nup'; did you mean 'npu'? (kinds: tpu, npu)"]),
    ("memory:\n  fast: {gpu0: hbm}\n", M + 1, "memory.fast.gpu0",
     ["no device has kind 'gpu0'", "(kinds: tpu, npu)"]),
    ("memory:\n  fast: [vmem]\n", M + 1, "memory.fast",
     ["expected a level name (fast: vmem) or a mapping of device kinds to level names"]),
    # Alignment: a power of two, with a unit, > 0.
    ("memory:\n  alignment: 48 B\n", M + 1, "memory.alignment",
     ["alignment must be a power of two number of bytes, got 48 B; nearest: 32 B or 64 B"]),
    ("memory:\n  alignment: 3 B\n", M + 1, "memory.alignment", ["must be a power of two", "got 3 B"]),
    ("memory:\n  alignment: 1000 B\n", M + 1, "memory.alignment", ["nearest: 512 B or 1024 B"]),
    ("memory:\n  alignment: 0 B\n", M + 1, "memory.alignment", ['size must be > 0, got "0 B"']),
    ("memory:\n  alignment: 64\n", M + 1, "memory.alignment",
     ['expected a size such as "16 GiB", got 64 (missing unit)']),
    ("memory:\n  alignment: 64 GX\n", M + 1, "memory.alignment", ['unknown unit "GX"']),
    # Split factors: whole numbers >= 1, at the item's own path.
    ("memory:\n  split_factors: [1, 0, 4]\n", M + 1, "memory.split_factors[1]",
     ["a split factor must be >= 1 (1 means the op is not split), got 0"]),
    ("memory:\n  split_factors:\n    - 2\n    - -4\n", M + 3, "memory.split_factors[1]",
     ["a split factor must be >= 1", "got -4"]),
    ("memory:\n  split_factors: [two]\n", M + 1, "memory.split_factors[0]",
     ["input should be a valid integer, got 'two'"]),
    ("memory:\n  split_factors: 2\n", M + 1, "memory.split_factors", ["expected a list, got 2"]),
    ("memory:\n  plan: maybe\n", M + 1, "memory.plan", ["input should be a valid boolean, got 'maybe'"]),
    ("memory:\n  split: 1\n", M + 1, "memory.split", ["input should be a valid boolean, got 1"]),
    ("memory: true\n", M, "memory", ["expected a mapping of keys, got True"]),
    # Shared bandwidth: one of two words.
    ("memory:\n  plan: true\n  bandwidth: contended\n", M + 2, "memory.bandwidth", ["'separate'", "'shared'"]),
]


@pytest.mark.parametrize("section, line, path, fragments", ERRORS, ids=[f"{e[2]}-{i}" for i, e in enumerate(ERRORS)])
def test_memory_section_errors(tmp_path, section, line, path, fragments):
    err = error_of(tmp_path, BASE + section)
    assert (err.line, err.path) == (line, path), str(err)
    for fragment in fragments:
        assert fragment in err.message, err.message
    assert str(err).startswith(f"{tmp_path / 's.yaml'}:{line}: {path}: ")


def test_fast_is_checked_even_without_plan(tmp_path):
    err = error_of(tmp_path, BASE + "memory:\n  plan: false\n  fast: {tpu: hbm}\n")
    assert err.path == "memory.fast.tpu" and "must differ from main memory hbm" in err.message


def test_fast_on_a_one_level_device(tmp_path):
    text = BASE.replace("profile: edge-npu, count: 2", "profile: generic")
    err = error_of(tmp_path, text + "memory:\n  fast: {npu: mem}\n")
    assert err.path == "memory.fast.npu"
    assert "the fast level must differ from main memory mem" in err.message
    assert "it has one level only, so it cannot be memory-planned" in err.message
    # The single-name form leaves the one-level kind out of its example mapping.
    err = error_of(tmp_path, text + "memory:\n  fast: vmem\n")
    assert "device kind 'npu' (profile generic) has no memory level 'vmem' (its levels: mem)" in err.message
    assert err.message.endswith("e.g. fast: {tpu: vmem}")


def test_main_level_of_an_override_is_its_largest(tmp_path):
    # Listed fastest first or not, main memory is the largest level (planner.hardware.Profile).
    text = BASE.replace("    - {name: tpu, profile: tpu-v4}\n",
                        "    - name: tpu\n      profile: tpu-v4\n      memory:\n"
                        "        - {name: big, capacity: 1 GiB, bandwidth: 100 GB/s}\n"
                        "        - {name: small, capacity: 1 MiB, bandwidth: 1 TB/s}\n")
    err = error_of(tmp_path, text + "memory:\n  fast: {tpu: big}\n")
    assert "must differ from main memory big" in err.message and "(its other levels: small)" in err.message
    assert load_text(tmp_path, text + "memory:\n  fast: {tpu: small}\n").memory.fast == {"tpu": "small"}


def test_dict_input_error_has_path_but_no_line():
    data = yaml.safe_load(BASE)
    data["memory"] = {"alignment": "96 B"}
    with pytest.raises(SpecError) as info:
        load_spec(data)
    assert (info.value.file, info.value.line, info.value.path) == (None, None, "memory.alignment")
    assert str(info.value) == ("memory.alignment: alignment must be a power of two number of bytes, "
                               "got 96 B; nearest: 64 B or 128 B")


# --- memory levels of a device override (already checked by the level model) -----------

LEVELS = """version: 1
hardware:
  devices:
    - name: npu
      profile: edge-npu
      memory:
        - {name: sram, capacity: 4 MiB, bandwidth: 128 GB/s}
        - {name: lpddr, capacity: 4 GiB, bandwidth: 17 GB/s}
models:
  - name: m
    generator: {kind: mlp, layers: 2, width: 8}
memory: {plan: true}
"""


@pytest.mark.parametrize("old, new, path, fragment", [
    ("capacity: 4 MiB", "capacity: 0 MiB", "hardware.devices[0].memory[0].capacity",
     'size must be > 0, got "0 MiB"'),
    ("capacity: 4 GiB", "capacity: 0 B", "hardware.devices[0].memory[1].capacity", 'size must be > 0, got "0 B"'),
    ("bandwidth: 128 GB/s", "bandwidth: 0 GB/s", "hardware.devices[0].memory[0].bandwidth",
     'bandwidth must be > 0, got "0 GB/s"'),
    (", bandwidth: 17 GB/s", "", "hardware.devices[0].memory[1]", "missing required key 'bandwidth'"),
    (", capacity: 4 MiB", "", "hardware.devices[0].memory[0]", "missing required key 'capacity'"),
])
def test_bad_memory_level(tmp_path, old, new, path, fragment):
    assert old in LEVELS
    err = error_of(tmp_path, LEVELS.replace(old, new))
    line = 7 if "memory[0]" in path else 8
    assert (err.line, err.path) == (line, path), str(err)
    assert fragment in err.message


# --- a tensor larger than all levels together of every device that could hold it --------

# npu: 1 KiB + 2 KiB = 3 KiB in all. x and y: 1024 fp32 = 4 KiB each.
TINY = """version: 1
hardware:
  devices:
    - name: npu
      profile: edge-npu
      memory:
        - {name: sram, capacity: 1 KiB, bandwidth: 1 GB/s}
        - {name: dram, capacity: 2 KiB, bandwidth: 1 GB/s}
models:
  - name: m
    graph:
      tensors:
        - {name: x, shape: [1024], kind: input}
        - {name: y, shape: [1024], kind: output}
      ops:
        - {name: r, type: relu, inputs: [x], outputs: [y]}
memory: {plan: true}
"""


def test_tensor_larger_than_every_level_together(tmp_path):
    err = error_of(tmp_path, TINY)
    assert (err.line, err.path) == (13, "models[0].graph.tensors[0]")
    assert err.message == ("tensor 'm/x' is 4.00 KiB, larger than all memory levels together of every "
                           "device that could hold it (npu0: 3.00 KiB)")


def test_a_tensor_of_exactly_all_levels_fits(tmp_path):
    spec = load_text(tmp_path, TINY.replace("[1024]", "[768]"))   # 768 * 4 B = 3 KiB = 1 KiB + 2 KiB
    assert spec.memory.enabled


def test_the_size_check_needs_memory_planning(tmp_path):
    # Without memory planning every tensor must fit main memory: the pipeline's prechecks
    # explain that as an infeasible request (exit 1), so the spec itself loads.
    spec = load_text(tmp_path, TINY.replace("memory: {plan: true}", "memory: {plan: false}"))
    assert not spec.memory.enabled and spec.graph.tensors["m/x"].size_bytes == 4096


def test_the_size_check_uses_the_memory_limit(tmp_path):
    # A 1.5 KiB cap on npu0's main level: 1 KiB + 1.5 KiB = 2.5 KiB < 3 KiB (768 fp32).
    text = TINY.replace("[1024]", "[768]") + "constraints:\n  memory_limits:\n    - {device: npu0, max: 1536 B}\n"
    err = error_of(tmp_path, text)
    assert "tensor 'm/x' is 3.00 KiB" in err.message and "(npu0: 2.50 KiB)" in err.message


TWO_KINDS = TINY.replace("""memory: {plan: true}
""", "memory: {plan: true}\n").replace("""        - {name: dram, capacity: 2 KiB, bandwidth: 1 GB/s}
""", """        - {name: dram, capacity: 2 KiB, bandwidth: 1 GB/s}
    - {name: big, profile: generic}
  topology: {kind: bus, bandwidth: 1 GB/s}
""")


def test_only_devices_that_could_hold_the_tensor_count(tmp_path):
    assert load_text(tmp_path, TWO_KINDS).memory.enabled          # big0 (1 TiB) can run r
    pinned = TWO_KINDS + "constraints:\n  pins:\n    - {ops: m/r, device: npu}\n"
    err = error_of(tmp_path, pinned)
    assert err.path == "models[0].graph.tensors[0]"
    assert "(npu0: 3.00 KiB)" in err.message and "big0" not in err.message
    # A task op runs only on the kinds it gives cycles for.
    task = TWO_KINDS.replace("{name: r, type: relu, inputs: [x], outputs: [y]}",
                             "{name: r, type: task, inputs: [x], outputs: [y], cycles: {npu: 10}}")
    err = error_of(tmp_path, task)
    assert "(npu0: 3.00 KiB)" in err.message and "big0" not in err.message


def test_a_generated_tensor_points_at_its_generator(tmp_path):
    text = TINY.replace("""    graph:
      tensors:
        - {name: x, shape: [1024], kind: input}
        - {name: y, shape: [1024], kind: output}
      ops:
        - {name: r, type: relu, inputs: [x], outputs: [y]}
""", "    generator: {kind: mlp, layers: 1, width: 32}\n")   # w: 32 x 32 fp32 = 4 KiB
    err = error_of(tmp_path, text)
    assert (err.line, err.path) == (11, "models[0].generator")
    assert err.message.startswith("tensor 'm/fc0/w' is 4.00 KiB")


# --- the shipped memory specs -------------------------------------------------------------

SHIPPED = {
    # name: (device profile, options, ops, tensors, weight bytes, largest non-weight bytes, fast capacity)
    "memory-mlp": ("tpu-v1", MemoryOptions(enabled=True, fast={"tpu": "onchip"}),
                   7, 12, 4 * 1536 * 1536 * 4, 16 * 1536 * 4, 28 * MiB),
    "memory-transformer": ("tpu-v4", MemoryOptions(enabled=True, fast={"tpu": "vmem"}),
                           2 * (11 + 4 * 4) + 1, 96, None, 4 * 64 * 1024 * 4, 4 * MiB),
    "memory-cnn": ("edge-npu", MemoryOptions(enabled=True), 6 + 5 * 2 + 1, 25, None,
                   4 * 32 * 112 * 112 * 4, 4 * MiB),
    "memory-4level": ("tpu-v4-host", MemoryOptions(enabled=True, fast={"tpu": "vmem"},
                                                   home={f"mlp/fc{i}/w": "host" for i in range(4)}),
                      7, 12, 4 * 2048 * 2048 * 4, 8 * 2048 * 4, 32 * MiB),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_memory_specs(name):
    profile, options, ops, tensors, weights, largest, fast_cap = SHIPPED[name]
    spec = load_spec(ROOT / "specs" / f"{name}.yaml")
    assert spec.name == name and spec.memory == options
    (device,) = spec.hardware.devices
    assert device.profile.name == profile
    fast = options.fast_level(device.kind) or device.profile.memory[0].name
    assert fast != device.profile.main_memory.name
    assert device.profile.level(fast).capacity_bytes == fast_cap
    g = spec.graph
    assert (len(g.ops), len(g.tensors)) == (ops, tensors)
    assert {t.dtype for t in g.tensors.values()} == {"fp32"}      # the numeric replay compares fp32
    weight_bytes = sum(t.size_bytes for t in g.tensors.values() if t.kind == "weight")
    if weights is not None:
        assert weight_bytes == weights
    others = [t for t in g.tensors.values() if t.kind != "weight"]
    assert max(t.size_bytes for t in others) == largest
    # Every split factor divides dim 0 of every activation (the batch).
    assert all(t.shape[0] % f == 0 for t in others for f in spec.memory.split_factors)


def test_shipped_mlp_weights_overflow_on_chip():
    spec = load_spec(ROOT / "specs" / "memory-mlp.yaml")
    weights = [t.size_bytes for t in spec.graph.tensors.values() if t.kind == "weight"]
    onchip = spec.hardware.devices[0].profile.level("onchip").capacity_bytes
    assert sum(weights) > onchip >= 3 * max(weights)   # 36 MiB > 28 MiB >= 27 MiB: three fit, not four


def test_shipped_transformer_weights_overflow_vmem():
    spec = load_spec(ROOT / "specs" / "memory-transformer.yaml")
    weights = sum(t.size_bytes for t in spec.graph.tensors.values() if t.kind == "weight")
    vmem = spec.hardware.devices[0].profile.level("vmem")
    assert weights > vmem.capacity_bytes == 4 * MiB
    assert [m.name for m in spec.hardware.devices[0].profile.memory] == ["vmem", "cmem", "hbm"]


def test_shipped_cnn_activation_needs_a_split():
    spec = load_spec(ROOT / "specs" / "memory-cnn.yaml")
    sram = spec.hardware.devices[0].profile.level("sram").capacity_bytes
    stem = spec.graph.tensors["cnn/stem/y"]
    assert stem.shape == (4, 32, 112, 112) and stem.size_bytes > sram           # 6.125 MiB > 4 MiB
    assert stem.size_bytes // 2 < sram and stem.size_bytes // 4 < sram         # portions fit


# --- the JSON Schema ------------------------------------------------------------------------


def test_schema_has_the_memory_section():
    schema = spec_json_schema()
    assert schema["properties"]["memory"]["$ref"] == "#/$defs/MemoryPlanSpec"
    section = schema["$defs"]["MemoryPlanSpec"]
    assert section["additionalProperties"] is False
    props = section["properties"]
    assert list(props) == ["plan", "fast", "split", "split_factors", "alignment", "bandwidth", "home"]
    assert props["bandwidth"]["enum"] == ["separate", "shared"] and props["bandwidth"]["default"] == "separate"
    assert props["home"]["type"] == "object" and props["home"]["examples"] == [{"mlp/fc0/w": "host"}]
    assert (props["plan"]["default"], props["split"]["default"], props["split_factors"]["default"],
            props["alignment"]["default"]) == (False, True, [1, 2, 4], "64 B")
    assert props["split_factors"]["items"] == {"type": "integer", "minimum": 1, "maximum": 2**16}
    assert props["alignment"]["type"] == "string" and "64 B" in props["alignment"]["examples"]
    assert {"string", "object"} <= {s.get("type") for s in props["fast"]["anyOf"]}
    assert all(props[k]["description"] for k in props)


@pytest.mark.parametrize("memory, ok", [
    ({"plan": True, "fast": "vmem", "split": False, "split_factors": [2], "alignment": "128 B"}, True),
    ({"fast": {"tpu": "vmem", "npu": "sram"}}, True),
    ({"fats": "vmem"}, False),
    ({"split_factors": [0]}, False),
    ({"alignment": 64}, False),
    ({"fast": ["vmem"]}, False),
])
def test_schema_checks_the_section(memory, ok):
    validator = jsonschema.Draft202012Validator(spec_json_schema())
    doc = {**yaml.safe_load(BASE), "memory": memory}
    assert (list(validator.iter_errors(doc)) == []) == ok


def test_cli_schema_prints_the_section():
    import json

    from typer.testing import CliRunner

    from planner.cli import app

    res = CliRunner().invoke(app, ["schema"])
    assert res.exit_code == 0
    assert "MemoryPlanSpec" in json.loads(res.output)["$defs"]
