"""A sound N-level makespan bound under shared bandwidth: every level carries its forced traffic.

Under ``bandwidth: shared`` (:mod:`~solvers.memory.levels.hierarchy_bandwidth`) each level gives
at most :data:`~solvers.memory.levels.bandwidth.SHARE_UNITS` shares per cycle, so over a plan of
makespan ``T`` it gives at most ``SHARE_UNITS * T`` share-cycles. The unshared relaxation
(:mod:`~solvers.memory.levels.hierarchy_bounds`) lets a host read overlap a host fetch; this
one charges each level everything any plan must move through it. It is the N-level form of the
two-level :func:`~solvers.memory.levels.bandwidth.slow_traffic_lower_bound`.

Notes
-----
A relaxation solved by CP-SAT; its proven bound (``best_objective_bound``) bounds every plan,
whether or not the search finishes.

What every plan uses (the semantics of :mod:`~solvers.memory.levels.hierarchy`):

* an access of ``b`` bytes at level ``l``: its op holds ``ceil(SHARE_UNITS * c_l / D)`` shares
  of ``l`` for its ``D`` cycles, at least ``SHARE_UNITS * B_l / bw_l`` share-cycles for the
  ``B_l`` bytes it moves there, so ``floor(SHARE_UNITS * b / bw_l)`` per access (a floor per
  term: never above the exact sum);
* a hop over the path ``a-b`` of tensor ``t``: ``hop_cycles(t, a, b)`` cycles at its shares of
  ``a`` and of ``b`` (latency included), and the same cycles on the one DMA engine;
* an access at a level ``l`` other than home is a kept copy or a fetch along ``route(home, l)``;
  a kept copy goes back, gap by gap, to a fetch into ``l`` or to the producer's write at ``l``.
  So a tensor with a reader at ``l`` (and no write at ``l``) is fetched into ``l`` at least once,
  every hop of the route;
* a produced tensor written at ``l0`` other than home is evicted along ``route(l0, home)`` at its
  first gap that is not kept: when it is live-out (the end is at home) or when some reader is
  not at ``l0`` (a gap between different levels is never kept).

Sets: the real accesses ``(t, j)`` of *uncut* tensors with bytes (tensors no split may cut);
levels ``l`` that hold the tensor whole (level 0 only for a fast-only op). Variables:
``x[t,j,l]`` (one level per access), ``fetch[t,l]`` for ``l != home``, ``evict[t,l0]`` for a
produced tensor and ``l0 != home``, op durations ``d[i]``, ``T``. Constraints:

* ``fetch[t,l] >= x[t,j,l] - x[t,0,l]`` per reader ``j`` (``x[t,0,l]`` the producer's, 0 for an
  input), ``evict[t,l0] >= x[t,0,l0]`` when live-out, ``evict[t,l0] >= x[t,0,l0] - x[t,j,l0]``;
* per op (unless a split may cut it into portions), the accesses at each level fit it;
* ``d[i] >=`` its per-op bound (:func:`~solvers.memory.levels.hierarchy_bounds.op_cycle_lower_bounds`)
  and the sum of its access times at their levels (cut tensors' at the fastest level),
  ``streams * T >= sum d[i]``;
* one DMA engine: ``T >=`` the hop cycles of every fetch and eviction;
* per level ``L`` (shared bandwidth only): ``SHARE_UNITS * T >=`` its access and hop share-cycles.

Objective: minimize ``T``. Nothing depends on the op order (only on which op writes and which
read each tensor), so it bounds every order. Splits: a cut tensor (one a split may cut, or one
a splittable op writes) has portions that may sit in different levels and move in parts, so it adds no level traffic and no hop (dropped terms keep
a relaxation); an uncut tensor is whole wherever it is, read by each portion of a split op, so
one of those reads stands for them all. A split op's portions take at least its compute
together (the ISA's fill and drain per portion; the caller vouches, as for the unshared bound).
"""

from __future__ import annotations

from fractions import Fraction

from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions
from solvers.memory.levels.bandwidth import SHARE_UNITS, dma_share
from solvers.memory.levels.hierarchy import HierarchyProblem
from solvers.memory.levels.hierarchy_bounds import op_cycle_lower_bounds

__all__ = ["route_traffic", "tensor_traffic_floors", "traffic_floor", "build_traffic_bound_model",
           "shared_traffic_lower_bound"]

# Access times in d[i] are compared in 1/K cycles, floored (never above the exact value).
_SCALE = 64


def route_traffic(problem: HierarchyProblem, t: int, src: int, dst: int) -> tuple[int, tuple[int, ...]]:
    """The DMA-engine cycles and, per level, the share-cycles of moving tensor ``t`` from level
    ``src`` to ``dst`` along its route (every hop at its path rate, latency included).

    Examples
    --------
    8 B from host (1 B/cycle) to vmem over hbm: host -> hbm 8 cycles holding all of host and a
    quarter of hbm, hbm -> vmem 2 cycles holding all of hbm and half of vmem:

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> route_traffic(p, 0, 2, 0)
    (10, (1000, 4000, 8000))
    """
    bw = problem.bandwidth_bytes_per_cycle
    route = problem.route(src, dst)
    engine, per_level = 0, [0] * problem.num_levels
    for a, b in zip(route, route[1:]):
        cycles = problem.hop_cycles(t, a, b)
        engine += cycles
        for lv in (a, b):
            per_level[lv] += cycles * dma_share(problem.path_rate(a, b), bw[lv])
    return engine, tuple(per_level)


def _allowed(problem: HierarchyProblem, t: int, op: int) -> list[int]:
    """The levels an access of uncut ``t`` by ``op`` may be at: level 0 for a fast-only op, else
    every level that holds it whole (home always does)."""
    if op in set(problem.fast_only_ops):
        return [0]
    b = problem.tensor_bytes[t]
    return [lv for lv in range(problem.num_levels) if b <= problem.capacity_bytes[lv] or lv == problem.home(t)]


def tensor_traffic_floors(problem: HierarchyProblem, t: int) -> tuple[int, tuple[int, ...]]:
    """The least DMA-engine cycles and, per level, the least share-cycles any plan spends on
    uncut tensor ``t`` (each minimised on its own over the producer's level and the set of
    levels its readers use; module Notes).

    Examples
    --------
    A 16-B host weight read once (host 1 B/cycle, hbm 4, vmem 16): read in place costs host
    16,000 share-cycles and the engine nothing; fetched to hbm, host 16,000 and the engine 16;
    so host's floor is 16,000 and every other's 0 (read at vmem after the whole route, or at
    hbm after one hop, or in place):

    >>> p = HierarchyProblem((1,), ((0,),), ((),), (16,), (64, 64, 1024), (16, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,), shared_bandwidth=True)
    >>> tensor_traffic_floors(p, 0)
    (0, (0, 0, 16000))
    """
    nl, home, bw = problem.num_levels, problem.home(t), problem.bandwidth_bytes_per_cycle
    acc, b = problem.accesses(t), problem.tensor_bytes[t]
    real = [(j, a) for j, a in enumerate(acc) if problem.is_real(a)]
    if not b or not real:
        return 0, (0,) * nl
    produced = problem.is_real(acc[0])
    readers = [_allowed(problem, t, a) for j, a in real if j]
    access = [_access_share_cycles(b, bw[lv]) for lv in range(nl)]
    routes = {(home, lv): route_traffic(problem, t, home, lv) for lv in range(nl) if lv != home}
    routes.update({(lv, home): route_traffic(problem, t, lv, home) for lv in range(nl) if lv != home and produced})
    best = [None] * (nl + 1)  # per level, then the engine
    for writer in (_allowed(problem, t, acc[0]) if produced else [None]):
        for mask in range(1, 1 << nl) if readers else [0]:
            used = [lv for lv in range(nl) if mask >> lv & 1]
            if any(not set(used) & set(r) for r in readers):
                continue
            moves = [routes[home, lv] for lv in used if lv not in (home, writer)]
            if writer is not None and writer != home and (acc[-1] == problem.num_ops or set(used) - {writer}):
                moves.append(routes[writer, home])
            for target in range(nl + 1):
                if target == nl:
                    cost = sum(m[0] for m in moves)
                else:
                    cost = sum(m[1][target] for m in moves) + (access[target] if writer == target else 0)
                    cost += sum(min(access[target] if lv == target else 0 for lv in set(used) & set(r))
                                for r in readers)
                best[target] = cost if best[target] is None else min(best[target], cost)
    return best[nl], tuple(best[:nl])


def traffic_floor(problem: HierarchyProblem, cut: frozenset = frozenset()) -> int:
    """A closed-form part of the bound: the DMA engine's least load, and under shared
    bandwidth each level's least share-cycles over ``SHARE_UNITS``, each summed over the
    uncut tensors of :func:`tensor_traffic_floors` (cut ones, ``cut``, add nothing).

    Examples
    --------
    Two 16-B host weights read once each: host carries 32,000 share-cycles, 32 cycles.

    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (16, 16), (64, 64, 1024), (16, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> traffic_floor(p)
    32
    """
    engine, levels = 0, [0] * problem.num_levels
    for t in range(problem.num_tensors):
        if t in cut:
            continue
        e, per_level = tensor_traffic_floors(problem, t)
        engine += e
        levels = [x + y for x, y in zip(levels, per_level)]
    shared = max(-(-x // SHARE_UNITS) for x in levels) if problem.shared_bandwidth else 0
    return max(engine, shared)


def _access_share_cycles(size: int, rate: Fraction) -> int:
    """``floor(SHARE_UNITS * size / rate)``: an access's least share-cycles of its level."""
    q = Fraction(SHARE_UNITS * size) / rate
    return q.numerator // q.denominator


def _scaled(size: int, rate: Fraction) -> int:
    q = Fraction(_SCALE * size) / rate
    return q.numerator // q.denominator


def _cut_tensors(problem: HierarchyProblem, splittable_tensors: frozenset, splittable_ops: frozenset) -> frozenset:
    """The tensors a split may cut: these, the problem's groups', and what a splittable op
    writes (a group cuts every tensor it writes)."""
    ops = _split_ops(problem, splittable_ops)
    return (frozenset(splittable_tensors) | {t for g in problem.splits for t in g.tensors}
            | {t for i in ops for t in problem.writes[i]})


def _split_ops(problem: HierarchyProblem, splittable_ops: frozenset) -> frozenset:
    return frozenset(splittable_ops) | {i for g in problem.splits for i in range(g.first_op, g.last_op + 1)}


def build_traffic_bound_model(problem: HierarchyProblem, splittable_ops: frozenset = frozenset(),
                              splittable_tensors: frozenset = frozenset(), num_streams: int = 1,
                              ) -> tuple[cp_model.CpModel, cp_model.IntVar]:
    """The relaxation of the module Notes; returns the model and its makespan variable. The
    per-level traffic rows are added only when ``problem.shared_bandwidth``.

    Examples
    --------
    Two ops each read a 16-B host weight (host 1 B/cycle, paths vmem-hbm, hbm-host). Unshared,
    one weight is read at host (16) while the other is fetched (16): 17. Shared, host carries
    both weights' 16 B whichever way: 32.

    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (16, 16), (64, 64, 1024), (16, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> model, makespan = build_traffic_bound_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model); solver.value(makespan)
    32
    """
    cut, split_ops = _cut_tensors(problem, splittable_tensors, splittable_ops), _split_ops(problem, splittable_ops)
    bw, nl = problem.bandwidth_bytes_per_cycle, problem.num_levels
    per_op = op_cycle_lower_bounds(problem, split_ops)
    model = cp_model.CpModel()
    x: dict[tuple[int, int], dict[int, object]] = {}  # (tensor, access) -> level -> literal
    engine_terms, level_terms = [], [[] for _ in range(nl)]
    horizon = sum(per_op)
    for t in range(problem.num_tensors):
        b, acc = problem.tensor_bytes[t], problem.accesses(t)
        if not b or t in cut:
            continue
        for j, a in enumerate(acc):
            if not problem.is_real(a):
                continue
            x[t, j] = {lv: model.new_bool_var(f"level_{t}_{j}_{lv}") for lv in _allowed(problem, t, a)}
            model.add_exactly_one(x[t, j].values())
            for lv, lit in x[t, j].items():
                level_terms[lv].append(_access_share_cycles(b, bw[lv]) * lit)
        horizon += _add_moves(model, problem, t, x, engine_terms, level_terms)
    horizon += sum(_scaled(problem.tensor_bytes[t], min(bw)) // _SCALE + 1
                   for t in range(problem.num_tensors) for _ in problem.accesses(t))
    makespan = model.new_int_var(0, horizon, "makespan")
    durations = _add_op_durations(model, problem, x, per_op, split_ops, horizon)
    model.add(max(1, num_streams) * makespan >= sum(durations))
    if engine_terms:
        model.add(makespan >= sum(engine_terms))
    if problem.shared_bandwidth:
        for terms in level_terms:
            if terms:
                model.add(SHARE_UNITS * makespan >= sum(terms))
    model.minimize(makespan)
    return model, makespan


def _add_moves(model: cp_model.CpModel, problem: HierarchyProblem, t: int, x: dict, engine_terms: list,
               level_terms: list) -> int:
    """Tensor ``t``'s forced fetches and eviction (module Notes) with their engine cycles and
    share-cycles; returns their largest total engine cycles (for the horizon)."""
    acc, home = problem.accesses(t), problem.home(t)
    readers = [j for j, a in enumerate(acc) if j and problem.is_real(a) and (t, j) in x]
    produced = problem.is_real(acc[0]) and (t, 0) in x
    most = 0
    for lv in range(problem.num_levels):
        if lv == home:
            continue
        reading = [x[t, j][lv] for j in readers if lv in x[t, j]]
        written = x[t, 0].get(lv) if produced else None
        if reading:
            fetch = model.new_bool_var(f"fetch_{t}_{lv}")
            for lit in reading:
                model.add(fetch >= lit - (written if written is not None else 0))
            most += _charge(problem, t, home, lv, fetch, engine_terms, level_terms)
        if written is not None:
            evict = model.new_bool_var(f"evict_{t}_{lv}")
            if acc[-1] == problem.num_ops:  # live-out: the end is at home
                model.add(evict >= written)
            for j in readers:
                model.add(evict >= written - x[t, j].get(lv, 0))
            most += _charge(problem, t, lv, home, evict, engine_terms, level_terms)
    return most


def _charge(problem: HierarchyProblem, t: int, src: int, dst: int, lit, engine_terms: list,
            level_terms: list) -> int:
    engine, per_level = route_traffic(problem, t, src, dst)
    engine_terms.append(engine * lit)
    for lv, u in enumerate(per_level):
        if u:
            level_terms[lv].append(u * lit)
    return engine


def _add_op_durations(model: cp_model.CpModel, problem: HierarchyProblem, x: dict, per_op: tuple[int, ...],
                      split_ops: frozenset, horizon: int) -> list:
    """Per op ``d[i]``: its per-op bound and its accesses' times at their levels; the accesses at
    each level fit it unless a split may cut the op into portions."""
    bw, caps = problem.bandwidth_bytes_per_cycle, problem.capacity_bytes
    fast_only = set(problem.fast_only_ops)
    durations = []
    for i, row in enumerate(problem.op_accesses()):
        d = model.new_int_var(per_op[i], max(horizon, per_op[i]), f"dur_{i}")
        terms, per_level = [], {}
        for t, j in row:
            b = problem.tensor_bytes[t]
            if (t, j) not in x:  # empty, or cut: its fastest possible level
                terms.append(_scaled(b, bw[0] if i in fast_only else max(bw)))
                continue
            for lv, lit in x[t, j].items():
                terms.append(_scaled(b, bw[lv]) * lit)
                per_level.setdefault(lv, []).append(b * lit)
        model.add(_SCALE * d >= sum(terms))
        if i not in split_ops:
            for lv, held in per_level.items():
                model.add(sum(held) <= caps[lv])
        durations.append(d)
    return durations


def shared_traffic_lower_bound(problem: HierarchyProblem, budget: Budget | None = None, amount: float = 0.5,
                               splittable_ops: frozenset = frozenset(), splittable_tensors: frozenset = frozenset(),
                               num_streams: int = 1,
                               options: SolveOptions = SolveOptions(num_workers=1, random_seed=0)) -> int:
    """A lower bound on every plan's makespan (any op order, and with the splittable sets any
    split of those ops and tensors): CP-SAT's proven bound on the relaxation of the module Notes
    within ``amount`` units of ``budget`` (None: a 20-s memory-levels budget), never below the
    per-op bounds shared over ``num_streams`` nor :func:`traffic_floor`. An infeasible
    relaxation (no plan exists) gives that floor.

    Examples
    --------
    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (16, 16), (64, 64, 1024), (16, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> shared_traffic_lower_bound(p)
    32
    """
    split_ops = _split_ops(problem, splittable_ops)
    floor = max(-(-sum(op_cycle_lower_bounds(problem, split_ops)) // max(1, num_streams)),
                traffic_floor(problem, _cut_tensors(problem, splittable_tensors, splittable_ops)))
    model, _ = build_traffic_bound_model(problem, splittable_ops, splittable_tensors, num_streams)
    if budget is None:
        budget = Budget.start(20.0, MEMORY_LEVELS)
        amount = budget.left
    return budget.proven_lower_bound(model, options, amount, "traffic_bound", floor)
