"""Best of a heuristic and an exact solver, as one solver (SAGA's "hybrid" scheduler).

:class:`Portfolio` runs the heuristic, warm-starts the exact solver from the heuristic's
solution (``SolveOptions.hint``), and returns the better of the two: never worse than the
heuristic, with the best proven bound of either, OPTIMAL only when that bound meets the
objective. It is itself a solver, so anything that takes a solver takes a portfolio.

Examples
--------
>>> from solvers.scheduling import CpSatScheduler, HeftScheduler, SchedulingProblem
>>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
>>> r = Portfolio(HeftScheduler(), CpSatScheduler()).solve(p, SolveOptions(time_limit_s=2))
>>> r.status.value, r.objective, r.bound, r.stats["portfolio"]["heuristic_objective"]
('OPTIMAL', 7, 7, 7)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from solvers.core import Accepting, ProgressPoint, SolveOptions, SolveResult, Solver, Status, failure_result

__all__ = ["Portfolio", "PortfolioRun", "best_of"]


class PortfolioRun(NamedTuple):
    """What :meth:`Portfolio.run` saw: the combined result and each solver's own (None when
    the solver refused the problem). A start's result, when the portfolio has one, is in
    ``best.stats["portfolio"]`` (``start``, ``start_status``, ``start_objective``)."""

    best: SolveResult[Any]
    heuristic: SolveResult[Any] | None
    exact: SolveResult[Any] | None

    def best_with_exact_stop(self) -> SolveResult[Any]:
        """``best`` with the exact solver's ``stats["stopped_by"]`` even when the heuristic's
        solution won, so a caller reports how the search ended (its budget, a proof), not the
        heuristic's "finished"."""
        if self.exact is None or "stopped_by" not in self.exact.stats:
            return self.best
        return replace(self.best, stats={**self.best.stats, "stopped_by": self.exact.stats["stopped_by"]})


def _meets(objective: float, bound: float | None) -> bool:
    return bound is not None and (bound >= objective or math.isclose(bound, objective, rel_tol=1e-9))


def best_of(heuristic: SolveResult[Any] | None, exact: SolveResult[Any] | None,
            wall_time_s: float | None = None) -> SolveResult[Any]:
    """The better of two results of one minimization problem, with honest status and bound.

    The solution with the lower objective wins (the exact one on a tie: it usually carries
    the proof). The bound is the larger of the two proven bounds; the status is OPTIMAL
    exactly when that bound meets the winning objective, else FEASIBLE. Without any
    solution: INFEASIBLE if the exact solver proved it, else the exact solver's status (the
    heuristic's when the exact one did not run). The winner's ``solver_name`` is kept (the
    solution is its), and ``stats["portfolio"]`` records both runs.

    Examples
    --------
    >>> h = SolveResult(Status.FEASIBLE, 9, None, "h", 0.1, "heft")
    >>> e = SolveResult(Status.FEASIBLE, 10, 9, "e", 1.0, "cpsat")
    >>> r = best_of(h, e)
    >>> r.status.value, r.objective, r.bound, r.solution, r.solver_name
    ('OPTIMAL', 9, 9, 'h', 'heft')
    >>> best_of(h, failure_result(Status.UNKNOWN, "cpsat", 1.0, bound=7)).bound
    7
    """
    runs = [r for r in (heuristic, exact) if r is not None]
    if not runs:
        raise ValueError("best_of needs at least one result")
    wall = sum(r.wall_time_s for r in runs) if wall_time_s is None else wall_time_s
    bounds = [r.bound for r in runs if r.bound is not None]
    bound = max(bounds) if bounds else None
    stats = _summary(heuristic, exact)
    solved = [r for r in (exact, heuristic) if r is not None and r.status.has_solution]
    if not solved:
        status = (Status.INFEASIBLE if any(r.status is Status.INFEASIBLE for r in runs)
                  else (exact or heuristic).status)
        return failure_result(status, (exact or heuristic).solver_name, wall, bound,
                              **{**(exact or heuristic).stats, **stats})
    winner = min(solved, key=lambda r: r.objective)  # min keeps the first (exact) on a tie
    if bound is not None and bound > winner.objective and not math.isclose(bound, winner.objective):
        raise ValueError(f"a proven bound {bound} above a found objective {winner.objective}: a solver is wrong")
    status = Status.OPTIMAL if _meets(winner.objective, bound) else Status.FEASIBLE
    if status is Status.OPTIMAL:
        bound = winner.objective
    progress = (heuristic.progress if heuristic is not None else ()) + (exact.progress if exact is not None else ())
    return SolveResult(status, winner.objective, bound, winner.solution, wall, winner.solver_name,
                       {**winner.stats, **stats}, progress)


def _better_start(start: SolveResult[Any] | None, heuristic: SolveResult[Any] | None) -> SolveResult[Any] | None:
    """The better of a start's and a heuristic's results (the start on a tie), None when neither ran."""
    solved = [r for r in (start, heuristic) if r is not None and r.status.has_solution]
    if solved:
        return min(solved, key=lambda r: r.objective)
    return start if start is not None else heuristic


def _summary(heuristic: SolveResult[Any] | None, exact: SolveResult[Any] | None) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    for role, r in (("heuristic", heuristic), ("exact", exact)):
        facts[role] = None if r is None else r.solver_name
        facts[f"{role}_status"] = None if r is None else r.status.value
        facts[f"{role}_objective"] = None if r is None else r.objective
    return {"portfolio": facts}


@dataclass(frozen=True)
class Portfolio(Accepting):
    """A heuristic, then an exact solver warm-started from it; the better result of the two.

    The two run one after the other with the same options (heuristics take a small part of
    the time limit; the exact solver's budget is its own). A solver that refuses the
    problem (``accepts``) is skipped; the portfolio accepts what either accepts. The
    heuristic's solution is the first point ``options.progress`` sees (``source``
    ``"heuristic"``), as soon as the heuristic finishes.

    Parameters
    ----------
    heuristic, exact : Solver
        Two solvers of the same problem type. The exact one receives the heuristic's
        solution as ``options.hint`` (the caller's hint when the heuristic found none).
    start : Solver, optional
        A third candidate of the same type, e.g. a warm start from a previous solution. It
        runs first, then the heuristic; the exact solver is hinted from the better of the two
        (the start on a tie: it is what the caller asked to keep), and the result is the best
        of the three, so never worse than the start or the heuristic. Its ``solver_name``
        names the winner's source.

    Examples
    --------
    >>> from solvers.placement import CpSatPlacementSolver, GreedyPlacementSolver, PlacementProblem
    >>> p = PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (1, 1, 1, 0), ((0, 1), (1, 2), (2, 3)), 2, 0)
    >>> both = Portfolio(GreedyPlacementSolver(), CpSatPlacementSolver())
    >>> both.name, both.problem_type.__name__
    ('greedy+cpsat-placement', 'PlacementProblem')
    >>> run = both.run(p, SolveOptions(time_limit_s=2))
    >>> run.heuristic.objective, run.best.objective, run.best.status.value
    (7, 7, 'OPTIMAL')
    """

    heuristic: Solver
    exact: Solver
    start: Solver | None = None

    @property
    def name(self) -> str:
        return "+".join(s.name for s in (self.start, self.heuristic, self.exact) if s is not None)

    @property
    def problem_type(self) -> type:  # type: ignore[override]
        return self.exact.problem_type

    def refusal(self, problem: Any) -> str | None:
        """None when either solver accepts ``problem``, else both reasons."""
        reasons = [s.refusal(problem) for s in (self.heuristic, self.exact)]
        return None if None in reasons else "; ".join(reasons)

    def run(self, problem: Any, options: SolveOptions = SolveOptions()) -> PortfolioRun:
        """Both solves and the combined result (for callers that report the heuristic too).

        Raises
        ------
        ValueError
            Neither solver accepts ``problem`` (ask :meth:`accepts` first).
        """
        t0 = time.perf_counter()
        start = self.start.solve(problem, options) if self.start is not None and self.start.accepts(problem) else None
        heuristic = self.heuristic.solve(problem, options) if self.heuristic.accepts(problem) else None
        first = _better_start(start, heuristic)
        if first is not None and first.status.has_solution and options.progress is not None:
            # the heuristic's point first, so a live view shows it during the exact solve
            options.progress(ProgressPoint(time.perf_counter() - t0, first.objective, first.bound, "heuristic"))
        exact = None
        if self.exact.accepts(problem):
            hint = first.solution if first is not None and first.status.has_solution else options.hint
            exact = self.exact.solve(problem, replace(options, hint=hint))
        if first is None and exact is None:
            raise ValueError(f"{self.name} cannot take this problem: {self.refusal(problem)}")
        best = best_of(first, exact, time.perf_counter() - t0)
        if start is not None and heuristic is not None:  # both candidates' objectives on record (the
            # "heuristic" role above is the better of the two)
            best = replace(best, stats={**best.stats, "portfolio": {
                **best.stats["portfolio"], "start": start.solver_name, "start_status": start.status.value,
                "start_objective": start.objective, "plain_heuristic": heuristic.solver_name,
                "plain_heuristic_objective": heuristic.objective if heuristic.status.has_solution else None}})
        return PortfolioRun(best, heuristic, exact)

    def solve(self, problem: Any, options: SolveOptions = SolveOptions()) -> SolveResult[Any]:
        """The better of the two results (see :func:`best_of`)."""
        return self.run(problem, options).best
