"""Moves that bring weight along: a memory-forced device change priced by how much of the
segment it crosses lands on the device it enters (LATENCY with memory limits).

Notes
-----
The clean segment runs (:mod:`~solvers.scheduling.segment_runs`) price a device change
between clean cut ops ``c_j`` (on a) and ``c_(j+1)`` (on b) by its pinned move
(:mod:`~solvers.scheduling.pinned_moves`), and :mod:`~solvers.scheduling.move_weights`
charges the weight a cheap change leaves on a to the run that ends at ``c_j``. The weight it
puts on b was charged to no run. On the dnn ResNet-50 layer graph that is where the DP's
runs overflow: its cheapest changes (95.7, 51.5 and 47.9 ms) keep the last ops of each block
on b (their 95.7-ms edges into the block's add would cross otherwise), and the DP's runs with
the three-role models' least-weight solutions added hold 2.21-2.40 GB on 2 GiB accelerators.

The argument is the one of :mod:`~solvers.scheduling.move_weights` with role B for role A:
with ``W_B`` the held weight of the interior ops in role B of the three-role model, levels
``0 = v_0 < ... < v_m`` and ``U_k`` the proven minimum with ``W_B <= v_(k+1) - 1`` (``U_m``
the move's own), every schedule with ``c_j`` on a and ``c_(j+1)`` on b lies in one cell, puts
at least ``v_k`` on b and takes at least ``U_k``. It also lies in one cell ``(w_i, T_i)`` of
the source side, so the options ``(w_i, v_k, max(T_i, U_k))`` over every pair of cells cover
it: the DP charges ``w_i`` to the run that ends at ``c_j``, ``v_k`` to the run that starts
at ``c_(j+1)`` (its device is b; those ops, its cut ops, its kept segment ops and what the
move after it leaves are distinct ops there) and steps the larger time
(``segment_run_bound(..., move_options=...)`` with three-element options). Per device pair
the two sides are crossed; across a pool pair's device pairs the options are pooled (the DP
takes the least step per weight), as for the source side.

The levels are fractions (:data:`~solvers.scheduling.move_weights.LEVELS`) of the least
``W_B`` of a schedule at the move's minimum. Options are made only where the sink pool has a
memory limit and the move's pinned proof is settled. The proofs are kept in the caller's
memo (the pinned moves' one) under :data:`ARRIVALS`, per pinned proof and interior weights
(:func:`~solvers.scheduling.move_weights.weight_cell_keys`), so the scheduler's leftover stage
can resume them.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from solvers.budget import Budget
from solvers.core import SolveOptions
from solvers.scheduling.move_weights import (prove_cells, role_weight_levels, settled_limited_jobs, weight_cell_keys,
                                             weight_in_role)
from solvers.scheduling.pinned_moves import (WEIGHT_CELLS, move_floor_tables, move_proof_key, pinned_moves,
                                             role_model)
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.segment_runs import MoveOptions, segment_run_bound

__all__ = ["ARRIVALS", "ARRIVAL_SHARE", "ARRIVAL_STAGE_SHARE", "weight_on_sink", "arrival_levels", "arrival_jobs", "combined_options", "move_arrival_bound"]

ARRIVALS = "move arrivals"  # the memo's entry for the sink-side options

ARRIVAL_SHARE = 1.0  # of what the scheduler's leftover stage has once the moves are settled (the probes after
# it get what the proofs leave): ResNet-50 layers' 34 moves need 0.39 units in all

# Of the scheduler's whole budget, for the sink-side options and the joint cells
# (:mod:`~solvers.scheduling.joint_cells`) right after the pinned moves settle, before any start
# is built (ResNet-50 layers: 0.05 + 0.09 units of 3.36 at 60 s)
ARRIVAL_STAGE_SHARE = 0.08

_B = 1  # role_model's role of the sink's device


def weight_on_sink(built: Any, held_inner: Sequence[int]):
    """``W_B`` in a three-role model ``built`` (:func:`~solvers.scheduling.move_weights.weight_in_role`
    of role B) and the most it can be."""
    return weight_in_role(built, held_inner, _B)


def arrival_levels(build: Callable[[], Any], held_inner: Sequence[int], minimum: int, options: SolveOptions,
                   budget: Budget, amount: float) -> list[tuple[int, float]] | None:
    """The ``(weight brought onto the sink's device, step)`` options of one pinned move whose
    proven minimum is ``minimum`` (module Notes;
    :func:`~solvers.scheduling.move_weights.role_weight_levels` of role B)."""
    return role_weight_levels(build, held_inner, minimum, options, budget, amount, _B)


def arrival_jobs(moves: Any, keys: Sequence[tuple], memo: dict) -> list[int]:
    """The pinned-move jobs that get sink-side options: settled with a finite minimum in
    ``memo``, into a pool with a memory limit."""
    return settled_limited_jobs(moves, keys, memo, _B)


def _prove_arrivals(moves: Any, keys: Sequence[tuple], memo: dict, cells: dict, options: SolveOptions,
                    budget: Budget, build: Callable[[SchedulingProblem], Any]) -> None:
    """Prove the sink-side options of every job of :func:`arrival_jobs` not in ``cells`` yet
    (by :func:`~solvers.scheduling.move_weights.weight_cell_keys`: the proofs read the interior
    weights), changes within one pool first, in segment order, within ``budget``."""
    cell_keys = weight_cell_keys(moves, keys)
    wanted = arrival_jobs(moves, keys, memo)
    ordered = sorted(wanted, key=lambda i: (moves.jobs[i][1][0] != moves.jobs[i][1][1], moves.jobs[i][0]))
    todo = list(dict.fromkeys(cell_keys[i] for i in ordered if cell_keys[i] not in cells))
    prove_cells(moves, keys, cell_keys, memo, cells, todo, arrival_levels, build, options, budget)


def combined_options(moves: Any, keys: Sequence[tuple], memo: dict, source_cells: dict,
                     sink_cells: dict) -> list[MoveOptions | None]:
    """Per middle segment, ``segment_run_bound``'s ``move_options`` with both sides (module
    Notes): per device pair, its source-side cells (or the move's minimum alone) crossed with
    its sink-side cells (or the minimum alone); a pool pair gets options only when every one of
    its device pairs has a settled finite minimum and some device pair has cells. ``keys``: the
    jobs' proof keys; the cells are looked up by
    :func:`~solvers.scheduling.move_weights.weight_cell_keys`."""
    cell_keys = weight_cell_keys(moves, keys)
    tables: list[MoveOptions | None] = [None] * moves.num_middles
    by_pair: dict[tuple[int, tuple[int, int]], list] = {}
    for i, (j, pair, _) in enumerate(moves.jobs):
        by_pair.setdefault((j, pair), []).append(i)
    for (j, pair), jobs in by_pair.items():
        found, refined = [], False
        for i in jobs:
            settled = memo.get(keys[i], (0.0, False))
            if not settled[1] or not math.isfinite(settled[0]):
                break
            alone = [(0, float(settled[0]))]
            source = source_cells.get(cell_keys[i]) or alone
            sink = sink_cells.get(cell_keys[i]) or alone
            refined = refined or bool(source_cells.get(cell_keys[i]) or sink_cells.get(cell_keys[i]))
            found += [(w, v, max(t, u)) for w, t in source for v, u in sink]
        else:
            if refined:
                tables[j] = tables[j] or {}
                tables[j][pair] = found
    return tables


def move_arrival_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                       memo: dict) -> tuple[int, dict]:
    """The clean segment runs with the pinned moves and both sides' weight options (module
    Notes), proving the sink-side options missing from ``memo`` within ``budget``: ``(bound,
    stats)``, ``(0, {})`` where no settled pinned move enters a memory-limited pool.

    ``memo`` is the pinned moves' memo (their proofs and the source-side cells); only settled
    moves get options, so call this after :func:`~solvers.scheduling.pinned_moves.pinned_move_bound`.

    Examples
    --------
    A fork-join ``c0 -> {x, y} -> c1`` on three interchangeable devices (one link per pair),
    every op 1 cycle, fork edges 1, join edges 10; ``c0`` and ``c1`` weigh 5 of a device's 6
    bytes, x and y 1 each, so ``c1``'s device holds at most one of x and y. The pinned move
    with both on ``c1``'s device costs 4 after ``c0``, and the source side sees nothing (x or y
    on ``c0``'s device pays a join edge too): 5. With the weight it brings onto ``c1``'s device
    charged there, one of x and y waits for its join edge: 13, the optimum.

    >>> from solvers.budget import SCHEDULING
    >>> from solvers.scheduling.pinned_moves import pinned_move_bound
    >>> links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    >>> p = SchedulingProblem(((1, 1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1),
    ...                       links, ((1,) * 3, (1,) * 3, (10,) * 3, (10,) * 3), device_memory_bytes=(6, 6, 6),
    ...                       op_resident_bytes=(5, 1, 1, 5), device_class=(0, 0, 0))
    >>> memo = {}
    >>> pinned_move_bound(p, SolveOptions(num_workers=1), Budget.start(1, SCHEDULING), memo)[0]
    5
    >>> move_arrival_bound(p, SolveOptions(num_workers=1), Budget.start(1, SCHEDULING), memo)[0]
    13
    """
    moves = pinned_moves(problem)
    if moves is None:
        return 0, {}
    keys = [move_proof_key(pinned) for _, _, pinned in moves.jobs]
    if not arrival_jobs(moves, keys, memo):
        return 0, {}
    sink_cells = memo.setdefault(ARRIVALS, {})
    _prove_arrivals(moves, keys, memo, sink_cells, options, budget, role_model)
    source_cells = memo.get(WEIGHT_CELLS, {})
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    combined = combined_options(moves, keys, memo, source_cells, sink_cells)
    value = segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts, move_floors=tables,
                              move_options=combined)
    cell_keys = weight_cell_keys(moves, keys)
    wanted = dict.fromkeys(cell_keys[i] for i in arrival_jobs(moves, keys, memo))
    stats = {"move_arrival_bound": value, "move_arrivals": len(wanted),
             "move_arrivals_done": sum(1 for key in wanted if key in sink_cells)}
    return value, stats
