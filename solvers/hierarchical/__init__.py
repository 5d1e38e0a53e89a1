"""Placement and scheduling at scale: grouping, group placement, and LNS refinement with CP-SAT.

Glossary
--------
budget       :data:`LNS`: the LNS calibration of the shared :class:`solvers.budget.Budget`
             (CP-SAT deterministic time plus counted steps; the wall clock only a net).
state        :class:`ScheduleState`: a schedule as arrays LNS rewrites; :func:`compact`
             left-shifts it keeping every resource's order.
window       :class:`Neighbourhood` and :func:`build_window`: the CP-SAT model of a few
             free ops, everything else fixed in time or shifted by one common offset.
lns          :class:`LnsScheduler`: large-neighbourhood search from a warm start.
grouping     :func:`coarsen`: groups of ops whose quotient graph is a DAG, and the coarse
             :class:`~solvers.scheduling.SchedulingProblem` (:class:`Coarsening`).
placer       :class:`HierarchicalScheduler`: group, place the groups with CP-SAT, uncoarsen.
quick_bound  :func:`quick_lower_bound`: ``lower_bound``'s value, fast on large graphs.
strategy     :class:`StrategyScheduler`: flat CP-SAT + LNS on small graphs, hierarchical +
             LNS on large ones (the planner's default).
"""
from solvers.hierarchical.budget import LNS, STEPS_PER_UNIT
from solvers.hierarchical.state import GraphIndex, ScheduleState, compact
from solvers.scheduling.problem import merged_colocation_groups  # the shared union-find, re-exported
from solvers.hierarchical.window import (Boundary, Neighbourhood, WindowMove, WindowVars,
                                         add_window_hint, apply_move, build_window,
                                         compute_boundary, extract_window)
from solvers.hierarchical.lns import LnsOptions, LnsScheduler, refine
from solvers.hierarchical.grouping import Coarsening, coarse_problem, coarsen, is_convex
from solvers.hierarchical.placer import (HierarchicalOptions, HierarchicalScheduler, default_groups,
                                         expand_schedule, place_groups, project_placement)
from solvers.hierarchical.quick_bound import aggregated_rows, quick_lower_bound
from solvers.hierarchical.strategy import STRATEGIES, StrategyOptions, StrategyScheduler, choose_strategy

__all__ = [
    "LNS", "STEPS_PER_UNIT", "GraphIndex", "ScheduleState", "compact", "merged_colocation_groups",
    "Neighbourhood", "Boundary", "WindowVars", "WindowMove", "compute_boundary", "build_window",
    "add_window_hint", "extract_window", "apply_move", "LnsOptions", "LnsScheduler", "refine",
    "Coarsening", "coarsen", "coarse_problem", "is_convex",
    "HierarchicalOptions", "HierarchicalScheduler", "default_groups", "expand_schedule",
    "place_groups", "project_placement", "aggregated_rows", "quick_lower_bound",
    "STRATEGIES", "StrategyOptions", "StrategyScheduler", "choose_strategy",
]
