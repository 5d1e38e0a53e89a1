"""The interface every formulation and baseline shares.

A solver takes a frozen problem dataclass and a :class:`SolveOptions`, and returns a
:class:`SolveResult`: status, objective, proven bound, gap, solution and wall time.
Exact solvers (CP-SAT, MILP) and heuristics (HEFT, greedy, first-fit) have the same
shape, so any two can be compared in one table.

Solvers never raise for an infeasible or timed-out run; they return a status.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Generic, Protocol, TypeVar

__all__ = [
    "Status",
    "SolveOptions",
    "SolveResult",
    "Solver",
    "ProgressPoint",
    "failure_result",
    "relative_gap",
    "Accepting",
]

P = TypeVar("P")
S = TypeVar("S")


class Status(enum.Enum):
    """Outcome of a solve, independent of the backend.

    Examples
    --------
    >>> Status.OPTIMAL.has_solution
    True
    >>> Status.INFEASIBLE.has_solution
    False
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    INFEASIBLE = "INFEASIBLE"
    UNKNOWN = "UNKNOWN"
    MODEL_INVALID = "MODEL_INVALID"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass(frozen=True, slots=True)
class ProgressPoint:
    """One improvement seen during a solve (recorded by callbacks, never printed there).

    ``source`` says who found it: ``"search"`` (the solver's own search) or ``"heuristic"``
    (a :class:`~solvers.portfolio.Portfolio`'s heuristic, reported before the exact solve).

    Examples
    --------
    >>> ProgressPoint(0.5, 120, 100).source, ProgressPoint(0.1, 130, None, "heuristic").source
    ('search', 'heuristic')
    """

    wall_time_s: float
    objective: float
    bound: float | None
    source: str = "search"


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """Tunables shared by every solver. Every field has a default.

    Examples
    --------
    >>> SolveOptions().num_workers
    1
    >>> SolveOptions(time_limit_s=0)
    Traceback (most recent call last):
    ...
    ValueError: time_limit_s must be > 0, got 0
    """

    # The solve's time limit, hint included: calibrated into a deterministic budget by default
    # (see ``search``).
    time_limit_s: float = 10.0
    # CP-SAT search workers; 1 gives a deterministic single-strategy search.
    num_workers: int = 1
    # Seed for every randomized choice, so runs repeat.
    random_seed: int = 0
    # A solution of the same problem type to warm-start from (e.g. the heuristic's).
    hint: Any = None
    # Called with each improving (time, objective, bound); must be cheap.
    progress: Callable[[ProgressPoint], None] | None = None
    # Receives solver log lines when set (the backend's search log is enabled).
    log: Callable[[str], None] | None = None
    # "deterministic": the time limit becomes a fixed budget of deterministic work (see
    # solvers.budget), the wall clock only a safety net, so runs repeat byte for byte;
    # "until-limit": search until the wall clock (uses the whole limit, never reproducible).
    search: str = "deterministic"

    def __post_init__(self) -> None:
        if not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be > 0, got {self.time_limit_s}")
        if self.num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {self.num_workers}")
        if self.search not in ("deterministic", "until-limit"):
            raise ValueError(f"search must be 'deterministic' or 'until-limit', got {self.search!r}")


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``|objective - bound| / max(1, |objective|)``, or None when either is unknown.

    Examples
    --------
    >>> relative_gap(110, 100)
    0.09090909090909091
    >>> relative_gap(100, None) is None
    True
    """
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(1.0, abs(objective))


@dataclass(frozen=True, slots=True)
class SolveResult(Generic[S]):
    """What every solver returns.

    ``bound`` is a proven bound on the optimum (a lower bound when minimizing), or None
    when the solver proves nothing (heuristics). ``gap`` is computed, never stored.

    Examples
    --------
    >>> r = SolveResult(Status.FEASIBLE, 110, 100, solution="s", wall_time_s=0.1, solver_name="x")
    >>> round(r.gap, 4)
    0.0909
    >>> SolveResult(Status.FEASIBLE, 1, 0, solution=None, wall_time_s=0, solver_name="x")
    Traceback (most recent call last):
    ...
    ValueError: status FEASIBLE requires a solution
    """

    status: Status
    objective: float | None
    bound: float | None
    solution: S | None
    wall_time_s: float
    solver_name: str
    stats: dict[str, Any] = field(default_factory=dict)
    progress: tuple[ProgressPoint, ...] = ()

    def __post_init__(self) -> None:
        if self.status.has_solution and self.solution is None:
            raise ValueError(f"status {self.status.value} requires a solution")
        if not self.status.has_solution and self.solution is not None:
            raise ValueError(f"status {self.status.value} must not carry a solution")
        if self.status is Status.OPTIMAL and self.bound is not None and self.objective is not None:
            if not math.isclose(self.objective, self.bound, rel_tol=1e-6, abs_tol=1e-6):
                raise ValueError(f"OPTIMAL but objective {self.objective} != bound {self.bound}")

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


def failure_result(status: Status, solver_name: str, wall_time_s: float = 0.0,
                   bound: float | None = None, **stats: Any) -> SolveResult[Any]:
    """A result without a solution (infeasible, unknown, invalid model).

    Examples
    --------
    >>> failure_result(Status.INFEASIBLE, "cpsat").solution is None
    True
    """
    return SolveResult(status, None, bound, None, wall_time_s, solver_name, dict(stats))


class Solver(Protocol[P, S]):
    """One interface, many solvers (exact or heuristic).

    ``accepts(problem)`` says, before any search, whether ``solve`` can take the problem at
    all (its type and shape; not whether it is feasible), and ``refusal(problem)`` says why
    not, so a caller never learns it from an UNKNOWN result (see :class:`Accepting`).
    """

    name: str

    def solve(self, problem: P, options: SolveOptions = ...) -> SolveResult[S]:
        ...

    def accepts(self, problem: Any) -> bool:
        ...

    def refusal(self, problem: Any) -> str | None:
        ...


class Accepting:
    """The shared ``accepts`` / ``refusal`` of every solver: any instance of ``problem_type``.

    A solver that takes only part of its problem type overrides :meth:`refusal` (calling
    this one first) and returns a sentence naming what it cannot take.

    Examples
    --------
    >>> class Halver(Accepting):
    ...     name, problem_type = "halver", int
    ...     def refusal(self, problem):
    ...         return Accepting.refusal(self, problem) or (None if problem % 2 == 0 else "odd")
    >>> Halver().accepts(4), Halver().refusal(3), Halver().refusal("x")
    (True, 'odd', 'halver takes a int, not a str')
    """

    __slots__ = ()
    # The problem dataclass the solver's ``solve`` takes.
    problem_type: ClassVar[type] = object

    def refusal(self, problem: Any) -> str | None:
        """None when ``solve`` can take ``problem``, else why it cannot."""
        if not isinstance(problem, self.problem_type):
            return f"{self.name} takes a {self.problem_type.__name__}, not a {type(problem).__name__}"
        return None

    def accepts(self, problem: Any) -> bool:
        """Whether ``solve`` can take ``problem`` (:meth:`refusal` is None)."""
        return self.refusal(problem) is None
