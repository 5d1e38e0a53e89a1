"""The report's memory-hierarchy section (issue 3).

Every plan is named as ``memory.json`` ``baselines`` names it (``memory plan``, ``greedy
prefetch + greedy-by-size``, ``all in main memory``) and given one number, its replayed
makespan. Per device, the figures of each plan side by side: the replayed peak of live
bytes per level, the fast level's footprint (highest address + size in use), the bytes the
DMAs and the ops move, and the DMA time hidden under compute. A level's figures are set
against that level's capacity only.

Examples
--------
>>> render_memory_section(None, {}, {"g0": "its profile has one memory level"}).splitlines()[0]
'## Memory hierarchy'
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.report.markdown import format_bytes, format_gap
from planner.report.markdown import markdown_table as _table

__all__ = ["render_memory_section", "fast_footprint"]

MEMORY_PLAN = "memory plan"
GREEDY = "greedy prefetch + greedy-by-size"
ALL_IN_MAIN = "all in main memory"


def fast_footprint(dp) -> int:
    """The fast level's footprint: the highest ``address + size`` of a (non-view) buffer in it.

    Examples
    --------
    >>> from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer
    >>> dp = DeviceMemoryPlan("d", "sram", "dram", (), {}, (MemoryBuffer("a", "a", -1, "sram", 64, 32, 0, 5),), ())
    >>> fast_footprint(dp)
    96
    """
    return max((b.address + b.size_bytes for b in dp.buffers if b.level == dp.fast_level and not b.view_of),
               default=0)


def _ratio(peak: int | None, bound: int | None) -> str:
    return "-" if peak is None or not bound else f"{peak / bound:.3f}x"


def _main_only_bytes(graph, dp) -> int:
    """Bytes the device's ops read and write when every tensor lives in main memory."""
    total = 0
    for name in sorted({a.op for a in dp.accesses.values()}):
        op = graph.ops[name]
        total += sum(graph.tensors[t].size_bytes for t in {*op.inputs, *op.outputs})
    return total


def _comparison(device: str, columns: list[tuple[str, Any, Any]], peaks: Mapping[str, Any], graph,
                baselines: Mapping[str, int], fast: str, slow: str) -> str:
    """The figures of every plan for one device, side by side (``columns``: name, device plan, schedule)."""
    from planner.memory.figures import device_figures

    figures = {name: device_figures(dp, plan) for name, dp, plan in columns}
    names = [name for name, _, _ in columns] + [ALL_IN_MAIN]

    def peak(name: str, level: str) -> str:
        return format_bytes(((peaks.get(name) or {}).get(device) or {}).get(level))

    def each(key, level=None, last=format_bytes(0)):
        return [format_bytes(figures[n][key][level]) for n in names[:-1]] + [last]

    main_bytes = _main_only_bytes(graph, columns[0][1]) if graph is not None else None
    rows = [
        [f"peak live bytes, {fast}", *[peak(n, fast) for n in names]],
        [f"peak live bytes, {slow}", *[peak(n, slow) for n in names]],
        [f"footprint of {fast} (highest address + size)", *[format_bytes(fast_footprint(dp)) for _, dp, _ in columns],
         format_bytes(0)],
        [f"DMA {slow}->{fast}", *each("dma_bytes", f"{slow}->{fast}")],
        [f"DMA {fast}->{slow}", *each("dma_bytes", f"{fast}->{slow}")],
        [f"ops read/write in {fast}", *each("op_bytes", fast)],
        [f"ops read/write in {slow}", *each("op_bytes", slow, format_bytes(main_bytes))],
        ["DMA time hidden under compute", *[f"{100 * figures[n]['dma_hidden_fraction']:.1f}% of "
                                            f"{figures[n]['dma_cycles']} cycles" for n in names[:-1]], "-"],
        ["simulated makespan", *[baselines.get(n) for n in names]],
    ]
    return _table(["figure", *names], rows)


def _device_notes(dp, st: Mapping[str, Any], schedule) -> list[str]:
    from planner.memory.figures import device_figures

    fig = device_figures(dp, schedule)
    footprint, bound = fast_footprint(dp), st.get("fast_live_lower_bound_bytes")
    out = [f"- Memory plan's {dp.fast_level}: footprint {format_bytes(footprint)} against a live-bytes lower bound "
           f"of {format_bytes(bound)} ({_ratio(footprint, bound)}); greedy-by-size offsets on the same buffers "
           f"need {format_bytes(st.get('fast_peak_greedy_by_size_bytes'))}.",
           f"- {fig['dma_count']} DMAs, {fig['dma_cycles']} cycles, of which {fig['dma_hidden_cycles']} "
           f"({100 * fig['dma_hidden_fraction']:.1f}%) overlap compute."]
    if dp.split_factors:
        out.append("- Splits: " + ", ".join(f"`{g}` in {k} portions" for g, k in sorted(dp.split_factors.items()))
                   + " (the portions run in series; each is its own instruction sequence in the binary).")
    out.append(f"- Level assignment ({st.get('level_solver')}, this device's op order fixed): "
               f"{st.get('level_status')}, makespan in its model {st.get('level_makespan_device_cycles')} device "
               f"cycles, bound {st.get('level_bound_device_cycles')}, gap {format_gap(st.get('level_gap'))} "
               f"(the replayed makespans of every plan are in the table above).")
    out.append(f"- Fast offsets: {st.get('fast_offsets_status')}; "
               f"{format_bytes(st.get('reserve_bytes'))} of {dp.fast_level} held back for alignment padding.")
    return out


def render_memory_section(memory, baselines: Mapping[str, int], skipped: Mapping[str, str],
                          choice: str = MEMORY_PLAN, *, peaks: Mapping[str, Any] | None = None,
                          graph=None, capacities: Mapping[str, Mapping[str, int]] | None = None) -> str:
    """Markdown: which plan the binaries use, every plan's replayed makespan, and per device
    the figures of every plan side by side, with the memory plan's solver figures.

    ``memory`` is the :class:`planner.memory.MemoryOutcome` (the CP-SAT memory plan and its
    schedule, the greedy baseline's); ``baselines`` the replayed makespan of each plan by
    name; ``choice`` the plan the binaries (and memory.json) hold; ``peaks`` the replayed
    peak live bytes by plan, device and level; ``capacities`` each device's level capacities.
    """
    out = ["## Memory hierarchy", ""]
    for device, reason in sorted(skipped.items()):
        out.append(f"- {device}: not memory-planned ({reason}); its tensors live in main memory.")
    if memory is None or not memory.memory.devices:
        return "\n".join(out)
    if skipped:
        out.append("")
    chosen = baselines.get(choice)
    out += [f"The binaries (and memory.json) use: **{choice}**, the fastest of these plans, each lowered and "
            "replayed in the same run:", "",
            _table(["plan", "simulated makespan (cycles)", f"vs {choice}"],
                   [[name, value, "-" if name == choice or not chosen else f"{value / chosen:.3f}x"]
                    for name, value in baselines.items()]), ""]
    for name in sorted(memory.memory.devices):
        dp = memory.memory.devices[name]
        caps = (capacities or {}).get(name, {})
        out += [f"### {name}: fast level {dp.fast_level} (capacity {format_bytes(caps.get(dp.fast_level))}), "
                f"slow level {dp.slow_level} (capacity {format_bytes(caps.get(dp.slow_level))})", ""]
        columns = [(MEMORY_PLAN, dp, memory.plan)]
        if memory.greedy_memory is not None and name in memory.greedy_memory.devices:
            columns.append((GREEDY, memory.greedy_memory.devices[name], memory.greedy_plan))
        out += [_comparison(name, columns, peaks or {}, graph, baselines, dp.fast_level, dp.slow_level), ""]
        out += _device_notes(dp, dp.stats, memory.plan)
        out.append("")
    return "\n".join(out)
