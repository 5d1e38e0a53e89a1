"""Memory-hierarchy planning (issue 3): levels, prefetch/evict, splits and offsets per device.

A proven-sound iteration on the spine's schedule (``docs/memory.md``): the spine fixes
placement and each device's op order with every tensor in main memory; then, per
memory-planned device, CP-SAT chooses which level every access uses, the prefetch and
eviction DMAs (each started after a chosen trigger op and waited for by a release op)
and the split factors, jointly with the device's op timing; the fast buffers get
addresses (CP-SAT ``NoOverlap2D``); the whole plan is re-timed with the ISA's exact
durations. Greedy level assignment with greedy-by-size offsets, and everything in main
memory, are computed in the same run as baselines.

Modules: the spec's :mod:`~planner.spec.memory_options` (what the spec asks), :mod:`~planner.memory.bridge`
(schedule → level problems), :mod:`~planner.memory.retime` (list schedule),
:mod:`~planner.memory.assemble` (solutions → buffers, DMAs, re-timed plan),
:mod:`~planner.memory.plan` (the result types), :mod:`~planner.memory.cross_device` (on a plan with
link transfers, each device's plan chosen by the whole plan's makespan, with heads and tails);
:mod:`~planner.memory.addresses` packs one level's
buffers and :mod:`~planner.memory.address_pass` gives lowered programs without a memory plan
their addresses.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from planner.errors import InfeasibleError, SpecError, UnsupportedError
from planner.memory.assemble import assemble, expand
from planner.memory.bridge import (build_device_problem, device_order, skip_reason, stream_bound_covers_splits,
                                  stream_plan_bound)
from planner.memory.cross_device import ALL_HOME, DeviceExplanation, choose_across_devices
from planner.memory.full_level import offers_full_level, shorter
from planner.memory.hierarchy_assemble import assemble_hierarchy
from planner.memory.hierarchy_bridge import (build_hierarchy_problem, hierarchy_levels, plans_n_levels,
                                             solve_hierarchy, stream_candidates)
from planner.memory.mixed_assemble import N_LEVELS, HierarchyLevels, assemble_mixed
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan, MemoryTransfer, OpAccess
from planner.memory.retime import RetimingDeadlock
from planner.memory.streams import shorter_by_address
from planner.spec.locator import Locator
from planner.spec.memory_options import MemoryOptions
from solvers.budget import combine_stops
from solvers.core import SolveOptions
from solvers.memory.arena import fast_offset_problem
from solvers.memory.levels import AllSlowLevelSolver, CpSatLevelSolver, GreedyLevelSolver, fast_pieces, resolve_problem
from solvers.memory.offsets import CpSatOffsetSolver, GreedyBySizeOffsetSolver, live_bytes_lower_bound
from solvers.portfolio import Portfolio

__all__ = ["MemoryOptions", "MemoryPlan", "DeviceMemoryPlan", "MemoryBuffer", "MemoryTransfer", "OpAccess",
           "MemoryOutcome", "plan_memory"]

log = logging.getLogger(__name__)

# Fast capacity held back from the level solver, per attempt: 32 alignments, then 4% and 12%
# of the level (a tight level plan may not pack at aligned addresses; greedy-by-size packs a
# plan with some slack).
RESERVE_FACTORS = (0, 4, 12)
ATTEMPT_SHARES = ((0.5, 0.3), (0.2, 0.2), (0.1, 0.2))  # (level solver, offsets) x the device's budget


@dataclass
class MemoryOutcome:
    """The memory-planned plan, its memory plan, the greedy baseline's, and per-device notes."""

    plan: Any  # planner.plan.Plan, re-timed, ops = instances on memory-planned devices
    memory: MemoryPlan
    greedy_plan: Any = None
    greedy_memory: MemoryPlan | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # device -> why it is not memory-planned
    bridges_order: dict[str, tuple[str, ...]] = field(default_factory=dict)  # device -> its ops' fixed order
    stopped_by: str = "finished"  # how the memory solves ended (solvers.budget words)
    # With tensors homed outside main memory (memory.home): every tensor read from its home, the
    # baseline in place of "all in main memory" (which would ignore the homes).
    all_home_plan: Any = None
    all_home_memory: MemoryPlan | None = None
    # Two-level path: per device, its level plans by name ("memory plan", "greedy") as
    # assemble's DeviceLevels, which the cross-device choice combines.
    device_levels: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A plan with link transfers: per planned device, which plan the memory plan uses on it and
    # why, in numbers (planner.memory.cross_device); empty otherwise.
    cross_device: dict[str, DeviceExplanation] = field(default_factory=dict)
    # With cross_device: a lower bound on every memory plan of the spine's placement and orders
    # (plan cycles; the paths-and-links part of planner.memory.cross_device.memory_plan_bound_parts),
    # else None; and under bandwidth: shared its main-memory share term (else None).
    cross_device_bound: int | None = None
    cross_device_shared_bound: int | None = None


def _solve_device(bridge, time_limit_s: float, seed: int, search: str):
    """Level assignment: the greedy-then-CP-SAT portfolio, with the all-in-main baseline.

    One worker: on these models the interleaved two-worker search reaches less within the
    same deterministic budget (measured on memory-transformer). The portfolio's result keeps
    CP-SAT's ``stopped_by`` even when the greedy plan wins, so the report says how the search ended.
    """
    opts = SolveOptions(time_limit_s=max(0.1, time_limit_s), num_workers=1, random_seed=seed, search=search)
    run = Portfolio(GreedyLevelSolver(), CpSatLevelSolver()).run(bridge.problem, opts)
    all_slow = AllSlowLevelSolver().solve(bridge.problem, opts)
    exact = run.best_with_exact_stop()
    if not exact.status.has_solution:
        exact = all_slow
    if not exact.status.has_solution:
        raise UnsupportedError(f"device {bridge.device.name}: no memory plan found ({exact.status.value})")
    return exact, run.heuristic, all_slow


def _offsets(bridge, solution, alignment: int, capacity: int, time_limit_s: float, seed: int, exact: bool,
             search: str = "deterministic"):
    """Fast offsets for a level solution; with several streams, first over the pieces held where
    the level has room (fewer memory-order waits, docs/memory.md), else as they are."""
    holds = (True, False) if resolve_problem(bridge.problem, solution).multi_stream else (False,)
    for hold in holds:
        found = _pack_offsets(bridge, solution, alignment, capacity, time_limit_s, seed, exact, search, hold)
        if found[0] is not None:
            break
    return found


def _pack_offsets(bridge, solution, alignment: int, capacity: int, time_limit_s: float, seed: int, exact: bool,
                  search: str, hold: bool):
    problem, _ = fast_offset_problem(bridge.problem, solution, alignment, hold=hold)
    problem = replace(problem, capacity_bytes=capacity)
    expanded = resolve_problem(bridge.problem, solution)
    pieces = fast_pieces(expanded, solution)
    # One worker, as for the level solver: the interleaved two-worker search needed more
    # deterministic time to reach ResNet-50's live bound than one worker (0.061 dtime).
    opts = SolveOptions(time_limit_s=max(0.1, time_limit_s), num_workers=1, random_seed=seed, search=search)
    greedy = GreedyBySizeOffsetSolver().solve(problem, opts)
    # 0.0125 dtime per second of the share: ResNet-50's 387 buffers need 0.061 dtime to reach
    # the live bound (about 1 s); a busy machine runs 0.02-0.05 dtime per second, so the
    # deterministic budget, not the wall clock, ends the search.
    result = CpSatOffsetSolver(dtime_per_second=0.0125).solve(problem, opts) if exact else greedy
    if not result.status.has_solution:
        return None, result, greedy, problem
    # fast_offset_problem drops zero-byte pieces; they sit at address 0.
    it = iter(result.solution.offsets)
    offsets = tuple(next(it) if expanded.tensor_bytes[t] > 0 else 0 for t, _, _ in pieces)
    return offsets, result, greedy, problem


def plan_memory(spec, plan, *, time_limit_s: float = 10.0, seed: int = 0,
                search: str = "deterministic") -> MemoryOutcome | None:
    """Memory-plan ``plan`` (a spine plan of ``spec``) if the spec asks for it, else None.

    The memory stage has its own budget, ``time_limit_s`` split over the planned devices:
    per device 50% for the level solver and 30% for the offsets (both stop on deterministic
    time, usually well before), and when the offsets do not pack, re-solves holding back
    more fast memory (:data:`ATTEMPT_SHARES`): at most 1.5 x the budget in all, plus the first
    attempt's shares again on a several-stream device with split groups whose buffers are whole
    alignments (its plan for the whole fast level, :mod:`~planner.memory.full_level`), plus, on a plan with
    link transfers, 15% per cross-device pass and device for the re-solves under heads and tails
    (:mod:`~planner.memory.cross_device`, at most 3 passes). The solves use
    one CP-SAT worker whatever the spec's worker count (see :func:`_solve_device`). Each stops on
    deterministic work (``search="deterministic"``) or the wall clock (``"until-limit"``); the
    outcome's ``stopped_by`` says how they ended (see :mod:`solvers.budget`).

    Raises
    ------
    UnsupportedError
        The spec's objective is not latency (the level solver minimizes a makespan).
    InfeasibleError
        No memory plan fits (the message names the device, level and sizes).
    """
    options: MemoryOptions | None = getattr(spec, "memory", None)
    if options is None or not options.enabled:
        return None
    if plan.objective_kind != "latency":
        raise UnsupportedError("memory planning needs `objective: latency`; "
                               f"this spec asks for {plan.objective_kind}")
    hardware = spec.hardware
    n_levels = _n_level_devices(spec, plan)
    if options.home:
        _check_homes_planned(spec, plan)
    if options.home and len(hardware.devices) == 1:
        if not n_levels:
            dev = hardware.devices[0]
            raise UnsupportedError("memory.home needs memory planning over all levels; device "
                                   f"{dev.name} is not memory-planned: "
                                   f"{skip_reason(dev, device_order(plan, dev.name, spec.graph), spec.graph, options)}")
        return _plan_n_levels(spec, plan, n_levels[0], time_limit_s, seed, search, None)
    outcome = _plan_two_levels(spec, plan, time_limit_s, seed, search)
    budget = time_limit_s / max(1, len(outcome.bridges_order))  # as the two-level path splits it
    for name in n_levels:
        if name in outcome.bridges_order and not _homed_reads(spec, plan, hardware.device(name)):
            outcome = _plan_n_levels(spec, plan, name, budget, seed, search, outcome)
    return outcome


def _check_homes_planned(spec, plan) -> None:
    """Every device that reads a tensor homed outside its main memory (``memory.home``) is
    memory-planned: only a plan over its levels honours the home.

    Raises
    ------
    UnsupportedError
        A device reads a homed tensor but cannot be memory-planned (the message names the
        device, the tensor and why).
    """
    graph, options = spec.graph, spec.memory
    for dev in spec.hardware.devices:
        homed = _homed_reads(spec, plan, dev)
        reason = skip_reason(dev, device_order(plan, dev.name, graph), graph, options) if homed else None
        if reason:
            raise UnsupportedError(f"memory.home needs memory planning over all levels on every device that reads a "
                                   f"homed tensor: device {dev.name} reads {homed[0]} (homed in "
                                   f"{options.home[homed[0]]}) but is not memory-planned: {reason}")


def _homed_reads(spec, plan, dev) -> list[str]:
    """The tensors ``dev``'s ops read that are homed outside its main memory (``memory.home``), sorted."""
    graph, options = spec.graph, spec.memory
    main = dev.profile.main_memory.name
    return sorted({t for op in device_order(plan, dev.name, graph) for t in graph.ops[op].inputs
                   if options.home_level(t, main) != main})


def _homed_devices(spec, plan, bridges) -> tuple[str, ...]:
    """The devices of ``bridges`` whose ops read a tensor homed outside main memory: planned over
    every level, as only such plans honour the homes."""
    return tuple(name for name, bridge in bridges.items() if _homed_reads(spec, plan, bridge.device))


def _plan_two_levels(spec, plan, time_limit_s: float, seed: int, search: str) -> MemoryOutcome:
    """Every memory-planned device over its fast level and main memory (issue 3), the budget split
    over the devices; see :func:`plan_memory`."""
    graph, hardware, options = spec.graph, spec.hardware, spec.memory
    skipped: dict[str, str] = {}
    bridges = {}
    for dev in hardware.devices:
        ops = device_order(plan, dev.name, graph)
        reason = skip_reason(dev, ops, graph, options)
        if reason:
            skipped[dev.name] = reason
            continue
        bridges[dev.name] = build_device_problem(graph, hardware, plan, dev, options)
    budget = time_limit_s / max(1, len(bridges))
    homed = _homed_devices(spec, plan, bridges) if options.home else ()
    chosen, baseline, stats = {}, {}, {}
    stops: list[str | None] = []
    for name in list(bridges):
        if name in homed:  # a plan over two levels would not honour its homes
            continue
        bridges[name], chosen[name], greedy_levels, stats[name], device_stops = _plan_device_two_levels(
            spec, plan, bridges[name], budget, seed, search)
        if greedy_levels is not None:
            baseline[name] = greedy_levels
        stops += device_stops
    levels = {name: {"memory plan": chosen[name], **({"greedy": baseline[name]} if name in baseline else {})}
              for name in chosen}
    explanations, cross_bound, shared_bound = {}, None, None
    if (plan.transfers and chosen) or homed:  # several devices: choose per device by the whole plan's makespan
        n_levels = _linked_n_levels(spec, plan, chosen, budget, seed, search)
        offered = {name: {**cands, **({N_LEVELS: n_levels[name]} if name in n_levels else {})}
                   for name, cands in levels.items()}
        for name in homed:
            offered[name], stats[name], stop = _homed_candidates(spec, plan, bridges[name], budget, seed, search)
            stops.append(stop)
        offered = {name: offered[name] for name in bridges}  # in hardware order, as the passes go
        levels = dict(offered)
        cross = choose_across_devices(plan, graph, hardware, offered, options.alignment_bytes, stats,
                                      {name: budget for name in offered}, seed, search,
                                      _packer(hardware, options.alignment_bytes, seed), spec.gangs)
        new_plan, memory, explanations = cross.plan, cross.memory, cross.explanations
        cross_bound, shared_bound = cross.path_bound_cycles, cross.shared_bound_cycles
        stops += list(cross.stops)
        if homed:
            return _with_home_baselines(spec, plan, offered, stats, MemoryOutcome(
                new_plan, memory, None, None, skipped, {name: b.ops for name, b in bridges.items()},
                combine_stops(stops), device_levels=levels, cross_device=explanations, cross_device_bound=cross_bound,
                cross_device_shared_bound=shared_bound))
    else:
        new_plan, memory = assemble(plan, graph, hardware, chosen, options.alignment_bytes, stats, spec.gangs,
                                    options.shared_bandwidth)
    greedy_plan = greedy_memory = None
    if len(baseline) == len(chosen):
        try:
            greedy_plan, greedy_memory = assemble(plan, graph, hardware, baseline, options.alignment_bytes,
                                                  gangs=spec.gangs, shared_bandwidth=options.shared_bandwidth)
        except RetimingDeadlock as e:  # the greedy plans of several devices wait on each other
            if not plan.transfers:
                raise
            log.info("greedy memory plans wait on each other across devices: %s", e)
    return MemoryOutcome(new_plan, memory, greedy_plan, greedy_memory, skipped,
                         {name: b.ops for name, b in bridges.items()}, combine_stops(stops), device_levels=levels,
                         cross_device=explanations, cross_device_bound=cross_bound,
                         cross_device_shared_bound=shared_bound)


@dataclass
class _LevelAttempt:
    """One device's level plan with its fast offsets and the figures of how it was made."""

    bridge: Any
    exact: Any
    greedy: Any
    all_slow: Any
    solution: Any
    offsets: Any
    off_result: Any
    off_greedy: Any
    off_problem: Any
    by_address: Any = None


def _plan_device_two_levels(spec, plan, bridge, budget: float, seed: int, search: str):
    """One device's level plan over its fast level and main memory: the solver's plan with
    packed offsets (holding back more when they do not fit; every tensor in main memory when
    nothing fits), a shorter plan made for the by-address order on several streams, the plan
    for the whole fast level where that is shorter (:mod:`~planner.memory.full_level`), the
    greedy baseline and the figures. Returns ``(bridge, chosen, greedy or None, stats, stops)``."""
    graph, hardware, options = spec.graph, spec.hardware, spec.memory
    stops: list[str | None] = []
    att = reserved = _with_reserve(spec, plan, bridge, budget, seed, search, stops)
    if offers_full_level(att.bridge, bool(plan.transfers), options.alignment_bytes):
        whole = _level_attempt(spec, build_device_problem(graph, hardware, plan, att.bridge.device, options,
                                                          reserve_factor=None), ATTEMPT_SHARES[0], budget, seed,
                               search, stops)
        _by_address(spec, plan, whole, budget, seed, search, stops)
        if shorter((att.bridge.problem, att.solution, att.offsets),
                   (whole.bridge.problem, whole.solution, whole.offsets) if whole.offsets is not None else None):
            att = whole
    # The greedy baseline stays the one made with the reserve (its greedy-by-size offsets need the slack).
    bridge, fast = att.bridge, hardware.device(att.bridge.device.name).profile.level(att.bridge.fast_level)
    g_offsets, g_result, _, _ = _offsets(
        reserved.bridge, reserved.greedy.solution, options.alignment_bytes, fast.capacity_bytes, 1.0, seed, False)
    chosen = expand(bridge, att.solution, att.offsets)
    greedy_levels = (expand(reserved.bridge, reserved.greedy.solution, g_offsets) if g_offsets is not None
                     else None)
    stats = _device_stats(bridge, att.exact, reserved.greedy, att.all_slow, att.off_result, att.off_greedy,
                          att.off_problem, g_result, hardware)
    if att.by_address is not None:
        stats.update(att.by_address[2])
    streams_bound = stream_plan_bound(bridge, options, budget, seed, search, graph, stops)
    if streams_bound is not None:  # several streams: a bound over every plan of the device
        stats["stream_plan_bound_device_cycles"] = streams_bound
        if stream_bound_covers_splits(bridge, options):  # absent: the bound is over unsplit plans
            stats["stream_plan_bound_splits"] = True
    return bridge, chosen, greedy_levels, stats, stops


def _with_reserve(spec, plan, bridge, budget: float, seed: int, search: str, stops: list) -> _LevelAttempt:
    """The level plan with part of the fast level held back (more on each attempt whose offsets
    do not fit; every tensor in main memory when none fits), then made for the by-address order."""
    graph, hardware, options = spec.graph, spec.hardware, spec.memory
    dev = hardware.device(bridge.device.name)
    for attempt, reserve_factor in enumerate(RESERVE_FACTORS):
        # The level solver counts exact bytes at any address; offsets round each buffer up to
        # the alignment and must pack. If they do not fit, hold back more and solve again.
        bridge = bridge if attempt == 0 else build_device_problem(
            graph, hardware, plan, dev, options, reserve_factor=reserve_factor)
        att = _level_attempt(spec, bridge, ATTEMPT_SHARES[attempt], budget, seed, search, stops)
        if att.offsets is not None:
            break
    else:  # nothing fits with padding: every tensor in main memory (no fast buffers at all)
        att.solution = att.all_slow.solution
        att.offsets, att.off_result, att.off_greedy, att.off_problem = _offsets(
            bridge, att.solution, options.alignment_bytes, dev.profile.level(bridge.fast_level).capacity_bytes,
            1.0, seed, False)
    _by_address(spec, plan, att, budget, seed, search, stops)
    return att


def _level_attempt(spec, bridge, shares: tuple[float, float], budget: float, seed: int, search: str,
                   stops: list) -> _LevelAttempt:
    """The level solver's plan of ``bridge`` and its packed offsets (None when they do not fit)."""
    options = spec.memory
    fast = spec.hardware.device(bridge.device.name).profile.level(bridge.fast_level)
    level_share, offsets_share = shares
    exact, greedy, all_slow = _solve_device(bridge, level_share * budget, seed, search)
    offsets, off_result, off_greedy, off_problem = _offsets(
        bridge, exact.solution, options.alignment_bytes, fast.capacity_bytes, offsets_share * budget,
        seed, True, search)
    stops += [exact.stats.get("stopped_by"), off_result.stats.get("stopped_by")]
    if offsets is None:
        log.warning("device %s: offsets of the level plan do not fit %s at %d B alignment "
                    "(held back %d B)", bridge.device.name, fast.name, options.alignment_bytes, bridge.reserve_bytes)
    return _LevelAttempt(bridge, exact, greedy, all_slow, exact.solution, offsets, off_result, off_greedy, off_problem)


def _by_address(spec, plan, att: _LevelAttempt, budget: float, seed: int, search: str, stops: list) -> None:
    """Several streams: replace ``att``'s plan by one made for the by-address memory order when
    shorter (:func:`~planner.memory.streams.shorter_by_address`; its figures kept, a net stop in ``stops``)."""
    if plan.transfers or att.offsets is None:
        return
    fast = spec.hardware.device(att.bridge.device.name).profile.level(att.bridge.fast_level)
    att.by_address = shorter_by_address(att.bridge, att.solution, att.offsets, spec.memory.alignment_bytes,
                                        fast.capacity_bytes, budget, seed, search, stops)
    if att.by_address is not None:
        att.solution, att.offsets, _ = att.by_address


def _linked_n_levels(spec, plan, names, budget: float, seed: int, search: str) -> dict[str, HierarchyLevels]:
    """Per memory-planned device with link transfers and more than two levels: its N-level plan
    of its own ops (from cycle 0), the cross-device choice's :data:`N_LEVELS` candidate, kept
    only when the whole plan, re-timed with the other devices' arrivals and sends
    (:func:`~planner.memory.mixed_assemble.assemble_mixed`), ends strictly earlier.

    Offered with gangs (the mixed re-timing starts each gang on one cycle) and with shared
    bandwidth (the mixed re-timing holds every device's shares in one gate). Not offered to a device that reads
    tensors homed outside main memory (its candidates are all over every level,
    :func:`_homed_candidates`), nor where no N-level plan is found, nor where
    no level between the fast one and main memory is faster than main memory (``tpu-v4``'s
    cmem): there an op is never faster for a level the two-level plan lacks, and offering the
    candidate would only weaken the cross-device bound, which must then hold for it too."""
    options = spec.memory
    out = {}
    for name in names:
        dev = spec.hardware.device(name)
        if not plans_n_levels(dev, options) or not _faster_than_main(dev, options):
            continue
        bridge = build_hierarchy_problem(spec.graph, spec.hardware, plan, dev, options)
        try:
            solved = solve_hierarchy(bridge, ATTEMPT_SHARES[0][0] * budget, seed, search)
        except UnsupportedError as e:
            log.info("device %s: no N-level candidate across devices (%s)", name, e)
            continue
        out[name] = HierarchyLevels(bridge, solved.solution, _hierarchy_stats(bridge, solved))
    return out


def _homed_candidates(spec, plan, base, budget: float, seed: int, search: str):
    """A device that reads tensors homed outside main memory, planned over every level (the only
    plans that honour the homes): its level solver's plan as ``memory plan``, the greedy plan
    as ``greedy`` and everything at home as :data:`~planner.memory.cross_device.ALL_HOME`, the
    floor the cross-device choice starts from in place of main memory. Returns the candidates,
    the N-level solve's figures and how it stopped.

    Raises
    ------
    UnsupportedError
        No plan over its levels found (nothing else would honour the homes), or everything at
        home does not fit its levels (the floor every plan of the device is compared with).
    """
    dev = base.device
    bridge = build_hierarchy_problem(spec.graph, spec.hardware, plan, dev, spec.memory)
    out = solve_hierarchy(bridge, ATTEMPT_SHARES[0][0] * budget, seed, search)
    if not out.all_home.status.has_solution:
        raise _all_home_does_not_fit(spec, bridge)
    stats = _hierarchy_stats(bridge, out)
    candidates = {"memory plan": HierarchyLevels(bridge, out.solution, stats),
                  **({"greedy": HierarchyLevels(bridge, out.greedy.solution, stats)}
                     if out.greedy.status.has_solution else {}),
                  ALL_HOME: HierarchyLevels(bridge, out.all_home.solution, stats)}
    return candidates, stats, out.best.stats.get("stopped_by")


def _all_home_does_not_fit(spec, bridge) -> SpecError:
    """The error when everything at home (``memory.home``) does not fit a device's levels: that
    plan is the baseline and floor its plans over every level are compared with (no plan in
    main memory honours the homes), so the spec is refused at ``memory.home`` (file and line
    when it came from a file)."""
    message = (f"on device {bridge.device.name} everything at home does not fit its levels "
               f"({', '.join(bridge.levels)}; main memory holds every tensor not homed elsewhere, live over the "
               "schedule's op order), and that plan is the floor its plans over every level are compared with: "
               "expected levels that hold every tensor at its home (larger main memory or home levels)")
    source = getattr(spec, "source", None)
    if source is None:
        return SpecError(message, path="memory.home")
    return Locator.from_yaml(Path(source).read_text(), str(source)).error(message, ("memory", "home"), key=True)


def _with_home_baselines(spec, plan, offered, stats, outcome: MemoryOutcome) -> MemoryOutcome:
    """``outcome`` (homes on several devices) with its whole-plan baselines: every device at its
    greedy plan (over every level where it reads a homed tensor; None when a device has none or
    the combination does not fit or waits on itself), and every such device all at home with the
    others in main memory, in place of everything in main memory, which ignores the homes."""
    options = spec.memory
    homes = {d: c[ALL_HOME] for d, c in offered.items() if ALL_HOME in c}
    home_plan, home_memory = assemble_mixed(plan, spec.graph, spec.hardware, homes, options.alignment_bytes,
                                            {d: stats[d] for d in homes}, spec.gangs)
    greedy_plan = greedy_memory = None
    if all("greedy" in c for c in offered.values()):
        try:
            greedy_plan, greedy_memory = assemble_mixed(plan, spec.graph, spec.hardware,
                                                        {d: c["greedy"] for d, c in offered.items()},
                                                        options.alignment_bytes, {d: stats[d] for d in homes},
                                                        spec.gangs)
        except (RetimingDeadlock, InfeasibleError, UnsupportedError) as e:
            log.info("greedy memory plans do not combine across devices: %s", e)
    return replace(outcome, greedy_plan=greedy_plan, greedy_memory=greedy_memory, all_home_plan=home_plan,
                   all_home_memory=home_memory)


def _faster_than_main(dev, options) -> bool:
    """Whether a level between ``dev``'s fast level and its main memory has more bandwidth than main memory."""
    profile = dev.profile
    names = hierarchy_levels(dev, options)
    main = profile.main_memory
    between = names[1:names.index(main.name)] if main.name in names else names[1:]
    return any(profile.level(n).bandwidth_bytes_per_s > main.bandwidth_bytes_per_s for n in between)


def _packer(hardware, alignment: int, seed: int):
    """Fast offsets for a new level solution (greedy-by-size): ``(offsets, stats)`` or None."""
    def pack(bridge, solution):
        fast = bridge.device.profile.level(bridge.fast_level)
        offsets, result, _, problem = _offsets(bridge, solution, alignment, fast.capacity_bytes, 1.0, seed, False)
        if offsets is None:
            return None
        return offsets, {"fast_capacity_bytes": problem.capacity_bytes, "fast_peak_bytes": result.objective}
    return pack


def _n_level_devices(spec, plan) -> tuple[str, ...]:
    """The devices to plan over all their levels, in hardware order: those that can be
    memory-planned, have more than two levels from their fast level on (or tensors homed
    outside main memory) and exchange nothing with other devices (no link transfer in or
    out: their plans are independent of the rest). Shared bandwidth is modelled
    over every level too (:mod:`~solvers.memory.levels.hierarchy_bandwidth`).

    A device with link transfers is planned by the cross-device choice
    (:mod:`~planner.memory.cross_device`), which offers its N-level plan as one candidate
    (:func:`_linked_n_levels`).
    """
    hardware, options = spec.hardware, spec.memory
    linked = {d for t in plan.transfers for d in (t.src_device, t.dst_device)}
    return tuple(dev.name for dev in hardware.devices
                 if dev.name not in linked and plans_n_levels(dev, options)
                 and not skip_reason(dev, device_order(plan, dev.name, spec.graph), spec.graph, options))


def _plan_n_levels(spec, plan, name: str, time_limit_s: float, seed: int, search: str,
                   two_levels: MemoryOutcome | None) -> MemoryOutcome:
    """Plan ``name`` over every level (issue 14); keep ``two_levels`` unless strictly slower.

    Without homes, the two-level plan (splits included) stays unless the N-level plan ends the
    device strictly earlier, so specs it already served keep their plans; the device exchanges
    nothing with the others (:func:`_n_level_devices`), so its plan replaces its two-level one
    in the whole plan and no other device moves. With homes (``two_levels`` None, one device)
    the N-level plans are the only ones that honour them: the greedy and the
    everything-at-home plans are its baselines.
    """
    graph, hardware, options = spec.graph, spec.hardware, spec.memory
    dev = hardware.device(name)
    bridge = build_hierarchy_problem(graph, hardware, plan, dev, options)
    out = solve_hierarchy(bridge, ATTEMPT_SHARES[0][0] * time_limit_s, seed, search, graph)
    if two_levels is None and not out.all_home.status.has_solution:  # homes: the floor every plan is compared with
        raise _all_home_does_not_fit(spec, bridge)
    stats = _hierarchy_stats(bridge, out)
    own = _device_alone(plan, name)
    try:
        best_plan, best_memory = assemble_hierarchy(own, hardware, bridge, out.solution, options.alignment_bytes, stats)
        greedy_plan, greedy_memory = assemble_hierarchy(own, hardware, bridge, out.greedy.solution,
                                                        options.alignment_bytes, stats)
        home_plan = home_memory = None  # used with homes only (two_levels None), where it was checked above
        if out.all_home.status.has_solution:
            home_plan, home_memory = assemble_hierarchy(own, hardware, bridge, out.all_home.solution,
                                                        options.alignment_bytes, stats)
        best_plan, best_memory = _shortest_with_streams(own, hardware, bridge, stats, options.alignment_bytes,
                                                        (best_plan, best_memory))
    except (InfeasibleError, UnsupportedError) as e:
        if two_levels is not None:  # e.g. a level's buffers do not pack at aligned addresses: keep two levels
            log.warning("device %s: no plan over all levels (%s); keeping the two-level plan", name, e)
            return two_levels
        raise
    stopped = combine_stops([out.best.stats.get("stopped_by")])
    if two_levels is None:
        return MemoryOutcome(best_plan, best_memory, greedy_plan, greedy_memory, {}, {name: bridge.ops}, stopped,
                             home_plan, home_memory)
    if best_plan.makespan_cycles >= _device_end(two_levels.plan, two_levels.memory, name):
        return two_levels
    new_plan, new_memory = _with_device(plan, two_levels.plan, two_levels.memory, name, best_plan, best_memory)
    whole_greedy = (two_levels.greedy_plan, two_levels.greedy_memory)
    if whole_greedy[0] is None and set(two_levels.bridges_order) == {name}:  # no other device's greedy to keep
        whole_greedy = (two_levels.plan, two_levels.memory)
    new_greedy = new_greedy_memory = None
    if whole_greedy[0] is not None:
        new_greedy, new_greedy_memory = _with_device(plan, *whole_greedy, name, greedy_plan, greedy_memory)
    levels = {d: v for d, v in two_levels.device_levels.items() if d != name}
    return MemoryOutcome(new_plan, new_memory, new_greedy, new_greedy_memory, dict(two_levels.skipped),
                         {**two_levels.bridges_order, name: bridge.ops},
                         combine_stops([two_levels.stopped_by, stopped]), device_levels=levels,
                         cross_device=dict(two_levels.cross_device))


def _shortest_with_streams(own, hardware, bridge, stats, alignment: int, best):
    """Several streams: the shortest of ``best`` and the plans over every level made for the
    overlapped re-timing (:func:`~planner.memory.hierarchy_bridge.stream_candidates`), each
    assembled and kept only when strictly shorter (one whose buffers do not pack is skipped)."""
    for name, solution in stream_candidates(bridge):
        try:
            candidate = assemble_hierarchy(own, hardware, bridge, solution, alignment,
                                           {**stats, "kept_for_streams": name})
        except InfeasibleError:
            continue
        if candidate[0].makespan_cycles < best[0].makespan_cycles:
            best = candidate
    return best


def _device_alone(plan, name: str):
    """``plan`` with only ``name``'s ops (a device without link transfers: its own schedule)."""
    return replace(plan, ops=tuple(o for o in plan.ops if o.device == name), transfers=())


def _device_end(plan, memory: MemoryPlan | None, name: str) -> int:
    """The cycle ``name``'s last op or DMA ends in ``plan`` (a device without link transfers)."""
    dp = memory.devices.get(name) if memory is not None else None
    return max([*(o.start_cycle + o.duration_cycles for o in plan.ops if o.device == name),
                *(t.end_cycle for t in (dp.transfers if dp is not None else ())), 0])


def _with_device(spine, whole, memory: MemoryPlan, name: str, own_plan, own_memory: MemoryPlan):
    """``whole`` (a plan of every device) and its memory plan with ``name``'s ops and memory plan
    replaced by ``own_plan``'s (that device alone, exchanging nothing with the others); the
    makespan is the last end of any op, DMA or link transfer."""
    ops = tuple(sorted((*(o for o in whole.ops if o.device != name), *own_plan.ops),
                       key=lambda o: (o.start_cycle, o.device, o.stream, o.name)))
    devices = {**{d: dp for d, dp in memory.devices.items() if d != name}, **own_memory.devices}
    makespan = max([own_plan.makespan_cycles, *(t.end_cycle for t in whole.transfers),
                    *(_device_end(whole, memory, d) for d in {o.device for o in whole.ops} - {name})])
    return (replace(spine, ops=ops, transfers=whole.transfers, makespan_cycles=makespan, objective=makespan),
            MemoryPlan(dict(sorted(devices.items()))))


def _hierarchy_stats(bridge, out) -> dict[str, Any]:
    """The N-level solve's figures for the report. Its bound holds over unsplit plans of the fixed
    order only, so it is reported as ``hierarchy_bound_device_cycles`` and never proves a plan
    optimal (``level_bound_device_cycles`` stays None)."""
    best = out.best
    return {
        "levels": list(bridge.levels),
        "homes": {bridge.tensors[t].tensor: bridge.levels[h] for t, h in enumerate(bridge.problem.tensor_home)
                  if h != bridge.problem.main_level},
        "level_solver": best.solver_name,
        "level_status": best.status.value,
        "level_makespan_device_cycles": best.objective,
        "level_bound_device_cycles": None,
        "hierarchy_bound_device_cycles": best.bound,
        "plan_bound_device_cycles": out.plan_bound,  # over every plan of the device (any order, split)
        "level_gap": best.gap,
        "level_stopped_by": best.stats.get("stopped_by", "finished"),
        "greedy_makespan_device_cycles": out.greedy.objective,
        "all_home_makespan_device_cycles": out.all_home.objective,
        "split_factors": list(best.solution.split_factors),
        "reserve_bytes": bridge.reserve_bytes,
    }


def _device_stats(bridge, exact, greedy, all_slow, off_result, off_greedy, off_problem, g_offsets, hardware):
    lb_bytes = live_bytes_lower_bound(off_problem)
    return {
        "level_solver": exact.solver_name,
        "level_status": exact.status.value,
        "level_makespan_device_cycles": exact.objective,
        "level_bound_device_cycles": exact.bound,
        "level_gap": exact.gap,
        "level_stopped_by": exact.stats.get("stopped_by", "finished"),
        "greedy_makespan_device_cycles": greedy.objective,
        "all_in_main_makespan_device_cycles": all_slow.objective,
        "fast_capacity_bytes": off_problem.capacity_bytes,
        "fast_peak_bytes": off_result.objective,
        "fast_peak_bound_bytes": off_result.bound if off_result.bound is not None else lb_bytes,
        "fast_live_lower_bound_bytes": lb_bytes,
        "fast_offsets_status": off_result.status.value,
        "fast_offsets_stopped_by": off_result.stats.get("stopped_by", "finished"),
        "fast_offsets_dtime": off_result.stats.get("dtime"),
        "fast_peak_greedy_by_size_bytes": (off_greedy.objective if off_greedy.objective is not None
                                           else off_greedy.stats.get("peak_bytes")),  # may exceed capacity
        "greedy_baseline_fast_peak_bytes": (g_offsets.objective if g_offsets.objective is not None
                                            else g_offsets.stats.get("peak_bytes")),
        "greedy_baseline_fits": g_offsets.status.has_solution,
        "split_factors": list(exact.solution.split_factors),
        "reserve_bytes": bridge.reserve_bytes,
    }
