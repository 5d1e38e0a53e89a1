"""The report's memory-hierarchy section (issue 3), rendered from ``memory.json`` alone.

Every plan is named as ``memory.json`` ``baselines`` names it (``memory plan``, ``greedy
prefetch + greedy-by-size``, ``all in main memory``) and given one number, its replayed
makespan. Per device, the ``figures`` of each plan side by side: the replayed peak of live
bytes per level, the fast level's footprint (highest address + size in use), the bytes the
DMAs and the ops move, and the DMA time hidden under compute; the headings give each
level's capacity, the only figure a level's peak is compared with.

Examples
--------
>>> render_memory_section({"choice": "all in main memory", "devices": {}, "baselines": {}, "figures": {},
...                        "skipped": {"g0": "its profile has one memory level"}}, {}).splitlines()[2]
'- g0: not memory-planned (its profile has one memory level); its tensors live in main memory.'
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.report.markdown import format_bytes, format_gap
from planner.report.markdown import markdown_table as _table

__all__ = ["render_memory_section", "fast_footprint"]


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


def _ratio(value: int | None, bound: int | None) -> str:
    return "-" if value is None or not bound else f"{value / bound:.3f}x"


def _hidden(fig: Mapping[str, Any]) -> str:
    if not fig["dma_cycles"]:
        return "-"
    return f"{100 * fig['dma_hidden_cycles'] / fig['dma_cycles']:.1f}% of {fig['dma_cycles']} cycles"


def _others(figs: Mapping[str, Any], key: str, known: tuple[str, ...]) -> list[str]:
    """The entries of ``key`` beyond ``known`` in any plan's figures, sorted."""
    return sorted({k for fig in figs.values() for k in fig[key] if k not in known})


def _touches(fig: Mapping[str, Any], level: str) -> bool:
    """Whether a plan's DMAs move bytes into or out of ``level``."""
    return any(moved and level in pair.split("->") for pair, moved in fig["dma_bytes"].items())


def _comparison(device: str, doc: Mapping[str, Any], fast: str, slow: str) -> str:
    """The figures of every plan for one device, side by side."""
    names = sorted((n for n in doc["baselines"] if device in doc["figures"].get(n, {})),
                   key=lambda n: (n != doc["choice"], n == "all in main memory"))  # the binaries' plan first
    figs = {n: doc["figures"][n][device] for n in names}
    rows = [
        [f"peak live bytes, {fast}", *[format_bytes(figs[n]["peak_live_bytes"].get(fast, 0)) for n in names]],
        [f"peak live bytes, {slow}", *[format_bytes(figs[n]["peak_live_bytes"].get(slow, 0)) for n in names]],
        [f"footprint of {fast} (highest address + size)", *[format_bytes(figs[n]["fast_footprint_bytes"])
                                                            for n in names]],
        *[[f"DMA {pair}", *[format_bytes(figs[n]["dma_bytes"][pair]) for n in names]]
          for pair in (f"{slow}->{fast}", f"{fast}->{slow}")],
        *[[f"ops read/write in {level}", *[format_bytes(figs[n]["op_bytes"][level]) for n in names]]
          for level in (fast, slow)],
        # A plan over more than two levels: the other levels' peaks, DMA pairs and op bytes.
        *[[f"peak live bytes, {level}", *[format_bytes(figs[n]["peak_live_bytes"].get(level, 0)) for n in names]]
          for level in _others(figs, "peak_live_bytes", (fast, slow)) if any(figs[n]["op_bytes"].get(level)
                                                                              or _touches(figs[n], level) for n in names)],
        *[[f"DMA {pair}", *[format_bytes(figs[n]["dma_bytes"].get(pair, 0)) for n in names]]
          for pair in _others(figs, "dma_bytes", (f"{slow}->{fast}", f"{fast}->{slow}"))],
        *[[f"ops read/write in {level}", *[format_bytes(figs[n]["op_bytes"].get(level, 0)) for n in names]]
          for level in _others(figs, "op_bytes", (fast, slow))],
        ["DMA time hidden under compute", *[_hidden(figs[n]) for n in names]],
        ["simulated makespan", *[doc["baselines"][n] for n in names]],
    ]
    return _table(["figure", *names], rows)


def _greedy_by_size_text(st: Mapping[str, Any]) -> str:
    """What greedy-by-size offsets need on the same buffers (for a kept cycle-time plan on
    several streams, its pieces kept apart on both axes: planner/memory/streams.py), or that
    none is valid for the plan's times."""
    figure = st.get("fast_peak_greedy_by_size_bytes")
    if figure is None:
        return "greedy-by-size offsets on the same buffers: none valid for this plan's times"
    return f"greedy-by-size offsets on the same buffers need {format_bytes(figure)}"


def _device_notes(dp: Mapping[str, Any], fig: Mapping[str, Any]) -> list[str]:
    st = dp.get("stats") or {}
    out = [f"- {fig['dma_count']} DMAs, {fig['dma_cycles']} cycles, of which {fig['dma_hidden_cycles']} "
           f"overlap compute."]
    if st.get("fast_live_lower_bound_bytes") is not None:
        bound = st["fast_live_lower_bound_bytes"]
        out.append(f"- Footprint of {dp['fast_level']}: {format_bytes(fig['fast_footprint_bytes'])} against a "
                   f"live-bytes lower bound of {format_bytes(bound)} ({_ratio(fig['fast_footprint_bytes'], bound)}); "
                   f"{_greedy_by_size_text(st)}.")
    if dp.get("split_factors"):
        out.append("- Splits: " + ", ".join(f"`{g}` in {k} portions" for g, k in sorted(dp["split_factors"].items()))
                   + " (the portions run in series; each is its own instruction sequence in the binary).")
    if st.get("level_solver") and st.get("levels"):  # the plan over every level
        out.append(f"- Level assignment over every level ({st['level_solver']}, this device's op order fixed, "
                   f"unsplit): {st.get('level_status')}, makespan in its model {st.get('level_makespan_device_cycles')} "
                   f"device cycles, bound {st.get('hierarchy_bound_device_cycles')} (over unsplit plans of this order "
                   f"only, so it proves nothing about the plan; the replayed makespans are in the table above).")
        if st.get("plan_bound_device_cycles") is not None:
            out.append(f"- Bound over every plan of this device (any order of its ops, any split, every level at "
                       f"full capacity): {st['plan_bound_device_cycles']} device cycles (on a one-stream device the plan's bound includes it).")
    elif st.get("level_solver"):
        out.append(f"- Level assignment ({st['level_solver']}, this device's op order fixed): "
                   f"{st.get('level_status')}, makespan in its model {st.get('level_makespan_device_cycles')} device "
                   f"cycles, bound {st.get('level_bound_device_cycles')}, gap {format_gap(st.get('level_gap'))} "
                   f"(the replayed makespans of every plan are in the table above).")
        if st.get("stream_plan_bound_device_cycles") is not None:
            splits = "any split" if st.get("stream_plan_bound_splits") else "unsplit"
            out.append(f"- Bound over every plan of this device (any order of its ops, any stream, any level "
                       f"assignment, {splits}): {st['stream_plan_bound_device_cycles']} device cycles (on a "
                       f"one-device spec the plan's bound includes it).")
        if "fast_offsets_status" in st:
            out.append(f"- Fast offsets: {st.get('fast_offsets_status')}; {format_bytes(st.get('reserve_bytes'))} "
                       f"of {dp['fast_level']} held back for alignment padding.")
    out += _streams_lines(st)
    if st.get("levels"):
        homes = ", ".join(f"`{t}` in {lv}" for t, lv in sorted((st.get("homes") or {}).items())) or "none"
        out.append(f"- Planned over every level: {', '.join(st['levels'])} (tensors homed outside main memory: "
                   f"{homes}); in the model, greedy {st.get('greedy_makespan_device_cycles')} and everything at "
                   f"home {st.get('all_home_makespan_device_cycles')} device cycles.")
    return out


def _streams_lines(st: Mapping[str, Any]) -> list[str]:
    """Several streams: a line saying the plan kept is not the level solver's (docs/memory.md,
    "Several compute streams")."""
    if st.get("by_address"):
        fig = st["by_address"]
        model = fig.get("time_model") or {}
        if model.get("kept"):
            return [f"- Several streams: kept the cycle-time model's plan (offsets in the model; {model['status']} "
                    f"for the fixed {model['fixed']}, its bound {model['model_bound_device_cycles']}), "
                    f"{fig['kept_device_cycles']} device cycles against {fig['level_plan_device_cycles']} for the "
                    f"level solver's plan with its own offsets."]
        out = []
        if fig["kept_device_cycles"] < fig["level_plan_device_cycles"]:
            out.append(f"- Several streams: kept a plan made for the memory order by address (fast offsets packed to "
                       f"keep the streams apart), {fig['kept_device_cycles']} device cycles against "
                       f"{fig['level_plan_device_cycles']} for the level solver's plan with its own offsets.")
        return out + _time_model_not_kept(fig, model)
    if st.get("kept_for_streams"):
        return [f"- Several streams: kept the {st['kept_for_streams']} plan, shorter than the level solver's once "
                f"each op runs on its stream."]
    return []


def _time_model_not_kept(fig: Mapping[str, Any], model: Mapping[str, Any]) -> list[str]:
    """The cycle-time model's outcome when its plan was not kept: a proof that the kept plan is the
    shortest for the fixed order, its bound, or why it did not run."""
    if not model:
        return []
    kept = fig["kept_device_cycles"]
    if model["status"] == "NOT RUN":
        return [f"- Several streams: the cycle-time model (offsets in the model) did not run: {model['reason']}."]
    if model["status"] == "OPTIMAL":
        return [f"- Several streams: the cycle-time model (offsets in the model) proves the kept plan's {kept} device "
                f"cycles OPTIMAL for the fixed {model['fixed']}."]
    if model.get("device_cycles") is None:
        return [f"- Several streams: the cycle-time model (offsets in the model) found no plan within its budget "
                f"({model['status']}); the kept plan takes {kept} device cycles."]
    return [f"- Several streams: the cycle-time model (offsets in the model) found nothing shorter than the kept "
            f"plan's {kept} device cycles ({model['status']}; its bound {model['model_bound_device_cycles']} for "
            f"the fixed {model['fixed']})."]


def render_memory_section(doc: Mapping[str, Any], capacities: Mapping[str, Mapping[str, int]]) -> str:
    """Markdown from the ``memory.json`` document ``doc``: the plan the binaries use, every plan's
    replayed makespan, and per device every plan's figures side by side, with the chosen
    plan's split factors and solver figures. ``capacities``: per device, each level's capacity.
    """
    out = ["## Memory hierarchy", ""]
    for device, reason in sorted(doc["skipped"].items()):
        out.append(f"- {device}: not memory-planned ({reason}); its tensors live in main memory.")
    if not doc["figures"]:
        return "\n".join(out)
    if doc["skipped"]:
        out.append("")
    choice, baselines = doc["choice"], doc["baselines"]
    chosen = baselines.get(choice)
    out += [f"The binaries (and memory.json) use: **{choice}**, the fastest of these plans, each lowered and "
            "replayed in the same run:", "",
            _table(["plan", "simulated makespan (cycles)", f"vs {choice}"],
                   [[name, value, "-" if name == choice or not chosen else f"{value / chosen:.3f}x"]
                    for name, value in baselines.items()]), ""]
    out += _cross_device_lines(doc)
    devices = sorted({d for per_plan in doc["figures"].values() for d in per_plan})
    for name in devices:
        dp = doc["devices"].get(name)
        fast, slow = (dp["fast_level"], dp["slow_level"]) if dp else _levels(doc, name)
        caps = capacities.get(name, {})
        out += [f"### {name}: fast level {fast} (capacity {format_bytes(caps.get(fast))}), "
                f"slow level {slow} (capacity {format_bytes(caps.get(slow))})", ""]
        out += [_comparison(name, doc, fast, slow), ""]
        if dp is not None:
            out += _device_notes(dp, doc["figures"][choice][name])
        else:
            out.append(f"- The binaries keep every tensor of {name} in main memory ({choice}).")
        out.append("")
    return "\n".join(out)


def _cross_device_lines(doc: Mapping[str, Any]) -> list[str]:
    """Per device of a multi-device plan, which plan the memory plan uses on it and, where it is
    not the device's own memory plan (or the memory plan is not kept), why, in numbers.

    Examples
    --------
    >>> doc = {"choice": "all in main memory", "baselines": {"memory plan": 606856, "all in main memory": 606802},
    ...        "cross_device": {"big0": {"plan": "main", "own_memory_cycles": 329161, "own_main_cycles": 330966,
    ...                                  "alone_makespan": 617324, "main_makespan": 606856, "slack_cycles": 0,
    ...                                  "resolved_cycles": 637188, "resolved_bound_cycles": 636624,
    ...                                  "resolved_main_cycles": 637188}}}
    >>> for line in _cross_device_lines(doc): print(line)
    Across devices (each device's plan chosen by the whole plan's re-timed makespan):
    <BLANKLINE>
    - big0: main memory only. Its memory plan saves 1,805 device cycles on its own ops (329,161 vs 330,966 with everything in main memory), but on its own it makes the whole plan 617,324 cycles against 606,856 (+10,468), and neither it nor its re-solve under the other devices' release times and tails shortens the whole plan (re-solved with the other devices' waits and tails: 637,188 device cycles against 637,188 with everything in main memory, lower bound 636,624: at most 564 to gain); the critical path (slack 0) runs through big0; big0's slack: 0 cycles.
    - The best combination across devices re-times to 606,856 cycles in the replay, no faster than all in main memory (606,802), which the binaries use.
    <BLANKLINE>
    """
    cross = doc.get("cross_device")
    if not cross:
        return []
    critical = ", ".join(sorted(d for d, e in cross.items() if e["slack_cycles"] == 0)) or "no memory-planned device"
    out = ["Across devices (each device's plan chosen by the whole plan's re-timed makespan):", ""]
    for d, e in sorted(cross.items()):
        own, main = e["own_memory_cycles"], e["own_main_cycles"]
        saves = (f"Its memory plan saves {main - own:,} device cycles on its own ops ({own:,} vs {main:,} with "
                 f"everything in main memory)" if own is not None and main is not None else "Its memory plan")
        alone = ("on its own it cannot be combined with the others in main memory (its slow copies do not "
                 "fit, or its order and theirs wait on each other)" if e["alone_makespan"] is None
                 else f"on its own it makes the whole plan {e['alone_makespan']:,} cycles against "
                      f"{e['main_makespan']:,} ({e['alone_makespan'] - e['main_makespan']:+,})")
        where = f"the critical path (slack 0) runs through {critical}; {d}'s slack: {e['slack_cycles']:,} cycles"
        if e.get("n_level_cycles") is not None:  # offered its plan over all its levels
            levels = (f"its plan over all its levels takes {e['n_level_cycles']:,} device cycles on its own ops"
                      f"{' (the one the binaries use)' if e['plan'] == 'n levels' else ''}")
            # a device that reads homed tensors has no plan in main memory to compare with
            saves = f"{saves}; {levels}" if main is not None else levels[0].upper() + levels[1:]
        if e["plan"] == "main":
            out.append(f"- {d}: main memory only. {saves}, but {alone}, and neither it nor its re-solve under the "
                       f"other devices' release times and tails shortens the whole plan{_resolved(e)}; {where}.")
        else:
            label = {"memory plan": "its memory plan",
                     "heads/tails": "its memory plan re-solved under the other devices' release times and tails",
                     "greedy": "the greedy prefetch plan",
                     "all at home": "every tensor read where it lives (main memory, or the level memory.home names)",
                     "n levels": "its plan over all its levels (solved on its own ops; the whole plan's re-timing "
                                 "gives it the other devices' arrivals)",
                     "n levels heads/tails": "its plan over all its levels re-solved under the other devices' "
                                             "arrivals, tails and send deadlines"}.get(e["plan"], e["plan"])
            out.append(f"- {d}: {label}. {saves}; {alone}{_resolved(e)}; {where}.")
    if doc["choice"] != "memory plan" and "memory plan" in doc["baselines"]:
        out.append(f"- The best combination across devices re-times to {doc['baselines']['memory plan']:,} cycles "
                   f"in the replay, no faster than {doc['choice']} ({doc['baselines'][doc['choice']]:,}), which the "
                   "binaries use.")
    out += _bound_lines(doc.get("cross_device_bound"))
    return out + [""]


def _bound_lines(entry: Mapping[str, Any] | None) -> list[str]:
    """The proven bound on every memory plan of the placement and orders, and the gap to it.
    Under ``bandwidth: shared`` (``shared_bound_cycles`` present) the line also gives main
    memory's share term and names the term that gives the bound.

    Examples
    --------
    >>> for line in _bound_lines({"bound_cycles": 263000, "path_bound_cycles": 263000, "spine_bound_cycles": 140000,
    ...                           "makespan_cycles": 263697, "gap": 0.002643}): print(line)
    - Bound: every memory plan of this placement and these orders takes at least 263,000 cycles (the longest path through the plan with each op at its shortest duration in any memory plan, and each link's transfers one at a time: 263,000; the plan's own bound: 140,000); the binaries' plan takes 263,697 cycles, a gap of 0.26%.
    >>> for line in _bound_lines({"bound_cycles": 43352, "path_bound_cycles": 25583, "shared_bound_cycles": 43352,
    ...                           "spine_bound_cycles": 20000, "makespan_cycles": 43648, "gap": 0.006782}): print(line)
    - Bound: every memory plan of this placement and these orders takes at least 43,352 cycles, given by main memory's shared bandwidth (the longest path through the plan with each op at its shortest duration in any memory plan, and each link's transfers one at a time: 25,583; each device's main-memory share-cycles, one device at a time under shared bandwidth: 43,352; the plan's own bound: 20,000); the binaries' plan takes 43,648 cycles, a gap of 0.68%.
    """
    if not entry:
        return []
    spine = "none" if entry["spine_bound_cycles"] is None else f"{entry['spine_bound_cycles']:,}"
    shared = entry.get("shared_bound_cycles")
    giver = shared_part = ""
    if shared is not None:
        giver = ", given by " + _bound_giver(entry)
        shared_part = f"each device's main-memory share-cycles, one device at a time under shared bandwidth: {shared:,}; "
    return [f"- Bound: every memory plan of this placement and these orders takes at least {entry['bound_cycles']:,} "
            f"cycles{giver} (the longest path through the plan with each op at its shortest duration in any memory "
            f"plan, and each link's transfers one at a time: "
            f"{entry['path_bound_cycles']:,}; {shared_part}the plan's own bound: {spine}); the binaries' plan takes "
            f"{entry['makespan_cycles']:,} cycles, a gap of {100 * entry['gap']:.2f}%."]


def _bound_giver(entry: Mapping[str, Any]) -> str:
    """Which part of ``cross_device_bound`` equals its bound (main memory's share term first on a tie)."""
    if entry.get("shared_bound_cycles") == entry["bound_cycles"]:
        return "main memory's shared bandwidth"
    if entry["path_bound_cycles"] == entry["bound_cycles"]:
        return "the longest path and the links"
    return "the plan's own bound"


def _resolved(e: Mapping[str, Any]) -> str:
    """The last re-solve's figures (device cycles, with the other devices' waits and tails)."""
    best, bound, main = e.get("resolved_cycles"), e.get("resolved_bound_cycles"), e.get("resolved_main_cycles")
    if best is None or main is None:
        return ""
    room = "" if bound is None else f", lower bound {bound:,}: at most {max(0, main - bound):,} to gain"
    if e.get("resolved_levels") == "all":
        return (f" (re-solved over every level with the other devices' waits and tails: {best:,} device cycles "
                f"against {main:,} with everything at its home{room})")
    return (f" (re-solved with the other devices' waits and tails: {best:,} device cycles against {main:,} with "
            f"everything in main memory{room})")


def _levels(doc: Mapping[str, Any], device: str) -> tuple[str, str]:
    """(fast, slow) level names of a device from the figures (when memory.json holds no plan for it)."""
    for per_plan in doc["figures"].values():
        fig = per_plan.get(device)
        if fig:
            slow_to_fast = next(iter(fig["dma_bytes"]))
            slow, fast = slow_to_fast.split("->")
            return fast, slow
    return "?", "?"
