"""Joint weight cells: a memory-forced device change priced by the weight it leaves and the
weight it brings together, with cell edges where the segment-run DP's runs run out of room
(LATENCY with memory limits).

Notes
-----
:mod:`~solvers.scheduling.move_weights` and :mod:`~solvers.scheduling.move_arrivals` price a
device change between clean cut ops ``c_j`` (on a) and ``c_(j+1)`` (on b) by cells: ``W_A``
(the held weight of the segment's interior ops on a, in the three-role model of
:func:`~solvers.scheduling.pinned_moves.role_model`) in ``[w_i, w_(i+1))`` costs at least
``T_i``, ``W_B`` (on b) in ``[v_k, v_(k+1))`` at least ``U_k``, and the DP charges the lower
edges ``w_i`` and ``v_k`` to the runs on both sides with the step ``max(T_i, U_k)``. Two
things are relaxed there:

* **the lower edge**: a run with room for ``r`` bytes of ``W_A`` takes any cell whose lower
  edge is at most ``r``, at that cell's step, although its schedules have ``W_A <= r``, which
  can cost much more (the levels are fixed fractions of the least ``W_A`` of a cheapest move);
* **the crossing**: ``max(T_i, U_k)`` is below the least step with both weights in their
  cells at once (little on a *and* little on b leaves the rest on a third device, dearer).

Here each cell is a rectangle ``[w_i, w_(i+1)) x [v_k, v_(k+1))`` with a proven step ``T_ik``:
the proven minimum of the three-role model with ``w_i <= W_A <= w_(i+1) - 1`` and ``v_k <=
W_B <= v_(k+1) - 1`` (every schedule with ``c_j`` on a and ``c_(j+1)`` on b maps to a solution
of that model with the same step or less and the same ``W_A`` and ``W_B``; a schedule whose
weights lie in the cell takes at least ``T_ik`` and leaves at least ``w_i`` on a and ``v_k`` on
b). The cells tile the quadrant, so the options ``(w_i, v_k, T_ik)`` cover every schedule. A
cell starts as the crossing of the two sides' cells (``max(T_i, U_k)``, proven already), and
splitting one in two keeps its step for both halves (each is a subset): any refinement is
sound, whichever levels it uses.

**Where to refine** (:func:`joint_cell_bound`): the DP is traced back (its value must be the
bound's, :func:`traced_changes`); for each device change on its path, the runs on both sides
have some room left (``r_a``, ``r_b`` bytes beyond what else they hold). A cell whose upper
edge lies above that room is split at the first level the run cannot afford, and the half
the path used is proved jointly. Then the DP runs again, until its path uses only proved
cells that its runs fill, or the budget is spent. Measured on ResNet-50 layers (docs/bounds.md).

Cells are kept in the pinned moves' memo under :data:`JOINT_CELLS`, per move proof and
interior weights (:func:`~solvers.scheduling.move_weights.weight_cell_keys`, the two sides'
key too: two segments of one shape but other weights never share cells).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from solvers.budget import Budget
from solvers.core import SolveOptions, Status
from solvers.cpsat_support import integer_objective_bound
from solvers.scheduling.move_arrivals import ARRIVALS, weight_on_sink
from solvers.scheduling.move_weights import weight_cell_keys, weight_on_source
from solvers.scheduling import segment_runs
from solvers.scheduling.pinned_moves import (WEIGHT_CELLS, PinnedMoves, move_floor_tables, move_proof_key,
                                             pinned_moves, role_model)
from solvers.scheduling.problem import SchedulingProblem

__all__ = ["JOINT_CELLS", "UNIT_COUNT", "JointCells", "Change", "traced_changes", "joint_options", "joint_cell_bound"]

JOINT_CELLS = "joint cells"  # the memo's entry: (move proof key, interior weights) -> JointCells

# Rounds of trace, split and prove at most (each round proves at least one cell or stops).
_MAX_ROUNDS = 60
# The units a memory-limited pool is counted in here: 2 GiB in 256-KiB units. The DP's 1,024
# (2-MiB units) round each weight down by up to a unit, about 20 weights a run: on ResNet-50
# layers the DP's path then overflowed an accelerator by 0.3 MB, and the bound was 915.86 ms
# against 930.26 with these (0.5 -> 0.6 s of CPU for the stage, the numpy DP vectorised over units).
UNIT_COUNT = 8192
# Charged per traced DP and middle segment (the pinned moves' rate, twice: it records states).
_DP_UNITS_PER_SEGMENT = 2 * 0.07 * 0.0015


@dataclass
class JointCells:
    """The cells of one pinned move (module Notes): ``source`` and ``sink`` are the sorted lower
    edges of ``W_A`` and ``W_B`` (the first 0, the last cell open above), ``step[(i, k)]`` the
    proven step of cell ``(i, k)`` and ``proved`` the cells proved jointly since their last split.

    Examples
    --------
    >>> c = JointCells.crossed([(0, 5.0), (4, 3.0)], [(0, 6.0), (2, 3.0)])
    >>> c.options()
    [(0, 0, 6.0), (0, 2, 5.0), (4, 0, 6.0), (4, 2, 3.0)]
    >>> _ = c.split(0, 7); c.source, c.step[(2, 1)], c.options()[-1]
    ([0, 4, 7], 3.0, (7, 2, 3.0))
    """

    source: list[int]
    sink: list[int]
    step: dict[tuple[int, int], float]
    proved: set = field(default_factory=set)

    @classmethod
    def crossed(cls, source: Sequence[tuple[int, float]], sink: Sequence[tuple[int, float]]) -> "JointCells":
        """The cells of the two sides' options, crossed (``max`` of the two steps)."""
        return cls([w for w, _ in source], [v for v, _ in sink],
                   {(i, k): max(float(t), float(u)) for i, (_, t) in enumerate(source) for k, (_, u) in enumerate(sink)})

    def options(self) -> list[tuple[int, int, float]]:
        """``(weight left on a, weight brought onto b, step)`` per cell, for the DP."""
        return [(self.source[i], self.sink[k], self.step[(i, k)]) for i in range(len(self.source))
                for k in range(len(self.sink))]

    def upper(self, side: int, index: int) -> float:
        """The first weight above cell ``index`` of ``side`` (0: W_A, 1: W_B); inf for the last."""
        levels = self.sink if side else self.source
        return levels[index + 1] if index + 1 < len(levels) else math.inf

    def index(self, side: int, edge: int) -> int:
        """The index of the cell of ``side`` whose lower edge is ``edge``."""
        return (self.sink if side else self.source).index(edge)

    def split(self, side: int, level: int) -> int:
        """Split the cell of ``side`` that holds ``level`` at it (both halves keep their steps;
        neither is proved); the index of the lower half."""
        levels = self.sink if side else self.source
        i = bisect.bisect_right(levels, level) - 1
        if levels[i] == level:
            return i
        levels.insert(i + 1, level)
        moved: dict[tuple[int, int], float] = {}
        for (a, b), t in self.step.items():
            x = a if side == 0 else b
            if x > i:
                x += 1
            key = (x, b) if side == 0 else (a, x)
            moved[key] = t
            if (a if side == 0 else b) == i:
                moved[(i + 1, b) if side == 0 else (a, i + 1)] = t
        self.step = moved
        self.proved = {(a, b) for a, b in self.proved if (a if side == 0 else b) < i} | \
            {((a + 1, b) if side == 0 else (a, b + 1)) for a, b in self.proved if (a if side == 0 else b) > i}
        return i


@dataclass(frozen=True, slots=True)
class Change:
    """A device change on the traced DP's path: at middle segment ``middle`` (between cut ops
    ``middle`` and ``middle + 1``) from pool ``source`` to pool ``sink`` with option ``option``
    (an index into the pool pair's options); ``source_units`` the units the run it leaves
    holds besides the option's weight, ``sink_units`` the units the run it opens holds at its
    end besides the option's weight."""

    middle: int
    source: int
    sink: int
    option: int
    source_units: int
    sink_units: int


def traced_changes(terms: tuple, options: Sequence[dict | None] | None,
                   ends: list | None = None) -> tuple[float, list[Change]]:
    """The run DP of :func:`~solvers.scheduling.segment_runs.segment_run_bound` over ``terms``
    (its ``_run_terms``) with ``move_options`` ``options`` (three-element options), traced
    back: ``(value, device changes on the path)``; ``(inf, [])`` without a finite path.

    One state per pool and units held by the open run (a run's start does not matter to what
    follows), so the value is the bound's with ``unit_count=UNIT_COUNT``
    (``tests/solvers/test_joint_cells.py`` checks it).
    ``ends``, when given, receives the path's ``(pool, end)`` of each cut op, first to last.
    """
    last = terms[3]
    units, history, backs = _forward(terms, options)
    cur = history[-1]
    finals = [float(row.min()) + float(last[b]) for b, row in enumerate(cur)]
    b = int(np.argmin(finals))
    if not math.isfinite(finals[b]):
        return math.inf, []
    u = int(np.argmin(cur[b]))
    changes: list[Change] = []
    run_end = u
    if ends is not None:
        ends.append((b, float(cur[b][u])))
    for j in range(len(history) - 1, 0, -1):
        src, src_u, opt = backs[j - 1][b]
        a, prev, o = int(src[u]), int(src_u[u]), int(opt[u])
        if o != -1:  # a device change (a stay keeps the run, one cut op earlier)
            wb = options[j - 1][(a, b)][o][1] if o >= 0 else 0
            changes.append(Change(j - 1, a, b, max(o, -1), prev, run_end - units(wb, b)))
            b, run_end = a, prev
        u = prev
        if ends is not None:
            ends.append((b, float(history[j - 1][b][u])))
    if ends is not None:
        ends.reverse()
    return finals[int(np.argmin(finals))], changes[::-1]


def _forward(terms: tuple, options: Sequence[dict | None] | None):
    """The forward pass of :func:`traced_changes`: ``(units, per cut op the best end per pool
    and units, per step and pool the back pointers (from pool, from units, option: -1 a stay,
    -2 a plain move))``."""
    pools, first, moves, _, stays, own, total = terms[:7]
    cap, unit_count = pools.capacity, UNIT_COUNT
    limited = [0 < c < total for c in cap]
    size = [unit_count + 1 if limited[b] else 1 for b in range(pools.size)]

    def units(w: int, b: int) -> int:
        return w * unit_count // cap[b] if limited[b] else 0

    cur = []
    for b in range(pools.size):
        row = np.full(size[b], np.inf)
        if units(own[0], b) < size[b]:
            row[units(own[0], b)] = float(first[b])
        cur.append(row)
    history, backs = [cur], []
    for j in range(1, len(own)):
        choices = options[j - 1] if options else None
        prefix = [np.minimum.accumulate(row) for row in cur]
        arg = [_prefix_argmin(row) for row in cur]
        nxt, back = [], []
        for b in range(pools.size):
            row = np.full(size[b], np.inf)
            src, src_u, opt = np.full(size[b], -1), np.full(size[b], -1), np.full(size[b], -1)
            for w, t, *_ in stays[b][j - 1]:
                shift = units(w + own[j], b)
                if shift >= size[b] or not math.isfinite(t):
                    continue
                cand = cur[b][:size[b] - shift] + float(t)
                idx = np.flatnonzero(cand < row[shift:])
                row[shift + idx] = cand[idx]
                src[shift + idx], src_u[shift + idx], opt[shift + idx] = b, idx, -1
            for a in range(pools.size):
                listed = (choices or {}).get((a, b))
                for o, (wa, wb, t) in enumerate(listed or [(0, 0, 0.0)]):
                    ua, ub = units(wa, a), units(own[j], b) + units(wb, b)
                    step = max(float(t), float(moves[j - 1][a, b]))
                    if ua >= size[a] or ub >= size[b] or not math.isfinite(step):
                        continue
                    top = size[a] - 1 - ua
                    if float(prefix[a][top]) + step < row[ub]:
                        row[ub] = float(prefix[a][top]) + step
                        src[ub], src_u[ub], opt[ub] = a, int(arg[a][top]), o if listed else -2
            nxt.append(row)
            back.append((src, src_u, opt))
        cur = nxt
        history.append(cur)
        backs.append(back)
    return units, history, backs


def _prefix_argmin(row: np.ndarray) -> np.ndarray:
    """Per index, where the prefix minimum of ``row`` up to it is first attained.

    Examples
    --------
    >>> _prefix_argmin(np.array([np.inf, 3.0, 5.0, 3.0, 1.0])).tolist()
    [0, 1, 1, 1, 4]
    """
    prefix = np.minimum.accumulate(row)
    fresh = np.ones(len(row), dtype=bool)
    fresh[1:] = row[1:] < prefix[:-1]
    return np.maximum.accumulate(np.where(fresh, np.arange(len(row)), 0))


def joint_options(moves: PinnedMoves, keys: Sequence[tuple], memo: dict, cells: dict,
                  cell_keys: Sequence[tuple]) -> tuple[list[dict | None], list[dict | None]]:
    """Per middle segment, ``segment_run_bound``'s ``move_options`` from the joint cells (a
    pool pair only when every device pair of it is settled with a finite minimum; a job without
    cells yet gets them from the two sides' options in ``memo``, or its minimum alone), and per
    middle segment and pool pair, the (cells key, the cell's lower edges) of each option (edges,
    not indices: a split renumbers the cells above it). ``keys``: the jobs' proof keys;
    ``cell_keys``: their :func:`~solvers.scheduling.move_weights.weight_cell_keys`, which key the
    joint cells and the two sides' cells they start from."""
    tables: list[dict | None] = [None] * moves.num_middles
    origins: list[dict | None] = [None] * moves.num_middles
    by_pair: dict[tuple[int, tuple[int, int]], list[int]] = {}
    for i, (j, pair, _) in enumerate(moves.jobs):
        by_pair.setdefault((j, pair), []).append(i)
    source_cells, sink_cells = memo.get(WEIGHT_CELLS, {}), memo.get(ARRIVALS, {})
    for (j, pair), jobs in by_pair.items():
        found, where = [], []
        for i in jobs:
            settled = memo.get(keys[i], (0.0, False))
            if not settled[1] or not math.isfinite(settled[0]):
                break
            key = cell_keys[i]
            if key not in cells:
                alone = [(0, float(settled[0]))]
                cells[key] = JointCells.crossed(source_cells.get(key) or alone, sink_cells.get(key) or alone)
            grid = cells[key]
            found += grid.options()
            where += [(key, (a, b)) for a in grid.source for b in grid.sink]
        else:
            tables[j] = tables[j] or {}
            tables[j][pair] = found
            origins[j] = origins[j] or {}
            origins[j][pair] = where
    return tables, origins


def _prove_cell(moves: PinnedMoves, job: int, grid: JointCells, cell: tuple[int, int], inner: Sequence[int],
                options: SolveOptions, budget: Budget, amount: float) -> None:
    """Prove the step of ``cell`` of ``grid`` (job ``job``'s cells) within ``amount`` units:
    the three-role model with both weights inside the cell, minimised; the larger of that and
    the cell's step is kept (inf: no schedule has its weights there)."""
    built = role_model(moves.jobs[job][2])
    on_a, _ = weight_on_source(built, inner)
    on_b, _ = weight_on_sink(built, inner)
    for side, weight in ((0, on_a), (1, on_b)):
        index = cell[side]
        lower = (grid.sink if side else grid.source)[index]
        upper = grid.upper(side, index)
        if lower > 0:
            built.model.add(weight >= lower)
        if math.isfinite(upper):
            built.model.add(weight <= int(upper) - 1)
    status, solver, _ = budget.run_cpsat(built.model, replace(options, num_workers=1), amount, None,
                                         interleave=False)
    if status is Status.INFEASIBLE:
        grid.step[cell] = math.inf
    elif status in (Status.OPTIMAL, Status.FEASIBLE):
        grid.step[cell] = max(grid.step[cell], float(integer_objective_bound(solver)))
    grid.proved.add(cell)


def _room_level(units_held: int, capacity: int) -> int:
    """The least weight a run holding ``units_held`` units (of :data:`UNIT_COUNT`) besides it cannot take."""
    unit_count = UNIT_COUNT
    return -(-(unit_count - units_held + 1) * capacity // unit_count)


def _prove_cells(moves: PinnedMoves, todo: Sequence[tuple[tuple, tuple[int, int]]], cells: dict, job_of: dict,
                 options: SolveOptions, budget: Budget) -> int:
    """Prove the cells of ``todo`` ((cells key, lower edges), in order), each within what is
    left of ``budget`` over the next four; how many were tried."""
    tried = 0
    for done, (key, edges) in enumerate(todo):
        if budget.left <= 0 or budget.wall_expired():
            break
        grid = cells[key]
        _prove_cell(moves, job_of[key], grid, (grid.index(0, edges[0]), grid.index(1, edges[1])), key[1], options,
                    budget, budget.left / min(len(todo) - done, 4))
        tried += 1
    return tried


def _split_on_path(changes: Sequence[Change], origins: Sequence[dict | None], cells: dict, limited: Sequence[bool],
                   capacity: Sequence[int]) -> list[tuple[tuple, tuple[int, int]]]:
    """Split each cell the traced path uses where its runs have no room left (module Notes,
    **Where to refine**) and return the cells the path now uses that are not proved, as
    (cells key, lower edges), each once, in path order."""
    todo = []
    for change in changes:
        where = (origins[change.middle] or {}).get((change.source, change.sink))
        if where is None or change.option < 0:
            continue
        key, edges = where[change.option]
        grid = cells[key]
        for side, pool, held_units in ((0, change.source, change.source_units), (1, change.sink, change.sink_units)):
            if not limited[pool]:
                continue
            level = _room_level(held_units, capacity[pool])
            if level < grid.upper(side, grid.index(side, edges[side])):
                grid.split(side, level)
        cell = (grid.index(0, edges[0]), grid.index(1, edges[1]))
        if cell not in grid.proved:
            todo.append((key, (grid.source[cell[0]], grid.sink[cell[1]])))
    return list(dict.fromkeys(todo))


def joint_cell_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                     memo: dict) -> tuple[int, dict]:
    """The clean segment runs with the pinned moves priced by joint weight cells, refined
    where the DP's path goes (module Notes), within ``budget``: ``(bound, stats)``, ``(0, {})``
    where no settled pinned move has a memory-limited side.

    ``memo`` is the pinned moves' memo; call this after
    :func:`~solvers.scheduling.move_arrivals.move_arrival_bound` (it starts from both sides'
    cells, and never goes below that bound).

    Examples
    --------
    The dear-join fork of :func:`~solvers.scheduling.move_arrivals.move_arrival_bound`: both
    sides' options reach the optimum already, and the joint cells keep it.

    >>> from solvers.budget import SCHEDULING
    >>> from solvers.scheduling.move_arrivals import move_arrival_bound
    >>> from solvers.scheduling.pinned_moves import pinned_move_bound
    >>> links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    >>> p = SchedulingProblem(((1, 1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1),
    ...                       links, ((1,) * 3, (1,) * 3, (10,) * 3, (10,) * 3), device_memory_bytes=(6, 6, 6),
    ...                       op_resident_bytes=(5, 1, 1, 5), device_class=(0, 0, 0))
    >>> memo, one = {}, SolveOptions(num_workers=1)
    >>> _ = pinned_move_bound(p, one, Budget.start(1, SCHEDULING), memo)
    >>> _ = move_arrival_bound(p, one, Budget.start(1, SCHEDULING), memo)
    >>> joint_cell_bound(p, one, Budget.start(1, SCHEDULING), memo)[0]
    13
    """
    moves = pinned_moves(problem)
    if moves is None:
        return 0, {}
    keys = [move_proof_key(pinned) for _, _, pinned in moves.jobs]
    if not any(memo.get(key, (0.0, False))[1] for key in keys):
        return 0, {}
    cells = memo.setdefault(JOINT_CELLS, {})
    cell_keys = weight_cell_keys(moves, keys)
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    terms = segment_runs._run_terms(moves.pruned, moves.segments, moves.floors, moves.cuts, tables, with_masks=False)
    if terms is None:
        return 0, {}
    total = terms[6]
    limited = [0 < c < total for c in moves.pools.capacity]
    job_of: dict[tuple, int] = {}
    for i, key in enumerate(cell_keys):
        job_of.setdefault(key, i)
    closed, rounds, proofs = False, 0, 0
    while rounds < _MAX_ROUNDS:
        if budget.left <= 0 or budget.wall_expired():
            break
        rounds += 1
        joint, origins = joint_options(moves, keys, memo, cells, cell_keys)
        _, changes = traced_changes(terms, joint)
        budget.charge(budget.scale(_DP_UNITS_PER_SEGMENT * moves.num_middles))
        todo = _split_on_path(changes, origins, cells, limited, moves.pools.capacity)
        if not todo:
            closed = True
            break
        proofs += _prove_cells(moves, todo, cells, job_of, options, budget)
    joint, _ = joint_options(moves, keys, memo, cells, cell_keys)
    value = segment_runs.segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts,
                                           move_floors=tables, move_options=joint, unit_count=UNIT_COUNT)
    stats = {"joint_cell_bound": value, "joint_cell_rounds": rounds, "joint_cell_proofs": proofs,
             "joint_cells_closed": closed}
    return value, stats
