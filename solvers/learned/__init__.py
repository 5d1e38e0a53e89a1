"""Learned placement: a REINFORCE grouper + placer baseline (numpy only), not an exact method.

The device-placement-with-reinforcement-learning line of work (Mirhoseini et al., 2017 and
2018) trains a policy that places ops on devices against the measured run time. This
package is that baseline on the planner's own model: the reward is the objective of the
placement as sequenced by the project's list scheduler on a
:class:`~solvers.scheduling.SchedulingProblem`, so its numbers sit in one table with HEFT's
and CP-SAT's. It is a benchmark column (``benchmarks/learned.py``), not the planner's default.

Glossary
--------
features    :func:`op_features`: one row of scaled numbers per op (sizes, depth, position).
policy      :class:`GroupPlacePolicy`: grouper network (op -> group) + placer table
            (group -> device); :class:`Decision` is one sample of it.
decode      :class:`PlacementDecoder`: a decision -> a device per op within the rules.
optimizer   :class:`Adam`: the ascent step.
reinforce   :func:`train_policy` (episodes of sample -> schedule -> reward -> update) and
            :class:`ReinforceScheduler`, the solver ``"reinforce"`` (``learned.reinforce`` in the registry).
"""
from solvers.learned.decode import PlacementDecoder
from solvers.learned.features import POSITION_FREQUENCIES, feature_count, op_features
from solvers.learned.optimizer import Adam
from solvers.learned.policy import Decision, GroupPlacePolicy, PolicyOutput, log_softmax
from solvers.learned.reinforce import (ReinforceOptions, ReinforceScheduler, TrainingRun, serial_upper_bound,
                                       train_policy)

__all__ = [
    "op_features", "feature_count", "POSITION_FREQUENCIES",
    "Decision", "PolicyOutput", "GroupPlacePolicy", "log_softmax",
    "PlacementDecoder", "Adam",
    "ReinforceOptions", "ReinforceScheduler", "TrainingRun", "serial_upper_bound", "train_policy",
]
