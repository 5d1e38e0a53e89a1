"""Where the truth lies on the dnn latency inputs, part by part (docs/bounds.md, Parts).

The problem is cut at the clean cut ops where its tensors shrink
(:func:`solvers.scheduling.part_bound.part_cuts`, a CNN's stages). Per part:

* ``relaxed``: the forced-cut relaxation with contention terms of the part of the pruned graph
  the bounds use (:func:`~solvers.scheduling.part_bound.part_problems`), CP-SAT's open
  objective on one worker (``--relax-limit`` seconds): the part bound's terms;
* ``exact``: ``CpSatScheduler`` on that pruned part (``--time-limit`` seconds, one worker,
  deterministic): its objective and proven bound. The parts' proven bounds add up to a bound
  on the whole problem (module Notes of ``part_bound``);
* ``plan``: the parts of the *original* problem (every op; weight sources with the part of the
  op they feed; :func:`solvers.scheduling.part_start.original_parts`) solved **one after
  another**, each by ``CpSatScheduler`` on what the earlier parts left of every device's memory,
  with the cut op that opens it pinned to its device, and **stitched**
  (:func:`solvers.scheduling.part_start.stitched`): each part's schedule shifted to where the
  part before ended. The parts run in
  disjoint windows, so links and streams never meet, and memory fits by construction; the
  result is checked by :func:`~solvers.scheduling.validate.validate_schedule`. (Solving the
  parts on fresh devices and renaming them afterwards does not fit: a part fills the device its
  opening cut op already shares with the part before.)

Measured (2026-11-28, ResNet-50 operators, load 16-18 on 2 cores; see docs/bounds.md): the
pruned stages are proven optimal at 190.91 (300 s), 101.27, 71.20 and 24.88 ms, so the optimum
is at least 388.25 ms against the plan's 435.38; with 30 s per part (one worker) the stitched
plan is 411.25 ms (198.55 + 113.23 + 74.59 + 24.88), valid.

Usage::

    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_parts.py --subset 'OperatorGraphs/resnet50*' --time-limit 30
    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_parts.py --subset 'LayerGraphs/inception*' --cuts 17
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (add_common_args, data_dir, dnn_input_names, latency_problem, print_table, select,
                               write_results)

__all__ = ["run_parts", "main"]


def _relaxed(sub, seconds: float) -> tuple[float, float]:
    from ortools.sat.python import cp_model

    from solvers.scheduling.forced import restrict_placements
    from solvers.scheduling.forced_cuts import forced_cut_model

    built = forced_cut_model(restrict_placements(sub), 0, contention=True)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    solver.solve(built.model)
    return solver.objective_value, solver.best_objective_bound


def run_parts(root: Path, rel: str, args: argparse.Namespace) -> dict[str, Any]:
    from planner.importers.dnn_partitioning import CYCLES_PER_MS
    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatScheduler
    from solvers.scheduling.bounds import bound_segments, lower_bound
    from solvers.scheduling.forced_cuts import memory_forces_cuts
    from solvers.scheduling.part_bound import part_cuts, part_problems
    from solvers.scheduling.part_start import original_parts, stitched

    _, problem = latency_problem(root, rel)
    pruned, _ = bound_segments(problem)
    cuts = tuple(int(c) for c in args.cuts.split(",")) if args.cuts else part_cuts(pruned)
    row: dict[str, Any] = {"instance": rel, "parts": [], "cuts": list(cuts)}
    if not cuts:
        return row
    opts = SolveOptions(time_limit_s=args.time_limit, num_workers=1, random_seed=args.seed, search="deterministic")
    ms = 1 / CYCLES_PER_MS
    for sub, ops in part_problems(pruned, cuts):
        t0 = time.perf_counter()
        relaxed = _relaxed(sub, args.relax_limit)[1] if memory_forces_cuts(sub) else lower_bound(sub)
        r = CpSatScheduler().solve(sub, opts)
        row["parts"].append({"ops": len(ops), "relaxed": relaxed * ms, "exact": r.objective * ms,
                             "exact_bound": r.bound * ms, "exact_status": r.status.value,
                             "wall_s": round(time.perf_counter() - t0, 1)})
    row["relaxed_sum"] = sum(p["relaxed"] for p in row["parts"])
    row["proven_sum"] = sum(p["exact_bound"] for p in row["parts"])
    index = {n: i for i, n in enumerate(problem.op_names)}
    originals = [index[pruned.op_name(c)] for c in cuts]
    part = original_parts(problem, originals)
    if part is None:
        row["stitched_note"] = "an edge between two parts leaves from an op that is not a cut op"
        return row
    whole = stitched(problem, part, originals, lambda k, sub, ops, edges: CpSatScheduler().solve(sub, opts).solution)
    row["stitched"] = None if whole is None else whole.makespan_cycles * ms
    row["stitched_note"] = "valid" if whole is not None else "a part has no schedule, or the stitched one is not valid"
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=30.0)
    ap.add_argument("--relax-limit", type=float, default=60.0, help="seconds of CP-SAT per part relaxation")
    ap.add_argument("--cuts", default=None,
                    help="comma-separated clean cut ops of the pruned graph to cut at (default: part_cuts), "
                         "e.g. 17: Inception-V3 layers' stem and the rest (docs/bounds.md, session 15)")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    names = dnn_input_names(root)
    rows = [run_parts(root, rel, args) for rel in select(names, args.subset or "OperatorGraphs/resnet50*")]
    print_table("Parts (ms): relaxation with contention, exact part solve (objective / proven bound)",
                ["input", "part", "ops", "relaxed", "exact", "proven", "status"],
                [[r["instance"], k, p["ops"], p["relaxed"], p["exact"], p["exact_bound"], p["exact_status"]]
                 for r in rows for k, p in enumerate(r["parts"])])
    for r in rows:
        print(f"{r['instance']}: relaxed sum {r.get('relaxed_sum')}, proven sum {r.get('proven_sum')}, "
              f"stitched plan {r.get('stitched')} ({r.get('stitched_note')})")
    print(f"results: {write_results('dnn-parts', rows, {}, args, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
