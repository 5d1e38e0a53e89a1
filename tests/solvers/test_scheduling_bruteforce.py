"""CP-SAT against an exhaustive search on random tiny DAGs (and on the hand instances).

The brute force enumerates every placement and, for each, every order of the tasks (ops
and transfers) consistent with precedence, starting each task as early as its
predecessors and its resource allow (a device's stream that frees latest but in time, else
the earliest; a link's tail). Listing the tasks of an optimal schedule by start time
reproduces it with starts no later, so the minimum over all orders is the optimum.
Memory is limited to resident bytes here (placement-only), so any order is admissible.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from ortools.sat.python import cp_model

from solvers.scheduling import (CpSatScheduler, HeftScheduler, Objective, SchedulingProblem, build,
                                lower_bound, objective_value, validate_schedule)
from tests.solvers.scheduling_instances import INSTANCES


def _placements(p: SchedulingProblem):
    for pl in itertools.product(*(p.allowed_devices(i) for i in range(p.num_ops))):
        if any(len({pl[i] for i in g}) > 1 for g in p.colocation_groups):
            continue
        if any(pl[u] != pl[v] and p.link_of[pl[u]][pl[v]] < 0 for u, v, _ in p.edges):
            continue
        ok = True
        for d in range(p.num_devices):
            cap = p.memory_bytes(d)
            if cap > 0 and p.device_resident_bytes(d, pl) > cap:
                ok = False
        if ok:
            yield pl


def _topological(preds: list[list[int]]) -> list[int]:
    """The task indices, every task after its predecessors."""
    order, placed = [], [False] * len(preds)
    while len(order) < len(preds):
        for t, before in enumerate(preds):
            if not placed[t] and all(placed[q] for q in before):
                placed[t] = True
                order.append(t)
    return order


def _best_makespan(p: SchedulingProblem, pl, best: int) -> int:
    n = p.num_ops
    tasks = []  # (kind, resource, duration, preds)
    preds_of_op = [[] for _ in range(n)]
    for i in range(n):
        tasks.append(("op", pl[i], p.durations_cycles[i][pl[i]], preds_of_op[i]))
    for e, (u, v, _) in enumerate(p.edges):
        if pl[u] == pl[v]:
            preds_of_op[v].append(u)
        else:
            link = p.link_of[pl[u]][pl[v]]
            tasks.append(("link", link, p.transfer_cycles[e][link], [u]))
            preds_of_op[v].append(len(tasks) - 1)
    m = len(tasks)
    end = [None] * m
    lanes = [[0] * p.device_streams[d] for d in range(p.num_devices)]
    link_tail = [0] * p.num_links
    result = [best]
    # Pruning only (the orders tried and the starts they give are unchanged): the work still to
    # run on each device and link, and each unstarted task's earliest end along its predecessors.
    order = _topological([t[3] for t in tasks])
    work_left = {("op", d): 0 for d in range(p.num_devices)} | {("link", k): 0 for k in range(p.num_links)}
    for kind, res, dur, _ in tasks:
        work_left[kind, res] += dur
    earliest_end = [0] * m

    def lower_bound_from_here(cur: int) -> int:
        """No order from here ends before this: each positive-length op raises one of its device's
        stream ends by at least its length (so the latest stream ends at or after their mean), a
        transfer its link's tail, and no task starts before its predecessors end."""
        bound = cur
        for d, lane in enumerate(lanes):
            left = work_left["op", d]
            if left:
                bound = max(bound, -(-(sum(lane) + left) // len(lane)))
        for k, tail in enumerate(link_tail):
            if work_left["link", k]:
                bound = max(bound, tail + work_left["link", k])
        for t in order:
            if end[t] is None:
                earliest_end[t] = tasks[t][2] + max(
                    (end[q] if end[q] is not None else earliest_end[q] for q in tasks[t][3]), default=0)
                bound = max(bound, earliest_end[t])
        return bound

    def dfs(done: int, cur: int) -> None:
        if lower_bound_from_here(cur) >= result[0]:
            return
        if done == m:
            result[0] = cur
            return
        for t in range(m):
            if end[t] is not None or any(end[q] is None for q in tasks[t][3]):
                continue
            kind, res, dur, preds = tasks[t]
            ready = max((end[q] for q in preds), default=0)
            if kind == "op":
                lane = lanes[res]
                if dur == 0:
                    s, k, old = ready, None, None
                else:
                    fits = [j for j in range(len(lane)) if lane[j] <= ready]
                    k = max(fits, key=lambda j: lane[j]) if fits else min(range(len(lane)),
                                                                          key=lambda j: lane[j])
                    s, old = max(ready, lane[k]), lane[k]
                    lane[k] = s + dur
            else:
                old = link_tail[res]
                s = ready if dur == 0 else max(ready, old)
                if dur:
                    link_tail[res] = s + dur
            end[t] = s + dur
            work_left[kind, res] -= dur
            dfs(done + 1, max(cur, end[t]))
            work_left[kind, res] += dur
            end[t] = None
            if kind == "op" and k is not None:
                lanes[res][k] = old
            elif kind == "link" and dur:
                link_tail[res] = old

    dfs(0, 0)
    return result[0]


def brute_force(p: SchedulingProblem) -> int | None:
    """The optimum by exhaustive search, or None when infeasible."""
    assert not any(p.output_bytes(i) for i in range(p.num_ops))
    assert not p.device_memory_bytes or not any(b for *_, b in p.edges)
    best = None
    big = 1 << 40
    for pl in _placements(p):
        if p.objective is Objective.THROUGHPUT:
            loads = [0] * (p.num_devices + p.num_links)
            for i in range(p.num_ops):
                loads[pl[i]] += p.durations_cycles[i][pl[i]]
            for e, (u, v, _) in enumerate(p.edges):
                if pl[u] != pl[v]:
                    link = p.link_of[pl[u]][pl[v]]
                    loads[p.num_devices + link] += p.transfer_cycles[e][link]
            val = max(loads)
        else:
            val = _best_makespan(p, pl, big if best is None else best)
        if val < big and (best is None or val < best):
            best = val
    return best


def test_brute_force_agrees_with_hand_instances():
    for inst in INSTANCES:
        assert brute_force(inst.problem) == inst.optimum, inst.name


def draw_links(draw, nd: int) -> tuple[list[list[int]], int]:
    """A link table for ``nd`` devices (one link per pair, one shared bus, or a pair without
    a link) and its number of links."""
    kind = draw(st.sampled_from(["pair", "bus", "none_between"]))
    link_of = [[-1] * nd for _ in range(nd)]
    k = 0
    for a in range(nd):
        for b in range(a + 1, nd):
            if kind == "none_between" and (a, b) == (0, 1):
                continue
            link_of[a][b] = link_of[b][a] = 0 if kind == "bus" else k
            k += 1
    nl = 1 + max((x for row in link_of for x in row), default=-1)
    return link_of, nl


@st.composite
def problems(draw):
    n = draw(st.integers(1, 5))
    nd = draw(st.integers(1, 2 if n > 3 else 3))
    streams = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    durations = []
    for _ in range(n):
        row = [draw(st.one_of(st.just(-1), st.integers(0, 6))) for _ in range(nd)]
        if all(x < 0 for x in row):
            row[draw(st.integers(0, nd - 1))] = draw(st.integers(0, 6))
        durations.append(tuple(row))
    edges = tuple((u, v, draw(st.integers(0, 3))) for u in range(n) for v in range(u + 1, n)
                  if draw(st.booleans()) and draw(st.booleans()))
    link_of, nl = draw_links(draw, nd)
    transfer = tuple(tuple(draw(st.integers(0, 4)) for _ in range(nl)) for _ in edges)
    kw = {}
    if draw(st.booleans()):
        kw["op_resident_bytes"] = tuple(draw(st.integers(0, 4)) for _ in range(n))
        kw["device_memory_bytes"] = tuple(draw(st.integers(0, 10)) for _ in range(nd))
        edges = tuple((u, v, 0) for u, v, _ in edges)
    if n >= 2 and draw(st.booleans()):
        kw["colocation_groups"] = ((0, n - 1),) if n < 3 or draw(st.booleans()) else ((0, 1), (1, n - 1))
    if draw(st.booleans()):
        kw["objective"] = Objective.THROUGHPUT
    if nd >= 2 and draw(st.booleans()) and len(set(streams)) == 1:
        kw["device_class"] = (0,) * nd
    return SchedulingProblem(tuple(durations), edges, streams, tuple(map(tuple, link_of)),
                             transfer, **kw)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_cpsat_matches_brute_force(p):
    opt = brute_force(p)
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    if opt is None:
        assert r.status is Status.INFEASIBLE and r.solution is None
        return
    assert r.status is Status.OPTIMAL, r.stats
    assert validate_schedule(p, r.solution) == []
    assert r.objective == objective_value(p, r.solution) == opt
    assert lower_bound(p) <= opt and r.bound <= opt
    h = HeftScheduler().solve(p)
    if h.solution is not None:
        assert validate_schedule(p, h.solution) == []
        assert h.objective >= opt


def _bare_model_optimum(p: SchedulingProblem) -> int | None:
    """The model alone: no hint, no bound, horizon = serial sum (HEFT cannot short-cut it)."""
    horizon = (sum(max(r) for r in p.durations_cycles)
               + sum(max(r, default=0) for r in p.transfer_cycles))
    model, v = build(p, horizon)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = 5
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return None
    assert status == cp_model.OPTIMAL
    sol = v.extract(solver)
    assert validate_schedule(p, sol) == []
    assert objective_value(p, sol) == round(solver.objective_value)
    return objective_value(p, sol)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_bare_model_matches_brute_force(p):
    assert _bare_model_optimum(p) == brute_force(p)


def test_segment_floor_bound_is_sound():
    """Two fork-join layers of one shape but different durations get a proof each (and
    together prove the optimum); two identical layers share one proof."""
    from solvers.scheduling import segment_lower_bound
    # a -> {b, c} -> d -> {e, f} -> g on two devices and a bus with 2-cycle transfers
    p = SchedulingProblem(((1, 1), (4, 4), (3, 3), (1, 1), (6, 6), (2, 2), (1, 1)),
                          ((0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 1),
                           (3, 4, 1), (3, 5, 1), (4, 6, 1), (5, 6, 1)),
                          (1, 1), ((-1, 0), (0, -1)), ((2,),) * 8)
    opt = brute_force(p)
    # a [0, 1); layer 1: b on 0 [1, 5), c on 1 after a transfer [1, 3) -> [3, 6), b -> d
    # transfer [5, 7), d on 1 [7, 8): 7 after a. Layer 2 likewise: f on the other device,
    # [8, 10) transfer, f [10, 12), back [12, 14), e [8, 14), g [14, 15). Optimum 15 = 1 + 7 + 7.
    assert opt == 15
    bound, stats = segment_lower_bound(p, SolveOptions(time_limit_s=5), 3.0)
    assert stats["segment_groups_proved"] == 2
    assert bound == opt  # 1 + 7 + 7, each layer proved on its own
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=10))
    assert r.status is Status.OPTIMAL and r.objective == opt
    twin = SchedulingProblem(((1, 1), (4, 4), (3, 3), (1, 1), (4, 4), (3, 3), (1, 1)), p.edges,
                             (1, 1), ((-1, 0), (0, -1)), ((2,),) * 8)
    bound, stats = segment_lower_bound(twin, SolveOptions(time_limit_s=5), 3.0)
    assert stats["segment_groups"] == 1 and bound == 1 + 7 + 7 == brute_force(twin)
