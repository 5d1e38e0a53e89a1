"""Machine facts recorded beside every benchmark result."""

from __future__ import annotations

import datetime as _dt
import os
import platform

__all__ = ["machine_facts"]


def machine_facts() -> dict:
    """Cores, load average, Python, OR-Tools version, platform and UTC date of this run.

    >>> sorted(machine_facts())
    ['cores', 'date', 'load_average', 'ortools', 'platform', 'python']
    """
    try:
        import ortools

        ortools_version = ortools.__version__
    except Exception:  # pragma: no cover - ortools is a hard dependency
        ortools_version = "?"
    try:
        load = [round(x, 2) for x in os.getloadavg()]  # a busy machine explains slow numbers
    except OSError:  # pragma: no cover
        load = None
    return {
        "cores": os.cpu_count(),
        "load_average": load,
        "python": platform.python_version(),
        "ortools": ortools_version,
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
