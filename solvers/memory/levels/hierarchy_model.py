"""The CP-SAT model of level assignment over N levels (issue 14, item 1), whole or as a window.

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

A window model (``fixed``/``free_ops`` of :func:`build_hierarchy_model`, :class:`Frame`) is
the same model built small around a valid incumbent: decisions outside the window are Python
constants, the ops after it shift rigidly; :mod:`~solvers.memory.levels.hierarchy_window`
searches with it and :class:`~solvers.memory.levels.hierarchy_cpsat.CpSatHierarchySolver`
solves the whole model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solvers.cpsat_support import interval_if
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move
from solvers.memory.levels.hierarchy_bandwidth import add_hierarchy_bandwidth
from solvers.memory.levels.hierarchy_link_holds import add_hierarchy_link_hold_vars, add_hierarchy_link_hold_waits
from solvers.memory.levels.problem import TransferKind, cycles_for_bytes

__all__ = [
    "HopVars", "HierarchyVars", "Frame", "build_hierarchy_model", "add_levels", "add_level_durations", "add_moves",
    "add_level_capacities", "model_horizon",
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
    trig_range: tuple[int, int] = (0, 0)  # the trigger op's range and the release op's (inclusive)
    rel_range: tuple[int, int] = (0, 0)
    kept: bool = False  # a window model's hop kept from the incumbent (start given)
    incumbent_start: int | None = None  # then its start in the incumbent

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
    frame: "Frame | None" = None  # a window model's fixed incumbent and free ops (None: the whole model)
    x: dict = field(default_factory=dict)  # (t, j) -> {level: BoolVar | 1}
    kept: dict = field(default_factory=dict)  # (t, j) -> {level: BoolVar}
    chains: dict = field(default_factory=dict)  # (kind, t, j, level) -> list[HopVars]
    start: list = field(default_factory=list)
    dur: list = field(default_factory=list)
    makespan: cp_model.IntVar | None = None
    level_cycles: dict = field(default_factory=dict)  # op -> per level ceil(B_l/bw_l) (int or IntVar)

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


@dataclass
class Frame:
    """A window model's frame: the valid incumbent ``fixed`` and the ops ``free`` (consecutive)
    whose accesses are re-decided; see :func:`build_hierarchy_model`.

    ``margin`` ops on each side: a free move's trigger is at most that far before the first free
    op, its release at most that far after the last (a restriction, which keeps the model small).
    Gaps whose other access lies beyond the margin keep their kept status.

    Examples
    --------
    >>> s = HierarchySolution(((1, 1),), ((False, False),), (), (0, 4), (4, 4))
    >>> f = Frame(s, range(1, 2), 1)
    >>> f.is_free_op(1), f.is_free_op(0), f.near(0), f.near(3)
    (True, False, True, False)
    """

    fixed: HierarchySolution
    free: range
    margin: int = 8
    shift: object = None  # the IntVar (<= 0) by which everything after the free ops moves
    fixed_moves: dict = field(default_factory=dict)  # Move.key -> Move, of ``fixed``

    def __post_init__(self) -> None:
        self.fixed_moves = {m.key: m for m in self.fixed.moves}

    def is_free_op(self, op: int) -> bool:
        return self.free.start <= op < self.free.stop

    def near(self, op: int) -> bool:
        """Whether ``op`` lies within the margin around the free ops."""
        return self.free.start - self.margin <= op < self.free.stop + self.margin

    def shifted_start(self, op: int):
        """Op ``op``'s start after the free ops: the incumbent's plus the shift."""
        return self.fixed.op_start[op] + self.shift


def model_horizon(problem: HierarchyProblem) -> int:
    """A makespan no plan of ``problem`` exceeds (every op at its slowest, every possible hop in
    series): the model's horizon without an upper bound."""
    return _horizon(problem)


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
    frame = v.frame
    lits = {}
    for t in range(problem.num_tensors):
        acc, home = problem.accesses(t), problem.home(t)
        for j, a in enumerate(acc):
            if not problem.is_real(a):
                v.x[t, j] = {home: 1}
            elif frame is not None and not frame.is_free_op(a):
                v.x[t, j] = {frame.fixed.level[t][j]: 1}
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
    frame = v.frame
    if problem.is_real(acc[j - 1]) and problem.is_real(acc[j]):
        if frame is not None and not _gap_is_open(frame, acc[j - 1], acc[j]):
            if frame.fixed.kept[t][j]:  # as the incumbent: both accesses stay at its level
                lv = frame.fixed.level[t][j]
                kept[lv] = 1
                for side in (prev, cur):
                    if lv not in side:
                        model.add_bool_or([])
                    elif not isinstance(side[lv], int):
                        model.add(side[lv] == 1)
        else:
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
                if isinstance(xl, int) and isinstance(kept[lv], int):
                    f = xl - kept[lv]
                else:
                    f = model.new_bool_var(f"fetch_{t}_{j}_{lv}")
                    model.add(f == xl - kept[lv])
            else:
                f = xl
            if not (isinstance(f, int) and f == 0):
                lits[PREFETCH, t, j, lv] = f
    if isinstance(orig, int) and orig == 0:
        return 0
    any_kept = sum(kept.values()) if kept else 0
    if isinstance(any_kept, int):
        new, evict = (orig, 0) if any_kept else (0, orig)
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


def _gap_is_open(frame: Frame, lo: int, hi: int) -> bool:
    """Whether a gap between accesses at ops ``lo`` and ``hi`` is re-decided in ``frame``: one
    end is a free op and the other within the margin (a gap reaching further keeps its kept
    status, so a new kept copy never spans ops the window does not see)."""
    return (frame.is_free_op(lo) or frame.is_free_op(hi)) and frame.near(lo) and frame.near(hi)


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
    frame = v.frame
    for i, row in enumerate(problem.op_accesses()):
        if frame is not None and not (frame.is_free_op(i) or frame.is_free_op(i - 1)):
            continue  # fixed ops keep their order and durations (constants, or rigidly shifted)
        if i:
            model.add(v.start[i] >= v.end(i - 1))
        if frame is not None and not frame.is_free_op(i):
            continue
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
        v.level_cycles[i] = terms
        model.add_max_equality(v.dur[i], [problem.compute_cycles[i], sum(terms)])


def _new_hop(model: cp_model.CpModel, v: HierarchyVars, name: str, present, src: int, dst: int, duration: int,
             trig: tuple[int, int], rel: tuple[int, int], start=None) -> HopVars:
    """A hop whose trigger op lies in ``trig`` and release op in ``rel`` (inclusive ranges).

    ``start`` given (a window model's hop kept from the incumbent, at its time or rigidly
    shifted): its constraints hold already and are not added again."""
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
    kept = start is not None
    if not kept:
        start = model.new_int_var(0, v.horizon, f"start_{name}")
    hop = HopVars(src, dst, duration, present, trigger, trigger_end, release, release_start, start, trig, rel, kept)
    if not kept:
        _add(model, start >= trigger_end, present)
        _add(model, hop.end <= release_start, present)
        _add(model, hop.end <= v.makespan, present)
    return hop


def _kept_hop_start(frame: Frame, m: Move):
    """A window model's start of the incumbent's hop ``m`` whose chain is not re-decided: its
    time when it is released before the free ops, shifted when triggered after them, else
    None (a variable: the free ops' times move around it)."""
    if m.release_op < frame.free.start:
        return m.start_cycle
    if m.trigger_op >= frame.free.stop:
        return m.start_cycle + frame.shift
    return None


def add_moves(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars, lits: dict) -> None:
    """Every possible chain, hop by hop along its route, on one DMA engine.

    In a window model (``v.frame``) a chain the incumbent has and the window does not
    re-decide keeps its triggers and releases (and its time, see :func:`_kept_hop_start`);
    a re-decided chain triggers at most ``margin`` ops before the free ops and releases at
    most ``margin`` ops after them.

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> model, v = build_hierarchy_model(p)
    >>> [(h.src, h.dst, h.duration) for h in v.chains[PREFETCH, 0, 1, 0]]
    [(2, 1, 8), (1, 0, 2)]
    """
    frame = v.frame
    for (kind, t, j, lv), present in lits.items():
        acc, home = problem.accesses(t), problem.home(t)
        lo, hi = acc[j - 1], acc[j]
        route = problem.route(home, lv) if kind is PREFETCH else problem.route(lv, home)
        incumbent = None
        if frame is not None and isinstance(present, int):
            incumbent = [frame.fixed_moves.get((kind, t, j, h, route[h], route[h + 1])) for h in range(len(route) - 1)]
            incumbent = None if None in incumbent else incumbent
        hops: list[HopVars] = []
        for h in range(len(route) - 1):
            last = h == len(route) - 2
            trig = (lo, lo) if kind is EVICT and h == 0 else (lo, hi - 1)
            rel = (hi, hi) if kind is PREFETCH and last else (lo + 1, hi)
            start = None
            if incumbent is not None:
                m = incumbent[h]
                trig, rel, start = (m.trigger_op, m.trigger_op), (m.release_op, m.release_op), _kept_hop_start(frame, m)
            elif frame is not None:  # re-decided: near the window, or where the incumbent has it
                trig = (min(trig[1], max(trig[0], frame.free.start - frame.margin)), trig[1])
                rel = (rel[0], max(rel[0], min(rel[1], frame.free.stop - 1 + frame.margin)))
                m = frame.fixed_moves.get((kind, t, j, h, route[h], route[h + 1]))
                if m is not None:
                    trig, rel = (min(trig[0], m.trigger_op), trig[1]), (rel[0], max(rel[1], m.release_op))
            hop = _new_hop(model, v, f"{kind.value}_{t}_{j}_{lv}_{h}", present, route[h], route[h + 1],
                           problem.hop_cycles(t, route[h], route[h + 1]), trig, rel, start)
            if incumbent is not None:
                hop.incumbent_start = incumbent[h].start_cycle
            if incumbent is None:
                _add(model, hop.release >= hop.trigger + 1, present)
            if hops and not (hop.kept and hops[-1].kept):
                _add(model, hop.start >= hops[-1].end, present)
                _add(model, hop.trigger >= hops[-1].trigger, present)
                _add(model, hop.release >= hops[-1].release, present)
            hops.append(hop)
        v.chains[kind, t, j, lv] = hops
    by_tensor: dict[int, list] = {}
    for key, hops in v.chains.items():
        by_tensor.setdefault(key[1], []).append((key, hops))
    for chains in by_tensor.values():  # a fetch waits for the tensor's eviction
        for (kind, t, j, lv), hops in chains:
            if kind is not EVICT:
                continue
            for (k2, _, j2, _), fetch in chains:
                if k2 is PREFETCH and j2 >= j and not (hops[-1].kept and fetch[0].kept):
                    _add(model, fetch[0].start >= hops[-1].end, hops[0].present, fetch[0].present)
                    if j2 == j:
                        _add(model, fetch[0].trigger >= hops[-1].release, hops[0].present, fetch[0].present)
    hops = [(f"dma_{key}_{n}", h) for key, chain in v.chains.items() for n, h in enumerate(chain)]
    if frame is not None:
        hops = _hops_near_the_window(frame, hops)
    model.add_no_overlap([interval_if(model, h.start, h.duration, None, h.present, name) for name, h in hops])


def _hops_near_the_window(frame: Frame, hops: list) -> list:
    """The hops a re-decided hop may overlap in time: a kept hop at its incumbent time that ends
    before any re-decided hop can start, or a shifted one that starts after every re-decided
    hop must have ended, is left out (the incumbent already orders those among themselves)."""
    fixed = frame.fixed
    ends = [st + du for st, du in zip(fixed.op_start, fixed.op_duration)]
    starts = [*fixed.op_start, fixed.makespan_cycles]
    moving = [h for _, h in hops if not h.kept]
    if not moving:
        return []
    first = frame.free.start
    earliest = min(0 if k < 0 or not first else ends[min(k, first - 1)] for k in (h.trig_range[0] for h in moving))
    latest = starts[min(max(frame.free.stop, max(h.rel_range[1] for h in moving)), len(starts) - 1)]
    out = []
    for name, h in hops:
        if h.kept and isinstance(h.start, int) and h.start + h.duration <= earliest:
            continue
        if h.kept and not isinstance(h.start, int) and h.incumbent_start >= latest:
            continue
        out.append((name, h))
    return out


def add_level_capacities(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars) -> None:
    """Per level, a ``Cumulative`` on the point axis over every piece that may hold it.

    In a window model only the points a re-decided piece may cover are checked (the rest is
    the incumbent's, valid), and the kept pieces there become one fixed demand per stretch.

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
        if v.frame is not None:
            rows = _window_rows(rows, problem)
        intervals, demands = [], []
        for n, (t, lo, hi, present, *_) in enumerate(rows):
            if isinstance(lo, int) and isinstance(hi, int):
                size = hi - lo
            else:
                size = model.new_int_var(0, end, f"piece_{lv}_{n}")
            intervals.append(interval_if(model, lo, size, hi, present, f"piece_{lv}_{n}"))
            demands.append(problem.tensor_bytes[t] if t >= 0 else -t)
        if intervals:
            model.add_cumulative(intervals, demands, cap)


def _window_rows(rows: list, problem: HierarchyProblem) -> list:
    """The pieces of one level a window model checks: every piece that may vary, and the fixed
    ones over the points those may cover as ``(-demand, lo, hi, 1)`` stretches."""
    varying = [r for r in rows if not all(isinstance(x, int) for x in r[1:4])]
    if not varying:
        return []
    lo_pt = min(r[4] for r in varying)
    hi_pt = max(r[5] for r in varying)
    delta: dict[int, int] = {}
    for t, lo, hi, present, *_ in rows:
        if all(isinstance(x, int) for x in (lo, hi, present)) and present:
            a, b = max(lo, lo_pt), min(hi, hi_pt)
            if a < b:
                delta[a] = delta.get(a, 0) + problem.tensor_bytes[t]
                delta[b] = delta.get(b, 0) - problem.tensor_bytes[t]
    fixed, load, prev = [], 0, None
    for point in sorted(delta):
        if load and prev is not None and point > prev:
            fixed.append((-load, prev, point, 1))
        load += delta[point]
        prev = point
    return varying + fixed


def _tensor_pieces(problem: HierarchyProblem, v: HierarchyVars, t: int, end: int, put) -> None:
    """Tensor ``t``'s pieces as ``put(level, t, first point, end point, literal, least first point,
    greatest end point)``: home copy, accesses away from home, kept gaps, and the buffers of
    every possible chain's hops."""
    acc, home = problem.accesses(t), problem.home(t)
    if not problem.is_real(acc[0]):
        put(home, t, 0, end, 1, 0, end)
    elif home in v.x[t, 0]:
        put(home, t, 2 * acc[0] + 1, end, v.x[t, 0][home], 2 * acc[0] + 1, end)
    for j, a in enumerate(acc):
        if problem.is_real(a):
            for lv, lit in v.x[t, j].items():
                if lv != home:
                    put(lv, t, 2 * a + 1, 2 * a + 2, lit, 2 * a + 1, 2 * a + 2)
        for lv, k in v.kept.get((t, j), {}).items():
            put(lv, t, 2 * acc[j - 1] + 2, 2 * a + 1, k, 2 * acc[j - 1] + 2, 2 * a + 1)
    for (kind, tt, j, lv), hops in v.chains.items():
        if tt != t:
            continue
        if kind is EVICT:
            put(lv, t, 2 * acc[j - 1] + 2, 2 * hops[0].release + 1, hops[0].present,
                2 * acc[j - 1] + 2, 2 * hops[0].rel_range[1] + 1)
        for h, hop in enumerate(hops):
            if h + 1 < len(hops):
                hi, hi_max = 2 * hops[h + 1].release + 1, 2 * hops[h + 1].rel_range[1] + 1
            else:
                hi = hi_max = 2 * acc[j] + 1 if kind is PREFETCH else end
            put(hop.dst, t, 2 * hop.trigger + 2, hi, hop.present, 2 * hop.trig_range[0] + 2, hi_max)


def build_hierarchy_model(problem: HierarchyProblem, upper: int | None = None,
                          hint: HierarchySolution | None = None, fixed: HierarchySolution | None = None,
                          free_ops: range | None = None, margin: int = 8,
                          link_holds=(), hold_horizon: int | None = None) -> tuple[cp_model.CpModel, HierarchyVars]:
    """The whole model: levels, durations, moves, capacities, makespan (``<= upper`` if given).

    A **window model** with ``fixed`` (a valid solution) and ``free_ops`` (consecutive ops):
    the accesses of the free ops and the gaps next to them are re-decided (a gap reaching
    more than ``margin`` ops away keeps its kept status), every other level, kept gap and
    move is the incumbent's; ops before the free ones keep their times (constants), ops
    after them and the moves they trigger keep theirs plus one ``shift <= 0``, so the model
    is small, its makespan is never above the incumbent's, and each of its solutions is a
    valid plan (:class:`Frame`).

    ``link_holds`` (shared bandwidth): the device's link transfer ends as intervals in the main
    level's bandwidth with their waits (:mod:`~solvers.memory.levels.hierarchy_link_holds`;
    starts ``v.hold_start``, each ending by ``hold_horizon``, default the model's horizon). In a
    window model a hold keeps or shifts its incumbent start where the window cannot move it,
    else it is free (:func:`~solvers.memory.levels.hierarchy_link_holds.add_hierarchy_link_hold_vars`);
    every wait ties it to the fixed, free and shifted ops and moves, so a solution is still a
    valid plan; a send may end after the ops' makespan, so there ``hold_horizon`` is the
    objective's bound, not the makespan.

    Examples
    --------
    >>> p = HierarchyProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> model, v = build_hierarchy_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(v.makespan)  # both accesses in level 0: 3 + 1
    4

    Op 1 re-decided around a plan where it reads its weight at home (``max(1, 8/4)``: 2 + 2 = 4
    cycles): the weight is fetched to level 0 under op 0 (8 / 4 = 2 DMA cycles), then read in
    one cycle: 3.

    >>> q = HierarchyProblem((2, 1), ((), (0,)), ((), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> home = HierarchySolution(((1, 1),), ((False, False),), (), (0, 2), (2, 2))
    >>> model, v = build_hierarchy_model(q, fixed=home, free_ops=range(1, 2))
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> v.start[0], solver.value(v.makespan)  # op 0 kept at its time
    (0, 3)
    """
    if (fixed is None) != (free_ops is None):
        raise ValueError("fixed and free_ops go together")
    model = cp_model.CpModel()
    n = problem.num_ops
    if fixed is None:
        horizon = _horizon(problem) if upper is None else upper
        v = HierarchyVars(problem, horizon)
        v.start = [model.new_int_var(0, horizon, f"start_{i}") for i in range(n)]
        v.dur = [model.new_int_var(0, horizon, f"dur_{i}") for i in range(n)]
        v.makespan = model.new_int_var(0, horizon, "makespan")
    else:
        horizon = fixed.makespan_cycles if upper is None else min(upper, fixed.makespan_cycles)
        v = HierarchyVars(problem, horizon, Frame(fixed, range(max(0, free_ops.start), min(n, free_ops.stop)), margin))
        _add_window_times(model, v)
    lits = add_levels(model, problem, v)
    add_level_durations(model, problem, v)
    add_moves(model, problem, v, lits)
    add_level_capacities(model, problem, v)
    if link_holds:
        if not problem.shared_bandwidth:
            raise ValueError("link holds need shared bandwidth")
        add_hierarchy_link_hold_vars(model, v, link_holds, hold_horizon)
        add_hierarchy_link_hold_waits(model, problem, v, link_holds)
    if problem.shared_bandwidth:
        add_hierarchy_bandwidth(model, problem, v)
    if n:
        model.add(v.makespan >= v.end(n - 1))
    model.minimize(v.makespan)
    if hint is not None:
        _add_hint(model, problem, v, hint)
    return model, v


def _add_window_times(model: cp_model.CpModel, v: HierarchyVars) -> None:
    """A window model's op times: the incumbent's before the free ops, variables for them,
    the incumbent's plus ``shift`` (in ``[-start of the first op after, 0]``) after them; the
    makespan likewise."""
    frame, fixed, n = v.frame, v.frame.fixed, v.problem.num_ops
    free = frame.free
    if free.stop < n:
        frame.shift = model.new_int_var(-fixed.op_start[free.stop], 0, "shift")
    for i in range(n):
        if i < free.start:
            v.start.append(fixed.op_start[i])
            v.dur.append(fixed.op_duration[i])
        elif i < free.stop:
            v.start.append(model.new_int_var(0, v.horizon, f"start_{i}"))
            v.dur.append(model.new_int_var(0, v.horizon, f"dur_{i}"))
        else:
            v.start.append(frame.shifted_start(i))
            v.dur.append(fixed.op_duration[i])
    if frame.shift is not None:
        v.makespan = fixed.makespan_cycles + frame.shift
    else:
        v.makespan = model.new_int_var(0, v.horizon, "makespan")


def _add_hint(model: cp_model.CpModel, problem: HierarchyProblem, v: HierarchyVars, hint: HierarchySolution) -> None:
    """Hint the levels, kept gaps, chains and times of ``hint`` (a valid solution); constants
    and expressions (a window model's shifted times) are skipped, each variable hinted once."""
    done: set[int] = set()

    def put(var, value) -> None:
        if isinstance(var, cp_model.IntVar) and var.index not in done:
            done.add(var.index)
            model.add_hint(var, value)

    for (t, j), row in v.x.items():
        for lv, lit in row.items():
            put(lit, hint.level[t][j] == lv)
    for (t, j), row in v.kept.items():
        for lv, k in row.items():
            put(k, hint.kept[t][j] and hint.level[t][j] == lv)
    chosen = {}
    for m in hint.moves:
        lv = m.dst_level if m.kind is PREFETCH else hint.level[m.tensor][0]
        chosen.setdefault((m.kind, m.tensor, m.gap, lv), []).append(m)
    for key, hops in v.chains.items():
        given = sorted(chosen.get(key, ()), key=lambda m: m.hop)
        for hop, m in zip(hops, given):
            for var, value in ((hop.trigger, m.trigger_op), (hop.release, m.release_op), (hop.start, m.start_cycle)):
                put(var, value)
    if v.frame is not None and v.frame.shift is not None:
        put(v.frame.shift, hint.makespan_cycles - v.frame.fixed.makespan_cycles)
    for i in range(problem.num_ops):
        put(v.start[i], hint.op_start[i])
        put(v.dur[i], hint.op_duration[i])
    put(v.makespan, hint.makespan_cycles)
