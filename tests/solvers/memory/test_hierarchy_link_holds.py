"""Link holds over N levels (shared bandwidth): hand cases and the N-level heads/tails solve with
holds against a brute force over every decision set and start order."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.memory.levels.heads_tails import HeadsTails
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move
from solvers.memory.levels.hierarchy_heads_tails import (
    hierarchy_heads_tails_lower_bound, hierarchy_objective, retime_hierarchy_heads_tails, solve_hierarchy_heads_tails,
    validate_hierarchy_heads_tails,
)
from solvers.memory.levels.hierarchy_link_holds import hierarchy_hold_violations
from solvers.memory.levels.hierarchy_validate import replay_hierarchy
from solvers.memory.levels.link_holds import LinkHold
from solvers.memory.levels.problem import TransferKind
from tests.solvers.memory.test_hierarchy import best_over_levels_and_gaps, hierarchy_problems, move_choices
from tests.sweeps import examples, random_sweep

PREFETCH, EVICT = TransferKind.PREFETCH, TransferKind.EVICT


def options() -> SolveOptions:
    return SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def receive_beside_a_main_read() -> tuple[HierarchyProblem, HeadsTails]:
    """Op 0 (compute 2) reads its input w (8 B) and op 1 (compute 1) reads the received x (8 B).
    Levels: 0 (16 B, 8 B/cycle), main 1 (4 B/cycle), host 2; w and x at home in main. A RECV of
    x holds 600 of main's shares for 6 cycles from cycle 0."""
    p = HierarchyProblem((2, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
                         shared_bandwidth=True)
    return p, HeadsTails(link_holds=(LinkHold("recv", 6, 600, head=0, op=1, tensors=(1,)),))


def test_a_receive_holds_main_memory_beside_the_ops_hand_checked():
    # Op 0 reading w at main takes max(2, 8/4) = 2 cycles holding all 1,000 main shares, so it
    # cannot run beside the 600-share RECV: RECV [0, 6), op 0 [6, 8), op 1 reads x at main
    # [8, 10). Fetching w to level 0 (8 / min(8, 4) = 2 cycles, 1,000 main shares too) cannot
    # run beside the RECV either. Op 0 first instead: op 0 [0, 2), RECV [2, 8), op 1 [8, 10).
    # Fetching x to level 0 after the RECV (2 cycles, all of main) and reading it there (1) gives
    # 6 + 2 + 1 beside op 0's 2 elsewhere: 11. So 10, which the model proves; the chain bound is
    # the RECV's 6 plus op 1 at its shortest (x at level 0: 1 cycle), 7.
    p, ht = receive_beside_a_main_read()
    r = solve_hierarchy_heads_tails(p, ht, options())
    assert r.status is Status.OPTIMAL and r.objective == r.bound == 10
    assert validate_hierarchy_heads_tails(p, r.solution, ht) == []
    assert hierarchy_heads_tails_lower_bound(p, ht) == 7
    # Planted: op 0 at main beside the RECV over-subscribes main; op 1 before the RECV ends.
    planted = HierarchySolution(((1, 1), (1, 1)), ((False, False), (False, False)), (), (0, 6), (2, 2),
                                link_starts=(0,))
    assert hierarchy_hold_violations(p, planted, ht.link_holds) == [
        "level 1 bandwidth: 1600 of 1000 shares at cycle 0 (op 0, recv link hold 0)"]
    late = dataclasses.replace(planted, op_start=(6, 4), link_starts=(0,))
    assert "op 1 starts at 4 before recv link hold 0 ends at 6" in hierarchy_hold_violations(p, late, ht.link_holds)


def test_the_replay_places_a_hold_in_its_planned_order():
    # The same decisions (everything at main), re-timed with the RECV ranked first (its planned
    # start 0) and then ranked after op 0 (planned start 2): 10 both ways, in two orders.
    p, ht = receive_beside_a_main_read()
    s = HierarchySolution(((1, 1), (1, 1)), ((False, False), (False, False)), (), (6, 8), (2, 2), link_starts=(0,))
    first = replay_hierarchy(p, s, link_holds=ht.link_holds)
    assert (first.op_start, first.link_start) == ((6, 8), (0,))
    second = replay_hierarchy(p, dataclasses.replace(s, op_start=(0, 8), link_starts=(2,)), link_holds=ht.link_holds)
    assert (second.op_start, second.link_start) == ((0, 8), (2,))


def test_a_send_waits_for_the_eviction_home_and_counts_its_tail():
    # Op 0 writes y (8 B, live-out, sent) at level 0 (1 cycle) or at main (2 cycles). The SEND
    # (4 cycles, 1,000 shares, tail 3) starts after y is at home: written at main, 2 + 4 + 3 = 9;
    # at level 0 then evicted (2 cycles, all of main), 1 + 2 + 4 + 3 = 10. So y is written at main.
    p = HierarchyProblem((1,), ((),), ((0,),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)), live_out=(0,),
                         shared_bandwidth=True)
    ht = HeadsTails(link_holds=(LinkHold("send", 4, 1000, tail=3, op=0, tensors=(0,)),))
    r = solve_hierarchy_heads_tails(p, ht, options())
    assert r.status is Status.OPTIMAL and r.objective == 9 and r.solution.level[0] == (1, 1)
    evicted = HierarchySolution(((0, 0),), ((False, False),), (Move(EVICT, 0, 1, 0, 0, 1, 0, 1, 1, 2),), (0,), (1,),
                                link_starts=(3,))
    timed = retime_hierarchy_heads_tails(p, evicted, ht)
    assert timed.link_starts == (3,) and hierarchy_objective(p, timed, ht) == 10
    early = dataclasses.replace(evicted, link_starts=(2,))
    assert "send link hold 0 starts at 2 before dma 0 ends at 3" in hierarchy_hold_violations(p, early, ht.link_holds)


# ------------------------------------------------------------------ against brute force ---------

@st.composite
def problems_with_holds(draw):
    """test_hierarchy's three-level problems under sharing, with a RECV of an input at home in
    main memory (its first reader waits) and a SEND of a live-out tensor (after its producer and
    its eviction home, with a tail), each of a drawn length and share, the SEND sometimes after
    the RECV on one link; and drawn op releases."""
    p = dataclasses.replace(draw(hierarchy_problems()), shared_bandwidth=True)
    n, nt = p.num_ops, p.num_tensors
    holds = []
    inputs = [t for t in range(nt) if not p.is_real(p.accesses(t)[0]) and p.home(t) == p.main_level
              and len(p.accesses(t)) > 1]
    if inputs and draw(st.booleans()):
        t = draw(st.sampled_from(inputs))
        holds.append(LinkHold("recv", draw(st.integers(1, 5)), draw(st.sampled_from((300, 600, 1000))),
                              head=draw(st.integers(0, 4)), op=p.accesses(t)[1], tensors=(t,)))
    if p.live_out and draw(st.booleans()):
        t = draw(st.sampled_from(p.live_out))
        after = 0 if holds and draw(st.booleans()) else -1
        holds.append(LinkHold("send", draw(st.integers(1, 5)), draw(st.sampled_from((300, 600, 1000))),
                              tail=draw(st.integers(0, 4)), op=p.accesses(t)[0], tensors=(t,), after=after))
    if not holds:
        reject()
    return p, HeadsTails(op_release=tuple(draw(st.integers(0, 4)) for _ in range(n)), link_holds=tuple(holds))


BRUTE_FORCE_DRAFTS = 20_000


class BruteForceTooLarge(Exception):
    """The draw needs more than :data:`BRUTE_FORCE_DRAFTS` drafts."""


def brute_force_objective(p: HierarchyProblem, ht: HeadsTails) -> int | None:
    """The least objective over every level, kept gap, trigger, release, DMA queue order and
    interleaving of ops, queue and holds (the shared list schedule's priority order), each
    re-timed under the heads and holds and kept when the validator accepts it. A valid plan is
    re-timed never later in its own start order, so this is the optimum."""
    best: list[int] = []
    drafts = itertools.count(1)
    n, holds = p.num_ops, ht.link_holds

    def plans(q, level, kept):
        need, choices = move_choices(q, level, kept)
        for picks in itertools.product(*choices):
            moves = [(kind, t, gap, hop, a, b, k, r) for (kind, t, gap, hop, a, b), (k, r) in zip(need, picks)]
            for order in itertools.permutations(moves):
                for hold_rank in itertools.permutations(range(len(holds))):
                    for slots in _interleavings(n, len(order), len(holds)):
                        if next(drafts) > BRUTE_FORCE_DRAFTS:
                            raise BruteForceTooLarge
                        op_slots, dma_slots, hold_slots = slots
                        queue = tuple(Move(kind, t, gap, hop, a, b, k, r, slot, q.hop_cycles(t, a, b))
                                      for (kind, t, gap, hop, a, b, k, r), slot in zip(order, dma_slots))
                        starts = tuple(hold_slots[hold_rank[k]] for k in range(len(holds)))
                        draft = HierarchySolution(level, kept, queue, tuple(op_slots), (0,) * n, (), starts)
                        try:
                            s = retime_hierarchy_heads_tails(q, draft, ht)
                        except ValueError:  # the queue order deadlocks
                            continue
                        if validate_hierarchy_heads_tails(q, s, ht) == []:
                            best.append(hierarchy_objective(q, s, ht))
        return ()

    best_over_levels_and_gaps(p, plans)
    return min(best, default=None)


def _interleavings(n: int, m: int, h: int):
    """Every assignment of distinct ranks 0..n+m+h-1 to n ops (in order), m queued moves (in
    order) and h holds (in the order given by the caller)."""
    total = n + m + h
    for ops in itertools.combinations(range(total), n):
        rest = [x for x in range(total) if x not in ops]
        for dmas in itertools.combinations(rest, m):
            yield ops, dmas, [x for x in rest if x not in dmas]


@random_sweep
@settings(max_examples=examples(10, 100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problems_with_holds())
def test_cpsat_with_holds_equals_brute_force_and_the_bound_holds(case):
    p, ht = case
    try:  # a draw too large to enumerate is drawn again (by its size alone: the same on any machine)
        brute = brute_force_objective(p, ht)
    except BruteForceTooLarge:
        reject()
    r = solve_hierarchy_heads_tails(p, ht, options())
    if brute is None:
        assert r.solution is None
        return
    assert hierarchy_heads_tails_lower_bound(p, ht) <= brute
    assert r.status is Status.OPTIMAL and r.objective == r.bound == brute
    assert validate_hierarchy_heads_tails(p, r.solution, ht) == []
    replayed = retime_hierarchy_heads_tails(p, r.solution, ht)
    assert hierarchy_objective(p, replayed, ht) == r.objective
