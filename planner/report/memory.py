"""The report's memory-hierarchy section (issue 3).

Examples
--------
>>> render_memory_section(None, None, {}, {"g0": "its profile has one memory level"}).splitlines()[0]
'## Memory hierarchy'
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.report.markdown import format_bytes, format_gap
from planner.report.markdown import markdown_table as _table

__all__ = ["render_memory_section"]




def _ratio(peak: int | None, bound: int | None) -> str:
    if peak is None or not bound:
        return "-"
    return f"{peak / bound:.3f}x"


def _fragmentation(peak: int | None, bound: int | None) -> str:
    if not peak or bound is None:
        return "-"
    return f"{100 * (peak - bound) / peak:.2f}%"


def _main_only_bytes(graph, dp) -> int:
    """Bytes the device's ops read and write when every tensor lives in main memory."""
    total = 0
    for name in sorted({a.op for a in dp.accesses.values()}):
        op = graph.ops[name]
        total += sum(graph.tensors[t].size_bytes for t in {*op.inputs, *op.outputs})
    return total


def _comparison(dp, plan, greedy, peaks: Mapping[str, Any], graph, baselines: Mapping[str, int]) -> str:
    """The same figures for the memory plan and both baselines, side by side."""
    from planner.memory.figures import device_figures

    fast, slow = dp.fast_level, dp.slow_level
    columns = [("memory plan", dp, plan)]
    gmem, gplan = greedy if greedy else (None, None)
    if gmem is not None and dp.device in gmem.devices:
        columns.append(("greedy prefetch + greedy-by-size", gmem.devices[dp.device], gplan))
    figures = {name: device_figures(d, p) for name, d, p in columns}
    names = [name for name, _, _ in columns] + ["all in main memory"]

    def peak(name: str, level: str) -> str:
        return format_bytes(((peaks.get(name) or {}).get(dp.device) or {}).get(level))

    main_bytes = _main_only_bytes(graph, dp) if graph is not None else None
    rows = [
        [f"peak {fast}", *[peak(n, fast) for n in names[:-1]], format_bytes(0)],
        [f"peak {slow}", *[peak(n, slow) for n in names]],
        [f"DMA {slow}->{fast}", *[format_bytes(figures[n]["dma_bytes"][f"{slow}->{fast}"]) for n in names[:-1]],
         format_bytes(0)],
        [f"DMA {fast}->{slow}", *[format_bytes(figures[n]["dma_bytes"][f"{fast}->{slow}"]) for n in names[:-1]],
         format_bytes(0)],
        [f"ops read/write in {fast}", *[format_bytes(figures[n]["op_bytes"][fast]) for n in names[:-1]],
         format_bytes(0)],
        [f"ops read/write in {slow}", *[format_bytes(figures[n]["op_bytes"][slow]) for n in names[:-1]],
         format_bytes(main_bytes)],
        ["DMA time hidden under compute", *[f"{100 * figures[n]['dma_hidden_fraction']:.1f}% of "
                                            f"{figures[n]['dma_cycles']} cycles" for n in names[:-1]], "-"],
        ["simulated makespan", *[baselines.get(n) for n in names]],
    ]
    return _table(["figure", *names], rows)


def render_memory_section(memory, plan, baselines: Mapping[str, int], skipped: Mapping[str, str],
                          choice: str = "memory plan", *, greedy=None, peaks: Mapping[str, Any] | None = None,
                          graph=None) -> str:
    """Markdown: per device, level peaks against their bounds, bytes moved, hidden DMA time,
    split factors, the level solver's figures, and the baselines' simulated makespans.

    ``plan`` is the memory plan's schedule (CP-SAT levels); ``choice`` names the plan the
    binaries use (the fastest of it and the baselines)."""
    from planner.memory.figures import device_figures

    out = ["## Memory hierarchy", ""]
    for device, reason in sorted(skipped.items()):
        out.append(f"- {device}: not memory-planned ({reason}); its tensors live in main memory.")
    if memory is None or not memory.devices:
        return "\n".join(out)
    if skipped:
        out.append("")
    if baselines:
        out += [f"The binaries use: **{choice}** (the fastest replayed plan below).", "",
                "Simulated makespans, same run (every plan lowered and replayed):", ""]
        rows = [["memory plan (CP-SAT levels + CP-SAT offsets)", plan.makespan_cycles, "-"]]
        for name, value in baselines.items():
            if name == "memory plan":
                continue
            rows.append([name, value, f"{value / max(plan.makespan_cycles, 1):.3f}x"])
        out += [_table(["plan", "makespan (cycles)", "makespan / memory plan's"], rows), ""]
    for name in sorted(memory.devices):
        dp = memory.devices[name]
        fig = device_figures(dp, plan)
        st = dp.stats
        out += [f"### {name}: fast level {dp.fast_level}, slow level {dp.slow_level}", ""]
        out.append(_table(["level", "peak", "lower bound", "peak / bound", "fragmentation",
                           "greedy-by-size, same buffers", "greedy baseline", "capacity"], [
            [dp.fast_level, format_bytes(st.get("fast_peak_bytes")), format_bytes(st.get("fast_live_lower_bound_bytes")),
             _ratio(st.get("fast_peak_bytes"), st.get("fast_live_lower_bound_bytes")),
             _fragmentation(st.get("fast_peak_bytes"), st.get("fast_live_lower_bound_bytes")),
             format_bytes(st.get("fast_peak_greedy_by_size_bytes")),
             format_bytes(st.get("greedy_baseline_fast_peak_bytes"))
             + ("" if st.get("greedy_baseline_fits", True) else " (does not fit)"),
             format_bytes(st.get("fast_capacity_bytes"))],
            [dp.slow_level, format_bytes(fig["peak_bytes"].get(dp.slow_level)), "-", "-", "-", "-", "-", "-"],
        ]))
        out += ["", _table(["moved", "bytes"], [
            *[[f"DMA {k}", format_bytes(v)] for k, v in fig["dma_bytes"].items()],
            *[[f"ops read/write in {k}", format_bytes(v)] for k, v in fig["op_bytes"].items()],
        ]), ""]
        if peaks:
            out += ["Same figures, same run, for the baselines (peaks as the simulator replayed them):", "",
                    _comparison(dp, plan, greedy, peaks, graph, baselines), ""]
        hidden = fig["dma_hidden_fraction"]
        out.append(f"- {fig['dma_count']} DMAs, {fig['dma_cycles']} cycles, of which {fig['dma_hidden_cycles']} "
                   f"({100 * hidden:.1f}%) overlap compute.")
        if dp.split_factors:
            out.append("- Splits: " + ", ".join(f"`{g}` in {k} portions" for g, k in sorted(dp.split_factors.items()))
                       + " (the portions run in series; each is its own instruction sequence in the binary).")
        out.append(f"- Level assignment ({st.get('level_solver')}, this device's op order fixed): "
                   f"{st.get('level_status')}, makespan {st.get('level_makespan_device_cycles')} device cycles, "
                   f"bound {st.get('level_bound_device_cycles')}, gap {format_gap(st.get('level_gap'))}; "
                   f"greedy {st.get('greedy_makespan_device_cycles')}, "
                   f"all in {dp.slow_level} {st.get('all_in_main_makespan_device_cycles')}.")
        out.append(f"- Fast offsets: {st.get('fast_offsets_status')}; "
                   f"{format_bytes(st.get('reserve_bytes'))} of {dp.fast_level} held back for alignment padding.")
        out.append("")
    return "\n".join(out)
