"""Random small graphs of real ops through memory planning: plan, lower, replay, numbers.

Every example must be re-timed, lowered and replayed without a violation (``run`` raises
otherwise), compute the same numbers as a numpy evaluation of the graph, and be no slower
than everything in main memory.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.numeric.compare import compare_numeric
from planner.pipeline import run


@st.composite
def memory_specs(draw):
    rows = draw(st.sampled_from([4, 8]))
    width = draw(st.sampled_from([16, 32, 64]))
    n = draw(st.integers(2, 7))
    tensors = [{"name": "x", "shape": [rows, width], "dtype": "fp32", "kind": "input"}]
    ops = []
    acts = ["x"]
    for i in range(n):
        kind = draw(st.sampled_from(["matmul", "relu", "add", "softmax", "layernorm", "gelu"]))
        src = draw(st.sampled_from(acts))
        inputs = [src]
        if kind == "matmul":
            tensors.append({"name": f"w{i}", "shape": [width, width], "dtype": "fp32", "kind": "weight"})
            inputs.append(f"w{i}")
        elif kind == "add":
            inputs.append(draw(st.sampled_from(acts)))
            if inputs[0] == inputs[1]:
                kind = "relu"
                inputs = inputs[:1]
        elif kind == "layernorm":
            tensors += [{"name": f"g{i}", "shape": [width], "dtype": "fp32", "kind": "weight"},
                        {"name": f"b{i}", "shape": [width], "dtype": "fp32", "kind": "weight"}]
            inputs += [f"g{i}", f"b{i}"]
        out = f"t{i}"
        tensors.append({"name": out, "shape": [rows, width], "dtype": "fp32",
                        "kind": "output" if i == n - 1 else "activation"})
        op = {"name": f"o{i}", "type": kind, "inputs": inputs, "outputs": [out]}
        if kind == "softmax":
            op["attrs"] = {"axis": -1}
        ops.append(op)
        acts.append(out)
    devices = draw(st.integers(1, 2))
    sram = draw(st.sampled_from(["12 KiB", "40 KiB", "160 KiB"]))
    spec = {
        "version": 1, "name": "random-memory",
        "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": devices, "memory": [
            {"name": "sram", "capacity": sram, "bandwidth": "128 GB/s"},
            {"name": "lpddr", "capacity": "1 GiB", "bandwidth": draw(st.sampled_from(["4 GB/s", "17 GB/s"]))}]}]},
        "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
        "objective": "latency",
        "memory": {"plan": True, "split": draw(st.booleans()), "split_factors": [1, 2, 4]},
        "solver": {"time_limit": "2 s", "workers": 1, "seed": 0},
    }
    if devices > 1:
        spec["hardware"]["topology"] = {"kind": "all-to-all", "bandwidth": "8 GB/s", "latency": "1 us"}
    return spec


@settings(max_examples=int(__import__("os").environ.get("MEMORY_PROPERTY_EXAMPLES", 12)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory_specs())
def test_random_memory_plans_replay_and_compute_the_same_numbers(spec):
    outcome = run(spec)  # raises InternalError if the replay disagrees with the plan
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    assert outcome.plan.makespan_cycles <= outcome.memory_baselines["all in main memory"]
    assert outcome.plan.bound <= outcome.plan.makespan_cycles
    from planner.spec import load_spec

    report = compare_numeric(outcome.binaries, load_spec(spec).graph, seed=2)
    assert report.ok, report.failures()
