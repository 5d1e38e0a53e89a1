"""Island planning: a hand-checkable split, the plan it gives (verified by the replay),
pool vs sequential per-island solves, the same bytes twice, several models sharing islands."""

import dataclasses
import filecmp
from pathlib import Path

import pytest

from planner.islands import to_split_problem
from planner.islands.route import island_spec, solve_island_specs
from planner.output import plan_route_sections, write_plan_dir
from planner.pipeline import route_name, run
from planner.scheduling import run_reserve_s
from planner.spec import load_spec
from planner.stages import RunSettings
from solvers.budget import NET_SLOWDOWN_ENV
from solvers.islands import CpSatSplitSolver, split_loads

ROOT = Path(__file__).resolve().parents[3]

# A chain A -> B -> C -> D of task ops; island x is one device of kind a, island y one of kind b,
# joined by a network of 1 GB/s and no latency (one byte = one cycle at 1 GHz).
# Cycles: every op 400 on either kind, except A: 500 on kind b. Edges: A->B 4000 bytes, B->C 40 bytes,
# C->D 4000 bytes.
#
# By hand (bottleneck = max(island load, network cycles); each op is its own portion):
#   all on one island                      -> load 1600 (or 1700 on y)
#   {A} | {B, C, D}, {A, B, C} | {D}       -> load 1200, cut 4000 bytes
#   {A, C} | {B, D} and other interleavings -> at least two cut edges of 4000 bytes -> 8040 or more
#   {A, B} on x | {C, D} on y              -> loads 800 / 800, cut B->C: 40 bytes = 40 cycles -> 800
#   {A, B} on y | {C, D} on x              -> load 900 on y
# So the unique optimum: A, B on x; C, D on y; bottleneck 800; 40 bytes cross.
CHAIN = """version: 1
hardware:
  devices:
    - {name: a, profile: generic}
    - {name: b, profile: generic}
  islands:
    - {name: x, devices: [a]}
    - {name: y, devices: [b]}
  network: {bandwidth: 1 GB/s, latency: 0}
models:
  - name: m
    graph:
      tensors:
        - {name: t1, shape: [1000], kind: activation}
        - {name: t2, shape: [10], kind: activation}
        - {name: t3, shape: [1000], kind: activation}
      ops:
        - {name: A, type: task, outputs: [t1], cycles: {a: 400, b: 500}}
        - {name: B, type: task, inputs: [t1], outputs: [t2], cycles: {a: 400, b: 400}}
        - {name: C, type: task, inputs: [t2], outputs: [t3], cycles: {a: 400, b: 400}}
        - {name: D, type: task, inputs: [t3], outputs: [], cycles: {a: 400, b: 400}}
objective: throughput
solver: {time_limit: 4 s, workers: 1, seed: 0}
"""


@pytest.fixture
def chain(tmp_path):
    file = tmp_path / "chain.yaml"
    file.write_text(CHAIN)
    return load_spec(file)


def test_the_split_of_the_chain_is_the_hand_computed_optimum(chain):
    problem, portions = to_split_problem(chain)
    assert portions.ops_of == (("m/A",), ("m/B",), ("m/C",), ("m/D",))
    assert problem.portion_work == ((400, 500), (400, 400), (400, 400), (400, 400))
    assert problem.edges == ((0, 1, 4000), (1, 2, 40), (2, 3, 4000)) and problem.network_cycles == (4000, 40, 4000)
    result = CpSatSplitSolver().solve(problem)
    assert result.status.value == "OPTIMAL"
    assert result.solution.island_of == (0, 0, 1, 1)
    assert (result.solution.bottleneck, result.solution.cross_bytes, result.solution.network_cycles) == (800, 40, 40)
    assert split_loads(problem, (0, 1, 0, 1))[0] == 8040  # an interleaving, as computed above


def test_the_chain_plan_places_each_island_on_its_half_and_replays(chain, tmp_path):
    assert route_name(chain) == "islands"
    outcome = run(chain)
    placed = {o.name: o.device for o in outcome.plan.ops}
    assert placed == {"m/A": "a0", "m/B": "a0", "m/C": "b0", "m/D": "b0"}
    assert [(t.src_op, t.dst_op, t.link, t.size_bytes) for t in outcome.plan.transfers] == [
        ("m/B", "m/C", "network", 40)]
    # Throughput: the busiest device carries 800 cycles, and no plan of 1600 cycles of work on
    # two devices does better: the one-problem bound proves it.
    assert outcome.plan.objective == 800 and outcome.plan.bound == 800 and outcome.plan.status == "OPTIMAL"
    details = outcome.plan.solver["islands"]
    assert details["cross_bytes"] == 40 and [i["ops"] for i in details["islands"]] == [2, 2]
    assert "arrival_rounds" not in details  # throughput: one round (arrival times do not change a max load)
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    verdict = write_plan_dir(outcome, chain, tmp_path / "plan")
    assert verdict.plan_dir.exists()
    report = (tmp_path / "plan" / "report.md").read_text()
    assert "## Islands" in report and "| x | a0 | - | 2 | 2 |" in report and "40 bytes" in report


def test_per_island_solves_agree_in_the_pool_and_in_sequence():
    spec = load_spec(ROOT / "specs" / "islands.yaml")
    problem, portions = to_split_problem(spec)
    split = CpSatSplitSolver().solve(problem).solution.island_of
    island_of = portions.island_of_op(split)
    parts = [(name, island_spec(spec, devices, {op for op, i in island_of.items() if i == k}))
             for k, (name, devices) in enumerate(zip(portions.island_names, portions.island_devices))]
    settings = RunSettings(time_limit_s=2.0, workers=1, seed=0, search="deterministic")
    pooled, _ = solve_island_specs(parts, settings, concurrent=True)
    serial, _ = solve_island_specs(parts, settings, concurrent=False)
    strip = lambda results: [(r.name, r.placement, r.status, r.objective, r.bound) for r in results]  # noqa: E731
    assert strip(pooled) == strip(serial)
    assert {d for r in pooled for _, d in r.placement} == {"tpu0", "tpu1", "tpu2", "tpu3"}
    # Every island's part is on its own devices only.
    for r, (_, devices) in zip(pooled, zip(portions.island_names, portions.island_devices)):
        assert {d for _, d in r.placement} <= set(devices)


def test_the_shipped_islands_spec_gives_the_same_bytes_twice(tmp_path, monkeypatch):
    # The budgets, not the net, must end the solves of their 2-s shares on a loaded machine
    # (test_islands_gang_memory.WIDE_NET): a net stop would say reproducible: false.
    monkeypatch.setenv(NET_SLOWDOWN_ENV, "200")
    spec = load_spec(ROOT / "specs" / "islands.yaml")
    for name in ("one", "two"):
        write_plan_dir(run(spec, time_limit_s=2, workers=1), spec, tmp_path / name, numeric="off")
    compared = filecmp.dircmp(tmp_path / "one", tmp_path / "two")
    assert not compared.diff_files and not compared.left_only and not compared.right_only
    assert (tmp_path / "one" / "plan.json").read_bytes() == (tmp_path / "two" / "plan.json").read_bytes()


def test_several_models_share_the_islands(tmp_path):
    text = CHAIN.replace("models:\n", "models:\n  - name: g\n    generator: {kind: mlp, layers: 2, width: 16}\n")
    file = tmp_path / "two.yaml"
    file.write_text(text)
    spec = load_spec(file)
    outcome = run(spec)
    models = {spec.graph.ops[o.name].model: set() for o in outcome.plan.ops}
    for o in outcome.plan.ops:
        models[spec.graph.ops[o.name].model].add(o.device)
    assert set(models) == {"g", "m"}
    portions = outcome.plan.solver["islands"]["split"]["portions"]
    assert {p["first"].split("/")[0] for p in portions} == {"g", "m"}  # each model cut into its own portions
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles


@pytest.mark.parametrize("objective", ["throughput", "latency"])
def test_gang_shards_start_on_one_cycle_in_the_replayed_binaries(tmp_path, objective):
    # Under latency the global schedule tends to queue ops between a gang's shards, so the re-timing
    # takes its serial path (as it did when this was written; the doctest of retime covers it exactly).
    spec = dataclasses.replace(load_spec(ROOT / "specs" / "islands.yaml"), objective=objective)
    assert spec.gangs == (("gpt/layer1/head0/scores", "gpt/layer1/head1/scores"),
                          ("gpt/layer2/head2/scores", "gpt/layer2/head3/scores"))
    outcome = run(spec, time_limit_s=2, workers=1)
    replayed = outcome.simulation.ops
    planned = outcome.plan.solver["islands"]["gangs"]
    for gang, claim in zip(spec.gangs, planned):
        assert {replayed[op].start_cycle for op in gang} == {claim["start_cycle"]}
        devices = [replayed[op].device for op in gang]
        assert len(set(devices)) == len(devices)  # one shard per device
        island = next(i for i in spec.hardware.islands if devices[0] in i.devices)
        assert set(devices) <= set(island.devices)  # one island
    write_plan_dir(outcome, spec, tmp_path / "plan")  # the verifier replays the written binaries again
    assert "Gangs (each gang's shards start on one cycle" in (tmp_path / "plan" / "report.md").read_text()


def test_a_replay_with_a_gang_on_two_cycles_is_a_bug():
    from planner.errors import InternalError
    from planner.islands.gang import check_replayed_gangs
    from planner.simulator.replay import OpTiming

    ops = {"a": OpTiming("d0", 0, 10, 20), "b": OpTiming("d1", 0, 10, 15), "c": OpTiming("d1", 0, 11, 12)}
    assert check_replayed_gangs(ops, [("a", "b")]) == [10]
    with pytest.raises(InternalError, match=r"cycles \[10, 11\]"):
        check_replayed_gangs(ops, [("a", "c")])


def test_one_big_island_joins_every_cross_pair_as_fast_as_the_fastest_island_link(chain, tmp_path):
    from planner.islands.route import one_island_hardware

    spec = load_spec(ROOT / "specs" / "islands.yaml")
    big = one_island_hardware(spec.hardware)
    assert "dcn" not in {l.name for l in big.links} and big.islands == ()
    for a in ("tpu0", "tpu1"):
        for b in ("tpu2", "tpu3"):
            link = big.link_between(a, b)
            assert (link.bandwidth_bytes_per_s, link.latency_cycles) == (300 * 10**9, 200)
    # The chain: two single-device islands and no island link, so the pair keeps the network's speed.
    (link,) = one_island_hardware(chain.hardware).links
    assert link.devices == ("a0", "b0") and link.bandwidth_bytes_per_s == 10**9
    # On one island the chain's best split is the same: 800 (the report's ratio is 100%).
    outcome = run(chain)
    assert outcome.plan.solver["islands"]["one_island"]["objective"] == 800
    assert "reaches 100.0% of its throughput figure" in plan_route_sections(outcome.plan, chain.hardware)[-1]


def test_a_limit_above_the_free_seconds_keeps_the_run_reserve_the_verifier_checks(chain, tmp_path):
    # Above RESERVE_FREE_S (10 s) the run keeps a reserve for the stages after the solve, and
    # plan.json must record the run's reserve, not one of its shares' (whose limit is smaller).
    outcome = run(chain, time_limit_s=12)
    assert outcome.plan.solver["post_solve_reserve_s"] == run_reserve_s(chain, 12) > 0
    assert write_plan_dir(outcome, chain, tmp_path / "plan").plan_dir.exists()
