"""Symmetry among interchangeable devices in the CP-SAT scheduling model.

One job: find the devices of one ``device_class`` that are verified interchangeable
(:func:`interchangeable_classes`), add value precedence among them
(:func:`add_symmetry_breaking`), and relabel a solution to obey it
(:func:`canonical_solution`, for hints). See the module Notes of
:mod:`solvers.scheduling.cpsat.model`.
"""
from __future__ import annotations

from typing import Any

from ortools.sat.python import cp_model

from solvers.scheduling.cpsat.variables import SchedulingVars, enforce_if
from solvers.scheduling.problem import ScheduledTransfer, SchedulingProblem, SchedulingSolution
from solvers.scheduling.structure import topological_order

__all__ = ["interchangeable_classes", "canonical_solution", "relabel_solution", "add_symmetry_breaking"]


def interchangeable_classes(problem: SchedulingProblem,
                            allowed: list[tuple[int, ...]] | None = None) -> list[tuple[int, ...]]:
    """Groups of devices of equal ``device_class`` verified to be interchangeable.

    A group is kept when every adjacent swap of its devices preserves durations, streams,
    memory, the -1 pattern of ``link_of`` and the transfer cost of every edge under an
    induced link relabelling (adjacent swaps generate every permutation).

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4, 9),), (), (1, 1, 1), ((-1, 0, 0), (0, -1, 0), (0, 0, -1)),
    ...                       (), device_class=(0, 0, 1))
    >>> interchangeable_classes(p)
    [(0, 1)]
    """
    if not problem.device_class:
        return []
    by_class: dict[int, list[int]] = {}
    for d, c in enumerate(problem.device_class):
        by_class.setdefault(c, []).append(d)
    out = []
    for c in sorted(by_class):
        devs = by_class[c]
        if len(devs) < 2:
            continue
        if all(_swap_ok(problem, a, b, allowed) for a, b in zip(devs, devs[1:])):
            out.append(tuple(devs))
    return out


def _link_map(problem: SchedulingProblem, perm: dict[int, int]) -> dict[int, int] | None:
    """The link relabelling induced by a device permutation, or None if there is none."""
    nd = problem.num_devices
    mp: dict[int, int] = {}
    for a in range(nd):
        for b in range(nd):
            l0 = problem.link_of[a][b]
            l1 = problem.link_of[perm.get(a, a)][perm.get(b, b)]
            if (l0 < 0) != (l1 < 0):
                return None
            if l0 < 0:
                continue
            if mp.setdefault(l0, l1) != l1:
                return None
    if len(set(mp.values())) != len(mp):
        return None
    return mp


def _swap_ok(problem: SchedulingProblem, a: int, b: int, allowed) -> bool:
    if problem.device_streams[a] != problem.device_streams[b]:
        return False
    if problem.memory_bytes(a) != problem.memory_bytes(b):
        return False
    for i in range(problem.num_ops):
        if problem.durations_cycles[i][a] != problem.durations_cycles[i][b]:
            return False
        if allowed is not None and ((a in allowed[i]) != (b in allowed[i])):
            return False
    mp = _link_map(problem, {a: b, b: a})
    if mp is None:
        return False
    return all(row[l0] == row[l1] for row in problem.transfer_cycles for l0, l1 in mp.items())


def canonical_solution(problem: SchedulingProblem, solution: SchedulingSolution,
                       classes: list[tuple[int, ...]]) -> SchedulingSolution:
    """Relabel interchangeable devices by first use along the topological order.

    The result satisfies :func:`add_symmetry_breaking`'s value precedence.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_class=(0, 0))
    >>> s = SchedulingSolution((1, 0), (0, 0), (0, 0), (4, 4), ())
    >>> canonical_solution(p, s, [(0, 1)]).op_device
    (0, 1)
    """
    perm: dict[int, int] = {}
    order = topological_order(problem)
    for devs in classes:
        seen: list[int] = []
        for i in order:
            d = solution.op_device[i]
            if d in devs and d not in seen:
                seen.append(d)
        seen += [d for d in devs if d not in seen]
        for new, old in zip(devs, seen):
            perm[old] = new
    if all(k == w for k, w in perm.items()):
        return solution
    return relabel_solution(problem, solution, perm) or solution


def relabel_solution(problem: SchedulingProblem, solution: SchedulingSolution,
                     perm: dict[int, int]) -> SchedulingSolution | None:
    """``solution`` with its devices renamed by ``perm`` (devices not in it keep their name)
    and its transfers moved to the induced links; None when ``perm`` induces no link
    relabelling. For a permutation of interchangeable devices (:func:`interchangeable_classes`)
    the result solves the permuted problem with the same makespan.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (4, 4)), ((0, 1, 8),), (1, 1), ((-1, 0), (1, -1)), ((3, 3),),
    ...                       device_class=(0, 0))
    >>> s = SchedulingSolution((0, 1), (0, 0), (0, 7), (4, 4), (ScheduledTransfer(0, 0, 4, 3),))
    >>> r = relabel_solution(p, s, {0: 1, 1: 0}); r.op_device, r.transfers[0].link
    ((1, 0), 1)
    """
    lmap = _link_map(problem, perm)
    if lmap is None:
        return None
    dev = tuple(perm.get(d, d) for d in solution.op_device)
    transfers = tuple(ScheduledTransfer(t.edge, lmap[t.link], t.start_cycle, t.duration_cycles)
                      for t in solution.transfers)
    return SchedulingSolution(dev, solution.op_stream, solution.op_start, solution.op_duration, transfers)


def add_symmetry_breaking(model: cp_model.CpModel, problem: SchedulingProblem,
                          v: SchedulingVars) -> list:
    """Value precedence along the topological order within each class in ``v.sym_classes``.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       device_class=(0, 0))
    >>> from solvers.scheduling.cpsat.variables import create_variables
    >>> m = cp_model.CpModel(); v = create_variables(m, p, 20); v.sym_classes = [(0, 1)]
    >>> add_symmetry_breaking(m, p, v)
    []
    """
    order = topological_order(problem)
    for devs in v.sym_classes:
        prev_used: list[Any] = [False] * len(devs)  # used[j]: some earlier op uses devs[j]
        for i in order:
            lits = [v.lit(i, d) for d in devs]
            if all(lit is False for lit in lits):
                continue
            for j in range(1, len(devs)):
                if lits[j] is False:
                    continue
                if prev_used[j - 1] is False:
                    if lits[j] is True:
                        model.add_bool_or([])
                    else:
                        model.add(lits[j] == 0)
                elif prev_used[j - 1] is not True:
                    enforce_if(model.add_bool_or([prev_used[j - 1]]), lits[j])
            new_used = []
            for j in range(len(devs)):
                a, b = prev_used[j], lits[j]
                if a is True or b is True:
                    new_used.append(True)
                elif a is False:
                    new_used.append(b)
                elif b is False:
                    new_used.append(a)
                else:
                    u = model.new_bool_var(f"used_{devs[j]}_{i}")
                    model.add_max_equality(u, [a, b])
                    v.used[i, devs[j]] = u
                    new_used.append(u)
            prev_used = new_used
    return []
