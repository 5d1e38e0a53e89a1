"""The whole fast level for several-stream devices with splits (planner/memory/full_level.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import planner.memory as memory
from planner.memory.full_level import aligned_everywhere, offers_full_level
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from solvers.memory.levels import LevelProblem, SplitGroup

SPEC = "tests/data/specs/memory-streams-whole-level.yaml"
S, F = 16384 // 4, 16384 // 128  # one 16-KiB tensor at LPDDR's 4 B/cycle and at SRAM's 128 B/cycle


@pytest.fixture(scope="module")
def whole():
    spec = load_spec(SPEC)
    return spec, run(spec, workers=1)


def test_the_whole_level_keeps_both_streams_activations_and_is_strictly_shorter(whole, monkeypatch, tmp_path):
    spec, outcome = whole
    # Hand-checked (every op memory-bound, its accesses in series; the matmul computes 64^3 MACs
    # in fewer cycles): a0 and b0 read x and their weight from LPDDR and write h to SRAM,
    # 2S + F = 8,320 each, side by side; the relus read h in SRAM and write r to LPDDR
    # (S + F = 4,224; h and the other stream's h fill the 32 KiB); a1 and b1 read r and their
    # weight from LPDDR and write y to SRAM (8,320); the join reads both y in SRAM and writes the
    # output to LPDDR (2F + S = 4,352): 8,320 + 4,224 + 8,320 + 4,352 = 25,216.
    assert (2 * S + F, S + F, 2 * F + S) == (8_320, 4_224, 4_352)
    assert outcome.plan.makespan_cycles == outcome.simulation.makespan_cycles == 25_216
    dp = outcome.memory.memory.devices["npu0"]
    fast_outputs = {a.op: [name for names in a.outputs for name in names] for a in dp.accesses.values()}
    assert fast_outputs["m/a0"] == ["m/ha@sram.0"] and fast_outputs["m/b0"] == ["m/hb@sram.0"]
    assert outcome.memory.bridges_order["npu0"][:2] == ("m/a0", "m/b0")
    # The greedy baseline stays the one made with the reserve (greedy-by-size needs its slack).
    assert outcome.memory_baselines["greedy prefetch + greedy-by-size"] > outcome.plan.makespan_cycles
    # With the reserve (the plan before), the two 16-KiB activations never fit together.
    monkeypatch.setattr(memory, "offers_full_level", lambda *args: False)
    reserved = run(load_spec(SPEC), workers=1)
    assert reserved.plan.makespan_cycles == 45_056 > outcome.plan.makespan_cycles
    out = tmp_path / "out"
    write_plan_dir(outcome, spec, out, numeric="off")  # verified on the way out
    assert "- Fast offsets: OPTIMAL; 0 B of sram held back for alignment padding." in (out / "report.md").read_text()
    assert compare_numeric(outcome.binaries, spec.graph).ok


def test_the_choice_is_deterministic(whole):
    spec, outcome = whole
    again = run(load_spec(SPEC), workers=1)
    assert again.binaries == outcome.binaries and again.plan.makespan_cycles == outcome.plan.makespan_cycles


def _problem(tensor_bytes, split_tensors, factors=(1, 2, 4), streams=(0, 1)):
    return LevelProblem((4, 4), ((0,), (1,)), ((), ()), tensor_bytes, (4096, 10**9), (4, 1),
                        splits=(SplitGroup(0, 0, split_tensors, factors),), op_streams=streams)


def test_aligned_everywhere_counts_every_portion():
    assert aligned_everywhere(_problem((256, 128), (0,)), 64)
    assert not aligned_everywhere(_problem((256, 128), (0,)), 128)  # a quarter of 256 B is 64 B
    assert not aligned_everywhere(_problem((256, 96), (0,)), 64)  # an unsplit tensor of 96 B
    assert aligned_everywhere(_problem((256, 96), (0,)), 32)


@pytest.mark.parametrize("change, offered", [
    ({}, True),
    ({"streams": ()}, False),  # one stream: its plans keep their bytes
    ({"splits": False}, False),
    ({"transfers": True}, False),
    ({"reserve": 0}, False),  # nothing held back already
    ({"alignment": 128}, False),  # a portion would round up
])
def test_offered_only_on_several_streams_with_splits_and_aligned_buffers(change, offered):
    problem = _problem((256, 128), (0,), streams=change.get("streams", (0, 1)))
    if change.get("splits") is False:
        problem = LevelProblem((4, 4), ((0,), (1,)), ((), ()), (256, 128), (4096, 10**9), (4, 1),
                               op_streams=problem.op_streams)
    bridge = SimpleNamespace(problem=problem, reserve_bytes=change.get("reserve", 2048))
    assert offers_full_level(bridge, change.get("transfers", False), change.get("alignment", 64)) is offered
