"""Segment decompositions of layered graphs for the CP-SAT scheduler (LATENCY).

One job: use the cut ops (see :mod:`solvers.scheduling.bounds`) to split a graph into
segments, and solve those with nested CP-SAT solves on child budgets: proven bounds per
group of same-shape segments (:func:`segment_lower_bound`, joined by the segment chain), and
a hint glued from per-window schedules and re-timed (:func:`segment_schedule`).
"""
from __future__ import annotations

import heapq
import time
from dataclasses import replace
from typing import Any

from solvers.budget import Budget
from solvers.core import SolveOptions, SolveResult, Status
from solvers.scheduling.bounds import (bound_segments, out_edge_lists, segment_floor, segment_problems,
                                       subproblem)
from solvers.scheduling.cpsat.options import CpSatOptions, as_budget, inner_config
from solvers.scheduling.cpsat.search import solve
from solvers.scheduling.cpsat.symmetry import interchangeable_classes, relabel_solution
from solvers.scheduling.decomposition import chain_segment_bound
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.problem import Objective, ScheduledTransfer, SchedulingProblem, SchedulingSolution
from solvers.scheduling.segment_runs import segment_run_bound
from solvers.scheduling.side_ends import prefix_chain_bound, side_prefixes
from solvers.scheduling.structure import clean_cut_vertices
from solvers.scheduling.validate import validate_schedule

__all__ = ["segment_lower_bound", "segment_schedule"]

GLUE_PROBES = 4  # at most this many pins per class the glue probes for a window (see _class_solve)
PROBE_UNITS_PER_OP = 0.01
"""Deterministic units one probe of a window needs per op of the window to settle on the best
schedule one CP-SAT worker finds from its pin: :func:`_class_solve` probes only as many pins
as its share affords at this rate (at least one), so a window whose share buys one settled
probe gets its whole share at the chain's own pin (the glue without classes), and a window
with more gets the class's other pins too. Measured 2026-11-28 (one worker, the window pinned
at device 0, PLAN_NET_SLOWDOWN=20, the window alone, one solve per amount 0.02-0.6): branchy-10k's
middle window (29 ops) beats HEFT (13,284) at 0.08 units and stays at 11,138 up to 0.4 (0.003
per op; its pins 1-3 reach 10,464: the variance extra probes buy); transformer-1k's second
window (46 ops) 113,475 (HEFT's) at 0.15, 112,356 at 0.2-0.4, 112,279 at 0.5-0.6 (0.011 per
op); its third (44 ops) HEFT's 105,374 up to 0.2, 104,255 at 0.25-0.3, 104,178 from 0.4
(proven optimal at 0.56; 0.009 per op). Set to 0.01: four probes of branchy's window at 1.2
units, of the transformer's at 1.8. A threshold only "to beat HEFT" (0.006 per op) split the
transformer's third window in two probes of 0.29 at the glue's 2 units and lost 104,178 to
104,255 (2,398,093 against 2,396,399 without the split). Why per op: a window's model
(intervals, transfers, no-overlaps) grows with its ops, and so does the deterministic time
CP-SAT needs on it."""
PREFIX_SHARE = 0.1  # of what is left of the segment proofs' budget, per side prefix (BERT-L 12's used 0.05 units)


def _segment_signature(sub: SchedulingProblem):
    # exact repeats only: one proof on the element-wise floor of segments that merely share a
    # shape (inception modules of different widths) proved little more than the critical path
    return (sub.num_ops, sub.edges and tuple((u, v) for u, v, _ in sub.edges),
            sub.durations_cycles, sub.transfer_cycles, sub.colocation_groups)


def segment_lower_bound(problem: SchedulingProblem, options: SolveOptions,
                        budget: Budget | float, cfg: CpSatOptions | None = None) -> tuple[int, dict]:
    """The segment bound of :func:`~solvers.scheduling.bounds.segment_bound`, with CP-SAT
    proving bounds on the larger segments (the segments of
    :func:`~solvers.scheduling.bounds.bound_segments`, joined by
    :func:`~solvers.scheduling.decomposition.chain_segment_bound`).

    Segments that repeat exactly (ops, edges, durations, transfers, colocation; repeated
    layers) form a group, and one CP-SAT bound serves the whole group. (Its *floor* problem
    takes, op by op and edge by edge, the smallest duration and transfer over its members:
    shrinking durations keeps any schedule feasible with starts unchanged, so the floor's
    optimum is at most each member's. Grouping by shape alone, with one floor for inception
    modules of different widths, proved no more than the critical path.) Groups are proved
    largest first (ops x members) within ``budget`` (a :class:`~solvers.budget.Budget`, or
    that many deterministic-time units with the net of ``options``); each group's share
    depends only on what the earlier ones charged. The rest keep their cheap bound.

    Returns
    -------
    (bound, stats)

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (5,), (5,), (1,)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,), ((-1,),), ((),) * 4)
    >>> segment_lower_bound(p, SolveOptions(), 1.0)[0]
    12
    """
    cfg = cfg or CpSatOptions()
    budget = as_budget(budget, options, cfg)
    if problem.objective is not Objective.LATENCY:
        return 0, {}
    pruned, segs = bound_segments(problem)
    if not segs:
        return 0, {}
    bounds = [segment_floor(sub) for sub, _ in segs]
    groups: dict[Any, list[int]] = {}
    for k, (sub, _) in enumerate(segs):
        if sub.num_ops >= cfg.segment_min_ops and sub.num_ops < problem.num_ops:
            groups.setdefault(_segment_signature(sub), []).append(k)
    order = sorted(groups.values(), key=lambda ks: (-len(ks) * segs[ks[0]][0].num_ops, ks[0]))
    inner_cfg = inner_config(cfg)
    # side sources the span dropped, back in the prefixes of the cut ops they feed (small
    # solves: first, so that the groups' shares cannot leave them nothing)
    prefix_ends = _prove_prefixes(problem, options, budget, inner_cfg)
    proved = 0
    for gi, ks in enumerate(order):
        if budget.left <= 0 or budget.wall_expired():
            break
        members = [segs[k][0] for k in ks]
        base = members[0]
        durations = tuple(tuple(min(m.durations_cycles[i][d] for m in members)
                                for d in range(base.num_devices)) for i in range(base.num_ops))
        transfer = tuple(tuple(min(m.transfer_cycles[e][link] for m in members)
                               for link in range(base.num_links)) for e in range(len(base.edges)))
        floor = SchedulingProblem(durations, base.edges, base.device_streams, base.link_of, transfer,
                                  Objective.LATENCY, colocation_groups=base.colocation_groups,
                                  device_class=base.device_class)
        share = budget.left / max(1, min(len(order) - gi, 3))  # next 3 groups
        r = _inner_solve(inner_cfg, floor, options, budget, share, f"segment_bound[{gi}]")
        if r.bound is not None:
            proved += 1
            for k in ks:
                bounds[k] = max(bounds[k], int(r.bound))
    prefixed = max((prefix_chain_bound(pruned, segs, bounds, k, end) for k, end in prefix_ends), default=0)
    stats = {"segments": len(segs), "segment_groups": len(order), "segment_groups_proved": proved,
             "segment_bound_dtime": budget.used, "segment_bound_stopped_by": budget.stop_word()}
    if prefixed:
        stats["side_prefix_bound"] = prefixed
    # with a memory limit, the same proven floors also tighten the segment-run bound
    return max(chain_segment_bound(pruned, segs, bounds), segment_run_bound(pruned, segs, bounds), prefixed), stats


def _prove_prefixes(problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                    cfg: CpSatOptions) -> list[tuple[int, int]]:
    """Proven bounds on the ends of the cut ops of
    :func:`~solvers.scheduling.side_ends.side_prefixes`: ``(k, bound)`` per prefix CP-SAT
    bounded, each within :data:`PREFIX_SHARE` of what is left of ``budget``."""
    proven = []
    for k, prefix in side_prefixes(problem):
        if budget.left <= 0 or budget.wall_expired():
            break
        r = _inner_solve(cfg, prefix, options, budget, PREFIX_SHARE * budget.left, f"side_prefix[{k}]")
        if r.bound is not None:
            proven.append((k, int(r.bound)))
    return proven



def _inner_solve(cfg: CpSatOptions, sub: SchedulingProblem, options: SolveOptions, budget: Budget,
                 amount: float, stage: str) -> SolveResult:
    """Solve a subproblem within ``amount`` of ``budget`` (a child budget, same net), and
    charge what it used back to ``budget``."""
    child = budget.child(amount)
    inner = SolveOptions(time_limit_s=options.time_limit_s, num_workers=options.num_workers,
                         random_seed=options.random_seed, search=options.search)
    result = solve(sub, inner, child, cfg, time.perf_counter())
    budget.absorb(child, stage)
    return result


def segment_schedule(problem: SchedulingProblem, options: SolveOptions, budget: Budget | float,
                     cfg: CpSatOptions | None = None,
                     stats: dict | None = None, reuse: bool = False) -> SchedulingSolution | None:
    """A schedule glued from per-segment CP-SAT solutions (LATENCY, graphs with cut ops).

    Segments (see :func:`~solvers.scheduling.bounds.segment_problems`) are solved in
    order, each with its source op pinned to the device the previous segment gave it;
    segments are first merged into windows of at least ``segment_window_ops`` ops (so
    residual edges mostly stay inside a window); windows with fewer than
    ``segment_min_ops`` ops use HEFT. The window schedules are shifted to start when
    their source ends, then re-timed together keeping every stream's and link's order
    (edges between windows get their transfers there). None when that fails validation
    (e.g. memory, which windows ignore). The windows share ``budget`` (a
    :class:`~solvers.budget.Budget`, or that many deterministic-time units with the net of
    ``options``) in proportion to their ops; ``stats["dtime_used"]`` receives what they used,
    ``stats["windows"]`` and ``stats["windows_solved"]`` how many windows there were and how
    many CP-SAT solved.
    With ``reuse``, windows equal to an earlier one (the same problem once its source is
    pinned, names aside) take its solution: a graph of repeated blocks (10^4 ops of stacked
    modules) costs one solve per distinct block, and the budget is shared by distinct windows.
    Windows whose sources are pinned on interchangeable devices share one solve too (renamed
    for each pin; the best of a few probes pinned at the class's devices), and, with what
    budget the chain left, a chain steered to the cheapest steady state of its most repeated
    window replaces it when shorter (see :class:`_ReuseGlue`); ``stats`` then also receives
    ``plain_objective``, ``steady_periods``, ``steady_solves`` and, when steered,
    ``steered_class``, ``steered_objective``, ``steered_solves`` and ``returned``.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5), (1, 1)),
    ...                       ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((1,),) * 4)
    >>> segment_schedule(p, SolveOptions(), 2.0, CpSatOptions(segment_min_ops=2)).makespan_cycles
    8
    """
    cfg = cfg or CpSatOptions()
    budget = as_budget(budget, options, cfg)
    segs = segment_problems(problem)
    if problem.objective is not Objective.LATENCY or len(segs) < 2:
        return None
    segs = _windows(problem, segs, cfg.segment_window_ops)
    inner_cfg = inner_config(cfg)

    def worth(sub: SchedulingProblem) -> bool:  # huge windows would just repeat the main solve
        return cfg.segment_min_ops <= sub.num_ops <= cfg.max_full_ops

    if reuse:
        glue = _ReuseGlue(problem, segs, options, budget, inner_cfg, worth)
        out = glue.best_chain()
        if stats is not None:
            stats.update(dtime_used=budget.used, windows=len(segs), **glue.stats)
        return out
    big_ops = sum(sub.num_ops for sub, _ in segs if worth(sub))
    solves = 0
    out_edges = out_edge_lists(problem)
    n = problem.num_ops
    placement, stream = [-1] * n, [0] * n
    key_op, key_tr = [0] * n, {}
    end_of = [0] * n
    for k, (sub, ops) in enumerate(segs):
        source = k > 0
        if source:  # pin the source (first op) where the previous window put it
            sub = _pin_source(sub, placement[ops[0]])
        sol = None
        if worth(sub) and big_ops > 0 and budget.left > 0 and not budget.wall_expired():
            share = budget.left * min(1.0, sub.num_ops / big_ops)
            big_ops -= sub.num_ops
            sol = _inner_solve(inner_cfg, sub, options, budget, share, f"segment_window[{k}]").solution
            solves += 1
        if sol is None:
            sol = heft_schedule(sub)
        if sol is None:
            return None
        _lay_out(problem, out_edges, sol, ops, source, (placement, stream, key_op, end_of), key_tr)
    if stats is not None:
        stats.update(dtime_used=budget.used, windows=len(segs), windows_solved=solves)
    out = _retime(problem, tuple(placement), tuple(stream), key_op, key_tr)
    if out is None or validate_schedule(problem, out):
        return None
    return out


class _ReuseGlue:
    """The glue with ``reuse``: windows solved once per (window, class of its pinned source's
    device, devices its sink may take), solutions renamed among interchangeable devices.

    :meth:`best_chain` lays out the plain chain (each window's sink where its solve put it),
    then, with what budget that left, a chain steered to the cheapest steady state of its most
    repeated window (:meth:`steered_class`), and keeps the shorter. Why: the plain chain is
    greedy, a window's shortest schedule may end on a device from which every later window is
    slower, and on a graph of repeated blocks that costs once per block."""

    def __init__(self, problem: SchedulingProblem, segs: list[tuple[SchedulingProblem, tuple[int, ...]]],
                 options: SolveOptions, budget: Budget, cfg: CpSatOptions, worth) -> None:
        self.problem, self.segs, self.options, self.budget, self.cfg, self.worth = (
            problem, segs, options, budget, cfg, worth)
        self.out_edges = out_edge_lists(problem)
        self.solved: dict[tuple, SchedulingSolution | None] = {}
        self.solves = 0
        self.stats: dict[str, Any] = {}

    def best_chain(self) -> SchedulingSolution | None:
        """The plain chain, or the steered one when it is shorter (``self.stats`` says which)."""
        plain, pins = self.chain(None)
        self.stats.update(windows_solved=self.solves, plain_objective=_makespan(plain))
        steer = self.steered_class(pins) if plain is not None else None
        self.stats["steady_solves"] = self.solves - self.stats["windows_solved"]
        if steer is None:
            return plain
        before = self.solves
        steered, _ = self.chain(steer)
        self.stats.update(steered_class=steer, steered_objective=_makespan(steered),
                          steered_solves=self.solves - before)
        if steered is not None and steered.makespan_cycles < plain.makespan_cycles:
            self.stats["returned"] = "steered"
            return steered
        return plain

    def chain(self, sink_class: tuple[int, ...] | None) -> tuple[SchedulingSolution | None, list[int]]:
        """The windows laid out in order, each pinned where the previous one put its sink (and,
        with ``sink_class``, every sink but the last on one of those devices): (the re-timed
        schedule or None, the device of each window's source)."""
        problem, budget, segs = self.problem, self.budget, self.segs
        big_ops = sum(sub.num_ops for sub, _ in _distinct(segs) if self.worth(sub))
        n = problem.num_ops
        placement, stream, key_op, key_tr, end_of = [-1] * n, [0] * n, [0] * n, {}, [0] * n
        pins: list[int] = []
        for k, (sub, ops) in enumerate(segs):
            pin = placement[ops[0]] if k > 0 else None
            pins.append(-1 if pin is None else pin)
            if sink_class is not None and k < len(segs) - 1:
                sub = _restrict_sink(sub, sink_class) or sub
            key = _window_key(sub), _pin_class(sub, pin)
            if key not in self.solved and self.worth(sub) and big_ops > 0 and budget.left > 0 \
                    and not budget.wall_expired():
                share = budget.left * min(1.0, sub.num_ops / big_ops)
                big_ops -= sub.num_ops
                self._solve(key, sub, share, k, pin)
            sol = _relabelled(sub, self.solved.get(key), key[1], pin)
            sub = _pin_source(sub, pin) if pin is not None else sub
            sol = sol or heft_schedule(sub)
            if sol is None:
                return None, pins
            _lay_out(problem, self.out_edges, sol, ops, k > 0, (placement, stream, key_op, end_of), key_tr)
        out = _retime(problem, tuple(placement), tuple(stream), key_op, key_tr)
        if out is None or validate_schedule(problem, out):
            return None, pins
        return out, pins

    def _solve(self, key: tuple, sub: SchedulingProblem, share: float, k: int, first: int | None = None) -> None:
        self.solved[key], probes = _class_solve(self.cfg, sub, key[1], self.options, self.budget, share, k, first)
        self.solves += probes

    def steered_class(self, pins: list[int]) -> tuple[int, ...] | None:
        """The devices of the cheapest steady state of the most repeated window (pinned at one
        of them, its sink on one of them: the period of a chain that stays there); None when no
        window repeats, or no other class's period beats the plain chain's. The plain chain's
        period is its own solve when every repeat was pinned in one class and the solve's sink
        stays there; every other class is probed with a share of what budget is left."""
        last = len(self.segs) - 1
        counts: dict[tuple, list[int]] = {}
        for k in range(1, last):
            counts.setdefault(_window_key(self.segs[k][0]), []).append(k)
        repeats = max(counts.values(), key=len, default=[])
        if len(repeats) < 2 or not self.worth(self.segs[repeats[0]][0]):
            return None
        sub = self.segs[repeats[0]][0]
        plain = next((devs for devs in _device_classes(sub) if all(pins[k] in devs for k in repeats)), None)
        own = self.solved.get((_window_key(sub), plain)) if plain else None
        if own is None or own.op_device[-1] not in plain:
            return None  # the plain chain is in no steady state to compare with
        steady = [(own.makespan_cycles, plain)]
        others = [devs for devs in _device_classes(sub) if devs != plain]
        for i, devs in enumerate(others):
            period = _restrict_sink(sub, devs)
            if period is None or self.budget.left <= 0 or self.budget.wall_expired():
                continue
            key = _window_key(period), devs
            if key not in self.solved:
                self._solve(key, period, self.budget.left / (len(others) - i + 1), repeats[0])
            if self.solved.get(key) is not None:
                steady.append((self.solved[key].makespan_cycles, devs))
        self.stats["steady_periods"] = {str(devs): cycles for cycles, devs in steady}
        best = min(steady, key=lambda period: period[0])[1]  # the plain class on ties
        return None if best == plain else best


def _makespan(sol: SchedulingSolution | None) -> int | None:
    return None if sol is None else sol.makespan_cycles


def _device_classes(sub: SchedulingProblem) -> list[tuple[int, ...]]:
    """Every device once: the interchangeable classes of ``sub``, the others alone, in order
    of their first device."""
    classes = interchangeable_classes(sub)
    grouped = {d for devs in classes for d in devs}
    return sorted(classes + [(d,) for d in range(sub.num_devices) if d not in grouped])


def _restrict_sink(sub: SchedulingProblem, devices: tuple[int, ...]) -> SchedulingProblem | None:
    """``sub`` with its sink (last op) allowed only on ``devices``; None when it may run on none of them."""
    rows = list(sub.durations_cycles)
    if all(rows[-1][d] < 0 for d in devices):
        return None
    rows[-1] = tuple(c if d in devices else -1 for d, c in enumerate(rows[-1]))
    return replace(sub, durations_cycles=tuple(rows))


def _pin_class(sub: SchedulingProblem, pin: int | None) -> tuple[int, ...]:
    """The devices interchangeable with ``pin`` in the window ``sub`` (source not pinned yet):
    its class of :func:`~solvers.scheduling.cpsat.symmetry.interchangeable_classes`, else
    ``(pin,)``; ``()`` for no pin. Windows pinned anywhere in one class are one problem up to
    renaming devices, so they share one solve (pinned at the class's first device)."""
    if pin is None:
        return ()
    return next((devs for devs in interchangeable_classes(sub) if pin in devs), (pin,))


def _swap(a: int, b: int) -> dict[int, int]:
    return {a: b, b: a}


def _relabelled(sub: SchedulingProblem, canonical: SchedulingSolution | None, members: tuple[int, ...],
                pin: int | None) -> SchedulingSolution | None:
    """The solution of ``sub`` pinned at ``pin`` from ``canonical``, the one pinned at
    ``members[0]`` (devices ``members[0]`` and ``pin`` swapped); None when there is none."""
    if canonical is None or pin is None or pin == members[0]:
        return canonical
    return relabel_solution(sub, canonical, _swap(members[0], pin))


def _class_solve(cfg: CpSatOptions, sub: SchedulingProblem, members: tuple[int, ...], options: SolveOptions,
                 budget: Budget, share: float, k: int,
                 first: int | None = None) -> tuple[SchedulingSolution | None, int]:
    """The best solution of window ``sub`` pinned at ``members[0]`` found by probes pinned at
    ``members`` (``first`` first when it is one of them; one unpinned solve for no members):
    (it or None, number of solves). As many probes as ``share`` affords
    (:func:`probes_afforded`), so a small share buys one solve at the chain's own pin, as
    without classes. The probes split ``share`` of ``budget`` (what one leaves goes to the
    next) and each starts from the best so far, renamed to its pin; they stop at a proven
    optimum. Why several: the probes' problems are the same up to renaming, yet one CP-SAT
    worker finds different schedules for them (branchy-10k's middle window pinned at TPU 0:
    10,956 cycles, at TPUs 1-3: 10,464), so the glue's result jumped with its budget as the
    chain happened to pin a lucky or an unlucky device; the best of a few probes does not."""
    order = ((first,) + tuple(d for d in members if d != first)) if first in members else members
    pins = order[:probes_afforded(share, sub.num_ops, len(members))] or (None,)
    spent, best, best_obj, solves = budget.used, None, None, 0
    for i, pin in enumerate(pins):
        left = share - (budget.used - spent)
        if left <= 0 or budget.left <= 0 or budget.wall_expired():
            break
        problem = _pin_source(sub, pin) if pin is not None else sub
        hint = _relabelled(sub, best, members, pin) if best is not None else None
        r = _hinted_solve(cfg, problem, options, budget, left / (len(pins) - i), f"segment_window[{k}]", hint)
        solves += 1
        if r.solution is not None and (best_obj is None or r.solution.makespan_cycles < best_obj):
            best_obj = r.solution.makespan_cycles
            best = r.solution if pin is None else _relabelled(sub, r.solution, (pin,) + members, members[0])
        if r.status is Status.OPTIMAL:
            break
    return best, solves


def probes_afforded(share: float, num_ops: int, members: int) -> int:
    """How many pins of a class of ``members`` devices a window of ``num_ops`` ops probes with
    ``share`` units: what the share buys at :data:`PROBE_UNITS_PER_OP`, at least one, at most
    :data:`GLUE_PROBES` and ``members``. It generalises by the window's size: a longer window
    (or a smaller budget) gets fewer, fuller probes, a shorter one more.

    >>> probes_afforded(0.3, 29, 4), probes_afforded(0.6, 29, 4), probes_afforded(5.0, 29, 3)
    (1, 2, 3)
    """
    return max(1, min(GLUE_PROBES, members, int(share / (PROBE_UNITS_PER_OP * max(1, num_ops)))))


def _hinted_solve(cfg: CpSatOptions, sub: SchedulingProblem, options: SolveOptions, budget: Budget,
                  amount: float, stage: str, hint: SchedulingSolution | None) -> SolveResult:
    """:func:`_inner_solve` starting from ``hint`` (when not None)."""
    child = budget.child(amount)
    inner = SolveOptions(time_limit_s=options.time_limit_s, num_workers=options.num_workers,
                         random_seed=options.random_seed, search=options.search, hint=hint)
    result = solve(sub, inner, child, cfg, time.perf_counter())
    budget.absorb(child, stage)
    return result


def _windows(problem: SchedulingProblem, segs: list[tuple[SchedulingProblem, tuple[int, ...]]],
             window_ops: int) -> list[tuple[SchedulingProblem, tuple[int, ...]]]:
    """Consecutive segments merged into windows of at least ``window_ops`` ops (the last may
    be smaller): (window problem, its ops), its source being the previous window's last op."""
    # a window closes only at a "clean" cut op (no edge jumps over it), so residual
    # connections stay inside a window; every window but the last ends at a cut op
    clean = set(clean_cut_vertices(problem)).__contains__

    out_edges = out_edge_lists(problem)
    windows: list[tuple[SchedulingProblem, tuple[int, ...]]] = []
    acc: list[int] = []
    first_source: int | None = None
    for k, (_sub, ops) in enumerate(segs):
        if not acc:
            first_source = ops[0] if k > 0 else None
            acc = list(ops)
        else:
            acc += [op for op in ops if op != acc[-1]]
        if (len(acc) >= window_ops and clean(acc[-1])) or k == len(segs) - 1:
            windows.append((subproblem(problem, acc, first_source, out_edges), tuple(acc)))
            acc = []
    return windows


def _lay_out(problem: SchedulingProblem, out_edges: list[list[int]], sol: SchedulingSolution,
             ops: tuple[int, ...], source: bool, per_op: tuple[list[int], list[int], list[int], list[int]],
             key_tr: dict[int, int]) -> None:
    """Copy a window's schedule into the glued one (``per_op``: placement, stream, start key and
    end per global op; ``key_tr``: start key per global edge), shifted to start when its source
    (already laid out by the previous window) ends."""
    placement, stream, key_op, end_of = per_op
    shift = end_of[ops[0]] - sol.op_end(0) if source else 0
    for local, op in enumerate(ops):
        if source and local == 0:
            continue
        placement[op], stream[op] = sol.op_device[local], sol.op_stream[local]
        key_op[op] = sol.op_start[local] + shift
        end_of[op] = sol.op_end(local) + shift
    inside = set(ops)
    global_edges = sorted(e for op in ops for e in out_edges[op] if problem.edges[e][1] in inside)
    for t in sol.transfers:
        key_tr[global_edges[t.edge]] = t.start_cycle + shift


def _window_key(sub: SchedulingProblem) -> tuple:
    """What makes two windows the same problem (their op names aside)."""
    return (sub.durations_cycles, sub.edges, sub.transfer_cycles, sub.colocation_groups)


def _distinct(segs: list[tuple[SchedulingProblem, tuple[int, ...]]]) -> list[tuple[SchedulingProblem, tuple[int, ...]]]:
    """The windows of ``segs`` with every repeat of an earlier one left out (before sources are pinned)."""
    seen: set[tuple] = set()
    out = []
    for sub, ops in segs:
        key = _window_key(sub)
        if key not in seen:
            seen.add(key)
            out.append((sub, ops))
    return out


def _pin_source(sub: SchedulingProblem, device: int) -> SchedulingProblem:
    """``sub`` with its source (op 0) fixed on ``device``, taking no time."""
    rows = list(sub.durations_cycles)
    rows[0] = tuple(0 if d == device else -1 for d in range(sub.num_devices))
    return SchedulingProblem(tuple(rows), sub.edges, sub.device_streams, sub.link_of,
                             sub.transfer_cycles, Objective.LATENCY,
                             colocation_groups=sub.colocation_groups, device_class=sub.device_class)


def _retime(problem: SchedulingProblem, placement, stream, key_op, key_tr) -> SchedulingSolution | None:
    """Earliest start times keeping each stream's and link's order given by the keys.

    Tasks (ops, and a transfer per cross-device edge) are taken, among those whose
    predecessors are done, by smallest key; each starts when its inputs are ready and its
    stream or link is free. Edges without a key (between windows) use the producer's end.
    """
    n = problem.num_ops
    for u, v, _ in problem.edges:
        if placement[u] != placement[v] and problem.link_of[placement[u]][placement[v]] < 0:
            return None
    # task ids: ops 0..n-1, transfer of edge e is n + e
    preds: dict[int, list[int]] = {i: [] for i in range(n)}
    succs: dict[int, list[int]] = {}
    links: dict[int, int] = {}
    for e, (u, v, _) in enumerate(problem.edges):
        if placement[u] == placement[v]:
            preds[v].append(u)
            succs.setdefault(u, []).append(v)
        else:
            t = n + e
            links[t] = problem.link_of[placement[u]][placement[v]]
            preds[t] = [u]
            preds[v].append(t)
            succs.setdefault(u, []).append(t)
            succs.setdefault(t, []).append(v)
    missing = {t: len(ps) for t, ps in preds.items()}
    end: dict[int, int] = {}
    lane_free: dict[tuple[int, int], int] = {}
    link_free: dict[int, int] = {}
    starts = [0] * n

    def key(t: int) -> tuple[int, int, int]:
        if t < n:
            return (key_op[t], 1, t)
        e = t - n
        return (key_tr.get(e, end_key[problem.edges[e][0]]), 0, t)

    end_key = [key_op[i] + problem.durations_cycles[i][placement[i]] for i in range(n)]
    heap = [key(t) for t, m in missing.items() if m == 0]
    heapq.heapify(heap)
    transfers = []
    while heap:
        _, _, t = heapq.heappop(heap)
        ready = max((end[q] for q in preds[t]), default=0)
        if t < n:
            dur = problem.durations_cycles[t][placement[t]]
            lane = (placement[t], stream[t])
            s0 = max(ready, lane_free.get(lane, 0)) if dur > 0 else ready
            if dur > 0:
                lane_free[lane] = s0 + dur
            starts[t] = s0
        else:
            link = links[t]
            dur = problem.transfer_cycles[t - n][link]
            s0 = max(ready, link_free.get(link, 0)) if dur > 0 else ready
            if dur > 0:
                link_free[link] = s0 + dur
            transfers.append(ScheduledTransfer(t - n, link, s0, dur))
        end[t] = s0 + dur
        for w in succs.get(t, ()):
            missing[w] -= 1
            if missing[w] == 0:
                heapq.heappush(heap, key(w))
    if len(end) != len(preds):
        return None
    transfers.sort(key=lambda tr: tr.edge)
    durs = tuple(problem.durations_cycles[i][placement[i]] for i in range(n))
    return SchedulingSolution(tuple(placement), tuple(stream), tuple(starts), durs,
                              tuple(transfers))


# ----------------------------------------------------------------------------- solver

