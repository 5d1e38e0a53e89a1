"""CP-SAT joint placement and scheduling, one module per job.

options     :class:`CpSatOptions` and the deterministic-time budget they imply.
variables   :class:`SchedulingVars`, :func:`create_variables`: the model's variables.
model       the constraint families (``add_<family>``) and :func:`build` (formulation Notes).
symmetry    interchangeable devices: value precedence, canonical relabelling of hints.
hints       warm starts: HEFT or ``options.hint``, the list search, :func:`add_hint`.
extraction  a solved model back as a schedule; the solve's stats.
search      the CP-SAT solves: bound probe, main solve, the stage sequence.
segments    segment bounds and the glued segment schedule (nested solves, child budgets).
scheduler   :class:`CpSatScheduler` (strategy and measurements in its Notes).
"""
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.cpsat.variables import SchedulingVars, create_variables
from solvers.scheduling.cpsat.model import (add_colocation, add_devices, add_links, add_load_cuts, add_memory,
                                            add_objective, add_placement, add_precedence, build)
from solvers.scheduling.cpsat.symmetry import add_symmetry_breaking, canonical_solution, interchangeable_classes
from solvers.scheduling.cpsat.hints import add_hint
from solvers.scheduling.cpsat.segments import segment_lower_bound, segment_schedule
from solvers.scheduling.cpsat.scheduler import CpSatScheduler
from solvers.scheduling.streams import assign_streams

__all__ = [
    "CpSatScheduler",
    "CpSatOptions",
    "SchedulingVars",
    "build",
    "create_variables",
    "add_placement",
    "add_devices",
    "add_precedence",
    "add_links",
    "add_colocation",
    "add_memory",
    "add_symmetry_breaking",
    "add_load_cuts",
    "add_objective",
    "add_hint",
    "interchangeable_classes",
    "canonical_solution",
    "assign_streams",
    "segment_lower_bound",
    "segment_schedule",
]
