"""Pinned moves: what a memory-forced device change at a clean cut op costs with link and
stream contention (LATENCY with memory limits).

Notes
-----
The clean segment runs (:mod:`~solvers.scheduling.segment_runs` over
:func:`~solvers.scheduling.structure.clean_cut_vertices`) charge a device change between two
consecutive clean cut ops ``c_j`` (on a) and ``c_(j+1)`` (on b != a) the pooled earliest
finish of ``c_(j+1)`` after ``c_j``: the longest path of the segment with a transfer where it
leaves a, without contention. ResNet's projection blocks are where that is optimistic: the
block input feeds the main path and the shortcut, both cross to the next device, and both
transfers take the one link a -> b in turn (or one of them takes a detour through a third
device and pays a second transfer). On the ResNet-50 layer graph the first projection block
costs 99.2 ms with contention where the path sees 60.0.

A *pinned move* is the segment's own scheduling problem (its ops and edges, no memory:
:func:`~solvers.scheduling.bounds.segment_problems`) with ``c_j`` fixed on a as a
zero-duration source and ``c_(j+1)`` fixed on b (:func:`pinned_move_problem`). Restrict any
schedule of the whole problem with ``c_j`` on a and ``c_(j+1)`` on b to the segment's ops,
shifted by ``end(c_j)``: every interior op descends from ``c_j`` and precedes ``c_(j+1)``,
transfers of the segment's edges keep their links (one at a time), streams keep their ops,
and dropping the other ops, edges and memory only removes constraints. So it is a schedule
of the pinned problem of makespan ``end(c_(j+1)) - end(c_j)``, and any proven bound on the
pinned problem's optimum bounds that step. Taken over every pair (a, b) of two pools (the
minimum: the segment-run DP's move table is per pool pair; interchangeable devices of one
``device_class`` need one representative pair), it is a floor for the DP's move
(``segment_run_bound(..., move_floors=...)``), which stays a relaxation otherwise.

**The three-role relaxation** (:func:`role_model`). CP-SAT proves little on the pinned problem
itself (a dozen ops over 22 devices and 231 links: on the first ResNet-50 block it found the
99.3-ms schedule but proved nothing above the path's 93.9 in 7 s). What creates the contention
is the two pinned devices and the links between them, so the model keeps exactly those and
merges every other device into one role E: each op is on a, on b, or on E; a and b keep their
streams; a transfer between a and b takes its link (``link_of[a][b]``, one at a time with
every other transfer on that link id, ``link_of[b][a]`` included when it is the same link);
a transfer between a or b and E takes the least time over the links from or to the devices
of E the op may use, and occupies nothing; ops on E run in parallel and their edges cost
nothing. Every schedule of the pinned problem maps to a solution of it with the same
makespan or less (each op on another device goes to E with its duration there or less;
each of its transfers costs the least of its kind or more; E drops every exclusivity), so
the model's proven optimum bounds the pinned problem's, hence the step. Colocation groups
share a role.

Only segments where contention can exist are worth a proof: a segment whose ops form one
chain (every op at most one edge in and one out) runs its transfers one after the other
whatever the placement, and its pinned optimum is the path's (:func:`contended_segments`).
Each distinct (segment, a, b) is proved at most once by CP-SAT within the stage's
deterministic budget (:func:`pinned_move_bound`); CP-SAT's proven bound is used, or
nothing where it proved nothing.

**Which moves to prove.** Only those the DP takes: the DP is traced back
(:func:`~solvers.scheduling.segment_runs.segment_run_trace`) and the unproven moves at its
run boundaries are proved, again until its path takes only proven ones. The path's value
then does not change when another move is proved, and proving raises every other path's
value or leaves it, so the DP's value is the one with every move proved
(``tests/solvers/test_pinned_moves.py`` checks exactly that). Inception-V3: 11 of its 48
moves, 0.75 units instead of 3.1, for the same 857.20 ms.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import product
from typing import Any, Sequence

import numpy as np
from ortools.sat.python import cp_model

from solvers.budget import Budget
from solvers.core import SolveOptions, Status
from solvers.scheduling.bounds import bound_segments, segment_floor, segment_problems
from solvers.scheduling.forced_cuts import memory_forces_cuts
from solvers.scheduling.move_weights import move_weight_options, weight_cell_keys, weight_jobs
from solvers.scheduling.path_bounds import DevicePools
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.segment_runs import segment_run_bound, segment_run_trace
from solvers.scheduling.structure import clean_cut_vertices, segment_ranges
from solvers.cpsat_support import integer_objective_bound

__all__ = ["PinnedMoves", "WEIGHT_CELLS", "pinned_moves", "pinned_move_problem", "contended_segments", "pool_pairs",
           "move_floor_tables", "role_model", "pinned_move_bound", "move_proof_key"]


def pinned_move_problem(sub: SchedulingProblem, source_device: int, sink_device: int) -> SchedulingProblem | None:
    """The segment ``sub`` (source first, sink last) with its source fixed on ``source_device``
    (taking no time) and its sink on ``sink_device``; None when either cannot run there.

    Examples
    --------
    >>> sub = SchedulingProblem(((0, 0), (2, 3), (1, 1)), ((0, 1, 8), (1, 2, 8)), (1, 1),
    ...                         ((-1, 0), (0, -1)), ((5,), (5,)))
    >>> pinned_move_problem(sub, 0, 1).durations_cycles
    ((0, -1), (2, 3), (-1, 1))
    """
    n = sub.num_ops
    rows = list(sub.durations_cycles)
    if rows[0][source_device] < 0 or rows[n - 1][sink_device] < 0:
        return None
    rows[0] = tuple(0 if d == source_device else -1 for d in range(sub.num_devices))
    rows[n - 1] = tuple(x if d == sink_device else -1 for d, x in enumerate(rows[n - 1]))
    return SchedulingProblem(tuple(rows), sub.edges, sub.device_streams, sub.link_of, sub.transfer_cycles,
                             Objective.LATENCY, colocation_groups=sub.colocation_groups,
                             device_class=sub.device_class)


def contended_segments(segments: Sequence[tuple[SchedulingProblem, tuple[int, ...]]]) -> list[bool]:
    """Per segment, whether two of its transfers or ops can compete for a link or a stream:
    some op has two edges in or two out within the segment (a chain cannot: its transfers and
    ops follow one another on every placement).

    Examples
    --------
    >>> chain = SchedulingProblem(((1,),) * 3, ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((),) * 2)
    >>> fork = SchedulingProblem(((1,),) * 3, ((0, 1, 0), (0, 2, 0)), (1,), ((-1,),), ((),) * 2)
    >>> contended_segments([(chain, (0, 1, 2)), (fork, (0, 1, 2))])
    [False, True]
    """
    flags = []
    for sub, _ in segments:
        outs = np.bincount([u for u, _, _ in sub.edges], minlength=sub.num_ops) if sub.edges else np.zeros(1)
        ins = np.bincount([v for _, v, _ in sub.edges], minlength=sub.num_ops) if sub.edges else np.zeros(1)
        flags.append(bool(outs.max() > 1 or ins.max() > 1))
    return flags


def pool_pairs(problem: SchedulingProblem, pools: DevicePools) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Per pair of pools (ka, kb), the device pairs (a, b), a != b, whose pinned moves bound
    the pair's move: one representative per orbit of interchangeable devices (equal
    ``device_class`` within the pool), every pair otherwise.

    Examples
    --------
    >>> links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    >>> p = SchedulingProblem(((1, 1, 3),), (), (1, 1, 1), links, (), device_class=(0, 0, 1))
    >>> pool_pairs(p, DevicePools(p))
    {(0, 0): [(0, 1)], (0, 1): [(0, 2)], (1, 0): [(2, 0)]}
    """
    classes = problem.device_class
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for ka, kb in product(range(pools.size), repeat=2):
        pa, pb = pools.pools[ka], pools.pools[kb]
        symmetric = bool(classes) and len({classes[d] for d in pa}) == 1 and len({classes[d] for d in pb}) == 1
        if symmetric:
            a = pa[0]
            b = next((d for d in pb if d != a), None)
            pairs = [] if b is None else [(a, b)]
        else:
            pairs = [(a, b) for a in pa for b in pb if a != b]
        if pairs:
            out[(ka, kb)] = pairs
    return out


class PinnedMoves:
    """The clean segments of a problem whose weights need several devices, and the pinned
    move problems worth proving (module Notes).

    Attributes
    ----------
    pruned, cuts, segments, floors
        The problem the segment bounds work on, its clean cut ops, their segments and each
        segment's static floor (the inputs of ``segment_run_bound``).
    jobs : list of (middle index, (ka, kb), pinned problem)
        Middle segments (a cut op at both ends, numbered as ``segment_run_bound`` counts them)
        that can be contended, with each device pair of each pool pair; one job per distinct
        pinned problem is proved, the others reuse it (``job_keys``).
    """

    def __init__(self, pruned: SchedulingProblem, cuts: tuple[int, ...],
                 segments: list[tuple[SchedulingProblem, tuple[int, ...]]], floors: list[int]) -> None:
        self.pruned, self.cuts, self.segments, self.floors = pruned, cuts, segments, floors
        self.pools = DevicePools(pruned)
        ranges = segment_ranges(pruned, cuts)
        middles = [k for k, (_, _, source, sink) in enumerate(ranges) if source is not None and sink is not None]
        self.num_middles = len(middles)
        contended = contended_segments(segments)
        pairs = pool_pairs(pruned, self.pools)
        self.jobs: list[tuple[int, tuple[int, int], SchedulingProblem]] = []
        for j, k in enumerate(middles):
            if not contended[k]:
                continue
            sub = segments[k][0]
            for pair, devices in pairs.items():
                for a, b in devices:
                    pinned = pinned_move_problem(sub, a, b)
                    if pinned is not None:
                        self.jobs.append((j, pair, pinned))


def pinned_moves(problem: SchedulingProblem) -> PinnedMoves | None:
    """The :class:`PinnedMoves` of ``problem``, or None when no memory-forced device change has
    a contended clean segment to prove (THROUGHPUT, weights that fit one device, no cut op an
    edge jumps, or only chains).

    Examples
    --------
    A fork-join ``c0 -> {x, y} -> c1`` whose cut ops cannot share a device, on two
    interchangeable devices:

    >>> p = SchedulingProblem(((1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,),) * 4, device_memory_bytes=(6, 6),
    ...                       op_resident_bytes=(4, 1, 1, 4), device_class=(0, 0))
    >>> moves = pinned_moves(p)
    >>> moves.cuts, [(j, pair) for j, pair, _ in moves.jobs]
    ((0, 3), [(0, (0, 0))])
    """
    if problem.objective is not Objective.LATENCY or not memory_forces_cuts(problem):
        return None
    pruned, _ = bound_segments(problem)
    cuts = clean_cut_vertices(pruned)
    if len(cuts) < 2:
        return None
    segments = segment_problems(pruned, cuts)
    floors = [segment_floor(sub) for sub, _ in segments]
    moves = PinnedMoves(pruned, cuts, segments, floors)
    return moves if moves.jobs else None


def move_floor_tables(moves: PinnedMoves, proven: Sequence[float]) -> list[np.ndarray | None]:
    """Per middle segment, the pools x pools table of proven move floors (``proven[i]`` is the
    bound for ``moves.jobs[i]``, 0 when unproven, ``inf`` when the pinned problem is
    infeasible): the minimum over each pool pair's device pairs, and 0 where a pair has an
    unproved job or none (``segment_run_bound`` takes the larger of it and its own move).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,),) * 4, device_memory_bytes=(6, 6),
    ...                       op_resident_bytes=(4, 1, 1, 4), device_class=(0, 0))
    >>> move_floor_tables(pinned_moves(p), [11])[0].tolist()
    [[11.0]]
    """
    size = moves.pools.size
    lowest: dict[tuple[int, tuple[int, int]], float] = {}
    for (j, pair, _), value in zip(moves.jobs, proven):
        key = (j, pair)
        lowest[key] = min(lowest.get(key, np.inf), float(value))
    tables: list[np.ndarray | None] = [None] * moves.num_middles
    for (j, (ka, kb)), value in lowest.items():
        if tables[j] is None:
            tables[j] = np.zeros((size, size))
        tables[j][ka, kb] = value
    return tables



_A, _B, _E = 0, 1, 2  # the roles: the source's device, the sink's, every other one


class _RoleModel:
    """The CP-SAT model of :func:`role_model`, its makespan variable and each op's role
    literals (``role[i][k]``, None where op i cannot take role k)."""

    def __init__(self, model: cp_model.CpModel, makespan: cp_model.IntVar, role: list) -> None:
        self.model, self.makespan, self.role = model, makespan, role


def _role_durations(pinned: SchedulingProblem, a: int, b: int) -> list[list[int | None]]:
    """Per op, its duration on a, on b and the least on any other device (None: not allowed)."""
    rows = []
    for row in pinned.durations_cycles:
        others = [x for d, x in enumerate(row) if d not in (a, b) and x >= 0]
        rows.append([row[a] if row[a] >= 0 else None, row[b] if row[b] >= 0 else None,
                     min(others) if others else None])
    return rows


def _gap(pinned: SchedulingProblem, e: int, r: int, q: int, a: int, b: int) -> int | None:
    """The least transfer of edge e from role r to role q when one of them is E (None: no link
    to any device of E the op there may use); 0 within a role."""
    if r == q:
        return 0
    u, v, _ = pinned.edges[e]
    pinned_device = {_A: a, _B: b}
    if r == _E:
        fixed, op, out = pinned_device[q], u, False
    else:
        fixed, op, out = pinned_device[r], v, True
    costs = [pinned.transfer_cycles[e][link]
             for d, x in enumerate(pinned.durations_cycles[op]) if d not in (a, b) and x >= 0
             for link in [pinned.link_of[fixed][d] if out else pinned.link_of[d][fixed]] if link >= 0]
    return min(costs) if costs else None


def role_model(pinned: SchedulingProblem) -> _RoleModel | None:
    """The three-role relaxation of a pinned move problem (module Notes): source first, fixed
    on a; sink last, fixed on b; minimise the sink's end. None when the model has no solution
    by construction (the sink has no device; caught by CP-SAT otherwise).

    Examples
    --------
    A source on device 0 feeding two ops joined by the sink on device 1; one link each way,
    transfers of 5, ops of 1: both fork edges (or a fork edge and a join edge) cross the one
    link 0 -> 1 in turn, whatever the placement, so 5 + 5 + 1 = 11 at least.

    >>> links = ((-1, 0, 2), (1, -1, 3), (4, 5, -1))
    >>> pinned = SchedulingProblem(((0, -1, -1), (1, 1, 1), (1, 1, 1), (-1, 1, -1)),
    ...                            ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1), links,
    ...                            ((5,) * 6, (5,) * 6, (5,) * 6, (5,) * 6))
    >>> built = role_model(pinned)
    >>> solver = cp_model.CpSolver(); solver.solve(built.model) == cp_model.OPTIMAL
    True
    >>> solver.value(built.makespan)
    11
    """
    n = pinned.num_ops
    a = pinned.allowed_devices(0)[0]
    b = pinned.allowed_devices(n - 1)[0]
    dur = _role_durations(pinned, a, b)
    horizon = sum(max(x for x in row if x is not None) for row in dur if any(x is not None for x in row))
    horizon += sum(max(row, default=0) for row in pinned.transfer_cycles)  # no links: no transfers
    m = cp_model.CpModel()
    role = [[m.new_bool_var(f"r{i}_{k}") if dur[i][k] is not None else None for k in range(3)] for i in range(n)]
    start = [m.new_int_var(0, horizon, f"s{i}") for i in range(n)]
    end = [m.new_int_var(0, horizon, f"e{i}") for i in range(n)]
    _add_ops(m, pinned, (a, b), dur, role, start, end)
    _add_colocation(m, pinned, role)
    _add_edges(m, pinned, (a, b), horizon, role, start, end)
    for i in range(n):
        m.add(end[i] <= end[n - 1])
    m.minimize(end[n - 1])
    return _RoleModel(m, end[n - 1], role)


def _add_ops(m: cp_model.CpModel, pinned: SchedulingProblem, devices: tuple[int, int], dur: list, role: list,
             start: list, end: list) -> None:
    """Each op in one role with that role's duration; a and b run their ops on their streams."""
    intervals: dict[int, list[Any]] = {_A: [], _B: []}
    for i in range(pinned.num_ops):
        m.add_exactly_one(x for x in role[i] if x is not None)
        for k in range(3):
            if role[i][k] is None:
                continue
            m.add(end[i] == start[i] + dur[i][k]).only_enforce_if(role[i][k])
            if k != _E and dur[i][k] > 0:
                intervals[k].append(m.new_optional_fixed_size_interval_var(start[i], dur[i][k], role[i][k], f"i{i}_{k}"))
    for k, device in zip((_A, _B), devices):
        if pinned.device_streams[device] == 1:
            m.add_no_overlap(intervals[k])
        else:
            m.add_cumulative(intervals[k], [1] * len(intervals[k]), pinned.device_streams[device])


def _add_colocation(m: cp_model.CpModel, pinned: SchedulingProblem, role: list) -> None:
    """The ops of a colocation group share a device, hence a role."""
    for group in pinned.colocation_groups:
        for i in group[1:]:
            for k in range(3):
                first, other = role[group[0]][k], role[i][k]
                if first is not None and other is not None:
                    m.add(first == other)
                else:
                    for x in (first, other):
                        if x is not None:
                            m.add(x == 0)


def _add_edges(m: cp_model.CpModel, pinned: SchedulingProblem, devices: tuple[int, int], horizon: int, role: list,
               start: list, end: list) -> None:
    """Per edge and pair of roles of its ends, what that pair costs, enforced by the two role
    literals: a transfer on the link between a and b (one at a time per link id; a literal
    ``y = role[u][r] and role[v][q]`` makes its interval optional), the least transfer to or
    from E, or nothing within a role; a pair with no link is forbidden. Only the a-b pairs
    get a variable of their own (an earlier version linearised all nine pairs per edge over
    the one-hot roles: the same model, 30% more deterministic time to prove on Inception-V3)."""
    a, b = devices
    link_intervals: dict[int, list[Any]] = {}
    for e, (u, v, _) in enumerate(pinned.edges):
        for r, q in product(range(3), repeat=2):
            if role[u][r] is None or role[v][q] is None:
                continue
            both = [role[u][r], role[v][q]]
            if {r, q} == {_A, _B}:
                link = pinned.link_of[a][b] if r == _A else pinned.link_of[b][a]
                if link < 0:
                    m.add_bool_or([x.Not() for x in both])
                    continue
                size = pinned.transfer_cycles[e][link]
                y = m.new_bool_var(f"y{e}_{r}{q}")
                m.add_bool_and(both).only_enforce_if(y)
                m.add_bool_or([x.Not() for x in both] + [y])
                t = m.new_int_var(0, horizon, f"t{e}_{r}{q}")
                m.add(t >= end[u]).only_enforce_if(y)
                m.add(start[v] >= t + size).only_enforce_if(y)
                if size > 0:
                    link_intervals.setdefault(link, []).append(m.new_optional_fixed_size_interval_var(t, size, y, f"l{e}"))
                continue
            gap = 0 if r == q else _gap(pinned, e, r, q, a, b)
            if gap is None:
                m.add_bool_or([x.Not() for x in both])
            else:
                m.add(start[v] >= end[u] + gap).only_enforce_if(both)
    for intervals in link_intervals.values():
        m.add_no_overlap(intervals)


# Each proof gets what is left over the next this many. One: every move on the DP's path is
# needed, and a proof cut short is redone from scratch (Inception-V3 at the benchmark's 0.34 +
# 0.6 units: 871.82 ms with one, 864.82 with four, stuck at 834.69 with two)
_JOB_SHARE = 1
_WEIGHTS = "move weights"  # the memo's entry for the weight options (move_weights)
WEIGHT_CELLS = _WEIGHTS  # the same, for the stages that read the options back (move_arrivals)
_WANTED = "moves wanted"  # the memo's entry for the moves the DP's paths asked for, in order

# Charged per run of the segment-run DP and middle segment: 1.5 ms of CPU per segment on the
# dnn layer graphs (0.06 s for ResNet-50's 39), at the scheduling family's 0.07 units per second;
# a traced run (which records and walks back) twice that.
_DP_UNITS_PER_SEGMENT = 0.07 * 0.0015


def pinned_move_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                      memo: dict | None = None, weights: bool = True) -> tuple[int, dict]:
    """The clean segment runs with every device change priced by the proven three-role
    relaxation of its pinned move (module Notes), within ``budget``; (bound, stats), ``(0,
    {})`` where no memory-forced change has a contended segment.

    Moves are proved where the DP goes (:func:`_follow_paths`): the DP is traced back, the
    unproven moves on its path are proved, and again until its path uses only proven moves
    (then proving any other move cannot change its value); with ``weights`` (the default),
    the settled moves on the path also get their weight options
    (:mod:`~solvers.scheduling.move_weights`: a change that leaves little of the segment on
    the device it leaves costs more), and a second round follows the path of the DP with
    every weighed move priced at its dearest option, which the options can lift. Each proof
    gets what is left of ``budget`` over the next :data:`_JOB_SHARE`; a move it did not prove
    keeps the DP's own.

    ``memo`` (a dict the caller keeps between calls on the same problem) resumes the work: it
    maps each move tried to ``(proven value, settled)``; a settled move (CP-SAT's optimum, or
    no schedule) is not proved again, an unsettled one is tried again with what is left and
    keeps the larger of its two proven values (each one is a bound). It also keeps the weight
    options and the moves the paths asked for (``stats["pinned_moves"]``: those, and
    ``pinned_moves_settled`` of them; the stage is open while some is not settled).

    Examples
    --------
    A fork-join ``c0 -> {x, y} -> c1``, every op 1 cycle and every transfer 5 over the one
    link, whose cut ops cannot share a device: the static bounds let both branch edges cross
    at once (1 + 5 + 1 + 1 = 8); over one link they cross in turn, whatever the branches'
    devices: ``c0``, 5, 5, ``c1`` = 12, the optimum.

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,),) * 4, device_memory_bytes=(6, 6),
    ...                       op_resident_bytes=(4, 1, 1, 4), device_class=(0, 0))
    >>> pinned_move_bound(p, SolveOptions(num_workers=1), Budget.start(1, SCHEDULING))[0]
    12
    """
    moves = pinned_moves(problem)
    if moves is None:
        return 0, {}
    keys = [move_proof_key(pinned) for _, _, pinned in moves.jobs]
    cell_keys = weight_cell_keys(moves, keys)
    memo = {} if memo is None else memo
    cells = memo.setdefault(_WEIGHTS, {})
    asked, weigh = memo.setdefault(_WANTED, ({}, {}))  # ordered sets: moves, weight options (cell keys)
    closed = _follow_paths(moves, keys, cell_keys, memo, options, budget, weights)
    proven = [memo.get(key, (0.0, False))[0] for key in keys]
    tables = move_floor_tables(moves, proven)
    weighed = move_weight_options(moves, keys, memo, cells, options, None, []) if weights else None
    value = segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts, move_floors=tables,
                              move_options=weighed)
    tried = [key for key in asked if key in memo]
    settled = sum(memo[key][1] for key in tried)
    budget.note("pinned_move_bound", _DP_UNITS_PER_SEGMENT * moves.num_middles,
                stopped_by="finished" if closed else "deterministic_budget", moves=len(asked), proved=len(tried))
    stats = {"pinned_move_bound": value, "pinned_moves": len(asked), "pinned_moves_proved": len(tried),
             "pinned_moves_settled": settled}
    if weights:
        stats.update(move_weights=len(weigh), move_weights_done=sum(key in cells for key in weigh))
    return value, stats


def _follow_paths(moves: PinnedMoves, keys: Sequence[tuple], cell_keys: Sequence[tuple], memo: dict,
                  options: SolveOptions, budget: Budget, weights: bool) -> bool:
    """Prove the moves (and with ``weights`` their options) on the traced DP's path until it
    uses only settled ones (see :func:`pinned_move_bound`); first with every move at its
    proven minimum, then with each weighed move at its dearest option. Whether both rounds
    closed within ``budget``. Each traced DP is charged by its number of segments. ``keys``: the
    jobs' proof keys; ``cell_keys``: their weight cells' (:func:`~solvers.scheduling.move_weights.weight_cell_keys`)."""
    first = {key: i for i, key in reversed(list(enumerate(keys)))}
    cells, (asked, weighed) = memo[_WEIGHTS], memo[_WANTED]
    weighable = set(_weighable_jobs(moves, keys)) if weights else set()
    tried: set = set()  # unsettled moves tried in this call (tried again in the next one)
    for dearest in ((False, True) if weights else (False,)):
        while True:
            if budget.left <= 0 or budget.wall_expired():
                return False
            path = _traced_moves(moves, keys, cell_keys, memo, cells if dearest else None, budget)
            if path is None:
                break
            on_path = [i for i, (j, pair, _) in enumerate(moves.jobs) if (j, pair) in path]
            todo = list(dict.fromkeys(keys[i] for i in on_path
                                      if not memo.get(keys[i], (0.0, False))[1] and keys[i] not in tried))
            weigh = list(dict.fromkeys(cell_keys[i] for i in on_path if i in weighable and cell_keys[i] not in cells
                                       and memo.get(keys[i], (0.0, False))[1] and math.isfinite(memo[keys[i]][0])))
            if not todo and not weigh:
                break
            asked.update(dict.fromkeys(todo))
            weighed.update(dict.fromkeys(weigh))
            _prove_moves(moves, todo, first, memo, options, budget)
            tried.update(key for key in todo if key in memo and not memo[key][1])
            if weigh:
                move_weight_options(moves, keys, memo, cells, options, budget, [], build=role_model, only=set(weigh))
            if any(key not in memo for key in todo) or any(key not in cells for key in weigh):
                return False  # the budget ran out in the middle
    return True


def _weighable_jobs(moves: PinnedMoves, keys: Sequence[tuple]) -> list[int]:
    """The jobs whose source pool has a memory limit (where weight options can matter)."""
    settled_all = {key: (1.0, True) for key in keys}
    return weight_jobs(moves, keys, settled_all)


def _traced_moves(moves: PinnedMoves, keys: Sequence[tuple], cell_keys: Sequence[tuple], memo: dict,
                  cells: dict | None, budget: Budget) -> set[tuple[int, tuple[int, int]]] | None:
    """The (middle segment, pool pair) of each device change on the path of the segment-run
    DP with the moves proved so far (``cells``: each weighed move at its dearest option's
    step); None where the DP has no finite path."""
    prices = []
    for key, cell_key in zip(keys, cell_keys):
        value = memo.get(key, (0.0, False))[0]
        found = None if cells is None else cells.get(cell_key)
        if found:
            value = max(value, max(step for _, step in found))
        prices.append(value)
    traced = segment_run_trace(moves.pruned, moves.segments, moves.floors, moves.cuts,
                               move_floors=move_floor_tables(moves, prices))
    budget.charge(budget.scale(2 * _DP_UNITS_PER_SEGMENT * moves.num_middles))
    if traced is None:
        return None
    runs = traced[1]
    return {(run.last, (run.pool, after.pool)) for run, after in zip(runs, runs[1:])}


def _prove_moves(moves: PinnedMoves, todo: Sequence[tuple], first: dict, memo: dict, options: SolveOptions,
                 budget: Budget) -> None:
    """Prove the moves of ``todo`` (job keys) not settled in ``memo`` yet, in order, each within
    what is left of ``budget`` over the next :data:`_JOB_SHARE`, into ``memo``."""
    open_keys = [key for key in todo if not memo.get(key, (0.0, False))[1]]
    # one worker, not interleaved: CP-SAT's plain single-worker search proves these small models
    # 10-30x faster in deterministic time than the interleaved portfolio (Inception-V3's
    # modules: 0.013-0.20 units against 0.35-1.16) and is deterministic too
    single = replace(options, num_workers=1)
    for done, key in enumerate(open_keys):
        if budget.left <= 0 or budget.wall_expired():
            break
        built = role_model(moves.jobs[first[key]][2])
        status, solver, _ = budget.run_cpsat(built.model, single, budget.left / min(len(open_keys) - done, _JOB_SHARE),
                                             None, interleave=False)
        if status is Status.INFEASIBLE:
            memo[key] = (math.inf, True)
        elif status in (Status.OPTIMAL, Status.FEASIBLE):
            value = float(integer_objective_bound(solver))
            memo[key] = (max(value, memo.get(key, (0.0, False))[0]), status is Status.OPTIMAL)


def move_proof_key(pinned: SchedulingProblem) -> tuple:
    """The key a pinned move's proof is kept under in the scheduler's memo: moves that are the
    same problem (repeated blocks, the same pair) share a proof.

    It holds everything :func:`role_model` reads: the edges, the durations (which also say the
    pinned devices a and b), the transfers, the colocation groups, the streams (a's and b's)
    and the link table (the a-b link's id, the links to and from the other devices). A memo
    serves one problem, where the last two never differ, but a key that leaves out what its
    proof read is wrong for any other use of it. Not the interior ops' weights: the move's
    proof does not read them (its weight cells do: :func:`~solvers.scheduling.move_weights.weight_cell_keys`).

    Examples
    --------
    Three links, one per pair of devices or one each way between 0 and 1 (the same
    transfers): other proofs.

    >>> one = SchedulingProblem(((0, 0, 0), (2, 3, 3), (1, 1, 1)), ((0, 1, 8), (1, 2, 8)), (1, 1, 1),
    ...                         ((-1, 0, 1), (0, -1, 2), (1, 2, -1)), ((5, 5, 5), (5, 5, 5)))
    >>> each = replace(one, link_of=((-1, 0, 1), (2, -1, 1), (1, 1, -1)))
    >>> move_proof_key(pinned_move_problem(one, 0, 1)) == move_proof_key(pinned_move_problem(each, 0, 1))
    False
    """
    return (pinned.edges, pinned.durations_cycles, pinned.transfer_cycles, pinned.colocation_groups,
            pinned.device_streams, pinned.link_of)
