"""The segment-run bound's own runs, realised as a plan (docs/bounds.md, ResNet-50 layers).

Which side is weak on a memory-forced dnn latency input: the bound's DP
(:mod:`solvers.scheduling.segment_runs` with the pinned moves and both sides' weight options,
:mod:`solvers.scheduling.move_arrivals`) or the plans? This script

1. proves the pinned moves and their weight options (``--units`` deterministic units each
   stage) and reports the bound;
2. traces the DP back with an independent exhaustive version of it (:func:`traced_runs`:
   states ``(pool, run start, weight units)`` with Pareto pruning; its value must equal the
   bound's, which checks both);
3. realises the runs (:func:`realised_placement`): each run on a fresh device of its pool,
   its cut ops and kept interior ops there; each device change's interior by the three-role
   model of its pinned move with the weight on a and b at most what their runs leave,
   shortest first, then least weight on the memory-limited ones (role E: a fresh accelerator
   per change);
4. schedules that placement exactly (``CpSatScheduler`` with every op pinned) and validates
   it on the original problem.

Measured (2026-11-28, ResNet-50 layers, load 15 on 2 cores): bound 903.54 ms; the realised
placement schedules to a valid **957.73 ms** (proven optimal for that placement), against the
benchmark's 999.78 and the stitched parts' 949.57 (``benchmarks/dnn_parts.py --search deterministic
--time-limit 60``). Its changes 78 -> 89 and 120 -> 129 cost
106.0 and 66.1 ms where the DP charged 70.1 and 47.9: the runs before them have less room
than the options' cell edges assumed.

Usage::

    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_runs.py --subset 'LayerGraphs/resnet50*'
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

from benchmarks._common import add_common_args, data_dir, print_table, select, write_results

__all__ = ["traced_runs", "realised_placement", "run_realised", "main"]


def _step_states(cur: dict, j: int, stays, moves, options, own, units, caps) -> dict:
    """The DP's states at cut op j from those at j - 1: ``(pool, run start, units) -> (time,
    back pointer)``, Pareto-pruned per pool over (units, time)."""
    nxt: dict = {}

    def put(key, value, back):
        if key not in nxt or value < nxt[key][0]:
            nxt[key] = (value, back)

    for (b, s, u), (t, _) in cur.items():
        for w, step, _ in stays[b][j - 1]:
            uu = u + units(w + own[j], b)
            if uu <= caps[b] and math.isfinite(step):
                put((b, s, uu), t + step, ("stay", (b, s, u)))
    for (a, s, u), (t, _) in cur.items():
        for b in range(len(caps)):
            choices = (options or {}).get((a, b)) or [(0, 0, 0.0)]
            for option in choices:
                wa, wb, step = option if len(option) == 3 else (option[0], 0, option[1])
                ub = units(own[j], b) + units(wb, b)
                step = max(float(step), float(moves[j - 1][a, b]))
                if u + units(wa, a) <= caps[a] and ub <= caps[b] and math.isfinite(step):
                    put((b, j, ub), t + step, ("move", (a, s, u), (wa, wb, step)))
    kept, best = {}, {}
    for key in sorted(nxt, key=lambda k: (k[0], k[2], nxt[k][0])):
        if nxt[key][0] < best.get(key[0], math.inf):
            best[key[0]] = nxt[key][0]
            kept[key] = nxt[key]
    return kept


def traced_runs(moves, tables, options) -> tuple[float, list[list]]:
    """The DP of ``segment_run_bound(moves.pruned, ..., move_floors=tables,
    move_options=options)`` traced back: ``(value, runs)``, each run ``[pool, first cut index,
    last cut index, the option of the change into it or None]``."""
    from solvers.scheduling import segment_runs as sr

    pools, first, mv, last, stays, own, total, _ = sr._run_terms(moves.pruned, moves.segments, moves.floors,
                                                                 moves.cuts, tables, with_masks=True)
    limited = [0 < c < total for c in pools.capacity]
    caps = [sr._UNITS if limited[b] else 0 for b in range(pools.size)]

    def units(w: int, b: int) -> int:
        return w * sr._UNITS // pools.capacity[b] if limited[b] else 0

    cur = {(b, 0, units(own[0], b)): (float(first[b]), None) for b in range(pools.size)
           if units(own[0], b) <= caps[b] and math.isfinite(first[b])}
    history = [cur]
    for j in range(1, len(own)):
        cur = _step_states(cur, j, stays, mv, options[j - 1] if options else None, own, units, caps)
        history.append(cur)
    if not cur:
        return math.inf, []
    value, key = min((t + float(last[k[0]]), k) for k, (t, _) in cur.items())
    runs: list[list] = []
    for j in range(len(own) - 1, -1, -1):
        _, back = history[j][key]
        if back is None or back[0] == "move":
            runs.append([key[0], j, None, back[2] if back else None])
        if back is None:
            break
        key = back[1]
    runs.reverse()
    for k, run in enumerate(runs):
        run[2] = runs[k + 1][1] - 1 if k + 1 < len(runs) else len(own) - 1
    return value, runs


def realised_placement(problem, moves, runs, cut_ops) -> list[int]:
    """A placement of ``problem`` (the pruned one, every op kept) from the traced runs (module
    docstring, step 3)."""
    from ortools.sat.python import cp_model

    from solvers.scheduling.move_arrivals import weight_on_sink
    from solvers.scheduling.move_weights import held_by_op, middle_segments
    from solvers.scheduling.move_weights import weight_on_source
    from solvers.scheduling.pinned_moves import pinned_move_problem, role_model

    held, middles = held_by_op(moves), middle_segments(moves)
    fresh = {k: iter(pool) for k, pool in enumerate(moves.pools.pools)}
    devices = [next(fresh[run[0]]) for run in runs]
    limited = [0 < problem.memory_bytes(d) < sum(held.values()) for d in range(problem.num_devices)]
    dev: list[int | None] = [None] * problem.num_ops
    for (_, first, last, _), d in zip(runs, devices):
        for j in range(first, last + 1):
            dev[cut_ops[j]] = d
        for j in range(first, last):
            for o in moves.segments[middles[j]][1][1:-1]:
                dev[o] = d
    for o in range(problem.num_ops):
        if o < cut_ops[0] or o > cut_ops[-1]:
            dev[o] = devices[0] if o < cut_ops[0] else devices[-1]
    used = [0] * problem.num_devices
    for o, d in enumerate(dev):
        if d is not None:
            used[d] += problem.resident_bytes(o)
    helpers = iter(d for d in moves.pools.pools[0] if d not in devices)
    for k in range(len(runs) - 1):
        j, a, b = runs[k][2], devices[k], devices[k + 1]
        sub, ops = moves.segments[middles[j]]
        inner = [held[o] for o in ops[1:-1]]
        built = role_model(pinned_move_problem(sub, a, b))
        on_a, _ = weight_on_source(built, inner)
        on_b, _ = weight_on_sink(built, inner)
        for side, d in ((on_a, a), (on_b, b)):
            if limited[d]:
                built.model.add(side <= problem.memory_bytes(d) - used[d])
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = 60
        solver.solve(built.model)
        built.model.add(built.makespan <= int(solver.objective_value))
        built.model.minimize((on_a if limited[a] else 0) + (on_b if limited[b] else 0))
        solver.solve(built.model)
        helper = next(helpers)
        for i, o in enumerate(ops[1:-1], start=1):
            role = next(r for r in range(3) if built.role[i][r] is not None and solver.value(built.role[i][r]))
            dev[o] = (a, b, helper)[role]
            used[dev[o]] += problem.resident_bytes(o)
    return [int(d) for d in dev]


def run_realised(root: Path, rel: str, args: argparse.Namespace) -> dict[str, Any]:
    from dataclasses import replace

    from planner.importers.dnn_partitioning import CYCLES_PER_MS, dnn_to_spec, read_dnn_json
    from planner.reductions.scheduling import to_problem
    from planner.spec import load_spec
    from solvers.budget import SCHEDULING, Budget
    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatScheduler
    from solvers.scheduling.move_arrivals import ARRIVALS, combined_options, move_arrival_bound
    from solvers.scheduling.pinned_moves import (WEIGHT_CELLS, move_floor_tables, move_proof_key, pinned_move_bound,
                                                 pinned_moves)
    from solvers.scheduling.validate import validate_schedule

    ms = 1 / CYCLES_PER_MS
    w = read_dnn_json(root / "dnn-partitioning" / "latency-inputs" / f"{rel}.json")
    problem, _ = to_problem(load_spec(dnn_to_spec(w, name=rel.split("/")[-1], objective="latency")))
    row: dict[str, Any] = {"instance": rel}
    one = SolveOptions(num_workers=1)
    memo: dict = {}
    t0 = time.perf_counter()
    row["pinned_bound"] = pinned_move_bound(problem, one, Budget.start(args.units, SCHEDULING), memo)[0] * ms
    row["bound"] = move_arrival_bound(problem, one, Budget.start(args.units, SCHEDULING), memo)[0] * ms
    moves = pinned_moves(problem)
    if moves is None or moves.pruned.num_ops != problem.num_ops:
        row["note"] = "no pinned moves, or the bound's problem drops ops"
        return row
    keys = [move_proof_key(p) for _, _, p in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    options = combined_options(moves, keys, memo, memo.get(WEIGHT_CELLS, {}), memo.get(ARRIVALS, {}))
    value, runs = traced_runs(moves, tables, options)
    row["traced"] = value * ms
    cut_ops = list(moves.cuts)
    row["runs"] = [(run[0], cut_ops[run[1]], cut_ops[run[2]]) for run in runs]
    placement = realised_placement(moves.pruned, moves, runs, cut_ops)
    rows = tuple(tuple(c if d == placement[i] else -1 for d, c in enumerate(r))
                 for i, r in enumerate(problem.durations_cycles))
    fixed = replace(problem, durations_cycles=rows, colocation_groups=(), device_class=())
    r = CpSatScheduler().solve(fixed, SolveOptions(time_limit_s=args.time_limit, num_workers=1,
                                                   random_seed=args.seed, search="deterministic"))
    row["plan"] = r.objective * ms if r.objective is not None else None
    row["plan_status"] = r.status.value
    row["valid"] = r.solution is not None and not validate_schedule(problem, r.solution)
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=30.0)
    ap.add_argument("--units", type=float, default=6.0, help="deterministic units for each bound stage")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    names = sorted(f"{p.parent.name}/{p.stem}" for p in (root / "dnn-partitioning" / "latency-inputs").glob("*/*.json"))
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
