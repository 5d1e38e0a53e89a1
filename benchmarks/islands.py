"""Island planning benchmark (issue 13): two islands against one, and per-island solves in a pool.

``pipeline``: ``specs/islands.yaml`` (a pipelined 4-layer transformer, throughput objective,
two islands of two TPU v4 cores joined by a 25 GB/s data-centre network) planned by the
islands route, against the same four devices as one island (one all-to-all topology of the
islands' 300 GB/s links), planned by the ordinary route. The islands plan keeps the spec's two
gangs, the one island has none (gangs need islands), so the ratio is if anything conservative.
Throughput is 1 / max-load, so the ratio is ``one-island objective / islands objective``;
target >= 0.97.

``concurrent``: four islands of two TPU v4 cores, four transformer models of 990 ops each
(3,960 ops); the split is solved once, then the four per-island solves run in a process pool
and one after the other, each with one CP-SAT worker and the same deterministic budget (so
the two do the same work and give the same placements, which is checked). Ratio = pool wall
time / sequential wall time; target <= 0.6 on 2 cores.

``latency``: two and three heterogeneous islands (each a TPU v4 core and an edge NPU on a
100 GB/s link, joined by a 25 GB/s network), latency objective, two and three transformers
whose portions the split spreads over the islands, so they depend on each other across
islands. Each is planned with one round (every cross-island input there at cycle 0: the
behaviour before release times) and with :data:`planner.islands.route.ARRIVAL_ROUNDS`
rounds (release times and tails from the previous round's global schedule), at the same time
limit. Makespans are deterministic (unless the wall-clock safety net of a busy machine cuts a
search: ``reproducible`` says); the ratio is after / before (lower is better). ``latency-4x990``
is the ``concurrent`` row's four islands and 3,960 ops under the latency objective (islands of
about 1,000 ops, so the hierarchical path, where halving each round's budget costs the most).

Every row prints ``uptime``'s load; values are medians over ``--repeats``.

Usage::

    python benchmarks/islands.py --repeats 3 --time-limit 20
    python benchmarks/islands.py --only pipeline --time-limit 30
    python benchmarks/islands.py --only latency --repeats 1 --time-limit 10
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import planner.islands.route as route  # noqa: E402
from planner.islands import to_split_problem  # noqa: E402
from planner.islands.route import island_spec, solve_island_specs  # noqa: E402
from planner.pipeline import run  # noqa: E402
from planner.spec import load_spec  # noqa: E402
from planner.stages import RunSettings  # noqa: E402
from solvers.islands import CpSatSplitSolver  # noqa: E402

__all__ = ["pipeline_row", "concurrent_row", "latency_document", "latency_row", "main"]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def one_island(document: dict) -> dict:
    """The same devices as one island: the islands' fast topology over all of them, no network."""
    doc = copy.deepcopy(document)
    hw = doc["hardware"]
    topology = hw["islands"][0]["topology"]
    hw.pop("islands")
    hw.pop("network")
    hw["topology"] = topology
    doc.get("constraints", {}).pop("gang", None)  # gangs are planned by island (the islands plan keeps them)
    doc["name"] = doc.get("name", "spec") + "-one-island"
    return doc


def pipeline_row(time_limit_s: float, repeats: int) -> dict:
    document = yaml.safe_load((ROOT / "specs" / "islands.yaml").read_text())
    ratios, islands_obj, one_obj = [], [], []
    for _ in range(repeats):
        islands = run(document, time_limit_s=time_limit_s, workers=2)
        one = run(one_island(document), time_limit_s=time_limit_s, workers=2)
        islands_obj.append(islands.plan.objective)
        one_obj.append(one.plan.objective)
        ratios.append(one.plan.objective / islands.plan.objective)
    return {"row": "pipeline", "islands_max_load": statistics.median(islands_obj),
            "one_island_max_load": statistics.median(one_obj), "throughput_ratio": statistics.median(ratios),
            "cross_bytes": islands.plan.solver["islands"]["cross_bytes"], "gap": islands.plan.gap,
            "target": ">= 0.97", "load": _load()}


def four_island_document() -> dict:
    topo = {"kind": "all-to-all", "bandwidth": "300 GB/s", "latency": "200 ns"}
    model = {"kind": "transformer", "layers": 23, "d_model": 256, "heads": 8, "seq": 64, "batch": 1, "dtype": "fp16"}
    return {"version": 1, "name": "four-islands",
            "hardware": {"devices": [{"name": "tpu", "profile": "tpu-v4", "count": 8}],
                         "islands": [{"name": f"pod{k}", "devices": [f"tpu{2 * k}", f"tpu{2 * k + 1}"],
                                      "topology": topo} for k in range(4)],
                         "network": {"bandwidth": "25 GB/s", "latency": "5 us"}},
            "models": [{"name": f"m{k}", "generator": model} for k in range(4)],
            "objective": "throughput"}


def concurrent_row(time_limit_s: float, repeats: int) -> dict:
    spec = load_spec(four_island_document())
    problem, portions = to_split_problem(spec)
    island_of = portions.island_of_op(CpSatSplitSolver().solve(problem).solution.island_of)
    parts = [(name, island_spec(spec, devices, {op for op, i in island_of.items() if i == k}))
             for k, (name, devices) in enumerate(zip(portions.island_names, portions.island_devices))]
    settings = RunSettings(time_limit_s=time_limit_s, workers=1, seed=0, search="deterministic")
    pool_s, serial_s, same = [], [], True
    for _ in range(repeats):
        pooled, wall_pool = solve_island_specs(parts, settings, concurrent=True)
        serial, wall_serial = solve_island_specs(parts, settings, concurrent=False)
        same &= [r.placement for r in pooled] == [r.placement for r in serial]
        pool_s.append(wall_pool)
        serial_s.append(wall_serial)
    return {"row": "concurrent", "ops": len(spec.graph.ops), "islands": len(parts),
            "ops_per_island": [len(r.placement) for r in pooled], "pool_s": statistics.median(pool_s),
            "sequential_s": statistics.median(serial_s),
            "ratio": statistics.median(p / s for p, s in zip(pool_s, serial_s)),
            "same_placements": same, "statuses": sorted({str(getattr(r.status, "value", r.status)) for r in pooled}),
            "target": "<= 0.6",
            "load": _load()}


def latency_document(islands: int) -> dict:
    """``islands`` islands of a TPU v4 core and an edge NPU each; two (three) transformers; latency."""
    topo = {"kind": "all-to-all", "bandwidth": "100 GB/s", "latency": "200 ns"}
    sizes = [("a", 4, 512), ("b", 2, 256)] if islands == 2 else [("a", 4, 512), ("b", 3, 256), ("c", 2, 512)]
    return {"version": 1, "name": f"latency-{islands}-islands",
            "hardware": {"devices": [{"name": "tpu", "profile": "tpu-v4", "count": islands},
                                     {"name": "npu", "profile": "edge-npu", "count": islands}],
                         "islands": [{"name": f"pod{k}", "devices": [f"tpu{k}", f"npu{k}"], "topology": topo}
                                     for k in range(islands)],
                         "network": {"bandwidth": "25 GB/s", "latency": "5 us"}},
            "models": [{"name": name, "generator": {"kind": "transformer", "layers": layers, "d_model": d,
                                                    "heads": 4, "seq": 128, "batch": 1, "dtype": "fp16"}}
                       for name, layers, d in sizes],
            "objective": "latency"}


def latency_row(name: str, document: dict, time_limit_s: float, repeats: int) -> dict:
    rounds = route.ARRIVAL_ROUNDS
    figures: dict[int, tuple[list, list]] = {1: ([], []), rounds: ([], [])}
    reproducible: list = []  # False: the wall-clock safety net cut a search (a busy machine)
    splits: dict[int, list[int]] = {}
    try:
        for _ in range(repeats):
            for r, (makespans, walls) in figures.items():
                route.ARRIVAL_ROUNDS = r
                started = time.perf_counter()
                outcome = run(document, time_limit_s=time_limit_s, workers=2)
                walls.append(time.perf_counter() - started)
                makespans.append(outcome.plan.objective)
                splits[r] = [i["ops"] for i in outcome.plan.solver["islands"]["islands"]]
                reproducible.append(outcome.plan.solver.get("reproducible"))
                if r == rounds:
                    history, bound = outcome.plan.solver["islands"].get("arrival_rounds"), outcome.plan.bound
    finally:
        route.ARRIVAL_ROUNDS = rounds
    before, after = (statistics.median(figures[r][0]) for r in (1, rounds))
    return {"row": name, "ops": len(load_spec(document).graph.ops), "same_split": splits[1] == splits[rounds],
            "makespan_before": before, "makespan_after": after, "ratio": after / before,
            "rounds": history, "bound": bound, "wall_before_s": statistics.median(figures[1][1]),
            "wall_after_s": statistics.median(figures[rounds][1]), "reproducible": all(reproducible),
            "load": _load()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per plan (per island solve)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("pipeline", "concurrent", "latency"))
    args = parser.parse_args(argv)
    print(f"# islands benchmark, {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load {_load()}")
    if args.only in (None, "pipeline"):
        print(pipeline_row(args.time_limit, args.repeats), flush=True)
    if args.only in (None, "concurrent"):
        print(concurrent_row(args.time_limit, args.repeats), flush=True)
    if args.only in (None, "latency"):
        for islands in (2, 3):
            print(latency_row(f"latency-{islands}", latency_document(islands), args.time_limit, args.repeats),
                  flush=True)
        print(latency_row("latency-4x990", {**four_island_document(), "objective": "latency"}, args.time_limit,
                          args.repeats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
