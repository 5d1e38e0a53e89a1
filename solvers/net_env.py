"""The ``PLAN_NET_SLOWDOWN`` environment variable, read without loading any solver.

:func:`solvers.budget.net_slowdown` widens the wall-clock safety net by the factor it gives;
the command line checks the variable before it loads a spec, and a spec refused at once
should not pay for importing OR-Tools (:mod:`solvers.budget` imports it), so the parsing
lives here, in a module that imports nothing heavy.
"""

from __future__ import annotations

import math
import os

__all__ = ["NET_SLOWDOWN_ENV", "slowdown_from_environment"]

NET_SLOWDOWN_ENV = "PLAN_NET_SLOWDOWN"


def slowdown_from_environment() -> float | None:
    """The factor ``PLAN_NET_SLOWDOWN`` gives (a number >= 1), or None when it is unset or blank.

    Raises ValueError naming the variable when its value is not such a number.

    Examples
    --------
    >>> saved = os.environ.get(NET_SLOWDOWN_ENV)
    >>> os.environ[NET_SLOWDOWN_ENV] = " 20 "; slowdown_from_environment()
    20.0
    >>> os.environ[NET_SLOWDOWN_ENV] = "0.5"; slowdown_from_environment()
    Traceback (most recent call last):
    ...
    ValueError: PLAN_NET_SLOWDOWN='0.5': expected a number >= 1, how many times slower than an idle 2-core machine a run may be before the wall-clock safety net stops it
    >>> _ = os.environ.pop(NET_SLOWDOWN_ENV); slowdown_from_environment() is None
    True
    >>> if saved is not None: os.environ[NET_SLOWDOWN_ENV] = saved
    """
    raw = os.environ.get(NET_SLOWDOWN_ENV, "").strip()
    if not raw:
        return None
    try:
        factor = float(raw)
    except ValueError:
        factor = math.nan
    if not (math.isfinite(factor) and factor >= 1.0):
        raise ValueError(f"{NET_SLOWDOWN_ENV}={raw!r}: expected a number >= 1, how many times slower than an idle "
                         "2-core machine a run may be before the wall-clock safety net stops it")
    return factor
