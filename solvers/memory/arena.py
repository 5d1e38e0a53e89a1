"""From a level plan to the offset problem of its fast-memory buffers.

Every maximal run of a tensor's fast pieces (access points, kept gaps, a prefetch window,
an eviction window) becomes one buffer over the same point interval, so the offset
problem's live lower bound is exactly the level plan's fast peak, and offsets found for
it give every fast buffer an address. Over N levels (:func:`level_offset_problems`), one
offset problem per level, from :func:`~solvers.memory.levels.hierarchy_validate.level_pieces`.
"""

from __future__ import annotations

from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution
from solvers.memory.levels.hierarchy_validate import level_pieces
from solvers.memory.levels.problem import LevelProblem, LevelSolution
from solvers.memory.levels.validate import fast_pieces, held_fast_pieces, resolve_problem
from solvers.memory.offsets.problem import OffsetProblem

__all__ = ["fast_offset_problem", "level_offset_problems"]


def fast_offset_problem(problem: LevelProblem, solution: LevelSolution,
                        alignment_bytes: int = 1, hold: bool = False) -> tuple[OffsetProblem, tuple[int, ...]]:
    """The fast level's buffers as an :class:`OffsetProblem`, and each buffer's tensor.

    Tensor ids are those of the problem the solution is over (the split expansion when
    the problem has split groups). ``hold``: with several streams, each buffer over its piece
    held where the level has room (:func:`~solvers.memory.levels.validate.held_fast_pieces`), so
    the offsets keep it apart from the allocations that then need not wait for it.

    Examples
    --------
    Tensor 0 is produced fast by op 0 and kept to op 2 (points 1..5); tensor 1 lives at op 1:

    >>> p = LevelProblem((1, 1, 1), ((), (), (0,)), ((0,), (1,), ()), (4, 2), (8, 99), (4, 1))
    >>> s = LevelSolution(((True, True), (True,)), ((False, True), (False,)), (), (0, 1, 2), (1, 1, 1))
    >>> op, tensors = fast_offset_problem(p, s)
    >>> op.start, op.end, op.size_bytes, tensors
    ((1, 3), (6, 4), (4, 2), (0, 1))
    """
    expanded = resolve_problem(problem, solution)
    pieces = held_fast_pieces(expanded, solution) if hold else fast_pieces(expanded, solution)
    pieces = [pc for pc in pieces if expanded.tensor_bytes[pc[0]] > 0]
    return (OffsetProblem(size_bytes=tuple(expanded.tensor_bytes[t] for t, _, _ in pieces),
                          start=tuple(lo for _, lo, _ in pieces), end=tuple(hi for _, _, hi in pieces),
                          capacity_bytes=expanded.capacity_bytes[0],
                          alignment_bytes=(alignment_bytes,) * len(pieces),
                          names=tuple(expanded.tensor_name(t) for t, _, _ in pieces)),
            tuple(t for t, _, _ in pieces))


def level_offset_problems(problem: HierarchyProblem, solution: HierarchySolution, alignment_bytes: int = 1
                          ) -> tuple[tuple[OffsetProblem | None, tuple[int, ...]], ...]:
    """Per level, the offset problem of its buffers and each buffer's tensor (None: no buffer).

    With two levels, level 0's is :func:`fast_offset_problem` of the same plan
    (tests/solvers/memory/test_hierarchy.py).

    Examples
    --------
    A host tensor fetched to vmem over hbm for op 0: a buffer in each level.

    >>> from solvers.memory.levels.hierarchy import Move
    >>> from solvers.memory.levels.problem import TransferKind
    >>> p = HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2,))
    >>> hops = (Move(TransferKind.PREFETCH, 0, 1, 0, 2, 1, -1, 0, 0, 8),
    ...         Move(TransferKind.PREFETCH, 0, 1, 1, 1, 0, -1, 0, 8, 2))
    >>> per_level = level_offset_problems(p, HierarchySolution(((2, 0),), ((False, False),), hops, (10,), (4,)))
    >>> [(op.start, op.end, tensors) for op, tensors in per_level]
    [((0,), (2,), (0,)), ((0,), (1,), (0,)), ((0,), (3,), (0,))]
    """
    by_level: list[list[tuple[int, int, int]]] = [[] for _ in range(problem.num_levels)]
    for lv, t, lo, hi in level_pieces(problem, solution):
        if problem.tensor_bytes[t] > 0:
            by_level[lv].append((t, lo, hi))
    out = []
    for lv, pieces in enumerate(by_level):
        if not pieces:
            out.append((None, ()))
            continue
        out.append((OffsetProblem(size_bytes=tuple(problem.tensor_bytes[t] for t, _, _ in pieces),
                                  start=tuple(lo for _, lo, _ in pieces), end=tuple(hi for _, _, hi in pieces),
                                  capacity_bytes=problem.capacity_bytes[lv],
                                  alignment_bytes=(alignment_bytes,) * len(pieces),
                                  names=tuple(problem.tensor_name(t) for t, _, _ in pieces)),
                    tuple(t for t, _, _ in pieces)))
    return tuple(out)
