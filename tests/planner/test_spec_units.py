"""Unit strings to integers in base units: decimal vs binary prefixes, rounding, errors."""

from fractions import Fraction

import pytest

from planner.spec import units
from planner.spec.units import (
    FREQUENCY_UNITS,
    SIZE_UNITS,
    TIME_UNITS,
    parse_bandwidth,
    parse_bytes,
    parse_duration_cycles,
    parse_frequency,
    parse_seconds,
)


@pytest.mark.parametrize("text, expected", [
    ("16 GiB", 16 * 2**30),          # binary: 2^30
    ("16 GB", 16 * 10**9),           # decimal: 10^9
    ("1 KiB", 1024),
    ("1 KB", 1000), ("1 kB", 1000),  # both spellings of kilo are decimal
    ("2 MiB", 2 * 2**20), ("2 MB", 2 * 10**6),
    ("1 TiB", 2**40), ("1 TB", 10**12),
    ("1.5 KiB", 1536),               # exact decimal arithmetic, no float fuzz
    ("0.1 GB", 100_000_000),
    ("512B", 512), ("  7 bytes ", 7),
    ("8 bit", 1), ("1 Gbit", 125_000_000),
])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("900 GB/s", 900 * 10**9),
    ("900 GiB/s", 900 * 2**30),
    ("1.2 TB/s", 1_200_000_000_000),
    ("100 Gbit/s", 12_500_000_000),
    ("17 GB / s", 17 * 10**9),
])
def test_parse_bandwidth(text, expected):
    assert parse_bandwidth(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("940 MHz", 940_000_000), ("1.05 GHz", 1_050_000_000), ("1 GHz", 10**9),
    ("32 kHz", 32_000), ("50 Hz", 50),
])
def test_parse_frequency(text, expected):
    assert parse_frequency(text) == expected


@pytest.mark.parametrize("value, clock, expected", [
    ("2 us", 10**9, 2000),               # 2e-6 s * 1e9 Hz
    ("1 us", 1_050_000_000, 1050),
    ("1 ns", 700_000_000, 1),            # 0.7 cycles rounds up
    ("3 ns", 700_000_000, 3),            # 2.1 cycles rounds up to 3
    ("10 ns", 700_000_000, 7),           # exactly 7
    ("1.5 ms", 10**9, 1_500_000),
    ("0 us", 10**9, 0),
    (300, 10**9, 300), ("300 cycles", 10**9, 300), ("1 cycle", 10**9, 1), ("0", 10**9, 0),
])
def test_parse_duration_cycles(value, clock, expected):
    assert parse_duration_cycles(value, clock) == expected


def test_parse_seconds():
    assert parse_seconds("30 s") == 30.0
    assert parse_seconds("250 ms") == 0.25


@pytest.mark.parametrize("parser, value, fragment", [
    (parse_bytes, "16 GX", 'expected a size such as "16 GiB", got "16 GX" (unknown unit "GX"); did you mean "GB"?'),
    (parse_bytes, "16", '(missing unit)'),
    (parse_bytes, 16, 'got 16 (missing unit)'),
    (parse_bytes, "0 GiB", "size must be > 0"),
    (parse_bytes, "-1 GiB", "size must be > 0"),
    (parse_bytes, "0.5 B", "whole number of bytes"),
    (parse_bytes, "4 GHz", '"GHz" is a frequency, not a size'),
    (parse_bytes, "GiB", 'expected a size such as "16 GiB", got "GiB"'),
    (parse_bytes, True, "expected a size"),
    (parse_bytes, [1], "expected a size"),
    (parse_bandwidth, "900 GB", 'missing "/s"'),
    (parse_bandwidth, "900 GB/min", 'per second'),
    (parse_bandwidth, "900 MHz", '"MHz" is a frequency, not a bandwidth'),
    (parse_bandwidth, "0 GB/s", "bandwidth must be > 0"),
    (parse_frequency, "1 us", '"us" is a duration, not a frequency'),
    (parse_frequency, 1000, "missing unit"),
    (parse_duration_cycles, "2 uss", 'unknown unit "uss"'),
    (parse_duration_cycles, "-1 us", "duration must be >= 0"),
    (parse_duration_cycles, 2.5, "whole number of cycles"),
    (parse_seconds, 30, 'expected a duration such as "30 s", got 30 (missing unit)'),
    (parse_seconds, "0 s", "duration must be > 0"),
])
def test_errors(parser, value, fragment):
    args = (value, 10**9) if parser is parse_duration_cycles else (value,)
    with pytest.raises(ValueError) as info:
        parser(*args)
    assert fragment in str(info.value)


@pytest.mark.parametrize("table, target", [(SIZE_UNITS, "byte"), (FREQUENCY_UNITS, "hertz"), (TIME_UNITS, "second")])
def test_every_accepted_unit_has_pints_factor(table, target):
    # The planner's factors are a table of prefix definitions (no registry at start-up); pint
    # (a test dependency) is the reference: the shortest decimal of its float factor.
    import pint

    registry = pint.UnitRegistry()
    for spelling, name in table.items():
        magnitude = registry.Quantity(1, name).to(target).magnitude
        expected = Fraction(magnitude) if isinstance(magnitude, int) else Fraction(repr(float(magnitude)))
        assert units._factor(name, target) == expected, spelling


def test_a_unit_of_another_dimension_has_no_factor():
    with pytest.raises(ValueError, match="no factor"):
        units._factor("gigabyte", "second")
