"""Every lower bound against the exhaustive optimum on random tiny problems, and every row of
the LP, every earliest finish and tail against real schedules.

The brute force (tests/solvers/test_scheduling_bruteforce.py) handles resident memory, not
activation buffers; the forced placements' working-set rule, which needs buffers, is
checked against CP-SAT's exact optimum instead (same optimum with and without it).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.scheduling import (CpSatScheduler, HeftScheduler, Objective, SchedulingProblem, lower_bound,
                                lower_bounds, validate_schedule)
from solvers.scheduling.decomposition import prune_free_ends
from solvers.scheduling.forced import forced_allowed_devices, restrict_placements
from solvers.scheduling.linear_relaxation import LpBoundOptions, lp_relaxation, lp_violations
from solvers.scheduling.path_bounds import (earliest_finish, memory_path_bound, placement_path_bound,
                                            tail_times)
from tests.solvers.test_scheduling_bruteforce import brute_force, draw_links


@st.composite
def problems(draw, buffers: bool = False):
    """Up to 6 ops on 1-3 devices with heterogeneous durations, links (some pairs without
    one), resident memory, colocation, streams; with ``buffers`` also output and edge bytes."""
    n = draw(st.integers(1, 6))
    nd = draw(st.integers(1, 2 if n > 4 else 3))
    streams = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    durations = []
    for _ in range(n):
        row = [draw(st.one_of(st.just(-1), st.integers(0, 7))) for _ in range(nd)]
        if all(x < 0 for x in row):
            row[draw(st.integers(0, nd - 1))] = draw(st.integers(0, 7))
        durations.append(tuple(row))
    density = draw(st.sampled_from([0.25, 0.5]))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    chosen = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    edges = [(u, v, draw(st.integers(0, 3))) for (u, v), c in zip(pairs, chosen)
             if c and (density > 0.3 or draw(st.booleans()))]
    link_of, nl = draw_links(draw, nd)
    transfer = tuple(tuple(draw(st.integers(0, 4)) for _ in range(nl)) for _ in edges)
    kw = {}
    if draw(st.booleans()):
        kw["op_resident_bytes"] = tuple(draw(st.integers(0, 5)) for _ in range(n))
        kw["device_memory_bytes"] = tuple(draw(st.sampled_from([0, 4, 6, 9, 12])) for _ in range(nd))
        if buffers:
            kw["op_output_bytes"] = tuple(draw(st.integers(0, 4)) for _ in range(n))
        else:
            edges = [(u, v, 0) for u, v, _ in edges]
    if n >= 2 and draw(st.booleans()):
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if a != b:
            kw["colocation_groups"] = ((a, b),)
    if draw(st.booleans()):
        kw["objective"] = Objective.THROUGHPUT
    return SchedulingProblem(tuple(durations), tuple(edges), streams, tuple(map(tuple, link_of)), transfer, **kw)


_SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_SETTINGS
@given(problems())
def test_every_bound_is_at_most_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    parts = lower_bounds(p)
    parts.update(placement_path=placement_path_bound(p), memory_path=memory_path_bound(p),
                 lp=lp_relaxation(p).bound, lp_plain=lp_relaxation(p, LpBoundOptions(segment_cuts=False)).bound,
                 overall=lower_bound(p), segments_only=lower_bound(p, segments=False))
    for name, value in parts.items():
        assert value <= opt, (name, value, opt, parts)


@_SETTINGS
@given(problems())
def test_forced_placements_keep_the_optimum(p):
    """Restricting placements removes no feasible solution: the exhaustive optimum is unchanged."""
    assert brute_force(restrict_placements(p)) == brute_force(p)


def _schedules(p: SchedulingProblem):
    out = []
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    if r.status.has_solution:
        out.append(r.solution)
    h = HeftScheduler().solve(p)
    if h.status.has_solution:
        out.append(h.solution)
    return r, out


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problems(buffers=True))
def test_forced_placements_hold_with_buffers(p):
    """With activation buffers (the working-set rule), CP-SAT's optimum is the same on the
    restricted problem and every schedule found uses only pairs the restriction keeps."""
    r, schedules = _schedules(p)
    allowed = forced_allowed_devices(p)
    if r.status is Status.INFEASIBLE:
        return
    assert r.status is Status.OPTIMAL
    assert allowed is not None
    for s in schedules:
        assert validate_schedule(p, s) == []
        assert all(d in allowed[i] for i, d in enumerate(s.op_device))
    again = CpSatScheduler().solve(restrict_placements(p), SolveOptions(time_limit_s=5, num_workers=1,
                                                                      random_seed=0))
    assert again.objective == r.objective
    assert lower_bound(p) <= r.objective


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problems(buffers=True))
def test_schedules_satisfy_the_lp_rows_and_the_path_bounds(p):
    """Any schedule maps to a feasible LP point with T = its objective, and ends no earlier
    than the earliest-finish table and no later than the tail table allows."""
    _, schedules = _schedules(p)
    for s in schedules:
        assert lp_violations(p, s) == []
        if p.objective is not Objective.LATENCY:
            continue
        fin, tail = earliest_finish(p), tail_times(p)
        for i, d in enumerate(s.op_device):
            assert fin[i, d] <= s.op_end(i)
            assert s.op_end(i) + tail[i, d] <= s.makespan_cycles


@_SETTINGS
@given(problems())
def test_pruning_free_ends_only_relaxes(p):
    """The pruned problem's optimum is at most the problem's (a relaxation)."""
    opt = brute_force(p)
    q = prune_free_ends(p)
    if q is p or opt is None:
        return
    relaxed = brute_force(q)
    assert relaxed is not None and relaxed <= opt


def test_the_lp_counts_an_edge_inside_an_ops_second_class():
    # Three device classes; ops 0 -> 1 may run on devices 0 and 1 only, so the LP folds their
    # shares to f and 1 - f. Both on fast device 1 is optimal (makespan 2, no transfer); the LP
    # once bounded "both in class 1" by the column f instead of 1 - f, charged the 100-cycle
    # transfer and claimed a bound above a feasible makespan (found by the spec fuzzer).
    links = ((-1, 0, 1), (2, -1, 3), (4, 5, -1))
    p = SchedulingProblem(durations_cycles=((10, 1, -1), (10, 1, -1), (-1, -1, 1)), edges=((0, 1, 64),),
                          device_streams=(1, 1, 1), link_of=links, transfer_cycles=((100,) * 6,))
    best = HeftScheduler().solve(p, SolveOptions(time_limit_s=5))
    assert best.objective == 2 and best.solution.op_device[:2] == (1, 1)
    assert lp_violations(p, best.solution) == []
    assert lp_relaxation(p).bound <= 2 and lower_bound(p) <= 2
