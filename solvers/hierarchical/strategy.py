"""The default scheduler: flat CP-SAT on small graphs, hierarchical placement + LNS on large ones.

Notes
-----
Every path starts from the warm start (``options.hint``, else HEFT; on LATENCY problems with
a memory limit, the contiguous split of :mod:`~solvers.scheduling.contiguous` instead when it is
better, ``stats["warm_start"]`` says which) and returns the best schedule it saw, so the result
is never worse than HEFT or that split.

* **flat** (``num_ops <= flat_max_ops`` under ``auto``): LNS
  (:class:`~solvers.hierarchical.lns.LnsScheduler`, LATENCY, graphs of at least
  ``flat_lns_min_ops`` ops where HEFT is not already at the lower bound) for
  ``flat_lns_share`` of the time limit, then :class:`~solvers.scheduling.cpsat.CpSatScheduler` for the rest,
  warm-started from LNS's schedule: CP-SAT proves the bound (lower bound, segment proofs,
  its own search) and is never worse than its hint.
* **hierarchical**: on LATENCY graphs with cut ops (up to ``segment_max_ops`` ops, when the
  glue's predicted work fits ``segment_share`` of the limit), first a schedule glued from
  per-window CP-SAT solutions (:func:`~solvers.scheduling.cpsat.segment_schedule` with
  ``reuse``: each distinct window of a graph of repeated blocks solved once, one worker) for
  ``segment_share`` of the limit (raised to ``segment_min_units`` of its own deterministic budget,
  :data:`~solvers.hierarchical.budget.GLUE_WINDOWS`, up to ``segment_max_share``, or up to that
  plus ``placer_share`` with the placer skipped when only then the unit fits), taken from
  LNS's, replaces the warm start when shorter
  (branchy-10k at 120 s: 4,743,533 HEFT, 3,737,290 glued against a bound of 3,736,793); then
  the bound (below, ``bound_share``; ``bound_first``); then
  :class:`~solvers.hierarchical.placer.HierarchicalScheduler` (group,
  place the groups with CP-SAT, uncoarsen) for ``placer_share`` of the limit; the better of
  its schedule and the start warm-starts LNS for the rest of ``lns_share``. A proven bound the
  incumbent meets proves it optimal, so the placer and LNS are then skipped
  (``stats["strategy_stages"]`` says "the incumbent meets the proven bound") and LNS stops the
  moment it meets the bound (``LnsOptions.stop_at_objective``): decisions on proven values
  only, never the clock. On all four scale graphs at 120 s the glue met the bound and the
  placer and LNS had searched their shares for nothing (transformer-10k 136.4 s idle with
  the bound last). The bound is the best of
  :func:`~solvers.hierarchical.quick_bound.quick_lower_bound` and, up to ``segment_max_ops``
  ops, :func:`~solvers.scheduling.bounds.lower_bound` without the LP relaxation (placement
  and memory paths, the segment chain and segment runs), raised by CP-SAT proofs on repeated segments
  (:func:`~solvers.scheduling.cpsat.segment_lower_bound`) up to ``segment_proof_max_ops``
  ops with ``bound_share`` of the limit (less the segment floors' predicted cost,
  :func:`~solvers.hierarchical.budget.floor_units`; skipped when that is all of it).

Work no solver counts is predicted from the problem's size and capped or charged
(:mod:`solvers.hierarchical.budget`): the contiguous split runs only when its predicted cost
fits :data:`~solvers.hierarchical.budget.CONTIGUOUS_SHARE` of the limit, the static bounds
only within :data:`~solvers.hierarchical.budget.STATIC_BOUND_SHARE`, the placer only when its
grouping and uncoarsening fit its own share (``placer_share``; else LNS gets that share too),
and on the hierarchical path these predicted costs and HEFT's warm start (which always runs:
here, or as the planner's heuristic just before) come off the limit the placer and LNS share
(``stats["strategy_stages"]["charged"]``). The flat path (up to ``flat_max_ops`` ops under
``auto``) charges none of them: HEFT and the static bounds cost under 0.1 s there.

Each stage's time is a fixed share of the limit (never what an earlier stage left on the
wall clock), so under the default ``search: deterministic`` stages get the same deterministic
budgets (:mod:`solvers.budget`) on every run. Under ``search: until-limit`` a stage gets its
share of what is left of the wall clock, the last one all of it, so the run uses the whole
limit. ``stats["stopped_by"]`` is the most serious of the stages' stops
(:func:`solvers.budget.combine_stops`); ``stats["strategy_stages"]`` has each stage's figures.

The threshold ``flat_max_ops`` is measured (``benchmarks/placement.py``, the crossover
table): below it the flat model places ops itself; above it the flat model only
re-sequences HEFT's placement (``CpSatOptions.max_full_ops``) and the hierarchical path
wins.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from solvers.budget import SCHEDULING, UNTIL_LIMIT, Budget, combine_stops
from solvers.core import Accepting, SolveOptions, SolveResult, Status
from solvers.hierarchical.budget import (GLUE_WINDOWS, contiguous_cost_s, floor_units, grouping_cost_s,
                                         heft_cost_s, segment_glue_cost_s, static_bound_cost_s)
from solvers.hierarchical.lns import LnsOptions, LnsScheduler
from solvers.hierarchical.placer import HierarchicalOptions, HierarchicalScheduler
from solvers.hierarchical.quick_bound import quick_lower_bound
from solvers.hierarchical.state import warm_start
from solvers.scheduling.bounds import lower_bound
from solvers.scheduling.contiguous import contiguous_schedule
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.cpsat.scheduler import CpSatScheduler
from solvers.scheduling.cpsat.segments import segment_lower_bound, segment_schedule
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import objective_value

__all__ = ["STRATEGIES", "StrategyOptions", "StrategyScheduler", "choose_strategy"]

#: The strategies a spec may ask for.
#:
#: >>> STRATEGIES
#: ('auto', 'flat', 'hierarchical')
STRATEGIES = ("auto", "flat", "hierarchical")


@dataclass(frozen=True, slots=True)
class StrategyOptions:
    """Tunables of :class:`StrategyScheduler`.

    Examples
    --------
    >>> StrategyOptions().strategy
    'auto'
    >>> StrategyOptions(strategy="greedy")
    Traceback (most recent call last):
    ...
    ValueError: strategy must be one of ('auto', 'flat', 'hierarchical'), got 'greedy'
    """

    # auto | flat | hierarchical
    strategy: str = "auto"
    # Target number of groups of the hierarchical path (None: placer.default_groups).
    groups: int | None = None
    # auto: flat up to this many ops, hierarchical above (measured, see the module Notes).
    flat_max_ops: int = 400
    # flat path: share of the time limit LNS gets before CP-SAT, on graphs of at least
    # flat_lns_min_ops ops (smaller ones are left to CP-SAT whole).
    flat_lns_share: float = 0.6
    flat_lns_min_ops: int = 80
    # hierarchical path: shares of the time limit for the placer, LNS and the bound proofs.
    placer_share: float = 0.3
    lns_share: float = 0.6
    bound_share: float = 0.1
    # hierarchical path, LATENCY graphs with cut ops up to segment_max_ops ops: the share of
    # LNS's time a schedule glued from per-window CP-SAT solutions gets (segment_schedule with
    # reuse: repeated blocks are solved once); it competes with the warm start before the placer.
    segment_share: float = 0.1
    # ... raised to give the glue at least this many deterministic units in all, up to
    # segment_max_share of the limit: its windows need about that much to reach their optima
    # (measured on branchy-10k and transformer-10k at 30 s: 0.86 units reach the bound, 0.62
    # and 0.35 end at HEFT's makespan).
    segment_min_units: float = 1.0
    segment_max_share: float = 0.4
    # Largest graphs whose bound includes the segment part / CP-SAT segment proofs (the proofs
    # share one model per repeated segment group, so 10k-op graphs afford them: docs/bounds.md).
    segment_max_ops: int = 12_000
    segment_proof_max_ops: int = 12_000
    # hierarchical path: prove the bound (its bound_share) before the placer and LNS, which are
    # skipped when the incumbent already meets it and stop the moment they do (the glue met it
    # on all four scale graphs at 120 s, where the placer and LNS then searched for nothing:
    # transformer-10k 136.4 s idle with the bound last). False: the bound last, as before.
    bound_first: bool = True
    cpsat: CpSatOptions = field(default_factory=CpSatOptions)
    lns: LnsOptions = field(default_factory=LnsOptions)

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.groups is not None and self.groups < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")


def choose_strategy(problem: SchedulingProblem, cfg: StrategyOptions) -> str:
    """``flat`` or ``hierarchical``: the configured one, or by size under ``auto``.

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 3, (), (1,), ((-1,),), ())
    >>> choose_strategy(p, StrategyOptions()), choose_strategy(p, StrategyOptions(flat_max_ops=2))
    ('flat', 'hierarchical')
    """
    if cfg.strategy != "auto":
        return cfg.strategy
    return "flat" if problem.num_ops <= cfg.flat_max_ops else "hierarchical"


def _share(options: SolveOptions, share: float, hint, t0: float, remaining: float = 1.0) -> SolveOptions:
    """A stage's options: ``share`` of the limit (deterministic search), or under until-limit
    search ``share / remaining`` of what is left of the wall clock since ``t0`` (``remaining``:
    the shares of this stage and the ones after it)."""
    if options.search == UNTIL_LIMIT:
        left = options.time_limit_s - (time.perf_counter() - t0)
        limit = left * min(1.0, share / remaining)
    else:
        limit = options.time_limit_s * share
    return replace(options, time_limit_s=max(0.1, limit), hint=hint, progress=None)


class StrategyScheduler(Accepting):
    """Flat CP-SAT + LNS or hierarchical placement + LNS, by size (module Notes).

    Parameters
    ----------
    config : StrategyOptions, optional

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5)), ((0, 1, 8), (0, 2, 8)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> r = StrategyScheduler().solve(p, SolveOptions(time_limit_s=5))
    >>> r.objective, r.bound, r.stats["strategy"]
    (7, 7, 'flat')
    >>> r = StrategyScheduler(StrategyOptions(strategy="hierarchical")).solve(p, SolveOptions(time_limit_s=5))
    >>> r.objective, r.bound, r.stats["strategy"]  # critical path 1 + 5: this path proves less
    (7, 6, 'hierarchical')
    """

    name = "strategy"
    problem_type = SchedulingProblem

    def __init__(self, config: StrategyOptions = StrategyOptions()) -> None:
        self.config = config

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        warm = warm_start(problem, options)
        if warm is None:  # no heuristic schedule: only CP-SAT can decide
            r = CpSatScheduler(self.config.cpsat).solve(problem, options)
            return replace(r, stats={**r.stats, "strategy": "flat", "warm_start": None})
        heft_objective = objective_value(problem, warm)
        # the split's predicted cost, charged only where it runs (latency under memory limits)
        contiguous_s = (contiguous_cost_s(problem, options.time_limit_s, options.num_workers)
                        if _split_applies(problem) else None)
        warm, start = _better_start(problem, warm, "hint" if warm is options.hint else "heft", contiguous_s)
        choice = choose_strategy(problem, self.config)
        if choice == "flat":
            result = self._flat(problem, options, warm, t0)
        else:  # the pre-search work the hierarchical path charges: the split, if it ran
            result = self._hierarchical(problem, options, warm, t0, contiguous_s or 0.0)
        stages = result.stats["strategy_stages"]
        stats = {**result.stats, "strategy": choice, "requested_strategy": self.config.strategy,
                 "heft_objective": heft_objective, "warm_start": start, "search": options.search,
                 "stopped_by": combine_stops(v.get("stopped_by") for v in stages.values())}
        return replace(result, wall_time_s=time.perf_counter() - t0, stats=stats)

    def _flat(self, problem: SchedulingProblem, options: SolveOptions,
              warm: SchedulingSolution, t0: float) -> SolveResult:
        cfg = self.config
        best, stages = warm, {}
        share = cfg.flat_lns_share if problem.objective is Objective.LATENCY else 0.0
        if problem.num_ops < cfg.flat_lns_min_ops or (
                share and objective_value(problem, warm) <= quick_lower_bound(problem, segments=False)):
            share = 0.0  # one window would be the whole model, or HEFT is already optimal
        if share > 0:
            lns = LnsScheduler(cfg.lns).solve(problem, _share(options, share, warm, t0))
            stages["lns"] = {"objective": lns.objective, **_brief(lns.stats)}
            if lns.status.has_solution and lns.objective <= objective_value(problem, best):
                best = lns.solution
        flat = CpSatScheduler(cfg.cpsat).solve(problem, replace(
            _share(options, 1 - share, best, t0, 1 - share), progress=options.progress))
        stages["cpsat"] = {"objective": flat.objective, "bound": flat.bound,
                           "returned": flat.stats.get("returned", "its own solution"),
                           "stopped_by": flat.stats.get("stopped_by")}
        if not flat.status.has_solution:  # pragma: no cover - CP-SAT returns its hint at worst
            return flat
        return replace(flat, solver_name="lns+cpsat" if share > 0 else "cpsat",
                       stats={**flat.stats, "strategy_stages": stages})

    def _hierarchical(self, problem: SchedulingProblem, options: SolveOptions,
                      warm: SchedulingSolution, t0: float, charged_s: float = 0.0) -> SolveResult:
        cfg = self.config
        plan = _plan_hierarchical(problem, options, cfg, charged_s)
        stages: dict[str, Any] = {"charged": plan.charged}
        search = replace(options, time_limit_s=max(0.1, options.time_limit_s - plan.charged_s))
        total = cfg.placer_share + cfg.lns_share + cfg.bound_share
        glue_share = _glue_share(cfg, search, with_placer_share=plan.yielded) if plan.glue else 0.0
        clock = _StageClock(stages)
        if plan.glue:
            warm, stages["segments"] = self._glue(problem, _share(search, glue_share, None, t0, total), warm)
            clock.lap("segments")
        lns_share = cfg.lns_share - glue_share + (0.0 if plan.place else cfg.placer_share)
        small = plan.static_s is not None
        if cfg.bound_first:  # the bound's share is the same in either order
            bound, stages["bound"] = self._bound(problem, options, t0, small, total - glue_share)
            clock.lap("bound")
            best = self._search(problem, options, search, warm, bound, plan, lns_share, clock, t0)
        else:
            best = self._search(problem, options, search, warm, None, plan, lns_share, clock, t0)
            bound, stages["bound"] = self._bound(problem, options, t0, small, cfg.bound_share)
            clock.lap("bound")
        obj = objective_value(problem, best)
        bound = min(bound, obj)
        status = Status.OPTIMAL if bound >= obj else Status.FEASIBLE
        ran_lns = "lns" in stages and "skipped" not in stages["lns"]
        name = "hierarchical+lns" if ran_lns else "hierarchical"
        return SolveResult(status, obj, bound, best, 0.0, name,
                           {"lower_bound": bound, "strategy_stages": stages})

    def _search(self, problem: SchedulingProblem, options: SolveOptions, search: SolveOptions,
                warm: SchedulingSolution, bound: int | None, plan: "_HierarchicalPlan", lns_share: float,
                clock: "_StageClock", t0: float) -> SchedulingSolution:
        """The placer, then LNS, from ``warm``; each skipped once the incumbent meets ``bound``
        (a proven lower bound: nothing shorter exists; None: none yet), and LNS stops the
        moment it meets it. Their stats go into ``clock.stages``."""
        cfg, stages = self.config, clock.stages
        best = warm
        if plan.place and _meets(problem, best, bound):
            stages["placer"] = dict(_MEETS_BOUND)
        elif plan.place:
            remaining = cfg.placer_share + lns_share + (cfg.bound_share if bound is None else 0.0)
            best, stages["placer"] = self._place(problem, search, warm, t0, remaining)
            clock.lap("placer")
        elif plan.yielded:  # the glue's unit fits only with the placer's share
            stages["placer"] = {"skipped": f"its share went to the segment glue's {cfg.segment_min_units:g} unit",
                                "stopped_by": "finished"}
        else:  # grouping and uncoarsening alone would take more than the placer's share
            stages["placer"] = {"skipped": f"predicted grouping and uncoarsening {plan.grouping_s:.3g} s > "
                                           f"{cfg.placer_share:g} of the limit", "stopped_by": "finished"}
        if problem.objective is not Objective.LATENCY or lns_share <= 0:
            return best
        if _meets(problem, best, bound):
            stages["lns"] = dict(_MEETS_BOUND)
            return best
        if bound is None:  # the bound runs last (bound_first off): its share of the clock stays
            lns_options = _share(search, lns_share, best, t0, lns_share + cfg.bound_share)
        else:  # the last stage: under until-limit what is left of the whole limit (the charged
            # costs are work that already ran), under deterministic search its share
            lns_options = _share(options if options.search == UNTIL_LIMIT else search, lns_share, best, t0,
                                 lns_share)
        lns = LnsScheduler(replace(cfg.lns, stop_at_objective=bound)).solve(problem, lns_options)
        stages["lns"] = {"objective": lns.objective, **_brief(lns.stats)}
        clock.lap("lns")
        if lns.status.has_solution and lns.objective <= objective_value(problem, best):
            best = lns.solution
        return best

    def _glue(self, problem: SchedulingProblem, options: SolveOptions, warm: SchedulingSolution
              ) -> tuple[SchedulingSolution, dict]:
        """A schedule glued from per-window CP-SAT solutions (each distinct window solved once),
        or ``warm`` when it is not shorter: on graphs of repeated blocks between cut ops the glue
        is close to the segment bound, where the placer's groups are not."""
        used: dict = {}
        # one worker per window, as LNS: on branchy-10k's windows two workers given the same
        # units ended near HEFT (4,739,303) where one reached the segment bound (3,737,279)
        budget = Budget.of(options, GLUE_WINDOWS)
        glued = segment_schedule(problem, replace(options, num_workers=1), budget, self.config.cpsat, used,
                                 reuse=True)
        objective = None if glued is None else objective_value(problem, glued)
        # the budget's own word: a window cut by the wall-clock net makes the run not reproducible
        stage = {"objective": objective, **used, "stopped_by": budget.stop_word()}
        if objective is not None and objective < objective_value(problem, warm):
            return glued, {**stage, "returned": "glued"}
        return warm, {**stage, "returned": "warm start"}

    def _place(self, problem: SchedulingProblem, search: SolveOptions, warm: SchedulingSolution,
               t0: float, total: float) -> tuple[SchedulingSolution, dict]:
        """The placer's schedule (group, place, uncoarsen) for its share, or ``warm`` when better."""
        cfg = self.config
        placer = HierarchicalScheduler(HierarchicalOptions(groups=cfg.groups))
        placed = placer.solve(problem, _share(search, cfg.placer_share, warm, t0, total))
        stage = {"objective": placed.objective, **{k: placed.stats.get(k) for k in (
            "groups", "coarse_status", "coarse_objective", "uncoarsened_objectives", "returned",
            "stopped_by")}}
        best = placed.solution if placed.status.has_solution else warm
        if objective_value(problem, warm) < objective_value(problem, best):
            best = warm
        return best, stage

    def _bound(self, problem: SchedulingProblem, options: SolveOptions, t_start: float,
               small: bool, remaining: float) -> tuple[int, dict]:
        """The quick bound, with segments and the static bounds when ``small`` (their
        predicted cost fits the limit, :func:`~solvers.hierarchical.budget.static_bound_cost_s`),
        raised by the segment proofs (``bound_share`` of the limit; under until-limit search
        that share of the ``remaining`` shares of what is left of the wall clock)."""
        cfg = self.config
        t0 = time.perf_counter()
        bound = quick_lower_bound(problem, segments=small)
        stats: dict[str, Any] = {"quick_bound": bound}
        if small:  # the static bounds without the LP relaxation: paths with memory, segment runs
            static = lower_bound(problem, lp=False)
            stats["static_bound"] = static
            bound = max(bound, static)
        if (problem.objective is Objective.LATENCY and cfg.bound_share > 0
                and problem.num_ops <= cfg.segment_proof_max_ops):
            opts = _share(options, cfg.bound_share, None, t_start, remaining)
            budget = Budget.of(opts, SCHEDULING)
            floors = budget.scale(floor_units(problem))  # predicted, never timed
            stats["floors_dtime"] = round(floors, 6)
            if floors < budget.total:
                budget.note("segment_floors", floors)
                seg, seg_stats = segment_lower_bound(problem, opts, budget, cfg.cpsat)
                bound = max(bound, seg)
                stats.update(segment_proofs=seg, segment_groups_proved=seg_stats.get("segment_groups_proved"),
                             stopped_by=seg_stats.get("segment_bound_stopped_by"))
            else:
                stats["segment_proofs"] = "skipped: the segment floors alone would spend the proofs' budget"
        stats["bound_s"] = round(time.perf_counter() - t0, 3)
        return bound, stats


class _StageClock:
    """Wall and CPU seconds of each stage that ran, into its stats (``wall_s``, ``cpu_s``):
    measured for the benchmarks (CPU is the less load-sensitive), never used for a decision."""

    def __init__(self, stages: dict[str, Any]) -> None:
        self.stages = stages
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self, name: str) -> None:
        """Charge the time since the last lap to stage ``name``."""
        wall, cpu = time.perf_counter(), time.process_time()
        self.stages[name].update(wall_s=round(wall - self.wall, 3), cpu_s=round(cpu - self.cpu, 3))
        self.wall, self.cpu = wall, cpu


#: A stage the proven bound made pointless (the placer, LNS): the incumbent is already optimal.
_MEETS_BOUND = {"skipped": "the incumbent meets the proven bound", "stopped_by": "finished"}


@dataclass(frozen=True, slots=True)
class _HierarchicalPlan:
    """Which stages of the hierarchical path run, and the predicted costs charged for them
    (arithmetic on sizes, :mod:`solvers.hierarchical.budget`, never the clock)."""

    static_s: float | None  # the static bounds' predicted cost; None: they are not computed
    grouping_s: float  # the placer's grouping and uncoarsening
    place: bool  # the placer runs (unless the bound is met first)
    glue: bool  # the segment glue runs
    yielded: bool  # the placer gave its share to the glue's unit
    charged_s: float  # all charged seconds, off the placer's and LNS's time
    charged: dict[str, Any]  # stats["strategy_stages"]["charged"]


def _plan_hierarchical(problem: SchedulingProblem, options: SolveOptions, cfg: StrategyOptions,
                       contiguous_s: float) -> _HierarchicalPlan:
    """The stages of the hierarchical path and their charges (module Notes); ``contiguous_s``:
    the contiguous split's predicted cost, when it ran."""
    limit, workers = options.time_limit_s, options.num_workers
    small = problem.num_ops <= cfg.segment_max_ops
    static_s = static_bound_cost_s(problem, limit, workers) if small else None
    # HEFT's warm start ran once before the search (here or as the planner's heuristic)
    heft_s = heft_cost_s(problem, limit, workers)
    grouping_s = grouping_cost_s(problem, limit, workers)
    place = grouping_s <= cfg.placer_share * limit
    glue_s = segment_glue_cost_s(problem, limit, workers)
    glue = (small and problem.objective is Objective.LATENCY and cfg.segment_share > 0
            and glue_s <= cfg.segment_share * limit)
    yielded = glue and place and _glue_needs_the_placer(
        cfg, limit - contiguous_s - heft_s - glue_s - (static_s or 0.0))
    place = place and not yielded  # its share goes to the glue's unit (stages["placer"] says so)
    charged_s = (contiguous_s + (static_s or 0.0) + heft_s + (grouping_s if place else 0.0)
                 + (glue_s if glue else 0.0))
    charged = {"contiguous_s": round(contiguous_s, 3),
               "static_bound_s": None if static_s is None else round(static_s, 3),
               "heft_s": round(heft_s, 3), "grouping_s": round(grouping_s, 3) if place else None,
               "segment_glue_s": round(glue_s, 3) if glue else None}
    return _HierarchicalPlan(static_s, grouping_s, place, glue, yielded, charged_s, charged)


def _meets(problem: SchedulingProblem, schedule: SchedulingSolution, bound: int | None) -> bool:
    """Whether ``schedule`` is proven optimal by ``bound`` (None: no bound yet)."""
    return bound is not None and objective_value(problem, schedule) <= bound


def _glue_units_share(cfg: StrategyOptions, search_s: float) -> float:
    """The share of ``search_s`` seconds that buys the glue ``segment_min_units`` at its rate
    (:data:`~solvers.hierarchical.budget.GLUE_WINDOWS`)."""
    units = GLUE_WINDOWS.units(search_s)
    return cfg.segment_min_units / units if units > 0 else float("inf")


def _glue_needs_the_placer(cfg: StrategyOptions, search_s: float) -> bool:
    """Whether the glue's ``segment_min_units`` fit ``search_s`` seconds of search (the limit less
    the predicted costs, the placer's grouping not among them) only with the placer's share:
    above ``segment_max_share`` of it, within ``segment_max_share + placer_share``. On graphs of
    repeated blocks the glue then reaches the segment bound, which the placer's groups do not
    (branchy-10k: 3,737,279 glued against 4,088,243 from the placer and LNS at a 10-s limit).

    >>> cfg = StrategyOptions()
    >>> [_glue_needs_the_placer(cfg, t) for t in (5.0, 8.0, 15.0)]  # 1 unit: 5 s at 0.2 units per second
    [False, True, False]
    """
    needed = _glue_units_share(cfg, search_s)
    return max(cfg.segment_max_share, cfg.segment_share) < needed <= cfg.segment_max_share + cfg.placer_share


def _glue_share(cfg: StrategyOptions, search: SolveOptions, with_placer_share: bool = False) -> float:
    """The glue's share of the limit: ``segment_share``, raised to ``segment_min_units`` of the
    glue's budget (:data:`~solvers.hierarchical.budget.GLUE_WINDOWS`) up to ``segment_max_share``,
    or up to ``segment_max_share + placer_share`` when the placer gave way to it
    (``with_placer_share``); the rest of LNS's share stays LNS's.

    >>> cfg = StrategyOptions()
    >>> [round(_glue_share(cfg, SolveOptions(time_limit_s=t, num_workers=2)), 3) for t in (5, 30, 120)]
    [0.4, 0.167, 0.1]
    >>> round(_glue_share(cfg, SolveOptions(time_limit_s=8, num_workers=2), with_placer_share=True), 3)
    0.625
    """
    needed = _glue_units_share(cfg, search.time_limit_s)
    most = max(cfg.segment_max_share, cfg.segment_share) + (cfg.placer_share if with_placer_share else 0.0)
    return min(max(cfg.segment_share, needed), most)


def _split_applies(problem: SchedulingProblem) -> bool:
    """Whether :func:`_better_start` considers the contiguous split: a latency problem with a memory limit."""
    return problem.objective is Objective.LATENCY and any(
        problem.memory_bytes(d) > 0 for d in range(problem.num_devices))


def _better_start(problem: SchedulingProblem, warm: SchedulingSolution, label: str,
                  split_cost_s: float | None) -> tuple[SchedulingSolution, str]:
    """The warm start, or the contiguous split (:mod:`~solvers.scheduling.contiguous`) when it
    is better: LATENCY problems with a memory limit (:func:`_split_applies`), where memory
    forces the model across devices and HEFT's op-by-op placement pays transfers it did not
    plan for. ``split_cost_s`` None: the split does not apply, or its predicted cost does not
    fit the limit, so it is not computed."""
    if split_cost_s is None:
        return warm, label
    split = contiguous_schedule(problem)
    if split is not None and objective_value(problem, split) < objective_value(problem, warm):
        return split, "contiguous split"
    return warm, label


def _brief(stats: dict) -> dict:
    keys = ("iterations", "improvements", "sweeps", "dtime_used", "counted_steps", "stopped_by",
            "stopped")
    return {k: stats[k] for k in keys if k in stats}
