"""Moves that leave weight behind: a memory-forced device change priced by how much of the
segment it crosses stays on the device it leaves (LATENCY with memory limits).

Notes
-----
The clean segment runs (:mod:`~solvers.scheduling.segment_runs`) price a device change
between clean cut ops ``c_j`` (on a) and ``c_(j+1)`` (on b) by the pinned move of
:mod:`~solvers.scheduling.pinned_moves`, and charge the segment's interior weights to no run:
they may sit on a third device. On Inception-V3 that is where the bound was loose: every
branch of a module is fed by the concat before it over a 74.8-ms edge, so a cheap change
(29-47 ms) keeps each branch's first ops on a, and a change that keeps nothing on a costs
70-106 ms (the three-role relaxation with the weight on a forced to 0).

Take the three-role model of a pinned move (:func:`~solvers.scheduling.pinned_moves.role_model`)
and ``W_A``, the weight of the interior ops in role A (each op's
:func:`~solvers.scheduling.forced.held_weights`, colocation groups once). Any schedule of the
whole problem with ``c_j`` on a and ``c_(j+1)`` on b maps to a solution of the model with
the same step or less in which ``W_A`` is exactly the weight of the segment's interior ops
on a (those ops keep role A). Pick levels ``0 = w_0 < w_1 < ... < w_m``; a schedule whose
``W_A`` lies in ``[w_i, w_(i+1))`` has a step at least ``T_i``, the proven minimum of the
model with ``W_A <= w_(i+1) - 1`` (``T_m``: the move's own minimum), and leaves at least
``w_i`` on a. So the options ``(w_i, T_i)`` cover every schedule: the segment-run DP
(``segment_run_bound(..., move_options=...)``) charges ``w_i`` to the run that ends at
``c_j`` (whose device is a) and steps ``T_i``; nothing else changes. A run holds its cut ops,
the interior weights it keeps in its stay segments and now this weight of the segment after
it: all distinct ops on one device, so the sum is still at most its memory.

The levels are fractions (:data:`LEVELS`) of the least ``W_A`` of a schedule at the move's
minimum (a second solve minimising ``W_A`` with the step at most that minimum; any value is
sound, this one puts the levels where the step jumps). Options are made only for pool
pairs whose source pool has a memory limit (elsewhere the weight costs nothing) and only for
moves whose pinned proof is settled (their minimum is known). They are kept per pinned proof
*and* interior weights (:func:`weight_cell_keys`): repeated blocks of other weights share the
proof of their move but not its cells.

Measured on Inception-V3 layers (module 18, 2026-11-28): minimum 38.39 ms with at least 0.309
GiB on a; ``W_A`` below 0.75, 0.5 of that: 58.27 and 58.47 ms; below it: 38.75 ms.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Sequence

from solvers.budget import Budget
from solvers.core import SolveOptions, Status
from solvers.cpsat_support import integer_objective_bound
from solvers.scheduling.forced import held_weights
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.segment_runs import MoveOptions
from solvers.scheduling.structure import segment_ranges, topological_order

__all__ = ["LEVELS", "prove_cells", "weight_in_role", "weight_on_source", "role_weight_levels", "move_weight_levels", "held_by_op",
           "settled_limited_jobs", "middle_segments", "weight_cell_keys", "weight_jobs", "move_weight_options"]

# The levels, as fractions of the least weight a cheapest move leaves on its source device
# (the cell below the last one is where Inception-V3's moves jump: module Notes).
LEVELS = (0.5, 0.75, 1.0)


def weight_in_role(built: Any, held_inner: Sequence[int], role: int):
    """The linear expression of the held weight of the interior ops of a three-role model
    ``built`` (a :func:`~solvers.scheduling.pinned_moves.role_model`) in ``role`` (0: the source's
    device, ``W_A``; 1: the sink's, ``W_B``; ``held_inner[i - 1]`` for op i), and the most it can be."""
    terms = [(w, built.role[i + 1][role]) for i, w in enumerate(held_inner)
             if w > 0 and built.role[i + 1][role] is not None]
    return sum(w * lit for w, lit in terms), sum(w for w, _ in terms)


def weight_on_source(built: Any, held_inner: Sequence[int]):
    """:func:`weight_in_role` of role A (the source's device): ``W_A`` and the most it can be."""
    return weight_in_role(built, held_inner, 0)


def role_weight_levels(build: Callable[[], Any], held_inner: Sequence[int], minimum: int, options: SolveOptions,
                       budget: Budget, amount: float, role: int) -> list[tuple[int, float]] | None:
    """The ``(weight in role, step)`` options of one pinned move whose proven minimum is
    ``minimum`` (module Notes), each solve within a share of ``amount`` units; ``build()`` makes
    a fresh three-role model of the move. None when nothing is to refine (no interior weight
    can take ``role``, or a schedule at the minimum puts none there)."""
    built = build()
    weight, total = weight_in_role(built, held_inner, role)
    if total == 0:
        return None
    single = replace(options, num_workers=1)
    built.model.add(built.makespan <= minimum)
    built.model.minimize(weight)
    share = amount / (1 + len(LEVELS))
    status, solver, _ = budget.run_cpsat(built.model, single, share, None, interleave=False)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return None
    least = int(round(solver.objective_value))  # a solution's weight: the cells below are sound whatever it is
    if least <= 0:
        return None
    found: list[tuple[int, float]] = []
    lower = 0
    for upper in sorted({int(f * least) for f in LEVELS if int(f * least) > 0}):
        capped = build()
        weight, _ = weight_in_role(capped, held_inner, role)
        capped.model.add(weight <= upper - 1)
        capped.model.minimize(capped.makespan)
        status, solver, _ = budget.run_cpsat(capped.model, single, share, None, interleave=False)
        if status is Status.INFEASIBLE:
            value = math.inf
        elif status in (Status.OPTIMAL, Status.FEASIBLE):
            value = float(integer_objective_bound(solver))
        else:
            value = 0.0  # nothing proved: the plain move still holds
        found.append((lower, value))
        lower = upper
    found.append((lower, float(minimum)))
    return found


def move_weight_levels(build: Callable[[], Any], held_inner: Sequence[int], minimum: int, options: SolveOptions,
                       budget: Budget, amount: float) -> list[tuple[int, float]] | None:
    """The ``(weight left on the source device, step)`` options of one pinned move
    (:func:`role_weight_levels` of role A)."""
    return role_weight_levels(build, held_inner, minimum, options, budget, amount, 0)


def held_by_op(moves: Any) -> dict[int, int]:
    """Each op's held weight in ``moves.pruned`` (colocation groups once, topological order)."""
    topo = topological_order(moves.pruned)
    return dict(zip(topo, held_weights(moves.pruned, topo)))


def settled_limited_jobs(moves: Any, keys: Sequence[tuple], memo: dict, side: int) -> list[int]:
    """The pinned-move jobs settled with a finite minimum in ``memo`` whose pool on ``side``
    (0: the source's, 1: the sink's) has a memory limit."""
    total = sum(held_by_op(moves).values())
    limited = [0 < c < total for c in moves.pools.capacity]
    return [i for i, (_, pools, _) in enumerate(moves.jobs)
            if limited[pools[side]] and memo.get(keys[i], (0.0, False))[1] and math.isfinite(memo[keys[i]][0])]


def weight_cell_keys(moves: Any, keys: Sequence[tuple]) -> list[tuple]:
    """Per pinned-move job, the key its weight cells are kept under (both sides' and the joint
    ones): its proof's (``keys[i]``) and the held weights of its segment's interior ops, what the
    cells' proofs read (the three-role model, and the weights they cap). Two segments of one
    shape but other weights never share cells: cells proved for heavier interior ops say that
    little weight left on a device costs more than it does for lighter ones, above the optimum
    (``tests/solvers/test_move_weights.py``). The pools' memory limits are no part of it: no
    proof reads them (they pick the jobs that get cells, and the DP charges the cells' weights
    against them).

    Examples
    --------
    >>> from solvers.scheduling.pinned_moves import move_proof_key, pinned_moves
    >>> p = SchedulingProblem(((1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,),) * 4, device_memory_bytes=(6, 6),
    ...                       op_resident_bytes=(4, 1, 2, 4), device_class=(0, 0))
    >>> moves = pinned_moves(p)
    >>> [key[1] for key in weight_cell_keys(moves, [move_proof_key(q) for _, _, q in moves.jobs])]
    [(1, 2)]
    """
    held = held_by_op(moves)
    segment_of = middle_segments(moves)
    return [(keys[i], tuple(held[o] for o in moves.segments[segment_of[j]][1][1:-1]))
            for i, (j, _, _) in enumerate(moves.jobs)]


def weight_jobs(moves: Any, keys: Sequence[tuple], memo: dict) -> list[int]:
    """The pinned-move jobs that get weight options: settled with a finite minimum in ``memo``,
    from a pool with a memory limit."""
    return settled_limited_jobs(moves, keys, memo, 0)


def middle_segments(moves: Any) -> list[int]:
    """The index in ``moves.segments`` of each middle segment (a cut op at both ends)."""
    ranges = segment_ranges(moves.pruned, moves.cuts)
    return [k for k, (_, _, source, sink) in enumerate(ranges) if source is not None and sink is not None]


def prove_cells(moves: Any, keys: Sequence[tuple], cell_keys: Sequence[tuple], memo: dict, cells: dict,
                todo: Sequence[tuple], levels: Callable[..., Any], build: Callable[[SchedulingProblem], Any],
                options: SolveOptions, budget: Budget) -> None:
    """Prove the cells of ``todo`` (:func:`weight_cell_keys` keys) in order into ``cells``, each
    by ``levels`` (:func:`move_weight_levels`, or the sink side's ``arrival_levels``) on its first
    job's pinned move with ``build`` (``role_model``), within an even share of what is left of
    ``budget`` over at most the next four; stops when the budget or its wall-clock net runs out."""
    held = held_by_op(moves)
    segment_of = middle_segments(moves)
    first = {key: i for i, key in reversed(list(enumerate(cell_keys)))}
    for done, key in enumerate(todo):
        if budget.left <= 0 or budget.wall_expired():
            break
        i = first[key]
        j, _, pinned = moves.jobs[i]
        ops = moves.segments[segment_of[j]][1]
        amount = budget.left / min(len(todo) - done, 4)
        cells[key] = levels(lambda pinned=pinned: build(pinned), [held[o] for o in ops[1:-1]],
                            int(memo[keys[i]][0]), options, budget, amount)


def move_weight_options(moves: Any, keys: Sequence[tuple], memo: dict, cells: dict, options: SolveOptions,
                        budget: Budget | None, order: Sequence[int], within: bool | None = None,
                        build: Callable[[SchedulingProblem], Any] | None = None,
                        only: set | None = None) -> list[MoveOptions | None]:
    """Per middle segment, the move options of every settled pinned move whose source pool has a
    memory limit (``segment_run_bound``'s ``move_options``), proving the missing ones in
    ``order`` (middle segments) within ``budget`` (None: none; with ``within``, only those of changes
    within one pool, or only the others); ``cells`` (kept by the caller) maps a job's
    :func:`weight_cell_keys` key to its options (None: nothing to refine), so none is proved
    twice. A pool pair gets options only when all its device pairs have them (the DP takes the
    least of their steps per weight).
    ``moves`` is a :class:`~solvers.scheduling.pinned_moves.PinnedMoves` and ``build`` its
    ``role_model`` (passed in: that module calls this one). ``only``: prove only these cell keys.
    """
    cell_keys = weight_cell_keys(moves, keys)
    wanted = weight_jobs(moves, keys, memo)
    rank = {j: r for r, j in enumerate(order)}
    picked = [i for i in wanted if (within is None or (moves.jobs[i][1][0] == moves.jobs[i][1][1]) == within)
              and (only is None or cell_keys[i] in only)]
    todo = sorted(dict.fromkeys(cell_keys[i] for i in picked if cell_keys[i] not in cells),
                  key=lambda key: min(rank.get(moves.jobs[i][0], len(rank)) for i in picked if cell_keys[i] == key))
    if budget is not None and build is not None:
        prove_cells(moves, keys, cell_keys, memo, cells, todo, move_weight_levels, build, options, budget)
    tables: list[MoveOptions | None] = [None] * moves.num_middles
    by_pair: dict[tuple[int, tuple[int, int]], list] = {}
    for i in wanted:
        j, pair, _ = moves.jobs[i]
        by_pair.setdefault((j, pair), []).append(cells.get(cell_keys[i]))
    for (j, pair), found in by_pair.items():
        devices = sum(1 for jj, pp, _ in moves.jobs if (jj, pp) == (j, pair))
        if len(found) < devices or any(f is None for f in found):
            continue
        tables[j] = tables[j] or {}
        tables[j][pair] = [opt for f in found for opt in f]
    return tables
