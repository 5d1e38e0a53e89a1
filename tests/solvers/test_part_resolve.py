"""The part re-solve (solvers.scheduling.part_resolve): a re-solved part spliced into a valid
schedule is valid and changes the makespan by exactly what the part gained; the search never
returns worse than its start, repeats itself, and the scheduler runs it above max_full_ops."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatScheduler
from solvers.scheduling.cpsat.options import CpSatOptions, inner_config
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.part_resolve import _part_cut_ops, _windows, part_resolve, resolve_problem, splice_part
from solvers.scheduling.part_start import original_parts
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_part_bound import shrinking_chains
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1, time_limit_s=5)


def _cpsat_part(sub: SchedulingProblem, budget: Budget):
    return CpSatScheduler(inner_config(CpSatOptions()))._solve(sub, _ONE, budget).solution


@st.composite
def started_chains(draw):
    """A shrinking chain (tests.solvers.test_part_bound), a valid start (HEFT's schedule of a
    drawn placement that fits memory, else HEFT's own) and another drawn placement."""
    p = draw(shrinking_chains())
    placement = tuple(draw(st.integers(0, p.num_devices - 1)) for _ in range(p.num_ops))
    other = tuple(draw(st.integers(0, p.num_devices - 1)) for _ in range(p.num_ops))
    return p, heft_schedule(p, placement) or heft_schedule(p), other


def parted(case) -> tuple | None:
    """A ``started_chains`` case with its part cuts and parts: (problem, start, other placement,
    cuts, parts), or None when it has no start or no part cut."""
    p, start, other = case
    cuts = _part_cut_ops(p) if start is not None else None
    part = original_parts(p, cuts) if cuts else None
    return None if part is None else (p, start, other, cuts, part)


@random_sweep
@settings(max_examples=examples(60, 600), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(started_chains())
def test_a_spliced_part_changes_the_makespan_by_what_it_gained(case):
    if (drawn_case := parted(case)) is None:
        return
    p, start, other, cuts, part = drawn_case
    windows = _windows(p, start, cuts)
    for k in range(len(cuts) + 1):
        sub, ops, inside = resolve_problem(p, start, part, cuts, k)
        drawn = tuple(other[o] if sub.durations_cycles[j][other[o]] >= 0 else sub.allowed_devices(j)[0]
                      for j, o in enumerate(ops))  # the part's own HEFT schedule, and the drawn placement's
        for found in (heft_schedule(sub), heft_schedule(sub, drawn)):
            if found is None:
                continue
            assert not validate_schedule(sub, found)
            trial = splice_part(p, start, part, cuts, k, ops, inside, found)
            assert validate_schedule(p, trial) == [], k
            assert objective_value(p, trial) == objective_value(p, start) - windows[k] + objective_value(sub, found)


@random_sweep
@settings(max_examples=examples(10, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(started_chains())
def test_never_worse_than_its_start_and_the_same_twice(case):
    p, start, _ = case
    if start is None:
        return
    runs = [part_resolve(p, start, Budget.start(2, SCHEDULING), _cpsat_part) for _ in range(2)]
    (best, stats), (again, stats_again) = runs
    assert best == again and stats == stats_again
    assert validate_schedule(p, best) == []
    assert objective_value(p, best) <= objective_value(p, start)
    if stats and stats["part_resolve_accepted"]:
        assert objective_value(p, best) < objective_value(p, start)


def _forced_chain() -> SchedulingProblem:
    """a -> b -> c -> d, 2-cycle ops of 6 bytes on three 12-byte devices; tensors shrink after
    b (transfers 5, 5, 2), so the parts are [a, b] and [b*, c, d], and the weights need two
    devices."""
    links = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    return SchedulingProblem(((2, 2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1, 1), links,
                             ((5,) * 3, (5,) * 3, (2,) * 3), device_memory_bytes=(12,) * 3,
                             op_resident_bytes=(6,) * 4)


def test_the_scheduler_re_solves_parts_above_max_full_ops():
    p = _forced_chain()
    start = heft_schedule(p, (0, 1, 2, 0))  # three crossings: 2 + 5 + 2 + 5 + 2 + 2 + 2 = 20
    assert objective_value(p, start) == 20
    opts = SolveOptions(num_workers=1, time_limit_s=5, hint=start)
    others_off = dict(placement_lns_share=0.0, forced_cut_start_share=0.0, run_start_share=0.0,
                      module_resolve_share=0.0, part_start_share=0.0)  # the other starts find 13 too
    r = CpSatScheduler(CpSatOptions(max_full_ops=3, part_resolve_share=0.2, **others_off)).solve(p, opts)
    assert r.stats["part_resolve_parts"] == 2 and r.stats["part_resolve_accepted"] >= 1
    assert r.stats["start_candidates"]["part re-solve"] < 20
    assert r.objective == 13  # one crossing, at the cheap edge c -> d
    small = CpSatScheduler(CpSatOptions(**others_off)).solve(p, opts)
    assert "part_resolve_parts" not in small.stats  # at or below max_full_ops the main solve places


def test_a_shorter_head_shifts_the_later_part_and_its_transfers():
    p = _forced_chain()
    start = heft_schedule(p, (0, 1, 2, 2))  # a -> b and b -> c cross: 2 + 5 + 2 + 5 + 2 + 2 = 18
    cuts = _part_cut_ops(p)
    part = original_parts(p, cuts)
    sub, ops, inside = resolve_problem(p, start, part, cuts, 0)
    assert cuts == [1] and ops == [0, 1] and sub.allowed_devices(1) == (1,)  # b stays where the rest expects it
    found = heft_schedule(sub, (1, 1))  # a moves to b's device: no transfer
    assert objective_value(sub, found) == 4
    spliced = splice_part(p, start, part, cuts, 0, ops, inside, found)
    assert validate_schedule(p, spliced) == []
    assert spliced.op_start == (0, 2, 9, 11) and objective_value(p, spliced) == 13


def _two_part_chain() -> SchedulingProblem:
    """Six 2-cycle ops in a chain on two devices; tensors shrink after the third (transfers 7,
    7, 7, 2, 2), so the parts are ops 0-2 and [2*, 3, 4, 5]; each part's static floor is 6."""
    return SchedulingProblem(((2, 2),) * 6, tuple((i, i + 1, 0) for i in range(5)), (1, 1), ((-1, 0), (0, -1)),
                             ((7,), (7,), (7,), (2,), (2,)))


def _first_part_only(sub: SchedulingProblem, budget: Budget):
    """HEFT's schedule of the part, charging the whole child budget: only one part is tried."""
    budget.charge(budget.left)
    return heft_schedule(sub)


def test_the_parts_the_stage_before_did_not_shorten_go_first():
    p = _two_part_chain()
    start = heft_schedule(p, (1, 0, 0, 0, 1, 0))  # windows 13 and 10: gaps 7 and 4 over the floors
    earlier = heft_schedule(p, (0, 1, 0, 0, 1, 0))  # windows 20 and 10: the stage before shortened part 0
    cuts = _part_cut_ops(p)
    assert cuts == [2] and _windows(p, start, cuts) == [13, 10] and _windows(p, earlier, cuts) == [20, 10]
    budget = Budget.start(2, SCHEDULING)
    by_gap = part_resolve(p, start, Budget.start(2, SCHEDULING), _first_part_only)[1]
    assert [row["part"] for row in by_gap["part_resolve_solved"]] == [0]  # largest gap first
    best, stats = part_resolve(p, start, budget, _first_part_only, earlier)
    assert stats["part_resolve_shortened"] == [0]
    assert [row["part"] for row in stats["part_resolve_solved"]] == [1]  # the part not shortened gets the budget
    assert stats["part_resolve_solved"][0]["window"] == 10 and objective_value(p, best) == 19  # 13 + 6: c-f on one device
    assert validate_schedule(p, best) == []


def test_a_part_at_its_floor_that_goes_first_does_not_end_the_search():
    p = _two_part_chain()
    start = heft_schedule(p, (1, 0, 0, 0, 0, 0))  # windows 13 and 6: part 1 is at its floor
    earlier = heft_schedule(p, (0, 1, 0, 0, 0, 0))  # windows 20 and 6: part 0 shortened, so part 1 sorts first
    best, stats = part_resolve(p, start, Budget.start(2, SCHEDULING), _first_part_only, earlier)
    assert [row["part"] for row in stats["part_resolve_solved"]] == [0]
    assert objective_value(p, best) == 12  # part 0 on one device: 6 + 6
