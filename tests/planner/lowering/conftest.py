"""Shared plans: the shipped demo-like specs, solved once per session (short budgets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.pipeline import run

SPECS = Path(__file__).resolve().parents[3] / "specs"


@pytest.fixture(scope="session")
def cnn_outcome():
    """specs/cnn.yaml (29 ops on a TPU v1 and an edge NPU, cross-device transfers), planned."""
    return run(SPECS / "cnn.yaml", time_limit_s=2, workers=1, seed=0)


@pytest.fixture(scope="session")
def mlp_outcome():
    """specs/mlp.yaml (7 ops, a TPU v4 and an edge NPU), planned."""
    return run(SPECS / "mlp.yaml", time_limit_s=2, workers=1, seed=0)
