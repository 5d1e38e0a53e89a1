"""CP-SAT joint placement and scheduling (moved here to be split by job: see model.py)."""
from solvers.scheduling.cpsat.model import (CpSatOptions, CpSatScheduler, SchedulingVars, add_colocation,
                                            add_devices, add_hint, add_links, add_load_cuts, add_memory,
                                            add_objective, add_placement, add_precedence,
                                            add_symmetry_breaking, assign_streams, build,
                                            canonical_solution, create_variables, interchangeable_classes,
                                            segment_lower_bound, segment_schedule)

__all__ = [
    "CpSatScheduler", "CpSatOptions", "SchedulingVars", "build", "create_variables", "add_placement",
    "add_devices", "add_precedence", "add_links", "add_colocation", "add_memory", "add_symmetry_breaking",
    "add_load_cuts", "add_objective", "add_hint", "interchangeable_classes", "canonical_solution",
    "assign_streams", "segment_lower_bound", "segment_schedule",
]
