"""Side prefixes (solvers.scheduling.side_ends): the side sources the main span drops come back
in the prefix of the cut op they feed. The prefix chain bound with the prefix's exact optimum,
and the CP-SAT segment bound that proves it, never exceed the exhaustive optimum on small
chains with side sources (tight memory, a slow unlimited device, two streams, links), and a
hand-checked fork reaches its optimum."""

from __future__ import annotations

import random

from solvers.core import SolveOptions
from solvers.scheduling import SchedulingProblem, lower_bound
from solvers.scheduling.bounds import bound_segments, segment_floor
from solvers.scheduling.cpsat.segments import segment_lower_bound
from solvers.scheduling.side_ends import prefix_chain_bound, side_prefixes
from tests.solvers.test_scheduling_bruteforce import brute_force


def side_source_chain(rng: random.Random) -> SchedulingProblem:
    """A chain (or fork-join) of 3-4 ops and 1-2 side sources with real durations feeding later
    ops of it, sometimes through a free weight source of their own; 2 alike devices (one with 2
    streams sometimes) with memory that may not hold every weight, or, up to 5 ops, a slower
    third without a limit; one link per device pair, transfers 0-5; 6 ops at most (the
    exhaustive optimum of 7 ops on 3 devices takes up to a minute)."""
    main = rng.randint(3, 4)
    edges = [(i, i + 1) for i in range(main - 1)]
    if main >= 4 and rng.random() < 0.5:
        edges = [(0, 1), (0, 2), (1, 3), (2, 3)] + [(i, i + 1) for i in range(3, main - 1)]
    n = main
    for _ in range(rng.randint(1, 2)):
        edges.append((n, rng.randint(1, main - 1)))
        n += 1
    if n < 6 and rng.random() < 0.3:  # a free weight source feeding the last side source
        edges.append((n, n - 1))
        n += 1
    slow = n <= 5 and rng.random() < 0.4
    durations = []
    for i in range(n):
        fast = 0 if i == n - 1 and (n - 1, n - 2) in edges else rng.randint(1 if i >= main else 0, 4)
        durations.append((fast, fast) + ((2 * fast + 1,) if slow else ()))
    link_of = ((-1, 0, 1), (0, -1, 2), (1, 2, -1)) if slow else ((-1, 0), (0, -1))
    nl = 3 if slow else 1
    transfer = tuple(tuple(rng.randint(0, 5) for _ in range(nl)) for _ in edges)
    resident = tuple(rng.randint(0, 4) for _ in range(n))
    cap = rng.randint(max(resident), max(max(resident), sum(resident)))
    streams = (1, 1, 1) if slow else (rng.choice((1, 2)), 1)
    return SchedulingProblem(tuple(durations), tuple((u, v, 0) for u, v in edges), streams, link_of, transfer,
                             device_memory_bytes=(cap, cap) + ((0,) if slow else ()), op_resident_bytes=resident)


def test_prefix_chain_bound_with_the_exact_prefix_optimum_is_at_most_the_optimum():
    """The strongest prefix value there is (its exhaustive optimum) still gives a sound bound."""
    rng = random.Random(11)
    checked = stronger = 0
    for _ in range(150):
        p = side_source_chain(rng)
        prefixes = side_prefixes(p)
        if not prefixes:
            continue
        opt = brute_force(p)
        if opt is None:
            continue
        span, segs = bound_segments(p)
        floors = [segment_floor(sub) for sub, _ in segs]
        for k, prefix in prefixes:
            value = prefix_chain_bound(span, segs, floors, k, brute_force(prefix))
            assert value <= opt, (p, k, value, opt)
            checked += 1
            stronger += value > lower_bound(p)
    assert checked >= 100 and stronger >= 20, (checked, stronger)  # 114 and 26


def test_segment_bound_with_proven_prefixes_is_at_most_the_optimum():
    rng = random.Random(5)
    checked = 0
    for _ in range(120):
        p = side_source_chain(rng)
        if not side_prefixes(p):
            continue
        opt = brute_force(p)
        if opt is None:
            continue
        bound, _ = segment_lower_bound(p, SolveOptions(), 0.5)
        assert bound <= opt, (p, bound, opt)
        checked += 1
        if checked == 20:
            break
    assert checked == 20


def test_a_side_source_counts_again_in_its_prefix():
    # a(1) -> {b(4), c(4)} -> d(1), and a side source s(2) -> d; two single-stream devices,
    # every transfer 100 cycles. The optimum runs all five on one device: 1 + 4 + 4 + 2 + 1 =
    # 12. Without s (the main span) the segment chain proves 1 + (4 + 4 + 1) = 10; the prefix
    # of d is the whole graph, whose optimum CP-SAT proves: 12.
    p = SchedulingProblem(((1, 1), (4, 4), (4, 4), (1, 1), (2, 2)),
                          ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (4, 3, 0)), (1, 1),
                          ((-1, 0), (0, -1)), ((100,),) * 5)
    assert lower_bound(p) == 10
    assert [(k, pre.num_ops) for k, pre in side_prefixes(p)] == [(1, 5)]
    bound, stats = segment_lower_bound(p, SolveOptions(), 1.0)
    assert bound == stats["side_prefix_bound"] == 12 == brute_force(p)


def test_the_prefix_adds_the_chain_after_it():
    # a(2) -> b(1) -> c(3) -> d(2) and a side source s(1) -> b, two devices at 100 per transfer:
    # the prefix of b (a, s, b) takes 2 + 1 + 1 = 4 on one device, and c and d follow: 4 + 3 + 2
    # = 9, the optimum; the span a -> b -> c -> d alone proves 8.
    p = SchedulingProblem(((2, 2), (1, 1), (3, 3), (2, 2), (1, 1)),
                          ((0, 1, 0), (1, 2, 0), (2, 3, 0), (4, 1, 0)), (1, 1),
                          ((-1, 0), (0, -1)), ((100,),) * 4)
    assert lower_bound(p) == 8
    (k, prefix), = side_prefixes(p)
    assert (k, prefix.num_ops) == (1, 3)
    bound, _ = segment_lower_bound(p, SolveOptions(), 1.0)
    assert bound == 9 == brute_force(p)


def test_no_prefix_without_side_ends():
    p = SchedulingProblem(((1,), (2,), (3,)), ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    assert side_prefixes(p) == []
