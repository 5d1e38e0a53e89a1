"""Proven lower bounds on the optimum of a :class:`SchedulingProblem`.

Every function returns an integer that is ``<=`` the objective of *every* feasible
solution, hence ``<=`` the optimum. Each is a relaxation (dropping a constraint can only
lower a bound, never make it unsound); :func:`lower_bound` takes the best of them:

* here: critical path, total work, fractional load, largest op, and the segments;
* :mod:`~solvers.scheduling.forced`: op-device pairs memory, colocation or links rule out,
  removed before any bound is computed (same feasible solutions, stronger bounds);
* :mod:`~solvers.scheduling.path_bounds`: paths whose ops pay their device's duration and
  whose edges pay a transfer between devices; chains whose runs on one device must hold
  their weights (memory forces crossings);
* :mod:`~solvers.scheduling.linear_relaxation`: the LP with fractional placement, times,
  communication, work and memory per device class, certified from its duals;
* :mod:`~solvers.scheduling.decomposition`: segment bounds joined at the cut ops, each cut
  op on one device for both of its segments (side sources and sinks dropped first when they
  hide cut ops, :func:`~solvers.scheduling.decomposition.main_span`);
* :mod:`~solvers.scheduling.segment_runs`: runs of cut ops on one device hold their segments'
  weights; with memory that needs several devices also over the clean cut ops only
  (``clean_segment_runs``), where a device change pays for residual edges too;
* :mod:`~solvers.scheduling.window_load`: with one source and one sink, devices that hold
  neither idle for a transfer at each end, so the work fits in less than the makespan.
* :mod:`~solvers.scheduling.side_ends`: the side sources the main span drops, back in the
  prefix of the first cut op they feed (CP-SAT proves the prefix, in
  :func:`~solvers.scheduling.cpsat.segments.segment_lower_bound`).

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
  fast device is credited only with the work it can do at its own speed. The value is
  certified from the solver's duals (weak duality, :mod:`~solvers.scheduling.linear_relaxation`),
  so solver round-off cannot make it unsound. It dominates the total-work bound and
  ``ceil(sum_i m_i / num_devices)`` for THROUGHPUT.
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
  path's device or pay transfers. :func:`segment_bound` joins the segments' bounds with
  :func:`~solvers.scheduling.decomposition.chain_segment_bound`, which is never below their
  sum.

References
----------
.. [1] Topcuoglu, Hariri, Wu, "Performance-effective and low-complexity task scheduling for
   heterogeneous computing", IEEE TPDS 13(3), 2002 (critical-path bounds for DAGs).
"""

from __future__ import annotations

from typing import Sequence

from solvers.scheduling.decomposition import chain_segment_bound, prune_free_ends, span_with_map
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.linear_relaxation import fractional_load_bound, lp_relaxation
from solvers.scheduling.path_bounds import path_bounds
from solvers.scheduling.problem import Objective, SchedulingProblem
from solvers.scheduling.segment_runs import segment_run_bound
from solvers.scheduling.window_load import window_load_bound
from solvers.scheduling.structure import (clean_cut_vertices, cut_vertices, min_durations, min_transfer_cycles,
                                          segment_ranges, topological_order)

__all__ = [
    "lower_bound",
    "lower_bounds",
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
    "bound_segments",
    "segment_floor",
    "reach_sets",
    "subproblem",
]


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


def segment_bound(problem: SchedulingProblem) -> int:
    """The segment chain bound over the cheap bound of each segment (see
    :mod:`~solvers.scheduling.decomposition`): never below the sum of the segments' bounds.

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
    pruned, segs = bound_segments(problem, restrict=False)  # lower_bounds restricted it
    return chain_segment_bound(pruned, segs, [_restricted_floor(sub) for sub, _ in segs])


def segment_floor(segment: SchedulingProblem) -> int:
    """The bound of one segment that the chain builds on: :func:`lower_bound` without
    segments, with the LP for segments of 8 ops or more (smaller ones gain nothing from it,
    and a graph of thousands of them would pay one LP each).

    Examples
    --------
    >>> p = SchedulingProblem(((0,), (5,), (5,), (1,)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,), ((-1,),), ((),) * 4)
    >>> segment_floor(p)
    11
    """
    return lower_bound(segment, segments=False, lp=_SEGMENT_LP_MIN_OPS <= segment.num_ops)


def _restricted_floor(segment: SchedulingProblem) -> int:
    """:func:`segment_floor` of a segment of an already restricted problem."""
    return lower_bound(segment, segments=False, lp=_SEGMENT_LP_MIN_OPS <= segment.num_ops, restrict=False)


def bound_segments(problem: SchedulingProblem, restrict: bool = True,
                   ) -> tuple[SchedulingProblem, list[tuple[SchedulingProblem, tuple[int, ...]]]]:
    """The problem the segment bounds work on (placements restricted by
    :func:`~solvers.scheduling.forced.restrict_placements`, free ends pruned by
    :func:`~solvers.scheduling.decomposition.prune_free_ends`, and cut down to
    :func:`~solvers.scheduling.decomposition.main_span` when that shows more cut ops) and its
    segments;
    ``restrict=False`` for a problem restricted already.

    Ops of the segments are indices of that problem, not of ``problem``.

    Examples
    --------
    >>> p = SchedulingProblem(((1,), (1,), (0,)), ((0, 1, 0), (2, 1, 0)), (1,), ((-1,),), ((),) * 2)
    >>> pruned, segs = bound_segments(p)
    >>> pruned.num_ops, [ops for _, ops in segs]
    (2, [(0,), (0, 1)])
    """
    pruned = prune_free_ends(restrict_placements(problem) if restrict else problem)
    span, _ = span_with_map(pruned)  # side sources and sinks hide cut ops
    if span is not pruned and len(cut_vertices(span)) > len(cut_vertices(pruned)):
        pruned = span
    return pruned, segment_problems(pruned)


_SEGMENT_LP_MIN_OPS = 8


def lower_bounds(problem: SchedulingProblem, segments: bool = True, lp: bool | None = None,
                 restrict: bool = True) -> dict[str, int]:
    """Every bound that applies to the problem's objective, by name (see :func:`lower_bound`).

    ``restrict=False`` skips :func:`~solvers.scheduling.forced.restrict_placements` (for a
    problem already restricted, such as a segment of one).

    A bound that cannot beat the others is skipped: the fractional load when placing each
    op on its fastest device already gives no more (its LP optimum is no larger), the memory
    path without a memory limit, the window load when it is not above the others.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> lower_bounds(p)
    {'critical_path': 7, 'work': 4, 'placement_path': 7, 'segment_chain': 7}
    """
    if problem.num_ops == 0:
        return {}
    lp = segments if lp is None else lp
    r = restrict_placements(problem) if restrict else problem
    latency = problem.objective is Objective.LATENCY
    if latency:
        capped = any(r.memory_bytes(d) > 0 for d in range(r.num_devices))
        placement, memory = path_bounds(r, memory=capped)
        parts = {"critical_path": critical_path_bound(r), "work": work_bound(r), "placement_path": placement}
        if capped:
            parts["memory_path"] = memory
    else:
        parts = {"largest_op": max_op_bound(r)}
    if _fastest_device_load(r) > max(parts.values()):
        parts["fractional_load"] = fractional_load_bound(r)
    if latency:
        window = window_load_bound(r)
        if window > max(parts.values()):
            parts["window_load"] = window
    if lp:
        relaxed = lp_relaxation(r)
        if not relaxed.status.startswith("SKIPPED"):
            parts["lp"] = relaxed.bound
    if latency and segments:
        parts.update(_segment_parts(r, memory=capped))
    return parts


def _segment_parts(problem: SchedulingProblem, memory: bool) -> dict[str, int]:
    """The segment chain and, with a memory limit, the segment-run bound, from one set of
    segment floors (of an already restricted problem)."""
    pruned, segs = bound_segments(problem, restrict=False)
    floors = [_restricted_floor(sub) for sub, _ in segs]
    parts = {"segment_chain": chain_segment_bound(pruned, segs, floors)}
    if memory:
        parts["segment_runs"] = segment_run_bound(pruned, segs, floors)
        clean = clean_cut_vertices(pruned) if _weights_need_devices(pruned) else ()
        if clean and len(clean) < len(cut_vertices(pruned)):  # an edge jumps some cut op: change at clean ones
            clean_segs = segment_problems(pruned, clean)
            clean_floors = [_restricted_floor(sub) for sub, _ in clean_segs]
            parts["clean_segment_runs"] = segment_run_bound(pruned, clean_segs, clean_floors, clean)
    return parts


def _weights_need_devices(problem: SchedulingProblem) -> bool:
    """Some device cannot hold every weight (then runs must change device: the clean segment
    runs have something to see)."""
    total = problem.total_resident_floor_bytes()
    return any(0 < problem.memory_bytes(d) < total for d in range(problem.num_devices))


def _fastest_device_load(problem: SchedulingProblem) -> float:
    """The fractional load of one feasible placement (each op on a fastest device): the LP
    optimum is at most this."""
    latency = problem.objective is Objective.LATENCY
    load = [0.0] * problem.num_devices
    for row in problem.durations_cycles:
        d = min((x, k) for k, x in enumerate(row) if x >= 0)[1]
        load[d] += row[d]
    return max(load[d] / (problem.device_streams[d] if latency else 1) for d in range(problem.num_devices))


def lower_bound(problem: SchedulingProblem, segments: bool = True, lp: bool | None = None,
                restrict: bool = True) -> int:
    """The best of the bounds that apply to the problem's objective.

    Every bound is computed on :func:`~solvers.scheduling.forced.restrict_placements` of
    the problem (placements memory, colocation or links rule out are removed: the same
    feasible solutions, so the same optimum).

    Parameters
    ----------
    problem : SchedulingProblem
    segments : bool
        Include :func:`segment_bound` (LATENCY); segments themselves are bounded without it.
    lp : bool, optional
        Include :func:`~solvers.scheduling.linear_relaxation.lp_bound`; default: as ``segments``.
    restrict : bool
        Restrict placements first (see :func:`lower_bounds`).

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
    return max(lower_bounds(problem, segments, lp, restrict).values(), default=0)


def reach_sets(problem: SchedulingProblem) -> tuple[list[int], list[int]]:
    """Ancestor and descendant sets of every op, as bitmasks.

    Examples
    --------
    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    >>> reach_sets(p)
    ([0, 1, 3], [6, 4, 0])
    """
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


def subproblem(problem: SchedulingProblem, ops: list[int], source: int | None,
               out_edges: Sequence[Sequence[int]] | None = None) -> SchedulingProblem:
    """The LATENCY problem on ``ops`` (in that order) and the edges among them; ``source``,
    when given, takes no time (it stands for an op the previous segment ran). ``out_edges``
    (each op's outgoing edge indices, :func:`out_edge_lists`) spares a scan of every edge of
    the problem per call: thousands of segments of a 10^4-op graph.

    Examples
    --------
    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    >>> sub = subproblem(p, [1, 2], 1); sub.durations_cycles, sub.edges
    (((0,), (4,)), ((0, 1, 0),))
    """
    index = {op: k for k, op in enumerate(ops)}
    durations = []
    for op in ops:
        row = problem.durations_cycles[op]
        durations.append(tuple(0 if (op == source and x >= 0) else x for x in row))
    if out_edges is None:
        inside = [e for e, (u, v, _) in enumerate(problem.edges) if u in index and v in index]
    else:
        inside = sorted(e for op in ops for e in out_edges[op] if problem.edges[e][1] in index)
    edges = [(index[problem.edges[e][0]], index[problem.edges[e][1]], problem.edges[e][2]) for e in inside]
    transfer = [problem.transfer_cycles[e] for e in inside]
    groups = tuple(g2 for g2 in (tuple(index[i] for i in g if i in index)
                                 for g in problem.colocation_groups) if len(g2) > 1)
    names = tuple(problem.op_name(op) for op in ops)
    return SchedulingProblem(tuple(durations), tuple(edges), problem.device_streams,
                             problem.link_of, tuple(transfer), Objective.LATENCY,
                             colocation_groups=groups, device_class=problem.device_class,
                             op_names=names)


def segment_problems(problem: SchedulingProblem, cuts: Sequence[int] | None = None,
                     ) -> list[tuple[SchedulingProblem, tuple[int, ...]]]:
    """The segment subproblems of the decomposition bound (module Notes), with their ops.

    The makespan of the problem is at least the sum of the segments' optimal makespans.
    Empty when the problem has no cut op. ``cuts``: cut at these cut ops only (see
    :func:`~solvers.scheduling.structure.segment_ranges`).

    Examples
    --------
    A chain a(2) -> b(3) -> c(4): every op is a cut op; the segments are [a], [a*, b],
    [b*, c] with * a zero-duration source, and 2 + 3 + 4 = 9.

    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),),
    ...                       ((), ()))
    >>> [(ops, critical_path_bound(sub)) for sub, ops in segment_problems(p)]
    [((0,), 2), ((0, 1), 3), ((1, 2), 4)]
    """
    order = topological_order(problem)
    out_edges = out_edge_lists(problem)
    return [(subproblem(problem, list(order[lo:hi + 1]), source, out_edges), order[lo:hi + 1])
            for lo, hi, source, _ in segment_ranges(problem, cuts)]


def out_edge_lists(problem: SchedulingProblem) -> list[list[int]]:
    """Each op's outgoing edge indices, in edge order.

    >>> p = SchedulingProblem(((1,),) * 3, ((0, 1, 0), (0, 2, 0), (1, 2, 0)), (1,), ((-1,),), ((),) * 3)
    >>> out_edge_lists(p)
    [[0, 1], [2], []]
    """
    out: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for e, (u, _, _) in enumerate(problem.edges):
        out[u].append(e)
    return out
