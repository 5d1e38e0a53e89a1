"""The room relaxation (solvers.scheduling.room_relaxation) and the part re-solve's room pass."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling.forced_cuts import cut_slots
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.part_resolve import part_resolve, resolve_problem
from solvers.scheduling.part_start import restricted_schedule
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.room_relaxation import plan_hint, room_relaxed_part
from solvers.scheduling.slot_sequencing import sequenced_cut_model
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_part_resolve import _forced_chain, parted, started_chains
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1, time_limit_s=5)


def _nothing(sub: SchedulingProblem, budget: Budget):
    """A nested solve that finds nothing: only the room pass can change the plan."""
    return None


def _hinted_value(problem: SchedulingProblem, plan) -> int | None:
    """The sequenced model with links of ``problem`` with every hinted variable fixed to the
    hint of ``plan``: its optimum, None when the hint is no solution."""
    total = problem.total_resident_floor_bytes()
    built = sequenced_cut_model(problem, total=total, links=True)
    plan_hint(built, problem, cut_slots(problem, total), plan)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.fix_variables_to_their_hinted_value = True
    status = solver.solve(built.model)
    return int(solver.objective_value) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def test_a_plan_on_the_later_of_two_interchangeable_devices_is_hinted_as_a_solution():
    # the chain's first ops on device 2, the rest on device 0: the model's value precedence
    # wants the first-used accelerator to be slot 0, so the hint renames 2 -> 0 and 0 -> 1
    p = _forced_chain()
    plan = heft_schedule(p, (2, 2, 0, 0))
    assert validate_schedule(p, plan) == [] and objective_value(p, plan) == 13
    assert _hinted_value(p, plan) == 13


def test_the_room_pass_reaches_the_brute_force_optimum():
    p = _forced_chain()
    start = heft_schedule(p, (0, 1, 2, 0))  # three crossings: 20
    best, stats = part_resolve(p, start, Budget.start(2, SCHEDULING), _nothing, None, _ONE)
    assert objective_value(p, best) == brute_force(p) == 13 and validate_schedule(p, best) == []
    assert stats["part_resolve_accepted"] >= 1 and stats["part_resolve_room"]
    plain, plain_stats = part_resolve(p, start, Budget.start(2, SCHEDULING), _nothing)
    assert plain == start and not plain_stats["part_resolve_room"]  # without options: no room pass


@random_sweep
@settings(max_examples=examples(12, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(started_chains())
def test_a_room_relaxed_part_is_a_valid_part_and_the_plan_is_never_worse_and_the_same_twice(case):
    if (drawn_case := parted(case)) is None:
        return
    p, start, _, cuts, part = drawn_case
    total = p.total_resident_floor_bytes()
    for k in range(len(cuts) + 1):
        sub, ops, inside = resolve_problem(p, start, part, cuts, k)
        plan = restricted_schedule(p, sub, ops, inside, start, list(range(p.num_devices)), k > 0)
        found = room_relaxed_part(sub, plan, _ONE, Budget.start(2, SCHEDULING), total)
        if found is not None:
            assert validate_schedule(sub, found) == []
            assert objective_value(sub, found) >= brute_force(sub)
    runs = [part_resolve(p, start, Budget.start(2, SCHEDULING), _nothing, None, _ONE) for _ in range(2)]
    (best, stats), (again, stats_again) = runs
    assert best == again and stats == stats_again
    assert validate_schedule(p, best) == [] and objective_value(p, best) <= objective_value(p, start)
