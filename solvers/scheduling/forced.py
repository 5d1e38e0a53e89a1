"""Placements that no feasible schedule can use (memory, colocation, links), for the bounds.

Every bound is at least as strong on the restricted problem as on the original, and stays
sound: it is the same problem with op-device pairs removed that no feasible solution uses,
so both have the same feasible solutions.

Notes
-----
A pair ``(i, d)`` is removed when one of these holds (``cap_d`` is the device's memory, 0 =
unlimited; ``G(i)`` the union of the colocation groups containing i, i included):

* **weights**: ``sum_{j in G(i)} resident_j > cap_d``. Every op of ``G(i)`` sits on i's
  device and keeps its weights there for the whole run.
* **working set**: ``dur[i][d] > 0`` and ``resident(G(i)) + out_i + sum_p min(out_p,
  B_pi) > cap_d`` over i's distinct predecessors p, with ``B_pi`` the bytes of the edges
  ``p -> i``. At the instant ``start_i`` (i runs a non-empty interval) these buffers are all
  live on d (:mod:`~solvers.scheduling.problem`'s memory rule): i's output lives over
  ``[start_i, >= end_i)``; a predecessor p on d keeps its output until ``>= end_i`` and
  started before; a predecessor elsewhere sent each edge's copy over ``[transfer start <=
  start_i, end_i)``. Either way p contributes at least ``min(out_p, B_pi)``.
* **colocation**: i may only use devices every member of ``G(i)`` may use.
* **links**: for an edge ``(u, v)``, u may use d only if v may use d or a device b with
  ``link_of[d][b] >= 0`` (and symmetrically for v).

The rules are applied until nothing changes. If an op is left with no device the problem
is infeasible; the original problem is then returned unchanged (a bound on it is still a
bound, and the solvers report the infeasibility themselves).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from solvers.scheduling.problem import FORBIDDEN, SchedulingProblem

__all__ = ["forced_allowed_devices", "restrict_placements", "colocation_closure", "held_weights"]


def colocation_closure(problem: SchedulingProblem) -> tuple[tuple[int, ...], ...]:
    """For every op, the ops that must share its device (itself included), sorted.

    Overlapping colocation groups merge (union-find).

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 4, (), (1,), ((-1,),), (), colocation_groups=((0, 1), (1, 2)))
    >>> colocation_closure(p)
    ((0, 1, 2), (0, 1, 2), (0, 1, 2), (3,))
    """
    n = problem.num_ops
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g in problem.colocation_groups:
        for j in g[1:]:
            a, b = find(g[0]), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    return tuple(tuple(members[find(i)]) for i in range(n))


def held_weights(problem: SchedulingProblem, ops: Sequence[int]) -> list[int]:
    """Per op of ``ops`` (distinct, in order): the weights its device holds because of it.

    That is the resident bytes of its colocation group (:func:`colocation_closure`) not
    already counted for an earlier op of ``ops``: the group sits on the op's device, and no
    group is counted twice, so the weights of any set of these ops that share a device
    never exceed what that device holds.

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 3, (), (1,), ((-1,),), (), op_resident_bytes=(4, 2, 8),
    ...                       colocation_groups=((0, 2),))
    >>> held_weights(p, [2, 1, 0])
    [12, 2, 0]
    """
    closure = colocation_closure(problem)
    counted: set[int] = set()
    out = []
    for i in ops:
        fresh = [j for j in closure[i] if j not in counted]
        counted.update(fresh)
        out.append(sum(problem.resident_floor_bytes(j) for j in fresh))
    return out


def _working_set(problem: SchedulingProblem, group_resident: list[int]) -> list[int]:
    """Bytes live on an op's device at its start, whatever the other placements."""
    n = problem.num_ops
    into: list[dict[int, int]] = [{} for _ in range(n)]
    for u, v, b in problem.edges:
        into[v][u] = into[v].get(u, 0) + b
    return [group_resident[i] + problem.output_bytes(i)
            + sum(min(problem.output_bytes(p), b) for p, b in into[i].items())
            for i in range(n)]


def forced_allowed_devices(problem: SchedulingProblem) -> tuple[tuple[int, ...], ...] | None:
    """The devices each op may still use after the module's rules, or None if some op has none.

    Examples
    --------
    Op 0's weights (6 bytes) fit only on device 1 (memory 8; device 0 holds 4):

    >>> p = SchedulingProblem(((2, 5), (1, 1)), ((0, 1, 0),), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((0,),), device_memory_bytes=(4, 8), op_resident_bytes=(6, 0))
    >>> forced_allowed_devices(p)
    ((1,), (0, 1))
    """
    n, nd = problem.num_ops, problem.num_devices
    closure = colocation_closure(problem)
    group_res = [sum(problem.resident_floor_bytes(j) for j in closure[i]) for i in range(n)]
    working = _working_set(problem, group_res) if problem.device_memory_bytes else [0] * n
    allowed: list[set[int]] = []
    for i in range(n):
        ok = set()
        for d in problem.allowed_devices(i):
            cap = problem.memory_bytes(d)
            dur = problem.durations_cycles[i][d]
            if cap > 0 and (group_res[i] > cap or (dur > 0 and working[i] > cap)):
                continue
            ok.add(d)
        allowed.append(ok)
    linked = [{b for b in range(nd) if b == a or problem.link_of[a][b] >= 0} for a in range(nd)]
    changed = True
    while changed:
        changed = False
        for i in range(n):
            common = set.intersection(*(allowed[j] for j in closure[i]))
            if common != allowed[i]:
                allowed[i] = common
                changed = True
        for u, v, _ in problem.edges:
            for a_, b_ in ((u, v), (v, u)):
                keep = {d for d in allowed[a_] if linked[d] & allowed[b_]}
                if keep != allowed[a_]:
                    allowed[a_] = keep
                    changed = True
        if any(not a for a in allowed):
            return None
    return tuple(tuple(sorted(a)) for a in allowed)


def restrict_placements(problem: SchedulingProblem) -> SchedulingProblem:
    """The problem with every forced-out op-device pair marked forbidden (see the Notes).

    Returns ``problem`` itself when nothing is removed or when some op would have no device.

    Examples
    --------
    >>> p = SchedulingProblem(((2, 5), (1, 1)), ((0, 1, 0),), (1, 1), ((-1, 0), (0, -1)),
    ...                       ((0,),), device_memory_bytes=(4, 8), op_resident_bytes=(6, 0))
    >>> restrict_placements(p).durations_cycles
    ((-1, 5), (1, 1))
    """
    allowed = forced_allowed_devices(problem)
    if allowed is None:
        return problem
    rows = tuple(tuple(c if d in allowed[i] else FORBIDDEN for d, c in enumerate(row))
                 for i, row in enumerate(problem.durations_cycles))
    if rows == problem.durations_cycles:
        return problem
    return replace(problem, durations_cycles=rows)
