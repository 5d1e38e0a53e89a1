"""Adam, the step rule of the device-placement papers' policy training, on numpy arrays.

Notes
-----
Kingma and Ba's update [1]_ for gradient *ascent*: first and second moment estimates with
bias correction, ``param += lr * m_hat / (sqrt(v_hat) + eps)``. Its per-parameter scaling
makes one learning rate work whatever the reward's scale.

References
----------
.. [1] D. P. Kingma, J. Ba, "Adam: a method for stochastic optimization", ICLR 2015.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Adam"]


class Adam:
    """Adam ascent over a dict of numpy arrays, updated in place.

    Examples
    --------
    Maximise ``-(x - 3)^2`` from 0:

    >>> params = {"x": np.zeros(1)}
    >>> opt = Adam(params, learning_rate=0.1)
    >>> for _ in range(300):
    ...     opt.step({"x": -2 * (params["x"] - 3)})
    >>> round(float(params["x"][0]), 2)
    3.0
    """

    def __init__(self, params: dict[str, np.ndarray], learning_rate: float, beta1: float = 0.9,
                 beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.params = params
        self.learning_rate = learning_rate
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.steps = 0
        self._m = {k: np.zeros_like(v) for k, v in params.items()}
        self._v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, grads: dict[str, np.ndarray]) -> None:
        """One ascent step along ``grads`` (same keys and shapes as the parameters)."""
        self.steps += 1
        correct1 = 1.0 - self.beta1 ** self.steps
        correct2 = 1.0 - self.beta2 ** self.steps
        for key, grad in grads.items():
            m, v = self._m[key], self._v[key]
            m *= self.beta1
            m += (1.0 - self.beta1) * grad
            v *= self.beta2
            v += (1.0 - self.beta2) * grad * grad
            self.params[key] += self.learning_rate * (m / correct1) / (np.sqrt(v / correct2) + self.eps)
