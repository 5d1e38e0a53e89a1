"""From a level plan to the offset problem of its fast-memory buffers.

Every maximal run of a tensor's fast pieces (access points, kept gaps, a prefetch window,
an eviction window) becomes one buffer over the same point interval, so the offset
problem's live lower bound is exactly the level plan's fast peak, and offsets found for
it give every fast buffer an address.
"""

from __future__ import annotations

from solvers.memory.levels.problem import LevelProblem, LevelSolution
from solvers.memory.levels.validate import fast_pieces, resolve_problem
from solvers.memory.offsets.problem import OffsetProblem

__all__ = ["fast_offset_problem"]


def fast_offset_problem(problem: LevelProblem, solution: LevelSolution,
                        alignment_bytes: int = 1) -> tuple[OffsetProblem, tuple[int, ...]]:
    """The fast level's buffers as an :class:`OffsetProblem`, and each buffer's tensor.

    Tensor ids are those of the problem the solution is over (the split expansion when
    the problem has split groups).

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
    pieces = fast_pieces(expanded, solution)
    pieces = [pc for pc in pieces if expanded.tensor_bytes[pc[0]] > 0]
    return (OffsetProblem(size_bytes=tuple(expanded.tensor_bytes[t] for t, _, _ in pieces),
                          start=tuple(lo for _, lo, _ in pieces), end=tuple(hi for _, _, hi in pieces),
                          capacity_bytes=expanded.capacity_bytes[0],
                          alignment_bytes=(alignment_bytes,) * len(pieces),
                          names=tuple(expanded.tensor_name(t) for t, _, _ in pieces)),
            tuple(t for t, _, _ in pieces))
