"""The max-load objective through planner.pipeline.run: hand-checked optima, the paper's workloads, replay."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import yaml

from planner.errors import InfeasibleError, UnsupportedError
from planner.importers.dnn_partitioning import CYCLES_PER_MS, import_dnn, max_load as paper_max_load, read_dnn_json
from planner.max_load import MaxLoadOutcome, placement_baselines, plan_loads
from planner.reductions.max_load import to_placement_problem
from planner.pipeline import run
from planner.spec import load_spec
from solvers.core import SolveOptions
from solvers.placement import CpSatPlacementSolver, PlacementProblem, PlacementSolution, max_load, validate_placement

ROOT = Path(__file__).resolve().parents[2]
DNN = ROOT.parent / "shared" / "benchmarks" / "dnn-partitioning"
TINY_DNN = ROOT / "tests" / "data" / "importers" / "tiny_dnn.json"

# A diamond a -> {b, c} -> d on two accelerators and one CPU (generic profile: 1 cycle = 1 ns;
# links at 1 GB/s with zero latency, so an n-byte output costs n cycles to move):
#
#   op  acc  cpu  output (bytes = comm cycles)
#   a    4   40   ta: 2  (read by b and c)
#   b    6   10   tb: 1  (read by d)
#   c    8   80   tc: 1  (read by d)
#   d    4   40   -
#
# Non-contiguous optimum 12: a, d on one accelerator, c on the other, b on the CPU:
#   acc{a,d} = 4 + 4 + 2 (a's output leaves for b and c) + 1 (d receives b's) + 1 (d receives c's) = 12
#   acc{c}   = 8 + 2 (receives a's) + 1 (sends c's)                                           = 11
#   cpu{b}   = 10 (CPUs pay no communication)                                                 = 10
# Nothing beats 12: c must sit on an accelerator (80 on the CPU), so must a and d (40); every
# split of a, c, d (with b anywhere) leaves an accelerator at >= 12 (test_diamond_brute_force
# checks all 81 placements).
# Contiguous optimum 15: {a, d} is not convex (a -> c -> d leaves it and comes back), and the
# convex splits all leave 15 somewhere, e.g. acc{a, b} = 4 + 6 + 2 + 1 = 13 and
# acc{c, d} = 8 + 4 + 2 + 1 = 15, or acc{a} = 6, acc{c, d} = 15, cpu{b} = 10.
# Memory: with 600 B of weights on a and on d and 1 KiB per accelerator, a and d cannot share
# one, and the optimum rises to 15 (e.g. acc{a, c} = 4 + 8 + 2 + 1 = 15, acc{d} = 4 + 1 + 1 = 6,
# cpu{b} = 10).
DIAMOND = """\
version: 1
name: diamond
hardware:
  devices:
    - {name: acc, profile: generic, count: 2}
    - {name: cpu, profile: generic}
  topology: {kind: all-to-all, bandwidth: 1 GB/s, latency: 0}
models:
  - name: m
    graph:
      tensors:
        - {name: ta, shape: [2], dtype: uint8}
        - {name: tb, shape: [1], dtype: uint8}
        - {name: tc, shape: [1], dtype: uint8}
      ops:
        - {name: a, type: task, outputs: [ta], cycles: {acc: 4, cpu: 40}}
        - {name: b, type: task, inputs: [ta], outputs: [tb], cycles: {acc: 6, cpu: 10}}
        - {name: c, type: task, inputs: [ta], outputs: [tc], cycles: {acc: 8, cpu: 80}}
        - {name: d, type: task, inputs: [tb, tc], cycles: {acc: 4, cpu: 40}}
objective: max-load
solver: {time_limit: 5 s, workers: 1, seed: 0}
"""


def _spec(text: str = DIAMOND, **changes):
    data = yaml.safe_load(text)
    data.update(changes)
    return load_spec(data)


def _brute_force(problem: PlacementProblem) -> int:
    return min(max_load(problem, d) for d in itertools.product(range(problem.num_devices), repeat=problem.num_nodes)
               if not validate_placement(problem, PlacementSolution(d)))


def test_diamond_reduction():
    problem, red = to_placement_problem(_spec())
    assert red.op_names == ("m/a", "m/b", "m/c", "m/d") and red.device_names == ("acc0", "acc1", "cpu0")
    assert problem.acc_time == (4, 6, 8, 4) and problem.cpu_time == (40, 10, 80, 40)
    assert problem.comm_time == (2, 1, 1, 0) and problem.edges == ((0, 1), (0, 2), (1, 3), (2, 3))
    assert (problem.num_accelerators, problem.num_cpus, problem.contiguous) == (2, 1, False)


@pytest.mark.parametrize("contiguous, optimum", [(False, 12), (True, 15)])
def test_diamond_brute_force(contiguous, optimum):
    spec = _spec(objective={"kind": "max-load", "contiguous": contiguous})
    problem, _ = to_placement_problem(spec)
    assert _brute_force(problem) == optimum


def test_diamond_through_run():
    spec = _spec()
    outcome = run(spec, time_limit_s=5, workers=1, seed=0)
    assert isinstance(outcome, MaxLoadOutcome)
    plan = outcome.plan
    assert (plan.objective_kind, plan.status, plan.objective, plan.bound, plan.gap) == ("max-load", "OPTIMAL", 12, 12, 0)
    # b on the CPU, a and d together, c alone (either accelerator: they are interchangeable)
    dev = {o.name: o.device for o in plan.ops}
    assert dev["m/b"] == "cpu0" and dev["m/a"] == dev["m/d"] != dev["m/c"]
    assert sorted(outcome.loads.values()) == [10, 11, 12]
    assert plan_loads(plan, spec) == outcome.loads == plan.solver["loads"]
    # one concrete sample: a, then b and c (after ta crosses: 2 cycles), then d
    assert plan.makespan_cycles == outcome.simulation.makespan_cycles
    assert {(t.src_op, t.dst_op) for t in plan.transfers} == {("m/a", "m/b"), ("m/a", "m/c"), ("m/b", "m/d"),
                                                               ("m/c", "m/d")}
    # a(4) + ta to cpu0 (2) + b on the CPU (10) + tb to d (1) + d (4) = 21 is the critical path
    assert plan.makespan_cycles == 21
    assert outcome.baselines["one accelerator"] == 22  # 4 + 6 + 8 + 4, nothing crosses
    assert outcome.baselines["one CPU"] == 170
    assert outcome.baselines["linear split"] >= 12


@pytest.mark.parametrize("objective, optimum", [
    ({"kind": "max-load", "contiguous": True}, 15),
    ("max_load", 12),
])
def test_diamond_contiguity_and_spelling(objective, optimum):
    outcome = run(_spec(objective=objective), time_limit_s=5, workers=1, seed=0)
    assert (outcome.plan.status, outcome.plan.objective, outcome.plan.bound) == ("OPTIMAL", optimum, optimum)
    assert outcome.plan.solver["contiguous"] is isinstance(objective, dict)


def test_memory_limit_changes_the_optimum():
    data = yaml.safe_load(DIAMOND)
    graph = data["models"][0]["graph"]
    graph["tensors"] += [{"name": "wa", "shape": [600], "dtype": "uint8", "kind": "weight"},
                         {"name": "wd", "shape": [600], "dtype": "uint8", "kind": "weight"}]
    graph["ops"][0]["inputs"] = ["wa"]
    graph["ops"][3]["inputs"] += ["wd"]
    data["constraints"] = {"memory_limits": [{"device": "acc", "max": "1 KiB"}]}
    spec = load_spec(data)
    problem, _ = to_placement_problem(spec)
    assert problem.size_bytes == (600, 0, 0, 600) and problem.memory_bytes == 1024
    assert _brute_force(problem) == 15
    outcome = run(spec, time_limit_s=5, workers=1, seed=0)
    dev = {o.name: o.device for o in outcome.plan.ops}
    assert outcome.plan.objective == 15 and outcome.plan.status == "OPTIMAL" and dev["m/a"] != dev["m/d"]
    assert outcome.baselines["one accelerator"] is None  # 1200 B of weights do not fit one


def test_pins_to_the_cpu_forbid_accelerators():
    data = yaml.safe_load(DIAMOND)
    data["constraints"] = {"pins": [{"ops": "m/c", "device": "cpu"}]}
    spec = load_spec(data)
    problem, _ = to_placement_problem(spec)
    assert problem.acc_time == (4, 6, -1, 4)
    outcome = run(spec, time_limit_s=5, workers=1, seed=0)
    assert {o.name: o.device for o in outcome.plan.ops}["m/c"] == "cpu0"
    assert outcome.plan.objective == 80  # c alone on the CPU


def test_op_without_cpu_cycles_is_unsupported():
    data = yaml.safe_load(DIAMOND)
    data["models"][0]["graph"]["ops"][2]["cycles"] = {"acc": 8}
    with pytest.raises(UnsupportedError, match=r"op 'm/c' gives no cycles for the CPU kind 'cpu'"):
        run(load_spec(data), time_limit_s=2, workers=1)


def test_weights_that_fit_nowhere_are_infeasible():
    data = yaml.safe_load(DIAMOND.replace("    - {name: cpu, profile: generic}\n", ""))
    graph = data["models"][0]["graph"]
    for op in graph["ops"]:
        del op["cycles"]["cpu"]
    graph["tensors"].append({"name": "w", "shape": [3000], "dtype": "uint8", "kind": "weight"})
    graph["ops"][1]["inputs"] += ["w"]
    data["constraints"] = {"memory_limits": [{"device": "acc", "max": "2 KiB"}]}
    with pytest.raises(InfeasibleError, match=r"op 'm/b' alone needs more than one accelerator's 2.00 KiB"):
        run(load_spec(data), time_limit_s=2, workers=1)


def test_baselines_of_a_chain():
    # a chain of four 3-cycle ops whose outputs cost 1: split in the middle = 3 + 3 + 1 = 7
    p = PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (1, 1, 1, 0), ((0, 1), (1, 2), (2, 3)), 2, 1)
    assert placement_baselines(p) == {"linear split": (0, 0, 1, 1), "one accelerator": (0, 0, 0, 0),
                                      "one CPU": (2, 2, 2, 2)}


def test_cli_solve_writes_the_max_load_report(tmp_path):
    from typer.testing import CliRunner

    from planner.cli import app

    spec = tmp_path / "diamond.yaml"
    spec.write_text(DIAMOND)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["solve", str(spec), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["objective_kind"] == "max-load" and summary["objective"] == 12 and summary["bound"] == 12
    assert summary["solver"]["loads"] == json.loads((out / "plan.json").read_text())["solver"]["loads"]
    report = (out / "report.md").read_text()
    assert "max-load: 12 cycles (max load)" in report and "## Max-load (Tarnawski et al., NeurIPS 2020)" in report
    assert "| one accelerator | FEASIBLE | 22 |" in report and "| cpu0 | CPU | 1 | 10 | 0 | 10 |" in report
    result = CliRunner().invoke(app, ["simulate", str(out)])
    assert result.exit_code == 0 and "verified" in result.output


def test_plan_import_emits_max_load_for_throughput_inputs(tmp_path):
    from typer.testing import CliRunner

    from planner.cli import app

    src = tmp_path / "throughput-inputs" / "tiny.json"
    src.parent.mkdir()
    # 100 B per accelerator holds the weights (60 B; colour class 70 B), not the activations of a
    # concrete schedule (0.5 ms of transfer = 500 kB at 1 GB/s): that is a separate test below
    src.write_text(TINY_DNN.read_text().replace('"maxSizePerFPGA": 100', '"maxSizePerFPGA": 100000000'))
    result = CliRunner().invoke(app, ["import", str(src), "-o", str(tmp_path / "tiny.yaml")])
    assert result.exit_code == 0, result.output
    spec = load_spec(tmp_path / "tiny.yaml")
    assert spec.objective == "max-load" and spec.max_load.contiguous is False
    w = read_dnn_json(TINY_DNN)
    problem, red = to_placement_problem(spec)
    # every time of the tiny workload is a whole number of ns: the reduction is the paper's problem
    by_name = {f"n{n.id}": n for n in w.nodes}
    nodes = [by_name[o.rsplit("/", 1)[-1]] for o in red.op_names]
    assert problem.acc_time == tuple(round(n.fpga_latency * CYCLES_PER_MS) if n.supported_on_fpga else -1
                                     for n in nodes)
    assert problem.comm_time == tuple(round(n.out_cost * CYCLES_PER_MS) for n in nodes)
    assert problem.is_backward == tuple(n.is_backward for n in nodes)
    assert problem.size_bytes == tuple(round(n.size) for n in nodes) and problem.memory_bytes == 10**8
    outcome = run(spec, time_limit_s=5, workers=1, seed=0)
    k = w.max_fpgas
    dev = {o.name.rsplit("/", 1)[-1]: o.device for o in outcome.plan.ops}
    split = tuple(int(dev[f"n{n.id}"][3:]) + (0 if dev[f"n{n.id}"].startswith("acc") else k) for n in w.nodes)
    assert outcome.plan.objective == paper_max_load(w, split) * CYCLES_PER_MS


def test_activations_that_do_not_fit_are_explained():
    spec = load_spec(import_dnn(TINY_DNN, "max-load"))  # 100 B per accelerator, outputs of 125-500 kB
    with pytest.raises(InfeasibleError, match=r"memory: the max-load placement puts op 'tiny_dnn/n\d' on acc\d, "
                                              r"which holds 100 B, but running it needs"):
        run(spec, time_limit_s=3, workers=1)


def _direct_problem(w, contiguous: bool) -> PlacementProblem:
    """The paper's problem straight from the workload, in ns (what benchmarks/dnn.py solves)."""
    return PlacementProblem(
        acc_time=tuple(round(n.fpga_latency * CYCLES_PER_MS) if n.supported_on_fpga else -1 for n in w.nodes),
        cpu_time=tuple(round(n.cpu_latency * CYCLES_PER_MS) for n in w.nodes),
        comm_time=tuple(round(n.out_cost * CYCLES_PER_MS) for n in w.nodes),
        edges=w.edges, num_accelerators=w.max_fpgas, num_cpus=w.max_cpus,
        size_bytes=tuple(round(n.size) for n in w.nodes), memory_bytes=int(w.max_size_per_fpga),
        color_classes=w.color_classes(), is_backward=tuple(n.is_backward for n in w.nodes), contiguous=contiguous)


@pytest.mark.skipif(not DNN.is_dir(), reason="shared benchmark data not present")
def test_bert24_through_run_equals_the_direct_solver_and_the_paper():
    path = DNN / "throughput-inputs" / "LayerGraphs" / "bert24_inference.json"
    w = read_dnn_json(path)
    spec = load_spec(import_dnn(path, contiguous=True))
    outcome = run(spec, time_limit_s=10, workers=1, seed=0)
    plan = outcome.plan
    direct = CpSatPlacementSolver().solve(_direct_problem(w, True),
                                          SolveOptions(time_limit_s=10, num_workers=1, random_seed=0))
    # both prove the contiguous optimum, 17.790 ms (the paper's DP value), in ns
    assert (plan.status, direct.status.value) == ("OPTIMAL", "OPTIMAL")
    assert plan.objective == plan.bound == direct.objective == 17_789_906
    # the planner's placement scored by the paper's formula (floats, ms): 17.78990625 ms
    k = w.max_fpgas
    dev = {o.name.rsplit("/", 1)[-1]: o.device for o in plan.ops}
    split = tuple(int(dev[f"n{n.id}"][3:]) + (0 if dev[f"n{n.id}"].startswith("acc") else k) for n in w.nodes)
    assert not validate_placement(_direct_problem(w, True), PlacementSolution(split))
    assert max_load(_direct_problem(w, True), split) == plan.objective
    # rounding every time to the ns moves the max-load by < 0.5 ns per term (32 ops + comm)
    assert abs(paper_max_load(w, split) * CYCLES_PER_MS - plan.objective) <= 0.5 * 2 * len(w.nodes)
    assert round(paper_max_load(w, split), 3) == 17.790
    assert plan.makespan_cycles == outcome.simulation.makespan_cycles
    assert max(plan_loads(plan, spec).values()) == plan.objective


@pytest.mark.skipif(not DNN.is_dir(), reason="shared benchmark data not present")
def test_training_workload_marks_backward_ops_and_stays_exact():
    path = DNN / "throughput-inputs" / "LayerGraphs" / "bert24_training.json"
    w = read_dnn_json(path)
    spec = load_spec(import_dnn(path, contiguous=True))
    problem, red = to_placement_problem(spec)
    by_name = {f"n{n.id}": n for n in w.nodes}
    assert problem.is_backward == tuple(by_name[o.rsplit("/", 1)[-1]].is_backward for o in red.op_names)
    assert sum(problem.is_backward) == 32
    outcome = run(spec, time_limit_s=6, workers=1, seed=0)
    plan = outcome.plan
    k = w.max_fpgas
    dev = {o.name.rsplit("/", 1)[-1]: o.device for o in plan.ops}
    split = tuple(int(dev[f"n{n.id}"][3:]) + (0 if dev[f"n{n.id}"].startswith("acc") else k) for n in w.nodes)
    direct = _direct_problem(w, True)
    assert not validate_placement(direct, PlacementSolution(split))  # contiguous on the forward ops
    assert max_load(direct, split) == plan.objective and plan.bound <= plan.objective
    assert plan.objective == 41_745_812  # the paper's DP value, 41.746 ms (the greedy split already meets it)
