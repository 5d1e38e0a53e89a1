"""The placement LNS (solvers.scheduling.placement_lns): never worse than its start, valid,
deterministic, and able to leave the contiguous splits for a placement none of them reaches;
wired into the CP-SAT scheduler as a start candidate."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatScheduler, SchedulingProblem, SchedulingSolution
from solvers.scheduling.contiguous import contiguous_schedule
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.heft import PlacedRanks, heft_schedule, upward_ranks
from solvers.scheduling.placement_lns import SOURCE, PlacementLnsOptions, critical_path, placement_lns
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_contiguous_away import _random_cpu_problem


def _two_branches() -> SchedulingProblem:
    """a -> b1 -> c1 -> d and a -> b2 -> c2 -> d (ops 0..5 = a, b1, b2, c1, c2, d), a and d 1
    cycle, the others 5; two interchangeable devices holding 4 of the 6 one-byte weights;
    every transfer 1 cycle."""
    edges = ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 4, 0), (3, 5, 0), (4, 5, 0))
    return SchedulingProblem(((1, 1), (5, 5), (5, 5), (5, 5), (5, 5), (1, 1)), edges, (1, 1),
                             ((-1, 0), (0, -1)), ((1,),) * len(edges), device_memory_bytes=(4, 4),
                             op_resident_bytes=(1,) * 6, device_class=(0, 0))


_SHORT = PlacementLnsOptions(max_idle=150)  # small graphs: a short search finds what it can


def _budget(units: float = 0.05) -> Budget:
    return Budget.start(units / SCHEDULING.units_per_second, SCHEDULING)


def test_a_non_contiguous_placement_beats_every_contiguous_split_and_the_search_finds_it():
    # Hand-checked. A block holds at most 4 ops, so the splits of the order a, b1, b2, c1, c2, d
    # into two blocks are [a b1 | b2 c1 c2 d] (16 cycles of work on the second device after b2's
    # input arrives at 2: >= 18), [a b1 b2 | c1 c2 d] (c1 starts >= 7 after b1 and its transfer,
    # c1, c2, d in turn: >= 18) and [a b1 b2 c1 | c2 d] (c1 ends >= 16, then its transfer and d:
    # >= 18), however sequenced. The optimum is 13: the branches need 10 cycles each, so they run
    # on different devices; the one away from a starts at 2 (the transfer) and ends at 12, and d
    # runs after it on its device: a, b1, c1 | b2, c2, d, not a contiguous split of the order.
    p = _two_branches()
    start = contiguous_schedule(p)
    assert objective_value(p, start) == 18
    best, stats = placement_lns(p, start, _budget())
    assert not validate_schedule(p, best)
    assert objective_value(p, best) == 13
    devices = best.op_device
    assert devices[0] == devices[1] == devices[3] != devices[2] == devices[4] == devices[5]
    assert stats["start_objective"] == 18 and stats["objective"] == 13 and stats["accepted"] >= 1


def test_cpsat_proves_the_found_placement_optimal():
    p = _two_branches()
    best, _ = placement_lns(p, contiguous_schedule(p), _budget())
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, hint=best))
    assert (r.status.value, r.objective, r.bound) == ("OPTIMAL", 13, 13)


@pytest.mark.parametrize("seed", range(12))
def test_never_worse_than_its_start_valid_and_deterministic(seed):
    p = _random_cpu_problem(seed)
    for start in (heft_schedule(p), contiguous_schedule(p)):
        if start is None:
            continue
        best, stats = placement_lns(p, start, _budget(0.02), seed=seed, cfg=_SHORT)
        assert not validate_schedule(p, best)
        assert objective_value(p, best) <= objective_value(p, start)
        assert stats["objective"] == objective_value(p, best)
        again, again_stats = placement_lns(p, start, _budget(0.02), seed=seed, cfg=_SHORT)
        assert again == best and again_stats == stats


def test_the_budget_bounds_the_work():
    # each whole HEFT pass is charged (ops + edges) / HEFT_ELEMENTS_PER_UNIT: a budget of 3.5
    # passes allows 3 evaluations with HEFT's ranks (no early stop), whatever the machine
    from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT

    p = _two_branches()
    per_pass = (p.num_ops + len(p.edges)) / HEFT_ELEMENTS_PER_UNIT
    budget = Budget(3.5 * per_pass, 1e18)
    _, stats = placement_lns(p, heft_schedule(p, (0,) * 4 + (1,) * 2), budget,
                             cfg=PlacementLnsOptions(max_idle=10 ** 6, ranks="heft"))
    assert stats["evaluations"] == 3 and stats["stopped_early"] == 0
    assert budget.used == pytest.approx(3 * per_pass)


@pytest.mark.parametrize("seed", [0, 5])
def test_a_trial_stopped_early_is_charged_for_the_ops_it_placed(seed):
    # with the placement's own ranks a trial pays TRIAL_OVERHEAD of a pass plus the rest in
    # proportion to the ops it placed; every trial starts only when a whole pass still fits
    from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT, TRIAL_OVERHEAD

    p = _random_cpu_problem(seed)
    per_pass = (p.num_ops + len(p.edges)) / HEFT_ELEMENTS_PER_UNIT
    budget = Budget(40 * per_pass, 1e18)
    _, stats = placement_lns(p, contiguous_schedule(p), budget, seed=seed, cfg=PlacementLnsOptions(max_idle=10 ** 6))
    assert stats["stopped_early"] > 0 and stats["evaluations"] > 40  # cheaper than 40 whole passes
    charged = stats["evaluations"] * TRIAL_OVERHEAD + (1 - TRIAL_OVERHEAD) * stats["ops_placed"] / p.num_ops
    assert budget.used == pytest.approx(charged * per_pass)
    assert 39 * per_pass <= budget.used <= 40 * per_pass


@pytest.mark.parametrize("seed", range(6))
def test_the_early_stop_gives_up_only_on_schedules_that_end_after_the_cutoff(seed):
    # heft_schedule_within with a placement's own ranks: given up => the whole schedule ends
    # after the cutoff; never given up => the very schedule of the whole pass
    import random

    from solvers.scheduling.heft import heft_schedule_within

    p = _random_cpu_problem(seed)
    rng = random.Random(seed)
    tried = stopped = 0
    for _ in range(30):
        placement = tuple(rng.choice(p.allowed_devices(i)) for i in range(p.num_ops))
        ranks = PlacedRanks(p)(placement)
        whole, placed = heft_schedule_within(p, placement, ranks)
        if whole is None:
            continue
        assert placed == p.num_ops and whole == heft_schedule(p, placement, ranks)
        for cutoff in range(whole.makespan_cycles - 8, whole.makespan_cycles + 2):
            sol, placed = heft_schedule_within(p, placement, ranks, cutoff)
            tried += 1
            if sol is None:
                stopped += 1
                assert whole.makespan_cycles > cutoff and placed <= p.num_ops
            else:
                assert sol == whole
    assert tried and stopped


def test_the_critical_path_follows_the_transfer_into_the_last_op():
    p = _two_branches()
    s = heft_schedule(p, (0, 0, 1, 0, 1, 0))
    ops, edges = critical_path(p, s)
    assert ops[-1] == 5 and ops[0] == 0
    assert [p.edges[e][:2] for e in edges] == [(0, 2), (4, 5)]  # a -> b2 and c2 -> d cross devices


def test_the_scheduler_reports_the_search_as_a_start_candidate():
    # the contiguous split as the warm start (18); the LNS stage finds 13, CP-SAT proves it
    # (the segment-run start, another candidate, off: tests/solvers/test_run_start.py)
    p = _two_branches()
    cfg = CpSatOptions(segment_bound_share=0.0, segment_schedule_share=0.0, forced_cut_share=0.0,
                       bound_probe_share=0.0, run_start_share=0.0)
    r = CpSatScheduler(cfg).solve(p, SolveOptions(time_limit_s=5, num_workers=1, hint=contiguous_schedule(p)))
    assert (r.status.value, r.objective) == ("OPTIMAL", 13)
    assert r.stats["hint_source"] == SOURCE
    assert r.stats["start_candidates"] == {"options": 18, SOURCE: 13}
    assert r.stats["placement_lns"]["objective"] == 13
    off = CpSatScheduler(CpSatOptions(segment_bound_share=0.0, segment_schedule_share=0.0, forced_cut_share=0.0,
                                      bound_probe_share=0.0, placement_lns_share=0.0))
    assert "placement_lns" not in off.solve(p, SolveOptions(time_limit_s=5, num_workers=1,
                                                            hint=contiguous_schedule(p))).stats


# Instance 6 left this list when trials were sequenced by their placement's own ranks: from its
# split (55) the search ends at 29-31 over search seeds 0-5 against HEFT's 27, with HEFT's ranks
# at 28-31 (the old search seed, 6, happened to beat 27). Instance 5 (split 41, HEFT 28) ends at
# 24-25 with either ranks, search seeds 1-5.
@pytest.mark.parametrize("seed", [3, 4, 5, 11])
def test_from_the_split_it_beats_heft_on_random_dags_where_the_split_alone_does_not(seed):
    p = _random_cpu_problem(seed)
    heft, split = heft_schedule(p), contiguous_schedule(p)
    assert objective_value(p, split) > objective_value(p, heft)
    best, _ = placement_lns(p, split, _budget(0.02), seed=seed, cfg=_SHORT)
    assert objective_value(p, best) < objective_value(p, heft)


def _averaged_ranks_mislead() -> SchedulingProblem:
    """x (1 cycle) -> x2 (10 cycles) and y (5 cycles on device 0, 1,000 on device 1), with x and
    y on device 0 and x2 on device 1; every transfer 1 cycle."""
    return SchedulingProblem(((1, 1), (10, 10), (5, 1000)), ((0, 1, 0),), (1, 1), ((-1, 0), (0, -1)), ((1,),))


def test_the_placements_own_ranks_sequence_the_op_feeding_a_cut_first():
    # Hand-checked. HEFT's ranks average y over both devices (502.5 > x's 1 + 1 + 10 = 12), so
    # y runs first on device 0 (0-5), x at 5-6, its transfer 6-7, x2 7-17. The placement's own
    # ranks are x 12, y 5: x at 0-1, transfer 1-2, x2 2-12, y 1-6: 12.
    p = _averaged_ranks_mislead()
    placement = (0, 1, 0)
    assert PlacedRanks(p)(placement) == (12, 10, 5)
    assert heft_schedule(p, placement, upward_ranks(p)).makespan_cycles == 17
    assert heft_schedule(p, placement, PlacedRanks(p)(placement)).makespan_cycles == 12


def test_the_start_is_resequenced_by_its_own_ranks_in_one_charged_pass():
    from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT

    p = _averaged_ranks_mislead()
    start = heft_schedule(p, (0, 1, 0), upward_ranks(p))
    per_pass = (p.num_ops + len(p.edges)) / HEFT_ELEMENTS_PER_UNIT
    budget = Budget(1.5 * per_pass, 1e18)
    best, stats = placement_lns(p, start, budget)
    assert (best.makespan_cycles, best.op_device, stats["evaluations"]) == (12, (0, 1, 0), 1)
    assert budget.used == pytest.approx(per_pass)
    # with HEFT's ranks the one pass goes to a move instead (x with x2 on device 1: 11)
    old, old_stats = placement_lns(p, start, Budget(1.5 * per_pass, 1e18), cfg=PlacementLnsOptions(ranks="heft"))
    assert old_stats["evaluations"] == 1 and old.op_device != (0, 1, 0)
    # and with more passes the search moves on from 12 to that optimum (x2 alone takes 10 after x)
    assert placement_lns(p, start, _budget(), cfg=_SHORT)[0].makespan_cycles == 11


def test_placed_ranks_are_the_longest_chain_to_the_end_on_random_placements():
    import random

    from solvers.scheduling.structure import topological_order

    for seed in range(20):
        p = _random_cpu_problem(seed)
        rng = random.Random(seed)
        placement = tuple(rng.choice(p.allowed_devices(i)) for i in range(p.num_ops))
        if any(p.link_of[placement[u]][placement[v]] < 0 for u, v, _ in p.edges if placement[u] != placement[v]):
            continue
        ranks = PlacedRanks(p)(placement)

        def chain(i):  # brute force: every path from i, enumerated
            tails = [(0 if placement[i] == placement[v] else p.transfer_cycles[e][p.link_of[placement[i]][placement[v]]])
                     + chain(v) for e, (u, v, _) in enumerate(p.edges) if u == i]
            return p.durations_cycles[i][placement[i]] + max(tails, default=0)

        assert ranks == tuple(chain(i) for i in range(p.num_ops))
        assert topological_order(p)  # the graph is a DAG: the recursion above ends


def _shared_link_fork() -> tuple[SchedulingProblem, SchedulingSolution]:
    """y -> x on device 0 (A), x -> m, x -> j and m -> j; j on device 1 (B), an unrelated z on
    device 2 (C); every op 1 cycle, x's two transfers 10 cycles, m -> j 1. Each device holds two
    of the five one-byte weights, so m cannot join x on A. The start puts m on B."""
    no = -1
    link = ((-1, 0, 1), (2, -1, 3), (4, 5, -1))
    edges = ((0, 1, 0), (1, 2, 0), (1, 3, 0), (2, 3, 0))
    p = SchedulingProblem(((1, no, no), (1, no, no), (1, 1, 1), (no, 1, no), (no, no, 1)), edges, (1, 1, 1), link,
                          ((0,) * 6, (10,) * 6, (10,) * 6, (1,) * 6), device_memory_bytes=(2, 2, 2),
                          op_resident_bytes=(1,) * 5)
    return p, heft_schedule(p, (0, 0, 1, 1, 2))


@pytest.mark.parametrize("seed", range(3))
def test_a_route_over_a_third_device_beats_the_shared_link_and_only_the_route_sweep_finds_it(seed):
    # Hand-checked. With m on B, x's transfers to m and to j cross the one link A -> B in turn:
    # y 0-1, x 1-2, transfers 2-12 and 12-22, j no earlier than 22: 23. With m on C (which z
    # uses, so it is neither idle nor a neighbour: the other kinds never offer it, max_window 1)
    # they cross A -> B and A -> C at once: m 12-13, m -> j 13-14, j 14-15, the optimum (j
    # waits for x's 10-cycle transfer after x ends at 2, and m, off A, for another).
    p, start = _shared_link_fork()
    assert objective_value(p, start) == 23
    cfg = PlacementLnsOptions(max_window=1, max_idle=40, route_after_idle=10)
    best, stats = placement_lns(p, start, _budget(), seed=seed, cfg=cfg)
    assert not validate_schedule(p, best)
    assert objective_value(p, best) == 15 and best.op_device == (0, 0, 2, 1, 2)
    assert stats["by_kind"]["route"]["improving"] == 1 and stats["route_units"] > 0
    without, without_stats = placement_lns(p, start, _budget(), seed=seed, cfg=replace(cfg, route_after_idle=0))
    assert objective_value(p, without) == 23 and "route" not in without_stats["by_kind"]


def test_the_routes_of_a_schedule_are_the_shared_links_receivers():
    from solvers.scheduling.placement_lns import shared_link_queues

    p, start = _shared_link_fork()
    queues = shared_link_queues(start)
    assert sorted(queues) == [1, 2]  # x -> m and x -> j share A -> B; y -> x stays on A
    queue, _ = queues[1]
    assert sorted(queue) == [1, 2] and len({t.link for t in start.transfers if t.edge in queue}) == 1


@pytest.mark.parametrize("seed", range(10))
def test_route_sweeps_never_worse_than_the_start_valid_and_deterministic(seed):
    p = _random_cpu_problem(seed)
    start = heft_schedule(p)
    cfg = PlacementLnsOptions(max_idle=60, route_after_idle=5)
    best, stats = placement_lns(p, start, _budget(0.02), seed=seed, cfg=cfg)
    assert not validate_schedule(p, best)
    assert objective_value(p, best) <= objective_value(p, start)
    again, again_stats = placement_lns(p, start, _budget(0.02), seed=seed, cfg=cfg)
    assert again == best and again_stats == stats
