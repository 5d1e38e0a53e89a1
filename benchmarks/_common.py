"""Shared plumbing of the public benchmark suite: data location, machine facts, tables,
JSON results, and the adapter that solves an imported spec.

Data: ``<repo>/../shared/benchmarks`` unless ``--data`` or ``PLAN_BENCHMARK_DATA`` says
otherwise. Results: ``benchmarks/results/<family>-<date>.json`` (gitignored).

Solving an imported spec (:func:`solve_spec`) goes importer → spec dict →
``planner.spec.load_spec`` → the planner's scheduling reduction
(:func:`planner.reductions.scheduling.to_problem`) → the planner's own solve step
(:func:`planner.scheduling.best_of_heuristic_and_exact`: HEFT, then CP-SAT warm-started
from it). It stops there, to measure the solvers alone, and reports the solver's status
instead of raising on infeasibility or the time limit; with ``full=True`` it calls
:func:`planner.pipeline.run` (lowering, binaries and simulator replay included).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from benchmarks._machine import machine_facts

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: python benchmarks/stg.py
    sys.path.insert(0, str(REPO))

__all__ = ["REPO", "median_times", "data_dir", "machine_facts", "add_common_args", "select", "write_results",
           "print_table", "SpecRun", "solve_spec", "fmt"]


def median_times(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of ``repeat`` calls of ``fn``, and the last call's result.

    CPU time beside wall time because the benchmark machine is shared: under load, wall time
    measures the load more than the code.

    Examples
    --------
    >>> wall, cpu, out = median_times(lambda: sum(range(1000)), 3)
    >>> out, wall >= 0, cpu >= 0
    (499500, True, True)
    """
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - c)
        walls.append(time.perf_counter() - w)
    return statistics.median(walls), statistics.median(cpus), out


def data_dir(flag: str | None = None) -> Path:
    """The public benchmark data: ``--data``, else ``$PLAN_BENCHMARK_DATA``, else ``<repo>/../shared/benchmarks``.

    Examples
    --------
    >>> data_dir("/tmp").as_posix()
    '/tmp'
    """
    if flag:
        return Path(flag)
    env = os.environ.get("PLAN_BENCHMARK_DATA")
    return Path(env) if env else REPO.parent / "shared" / "benchmarks"


def add_common_args(p: argparse.ArgumentParser, time_limit: float) -> None:
    """``--data``, ``--time-limit``, ``--subset``, ``--workers``, ``--seed``, ``--out``, ``--full-pipeline``."""
    p.add_argument("--data", help="benchmark data directory (default: <repo>/../shared/benchmarks "
                                  "or $PLAN_BENCHMARK_DATA)")
    p.add_argument("--time-limit", type=float, default=time_limit, help="seconds per instance")
    p.add_argument("--subset", default=None,
                   help="an integer N (N instances spread over each group) or a name pattern (fnmatch)")
    p.add_argument("--workers", type=int, default=2, help="CP-SAT workers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="results JSON path (default benchmarks/results/<family>-<date>.json)")
    p.add_argument("--full-pipeline", action="store_true",
                   help="solve through planner.pipeline.run (lowering and simulator replay included)")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    p.add_argument("--search", choices=("deterministic", "until-limit"), default="until-limit",
                   help="until-limit (default here): search until each instance's time limit, as published "
                        "results do (not reproducible); deterministic: the planner's default budget")
    p.add_argument("--dtime-per-second", type=float, default=None,
                   help="with --search deterministic: CP-SAT deterministic time per second of the limit and "
                        "worker (default: the scheduling family's calibration, solvers.budget.SCHEDULING)")


def select(names: Sequence[str], subset: str | None, per_group: bool = True) -> list[str]:
    """Apply ``--subset``: an integer N keeps N names spread evenly; otherwise an fnmatch pattern.

    Examples
    --------
    >>> select([f"i{k}" for k in range(10)], "3")
    ['i0', 'i3', 'i6']
    >>> select(["ft06", "ft10", "la01"], "ft*")
    ['ft06', 'ft10']
    """
    if subset is None:
        return list(names)
    if subset.isdigit():
        n = int(subset)
        if n >= len(names):
            return list(names)
        return [names[(i * len(names)) // n] for i in range(n)]
    pats = subset.split(",")
    return [x for x in names if any(fnmatch.fnmatch(x, p) for p in pats)]


def dnn_input_names(root: Path, kind: str = "latency-inputs") -> list[str]:
    """The dnn-partitioning inputs of ``kind`` (``latency-inputs`` or ``throughput-inputs``)
    under ``root``, as ``group/name``, sorted."""
    base = root / "dnn-partitioning" / kind
    return sorted(f"{p.parent.name}/{p.stem}" for p in base.glob("*/*.json"))


def latency_problem(root: Path, rel: str) -> tuple[Any, Any]:
    """(the workload, the scheduling problem) of the dnn latency input ``rel`` under ``root``,
    imported as ``plan`` imports it (objective latency)."""
    from planner.importers.dnn_partitioning import dnn_to_spec, read_dnn_json
    from planner.reductions.scheduling import to_problem
    from planner.spec import load_spec

    w = read_dnn_json(root / "dnn-partitioning" / "latency-inputs" / f"{rel}.json")
    problem, _ = to_problem(load_spec(dnn_to_spec(w, name=rel.split("/")[-1], objective="latency")))
    return w, problem


def write_results(family: str, rows: list[dict[str, Any]], summary: dict[str, Any],
                  args: argparse.Namespace, out: str | None = None) -> Path:
    """Write ``{"family", "machine", "settings", "summary", "instances"}`` as JSON."""
    facts = machine_facts()
    path = Path(out) if out else REPO / "benchmarks" / "results" / f"{family}-{facts['date'][:10]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in sorted(vars(args).items()) if not k.startswith("_")}
    payload = {"family": family, "machine": facts, "settings": settings, "summary": summary,
               "instances": rows}
    path.write_text(json.dumps(payload, indent=1, default=str))
    return path


def fmt(x: Any, digits: int = 3) -> str:
    """Table cell text.

    >>> fmt(None), fmt(0.12345), fmt(7), fmt(True)
    ('-', '0.123', '7', 'yes')
    """
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A plain fixed-width table on stdout (benchmarks may print)."""
    rows = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    print(f"\n{title}")
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    sys.stdout.flush()


@dataclass
class SpecRun:
    """What one solve of an imported spec reports (objective and bound in timeline cycles)."""

    status: str
    objective: int | None
    bound: int | None
    heuristic: int | None
    wall_time_s: float
    stats: dict[str, Any]
    solution: Any = None
    problem: Any = None
    reduction: Any = None


def solve_spec(spec: dict[str, Any], *, time_limit_s: float, workers: int = 2, seed: int = 0,
               full: bool = False, dtime_per_second: float | None = None,
               search: str = "deterministic") -> SpecRun:
    """Solve an importer's spec dict the way the planner does (see the module notes)."""
    t0 = time.perf_counter()
    if full:
        from planner.pipeline import run

        out = run(spec, time_limit_s=time_limit_s, workers=workers, seed=seed, search=search)
        plan = out.plan
        return SpecRun(plan.status, plan.objective, plan.bound, plan.heuristic_objective,
                       time.perf_counter() - t0, dict(out.result.stats), out.result.solution,
                       out.problem, out.reduction)
    from planner.reductions.scheduling import to_problem
    from planner.scheduling import best_of_heuristic_and_exact
    from planner.spec import load_spec
    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatOptions, CpSatScheduler, HeftScheduler

    problem, reduction = to_problem(load_spec(spec))
    opts = SolveOptions(time_limit_s=time_limit_s, num_workers=workers, random_seed=seed, search=search)
    cfg = CpSatOptions() if dtime_per_second is None else CpSatOptions(dtime_per_second=dtime_per_second)
    heur, res = best_of_heuristic_and_exact(problem, opts, solvers=(HeftScheduler(), CpSatScheduler(cfg)))
    obj = None if res.objective is None else int(res.objective)
    bound = None if res.bound is None else int(res.bound)
    return SpecRun(res.status.value, obj, bound,
                   int(heur.objective) if heur.status.has_solution else None,
                   time.perf_counter() - t0, dict(res.stats), res.solution, problem, reduction)
