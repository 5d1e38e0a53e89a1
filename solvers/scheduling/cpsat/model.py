"""CP-SAT formulation of joint placement and scheduling: the constraint families and :func:`build`.

One job: the model (no solver here). Variables live in :mod:`~solvers.scheduling.cpsat.variables`,
symmetry breaking in :mod:`~solvers.scheduling.cpsat.symmetry`; the scheduler that solves it is
:class:`~solvers.scheduling.cpsat.scheduler.CpSatScheduler`.

-----
**Sets.** ops i, devices d (``A(i)`` = devices op i may use), edges e = (u, v), links l.

**Variables.**

* ``start_i``, ``end_i`` in ``[0, H]``; ``x[i, d]`` (op i on device d, the constant true
  when ``|A(i)| = 1``) and an optional fixed-size interval ``op_iv[i, d]`` of length
  ``dur[i][d]`` on ``start_i`` (a fixed interval when ``|A(i)| = 1``);
  ``end_i = start_i + sum_d dur[i][d] x[i, d]``.
* per edge that may cross devices: ``y[e, a, b] = x[u, a] and x[v, b]`` for linked pairs
  ``a != b``; ``z[e, l] = sum_{link_of[a][b] = l} y[e, a, b]`` (the transfer uses link l);
  one transfer start ``ts_e``; an optional interval of length ``transfer_cycles[e][l]`` on
  ``ts_e`` per link, present iff ``z[e, l]``.
* memory (only on devices where the bytes that could ever land there exceed the
  capacity): ``bend_u`` (end of u's output buffer) and ``r[e, b]`` (edge e's copy is
  received on b).

**Constraints** (one ``add_<family>`` each).

* placement: ``sum_d x[i, d] = 1``;
* devices: NoOverlap of the device's intervals when it has one stream, Cumulative with
  capacity = streams (unit demands) otherwise. Streams are assigned after solving by
  interval-graph colouring (sorted by start, lowest free stream): with unit demands and at
  most k intervals live at any instant, k colours always suffice. This keeps one optional
  interval per (op, device) instead of one per (op, device, stream), and has no stream
  symmetry to break;
* precedence and transfers: ``start_v >= end_u`` always; ``ts_e >= end_u``;
  ``z[e, l] => start_v >= ts_e + c[e][l]``; ``x[u, a] + x[v, b] <= 1`` when
  ``link_of[a][b] = -1``;
* links: NoOverlap of each link's transfer intervals (zero-length transfers are left out:
  a half-open empty interval overlaps nothing);
* colocation: ``x[i, d] = x[j, d]`` within a group;
* memory: per device, a Cumulative over resident intervals ``[0, H + 1)`` present iff
  ``x[i, d]`` (a shared resident tensor two or more readers may bring to d: one interval
  present iff ``held[t, d]``, with ``held[t, d] >= x[i, d]`` for each reader i, and the
  readers' own intervals without it), output buffers ``[start_u, bend_u)`` present iff ``x[u, d]`` with
  ``bend_u >= end_u``, ``bend_u >= end_v`` when u and v share d, ``bend_u >= ts_e + c``
  when the transfer uses l, and received copies ``[ts_e, end_v)`` present iff ``r[e, b]``.
  ``bend_u`` is only bounded below, so a model solution's lifetimes contain the exact
  ones (conservative); the exact lifetimes are representable, so nothing feasible is cut;
* symmetry: devices of one ``device_class`` that are verified interchangeable (equal
  durations, streams, memory, and a link relabelling that preserves ``link_of``'s -1
  pattern and transfer costs) obey value precedence along the topological order: op t may
  use the class's j-th device only if an earlier op uses its (j-1)-th. Any solution can be
  relabelled to comply (order the class's devices by first use), the hint included;
* load cuts (LATENCY): ``sum_i dur[i][d] x[i, d] <= streams[d] * makespan``: redundant,
  but it gives the LP relaxation the fractional load bound;
* bound: ``objective >= lower_bound(problem)``, and ``objective <= hint objective``.

**Objective.** LATENCY: ``makespan >= end_i``. THROUGHPUT: ``maxload >=`` each device's
``sum_i dur x`` and each link's ``sum_e c z``.

**Horizon.** LATENCY: the hint's makespan (the optimum is no later). THROUGHPUT (and
when there is no hint): ``sum_i max_d dur + sum_e max_l c``: left-shifting any feasible
schedule while keeping the order of all its start/end events keeps every constraint
(memory included) and leaves no idle instant, so some optimal schedule fits.

References
----------
.. [1] L. Perron, F. Didier, "CP-SAT", Google OR-Tools, https://developers.google.com/optimization
.. [2] D. Krupke, "The CP-SAT Primer", https://d-krupke.github.io/cpsat-primer/
"""
from __future__ import annotations

from ortools.sat.python import cp_model

from solvers.cpsat_support import interval_if
from solvers.scheduling.cpsat.symmetry import add_symmetry_breaking, interchangeable_classes
from solvers.scheduling.cpsat.variables import SchedulingVars, create_variables, enforce_if, literal_and
from solvers.scheduling.problem import Objective, SchedulingProblem

__all__ = [
    "build",
    "add_placement",
    "add_devices",
    "add_precedence",
    "add_links",
    "add_colocation",
    "add_memory",
    "add_load_cuts",
    "add_objective",
]


def _memory_devices(problem: SchedulingProblem, allowed) -> list[int]:
    """Devices whose memory can overflow: the bytes that could ever land there exceed it."""
    out = []
    for d in range(problem.num_devices):
        cap = problem.memory_bytes(d)
        if cap <= 0:
            continue
        total = sum(problem.resident_bytes(i) + problem.output_bytes(i)
                    for i in range(problem.num_ops) if d in allowed[i])
        total += sum(b for (u, v, b) in problem.edges if d in allowed[v])
        if total > cap:
            out.append(d)
    return out


def add_placement(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Each op on exactly one of its allowed devices.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 10)
    >>> add_placement(m, p, v)
    []
    """
    for i in range(problem.num_ops):
        lits = [v.x[i, d] for d in v.allowed[i]]
        if len(lits) > 1:
            model.add_exactly_one(lits)
    return []


def add_devices(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """NoOverlap (one stream) or Cumulative with capacity = streams, per device.

    Examples
    --------
    >>> p = SchedulingProblem(((4,), (4,)), (), (2,), ((-1,),), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 10)
    >>> add_devices(m, p, v)
    []
    """
    for d in range(problem.num_devices):
        ivs = [v.op_iv[i, d] for i in range(problem.num_ops)
               if d in v.allowed[i] and problem.durations_cycles[i][d] > 0]
        if len(ivs) < 2:
            continue
        k = problem.device_streams[d]
        if k == 1:
            model.add_no_overlap(ivs)
        elif k < len(ivs):
            model.add_cumulative(ivs, [1] * len(ivs), k)
    return []


def add_precedence(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Precedence, transfer literals and intervals, and forbidden (-1) device pairs.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> add_precedence(m, p, v); sorted(v.z)
    []
    [(0, 0)]
    """
    for e, (u, w, _b) in enumerate(problem.edges):
        model.add(v.start[w] >= v.end[u])
        per_link: dict[int, list] = {}
        for a in v.allowed[u]:
            for b in v.allowed[w]:
                if a == b:
                    continue
                xa, xb = v.x[u, a], v.x[w, b]
                link = problem.link_of[a][b]
                if link < 0:
                    lits = [lit.Not() for lit in (xa, xb) if lit is not True]
                    model.add_bool_or(lits)  # empty => infeasible, as it must be
                    continue
                y = literal_and(model, xa, xb, f"y_{e}_{a}_{b}")
                v.y[e, a, b] = y
                per_link.setdefault(link, []).append(y)
        if not per_link:
            continue
        ts = model.new_int_var(0, v.horizon, f"tstart_{e}")
        v.ts[e] = ts
        model.add(ts >= v.end[u])
        for link, ys in sorted(per_link.items()):
            c = problem.transfer_cycles[e][link]
            if len(ys) == 1:
                zl = ys[0]
            elif any(y is True for y in ys):  # pragma: no cover - at most one pair can be certain
                zl = True
            else:
                zl = model.new_bool_var(f"z_{e}_{link}")
                model.add(zl == sum(ys))
            v.z[e, link] = zl
            enforce_if(model.add(v.start[w] >= ts + c), zl)
            if c > 0:
                v.t_iv[e, link] = interval_if(model, ts, c, None, zl, f"xfer_{e}_{link}")
    return []


def add_links(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Transfers on one link do not overlap.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20); _ = add_precedence(m, p, v)
    >>> add_links(m, p, v)
    []
    """
    per_link: dict[int, list] = {}
    for (e, link), iv in sorted(v.t_iv.items()):
        per_link.setdefault(link, []).append(iv)
    for link, ivs in sorted(per_link.items()):
        if len(ivs) > 1:
            model.add_no_overlap(ivs)
    return []


def add_colocation(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Ops of one group share a device.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       colocation_groups=((0, 1),))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> add_colocation(m, p, v)
    []
    """
    for g in problem.colocation_groups:
        members = sorted(set(g))
        devices = sorted({d for i in members for d in v.allowed[i]})
        for d in devices:
            lits = [v.lit(i, d) for i in members]
            if any(lit is False for lit in lits):
                for lit in lits:
                    if lit is True:
                        model.add_bool_or([])  # a fixed op cannot follow the group
                    elif lit is not False:
                        model.add(lit == 0)
                continue
            first = lits[0]
            for lit in lits[1:]:
                if first is True and lit is True:
                    continue
                if first is True or lit is True:
                    other = lit if first is True else first
                    model.add(other == 1)
                else:
                    model.add(lit == first)
    return []


def add_memory(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """Resident bytes plus live buffers within each device's memory (see module Notes).

    Skipped on devices where every byte that could land there fits anyway.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_memory_bytes=(10, 10), op_resident_bytes=(20,))
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> add_memory(m, p, v)
    []
    """
    devs = _memory_devices(problem, v.allowed)
    if not devs:
        return []
    _add_buffer_ends(model, problem, v, devs)
    # indexed once, in the dictionary's order (a scan per edge and device was quadratic)
    y_into: dict[tuple[int, int], list] = {}
    for (e2, _a, bb), y in v.y.items():
        y_into.setdefault((e2, bb), []).append(y)
    for d in devs:
        cap = problem.memory_bytes(d)
        pooled = _held_tensors(model, problem, v, d)
        own = _own_resident_bytes(problem, v, d, pooled)
        op_ivs, op_demands = _op_memory_intervals(model, problem, v, d, own)
        copy_ivs, copy_demands = _copy_memory_intervals(model, problem, v, d, y_into)
        for t in pooled:
            op_ivs.append(interval_if(model, 0, v.horizon + 1, None, v.held[t, d], f"held_{t}_{d}"))
            op_demands.append(problem.shared_resident[t][0])
        if op_ivs or copy_ivs:
            model.add_cumulative(op_ivs + copy_ivs, op_demands + copy_demands, cap)
        resident = [own[i] * v.x[i, d] for i in range(problem.num_ops)
                    if d in v.allowed[i] and own[i] > 0]
        resident += [problem.shared_resident[t][0] * v.held[t, d] for t in pooled]
        if resident:  # redundant with the cumulative, but propagates on placement alone
            model.add(sum(resident) <= cap)
    return []


def _held_tensors(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars, d: int) -> list[int]:
    """The shared resident tensors (indices into ``problem.shared_resident``) that two or more
    readers may bring to ``d``, each with ``v.held[t, d]`` implied by every such reader's
    placement there: ``d`` holds the tensor once. A tensor only one reader may bring stays in
    that reader's resident bytes (the same thing)."""
    pooled = []
    for t, (b, readers) in enumerate(problem.shared_resident):
        here = [v.x[i, d] for i in readers if d in v.allowed[i]]
        if b <= 0 or len(here) < 2:
            continue
        if any(lit is True for lit in here):
            v.held[t, d] = True
        else:
            held = v.held[t, d] = model.new_bool_var(f"held_{t}_{d}")
            for lit in here:
                model.add_implication(lit, held)
        pooled.append(t)
    return pooled


def _own_resident_bytes(problem: SchedulingProblem, v: SchedulingVars, d: int, pooled: list[int]) -> list[int]:
    """Each op's resident bytes on ``d`` without the ``pooled`` tensors (counted once, apart)."""
    own = [problem.resident_bytes(i) for i in range(problem.num_ops)]
    for t in pooled:
        b, readers = problem.shared_resident[t]
        for i in readers:
            if d in v.allowed[i]:
                own[i] -= b
    return own


def _add_buffer_ends(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
                     devs: list[int]) -> None:
    """``v.bend[u]``: when op ``u``'s output buffer is freed, after ``u``, after each consumer on
    its device and after each transfer of it (for the ops that may land on ``devs``)."""
    need_bend = sorted({u for u in range(problem.num_ops) if problem.output_bytes(u) > 0
                        and any(d in devs for d in v.allowed[u])})
    for u in need_bend:
        v.bend[u] = model.new_int_var(0, v.horizon, f"bufend_{u}")
        model.add(v.bend[u] >= v.end[u])
    # indexed once, in the dictionary's order (a scan per edge was quadratic)
    z_of: dict[int, list] = {}
    for (e2, link), zl in v.z.items():
        z_of.setdefault(e2, []).append((link, zl))
    for e, (u, w, _b) in enumerate(problem.edges):
        if u not in v.bend:
            continue
        for d in v.allowed[u]:
            if d in v.allowed[w]:
                enforce_if(model.add(v.bend[u] >= v.end[w]), v.x[u, d], v.x[w, d])
        for link, zl in z_of.get(e, ()):
            enforce_if(model.add(v.bend[u] >= v.ts[e] + problem.transfer_cycles[e][link]), zl)


def _op_memory_intervals(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
                         d: int, own: list[int]) -> tuple[list, list[int]]:
    """The intervals and bytes ops occupy on ``d`` if placed there: resident bytes (``own``)
    over the whole horizon, the output buffer from the op's start to ``v.bend``."""
    H = v.horizon
    ivs, demands = [], []
    for i in range(problem.num_ops):
        if d not in v.allowed[i]:
            continue
        xd = v.x[i, d]
        r = own[i]
        if r > 0:  # [0, H + 1) covers every instant, even with H = 0
            ivs.append(interval_if(model, 0, H + 1, None, xd, f"res_{i}_{d}"))
            demands.append(r)
        ob = problem.output_bytes(i)
        if ob > 0:
            size = model.new_int_var(0, H, f"bufsize_{i}_{d}")
            ivs.append(interval_if(model, v.start[i], size, v.bend[i], xd, f"buf_{i}_{d}"))
            demands.append(ob)
    return ivs, demands


def _copy_memory_intervals(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
                           d: int, y_into: dict[tuple[int, int], list]) -> tuple[list, list[int]]:
    """The intervals and bytes received copies occupy on ``d``: from the transfer's start to the
    consumer's end, present when the edge is received there (``v.recv[e, d]``; ``y_into[e, d]``
    are the edge's transfer literals into ``d``)."""
    ivs, demands = [], []
    for e, (u, w, b) in enumerate(problem.edges):
        if b <= 0 or d not in v.allowed[w] or e not in v.ts:
            continue
        ys = y_into.get((e, d), [])
        if not ys:
            continue
        if len(ys) == 1:
            rl = ys[0]
        else:
            rl = model.new_bool_var(f"recv_{e}_{d}")
            model.add(rl == sum(ys))
        v.recv[e, d] = rl
        size = model.new_int_var(0, v.horizon, f"copysize_{e}_{d}")
        ivs.append(interval_if(model, v.ts[e], size, v.end[w], rl, f"copy_{e}_{d}"))
        demands.append(b)
    return ivs, demands


def add_load_cuts(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars) -> list:
    """LATENCY only: ``sum_i dur x <= streams * makespan`` per device (redundant, LP-strong).

    Call after :func:`add_objective`.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20); _ = add_objective(m, p, v, 0)
    >>> add_load_cuts(m, p, v)
    []
    """
    if problem.objective is not Objective.LATENCY or v.objective is None:
        return []
    for d in range(problem.num_devices):
        terms = [problem.durations_cycles[i][d] * v.lit(i, d) for i in range(problem.num_ops)
                 if d in v.allowed[i] and v.lit(i, d) is not True]
        fixed = sum(problem.durations_cycles[i][d] for i in range(problem.num_ops)
                    if v.lit(i, d) is True)
        if terms or fixed:
            model.add(sum(terms) + fixed <= problem.device_streams[d] * v.objective)
    return []


def add_objective(model: cp_model.CpModel, problem: SchedulingProblem, v: SchedulingVars,
                  bound: int, upper: int | None = None) -> list:
    """Makespan (LATENCY) or max load (THROUGHPUT) in ``[bound, upper]``; minimized.

    Returns the objective variable in a list.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4),), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20)
    >>> [obj.name for obj in add_objective(m, p, v, 4)]
    ['makespan']
    """
    if problem.objective is Objective.LATENCY:
        hi = v.horizon if upper is None else min(upper, v.horizon)
        obj = model.new_int_var(min(bound, hi), hi, "makespan")
        for e in v.end:
            model.add(obj >= e)
    else:
        cap = (sum(max(r) for r in problem.durations_cycles)
               + sum(max(r, default=0) for r in problem.transfer_cycles))
        hi = cap if upper is None else min(upper, cap)
        obj = model.new_int_var(min(bound, hi), hi, "maxload")
        for d in range(problem.num_devices):
            terms = [problem.durations_cycles[i][d] * v.lit(i, d) for i in range(problem.num_ops)
                     if d in v.allowed[i]]
            if terms:
                model.add(obj >= sum(terms))
        per_link: dict[int, list] = {}
        for (e, link), zl in sorted(v.z.items()):
            per_link.setdefault(link, []).append(problem.transfer_cycles[e][link] * zl)
        for link, terms in sorted(per_link.items()):
            model.add(obj >= sum(terms))
    model.minimize(obj)
    v.objective = obj
    return [obj]


def build(problem: SchedulingProblem, horizon: int, *, bound: int = 0, upper: int | None = None,
          placement: tuple[int, ...] | None = None,
          symmetry_breaking: bool = True) -> tuple[cp_model.CpModel, SchedulingVars]:
    """The full model (no solver here): variables, every family, objective.

    Parameters
    ----------
    problem : SchedulingProblem
    horizon : int
        Latest cycle any op may end.
    bound, upper : int
        Proven lower bound and known upper bound on the objective.
    placement : tuple of int, optional
        Fix every op's device (sequencing only).
    symmetry_breaking : bool
        Add value precedence among interchangeable devices.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> model, v = build(p, horizon=20, bound=7)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> solver.solve(model) == cp_model.OPTIMAL, v.extract(solver).makespan_cycles
    (True, 7)
    """
    model = cp_model.CpModel()
    v = create_variables(model, problem, horizon, placement)
    if symmetry_breaking and placement is None:
        v.sym_classes = interchangeable_classes(problem, v.allowed)
    add_placement(model, problem, v)
    add_devices(model, problem, v)
    add_precedence(model, problem, v)
    add_links(model, problem, v)
    add_colocation(model, problem, v)
    add_memory(model, problem, v)
    add_symmetry_breaking(model, problem, v)
    add_objective(model, problem, v, bound, upper)
    add_load_cuts(model, problem, v)
    return model, v
