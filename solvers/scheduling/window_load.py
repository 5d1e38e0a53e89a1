"""The window-load bound (LATENCY): a device that does not hold the source idles until a
transfer reaches it, and one that does not hold the sink stops a transfer and the sink's run
before the end; the work must fit in what is left.

Notes
-----
Let the problem have one source s (an op without predecessors) and one sink t (an op without
successors), so every op descends from s and precedes t (segments between cut ops have this
form). Fix the devices ``ds`` of s and ``dt`` of t and a schedule of makespan C = end(t).

* **Entry**: on a device ``d != ds`` every op u starts at ``>= in_d``, the least transfer any
  edge may take over any link into d. The path from s to u enters d for the last time over an
  edge (p, q) with q on d, and the transfer starts ``>= 0`` and lasts ``>= in_d``; the path
  goes on from q to u inside d, so u starts no earlier than q.
* **Exit**: on a device ``d != dt`` every op v ends at ``<= C - out_d - dur(t, dt)``, with
  ``out_d`` the least transfer out of d: the path from v to t leaves d first over an edge (p,
  q) with p no earlier than v, the transfer lasts ``>= out_d``, and t, no earlier than q,
  runs ``dur(t, dt)`` before C.

So device d, with k streams, runs at most ``k * max(0, C - a_d - b_d)`` cycles of work, with
``a_d = in_d`` (0 on ds) and ``b_d = out_d + dur(t, dt)`` (0 on dt). Every op i does at least
``m_i`` (its least duration) of work; on d its duration is at least ``m_i / rho_d`` with
``rho_d = max_i m_i / dur(i, d)`` (<= 1), so ``sum_i m_i <= sum_d rho_d k_d max(0, C - a_d -
b_d)``. The right side grows with C; the least C that satisfies it, minimised over the
allowed ``(ds, dt)``, bounds the makespan of every schedule. A device that runs nothing loses
nothing: its term is never negative.

On the demo's attention segment (8 heads of 1,077 cycles and a 220-cycle concat between two
fast devices, 255 cycles apart, and two slow ones) the fractional load says 4,418, this 4,726:
the second fast device idles 255 cycles before its first head and 475 after its last.
"""

from __future__ import annotations

from fractions import Fraction

from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.structure import min_durations

__all__ = ["window_load_bound", "entry_exit_transfers"]


def entry_exit_transfers(problem: SchedulingProblem) -> tuple[list[int], list[int]]:
    """Per device: the least transfer of any edge over any link into it, and out of it (0
    when no edge has a positive transfer there; no link: no limit, so the largest
    conceivable, here 0 as well, which only weakens the bound).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (1, 1)), ((0, 1, 8),), (1, 1), ((-1, 0), (1, -1)), ((5, 7),))
    >>> entry_exit_transfers(p)
    ([7, 5], [5, 7])
    """
    nd = problem.num_devices
    into, out = [None] * nd, [None] * nd
    for row in problem.transfer_cycles:
        for a in range(nd):
            for b in range(nd):
                link = problem.link_of[a][b]
                if a == b or link < 0:
                    continue
                tc = row[link]
                into[b] = tc if into[b] is None else min(into[b], tc)
                out[a] = tc if out[a] is None else min(out[a], tc)
    if not problem.edges:
        return [0] * nd, [0] * nd
    return [x or 0 for x in into], [x or 0 for x in out]


def _least_makespan(work: int, terms: list[tuple[Fraction, int]]) -> int | None:
    """The least integer C with ``sum rate * max(0, C - offset) >= work`` (None if never)."""
    terms = sorted((off, rate) for rate, off in terms if rate > 0)
    if work <= 0:
        return 0
    rate_sum, fixed = Fraction(0), Fraction(0)  # capacity = rate_sum * C - fixed on a piece
    for k, (off, rate) in enumerate(terms):
        rate_sum += rate
        fixed += rate * off
        nxt = terms[k + 1][0] if k + 1 < len(terms) else None
        c = (work + fixed) / rate_sum
        if nxt is None or c <= nxt:
            return max(off, -(-c.numerator // c.denominator))
    return None


def window_load_bound(problem: SchedulingProblem) -> int:
    """The window-load bound of the module Notes (0 unless LATENCY with one source and one
    sink).

    Examples
    --------
    Ops s(0) -> {x(6), y(6)} -> t(2) on two single-stream devices 3 cycles apart: a device
    that holds neither s nor t works in ``[3, C - 5]``, so ``2 C - 8 >= 14`` and C >= 11
    (the fractional load says 7, the critical path 8).

    >>> p = SchedulingProblem(((0, 0), (6, 6), (6, 6), (2, 2)),
    ...                       ((0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 1)), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((3,),) * 4)
    >>> window_load_bound(p)
    11
    """
    if problem.objective is not Objective.LATENCY or problem.num_ops < 2:
        return 0
    has_pred = [False] * problem.num_ops
    has_succ = [False] * problem.num_ops
    for u, v, _ in problem.edges:
        has_succ[u] = has_pred[v] = True
    sources = [i for i in range(problem.num_ops) if not has_pred[i]]
    sinks = [i for i in range(problem.num_ops) if not has_succ[i]]
    if len(sources) != 1 or len(sinks) != 1:
        return 0
    s, t = sources[0], sinks[0]
    m = min_durations(problem)
    work = sum(m)
    nd = problem.num_devices
    rho = []
    for d in range(nd):
        ratios = [Fraction(m[i], row[d]) for i, row in enumerate(problem.durations_cycles) if row[d] > 0]
        allowed = any(row[d] >= 0 for row in problem.durations_cycles)
        rho.append(max(ratios, default=Fraction(1 if allowed else 0)))
    into, out = entry_exit_transfers(problem)
    # the terms depend on ds and dt only through their kinds (durations, streams, transfers in
    # and out) and whether they are one device (permuting the devices of one kind keeps the
    # multiset of terms): one pair per case gives the same minimum (a segment on 16 devices
    # of two kinds: 6 pairs instead of 256)
    kinds: dict[tuple, list[int]] = {}
    for d in range(nd):
        kinds.setdefault((tuple(row[d] for row in problem.durations_cycles), problem.device_streams[d],
                          into[d], out[d]), []).append(d)
    firsts = {members[0] for members in kinds.values()}
    second = {members[0]: members[1] for members in kinds.values() if len(members) > 1}
    best = None
    for ds in (d for d in problem.allowed_devices(s) if d in firsts):
        for dt in (d for d in problem.allowed_devices(t) if d in firsts or d == second.get(ds)):
            tail = problem.durations_cycles[t][dt]
            terms = [(rho[d] * problem.device_streams[d],
                      (0 if d == ds else into[d]) + (0 if d == dt else out[d] + tail)) for d in range(nd)]
            c = _least_makespan(work, terms)
            if c is not None:
                best = c if best is None else min(best, c)
    return best or 0
