"""Ordinary models that once stopped memory planning with an internal error (exit 3).

* An op that names one tensor twice (``mul`` with ``inputs: [x, x]``): the level solver
  counted the tensor once in the op's roofline, the ISA cost model and the simulator twice
  ("roofline bytes ... but its operand buffers hold ..."); and the graph listed the op twice
  among the tensor's consumers, so a transfer into it carried the tensor twice. Now every
  stage counts each distinct tensor once (docs/memory.md, "Roofline bytes").
* A small ResNet and a second model with a ``cycles:`` override on one device: the device is
  not memory-planned (explicit cycles), and retiming ordered its ops that start on one cycle
  by name, so ``fc`` waited in the stream's sequence behind the zero-cycle ``flatten`` it
  depends on ("retiming deadlocked").
"""

from __future__ import annotations

import pytest

from planner.graph.ir import Graph, Op, Tensor
from planner.isa import Opcode, get_profile, op_cost
from planner.verify.compare import compare_numeric
from planner.lower_and_replay import replay
from planner.pipeline import run
from planner.spec import load_spec


def _square_spec(devices: int) -> dict:
    """x -> mul(x, x) -> relu, on ``devices`` edge NPUs with a small SRAM (the relu pinned to
    the last device, so with two devices the square crosses a link into an op reading it twice)."""
    spec = {
        "version": 1, "name": "square",
        "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": devices, "memory": [
            {"name": "sram", "capacity": "16 KiB", "bandwidth": "128 GB/s"},
            {"name": "lpddr", "capacity": "1 GiB", "bandwidth": "17 GB/s"}]}]},
        "models": [{"name": "m", "graph": {
            "tensors": [{"name": "x", "shape": [8, 64], "dtype": "fp32", "kind": "input"},
                        {"name": "h", "shape": [8, 64], "dtype": "fp32"},
                        {"name": "s", "shape": [8, 64], "dtype": "fp32"},
                        {"name": "y", "shape": [8, 64], "dtype": "fp32", "kind": "output"}],
            "ops": [{"name": "pre", "type": "relu", "inputs": ["x"], "outputs": ["h"]},
                    {"name": "sq", "type": "mul", "inputs": ["h", "h"], "outputs": ["s"]},
                    {"name": "post", "type": "relu", "inputs": ["s"], "outputs": ["y"]}]}}],
        "memory": {"plan": True},
        "constraints": {"pins": [{"ops": "m/pre", "device": "npu0"},
                                 {"ops": "m/sq", "device": f"npu{devices - 1}"}]},
        "solver": {"time_limit": "5 s", "workers": 1, "seed": 0},
    }
    if devices > 1:
        spec["hardware"]["topology"] = {"kind": "all-to-all", "bandwidth": "8 GB/s", "latency": "1 us"}
    return spec


def _every_plan(spec, outcome):
    yield "kept", outcome.binaries, outcome.simulation
    memory = outcome.memory
    replayed = replay(memory.plan, spec, memory.memory)
    yield "memory plan", replayed.binaries, replayed.simulation
    if memory.greedy_plan is not None:
        replayed = replay(memory.greedy_plan, spec, memory.greedy_memory)
        yield "greedy", replayed.binaries, replayed.simulation


def test_the_cost_model_and_the_graph_count_a_tensor_read_twice_once():
    g = Graph([Tensor("x", (1024,), kind="input"), Tensor("h", (1024,)), Tensor("y", (1024,), kind="output")],
              [Op("pre", "relu", ("x",), ("h",)), Op("sq", "mul", ("h", "h"), ("y",))])
    cost = op_cost(g.ops["sq"], g, get_profile("edge-npu"))
    assert (cost.bytes_read, cost.bytes_written) == (4096, 4096)  # h once, not 8192
    # edge-npu: 1 GHz, lpddr 17 GB/s: ceil(8192 * 1e9 / 17e9) = 482 (per occurrence: 723)
    assert cost.memory_cycles == 482
    assert g.consumers("h") == ("sq",)
    assert g.edge_bytes("pre", "sq") == 4096


@pytest.mark.parametrize("devices", [1, 2])
def test_an_op_reading_one_tensor_twice_is_memory_planned_and_computes_the_reference(devices):
    spec = load_spec(_square_spec(devices))
    outcome = run(spec)  # raised InternalError ("roofline bytes ...") before
    memory = outcome.memory.memory.devices
    sq_device = f"npu{devices - 1}"
    assert sq_device in memory  # the squaring device really is memory-planned
    access = memory[sq_device].accesses["m/sq"]
    assert access.fast_bytes + access.slow_bytes == 2 * 8 * 64 * 4  # h once, s once
    for name, binaries, simulation in _every_plan(spec, outcome):
        assert simulation.valid, (name, simulation.violations)
        report = compare_numeric(binaries, spec.graph, seed=5)
        assert report.ok, (name, report.failures())
    if devices == 2:
        (transfer,) = [t for t in outcome.plan.transfers if t.dst_op.startswith("m/sq")]
        assert transfer.size_bytes == 8 * 64 * 4  # h crosses the link once
        sq = next(i for i in outcome.programs[sq_device].instructions if i.op.startswith("m/sq")
                  and i.opcode == Opcode.VECTOR)
        assert len(sq.reads) == 1  # one received copy of h, read by both operands


RESNET_AND_TASK = {
    "version": 1, "name": "resnet-and-cycles",
    "hardware": {"devices": [{"name": "npu", "profile": "edge-npu"}]},
    "models": [
        {"name": "r", "generator": {"kind": "resnet", "blocks": [1, 1], "width": 8, "image": 32, "classes": 10}},
        {"name": "t", "graph": {
            "tensors": [{"name": "a", "shape": [4, 16], "dtype": "fp32", "kind": "input"},
                        {"name": "b", "shape": [4, 16], "dtype": "fp32"},
                        {"name": "c", "shape": [4, 16], "dtype": "fp32", "kind": "output"}],
            "ops": [{"name": "t1", "type": "relu", "inputs": ["a"], "outputs": ["b"], "cycles": {"npu": 500}},
                    {"name": "t2", "type": "relu", "inputs": ["b"], "outputs": ["c"], "cycles": {"npu": 300}}]}}],
    "memory": {"plan": True},
    "solver": {"time_limit": "5 s", "workers": 1, "seed": 0},
}


def test_a_resnet_beside_a_model_with_explicit_cycles_is_retimed_and_replayed():
    spec = load_spec(RESNET_AND_TASK)
    outcome = run(spec)  # raised InternalError ("retiming deadlocked") before
    assert "npu0" in outcome.memory.skipped  # explicit cycles: not memory-planned, only retimed
    flatten, fc = (next(o for o in outcome.memory.plan.ops if o.name == n) for n in ("r/flatten", "r/fc"))
    assert flatten.duration_cycles == 0 and flatten.end_cycle <= fc.start_cycle
    for name, binaries, simulation in _every_plan(spec, outcome):
        assert simulation.valid, (name, simulation.violations)
        report = compare_numeric(binaries, spec.graph, seed=5)
        assert report.ok, (name, report.failures())
