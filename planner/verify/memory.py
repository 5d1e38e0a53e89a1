"""``memory.json`` against the binaries: buffers, DMAs, op accesses, levels, the chosen plan.

Every memory-planned device's entry (and no other device: a device whose binary has no
fast level has none) must say what its binary does:

* ``fast_level`` / ``slow_level``: the binary's fast and main levels;
* ``buffers``: exactly the binary's buffers, each with its level, address, bytes,
  lifetime ``[ALLOC, FREE)`` and preloaded flag; ``view_of`` set exactly for views, naming
  a live buffer of the same level that contains the view's bytes over its whole life;
  ``tensor`` a tensor of graph.json (or empty for a control edge's buffer) and ``portion``
  the one the name gives;
* ``transfers`` (DMAs): exactly the binary's memory DMAs, each with its source, destination,
  bytes and timing as replayed, its trigger op the one whose SIGNAL the DMA waits on (it
  ends before the DMA starts) and its release op the one that waits on the DMA (it starts
  after the DMA ends);
* ``order``: the device's op instances as replayed, in start order; ``accesses``: per
  instance its graph op and portion, the buffers of each operand (the binary's kernel
  operands, or the instruction's reads and writes for ops without a kernel) and the bytes
  it moves in the fast and the slow level (the instruction's roofline bytes) and, for a plan
  over more than two levels, ``level_bytes`` per level (the instruction's level bytes);
* ``split_factors``: each split group's factor is its first and last op's;
* ``stats``: the fast level's capacity and footprint (highest address + size in use); with
  several streams, ``by_address`` agrees with itself (:func:`_check_by_address`);

and the top level: ``choice`` is the baseline whose replayed makespan the plan has, the
smallest of them; ``figures`` of the chosen plan are the replay's: per device the peak of
live bytes per level, the fast footprint, the bytes and cycles of the DMAs (and how many
overlap the device's compute), the bytes the ops move per level.

Examples
--------
>>> instance_portion("fc#2"), instance_portion("fc")
(2, -1)
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.errors import VerificationError
from planner.instances import split_instance
from planner.plan import relative_gap

__all__ = ["instance_portion", "check_memory_document", "check_level_claims", "replayed_figures"]

_FILE = "memory.json"


def instance_portion(name: str) -> int:
    """The portion an instance or buffer name gives (``"x#p..."``), or -1.

    >>> instance_portion("x#1@sram.0")
    1
    """
    _, portion = split_instance(name.split("@", 1)[0])
    return -1 if portion is None else portion


def _fail(field: str, expected: Any, found: Any, detail: str | None = None) -> VerificationError:
    return VerificationError(_FILE, field, expected=str(expected), found=str(found), detail=detail)


def _check_buffers(name: str, entry: Any, facts: Any, graph: Any) -> None:
    where = f"devices.{name}.buffers"
    listed: dict[str, Any] = {}
    for i, b in enumerate(entry.buffers):
        if b.name in listed:
            raise VerificationError(_FILE, f"{where}[{i}]", detail=f"buffer {b.name!r} listed twice")
        listed[b.name] = b
    missing = [n for n in facts.buffers if n not in listed]
    if missing:
        raise VerificationError(_FILE, where, detail=f"the binary of {name} has buffer {missing[0]!r}, memory.json "
                                                     "does not list it")
    for i, b in enumerate(entry.buffers):
        got = facts.buffers.get(b.name)
        at = f"{where}[{i}] {b.name!r}"
        if got is None:
            raise VerificationError(_FILE, at, detail=f"the binary of {name} has no such buffer")
        want = (got.level, got.address, got.size_bytes, got.start_cycle, got.end_cycle, got.preloaded, got.view)
        claim = (b.level, b.address, b.size_bytes, b.start_cycle, b.end_cycle, b.preloaded, bool(b.view_of))
        if want != claim:
            raise _fail(at, f"level, address, bytes, [start, end), preloaded, view = {want} (the binary)", claim)
        if b.view_of:
            parent = listed.get(b.view_of)
            if parent is None or parent.view_of or parent.level != b.level or not (
                    parent.address <= b.address and b.address + b.size_bytes <= parent.address + parent.size_bytes
                    and parent.start_cycle <= b.start_cycle and b.end_cycle <= parent.end_cycle):
                raise VerificationError(_FILE, f"{at}.view_of", detail=f"{b.view_of!r} is not a buffer of level "
                                        f"{b.level} holding the view's bytes over its life")
        if b.tensor and b.tensor not in graph.tensors:
            raise VerificationError(_FILE, f"{at}.tensor", detail=f"graph.json has no tensor {b.tensor!r}")
        if b.portion != instance_portion(b.name):
            raise _fail(f"{at}.portion", f"{instance_portion(b.name)} (the buffer's name)", b.portion)


def _check_dmas(name: str, entry: Any, dmas: list[Any], facts: Any, simulation: Any) -> None:
    where = f"devices.{name}.transfers"
    replayed = {d.op: d for d in dmas}
    listed = [f"{t.kind}:{t.dst_buffer}" for t in entry.transfers]
    if len(set(listed)) != len(listed) or set(listed) != set(replayed):
        extra = sorted(set(replayed) - set(listed)) or sorted(set(listed) - set(replayed)) or ["(a DMA listed twice)"]
        raise VerificationError(_FILE, where, detail=f"the DMAs differ from the binary of {name}'s: {extra[0]!r}")
    for i, t in enumerate(entry.transfers):
        d = replayed[listed[i]]
        at = f"{where}[{i}] {listed[i]!r}"
        want = (d.src_buffer, d.dst_buffer, d.size_bytes, d.start_cycle, d.end_cycle)
        claim = (t.src_buffer, t.dst_buffer, t.size_bytes, t.start_cycle, t.end_cycle)
        if want != claim:
            raise _fail(at, f"source, destination, bytes, start, end = {want} (the binary)", claim)
        triggers = facts.signalled_by.get(listed[i], [])
        if (triggers != [t.trigger_op]) if t.trigger_op else triggers:
            raise _fail(f"{at}.trigger_op", f"{triggers[0] if triggers else ''!r} (the op the DMA waits on)",
                        repr(t.trigger_op))
        releases = [op for op, signals in facts.signalled_by.items() if listed[i] in signals]
        if (releases != [t.release_op]) if t.release_op else releases:
            raise _fail(f"{at}.release_op", f"{releases[0] if releases else ''!r} (the op waiting on the DMA)",
                        repr(t.release_op))
        trigger = simulation.ops.get(t.trigger_op)
        release = simulation.ops.get(t.release_op)
        if (t.trigger_op and (trigger is None or trigger.end_cycle > t.start_cycle)) or (
                t.release_op and (release is None or release.start_cycle < t.end_cycle)):
            raise VerificationError(_FILE, at, detail="does not run between the end of its trigger op and the start "
                                                      "of its release op")
        if t.tensor != d.dst_buffer.split("#", 1)[0].split("@", 1)[0] or t.portion != instance_portion(t.dst_buffer):
            raise _fail(f"{at}.tensor/portion", "the tensor and portion its buffers name", f"{t.tensor!r} {t.portion}")


def _check_accesses(name: str, entry: Any, facts: Any, simulation: Any, base: Mapping[str, str],
                    levels: tuple = ()) -> None:
    where = f"devices.{name}.accesses"
    mine = sorted((t.start_cycle, t.end_cycle, op) for op, t in simulation.ops.items() if t.device == name)
    if sorted(entry.order) != sorted(op for *_, op in mine) or len(set(entry.order)) != len(entry.order):
        raise _fail(f"devices.{name}.order", "the op instances the binary runs", f"{len(entry.order)} entries")
    starts = [simulation.ops[op].start_cycle for op in entry.order]
    if starts != sorted(starts):
        raise VerificationError(_FILE, f"devices.{name}.order", detail="not the order the binary runs them in")
    if [a.instance for a in entry.accesses] != list(entry.order):
        raise VerificationError(_FILE, where, detail="not one access per instance of order, in its order")
    for i, a in enumerate(entry.accesses):
        at = f"{where}[{i}] {a.instance!r}"
        ins = facts.compute.get(a.instance)
        if ins is None:
            raise VerificationError(_FILE, at, detail=f"the binary of {name} has no compute instruction for it")
        if base.get(a.instance) != a.op or a.portion != instance_portion(a.instance) or (
                (a.factor > 1) != (a.portion >= 0)) or a.portion >= a.factor:
            raise _fail(f"{at}.op/portion/factor", f"op {base.get(a.instance)!r} (the instance's name)",
                        f"{a.op!r} portion {a.portion} of {a.factor}")
        operands = facts.kernel_operands.get(a.instance)
        if operands is not None:
            claim = ([list(x) for x in a.inputs], [list(x) for x in a.outputs])
            if claim != operands:
                raise _fail(f"{at}.inputs/outputs", f"{operands} (the binary's kernel)", claim)
        elif {n for x in a.outputs for n in x} != _names(facts, ins.writes):
            raise _fail(f"{at}.outputs", f"{sorted(_names(facts, ins.writes))} (the instruction's writes)",
                        [list(x) for x in a.outputs])
        if (a.fast_bytes, a.slow_bytes) != (ins.fast_bytes, ins.mem_bytes):
            raise _fail(f"{at}.fast_bytes/slow_bytes", (ins.fast_bytes, ins.mem_bytes), (a.fast_bytes, a.slow_bytes))
        want_levels = {lv.name: b for lv, b in zip(levels, ins.level_bytes)} if ins.level_bytes else None
        if want_levels is not None and a.level_bytes is not None:
            # The access names the planned levels (from the fast level on); the others move nothing.
            want_levels = {lv: b for lv, b in want_levels.items() if lv in a.level_bytes or b}
        if (a.level_bytes or None) != want_levels:
            raise _fail(f"{at}.level_bytes", f"{want_levels} (the instruction's level bytes)", a.level_bytes)


def _names(facts: Any, ids: tuple[int, ...]) -> set[str]:
    by_id = {b.id: n for n, b in facts.buffers.items()}
    return {by_id.get(i, f"#{i}") for i in ids}


def _check_device(name: str, entry: Any, program: Any, facts: Any, simulation: Any, graph: Any,
                  base: Mapping[str, str]) -> None:
    if entry.device != name:
        raise _fail(f"devices.{name}.device", repr(name), repr(entry.device))
    levels = (program.fast.name, program.main.name)
    if (entry.fast_level, entry.slow_level) != levels:
        raise _fail(f"devices.{name}.fast_level/slow_level", f"{levels} (the binary's header)",
                    (entry.fast_level, entry.slow_level))
    _check_buffers(name, entry, facts, graph)
    _check_dmas(name, entry, [d for d in simulation.dmas if d.device == name], facts, simulation)
    _check_accesses(name, entry, facts, simulation, base, program.levels)
    for label, factor in entry.split_factors.items():
        first, _, last = label.partition("..")
        for op in {first, last or first}:
            factors = {a.factor for a in entry.accesses if a.op == op}
            if factors != {factor}:
                raise _fail(f"devices.{name}.split_factors.{label}", f"the factor op {op!r} runs with: "
                            f"{sorted(factors)}", factor)
    stats = entry.stats
    _check_by_address(name, stats.get("by_address"))
    check_level_claims(name, stats)
    footprint = max((b.address + b.size_bytes for b in facts.buffers.values()
                     if b.level == program.fast.name and not b.view), default=0)
    for key, want in (("fast_capacity_bytes", program.fast.capacity_bytes), ("fast_peak_bytes", footprint)):
        if key in stats and stats[key] != want:
            raise _fail(f"devices.{name}.stats.{key}", f"{want} (the binary)", stats[key])


_MODEL_STATUSES = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN", "MODEL_INVALID", "NOT RUN")

# (objective, bound) pairs of ``stats`` that one solve reported together: the bound is at most
# the objective. The level solve's bound is ``level_bound_device_cycles`` (two levels) or
# ``hierarchy_bound_device_cycles`` (N levels, where the level bound stays None).
_SOLVE_PAIRS = (("level_makespan_device_cycles", "level_bound_device_cycles"),
                ("level_makespan_device_cycles", "hierarchy_bound_device_cycles"),
                ("heads_tails_objective_device_cycles", "heads_tails_bound_device_cycles"))


def _is_cycles(value: Any) -> bool:
    return type(value) is int and value >= 0


def check_level_claims(name: str, stats: Mapping[str, Any]) -> None:
    """The level solve's own figures agree with each other: each bound (an integer, or None) is at
    most its objective, and ``level_gap`` is :func:`~planner.plan.relative_gap` of the level
    makespan and its bound (a float, as the solve's ``SolveResult.gap``), so an edited makespan,
    bound or gap is refused. The figures themselves are the level model's (not the replay's), which
    the verifier does not rebuild.

    Examples
    --------
    >>> check_level_claims("d", {"level_makespan_device_cycles": 10, "level_bound_device_cycles": 8,
    ...                          "level_gap": 0.2})
    >>> check_level_claims("d", {"level_makespan_device_cycles": 10, "level_bound_device_cycles": 8,
    ...                          "level_gap": 0.0})
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: memory.json: devices.d.stats.level_gap: expected 0.2 ((makespan - bound) / makespan), found 0.0
    """
    where = f"devices.{name}.stats"
    for objective_key, bound_key in _SOLVE_PAIRS:
        objective, bound = stats.get(objective_key), stats.get(bound_key)
        if objective_key in stats and objective is not None and not _is_cycles(objective):
            raise _fail(f"{where}.{objective_key}", "device cycles (an integer >= 0) or null", repr(objective))
        if bound_key in stats and bound is not None and not (_is_cycles(bound) and (objective is None
                                                                                    or bound <= objective)):
            raise _fail(f"{where}.{bound_key}", f"an integer bound at most {objective_key} {objective}", repr(bound))
    if "level_gap" not in stats:  # written with every level makespan
        if "level_makespan_device_cycles" in stats:
            raise _fail(f"{where}.level_gap", "the level solve's gap (written with its makespan)", "missing")
        return
    makespan = stats.get("level_makespan_device_cycles")
    bound = stats.get("level_bound_device_cycles")
    bound = stats.get("hierarchy_bound_device_cycles") if bound is None and "levels" in stats else bound
    want, gap = relative_gap(makespan, bound), stats["level_gap"]
    if (want is None) != (gap is None) or (want is not None and (type(gap) is not float or gap != want)):
        raise _fail(f"{where}.level_gap", f"{want} ((makespan - bound) / makespan)", repr(gap))


def _check_by_address(name: str, fig: Any) -> None:
    """Several streams: ``stats.by_address`` (the level plan's makespan by its own offsets, the
    kept plan's, and the cycle-time model's outcome) agrees with itself. The model is bounded
    by the plan it starts from and kept only when strictly shorter, so a plan it found has the
    kept plan's cycles; its bound is at most that, equal exactly when OPTIMAL; a model not run
    says why and found nothing."""
    if fig is None:
        return
    field = f"devices.{name}.stats.by_address"
    level, kept = fig.get("level_plan_device_cycles"), fig.get("kept_device_cycles")
    if not isinstance(level, int) or not isinstance(kept, int) or kept > level:
        raise _fail(f"{field}.kept_device_cycles", f"device cycles at most the level plan's ({level})", kept)
    model = fig.get("time_model")
    if model is None:
        return
    status, cycles, bound = model.get("status"), model.get("device_cycles"), model.get("model_bound_device_cycles")
    if status not in _MODEL_STATUSES:
        raise _fail(f"{field}.time_model.status", f"one of {list(_MODEL_STATUSES)}", status)
    if status == "NOT RUN" and (cycles is not None or not model.get("reason") or model.get("kept")):
        raise _fail(f"{field}.time_model", "a reason and no plan (not run)", model)
    if status not in ("OPTIMAL", "FEASIBLE"):
        if cycles is not None or model.get("kept"):
            raise _fail(f"{field}.time_model.device_cycles", f"none ({status}: no plan found)", cycles)
        return
    if cycles != kept:
        raise _fail(f"{field}.time_model.device_cycles", f"{kept} (the kept plan's: the model starts from the "
                    "best plan before it and is kept only when strictly shorter)", cycles)
    if not isinstance(bound, int) or bound > cycles or (status == "OPTIMAL") != (bound == cycles):
        raise _fail(f"{field}.time_model.model_bound_device_cycles", f"at most {cycles}, equal exactly when OPTIMAL "
                    f"({status})", bound)
    if model.get("kept") and not cycles < level:
        raise _fail(f"{field}.time_model.kept", f"false ({cycles} is not shorter than the level plan's {level})",
                    model.get("kept"))


def replayed_figures(name: str, program: Any, facts: Any, simulation: Any) -> dict[str, Any]:
    """One device's memory figures as the binaries and the replay give them (memory.json ``figures``)."""
    fast = program.fast.name if program.fast is not None else None
    main = program.main.name
    dmas = [d for d in simulation.dmas if d.device == name]
    compute = sorted((t.start_cycle, t.end_cycle) for t in simulation.ops.values() if t.device == name)
    hidden = sum(max(0, min(end, d.end_cycle) - max(start, d.start_cycle)) for d in dmas for start, end in compute)
    op_fast = sum(ins.fast_bytes for ins in facts.compute.values())
    op_main = sum(ins.mem_bytes for ins in facts.compute.values())
    dma_bytes = {f"{main}->{fast}": 0, f"{fast}->{main}": 0}
    for d in dmas:  # every pair a DMA joins (main <-> fast listed even without one)
        dma_bytes[f"{d.src_level}->{d.dst_level}"] = dma_bytes.get(f"{d.src_level}->{d.dst_level}", 0) + d.size_bytes
    op_bytes = {fast: op_fast, main: op_main} if fast is not None else {main: op_main}
    for ins in facts.compute.values():  # level bytes (format version 3): the other levels the ops touch
        for level, moved in zip(program.levels, ins.level_bytes):
            if level.name not in (fast, main) and moved:
                op_bytes[level.name] = op_bytes.get(level.name, 0) + moved
    return {"peak_live_bytes": dict(simulation.peak_bytes.get(name, {})),
            "fast_footprint_bytes": max((b.address + b.size_bytes for b in facts.buffers.values()
                                         if b.level == fast and not b.view), default=0),
            "dma_bytes": dma_bytes,
            "op_bytes": op_bytes,
            "dma_count": len(dmas), "dma_cycles": sum(d.end_cycle - d.start_cycle for d in dmas),
            "dma_hidden_cycles": hidden}


def _check_figures_complete(memory: Any, planned: list[str]) -> None:
    """The chosen plan's figures are all there: a deleted row would hide what the report must show.

    ``plan solve`` writes the chosen plan's figures for every device it memory-plans, and, when
    everything stays in main memory, for every device another plan has figures for.
    """
    chosen = memory.figures.get(memory.choice)
    if chosen is None:
        if planned or memory.figures:
            raise VerificationError(_FILE, f"figures.{memory.choice}", detail="missing: the chosen plan's figures")
        return
    expected = set(planned)
    if memory.choice == "all in main memory":
        expected.update(name for per_plan in memory.figures.values() for name in per_plan)
    missing = sorted(expected - set(chosen))
    if missing:
        raise VerificationError(_FILE, f"figures.{memory.choice}.{missing[0]}",
                                detail="missing: the chosen plan's figures of a memory-planned device")


def _check_figures(memory: Any, programs: Mapping[str, Any], facts: Mapping[str, Any], simulation: Any,
                   planned: list[str]) -> None:
    unknown = sorted(set(memory.figures) - set(memory.baselines))
    if unknown:
        raise VerificationError(_FILE, f"figures.{unknown[0]}", detail="not a plan of baselines")
    _check_figures_complete(memory, planned)
    for name, fig in (memory.figures.get(memory.choice) or {}).items():
        if name not in programs:
            raise VerificationError(_FILE, f"figures.{memory.choice}.{name}", detail="not a device of the plan")
        want = replayed_figures(name, programs[name], facts[name], simulation)
        claim = fig.model_dump()
        # All in main memory: the binary has no fast level, only the peaks describe it.
        for key in want if name in memory.devices else ["peak_live_bytes"]:
            if claim[key] != want[key]:
                raise _fail(f"figures.{memory.choice}.{name}.{key}", f"{want[key]} (the replay)", claim[key])


def check_memory_document(memory: Any, doc: Any, programs: Mapping[str, Any], facts: Mapping[str, Any],
                          simulation: Any, graph: Any, base: Mapping[str, str]) -> None:
    """Refuse the first claim of ``memory.json`` the binaries and the replay do not bear out.

    Parameters are the validated :class:`~planner.verify.documents.MemoryDocument`, the
    validated plan document, the decoded programs and their
    :class:`~planner.verify.binaries.ProgramFacts` by device, the replay, the graph of
    graph.json, and the map from plan op names to graph ops.
    """
    if memory.choice not in memory.baselines:
        raise VerificationError(_FILE, "choice", detail=f"{memory.choice!r} is none of the baselines "
                                                        f"{sorted(memory.baselines)}")
    chosen = memory.baselines[memory.choice]
    if chosen != simulation.makespan_cycles or chosen != min(memory.baselines.values()):
        raise _fail(f"baselines.{memory.choice}", f"{simulation.makespan_cycles} (the replayed makespan, the "
                    "smallest baseline)", chosen)
    planned = sorted(n for n, p in programs.items() if p.fast_level >= 0)
    if sorted(memory.devices) != planned:
        raise _fail("devices", f"{planned} (the binaries with a fast level)", sorted(memory.devices))
    stray = sorted(set(memory.skipped) - {d.name for d in doc.devices}) or sorted(set(memory.skipped) & set(planned))
    if stray:
        raise VerificationError(_FILE, f"skipped.{stray[0]}", detail="not a device that skipped memory planning")
    for name in planned:
        _check_device(name, memory.devices[name], programs[name], facts[name], simulation, graph, base)
    _check_figures(memory, programs, facts, simulation, planned)
    _check_cross_device_bound(memory.cross_device_bound, simulation)
    for name, entry in sorted((memory.cross_device or {}).items()):
        _check_resolved(name, entry)


def _check_resolved(name: str, entry: Any) -> None:
    """``cross_device[d]``'s last re-solve (two levels, or every level: ``resolved_levels``): its
    lower bound is at most the plan it found and the everything-in-main (or at-home) plan, both
    plans of the same problem; a re-solve over every level only where an N-level plan was offered."""
    where = f"cross_device.{name}"
    if entry.resolved_levels is not None and entry.n_level_cycles is None:
        raise _fail(f"{where}.resolved_levels", "absent (no N-level plan offered: n_level_cycles absent)",
                    entry.resolved_levels)
    bound = entry.resolved_bound_cycles
    for field, value in (("resolved_cycles", entry.resolved_cycles), ("resolved_main_cycles", entry.resolved_main_cycles)):
        if bound is not None and value is not None and bound > value:
            raise _fail(f"{where}.resolved_bound_cycles", f"at most {value} ({field}: a plan of the bound's problem)",
                        bound)


def _check_cross_device_bound(entry: Any, simulation: Any) -> None:
    """``cross_device_bound`` (crossdev2): the replayed makespan, a bound no larger, the largest of
    its parts (paths and links, the spine's, and under sharing main memory's share term), and the
    gap between them."""
    if entry is None:
        return
    if entry.makespan_cycles != simulation.makespan_cycles:
        raise _fail("cross_device_bound.makespan_cycles", f"{simulation.makespan_cycles} (the replay)",
                    entry.makespan_cycles)
    best = max(entry.path_bound_cycles, entry.spine_bound_cycles or 0, entry.shared_bound_cycles or 0)
    if entry.bound_cycles != best or best > entry.makespan_cycles:
        raise _fail("cross_device_bound.bound_cycles", f"{best} (the larger of its parts, at most the makespan)",
                    entry.bound_cycles)
    gap = round((entry.makespan_cycles - entry.bound_cycles) / max(1, entry.makespan_cycles), 6)
    if entry.gap != gap:
        raise _fail("cross_device_bound.gap", str(gap), entry.gap)
