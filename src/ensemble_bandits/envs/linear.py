"""Linear bandit environments of the papers, one class per registry name, on the three kinds of
action set of :mod:`ensemble_bandits.envs.base` (which holds the common-random-numbers story).

Each class states its paper's defaults in its signature and draws one seed's instance from a
generator ``g`` of the stream (seed, "env/instance"): ``instance(g)`` -> (arms, theta*) for a fixed
arm set, ``truth(g)`` -> theta* otherwise.
"""
from __future__ import annotations

import numpy as np

from .base import Contexts, FixedArms, Sphere, unit_rows


class PheLinear(FixedArms):
    """LinPHE paper, Fig. 1: x = (u, 1), u uniform on S^{d-2}; theta* = (v, 1/2), |v| = 1/2; Bernoulli rewards.

    ``basis``: ``random`` (paper text: the last d arms are random and form a basis a.s.)
    or ``coordinate`` (lineage code: the last d arms are e_1+e_d, ..., e_{d-1}+e_d, e_d).
    """

    noise_kind = "uniform"

    def __init__(self, seeds, d: int = 10, n_arms: int = 100, basis: str = "random", radius: float = 0.5):
        if basis not in ("random", "coordinate"):
            raise ValueError(f"basis must be 'random' or 'coordinate', got {basis!r}")
        if d < 2:
            raise ValueError("phe_linear needs d >= 2 (one coordinate is the bias)")
        self.basis, self.radius = basis, float(radius)
        super().__init__(seeds, d, n_arms, noise_sd=0.0)

    def instance(self, g):
        d, K = self.d, self.K
        u = unit_rows(g.standard_normal((K, d - 1)))
        v = self.radius * unit_rows(g.standard_normal(d - 1))
        x = np.concatenate([u, np.ones((K, 1))], axis=1)
        if self.basis == "coordinate":
            x[K - d:] = np.eye(d)
            x[K - d:K - 1, d - 1] = 1.0
        return x, np.append(v, 0.5)

    def _reward(self, mean, noise):
        return (noise < mean).astype(np.float64)


class RussoFinite(FixedArms):
    """Ensemble++ finite-action linear bandit (Russo & Van Roy 2018).

    Features uniform on [-u, u]^d with u = 1/sqrt(5) (App. F.1 and code; main text 1/sqrt(d)),
    theta* ~ N(0, prior_var I), rewards x^T theta* + N(0, noise_sd^2).
    """

    def __init__(self, seeds, d: int = 50, n_arms: int = 10000, feature_range: float | None = None,
                 prior_var: float = 10.0, noise_sd: float = 1.0):
        self.u = 1.0 / np.sqrt(5.0) if feature_range is None else float(feature_range)
        self.prior_var = float(prior_var)
        super().__init__(seeds, d, n_arms, noise_sd)

    def instance(self, g):
        x = g.uniform(-self.u, self.u, (self.K, self.d))
        return x, np.sqrt(self.prior_var) * g.standard_normal(self.d)


class SphereGaussian(FixedArms):
    """Arms and theta* uniform on the unit sphere, Gaussian noise (GLM-ES Fig. 1a; Lee & Oh env (ii))."""

    def __init__(self, seeds, d: int = 20, n_arms: int = 50, noise_sd: float = 0.5):
        super().__init__(seeds, d, n_arms, noise_sd)

    def instance(self, g):
        x = unit_rows(g.standard_normal((self.K, self.d)))
        return x, unit_rows(g.standard_normal(self.d))


class SphereContexts(Contexts):
    """The per-round-contexts counterpart of :class:`SphereGaussian` (the contextual setting of GLM-ES
    and Lee & Oh style experiments): theta* uniform on the unit sphere, drawn once per seed; every
    round K fresh arms uniform on the unit sphere, one (K, d) draw per seed per round from the stream
    (seed, "env/contexts"), batched over seeds; Gaussian reward noise N(0, noise_sd^2)."""

    def __init__(self, seeds, d: int = 20, n_arms: int = 50, noise_sd: float = 0.5):
        super().__init__(seeds, d, n_arms, noise_sd)
        self._contexts = self.streams("contexts", "normal")

    def truth(self, g):
        return unit_rows(g.standard_normal(self.d))

    def contexts(self, t):
        return unit_rows(self._contexts.shaped(self.K, self.d))


class CompactSphere(Sphere):
    """Ensemble++ compact-action linear bandit: actions are the unit sphere S^{d-1}.

    theta* ~ N(0, prior_var I); the optimal action is theta*/|theta*|; an agent returns action
    *vectors* (B, d); per-round regret |theta*| - <x, theta*>.
    """

    def __init__(self, seeds, d: int = 10, prior_var: float = 10.0, noise_sd: float = 1.0):
        self.prior_var = float(prior_var)
        super().__init__(seeds, d, noise_sd)

    def truth(self, g):
        return np.sqrt(self.prior_var) * g.standard_normal(self.d)
