"""The joint-cell DP's path realised as a plan (docs/bounds.md, session 14): how far the bound is
from a plan that follows it.

1. proves the pinned moves, their arrivals and the joint cells (``--units`` deterministic
   units each stage) and reports each bound;
2. traces the DP back (:func:`solvers.scheduling.joint_cells.traced_changes`);
3. places each run's cut ops and stay segments on a fresh device of its pool (every interior op
   of a stay on the run's device: the full option, which is what the DP takes on ResNet-50
   layers), and each device change's interior by its three-role model with both weights
   within the path's cell's upper edges and the bytes its two devices have left (exact, in
   path order), shortest step first, then least weight (role E: a fresh accelerator);
4. schedules that placement exactly (``CpSatScheduler``, every op pinned) and validates it on
   the original problem.

Measured (2026-11-29, ResNet-50 layers, load 11-17): bounds 873.08 / 903.54 / **930.26** ms
(joint cells in 8,192 units); the realised placement schedules to a valid **930.26 ms** (OPTIMAL
for that placement): the bound is the optimum. With the DP's 1,024 units the joint cells gave
915.86 and the realised path 934.16 (its last change overflowed by 0.3 MB and cost 66.15 for 47.85).

Usage::

    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_joint_path.py --subset 'LayerGraphs/resnet50*'
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (add_common_args, data_dir, dnn_input_names, latency_problem, print_table, select,
                               write_results)
from benchmarks.dnn_runs import placement_scheduled

__all__ = ["realised_path", "run_path", "main"]


def realised_path(problem, moves, memo, options, seed: int) -> tuple[list[int], list[tuple[float, float]]] | None:
    """A placement of ``problem`` (``moves.pruned``, every op kept) from the joint-cell DP's
    path (module docstring, step 3) and, per device change, (the DP's step, the realised
    step); None without a path."""
    from ortools.sat.python import cp_model

    from solvers.scheduling import segment_runs
    from solvers.scheduling.joint_cells import JOINT_CELLS, joint_options, traced_changes
    from solvers.scheduling.move_arrivals import weight_on_sink
    from solvers.scheduling.move_weights import held_by_op, middle_segments, weight_cell_keys, weight_on_source
    from solvers.scheduling.pinned_moves import move_floor_tables, move_proof_key, pinned_move_problem, role_model

    keys = [move_proof_key(p) for _, _, p in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(k, (0.0, False))[0] for k in keys])
    terms = segment_runs._run_terms(moves.pruned, moves.segments, moves.floors, moves.cuts, tables, with_masks=False)
    held, middles = held_by_op(moves), middle_segments(moves)
    joint, origins = joint_options(moves, keys, memo, memo.setdefault(JOINT_CELLS, {}), weight_cell_keys(moves, keys))
    value, changes = traced_changes(terms, joint)
    if not math.isfinite(value):
        return None
    cut = list(moves.cuts)
    bounds = [0] + [c.middle + 1 for c in changes] + [len(cut)]
    pools = [changes[0].source if changes else 0] + [c.sink for c in changes]
    fresh = {k: iter(pool) for k, pool in enumerate(moves.pools.pools)}
    devices = [next(fresh[k]) for k in pools]
    dev: list[int | None] = [None] * problem.num_ops
    for k, d in enumerate(devices):
        for j in range(bounds[k], bounds[k + 1]):
            dev[cut[j]] = d
        for j in range(bounds[k], bounds[k + 1] - 1):
            for o in moves.segments[middles[j]][1][1:-1]:
                dev[o] = d
    used = [0] * problem.num_devices
    for o, d in enumerate(dev):
        if d is not None:
            used[d] += problem.resident_bytes(o)
    spare = [d for d in moves.pools.pools[0] if d not in devices]  # fresh accelerators first, then any other
    helpers = iter(spare + [d for d in range(problem.num_devices) if d not in devices and d not in spare])
    steps = []
    for k, change in enumerate(changes):
        a, b = devices[k], devices[k + 1]
        sub, ops = moves.segments[middles[change.middle]]
        inner = [held[o] for o in ops[1:-1]]
        grid, edges = None, None
        if change.option >= 0:
            key, edges = origins[change.middle][(change.source, change.sink)][change.option]
            grid = memo[JOINT_CELLS][key]
        built = role_model(pinned_move_problem(sub, a, b))
        on_a, _ = weight_on_source(built, inner)
        on_b, _ = weight_on_sink(built, inner)
        for side, weight, d in ((0, on_a, a), (1, on_b, b)):
            upper = grid.upper(side, grid.index(side, edges[side])) if grid is not None else math.inf
            if math.isfinite(upper):
                built.model.add(weight <= int(upper) - 1)
            if 0 < problem.memory_bytes(d) < sum(held.values()):
                built.model.add(weight <= problem.memory_bytes(d) - used[d])
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = seed
        solver.parameters.max_time_in_seconds = 60
        if solver.solve(built.model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        step = int(solver.objective_value)
        built.model.add(built.makespan <= step)
        built.model.minimize(on_a + on_b)
        solver.solve(built.model)
        charged = (grid.step[(grid.index(0, edges[0]), grid.index(1, edges[1]))] if grid is not None
                   else float(tables[change.middle][change.source, change.sink]) if tables[change.middle] is not None
                   else math.nan)
        steps.append((charged, float(step)))
        helper = next(helpers)
        for i, o in enumerate(ops[1:-1], start=1):
            role = next(r for r in range(3) if built.role[i][r] is not None and solver.value(built.role[i][r]))
            dev[o] = (a, b, helper)[role]
            used[dev[o]] += problem.resident_bytes(o)
    for o in range(problem.num_ops):
        if dev[o] is None:
            dev[o] = devices[0] if o < cut[0] else devices[-1]
    return [int(d) for d in dev], steps


def run_path(root: Path, rel: str, args: argparse.Namespace) -> dict[str, Any]:
    from planner.importers.dnn_partitioning import CYCLES_PER_MS
    from solvers.budget import SCHEDULING, Budget
    from solvers.core import SolveOptions
    from solvers.scheduling.joint_cells import joint_cell_bound
    from solvers.scheduling.move_arrivals import move_arrival_bound
    from solvers.scheduling.pinned_moves import pinned_move_bound, pinned_moves

    ms = 1 / CYCLES_PER_MS
    _, problem = latency_problem(root, rel)
    row: dict[str, Any] = {"instance": rel}
    one = SolveOptions(num_workers=1)
    memo: dict = {}
    t0 = time.perf_counter()
    row["pinned_bound"] = pinned_move_bound(problem, one, Budget.start(args.units, SCHEDULING), memo)[0] * ms
    row["arrival_bound"] = move_arrival_bound(problem, one, Budget.start(args.units, SCHEDULING), memo)[0] * ms
    row["joint_bound"] = joint_cell_bound(problem, one, Budget.start(args.units, SCHEDULING), memo)[0] * ms
    moves = pinned_moves(problem)
    if moves is None or moves.pruned.num_ops != problem.num_ops:
        row["note"] = "no pinned moves, or the bound's problem drops ops"
        return row
    realised = realised_path(moves.pruned, moves, memo, one, args.seed)
    if realised is None:
        row["note"] = "no path, or a change without a placement in its cell"
        return row
    placement, steps = realised
    row["steps"] = [(round(a * ms, 3), round(b * ms, 3)) for a, b in steps]
    row.update(placement_scheduled(problem, placement, args, ms))
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
        print(f"{r['instance']}: changes (DP step, realised) {r.get('steps')} {r.get('note', '')}")
    print(f"results: {write_results('dnn-joint-path', rows, {}, args, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
