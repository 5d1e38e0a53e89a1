"""Placement benchmark (issue 11): the size strategy against HEFT, flat CP-SAT, METIS and the bound.

Sections (``--only`` takes a comma-separated list; default: all):

* ``demo``: ``specs/demo.yaml`` through the whole planner at 30 s (target gap <= 0.3%).
* ``cnn``: the CNNs shipped inside the ``onnx`` package (light test models), planned on the
  demo's hardware at 60 s (target gap <= 2% up to 1,000 ops).
* ``scale``: a deep transformer and a branchy CNN (stacked inception modules,
  ``planner.graph.generators.inception_graph``) at about 1,000 and 10,000 ops on 8 devices of
  two kinds, end to end at 120 s (target: within 120 s, gap <= 2%, time(10k) / time(1k) <= 12).
* ``huge``: a 100,000-op transformer in a child process: spec, costs, HEFT and the solve
  (target: within 10 minutes, a reported gap, peak memory <= 8 GiB; solver level, as
  lowering's address assignment is quadratic today, see ``child_huge``).
* ``flat``: on every graph up to 2,000 ops, ``strategy: hierarchical`` against today's flat
  CP-SAT (``CpSatScheduler``), same time limit (target: within 2%).
* ``crossover``: flat (LNS + CP-SAT) against hierarchical at growing sizes, the measurement
  behind ``StrategyOptions.flat_max_ops``.

Every row also carries the METIS baseline (pymetis partition into one part per device,
heaviest part on the fastest device, list-scheduled by HEFT's scheduler) and the static lower
bound of today's planner (``solvers.scheduling.lower_bound``, the same value computed by
``quick_lower_bound``). Objectives are makespans in reference cycles. With ``--repeat N``
each timed run repeats and the table shows medians. Results: ``benchmarks/results/
placement-<date>.json`` with the machine (cores, load average, versions).

Measured 2026-11-23 (scale section, load 8-15 on the 2 cores, every run stopped by the budget's
wall-clock net; the README's Performance section has the table): transformer-1k 2,405,800 (HEFT
2,423,907, bound 2,262,792, 5.9%, 389 s), branchy-1k 384,202 (472,727; 372,442; 3.1%; 349 s),
transformer-10k 24,453,667 (24,552,447; 22,862,731; 6.5%; 853 s), branchy-10k 4,078,134
(4,743,533; 2,012,308; 50.7%; 823 s); METIS-grouped 2.6-5.2x worse on every one.

Measured 2026-11-28 06:32-06:33 UTC (``--only scale --instances transformer-10k,branchy-10k
--time-limit 60``, load 3.5-4.4 on the 2 cores; the size strategy chose ``hierarchical``, its
groups placed by CP-SAT and refined by LNS, stopped by the deterministic budget; the bound is
the planner's; wall time of ``planner.pipeline.run``, writing and verifying excluded):

===============  ======  ===========  ==========  ==============  ==========  =====  ======
graph            ops     planner      HEFT        METIS-grouped   bound       gap    wall s
===============  ======  ===========  ==========  ==============  ==========  =====  ======
transformer-10k  10,020  24,452,720   24,552,447  127,686,966     23,746,733  2.89%  60.2
branchy-10k      10,001  4,078,134    4,743,533   10,420,479      3,736,793   8.37%  30.8
===============  ======  ===========  ==========  ==============  ==========  =====  ======

The hierarchical placement beats HEFT by 0.4% and 14.0% and the METIS-grouped placement
(one METIS part per device, heaviest part on the fastest device, HEFT-sequenced) by 5.2x and
2.6x; the gap target (<= 2%) is met on neither at 60 s.

With the segment glue starting the hierarchical path (0d48f53; ``--only scale`` at 120 s,
2026-11-28 07:30-07:33 UTC, idle, load 1.0-1.4): transformer-1k 2,396,399 (OPTIMAL, 54.5 s),
branchy-1k 372,704 (bound 372,617, 0.023%, 32.4 s), transformer-10k 24,290,796 (bound
24,273,779, 0.070%, 54.7 s), branchy-10k 3,736,880 (bound 3,736,793, 0.0023%, 35.2 s);
METIS-grouped 5.3x and 2.8x worse on the 10k graphs.

With the bound proved before the placer and LNS (session 17; ``--only scale,cnn`` at 120 s /
60 s, 2026-11-29 09:15-09:38 UTC, load 6-10 on the 2 cores, ``PLAN_NET_SLOWDOWN=20``; wall s /
CPU s of the run, CPU counting CP-SAT's threads): the glue meets the proven bound on all four
scale graphs, so the placer and LNS are skipped (same plans and bounds as before, all OPTIMAL):
transformer-1k 157.7 / 43.2 (bound last at load 5-7: 679.9 s wall), transformer-10k 134.0 / 66.8
(609.8 s), branchy-1k 47.9 / 16.0, branchy-10k 203.2 / 48.2; onnx-densenet121 (HEFT at the
bound) 25.7 / 4.9; onnx-inception_v2 (the bound not met) unchanged, 431,209 / bound 424,708.
Idle (``--only scale``, 2026-11-29 10:17-10:20 UTC, load 0.2-2.0): transformer-1k 26.7 / 29.6,
branchy-1k 14.9 / 15.0, transformer-10k 55.6 / 58.2, branchy-10k 39.5 / 39.6, all OPTIMAL
(ratios 10k / 1k 2.08 and 2.65; 10k within 120 s met on both).

    python -m benchmarks.placement                       # everything (hours on 2 busy cores)
    python -m benchmarks.placement --only demo,cnn       # sections
    python -m benchmarks.placement --only scale --time-limit 60
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEMO_HARDWARE: dict[str, Any] = {
    "clock": "1 GHz",
    "devices": [{"name": "big", "profile": "tpu-v4", "count": 2}, {"name": "small", "profile": "edge-npu", "count": 2}],
    "links": [{"name": "ici", "between": ["big0", "big1"], "bandwidth": "300 GB/s", "latency": "200 ns"}]
    + [{"name": f"pcie_{a}_{b}", "between": [a, b], "bandwidth": "16 GB/s", "latency": "1 us"}
       for a, b in (("big0", "small0"), ("big0", "small1"), ("big1", "small0"), ("big1", "small1"),
                    ("small0", "small1"))],
}
EIGHT_DEVICES: dict[str, Any] = {
    "devices": [{"name": "big", "profile": "tpu-v4", "count": 4}, {"name": "small", "profile": "edge-npu", "count": 4}],
    "topology": {"kind": "all-to-all", "bandwidth": "50 GB/s", "latency": "2 us"},
}
ONNX_CNNS = ("squeezenet", "inception_v1", "resnet50", "shufflenet", "inception_v2", "densenet121")
TARGETS = {"demo_gap": 0.003, "cnn_gap": 0.02, "scale_gap": 0.02, "scale_time_s": 120.0,
           "scale_ratio": 12.0, "huge_time_s": 600.0, "huge_memory_gib": 8.0, "flat_ratio": 1.02}


# ----------------------------------------------------------------------------- instances

def transformer_spec(ops: int, name: str) -> dict:
    """A transformer with about ``ops`` ops (43 per layer) on the 8 devices."""
    layers = max(1, round((ops - 1) / 43))
    return {"version": 1, "name": name, "hardware": EIGHT_DEVICES,
            "models": [{"name": "gpt", "generator": {"kind": "transformer", "layers": layers, "d_model": 512,
                                                       "heads": 8, "seq": 128, "batch": 1, "dtype": "fp16"}}],
            "objective": "latency", "solver": {"time_limit": "120 s", "workers": 2, "seed": 0}}


def branchy_spec(ops: int, name: str):
    """Stacked inception modules (14 ops each) on the 8 devices: a resolved Spec (not a dict,
    as the branchy generator is not a spec generator kind)."""
    from planner.graph.generators import inception_graph
    from planner.graph.ir import Graph
    from planner.spec import load_spec

    base = load_spec({**transformer_spec(44, name), "name": name})
    tensors, graph_ops = inception_graph("net", modules=max(1, round((ops - 5) / 14)), channels=64, image=14)
    # device_cycles=None: the pipeline costs the new graph (the loader costed the stand-in's)
    return replace(base, graph=Graph(tensors, graph_ops), models=("net",), device_cycles=None)


def onnx_spec(model: str) -> dict | None:
    import onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{model}.onnx"
    if not path.exists():
        return None
    return {"version": 1, "name": f"onnx-{model}", "hardware": DEMO_HARDWARE,
            "models": [{"name": model, "graph": {"onnx": str(path)}}], "objective": "latency",
            "solver": {"time_limit": "60 s", "workers": 2, "seed": 0}}


def _load(source):
    from planner.spec import load_spec

    return source if hasattr(source, "graph") else load_spec(source)


# ----------------------------------------------------------------------------- baselines

def metis_objective(problem) -> int | None:
    """METIS baseline: k = devices parts, heaviest part on the fastest device, HEFT-sequenced."""
    try:
        import pymetis
    except ImportError:
        return None
    from solvers.scheduling import heft_schedule, min_durations, objective_value

    n, nd = problem.num_ops, problem.num_devices
    adj: list[dict[int, int]] = [{} for _ in range(n)]
    for u, v, b in problem.edges:
        w = 1 + b // 1024
        adj[u][v] = adj[u].get(v, 0) + w
        adj[v][u] = adj[v].get(u, 0) + w
    xadj, adjncy, eweights = [0], [], []
    for row in adj:
        for v, w in sorted(row.items()):
            adjncy.append(v)
            eweights.append(w)
        xadj.append(len(adjncy))
    vweights = [max(1, x) for x in min_durations(problem)]
    parts = list(pymetis.part_graph(nd, pymetis.CSRAdjacency(xadj, adjncy), vweights=vweights,
                                    eweights=eweights).vertex_part)
    speed = sorted(range(nd), key=lambda d: (sum(r[d] if r[d] >= 0 else 10**12 for r in problem.durations_cycles), d))
    weight = [0] * nd
    for i, k in enumerate(parts):
        weight[k] += vweights[i]
    order = sorted(range(nd), key=lambda k: (-weight[k], k))
    device_of_part = {k: speed[j] for j, k in enumerate(order)}
    placement = []
    for i, k in enumerate(parts):
        d = device_of_part[k]
        if problem.durations_cycles[i][d] < 0:  # pinned elsewhere: its fastest allowed device
            d = min(problem.allowed_devices(i), key=lambda x: (problem.durations_cycles[i][x], x))
        placement.append(d)
    sol = heft_schedule(problem, tuple(placement))
    return None if sol is None else objective_value(problem, sol)


def static_bound(problem) -> int:
    """Today's static lower bound (``lower_bound``'s value; segments up to 12,000 ops)."""
    from solvers.hierarchical import quick_lower_bound

    return quick_lower_bound(problem, segments=problem.num_ops <= 12_000)


# ----------------------------------------------------------------------------- runs

def run_pipeline(name: str, source, time_limit: float, **solver) -> dict:
    """One end-to-end planner run (solve, lower, replay); the row of the tables."""
    from planner.pipeline import run
    from planner.stage_timing import timing

    spec = _load(source)
    if solver:
        spec = replace(spec, **solver)
    t0, cpu0 = time.perf_counter(), time.process_time()
    with timing() as clock:  # the pipeline's stages (solve, memory, lowering, replay)
        outcome = run(spec, time_limit_s=time_limit)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    plan, problem = outcome.plan, outcome.problem
    stages = outcome.result.stats.get("strategy_stages", {})
    return {"name": name, "ops": problem.num_ops, "devices": problem.num_devices,
            "heft": plan.heuristic_objective, "planner": plan.objective, "bound": plan.bound,
            "gap": plan.gap, "status": plan.status, "strategy": plan.solver.get("strategy"),
            "solver": plan.solver.get("name"), "search": plan.solver.get("search"),
            "stopped_by": plan.solver.get("stopped_by"), "time_limit_s": time_limit, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "pipeline_wall_s": {k: round(v, 2) for k, v in clock.seconds.items()},
            "replayed": outcome.simulation.makespan_cycles, "static_bound": static_bound(problem),
            "metis": metis_objective(problem), "stages": _stage_summary(stages)}


def _stage_summary(stages: dict) -> dict:
    out = {}
    for k, v in stages.items():
        if isinstance(v, dict):
            out[k] = {x: v[x] for x in ("objective", "groups", "iterations", "improvements", "stopped_by",
                                        "quick_bound", "segment_proofs", "bound_s", "returned", "skipped",
                                        "wall_s", "cpu_s") if x in v}
    return out


def run_solver_pair(name: str, source, time_limit: float) -> dict:
    """Today's flat CP-SAT against the hierarchical strategy on the same problem (solver level)."""
    from planner.reductions.scheduling import to_problem
    from solvers.core import SolveOptions
    from solvers.hierarchical import StrategyOptions, StrategyScheduler
    from solvers.scheduling import CpSatScheduler, HeftScheduler

    problem, _ = to_problem(_load(source))
    opts = SolveOptions(time_limit_s=time_limit, num_workers=2)
    heft = HeftScheduler().solve(problem, opts)
    row: dict[str, Any] = {"name": name, "ops": problem.num_ops, "heft": heft.objective}
    for key, solver in (("flat_cpsat", CpSatScheduler()),
                        ("hierarchical", StrategyScheduler(StrategyOptions(strategy="hierarchical"))),
                        ("flat_lns", StrategyScheduler(StrategyOptions(strategy="flat")))):
        t0 = time.perf_counter()
        r = solver.solve(problem, replace(opts, hint=heft.solution))
        row[key] = r.objective
        row[f"{key}_bound"] = r.bound
        row[f"{key}_s"] = round(time.perf_counter() - t0, 1)
    row["hier_vs_flat"] = row["hierarchical"] / row["flat_cpsat"]
    row["metis"] = metis_objective(problem)
    return row


def _median_rows(rows: list[dict]) -> dict:
    out = dict(rows[0])
    for key in ("wall_s", "planner", "gap"):
        values = [r[key] for r in rows if r.get(key) is not None]
        if values:
            out[key] = statistics.median(values)
    out["repeats"] = len(rows)
    return out


def repeated(fn, repeat: int, *args, **kw) -> dict:
    return _median_rows([fn(*args, **kw) for _ in range(max(1, repeat))])


# ----------------------------------------------------------------------------- sections

def section_demo(args) -> list[dict]:
    return [repeated(run_pipeline, args.repeat, "demo", ROOT / "specs" / "demo.yaml", args.time_limit or 30.0)]


def section_cnn(args) -> list[dict]:
    rows = []
    for model in ONNX_CNNS:
        spec = onnx_spec(model)
        if spec is not None and _chosen(args, f"onnx-{model}"):
            rows.append(repeated(run_pipeline, args.repeat, f"onnx-{model}", spec, args.time_limit or 60.0))
            _progress(rows[-1])
    return rows


def _chosen(args, name: str) -> bool:
    """Whether ``--instances`` (none: all) names this row."""
    return not args.instances or name in args.instances.split(",")


def section_scale(args) -> list[dict]:
    rows = []
    for size in (1_000, 10_000):
        for kind, make in (("transformer", transformer_spec), ("branchy", branchy_spec)):
            name = f"{kind}-{size // 1000}k"
            if not _chosen(args, name):
                continue
            rows.append(repeated(run_pipeline, args.repeat, name, make(size, name), args.time_limit or 120.0))
            _progress(rows[-1])
    return rows


def section_huge(args) -> list[dict]:
    """The 100,000-op run in a child process, so its peak memory is its own."""
    cmd = [sys.executable, "-m", "benchmarks.placement", "--child-huge", str(args.time_limit or 300.0)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return [{"name": "transformer-100k", "error": done.stderr[-2000:]}]
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process_wall_s"] = round(time.perf_counter() - t0, 1)
    return [row]


def child_huge(time_limit: float) -> None:
    """Spec loading, costing, HEFT and the strategy's solve of 100,000 ops (solver level:
    lowering's address assignment is quadratic today, 177 s of a 229-s run at 10,000 ops, so
    the whole pipeline cannot finish 100,000 ops in 10 minutes whatever the solver does)."""
    from planner.reductions.scheduling import to_problem
    from solvers.core import SolveOptions
    from solvers.hierarchical import StrategyScheduler
    from solvers.scheduling import HeftScheduler, validate_schedule

    t0 = time.perf_counter()
    problem, _ = to_problem(_load(transformer_spec(100_000, "transformer-100k")))
    t_problem = time.perf_counter() - t0
    opts = SolveOptions(time_limit_s=time_limit, num_workers=2)
    heft = HeftScheduler().solve(problem, opts)
    t_heft = time.perf_counter() - t0 - t_problem
    r = StrategyScheduler().solve(problem, replace(opts, hint=heft.solution))
    t_solve = time.perf_counter() - t0 - t_problem - t_heft
    valid = validate_schedule(problem, r.solution) == []
    row = {"name": "transformer-100k", "ops": problem.num_ops, "devices": problem.num_devices,
           "heft": heft.objective, "planner": r.objective, "bound": r.bound, "gap": r.gap,
           "strategy": r.stats.get("strategy"), "valid": valid, "problem_s": round(t_problem, 1),
           "heft_s": round(t_heft, 1), "solve_s": round(t_solve, 1), "time_limit_s": time_limit,
           "total_wall_s": round(time.perf_counter() - t0, 1),
           "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
           "stopped_by": r.stats.get("stopped_by"),
           "metis": metis_objective(problem), "stages": _stage_summary(r.stats.get("strategy_stages", {}))}
    print(json.dumps(row, default=str))


def section_flat(args) -> list[dict]:
    rows = [run_solver_pair("demo", ROOT / "specs" / "demo.yaml", args.time_limit or 30.0)]
    for model in ONNX_CNNS:
        spec = onnx_spec(model)
        if spec is not None:
            rows.append(run_solver_pair(f"onnx-{model}", spec, args.time_limit or 60.0))
            _progress(rows[-1])
    rows.append(run_solver_pair("transformer-1k", transformer_spec(1000, "t"), args.time_limit or 120.0))
    rows.append(run_solver_pair("branchy-1k", branchy_spec(1000, "b"), args.time_limit or 120.0))
    rows.append(run_solver_pair("transformer-2k", transformer_spec(2000, "t2"), args.time_limit or 120.0))
    return rows


def section_crossover(args) -> list[dict]:
    rows = []
    for size in (130, 260, 400, 600, 900):
        for kind, make in (("transformer", transformer_spec), ("branchy", branchy_spec)):
            rows.append(run_solver_pair(f"{kind}-{size}", make(size, f"{kind}-{size}"), args.time_limit or 60.0))
            _progress(rows[-1])
    return rows


SECTIONS = {"demo": section_demo, "cnn": section_cnn, "scale": section_scale, "flat": section_flat,
            "crossover": section_crossover, "huge": section_huge}


def _progress(row: dict) -> None:
    print("  " + json.dumps({k: v for k, v in row.items() if k != "stages"}, default=str), flush=True)


def summary(results: dict[str, list[dict]]) -> dict:
    """Each target met or not, with the numbers behind it."""
    out: dict[str, Any] = {}
    if results.get("demo"):
        r = results["demo"][0]
        out["demo_gap"] = {"value": r["gap"], "target": TARGETS["demo_gap"], "met": r["gap"] <= TARGETS["demo_gap"]}
    cnn = [r for r in results.get("cnn", []) if r["ops"] <= 1000]
    if cnn:
        worst = max(r["gap"] for r in cnn)
        out["cnn_gap_max"] = {"value": worst, "target": TARGETS["cnn_gap"], "met": worst <= TARGETS["cnn_gap"]}
    scale = {r["name"]: r for r in results.get("scale", [])}
    for kind in ("transformer", "branchy"):
        a, b = scale.get(f"{kind}-1k"), scale.get(f"{kind}-10k")
        if a and b:
            out[f"{kind}_10k"] = {"wall_s": b["wall_s"], "gap": b["gap"], "ratio_10k_1k": b["wall_s"] / a["wall_s"],
                                  "met": b["wall_s"] <= TARGETS["scale_time_s"] and b["gap"] <= TARGETS["scale_gap"]
                                  and b["wall_s"] / a["wall_s"] <= TARGETS["scale_ratio"]}
    if results.get("huge") and "error" not in results["huge"][0]:
        h = results["huge"][0]
        out["huge"] = {"wall_s": h["total_wall_s"], "gap": h["gap"], "peak_rss_gib": h["peak_rss_gib"],
                       "met": h["total_wall_s"] <= TARGETS["huge_time_s"] and h["peak_rss_gib"] <= TARGETS["huge_memory_gib"]}
    flat = results.get("flat", [])
    if flat:
        worst = max(r["hier_vs_flat"] for r in flat)
        out["hierarchical_vs_flat_max"] = {"value": worst, "target": TARGETS["flat_ratio"],
                                           "met": worst <= TARGETS["flat_ratio"]}
    every = [r for rows in results.values() for r in rows if r.get("metis") is not None]
    if every:
        out["better_than_metis"] = {"rows": len(every), "met": all(
            (r.get("planner") or r.get("hierarchical")) < r["metis"] for r in every)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    ap.add_argument("--time-limit", type=float, default=None, help="override every section's limit (s)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per instance (medians shown)")
    ap.add_argument("--instances", default="", help="scale and cnn sections: only these (e.g. transformer-10k,onnx-densenet121)")
    ap.add_argument("--out", type=Path, default=None, help="results JSON")
    ap.add_argument("--child-huge", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_huge is not None:
        child_huge(args.child_huge)
        return 0
    facts = machine_facts()
    out = args.out or ROOT / "benchmarks" / "results" / f"placement-{facts['date'][:10]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict]] = {}
    for name in args.only.split(","):
        print(f"== {name}", flush=True)
        results[name] = SECTIONS[name](args)
        for row in results[name]:
            _progress(row)
        payload = {"family": "placement", "machine": facts, "machine_after": machine_facts(),
                   "targets": TARGETS, "summary": summary(results), "results": results}
        out.write_text(json.dumps(payload, indent=1, default=str))
    print(json.dumps(summary(results), indent=1, default=str))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
