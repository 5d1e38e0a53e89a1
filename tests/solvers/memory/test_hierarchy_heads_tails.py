"""Heads and tails over N levels (issue 14): arrivals, tails and send deadlines of a linked device."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.memory.levels.heads_tails import HeadsTails, SentDeadline
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move
from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver
from solvers.memory.levels.hierarchy_heads_tails import (
    add_hierarchy_heads_tails, hierarchy_heads_tails_lower_bound, hierarchy_objective, retime_hierarchy_heads_tails, solve_hierarchy_heads_tails,
    validate_hierarchy_heads_tails,
)
from solvers.memory.levels.hierarchy_model import build_hierarchy_model, model_horizon
from solvers.memory.levels.hierarchy_validate import replay_hierarchy, validate_hierarchy
from solvers.memory.levels.problem import TransferKind
from tests.solvers.memory.test_hierarchy import best_over_levels_and_gaps, hierarchy_problems, move_choices
from tests.sweeps import examples, random_sweep

PREFETCH, EVICT = TransferKind.PREFETCH, TransferKind.EVICT


def options() -> SolveOptions:
    return SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def arrival_problem() -> HierarchyProblem:
    """Op 0 (compute 10) touches nothing; op 1 reads the received x (8 B), op 2 the weight w (8 B).
    Levels: 0 (8 B/cycle), 1 (4), main 2 (1 B/cycle); every DMA path at the slower end's rate."""
    return HierarchyProblem((10, 1, 1), ((), (0,), (1,)), ((), (), ()), (8, 8), (64, 128, 1024), (8, 4, 1), 2,
                            ((0, 1), (1, 2), (0, 2)), tensor_names=("x", "w"))


ARRIVAL = HeadsTails(op_release=(0, 12, 0), tensor_ready=(12, 0))


def test_a_plan_that_sees_the_arrival_beats_the_plan_made_alone_hand_checked():
    # Alone: x main -> level 0 [0, 8) under op 0, w [8, 16); op 1 [10, 11), op 2 [16, 17): 17.
    # x arrives at 12: the same decisions re-timed fetch x [12, 20), w [20, 28) behind it in the
    # queue, op 1 [20, 21), op 2 [28, 29): 29. Planned with the arrival, w goes first [0, 8), op 1
    # reads x in place [12, 20), op 2 reads w at level 0 [20, 21): 21, and nothing ends earlier:
    # op 1 cannot start before 12, and then either reads x from main (8) or waits for its fetch (8).
    p = arrival_problem()
    alone = CpSatHierarchySolver().solve(p, options())
    assert (alone.status, alone.objective) == (Status.OPTIMAL, 17)
    retimed = retime_hierarchy_heads_tails(p, alone.solution, ARRIVAL)
    assert hierarchy_objective(p, retimed, ARRIVAL) == 29
    assert validate_hierarchy_heads_tails(p, retimed, ARRIVAL) == []
    r = solve_hierarchy_heads_tails(p, ARRIVAL, options())
    assert (r.status, r.objective, r.bound) == (Status.OPTIMAL, 21, 21)
    s = r.solution
    assert s.level == ((2, 2), (2, 0)) and s.op_start == (0, 12, 20)
    assert [(m.tensor, m.src_level, m.dst_level, m.start_cycle) for m in s.moves] == [(1, 2, 0, 0)]
    assert validate_hierarchy_heads_tails(p, s, ARRIVAL) == []
    # Replayed under the heads, the plan's own times come back.
    rep = replay_hierarchy(p, s, ARRIVAL.op_release, ARRIVAL.tensor_ready)
    assert rep.op_start == s.op_start and rep.makespan_cycles == 21


def test_a_sent_tensor_tail_writes_it_home_first_hand_checked():
    # Op 0 (compute 1) writes y (8 B, sent: live-out, tail 20); op 1 (compute 1) reads w (8 B).
    # Alone the best plan writes y at level 0 (1 cycle) and evicts it at 1 B/cycle [1, 9) while
    # op 1 reads w in place [1, 9): 9, or fetches w first. Under the tail y must be home early:
    # written at main by op 0 (8 cycles: home at 8) beats level 0 and an eviction (home at 9),
    # so the objective is 8 + 20 = 28 (w's fetch [0, 8) under op 0, op 1 [8, 9)).
    p = HierarchyProblem((1, 1), ((), (1,)), ((0,), ()), (8, 8), (8, 128, 1024), (8, 4, 1), 2,
                         ((0, 1), (1, 2), (0, 2)), live_out=(0,))
    ht = HeadsTails(tensor_tail=(20, 0))
    r = solve_hierarchy_heads_tails(p, ht, options())
    assert (r.status, r.objective) == (Status.OPTIMAL, 28)
    assert r.solution.level[0][0] == 2 and r.solution.op_start == (0, 8)
    assert validate_hierarchy_heads_tails(p, r.solution, ht) == []
    assert hierarchy_heads_tails_lower_bound(p, ht) <= 28


def test_a_send_deadline_keeps_the_sent_copy_from_reaching_home_after_what_waits_for_it():
    # Op 0 writes y (sent); op 2 waits, through the receiver, for y at home plus a lag of 5.
    # Writing y at level 0 and evicting it only after op 2 (as a plan alone may, to keep it
    # fast for op 1) would deadlock; the plan under the deadline gets y home by op 2's start - 5.
    p = HierarchyProblem((1, 1, 1), ((), (0,), ()), ((0,), (), ()), (8,), (64, 128, 1024), (8, 4, 1), 2,
                         ((0, 1), (1, 2), (0, 2)), live_out=(0,))
    ht = HeadsTails(deadlines=(SentDeadline(0, op=2, lag_cycles=5),))
    late = HierarchySolution(((0, 0, 2),), ((False, True, False),),
                             (Move(EVICT, 0, 2, 0, 0, 2, 1, 3, 2, 8),), (0, 1, 2), (1, 1, 1))
    assert validate_hierarchy(p, late) == []
    assert validate_hierarchy_heads_tails(p, late, ht) == [
        "op 2 starts at 2, before sent tensor 0 is at home at 10 + lag 5"]
    r = solve_hierarchy_heads_tails(p, ht, options(), incumbent=late)
    assert r.status is Status.OPTIMAL and validate_hierarchy_heads_tails(p, r.solution, ht) == []
    home = max([m.end_cycle for m in r.solution.moves if m.kind is EVICT]
               + [r.solution.op_start[0] + r.solution.op_duration[0]] * (r.solution.level[0][0] == 2))
    assert r.solution.op_start[2] >= home + 5


def test_the_validator_refuses_a_fetch_before_its_arrival_and_an_op_before_its_release():
    p = arrival_problem()
    alone = CpSatHierarchySolver().solve(p, options()).solution  # fetches x from cycle 0
    assert validate_hierarchy(p, alone) == []
    errors = validate_hierarchy_heads_tails(p, alone, ARRIVAL)
    assert "a fetch of tensor x (hop 0) starts at 0, before it arrives at 12" in errors
    assert "op 1 starts at 10, before its release 12" in errors
    # The same decisions re-timed under the heads pass.
    assert validate_hierarchy_heads_tails(p, retime_hierarchy_heads_tails(p, alone, ARRIVAL), ARRIVAL) == []


# ------------------------------------------------------------------ against brute force ---------

@st.composite
def problems_with_heads(draw):
    """The three-level problems of test_hierarchy with releases, arrivals of inputs, tails of
    live-out tensors and ops, and a send deadline on a later op where one can be."""
    p = draw(hierarchy_problems())
    n, nt = p.num_ops, p.num_tensors
    inputs = [t for t in range(nt) if not p.is_real(p.accesses(t)[0])]
    ht = HeadsTails(op_release=tuple(draw(st.integers(0, 8)) for _ in range(n)),
                    op_tail=tuple(draw(st.integers(0, 6)) for _ in range(n)),
                    tensor_ready=tuple(draw(st.integers(0, 10)) if t in inputs else 0 for t in range(nt)),
                    tensor_tail=tuple(draw(st.integers(0, 12)) if t in p.live_out else 0 for t in range(nt)))
    sent = [t for t in p.live_out if p.accesses(t)[0] < n - 1]
    if sent:
        t = draw(st.sampled_from(sent))
        op = draw(st.integers(p.accesses(t)[0] + 1, n - 1))
        ht = dataclasses.replace(ht, deadlines=(SentDeadline(t, op=op, lag_cycles=draw(st.integers(0, 6))),))
    return p, ht


def brute_force_objective(p: HierarchyProblem, ht: HeadsTails) -> int | None:
    """The least objective over every level, kept gap, trigger, release and DMA queue order,
    each re-timed as soon as the heads and deadlines allow (optimal for fixed orders: every rule
    is "after an end" and the objective grows with every end), among the valid plans."""
    best: list[int] = []

    def plans(q, level, kept):
        need, choices = move_choices(q, level, kept)
        for picks in itertools.product(*choices):
            moves = [Move(kind, t, gap, hop, a, b, k, r, 0, q.hop_cycles(t, a, b))
                     for (kind, t, gap, hop, a, b), (k, r) in zip(need, picks)]
            for order in itertools.permutations(moves):
                draft = HierarchySolution(level, kept, order, (0,) * q.num_ops, (0,) * q.num_ops)
                try:
                    s = retime_hierarchy_heads_tails(q, draft, ht)
                except ValueError:  # the queue order or a deadline deadlocks
                    continue
                if validate_hierarchy_heads_tails(q, s, ht) == []:
                    best.append(hierarchy_objective(q, s, ht))
        return ()

    best_over_levels_and_gaps(p, plans)
    return min(best, default=None)


# A draw whose model alone CP-SAT solves to 13 but reports as the float 12.999999999999998
# (its presolve rescales the objective): compare the objective variable's integer value.
FLOAT_OBJECTIVE = (
    HierarchyProblem((2,), ((),), ((1,),), (1, 6), (2, 6, 1000), (Fraction(4), Fraction(2), Fraction(1)), 1,
                     ((0, 1), (1, 2), (0, 2)), tensor_home=(2, 1), live_out=(1,)),
    HeadsTails(op_release=(3,), op_tail=(3,), tensor_ready=(0, 0), tensor_tail=(0, 7)))


@random_sweep
@settings(max_examples=examples(15, 120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems_with_heads())
@example(FLOAT_OBJECTIVE)
def test_cpsat_under_heads_equals_brute_force_and_the_bound_holds(case):
    p, ht = case
    r = solve_hierarchy_heads_tails(p, ht, options())
    brute = brute_force_objective(p, ht)
    if brute is None:
        assert r.solution is None
        return
    assert hierarchy_heads_tails_lower_bound(p, ht) <= brute
    assert r.status is Status.OPTIMAL and r.objective == r.bound == brute
    assert validate_hierarchy_heads_tails(p, r.solution, ht) == []
    replayed = retime_hierarchy_heads_tails(p, r.solution, ht)
    assert replayed.op_start == r.solution.op_start and hierarchy_objective(p, replayed, ht) == r.objective
    # The model alone (no baseline, no re-timing): its own plan obeys the heads and deadlines,
    # and its optimum is the brute force's.
    horizon = model_horizon(p) + 100  # above every release, tail and lag drawn
    model, v = build_hierarchy_model(p, horizon)
    objective = add_hierarchy_heads_tails(model, p, v, ht, horizon)
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    own = v.extract(solver)
    assert validate_hierarchy_heads_tails(p, own, ht) == [] and solver.value(objective) == brute
    assert hierarchy_objective(p, own, ht) <= brute
