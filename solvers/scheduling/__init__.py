"""Joint placement and scheduling of a dataflow graph on devices, streams and links.

Glossary
--------
problem     :class:`SchedulingProblem`: ops x devices durations, edges with bytes, streams,
            links, memory, colocation, device classes (dense integer arrays).
solution    :class:`SchedulingSolution`: device, stream, start per op; transfers on links.
validate    :func:`validate_schedule` checks every rule; :func:`objective_value` scores.
bounds      :func:`lower_bound`: critical path, total work, fractional load (proven).
heft        :class:`HeftScheduler`: HEFT list scheduling (heuristic, hint for CP-SAT).
fallback    :func:`fallback_schedule`: first-fit placement by memory when HEFT finds none.
listsearch  :func:`list_search`: serial SGS + double justification local search when the
            placement is fixed and transfers are free (P|prec|Cmax, job shops).
cpsat       :class:`CpSatScheduler`: CP-SAT model (exact for small and mid-size graphs).
"""
from solvers.scheduling.problem import Objective, ScheduledTransfer, SchedulingProblem, SchedulingSolution
from solvers.scheduling.validate import memory_profile, objective_value, validate_schedule
from solvers.scheduling.bounds import (critical_path_bound, cut_vertices, fractional_load_bound, lower_bound,
                                       segment_bound, segment_problems,
                                       max_op_bound, min_durations, min_transfer_cycles,
                                       topological_order, work_bound)
from solvers.scheduling.heft import HeftScheduler, heft_schedule, upward_ranks
from solvers.scheduling.fallback import fallback_schedule, first_fit_placement
from solvers.scheduling.listsearch import (ListSearchOptions, ListSearchScheduler, fixed_placement,
                                           list_search)
from solvers.scheduling.cpsat import (CpSatOptions, CpSatScheduler, SchedulingVars, add_colocation,
                                      add_devices, add_hint, add_links, add_load_cuts, add_memory,
                                      add_objective, add_placement, add_precedence,
                                      add_symmetry_breaking, assign_streams, build,
                                      canonical_solution, create_variables, interchangeable_classes,
                                      segment_lower_bound, segment_schedule)

__all__ = [
    "Objective", "ScheduledTransfer", "SchedulingProblem", "SchedulingSolution",
    "validate_schedule", "objective_value", "memory_profile",
    "lower_bound", "critical_path_bound", "work_bound", "fractional_load_bound", "max_op_bound",
    "min_durations", "min_transfer_cycles", "topological_order", "cut_vertices", "segment_problems",
    "segment_bound",
    "HeftScheduler", "heft_schedule", "upward_ranks", "first_fit_placement", "fallback_schedule",
    "ListSearchOptions", "ListSearchScheduler", "fixed_placement", "list_search",
    "CpSatScheduler", "CpSatOptions", "SchedulingVars", "build", "create_variables",
    "add_placement", "add_devices", "add_precedence", "add_links", "add_colocation", "add_memory",
    "add_symmetry_breaking", "add_load_cuts", "add_objective", "add_hint",
    "interchangeable_classes", "canonical_solution", "assign_streams", "segment_lower_bound",
    "segment_schedule",
]
