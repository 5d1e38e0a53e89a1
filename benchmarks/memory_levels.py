"""N-level memory planning benchmark (issue 14, item 1), at the level solver.

Instances, all on the built-in four-level profile ``tpu-v4-host`` (vmem, cmem, hbm main,
host over PCIe):

* ``mlp-4level``: the device problem of ``specs/memory-4level.yaml`` (the bridge's, from
  the pipeline's own plan), lifted to the profile's four levels;
* ``mlp-4level-host-weights``: the same with the weights homed in host memory (offloaded);
* ``chain-1000``: a synthetic 1,000-tensor chain (residual blocks with 64 KiB - 4 MiB
  activations and 1 - 8 MiB weights, some weights on host), for the solve-time target.

Per instance: the N-level Belady greedy (``greedy``), the best of it, its cost-aware variant
and everything at home (``greedy_best``, :class:`GreedyHierarchySolver`), the CP-SAT solver's
makespan, bound and gap (above 64 ops: the relaxation bound and the stay-home search, see
``solvers/memory/levels/hierarchy_cpsat.py``), everything at home, today's two-level plan (vmem over hbm: ``CpSatLevelSolver`` on the two-level problem,
where it exists), each plan's buffers packed per level by greedy-by-size (64-B alignment)
against the level's live-bytes bound, and packed by CP-SAT offsets
(``solvers.memory.levels.hierarchy_offsets.pack_levels``, ``packed_peak_over_live``), the
validator's verdict, the plan's wall time (``seconds``) and the packing's
(``packed_seconds``). Under ``shared_bandwidth`` (``shared_bounds``): the same instance with
``bandwidth: shared``, its best greedy plan (replayed under sharing) against the plan bound the
planner gives it (``plan_lower_bound``'s budget: a tenth of the limit, half each) from the
unshared relaxation and from the forced-traffic bound
(``solvers/memory/levels/traffic_bound.py``), each with its CPU seconds. Not through ``plan solve``:
lowering, binaries and the simulator are still two-level (docs/memory.md, "Toward N levels").

    python -m benchmarks.memory_levels [--time-limit S] [--only NAME]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
PEAK_TARGET, TIME_TARGET_S = 1.02, 60.0
PACK_TIME_S = 10.0  # CP-SAT offsets per plan, shared by its levels (deterministic time)
MiB = 1 << 20

__all__ = ["lift_to_profile", "mlp_instance", "chain_instance", "shared_bound_row", "run_one", "main"]


def lift_to_profile(problem, profile, fast_capacity: int, tensor_home=None):
    """A two-level device problem (unsplit) over every level of ``profile``: bandwidths as exact
    fractions of the clock, the profile's DMA paths at the slower end's bandwidth, level 0's
    capacity as the bridge reduced it (alignment reserve)."""
    from solvers.memory.levels import HierarchyProblem

    names = [lv.name for lv in profile.memory]
    rates = tuple(Fraction(lv.bandwidth_bytes_per_s, profile.clock_hz) for lv in profile.memory)
    caps = tuple(fast_capacity if i == 0 else lv.capacity_bytes for i, lv in enumerate(profile.memory))
    paths = tuple((names.index(a), names.index(b)) for a, b in profile.dma_paths)
    return HierarchyProblem(
        compute_cycles=problem.compute_cycles, reads=problem.reads, writes=problem.writes,
        tensor_bytes=problem.tensor_bytes, capacity_bytes=caps, bandwidth_bytes_per_cycle=rates,
        main_level=names.index(profile.main_level), dma_paths=paths,
        dma_latency_cycles=profile.dma_latency_cycles, tensor_home=tensor_home or (),
        live_out=problem.live_out, fast_only_ops=problem.fast_only_ops, level_names=tuple(names),
        op_names=problem.op_names, tensor_names=problem.tensor_names)


def mlp_instance(host_weights: bool):
    """(two-level problem, four-level problem) of the shipped four-level spec's device."""
    from planner.memory.bridge import build_device_problem
    from planner.pipeline import load, run
    from solvers.memory.levels import expand_splits

    spec = load(ROOT / "specs" / "memory-4level.yaml")
    device = spec.hardware.devices[0]
    bridge = build_device_problem(spec.graph, spec.hardware, run(spec).plan, device, spec.memory)
    two = bridge.problem
    if two.splits:
        two = expand_splits(two, tuple(1 for _ in two.splits))[0]
    profile = device.profile
    main = [lv.name for lv in profile.memory].index(profile.main_level)
    homes = None
    if host_weights:
        host = len(profile.memory) - 1
        homes = tuple(host if lt.role == "weight" else main for lt in bridge.tensors)
    return (None if host_weights else two), lift_to_profile(two, profile, two.capacity_bytes[0], homes)


def chain_instance(num_tensors: int = 1000, seed: int = 0):
    """Residual blocks ``y = f(x, w)``, ``z = g(y, x)``: per block 3 tensors (weight, two
    activations) until ``num_tensors``; one weight in four on host; vmem less an eighth
    (the bridge's largest alignment reserve)."""
    from planner.isa.profiles import get_profile

    rng = random.Random(seed)
    profile = get_profile("tpu-v4-host")
    sizes, homes, reads, writes, compute = [], [], [], [], []
    x = None
    while len(sizes) + 3 <= num_tensors:
        w, y, z = len(sizes), len(sizes) + 1, len(sizes) + 2
        sizes += [rng.choice((1, 2, 4, 8)) * MiB, rng.choice((1, 4, 16, 64)) * 64 * 1024,
                  rng.choice((1, 4, 16, 64)) * 64 * 1024]
        homes += [3 if rng.random() < 0.25 else 2, 2, 2]
        reads += [tuple(sorted({w} | ({x} if x is not None else set()))), tuple(sorted({y} | ({x} if x is not None else set())))]
        writes += [(y,), (z,)]
        compute += [rng.randint(2_000, 40_000), rng.randint(200, 4_000)]
        x = z
    from solvers.memory.levels import HierarchyProblem

    names = [lv.name for lv in profile.memory]
    return HierarchyProblem(
        compute_cycles=tuple(compute), reads=tuple(reads), writes=tuple(writes), tensor_bytes=tuple(sizes),
        # vmem less the bridge's largest alignment reserve (an eighth), room for packing
        capacity_bytes=tuple(lv.capacity_bytes - (lv.capacity_bytes // 8 if i == 0 else 0)
                             for i, lv in enumerate(profile.memory)),
        bandwidth_bytes_per_cycle=tuple(Fraction(lv.bandwidth_bytes_per_s, profile.clock_hz)
                                        for lv in profile.memory),
        main_level=names.index(profile.main_level),
        dma_paths=tuple((names.index(a), names.index(b)) for a, b in profile.dma_paths),
        dma_latency_cycles=profile.dma_latency_cycles, tensor_home=tuple(homes), live_out=(x,),
        level_names=tuple(names))


def _plan_row(problem, solution, seconds: float) -> dict:
    """A plan's makespan, validity, and per level its greedy-by-size peak against the
    live-bytes bound of its buffers (the offsets target: peak <= 1.02 x live bound), and
    whether greedy-by-size packs every level within its capacity."""
    from solvers.memory import level_offset_problems
    from solvers.memory.levels import hierarchy_metrics, validate_hierarchy
    from solvers.core import SolveOptions
    from solvers.memory.levels.hierarchy_offsets import pack_levels
    from solvers.memory.offsets import GreedyBySizeOffsetSolver, live_bytes_lower_bound, validate_offsets

    if solution is None:
        return {"makespan": None, "seconds": round(seconds, 2)}
    m = hierarchy_metrics(problem, solution)
    peaks, live, fits = [], [], True
    for op, _ in level_offset_problems(problem, solution, 64):
        if op is None:
            peaks.append(0)
            live.append(0)
            continue
        r = GreedyBySizeOffsetSolver().solve(op)
        fits &= r.solution is not None and validate_offsets(op, r.solution) == []
        unbounded = dataclasses.replace(op, capacity_bytes=1 << 62)  # the peak, even past capacity
        peaks.append(GreedyBySizeOffsetSolver().solve(unbounded).objective)
        live.append(live_bytes_lower_bound(op))
    t = time.perf_counter()
    packed = pack_levels(problem, solution, 64, SolveOptions(time_limit_s=PACK_TIME_S, num_workers=1, random_seed=0))
    pack_seconds = time.perf_counter() - t
    packed_ok = all(lv.problem is None or (lv.peak_bytes is not None and validate_offsets(lv.problem, lv.result.solution)
                                           == []) for lv in packed)
    return {"makespan": solution.makespan_cycles, "seconds": round(seconds, 2),
            "valid": validate_hierarchy(problem, solution) == [], "offsets_fit": fits,
            "occupancy_peak_bytes": list(m.peak_bytes), "offsets_peak_bytes": peaks, "live_bytes_bound": live,
            "peak_over_live": [round(pk / lb, 4) if lb and pk is not None else None for pk, lb in zip(peaks, live)],
            "packed_valid": packed_ok, "packed_seconds": round(pack_seconds, 2),
            "packed_peak_over_live": [None if lv.peak_over_live is None else round(lv.peak_over_live, 4)
                                      for lv in packed]}


def shared_bound_row(four, time_limit: float) -> dict:
    """The plan bounds of ``four`` under shared bandwidth, as the planner computes them (its
    bound share of ``time_limit``, half to each relaxation), against its best greedy plan."""
    from solvers.budget import MEMORY_LEVELS, Budget
    from solvers.memory.levels import plan_hierarchy_best
    from solvers.memory.levels.hierarchy_bounds import hierarchy_lower_bound
    from solvers.memory.levels.traffic_bound import shared_traffic_lower_bound
    from planner.memory.hierarchy_bridge import PLAN_BOUND_SHARE

    shared = dataclasses.replace(four, shared_bandwidth=True)
    budget = Budget.start(max(0.05, PLAN_BOUND_SHARE * time_limit), MEMORY_LEVELS)
    row = {}
    t = time.process_time()
    row["unshared_relaxation"] = hierarchy_lower_bound(shared, budget, budget.left / 2)
    row["unshared_relaxation_cpu_seconds"] = round(time.process_time() - t, 2)
    t = time.process_time()
    row["traffic_bound"] = shared_traffic_lower_bound(shared, budget, budget.left)
    row["traffic_bound_cpu_seconds"] = round(time.process_time() - t, 2)
    plan = plan_hierarchy_best(shared)
    row["best_greedy_plan"] = None if plan is None else plan.makespan_cycles
    bound = max(row["unshared_relaxation"], row["traffic_bound"])
    row["gap_before"], row["gap_after"] = (
        (None, None) if plan is None else
        (round(1 - row["unshared_relaxation"] / plan.makespan_cycles, 4), round(1 - bound / plan.makespan_cycles, 4)))
    return row


def run_one(name: str, time_limit: float, cpsat: bool) -> dict:
    """Every solver on one instance; a row of figures."""
    from solvers.core import SolveOptions
    from solvers.memory.levels import (
        CpSatHierarchySolver, CpSatLevelSolver, plan_hierarchy_all_home, plan_hierarchy_best, plan_hierarchy_greedy,
    )

    if name == "chain-1000":
        two, four = None, chain_instance()
    else:
        two, four = mlp_instance(host_weights=name.endswith("host-weights"))
    row: dict = {"instance": name, "ops": four.num_ops, "tensors": four.num_tensors}
    t = time.perf_counter()
    row["all_home"] = _plan_row(four, plan_hierarchy_all_home(four), time.perf_counter() - t)
    t = time.perf_counter()
    row["greedy"] = _plan_row(four, plan_hierarchy_greedy(four), time.perf_counter() - t)
    t = time.perf_counter()
    row["greedy_best"] = _plan_row(four, plan_hierarchy_best(four), time.perf_counter() - t)
    options = SolveOptions(time_limit_s=time_limit, num_workers=1, random_seed=0)
    if cpsat:
        t, cpu = time.perf_counter(), time.process_time()
        r = CpSatHierarchySolver().solve(four, options)
        cpu = time.process_time() - cpu
        row["cpsat"] = {**_plan_row(four, r.solution, time.perf_counter() - t), "status": r.status.value,
                        "bound": r.bound, "gap": None if r.bound is None else round(r.gap, 4),
                        "cpu_seconds": round(cpu, 2), "fetch_balance": r.stats.get("fetch_balance"),
                        "window_search": r.stats.get("window_search")}
    row["shared_bounds"] = shared_bound_row(four, time_limit)
    if two is not None:
        t = time.perf_counter()
        r2 = CpSatLevelSolver().solve(two, options)
        row["two_level_cpsat"] = {"makespan": r2.objective, "bound": r2.bound, "status": r2.status.value,
                                  "seconds": round(time.perf_counter() - t, 2)}
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    rows = []
    for name, cpsat in (("mlp-4level", True), ("mlp-4level-host-weights", True), ("chain-1000", True)):
        if args.only in name:
            rows.append(run_one(name, args.time_limit, cpsat))
            json.dump(rows[-1], sys.stdout)
            sys.stdout.write("\n")
    out = ROOT / "benchmarks" / "results" / "memory_levels.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": machine_facts(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
