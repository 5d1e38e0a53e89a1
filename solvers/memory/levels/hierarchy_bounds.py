"""Sound lower bounds on the N-level makespan (issue 14): for the whole instance, however long.

Notes
-----
Two facts of :mod:`~solvers.memory.levels.hierarchy` give the bounds:

* ops run in series, each for ``max(compute, sum_l ceil(B_l / bw_l))``, and at op ``i``'s
  point every level holds its accesses there, so ``B_l <= capacity_l``;
* one DMA engine runs every hop. An input tensor (it starts at home) read anywhere but its
  home needs at least one fetch, whose first hop leaves home (``hop_cycles(home, n)`` for
  a neighbour ``n``); a produced, live-out tensor written anywhere but home needs an
  eviction, whose last hop enters home.

:func:`op_cycle_lower_bounds`: per op, its accesses spread fractionally over the levels,
fastest first, up to each capacity (the fractional knapsack is the exact minimum of
``sum B_l / bw_l``; a fast-only op's accesses are all at level 0).

:func:`hierarchy_lower_bound`: a relaxation solved by CP-SAT. Per input tensor ``t`` whose
home is not its fastest level, ``f_t`` = "leaves home at least once"; per produced live-out
tensor, ``g_t`` = "written away from home". An access of a tensor that stays home costs
``b / bw_home`` op cycles, one that may leave ``b / bw_best`` (``bw_best`` the fastest
level it may be at). Then ``d_i >= `` its per-op bound, ``d_i >= `` the sum of its access
costs (scaled by ``K`` and floored: never above the exact sum), the makespan ``M >= sum_i
d_i`` and ``M >= sum_t f_t D_t + g_t E_t`` (first and last hop lengths). Minimising ``M`` over
this relaxation is a lower bound on every plan; CP-SAT's proven bound on it (not its best
solution) is what is returned, so a stop on the budget stays sound.

What it bounds. Nothing in the relaxation depends on the op order (only on which ops touch
which tensors), so it bounds every order of the same ops, not just the problem's. With the
ops a plan may split and the tensors it may cut (``splittable_ops``, ``splittable_tensors``)
it bounds split plans too, because a split only re-arranges the same charges: the portions
of an op take at least its compute together (the ISA's fill and drain per portion; the
caller vouches for this) and read every byte of each access at least once (a cut tensor's
portions add up to it, an uncut one is read whole by every portion), so the per-op bound
without capacity and the access terms still hold summed over the portions; an uncut tensor
still leaves home whole or not at all; a cut one may leave in part, which its fraction
variable allows (:func:`build_bound_model`). One compute stream is assumed (``M >= sum
d_i``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions
from solvers.memory.levels.hierarchy import HierarchyProblem
from solvers.cpsat_support import integer_objective_bound

__all__ = ["op_cycle_lower_bounds", "build_bound_model", "relaxation_stays_home", "RelaxationResult", "solve_bound_relaxation",
           "hierarchy_lower_bound"]

# Access costs are compared in 1/K cycles, floored (a sound under-estimate of each term).
_SCALE = 64
# A splittable tensor's moved fraction is counted in 1/UNITS (see build_bound_model).
UNITS = 256


def op_cycle_lower_bounds(problem: HierarchyProblem, splittable_ops: frozenset = frozenset()) -> tuple[int, ...]:
    """Per op, a lower bound on its duration in any plan (for an op of ``splittable_ops``, on
    the summed durations of its portions under any split: its portions may each fit a level
    the whole op does not, so its bytes are all charged at the fastest level it may use).

    Examples
    --------
    An op reads 24 B; level 0 (8 B/cycle) holds 16 of them, the rest comes from level 1
    (4 B/cycle): ``16/8 + 8/4 = 4`` cycles, above its compute (3):

    >>> p = HierarchyProblem((3,), ((0, 1),), ((),), (16, 8), (16, 64), (8, 4), 1, ((0, 1),))
    >>> op_cycle_lower_bounds(p)
    (4,)

    Split into portions it may read everything from level 0: ``24/8 = 3`` cycles.

    >>> op_cycle_lower_bounds(p, splittable_ops=frozenset({0}))
    (3,)
    """
    bw, caps = problem.bandwidth_bytes_per_cycle, problem.capacity_bytes
    fast_only = set(problem.fast_only_ops)
    order = sorted(range(problem.num_levels), key=lambda lv: (-bw[lv], lv))
    out = []
    for i, row in enumerate(problem.op_accesses()):
        total = sum(problem.tensor_bytes[t] for t, _ in row)
        if i in fast_only:
            cycles = Fraction(total) / bw[0]
        elif i in splittable_ops:
            cycles = Fraction(total) / bw[order[0]]
        else:
            cycles, left = Fraction(0), total
            for lv in order:
                take = min(left, caps[lv])
                cycles += Fraction(take) / bw[lv]
                left -= take
            cycles += Fraction(left) / bw[order[-1]]  # more bytes than every level holds: infeasible anyway
        out.append(max(problem.compute_cycles[i], _ceil(cycles)))
    return tuple(out)


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)


def _scaled(size: int, rate: Fraction) -> int:
    """``floor(K * size / rate)``: an access's cycles in 1/K units, never above the exact value."""
    return (_SCALE * size * rate.denominator) // rate.numerator


def _hop_floor(problem: HierarchyProblem, t: int, home: int) -> int:
    """The shortest hop into or out of ``home`` for tensor ``t`` (a route's first or last)."""
    nbrs = [b if a == home else a for a, b in problem.dma_paths if home in (a, b)]
    return min(problem.hop_cycles(t, home, n) for n in nbrs)


def build_bound_model(problem: HierarchyProblem, splittable_ops: frozenset = frozenset(),
                      splittable_tensors: frozenset = frozenset()) -> tuple[cp_model.CpModel, cp_model.IntVar]:
    """The relaxation of the module Notes; returns the model and its makespan variable.

    With ``splittable_ops`` / ``splittable_tensors`` (the ops a plan may split into portions
    and the tensors it may cut with them; the problem's own split groups always count) it
    bounds split plans too: those ops' per-op
    bounds ignore capacity, and each of those tensors that has a "leaves home" choice gets a
    *fraction* moved instead (its portions may each be fetched or read at home): an integer
    ``k`` in ``0..UNITS`` with the DMA charged ``k/UNITS`` of the crossing and the reads at
    home ``1 - min(k+1, UNITS)/UNITS`` of the bytes, each rounded down: for every real
    fraction ``z``, ``k = floor(z * UNITS)`` under-charges both sides, so the model stays a
    relaxation.

    Examples
    --------
    One op reads a 16-B host tensor (host 1 B/cycle; vmem 16 B/cycle one hop away, 16 cycles
    at the host's rate): read at host, 16 op cycles; fetched, 16 DMA cycles and 1 op cycle.
    Either way the makespan is at least 16:

    >>> p = HierarchyProblem((0,), ((0,),), ((),), (16,), (64, 64), (16, 1), 1, ((0, 1),))
    >>> model, makespan = build_bound_model(p)
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> solver.value(makespan)
    16

    Split, half of it may be fetched while the other half is read at home: about 8 each.

    >>> model, makespan = build_bound_model(p, frozenset({0}), frozenset({0}))
    >>> solver = cp_model.CpSolver(); _ = solver.solve(model)
    >>> 8 <= solver.value(makespan) <= 9
    True
    """
    splittable_ops = frozenset(splittable_ops) | {i for g in problem.splits for i in range(g.first_op, g.last_op + 1)}
    splittable_tensors = frozenset(splittable_tensors) | {t for g in problem.splits for t in g.tensors}
    bw = problem.bandwidth_bytes_per_cycle
    fast_only = set(problem.fast_only_ops)
    per_op = op_cycle_lower_bounds(problem, splittable_ops)
    horizon = sum(per_op) + sum(_hop_floor(problem, t, problem.home(t)) for t in range(problem.num_tensors))
    horizon += sum(_ceil(Fraction(b) / min(bw)) * len(problem.accesses(t)) for t, b in enumerate(problem.tensor_bytes))
    model = cp_model.CpModel()
    away: dict[tuple[int, int], tuple] = {}  # (tensor, access) -> ("lit", its "leaves home") or ("units", w)
    dma_terms = []  # in 1/K cycles
    for t in range(problem.num_tensors):
        lit_accesses = _home_bound_accesses(problem, t)
        if not lit_accesses:
            continue
        forced = problem.home(t) != 0 and any(problem.accesses(t)[j] in fast_only for j in lit_accesses)
        if t in splittable_tensors:
            moved = model.new_int_var(UNITS if forced else 0, UNITS, f"moved_units_{t}")
            upper = model.new_int_var(0, UNITS, f"moved_upper_{t}")  # min(moved + 1, UNITS)
            model.add(upper <= moved + 1)
            away.update({(t, j): ("units", upper) for j in lit_accesses})
            dma_terms.append(_crossing_scaled(problem, t) // UNITS * moved)
            continue
        lit = model.new_bool_var(f"leaves_home_{t}")
        if forced:
            model.add(lit == 1)
        away.update({(t, j): ("lit", lit) for j in lit_accesses})
        dma_terms.append(_SCALE * _hop_floor(problem, t, problem.home(t)) * lit)
    durations = []
    for i, row in enumerate(problem.op_accesses()):
        d = model.new_int_var(per_op[i], horizon, f"dur_{i}")
        terms = []
        for t, j in row:
            terms.append(_access_term(problem, t, bw[0] if i in fast_only else max(bw), away.get((t, j))))
        model.add(_SCALE * d >= sum(terms))
        durations.append(d)
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add(makespan >= sum(durations))
    if dma_terms:
        model.add(_SCALE * makespan >= sum(dma_terms))
    model.minimize(makespan)
    return model, makespan


def _access_term(problem: HierarchyProblem, t: int, best_bw: Fraction, choice):
    """One access's op cycles in 1/K units, never above the exact value: at ``best_bw`` unless
    ``choice`` may keep it home ("lit": all or nothing; "units": the fraction not moved)."""
    size = problem.tensor_bytes[t]
    best = _scaled(size, best_bw)
    if choice is None:
        return best
    kind, var = choice
    if kind == "lit":
        at_home = _scaled(size, problem.bandwidth_bytes_per_cycle[problem.home(t)])
        return at_home + (best - at_home) * var
    # K * ((1 - z) * size / bw_home + z * size / best_bw) with z <= var / UNITS, rounded down.
    exact_home = Fraction(_SCALE * size) / problem.bandwidth_bytes_per_cycle[problem.home(t)]
    saving = exact_home - Fraction(_SCALE * size) / best_bw
    return _floor(exact_home) - _ceil(saving / UNITS) * var


def _floor(x: Fraction) -> int:
    return x.numerator // x.denominator


def _crossing_scaled(problem: HierarchyProblem, t: int) -> int:
    """``floor(K * bytes / rate)`` over the fastest path out of ``t``'s home: what moving all of
    ``t`` in portions costs the DMA engine at least (latencies left out)."""
    home = problem.home(t)
    rate = max(problem.path_rate(a, b) for a, b in problem.dma_paths if home in (a, b))
    return _scaled(problem.tensor_bytes[t], rate)


def relaxation_stays_home(problem: HierarchyProblem, leaving: frozenset) -> frozenset:
    """The tensors with a "leaves home" literal that the relaxation's solution keeps home.

    Examples
    --------
    >>> p = HierarchyProblem((0, 0), ((0,), (1,)), ((), ()), (16, 16), (64, 64), (16, 1), 1, ((0, 1),))
    >>> sorted(relaxation_stays_home(p, frozenset({0})))
    [1]
    """
    return frozenset(t for t in range(problem.num_tensors) if _home_bound_accesses(problem, t) and t not in leaving)


def _home_bound_accesses(problem: HierarchyProblem, t: int) -> tuple[int, ...]:
    """The accesses of ``t`` that are at home unless a DMA moves it: every real access of an
    input tensor (a fetch's first hop leaves home), the write of a produced live-out tensor
    (an eviction's last hop enters home); none when ``t`` is empty or home is as fast as any
    level (nothing to gain by leaving, unless a fast-only op needs level 0)."""
    acc, home = problem.accesses(t), problem.home(t)
    if not problem.tensor_bytes[t] or len(acc) < 2:
        return ()
    if not problem.is_real(acc[0]):
        picked = tuple(j for j, a in enumerate(acc) if problem.is_real(a))
    elif not problem.is_real(acc[-1]):
        picked = (0,)
    else:
        return ()
    bw, fast_only = problem.bandwidth_bytes_per_cycle, set(problem.fast_only_ops)
    needs_level_0 = home != 0 and any(acc[j] in fast_only for j in picked)
    return picked if bw[home] < max(bw) or needs_level_0 else ()


@dataclass(frozen=True, slots=True)
class RelaxationResult:
    """The relaxation's proven bound and, when it found one, which tensors its best solution
    moves away from home (a hint for the greedy: the others are read where they live).

    Examples
    --------
    >>> RelaxationResult(16, frozenset({0})).bound_cycles
    16
    """

    bound_cycles: int
    leaving_home: frozenset | None


def solve_bound_relaxation(problem: HierarchyProblem, budget: Budget | None = None, amount: float = 0.5,
                           options: SolveOptions = SolveOptions(num_workers=1, random_seed=0),
                           splittable_ops: frozenset = frozenset(),
                           splittable_tensors: frozenset = frozenset()) -> RelaxationResult:
    """The relaxation of the module Notes, solved by CP-SAT within ``amount`` units of
    ``budget`` (None: a 20-s memory-levels budget, one worker); its proven bound, never below
    the sum of the per-op bounds.

    Examples
    --------
    >>> p = HierarchyProblem((0,), ((0,),), ((),), (16,), (64, 64), (16, 1), 1, ((0, 1),))
    >>> r = solve_bound_relaxation(p)
    >>> r.bound_cycles
    16
    """
    floor = sum(op_cycle_lower_bounds(problem, frozenset(splittable_ops) | {
        i for g in problem.splits for i in range(g.first_op, g.last_op + 1)}))
    model, _ = build_bound_model(problem, splittable_ops, splittable_tensors)
    if budget is None:
        budget = Budget.start(20.0, MEMORY_LEVELS)
        amount = budget.left
    status, solver, _ = budget.run_cpsat(model, options, amount, "lower_bound", interleave=False)
    if not status.has_solution:
        return RelaxationResult(floor, None)
    leaving = frozenset(int(v.name.rsplit("_", 1)[1]) for v in _literals(model) if solver.value(v))
    return RelaxationResult(max(floor, integer_objective_bound(solver)), leaving)


def _literals(model: cp_model.CpModel) -> list:
    proto = model.proto
    return [model.get_bool_var_from_proto_index(k) for k, v in enumerate(proto.variables)
            if v.name.startswith("leaves_home_")]


def hierarchy_lower_bound(problem: HierarchyProblem, budget: Budget | None = None, amount: float = 0.5,
                          splittable_ops: frozenset = frozenset(), splittable_tensors: frozenset = frozenset()) -> int:
    """A lower bound on every plan's makespan (:func:`solve_bound_relaxation`'s), in any op
    order (nothing in the relaxation depends on it) and, with the splittable sets, under any
    split of those ops and tensors.

    Examples
    --------
    >>> p = HierarchyProblem((0,), ((0,),), ((),), (16,), (64, 64), (16, 1), 1, ((0, 1),))
    >>> hierarchy_lower_bound(p)
    16
    """
    return solve_bound_relaxation(problem, budget, amount, splittable_ops=frozenset(splittable_ops),
                                  splittable_tensors=frozenset(splittable_tensors)).bound_cycles
