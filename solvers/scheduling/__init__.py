"""Joint placement and scheduling of a dataflow graph on devices, streams and links.

Glossary
--------
problem     :class:`SchedulingProblem`: ops x devices durations, edges with bytes, streams,
            links, memory, colocation, device classes (dense integer arrays).
solution    :class:`SchedulingSolution`: device, stream, start per op; transfers on links.
validate    :func:`validate_schedule` checks every rule; :func:`objective_value` scores.
bounds      :func:`lower_bound`: the best proven bound: critical path, total work, fractional
            load, placement-aware paths with memory, the LP relaxation, the segment chain.
structure   topological order, cut ops and segments (linear time).
forced      :func:`restrict_placements`: op-device pairs memory, colocation or links rule out.
path_bounds :func:`placement_path_bound`, :func:`memory_path_bound`: paths that pay their
            devices' durations and transfers, and cross devices where memory forces it.
linear_relaxation :func:`lp_bound`: fractional placement, times, communication, work and memory
            per device class; certified from the LP duals.
decomposition :func:`chain_segment_bound`: segment bounds joined at cut ops on one device.
heft        :class:`HeftScheduler`: HEFT list scheduling (heuristic, hint for CP-SAT).
fallback    :func:`first_fit_placement` by memory; :func:`fallback_schedule` (in heft) sequences
            it with HEFT when HEFT alone finds no schedule.
listsearch  :func:`list_search`: serial SGS + double justification local search when the
            placement is fixed and transfers are free (P|prec|Cmax, job shops).
streams     :func:`assign_streams`: streams for timed ops by interval-graph colouring.
cpsat       :class:`CpSatScheduler`: CP-SAT model (exact for small and mid-size graphs); a
            package, one module per job (options, variables, model, symmetry, hints,
            extraction, search, segments, scheduler).
"""
from solvers.scheduling.problem import (Objective, ScheduledTransfer, SchedulingProblem, SchedulingSolution,
                                        merged_colocation_groups)
from solvers.scheduling.validate import memory_profile, objective_value, validate_schedule
from solvers.scheduling.bounds import (bound_segments, critical_path_bound, cut_vertices, fractional_load_bound,
                                       lower_bound, lower_bounds, segment_bound, segment_problems,
                                       max_op_bound, min_durations, min_transfer_cycles,
                                       topological_order, work_bound)
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.path_bounds import memory_path_bound, placement_path_bound
from solvers.scheduling.linear_relaxation import LpBoundOptions, lp_bound, lp_relaxation
from solvers.scheduling.decomposition import chain_segment_bound, prune_free_ends
from solvers.scheduling.fallback import first_fit_placement
from solvers.scheduling.heft import HeftScheduler, fallback_schedule, heft_schedule, upward_ranks
from solvers.scheduling.listsearch import (ListSearchOptions, ListSearchScheduler, fixed_placement,
                                           list_search)
from solvers.scheduling.cpsat import (CpSatOptions, CpSatScheduler, SchedulingVars, add_colocation,
                                      add_devices, add_hint, add_links, add_load_cuts, add_memory,
                                      add_objective, add_placement, add_precedence,
                                      add_symmetry_breaking, assign_streams, build,
                                      canonical_solution, create_variables, interchangeable_classes,
                                      segment_lower_bound, segment_schedule)

__all__ = [
    "Objective", "ScheduledTransfer", "SchedulingProblem", "SchedulingSolution", "merged_colocation_groups",
    "validate_schedule", "objective_value", "memory_profile",
    "lower_bound", "critical_path_bound", "work_bound", "fractional_load_bound", "max_op_bound",
    "min_durations", "min_transfer_cycles", "topological_order", "cut_vertices", "segment_problems",
    "segment_bound", "lower_bounds", "bound_segments", "restrict_placements", "placement_path_bound",
    "memory_path_bound", "LpBoundOptions", "lp_bound", "lp_relaxation", "chain_segment_bound", "prune_free_ends",
    "HeftScheduler", "heft_schedule", "upward_ranks", "first_fit_placement", "fallback_schedule",
    "ListSearchOptions", "ListSearchScheduler", "fixed_placement", "list_search",
    "CpSatScheduler", "CpSatOptions", "SchedulingVars", "build", "create_variables",
    "add_placement", "add_devices", "add_precedence", "add_links", "add_colocation", "add_memory",
    "add_symmetry_breaking", "add_load_cuts", "add_objective", "add_hint",
    "interchangeable_classes", "canonical_solution", "assign_streams", "segment_lower_bound",
    "segment_schedule",
]
