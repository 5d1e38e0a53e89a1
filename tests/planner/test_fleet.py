"""Fleet planner: specs, co-location in both modes, variants, backfill, quotes, bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from planner.errors import InfeasibleError, SpecError
from planner.fleet import (
    fleet_summary_rows,
    is_fleet_spec,
    load_fleet_spec,
    quote,
    solve_fleet,
    write_fleet_outputs,
)
from planner.fleet.backfill import Request, simulate_processor
from planner.fleet.pipeline import expand_items, to_problem
from solvers.colocation import ColocationObjective

SPECS = Path(__file__).resolve().parents[2] / "specs"


def write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return p


def solve(spec, **kw):
    return solve_fleet(spec, **{"time_limit_s": 4.0, "workers": 1, "seed": 0, **kw})


ISSUE = """
version: 1
fleet:
  pools:
    - {name: proc, profile: generic, count: 2, capacity: {ops: 100000, io: 100 GB/s}}
  tenants:
    - {name: small, rate: 1/s, requirements: {ops: 20000, io: 30 GB}}
    - {name: large, rate: 1/s, requirements: {ops: 80000, io: 10 GB}}
"""


def test_issue_example_is_colocated(tmp_path):
    spec = load_fleet_spec(write(tmp_path, ISSUE))
    r = solve(spec)
    power = r.modes["power"]
    # 20 000 + 80 000 = 100 000 ops (100%), 30 + 10 = 40 GB of 100 GB: one processor.
    assert power.placement == {"small": "proc0", "large": "proc0"}
    assert power.status == "OPTIMAL" and power.objective == 1 and power.gap == 0
    assert power.peak_utilization == pytest.approx(1.0)
    # Spread over both processors: the large one alone is 80%.
    spread = r.modes["spread"]
    assert spread.processors_used == 2 and spread.peak_utilization == pytest.approx(0.8)
    assert spread.objective == 8000
    write_fleet_outputs(r, tmp_path)
    alloc = json.loads((tmp_path / "allocation.json").read_text())
    assert alloc["tenants"]["small"][0]["share"] == {"ops": 0.2, "io": 0.3, "storage": 0.0}
    assert alloc["processors"]["proc0"]["utilization"] == {"ops": 1.0, "io": 0.4, "storage": 0.0}
    assert alloc["modes"]["power"]["baseline"]["processors_used"] == 1
    report = (tmp_path / "report.md").read_text()
    assert "| proc0 | proc | large, small | 100.0% | 40.0% | 0.0% |" in report
    rows = fleet_summary_rows(r)
    assert rows[1][:3] == ["power *", "OPTIMAL", "1"]


def test_is_fleet_spec(tmp_path):
    assert is_fleet_spec(write(tmp_path, ISSUE))
    assert not is_fleet_spec(SPECS / "demo.yaml")
    assert not is_fleet_spec(tmp_path / "missing.yaml")


MIXED = """
version: 1
fleet:
  pools:
    - {name: a, profile: generic, count: 2, cost: 1, capacity: {ops: 10000, io: 1 GB/s, storage: 10 GB}}
    - {name: b, profile: generic, count: 1, cost: 3, capacity: {ops: 20000, io: 1 GB/s, storage: 10 GB}}
  tenants:
    - {name: t, rate: 9/s, replicas: 3, requirements: {ops: 3000, io: 1 MB, storage: 1 GB}}
"""


def test_mixed_pools_hand_checked(tmp_path):
    # Three replicas of 9 000 ops/s each (27 000 ops/s at 9 req/s x 3 000 ops... split in 3).
    # a holds one replica (10 000), b holds two (20 000): cost a + b = 4 beats a + a + b = 5.
    spec = load_fleet_spec(write(tmp_path, MIXED))
    items = expand_items(spec, {})
    assert [(it.label, it.demand["a"]) for it in items] == [
        ("t", (9000, 3_000_000, 10**9)), ("t#1", (9000, 3_000_000, 10**9)), ("t#2", (9000, 3_000_000, 10**9))]
    r = solve(spec)
    power = r.modes["power"]
    assert power.cost == 4 and power.status == "OPTIMAL"
    assert sorted(power.placement.values()) == ["a0", "b0", "b0"]
    assert power.baseline_cost == 5  # first fit opens the cheap pool first


def test_to_problem_groups_identical_items(tmp_path):
    spec = load_fleet_spec(write(tmp_path, MIXED))
    problem, inverse = to_problem(spec, expand_items(spec, {}), ColocationObjective.MIN_COST)
    assert problem.num_types == 1 and problem.multiplicity == (3,)
    assert inverse.processors == ("a0", "a1", "b0")


VARIANTS = """
version: 1
fleet:
  pools:
    - {name: p, profile: generic, count: 10, capacity: {ops: 1000000, io: 1 TB/s, storage: 1 TB}}
  tenants:
    - name: task
      rate: 100/s
      precision: 0.9
      variants:
        - {name: big, precision: 0.95, capacity: 20/s, requirements: {ops: 5000}}
        - {name: small, precision: 0.85, capacity: 50/s, requirements: {ops: 6000}}
"""


def test_variant_choice(tmp_path):
    # Instance costs (share of a processor): big 20 x 5 000 = 100 000 ops/s = 10%;
    # small 50 x 6 000 = 300 000 = 30%. Precision 0.95 x + 0.85 (100 - x) >= 90 => x >= 50 on
    # big. Options: 3 big (60 rps) + 1 small (40 rps) = 30 + 30 = 60%; 5 big = 50% (cheaper!).
    spec = load_fleet_spec(write(tmp_path, VARIANTS))
    r = solve(spec)
    (choice,) = r.variants
    assert choice.instances == {"big": 5, "small": 0} and choice.cost_bp == 5000
    assert choice.mean_precision == pytest.approx(0.95)
    assert sorted(it.label for it in r.items) == [f"task.big#{k}" for k in range(5)]
    # 5 x 100 000 ops/s = 500 000 <= 1 000 000: all on one processor.
    assert r.modes["power"].processors_used == 1


def test_variant_choice_with_cheaper_small(tmp_path):
    # Small at 1 000 ops: 50 x 1 000 = 5% per instance. 3 big + 1 small = 35% < 5 big = 50%.
    spec = load_fleet_spec(write(tmp_path, VARIANTS.replace("requirements: {ops: 6000}", "requirements: {ops: 1000}")))
    (choice,) = solve(spec).variants
    assert choice.instances == {"big": 3, "small": 1} and choice.cost_bp == 3500


BACKFILL = """
version: 1
fleet:
  pools:
    - {name: p, profile: generic, count: 1, capacity: {ops: 1000000, io: 1 TB/s, storage: 1 TB}}
  tenants:
    - {name: primary, rate: 100/s, priority: 1, deadline: 3 ms, requirements: {ops: 2000}}
    - {name: batch, rate: 1/s, priority: 0, batch: true, requirements: {ops: 1000}}
  backfill:
    horizon: 10 ms
    mode: MODE
    chunk: 2 ms
    checkpoint: 500 us
    resume: 250 us
    trace: [{tenant: primary, at: 5 ms}]
"""


def test_backfill_trace_preempt(tmp_path):
    # One primary request at 5 ms takes 2 000 ops / 1 Mops/s = 2 ms. Without lending the
    # processor is busy 2 of 10 ms (20%). Preempting 2 ms chunks: 0-2, 2-4 done, 4-5 lost,
    # 7-9 done, 9-10 unfinished: 6 ms useful => 80%; the primary answers in 2 ms <= 3 ms.
    spec = load_fleet_spec(write(tmp_path, BACKFILL.replace("MODE", "preempt")))
    b = solve(spec).backfill
    (p,) = b.processors
    assert p.borrower == "batch" and p.lent
    assert p.utilization_before == pytest.approx(0.2) and p.utilization_after == pytest.approx(0.8)
    assert p.overhead == pytest.approx(0.2)
    assert p.max_response_ms == {"primary": 2.0}
    assert b.deadline_misses_caused == 0 and p.misses_after == 0
    assert b.gained == pytest.approx(0.6)


def test_backfill_trace_checkpoint(tmp_path):
    # Checkpointing: the primary waits 0.5 ms (answers in 2.5 ms <= 3 ms); the borrower works
    # 0-5 and, after 0.25 ms to resume, 7.75-10: 7.25 ms => 20% + 72.5% = 92.5%.
    spec = load_fleet_spec(write(tmp_path, BACKFILL.replace("MODE", "checkpoint")))
    (p,) = solve(spec).backfill.processors
    assert p.utilization_after == pytest.approx(0.925)
    assert p.max_response_ms == {"primary": 2.5} and p.misses_after == 0


def test_backfill_refuses_to_cause_a_miss(tmp_path):
    # A 1 ms checkpoint would make the primary answer in 3 ms > 2.5 ms: not lent.
    text = (BACKFILL.replace("MODE", "checkpoint").replace("checkpoint: 500 us", "checkpoint: 1 ms")
            .replace("deadline: 3 ms", "deadline: 2500 us"))
    b = solve(load_fleet_spec(write(tmp_path, text))).backfill
    (p,) = b.processors
    assert not p.lent and "not lent" in p.note and p.utilization_after == pytest.approx(0.2)
    assert b.deadline_misses_caused == 0


def test_simulate_processor_priorities_and_queueing():
    # Two requests at t=0: priority 2 (3 ns) runs first, then priority 1 (2 ns) answers at 5.
    reqs = [Request("lo", 0, 2, 4, 1), Request("hi", 0, 3, 10, 2)]
    t = simulate_processor(reqs, 100, lend=False)
    assert t.max_response_ns == {"hi": 3, "lo": 5} and t.misses == ("lo@0",) and t.primary_busy_ns == 5


def test_quote_table_and_json(tmp_path):
    text = ISSUE + """
  pricing: {per_gop: 1000, currency: EUR, priority_discounts: {0: 0.5}, off_peak_discount: 0.2}
"""
    spec = load_fleet_spec(write(tmp_path, text.replace("requirements: {ops: 20000, io: 30 GB}",
                                                        "requirements: {ops: 20000, ops_max: 30000, io: 30 GB}")))
    q = quote(spec)
    # small: worst case 30 000 ops x 1000 EUR / 1e9 ops x (1 - 0.5) = 0.015 EUR; off peak x 0.8.
    small = q.lines[0]
    assert (small.ops_per_request, small.worst_case, small.price_per_request_peak,
            small.price_per_request_off_peak) == (30000, True, 0.015, 0.012)
    assert q.quote_rows[0][4] == "peak (EUR/req)" and q.quote_rows[1][2] == "30,000 (worst case)"
    q.write_quote_json(tmp_path / "quote.json")
    data = json.loads((tmp_path / "quote.json").read_text())
    assert data["currency"] == "EUR" and data["lines"][1]["price_per_request_peak"] == pytest.approx(0.04)


def test_quote_without_pricing_is_an_error(tmp_path):
    with pytest.raises(SpecError, match="no pricing section"):
        quote(load_fleet_spec(write(tmp_path, ISSUE)))


def test_graph_tenants_measured_with_the_cost_model(tmp_path):
    from planner.isa.resources import determine_resources
    from planner.spec import load_spec

    text = """
    version: 1
    fleet:
      pools:
        - {name: v4, profile: tpu-v4, count: 2}
      tenants:
        - {name: mlp, rate: 1000/s, generator: {kind: mlp, layers: 2, width: 256}}
    """
    spec = load_fleet_spec(write(tmp_path, text))
    need = spec.tenants[0].needs["v4"]
    single = load_spec({"version": 1, "hardware": {"devices": [{"name": "v4", "profile": "tpu-v4"}]},
                        "models": [{"name": "mlp", "generator": {"kind": "mlp", "layers": 2, "width": 256}}]})
    m = determine_resources(single.graph, single.hardware).models["mlp"]
    pool = spec.pools[0]
    # Busy time per request x peak ops/s (1.05 GHz x 128 x 128), rounded up.
    assert need.ops_per_request == -(-m.timeline_cycles["v4"] * pool.ops_per_s // single.hardware.clock_hz)
    assert need.storage_bytes == m.weight_bytes and need.io_bytes_per_request == m.input_bytes + m.output_bytes
    r = solve(spec)
    assert r.modes["power"].processors_used == 1


# --- bad input --------------------------------------------------------------------------
def test_model_that_fits_no_processor(tmp_path):
    text = ISSUE.replace("{name: large, rate: 1/s, requirements: {ops: 80000, io: 10 GB}}",
                         "{name: large, rate: 3/s, requirements: {ops: 80000, io: 10 GB}}")
    spec = load_fleet_spec(write(tmp_path, text))
    with pytest.raises(SpecError) as e:
        solve(spec)
    msg = str(e.value)
    # 3 x 80 000 = 240 000 ops/s against 100 000: short by 140 000 (140%); 3 replicas fit.
    assert "fleet.yaml:7" in msg and "fits no processor" in msg and "240 kops/s of ops" in msg
    assert "short by 140 kops/s, 140.0%" in msg and "replicas: 3" in msg


@pytest.mark.parametrize("rate,expected", [("0", "rate must be > 0"), ("-2/s", "rate must be > 0"),
                                           ("fast", "expected a rate")])
def test_bad_rates(tmp_path, rate, expected):
    spec = write(tmp_path, ISSUE.replace("rate: 1/s, requirements: {ops: 20000", f"rate: {rate}, requirements: {{ops: 20000"))
    with pytest.raises(SpecError, match=expected) as e:
        load_fleet_spec(spec)
    assert e.value.line == 6 and e.value.path == "fleet.tenants[0].rate"


def test_unknown_profile(tmp_path):
    with pytest.raises(SpecError) as e:
        load_fleet_spec(write(tmp_path, ISSUE.replace("profile: generic", "profile: tpu-v5")))
    assert e.value.line == 4 and "unknown ISA profile 'tpu-v5'" in str(e.value) and "did you mean" in str(e.value)


def test_unknown_key_did_you_mean(tmp_path):
    with pytest.raises(SpecError) as e:
        load_fleet_spec(write(tmp_path, ISSUE.replace("rate: 1/s, requirements: {ops: 80000", "rte: 1/s, requirements: {ops: 80000")))
    assert e.value.line == 7 and "unknown key 'rte'" in str(e.value) and "did you mean 'rate'" in str(e.value)


def test_unknown_pool_and_trace_tenant(tmp_path):
    with pytest.raises(SpecError, match="unknown pool 'prc'; did you mean 'proc'"):
        load_fleet_spec(write(tmp_path, ISSUE.replace("{name: small, rate: 1/s,", "{name: small, pools: [prc], rate: 1/s,")))
    with pytest.raises(SpecError, match="unknown tenant 'primry'"):
        load_fleet_spec(write(tmp_path, BACKFILL.replace("MODE", "preempt").replace("tenant: primary, at", "tenant: primry, at")))


def test_infeasible_fleet_is_explained(tmp_path):
    # Four tenants of 60 000 ops/s on two processors of 100 000: 240 000 > 200 000, short by
    # 40 000 ops/s (20%).
    text = """
    version: 1
    fleet:
      pools:
        - {name: proc, profile: generic, count: 2, capacity: {ops: 100000}}
      tenants:
        - {name: t, rate: 1/s, replicas: 4, requirements: {ops: 240000}}
    """
    with pytest.raises(InfeasibleError) as e:
        solve(load_fleet_spec(write(tmp_path, text)))
    assert "ops on pool proc runs out" in str(e.value) and "short by 40 kops/s, 20.0%" in str(e.value)


def test_deadline_no_pool_meets(tmp_path):
    text = ISSUE.replace("{name: small, rate: 1/s,", "{name: small, deadline: 100 ms, rate: 1/s,")
    with pytest.raises(SpecError, match="no pool meets its deadline of 100 ms") as e:
        solve(load_fleet_spec(write(tmp_path, text)))  # 20 000 ops at 100 000 ops/s = 200 ms
    assert e.value.line == 6


def test_precision_without_variants(tmp_path):
    with pytest.raises(SpecError, match="precision is a requirement on a choice of variants"):
        load_fleet_spec(write(tmp_path, ISSUE.replace("{name: small, rate", "{name: small, precision: 0.9, rate")))


def test_variant_precision_unreachable(tmp_path):
    with pytest.raises(InfeasibleError, match="reaches 0.95 < required 0.97"):
        solve(load_fleet_spec(write(tmp_path, VARIANTS.replace("precision: 0.9\n", "precision: 0.97\n"))))


@pytest.mark.parametrize("name", sorted(p.name for p in SPECS.glob("fleet-*.yaml")))
def test_shipped_fleet_specs_solve(name, tmp_path):
    spec = load_fleet_spec(SPECS / name)
    r = solve(spec, time_limit_s=3.0)
    assert r.allocation.status in ("OPTIMAL", "FEASIBLE")
    for m in r.modes.values():
        if m.baseline_cost is not None and m.mode == "power":
            assert m.cost <= m.baseline_cost  # never worse than first-fit decreasing
    if r.backfill is not None:
        assert r.backfill.deadline_misses_caused == 0
    write_fleet_outputs(r, tmp_path)
    assert (tmp_path / "allocation.json").exists() and (tmp_path / "report.md").exists()


def test_deterministic(tmp_path):
    spec = load_fleet_spec(SPECS / "fleet-datacenter.yaml")
    a, b = solve(spec, time_limit_s=3.0), solve(spec, time_limit_s=3.0)
    assert a.allocation.placement == b.allocation.placement
    assert a.backfill.to_dict() == b.backfill.to_dict()


def test_compiled_plan_tenant(tmp_path):
    # A plan.json's determined resources (as written by `plan solve`): serial time on the
    # slowest kind, 506 944 cycles at 1 GHz = 506.944 us per request; on a pool of 10^9
    # ops/s that is 506 944 ops. IO = input + output bytes; storage = weights.
    plan = {"clock_hz": 1_000_000_000, "resources": {"models": {"mlp": {
        "weight_bytes": 8388608, "input_bytes": 16384, "output_bytes": 16384,
        "timeline_cycles": {"tpu": 95172, "npu": 506944}}}, "devices": {}}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    text = """
    version: 1
    fleet:
      pools:
        - {name: p, profile: generic, count: 2, capacity: {ops: 1 Gops/s}}
      tenants:
        - {name: compiled, rate: 1000/s, plan: plan.json}
    """
    spec = load_fleet_spec(write(tmp_path, text))
    need = spec.tenants[0].needs["p"]
    assert (need.ops_per_request, need.io_bytes_per_request, need.storage_bytes) == (506944, 32768, 8388608)
    # 1000 req/s x 506 944 ops = 50.7% of a processor.
    r = solve(spec)
    assert r.allocation.peak_utilization == pytest.approx(0.506944)
    (tmp_path / "plan.json").write_text(json.dumps({"clock_hz": 1}))
    with pytest.raises(SpecError, match="has no determined resources"):
        load_fleet_spec(tmp_path / "fleet.yaml")


def test_ambiguous_pool_names(tmp_path):
    text = ISSUE.replace("- {name: proc, profile: generic, count: 2",
                         "- {name: proc1, profile: generic}\n    - {name: proc, profile: generic, count: 2")
    with pytest.raises(SpecError, match="make processor names ambiguous") as e:
        load_fleet_spec(write(tmp_path, text))
    assert e.value.line == 4


@pytest.mark.parametrize("name", sorted(p.name for p in SPECS.glob("fleet-*.yaml")))
def test_shipped_fleet_specs_match_the_schema(name):
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    from planner.fleet import fleet_json_schema

    jsonschema.validate(yaml.safe_load((SPECS / name).read_text()), fleet_json_schema())
