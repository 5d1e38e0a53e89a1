"""The joint-cell DP's path realised as a plan (docs/bounds.md, session 14): how far the bound is
from a plan that follows it.

1. proves the pinned moves, their arrivals and the joint cells (``--units`` deterministic
   units each stage) and reports each bound;
2. traces the DP back and realises its path as a placement
   (:func:`solvers.scheduling.joint_path_start.path_placement`, the scheduler's start: each run's
   cut ops and stay segments on a fresh device of its pool, each device change's interior by its
   three-role model with both weights within the path's cell's upper edges and the bytes its two
   devices have left, shortest step first, then least weight; role E on a fresh accelerator;
   ``--units`` for its role solves);
3. schedules that placement exactly (``CpSatScheduler``, every op pinned) and validates it on
   the original problem.

Measured (2026-11-29, ResNet-50 layers, load 11-17): bounds 873.08 / 903.54 / **930.26** ms
(joint cells in 8,192 units); the realised placement schedules to a valid **930.26 ms** (OPTIMAL
for that placement): the bound is the optimum. With the DP's 1,024 units the joint cells gave
915.86 and the realised path 934.16 (its last change overflowed by 0.3 MB and cost 66.15 for 47.85).
Since session 15 the realisation lives in the scheduler (:mod:`solvers.scheduling.joint_path_start`,
deterministic role solves); the 60-s benchmark returns the 930.26-ms plan as OPTIMAL.

Usage::

    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_joint_path.py --subset 'LayerGraphs/resnet50*'
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
from benchmarks.dnn_runs import placement_scheduled, proved_moves

__all__ = ["run_path", "main"]


def run_path(root: Path, rel: str, args: argparse.Namespace) -> dict[str, Any]:
    from planner.importers.dnn_partitioning import CYCLES_PER_MS
    from solvers.budget import SCHEDULING, Budget
    from solvers.core import SolveOptions
    from solvers.scheduling.joint_cells import joint_cell_bound
    from solvers.scheduling.joint_path_start import path_placement

    ms = 1 / CYCLES_PER_MS
    _, problem = latency_problem(root, rel)
    row: dict[str, Any] = {"instance": rel}
    one = SolveOptions(num_workers=1)
    memo: dict = {}
    t0 = time.perf_counter()
    pinned, arrival, moves = proved_moves(problem, one, args.units, memo)
    row.update(pinned_bound=pinned * ms, arrival_bound=arrival * ms)
    row["joint_bound"] = joint_cell_bound(problem, one, Budget.start(args.units, SCHEDULING), memo)[0] * ms
    if moves is None:
        row["note"] = "no pinned moves, or the bound's problem drops ops"
        return row
    placement = path_placement(moves.pruned, moves, memo, one, Budget.start(args.units, SCHEDULING))
    if placement is None:
        row["note"] = "no path, or a change without a placement in its cell"
        return row
    row.update(placement_scheduled(problem, list(placement), args, ms))
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=30.0)
    ap.add_argument("--units", type=float, default=6.0, help="deterministic units for each bound stage")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    names = dnn_input_names(root)
    rows = [run_path(root, rel, args) for rel in select(names, args.subset or "LayerGraphs/resnet50*")]
    print_table("The joint-cell DP's path realised (ms)",
                ["input", "pinned DP", "arrivals", "joint cells", "plan", "status", "valid"],
                [[r["instance"], r.get("pinned_bound"), r.get("arrival_bound"), r.get("joint_bound"), r.get("plan"),
                  r.get("plan_status"), r.get("valid")] for r in rows])
    for r in rows:
        if r.get("note"):
            print(f"{r['instance']}: {r['note']}")
    print(f"results: {write_results('dnn-joint-path', rows, {}, args, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
