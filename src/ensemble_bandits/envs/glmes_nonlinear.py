"""GLM-ES's nonlinear synthetic bandits (glmes §3.3-3.5; Figs 1d-f, 2d, 4b): the distance and
quadratic bandits on a fixed arm set.

Both are :class:`~.linear.SphereGaussian` with one hook, :class:`MeanFunction`, that replaces the
linear means x^T theta* by ``mean_function(features)`` whenever an arm set is put on show.  So the
instance draws and the common random numbers are those of the other GLM-ES environments: each seed's
arms (K, d) uniform on the unit sphere (glmes-A1) come first from its stream (seed, "env/instance"),
then its truth (theta* uniform on the unit sphere, or the d x d matrix A); the reward noise is
N(0, noise_sd^2), sigma = 0.5, one standard normal per seed per round from (seed, "env/noise").
The same seed therefore gives the same arms and the same noise in the linear, logistic, distance and
quadratic bandits.  Instances are drawn per seed (a new instance per repetition, glmes §1 and glmes-A2).

Defaults d = 20, K = 50 (Fig. 1); Fig. 4b passes d = 50, n_arms = 500 (glmes §3.5).  Pseudo-regret is in
mean rewards, max_k h(x_k) - h(x_a).
"""
from __future__ import annotations

import numpy as np

from ..protocol import Observation
from .base import unit_rows
from .linear import SphereGaussian


class MeanFunction:
    """Mixin for an :class:`~.base.ArmSet`: means ``mean_function(features)`` (B, K) instead of
    x^T theta*; the best arm and the best mean follow them."""

    def mean_function(self, features: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def show(self, features):
        self.features = features
        self._obs = Observation.of(features)
        self.means = self.mean_function(features)
        self.best = self.means.max(axis=1)
        self.best_arm = self.means.argmax(axis=1)


class DistanceBandit(MeanFunction, SphereGaussian):
    """Distance bandit (glmes §3.3): h(x) = -|x - theta*|_2, theta* uniform on the unit sphere; rewards are
    negative (no [0, 1] bound)."""

    def __init__(self, seeds, d: int = 20, n_arms: int = 50, noise_sd: float = 0.5):
        super().__init__(seeds, d, n_arms, noise_sd)

    def mean_function(self, features):
        return -np.linalg.norm(features - self.theta[:, None, :], axis=2)


class QuadraticBandit(MeanFunction, SphereGaussian):
    """Quadratic bandit (glmes §3.4): h(x) = scale * x^T A A^T x, A (d x d) with iid N(0, 1) entries redrawn
    per instance (glmes-A2), scale = 1e-2.  ``A`` (B, d, d); ``theta`` holds A flattened row-major."""

    def __init__(self, seeds, d: int = 20, n_arms: int = 50, noise_sd: float = 0.5, scale: float = 0.01):
        self.scale = float(scale)
        super().__init__(seeds, d, n_arms, noise_sd)

    def instance(self, g):
        x = unit_rows(g.standard_normal((self.K, self.d)))
        return x, g.standard_normal((self.d, self.d))

    @property
    def A(self) -> np.ndarray:
        return self.theta.reshape(-1, self.d, self.d)

    def mean_function(self, features):
        proj = np.matmul(features, self.A)                        # (B, K, d): (A^T x)^T per arm
        return self.scale * np.einsum("bkd,bkd->bk", proj, proj)
