"""From a policy's decision to a device per op that respects the problem's placement rules.

Notes
-----
An op runs on its group's device. Two rules of :class:`~solvers.scheduling.SchedulingProblem`
can forbid that, and are repaired deterministically (the repair is part of the environment,
not of the sampled action, so it does not enter the gradient):

1. the op may not run on that device (duration ``-1``): it goes to the allowed device its
   group's placer ranks highest (ties: lowest index);
2. colocation: every member of a (merged) colocation group goes where the member first in
   topological order goes, if every member may run there, else to the device every member
   allows that the leader's group ranks highest.

What remains (devices without a link between producer and consumer, memory) is checked by
the list scheduler; a placement it cannot sequence is an infeasible sample.
"""

from __future__ import annotations

import numpy as np

from solvers.learned.policy import Decision
from solvers.scheduling.bounds import topological_order
from solvers.scheduling.problem import SchedulingProblem, merged_colocation_groups

__all__ = ["PlacementDecoder"]


class PlacementDecoder:
    """Turns :class:`~solvers.learned.policy.Decision` objects into placements (see Notes).

    Examples
    --------
    Op 1 may not run on device 0, so it leaves its group's device for device 1:

    >>> p = SchedulingProblem(((4, 4), (-1, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> decoder = PlacementDecoder(p)
    >>> d = Decision(np.array([0, 0]), np.array([0]))
    >>> decoder.decode(d, np.log(np.array([[0.9, 0.1]])))
    (0, 1)
    """

    def __init__(self, problem: SchedulingProblem) -> None:
        self.allowed = np.asarray(problem.durations_cycles) >= 0
        position = {op: k for k, op in enumerate(topological_order(problem))}
        self.colocated: list[tuple[np.ndarray, int, np.ndarray]] = []
        for members in merged_colocation_groups(problem):
            leader = min(members, key=position.__getitem__)
            common = self.allowed[list(members)].all(axis=0)
            self.colocated.append((np.array(members), leader, common))

    def decode(self, decision: Decision, device_log_probs: np.ndarray) -> tuple[int, ...]:
        """A device per op for ``decision`` under the placer's ``device_log_probs`` (groups x devices)."""
        devices = decision.op_devices().copy()
        preference = device_log_probs[decision.groups]
        ops = np.arange(len(devices))
        forbidden = ~self.allowed[ops, devices]
        if forbidden.any():
            ranked = np.where(self.allowed[forbidden], preference[forbidden], -np.inf)
            devices[forbidden] = ranked.argmax(axis=1)
        for members, leader, common in self.colocated:
            target = devices[leader]
            if not common[target]:
                target = int(np.where(common, preference[leader], -np.inf).argmax())
            devices[members] = target
        return tuple(int(d) for d in devices)
