"""The bridge between the user's world and the solvers (the only module importing both).

spec → graph → isa costs → :class:`~solvers.scheduling.SchedulingProblem` → solve →
:class:`~planner.plan.Plan` → lowering → binaries → simulator replay → verified plan.

Like cvxpy's reductions, :func:`to_problem` returns the problem and an inverse map;
:func:`from_solution` maps a solver result back to names.

Examples
--------
>>> from planner.pipeline import run
>>> outcome = run("specs/taskgraph.yaml", time_limit_s=5, workers=1)  # doctest: +SKIP
>>> outcome.plan.status  # doctest: +SKIP
'OPTIMAL'
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from planner.errors import InfeasibleError, InternalError, TimeLimitError, UnsupportedError
from planner.graph.ir import Graph
from planner.hardware import Device, Hardware
from planner.plan import PlacedOp, PlacedTransfer, Plan
from planner.report.markdown import format_bytes
from planner.stage_timing import post_solve_reserve_s, stage
from planner.verify.numeric import NUMERIC_DEFAULT_MAX_MACS
from solvers.budget import run_summary
from solvers.core import ProgressPoint, SolveOptions, SolveResult, Status
from solvers.hierarchical import StrategyOptions, StrategyScheduler
from solvers.scheduling import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.problem import FORBIDDEN

__all__ = [
    "Reduction",
    "Outcome",
    "op_device_cycles",
    "to_problem",
    "from_solution",
    "explain_infeasible",
    "run",
    "verify",
    "memory_bound",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reduction:
    """The inverse map of :func:`to_problem`: integer indices back to the user's names."""

    op_names: tuple[str, ...]
    device_names: tuple[str, ...]
    link_names: tuple[str, ...]
    edges: tuple[tuple[str, str, tuple[str, ...], int], ...]  # (src, dst, tensors, bytes)
    clock_hz: int
    objective_kind: str


@dataclass
class Outcome:
    """Everything one planning run produced; ``plan`` is what the API returns."""

    plan: Plan
    problem: SchedulingProblem
    reduction: Reduction
    result: SolveResult
    heuristic: SolveResult
    programs: dict[str, Any] = field(default_factory=dict)
    binaries: dict[str, bytes] = field(default_factory=dict)
    listings: dict[str, str] = field(default_factory=dict)
    allocation: dict[str, Any] = field(default_factory=dict)
    simulation: Any = None
    # Memory planning (issue 3): the planner.memory.MemoryOutcome, and the all-in-main
    # (spine) plan and greedy memory plan replayed as baselines: name -> simulated makespan.
    memory: Any = None
    memory_baselines: dict[str, Any] = field(default_factory=dict)
    memory_choice: str = ""  # which memory plan the outcome's plan uses (the fastest replayed)
    memory_plan: Any = None  # its MemoryPlan (None: everything in main memory)
    memory_peaks: dict[str, Any] = field(default_factory=dict)  # plan name -> replayed device -> level -> peak
    memory_replay: Any = None  # the chosen plan's (programs, binaries, simulation), reused when writing


def op_device_cycles(graph: Graph, hardware: Hardware) -> dict[tuple[str, str], int | None]:
    """Timeline cycles of every op on every device kind (None where it cannot run):
    :func:`planner.isa.cost.cycles_table`."""
    from planner.isa.cost import cycles_table

    return cycles_table(graph, hardware)


def _device_classes(spec, hardware: Hardware) -> tuple[int, ...]:
    """Interchangeable devices share a class id, so the solver may break their symmetry.

    Two instances are interchangeable when they have the same kind, streams and memory,
    no pin names either one individually, and the links are uniform (every pair joined
    by links of one bandwidth and latency, or one bus for all).
    """
    devices = hardware.devices
    names = [d.name for d in devices]
    pinned_instances = {dev for devs in spec.allowed_devices.values() for dev in devs
                        if len(devs) < sum(1 for d in devices if d.kind == hardware.device(dev).kind)}
    links = hardware.links
    uniform = bool(links) and len({(l.bandwidth_bytes_per_s, l.latency_cycles) for l in links}) == 1 and all(
        hardware.link_between(a, b) is not None for i, a in enumerate(names) for b in names[i + 1:])
    if len(devices) == 1:
        uniform = True
    classes: dict[tuple, int] = {}
    out = []
    for i, d in enumerate(devices):
        if not uniform or d.name in pinned_instances:
            key: tuple = ("own", i)
        else:
            key = (d.kind, d.streams, d.memory_capacity_bytes)
        out.append(classes.setdefault(key, len(classes)))
    return tuple(out)


def to_problem(spec, cycles: dict[tuple[str, str], int | None] | None = None) -> tuple[SchedulingProblem, Reduction]:
    """Turn a resolved spec into a scheduling problem and its inverse map.

    Raises
    ------
    InfeasibleError
        When a constraint can be seen to fail before solving (an op that may run on no
        device, weights that fit no allowed device, a colocation group split by pins).
    """
    graph: Graph = spec.graph
    hw: Hardware = spec.hardware
    if cycles is None:  # the spec loader costed every op already (and checked the magnitudes)
        cycles = getattr(spec, "device_cycles", None) or op_device_cycles(graph, hw)
    ops = graph.topological_order()
    op_index = {n: i for i, n in enumerate(ops)}
    devices = hw.devices

    durations = []
    for name in ops:
        allowed = spec.allowed_devices.get(name)
        row = []
        for dev in devices:
            c = cycles[name, dev.kind]
            ok = c is not None and (allowed is None or dev.name in allowed)
            row.append(c if ok else FORBIDDEN)
        if all(x == FORBIDDEN for x in row):
            raise InfeasibleError(_no_device_message(spec, name, cycles))
        durations.append(tuple(row))

    edges = []
    edge_meta = []
    for src, dst, tensors in graph.op_edges():
        size = graph.edge_bytes(src, dst)
        edges.append((op_index[src], op_index[dst], size))
        edge_meta.append((src, dst, tuple(tensors), size))
    link_index = {l.name: i for i, l in enumerate(hw.links)}
    link_of = [[FORBIDDEN] * len(devices) for _ in devices]
    for a, da in enumerate(devices):
        for b, db in enumerate(devices):
            if a != b:
                link = hw.link_between(da.name, db.name)
                link_of[a][b] = link_index[link.name] if link else FORBIDDEN
    # A control dependency between devices is a zero-byte message: it costs the link's
    # latency, exactly as the ISA charges the SEND/RECV the lowering emits for it.
    transfer = [tuple(l.transfer_cycles(size, hw.clock_hz) for l in hw.links) for (_, _, size) in edges]

    groups = tuple(tuple(op_index[n] for n in g) for g in spec.colocation_groups)
    problem = SchedulingProblem(
        durations_cycles=tuple(durations),
        edges=tuple(edges),
        device_streams=tuple(d.streams for d in devices),
        link_of=tuple(tuple(r) for r in link_of),
        transfer_cycles=tuple(transfer),
        objective=Objective(spec.objective),
        device_memory_bytes=tuple(d.memory_capacity_bytes for d in devices),
        op_resident_bytes=tuple(_resident_bytes(graph, n) for n in ops),
        op_output_bytes=tuple(graph.output_bytes(n) for n in ops),
        colocation_groups=groups,
        device_class=_device_classes(spec, hw),
        op_names=ops,
    )
    _precheck_memory(spec, problem)
    reduction = Reduction(ops, tuple(d.name for d in devices), tuple(l.name for l in hw.links),
                          tuple(edge_meta), hw.clock_hz, spec.objective)
    return problem, reduction


def _resident_bytes(graph: Graph, op: str) -> int:
    """Weights and graph inputs an op reads: lowering keeps both in memory from cycle 0."""
    return sum(graph.tensors[t].size_bytes for t in graph.ops[op].inputs
               if graph.tensors[t].kind in ("weight", "input"))


def _no_device_message(spec, name: str, cycles) -> str:
    kinds = sorted({d.kind for d in spec.hardware.devices})
    runnable = [k for k in kinds if cycles[name, k] is not None]
    allowed = spec.allowed_devices.get(name)
    if not runnable:
        return (f"op {name!r} can run on no device: it gives cycles only for "
                f"{sorted(spec.graph.ops[name].cycles) or 'no kind'}, and the hardware has kinds {kinds}")
    return (f"op {name!r} is pinned to {list(allowed or [])}, but it can run only on kinds {runnable}")


def _precheck_memory(spec, problem: SchedulingProblem) -> None:
    """Explain the memory infeasibilities that need no solver, in the user's names."""
    names = problem.op_names
    devices = spec.hardware.devices
    for i in range(problem.num_ops):
        need = problem.resident_bytes(i) + problem.output_bytes(i)
        fits = [d for d in problem.allowed_devices(i) if need <= problem.memory_bytes(d)]
        if not fits:
            best = max(problem.allowed_devices(i), key=problem.memory_bytes)
            raise InfeasibleError(
                f"memory: op {names[i]!r} needs {format_bytes(need)} (weights and output) but the largest "
                f"device it may use, {devices[best].name}, holds {format_bytes(problem.memory_bytes(best))}")
    total_weights = sum(problem.resident_bytes(i) for i in range(problem.num_ops))
    total_memory = sum(problem.memory_bytes(d) for d in range(problem.num_devices))
    if total_weights > total_memory:
        raise InfeasibleError(
            f"memory: the models' weights total {format_bytes(total_weights)}, more than all devices "
            f"together hold ({format_bytes(total_memory)})")
    for g in problem.colocation_groups:
        common = set(problem.allowed_devices(g[0]))
        for i in g[1:]:
            common &= set(problem.allowed_devices(i))
        if not common:
            raise InfeasibleError(
                f"colocation group {[names[i] for i in g]} has no device every member may use")
        need = sum(problem.resident_bytes(i) for i in g)
        if all(need > problem.memory_bytes(d) for d in common):
            raise InfeasibleError(
                f"memory: colocation group {[names[i] for i in g]} needs {format_bytes(need)} of weights "
                f"on one device; the largest it may use holds "
                f"{format_bytes(max(problem.memory_bytes(d) for d in common))}")


def explain_infeasible(spec, problem: SchedulingProblem) -> str:
    """A user-level explanation when the solver proves infeasibility after the prechecks."""
    devices = spec.hardware.devices
    parts = []
    weights_by_dev = {}
    for i in range(problem.num_ops):
        allowed = problem.allowed_devices(i)
        if len(allowed) == 1:
            weights_by_dev[allowed[0]] = weights_by_dev.get(allowed[0], 0) + problem.resident_bytes(i)
    for d, w in sorted(weights_by_dev.items()):
        parts.append(f"{devices[d].name}: pinned weights {format_bytes(w)} of {format_bytes(problem.memory_bytes(d))}")
    unreachable = [(devices[a].name, devices[b].name) for a in range(problem.num_devices)
                   for b in range(a + 1, problem.num_devices) if problem.link_of[a][b] == FORBIDDEN]
    msg = ("no plan satisfies the memory limits, pins, colocation groups and links together "
           "(the solver proved it)")
    if unreachable:
        msg += f"; devices without a link between them: {unreachable[:5]}"
    if parts:
        msg += "; " + "; ".join(parts)
    return msg


def from_solution(result: SolveResult, reduction: Reduction, problem: SchedulingProblem,
                  *, spec_name: str, heuristic_objective: int | None = None,
                  solver_info: dict[str, Any] | None = None, resources: dict[str, Any] | None = None) -> Plan:
    """Map a solver result back to the user's names."""
    sol: SchedulingSolution = result.solution
    ops = tuple(
        PlacedOp(name, reduction.device_names[sol.op_device[i]], sol.op_stream[i], sol.op_start[i],
                 sol.op_duration[i])
        for i, name in enumerate(reduction.op_names))
    transfers = []
    for t in sol.transfers:
        src, dst, tensors, size = reduction.edges[t.edge]
        u, v, _ = problem.edges[t.edge]
        transfers.append(PlacedTransfer(
            src, dst, tensors, size, reduction.device_names[sol.op_device[u]],
            reduction.device_names[sol.op_device[v]], reduction.link_names[t.link], t.start_cycle,
            t.duration_cycles))
    transfers.sort(key=lambda t: (t.start_cycle, t.link, t.src_op, t.dst_op))
    bound = None if result.bound is None else int(result.bound)
    return Plan(
        spec_name=spec_name, objective_kind=reduction.objective_kind, status=result.status.value,
        objective=int(result.objective), bound=bound, gap=result.gap, makespan_cycles=sol.makespan_cycles,
        clock_hz=reduction.clock_hz, ops=ops, transfers=tuple(transfers),
        heuristic_objective=heuristic_objective, wall_time_s=result.wall_time_s,
        solver=dict(solver_info or {}), resources=dict(resources or {}))


def verify(plan: Plan, simulation) -> None:
    """Raise InternalError unless the simulator's replay agrees with the plan exactly.

    The check is :func:`planner.verify.compare_with_plan`, the one the directory verifier
    runs on plan.json: here a difference is a bug of ours, there a tampered directory.
    """
    from planner.verify import compare_with_plan

    problems = compare_with_plan(simulation, plan)
    if problems:
        raise InternalError("the simulator's replay disagrees with the plan:\n  "
                            + "\n  ".join(str(p) for p in problems[:20]))


def _solver_choice(spec):
    """The heuristic baseline and the scheduler that runs: the spec's ``solver.strategy``."""
    from solvers.scheduling import HeftScheduler

    strategy = StrategyOptions(strategy=getattr(spec, "strategy", "auto"), groups=getattr(spec, "groups", None))
    return HeftScheduler(), StrategyScheduler(strategy)


def _strategy_info(stats: dict[str, Any]) -> dict[str, Any]:
    """What plan.json's solver dict says about the strategy that ran (when one did)."""
    if "strategy" not in stats:
        return {}
    info = {"strategy": stats["strategy"], "strategy_requested": stats.get("requested_strategy", "auto")}
    groups = stats.get("strategy_stages", {}).get("placer", {}).get("groups")
    if groups is not None:
        info["groups"] = groups
    return info


def run(spec_or_path, *, time_limit_s: float | None = None, workers: int | None = None,
        seed: int | None = None, progress: Callable[[ProgressPoint], None] | None = None,
        solver_log: Callable[[str], None] | None = None, search: str | None = None) -> Outcome:
    """Plan a spec end to end and verify it by replaying the binaries.

    ``time_limit_s``, ``workers``, ``seed`` and ``search`` override the spec's ``solver:``
    settings. With ``search="deterministic"`` (the default) every solve stops on a budget of
    deterministic work calibrated from the time limit (:mod:`solvers.budget`), so the same
    spec, seed and workers give the same plan; ``plan.solver`` records ``search``,
    ``stopped_by`` and ``reproducible`` (False when the wall-clock safety net stopped a solve
    first, or with ``search="until-limit"``, which searches until the wall clock).

    Raises
    ------
    SpecError
        Bad input.
    InfeasibleError
        A valid spec that no plan satisfies (the message says which constraint).
    TimeLimitError
        No plan found within the time limit.
    InternalError
        A plan that fails its own checks (a bug).
    """
    from planner.spec import load_spec
    from solvers.scheduling import validate_schedule

    spec = load_spec(spec_or_path) if isinstance(spec_or_path, (str, Path, dict)) else spec_or_path
    if spec.objective == "max-load":  # the paper's partitioning objective: planner/max_load.py
        from planner.max_load import run_max_load
        return run_max_load(spec, time_limit_s, workers, seed, progress, solver_log, search=search)
    time_limit_s = spec.time_limit_s if time_limit_s is None else time_limit_s
    workers = spec.workers if workers is None else workers
    seed = spec.seed if seed is None else seed
    search = spec.search if search is None else search

    start = time.perf_counter()
    with stage("solve"):
        problem, reduction = to_problem(spec)
    from planner.isa.resources import determine_resources

    with stage("lowering"):
        resources = determine_resources(spec.graph, spec.hardware)
    # The solve leaves part of the limit to lowering, replay, numeric replay and writing
    # (planner.stage_timing): a function of the graph, so the deterministic budget still
    # depends on the spec alone.
    reserve_s = post_solve_reserve_s(problem.num_ops, _numeric_macs(resources), time_limit_s)
    heuristic_solver, exact_solver = _solver_choice(spec)
    options = SolveOptions(time_limit_s=time_limit_s - reserve_s, num_workers=workers, random_seed=seed,
                           progress=progress, log=solver_log, search=search)
    with stage("solve"):
        heuristic = heuristic_solver.solve(problem, options)
    if heuristic.status.has_solution:
        _check_solution(problem, heuristic, validate_schedule)
        if progress is not None:
            from solvers.scheduling import lower_bound

            progress(ProgressPoint(time.perf_counter() - start, heuristic.objective,
                                   lower_bound(problem, segments=False)))
    with stage("solve"):
        result = exact_solver.solve(problem, replace(options, hint=heuristic.solution))
    if result.status is Status.INFEASIBLE:
        raise InfeasibleError(explain_infeasible(spec, problem))
    if result.status is Status.MODEL_INVALID:
        raise InternalError(f"the CP-SAT model is invalid: {result.stats}")
    if not result.status.has_solution:
        raise TimeLimitError(
            f"no plan found within {time_limit_s:g} s (status {result.status.value}); "
            "raise --time-limit or relax the constraints")
    _check_solution(problem, result, validate_schedule)

    plan = from_solution(
        result, reduction, problem, spec_name=spec.name,
        heuristic_objective=int(heuristic.objective) if heuristic.status.has_solution else None,
        solver_info={"name": result.solver_name, "heuristic": heuristic.solver_name, "workers": workers,
                     "seed": seed, "time_limit_s": time_limit_s, "post_solve_reserve_s": reserve_s,
                     **run_summary(search, [result.stats.get("stopped_by")]),
                     **_strategy_info(result.stats)},
        resources=resources.to_dict() if hasattr(resources, "to_dict") else dict(resources))
    outcome = Outcome(plan, problem, reduction, result, heuristic)
    options = getattr(spec, "memory", None)
    if options is not None and options.enabled:
        with stage("memory"):
            _plan_memory(outcome, spec, time_limit_s - reserve_s, seed, search)
    _lower_and_replay(outcome, spec)
    plan = replace(outcome.plan, wall_time_s=time.perf_counter() - start)
    outcome.plan = plan
    return outcome


def _numeric_macs(resources) -> int:
    """The multiply-accumulates the numeric replay will execute by default: the graph's, or 0
    when they are over its default limit (then it is skipped)."""

    macs = sum(op.macs for op in resources.ops.values())
    return macs if macs <= NUMERIC_DEFAULT_MAX_MACS else 0


def _check_solution(problem, result, validate_schedule) -> None:
    violations = validate_schedule(problem, result.solution)
    if violations:
        raise InternalError(f"{result.solver_name} returned an invalid schedule:\n  " + "\n  ".join(violations[:20]))


def memory_bound(spec, problem: SchedulingProblem, reduction: Reduction, planned: set[str]) -> int:
    """A lower bound on the makespan with memory planning on the ``planned`` devices.

    Each op on a planned device is charged its best case: its compute, or its distinct
    operand bytes at the faster of its two levels (the roofline's memory term cannot be
    less); splitting never lowers compute in this ISA (a systolic array fills and drains
    per portion; vector passes round up per portion). Memory capacity is dropped.
    """
    from planner.isa.cost import memory_cycles, op_cost
    from solvers.scheduling import lower_bound

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


def _forced_order_bound(spec, memory) -> int:
    """The level solver's bound, when it bounds every plan: one device with one stream whose
    op order is forced (each op feeds the next), so the solver's fixed order is the only one.

    Its bound is in device cycles; any plan on the timeline, scaled back by clock/reference,
    is a schedule of the level problem with durations at least the required ones, so
    ``ceil(bound * reference / clock)`` bounds the timeline makespan.
    """
    hardware, graph = spec.hardware, spec.graph
    if len(hardware.devices) != 1 or hardware.devices[0].streams != 1:
        return 0
    dev = hardware.devices[0]
    dp = memory.memory.devices.get(dev.name)
    if dp is None or dp.stats.get("level_bound_device_cycles") is None:
        return 0
    order = memory.bridges_order.get(dev.name, ())
    if not order or any(not graph.dag.has_edge(a, b) for a, b in zip(order, order[1:])):
        return 0
    return -(-int(dp.stats["level_bound_device_cycles"]) * hardware.clock_hz // dev.profile.clock_hz)


def _plan_memory(outcome: Outcome, spec, time_limit_s: float, seed: int, search: str) -> None:
    """Memory-plan the spine's plan, replay it and its baselines, and keep the fastest.

    Everything in main memory is itself a valid memory plan (the spine's), so the result is
    never slower than it: when the memory plan loses (the level solver sees one device's
    order, not the cross-device critical path), the spine's plan is kept and the report says so.
    """
    from planner.memory import plan_memory

    spine = outcome.plan
    memory = plan_memory(spec, spine, time_limit_s=time_limit_s, seed=seed, search=search)
    outcome.memory = memory
    spine_replayed = _replay(spine, spec, None)
    planned_replayed = _replay(memory.plan, spec, memory.memory)
    spine_replay, planned_replay = spine_replayed[2], planned_replayed[2]
    outcome.memory_baselines = {"memory plan": planned_replay.makespan_cycles,
                                "all in main memory": spine_replay.makespan_cycles}
    outcome.memory_peaks = {"memory plan": planned_replay.peak_bytes,
                            "all in main memory": spine_replay.peak_bytes}
    candidates = [(planned_replay.makespan_cycles, 0, "memory plan", memory.plan, memory.memory, planned_replayed)]
    if memory.greedy_plan is not None:
        greedy_replayed = _replay(memory.greedy_plan, spec, memory.greedy_memory)
        greedy = greedy_replayed[2]
        outcome.memory_baselines["greedy prefetch + greedy-by-size"] = greedy.makespan_cycles
        outcome.memory_peaks["greedy prefetch + greedy-by-size"] = greedy.peak_bytes
        candidates.append((greedy.makespan_cycles, 1, "greedy prefetch + greedy-by-size", memory.greedy_plan,
                           memory.greedy_memory, greedy_replayed))
    candidates.append((spine_replay.makespan_cycles, 2, "all in main memory", spine, None, spine_replayed))
    makespan, _, choice, plan, memory_plan, replayed = min(candidates, key=lambda c: (c[0], c[1]))
    outcome.memory_choice = choice
    outcome.memory_plan = memory_plan
    outcome.memory_replay = replayed
    planned = set(memory_plan.devices) if memory_plan is not None else set(memory.memory.devices)
    bound = max(memory_bound(spec, outcome.problem, outcome.reduction, planned), _forced_order_bound(spec, memory))
    bound = min(bound, makespan)
    status = "OPTIMAL" if bound >= makespan else "FEASIBLE"
    outcome.plan = replace(plan, status=status, objective=makespan, bound=bound,
                           gap=(makespan - bound) / makespan if makespan else 0.0,
                           solver={**spine.solver, "memory": choice,
                                   **run_summary(search, [spine.solver.get("stopped_by"), memory.stopped_by])})


def _replay(plan: Plan, spec, memory_plan) -> tuple[dict, dict, Any]:
    """Lower ``plan`` (with ``memory_plan`` on its devices), encode and replay it; verify the replay.

    Returns (programs, binaries, simulation).
    """
    from planner.isa.binary import encode
    from planner.lowering import lower
    from planner.simulator import simulate

    options = getattr(spec, "memory", None)
    with stage("lowering"):
        programs = lower(plan, spec.graph, spec.hardware, memory_plan=memory_plan,
                         alignment_bytes=options.alignment_bytes if options is not None else 64)
        binaries = {name: encode(p) for name, p in sorted(programs.items())}
    with stage("replay"):
        simulation = simulate(binaries)
        verify(plan, simulation)
    return programs, binaries, simulation


def _lower_and_replay(outcome: Outcome, spec) -> None:
    from planner.isa.binary import listing
    from planner.lowering import allocation

    # Memory planning already lowered and replayed the plan it chose; lowering ignores the
    # status and bound it set afterwards, so those binaries are this plan's.
    replayed = outcome.memory_replay or _replay(outcome.plan, spec, outcome.memory_plan)
    outcome.programs, outcome.binaries, outcome.simulation = replayed
    verify(outcome.plan, outcome.simulation)
    with stage("lowering"):
        outcome.listings = {name: listing(p) for name, p in sorted(outcome.programs.items())}
        outcome.allocation = allocation(outcome.plan, spec.graph, spec.hardware, outcome.programs)
