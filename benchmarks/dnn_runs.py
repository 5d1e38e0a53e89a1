"""The segment-run bound's own runs, realised as a plan (docs/bounds.md, ResNet-50 layers).

Which side is weak on a memory-forced dnn latency input: the bound's DP
(:mod:`solvers.scheduling.segment_runs` with the pinned moves and both sides' weight options,
:mod:`solvers.scheduling.move_arrivals`) or the plans? This script

1. proves the pinned moves and their weight options (``--units`` deterministic units each
   stage) and reports the bound;
2. traces the DP back (:func:`solvers.scheduling.traced_start.traced_runs`: states ``(pool,
   run start, weight units)`` with Pareto pruning; its value must equal the bound's, which
   checks both);
3. realises the runs (:func:`solvers.scheduling.traced_start.realised_placement`): each run on
   a fresh device of its pool, its cut ops and kept interior ops there; each device change's
   interior by the three-role model of its pinned move with the weight on a and b at most what
   their runs leave, shortest first, then least weight on the memory-limited ones (role E: a
   fresh accelerator per change);
4. schedules that placement exactly (``CpSatScheduler`` with every op pinned) and validates
   it on the original problem.

Measured (2026-11-28, ResNet-50 layers, load 15 on 2 cores): bound 903.54 ms; the realised
placement schedules to a valid **957.73 ms** (proven optimal for that placement), against the
benchmark's 999.78 and the stitched parts' 949.57 (``benchmarks/dnn_parts.py --search deterministic
--time-limit 60``). Its changes 78 -> 89 and 120 -> 129 cost
106.0 and 66.1 ms where the DP charged 70.1 and 47.9: the runs before them have less room
than the options' cell edges assumed. The scheduler does this within its budget as a start
(:mod:`solvers.scheduling.traced_start`, which also traces the DP with the source cells at their
upper edges: 947.19 ms there).

Usage::

    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_runs.py --subset 'LayerGraphs/resnet50*'
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

__all__ = ["run_realised", "proved_moves", "placement_scheduled", "main"]


def run_realised(root: Path, rel: str, args: argparse.Namespace) -> dict[str, Any]:
    from planner.importers.dnn_partitioning import CYCLES_PER_MS
    from solvers.budget import SCHEDULING, Budget
    from solvers.core import SolveOptions
    from solvers.scheduling.move_arrivals import ARRIVALS, combined_options
    from solvers.scheduling.pinned_moves import WEIGHT_CELLS, move_floor_tables, move_proof_key
    from solvers.scheduling.traced_start import realised_placement, traced_runs

    ms = 1 / CYCLES_PER_MS
    _, problem = latency_problem(root, rel)
    row: dict[str, Any] = {"instance": rel}
    one = SolveOptions(num_workers=1)
    memo: dict = {}
    t0 = time.perf_counter()
    pinned, arrival, moves = proved_moves(problem, one, args.units, memo)
    row.update(pinned_bound=pinned * ms, bound=arrival * ms)
    if moves is None:
        row["note"] = "no pinned moves, or the bound's problem drops ops"
        return row
    keys = [move_proof_key(p) for _, _, p in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    options = combined_options(moves, keys, memo, memo.get(WEIGHT_CELLS, {}), memo.get(ARRIVALS, {}))
    value, runs = traced_runs(moves, tables, options)
    row["traced"] = value * ms
    cut_ops = list(moves.cuts)
    row["runs"] = [(run[0], cut_ops[run[1]], cut_ops[run[2]]) for run in runs]
    placement = realised_placement(moves.pruned, moves, runs, one, Budget.start(args.units, SCHEDULING))
    row.update(placement_scheduled(problem, placement, args, ms))
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def proved_moves(problem: Any, options: Any, units: float, memo: dict) -> tuple[int, int, Any]:
    """The pinned moves and their arrivals proved on ``problem`` (``units`` deterministic units
    each, into ``memo``): (the pinned-move bound, the arrival bound, in cycles; the pinned moves,
    or None when there are none or their problem drops ops, so no placement can follow them)."""
    from solvers.budget import SCHEDULING, Budget
    from solvers.scheduling.move_arrivals import move_arrival_bound
    from solvers.scheduling.pinned_moves import pinned_move_bound, pinned_moves

    pinned = pinned_move_bound(problem, options, Budget.start(units, SCHEDULING), memo)[0]
    arrival = move_arrival_bound(problem, options, Budget.start(units, SCHEDULING), memo)[0]
    moves = pinned_moves(problem)
    if moves is None or moves.pruned.num_ops != problem.num_ops:
        return pinned, arrival, None
    return pinned, arrival, moves


def placement_scheduled(problem: Any, placement: list[int], args: argparse.Namespace, ms: float) -> dict[str, Any]:
    """``placement`` scheduled exactly (CP-SAT with every op on its device, one worker,
    deterministic, ``args.time_limit``): the plan in ms, the solver's status, and whether the
    schedule is valid for ``problem`` (its memory included)."""
    from dataclasses import replace

    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatScheduler
    from solvers.scheduling.validate import validate_schedule

    rows = tuple(tuple(c if d == placement[i] else -1 for d, c in enumerate(r))
                 for i, r in enumerate(problem.durations_cycles))
    fixed = replace(problem, durations_cycles=rows, colocation_groups=(), device_class=())
    r = CpSatScheduler().solve(fixed, SolveOptions(time_limit_s=args.time_limit, num_workers=1,
                                                   random_seed=args.seed, search="deterministic"))
    return {"plan": r.objective * ms if r.objective is not None else None, "plan_status": r.status.value,
            "valid": r.solution is not None and not validate_schedule(problem, r.solution)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=30.0)
    ap.add_argument("--units", type=float, default=6.0, help="deterministic units for each bound stage")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    names = dnn_input_names(root)
    rows = [run_realised(root, rel, args) for rel in select(names, args.subset or "LayerGraphs/resnet50*")]
    print_table("The segment-run DP's runs realised (ms)",
                ["input", "pinned DP", "bound", "traced", "plan", "status", "valid"],
                [[r["instance"], r.get("pinned_bound"), r.get("bound"), r.get("traced"), r.get("plan"),
                  r.get("plan_status"), r.get("valid")] for r in rows])
    for r in rows:
        print(f"{r['instance']}: runs {r.get('runs')} {r.get('note', '')}")
    print(f"results: {write_results('dnn-runs', rows, {}, args, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
