"""Memory-hierarchy benchmark (issue 3) through the whole planner: plan, lower, replay, numbers.

Instances: the shipped memory specs, the CNNs shipped inside the ``onnx`` package (imported,
memory-planned on one TPU v4 with VMEM as the fast level), and a transformer with more than
500 tensors. Per instance: ops, tensors, the simulated makespan of the memory plan and of the
two baselines (everything in main memory; greedy prefetch + greedy-by-size offsets), the fast
level's peak against its live-bytes lower bound and against greedy-by-size on the same
buffers, the numeric replay's verdict and speed, and the wall time.

Targets (issue 3): fast peak <= 1.02 x the live bound or proven optimal, and never above
greedy-by-size (where a valid figure exists, see ``GREEDY_LEFT_OUT``); on memory-bound specs
the makespan below everything-in-main; a 500-tensor graph planned within 60 s; numeric replay
>= 1e5 instructions/s.

    python -m benchmarks.memory_plans                  # everything
    python -m benchmarks.memory_plans --only memory-   # name filter (substring)
    python -m benchmarks.memory_plans --only memory-streams   # two streams against one
    python -m benchmarks.memory_plans --only two-branches-301 # 301 ops, two streams (windows, also in cycles)
    python -m benchmarks.memory_plans --only two-branches-25  # 25 ops on two streams (the cycle-time model)
    python -m benchmarks.memory_plans --only memory-streams-split   # a split plan on two streams
    python -m benchmarks.memory_plans --only two-branches-25 --stream-time-share 1.0  # a larger model budget
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
ONNX_CNNS = ("resnet50", "squeezenet", "inception_v1", "bvlc_alexnet", "shufflenet")
PEAK_TARGET, TENSORS_TIME_TARGET_S, NUMERIC_TARGET = 1.02, 60.0, 1e5


def onnx_spec(model: str) -> dict | None:
    """One TPU v4 (VMEM fast) running an ONNX CNN shipped in the onnx package, memory-planned."""
    import onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{model}.onnx"
    if not path.exists():
        return None
    return {"version": 1, "name": f"onnx-{model}",
            "hardware": {"devices": [{"name": "tpu", "profile": "tpu-v4"}]},
            "models": [{"name": model, "graph": {"onnx": str(path)}}],
            "objective": "latency", "memory": {"plan": True, "fast": "vmem"},
            "solver": {"time_limit": "20 s", "workers": 2, "seed": 0}}


def large_spec() -> dict:
    """A transformer on one edge NPU (4 MiB SRAM, LPDDR at 17 GB/s): 298 ops, 510 tensors."""
    return {"version": 1, "name": "transformer-500-tensors",
            "hardware": {"devices": [{"name": "npu", "profile": "edge-npu"}]},
            "models": [{"name": "gpt", "generator": {"kind": "transformer", "layers": 11, "d_model": 256,
                                                       "heads": 4, "seq": 64, "batch": 4, "dtype": "fp32"}}],
            "objective": "latency", "memory": {"plan": True, "split_factors": [1, 2, 4]},
            "solver": {"time_limit": "20 s", "workers": 2, "seed": 0}}


def one_stream_spec() -> dict:
    """``specs/memory-streams.yaml`` with its NPU on one stream: the serialised comparison for the
    two-stream plan (docs/memory.md, "Several compute streams")."""
    import yaml

    spec = yaml.safe_load((ROOT / "specs" / "memory-streams.yaml").read_text())
    spec["name"] = "memory-streams-one-stream"
    spec["hardware"]["devices"][0]["streams"] = 1
    return spec


def two_branch_spec(layers: int = 75) -> dict:
    """Two parallel branches of ``layers`` (matmul by a 256x256 fp32 weight, then relu) on an edge
    NPU with two streams, joined at the end: ``4 x layers + 1`` ops (301 by default), above the
    64 ops one CP-SAT model takes, so the several-stream window search plans it."""
    tensors = [{"name": "x", "shape": [64, 256], "kind": "input"}]
    ops = []
    for branch in ("a", "b"):
        prev = "x"
        for k in range(layers):
            w, h, r = f"w{branch}{k}", f"h{branch}{k}", f"r{branch}{k}"
            tensors += [{"name": w, "shape": [256, 256], "kind": "weight"}, {"name": h, "shape": [64, 256]},
                        {"name": r, "shape": [64, 256]}]
            ops += [{"name": f"{branch}{k}", "type": "matmul", "inputs": [prev, w], "outputs": [h]},
                    {"name": f"{branch}{k}_act", "type": "relu", "inputs": [h], "outputs": [r]}]
            prev = r
    tensors.append({"name": "y", "shape": [64, 256], "kind": "output"})
    ops.append({"name": "join", "type": "add", "inputs": [f"ra{layers - 1}", f"rb{layers - 1}"], "outputs": ["y"]})
    return {"version": 1, "name": f"two-branches-{4 * layers + 1}-ops",
            "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "streams": 2}]},
            "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
            "objective": "latency", "memory": {"plan": True, "fast": "sram", "split": False},
            "solver": {"time_limit": "20 s", "workers": 2, "seed": 0}}


def small_kernels_spec() -> dict:
    """Many tiny kernels (a 24-layer transformer with d_model 16): the numeric replay's overhead."""
    return {"version": 1, "name": "numeric-small-kernels",
            "hardware": {"devices": [{"name": "npu", "profile": "edge-npu"}]},
            "models": [{"name": "gpt", "generator": {"kind": "transformer", "layers": 24, "d_model": 16,
                                                       "heads": 2, "seq": 4, "batch": 4, "dtype": "fp32"}}],
            "objective": "latency", "memory": {"plan": True},
            "solver": {"time_limit": "10 s", "workers": 2, "seed": 0}}


def instances() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [(p.stem, p) for p in sorted((ROOT / "specs").glob("memory-*.yaml"))]
    out.append(("memory-streams-one-stream", one_stream_spec()))
    out.append(("memory-streams-split", ROOT / "tests" / "data" / "specs" / "memory-streams-split.yaml"))
    for model in ONNX_CNNS:
        spec = onnx_spec(model)
        if spec is not None:
            out.append((spec["name"], spec))
    out.append(("transformer-500-tensors", large_spec()))
    out.append(("two-branches-25-ops", two_branch_spec(6)))
    out.append(("two-branches-301-ops", two_branch_spec()))
    out.append(("numeric-small-kernels", small_kernels_spec()))
    return out


def run_one(name: str, source, time_limit: float | None, numeric: bool) -> dict:
    from planner.errors import UnsupportedError
    from planner.verify.compare import compare_numeric
    from planner.pipeline import run
    from planner.spec import load_spec

    spec = load_spec(source)
    t0 = time.perf_counter()
    outcome = run(spec, time_limit_s=time_limit or spec.time_limit_s, workers=spec.workers, seed=spec.seed)
    wall = time.perf_counter() - t0
    plan = outcome.plan
    row = {"instance": name, "ops": len(spec.graph.ops), "tensors": len(spec.graph.tensors),
           "choice": outcome.memory_choice, "makespan": plan.makespan_cycles, "bound": plan.bound,
           "gap": plan.gap, "status": plan.status, "wall_s": round(wall, 2), **{
               f"baseline:{k}": v for k, v in outcome.memory_baselines.items()}}
    memory = outcome.memory.memory if outcome.memory is not None else None
    for dev, dp in sorted((memory.devices if memory else {}).items()):
        st = dp.stats
        row.update({"device": dev, "fast_level": dp.fast_level, **_fast_figures(st),
                    "offsets_status": st["fast_offsets_status"], "level_status": st["level_status"],
                    "level_gap": st["level_gap"], "splits": dict(dp.split_factors)})
        row.update(_streams_figures(st))
    if numeric:
        try:
            report = compare_numeric(outcome.binaries, spec.graph)
            row.update(numeric_ok=report.ok, instructions=report.instructions,
                       instructions_per_s=round(report.instructions_per_s))
            row.update(_numeric_rates(outcome.binaries, spec.graph))
        except UnsupportedError as e:
            row.update(numeric_ok=None, numeric_note=str(e))
    return row


GREEDY_LEFT_OUT = "greedy-by-size left out: no valid packing of the pieces for this plan's times"


def _fast_figures(st: dict) -> dict:
    """The fast level's peak, live-bytes bound and greedy-by-size peak; the last left out (None,
    with the reason) where the planner stored none (no valid packing; planner/memory/streams.py
    packs a kept cycle-time plan's pieces apart on both axes, so its figure is valid)."""
    out = {"fast_peak": st["fast_peak_bytes"], "fast_live_lb": st["fast_live_lower_bound_bytes"],
           "fast_greedy_by_size": st["fast_peak_greedy_by_size_bytes"]}
    if out["fast_greedy_by_size"] is None:
        out["fast_greedy_by_size_note"] = GREEDY_LEFT_OUT
    return out


def _streams_figures(st: dict) -> dict:
    """Several streams: the level solver's plan timed by its offsets, the plan kept, and the
    cycle-time model's status, device cycles and own bound (docs/memory.md, "Several compute
    streams"); empty when neither by-address plan was kept."""
    fig = st.get("by_address") or {}
    model = fig.get("time_model") or {}
    out = {}
    if fig:
        out.update(level_plan_device_cycles=fig["level_plan_device_cycles"],
                   kept_device_cycles=fig["kept_device_cycles"])
    if model:
        out.update(time_model_status=model["status"], time_model_device_cycles=model["device_cycles"],
                   time_model_bound=model["model_bound_device_cycles"], time_model_kept=bool(model.get("kept")),
                   time_model_dtime=model["dtime"])
        if model.get("reason"):
            out["time_model_reason"] = model["reason"]
    return out


def _time_model_text(row: dict) -> str:
    """The cycle-time model's outcome for the printed line (empty when it was not asked for)."""
    if "time_model_status" not in row:
        return ""
    return (f" | time model {row['time_model_status']} {row['time_model_device_cycles']} (its bound "
            f"{row['time_model_bound']}, {row['time_model_dtime']} units{', kept' if row['time_model_kept'] else ''})")


def _greedy_text(row: dict) -> str:
    """The greedy-by-size column: its peak, or "-" where it is left out (the reason ends the line)."""
    if "fast_greedy_by_size_note" in row:
        return "-"
    return f"{row.get('fast_greedy_by_size') or 0:,}"


def _numeric_rates(binaries, graph) -> dict:
    """Median CPU-time rates of 3 numeric replays: prepare + execute, and with decoding."""
    import statistics

    from planner.isa.binary import decode
    from planner.numeric.reference import random_inputs
    from planner.simulator.numeric import simulate_numeric_programs

    inputs = random_inputs(graph)
    replay, total = [], []
    for _ in range(3):
        c0 = time.process_time()
        programs = {name: decode(data) for name, data in sorted(binaries.items())}
        c1 = time.process_time()
        result = simulate_numeric_programs(programs, inputs)
        c2 = time.process_time()
        replay.append(result.instructions / max(c2 - c1, 1e-9))
        total.append(result.instructions / max(c2 - c0, 1e-9))
    return {"numeric_replay_per_cpu_s": round(statistics.median(replay)),
            "numeric_with_decode_per_cpu_s": round(statistics.median(total))}


def _targets(row: dict) -> dict:
    peak, lb, greedy = row.get("fast_peak"), row.get("fast_live_lb"), row.get("fast_greedy_by_size")
    out = {}
    if peak is not None:  # "never above greedy-by-size" is judged only where that figure is valid
        out["peak_target"] = bool((peak <= PEAK_TARGET * lb or row["offsets_status"] == "OPTIMAL")
                                  and (greedy is None or peak <= greedy))
    main = row.get("baseline:all in main memory")
    if main is not None:
        out["faster_than_main"] = row["makespan"] < main
    if row["tensors"] >= 500:
        out["500_tensors_in_60s"] = row["wall_s"] <= TENSORS_TIME_TARGET_S
    if row.get("numeric_replay_per_cpu_s"):
        out["numeric_1e5_per_s"] = row["numeric_replay_per_cpu_s"] >= NUMERIC_TARGET
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=None, help="substring of the instance names to run")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per instance (default: the spec's)")
    p.add_argument("--no-numeric", action="store_true", help="skip the numeric replay")
    p.add_argument("--out", default=None, help="JSON results path")
    p.add_argument("--stream-time-share", type=float, default=None,
                   help="the cycle-time model's share of a device's memory budget (default: "
                        "planner.memory.streams.STREAM_TIME_SHARE); to measure what a larger budget finds")
    args = p.parse_args(argv)
    if args.stream_time_share is not None:
        import planner.memory.streams as streams

        streams.STREAM_TIME_SHARE = args.stream_time_share
    rows = []
    for name, source in instances():
        if args.only and args.only not in name:
            continue
        row = run_one(name, source, args.time_limit, not args.no_numeric)
        row.update(_targets(row))
        rows.append(row)
        peak = row.get("fast_peak")
        print(f"{name:26} ops {row['ops']:4} tensors {row['tensors']:4} | plan {row['makespan']:>10,} "
              f"main {row.get('baseline:all in main memory', 0):>10,} "
              f"greedy {row.get('baseline:greedy prefetch + greedy-by-size') or 0:>10,} | "
              f"peak {peak or 0:>10,} lb {row.get('fast_live_lb') or 0:>10,} "
              f"gbs {_greedy_text(row):>10} | numeric {row.get('numeric_ok')} "
              f"{row.get('numeric_replay_per_cpu_s', '-')}/s ({row.get('numeric_with_decode_per_cpu_s', '-')}/s "
              f"with decode) | {row['wall_s']:.1f} s | {row['choice']}{_time_model_text(row)}"
              f"{' | ' + row['fast_greedy_by_size_note'] if 'fast_greedy_by_size_note' in row else ''}",
              flush=True)
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"memory-plans-{time.strftime('%Y-%m-%d')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_facts(), "rows": rows}, indent=2, default=str) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
