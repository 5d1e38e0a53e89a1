"""Cross-device memory plans with sent-tensor deadlines and a proven bound (issue 14): hand-checked
round trip, sent-late, random ping-pong pins, and the bound against brute force."""

from __future__ import annotations

import copy
import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner.memory as memory_stage
import planner.memory.cross_device as cross_device
from planner.errors import InfeasibleError
from planner.memory.assemble import assemble, expand
from planner.memory.cross_device import memory_plan_bound, sent_deadlines
from planner.memory.retime import RetimingDeadlock
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify.compare import compare_numeric
from solvers.memory.levels import validate_levels
from solvers.memory.levels.heads_tails import HeadsTails, SentDeadline, retime_heads_tails
from tests.planner.memory.test_memory_property import memory_specs
from tests.solvers.test_memory_levels import level_drafts
from tests.sweeps import examples, random_sweep

SPECS = "tests/data/specs/memdevices"
ROUND_TRIP = f"{SPECS}/round-trip.yaml"


def test_round_trip_deadline_hand_checked(choices):
    # npu0 sends t0 (w3's output) to npu1, whose zero-cycle reshape sends it back as t2 for x2.
    # With npu1 in main memory, x2 and the prefetch of the received t2 wait for t0's transfer
    # (1,128 cycles), y1 (0) and the transfer back (1,128): a lag of 2,256 cycles after t0 is
    # in main memory (the edge NPU runs at the plan's 1 GHz clock, so plan and device cycles agree).
    spec = load_spec(ROUND_TRIP)
    outcome = run(spec)
    (args, _), = choices
    spine, graph, hardware, candidates = args[:4]
    assert [t.duration_cycles for t in sorted(spine.transfers, key=lambda t: t.start_cycle)] == [1128, 1128]
    lv = candidates["npu0"]["memory plan"]
    bridge = lv.bridge
    t0 = next(i for i in bridge.sent if bridge.tensors[i].tensor == "m/t0")
    t2 = next(i for i, t in enumerate(bridge.tensors) if t.role == "received")
    assert sent_deadlines(spine, graph, hardware, {}, lv) == (
        SentDeadline(t0, received=t2, lag_cycles=2256), SentDeadline(t0, op=bridge.ops.index("m/x2"), lag_cycles=2256))
    assert sent_deadlines(spine, graph, hardware, {}, candidates["npu1"]["memory plan"]) == ()  # nothing comes back
    # The kept plan: w3 (121) writes t0 to main memory, the round trip (2,256), then x2 reads
    # fast: 77 cycles instead of 181 in main memory. 121 + 2,256 + 77 = 2,454.
    assert outcome.plan.makespan_cycles == 121 + 2256 + 77 == 2454
    x2 = next(o for o in outcome.plan.ops if o.name.startswith("m/x2"))
    assert (x2.start_cycle, x2.duration_cycles) == (2377, 77)
    assert outcome.memory.cross_device["npu0"].plan == "heads/tails"
    assert outcome.memory_baselines["all in main memory"] == 2377 + 181
    assert outcome.simulation.makespan_cycles == 2454
    assert compare_numeric(outcome.binaries, spec.graph, seed=3).ok


def test_without_deadlines_the_round_trip_keeps_main_memory(monkeypatch):
    # Today's re-solve (no deadlines) sees x2 released at 2,377 whatever it does with t0: it keeps
    # t0 fast for z0 and copies it out after z0, so the transfer, and x2 with it, comes later, and
    # the whole plan keeps main memory (2,558). The deadline makes that delay part of the model.
    monkeypatch.setattr(cross_device, "sent_deadlines", lambda *args: ())
    outcome = run(load_spec(ROUND_TRIP))
    assert outcome.plan.makespan_cycles == outcome.memory_baselines["all in main memory"] == 2558
    assert outcome.memory.cross_device["npu0"].plan == "main"
    # A 2,454-cycle plan exists (above), so 2,558 is not optimal: the plan's bound counts npu0's
    # ops at their best case although the kept plan leaves npu0 in main memory (it once claimed
    # OPTIMAL at 2,558, with only the devices the kept plan memory-plans relaxed).
    assert outcome.plan.bound <= 2454 and outcome.plan.status != "OPTIMAL"


def test_sent_late_resolves_never_deadlock(choices):
    # Both NPUs pass a ResNet block back and forth; npu1's own memory plan copies a sent tensor out
    # after an op that waits for the reply (it deadlocks with npu0 in main memory), but no re-solve
    # under its deadlines does.
    spec = load_spec(f"{SPECS}/sent-late.yaml")
    outcome = run(spec, time_limit_s=5, workers=1)
    (args, chosen), = choices
    assert chosen.resolve_deadlocks == ()
    assert outcome.memory.cross_device["npu1"].alone_makespan is None
    assert outcome.plan.makespan_cycles <= 263_697 < outcome.memory_baselines["all in main memory"]
    assert chosen.bound_cycles <= outcome.plan.makespan_cycles


def test_the_bound_and_its_gap_are_in_memory_json_and_the_report(tmp_path):
    from typer.testing import CliRunner

    from planner.cli import app
    out = tmp_path / "plan"
    result = CliRunner().invoke(app, ["solve", ROUND_TRIP, "-o", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    import json
    entry = json.loads((out / "memory.json").read_text())["cross_device_bound"]
    assert entry["makespan_cycles"] == 2454 and entry["bound_cycles"] <= 2454
    assert entry["bound_cycles"] == max(entry["path_bound_cycles"], entry["spine_bound_cycles"])
    assert entry["gap"] == round((2454 - entry["bound_cycles"]) / 2454, 6)
    report = (out / "report.md").read_text()
    assert f"takes at least {entry['bound_cycles']:,} cycles" in report and f"{100 * entry['gap']:.2f}%" in report


@pytest.mark.parametrize("field, value, message", [
    ("bound_cycles", 10**6, "cross_device_bound.bound_cycles"),
    ("gap", 0.5, "cross_device_bound.gap"),
    ("makespan_cycles", 2000, "cross_device_bound.makespan_cycles")])
def test_the_verifier_refuses_a_bound_the_plan_does_not_bear_out(tmp_path, field, value, message):
    import json

    from typer.testing import CliRunner

    from planner.cli import app
    from tests.fuzz.plan_dirs import reseal
    out = tmp_path / "plan"
    runner = CliRunner()
    assert runner.invoke(app, ["solve", ROUND_TRIP, "-o", str(out), "--quiet"]).exit_code == 0
    assert runner.invoke(app, ["simulate", str(out)]).exit_code == 0
    path = out / "memory.json"
    doc = json.loads(path.read_text())
    doc["cross_device_bound"][field] = value
    path.write_text(json.dumps(doc, indent=1))
    reseal(out)
    result = runner.invoke(app, ["simulate", str(out)])
    assert result.exit_code == 2 and message in result.output, result.output


@st.composite
def ping_pong_specs(draw):
    """The memory property test's random graphs on two NPUs, each op pinned to either (data may
    cross back and forth, so per-device plans can wait on each other)."""
    spec = draw(memory_specs())
    spec["hardware"]["devices"][0]["count"] = 2
    spec["hardware"]["topology"] = {"kind": "all-to-all", "bandwidth": "8 GB/s", "latency": "1 us"}
    ops = [o["name"] for o in spec["models"][0]["graph"]["ops"]]
    side = [draw(st.sampled_from(["npu0", "npu1"])) for _ in ops]
    spec["constraints"] = {"pins": [{"ops": [f"m/{n}" for n, s in zip(ops, side) if s == d], "device": d}
                                    for d in ("npu0", "npu1") if d in side]}
    return spec


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ping_pong_specs())
def test_no_resolve_under_deadlines_deadlocks_on_random_ping_pong_pins(choices, spec):
    choices.clear()
    outcome = run(spec, time_limit_s=2, workers=1)  # raises InternalError if the replay disagrees
    assert outcome.plan.makespan_cycles <= outcome.memory_baselines["all in main memory"]
    for _, chosen in choices:
        assert chosen.resolve_deadlocks == ()
        assert chosen.bound_cycles <= chosen.plan.makespan_cycles
        assert chosen.bound_cycles <= outcome.plan.makespan_cycles


# ------------------------------------------------------------------ the bound, by brute force ---------

def _device_plans(bridge, hardware, alignment):
    """Every level plan of the device's (unsplit) problem that fits and packs, as DeviceLevels."""
    pack = memory_stage._packer(hardware, alignment, 0)
    plans, seen = [], set()
    drafts = list(itertools.islice(level_drafts(bridge.problem), 4001))
    assert len(drafts) <= 4000, "too many drafts to enumerate: not a brute force"
    for draft in drafts:
        try:
            timed = retime_heads_tails(bridge.problem, draft, HeadsTails())
        except ValueError:
            continue
        if validate_levels(bridge.problem, timed):
            continue
        key = (timed.in_fast, timed.kept, tuple((t.kind, t.tensor, t.gap, t.trigger_op, t.release_op)
                                                for t in timed.transfers))
        packed = None if key in seen else pack(bridge, timed)
        seen.add(key)
        if packed is not None:
            plans.append(expand(bridge, timed, packed[0]))
    return plans


def _brute_force_optimum(spine, graph, hardware, candidates, alignment, shared_bandwidth=False):
    """The fastest re-timed whole plan over every combination of per-device plans (main included;
    ``shared_bandwidth``: every device shares its main memory, as under ``bandwidth: shared``)."""
    names = sorted(candidates)
    per_device = [[None] + _device_plans(candidates[d]["memory plan"].bridge, hardware, alignment) for d in names]
    best = None
    for combo in itertools.product(*per_device):
        levels = {d: lv for d, lv in zip(names, combo) if lv is not None}
        try:
            plan, _ = assemble(spine, graph, hardware, levels, alignment, shared_bandwidth=shared_bandwidth)
        except (InfeasibleError, RetimingDeadlock):
            continue
        best = plan.makespan_cycles if best is None else min(best, plan.makespan_cycles)
    return best


def _tiny(seed: int) -> dict:
    """A 3-4-op random graph on two NPUs with ops pinned back and forth, unsplit."""
    rng = random.Random(seed)
    kinds = ["relu", "gelu", "add", "mul"]
    n = rng.randint(3, 4)
    tensors = [{"name": "x", "shape": [4, 16], "dtype": "fp32", "kind": "input"}]
    ops, acts = [], ["x"]
    for i in range(n):
        kind = rng.choice(kinds)
        inputs = [acts[-1]] + ([rng.choice(acts)] if kind in ("add", "mul") else [])  # a chain: o1 reads o0
        tensors.append({"name": f"t{i}", "shape": [4, 16], "dtype": "fp32",
                        "kind": "output" if i == n - 1 else "activation"})
        ops.append({"name": f"o{i}", "type": kind, "inputs": inputs, "outputs": [f"t{i}"]})
        acts.append(f"t{i}")
    side = [rng.choice(["npu0", "npu1"]) for _ in range(n)]
    side[0], side[1] = "npu0", "npu1"
    return {"version": 1, "name": f"tiny-{seed}",
            "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": 2, "memory": [
                {"name": "sram", "capacity": rng.choice(["512 B", "1 KiB"]), "bandwidth": "128 GB/s"},
                {"name": "lpddr", "capacity": "1 GiB", "bandwidth": "17 GB/s"}]}],
                "topology": {"kind": "all-to-all", "bandwidth": "8 GB/s", "latency": "1 us"}},
            "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
            "objective": "latency",
            "constraints": {"pins": [{"ops": [f"m/o{i}" for i in range(n) if side[i] == d], "device": d}
                                     for d in ("npu0", "npu1")]},
            "memory": {"plan": True, "split": False},
            "solver": {"time_limit": "2 s", "workers": 1, "seed": 0}}


# Seeds 0-4 by default: on 1-4 the bound equals the brute-force optimum (a bound one too high
# fails), as on seed 5, whose brute force alone costs 4.5 of the six seeds' 7.5 CPU-s
# (measured 2026-11-29); all six with PLAN_FULL_SWEEPS=1.
@random_sweep
@pytest.mark.parametrize("seed", range(examples(5, 6)))
def test_the_cross_device_bound_never_exceeds_the_brute_force_optimum(choices, seed):
    spec = load_spec(copy.deepcopy(_tiny(seed)))
    outcome = run(spec)
    (args, chosen), = choices  # o0 on npu0 feeds o1 on npu1: there is a transfer
    spine, graph, hardware, candidates, alignment = args[:5]
    optimum = _brute_force_optimum(spine, graph, hardware, candidates, alignment)
    assert optimum is not None
    bound = memory_plan_bound(spine, graph, hardware, {d: c["memory plan"].bridge for d, c in candidates.items()})
    assert bound == chosen.bound_cycles
    # The written plan's own bound (the static bounds with every op of a planned device at its
    # best case; the spine's, with everything in main memory, would not hold) joins it.
    assert max(bound, outcome.plan.bound or 0) <= optimum <= outcome.plan.makespan_cycles
