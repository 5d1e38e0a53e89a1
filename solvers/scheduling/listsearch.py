"""Priority-list local search with forward-backward improvement, for fixed placements.

When every op may use exactly one device, no memory limit is set and no edge between
devices costs a transfer cycle, a :class:`SchedulingProblem` is a resource-constrained
project with unit demands: device d is a resource of capacity ``device_streams[d]`` and
the only other rule is precedence. One device with p streams is P|prec|Cmax (the STG set,
see ``planner.importers.stg``); one device per machine with pinned ops is a job shop.
:func:`fixed_placement` recognises the case; :func:`list_search` searches it.

Notes
-----
**Serial schedule generation (SGS).** Ops are taken from a precedence-feasible list one
at a time and started at the earliest cycle, not before their predecessors end, at which
their device has a free stream for the whole duration (earlier gaps are filled: this is
"insertion"). Any list yields a feasible schedule, and the schedules serial SGS generates
(the *active* schedules) include an optimal one for the makespan [1]_, so searching
lists loses nothing. Device occupancy is a byte array indexed by cycle (``usage[t]`` ops
running at t), so the fit test is one ``bytearray.find`` of the "full" byte over the
op's window, in C; the array is as long as the sum of the durations (no SGS schedule is
longer), so :func:`fixed_placement` refuses problems whose durations sum past
``max_horizon``.

**Forward-backward improvement (double justification)** [2]_. Given a schedule, run SGS
on the reversed graph with the ops by decreasing end (this right-justifies them), then
forward again by increasing start in that reversed schedule; repeat while the makespan
drops. A list sorted by the starts of a feasible schedule makes SGS start every op no
later than that schedule does (at each cycle of the op's window only ops that started no
later, and now end no later, can be running), so neither pass lengthens the schedule.
Ties in the sort keys go to topological position, so zero-duration ops keep their
predecessors first.

**Search.** The first lists are the bottom-level priority (longest path to a sink,
op included; the critical-path rule) and, when given, the warm start's own start order.
Each step then either (with probability ``restart_probability``) draws a fresh list from
the bottom levels scaled by random factors in ``[1, 1.3]``, or perturbs the current
list's keys (the starts of the current schedule): ``n / 20`` random ops move by up to two
mean durations, and every key gets a little noise to reorder ties. The justified result
replaces the current schedule when it is no longer (plateau moves are accepted), and the
best is kept. The search stops at ``target`` (a proven lower bound: nothing shorter
exists) or when ``work`` op placements have been spent: the budget is counted, never
timed, so the same problem, seed and work give the same schedule.

Measured (the 1,440 STG instances, 2-16 processors, seed 0, no warm start, one core of a
2-core machine at load 0.5-1): with 200,000 placements, 1,437 within the published optimum
or bounds on their own and 1,340 at the static lower bound (so proven optimal), 29 ms per
instance on average and at most 0.6 s; with 100,000 (what a 5-s limit grants in
:class:`~solvers.scheduling.cpsat.CpSatScheduler`), 1,435 and 1,338, 18 ms and 0.36 s.
HEFT alone matches 1,016.

References
----------
.. [1] R. Kolisch, "Serial and parallel resource-constrained project scheduling methods
   revisited: theory and computation", EJOR 90(2), 1996.
.. [2] V. Valls, F. Ballestin, S. Quintanilla, "Justification and RCPSP: a technique that
   pays", EJOR 165(2), 2005.
"""

from __future__ import annotations

import heapq
import random
import re
import time
from dataclasses import dataclass
from typing import Any

from solvers.budget import Budget, Calibration
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.scheduling.bounds import topological_order
from solvers.scheduling.problem import (Objective, ScheduledTransfer, SchedulingProblem,
                                        SchedulingSolution)
from solvers.scheduling.streams import assign_streams

__all__ = ["ListSearchOptions", "ListSearchScheduler", "fixed_placement", "list_search"]

_INC = bytes(range(1, 256)) + b"\0"  # bytes.translate table: every byte + 1
_MAX_HORIZON = 1 << 22


@dataclass(frozen=True, slots=True)
class ListSearchOptions:
    """Tunables of :func:`list_search`.

    Examples
    --------
    >>> ListSearchOptions().restart_probability
    0.1
    """

    # Share of the steps that draw a fresh list from the bottom levels instead of
    # perturbing the current one.
    restart_probability: float = 0.1
    # Each perturbation moves about num_ops / perturb_divisor ops.
    perturb_divisor: int = 20
    # ... by up to this many mean op durations.
    perturb_amplitude: float = 2.0
    # Refuse problems whose durations sum past this (the occupancy arrays' length).
    max_horizon: int = _MAX_HORIZON


def fixed_placement(problem: SchedulingProblem,
                    max_horizon: int = _MAX_HORIZON) -> tuple[int, ...] | None:
    """Each op's only device when :func:`list_search` applies, else None.

    It applies to LATENCY problems where every op has exactly one allowed device, no
    memory limit can bind (the bytes that could ever sit on the device fit), colocation groups already share their device, every edge
    between two devices has a link with a zero-cycle transfer, and the durations sum to
    at most ``max_horizon`` cycles.

    Examples
    --------
    >>> p = SchedulingProblem(((3,), (4,)), ((0, 1, 0),), (2,), ((-1,),), ((),))
    >>> fixed_placement(p)
    (0, 0)
    >>> fixed_placement(SchedulingProblem(((3, 3),), (), (1, 1), ((-1, 0), (0, -1)), ())) is None
    True
    """
    if problem.objective is not Objective.LATENCY:
        return None
    placement = []
    for i in range(problem.num_ops):
        allowed = problem.allowed_devices(i)
        if len(allowed) != 1:
            return None
        placement.append(allowed[0])
    # every byte that could ever sit on the device (a shared weight or input once)
    landing = [problem.device_resident_bytes(d, placement) for d in range(problem.num_devices)]
    for i, d in enumerate(placement):
        landing[d] += problem.output_bytes(i)
    for u, v, b in problem.edges:
        if placement[u] != placement[v]:
            landing[placement[v]] += b
    if any(0 < problem.memory_bytes(d) < landing[d] for d in range(problem.num_devices)):
        return None
    for group in problem.colocation_groups:
        if len({placement[i] for i in group}) > 1:
            return None
    for e, (u, v, _) in enumerate(problem.edges):
        a, b = placement[u], placement[v]
        if a != b and (problem.link_of[a][b] < 0
                       or problem.transfer_cycles[e][problem.link_of[a][b]] != 0):
            return None
    total = sum(problem.durations_cycles[i][placement[i]] for i in range(problem.num_ops))
    if total > max_horizon:
        return None
    return tuple(placement)


class _Sgs:
    """Serial SGS with insertion and double justification over one fixed placement."""

    def __init__(self, problem: SchedulingProblem, placement: tuple[int, ...]) -> None:
        n = problem.num_ops
        self.n = n
        self.dur = [problem.durations_cycles[i][placement[i]] for i in range(n)]
        preds: list[list[int]] = [[] for _ in range(n)]
        succs: list[list[int]] = [[] for _ in range(n)]
        for u, v, _ in problem.edges:
            preds[v].append(u)
            succs[u].append(v)
        self.preds = [tuple(x) for x in preds]
        self.succs = [tuple(x) for x in succs]
        self.device = placement
        # capacity as a byte (devices with at least as many streams as ops never fill up)
        # and a pattern matching any cycle with a free stream
        self.full = [bytes([s]) if s < min(n, 255) else None for s in problem.device_streams]
        self.free = [re.compile(b"[\\x00-" + re.escape(bytes([s - 1])) + b"]")
                     if s < min(n, 255) else None for s in problem.device_streams]
        self.length = sum(self.dur) + 1
        self.pos = [0] * n
        for k, i in enumerate(topological_order(problem)):
            self.pos[i] = k
        self.work = 0  # op placements so far: the deterministic budget's unit

    def place(self, order, preds) -> tuple[list[int], int]:
        """Ends of every op when placed in ``order`` (``preds``: the direction's predecessors)."""
        self.work += self.n
        dur, device, full, free = self.dur, self.device, self.full, self.free
        usage = [bytearray(self.length) if f is not None else None for f in full]
        end = [0] * self.n
        makespan = 0
        for i in order:
            t = 0
            for u in preds[i]:
                if end[u] > t:
                    t = end[u]
            d = dur[i]
            use = usage[device[i]]
            if d and use is not None:
                f = full[device[i]]
                j = use.find(f, t, t + d)
                while j >= 0:  # a full cycle at j: retry from the next cycle with a free stream
                    t = free[device[i]].search(use, j + 1).start()
                    j = use.find(f, t, t + d)
                use[t:t + d] = use[t:t + d].translate(_INC)
            t += d
            end[i] = t
            if t > makespan:
                makespan = t
        return end, makespan

    def justify(self, order) -> tuple[int, list[int]]:
        """Forward SGS of ``order``, then backward/forward passes while the makespan drops.

        Returns the makespan and the starts of the last forward schedule.
        """
        n, dur, pos = self.n, self.dur, self.pos
        end, makespan = self.place(order, self.preds)
        while True:
            back = sorted(range(n), key=lambda i: (-end[i], -pos[i]))
            rev_end, _ = self.place(back, self.succs)
            fwd = sorted(range(n), key=lambda i: (-rev_end[i], pos[i]))
            end2, makespan2 = self.place(fwd, self.preds)
            if makespan2 >= makespan:  # never longer (module Notes); equal: keep it left-justified
                if makespan2 == makespan:
                    end = end2
                return makespan, [end[i] - dur[i] for i in range(n)]
            end, makespan = end2, makespan2

    def order_by(self, key) -> list[int]:
        """Topological order taking the smallest ``(key, op)`` among the ready ops."""
        preds, succs = self.preds, self.succs
        indeg = [len(p) for p in preds]
        heap = [(key[i], i) for i in range(self.n) if not indeg[i]]
        heapq.heapify(heap)
        out = []
        while heap:
            _, i = heapq.heappop(heap)
            out.append(i)
            for v in succs[i]:
                indeg[v] -= 1
                if not indeg[v]:
                    heapq.heappush(heap, (key[v], v))
        return out

    def bottom_levels(self) -> list[int]:
        level = [0] * self.n
        for i in sorted(range(self.n), key=lambda k: -self.pos[k]):
            level[i] = self.dur[i] + max((level[v] for v in self.succs[i]), default=0)
        return level


def list_search(problem: SchedulingProblem, work: int, *, seed: int = 0, target: int = 0,
                hint: SchedulingSolution | None = None,
                options: ListSearchOptions = ListSearchOptions(), deadline_s: float | None = None,
                ) -> tuple[SchedulingSolution | None, dict[str, Any]]:
    """The shortest schedule the seeded list search finds within ``work`` op placements.

    Parameters
    ----------
    problem : SchedulingProblem
        Must satisfy :func:`fixed_placement` (else the result is None).
    work : int
        Budget in op placements (one SGS pass places every op).
    seed : int
        Seed of the search's own random generator.
    target : int
        Stop as soon as the makespan is at most this (a proven lower bound).
    hint : SchedulingSolution, optional
        A schedule whose start order is tried first.
    deadline_s : float, optional
        A ``time.perf_counter()`` time at which to stop anyway: a wall-clock safety net (the
        result then depends on the machine's speed, and ``stats["stopped_by"]`` says so).

    Returns
    -------
    (solution, stats)
        ``stats``: ``work`` spent, ``steps``, ``makespan``, the ``work_at_best`` and
        ``stopped_by`` (``"target"``, ``"work"`` or ``"wall_time"``).

    Examples
    --------
    Five ops on two streams: a(2) -> {b(3), c(3), d(2)}, then e(3) after b. The bottom
    levels (a 8, b 6, c 3, e 3, d 2) put b and c on the streams after a, leaving d and e
    for cycle 5: makespan 8 = a + b + e, the critical path, so the search stops there.

    >>> p = SchedulingProblem(((2,), (3,), (3,), (2,), (3,)),
    ...                       ((0, 1, 0), (0, 2, 0), (0, 3, 0), (1, 4, 0)), (2,), ((-1,),),
    ...                       ((),) * 4)
    >>> sol, stats = list_search(p, 1000, target=8)
    >>> sol.makespan_cycles, sol.op_start
    (8, (0, 2, 2, 5, 5))
    """
    placement = fixed_placement(problem, options.max_horizon)
    if placement is None or problem.num_ops == 0:
        return None, {"work": 0, "steps": 0}
    sgs = _Sgs(problem, placement)
    rng = random.Random(seed)
    base = [-b for b in sgs.bottom_levels()]
    best_ms, best_starts = sgs.justify(sgs.order_by(base))
    work_at_best = sgs.work
    if hint is not None and tuple(hint.op_device) == placement:
        ms, starts = sgs.justify(sgs.order_by(list(hint.op_start)))
        if ms < best_ms:
            best_ms, best_starts, work_at_best = ms, starts, sgs.work
    cur_ms, cur_key = best_ms, best_starts
    perturb = _Perturbation.of(sgs, options)
    steps = 0
    stopped = "target"
    while best_ms > target:
        if sgs.work >= work:
            stopped = "work"
            break
        if deadline_s is not None and time.perf_counter() > deadline_s:
            stopped = "wall_time"
            break
        steps += 1
        key = perturb.next_key(rng, base, cur_key)
        ms, starts = sgs.justify(sgs.order_by(key))
        if ms <= cur_ms:
            cur_ms, cur_key = ms, starts
        if ms < best_ms:
            best_ms, best_starts, work_at_best = ms, starts, sgs.work
    solution = _solution(problem, placement, best_starts, sgs.dur)
    return solution, {"work": sgs.work, "steps": steps, "makespan": best_ms,
                      "work_at_best": work_at_best, "stopped_by": stopped}


@dataclass(frozen=True)
class _Perturbation:
    """How the search draws its next priority key: a restart near the bottom levels, or the
    current schedule's start times with a few ops moved and a little noise on every key."""

    restart_probability: float
    amplitude: int  # the largest move of one op's key, in cycles
    moves: int  # ops moved per step
    noise: float  # the noise's scale, which breaks ties between equal keys

    @classmethod
    def of(cls, sgs: "_Sgs", options: ListSearchOptions) -> "_Perturbation":
        """Moves scaled to the ops' mean positive duration and their number."""
        positive = [d for d in sgs.dur if d > 0]
        mean = sum(positive) / len(positive) if positive else 1.0
        return cls(options.restart_probability, max(1, round(options.perturb_amplitude * mean)),
                   max(1, sgs.n // options.perturb_divisor), 0.1 * mean)

    def next_key(self, rng: random.Random, base: list[float], current: list[float]) -> list[float]:
        """The next key to justify (the random draws in a fixed order, so a seed repeats)."""
        if rng.random() < self.restart_probability:
            return [b * (1.0 + 0.3 * rng.random()) for b in base]
        key = list(current)
        for _ in range(self.moves):
            key[rng.randrange(len(key))] += rng.randint(-self.amplitude, self.amplitude)
        return [k + self.noise * rng.random() for k in key]


def _solution(problem: SchedulingProblem, placement, starts, dur) -> SchedulingSolution:
    stream = assign_streams(problem, placement, starts, dur)
    transfers = []
    for e, (u, v, _) in enumerate(problem.edges):
        a, b = placement[u], placement[v]
        if a != b:
            transfers.append(ScheduledTransfer(e, problem.link_of[a][b], starts[u] + dur[u], 0))
    return SchedulingSolution(tuple(placement), stream, tuple(starts), tuple(dur),
                              tuple(transfers))


class ListSearchScheduler(Accepting):
    """:func:`list_search` as a :class:`~solvers.core.Solver` (FEASIBLE, no bound).

    Parameters
    ----------
    work_per_second : int
        Op placements granted per second of ``SolveOptions.time_limit_s`` (counted, so
        the result does not depend on the machine's speed; ~5-15 us each on a busy core).
        ``SolveOptions.search == "until-limit"`` searches until the time limit instead.

    Examples
    --------
    >>> p = SchedulingProblem(((3,), (4,), (2,)), ((0, 2, 0),), (2,), ((-1,),), ((),))
    >>> r = ListSearchScheduler().solve(p, SolveOptions(time_limit_s=1))
    >>> r.status.value, r.objective
    ('FEASIBLE', 5)
    """

    name = "list-search"
    problem_type = SchedulingProblem

    def __init__(self, work_per_second: int = 20_000,
                 options: ListSearchOptions = ListSearchOptions()) -> None:
        self.work_per_second = work_per_second
        self.options = options

    def refusal(self, problem: SchedulingProblem) -> str | None:
        """Why :func:`list_search` cannot take ``problem`` (see :func:`fixed_placement`), or None.

        Examples
        --------
        >>> two_devices = SchedulingProblem(((3, 3),), (), (1, 1), ((-1, 0), (0, -1)), ())
        >>> ListSearchScheduler().refusal(two_devices)
        'list-search needs a fixed placement with free transfers and no binding memory limit'
        """
        refused = Accepting.refusal(self, problem)
        if refused is not None:
            return refused
        if problem.num_ops == 0:
            return "list-search needs at least one op"
        if fixed_placement(problem, self.options.max_horizon) is None:
            return "list-search needs a fixed placement with free transfers and no binding memory limit"
        return None

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        budget = Budget.of(options, Calibration("list-search", self.work_per_second), t0)
        sol, stats = list_search(problem, budget.work(budget.total, 1.0), seed=options.random_seed,
                                 hint=options.hint, options=self.options, deadline_s=budget.deadline(budget.total))
        budget.note("list_search", stats["work"] if budget.deterministic else 0.0,
                    stopped_by=stats.get("stopped_by", "finished"))
        stats.update(budget.stats())
        wall = time.perf_counter() - t0
        if sol is None:
            return failure_result(Status.UNKNOWN, self.name, wall, None,
                                  reason="placement is not fixed or transfers cost cycles")
        return SolveResult(Status.FEASIBLE, sol.makespan_cycles, None, sol, wall, self.name,
                           stats)
