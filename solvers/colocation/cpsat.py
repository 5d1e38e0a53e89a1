"""Vector bin packing with CP-SAT: fewest (cheapest) processors or the lowest peak utilization.

Notes
-----
Sets: item types ``T`` (with multiplicity ``m_t``), bins ``B`` (class ``c(b)``, position
``k(b)`` inside its class), dimensions ``D``.

Variables: ``x[t,b]`` in ``0..min(m_t, copies of t that fit an empty b)`` copies of type t
on bin b (Boolean when ``m_t = 1``), only where the class allows t and one copy fits;
``used[b]`` Boolean; ``U`` the peak utilization in basis points (balance objective).

Constraints:

* assignment: ``sum_b x[t,b] = m_t``;
* capacity: ``sum_t dem[t,c(b),d] x[t,b] <= cap[c(b),d] used[b]``;
* ``used[b] <= sum_t x[t,b]`` (an open bin holds something);
* symmetry, within each class: ``used[b] => used[b-1]`` and, with types in decreasing
  order occupying global item positions ``P_t .. P_t + m_t - 1``, ``x[t,b] = 0`` when
  ``k(b) > P_t + m_t - 1`` (relabel the bins of a class by their first item: the k-th bin's
  first item sits at position >= k);
* conservation, for dimensions where a type's demand does not depend on the class:
  ``sum_b load[b,d] = sum_t m_t dem[t,d]`` (a constant, which strengthens propagation);
* the volume lower bound as a constraint: ``sum_b cost used[b] >= cost_lower_bound``;
* balance: ``10 000 load[b,d] <= U cap[c(b),d]``, ``U >= max_utilization_lower_bound``;
  an optional ``cost_budget`` caps ``sum_b cost used[b]``.

Objective: ``min sum_b cost_{c(b)} used[b]`` or ``min U``.

The first-fit-decreasing packing (relabelled to satisfy the symmetry rules) is the hint,
and is returned instead whenever the search ends with nothing better, so the result is
never worse than the baseline. For the balance objective the hint is first improved by
:func:`~solvers.colocation.greedy.improve_balance` (moves and swaps out of the busiest bin);
on the benchmark's 1,000 models on 200 processors that alone ends 0.5% above the average
bound, where CP-SAT on the full model finds nothing better in its budget.

**Determinism.** The budget is deterministic time, ``dtime_per_second * time_limit_s``,
fixed up front (:class:`solvers.budget.Budget`): the local search and bin completion charge
counted work (candidates examined, search nodes) and get a share of the budget; CP-SAT gets
what the earlier stages left, as ``max_deterministic_time`` with ``interleave_search`` on for
any worker count (reproducible multi-worker search). The wall clock is only a safety net
(:data:`solvers.budget.NET_SLOWDOWN`); when it fires, ``stats["stopped_by"] == "wall_clock"``
and the run may not repeat. ``options.search == "until-limit"`` splits the wall clock instead.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solvers.colocation.bounds import cost_lower_bound, max_utilization_lower_bound
from solvers.budget import Budget, Calibration
from solvers.colocation.budget import DTIME_PER_SECOND, NODES_PER_DTIME, WORK_PER_DTIME
from solvers.colocation.greedy import FirstFitDecreasingSolver, bin_completion, decreasing_order, improve_balance
from solvers.colocation.problem import BASIS_POINTS, ColocationObjective, ColocationProblem, ColocationSolution
from solvers.colocation.validate import bin_loads, colocation_objective, validate_colocation
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.cpsat_support import integer_objective_bound

__all__ = ["CpSatColocationSolver", "ColocationVars", "build_colocation_model", "canonicalize", "repack_busiest"]

log = logging.getLogger(__name__)

_REPACK_STEP_DTIME = 0.005  # Python work of one re-pack step (loads, sub-model), in deterministic time


def _positions(problem: ColocationProblem) -> tuple[list[int], dict[int, int]]:
    """Types in decreasing order and the global position of each type's last copy."""
    order = decreasing_order(problem)
    last, pos = {}, 0
    for t in order:
        pos += problem.multiplicity[t]
        last[t] = pos - 1
    return order, last


def canonicalize(problem: ColocationProblem, solution: ColocationSolution) -> ColocationSolution:
    """Relabel the bins of each class in the order of their first item (decreasing item order).

    The result packs the same groups, satisfies the model's symmetry rules, and has the
    same objective.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem, ColocationSolution
    >>> p = ColocationProblem(((10,),), (3,), (((6,),), ((5,),), ((4,),)))
    >>> canonicalize(p, ColocationSolution((2, 0, 2))).bin_of_item
    (0, 1, 0)
    """
    order, _ = _positions(problem)
    items = [i for t in order for i in problem.type_items(t)]
    mapping: dict[int, int] = {}
    next_in_class = {c: 0 for c in range(problem.num_classes)}
    for i in items:
        b = solution.bin_of_item[i]
        if b not in mapping:
            c = problem.bin_class(b)
            mapping[b] = problem.class_bins(c)[next_in_class[c]]
            next_in_class[c] += 1
    return ColocationSolution(tuple(mapping[b] for b in solution.bin_of_item))


@dataclass
class ColocationVars:
    """Variable handles of the co-location model and the way back to a solution.

    >>> from solvers.colocation.problem import ColocationProblem
    >>> _, v = build_colocation_model(ColocationProblem(((10,),), (2,), (((6,),), ((5,),))))
    >>> v.types_on(1)   # only the second item may open bin 1
    [1]
    """

    problem: ColocationProblem
    x: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    used: list[cp_model.IntVar] = field(default_factory=list)
    peak_bp: cp_model.IntVar | None = None
    slack_cuts: bool = True
    objective_terms: list = field(default_factory=list)

    def types_on(self, b: int) -> list[int]:
        return [t for (t, bb) in self.x if bb == b]

    def extract(self, solver: cp_model.CpSolver) -> ColocationSolution:
        where = [-1] * self.problem.num_items
        for t in range(self.problem.num_types):
            items = iter(self.problem.type_items(t))
            for b in range(self.problem.num_bins):
                var = self.x.get((t, b))
                if var is None:
                    continue
                for _ in range(int(solver.value(var))):
                    where[next(items)] = b
        return ColocationSolution(tuple(where))

    def hint(self, model: cp_model.CpModel, solution: ColocationSolution) -> None:
        counts: dict[tuple[int, int], int] = {}
        for i, b in enumerate(solution.bin_of_item):
            key = (self.problem.item_type(i), b)
            counts[key] = counts.get(key, 0) + 1
        for key, var in self.x.items():
            model.add_hint(var, counts.get(key, 0))
        used = set(solution.bin_of_item)
        for b, var in enumerate(self.used):
            model.add_hint(var, int(b in used))
        if self.peak_bp is not None:
            model.add_hint(self.peak_bp, colocation_objective(self.problem, solution)
                           if self.problem.objective is ColocationObjective.MIN_MAX_UTILIZATION else BASIS_POINTS)


def add_assignment(model: cp_model.CpModel, problem: ColocationProblem, v: ColocationVars) -> list:
    """Create ``x`` and ``used``; every copy on one allowed bin; symmetry rules."""
    _, last = _positions(problem)
    for b in range(problem.num_bins):
        v.used.append(model.new_bool_var(f"used_{b}"))
    for t in range(problem.num_types):
        m = problem.multiplicity[t]
        for c in range(problem.num_classes):
            dem = problem.demand[t][c]
            if dem is None or not problem.fits_alone(t, c):
                continue
            fit = min([m] + [problem.capacity[c][d] // x for d, x in enumerate(dem) if x > 0])
            for k, b in enumerate(problem.class_bins(c)):
                if k > last[t]:
                    break
                v.x[t, b] = (model.new_bool_var(f"x_{t}_{b}") if fit == 1
                             else model.new_int_var(0, fit, f"x_{t}_{b}"))
                model.add(v.x[t, b] <= fit * v.used[b])  # even zero-demand items open their bin
        model.add(sum(v.x[t, b] for b in range(problem.num_bins) if (t, b) in v.x) == m)
    for c in range(problem.num_classes):
        bins = list(problem.class_bins(c))
        for prev, b in zip(bins, bins[1:]):
            model.add_implication(v.used[b], v.used[prev])
    for b in range(problem.num_bins):
        on_b = [v.x[t, b] for t in v.types_on(b)]
        if not on_b:
            model.add(v.used[b] == 0)
            continue
        model.add(sum(on_b) >= v.used[b])
    return []


def add_capacity(model: cp_model.CpModel, problem: ColocationProblem, v: ColocationVars) -> list:
    """Per bin and dimension, summed demand within capacity (zero on unused bins)."""
    by_bin = {b: v.types_on(b) for b in range(problem.num_bins)}
    for d in range(problem.num_dims):
        loads = []
        for b in range(problem.num_bins):
            c = problem.bin_class(b)
            load = sum(problem.demand[t][c][d] * v.x[t, b] for t in by_bin[b])
            if by_bin[b]:
                model.add(load <= problem.capacity[c][d] * v.used[b])
                if v.peak_bp is not None:
                    model.add(BASIS_POINTS * load <= problem.capacity[c][d] * v.peak_bp)
            loads.append(load)
        if all(len({problem.demand[t][c][d] for c in range(problem.num_classes)
                    if problem.demand[t][c] is not None}) == 1 for t in range(problem.num_types)):
            total = sum(problem.multiplicity[t] * next(x[d] for x in problem.demand[t] if x is not None)
                        for t in range(problem.num_types))
            model.add(sum(loads) == total)
            if v.slack_cuts:
                # No used bin leaves more room than the whole fleet's spare capacity.
                spare = sum(problem.capacity[problem.bin_class(b)][d] * v.used[b]
                            for b in range(problem.num_bins)) - total
                for b in range(problem.num_bins):
                    if by_bin[b]:
                        model.add(loads[b] >= problem.capacity[problem.bin_class(b)][d] * v.used[b] - spare)
    return []


def add_objective(model: cp_model.CpModel, problem: ColocationProblem, v: ColocationVars,
                  cost_floor: int | None = None) -> list:
    """Cost of used bins (with its lower bound and budget) and the peak utilization.
    ``cost_floor``: the cost bound the caller computed under its budget (None: computed here)."""
    cost = sum(problem.class_cost[problem.bin_class(b)] * v.used[b] for b in range(problem.num_bins))
    if problem.objective is ColocationObjective.MIN_COST:
        model.add(cost >= (cost_lower_bound(problem) if cost_floor is None else cost_floor))
    if problem.cost_budget is not None:
        model.add(cost <= problem.cost_budget)
    if problem.objective is ColocationObjective.MIN_COST:
        return [cost]
    assert v.peak_bp is not None
    return [v.peak_bp]


def build_colocation_model(problem: ColocationProblem, cost_floor: int | None = None
                           ) -> tuple[cp_model.CpModel, ColocationVars]:
    """The CP-SAT model of ``problem`` (see the module Notes) and its variables; ``cost_floor``
    is a min-cost bound already computed (:func:`cost_lower_bound`), None to compute it here.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem
    >>> model, v = build_colocation_model(ColocationProblem(((10,),), (3,), (((6,),), ((5,),), ((4,),))))
    >>> sorted(v.x)   # the largest item may only open bin 0; the second, bins 0-1
    [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    """
    model = cp_model.CpModel()
    v = ColocationVars(problem)
    if problem.objective is ColocationObjective.MIN_MAX_UTILIZATION:
        v.peak_bp = model.new_int_var(max_utilization_lower_bound(problem), BASIS_POINTS, "peak_bp")
    add_assignment(model, problem, v)
    add_capacity(model, problem, v)
    v.objective_terms = add_objective(model, problem, v, cost_floor)
    model.minimize(sum(v.objective_terms))
    return model, v



def repack_busiest(problem: ColocationProblem, solution: ColocationSolution, budget: Budget, dtime: float,
                   options: SolveOptions, *, bins: list[int] | None = None, neighbourhood: int = 6,
                   step_dtime: float = 0.05) -> tuple[ColocationSolution, dict]:
    """Large-neighbourhood search on the peak: re-pack the busiest bin with a few others exactly.

    Each step takes the busiest bin (lowest index on ties) and ``neighbourhood - 1`` partners
    among ``bins`` (default: all): the least utilized half, the rest drawn by a
    :class:`random.Random` seeded with ``options.random_seed`` and the step number. CP-SAT
    searches that sub-problem (hinted with the current packing, at most
    ``step_dtime``) and stops at the first sub-packing below the current peak of the
    busiest bin, which then replaces it.
    Stops after ``dtime`` deterministic time charged to ``budget`` (or its wall safety net).
    Returns the packing (feasible whenever the input is, never worse) and counters.

    Examples
    --------
    >>> from solvers.colocation.problem import ColocationProblem, ColocationSolution
    >>> p = ColocationProblem(((10,),), (2,), (((6,),), ((3,),), ((5,),), ((4,),)),
    ...                       objective=ColocationObjective.MIN_MAX_UTILIZATION)
    >>> from solvers.budget import COLOCATION
    >>> b = Budget.start(5.0, COLOCATION)
    >>> sol, info = repack_busiest(p, ColocationSolution((0, 1, 1, 0)), b, 0.5, SolveOptions(num_workers=1))
    >>> colocation_objective(p, sol), info["improved"]   # 6+4 | 3+5 -> 6+3 | 5+4
    (9000, 1)
    """
    allowed = list(range(problem.num_bins)) if bins is None else sorted(bins)
    where = list(solution.bin_of_item)
    caps = [problem.capacity[problem.bin_class(b)] for b in range(problem.num_bins)]
    start, steps, improved, failures = budget.used, 0, 0, 0
    sub_options = SolveOptions(num_workers=1, random_seed=options.random_seed)
    while budget.used - start < dtime and not budget.wall_expired() and failures < 4 * len(allowed):
        loads = bin_loads(problem, ColocationSolution(tuple(where)))
        util = [max(-(-BASIS_POINTS * x // k) for x, k in zip(loads[b], caps[b])) for b in range(problem.num_bins)]
        worst = max(allowed, key=lambda b: (util[b], -b))
        peak = util[worst]
        rng = random.Random(1_000_003 * options.random_seed + steps)
        steps += 1
        others = sorted((b for b in allowed if b != worst), key=lambda b: (util[b], b))
        k = min(neighbourhood - 1, len(others))
        calm = others[:k // 2]
        rest = others[k // 2:]
        chosen = sorted([worst] + calm + rng.sample(rest, k - len(calm)))
        chosen.sort(key=lambda b: (problem.bin_class(b), b))
        classes = sorted({problem.bin_class(b) for b in chosen})
        items = [i for i, b in enumerate(where) if b in set(chosen)]
        types = sorted({problem.item_type(i) for i in items})
        if not items:
            failures += 1
            continue
        by_type = {t: [i for i in items if problem.item_type(i) == t] for t in types}
        sub = ColocationProblem(
            capacity=tuple(problem.capacity[c] for c in classes),
            class_count=tuple(sum(1 for b in chosen if problem.bin_class(b) == c) for c in classes),
            demand=tuple(tuple(problem.demand[t][c] for c in classes) for t in types),
            multiplicity=tuple(len(by_type[t]) for t in types),
            class_cost=tuple(problem.class_cost[c] for c in classes),
            objective=ColocationObjective.MIN_MAX_UTILIZATION)
        local = {b: n for n, b in enumerate(chosen)}  # chosen is class by class, like sub's bins
        order = [i for t in types for i in by_type[t]]
        model, v = build_colocation_model(sub)
        model.add(v.peak_bp <= peak - 1)
        model.clear_objective()  # any sub-packing below the peak will do: stop at the first
        v.hint(model, canonicalize(sub, ColocationSolution(tuple(local[where[i]] for i in order))))
        step = max(1e-3, min(budget.scale(step_dtime), dtime - (budget.used - start)))
        status, solver, _ = budget.run_cpsat(model, sub_options, step, None, interleave=False)
        budget.charge(_REPACK_STEP_DTIME)  # plus building the sub-model
        if status.has_solution:
            found = v.extract(solver)
            for n, i in enumerate(order):
                where[i] = chosen[found.bin_of_item[n]]
            improved += 1
            failures = 0
        else:
            failures += 1
    budget.log.append({"stage": "repack", "dtime": round(budget.used - start, 6), "steps": steps,
                       "improved": improved})
    return ColocationSolution(tuple(where)), {"steps": steps, "improved": improved}


@dataclass(frozen=True, slots=True)
class CpSatColocationSolver(Accepting):
    """Exact vector bin packing (fewest/cheapest bins, or lowest peak utilization).

    Examples
    --------
    The issue's example comes out co-located on one processor, proven optimal:

    >>> from solvers.colocation.problem import ColocationProblem
    >>> p = ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)))
    >>> r = CpSatColocationSolver().solve(p)
    >>> r.status.name, r.objective, r.bound, r.solution.bin_of_item
    ('OPTIMAL', 1, 1, (0, 0))
    """

    name: str = "cpsat"
    problem_type = ColocationProblem
    # Share of the deterministic budget spent looking for a packing that meets the volume bound.
    bin_completion_share: float = 0.3
    # Share of the deterministic budget for the move/swap local search on the balance objective.
    local_search_share: float = 0.7
    # Share of the budget left after the local search for re-packing the busiest bin (LNS).
    repack_share: float = 0.6
    # Bin completion runs on expanded items; above this many it is skipped.
    bin_completion_max_items: int = 5000
    # Deterministic-time units per second of time limit (see solvers.colocation.budget).
    dtime_per_second: float = DTIME_PER_SECOND

    def solve(self, problem: ColocationProblem, options: SolveOptions = SolveOptions()) -> SolveResult[ColocationSolution]:
        t0 = time.perf_counter()
        budget = Budget.start(options.time_limit_s, Calibration("colocation", self.dtime_per_second),
                              search=options.search, t0=t0)
        greedy = FirstFitDecreasingSolver().solve(problem, options)
        if greedy.status is Status.INFEASIBLE:
            return failure_result(Status.INFEASIBLE, self.name, time.perf_counter() - t0)
        hint = options.hint if options.hint is not None else greedy.solution
        if hint is not None and validate_colocation(problem, hint):
            hint = greedy.solution
        lb = (cost_lower_bound(problem, budget) if problem.objective is ColocationObjective.MIN_COST
              else max_utilization_lower_bound(problem))
        stats: dict = {"lower_bound": lb, "greedy_objective": greedy.objective}
        if (problem.objective is ColocationObjective.MIN_MAX_UTILIZATION and hint is not None
                and colocation_objective(problem, hint) > lb and self.local_search_share > 0):
            # Relieve the busiest processors by moves and swaps before the search.
            bins = None if problem.cost_budget is None else list(hint.used_bins())
            info: dict = {}
            share = budget.share(self.local_search_share)
            better = improve_balance(problem, hint, bins=bins, info=info, deadline_s=budget.deadline(share),
                                     max_work=budget.work(share, WORK_PER_DTIME))
            budget.note("local_search", info["work"] / WORK_PER_DTIME, steps=info["steps"],
                        stopped_by=info["stopped_by"])
            if colocation_objective(problem, better) > lb and self.repack_share > 0 and budget.left > 0:
                # Re-pack the busiest processor with a few others exactly, then polish again.
                better, _ = repack_busiest(problem, better, budget, budget.share(self.repack_share), options,
                                           bins=bins)
                info = {}
                share = budget.share(self.local_search_share)
                better = improve_balance(problem, better, bins=bins, info=info, deadline_s=budget.deadline(share),
                                         max_work=budget.work(share, WORK_PER_DTIME))
                budget.note("local_search", info["work"] / WORK_PER_DTIME, steps=info["steps"],
                            stopped_by=info["stopped_by"])
            if colocation_objective(problem, better) < colocation_objective(problem, hint):
                hint = better
                if greedy.solution is None or colocation_objective(problem, better) < greedy.objective:
                    greedy = SolveResult(Status.FEASIBLE, colocation_objective(problem, better), None, better,
                                         greedy.wall_time_s, "ffd+local-search")
        if greedy.solution is not None and greedy.objective is not None and greedy.objective <= lb:
            # The baseline meets the lower bound: nothing left to search.
            return SolveResult(Status.OPTIMAL, greedy.objective, greedy.objective, greedy.solution,
                               time.perf_counter() - t0, self.name,
                               {**stats, **budget.stats(), "proof": "greedy meets lower bound"})
        if (problem.objective is ColocationObjective.MIN_COST and problem.num_classes == 1
                and self.bin_completion_share > 0
                and problem.class_cost[0] > 0 and problem.num_items <= self.bin_completion_max_items):
            # A packing that meets the volume bound is optimal: look for one directly.
            k = lb // problem.class_cost[0]
            info = {}
            share = budget.share(self.bin_completion_share)
            found = bin_completion(problem, k, deadline_s=budget.deadline(share), info=info,
                                   max_nodes=budget.work(share, NODES_PER_DTIME))
            budget.note("bin_completion", info.get("nodes", 0) / NODES_PER_DTIME,
                        stopped_by=info.get("stopped_by", "skipped"))
            if found is not None and (problem.cost_budget is None or lb <= problem.cost_budget):
                return SolveResult(Status.OPTIMAL, lb, lb, found, time.perf_counter() - t0, self.name,
                                   {**stats, **budget.stats(), "proof": "bin completion meets lower bound"})
        model, v = build_colocation_model(problem, lb if problem.objective is ColocationObjective.MIN_COST else None)
        if hint is not None:
            v.hint(model, canonicalize(problem, hint))
        status, solver, points = budget.run_cpsat(model, options, budget.left, "cpsat")
        wall = time.perf_counter() - t0
        stats.update({"cpsat_status": status.value, "branches": solver.num_branches,
                      "conflicts": solver.num_conflicts, "num_x_vars": len(v.x), **budget.stats()})
        if status is Status.MODEL_INVALID:
            raise RuntimeError(f"co-location model invalid: {model.validate()}")
        if not status.has_solution:
            if status is Status.UNKNOWN and greedy.solution is not None:
                return SolveResult(Status.FEASIBLE, greedy.objective, lb, greedy.solution, wall, self.name,
                                   {**stats, "fallback": greedy.solver_name}, points)
            return failure_result(status, self.name, wall, **stats)
        sol = v.extract(solver)
        objective = colocation_objective(problem, sol)
        bound = max(lb, integer_objective_bound(solver))
        if greedy.solution is not None and greedy.objective is not None and greedy.objective < objective:
            sol, objective = greedy.solution, greedy.objective
            stats["fallback"] = greedy.solver_name
        bound = min(bound, objective)
        final = Status.OPTIMAL if bound == objective else Status.FEASIBLE
        return SolveResult(final, objective, bound, sol, wall, self.name, stats, points)
