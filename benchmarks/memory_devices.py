"""Memory planning across devices (issue 14, Build 3): every candidate's replayed makespan, per device why.

Instances (test specs under ``tests/data/specs/memdevices/``): the shipped demo and pinned
specs with ``memory: {plan: true}`` added, a two-device MLP whose second half runs
memory-bound on an edge NPU, two NPUs passing a ResNet block back and forth (sent-late) and a
round trip whose sent tensor needs its deadline (round-trip) and a four-level NPU exchanging
tensors with an edge NPU (four-level-linked, its N-level plan a cross-device candidate), and one
whose N-level plan must see when the tensor it receives arrives (four-level-arrivals). Per instance: the replayed makespan of the memory plan (the
per-device choice across devices), everything in main memory and the greedy baseline; which
one the binaries use; the numeric replay's verdict; and per memory-planned device the plan it
uses, what its memory plan saves on its own ops, the whole plan with only its memory plan,
its re-solve under the other devices' heads and tails (objective, lower bound, everything in
main memory) and its slack; the proven bound on every memory plan of the placement and
orders, and the gap to it. Wall time is printed but the figures are deterministic.

Target (issue 14): the demo with memory planning on never slower than everything in main
memory; faster where the model is memory-bound.

    python -m benchmarks.memory_devices                 # every instance
    python -m benchmarks.memory_devices --only pinned   # name filter (substring)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tests" / "data" / "specs" / "memdevices"
INSTANCES = ("demo-memory", "pinned-memory", "memory-bound-two-devices", "sent-late", "round-trip", "four-level-linked",
             "four-level-arrivals")

__all__ = ["INSTANCES", "run_instance", "main"]


def run_instance(name: str, time_limit_s: float | None, numeric: bool) -> dict:
    """Plan one instance and return its row."""
    from planner.memory.cross_device import bound_entry
    from planner.pipeline import run
    from planner.spec import load_spec
    from planner.verify.compare import compare_numeric

    spec = load_spec(SPECS / f"{name}.yaml")
    t0 = time.perf_counter()
    outcome = run(spec, time_limit_s=time_limit_s)
    wall = time.perf_counter() - t0
    baselines = dict(outcome.memory_baselines)
    row = {"instance": name, "choice": outcome.memory_choice, "makespan": outcome.plan.makespan_cycles,
           "baselines": baselines,
           "vs_main": round(outcome.plan.makespan_cycles / baselines["all in main memory"], 4),
           "never_slower_than_main": outcome.plan.makespan_cycles <= baselines["all in main memory"],
           "devices": {d: e.to_dict() for d, e in sorted(outcome.memory.cross_device.items())},
           "bound": (None if outcome.memory.cross_device_bound is None
                     else bound_entry(outcome.memory.cross_device_bound, outcome.plan)),
           "wall_s": round(wall, 1)}
    if numeric:
        row["numeric_equal"] = compare_numeric(outcome.binaries, spec.graph, seed=0).ok
    return row


def _print(row: dict) -> None:
    b = row["baselines"]
    print(f"{row['instance']}: binaries use {row['choice']} = {row['makespan']:,} cycles "
          f"({row['vs_main']:.4f}x all in main memory); memory plan {b.get('memory plan', 0):,}, "
          f"all in main {b['all in main memory']:,}, greedy {b.get('greedy prefetch + greedy-by-size', 0):,}; "
          f"numeric equal: {row.get('numeric_equal', '-')}; {row['wall_s']} s")
    if row["bound"]:
        print(f"  bound {row['bound']['bound_cycles']:,} (path {row['bound']['path_bound_cycles']:,}, plan's own "
              f"{row['bound']['spine_bound_cycles']}), gap {100 * row['bound']['gap']:.2f}%")
    for d, e in row["devices"].items():
        own = ("-" if e["own_memory_cycles"] is None
               else f"{e['own_main_cycles'] - e['own_memory_cycles']:,}")
        alone = "-" if e["alone_makespan"] is None else f"{e['alone_makespan']:,}"  # None: does not fit or deadlocks
        print(f"  {d}: uses {e['plan']}; own ops save {own} device cycles; alone {alone} vs main "
              f"{e['main_makespan']:,}; re-solve {e['resolved_cycles']} (bound {e['resolved_bound_cycles']}, "
              f"main {e['resolved_main_cycles']}); slack {e['slack_cycles']:,}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=None, help="substring of the instance names to run")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per instance (default: the spec's)")
    p.add_argument("--no-numeric", action="store_true", help="skip the numeric replay")
    p.add_argument("--out", default=None, help="JSON results path")
    args = p.parse_args(argv)
    rows = []
    for name in INSTANCES:
        if args.only and args.only not in name:
            continue
        row = run_instance(name, args.time_limit, not args.no_numeric)
        _print(row)
        rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps({"machine": machine_facts(), "rows": rows}, indent=1))
    ok = all(r["never_slower_than_main"] and r.get("numeric_equal", True) for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
