"""Exact level assignment over N levels (issue 14, item 1): the CP-SAT solver.

Notes
-----
The model is :mod:`~solvers.memory.levels.hierarchy_model`'s (its names are re-exported
here). Objective: minimize the makespan. Warm start: the better of the greedy and
all-at-home plans as hint and upper bound; the result is re-timed by the replay (never later).
Stops on deterministic time (:class:`solvers.budget.Budget`). Up to ``max_model_ops`` ops
(64, as the two-level solver's window threshold): one model. Above it one model does not
scale (a 666-op, 999-tensor four-level chain ran 193 s of wall time on a 60-s limit, load
~13 on two cores, without improving the greedy plan): the bound is the relaxation of
:mod:`~solvers.memory.levels.hierarchy_bounds` (sound), and its solution's choice of which
tensors leave home guides one more greedy plan (the others are read in place), improved by
:func:`~solvers.memory.levels.hierarchy_greedy.search_stay_home` (one tensor's choice flipped
at a time, kept when the greedy plan gets shorter; counted work) and by
:func:`~solvers.memory.levels.fetch_balance.plan_fetch_balanced` (which slow-home inputs to
fetch, balanced over the op stream and the DMA engine; a few greedy plans); then **window search**
(:mod:`~solvers.memory.levels.hierarchy_window`) re-optimises windows of consecutive ops
exactly around the best plan with the rest of the budget, counted at
``window_dtime_per_second``. The window model is this model built small
(:func:`build_hierarchy_model` with ``fixed``/``free_ops``, :class:`Frame`): every decision
outside the window is a Python constant rather than a fixed variable (an earlier attempt
fixing the whole model's variables by constraints ran 16-30 s per 24-op window in presolve),
only the hops and capacity points a re-decided piece may touch enter the ``NoOverlap`` and
the ``Cumulative`` (the rest is the incumbent's, as one fixed demand per stretch). The best
plan is kept, FEASIBLE with the relaxation's bound unless it meets it.

Split groups (``problem.splits``): every factor vector's expansion is solved with its share
of the limit (:func:`~solvers.memory.levels.hierarchy_split.solve_each_split`); the best wins,
OPTIMAL when every expansion's bound is at least it.
"""

from __future__ import annotations

import time
from dataclasses import replace

from solvers.budget import MEMORY_LEVELS, Budget, Calibration
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.fetch_balance import plan_fetch_balanced
from solvers.memory.levels.hierarchy_bounds import relaxation_stays_home, solve_bound_relaxation
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_best, retime_hierarchy, search_stay_home
from solvers.memory.levels.hierarchy_model import (
    Frame, HierarchyVars, HopVars, add_level_capacities, add_level_durations, add_levels, add_moves,
    build_hierarchy_model,
)
from solvers.memory.levels.hierarchy_split import solve_each_split
from solvers.memory.levels.hierarchy_validate import hierarchy_metrics, validate_hierarchy
from solvers.memory.levels.hierarchy_window import WindowSettings, window_search
from solvers.cpsat_support import integer_objective_bound

__all__ = [
    "HopVars", "HierarchyVars", "Frame", "build_hierarchy_model", "add_levels", "add_level_durations", "add_moves",
    "add_level_capacities", "CpSatHierarchySolver",
]


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
                 bound_share: float = 0.25, flip_op_evaluations_per_second: float = 4000.0,
                 search_windows: bool = True, window_settings=None, window_dtime_per_second: float = 0.12) -> None:
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
        # Above it, then: exact window models around the best plan with what is left
        # (solvers.memory.levels.hierarchy_window; settings None: its defaults).
        if search_windows and window_settings is None:
            window_settings = WindowSettings()
        self.window_settings = window_settings if search_windows else None
        # The window phase's deterministic units per second of the limit: a 24-op window of the
        # 666-op chain (benchmarks/memory_levels.py) runs ~0.2 units per CPU second, so at 60 s
        # the windows take ~25 CPU seconds of the minute.
        self.window_dtime_per_second = window_dtime_per_second

    def solve(self, problem: HierarchyProblem, options: SolveOptions = SolveOptions()
              ) -> SolveResult[HierarchySolution]:
        if problem.splits:  # every factor vector's expansion, each with its share of the limit
            return solve_each_split(problem, lambda q, k: self.solve(
                q, replace(options, time_limit_s=options.time_limit_s / k, hint=None)), self.name)
        t0 = time.perf_counter()
        budget = Budget.of(options, Calibration("memory-hierarchy", self.dtime_per_second), t0)
        candidates = [s for s in (plan_hierarchy_best(problem),) if s is not None and not validate_hierarchy(problem, s)]
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
            bound = integer_objective_bound(solver)
        elif status is Status.INFEASIBLE:  # nothing beats the upper bound: the baseline is optimal
            bound = best.makespan_cycles if best is not None else None
        if best is None:
            return failure_result(Status.INFEASIBLE if status is Status.INFEASIBLE else Status.UNKNOWN, self.name,
                                  wall, **budget.stats())
        bound = None if bound is None else min(bound, best.makespan_cycles)
        final = Status.OPTIMAL if bound is not None and bound >= best.makespan_cycles else Status.FEASIBLE
        stats = {**hierarchy_metrics(problem, best).as_dict(), **budget.stats()}
        return SolveResult(final, best.makespan_cycles, bound, best, wall, self.name, stats, progress)

    def _window_search(self, problem: HierarchyProblem, best: HierarchySolution, budget: Budget,
                       options: SolveOptions, lower_bound: int) -> tuple[HierarchySolution, dict]:
        """Window search with what is left of ``budget``, counted at ``window_dtime_per_second``
        (a window solve runs more deterministic time per CPU second than the one model)."""
        scale = self.window_dtime_per_second / self.dtime_per_second
        if budget.deterministic:
            windows = Budget(max(1e-3, budget.left * scale), budget.wall_deadline, budget.search, budget.rate * scale)
        else:
            windows = budget.child(budget.left)
        best, info = window_search(problem, best, windows, options, lower_bound, self.window_settings)
        budget.note("window_search", windows.used / scale if budget.deterministic else 0.0,
                    stopped_by=windows.stopped_by or info["stopped_by"])
        return best, info

    def _solve_large(self, problem: HierarchyProblem, options: SolveOptions, budget: Budget, candidates: list,
                     t0: float) -> SolveResult[HierarchySolution]:
        """Above ``max_model_ops``: the relaxation of :mod:`~solvers.memory.levels.hierarchy_bounds`
        gives the bound and, from its solution, one more greedy plan (tensors it reads in place
        stay home); the best plan is kept."""
        relax = solve_bound_relaxation(problem, budget, budget.share(self.bound_share))
        search, stay_home = {}, frozenset()
        if relax.leaving_home is not None:
            work = self.flip_op_evaluations_per_second * options.time_limit_s
            stay_home = relaxation_stays_home(problem, relax.leaving_home)
            guided, search = search_stay_home(problem, stay_home, work, budget.wall_expired)
            if guided is not None:
                candidates.append(guided)
        balanced, balance = plan_fetch_balanced(problem, stay_home)  # last: ties keep the plans above
        if balanced is not None:
            candidates.append(balanced)
        best = min(candidates, key=lambda s: s.makespan_cycles, default=None)
        windows = {}
        if best is not None and self.window_settings is not None and best.makespan_cycles > relax.bound_cycles:
            best, windows = self._window_search(problem, best, budget, options, relax.bound_cycles)
        wall = time.perf_counter() - t0
        if best is None:
            return failure_result(Status.UNKNOWN, self.name, wall, bound=relax.bound_cycles, model="too large",
                                  **budget.stats())
        bound = min(relax.bound_cycles, best.makespan_cycles)
        final = Status.OPTIMAL if bound >= best.makespan_cycles else Status.FEASIBLE
        stats = {**hierarchy_metrics(problem, best).as_dict(), "model": "too large", "stay_home_search": search,
                 "fetch_balance": balance, "window_search": windows, **budget.stats()}
        return SolveResult(final, best.makespan_cycles, bound, best, wall, self.name, stats)
