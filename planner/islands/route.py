"""The islands strategy: split, one scheduling solve per island (concurrently), one global schedule.

1. **Split** (:class:`solvers.islands.CpSatSplitSolver`, 5% of the limit): each portion
   (:mod:`planner.islands.portions`) to one island, minimising the bottleneck (island work
   per device lane, network busy cycles), then the cross-island bytes.
2. **Per-island solves** (30% of the limit each, all at once, the run's workers shared
   among them): each island's ops, with
   the tensors they receive from other islands as graph inputs, on the island's devices
   and fast links only, solved by the existing spine (:func:`planner.scheduling.solve_schedule`)
   in a process pool (a gang's shards pinned to distinct devices of its island,
   :mod:`planner.islands.gang`). Given the split they share nothing, so they are independent: the
   deterministic budget makes each one's result the same in the pool and in sequence.
3. **Global schedule** (20%): the islands' placement fixed (every op pinned to its device),
   the whole graph scheduled once over all devices, the network included, so cross-island
   transfers are sequenced on the one network link; then re-timed so every gang starts on
   one cycle. This is the plan that is lowered and replayed (and each gang's start checked
   in the replay).

   Under the latency objective, steps 2 and 3 run :data:`ARRIVAL_ROUNDS` times (each round
   with its share of their time): after the first, each island's solve is given the previous
   global schedule's arrival cycle of every cross-island input (a release time) and the chain
   after every cross-island output (a tail), :mod:`planner.islands.arrivals`, so it is solved
   against when its data really arrives and what other islands wait for; the best round's
   global schedule is the plan. Under throughput one round (the max load does not depend on
   arrival times).
4. **One problem** (20%): the same workload on the same hardware with the placement free
   (no split), planned in the same run. Its lower bound is a bound of the global problem,
   so it is the plan's bound: the islands plan is one feasible point of that problem. Each
   island's own bound is reported too, but it bounds that island's part *given the split*.
5. **One big island** (20%): the same workload on the same devices as one island
   (:func:`one_island_hardware`: every cross-island pair joined as fast as the fastest
   island link), the comparison the report states as a ratio. Different hardware, so its
   bound is no bound of this plan.

Examples
--------
>>> from planner.pipeline import run
>>> outcome = run("specs/islands.yaml", time_limit_s=2, workers=1)
>>> details = outcome.plan.solver["islands"]
>>> [i["name"] for i in details["islands"]], details["cross_bytes"] > 0
(['pod-a', 'pod-b'], True)
>>> outcome.plan.bound <= outcome.plan.objective and outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
True
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Mapping

from planner.clock_stops import with_clock_stops
from planner.errors import InfeasibleError
from planner.islands.arrivals import Arrivals, arrivals_from_plan, island_ops, with_arrivals
from planner.islands.gang import align_gangs, pin_shards, replayed_gang_record
from planner.graph.ir import Graph
from planner.hardware import Hardware, Link
from planner.islands.portions import Portions
from planner.reductions.scheduling import to_problem
from planner.scheduling import run_reserve_s, solve_schedule
from planner.spec import Spec
from planner.spec.limits import MAX_LINKS
from planner.units import format_bytes
from planner.stages import Outcome, Problem, RunSettings, Solved
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.islands import CpSatSplitSolver, SplitProblem, SplitSolution, split_errors, split_loads
from solvers.portfolio import Portfolio

__all__ = ["IslandResult", "IslandsDetails", "GivenSplit", "solve_islands", "solve_island_specs", "island_spec",
           "islands_outcome", "one_island_hardware", "SHARES", "ARRIVAL_ROUNDS", "ONE_PROBLEM"]

#: The name of the one-problem comparison among the plan's baselines.
ONE_PROBLEM = "one problem (no split)"

#: Shares of the time limit: the split, each per-island solve, the global schedule, the one-problem comparison.
SHARES = {"split": 0.05, "island": 0.3, "global": 0.2, "whole": 0.2, "one_island": 0.2}

#: Rounds of per-island solves and global schedule under the latency objective, each with the
#: arrival times and tails of the previous one (each round gets its share of the island and
#: global time). One round under throughput: its max load does not depend on when data arrives.
ARRIVAL_ROUNDS = 2


@dataclass(frozen=True)
class IslandResult:
    """One island's solve given the split: its placement and its figures (``bound`` bounds this island only)."""

    name: str
    devices: tuple[str, ...]
    placement: tuple[tuple[str, str], ...]
    status: str
    objective: int | None
    bound: int | None
    wall_time_s: float
    host_memory_bytes: int | None = None
    stopped_by: str = "finished"  # how the island's solve ended (solvers.budget words; not in plan.json's entry)


@dataclass(frozen=True)
class IslandsDetails:
    """What the islands route adds: the split, each island's solve, and the one-problem comparison."""

    split: SolveResult
    portions: Portions
    islands: tuple[IslandResult, ...]
    whole: Solved
    pool_wall_s: float
    concurrent: bool
    gangs: tuple[tuple[str, ...], ...] = ()
    one_island: Solved | None = None
    rounds: tuple[int, ...] = ()  # each arrival round's global objective (latency), empty with one round

    def to_dict(self) -> dict[str, Any]:
        """The plan.json ``solver.islands`` entry (no wall times: equal inputs give equal bytes)."""
        split = self.split.solution
        return {
            "split": {"solver": self.split.solver_name, "status": self.split.status.value,
                      "bottleneck_cycles": split.bottleneck, "bound": _whole(self.split.bound),
                      "portions": [{"island": self.portions.island_names[i], "ops": len(ops),
                                    "first": ops[0], "last": ops[-1]}
                                   for ops, i in zip(self.portions.ops_of, split.island_of)]},
            "cross_bytes": split.cross_bytes, "network_cycles": split.network_cycles,
            "islands": [{"name": r.name, "devices": list(r.devices), "ops": len(r.placement),
                         "host_memory_bytes": r.host_memory_bytes, "status": r.status, "objective": r.objective,
                         "bound_given_split": r.bound}
                        for r in self.islands],
            "one_problem": {"status": self.whole.plan.status, "objective": self.whole.plan.objective,
                            "bound": self.whole.plan.bound},
            "one_island": None if self.one_island is None else {
                "status": self.one_island.plan.status, "objective": self.one_island.plan.objective,
                "bound": self.one_island.plan.bound},
            **({"arrival_rounds": list(self.rounds)} if self.rounds else {}),
        }


def _whole(value: Any) -> int | None:
    return None if value is None else int(value)


def island_spec(spec: Spec, devices: tuple[str, ...], ops: set[str]) -> Spec:
    """The spec of one island's part: its ops (tensors from other islands become graph inputs),
    its devices and the links among them only."""
    graph = spec.graph
    order = [op for op in graph.topological_order() if op in ops]
    kept_ops = [replace(graph.ops[op], after=tuple(a for a in graph.ops[op].after if a in ops)) for op in order]
    names = dict.fromkeys(t for op in kept_ops for t in (*op.inputs, *op.outputs))
    tensors = []
    for name in names:
        tensor = graph.tensors[name]
        producer = graph.producer(name)
        if producer is not None and producer not in ops:
            tensor = replace(tensor, kind="input")  # it arrives over the network
        tensors.append(tensor)
    inside = set(devices)
    hardware = Hardware(tuple(d for d in spec.hardware.devices if d.name in inside),
                        tuple(l for l in spec.hardware.links if set(l.devices) <= inside), spec.hardware.clock_hz)
    allowed = {op: tuple(d for d in devs if d in inside) for op, devs in spec.allowed_devices.items() if op in ops}
    groups = tuple(g for g in spec.colocation_groups if set(g) <= ops)
    return replace(spec, graph=Graph(tensors, kept_ops), hardware=hardware, allowed_devices=allowed,
                   colocation_groups=groups, document=None)


def one_island_hardware(hardware: Hardware) -> Hardware | None:
    """The same devices as one big island: the islands' links kept, and every cross-island pair
    joined by its own link as fast as the fastest island link (no network). None when that
    needs more than :data:`~planner.spec.limits.MAX_LINKS` links.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> big = one_island_hardware(load_spec("specs/islands.yaml").hardware)
    >>> [l.name for l in big.links][-2:], big.links[-1].bandwidth_bytes_per_s, big.islands
    (['one_island_tpu1_tpu2', 'one_island_tpu1_tpu3'], 300000000000, ())
    """
    networks = {island.network for island in hardware.islands if island.network}
    fast = [link for link in hardware.links if link.name not in networks]
    best = max(fast or hardware.links, key=lambda l: (l.bandwidth_bytes_per_s, -l.latency_cycles))
    island_of = {d: k for k, island in enumerate(hardware.islands) for d in island.devices}
    names = [d.name for d in hardware.devices]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if island_of[a] != island_of[b]]
    if len(fast) + len(pairs) > MAX_LINKS:
        return None
    taken = {link.name for link in fast}
    added = [Link(_free_name(f"one_island_{a}_{b}", taken), (a, b), best.bandwidth_bytes_per_s, best.latency_cycles)
             for a, b in pairs]
    return Hardware(hardware.devices, (*fast, *added), hardware.clock_hz)


def _free_name(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _solve_one(name: str, spec: Spec, settings: RunSettings, warm_start: Mapping[str, str] | None = None,
               arrivals: Arrivals | None = None) -> IslandResult:
    started = time.perf_counter()
    sproblem, reduction = to_problem(spec)
    if arrivals:
        sproblem, reduction = with_arrivals(sproblem, reduction, arrivals)
    solved = solve_schedule(Problem(spec, settings, sproblem, reduction), warm_start=warm_start)
    plan = island_ops(solved.plan)
    return IslandResult(name, tuple(d.name for d in spec.hardware.devices),
                        tuple((o.name, o.device) for o in plan.ops), plan.status, plan.objective, plan.bound,
                        time.perf_counter() - started, stopped_by=solved.plan.solver.get("stopped_by", "finished"))


def solve_island_specs(parts: list[tuple[str, Spec]], settings: RunSettings, *, concurrent: bool = True,
                       warm_start: Mapping[str, str] | None = None,
                       arrivals: Arrivals | None = None) -> tuple[tuple[IslandResult, ...], float]:
    """Solve each island's spec, in a process pool (``concurrent``) or one after the other; and the wall time.

    The results are the same either way (each solve's deterministic budget depends on its
    spec alone); only the wall time differs. ``warm_start`` (a previous placement) starts each
    island's solve from the part of it that applies to that island; ``arrivals`` (release
    times and tails, :mod:`planner.islands.arrivals`) give each island's solve its part of them.
    """
    warm = [None if warm_start is None else _island_part(warm_start, part) or None for _, part in parts]
    timed = [None if arrivals is None else arrivals.restricted(part.graph.ops) for _, part in parts]
    quiet = replace(settings, progress=None, solver_log=None)
    started = time.perf_counter()
    if concurrent and len(parts) > 1:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(len(parts), os.cpu_count() or 1), mp_context=context) as pool:
            futures = [pool.submit(_solve_one, name, part, quiet, w, a) for (name, part), w, a in zip(parts, warm, timed)]
            results = tuple(f.result() for f in futures)
    else:
        results = tuple(_solve_one(name, part, quiet, w, a) for (name, part), w, a in zip(parts, warm, timed))
    return results, time.perf_counter() - started


def _island_part(placement: Mapping[str, str], part: Spec) -> dict[str, str]:
    """The part of a (whole spec's usable) placement that applies to one island's spec: its ops on its
    devices, within its pins (a gang's shards are pinned per island)."""
    devices = {d.name for d in part.hardware.devices}
    return {op: d for op, d in placement.items() if op in part.graph.ops and d in devices
            and d in part.allowed_devices.get(op, (d,))}


def _share(settings: RunSettings, stage_name: str, reserve_s: float, rounds: int = 1) -> RunSettings:
    """The stage's share of what the limit leaves after the reserve for lowering, replay and writing
    (split evenly among ``rounds``)."""
    return replace(settings, time_limit_s=(settings.time_limit_s - reserve_s) * SHARES[stage_name] / rounds)


def _rounds(spec: Spec, parts: list[tuple[str, Spec]], island_of: Mapping[str, int], rounds: int,
            island_settings: RunSettings, global_settings: RunSettings, concurrent: bool,
            warm_start: Mapping[str, str] | None, stops: list[tuple[str, Any]]
            ) -> tuple[tuple[IslandResult, ...], Solved, float, tuple[int, ...]]:
    """Per-island solves and the global schedule of their placement, ``rounds`` times: the first
    with every cross-island input there at cycle 0, each next one with the release times and tails
    of the previous round's global schedule (:func:`~planner.islands.arrivals.arrivals_from_plan`).
    Stops early when a round repeats a placement (the next would repeat it too). Returns the best
    round's island results and global schedule (the earliest on a tie), the pools' summed wall
    time, and each round's global objective (empty with one round: nothing to compare). Every solve of
    every round steered the choice: each one's (name, ``stopped_by``) goes to ``stops``."""
    best: tuple[tuple[IslandResult, ...], Solved] | None = None
    arrivals, seen, history, pool_wall = None, [], [], 0.0
    for _ in range(rounds):
        results, wall = solve_island_specs(parts, island_settings, concurrent=concurrent, warm_start=warm_start,
                                           arrivals=arrivals)
        pool_wall += wall
        stops += [(f"island {r.name} (round {len(history) + 1})", r.stopped_by) for r in results]
        placement = {op: (device,) for r in results for op, device in r.placement}
        if placement in seen:
            break
        seen.append(placement)
        fixed = _global_schedule(spec, placement, global_settings)
        stops.append((f"global schedule (round {len(history) + 1})", fixed.plan.solver.get("stopped_by")))
        history.append(int(fixed.result.objective))
        if best is None or fixed.result.objective < best[1].result.objective:
            best = (results, fixed)
        arrivals = arrivals_from_plan(spec.graph, fixed.plan, island_of)
    return best[0], best[1], pool_wall, tuple(history) if rounds > 1 else ()


def solve_islands(problem: Problem, *, concurrent: bool = True, warm_start: Mapping[str, str] | None = None) -> Solved:
    """The islands strategy (module docstring): the verified-to-be plan is the global schedule of the
    islands' placement.

    ``warm_start`` (``plan solve --warm-start``: a previous placement, cut to what still applies)
    gives the split a start (:func:`_split`: the better of it and CP-SAT's split, hinted from it),
    starts each island's solve from its part, and when it places every op (and keeps every gang
    in one island, one shard per device) its own global schedule competes with the islands' (the
    global share halved between the two): the plan is never worse than that start.

    Raises
    ------
    InfeasibleError
        No split fits the islands (memory, pins), or an island's part has no schedule.
    """
    spec, settings = problem.spec, problem.settings
    portions: Portions = problem.inverse
    reserve_s = run_reserve_s(spec, settings.time_limit_s)
    split = _split(problem, _share(settings, "split", reserve_s).solve_options(num_workers=1), warm_start)
    if not split.status.has_solution:
        raise InfeasibleError(_no_split_message(spec, problem.solver_problem, split.status))
    island_of = portions.island_of_op(split.solution.island_of)
    parts = []
    for k, (name, devices) in enumerate(zip(portions.island_names, portions.island_devices)):
        ops = {op for op, i in island_of.items() if i == k}
        if ops:
            part = island_spec(spec, devices, ops)
            parts.append((name, replace(part, allowed_devices=pin_shards(part, devices))))
    rounds = ARRIVAL_ROUNDS if spec.objective == "latency" else 1
    # The islands share the run's CP-SAT workers (a function of the spec, so pool and sequence agree).
    island_settings = replace(_share(settings, "island", reserve_s, rounds),
                              workers=max(1, settings.workers // max(1, len(parts))))
    global_settings = _share(settings, "global", reserve_s, rounds)
    previous = _complete_start(spec, warm_start)
    if previous is not None:
        global_settings = replace(global_settings, time_limit_s=global_settings.time_limit_s / 2)
    stops: list[tuple[str, Any]] = [("islands split", split.stats.get("stopped_by"))]
    results, fixed, pool_wall, history = _rounds(spec, parts, island_of, rounds, island_settings, global_settings,
                                                 concurrent, warm_start, stops)
    host = {island.name: island.host_memory_bytes for island in spec.hardware.islands}
    results = tuple(replace(r, host_memory_bytes=host[r.name]) for r in results)
    if previous is not None:
        start = _global_schedule(spec, previous, global_settings)
        stops.append(("warm start's global schedule", start.plan.solver.get("stopped_by")))
        warm = {"ops_placed": len(previous), "ops": len(spec.graph.ops), "objective": int(start.result.objective)}
        if start.result.objective < fixed.result.objective:
            fixed = start
        fixed = replace(fixed, plan=replace(fixed.plan, solver={**fixed.plan.solver, "warm_start": warm}))
    elif warm_start is not None:
        covered = sum(1 for op in spec.graph.ops if op in warm_start)
        fixed = replace(fixed, plan=replace(fixed.plan, solver={**fixed.plan.solver, "warm_start": {
            "ops_placed": covered, "ops": len(spec.graph.ops), "objective": None}}))
    whole = solve_schedule(Problem(spec, _share(settings, "whole", reserve_s), *to_problem(spec)))
    big = one_island_hardware(spec.hardware)
    one_island = None
    if big is not None:
        big_spec = replace(spec, hardware=big, gangs=())
        one_island = solve_schedule(Problem(big_spec, _share(settings, "one_island", reserve_s), *to_problem(big_spec)))
    stops += [(ONE_PROBLEM, whole.plan.solver.get("stopped_by"))] + (
        [] if one_island is None else [("one island", one_island.plan.solver.get("stopped_by"))])
    details = IslandsDetails(split, portions, results, whole, pool_wall, concurrent, spec.gangs, one_island, history)
    return _with_global_bound(fixed, whole, details, settings, reserve_s, stops)


def _no_split_message(spec: Spec, split: SplitProblem, status: Status) -> str:
    """Why no split was found, in the user's names: what each portion needs, and each island's host
    memory (spec path) beside the host bytes the workload reads."""
    proven = "no split of the workload fits the islands" if status is Status.INFEASIBLE else (
        f"no split of the workload into islands was found (split solver status {status.value})")
    message = (f"{proven}: each portion (a run of one model's ops) needs an island whose devices can run all "
               "its ops (pins included), whose devices' memory holds its weights and, where host_memory is "
               "given, whose host memory holds the weights and graph inputs of every portion on it")
    limits = [(k, island) for k, island in enumerate(spec.hardware.islands) if island.host_memory_bytes is not None]
    if limits:
        needed = split.host_held((0,) * split.num_portions, 0)  # every item, once
        message += ("; the workload reads " + format_bytes(needed) + " of weights and graph inputs, and " +
                    ", ".join(f"island {island.name!r} holds {format_bytes(island.host_memory_bytes)} "
                              f"(hardware.islands[{k}].host_memory)" for k, island in limits))
    return message


@dataclass(frozen=True)
class GivenSplit(Accepting):
    """A split given up front (a warm start's: each portion where most of its ops were), as a
    solver result: FEASIBLE with its bottleneck, no bound; UNKNOWN when it is not a valid split
    (a planner-side start, as :class:`planner.scheduling.PlacementStart` is; not a registered solver).

    >>> p = SplitProblem(((3, 3), (5, 5)), (0, 0), (1, 2), (9, 9), ((0, 1, 7),), (2,))
    >>> r = GivenSplit((0, 1)).solve(p)
    >>> r.status.value, r.objective, r.solution.cross_bytes, r.solver_name
    ('FEASIBLE', 3, 7, 'warm-start')
    """

    island_of: tuple[int, ...]
    name: str = "warm-start"
    problem_type = SplitProblem

    def solve(self, problem: SplitProblem, options: SolveOptions = SolveOptions()) -> SolveResult[SplitSolution]:
        if split_errors(problem, self.island_of):
            return failure_result(Status.UNKNOWN, self.name, 0.0)
        value, cross, network = split_loads(problem, self.island_of)
        return SolveResult(Status.FEASIBLE, value, None, SplitSolution(self.island_of, value, cross, network),
                           0.0, self.name, {"stopped_by": "finished"})


def _split(problem: Problem, options: Any, warm_start: Mapping[str, str] | None) -> SolveResult:
    """The split by CP-SAT; with a warm start, a portfolio of the start's split (each portion on the
    island most of its previously placed ops were on) and CP-SAT hinted from it: the better wins."""
    start = None if warm_start is None else _start_split(problem.spec, problem.inverse, warm_start)
    if start is None:
        return CpSatSplitSolver().solve(problem.solver_problem, options)
    return Portfolio(GivenSplit(start), CpSatSplitSolver()).solve(problem.solver_problem, options)


def _start_split(spec: Spec, portions: Portions, warm_start: Mapping[str, str]) -> tuple[int, ...] | None:
    """Each portion's island under a previous placement: the island holding most of its placed ops
    (the first such island on a tie); None when a portion has no placed op."""
    island_index = {d: k for k, devices in enumerate(portions.island_devices) for d in devices}
    start = []
    for ops in portions.ops_of:
        votes = Counter(island_index[warm_start[op]] for op in ops if warm_start.get(op) in island_index)
        if not votes:
            return None
        start.append(min(votes, key=lambda k: (-votes[k], k)))
    return tuple(start)


def _global_schedule(spec: Spec, placement: Mapping[str, Any], settings: RunSettings) -> Solved:
    """The whole graph scheduled with every op on its device (``{op: device}`` or ``{op: (device,)}``),
    the network included, then every gang started on one cycle."""
    pins = {op: (d,) if isinstance(d, str) else tuple(d) for op, d in placement.items()}
    fixed_spec = replace(spec, allowed_devices=pins)
    return align_gangs(solve_schedule(Problem(fixed_spec, settings, *to_problem(fixed_spec))), spec)


def _complete_start(spec: Spec, warm_start: Mapping[str, str] | None) -> dict[str, str] | None:
    """The previous placement when it places every op and keeps each gang in one island, one shard
    per device (a placement the global schedule can take as it is); else None."""
    if warm_start is None or any(op not in warm_start for op in spec.graph.ops):
        return None
    island_of = {d: island.name for island in spec.hardware.islands for d in island.devices}
    for gang in spec.gangs:
        devices = [warm_start[op] for op in gang]
        if len({island_of[d] for d in devices}) > 1 or len(set(devices)) < len(devices):
            return None
    return {op: warm_start[op] for op in spec.graph.ops}


def _with_global_bound(fixed: Solved, whole: Solved, details: IslandsDetails, settings: RunSettings,
                       reserve_s: float, stops: list[tuple[str, Any]] = ()) -> Solved:
    """The global schedule with the one-problem bound (sound for the global problem) as its bound,
    and the run's own time limit and workers (each stage had its share) in its solver record, which
    says when a clock stopped any of the route's solves (``stops``, each solve's (name, ``stopped_by``):
    :func:`~planner.clock_stops.with_clock_stops`; each of them steered the plan or a figure of
    plan.json)."""
    bound = whole.result.bound
    if bound is not None and fixed.result.bound is not None:
        bound = min(bound, fixed.result.objective)  # never above the plan itself
    status = Status.OPTIMAL if bound is not None and bound >= fixed.result.objective else Status.FEASIBLE
    result = replace(fixed.result, status=status, bound=bound,
                     stats={**fixed.result.stats, "lower_bound": whole.result.stats.get("lower_bound")})
    plan = fixed.plan
    # The verifier checks every baseline row beyond the heuristic against solver.baselines.
    heuristic = _whole(fixed.heuristic.objective) if fixed.heuristic.status.has_solution else None
    baselines = {fixed.heuristic.solver_name: heuristic, ONE_PROBLEM: whole.plan.objective}
    starts = {o.name: o.start_cycle for o in plan.ops}
    gangs = [{"ops": list(g), "start_cycle": starts[g[0]]} for g in details.gangs]
    solver = {**plan.solver, "time_limit_s": settings.time_limit_s, "workers": settings.workers,
              "post_solve_reserve_s": reserve_s, "baselines": baselines,
              "islands": {**details.to_dict(), "gangs": gangs}}
    plan = replace(plan, status=status.value, bound=_whole(bound), gap=result.gap,
                   solver=with_clock_stops(solver, stops))
    return replace(fixed, plan=plan, result=result, details=details, post_solve_reserve_s=reserve_s)


def islands_outcome(outcome: Outcome, solved: Solved) -> Outcome:
    """The outcome with the one-problem comparison as a baseline row (report.md's islands section is drawn
    from ``solver.islands``: :func:`planner.report.sections.islands_section`).

    Each gang's start cycle is read off the final plan (memory planning re-times the schedule:
    a split shard starts with its first instance), recorded in ``solver.islands.gangs`` and
    checked against the replayed binaries.
    """
    details: IslandsDetails = solved.details
    gangs = replayed_gang_record(outcome.plan, outcome.simulation.ops, details.gangs)
    islands = outcome.plan.solver["islands"]
    if gangs != islands.get("gangs", []):  # re-timed by memory planning
        outcome = replace(outcome, plan=replace(outcome.plan, solver={**outcome.plan.solver,
                                                                      "islands": {**islands, "gangs": gangs}}))
    whole = details.whole.plan
    row = {"solver": ONE_PROBLEM, "status": whole.status, "objective": whole.objective,
           "bound": whole.bound}
    return replace(outcome, extra_baselines=(*outcome.extra_baselines, row))
