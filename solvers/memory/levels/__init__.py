"""Memory-level assignment over a fixed op order: residency, prefetch, eviction, splitting.

Glossary
--------
fast / slow   the two levels (index 0 and 1), e.g. VMEM and HBM; fast has a capacity.
access        a use of a tensor by an op (its producer write or a read); virtual accesses
              mark "starts in slow" (inputs, weights) and "must end in slow" (live-out).
kept          the fast copy stays across a gap between two accesses.
prefetch      a slow -> fast DMA before a fast access that was not kept, started after a
              chosen *trigger* op (a control dependency, a signal/wait in the binary).
evict         a fast -> slow DMA of the producer's copy, waited for by a *release* op.
point         the capacity time axis: ``2i+1`` during op i, ``2i`` the gap before it.
split         run a group of ops k times on ``ceil(size/k)`` portions of split tensors.
rate          a bandwidth in exact bytes per cycle (int or Fraction, e.g.
              ``Fraction(bytes_per_s, clock_hz)``); every ceil is exact (:func:`cycles_for_bytes`).
window        a run of consecutive ops re-optimised exactly with every other decision fixed.

N levels (issue 14): :class:`HierarchyProblem` (any number of levels joined by DMA paths,
moves along routes, capacity per level at every point), its validator
(:func:`validate_hierarchy`), :class:`CpSatHierarchySolver` (exact), :class:`GreedyHierarchySolver` /
:class:`AllHomeHierarchySolver`; two levels are :class:`LevelProblem` exactly
(:func:`from_level_problem`, :func:`from_level_solution`). Sound lower bounds for any size
(:func:`hierarchy_lower_bound`: per-op fractional knapsack and a CP-SAT relaxation of which
tensors leave home); above 64 ops the CP-SAT solver reports that bound and improves the
relaxation-guided greedy by :func:`search_stay_home`, then re-optimises windows of consecutive ops
exactly (:func:`window_search`). Split groups: expand first (:func:`expand_hierarchy_splits`);
the solvers enumerate the factor vectors. Offsets in every level:
:mod:`solvers.memory.levels.hierarchy_offsets` (CP-SAT NoOverlap2D per level).

Heads and tails (:mod:`solvers.memory.levels.heads_tails`): release times and tails from the
rest of a multi-device plan, the objective ``max(makespan, end + tail)``, its exact solver and
a sound lower bound.

Several streams, exactly over cycle time (:mod:`solvers.memory.levels.stream_time`): the level
model with the fast offsets in it and the by-address memory order the lowered program enforces
(:func:`solve_stream_time`), for a fixed merged order, streams and split factors.

Solvers: :class:`CpSatLevelSolver` (exact, one CP-SAT model per split choice, up to 64 ops;
window search around the best plan above), :class:`GreedyLevelSolver` (Belady-like),
:class:`AllSlowLevelSolver` (everything in HBM).
"""

from solvers.memory.levels.cpsat import (
    CpSatLevelSolver, LevelVars, add_durations, add_fast_capacity, add_makespan, add_memory_order, add_residency,
    add_transfers, build_level_decisions, build_level_model, exact_model_fits,
)
from solvers.memory.levels.greedy import AllSlowLevelSolver, GreedyLevelSolver, plan_all_slow, plan_greedy, retime
from solvers.memory.levels.hierarchy import (
    HierarchyProblem, HierarchySolution, Move, from_level_problem, from_level_solution,
)
from solvers.memory.levels.hierarchy_cpsat import (
    CpSatHierarchySolver, HierarchyVars, HopVars, add_level_capacities, add_level_durations, add_levels, add_moves,
    build_hierarchy_model,
)
from solvers.memory.levels.hierarchy_greedy import (
    AllHomeHierarchySolver, GreedyHierarchySolver, plan_hierarchy_all_home, plan_hierarchy_best, plan_hierarchy_greedy,
    retime_hierarchy, search_stay_home,
)
from solvers.memory.levels.hierarchy_validate import (
    HierarchyMetrics, HierarchyReplay, hierarchy_metrics, hierarchy_op_durations, level_occupancy, level_pieces,
    op_level_bytes, replay_hierarchy, required_moves, validate_hierarchy,
)
from solvers.memory.levels.hierarchy_split import expand_hierarchy_splits, hierarchy_split_choices, solve_each_split
from solvers.memory.levels.hierarchy_window import WindowSettings, improve_window, window_search
from solvers.memory.levels.hierarchy_bounds import (
    RelaxationResult, build_bound_model, hierarchy_lower_bound, op_cycle_lower_bounds, relaxation_stays_home,
    solve_bound_relaxation,
)
from solvers.memory.levels.problem import (
    LevelProblem, LevelSolution, SplitGroup, Transfer, TransferKind, ceil_div, cycles_for_bytes, to_rate,
)
from solvers.memory.levels.split import SplitMap, expand_splits, split_factor_choices
from solvers.memory.levels.stream_offsets import pack_stream_offsets, plan_streams_by_address, retime_with_offsets, timed_by
from solvers.memory.levels.stream_time import (
    StreamTimeVars, build_stream_time_model, segment_count, solve_stream_time, time_model_fits,
)
from solvers.memory.levels.validate import (
    LevelMetrics, Replay, fast_occupancy, fast_piece_events, fast_pieces, level_metrics, makespan_lower_bound, memory_waits,
    op_duration_lower_bounds, op_durations, replay_levels, required_transfers, resolve_problem, validate_levels,
)

__all__ = [
    "LevelProblem", "LevelSolution", "SplitGroup", "Transfer", "TransferKind", "ceil_div", "cycles_for_bytes",
    "to_rate",
    "SplitMap", "expand_splits", "split_factor_choices",
    "resolve_problem", "required_transfers", "op_durations", "fast_pieces", "fast_occupancy", "fast_piece_events",
    "memory_waits",
    "validate_levels",
    "Replay", "replay_levels", "LevelMetrics", "level_metrics", "op_duration_lower_bounds", "makespan_lower_bound",
    "retime", "plan_all_slow", "plan_greedy", "AllSlowLevelSolver", "GreedyLevelSolver",
    "pack_stream_offsets", "retime_with_offsets", "plan_streams_by_address", "timed_by",
    "StreamTimeVars", "build_stream_time_model", "segment_count", "solve_stream_time", "time_model_fits",
    "CpSatLevelSolver", "LevelVars", "build_level_model", "build_level_decisions", "exact_model_fits", "add_residency", "add_durations", "add_transfers",
    "add_fast_capacity", "add_memory_order", "add_makespan",
    "HierarchyProblem", "HierarchySolution", "Move", "from_level_problem", "from_level_solution",
    "required_moves", "op_level_bytes", "hierarchy_op_durations", "level_pieces", "level_occupancy",
    "validate_hierarchy", "HierarchyReplay", "replay_hierarchy", "HierarchyMetrics", "hierarchy_metrics",
    "retime_hierarchy", "plan_hierarchy_all_home", "plan_hierarchy_greedy", "plan_hierarchy_best", "search_stay_home",
    "expand_hierarchy_splits", "hierarchy_split_choices", "solve_each_split", "WindowSettings", "improve_window",
    "window_search",
    "AllHomeHierarchySolver", "GreedyHierarchySolver", "HopVars", "HierarchyVars", "build_hierarchy_model",
    "add_levels", "add_level_durations", "add_moves", "add_level_capacities", "CpSatHierarchySolver",
    "op_cycle_lower_bounds", "build_bound_model", "relaxation_stays_home", "RelaxationResult",
    "solve_bound_relaxation", "hierarchy_lower_bound",
]
