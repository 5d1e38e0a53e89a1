"""Round trips in the N-level re-solve under sharing (issue 14): a transfer back into a linked
N-level device that waits, through the other devices, for a transfer out of it starts no
earlier than its head (its earliest start with the device's sends at cycle 0) and at least its
lag after that send starts (:func:`planner.memory.cross_device.round_trips`, now also read for
N-level plans by ``_n_level_holds``). Hand-checked on
tests/data/specs/memdevices/four-level-round-trip.yaml (numbers in its header); the head and lag
are checked against every N-level plan of a small linked three-level device, each re-timed with
the whole plan (they must hold in every re-timing with the other devices fixed)."""

from __future__ import annotations

import copy

import pytest

from planner.errors import InfeasibleError, UnsupportedError
from planner.memory.cross_device import round_trips
from planner.memory.mixed_assemble import N_LEVELS, HierarchyLevels, assemble_mixed
from planner.memory.retime import RetimingDeadlock
from planner.memory.shared_bandwidth import transfer_key
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from tests.planner.memory.test_n_level_linked_brute import n_level_plans

SPEC = "tests/data/specs/memdevices/four-level-round-trip.yaml"


def test_the_receive_moves_with_the_send_hand_checked(choices):
    spec = load_spec(SPEC)
    outcome = run(spec)
    assert outcome.memory_baselines["all in main memory"] == 4096 + 3048 + 4096 + 3048 + 6144 == 20432
    assert outcome.plan.makespan_cycles == 4096 + 3048 + 3856 + 3048 + 5120 == 19168
    npu = outcome.memory.cross_device["npu0"]
    assert npu.plan == f"{N_LEVELS} heads/tails" and npu.resolved_cycles == npu.resolved_bound_cycles == 19168
    ops = {o.name: (o.start_cycle, o.duration_cycles) for o in outcome.plan.ops}
    assert ops == {"a/w3": (0, 4096), "a/z0": (7144, 3072), "a/y1": (7144, 3856), "a/x2": (14048, 5120)}
    assert sorted((t.start_cycle, t.duration_cycles) for t in outcome.plan.transfers) == [(4096, 3048), (11000, 3048)]
    assert outcome.simulation.valid and outcome.simulation.makespan_cycles == 19168
    assert compare_numeric(outcome.binaries, spec.graph, seed=0).ok
    (args, chosen), = choices
    spine, graph, hardware, candidates = args[:4]
    kept = chosen.levels["npu0"]
    assert isinstance(kept, HierarchyLevels) and kept.link_order  # offered with its order, transfers in it
    send, back = (transfer_key(t) for t in sorted(spine.transfers, key=lambda t: t.start_cycle))
    # with edge0 in main memory: the transfer back starts 3,048 + 3,856 after the send at the
    # earliest, and no earlier than that with the send at cycle 0
    assert round_trips(spine, graph, hardware, {}, kept) == {back: (6904, {send: 6904})}


def _round_trip_spec(seed: int) -> dict:
    """o0 (npu0) -> o1 (edge0) -> o2 (npu0), npu0 over three levels, sharing on: t0 goes out and
    t1 comes back (a round trip)."""
    rows = (16, 32)[seed % 2]
    kinds = ("relu", "gelu")
    tensors = [{"name": "x", "shape": [rows, 64], "kind": "input"}] + [
        {"name": f"t{i}", "shape": [rows, 64], "kind": "output" if i == 2 else "activation"} for i in range(3)]
    ops = [{"name": f"o{i}", "type": kinds[(seed + i) % 2], "inputs": ["x" if i == 0 else f"t{i - 1}"],
            "outputs": [f"t{i}"]} for i in range(3)]
    return {"version": 1, "name": f"n-level-round-trip-{seed}",
            "hardware": {"devices": [
                {"name": "npu", "profile": "edge-npu", "memory": [
                    {"name": "sram", "capacity": "8 KiB", "bandwidth": "64 GB/s"},
                    {"name": "l2", "capacity": "24 KiB", "bandwidth": "32 GB/s"},
                    {"name": "dram", "capacity": "1 MiB", "bandwidth": "16 GB/s"}], "main": "dram",
                 "dma_paths": [["sram", "l2"], ["l2", "dram"], ["sram", "dram"]]},
                {"name": "edge", "profile": "edge-npu"}],
                "topology": {"kind": "all-to-all", "bandwidth": ("16 GB/s", "8 GB/s")[seed % 2], "latency": "1 us"}},
            "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
            "objective": "latency",
            "constraints": {"pins": [{"ops": ["m/o0", "m/o2"], "device": "npu0"},
                                     {"ops": ["m/o1"], "device": "edge0"}]},
            "memory": {"plan": True, "fast": {"npu": "sram", "edge": "sram"}, "split": False,
                       "bandwidth": "shared"},
            "solver": {"time_limit": "2 s", "workers": 1, "seed": 0}}


@pytest.mark.parametrize("seed", range(2))
def test_round_trip_heads_and_lags_hold_in_every_n_level_plan(choices, seed):
    run(load_spec(copy.deepcopy(_round_trip_spec(seed))))
    (args, _), = choices
    spine, graph, hardware, candidates, alignment = args[:5]
    hb = candidates["npu0"][N_LEVELS].bridge
    plans = n_level_plans(hb.problem)
    assert len(plans) > 20
    for others in ({}, {"edge0": candidates["edge0"]["memory plan"]}):
        trips = round_trips(spine, graph, hardware, others, HierarchyLevels(hb, plans[0]))
        (back, (head, lags)), = trips.items()
        (send, lag), = lags.items()
        gaps = []
        for s in plans:
            try:
                plan, _ = assemble_mixed(spine, graph, hardware, {**others, "npu0": HierarchyLevels(hb, s)},
                                         alignment, shared_bandwidth=True)
            except (InfeasibleError, UnsupportedError, RetimingDeadlock):
                continue
            start = {transfer_key(t): t.start_cycle for t in plan.transfers}
            assert start[back] >= head
            gaps.append(start[back] - start[send])
        assert gaps and min(gaps) >= lag  # sound: never later than any re-timing allows
        assert min(gaps) == lag  # and tight: some plan sends and gets the answer back that fast
