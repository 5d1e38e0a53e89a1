"""A device's memory hierarchy: the main level and the DMA paths a profile or spec declares,
the four-level profile ``tpu-v4-host``, every bad-input case (message, spec path, line,
exit 2), and the shipped four-level spec planned, replayed and numerically equal."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import EXIT_BAD_INPUT, SpecError
from planner.isa.binary import decode
from planner.isa.profiles import get_profile
from planner.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# Line 4 is the device, line 11 the `fast:` entry.
SPEC = """version: 1
hardware:
  devices:
    - {name: tpu, profile: tpu-v4-host%s}
models:
  - name: m
    generator: {kind: mlp, layers: 2, width: 64, batch: 4}
objective: latency
memory:
  plan: true
  fast: {tpu: %s}
"""


def spec_text(device_extra: str = "", fast: str = "vmem") -> str:
    return SPEC % (device_extra, fast)


def error_of(tmp_path, text: str) -> SpecError:
    file = tmp_path / "s.yaml"
    file.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(file)
    return info.value


def test_the_four_level_profile_keeps_hbm_as_main_memory_though_host_is_larger():
    p = get_profile("tpu-v4-host")
    assert [(m.name, m.capacity_bytes) for m in p.memory] == [
        ("vmem", 32 * MiB), ("cmem", 128 * MiB), ("hbm", 32 * GiB), ("host", 96 * GiB)]
    # PCIe Gen3 x16: 16 lanes x 8 GT/s x 128/130 encoding / 8 bits = 15.75 GB/s per direction.
    assert p.level("host").bandwidth_bytes_per_s == round(16 * 8e9 * 128 / 130 / 8, -7)
    assert p.level("hbm").bandwidth_bytes_per_s == 1200 * 10**9
    # The largest level would be host; the profile names HBM, where weights live.
    assert max(p.memory, key=lambda m: m.capacity_bytes).name == "host"
    assert p.main_memory.name == "hbm"
    # vmem and cmem reach HBM directly; only HBM reaches the host.
    assert p.has_dma_path("hbm", "vmem") and p.has_dma_path("cmem", "hbm") and p.has_dma_path("host", "hbm")
    assert not p.has_dma_path("vmem", "host") and not p.has_dma_path("cmem", "host")
    # The three-level TPU v4 profile (no paths declared) keeps today's rule: every pair.
    assert get_profile("tpu-v4").has_dma_path("vmem", "hbm") and get_profile("tpu-v4").main_memory.name == "hbm"


def test_a_device_on_the_four_level_profile_is_capped_by_hbm(tmp_path):
    file = tmp_path / "s.yaml"
    file.write_text(spec_text())
    (device,) = load_spec(file).hardware.devices
    assert device.memory_capacity_bytes == 32 * GiB   # not the host's 96 GiB


def test_spec_levels_reset_the_hierarchy_and_main_picks_the_device_memory(tmp_path):
    levels = (", memory: [{name: sram, capacity: 1 MiB, bandwidth: 100 GB/s}, "
              "{name: dram, capacity: 1 GiB, bandwidth: 10 GB/s}, {name: host, capacity: 8 GiB, bandwidth: 1 GB/s}]")
    file = tmp_path / "s.yaml"
    file.write_text(spec_text(levels, "sram"))
    profile = load_spec(file).hardware.devices[0].profile
    # The profile's main level (hbm) and paths name levels that are gone: largest is main, every pair joins.
    assert profile.main_memory.name == "host" and profile.dma_paths == ()
    file.write_text(spec_text(levels + ", main: dram, dma_paths: [[sram, dram], [dram, host]]", "sram"))
    profile = load_spec(file).hardware.devices[0].profile
    assert profile.main_memory.name == "dram"
    assert profile.has_dma_path("dram", "sram") and not profile.has_dma_path("sram", "host")


@pytest.mark.parametrize("extra, fast, line, path, fragment", [
    # vmem must reach HBM in one DMA: the declared paths go vmem -> cmem -> hbm only.
    (", dma_paths: [[vmem, cmem], [cmem, hbm], [hbm, host]]", "vmem", 11, "memory.fast.tpu",
     "no DMA path joins vmem to main memory hbm (its DMA paths: vmem-cmem, cmem-hbm, hbm-host); the levels "
     "between them cannot be skipped. Levels with a path to hbm: cmem"),
    ("", "host", 11, "memory.fast.tpu", "the fast level host is listed after main memory hbm"),
    ("", "hbm", 11, "memory.fast.tpu", "the fast level must differ from main memory hbm"),
    (", main: hbmm", "vmem", 4, "hardware.devices[0].main",
     "profile tpu-v4-host has no memory level 'hbmm' (its levels: vmem, cmem, hbm, host); did you mean 'hbm'?"),
    (", dma_paths: [[vmem, l2]]", "vmem", 4, "hardware.devices[0].dma_paths[0][1]",
     "has no memory level 'l2'"),
    (", dma_paths: [[vmem, vmem]]", "vmem", 4, "hardware.devices[0].dma_paths[0]",
     "a DMA path joins two different levels, got vmem twice"),
    (", dma_paths: [[vmem, hbm], [hbm, vmem]]", "vmem", 4, "hardware.devices[0].dma_paths[1]",
     "DMA path hbm-vmem is listed twice"),
    (", dma_paths: [[vmem]]", "vmem", 4, "hardware.devices[0].dma_paths[0]", "at least 2 items"),
    (", memory: [{name: vmem, capacity: 1 MiB, bandwidth: 0 GB/s}, {name: hbm, capacity: 1 GiB, "
     "bandwidth: 1 GB/s}]", "vmem", 4, "hardware.devices[0].memory[0].bandwidth", "bandwidth must be > 0"),
    (", memory: [{name: vmem, capacity: 0 KiB, bandwidth: 1 GB/s}, {name: hbm, capacity: 1 GiB, "
     "bandwidth: 1 GB/s}]", "vmem", 4, "hardware.devices[0].memory[0].capacity", "size must be > 0"),
], ids=["skips-a-level", "below-main", "is-main", "unknown-main", "unknown-path-level", "self-path",
        "path-twice", "half-a-path", "zero-bandwidth", "zero-capacity"])
def test_bad_hierarchy(tmp_path, extra, fast, line, path, fragment):
    err = error_of(tmp_path, spec_text(extra, fast))
    assert (err.line, err.path) == (line, path), err
    assert fragment in err.message, err.message


def test_a_skipped_level_exits_2_with_one_line_and_no_output(tmp_path):
    file = tmp_path / "s.yaml"
    file.write_text(spec_text(", dma_paths: [[vmem, cmem], [cmem, hbm]]"))
    res = CliRunner().invoke(app, ["solve", str(file), "-o", str(tmp_path / "out"), "--quiet"])
    assert res.exit_code == EXIT_BAD_INPUT
    assert "no DMA path joins vmem to main memory hbm" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_the_shipped_four_level_spec_plans_vmem_over_hbm_and_replays_equal(tmp_path):
    out = tmp_path / "plan"
    res = CliRunner().invoke(app, ["solve", str(ROOT / "specs" / "memory-4level.yaml"), "-o", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    memory = json.loads((out / "memory.json").read_text())
    device = memory["devices"]["tpu0"]
    assert (device["fast_level"], device["slow_level"]) == ("vmem", "hbm")
    # The bound is the N-level plan bound (host weights cross the host link at least once), not
    # the static one (380,437): the gap is honest and small.
    plan = json.loads((out / "plan.json").read_text())
    assert plan["objective"] * 0.9999 <= plan["bound"] <= plan["objective"] and plan["gap"] < 1e-4
    program = decode((out / "bin" / "tpu0.bin").read_bytes())
    # All four levels are in the binary; main is HBM (index 2), not the larger host (index 3).
    assert [lv.name for lv in program.levels] == ["vmem", "cmem", "hbm", "host"] and program.main_level == 2
    res = CliRunner().invoke(app, ["simulate", str(out), "--numeric"])
    assert res.exit_code == 0, res.output
    assert "equal to the reference" in res.output


def test_the_default_fast_level_needs_a_dma_path_too(tmp_path):
    # No `fast:` given: the planner would use vmem, the fastest, which these paths leave two hops from HBM.
    text = spec_text(", dma_paths: [[vmem, cmem], [cmem, hbm]]").replace("  fast: {tpu: vmem}\n", "")
    err = error_of(tmp_path, text)
    assert (err.line, err.path) == (10, "memory.plan")
    assert err.message == ("device kind 'tpu': its fastest level vmem, the default fast level, has no DMA path to "
                           "main memory hbm; name a fast level with one (memory.fast: {tpu: cmem})")
    # Without memory planning, the hierarchy's paths do not matter.
    file = tmp_path / "off.yaml"
    file.write_text(text.replace("plan: true", "plan: false"))
    assert load_spec(file).hardware.devices[0].profile.dma_paths == (("vmem", "cmem"), ("cmem", "hbm"))
