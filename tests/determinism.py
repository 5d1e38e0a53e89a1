"""Shared by the determinism tests: the failure when the wall-clock safety net fired.

The determinism tests never skip: the result depends only on deterministic work, so a busy
machine changes nothing, unless it is so slow that the wall-clock safety net
(``solvers.budget.NET_SLOWDOWN`` x the limit + ``NET_CONSTANT_S``) stops a solve first. That
is a failure, with the reason.
"""

from __future__ import annotations

from solvers.budget import NET_CONSTANT_S, NET_SLOWDOWN

__all__ = ["assert_not_stopped_by_the_clock", "NET_MESSAGE"]

NET_MESSAGE = (f"the wall-clock safety net ({NET_SLOWDOWN:g} x the time limit + {NET_CONSTANT_S:g} s) stopped a "
               f"solve before its deterministic budget was spent: this machine ran more than {NET_SLOWDOWN:g}x "
               "slower than the calibration machine, so the run is not reproducible")


def assert_not_stopped_by_the_clock(*stopped_by: str | None) -> None:
    """Fail (never skip) when any of the ``stopped_by`` words says the wall clock ended a solve."""
    assert "wall_clock" not in stopped_by, NET_MESSAGE
