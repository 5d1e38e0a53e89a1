"""The N-level window search with link holds (issue 14): above ``max_model_ops`` the re-solve
under heads and tails improves its best re-timed baseline by windows whose models carry the
device's link holds (before, with holds the baseline was the plan). Forced here on small
problems with ``max_model_ops=0``: a hand case, and against the brute force of
test_hierarchy_link_holds (from everything at home: never worse than its start, never below the
optimum, valid, deterministic)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, reject, settings

from solvers.core import SolveOptions
from solvers.memory.levels.heads_tails import HeadsTails
from solvers.memory.levels.hierarchy import HierarchyProblem
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_all_home
from solvers.memory.levels.hierarchy_heads_tails import (
    heads_tails_window_search, hierarchy_objective, retime_hierarchy_heads_tails, solve_hierarchy_heads_tails,
    validate_hierarchy_heads_tails,
)
from solvers.memory.levels.link_holds import LinkHold
from tests.solvers.memory.test_hierarchy_link_holds import (
    BruteForceTooLarge, brute_force_objective, problems_with_holds,
)
from tests.sweeps import examples, random_sweep


def options() -> SolveOptions:
    return SolveOptions(time_limit_s=2, num_workers=1, random_seed=0, search="deterministic")


def test_a_window_places_the_receive_before_the_op_that_shares_main_memory():
    # Op 0 (compute 5, released at 3) writes y (6 B) at main (2 B/cycle: 3 cycles, 600 shares);
    # op 1 (compute 5, released at 4) reads y and the received x (4 + 6 B at main: 5 cycles, all
    # 1,000 shares). x's RECV holds all of main for 2 cycles from cycle 0. Every baseline ranks
    # the RECV after op 0 (op 0 starts first in it), so it waits for op 0's end: RECV [8, 10),
    # op 1 [10, 15): 15. The window (all ops) puts the RECV at [0, 2), before op 0's release:
    # op 0 [3, 8), op 1 [8, 13): 13, the lower bound.
    p = HierarchyProblem((5, 5), ((), (0, 1)), ((1,), ()), (4, 6), (4, 13, 1000),
                         (Fraction(4), Fraction(2), Fraction(1)), 1, ((0, 1), (1, 2)), shared_bandwidth=True)
    ht = HeadsTails(op_release=(3, 4), link_holds=(LinkHold("recv", 2, 1000, op=1, tensors=(0,)),))
    r = solve_hierarchy_heads_tails(p, ht, options(), max_model_ops=0)
    assert r.stats["baseline_objective"] == 15 and r.stats["lower_bound"] == 13
    assert r.objective == 13 and r.status.value == "OPTIMAL"
    assert r.stats["window_search"]["windows_improved"] == 1
    s = r.solution
    assert (s.link_starts, s.op_start) == ((0,), (3, 8)) and validate_hierarchy_heads_tails(p, s, ht) == []


@random_sweep
@settings(max_examples=examples(8, 80), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problems_with_holds())
def test_windows_with_holds_are_valid_never_worse_than_their_start_and_never_below_the_optimum(case):
    # From everything at home re-timed under the holds (the windows' start), with no lower bound
    # to stop at, so every draw runs its windows.
    p, ht = case
    at_home = plan_hierarchy_all_home(p)
    if at_home is None:  # the homes alone overflow a level: no such start
        reject()
    try:
        start = retime_hierarchy_heads_tails(p, at_home, ht)
    except ValueError:  # its DMA order deadlocks under the holds: no start
        reject()
    found, info = heads_tails_window_search(p, ht, start, 0, options())
    assert info["windows"] >= 1
    assert validate_hierarchy_heads_tails(p, found, ht) == []
    assert hierarchy_objective(p, found, ht) <= hierarchy_objective(p, start, ht)
    try:
        optimum = brute_force_objective(p, ht)
    except BruteForceTooLarge:
        optimum = None
    if optimum is not None:
        assert optimum <= hierarchy_objective(p, found, ht)
    again, _ = heads_tails_window_search(p, ht, start, 0, options())
    assert again == found  # deterministic
