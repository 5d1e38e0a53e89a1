"""Random sweeps: a slice of the draws in the default suite, every draw on request.

A property test over many random draws runs ``default`` examples in the default suite
(derandomized under CI, so the same draws on every run) and all ``full`` of them with::

    PLAN_FULL_SWEEPS=1 python -m pytest -p no:cacheprovider -m random_sweep

Such a test carries the ``random_sweep`` marker (``@random_sweep``) and takes its count from
:func:`examples`, so the full sweep is the one the test ran before it was sliced.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["FULL_SWEEPS_ENV", "examples", "random_sweep"]

FULL_SWEEPS_ENV = "PLAN_FULL_SWEEPS"

random_sweep = pytest.mark.random_sweep


def examples(default: int, full: int) -> int:
    """``full`` when ``PLAN_FULL_SWEEPS`` is set (and not "0"), else ``default``."""
    return full if os.environ.get(FULL_SWEEPS_ENV, "0").strip() not in ("", "0") else default
