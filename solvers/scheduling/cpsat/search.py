"""The CP-SAT solves of the scheduler, from a hint and a proven bound.

One job: run the model: the bound probe (``makespan == bound`` as a feasibility
problem), the main solve (full, or sequencing only above ``max_full_ops``) warm-started
from the hint, and the whole sequence :func:`solve` (initial hint, list search, optional
improvement stages, probe, main solve) that both the scheduler and its nested segment
solves use. The strategy is described in :mod:`solvers.scheduling.cpsat.scheduler`.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

from ortools.sat.python import cp_model

from solvers.budget import (FULL_MODEL_FREE_ELEMENTS, FULL_MODEL_SHARE, MODEL_ELEMENTS_PER_UNIT, Budget,
                            build_units)
from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.scheduling.bounds import lower_bound
from solvers.scheduling.cpsat.extraction import checked_solution, run_stats
from solvers.scheduling.cpsat.hints import add_hint, initial_hint, list_search_hint
from solvers.scheduling.cpsat.model import build
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.cpsat.symmetry import canonical_solution, interchangeable_classes
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import objective_value, validate_schedule
from solvers.cpsat_support import integer_objective_bound

__all__ = ["Stage", "solve", "finish", "main_solve", "probe_bound", "run", "serial_horizon", "SOLVER_NAME",
           "full_model_elements", "sequencing_only"]

SOLVER_NAME = "cpsat"  # the name results carry (CpSatScheduler.name)

Stage = Callable[[SchedulingProblem, SolveOptions, Budget, "SchedulingSolution | None", str, int, dict],
                 "tuple[SchedulingSolution | None, str, int]"]
"""A stage between the list search and the probe: (problem, options, budget, hint, hint source,
bound, stats) -> (hint, hint source, bound); it may only improve the hint and raise the bound."""


def solve(problem: SchedulingProblem, options: SolveOptions, budget: Budget, cfg: CpSatOptions,
          t0: float, stage: Stage | None = None) -> SolveResult[SchedulingSolution]:
    """Lower bound, initial hint, list search, ``stage``, then :func:`finish`.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5)), ((0, 1, 8), (0, 2, 8)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> from solvers.budget import SCHEDULING
    >>> r = solve(p, SolveOptions(), Budget.of(SolveOptions(), SCHEDULING), CpSatOptions(), time.perf_counter())
    >>> r.status.value, r.objective
    ('OPTIMAL', 7)
    """
    bound = lower_bound(problem)
    hint, hint_source = initial_hint(problem, options)
    hint_obj = objective_value(problem, hint) if hint is not None else None
    stats: dict[str, Any] = {"lower_bound": bound, "hint_source": hint_source if hint else None,
                             "hint_objective": hint_obj}
    hint, hint_source = list_search_hint(problem, options, budget, cfg, hint, hint_source, bound, stats)
    if stage is not None:
        hint, hint_source, bound = stage(problem, options, budget, hint, hint_source, bound, stats)
    result = finish(problem, options, budget, cfg, hint, bound, stats, t0)
    result.stats.update(budget.stats())
    return result


def finish(problem: SchedulingProblem, options: SolveOptions, budget: Budget, cfg: CpSatOptions,
           hint: SchedulingSolution | None, bound: int, stats: dict,
           t0: float) -> SolveResult[SchedulingSolution]:
    """OPTIMAL at once when the hint meets the bound; else the bound probe (LATENCY, hint
    within ``bound_probe_max_gap``), then :func:`main_solve`.

    Examples
    --------
    >>> p = SchedulingProblem(((4,), (3,)), ((0, 1, 0),), (1,), ((-1,),), ((),))
    >>> hint, _ = initial_hint(p, SolveOptions())
    >>> from solvers.budget import SCHEDULING
    >>> r = finish(p, SolveOptions(), Budget.of(SolveOptions(), SCHEDULING), CpSatOptions(), hint, 7, {}, 0.0)
    >>> r.status.value, r.stats["proof"]
    ('OPTIMAL', 'hint meets the lower bound')
    """
    hint_obj = objective_value(problem, hint) if hint is not None else None
    if hint is not None and hint_obj <= bound:
        stats["proof"] = "hint meets the lower bound"
        return SolveResult(Status.OPTIMAL, hint_obj, hint_obj, hint, time.perf_counter() - t0,
                           SOLVER_NAME, stats)
    if (hint is not None and problem.objective is Objective.LATENCY and cfg.bound_probe_share > 0
            and problem.num_ops <= cfg.max_full_ops
            and hint_obj - bound <= cfg.bound_probe_max_gap * hint_obj):
        amount = cfg.bound_probe_share * budget.total
        if stats.get("stage_budget") == "cumulative":  # within what the stages left the main solve
            amount = min(amount, budget.left)
        probe_status, probe = probe_bound(problem, options, bound, budget, amount, cfg)
        stats["bound_probe"] = probe_status.value
        if probe is not None:
            obj = objective_value(problem, probe)  # <= bound by the model, >= bound as a bound
            stats["proof"] = "a schedule meets the lower bound (bound probe)"
            return SolveResult(Status.OPTIMAL, obj, obj, probe, time.perf_counter() - t0, SOLVER_NAME, stats)
        if probe_status is Status.INFEASIBLE:
            bound += 1  # no schedule ends at the bound: the optimum is at least one more
            stats["lower_bound"] = bound
            if hint_obj <= bound:
                stats["proof"] = "hint meets the lower bound raised by the bound probe"
                return SolveResult(Status.OPTIMAL, hint_obj, hint_obj, hint, time.perf_counter() - t0,
                                   SOLVER_NAME, stats)
    return main_solve(problem, options, budget, cfg, hint, bound, stats, t0)


def serial_horizon(problem: SchedulingProblem) -> int:
    """Every op and transfer one after the other at its slowest: a horizon some optimum fits.

    Examples
    --------
    >>> serial_horizon(SchedulingProblem(((4, 2), (3, 3)), ((0, 1, 64),), (1, 1),
    ...                                  ((-1, 0), (0, -1)), ((5,),)))
    12
    """
    return (sum(max(r) for r in problem.durations_cycles)
            + sum(max(r, default=0) for r in problem.transfer_cycles))


def _horizon(problem: SchedulingProblem, hint: SchedulingSolution | None) -> int:
    """The main model's horizon (see the model's Notes, **Horizon**)."""
    if hint is None:
        return serial_horizon(problem)
    if problem.objective is Objective.LATENCY:
        return hint.makespan_cycles
    return max(serial_horizon(problem), hint.makespan_cycles)


def full_model_elements(problem: SchedulingProblem) -> int:
    """Predicted size of the full model: a placement literal per allowed (op, device) and a
    transfer literal per allowed device pair of each edge (what building and presolve cost).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, -1)), ((0, 1, 8), (0, 2, 8)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> full_model_elements(p)  # 2 + 2 + 1 placements, 2 x 2 + 2 x 1 pairs
    11
    """
    allowed = [len(problem.allowed_devices(i)) for i in range(problem.num_ops)]
    return sum(allowed) + sum(allowed[u] * allowed[w] for u, w, _b in problem.edges)


def sequencing_only(problem: SchedulingProblem, budget: Budget, cfg: CpSatOptions) -> bool:
    """Whether the main solve fixes the hint's placement: above ``cfg.max_full_ops`` ops, or
    when building the full model would cost more than :data:`~solvers.budget.FULL_MODEL_SHARE`
    of the budget at :data:`~solvers.budget.MODEL_ELEMENTS_PER_UNIT` (work CP-SAT's
    deterministic time does not count; a size-based cap, so the same on any machine) and is
    above :data:`~solvers.budget.FULL_MODEL_FREE_ELEMENTS`.

    Examples
    --------
    >>> from solvers.budget import SCHEDULING
    >>> n, k = 400, 8; chain = tuple((i, i + 1, 8) for i in range(n - 1))
    >>> links = tuple(tuple(-1 if a == b else 0 for b in range(k)) for a in range(k))
    >>> p = SchedulingProblem(((1,) * k,) * n, chain, (1,) * k, links, ((1,),) * (n - 1))
    >>> full_model_elements(p), full_model_elements(p) / MODEL_ELEMENTS_PER_UNIT  # 400 x 8 + 399 x 64
    (28736, 0.57472)
    >>> sequencing_only(p, Budget.start(20.0, SCHEDULING), CpSatOptions())  # 1.4 units: 0.7 may build
    False
    >>> sequencing_only(p, Budget.start(10.0, SCHEDULING), CpSatOptions())  # 0.7 units: 0.35 may build
    True
    """
    if problem.num_ops > cfg.max_full_ops:
        return True
    elements = full_model_elements(problem)
    if elements <= FULL_MODEL_FREE_ELEMENTS:
        return False
    return budget.scale(build_units(elements, MODEL_ELEMENTS_PER_UNIT)) > FULL_MODEL_SHARE * budget.total


def main_solve(problem: SchedulingProblem, options: SolveOptions, budget: Budget, cfg: CpSatOptions,
               hint: SchedulingSolution | None, bound: int, stats: dict,
               t0: float) -> SolveResult[SchedulingSolution]:
    """The full model (or sequencing only, :func:`sequencing_only`) warm-started from ``hint``;
    never worse than the hint.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5)), ((0, 1, 8), (0, 2, 8)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> from solvers.budget import SCHEDULING
    >>> r = main_solve(p, SolveOptions(), Budget.of(SolveOptions(), SCHEDULING), CpSatOptions(), None, 6, {}, 0.0)
    >>> r.status.value, r.objective, r.bound
    ('OPTIMAL', 7, 7)
    """
    hint_obj = objective_value(problem, hint) if hint is not None else None
    decompose = hint is not None and sequencing_only(problem, budget, cfg)
    placement = hint.op_device if decompose else None
    stats["mode"] = "sequencing (hint placement fixed)" if decompose else "full"
    horizon = _horizon(problem, hint)
    sym = cfg.symmetry_breaking and placement is None
    if sym and hint is not None:
        classes = interchangeable_classes(problem, [problem.allowed_devices(i)
                                                    for i in range(problem.num_ops)])
        canon = canonical_solution(problem, hint, classes)
        if validate_schedule(problem, canon):  # pragma: no cover - defensive
            sym = False
        else:
            hint = canon
    model, v = build(problem, horizon, bound=bound, upper=hint_obj, placement=placement,
                     symmetry_breaking=sym)
    if hint is not None:
        add_hint(model, problem, v, hint)
    # the main solve gets what the stages left, and at least a fifth of the budget; where the
    # stages shared the budget cumulatively their shares left it at least cfg.main_share
    # (solvers.scheduling.cpsat.stage_budget), so what is left is its whole allowance
    floor = 0.0 if stats.get("stage_budget") == "cumulative" else 0.2 * budget.total
    status, solver, points = run(model, options, budget, max(floor, budget.left), "main",
                                 cfg.interleave_search)
    stats.update(run_stats(solver, status, options, cfg.interleave_search))
    wall = time.perf_counter() - t0
    if status is Status.MODEL_INVALID:  # our bug: the bridge raises InternalError on it
        return failure_result(Status.MODEL_INVALID, SOLVER_NAME, wall, None, **stats)
    found = checked_solution(problem, v, solver) if status.has_solution else None
    cp_bound = bound
    if not decompose and status.has_solution:
        cp_bound = max(bound, integer_objective_bound(solver))
    if found is not None and (hint is None or objective_value(problem, found) <= hint_obj):
        obj = objective_value(problem, found)
        if (status is Status.OPTIMAL and not decompose) or obj <= bound:
            return SolveResult(Status.OPTIMAL, obj, obj, found, wall, SOLVER_NAME, stats, tuple(points))
        return SolveResult(Status.FEASIBLE, obj, min(cp_bound, obj), found, wall, SOLVER_NAME,
                           stats, tuple(points))
    if hint is not None:
        stats["returned"] = "hint (CP-SAT found nothing better in time)"
        return SolveResult(Status.FEASIBLE, hint_obj, min(bound, hint_obj), hint, wall,
                           SOLVER_NAME, stats, tuple(points))
    if status is Status.INFEASIBLE:
        return failure_result(Status.INFEASIBLE, SOLVER_NAME, wall, None, **stats)
    return failure_result(status if not status.has_solution else Status.UNKNOWN,
                          SOLVER_NAME, wall, bound, **stats)


def probe_bound(problem: SchedulingProblem, options: SolveOptions, bound: int, budget: Budget,
                amount: float, cfg: CpSatOptions) -> tuple[Status, SchedulingSolution | None]:
    """Look for a schedule whose makespan equals ``bound``: (status, schedule or None).

    Examples
    --------
    >>> p = SchedulingProblem(((4,), (3,)), ((0, 1, 0),), (1,), ((-1,),), ((),))
    >>> from solvers.budget import SCHEDULING
    >>> probe_bound(p, SolveOptions(), 6, Budget.of(SolveOptions(), SCHEDULING), 1.0, CpSatOptions())
    (<Status.INFEASIBLE: 'INFEASIBLE'>, None)
    """
    model, v = build(problem, bound, bound=bound, upper=bound, symmetry_breaking=cfg.symmetry_breaking)
    status, solver, _ = run(model, replace(options, progress=None), budget, amount, "bound_probe",
                            cfg.interleave_search)
    found = checked_solution(problem, v, solver, "CP-SAT probe solution") if status.has_solution else None
    return status, found


def run(model: cp_model.CpModel, options: SolveOptions, budget: Budget, amount: float, stage: str,
        interleave: bool = True):
    """Run CP-SAT within ``amount`` of ``budget`` (the budget sets the limits and charges it):
    (status, solver, progress points). Nothing is added to the model here.

    Examples
    --------
    >>> p = SchedulingProblem(((4,), (3,)), ((0, 1, 0),), (1,), ((-1,),), ((),))
    >>> model, _ = build(p, 20)
    >>> from solvers.budget import SCHEDULING
    >>> run(model, SolveOptions(), Budget.of(SolveOptions(), SCHEDULING), 1.0, "main")[0].value
    'OPTIMAL'
    """
    # Presolve probing costs far more wall time than its deterministic-time estimate on
    # these models (10 s of wall time for 0.9 dtime at 218 ops, twice): switch it off.
    params: dict[str, Any] = {"cp_model_probing_level": 0}
    if options.log is not None:
        params["log_to_stdout"] = False
    return budget.run_cpsat(model, options, amount, stage, interleave=interleave, **params)
