"""HEFT's memory profile (``solvers.scheduling.heft._Profile``) against a brute-force one.

The profile keeps live activation bytes over time and its peak after every change; HEFT
admits a device only when the peak stays within its memory, so a wrong peak is a wrong
schedule (or one over memory). Random adds, closes and probes, each checked exactly.
"""

from __future__ import annotations

import random

from solvers.scheduling.heft import _OPEN, _Profile


def _live(buffers: list[tuple[int, int, int]], t: int) -> int:
    return sum(b for s, e, b in buffers if s <= t < e)


def _brute_peak(buffers: list[tuple[int, int, int]], extra=()) -> int:
    every = [*buffers, *extra]
    points = {0, *(s for s, _, _ in every), *(e for _, e, _ in every if e < _OPEN)}
    return max(_live(every, t) for t in points)


def test_peak_and_peak_with_equal_brute_force_after_every_change():
    rng = random.Random(7)
    for _ in range(40):
        profile, buffers = _Profile(), []
        for _ in range(60):
            start = rng.randrange(0, 200)
            end = _OPEN if rng.random() < 0.3 else start + rng.randrange(1, 60)
            nbytes = rng.randrange(1, 1000)
            profile.add(start, end, nbytes)
            buffers.append((start, end, nbytes))
            if rng.random() < 0.3:  # close an open buffer from some time on, as HEFT does
                opened = [k for k, (_, e, _) in enumerate(buffers) if e == _OPEN]
                if opened:
                    s, _, b = buffers[opened[0]]
                    until = s + rng.randrange(0, 80)
                    profile.add(until, _OPEN, -b)
                    buffers[opened[0]] = (s, until, b)
            assert profile.peak == _brute_peak(buffers)
            extra = [(s, _OPEN if rng.random() < 0.5 else s + rng.randrange(1, 40), rng.randrange(1, 500))
                     for s in (rng.randrange(0, 220) for _ in range(rng.randrange(1, 4)))]
            assert profile.peak_with(extra) == _brute_peak(buffers, extra)
        assert isinstance(profile.peak, int)
