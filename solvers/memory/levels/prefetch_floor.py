"""A closed-form floor for plans on several streams: every slow-start tensor is prefetched or read slow.

Notes
-----
Every plan of a device's ops (any order, stream assignment, level assignment; one DMA
engine, ``K`` compute streams) decides, per *choice tensor* ``t``:

* a slow-born tensor (no producer: a weight, a graph input, a received copy): is it
  prefetched at least once (``y[t] = 1``, at least ``dma_cycles(t)`` on the one engine)? Each
  of its readers reads it fast only then; else every reader reads it slow;
* a live-out produced tensor: does its producer write it fast (``y[t] = 1``, then it is
  evicted: ``dma_cycles(t)`` on the engine) or slow?

A fast-only reader or producer forces ``y[t] = 1``. Every other access is at its cheapest
(fast when it fits). Op i's duration is then at least ``g_i(Y)``: its exact roofline
``max(compute, min ceil(FB/bw_f) + ceil(SB/bw_s))`` over the fast byte sums ``FB <=
capacity`` of its accesses that may be fast (every one but the choice tensors outside ``Y``;
the same enumeration as :func:`~solvers.memory.levels.validate.op_duration_lower_bounds`),
which is nonincreasing in ``Y``. The streams run at most ``K * T`` of op time and the engine
at most ``T``, for a plan of makespan ``T``:

    min T  s.t.  K T >= sum_i d_i,   T >= sum_t dma_cycles(t) y[t],   y in [0, 1],

with, per op i and its choice tensors ``C_i`` (each row true at every 0/1 ``y``, so the LP
relaxes every plan):

* ``d_i >= g_i(C_i)`` (every choice fast), and per ``t`` in ``C_i``: ``d_i >= g_i(C_i) +
  (g_i(C_i - t) - g_i(C_i)) (1 - y[t])`` (``t`` slow costs at least that, whatever the
  others: ``g_i`` is nonincreasing);
* with two choices or more, the additive memory time: ``d_i >= total/bw_s - k (O_i +
  sum_t bytes(t) y[t])``, ``k = 1/bw_s - 1/bw_f``, ``O_i`` the bytes of its other accesses
  (its fast bytes are at most the bytes that may be fast).

A tensor read by several ops is fetched once (``y[t]``) or read slow by each. Splits
(:class:`~solvers.memory.levels.stream_bound.SplitView`): a cut tensor is no choice (it may be
fast in part, moved in pieces: as fast as it fits), and a split op takes its own duration
bound whatever ``Y`` (its portions may each fit). Shared bandwidth only delays ops and DMAs,
so the floor holds there too.

Solved by GLOP (floats) and certified exactly: weak duality in rationals over the LP's box
with GLOP's row duals (``lambda >= 0``) gives ``lambda . b + sum_c min over [lo_c, hi_c] of
(c - A^T lambda)_c x_c``, a lower bound of the LP whatever the duals' rounding; its ceiling
is the floor (makespans are integers). The box holds every plan's point (``T`` up to the sum
of every op's longest duration and every DMA, ``d_i`` up to its slowest roofline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from ortools.linear_solver import pywraplp

from solvers.memory.levels.problem import LevelProblem, cycles_for_bytes

__all__ = ["prefetch_or_slow_floor"]

_MAX_EXACT_SIZES = 16  # above: the continuous relaxation of an op's fast byte sums


@dataclass(slots=True)
class _Rows:
    """A covering LP ``min cost . x`` s.t. ``sum coef x >= lo`` per row, ``x`` in its box (exact
    rational data)."""

    lo: list = field(default_factory=list)  # column boxes
    hi: list = field(default_factory=list)
    cost: list = field(default_factory=list)
    rows: list = field(default_factory=list)  # (dict column -> coefficient, right-hand side)

    def column(self, lo, hi, cost=0) -> int:
        self.lo.append(Fraction(lo))
        self.hi.append(Fraction(hi))
        self.cost.append(Fraction(cost))
        return len(self.lo) - 1

    def at_least(self, terms: dict, rhs) -> None:
        self.rows.append(({c: Fraction(v) for c, v in terms.items() if v}, Fraction(rhs)))


def _choices(problem: LevelProblem, split_ops: frozenset, cut: frozenset) -> tuple[dict, set]:
    """Per choice tensor, the ops whose access it decides (module Notes); and those forced fast."""
    fast_only = set(problem.fast_only_ops)
    decided, forced = {}, set()
    for t in range(problem.num_tensors):
        if not problem.tensor_bytes[t] or t in cut:
            continue
        acc = problem.accesses(t)
        if not problem.is_real(acc[0]):
            ops = [a for a in acc[1:] if problem.is_real(a)]
        elif acc[-1] == problem.num_ops:
            ops = [acc[0]]
        else:
            continue
        if any(a in fast_only for a in ops):
            forced.add(t)
        ops = [a for a in ops if a not in split_ops and a not in fast_only]
        if ops or t in forced:
            decided[t] = ops
    return decided, forced


def _least_duration(problem: LevelProblem, i: int, may_be_fast: list[int], total: int, continuous: bool) -> int:
    """Op i's least roofline when only the bytes ``may_be_fast`` may be fast (module Notes)."""
    cap = problem.capacity_bytes[0]
    bf, bs = problem.bandwidth_bytes_per_cycle
    if continuous or len(may_be_fast) > _MAX_EXACT_SIZES:
        fb = min(cap, sum(may_be_fast)) if bf >= bs else 0
        return max(problem.compute_cycles[i], math.ceil(fb / bf + (total - fb) / bs))
    sums = {0}
    for b in may_be_fast:
        sums |= {x + b for x in sums if x + b <= cap}
    return max(problem.compute_cycles[i],
               min(cycles_for_bytes(fb, bf) + cycles_for_bytes(total - fb, bs) for fb in sums))


def _add_op(lp: _Rows, problem: LevelProblem, i: int, row: list[int], choice: list[int], y: dict,
            cut: frozenset, least: int) -> int:
    """Op i's duration column (at least ``least``) and its rows (module Notes): it touches the
    sized tensors ``row``, its choice tensors are ``choice``."""
    sizes = problem.tensor_bytes
    total = sum(sizes[t] for t in row)
    continuous = any(t in cut for t in row)  # a cut tensor may be fast in part
    others = [sizes[t] for t in row if t not in choice]
    best = _least_duration(problem, i, others + [sizes[t] for t in choice], total, continuous)
    bf, bs = problem.bandwidth_bytes_per_cycle
    best = max(best, least)
    d = lp.column(best, problem.compute_cycles[i] + cycles_for_bytes(total, bs) + 1)
    for t in choice:
        slow = _least_duration(problem, i, others + [sizes[u] for u in choice if u != t], total, continuous)
        if slow > best:  # d + (slow - best) y >= slow
            lp.at_least({d: 1, y[t]: slow - best}, slow)
    if len(choice) > 1 and bf > bs:
        k = 1 / bs - 1 / bf
        terms = {d: 1, **{y[t]: k * sizes[t] for t in choice}}
        lp.at_least(terms, total / bs - k * sum(others))
    return d


def _build(problem: LevelProblem, num_streams: int, split_ops: frozenset, cut: frozenset,
           durations: tuple[int, ...]) -> _Rows | None:
    """The LP of the module Notes (None: no choice tensor, nothing to add to the floor)."""
    decided, forced = _choices(problem, split_ops, cut)
    if not decided:
        return None
    lp = _Rows()
    dma = {t: problem.dma_cycles(t) for t in decided}
    fixed_ops = sum(durations)  # ops with a choice are replaced by their columns below
    rows = problem.op_accesses()
    horizon = fixed_ops + sum(dma.values()) + sum(
        problem.compute_cycles[i] + cycles_for_bytes(sum(problem.tensor_bytes[t] for t, _ in row),
                                                     problem.bandwidth_bytes_per_cycle[1]) + 1
        for i, row in enumerate(rows))
    makespan = lp.column(0, horizon, 1)
    y = {t: lp.column(1 if t in forced else 0, 1) for t in sorted(decided)}
    by_op: dict[int, list[int]] = {}
    for t, ops in decided.items():
        for a in ops:
            by_op.setdefault(a, []).append(t)
    columns = {}
    for i, choice in sorted(by_op.items()):
        row = [t for t, _ in rows[i] if problem.tensor_bytes[t]]
        columns[i] = _add_op(lp, problem, i, row, sorted(choice), y, cut, durations[i])
        fixed_ops -= durations[i]
    lp.at_least({makespan: max(1, num_streams), **{d: -1 for d in columns.values()}}, fixed_ops)
    lp.at_least({makespan: 1, **{y[t]: -dma[t] for t in y}}, 0)
    return lp


def _glop_duals(lp: _Rows) -> list[float] | None:
    """GLOP's row duals at its optimum (None: not solved)."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
        return None
    solver.SetNumThreads(1)
    cols = [solver.NumVar(float(lo), float(hi), "") for lo, hi in zip(lp.lo, lp.hi)]
    rows = []
    for terms, rhs in lp.rows:
        ct = solver.Constraint(float(rhs), solver.infinity())
        for c, v in terms.items():
            ct.SetCoefficient(cols[c], float(v))
        rows.append(ct)
    objective = solver.Objective()
    for col, cost in zip(cols, lp.cost):
        if cost:
            objective.SetCoefficient(col, float(cost))
    objective.SetMinimization()
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return [row.dual_value() for row in rows]


def _certified(lp: _Rows, duals: list[float]) -> Fraction:
    """Weak duality in exact rationals (module Notes): a lower bound of the LP for any duals."""
    lam = [max(Fraction(0), Fraction(v)) for v in duals]
    reduced = list(lp.cost)
    value = Fraction(0)
    for (terms, rhs), m in zip(lp.rows, lam):
        if not m:
            continue
        value += m * rhs
        for c, v in terms.items():
            reduced[c] -= m * v
    return value + sum(r * (lo if r >= 0 else hi) for r, lo, hi in zip(reduced, lp.lo, lp.hi))


def prefetch_or_slow_floor(problem: LevelProblem, num_streams: int, durations: tuple[int, ...],
                           split_ops: frozenset = frozenset(), cut: frozenset = frozenset()) -> int:
    """A lower bound on every plan's makespan on ``num_streams`` streams and one DMA engine: each
    slow-born tensor prefetched (on the engine) or read slow by its readers, each live-out one
    written fast and evicted or written slow (module Notes). ``durations`` are per-op duration
    bounds whatever the plan (taken for ops without a choice); ``split_ops`` and ``cut`` are
    what a plan may split (module Notes). 0 when nothing is to choose or GLOP fails.

    Examples
    --------
    Two ops each read their own 16-byte weight (compute 2; fast 4 B/cycle, slow 1 B/cycle, a
    DMA 16 cycles). Each op takes 4 fast or 16 slow. On one stream, fetching a fraction
    ``y`` of each costs ``32 y`` on the engine and ``2 (16 - 12 y)`` of op time: ``32 y = 32
    - 24 y`` at ``y = 4/7``, so ``T >= 128/7``, 19 (the best plan: 20). On two streams the op
    time is shared: ``32 y = 16 - 12 y``, ``T >= 128/11``, 12.

    >>> p = LevelProblem((2, 2), ((0,), (1,)), ((), ()), (16, 16), (64, 99), (4, 1))
    >>> prefetch_or_slow_floor(p, 1, (4, 4)), prefetch_or_slow_floor(p, 2, (4, 4))
    (19, 12)
    """
    lp = _build(problem, num_streams, frozenset(split_ops), frozenset(cut), durations)
    if lp is None:
        return 0
    duals = _glop_duals(lp)
    if duals is None:
        return 0
    return max(0, math.ceil(_certified(lp, duals)))
