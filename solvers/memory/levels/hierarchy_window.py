"""Window search over N levels (issue 14): exact CP-SAT models of consecutive ops around an incumbent.

Above :class:`~solvers.memory.levels.hierarchy_cpsat.CpSatHierarchySolver`'s ``max_model_ops``
one model of the whole problem does not scale (a 666-op chain ran minutes without improving
its hint). Instead, as the two-level solver does, windows of ``window_ops`` consecutive ops
are re-optimised exactly around the incumbent
(:func:`~solvers.memory.levels.hierarchy_model.build_hierarchy_model` with ``fixed`` and
``free_ops``): the accesses of the window's ops and the gaps next to them are free, every
other decision is the incumbent's, ops before the window keep their times and ops after it
shift rigidly, so each window's solutions are valid plans, never longer than the incumbent
(each is re-timed by the replay and checked by the validator, and kept only when shorter).
Windows overlap by half and sweep left to right (those without slack last,
:func:`window_order`); a sweep without improvement doubles the window (up to
``max_window_ops``); the search stops when the largest finds nothing, the incumbent meets
the lower bound, or the budget is spent. Budgets are deterministic (CP-SAT deterministic
time per window, charged to the caller's :class:`~solvers.budget.Budget`). A window proves
nothing about the problem: the bound stays the caller's.

Measured on the 666-op chain (``benchmarks/memory_levels.py``), from one start and 1.5
deterministic units: 24-op windows at 0.25 units each gave the most (14,858,314 ->
14,577,665); 12 or 8 ops at 0.1 or 0.05, 32 or 48 ops at 0.5, or a 16-op margin, less.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Callable

from ortools.sat.python import cp_model

from solvers.budget import Budget
from solvers.core import SolveOptions
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.hierarchy_bounds import op_cycle_lower_bounds
from solvers.memory.levels.hierarchy_model import build_hierarchy_model
from solvers.memory.levels.hierarchy_greedy import retime_hierarchy
from solvers.memory.levels.hierarchy_validate import validate_hierarchy

__all__ = ["WindowSettings", "WindowGoal", "makespan_goal", "improve_window", "window_order", "window_search"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowSettings:
    """Window sizes (ops), the margin a re-decided move may reach beyond its window (ops), and
    each window solve's deterministic time.

    Examples
    --------
    >>> WindowSettings().window_ops
    24
    """

    window_ops: int = 24
    max_window_ops: int = 48
    margin_ops: int = 8
    window_dtime: float = 0.25


@dataclass(frozen=True)
class WindowGoal:
    """What the windows minimise, over timed valid plans: ``value`` of a plan; ``objective``
    adds its constraints to a window model and returns the expression to minimise (None: the
    model's makespan); ``retime`` times a model's decisions (ValueError: they do not replay);
    ``validate`` lists what a timed plan breaks; ``link_holds`` (shared bandwidth: the device's
    link transfer ends, :mod:`~solvers.memory.levels.hierarchy_link_holds`) join every window
    model, their starts free and ranked by the model's in the re-timing. :func:`makespan_goal`
    is the default; :mod:`~solvers.memory.levels.hierarchy_heads_tails` minimises its objective
    under heads and tails (and its holds)."""

    value: Callable[[HierarchySolution], int]
    retime: Callable[[HierarchySolution], HierarchySolution]
    validate: Callable[[HierarchySolution], list]
    objective: Callable[[Any, Any, int], Any] | None = None  # (model, vars, incumbent's value) -> expression
    link_holds: tuple = ()


def makespan_goal(problem: HierarchyProblem) -> WindowGoal:
    """The makespan, as :func:`~solvers.memory.levels.hierarchy_greedy.retime_hierarchy` times a plan."""
    return WindowGoal(lambda s: s.makespan_cycles, lambda s: retime_hierarchy(problem, s),
                      lambda s: validate_hierarchy(problem, s))


def improve_window(problem: HierarchyProblem, best: HierarchySolution, free_ops: range, budget: Budget,
                   options: SolveOptions, settings: WindowSettings = WindowSettings(),
                   goal: WindowGoal | None = None) -> HierarchySolution | None:
    """One window's exact re-optimisation around ``best``: a valid plan strictly better by
    ``goal`` (default: shorter), or None.

    Examples
    --------
    Op 1 reads its weight at home in ``best`` (4 cycles in all); its window fetches it under
    op 0 instead (3):

    >>> from solvers.budget import MEMORY_LEVELS
    >>> q = HierarchyProblem((2, 1), ((), (0,)), ((), ()), (8,), (16, 64), (8, 4), 1, ((0, 1),))
    >>> home = HierarchySolution(((1, 1),), ((False, False),), (), (0, 2), (2, 2))
    >>> b = Budget.start(5.0, MEMORY_LEVELS)
    >>> improve_window(q, home, range(1, 2), b, SolveOptions(num_workers=1)).makespan_cycles
    3
    """
    goal = goal or makespan_goal(problem)
    model, v = build_hierarchy_model(problem, best.makespan_cycles, best, fixed=best, free_ops=free_ops,
                                     margin=settings.margin_ops, link_holds=goal.link_holds,
                                     hold_horizon=goal.value(best))
    for var, value in zip(getattr(v, "hold_start", ()), best.link_starts):  # the free holds where best has them
        if isinstance(var, cp_model.IntVar):
            model.add_hint(var, value)
    if goal.objective is not None:
        model.minimize(goal.objective(model, v, goal.value(best)))
    limit = min(budget.scale(settings.window_dtime), budget.left)
    status, solver, _ = budget.run_cpsat(model, replace(options, num_workers=1, progress=None, log=None), limit, None,
                                         interleave=False, cp_model_probing_level=0)
    if not status.has_solution:
        return None
    extracted = v.extract(solver)
    if goal.link_holds:  # the holds' places rank them in the re-timing
        extracted = replace(extracted, link_starts=tuple(x if isinstance(x, int) else solver.value(x)
                                                         for x in v.hold_start))
    try:
        found = goal.retime(extracted)
    except ValueError:  # the DMA queue order deadlocks: cannot happen for a model solution
        _LOG.warning("window %s: the model's solution does not replay", free_ops)
        return None
    if goal.value(found) >= goal.value(best) or goal.validate(found):
        return None
    return found


def window_order(problem: HierarchyProblem, best: HierarchySolution, size: int, stride: int) -> list[int]:
    """The first ops of one sweep's windows (every ``stride`` ops, ``size`` long), left to right,
    those without slack last: an op's slack is its duration above its lower bound and its idle
    time before it, and a window whose ops all run back to back at their bounds cannot end
    earlier. (Most slack first was measured worse on the 666-op chain: those windows are the
    hard ones, and each took its whole deterministic time.)

    Examples
    --------
    Op 1 waits 6 cycles before it starts (a fetch): the window holding it goes first.

    >>> p = HierarchyProblem((2, 2, 2), ((), (), ()), ((), (), ()), (), (16, 64), (8, 4), 1, ((0, 1),))
    >>> window_order(p, HierarchySolution((), (), (), (0, 8, 10), (2, 2, 2)), 1, 1)
    [1, 0]
    """
    n = problem.num_ops
    floor = op_cycle_lower_bounds(problem)
    slack = [best.op_duration[i] - floor[i] + best.op_start[i] - (best.op_start[i - 1] + best.op_duration[i - 1]
                                                                 if i else 0) for i in range(n)]
    starts = range(0, max(1, n - stride), stride)
    return sorted(starts, key=lambda a: (sum(slack[a:a + size]) == 0, a))


def window_search(problem: HierarchyProblem, best: HierarchySolution, budget: Budget, options: SolveOptions,
                  lower_bound: int = 0, settings: WindowSettings = WindowSettings(), goal: WindowGoal | None = None
                  ) -> tuple[HierarchySolution, dict]:
    """Sweep windows over ``best`` until nothing improves, ``lower_bound`` is met or ``budget`` is
    spent, minimising ``goal`` (default: the makespan).

    Returns the best plan (never worse than ``best`` by ``goal``) and what the search did
    (``windows``, ``windows_improved``, ``window_ops``, ``dtime``, ``stopped_by``).
    """
    goal = goal or makespan_goal(problem)
    n = problem.num_ops
    size = min(settings.window_ops, n)
    solved = improved = 0
    start = budget.used
    stopped = "converged"
    while True:
        stride = max(1, size // 2)
        sweep_improved = False
        for a in window_order(problem, best, size, stride):
            if budget.left <= 0:
                stopped = "deterministic_budget"
                break
            if budget.wall_expired():
                stopped = "wall_time"
                break
            found = improve_window(problem, best, range(a, min(n, a + size)), budget, options, settings, goal)
            solved += 1
            if found is not None:
                best, improved, sweep_improved = found, improved + 1, True
            if goal.value(best) <= lower_bound:
                stopped = "optimal"
                break
        else:
            if sweep_improved:
                continue
            if size < min(n, settings.max_window_ops):
                size = min(n, 2 * size, settings.max_window_ops)
                continue
        break
    info = {"windows": solved, "windows_improved": improved, "window_ops": size,
            "dtime": round(budget.used - start, 4), "stopped_by": stopped}
    budget.note("window_search", 0.0, stopped_by=stopped)
    return best, info
