"""Streams for a timed placement: interval-graph colouring of each device's ops.

One job: given devices, starts and durations, give each op a stream so that no two ops
on one stream overlap. Shared by every scheduler that decides times first
(:mod:`solvers.scheduling.cpsat`, :mod:`solvers.scheduling.listsearch`).
"""
from __future__ import annotations

from solvers.scheduling.problem import SchedulingProblem

__all__ = ["assign_streams"]


def assign_streams(problem: SchedulingProblem, dev, start, dur) -> tuple[int, ...]:
    """Streams by interval-graph colouring: by start time, the lowest free stream.

    Valid whenever at most ``streams[d]`` ops overlap at any instant on device d.

    Examples
    --------
    >>> p = SchedulingProblem(((2,), (2,), (2,)), (), (2,), ((-1,),), ())
    >>> assign_streams(p, (0, 0, 0), (0, 1, 2), (2, 2, 2))
    (0, 1, 0)
    """
    stream = [0] * problem.num_ops
    free: dict[int, list[int]] = {}
    for i in sorted(range(problem.num_ops), key=lambda k: (start[k], start[k] + dur[k], k)):
        if dur[i] == 0:
            continue
        lanes = free.setdefault(dev[i], [0] * problem.device_streams[dev[i]])
        for s, t in enumerate(lanes):
            if t <= start[i]:
                stream[i] = s
                lanes[s] = start[i] + dur[i]
                break
        else:  # more overlap than streams: the caller's bug; keep going, validation reports it
            stream[i] = 0
    return tuple(stream)
