"""Random scheduling problems for the hierarchical solvers' property tests.

Every feature the solvers must respect can appear: heterogeneous and forbidden (pinned)
devices, several streams, device pairs without a link, zero-length ops and transfers,
colocation groups and memory limits.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from solvers.scheduling import SchedulingProblem

__all__ = ["random_problem", "problems"]


def random_problem(seed: int, n: int, devices: int = 3, *, memory: bool = False,
                   colocation: bool = False, pins: bool = True, streams: bool = True,
                   unlinked: bool = True) -> SchedulingProblem:
    """A random DAG of ``n`` ops on ``devices`` devices (two speeds), one link per linked pair."""
    rng = random.Random(seed)
    edges = []
    for v in range(1, n):
        for u in sorted(rng.sample(range(max(0, v - 5), v), min(v, rng.randint(0, 2)))):
            edges.append((u, v, rng.choice((0, 8, 64, 512))))
    slow = [d % 2 == 1 for d in range(devices)]
    durations = []
    for i in range(n):
        w = rng.choice((0, 1, 3, 7, 12, 20))
        row = [w * 3 if slow[d] else w for d in range(devices)]
        if pins and rng.random() < 0.15:
            keep = rng.randrange(devices)
            row = [x if d == keep or rng.random() < 0.4 else -1 for d, x in enumerate(row)]
        durations.append(tuple(row))
    link_of = [[-1] * devices for _ in range(devices)]
    links = 0
    for a in range(devices):
        for b in range(a + 1, devices):
            if unlinked and devices > 2 and rng.random() < 0.2:
                continue
            link_of[a][b] = link_of[b][a] = links
            links += 1
    transfer = tuple(tuple(0 if b == 0 and rng.random() < 0.5 else 1 + b // 64 + (l % 2)
                           for l in range(links)) for _, _, b in edges)
    kw: dict = {}
    if colocation and n >= 4:
        a, b = rng.sample(range(n), 2)
        kw["colocation_groups"] = ((min(a, b), max(a, b)),)
    if memory:
        kw["op_resident_bytes"] = tuple(rng.choice((0, 10, 30)) for _ in range(n))
        kw["op_output_bytes"] = tuple(rng.choice((0, 8, 64)) for _ in range(n))
        total = sum(kw["op_resident_bytes"]) + sum(kw["op_output_bytes"]) + sum(b for *_, b in edges)
        kw["device_memory_bytes"] = tuple(max(40, total * 2 // (devices + 1)) for _ in range(devices))
    return SchedulingProblem(tuple(durations), tuple(edges),
                             tuple(rng.choice((1, 1, 2)) if streams else 1 for _ in range(devices)),
                             tuple(map(tuple, link_of)), transfer, **kw)


@st.composite
def problems(draw, max_ops: int = 24, **features):
    """A hypothesis strategy over :func:`random_problem`."""
    return random_problem(draw(st.integers(0, 10**6)), draw(st.integers(2, max_ops)),
                          draw(st.integers(2, 4)), **features)
