"""Heads and tails for the level problem: what the rest of a multi-device plan imposes on one device.

A device's :class:`~solvers.memory.levels.problem.LevelProblem` times its ops alone, from
cycle 0, and minimises its own makespan. In a plan over several devices, the device also
waits for data it receives (*heads*, release times) and its results feed work elsewhere
(*tails*, the critical path that must follow them). :class:`HeadsTails` says both, in the
device's cycles:

``op_release[i]``      op i starts at or after this cycle (its received inputs arrive then);
``tensor_ready[t]``    a prefetch of tensor t starts at or after this cycle (a received copy
                       reaches the slow level then);
``op_tail[i]``         the plan cannot end before ``end(i) + op_tail[i]``;
``tensor_tail[t]``     the plan cannot end before ``t`` is in the slow level (its producer's
                       end when written slow, else its eviction's end) ``+ tensor_tail[t]``
                       (a sent tensor: the link transfer waits for the slow copy);
``deadlines``          :class:`SentDeadline` rows: a sent tensor's slow copy is ready at least
                       ``lag_cycles`` before an op of this device starts (or a prefetch of a
                       received tensor starts) that waits, through other devices, for the
                       transfer that carries it. Without them a plan may copy the tensor to slow
                       memory only after such an op, and the whole plan deadlocks.
``link_holds``         shared bandwidth only: the device's ends of link transfers as
                       :class:`~solvers.memory.levels.link_holds.LinkHold` intervals holding
                       shares of the slow level (a RECV before what reads its copy, a SEND after
                       the sent tensor is slow, its end plus its tail in the objective); their
                       starts are the solution's ``link_starts``.

Objective: ``max(makespan, end(i) + op_tail[i], slow_ready(t) + tensor_tail[t], end(h) + tail(h))``
over ops, tensors and link holds (:func:`objective_cycles`). Empty tuples mean none (every entry 0): the objective is
then the makespan and every solver here gives the plain problem's plans.

Solvers over an unsplit problem (a split solution's problem expanded first, see
:meth:`HeadsTails.expanded`): the greedy's decisions and everything in slow memory re-timed
under the heads (:func:`retime_heads_tails`), and :func:`solve_heads_tails`, the exact CP-SAT
model of :mod:`solvers.memory.levels.cpsat` with the heads as start bounds and the tails in
its objective, hinted by and never worse than the best of those plans (and of a given
incumbent). :func:`validate_heads_tails` checks a solution independently.

Examples
--------
Op 1 (compute 2) reads weight 0 (8 bytes); op 0 (compute 8) touches nothing. Alone, the
weight is prefetched under op 0 and the plan takes 10 cycles; if op 0 also cannot start
before cycle 5, everything moves by 5:

>>> from solvers.core import SolveOptions
>>> p = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
>>> ht = HeadsTails(op_release=(5, 0))
>>> r = solve_heads_tails(p, ht, SolveOptions(time_limit_s=5))
>>> r.status.value, r.objective, r.solution.op_start
('OPTIMAL', 15, (5, 13))
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from solvers.budget import MEMORY_LEVELS, Budget, Calibration
from solvers.core import SolveOptions, SolveResult, Status, failure_result
from solvers.dag import WaitDeadlock
from solvers.memory.levels.bandwidth import slow_traffic_lower_bound
from solvers.memory.levels.cpsat import build_level_model, exact_model_fits
from solvers.memory.levels.greedy import plan_all_slow, plan_greedy
from solvers.memory.levels.link_holds import LinkHold, hold_objective_terms, hold_violations, replay_to_lag_floors
from solvers.memory.levels.problem import LevelProblem, LevelSolution, Transfer, TransferKind
from solvers.memory.levels.split import SplitMap
from solvers.memory.levels.validate import op_duration_lower_bounds, replay_levels, validate_levels
from solvers.cpsat_support import integer_objective_bound

__all__ = ["HeadsTails", "SentDeadline", "settle_deadlines", "objective_cycles", "retime_heads_tails", "validate_heads_tails", "solve_heads_tails",
           "heads_tails_lower_bound",
           "with_split_factors", "deadline_violations", "sent_deadline_violations", "add_sent_deadlines", "one_machine_lower_bound",
           "HEADS_TAILS_WINDOW_ABOVE_OPS", "copy_ready"]

# Above this many ops a prefetch's trigger is limited to the 16 ops before its consumer, as
# the level solver's own "auto" window does (the unrestricted model grows quadratically).
HEADS_TAILS_WINDOW_ABOVE_OPS = 64
_TRIGGER_WINDOW_OPS = 16


@dataclass(frozen=True, slots=True)
class SentDeadline:
    """Sent ``tensor`` is in the slow level (its producer's end when written slow, else its
    eviction's end) at least ``lag_cycles`` before ``op`` starts, or before any prefetch of the
    received tensor ``received`` starts (exactly one of the two is >= 0).

    The op (the prefetch) waits, through the link transfer of ``tensor`` and the other devices'
    ops and links, for that slow copy: ``lag_cycles`` is the shortest such wait (durations of
    the path from the transfer's start to the end of the transfer into this device).

    Examples
    --------
    >>> SentDeadline(tensor=2, op=5, lag_cycles=40).received
    -1
    >>> SentDeadline(tensor=2)
    Traceback (most recent call last):
    ...
    ValueError: a sent-tensor deadline names an op or a received tensor (exactly one), got op=-1 received=-1
    """

    tensor: int
    op: int = -1
    received: int = -1
    lag_cycles: int = 0

    def __post_init__(self) -> None:
        if (self.op >= 0) == (self.received >= 0):
            raise ValueError("a sent-tensor deadline names an op or a received tensor (exactly one), "
                             f"got op={self.op} received={self.received}")
        if self.tensor < 0 or self.lag_cycles < 0:
            raise ValueError(f"a sent-tensor deadline needs tensor >= 0 and lag >= 0, got {self}")


@dataclass(frozen=True, slots=True)
class HeadsTails:
    """Release times and tails of one device's level problem (device cycles; see the module).

    Examples
    --------
    >>> ht = HeadsTails(op_release=(0, 7), tensor_tail=(3,))
    >>> ht.release(1), ht.release(0), ht.tail_of_tensor(0), ht.tail_of_op(1), ht.is_empty
    (7, 0, 3, 0, False)
    >>> HeadsTails().is_empty
    True
    """

    op_release: tuple[int, ...] = ()
    op_tail: tuple[int, ...] = ()
    tensor_ready: tuple[int, ...] = ()
    tensor_tail: tuple[int, ...] = ()
    deadlines: tuple[SentDeadline, ...] = ()  # sent tensors' slow copies before what waits on them
    link_holds: tuple[LinkHold, ...] = ()  # link transfers' ends holding slow shares (shared bandwidth)

    def __post_init__(self) -> None:
        for name in ("op_release", "op_tail", "tensor_ready", "tensor_tail"):
            values = tuple(int(x) for x in getattr(self, name))
            if any(x < 0 for x in values):
                raise ValueError(f"heads and tails must be >= 0, got {name}={values}")
            object.__setattr__(self, name, values)
        object.__setattr__(self, "deadlines", tuple(self.deadlines))
        object.__setattr__(self, "link_holds", tuple(self.link_holds))

    @staticmethod
    def _at(values: tuple[int, ...], k: int) -> int:
        return values[k] if 0 <= k < len(values) else 0

    def release(self, op: int) -> int:
        return self._at(self.op_release, op)

    def ready(self, tensor: int) -> int:
        return self._at(self.tensor_ready, tensor)

    def tail_of_op(self, op: int) -> int:
        return self._at(self.op_tail, op)

    def tail_of_tensor(self, tensor: int) -> int:
        return self._at(self.tensor_tail, tensor)

    @property
    def is_empty(self) -> bool:
        return not any((*self.op_release, *self.op_tail, *self.tensor_ready, *self.tensor_tail)) and not (
            self.deadlines or self.link_holds)

    def check(self, problem: LevelProblem) -> None:
        """Raise ValueError unless every row fits ``problem`` (empty, or one entry per op/tensor)."""
        for name, n in (("op_release", problem.num_ops), ("op_tail", problem.num_ops),
                        ("tensor_ready", problem.num_tensors), ("tensor_tail", problem.num_tensors)):
            if getattr(self, name) and len(getattr(self, name)) != n:
                raise ValueError(f"{name} needs {n} entries, got {len(getattr(self, name))}")
        for dl in self.deadlines:
            if dl.tensor >= problem.num_tensors or dl.op >= problem.num_ops or dl.received >= problem.num_tensors:
                raise ValueError(f"{dl} names an op or tensor the problem does not have")
        if self.link_holds and not problem.shared_bandwidth:
            raise ValueError("link holds are shares of the slow level: only with shared bandwidth")
        for k, h in enumerate(self.link_holds):
            if h.op >= problem.num_ops or any(not 0 <= t < problem.num_tensors for t in h.tensors) or not (
                    -1 <= h.after < k):
                raise ValueError(f"link hold {k} names an op, tensor or earlier hold the problem does not have: {h}")

    def expanded(self, problem: LevelProblem, smap: SplitMap) -> "HeadsTails":
        """The same heads and tails over a split expansion: every portion of an op or tensor
        gets the original's (later portions start later anyway; the last ends last).

        Examples
        --------
        >>> p = LevelProblem((4, 4), ((0,), (1,)), ((1,), ()), (8, 8), (64, 99), (4, 1))
        >>> HeadsTails(op_release=(0, 9)).expanded(p, SplitMap(((0, 0), (1, 0), (1, 1)), ((0, 0), (1, 0)),
        ...                                                     (2,))).op_release
        (0, 9, 9)
        """
        def rows(values, origin):
            return tuple(values[o] for o, _ in origin) if values else ()
        return HeadsTails(rows(self.op_release, smap.op_origin), rows(self.op_tail, smap.op_origin),
                          rows(self.tensor_ready, smap.tensor_origin), rows(self.tensor_tail, smap.tensor_origin),
                          _expanded_deadlines(self.deadlines, smap), _expanded_holds(self.link_holds, smap))


def _portions(smap: SplitMap) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per original op and per original tensor, its portions' indices in the expanded problem."""
    ops: dict[int, list[int]] = {}
    tensors: dict[int, list[int]] = {}
    for new, (orig, _) in enumerate(smap.op_origin):
        ops.setdefault(orig, []).append(new)
    for new, (orig, _) in enumerate(smap.tensor_origin):
        tensors.setdefault(orig, []).append(new)
    return ops, tensors


def _expanded_holds(holds: tuple[LinkHold, ...], smap: SplitMap) -> tuple[LinkHold, ...]:
    """Every hold over the portions: a recv before every portion of its op and tensors, a send
    after the last portion of its op and every portion of its tensors."""
    if not holds:
        return ()
    ops, tensors = _portions(smap)
    out = []
    for h in holds:
        portions = ops.get(h.op, [h.op]) if h.op >= 0 else [-1]
        out.append(replace(h, op=portions[0] if h.role == "recv" else portions[-1],
                           tensors=tuple(t for orig in h.tensors for t in tensors[orig])))
    return tuple(out)


def _expanded_deadlines(deadlines: tuple[SentDeadline, ...], smap: SplitMap) -> tuple[SentDeadline, ...]:
    """Every portion of a deadline's tensor before every portion of its op (received tensor)."""
    if not deadlines:
        return ()
    ops, tensors = _portions(smap)
    return tuple(SentDeadline(t, op, -1, dl.lag_cycles) if dl.op >= 0 else SentDeadline(t, -1, op, dl.lag_cycles)
                 for dl in deadlines for t in tensors[dl.tensor]
                 for op in (ops[dl.op] if dl.op >= 0 else tensors[dl.received]))


def _slow_ready(problem: LevelProblem, solution: LevelSolution) -> dict[int, int]:
    """Per tensor with a tail: the cycle its copy is in the slow level (producer end or eviction end)."""
    evicted = {tr.tensor: tr.end_cycle for tr in solution.transfers if tr.kind is TransferKind.EVICT}
    return copy_ready(problem, solution, evicted)


def copy_ready(problem, solution, evicted: dict[int, int]) -> dict[int, int]:
    """Per tensor, the cycle its copy in main memory is ready: the end of its last eviction
    there (``evicted``), else its producer's end, else 0 (an input). ``problem`` and
    ``solution`` are a two-level or an N-level pair (``accesses``, ``is_real``, ``op_start``,
    ``op_duration``)."""
    ready = {}
    for t in range(problem.num_tensors):
        producer = problem.accesses(t)[0]
        if t in evicted:
            ready[t] = evicted[t]
        elif problem.is_real(producer):
            ready[t] = solution.op_start[producer] + solution.op_duration[producer]
        else:
            ready[t] = 0
    return ready


def objective_cycles(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> int:
    """``max(makespan, end(i) + op_tail[i], slow_ready(t) + tensor_tail[t])`` (unsplit problem).

    Examples
    --------
    >>> p = LevelProblem((4,), ((),), ((0,),), (8,), (8, 99), (4, 1))
    >>> s = LevelSolution(((False,),), ((False,),), (), (0,), (4,))
    >>> objective_cycles(p, s, HeadsTails()), objective_cycles(p, s, HeadsTails(tensor_tail=(10,)))
    (4, 14)
    """
    best = solution.makespan_cycles
    for i in range(problem.num_ops):
        if ht.tail_of_op(i):
            best = max(best, solution.op_start[i] + solution.op_duration[i] + ht.tail_of_op(i))
    if ht.tensor_tail:
        ready = _slow_ready(problem, solution)
        best = max([best] + [ready[t] + ht.tail_of_tensor(t) for t in range(problem.num_tensors)
                             if ht.tail_of_tensor(t)])
    return max([best] + hold_objective_terms(solution, ht.link_holds))


def retime_heads_tails(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> LevelSolution:
    """The same decisions, every op and DMA as soon as the plan, the heads and the sent-tensor
    deadlines allow. Raises ValueError if the waits deadlock (also: a deadline's op or prefetch
    comes, in the plan's own order, before the slow copy it must wait for)."""
    if ht.deadlines:
        return _retime_with_deadlines(problem, solution, ht)
    return _retimed(problem, solution, ht.op_release, ht.tensor_ready, ht.link_holds)


def _retimed(problem: LevelProblem, solution: LevelSolution, op_release, tensor_ready,
             link_holds: tuple[LinkHold, ...] = ()) -> LevelSolution:
    r, settled = replay_to_lag_floors(  # round trips: each head raised to its lags, until nothing moves
        lambda holds: replay_levels(problem, solution, op_release=op_release, tensor_ready=tensor_ready,
                                    link_holds=holds), link_holds)
    if not settled:
        raise WaitDeadlock("deadlock: link holds' round trips wait on each other")
    transfers = tuple(Transfer(tr.kind, tr.tensor, tr.gap, tr.trigger_op, tr.release_op, s, tr.duration_cycles)
                      for tr, s in zip(solution.transfers, r.transfer_start))
    return LevelSolution(solution.in_fast, solution.kept, transfers, r.op_start, r.op_duration,
                         solution.split_factors, link_starts=r.link_start)


def _retime_with_deadlines(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> LevelSolution:
    """:func:`retime_heads_tails` with deadlines: each deadline raises its op's release (its
    received tensor's ready cycle) to the slow copy's ready cycle plus the lag, and the replay
    runs again until nothing moves. The waits only grow and a longest path crosses each
    deadline at most once, so without a cycle this settles within ``len(deadlines) + 1``
    replays; still moving after that, the deadlines wait on the plan's own order (a cycle)."""
    return settle_deadlines(ht, problem.num_ops, problem.num_tensors,
                            lambda release, ready: _retimed(problem, solution, release, ready, ht.link_holds),
                            lambda timed: _slow_ready(problem, timed),
                            "a sent tensor's slow copy comes after an op or prefetch that waits for it")


def settle_deadlines(ht: HeadsTails, num_ops: int, num_tensors: int, retime: Callable, copy_ready_of: Callable,
                     deadlock: str):
    """The sent-tensor deadlines' fixed point, over two levels or N: ``retime(release, ready)``
    replays the plan with these op releases and tensor ready cycles (``ht``'s heads to start
    with), ``copy_ready_of(timed)`` gives the cycle each tensor's main-memory copy is ready; each
    deadline raises its op's release (its received tensor's ready cycle) to that copy plus the
    lag, and the replay runs again until nothing moves. The waits only grow and a longest path
    crosses each deadline at most once, so without a cycle this settles within
    ``len(ht.deadlines) + 1`` replays; still moving after that, it raises ValueError
    ("deadlock: " + ``deadlock``)."""
    release = list(ht.op_release) or [0] * num_ops
    ready = list(ht.tensor_ready) or [0] * num_tensors
    for _ in range(len(ht.deadlines) + 2):
        timed = retime(release, ready)
        if not ht.deadlines:
            return timed
        copy = copy_ready_of(timed)
        moved = False
        for dl in ht.deadlines:
            need = copy[dl.tensor] + dl.lag_cycles
            row, k = (release, dl.op) if dl.op >= 0 else (ready, dl.received)
            if row[k] < need:
                row[k], moved = need, True
        if not moved:
            return timed
    raise WaitDeadlock(f"deadlock: {deadlock}")


def deadline_violations(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> list[str]:
    """Each sent-tensor deadline the timed ``solution`` breaks (unsplit problem).

    Examples
    --------
    Op 0 writes tensor 0 (sent) fast and op 1 reads it; the eviction after op 1 runs from 8 to
    16, but op 1 itself waits (through the receiver) for that slow copy with a lag of 3: a
    cycle, which the whole plan's re-timing would find as a deadlock:

    >>> p = LevelProblem((4, 4), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1), live_out=(0,))
    >>> ev = Transfer(TransferKind.EVICT, 0, 2, 1, 2, 8, 8)
    >>> s = LevelSolution(((True, True, False),), ((False, True, False),), (ev,), (0, 4), (4, 4))
    >>> deadline_violations(p, s, HeadsTails(deadlines=(SentDeadline(0, op=1, lag_cycles=3),)))
    ['op 1 starts at 4, before sent tensor 0 is in slow memory at 16 + lag 3']
    """
    if not ht.deadlines:
        return []
    prefetch_starts: dict[int, list[int]] = {}
    for tr in solution.transfers:
        if tr.kind is TransferKind.PREFETCH:
            prefetch_starts.setdefault(tr.tensor, []).append(tr.start_cycle)
    return sent_deadline_violations(problem, ht, _slow_ready(problem, solution), solution.op_start, prefetch_starts,
                                    "in slow memory", "a prefetch")


def sent_deadline_violations(problem, ht: HeadsTails, ready_at: Sequence[int], op_start: Sequence[int],
                             fetch_starts: Mapping[int, Sequence[int]], where: str, fetch: str) -> list[str]:
    """The sent-tensor deadline rule, for two levels and N (:func:`deadline_violations`,
    ``hierarchy_deadline_violations``): each deadline's op, and each fetch of its received
    tensor (``fetch_starts``: tensor -> the starts of the moves that bring it in from where it
    arrives), starts no earlier than the sent tensor's copy is ready ``where`` (``ready_at``:
    cycle per tensor) plus the lag. ``problem`` names ops and tensors; ``fetch`` names a fetch.

    Examples
    --------
    >>> p = LevelProblem((4, 4), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1), live_out=(0,))
    >>> ht = HeadsTails(deadlines=(SentDeadline(0, op=1, lag_cycles=3),))
    >>> sent_deadline_violations(p, ht, (16,), (0, 19), {}, "in slow memory", "a prefetch")
    []
    >>> sent_deadline_violations(p, ht, (16,), (0, 18), {}, "at home", "a fetch")
    ['op 1 starts at 18, before sent tensor 0 is at home at 16 + lag 3']
    """
    errs = []
    for dl in ht.deadlines:
        need = ready_at[dl.tensor] + dl.lag_cycles
        what = f"sent tensor {problem.tensor_name(dl.tensor)} is {where} at {ready_at[dl.tensor]} + lag {dl.lag_cycles}"
        if dl.op >= 0 and op_start[dl.op] < need:
            errs.append(f"op {problem.op_name(dl.op)} starts at {op_start[dl.op]}, before {what}")
        for start in fetch_starts.get(dl.received, ()) if dl.received >= 0 else ():
            if start < need:
                errs.append(f"{fetch} of tensor {problem.tensor_name(dl.received)} starts at {start}, before {what}")
    return errs


def validate_heads_tails(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> list[str]:
    """Every violated rule: :func:`~solvers.memory.levels.validate.validate_levels`, then no op
    before its release, no prefetch before its tensor is ready and no sent-tensor deadline
    broken (:func:`deadline_violations`; unsplit problem).

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1))
    >>> s = LevelSolution(((False, False),), ((False, False),), (), (0,), (8,))
    >>> validate_heads_tails(p, s, HeadsTails(op_release=(3,)))
    ['op 0 starts at 0 before its release 3']
    """
    errs = validate_levels(problem, solution)
    if errs:
        return errs
    for i, s in enumerate(solution.op_start):
        if s < ht.release(i):
            errs.append(f"op {problem.op_name(i)} starts at {s} before its release {ht.release(i)}")
    for tr in solution.transfers:
        if tr.kind is TransferKind.PREFETCH and tr.start_cycle < ht.ready(tr.tensor):
            errs.append(f"prefetch of tensor {problem.tensor_name(tr.tensor)} starts at {tr.start_cycle} "
                        f"before it is ready at {ht.ready(tr.tensor)}")
    return errs + deadline_violations(problem, solution, ht) + hold_violations(problem, solution, ht.link_holds)


def heads_tails_lower_bound(problem: LevelProblem, ht: HeadsTails) -> int:
    """A lower bound on :func:`objective_cycles` over every plan of the unsplit ``problem``.

    Each op takes at least its shortest duration (:func:`op_duration_lower_bounds`: every byte
    at the faster level) and starts no earlier than its release, the end of the previous op of
    its stream (all of them run in order on one stream) and the ends of the producers of what it
    reads, so op i cannot end before ``e_i = max(e_prev(i), e_producers(i), release_i) +
    shortest_i``; a tensor is in slow memory no earlier than its producer ends (an input from
    cycle 0), so an op with a sent-tensor deadline also starts no earlier than that producer's
    end plus the lag; an op waiting for a link's receive hold starts no earlier than the hold's
    head plus its duration, and a hold ends no earlier than its head (a send: its waits' ends)
    plus its duration, then its tail. Capacity and DMAs are dropped. With shared bandwidth, also the slow
    level's forced traffic (:func:`~solvers.memory.levels.bandwidth.slow_traffic_lower_bound`),
    a bound on the makespan and so on the objective.

    Examples
    --------
    >>> p = LevelProblem((8, 2), ((), (0,)), ((), ()), (8,), (8, 99), (4, 1))
    >>> heads_tails_lower_bound(p, HeadsTails(op_release=(5, 0), op_tail=(0, 3)))  # 5 + 8 + 2 + 3
    18
    """
    shortest = op_duration_lower_bounds(problem)
    end, best = [], 0
    stream_end: dict[int, int] = {}
    waits = _deadline_waits(problem, ht)
    recv = _recv_floors(problem, ht)
    for i in range(problem.num_ops):
        producers = (problem.accesses(t)[0] for t in problem.reads[i])
        ready = max([stream_end.get(problem.stream_of(i), 0), ht.release(i), recv.get(i, 0)]
                    + [end[p] for p in producers if problem.is_real(p)]
                    + [end[p] + lag for p, lag in waits.get(i, ()) if p < i])
        end.append(ready + shortest[i])
        stream_end[problem.stream_of(i)] = end[i]
        best = max(best, end[i] + ht.tail_of_op(i))
    for t in range(problem.num_tensors):
        if ht.tail_of_tensor(t):
            producer = problem.accesses(t)[0]
            best = max(best, (end[producer] if problem.is_real(producer) else 0) + ht.tail_of_tensor(t))
    if problem.shared_bandwidth:  # bandwidth: shared (bandwidth.py): the objective is at least the makespan
        best = max(best, slow_traffic_lower_bound(problem))
    for h in ht.link_holds:  # a link hold starts at or after its head (a send after its waits, too)
        after = [end[a] for a in _hold_source_ops(problem, h)] if h.role == "send" else []
        best = max(best, max([h.head] + after) + h.duration_cycles + h.tail)
    return best


def _hold_source_ops(problem: LevelProblem, h: LinkHold) -> list[int]:
    """The ops a send hold waits for: its source op and its tensors' producers."""
    ops = [h.op] + [problem.accesses(t)[0] for t in h.tensors]
    return [a for a in ops if problem.is_real(a)]


def _recv_floors(problem: LevelProblem, ht: HeadsTails) -> dict[int, int]:
    """Op -> the earliest end of a receive hold it waits for (its head plus its duration)."""
    floors: dict[int, int] = {}
    for h in ht.link_holds:
        if h.role == "recv":
            ops = [h.op] + [a for t in h.tensors for a in problem.accesses(t)[1:]]
            for a in ops:
                if problem.is_real(a):
                    floors[a] = max(floors.get(a, 0), h.head + h.duration_cycles)
    return floors


def _deadline_waits(problem: LevelProblem, ht: HeadsTails) -> dict[int, list[tuple[int, int]]]:
    """Op -> (producer of a sent tensor it waits for, lag): the slow copy is ready no earlier
    than that producer's end."""
    waits: dict[int, list[tuple[int, int]]] = {}
    for dl in ht.deadlines:
        producer = problem.accesses(dl.tensor)[0]
        if dl.op >= 0 and problem.is_real(producer):
            waits.setdefault(dl.op, []).append((producer, dl.lag_cycles))
    return waits


def _baselines(problem: LevelProblem, ht: HeadsTails, incumbent: LevelSolution | None) -> list[LevelSolution]:
    window = _TRIGGER_WINDOW_OPS if problem.num_ops > HEADS_TAILS_WINDOW_ABOVE_OPS else None
    plans = [s for s in (plan_greedy(problem, window), plan_all_slow(problem)) if s is not None]
    if incumbent is not None and not validate_levels(problem, incumbent):
        plans.append(incumbent)
    timed = []
    for s in plans:
        found = _retimed_or_repaired(problem, s, ht)
        if found is not None:
            timed.append(found)
    return timed


def _retimed_or_repaired(problem: LevelProblem, solution: LevelSolution, ht: HeadsTails) -> LevelSolution | None:
    """``solution`` re-timed under ``ht``; if its decisions break a sent-tensor deadline (a
    cycle), the same plan with every tensor a deadline names kept in slow memory only (no
    fast copy, no DMA: fast memory only gets freer, and the slow copy is ready when its
    producer ends); None if that is not possible either (a fast-only op touches one), or if
    the cycle is not a deadline's: link holds (shared bandwidth) can deadlock a baseline's
    DMA queue against a round trip, and such a baseline is simply not one."""
    try:
        return retime_heads_tails(problem, solution, ht)
    except ValueError:
        if ht.link_holds and not ht.deadlines:
            return None
        if not ht.deadlines:
            raise
    named = {dl.tensor for dl in ht.deadlines} | {dl.received for dl in ht.deadlines if dl.received >= 0}
    if any(problem.accesses(t)[j] in problem.fast_only_ops for t in named
           for j in range(len(problem.accesses(t)))):
        return None
    repaired = LevelSolution(
        tuple(tuple(False for _ in row) if t in named else row for t, row in enumerate(solution.in_fast)),
        tuple(tuple(False for _ in row) if t in named else row for t, row in enumerate(solution.kept)),
        tuple(tr for tr in solution.transfers if tr.tensor not in named),
        solution.op_start, solution.op_duration, solution.split_factors)
    try:
        if validate_levels(problem, retime_heads_tails(problem, repaired, HeadsTails())):
            return None
        return retime_heads_tails(problem, repaired, ht)
    except ValueError:
        return None


def _add_if(model, relation, literal) -> None:
    """``relation`` when ``literal`` holds (a constant 1: always; the model fixes absent DMAs' out)."""
    ct = model.add(relation)
    if not isinstance(literal, int):
        ct.only_enforce_if(literal)


def _add_heads_tails(model, problem: LevelProblem, v, ht: HeadsTails, upper: int):
    """Start bounds for the heads, and the objective ``max(makespan, ends + tails)`` (returned)."""
    for i in range(problem.num_ops):
        if ht.release(i):
            model.add(v.start[i] >= ht.release(i))
    for (kind, t, j), s in v.dma_start.items():
        if kind == "p" and ht.ready(t):
            _add_if(model, s >= ht.ready(t), v.prefetch[t, j])
    objective = model.new_int_var(0, upper, "objective")
    model.add(objective >= v.makespan)
    for start, h in zip(getattr(v, "hold_start", ()), ht.link_holds):  # link holds: end + tail
        model.add(objective >= start + h.duration_cycles + h.tail)
    for i in range(problem.num_ops):
        if ht.tail_of_op(i):
            model.add(objective >= v.end(i) + ht.tail_of_op(i))
    for t in range(problem.num_tensors):
        tail = ht.tail_of_tensor(t)
        producer = problem.accesses(t)[0]
        if not tail:
            continue
        # the transfer waits for the producer in any case (an input is in slow memory from 0)
        model.add(objective >= (v.end(producer) if problem.is_real(producer) else 0) + tail)
        for (kind, t2, j), s in v.dma_start.items():
            if kind == "e" and t2 == t:
                _add_if(model, objective >= s + problem.dma_cycles(t) + tail, v.evict[t, j])
    return objective


def add_sent_deadlines(model, problem: LevelProblem, v, ht: HeadsTails) -> None:
    """Each :class:`SentDeadline`: the op (every prefetch of the received tensor) starts at or
    after the sent tensor's slow copy plus the lag: after its producer's end in any case, and
    after its eviction's end when it is evicted."""
    for dl in ht.deadlines:
        producer = problem.accesses(dl.tensor)[0]
        evictions = [(s, v.evict[t, j]) for (kind, t, j), s in v.dma_start.items() if kind == "e" and t == dl.tensor]
        if dl.op >= 0:
            waiters = [(v.start[dl.op], 1)]
        else:
            waiters = [(s, v.prefetch[t, j]) for (kind, t, j), s in v.dma_start.items()
                       if kind == "p" and t == dl.received]
        for begin, present in waiters:
            if problem.is_real(producer):
                _add_if_all(model, begin >= v.end(producer) + dl.lag_cycles, present)
            for evict_start, evicted in evictions:
                _add_if_all(model, begin >= evict_start + problem.dma_cycles(dl.tensor) + dl.lag_cycles,
                            present, evicted)


def _add_if_all(model, relation, *literals) -> None:
    """``relation`` when every literal holds (constant 1s always do)."""
    ct = model.add(relation)
    enforce = [lit for lit in literals if not isinstance(lit, int)]
    if enforce:
        ct.only_enforce_if(enforce)


def solve_heads_tails(problem: LevelProblem, ht: HeadsTails, options: SolveOptions = SolveOptions(),
                      incumbent: LevelSolution | None = None,
                      calibration: Calibration = MEMORY_LEVELS) -> SolveResult[LevelSolution]:
    """Minimum :func:`objective_cycles` over the unsplit ``problem`` under ``ht``.

    The greedy, everything-in-slow and ``incumbent`` (if valid) plans re-timed under the
    heads are the baselines; the best hints the CP-SAT model, which is bounded by it, so the
    result is never worse. Above :data:`HEADS_TAILS_WINDOW_ABOVE_OPS` ops the prefetch
    triggers are limited to a window (a restriction: its proofs say nothing, the status is
    FEASIBLE). Deterministic: CP-SAT stops on its deterministic-time budget.
    """
    t0 = time.perf_counter()
    if problem.splits:
        raise ValueError("expand split groups first (HeadsTails.expanded)")
    ht.check(problem)
    plans = _baselines(problem, ht, incumbent)
    if not plans and not exact_model_fits(problem):
        return failure_result(Status.UNKNOWN, "cpsat-heads-tails", time.perf_counter() - t0)
    # No baseline (the greedy found none, and a fast-only op rules out everything in slow
    # memory): CP-SAT alone, under a horizon every plan fits in.
    best = min(plans, key=lambda s: objective_cycles(problem, s, ht)) if plans else None
    best_obj = objective_cycles(problem, best, ht) if plans else _horizon(problem, ht)
    lower = heads_tails_lower_bound(problem, ht)
    stats: dict = {"baseline_objective": best_obj if plans else None, "lower_bound": lower}
    if plans and (best_obj <= lower or not exact_model_fits(problem)):
        return SolveResult(Status.OPTIMAL if best_obj <= lower else Status.FEASIBLE, best_obj, min(lower, best_obj),
                           best, time.perf_counter() - t0, "cpsat-heads-tails", stats)
    window = _TRIGGER_WINDOW_OPS if problem.num_ops > HEADS_TAILS_WINDOW_ABOVE_OPS else None
    hint = best if best is not None and (window is None or all(
        tr.kind is TransferKind.EVICT or tr.release_op - tr.trigger_op <= window for tr in best.transfers)) else None
    model, v = build_level_model(problem, best_obj, 0, hint, window, link_holds=ht.link_holds)
    objective = _add_heads_tails(model, problem, v, ht, best_obj)
    add_sent_deadlines(model, problem, v, ht)
    model.add(objective >= lower)
    if best is not None:
        model.add_hint(objective, best_obj)
        for var, value in zip(getattr(v, "hold_start", ()), best.link_starts):
            model.add_hint(var, value)
    model.minimize(objective)
    budget = Budget.of(options, calibration, t0)
    status, solver, progress = budget.run_cpsat(model, options, budget.left, "heads_tails", interleave=False)
    stats.update(budget.stats())
    bound = lower
    if status.has_solution:
        found = retime_heads_tails(problem, _with_link_starts(v.extract(solver), solver, v), ht)
        if best is None or objective_cycles(problem, found, ht) < best_obj:
            best, best_obj = found, objective_cycles(problem, found, ht)
        if window is None:
            bound = max(bound, integer_objective_bound(solver))
    elif best is None:  # no baseline and CP-SAT found nothing (or proved there is nothing)
        return failure_result(Status.INFEASIBLE if status is Status.INFEASIBLE and window is None
                              else Status.UNKNOWN, "cpsat-heads-tails", time.perf_counter() - t0)
    elif status is Status.INFEASIBLE and window is None:  # nothing below the baseline: it is optimal
        bound = best_obj
    bound = min(bound, best_obj)
    proven = bound >= best_obj
    return SolveResult(Status.OPTIMAL if proven else Status.FEASIBLE, best_obj, bound, best,
                       time.perf_counter() - t0, "cpsat-heads-tails", stats, progress)


def _with_link_starts(solution: LevelSolution, solver, v) -> LevelSolution:
    """The CP-SAT solution with its link holds' starts (their order ranks them in the re-timing)."""
    return replace(solution, link_starts=tuple(solver.value(s) for s in getattr(v, "hold_start", ())))


def _horizon(problem: LevelProblem, ht: HeadsTails) -> int:
    """An objective the optimum does not exceed: every op longer than any of its durations (all
    its bytes at both levels), every possible DMA, one after another after the latest head, plus
    the longest tail and every deadline's lag."""
    ops = sum(problem.op_cycles(i, b, b) for i, b in
              enumerate(sum(problem.tensor_bytes[t] for t, _ in row) for row in problem.op_accesses()))
    dmas = sum(problem.dma_cycles(t) * len(problem.accesses(t)) for t in range(problem.num_tensors))
    heads = max((*ht.op_release, *ht.tensor_ready, *(h.head for h in ht.link_holds), 0))
    tails = max((*ht.op_tail, *ht.tensor_tail, 0)) + sum(dl.lag_cycles for dl in ht.deadlines)
    holds = sum(h.duration_cycles + h.tail + sum(lag for _, lag in h.lags) for h in ht.link_holds)
    return ops + dmas + heads + tails + holds + 1


def with_split_factors(solution: LevelSolution, factors: tuple[int, ...]) -> LevelSolution:
    """An expanded problem's solution as a solution of the split problem it came from."""
    return replace(solution, split_factors=tuple(factors))


def one_machine_lower_bound(jobs) -> int:
    """A lower bound on ``max(end_j + tail_j)`` when ``jobs`` (``(head, duration, tail)`` rows)
    run one at a time, each from its head on: Jackson's preemptive schedule, the optimum of the
    preemptive relaxation (at each event the released job with the longest tail runs).

    Every non-preemptive schedule is a preemptive one, so no order of the jobs beats it; with
    heads and tails that hold in every schedule (longest paths through a relaxation), it bounds
    the makespan of every schedule that runs the jobs on one machine (a link, a DMA engine).

    Examples
    --------
    Three transfers released together on one link, 2 cycles each, tails 5, 3 and 0: the one
    with the longest tail goes first, the last ends at 6.

    >>> one_machine_lower_bound([(0, 2, 5), (0, 2, 3), (0, 2, 0)])
    7
    >>> one_machine_lower_bound([(0, 2, 0), (10, 1, 4)])
    15
    >>> one_machine_lower_bound([])
    0
    """
    rows = sorted((int(h), int(p), int(q)) for h, p, q in jobs)
    ready: list[tuple[int, int]] = []  # (-tail, remaining duration)
    best, now, k = 0, 0, 0
    while k < len(rows) or ready:
        if not ready:
            now = max(now, rows[k][0])
        while k < len(rows) and rows[k][0] <= now:
            heapq.heappush(ready, (-rows[k][2], rows[k][1]))
            k += 1
        neg_tail, left = heapq.heappop(ready)
        run = left if k >= len(rows) else min(left, rows[k][0] - now)
        now += run
        if run < left:
            heapq.heappush(ready, (neg_tail, left - run))
        else:
            best = max(best, now - neg_tail)
    return best
