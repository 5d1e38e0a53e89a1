"""Sizes, times and rates as people read them: the one format of messages, reports and listings.

It sits below every stage (it imports nothing of the planner), so the spec's error
messages, lowering's and the report's tables all print a size the same way; the parsers
of sizes written in a spec are :mod:`planner.spec.units`.
"""

from __future__ import annotations

__all__ = ["format_bytes", "format_cycles_time", "format_rate"]


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


def format_cycles_time(cycles: int | float | None, clock_hz: int | float) -> str:
    """A number of cycles of a ``clock_hz`` clock as a time (ns, µs, ms or s, three significant digits).

    Examples
    --------
    >>> format_cycles_time(23_345, 10**9), format_cycles_time(3_617_700, 10**9), format_cycles_time(0, 10**9)
    ('23.3 µs', '3.62 ms', '0 s')
    >>> format_cycles_time(5, 10**9), format_cycles_time(2 * 10**9, 10**9), format_cycles_time(None, 1)
    ('5.00 ns', '2.00 s', '-')
    """
    if cycles is None:
        return "-"
    seconds = cycles / clock_hz
    if seconds == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{_three_digits(seconds / scale)} {unit}"
    return f"{_three_digits(seconds / 1e-9)} ns"


def format_rate(per_second: float | None, what: str = "inferences") -> str:
    """Events per second with thousands separators (three significant digits below 1,000).

    Examples
    --------
    >>> format_rate(42_835.7), format_rate(12.345), format_rate(None)
    ('42,836 inferences/s', '12.3 inferences/s', '-')
    """
    if per_second is None:
        return "-"
    shown = f"{per_second:,.0f}" if per_second >= 1000 else _three_digits(per_second)
    return f"{shown} {what}/s"


def _three_digits(x: float) -> str:
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}" if abs(x) < 100 else f"{x:.0f}"
