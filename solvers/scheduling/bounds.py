"""Proven lower bounds on the optimum of a :class:`SchedulingProblem`.

Every function returns an integer that is ``<=`` the objective of *every* feasible
solution, hence ``<=`` the optimum. They ignore memory, colocation, stream and link
exclusivity (relaxations can only lower a bound, never make it unsound).

Notes
-----
Write ``m_i = min_d dur[i][d]`` over the devices op i may use and ``S = sum_d streams[d]``.

* **Critical path** (LATENCY): the longest path where op i weighs ``m_i`` and edge
  ``(u, v)`` weighs the cheapest transfer it can be given (0 when u and v share an allowed
  device, else the cheapest permitted link). Every schedule obeys each edge's precedence
  with at least those durations.
* **Total work** (LATENCY): ``ceil(sum_i m_i / S)``. In a schedule of makespan T each of
  the S streams is busy at most T cycles, and op i keeps one stream busy ``>= m_i``.
* **Fractional load** (both objectives): the LP ``min T`` s.t. ``sum_d f[i][d] = 1``,
  ``f >= 0`` and ``sum_i f[i][d] dur[i][d] <= c_d T`` for every device, where
  ``c_d = streams[d]`` for LATENCY (a device with k streams does at most k*T work by time T)
  and ``c_d = 1`` for THROUGHPUT (a device's load is the plain sum of its ops' durations,
  whatever its streams). Any integer placement is a feasible f, so the LP optimum is
  ``<=`` the objective. This is what makes the bound sound on heterogeneous devices: a
  fast device is credited only with the work it can do at its own speed. The LP value is
  rounded *down* after a 1e-6 tolerance (then up to an integer, since objectives are
  integers), so solver round-off cannot make it unsound. It dominates the total-work
  bound and ``ceil(sum_i m_i / num_devices)`` for THROUGHPUT.
* **Largest op** (THROUGHPUT): ``max_i m_i``: op i adds at least ``m_i`` to one
  device's load, streams notwithstanding.

* **Segments** (LATENCY, :func:`segment_problems`): a *cut op* c is one that every other
  op precedes or follows (is an ancestor or a descendant of c) - layer boundaries and
  residual adds in ML graphs. With cut ops ``c_1 < ... < c_k`` the makespan is
  ``end(c_1) + sum_j (end(c_(j+1)) - end(c_j)) + (makespan - end(c_k))``. The ops between
  ``c_j`` and ``c_(j+1)`` all run inside ``[end(c_j), end(c_(j+1))]`` (they descend from
  ``c_j`` and precede ``c_(j+1)``), so restricting any schedule to them, with ``c_j``
  turned into a zero-duration source, gives a feasible schedule of a smaller problem with
  makespan ``end(c_(j+1)) - end(c_j)``; that smaller problem drops memory and every edge
  leaving the segment (relaxations), so its optimum, or any proven bound on it, bounds
  that term. The sum of the segment bounds is a lower bound on the makespan. It sees
  what the critical path cannot: side branches of a segment must either queue on the
  path's device or pay transfers.

References
----------
.. [1] Topcuoglu, Hariri, Wu, "Performance-effective and low-complexity task scheduling for
   heterogeneous computing", IEEE TPDS 13(3), 2002 (critical-path bounds for DAGs).
"""

from __future__ import annotations

import math

from solvers.dag import kahn_order
from solvers.scheduling.problem import Objective, SchedulingProblem

__all__ = [
    "lower_bound",
    "critical_path_bound",
    "work_bound",
    "fractional_load_bound",
    "max_op_bound",
    "min_durations",
    "min_transfer_cycles",
    "topological_order",
    "cut_vertices",
    "segment_problems",
    "segment_bound",
]


def min_durations(problem: SchedulingProblem) -> tuple[int, ...]:
    """Each op's smallest duration over its allowed devices.

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (3, 6)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> min_durations(p)
    (4, 3)
    """
    return tuple(min(x for x in row if x >= 0) for row in problem.durations_cycles)


def min_transfer_cycles(problem: SchedulingProblem, edge: int) -> int:
    """The cheapest communication edge ``edge`` can get (0 when its ops can share a device).

    Returns a large number when no pair of allowed devices can exchange data.

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (-1, 6)), ((0, 1, 8),), (1, 1), ((-1, 0), (0, -1)), ((7,),))
    >>> min_transfer_cycles(p, 0)
    7
    """
    u, v, _ = problem.edges[edge]
    best = None
    for a in problem.allowed_devices(u):
        for b in problem.allowed_devices(v):
            if a == b:
                return 0
            link = problem.link_of[a][b]
            if link >= 0:
                c = problem.transfer_cycles[edge][link]
                best = c if best is None else min(best, c)
    return best if best is not None else 1 << 60


def topological_order(problem: SchedulingProblem) -> tuple[int, ...]:
    """Ops in topological order, ties broken by index (Kahn's algorithm with a heap).

    Raises
    ------
    ValueError
        When the edges contain a cycle.

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (1,), (1,)), ((2, 0, 0), (0, 1, 0)), (1,), ((-1,),), ((), ()))
    >>> topological_order(p)
    (2, 0, 1)
    """
    return kahn_order(problem.num_ops, problem.edges)


def critical_path_bound(problem: SchedulingProblem) -> int:
    """Longest path with minimum op durations and minimum forced transfers.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> critical_path_bound(p)
    7
    """
    m = min_durations(problem)
    preds: list[list[tuple[int, int]]] = [[] for _ in range(problem.num_ops)]
    for e, (u, v, _) in enumerate(problem.edges):
        preds[v].append((u, min_transfer_cycles(problem, e)))
    finish = [0] * problem.num_ops
    for i in topological_order(problem):
        ready = max((finish[u] + c for u, c in preds[i]), default=0)
        finish[i] = ready + m[i]
    return max(finish, default=0)


def work_bound(problem: SchedulingProblem) -> int:
    """``ceil(sum of minimum durations / total streams)`` (a LATENCY bound).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), (), (1, 2), ((-1, 0), (0, -1)), ())
    >>> work_bound(p)  # ceil(7 / 3)
    3
    """
    return -(-sum(min_durations(problem)) // sum(problem.device_streams))


def max_op_bound(problem: SchedulingProblem) -> int:
    """The largest minimum duration: some device's load is at least that (THROUGHPUT).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 9), (3, 3)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> max_op_bound(p)
    4
    """
    return max(min_durations(problem), default=0)


def fractional_load_bound(problem: SchedulingProblem) -> int:
    """The LP relaxation of the placement's load (see the module Notes), rounded soundly.

    Examples
    --------
    Two ops each take 6 cycles on device 0 or 2 on device 1. With a fraction f of the
    work on the slow device, ``6f = 2(2 - f)`` balances the two, so ``f = 1/2`` and ``T = 3``.

    >>> p = SchedulingProblem(((6, 2), (6, 2)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> fractional_load_bound(p)
    3
    """
    from ortools.linear_solver import pywraplp

    n, nd = problem.num_ops, problem.num_devices
    if n == 0:
        return 0
    streams = (problem.device_streams if problem.objective is Objective.LATENCY
               else (1,) * nd)
    lp = pywraplp.Solver.CreateSolver("GLOP")
    if lp is None:  # pragma: no cover - GLOP ships with OR-Tools
        return 0
    t = lp.NumVar(0, lp.infinity(), "T")
    load = [[] for _ in range(nd)]
    for i in range(n):
        fs = []
        for d in problem.allowed_devices(i):
            f = lp.NumVar(0, 1, f"f_{i}_{d}")
            fs.append(f)
            load[d].append(problem.durations_cycles[i][d] * f)
        lp.Add(sum(fs) == 1)
    for d in range(nd):
        if load[d]:
            lp.Add(sum(load[d]) <= streams[d] * t)
    lp.Minimize(t)
    if lp.Solve() != pywraplp.Solver.OPTIMAL:
        return 0
    value = t.solution_value()
    return max(0, math.ceil(value - 1e-6 * max(1.0, value)))


def segment_bound(problem: SchedulingProblem) -> int:
    """Sum over the segments (see :func:`segment_problems`) of each one's own lower bound.

    LATENCY only (0 for THROUGHPUT or without cut ops).

    Examples
    --------
    A fork a(1) -> {b(5), c(5)} -> d(1) on one single-stream device: the critical path says
    7, the segment [a*, b, c, d] knows b and c share the stream: 1 + (5 + 5 + 1) = 12.

    >>> p = SchedulingProblem(((1,), (5,), (5,), (1,)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,), ((-1,),), ((),) * 4)
    >>> critical_path_bound(p), segment_bound(p)
    (7, 12)
    """
    if problem.objective is not Objective.LATENCY:
        return 0
    return sum(lower_bound(sub, segments=False) for sub, _ in segment_problems(problem))


def lower_bound(problem: SchedulingProblem, segments: bool = True) -> int:
    """The best of the bounds that apply to the problem's objective.

    Parameters
    ----------
    problem : SchedulingProblem
    segments : bool
        Include :func:`segment_bound` (LATENCY); segments themselves are bounded without it.

    Returns
    -------
    int
        A proven lower bound on the optimal objective.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> lower_bound(p)
    7
    >>> from dataclasses import replace
    >>> lower_bound(replace(p, objective=Objective.THROUGHPUT))  # LP: loads 3.5 and 3.5
    4
    """
    if problem.num_ops == 0:
        return 0
    if problem.objective is Objective.LATENCY:
        parts = (critical_path_bound(problem), work_bound(problem), fractional_load_bound(problem),
                 segment_bound(problem) if segments else 0)
    else:
        parts = (max_op_bound(problem), fractional_load_bound(problem))
    return max(parts)


def _reach_sets(problem: SchedulingProblem) -> tuple[list[int], list[int]]:
    """Ancestor and descendant sets of every op, as bitmasks."""
    n = problem.num_ops
    order = topological_order(problem)
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in problem.edges:
        preds[v].append(u)
        succs[u].append(v)
    anc = [0] * n
    for i in order:
        for u in preds[i]:
            anc[i] |= anc[u] | (1 << u)
    desc = [0] * n
    for i in reversed(order):
        for v in succs[i]:
            desc[i] |= desc[v] | (1 << v)
    return anc, desc


def cut_vertices(problem: SchedulingProblem) -> tuple[int, ...]:
    """Ops that every other op precedes or follows, in topological order.

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,),
    ...                       ((-1,),), ((),) * 4)
    >>> cut_vertices(p)  # the fork and the join
    (0, 3)
    """
    n = problem.num_ops
    anc, desc = _reach_sets(problem)
    full = (1 << n) - 1
    cuts = [i for i in range(n) if (anc[i] | desc[i] | (1 << i)) == full]
    pos = {op: k for k, op in enumerate(topological_order(problem))}
    return tuple(sorted(cuts, key=pos.__getitem__))


def _subproblem(problem: SchedulingProblem, ops: list[int], source: int | None) -> SchedulingProblem:
    index = {op: k for k, op in enumerate(ops)}
    durations = []
    for op in ops:
        row = problem.durations_cycles[op]
        durations.append(tuple(0 if (op == source and x >= 0) else x for x in row))
    edges, transfer = [], []
    for e, (u, v, b) in enumerate(problem.edges):
        if u in index and v in index:
            edges.append((index[u], index[v], b))
            transfer.append(problem.transfer_cycles[e])
    groups = tuple(g2 for g2 in (tuple(index[i] for i in g if i in index)
                                 for g in problem.colocation_groups) if len(g2) > 1)
    names = tuple(problem._name(op) for op in ops)
    return SchedulingProblem(tuple(durations), tuple(edges), problem.device_streams,
                             problem.link_of, tuple(transfer), Objective.LATENCY,
                             colocation_groups=groups, device_class=problem.device_class,
                             op_names=names)


def segment_problems(problem: SchedulingProblem) -> list[tuple[SchedulingProblem, tuple[int, ...]]]:
    """The segment subproblems of the decomposition bound (module Notes), with their ops.

    The makespan of the problem is at least the sum of the segments' optimal makespans.
    Empty when the problem has no cut op.

    Examples
    --------
    A chain a(2) -> b(3) -> c(4): every op is a cut op; the segments are [a], [a*, b],
    [b*, c] with * a zero-duration source, and 2 + 3 + 4 = 9.

    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),),
    ...                       ((), ()))
    >>> [(ops, critical_path_bound(sub)) for sub, ops in segment_problems(p)]
    [((0,), 2), ((0, 1), 3), ((1, 2), 4)]
    """
    cuts = cut_vertices(problem)
    if not cuts:
        return []
    anc, desc = _reach_sets(problem)
    order = topological_order(problem)
    out = []

    def members(mask: int) -> list[int]:
        return [op for op in order if mask >> op & 1]

    first = cuts[0]
    out.append((members(anc[first] | (1 << first)), None))
    for a, b in zip(cuts, cuts[1:]):
        out.append((members((desc[a] & anc[b]) | (1 << a) | (1 << b)), a))
    last = cuts[-1]
    if desc[last]:
        out.append((members(desc[last] | (1 << last)), last))
    return [(_subproblem(problem, ops, src), tuple(ops)) for ops, src in out]
