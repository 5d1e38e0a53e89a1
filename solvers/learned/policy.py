"""A grouper + placer policy over device placements, and its REINFORCE gradients (numpy).

Notes
-----
The hierarchical device-placement model [1]_: a **grouper** assigns every op to one of
``G`` groups, a **placer** assigns every group to a device, and an op runs where its group
goes. Here both are small:

* grouper: a one-hidden-layer feed-forward network over the op features
  (:mod:`solvers.learned.features`), ``h = tanh(X W1 + b1)``, group logits ``h W2 + b2``,
  one softmax per op;
* placer: one table of device logits per group, one softmax per group.

A :class:`Decision` is one sample: a group per op and a device per group. Its log
probability is the sum of the ops' group log probabilities and the log probabilities of
the devices of the groups that hold at least one op (the others do not change the
placement, so they are not part of the action).

:meth:`GroupPlacePolicy.gradients` returns the gradient, for every parameter, of the
REINFORCE surrogate [2]_ with an entropy bonus,

``J = (1/K) sum_k A_k log pi(a_k) + beta (mean_i H(p_i) + mean_g H(q_g))``,

for ``K`` decisions ``a_k`` with advantages ``A_k`` (reward minus baseline), using
``d log softmax(z)[a] / dz = onehot(a) - softmax(z)`` and
``dH(softmax(z)) / dz = -p (log p + H)``; the training loop ascends it.

References
----------
.. [1] A. Mirhoseini, A. Goldie, H. Pham, B. Steiner, Q. V. Le, J. Dean, "A hierarchical
   model for device placement", ICLR 2018.
.. [2] R. J. Williams, "Simple statistical gradient-following algorithms for connectionist
   reinforcement learning", Machine Learning 8:229-256, 1992.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Decision", "PolicyOutput", "GroupPlacePolicy", "log_softmax"]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise ``log(softmax(logits))``, computed stably.

    Examples
    --------
    >>> np.round(np.exp(log_softmax(np.array([[0.0, np.log(3.0)]]))), 3).tolist()
    [[0.25, 0.75]]
    """
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _entropy_grad(log_p: np.ndarray) -> np.ndarray:
    """Gradient of each row's entropy with respect to that row's logits."""
    p = np.exp(log_p)
    entropy = -(p * log_p).sum(axis=-1, keepdims=True)
    return -p * (log_p + entropy)


def _sample_rows(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``probs`` by inverse CDF (one uniform draw per row)."""
    u = rng.random(probs.shape[0])
    index = (np.cumsum(probs, axis=1) < u[:, None]).sum(axis=1)
    return np.minimum(index, probs.shape[1] - 1)


@dataclass(frozen=True, slots=True)
class Decision:
    """One sampled action: ``groups[op]`` and ``group_devices[group]``.

    Examples
    --------
    >>> d = Decision(np.array([1, 1, 0]), np.array([0, 2]))
    >>> d.used_groups().tolist(), d.op_devices().tolist()
    ([True, True], [2, 2, 0])
    """

    groups: np.ndarray
    group_devices: np.ndarray

    def used_groups(self) -> np.ndarray:
        """Which groups hold at least one op (boolean per group)."""
        return np.bincount(self.groups, minlength=len(self.group_devices)) > 0

    def op_devices(self) -> np.ndarray:
        """Each op's group's device (before any repair for forbidden devices)."""
        return self.group_devices[self.groups]


@dataclass(frozen=True, slots=True)
class PolicyOutput:
    """A forward pass: hidden activations, group log-probabilities per op, device
    log-probabilities per group."""

    hidden: np.ndarray
    group_log_probs: np.ndarray
    device_log_probs: np.ndarray

    @property
    def group_probs(self) -> np.ndarray:
        return np.exp(self.group_log_probs)

    @property
    def device_probs(self) -> np.ndarray:
        return np.exp(self.device_log_probs)


class GroupPlacePolicy:
    """The grouper network and the placer table (see the module Notes).

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        ``w1`` (features x hidden), ``b1``, ``w2`` (hidden x groups), ``b2``, ``placer``
        (groups x devices); :meth:`initial` draws them.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pol = GroupPlacePolicy.initial(num_features=3, num_groups=2, num_devices=2, hidden=4, rng=rng)
    >>> x = np.ones((5, 3))
    >>> out = pol.forward(x)
    >>> out.group_probs.shape, out.device_probs.tolist()
    ((5, 2), [[0.5, 0.5], [0.5, 0.5]])
    >>> d = pol.sample(out, rng)
    >>> d.groups.shape, d.group_devices.shape
    ((5,), (2,))
    """

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.params = params

    @classmethod
    def initial(cls, num_features: int, num_groups: int, num_devices: int, hidden: int,
                rng: np.random.Generator) -> "GroupPlacePolicy":
        """Random grouper weights (Glorot-scaled, small output layer) and a uniform placer."""
        return cls({
            "w1": rng.normal(0.0, 1.0 / np.sqrt(num_features), (num_features, hidden)),
            "b1": np.zeros(hidden),
            "w2": rng.normal(0.0, 0.1 / np.sqrt(hidden), (hidden, num_groups)),
            "b2": np.zeros(num_groups),
            "placer": np.zeros((num_groups, num_devices)),
        })

    def forward(self, features: np.ndarray) -> PolicyOutput:
        """Group and device distributions for the ops whose features are ``features``."""
        prm = self.params
        hidden = np.tanh(features @ prm["w1"] + prm["b1"])
        return PolicyOutput(hidden, log_softmax(hidden @ prm["w2"] + prm["b2"]), log_softmax(prm["placer"]))

    @staticmethod
    def sample(out: PolicyOutput, rng: np.random.Generator) -> Decision:
        """Draw a group per op, then a device per group (ops first, in index order)."""
        groups = _sample_rows(out.group_probs, rng)
        return Decision(groups, _sample_rows(out.device_probs, rng))

    @staticmethod
    def mode(out: PolicyOutput) -> Decision:
        """The most likely group per op and device per group (ties: lowest index)."""
        return Decision(out.group_log_probs.argmax(axis=1), out.device_log_probs.argmax(axis=1))

    @staticmethod
    def log_prob(out: PolicyOutput, decision: Decision) -> float:
        """``log pi(decision)``: ops' groups plus the used groups' devices."""
        ops = np.arange(len(decision.groups))
        used = decision.used_groups()
        groups = np.arange(len(decision.group_devices))
        return float(out.group_log_probs[ops, decision.groups].sum()
                     + out.device_log_probs[groups, decision.group_devices][used].sum())

    @staticmethod
    def entropy(out: PolicyOutput) -> float:
        """Mean entropy of the ops' group distributions plus mean entropy of the placer's."""
        return float(sum(-(np.exp(lp) * lp).sum(axis=1).mean()
                         for lp in (out.group_log_probs, out.device_log_probs)))

    def gradients(self, features: np.ndarray, out: PolicyOutput, decisions: list[Decision],
                  advantages: np.ndarray, entropy_weight: float) -> dict[str, np.ndarray]:
        """``dJ/dparam`` for every parameter (see the module Notes for ``J``)."""
        group_p, device_p = out.group_probs, out.device_probs
        num_ops, num_groups = group_p.shape
        d_group = np.zeros_like(group_p)
        d_device = np.zeros_like(device_p)
        ops = np.arange(num_ops)
        for decision, advantage in zip(decisions, advantages):
            chosen = np.zeros_like(group_p)
            chosen[ops, decision.groups] = 1.0
            d_group += advantage * (chosen - group_p)
            used = decision.used_groups()[:, None]
            picked = np.zeros_like(device_p)
            picked[np.arange(num_groups), decision.group_devices] = 1.0
            d_device += advantage * used * (picked - device_p)
        scale = 1.0 / max(1, len(decisions))
        d_group = scale * d_group + entropy_weight / num_ops * _entropy_grad(out.group_log_probs)
        d_device = scale * d_device + entropy_weight / num_groups * _entropy_grad(out.device_log_probs)
        w2 = self.params["w2"]
        d_pre = (d_group @ w2.T) * (1.0 - out.hidden ** 2)
        return {"w1": features.T @ d_pre, "b1": d_pre.sum(axis=0), "w2": out.hidden.T @ d_group,
                "b2": d_group.sum(axis=0), "placer": d_device}
