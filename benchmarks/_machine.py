"""Machine facts recorded beside every benchmark result."""

from __future__ import annotations

import datetime as _dt
import os
import platform

__all__ = ["machine_facts"]


def machine_facts() -> dict:
    """Cores, Python, OR-Tools version, platform and UTC date.

    >>> sorted(machine_facts())
    ['cores', 'date', 'ortools', 'platform', 'python']
    """
    try:
        import ortools

        ortools_version = ortools.__version__
    except Exception:  # pragma: no cover - ortools is a hard dependency
        ortools_version = "?"
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "ortools": ortools_version,
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
