"""Independent checker, replay and metrics for level assignment over N levels (no solver).

:func:`validate_hierarchy` checks a solution against the semantics in
:mod:`solvers.memory.levels.hierarchy`; :func:`replay_hierarchy` recomputes the times the
way a lowered program runs them (every op and DMA as soon as its waits allow, DMAs in
queue order); :func:`hierarchy_metrics` gives the figures a report needs.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass

from solvers.dag import WaitDeadlock
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move
from solvers.memory.levels.hierarchy_bandwidth import check_hierarchy_bandwidth, replay_hierarchy_shared
from solvers.memory.levels.hierarchy_link_holds import add_hierarchy_hold_keys
from solvers.memory.levels.hierarchy_split import expand_hierarchy_splits
from solvers.memory.levels.problem import TransferKind

__all__ = [
    "required_moves", "op_level_bytes", "hierarchy_op_durations", "level_pieces", "level_occupancy",
    "validate_hierarchy", "HierarchyReplay", "replay_hierarchy", "HierarchyMetrics", "hierarchy_metrics",
]

PREFETCH, EVICT = TransferKind.PREFETCH, TransferKind.EVICT


def _queue_key(key: tuple) -> tuple:
    kind, t, gap, hop = key[:4]
    return (t, gap, kind is PREFETCH, hop)


def required_moves(problem: HierarchyProblem, level, kept) -> list[tuple]:
    """The ``(kind, tensor, gap, hop, src, dst)`` of every move the residency implies, sorted
    by tensor, gap, eviction first, hop.

    Examples
    --------
    Levels vmem (0), hbm (1, main), host (2); tensor 0 lives on host and op 0 reads it in
    vmem: two hops, host -> hbm -> vmem.

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> [(k.value, t, j, h, a, b) for k, t, j, h, a, b in required_moves(p, ((2, 0),), ((False, False),))]
    [('prefetch', 0, 1, 0, 2, 1), ('prefetch', 0, 1, 1, 1, 0)]
    """
    out = []
    for t in range(problem.num_tensors):
        acc, home = problem.accesses(t), problem.home(t)
        produced_away = problem.is_real(acc[0]) and level[t][0] != home
        for j in range(1, len(acc)):
            if kept[t][j]:
                continue
            if produced_away:
                route = problem.route(level[t][0], home)
                out += [(EVICT, t, j, h, route[h], route[h + 1]) for h in range(len(route) - 1)]
                produced_away = False
            if level[t][j] != home:
                route = problem.route(home, level[t][j])
                out += [(PREFETCH, t, j, h, route[h], route[h + 1]) for h in range(len(route) - 1)]
    return sorted(out, key=_queue_key)


def op_level_bytes(problem: HierarchyProblem, level) -> list[dict[int, int]]:
    """Per op, the bytes its accesses touch in each level (only levels it touches).

    Examples
    --------
    >>> p = HierarchyProblem((1,), ((0, 1),), ((),), (8, 4), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> op_level_bytes(p, ((1, 0), (1, 1)))
    [{0: 8, 1: 4}]
    """
    rows: list[dict[int, int]] = [{} for _ in range(problem.num_ops)]
    for t in range(problem.num_tensors):
        for j, a in enumerate(problem.accesses(t)):
            if problem.is_real(a):
                lv = level[t][j]
                rows[a][lv] = rows[a].get(lv, 0) + problem.tensor_bytes[t]
    return rows


def hierarchy_op_durations(problem: HierarchyProblem, level) -> tuple[int, ...]:
    """Each op's roofline duration given the level of each access.

    Examples
    --------
    8 bytes from vmem (8 B/cycle) + 4 from hbm (4 B/cycle) = 1 + 1 cycles; from host 8 + 4:

    >>> p = HierarchyProblem((1,), ((0, 1),), ((),), (8, 4), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)))
    >>> hierarchy_op_durations(p, ((1, 0), (1, 1))), hierarchy_op_durations(p, ((1, 2), (1, 2)))
    ((2,), (12,))
    """
    return tuple(problem.op_cycles(i, b) for i, b in enumerate(op_level_bytes(problem, level)))


def _chains(moves) -> dict[tuple, list[Move]]:
    """Moves grouped by ``(kind, tensor, gap)``, each group in hop order."""
    out: dict[tuple, list[Move]] = {}
    for m in moves:
        out.setdefault((m.kind, m.tensor, m.gap), []).append(m)
    for chain in out.values():
        chain.sort(key=lambda m: m.hop)
    return out


def level_pieces(problem: HierarchyProblem, solution: HierarchySolution) -> list[tuple[int, int, int, int]]:
    """Every buffer as ``(level, tensor, first point, end point)``, contiguous pieces merged.

    Examples
    --------
    A host tensor fetched to vmem over hbm at program start for op 0: the hbm staging buffer
    and the vmem copy from point 0 to op 0's end (point 2); the host copy throughout.

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> hop = lambda h, a, b: Move(PREFETCH, 0, 1, h, a, b, -1, 0, 8 * h, 8 - 6 * h)
    >>> level_pieces(p, HierarchySolution(((2, 0),), ((False, False),), (hop(0, 2, 1), hop(1, 1, 0)), (10,), (4,)))
    [(0, 0, 0, 2), (1, 0, 0, 1), (2, 0, 0, 3)]
    """
    end = 2 * problem.num_ops + 1
    raw: list[tuple[int, int, int, int]] = []
    for t in range(problem.num_tensors):
        acc, home = problem.accesses(t), problem.home(t)
        if not problem.is_real(acc[0]):
            raw.append((home, t, 0, end))
        elif solution.level[t][0] == home:
            raw.append((home, t, 2 * acc[0] + 1, end))
        for j, a in enumerate(acc):
            lv = solution.level[t][j]
            if problem.is_real(a) and lv != home:
                raw.append((lv, t, 2 * a + 1, 2 * a + 2))
            if j and solution.kept[t][j]:
                raw.append((lv, t, 2 * acc[j - 1] + 2, 2 * a + 1))
    for (kind, t, gap), chain in _chains(solution.moves).items():
        acc = problem.accesses(t)
        if kind is EVICT:
            raw.append((chain[0].src_level, t, 2 * acc[gap - 1] + 2, 2 * chain[0].release_op + 1))
        for h, m in enumerate(chain):
            if h + 1 < len(chain):
                hi = 2 * chain[h + 1].release_op + 1
            else:
                hi = 2 * acc[gap] + 1 if kind is PREFETCH else end
            raw.append((m.dst_level, t, 2 * m.trigger_op + 2, hi))
    raw.sort()
    merged: list[tuple[int, int, int, int]] = []
    for lv, t, lo, hi in raw:
        lo, hi = max(lo, 0), min(hi, end)
        if merged and merged[-1][:2] == (lv, t) and merged[-1][3] >= lo:
            merged[-1] = (lv, t, merged[-1][2], max(hi, merged[-1][3]))
        elif lo < hi:
            merged.append((lv, t, lo, hi))
    return merged


def level_occupancy(problem: HierarchyProblem, solution: HierarchySolution) -> list[list[int]]:
    """Bytes held in each level at every point ``0..2*num_ops`` (a row per level).

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> hop = lambda h, a, b: Move(PREFETCH, 0, 1, h, a, b, -1, 0, 8 * h, 8 - 6 * h)
    >>> level_occupancy(p, HierarchySolution(((2, 0),), ((False, False),), (hop(0, 2, 1), hop(1, 1, 0)), (10,), (4,)))
    [[8, 8, 0], [8, 0, 0], [8, 8, 8]]
    """
    occ = [[0] * (2 * problem.num_ops + 1) for _ in range(problem.num_levels)]
    for lv, t, lo, hi in level_pieces(problem, solution):
        row, size = occ[lv], problem.tensor_bytes[t]
        for p in range(lo, hi):
            row[p] += size
    return occ


def validate_hierarchy(problem: HierarchyProblem, solution: HierarchySolution) -> list[str]:
    """Every violated rule (empty when the solution is valid).

    Examples
    --------
    The host tensor's two hops (8 cycles host -> hbm at 1 B/cycle, 2 cycles hbm -> vmem at
    4 B/cycle) end at 10, so op 0 may start at 10, not 9:

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> hops = (Move(PREFETCH, 0, 1, 0, 2, 1, -1, 0, 0, 8), Move(PREFETCH, 0, 1, 1, 1, 0, -1, 0, 8, 2))
    >>> validate_hierarchy(p, HierarchySolution(((2, 0),), ((False, False),), hops, (10,), (4,)))
    []
    >>> validate_hierarchy(p, HierarchySolution(((2, 0),), ((False, False),), hops, (9,), (4,)))
    ['prefetch of tensor 0 hop 1 ends at 10 after op 0 starts at 9']
    """
    if problem.splits or solution.split_factors:  # a plan of the expansion its factors name
        if len(solution.split_factors) != len(problem.splits):
            return [f"expected {len(problem.splits)} split factors, got {len(solution.split_factors)}"]
        try:
            expanded, _ = expand_hierarchy_splits(problem, solution.split_factors)
        except ValueError as e:
            return [str(e)]
        return validate_hierarchy(expanded, dataclasses.replace(solution, split_factors=()))
    n, nt = problem.num_ops, problem.num_tensors
    if len(solution.level) != nt or len(solution.kept) != nt:
        return [f"expected residency rows for {nt} tensors"]
    if len(solution.op_start) != n or len(solution.op_duration) != n:
        return [f"expected times for {n} ops"]
    errs = _check_residency(problem, solution)
    if errs:
        return errs
    need = required_moves(problem, solution.level, solution.kept)
    have = sorted((m.key for m in solution.moves), key=_queue_key)
    if need != have:
        missing = [k[:4] for k in need if k not in have]
        extra = [k[:4] for k in have if k not in need]
        return [f"moves do not match the residency: missing {missing}, unexpected {extra}"]
    durations = hierarchy_op_durations(problem, solution.level)
    errs = _check_op_times(problem, solution, durations)
    end = [s + d for s, d in zip(solution.op_start, durations)]
    chains = _chains(solution.moves)
    for chain in chains.values():
        errs += _check_chain(problem, solution, chain, end, chains)
    errs += _check_dma_queue(solution)
    errs += _check_capacities(problem, solution)
    if problem.shared_bandwidth:
        errs += check_hierarchy_bandwidth(problem, solution)
    return errs


def _check_residency(problem: HierarchyProblem, solution: HierarchySolution) -> list[str]:
    """Known levels; virtual accesses at home; fast-only ops at level 0; kept gaps between two
    real accesses at one level other than home."""
    errs: list[str] = []
    fast_only = set(problem.fast_only_ops)
    for t in range(problem.num_tensors):
        acc, home, name = problem.accesses(t), problem.home(t), problem.tensor_name(t)
        levels, kept = solution.level[t], solution.kept[t]
        if len(levels) != len(acc) or len(kept) != len(acc):
            return [f"tensor {name}: expected {len(acc)} accesses"]
        for j, a in enumerate(acc):
            lv = levels[j]
            if not 0 <= lv < problem.num_levels:
                return [f"tensor {name}: access {j} at unknown level {lv}"]
            if not problem.is_real(a) and lv != home:
                errs.append(f"tensor {name}: virtual access {j} must be at home level {problem.level_name(home)}")
            if a in fast_only and lv != 0:
                errs.append(f"tensor {name}: fast-only op {problem.op_name(a)} uses level {problem.level_name(lv)}")
            if kept[j] and (j == 0 or not problem.is_real(acc[j - 1]) or not problem.is_real(a)
                            or lv == home or levels[j - 1] != lv):
                errs.append(f"tensor {name}: gap {j} kept without real accesses at one non-home level")
    return errs


def _check_op_times(problem: HierarchyProblem, solution: HierarchySolution, durations) -> list[str]:
    """Each op lasts its duration under the residency; ops run in order from cycle 0."""
    errs: list[str] = []
    start = solution.op_start
    for i in range(problem.num_ops):
        if solution.op_duration[i] != durations[i]:
            errs.append(f"op {problem.op_name(i)} lasts {solution.op_duration[i]}, expected {durations[i]}")
        if i == 0 and start[0] < 0:
            errs.append("op 0 starts before 0")
        if i and start[i] < start[i - 1] + durations[i - 1]:
            errs.append(f"op {problem.op_name(i)} starts at {start[i]} before op {i - 1} ends")
    return errs


def _check_chain_ops(problem: HierarchyProblem, chain: list[Move], chains: dict) -> list[str]:
    """Triggers and releases of one chain inside its gap, in hop order."""
    m0 = chain[0]
    acc = problem.accesses(m0.tensor)
    lo, hi = acc[m0.gap - 1], acc[m0.gap]
    name = f"{m0.kind.value} of tensor {problem.tensor_name(m0.tensor)}"
    trig = [m.trigger_op for m in chain]
    rel = [m.release_op for m in chain]
    ordered = trig == sorted(trig) and rel == sorted(rel) and all(r > k for k, r in zip(trig, rel))
    if m0.kind is PREFETCH:
        ok = lo <= trig[0] and trig[-1] <= hi - 1 and rel[-1] == hi
        ev = chains.get((EVICT, m0.tensor, m0.gap))
        if ev is not None and trig[0] < ev[-1].release_op:
            return [f"{name}: trigger {trig[0]} before the eviction's release {ev[-1].release_op}"]
    else:
        ok = trig[0] == lo and rel[0] >= lo + 1 and rel[-1] <= hi
    if not (ok and ordered):
        return [f"{name}: triggers {trig} / releases {rel} outside gap ({lo}, {hi}) or out of hop order"]
    return []


def _check_chain(problem: HierarchyProblem, solution: HierarchySolution, chain: list[Move], end: list[int],
                 chains: dict) -> list[str]:
    """One chain: hop durations, trigger/release ops, each hop after its trigger, the previous
    hop and (a fetch's first hop) the tensor's eviction, and before its release op starts."""
    errs = _check_chain_ops(problem, chain, chains)
    if errs:
        return errs
    t, n = chain[0].tensor, problem.num_ops
    evicted = [c[-1] for (k, tt, _), c in chains.items() if k is EVICT and tt == t]
    name = f"{chain[0].kind.value} of tensor {problem.tensor_name(t)}"
    for h, m in enumerate(chain):
        hop = f"{name} hop {h}"
        if m.duration_cycles != problem.hop_cycles(t, m.src_level, m.dst_level):
            errs.append(f"{hop} lasts {m.duration_cycles}, expected {problem.hop_cycles(t, m.src_level, m.dst_level)}")
        after = [end[m.trigger_op] if m.trigger_op >= 0 else 0]
        if h:
            after.append(chain[h - 1].end_cycle)
        elif m.kind is PREFETCH and evicted:
            after.append(evicted[0].end_cycle)
        if m.start_cycle < max(after):
            errs.append(f"{hop} starts at {m.start_cycle} before {max(after)} (its trigger, previous hop or eviction)")
        if m.release_op < n and m.end_cycle > solution.op_start[m.release_op]:
            errs.append(f"{hop} ends at {m.end_cycle} after op {problem.op_name(m.release_op)} starts "
                        f"at {solution.op_start[m.release_op]}")
    return errs


def _check_dma_queue(solution: HierarchySolution) -> list[str]:
    """The moves are listed in start order and one DMA runs at a time."""
    for a, b in zip(solution.moves, solution.moves[1:]):
        if b.start_cycle < a.end_cycle:
            return [f"DMAs overlap or are out of queue order: {a.kind.value} of {a.tensor} hop {a.hop} "
                    f"[{a.start_cycle}, {a.end_cycle}), {b.kind.value} of {b.tensor} hop {b.hop} at {b.start_cycle}"]
    return []


def _check_capacities(problem: HierarchyProblem, solution: HierarchySolution) -> list[str]:
    """No level ever holds more than its capacity."""
    errs: list[str] = []
    for lv, row in enumerate(level_occupancy(problem, solution)):
        for p, b in enumerate(row):
            if b > problem.capacity_bytes[lv]:
                where = f"op {problem.op_name(p // 2)}" if p % 2 else f"the gap before op {p // 2}"
                errs.append(f"level {problem.level_name(lv)} holds {b} > {problem.capacity_bytes[lv]} bytes "
                            f"during {where}")
                break
    return errs


@dataclass(frozen=True, slots=True)
class HierarchyReplay:
    """Times recomputed as a lowered program runs them (ASAP, DMAs in queue order).

    Examples
    --------
    >>> HierarchyReplay((0,), (4,), (), 4).makespan_cycles
    4
    """

    op_start: tuple[int, ...]
    op_duration: tuple[int, ...]
    move_start: tuple[int, ...]
    makespan_cycles: int
    link_start: tuple[int, ...] = ()  # the link holds' starts, when replayed with them


def _move_waits(problem: HierarchyProblem, moves) -> list[list[int]]:
    """Per queued move, the queue positions of the moves it waits for (previous hop; a fetch's
    first hop: its tensor's eviction's last hop)."""
    pos = {m.key[:4]: q for q, m in enumerate(moves)}
    last_evict: dict[int, int] = {}
    for q, m in enumerate(moves):
        if m.kind is EVICT and q >= last_evict.get(m.tensor, -1):
            last_evict[m.tensor] = q
    waits = []
    for m in moves:
        if m.hop:
            waits.append([pos[(m.kind, m.tensor, m.gap, m.hop - 1)]])
        elif m.kind is PREFETCH and m.tensor in last_evict:
            waits.append([last_evict[m.tensor]])
        else:
            waits.append([])
    return waits


def replay_hierarchy(problem: HierarchyProblem, solution: HierarchySolution, op_release=(),
                     tensor_ready=(), link_holds=()) -> HierarchyReplay:
    """Re-time the solution's decisions: each op starts when the previous op and every move it
    releases have ended; each move when the engine is free, its trigger op, its previous hop
    and (a fetch) its tensor's eviction have ended (under shared bandwidth, also when its
    shares are free: :func:`~solvers.memory.levels.hierarchy_bandwidth.replay_hierarchy_shared`).
    Raises ValueError on a deadlock.

    Optional heads (a linked device, :mod:`~solvers.memory.levels.hierarchy_heads_tails`):
    op i starts no earlier than ``op_release[i]``, and the first hop of a fetch of tensor t no
    earlier than ``tensor_ready[t]`` (a received copy is at home only then); empty: none.
    Under shared bandwidth also ``link_holds`` (the device's link transfer ends,
    :mod:`~solvers.memory.levels.hierarchy_link_holds`), whose starts the replay gives
    (``link_start``); the makespan is the ops' and moves' (a hold's end and tail count in the
    heads and tails' objective).

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> hops = (Move(PREFETCH, 0, 1, 0, 2, 1, -1, 0, 5, 8), Move(PREFETCH, 0, 1, 1, 1, 0, -1, 0, 20, 2))
    >>> replay_hierarchy(p, HierarchySolution(((2, 0),), ((False, False),), hops, (30,), (4,)))
    HierarchyReplay(op_start=(10,), op_duration=(4,), move_start=(0, 8), makespan_cycles=14, link_start=())
    """
    n, queue = problem.num_ops, solution.moves
    dur = hierarchy_op_durations(problem, solution.level)
    waits = _move_waits(problem, queue)
    op_head = list(op_release) or [0] * n
    move_head = [tensor_ready[m.tensor] if tensor_ready and m.kind is PREFETCH and m.hop == 0 else 0 for m in queue]
    if problem.shared_bandwidth:
        timed = replay_hierarchy_shared(problem, solution, dur, waits, op_head, move_head, link_holds,
                                        add_hierarchy_hold_keys)
        op_start, mv_start = timed[0], timed[1]
        ends = [s + d for s, d in zip(op_start, dur)] + [s + m.duration_cycles for s, m in zip(mv_start, queue)]
        return HierarchyReplay(tuple(op_start), dur, tuple(mv_start), max(ends, default=0),
                               tuple(timed[2]) if link_holds else ())
    if link_holds:
        raise ValueError("link holds are shares of the main level: only with shared bandwidth")
    releases: list[list[int]] = [[] for _ in range(n + 1)]
    for q, m in enumerate(queue):
        releases[min(m.release_op, n)].append(q)
    op_end = [0] * n
    op_start = [0] * n
    mv_start = [0] * len(queue)
    mv_end = [0] * len(queue)
    oi = qi = clock_op = clock_dma = 0
    while oi < n or qi < len(queue):
        progressed = False
        if oi < n and all(q < qi for q in releases[oi]):
            op_start[oi] = max([clock_op, op_head[oi]] + [mv_end[q] for q in releases[oi]])
            op_end[oi] = clock_op = op_start[oi] + dur[oi]
            oi += 1
            progressed = True
        if qi < len(queue):
            m = queue[qi]
            if m.trigger_op < oi and all(w < qi for w in waits[qi]):
                mv_start[qi] = max([clock_dma, move_head[qi], op_end[m.trigger_op] if m.trigger_op >= 0 else 0]
                                   + [mv_end[w] for w in waits[qi]])
                mv_end[qi] = clock_dma = mv_start[qi] + m.duration_cycles
                qi += 1
                progressed = True
        if not progressed:
            raise WaitDeadlock(f"deadlock: op {oi} and DMA {qi} wait on each other")
    return HierarchyReplay(tuple(op_start), dur, tuple(mv_start), max([*op_end, *mv_end], default=0))


@dataclass(frozen=True, slots=True)
class HierarchyMetrics:
    """A solution's figures: peak bytes and access bytes per level, DMA bytes per (src, dst).

    Examples
    --------
    >>> HierarchyMetrics(4, (8, 0), (8, 0), {}, 0).as_dict()["peak_bytes"]
    [8, 0]
    """

    makespan_cycles: int
    peak_bytes: tuple[int, ...]
    access_bytes: tuple[int, ...]
    bytes_moved: dict[tuple[int, int], int]
    num_moves: int

    def as_dict(self) -> dict:
        return {"makespan_cycles": self.makespan_cycles, "peak_bytes": list(self.peak_bytes),
                "access_bytes": list(self.access_bytes),
                "bytes_moved": {f"{a}->{b}": v for (a, b), v in sorted(self.bytes_moved.items())},
                "num_moves": self.num_moves}


def hierarchy_metrics(problem: HierarchyProblem, solution: HierarchySolution) -> HierarchyMetrics:
    """Peak bytes and access bytes per level, DMA bytes per level pair.

    Examples
    --------
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> hops = (Move(PREFETCH, 0, 1, 0, 2, 1, -1, 0, 0, 8), Move(PREFETCH, 0, 1, 1, 1, 0, -1, 0, 8, 2))
    >>> m = hierarchy_metrics(p, HierarchySolution(((2, 0),), ((False, False),), hops, (10,), (4,)))
    >>> m.peak_bytes, m.access_bytes, m.bytes_moved
    ((8, 8, 8), (8, 0, 0), {(2, 1): 8, (1, 0): 8})
    """
    access = [0] * problem.num_levels
    for row in op_level_bytes(problem, solution.level):
        for lv, b in row.items():
            access[lv] += b
    moved: dict[tuple[int, int], int] = {}
    for m in solution.moves:
        moved[(m.src_level, m.dst_level)] = moved.get((m.src_level, m.dst_level), 0) + problem.tensor_bytes[m.tensor]
    peaks = tuple(max(row, default=0) for row in level_occupancy(problem, solution))
    return HierarchyMetrics(solution.makespan_cycles, peaks, tuple(access), moved, len(solution.moves))

