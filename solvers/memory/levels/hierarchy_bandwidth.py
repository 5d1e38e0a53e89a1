"""Shared bandwidth over N levels (issue 14): ops and DMA hops contend for each level's bandwidth.

The two-level rule of :mod:`~solvers.memory.levels.bandwidth`, per level: each level's
bandwidth is :data:`~solvers.memory.levels.bandwidth.SHARE_UNITS` shares; an op of duration
``D = max(compute, sum_l c_l)`` (``c_l = ceil(B_l / bw_l)``) holds ``ceil(SHARE_UNITS * c_l / D)``
of every level it moves bytes in; a hop over the path a-b at rate ``r`` holds
``min(SHARE_UNITS, ceil(SHARE_UNITS * r / bw_l))`` of both ``a`` and ``b`` (latency included).
The share arithmetic is that module's (:func:`share_of_cycles`, :func:`dma_share`); the
replay is its list schedule (:func:`list_schedule_shared`) over the hierarchy's waits, with
one share per level; the model adds one ``Cumulative`` of capacity ``SHARE_UNITS`` per level.
Durations never change: contention only delays starts, so every unshared lower bound stays sound.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solvers.cpsat_support import interval_if
from solvers.memory.levels.bandwidth import (
    SHARE_UNITS, add_op_share_interval, dma_share, list_schedule_shared, share_of_cycles,
)
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.problem import cycles_for_bytes

__all__ = ["hierarchy_op_shares", "hop_shares", "hierarchy_bandwidth_spans", "check_hierarchy_bandwidth",
           "replay_hierarchy_shared", "add_hierarchy_bandwidth"]


def hierarchy_op_shares(problem: HierarchyProblem, op: int, level_bytes: dict[int, int]) -> tuple[int, ...]:
    """Per level, the shares op ``op`` holds with ``level_bytes`` (level -> bytes) of accesses.

    Examples
    --------
    Compute 4; 8 B in vmem at 8 B/cycle (1 cycle) and 4 B in host at 1 B/cycle (4 cycles):
    D = 5, so a fifth of vmem and four fifths of host:

    >>> p = HierarchyProblem((4,), ((0, 1),), ((),), (8, 4), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), shared_bandwidth=True)
    >>> hierarchy_op_shares(p, 0, {0: 8, 2: 4})
    (200, 0, 800)
    """
    bw = problem.bandwidth_bytes_per_cycle
    cycles = [cycles_for_bytes(level_bytes.get(lv, 0), bw[lv]) for lv in range(problem.num_levels)]
    d = max(problem.compute_cycles[op], sum(cycles))
    return tuple(share_of_cycles(c, d) for c in cycles)


def hop_shares(problem: HierarchyProblem, src: int, dst: int) -> tuple[int, ...]:
    """Per level, the shares a hop between ``src`` and ``dst`` holds (its path rate over each end).

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> hop_shares(p, 1, 0), hop_shares(p, 2, 1)
    ((500, 1000, 0), (0, 250, 1000))
    """
    rate = problem.path_rate(src, dst)
    bw = problem.bandwidth_bytes_per_cycle
    return tuple(dma_share(rate, bw[lv]) if lv in (src, dst) else 0 for lv in range(problem.num_levels))


def _op_level_bytes(problem: HierarchyProblem, level) -> list[dict[int, int]]:
    rows: list[dict[int, int]] = [{} for _ in range(problem.num_ops)]
    for t in range(problem.num_tensors):
        for j, a in enumerate(problem.accesses(t)):
            if problem.is_real(a):
                rows[a][level[t][j]] = rows[a].get(level[t][j], 0) + problem.tensor_bytes[t]
    return rows


def hierarchy_bandwidth_spans(problem: HierarchyProblem, solution: HierarchySolution
                              ) -> list[tuple[int, int, tuple[int, ...], str]]:
    """``(start, end, shares per level, what)`` of every op and hop of positive duration.

    Examples
    --------
    >>> from solvers.memory.levels.hierarchy import Move
    >>> from solvers.memory.levels.problem import TransferKind
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,), shared_bandwidth=True)
    >>> hop = Move(TransferKind.PREFETCH, 0, 1, 0, 2, 1, -1, 0, 0, 8)
    >>> s = HierarchySolution(((2, 1),), ((False, False),), (hop,), (8,), (4,))
    >>> hierarchy_bandwidth_spans(p, s)
    [(0, 8, (0, 250, 1000), 'prefetch of tensor 0 hop 0'), (8, 12, (0, 500, 0), 'op 0')]
    """
    rows = _op_level_bytes(problem, solution.level)
    spans = [(s, s + d, hierarchy_op_shares(problem, i, rows[i]), f"op {problem.op_name(i)}")
             for i, (s, d) in enumerate(zip(solution.op_start, solution.op_duration)) if d > 0]
    spans += [(m.start_cycle, m.end_cycle, hop_shares(problem, m.src_level, m.dst_level),
               f"{m.kind.value} of tensor {problem.tensor_name(m.tensor)} hop {m.hop}")
              for m in solution.moves if m.duration_cycles > 0]
    return sorted(spans)


def check_hierarchy_bandwidth(problem: HierarchyProblem, solution: HierarchySolution) -> list[str]:
    """The first cycle, per level, at which the running ops and hops hold more than its shares.

    Examples
    --------
    The host hop (all of host) while op 0 reads host: 2000 shares of host at cycle 0.

    >>> from solvers.memory.levels.hierarchy import Move
    >>> from solvers.memory.levels.problem import TransferKind
    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> hop = Move(TransferKind.PREFETCH, 1, 1, 0, 2, 1, -1, 1, 0, 8)
    >>> s = HierarchySolution(((2, 2), (2, 1)), ((False, False), (False, False)), (hop,), (0, 8), (8, 2))
    >>> check_hierarchy_bandwidth(p, s)
    ['level 2 bandwidth: 2000 of 1000 shares at cycle 0 (op 0, prefetch of tensor 1 hop 0)']
    """
    errs: list[str] = []
    spans = hierarchy_bandwidth_spans(problem, solution)
    for lv in range(problem.num_levels):
        events = sorted([(sp[1], -sp[2][lv]) for sp in spans] + [(sp[0], sp[2][lv]) for sp in spans])
        load = 0
        for when, delta in events:
            load += delta
            if delta > 0 and load > SHARE_UNITS:
                running = [sp[3] for sp in spans if sp[0] <= when < sp[1] and sp[2][lv]]
                errs.append(f"level {problem.level_name(lv)} bandwidth: {load} of {SHARE_UNITS} shares at cycle "
                            f"{when} ({', '.join(running)})")
                break
    return errs


def replay_hierarchy_shared(problem: HierarchyProblem, solution: HierarchySolution, durations,
                            move_waits, op_head=(), move_head=(), link_holds=(), add_holds=None
                            ) -> tuple[list[int], list[int]] | tuple[list[int], list[int], list[int]]:
    """Op and move starts under shared bandwidth: the list schedule of
    :func:`~solvers.memory.levels.bandwidth.list_schedule_shared` in the solution's start order
    (ops before moves on ties). The waits are the unshared replay's: an op waits for the
    previous op and the moves it releases; a move for the previous move (one engine), its
    trigger op and ``move_waits[q]`` (previous hop, the tensor's eviction). ValueError on a
    deadlock.

    Heads (a linked device): ``op_head[i]`` and ``move_head[q]`` are earliest starts (empty:
    none); ``link_holds`` (:mod:`~solvers.memory.levels.hierarchy_link_holds`) join the schedule
    with their waits and main-level shares through ``add_holds``
    (:func:`~solvers.memory.levels.hierarchy_link_holds.add_hierarchy_hold_keys`, passed in: that
    module reads this one), and their starts are returned third (only when given).

    Examples
    --------
    Op 0 reads host (8 cycles, all of host); the host hop for op 1 must wait for it:

    >>> from solvers.memory.levels.hierarchy import Move
    >>> from solvers.memory.levels.problem import TransferKind
    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> hop = Move(TransferKind.PREFETCH, 1, 1, 0, 2, 1, -1, 1, 0, 8)
    >>> s = HierarchySolution(((2, 2), (2, 1)), ((False, False), (False, False)), (hop,), (0, 8), (8, 2))
    >>> replay_hierarchy_shared(p, s, (8, 2), [[]])
    ([0, 16], [8])
    """
    n, queue = problem.num_ops, solution.moves
    rows = _op_level_bytes(problem, solution.level)
    deps: dict = {("op", i): ({("op", i - 1)} if i else set()) for i in range(n)}
    length = {("op", i): durations[i] for i in range(n)}
    shares = {("op", i): hierarchy_op_shares(problem, i, rows[i]) for i in range(n)}
    priority = {("op", i): (solution.op_start[i], 0, i) for i in range(n)}
    for q, m in enumerate(queue):
        key = ("dma", q)
        deps[key] = {("dma", w) for w in move_waits[q]} | ({("dma", q - 1)} if q else set())
        if m.trigger_op >= 0:
            deps[key].add(("op", m.trigger_op))
        if m.release_op < n:
            deps["op", m.release_op].add(key)
        length[key] = m.duration_cycles
        shares[key] = hop_shares(problem, m.src_level, m.dst_level)
        priority[key] = (m.start_cycle, 1, q)
    floor = {("op", i): h for i, h in enumerate(op_head) if h}
    floor.update({("dma", q): h for q, h in enumerate(move_head) if h})
    if link_holds:
        add_holds(problem, solution, link_holds, deps, length, floor, priority, shares)
    start = list_schedule_shared(deps, length, shares, priority, floor or None)
    timed = [start["op", i] for i in range(n)], [start["dma", q] for q in range(len(queue))]
    return (*timed, [start["hold", k] for k in range(len(link_holds))]) if link_holds else timed


def add_hierarchy_bandwidth(model: cp_model.CpModel, problem: HierarchyProblem, v) -> None:
    """One ``Cumulative`` per level over the op and hop intervals, demands = shares (and the main
    level's over the link holds' intervals, ``v.hold_intervals``, when the model has them).

    An op's share of level l is ``u = ceil(SHARE_UNITS * c_l / dur)``, tied by
    ``u*dur >= SHARE_UNITS*c_l`` and ``u*dur <= SHARE_UNITS*c_l + dur - 1`` (products; a
    constant when ``c_l`` and ``dur`` are). ``v`` is the model's
    :class:`~solvers.memory.levels.hierarchy_model.HierarchyVars`, with ``level_cycles``
    (per op, per level ``c_l``, or None for an op whose levels are the incumbent's).

    Examples
    --------
    The hand-checked case of :func:`replay_hierarchy_shared`, solved: op 1's weight is read
    from host after op 0 (8 + 8 = 16) rather than fetched over host (8 + 8 + 2 = 18):

    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> from solvers.memory.levels.hierarchy_model import build_hierarchy_model
    >>> model, v = build_hierarchy_model(p)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> _ = solver.solve(model); solver.value(v.makespan)
    16
    """
    nl = problem.num_levels
    intervals: list[list] = [[] for _ in range(nl)]
    demands: list[list] = [[] for _ in range(nl)]
    rows = problem.op_accesses()
    for i in range(problem.num_ops):
        add_op_share_interval(model, v, i, _op_share_terms(model, problem, v, i, rows[i]), intervals, demands)
    for key, chain in v.chains.items():
        for h, hop in enumerate(chain):
            if hop.duration <= 0:
                continue
            iv = interval_if(model, hop.start, hop.duration, None, hop.present, f"bw_dma_{key}_{h}")
            for lv, u in enumerate(hop_shares(problem, hop.src, hop.dst)):
                if u:
                    intervals[lv].append(iv)
                    demands[lv].append(u)
    for iv, u in getattr(v, "hold_intervals", ()):  # link holds: shares of the main level
        intervals[problem.main_level].append(iv)
        demands[problem.main_level].append(u)
    for lv in range(nl):
        if intervals[lv]:
            model.add_cumulative(intervals[lv], demands[lv], SHARE_UNITS)


def _upper(model: cp_model.CpModel, x) -> int:
    """The largest value of ``x`` (an int or a variable)."""
    if isinstance(x, int):
        return x
    domain = model.proto.variables[x.index].domain
    return domain[len(domain) - 1]


def _op_share_terms(model: cp_model.CpModel, problem: HierarchyProblem, v, i: int, row) -> tuple:
    """Op i's shares per level: ints when its levels are decided (or its cycles constants),
    else variables tied to ``c_l`` and ``dur`` by products."""
    cycles = v.level_cycles.get(i)
    if cycles is None:  # a window model's op outside the free ones: the incumbent's levels
        level = v.frame.fixed.level
        level_bytes: dict[int, int] = {}
        for t, j in row:
            level_bytes[level[t][j]] = level_bytes.get(level[t][j], 0) + problem.tensor_bytes[t]
        return hierarchy_op_shares(problem, i, level_bytes)
    if all(isinstance(c, int) for c in cycles):
        d = max(problem.compute_cycles[i], sum(cycles))
        return tuple(share_of_cycles(c, d) for c in cycles)
    longest = max(1, _upper(model, v.dur[i]))
    out = []
    for lv, c in enumerate(cycles):
        if isinstance(c, int) and c == 0 or _upper(model, c) == 0:  # moves no byte of level lv
            out.append(0)
            continue
        u = model.new_int_var(0, SHARE_UNITS, f"share_{i}_{lv}")
        product = model.new_int_var(0, SHARE_UNITS * longest, f"share_dur_{i}_{lv}")
        model.add_multiplication_equality(product, [u, v.dur[i]])
        model.add(product >= SHARE_UNITS * c)
        model.add(product <= SHARE_UNITS * c + v.dur[i] - 1)
        out.append(u)
    return tuple(out)
