"""Which slow-home inputs to fetch and which to read in place, balanced over the op stream
and the DMA engine (issue 14: the 1,000-tensor four-level chain).

Notes
-----
Over a slow link (host memory over PCIe) an input read in place lengthens its op by its bytes
at the link's rate; fetched, it costs the one DMA engine about as much, and the op waits until
it arrives. The best plans keep both busy: the DMA fetches the weights of *later* ops while
the early ops read theirs in place, so every fetch is done before its reader starts. The
relaxation bound (:mod:`~solvers.memory.levels.hierarchy_bounds`) prices exactly this balance
(``M >= sum of op cycles``, ``M >= sum of first hops``); the greedy and the one-flip search
(:func:`~solvers.memory.levels.hierarchy_greedy.search_stay_home`) do not see it: on the
666-op chain of ``benchmarks/memory_levels.py`` their best plan waited 1.7 M cycles for
fetches of early weights while the DMA idled 0.9 M later.

:func:`balance_fetches` plans the choice on a two-machine model: ops in order on one stream,
each staged tensor either read at home or fetched by one hop to its *staging level* (the
first level of its route towards level 0) before its first reader, fetches back to back in
the order of their first readers; every other access at level 0. A Pareto front of (op
clock, DMA clock) states over the ops (thinned to ``max_front`` states, deterministically)
gives the choices with the shortest modelled makespans (states compared only among those
that read the staged tensors still to be read from the same levels). :func:`plan_fetch_balanced` lays
the best few out with the greedy (the fetched tensors offered their staging level only, so
their one hop can start at program start) and keeps the shortest valid plan: a candidate for
the caller's best, never a bound.

Staged tensors: inputs (they start at home) read by no fast-only op, whose staging level is not
level 0 (its room is the greedy's Belady cache) and is faster than their home; only where all of them together fit their staging
levels at once (the model has no capacity), else none.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.hierarchy_greedy import plan_hierarchy_greedy
from solvers.memory.levels.hierarchy_validate import validate_hierarchy

__all__ = ["staged_tensors", "FetchChoice", "balance_fetches", "plan_fetch_balanced"]

# Above this many staged tensors first read by one op, the model offers that op only "all read
# in place" and "all fetched" (2^k choices otherwise).
_MAX_SUBSET_TENSORS = 3


def staged_tensors(problem: HierarchyProblem) -> dict[int, int]:
    """Per staged tensor (see Notes), its staging level; empty when they do not all fit it.

    Examples
    --------
    A host tensor (level 2) reaches vmem (0) through hbm (1): hbm is its staging level.

    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> staged_tensors(p)
    {0: 1}
    """
    bw, out = problem.bandwidth_bytes_per_cycle, {}
    for t in range(problem.num_tensors):
        home, acc = problem.home(t), problem.accesses(t)
        if home == 0 or not problem.tensor_bytes[t] or problem.is_real(acc[0]) or len(acc) < 2:
            continue
        if any(a in problem.fast_only_ops for a in acc if problem.is_real(a)):
            continue
        stage = problem.route(home, 0)[1]
        if stage != 0 and bw[stage] > bw[home]:  # level 0's room is the greedy's Belady cache
            out[t] = stage
    for stage in set(out.values()):
        if sum(problem.tensor_bytes[t] for t, s in out.items() if s == stage) > problem.capacity_bytes[stage]:
            return {}
    return out


@dataclass(frozen=True, slots=True)
class FetchChoice:
    """One choice of the model: the staged tensors read in place, the modelled makespan."""

    model_cycles: int
    stay_home: frozenset


def balance_fetches(problem: HierarchyProblem, staged: dict[int, int] | None = None, max_front: int = 400,
                    count: int = 5) -> list[FetchChoice]:
    """The ``count`` choices of the two-machine model (Notes) with the shortest modelled
    makespans, shortest first (empty when nothing is staged).

    Examples
    --------
    Two host weights of 16 B over a 1-B/cycle link, read by two ops of 2 cycles: reading both
    in place takes 32; fetching w1 while op 0 reads w0 takes 16 + 4 (w1 is staged at hbm by
    cycle 16 and read there at 4 B/cycle): 20.

    >>> p = HierarchyProblem((2, 2), ((0,), (1,)), ((), ()), (16, 16), (16, 32, 256, 4096), (16, 8, 4, 1), 2,
    ...                      ((0, 1), (0, 2), (1, 2), (2, 3)), tensor_home=(3, 3))
    >>> best = balance_fetches(p)[0]
    >>> best.model_cycles, sorted(best.stay_home)
    (20, [0])
    """
    staged = staged_tensors(problem) if staged is None else staged
    if not staged:
        return []
    rows = problem.op_accesses()
    first = {}
    for t in staged:
        first.setdefault(next(a for a in problem.accesses(t) if problem.is_real(a)), []).append(t)
    fetch = {t: problem.hop_cycles(t, problem.home(t), s) for t, s in staged.items()}
    last = {t: max(a for a in problem.accesses(t) if problem.is_real(a)) for t in staged}
    front = [(0, 0, frozenset())]  # (op clock, DMA clock, staged tensors read in place)
    for i, row in enumerate(rows):
        deciding = sorted(first.get(i, ()))
        if not deciding and not any(t in staged for t, _ in row):
            d = problem.op_cycles(i, _level_bytes(problem, row, staged, frozenset()))
            front = [(a + d, b, st) for a, b, st in front]
            continue
        states = []
        for a, b, st in front:
            for stays in _subsets(deciding):
                now = st | stays
                arrive = b + sum(fetch[t] for t in deciding if t not in stays)
                start = max(a, arrive) if len(stays) < len(deciding) else a
                d = problem.op_cycles(i, _level_bytes(problem, row, staged, now))
                states.append((start + d, arrive, now))
        front = _pareto(states, max_front, {t for t in staged if last[t] > i})
    ranked = sorted(front, key=lambda x: (x[0], x[1], sorted(x[2])))
    return [FetchChoice(a, st) for a, _, st in ranked[:count]]


def _subsets(deciding: list[int]):
    """The staged tensors of one op that stay home, each choice once."""
    if len(deciding) > _MAX_SUBSET_TENSORS:
        return (frozenset(), frozenset(deciding))
    return tuple(frozenset(t for t, stay in zip(deciding, bits) if stay)
                 for bits in product((False, True), repeat=len(deciding)))


def _level_bytes(problem: HierarchyProblem, row, staged: dict[int, int], stays: frozenset) -> dict[int, int]:
    """An op's bytes per level: staged tensors at home or their staging level, the rest at level 0."""
    out: dict[int, int] = {}
    for t, _ in row:
        lv = (problem.home(t) if t in stays else staged[t]) if t in staged else 0
        out[lv] = out.get(lv, 0) + problem.tensor_bytes[t]
    return out


def _pareto(states: list, cap: int, still_read: set) -> list:
    """Per choice of the staged tensors read again later (``still_read``: they price later ops
    alike only within one choice), the states no other beats on both clocks, thinned evenly
    to a share of ``cap`` (ties: fewer read in place)."""
    groups: dict[frozenset, list] = {}
    for s in sorted(states, key=lambda x: (x[0], x[1], len(x[2]), sorted(x[2]))):
        groups.setdefault(frozenset(s[2] & still_read), []).append(s)
    share = max(1, cap // len(groups))
    front = []
    for key in sorted(groups, key=sorted):
        kept, best_dma = [], None
        for s in groups[key]:
            if best_dma is None or s[1] < best_dma:
                kept.append(s)
                best_dma = s[1]
        if len(kept) > share:
            kept = [kept[k * len(kept) // share] for k in range(share)]
        front += kept
    return front


def plan_fetch_balanced(problem: HierarchyProblem, others_home: frozenset = frozenset(), count: int = 5
                        ) -> tuple[HierarchySolution | None, dict]:
    """The shortest valid greedy plan of :func:`balance_fetches`' ``count`` best choices (the
    fetched tensors offered their staging level only; ``others_home``: the tensors that are not
    staged and stay home too), and what it did (``plans`` laid out, each worth ``num_ops`` op
    evaluations). None when nothing is staged or no plan validates.

    Examples
    --------
    >>> p = HierarchyProblem((2, 2), ((0,), (1,)), ((), ()), (16, 16), (16, 32, 256, 4096), (16, 8, 4, 1), 2,
    ...                      ((0, 1), (0, 2), (1, 2), (2, 3)), tensor_home=(3, 3))
    >>> s, info = plan_fetch_balanced(p)
    >>> s.makespan_cycles, s.level, info["model_cycles"]
    (20, ((3, 3), (3, 2)), 20)
    """
    staged = staged_tensors(problem)
    choices = balance_fetches(problem, staged, count=count)
    others = frozenset(others_home) - set(staged)
    best, best_choice = None, None
    for choice in choices:
        offered = {t: (s,) for t, s in staged.items() if t not in choice.stay_home}
        s = plan_hierarchy_greedy(problem, stay_home=others | choice.stay_home, offered_levels=offered)
        if s is not None and not validate_hierarchy(problem, s) and (
                best is None or s.makespan_cycles < best.makespan_cycles):
            best, best_choice = s, choice
    info = {"staged": len(staged), "plans": len(choices),
            "model_cycles": None if best_choice is None else best_choice.model_cycles,
            "makespan": None if best is None else best.makespan_cycles}
    return best, info
