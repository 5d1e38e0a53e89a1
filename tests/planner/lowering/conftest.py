"""Shared plans: the shipped demo-like specs, solved once per session (short budgets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from planner.pipeline import run
from planner.spec import load_spec

SPECS = Path(__file__).resolve().parents[3] / "specs"


class Planned(NamedTuple):
    spec: Any
    outcome: Any

    @property
    def graph(self):
        return self.spec.graph

    @property
    def plan(self):
        return self.outcome.plan

    @property
    def programs(self):
        return self.outcome.programs


def _planned(name: str) -> Planned:
    spec = load_spec(SPECS / name)
    return Planned(spec, run(spec, time_limit_s=2, workers=1, seed=0))


@pytest.fixture(scope="session")
def cnn_outcome() -> Planned:
    """specs/cnn.yaml (29 ops on a TPU v1 and an edge NPU, cross-device transfers), planned."""
    return _planned("cnn.yaml")


@pytest.fixture(scope="session")
def mlp_outcome() -> Planned:
    """specs/mlp.yaml (7 ops, a TPU v4 and an edge NPU), planned."""
    return _planned("mlp.yaml")
