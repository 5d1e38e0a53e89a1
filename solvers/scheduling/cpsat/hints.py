"""Warm starts of the CP-SAT scheduler.

One job: the hint a solve starts from: the initial one (``options.hint`` or HEFT's,
:func:`initial_hint`), its improvement by the list search on fixed placements
(:func:`list_search_hint`), and writing a complete hint into the model (:func:`add_hint`).
"""
from __future__ import annotations

import logging

from ortools.sat.python import cp_model

from solvers.budget import Budget
from solvers.core import SolveOptions
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.cpsat.variables import SchedulingVars
from solvers.scheduling.heft import HeftScheduler
from solvers.scheduling.listsearch import fixed_placement, list_search
from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, output_buffer_ends, validate_schedule

__all__ = ["initial_hint", "list_search_hint", "add_hint"]

_log = logging.getLogger(__package__)  # the scheduler's logger, as before the split


def initial_hint(problem: SchedulingProblem, options: SolveOptions) -> tuple[SchedulingSolution | None, str]:
    """``options.hint`` when valid, else HEFT's schedule: (hint or None, its source).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> hint, source = initial_hint(p, SolveOptions()); source, hint.makespan_cycles
    ('heft', 7)
    """
    hint = options.hint
    if hint is not None and validate_schedule(problem, hint):
        _log.warning("ignoring an invalid hint")
        hint = None
    if hint is not None:
        return hint, "options"
    # HeftScheduler, not bare HEFT: it falls back to a first-fit placement when memory
    # leaves HEFT stuck, so large memory-tight graphs still get a warm start.
    hint = HeftScheduler().solve(problem, options).solution
    if hint is not None and validate_schedule(problem, hint):  # pragma: no cover
        _log.error("HEFT produced an invalid schedule; solving without a hint")
        hint = None
    return hint, "heft"


def list_search_hint(problem: SchedulingProblem, options: SolveOptions, budget: Budget, cfg: CpSatOptions,
                     hint: SchedulingSolution | None, hint_source: str, bound: int,
                     stats: dict) -> tuple[SchedulingSolution | None, str]:
    """The list search's schedule when the placement is fixed and it beats ``hint``, else
    ``hint``: (hint, its source). Runs only when some device has several streams (unless
    ``cfg.list_search_single_stream``) and the hint is above ``bound``; ``stats`` receives
    its figures.

    Examples
    --------
    >>> p = SchedulingProblem(((2,), (2,), (2,)), (), (2,), ((-1,),), ())
    >>> from solvers.budget import SCHEDULING
    >>> hint, _ = initial_hint(p, SolveOptions()); budget = Budget.of(SolveOptions(), SCHEDULING)
    >>> list_search_hint(p, SolveOptions(), budget, CpSatOptions(), hint, "heft", 4, {})[1]
    'heft'
    """
    hint_obj = objective_value(problem, hint) if hint is not None else None
    settled = hint is not None and hint_obj <= bound
    work = min(cfg.list_search_max_work, int(cfg.list_search_work_per_second * options.time_limit_s))
    fixed = fixed_placement(problem) if work > 0 else None
    if (fixed is not None and not settled
            and (cfg.list_search_single_stream or any(problem.device_streams[d] > 1 for d in set(fixed)))):
        # counted work, never timed: the same op placements on any machine, in either search
        # mode (it is fast); the wall clock only as the net
        found, ls_stats = list_search(problem, work, seed=options.random_seed, target=bound, hint=hint,
                                      deadline_s=budget.wall_deadline)
        budget.note("list_search", 0.0, stopped_by=ls_stats["stopped_by"])
        stats.update({f"list_search_{k}": x for k, x in ls_stats.items()})
        if found is not None and not validate_schedule(problem, found) and (
                hint is None or objective_value(problem, found) < hint_obj):
            hint, hint_source = found, "list search"
            stats.update(hint_source=hint_source, hint_objective=objective_value(problem, hint))
    return hint, hint_source


def add_hint(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
             solution: SchedulingSolution) -> None:
    """Hint every variable from a solution (complete, so fixing to it is feasible).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> from solvers.scheduling.cpsat.model import build
    >>> model, v = build(p, horizon=20)
    >>> add_hint(model, p, v, SchedulingSolution((0, 0), (0, 0), (0, 4), (4, 3), ()))
    >>> model.has_hint() if hasattr(model, "has_hint") else True
    True
    """
    done: set[int] = set()

    def hint(var, value) -> None:  # folded literals share variables: hint each once
        if var is True or var is False or var is None:
            return
        value = int(value)
        if isinstance(var, cp_model.IntVar):
            key = var.index
        else:  # a negated literal
            key, value = var.Not().index, 1 - value
            var = var.Not()
        if key not in done:
            done.add(key)
            model.add_hint(var, value)

    dev = solution.op_device
    end = [solution.op_end(i) for i in range(problem.num_ops)]
    for i in range(problem.num_ops):
        hint(v.start[i], solution.op_start[i])
        hint(v.end[i], end[i])
        for d in v.allowed[i]:
            hint(v.x[i, d], dev[i] == d)
    t_of = {t.edge: t for t in solution.transfers}
    for e, ts in v.ts.items():
        t = t_of.get(e)
        hint(ts, t.start_cycle if t else end[problem.edges[e][0]])
    for (e, a, b), y in v.y.items():
        u, w, _ = problem.edges[e]
        hint(y, dev[u] == a and dev[w] == b)
    for (e, link), zl in v.z.items():
        t = t_of.get(e)
        hint(zl, t is not None and t.link == link)
    for (e, d), rl in v.recv.items():
        u, w, _ = problem.edges[e]
        hint(rl, dev[w] == d and dev[u] != d)
    for (t, d), held in v.held.items():
        hint(held, any(dev[i] == d for i in problem.shared_resident[t][1]))
    if v.bend:
        buf_end = output_buffer_ends(problem, solution)
        for u, var in v.bend.items():
            hint(var, buf_end[u])
    if v.used:
        seen: set[int] = set()
        for i in topological_order(problem):
            seen.add(dev[i])
            for devs in v.sym_classes:
                for d in devs:
                    if (i, d) in v.used:
                        hint(v.used[i, d], d in seen)
    hint(v.objective, objective_value(problem, solution))
