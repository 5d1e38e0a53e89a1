"""Resources determined before solving: per op, per device, per model."""

from __future__ import annotations

from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware
from planner.isa import determine_resources, get_profile


def test_resources_per_op_device_and_model():
    # m1: fc = x[4, 8] x w[8, 2] fp32 (64 MACs) then a task that only kind "g" can run.
    # m2: a relu over 16 fp32 reading the graph input x2.
    tensors = [Tensor("x", (4, 8), kind="input"), Tensor("w", (8, 2), kind="weight"), Tensor("y", (4, 2)),
               Tensor("x2", (16,), kind="input"), Tensor("z", (16,), kind="output")]
    ops = [Op("m1/fc", "matmul", ("x", "w"), ("y",), model="m1"),
           Op("m1/post", "task", ("y",), (), cycles={"g": 5}, model="m1"),
           Op("m2/act", "relu", ("x2",), ("z",), model="m2")]
    g = Graph(tensors, ops)
    hw = Hardware((Device("g0", "g", get_profile("generic")), Device("t0", "tpu", get_profile("tpu-v1"))), ())
    r = determine_resources(g, hw, {"m1/fc": "g0", "m1/post": "g0", "m2/act": "t0"})
    fc = r.ops["m1/fc"]
    assert (fc.macs, fc.flops, fc.weight_bytes, fc.input_bytes) == (64, 128, 64, 128)
    # generic 1x1 array: (2 + 1 + 4 - 2) * 8 * 2 = 80 cycles (memory: 224 B -> 1).
    # tpu-v1: compute 2*256 + 256 + 4 - 2 = 770; memory ceil(224 * 7e8 / 34e9) = 5 -> 770
    # device cycles = ceil(770 / 0.7) = 1100 reference cycles.
    assert fc.device_cycles == {"g": 80, "tpu": 770}
    assert fc.timeline_cycles == {"g": 80, "tpu": 1100}
    assert r.ops["m1/post"].device_cycles == {"g": 5}  # a task without cycles for tpu can't run there
    assert r.devices["g0"].busy_cycles == 85 and r.devices["g0"].weight_bytes == {"mem": 64}
    assert r.devices["t0"].weight_bytes == {"onchip": 0, "ddr3": 0}
    assert (r.devices["t0"].input_bytes, r.devices["t0"].output_bytes) == (64, 64)
    assert r.models["m1"].macs == 64 and r.models["m1"].weight_bytes == 64
    assert r.models["m1"].timeline_cycles == {"g": 85}  # post cannot run on tpu
    # m2 relu over 16 fp32: generic 16 cycles; tpu-v1 compute 1, memory ceil(128*0.7/34) = 3 -> ceil(3/0.7) = 5.
    assert r.models["m2"].timeline_cycles == {"g": 16, "tpu": 5}
    assert (r.models["m2"].input_bytes, r.models["m2"].output_bytes, r.models["m2"].flops) == (64, 64, 16)
    d = r.to_dict()
    assert d["ops"]["m1/fc"]["units"] == {"g": "matrix", "tpu": "matrix"} and set(d) == {"ops", "devices", "models"}


def test_resources_without_placement_have_no_devices():
    g = Graph([Tensor("t", (4,))], [Op("a", "task", (), ("t",), cycles={"g": 3})])
    hw = Hardware((Device("g0", "g", get_profile("generic")),), ())
    r = determine_resources(g, hw)
    assert r.devices == {} and r.models[""].ops == 1


def test_per_op_resources_are_kept_per_graph_and_equal_a_fresh_computation():
    # determine_resources keeps each graph's per-op records (the solve stage and allocation.json
    # both ask): the same values as computing them afresh, in a dict of the caller's own
    from planner.graph import generate
    from planner.isa.resources import _compute_op_resources

    tensors, ops = generate("transformer", {"layers": 2, "d_model": 64, "heads": 2, "seq": 8}, "m")
    g = Graph(tensors, ops)
    hw = Hardware((Device("a0", "a", get_profile("tpu-v4")), Device("b0", "b", get_profile("edge-npu"))), ())
    first, second = determine_resources(g, hw), determine_resources(g, hw, {n: "a0" for n in g.ops})
    assert first.ops == second.ops == _compute_op_resources(g, hw)
    assert first.ops is not second.ops
    first.ops.clear()
    assert determine_resources(g, hw).ops == second.ops
    other = Hardware((Device("a0", "a", get_profile("generic")),), ())
    assert determine_resources(g, other).ops == _compute_op_resources(g, other) != second.ops
