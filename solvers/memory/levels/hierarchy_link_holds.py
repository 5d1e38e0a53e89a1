"""Link holds over N levels: a linked device's transfer ends share its main level (shared bandwidth).

The N-level twin of :mod:`~solvers.memory.levels.link_holds`, over a
:class:`~solvers.memory.levels.hierarchy.HierarchyProblem`: a
:class:`~solvers.memory.levels.link_holds.LinkHold` holds ``shares`` of the problem's **main**
level (where a received copy lands and a sent tensor leaves from: every tensor a device sends
or receives is at home there) for its duration, beside the ops and hops, which hold their
shares of every level (:mod:`~solvers.memory.levels.hierarchy_bandwidth`). The rules are the
two-level ones with "slow level" read as "home":

``recv``   starts at or after its ``head``; its ``op`` and every other access of its
           ``tensors`` start after it ends, and so does the first hop of every fetch of them
           (the copy is at home only then);
``send``   starts after its ``op``, after each sent tensor's producer and, where the tensor is
           evicted home, after that eviction's last hop, and at or after its ``head``; the
           objective counts its end plus its ``tail``;
``after``  one link's holds one after the other; ``lags``: a round trip's waits.

Three places use them, each with its own code: the CP-SAT model
(:func:`add_hierarchy_link_hold_vars`, whose intervals
:func:`~solvers.memory.levels.hierarchy_bandwidth.add_hierarchy_bandwidth` puts in the main
level's ``Cumulative``, and :func:`add_hierarchy_link_hold_waits`), the replay
(:func:`add_hierarchy_hold_keys`, keys of the shared list schedule of
:func:`~solvers.memory.levels.hierarchy_bandwidth.replay_hierarchy_shared`) and the validator
(:func:`hierarchy_hold_violations`). A solution's hold starts are
:attr:`~solvers.memory.levels.hierarchy.HierarchySolution.link_starts`.

Examples
--------
Op 0 reads its input x (8 B) at main memory (level 1, 4 B/cycle: 2 cycles, all of its shares);
a RECV holding 600 of them from cycle 0 for 5 cycles brings tensor 1, which op 1 reads: op 0
cannot run beside it.

>>> from solvers.memory.levels.hierarchy import HierarchySolution
>>> from solvers.memory.levels.link_holds import LinkHold
>>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64), (8, 4), 1, ((0, 1),),
...                      shared_bandwidth=True)
>>> s = HierarchySolution(((1, 1), (1, 1)), ((False, False), (False, False)), (), (0, 5), (2, 2),
...                       link_starts=(0,))
>>> hierarchy_hold_violations(p, s, (LinkHold("recv", 5, 600, op=1, tensors=(1,)),))
['level 1 bandwidth: 1600 of 1000 shares at cycle 0 (op 0, recv link hold 0)']
"""

from __future__ import annotations

from solvers.cpsat_support import interval_if
from solvers.memory.levels.bandwidth import SHARE_UNITS
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.hierarchy_bandwidth import hierarchy_bandwidth_spans
from solvers.memory.levels.link_holds import (
    add_enforced, add_hold_keys, add_hold_wait_constraints, hold_op_waits, hold_rule_violations,
)
from solvers.memory.levels.problem import TransferKind

__all__ = ["hold_level_shares", "hierarchy_hold_waits", "add_hierarchy_hold_keys", "hierarchy_hold_violations",
           "add_hierarchy_link_hold_vars", "add_hierarchy_link_hold_waits", "hierarchy_hold_objective_terms"]

PREFETCH, EVICT = TransferKind.PREFETCH, TransferKind.EVICT


def hold_level_shares(problem: HierarchyProblem, hold) -> tuple[int, ...]:
    """The shares ``hold`` holds of each level: its own of the main level, none elsewhere.

    Examples
    --------
    >>> from solvers.memory.levels.link_holds import LinkHold
    >>> p = HierarchyProblem((1,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> hold_level_shares(p, LinkHold("send", 3, 470))
    (0, 470, 0)
    """
    return tuple(hold.shares if lv == problem.main_level else 0 for lv in range(problem.num_levels))


def hierarchy_hold_waits(problem: HierarchyProblem, solution: HierarchySolution, holds) -> tuple[dict, dict]:
    """``(waits_of_hold, waiters_of_hold)``: per hold k, the keys (``("op", i)``, ``("dma", q)``
    with q a position in ``solution.moves``, ``("hold", k2)``) whose ends it waits for, and the
    keys that wait for its end."""
    waits, waiters = hold_op_waits(problem, holds)
    for k, h in enumerate(holds):
        if h.role == "recv":  # a fetch's first hop starts once the copy is at home
            waiters[("hold", k)].update(("dma", q) for q, m in enumerate(solution.moves)
                                        if m.kind is PREFETCH and m.hop == 0 and m.tensor in h.tensors)
        else:  # a send leaves from home: after its tensors' evictions there
            waits[("hold", k)].update(("dma", q) for q, m in enumerate(solution.moves) if m.kind is EVICT
                                      and m.tensor in h.tensors and m.dst_level == problem.home(m.tensor))
    return waits, waiters


def add_hierarchy_hold_keys(problem: HierarchyProblem, solution: HierarchySolution, holds, deps: dict,
                            length: dict, floor: dict, priority: dict, shares: dict) -> None:
    """The holds as keys of the replay's list schedule (``("hold", k)``), in place: their waits,
    lengths, heads as floors, main-level shares and rank in the start order (the solution's
    ``link_starts``; without them an estimate: the head, or a send's waits' ends in the solution)."""
    ends = {("op", i): s + d for i, (s, d) in enumerate(zip(solution.op_start, solution.op_duration))}
    ends.update({("dma", q): m.end_cycle for q, m in enumerate(solution.moves)})
    add_hold_keys(holds, solution.link_starts, ends, hierarchy_hold_waits(problem, solution, holds),
                  [hold_level_shares(problem, h) for h in holds], deps, length, floor, priority, shares)


def hierarchy_hold_violations(problem: HierarchyProblem, solution: HierarchySolution, holds) -> list[str]:
    """Every hold rule ``solution`` breaks: its start (present, at or after its head and lags),
    its waits and waiters, and each level's shares at every cycle with the holds beside the ops
    and hops (:func:`~solvers.memory.levels.hierarchy_bandwidth.hierarchy_bandwidth_spans`)."""
    if not holds:
        return []
    if len(solution.link_starts) != len(holds):
        return [f"{len(holds)} link holds but {len(solution.link_starts)} link starts"]
    starts = {("hold", k): s for k, s in enumerate(solution.link_starts)}
    starts.update({("op", i): s for i, s in enumerate(solution.op_start)})
    starts.update({("dma", q): m.start_cycle for q, m in enumerate(solution.moves)})
    ends = {("hold", k): h.end(s) for k, (h, s) in enumerate(zip(holds, solution.link_starts))}
    ends.update({("op", i): s + d for i, (s, d) in enumerate(zip(solution.op_start, solution.op_duration))})
    ends.update({("dma", q): m.end_cycle for q, m in enumerate(solution.moves)})
    errs = hold_rule_violations(holds, solution.link_starts, starts, ends,
                                hierarchy_hold_waits(problem, solution, holds))
    return errs + _over_subscribed(problem, solution, holds)


def _over_subscribed(problem: HierarchyProblem, solution: HierarchySolution, holds) -> list[str]:
    """The first cycle, per level, at which ops, hops and holds together hold more than its shares."""
    spans = list(hierarchy_bandwidth_spans(problem, solution))
    spans += [(s, h.end(s), hold_level_shares(problem, h), f"{h.role} link hold {k}")
              for k, (h, s) in enumerate(zip(holds, solution.link_starts)) if h.duration_cycles and h.shares]
    errs = []
    for lv in range(problem.num_levels):
        mine = [sp for sp in spans if sp[2][lv]]
        for when in sorted({sp[0] for sp in mine}):
            running = [sp for sp in mine if sp[0] <= when < sp[1]]
            load = sum(sp[2][lv] for sp in running)
            if load > SHARE_UNITS:
                errs.append(f"level {problem.level_name(lv)} bandwidth: {load} of {SHARE_UNITS} shares at cycle "
                            f"{when} ({', '.join(sorted(sp[3] for sp in running))})")
                break
    return errs


def hierarchy_hold_objective_terms(solution: HierarchySolution, holds) -> list[int]:
    """What the holds add to the heads and tails' objective: each hold's end plus its tail."""
    if len(solution.link_starts) != len(holds):
        raise ValueError(f"{len(holds)} link holds but {len(solution.link_starts)} link starts: re-time the plan first")
    return [h.end(s) + h.tail for h, s in zip(holds, solution.link_starts)]


def add_hierarchy_link_hold_vars(model, v, holds, horizon: int | None = None) -> None:
    """Each hold's start (``v.hold_start``, ending by ``horizon``, default the model's) and
    fixed-size interval with its main-level shares (``v.hold_intervals``: ``(interval, shares)``,
    which :func:`~solvers.memory.levels.hierarchy_bandwidth.add_hierarchy_bandwidth` adds to the
    main level's Cumulative). Call before it. In a window model (``v.frame``) a hold the
    incumbent ends before the free ops start keeps its start, one it starts with or after the
    first op after them shifts with those ops (:func:`_window_hold_start`); only the holds in
    between are variables (every wait is still added, so a solution stays valid)."""
    horizon = v.horizon if horizon is None else horizon
    v.hold_start, v.hold_intervals = [], []
    for k, h in enumerate(holds):
        start = _window_hold_start(v.frame, h, k) if v.frame is not None else None
        if start is None:
            start = model.new_int_var(h.head, max(h.head, horizon - h.duration_cycles), f"hold_start_{k}")
        elif not isinstance(start, int) and h.head:  # shifted: its head bounds the shift
            model.add(start >= h.head)
        v.hold_start.append(start)
        if h.duration_cycles and h.shares:
            v.hold_intervals.append((interval_if(model, start, h.duration_cycles, None, 1, f"hold_{k}"), h.shares))


def _window_hold_start(frame, hold, k: int):
    """A window model's start of hold ``k`` where the incumbent (``frame.fixed``, timed with its
    holds) fixes it: its time when it ends before the first free op starts, its time plus the
    frame's shift when it starts at or after the first op after the free ones; else None."""
    fixed = frame.fixed
    if len(fixed.link_starts) <= k:
        return None
    s = fixed.link_starts[k]
    if s + hold.duration_cycles <= fixed.op_start[frame.free.start]:
        return s
    if frame.shift is not None and s >= fixed.op_start[frame.free.stop]:
        return s + frame.shift
    return None


def add_hierarchy_link_hold_waits(model, problem: HierarchyProblem, v, holds) -> None:
    """The holds' waits in the N-level model ``v`` (after :func:`add_hierarchy_link_hold_vars`
    and the moves): a recv's waiters start after its end (a fetch chain's first hop when
    present), a send starts after its source op, its tensors' producers and every eviction chain
    of them that ends at home (when present), each after the previous one on its link and after
    its lags (:func:`~solvers.memory.levels.link_holds.add_hold_wait_constraints`)."""
    def dma_waits(k, h, start, end) -> None:
        for (kind, t, _, _), hops in v.chains.items():
            if h.role == "recv" and kind is PREFETCH and t in h.tensors:
                add_enforced(model, hops[0].start >= end, hops[0].present)
            elif h.role == "send" and kind is EVICT and t in h.tensors and hops[-1].dst == problem.home(t):
                add_enforced(model, start >= hops[-1].end, hops[0].present)

    add_hold_wait_constraints(model, problem, v, holds, dma_waits)
