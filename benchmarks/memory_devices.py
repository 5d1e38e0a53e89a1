"""Memory planning across devices (issue 14, Build 3): every candidate's replayed makespan, per device why.

Instances (test specs under ``tests/data/specs/memdevices/``): the shipped demo and pinned
specs with ``memory: {plan: true}`` added, a two-device MLP whose second half runs
memory-bound on an edge NPU, two NPUs passing a ResNet block back and forth (sent-late) and a
round trip whose sent tensor needs its deadline (round-trip) and a four-level NPU exchanging
tensors with an edge NPU (four-level-linked, its N-level plan a cross-device candidate), and one
whose N-level plan must see when the tensor it receives arrives (four-level-arrivals; with
``bandwidth: shared``, four-level-shared). Per instance: the replayed makespan of the memory plan (the
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
    python -m benchmarks.memory_devices --only linked-chain --without-windows   # each also without
        # the N-level heads/tails windows above 64 ops (the re-timed baselines only), for comparison
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from yaml import safe_load as yaml_load

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tests" / "data" / "specs" / "memdevices"
INSTANCES = ("demo-memory", "pinned-memory", "memory-bound-two-devices", "sent-late", "round-trip", "four-level-linked",
             "four-level-arrivals", "four-level-homes", "four-level-shared", "linked-chain-120", "linked-chain-240")

__all__ = ["INSTANCES", "linked_chain_spec", "run_instance", "main"]


def linked_chain_spec(ops: int) -> dict:
    """A linked four-level device with ``ops`` ops (above the N-level heads/tails model's 64):
    four-level-homes' hardware (dram at 16 MiB); edge0 computes x and sends it to npu0, which first runs one op
    on its own input u (as four-level-arrivals' pre) and then a chain from x (relus, every
    fourth op adding a weight homed in host memory), and sends the chain's end back to edge0.
    Alone npu0's plan is made from cycle 0 (it may fetch x during pre); re-solved it sees when x
    arrives."""
    spec = yaml_load((SPECS / "four-level-homes.yaml").read_text())
    spec["hardware"]["devices"][0]["memory"][2]["capacity"] = "16 MiB"  # dram holds every tensor at home
    own, after = 1, ops - 1
    shape = [32, 256]
    tensors = [{"name": "x0", "shape": shape, "kind": "input"}, {"name": "x", "shape": shape},
               {"name": "u0", "shape": shape, "kind": "input"}, {"name": "z", "shape": shape, "kind": "output"}]
    graph_ops = [{"name": "act0", "type": "relu", "inputs": ["x0"], "outputs": ["x"]}]
    for k in range(own):
        tensors.append({"name": f"u{k + 1}", "shape": shape, "kind": "output" if k == own - 1 else "activation"})
        graph_ops.append({"name": f"a{k}", "type": "relu", "inputs": [f"u{k}"], "outputs": [f"u{k + 1}"]})
    last, homes = "x", {}
    for k in range(after):
        tensors.append({"name": f"t{k}", "shape": shape})
        inputs = [last]
        if k % 4 == 3:
            tensors.append({"name": f"w{k}", "shape": shape, "kind": "weight"})
            inputs.append(f"w{k}")
            homes[f"c/w{k}"] = "host"
        graph_ops.append({"name": f"b{k}", "type": "add" if len(inputs) == 2 else "relu", "inputs": inputs,
                          "outputs": [f"t{k}"]})
        last = f"t{k}"
    graph_ops.append({"name": "act3", "type": "relu", "inputs": [last], "outputs": ["z"]})
    spec.update(name=f"linked-chain-{ops}", models=[{"name": "c", "graph": {"tensors": tensors, "ops": graph_ops}}])
    npu = [f"c/a{k}" for k in range(own)] + [f"c/b{k}" for k in range(after)]
    spec["constraints"] = {"pins": [{"ops": npu, "device": "npu0"}, {"ops": ["c/act0", "c/act3"], "device": "edge0"}]}
    spec["memory"]["home"] = homes
    spec["solver"]["time_limit"] = "20 s"
    return spec


def run_instance(name: str, time_limit_s: float | None, numeric: bool) -> dict:
    """Plan one instance and return its row."""
    from planner.memory.cross_device import bound_entry
    from planner.pipeline import run
    from planner.spec import load_spec
    from planner.verify.compare import compare_numeric

    spec = load_spec(linked_chain_spec(int(name.rsplit("-", 1)[1])) if name.startswith("linked-chain-")
                     else SPECS / f"{name}.yaml")
    t0 = time.perf_counter()
    outcome = run(spec, time_limit_s=time_limit_s)
    wall = time.perf_counter() - t0
    baselines = dict(outcome.memory_baselines)
    main = baselines.get("all in main memory", baselines.get("all at home"))  # with homes: everything at home
    row = {"instance": name, "choice": outcome.memory_choice, "makespan": outcome.plan.makespan_cycles,
           "baselines": baselines,
           "vs_main": round(outcome.plan.makespan_cycles / main, 4),
           "never_slower_than_main": outcome.plan.makespan_cycles <= main,
           "devices": {d: e.to_dict() for d, e in sorted(outcome.memory.cross_device.items())},
           "bound": (None if outcome.memory.cross_device_bound is None
                     else bound_entry(outcome.memory.cross_device_bound, outcome.plan)),
           "wall_s": round(wall, 1)}
    if numeric:
        row["numeric_equal"] = compare_numeric(outcome.binaries, spec.graph, seed=0).ok
    return row


def _without_windows(name: str, time_limit_s: float | None) -> int:
    """The instance's makespan with the N-level re-solve under heads above 64 ops left at its
    best re-timed baseline (no windows), as before the windows."""
    from unittest import mock

    from solvers.memory.levels import hierarchy_heads_tails as module

    def baseline_only(problem, ht, best, lower, *args, **kwargs):
        return best, {"stopped_by": "finished"}

    with mock.patch.object(module, "heads_tails_window_search", baseline_only):
        return run_instance(name, time_limit_s, False)["makespan"]


def _print(row: dict) -> None:
    b = row["baselines"]
    floor = "all at home" if "all at home" in b else "all in main memory"
    print(f"{row['instance']}: binaries use {row['choice']} = {row['makespan']:,} cycles "
          f"({row['vs_main']:.4f}x {floor}); memory plan {b.get('memory plan', 0):,}, "
          f"{floor} {b[floor]:,}, greedy {b.get('greedy prefetch + greedy-by-size', 0):,}; "
          f"numeric equal: {row.get('numeric_equal', '-')}; {row['wall_s']} s")
    if "makespan_without_windows" in row:
        print(f"  without the N-level heads/tails windows: {row['makespan_without_windows']:,}")
    if row["bound"]:
        print(f"  bound {row['bound']['bound_cycles']:,} (path {row['bound']['path_bound_cycles']:,}, plan's own "
              f"{row['bound']['spine_bound_cycles']}), gap {100 * row['bound']['gap']:.2f}%")
    for d, e in row["devices"].items():
        own = ("-" if e["own_memory_cycles"] is None or e["own_main_cycles"] is None
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
    p.add_argument("--without-windows", action="store_true",
                   help="also plan each instance without the N-level heads/tails windows (above 64 ops)")
    args = p.parse_args(argv)
    rows = []
    for name in INSTANCES:
        if args.only and args.only not in name:
            continue
        row = run_instance(name, args.time_limit, not args.no_numeric)
        if args.without_windows:
            row["makespan_without_windows"] = _without_windows(name, args.time_limit)
        _print(row)
        rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps({"machine": machine_facts(), "rows": rows}, indent=1))
    ok = all(r["never_slower_than_main"] and r.get("numeric_equal", True) for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
