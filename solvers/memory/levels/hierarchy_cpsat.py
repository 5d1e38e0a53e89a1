"""Exact level assignment over N levels, as one CP-SAT model (issue 14, item 1).

Notes
-----
Sets: ops ``i`` in their fixed order; tensors ``t`` with accesses ``a_0..a_m``; levels
``l``; routes ``route(home, l)`` / ``route(l, home)`` of
:class:`~solvers.memory.levels.hierarchy.HierarchyProblem`.

Variables (booleans unless noted):

* ``x[t,j,l]``: access j at level l, one per access (virtual: home; fast-only: level 0;
  a 0-byte tensor stays home, which never costs more);
* ``kept[t,j,l]`` (l not home, both accesses real): ``<= x[t,j-1,l]``, ``<= x[t,j,l]``;
* ``fetch[t,j,l] = x[t,j,l] - kept[t,j,l]`` for a real read j and l not home;
* ``orig[t,j] = orig[t,j-1] AND kept[t,j]`` with ``orig[t,0] = NOT x[t,0,home]`` when
  produced; ``evict[t,j,l] = (orig[t,j-1] - orig[t,j]) AND x[t,0,l]``;
* per hop h of each possible chain: integers ``trigger``, ``release``, ``start``.

Constraints, each hop enforced by its chain's literal: start after its trigger op's end
(an element over the op ends), after the previous hop's end and (a fetch's first hop) after
every eviction of the tensor in an earlier or the same gap (then also trigger >= that
eviction's last release); end before its release op's start (element; ``num_ops`` is the
makespan); triggers and releases in their gap, non-decreasing along the chain,
``release > trigger``; a fetch's last release is its consumer, an eviction's first trigger
its last access. One ``NoOverlap`` over every hop (one DMA engine). Per level, a
``Cumulative`` on the point axis over the pieces of
:func:`~solvers.memory.levels.hierarchy_validate.level_pieces` (accesses, kept gaps, hop
buffers with variable ends, home copies). Roofline per op and level, for ``bw_l = p/q``:
``p*c_l >= q*B_l``, ``p*c_l <= q*B_l + p - 1``; ``dur = max(compute, sum_l c_l)``; ops in
order. The model is the validator's semantics exactly, so OPTIMAL is a proof.

Objective: minimize the makespan. Warm start: the better of the greedy and all-at-home
plans as hint and upper bound; the result is re-timed by the replay (never later).
Stops on deterministic time (:class:`solvers.budget.Budget`). For small problems: one
model, no window search yet (the two-level :class:`~solvers.memory.levels.cpsat.CpSatLevelSolver`
has one for long chains); above ``max_model_ops`` ops (64, as the two-level solver's window
threshold) no exact model (a 666-op, 999-tensor four-level chain ran 193 s of wall time on
a 60-s limit, load ~13 on two cores, without improving the greedy plan): the bound is the
relaxation of :mod:`~solvers.memory.levels.hierarchy_bounds` (sound), and its solution's
choice of which tensors leave home guides one more greedy plan (the others are read in
place), improved by :func:`~solvers.memory.levels.hierarchy_greedy.search_stay_home` (one
tensor's choice flipped at a time, kept when the greedy plan gets shorter; counted work);
the best plan is kept, FEASIBLE with that bound unless it meets it. Not yet the exact model
over windows of ops as the two-level solver has: the full model restricted to a 24-op window
(every other level, kept gap, trigger and release fixed by constraints) ran 16-30 s per
window at 1 deterministic unit without finding its hint's solution (presolve over the whole
34k-variable model); a window model built small, as the two-level one, remains to do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget, Calibration
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.cpsat_support import interval_if
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move
from solvers.memory.levels.hierarchy_bounds import relaxation_stays_home, solve_bound_relaxation
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_best, retime_hierarchy, search_stay_home
from solvers.memory.levels.hierarchy_validate import hierarchy_metrics, validate_hierarchy
from solvers.memory.levels.problem import TransferKind, cycles_for_bytes

__all__ = [
    "HopVars", "HierarchyVars", "build_hierarchy_model", "add_levels", "add_level_durations", "add_moves",
    "add_level_capacities", "CpSatHierarchySolver",
]

PREFETCH, EVICT = TransferKind.PREFETCH, TransferKind.EVICT


def _lits(*xs) -> list:
    """The non-constant literals among ``xs`` (constants here are always 1: present)."""
    return [x for x in xs if not isinstance(x, int)]


def _add(model: cp_model.CpModel, relation, *lits) -> None:
    """``model.add(relation)`` enforced by ``lits`` (a constant relation is checked here)."""
    if isinstance(relation, bool):
        if not relation:
            model.add_bool_or([x.Not() for x in _lits(*lits)])
        return
    ct = model.add(relation)
    if _lits(*lits):
        ct.only_enforce_if(_lits(*lits))


@dataclass
class HopVars:
    """One hop of one possible chain: its route step, literal and decision variables.

    Examples
    --------
    >>> HopVars(2, 1, 8, 1, -1, 0, 0, 0, 0).end
    8
    """

    src: int
    dst: int
    duration: int
    present: object  # BoolVar or 1
    trigger: object  # IntVar or int: the trigger op
    trigger_end: object
    release: object  # IntVar or int: the release op
    release_start: object
    start: object

    @property
    def end(self):
        return self.start + self.duration


@dataclass
class HierarchyVars:
    """Variable handles of the N-level model; ``extract`` reads a solution back.

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> model, v = build_hierarchy_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> s = v.extract(solver)
    >>> s.level, s.makespan_cycles  # reading straight from host (8 cycles) beats two hops (8 + 2 + 4)
    (((2, 2),), 8)
    """

    problem: HierarchyProblem
    horizon: int
    x: dict = field(default_factory=dict)  # (t, j) -> {level: BoolVar | 1}
    kept: dict = field(default_factory=dict)  # (t, j) -> {level: BoolVar}
    chains: dict = field(default_factory=dict)  # (kind, t, j, level) -> list[HopVars]
    start: list = field(default_factory=list)
    dur: list = field(default_factory=list)
    makespan: cp_model.IntVar | None = None

    def end(self, op: int):
        return 0 if op < 0 else self.start[op] + self.dur[op]

    def extract(self, solver: cp_model.CpSolver) -> HierarchySolution:
        p = self.problem

        def val(x) -> int:
            return x if isinstance(x, int) else solver.value(x)

        level = tuple(tuple(next(lv for lv, lit in self.x[t, j].items() if val(lit))
                            for j in range(len(p.accesses(t)))) for t in range(p.num_tensors))
        kept = tuple(tuple(any(val(k) for k in self.kept.get((t, j), {}).values())
                           for j in range(len(p.accesses(t)))) for t in range(p.num_tensors))
        moves = []
        for (kind, t, j, _), hops in self.chains.items():
            if val(hops[0].present):
                moves += [Move(kind, t, j, h, hv.src, hv.dst, val(hv.trigger), val(hv.release), val(hv.start),
                               hv.duration) for h, hv in enumerate(hops)]
        moves.sort(key=lambda m: (m.start_cycle, m.end_cycle, m.tensor, m.gap, m.kind is PREFETCH, m.hop))
        return HierarchySolution(level, kept, tuple(moves), tuple(val(s) for s in self.start),
                                 tuple(val(d) for d in self.dur))


def _horizon(problem: HierarchyProblem) -> int:
    bw = problem.bandwidth_bytes_per_cycle
    h = 0
    for i, row in enumerate(problem.op_accesses()):
        b = sum(problem.tensor_bytes[t] for t, _ in row)
        h += problem.compute_cycles[i] + sum(cycles_for_bytes(b, r) for r in bw)
    longest = [max((problem.hop_cycles(t, a, b) for a, b in problem.dma_paths), default=0)
               for t in range(problem.num_tensors)]
    for t in range(problem.num_tensors):
        h += 2 * len(problem.accesses(t)) * (problem.num_levels - 1) * longest[t]
    return h


def add_levels(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars) -> dict:
    """The level of every access, the kept gaps, and the literal of every possible chain:
    ``{(kind, t, j, level): literal}`` (fetches to ``level``, evictions from it).

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> model, v = build_hierarchy_model(p)
    >>> sorted(v.x[0, 1]), sorted(k[3] for k in v.chains)
    ([0, 1, 2], [0, 2])
    """
    fast_only = set(problem.fast_only_ops)
    lits = {}
    for t in range(problem.num_tensors):
        acc, home = problem.accesses(t), problem.home(t)
        for j, a in enumerate(acc):
            if not problem.is_real(a):
                v.x[t, j] = {home: 1}
            elif a in fast_only:
                v.x[t, j] = {0: 1}
            elif not problem.tensor_bytes[t]:
                v.x[t, j] = {home: 1}
            else:
                v.x[t, j] = {lv: model.new_bool_var(f"x_{t}_{j}_{lv}") for lv in range(problem.num_levels)}
                model.add_exactly_one(v.x[t, j].values())
        orig = 0
        if problem.is_real(acc[0]):
            orig = 1 - v.x[t, 0][home] if home in v.x[t, 0] else 1
            if not isinstance(orig, int):
                o = model.new_bool_var(f"orig_{t}_0")
                model.add(o == orig)
                orig = o
        for j in range(1, len(acc)):
            orig = _add_gap(model, problem, v, lits, t, j, orig)
    return lits


def _add_gap(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars, lits: dict, t: int, j: int,
             orig):
    """Gap j of tensor t: kept literals, the fetch into access j, the producer's eviction here;
    returns ``orig[t,j]``."""
    acc, home = problem.accesses(t), problem.home(t)
    prev, cur = v.x[t, j - 1], v.x[t, j]
    kept = {}
    if problem.is_real(acc[j - 1]) and problem.is_real(acc[j]):
        for lv in set(prev) & set(cur) - {home}:
            k = kept[lv] = model.new_bool_var(f"kept_{t}_{j}_{lv}")
            for y in _lits(prev[lv], cur[lv]):
                model.add_implication(k, y)
    v.kept[t, j] = kept
    if problem.is_real(acc[j]):
        for lv, xl in cur.items():
            if lv == home:
                continue
            if lv in kept:
                f = model.new_bool_var(f"fetch_{t}_{j}_{lv}")
                model.add(f == xl - kept[lv])
            else:
                f = xl
            lits[PREFETCH, t, j, lv] = f
    if isinstance(orig, int) and orig == 0:
        return 0
    any_kept = sum(kept.values()) if kept else 0
    if isinstance(any_kept, int):
        new, evict = 0, orig
    else:
        new = model.new_bool_var(f"orig_{t}_{j}")
        model.add(new <= any_kept)
        if not isinstance(orig, int):
            model.add(new <= orig)
        model.add(new >= orig + any_kept - 1)
        evict = model.new_bool_var(f"evict_{t}_{j}")
        model.add(evict == orig - new)
    for lv, x0 in v.x[t, 0].items():
        if lv == home:
            continue
        if isinstance(x0, int) and isinstance(evict, int):
            e = x0 * evict
        else:
            e = model.new_bool_var(f"evict_{t}_{j}_{lv}")
            _and(model, e, x0, evict)
        if not (isinstance(e, int) and e == 0):
            lits[EVICT, t, j, lv] = e
    return new


def _and(model: cp_model.CpModel, e, a, b) -> None:
    """``e = a AND b`` for literals or 0/1 constants."""
    for y in (a, b):
        if isinstance(y, int):
            if not y:
                model.add(e == 0)
        else:
            model.add_implication(e, y)
    model.add(e >= sum([a, b]) - 1)


def add_level_durations(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars) -> None:
    """Roofline durations ``max(compute, sum_l ceil(B_l/bw_l))`` and the op order.

    Examples
    --------
    >>> p = HierarchyProblem((1,), ((0,),), ((),), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> model, v = build_hierarchy_model(p)
    >>> _ = model.add(v.x[0, 1][1] == 1)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.dur[0])  # 8 bytes from level 1 at 4 B/cycle
    2
    """
    for i, row in enumerate(problem.op_accesses()):
        if i:
            model.add(v.start[i] >= v.end(i - 1))
        terms = []
        for lv, rate in enumerate(problem.bandwidth_bytes_per_cycle):
            b = sum(problem.tensor_bytes[t] * v.x[t, j].get(lv, 0) for t, j in row)
            if isinstance(b, int):
                terms.append(cycles_for_bytes(b, rate))
                continue
            top = cycles_for_bytes(sum(problem.tensor_bytes[t] for t, _ in row), rate)
            c = model.new_int_var(0, top, f"c_{i}_{lv}")
            p, q = rate.numerator, rate.denominator
            model.add(p * c >= q * b)
            model.add(p * c <= q * b + p - 1)
            terms.append(c)
        model.add_max_equality(v.dur[i], [problem.compute_cycles[i], sum(terms)])


def _new_hop(model: cp_model.CpModel, v: HierarchyVars, name: str, present, src: int, dst: int, duration: int,
             trig: tuple[int, int], rel: tuple[int, int]) -> HopVars:
    """A hop whose trigger op lies in ``trig`` and release op in ``rel`` (inclusive ranges)."""
    starts_ext = [*v.start, v.makespan]
    if trig[0] == trig[1]:
        trigger, trigger_end = trig[0], v.end(trig[0])
    else:
        trigger = model.new_int_var(trig[0], trig[1], f"trigger_{name}")
        trigger_end = model.new_int_var(0, v.horizon, f"trigger_end_{name}")
        model.add_element(trigger - trig[0], [v.end(k) for k in range(trig[0], trig[1] + 1)], trigger_end)
    if rel[0] == rel[1]:
        release, release_start = rel[0], starts_ext[rel[0]]
    else:
        release = model.new_int_var(rel[0], rel[1], f"release_{name}")
        release_start = model.new_int_var(0, v.horizon, f"release_start_{name}")
        model.add_element(release - rel[0], starts_ext[rel[0]:rel[1] + 1], release_start)
    start = model.new_int_var(0, v.horizon, f"start_{name}")
    hop = HopVars(src, dst, duration, present, trigger, trigger_end, release, release_start, start)
    _add(model, start >= trigger_end, present)
    _add(model, hop.end <= release_start, present)
    _add(model, hop.end <= v.makespan, present)
    return hop


def add_moves(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars, lits: dict) -> None:
    """Every possible chain, hop by hop along its route, on one DMA engine.

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> model, v = build_hierarchy_model(p)
    >>> [(h.src, h.dst, h.duration) for h in v.chains[PREFETCH, 0, 1, 0]]
    [(2, 1, 8), (1, 0, 2)]
    """
    for (kind, t, j, lv), present in lits.items():
        acc, home = problem.accesses(t), problem.home(t)
        lo, hi = acc[j - 1], acc[j]
        route = problem.route(home, lv) if kind is PREFETCH else problem.route(lv, home)
        hops: list[HopVars] = []
        for h in range(len(route) - 1):
            last = h == len(route) - 2
            trig = (lo, lo) if kind is EVICT and h == 0 else (lo, hi - 1)
            rel = (hi, hi) if kind is PREFETCH and last else (lo + 1, hi)
            hop = _new_hop(model, v, f"{kind.value}_{t}_{j}_{lv}_{h}", present, route[h], route[h + 1],
                           problem.hop_cycles(t, route[h], route[h + 1]), trig, rel)
            _add(model, hop.release >= hop.trigger + 1, present)
            if hops:
                _add(model, hop.start >= hops[-1].end, present)
                _add(model, hop.trigger >= hops[-1].trigger, present)
                _add(model, hop.release >= hops[-1].release, present)
            hops.append(hop)
        v.chains[kind, t, j, lv] = hops
    for (kind, t, j, lv), hops in v.chains.items():  # a fetch waits for the tensor's eviction
        if kind is not EVICT:
            continue
        for (k2, t2, j2, _), fetch in v.chains.items():
            if k2 is PREFETCH and t2 == t and j2 >= j:
                _add(model, fetch[0].start >= hops[-1].end, hops[0].present, fetch[0].present)
                if j2 == j:
                    _add(model, fetch[0].trigger >= hops[-1].release, hops[0].present, fetch[0].present)
    model.add_no_overlap([interval_if(model, h.start, h.duration, None, h.present, f"dma_{key}_{n}")
                          for key, hops in v.chains.items() for n, h in enumerate(hops)])


def add_level_capacities(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars) -> None:
    """Per level, a ``Cumulative`` on the point axis over every piece that may hold it.

    Examples
    --------
    A 16-byte weight cannot be read from a 8-byte level 0:

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (16,), (8, 64), (8, 4), 1, ((0, 1),))
    >>> model, v = build_hierarchy_model(p)
    >>> _ = model.add(v.x[0, 1][0] == 1)
    >>> cp_model.CpSolver().solve(model) == cp_model.INFEASIBLE
    True
    """
    pieces: list[list[tuple]] = [[] for _ in range(problem.num_levels)]
    end = 2 * problem.num_ops + 1
    for t in range(problem.num_tensors):
        size = problem.tensor_bytes[t]
        if size:
            _tensor_pieces(problem, v, t, end, lambda lv, *piece: pieces[lv].append(piece))
    for lv, rows in enumerate(pieces):
        cap = problem.capacity_bytes[lv]
        if sum(problem.tensor_bytes[t] for t, *_ in rows) <= cap:
            continue  # every piece at once fits: nothing to constrain
        intervals, demands = [], []
        for n, (t, lo, hi, present) in enumerate(rows):
            if isinstance(lo, int) and isinstance(hi, int):
                size = hi - lo
            else:
                size = model.new_int_var(0, end, f"piece_{lv}_{n}")
            intervals.append(interval_if(model, lo, size, hi, present, f"piece_{lv}_{n}"))
            demands.append(problem.tensor_bytes[t])
        model.add_cumulative(intervals, demands, cap)


def _tensor_pieces(problem: HierarchyProblem, v: HierarchyVars, t: int, end: int, put) -> None:
    """Tensor ``t``'s pieces as ``put(level, t, first point, end point, literal)``: home copy,
    accesses away from home, kept gaps, and the buffers of every possible chain's hops."""
    acc, home = problem.accesses(t), problem.home(t)
    if not problem.is_real(acc[0]):
        put(home, t, 0, end, 1)
    elif home in v.x[t, 0]:
        put(home, t, 2 * acc[0] + 1, end, v.x[t, 0][home])
    for j, a in enumerate(acc):
        if problem.is_real(a):
            for lv, lit in v.x[t, j].items():
                if lv != home:
                    put(lv, t, 2 * a + 1, 2 * a + 2, lit)
        for lv, k in v.kept.get((t, j), {}).items():
            put(lv, t, 2 * acc[j - 1] + 2, 2 * a + 1, k)
    for (kind, tt, j, lv), hops in v.chains.items():
        if tt != t:
            continue
        if kind is EVICT:
            put(lv, t, 2 * acc[j - 1] + 2, 2 * hops[0].release + 1, hops[0].present)
        for h, hop in enumerate(hops):
            if h + 1 < len(hops):
                hi = 2 * hops[h + 1].release + 1
            else:
                hi = 2 * acc[j] + 1 if kind is PREFETCH else end
            put(hop.dst, t, 2 * hop.trigger + 2, hi, hop.present)


def build_hierarchy_model(problem: HierarchyProblem, upper: int | None = None,
                          hint: HierarchySolution | None = None) -> tuple[cp_model.CpModel, HierarchyVars]:
    """The whole model: levels, durations, moves, capacities, makespan (``<= upper`` if given).

    Examples
    --------
    >>> p = HierarchyProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> model, v = build_hierarchy_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)  # both accesses in level 0: 3 + 1
    4
    """
    horizon = _horizon(problem) if upper is None else upper
    model = cp_model.CpModel()
    v = HierarchyVars(problem, horizon)
    n = problem.num_ops
    v.start = [model.new_int_var(0, horizon, f"start_{i}") for i in range(n)]
    v.dur = [model.new_int_var(0, horizon, f"dur_{i}") for i in range(n)]
    v.makespan = model.new_int_var(0, horizon, "makespan")
    lits = add_levels(model, problem, v)
    add_level_durations(model, problem, v)
    add_moves(model, problem, v, lits)
    add_level_capacities(model, problem, v)
    if n:
        model.add(v.makespan >= v.end(n - 1))
    model.minimize(v.makespan)
    if hint is not None:
        _add_hint(model, problem, v, hint)
    return model, v


def _add_hint(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars, hint: HierarchySolution) -> None:
    """Hint the levels, kept gaps, chains and times of ``hint`` (a valid solution)."""
    for (t, j), row in v.x.items():
        for lv, lit in row.items():
            if not isinstance(lit, int):
                model.add_hint(lit, hint.level[t][j] == lv)
    for (t, j), row in v.kept.items():
        for lv, k in row.items():
            model.add_hint(k, hint.kept[t][j] and hint.level[t][j] == lv)
    chosen = {}
    for m in hint.moves:
        lv = m.dst_level if m.kind is PREFETCH else hint.level[m.tensor][0]
        chosen.setdefault((m.kind, m.tensor, m.gap, lv), []).append(m)
    for key, hops in v.chains.items():
        given = sorted(chosen.get(key, ()), key=lambda m: m.hop)
        for hop, m in zip(hops, given):
            for var, value in ((hop.trigger, m.trigger_op), (hop.release, m.release_op), (hop.start, m.start_cycle)):
                if not isinstance(var, int):
                    model.add_hint(var, value)
    for i in range(problem.num_ops):
        model.add_hint(v.start[i], hint.op_start[i])
        model.add_hint(v.dur[i], hint.op_duration[i])
    model.add_hint(v.makespan, hint.makespan_cycles)


class CpSatHierarchySolver(Accepting):
    """Exact level assignment over N levels (one CP-SAT model, greedy and all-home as hints).

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> r = CpSatHierarchySolver().solve(p, SolveOptions(time_limit_s=5, num_workers=1))
    >>> r.status.value, r.objective, r.bound
    ('OPTIMAL', 8, 8)
    """

    name = "cpsat"
    problem_type = HierarchyProblem

    def __init__(self, dtime_per_second: float = MEMORY_LEVELS.units_per_second, max_model_ops: int = 64,
                 bound_share: float = 0.25, flip_op_evaluations_per_second: float = 4000.0) -> None:
        # Deterministic units per second of the time limit (the two-level model's calibration).
        self.dtime_per_second = dtime_per_second
        # Above this many ops, no model: the best baseline (one model does not scale; see Notes).
        self.max_model_ops = max_model_ops
        # Above it: this share of the budget solves the lower-bound relaxation (hierarchy_bounds).
        self.bound_share = bound_share
        # Above it: the stay-home search evaluates greedy plans worth this many ops per second
        # of the time limit (counted work, so deterministic; measured ~6,000 op-evaluations per
        # wall second on 666 ops at load 5 on two cores).
        self.flip_op_evaluations_per_second = flip_op_evaluations_per_second

    def solve(self, problem: HierarchyProblem, options: SolveOptions = SolveOptions()
              ) -> SolveResult[HierarchySolution]:
        t0 = time.perf_counter()
        budget = Budget.of(options, Calibration("memory-hierarchy", self.dtime_per_second), t0)
        candidates = [s for s in (plan_hierarchy_best(problem),) if s is not None]
        if isinstance(options.hint, HierarchySolution) and not validate_hierarchy(problem, options.hint):
            candidates.append(retime_hierarchy(problem, options.hint))
        if problem.num_ops > self.max_model_ops:
            return self._solve_large(problem, options, budget, candidates, t0)
        best = min(candidates, key=lambda s: s.makespan_cycles, default=None)
        model, v = build_hierarchy_model(problem, None if best is None else best.makespan_cycles, best)
        status, solver, progress = budget.run_cpsat(model, options, budget.left, "hierarchy", interleave=False)
        wall = time.perf_counter() - t0
        if status is Status.MODEL_INVALID:
            return failure_result(status, self.name, wall, **budget.stats())
        bound = None
        if status.has_solution:
            found = retime_hierarchy(problem, v.extract(solver))
            if best is None or found.makespan_cycles < best.makespan_cycles:
                best = found
            bound = int(solver.best_objective_bound)
        elif status is Status.INFEASIBLE:  # nothing beats the upper bound: the baseline is optimal
            bound = best.makespan_cycles if best is not None else None
        if best is None:
            return failure_result(Status.INFEASIBLE if status is Status.INFEASIBLE else Status.UNKNOWN, self.name,
                                  wall, **budget.stats())
        bound = None if bound is None else min(bound, best.makespan_cycles)
        final = Status.OPTIMAL if bound is not None and bound >= best.makespan_cycles else Status.FEASIBLE
        stats = {**hierarchy_metrics(problem, best).as_dict(), **budget.stats()}
        return SolveResult(final, best.makespan_cycles, bound, best, wall, self.name, stats, progress)

    def _solve_large(self, problem: HierarchyProblem, options: SolveOptions, budget: Budget, candidates: list,
                     t0: float) -> SolveResult[HierarchySolution]:
        """Above ``max_model_ops``: the relaxation of :mod:`~solvers.memory.levels.hierarchy_bounds`
        gives the bound and, from its solution, one more greedy plan (tensors it reads in place
        stay home); the best plan is kept."""
        relax = solve_bound_relaxation(problem, budget, budget.share(self.bound_share))
        search = {}
        if relax.leaving_home is not None:
            work = self.flip_op_evaluations_per_second * options.time_limit_s
            guided, search = search_stay_home(problem, relaxation_stays_home(problem, relax.leaving_home), work,
                                              budget.wall_expired)
            if guided is not None:
                candidates.append(guided)
        best = min(candidates, key=lambda s: s.makespan_cycles, default=None)
        wall = time.perf_counter() - t0
        if best is None:
            return failure_result(Status.UNKNOWN, self.name, wall, bound=relax.bound_cycles, model="too large",
                                  **budget.stats())
        bound = min(relax.bound_cycles, best.makespan_cycles)
        final = Status.OPTIMAL if bound >= best.makespan_cycles else Status.FEASIBLE
        stats = {**hierarchy_metrics(problem, best).as_dict(), "model": "too large", "stay_home_search": search,
                 **budget.stats()}
        return SolveResult(final, best.makespan_cycles, bound, best, wall, self.name, stats)
