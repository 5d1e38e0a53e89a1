"""Fleet benchmark: vector bin packing with known optima, and a 1,000-model fleet.

1. Triplet instances: items in triplets summing exactly to the capacity in each of three
   dimensions, so the optimum is n/3 (known by construction). Solved by the planner's
   fewest-processors solver (FFD, then bin completion, then column generation) and, beside
   it, by the CP-SAT assignment model alone (no bin completion). Target: proven optimal
   for n <= 300 within 10 s each.
2. A fleet of 1,000 models (50 distinct model types, random demands in three dimensions)
   on 200 processors in two pools (120 small, 80 twice as large): fewest processors with
   the gap to the proven bound, beside first-fit decreasing. Target: gap <= 1% within
   30 s, never worse than FFD. The same fleet in spread mode (lowest peak utilization).
   Target: gap <= 1% within 30 s.
3. ``--twice``: the two fleet solves run again and must return the same packing, objective
   and bound (budgets are deterministic time; the wall clock is only a safety net).

    python -m benchmarks.fleet                   # everything (about 2 minutes on 2 cores)
    python -m benchmarks.fleet --quick           # small sizes only
    python -m benchmarks.fleet --twice           # and check that the fleet solves repeat
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from benchmarks._machine import machine_facts
from solvers.colocation import (
    ColocationObjective,
    ColumnGenerationColocationSolver,
    CpSatColocationSolver,
    FirstFitDecreasingSolver,
    validate_colocation,
)
from solvers.colocation.instances import random_fleet, triplet_instance
from solvers.core import SolveOptions

ROOT = Path(__file__).resolve().parent.parent
TRIPLET_TIME_S, FLEET_TIME_S, SPREAD_TIME_S = 10.0, 28.0, 10.0


def run(problem, solver, time_limit: float, workers: int) -> dict:
    t0 = time.perf_counter()
    r = solver.solve(problem, SolveOptions(time_limit_s=time_limit, num_workers=workers, random_seed=0))
    wall = time.perf_counter() - t0
    if r.solution is not None:
        assert validate_colocation(problem, r.solution) == [], "invalid packing"
    return {"status": r.status.value, "objective": r.objective, "bound": r.bound, "gap": r.gap,
            "time_s": round(wall, 2), "proof": r.stats.get("proof", ""),
            "stopped_by": r.stats.get("stopped_by", ""), "dtime_used": r.stats.get("dtime_used"),
            "packing_digest": hashlib.sha256(repr(r.solution.bin_of_item if r.solution else None).encode()).hexdigest()[:16]}


def same(a: dict, b: dict) -> bool:
    keys = ("status", "objective", "bound", "packing_digest", "dtime_used")
    return all(a[k] == b[k] for k in keys)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--twice", action="store_true", help="solve the fleet twice; the results must be identical")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    facts = machine_facts()
    sizes = (30, 60) if args.quick else (30, 60, 120, 300)
    rows = []
    print("Triplet vector bin packing (3 dimensions, optimum n/3 by construction)")
    header = (f"{'n':>5}{'seed':>5}{'opt':>5}{'FFD':>6}{'planner':>9}{'status':>10}{'time':>8}"
              f"{'cpsat-only':>12}{'status':>10}{'time':>8}")
    print(header)
    print("-" * len(header))
    for n in sizes:
        for seed in range(3):
            p = triplet_instance(n, seed=seed)
            ffd = FirstFitDecreasingSolver().solve(p)
            plan = run(p, ColumnGenerationColocationSolver(), TRIPLET_TIME_S, args.workers)
            only = (run(p, CpSatColocationSolver(bin_completion_share=0.0), TRIPLET_TIME_S, args.workers)
                    if seed == 0 else None)
            row = {"n": n, "seed": seed, "optimum": n // 3, "ffd": ffd.objective, "planner": plan, "cpsat_only": only}
            rows.append(row)
            o = only or {}
            print(f"{n:>5}{seed:>5}{n // 3:>5}{ffd.objective:>6}{plan['objective']:>9}{plan['status']:>10}"
                  f"{plan['time_s']:>7.2f}s{o.get('objective', '-'):>12}{o.get('status', '-'):>10}"
                  f"{(str(o['time_s']) + 's') if o else '-':>8}")
    fleet_rows = {}
    if not args.quick:
        print("\nFleet: 1,000 models (50 types) on 200 processors (120 + 80, two sizes), fewest processors")
        p = random_fleet()
        ffd = FirstFitDecreasingSolver().solve(p)
        power = run(p, ColumnGenerationColocationSolver(), FLEET_TIME_S, args.workers)
        fleet_rows["power"] = {"ffd": ffd.objective, **power}
        print(f"  FFD {ffd.objective}   planner {power['objective']} (bound {power['bound']}, "
              f"gap {100 * power['gap']:.2f}%, {power['status']}) in {power['time_s']} s, "
              f"stopped by {power['stopped_by']}")
        ps = random_fleet(objective=ColocationObjective.MIN_MAX_UTILIZATION)
        ffd_s = FirstFitDecreasingSolver().solve(ps)
        spread = run(ps, CpSatColocationSolver(), SPREAD_TIME_S, args.workers)
        fleet_rows["spread"] = {"ffd": ffd_s.objective, **spread}
        print(f"  spread (peak utilization, bp): FFD-balanced {ffd_s.objective}   planner {spread['objective']} "
              f"(bound {spread['bound']}, gap {100 * (spread['gap'] or 0):.2f}%, {spread['status']}) "
              f"in {spread['time_s']} s, stopped by {spread['stopped_by']}")
        if args.twice:
            again = {"power": run(p, ColumnGenerationColocationSolver(), FLEET_TIME_S, args.workers),
                     "spread": run(ps, CpSatColocationSolver(), SPREAD_TIME_S, args.workers)}
            for name, r in again.items():
                fleet_rows[name]["repeat"] = r
                print(f"  {name} again: {r['objective']} (bound {r['bound']}, packing {r['packing_digest']}, "
                      f"dtime {r['dtime_used']}) in {r['time_s']} s: "
                      f"{'identical' if same(fleet_rows[name], r) else 'DIFFERENT'}")
    print()
    ok_trip = all(r["planner"]["status"] == "OPTIMAL" and r["planner"]["objective"] == r["optimum"]
                  and r["planner"]["time_s"] <= TRIPLET_TIME_S for r in rows)
    print(f"{'PASS' if ok_trip else 'FAIL'}  triplets proven optimal (n/3) within {TRIPLET_TIME_S:g} s each")
    if fleet_rows:
        f = fleet_rows["power"]
        ok = f["gap"] is not None and f["gap"] <= 0.01 and f["time_s"] <= 30 and f["objective"] <= f["ffd"]
        print(f"{'PASS' if ok else 'FAIL'}  1,000-model fleet: gap <= 1% within 30 s, never worse than FFD")
        s = fleet_rows["spread"]
        ok = s["gap"] is not None and s["gap"] <= 0.01 and s["time_s"] <= 30 and s["objective"] <= s["ffd"]
        print(f"{'PASS' if ok else 'FAIL'}  1,000-model fleet, spread: gap <= 1% within 30 s, never worse than FFD")
        if args.twice:
            ok = all(same(fleet_rows[n], fleet_rows[n]["repeat"]) for n in ("power", "spread"))
            print(f"{'PASS' if ok else 'FAIL'}  1,000-model fleet: both modes repeat exactly (same packing)")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"fleet-{facts['date'][:10]}.json"
    path.write_text(json.dumps({"machine": facts, "triplets": rows, "fleet": fleet_rows}, indent=2) + "\n",
                    encoding="utf-8")
    print(f"\nmachine: {facts['cores']} cores, Python {facts['python']}, OR-Tools {facts['ortools']}, {facts['date']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
