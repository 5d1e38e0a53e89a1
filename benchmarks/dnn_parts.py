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
  op they feed) solved **one after another**, each by ``CpSatScheduler`` on what the earlier
  parts left of every device's memory, with the cut op that opens it pinned to its device, and
  **stitched**: each part's schedule shifted to the end of that cut op. The parts run in
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

__all__ = ["original_parts", "stitched_plan", "run_parts", "main"]


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


def _part_problem(problem, part, cuts, k, device, used):
    """Part k of the original problem on what the earlier parts left (``used`` bytes per device),
    its opening cut op pinned to ``device`` (its device in the part before) and weightless there:
    (problem, its ops, the original index of each of its edges)."""
    from solvers.scheduling.problem import FORBIDDEN, SchedulingProblem

    nd = problem.num_devices
    ops = ([cuts[k - 1]] if k > 0 else []) + [i for i in range(problem.num_ops) if part[i] == k]
    idx = {o: j for j, o in enumerate(ops)}
    durations = [problem.durations_cycles[o] for o in ops]
    if k > 0:
        durations[0] = tuple(0 if d == device else FORBIDDEN for d in range(nd))
    inside = [e for e, (u, v, _) in enumerate(problem.edges) if u in idx and v in idx]
    groups = tuple(g2 for g2 in (tuple(idx[i] for i in g if i in idx) for g in problem.colocation_groups)
                   if len(g2) > 1)
    cap = tuple(max(1, problem.memory_bytes(d) - used[d]) if problem.memory_bytes(d) else 0 for d in range(nd))
    kinds = problem.device_class or tuple(range(nd))
    classes: dict[tuple, int] = {}  # devices stay interchangeable only with equal room left
    dclass = tuple(classes.setdefault((kinds[d], cap[d], k > 0 and d == device), len(classes)) for d in range(nd))
    resident = tuple(0 if (k > 0 and j == 0) else problem.resident_bytes(o) for j, o in enumerate(ops))
    sub = SchedulingProblem(tuple(durations), tuple((idx[problem.edges[e][0]], idx[problem.edges[e][1]],
                                                     problem.edges[e][2]) for e in inside),
                            problem.device_streams, problem.link_of, tuple(problem.transfer_cycles[e] for e in inside),
                            problem.objective, cap, resident, (), groups, dclass)
    return sub, ops, inside


def stitched_plan(problem, part, cuts, solve):
    """The parts solved one after another by ``solve(part problem) -> schedule or None`` and
    stitched (module docstring): a schedule of ``problem``, or a sentence saying why not."""
    from solvers.scheduling.problem import ScheduledTransfer, SchedulingSolution

    n = problem.num_ops
    dev, stream, start, dur = [0] * n, [0] * n, [0] * n, [0] * n
    used = [0] * problem.num_devices
    transfers, offset = [], 0
    for k in range(len(cuts) + 1):
        sub, ops, inside = _part_problem(problem, part, cuts, k, dev[cuts[k - 1]] if k else -1, used)
        sol = solve(sub)
        if sol is None:
            return f"part {k}: no schedule"
        for j in range(1 if k else 0, len(ops)):
            o = ops[j]
            dev[o], stream[o] = sol.op_device[j], sol.op_stream[j]
            start[o], dur[o] = offset + sol.op_start[j], sol.op_duration[j]
            used[dev[o]] += problem.resident_bytes(o)
        transfers += [ScheduledTransfer(inside[t.edge], t.link, offset + t.start_cycle, t.duration_cycles)
                      for t in sol.transfers]
        if k < len(cuts):
            offset = start[cuts[k]] + dur[cuts[k]]
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
    whole = stitched_plan(problem, part, originals, lambda sub: CpSatScheduler().solve(sub, opts).solution)
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
