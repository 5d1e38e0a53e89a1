"""The stage types: what flows from one planner stage to the next.

Every stage returns a new frozen value; nothing is filled in place::

    Spec ──reduce──▶ Problem ──solve, invert──▶ Solved ──memory (chained)──▶ MemoryPlanned
                                                  │                              │
                                                  └──────lower, replay, verify───┴──▶ Lowered ──▶ Outcome

:class:`RunSettings` carries the solver settings of one run (the spec's, overridden by the
caller). :class:`Problem` is a reduction's output: the solver's problem and the inverse data
that maps its solution back. :class:`Solved` is the plan in the user's names with the
solver results behind it. :class:`MemoryPlanned` is the memory-planning reduction chained
after scheduling (which plan was kept, and the others' replayed figures). :class:`Lowered`
holds the binaries and their verified replay. :class:`Outcome` is what
:func:`planner.pipeline.run` returns for a model spec and :mod:`planner.output` writes (a fleet
spec's route returns a :class:`planner.fleet.FleetResult` instead).

Examples
--------
>>> settings = RunSettings(time_limit_s=5.0, workers=1, seed=0, search="deterministic")
>>> settings.solve_options().num_workers
1
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from planner.plan import Plan
from planner.spec import Spec
from solvers.core import ProgressPoint, SolveOptions, SolveResult

__all__ = ["RunSettings", "Problem", "Solved", "Lowered", "MemoryPlanned", "Outcome"]


@dataclass(frozen=True)
class RunSettings:
    """The solver settings of one run: the spec's ``solver:`` block, overridden by the caller,
    and the moment the run started.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> spec = load_spec("specs/taskgraph.yaml")
    >>> RunSettings.of(spec, workers=1).workers, RunSettings.of(spec).seed == spec.seed
    (1, True)
    """

    time_limit_s: float
    workers: int
    seed: int
    search: str
    progress: Callable[[ProgressPoint], None] | None = None
    solver_log: Callable[[str], None] | None = None
    # When the run started (time.perf_counter): progress points are timed from it.
    started_s: float = field(default_factory=time.perf_counter, compare=False)

    @classmethod
    def of(cls, spec: Any, time_limit_s: float | None = None, workers: int | None = None,
           seed: int | None = None, search: str | None = None,
           progress: Callable[[ProgressPoint], None] | None = None,
           solver_log: Callable[[str], None] | None = None) -> "RunSettings":
        """The spec's settings (a :class:`~planner.spec.Spec` or a fleet spec), each overridden unless None."""
        return cls(spec.time_limit_s if time_limit_s is None else time_limit_s,
                   spec.workers if workers is None else workers,
                   spec.seed if seed is None else seed,
                   spec.search if search is None else search, progress, solver_log)

    def solve_options(self, **overrides: Any) -> SolveOptions:
        """These settings as :class:`~solvers.core.SolveOptions` (``overrides`` replace fields)."""
        fields = dict(time_limit_s=self.time_limit_s, num_workers=self.workers, random_seed=self.seed,
                      progress=self.progress, log=self.solver_log, search=self.search)
        return SolveOptions(**{**fields, **overrides})


@dataclass(frozen=True)
class Problem:
    """A reduction's output: the solver's problem and what maps its solution back (``inverse``)."""

    spec: Spec
    settings: RunSettings
    solver_problem: Any
    inverse: Any


@dataclass(frozen=True)
class Solved:
    """A solved plan in the user's names, with the results behind it.

    ``problem`` and ``reduction`` are the scheduling problem the plan's ops and transfers
    solve and its inverse (for max-load: the single-sample schedule of the placement);
    ``result`` is the solver result the plan's objective, status and bound come from;
    ``heuristic`` the baseline it was warm-started from. ``details`` holds what one
    objective adds (for max-load a :class:`planner.max_load.MaxLoadDetails`).
    ``post_solve_reserve_s`` is the part of the time limit the solve left to the stages
    after it (:func:`planner.stage_timing.post_solve_reserve_s`); a chained solve (memory
    planning) gets the same share of the limit as this one.
    """

    plan: Plan
    problem: Any
    reduction: Any
    result: SolveResult
    heuristic: SolveResult
    details: Any = None
    post_solve_reserve_s: float = 0.0


@dataclass(frozen=True)
class Lowered:
    """A plan's per-device programs, their binaries, and the simulator's replay of them
    (which agreed with the plan exactly)."""

    programs: Mapping[str, Any]
    binaries: Mapping[str, bytes]
    simulation: Any


@dataclass(frozen=True)
class MemoryPlanned:
    """Memory planning chained after scheduling: the fastest replayed plan and its evidence.

    ``plan`` is the chosen plan with the memory-planned status, objective and bound;
    ``choice`` its name (``"memory plan"``, ``"greedy prefetch + greedy-by-size"`` or
    ``"all in main memory"``); ``memory`` the :class:`planner.memory.MemoryOutcome`;
    ``memory_plan`` the chosen :class:`~planner.memory.plan.MemoryPlan` (None: everything in
    main memory); ``baselines`` and ``peaks`` every candidate's replayed makespan and peak
    bytes by name; ``lowered`` the chosen plan's replay, reused when lowering.
    """

    plan: Plan
    choice: str
    memory: Any
    memory_plan: Any
    baselines: Mapping[str, int]
    peaks: Mapping[str, Any]
    lowered: Lowered


@dataclass(frozen=True)
class Outcome:
    """Everything one planning run produced; ``plan`` is what the API returns.

    The fields are the stages' results side by side, as :mod:`planner.output` and the
    benchmarks read them: the :class:`Solved` stage (``problem``, ``reduction``, ``result``,
    ``heuristic``), the :class:`Lowered` stage (``programs``, ``binaries``, ``simulation``,
    and the ``listings`` and ``allocation`` written beside them), and with memory planning
    the :class:`MemoryPlanned` stage (``memory``, ``memory_choice``, ``memory_plan``,
    ``memory_baselines``, ``memory_peaks``); last what the objective's route adds for the
    report (``baselines``, ``extra_baselines``); report.md's route sections are drawn from the
    plan's ``solver`` records (:func:`planner.output.plan_route_sections`).
    """

    plan: Plan
    problem: Any
    reduction: Any
    result: SolveResult
    heuristic: SolveResult
    programs: Mapping[str, Any] = field(default_factory=dict)
    binaries: Mapping[str, bytes] = field(default_factory=dict)
    listings: Mapping[str, str] = field(default_factory=dict)
    allocation: Mapping[str, Any] = field(default_factory=dict)
    simulation: Any = None
    memory: Any = None
    memory_baselines: Mapping[str, int] = field(default_factory=dict)
    memory_choice: str = ""
    memory_plan: Any = None
    memory_peaks: Mapping[str, Any] = field(default_factory=dict)
    # What an objective adds for the report (planner.max_load): the other plans' objectives by
    # name and their baseline rows.
    baselines: Mapping[str, Any] = field(default_factory=dict)
    extra_baselines: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of(cls, solved: Solved, memory: MemoryPlanned | None, lowered: Lowered, *, plan: Plan,
           listings: Mapping[str, str], allocation: Mapping[str, Any], **extra: Any) -> "Outcome":
        """The outcome of the stages' results; ``plan`` is the final plan (wall time set)."""
        chained = {} if memory is None else dict(
            memory=memory.memory, memory_baselines=memory.baselines, memory_choice=memory.choice,
            memory_plan=memory.memory_plan, memory_peaks=memory.peaks)
        return cls(plan, solved.problem, solved.reduction, solved.result, solved.heuristic,
                   programs=lowered.programs, binaries=lowered.binaries, listings=listings,
                   allocation=allocation, simulation=lowered.simulation, **chained, **extra)
