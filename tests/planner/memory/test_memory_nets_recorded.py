"""A memory stage whose wall-clock safety net fires says so: the run is recorded as stopped by
the wall clock and not reproducible (solvers.budget), never a silently different plan or bound.
The several-stream cycle-time model, the several-stream plan bound and the N-level plan bound
each start their own budget; each is made to expire here."""

from __future__ import annotations

import pytest
import yaml

from pathlib import Path

import planner.memory.bridge
import planner.memory.hierarchy_bridge
import planner.memory.streams
from benchmarks.memory_plans import two_branch_spec
from planner.pipeline import run
from planner.spec import load_spec
from solvers.budget import Budget


class _ExpiredNet(Budget):
    """A budget whose wall-clock net has already fired (as on a machine far slower than the net allows)."""

    @classmethod
    def start(cls, *args, **kwargs) -> Budget:
        budget = super().start(*args, **kwargs)
        budget.wall_deadline -= 10**6
        return budget


def _run(path):
    spec = load_spec(path)
    return run(spec, time_limit_s=spec.time_limit_s, workers=spec.workers, seed=spec.seed)


THREE_LEVELS = Path(__file__).resolve().parents[2] / "data" / "specs" / "memory-3level.yaml"


@pytest.fixture(scope="module")
def two_streams(tmp_path_factory):
    path = tmp_path_factory.mktemp("nets") / "two-branches.yaml"
    path.write_text(yaml.safe_dump(two_branch_spec(3)))
    assert _run(path).plan.solver["stopped_by"] != "wall_clock"  # uncut, the run is reproducible
    return path


@pytest.mark.parametrize("module", [planner.memory.streams, planner.memory.bridge], ids=["cycle-time", "bound"])
def test_a_several_stream_budget_cut_by_its_net_is_recorded(two_streams, module, monkeypatch):
    monkeypatch.setattr(module, "Budget", _ExpiredNet)
    solver = _run(two_streams).plan.solver
    assert (solver["stopped_by"], solver["reproducible"]) == ("wall_clock", False)


def test_the_n_level_plan_bound_cut_by_its_net_is_recorded(monkeypatch):
    assert _run(THREE_LEVELS).plan.solver["stopped_by"] != "wall_clock"
    monkeypatch.setattr(planner.memory.hierarchy_bridge, "Budget", _ExpiredNet)
    solver = _run(THREE_LEVELS).plan.solver
    assert (solver["stopped_by"], solver["reproducible"]) == ("wall_clock", False)
