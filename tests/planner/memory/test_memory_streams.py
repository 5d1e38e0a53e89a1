"""Memory planning on a device with two compute streams (specs/memory-streams.yaml), end to end.

Two branches of two 512x512 layers each run on the two streams of an edge NPU, their weights
and activations sharing its SRAM (docs/memory.md, "Several compute streams").
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.isa.instructions import DMA_STREAM, Opcode
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from solvers.memory.levels.validate import memory_waits
from tests.planner.memory import test_memory_property as one_stream

SPEC = "specs/memory-streams.yaml"


@pytest.fixture(scope="module")
def planned():
    spec = load_spec(SPEC)
    return spec, run(spec, time_limit_s=5, workers=1)


def test_ops_keep_their_streams_and_overlap(planned):
    spec, outcome = planned
    assert outcome.memory_choice == "memory plan"
    ops = {o.name: o for o in outcome.plan.ops}
    assert {o.stream for o in ops.values()} == {0, 1}
    assert ops["m/a0"].stream != ops["m/b0"].stream
    a, b = ops["m/a1"], ops["m/b1"]  # the second layers of the two branches run side by side
    assert a.start_cycle < b.end_cycle and b.start_cycle < a.end_cycle
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles


def test_two_streams_beat_one_stream_and_everything_in_main(planned, tmp_path):
    spec, outcome = planned
    one = tmp_path / "one.yaml"
    one.write_text(open(SPEC).read().replace("streams: 2}", "streams: 1}"))
    serial = run(load_spec(one), time_limit_s=5, workers=1)
    assert outcome.plan.makespan_cycles < serial.plan.makespan_cycles
    assert outcome.plan.makespan_cycles < outcome.memory_baselines["all in main memory"]
    assert outcome.plan.bound is not None and outcome.plan.bound <= outcome.plan.makespan_cycles


def test_numbers_equal_the_reference(planned):
    spec, outcome = planned
    report = compare_numeric(outcome.binaries, spec.graph, seed=5)
    assert report.ok, report.failures()
    assert "m/y" in {c.tensor for c in report.checks}


def test_sram_holds_every_buffer_live_at_each_cycle(planned):
    # Independent of the point axis: sweep the plan's buffer lifetimes in cycles.
    spec, outcome = planned
    dp = outcome.memory_plan.devices["npu0"]
    capacity = spec.hardware.device("npu0").profile.level("sram").capacity_bytes
    fast = [b for b in dp.buffers if b.level == dp.fast_level and b.size_bytes and not b.view_of]
    events = sorted([(b.start_cycle, 1, b.size_bytes) for b in fast] + [(b.end_cycle, 0, -b.size_bytes) for b in fast])
    live = peak = 0
    for _, _, delta in events:
        live += delta
        peak = max(peak, live)
    assert 0 < peak <= capacity
    for i, x in enumerate(fast):
        for y in fast[i + 1:]:
            if x.start_cycle < y.end_cycle and y.start_cycle < x.end_cycle:
                assert x.address + x.size_bytes <= y.address or y.address + y.size_bytes <= x.address, (x, y)


def test_memory_order_waits_are_semaphores_in_the_binary(planned):
    spec, outcome = planned
    dp = outcome.memory_plan.devices["npu0"]
    assert dp.memory_waits  # the branches' allocations wait for the other stream's frees
    program = outcome.programs["npu0"]
    waits = {(i.op, i.stream) for i in program.instructions if i.opcode == Opcode.WAIT}
    placed = {o.name: o for o in outcome.plan.ops}
    for waiter, _ in dp.memory_waits:
        if waiter.startswith("dma:"):
            assert ("", DMA_STREAM) in waits
        else:
            assert (waiter, placed[waiter].stream) in waits


_TWO_DEVICES = """\
version: 1
name: streams-two-devices
hardware:
  clock: 1 GHz
  devices:
    - {name: big, profile: tpu-v4, count: 2, streams: 2}
  links:
    - {name: ici, between: [big0, big1], bandwidth: 300 GB/s, latency: 200 ns}
models:
  - name: gpt
    generator: {kind: transformer, layers: 1, d_model: 128, heads: 4, seq: 32, batch: 1, dtype: fp16}
objective: latency
memory:
  plan: true
solver: {time_limit: 3 s, workers: 1, seed: 0}
"""


def test_streams_with_transfers_replay_whichever_plan_is_kept(tmp_path):
    # Two TPUs with two streams each and transfers between them: big0's memory plan uses both
    # streams with memory-order waits; the cross-device choice (planner.memory.cross_device)
    # keeps it only where the whole plan gains, and the kept combination is lowered and
    # replayed like every candidate (a disagreement would raise InternalError).
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(_TWO_DEVICES)
    outcome = run(load_spec(spec_file), time_limit_s=3, workers=1)
    planned = outcome.memory
    assert outcome.plan.transfers and "memory plan" in outcome.memory_baselines
    levels = planned.device_levels["big0"]["memory plan"]
    assert levels.expanded.multi_stream and memory_waits(levels.expanded, levels.solution)
    kept = planned.memory.devices.get("big0")
    assert (kept is None) == (planned.cross_device["big0"].plan == "main")
    if kept is not None:
        assert {o.stream for o in planned.plan.ops if o.device == "big0"} == {0, 1} and kept.memory_waits
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles


@st.composite
def _two_stream_specs(draw):
    spec = draw(one_stream.memory_specs())
    spec["hardware"]["devices"][0]["streams"] = 2
    return spec


@settings(max_examples=int(os.environ.get("MEMORY_PROPERTY_EXAMPLES", 10)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_two_stream_specs())
def test_random_two_stream_memory_plans_replay_and_compute_the_same_numbers(spec):
    # test_memory_property's random graphs (branches, x * x, zero-cycle reshapes, sometimes two
    # devices or a second model with explicit cycles) on devices with two streams each.
    # (measured: both streams carry ops in 36 of 40 examples; 250 examples pass)
    one_stream.test_random_memory_plans_replay_and_compute_the_same_numbers.hypothesis.inner_test(spec)
