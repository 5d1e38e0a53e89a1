"""Fewer moves: undo a re-placement's moves that its predicted gain does not need.

The exact scheduler picks one of many near-equal placements, and on ties it can move far more ops
than the slowdown calls for (on ``specs/demo.yaml`` with ``big0`` slowed 2x, 135 of 259 ops, 36 of
them the other way, from ``big1`` back to the slowed ``big0``). Moving an op costs its weights'
migration and disturbs a running deployment, so :func:`fewer_moves` tries to put moved ops back:

1. each group of moves between one pair of devices at once: both ways (a swap), then each
   direction (largest group first), then
2. each remaining move alone (largest migration first), within a deterministic budget of
   ``budget_op_evaluations`` op-schedulings (a function of the problem's size, never of the clock).

A trial placement is predicted by HEFT with every op pinned (the current placement's own
predictor, :class:`planner.scheduling.PlacementStart`) at the measured speeds, its schedule
checked by :func:`solvers.scheduling.validate_schedule`. It is kept when its prediction is at
most ``ceiling``: the re-placement's prediction plus ``1 - keep_gain`` of its predicted gain
(``keep_gain`` 1.0: only reverts that cost nothing). So the re-placement keeps at least
``keep_gain`` of its gain, and every revert is one migration fewer.

Examples
--------
>>> ceiling(1000, 600, 0.95)  # keep 95% of a 400-cycle gain: at most 20 cycles given back
620
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from planner.errors import InternalError
from planner.scheduling import PlacementStart
from solvers.core import SolveResult
from solvers.scheduling import SchedulingProblem, validate_schedule

__all__ = ["ceiling", "fewer_moves", "BUDGET_OP_EVALUATIONS"]

#: Op-schedulings the move-back pass may spend (HEFT trials times ops): about 0.3 s at ~60 µs per
#: op on the reference machine, a small part of a re-plan's budget.
BUDGET_OP_EVALUATIONS = 5_000


def ceiling(current: int, candidate: int, keep_gain: float) -> int:
    """The largest prediction a reverted placement may have: ``candidate`` plus the share of the
    predicted gain ``current - candidate`` that ``keep_gain`` lets go."""
    return candidate + int((1.0 - keep_gain) * max(current - candidate, 0))


def _groups(moved: list[int], start: tuple[int, ...], device_of: tuple[int, ...]) -> list[list[int]]:
    """The moves between two devices both ways (a swap: neither half goes back alone without
    overloading one side), then each direction's, largest first."""
    by_pair: dict[tuple[int, int], list[int]] = {}
    for i in moved:
        by_pair.setdefault((start[i], device_of[i]), []).append(i)
    swaps = [sorted(by_pair[a, b] + by_pair[b, a]) for a, b in sorted(by_pair) if a < b and (b, a) in by_pair]
    return (sorted(swaps, key=lambda g: (-len(g), g[0]))
            + sorted(by_pair.values(), key=lambda g: (-len(g), g[0])))


def fewer_moves(problem: SchedulingProblem, current: tuple[int, ...], best: SolveResult, limit: int,
                weights: Mapping[int, int] | None = None,
                budget_op_evaluations: int = BUDGET_OP_EVALUATIONS) -> tuple[SolveResult, int]:
    """``best`` (a schedule of ``problem`` at the measured speeds) with as many of its moves away
    from ``current`` (device per op) put back as keep its prediction at most ``limit``
    (:func:`ceiling`); returns the result and how many ops went back. ``weights[i]``: op ``i``'s
    migration bytes (the order of single reverts, largest first).

    Examples
    --------
    Two independent 10-cycle ops on two devices, both moved to the other device: putting both back
    costs nothing, so both go back.

    >>> p = SchedulingProblem(((10, 10), (10, 10)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> moved = PlacementStart((1, 0)).solve(p)
    >>> result, back = fewer_moves(p, (0, 1), moved, limit=10)
    >>> result.solution.op_device, back, result.solver_name
    ((0, 1), 2, 'warm-start (moves put back)')
    """
    device_of = tuple(best.solution.op_device)
    moved = [i for i, (a, b) in enumerate(zip(current, device_of)) if a != b]
    trials_left = budget_op_evaluations // max(problem.num_ops, 1)
    kept, back = best, 0
    weights = weights or {}
    candidates = _groups(moved, current, device_of) + [[i] for i in sorted(moved, key=lambda i: (-weights.get(i, 0), i))]
    for group in candidates:
        group = [i for i in group if kept.solution.op_device[i] != current[i]]
        if not group or trials_left <= 0:
            continue
        trials_left -= 1
        trial = list(kept.solution.op_device)
        for i in group:
            trial[i] = current[i]
        result = PlacementStart(tuple(trial)).solve(problem)
        if result.status.has_solution and result.objective <= limit:
            errors = validate_schedule(problem, result.solution)
            if errors:
                raise InternalError("the move-back pass's schedule is invalid:\n  " + "\n  ".join(errors[:20]))
            kept, back = result, back + len(group)
    if back == 0:
        return best, 0
    return replace(kept, solver_name=f"{kept.solver_name} (moves put back)"), back
