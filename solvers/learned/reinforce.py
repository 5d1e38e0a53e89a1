"""REINFORCE training of the grouper + placer policy, and the solver that wraps it.

Notes
-----
One **episode** samples a placement from the policy (:mod:`solvers.learned.policy`),
repairs it to the problem's placement rules (:mod:`solvers.learned.decode`) and sequences
it with the project's list scheduler (:func:`~solvers.scheduling.heft_schedule` with the
placement fixed: the same durations, transfers, links and exact memory rule as every other
scheduler). Its cost is the schedule's objective (:func:`~solvers.scheduling.objective_value`:
the makespan for LATENCY, the max load for THROUGHPUT); a placement the list scheduler
cannot sequence (memory, missing links) costs ``infeasible_penalty`` times the serial
upper bound (every op at its slowest plus every transfer at its slowest, one after the
other), more than any sequenced placement of the graph costs.

Every ``batch_size`` episodes the policy takes one Adam step up the REINFORCE gradient
with reward ``-cost / reference`` (``reference`` = the problem's lower bound, so rewards are
near -1 on every graph), advantage = reward minus a moving-average baseline (the mean
reward of the batches so far, decayed by ``baseline_decay`` per batch; the first batch is
its own baseline), and an entropy bonus of weight ``entropy_weight`` that keeps the policy
exploring. Identical placements are scheduled once (a cache: the episode still counts).

The budget counts **episodes**, not seconds: same problem, options and seed give the same
placement on any machine. The time limit is only a cap: when it ends training first,
``stopped_by`` is ``"wall_clock"`` and the run is not reproducible. Until-limit search
trains until the time limit (``"time_limit"``). Training also stops when a sample reaches
the lower bound (``"finished"``: proven optimal).

The result is the best placement seen (the sampled ones and, unless the clock stopped
training, the trained policy's most likely one: ``stats["mode_objective"]``), validated by
:func:`~solvers.scheduling.validate_schedule`. When no sample could be sequenced, the
result is HEFT's schedule (or its first-fit fallback), and ``stats["fallback"]`` says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.core import Accepting, ProgressPoint, SolveOptions, SolveResult, Status, failure_result
from solvers.learned.decode import PlacementDecoder
from solvers.learned.features import op_features
from solvers.learned.optimizer import Adam
from solvers.learned.policy import Decision, GroupPlacePolicy
from solvers.scheduling.bounds import lower_bound
from solvers.scheduling.heft import HeftScheduler, heft_schedule, upward_ranks
from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["ReinforceOptions", "TrainingRun", "serial_upper_bound", "train_policy", "ReinforceScheduler"]


@dataclass(frozen=True, slots=True)
class ReinforceOptions:
    """Tunables of the REINFORCE placement baseline. Every field has a default.

    Examples
    --------
    >>> ReinforceOptions().episodes
    512
    >>> ReinforceOptions(batch_size=0)
    Traceback (most recent call last):
    ...
    ValueError: batch_size must be >= 1, got 0
    """

    # Sampled placements (each sequenced by the list scheduler): the deterministic budget.
    episodes: int = 512
    # Placements per policy update.
    batch_size: int = 16
    # Groups of the grouper; 0 = min(ops, 4 x devices).
    num_groups: int = 0
    # Hidden units of the grouper network.
    hidden_units: int = 16
    # Adam step size.
    learning_rate: float = 0.05
    # Weight of the mean entropy of the policy's distributions in the objective.
    entropy_weight: float = 0.01
    # The baseline keeps this share of its value at each batch.
    baseline_decay: float = 0.9
    # An unsequenceable placement costs this many times the serial upper bound.
    infeasible_penalty: float = 2.0

    def __post_init__(self) -> None:
        for name in ("episodes", "batch_size", "hidden_units"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.num_groups < 0:
            raise ValueError(f"num_groups must be >= 0, got {self.num_groups}")
        if not 0.0 <= self.baseline_decay < 1.0:
            raise ValueError(f"baseline_decay must be in [0, 1), got {self.baseline_decay}")
        if self.infeasible_penalty < 1.0:
            raise ValueError(f"infeasible_penalty must be >= 1, got {self.infeasible_penalty}")


def serial_upper_bound(problem: SchedulingProblem) -> int:
    """Every op at its slowest allowed duration plus every edge's slowest transfer.

    No list schedule of any placement exceeds it: the list scheduler never leaves every
    device and link idle while an op is ready.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 6), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> serial_upper_bound(p)
    14
    """
    ops = sum(max(c for c in row if c >= 0) for row in problem.durations_cycles)
    return ops + sum(max(row, default=0) for row in problem.transfer_cycles)


@dataclass
class TrainingRun:
    """What training found: the best schedule (None if no sample could be sequenced) and how it went."""

    best: SchedulingSolution | None = None
    best_objective: float | None = None
    best_episode: int | None = None
    mode_objective: float | None = None  # the trained policy's most likely placement (penalty if unsequenceable)
    episodes: int = 0
    updates: int = 0
    infeasible: int = 0
    batch_medians: list[float] = field(default_factory=list)
    stopped_by: str = "deterministic_budget"
    progress: list[ProgressPoint] = field(default_factory=list)
    _costs: dict[tuple[int, ...], float] = field(default_factory=dict)

    def stats(self) -> dict[str, Any]:
        """The run's facts for :attr:`SolveResult.stats`."""
        return {"episodes": self.episodes, "updates": self.updates, "schedules": len(self._costs),
                "infeasible_samples": self.infeasible, "best_episode": self.best_episode,
                "mode_objective": self.mode_objective,
                "first_batch_median": self.batch_medians[0] if self.batch_medians else None,
                "last_batch_median": self.batch_medians[-1] if self.batch_medians else None,
                "stopped_by": self.stopped_by}


class _Trainer:
    """One training run's state: policy, optimiser, scorer cache, baseline, clock."""

    def __init__(self, problem: SchedulingProblem, options: ReinforceOptions, solve: SolveOptions,
                 bound: int, t0: float) -> None:
        self.problem, self.options, self.solve_options = problem, options, solve
        self.bound, self.t0 = bound, t0
        self.features = op_features(problem)
        self.rng = np.random.default_rng(solve.random_seed)
        groups = options.num_groups or min(problem.num_ops, 4 * problem.num_devices)
        self.policy = GroupPlacePolicy.initial(self.features.shape[1], groups, problem.num_devices,
                                               options.hidden_units, self.rng)
        self.adam = Adam(self.policy.params, options.learning_rate)
        self.decoder = PlacementDecoder(problem)
        self.ranks = upward_ranks(problem)  # the list scheduler's priorities, the same for every placement
        self.reference = float(max(1, bound))
        self.penalty = options.infeasible_penalty * serial_upper_bound(problem)
        self.baseline: float | None = None
        self.until_limit = solve.search == "until-limit"
        self.run = TrainingRun()

    def out_of_time(self) -> bool:
        if time.perf_counter() - self.t0 <= self.solve_options.time_limit_s:
            return False
        self.run.stopped_by = "time_limit" if self.until_limit else "wall_clock"
        return True

    def cost(self, placement: tuple[int, ...], episode: int | None) -> float:
        """The placement's objective (scheduled once, then cached), or the penalty; keeps the best."""
        run = self.run
        if placement in run._costs:
            return run._costs[placement]
        schedule = heft_schedule(self.problem, placement, self.ranks)
        value = self.penalty if schedule is None else float(objective_value(self.problem, schedule))
        run._costs[placement] = value
        if schedule is not None and (run.best_objective is None or value < run.best_objective):
            run.best, run.best_objective, run.best_episode = schedule, value, episode
            point = ProgressPoint(time.perf_counter() - self.t0, value, float(self.bound))
            run.progress.append(point)
            if self.solve_options.progress is not None:
                self.solve_options.progress(point)
        return value

    def batch(self, size: int) -> bool:
        """Sample, score and learn from up to ``size`` episodes; False when training must stop."""
        run, out = self.run, self.policy.forward(self.features)
        decisions: list[Decision] = []
        costs: list[float] = []
        for _ in range(size):
            if self.out_of_time():
                return False
            decision = self.policy.sample(out, self.rng)
            cost = self.cost(self.decoder.decode(decision, out.device_log_probs), run.episodes)
            run.episodes += 1
            run.infeasible += cost == self.penalty
            decisions.append(decision)
            costs.append(cost)
        rewards = -np.asarray(costs) / self.reference
        baseline = float(rewards.mean()) if self.baseline is None else self.baseline
        grads = self.policy.gradients(self.features, out, decisions, rewards - baseline,
                                      self.options.entropy_weight)
        self.adam.step(grads)
        run.updates += 1
        decay = self.options.baseline_decay
        self.baseline = decay * baseline + (1.0 - decay) * float(rewards.mean())
        run.batch_medians.append(float(np.median(costs)))
        if run.best_objective is not None and run.best_objective <= self.bound:
            run.stopped_by = "finished"
            return False
        return True


def train_policy(problem: SchedulingProblem, options: ReinforceOptions = ReinforceOptions(),
                 solve: SolveOptions = SolveOptions(), bound: int | None = None,
                 started: float | None = None) -> TrainingRun:
    """Train the policy on ``problem`` (see the module Notes) and return the run.

    Parameters
    ----------
    problem : SchedulingProblem
    options : ReinforceOptions
    solve : SolveOptions
        ``random_seed`` seeds every draw; ``time_limit_s`` caps the wall time; ``search``
        ``"until-limit"`` trains until the time limit instead of for ``options.episodes``.
    bound : int, optional
        A lower bound on the optimum (default :func:`~solvers.scheduling.lower_bound`).
    started : float, optional
        The ``time.perf_counter()`` the time limit counts from (default: now).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> run = train_policy(p, ReinforceOptions(episodes=32, batch_size=8))
    >>> run.best_objective, run.stopped_by
    (7.0, 'finished')
    """
    t0 = time.perf_counter() if started is None else started
    trainer = _Trainer(problem, options, solve, lower_bound(problem) if bound is None else bound, t0)
    run = trainer.run
    while trainer.until_limit or run.episodes < options.episodes:
        size = options.batch_size if trainer.until_limit else min(options.batch_size,
                                                                   options.episodes - run.episodes)
        if not trainer.batch(size):
            break
    if run.stopped_by not in ("wall_clock", "time_limit"):
        out = trainer.policy.forward(trainer.features)
        mode = trainer.decoder.decode(trainer.policy.mode(out), out.device_log_probs)
        run.mode_objective = trainer.cost(mode, None)
    return run


class ReinforceScheduler(Accepting):
    """The REINFORCE grouper + placer baseline as a :class:`~solvers.core.Solver`.

    Short name ``"reinforce"``, ``"learned.reinforce"`` in :mod:`solvers.registry` (it takes
    every :class:`~solvers.scheduling.SchedulingProblem`).

    FEASIBLE (OPTIMAL when the schedule meets the bound) with the proven
    :func:`~solvers.scheduling.lower_bound` as ``bound``; deterministic given
    ``SolveOptions.random_seed`` unless the time limit cuts training short
    (``stats["reproducible"]``). Ignores ``hint``: it learns from scratch.

    Examples
    --------
    Two ops in a chain, an expensive link: both on one device, 4 + 3 = 7 (the bound).

    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> r = ReinforceScheduler(ReinforceOptions(episodes=32, batch_size=8)).solve(p)
    >>> r.status.value, r.objective, r.bound, r.stats["fallback"]
    ('OPTIMAL', 7, 7, None)
    >>> ReinforceScheduler().accepts(p), ReinforceScheduler().refusal("a graph")
    (True, 'reinforce takes a SchedulingProblem, not a str')
    """

    name = "reinforce"
    problem_type = SchedulingProblem

    def __init__(self, options: ReinforceOptions = ReinforceOptions()) -> None:
        self.options = options

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        bound = lower_bound(problem)
        t_train = time.perf_counter()
        run = train_policy(problem, self.options, options, bound, started=t0)
        stats: dict[str, Any] = {**run.stats(), "fallback": None,
                                 "training_wall_s": round(time.perf_counter() - t_train, 3),
                                 "reproducible": options.search == "deterministic"
                                 and run.stopped_by != "wall_clock"}
        solution = run.best
        if solution is None:
            fallback = HeftScheduler().solve(problem, options)
            if not fallback.status.has_solution:
                return failure_result(Status.UNKNOWN, self.name, time.perf_counter() - t0, bound=bound,
                                      **stats, reason="no sampled placement and no HEFT schedule fit")
            solution = fallback.solution
            stats["fallback"] = "heft" if "fallback" not in fallback.stats else f"heft-{fallback.stats['fallback']}"
        errors = validate_schedule(problem, solution)
        if errors:
            raise RuntimeError(f"{self.name}: the list scheduler returned an invalid schedule: {errors[:3]}")
        objective = objective_value(problem, solution)
        status = Status.OPTIMAL if objective <= bound else Status.FEASIBLE
        return SolveResult(status, objective, bound, solution, time.perf_counter() - t0, self.name, stats,
                           tuple(run.progress))
