"""The per-graph op_cost table (planner.isa.cost.cached_op_cost): the same costs as op_cost, once.

Lowering, the resources report and the spec's cycles table read their costs through it; these
tests hold it to the uncached :func:`planner.isa.op_cost` on random generated graphs, every
profile and kind, and check what it must not keep (a stand-in op of another graph, an error).
"""

from __future__ import annotations

import random

import pytest

from planner.errors import UnsupportedError
from planner.graph import Graph, generate
from planner.graph.ir import Op, Tensor
from planner.hardware import Device, Hardware
from planner.isa import PROFILES, cached_op_cost, op_cost
from planner.isa.cost import cycles_table


def random_graph(seed: int) -> Graph:
    """A generated model of random size and dtype (transformer, MLP or ResNet)."""
    rng = random.Random(seed)
    family = rng.choice(["transformer", "mlp", "resnet"])
    dtype = rng.choice(["fp16", "fp32", "int8"])
    if family == "transformer":
        params = {"layers": rng.randint(1, 2), "heads": rng.choice([1, 2, 4]), "d_model": rng.choice([32, 64, 96]),
                  "seq": rng.choice([8, 16, 33]), "batch": rng.randint(1, 3), "dtype": dtype}
    elif family == "mlp":
        params = {"layers": rng.randint(1, 4), "width": rng.choice([17, 64, 300]), "batch": rng.randint(1, 8),
                  "dtype": dtype}
    else:
        params = {"blocks": [1, 1], "width": rng.choice([8, 16]), "image": rng.choice([16, 32]),
                  "classes": 10, "dtype": dtype}
    tensors, ops = generate(family, params, f"m{seed}")
    return Graph(tensors, ops)


@pytest.mark.parametrize("seed", range(6))
def test_cached_costs_equal_recomputed_ones_on_random_graphs(seed):
    graph = random_graph(seed)
    for profile in PROFILES.values():
        for kind in (None, "npu"):
            for name in graph.topological_order():
                op = graph.ops[name]
                first = cached_op_cost(op, graph, profile, kind)
                assert first == op_cost(op, graph, profile, kind)
                assert cached_op_cost(op, graph, profile, kind) is first  # costed once


@pytest.mark.parametrize("seed", range(3))
def test_cycles_table_equals_the_uncached_costs(seed):
    graph = random_graph(seed)
    devices = (Device("a0", "a", PROFILES["tpu-v4"]), Device("e0", "e", PROFILES["edge-npu"]),
               Device("e1", "e", PROFILES["edge-npu"]))
    hw = Hardware(devices, ())
    expected = {(name, d.kind): hw.to_timeline_cycles(op_cost(graph.ops[name], graph, d.profile, d.kind).cycles, d)
                for name in graph.topological_order() for d in devices[:2]}
    assert cycles_table(graph, hw) == expected
    assert cycles_table(graph, hw) == expected  # from the table the first call filled


def test_an_op_that_is_not_the_graphs_own_is_costed_afresh():
    # Same name, another op: a stand-in (as lowering's portions build) must not get the graph op's cost.
    graph = Graph([Tensor("x", (1024,), kind="input"), Tensor("y", (1024,), kind="output")],
                  [Op("r", "relu", ("x",), ("y",))])
    stand_in = Op("r", "gelu", ("x",), ("y",))
    profile = PROFILES["generic"]
    whole = cached_op_cost(graph.ops["r"], graph, profile)
    other = cached_op_cost(stand_in, graph, profile)
    assert other == op_cost(stand_in, graph, profile) and other.cycles == 4 * whole.cycles == 4 * 1024
    assert cached_op_cost(graph.ops["r"], graph, profile) is whole


def test_an_op_that_cannot_be_costed_raises_every_time():
    graph = Graph([], [Op("t", "task", cycles={"npu": 7})])
    profile = PROFILES["tpu-v1"]
    assert cached_op_cost(graph.ops["t"], graph, profile, "npu").cycles == 7
    for _ in range(2):
        with pytest.raises(UnsupportedError, match="gives no cycles for device kind 'cpu'"):
            cached_op_cost(graph.ops["t"], graph, profile, "cpu")
