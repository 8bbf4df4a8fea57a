"""Logistic bandit environments: the mean reward of arm x is sigma(x^T theta*), sigma(z) = 1/(1 + e^-z).

Each is its linear counterpart of :mod:`.linear` with one hook, :class:`Logistic`, that passes the
means through the link whenever an arm set is put on show.  So the instance draws (arms, theta*
direction), the reward-noise streams and the common random numbers are those of the linear
environments: the same seed gives the same arms and the same noise, and the pseudo-regret is in mean
rewards, max_k sigma(x_k^T theta*) - sigma(x_a^T theta*).
"""
from __future__ import annotations

from scipy.special import expit

from .linear import PheLinear, SphereGaussian


class Logistic:
    """Mixin for an :class:`~.base.ArmSet`: means sigma(x^T theta*) instead of x^T theta*.

    sigma is increasing, so the best arm is that of the linear scores; ``scores`` keeps x^T theta*
    (B, K) for probes that compare on the linear scale."""

    def show(self, features):
        super().show(features)
        self.scores = self.means
        self.means = expit(self.scores)
        self.best = self.means[self._rows, self.best_arm]


class PheLogistic(Logistic, PheLinear):
    """LinPHE paper, Fig. 2 (phe spec A.3): the arms of :class:`PheLinear`, x = (u, 1) with u uniform on
    S^{d-2}; theta* = (v, 0), v uniform on the sphere of radius 1.5, so |x^T theta*| <= 1.5; rewards
    Bernoulli(sigma(x^T theta*)), drawn as 1{U < mean} from the seed's uniform noise stream as
    :class:`PheLinear` draws them.  ``basis`` as in :class:`PheLinear` (the last d arms: random, the
    paper's text, or the lineage code's coordinate basis)."""

    def __init__(self, seeds, d: int = 10, n_arms: int = 100, basis: str = "random", radius: float = 1.5):
        super().__init__(seeds, d, n_arms, basis, radius)

    def instance(self, g):
        x, theta = super().instance(g)
        theta[-1] = 0.0                                  # no bias in theta*: means centred on 1/2
        return x, theta


class SphereLogistic(Logistic, SphereGaussian):
    """GLM-ES logistic bandit (glmes §3.2; Figs 1b-c, 2a-c, 3a, 4a): arms and theta* uniform on the
    unit sphere (glmes-A1), the arm set fixed for all rounds (glmes §1); reward sigma(x^T theta*) plus
    N(0, noise_sd^2) noise, as the paper states (glmes-A20: not a Bernoulli draw, so rewards may leave
    [0, 1]).  d = 20, K = 50 by default; Fig. 4a uses d = 50, K = 500."""
