"""Job-shop benchmark: ft06, ft10, ft20, la01-la40, abz5-9, orb01-10 from jsplib.

Each instance is imported (``planner.importers.jobshop``: one device per machine, job
chains as zero-byte control edges over zero-latency links) and solved by the planner
(HEFT, then CP-SAT). The table shows the makespan, the proven bound and gap, whether it is
proven optimal, the time, the project's HEFT and the known optimum (or published bounds).

Usage::

    python benchmarks/jobshop.py --subset 'ft*,la0*' --time-limit 60
    python benchmarks/jobshop.py --subset 5 --time-limit 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import add_common_args, data_dir, print_table, select, solve_spec, write_results

__all__ = ["DEFAULT_INSTANCES", "load_catalog", "run_instance", "main"]

DEFAULT_INSTANCES = (["ft06", "ft10", "ft20"] + [f"la{i:02d}" for i in range(1, 41)]
                     + [f"abz{i}" for i in range(5, 10)] + [f"orb{i:02d}" for i in range(1, 11)])


def load_catalog(root: Path) -> dict[str, dict[str, Any]]:
    """``instances.json`` by name: ``optimum`` or ``bounds`` (lower, upper) and the path."""
    return {e["name"]: e for e in json.loads((root / "jsplib" / "instances.json").read_text())}


def run_instance(root: Path, entry: dict[str, Any], *, time_limit_s: float, workers: int, seed: int,
                 full: bool = False, dtime_per_second: float | None = None,
                 search: str = "deterministic") -> dict[str, Any]:
    """Import, solve and score one instance."""
    from planner.importers.jobshop import jobshop_to_spec, read_jobshop

    js = read_jobshop(root / "jsplib" / entry["path"])
    spec = jobshop_to_spec(js, name=entry["name"])
    r = solve_spec(spec, time_limit_s=time_limit_s, workers=workers, seed=seed, full=full,
                   dtime_per_second=dtime_per_second, search=search)
    bound = max(js.lower_bound(), r.bound or 0)
    obj = r.objective
    opt = entry.get("optimum")
    b = entry.get("bounds") or {}
    lo, hi = (opt, opt) if opt is not None else (b.get("lower"), b.get("upper"))
    return {"instance": entry["name"], "jobs": js.num_jobs, "machines": js.num_machines,
            "objective": obj, "bound": bound, "gap": None if obj is None else (obj - bound) / max(1, obj),
            "proven": obj is not None and obj == bound, "time_s": round(r.wall_time_s, 3), "status": r.status,
            "heft": r.heuristic, "known_optimum": opt, "known_lo": lo, "known_hi": hi,
            "at_known_optimum": obj is not None and opt is not None and obj == opt,
            "gap_to_known": None if obj is None or lo is None else (obj - lo) / max(1, obj),
            "mode": r.stats.get("mode")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=60.0)
    ap.add_argument("--instances", default=None, help="comma-separated names (default: ft, la01-40, abz5-9, orb01-10)")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    catalog = load_catalog(root)
    names = args.instances.split(",") if args.instances else list(DEFAULT_INSTANCES)
    names = select(names, args.subset)
    rows = []
    for name in names:
        row = run_instance(root, catalog[name], time_limit_s=args.time_limit, workers=args.workers,
                           seed=args.seed, full=args.full_pipeline,
                                   dtime_per_second=args.dtime_per_second, search=args.search)
        rows.append(row)
        if not args.quiet:
            print(f"{name:>6}  {row['jobs']}x{row['machines']}  obj {row['objective']}  bound {row['bound']}  "
                  f"known {row['known_optimum'] or (row['known_lo'], row['known_hi'])}  heft {row['heft']}  "
                  f"{row['time_s']:.1f}s", flush=True)
    print_table(f"Job shop (time limit {args.time_limit:g} s, {args.workers} workers)",
                ["instance", "size", "makespan", "bound", "gap", "proven", "time s", "HEFT", "known", "gap to known"],
                [[r["instance"], f"{r['jobs']}x{r['machines']}", r["objective"], r["bound"], r["gap"], r["proven"],
                  r["time_s"], r["heft"], r["known_optimum"] if r["known_optimum"] is not None
                  else f"[{r['known_lo']}, {r['known_hi']}]", r["gap_to_known"]] for r in rows])
    n = len(rows)
    summary = {
        "instances": n,
        "proven_optimal": sum(r["proven"] for r in rows),
        "at_known_optimum": sum(r["at_known_optimum"] for r in rows),
        "mean_gap": statistics.fmean(r["gap"] for r in rows if r["gap"] is not None) if n else None,
        "mean_gap_to_known": statistics.fmean(r["gap_to_known"] for r in rows
                                              if r["gap_to_known"] is not None) if n else None,
        "mean_time_s": statistics.fmean(r["time_s"] for r in rows) if n else None,
    }
    print(f"proven optimal {summary['proven_optimal']}/{n}, at the known optimum {summary['at_known_optimum']}/{n}, "
          f"mean gap {summary['mean_gap']}, mean gap to known {summary['mean_gap_to_known']}")
    path = write_results("jobshop", rows, summary, args, args.out)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
