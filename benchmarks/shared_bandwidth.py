"""Shared bandwidth (issue 14, item 4): each two-level memory spec with and without contention.

Per shipped memory spec planned over two levels (``specs/memory-{mlp,transformer,cnn,streams}.yaml``)
and the test specs ``tests/data/specs/memory-shared.yaml`` and ``memory-streams-shared.yaml`` (two
streams): the simulated makespan with
``memory.bandwidth: separate`` (today's rule) and ``shared``, their ratio (at the optimum
sharing is never faster: every shared plan is also a separate one; heuristic runs may differ),
which plan each run kept, and the
shared replay's figures per level (peak shares, cycles two or more records shared the level,
cycles it was fully held). Every run is replayed and verified; the shared one also
numerically (fp32 against the reference). For a device with several streams, also its shared
memory plan beside the best of the same level problem with its ops in series.

Linked devices (``LINKED``: ``tests/data/specs/memory-linked-shared.yaml`` and the test specs
of ``tests/data/specs/memdevices/`` with ``bandwidth: shared`` switched on; the demo only with
``--demo``, its spine stops on the wall clock): per spec the kept plan (per device its
candidate), everything in main memory (all at home where tensors are homed elsewhere), the whole-plan bound (``memory.json``'s
``cross_device_bound``) and the gap, and per device its last re-solve under heads and tails
(the level solver's objective and bound, with the device's link transfers as link holds):
the claim the re-timing is compared with.

    python -m benchmarks.shared_bandwidth                 # at each spec's own time limit
    python -m benchmarks.shared_bandwidth --time-limit 5  # override
    python -m benchmarks.shared_bandwidth --only linked   # the linked rows only (name filter)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
SPECS = ("specs/memory-mlp.yaml", "specs/memory-transformer.yaml", "specs/memory-cnn.yaml",
         "tests/data/specs/memory-shared.yaml", "specs/memory-streams.yaml",
         "tests/data/specs/memory-streams-shared.yaml")
LINKED = ("tests/data/specs/memory-linked-shared.yaml", "tests/data/specs/memdevices/pinned-memory.yaml",
          "tests/data/specs/memdevices/memory-bound-two-devices.yaml", "tests/data/specs/memdevices/sent-late.yaml",
          "tests/data/specs/memdevices/round-trip.yaml", "tests/data/specs/memdevices/four-level-linked.yaml",
          "tests/data/specs/memdevices/four-level-arrivals.yaml", "tests/data/specs/memdevices/four-level-homes.yaml",
          "tests/data/specs/memdevices/four-level-gang.yaml",
          "tests/data/specs/memdevices/four-level-round-trip.yaml")
DEMO = "tests/data/specs/memdevices/demo-memory.yaml"


def measure(path: str, time_limit_s: float | None) -> dict:
    """Both runs of one spec: makespans, kept plans, the shared replay's figures, numbers."""
    from planner.pipeline import run
    from planner.spec import load_spec
    from planner.verify.compare import compare_numeric

    spec = load_spec(ROOT / path)
    row: dict = {"spec": spec.name}
    for label, shared in (("separate", False), ("shared", True)):
        s = replace(spec, memory=replace(spec.memory, shared_bandwidth=shared))
        t0 = time.perf_counter()
        outcome = run(s, time_limit_s=time_limit_s)
        row[f"{label}_wall_s"] = round(time.perf_counter() - t0, 2)
        assert outcome.simulation.valid and outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
        row[f"{label}_makespan"] = outcome.plan.makespan_cycles
        row[f"{label}_status"], row[f"{label}_bound"] = outcome.plan.status, outcome.plan.bound
        row[f"{label}_kept"] = outcome.memory_choice
        row[f"{label}_baselines"] = dict(outcome.memory_baselines)
        if shared:
            row["shared_figures"] = outcome.simulation.bandwidth
            row["shared_numeric_ok"] = compare_numeric(outcome.binaries, spec.graph, seed=0).ok
            row.update(_streams_figures(outcome, time_limit_s or spec.time_limit_s))
    row["shared_over_separate"] = round(row["shared_makespan"] / row["separate_makespan"], 4)
    return row


def measure_linked(path: str, time_limit_s: float | None) -> dict:
    """One linked spec with sharing switched on: the kept plan and its bound, per device its
    candidate and its last re-solve's claim (device cycles), replayed and numerically checked."""
    from planner.memory.cross_device import bound_entry
    from planner.pipeline import run
    from planner.spec import load_spec
    from planner.verify.compare import compare_numeric

    spec = load_spec(ROOT / path)
    spec = replace(spec, memory=replace(spec.memory, shared_bandwidth=True))
    t0 = time.perf_counter()
    outcome = run(spec, time_limit_s=time_limit_s)
    assert outcome.simulation.valid and outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    bound = outcome.memory.cross_device_bound
    return {"spec": Path(path).stem, "makespan": outcome.plan.makespan_cycles,
            "main": outcome.memory_baselines.get("all in main memory", outcome.memory_baselines.get("all at home")),
            "bound": None if bound is None else bound_entry(bound, outcome.plan,
                                                            outcome.memory.cross_device_shared_bound)["bound_cycles"],
            "devices": {d: {"plan": e.plan, "resolved": e.resolved_cycles, "resolved_bound": e.resolved_bound_cycles}
                        for d, e in sorted(outcome.memory.cross_device.items())},
            "numeric_ok": compare_numeric(outcome.binaries, spec.graph, seed=0).ok,
            "wall_s": round(time.perf_counter() - t0, 2)}


def _print_linked(rows: list[dict]) -> None:
    print(f"{'linked, shared':26} {'plan':>9} {'main':>9} {'bound':>9} {'gap':>7}  per device: candidate (re-solve claim / bound)")
    for r in rows:
        gap = "-" if r["bound"] is None else f"{100 * (r['makespan'] - r['bound']) / r['makespan']:.2f}%"
        devices = "; ".join(f"{d} {e['plan']} ({e['resolved']}/{e['resolved_bound']})" for d, e in r["devices"].items())
        print(f"{r['spec']:26} {r['makespan']:>9,} {r['main']:>9,} {r['bound'] or '-':>9} {gap:>7}  {devices}")


def _streams_figures(outcome, time_limit_s: float) -> dict:
    """Several streams under sharing: the memory plan's replayed makespan and its level plan's
    beside the best the same level problem reaches with its ops in series (one stream, CP-SAT at
    the same limit, one worker); nothing for one-stream devices."""
    from solvers.core import SolveOptions
    from solvers.memory.levels import CpSatLevelSolver

    out: dict = {}
    for device, plans in outcome.memory.device_levels.items():
        levels = plans.get("memory plan")
        if levels is None or not levels.expanded.multi_stream:
            continue
        series = CpSatLevelSolver().solve(replace(levels.expanded, op_streams=()),
                                          SolveOptions(time_limit_s=time_limit_s, num_workers=1))
        out["streams"] = {"device": device, "memory_plan": outcome.memory_baselines.get("memory plan"),
                          "level_plan": levels.solution.makespan_cycles, "series_level_plan": series.objective,
                          "series_status": series.status.value}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per solve (default: the spec's)")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--only", default=None, help="substring of the spec paths to run ('linked': the linked rows)")
    ap.add_argument("--demo", action="store_true", help="also the demo with memory planning and sharing (long)")
    args = ap.parse_args(argv)
    chosen = [p for p in SPECS if not args.only or args.only in p]
    linked_paths = [p for p in LINKED + ((DEMO,) if args.demo else ())
                    if not args.only or args.only == "linked" or args.only in p]
    rows = [measure(p, args.time_limit) for p in chosen]
    linked = [measure_linked(p, args.time_limit) for p in linked_paths]
    print(f"{'spec':20} {'separate':>10} {'shared':>10} {'ratio':>7} {'shared bound':>12} {'gap':>7}  kept (shared)")
    for r in rows:
        bound = r["shared_bound"]
        gap = "-" if bound is None else f"{100 * (r['shared_makespan'] - bound) / r['shared_makespan']:.2f}%"
        print(f"{r['spec']:20} {r['separate_makespan']:>10,} {r['shared_makespan']:>10,} "
              f"{r['shared_over_separate']:>7.4f} {bound if bound is not None else '-':>12} {gap:>7}  {r['shared_kept']}")
    for r in rows:
        if "streams" in r:
            st = r["streams"]
            print(f"{r['spec']}: two streams, shared: memory plan {st['memory_plan']:,} (level plan "
                  f"{st['level_plan']:,}); the same ops in series: {st['series_level_plan']:,} "
                  f"({st['series_status']})")
    if linked:
        _print_linked(linked)
    facts = machine_facts()
    print(f"load {facts['load_average']} on {facts['cores']} cores, {facts['date']}")
    if args.out:
        args.out.write_text(json.dumps({"machine": facts, "rows": rows, "linked": linked}, indent=2, default=str) + "\n")
    return 0 if all(r["shared_numeric_ok"] for r in rows) and all(r["numeric_ok"] for r in linked) else 1


if __name__ == "__main__":
    sys.exit(main())
