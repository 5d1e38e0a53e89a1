"""One record of a clock stop (``planner.clock_stops.with_clock_stops``) for both places that
learn of one after the run's record is written: the islands route's solves and the address
searches of lowering and memory planning. They were two functions (``clock_stops`` in the
islands route, ``with_net_stops`` in the pipeline) that differed on a record without
``search`` (the islands one wrote ``search: deterministic``); an islands run whose address
search also met the net goes through both, and its record must name every stop once."""

from __future__ import annotations

import json

import pytest

from planner.clock_stops import with_clock_stops
from planner.islands.route import ONE_PROBLEM
from planner.memory import addresses
from planner.pipeline import run
from planner.spec import load_spec
from tests.planner.islands.test_islands_net_stops import _net_fired_in
from tests.planner.islands.test_islands_route import CHAIN
from tests.planner.lowering.test_address_net_stop import RefusingGreedy, fired_budget

RUN = {"name": "cpsat", "search": "deterministic", "stopped_by": "deterministic_budget", "reproducible": True,
       "workers": 1}


@pytest.fixture
def chain(tmp_path):
    file = tmp_path / "chain.yaml"
    file.write_text(CHAIN)
    return load_spec(file)


def test_a_record_keeps_its_keys_in_place_so_plan_json_bytes_do_not_move():
    amended = with_clock_stops(RUN, [("islands split", "wall_clock")])
    assert list(amended) == [*RUN, "net_stops"]
    assert json.dumps(amended) == json.dumps({**RUN, "stopped_by": "wall_clock", "reproducible": False,
                                              "net_stops": ["islands split"]})


def test_budget_and_proof_stops_leave_the_record_as_it_was():
    stops = [("islands split", "optimal"), ("island x (round 1)", "deterministic_budget"), ("one island", None)]
    assert with_clock_stops(RUN, stops) == RUN


def test_a_record_without_search_claims_none():
    # The stops cannot tell the search (an until-limit run's address searches meet a net too).
    amended = with_clock_stops({"stopped_by": "finished"}, [("addresses d0/hbm", "wall_clock")])
    assert amended == {"stopped_by": "wall_clock", "reproducible": False, "net_stops": ["addresses d0/hbm"]}


def test_an_until_limit_stop_is_not_a_net_stop():
    amended = with_clock_stops({**RUN, "search": "until-limit"}, [("island x (round 1)", "time_limit")])
    assert (amended["stopped_by"], amended["reproducible"], "net_stops" in amended) == ("time_limit", False, False)


def test_the_islands_and_the_address_stops_of_one_run_are_all_named_once(chain, monkeypatch):
    # The whole spec's three solves meet the net (the islands route's record), then every address
    # search does (the pipeline's amendment of that record): both lists, in the order they ran.
    _net_fired_in(monkeypatch, 4)
    monkeypatch.setattr(addresses, "GreedyBySizeOffsetSolver", RefusingGreedy)
    monkeypatch.setattr(addresses, "offset_budget", fired_budget)
    solver = run(chain, time_limit_s=1, workers=1).plan.solver
    assert (solver["search"], solver["stopped_by"], solver["reproducible"]) == ("deterministic", "wall_clock", False)
    assert solver["net_stops"] == ["global schedule (round 1)", ONE_PROBLEM, "one island", "addresses a0/mem",
                                   "addresses b0/mem"]
