"""Lower-bound benchmark: the previous and the current ``lower_bound``, their cost, and the
gaps they leave against the planner's objective.

Instances: every dnn-partitioning latency input (the importer's spec), the demo spec, and
the CNNs shipped inside the ``onnx`` package (``backend/test/data/light``), imported with
``plan import``'s importer and put on the demo's hardware.

Per instance (times are medians of ``--repeats`` runs in this process):

* ``old``: the previous ``lower_bound`` (critical path, total work, fractional load, and the
  plain sum of the cheap bounds of the segments between cut ops; :func:`previous_lower_bound`
  re-computes it here), and its time;
* ``new``: today's ``lower_bound`` (forced placements, placement-aware and memory-aware
  paths, the LP, the segment chain), its time, and which part gave it;
* ``planner``: the planner's solve of the same problem (HEFT, then CP-SAT warm-started from
  it, ``--time-limit`` seconds, the planner's own deterministic budget unless
  ``--dtime-per-second``): its objective and reported bound, which includes the new bound,
  the segment proofs and CP-SAT's own;
* gaps ``(objective - bound) / objective`` for the old static bound, the new static bound
  and the planner's reported bound. ``--known FILE`` (JSON ``{instance: objective}``) adds
  better objectives found elsewhere; the best one is used for every gap.

``--scale 1000,10000,100000`` instead times every bound on synthetic layered graphs of
those sizes (:func:`synthetic_problem`: 8 devices of two kinds, 4 fast and 4 three times
slower with 1/4 of the memory, all pairs linked, weights on every op), with the process's
peak memory.

The last measurement (2026-11-23, deterministic search, load 11-17) is the "Lower bounds and
gaps" table in the README's Performance section: ONNX CNNs within 2% on 7 of 9 (inception_v2
3.2%, shufflenet 3.5%), the demo 0.65% (target 0.3%), the dnn latency inputs 0-68%.

``--glue NAME`` (``branchy-1k``, ``branchy-10k``, ``transformer-1k``, ``transformer-10k``:
``benchmarks/placement.py``'s scale graphs) instead asks which side of the planner's gap is weak
on a layered graph: :func:`glued_segment_schedule` solves every distinct segment between cut ops
with CP-SAT, each cut op pinned to device 0, glues the solutions end to end (no edge crosses a
cut op on these graphs, so the glue is a schedule) and validates it with the independent
validator; :func:`segment_lower_bound` then proves the segment chain bound with the same
per-segment proofs the planner runs. Measured 2026-11-28 05:45 UTC (load 5.1): branchy-10k's glued schedule
is 3,736,793 cycles, valid, every segment solve OPTIMAL (6 distinct solves, 2 s), equal to the
bound the planner reports end to end at 120 s (3,736,793): that schedule is optimal, and the
8.16% gap of the end-to-end plan (about 4.07M) is the plan's, not the bound's.

Usage::

    python benchmarks/bounds.py --glue branchy-10k
    python benchmarks/bounds.py --search deterministic --time-limit 60
    python benchmarks/bounds.py --subset 'dnn/*' --no-solve
    python benchmarks/bounds.py --scale 1000,10000,100000
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (REPO, add_common_args, data_dir, median_times, print_table, select, solve_spec,
                                write_results)

__all__ = ["previous_lower_bound", "instances", "measure", "synthetic_problem", "measure_scale",
           "glued_segment_schedule", "measure_glue", "main"]


def previous_lower_bound(problem) -> int:
    """The ``lower_bound`` before the stronger bounds (LATENCY; THROUGHPUT: largest op and
    fractional load): critical path, total work and fractional load, or the plain sum of
    those per segment between cut ops (unrestricted placements, no pruning), the larger.

    Examples
    --------
    >>> from solvers.scheduling import SchedulingProblem
    >>> p = SchedulingProblem(((1, 9), (9, 1), (1, 9)), ((0, 1, 8), (1, 2, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((3,), (3,)))
    >>> previous_lower_bound(p)  # 1 + 1 + 1: each pair of ops could share a device
    3
    """
    from solvers.scheduling import (Objective, critical_path_bound, fractional_load_bound, max_op_bound,
                                    segment_problems, work_bound)

    if problem.objective is not Objective.LATENCY:
        return max(max_op_bound(problem), fractional_load_bound(problem))

    def cheap(q) -> int:
        return max(critical_path_bound(q), work_bound(q), fractional_load_bound(q))

    return max(cheap(problem), sum(cheap(sub) for sub, _ in segment_problems(problem)))


def _demo_spec() -> dict[str, Any]:
    import yaml

    return yaml.safe_load((REPO / "specs" / "demo.yaml").read_text())


def instances(root: Path) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    """``(name, spec factory)`` for every instance: ``dnn/...``, ``demo``, ``onnx/...``."""
    from planner.importers.dnn_partitioning import import_dnn

    out: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    for f in sorted((root / "dnn-partitioning" / "latency-inputs").glob("*/*.json")):
        out.append((f"dnn/{f.parent.name}/{f.stem}", lambda f=f: import_dnn(f)))
    out.append(("demo", _demo_spec))
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx is in the test extra
        return out
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for f in sorted(glob.glob(os.path.join(light, "*.onnx"))):
        out.append((f"onnx/{Path(f).stem}", lambda f=f: _on_demo_hardware(f)))
    return out


def _on_demo_hardware(path: str) -> dict[str, Any]:
    from planner.importers.onnx import import_onnx_to_spec

    spec = import_onnx_to_spec(path)
    spec["hardware"] = _demo_spec()["hardware"]
    return spec


def _gap(objective: int | None, bound: int | None) -> float | None:
    if objective is None or bound is None or objective <= 0:
        return None
    return (objective - bound) / objective


def measure(name: str, spec: dict[str, Any], args: argparse.Namespace, known: dict[str, int]) -> dict[str, Any]:
    """One row of the table (see the module docstring)."""
    from planner.reductions.scheduling import to_problem
    from planner.spec import load_spec
    from solvers.scheduling import lower_bounds

    problem, _ = to_problem(load_spec(spec))
    old_s, _cpu, old = median_times(lambda: previous_lower_bound(problem), args.repeats)
    new_s, _cpu, parts = median_times(lambda: lower_bounds(problem), args.repeats)
    new = max(parts.values(), default=0)
    row: dict[str, Any] = {"instance": name, "ops": problem.num_ops, "devices": problem.num_devices,
                           "old_bound": old, "old_bound_s": round(old_s, 3), "new_bound": new,
                           "new_bound_s": round(new_s, 3), "new_parts": parts,
                           "new_from": max(parts, key=parts.get) if parts else None}
    objective = None
    if not args.no_solve:
        run = solve_spec(spec, time_limit_s=args.time_limit, workers=args.workers, seed=args.seed,
                         dtime_per_second=args.dtime_per_second, search=args.search)
        row.update(planner_status=run.status, planner_objective=run.objective, planner_bound=run.bound,
                   planner_time_s=round(run.wall_time_s, 1), heft=run.heuristic,
                   planner_stopped_by=run.stats.get("stopped_by"),
                   planner_lower_bound_stat=run.stats.get("lower_bound"))
        objective = run.objective
    best = min((x for x in (objective, known.get(name)) if x is not None), default=None)
    row["best_objective"] = best
    row["gap_old"] = _gap(best, old)
    row["gap_new_static"] = _gap(best, new)
    row["gap_planner"] = _gap(best, max(new, row.get("planner_bound") or 0))
    return row


def synthetic_problem(num_ops: int, seed: int = 0, window: int = 8):
    """A layered random DAG on 8 devices (module docstring), deterministic in ``seed``.

    Each op depends on one or two of the ``window`` ops before it; transfers cost 200 cycles
    plus one per 16 bytes.

    Examples
    --------
    >>> p = synthetic_problem(50)
    >>> p.num_ops, p.num_devices, p.num_links
    (50, 8, 28)
    """
    import random

    from solvers.scheduling import SchedulingProblem

    rnd = random.Random(seed)
    durations, edges = [], []
    for i in range(num_ops):
        base = rnd.randint(100, 2000)
        durations.append((base,) * 4 + (3 * base,) * 4)
        if i:
            for u in sorted({rnd.randint(max(0, i - window), i - 1) for _ in range(rnd.choice((1, 1, 2)))}):
                edges.append((u, i, rnd.randint(1_000, 100_000)))
    link_of = [[-1] * 8 for _ in range(8)]
    links = 0
    for a in range(8):
        for b in range(a + 1, 8):
            link_of[a][b] = link_of[b][a] = links
            links += 1
    transfer = tuple((200 + b // 16,) * links for _, _, b in edges)
    return SchedulingProblem(tuple(durations), tuple(edges), (1,) * 8, tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=(1 << 30,) * 4 + (1 << 28,) * 4,
                             op_resident_bytes=tuple(rnd.randint(0, 1 << 20) for _ in range(num_ops)),
                             device_class=(0,) * 4 + (1,) * 4)


def measure_scale(num_ops: int, repeats: int) -> dict[str, Any]:
    """Time each bound (median of ``repeats``) on :func:`synthetic_problem` of ``num_ops`` ops."""
    import resource

    from solvers.scheduling import (critical_path_bound, fractional_load_bound, lower_bound, lp_relaxation,
                                    restrict_placements, segment_bound)
    from solvers.scheduling.path_bounds import path_bounds

    p = synthetic_problem(num_ops)
    r = restrict_placements(p)
    row: dict[str, Any] = {"ops": num_ops, "edges": len(p.edges)}
    for name, fn in (("restrict", lambda: restrict_placements(p)), ("critical_path", lambda: critical_path_bound(r)),
                     ("paths", lambda: path_bounds(r)), ("fractional_load", lambda: fractional_load_bound(r)),
                     ("lp", lambda: lp_relaxation(r).bound), ("segment_chain", lambda: segment_bound(r)),
                     ("lower_bound", lambda: lower_bound(p))):
        seconds, _cpu, value = median_times(fn, repeats)
        row[name] = value
        row[f"{name}_s"] = round(seconds, 3)
    row["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def glued_segment_schedule(problem, time_limit_s: float = 30.0):
    """Per-segment CP-SAT schedules glued end to end, every cut op on device 0 (module
    docstring, ``--glue``): ``(solution or None, worst status of the segment solves, distinct
    solves)``. Identical segments (same durations, edges and transfers once pinned) share one solve."""
    from dataclasses import replace

    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatScheduler, segment_problems
    from solvers.scheduling.problem import ScheduledTransfer, SchedulingSolution

    def pin(sub, i: int, d: int):
        rows = list(sub.durations_cycles)
        rows[i] = tuple(x if k == d else -1 for k, x in enumerate(rows[i]))
        return replace(sub, durations_cycles=tuple(rows))

    segs = segment_problems(problem)
    n = problem.num_ops
    dev, stream, start, dur, end_of = [0] * n, [0] * n, [0] * n, [0] * n, [0] * n
    edge_of = {(u, v): e for e, (u, v, _) in enumerate(problem.edges)}
    transfers, solved, worst = [], {}, "OPTIMAL"
    for k, (sub, ops) in enumerate(segs):
        q = pin(sub, 0, dev[ops[0]]) if k else sub
        q = pin(q, q.num_ops - 1, 0) if k < len(segs) - 1 else q
        key = (q.durations_cycles, q.edges, q.transfer_cycles)
        if key not in solved:
            solved[key] = CpSatScheduler().solve(q, SolveOptions(time_limit_s=time_limit_s, num_workers=1))
            if solved[key].status.value != "OPTIMAL":
                worst = solved[key].status.value
        sol = solved[key].solution
        if sol is None:
            return None, worst, len(solved)
        shift = end_of[ops[0]] - sol.op_end(0) if k else 0
        for local, op in enumerate(ops):
            if k and local == 0:
                continue
            dev[op], stream[op], dur[op] = sol.op_device[local], sol.op_stream[local], sol.op_duration[local]
            start[op] = sol.op_start[local] + shift
            end_of[op] = start[op] + dur[op]
        for t in sol.transfers:
            u, v, _ = q.edges[t.edge]
            transfers.append(ScheduledTransfer(edge_of[(ops[u], ops[v])], t.link, t.start_cycle + shift,
                                               t.duration_cycles))
    glued = SchedulingSolution(tuple(dev), tuple(stream), tuple(start), tuple(dur),
                               tuple(sorted(transfers, key=lambda t: t.edge)))
    return glued, worst, len(solved)


def measure_glue(name: str, time_limit_s: float) -> dict[str, Any]:
    """:func:`glued_segment_schedule` on one of ``benchmarks/placement.py``'s scale graphs,
    validated, beside the segment chain bound proved with the planner's segment proofs."""
    import time

    from benchmarks.placement import branchy_spec, transformer_spec
    from planner.reductions.scheduling import to_problem
    from planner.spec import load_spec
    from solvers.core import SolveOptions
    from solvers.scheduling import validate_schedule
    from solvers.scheduling.cpsat.segments import segment_lower_bound

    kind, size = name.split("-")
    make = branchy_spec if kind == "branchy" else transformer_spec
    spec = make(int(size.rstrip("k")) * 1000, name)
    problem, _ = to_problem(spec if hasattr(spec, "graph") else load_spec(spec))
    t0 = time.perf_counter()
    glued, worst, distinct = glued_segment_schedule(problem, time_limit_s)
    row: dict[str, Any] = {"instance": name, "ops": problem.num_ops, "segment_solves": distinct,
                           "worst_status": worst, "glue_s": round(time.perf_counter() - t0, 1)}
    row["glued"] = None if glued is None else glued.makespan_cycles
    row["valid"] = glued is not None and not validate_schedule(problem, glued)
    t0 = time.perf_counter()
    row["segment_bound"], _ = segment_lower_bound(problem, SolveOptions(time_limit_s=time_limit_s, num_workers=1),
                                                  time_limit_s)
    row["bound_s"] = round(time.perf_counter() - t0, 1)
    row["gap"] = None if row["glued"] is None else (row["glued"] - row["segment_bound"]) / row["glued"]
    return row


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:.2f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=60.0)
    ap.set_defaults(dtime_per_second=None)
    ap.add_argument("--repeats", type=int, default=3, help="bound timings: median of this many runs")
    ap.add_argument("--no-solve", action="store_true", help="bounds only (no planner run, no gaps unless --known)")
    ap.add_argument("--known", default=None, help="JSON {instance: objective} of better known objectives")
    ap.add_argument("--scale", default=None, help="comma-separated op counts: time the bounds on synthetic graphs")
    ap.add_argument("--glue", default=None, help="comma-separated scale graphs (e.g. branchy-10k): glued segment "
                                                 "optima against the segment bound")
    args = ap.parse_args(argv)
    if args.glue:
        rows = [measure_glue(x, args.time_limit) for x in args.glue.split(",")]
        print_table("Glued per-segment optima (cut ops on device 0) against the proved segment bound, cycles",
                    ["instance", "ops", "glued", "valid", "segment bound", "gap", "solves", "worst", "glue s",
                     "bound s"],
                    [[r["instance"], r["ops"], r["glued"], r["valid"], r["segment_bound"], _pct(r["gap"]),
                      r["segment_solves"], r["worst_status"], r["glue_s"], r["bound_s"]] for r in rows])
        print(f"results: {write_results('bounds-glue', rows, {}, args, args.out)}")
        return 0
    if args.scale:
        rows = [measure_scale(int(x), args.repeats) for x in args.scale.split(",")]
        names = ["restrict", "critical_path", "paths", "fractional_load", "lp", "segment_chain", "lower_bound"]
        print_table(f"Bound times in seconds on synthetic graphs (median of {args.repeats})",
                    ["ops", *names, "bound", "peak MiB"],
                    [[r["ops"], *(r[f"{k}_s"] for k in names), r["lower_bound"], r["peak_rss_mib"]] for r in rows])
        print(f"results: {write_results('bounds-scale', rows, {}, args, args.out)}")
        return 0
    root = data_dir(args.data)
    known = json.loads(Path(args.known).read_text()) if args.known else {}
    chosen = dict(instances(root))
    rows = []
    for name in select(list(chosen), args.subset):
        row = measure(name, chosen[name](), args, known)
        rows.append(row)
        if not args.quiet:
            print(f"{name}: old {row['old_bound']} ({row['old_bound_s']} s), new {row['new_bound']} "
                  f"({row['new_bound_s']} s, {row['new_from']}), best {row['best_objective']}", flush=True)
    print_table(f"Lower bounds (planner: {args.time_limit:g} s, {args.workers} workers; bound times: median of "
                f"{args.repeats})",
                ["instance", "ops", "old bound", "old s", "new bound", "new s", "from", "HEFT", "planner", "p-bound",
                 "stopped by", "p-time s", "best", "gap old", "gap new", "gap planner"],
                [[r["instance"], r["ops"], r["old_bound"], r["old_bound_s"], r["new_bound"], r["new_bound_s"],
                  r["new_from"], r.get("heft"), r.get("planner_objective"), r.get("planner_bound"),
                  r.get("planner_stopped_by"), r.get("planner_time_s"), r["best_objective"],
                  _pct(r["gap_old"]), _pct(r["gap_new_static"]), _pct(r["gap_planner"])] for r in rows])
    summary = {"instances": len(rows),
               "stronger": sum(r["new_bound"] > r["old_bound"] for r in rows),
               "weaker": sum(r["new_bound"] < r["old_bound"] for r in rows),
               "median_new_bound_s": statistics.median([r["new_bound_s"] for r in rows]) if rows else None}
    print(f"new bound stronger on {summary['stronger']}/{len(rows)}, weaker on {summary['weaker']}")
    path = write_results("bounds", rows, summary, args, args.out)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
