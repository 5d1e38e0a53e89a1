"""Max-load partitioning: the throughput objective of Tarnawski et al. (NeurIPS 2020).

Glossary
--------
problem     :class:`PlacementProblem`: per-node accelerator and CPU times, output
            communication cost, sizes, memory cap, colour classes, k accelerators, c CPUs;
            ``contiguous`` restricts every device to a convex piece of the forward DAG.
solution    :class:`PlacementSolution`: a device per node (accelerators first, then CPUs).
load        accelerator: compute + communication in the paper's "calls" model (each node
            whose output crosses to another device costs its ``comm_time`` once on its own
            accelerator and once on each distinct consuming accelerator); CPU: compute only.
validate    :func:`validate_placement`, :func:`max_load`, :func:`device_loads`.
bounds      :func:`lower_bound` (largest group, fractional LP split), proven.
greedy      :class:`GreedyPlacementSolver`: balanced linear split of a topological order.
cpsat       :class:`CpSatPlacementSolver`: exact CP-SAT model, contiguous or not.
"""
from solvers.placement.problem import FORBIDDEN, PlacementProblem, PlacementSolution
from solvers.placement.validate import contiguity_violations, device_loads, max_load, validate_placement
from solvers.placement.bounds import fractional_bound, group_bound, lower_bound, topological_order
from solvers.placement.greedy import GreedyPlacementSolver, greedy_placement, linear_split
from solvers.placement.cpsat import CpSatPlacementSolver, PlacementVars, build

__all__ = [
    "FORBIDDEN", "PlacementProblem", "PlacementSolution",
    "contiguity_violations", "device_loads", "max_load", "validate_placement",
    "fractional_bound", "group_bound", "lower_bound", "topological_order",
    "GreedyPlacementSolver", "greedy_placement", "linear_split",
    "CpSatPlacementSolver", "PlacementVars", "build",
]
