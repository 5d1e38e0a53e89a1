"""The segment-run bound and the contiguous split: the bound never exceeds the exhaustive
optimum on small fork-join chains with memory limits (identical devices, so runs may also
change device inside a pool), and the split's schedules are valid and never below it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions
from solvers.hierarchical import StrategyOptions, StrategyScheduler
from solvers.scheduling import SchedulingProblem, lower_bounds, validate_schedule
from solvers.scheduling.bounds import bound_segments, out_edge_lists, segment_floor, subproblem
from solvers.scheduling.contiguous import ContiguousSplitScheduler, contiguous_schedule
from solvers.scheduling.segment_runs import segment_run_bound
from solvers.scheduling.validate import objective_value
from tests.solvers.hierarchical.random_problems import random_problem
from tests.solvers.test_scheduling_bruteforce import brute_force

_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def fork_chains(draw):
    """Cut op, then forks of one or two branch ops, joined by the next cut op; up to 7 ops on
    2-3 devices (2 alike, some ops pinned to the first, maybe a slower third with more
    memory), memory tight."""
    ops, edges = 1, []
    while ops < 6:
        width = draw(st.integers(1, 2))
        if ops + width + 1 > 7:
            break
        src, join = ops - 1, ops + width
        for b in range(width):
            edges += [(src, ops + b, 0), (ops + b, join, 0)]
        ops = join + 1
        if draw(st.booleans()):
            break
    slow = draw(st.booleans())
    nd = 3 if slow else 2
    durations = []
    for _ in range(ops):
        fast = draw(st.integers(0, 4))
        second = -1 if draw(st.integers(0, 3)) == 0 else fast  # sometimes pinned to device 0
        durations.append((fast, second) + ((fast * 2 + 1,) if slow else ()))
    link_of = [[-1 if a == b else 0 for b in range(nd)] for a in range(nd)]
    if nd == 3:
        link_of = [[-1, 0, 1], [0, -1, 2], [1, 2, -1]]
    nl = 1 + max(x for r in link_of for x in r)
    transfer = tuple(tuple(draw(st.integers(0, 5)) for _ in range(nl)) for _ in edges)
    resident = tuple(draw(st.integers(0, 4)) for _ in range(ops))
    cap = draw(st.integers(max(resident), max(max(resident), sum(resident))))
    memory = (cap, cap) + ((0,) if slow else ())
    return SchedulingProblem(tuple(durations), tuple(edges), (1,) * nd, tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=memory, op_resident_bytes=resident)


@_SETTINGS
@given(fork_chains())
def test_segment_run_bound_is_at_most_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    pruned, segs = bound_segments(p)
    runs = segment_run_bound(pruned, segs, [segment_floor(sub) for sub, _ in segs])
    assert runs <= opt, (runs, opt)
    assert max(lower_bounds(p).values()) <= opt


@_SETTINGS
@given(fork_chains())
def test_contiguous_split_is_valid_and_never_below_the_optimum(p):
    opt = brute_force(p)
    sol = contiguous_schedule(p)
    if sol is None:
        return
    assert not validate_schedule(p, sol)
    assert opt is not None and objective_value(p, sol) >= opt


def _fork_join_chain(layers: int) -> SchedulingProblem:
    """Layers c -> {x, y} -> c' on two identical devices that each hold half the weights plus
    one layer, transfers 5 cycles, every op 1 cycle."""
    edges = [e for j in range(layers) for e in ((3 * j, 3 * j + 1, 0), (3 * j, 3 * j + 2, 0),
                                                (3 * j + 1, 3 * j + 3, 0), (3 * j + 2, 3 * j + 3, 0))]
    n = 3 * layers + 1
    return SchedulingProblem(((1, 1),) * n, edges, (1, 1), ((-1, 0), (0, -1)), ((5,),) * len(edges),
                             device_memory_bytes=(3 * layers + 6, 3 * layers + 6),
                             op_resident_bytes=(0,) + (3, 3, 0) * layers)


def test_segment_runs_see_the_weights_of_the_branches():
    # 6 layers of 6 weight bytes on devices of 24: a whole run holds at most 4 layers, so
    # the best plan pays at least one transfer (5) that the path bounds cannot see
    p = _fork_join_chain(6)
    parts = lower_bounds(p)
    # the optimum is 27; the path bounds say 13, the window load of each segment (a branch off
    # the cut ops' device idles for a transfer at each end) lifts the plain chain to 19
    assert parts["segment_runs"] == 23 and max(v for k, v in parts.items() if k != "segment_runs") == 19
    assert max(v for k, v in parts.items() if k not in ("segment_runs", "segment_chain", "window_load")) == 13


def test_the_strategy_starts_from_a_better_contiguous_split():
    p = _fork_join_chain(6)
    split = ContiguousSplitScheduler().solve(p)
    r = StrategyScheduler().solve(p, SolveOptions(time_limit_s=2, num_workers=1))
    # HEFT: 28; the split holds 3 layers per device: 27, the optimum (CP-SAT proves it)
    assert (r.stats["heft_objective"], split.objective) == (28, 27)
    assert r.stats["warm_start"] == "contiguous split" and r.objective == 27
    assert not validate_schedule(p, r.solution)


def test_the_hierarchical_path_reports_the_static_bounds():
    # quick_lower_bound alone says 13; the segment runs prove 23 (optimum 27)
    p = _fork_join_chain(6)
    r = StrategyScheduler(StrategyOptions(strategy="hierarchical", bound_share=0.0)).solve(
        p, SolveOptions(time_limit_s=2, num_workers=1))
    stages = r.stats["strategy_stages"]["bound"]
    assert (stages["quick_bound"], stages["static_bound"], r.bound) == (13, 23, 23)


def test_weightless_branches_may_run_in_parallel():
    # c -> {x, y} -> c' with x, y 4 cycles each and free transfers, no weights inside: the
    # branches run side by side (step 4 + 1), not one after the other on device 0 (9), where c
    # and c' must run
    p = SchedulingProblem(((1, -1), (4, 4), (4, 4), (1, -1)), ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)),
                          (1, 1), ((-1, 0), (0, -1)), ((0,),) * 4, device_memory_bytes=(5, 5),
                          op_resident_bytes=(3, 0, 0, 2))
    assert brute_force(p) == 6
    pruned, segs = bound_segments(p)
    assert segment_run_bound(pruned, segs, [segment_floor(sub) for sub, _ in segs]) <= 6


def test_one_device_and_forbidden_ops():
    # one device: every interior op stays (no option to send one away); an op the device
    # cannot run makes the full option impossible rather than free
    one = SchedulingProblem(((1,), (2,), (3,), (1,)), ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1,),
                            ((-1,),), ((),) * 4, device_memory_bytes=(10,), op_resident_bytes=(1, 2, 3, 1))
    pruned, segs = bound_segments(one)
    assert segment_run_bound(pruned, segs, [segment_floor(sub) for sub, _ in segs]) == brute_force(one) == 7
    two = SchedulingProblem(((1, -1), (2, 2), (-1, 3), (1, -1)), ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)),
                            (1, 1), ((-1, 0), (0, -1)), ((1,),) * 4, device_memory_bytes=(10, 10),
                            op_resident_bytes=(1, 2, 3, 1))
    pruned, segs = bound_segments(two)
    assert segment_run_bound(pruned, segs, [segment_floor(sub) for sub, _ in segs]) == brute_force(two) == 7


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(0, 10_000), st.integers(2, 30), st.data())
def test_a_subproblem_from_out_edge_lists_is_the_same_problem(seed, n, data):
    # segment_problems passes each op's out-edges so that a 10^4-op graph's thousands of
    # segments do not each scan every edge; the subproblem must not change.
    p = random_problem(seed, n)
    ops = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    source = data.draw(st.sampled_from([None] + ops))
    assert subproblem(p, ops, source, out_edge_lists(p)) == subproblem(p, ops, source)
