"""Write a verified plan's directory atomically.

Everything goes into a temporary directory beside the target, which is renamed into
place only when complete: a failure or Ctrl-C leaves no partial output. Which targets
may be written or replaced, and how, is :mod:`planner.safe_output`'s job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from planner.safe_output import atomic_directory

__all__ = ["atomic_directory", "baseline_rows", "peak_memory_by_device", "write_json", "write_plan_dir"]


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def write_plan_dir(outcome, spec, out_dir: Path, *, force: bool = False, inputs: Iterable[Path] = ()) -> Path:
    """Write plan.json, report.md, allocation.json, graph.json, bin/*.bin, bin/*.lst, trace.json
    and, with memory planning, memory.json; ``force`` and ``inputs`` as in
    :func:`planner.safe_output.atomic_directory`."""
    from planner.report import render_report, trace_document

    plan = outcome.plan
    sim = outcome.simulation
    with atomic_directory(Path(out_dir), force=force, inputs=inputs) as tmp:
        (tmp / "plan.json").write_text(plan.to_json())
        write_json(tmp / "allocation.json", outcome.allocation)
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        for name, data in sorted(outcome.binaries.items()):
            (bin_dir / f"{name}.bin").write_bytes(data)
            (bin_dir / f"{name}.lst").write_text(outcome.listings[name])
        devices = [d.name for d in spec.hardware.devices]
        links = [l.name for l in spec.hardware.links]
        write_json(tmp / "trace.json", trace_document(plan, devices, links))
        from planner.graph.serialize import graph_to_dict

        write_json(tmp / "graph.json", graph_to_dict(spec.graph))
        sections = []
        memory = getattr(outcome, "memory", None)
        if memory is not None:
            from planner.report.memory import render_memory_section

            used = outcome.memory_plan
            write_json(tmp / "memory.json", {
                "format_version": 1, "choice": outcome.memory_choice,
                **(used.to_dict() if used is not None else {"devices": {}}),
                "skipped": dict(sorted(memory.skipped.items())), "baselines": dict(outcome.memory_baselines)})
            sections.append(render_memory_section(memory.memory, memory.plan, outcome.memory_baselines,
                                                  memory.skipped, outcome.memory_choice,
                                                  greedy=(memory.greedy_memory, memory.greedy_plan),
                                                  peaks=outcome.memory_peaks, graph=spec.graph))
        sections += list(getattr(outcome, "report_sections", ()))  # e.g. planner.max_load's section
        (tmp / "report.md").write_text(render_report(
            plan, spec.hardware, baselines=baseline_rows(outcome), peak_bytes=peak_memory_by_device(sim),
            replay={"makespan_cycles": sim.makespan_cycles, "instructions": getattr(sim, "instruction_count", None)},
            sections=sections))
    return Path(out_dir)


def baseline_rows(outcome) -> list[dict[str, Any]]:
    """The planner's result, its heuristic baseline and the lower bound, for the report and terminal."""
    r, h = outcome.result, outcome.heuristic
    memory = getattr(outcome, "memory", None)
    if memory is not None:
        plan = outcome.plan
        rows = [{"solver": f"planner ({outcome.memory_choice})", "status": plan.status,
                 "objective": plan.objective, "bound": plan.bound}]
        rows += [{"solver": name, "status": "FEASIBLE", "objective": value, "bound": None}
                 for name, value in outcome.memory_baselines.items() if name != outcome.memory_choice]
        rows.append({"solver": "lower bound", "status": "-", "objective": None, "bound": plan.bound})
        return rows
    return [
        {"solver": r.solver_name, "status": r.status.value, "objective": r.objective, "bound": r.bound},
        {"solver": h.solver_name, "status": h.status.value, "objective": h.objective, "bound": h.bound},
        *getattr(outcome, "extra_baselines", ()),  # e.g. planner.max_load: linear split, one accelerator
        {"solver": "lower bound", "status": "-", "objective": None,
         "bound": outcome.result.stats.get("lower_bound")},
    ]


def peak_memory_by_device(sim) -> dict[str, int]:
    """The simulator's peak live bytes per device (summed over levels)."""
    peaks = getattr(sim, "peak_bytes", {}) or {}
    out: dict[str, int] = {}
    for key, value in peaks.items():
        device = key[0] if isinstance(key, tuple) else key
        out[device] = out.get(device, 0) + (sum(value.values()) if isinstance(value, dict) else value)
    return out
