"""Placement large-neighbourhood search: re-place small sets of ops, sequence every trial
placement with HEFT, keep only improvements.

Notes
-----
The contiguous split (:mod:`solvers.scheduling.contiguous`) cuts one order into blocks; on the
dnn-partitioning ResNet-50 layer graph its best placement is proven optimal *for that
placement* by CP-SAT, so only a placement that is not a contiguous split can do better. This
search walks from any valid start (the best start the scheduler has) through such placements:

1. **Neighbourhood** (seeded by ``random.Random(seed)``, never by the clock), one of

   * ``transfer``: a cross-device edge ``u -> v`` on the critical path of the incumbent
     schedule (the chain of ops, transfers and stream waits that ends last); the window of
     up to ``max_window`` consecutive ops of the order ending at ``u`` moves to ``v``'s
     device, or the one starting at ``v`` to ``u``'s (the boundary of two blocks shifts and
     the transfer, or a cheaper one, takes its place);
   * ``window``: a window of consecutive ops of the order around a critical op;
   * ``branch``: a chain branch of a fork (the ops after one successor of the fork with one
     predecessor and one successor each, up to the join), so parallel branches of a
     ResNet block or an Inception module may run on different devices;
   * ``route`` (in sweeps once the search stalls, ``route_after_idle``): for a cross-device
     edge of the critical chain whose link also carries another transfer, the receiving ops
     of that transfer or of its neighbours in the link's queue (the receiver and the ops
     after it in the order on its device, every length up to ``max_window``) move to a
     *third* device, so two transfers that left one device over one link in turn take two
     links at once (module Notes, **Routes**).

2. **Targets**: the devices of the set's neighbours in the graph and the order, and the
   first device of every pool (:class:`~solvers.scheduling.path_bounds.DevicePools`) that the
   incumbent leaves idle. Each target whose memory holds the moved weights is a trial
   placement (ops that cannot run there stay put).
3. **Evaluation**: HEFT with the placement fixed (:func:`~solvers.scheduling.heft.heft_schedule`,
   the true rules: streams, links, activation memory), by default taking ready ops by the
   upward ranks *of that placement* (:class:`~solvers.scheduling.heft.PlacedRanks`: each op's
   own duration and the transfers of the edges it cuts, not HEFT's averages over devices, which
   put a CPU-capable op ahead of the ops feeding a cut); the start's own placement is first
   re-sequenced that way. The best trial of the neighbourhood
   replaces the incumbent when its key ``(makespan, sum of op ends)`` is not larger: the
   second term moves the search along plateaus of equal makespan, where an earlier finish of
   the ops off the critical path frees the way for the next move. (Late acceptance,
   ``history > 1``, may also take a trial not worse than the incumbent some neighbourhoods
   ago; off by default, see :class:`PlacementLnsOptions`.)

**Routes.** Where a block input feeds both the main chain and the shortcut of a residual
block and memory forces the block onto another device, both transfers cross the same link one
after the other. Moving the main chain to a third device C (any device of a pool other than the
two ends that can hold it, not only an idle one or a neighbour, which the other kinds offer)
sends the two copies over two links at once; the chain's result comes back to the join later,
after the chain has shrunk the tensor. Its targets are the devices of the receiver's pool (idle
ones, at most ``route_targets``. A route is tried for every length up to ``max_window``: which
stretch pays off depends on where the chain's tensor shrinks and on the links, which the
evaluation sees and a proxy does not (random lengths, or the three stretches whose crossing
edges carry least, missed the winning one on two of three seeds of ResNet-50 operators).

Sweeps start only once the search stalls (``route_after_idle`` neighbourhoods without a shorter
schedule), so the search takes exactly its old steps until then: a route drawn among the other
kinds from the start (30% of the draws) took budget from them and lost on Inception-V3 (seeds
0-2: 1,009.7 / 1,026.9 / 1,008.1 against 966.4 / 988.9 / 968.5 ms at 0.67 units). Measured at
the benchmark's 0.67 units, the start the benchmark gives (2026-11-28, ``PLAN_NET_SLOWDOWN=20``,
load 13-17 on 2 cores): ResNet-50 operators 447.55 -> **435.38** ms on seeds 0, 1 and 2 (53, 53
and 43 routes, 2 improving each; seed 0: 0.106 units, 1.5 CPU seconds of sweeps), Inception-V3
966.43 -> **955.93** (seed 0: one route, which improved, 0.012 units), seeds 1 and 2 997.9 and 967.3
(noise of the path taken; 988.9 and 968.5 before), ResNet-50 layers 999.91 unchanged (128 routes,
none shorter: its shared links are stage 1's, where moving a receiver sends a 191 ms tensor back;
0.048 units, 0.6 CPU seconds).

The returned schedule is the shortest of the start and every accepted schedule, checked by
:func:`~solvers.scheduling.validate.validate_schedule`: never worse than the start.

**Early stop.** With the placement's own ranks, an op that HEFT starts at ``s`` has a chain of
``rank`` cycles after it whatever the sequencing, so the trial's makespan is at least ``s +
rank``; once that exceeds the incumbent's makespan (the largest late acceptance allows) the trial
cannot be accepted and stops (:func:`~solvers.scheduling.heft.heft_schedule_within`). Only
trials that would be rejected stop, so the search takes the same steps as with whole passes,
only more of them in a budget. Measured at the benchmark's 0.67 units (seeds 0-2, load 12-13):
Inception-V3 989.6 / 1,038.6 / 995.9 -> 966.4 / 988.9 / 968.5 ms (2,062-2,470 trials instead of
972; 97% stop early, after 40% of the ops on average); ResNet-50 layers 999.9 each (it now ends
on ``max_idle`` after 1.3-1.7 CPU seconds instead of its budget: 99% stop early, after 6% of the
ops); ResNet-50 operators 447.8 -> 447.5 (seed 0).

**Budget.** Counted, never timed: every whole HEFT pass is charged ``(ops + edges) /``
:data:`HEFT_ELEMENTS_PER_UNIT` units of the caller's :class:`~solvers.budget.Budget` (HEFT with
a fixed placement visits each op and edge once); a trial that stops early is charged
:data:`TRIAL_OVERHEAD` of a pass plus the rest in proportion to the ops it placed. A trial starts
only when a whole pass fits, and the search stops when it does not or ``max_idle``
neighbourhoods in a row brought nothing. Same problem, start,
seed and budget: same result, on any machine (the wall-clock net of the budget aside).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from solvers.budget import Budget, build_units
from solvers.scheduling.contiguous import sources_at_first_use
from solvers.scheduling.forced import colocation_closure
from solvers.scheduling.heft import PlacedRanks, heft_schedule_within, upward_ranks
from solvers.scheduling.path_bounds import DevicePools
from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
from solvers.scheduling.resident import ResidentLedger
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["HEFT_ELEMENTS_PER_UNIT", "TRIAL_OVERHEAD", "PlacementLnsOptions", "SOURCE", "critical_path", "placement_lns",
           "shared_link_queues"]

SOURCE = "placement LNS"  # the hint source the scheduler reports for this candidate

HEFT_ELEMENTS_PER_UNIT = 1_000_000
"""Ops plus edges one HEFT pass with a fixed placement handles per deterministic unit of the
scheduling family (:data:`solvers.budget.SCHEDULING`: one unit is about 14 s of one worker).
Measured 2026-11-28 (load 4-7 on 2 cores): 2,655 passes on the dnn-partitioning ResNet-50
layer graph (177 ops + 193 edges) in 10.9 CPU seconds, about 11 us per element, so 1,000,000
elements are about 11 CPU seconds. The placement's own ranks
(:class:`~solvers.scheduling.heft.PlacedRanks`, one more walk over the ops and edges per pass)
added about 5% (1,810 passes on that graph: 8.2 against 7.8 CPU seconds, load 11-13), within
the constant's precision, so a pass is charged the same."""


TRIAL_OVERHEAD = 0.1
"""The share of a whole pass every trial costs however early it stops: the placement's ranks,
building the trial placement, its key (each a walk over the ops or edges). Checked 2026-11-28
(load 12-13): 0.67 units of Inception-V3 took 7.9-8.1 CPU seconds with early stops (2,062-2,470
trials) and 7.9-8.3 with whole passes (972)."""


@dataclass(frozen=True, slots=True)
class PlacementLnsOptions:
    """Tunables of :func:`placement_lns`.

    Examples
    --------
    >>> PlacementLnsOptions().max_window
    32
    """

    # Longest window of consecutive ops moved at once (short ones are drawn more often).
    max_window: int = 32
    # Stop after this many neighbourhoods in a row that did not shorten the best schedule.
    max_idle: int = 600
    # Late acceptance: a trial may replace the incumbent when it is not worse than the
    # incumbent this many neighbourhoods ago. 1 (descent, ties accepted): at the benchmark's
    # 0.67 units late acceptance over 30 lost (Inception-V3 1,027.5 against 994.6 ms, BERT-L 12
    # 656.6 against 655.8; ResNet-50 layers and operators equal).
    history: int = 1
    # Draw weights of the neighbourhood kinds: transfer, window, branch.
    weights: tuple[int, int, int] = (3, 2, 2)
    # Route sweeps (module Notes, **Routes**): after this many neighbourhoods in a row without a
    # shorter schedule (and again after as many more, when the incumbent changed), try every
    # route of the incumbent's critical chain once; 0 turns them off.
    route_after_idle: int = 200
    route_targets: int | None = None
    # Sequence each trial by the upward ranks of its own placement (heft.PlacedRanks, "placed";
    # a trial then stops as soon as it cannot end by the incumbent, module Notes) or by HEFT's
    # device-averaged ranks ("heft", every pass whole). Before the early stop, at the
    # benchmark's 0.67 units (seed 0): ResNet-50 layers
    # 1,013.6 -> 999.9 ms (also with seeds 1, 2: 1,014.1 / 1,022.7 -> 999.9 / 999.9),
    # Inception-V3 994.6 -> 989.6 (seeds 1, 2: 1,007.2 / 1,028.0 -> 1,038.6 / 995.9: noisy),
    # ResNet-50 operators equal (447.8). Both ranks per trial, the shorter kept (two charged
    # passes, seeds 0-2): ResNet-50 layers 999.9 each, Inception-V3 1,004.9 / 1,028.3 / 1,053.8,
    # ResNet-50 operators 447.8 / 447.5 / 447.8, so that is not offered.
    ranks: str = "placed"


def _heft_units(problem: SchedulingProblem) -> float:
    """The charge of one whole HEFT pass with a fixed placement (module Notes, **Budget**)."""
    return build_units(problem.num_ops + len(problem.edges), HEFT_ELEMENTS_PER_UNIT)


def _pass_share(problem: SchedulingProblem, placed: int) -> float:
    """The share of a whole pass charged for a trial that placed ``placed`` ops:
    :data:`TRIAL_OVERHEAD` for the work every trial does in full, the rest in proportion to the
    ops placed (a whole pass: exactly 1)."""
    return TRIAL_OVERHEAD + (1.0 - TRIAL_OVERHEAD) * placed / max(1, problem.num_ops)


def shared_link_queues(sol: SchedulingSolution) -> dict[int, tuple[tuple[int, ...], int]]:
    """Per edge whose transfer (of positive duration) shares its link with another: (the link's
    edges in the order they cross it, the edge's index in it).

    Examples
    --------
    >>> from solvers.scheduling.problem import ScheduledTransfer
    >>> s = SchedulingSolution((0, 1, 1), (0, 0, 0), (0, 2, 4), (1, 1, 1),
    ...                        (ScheduledTransfer(0, 0, 1, 1), ScheduledTransfer(1, 0, 2, 2)))
    >>> shared_link_queues(s)
    {0: ((0, 1), 0), 1: ((0, 1), 1)}
    """
    by_link: dict[int, list[tuple[int, int]]] = {}
    for t in sol.transfers:
        if t.duration_cycles > 0:
            by_link.setdefault(t.link, []).append((t.start_cycle, t.edge))
    out = {}
    for crossing in by_link.values():
        if len(crossing) > 1:
            queue = tuple(e for _, e in sorted(crossing))
            out.update((e, (queue, k)) for k, e in enumerate(queue))
    return out


def critical_path(problem: SchedulingProblem, sol: SchedulingSolution) -> tuple[list[int], list[int]]:
    """The ops and cross-device edges of one chain that ends last in ``sol``: from the op that
    ends last, back through whatever made each start when it did (a predecessor's end, a
    transfer's end, the previous op on its stream, the previous transfer on its link).

    Examples
    --------
    a -> b across two devices with a 5-cycle transfer, c alone on b's device before b:

    >>> p = SchedulingProblem(((2, 9), (9, 3), (9, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> from solvers.scheduling.problem import ScheduledTransfer
    >>> s = SchedulingSolution((0, 1, 1), (0, 0, 0), (0, 7, 0), (2, 3, 1), (ScheduledTransfer(0, 0, 2, 5),))
    >>> critical_path(p, s)
    ([0, 1], [0])
    """
    end = [sol.op_end(i) for i in range(problem.num_ops)]
    on_stream: dict[tuple[int, int, int], int] = {}
    for i in range(problem.num_ops):
        on_stream[(sol.op_device[i], sol.op_stream[i], end[i])] = i
    transfer = {t.edge: t for t in sol.transfers}
    on_link = {(t.link, t.end_cycle): t for t in sol.transfers if t.duration_cycles > 0}
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for e, (_, v, _) in enumerate(problem.edges):
        preds[v].append(e)
    ops: list[int] = []
    edges: list[int] = []
    i = max(range(problem.num_ops), key=lambda k: (end[k], -k), default=None)
    seen: set[int] = set()
    while i is not None and i not in seen:
        seen.add(i)
        ops.append(i)
        i = _cause(problem, sol, i, preds[i], transfer, on_link, on_stream, edges)
    return ops[::-1], edges[::-1]


def _cause(problem, sol, i, in_edges, transfer, on_link, on_stream, edges) -> int | None:
    """The op that made ``i`` start when it did (recording a transfer on the way in ``edges``)."""
    start = sol.op_start[i]
    for e in in_edges:
        u = problem.edges[e][0]
        t = transfer.get(e)
        if t is None and sol.op_end(u) == start:
            return u
        if t is not None and t.end_cycle == start:
            edges.append(e)
            while t.start_cycle > sol.op_end(problem.edges[t.edge][0]) and (t.link, t.start_cycle) in on_link:
                t = on_link[(t.link, t.start_cycle)]  # queued behind another transfer on the link
            return problem.edges[t.edge][0]
    return on_stream.get((sol.op_device[i], sol.op_stream[i], start))


class _Search:
    """The incumbent placement, its schedule and the neighbourhoods around it."""

    def __init__(self, problem: SchedulingProblem, start: SchedulingSolution, budget: Budget,
                 seed: int, cfg: PlacementLnsOptions) -> None:
        self.problem, self.budget, self.cfg = problem, budget, cfg
        self.rng = random.Random(seed)
        self.ranks = upward_ranks(problem)
        if cfg.ranks not in ("placed", "heft"):
            raise ValueError(f"PlacementLnsOptions.ranks: 'placed' or 'heft', not {cfg.ranks!r}")
        self.placed = PlacedRanks(problem) if cfg.ranks == "placed" else None
        self.order = sources_at_first_use(problem, topological_order(problem))
        self.pos = {op: k for k, op in enumerate(self.order)}
        self.closure = colocation_closure(problem)
        self.pools = DevicePools(problem).pools
        self.succs: list[list[int]] = [[] for _ in range(problem.num_ops)]
        self.preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
        for u, v, _ in problem.edges:
            self.succs[u].append(v)
            self.preds[v].append(u)
        self.branches = self._chain_branches()
        self.schedule = start
        self.key = self._key(start)
        self.critical: tuple[list[int], list[int]] | None = None
        self.route_ends: tuple[int, int] | None = None  # the two ends of the transfer a route avoids
        self.swept: tuple[int, int] | None = None  # the incumbent's key at the last route sweep
        self.history = [self.key] * max(1, cfg.history)
        self.best, self.best_value = start, objective_value(problem, start)
        self.stats: dict[str, Any] = {"neighbourhoods": 0, "evaluations": 0, "ops_placed": 0, "stopped_early": 0,
                                      "accepted": 0,
                                      "route_units": 0.0, "by_kind": {}}

    def _key(self, sol: SchedulingSolution) -> tuple[int, int]:
        return objective_value(self.problem, sol), sum(sol.op_end(i) for i in range(self.problem.num_ops))

    def _chain_branches(self) -> list[tuple[int, ...]]:
        """Per fork and successor: the successor and the ops after it with one predecessor
        and one successor each (the join excluded)."""
        out = []
        for f in self.order:
            if len(self.succs[f]) < 2:
                continue
            for s in self.succs[f]:
                chain = []
                while len(self.preds[s]) == 1 and len(chain) < self.cfg.max_window:
                    chain.append(s)
                    if len(self.succs[s]) != 1:
                        break
                    s = self.succs[s][0]
                if chain:
                    out.append(tuple(chain))
        return out

    def run(self) -> None:
        idle = 0
        cost = _heft_units(self.problem)
        if self.placed is not None and self.budget.left >= self.budget.scale(cost):
            self._resequence_start()
        while idle < self.cfg.max_idle and self.budget.left >= self.budget.scale(cost):
            if self.budget.wall_expired():
                break
            if self._sweep_due(idle):
                before = self.best_value
                self._route_sweep()
                if self.best_value < before:
                    idle = 0
                    continue
            kind, ops = self._neighbourhood()
            counts = self.stats["by_kind"].setdefault(kind, [0, 0])
            counts[0] += 1
            self.stats["neighbourhoods"] += 1
            before = self.best_value
            if ops:
                self._improve(ops)
            if self.best_value < before:
                counts[1] += 1
                idle = 0
            else:
                idle += 1

    def _neighbourhood(self) -> tuple[str, tuple[int, ...]]:
        kind = self.rng.choices(("transfer", "window", "branch"), weights=self.cfg.weights)[0]
        if self.critical is None:
            self.critical = critical_path(self.problem, self.schedule)
        crit_ops, crit_edges = self.critical
        if kind == "transfer" and crit_edges:
            u, v, _ = self.problem.edges[self.rng.choice(crit_edges)]
            length = self._length()
            if self.rng.random() < 0.5:
                k = self.pos[u]
                return kind, self.order[max(0, k - length + 1):k + 1]
            k = self.pos[v]
            return kind, self.order[k:k + length]
        if kind == "branch" and self.branches:
            crit = set(crit_ops)
            near = [b for b in self.branches if any(o in crit for o in b)] or self.branches
            return kind, self.rng.choice(near)
        c = self.rng.choice(crit_ops)
        length = self._length()
        k = max(0, self.pos[c] - self.rng.randrange(length))
        return "window", self.order[k:k + length]

    def _sweep_due(self, idle: int) -> bool:
        """Whether a route sweep is due: every ``route_after_idle`` idle neighbourhoods, unless
        the incumbent is the one last swept."""
        every = self.cfg.route_after_idle
        return every > 0 and idle > 0 and idle % every == 0 and self.key != self.swept

    def _routes(self) -> list[tuple[tuple[int, int], tuple[int, ...]]]:
        """Every route of the incumbent (module Notes, **Routes**): per cross-device edge of the
        critical chain whose link carries another transfer, the edge and its neighbours in the
        link's queue; per such edge ``u -> v``, (the two devices, the first ``n`` ops of the
        order on ``v``'s device from ``v`` on) for ``n = 1 .. max_window``."""
        if self.critical is None:
            self.critical = critical_path(self.problem, self.schedule)
        queues = shared_link_queues(self.schedule)
        dev = self.schedule.op_device
        seen: set[int] = set()
        out = []
        for crossing in self.critical[1]:
            if crossing not in queues:
                continue
            queue, k = queues[crossing]
            for e in queue[max(0, k - 1):k + 2]:
                if e in seen:
                    continue
                seen.add(e)
                u, v, _ = self.problem.edges[e]
                chain = [i for i in self.order[self.pos[v]:] if dev[i] == dev[v]][:self.cfg.max_window]
                out += [((dev[u], dev[v]), tuple(chain[:n])) for n in range(1, len(chain) + 1)]
        return out

    def _route_sweep(self) -> None:
        """Try the incumbent's routes in turn (each a neighbourhood of kind ``route``) until one
        is accepted or the budget runs out."""
        self.swept = self.key
        used = self.budget.used
        cost = self.budget.scale(_heft_units(self.problem))
        counts = self.stats["by_kind"].setdefault("route", [0, 0])
        for ends, ops in self._routes():
            if self.budget.left < cost or self.budget.wall_expired():
                break
            counts[0] += 1
            self.stats["neighbourhoods"] += 1
            before = self.best_value
            self.route_ends = ends
            accepted = self._improve(ops)
            self.route_ends = None
            if self.best_value < before:
                counts[1] += 1
            if accepted:
                break
        self.stats["route_units"] += self.budget.used - used

    def _route_targets(self, ops: set[int]) -> list[int]:
        """Third devices for a route: not its two ends, able to run some moved op; the devices of
        the receiver's pool (idle ones first, then by most free memory), then of every other
        pool its first idle device and its used ones (by most free memory); at most
        ``route_targets``."""
        problem, dev = self.problem, self.schedule.op_device
        held = ResidentLedger(problem, [-1 if i in ops else d for i, d in enumerate(dev)]).held
        used = set(dev)

        def room(d: int) -> float:
            return problem.memory_bytes(d) - held[d] if problem.memory_bytes(d) else math.inf

        home = next(pool for pool in self.pools if self.route_ends[1] in pool)
        out = sorted(home, key=lambda d: (d in used, -room(d), d))
        for pool in self.pools:
            if pool is not home:
                out += [d for d in pool if d not in used][:1] + sorted((d for d in pool if d in used),
                                                                      key=lambda d: (-room(d), d))
        out = [d for d in out if d not in self.route_ends and any(problem.durations_cycles[i][d] >= 0 for i in ops)]
        return out[:self.cfg.route_targets]

    def _length(self) -> int:
        """A window length in ``1 .. max_window``, short ones more often (quadratic)."""
        return 1 + int((self.cfg.max_window - 1) * self.rng.random() ** 2 + 0.5)

    def _targets(self, ops: set[int]) -> list[int]:
        """Neighbour devices of ``ops`` and the first idle device of every pool, in index order."""
        dev = self.schedule.op_device
        near = {dev[j] for i in ops for j in self.succs[i] + self.preds[i] if j not in ops}
        ks = sorted(self.pos[i] for i in ops)
        for k in (ks[0] - 1, ks[-1] + 1):
            if 0 <= k < len(self.order):
                near.add(dev[self.order[k]])
        used = set(dev)
        for pool in self.pools:
            idle = [d for d in pool if d not in used]
            if idle:
                near.add(idle[0])
        return sorted(near)

    def _improve(self, window: tuple[int, ...]) -> bool:
        """Try every target for ``window``; accept the best trial when its key is smaller."""
        ops = {j for i in window for j in self.closure[i]}
        best = None
        cost = self.budget.scale(_heft_units(self.problem))
        for d in self._route_targets(ops) if self.route_ends is not None else self._targets(ops):
            trial = self._trial(ops, window, d)
            if trial is None:
                continue
            if self.budget.left < cost:  # a whole pass must fit; only the part run is charged
                break
            sol = self._sequence(trial)
            if sol is not None and (best is None or self._key(sol) < best[0]):
                best = (self._key(sol), sol)
        if best is None or not self._acceptable(best[0]) or validate_schedule(self.problem, best[1]):
            return False
        self.schedule, self.key, self.critical = best[1], best[0], None
        self.stats["accepted"] += 1
        if best[0][0] < self.best_value:
            self.best, self.best_value = best[1], best[0][0]
        return True

    def _resequence_start(self) -> None:
        """The start's own placement sequenced by its ranks (one charged pass): the incumbent
        when shorter, or equal with earlier ends."""
        sol = self._sequence(self.schedule.op_device)
        if sol is None or self._key(sol) >= self.key or validate_schedule(self.problem, sol):
            return
        self.schedule, self.key, self.critical = sol, self._key(sol), None
        self.history = [self.key] * len(self.history)
        if self.key[0] < self.best_value:
            self.best, self.best_value = sol, self.key[0]

    def _sequence(self, placement: tuple[int, ...]) -> SchedulingSolution | None:
        """HEFT with ``placement`` fixed, by the placement's own ranks or HEFT's (options),
        charged for the ops it placed; None when stuck, or (own ranks) as soon as it cannot end
        by the longest makespan acceptance allows (module Notes, **Budget**)."""
        self.stats["evaluations"] += 1
        if self.placed is None:
            sol, placed = heft_schedule_within(self.problem, placement, self.ranks)
        else:
            cutoff = max(key[0] for key in self.history + [self.key])
            sol, placed = heft_schedule_within(self.problem, placement, self.placed(placement), cutoff)
        self.stats["ops_placed"] += placed
        if placed < self.problem.num_ops:
            self.stats["stopped_early"] += 1
        self.budget.charge(self.budget.scale(_heft_units(self.problem) * _pass_share(self.problem, placed)))
        return sol

    def _acceptable(self, key: tuple[int, int]) -> bool:
        """Late acceptance (module Notes): not worse than the incumbent, or than the incumbent
        ``history`` neighbourhoods ago; the history then records the incumbent's key."""
        k = self.stats["neighbourhoods"] % len(self.history)
        ok = key < self.key or key <= self.history[k]
        self.history[k] = key if ok else self.key
        return ok

    def _trial(self, ops: set[int], window: tuple[int, ...], d: int) -> tuple[int, ...] | None:
        """The incumbent placement with ``ops`` on ``d`` (those ``d`` can run). When ``d``'s
        memory cannot hold their weights, ``d``'s ops nearest to the window in the order move
        to the window's first device until it can (an exchange of two stretches of the
        model); None when that does not fit either or changes nothing."""
        problem, dev = self.problem, self.schedule.op_device
        trial = [d if i in ops and problem.durations_cycles[i][d] >= 0 else x for i, x in enumerate(dev)]
        if tuple(trial) == dev:
            return None
        cap, source = problem.memory_bytes(d), dev[window[0]]
        held = problem.device_resident_bytes(d, trial)  # a shared weight or input once
        if cap and held > cap:
            if source == d:
                return None
            centre = sum(self.pos[i] for i in window) / len(window)
            others = sorted((i for i, x in enumerate(trial) if x == d and i not in ops),
                            key=lambda i: (abs(self.pos[i] - centre), self.pos[i]))
            for i in others:
                if held <= cap:
                    break
                group = self.closure[i]
                if all(problem.durations_cycles[j][source] >= 0 for j in group):
                    for j in group:
                        trial[j] = source
                    held = problem.device_resident_bytes(d, trial)
            if held > cap or not self._weights_fit(trial, source):
                return None
        return tuple(trial)

    def _weights_fit(self, placement, d: int) -> bool:
        """Whether device ``d``'s memory holds the weights ``placement`` puts there."""
        cap = self.problem.memory_bytes(d)
        return not cap or self.problem.device_resident_bytes(d, placement) <= cap


def placement_lns(problem: SchedulingProblem, start: SchedulingSolution, budget: Budget, seed: int = 0,
                  cfg: PlacementLnsOptions = PlacementLnsOptions()) -> tuple[SchedulingSolution, dict[str, Any]]:
    """Improve the placement of the valid schedule ``start`` within ``budget`` (module Notes):
    (the shortest schedule found, never worse than ``start``; statistics).

    Examples
    --------
    A fork into two 6-cycle branches on two devices with 1-cycle transfers; the start keeps
    everything on device 0 (1 + 6 + 6 + 1 = 14), the search moves a branch and the join (1 + 1 + 6 + 1 = 9):

    >>> from solvers.budget import SCHEDULING
    >>> p = SchedulingProblem(((1, 1), (6, 6), (6, 6), (1, 1)), ((0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 1)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,),) * 4)
    >>> from solvers.scheduling.heft import heft_schedule
    >>> start = heft_schedule(p, (0, 0, 0, 0))
    >>> best, stats = placement_lns(p, start, Budget.start(1.0, SCHEDULING))
    >>> start.makespan_cycles, best.makespan_cycles, best.op_device
    (14, 9, (0, 0, 1, 1))
    """
    search = _Search(problem, start, budget, seed, cfg)
    start_value = search.best_value
    search.run()
    stats = dict(search.stats)
    stats["by_kind"] = {k: {"neighbourhoods": a, "improving": b} for k, (a, b) in sorted(stats["by_kind"].items())}
    stats.update(start_objective=start_value, objective=search.best_value)
    return search.best, stats
