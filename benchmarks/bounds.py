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

Usage::

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

__all__ = ["previous_lower_bound", "instances", "measure", "synthetic_problem", "measure_scale", "main"]


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
    args = ap.parse_args(argv)
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
