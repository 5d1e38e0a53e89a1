"""Link transfers' main-memory shares in the level problem of a linked device (shared bandwidth).

Under ``bandwidth: shared`` a link transfer's end on a device (the RECV on the receiver, the
SEND on the sender) holds ``min(1000, ceil(1000 * r_L / bw_main))`` shares of that device's
main (slow) level for its whole span, latency included (:mod:`solvers.memory.levels.bandwidth`
gives ops and DMAs theirs). The device's level problem sees such an end as a
:class:`LinkHold`: a fixed-length interval in the slow level's bandwidth, placed by the solver:

``recv``   starts at or after its ``head`` (when the sender can start it, from the whole plan);
           its ``op`` (the transfer's destination op) and every access and prefetch of its
           received ``tensors`` start after it ends (the copy is in the slow level only then);
``send``   starts after its ``op`` (the source op) ends and after each sent tensor is in the
           slow level (its producer's end, or its eviction's end), and at or after its ``head``;
           the plan cannot end before its end plus its ``tail`` (the longest path after the
           transfer through the other devices).

``after`` orders the holds of one link (a link runs its transfers one at a time); ``lags``
start a hold at least that long after another one starts (a transfer back into the device
that waits, through the other devices, for a transfer out of it: a round trip). The holds
are the heads and tails' (:class:`~solvers.memory.levels.heads_tails.HeadsTails`), so only the
re-solve under heads and tails sees them; their starts are
:attr:`~solvers.memory.levels.problem.LevelSolution.link_starts`. Three places use the same
rules, each with its own code: the CP-SAT model (:func:`add_link_hold_vars`, whose intervals
:func:`~solvers.memory.levels.bandwidth.add_bandwidth` puts in the slow level's Cumulative,
and :func:`add_link_hold_waits`), the replay (:func:`add_hold_waits`, keys in the list schedule
of :func:`~solvers.memory.levels.validate.replay_levels`) and the validator
(:func:`hold_violations`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from solvers.memory.levels.bandwidth import SHARE_UNITS, bandwidth_spans
from solvers.memory.levels.problem import LevelProblem, LevelSolution, TransferKind

__all__ = ["LinkHold", "hold_waits", "add_hold_waits", "hold_violations", "add_link_hold_vars",
           "add_link_hold_waits", "hold_objective_terms", "with_lag_floors", "replay_to_lag_floors", "add_hold_keys",
           "hold_rule_violations", "add_enforced", "hold_op_waits", "hold_ops", "add_hold_wait_constraints"]


@dataclass(frozen=True, slots=True)
class LinkHold:
    """One end of a link transfer on this device (see the module).

    Examples
    --------
    >>> LinkHold("recv", 8, 1000, head=3, op=1, tensors=(0,)).end(5)
    13
    >>> LinkHold("both", 1, 1)
    Traceback (most recent call last):
    ...
    ValueError: a link hold is 'recv' or 'send', got 'both'
    """

    role: str
    duration_cycles: int
    shares: int  # of the slow level, 0..SHARE_UNITS
    head: int = 0
    tail: int = 0
    op: int = -1
    tensors: tuple[int, ...] = ()
    after: int = -1
    name: str = ""  # the caller's name of the transfer (for messages and to map the start back)
    lags: tuple[tuple[int, int], ...] = ()  # (hold j, lag): starts at or after start(j) + lag (a round trip)

    def __post_init__(self) -> None:
        if self.role not in ("recv", "send"):
            raise ValueError(f"a link hold is 'recv' or 'send', got {self.role!r}")
        if min(self.duration_cycles, self.head, self.tail) < 0 or not 0 <= self.shares <= SHARE_UNITS:
            raise ValueError(f"a link hold needs durations, heads and tails >= 0 and shares in 0..{SHARE_UNITS}: {self}")
        object.__setattr__(self, "tensors", tuple(self.tensors))
        object.__setattr__(self, "lags", tuple((int(j), int(lag)) for j, lag in self.lags))
        if any(lag < 0 for _, lag in self.lags):
            raise ValueError(f"a link hold's lags are >= 0: {self}")

    def end(self, start: int) -> int:
        return start + self.duration_cycles


def _evictions(solution: LevelSolution) -> dict[int, int]:
    return {tr.tensor: q for q, tr in enumerate(solution.transfers) if tr.kind is TransferKind.EVICT}


def hold_ops(problem, hold) -> set[int]:
    """The ops a hold is tied to, whatever the level problem (its ``is_real`` and ``accesses``): a
    recv's op and every later access of its tensors (they start after its end); a send's op and
    its tensors' producers (it starts after their ends)."""
    ops = {hold.op} if problem.is_real(hold.op) else set()
    if hold.role == "recv":
        ops.update(a for t in hold.tensors for a in problem.accesses(t)[1:] if problem.is_real(a))
    else:
        ops.update(problem.accesses(t)[0] for t in hold.tensors if problem.is_real(problem.accesses(t)[0]))
    return ops


def hold_op_waits(problem, holds) -> tuple[dict, dict]:
    """``(waits_of_hold, waiters_of_hold)`` without the DMAs, whatever the level problem
    (:func:`hold_ops`): a hold waits for the one before it on its link; a recv is waited for by
    its op and every later access of its tensors; a send waits for its op and its tensors'
    producers. The DMA keys are each problem's own (:func:`hold_waits`,
    :func:`~solvers.memory.levels.hierarchy_link_holds.hierarchy_hold_waits`)."""
    waits: dict = {}
    waiters: dict = {}
    for k, h in enumerate(holds):
        mine = waits.setdefault(("hold", k), set())
        if h.after >= 0:
            mine.add(("hold", h.after))
        ops = {("op", a) for a in hold_ops(problem, h)}
        if h.role == "recv":
            waiters.setdefault(("hold", k), set()).update(ops)
        else:
            mine.update(ops)
    return waits, waiters


def hold_waits(problem: LevelProblem, solution: LevelSolution, holds) -> tuple[dict, dict]:
    """``(waits_of_hold, waiters_of_hold)``: per hold k, the keys (``("op", i)``, ``("dma", q)``,
    ``("hold", k2)``) whose ends it waits for, and the keys that wait for its end: a recv's
    prefetches wait for it, a send waits for its tensors' evictions."""
    waits, waiters = hold_op_waits(problem, holds)
    evict_q = _evictions(solution)
    for k, h in enumerate(holds):
        if h.role == "recv":
            waiters[("hold", k)].update(("dma", q) for q, tr in enumerate(solution.transfers)
                                        if tr.kind is TransferKind.PREFETCH and tr.tensor in h.tensors)
        else:
            waits[("hold", k)].update(("dma", evict_q[t]) for t in h.tensors if t in evict_q)
    return waits, waiters


def add_hold_waits(problem: LevelProblem, solution: LevelSolution, holds, deps: dict, length: dict,
                   floor: dict, priority: dict, shares: dict) -> None:
    """The holds as keys of the replay's list schedule (``("hold", k)``), in place: their waits,
    lengths, heads as floors, slow shares, and their rank in the start order (the solution's
    ``link_starts``; without them, an estimate from its times: the head, or a send's waits' ends)."""
    ends = {("op", i): s + d for i, (s, d) in enumerate(zip(solution.op_start, solution.op_duration))}
    ends.update({("dma", q): tr.end_cycle for q, tr in enumerate(solution.transfers)})
    add_hold_keys(holds, solution.link_starts, ends, hold_waits(problem, solution, holds),
                  [(0, h.shares) for h in holds], deps, length, floor, priority, shares)


def add_hold_keys(holds, link_starts, ends: dict, waits_and_waiters: tuple[dict, dict], hold_shares,
                  deps: dict, length: dict, floor: dict, priority: dict, shares: dict) -> None:
    """The replay keys of the holds, whatever the level problem (two levels, :func:`add_hold_waits`;
    N levels, :func:`~solvers.memory.levels.hierarchy_link_holds.add_hierarchy_hold_keys`), in
    place: ``ends`` of the other keys, the holds' waits and waiters, and each hold's shares."""
    waits, waiters = waits_and_waiters
    known = len(link_starts) == len(holds)
    for k, h in enumerate(holds):
        key = ("hold", k)
        deps[key] = set(waits[key])
        for w in waiters.get(key, ()):
            deps[w].add(key)
        length[key] = h.duration_cycles
        if h.head:
            floor[key] = max(floor.get(key, 0), h.head)
        shares[key] = hold_shares[k]
        estimate = max([h.head] + [ends[w] for w in waits[key] if w in ends])
        priority[key] = (link_starts[k] if known else estimate, 2, k)


def hold_rule_violations(holds, link_starts, starts: dict, ends: dict, waits_and_waiters: tuple[dict, dict]
                         ) -> list[str]:
    """The rules a hold's start keeps whatever the level problem: at or after its head and its
    lags, after what it waits for, before what waits for it (``starts``/``ends`` of every key,
    the holds' included; ``link_starts`` as many as ``holds``)."""
    waits, waiters = waits_and_waiters
    errs = []
    for k, h in enumerate(holds):
        key, s = ("hold", k), link_starts[k]
        if s < h.head:
            errs.append(f"{h.role} link hold {k} starts at {s} before its head {h.head}")
        errs += [f"{h.role} link hold {k} starts at {s} before link hold {j} starts at "
                 f"{link_starts[j]} + lag {lag}" for j, lag in h.lags if s < link_starts[j] + lag]
        errs += [f"{h.role} link hold {k} starts at {s} before {w[0]} {w[1]} ends at {ends[w]}"
                 for w in sorted(waits[key]) if ends[w] > s]
        errs += [f"{w[0]} {w[1]} starts at {starts[w]} before {h.role} link hold {k} ends at {ends[key]}"
                 for w in sorted(waiters.get(key, ())) if starts[w] < ends[key]]
    return errs


def hold_violations(problem: LevelProblem, solution: LevelSolution, holds) -> list[str]:
    """Every hold rule ``solution`` breaks: its start (present, at or after its head), its waits
    and waiters, and the slow level's shares at every cycle with the holds beside the ops and
    DMAs (:func:`~solvers.memory.levels.bandwidth.bandwidth_spans`).

    Examples
    --------
    A RECV of all the slow level's shares beside op 0 reading the slow level:

    >>> p = LevelProblem((4, 4), ((0,), ()), ((), ()), (8,), (64, 99), (4, 1), shared_bandwidth=True)
    >>> s = LevelSolution(((False, False),), ((False, False),), (), (0, 8), (8, 4), link_starts=(2,))
    >>> hold_violations(p, s, (LinkHold("recv", 4, 1000),))
    ['slow level bandwidth: 2000 of 1000 shares at cycle 2 (op 0, recv link hold 0)']
    >>> hold_violations(p, s, (LinkHold("recv", 4, 1000, head=3, op=1),))
    ['recv link hold 0 starts at 2 before its head 3', 'slow level bandwidth: 2000 of 1000 shares at cycle 2 (op 0, recv link hold 0)']
    """
    if not holds:
        return []
    if len(solution.link_starts) != len(holds):
        return [f"{len(holds)} link holds but {len(solution.link_starts)} link starts"]
    errs: list[str] = []
    starts = {("hold", k): s for k, s in enumerate(solution.link_starts)}
    starts.update({("op", i): s for i, s in enumerate(solution.op_start)})
    starts.update({("dma", q): tr.start_cycle for q, tr in enumerate(solution.transfers)})
    ends = {("hold", k): h.end(s) for k, (h, s) in enumerate(zip(holds, solution.link_starts))}
    ends.update({("op", i): s + d for i, (s, d) in enumerate(zip(solution.op_start, solution.op_duration))})
    ends.update({("dma", q): tr.end_cycle for q, tr in enumerate(solution.transfers)})
    errs += hold_rule_violations(holds, solution.link_starts, starts, ends, hold_waits(problem, solution, holds))
    spans = [(sp[0], sp[1], sp[3], sp[4]) for sp in bandwidth_spans(problem, solution) if sp[3]]
    spans += [(s, h.end(s), h.shares, f"{h.role} link hold {k}")
              for k, (h, s) in enumerate(zip(holds, solution.link_starts)) if h.duration_cycles and h.shares]
    for when in sorted({sp[0] for sp in spans}):
        running = [sp for sp in spans if sp[0] <= when < sp[1]]
        load = sum(sp[2] for sp in running)
        if load > SHARE_UNITS:
            errs.append(f"slow level bandwidth: {load} of {SHARE_UNITS} shares at cycle {when} "
                        f"({', '.join(sp[3] for sp in sorted(running))})")
            break
    return errs


def with_lag_floors(holds, link_starts) -> tuple:
    """The holds with each head raised to what its lags ask of ``link_starts`` (a replay's):
    the replay's floors for the next round (:func:`~solvers.memory.levels.heads_tails.retime_heads_tails`
    replays until nothing moves)."""
    return tuple(replace(h, head=max([h.head] + [link_starts[j] + lag for j, lag in h.lags])) if h.lags else h
                 for h in holds)


def replay_to_lag_floors(replay: Callable[[tuple], Any], holds: tuple) -> tuple[Any, bool]:
    """``replay(holds)`` (a replay with ``.link_start``), and with round trips (holds with lags)
    again with each head raised to its lags (:func:`with_lag_floors`) until nothing moves, at
    most ``len(holds) + 1`` rounds: (the last replay, whether the heads settled)."""
    r = replay(holds)
    if not any(h.lags for h in holds):
        return r, True
    for _ in range(len(holds) + 1):
        raised = with_lag_floors(holds, r.link_start)
        if raised == holds:
            return r, True
        holds = raised
        r = replay(holds)
    return r, False


def hold_objective_terms(solution: LevelSolution, holds) -> list[int]:
    """What the holds add to the heads and tails' objective: each hold's end plus its tail."""
    if len(solution.link_starts) != len(holds):
        raise ValueError(f"{len(holds)} link holds but {len(solution.link_starts)} link starts: re-time the plan first")
    return [h.end(s) + h.tail for h, s in zip(holds, solution.link_starts)]


def add_link_hold_vars(model, v, holds, horizon: int) -> None:
    """Each hold's start (``v.hold_start``) and fixed-size interval with its slow shares
    (``v.hold_intervals``: ``(interval, shares)``, added to the slow level's Cumulative by
    :func:`~solvers.memory.levels.bandwidth.add_bandwidth`)."""
    v.hold_start, v.hold_intervals = [], []
    for k, h in enumerate(holds):
        start = model.new_int_var(h.head, max(h.head, horizon - h.duration_cycles - h.tail), f"hold_start_{k}")
        v.hold_start.append(start)
        if h.duration_cycles and h.shares:
            v.hold_intervals.append((model.new_fixed_size_interval_var(start, h.duration_cycles, f"hold_{k}"),
                                     h.shares))


def add_enforced(model, relation, literal) -> None:
    """``relation`` in ``model``, enforced by ``literal`` (a constant literal: always or never;
    a constant relation: nothing to add, or infeasible where it must hold)."""
    if isinstance(relation, bool):  # both sides constant
        if not relation and isinstance(literal, int) and literal:
            model.add_bool_or([])  # infeasible
        return
    ct = model.add(relation)
    if not isinstance(literal, int):
        ct.only_enforce_if(literal)


def add_hold_wait_constraints(model, problem, v, holds, add_dma_waits) -> None:
    """The holds' waits in a level model ``v`` (its ``hold_start``, ``start`` and ``end``), whatever
    the level problem, hold by hold in one order (a CP-SAT model's constraint order steers its
    search): after the previous hold on its link, after its lags, its ops (:func:`hold_ops`: a
    recv's start after its end, a send after theirs), then ``add_dma_waits(k, hold, start, end)``,
    the problem's own DMA waits (:func:`add_link_hold_waits`,
    :func:`~solvers.memory.levels.hierarchy_link_holds.add_hierarchy_link_hold_waits`). A relation
    between constants (a window model's fixed starts) is checked, not added (:func:`add_enforced`)."""
    for k, h in enumerate(holds):
        start = v.hold_start[k]
        end = start + h.duration_cycles
        if h.after >= 0:
            add_enforced(model, start >= v.hold_start[h.after] + holds[h.after].duration_cycles, 1)
        for j, lag in h.lags:
            add_enforced(model, start >= v.hold_start[j] + lag, 1)
        for a in sorted(hold_ops(problem, h)):
            add_enforced(model, v.start[a] >= end if h.role == "recv" else start >= v.end(a), 1)
        add_dma_waits(k, h, start, end)


def add_link_hold_waits(model, problem: LevelProblem, v, holds) -> None:
    """The holds' waits in the level model ``v`` (after :func:`add_link_hold_vars`): a recv's
    waiters start after its end (a prefetch when present), a send starts after its source op,
    its tensors' producers and their evictions (when evicted), each after the previous one on
    its link (:func:`add_hold_wait_constraints`)."""
    def dma_waits(k, h, start, end) -> None:
        for (kind, t, j), s in v.dma_start.items():
            if h.role == "recv" and kind == "p" and t in h.tensors:
                add_enforced(model, s >= end, v.prefetch[t, j])
            elif h.role == "send" and kind == "e" and t in h.tensors:
                add_enforced(model, start >= s + problem.dma_cycles(t), v.evict[t, j])

    add_hold_wait_constraints(model, problem, v, holds, dma_waits)
