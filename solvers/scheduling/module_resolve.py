"""Module re-solve: placement and sequencing of one module of a valid schedule solved exactly
by CP-SAT with the rest of the schedule fixed, spliced back only when the whole plan is shorter.

Notes
-----
**Why.** On the dnn-partitioning Inception-V3 layer graph the placement LNS's plan changes
device in five modules whose exact minima, with their entry and exit on the plan's devices and
the memory the rest leaves, are 36.9 ms below what the plan pays there (docs/bounds.md,
session 12): the LNS moves windows of the order and sequences them with HEFT, so a module's
best split over several devices (a branch each) is a joint move it rarely draws and HEFT's
sequencing of it is not the best.

**A module** is a segment between two consecutive clean cut ops
(:func:`~solvers.scheduling.structure.clean_cut_vertices`): its source ``c``, its sink ``c'``
and the ops between them in the topological order. Every other op precedes ``c`` or follows
``c'`` and no edge jumps over either, so in any schedule every op, transfer and buffer of the
module lies in ``[start(c), end(c')]`` and nothing of the rest runs there; the makespan of a
schedule in which ``c'`` precedes every later op is ``end(c')`` plus what follows.

**The module problem** (:func:`module_problem`): the module's ops and the edges between them;
``c`` and ``c'`` pinned to their devices in the incumbent (and any op colocated with an op
outside the module pinned to that op's device); per device with a memory limit, the room the
rest leaves: the limit less the weights of the rest on it and less the peak of the incumbent's
activation buffers on it that do not belong to the module (those of earlier and later ops,
which the splice only shifts in time). Devices keep their class only where they keep their
room and hold no pinned op, so value precedence stays valid. The incumbent restricted to the
module, shifted to start at 0, is a solution of it (its hint).

**Splice** (:func:`splice`): the module's ops and transfers take the sub-schedule's places,
shifted so ``c`` starts where it did; every later op and transfer shifts by the change of
``end(c')``; earlier ones stay. The result is checked by
:func:`~solvers.scheduling.validate.validate_schedule` (the room is computed to make it pass,
the check makes sure) and accepted only when its objective is strictly smaller; so the search
never returns worse than its start.

**Search** (:func:`module_resolve`): the modules in the order of what the incumbent spends in
them above their floor (largest first), each solved by CP-SAT from its hint for at most
``module_units`` deterministic units of the caller's budget (an exact proof ends it earlier),
until the budget is spent. A module is solved once per incumbent neighbourhood: an accepted
splice changes only its own module's ops, so the other modules' problems (and their proven
optima) stay as they were except for the room, which the accepted one may have changed; those
are tried again in later passes with ``growth`` times the units, the modules whose last solve
gained most first (``promise_first``: a module that gained in a short solve usually gains again
in a longer one, one that gained nothing rarely does). Each module may use the devices its
incumbent uses and ``spare_devices`` more of each class of interchangeable devices
(:func:`_spare_devices`): a restriction whose model is a few times smaller, so a unit goes
further (Inception-V3, from the LNS's 955.93-ms plan with 0.75 units: every device 932.31 ms,
two spare 929.72, one spare **925.03** in two thirds of the wall time, none 940.51; one spare
and the modules whose last solve gained first 0.05 units each: with 0.03 units in the first
pass 927.64). Counted, never timed: same problem, start and budget, same result (the
wall-clock net aside).

**Measured** (2026-11-28, ``PLAN_NET_SLOWDOWN=20``, load 13-16 on 2 cores). From the placement
LNS's 955.93-ms Inception-V3 plan of the benchmark's 60-s run (``benchmarks/dnn.py --objective
latency --time-limit 60 --search deterministic``), the stage alone: 928.31 ms with 1.0 unit
(about its share there; 14 module solves, 7 splices in modules 86-100, 228-258, 40-63 and
164-196; 14-17 CPU-s), 927.31 with 3.0 units. First passes of 0.1 units per module reached
932.31, one worker not interleaved nothing (0 of 7 solves improved), one worker interleaved
928.40. Where it stops: 86-100 is at its exact minimum (46.99); 40-63, 164-196 and 228-258 are
at 44.34, 31.98 and 23.60 against exact minima of 41.71, 29.20 and 21.58 (docs/bounds.md,
session 12: OPTIMAL in 6-33 s each, far beyond a module's units here); the stem's first window
(ops up to cut op 11, 475.47) is at its floor; the second (to cut op 40, 193.12 against a
floor of 165.57) is not improved. In the benchmark ResNet-50 layers goes 999.78 -> 994.85 (one
splice, 5.06 ms, 1.03 units; bound unchanged at 873.08); the operator graphs have no module (no
clean cut op between weight sources and their consumers), so the stage costs nothing there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from solvers.budget import Budget
from solvers.core import SolveOptions, Status
from solvers.scheduling.bounds import lower_bound
from solvers.scheduling.cpsat.extraction import checked_solution
from solvers.scheduling.cpsat.hints import add_hint
from solvers.scheduling.cpsat.model import build
from solvers.scheduling.cpsat.search import run
from solvers.scheduling.cpsat.symmetry import canonical_solution, interchangeable_classes
from solvers.scheduling.problem import ScheduledTransfer, SchedulingProblem, SchedulingSolution
from solvers.scheduling.resident import restricted_shared
from solvers.scheduling.structure import clean_cut_vertices, segment_ranges, topological_order
from solvers.scheduling.validate import memory_profile, objective_value, output_buffer_ends, validate_schedule

__all__ = ["SOURCE", "ModuleResolveOptions", "Module", "modules", "module_problem", "splice", "module_resolve"]

SOURCE = "module re-solve"  # the hint source the scheduler reports for this candidate


@dataclass(frozen=True, slots=True)
class ModuleResolveOptions:
    """Tunables of :func:`module_resolve`.

    Examples
    --------
    >>> ModuleResolveOptions().max_ops
    40
    """

    # Modules with more ops than this are left alone (their exact solve is out of reach).
    max_ops: int = 40
    # Deterministic units one module's CP-SAT solve may use at most in the first pass; each
    # further pass over the modules not proved optimal multiplies it by ``growth``.
    module_units: float = 0.05
    growth: float = 2.0
    passes: int = 4
    # Later passes solve the modules whose last solve gained most first (then by what the
    # incumbent spends above their floor, as the first pass); False: that order in every pass.
    promise_first: bool = True
    # Devices a module may use: those its incumbent uses and this many more of each class of
    # interchangeable devices (same kind, same room); None: every device.
    spare_devices: int | None = 1
    # CP-SAT's interleaved portfolio (LNS workers included) for each module, or one worker's
    # plain search (interleave=False: cheaper proofs, see solvers.scheduling.pinned_moves).
    interleave: bool = True


@dataclass(frozen=True, slots=True)
class Module:
    """A module of the graph: its source and sink cut ops and every op from one to the other
    (topological order, both included); the head has no source (every op up to the first
    clean cut op), the tail no sink (every op from the last one on)."""

    source: int | None
    sink: int | None
    ops: tuple[int, ...]


def modules(problem: SchedulingProblem, max_ops: int, min_ops: int = 12) -> list[Module]:
    """The segments between consecutive clean cut ops, runs of consecutive short ones merged
    into one module while it has fewer than ``min_ops`` ops (a chain's segments are two ops
    each), each with at least one op besides its cut ops and at most ``max_ops`` ops in all
    (module Notes).

    Examples
    --------
    A fork into two branches and a join after a head op:

    >>> p = SchedulingProblem(((1,),) * 5, ((0, 1, 0), (1, 2, 0), (1, 3, 0), (2, 4, 0), (3, 4, 0)), (1,),
    ...                       ((-1,),), ((),) * 5)
    >>> modules(p, 10)
    [Module(source=None, sink=4, ops=(0, 1, 2, 3, 4))]
    >>> modules(p, 10, min_ops=2)
    [Module(source=None, sink=1, ops=(0, 1)), Module(source=1, sink=4, ops=(1, 2, 3, 4))]
    """
    order = topological_order(problem)
    windows: list[list] = []
    for first, last, source, sink in segment_ranges(problem, clean_cut_vertices(problem)):
        if windows and windows[-1][1] - windows[-1][0] + 1 < min_ops and last - windows[-1][0] + 1 <= max_ops:
            windows[-1][1], windows[-1][3] = last, sink
        else:
            windows.append([first, last, source, sink])
    out = []
    for first, last, source, sink in windows:
        if last - first + 1 < (3 if source is not None and sink is not None else 2) or last - first + 1 > max_ops:
            continue
        out.append(Module(source, sink, tuple(order[first:last + 1])))
    return out


def _colocated_outside(problem: SchedulingProblem, inside: set[int]) -> set[int]:
    """Ops of the module colocated with some op outside it (they keep their device)."""
    pinned: set[int] = set()
    for group in problem.colocation_groups:
        members = set(group)
        if members & inside and members - inside:
            pinned |= members & inside
    return pinned


def _outside_peak(problem: SchedulingProblem, sol: SchedulingSolution, module: Module, d: int) -> int:
    """The peak on device ``d`` of the incumbent's activation buffers that are not the module's:
    outputs of ops outside it, the sink's output after the sink ends, copies of edges with an
    end outside it (exact lifetimes as in :func:`~solvers.scheduling.validate.memory_profile`)."""
    inside = set(module.ops)
    n = problem.num_ops
    ends = [sol.op_end(i) for i in range(n)]
    transfer = {t.edge: t for t in sol.transfers}
    buf_end = output_buffer_ends(problem, sol)
    spans = []
    for i in range(n):
        if sol.op_device[i] != d or problem.output_bytes(i) <= 0:
            continue
        if i not in inside:
            spans.append((sol.op_start[i], buf_end[i], problem.output_bytes(i)))
        elif i == module.sink:
            spans.append((ends[i], buf_end[i], problem.output_bytes(i)))
    for e, (u, v, b) in enumerate(problem.edges):
        t = transfer.get(e)
        if t is not None and sol.op_device[v] == d and b > 0 and not (u in inside and v in inside):
            spans.append((t.start_cycle, ends[v], b))
    return _peak([ev for s, e, b in spans if e > s for ev in ((e, 0, -b), (s, 1, b))])


def module_problem(problem: SchedulingProblem, sol: SchedulingSolution,
                   module: Module) -> tuple[SchedulingProblem, SchedulingSolution] | None:
    """The module's own problem with the rest of ``sol`` fixed, and ``sol`` restricted to it
    (module Notes, **The module problem**); op ``k`` of it is ``module.ops[k]``. None when the
    restriction is not a solution of it."""
    ops = module.ops
    inside = set(ops)
    local = {op: k for k, op in enumerate(ops)}
    pinned = _colocated_outside(problem, inside) | ({module.source, module.sink} - {None})
    dev = sol.op_device
    durations = []
    for op in ops:
        row = problem.durations_cycles[op]
        durations.append(tuple(c if op not in pinned or d == dev[op] else -1 for d, c in enumerate(row)))
    edge_ids = [e for e, (u, v, _b) in enumerate(problem.edges) if u in inside and v in inside]
    edges = tuple((local[problem.edges[e][0]], local[problem.edges[e][1]], problem.edges[e][2]) for e in edge_ids)
    memory: tuple[int, ...] = ()
    if problem.device_memory_bytes:
        # a room above everything the module could ever hold is as good as the limit: capped
        # there, so devices that differ only in rooms the module cannot fill stay one class
        most = sum(problem.resident_bytes(op) + problem.output_bytes(op) for op in ops) + sum(b for *_, b in edges)
        memory = tuple(room and min(room, most) for room in
                       (_room_of(problem, sol, module, d) for d in range(problem.num_devices)))
    pinned_devices = {dev[op] for op in pinned}
    classes: tuple[int, ...] = ()
    if problem.device_class:
        keys: dict[tuple, int] = {}
        classes = tuple(keys.setdefault((problem.device_class[d], memory[d] if memory else 0,
                                         d if d in pinned_devices else -1), len(keys))
                        for d in range(problem.num_devices))
    groups = tuple(tuple(local[i] for i in g if i in inside) for g in problem.colocation_groups
                   if len([i for i in g if i in inside]) > 1)
    sub = SchedulingProblem(
        tuple(durations), edges, problem.device_streams, problem.link_of,
        tuple(problem.transfer_cycles[e] for e in edge_ids), problem.objective, memory,
        tuple(problem.resident_bytes(op) for op in ops) if problem.op_resident_bytes else (),
        tuple(problem.output_bytes(op) for op in ops) if problem.op_output_bytes else (),
        groups, classes, tuple(problem.op_name(op) for op in ops), restricted_shared(problem, ops))
    shift = 0 if module.source is None else sol.op_start[module.source]
    edge_local = {e: k for k, e in enumerate(edge_ids)}
    hint = SchedulingSolution(
        tuple(dev[op] for op in ops), tuple(sol.op_stream[op] for op in ops),
        tuple(sol.op_start[op] - shift for op in ops), tuple(sol.op_duration[op] for op in ops),
        tuple(ScheduledTransfer(edge_local[t.edge], t.link, t.start_cycle - shift, t.duration_cycles)
              for t in sol.transfers if t.edge in edge_local))
    if memory:
        rooms = tuple(room and max(room, _need(sub, hint, d)) for d, room in enumerate(memory))
        # an op whose weight alone exceeds a device's room cannot go there
        sub = replace(sub, device_memory_bytes=rooms, durations_cycles=tuple(
            tuple(c if not rooms[d] or problem.resident_bytes(op) <= rooms[d] else -1 for d, c in enumerate(row))
            for op, row in zip(ops, durations)))
    if validate_schedule(sub, hint):
        return None
    return sub, hint


def _need(sub: SchedulingProblem, sol: SchedulingSolution, d: int) -> int:
    """The memory ``sol`` uses on device ``d`` at its peak: weights (a shared tensor once) and live buffers."""
    events = []
    for s, e, b, _label in memory_profile(sub, sol, d):
        if e > s:
            events += [(e, 0, -b), (s, 1, b)]
    return sub.device_resident_bytes(d, sol.op_device) + _peak(events)


def _peak(events: list[tuple[int, int, int]]) -> int:
    """The largest running sum of (time, order, delta) events (releases first at equal times)."""
    live = peak = 0
    for _t, _k, delta in sorted(events):
        live += delta
        peak = max(peak, live)
    return peak


def _room_of(problem: SchedulingProblem, sol: SchedulingSolution, module: Module, d: int) -> int:
    """What device ``d``'s memory leaves the module: its limit less the weights of the ops
    outside the module on it (a shared tensor once) and the peak of the buffers that are not the module's (at least
    one byte, so a full device stays limited); 0 where memory is not enforced."""
    cap = problem.memory_bytes(d)
    if cap <= 0:
        return 0
    inside = set(module.ops)
    rest = problem.device_resident_bytes(d, [-1 if i in inside else x for i, x in enumerate(sol.op_device)])
    return max(1, cap - rest - _outside_peak(problem, sol, module, d))


def splice(problem: SchedulingProblem, sol: SchedulingSolution, module: Module,
           sub_sol: SchedulingSolution) -> SchedulingSolution:
    """``sol`` with the module's ops and transfers from ``sub_sol`` (a solution of
    :func:`module_problem`), shifted so the source starts where it did, and every later op and
    transfer shifted by the change of the sink's end (module Notes, **Splice**). Not checked.

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1), (4, 4), (4, 4), (1, 1), (2, 2)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (3, 4, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((0,),) * 5)
    >>> from solvers.scheduling.heft import heft_schedule
    >>> sol = heft_schedule(p, (0, 0, 0, 0, 0))
    >>> m = modules(p, 10, min_ops=2)[0]
    >>> m
    Module(source=None, sink=3, ops=(0, 1, 2, 3))
    >>> sub = SchedulingSolution((0, 0, 1, 0), (0, 0, 0, 0), (0, 1, 1, 5), (1, 4, 4, 1),
    ...                          (ScheduledTransfer(1, 0, 1, 0), ScheduledTransfer(3, 0, 5, 0)))
    >>> new = splice(p, sol, m, sub)
    >>> sol.makespan_cycles, new.makespan_cycles, new.op_device, validate_schedule(p, new)
    (12, 8, (0, 0, 1, 0, 0), [])
    """
    order = topological_order(problem)
    pos = {op: k for k, op in enumerate(order)}
    last = pos[module.ops[-1]]
    offset = 0 if module.source is None else sol.op_start[module.source] - sub_sol.op_start[0]
    delta = 0 if module.sink is None else sub_sol.op_end(len(module.ops) - 1) + offset - sol.op_end(module.sink)
    device, stream, start, duration = (list(sol.op_device), list(sol.op_stream), list(sol.op_start),
                                       list(sol.op_duration))
    for i in range(problem.num_ops):
        if pos[i] > last:
            start[i] += delta
    for k, op in enumerate(module.ops):
        device[op], stream[op] = sub_sol.op_device[k], sub_sol.op_stream[k]
        start[op], duration[op] = sub_sol.op_start[k] + offset, sub_sol.op_duration[k]
    inside = set(module.ops)
    edge_ids = [e for e, (u, v, _b) in enumerate(problem.edges) if u in inside and v in inside]
    transfers = []
    for t in sol.transfers:
        u, v, _b = problem.edges[t.edge]
        if u in inside and v in inside:
            continue
        moved = delta if pos[u] >= last and pos[v] > last else 0
        transfers.append(ScheduledTransfer(t.edge, t.link, t.start_cycle + moved, t.duration_cycles))
    transfers += [ScheduledTransfer(edge_ids[t.edge], t.link, t.start_cycle + offset, t.duration_cycles)
                  for t in sub_sol.transfers]
    return SchedulingSolution(tuple(device), tuple(stream), tuple(start), tuple(duration),
                              tuple(sorted(transfers, key=lambda t: t.edge)))


def _spare_devices(sub: SchedulingProblem, hint: SchedulingSolution, spare: int | None) -> SchedulingProblem:
    """``sub`` with the devices its ``hint`` uses and the first ``spare`` others of each class
    of interchangeable devices (by index); the rest are closed to every op and given classes
    of their own, so value precedence holds among the open ones. A restriction: every solution
    of it is one of ``sub`` (the hint is one), with a model a few times smaller (Inception-V3's
    modules: 20 devices, 7-13 classes).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 1, 1, 1),) * 2, ((0, 1, 0),), (1,) * 4,
    ...                       tuple(tuple(-1 if a == b else 0 for b in range(4)) for a in range(4)),
    ...                       ((0,),), device_class=(0, 0, 0, 0))
    >>> hint = SchedulingSolution((3, 3), (0, 0), (0, 1), (1, 1), ())
    >>> r = _spare_devices(p, hint, 1)
    >>> r.durations_cycles[0], r.device_class
    ((1, -1, -1, 1), (0, 2, 3, 0))
    """
    if spare is None:
        return sub
    used = set(hint.op_device)
    kinds = sub.device_class or tuple(range(sub.num_devices))
    memory = sub.device_memory_bytes or (0,) * sub.num_devices
    seen: dict[tuple, int] = {}
    open_ = set(used)
    for d in range(sub.num_devices):
        if d in used:
            continue
        key = (kinds[d], memory[d])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= spare:
            open_.add(d)
    if len(open_) == sub.num_devices:
        return sub
    top = max(kinds, default=0) + 1
    return replace(sub, durations_cycles=tuple(tuple(c if d in open_ else -1 for d, c in enumerate(row))
                                               for row in sub.durations_cycles),
                   device_class=tuple(kinds[d] if d in open_ else top + d for d in range(sub.num_devices))
                   if sub.device_class else ())


def _floor(sub: SchedulingProblem) -> int:
    """A module problem's lower bound: the static bounds without the segment chain and the LP
    (on Inception-V3's modules the same values but one, at a seventh of the time)."""
    return lower_bound(sub, segments=False, lp=False)


def _ranked(problem: SchedulingProblem, best: SchedulingSolution, found: list[Module], floors: dict,
            settled: dict) -> list[int]:
    """The modules not yet settled, by what the incumbent spends in them above their lower
    bound (largest first; ties by position); those at their bound are settled here."""
    gaps = []
    for k, module in enumerate(found):
        built = module_problem(problem, best, module)
        if built is None:
            continue
        sub, hint = built
        key = (sub.device_memory_bytes, hint)
        if settled.get(k) == key:
            continue
        if key not in floors:
            floors[key] = _floor(sub)
        gap = objective_value(sub, hint) - floors[key]
        if gap <= 0:
            settled[k] = key
            continue
        gaps.append((-gap, k))
    return [k for _, k in sorted(gaps)]


def _solve_module(sub: SchedulingProblem, hint: SchedulingSolution, floor: int | None, options: SolveOptions,
                  budget: Budget, amount: float, cfg: ModuleResolveOptions) -> tuple[SchedulingSolution | None, Status]:
    """CP-SAT on the module problem from its hint within ``amount`` units (``floor``: its lower
    bound, if known): (a strictly shorter solution or None, CP-SAT's status)."""
    hint_obj = objective_value(sub, hint)
    classes = interchangeable_classes(sub, [sub.allowed_devices(i) for i in range(sub.num_ops)])
    canon = canonical_solution(sub, hint, classes)
    sym = not validate_schedule(sub, canon)
    model, v = build(sub, hint_obj, bound=_floor(sub) if floor is None else floor, upper=hint_obj,
                     symmetry_breaking=sym)
    add_hint(model, sub, v, canon if sym else hint)
    status, solver, _ = run(model, replace(options, progress=None), budget, amount, None, cfg.interleave)
    found = checked_solution(sub, v, solver) if status.has_solution else None
    if found is not None and objective_value(sub, found) < hint_obj:
        return found, status
    return None, status


def module_resolve(problem: SchedulingProblem, start: SchedulingSolution, budget: Budget,
                   options: SolveOptions = SolveOptions(),
                   cfg: ModuleResolveOptions = ModuleResolveOptions()) -> tuple[SchedulingSolution, dict[str, Any]]:
    """Re-solve the modules of the valid schedule ``start`` one at a time within ``budget``
    (module Notes): (the shortest schedule found, never worse than ``start``; statistics).

    Examples
    --------
    A fork of two 4-cycle branches between 1-cycle ops, all on device 0 (12 cycles); the
    module's exact solve puts a branch on device 1 (free transfers): 8 cycles.

    >>> from solvers.budget import SCHEDULING
    >>> from solvers.scheduling.heft import heft_schedule
    >>> p = SchedulingProblem(((1, 1), (4, 4), (4, 4), (1, 1), (2, 2)),
    ...                       ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (3, 4, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((0,),) * 5)
    >>> best, stats = module_resolve(p, heft_schedule(p, (0,) * 5), Budget.start(5.0, SCHEDULING))
    >>> best.makespan_cycles, stats["accepted"]
    (8, 1)
    """
    best, best_obj = start, objective_value(problem, start)
    found = modules(problem, cfg.max_ops)
    stats: dict[str, Any] = {"modules": len(found), "solved": 0, "proved": 0, "accepted": 0,
                             "start_objective": best_obj, "gains": []}
    floors: dict[tuple, int] = {}  # a module problem's lower bound, by (room, hint)
    settled: dict[int, tuple] = {}  # per module, the problem proved optimal (at its floor or by CP-SAT)
    gained: dict[int, int] = {}  # per module, what its last solve gained (0: nothing)
    for step in range(max(1, cfg.passes)):
        amount = budget.scale(cfg.module_units * cfg.growth ** step)
        ranked = _ranked(problem, best, found, floors, settled)
        if cfg.promise_first:  # the modules whose last solve gained most first (stable: then by gap)
            ranked.sort(key=lambda k: -gained.get(k, 0))
        for k in ranked:
            if budget.left <= 0 or budget.wall_expired():
                break
            built = module_problem(problem, best, found[k])  # the room may have changed since ranking
            if built is None:
                continue
            sub, hint = built
            key = (sub.device_memory_bytes, hint)
            if settled.get(k) == key:
                continue
            sub = _spare_devices(sub, hint, cfg.spare_devices)
            stats["solved"] += 1
            sub_sol, status = _solve_module(sub, hint, floors.get(key), options, budget, min(amount, budget.left), cfg)
            if status is Status.OPTIMAL:
                stats["proved"] += 1
                settled[k] = key
            gained[k] = 0 if sub_sol is None else objective_value(sub, hint) - objective_value(sub, sub_sol)
            if sub_sol is None:
                continue
            trial = splice(problem, best, found[k], sub_sol)
            obj = objective_value(problem, trial)
            if obj < best_obj and not validate_schedule(problem, trial):
                stats["gains"].append((found[k].ops[-1], best_obj - obj))
                best, best_obj = trial, obj
                stats["accepted"] += 1
                settled.pop(k, None)
    stats["objective"] = best_obj
    return best, stats
