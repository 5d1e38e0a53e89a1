"""The CP-SAT model of one large neighbourhood: placement and sequencing of a few ops, the rest fixed.

Notes
-----
A :class:`Neighbourhood` names a time window ``[t0, t1)`` of the incumbent schedule and the
*free* ops (every free op starts in the window; the devices they may move to are listed).
Every other task (op or transfer) is fixed, in one of two ways:

* **fixed in time** (starts before ``t1``): keeps its device, stream or link and its start;
* **shifted** (starts at or after ``t1``): keeps its device and order but moves by one
  common offset ``delta <= 0``, so the whole tail of the schedule can move earlier at once.

No task starting at or after ``t1`` can feed a task starting before it, so every edge goes
from fixed to free, free to free, free to fixed or shifted, fixed to shifted, or within one
class. The model (sets: free ops F, free edges E_F = edges touching F, links l):

* **Variables**: ``start_i`` in ``[t0, M0]`` (M0 the incumbent's makespan); ``x[i, d, s]``
  (op i on stream s of device d, one literal per stream) and ``x[i, d] = sum_s x[i, d, s]``;
  an optional interval per (i, d, s); per free edge ``ts_e`` and per link it may use
  ``z[e, l]`` (the transfer uses l) with an optional interval; ``delta``; makespan ``M``.
* **Devices and links**: per stream or link, NoOverlap of the free intervals and the fixed
  tasks still occupying it after the window's floor (``t0`` on streams; on links, the
  earliest start of a free transfer); a free task on a resource ends by the resource's first
  shifted task, moved by ``delta`` (free tasks never go past it).
* **Edges**: ``start_v >= end_u`` for every edge touching F (with ``start_v + delta`` for a
  shifted v); a transfer is forced exactly when the two ends sit on different devices, on
  their link (``z[e, l]`` = the sum of the device-pair literals using l; unlinked pairs
  forbidden), after ``end_u`` and before ``start_v``.
* **delta** is bounded below by every fixed-in-time to shifted arc that bypasses the free
  ops (data edges, transfers, and per resource the last fixed task before the first shifted
  one), and by ``-start`` of the earliest shifted task.
* **Colocation**: a group with a member outside F pins its free members to that device;
  a group inside F shares one device. **Memory**: on devices whose limit can bind, the
  weights of the free ops placed there fit what the other ops' weights leave; activation
  buffers are checked on the whole schedule afterwards (the caller rejects a violation).
* **Objective**: ``minimize C * M + delta`` with ``M >= end`` of every free task,
  ``M >= max shifted end + delta`` and ``M >=`` every fixed end, ``C`` large enough that a
  shorter makespan always wins, then the earliest tail.

The incumbent restricted to the window (``delta = 0``) satisfies every constraint, and the
hint gives all of it, so a solution exists and any solution is a valid schedule of the whole
problem with makespan ``M <= M0``. The model's size depends on the window (free ops, their
edges, the fixed tasks overlapping it), never on the size of the graph, apart from one
vectorised pass over the edges for the bound on ``delta``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from solvers.cpsat_support import interval_if
from solvers.hierarchical.state import ScheduleState
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.cpsat.variables import enforce_if, literal_and

__all__ = ["Neighbourhood", "Boundary", "WindowVars", "compute_boundary", "build_window",
           "add_window_hint", "WindowMove", "extract_window", "apply_move"]


@dataclass(frozen=True)
class Neighbourhood:
    """Free ops (each starting in ``[t0, t1)``) and the devices they may move to.

    Examples
    --------
    >>> Neighbourhood((3, 4), 10, 20, (0, 1), "window").size
    2
    """

    ops: tuple[int, ...]
    t0: int
    t1: int
    devices: tuple[int, ...]
    kind: str = "window"

    @property
    def size(self) -> int:
        return len(self.ops)


@dataclass
class Boundary:
    """How the fixed part of the schedule meets a neighbourhood (see the module Notes)."""

    free: np.ndarray            # bool per op
    free_edge: np.ndarray       # bool per edge: touches a free op
    shifted: np.ndarray         # bool per op: starts at or after t1 (and is not free)
    t_shifted: np.ndarray       # bool per edge: a transfer of a non-free edge starting at/after t1
    delta_floor: int
    max_fixed_end: int
    max_shifted_end: int | None
    first_shifted: dict[int, int]  # resource -> start of its first shifted task
    last_fixed: dict[int, int]     # resource -> end of its last fixed task (before t1)


def compute_boundary(state: ScheduleState, nb: Neighbourhood) -> Boundary:
    """Classify every task against ``nb`` and bound ``delta`` (one vectorised pass).

    Examples
    --------
    >>> from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
    >>> from solvers.hierarchical.state import GraphIndex
    >>> p = SchedulingProblem(((2,), (3,), (4,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    >>> st = ScheduleState(GraphIndex.of(p), SchedulingSolution((0,) * 3, (0,) * 3, (0, 4, 7), (2, 3, 4), ()))
    >>> b = compute_boundary(st, Neighbourhood((1,), 3, 5, (0,)))
    >>> b.delta_floor, b.max_shifted_end  # op 2 (shifted) may start as early as op 0 ends
    (-5, 11)
    """
    g = state.graph
    n = len(state.dev)
    t1 = nb.t1
    free = np.zeros(n, dtype=bool)
    free[list(nb.ops)] = True
    end = state.start + state.dur
    shifted = (state.start >= t1) & ~free
    fixed = ~free & ~shifted
    eu, ev = g.edge_u, g.edge_v
    free_edge = free[eu] | free[ev] if len(eu) else np.zeros(0, dtype=bool)
    has_t = state.t_link >= 0
    t_end = state.t_start + state.t_dur
    t_shifted = has_t & ~free_edge & (state.t_start >= t1)
    t_fixed = has_t & ~free_edge & ~t_shifted
    floors: list[int] = []  # lower bounds on delta; none when nothing is shifted
    if shifted.any():
        floors.append(-int(state.start[shifted].min()))
    if t_shifted.any():
        floors.append(-int(state.t_start[t_shifted].min()))
    if len(eu):
        same = ~has_t & fixed[eu] & shifted[ev]
        if same.any():
            floors.append(int((end[eu] - state.start[ev])[same].max()))
        m = t_shifted & fixed[eu]
        if m.any():
            floors.append(int((end[eu] - state.t_start)[m].max()))
        m = t_fixed & shifted[ev]
        if m.any():
            floors.append(int((t_end - state.start[ev])[m].max()))
    first_shifted, last_fixed = _resource_boundaries(state, free, free_edge, t1)
    for r, f in first_shifted.items():
        if r in last_fixed:
            floors.append(last_fixed[r] - f)
    max_fixed = int(end[fixed].max()) if fixed.any() else 0
    if t_fixed.any():
        max_fixed = max(max_fixed, int(t_end[t_fixed].max()))
    max_shifted = None
    if shifted.any():
        max_shifted = int(end[shifted].max())
    if t_shifted.any():
        max_shifted = max(max_shifted or 0, int(t_end[t_shifted].max()))
    return Boundary(free, free_edge, shifted, t_shifted, min(0, max(floors, default=0)), max_fixed,
                    max_shifted, first_shifted, last_fixed)


def _is_free_task(task: int, n: int, free: np.ndarray, free_edge: np.ndarray) -> bool:
    return bool(free[task]) if task < n else bool(free_edge[task - n])


def _resource_boundaries(state: ScheduleState, free, free_edge, t1: int):
    """Per resource: the first shifted task's start and the last fixed task's end."""
    n = len(state.dev)
    first, last = {}, {}
    for r, (starts, ends, ids) in enumerate(state.resource_index()):
        if not starts:
            continue
        k = state.first_at_or_after(r, t1)
        for j in range(k, len(ids)):
            if not _is_free_task(ids[j], n, free, free_edge):
                first[r] = starts[j]
                break
        for j in range(k - 1, -1, -1):
            if not _is_free_task(ids[j], n, free, free_edge):
                last[r] = ends[j]
                break
    return first, last


@dataclass
class WindowVars:
    """Variable handles of one neighbourhood model (see :func:`build_window`)."""

    nb: Neighbourhood
    boundary: Boundary
    horizon: int
    options: dict[int, tuple[int, ...]] = field(default_factory=dict)  # free op -> devices
    start: dict[int, Any] = field(default_factory=dict)
    end: dict[int, Any] = field(default_factory=dict)
    x: dict[tuple[int, int], Any] = field(default_factory=dict)
    xs: dict[tuple[int, int, int], Any] = field(default_factory=dict)
    intervals: dict[int, list] = field(default_factory=dict)  # resource -> intervals
    ends_on: dict[int, list] = field(default_factory=dict)    # resource -> (end expr, literal)
    starts_on: dict[int, list] = field(default_factory=dict)  # link resource -> (start, literal)
    slots: dict[int, list] = field(default_factory=dict)      # free op -> [(device, stream, literal)]
    links_of: dict[int, list] = field(default_factory=dict)   # free edge -> [(link, literal)]
    ts: dict[int, Any] = field(default_factory=dict)
    z: dict[tuple[int, int], Any] = field(default_factory=dict)
    y: dict[tuple[int, int, int], Any] = field(default_factory=dict)
    delta: Any = None
    makespan: Any = None
    num_blockers: int = 0

    def lit(self, i: int, d: int):
        return self.x.get((i, d), False)


def _device_options(state: ScheduleState, nb: Neighbourhood, b: Boundary) -> dict[int, tuple[int, ...]]:
    """Devices each free op may take: allowed, in the neighbourhood (or its own), linked to
    its fixed neighbours' devices, and its colocation group's device when a member is fixed."""
    g = state.graph
    p = g.problem
    dev = state.dev
    nbdev = set(nb.devices)
    out: dict[int, tuple[int, ...]] = {}
    for i in nb.ops:
        cands = [d for d in g.allowed[i] if d in nbdev or d == dev[i]]
        k = g.coloc_of.get(i)
        if k is not None:
            members = g.coloc_groups[k]
            pinned = {int(dev[j]) for j in members if not b.free[j]}
            if pinned:
                cands = [d for d in cands if d in pinned]
            else:
                cands = [d for d in cands if all(p.durations_cycles[j][d] >= 0 for j in members)]
        ok = []
        for d in cands:
            if all(b.free[p.edges[e][0]] or dev[p.edges[e][0]] == d
                   or p.link_of[dev[p.edges[e][0]]][d] >= 0 for e in g.in_edges[i]) and \
               all(b.free[p.edges[e][1]] or dev[p.edges[e][1]] == d
                   or p.link_of[d][dev[p.edges[e][1]]] >= 0 for e in g.out_edges[i]):
                ok.append(d)
        out[i] = tuple(ok) if ok else (int(dev[i]),)
    return out


def build_window(state: ScheduleState, nb: Neighbourhood,
                 boundary: Boundary | None = None) -> tuple[cp_model.CpModel, WindowVars]:
    """The neighbourhood model (module Notes): variables, every family, objective. No solver here.

    Examples
    --------
    Two ops on one device, the second free to move to an idle second device:

    >>> from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
    >>> from solvers.hierarchical.state import GraphIndex
    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> st = ScheduleState(GraphIndex.of(p), SchedulingSolution((0, 0), (0, 0), (0, 4), (4, 4), ()))
    >>> model, v = build_window(st, Neighbourhood((0, 1), 0, 5, (0, 1)))
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> solver.solve(model) == cp_model.OPTIMAL, solver.value(v.makespan)
    (True, 4)
    """
    b = boundary if boundary is not None else compute_boundary(state, nb)
    model = cp_model.CpModel()
    horizon = state.makespan()
    v = WindowVars(nb, b, horizon)
    v.options = _device_options(state, nb, b)
    add_window_ops(model, state, v)
    add_window_edges(model, state, v)
    add_window_resources(model, state, v)
    add_window_colocation(model, state, v)
    add_window_memory(model, state, v)
    add_window_objective(model, state, v)
    return model, v


def add_window_ops(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """Start, end, device and stream literals and intervals of every free op."""
    p = state.graph.problem
    g = state.graph
    H, t0 = v.horizon, v.nb.t0
    v.delta = model.new_int_var(v.boundary.delta_floor, 0, "delta")
    for i in v.nb.ops:
        devs = v.options[i]
        durs = [p.durations_cycles[i][d] for d in devs]
        s = model.new_int_var(t0, max(t0, H - min(durs)), f"start_{i}")
        v.start[i] = s
        slots = [(d, k) for d in devs for k in range(p.device_streams[d])]
        for d in devs:
            lits = []
            for k in range(p.device_streams[d]):
                lit = True if len(slots) == 1 else model.new_bool_var(f"x_{i}_{d}_{k}")
                v.xs[i, d, k] = lit
                v.slots.setdefault(i, []).append((d, k, lit))
                lits.append(lit)
                dur = p.durations_cycles[i][d]
                if dur > 0:
                    r = g.resource_of_op(d, k)
                    iv = interval_if(model, s, dur, None, lit, f"op_{i}_{d}_{k}")
                    v.intervals.setdefault(r, []).append(iv)
                    v.ends_on.setdefault(r, []).append((s + dur, lit))
            if len(lits) == 1:
                v.x[i, d] = lits[0]
            else:
                xd = model.new_bool_var(f"x_{i}_{d}")
                model.add(xd == sum(lits))
                v.x[i, d] = xd
        if len(slots) > 1:
            model.add_exactly_one([lit for _, _, lit in v.slots[i]])
        if len(devs) == 1:
            v.end[i] = s + durs[0]
        else:
            e = model.new_int_var(t0, H, f"end_{i}")
            model.add(e == s + sum(p.durations_cycles[i][d] * v.x[i, d] for d in devs))
            v.end[i] = e


def _start_of(state: ScheduleState, v: WindowVars, op: int):
    """The start of any op as the model sees it: a variable, a constant, or constant + delta."""
    if v.boundary.free[op]:
        return v.start[op]
    s = int(state.start[op])
    return s + v.delta if v.boundary.shifted[op] else s


def _end_of(state: ScheduleState, v: WindowVars, op: int):
    if v.boundary.free[op]:
        return v.end[op]
    return int(state.start[op] + state.dur[op])  # a producer of a free op is never shifted


def _devices_of(state: ScheduleState, v: WindowVars, op: int) -> tuple[int, ...]:
    return v.options[op] if v.boundary.free[op] else (int(state.dev[op]),)


def _lit_of(v: WindowVars, op: int, d: int):
    return v.x.get((op, d), False) if v.boundary.free[op] else True


def add_window_edges(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """Precedence and transfers of every edge touching a free op."""
    g = state.graph
    p = g.problem
    H, t0 = v.horizon, v.nb.t0
    for e in np.flatnonzero(v.boundary.free_edge).tolist():
        u, w, _ = p.edges[e]
        end_u, start_w = _end_of(state, v, u), _start_of(state, v, w)
        model.add(start_w >= end_u)
        per_link: dict[int, list] = {}
        for a in _devices_of(state, v, u):
            for bdev in _devices_of(state, v, w):
                if a == bdev:
                    continue
                la, lb = _lit_of(v, u, a), _lit_of(v, w, bdev)
                link = p.link_of[a][bdev]
                if link < 0:
                    lits = [lit.Not() for lit in (la, lb) if lit is not True]
                    model.add_bool_or(lits)
                    continue
                y = literal_and(model, la, lb, f"y_{e}_{a}_{bdev}")
                if y is False:
                    continue
                v.y[e, a, bdev] = y
                per_link.setdefault(link, []).append(y)
        if not per_link:
            continue
        lo = t0
        if state.t_link[e] >= 0:
            lo = min(lo, int(state.t_start[e]))
        ts = model.new_int_var(lo, H, f"tstart_{e}")
        v.ts[e] = ts
        model.add(ts >= end_u)
        for link, ys in sorted(per_link.items()):
            c = p.transfer_cycles[e][link]
            if len(ys) == 1:
                zl = ys[0]
            else:
                zl = model.new_bool_var(f"z_{e}_{link}")
                model.add(zl == sum(ys))
            v.z[e, link] = zl
            v.links_of.setdefault(e, []).append((link, zl))
            enforce_if(model.add(start_w >= ts + c), zl)
            if c > 0:
                r = g.resource_of_link(link)
                iv = interval_if(model, ts, c, None, zl, f"xfer_{e}_{link}")
                v.intervals.setdefault(r, []).append(iv)
                v.ends_on.setdefault(r, []).append((ts + c, zl))
                v.starts_on.setdefault(r, []).append((e, ts, zl))


def add_window_resources(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """NoOverlap per stream and link with the fixed tasks still there; end by the first shifted one."""
    g = state.graph
    n = len(state.dev)
    b = v.boundary
    index = state.resource_index()
    for r, ivs in sorted(v.intervals.items()):
        starts, ends, ids = index[r]
        floor = v.nb.t0
        if r >= g.num_stream_resources:  # a free transfer may keep an earlier start on its link
            link = r - g.num_stream_resources
            on_link = v.starts_on.get(r, ())
            floor = min([floor] + [int(state.t_start[e]) for e, _, _ in on_link
                                   if state.t_link[e] == link])
            for _, start_expr, lit in on_link:
                enforce_if(model.add(start_expr >= floor), lit)
        k = state.first_at_or_after(r, v.nb.t1)
        blockers = []
        for j in range(k - 1, -1, -1):
            if ends[j] <= floor:
                break
            if not _is_free_task(ids[j], n, b.free, b.free_edge):
                blockers.append(model.new_fixed_size_interval_var(starts[j], ends[j] - starts[j],
                                                                  f"fixed_{r}_{j}"))
        # A free transfer may already sit after some shifted tasks of its link: those move
        # with delta inside the model, and free tasks end by the first shifted task after it.
        reach = max([0] + [int(state.t_start[e] + state.t_dur[e]) for e, _, _ in v.starts_on.get(r, ())
                           if r - g.num_stream_resources == state.t_link[e]])
        first = None
        for j in range(k, len(ids)):
            if _is_free_task(ids[j], n, b.free, b.free_edge):
                continue
            if starts[j] >= reach:
                first = starts[j]
                break
            blockers.append(model.new_fixed_size_interval_var(starts[j] + v.delta, ends[j] - starts[j],
                                                              f"shifted_{r}_{j}"))
        v.num_blockers += len(blockers)
        if len(ivs) + len(blockers) > 1:
            model.add_no_overlap(ivs + blockers)
        if first is not None:
            for end_expr, lit in v.ends_on.get(r, ()):
                enforce_if(model.add(end_expr <= first + v.delta), lit)


def add_window_colocation(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """Free members of a group with no fixed member share one device."""
    g = state.graph
    seen: set[int] = set()
    for i in v.nb.ops:
        k = g.coloc_of.get(i)
        if k is None or k in seen:
            continue
        seen.add(k)
        members = [j for j in g.coloc_groups[k] if v.boundary.free[j]]
        if len(members) < len(g.coloc_groups[k]) or len(members) < 2:
            continue  # pinned through the device options
        common = set(v.options[members[0]])
        for j in members[1:]:
            common &= set(v.options[j])
        for j in members:
            for d in v.options[j]:
                if d not in common:
                    lit = v.x[j, d]
                    if lit is True:
                        model.add_bool_or([])
                    else:
                        model.add(lit == 0)
        first = members[0]
        for j in members[1:]:
            for d in sorted(common):
                a, c = v.x[first, d], v.x[j, d]
                if a is True or c is True:
                    other = c if a is True else a
                    if other is not True:
                        model.add(other == 1)
                else:
                    model.add(a == c)


def add_window_memory(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """Weights of the free ops on a device within what the other ops' weights leave there; a
    weight or input several ops read is held once per device (:func:`_free_shared_terms`)."""
    g = state.graph
    p = g.problem
    if not g.memory_devices or not p.op_resident_bytes:
        return
    free = v.boundary.free
    if p.shared_resident:
        _add_window_memory_shared(model, state, v)
        return
    resident = np.asarray(p.op_resident_bytes, dtype=np.int64)
    others = np.bincount(state.dev[~free], weights=resident[~free], minlength=p.num_devices)
    for d in g.memory_devices:
        terms = [p.resident_bytes(i) * v.x[i, d] for i in v.nb.ops
                 if (i, d) in v.x and p.resident_bytes(i) > 0]
        if terms:
            model.add(sum(terms) <= p.memory_bytes(d) - int(others[d]))


def _add_window_memory_shared(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """:func:`add_window_memory` with shared tensors: the other ops' bytes by
    ``device_resident_bytes``, each free op's own bytes, and each shared tensor once."""
    p = state.graph.problem
    placed = [-1 if free else int(d) for free, d in zip(v.boundary.free, state.dev)]
    own = {i: p.resident_bytes(i) - sum(b for b, readers in p.shared_resident if i in readers)
           for i in v.nb.ops}
    for d in state.graph.memory_devices:
        terms = [own[i] * v.x[i, d] for i in v.nb.ops if (i, d) in v.x and own[i] > 0]
        terms += _free_shared_terms(model, p, v, placed, d)
        if terms:
            model.add(sum(terms) <= p.memory_bytes(d) - p.device_resident_bytes(d, placed))


def _free_shared_terms(model: cp_model.CpModel, p: SchedulingProblem, v: WindowVars, placed, d: int) -> list:
    """Per shared tensor with a free reader that may use ``d`` and no fixed reader already on
    ``d`` (those bytes are in the others' count): its bytes once, through ``held >= x[i, d]``."""
    terms = []
    for t, (b, readers) in enumerate(p.shared_resident):
        if b == 0 or any(placed[i] == d for i in readers):
            continue
        lits = [v.x[i, d] for i in readers if (i, d) in v.x]
        if any(lit is True for lit in lits):
            terms.append(b)
        elif lits:
            held = model.new_bool_var(f"held_{t}_{d}")
            for lit in lits:
                model.add_implication(lit, held)
            terms.append(b * held)
    return terms


def add_window_objective(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """Minimize ``C * makespan + delta`` (module Notes)."""
    p = state.graph.problem
    b = v.boundary
    H = v.horizon
    M = model.new_int_var(min(b.max_fixed_end, H), H, "makespan")
    v.makespan = M
    for i in v.nb.ops:
        model.add(M >= v.end[i])
    for e, ts in v.ts.items():
        model.add(M >= ts + sum(p.transfer_cycles[e][link] * zl for link, zl in v.links_of[e]))
    if b.max_shifted_end is not None:
        model.add(M >= b.max_shifted_end + v.delta)
    weight = 1 - b.delta_floor
    model.minimize(weight * M + v.delta)


def add_window_hint(model: cp_model.CpModel, state: ScheduleState, v: WindowVars) -> None:
    """Hint every variable from the incumbent (delta = 0): a complete, feasible hint."""
    done: set[int] = set()

    def hint(var, value) -> None:
        if var is True or var is False or var is None:
            return
        value = int(value)
        if not isinstance(var, cp_model.IntVar):
            var, value = var.Not(), 1 - value
        if var.index not in done:
            done.add(var.index)
            model.add_hint(var, value)

    p = state.graph.problem
    dev, stream, start = state.dev, state.stream, state.start
    for i in v.nb.ops:
        hint(v.start[i], start[i])
        hint(v.end[i] if isinstance(v.end[i], cp_model.IntVar) else None, start[i] + state.dur[i])
        for d, k, lit in v.slots[i]:
            hint(lit, d == dev[i] and k == stream[i])
        for d in v.options[i]:
            hint(v.x[i, d], d == dev[i])
    for e, ts in v.ts.items():
        u = p.edges[e][0]
        if state.t_link[e] >= 0:
            hint(ts, state.t_start[e])
        else:  # no transfer: any start from the producer's end (and the window's start) will do
            hint(ts, max(v.nb.t0, start[u] + state.dur[u]))
    for (e, a, bdev), y in v.y.items():
        u, w, _ = p.edges[e]
        hint(y, dev[u] == a and dev[w] == bdev)
    for (e, link), zl in v.z.items():
        hint(zl, state.t_link[e] == link)
    hint(v.delta, 0)
    hint(v.makespan, v.horizon)


@dataclass(frozen=True)
class WindowMove:
    """A model solution: new device, stream and start per free op, transfers of free edges."""

    ops: tuple[tuple[int, int, int, int], ...]           # (op, device, stream, start)
    transfers: tuple[tuple[int, int, int], ...]          # (edge, link or -1, start)
    delta: int
    makespan: int


def extract_window(solver: cp_model.CpSolver, state: ScheduleState, v: WindowVars) -> WindowMove:
    """Read the solution of a solved neighbourhood model."""

    def val(lit) -> bool:
        return lit if isinstance(lit, bool) else bool(solver.boolean_value(lit))

    ops = []
    for i in v.nb.ops:
        d, k = next((d, k) for d, k, lit in v.slots[i] if val(lit))
        ops.append((i, d, k, int(solver.value(v.start[i]))))
    transfers = []
    for e in np.flatnonzero(v.boundary.free_edge).tolist():
        link = next((link for link, zl in v.links_of.get(e, ()) if val(zl)), -1)
        transfers.append((e, link, int(solver.value(v.ts[e])) if link >= 0 else 0))
    return WindowMove(tuple(ops), tuple(transfers), int(solver.value(v.delta)),
                      int(solver.value(v.makespan)))


def apply_move(state: ScheduleState, move: WindowMove, boundary: Boundary) -> None:
    """Write a neighbourhood's solution into the state: free ops re-placed and re-timed,
    their edges' transfers replaced, every shifted task moved by ``delta``.

    Examples
    --------
    >>> from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution
    >>> from solvers.hierarchical.state import GraphIndex
    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> st = ScheduleState(GraphIndex.of(p), SchedulingSolution((0, 0), (0, 0), (0, 4), (4, 4), ()))
    >>> nb = Neighbourhood((1,), 4, 5, (0, 1))
    >>> apply_move(st, WindowMove(((1, 1, 0, 0),), (), 0, 4), compute_boundary(st, nb))
    >>> st.dev.tolist(), st.start.tolist(), st.makespan()
    ([0, 1], [0, 0], 4)
    """
    p = state.graph.problem
    if move.delta:
        state.start[boundary.shifted] += move.delta
        state.t_start[boundary.t_shifted] += move.delta
    for i, d, k, s in move.ops:
        state.dev[i], state.stream[i], state.start[i] = d, k, s
        state.dur[i] = p.durations_cycles[i][d]
    for e, link, s in move.transfers:
        state.t_link[e] = link
        state.t_start[e] = s if link >= 0 else 0
        state.t_dur[e] = p.transfer_cycles[e][link] if link >= 0 else 0
    state.invalidate()
