"""The report's memory-hierarchy section (issue 3).

Examples
--------
>>> render_memory_section(None, None, {}, {"g0": "its profile has one memory level"}).splitlines()[0]
'## Memory hierarchy'
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.report.markdown import format_bytes, format_gap

__all__ = ["render_memory_section"]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("-" if c is None else str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _ratio(peak: int | None, bound: int | None) -> str:
    if peak is None or not bound:
        return "-"
    return f"{peak / bound:.3f}x"


def _fragmentation(peak: int | None, bound: int | None) -> str:
    if not peak or bound is None:
        return "-"
    return f"{100 * (peak - bound) / peak:.2f}%"


def render_memory_section(memory, plan, baselines: Mapping[str, int], skipped: Mapping[str, str],
                          choice: str = "memory plan") -> str:
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
            rows.append([name, value, f"{100 * (value - plan.makespan_cycles) / max(value, 1):+.1f}% slower"
                         if value >= plan.makespan_cycles else
                         f"{100 * (plan.makespan_cycles - value) / max(value, 1):.1f}% faster"])
        out += [_table(["plan", "makespan (cycles)", "baseline vs memory plan"], rows), ""]
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
