"""Independent checker of a :class:`SchedulingSolution` and its objective.

Plain Python, no solver: every rule of :mod:`solvers.scheduling.problem`'s docstring is
checked here exactly as written there, so a solver whose output fails it has a bug.

Intervals are half-open, ``[start, end)``: two intervals overlap only when
``a.start < b.end and b.start < a.end``, so an empty (zero-duration) op or transfer
never conflicts with anything.

The received copy of edge ``e = (u, v, bytes)`` occupies ``bytes`` (the edge's bytes) on
v's device; u's own output buffer occupies ``op_output_bytes[u]`` on u's device.
"""

from __future__ import annotations

from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution

__all__ = ["validate_schedule", "objective_value", "memory_profile", "output_buffer_ends"]


def _overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def _pairwise_overlaps(items: list[tuple[int, int, str]]) -> list[tuple[str, str]]:
    """Overlapping pairs among ``(start, end, label)`` (empty intervals ignored)."""
    items = sorted((s, e, lab) for s, e, lab in items if e > s)
    out = []
    best = None  # the earlier interval reaching furthest right
    for s, e, lab in items:
        if best is not None and best[1] > s:
            out.append((best[2], lab))
        if best is None or e > best[1]:
            best = (s, e, lab)
    return out


def output_buffer_ends(problem: SchedulingProblem, solution: SchedulingSolution) -> list[int]:
    """When each op's output buffer is freed: the latest of its own end, the ends of its readers
    on its device and the ends of the transfers that copy it to another device."""
    ends = [solution.op_end(i) for i in range(problem.num_ops)]
    t_of_edge = {t.edge: t for t in solution.transfers}
    buf_end = list(ends)
    for e, (u, v, _b) in enumerate(problem.edges):
        if solution.op_device[u] == solution.op_device[v]:
            buf_end[u] = max(buf_end[u], ends[v])
        elif e in t_of_edge:
            buf_end[u] = max(buf_end[u], t_of_edge[e].end_cycle)
    return buf_end


def memory_profile(problem: SchedulingProblem, solution: SchedulingSolution,
                   device: int) -> list[tuple[int, int, int, str]]:
    """The activation buffers on ``device`` as ``(start, end, bytes, label)``, exact lifetimes.

    Examples
    --------
    >>> from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
    >>> p = SchedulingProblem(((2,), (3,)), ((0, 1, 8),), (1,), ((-1,),), ((),),
    ...                       op_output_bytes=(8, 4))
    >>> s = SchedulingSolution((0, 0), (0, 0), (0, 2), (2, 3), ())
    >>> memory_profile(p, s, 0)
    [(0, 5, 8, 'output of 0'), (2, 5, 4, 'output of 1')]
    """
    out = []
    n = problem.num_ops
    t_of_edge = {t.edge: t for t in solution.transfers}
    ends = [solution.op_end(i) for i in range(n)]
    buf_end = output_buffer_ends(problem, solution)
    for i in range(n):
        if solution.op_device[i] == device and problem.output_bytes(i) > 0:
            out.append((solution.op_start[i], buf_end[i], problem.output_bytes(i),
                        f"output of {problem.op_name(i)}"))
    for e, (u, v, b) in enumerate(problem.edges):
        t = t_of_edge.get(e)
        if t is not None and solution.op_device[v] == device and b > 0:
            out.append((t.start_cycle, ends[v], b,
                        f"copy of edge {e} ({problem.op_name(u)}->{problem.op_name(v)})"))
    return out


def _check_memory(problem: SchedulingProblem, solution: SchedulingSolution, d: int) -> list[str]:
    cap = problem.memory_bytes(d)
    if cap <= 0:
        return []
    resident = problem.device_resident_bytes(d, solution.op_device)
    if resident > cap:
        return [f"device {d}: resident bytes {resident} exceed memory {cap}"]
    events = []
    for s, e, b, _lab in memory_profile(problem, solution, d):
        if e > s:
            events.append((e, 0, -b))  # at equal times, releases come before allocations
            events.append((s, 1, b))
    events.sort()
    live = 0
    for t, _k, delta in events:
        live += delta
        if resident + live > cap:
            return [f"device {d}: {resident + live} bytes live at cycle {t} "
                    f"(resident {resident}) exceed memory {cap}"]
    return []


def validate_schedule(problem: SchedulingProblem, solution: SchedulingSolution) -> list[str]:
    """Every violated rule of the problem's semantics, as readable messages (empty = valid).

    Parameters
    ----------
    problem : SchedulingProblem
    solution : SchedulingSolution

    Returns
    -------
    list of str
        One message per violation, naming the ops (by name when the problem has names).

    Examples
    --------
    >>> from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution, ScheduledTransfer
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> ok = SchedulingSolution((0, 1), (0, 0), (0, 9), (4, 3), (ScheduledTransfer(0, 0, 4, 5),))
    >>> validate_schedule(p, ok)
    []
    >>> bad = SchedulingSolution((0, 1), (0, 0), (0, 8), (4, 3), (ScheduledTransfer(0, 0, 4, 5),))
    >>> validate_schedule(p, bad)
    ['edge 0 (0->1): op 1 starts at 8 before its transfer ends at 9']
    """
    n = problem.num_ops
    for field_name in ("op_device", "op_stream", "op_start", "op_duration"):
        if len(getattr(solution, field_name)) != n:
            return [f"{field_name} has {len(getattr(solution, field_name))} entries, expected {n}"]
    errs = _check_placements(problem, solution)
    if any(not 0 <= d < problem.num_devices for d in solution.op_device):
        return errs  # the later checks index by device
    errs += _check_streams(problem, solution)
    errs += _check_edges(problem, solution)
    errs += _check_colocation(problem, solution)
    for d in range(problem.num_devices):
        errs.extend(_check_memory(problem, solution, d))
    return errs


def _check_placements(problem: SchedulingProblem, solution: SchedulingSolution) -> list[str]:
    """Each op on a known device that may run it, for its duration there, on one of its streams, from cycle >= 0."""
    errs: list[str] = []
    name = problem.op_name
    dev, stream, start, dur = solution.op_device, solution.op_stream, solution.op_start, solution.op_duration
    for i in range(problem.num_ops):
        d = dev[i]
        if not 0 <= d < problem.num_devices:
            errs.append(f"op {name(i)}: unknown device {d}")
            continue
        want = problem.durations_cycles[i][d]
        if want < 0:
            errs.append(f"op {name(i)} may not run on device {d}")
        elif dur[i] != want:
            errs.append(f"op {name(i)} on device {d}: duration {dur[i]} != {want}")
        if not 0 <= stream[i] < problem.device_streams[d]:
            errs.append(f"op {name(i)}: stream {stream[i]} not in [0, {problem.device_streams[d]})")
        if start[i] < 0:
            errs.append(f"op {name(i)} starts at negative cycle {start[i]}")
    return errs


def _check_streams(problem: SchedulingProblem, solution: SchedulingSolution) -> list[str]:
    """No two ops overlap on one stream of one device."""
    lanes: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    for i in range(problem.num_ops):
        start = solution.op_start[i]
        lanes.setdefault((solution.op_device[i], solution.op_stream[i]), []).append(
            (start, start + solution.op_duration[i], problem.op_name(i)))
    return [f"ops {a} and {b} overlap on device {d} stream {s}"
            for (d, s), items in sorted(lanes.items()) for a, b in _pairwise_overlaps(items)]


def _check_edges(problem: SchedulingProblem, solution: SchedulingSolution) -> list[str]:
    """Every edge's precedence and transfer (:func:`_check_edge`), then no two transfers overlap on a link."""
    errs: list[str] = []
    by_edge: dict[int, list] = {}
    for t in solution.transfers:
        if not 0 <= t.edge < len(problem.edges):
            errs.append(f"transfer names unknown edge {t.edge}")
            continue
        by_edge.setdefault(t.edge, []).append(t)
    link_items: dict[int, list[tuple[int, int, str]]] = {}
    for e in range(len(problem.edges)):
        errs += _check_edge(problem, solution, e, by_edge.get(e, []), link_items)
    for link, items in sorted(link_items.items()):
        for a_, b_ in _pairwise_overlaps(items):
            errs.append(f"transfers of {a_} and {b_} overlap on link {link}")
    return errs


def _check_edge(problem: SchedulingProblem, solution: SchedulingSolution, e: int, ts: list,
                link_items: dict[int, list[tuple[int, int, str]]]) -> list[str]:
    """Edge ``e``: on one device, no transfer and v after u; across devices, one transfer on
    their link, of the edge's duration there, after u and before v (added to ``link_items``)."""
    name, start = problem.op_name, solution.op_start
    u, v, _b = problem.edges[e]
    tag = f"edge {e} ({name(u)}->{name(v)})"
    end_u = start[u] + solution.op_duration[u]
    a, b = solution.op_device[u], solution.op_device[v]
    errs: list[str] = []
    if a == b:
        if ts:
            errs.append(f"{tag}: both ops on device {a} but {len(ts)} transfer(s) scheduled")
        if start[v] < end_u:
            errs.append(f"{tag}: op {name(v)} starts at {start[v]} before {name(u)} ends at {end_u}")
        return errs
    link = problem.link_of[a][b]
    if link < 0:
        return [f"{tag}: devices {a} and {b} cannot exchange data (link_of is -1)"]
    if len(ts) != 1:
        return [f"{tag}: across devices {a}->{b} needs exactly one transfer, got {len(ts)}"]
    t = ts[0]
    if t.link != link:
        errs.append(f"{tag}: transfer on link {t.link}, expected link {link}")
    if 0 <= t.link < problem.num_links and t.duration_cycles != problem.transfer_cycles[e][t.link]:
        errs.append(f"{tag}: transfer duration {t.duration_cycles} != "
                    f"{problem.transfer_cycles[e][t.link]}")
    if t.start_cycle < end_u:
        errs.append(f"{tag}: transfer starts at {t.start_cycle} before {name(u)} ends at {end_u}")
    if start[v] < t.end_cycle:
        errs.append(f"{tag}: op {name(v)} starts at {start[v]} before its transfer ends at {t.end_cycle}")
    link_items.setdefault(t.link, []).append((t.start_cycle, t.end_cycle, tag))
    return errs


def _check_colocation(problem: SchedulingProblem, solution: SchedulingSolution) -> list[str]:
    """Each colocation group on one device."""
    errs = []
    for g in problem.colocation_groups:
        devs = sorted({solution.op_device[i] for i in g})
        if len(devs) > 1:
            errs.append("colocation group [" + ", ".join(problem.op_name(i) for i in g)
                        + f"] spans devices {devs}")
    return errs


def objective_value(problem: SchedulingProblem, solution: SchedulingSolution) -> int:
    """The objective the problem asks for: makespan (LATENCY) or max load (THROUGHPUT).

    Examples
    --------
    >>> from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution, Objective
    >>> p = SchedulingProblem(((4, 4), (3, 3)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       objective=Objective.THROUGHPUT)
    >>> objective_value(p, SchedulingSolution((0, 1), (0, 0), (0, 0), (4, 3), ()))
    4
    """
    if problem.objective is Objective.LATENCY:
        return solution.makespan_cycles
    loads = solution.device_loads(problem.num_devices) + solution.link_loads(problem.num_links)
    return max(loads, default=0)
