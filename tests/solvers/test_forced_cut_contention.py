"""The forced-cut relaxation's contention terms (windows between an op with several consumers and
their first common descendant, or several producers and their last common ancestor): never
above the exhaustive optimum on small random fan-out/fan-in graphs with tight memory and per-pair
links, a shared bus or CPU pools, and exact on hand-checked cases where they are what lifts the
bound."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.cpsat_support import run_cpsat
from solvers.scheduling import SchedulingProblem, lower_bound
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.forced_cuts import _windows, forced_cut_bound, forced_cut_model, memory_forces_cuts
from solvers.scheduling.structure import topological_order
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1, time_limit_s=5)


def _relaxation(p: SchedulingProblem, contention: bool = True) -> int:
    """The relaxation's own optimum (proven)."""
    built = forced_cut_model(restrict_placements(p), contention=contention)
    status, solver, _ = run_cpsat(built.model, _ONE)
    assert status.value == "OPTIMAL"
    return solver.value(built.makespan)


@st.composite
def fan_graphs(draw):
    """Up to 5 ops whose edges favour fan-outs and fan-ins (each op draws a few producers among
    the earlier ones), on 2-3 identical limited devices with one link per pair or one shared bus,
    sometimes 2 slow unlimited devices (a pool) or two streams; weights that need 2+ devices."""
    n = draw(st.integers(3, 5))  # the exhaustive optimum of 6 fan-in ops costs seconds each
    limited = draw(st.integers(2, 3)) if n <= 4 else 2
    slow = draw(st.booleans()) and n <= 4
    nd = limited + (2 if slow else 0)
    streams = draw(st.sampled_from([1, 1, 2]))
    durations = []
    for _ in range(n):
        fast = draw(st.integers(0, 4))
        durations.append((fast,) * limited + ((fast * 3 + 1,) * 2 if slow else ()))
    edges = []
    for v in range(1, n):
        producers = draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=min(3, v), unique=True))
        edges += [(u, v, 0) for u in sorted(producers)]
    bus = draw(st.booleans())
    link_of, k = [[-1] * nd for _ in range(nd)], 0
    for a in range(nd):
        for b in range(a + 1, nd):
            link_of[a][b] = link_of[b][a] = 0 if bus else k
            k += 1
    nl = 1 if bus else k
    transfer = tuple((draw(st.integers(0, 6)),) * nl for _ in edges)
    resident = tuple(draw(st.integers(0, 4)) for _ in range(n))
    cap = draw(st.integers(max(1, max(resident)), max(1, max(resident), sum(resident) - 1)))
    return SchedulingProblem(tuple(durations), tuple(edges), (streams,) * limited + ((1, 1) if slow else ()),
                             tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=(cap,) * limited + ((0, 0) if slow else ()),
                             op_resident_bytes=resident)


@random_sweep
@settings(max_examples=examples(80, 260), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fan_graphs())
def test_the_contention_terms_never_pass_the_optimum(p):
    opt = brute_force(p)
    if opt is None or not memory_forces_cuts(p):
        return
    relaxed = _relaxation(p)
    assert relaxed <= opt
    assert relaxed >= _relaxation(p, contention=False)  # the terms only add constraints
    assert forced_cut_bound(p, _ONE, Budget.start(5, SCHEDULING), floor=lower_bound(p), contention=True)[0] <= opt


def _fan_out() -> SchedulingProblem:
    """a(1) -> b(1), a -> c(1), 6 weight bytes on a, 5 on b and c, two 10-byte devices joined by
    one link, each transfer 5."""
    return SchedulingProblem(((1, 1),) * 3, ((0, 1, 0), (0, 2, 0)), (1, 1), ((-1, 0), (0, -1)), ((5,), (5,)),
                             device_memory_bytes=(10, 10), op_resident_bytes=(6, 5, 5))


def test_a_fan_out_over_one_link_pays_both_transfers():
    # a fits with neither b nor c (11 > 10), so b and c share the other device: a ends at 1,
    # the two transfers share the link (1-6, 6-11) and the later consumer runs 11-12.
    # Without contention both transfers overlap: 1 + 5 + 1 = 7.
    p = _fan_out()
    assert brute_force(p) == 12
    assert _relaxation(p, contention=False) == 7
    assert _relaxation(p) == 12
    # the probes see the terms only when asked (CpSatOptions.forced_cut_contention)
    assert forced_cut_bound(p, _ONE, Budget.start(5, SCHEDULING), floor=lower_bound(p), contention=True)[0] == 12
    assert forced_cut_bound(p, _ONE, Budget.start(5, SCHEDULING), floor=lower_bound(p))[0] == 7


def test_a_fork_on_one_device_runs_its_branches_in_turn():
    # s(0) -> x(4), s -> y(4), x -> t(0), y -> t, t -> h(3); h holds 10 bytes, x and y 1 each,
    # two 10-byte devices: h shares a device with neither x nor y, and x, y apart would pay
    # transfers of 9. So x and y run in turn beside s and t (0-4, 4-8), h after t over a free
    # edge: 8 + 3 = 11. Without contention the branches overlap and the relaxation stops at
    # its aggregate work term, 8 (4 + 3 on the longest path).
    p = SchedulingProblem(((0, 0), (4, 4), (4, 4), (0, 0), (3, 3)),
                          ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (3, 4, 0)), (1, 1), ((-1, 0), (0, -1)),
                          ((9,),) * 4 + ((0,),), device_memory_bytes=(10, 10), op_resident_bytes=(0, 1, 1, 0, 10))
    assert brute_force(p) == 11
    assert _relaxation(p, contention=False) == 8
    assert _relaxation(p) == 11


def test_windows_close_at_the_first_common_descendant():
    # u -> a -> b -> d, u -> d (a residual): the window of u closes at d and holds a and b
    p = SchedulingProblem(((1,),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0), (0, 3, 0)), (1,), ((-1,),),
                          ((),) * 4)
    assert _windows(p, topological_order(p)) == [(0, 3, (1, 2), "out"), (0, 3, (1, 2), "in")]


def test_the_scheduler_passes_the_option_to_the_probes():
    from solvers.scheduling import CpSatScheduler
    from solvers.scheduling.cpsat.options import CpSatOptions

    p = _fan_out()
    stats = {c: CpSatScheduler(CpSatOptions(forced_cut_contention=c, segment_bound_share=0.0)).solve(
        p, SolveOptions(num_workers=1, time_limit_s=2)).stats for c in (False, True)}
    assert stats[False]["forced_cut_bound"] == 7
    assert stats[True]["forced_cut_bound"] == 12
