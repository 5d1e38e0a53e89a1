"""Any registered solvers on the same problems, in one table: objective, bound, gap, time.

Solvers are named by their registry keys (:mod:`solvers.registry`); problems are the
scheduling problems of specs (the planner's reduction, ``planner.reductions.scheduling.to_problem``) and
of STG instances (``planner.importers.stg``). A solver that refuses a problem
(``accepts``) gets a row saying why instead of a run. Every solve stops on its
deterministic budget, so objectives and bounds repeat on a busy machine; only the time
column depends on the load (printed beside the table).

Usage::

    python -m benchmarks.solvers_table                      # every scheduling.* solver, demo + 2 STG
    python -m benchmarks.solvers_table --solvers scheduling.heft,scheduling.portfolio \\
        --problems specs/demo.yaml,stg:50/rand0001.stg@4 --time-limit 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import REPO, data_dir, machine_facts, print_table, write_results

__all__ = ["DEFAULT_PROBLEMS", "load_problem", "run_row", "main"]

# The demo spec and two STG graphs (50 tasks on 4 processors, 100 tasks on 8).
DEFAULT_PROBLEMS = ("specs/demo.yaml", "stg:50/rand0000.stg@4", "stg:100/rand0000.stg@8")


def load_problem(ref: str, data: Path) -> Any:
    """The scheduling problem of ``ref``: a spec path, or ``stg:<file>@<processors>`` under ``data``."""
    from planner.reductions.scheduling import to_problem
    from planner.spec import load_spec

    if ref.startswith("stg:"):
        from planner.importers.stg import read_stg, stg_to_spec

        name, _, procs = ref[len("stg:"):].partition("@")
        spec = stg_to_spec(read_stg(data / "stg" / name), int(procs or 2), name=Path(name).stem)
        return to_problem(load_spec(spec))[0]
    path = Path(ref)
    return to_problem(load_spec(path if path.is_absolute() else REPO / path))[0]


def run_row(problem_ref: str, problem: Any, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Solve ``problem`` with the registry's ``name`` (or record its refusal) as one table row."""
    from solvers import registry
    from solvers.core import SolveOptions

    solver = registry.get(name)
    row: dict[str, Any] = {"problem": problem_ref, "solver": name}
    refusal = solver.refusal(problem)
    if refusal is not None:
        return {**row, "status": "refused", "reason": refusal}
    options = SolveOptions(time_limit_s=args.time_limit, num_workers=args.workers, random_seed=args.seed,
                           search=args.search)
    t0 = time.perf_counter()
    result = solver.solve(problem, options)
    return {**row, "status": result.status.value, "objective": result.objective, "bound": result.bound,
            "gap": result.gap, "time_s": round(time.perf_counter() - t0, 3),
            "stopped_by": result.stats.get("stopped_by")}


def main(argv: list[str] | None = None) -> int:
    from solvers import registry

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solvers", default=",".join(registry.names("scheduling")),
                    help="registry names, comma-separated (default: every scheduling.* solver)")
    ap.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS),
                    help="spec paths and stg:<file>@<processors>, comma-separated")
    ap.add_argument("--data", help="benchmark data directory (default: <repo>/../shared/benchmarks)")
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds per solve")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--search", default="deterministic", choices=("deterministic", "until-limit"))
    ap.add_argument("--out", help="JSON results path (default: benchmarks/results/solvers-<date>.json)")
    args = ap.parse_args(argv)
    names = [n for n in args.solvers.split(",") if n]
    unknown = [n for n in names if n not in registry.SOLVERS]
    if unknown:
        ap.error(f"unknown solvers {unknown}; registered: {', '.join(registry.names())}")
    data = data_dir(args.data)
    rows = []
    for ref in (r for r in args.problems.split(",") if r):
        problem = load_problem(ref, data)
        rows += [run_row(ref, problem, name, args) for name in names]
    load = machine_facts()["load_average"]
    print_table(f"solvers on the same problems ({args.search}, {args.time_limit:g} s, {args.workers} worker(s); "
                f"load average {load})",
                ["problem", "solver", "status", "objective", "bound", "gap", "time_s", "note"],
                [[r["problem"], r["solver"], r["status"], r.get("objective"), r.get("bound"), r.get("gap"),
                  r.get("time_s"), r.get("reason") or r.get("stopped_by")] for r in rows])
    path = write_results("solvers", rows, {"load_average": load}, args, args.out)
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
