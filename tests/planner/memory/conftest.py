"""Fixtures shared by the memory-stage tests."""

from __future__ import annotations

import pytest

import planner.memory as memory_stage


@pytest.fixture
def choices(monkeypatch):
    """Every cross-device choice the memory stage makes: (its arguments, its result)."""
    seen = []
    real = memory_stage.choose_across_devices

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        seen.append((args, result))
        return result
    monkeypatch.setattr(memory_stage, "choose_across_devices", spy)
    return seen
