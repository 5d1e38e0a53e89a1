"""Shared bandwidth over N levels: hand-checked contention, CP-SAT against brute force on tiny
three-level problems, two levels agreeing with the two-level shared solver, and the validator."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

from hypothesis import HealthCheck, given, reject, settings

from solvers.core import Status
from solvers.memory.levels import CpSatLevelSolver, TransferKind
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move, from_level_problem
from solvers.memory.levels.hierarchy_bandwidth import check_hierarchy_bandwidth, hop_shares
from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_greedy, retime_hierarchy
from solvers.memory.levels.hierarchy_validate import replay_hierarchy, validate_hierarchy
from tests.solvers.memory.strategies import level_problems
from tests.solvers.memory.test_hierarchy import (
    best_over_levels_and_gaps, cpsat_options, hierarchy_problems, move_choices,
)

PREFETCH = TransferKind.PREFETCH


def host_reads_and_fetch(shared: bool = True) -> HierarchyProblem:
    """Op 0 reads an 8 B host tensor (8 cycles at 1 B/cycle: all of host); op 1 reads another."""
    return HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64, 1024), (8, 4, 1), 1,
                            ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=shared)


def test_a_host_fetch_waits_for_a_host_read_by_hand():
    p = host_reads_and_fetch()
    hop = Move(PREFETCH, 1, 1, 0, 2, 1, -1, 1, 0, 8)
    overlapped = HierarchySolution(((2, 2), (2, 1)), ((False, False), (False, False)), (hop,), (0, 8), (8, 2))
    assert check_hierarchy_bandwidth(p, overlapped)  # 2000 shares of host at cycle 0
    retimed = retime_hierarchy(p, overlapped)
    # the hop (host -> hbm) starts when op 0 has freed host, op 1 reads hbm (8 / 4 = 2) after it
    assert retimed.moves[0].start_cycle == 8 and retimed.op_start == (0, 16) and retimed.makespan_cycles == 18
    assert validate_hierarchy(p, retimed) == []
    unshared = dataclasses.replace(p, shared_bandwidth=False)
    assert replay_hierarchy(unshared, overlapped).makespan_cycles == 10


def test_cpsat_reads_in_place_when_sharing_makes_the_fetch_wait():
    shared = CpSatHierarchySolver().solve(host_reads_and_fetch(), cpsat_options())
    unshared = CpSatHierarchySolver().solve(host_reads_and_fetch(False), cpsat_options())
    assert shared.status is unshared.status is Status.OPTIMAL
    assert (shared.objective, unshared.objective) == (16, 10)  # 8 + 8 host reads; fetch hidden under op 0
    assert validate_hierarchy(host_reads_and_fetch(), shared.solution) == []


def test_a_hop_holds_its_path_rate_of_both_ends_only():
    p = host_reads_and_fetch()
    assert hop_shares(p, 1, 0) == (500, 1000, 0) and hop_shares(p, 2, 1) == (0, 250, 1000)
    # paths with their own rates (dma_rates): hbm-vmem at 2 B/cycle, hbm-host at 1/2
    q = dataclasses.replace(p, dma_path_bytes_per_cycle=(2, Fraction(1, 2)))
    assert hop_shares(q, 1, 0) == (250, 500, 0) and hop_shares(q, 2, 1) == (0, 125, 500)


def test_a_slow_host_path_lets_its_hop_run_beside_a_host_read():
    # hbm-host at 1/2 B/cycle: the hop (16 + 0 cycles) holds 500 of host; op 0 reading host
    # with compute 16 holds ceil(1000 * 8 / 16) = 500: they fit side by side.
    p = dataclasses.replace(host_reads_and_fetch(), compute_cycles=(16, 1),
                            dma_path_bytes_per_cycle=(0, Fraction(1, 2)))
    hop = Move(PREFETCH, 1, 1, 0, 2, 1, -1, 1, 0, 16)
    s = HierarchySolution(((2, 2), (2, 1)), ((False, False), (False, False)), (hop,), (0, 16), (16, 2))
    assert check_hierarchy_bandwidth(p, s) == [] and validate_hierarchy(p, s) == []
    assert retime_hierarchy(p, s) == s


BRUTE_FORCE_DRAFTS = 40_000
"""Drafts the shared brute force re-times before it gives up on a draw: it grows as
m!·C(n+m, n) in the m moves, and one draw of the three-level strategy ran past 15 minutes."""


class BruteForceTooLarge(Exception):
    """The draw needs more than :data:`BRUTE_FORCE_DRAFTS` drafts."""


def shared_brute_force(p: HierarchyProblem, limit: int | None = None) -> int | None:
    """The best makespan over every level, kept gap, trigger, release, DMA queue order and
    interleaving of ops with the queue (the list schedule's priority order), each list-scheduled
    under sharing and kept when the validator accepts it. A valid shared plan is re-timed never
    later in its own start order, so this is the optimum. Raises :class:`BruteForceTooLarge`
    after ``limit`` drafts."""
    drafts = itertools.count(1)

    def plans(q, level, kept):
        return _ordered_plans(q, level, kept, lambda: limit is not None and next(drafts) > limit)

    return best_over_levels_and_gaps(p, plans)


def _ordered_plans(p: HierarchyProblem, level, kept, too_many=lambda: False):
    need, choices = move_choices(p, level, kept)
    n = p.num_ops
    for picks in itertools.product(*choices):
        moves = [(kind, t, gap, hop, a, b, k, r) for (kind, t, gap, hop, a, b), (k, r) in zip(need, picks)]
        for order in itertools.permutations(moves):
            for op_slots in itertools.combinations(range(n + len(order)), n):
                if too_many():
                    raise BruteForceTooLarge
                dma_slots = [x for x in range(n + len(order)) if x not in op_slots]
                queue = tuple(Move(kind, t, gap, hop, a, b, k, r, slot, p.hop_cycles(t, a, b))
                              for (kind, t, gap, hop, a, b, k, r), slot in zip(order, dma_slots))
                draft = HierarchySolution(level, kept, queue, tuple(op_slots), (0,) * n)
                try:
                    yield retime_hierarchy(p, draft)
                except ValueError:  # the queue order deadlocks
                    continue


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(hierarchy_problems())
def test_three_level_shared_cpsat_equals_brute_force(p):
    p = dataclasses.replace(p, shared_bandwidth=True)
    try:  # a draw too large to enumerate is drawn again (by its size alone: the same on any machine)
        brute = shared_brute_force(p, BRUTE_FORCE_DRAFTS)
    except BruteForceTooLarge:
        reject()
    r = CpSatHierarchySolver().solve(p, cpsat_options())
    if brute is None:
        assert r.solution is None
        return
    assert validate_hierarchy(p, r.solution) == []
    assert r.status is Status.OPTIMAL and r.objective == r.bound == brute
    unshared = CpSatHierarchySolver().solve(dataclasses.replace(p, shared_bandwidth=False), cpsat_options())
    assert unshared.objective <= brute  # sharing only delays
    greedy = plan_hierarchy_greedy(p)
    if greedy is not None:
        assert validate_hierarchy(p, greedy) == [] and greedy.makespan_cycles >= brute


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(level_problems(max_ops=3, max_tensors=3, max_latency=2))
def test_two_level_shared_cpsat_equals_the_two_level_shared_optimum(p):
    p = dataclasses.replace(p, shared_bandwidth=True)
    theirs = CpSatLevelSolver().solve(p, cpsat_options())
    mine = CpSatHierarchySolver().solve(from_level_problem(p), cpsat_options())
    assert mine.status is theirs.status and mine.status in (Status.OPTIMAL, Status.INFEASIBLE)
    if mine.solution is not None:
        assert mine.objective == theirs.objective == mine.bound
        assert validate_hierarchy(from_level_problem(p), mine.solution) == []


def test_windows_above_the_model_size_keep_shared_plans_valid():
    # 12 ops > max_model_ops = 4: baselines, stay-home search and window models, all under
    # sharing; the plan is valid under sharing, no slower than everything at home, never
    # faster than the same chain with separate bandwidth's bound, and repeats exactly.
    from tests.solvers.memory.test_hierarchy import chain_problem
    from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_all_home

    p = dataclasses.replace(chain_problem(blocks=6), shared_bandwidth=True)
    options = dataclasses.replace(cpsat_options(), time_limit_s=2)
    r = CpSatHierarchySolver(max_model_ops=4).solve(p, options)
    assert validate_hierarchy(p, r.solution) == [] and check_hierarchy_bandwidth(p, r.solution) == []
    assert r.objective <= plan_hierarchy_all_home(p).makespan_cycles
    assert r.bound <= r.objective and r.stats["window_search"]["windows"] >= 1
    unshared = dataclasses.replace(p, shared_bandwidth=False)
    assert CpSatHierarchySolver().solve(unshared, cpsat_options()).objective <= r.objective
    assert CpSatHierarchySolver(max_model_ops=4).solve(p, options).solution == r.solution
