"""Pinned moves (solvers.scheduling.pinned_moves): the three-role relaxation of a segment with
its cut ops pinned is never above the pinned problem's exhaustive optimum, the clean segment
runs priced by it never above the whole problem's, and a hand-checked fork-join where it
proves the optimum that every other bound misses.

The default run draws a small slice (30 segments, 25 graphs); a wider sweep, e.g.
``PLAN_PINNED_MOVES_EXAMPLES=300 python -m pytest -q -p no:cacheprovider tests/solvers/test_pinned_moves.py``,
draws that many of each.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem, lower_bounds
from solvers.scheduling.forced_cuts import forced_cut_bound
from solvers.scheduling.pinned_moves import (move_floor_tables, pinned_move_bound, pinned_move_problem, pinned_moves,
                                             role_model)
from solvers.scheduling.segment_runs import segment_run_bound
from tests.solvers.test_scheduling_bruteforce import brute_force, draw_links

_WIDE = int(os.environ.get("PLAN_PINNED_MOVES_EXAMPLES", "0"))


def _settings(default: int):
    return settings(max_examples=_WIDE or default, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


_ONE = SolveOptions(num_workers=1)


def _segment_edges(draw, n: int) -> list[tuple[int, int, int]]:
    """Edges of a segment on ops 0..n-1: every op after the source has a producer before it
    and every op before the sink a consumer after it, plus a few extra edges (fan-outs,
    fan-ins, residuals)."""
    edges = set()
    for v in range(1, n):
        edges.add((draw(st.integers(0, v - 1)), v))
    for u in range(n - 1):
        if not any(a == u for a, _ in edges):
            edges.add((u, draw(st.integers(u + 1, n - 1))))
    for _ in range(draw(st.integers(0, 2))):
        u = draw(st.integers(0, n - 2))
        edges.add((u, draw(st.integers(u + 1, n - 1))))
    return [(u, v, 0) for u, v in sorted(edges)]


@st.composite
def pinned_segments(draw):
    """A segment of 3-5 ops on 3-4 devices (1-2 streams, some ops barred from some devices),
    links per pair or one bus, transfers 0-5, the source pinned on one device and the sink on
    another, sometimes a colocation pair."""
    n = draw(st.integers(3, 5))
    nd = draw(st.integers(3, 4 if n < 5 else 3))
    edges = _segment_edges(draw, n)
    durations = []
    for _ in range(n):
        row = [draw(st.one_of(st.just(-1), st.integers(0, 4))) for _ in range(nd)]
        if all(x < 0 for x in row):
            row[0] = draw(st.integers(0, 4))
        durations.append(tuple(row))
    link_of, nl = draw_links(draw, nd)
    transfer = tuple(tuple(draw(st.integers(0, 5)) for _ in range(nl)) for _ in edges)
    kw = {}
    if n >= 4 and draw(st.booleans()):
        kw["colocation_groups"] = ((1, 2),)
    sub = SchedulingProblem(tuple(durations), tuple(edges), tuple(draw(st.integers(1, 2)) for _ in range(nd)),
                            tuple(map(tuple, link_of)), transfer, **kw)
    a = draw(st.integers(0, nd - 1))
    b = draw(st.integers(0, nd - 1).filter(lambda d: d != a))
    durations = list(sub.durations_cycles)
    durations[0] = tuple(0 if d == a else x for d, x in enumerate(durations[0]))
    durations[n - 1] = tuple(max(x, 1) if d == b else x for d, x in enumerate(durations[n - 1]))
    return pinned_move_problem(SchedulingProblem(tuple(durations), sub.edges, sub.device_streams, sub.link_of,
                                                 sub.transfer_cycles, **kw), a, b)


@_settings(30)
@given(pinned_segments())
def test_the_role_model_is_at_most_the_pinned_optimum(pinned):
    opt = brute_force(pinned)
    built = role_model(pinned)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(built.model)
    if opt is None:
        return  # nothing to compare (the model may still have a solution: it is a relaxation)
    assert status == cp_model.OPTIMAL
    assert solver.value(built.makespan) <= opt, (solver.value(built.makespan), opt)


@st.composite
def memory_forced_graphs(draw):
    """Fork-joins and residual chains of 4-6 ops on 2-3 devices (1-2 streams, links per pair or
    one bus, sometimes interchangeable), weights that need two devices, transfers 0-6."""
    n = draw(st.integers(4, 6))
    nd = draw(st.integers(2, 3 if n < 6 else 2))
    edges = [(i, i + 1, 0) for i in range(n - 1)]
    for _ in range(draw(st.integers(1, 2))):
        u = draw(st.integers(0, n - 3))
        v = draw(st.integers(u + 2, n - 1))
        if (u, v, 0) not in edges:
            edges.append((u, v, 0))
    if draw(st.booleans()):  # a fork-join instead of the chain's middle edge
        edges.remove((1, 2, 0))
        edges += [(0, 2, 0)] if (0, 2, 0) not in edges else []
    link_of, nl = draw_links(draw, nd)
    durations = [tuple(draw(st.integers(0, 4)) for _ in range(nd)) for _ in range(n)]
    resident = tuple(draw(st.integers(0, 4)) for _ in range(n))
    total = sum(resident)
    cap = draw(st.integers(max(max(resident), 1), max(max(resident), total - 1, 1)))
    streams = (draw(st.integers(1, 2)),) * nd
    classes = (0,) * nd if draw(st.booleans()) else ()
    transfer = tuple(tuple(draw(st.integers(0, 6)) for _ in range(nl)) for _ in edges)
    return SchedulingProblem(tuple(durations), tuple(edges), streams, tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=(cap,) * nd, op_resident_bytes=resident, device_class=classes)


@_settings(25)
@given(memory_forced_graphs())
def test_the_pinned_move_bound_is_at_most_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    value, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert value <= opt, (value, opt)


def _fork_join() -> SchedulingProblem:
    # c0 -> {x, y} -> c1 on two interchangeable devices with one link each way, every op 1
    # cycle, every transfer 5; c0 and c1 weigh 4 of a device's 6 bytes, so they sit on two
    # devices. Two edges of the fork-join cross from c0's device to c1's whatever x and y do
    # (both fork edges, both join edges, or one of each), one after the other on the one
    # link: c0 [0, 1], transfers [1, 6] and [6, 11], c1 [11, 12]. The optimum is 12.
    return SchedulingProblem(((1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1),
                             ((-1, 0), (1, -1)), ((5, 5),) * 4, device_memory_bytes=(6, 6),
                             op_resident_bytes=(4, 1, 1, 4), device_class=(0, 0))


def test_a_fork_join_over_one_link_pays_both_transfers():
    p = _fork_join()
    assert brute_force(p) == 12
    assert max(lower_bounds(p).values()) == 8  # c0, one transfer, a branch, c1: no contention
    assert forced_cut_bound(p, _ONE, Budget.start(5, SCHEDULING))[0] == 8
    value, stats = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert value == 12 and stats["pinned_moves"] == stats["pinned_moves_proved"] == 1


def test_the_scheduler_reports_the_stage_and_a_zero_share_turns_it_off():
    p = _fork_join()
    options = SolveOptions(time_limit_s=5, num_workers=1)
    cfg = dict(segment_bound_share=0.0, forced_cut_share=0.0, bound_probe_share=0.0, placement_lns_share=0.0,
               segment_schedule_share=0.0)
    on = CpSatScheduler(CpSatOptions(**cfg)).solve(p, options)
    assert on.stats["pinned_move_bound"] == 12 and on.objective == 12
    off = CpSatScheduler(CpSatOptions(pinned_move_share=0.0, **cfg)).solve(p, options)
    assert "pinned_move_bound" not in off.stats and off.objective == 12


def test_a_memory_forced_problem_without_links_is_reported_infeasible_not_a_crash():
    # Found by the portfolio's property test: no link between the two devices (every
    # transfer_cycles row empty) made the role model's horizon take max() of an empty row. Op 4
    # (on device 1 only, its weight needs device 1) reads op 1 (device 0 only): no plan exists.
    p = SchedulingProblem(((0, -1), (1, -1), (0, -1), (-1, 0), (-1, 1)), ((1, 2, 0), (1, 4, 0), (2, 4, 0)), (1, 1),
                          ((-1, -1), (-1, -1)), ((), (), ()), device_memory_bytes=(0, 1),
                          op_resident_bytes=(0, 0, 0, 0, 2))
    assert CpSatScheduler().solve(p, SolveOptions(time_limit_s=0.05)).status.value == "INFEASIBLE"


def _every_move_proved(p: SchedulingProblem) -> int:
    """The clean segment runs with every pinned move proved to its optimum (no budget)."""
    moves = pinned_moves(p)
    proven = []
    for _, _, pinned in moves.jobs:
        built = role_model(pinned)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        status = solver.solve(built.model)
        assert status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
        proven.append(solver.objective_value if status == cp_model.OPTIMAL else float("inf"))
    return segment_run_bound(moves.pruned, moves.segments, moves.floors, moves.cuts,
                             move_floors=move_floor_tables(moves, proven))


@_settings(25)
@given(memory_forced_graphs())
def test_proving_the_moves_on_the_path_gives_what_proving_every_move_gives(p):
    # the stage proves only the moves the DP's path takes, until the path takes only proven
    # ones: the DP's value is then the one with every move proved (the path's value does not
    # change, and proving more only raises the others)
    if pinned_moves(p) is None:
        return
    memo: dict = {}
    value, stats = pinned_move_bound(p, _ONE, Budget.start(50, SCHEDULING), memo, weights=False)
    assert stats["pinned_moves"] == stats["pinned_moves_settled"]
    assert value == _every_move_proved(p)
