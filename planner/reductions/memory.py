"""The memory-planning reduction, chained after scheduling: a solved plan → memory plans → the fastest.

:func:`plan_memory_after` takes the :class:`~planner.stages.Solved` stage of a latency or
throughput run and hands its plan to :func:`planner.memory.plan_memory` (which reduces each
device's fixed op order to a level-assignment problem and maps the solution back to a
re-timed plan). It then inverts the chain into the user's terms: every candidate (the
memory plan, the greedy baseline, and everything in main memory, which is itself a valid
memory plan) is lowered and replayed, the fastest replay is kept, and its status and bound
come from :func:`memory_bound` (never below the replayed makespan's proof). So the result
is never slower than the schedule it started from.

Examples
--------
>>> from planner.pipeline import run
>>> outcome = run("specs/memory-mlp.yaml", time_limit_s=5, workers=1)  # doctest: +SKIP
>>> outcome.memory_choice  # doctest: +SKIP
'memory plan'
"""

from __future__ import annotations

from dataclasses import replace

from planner.isa.cost import memory_cycles, op_cost
from planner.lower_and_replay import replay
from planner.memory import MemoryOutcome, plan_memory
from planner.memory.assemble import assemble
from planner.reductions.scheduling import Reduction
from planner.spec import Spec
from planner.stages import MemoryPlanned, RunSettings, Solved
from solvers.budget import run_summary
from solvers.scheduling import SchedulingProblem, lower_bound
from solvers.scheduling.problem import FORBIDDEN

__all__ = ["memory_bound", "plan_memory_after"]


def memory_bound(spec: Spec, problem: SchedulingProblem, reduction: Reduction, planned: set[str]) -> int:
    """A lower bound on the makespan with memory planning on the ``planned`` devices.

    Each op on a planned device is charged its best case: its compute, or its distinct
    operand bytes at the faster of its two levels (the roofline's memory term cannot be
    less); splitting never lowers compute in this ISA (a systolic array fills and drains
    per portion; vector passes round up per portion). Memory capacity is dropped.
    """
    graph, hardware = spec.graph, spec.hardware
    names = reduction.op_names
    devices = [hardware.device(d) for d in reduction.device_names]
    rows = []
    for i, name in enumerate(names):
        op = graph.ops[name]
        row = list(problem.durations_cycles[i])
        distinct = sum(graph.tensors[t].size_bytes for t in {*op.inputs, *op.outputs})
        for j, dev in enumerate(devices):
            if dev.name not in planned or row[j] == FORBIDDEN:
                continue
            prof = dev.profile
            fastest = max(level.bandwidth_bytes_per_s for level in prof.memory)
            compute = op_cost(op, graph, prof, dev.kind).compute_cycles
            best = max(compute, memory_cycles(distinct, prof.clock_hz, fastest))
            row[j] = min(row[j], hardware.to_timeline_cycles(best, dev))
        rows.append(tuple(row))
    relaxed = replace(problem, durations_cycles=tuple(rows), device_memory_bytes=())
    return lower_bound(relaxed)


def _forced_order_bound(spec: Spec, memory: MemoryOutcome) -> int:
    """The level solver's bound, when it bounds every plan: one device with one stream whose
    op order is forced (each op feeds the next), so the solver's fixed order is the only one.

    Its bound is in device cycles; any plan on the timeline, scaled back by clock/reference,
    is a schedule of the level problem with durations at least the required ones, so
    ``ceil(bound * reference / clock)`` bounds the timeline makespan.
    """
    order = memory.bridges_order.get(spec.hardware.devices[0].name, ())
    if not order or any(not spec.graph.dag.has_edge(a, b) for a, b in zip(order, order[1:])):
        return 0
    return _one_stream_device_bound(spec, memory, "level_bound_device_cycles")


def _n_level_bound(spec: Spec, memory: MemoryOutcome) -> int:
    """The N-level plan bound (``plan_bound_device_cycles``), when it bounds every plan: one
    device planned over its levels, with any number of streams. It holds over every order of
    the device's ops, every split and every level assignment
    (:func:`planner.memory.hierarchy_bridge.plan_lower_bound`, which shares the op times over
    the streams); scaled to the timeline as in :func:`_forced_order_bound`.
    """
    return _one_device_bound(spec, memory, "plan_bound_device_cycles", any_streams=True)


def _several_streams_bound(spec: Spec, memory: MemoryOutcome) -> int:
    """The several-stream plan bound (``stream_plan_bound_device_cycles``), when it bounds every
    plan: one device, whose memory plan reports it (its ops use several streams). It holds over
    every order, stream assignment and level assignment of the device's ops
    (:func:`planner.memory.bridge.stream_plan_bound`); scaled to the timeline as in
    :func:`_forced_order_bound`.
    """
    return _one_device_bound(spec, memory, "stream_plan_bound_device_cycles", any_streams=True)


def _one_stream_device_bound(spec: Spec, memory: MemoryOutcome, stat: str) -> int:
    """The memory plan's ``stat`` (device cycles) on the timeline, rounded up, when the spec has one
    device with one compute stream and its plan reports it; else 0 (no bound)."""
    return _one_device_bound(spec, memory, stat, any_streams=False)


def _one_device_bound(spec: Spec, memory: MemoryOutcome, stat: str, any_streams: bool) -> int:
    """:func:`_one_stream_device_bound`, for a device with any number of streams if ``any_streams``."""
    hardware = spec.hardware
    if len(hardware.devices) != 1 or (hardware.devices[0].streams != 1 and not any_streams):
        return 0
    dev = hardware.devices[0]
    dp = memory.memory.devices.get(dev.name)
    if dp is None or dp.stats.get(stat) is None:
        return 0
    return -(-int(dp.stats[stat]) * hardware.clock_hz // dev.profile.clock_hz)


def plan_memory_after(solved: Solved, spec: Spec, settings: RunSettings) -> MemoryPlanned:
    """Memory-plan the solved plan, replay it and its baselines, and keep the fastest.

    Everything in main memory is itself a valid memory plan (the schedule's), so the result
    is never slower than it: when the memory plan loses (the level solver sees one device's
    order, not the cross-device critical path), the schedule's plan is kept and the report
    says so.
    """
    spine = solved.plan
    memory = plan_memory(spec, spine, time_limit_s=settings.time_limit_s - solved.post_solve_reserve_s,
                         seed=settings.seed, search=settings.search)
    candidates = [("memory plan", memory.plan, memory.memory)]
    if memory.greedy_plan is not None:
        candidates.append(("greedy prefetch + greedy-by-size", memory.greedy_plan, memory.greedy_memory))
    if memory.all_home_plan is not None:  # tensors homed outside main memory: main-only plans ignore them
        candidates.append(("all at home", memory.all_home_plan, memory.all_home_memory))
        replays = {}
    else:
        in_main = _in_main_memory(spine, spec)
        candidates.append(("all in main memory", in_main, None))
        # Replayed in this order: the spine first, as the figures have always been computed.
        replays = {"all in main memory": replay(in_main, spec, None, every_device_shares=True)}
    # under bandwidth: shared every device shares its main memory, planned or not (docs/memory.md)
    replays = {name: replays.get(name) or replay(plan, spec, memory_plan, every_device_shares=True)
               for name, plan, memory_plan in candidates}
    baselines = {name: replays[name].simulation.makespan_cycles for name, _, _ in candidates}
    peaks = {name: replays[name].simulation.peak_bytes for name, _, _ in candidates}
    # The fastest; on a tie the earlier candidate (the memory plan before its baselines).
    _, (choice, plan, memory_plan) = min(enumerate(candidates), key=lambda c: (baselines[c[1][0]], c[0]))
    makespan = baselines[choice]
    planned = set(memory_plan.devices) if memory_plan is not None else set(memory.memory.devices)
    # Every device that could be memory-planned, also one the cross-device choice left in main
    # memory: a memory plan of it may be faster, so its ops count at their best case too.
    planned |= set(memory.device_levels)
    bound = max(memory_bound(spec, solved.problem, solved.reduction, planned), _forced_order_bound(spec, memory),
                _n_level_bound(spec, memory), _several_streams_bound(spec, memory))
    bound = min(bound, makespan)
    status = "OPTIMAL" if bound >= makespan else "FEASIBLE"
    if memory.all_home_plan is not None:  # homes outside main memory: the spine's heuristic ignores them;
        # the memory plan's own is the greedy it starts from (or everything at home)
        plan = replace(plan, heuristic_objective=min(baselines[n] for n in baselines if n != "memory plan"))
    plan = replace(plan, status=status, objective=makespan, bound=bound,
                   gap=(makespan - bound) / makespan if makespan else 0.0,
                   solver={**spine.solver, "memory": choice,
                           **run_summary(settings.search, [spine.solver.get("stopped_by"), memory.stopped_by])})
    return MemoryPlanned(plan, choice, memory, memory_plan, _in_report_order(baselines), _in_report_order(peaks),
                         replays[choice])


def _in_main_memory(spine, spec: Spec):
    """Everything in main memory: the schedule's plan, re-timed under ``bandwidth: shared`` so that
    ops on several streams of a device (and link transfers at its ends) share its main memory's
    bandwidth as the simulator checks (docs/memory.md, "Shared bandwidth"); as it is otherwise."""
    if not spec.memory.shared_bandwidth:
        return spine
    return assemble(spine, spec.graph, spec.hardware, {}, spec.memory.alignment_bytes, gangs=spec.gangs,
                    shared_bandwidth=True)[0]


def _in_report_order(by_name: dict) -> dict:
    """Memory plan, everything in main memory, then the greedy baseline (memory.json's order)."""
    order = ("memory plan", "all in main memory", "all at home", "greedy prefetch + greedy-by-size")
    return {name: by_name[name] for name in order if name in by_name}
