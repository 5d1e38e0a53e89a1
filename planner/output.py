"""Write a verified plan's directory atomically.

Everything goes into a temporary directory beside the target, which is renamed into
place only when complete: a failure or Ctrl-C leaves no partial output. Which targets
may be written or replaced, and how, is :mod:`planner.safe_output`'s job.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from planner import json_text
from planner.collector import collector_paused
from planner.errors import InternalError, PlannerError
from planner.graph.serialize import graph_to_dict
from planner.memory.cross_device import bound_entry
from planner.memory.figures import device_figures
from planner.plan import Plan, plan_document
from planner.report import render_report
from planner.report.html import render_html
from planner.report.markdown import level_capacities, report_hardware
from planner.report.memory import fast_footprint, render_memory_section
from planner.report.sections import route_sections
from planner.report.trace import trace_json
from planner.safe_output import atomic_directory
from planner.stage_timing import stage
from planner.verify import numeric_replay_dir, verify_plan_dir
from planner.verify.manifest import expected_files, sha256_hex

if TYPE_CHECKING:  # annotations only: writing needs no solver module (planner.stages imports solvers.core)
    from planner.spec import Spec
    from planner.stages import Outcome

__all__ = ["atomic_directory", "baseline_rows", "memory_document", "peak_memory_by_device", "plan_route_sections",
           "write_html_report", "write_json", "write_plan_dir"]


def write_json(path: Path, data: Any) -> None:
    path.write_text(json_text.dumps(data, indent=2) + "\n")


def _hardware_entries(hardware) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """plan.json's ``devices`` and ``links``: what the verifier checks the binaries' headers against."""
    devices = [{"name": d.name, "kind": d.kind, "profile": d.profile.name, "streams": d.streams}
               for d in hardware.devices]
    links = [{"name": l.name, "devices": list(l.devices), "bandwidth_bytes_per_s": l.bandwidth_bytes_per_s,
              "latency_cycles": l.latency_cycles} for l in hardware.links]
    return devices, links


def _write_replayed_files(outcome: Outcome, spec: Spec, tmp: Path) -> dict[str, Any]:
    """Everything but report.md and plan.json: binaries, listings, graph, allocation, trace, memory.

    Returns allocation.json and memory.json (None without memory planning) as read back from
    the files written, for the report and the page, which draw those files (one parse each).
    """
    plan = outcome.plan
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name, data in sorted(outcome.binaries.items()):
        (bin_dir / f"{name}.bin").write_bytes(data)
        (bin_dir / f"{name}.lst").write_text(outcome.listings[name])
    write_json(tmp / "allocation.json", outcome.allocation)
    write_json(tmp / "graph.json", graph_to_dict(spec.graph))
    if outcome.memory is not None:
        write_json(tmp / "memory.json", memory_document(outcome, spec.graph))
    # Drawn from the files as written, as the verifier reads them back to render it again.
    read = {"allocation.json": json.loads((tmp / "allocation.json").read_text()),
            "memory.json": json.loads((tmp / "memory.json").read_text()) if outcome.memory is not None else None}
    (tmp / "trace.json").write_text(trace_json(plan, [d.name for d in spec.hardware.devices],
                                               [l.name for l in spec.hardware.links], programs=outcome.programs,
                                               allocation=read["allocation.json"], memory=read["memory.json"]))
    return read


def _plan_figures(name: str, dp, schedule, peaks: dict[str, Any]) -> dict[str, Any]:
    """One memory plan's figures on one device (memory.json ``figures``)."""
    fig = device_figures(dp, schedule)
    return {"peak_live_bytes": dict(((peaks.get(name) or {}).get(dp.device) or {})),
            "fast_footprint_bytes": fast_footprint(dp), "dma_bytes": fig["dma_bytes"], "op_bytes": fig["op_bytes"],
            "dma_count": fig["dma_count"], "dma_cycles": fig["dma_cycles"],
            "dma_hidden_cycles": fig["dma_hidden_cycles"]}


def _main_only_bytes(graph, dp) -> int:
    """Bytes the device's ops read and write when every tensor lives in main memory."""
    return sum(graph.tensors[t].size_bytes for name in sorted({a.op for a in dp.accesses.values()})
               for t in {*graph.ops[name].inputs, *graph.ops[name].outputs})


def memory_document(outcome: Outcome, graph) -> dict[str, Any]:
    """``memory.json`` (format version 2): the plan the binaries use, every plan's replayed makespan,
    and per memory-planned device the figures of every plan, as the report shows them.

    ``devices`` holds the chosen plan (``choice``; empty when everything stays in main
    memory), ``baselines`` each plan's replayed makespan, ``figures`` per plan and device the
    replayed peak of live bytes per level, the fast level's footprint, the bytes moved by the
    DMAs and by the ops per level, and the DMA time (and the part of it overlapping compute).
    """
    memory, used = outcome.memory, outcome.memory_plan
    figures: dict[str, dict[str, Any]] = {}
    for name in sorted(memory.memory.devices):
        dp = memory.memory.devices[name]
        columns = [("memory plan", dp, memory.plan)]
        if memory.greedy_memory is not None and name in memory.greedy_memory.devices:
            columns.append(("greedy prefetch + greedy-by-size", memory.greedy_memory.devices[name], memory.greedy_plan))
        if memory.all_home_memory is not None and name in memory.all_home_memory.devices:
            columns.append(("all at home", memory.all_home_memory.devices[name], memory.all_home_plan))
        for plan_name, device_plan, schedule in columns:
            figures.setdefault(plan_name, {})[name] = _plan_figures(plan_name, device_plan, schedule,
                                                                    outcome.memory_peaks)
        if "all in main memory" not in outcome.memory_baselines:
            continue
        main = (outcome.memory_peaks.get("all in main memory") or {}).get(name) or {}
        figures.setdefault("all in main memory", {})[name] = {
            "peak_live_bytes": dict(main), "fast_footprint_bytes": 0,
            "dma_bytes": {f"{dp.slow_level}->{dp.fast_level}": 0, f"{dp.fast_level}->{dp.slow_level}": 0},
            "op_bytes": {dp.fast_level: 0, dp.slow_level: _main_only_bytes(graph, dp)},
            "dma_count": 0, "dma_cycles": 0, "dma_hidden_cycles": 0}
    return {"format_version": 2, "choice": outcome.memory_choice,
            **(used.to_dict() if used is not None else {"devices": {}}),
            "skipped": dict(sorted(memory.skipped.items())), "baselines": dict(outcome.memory_baselines),
            "figures": {name: figures[name] for name in outcome.memory_baselines if name in figures},
            # several devices (link transfers): the plan used per device, and why in numbers
            **({"cross_device": {d: e.to_dict() for d, e in sorted(memory.cross_device.items())}}
               if getattr(memory, "cross_device", None) else {}),
            **({"cross_device_bound": bound_entry(memory.cross_device_bound, outcome.plan,
                                                  getattr(memory, "cross_device_shared_bound", None))}
               if getattr(memory, "cross_device_bound", None) is not None else {})}


def plan_route_sections(plan: Plan, hardware) -> list[str]:
    """report.md's route sections (max-load, islands, warm start, given placement, re-placement),
    drawn by :func:`planner.report.sections.route_sections` from the plan's fields as plan.json
    holds them, the records the verifier redraws them from: one drawing for both.

    The record goes through JSON first, so the drawing reads the values plan.json will hold
    (lists, string keys, plain strings for enums), not the live objects they are written from.
    """
    devices, _ = _hardware_entries(hardware)
    record = json.loads(json.dumps({**plan.to_dict(), "devices": devices}))
    main_capacities = {d.name: level_capacities(d)[d.profile.main_memory.name] for d in hardware.devices}
    return route_sections(record, main_capacities)


def _report_sections(outcome: Outcome, spec: Spec, memory_doc) -> list[str]:
    """The memory section (memory.json as written), then the route's sections (plan.json's records)."""
    sections = []
    if memory_doc is not None:
        capacities = {d.name: level_capacities(d) for d in spec.hardware.devices}
        sections.append(render_memory_section(memory_doc, capacities))
    return sections + plan_route_sections(outcome.plan, spec.hardware)


@collector_paused()  # many small objects, no cycles (planner.collector)
def write_plan_dir(outcome: Outcome, spec: Spec, out_dir: Path, *, numeric: str = "default", force: bool = False,
                   inputs: Iterable[Path] = ()):
    """Write the plan directory, verify it with the independent verifier, and only then put it in place.

    Everything is written into a temporary directory: the binaries, listings, graph.json,
    allocation.json, trace.json and memory.json; the numeric replay runs on them
    (``numeric``: ``"default"`` when cheap, ``"on"``, ``"off"``); report.md says what it
    found; plan.json records the sha256 of every other file and its own seal. Then
    :func:`planner.verify.verify_plan_dir` checks the temporary directory as ``plan simulate``
    would; report.html is drawn from the verified files; the directory is renamed into place
    only when it passes.

    Returns
    -------
    planner.verify.Verdict
        The verifier's verdict, with the numeric replay's outcome.

    Raises
    ------
    InternalError
        The directory fails its own verification, or the numeric replay differs from the
        reference (a bug; nothing is written).
    """


    plan, sim = outcome.plan, outcome.simulation
    devices, links = _hardware_entries(spec.hardware)
    with atomic_directory(Path(out_dir), force=force, inputs=inputs) as tmp:
        with stage("writing"):
            read = _write_replayed_files(outcome, spec, tmp)
        with stage("numeric"):
            checked = numeric_replay_dir(tmp, [d["name"] for d in devices], mode=numeric)
        memory_planning = outcome.memory is not None
        with stage("writing"):
            # From the run's live results and plan.json's records; the verifier redraws it from the directory
            # (planner.verify.report), so the verification below holds the two drawings equal.
            (tmp / "report.md").write_text(render_report(
                plan, report_hardware(spec.hardware), baselines=baseline_rows(outcome), peak_bytes=sim.peak_bytes,
                replay={"makespan_cycles": sim.makespan_cycles, "instructions": sim.instruction_count,
                        "memory": memory_planning, "numeric": checked.summary(), "bandwidth": sim.bandwidth},
                sections=_report_sections(outcome, spec, read["memory.json"] if memory_planning else None),
                graph=spec.graph))
            names = expected_files([d["name"] for d in devices], memory_planning=memory_planning)
            files = {name: sha256_hex((tmp / name).read_bytes()) for name in names if name != "report.html"}
            document = plan_document(plan, devices=devices, links=links, memory_planning=memory_planning,
                                     numeric=checked.claim, files=files, baselines=baseline_rows(outcome))
            # The page draws no checksum or seal, so it is drawn from the document before its own checksum is in.
            files["report.html"] = sha256_hex(write_html_report(tmp, json.loads(json.dumps(document)),
                                                                read=read).read_bytes())
            document = plan_document(plan, devices=devices, links=links, memory_planning=memory_planning,
                                     numeric=checked.claim, files=dict(sorted(files.items())),
                                     baselines=baseline_rows(outcome))
            (tmp / "plan.json").write_text(json_text.dumps(document, indent=2) + "\n")
        try:
            with stage("verify"):
                verdict = verify_plan_dir(tmp)
        except PlannerError as e:
            raise InternalError(f"the plan directory `plan solve` wrote fails its own verification: {e}") from e
    return replace(verdict, plan_dir=Path(out_dir), numeric=checked)


def write_html_report(plan_dir: Path, document: dict[str, Any] | None = None, *,
                      read: Mapping[str, Any] | None = None) -> Path:
    """Draw ``report.html`` from a plan directory's plan.json (or ``document``, the plan.json to be written),
    allocation.json and memory.json (or ``read``: those two files as already read back from the directory).

    The page is in plan.json's ``files`` and the verifier redraws it from the verified files
    and compares the bytes, so it draws those files and nothing else.
    """
    plan_dir = Path(plan_dir)
    memory = plan_dir / "memory.json"
    if document is None:
        document = json.loads((plan_dir / "plan.json").read_text())
    if read is None:
        read = {"allocation.json": json.loads((plan_dir / "allocation.json").read_text()),
                "memory.json": json.loads(memory.read_text()) if memory.exists() else None}
    page = render_html(document, read["allocation.json"], read["memory.json"])
    (plan_dir / "report.html").write_text(page, encoding="utf-8")
    return plan_dir / "report.html"


def _whole(value: Any) -> int | None:
    return None if value is None else int(value)


def baseline_rows(outcome: Outcome) -> list[dict[str, Any]]:
    """The planner's result, its baselines and the lower bound, for the report, the terminal and plan.json.

    The first row is the plan's own status, objective and bound; with memory planning the
    others are the other memory plans by their memory.json names and replayed makespans.
    """
    plan = outcome.plan
    memory = outcome.memory
    if memory is not None:
        rows = [{"solver": f"planner ({outcome.memory_choice})", "status": plan.status,
                 "objective": plan.objective, "bound": plan.bound}]
        rows += [{"solver": name, "status": "FEASIBLE", "objective": int(value), "bound": None}
                 for name, value in outcome.memory_baselines.items() if name != outcome.memory_choice]
        rows.append({"solver": "lower bound", "status": "-", "objective": None, "bound": plan.bound})
        return rows
    r, h = outcome.result, outcome.heuristic
    # One name per baseline: the heuristic as the run's own baseline list names it, if it does.
    heuristic = next((k for k in outcome.baselines if k.startswith(h.solver_name)),
                     h.solver_name)
    return [
        {"solver": r.solver_name, "status": plan.status, "objective": plan.objective, "bound": plan.bound},
        {"solver": heuristic, "status": h.status.value, "objective": _whole(h.objective),
         "bound": _whole(h.bound)},
        *({**row, "objective": _whole(row["objective"]), "bound": _whole(row["bound"])}
          for row in outcome.extra_baselines),  # e.g. planner.max_load: linear split
        {"solver": "lower bound", "status": "-", "objective": None,
         "bound": _whole(outcome.result.stats.get("lower_bound"))},
    ]


def peak_memory_by_device(sim) -> dict[str, dict[str, int]]:
    """The simulator's peak live bytes per device and level (``device -> level -> bytes``).

    Levels are never summed: each is compared with its own capacity.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> peak_memory_by_device(SimpleNamespace(peak_bytes={"d0": {"sram": 5, "lpddr": 7}}))
    {'d0': {'sram': 5, 'lpddr': 7}}
    """
    return {device: dict(levels) for device, levels in (getattr(sim, "peak_bytes", {}) or {}).items()}
