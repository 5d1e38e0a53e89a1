"""The placement LNS (solvers.scheduling.placement_lns): never worse than its start, valid,
deterministic, and able to leave the contiguous splits for a placement none of them reaches;
wired into the CP-SAT scheduler as a start candidate."""

from __future__ import annotations

import pytest

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatScheduler, SchedulingProblem
from solvers.scheduling.contiguous import contiguous_schedule
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.heft import heft_schedule
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
    # each HEFT pass is charged (ops + edges) / HEFT_ELEMENTS_PER_UNIT: a budget of 3 passes
    # allows 3 evaluations, whatever the machine
    from solvers.scheduling.placement_lns import HEFT_ELEMENTS_PER_UNIT

    p = _two_branches()
    per_pass = (p.num_ops + len(p.edges)) / HEFT_ELEMENTS_PER_UNIT
    budget = Budget(3.5 * per_pass, 1e18)
    _, stats = placement_lns(p, heft_schedule(p, (0,) * 4 + (1,) * 2), budget,
                             cfg=PlacementLnsOptions(max_idle=10 ** 6))
    assert stats["evaluations"] == 3
    assert budget.used == pytest.approx(3 * per_pass)


def test_the_critical_path_follows_the_transfer_into_the_last_op():
    p = _two_branches()
    s = heft_schedule(p, (0, 0, 1, 0, 1, 0))
    ops, edges = critical_path(p, s)
    assert ops[-1] == 5 and ops[0] == 0
    assert [p.edges[e][:2] for e in edges] == [(0, 2), (4, 5)]  # a -> b2 and c2 -> d cross devices


def test_the_scheduler_reports_the_search_as_a_start_candidate():
    # the contiguous split as the warm start (18); the LNS stage finds 13, CP-SAT proves it
    p = _two_branches()
    cfg = CpSatOptions(segment_bound_share=0.0, segment_schedule_share=0.0, forced_cut_share=0.0,
                       bound_probe_share=0.0)
    r = CpSatScheduler(cfg).solve(p, SolveOptions(time_limit_s=5, num_workers=1, hint=contiguous_schedule(p)))
    assert (r.status.value, r.objective) == ("OPTIMAL", 13)
    assert r.stats["hint_source"] == SOURCE
    assert r.stats["start_candidates"] == {"options": 18, SOURCE: 13}
    assert r.stats["placement_lns"]["objective"] == 13
    off = CpSatScheduler(CpSatOptions(segment_bound_share=0.0, segment_schedule_share=0.0, forced_cut_share=0.0,
                                      bound_probe_share=0.0, placement_lns_share=0.0))
    assert "placement_lns" not in off.solve(p, SolveOptions(time_limit_s=5, num_workers=1,
                                                            hint=contiguous_schedule(p))).stats


@pytest.mark.parametrize("seed", [3, 4, 6, 11])
def test_from_the_split_it_beats_heft_on_random_dags_where_the_split_alone_does_not(seed):
    p = _random_cpu_problem(seed)
    heft, split = heft_schedule(p), contiguous_schedule(p)
    assert objective_value(p, split) > objective_value(p, heft)
    best, _ = placement_lns(p, split, _budget(0.02), seed=seed, cfg=_SHORT)
    assert objective_value(p, best) < objective_value(p, heft)
