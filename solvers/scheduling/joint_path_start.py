"""A start candidate from the joint-cell DP's path: the bound's own placement, realised and
scheduled, so that a plan meeting the bound is returned as OPTIMAL.

Notes
-----
**Why.** On the dnn-partitioning ResNet-50 layer graph the joint weight cells
(:mod:`~solvers.scheduling.joint_cells`) raise the bound to 930.26 ms, while the traced-runs
start (:mod:`~solvers.scheduling.traced_start`, which traces the DP on the two sides' cells)
and every stage after it stop at 947.19. The joint-cell DP's own path, with each device
change's interior inside the cell the path charged and within the bytes the runs leave, is a
930.26-ms plan (session 14, ``benchmarks/dnn_joint_path.py``): the bound is the optimum there,
and this start returns it.

**Steps** (:func:`joint_path_start`).

1. *Trace* (:func:`~solvers.scheduling.joint_cells.traced_changes`) the DP on the joint cells
   in the pinned moves' memo (proved by the arrival stage right after the pinned moves).
2. *Realise* (:func:`path_placement`). Each run (between two changes) on a fresh device of its
   pool, its cut ops and every interior op of its stays there (the stays' full option, what the
   DP takes on ResNet-50 layers); the ops before the first cut op on the first run's device,
   those after the last on the last's. Each change's interior, in path order, by the three-role
   model of its pinned move (:func:`~solvers.scheduling.pinned_moves.role_model`) with the weight
   on each side below the upper edge of the cell the path charged and within the bytes its
   device has left: shortest first, then least weight on the two sides at that length; role E
   on a spare device (a fresh accelerator of the first pool first), one per change.
3. *Schedule* HEFT with the placement fixed, then, where that is within
   :data:`~solvers.scheduling.traced_start.EXACT_MARGIN` of the incumbent, CP-SAT with it fixed
   from HEFT's schedule (:func:`~solvers.scheduling.traced_start.fixed_schedule`), within
   :data:`EXACT_UNITS`.

Why a plan, not a bound: every realised placement is checked (memory, allowed devices) and
its schedules are validated (:func:`~solvers.scheduling.validate.validate_schedule`); the
caller keeps the candidate only when it is shorter than its incumbent, so it never makes a
result worse. Equal to the proven bound, the main solve returns it as OPTIMAL.

Everything is budgeted in deterministic units (the role solves by CP-SAT's deterministic
time, the HEFT pass by its size), so the same problem and seed give the same plan.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from solvers.budget import Budget, build_units
from solvers.core import SolveOptions
from solvers.scheduling import segment_runs
from solvers.scheduling.heft import PlacedRanks, heft_schedule_within
from solvers.scheduling.joint_cells import JOINT_CELLS, Change, joint_options, traced_changes
from solvers.scheduling.move_weights import middle_segments, weight_cell_keys
from solvers.scheduling.pinned_moves import PinnedMoves, move_floor_tables, move_proof_key
from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.resident import ResidentLedger
from solvers.scheduling.traced_start import (EXACT_MARGIN, fixed_schedule, helper_device, role_split, run_devices,
                                             whole_problem_moves)
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "ROLE_UNITS", "EXACT_UNITS", "path_placement", "joint_path_start"]

SOURCE = "joint-cell path"  # the hint source the scheduler reports for this candidate

# At most per change's two role solves (ResNet-50 layers: the whole stage, its changes, one HEFT pass and
# the exact sequencing, charged 0.0168 units).
ROLE_UNITS = 0.02
# The exact sequencing of the realised placement: at most this many units (ResNet-50 layers: HEFT 935.82 ms,
# CP-SAT with the placement fixed 930.26, the bound, within the stage's 0.0168).
EXACT_UNITS = 0.1

_ROLE_E = 2


def _traced_path(moves: PinnedMoves, memo: dict) -> tuple[list[Change], list[dict | None]] | None:
    """The joint-cell DP's device changes and, per middle segment and pool pair, each option's
    (cells key, lower edges); None without joint cells in ``memo`` or without a finite path."""
    if not memo.get(JOINT_CELLS):
        return None
    keys = [move_proof_key(p) for _, _, p in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(k, (0.0, False))[0] for k in keys])
    terms = segment_runs._run_terms(moves.pruned, moves.segments, moves.floors, moves.cuts, tables, with_masks=False)
    if terms is None:
        return None
    joint, origins = joint_options(moves, keys, memo, memo[JOINT_CELLS], weight_cell_keys(moves, keys))
    value, changes = traced_changes(terms, joint)
    return (changes, origins) if math.isfinite(value) else None


def _runs_placed(problem: SchedulingProblem, moves: PinnedMoves, changes: Sequence[Change],
                 devices: Sequence[int]) -> list[int | None]:
    """Each run's cut ops and its stays' interior ops on its device, the ops before the first
    cut op on the first device and those after the last on the last; the changes' interior
    ops None."""
    cut, middles = list(moves.cuts), middle_segments(moves)
    bounds = [0] + [c.middle + 1 for c in changes] + [len(cut)]
    dev: list[int | None] = [None] * problem.num_ops
    for k, d in enumerate(devices):
        for j in range(bounds[k], bounds[k + 1]):
            dev[cut[j]] = d
        for j in range(bounds[k], bounds[k + 1] - 1):
            for o in moves.segments[middles[j]][1][1:-1]:
                dev[o] = d
    for o in range(problem.num_ops):
        if dev[o] is None and (o < cut[0] or o > cut[-1]):
            dev[o] = devices[0] if o < cut[0] else devices[-1]
    return dev


def _cell_caps(problem: SchedulingProblem, moves: PinnedMoves, memo: dict, origins: Sequence[dict | None],
               change: Change, ends: tuple[int, int], used: Sequence[int]) -> tuple[float, float]:
    """The most weight the change may leave on each of its two devices ``ends``: below the upper
    edge of the cell the path charged (none for a plain move) and, on a memory-limited device,
    within the bytes it has left."""
    edges = grid = None
    if change.option >= 0:
        key, edges = origins[change.middle][(change.source, change.sink)][change.option]
        grid = memo[JOINT_CELLS][key]
    total = sum(problem.resident_bytes(o) for o in range(problem.num_ops))
    caps = []
    for side, d in enumerate(ends):
        cap = grid.upper(side, grid.index(side, edges[side])) - 1 if grid is not None else math.inf
        if 0 < problem.memory_bytes(d) < total:
            cap = min(cap, problem.memory_bytes(d) - used[d])
        caps.append(cap)
    return caps[0], caps[1]


def path_placement(problem: SchedulingProblem, moves: PinnedMoves, memo: dict, options: SolveOptions,
                   budget: Budget) -> tuple[int, ...] | None:
    """A placement of ``problem`` (``moves.pruned``, every op kept) from the joint-cell DP's
    path (module Notes, step 2), each change's role solves within :data:`ROLE_UNITS`; None
    without a path, or where devices, a role solve or the memory do not allow one."""
    traced = _traced_path(moves, memo)
    if traced is None:
        return None
    changes, origins = traced
    runs = [[changes[0].source if changes else 0]] + [[c.sink] for c in changes]
    devices = run_devices(moves, runs)
    if devices is None:
        return None
    dev = _runs_placed(problem, moves, changes, devices)
    used = ResidentLedger(problem, [-1 if d is None else d for d in dev])  # a shared tensor once a device
    spare = [d for d in moves.pools.pools[0] if d not in devices]  # fresh accelerators first, then any other
    helpers = spare + [d for d in range(problem.num_devices) if d not in devices and d not in spare]
    middles = middle_segments(moves)
    for k, change in enumerate(changes):
        a, b = devices[k], devices[k + 1]
        caps = _cell_caps(problem, moves, memo, origins, change, (a, b), used.held)
        roles = role_split(problem, moves, change.middle, a, b, caps, options, budget,
                           min(ROLE_UNITS, max(0.0, budget.left) / (len(changes) - k)), weigh_both=True)
        if roles is None:
            return None
        ops = moves.segments[middles[change.middle]][1][1:-1]
        helper = helper_device(problem, helpers, [o for o, r in zip(ops, roles) if r == _ROLE_E], used)
        for o, r in zip(ops, roles):
            if r == _ROLE_E and helper is None:
                return None
            dev[o] = (a, b, helper)[r]
            used.add((o,), dev[o])
    if any(d is None or problem.durations_cycles[o][d] < 0 for o, d in enumerate(dev)):
        return None
    if any(0 < problem.memory_bytes(d) < used.held[d] for d in range(problem.num_devices)):
        return None
    return tuple(int(d) for d in dev)


def joint_path_start(problem: SchedulingProblem, budget: Budget, memo: dict, options: SolveOptions = SolveOptions(),
                     incumbent: int | None = None) -> tuple[SchedulingSolution | None, dict[str, Any]]:
    """The candidate of module Notes within ``budget`` (``memo``: the pinned moves' memo with
    the joint cells, the scheduler's): (the valid schedule or None, statistics); ``(None, {})``
    where it does not apply (THROUGHPUT, no pinned moves or joint cells, or a bound problem
    that drops ops). ``incumbent``: the objective to beat; HEFT's schedule of the path more
    than :data:`~solvers.scheduling.traced_start.EXACT_MARGIN` above it is not sequenced
    exactly (the units stay for the stages after it)."""
    if problem.objective is not Objective.LATENCY or not memo.get(JOINT_CELLS):
        return None, {}
    moves = whole_problem_moves(problem)
    if moves is None:
        return None, {}
    used = budget.used
    placement = path_placement(problem, moves, memo, options, budget)
    stats: dict[str, Any] = {"joint_path_placed": placement is not None}
    best = None
    if placement is not None:
        budget.charge(budget.scale(build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)))
        sol, _ = heft_schedule_within(problem, placement, PlacedRanks(problem)(placement))
        if sol is not None and not validate_schedule(problem, sol):
            stats["joint_path_heft"] = best_value = objective_value(problem, sol)
            best = sol
            if incumbent is None or best_value <= (1 + EXACT_MARGIN) * incumbent:
                best = fixed_schedule(problem, sol, options, budget, min(EXACT_UNITS, max(0.0, budget.left)))
    stats.update(joint_path_objective=objective_value(problem, best) if best is not None else None,
                 joint_path_units=round(budget.used - used, 6))
    return best, stats
