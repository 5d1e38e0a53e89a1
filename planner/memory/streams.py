"""Several compute streams: keep a level plan made for the by-address memory order when shorter.

The level solver plans a several-stream device under the point-axis memory order; the plan is
then timed by its fast offsets (an allocation waits only for the frees it overlaps in address,
docs/memory.md, "Several compute streams"). :func:`shorter_by_address` asks
:func:`~solvers.memory.levels.stream_offsets.plan_streams_by_address` for a plan (the
incumbent's or a greedy one's decisions, with offsets packed to keep the streams' pieces apart)
that is strictly shorter under that order, and gives the figures the report and the verifier
read for its offsets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from solvers.core import SolveOptions
from solvers.memory.arena import fast_offset_problem
from solvers.memory.levels import LevelSolution, fast_pieces, replay_levels, resolve_problem
from solvers.memory.levels.stream_offsets import plan_streams_by_address
from solvers.memory.offsets import GreedyBySizeOffsetSolver, live_bytes_lower_bound

__all__ = ["shorter_by_address"]


def shorter_by_address(bridge, solution: LevelSolution, offsets: tuple[int, ...], alignment_bytes: int,
                       fast_capacity_bytes: int) -> tuple[LevelSolution, tuple[int, ...], dict[str, Any]] | None:
    """``(solution, its fast offsets, stats)`` of a several-stream plan strictly shorter under the
    by-address memory order than ``solution`` with ``offsets``, or None (one stream, shared
    bandwidth, or nothing shorter).

    The stats replace the offset figures of ``solution`` (peak, live-bytes bound, greedy-by-size
    on the same buffers) and record both makespans (``by_address``).
    """
    problem = bridge.problem
    found = plan_streams_by_address(problem, solution, offsets, alignment_bytes)
    if found is None:
        return None
    expanded = resolve_problem(problem, found)
    before = replay_levels(expanded, solution, fast_offsets=offsets).makespan_cycles
    sized = [(found.fast_offsets[n], expanded.tensor_bytes[t])
             for n, (t, _, _) in enumerate(fast_pieces(expanded, found)) if expanded.tensor_bytes[t]]
    off_problem, _ = fast_offset_problem(problem, found, alignment_bytes)
    off_problem = replace(off_problem, capacity_bytes=fast_capacity_bytes)
    greedy = GreedyBySizeOffsetSolver().solve(off_problem, SolveOptions())
    lb = live_bytes_lower_bound(off_problem)
    stats = {
        "fast_peak_bytes": max((at + size for at, size in sized), default=0),
        "fast_peak_bound_bytes": lb,
        "fast_live_lower_bound_bytes": lb,
        "fast_offsets_status": "FEASIBLE",
        "fast_offsets_stopped_by": "finished",
        "fast_offsets_dtime": None,
        "fast_peak_greedy_by_size_bytes": (greedy.objective if greedy.objective is not None
                                           else greedy.stats.get("peak_bytes")),
        "split_factors": list(found.split_factors),
        "by_address": {"level_plan_device_cycles": before, "kept_device_cycles": found.makespan_cycles},
    }
    return found, found.fast_offsets, stats
