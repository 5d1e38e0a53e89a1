"""Memory-aware first-fit placement: a schedule when HEFT finds none (a hint for CP-SAT).

Notes
-----
HEFT chooses each op's device greedily by finish time; on a large graph with tight memory
its greedy choices can leave some later op (often a colocation-group member forced onto a
full device) without an admissible device. This module places the ops by a simpler rule
and lets HEFT only sequence them (:func:`~solvers.scheduling.heft.fallback_schedule`: HEFT
with a fixed ``placement``; this module only places, so it does not depend on HEFT):

1. **First fit**: ops in topological order; each goes to the lowest-index device it may
   run on that is linked to all its (already placed) predecessors' devices and still has
   room; a colocation group goes where its first op goes, which must be a device every
   member may use, and reserves its members' bytes there at once.
2. **Room**, in two passes: first by weights only (resident bytes; the list scheduler
   then checks the activation buffers exactly and may still fail), then conservatively
   (resident bytes, each op's output and the bytes of every edge into it from another
   device counted as live for the whole run; for a colocation group's members every
   incoming edge counts, as the list scheduler may place them in any order and reserves
   that much for each). A conservative placement always sequences: the exact peak on a device
   never exceeds the sum of everything that may ever be live on it.

The first pass that sequences wins. None means neither placement exists or sequences (the
problem may still be feasible: this is a heuristic). Every choice is deterministic.
"""

from __future__ import annotations

from solvers.scheduling.bounds import topological_order
from solvers.scheduling.problem import SchedulingProblem, merged_colocation_groups
from solvers.scheduling.resident import ResidentLedger

__all__ = ["first_fit_placement"]


def first_fit_placement(problem: SchedulingProblem, *,
                        conservative: bool = False) -> tuple[int, ...] | None:
    """A device per op by first fit in topological order (see the module Notes).

    Parameters
    ----------
    problem : SchedulingProblem
    conservative : bool
        Count each op's output and incoming edges' bytes as live for the whole run (the
        placement then always sequences), not only its resident bytes.

    Returns
    -------
    tuple of int or None
        ``placement[op]`` = device, or None when some op fits no device.

    Examples
    --------
    Three ops with 6 resident bytes each, 10 bytes per device: one op per device.

    >>> p = SchedulingProblem(((1, 1, 1),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1, 1),
    ...                       ((-1, 0, 0), (0, -1, 0), (0, 0, -1)), ((0,), (0,)),
    ...                       device_memory_bytes=(10, 10, 10), op_resident_bytes=(6, 6, 6))
    >>> first_fit_placement(p)
    (0, 1, 2)
    """
    n, nd = problem.num_ops, problem.num_devices
    in_edges: list[list[int]] = [[] for _ in range(n)]
    for e, (_, v, _) in enumerate(problem.edges):
        in_edges[v].append(e)
    groups = merged_colocation_groups(problem)
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    group_device: dict[int, int] = {}
    used = [0] * nd  # besides the resident bytes
    resident = ResidentLedger(problem)  # a shared weight or input once per device
    dev = [-1] * n

    def need(j: int, d: int, grouped: bool) -> int:
        if not conservative:
            return 0
        # a group member: every incoming edge (as the list scheduler reserves)
        return problem.output_bytes(j) + sum(problem.edges[e][2] for e in in_edges[j]
                                             if grouped or dev[problem.edges[e][0]] != d)

    def linked(i: int, d: int) -> bool:
        return all(dev[u] == d or problem.link_of[dev[u]][d] >= 0
                   for u in (problem.edges[e][0] for e in in_edges[i]))

    for i in topological_order(problem):
        g = group_of.get(i)
        if g is not None and g in group_device:
            d = group_device[g]
            if not linked(i, d):
                return None
            dev[i] = d
            continue
        members = groups[g] if g is not None else (i,)
        for d in problem.allowed_devices(i):
            if any(problem.durations_cycles[j][d] < 0 for j in members) or not linked(i, d):
                continue
            want = sum(need(j, d, g is not None) for j in members)
            cap = problem.memory_bytes(d)
            if cap > 0 and resident.held[d] + resident.added(members, d) + used[d] + want > cap:
                continue
            used[d] += want
            resident.add(members, d)
            dev[i] = d
            if g is not None:
                group_device[g] = d
            break
        else:
            return None
    return tuple(dev)
