"""Re-placement benchmark (issue 13): recovery after a slowdown, re-solve cost, and no churn under noise.

For each spec: solve it cold (``plan solve SPEC -o DIR --json``), replay the plan with one device
slowed 2x (``plan simulate --slow``'s what-if replay), re-plan from those statistics (``plan replan
DIR --stats S --spec SPEC -o NEW --json``), and replay the new plan with the same slowdown. Then
replay the original with ±5% noise and no slowdown (``--noise 5``, seeds 0-4) and re-plan each:
nothing should move. Also recorded: the moves the move-back pass put back (``moved back``,
:mod:`planner.replan.churn`) and what the exact re-solve did (``exact``: ``skipped`` when it had
nothing worth having to gain).

What is timed, on both sides the same way (median of ``--repeats``):

- **command**: the whole command, run in this process through the CLI (Typer's test runner),
  so Python's start-up and the modules' first import are excluded on both sides (about 1.2 s per
  process on the reference machine: more than a small spec's whole solve). ``plan solve``: load
  the spec, solve, lower, replay, write and verify the directory, numeric replay by default.
  ``plan replan``: load the spec, verify the input directory, read the statistics, the
  predictions, the final schedule, lower, replay, write and verify the new directory, numeric
  replay by default. Wall and CPU seconds (CPU: every thread of the process, so the solver's
  workers count; less sensitive to the machine's load than wall).
- **solve stage**: the ``solve`` stage of each command's ``stages_s`` (``plan solve``: the
  reduction and the solve; ``plan replan``: the reduction, both predictions and the final
  schedule of the chosen placement).
- **budget**: the re-plan's limit over the cold solve's limit (a tenth by default).

Targets: the new plan recovers at least half of the loss,
``(slowed - new slowed) / (slowed - planned) >= 0.5``; the re-plan takes at most 10% of the cold
solve; no op moves under noise.

Run: ``python -m benchmarks.replan [--only throughput] [--repeats 3]``. Prints ``uptime``'s load
beside the numbers; the results go to ``benchmarks/results/replan-<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from benchmarks._common import REPO, print_table, write_results
from planner.cli import app
from planner.replan.stats import dumps, what_if_stats
from planner.spec import load_spec
from planner.verify import verify_plan_dir

__all__ = ["CASES", "measure", "main"]

# spec -> the device slowed 2x (the busiest one of the plan, so the loss is real)
CASES = {"throughput": "npu0", "demo": "big0"}


def _load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def _stats(plan_dir: Path, out: Path, slow: str | None, noise: float = 0.0, seed: int = 0) -> tuple[int, Path]:
    replay, doc = what_if_stats(verify_plan_dir(plan_dir), slow, noise, seed)
    out.write_text(dumps(doc))
    return replay.makespan_cycles, out


def _objective_slowed(plan_dir: Path, slow: str) -> int:
    """The what-if replay's figure for the plan's objective: the makespan (latency) or the busiest device's
    measured load (throughput)."""
    verdict = verify_plan_dir(plan_dir)
    replay, _ = what_if_stats(verdict, slow, 0.0, 0)
    if verdict.plan.objective_kind == "latency":
        return replay.makespan_cycles
    loads: dict[str, int] = {}
    for m in replay.ops.values():
        loads[m.device] = loads.get(m.device, 0) + m.measured_cycles
    for t in replay.transfers:
        loads[t.link] = loads.get(t.link, 0) + t.measured_cycles
    return max(loads.values())


def _command(args: list[str]) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one in-process CLI run, and its ``--json`` summary."""
    wall, cpu = time.perf_counter(), time.process_time()
    res = CliRunner().invoke(app, [*args, "--json", "--force"])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if res.exit_code != 0:
        raise RuntimeError(f"plan {' '.join(args)}: exit {res.exit_code}: {res.output[-2000:]}")
    return wall, cpu, json.loads(res.stdout)


def _medians(runs: list[tuple[float, float, dict]]) -> dict:
    return {"wall_s": statistics.median(r[0] for r in runs), "cpu_s": statistics.median(r[1] for r in runs),
            "solve_s": statistics.median(r[2]["stages_s"].get("solve", 0.0) for r in runs)}


def measure(name: str, device: str, work: Path, repeats: int) -> dict:
    spec_path = REPO / "specs" / f"{name}.yaml"
    spec = load_spec(spec_path)
    plan_dir, new_dir = work / name, work / f"{name}-replan"
    _command(["solve", str(spec_path), "-o", str(plan_dir)])  # warm the imports and caches
    cold = _medians([_command(["solve", str(spec_path), "-o", str(plan_dir)]) for _ in range(repeats)])
    slow = f"{device}=2"
    planned = _objective_slowed(plan_dir, f"{device}=1")
    slowed = _objective_slowed(plan_dir, slow)
    _, stats = _stats(plan_dir, work / f"{name}-slow.json", slow)
    replan_args = ["replan", str(plan_dir), "--stats", str(stats), "--spec", str(spec_path), "-o", str(new_dir)]
    runs = [_command(replan_args) for _ in range(repeats)]
    warm, decision = _medians(runs), runs[-1][2]["replan"]
    recovered_slowed = _objective_slowed(new_dir, slow)
    recovery = (slowed - recovered_slowed) / (slowed - planned) if slowed > planned else None
    noise_moves = []
    for seed in range(5):
        _, noisy = _stats(plan_dir, work / f"{name}-noise{seed}.json", None, 5.0, seed)
        _, _, summary = _command(["replan", str(plan_dir), "--stats", str(noisy), "--spec", str(spec_path),
                                  "-o", str(work / f"{name}-noise{seed}")])
        noise_moves.append(len(summary["replan"]["moved"]))
    return {"spec": name, "slowed": device, "objective": spec.objective, "planned": planned,
            "slowed_2x": slowed, "replanned_slowed_2x": recovered_slowed, "recovery": recovery,
            "moved": len(decision["moved"]), "moved_back": decision.get("moved_back", 0),
            "exact": decision.get("exact", {}).get("exact"), "predicted_gain": decision["predicted_gain"],
            "cold": cold, "replan": warm,
            "wall_ratio": warm["wall_s"] / cold["wall_s"], "cpu_ratio": warm["cpu_s"] / cold["cpu_s"],
            "solve_ratio": warm["solve_s"] / cold["solve_s"],
            "budget_ratio": (spec.time_limit_s / 10) / spec.time_limit_s,
            "noise_moves": noise_moves, "load": _load()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="One spec of " + ", ".join(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, device in CASES.items():
            if args.only and name != args.only:
                continue
            rows.append(measure(name, device, Path(tmp), args.repeats))
            print(f"{name}: done ({_load()})", flush=True)
    print_table("re-placement after a 2x slowdown", ["spec", "slowed", "objective", "planned", "slowed 2x",
                                                     "re-planned", "recovery", "moved", "moved back", "exact",
                                                     "noise moves", "load"],
                [[r["spec"], r["slowed"], r["objective"], r["planned"], r["slowed_2x"], r["replanned_slowed_2x"],
                  r["recovery"], r["moved"], r["moved_back"], r["exact"], r["noise_moves"], r["load"]] for r in rows])
    print_table("re-plan cost against a cold solve (whole commands in-process; solve stage alone)",
                ["spec", "solve wall s", "replan wall s", "wall ratio", "solve cpu s", "replan cpu s", "cpu ratio",
                 "solve stage s", "replan solve stage s", "stage ratio", "budget ratio"],
                [[r["spec"], r["cold"]["wall_s"], r["replan"]["wall_s"], r["wall_ratio"], r["cold"]["cpu_s"],
                  r["replan"]["cpu_s"], r["cpu_ratio"], r["cold"]["solve_s"], r["replan"]["solve_s"],
                  r["solve_ratio"], r["budget_ratio"]] for r in rows])
    met = {r["spec"]: {"recovery >= 0.5": r["recovery"] is not None and r["recovery"] >= 0.5,
                       "wall <= 10%": r["wall_ratio"] <= 0.10, "solve stage <= 10%": r["solve_ratio"] <= 0.10,
                       "budget <= 10%": r["budget_ratio"] <= 0.10,
                       "no moves under noise": not any(r["noise_moves"])} for r in rows}
    print(met)
    print(f"wrote {write_results('replan', rows, {'met': met}, args)}")


if __name__ == "__main__":
    main()
