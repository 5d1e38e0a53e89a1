"""Moves that bring weight along (solvers.scheduling.move_arrivals): the sink-side options of a
pinned move, hand-checked, and the segment-run DP priced with both sides never above the
exhaustive optimum and never below the pinned moves' DP, on small random memory-forced graphs.

The sweeps' default slices are 20 graphs each; ``PLAN_FULL_SWEEPS=1`` draws 200.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem
from solvers.scheduling.move_arrivals import ARRIVALS, arrival_levels, move_arrival_bound
from solvers.scheduling.pinned_moves import pinned_move_bound, pinned_moves, role_model
from tests.solvers.test_pinned_moves import memory_forced_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force, draw_links
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1)


def _fork_join_with_dear_join() -> SchedulingProblem:
    # c0 -> {x, y} -> c1 on three interchangeable devices (one link per pair), ops 1 cycle,
    # fork edges 1, join edges 10; c0 and c1 weigh 5 of a device's 6 bytes, x and y 1 each, so
    # c0 and c1 sit on two devices and c1's device holds at most one of x and y. Both there, the
    # move costs 4 after c0 (two fork transfers in turn, x, y, c1); with one off it, that one
    # pays a join edge of 10: c0 [0, 1], x on c0's device [1, 2], its join edge to 12, c1
    # [12, 13]. The optimum is 13.
    links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    return SchedulingProblem(((1, 1, 1),) * 4, ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1), links,
                             ((1,) * 3, (1,) * 3, (10,) * 3, (10,) * 3), device_memory_bytes=(6, 6, 6),
                             op_resident_bytes=(5, 1, 1, 5), device_class=(0, 0, 0))


def _both(p: SchedulingProblem) -> tuple[int, int, dict]:
    memo: dict = {}
    pinned, _ = pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    value, stats = move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    return pinned, value, stats


def test_the_sink_options_of_a_move_price_the_weight_it_brings():
    p = _fork_join_with_dear_join()
    (_, _, pinned), = pinned_moves(p).jobs
    levels = arrival_levels(lambda: role_model(pinned), [1, 1], 4, _ONE, Budget.start(5, SCHEDULING), 1.0)
    # nothing of {x, y} on c1's device: both pay a join edge (in turn over the one link when
    # both come from c0's device; 1 + 1 + 10 + 1 from a third one); one of them: 1 + 1 + 10 + 1;
    # both: the cheap move, 4
    assert levels == [(0, 13.0), (1, 12.0), (2, 4.0)]


def test_the_sink_options_lift_the_segment_runs_to_the_optimum():
    p = _fork_join_with_dear_join()
    assert brute_force(p) == 13
    pinned, value, stats = _both(p)
    assert pinned == 5  # the source side sees nothing: x or y on c0's device pays a join edge too
    assert value == 13 and stats["move_arrivals"] == stats["move_arrivals_done"] == 1


def test_the_sink_options_are_resumed_from_the_memo():
    p = _fork_join_with_dear_join()
    memo: dict = {}
    pinned_move_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    move_arrival_bound(p, _ONE, Budget.start(5, SCHEDULING), memo)
    budget = Budget.start(5, SCHEDULING)
    again, _ = move_arrival_bound(p, _ONE, budget, memo)
    assert again == 13 and len(memo[ARRIVALS]) == 1 and budget.used == 0


def test_without_settled_moves_the_stage_does_nothing():
    p = _fork_join_with_dear_join()
    budget = Budget.start(5, SCHEDULING)
    assert move_arrival_bound(p, _ONE, budget, {}) == (0, {}) and budget.used == 0


# The main solve fixes the hint's placement (max_full_ops 0) and proves nothing for the whole
# problem; the other bound stages are off: only the pinned moves and the leftover stage count.
_SEQUENCING = dict(max_full_ops=0, forced_cut_share=0.0, forced_cut_start_share=0.0, placement_lns_share=0.0,
                   bound_probe_share=0.0, segment_bound_share=0.0, segment_schedule_share=0.0)


def test_the_scheduler_runs_the_stage_right_after_the_moves_and_in_its_leftover():
    # session 14: the stage runs as soon as the pinned moves settle, so the bound does not
    # depend on what the leftover stage gets (or on the start, which the probes see)
    options = SolveOptions(time_limit_s=5, num_workers=1)
    on = CpSatScheduler(CpSatOptions(**_SEQUENCING)).solve(_fork_join_with_dear_join(), options)
    off = CpSatScheduler(CpSatOptions(leftover_bound_share=0.0, **_SEQUENCING)).solve(_fork_join_with_dear_join(),
                                                                                       options)
    assert (off.objective, off.bound) == (13, 13) and off.stats["move_arrival_bound"] == 13
    assert (on.objective, on.bound, on.status.value) == (13, 13, "OPTIMAL") and on.stats["move_arrival_bound"] == 13


@st.composite
def dear_joins(draw):
    """``c0 -> {x_1..x_k} -> c1`` (k 2-3), sometimes after ``z -> c0``, on 2-3 devices (links
    per pair or one bus, sometimes interchangeable): join edges dearer than fork edges (so a
    change brings the branches' last ops onto the sink's device), weights where c0 and c1
    cannot share a device and c1's device holds only some branches."""
    k = draw(st.integers(2, 3))
    head = k < 3 and draw(st.booleans())
    c0 = int(head)
    c1 = c0 + k + 1
    edges = ([(0, 1, 0)] if head else []) + [(c0, c0 + i, 0) for i in range(1, k + 1)]
    edges += [(c0 + i, c1, 0) for i in range(1, k + 1)]
    nd = draw(st.integers(2, 3))
    link_of, nl = draw_links(draw, nd)
    dear = draw(st.integers(4, 9))
    transfer = tuple(tuple(draw(st.integers(dear - 2, dear)) if v == c1 else draw(st.integers(0, 2)) for _ in range(nl))
                     for _, v, _ in edges)
    durations = [tuple(draw(st.integers(0 if i in (c0, c1) else 1, 3)) for _ in range(nd)) for i in range(c1 + 1)]
    cap = draw(st.integers(5, 8))
    big = draw(st.integers(cap // 2 + 1, cap))
    resident = ((draw(st.integers(0, 3)),) if head else ()) + (big,) + tuple(draw(st.integers(1, 3)) for _ in range(k))
    resident += (big,)
    classes = (0,) * nd if draw(st.booleans()) else ()
    return SchedulingProblem(tuple(durations), tuple(edges), (1,) * nd, tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=(cap,) * nd, op_resident_bytes=resident, device_class=classes)


_SWEEP = settings(max_examples=examples(20, 200), deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@random_sweep
@_SWEEP
@given(dear_joins())
def test_sink_options_on_dear_joins_stay_below_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    pinned, value, stats = _both(p)
    assert value <= opt, (pinned, value, opt)
    assert not stats or pinned <= value, (pinned, value, opt)


@random_sweep
@_SWEEP
@given(memory_forced_graphs())
def test_sink_options_stay_below_the_optimum_and_never_lower_the_runs(p):
    opt = brute_force(p)
    if opt is None:
        return
    pinned, value, stats = _both(p)
    assert value <= opt, (pinned, value, opt)
    assert not stats or pinned <= value, (pinned, value, opt)
