"""The cross-device bound with link serialisation (issue 14): a link runs its transfers one at a
time, so a fan-out of several transfers on one link is bounded by a one-machine relaxation with
heads and tails. Sound against the brute-force optimum over every per-device combination
(:mod:`tests.planner.memory.test_cross_device_deadlines`' oracle), and hand-checked."""

from __future__ import annotations

import copy
import itertools
import random

import pytest

import planner.memory.cross_device as cross_device
from planner.memory.cross_device import memory_plan_bound
from planner.pipeline import run
from planner.spec import load_spec
from solvers.memory.levels.heads_tails import one_machine_lower_bound
from tests.planner.memory.test_cross_device_deadlines import _brute_force_optimum


def _fan_out(seed: int) -> dict:
    """o0 on npu0 feeds o1 and o2 on npu1 (two transfers on the one link); with odd seeds o1's
    result goes back to o3 on npu0 (a third transfer, the other way)."""
    rng = random.Random(seed)
    back = seed % 2 == 1
    tensors = [{"name": "x", "shape": [4, 16], "dtype": "fp32", "kind": "input"},
               {"name": "t0", "shape": [4, 16], "dtype": "fp32", "kind": "activation"},
               {"name": "t1", "shape": [4, 16], "dtype": "fp32", "kind": "activation" if back else "output"},
               {"name": "t2", "shape": [4, 16], "dtype": "fp32", "kind": "output"}]
    ops = [{"name": "o0", "type": rng.choice(["relu", "gelu"]), "inputs": ["x"], "outputs": ["t0"]}]
    for i in (1, 2):
        kind = rng.choice(["relu", "gelu", "mul"])
        ops.append({"name": f"o{i}", "type": kind, "inputs": ["t0", "t0"] if kind == "mul" else ["t0"],
                    "outputs": [f"t{i}"]})
    if back:
        tensors.append({"name": "y", "shape": [4, 16], "dtype": "fp32", "kind": "output"})
        ops.append({"name": "o3", "type": "relu", "inputs": ["t1"], "outputs": ["y"]})
    return {"version": 1, "name": f"fan-{seed}",
            "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": 2, "memory": [
                {"name": "sram", "capacity": rng.choice(["512 B", "1 KiB"]), "bandwidth": "128 GB/s"},
                {"name": "lpddr", "capacity": "1 GiB", "bandwidth": "17 GB/s"}]}],
                "topology": {"kind": "all-to-all", "bandwidth": rng.choice(["1 GB/s", "8 GB/s"]),
                             "latency": "1 us"}},
            "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
            "objective": "latency",
            "constraints": {"pins": [{"ops": ["m/o0"] + (["m/o3"] if back else []), "device": "npu0"},
                                     {"ops": ["m/o1", "m/o2"], "device": "npu1"}]},
            "memory": {"plan": True, "split": False},
            "solver": {"time_limit": "2 s", "workers": 1, "seed": 0}}


def test_one_machine_bound_hand_checked():
    # Three jobs released at 0, 2 cycles each, tails 5, 3, 0: Jackson runs them by tail, the first
    # ends at 2 (+5 = 7), the second at 4 (+3 = 7), the third at 6: 7. A late job alone: 10 + 1 + 4.
    assert one_machine_lower_bound([(0, 2, 5), (0, 2, 3), (0, 2, 0)]) == 7
    assert one_machine_lower_bound([(0, 2, 0), (10, 1, 4)]) == 15
    # Preemption: a long job with no tail is interrupted by a released one with a long tail.
    assert one_machine_lower_bound([(0, 10, 0), (1, 1, 20)]) == 22
    # Every order of a small instance is no better than the bound (brute force over orders).
    rng = random.Random(3)
    for _ in range(30):
        jobs = [(rng.randint(0, 9), rng.randint(0, 6), rng.randint(0, 9)) for _ in range(rng.randint(1, 5))]
        best = None
        for order in itertools.permutations(jobs):
            now, worst = 0, 0
            for h, p, q in order:
                now = max(now, h) + p
                worst = max(worst, now + q)
            best = worst if best is None else min(best, worst)
        assert one_machine_lower_bound(jobs) <= best


@pytest.mark.parametrize("seed", range(3))
def test_the_link_bound_never_exceeds_the_brute_force_optimum_on_fan_outs(choices, seed, monkeypatch):
    spec = load_spec(copy.deepcopy(_fan_out(seed)))
    outcome = run(spec)
    (args, chosen), = choices
    spine, graph, hardware, candidates, alignment = args[:5]
    optimum = _brute_force_optimum(spine, graph, hardware, candidates, alignment)
    bound = memory_plan_bound(spine, graph, hardware, {d: c["memory plan"].bridge for d, c in candidates.items()})
    assert bound == chosen.bound_cycles
    assert optimum is not None and max(bound, outcome.plan.bound or 0) <= optimum <= outcome.plan.makespan_cycles
    # The link adds: two transfers of t0 after o0, one after the other, above the longest path.
    monkeypatch.setattr(cross_device, "link_serial_bound", lambda *args: 0)
    assert memory_plan_bound(spine, graph, hardware, {d: c["memory plan"].bridge for d, c in candidates.items()}
                             ) < bound


def test_an_op_that_receives_over_a_link_runs_whole_when_its_neighbours_split():
    # Regression (exit 3 at 20cb53a): o1 on npu1 receives t0 and sends t1; with 8 KiB tensors over
    # an 8 KiB sram (no room for an op's bytes) its run was a split group, and a plan that split it
    # named transfers to an op lowering did not place ("unknown destination op 'm/o1'"). An op
    # with a link transfer now runs whole; o3 on npu0, which exchanges nothing, still splits.
    memory = [{"name": "sram", "capacity": "8 KiB", "bandwidth": "64 GB/s"},
              {"name": "dram", "capacity": "4 MiB", "bandwidth": "16 GB/s"}]
    tensors = [{"name": "x", "shape": [32, 64], "kind": "input"}] + [
        {"name": f"t{i}", "shape": [32, 64], "kind": "output" if i == 3 else "activation"} for i in range(4)]
    ops = [{"name": f"o{i}", "type": "relu", "inputs": ["x" if i == 0 else f"t{i - 1}"], "outputs": [f"t{i}"]}
           for i in range(4)]
    spec = {"version": 1, "name": "split-linked",
            "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": 2, "memory": memory,
                                      "main": "dram"}],
                         "topology": {"kind": "all-to-all", "bandwidth": "4 GB/s", "latency": "1 us"}},
            "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
            "objective": "latency",
            "constraints": {"pins": [{"ops": ["m/o0", "m/o2", "m/o3"], "device": "npu0"},
                                     {"ops": ["m/o1"], "device": "npu1"}]},
            "memory": {"plan": True, "split": True, "split_factors": [1, 2]},
            "solver": {"time_limit": "2 s", "workers": 1, "seed": 0}}
    outcome = run(spec)  # raises if lowering or the replay disagrees
    names = {o.name for o in outcome.plan.ops}
    assert {"m/o1", "m/o2", "m/o3#0", "m/o3#1"} <= names
