"""Gangs: the shards of a gang start on the same cycle, each on its own device of one island.

Two steps. Before the per-island solves, :func:`pin_shards` pins a gang's ops to distinct
devices of its island (the first free allowed device in the island's order), so no two
shards queue on one device. After the global schedule, :func:`retime` re-times it with its
placement and its order on every stream and link kept: each op, transfer and gang (a gang as
one node) starts as early as its predecessors allow (data edges through their transfers, the
previous item on the same stream or link), a gang at the latest of its shards' earliest
starts. :func:`align_gangs` checks the result with the scheduling problem's own validator,
and after lowering the replayed binaries must show each gang on one start cycle
(:func:`check_replayed_gangs`).

Examples
--------
Ops 0 and 1 on two devices, op 2 after op 0 on op 1's device: the gang {0, 1} starts together.

>>> from solvers.scheduling.problem import SchedulingSolution
>>> s = SchedulingSolution(op_device=(0, 1, 1), op_stream=(0, 0, 0), op_start=(0, 3, 9),
...                        op_duration=(5, 5, 2), transfers=())
>>> retime(s, edges=((0, 2, 0),), gangs=((0, 1),)).op_start
(0, 0, 5)
>>> retime(s, edges=((0, 1, 0),), gangs=((0, 1),))
Traceback (most recent call last):
...
planner.errors.InfeasibleError: the shards of a gang depend on each other, so they cannot start on one cycle

Op 2 queued between the shards on device 1 (after op 0's data, before op 1): the kept order
is a cycle once the gang is one node, so the serial schedule moves op 2 after the gang.

>>> s = SchedulingSolution(op_device=(0, 1, 1), op_stream=(0, 0, 0), op_start=(0, 6, 5),
...                        op_duration=(5, 5, 1), transfers=())
>>> retime(s, edges=((0, 2, 0),), gangs=((0, 1),)).op_start
(0, 0, 5)
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Any, Mapping, Sequence

import networkx as nx

from planner.errors import InfeasibleError, InternalError
from planner.instances import base_op_name
from planner.plan import PlacedOp, Plan
from planner.reductions.scheduling import from_solution
from planner.spec import Spec
from planner.stages import Solved
from solvers.core import Status
from solvers.scheduling.problem import ScheduledTransfer, SchedulingSolution
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["pin_shards", "retime", "align_gangs", "check_replayed_gangs", "replayed_gang_record"]


def pin_shards(spec: Spec, devices: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The island part's pins with every gang's shards on distinct devices of ``devices``.

    Raises
    ------
    InfeasibleError
        A gang has a shard with no free device it may run on.
    """
    allowed = dict(spec.allowed_devices)
    kind = {d.name: d.kind for d in spec.hardware.devices}
    cycles = spec.device_cycles or {}
    for gang in spec.gangs:
        used: set[str] = set()
        for op in gang:
            if op not in spec.graph.ops:
                continue
            free = [d for d in devices if d not in used and d in allowed.get(op, devices)
                    and cycles.get((op, kind[d]), 0) is not None]
            if not free:
                raise InfeasibleError(f"gang shard {op!r} has no device of its island left to run on "
                                      f"(the gang {', '.join(gang)} needs one device each)")
            allowed[op] = (free[0],)
            used.add(free[0])
    return allowed


def _arcs(solution: SchedulingSolution, edges: Sequence[tuple[int, int, int]]) -> list[tuple[tuple, tuple]]:
    """Precedence arcs between ("o", op) and ("t", transfer) nodes: data edges, stream and link order."""
    arcs = _data_arcs(solution, edges)
    lanes: dict[tuple, list[tuple]] = {}
    for i, (d, s, start) in enumerate(zip(solution.op_device, solution.op_stream, solution.op_start)):
        lanes.setdefault(("stream", d, s), []).append((start, i, ("o", i)))
    for k, t in enumerate(solution.transfers):
        lanes.setdefault(("link", t.link), []).append((t.start_cycle, t.edge, ("t", k)))
    for items in lanes.values():
        items.sort()
        arcs += [(a[2], b[2]) for a, b in zip(items, items[1:])]
    return arcs


def _data_arcs(solution: SchedulingSolution, edges: Sequence[tuple[int, int, int]]) -> list[tuple[tuple, tuple]]:
    transfer_of = {t.edge: k for k, t in enumerate(solution.transfers)}
    arcs: list[tuple[tuple, tuple]] = []
    for e, (u, v, _) in enumerate(edges):
        if e in transfer_of:
            arcs += [(("o", u), ("t", transfer_of[e])), (("t", transfer_of[e]), ("o", v))]
        else:
            arcs.append((("o", u), ("o", v)))
    return arcs


def _contracted(arcs: list[tuple[tuple, tuple]], nodes: Sequence[tuple], rep: dict[tuple, tuple]):
    """The precedence graph with each gang as one node, and each node's incoming original nodes."""
    graph = nx.DiGraph()
    graph.add_nodes_from(rep.get(n, n) for n in nodes)
    incoming: dict[tuple, list[tuple]] = {}
    for a, b in arcs:
        graph.add_edge(rep.get(a, a), rep.get(b, b))
        incoming.setdefault(rep.get(b, b), []).append(a)
    return graph, incoming


def retime(solution: SchedulingSolution, *, edges: Sequence[tuple[int, int, int]],
           gangs: Sequence[Sequence[int]]) -> SchedulingSolution:
    """The earliest schedule with the same placement in which every gang starts on one cycle.

    First with every stream's and link's order kept; when that order puts a gang's shards
    on both sides of something (a cycle once the gang is one node), a serial schedule in the
    old start order instead: each op, transfer or gang, data predecessors first, starts when
    its predecessors have ended and its streams or link are free.

    Raises
    ------
    InfeasibleError
        A gang's shards depend on each other through the data edges.
    """
    rep = {("o", op): ("g", g) for g, gang in enumerate(gangs) for op in gang}
    duration = {("o", i): d for i, d in enumerate(solution.op_duration)}
    duration.update({("t", k): t.duration_cycles for k, t in enumerate(solution.transfers)})
    graph, incoming = _contracted(_arcs(solution, edges), list(duration), rep)
    start: dict[tuple, int] = {}
    try:
        for node in nx.lexicographical_topological_sort(graph):
            start[node] = max((start[rep.get(a, a)] + duration[a] for a in incoming.get(node, ())), default=0)
    except nx.NetworkXUnfeasible:
        start = _serial_starts(solution, edges, rep, duration)
    at = lambda n: start[rep.get(n, n)]  # noqa: E731
    transfers = tuple(ScheduledTransfer(t.edge, t.link, at(("t", k)), t.duration_cycles)
                      for k, t in enumerate(solution.transfers))
    return replace(solution, op_start=tuple(at(("o", i)) for i in range(len(solution.op_start))),
                   transfers=transfers)


def _serial_starts(solution: SchedulingSolution, edges: Sequence[tuple[int, int, int]], rep: dict[tuple, tuple],
                   duration: dict[tuple, int]) -> dict[tuple, int]:
    """Starts of a serial schedule: ready nodes in the old start order, each appended to its lanes."""
    graph, incoming = _contracted(_data_arcs(solution, edges), list(duration), rep)
    if not nx.is_directed_acyclic_graph(graph):
        raise InfeasibleError("the shards of a gang depend on each other, so they cannot start on one cycle")
    members: dict[tuple, list[tuple]] = {}
    for node in duration:
        members.setdefault(rep.get(node, node), []).append(node)

    def lane(node: tuple) -> tuple:
        kind, i = node
        if kind == "o":
            return ("stream", solution.op_device[i], solution.op_stream[i])
        return ("link", solution.transfers[i].link)

    def old_start(node: tuple) -> int:
        kind, i = node
        return solution.op_start[i] if kind == "o" else solution.transfers[i].start_cycle

    priority = {r: min((old_start(n), n) for n in ms) for r, ms in members.items()}
    free: dict[tuple, int] = {}
    start: dict[tuple, int] = {}
    waiting = {r: graph.in_degree(r) for r in graph}
    ready = sorted((priority[r], r) for r, count in waiting.items() if count == 0)
    while ready:
        _, node = ready.pop(0)
        lanes = [lane(n) for n in members[node]]
        start[node] = max([0, *(start[rep.get(a, a)] + duration[a] for a in incoming.get(node, ())),
                           *(free.get(l, 0) for l in lanes)])
        for n, l in zip(members[node], lanes):
            free[l] = max(free.get(l, 0), start[node] + duration[n])
        for succ in graph.successors(node):
            waiting[succ] -= 1
            if waiting[succ] == 0:
                bisect.insort(ready, (priority[succ], succ))
    return start


def align_gangs(solved: Solved, spec: Spec) -> Solved:
    """The solved plan re-timed so every gang starts on one cycle (checked by the problem's validator)."""
    if not spec.gangs:
        return solved
    problem, reduction, result = solved.problem, solved.reduction, solved.result
    index = {name: i for i, name in enumerate(reduction.op_names)}
    aligned = retime(result.solution, edges=problem.edges, gangs=[[index[op] for op in g] for g in spec.gangs])
    problems = validate_schedule(problem, aligned)
    if problems:
        raise InfeasibleError("starting the gangs together breaks the schedule: " + "; ".join(problems[:3]))
    objective = objective_value(problem, aligned)
    # The bound without gangs still bounds the schedule with them; it proves optimality only if met.
    status = Status.OPTIMAL if result.bound is not None and objective <= result.bound else Status.FEASIBLE
    result = replace(result, status=status, solution=aligned, objective=objective)
    plan = solved.plan
    plan = from_solution(result, reduction, problem, spec_name=plan.spec_name,
                         heuristic_objective=plan.heuristic_objective, solver_info=plan.solver,
                         resources=plan.resources)
    return replace(solved, plan=plan, result=result)


def check_replayed_gangs(ops: Mapping[str, Any], gangs: Sequence[Sequence[str]]) -> list[int]:
    """Each gang's start cycle in the replay (``ops``: the simulator's op timings by name).

    Raises
    ------
    InternalError
        A gang's shards started on different cycles in the replayed binaries (a bug).
    """
    starts = []
    for gang in gangs:
        seen = {ops[op].start_cycle for op in gang}
        if len(seen) != 1:
            raise InternalError(f"the replayed binaries start gang {', '.join(gang)} on cycles {sorted(seen)}")
        starts.append(seen.pop())
    return starts


def replayed_gang_record(plan: Plan, ops: Mapping[str, Any], gangs: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """Each gang's ``{"ops", "start_cycle"}`` as the final ``plan`` starts it, checked in the replay
    (``ops``: the simulator's op timings by name). Memory planning re-times the schedule and may
    split a shard into instances (``"op#0"``, ...): a split shard starts with its earliest.

    Raises
    ------
    InternalError
        The replayed binaries start a gang's shards on different cycles, or not where the plan does.
    """
    first = _first_instances(plan, gangs)
    replayed = check_replayed_gangs(ops, [[first[op].name for op in g] for g in gangs])
    planned = [first[g[0]].start_cycle for g in gangs]
    if replayed != planned:
        raise InternalError(f"the replayed gangs start on cycles {replayed}, the plan says {planned}")
    return [{"ops": list(g), "start_cycle": cycle} for g, cycle in zip(gangs, planned)]


def _first_instances(plan: Plan, gangs: Sequence[Sequence[str]]) -> dict[str, PlacedOp]:
    """Each gang op's first placed op: itself, or its earliest instance."""
    members = {op for g in gangs for op in g}
    first: dict[str, PlacedOp] = {}
    for o in plan.ops:
        op = o.name if o.name in members else base_op_name(o.name)
        if op in members and (op not in first or (o.start_cycle, o.name) < (first[op].start_cycle, first[op].name)):
            first[op] = o
    return first
