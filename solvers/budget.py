"""One work budget for every solver stage: deterministic by default, the wall clock only a net.

A solve gets ``time_limit_s`` seconds from the user. In the default ``"deterministic"`` search
that limit is turned, once and up front, into a budget of **deterministic work**: CP-SAT's
``deterministic_time`` units for CP-SAT stages, counted work (search nodes, local-search moves,
simplex iterations, op placements) for Python stages, converted at each family's fixed rate.
Stages take shares of what the earlier stages *charged*, never of elapsed wall time, so the
same problem, seed and workers give the same result on a busy or an idle machine, on a fast
or a slow one. The family's :class:`Calibration` aims the budget at most of the limit on the
calibration machine (2 idle cores), so the user's time is used (what was measured is in each
constant's docstring; models differ, so some end earlier than others).

The wall clock stays as a **safety net** only, at ``NET_SLOWDOWN x time_limit_s +
NET_CONSTANT_S`` from the start: room for a machine three times slower than the calibration
machine, plus model building and CP-SAT's batch overshoot on small budgets (the
``PLAN_NET_SLOWDOWN`` environment variable widens it on a machine shared more heavily: a factor
``f`` above the default places it at ``f x time_limit_s + NET_CONSTANT_S x f / NET_SLOWDOWN``,
see :func:`net_seconds`). When the net
fires first, :attr:`Budget.stopped_by` becomes ``"wall_clock"`` and the result is marked not
reproducible (the planner puts that in plan.json, the report and on the terminal).

``"until-limit"`` search trades reproducibility for the whole limit: the budget is the limit
in wall seconds, stages split what is left of it, CP-SAT runs until its share of the clock
(several workers then use CP-SAT's plain parallel portfolio, not the deterministic batches),
and :attr:`Budget.stopped_by` is ``"time_limit"``. Never byte-reproducible.

``stopped_by`` values: ``"finished"`` (every stage proved or converged first),
``"deterministic_budget"``, ``"wall_clock"`` (the net fired: not reproducible),
``"time_limit"`` (until-limit search: not reproducible by design).

Examples
--------
>>> b = Budget.start(10.0, SCHEDULING)
>>> b.total == SCHEDULING.units_per_second * 10.0, b.reproducible
(True, True)
>>> b.note("stage", 0.25 * b.total)
>>> round(b.left / b.total, 2), b.stopped_by
(0.75, None)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from solvers.core import ProgressPoint, SolveOptions, Status
from solvers.cpsat_support import WallNet, integer_objective_bound, run_cpsat
from solvers.net_env import NET_SLOWDOWN_ENV, slowdown_from_environment

__all__ = [
    "DETERMINISTIC", "UNTIL_LIMIT", "SEARCH_MODES", "NET_SLOWDOWN", "NET_SLOWDOWN_ENV", "NET_CONSTANT_S",
    "net_slowdown", "net_seconds",
    "CALIBRATION_CORES", "PARALLEL_SPEEDUP",
    "Calibration", "SCHEDULING", "PLACEMENT", "MEMORY_LEVELS", "MEMORY_OFFSETS", "COLOCATION",
    "Budget", "combine_stops", "is_reproducible", "run_summary",
    "MODEL_ELEMENTS_PER_UNIT", "FULL_MODEL_SHARE", "FULL_MODEL_FREE_ELEMENTS", "BOUND_ELEMENTS_PER_UNIT", "build_units", "affordable",
]

_LOG = logging.getLogger(__name__)

DETERMINISTIC = "deterministic"
UNTIL_LIMIT = "until-limit"
SEARCH_MODES = (DETERMINISTIC, UNTIL_LIMIT)

# The net leaves room for a machine this many times slower than the calibration machine
# (PLAN_NET_SLOWDOWN overrides it: see net_slowdown)...
NET_SLOWDOWN = 3.0
# ...plus this many seconds (model building, presolve, and interleaved CP-SAT overshooting a
# small deterministic budget by a batch: 0.077 asked, 0.20 used on a co-location model).
NET_CONSTANT_S = 5.0


def net_slowdown() -> float:
    """How many times slower than the calibration machine a run may be before the net fires.

    :data:`NET_SLOWDOWN`, unless the ``PLAN_NET_SLOWDOWN`` environment variable gives another
    factor (a number >= 1): on a machine shared so heavily that a run is more than 3x slower
    than an idle 2-core one, a larger factor keeps deterministic runs reproducible, at the
    price of a later backstop (:func:`net_seconds` scales the net's constant by it too). Read
    at each :meth:`Budget.start`, so it needs no restart. Raises ValueError naming the variable when its value is not such a number.

    >>> import os; os.environ.pop(NET_SLOWDOWN_ENV, None) is None and net_slowdown() == NET_SLOWDOWN
    True
    """
    factor = slowdown_from_environment()
    return NET_SLOWDOWN if factor is None else factor


def net_seconds(time_limit_s: float, factor: float | None = None) -> float:
    """How many wall seconds after its start the safety net stops a solve of ``time_limit_s``.

    ``factor x time_limit_s`` plus :data:`NET_CONSTANT_S`, the constant scaled by
    ``factor / NET_SLOWDOWN`` when the factor (:func:`net_slowdown` unless given) exceeds the
    default: the constant pays for model building and CP-SAT's batch overshoot, which a loaded
    machine slows exactly as much as the search. A constant that did not grow left short
    solves (an island route's share of 0.2-0.4 units, a co-location bound) little more than
    5 s at any factor, so they met the net on a machine the factor was meant to allow for.
    At the default (or below it) the net is what it always was.

    Examples
    --------
    >>> net_seconds(2.0, 3.0), net_seconds(2.0, 1.0)
    (11.0, 7.0)
    >>> net_seconds(2.0, 30.0)  # 30 x 2 s + 5 s x 30 / 3
    110.0
    """
    factor = net_slowdown() if factor is None else factor
    # NET_SLOWDOWN > 0: a test that patches it to 0 (a net of ~1 ms) must not divide by it
    return factor * time_limit_s + NET_CONSTANT_S * (factor / NET_SLOWDOWN if factor > NET_SLOWDOWN > 0 else 1.0)


# Stop words, most to least serious (combine_stops keeps the first present).
_STOP_ORDER = ("wall_clock", "time_limit", "deterministic_budget", "finished")
# How Python stages say why they stopped, in the words above.
_STAGE_STOPS = {"wall_time": "wall_clock", "work": "deterministic_budget", "nodes": "deterministic_budget",
                "deterministic_time": "deterministic_budget", "local_optimum": "finished", "converged": "finished",
                "optimal": "finished", "skipped": "finished", "target": "finished"}


# The calibration machine has 2 cores: two interleaved CP-SAT workers do about this many
# times the deterministic work of one per wall second there (per-thread CPU of the demo's main
# solve, 2026-11-23: 1.0 dtime in 6.6 CPU-s on one worker; 1.71 dtime with the busier of two
# worker threads at 6.3 CPU-s, i.e. at most 1.79x; 1.6 allows for the batch barriers). More
# workers than cores do not run faster there, so they get no more.
CALIBRATION_CORES = 2
PARALLEL_SPEEDUP = 1.6


@dataclass(frozen=True, slots=True)
class Calibration:
    """Deterministic units a solver family is granted per second of the time limit.

    The measurement behind each constant is in its docstring: the family's typical models
    spend the budget in most of the limit on the calibration machine (2 idle cores, OR-Tools
    9.15), so the deterministic default uses the user's time, and a machine up to
    :data:`NET_SLOWDOWN` times slower still ends on the budget, not the net. With
    ``per_worker``, ``units_per_second`` is for one CP-SAT worker and several workers get
    :data:`PARALLEL_SPEEDUP` times as much (they do that much more work per wall second).

    Examples
    --------
    >>> Calibration("x", 0.5).units(10)
    5.0
    >>> Calibration("x", 0.5, per_worker=True).units(10, workers=8)
    8.0
    """

    family: str
    units_per_second: float
    per_worker: bool = False

    def units(self, time_limit_s: float, workers: int = 1) -> float:
        factor = PARALLEL_SPEEDUP if self.per_worker and min(workers, CALIBRATION_CORES) > 1 else 1.0
        return self.units_per_second * time_limit_s * factor


SCHEDULING = Calibration("scheduling", 0.07, per_worker=True)
"""Placement + scheduling (``solvers.scheduling.cpsat``): CP-SAT deterministic time per second
of limit for one worker (two or more: x1.6, so 0.112 at the spec's default of two).

Measured 2026-11-23, whole ``plan solve`` at a 30-s limit with two workers (OR-Tools 9.15; the
machine was shared, load ~4-5, so the idle wall time is estimated from per-thread CPU: the main
thread's CPU plus the CP-SAT threads' CPU / 1.6). At 0.05: the demo 10.2 s, inception_v1 on the
demo's hardware 14.9 s (issue 11 measured 9-10 s idle for the previous default, which granted
1.6x less), the 1,033-op transformer 9.2 s, resnet50 on the README's hardware 20.5 s. CP-SAT's
CPU cost per unit differs 2.8x between them (4.2 CPU-s on the transformer's sequencing model,
4.6 on the demo's, 8.3 on inception's, 11.8 on resnet50's), so no constant puts all of them at
70-85%. At 0.07: the demo 14.6 s (49%), inception_v1 21.0 s (70%), resnet50 24.0 s (80%, proven
optimal), the transformer 9.5 s (32%: its main solve ends after one interleaved batch, past its
budget, at either rate). 0.07 keeps the most expensive (resnet50) near 80% of an idle machine's
limit, so a machine three times slower still ends within the net (3 x limit + 5 s).
"""

PLACEMENT = Calibration("placement", 0.8, per_worker=True)
"""Max-load partitioning (``solvers.placement.cpsat``): CP-SAT deterministic time per second of
limit for one worker. Measured 2026-11-23 on the dnn-partitioning inputs, one worker: 0.9-1.7
units per CPU-second (bert24 non-contiguous 22.3 in 13.2 CPU-s, resnet50 contiguous 9.9 in 9.2,
gnmt non-contiguous 18.8 in 16.2, bert24 contiguous proven with 0.51 in 0.5): 0.8 is about 75%
of the placement's share of the limit at ~1.1 units per second."""

MEMORY_LEVELS = Calibration("memory-levels", 0.05)
"""Memory-level assignment (``solvers.memory.levels.cpsat``, one worker): CP-SAT deterministic
time. Kept from 2026-11-22: a 40-op exact model runs 0.07 units per wall second, a 250-op chain
0.01 (hence window search, which also counts window solves); the memory stage has its own share
of the limit and usually stops well before it."""

MEMORY_OFFSETS = Calibration("memory-offsets", 0.01)
"""Buffer offsets (``solvers.memory.offsets.cpsat``, NoOverlap2D, one worker): CP-SAT
deterministic time. Kept from 2026-11-22: NoOverlap2D propagation runs 0.02-0.03 units per wall
second on 200-500 random buffers (busy machine); ResNet-50's 387 buffers reach the live bound
with 0.061 (the planner grants 0.0125 per second of the offsets' share)."""

COLOCATION = Calibration("colocation", 0.2)
"""Co-location (``solvers.colocation``): CP-SAT deterministic time and counted Python work
converted at ``solvers.colocation.budget``'s rates, one rate for any worker count. Kept from
2026-11-22: CP-SAT spends 0.1-0.3 units per wall second on the co-location models (busy 2-core
machine); the benchmark's fleets end on the budget."""


MODEL_ELEMENTS_PER_UNIT = 50_000
"""Predicted model elements (placement literals plus transfer-pair literals, see
``solvers.scheduling.cpsat.search.full_model_elements``) whose building and CP-SAT loading and
presolve cost one :data:`SCHEDULING` unit. Neither is in CP-SAT's deterministic time (it counts
search). Measured 2026-11-23 on the dnn-partitioning Inception-V3 latency input (326 ops, 20
devices, about 152,000 elements; load 7 on 2 cores): 31 s building the full model in Python and
40 s inside CP-SAT for 0.27 units of deterministic time at a 2-s limit, so the net fired at 87 s;
about 27 s on an idle machine, 3 units at the two-worker rate of 0.112 units per second."""

FULL_MODEL_SHARE = 0.5
"""The largest share of a scheduling budget the full model's predicted build may cost
(:func:`affordable`); above it the main solve fixes the hint's placement and only sequences
(a model about ``devices`` times smaller)."""

FULL_MODEL_FREE_ELEMENTS = 10_000
"""Models up to this many predicted elements are always built in full, whatever the limit:
0.2 units, about 2 s on the calibration machine, which :data:`NET_CONSTANT_S` leaves room for
(the demo's full model is 7,548 elements)."""

BOUND_ELEMENTS_PER_UNIT = 340_000
"""Elements, ``(ops + edges) x devices``, the static lower bounds (placement and memory paths,
segment chain and runs, without the LP) process per :data:`SCHEDULING` unit. Re-measured
2026-11-28 as CPU seconds of ``lower_bound(problem, lp=False)`` (``time.process_time``, which the
machine's load of 8-10 does not inflate as it did the first measurement's wall time, 31 s at
load 7 on 2026-11-23, set at 120,000): branchy-10k 177,144 elements 4.65 s (38,100 per second),
transformer-10k 206,904 elements 4.63 s (44,700 per second); set from the slower, 8.9 s per unit
at 0.112 units per second."""


def build_units(elements: int, per_unit: float) -> float:
    """Predicted deterministic units of a step processing ``elements`` at ``per_unit`` each.

    Examples
    --------
    >>> build_units(25_000, MODEL_ELEMENTS_PER_UNIT)
    0.5
    """
    return elements / per_unit


def affordable(elements: int, per_unit: float, allowance: float) -> bool:
    """Whether a step of ``elements`` fits ``allowance`` units: the size-based cap that keeps
    uncounted Python and presolve work inside the limit without reading the clock.

    Examples
    --------
    >>> affordable(25_000, MODEL_ELEMENTS_PER_UNIT, 0.5), affordable(25_001, MODEL_ELEMENTS_PER_UNIT, 0.5)
    (True, False)
    """
    return build_units(elements, per_unit) <= allowance


def combine_stops(stops) -> str:
    """The most serious of several ``stopped_by`` values (None and unknown words ignored).

    Examples
    --------
    >>> combine_stops(["finished", "deterministic_budget", None])
    'deterministic_budget'
    >>> combine_stops(["deterministic_budget", "wall_clock"])
    'wall_clock'
    >>> combine_stops([])
    'finished'
    """
    present = set(stops)
    return next((s for s in _STOP_ORDER if s in present), "finished")


def is_reproducible(stopped_by: str) -> bool:
    """Whether a run that stopped this way repeats byte for byte (same problem, seed, workers).

    Examples
    --------
    >>> is_reproducible("deterministic_budget"), is_reproducible("wall_clock")
    (True, False)
    """
    return stopped_by not in ("wall_clock", "time_limit")


def run_summary(search: str, stops) -> dict[str, Any]:
    """What a whole run (several solves) says about its search: ``search``, ``stopped_by``
    (the most serious of ``stops``) and ``reproducible``.

    Examples
    --------
    >>> run_summary("deterministic", ["deterministic_budget", "finished"])
    {'search': 'deterministic', 'stopped_by': 'deterministic_budget', 'reproducible': True}
    >>> run_summary("deterministic", ["wall_clock"])["reproducible"]
    False
    >>> run_summary("until-limit", ["finished"])
    {'search': 'until-limit', 'stopped_by': 'finished', 'reproducible': False}
    """
    stopped_by = combine_stops(stops)
    return {"search": search, "stopped_by": stopped_by,
            "reproducible": search == DETERMINISTIC and is_reproducible(stopped_by)}


@dataclass
class Budget:
    """A work budget (``total`` units) with a wall-clock deadline; see the module docstring.

    Deterministic search counts in the family's units and charges what each stage reports;
    until-limit search counts in wall seconds elapsed since the budget started.

    Examples
    --------
    >>> b = Budget.start(1.0, Calibration("x", 2.0))
    >>> b.share(0.5), b.wall_expired(), b.deterministic
    (1.0, False, True)
    >>> u = Budget.start(1.0, Calibration("x", 2.0), search=UNTIL_LIMIT)
    >>> u.total, u.reproducible
    (1.0, False)
    """

    total: float
    wall_deadline: float
    search: str = DETERMINISTIC
    rate: float = 1.0  # the family's units per second of limit (converts fixed-size steps)
    started: float = field(default_factory=time.perf_counter)
    charged: float = 0.0
    stopped_by: str | None = None
    log: list[dict[str, Any]] = field(default_factory=list)
    # How the last :meth:`run_cpsat` stopped (:meth:`account`'s word).
    last_stop: str | None = None

    @classmethod
    def start(cls, time_limit_s: float, calibration: Calibration, *, search: str = DETERMINISTIC,
              workers: int = 1, t0: float | None = None) -> "Budget":
        """The budget of one solve of ``time_limit_s`` seconds with ``workers`` CP-SAT workers
        (net or limit from ``t0``)."""
        if search not in SEARCH_MODES:
            raise ValueError(f"search must be one of {SEARCH_MODES}, got {search!r}")
        t0 = time.perf_counter() if t0 is None else t0
        total = calibration.units(time_limit_s, workers)
        rate = total / time_limit_s if time_limit_s > 0 else calibration.units_per_second
        if search == UNTIL_LIMIT:
            return cls(time_limit_s, t0 + time_limit_s, search, rate, started=t0)
        return cls(max(1e-3, total), t0 + net_seconds(time_limit_s), search, rate, started=t0)

    @classmethod
    def of(cls, options: SolveOptions, calibration: Calibration, t0: float | None = None) -> "Budget":
        """:meth:`start` from a solver's options (``time_limit_s``, ``num_workers``, ``search``)."""
        return cls.start(options.time_limit_s, calibration, search=options.search, workers=options.num_workers,
                         t0=t0)

    def child(self, amount: float) -> "Budget":
        """A budget of ``amount`` of this one's units for a nested solve, same net;
        :meth:`absorb` charges what it used back here."""
        amount = max(0.0, min(amount, self.left)) if self.deterministic else max(0.0, amount)
        if self.deterministic:
            return Budget(max(1e-3, amount), self.wall_deadline, self.search, self.rate)
        return Budget(amount, min(self.wall_deadline, time.perf_counter() + amount), self.search, self.rate)

    def absorb(self, child: "Budget", stage: str) -> None:
        """Charge what ``child`` used to this budget (one log line) and inherit a net stop."""
        used = child.used if self.deterministic else 0.0
        self.note(stage, used, stopped_by=child.stopped_by or "finished")
        if child.stopped_by in ("wall_clock", "time_limit"):
            self.stopped_by = child.stopped_by

    # ------------------------------------------------------------------ accounting

    @property
    def deterministic(self) -> bool:
        return self.search == DETERMINISTIC

    @property
    def reproducible(self) -> bool:
        return self.deterministic and self.stopped_by != "wall_clock"

    @property
    def used(self) -> float:
        if self.deterministic:
            return self.charged
        return time.perf_counter() - self.started

    @property
    def left(self) -> float:
        return max(0.0, self.total - self.used)

    def share(self, fraction: float) -> float:
        """``fraction`` of what is left (deterministic: depends only on what was charged)."""
        return fraction * self.left

    def scale(self, units: float) -> float:
        """A fixed-size step of ``units`` deterministic units, in this budget's units
        (seconds at the family's rate for until-limit search)."""
        return units if self.deterministic else units / self.rate

    def charge(self, units: float) -> None:
        self.charged += max(0.0, float(units))

    def note(self, stage: str, units: float, **facts: Any) -> None:
        """Charge ``units`` to ``stage`` and keep a line for the stats."""
        self.charge(units)
        self.log.append({"stage": stage, "dtime": round(float(units), 6), **facts})
        stop = _STAGE_STOPS.get(facts.get("stopped_by"), facts.get("stopped_by"))
        if stop in ("wall_clock", "time_limit"):
            self._stopped_by_clock()
            stop = self.stopped_by
        if "stopped_by" in facts:
            self.log[-1]["stopped_by"] = stop

    def _stopped_by_clock(self) -> None:
        self.stopped_by = "wall_clock" if self.deterministic else "time_limit"

    # ------------------------------------------------------------------ wall clock

    def wall_left(self) -> float:
        return self.wall_deadline - time.perf_counter()

    def wall_expired(self) -> bool:
        """Whether the clock ran out (recorded in :attr:`stopped_by`)."""
        if time.perf_counter() > self.wall_deadline:
            self._stopped_by_clock()
            return True
        return False

    def deadline(self, amount: float) -> float:
        """The ``time.perf_counter()`` deadline of a Python stage granted ``amount`` units:
        the net (deterministic; the stage stops on its counted work) or ``amount`` seconds."""
        if self.deterministic:
            return self.wall_deadline
        return min(self.wall_deadline, time.perf_counter() + max(0.0, amount))

    def work(self, amount: float, per_unit: float, cap: int | None = None) -> int:
        """Counted work a Python stage granted ``amount`` units may do (``per_unit`` per unit);
        until-limit search: unbounded (the stage stops on :meth:`deadline`) unless ``cap``."""
        if self.deterministic:
            count = int(max(0.0, amount) * per_unit)
            return count if cap is None else min(cap, count)
        return cap if cap is not None else 2 ** 62

    # ------------------------------------------------------------------ CP-SAT

    def limits(self, options: SolveOptions, amount: float, interleave: bool = True) -> dict[str, Any]:
        """CP-SAT parameters for a stage granted ``amount`` units.

        Deterministic: ``max_deterministic_time = amount`` and ``interleave_search`` whenever
        several workers run (CP-SAT's multi-worker search is deterministic only in interleaved
        batches) or ``interleave`` asks for it (one worker: the interleaved portfolio includes
        LNS), in batches of one task per worker: CP-SAT checks the deterministic limit between
        batches, and its default batch of three tasks per worker overshot a 0.96-unit limit to
        4.3 units on the demo's 34-op segment floor (19.5 CPU-s; batches of two: 0.98 units,
        2.9 CPU-s, a bound one cycle lower). The net is a :class:`~solvers.cpsat_support.WallNet`
        (see :meth:`net`), CP-SAT's own wall limit only a far backstop. Until-limit: ``amount`` wall seconds (within the
        deadline), no deterministic limit, CP-SAT's plain parallel portfolio for several workers.

        Examples
        --------
        >>> prm = Budget.start(10, SCHEDULING).limits(SolveOptions(num_workers=2), 0.3, interleave=False)
        >>> prm["max_deterministic_time"], prm["interleave_search"]
        (0.3, True)
        """
        if self.deterministic:
            interleaved = bool(interleave or options.num_workers > 1)
            return {"max_deterministic_time": max(1e-3, amount), "interleave_search": interleaved,
                    # batches of one task per worker (CP-SAT's default is three): a solve stops
                    # at most one small batch after its limit
                    **({"interleave_batch_size": options.num_workers} if interleaved else {}),
                    "max_time_in_seconds": 2 * max(0.0, self.wall_left()) + 60.0}
        return {"max_time_in_seconds": max(0.05, min(amount, self.wall_left())),
                "interleave_search": bool(interleave and options.num_workers == 1)}

    def net(self) -> WallNet | None:
        """The wall-clock safety net for a CP-SAT stage starting now (None in until-limit search,
        where CP-SAT's own time limit is the point)."""
        return WallNet(self.wall_left()) if self.deterministic else None

    def account(self, solver: cp_model.CpSolver, status: Status, amount: float, net: WallNet | None,
                stage: str | None, **facts: Any) -> str:
        """Charge what a CP-SAT stage used, log it (unless ``stage`` is None: the caller logs a
        summary of many small solves), and return how it stopped: ``"wall_clock"`` exactly
        when the net fired, ``"deterministic_budget"`` for any other stop without a proof (the
        deterministic limit, which CP-SAT may overshoot by a batch, or CP-SAT running out of
        work to schedule: both repeat), ``"time_limit"`` for an until-limit stage that did not
        finish, else ``"finished"`` (proved optimal or infeasible)."""
        used = solver.deterministic_time if self.deterministic else solver.wall_time
        stopped = "finished"
        if status not in (Status.OPTIMAL, Status.INFEASIBLE):
            if not self.deterministic:
                stopped = "time_limit"
            elif net is not None and net.fired:
                stopped = "wall_clock"
            else:
                stopped = "deterministic_budget"
        elif net is not None and net.fired:
            stopped = "wall_clock"  # proved, but perhaps only because the net cut a batch short
        self.charge(used)
        if stage is not None:
            self.log.append({"stage": stage, "dtime": round(float(used), 6), "status": status.value,
                             "stopped_by": stopped, **facts})
        if stopped in ("wall_clock", "time_limit"):
            self._stopped_by_clock()
        _LOG.debug("%s: %s, %.4f units in %.2f s, %s", stage, status.value, used, solver.wall_time, stopped)
        return stopped

    def run_cpsat(self, model: cp_model.CpModel, options: SolveOptions, amount: float, stage: str | None,
                  *, interleave: bool = True, callback: cp_model.CpSolverSolutionCallback | None = None,
                  **params: Any) -> tuple[Status, cp_model.CpSolver, tuple[ProgressPoint, ...]]:
        """Solve ``model`` within ``amount`` units (:meth:`limits`, :meth:`net`) and charge what
        it used; every budgeted CP-SAT solve in ``solvers/`` runs here.

        ``amount`` may exceed what is left (a stage promised a minimum). ``stage`` names the
        stats line (None: the caller logs a summary of many small solves); :attr:`last_stop`
        then says how this solve stopped (see :meth:`account`). Workers, seed,
        logging and progress come from ``options`` (hints are in the model); ``callback``
        and ``params`` go to :func:`~solvers.cpsat_support.run_cpsat`.

        Examples
        --------
        >>> m = cp_model.CpModel(); x = m.new_int_var(0, 5, "x"); m.maximize(x)
        >>> b = Budget.start(1.0, SCHEDULING)
        >>> status, solver, _ = b.run_cpsat(m, SolveOptions(), 0.05, "demo")
        >>> status.value, solver.value(x), b.log[-1]["stage"], b.log[-1]["stopped_by"]
        ('OPTIMAL', 5, 'demo', 'finished')
        """
        amount = max(1e-3, amount)
        limits = self.limits(options, amount, interleave)
        wall = limits.pop("max_time_in_seconds")
        net = self.net()
        status, solver, points = run_cpsat(model, options, wall, net=net, callback=callback, **limits, **params)
        self.last_stop = self.account(solver, status, amount, net, stage)
        return status, solver, points

    def proven_lower_bound(self, model: cp_model.CpModel, options: SolveOptions, amount: float, stage: str,
                           floor: int) -> int:
        """The larger of ``floor`` and the bound CP-SAT proves on ``model``'s minimum within
        ``amount`` units (:meth:`run_cpsat`, one worker's search not interleaved); ``floor``
        alone when the model is infeasible or invalid (a relaxation that cannot be built says
        nothing). Sound whatever stops the search: the proven bound, not the incumbent.

        Examples
        --------
        >>> m = cp_model.CpModel(); x = m.new_int_var(3, 9, "x"); m.minimize(x)
        >>> Budget.start(1.0, SCHEDULING).proven_lower_bound(m, SolveOptions(), 0.05, "demo", 1)
        3
        """
        return self.proven_bound_and_incumbent(model, options, amount, stage, floor)[0]

    def proven_bound_and_incumbent(self, model: cp_model.CpModel, options: SolveOptions, amount: float,
                                   stage: str | None, floor: int) -> tuple[int, tuple[int, list[int]] | None]:
        """:meth:`proven_lower_bound`, with the incumbent CP-SAT found on the way (its objective
        and its values in proto order; None without one, or when the model is infeasible or
        invalid), for a caller that hints or realises it.

        Examples
        --------
        >>> m = cp_model.CpModel(); x = m.new_int_var(3, 9, "x"); m.minimize(x)
        >>> Budget.start(1.0, SCHEDULING).proven_bound_and_incumbent(m, SolveOptions(), 0.05, "demo", 1)
        (3, (3, [3]))
        """
        status, solver, _ = self.run_cpsat(model, options, amount, stage, interleave=False)
        if status.value in ("INFEASIBLE", "MODEL_INVALID"):
            return floor, None
        found = (round(solver.objective_value), list(solver.response_proto.solution)) if status.has_solution else None
        return max(floor, integer_objective_bound(solver)), found

    def stats(self) -> dict[str, Any]:
        """``search``, ``dtime_budget``, ``dtime_used`` (deterministic units; seconds for
        until-limit), ``stopped_by`` and the per-stage lines."""
        return {"search": self.search, "dtime_budget": round(self.total, 6), "dtime_used": round(self.used, 6),
                "stopped_by": self.stop_word(), "stages": list(self.log)}

    def stop_word(self) -> str:
        """How the whole budget ended: a clock stop if any stage had one, else
        ``"deterministic_budget"`` if a stage ran out of budget, else ``"finished"``."""
        if self.stopped_by in ("wall_clock", "time_limit"):
            return self.stopped_by
        return combine_stops(line.get("stopped_by") for line in self.log)
