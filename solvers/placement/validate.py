"""Independent checker and objective of max-load partitioning (no solver involved)."""

from __future__ import annotations

from typing import Sequence

from solvers.placement.problem import FORBIDDEN, PlacementProblem, PlacementSolution

__all__ = ["device_loads", "max_load", "validate_placement", "contiguity_violations"]


def device_loads(problem: PlacementProblem, device_of: Sequence[int]) -> tuple[int, ...]:
    """The load of every device under the paper's communication model.

    Accelerator a: ``sum acc_time`` of its nodes, plus ``comm_time[u]`` once for each node u
    on a that feeds another device, and once for each node u elsewhere that feeds a.
    CPU: ``sum cpu_time`` of its nodes.

    Examples
    --------
    >>> p = PlacementProblem(acc_time=(2, 3, 1), cpu_time=(20, 30, 10), comm_time=(1, 1, 0),
    ...                      edges=((0, 1), (1, 2)), num_accelerators=2, num_cpus=1)
    >>> device_loads(p, (0, 1, 1))  # acc0: 2 + 1 (out); acc1: 3 + 1 + 1 (in from 0); cpu: 0
    (3, 5, 0)
    >>> device_loads(p, (0, 0, 2))  # acc0: 2 + 3 + 1 (node 1 feeds the CPU); cpu: 10
    (6, 0, 10)
    """
    k = problem.num_accelerators
    loads = [0] * problem.num_devices
    for i, d in enumerate(device_of):
        loads[d] += problem.time_on(i, d)
    pays: set[tuple[int, int]] = set()
    for u, v in problem.edges:
        du, dv = device_of[u], device_of[v]
        if du != dv:
            if du < k:
                pays.add((u, du))
            if dv < k:
                pays.add((u, dv))
    for u, d in pays:
        loads[d] += problem.comm_time[u]
    return tuple(loads)


def max_load(problem: PlacementProblem, device_of: Sequence[int]) -> int:
    """The objective: the largest device load.

    Examples
    --------
    >>> p = PlacementProblem((2, 3), (20, 30), (1, 0), ((0, 1),), 2, 0)
    >>> max_load(p, (0, 1)), max_load(p, (0, 0))
    (4, 5)
    """
    return max(device_loads(problem, device_of), default=0)


def contiguity_violations(problem: PlacementProblem, device_of: Sequence[int]) -> list[str]:
    """Devices whose forward nodes are not convex: a forward path leaves and re-enters.

    Examples
    --------
    >>> p = PlacementProblem((1, 1, 1), (1, 1, 1), (0, 0, 0), ((0, 1), (1, 2)), 2, 0, contiguous=True)
    >>> contiguity_violations(p, (0, 1, 0))
    ['device 0 is not contiguous: a path leaves it at node 0 and re-enters at node 2']
    >>> contiguity_violations(p, (0, 0, 1))
    []
    """
    n = problem.num_nodes
    fwd = [not problem.backward(i) for i in range(n)]
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in problem.edges:
        if fwd[u] and fwd[v]:
            succ[u].append(v)
    out = []
    for d in sorted({device_of[i] for i in range(n) if fwd[i]}):
        # Nodes reachable from d's nodes through at least one node outside d.
        outside_reach = [False] * n
        stack = [v for u in range(n) if fwd[u] and device_of[u] == d for v in succ[u] if device_of[v] != d]
        origin = {v: u for u in range(n) if fwd[u] and device_of[u] == d for v in succ[u] if device_of[v] != d}
        while stack:
            x = stack.pop()
            if outside_reach[x]:
                continue
            outside_reach[x] = True
            if device_of[x] == d:
                src = min(u for u in origin.values())
                out.append(f"device {d} is not contiguous: a path leaves it at node {src} "
                           f"and re-enters at node {x}")
                break
            stack.extend(succ[x])
    return out


def validate_placement(problem: PlacementProblem, solution: PlacementSolution) -> list[str]:
    """Every rule a placement must satisfy; an empty list means valid.

    Examples
    --------
    >>> p = PlacementProblem((2, -1), (20, 30), (1, 0), ((0, 1),), 1, 1, size_bytes=(5, 5),
    ...                      memory_bytes=4)
    >>> validate_placement(p, PlacementSolution((1, 1)))
    []
    >>> validate_placement(p, PlacementSolution((0, 0)))
    ['node 1 may not run on an accelerator (device 0)']
    >>> validate_placement(p, PlacementSolution((0, 1)))
    ['accelerator 0 holds 5 bytes > 4']

    Two nodes that read one 4-byte weight hold it once on an accelerator:

    >>> q = PlacementProblem((2, 2), (20, 20), (0, 0), (), 1, 0, size_bytes=(5, 5), memory_bytes=6,
    ...                      shared_resident=((4, (0, 1)),))
    >>> validate_placement(q, PlacementSolution((0, 0)))
    []
    """
    n, nd = problem.num_nodes, problem.num_devices
    dev = solution.device_of
    if len(dev) != n:
        return [f"solution places {len(dev)} nodes, the problem has {n}"]
    errs = []
    for i, d in enumerate(dev):
        if not 0 <= d < nd:
            errs.append(f"node {i} on unknown device {d}")
        elif problem.is_accelerator(d) and problem.acc_time[i] == FORBIDDEN:
            errs.append(f"node {i} may not run on an accelerator (device {d})")
    if errs:
        return errs
    if problem.memory_bytes > 0:
        used = [problem.held_bytes(i for i, d in enumerate(dev) if d == a)  # a shared tensor once
                for a in range(problem.num_accelerators)]
        errs += [f"accelerator {a} holds {b} bytes > {problem.memory_bytes}"
                 for a, b in enumerate(used) if b > problem.memory_bytes]
    for g in problem.color_classes:
        if len({dev[i] for i in g}) > 1:
            errs.append(f"colour class {list(g)} is split over devices {sorted({dev[i] for i in g})}")
    if problem.contiguous:
        errs += contiguity_violations(problem, dev)
    return errs
