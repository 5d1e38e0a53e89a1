"""Link transfers' ends in the level problem under shared bandwidth (issue 14, item 4 with item 3).

A RECV or SEND on a shared device holds a share of its main (slow) level for the transfer's
span (:mod:`solvers.memory.levels.link_holds`). The heads/tails model places it as an interval
in the slow level's Cumulative; the replay, the validator and the chain bound see it too.
Checked by hand and against the shared brute force (every decision set, every start order of
ops, DMAs and holds: any valid schedule is re-timed no later in its own start order).
"""

from __future__ import annotations

from dataclasses import replace

from fractions import Fraction

from hypothesis import HealthCheck, assume, example, given, reject, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.dag import WaitDeadlock
from solvers.memory.levels import LevelProblem, LevelSolution, Transfer, op_durations, plan_greedy
from solvers.memory.levels.heads_tails import (
    HeadsTails, heads_tails_lower_bound, objective_cycles, retime_heads_tails, solve_heads_tails,
    validate_heads_tails,
)
from solvers.memory.levels.link_holds import LinkHold, hold_violations
from tests.solvers.memory.strategies import level_problems
from tests.solvers.memory.test_shared_streams import _interleavings
from tests.solvers.test_memory_levels import level_drafts
from tests.sweeps import examples, random_sweep

OPTS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)

# Op 0 reads weight A (8 B) and op 1 the received copy R (4 B), at 1 B/cycle from the slow level:
# memory-bound, each holds all of it. The fast level (2 B) holds neither.
RECEIVER = LevelProblem((0, 0), ((0,), (1,)), ((), ()), (8, 4), (2, 10**6), (4, 1), shared_bandwidth=True)


def test_a_receive_holds_the_slow_level_so_the_op_beside_it_waits():
    # R arrives over a link whose RECV holds all of the slow level for 8 cycles from cycle 0.
    # Before, the arrival was a fixed release of op 1 at 8 and op 0 read A under the RECV:
    # op 0 [0, 8), op 1 [8, 12) = 12, which the shares forbid. Now op 0 and the RECV take turns:
    # RECV [0, 8), op 0 [8, 16), op 1 [16, 20) (or op 0 first, the same 20): proven optimal.
    fixed = HeadsTails(op_release=(0, 8), tensor_ready=(0, 8))
    held = HeadsTails(link_holds=(LinkHold("recv", 8, 1000, op=1, tensors=(1,)),))
    before = solve_heads_tails(RECEIVER, fixed, OPTS)
    assert (before.status, before.objective, before.solution.op_start) == (Status.OPTIMAL, 12, (0, 8))
    r = solve_heads_tails(RECEIVER, held, OPTS)
    assert (r.status, r.objective, r.bound) == (Status.OPTIMAL, 20, 20)
    assert validate_heads_tails(RECEIVER, r.solution, held) == []
    assert objective_cycles(RECEIVER, retime_heads_tails(RECEIVER, r.solution, held), held) == 20
    # the plan made without the hold, re-timed with it, takes the same 20 (it was 12 in its model)
    assert objective_cycles(RECEIVER, retime_heads_tails(RECEIVER, before.solution, held), held) == 20
    # ... and with the RECV planted where the old plan assumed it ran, the validator refuses it
    planted = replace(before.solution, link_starts=(0,))
    assert hold_violations(RECEIVER, planted, held.link_holds) == [
        "slow level bandwidth: 2000 of 1000 shares at cycle 0 (op 0, recv link hold 0)"]
    assert brute_force(RECEIVER, held) == 20 and heads_tails_lower_bound(RECEIVER, held) <= 20


def test_a_part_share_receive_overlaps_a_compute_bound_op():
    # A compute-bound op 0 (compute 16, reading A at 1 B/cycle: 500 shares) overlaps a RECV of 500.
    p = replace(RECEIVER, compute_cycles=(16, 0))
    held = HeadsTails(link_holds=(LinkHold("recv", 8, 500, op=1, tensors=(1,)),))
    r = solve_heads_tails(p, held, OPTS)
    assert (r.status, r.objective, r.solution.op_start, r.solution.link_starts) == (Status.OPTIMAL, 20, (0, 16), (0,))


def test_a_send_waits_for_its_slow_copy_and_its_tail_counts_from_its_end():
    # Op 0 writes S (4 B), which a link sends (all of the slow level for 6 cycles, then 10 cycles
    # on the receiver); op 1 then reads A (8 B) slow, memory-bound. Written slow: op 0 [0, 4).
    # Send first: [4, 10), tail 10 -> 20, op 1 [10, 18). Op 1 first: [4, 12), send [12, 18) + 10
    # = 28. Before (the tail counted from the slow copy, the SEND unseen): 4 + 16 = 20 with op 1
    # under the send; now 20 with op 1 after it: 18, and the objective 20.
    p = LevelProblem((0, 0), ((), (1,)), ((0,), ()), (4, 8), (2, 10**6), (4, 1), live_out=(0,),
                     shared_bandwidth=True)
    held = HeadsTails(tensor_tail=(16, 0), link_holds=(LinkHold("send", 6, 1000, tail=10, op=0, tensors=(0,)),))
    r = solve_heads_tails(p, held, OPTS)
    assert (r.status, r.objective, r.solution.op_start, r.solution.link_starts) == (Status.OPTIMAL, 20, (0, 10), (4,))
    assert validate_heads_tails(p, r.solution, held) == [] and brute_force(p, held) == 20
    # a head on the link (its previous transfer elsewhere) moves it: send [7, 13) + 10 = 23
    late = HeadsTails(tensor_tail=(16, 0), link_holds=(replace(held.link_holds[0], head=7),))
    assert solve_heads_tails(p, late, OPTS).objective == 23 == brute_force(p, late)


def test_holds_on_one_link_run_one_after_the_other():
    # Two RECVs of 300 shares each would fit together (beside each other, not beside op 0's 1000);
    # on one link the second waits for the first: op 0 8 + 5 + 5 + op 1 4 = 22, in either order.
    two = (LinkHold("recv", 5, 300, op=1, tensors=(1,)), LinkHold("recv", 5, 300, op=1, tensors=(1,), after=0))
    r = solve_heads_tails(RECEIVER, HeadsTails(link_holds=two), OPTS)
    first, second = r.solution.link_starts
    assert (r.status, r.objective, second - first) == (Status.OPTIMAL, 22, 5)
    apart = tuple(replace(h, after=-1) for h in two)  # on two links: together, 8 + 5 + 4 = 17
    assert solve_heads_tails(RECEIVER, HeadsTails(link_holds=apart), OPTS).objective == 17


def test_a_round_trip_lag_moves_a_receive_with_the_send():
    # Op 0 writes S (4 B), sent (6 cycles, all of the slow level); it comes back 3 cycles after
    # the send starts (a lag of 3 from its start) as R' for op 1 (RECV 4 cycles, all of it).
    # Written slow: op 0 [0, 4), send [4, 10), the RECV [10, 14) (it cannot overlap the send
    # although the lag allows 7), op 1 reads R' [14, 18).
    p = LevelProblem((0, 0), ((), (1,)), ((0,), ()), (4, 4), (2, 10**6), (4, 1), live_out=(0,),
                     shared_bandwidth=True)
    holds = (LinkHold("send", 6, 1000, op=0, tensors=(0,)),
             LinkHold("recv", 4, 1000, op=1, tensors=(1,), lags=((0, 3),)))
    ht = HeadsTails(link_holds=holds)
    r = solve_heads_tails(p, ht, OPTS)
    assert (r.status, r.objective, r.solution.link_starts) == (Status.OPTIMAL, 18, (4, 10))
    assert brute_force(p, ht) == 18
    # with half the shares each the RECV starts at its lag: [7, 11), op 1 [11, 15)
    half = HeadsTails(link_holds=tuple(replace(h, shares=500) for h in holds))
    r = solve_heads_tails(p, half, OPTS)
    assert (r.objective, r.solution.link_starts) == (15, (4, 7)) and brute_force(p, half) == 15
    planted = replace(r.solution, link_starts=(4, 6))
    assert hold_violations(p, planted, half.link_holds)[:1] == ["recv link hold 1 starts at 6 before link hold 0 starts at 4 + lag 3"]


def test_holds_need_shared_bandwidth():
    separate = replace(RECEIVER, shared_bandwidth=False)
    try:
        solve_heads_tails(separate, HeadsTails(link_holds=(LinkHold("recv", 1, 1),)), OPTS)
    except ValueError as e:
        assert "only with shared bandwidth" in str(e)
    else:
        raise AssertionError("holds accepted without shared bandwidth")


def _in_order(draft: LevelSolution, order: list, holds: int) -> LevelSolution:
    """The draft with start cycles ranking its ops, DMAs and holds in ``order`` (the replay's priority)."""
    rank = {key: r for r, key in enumerate(order)}
    trs = tuple(Transfer(tr.kind, tr.tensor, tr.gap, tr.trigger_op, tr.release_op, rank.get(("dma", q), 0),
                         tr.duration_cycles) for q, tr in enumerate(draft.transfers))
    return LevelSolution(draft.in_fast, draft.kept, trs, tuple(rank.get(("op", i), 0) for i in range(len(draft.op_start))),
                         draft.op_duration, link_starts=tuple(rank.get(("hold", k), 0) for k in range(holds)))


BRUTE_FORCE_ORDERS = 20_000
"""Start orders the brute force replays before it gives up on a draw (:class:`BruteForceTooLarge`):
their number grows as a multinomial in the ops, DMAs and holds, and one derandomized draw ran
for more than 10 minutes."""


class BruteForceTooLarge(Exception):
    """The draw needs more than :data:`BRUTE_FORCE_ORDERS` start orders."""


def brute_force(p: LevelProblem, ht: HeadsTails, limit: int | None = None) -> int | None:
    """The shared optimum with link holds: min over decisions and start orders (ops of a stream,
    the DMA queue and the holds of a link each in order) of the replayed objective; raises
    :class:`BruteForceTooLarge` after ``limit`` start orders."""
    best = None
    replayed = 0
    unheld = replace(ht, link_holds=())
    for draft in level_drafts(p):
        try:  # the holds only add waits: without them the objective is no larger
            asap = retime_heads_tails(p, draft, unheld)
        except ValueError:
            continue
        if validate_heads_tails(p, asap, unheld) and not any("bandwidth" in e for e in
                                                            validate_heads_tails(p, asap, unheld)):
            continue
        dur = op_durations(p, draft.in_fast)
        streams: dict[int, list] = {}
        for i in range(p.num_ops):
            if dur[i] > 0:
                streams.setdefault(p.stream_of(i), []).append(("op", i))
        links: dict[int, list] = {}
        for k, h in enumerate(ht.link_holds):
            if h.duration_cycles > 0:
                root = k
                while ht.link_holds[root].after >= 0:
                    root = ht.link_holds[root].after
                links.setdefault(root, []).append(("hold", k))
        dmas = [("dma", q) for q, tr in enumerate(draft.transfers) if tr.duration_cycles > 0]
        for order in _interleavings(list(streams.values()) + [dmas] + list(links.values())):
            replayed += 1
            if limit is not None and replayed > limit:
                raise BruteForceTooLarge
            try:
                s = retime_heads_tails(p, _in_order(draft, order, len(ht.link_holds)), ht)
            except ValueError:
                continue
            value = objective_cycles(p, s, ht)
            if (best is None or value < best) and not validate_heads_tails(p, s, ht):
                best = value
    return best


@st.composite
def _problems_with_holds(draw):
    p = draw(level_problems(min_ops=2, max_ops=3, slow_capacity=10**6, dma_rates=(1, 2, 0), fast_rates=(2, 4)))
    p = replace(p, shared_bandwidth=True)
    inputs = [t for t in range(p.num_tensors) if p.accesses(t)[0] == -1 and len(p.accesses(t)) > 1]
    sent = [t for t in p.live_out if p.is_real(p.accesses(t)[0])]
    assume(inputs or sent)
    holds: list[LinkHold] = []
    for _ in range(draw(st.integers(1, 2))):
        common = dict(duration_cycles=draw(st.integers(1, 6)), shares=draw(st.sampled_from((300, 600, 1000))),
                      head=draw(st.integers(0, 5)),
                      after=len(holds) - 1 if holds and draw(st.booleans()) else -1)
        if (inputs and draw(st.booleans())) or not sent:
            t = draw(st.sampled_from(inputs))
            holds.append(LinkHold("recv", op=p.accesses(t)[1], tensors=(t,), **common))
        else:
            t = draw(st.sampled_from(sent))
            holds.append(LinkHold("send", op=p.accesses(t)[0], tensors=(t,), tail=draw(st.integers(0, 6)), **common))
        sends = [j for j, h in enumerate(holds[:-1]) if h.role == "send"]
        if sends and draw(st.booleans()):  # a round trip: after an earlier send, by a lag
            holds[-1] = replace(holds[-1], lags=((draw(st.sampled_from(sends)), draw(st.integers(0, 8))),))
    rows = st.integers(0, 4)
    return p, HeadsTails(op_release=tuple(draw(rows) for _ in range(p.num_ops)), link_holds=tuple(holds))


# A draw (2026-11-28) whose greedy baseline deadlocks under its holds: the recv waits for the
# send (a round trip), the send for the DMAs, the DMAs for the recv. solve_heads_tails raised the
# retiming's ValueError instead of leaving that baseline out.
_DEADLOCKED_BASELINE = (
    LevelProblem((0, 0), ((2,), ()), ((0, 1), ()), (1, 1, 1), (4, 1_000_000), (Fraction(2), Fraction(1)),
                 dma_bytes_per_cycle=Fraction(1), live_out=(1,), fast_only_ops=(0, 1), shared_bandwidth=True),
    HeadsTails(op_release=(0, 0), link_holds=(
        LinkHold("send", duration_cycles=1, shares=300, head=0, tail=0, op=0, tensors=(1,)),
        LinkHold("recv", duration_cycles=1, shares=300, head=0, tail=0, op=0, tensors=(2,), after=0))))


# The full sweep's draw (2026-11-28) whose greedy plan deadlocks under its holds in the test's own
# check below: the recv (after the send) feeds tensor 0's prefetch, queued on the DMA engine before
# tensor 1's eviction, which the send waits for. The solver leaves that baseline out; so does the check.
_DEADLOCKED_GREEDY = (
    LevelProblem((0, 0), ((), (0,)), ((1,), ()), (1, 1, 1), (4, 1_000_000), (Fraction(2), Fraction(1)),
                 dma_bytes_per_cycle=Fraction(1), live_out=(1,), fast_only_ops=(0, 1), shared_bandwidth=True),
    HeadsTails(op_release=(0, 0), link_holds=(
        LinkHold("send", duration_cycles=1, shares=300, head=0, tail=0, op=0, tensors=(1,)),
        LinkHold("recv", duration_cycles=1, shares=300, head=0, tail=0, op=1, tensors=(0,), after=0))))


@random_sweep
@settings(max_examples=examples(12, 200), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_problems_with_holds())
@example(_DEADLOCKED_BASELINE)
@example(_DEADLOCKED_GREEDY)
def test_link_holds_equal_the_brute_force_and_the_bound_stays_below(case):
    p, ht = case
    try:  # a draw too large to enumerate is drawn again (by its size alone: the same on any machine)
        expected = brute_force(p, ht, BRUTE_FORCE_ORDERS)
    except BruteForceTooLarge:
        reject()
    r = solve_heads_tails(p, ht, OPTS)
    if expected is None:
        assert not r.status.has_solution
        return
    assert heads_tails_lower_bound(p, ht) <= expected
    assert r.status is Status.OPTIMAL
    assert validate_heads_tails(p, r.solution, ht) == []
    assert r.objective == expected == objective_cycles(p, r.solution, ht)
    assert r.bound is not None and r.bound <= expected
    g = plan_greedy(p)
    try:  # a greedy plan whose DMA order deadlocks under the holds is no plan (solve_heads_tails leaves it out)
        g = retime_heads_tails(p, g, ht) if g is not None else None
    except WaitDeadlock:
        g = None
    if g is not None:
        assert validate_heads_tails(p, g, ht) == [] and objective_cycles(p, g, ht) >= r.objective
