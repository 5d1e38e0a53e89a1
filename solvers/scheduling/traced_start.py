"""A start candidate from the bound's own runs: the segment-run DP with the pinned moves and both
sides' weight options, traced back, realised as a placement and scheduled.

Notes
-----
**Why.** On the dnn-partitioning ResNet-50 layer graph the plan stages (contiguous split,
placement LNS, module re-solves) stall near 995 ms while the bound is 903.54 ms. The bound's
DP (:mod:`~solvers.scheduling.segment_runs` over the clean cut ops, each device change priced by
its pinned move, :mod:`~solvers.scheduling.pinned_moves`, with the weight a change leaves on its
source, :mod:`~solvers.scheduling.move_weights`, and brings onto its sink,
:mod:`~solvers.scheduling.move_arrivals`) is a placement that is cheap in exactly the terms the
bound counts; realised and scheduled exactly it is a 957.73-ms plan (``benchmarks/dnn_runs.py``,
session 13). :mod:`~solvers.scheduling.run_start` traces the DP without the weight options and
puts a change's interior on one side: its placements sequence to 1,470 ms there.

**Steps** (:func:`traced_start`).

1. *Trace* (:func:`traced_runs`). The DP over the clean cut ops with Pareto-pruned states
   ``(pool, run start, weight units)``, walked back: its runs (cut ops on one device each), the
   option each change took and the interior ops each stay keeps. Its value equals the bound's
   (tested).
2. *Realise* (:func:`realised_placement`). Each run on a fresh device of its pool, its cut ops
   and the interior ops its stays keep there (the others on spare devices, below); each
   change's interior by the three-role model of its pinned move
   (:func:`~solvers.scheduling.pinned_moves.role_model`) with the weight on the two devices at
   most what their runs leave (on the sink, less what the DP's next change leaves there:
   :func:`_left_behind`), shortest first, then least weight on the memory-limited sides; the
   ops of role E, and those a stay sends away, each branch on its own device no run uses
   (:func:`spread_helpers`: role E runs its ops in parallel).
3. *Schedule.* HEFT with the placement fixed and its own ranks, then, where that is within
   :data:`EXACT_MARGIN` of the incumbent, CP-SAT with the placement fixed from it
   (:func:`fixed_schedule`). The shortest valid schedule is the candidate; the caller keeps it
   only when it beats its incumbent, and the placement LNS and the module re-solves start
   from it.

**Variants.** First the DP on the options the memo has (the pinned moves and the source side's
weight cells, proved by the bound stages before). Only where that realises within
:data:`EXACT_MARGIN` of the incumbent are the sink-side options proved into the memo
(:func:`~solvers.scheduling.move_arrivals.move_arrival_bound`, the proofs the leftover bound
stage would make: it finds them done) and :data:`VARIANTS` traced: the bound's own DP, and DPs
whose weight cells are charged at their upper edges with weights rounded up. A cell's lower edge
is what the bound may charge; a schedule in the cell may need up to its upper edge, and a run
that leaves that room lets its change be realised at the cell's step. Runs one variant already
gave are not realised again, nor a change of the same devices and room solved twice.

**Measured** (2026-11-29, ``PLAN_NET_SLOWDOWN=20``, load 12-18 on 2 cores). ResNet-50 layers in
the scheduler at the benchmark's 60 s: the bound's runs realise to 957.73 ms (HEFT 963.28, then
CP-SAT with the placement fixed, proved optimal for it), the source cells' upper edges to 947.19
(HEFT 952.74), both edges to 1,031.56; 0.10 units; the placement LNS, the module re-solves and
the stitched parts after it keep 947.19 (was 994.85; bound 903.54, gap 4.61%). Inception-V3
layers: the first realisation sequenced to 1,365.63 against the incumbent's 1,132.10 while role
E's branches shared one helper; a helper per branch and the room kept for the next change give
912.29 (session 16; docs/bounds.md, "Inception-V3 layers: the DP's path realised"). docs/bounds.md
(session 14) has the rest.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Sequence

from solvers.budget import Budget, build_units
from solvers.core import SolveOptions, Status
from solvers.scheduling.cpsat.extraction import checked_solution
from solvers.scheduling.cpsat.hints import add_hint
from solvers.scheduling.cpsat.model import build
from solvers.scheduling.cpsat.search import run as run_cpsat
from solvers.scheduling.heft import PlacedRanks, heft_schedule_within
from solvers.scheduling.move_arrivals import ARRIVALS, combined_options, move_arrival_bound, weight_on_sink
from solvers.scheduling.move_weights import held_by_op, middle_segments, weight_on_source
from solvers.scheduling.pinned_moves import (WEIGHT_CELLS, PinnedMoves, move_floor_tables, move_proof_key,
                                             pinned_move_problem, pinned_moves, role_model)
from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.resident import ResidentLedger
from solvers.scheduling.segment_runs import WEIGHT_UNITS, run_terms
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["SOURCE", "ARRIVAL_UNITS", "ROLE_UNITS", "EXACT_UNITS", "EXACT_MARGIN", "VARIANTS", "upper_cells",
           "traced_runs", "run_devices", "helper_device", "spread_helpers", "role_split", "whole_problem_moves",
           "realised_placement", "fixed_schedule", "traced_start"]

SOURCE = "traced runs"  # the hint source the scheduler reports for this candidate

ARRIVAL_UNITS = 0.1  # at most for the sink-side proofs (ResNet-50 layers: 0.05 units for all 14)
ROLE_UNITS = 0.01  # at most per change's role solves (a change of the same devices and room is solved once)

_ROLE_A, _ROLE_B, _ROLE_E = 0, 1, 2

# The exact sequencing of a realisation: at most this many units, and only where HEFT's schedule
# of it is within this fraction of the incumbent (ResNet-50 layers: 963.28 and 952.74 against
# the contiguous split's 1,063.53, proved in 0.01 units; Inception-V3 layers: 1,288.84 against
# 1,132.10, where 0.25 units gained nothing and the module re-solves after it need the budget).
EXACT_UNITS = 0.1
EXACT_MARGIN = 0.05

# The DPs traced (name, source cells at their upper edges, sink cells at theirs, weights rounded
# up): the bound's own, and runs that leave a change the room its cell may need (ResNet-50
# layers: the bound's runs realise to 957.73 ms, the source side's upper edges to 947.19).
VARIANTS = (("bound", False, False, False), ("upper source", True, False, True), ("upper sink", False, True, True),
            ("upper both", True, True, True), ("rounded up", False, False, True),
            ("upper source, down", True, False, False))


def _step_states(cur: dict, j: int, stays, moves, options, own, units, caps) -> dict:
    """The DP's states at cut op j from those at j - 1: ``(pool, run start, units) -> (time,
    back pointer)``, Pareto-pruned per pool over (units, time)."""
    nxt: dict = {}

    def put(key, value, back):
        if key not in nxt or value < nxt[key][0]:
            nxt[key] = (value, back)

    for (b, s, u), (t, _) in cur.items():
        for w, step, mask in stays[b][j - 1]:
            uu = u + units(w + own[j], b)
            if uu <= caps[b] and math.isfinite(step):
                put((b, s, uu), t + step, ("stay", (b, s, u), mask))
    for (a, s, u), (t, _) in cur.items():
        for b in range(len(caps)):
            choices = (options or {}).get((a, b)) or [(0, 0, 0.0)]
            for option in choices:
                wa, wb, step = option if len(option) == 3 else (option[0], 0, option[1])
                ub = units(own[j], b) + units(wb, b)
                step = max(float(step), float(moves[j - 1][a, b]))
                if u + units(wa, a) <= caps[a] and ub <= caps[b] and math.isfinite(step):
                    put((b, j, ub), t + step, ("move", (a, s, u), (wa, wb, step)))
    kept, best = {}, {}
    for key in sorted(nxt, key=lambda k: (k[0], k[2], nxt[k][0])):
        if nxt[key][0] < best.get(key[0], math.inf):
            best[key[0]] = nxt[key][0]
            kept[key] = nxt[key]
    return kept


def upper_cells(cells: dict) -> dict:
    """Weight cells ``[(lower edge, step), ...]`` (:mod:`~solvers.scheduling.move_weights`) with
    each cell's weight at its upper edge (the next cell's lower edge less one; the last cell's
    lower edge is a solution's weight at the move's minimum): the weight a schedule in the cell
    may need, for runs that leave room for it.

    Examples
    --------
    >>> upper_cells({"m": [(0, 9.0), (10, 9.0), (20, 5.0)], "n": None})
    {'m': [(9, 9.0), (19, 9.0), (20, 5.0)], 'n': None}
    """
    return {key: None if found is None else [(found[k + 1][0] - 1 if k + 1 < len(found) else w, t)
                                             for k, (w, t) in enumerate(found)]
            for key, found in cells.items()}


def traced_runs(moves: PinnedMoves, tables, options, round_up: bool = False) -> tuple[float, list[list]]:
    """The DP of ``segment_run_bound(moves.pruned, ..., move_floors=tables,
    move_options=options)`` traced back: ``(value, runs)``, each run ``[pool, first cut index,
    last cut index, the option of the change into it or None, per middle segment inside it the
    mask of interior ops its stay keeps]``; ``(inf, [])`` when it has none.
    ``round_up``: weights in units rounded up, not down as the bound does (runs that fit)."""
    terms = run_terms(moves.pruned, moves.segments, moves.floors, moves.cuts, tables, with_masks=True)
    if terms is None:
        return math.inf, []
    pools, first, mv, last, stays, own, total, _ = terms
    limited = [0 < c < total for c in pools.capacity]
    caps = [WEIGHT_UNITS if limited[b] else 0 for b in range(pools.size)]

    def units(w: int, b: int) -> int:
        if not limited[b]:
            return 0
        return -(-w * WEIGHT_UNITS // pools.capacity[b]) if round_up else w * WEIGHT_UNITS // pools.capacity[b]

    cur = {(b, 0, units(own[0], b)): (float(first[b]), None) for b in range(pools.size)
           if units(own[0], b) <= caps[b] and math.isfinite(first[b])}
    history = [cur]
    for j in range(1, len(own)):
        cur = _step_states(cur, j, stays, mv, options[j - 1] if options else None, own, units, caps)
        history.append(cur)
    if not cur:
        return math.inf, []
    value, key = min((t + float(last[k[0]]), k) for k, (t, _) in cur.items())
    runs: list[list] = []
    kept: dict[int, tuple[bool, ...]] = {}  # per middle segment inside a run, the interior ops its stay keeps
    for j in range(len(own) - 1, -1, -1):
        _, back = history[j][key]
        if back is None or back[0] == "move":
            runs.append([key[0], j, None, back[2] if back else None, None])
        else:
            kept[j - 1] = tuple(bool(x) for x in back[2])
        if back is None:
            break
        key = back[1]
    runs.reverse()
    for k, run in enumerate(runs):
        run[2] = runs[k + 1][1] - 1 if k + 1 < len(runs) else len(own) - 1
        run[4] = [kept[j] for j in range(run[1], run[2])]
    return value, runs


def run_devices(moves: PinnedMoves, runs: Sequence[Sequence]) -> list[int] | None:
    """A fresh device of its pool per run (the DP checks each run's memory on a device of its
    own), in pool order; None when a pool has fewer devices than runs."""
    fresh = {k: list(pool) for k, pool in enumerate(moves.pools.pools)}
    out = []
    for run in runs:
        if not fresh[run[0]]:
            return None
        out.append(fresh[run[0]].pop(0))
    return out


def role_split(problem: SchedulingProblem, moves: PinnedMoves, j: int, a: int, b: int, room: tuple[float, float],
               options: SolveOptions, budget: Budget, amount: float, weigh_both: bool = False) -> list[int] | None:
    """The roles of middle segment j's interior ops for the change a -> b: the three-role model's
    shortest schedule with at most ``room`` (bytes on a, on b) in roles A and B, then its least
    weight at that makespan on the limited sides (on both with ``weigh_both``, as the joint-cell
    path takes it); None when no solution was found in ``amount``."""
    held = held_by_op(moves)
    sub, ops = moves.segments[middle_segments(moves)[j]]
    pinned = pinned_move_problem(sub, a, b)
    built = role_model(pinned) if pinned is not None else None
    if built is None:
        return None
    inner = [held[o] for o in ops[1:-1]]
    sides = (weight_on_source(built, inner)[0], weight_on_sink(built, inner)[0])
    for side, cap in zip(sides, room):
        if math.isfinite(cap):
            built.model.add(side <= int(cap))
    single = replace(options, num_workers=1)
    status, solver, _ = budget.run_cpsat(built.model, single, amount / 2, None, interleave=False)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return None
    roles = _roles(built, solver, len(ops))
    built.model.add(built.makespan <= int(round(solver.objective_value)))
    built.model.minimize(sum(side for side, cap in zip(sides, room) if weigh_both or math.isfinite(cap)))
    status, solver, _ = budget.run_cpsat(built.model, single, amount / 2, None, interleave=False)
    return _roles(built, solver, len(ops)) if status in (Status.OPTIMAL, Status.FEASIBLE) else roles


def _roles(built: Any, solver: Any, n: int) -> list[int]:
    return [next(r for r in range(3) if built.role[i][r] is not None and solver.value(built.role[i][r]))
            for i in range(1, n - 1)]


def realised_placement(problem: SchedulingProblem, moves: PinnedMoves, runs: Sequence[Sequence],
                       options: SolveOptions, budget: Budget, solved: dict | None = None) -> tuple[int, ...] | None:
    """A placement of ``moves.pruned`` (every op of ``problem`` kept) from the traced runs
    (module Notes, step 3); None when the devices, a role solve or the memory do not allow one.
    ``solved``: the role splits already made, by change and room (filled here)."""
    solved = {} if solved is None else solved
    devices = run_devices(moves, runs)
    if devices is None:
        return None
    cut_ops, middles = list(moves.cuts), middle_segments(moves)
    dev: list[int | None] = [None] * problem.num_ops
    for (_, first, last, _, kept), d in zip(runs, devices):
        for j in range(first, last + 1):
            dev[cut_ops[j]] = d
        for j in range(first, last):
            for o, keep in zip(moves.segments[middles[j]][1][1:-1], kept[j - first]):
                dev[o] = d if keep else None
    for o in range(problem.num_ops):
        if o < cut_ops[0] or o > cut_ops[-1]:
            dev[o] = devices[0] if o < cut_ops[0] else devices[-1]
    used = ResidentLedger(problem, [-1 if d is None else d for d in dev])  # a shared tensor once a device
    helpers = [d for pool in moves.pools.pools for d in pool if d not in devices]
    for (_, first, last, _, kept) in runs:  # what a stay sends away: each branch on its own spare
        for j in range(first, last):
            away = [o for o, keep in zip(moves.segments[middles[j]][1][1:-1], kept[j - first]) if not keep]
            if not _placed_apart(problem, helpers, away, used, dev):
                return None

    def room(d: int) -> float:
        cap = problem.memory_bytes(d)
        return cap - used.held[d] if 0 < cap < sum(problem.resident_bytes(o) for o in range(problem.num_ops)) else math.inf

    changes = len(runs) - 1
    for k in range(changes):
        j, a, b = runs[k][2], devices[k], devices[k + 1]
        key = (j, a, b, room(a), room(b) - _left_behind(runs, k + 2))
        if key not in solved:
            solved[key] = role_split(problem, moves, j, a, b, key[3:], options, budget,
                                      min(ROLE_UNITS, max(0.0, budget.left) / (changes - k)))
        roles = solved[key]
        if roles is None:
            return None
        ops = moves.segments[middles[j]][1][1:-1]
        if not _placed_apart(problem, helpers, [o for o, r in zip(ops, roles) if r == _ROLE_E], used, dev):
            return None
        for o, r in zip(ops, roles):
            if r != _ROLE_E:
                dev[o] = (a, b)[r]
                used.add((o,), dev[o])
    if any(d is None for d in dev) or any(0 < problem.memory_bytes(d) < used.held[d] for d in range(problem.num_devices)):
        return None
    if any(problem.durations_cycles[o][d] < 0 for o, d in enumerate(dev)):
        return None
    return tuple(int(d) for d in dev)


def _placed_apart(problem: SchedulingProblem, helpers: Sequence[int], ops: Sequence[int], used: ResidentLedger,
                  dev: list) -> bool:
    """Each branch of ``ops`` (see :func:`spread_helpers`) on its own helper: ``dev`` and
    ``used`` updated; False when a branch fits no helper."""
    found = spread_helpers(problem, helpers, ops, used)
    if found is None:
        return False
    for o in ops:
        dev[o] = found[o]
        used.add((o,), found[o])
    return True


def spread_helpers(problem: SchedulingProblem, helpers: Sequence[int], ops: Sequence[int],
                   used: ResidentLedger) -> dict[int, int] | None:
    """A device per op of ``ops`` (what a change or a stay sends away from its run devices):
    each branch (the ops joined by the problem's edges among them) on its own device of
    ``helpers``, the one that runs the branch fastest and holds its weights beside what
    ``used`` holds there (a shared tensor once); None when a branch fits none.

    Why: the three-role model (:func:`~solvers.scheduling.pinned_moves.role_model`) runs the
    ops of role E in parallel with free edges between them, so every branch on a device of
    its own (distinct links from the run devices to each) is what its step prices; all of
    them on one helper serialise (Inception-V3 layers: 1,365.63 ms against 939.86 by HEFT).
    A helper is free again at the next change (the changes of a chain follow each other).

    Examples
    --------
    Ops 1 and 2 form one branch, op 3 another: two helpers, the branch whole on one.

    >>> p = SchedulingProblem(((1, 1, 1, 1),) * 5, ((0, 1, 1), (1, 2, 1), (0, 3, 1), (2, 4, 1), (3, 4, 1)),
    ...                       (1, 1, 1, 1), ((-1, 0, 1, 2), (3, -1, 4, 5), (6, 7, -1, 8), (9, 10, 11, -1)),
    ...                       ((1,) * 12,) * 5)
    >>> spread_helpers(p, [2, 3], [1, 2, 3], ResidentLedger(p))
    {1: 2, 2: 2, 3: 3}
    >>> spread_helpers(p, [2], [1, 2, 3], ResidentLedger(p)) is None
    True
    """
    inside, found = set(ops), {}
    near: dict[int, list[int]] = {o: [] for o in ops}
    for u, v, *_ in problem.edges:
        if u in inside and v in inside:
            near[u].append(v)
            near[v].append(u)
    taken: set[int] = set()
    for o in ops:
        if o in found:
            continue
        branch, stack = [o], [o]
        found[o] = -1
        while stack:
            for x in near[stack.pop()]:
                if x not in found:
                    found[x] = -1
                    branch.append(x)
                    stack.append(x)
        device = _spare(problem, [d for d in helpers if d not in taken], branch, used)
        if device is None:
            return None
        taken.add(device)
        found.update((x, device) for x in branch)
    return found


def _left_behind(runs: Sequence[Sequence], k: int) -> int:
    """The weight the change into run ``k`` leaves on its source as the DP priced it (its
    option's first entry; 0 for a plain move or past the last run): the room a change into
    that source's run keeps free for it, so both changes take the weights the DP charged.

    Examples
    --------
    >>> runs = [[0, 0, 1, None, [()]], [0, 2, 2, (0, 0, 9.0), []], [0, 3, 4, (7, 2, 5.0), [()]]]
    >>> _left_behind(runs, 2), _left_behind(runs, 1), _left_behind(runs, 3)
    (7, 0, 0)
    """
    option = runs[k][3] if k < len(runs) else None
    return int(option[0]) if option else 0


def _spare(problem: SchedulingProblem, helpers: list[int], ops: Sequence[int], used: ResidentLedger) -> int | None:
    """The device no run uses that runs every op of ``ops`` fastest and holds their weights
    (with what ``used`` holds there, a shared tensor once)."""
    fits = [d for d in helpers if all(problem.durations_cycles[o][d] >= 0 for o in ops)
            and (not problem.memory_bytes(d) or used.held[d] + used.added(ops, d) <= problem.memory_bytes(d))]
    return min(fits, key=lambda d: (sum(problem.durations_cycles[o][d] for o in ops), d), default=None)


def helper_device(problem: SchedulingProblem, helpers: list[int], ops: Sequence[int],
                  used: ResidentLedger) -> int | None:
    """The first device no run uses that runs every op of ``ops`` and holds their weights with
    what ``used`` holds there, a shared tensor once (then no longer offered to a later change)."""
    for d in helpers:
        cap = problem.memory_bytes(d)
        if all(problem.durations_cycles[o][d] >= 0 for o in ops) and (not cap or used.held[d] + used.added(ops, d) <= cap):
            helpers.remove(d)
            return d
    return None


def fixed_schedule(problem: SchedulingProblem, start: SchedulingSolution, options: SolveOptions, budget: Budget,
                   amount: float) -> SchedulingSolution:
    """CP-SAT on ``problem`` with every op pinned to its device in the valid schedule ``start``,
    from ``start``, within ``amount`` units: the shorter valid schedule of the two."""
    value = objective_value(problem, start)
    model, v = build(problem, value, upper=value, placement=start.op_device, symmetry_breaking=False)
    add_hint(model, problem, v, start)
    status, solver, _ = run_cpsat(model, replace(options, progress=None), budget, amount, None, True)
    found = checked_solution(problem, v, solver) if status.has_solution else None
    if found is None or objective_value(problem, found) >= value or validate_schedule(problem, found):
        return start
    return found


def _pass_units(problem: SchedulingProblem) -> float:
    return build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)


def _variants(problem: SchedulingProblem, moves: PinnedMoves, memo: dict, variants: Sequence[tuple],
              options: SolveOptions, budget: Budget, incumbent: int | None, found: dict) -> None:
    """Trace, realise and sequence each of ``variants`` (see :data:`VARIANTS`) on the options in
    ``memo``; ``found`` keeps the runs tried, the role splits made, each variant's figures and
    the shortest schedule (``"best"``)."""
    keys = [move_proof_key(p) for _, _, p in moves.jobs]
    tables = move_floor_tables(moves, [memo.get(key, (0.0, False))[0] for key in keys])
    source, sink = memo.get(WEIGHT_CELLS, {}), memo.get(ARRIVALS, {})
    for name, up_source, up_sink, round_up in variants:
        combined = combined_options(moves, keys, memo, upper_cells(source) if up_source else source,
                                    upper_cells(sink) if up_sink else sink)
        budget.charge(budget.scale(_pass_units(problem)))
        value, runs = traced_runs(moves, tables, combined, round_up)
        if name == "bound":
            found["value"] = value if math.isfinite(value) else None
        key = tuple((r[0], r[1], r[2]) for r in runs)
        if not runs or key in found["tried"]:
            continue
        found["tried"].add(key)
        row = found["rows"][name] = {"runs": [(int(r[0]), int(moves.cuts[r[1]]), int(moves.cuts[r[2]]))
                                              for r in runs]}
        placement = realised_placement(problem, moves, runs, options, budget, found["solved"])
        if placement is None:
            continue
        budget.charge(budget.scale(_pass_units(problem)))
        sol, _ = heft_schedule_within(problem, placement, PlacedRanks(problem)(placement))
        if sol is None or validate_schedule(problem, sol):
            continue
        row["heft"] = objective_value(problem, sol)
        if _near(row["heft"], incumbent):
            sol = fixed_schedule(problem, sol, options, budget, min(EXACT_UNITS, max(0.0, budget.left) / 2))
        row["objective"] = objective_value(problem, sol)
        if found["best"] is None or row["objective"] < objective_value(problem, found["best"]):
            found["best"] = sol


def whole_problem_moves(problem: SchedulingProblem) -> PinnedMoves | None:
    """The pinned moves of ``problem`` when their pruned problem is ``problem`` itself (every op
    kept with its durations), as a start realised from them must be; else None."""
    moves = pinned_moves(problem)
    if moves is None or moves.pruned.num_ops != problem.num_ops \
            or moves.pruned.durations_cycles != problem.durations_cycles:
        return None
    return moves


def _near(value: int, incumbent: int | None) -> bool:
    return incumbent is None or value <= (1 + EXACT_MARGIN) * incumbent


def traced_start(problem: SchedulingProblem, budget: Budget, memo: dict, options: SolveOptions = SolveOptions(),
                 incumbent: int | None = None) -> tuple[SchedulingSolution | None, dict[str, Any]]:
    """The candidate of module Notes within ``budget`` (``memo``: the pinned moves' proofs, the
    scheduler's; the sink-side options are added to it): (the schedule or None, statistics);
    ``(None, {})`` where it does not apply (THROUGHPUT, no pinned moves, or a bound problem that
    drops ops). ``incumbent``: the objective to beat; a realisation HEFT sequences more than
    :data:`EXACT_MARGIN` above it is not sequenced exactly, and where the first one (the DP
    before the arrivals) is, the arrivals and the other variants are not tried."""
    if problem.objective is not Objective.LATENCY:
        return None, {}
    moves = whole_problem_moves(problem)
    if moves is None:
        return None, {}
    used = budget.used
    found: dict[str, Any] = {"tried": set(), "solved": {}, "rows": {}, "best": None, "value": None}
    _variants(problem, moves, memo, [("pinned moves", False, False, False)], options, budget, incumbent, found)
    preview = found["rows"].get("pinned moves", {}).get("heft")
    if preview is not None and _near(preview, incumbent):
        child = budget.child(min(ARRIVAL_UNITS, budget.left))
        move_arrival_bound(problem, options, child, memo)
        budget.charge(child.used)
        _variants(problem, moves, memo, VARIANTS, options, budget, incumbent, found)
    best = found["best"]
    stats = {"traced_start_value": found["value"], "traced_start_variants": found["rows"],
             "traced_start_objective": objective_value(problem, best) if best is not None else None,
             "traced_start_units": round(budget.used - used, 6)}
    return best, stats
