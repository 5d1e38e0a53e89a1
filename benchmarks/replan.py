"""Re-placement benchmark (issue 13): recovery after a slowdown, re-solve cost, and no churn under noise.

For each spec: solve it cold (timed), replay the plan with one device slowed 2x
(``plan simulate --slow``'s what-if replay), re-plan from those statistics (``plan replan``:
timed; its deterministic budget is a tenth of the cold solve's by default), and replay the new
plan with the same slowdown. Then replay the original with ±5% noise and no slowdown
(``--noise 5``, seeds 0-4) and re-plan each: nothing should move.

Targets: the new plan recovers at least half of the loss,
``(slowed - new slowed) / (slowed - planned) >= 0.5``; the re-plan takes at most 10% of the cold
solve (budget units, and wall time, median of ``--repeats``); no op moves under noise.

Run: ``python -m benchmarks.replan [--only throughput] [--repeats 3]``. Prints ``uptime``'s load
beside the numbers; the results go to ``benchmarks/results/replan-<date>.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import REPO, print_table, write_results
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.replan.replan import ReplanSettings, replan
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


def measure(name: str, device: str, work: Path, repeats: int) -> dict:
    spec_path = REPO / "specs" / f"{name}.yaml"
    spec = load_spec(spec_path)
    cold_s, warm_s = [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        outcome = run(spec)
        cold_s.append(time.perf_counter() - t0)
    plan_dir = work / name
    write_plan_dir(outcome, spec, plan_dir, numeric="off", force=True)
    slow = f"{device}=2"
    planned = _objective_slowed(plan_dir, f"{device}=1")
    slowed = _objective_slowed(plan_dir, slow)
    _, stats = _stats(plan_dir, work / f"{name}-slow.json", slow)
    for r in range(repeats):
        t0 = time.perf_counter()
        new = replan(spec, plan_dir, stats, ReplanSettings())
        warm_s.append(time.perf_counter() - t0)
    new_dir = work / f"{name}-replan"
    write_plan_dir(new, spec, new_dir, numeric="off", force=True)
    recovered_slowed = _objective_slowed(new_dir, slow)
    recovery = (slowed - recovered_slowed) / (slowed - planned) if slowed > planned else None
    noise_moves = []
    for seed in range(5):
        _, noisy = _stats(plan_dir, work / f"{name}-noise{seed}.json", None, 5.0, seed)
        noise_moves.append(len(replan(spec, plan_dir, noisy, ReplanSettings()).plan.solver["replan"]["moved"]))
    decision = new.plan.solver["replan"]
    return {"spec": name, "slowed": device, "objective": outcome.plan.objective_kind, "planned": planned,
            "slowed_2x": slowed, "replanned_slowed_2x": recovered_slowed, "recovery": recovery,
            "moved": len(decision["moved"]), "predicted_gain": decision["predicted_gain"],
            "cold_s": statistics.median(cold_s), "warm_s": statistics.median(warm_s),
            "wall_ratio": statistics.median(warm_s) / statistics.median(cold_s),
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
                                                     "re-planned", "recovery", "moved", "cold s", "replan s",
                                                     "wall ratio", "budget ratio", "noise moves", "load"],
                [[r["spec"], r["slowed"], r["objective"], r["planned"], r["slowed_2x"], r["replanned_slowed_2x"],
                  r["recovery"], r["moved"], r["cold_s"], r["warm_s"], r["wall_ratio"], r["budget_ratio"],
                  r["noise_moves"], r["load"]] for r in rows])
    met = {r["spec"]: {"recovery >= 0.5": r["recovery"] is not None and r["recovery"] >= 0.5,
                       "wall <= 10%": r["wall_ratio"] <= 0.10, "budget <= 10%": r["budget_ratio"] <= 0.10,
                       "no moves under noise": not any(r["noise_moves"])} for r in rows}
    print(met)
    print(f"wrote {write_results('replan', rows, {'met': met}, args)}")


if __name__ == "__main__":
    main()
