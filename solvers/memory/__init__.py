"""Memory planning: which level each tensor lives in over time, and where in that level.

Glossary (in the manner of XLA's memory-space assignment "quick reference")
--------------------------------------------------------------------------
level        a memory of one device, fastest first (index 0 = fast, e.g. VMEM; 1 = slow, HBM).
access       a use of a tensor by an op; the op's duration is the roofline
             ``max(compute, sum over levels of bytes / bandwidth)``.
prefetch     slow -> fast DMA started after a *trigger* op, waited for by its consumer.
evict        fast -> slow DMA of a produced tensor, waited for by a *release* op.
point        discrete capacity time: ``2i+1`` during op i, ``2i`` the gap before it.
buffer       a fast-memory allocation live over points ``[start, end)``; it needs an offset.
peak         the arena size: ``max(offset + size)``; live LB = max live bytes at a point.

Subpackages
-----------
:mod:`solvers.memory.levels`   level assignment with prefetch/evict and splitting.
:mod:`solvers.memory.offsets`  offset assignment (CP-SAT NoOverlap2D, greedy-by-size, first-fit).
:mod:`solvers.memory.arena`    from a level plan to the offset problem of its fast buffers
                               (of every level's buffers, over N levels).
"""

from solvers.memory import levels, offsets
from solvers.memory.arena import fast_offset_problem, level_offset_problems

__all__ = ["levels", "offsets", "fast_offset_problem", "level_offset_problems"]
