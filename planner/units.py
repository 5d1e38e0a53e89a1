"""Sizes as people read them: the one byte format of messages, reports and listings.

It sits below every stage (it imports nothing of the planner), so the spec's error
messages, lowering's and the report's tables all print a size the same way; the parsers
of sizes written in a spec are :mod:`planner.spec.units`.
"""

from __future__ import annotations

__all__ = ["format_bytes"]


def format_bytes(n: int | None) -> str:
    """Human size with binary units (two decimals), ``"-"`` for no size.

    Examples
    --------
    >>> format_bytes(3 * 2**20), format_bytes(12), format_bytes(1536), format_bytes(None)
    ('3.00 MiB', '12 B', '1.50 KiB', '-')
    """
    if n is None:
        return "-"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"
