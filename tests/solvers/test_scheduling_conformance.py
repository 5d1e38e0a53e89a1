"""Every scheduler against every hand-checked instance (validator, optimum, bound, status)."""

from __future__ import annotations

import pytest

from solvers.core import SolveOptions, Status
from solvers.scheduling import (CpSatScheduler, HeftScheduler, lower_bound, objective_value,
                                validate_schedule)
from tests.solvers.scheduling_instances import INFEASIBLE, INSTANCES

SOLVERS = [HeftScheduler(), CpSatScheduler()]


@pytest.fixture
def default_options() -> SolveOptions:
    return SolveOptions(time_limit_s=10.0, num_workers=1, random_seed=0)


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.name)
@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: i.name)
def test_conformance(solver, inst, default_options):
    r = solver.solve(inst.problem, default_options)
    assert (r.solution is None) == (r.status not in (Status.OPTIMAL, Status.FEASIBLE))
    assert r.status.has_solution
    assert validate_schedule(inst.problem, r.solution) == []
    assert objective_value(inst.problem, r.solution) == r.objective
    if r.bound is not None:
        assert r.bound <= r.objective
        assert r.bound <= inst.optimum
    if solver.name == "cpsat":
        assert r.status is Status.OPTIMAL
        assert r.objective == inst.optimum
        assert r.gap == 0
    else:
        assert r.status is Status.FEASIBLE and r.bound is None
        assert r.objective >= inst.optimum


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: i.name)
def test_lower_bound_below_optimum(inst):
    assert lower_bound(inst.problem) <= inst.optimum


def test_infeasible_cpsat(default_options):
    r = CpSatScheduler().solve(INFEASIBLE, default_options)
    assert r.status is Status.INFEASIBLE and r.solution is None and r.objective is None


def test_infeasible_heft(default_options):
    r = HeftScheduler().solve(INFEASIBLE, default_options)
    assert r.status is Status.UNKNOWN and r.solution is None


def test_hint_is_never_beaten_by_worse(default_options):
    """With a hint that is already optimal, CP-SAT returns that objective."""
    inst = next(i for i in INSTANCES if i.name == "fork_join_cheap")
    first = CpSatScheduler().solve(inst.problem, default_options)
    from dataclasses import replace
    again = CpSatScheduler().solve(inst.problem, replace(default_options, hint=first.solution))
    assert again.objective == inst.optimum
    assert again.stats["hint_source"] == "options"
