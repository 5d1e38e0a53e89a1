"""Several streams with splits: the whole fast level, where address alignment costs nothing.

The level solver counts exact bytes at any address; lowering rounds each fast buffer up to the
spec's alignment, so :func:`~planner.memory.bridge.build_device_problem` holds back 32
alignments of the fast level for that rounding and for fragmentation. Where every buffer a plan
may put in the fast level (each tensor, and each portion of each split factor offered) is a
whole number of alignments, rounding adds nothing, and the reserve only hides room: on
``tests/data/specs/memory-streams-split.yaml`` the 2 KiB held back of a 2-MiB SRAM is what keeps
two 1-MiB activations (one per stream) from being fast at once.

So, on a device with several streams and split groups, the level plan is also made for the whole
level (one more solve with the first attempt's shares) and its offsets packed within it; it
replaces the plan made with the reserve only when its level plan, timed by its own offsets,
ends strictly earlier (:func:`shorter`). Packing is the judge of fragmentation: if the offsets
do not fit the whole level, the candidate is dropped. The lowered plan is then replayed and
verified as every plan is. Other devices (one stream, no splits, shared bandwidth, link
transfers) are untouched, so their plans keep their bytes.
"""

from __future__ import annotations

from solvers.memory.levels import LevelProblem, LevelSolution, replay_levels
from solvers.memory.levels.problem import ceil_div

__all__ = ["aligned_everywhere", "offers_full_level", "level_plan_cycles", "shorter"]


def aligned_everywhere(problem: LevelProblem, alignment_bytes: int) -> bool:
    """Whether every tensor of ``problem`` and every portion of every split factor it offers is a
    whole number of ``alignment_bytes`` (so rounding buffers up to the alignment adds nothing).

    Examples
    --------
    >>> from solvers.memory.levels.problem import SplitGroup
    >>> p = LevelProblem((4, 4), ((0,), (1,)), ((1,), ()), (128, 256), (512, 9999), (4, 1),
    ...                  splits=(SplitGroup(0, 0, (0, 1), (1, 2)),))
    >>> aligned_everywhere(p, 64), aligned_everywhere(p, 128)  # halves of 128 B are 64 B
    (True, False)
    """
    align = max(1, alignment_bytes)
    sizes = set(problem.tensor_bytes)
    for group in problem.splits:
        sizes |= {ceil_div(problem.tensor_bytes[t], k) for k in group.factors for t in group.tensors}
    return all(size % align == 0 for size in sizes)


def offers_full_level(bridge, has_transfers: bool, alignment_bytes: int) -> bool:
    """Whether the device of ``bridge`` gets a level plan for its whole fast level: several
    streams, split groups, unshared bandwidth, no link transfers, a reserve held back, and
    every buffer a whole number of alignments."""
    problem = bridge.problem
    return (problem.multi_stream and bool(problem.splits) and not problem.shared_bandwidth and not has_transfers
            and bridge.reserve_bytes > 0 and aligned_everywhere(problem, alignment_bytes))


def level_plan_cycles(problem: LevelProblem, solution: LevelSolution, offsets) -> int:
    """The device cycles of ``solution`` timed by its fast ``offsets`` (the by-address memory
    order the lowered program runs; docs/memory.md, "Several compute streams")."""
    return replay_levels(problem, solution, fast_offsets=tuple(offsets)).makespan_cycles


def shorter(reserved: tuple[LevelProblem, LevelSolution, tuple[int, ...]],
            whole: tuple[LevelProblem, LevelSolution, tuple[int, ...]] | None) -> bool:
    """Whether the plan for the whole level (``(problem, solution, offsets)``, None when its
    offsets did not pack) ends strictly before the plan made with the reserve.

    Examples
    --------
    >>> p = LevelProblem((4,), ((0,),), ((),), (64,), (128, 9999), (64, 16), op_streams=(0,))
    >>> s = LevelSolution(((False,),), ((),), (), (0,), (4,))
    >>> shorter((p, s, ()), None)
    False
    """
    if whole is None:
        return False
    return level_plan_cycles(*whole) < level_plan_cycles(*reserved)
