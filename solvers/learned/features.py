"""What the learned placement policy sees of each op: a dense feature matrix.

Notes
-----
The device-placement policies of Mirhoseini et al. embed each op by its type, output shape
and adjacency. A :class:`~solvers.scheduling.SchedulingProblem` has no op types, so the
embedding is built from what the problem does carry, one row per op, every column scaled
into [0, 1] (or [-1, 1] for the position encoding) so one learning rate fits every graph:

* a constant 1 (the bias);
* position in topological order and topological depth (longest chain of edges from a
  source), each divided by its maximum;
* log mean duration over the allowed devices, log output bytes, log resident bytes, log
  bytes received (sum over incoming edges), each divided by its maximum over the ops;
* in-degree and out-degree divided by their maxima;
* ``sin(pi k x)`` and ``cos(pi k x)`` of the topological position ``x`` for
  ``k = 1..POSITION_FREQUENCIES``: a linear layer over these can cut the graph into several
  contiguous segments, the usual shape of a good placement (pipeline stages);
* per device, the op's relative speed there: its fastest allowed duration over its duration
  on that device (1 on the fastest, 0 where it may not run).
"""

from __future__ import annotations

import numpy as np

from solvers.scheduling.bounds import topological_order
from solvers.scheduling.problem import SchedulingProblem

__all__ = ["POSITION_FREQUENCIES", "op_features", "feature_count"]

# Frequencies of the topological-position encoding (2 columns each).
POSITION_FREQUENCIES = 4
_BASE_COLUMNS = 9  # bias, position, depth, 4 log sizes, 2 degrees


def feature_count(num_devices: int) -> int:
    """Columns of :func:`op_features` for a problem with ``num_devices`` devices.

    Examples
    --------
    >>> feature_count(2)
    19
    """
    return _BASE_COLUMNS + 2 * POSITION_FREQUENCIES + num_devices


def _scaled(values: np.ndarray) -> np.ndarray:
    """``values / max(values)``, zeros when every value is zero."""
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else np.zeros_like(values)


def _depths(problem: SchedulingProblem, order: tuple[int, ...]) -> np.ndarray:
    preds: list[list[int]] = [[] for _ in range(problem.num_ops)]
    for u, v, _ in problem.edges:
        preds[v].append(u)
    depth = np.zeros(problem.num_ops)
    for op in order:
        depth[op] = max((depth[u] + 1 for u in preds[op]), default=0.0)
    return depth


def _relative_speeds(problem: SchedulingProblem) -> np.ndarray:
    dur = np.asarray(problem.durations_cycles, dtype=float)
    allowed = dur >= 0
    fastest = np.where(allowed, dur, np.inf).min(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = np.where(dur > 0, fastest / np.where(dur > 0, dur, 1.0), 1.0)
    return np.where(allowed, speed, 0.0)


def op_features(problem: SchedulingProblem) -> np.ndarray:
    """The ``num_ops x feature_count(num_devices)`` feature matrix (see the module Notes).

    Examples
    --------
    A chain of two ops; the second runs only on device 1:

    >>> p = SchedulingProblem(((4, 8), (-1, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> x = op_features(p)
    >>> x.shape
    (2, 19)
    >>> x[:, 1].tolist(), x[:, 2].tolist()  # position and depth
    ([0.0, 1.0], [0.0, 1.0])
    >>> x[:, -2:].tolist()  # relative speed on devices 0 and 1
    [[1.0, 0.5], [0.0, 1.0]]
    """
    n = problem.num_ops
    order = topological_order(problem)
    position = np.zeros(n)
    position[list(order)] = np.arange(n) / max(1, n - 1)
    dur = np.asarray(problem.durations_cycles, dtype=float)
    allowed = dur >= 0
    mean_duration = np.where(allowed, dur, 0.0).sum(axis=1) / allowed.sum(axis=1)
    received = np.zeros(n)
    in_degree = np.zeros(n)
    out_degree = np.zeros(n)
    for u, v, nbytes in problem.edges:
        received[v] += nbytes
        in_degree[v] += 1
        out_degree[u] += 1
    output = np.array([problem.output_bytes(i) for i in range(n)], dtype=float)
    resident = np.array([problem.resident_bytes(i) for i in range(n)], dtype=float)
    columns = [np.ones(n), position, _scaled(_depths(problem, order))]
    columns += [_scaled(np.log1p(a)) for a in (mean_duration, output, resident, received)]
    columns += [_scaled(in_degree), _scaled(out_degree)]
    for k in range(1, POSITION_FREQUENCIES + 1):
        columns += [np.sin(np.pi * k * position), np.cos(np.pi * k * position)]
    return np.column_stack(columns + [_relative_speeds(problem)])
