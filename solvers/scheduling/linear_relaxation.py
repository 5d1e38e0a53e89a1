"""A linear-programming lower bound: fractional placement, start times, communication,
per-class work and memory, solved by GLOP and rounded with a dual certificate.

Notes
-----
**Classes.** Devices with the same durations, streams and memory form a class K (``S_K``:
its total streams, ``cap_K``: its total memory, unlimited if one device is). Any grouping
would give a valid relaxation (durations are the class minimum, capacities sums); identical
devices lose nothing, because the per-device LP of a symmetric problem has a symmetric
optimum. Communication inside a class is not seen (it never has to be paid in the LP).

**Variables** (LATENCY). ``f[i, K]`` in [0, 1] (op i's share on class K; a constant when i
has one class), ``C_i`` (completion) and ``T`` in ``[0, H]`` (H: the serial horizon, which
some optimal schedule respects: module Notes of :mod:`~solvers.scheduling.cpsat.model`),
``y[e, K]`` in [0, 1] with ``y <= f[u, K]`` and ``y <= f[v, K]`` (edge e = (u, v) inside
class K), and ``comm_e``.

**Constraints.** ``sum_K f[i, K] = 1``; ``C_v >= C_u + comm_e + sum_K dur[v, K] f[v, K]``
for every edge; ``C_i >= sum_K dur[i, K] f[i, K]``; ``T >= C_i``;
``comm_e >= sum_K out_e(K) (f[u, K] - y[e, K])`` and ``comm_e >= sum_K in_e(K) (f[v, K] -
y[e, K])`` with ``out_e(K)`` the cheapest transfer of e from a device of K to a device
outside K (``in_e`` into K); where none exists, ``y[e, K] = f[u, K]`` (u in K forces v into
K); ``sum_i dur[i, K] f[i, K] <= S_K T``; ``sum_i resident_i f[i, K] <= cap_K``; colocated
ops share their class; and, at the cut ops ``c_1 < ... < c_k`` (see
:func:`~solvers.scheduling.bounds.cut_vertices`), the **segment cuts** ``sum_{i in
W_j} dur[i, K] f[i, K] <= S_K (C_(c_(j+1)) - C_(c_j))`` where ``W_j`` holds the ops after
``c_j`` up to ``c_(j+1)`` (they run inside ``[end(c_j), end(c_(j+1))]``), with the head
(``C_(c_1)``) and the tail (``T - C_(c_k)``) alike.

**Soundness.** Map any schedule to ``f`` = its classes, ``C`` = its ends, ``T`` = its
makespan, ``y[e, K]`` = 1 when u and v are both in K, ``comm_e`` = the transfer's
duration (0 without one). Every row holds: an edge between classes has ``y = 0`` and pays
at least the cheapest transfer out of u's class and into v's; the work rows and segment
cuts count each op's time on its own device, at most ``S_K`` streams busy over the window;
weights stay on their device. So the LP optimum is at most the makespan of every schedule.

THROUGHPUT keeps ``f``, the work rows with ``S_K = |K|`` (a device's load is the sum of
its ops' durations, whatever its streams: ``<= T`` on each device) and the memory and
colocation rows.

**Rounding.** The value is not read from the solver: with the solver's row duals ``l``
(clipped to the sign each row admits) the bound ``sum_r l_r b_r + sum_j min over [lo_j,
hi_j] of (c - A^T l)_j x_j`` is valid for *any* ``l`` (weak duality over the box). It is
computed in floating point, lowered by a margin covering the summation error, and rounded
up to an integer (objectives are integers). A solver that stops early or returns slightly
infeasible duals thus costs tightness, never soundness.

**Size.** With two classes (the usual fast/slow split) ``f[i, 1] = 1 - f[i, 0]`` and, as
``y[e, K] = min(f[u, K], f[v, K])`` at the optimum, the transfer rows reduce to
``comm_e >= c+ (f[u, 0] - f[v, 0])`` and ``comm_e >= c- (f[v, 0] - f[u, 0])``
(``c+ = max(out_e(0), in_e(1))``, ``c- = max(out_e(1), in_e(0))``), folded into two
precedence rows: one column per op plus its end, two rows per edge.

**Cost.** GLOP (primal simplex), one thread, an iteration limit (never a time limit, so the
result is reproducible). Problems above ``max_ops`` ops, or with one class and no memory
limit (then the LP equals the critical path and fractional load), are skipped (0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from ortools.linear_solver import pywraplp

from solvers.scheduling.structure import cut_vertices, topological_order
from solvers.scheduling.forced import colocation_closure
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import objective_value

__all__ = ["LpBoundOptions", "LpBoundResult", "LinearProgram", "device_classes", "solve_certified",
           "fractional_load_bound", "lp_relaxation", "lp_bound", "lp_violations"]


@dataclass(frozen=True, slots=True)
class LpBoundOptions:
    """Size and effort limits of the LP bound (all deterministic).

    Examples
    --------
    >>> LpBoundOptions(segment_cuts=False).max_ops
    2000
    """

    # Skip the LP above this many ops: GLOP's simplex grows about quadratically on these
    # path-like LPs (0.4 s at 1,000 ops, 80-100 s at 10,000 on the 2-core machine); larger
    # graphs get the LP per segment instead (bounds.segment_floor).
    max_ops: int = 2_000
    # GLOP's simplex iteration limit; an LP stopped by it gives no bound (0).
    max_iterations: int = 200_000
    # Add the per-segment work rows at cut ops.
    segment_cuts: bool = True


@dataclass(frozen=True, slots=True)
class LpBoundResult:
    """The certified bound (an integer), the LP's own value, and what was built.

    Examples
    --------
    >>> LpBoundResult(0, None, "SKIPPED_SIZE").bound
    0
    """

    bound: int
    lp_value: float | None
    status: str
    stats: dict = field(default_factory=dict)


def device_classes(problem: SchedulingProblem) -> tuple[tuple[int, ...], ...]:
    """Devices grouped by (durations, streams, memory), in order of first device.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1, 3),), (), (1, 1, 1), ((-1, 0, 1), (0, -1, 2), (1, 2, -1)), ())
    >>> device_classes(p)
    ((0, 1), (2,))
    """
    groups: dict[tuple, list[int]] = {}
    for d in range(problem.num_devices):
        key = (tuple(row[d] for row in problem.durations_cycles), problem.device_streams[d],
               problem.memory_bytes(d))
        groups.setdefault(key, []).append(d)
    return tuple(tuple(g) for g in groups.values())


class LinearProgram:
    """``min cost . x`` over box-bounded columns and two-sided rows, in coordinate form (what
    the certificate of :func:`solve_certified` is computed from)."""

    def __init__(self) -> None:
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.cost: list[float] = []
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []
        self.names: list[str] = []  # for messages
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []

    def var(self, lo: float, hi: float, cost: float = 0.0) -> int:
        self.lo.append(lo)
        self.hi.append(hi)
        self.cost.append(cost)
        return len(self.lo) - 1

    def row(self, terms: dict[int, float], lo: float, hi: float, name: str = "") -> None:
        k = len(self.row_lo)
        self.names.append(name)
        self.row_lo.append(lo)
        self.row_hi.append(hi)
        for col, coef in terms.items():
            if coef != 0.0:
                self.r.append(k)
                self.c.append(col)
                self.v.append(coef)


class _Expr:
    """A linear expression ``const + sum coef * column`` (mutated in place by :meth:`add`)."""

    __slots__ = ("const", "terms")

    def __init__(self, const: float = 0.0, terms: dict[int, float] | None = None) -> None:
        self.const = const
        self.terms = dict(terms) if terms else {}

    def add(self, other: "_Expr", scale: float = 1.0) -> "_Expr":
        self.const += scale * other.const
        for col, coef in other.terms.items():
            self.terms[col] = self.terms.get(col, 0.0) + scale * coef
        return self

    def copy(self) -> "_Expr":
        return _Expr(self.const, self.terms)


def _var(col: int, coef: float = 1.0) -> _Expr:
    return _Expr(0.0, {col: coef})


def _geq(lp: LinearProgram, expr: _Expr, name: str) -> None:
    """``expr >= 0`` (constants moved to the right; constant rows are dropped: they hold by
    construction wherever they are added)."""
    if expr.terms:
        lp.row(expr.terms, -expr.const, math.inf, name)


def _leq(lp: LinearProgram, expr: _Expr, name: str) -> None:
    """``expr <= 0``."""
    if expr.terms:
        lp.row(expr.terms, -math.inf, -expr.const, name)


def _class_costs(problem: SchedulingProblem, e: int, classes, cls_of, side: str) -> dict[int, float | None]:
    """Per class K: the cheapest transfer of edge e across K's border, leaving K (``side``
    ``"out"``: u in K, v outside) or entering it (``"in"``); None when there is none."""
    u, v, _ = problem.edges[e]
    here, there = (u, v) if side == "out" else (v, u)
    out: dict[int, float | None] = {}
    for k, devs in enumerate(classes):
        best = None
        for a in devs:
            if problem.durations_cycles[here][a] < 0:
                continue
            for b in problem.allowed_devices(there):
                if cls_of[b] == k:
                    continue
                link = problem.link_of[a][b] if side == "out" else problem.link_of[b][a]
                if link >= 0:
                    c = problem.transfer_cycles[e][link]
                    best = c if best is None else min(best, c)
        out[k] = best
    return out


class _Model:
    """The LP of the module Notes, built column by column."""

    def __init__(self, problem: SchedulingProblem, options: LpBoundOptions) -> None:
        self.problem = problem
        self.options = options
        self.classes = device_classes(problem)
        self.cls_of = {d: k for k, devs in enumerate(self.classes) for d in devs}
        self.horizon = float(sum(max(r) for r in problem.durations_cycles)
                             + sum(max(r, default=0) for r in problem.transfer_cycles))
        self.lp = LinearProgram()
        self.t = self.lp.var(0.0, self.horizon, 1.0)
        self.dur: list[dict[int, float]] = []
        self.share: list[dict[int, _Expr]] = []  # f[i, K]
        self.end: list[int] = []
        self.together_col: dict[tuple[int, int], int] = {}  # (edge, K) -> y column
        self.comm_col: dict[int, int] = {}  # edge -> comm column
        for i in range(problem.num_ops):
            self._add_op(i)

    def _add_op(self, i: int) -> None:
        row = {}
        for k, devs in enumerate(self.classes):
            ds = [self.problem.durations_cycles[i][d] for d in devs if self.problem.durations_cycles[i][d] >= 0]
            if ds:
                row[k] = float(min(ds))
        self.dur.append(row)
        if len(row) == 1:
            self.share.append({k: _Expr(1.0) for k in row})
            return
        if len(row) == 2:  # f and 1 - f: no placement row
            k0, k1 = sorted(row)
            f = self.lp.var(0.0, 1.0)
            self.share.append({k0: _var(f), k1: _Expr(1.0, {f: -1.0})})
            return
        cols = {k: self.lp.var(0.0, 1.0) for k in row}
        self.lp.row({c: 1.0 for c in cols.values()}, 1.0, 1.0, f"placement of op {i}")
        self.share.append({k: _var(c) for k, c in cols.items()})

    def busy(self, i: int) -> _Expr:
        out = _Expr()
        for k, d in self.dur[i].items():
            out.add(self.share[i][k], d)
        return out

    def load(self, ops, k: int, weight) -> _Expr:
        out = _Expr()
        for i in ops:
            if k in self.dur[i]:
                out.add(self.share[i][k], weight(i))
        return out

    def class_streams(self, k: int) -> float:
        p = self.problem
        if p.objective is Objective.LATENCY:
            return float(sum(p.device_streams[d] for d in self.classes[k]))
        return float(len(self.classes[k]))

    def add_colocation(self) -> None:
        closure = colocation_closure(self.problem)
        for i in range(self.problem.num_ops):
            j = next((x for x in closure[i] if x > i), None)  # chain each group i ~ next member
            if j is None:
                continue
            for k in set(self.dur[i]) | set(self.dur[j]):
                diff = self.share[i].get(k, _Expr()).copy().add(self.share[j].get(k, _Expr()), -1.0)
                if diff.terms:
                    self.lp.row(diff.terms, -diff.const, -diff.const, f"colocation of ops {i}, {j}")

    def add_work_and_memory(self) -> None:
        p, n = self.problem, self.problem.num_ops
        for k, devs in enumerate(self.classes):
            work = self.load(range(n), k, lambda i: self.dur[i][k])
            _geq(self.lp, _var(self.t, self.class_streams(k)).add(work, -1.0), f"work of class {k}")
            mem = [p.memory_bytes(d) for d in devs]
            if all(m > 0 for m in mem):
                held = self.load(range(n), k, lambda i: float(p.resident_floor_bytes(i)))
                _leq(self.lp, held.add(_Expr(float(-sum(mem)))), f"memory of class {k}")

    def add_times(self) -> None:
        p, lp = self.problem, self.lp
        n = p.num_ops
        self.end = [lp.var(0.0, self.horizon) for _ in range(n)]
        has_pred, has_succ = [False] * n, [False] * n
        for e, (u, v, _) in enumerate(p.edges):
            has_pred[v] = has_succ[u] = True
            self._add_edge(e)
        for i in range(n):
            if not has_pred[i]:
                _geq(lp, _var(self.end[i]).add(self.busy(i), -1.0), f"start of op {i}")
            if not has_succ[i]:
                lp.row({self.t: 1.0, self.end[i]: -1.0}, 0.0, math.inf, f"makespan after op {i}")

    def _together(self, e: int, u: int, v: int) -> dict[int, _Expr]:
        """``y[e, K]``: both ends of the edge in class K."""
        out = {}
        for k in set(self.dur[u]) & set(self.dur[v]):
            fu, fv = self.share[u][k], self.share[v][k]
            if not fu.terms:
                out[k] = fv
            elif not fv.terms:
                out[k] = fu
            else:
                y = self.lp.var(0.0, 1.0)
                self.together_col[e, k] = y
                # y <= f[u, K] and y <= f[v, K], whole expressions: an op with two classes
                # has the share 1 - f on its second one, not a column of its own.
                _leq(self.lp, _var(y).add(fu, -1.0), f"edge {e} in class {k}")
                _leq(self.lp, _var(y).add(fv, -1.0), f"edge {e} in class {k}")
                out[k] = _var(y)
        return out

    def _add_edge(self, e: int) -> None:
        p, lp = self.problem, self.lp
        u, v, _ = p.edges[e]
        prec = _Expr(0.0, {self.end[v]: 1.0, self.end[u]: -1.0}).add(self.busy(v), -1.0)
        if len(self.dur[u]) == 1 and self.dur[u].keys() == self.dur[v].keys():
            _geq(lp, prec, f"precedence of edge {e}")  # one class for both: no transfer the LP sees
            return
        if len(self.classes) == 2:
            self._add_edge_two_classes(e, prec)
            return
        together = self._together(e, u, v)
        sides = []
        for side, op in (("out", u), ("in", v)):
            costs = _class_costs(p, e, self.classes, self.cls_of, side)
            expr = _Expr()
            for k in self.dur[op]:
                apart = self.share[op][k].copy().add(together.get(k, _Expr()), -1.0)
                if costs[k] is None:
                    _leq(lp, apart, f"edge {e} kept in class {k}")  # nothing leaves (enters) K
                else:
                    expr.add(apart, float(costs[k]))
            sides.append(expr)
        if not sides[0].terms and not sides[1].terms:
            _geq(lp, prec.add(_Expr(max(sides[0].const, sides[1].const)), -1.0), f"precedence of edge {e}")
            return
        if sides[0].terms == sides[1].terms and sides[0].const == sides[1].const:
            _geq(lp, prec.add(sides[0], -1.0), f"precedence of edge {e}")
            return
        comm = lp.var(0.0, float(max(p.transfer_cycles[e], default=0)))
        self.comm_col[e] = comm
        for expr in sides:
            _geq(lp, _var(comm).add(expr, -1.0), f"transfer of edge {e}")
        _geq(lp, prec.add(_var(comm), -1.0), f"precedence of edge {e}")

    def _add_edge_two_classes(self, e: int, prec: _Expr) -> None:
        """With two classes, ``y[e, K] = min(f[u, K], f[v, K])`` at the optimum, so the two
        transfer rows reduce to ``comm >= c+ D`` and ``comm >= -c- D`` with ``D = f[u, 0] -
        f[v, 0]`` (u alone in class 0 when D > 0): two precedence rows, no extra column."""
        p, lp = self.problem, self.lp
        u, v, _ = p.edges[e]
        diff = self.share[u].get(0, _Expr()).copy().add(self.share[v].get(0, _Expr()), -1.0)
        out = _class_costs(p, e, self.classes, self.cls_of, "out")
        into = _class_costs(p, e, self.classes, self.cls_of, "in")
        slopes = []
        for sign, (ku, kv) in ((1.0, (0, 1)), (-1.0, (1, 0))):  # u in ku, v in kv
            if ku not in self.dur[u] or kv not in self.dur[v]:
                continue  # that split cannot happen: D keeps its sign by the shares' ranges
            if out[ku] is None or into[kv] is None:
                # u in ku forces v into ku (or v in kv forces u into kv): no split this way
                (_leq if sign > 0 else _geq)(lp, diff.copy(), f"edge {e} kept in one class")
                continue
            slopes.append(sign * float(max(out[ku], into[kv])))
        for slope in slopes or [0.0]:
            _geq(lp, prec.copy().add(diff, -slope), f"precedence of edge {e}")

    def add_segment_cuts(self) -> None:
        cuts = cut_vertices(self.problem)
        if not cuts:
            return
        order = topological_order(self.problem)
        where = {op: k for k, op in enumerate(order)}
        pos = [where[c] for c in cuts]
        windows = [(0, pos[0], None, self.end[cuts[0]])]
        windows += [(pos[j] + 1, pos[j + 1], self.end[cuts[j]], self.end[cuts[j + 1]])
                    for j in range(len(cuts) - 1)]
        if pos[-1] + 1 < len(order):
            windows.append((pos[-1] + 1, len(order) - 1, self.end[cuts[-1]], self.t))
        for lo, hi, begin, finish in windows:
            ops = order[lo:hi + 1]
            for k in range(len(self.classes)):
                work = self.load(ops, k, lambda i: self.dur[i][k])
                if not work.terms:
                    continue
                span = _var(finish)
                if begin is not None:
                    span.add(_var(begin), -1.0)
                _geq(self.lp, _Expr().add(span, self.class_streams(k)).add(work, -1.0),
                     f"segment ending at position {hi} in class {k}")


    def point_of(self, solution) -> np.ndarray:
        """The LP point of a schedule (module Notes, Soundness): for tests of the rows."""
        p = self.problem
        x = np.zeros(len(self.lp.lo))
        cls = [self.cls_of[d] for d in solution.op_device]
        x[self.t] = solution.makespan_cycles
        for i in range(p.num_ops):
            for k, expr in self.share[i].items():
                if expr.const == 0.0 and len(expr.terms) == 1:  # a share column (not 1 - f)
                    x[next(iter(expr.terms))] = 1.0 if cls[i] == k else 0.0
            if self.end:
                x[self.end[i]] = solution.op_end(i)
        for (e, k), col in self.together_col.items():
            u, v, _ = p.edges[e]
            x[col] = 1.0 if cls[u] == cls[v] == k else 0.0
        moved = {t.edge: t.duration_cycles for t in solution.transfers}
        for e, col in self.comm_col.items():
            x[col] = moved.get(e, 0)
        return x


def _solve_glop(lp: LinearProgram, max_iterations: int):
    """GLOP on the rows; returns (status name, objective or None, row duals or None)."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover - GLOP ships with OR-Tools
        return "NO_SOLVER", None, None
    solver.SetNumThreads(1)
    # The certificate is computed from the duals, so a slightly infeasible primal is harmless:
    # without a loose check GLOP reports IMPRECISE (and no duals) on rows with 1e10 sides.
    solver.SetSolverSpecificParametersAsString(
        f"max_number_of_iterations: {int(max_iterations)} solution_feasibility_tolerance: 1.0")
    inf = solver.infinity()
    cols = [solver.NumVar(lo, hi, "") for lo, hi in zip(lp.lo, lp.hi)]
    rows = [solver.Constraint(lo if lo > -math.inf else -inf, hi if hi < math.inf else inf)
            for lo, hi in zip(lp.row_lo, lp.row_hi)]
    for r, c, v in zip(lp.r, lp.c, lp.v):
        rows[r].SetCoefficient(cols[c], v)
    objective = solver.Objective()
    for col, cost in zip(cols, lp.cost):
        if cost:
            objective.SetCoefficient(col, cost)
    objective.SetMinimization()
    status = solver.Solve()
    if status != pywraplp.Solver.OPTIMAL:
        names = {pywraplp.Solver.INFEASIBLE: "INFEASIBLE", pywraplp.Solver.UNBOUNDED: "UNBOUNDED",
                 pywraplp.Solver.NOT_SOLVED: "NOT_SOLVED"}
        return names.get(status, "ABNORMAL"), None, None
    return "OPTIMAL", objective.Value(), np.array([row.dual_value() for row in rows])


def _certify(lp: LinearProgram, duals: np.ndarray) -> float:
    """Weak duality over the box for the given duals (module Notes, Rounding); may be -inf."""
    lam = np.asarray(duals, dtype=np.float64).copy()
    row_lo, row_hi = np.asarray(lp.row_lo), np.asarray(lp.row_hi)
    lam[(lam > 0) & ~np.isfinite(row_lo)] = 0.0  # a row without a lower side takes no >= multiplier
    lam[(lam < 0) & ~np.isfinite(row_hi)] = 0.0
    rhs = np.where(lam > 0, row_lo, np.where(lam < 0, row_hi, 0.0))
    reduced = np.asarray(lp.cost, dtype=np.float64).copy()
    np.subtract.at(reduced, np.asarray(lp.c, dtype=np.int64),
                   lam[np.asarray(lp.r, dtype=np.int64)] * np.asarray(lp.v))
    lo, hi = np.asarray(lp.lo), np.asarray(lp.hi)
    col_terms = np.where(reduced >= 0, reduced * lo, reduced * hi)
    terms = np.concatenate([lam * rhs, col_terms])
    value = math.fsum(terms.tolist())
    # every product and the final sum carry a relative error of a few ulps of |terms|
    margin = 8 * np.finfo(np.float64).eps * (float(np.abs(terms).sum()) + 1.0) * max(1, len(lp.c))
    return value - margin


def solve_certified(lp: LinearProgram, max_iterations: int = 200_000) -> tuple[str, float | None, int]:
    """Minimise with GLOP and certify: (status, the LP's value, an integer lower bound).

    The bound is weak duality with the solver's duals (module Notes, Rounding), rounded up
    to an integer; 0 when the solver gives no duals (stopped, infeasible, unbounded).

    Examples
    --------
    ``min x + y`` with ``x + 2 y >= 3`` and ``2 x + y >= 3`` on ``[0, 10]``: 2 at (1, 1).

    >>> lp = LinearProgram()
    >>> x, y = lp.var(0, 10, 1.0), lp.var(0, 10, 1.0)
    >>> lp.row({x: 1.0, y: 2.0}, 3.0, math.inf); lp.row({x: 2.0, y: 1.0}, 3.0, math.inf)
    >>> solve_certified(lp)
    ('OPTIMAL', 2.0, 2)
    """
    status, value, duals = _solve_glop(lp, max_iterations)
    if duals is None:
        return status, value, 0
    safe = _certify(lp, duals)
    bound = max(0, math.ceil(safe - 1e-9 * max(1.0, abs(safe)))) if math.isfinite(safe) else 0
    return status, value, bound


def fractional_load_bound(problem: SchedulingProblem) -> int:
    """The fractional placement LP of :mod:`~solvers.scheduling.bounds` (Fractional load).

    Devices with equal durations (and streams, for LATENCY) are pooled: by symmetry the
    per-device LP has a symmetric optimum, so the pooled LP has the same value. Its
    Lagrangian dual is ``max sum_i min_K l_K p[i][K]`` over ``l >= 0`` with ``sum_K l_K c_K
    = 1`` (``c_K``: the pool's capacity, streams for LATENCY, devices for THROUGHPUT): for
    any such l and any fractional placement, ``T >= sum_K l_K sum_i f[i][K] p[i][K] / 1 >=
    sum_i min_K l_K p[i][K]``. With one pool that is the work bound; with two it is a
    concave piecewise-linear function of one variable, maximised exactly at a breakpoint
    (sorting, O(n log n), no solver); with more the pooled LP is solved and certified.

    Examples
    --------
    Two ops each take 6 cycles on device 0 or 2 on device 1. With a fraction f of the
    work on the slow device, ``6f = 2(2 - f)`` balances the two, so ``f = 1/2`` and ``T = 3``.

    >>> p = SchedulingProblem(((6, 2), (6, 2)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> fractional_load_bound(p)
    3
    """
    if problem.num_ops == 0:
        return 0
    latency = problem.objective is Objective.LATENCY
    pools: dict[tuple, list[int]] = {}
    for d in range(problem.num_devices):
        key = (tuple(row[d] for row in problem.durations_cycles), problem.device_streams[d] if latency else 1)
        pools.setdefault(key, []).append(d)
    caps = [float(sum(problem.device_streams[d] if latency else 1 for d in devs)) for devs in pools.values()]
    dur = np.asarray(problem.durations_cycles, dtype=np.float64).reshape(problem.num_ops, problem.num_devices)
    dur[dur < 0] = np.inf
    p = np.stack([dur[:, devs[0]] for devs in pools.values()], axis=1)
    if len(caps) == 1:
        return -(-int(p[:, 0].sum()) // int(caps[0]))
    if len(caps) == 2:
        return _two_pool_bound(p[:, 0], p[:, 1], caps[0], caps[1])
    lp = LinearProgram()
    t = lp.var(0.0, float(np.where(np.isfinite(p), p, 0).max(axis=1).sum()), 1.0)
    load = [{t: c} for c in caps]
    for i in range(problem.num_ops):
        cols = {}
        for k in range(len(caps)):
            if np.isfinite(p[i, k]):
                cols[k] = lp.var(0.0, 1.0)
                load[k][cols[k]] = -float(p[i, k])
        lp.row({c: 1.0 for c in cols.values()}, 1.0, 1.0, f"placement of op {i}")
    for k, row in enumerate(load):
        if len(row) > 1:
            lp.row(row, 0.0, math.inf, f"load of pool {k}")
    return solve_certified(lp)[2]


def _two_pool_bound(a: np.ndarray, b: np.ndarray, ca: float, cb: float) -> int:
    """``max over t in [0, 1/ca] of sum_i min(t a_i, (1 - t ca) b_i / cb)``, rounded up soundly."""
    fin_a, fin_b = np.where(np.isfinite(a), a, 0.0), np.where(np.isfinite(b), b, 0.0)

    def value(t: float) -> tuple[float, float]:
        up, down = t * fin_a, (1.0 - t * ca) * fin_b / cb  # an op one pool cannot run uses the other
        terms = np.where(~np.isfinite(b), up, np.where(~np.isfinite(a), down, np.minimum(up, down)))
        return float(terms.sum()), float(np.abs(terms).sum())

    both = np.isfinite(a) & np.isfinite(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        breaks = np.where(both & (a + b > 0), b / (cb * a + ca * b), 0.0)
    candidates = np.concatenate([[0.0, 1.0 / ca], breaks[both]])
    candidates = np.clip(candidates, 0.0, 1.0 / ca)
    # g is concave and piecewise linear in t: evaluate it at every breakpoint at once
    order = np.sort(candidates)
    inc = fin_a  # slope contributions while t a_i is the smaller
    dec = fin_b / cb
    key = np.where(both, breaks, np.where(np.isfinite(a), np.inf, -np.inf))
    idx = np.argsort(key)
    ks, inc_s, dec_s = key[idx], inc[idx], dec[idx]
    inc_suffix = np.concatenate([np.cumsum(inc_s[::-1])[::-1], [0.0]])
    dec_prefix = np.concatenate([[0.0], np.cumsum(dec_s)])
    pos = np.searchsorted(ks, order, side="left")  # terms with key >= t still use t a_i
    g = order * inc_suffix[pos] + (1.0 - order * ca) * dec_prefix[pos]
    best_t = float(order[int(np.argmax(g))])
    total, scale = value(best_t)
    margin = 4 * np.finfo(np.float64).eps * (scale + 1.0) * (len(a) + 1)
    return max(0, math.ceil(total - margin - 1e-9 * max(1.0, abs(total))))


def lp_relaxation(problem: SchedulingProblem, options: LpBoundOptions = LpBoundOptions()) -> LpBoundResult:
    """Build and solve the LP of the module Notes; the bound is certified from its duals.

    Examples
    --------
    Two independent ops: a takes 3 cycles on device 0 or 2 on device 1, b 4 or 1. The
    fractional load alone is 1.8 (b on device 1, a split 3/5 : 2/5), but each op also ends
    no earlier than its own share-weighted duration: with f = a's share on device 0 and
    g = b's, ``T >= 2 + f``, ``T >= 1 + 3g``, ``T >= 3f + 4g`` and ``T >= 3 - 2f - g``;
    the LP optimum is 2.2 (f = 0.2, g = 0.4), so 3, the optimum.

    >>> p = SchedulingProblem(((3, 2), (4, 1)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> r = lp_relaxation(p)
    >>> r.status, round(r.lp_value, 6), r.bound
    ('OPTIMAL', 2.2, 3)
    """
    n = problem.num_ops
    if n == 0:
        return LpBoundResult(0, 0.0, "EMPTY")
    if n > options.max_ops:
        return LpBoundResult(0, None, "SKIPPED_SIZE", {"ops": n})
    model = _Model(problem, options)
    capped = any(problem.memory_bytes(d) > 0 for d in range(problem.num_devices))
    if len(model.classes) == 1 and not capped:
        return LpBoundResult(0, None, "SKIPPED_ONE_CLASS")
    model.add_colocation()
    model.add_work_and_memory()
    if problem.objective is Objective.LATENCY:
        model.add_times()
        if options.segment_cuts:
            model.add_segment_cuts()
    lp = model.lp
    stats = {"columns": len(lp.lo), "rows": len(lp.row_lo), "nonzeros": len(lp.v),
             "classes": len(model.classes)}
    status, value, bound = solve_certified(lp, options.max_iterations)
    return LpBoundResult(bound, value, status, stats)


def lp_violations(problem: SchedulingProblem, solution: SchedulingSolution,
                  options: LpBoundOptions = LpBoundOptions(), tolerance: float = 1e-6) -> list[str]:
    """The LP's rows and column bounds that the point of a schedule breaks (module Notes,
    Soundness): always empty for a valid schedule, which is what makes the LP a relaxation.

    ``T`` is set to the schedule's objective (makespan, or max load for THROUGHPUT).

    Examples
    --------
    >>> from solvers.scheduling.problem import ScheduledTransfer
    >>> p = SchedulingProblem(((2, 8), (8, 8)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((4,),))
    >>> s = SchedulingSolution((0, 1), (0, 0), (0, 6), (2, 8), (ScheduledTransfer(0, 0, 2, 4),))
    >>> lp_violations(p, s)
    []
    >>> lp_violations(p, SchedulingSolution((0, 1), (0, 0), (0, 2), (2, 8), ()))[:1]  # no transfer
    ['precedence of edge 0: short by 4']
    """
    model = _Model(problem, options)
    model.add_colocation()
    model.add_work_and_memory()
    if problem.objective is Objective.LATENCY:
        model.add_times()
        if options.segment_cuts:
            model.add_segment_cuts()
    lp = model.lp
    x = model.point_of(solution)
    x[model.t] = objective_value(problem, solution)
    ax = np.zeros(len(lp.row_lo))
    if lp.r:
        np.add.at(ax, np.asarray(lp.r), np.asarray(lp.v) * x[np.asarray(lp.c)])
    out = []
    for k, value in enumerate(ax.tolist()):
        if value < lp.row_lo[k] - tolerance:
            out.append(f"{lp.names[k]}: short by {lp.row_lo[k] - value:g}")
        elif value > lp.row_hi[k] + tolerance:
            out.append(f"{lp.names[k]}: over by {value - lp.row_hi[k]:g}")
    out += [f"column {j}: {x[j]} outside [{lp.lo[j]}, {lp.hi[j]}]" for j in range(len(x))
            if not lp.lo[j] - tolerance <= x[j] <= lp.hi[j] + tolerance]
    return out


def lp_bound(problem: SchedulingProblem, options: LpBoundOptions = LpBoundOptions()) -> int:
    """The certified LP bound of :func:`lp_relaxation` (0 when skipped or unsolved).

    Examples
    --------
    >>> p = SchedulingProblem(((3, 2), (4, 1)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> lp_bound(p)
    3
    """
    return lp_relaxation(problem, options).bound
