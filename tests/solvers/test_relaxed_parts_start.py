"""The relaxed parts realised (solvers.scheduling.relaxed_parts_start): the slot-to-device map is
found exactly when one exists; the realised plan is valid, never worse than the plan it starts
from, the same twice; a hand case where it reaches the brute-force optimum; the part bound's
hook records solutions without changing the bound."""

from __future__ import annotations

from itertools import permutations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling.cpsat.scheduler import _segment_floor
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.part_bound import part_bound
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.relaxed_parts_start import device_map, relaxed_parts_start
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_part_bound import shrinking_chains
from tests.solvers.test_part_resolve import started_chains
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1, time_limit_s=5)


def _maps_exist(loads: dict[int, int], room: list[int], pinned: dict[int, int]) -> bool:
    """Whether an injective map of the loaded slots to devices (one group) fits, by brute force."""
    slots = sorted(loads)
    for devices in permutations(range(len(room)), len(slots)):
        chosen = dict(zip(slots, devices))
        if all(chosen[s] == d for s, d in pinned.items() if s in chosen) and all(
                loads[s] <= room[d] for s, d in chosen.items()):
            return True
    return False


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 5)), min_size=1, max_size=6),
    st.lists(st.integers(0, 8), min_size=n, max_size=n),
    st.dictionaries(st.integers(0, n - 1), st.integers(0, n - 1), max_size=2))))
def test_the_device_map_is_found_exactly_when_one_fits(case):
    ops, room, pinned = case
    groups = {d: tuple(range(len(room))) for d in range(len(room))}
    mapping = device_map([(s,) for s, _ in ops], [w for _, w in ops], room, groups, pinned)
    loads: dict[int, int] = {}
    for s, w in ops:
        loads[s] = loads.get(s, 0) + w
    assert (mapping is not None) == _maps_exist(loads, room, pinned)
    if mapping is not None:
        assert sorted(mapping) == sorted(loads) and len(set(mapping.values())) == len(mapping)
        assert all(loads[s] <= room[d] for s, d in mapping.items())
        assert all(mapping[s] == d for s, d in pinned.items() if s in loads)


def _relaxed(p: SchedulingProblem) -> tuple[int, dict]:
    relaxed: dict = {}
    bound, _ = part_bound(p, _ONE, Budget.start(2, SCHEDULING), part_floor=_segment_floor(_ONE), relaxed=relaxed)
    return bound, relaxed


@random_sweep
@settings(max_examples=examples(15, 200), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(started_chains())
def test_valid_never_worse_than_its_start_and_the_same_twice(case):
    p, start, _ = case
    if start is None:
        return
    bound, relaxed = _relaxed(p)
    assert (bound, {}) == (part_bound(p, _ONE, Budget.start(2, SCHEDULING), part_floor=_segment_floor(_ONE))[0], {})
    runs = [relaxed_parts_start(p, start, relaxed, _ONE, Budget.start(2, SCHEDULING)) for _ in range(2)]
    (best, stats), (again, stats_again) = runs
    assert best == again and stats == stats_again
    assert validate_schedule(p, best) == []
    assert bound <= objective_value(p, best) <= objective_value(p, start)
    if stats and stats["relaxed_parts_accepted"]:
        assert objective_value(p, best) < objective_value(p, start)


def _two_stage_chain() -> SchedulingProblem:
    """a -> b -> c -> d -> e, 2-cycle ops on two 12-byte devices, c, d and e 6 bytes each (a and
    b none); transfers 5, 5, 2, 2, so the parts are [a, b] and [b*, c, d, e], and the second
    must cross once."""
    return SchedulingProblem(((2, 2),) * 5, ((0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 4, 0)), (1, 1),
                             ((-1, 0), (0, -1)), ((5,), (5,), (2,), (2,)), device_memory_bytes=(12, 12),
                             op_resident_bytes=(0, 0, 6, 6, 6))


def test_the_realised_relaxation_reaches_the_brute_force_optimum():
    """From c and d on the other device (crossing at the 5-cycle edge and back: 17 cycles), the
    part bound's own relaxation of the second part (one crossing at a 2-cycle edge) realised
    gives the optimum 12."""
    p = _two_stage_chain()
    start = heft_schedule(p, (0, 0, 1, 1, 0))
    _, relaxed = _relaxed(p)
    best, stats = relaxed_parts_start(p, start, relaxed, _ONE, Budget.start(2, SCHEDULING))
    assert objective_value(p, start) == 17
    assert objective_value(p, best) == brute_force(p) == 12
    assert validate_schedule(p, best) == [] and stats["relaxed_parts_accepted"] >= 1


def test_a_plan_at_the_optimum_is_kept():
    p = _two_stage_chain()
    start = heft_schedule(p, (0, 0, 0, 0, 1))
    _, relaxed = _relaxed(p)
    best, stats = relaxed_parts_start(p, start, relaxed, _ONE, Budget.start(2, SCHEDULING))
    assert best == start and stats["relaxed_parts_accepted"] == 0


def test_the_part_bound_hook_records_a_slot_per_op_of_each_solution():
    p = _two_stage_chain()
    bound, relaxed = _relaxed(p)
    assert bound == part_bound(p, _ONE, Budget.start(2, SCHEDULING), part_floor=_segment_floor(_ONE))[0]
    assert relaxed and all(len(slots) in (2, 4) and all(isinstance(s, tuple) for s in slots)
                           for rows in relaxed.values() for _, slots in rows)


@settings(max_examples=examples(10, 100), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(shrinking_chains())
def test_from_heft_the_result_is_valid_and_bounded_below(p):
    start = heft_schedule(p)
    if start is None:
        return
    bound, relaxed = _relaxed(p)
    best, _ = relaxed_parts_start(p, start, relaxed, _ONE, Budget.start(2, SCHEDULING))
    assert validate_schedule(p, best) == []
    assert bound <= objective_value(p, best) <= objective_value(p, start)


def test_the_scheduler_stage_returns_the_shorter_plan_and_what_is_left():
    """CpSatScheduler._relaxed_parts on the hand case: the result's plan, objective and stats
    become the realised 12-cycle plan, the units it used come off the amount; without
    solutions it changes nothing and uses nothing."""
    from solvers.core import SolveResult, Status
    from solvers.scheduling.cpsat.scheduler import CpSatScheduler

    p = _two_stage_chain()
    start = heft_schedule(p, (0, 0, 1, 1, 0))
    result = SolveResult(Status.FEASIBLE, 17, 10, start, 0.0, "cpsat", {})
    _, relaxed = _relaxed(p)
    budget, stats = Budget.start(5, SCHEDULING), {}
    found, left = CpSatScheduler._relaxed_parts(p, _ONE, budget, result, relaxed, 0.2, stats)
    assert found.objective == objective_value(p, found.solution) == 12
    assert validate_schedule(p, found.solution) == [] and stats["relaxed_parts_objective"] == 12
    assert abs(left - (0.2 - budget.used)) < 1e-9 and 0 < budget.used < 0.2
    same, left = CpSatScheduler._relaxed_parts(p, _ONE, Budget.start(5, SCHEDULING), result, {}, 0.2, {})
    assert same is result and left == 0.2
