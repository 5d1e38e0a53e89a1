"""From a schedule to one N-level problem per memory-planned device (issue 14, stage 1).

The two-level bridge (:mod:`~planner.memory.bridge`) sees a device's fast level and its
main memory; this one sees every level of the device's hierarchy from the fast level on
(``tpu-v4-host``: vmem, cmem, hbm, host) as a
:class:`~solvers.memory.levels.HierarchyProblem`:

* the ops, tensors, compute cycles, live-out set and roofline rates are the two-level
  bridge's (one table, :func:`~planner.memory.bridge.build_device_problem`), so both
  problems cost every op alike;
* levels in profile order (fastest first); level 0 is the fast level the spec names; main
  is the profile's (or the spec's) main level, at the device's memory capacity (a memory
  limit lowers it); every other level holds back the same reserve as the two-level fast
  level (room to round addresses up to the alignment), but never the bytes of the tensors
  homed there (their home copies hold the level for the whole plan);
* DMA paths: the profile's between those levels (none declared: every pair), each at its
  own rate where the profile gives one (``dma_rates``), else the slower end's bandwidth (the
  ISA's DMA rate, which the binary carries per path), with the profile's DMA latency;
* homes: a weight or graph input named in the spec's ``memory.home`` lives in that level
  (host memory for an offloaded weight); every other tensor's home is main memory.

Split groups are the two-level bridge's (runs of row-separable ops where an op touches more
bytes than the fast level holds, with the factors that divide their tensors); the N-level
solvers enumerate their factors (:mod:`~solvers.memory.levels.hierarchy_split`) and the
assembly runs a split op as instances over portion buffers in every level.

:func:`solve_hierarchy` solves it with the registered hierarchy solvers: the greedy and
all-at-home baselines and CP-SAT (which starts from the better baseline and keeps it when
it finds nothing better); the best plan wins and its status and bound are CP-SAT's.

Examples
--------
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/memory-4level.yaml")  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from planner.errors import InfeasibleError, UnsupportedError
from planner.graph.ir import Graph
from planner.hardware import Device, Hardware
from planner.memory.bridge import (
    DeviceBridge, LevelTensor, build_device_problem, fast_level_name, main_memory_cycles, main_memory_share_cycles,
    row_separable,
)
from planner.plan import Plan
from planner.spec.memory_options import MemoryOptions
from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions, SolveResult
from solvers.memory.levels import (
    AllHomeHierarchySolver, CpSatHierarchySolver, GreedyHierarchySolver, HierarchyProblem, HierarchySolution,
    plan_hierarchy_greedy,
)
from solvers.memory.levels.hierarchy_bounds import hierarchy_lower_bound
from solvers.memory.levels.stream_bound import all_slow_floor
from solvers.memory.levels.traffic_bound import shared_traffic_lower_bound
from solvers.portfolio import Portfolio

__all__ = ["HierarchyBridge", "hierarchy_levels", "plans_n_levels", "build_hierarchy_problem",
           "HierarchyOutcome", "solve_hierarchy", "plan_lower_bound", "PLAN_BOUND_SHARE", "stream_candidates"]


@dataclass(frozen=True)
class HierarchyBridge:
    """One device's N-level problem and the names to map its solution back.

    ``levels`` are the level names (problem level index -> name); the op and tensor tables
    are the two-level bridge's (``base``), index for index.
    """

    device: Device
    levels: tuple[str, ...]
    main_level: int
    base: DeviceBridge
    problem: HierarchyProblem
    reserve_bytes: int  # held back from every level other than main
    # What any plan of the device's ops may split (any order: row-separable ops and the
    # non-weight tensors they touch) and every level's full capacity: the plan's bound's view.
    splittable_ops: frozenset = frozenset()
    splittable_tensors: frozenset = frozenset()
    full_capacity_bytes: tuple[int, ...] = ()

    @property
    def ops(self) -> tuple[str, ...]:
        return self.base.ops

    @property
    def tensors(self) -> tuple[LevelTensor, ...]:
        return self.base.tensors


def hierarchy_levels(device: Device, options: MemoryOptions) -> tuple[str, ...]:
    """The levels ``device`` is planned over: its profile's from the fast level on.

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> hierarchy_levels(Device("t", "tpu", get_profile("tpu-v4-host")), MemoryOptions(enabled=True))
    ('vmem', 'cmem', 'hbm', 'host')
    >>> hierarchy_levels(Device("t", "tpu", get_profile("tpu-v4-host")), MemoryOptions(True, {"tpu": "cmem"}))
    ('cmem', 'hbm', 'host')
    """
    names = [m.name for m in device.profile.memory]
    return tuple(names[names.index(fast_level_name(device, options)):])


def plans_n_levels(device: Device, options: MemoryOptions) -> bool:
    """Whether ``device`` needs the N-level problem: more than two levels from its fast level
    on, or a tensor homed outside main memory. Otherwise the two-level path plans it.

    Examples
    --------
    >>> from planner.isa.profiles import get_profile
    >>> plans_n_levels(Device("t", "tpu", get_profile("tpu-v4-host")), MemoryOptions(enabled=True))
    True
    >>> plans_n_levels(Device("n", "npu", get_profile("edge-npu")), MemoryOptions(enabled=True))
    False
    """
    return len(hierarchy_levels(device, options)) > 2 or bool(options.home)


def _rate(bytes_per_s: int, clock_hz: int) -> Fraction:
    return Fraction(int(bytes_per_s), int(clock_hz))


def build_hierarchy_problem(graph: Graph, hardware: Hardware, plan: Plan, device: Device,
                            options: MemoryOptions, reserve_factor: int = 0) -> HierarchyBridge:
    """The N-level problem of ``device`` for the order ``plan`` gives it.

    Call :func:`~planner.memory.bridge.skip_reason` first; this assumes the device can be
    memory-planned. ``reserve_factor`` as in the two-level bridge (0: 32 alignments, else a
    percentage of each level, at most an eighth of it).

    Raises
    ------
    UnsupportedError
        A tensor's home is not one of the planned levels (cannot happen for a resolved spec,
        whose homes are at or after main memory).
    """
    base = build_device_problem(graph, hardware, plan, device, options, reserve_factor)
    profile = device.profile
    names = hierarchy_levels(device, options)
    levels = [profile.level(n) for n in names]
    main_name = profile.main_memory.name
    main = names.index(main_name)

    def capacity(i: int) -> int:
        if i == main:
            return device.memory_capacity_bytes
        cap = levels[i].capacity_bytes
        reserve = 32 * options.alignment_bytes if reserve_factor == 0 else cap * reserve_factor // 100
        return max(1, cap - min(cap // 8, reserve), homed_bytes[i])

    if profile.dma_paths:
        paths = tuple(sorted((names.index(a), names.index(b)) if names.index(a) < names.index(b)
                             else (names.index(b), names.index(a))
                             for a, b in profile.dma_paths if a in names and b in names))
    else:
        paths = tuple((a, b) for a in range(len(names)) for b in range(a + 1, len(names)))
    homes = []
    for lt in base.tensors:
        home = options.home_level(lt.tensor, main_name) if lt.preloaded else main_name
        if home not in names:
            raise UnsupportedError(f"device {device.name}: tensor {lt.tensor!r} lives in {home}, "
                                   f"which is not one of its planned levels ({', '.join(names)})")
        homes.append(names.index(home))
    _check_homes_hold(device, base.tensors, [names[h] for h in homes], main_name)
    # The home copies hold their level at every point of the plan: the reserve (room for the
    # address pass to round copies up to the alignment) never holds back those bytes, or a home
    # exactly its tensors' size would refuse them. At that size nothing else fits the level, and
    # the home copies alone pack whenever their rounded sizes fit it.
    homed_bytes = [sum(lt.size_bytes for lt, h in zip(base.tensors, homes) if h == i) for i in range(len(names))]
    two = base.problem
    splittable_ops = frozenset(i for i, name in enumerate(base.ops) if row_separable(graph, name)) \
        if options.split and any(k > 1 for k in options.split_factors) else frozenset()
    splittable_tensors = frozenset(t for i in splittable_ops for t in (*base.op_inputs[i], *base.op_outputs[i])
                                   if base.tensors[t].role != "weight")
    problem = HierarchyProblem(
        compute_cycles=two.compute_cycles, reads=two.reads, writes=two.writes, tensor_bytes=two.tensor_bytes,
        capacity_bytes=tuple(capacity(i) for i in range(len(names))),
        bandwidth_bytes_per_cycle=tuple(_rate(m.bandwidth_bytes_per_s, profile.clock_hz) for m in levels),
        main_level=main, dma_paths=paths, dma_latency_cycles=profile.dma_latency_cycles,
        dma_path_bytes_per_cycle=tuple(_rate(profile.dma_bandwidth(names[a], names[b]), profile.clock_hz)
                                       for a, b in paths) if profile.dma_rates else (),
        tensor_home=tuple(homes), live_out=two.live_out, splits=two.splits,
        shared_bandwidth=options.shared_bandwidth, level_names=names,
        op_names=two.op_names, tensor_names=two.tensor_names)
    full = tuple(device.memory_capacity_bytes if i == main else levels[i].capacity_bytes for i in range(len(names)))
    return HierarchyBridge(device, names, main, base, problem, levels[0].capacity_bytes - capacity(0),
                           splittable_ops, splittable_tensors, full)


def _check_homes_hold(device: Device, tensors, homes: list[str], main_name: str) -> None:
    """Every tensor's home holds it whole (a split cuts the copies that move, not the home copy).

    Raises
    ------
    InfeasibleError
        A tensor is larger than its home level (the message names the tensor, level and sizes).
    """
    for lt, home in zip(tensors, homes):
        capacity = device.memory_capacity_bytes if home == main_name else device.profile.level(home).capacity_bytes
        if lt.size_bytes > capacity:
            raise InfeasibleError(f"device {device.name}: tensor {lt.tensor!r} ({lt.size_bytes:,} B) does not fit "
                                  f"its home level {home} ({capacity:,} B); splitting does not help, since the home "
                                  f"copy is whole")


@dataclass(frozen=True)
class HierarchyOutcome:
    """The chosen N-level plan of one device and the results it was chosen from."""

    best: SolveResult[HierarchySolution]  # CP-SAT's result (its plan is the best of all three)
    greedy: SolveResult[HierarchySolution]
    all_home: SolveResult[HierarchySolution]
    plan_bound: int | None = None  # device cycles, over every plan of the device (plan_lower_bound)

    @property
    def solution(self) -> HierarchySolution:
        return self.best.solution


def solve_hierarchy(bridge: HierarchyBridge, time_limit_s: float, seed: int = 0,
                    search: str = "deterministic", graph: Graph | None = None) -> HierarchyOutcome:
    """Level assignment over every level: the greedy-then-CP-SAT portfolio and the all-at-home
    baseline.

    CP-SAT keeps the better baseline when it finds nothing better, so its plan is the best
    of the three; its status is OPTIMAL only when its bound meets the plan. One worker, as
    for the two-level solver (deterministic on a loaded machine).

    Raises
    ------
    UnsupportedError
        No solver found a plan (the levels cannot hold the device's tensors).
    """
    opts = SolveOptions(time_limit_s=max(0.1, time_limit_s), num_workers=1, random_seed=seed, search=search)
    run = Portfolio(GreedyHierarchySolver(), CpSatHierarchySolver()).run(bridge.problem, opts)
    greedy, exact = run.heuristic, run.best_with_exact_stop()
    all_home = AllHomeHierarchySolver().solve(bridge.problem, opts)
    if not exact.status.has_solution:
        raise UnsupportedError(f"device {bridge.device.name}: no memory plan over "
                               f"{', '.join(bridge.levels)} found ({exact.status.value})")
    stops: list = []
    bound = plan_lower_bound(bridge, opts.time_limit_s, search, graph, stops)
    if "wall_clock" in stops:  # the bound's net fired: still sound, but the run is not reproducible
        exact = replace(exact, stats={**exact.stats, "stopped_by": "wall_clock"})
    return HierarchyOutcome(exact, greedy, all_home, bound)


# The share of the level solver's time the plan's bound may take (it is one small model).
PLAN_BOUND_SHARE = 0.1


def plan_lower_bound(bridge: HierarchyBridge, time_limit_s: float, search: str = "deterministic",
                     graph: Graph | None = None, stops: list | None = None) -> int:
    """A lower bound, in device cycles, on the makespan of every plan of the device's ops over
    its levels: any order of them on its one compute stream, any split of its row-separable
    ops, any level, move and DMA order, the levels at their full capacities (the level
    solver's problem holds back a reserve). The relaxation of
    :mod:`~solvers.memory.levels.hierarchy_bounds`: a host-homed tensor is read at the
    host's bandwidth or crosses the host link on the one DMA engine, at least once.

    Under shared bandwidth, also every level's forced traffic
    (:mod:`~solvers.memory.levels.traffic_bound`: a host-homed weight crosses the host's
    bandwidth whether read in place or fetched); the larger of the two bounds, each with half
    of the share. On a device with several streams, whose ops overlap, only the latter, with
    the op times shared over the streams (every forced hop still on the one DMA engine).
    Without homes, at most the everything-in-main-memory bound
    (:func:`~solvers.memory.levels.stream_bound.all_slow_floor` with ``graph``'s ISA
    durations, and under sharing the main-memory shares its ops hold): that baseline is then a
    candidate, timed by the ISA (a view op is free, where the level problem charges its bytes).

    Its CP-SAT bound within ``PLAN_BOUND_SHARE`` of the time (deterministic), so a stop on the
    budget stays sound. ``stops`` receives how the budget ended when its wall-clock net fired.
    """
    problem = bridge.problem
    if bridge.full_capacity_bytes:
        problem = replace(problem, capacity_bytes=bridge.full_capacity_bytes)
    budget = Budget.start(max(0.05, PLAN_BOUND_SHARE * time_limit_s), MEMORY_LEVELS, search=search)
    splittable = bridge.splittable_ops, bridge.splittable_tensors
    streams = max(1, bridge.device.streams)
    if streams > 1:  # the one-stream relaxation sums op times, which several streams overlap
        bound = shared_traffic_lower_bound(problem, budget, budget.left, *splittable, num_streams=streams)
    elif not problem.shared_bandwidth:
        bound = hierarchy_lower_bound(problem, budget, budget.left, *splittable)
    else:
        unshared = hierarchy_lower_bound(problem, budget, budget.left / 2, *splittable)
        bound = max(unshared, shared_traffic_lower_bound(problem, budget, budget.left, *splittable))
    if all(h == problem.main_level for h in problem.tensor_home):
        # No homes: the everything-in-main-memory baseline is a candidate, timed by the ISA (a
        # view op is free; without ``graph``, each op at its compute; under sharing its shares).
        durations = (main_memory_cycles(graph, bridge.device, bridge.ops) if graph is not None
                     else problem.compute_cycles)
        shares = (main_memory_share_cycles(graph, bridge.device, bridge.ops)
                  if graph is not None and problem.shared_bandwidth else None)
        two = replace(problem.as_level_problem(), splits=(), shared_bandwidth=False)
        bound = min(bound, all_slow_floor(two, streams, durations, shares))
    if stops is not None:
        stops.append(budget.stopped_by)
    return bound


def stream_candidates(bridge: HierarchyBridge) -> tuple[tuple[str, HierarchySolution], ...]:
    """Several streams: more plans over every level for the overlapped re-timing to judge
    (``(name, solution)``), beside the solver's.

    The solvers time the ops in series, so their plan moves every tensor whose move pays for
    itself in series, and the one DMA engine then holds the streams back once they overlap.
    The cost-aware greedy reads a tensor where it is unless its move pays for itself even in
    series: on the two-branch benchmark over three levels (41 ops) the overlapped re-timing
    runs it in 184,038 cycles against 282,929 for CP-SAT's plan. Unsplit problems only; empty
    on one stream.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> from tests.planner.memory.test_hierarchy_bridge import spine_plan
    >>> spec = load_spec("tests/data/specs/memory-4level-streams.yaml")
    >>> bridge = build_hierarchy_problem(spec.graph, spec.hardware, spine_plan(spec), spec.hardware.devices[0],
    ...                                  spec.memory)
    >>> [name for name, _ in stream_candidates(bridge)]
    ['cost-aware greedy']
    """
    if not bridge.base.problem.multi_stream or bridge.problem.splits:
        return ()
    plan = plan_hierarchy_greedy(bridge.problem, cost_aware=True)
    return (("cost-aware greedy", plan),) if plan is not None else ()
