"""Coarsen an op graph into groups whose quotient graph stays a DAG.

Notes
-----
Multilevel coarsening by contraction, two moves, both proven to keep the quotient acyclic:

* **Chain contraction** of a quotient edge ``(U, V)`` when U has no other successor group
  or V no other predecessor group. Say U's only successor is V: every path leaving U goes
  through V, so the merged group reaches exactly what V reached and is reached by what
  reached U or V; a cycle through it would need a path from V back to U, impossible in a
  DAG. The case "V's only predecessor is U" is the mirror image. The property is checked
  on the current quotient, so contractions can be applied one after the other.
* **Sibling merge** of two groups at the same level (longest path from a source group,
  in edges) sharing a predecessor or a successor: a path between two groups strictly
  raises the level, so no path joins groups of one level, and merging any set of
  same-level pairs at once cannot close a cycle (a cycle would have to raise the level
  and come back to it). Sibling merges trade parallelism for fewer groups: they run only
  when chain contraction alone cannot reach the target. As a last resort (disconnected
  parts), any two groups of one level merge.

Edges are contracted heaviest first (bytes, then index), so the groups swallow the
largest transfers; pure chain links (one successor group *and* one predecessor group) go
before the others, so forks and joins are absorbed last. Two groups merge only when

* they allow the same devices (ops that may use different devices are never merged, so
  a group's allowed devices are exactly its members');
* their weights together (a shared weight or input once) fit ``memory_share`` of the largest
  memory among those devices;
* their total work (sum of each member's smallest duration) stays within ``max_work``,
  which starts at ``balance * total work / target`` and doubles when no merge is left
  while the target is not met.

**Colocation.** A colocation group is first contracted into one group when it is convex
(no path leaves it and comes back: contracting a convex set keeps a DAG); otherwise its
members' groups form a colocation group of the coarse problem, so the placer puts them on
one device all the same. Either way a colocation group is never split across devices.

**The coarse problem.** One op per group: its duration on a device is the sum of its
members' (forbidden when any member is), its weights the sum of theirs (a weight or input
several members read once; one read by several groups stays a shared tensor of the coarse
problem, held once per device); the edges between
two groups become one edge carrying their bytes, whose transfer cycles on a link are the
sum of the members' (each fine edge is its own transfer on the link, latency included).
Activation buffers are left out (the fine schedule checks them exactly).
"""

from __future__ import annotations

from dataclasses import dataclass

from solvers.dag import kahn_order
from solvers.scheduling.bounds import min_durations
from solvers.scheduling.problem import SchedulingProblem, merged_colocation_groups

__all__ = ["Coarsening", "coarsen", "coarse_problem", "is_convex"]


@dataclass(frozen=True)
class Coarsening:
    """A grouping of the ops and the coarse problem it defines.

    ``group_of[op]`` is the op's group; ``members[g]`` the ops of group g (sorted);
    ``problem`` has one op per group (see the module Notes).
    """

    problem: SchedulingProblem
    group_of: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]

    @property
    def num_groups(self) -> int:
        return len(self.members)

    def placement(self, coarse_devices: tuple[int, ...]) -> tuple[int, ...]:
        """The fine placement that puts every op on its group's device.

        Examples
        --------
        >>> p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 8), (1, 2, 8)), (1, 1), ((-1, 0), (0, -1)),
        ...                       ((1,), (1,)))
        >>> coarsen(p, 1).placement((1,))
        (1, 1, 1)
        """
        return tuple(coarse_devices[g] for g in self.group_of)


class _Quotient:
    """Union-find over ops with the quotient graph's adjacency (edge multiplicities)."""

    def __init__(self, problem: SchedulingProblem, work: list[int], memory_share: float) -> None:
        n = problem.num_ops
        self.problem = problem
        self.parent = list(range(n))
        self.succ: list[dict[int, int]] = [{} for _ in range(n)]
        self.pred: list[dict[int, int]] = [{} for _ in range(n)]
        for u, v, _ in problem.edges:
            self.succ[u][v] = self.succ[u].get(v, 0) + 1
            self.pred[v][u] = self.pred[v].get(u, 0) + 1
        self.work = list(work)
        self.resident = [problem.resident_bytes(i) for i in range(n)]  # a shared tensor once
        self.tensors: list[set[int]] = [set() for _ in range(n)]  # the shared tensors a group reads
        for t, (_, readers) in enumerate(problem.shared_resident):
            for i in readers:
                self.tensors[i].add(t)
        self.pattern = [tuple(x >= 0 for x in row) for row in problem.durations_cycles]
        self.memory_share = memory_share
        self._room: dict[tuple, int | None] = {}
        self.count = n

    def room(self, pattern: tuple) -> int | None:
        """Weights a group allowed on ``pattern``'s devices may hold (None: no limit)."""
        if pattern not in self._room:
            caps = [self.problem.memory_bytes(d) for d, ok in enumerate(pattern) if ok]
            self._room[pattern] = (None if not caps or any(c <= 0 for c in caps)
                                   else int(self.memory_share * max(caps)))
        return self._room[pattern]

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def compatible(self, a: int, b: int, max_work: int | None) -> bool:
        if self.pattern[a] != self.pattern[b]:
            return False
        if max_work is not None and self.work[a] + self.work[b] > max_work:
            return False
        room = self.room(self.pattern[a])
        return room is None or self.resident[a] + self.resident[b] - self._overlap(a, b) <= room

    def _overlap(self, a: int, b: int) -> int:
        """The bytes of the shared tensors both groups read (held once when they merge)."""
        if not self.tensors[a] or not self.tensors[b]:
            return 0
        return sum(self.problem.shared_resident[t][0] for t in self.tensors[a] & self.tensors[b])

    def merge(self, a: int, b: int) -> int:
        """Merge groups a and b (roots); return the new root."""
        if len(self.succ[a]) + len(self.pred[a]) < len(self.succ[b]) + len(self.pred[b]):
            a, b = b, a
        self.parent[b] = a
        succ, pred = self.succ, self.pred
        for x, y in ((a, b), (b, a)):
            succ[x].pop(y, None)
            pred[x].pop(y, None)
        for adj, rev in ((succ, pred), (pred, succ)):
            for c, k in adj[b].items():
                del rev[c][b]
                adj[a][c] = adj[a].get(c, 0) + k
                rev[c][a] = rev[c].get(a, 0) + k
            adj[b] = {}
        self.work[a] += self.work[b]
        self.resident[a] += self.resident[b] - self._overlap(a, b)
        self.tensors[a] |= self.tensors[b]
        self.pattern[a] = tuple(x and y for x, y in zip(self.pattern[a], self.pattern[b]))
        self.count -= 1
        return a

    def roots(self) -> list[int]:
        return [i for i in range(len(self.parent)) if self.parent[i] == i]

    def levels(self) -> dict[int, int]:
        roots = self.roots()
        index = {r: k for k, r in enumerate(roots)}
        edges = [(index[r], index[c]) for r in roots for c in self.succ[r]]
        level = [0] * len(roots)
        for k in kahn_order(len(roots), edges):
            r = roots[k]
            for c in self.succ[r]:
                level[index[c]] = max(level[index[c]], level[k] + 1)
        return {r: level[index[r]] for r in roots}


def is_convex(problem: SchedulingProblem, ops) -> bool:
    """True when no path leaves ``ops`` and comes back (contracting them keeps a DAG).

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 3, ((0, 1, 0), (1, 2, 0)), (1,), ((-1,),), ((), ()))
    >>> is_convex(p, (0, 1)), is_convex(p, (0, 2))
    (True, False)
    """
    inside = set(ops)
    succ: dict[int, list[int]] = {}
    for u, v, _ in problem.edges:
        succ.setdefault(u, []).append(v)
    stack = [v for u in inside for v in succ.get(u, ()) if v not in inside]
    seen = set(stack)
    while stack:
        x = stack.pop()
        for y in succ.get(x, ()):
            if y in inside:
                return False
            if y not in seen:
                seen.add(y)
                stack.append(y)
    return True


def _chain_pass(q: _Quotient, order: list[tuple[int, int]], target: int, max_work: int | None,
                strict: bool) -> int:
    """Contract chain edges in ``order``; ``strict``: only where U has one successor group
    *and* V one predecessor group (pure links of a chain, taken before the others)."""
    merged = 0
    for u, v in order:
        if q.count <= target:
            break
        a, b = q.find(u), q.find(v)
        if a == b or b not in q.succ[a]:
            continue
        one_out, one_in = len(q.succ[a]) == 1, len(q.pred[b]) == 1
        if ((one_out and one_in) if strict else (one_out or one_in)) and q.compatible(a, b, max_work):
            q.merge(a, b)
            merged += 1
    return merged


def _sibling_pass(q: _Quotient, target: int, max_work: int | None, any_level_pair: bool = False) -> int:
    """Merge same-level groups sharing a neighbour, smallest work first (module Notes);
    ``any_level_pair``: any two groups of one level (the last resort, for disconnected parts)."""
    level = q.levels()
    pairs = []
    neighbourhoods = ([[r for r in sorted(level)]] if any_level_pair else
                      [adj for r in sorted(level) for adj in (q.succ[r], q.pred[r])])
    for adj in neighbourhoods:
        by_level: dict[int, list[int]] = {}
        for c in sorted(adj, key=lambda c: (q.work[c], c)):
            by_level.setdefault(level[c], []).append(c)
        for group in by_level.values():
            for a, b in zip(group[::2], group[1::2]):
                pairs.append((q.work[a] + q.work[b], a, b))
    merged = 0
    used: set[int] = set()
    for _, a, b in sorted(pairs):
        if q.count <= target:
            break
        if a in used or b in used or not q.compatible(a, b, max_work):
            continue
        used.update((a, b))
        q.merge(a, b)
        merged += 1
    return merged


def coarsen(problem: SchedulingProblem, target_groups: int, *, balance: float = 2.0,
            memory_share: float = 0.5) -> Coarsening:
    """Group the ops into about ``target_groups`` groups (module Notes).

    Parameters
    ----------
    problem : SchedulingProblem
    target_groups : int
        Stop merging at this many groups (more remain when no merge is allowed).
    balance : float
        A group's work may reach ``balance * total work / target_groups`` at first.
    memory_share : float
        A group's weights fit this share of the largest memory among its devices.

    Examples
    --------
    Two parallel chains of three ops between a source and a sink become four groups:

    >>> e = [(0, 1, 8), (1, 2, 8), (2, 3, 8), (0, 4, 8), (4, 5, 8), (5, 6, 8), (3, 7, 8), (6, 7, 8)]
    >>> p = SchedulingProblem(((1, 1),) * 8, e, (1, 1), ((-1, 0), (0, -1)), ((1,),) * 8)
    >>> c = coarsen(p, 4)
    >>> c.num_groups, c.members
    (4, ((0,), (1, 2, 3), (4, 5, 6), (7,)))
    """
    n = problem.num_ops
    target = max(1, int(target_groups))
    if n == 0:
        return Coarsening(problem, (), ())
    work = list(min_durations(problem))
    q = _Quotient(problem, work, memory_share)
    coarse_coloc = _contract_colocation(problem, q)
    total = max(1, sum(work))
    max_work: int | None = max(1, int(balance * total / target))
    order = [(u, v) for _, _, u, v in sorted((-b, e, u, v) for e, (u, v, b) in enumerate(problem.edges))]
    while q.count > target:
        merged = _chain_pass(q, order, target, max_work, strict=True)
        if q.count > target:
            merged += _chain_pass(q, order, target, max_work, strict=False)
        if q.count > target:
            merged += _sibling_pass(q, target, max_work)
        if merged == 0:
            if max_work is None:
                if _sibling_pass(q, target, None, any_level_pair=True) == 0:
                    break
                continue
            max_work = None if max_work >= total else max_work * 2
    return _finish(problem, q, coarse_coloc)


def _contract_colocation(problem: SchedulingProblem, q: _Quotient) -> list[tuple[int, ...]]:
    """Contract convex colocation groups; return the others (fine ops) for the coarse problem."""
    rest = []
    for g in merged_colocation_groups(problem):
        common = [d for d in range(problem.num_devices)
                  if all(problem.durations_cycles[i][d] >= 0 for i in g)]
        if common and is_convex(problem, g):  # no common device: infeasible, left to the solver
            root = q.find(g[0])
            for i in g[1:]:
                other = q.find(i)
                if other != root:
                    root = q.merge(root, other)
        else:
            rest.append(g)
    return rest


def _finish(problem: SchedulingProblem, q: _Quotient, coloc: list[tuple[int, ...]]) -> Coarsening:
    n = problem.num_ops
    fine_order = kahn_order(n, problem.edges)
    pos = {op: k for k, op in enumerate(fine_order)}
    members_of: dict[int, list[int]] = {}
    for i in range(n):
        members_of.setdefault(q.find(i), []).append(i)
    # number groups by their first member in topological order (stable, deterministic)
    roots = sorted(members_of, key=lambda r: min(pos[i] for i in members_of[r]))
    gid = {r: k for k, r in enumerate(roots)}
    group_of = tuple(gid[q.find(i)] for i in range(n))
    members = tuple(tuple(sorted(members_of[r])) for r in roots)
    coarse = coarse_problem(problem, group_of, len(members), coloc)
    return Coarsening(coarse, group_of, members)


def coarse_problem(problem: SchedulingProblem, group_of, num_groups: int,
                   colocation: list[tuple[int, ...]] = ()) -> SchedulingProblem:
    """The one-op-per-group problem of a grouping (module Notes).

    Examples
    --------
    >>> p = SchedulingProblem(((1, 2), (3, 4), (5, -1)), ((0, 1, 8), (1, 2, 4)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((2,), (1,)))
    >>> c = coarse_problem(p, (0, 0, 1), 2)
    >>> c.durations_cycles, c.edges, c.transfer_cycles
    (((4, 6), (5, -1)), ((0, 1, 4),), ((1,),))
    """
    nd, nl = problem.num_devices, problem.num_links
    dur = [[0] * nd for _ in range(num_groups)]
    for i, g in enumerate(group_of):
        row = dur[g]
        for d, x in enumerate(problem.durations_cycles[i]):
            row[d] = -1 if (x < 0 or row[d] < 0) else row[d] + x
    agg: dict[tuple[int, int], list] = {}
    for e, (u, v, b) in enumerate(problem.edges):
        gu, gv = group_of[u], group_of[v]
        if gu == gv:
            continue
        slot = agg.setdefault((gu, gv), [0, [0] * nl])
        slot[0] += b
        for link, c in enumerate(problem.transfer_cycles[e]):
            slot[1][link] += c
    keys = sorted(agg)
    resident, shared = _group_resident(problem, group_of, num_groups)
    groups = []
    for g in colocation:
        members = tuple(sorted({group_of[i] for i in g}))
        if len(members) > 1:
            groups.append(members)
    return SchedulingProblem(
        tuple(tuple(r) for r in dur), tuple((u, v, agg[u, v][0]) for u, v in keys),
        problem.device_streams, problem.link_of, tuple(tuple(agg[k][1]) for k in keys),
        problem.objective, device_memory_bytes=problem.device_memory_bytes,
        op_resident_bytes=tuple(resident) if problem.op_resident_bytes else (),
        colocation_groups=tuple(groups), device_class=problem.device_class,
        op_names=tuple(f"group{g}" for g in range(num_groups)), shared_resident=shared)


def _group_resident(problem: SchedulingProblem, group_of, num_groups: int):
    """Each group's resident bytes, a shared tensor once per group, and the shared tensors
    whose readers lie in two or more groups, as the coarse problem's (bytes, groups).

    Examples
    --------
    Ops 0, 1 and 2 read one 5-byte weight (one byte of their own each):

    >>> p = SchedulingProblem(((1,),) * 3, (), (1,), ((-1,),), (), op_resident_bytes=(6, 6, 6),
    ...                       shared_resident=((5, (0, 1, 2)),))
    >>> _group_resident(p, (0, 0, 1), 2)
    ([7, 6], ((5, (0, 1)),))
    """
    resident = [0] * num_groups
    for i, g in enumerate(group_of):
        resident[g] += problem.resident_bytes(i)
    shared = []
    for b, readers in problem.shared_resident:
        count: dict[int, int] = {}
        for i in readers:
            count[group_of[i]] = count.get(group_of[i], 0) + 1
        for g, k in count.items():
            resident[g] -= b * (k - 1)
        if len(count) > 1:
            shared.append((b, tuple(sorted(count))))
    return resident, tuple(shared)
