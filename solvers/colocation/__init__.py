"""Co-location of many models on processors: vector bin packing and variant choice.

Glossary
--------
dimension   a resource per processor: operations per second, IO bytes per second, storage.
class       a pool of identical processors (bins) with one capacity vector and a cost.
item type   identical tenants (or replicas) grouped, with a multiplicity.
peak (bp)   the largest utilization over processors and dimensions, in basis points.
variant     one model serving a task at some precision, latency, capacity and cost.
"""
from solvers.colocation.bounds import Shortfall, cost_lower_bound, explain_infeasibility, max_utilization_lower_bound
from solvers.colocation.cpsat import CpSatColocationSolver, build_colocation_model, canonicalize
from solvers.colocation.greedy import FirstFitDecreasingSolver, bin_completion, first_fit_decreasing
from solvers.colocation.instances import random_fleet, triplet_instance
from solvers.colocation.milp import ColumnGenerationColocationSolver, Pattern, pattern_lower_bound
from solvers.colocation.problem import BASIS_POINTS, ColocationObjective, ColocationProblem, ColocationSolution
from solvers.colocation.validate import bin_loads, colocation_objective, utilization_bp, validate_colocation
from solvers.colocation.variants import (CpSatVariantSolver, VariantProblem, VariantSolution, validate_variants,
                                         variant_cost)

__all__ = [
    "BASIS_POINTS", "ColocationObjective", "ColocationProblem", "ColocationSolution",
    "CpSatColocationSolver", "FirstFitDecreasingSolver", "Shortfall", "bin_loads", "build_colocation_model",
    "canonicalize", "colocation_objective", "cost_lower_bound", "explain_infeasibility", "first_fit_decreasing",
    "max_utilization_lower_bound", "utilization_bp", "validate_colocation",
    "ColumnGenerationColocationSolver", "Pattern", "pattern_lower_bound", "bin_completion",
    "CpSatVariantSolver", "VariantProblem", "VariantSolution", "validate_variants", "variant_cost",
    "random_fleet", "triplet_instance",
]
