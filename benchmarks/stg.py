"""STG benchmark: P|prec|Cmax on the Standard Task Graph Set (50 and 100 tasks; 2, 4, 8, 16 processors).

Each instance is imported (``planner.importers.stg``) into an ordinary spec and solved by
the planner: HEFT, then the list search of ``solvers.scheduling.listsearch`` (it stops at
the lower bound), then CP-SAT when the bound is not met. A result *matches* when the
makespan equals the proven optimum, or lies in the published ``[lo, hi]`` when only bounds
are known. The table shows the planner, its proven bound and gap, the time, the project's
HEFT beside it, and the known value; each JSON row also says where the schedule came from
(``hint_source``) and how it was proven (``proof``).

Usage::

    python benchmarks/stg.py --subset 5 --time-limit 5        # 5 instances per (size, p): 40 runs
    python benchmarks/stg.py --sizes 50 --procs 4 --subset 'rand000*'
    python benchmarks/stg.py                                  # all 1,440
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import add_common_args, data_dir, print_table, select, solve_spec, write_results

__all__ = ["load_known", "run_instance", "main"]


def load_known(root: Path, size: int, procs: int) -> dict[str, tuple[int, int]]:
    """``{file: (lo, hi)}`` from ``Optimal_values/Case<size>_<p>_OPT.csv`` (lo == hi when proven)."""
    path = root / "stg" / "Optimal_values" / f"Case{size}_{procs}_OPT.csv"
    out: dict[str, tuple[int, int]] = {}
    with path.open() as f:
        for row in csv.reader(f):
            if not row or row[0].startswith("#"):
                continue
            name = row[0].strip()
            vals = [int(x) for x in row[2:] if x.strip()]
            out[name] = (vals[0], vals[0]) if len(vals) == 1 else (vals[0], vals[1])
    return out


def run_instance(root: Path, name: str, procs: int, known: tuple[int, int] | None, *,
                 time_limit_s: float, workers: int, seed: int, full: bool = False, dtime_per_second: float | None = None,
                 search: str = "deterministic") -> dict[str, Any]:
    """Import, solve and score one instance (``name`` like ``50/rand0000.stg``)."""
    from planner.importers.stg import read_stg, stg_to_spec

    g = read_stg(root / "stg" / name)
    spec = stg_to_spec(g, procs, name=Path(name).stem)
    r = solve_spec(spec, time_limit_s=time_limit_s, workers=workers, seed=seed, full=full,
                   dtime_per_second=dtime_per_second, search=search)
    lb = g.lower_bound(procs)
    bound = max(lb, r.bound or 0)
    obj = r.objective
    lo, hi = known if known else (None, None)
    match = obj is not None and known is not None and lo <= obj <= hi
    proven = obj is not None and obj == bound
    gap = None if obj is None else (obj - bound) / max(1, obj)
    heft_match = r.heuristic is not None and known is not None and lo <= r.heuristic <= hi
    return {"instance": f"{name}@{procs}", "tasks": g.num_tasks, "processors": procs,
            "objective": obj, "bound": bound, "gap": gap, "proven": proven, "time_s": round(r.wall_time_s, 3),
            "status": r.status, "heft": r.heuristic, "heft_match": heft_match,
            "known_lo": lo, "known_hi": hi, "known_proven": known is not None and lo == hi,
            "match": match, "static_lower_bound": lb, "hint_source": r.stats.get("hint_source"),
            "proof": r.stats.get("proof"), "stopped_by": r.stats.get("stopped_by")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=5.0)
    ap.add_argument("--sizes", default="50,100", help="task counts (comma-separated): 50,100")
    ap.add_argument("--procs", default="2,4,8,16", help="processor counts: 2,4,8,16")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    rows: list[dict[str, Any]] = []
    for size in [int(s) for s in args.sizes.split(",")]:
        names = sorted(f"{size}/{p.name}" for p in (root / "stg" / str(size)).glob("*.stg"))
        for procs in [int(p) for p in args.procs.split(",")]:
            known = load_known(root, size, procs)
            if args.subset and not args.subset.isdigit():  # pattern on "50/rand0000.stg@4" or the file
                chosen = [n for n in names if select([n, f"{n}@{procs}"], args.subset)]
            else:
                chosen = select(names, args.subset)
            for name in chosen:
                row = run_instance(root, name, procs, known.get(name), time_limit_s=args.time_limit,
                                   workers=args.workers, seed=args.seed, full=args.full_pipeline,
                                   dtime_per_second=args.dtime_per_second, search=args.search)
                rows.append(row)
                if not args.quiet:
                    print(f"{row['instance']:>22}  obj {row['objective']}  bound {row['bound']}  "
                          f"known [{row['known_lo']}, {row['known_hi']}]  heft {row['heft']}  "
                          f"{row['time_s']:.2f}s  {'ok' if row['match'] else 'MISS'}", flush=True)
    summary = summarize(rows)
    groups = sorted({(r["tasks"], r["processors"]) for r in rows})
    table = []
    for t, p in groups:
        sub = [r for r in rows if (r["tasks"], r["processors"]) == (t, p)]
        s = summarize(sub)
        table.append([t, p, len(sub), s["match_fraction"], s["proven_fraction"], s["mean_gap"],
                      s["mean_time_s"], s["max_time_s"], s["heft_match_fraction"], s["heft_mean_gap_vs_known"]])
    table.append(["all", "", len(rows), summary["match_fraction"], summary["proven_fraction"], summary["mean_gap"],
                  summary["mean_time_s"], summary["max_time_s"], summary["heft_match_fraction"],
                  summary["heft_mean_gap_vs_known"]])
    print_table(f"STG (time limit {args.time_limit:g} s, {args.workers} workers)",
                ["tasks", "p", "n", "match", "proven", "mean gap", "mean s", "max s", "HEFT match",
                 "HEFT gap"], table)
    misses = [r["instance"] for r in rows if not r["match"]]
    if misses:
        print("not matched:", ", ".join(misses[:30]) + (" ..." if len(misses) > 30 else ""))
    path = write_results("stg", rows, summary, args, args.out)
    print(f"results: {path}")
    return 0


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Fractions matched/proven, mean gap, times, and HEFT's record on the same rows."""
    if not rows:
        return {"instances": 0, "match_fraction": None, "proven_fraction": None, "mean_gap": None,
                "mean_time_s": None, "max_time_s": None, "heft_match_fraction": None,
                "heft_mean_gap_vs_known": None}
    n = len(rows)
    gaps = [r["gap"] for r in rows if r["gap"] is not None]
    heft_gaps = [(r["heft"] - r["known_lo"]) / r["heft"] for r in rows if r["heft"] and r["known_lo"] is not None]
    return {
        "instances": n,
        "matched": sum(r["match"] for r in rows),
        "match_fraction": sum(r["match"] for r in rows) / n,
        "proven_fraction": sum(r["proven"] for r in rows) / n,
        "mean_gap": statistics.fmean(gaps) if gaps else None,
        "mean_time_s": statistics.fmean(r["time_s"] for r in rows),
        "max_time_s": max(r["time_s"] for r in rows),
        "heft_match_fraction": sum(r["heft_match"] for r in rows) / n,
        "heft_mean_gap_vs_known": statistics.fmean(heft_gaps) if heft_gaps else None,
    }


if __name__ == "__main__":
    raise SystemExit(main())
