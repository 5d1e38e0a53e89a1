"""Quantities with units: ``"16 GiB"``, ``"900 GB/s"``, ``"940 MHz"``, ``"2 us"``.

Every parser returns an exact integer in base units (bytes, bytes per second, hertz,
reference cycles). The number is read as an exact decimal (``fractions.Fraction``) and
the unit's factor is exact too, so ``"1.05 GHz"`` is exactly ``1_050_000_000`` and ``"2 us"``
at 1 GHz is exactly 2000 cycles. The accepted units are a closed list (below) of SI and IEC
prefixes on four base units, so their factors are a table of definitions; the tests check
every one against pint's (building pint's registry took about 0.7 s of every command's
start-up, a tenth of a re-plan).

Decimal prefixes are powers of ten (``KB``/``kB`` = 1000 B, ``GB`` = 10**9 B); binary
prefixes are powers of two (``KiB`` = 1024 B, ``GiB`` = 2**30 B). Bits are accepted too
(``Gbit/s``); ``b`` alone is not, to avoid confusing it with ``B``.

Errors are ``ValueError`` with a message that shows an example of the expected form.
"""

from __future__ import annotations

import difflib
import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any, Mapping

from planner.spec.limits import MAX_BANDWIDTH, MAX_BYTES, MAX_CYCLES, MAX_FREQUENCY, MAX_TIME_LIMIT_S

__all__ = [
    "SIZE_UNITS",
    "FREQUENCY_UNITS",
    "TIME_UNITS",
    "parse_bytes",
    "parse_bandwidth",
    "parse_frequency",
    "parse_duration_cycles",
    "parse_seconds",
]

# Accepted spellings -> pint unit names. The whitelist keeps pint's wider vocabulary
# (radians, percent... are dimensionless like bits) out of the spec.
SIZE_UNITS: dict[str, str] = {
    "B": "byte", "byte": "byte", "bytes": "byte",
    "kB": "kilobyte", "KB": "kilobyte", "MB": "megabyte", "GB": "gigabyte", "TB": "terabyte",
    "PB": "petabyte",
    "KiB": "kibibyte", "MiB": "mebibyte", "GiB": "gibibyte", "TiB": "tebibyte", "PiB": "pebibyte",
    "bit": "bit", "kbit": "kilobit", "Mbit": "megabit", "Gbit": "gigabit", "Tbit": "terabit",
}
FREQUENCY_UNITS: dict[str, str] = {"Hz": "hertz", "kHz": "kilohertz", "MHz": "megahertz",
                                   "GHz": "gigahertz"}
TIME_UNITS: dict[str, str] = {"ps": "picosecond", "ns": "nanosecond", "us": "microsecond",
                              "µs": "microsecond", "ms": "millisecond", "s": "second"}
_CYCLE_UNITS = ("cycle", "cycles")

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?)\s*(.*?)\s*$")
# Longer numbers and larger exponents are refused before Fraction expands them (1e999999999
# would be a billion-digit integer); every limit below is far inside these.
_MAX_NUMBER_CHARS = 40
_MAX_EXPONENT = 60
# The unit names above (pint's spellings) are a prefix and a base unit: SI prefixes are powers
# of ten, IEC prefixes powers of two (IEC 80000-13), a bit is an eighth of a byte.
_PREFIXES: dict[str, Fraction] = {
    "": Fraction(1), "pico": Fraction(1, 10**12), "nano": Fraction(1, 10**9), "micro": Fraction(1, 10**6),
    "milli": Fraction(1, 10**3), "kilo": Fraction(10**3), "mega": Fraction(10**6), "giga": Fraction(10**9),
    "tera": Fraction(10**12), "peta": Fraction(10**15), "kibi": Fraction(2**10), "mebi": Fraction(2**20),
    "gibi": Fraction(2**30), "tebi": Fraction(2**40), "pebi": Fraction(2**50),
}
_BASES: dict[str, tuple[str, Fraction]] = {  # base unit -> (the target it converts to, factor)
    "byte": ("byte", Fraction(1)), "bit": ("byte", Fraction(1, 8)), "hertz": ("hertz", Fraction(1)),
    "second": ("second", Fraction(1)),
}


@lru_cache(maxsize=None)
def _factor(unit: str, target: str) -> Fraction:
    """Exact factor converting one ``unit`` (a name of the tables above) to ``target``.

    Examples
    --------
    >>> _factor("gibibyte", "byte"), _factor("megabit", "byte"), _factor("nanosecond", "second")
    (Fraction(1073741824, 1), Fraction(125000, 1), Fraction(1, 1000000000))
    """
    for base, (dimension, per_base) in _BASES.items():
        prefix = unit[:-len(base)]
        if unit.endswith(base) and prefix in _PREFIXES and dimension == target:
            return _PREFIXES[prefix] * per_base
    raise ValueError(f"no factor from {unit!r} to {target!r}")


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _split(value: Any, what: str, example: str) -> tuple[Fraction, str]:
    """``"16 GiB"`` -> ``(Fraction(16), "GiB")``; a bare number gives unit ``""``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f'expected {what} such as "{example}", got {_show(value)}')
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f'expected {what} such as "{example}", got {_show(value)}')
        return Fraction(repr(value)) if isinstance(value, float) else Fraction(value), ""
    m = _QUANTITY.match(value)
    if not m:
        raise ValueError(f'expected {what} such as "{example}", got {_show(value)}')
    number, exponent = m.group(1), m.group(2)
    if len(number) > _MAX_NUMBER_CHARS or (exponent is not None and abs(int(exponent)) > _MAX_EXPONENT):
        raise ValueError(f'expected {what} such as "{example}", got {_show(value)} (the number is out of range)')
    return Fraction(number), re.sub(r"\s*/\s*", "/", m.group(3))


def _dimension(unit: str) -> str | None:
    """What a unit of another quantity measures (for "MHz is a frequency" hints)."""
    if unit in FREQUENCY_UNITS:
        return "a frequency"
    if unit in TIME_UNITS or unit in _CYCLE_UNITS:
        return "a duration"
    if unit in SIZE_UNITS:
        return "a size"
    size, slash, per = unit.partition("/")
    if slash and size.strip() in SIZE_UNITS:
        return "a bandwidth"
    return None


def _unknown_unit(value: Any, what: str, example: str, unit: str, known: list[str],
                  suffix: str = "") -> ValueError:
    other = _dimension(unit)
    if other is not None and other != what:
        return ValueError(f'expected {what} such as "{example}", got {_show(value)} '
                          f'("{unit}" is {other}, not {what})')
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(unit.lower(), list(lowered), n=1, cutoff=0.5)
    hint = (f'; did you mean "{lowered[close[0]]}{suffix}"?' if close
            else f"; known units: {', '.join(k + suffix for k in known)}")
    return ValueError(f'expected {what} such as "{example}", got {_show(value)} (unknown unit "{unit}"){hint}')


def _to_int(amount: Fraction, value: Any, what: str, example: str, *, positive: bool, limit: int,
            limit_text: str, ceil: bool = False, base: str = "bytes") -> int:
    if amount < 0 or (positive and amount == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f'{what.split(" ", 1)[1]} must be {bound}, got {_show(value)}')
    if amount > limit:
        raise ValueError(f'{what.split(" ", 1)[1]} must be at most {limit_text}, got {_show(value)}')
    if amount.denominator != 1:
        if not ceil:
            raise ValueError(f'expected {what} such as "{example}" that is a whole number of '
                             f'{base}, got {_show(value)} (= {float(amount):g})')
        return math.ceil(amount)
    return int(amount)


def _split_known(value: Any, what: str, example: str, table: Mapping[str, Any]) -> tuple[Fraction, Any]:
    """The amount and the ``table`` entry of the value's unit, which is required and must be known."""
    amount, unit = _split(value, what, example)
    if unit == "":
        raise ValueError(f'expected {what} such as "{example}", got {_show(value)} (missing unit)')
    if unit not in table:
        raise _unknown_unit(value, what, example, unit, list(table))
    return amount, table[unit]


def parse_bytes(value: Any) -> int:
    """A size in bytes (must be > 0).

    Parameters
    ----------
    value : str
        A number and a size unit: ``B``, ``KB``/``kB``, ``MB``, ``GB``, ``TB`` (powers of 10),
        ``KiB``, ``MiB``, ``GiB``, ``TiB`` (powers of 2), or ``kbit``...``Tbit``.

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    ValueError
        Missing or unknown unit, a non-positive size, a fraction of a byte, or more than
        :data:`~planner.spec.limits.MAX_BYTES`.

    Examples
    --------
    >>> parse_bytes("16 GiB"), parse_bytes("16 GB"), parse_bytes("1.5KiB")
    (17179869184, 16000000000, 1536)
    >>> parse_bytes("16 GX")
    Traceback (most recent call last):
    ...
    ValueError: expected a size such as "16 GiB", got "16 GX" (unknown unit "GX"); did you mean "GB"?
    >>> parse_bytes("2 PiB")
    Traceback (most recent call last):
    ...
    ValueError: size must be at most 2^50 B (1 PiB), got "2 PiB"
    >>> parse_bytes("1e999 GB")
    Traceback (most recent call last):
    ...
    ValueError: expected a size such as "16 GiB", got "1e999 GB" (the number is out of range)
    """
    what, example = "a size", "16 GiB"
    amount, unit = _split_known(value, what, example, SIZE_UNITS)
    return _to_int(amount * _factor(unit, "byte"), value, what, example, positive=True, limit=MAX_BYTES,
                   limit_text="2^50 B (1 PiB)")


def parse_bandwidth(value: Any) -> int:
    """A bandwidth in bytes per second (must be > 0): a size unit over ``s``.

    Examples
    --------
    >>> parse_bandwidth("900 GB/s"), parse_bandwidth("1 GiB/s"), parse_bandwidth("100 Gbit/s")
    (900000000000, 1073741824, 12500000000)
    >>> parse_bandwidth("900 GB")
    Traceback (most recent call last):
    ...
    ValueError: expected a bandwidth such as "900 GB/s", got "900 GB" (missing "/s")
    """
    what, example = "a bandwidth", "900 GB/s"
    amount, unit = _split(value, what, example)
    if unit == "":
        raise ValueError(f'expected {what} such as "{example}", got {_show(value)} (missing unit)')
    size, slash, per = unit.partition("/")
    if not slash:
        if size in SIZE_UNITS:
            raise ValueError(f'expected {what} such as "{example}", got {_show(value)} (missing "/s")')
        raise _unknown_unit(value, what, example, size, list(SIZE_UNITS), "/s")
    if per.strip() not in ("s", "sec"):
        raise ValueError(f'expected {what} such as "{example}", got {_show(value)} '
                         f'(a bandwidth is per second: "/s")')
    size = size.strip()
    if size not in SIZE_UNITS:
        raise _unknown_unit(value, what, example, size, list(SIZE_UNITS), "/s")
    return _to_int(amount * _factor(SIZE_UNITS[size], "byte"), value, what, example, positive=True,
                   limit=MAX_BANDWIDTH, limit_text="2^50 B/s", base="bytes per second")


def parse_frequency(value: Any) -> int:
    """A frequency in hertz (must be > 0).

    Examples
    --------
    >>> parse_frequency("940 MHz"), parse_frequency("1.05 GHz"), parse_frequency("700MHz")
    (940000000, 1050000000, 700000000)
    """
    what, example = "a frequency", "940 MHz"
    amount, unit = _split_known(value, what, example, FREQUENCY_UNITS)
    return _to_int(amount * _factor(unit, "hertz"), value, what, example, positive=True, base="hertz",
                   limit=MAX_FREQUENCY, limit_text="1 THz")


def parse_duration_cycles(value: Any, clock_hz: int) -> int:
    """A duration (>= 0) in cycles of a clock of ``clock_hz``, rounded up.

    A bare integer, or ``"N cycles"``, is already a number of cycles.

    Examples
    --------
    >>> parse_duration_cycles("2 us", 1_000_000_000), parse_duration_cycles("1 ns", 1_050_000_000)
    (2000, 2)
    >>> parse_duration_cycles(300, 10**9), parse_duration_cycles("300 cycles", 10**9)
    (300, 300)
    """
    what, example = "a duration", "2 us"
    amount, unit = _split(value, what, example)
    if unit == "" or unit in _CYCLE_UNITS:
        if amount.denominator != 1:
            raise ValueError(f'expected {what} such as "{example}" or a whole number of cycles, '
                             f"got {_show(value)}")
        return _to_int(amount, value, what, example, positive=False, limit=MAX_CYCLES, limit_text="2^40 cycles")
    if unit not in TIME_UNITS:
        raise _unknown_unit(value, what, example, unit, [*TIME_UNITS, "cycles"])
    cycles = amount * _factor(TIME_UNITS[unit], "second") * clock_hz
    return _to_int(cycles, value, what, example, positive=False, ceil=True, limit=MAX_CYCLES,
                   limit_text=f"2^40 cycles ({MAX_CYCLES / clock_hz:.4g} s at this clock)")


def parse_seconds(value: Any) -> float:
    """A positive wall-clock duration in seconds (a unit is required).

    Examples
    --------
    >>> parse_seconds("30 s"), parse_seconds("500 ms"), parse_seconds("2.5s")
    (30.0, 0.5, 2.5)
    """
    what, example = "a duration", "30 s"
    amount, unit = _split_known(value, what, example, TIME_UNITS)
    seconds = amount * _factor(unit, "second")
    if seconds <= 0:
        raise ValueError(f"duration must be > 0, got {_show(value)}")
    if seconds > MAX_TIME_LIMIT_S:
        raise ValueError(f"duration must be at most {MAX_TIME_LIMIT_S:,} s, got {_show(value)}")
    return float(seconds)
