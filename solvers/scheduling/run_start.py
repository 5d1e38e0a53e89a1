"""A start candidate from the segment-run bound: the placement its DP chose, sequenced.

Notes
-----
The segment-run bound (:mod:`~solvers.scheduling.segment_runs`) is a DP over the cut ops of a
memory-forced LATENCY problem: it splits them into *runs* on one device each, keeps or sends
away each run's interior ops within the device's memory, and prices each change of device.
Its minimum is a lower bound, and the choices that attain it
(:func:`~solvers.scheduling.segment_runs.segment_run_trace`) are a placement that is cheap
in exactly the terms the bound counts. On the dnn-partitioning ResNet-50 layer graph, where
the placement LNS stalls on a contiguous split's device changes, such a placement is a start
from another basin. This module turns the DP's runs into placements and sequences them:

1. **Traces.** Up to three runs of the DP, each a variant the bound stage uses: every cut op
   (with the segments' static floors), the clean cut ops only, and the clean ones with every
   device change priced by the pinned moves proved so far (the scheduler's memo of
   :mod:`~solvers.scheduling.pinned_moves`; the variant that gives the bound its value).
2. **Placements** (:func:`run_placement`). Each run takes a device of its pool, a fresh one
   while the pool has one (the DP checks each run's memory on its own device), else the
   least recently used one that is not the previous run's. A run's cut ops and the interior
   ops its options keep go there; the interior ops an option sends away go to one device
   that no run uses (the DP only knows they leave). The ops before the first cut op go with
   the first run, those after the last with the last run. Between two runs the interior
   ops go to the side where the segment's sink ends first, durations and transfers counted
   without contention (``side="cheap"``), or all to the earlier or to the later run (``"early"``, ``"late"``), each a placement of its own.
   Colocation groups follow their first op in topological order; an op that cannot run on
   its device goes to its predecessor's, or its fastest. Where the DP's rounding (its weights
   are rounded down) or the ops between runs overflow a device, its last ops move to the next
   device in the order that has room; a placement whose weights still do not fit is dropped.
   Weights are counted with a :class:`~solvers.scheduling.resident.ResidentLedger` (a weight
   or input several ops read once per device, as lowering allocates it).
3. **Sequencing.** HEFT with the placement fixed, by the placement's own upward ranks
   (:class:`~solvers.scheduling.heft.PlacedRanks`), checked by
   :func:`~solvers.scheduling.validate.validate_schedule`; the shortest schedule is the
   candidate. The caller keeps it only when it beats its incumbent.

The segments are cut from the bound's problem (zero-duration weight sources and sinks pruned,
maybe cut down to the main span: :func:`pruned_ops`); an op it dropped goes with its colocation
group, else its first placed successor, else its first placed predecessor.

**Budget.** Counted, never timed: each DP run is charged per middle segment as the pinned
moves charge theirs, each HEFT pass as the placement LNS charges one, each floor (the static
bound of a segment, with the LP above 8 ops) per op and edge of its segment.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from solvers.budget import BOUND_ELEMENTS_PER_UNIT, Budget, build_units
from solvers.scheduling.bounds import bound_segments, segment_floor
from solvers.scheduling.forced import colocation_closure
from solvers.scheduling.heft import PlacedRanks, heft_schedule_within
from solvers.scheduling.path_bounds import DevicePools
from solvers.scheduling.pinned_moves import move_floor_tables, move_proof_key, pinned_moves
from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.resident import ResidentLedger
from solvers.scheduling.segment_runs import SegmentRun, segment_run_trace
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "SIDES", "pruned_ops", "run_placement", "run_start"]

SOURCE = "segment runs"  # the hint source the scheduler reports for this candidate

# A run of the segment-run DP, per middle segment: as solvers.scheduling.pinned_moves charges
# one (1.5 ms of CPU per segment on the dnn layer graphs, at the scheduling family's 0.07 units
# per second).
_DP_UNITS_PER_SEGMENT = 0.07 * 0.0015

SIDES = ("cheap", "early", "late")
"""Where the interior ops between two runs go (module Notes, Placements)."""


def _run_devices(pools: DevicePools, runs: Sequence[SegmentRun]) -> list[int]:
    """A device per run (module Notes): a fresh one of its pool while there is one, else the
    least recently used one other than the previous run's."""
    last_used: dict[int, int] = {}
    out: list[int] = []
    for k, run in enumerate(runs):
        members = pools.pools[run.pool]
        fresh = [d for d in members if d not in last_used]
        if fresh:
            d = fresh[0]
        else:
            prev = out[-1] if out else None
            d = min((d for d in members if d != prev), key=lambda d: (last_used[d], d), default=members[0])
        last_used[d] = k
        out.append(d)
    return out


def _segment_path(problem: SchedulingProblem, ops: tuple[int, ...], device: dict[int, int]) -> int:
    """The longest path through a segment (``ops`` in topological order, its source first, at 0)
    to its sink, each op lasting its duration on ``device[op]`` and each edge that changes
    device its transfer; no contention (a proxy for where the interior ops between runs go)."""
    inside = set(ops)
    preds: dict[int, list[tuple[int, int]]] = {i: [] for i in ops}
    for e, (u, v, _) in enumerate(problem.edges):
        if u in inside and v in inside:
            a, b = device[u], device[v]
            row = problem.transfer_cycles[e]
            preds[v].append((u, row[problem.link_of[a][b]] if a != b and row and problem.link_of[a][b] >= 0 else 0))
    end = {ops[0]: 0}
    for i in ops[1:]:
        end[i] = max((end[u] + c for u, c in preds[i]), default=0) + max(problem.durations_cycles[i][device[i]], 0)
    return end[ops[-1]]


def run_placement(problem: SchedulingProblem, segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]],
                  runs: Sequence[SegmentRun], side: str = "cheap") -> tuple[int, ...] | None:
    """The placement of module Notes (Placements) for ``runs`` over ``segments`` (the
    :func:`~solvers.scheduling.bounds.segment_problems` the DP ran on, head first, whose ops are
    ``problem``'s); None when its weights do not fit.

    Examples
    --------
    A chain a -> b -> c of 5-byte ops on two 10-byte devices; runs {a, b} and {c}:

    >>> from solvers.scheduling.bounds import segment_problems
    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((7,), (7,)), device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    >>> segs = segment_problems(p)
    >>> run_placement(p, segs, [SegmentRun(0, 0, 1, ((),)), SegmentRun(0, 2, 2, ())])
    (0, 0, 1)
    """
    if side not in SIDES:
        raise ValueError(f"side: one of {SIDES}, not {side!r}")
    pools = DevicePools(problem)
    devices = _run_devices(pools, runs)
    run_of_cut = {j: k for k, run in enumerate(runs) for j in range(run.first, run.last + 1)}
    device: list[int] = [devices[-1]] * problem.num_ops  # the tail goes with the last run
    held = ResidentLedger(problem, device)  # a shared weight or input once per device
    spare = _Spare(problem, pools, set(devices), held)
    middles = [ops for _, ops in segments[1:runs[-1].last + 1]]  # between cut ops j and j + 1

    def put(i: int, d: int) -> None:
        held.remove((i,), device[i])
        device[i] = d
        held.add((i,), d)

    for i in segments[0][1]:
        put(i, devices[0])
    boundaries = []
    for j, ops in enumerate(middles):
        a, b = run_of_cut[j], run_of_cut[j + 1]
        put(ops[-1], devices[b])
        if a != b:
            boundaries.append((ops, devices[a], devices[b]))
            continue
        kept = runs[a].kept[j - runs[a].first]
        sent = [i for i, keep in zip(ops[1:-1], kept) if not keep]
        for i in ops[1:-1]:
            put(i, devices[a])
        away = spare.device(sent)
        for i in sent if away is not None else ():
            put(i, away)
    # between runs: the preferred side when its memory holds the interior, else the other, else a spare
    for ops, a, b in boundaries:
        inner = ops[1:-1]
        first = _boundary_side(problem, ops, a, b, side)
        sides = (first, b if first == a else a)
        whole = next((d for d in sides if _room(problem, held, d) >= held.added(inner, d)), None)
        whole = spare.device(inner) if whole is None else whole
        for i in inner:  # none holds it all: op by op, on the first with room
            d = whole if whole is not None else next(
                (d for d in sides if _room(problem, held, d) >= held.added((i,), d)), None)
            d = d if d is not None else spare.device((i,))
            if d is not None:
                put(i, d)
    return _repaired(problem, device)


def _room(problem: SchedulingProblem, held: ResidentLedger, d: int) -> float:
    cap = problem.memory_bytes(d)
    return cap - held.held[d] if cap else float("inf")


class _Spare:
    """Devices no run uses, for ops that leave the runs' devices: among those that hold their
    weight, the one that runs them fastest, then the one with the most room, then by index."""

    def __init__(self, problem: SchedulingProblem, pools: DevicePools, used: set[int], held: ResidentLedger) -> None:
        self.problem, self.held = problem, held
        self.free = [d for pool in pools.pools for d in pool if d not in used]

    def device(self, ops: Sequence[int]) -> int | None:
        problem = self.problem
        fits = [d for d in self.free if _room(problem, self.held, d) >= self.held.added(ops, d)
                and all(problem.durations_cycles[i][d] >= 0 for i in ops)]
        return min(fits, key=lambda d: (sum(problem.durations_cycles[i][d] for i in ops),
                                        -_room(problem, self.held, d), d), default=None)


def _boundary_side(problem: SchedulingProblem, ops: tuple[int, ...], a: int, b: int, side: str) -> int:
    """The device of the interior ops between two runs (``a`` the earlier run's, ``b`` the later's)."""
    if side == "early":
        return a
    if side == "late":
        return b
    def path(d: int) -> int:  # the interior on d: the sink's end after the source's
        return _segment_path(problem, ops, {**{i: d for i in ops}, ops[0]: a, ops[-1]: b})

    return a if path(a) <= path(b) else b


def _repaired(problem: SchedulingProblem, device: list[int]) -> tuple[int, ...] | None:
    """``device`` with colocation groups on their first op's device and every op on a device it
    can run on (its predecessor's, else its fastest); None when some device's weights overflow."""
    order = topological_order(problem)
    closure = colocation_closure(problem)
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        preds[v].append(u)
    done: set[int] = set()
    for i in order:
        if i in done:
            continue
        group = closure[i]
        d = device[i]
        if any(problem.durations_cycles[j][d] < 0 for j in group):
            d = next((device[u] for u in preds[i] if all(problem.durations_cycles[j][device[u]] >= 0 for j in group)),
                     None)
            if d is None:
                allowed = [k for k in range(problem.num_devices)
                           if all(problem.durations_cycles[j][k] >= 0 for j in group)]
                if not allowed:
                    return None
                d = min(allowed, key=lambda k: (problem.durations_cycles[i][k], k))
        for j in group:
            device[j] = d
            done.add(j)
    held = ResidentLedger(problem, device)
    for d in range(problem.num_devices):
        if _room(problem, held, d) < 0:
            _relieve(problem, device, held, d, order, closure)
    if any(_room(problem, held, d) < 0 for d in range(problem.num_devices)):
        return None
    return tuple(device)


def _relieve(problem: SchedulingProblem, device: list[int], held: ResidentLedger, d: int, order: Sequence[int],
             closure: Sequence[tuple[int, ...]]) -> None:
    """Move ops off the overflowing device ``d`` (the DP rounds weights down, and counts no
    weight between runs): from its last op in the order back, each to the device of the next
    op in the order that is elsewhere, runs it and has room, until ``d`` holds its weights."""
    pos = {op: k for k, op in enumerate(order)}
    for i in sorted((i for i in range(problem.num_ops) if device[i] == d), key=lambda i: -pos[i]):
        if _room(problem, held, d) >= 0:
            return
        group = closure[i]
        if device[i] != d:  # moved with an earlier member of its colocation group
            continue
        after = (device[j] for j in order[pos[i] + 1:] if device[j] != d)
        to = next((e for e in after if _room(problem, held, e) >= held.added(group, e)
                   and all(problem.durations_cycles[j][e] >= 0 for j in group)), None)
        if to is None:
            continue
        for j in group:
            device[j] = to
        held.remove(group, d)
        held.add(group, to)


def pruned_ops(problem: SchedulingProblem) -> tuple[SchedulingProblem, list[int]]:
    """The problem the bound's segments are cut from (:func:`~solvers.scheduling.bounds.bound_segments`)
    and, for each of its ops, the op of ``problem`` it is.

    Examples
    --------
    A zero-duration weight source w feeds c of a -> b -> c; the segments see a, b, c:

    >>> p = SchedulingProblem(((1,), (1,), (1,), (0,)), ((0, 1, 0), (1, 2, 0), (3, 2, 0)), (1,),
    ...                       ((-1,),), ((),) * 3, op_resident_bytes=(0, 0, 1, 6))
    >>> pruned, ops = pruned_ops(p)
    >>> pruned.num_ops, ops
    (3, [0, 1, 2])
    """
    # the bound's pruning keeps each op's name: with the indices as names, they map it back
    named = replace(problem, op_names=tuple(str(i) for i in range(problem.num_ops)))
    pruned, _ = bound_segments(named)
    return pruned, [int(pruned.op_name(k)) for k in range(pruned.num_ops)]


def _lifted(problem: SchedulingProblem, ops: Sequence[int], placement: Sequence[int]) -> list[int]:
    """A placement of ``problem`` from ``placement`` of the pruned problem (``ops``: each of its
    ops in ``problem``): a dropped op goes with its colocation group, else its first placed
    successor (weight sources feed their layer), else its first placed predecessor."""
    device: list[int | None] = [None] * problem.num_ops
    for k, i in enumerate(ops):
        device[i] = placement[k]
    for group in colocation_closure(problem):
        home = next((device[j] for j in group if device[j] is not None), None)
        for j in group:
            device[j] = home if device[j] is None else device[j]
    succs: list[list[int]] = [[] for _ in range(problem.num_ops)]
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        succs[u].append(v)
        preds[v].append(u)
    order = topological_order(problem)
    for i in reversed(order):
        if device[i] is None:
            device[i] = next((device[v] for v in succs[i] if device[v] is not None), None)
    for i in order:
        if device[i] is None:
            device[i] = next((device[u] for u in preds[i] if device[u] is not None), placement[0])
    return [int(d) for d in device]


def _traces(problem: SchedulingProblem, budget: Budget, memo: dict | None) -> list[tuple[str, list, list]]:
    """The DP's runs for each variant of module Notes (Traces): (name, segments, runs), the
    segments' ops those of :func:`pruned_ops`'s problem."""
    pruned, segs = bound_segments(problem)
    out = []
    budget.charge(budget.scale(_floor_units(segs)))
    floors = [segment_floor(sub) for sub, _ in segs]
    traced = segment_run_trace(pruned, segs, floors)
    budget.charge(budget.scale(_dp_units(segs)))
    if traced is not None:
        out.append(("cut ops", segs, traced[1]))
    moves = pinned_moves(problem)
    if moves is None:
        return out
    budget.charge(budget.scale(_floor_units(moves.segments)))
    tables: list = [None]
    if memo:
        proven = [memo.get(move_proof_key(pinned), (0.0, False))[0] for _, _, pinned in moves.jobs]
        tables.append(move_floor_tables(moves, proven))
    for name, table in zip(("clean cut ops", "pinned moves"), tables):
        traced = segment_run_trace(moves.pruned, moves.segments, moves.floors, moves.cuts, move_floors=table)
        budget.charge(budget.scale(_dp_units(moves.segments)))
        if traced is not None:
            out.append((name, moves.segments, traced[1]))
    return out


def _dp_units(segments: Sequence) -> float:
    """A traced DP run: twice what the pinned moves charge an untraced one (it records and walks back)."""
    return 2 * _DP_UNITS_PER_SEGMENT * len(segments)


def _floor_units(segments: Sequence) -> float:
    """The segments' static floors: their ops and edges, at the bound stages' rate."""
    return build_units(sum(sub.num_ops + len(sub.edges) for sub, _ in segments), BOUND_ELEMENTS_PER_UNIT)


def _pass_units(problem: SchedulingProblem) -> float:
    return build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)


def run_start(problem: SchedulingProblem, budget: Budget,
              memo: dict | None = None) -> tuple[SchedulingSolution | None, dict[str, Any]]:
    """The shortest valid schedule of the DP's placements (module Notes), and statistics;
    ``(None, {})`` for THROUGHPUT. ``memo``: the pinned moves' proofs (the scheduler's).

    Examples
    --------
    Ops a(2) -> b(2) -> c(2) of 5 weight bytes each on two 11-byte devices, a -> b cheap to
    send (1), b -> c dear (9). HEFT keeps a and b together and sends b's output (15); the DP
    changes device at b, after the cheap edge (2 + 1 + 2 + 2 = 7):

    >>> from solvers.budget import SCHEDULING
    >>> from solvers.scheduling.heft import heft_schedule
    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((1,), (9,)), device_memory_bytes=(11, 11), op_resident_bytes=(5, 5, 5))
    >>> sol, stats = run_start(p, Budget.start(1, SCHEDULING))
    >>> heft_schedule(p).makespan_cycles, sol.op_device, sol.makespan_cycles, stats["run_start_best"]
    (15, (0, 1, 1), 7, 'cut ops, cheap')
    """
    if problem.objective is not Objective.LATENCY:
        return None, {}
    used = budget.used
    traces = _traces(problem, budget, memo)
    pruned, ops = pruned_ops(problem) if traces else (problem, [])
    ranks = PlacedRanks(problem)
    tried: dict[tuple[int, ...], str] = {}
    for name, segs, runs in traces:
        for side in SIDES:
            placement = run_placement(pruned, segs, runs, side)
            if placement is not None:
                placement = _repaired(problem, _lifted(problem, ops, placement))
            if placement is not None and placement not in tried:
                tried[placement] = f"{name}, {side}"
    best, best_name, values = None, None, {}
    for placement, name in tried.items():
        if budget.left < budget.scale(_pass_units(problem)) or budget.wall_expired():
            break
        sol, _ = heft_schedule_within(problem, placement, ranks(placement))
        budget.charge(budget.scale(_pass_units(problem)))
        if sol is None or validate_schedule(problem, sol):
            continue
        values[name] = objective_value(problem, sol)
        if best is None or values[name] < objective_value(problem, best):
            best, best_name = sol, name
    stats = {"run_start_traces": [name for name, _, _ in traces], "run_start_sequenced": values,
             "run_start_objective": objective_value(problem, best) if best is not None else None,
             "run_start_best": best_name, "run_start_units": round(budget.used - used, 6)}
    return best, stats
