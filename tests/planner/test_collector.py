"""The cyclic garbage collector is paused inside lowering, writing and verification, and only there."""

from __future__ import annotations

import gc

import pytest

from planner.collector import collector_paused
from planner.lower_and_replay import replay
from planner.pipeline import run
from planner.spec import load_spec


def test_the_collector_is_off_inside_and_back_on_after_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="inside"):
        with collector_paused():
            assert not gc.isenabled()
            raise RuntimeError("inside")
    assert gc.isenabled()


def test_lowering_and_writing_leave_the_collector_as_they_found_it(tmp_path, monkeypatch):
    # The stages pause it (planner.collector) and must give it back: a run that left it off
    # would let reference cycles pile up in a long-lived process (a notebook, the sweeps).
    import planner.lower_and_replay as lar
    from planner.output import write_plan_dir

    seen = []
    real_lower = lar.lower
    monkeypatch.setattr(lar, "lower", lambda *a, **k: (seen.append(gc.isenabled()), real_lower(*a, **k))[1])
    spec = load_spec("specs/taskgraph.yaml")
    outcome = run(spec, time_limit_s=2, workers=1)
    assert gc.isenabled() and seen and not any(seen)  # off while lowering, on again after
    assert replay(outcome.plan, spec).simulation.makespan_cycles == outcome.plan.makespan_cycles
    assert gc.isenabled()
    write_plan_dir(outcome, spec, tmp_path / "out")
    assert gc.isenabled() and (tmp_path / "out" / "plan.json").exists()
