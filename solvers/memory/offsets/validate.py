"""Independent checker, objective and lower bound for offset assignment.

Plain Python, no solver: the same checks are reused on a lowered program's allocation.
"""

from __future__ import annotations

import numpy as np

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
    n = problem.num_buffers
    if not n:
        return 0
    size = np.asarray(problem.size_bytes, dtype=np.int64)
    start = np.asarray(problem.start, dtype=np.int64)
    end = np.asarray(problem.end, dtype=np.int64)
    align = np.asarray([problem.alignment(i) for i in range(n)], dtype=np.int64)
    steps = np.unique(start)
    used = size > 0
    # Per step, the alignments present among the live buffers, and so their gcd.
    gcd_at = np.zeros(len(steps), dtype=np.int64)
    for a in np.unique(align[used]):
        present = _live_count(steps, start[used & (align == a)], end[used & (align == a)]) > 0
        gcd_at[present] = np.gcd(gcd_at[present], a)
    best = 0
    for g in np.unique(gcd_at[gcd_at > 0]):
        at = gcd_at == g
        rounded = -(-size // g) * g
        slack = rounded - size
        total = _live_sum(steps[at], start[used], end[used], rounded[used])
        most_slack = np.zeros(int(at.sum()), dtype=np.int64)
        for s_value in np.unique(slack[used])[::-1]:  # the largest slack with a live buffer
            has = used & (slack == s_value)
            unset = (most_slack == 0) & (_live_count(steps[at], start[has], end[has]) > 0)
            most_slack[unset] = s_value
        best = max(best, int((total - most_slack).max()))
    return best


def _live_count(steps: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """How many of the intervals ``[start, end)`` contain each step."""
    return (np.searchsorted(np.sort(start), steps, side="right")
            - np.searchsorted(np.sort(end), steps, side="right"))


def _live_sum(steps: np.ndarray, start: np.ndarray, end: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The sum of ``value`` over the intervals ``[start, end)`` containing each step."""
    def summed_upto(keys: np.ndarray) -> np.ndarray:
        order = np.argsort(keys, kind="stable")
        cum = np.concatenate(([0], np.cumsum(value[order])))
        return cum[np.searchsorted(keys[order], steps, side="right")]

    return summed_upto(start) - summed_upto(end)


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
