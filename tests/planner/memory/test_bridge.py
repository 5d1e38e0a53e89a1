"""The bridge from a schedule to level problems, and the list schedule that re-times plans."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from planner.errors import InternalError
from planner.graph.ir import Graph, Op, Tensor
from planner.isa.cost import DATA_MOVEMENT_OPS, op_cost
from planner.memory.bridge import build_device_problem, device_order, portion_graph, row_separable, skip_reason
from planner.spec.memory_options import MemoryOptions
from planner.memory.retime import Activity, list_schedule
from planner.pipeline import run
from planner.spec import load_spec


def spine_plan(spec):
    """The spine's plan (everything in main memory), before memory planning."""
    return run(dataclasses.replace(spec, memory=MemoryOptions()), time_limit_s=5, workers=1).plan


@pytest.fixture(scope="module")
def mlp():
    spec = load_spec("specs/memory-mlp.yaml")
    return spec, spine_plan(spec)


def test_level_problem_roofline_equals_the_isa_for_every_op(mlp):
    # With every access slow, the level solver's op time must be the ISA's cycles exactly:
    # max(compute, ceil(bytes * 700e6 / 34e9)) on tpu-v1 (e.g. a 1536x1536 fp32 layer:
    # 9437184 + 2*98304 bytes -> ceil(9633792 * 0.7 / 34) = 198343 > compute).
    spec, plan = mlp
    dev = spec.hardware.devices[0]
    bridge = build_device_problem(spec.graph, spec.hardware, plan, dev, spec.memory)
    p = bridge.problem
    assert p.bandwidth_bytes_per_cycle == (Fraction(7168, 7), Fraction(340, 7))  # 716.8e9/0.7e9, 34e9/0.7e9
    for i, name in enumerate(bridge.ops):
        op = spec.graph.ops[name]
        if op.type in DATA_MOVEMENT_OPS:
            continue
        slow = sum(p.tensor_bytes[t] for t in {*p.reads[i], *p.writes[i]})
        assert p.op_cycles(i, 0, slow) == op_cost(op, spec.graph, dev.profile, dev.kind).cycles, name
    fc0 = bridge.ops.index("mlp/fc0")
    assert p.op_cycles(fc0, 0, 9437184 + 2 * 98304) == 198343


def test_weights_start_slow_and_outputs_are_live_out(mlp):
    spec, plan = mlp
    bridge = build_device_problem(spec.graph, spec.hardware, plan, spec.hardware.devices[0], spec.memory)
    roles = {lt.name: lt.role for lt in bridge.tensors}
    assert roles["mlp/fc0/w"] == "weight" and roles["mlp/x"] == "input" and roles["mlp/y"] == "activation"
    live = {bridge.tensors[t].name for t in bridge.problem.live_out}
    assert live == {"mlp/y"}
    assert bridge.problem.accesses(bridge.tensors.index(next(t for t in bridge.tensors if t.name == "mlp/fc0/w")))[0] == -1


def _chain(rows: int = 8):
    return Graph([Tensor("x", (rows, 4), kind="input"), Tensor("w", (4, 4), kind="weight"),
                  Tensor("h", (rows, 4)), Tensor("s", (rows, 4)), Tensor("wt", (4, rows), kind="weight"),
                  Tensor("y", (rows, 4), kind="output"), Tensor("t", (4, 4)), Tensor("z", (4, 4), kind="output")],
                 [Op("fc", "matmul", ("x", "w"), ("h",)), Op("sm0", "softmax", ("h",), ("s",), attrs={"axis": 0}),
                  Op("r", "relu", ("h",), ("y",)), Op("mix", "matmul", ("wt", "h"), ("t",)),
                  Op("sm", "softmax", ("t",), ("z",))])


def test_row_separable_ops():
    g = _chain()
    assert row_separable(g, "fc") and row_separable(g, "r") and row_separable(g, "sm")
    assert not row_separable(g, "sm0")  # softmax over dim 0 mixes rows
    assert not row_separable(g, "mix")  # weights on the left: every output row reads every input row


def test_portion_graph_cuts_dim0():
    g = portion_graph(_chain(), {"x", "h"}, 4)
    assert g.tensors["x"].shape == (2, 4) and g.tensors["h"].shape == (2, 4) and g.tensors["y"].shape == (8, 4)


def test_device_order_puts_a_zero_cycle_producer_first():
    from planner.plan import PlacedOp, Plan

    g = Graph([Tensor("x", (4,), kind="input"), Tensor("v", (4,)), Tensor("y", (4,), kind="output")],
              [Op("zz_view", "reshape", ("x",), ("v",)), Op("aa_use", "relu", ("v",), ("y",))])
    plan = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9,
                (PlacedOp("aa_use", "d", 0, 0, 5), PlacedOp("zz_view", "d", 0, 0, 0)), ())
    assert device_order(plan, "d", g) == ("zz_view", "aa_use")


def test_skip_reasons():
    from planner.hardware import Device
    from planner.isa.profiles import get_profile

    g = Graph([Tensor("x", (4,), kind="input")], [Op("t", "task", ("x",), (), cycles={"tpu": 5})])
    tpu = Device("t0", "tpu", get_profile("tpu-v4"))
    on = MemoryOptions(enabled=True)
    assert "explicit cycles" in skip_reason(tpu, ("t",), g, on)
    assert "main memory hbm" in skip_reason(tpu, ("t",), g, MemoryOptions(enabled=True, fast={"tpu": "hbm"}))
    assert skip_reason(tpu, (), g, on) == "it runs no ops"


def test_cnn_offers_a_batch_split_with_isa_portion_costs():
    spec = load_spec("specs/memory-cnn.yaml")
    plan = spine_plan(spec)
    dev = spec.hardware.devices[0]
    bridge = build_device_problem(spec.graph, spec.hardware, plan, dev, spec.memory)
    (group,) = bridge.problem.splits
    assert group.factors == (1, 2, 4)  # batch 4: every factor divides dim 0
    stem = bridge.ops.index("cnn/stem")
    col = stem - group.first_op
    # The portion's cost is the ISA's on a quarter batch, not a quarter of the whole:
    quarter = portion_graph(spec.graph, {bridge.tensors[t].tensor for t in group.tensors}, 4)
    want = op_cost(quarter.ops["cnn/stem"], quarter, dev.profile, dev.kind).compute_cycles
    assert group.portion_compute[2][col] == want
    assert group.portion_compute[0][col] == op_cost(spec.graph.ops["cnn/stem"], spec.graph, dev.profile,
                                                    dev.kind).compute_cycles


def test_list_schedule_dispatches_ready_work_by_priority():
    # cpu runs a (3) then c; dma0 has two DMAs: d1 (priority 0) waits for a, d2 (priority 1) is
    # ready at once, so d2 runs first (0..4) and d1 after it and a: max(3, 4) = 4..6; c waits d1.
    acts = [Activity("a", "cpu", 3), Activity("c", "cpu", 1, deps=("d1",)),
            Activity("d1", "dma0", 2, deps=("a",), priority=0), Activity("d2", "dma0", 4, priority=1)]
    start = list_schedule(acts, {"cpu": ("a", "c")})
    assert start == {"a": 0, "d2": 0, "d1": 4, "c": 6}


def test_list_schedule_reports_a_deadlock():
    acts = [Activity("a", "cpu", 1, deps=("b",)), Activity("b", "cpu", 1)]
    with pytest.raises(InternalError, match="deadlocked"):
        list_schedule(acts, {"cpu": ("a", "b")})
