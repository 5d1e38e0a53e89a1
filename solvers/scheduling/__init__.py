"""Joint placement and scheduling of a dataflow graph on devices, streams and links."""
from solvers.scheduling.problem import Objective, ScheduledTransfer, SchedulingProblem, SchedulingSolution

__all__ = ["Objective", "ScheduledTransfer", "SchedulingProblem", "SchedulingSolution"]
