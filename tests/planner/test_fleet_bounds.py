"""Fleet specs on hostile input: every number finite and in range, names unique, references
resolved, sizes bounded before anything is built; each a SpecError with the YAML line and path."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import SpecError
from planner.fleet import is_fleet_spec, load_fleet_spec, quote, solve_fleet
from planner.fleet.pipeline import expand_items, to_problem
from planner.fleet.quotes import QuoteLine, QuoteResult
from planner.fleet.resolve import MAX_ITEMS
from solvers.colocation import ColocationObjective
from solvers.colocation.variants import VariantProblem

runner = CliRunner()

BASE = """version: 1
fleet:
  pools: [{name: p, profile: generic, count: 2, capacity: {ops: 100000}}]
  tenants:
    - {name: a, rate: 1, requirements: {ops: 1000}}
"""


def _load_error(tmp_path: Path, text: str) -> SpecError:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        load_fleet_spec(path)
    assert e.value.file == str(path)
    return e.value


@pytest.mark.parametrize("old, new, line, where, words", [
    ("rate: 1,", "rate: 1" + "0" * 400 + ",", 5, "fleet.tenants[0].rate", "rate must be in 1e-06..1e+09"),
    ("{ops: 1000}", "{ops: 1" + "0" * 400 + "}", 5, "fleet.tenants[0].requirements.ops", "must be in 0..1e+18"),
    ("rate: 1,", "rate: 1, priority: 1" + "0" * 400 + ",", 5, "fleet.tenants[0].priority", "less than or equal"),
    ("rate: 1,", "rate: .inf,", 5, "fleet.tenants[0].rate", "rate must be in 1e-06..1e+09 requests per second"),
    ("rate: 1,", "rate: 0,", 5, "fleet.tenants[0].rate", "rate must be > 0"),
    ("rate: 1,", "rate: -1,", 5, "fleet.tenants[0].rate", "rate must be > 0"),
    ("rate: 1,", "rate: .nan,", 5, "fleet.tenants[0].rate", "rate must be > 0"),
    ("{ops: 1000}", "{ops: .inf}", 5, "fleet.tenants[0].requirements.ops", "must be in 0..1e+18"),
    ("{ops: 1000}", "{ops: 1e999}", 5, "fleet.tenants[0].requirements.ops", "must be in 0..1e+18"),
    ("{ops: 100000}", "{ops: 0}", 3, "fleet.pools[0].capacity.ops", "operations per second must be > 0"),
    ("count: 2", "count: 100000000", 3, "fleet.pools[0].count", "less than or equal to 10000"),
    ("rate: 1,", "rate: 1, replicas: 20000,", 5, "fleet.tenants[0].replicas", "less than or equal to 10000"),
    ("rate: 1,", "rate: 1, priority: 10000000,", 5, "fleet.tenants[0].priority", "less than or equal to 1000000"),
    ("rate: 1,", "rate: 1, deadline: 1e999 s,", 5, "fleet.tenants[0].deadline", "got \"1e999 s\" (the number is out of range)"),
    ("rate: 1,", "rate: 1, deadline: 1e300 s,", 5, "fleet.tenants[0].deadline", "got \"1e300 s\" (the number is out of range)"),
    ("count: 2,", "count: 2, cost: .inf,", 3, "fleet.pools[0].cost", "valid integer"),
    ("{ops: 1000}", "{ops: 1000, io: 1e999 GB}", 5, "fleet.tenants[0].requirements.io", "got \"1e999 GB\" (the number is out of range)"),
    ("{ops: 100000}", "{ops: 100000, storage: 1e999 TB}", 3, "fleet.pools[0].capacity.storage", "got \"1e999 TB\" (the number is out of range)"),
])
def test_numbers_out_of_range_name_the_line_and_path(tmp_path, old, new, line, where, words):
    e = _load_error(tmp_path, BASE.replace(old, new))
    assert (e.line, e.path) == (line, where) and words in e.message


def test_solver_time_limit_that_overflows_is_refused(tmp_path):
    e = _load_error(tmp_path, BASE + "  solver: {time_limit: 1e999 s}\n")
    assert e.path == "fleet.solver.time_limit" and "got \"1e999 s\" (the number is out of range)" in e.message


def test_pricing_must_be_finite_and_non_negative(tmp_path):
    e = _load_error(tmp_path, BASE + "  pricing: {per_gop: .inf}\n")
    assert (e.line, e.path, e.message) == (6, "fleet.pricing.per_gop", "input should be a finite number, got inf")
    e = _load_error(tmp_path, BASE + "  pricing: {per_gop: -1}\n")
    assert e.path == "fleet.pricing.per_gop" and "greater than or equal to 0" in e.message
    free = tmp_path / "free.yaml"
    free.write_text(BASE + "  pricing: {per_gop: 0}\n")
    assert quote(load_fleet_spec(free)).lines[0].price_per_request_peak == 0.0


def test_max_utilization_zero_is_refused(tmp_path):
    e = _load_error(tmp_path, BASE + "  max_utilization: 0\n")
    assert e.path == "fleet.max_utilization" and "must be > 0" in e.message
    # Found by the fuzzer: 50% of 1 op/s rounds down to nothing (a ZeroDivisionError when placing).
    e = _load_error(tmp_path, BASE.replace("{ops: 100000}", "{ops: 1}") + "  max_utilization: 0.5\n")
    assert (e.line, e.path) == (3, "fleet.pools[0].capacity")
    assert e.message == "pool 'p': max_utilization 0.5 of its ops capacity 1 leaves nothing to allocate"


def test_duplicate_names_are_refused(tmp_path):
    variants = BASE.replace("    - {name: a, rate: 1, requirements: {ops: 1000}}\n", """    - name: t
      rate: 10
      variants:
        - {name: v, precision: 0.9, capacity: 5, requirements: {ops: 100}}
        - {name: v, precision: 0.8, capacity: 5, requirements: {ops: 50}}
""")
    e = _load_error(tmp_path, variants)
    assert (e.line, e.path) == (9, "fleet.tenants[0].variants[1].name")
    assert e.message == "variant 'v' of tenant 't' is declared twice"
    e = _load_error(tmp_path, BASE.replace("rate: 1,", "rate: 1, pools: [p, p],"))
    assert e.path == "fleet.tenants[0].pools[1]" and e.message == "pool 'p' is listed twice"


def test_a_plan_that_is_a_device_or_not_a_plan_is_refused(tmp_path):
    e = _load_error(tmp_path, BASE.replace("requirements: {ops: 1000}", "plan: /dev/zero"))
    assert e.path == "fleet.tenants[0].plan" and "not a regular file (a character device)" in e.message
    bad = tmp_path / "plan.json"
    for text, words in [('{"resources": {"models": {"m": {"input_bytes": NaN}}}}', "NaN is not a number"),
                        ('{"resources": {"models": {"m": {"input_bytes": "x"}}}}', "input_bytes must be an integer"),
                        ('{"resources": {"models": [1]}}', "must map names to objects"),
                        ("[" * 50 + "]" * 50, "nested deeper than 32"),
                        ('{"clock_hz": 0, "resources": {"models": {"m": {}}}}', "clock_hz must be >= 1")]:
        bad.write_text(text)
        e = _load_error(tmp_path, BASE.replace("requirements: {ops: 1000}", f"plan: {bad}"))
        assert e.path == "fleet.tenants[0].plan" and words in e.message, text


def test_sizes_are_bounded_before_anything_is_built(tmp_path):
    many = BASE.replace("count: 2", "count: 1000") + "".join(
        f"    - {{name: t{k}, rate: 1, requirements: {{ops: 1}}}}\n" for k in range(250))
    e = _load_error(tmp_path, many)
    assert e.path == "fleet" and "251 tenants and variants on 1,000 processors make 251,000 pairs" in e.message
    replicas = BASE.replace("count: 2", "count: 2000").replace("rate: 1,", "rate: 1, replicas: 600,")
    e = _load_error(tmp_path, replicas)
    assert e.path == "fleet" and "at least 600 instances on 2,000 processors make 1,200,000 pairs" in e.message
    # 1e9 requests/s at 0.001 requests/s per instance would be 1e12 instances to place.
    huge = BASE.replace("    - {name: a, rate: 1, requirements: {ops: 1000}}\n", """    - name: t
      rate: 1e+9
      variants: [{name: v, precision: 0.9, capacity: 0.001, requirements: {ops: 0}}]
""")
    e = _load_error(tmp_path, huge)  # refused while resolving the spec: before any instance is built
    assert e.path == "fleet.tenants[0]" and e.message == (
        f"the tenants need at least 1,000,000,000,000 instances (replicas and variant instances) up to tenant "
        f"'t'; at most {MAX_ITEMS:,} are placed")


def test_backfill_requests_are_bounded(tmp_path):
    text = BASE.replace("rate: 1,", "rate: 1000,") + "  backfill: {horizon: 3000 s}\n"
    e = _load_error(tmp_path, text)
    assert e.path == "fleet.backfill.horizon" and "about 3,000,000 requests" in e.message


def test_variant_problem_refuses_values_beyond_int64():
    with pytest.raises(ValueError, match="beyond the 2\\^62"):
        VariantProblem(10**30, 9000, None, (10**30,), (9500,), (10,), (10,))


def test_a_pool_smaller_than_one_quantum_still_gets_capacity():
    # Storage is quantised by the largest pool (1 TiB / 10^9 -> 10^4 bytes per quantum): the
    # small pool's 100 bytes are below one quantum and must not become a zero capacity.
    spec = load_fleet_spec({"fleet": {
        "pools": [{"name": "big", "profile": "generic", "capacity": {"ops": 1000, "storage": "1 TiB"}},
                  {"name": "small", "profile": "generic", "capacity": {"ops": 1000, "storage": "100 B"}}],
        "tenants": [{"name": "a", "rate": 1, "pools": ["small"], "requirements": {"ops": 10, "storage": "60 B"}},
                    {"name": "b", "rate": 1, "pools": ["small"], "requirements": {"ops": 10, "storage": "60 B"}}]}})
    problem, _ = to_problem(spec, expand_items(spec, {}), ColocationObjective.MIN_COST)
    assert problem.capacity[1][2] == 1
    # Each item fits the small pool alone, so both need a processor of their own... but the pool
    # has one: infeasible, said as such (not a ValueError from a zero capacity).
    from planner.errors import InfeasibleError

    with pytest.raises(InfeasibleError):
        solve_fleet(spec, time_limit_s=1, workers=1)


def test_quote_json_never_holds_nan_or_infinity(tmp_path):
    q = QuoteResult("s", "USD", math.inf, 0.0, {}, (QuoteLine("a", 0, 1, False, 1.0, math.inf, math.inf, 1.0),))
    with pytest.raises(ValueError):
        q.to_json()
    path = tmp_path / "f.yaml"
    path.write_text(BASE + "  pricing: {per_gop: 1e12}\n")
    target = tmp_path / "q.json"
    res = runner.invoke(app, ["quote", str(path), "-o", str(target)])
    assert res.exit_code == 0, res.output
    assert json.loads(target.read_text())["lines"][0]["price_per_request_peak"] == 1e12 * 1000 / 1e9


def test_is_fleet_spec_reads_only_a_bounded_head(tmp_path):
    assert not is_fleet_spec("/dev/zero") and not is_fleet_spec(tmp_path)
    laughs = "version: 1\nfleet:\n  a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"  {chr(98 + k)}: &{chr(98 + k)} [*{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}, "
        f"*{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}]\n"
        for k in range(9))
    (tmp_path / "laughs.yaml").write_text(laughs)
    assert is_fleet_spec(tmp_path / "laughs.yaml")  # decided at the key: nothing is expanded
    (tmp_path / "spine.yaml").write_text("version: 1\nhardware: {fleet: 1}\nmodels: []\n")
    assert not is_fleet_spec(tmp_path / "spine.yaml")


def test_a_variant_mix_needing_too_many_instances_is_refused_before_they_are_built():
    # 1,000 req/s at a mean precision of 0.9 from big (0.5, 1,000 req/s per instance) and small
    # (0.99, 0.01 req/s per instance): at least (0.9 - 0.5) / (0.99 - 0.5) = 82% of the requests go to
    # small, i.e. >= 81,633 small instances, far above the 10,000 instances a fleet may place.
    spec = load_fleet_spec({"fleet": {
        "pools": [{"name": "p", "profile": "generic", "count": 4, "capacity": {"ops": 10**9}}],
        "tenants": [{"name": "t", "rate": 1000, "precision": 0.9, "variants": [
            {"name": "big", "precision": 0.5, "capacity": 1000, "requirements": {"ops": 10**5}},
            {"name": "small", "precision": 0.99, "capacity": 0.01, "requirements": {"ops": 1}}]}]}})
    with pytest.raises(SpecError) as e:
        solve_fleet(spec, time_limit_s=1, workers=1)
    assert e.value.path == "fleet.tenants" and "at most 10,000 instances" in e.value.message
