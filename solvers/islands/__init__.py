"""Island planning's top level: split a workload's portions over accelerator islands.

Glossary
--------
portion     a group of ops that goes to one island as a whole (acyclic between portions).
island      devices joined by fast links; islands talk over one shared network link.
bottleneck  the largest of every island's work per device lane and the network's busy cycles.
"""
from solvers.islands.split import CpSatSplitSolver, SplitProblem, SplitSolution, split_errors, split_loads

__all__ = ["CpSatSplitSolver", "SplitProblem", "SplitSolution", "split_errors", "split_loads"]
