"""Where the truth lies on the dnn latency inputs, part by part (docs/bounds.md, Parts).

The problem is cut at the clean cut ops where its tensors shrink
(:func:`solvers.scheduling.part_bound.part_cuts`, a CNN's stages). Per part:

* ``relaxed``: the forced-cut relaxation with contention terms of the part of the pruned graph
  the bounds use (:func:`~solvers.scheduling.part_bound.part_problems`), CP-SAT's open
  objective on one worker (``--relax-limit`` seconds): the part bound's terms;
* ``exact``: ``CpSatScheduler`` on that pruned part (``--time-limit`` seconds, one worker,
  deterministic): its objective and proven bound. The parts' proven bounds add up to a bound
  on the whole problem (module Notes of ``part_bound``);
* ``plan``: ``CpSatScheduler`` on the part of the *original* problem (every op, weight sources
  with the part of the op they feed), then the parts' schedules **stitched**: each shifted to
  the end of the cut op that opens it, its devices renamed within their class so that the
  opening cut op keeps its device and every device's weights over all parts fit its memory
  (best fit, heaviest device first). The result is checked by
  :func:`~solvers.scheduling.validate.validate_schedule`; a valid one is a plan of the whole.

Measured (2026-11-28, ResNet-50 operators, load 16-18 on 2 cores; see docs/bounds.md): the
pruned stages are proven optimal at 190.91 (300 s), 101.27, 71.20 and 24.88 ms, so the optimum
is at least 388.25 ms against the plan's 435.38.

Usage::

    PLAN_NET_SLOWDOWN=20 python benchmarks/dnn_parts.py --subset 'OperatorGraphs/resnet50*' --time-limit 30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import add_common_args, data_dir, print_table, select, write_results

__all__ = ["original_parts", "stitch", "run_parts", "main"]


def original_parts(problem, cut_names: list[str]):
    """Each op's part on the original problem, cut at the ops named ``cut_names`` (in order):
    the first cut op it precedes or is, else the part of its producers (free sinks), else the
    last. ``(part of each op, the cut ops)``, or None when an edge between two parts leaves
    from an op that is not a cut op."""
    from solvers.scheduling.structure import topological_order

    index = {n: i for i, n in enumerate(problem.op_names)}
    cuts = [index[n] for n in cut_names]
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        preds[v].append(u)
    part: list[int | None] = [None] * problem.num_ops
    for k in reversed(range(len(cuts))):  # the earliest cut op an op precedes wins
        stack, seen = [cuts[k]], {cuts[k]}
        while stack:
            x = stack.pop()
            part[x] = k
            for u in preds[x]:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
    for i in topological_order(problem):
        if part[i] is None:
            part[i] = max((part[u] for u in preds[i]), default=len(cuts))
    if any(part[u] != part[v] and u not in cuts for u, v, _ in problem.edges):
        return None
    return part, cuts


def _part_problem(problem, part, cuts, k):
    from solvers.scheduling.problem import SchedulingProblem

    ops = ([cuts[k - 1]] if k > 0 else []) + [i for i in range(problem.num_ops) if part[i] == k]
    idx = {o: j for j, o in enumerate(ops)}
    durations = [tuple(0 if (k > 0 and j == 0 and x >= 0) else x for x in problem.durations_cycles[o])
                 for j, o in enumerate(ops)]
    inside = [e for e, (u, v, _) in enumerate(problem.edges) if u in idx and v in idx]
    groups = tuple(g2 for g2 in (tuple(idx[i] for i in g if i in idx) for g in problem.colocation_groups)
                   if len(g2) > 1)
    sub = SchedulingProblem(tuple(durations), tuple((idx[problem.edges[e][0]], idx[problem.edges[e][1]],
                                                     problem.edges[e][2]) for e in inside),
                            problem.device_streams, problem.link_of, tuple(problem.transfer_cycles[e] for e in inside),
                            problem.objective, problem.device_memory_bytes,
                            tuple(problem.resident_bytes(o) for o in ops), (), groups, problem.device_class)
    return sub, ops, inside


def stitch(problem, pieces):
    """The parts' schedules ``pieces`` (``(ops, edges, schedule)`` per part, the opening cut op
    first from the second part on) as one schedule of ``problem`` (module docstring), or a
    sentence saying why not."""
    from solvers.scheduling.problem import ScheduledTransfer, SchedulingSolution

    n, nd = problem.num_ops, problem.num_devices
    dev, stream, start, dur = [0] * n, [0] * n, [0] * n, [0] * n
    cls = problem.device_class or tuple(range(nd))
    used = [0] * nd
    transfers = []
    offset = 0
    for k, (ops, edges, sol) in enumerate(pieces):
        own = range(1 if k else 0, len(ops))
        weight: dict[int, int] = {}
        for j in own:
            weight[sol.op_device[j]] = weight.get(sol.op_device[j], 0) + problem.resident_bytes(ops[j])
        rename: dict[int, int] = {}
        if k:
            if cls[sol.op_device[0]] != cls[dev[ops[0]]]:
                return f"part {k} opens on another device class"
            rename[sol.op_device[0]] = dev[ops[0]]
        for d in sorted(set(sol.op_device), key=lambda d: (-weight.get(d, 0), d)):
            if d in rename:
                continue
            need = weight.get(d, 0)
            fits = [x for x in range(nd) if cls[x] == cls[d] and x not in rename.values()
                    and (not problem.memory_bytes(x) or used[x] + need <= problem.memory_bytes(x))]
            if not fits:
                return f"part {k}: no device of its class holds {need} more bytes"
            rename[d] = min(fits, key=lambda x: (problem.memory_bytes(x) - used[x] if problem.memory_bytes(x)
                                                 else 1 << 62, x))
        for d, w in weight.items():
            used[rename[d]] += w
        for j in own:
            o = ops[j]
            dev[o], stream[o] = rename[sol.op_device[j]], sol.op_stream[j]
            start[o], dur[o] = offset + sol.op_start[j], sol.op_duration[j]
        for t in sol.transfers:
            e = edges[t.edge]
            u, v, _ = problem.edges[e]
            link = problem.link_of[dev[u]][dev[v]]
            transfers.append(ScheduledTransfer(e, link, offset + t.start_cycle, problem.transfer_cycles[e][link]))
        if k + 1 < len(pieces):
            nxt = pieces[k + 1][0][0]
            offset = start[nxt] + dur[nxt]
    return SchedulingSolution(tuple(dev), tuple(stream), tuple(start), tuple(dur),
                              tuple(sorted(transfers, key=lambda t: (t.start_cycle, t.edge))))


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
    from planner.importers.dnn_partitioning import CYCLES_PER_MS, dnn_to_spec, read_dnn_json
    from planner.reductions.scheduling import to_problem
    from planner.spec import load_spec
    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatScheduler
    from solvers.scheduling.bounds import bound_segments, lower_bound
    from solvers.scheduling.forced_cuts import memory_forces_cuts
    from solvers.scheduling.part_bound import part_cuts, part_problems
    from solvers.scheduling.validate import validate_schedule

    w = read_dnn_json(root / "dnn-partitioning" / "latency-inputs" / f"{rel}.json")
    problem, _ = to_problem(load_spec(dnn_to_spec(w, name=rel.split("/")[-1], objective="latency")))
    pruned, _ = bound_segments(problem)
    cuts = part_cuts(pruned)
    row: dict[str, Any] = {"instance": rel, "parts": []}
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
    found = original_parts(problem, [pruned.op_name(c) for c in cuts])
    if found is None:
        row["stitched_note"] = "an edge between two parts leaves from an op that is not a cut op"
        return row
    part, originals = found
    pieces = []
    for k in range(len(originals) + 1):
        sub, ops, edges = _part_problem(problem, part, originals, k)
        r = CpSatScheduler().solve(sub, opts)
        pieces.append((ops, edges, r.solution))
    whole = stitch(problem, pieces)
    if isinstance(whole, str):
        row["stitched_note"] = whole
    else:
        errors = validate_schedule(problem, whole)
        row["stitched"] = None if errors else whole.makespan_cycles * ms
        row["stitched_note"] = errors[0] if errors else "valid"
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap, time_limit=30.0)
    ap.add_argument("--relax-limit", type=float, default=60.0, help="seconds of CP-SAT per part relaxation")
    args = ap.parse_args(argv)
    root = data_dir(args.data)
    names = sorted(f"{p.parent.name}/{p.stem}" for p in (root / "dnn-partitioning" / "latency-inputs").glob("*/*.json"))
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
