"""Latency islands: each island's solve knows when cross-island inputs arrive (release times) and
how long the chain after a cross-island output is (tails), from the previous round's global schedule.

Two islands of a fast and a slow device each, joined by a 1 GB/s network (40 bytes = 40 cycles).
A (island x) feeds B (island y) 40 bytes; C (x) and D (y) are independent. Cycles (fast, slow):
A 100/110, C 100/120, B 100/130, D 50/300. By hand:

Round 1, every input there at cycle 0, each island alone:
  x: A slow, C fast -> 110 (A fast, C slow: 120; both fast: 200)
  y: B slow, D fast -> 130 (B fast, D slow: 300; both fast: 150)
  global: A 0-110 on xs, transfer 110-150, B 150-280 on ys -> makespan 280
Round 2, from that schedule: B released at 150; A's tail 40 + 130 = 170:
  x: A fast -> 100 + 170 = 270 (A slow: 110 + 170 = 280)
  y: B fast -> 150 + 100 = 250, D before it on the fast device (B slow: 280)
  global: A 0-100 on xf, transfer 100-140, B 140-240 on yf -> makespan 240
and 240 is optimal: A on its fastest device, the transfer, B on its fastest (the one-problem bound).
"""

import filecmp

import pytest

import planner.islands.route as route
from planner.islands.arrivals import Arrivals, arrivals_from_plan, with_arrivals
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.reductions.scheduling import to_problem
from planner.spec import load_spec
from solvers.budget import NET_SLOWDOWN_ENV

HAND = """version: 1
hardware:
  devices:
    - {name: xf, profile: generic}
    - {name: xs, profile: generic}
    - {name: yf, profile: generic}
    - {name: ys, profile: generic}
  islands:
    - {name: x, devices: [xf, xs], topology: {kind: all-to-all, bandwidth: 100 GB/s}}
    - {name: y, devices: [yf, ys], topology: {kind: all-to-all, bandwidth: 100 GB/s}}
  network: {bandwidth: 1 GB/s, latency: 0}
models:
  - name: m
    graph:
      tensors:
        - {name: t, shape: [10], kind: activation}
      ops:
        - {name: A, type: task, outputs: [t], cycles: {xf: 100, xs: 110}}
        - {name: C, type: task, outputs: [], cycles: {xf: 100, xs: 120}}
        - {name: B, type: task, inputs: [t], outputs: [], cycles: {yf: 100, ys: 130}}
        - {name: D, type: task, outputs: [], cycles: {yf: 50, ys: 300}}
objective: latency
solver: {time_limit: 4 s, workers: 1, seed: 0}
"""


@pytest.fixture
def hand(tmp_path):
    file = tmp_path / "hand.yaml"
    file.write_text(HAND)
    return load_spec(file)


def _placed(outcome):
    return {o.name: (o.device, o.start_cycle, o.end_cycle) for o in outcome.plan.ops}


def test_without_arrivals_the_islands_plan_is_the_hand_computed_280(hand, monkeypatch):
    monkeypatch.setattr(route, "ARRIVAL_ROUNDS", 1)
    outcome = run(hand)
    assert _placed(outcome) == {"m/A": ("xs0", 0, 110), "m/C": ("xf0", 0, 100), "m/B": ("ys0", 150, 280),
                                "m/D": ("yf0", 0, 50)}
    assert outcome.plan.objective == 280 and "arrival_rounds" not in outcome.plan.solver["islands"]
    arrivals = arrivals_from_plan(hand.graph, outcome.plan, {"m/A": 0, "m/C": 0, "m/B": 1, "m/D": 1})
    assert arrivals == Arrivals(release={"m/B": 150}, tail={"m/A": 170})


def test_release_times_and_tails_give_the_hand_computed_optimum(hand, tmp_path):
    outcome = run(hand)
    placed = _placed(outcome)
    assert {op: placed[op] for op in ("m/A", "m/B", "m/D")} == {
        "m/A": ("xf0", 0, 100), "m/B": ("yf0", 140, 240), "m/D": ("yf0", 0, 50)}
    assert [(t.src_op, t.dst_op, t.start_cycle, t.end_cycle) for t in outcome.plan.transfers] == [
        ("m/A", "m/B", 100, 140)]
    details = outcome.plan.solver["islands"]
    assert details["arrival_rounds"] == [280, 240]  # the second round's placement repeats: no third
    assert [(i["name"], i["objective"]) for i in details["islands"]] == [("x", 270), ("y", 250)]
    assert outcome.plan.objective == 240 and outcome.plan.bound == 240 and outcome.plan.status == "OPTIMAL"
    assert outcome.simulation.makespan_cycles == 240
    write_plan_dir(outcome, hand, tmp_path / "plan")  # verified: the replay of the written binaries agrees
    assert "global makespan per round: 280, 240" in (tmp_path / "plan" / "report.md").read_text()


def test_an_island_problem_with_arrivals_counts_them_in_its_makespan(hand):
    from planner.islands.route import island_spec
    from planner.scheduling import solve_schedule
    from planner.stages import Problem, RunSettings

    part = island_spec(hand, ("xf0", "xs0"), {"m/A", "m/C"})
    problem, reduction = with_arrivals(*to_problem(part), Arrivals(tail={"m/A": 170}))
    assert problem.num_ops == 3 and problem.num_devices == 3 and problem.durations_cycles[-1] == (-1, -1, 170)
    settings = RunSettings(time_limit_s=2.0, workers=1, seed=0, search="deterministic")
    plan = solve_schedule(Problem(part, settings, problem, reduction)).plan
    assert plan.objective == 270 and {o.name: o.device for o in plan.ops}["m/A"] == "xf0"


def test_a_latency_islands_plan_gives_the_same_bytes_twice(hand, tmp_path, monkeypatch):
    # The budgets, not the net, must end the solves on a loaded machine (see test_islands_gang_memory.WIDE_NET).
    monkeypatch.setenv(NET_SLOWDOWN_ENV, "200")
    for name in ("one", "two"):
        write_plan_dir(run(hand), hand, tmp_path / name, numeric="off")
    compared = filecmp.dircmp(tmp_path / "one", tmp_path / "two")
    assert not compared.diff_files and not compared.left_only and not compared.right_only
    assert (tmp_path / "one" / "plan.json").read_bytes() == (tmp_path / "two" / "plan.json").read_bytes()
