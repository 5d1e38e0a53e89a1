"""A hypothesis draw shared by the bound tests on small graphs with tight memory."""

from __future__ import annotations

from hypothesis import strategies as st

from solvers.scheduling import SchedulingProblem

__all__ = ["tight_memory_problem"]


def tight_memory_problem(draw, n: int, edges: list[tuple[int, int, int]], max_transfer: int) -> SchedulingProblem:
    """``n`` ops joined by ``edges`` on 2 alike devices (about one op in five cannot run on the second)
    and sometimes a slower third with unlimited memory; transfers 0..``max_transfer`` per edge
    and link; each op's weights fit a device, all of them together need not (``draw`` is a
    :func:`hypothesis.strategies.composite`'s)."""
    slow = draw(st.booleans())
    nd = 3 if slow else 2
    durations = []
    for _ in range(n):
        fast = draw(st.integers(0, 4))
        second = -1 if draw(st.integers(0, 4)) == 0 else fast
        durations.append((fast, second) + ((2 * fast + 1,) if slow else ()))
    link_of = [[-1, 0, 1], [0, -1, 2], [1, 2, -1]] if slow else [[-1, 0], [0, -1]]
    nl = 3 if slow else 1
    transfer = tuple(tuple(draw(st.integers(0, max_transfer)) for _ in range(nl)) for _ in edges)
    resident = tuple(draw(st.integers(0, 4)) for _ in range(n))
    cap = draw(st.integers(max(resident), max(max(resident), sum(resident))))
    return SchedulingProblem(tuple(durations), tuple(edges), (1,) * nd, tuple(map(tuple, link_of)), transfer,
                             device_memory_bytes=(cap, cap) + ((0,) if slow else ()), op_resident_bytes=resident)
