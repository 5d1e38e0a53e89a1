"""Fewest (cheapest) processors by column generation over packing patterns.

Notes
-----
A *pattern* of class ``c`` is a vector ``a`` of copies per item type that fits one bin of
class ``c``. The master problem chooses how many bins run each pattern:

    min  sum_p cost_c(p) y_p
    s.t. sum_p a_tp y_p >= m_t        (every copy covered; dual pi_t >= 0)
         sum_{p of class c} y_p <= N_c (pool size)
         y_p >= 0 integer

Its LP relaxation (Gilmore-Gomory) is solved by GLOP over a growing set of patterns; the
pricing problem of each class is a multi-dimensional knapsack ``max pi . a`` solved by
CP-SAT. Whatever the state of the column generation, the Lagrangian bound

    L(pi) = pi . m + sum_c N_c min(0, cost_c - K_c(pi)),

where ``K_c(pi)`` is an *upper bound* on the knapsack optimum (CP-SAT's proven bound), is a
valid lower bound on the integer optimum; its ceiling is reported. The integer master
over the generated patterns is then solved by CP-SAT (hinted with first-fit decreasing),
and patterns are expanded to items (surplus copies dropped). This is the classical
bound for cutting stock and vector packing, usually within one bin of the optimum.

**Determinism.** Every stage is limited by deterministic time from one budget fixed up
front (:class:`solvers.budget.Budget`, ``dtime_per_second * time_limit_s``):
bin completion by search nodes, column generation and diving by GLOP simplex iterations
plus the pricing CP-SAT's own deterministic time, the integer master by
``max_deterministic_time`` (``interleave_search`` on). Each stage's share is taken from what
the earlier stages charged, never from elapsed wall time; the wall clock is a safety net
recorded as ``stats["stopped_by"] == "wall_clock"``. ``options.search == "until-limit"``
splits the wall clock instead (not reproducible).

References: P. C. Gilmore, R. E. Gomory, Oper. Res. 9 (1961); F. Brandão, J. P. Pedroso,
"Bin packing and related problems: general arc-flow formulation" (2016) for the bound.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

from solvers.colocation.bounds import cost_lower_bound
from solvers.budget import Budget, Calibration
from solvers.colocation.budget import DTIME_PER_SECOND, ITERATIONS_PER_DTIME, LP_SOLVE_DTIME, NODES_PER_DTIME
from solvers.colocation.greedy import FirstFitDecreasingSolver, bin_completion
from solvers.colocation.problem import ColocationObjective, ColocationProblem, ColocationSolution
from solvers.colocation.validate import solution_cost, validate_colocation
from solvers.core import Accepting, ProgressPoint, SolveOptions, SolveResult, Status, failure_result

__all__ = ["ColumnGenerationColocationSolver", "Pattern", "pattern_lower_bound"]

log = logging.getLogger(__name__)


_DUAL_SCALE = 1_000_000  # duals are rounded down to multiples of 1e-6 before pricing
# Deterministic time of one exact pricing call, and of one column generation inside a dive.
_PRICE_MIN_DTIME, _PRICE_MAX_DTIME = 0.01, 0.4
_DIVE_STEP_MIN_DTIME, _DIVE_STEP_MAX_DTIME = 0.04, 0.3


@dataclass(frozen=True, slots=True)
class Pattern:
    """Copies per item type packed on one bin of class ``klass``.

    >>> Pattern(0, ((0, 2), (3, 1))).copies
    3
    """

    klass: int
    counts: tuple[tuple[int, int], ...]  # (type, copies), copies > 0, sorted by type

    @property
    def copies(self) -> int:
        return sum(n for _, n in self.counts)


def _patterns_of(problem: ColocationProblem, solution: ColocationSolution) -> list[Pattern]:
    out = []
    for b in solution.used_bins():
        counts: dict[int, int] = {}
        for i in solution.items_on(b):
            t = problem.item_type(i)
            counts[t] = counts.get(t, 0) + 1
        out.append(Pattern(problem.bin_class(b), tuple(sorted(counts.items()))))
    return out


def _price(problem: ColocationProblem, c: int, duals_int: list[int], dtime: float, budget: Budget
           ) -> tuple[list[Pattern], int, int]:
    """Max ``sum duals_int[t] a_t`` over patterns of class c (one CP-SAT worker, at most
    ``dtime`` deterministic time, charged to ``budget``).

    Returns every pattern the search found (best last), the best value and a proven upper
    bound on the optimum.
    """
    model = cp_model.CpModel()
    a = {}
    for t in range(problem.num_types):
        v = problem.demand[t][c]
        if v is None or duals_int[t] <= 0 or not problem.fits_alone(t, c):
            continue
        ub = min([problem.multiplicity[t]] + [problem.capacity[c][d] // x for d, x in enumerate(v) if x > 0])
        a[t] = (model.new_int_var(0, ub, f"a_{t}"), ub)
    if not a:
        return [], 0, 0
    for d in range(problem.num_dims):
        model.add(sum(problem.demand[t][c][d] * var for t, (var, _) in a.items()) <= problem.capacity[c][d])
    model.maximize(sum(duals_int[t] * var for t, (var, _) in a.items()))
    found: list[Pattern] = []

    class _Collect(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            found.append(Pattern(c, tuple(sorted((t, int(self.value(var))) for t, (var, _) in a.items()
                                                 if self.value(var) > 0))))

    status, solver, _ = budget.run_cpsat(model, SolveOptions(num_workers=1), dtime, None, interleave=False,
                                         callback=_Collect())
    if not status.has_solution:
        return [], 0, sum(duals_int[t] * ub for t, (_, ub) in a.items())
    value = int(round(solver.objective_value))
    bound = int(math.floor(solver.best_objective_bound + 1e-6))
    return found, value, max(value, bound)


def _greedy_price(problem: ColocationProblem, c: int, duals: list[float]) -> list[Pattern]:
    """Fast heuristic pricing: fill a bin of class c greedily under a few orderings."""
    cap = problem.capacity[c]
    cand = [t for t in range(problem.num_types)
            if duals[t] > 0 and problem.demand[t][c] is not None and problem.fits_alone(t, c)]
    if not cand:
        return []
    share = {t: [x / k for x, k in zip(problem.demand[t][c], cap)] for t in cand}
    keys = (
        lambda t: -duals[t] / max(1e-12, max(share[t])),
        lambda t: -duals[t] / max(1e-12, sum(share[t])),
        lambda t: -duals[t],
    )
    out = []
    for key in keys:
        load = [0] * problem.num_dims
        counts = {}
        for t in sorted(cand, key=lambda t: (key(t), t)):
            v = problem.demand[t][c]
            n = problem.multiplicity[t]
            for d, x in enumerate(v):
                if x > 0:
                    n = min(n, (cap[d] - load[d]) // x)
            if n > 0:
                counts[t] = n
                load = [a + n * x for a, x in zip(load, v)]
        # Top up: one more copy of any type that still fits, best dual first.
        out.append(Pattern(c, tuple(sorted(counts.items()))))
    return out


def pattern_lower_bound(problem: ColocationProblem, *, dtime: float = 1.0, deadline_s: float | None = None,
                        seed_patterns: list[Pattern] = (), max_iterations: int = 500) -> tuple[float, list[Pattern]]:
    """Column generation for the LP relaxation of the pattern master problem.

    Returns the best Lagrangian lower bound found (a float; any packing costs at least its
    ceiling) and every pattern generated. Stops after ``dtime`` units of deterministic time
    (see :mod:`solvers.colocation.budget`) or, as a safety net, at ``deadline_s``
    (``time.perf_counter``).

    Examples
    --------
    Five items of 4/10: at most two share a bin, so the LP needs 2.5 bins:

    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((10,),), (5,), (((4,),),), multiplicity=(5,))
    >>> bound, pats = pattern_lower_bound(p, seed_patterns=[Pattern(0, ((0, 1),))])
    >>> round(bound, 6)   # five items, two per bin: 2.5 bins
    2.5
    """
    budget = Budget(dtime, time.perf_counter() + 3600 if deadline_s is None else deadline_s)
    return _column_generation(problem, budget, dtime, seed_patterns, max_iterations)[:2]


def _column_generation(problem: ColocationProblem, budget: Budget, dtime: float, seed_patterns,
                       max_iterations: int = 500) -> tuple[float, list[Pattern], list[float]]:
    """Column generation charging at most about ``dtime`` to ``budget`` (LP iterations and
    pricing); also returns the LP values of the patterns (empty on failure)."""
    start = budget.used
    master = _Master(problem, budget)
    for p in seed_patterns:
        master.add(p)
    # One single-type pattern per type and class keeps the master feasible when pools allow.
    nt, nc = problem.num_types, problem.num_classes
    for t in range(nt):
        for c in range(nc):
            if problem.fits_alone(t, c):
                v = problem.demand[t][c]
                n = min([problem.multiplicity[t]] + [problem.capacity[c][d] // x for d, x in enumerate(v) if x > 0])
                master.add(Pattern(c, ((t, n),)))
    best = -math.inf
    center: list[float] | None = None  # the duals of the best Lagrangian bound (stability center)
    for _ in range(max_iterations):
        if budget.used - start >= dtime or budget.wall_expired():
            break
        if master.solve() != pywraplp.Solver.OPTIMAL:
            break
        lp_value = master.objective.Value()
        if best > -math.inf and math.ceil(best - 1e-6) >= math.ceil(lp_value - 1e-6):
            break  # the bound's ceiling cannot rise any further
        duals = [max(0.0, master.cover[t].dual_value()) for t in range(nt)]
        mu = [min(0.0, master.pool[c].dual_value()) for c in range(nc)]
        if master.add_cheap(duals, mu, _greedy_columns(problem, duals)):
            continue
        added, best, center = _price_exactly(master, duals, mu, best, center, lambda: dtime - (budget.used - start))
        if not added:
            break
    values = ([var.solution_value() for var in master.lp.variables()]
              if master.solve() == pywraplp.Solver.OPTIMAL else [])
    return best, master.patterns, values


class _Master:
    """The restricted master LP of column generation: one variable per pattern (how many bins
    use it), types covered, pools not exceeded, cost minimized; each solve charged to the budget."""

    def __init__(self, problem: ColocationProblem, budget: Budget) -> None:
        self.problem, self.budget = problem, budget
        lp = self.lp = pywraplp.Solver.CreateSolver("GLOP")
        self.cover = [lp.Constraint(problem.multiplicity[t], lp.infinity(), f"cover_{t}")
                      for t in range(problem.num_types)]
        self.pool = [lp.Constraint(-lp.infinity(), problem.class_count[c], f"pool_{c}")
                     for c in range(problem.num_classes)]
        self.objective = lp.Objective()
        self.objective.SetMinimization()
        self.patterns: list[Pattern] = []
        self.seen: set[Pattern] = set()

    def solve(self) -> int:
        """Solve the LP, charging its simplex iterations to the budget; the solver's status code."""
        code = self.lp.Solve()
        its = self.lp.iterations() if code == pywraplp.Solver.OPTIMAL else 0  # simplex iterations of this solve
        self.budget.charge(LP_SOLVE_DTIME + max(0, its) / ITERATIONS_PER_DTIME)
        return code

    def add(self, p: Pattern) -> None:
        """A column for pattern ``p`` (unless empty or already there)."""
        if p in self.seen or not p.counts:
            return
        problem = self.problem
        self.seen.add(p)
        self.patterns.append(p)
        y = self.lp.NumVar(0, problem.class_count[p.klass], f"y_{len(self.patterns)}")
        self.objective.SetCoefficient(y, problem.class_cost[p.klass])
        self.pool[p.klass].SetCoefficient(y, 1)
        for t, n in p.counts:
            self.cover[t].SetCoefficient(y, n)

    def add_cheap(self, duals: list[float], mu: list[float], candidates) -> bool:
        """Add the new ``candidates`` of negative reduced cost; whether any was added."""
        added = False
        for pat in candidates:
            reduced = (self.problem.class_cost[pat.klass] - sum(duals[t] * n for t, n in pat.counts)
                       - mu[pat.klass])
            if reduced < -1e-7 and pat not in self.seen:
                self.add(pat)
                added = True
        return added


def _greedy_columns(problem: ColocationProblem, duals: list[float]):
    """The greedy pricing's patterns of every class with processors, class by class."""
    for c in range(problem.num_classes):
        if problem.class_count[c] == 0:
            continue
        yield from _greedy_price(problem, c, duals)


def _price_exactly(master: _Master, duals: list[float], mu: list[float], best: float,
                   center: list[float] | None, dtime_left) -> tuple[bool, float, list[float] | None]:
    """Exact pricing at smoothed duals (Wentges: between the stability ``center`` and the LP
    duals), which also gives a Lagrangian bound; returns whether a column was added, and the
    best bound and its center. ``dtime_left()`` is the deterministic time left, shared by the
    classes' pricing."""
    problem, budget = master.problem, master.budget
    nt, nc = problem.num_types, problem.num_classes
    added = False
    for alpha in (0.5, 0.0) if center is not None else (0.0,):
        sep = duals if center is None else [alpha * a + (1 - alpha) * b for a, b in zip(center, duals)]
        duals_int = [max(0, int(math.floor(d * _DUAL_SCALE))) for d in sep]
        bound = sum(duals_int[t] * problem.multiplicity[t] for t in range(nt)) / _DUAL_SCALE
        left = dtime_left()
        for c in range(nc):
            if problem.class_count[c] == 0:
                continue
            pats, _, upper = _price(problem, c, duals_int,
                                    min(budget.scale(_PRICE_MAX_DTIME),
                                        max(budget.scale(_PRICE_MIN_DTIME), left / (2 * nc))), budget)
            bound += problem.class_count[c] * min(0.0, problem.class_cost[c] - upper / _DUAL_SCALE)
            added = master.add_cheap(duals, mu, pats) or added
        if bound > best:
            best, center = bound, [d / _DUAL_SCALE for d in duals_int]
        if added:
            break
    return added, best, center


def _dive(problem: ColocationProblem, patterns: list[Pattern], values: list[float], budget: Budget, dtime: float
          ) -> list[tuple[Pattern, int]] | None:
    """Diving: fix the integer parts of the LP solution, re-run column generation on the
    residual items and pools, repeat (fixing the largest fractional pattern when no part is
    integral) until every copy is covered."""
    rem = list(problem.multiplicity)
    left = list(problem.class_count)
    fixed: list[tuple[Pattern, int]] = []
    start = budget.used
    while any(r > 0 for r in rem):
        if not values or budget.used - start >= dtime or budget.wall_expired():
            return None
        take = [(p, int(math.floor(v + 1e-6))) for p, v in zip(patterns, values) if v >= 1 - 1e-6]
        if not take:
            # Round up the largest fractional patterns (those at or above 0.6, at least one).
            ranked = sorted(range(len(values)), key=lambda k: (-values[k], k))
            take = [(patterns[k], 1) for k in ranked if values[k] >= 0.6] or [(patterns[ranked[0]], 1)]
        for p, n in take:
            n = min(n, left[p.klass])
            if n <= 0:
                continue
            useful = [(t, k) for t, k in p.counts if rem[t] > 0]
            if not useful:
                continue
            fixed.append((p, n))
            left[p.klass] -= n
            for t, k in p.counts:
                rem[t] -= n * k
        keep = [t for t in range(problem.num_types) if rem[t] > 0]
        if not keep:
            break
        if sum(left) == 0:
            return None
        index = {t: k for k, t in enumerate(keep)}
        sub = ColocationProblem(problem.capacity, tuple(left), tuple(problem.demand[t] for t in keep),
                                multiplicity=tuple(rem[t] for t in keep), class_cost=problem.class_cost) \
            if sum(left) > 0 else None
        seeds = []
        for p in patterns:
            counts = tuple((index[t], min(k, rem[t])) for t, k in p.counts if t in index)
            if counts and left[p.klass] > 0:
                seeds.append(Pattern(p.klass, counts))
        step = min(budget.scale(_DIVE_STEP_MAX_DTIME),
                   max(budget.scale(_DIVE_STEP_MIN_DTIME), (dtime - (budget.used - start)) / 4))
        _, sub_patterns, values = _column_generation(sub, budget, step, seeds)
        patterns = [Pattern(p.klass, tuple((keep[t], k) for t, k in p.counts)) for p in sub_patterns]
    return fixed


def _integer_master(problem: ColocationProblem, patterns: list[Pattern], hint: list[Pattern],
                    options: SolveOptions, budget: Budget, lower: int
                    ) -> tuple[Status, list[tuple[Pattern, int]] | None, tuple[ProgressPoint, ...]]:
    model = cp_model.CpModel()
    y = [model.new_int_var(0, problem.class_count[p.klass], f"y_{k}") for k, p in enumerate(patterns)]
    for t in range(problem.num_types):
        model.add(sum(n * y[k] for k, p in enumerate(patterns) for tt, n in p.counts if tt == t)
                  >= problem.multiplicity[t])
    for c in range(problem.num_classes):
        model.add(sum(y[k] for k, p in enumerate(patterns) if p.klass == c) <= problem.class_count[c])
    cost = sum(problem.class_cost[p.klass] * y[k] for k, p in enumerate(patterns))
    model.add(cost >= lower)
    if problem.cost_budget is not None:
        model.add(cost <= problem.cost_budget)
    model.minimize(cost)
    counts: dict[Pattern, int] = {}
    for p in hint:
        counts[p] = counts.get(p, 0) + 1
    for k, p in enumerate(patterns):
        model.add_hint(y[k], counts.get(p, 0))
    status, solver, points = budget.run_cpsat(model, options, budget.left, "integer_master")
    if not status.has_solution:
        return status, None, points
    chosen = [(p, int(solver.value(y[k]))) for k, p in enumerate(patterns) if solver.value(y[k]) > 0]
    return status, chosen, points


def _expand(problem: ColocationProblem, chosen: list[tuple[Pattern, int]]) -> ColocationSolution:
    """Bins from chosen patterns (class by class, in pattern order); surplus copies dropped."""
    free = {c: list(problem.class_bins(c)) for c in range(problem.num_classes)}
    queues = {t: list(problem.type_items(t)) for t in range(problem.num_types)}
    where = [-1] * problem.num_items
    for p, n in chosen:
        for _ in range(n):
            b = free[p.klass].pop(0)
            for t, k in p.counts:
                for _ in range(k):
                    if queues[t]:
                        where[queues[t].pop(0)] = b
    return ColocationSolution(tuple(where))


@dataclass(frozen=True, slots=True)
class ColumnGenerationColocationSolver(Accepting):
    """Fewest (cheapest) processors: FFD, bin completion, column generation, integer master.

    Only for ``MIN_COST`` (use :class:`~solvers.colocation.cpsat.CpSatColocationSolver` for
    the balance objective). Never worse than first-fit decreasing; ``bound`` is the best of
    the volume bound and the pattern (Lagrangian) bound.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)))
    >>> r = ColumnGenerationColocationSolver().solve(p)
    >>> r.status.name, r.objective, r.bound
    ('OPTIMAL', 1, 1)
    """

    name: str = "colgen"
    problem_type = ColocationProblem
    # Share of the deterministic budget for bin completion (one class only).
    bin_completion_share: float = 0.25
    # Share of the deterministic budget for column generation; the integer master gets the rest.
    column_generation_share: float = 0.3
    # Share of the budget left after column generation for diving; the integer master gets the rest.
    dive_share: float = 0.8
    # Deterministic-time units per second of time limit (see solvers.colocation.budget).
    dtime_per_second: float = DTIME_PER_SECOND

    def refusal(self, problem: ColocationProblem) -> str | None:
        """Why column generation cannot take ``problem`` (only ``MIN_COST``), or None."""
        refused = Accepting.refusal(self, problem)
        if refused is None and problem.objective is not ColocationObjective.MIN_COST:
            return "column generation handles the min_cost objective only"
        return refused

    def solve(self, problem: ColocationProblem, options: SolveOptions = SolveOptions()) -> SolveResult[ColocationSolution]:
        if problem.objective is not ColocationObjective.MIN_COST:
            raise ValueError("column generation handles the min_cost objective only")
        t0 = time.perf_counter()
        budget = Budget.start(options.time_limit_s, Calibration("colocation", self.dtime_per_second),
                              search=options.search, t0=t0)
        greedy = FirstFitDecreasingSolver().solve(problem, options)
        lb = cost_lower_bound(problem, budget)
        stats: dict = {"ffd_objective": greedy.objective, "volume_bound": lb}
        if greedy.status is Status.INFEASIBLE:
            return failure_result(Status.INFEASIBLE, self.name, time.perf_counter() - t0, **stats)
        if greedy.solution is not None and greedy.objective <= lb:
            return SolveResult(Status.OPTIMAL, greedy.objective, lb, greedy.solution,
                               time.perf_counter() - t0, self.name,
                               {**stats, "stopped_by": budget.stop_word(), "proof": "ffd meets volume bound"})
        one_class = problem.num_classes == 1 and problem.class_cost[0] > 0 and problem.num_items <= 5000
        if one_class:
            info: dict = {}
            share = self.bin_completion_share * budget.total
            found = bin_completion(problem, lb // problem.class_cost[0], deadline_s=budget.deadline(share), info=info,
                                   max_nodes=budget.work(share, NODES_PER_DTIME))
            budget.note("bin_completion", info.get("nodes", 0) / NODES_PER_DTIME,
                        stopped_by=info.get("stopped_by", "skipped"))
            if found is not None and (problem.cost_budget is None or lb <= problem.cost_budget):
                return SolveResult(Status.OPTIMAL, lb, lb, found, time.perf_counter() - t0, self.name,
                                   {**stats, **budget.stats(), "proof": "bin completion meets volume bound"})
        seed = _patterns_of(problem, greedy.solution) if greedy.solution is not None else []
        before = budget.used
        lagrangian, patterns, values = _column_generation(
            problem, budget, self.column_generation_share * budget.total, seed)
        budget.log.append({"stage": "column_generation", "dtime": round(budget.used - before, 6)})
        bound = max(lb, math.ceil(lagrangian - 1e-6)) if lagrangian > -math.inf else lb
        stats.update({"pattern_bound": lagrangian, "patterns": len(patterns)})
        best, best_cost = greedy.solution, greedy.objective
        points: list[ProgressPoint] = []
        hint = seed
        if best is None or best_cost > bound:
            before = budget.used
            dived = _dive(problem, patterns, values, budget, budget.share(self.dive_share))
            budget.log.append({"stage": "dive", "dtime": round(budget.used - before, 6)})
            if dived is not None:
                sol = _expand(problem, dived)
                if not validate_colocation(problem, sol):
                    cost = solution_cost(problem, sol)
                    stats["dive_objective"] = cost
                    if best is None or cost < best_cost:
                        best, best_cost, hint = sol, cost, _patterns_of(problem, sol)
                        known = set(patterns)
                        patterns = patterns + [p for p in dict.fromkeys(hint) if p not in known]
                        points.append(ProgressPoint(time.perf_counter() - t0, float(cost), float(bound)))
                        if options.progress is not None:
                            options.progress(points[-1])
        if best is None or best_cost > bound:
            status, chosen, more = _integer_master(problem, patterns, hint, options, budget, bound)
            points.extend(more)
            stats["master_status"] = status.value
            if chosen is not None:
                sol = _expand(problem, chosen)
                errors = validate_colocation(problem, sol)
                if errors:
                    raise RuntimeError("pattern expansion produced an invalid packing: " + errors[0])
                cost = solution_cost(problem, sol)
                if best is None or cost < best_cost:
                    best, best_cost = sol, cost
            # Infeasible over the generated patterns only is not a proof: nothing to add.
        wall = time.perf_counter() - t0
        stats.update(budget.stats())
        if best is None:
            return failure_result(Status.UNKNOWN, self.name, wall, bound=bound, **stats)
        bound = min(bound, best_cost)
        status = Status.OPTIMAL if bound == best_cost else Status.FEASIBLE
        return SolveResult(status, best_cost, bound, best, wall, self.name, stats, tuple(points))
