"""A structure-aware fuzzer for fleet specs (``plan validate``, ``plan quote``, ``plan solve``).

Specs are built from the fleet format's own structure (pools, tenants with every source:
requirements, variants, generators, inline graphs, compiled plans, backfill, pricing,
solver), with typical values mixed with hostile ones (0, negatives, NaN, infinities,
``1e999``, 2^63, wrong types, duplicate and dangling names, plan files that are devices,
directories, NaN-laden or deeply nested JSON); then one structural mutation (a key dropped,
a value replaced, an entry duplicated, an unknown key), and sometimes a text mutation
(truncation, an alias bomb, deep nesting, invalid UTF-8, a duplicate key).

Every spec is validated; a valid one is also quoted and solved (``--time-limit 2``); each
run is checked by :func:`tests.fuzz.cli_check.run_plan`.

Run briefly by ``tests/fuzz/test_fleet_fuzz.py`` in the default suite; longer with
``PLAN_FUZZ_EXAMPLES=2000 python -m pytest -p no:cacheprovider tests/fuzz/test_fleet_fuzz.py``
(see the README's test section).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz.cli_check import Tally, run_plan

__all__ = ["fleet_documents", "mutations", "text_mutations", "make_plan_files", "check_fleet_spec"]

HOSTILE = [0, -1, -0.5, 1e-300, 1e300, float("inf"), float("-inf"), float("nan"), 2**63, 10**30, 10**400, "1e999",
           "-1e999", "x", "", True, None, [], {}, [1, 2], "0 B", "1e999 GB", "1e999 s", "-5 s", "0 s", "5"]
POOL_NAMES = ["p", "q", "v4", "npu"]
TENANT_NAMES = ["a", "b", "t", "c", "d"]
BAD_NAMES = ["p1", "p0", "a", "x y", "", "é", "n" * 300, ".."]  # collisions, ambiguity, invalid names


def hostile() -> st.SearchStrategy:
    return st.sampled_from(HOSTILE)


def either(typical: st.SearchStrategy, p_hostile: int = 40, bad: st.SearchStrategy | None = None
           ) -> st.SearchStrategy:
    """Mostly ``typical``, one time in ``p_hostile`` a hostile value (``bad``, or any of :data:`HOSTILE`).

    The hostile draw is a middle value of the range: hypothesis favours the ends (0 and the top).
    """
    worse = bad if bad is not None else hostile()
    return st.integers(0, p_hostile - 1).flatmap(lambda k: worse if k == p_hostile // 2 else typical)


def _name(typical: list[str]) -> st.SearchStrategy:
    return either(st.sampled_from(typical), 20, st.sampled_from(BAD_NAMES))


_OPS = st.one_of(st.integers(1, 10**6), st.sampled_from(["20 kops", "1.5 Tops/s", "3e6", "4 Gops", "20 Gops"]))
_IO = st.sampled_from(["100 GB/s", "1 TB/s", "10 MB/s", "1 GiB/s", "64 KB/s"])
_SIZE = st.sampled_from(["1 TB", "16 GiB", "512 MB", "64 KB", "100 B"])
_RATE = st.one_of(st.sampled_from([1, 10, 100, 0.5, 1000]), st.sampled_from(["50/s", "300/min", "2/h", "1.5 rps"]))
_SECONDS = st.sampled_from(["5 ms", "20 ms", "1 s", "100 us", "2 ms"])
_FRACTION = st.one_of(st.sampled_from([0.5, 0.85, 0.9, 0.95, 1.0]), st.just("90%"))


def _pool() -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"name": _name(POOL_NAMES), "profile": either(st.sampled_from(["generic", "tpu-v4", "edge-npu",
                                                                                  "tpu-v1"]), 30, st.just("tpu-v9"))},
        optional={"count": either(st.integers(1, 4)), "cost": either(st.integers(0, 5)),
                  "clock": either(st.sampled_from(["1 GHz", "940 MHz", "2 GHz"])),
                  "capacity": st.fixed_dictionaries({}, optional={"ops": either(_OPS), "io": either(_IO),
                                                                  "storage": either(_SIZE)})})


def _requirements() -> st.SearchStrategy:
    return st.fixed_dictionaries({"ops": either(_OPS)},
                                 optional={"ops_max": either(_OPS), "io": either(st.sampled_from(["30 GB", "64 KB",
                                                                                                  "1 MB"])),
                                           "storage": either(_SIZE)})


def _variant() -> st.SearchStrategy:
    return st.fixed_dictionaries({"name": st.sampled_from(["big", "small", "big", "int8"]),
                                  "precision": either(_FRACTION), "capacity": either(_RATE),
                                  "requirements": _requirements()})


_GRAPH = {"tensors": [{"name": "x", "shape": [1, 64]}, {"name": "w", "shape": [64, 64], "kind": "weight"},
                      {"name": "y", "shape": [1, 64], "kind": "output"}],
          "ops": [{"name": "mm", "type": "matmul", "inputs": ["x", "w"], "outputs": ["y"]}]}


def _source(plan_files: list[str]) -> st.SearchStrategy:
    return st.one_of(
        st.fixed_dictionaries({"requirements": _requirements()}),
        st.fixed_dictionaries({"variants": st.lists(_variant(), min_size=1, max_size=3)},
                              optional={"precision": either(_FRACTION)}),
        st.fixed_dictionaries({"generator": st.fixed_dictionaries(
            {"kind": st.just("mlp"), "layers": either(st.integers(1, 3)), "width": either(st.sampled_from([32, 64]))})}),
        st.builds(lambda: {"graph": copy.deepcopy(_GRAPH)}),  # a fresh copy: mutations change it in place
        either(st.sampled_from(plan_files[:1]), 3, st.sampled_from(plan_files[1:])).map(lambda p: {"plan": p}),
    )


def _tenant(plan_files: list[str]) -> st.SearchStrategy:
    base = st.fixed_dictionaries(
        {"name": _name(TENANT_NAMES), "rate": either(_RATE)},
        optional={"priority": either(st.integers(-2, 3)), "replicas": either(st.integers(1, 3)),
                  "deadline": either(_SECONDS), "batch": st.booleans(),
                  "pools": st.lists(_name(POOL_NAMES), min_size=1, max_size=2)})
    return st.tuples(base, _source(plan_files)).map(lambda ts: {**ts[0], **ts[1]})


def fleet_documents(plan_files: list[str]) -> st.SearchStrategy:
    """Fleet spec mappings: the format's structure with typical and hostile values."""
    backfill = st.fixed_dictionaries({}, optional={
        "horizon": either(st.sampled_from(["10 ms", "100 ms", "1 s"])), "mode": st.sampled_from(["preempt",
                                                                                                 "checkpoint", "x"]),
        "chunk": either(_SECONDS), "checkpoint": either(_SECONDS), "resume": either(_SECONDS),
        "seed": either(st.integers(0, 5)),
        "trace": st.lists(st.fixed_dictionaries({"tenant": _name(TENANT_NAMES), "at": either(_SECONDS)}),
                          max_size=3)})
    pricing = st.fixed_dictionaries({"per_gop": either(st.sampled_from([0.5, 0.0002, 0, 1e12]))}, optional={
        "currency": st.sampled_from(["USD", "EUR", ""]), "off_peak_discount": either(_FRACTION),
        "priority_discounts": st.dictionaries(st.integers(-1, 2), either(_FRACTION), max_size=2)})
    solver = st.fixed_dictionaries({}, optional={"time_limit": either(st.sampled_from(["2 s", "1 s"])),
                                                 "workers": either(st.integers(1, 2)), "seed": either(st.integers(0, 3))})
    fleet = st.fixed_dictionaries(
        {"pools": st.lists(_pool(), min_size=1, max_size=3, unique_by=lambda p: p["name"]),
         "tenants": st.lists(_tenant(plan_files), min_size=1, max_size=4, unique_by=lambda t: t["name"]),
         "pricing": either(pricing, 2, st.none())},  # present about half the time: quotes need it
        optional={"objective": st.sampled_from(["power", "spread", "cheapest"]),
                  "max_utilization": either(_FRACTION), "backfill": backfill, "solver": solver})
    fleet = fleet.map(lambda f: {k: v for k, v in f.items() if v is not None})
    return st.fixed_dictionaries({"version": either(st.just(1), 16), "fleet": fleet},
                                 optional={"name": either(st.sampled_from(["f", "fleet-x"]), 20,
                                                          st.sampled_from(["..", "a b", "n" * 300]))})


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def mutations(draw: Any, doc: dict) -> str:
    """Apply one drawn structural mutation to ``doc`` in place; returns its name."""
    paths = [p for p in _paths(doc) if p]
    kind = draw(st.sampled_from(["none"] * 5 + ["drop", "replace", "replace", "duplicate", "unknown-key"]))
    if kind == "none" or not paths:
        return "none"
    path = draw(st.sampled_from(paths))
    parent = _parent(doc, path)
    if kind == "drop":
        del parent[path[-1]]
    elif kind == "replace":
        parent[path[-1]] = draw(hostile())
    elif kind == "duplicate" and isinstance(parent, list):
        parent.append(json.loads(json.dumps(parent[path[-1]])))
    elif kind == "unknown-key" and isinstance(parent, dict):
        parent[draw(st.sampled_from(["extra", "capacty", "tenant"]))] = 1
    return kind


def text_mutations(draw: Any, text: str) -> bytes:
    """Sometimes damage the YAML text: truncate it, add an alias bomb, nest deeply, break UTF-8."""
    kind = draw(st.sampled_from(["none"] * 20 + ["truncate", "bomb", "deep", "utf8", "dupkey"]))
    data = text.encode("utf-8")
    if kind == "truncate":
        return data[:draw(st.integers(0, len(data)))]
    if kind == "bomb":
        bomb = "".join(f"  l{k}: &l{k} [{', '.join([f'*l{k - 1}' if k else '1'] * 9)}]\n" for k in range(12))
        return data + b"x_bomb:\n" + bomb.encode()
    if kind == "deep":
        return data.replace(b"fleet:", b"fleet: " + b"[" * 5000, 1)
    if kind == "utf8":
        cut = draw(st.integers(0, len(data)))
        return data[:cut] + b"\xff\xfe" + data[cut:]
    if kind == "dupkey":
        return data + b"fleet: {}\n"
    return data


def make_plan_files(root: Path) -> list[str]:
    """Plan files a tenant may name: one valid, the rest hostile (as absolute paths)."""
    root.mkdir(parents=True, exist_ok=True)
    good = {"clock_hz": 1_000_000_000, "resources": {
        "models": {"m": {"input_bytes": 4096, "output_bytes": 4096, "weight_bytes": 65536,
                         "timeline_cycles": {"acc": 20000}}},
        "devices": {"acc0": {"busy_cycles": 20000}}}}
    files = {"good.json": json.dumps(good), "nan.json": json.dumps(good).replace("4096", "NaN", 1),
             "types.json": json.dumps(good).replace("4096", '"4096"', 1),
             "deep.json": "[" * 100000 + "]" * 100000, "list.json": "[1, 2]", "empty.json": "",
             "huge.json": json.dumps(good).replace("65536", "1" + "0" * 5000)}
    for name, text in files.items():
        (root / name).write_text(text)
    (root / "dir.json").mkdir(exist_ok=True)
    return [str(root / n) for n in files] + [str(root / "dir.json"), str(root / "missing.json"), "/dev/zero"]


def check_fleet_spec(data: bytes, work: Path, tally: Tally, *, solve: bool = True) -> None:
    """Validate one spec; when valid, quote and solve it; record every run in ``tally``."""
    spec = work / "fleet.yaml"
    spec.write_bytes(data)
    tally.inputs += 1
    v = tally.record("validate", run_plan(["validate", str(spec)]), spec)
    if v.code != 0:
        return
    quote = work / "quote.json"
    tally.record("quote", run_plan(["quote", str(spec), "-o", str(quote)], [quote]), spec)
    if solve:
        out = work / "out"
        tally.record("solve", run_plan(["solve", str(spec), "--time-limit", "2", "-o", str(out), "--quiet"], [out]),
                     spec)


def dump(doc: Any) -> str:
    """YAML text of a document (floats such as inf and nan as ``.inf``/``.nan``)."""
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
