"""A wall-clock net stop in any of the islands route's solves reaches the plan's ``solver`` record.

Under load (6 busy processes, load 16 on 2 cores) the islands route's per-island and one-problem
solves of a 2-s run stopped on the wall-clock net, so their objectives (and the plan built from
the islands' placement) changed from run to run, while plan.json said ``reproducible: true``:
only the chosen global schedule's stop reached it."""

from __future__ import annotations

import pytest

import planner.islands.route as route
from planner.islands.route import ONE_PROBLEM
from planner.pipeline import run
from planner.spec import load_spec
from tests.planner.islands.test_islands_route import CHAIN


@pytest.fixture
def chain(tmp_path):
    file = tmp_path / "chain.yaml"
    file.write_text(CHAIN)
    return load_spec(file)


def _net_fired_in(monkeypatch, ops: int):
    """Every solve_schedule of the route on ``ops`` ops reports a net stop, as a loaded machine's did."""
    solve = route.solve_schedule

    def netted(problem, *args, **kwargs):
        solved = solve(problem, *args, **kwargs)
        if len(problem.spec.graph.ops) != ops:
            return solved
        return route.replace(solved, plan=route.replace(solved.plan, solver={**solved.plan.solver,
                                                                             "stopped_by": "wall_clock"}))

    monkeypatch.setattr(route, "solve_schedule", netted)


def test_net_stops_of_the_whole_spec_solves_make_the_plan_not_reproducible(chain, monkeypatch):
    # The whole spec (4 ops) is solved three times: the islands' global schedule, the one-problem
    # and the one-island comparisons (plan.json figures); each island's part has 2 ops.
    assert run(chain, time_limit_s=1, workers=1).plan.solver["reproducible"] is True
    _net_fired_in(monkeypatch, 4)
    solver = run(chain, time_limit_s=1, workers=1).plan.solver
    assert (solver["stopped_by"], solver["reproducible"]) == ("wall_clock", False)
    assert solver["net_stops"] == ["global schedule (round 1)", ONE_PROBLEM, "one island"]


def test_a_net_stop_of_an_island_solve_makes_the_plan_not_reproducible(chain, monkeypatch):
    # Each island's part has 2 ops; throughput: one round (the pool forks after the patch: it has it).
    _net_fired_in(monkeypatch, 2)
    solver = run(chain, time_limit_s=1, workers=1).plan.solver
    assert (solver["stopped_by"], solver["reproducible"]) == ("wall_clock", False)
    assert solver["net_stops"] == ["island x (round 1)", "island y (round 1)"]
