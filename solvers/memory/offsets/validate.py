"""Independent checker, objective and lower bound for offset assignment.

Plain Python, no solver: the same checks are reused on a lowered program's allocation.
"""

from __future__ import annotations

import math

from solvers.memory.offsets.problem import OffsetProblem, OffsetSolution

__all__ = ["validate_offsets", "peak_bytes", "live_bytes_lower_bound", "fragmentation"]


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def validate_offsets(problem: OffsetProblem, solution: OffsetSolution) -> list[str]:
    """Every violated rule, in a fixed order (empty when the solution is valid).

    Examples
    --------
    A planted overlap: buffers 0 and 1 are live together and share address 3.

    >>> p = OffsetProblem(size_bytes=(4, 4), start=(0, 0), end=(2, 2), capacity_bytes=16)
    >>> validate_offsets(p, OffsetSolution((0, 4)))
    []
    >>> validate_offsets(p, OffsetSolution((0, 3)))
    ['buffers 0 [0, 4) and 1 [3, 7) overlap in address while both live in steps [0, 2)']
    """
    n = problem.num_buffers
    errors: list[str] = []
    if len(solution.offsets) != n:
        return [f"expected {n} offsets, got {len(solution.offsets)}"]
    off, size = solution.offsets, problem.size_bytes
    for i in range(n):
        if off[i] < 0:
            errors.append(f"buffer {problem.name(i)} has a negative offset {off[i]}")
        if off[i] % problem.alignment(i):
            errors.append(f"buffer {problem.name(i)} offset {off[i]} is not a multiple of "
                          f"{problem.alignment(i)}")
        if off[i] + size[i] > problem.capacity_bytes:
            errors.append(f"buffer {problem.name(i)} ends at {off[i] + size[i]} > capacity "
                          f"{problem.capacity_bytes}")
    # Sweep in start order: each buffer is compared with the earlier-starting ones still live.
    order = sorted(range(n), key=lambda i: (problem.start[i], i))
    active: list[int] = []
    for i in order:
        active = [j for j in active if problem.end[j] > problem.start[i]]
        for j in active:
            if size[i] and size[j] and off[i] < off[j] + size[j] and off[j] < off[i] + size[i]:
                a, b = sorted((i, j))
                lo, hi = max(problem.start[a], problem.start[b]), min(problem.end[a], problem.end[b])
                errors.append(f"buffers {problem.name(a)} [{off[a]}, {off[a] + size[a]}) and "
                              f"{problem.name(b)} [{off[b]}, {off[b] + size[b]}) overlap in address "
                              f"while both live in steps [{lo}, {hi})")
        active.append(i)
    return errors


def peak_bytes(problem: OffsetProblem, solution: OffsetSolution) -> int:
    """The objective: the highest end address, ``max(offset + size)``.

    Examples
    --------
    >>> p = OffsetProblem(size_bytes=(4, 2), start=(0, 0), end=(1, 1), capacity_bytes=16)
    >>> peak_bytes(p, OffsetSolution((2, 0)))
    6
    """
    return max((o + s for o, s in zip(solution.offsets, problem.size_bytes) if s), default=0)


def live_bytes_lower_bound(problem: OffsetProblem) -> int:
    """Max over steps of the bytes live at that step, rounded for alignment.

    At a step where the buffers L are live and every alignment is a multiple of
    ``g = gcd(alignments in L)``, every buffer but the topmost is followed by an offset
    that is a multiple of g, so it takes at least ``round_up(size, g)`` addresses and
    ``peak >= sum(round_up(size, g)) - max(round_up(size, g) - size)``. This is never
    below the plain sum of live sizes.

    Examples
    --------
    Three buffers of 3 bytes with 4-byte alignment live together: 4 + 4 + 3 = 11.

    >>> p = OffsetProblem((3, 3, 3, 20), (0, 0, 0, 1), (1, 1, 1, 2), 64, alignment_bytes=(4, 4, 4, 4))
    >>> live_bytes_lower_bound(p)
    20
    >>> live_bytes_lower_bound(OffsetProblem((3, 3, 3), (0, 0, 0), (1, 1, 1), 64, (4, 4, 4)))
    11
    """
    best = 0
    for t in sorted(set(problem.start)):
        live = [i for i in range(problem.num_buffers)
                if problem.start[i] <= t < problem.end[i] and problem.size_bytes[i]]
        if not live:
            continue
        g = 0
        for i in live:
            g = math.gcd(g, problem.alignment(i))
        rounded = [_round_up(problem.size_bytes[i], g) for i in live]
        slack = max(r - problem.size_bytes[i] for r, i in zip(rounded, live))
        best = max(best, sum(rounded) - slack)
    return best


def fragmentation(peak: int, lower_bound: int) -> float:
    """``(peak - lower_bound) / peak``: the share of the arena lost to fragmentation.

    Examples
    --------
    >>> fragmentation(120, 100)
    0.16666666666666666
    >>> fragmentation(0, 0)
    0.0
    """
    return (peak - lower_bound) / peak if peak else 0.0
