"""Random small graphs of real ops through memory planning: plan, lower, replay, numbers.

Every example must be re-timed, lowered and replayed without a violation (``run`` raises
otherwise), compute the same numbers as a numpy evaluation of the graph (every replayed plan:
the one kept, the memory plan and the greedy baseline), and be no slower than everything in
main memory. The graphs mix ops that read one tensor twice (``mul(x, x)``), zero-cycle
reshapes, op names whose order is not the graph's, and sometimes a second model whose ops
have explicit cycles (a device running one is not memory-planned, only re-timed).
``MEMORY_PROPERTY_EXAMPLES=500`` runs more examples.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.verify.compare import compare_numeric
from planner.lower_and_replay import replay
from planner.pipeline import run
from planner.spec import load_spec


@st.composite
def memory_specs(draw):
    rows = draw(st.sampled_from([4, 8]))
    width = draw(st.sampled_from([16, 32, 64]))
    n = draw(st.integers(2, 7))
    tensors = [{"name": "x", "shape": [rows, width], "dtype": "fp32", "kind": "input"}]
    ops = []
    acts = ["x"]
    # Names out of the graph's order: an order by name is not a dependency order.
    names = draw(st.permutations([f"{c}{i}" for i, c in enumerate("zyxwvutsrq"[:n])]))
    for i in range(n):
        kind = draw(st.sampled_from(["matmul", "relu", "add", "mul", "softmax", "layernorm", "gelu", "reshape"]))
        src = draw(st.sampled_from(acts))
        inputs = [src]
        op = {}
        if kind == "matmul":
            tensors.append({"name": f"w{i}", "shape": [width, width], "dtype": "fp32", "kind": "weight"})
            inputs.append(f"w{i}")
        elif kind in ("add", "mul"):
            inputs.append(draw(st.sampled_from(acts)))  # maybe the same tensor twice: x * x
        elif kind == "layernorm":
            tensors += [{"name": f"g{i}", "shape": [width], "dtype": "fp32", "kind": "weight"},
                        {"name": f"b{i}", "shape": [width], "dtype": "fp32", "kind": "weight"}]
            inputs += [f"g{i}", f"b{i}"]
        elif kind == "reshape":  # zero cycles
            op["attrs"] = {"shape": [rows, width]}
        out = f"t{i}"
        tensors.append({"name": out, "shape": [rows, width], "dtype": "fp32",
                        "kind": "output" if i == n - 1 else "activation"})
        op.update({"name": names[i], "type": kind, "inputs": inputs, "outputs": [out]})
        if kind == "softmax":
            op["attrs"] = {"axis": -1}
        ops.append(op)
        acts.append(out)
    devices = draw(st.integers(1, 2))
    sram = draw(st.sampled_from(["12 KiB", "40 KiB", "160 KiB"]))
    models = [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}]
    if draw(st.booleans()):
        models.append(_explicit_cycles_model(draw, rows, width))
    spec = {
        "version": 1, "name": "random-memory",
        "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": devices, "memory": [
            {"name": "sram", "capacity": sram, "bandwidth": "128 GB/s"},
            {"name": "lpddr", "capacity": "1 GiB", "bandwidth": draw(st.sampled_from(["4 GB/s", "17 GB/s"]))}]}]},
        "models": models,
        "objective": "latency",
        "memory": {"plan": True, "split": draw(st.booleans()), "split_factors": [1, 2, 4]},
        "solver": {"time_limit": "2 s", "workers": 1, "seed": 0},
    }
    if devices > 1:
        spec["hardware"]["topology"] = {"kind": "all-to-all", "bandwidth": "8 GB/s", "latency": "1 us"}
    return spec


def _explicit_cycles_model(draw, rows: int, width: int) -> dict:
    """A second model: a chain of ops with ``cycles:`` overrides (0 included) and a reshape."""
    tensors = [{"name": "a", "shape": [rows, width], "dtype": "fp32", "kind": "input"}]
    ops = []
    k = draw(st.integers(1, 3))
    for i in range(k):
        kind = draw(st.sampled_from(["relu", "reshape", "add"]))
        src = tensors[-1]["name"]
        op = {"name": f"e{k - i}", "type": kind, "inputs": [src, src] if kind == "add" else [src],
              "outputs": [f"e{i}_out"]}
        if kind == "reshape":
            op["attrs"] = {"shape": [rows, width]}
        else:
            op["cycles"] = {"npu": draw(st.sampled_from([0, 50, 500]))}
        ops.append(op)
        tensors.append({"name": f"e{i}_out", "shape": [rows, width], "dtype": "fp32",
                        "kind": "output" if i == k - 1 else "activation"})
    return {"name": "e", "graph": {"tensors": tensors, "ops": ops}}


@settings(max_examples=int(os.environ.get("MEMORY_PROPERTY_EXAMPLES", 12)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(memory_specs())
def test_random_memory_plans_replay_and_compute_the_same_numbers(spec):
    outcome = run(spec)  # raises InternalError if the replay disagrees with the plan
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    assert outcome.plan.makespan_cycles <= outcome.memory_baselines["all in main memory"]
    assert outcome.plan.bound <= outcome.plan.makespan_cycles
    assert_every_plan_computes_the_reference(outcome, spec)


def assert_every_plan_computes_the_reference(outcome, spec) -> None:
    """The kept plan's binaries, and the memory plan's and the greedy baseline's re-lowered, give
    the reference's numbers."""
    loaded = load_spec(spec)
    replayed = [("kept", outcome.binaries)]
    if outcome.memory is not None:
        replayed.append(("memory plan", replay(outcome.memory.plan, loaded, outcome.memory.memory).binaries))
        if outcome.memory.greedy_plan is not None:
            replayed.append(("greedy", replay(outcome.memory.greedy_plan, loaded, outcome.memory.greedy_memory).binaries))
    for name, binaries in replayed:
        report = compare_numeric(binaries, loaded.graph, seed=2)
        assert report.ok, (name, report.failures())
