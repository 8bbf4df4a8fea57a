"""Batched bandit environments: B independent problem instances, one per seed.

Each instance is drawn from the stream (seed, "env/instance") and the reward noise of
round t from (seed, "env/noise"): every agent run on a seed sees the same instance and
the same noise (common random numbers).  The noise of round t is one scalar per seed
(a uniform for Bernoulli rewards, a standard normal for Gaussian rewards), so the
coupling does not depend on which arm an agent pulls.

An environment shows an agent only its static ``setting`` and, each round, ``observe(t)``
(:mod:`ensemble_bandits.protocol`); theta*, ``means``, ``best`` and ``x_star`` are for the
runner and its probes.
"""
from __future__ import annotations

import numpy as np

from .catalog import hyper
from .protocol import Observation, Setting
from .rng import Streams


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


class Environment:
    """Base class: finite, fixed arm set ``features`` (B, K, d) with mean rewards ``means``;
    ``observe`` returns the same :class:`Observation` every round."""

    action_space = "finite"
    noise_kind = "normal"

    @classmethod
    def dimensions(cls, spec: dict) -> tuple[int, int]:
        """(d, K) of an environment spec, defaults from the class's signature (memory and cost models)."""
        return int(hyper(cls, spec, "d")), int(hyper(cls, spec, "n_arms"))

    def __init__(self, seeds, d: int, n_arms: int, noise_sd: float = 1.0):
        self.seeds = [int(s) for s in seeds]
        self.B, self.d, self.K = len(self.seeds), int(d), int(n_arms)
        self.noise_sd = float(noise_sd)
        streams = Streams(self.seeds, "env")
        self.features, self.theta = self._instances(streams)
        self._obs = Observation.of(self.features)
        self.means = np.einsum("bkd,bd->bk", self.features, self.theta)
        self.best = self.means.max(axis=1)
        self.best_arm = self.means.argmax(axis=1)
        self._noise = streams("noise", self.noise_kind)
        self._rows = np.arange(self.B)

    def _instances(self, streams: Streams):
        raise NotImplementedError

    @property
    def setting(self) -> Setting:
        """The static facts an agent may be built from."""
        return Setting(self.B, self.d, self.K, self.action_space)

    def observe(self, t: int) -> Observation:
        """What an agent sees in round t: the fixed arm set (the same object every round)."""
        return self._obs

    @property
    def x_star(self) -> np.ndarray:
        """Features of the optimal arm (B, d)."""
        return self.features[self._rows, self.best_arm]

    def step(self, arms: np.ndarray):
        """Pull ``arms`` (B,): returns (rewards, pseudo-regret), each (B,)."""
        mean = self.means[self._rows, arms]
        noise = self._noise.take(1)[:, 0]
        return self._reward(mean, noise), self.best - mean

    def _reward(self, mean, noise):
        return mean + self.noise_sd * noise


class PheLinear(Environment):
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

    def _instances(self, streams):
        d, K, r = self.d, self.K, self.radius

        def draw(g):
            u = _unit_rows(g.standard_normal((K, d - 1)))
            v = r * _unit_rows(g.standard_normal(d - 1))
            x = np.concatenate([u, np.ones((K, 1))], axis=1)
            if self.basis == "coordinate":
                x[K - d:] = np.eye(d)
                x[K - d:K - 1, d - 1] = 1.0
            return np.concatenate([x.ravel(), v, [0.5]])

        flat = streams.per_seed("instance", draw)
        return flat[:, :K * d].reshape(-1, K, d), flat[:, K * d:]

    def _reward(self, mean, noise):
        return (noise < mean).astype(np.float64)


class RussoFinite(Environment):
    """Ensemble++ finite-action linear bandit (Russo & Van Roy 2018).

    Features uniform on [-u, u]^d with u = 1/sqrt(5) (App. F.1 and code; main text 1/sqrt(d)),
    theta* ~ N(0, prior_var I), rewards x^T theta* + N(0, noise_sd^2).
    """

    def __init__(self, seeds, d: int = 50, n_arms: int = 10000, feature_range: float | None = None,
                 prior_var: float = 10.0, noise_sd: float = 1.0):
        self.u = 1.0 / np.sqrt(5.0) if feature_range is None else float(feature_range)
        self.prior_var = float(prior_var)
        super().__init__(seeds, d, n_arms, noise_sd)

    def _instances(self, streams):
        d, K = self.d, self.K

        def draw(g):
            x = g.uniform(-self.u, self.u, (K, d))
            th = np.sqrt(self.prior_var) * g.standard_normal(d)
            return np.concatenate([x.ravel(), th])

        flat = streams.per_seed("instance", draw)
        return flat[:, :K * d].reshape(-1, K, d), flat[:, K * d:]


class SphereGaussian(Environment):
    """Arms and theta* uniform on the unit sphere, Gaussian noise (GLM-ES Fig. 1a; Lee & Oh env (ii))."""

    def __init__(self, seeds, d: int = 20, n_arms: int = 50, noise_sd: float = 0.5):
        super().__init__(seeds, d, n_arms, noise_sd)

    def _instances(self, streams):
        d, K = self.d, self.K

        def draw(g):
            x = _unit_rows(g.standard_normal((K, d)))
            th = _unit_rows(g.standard_normal(d))
            return np.concatenate([x.ravel(), th])

        flat = streams.per_seed("instance", draw)
        return flat[:, :K * d].reshape(-1, K, d), flat[:, K * d:]


class CompactSphere(Environment):
    """Ensemble++ compact-action linear bandit: actions are the unit sphere S^{d-1}.

    theta* ~ N(0, prior_var I); the optimal action is theta*/|theta*|; an agent returns
    action *vectors* (B, d); per-round regret |theta*| - <x, theta*>.  ``observe`` shows no
    features, only that the action set is the sphere (``compact``).
    """

    action_space = "sphere"

    @classmethod
    def dimensions(cls, spec: dict) -> tuple[int, int]:
        return int(hyper(cls, spec, "d")), 1          # one action vector is scored per round

    def __init__(self, seeds, d: int = 10, prior_var: float = 10.0, noise_sd: float = 1.0):
        self.seeds = [int(s) for s in seeds]
        self.B, self.d, self.K = len(self.seeds), int(d), 0
        self.noise_sd = float(noise_sd)
        streams = Streams(self.seeds, "env")
        self.theta = streams.per_seed("instance", lambda g: np.sqrt(prior_var) * g.standard_normal(self.d))
        self.best = np.linalg.norm(self.theta, axis=1)
        self.features = None
        self._obs = Observation(compact=True)
        self._noise = streams("noise", "normal")

    @property
    def x_star(self) -> np.ndarray:
        return self.theta / self.best[:, None]

    def step(self, actions: np.ndarray):
        mean = np.einsum("bd,bd->b", actions, self.theta)
        return mean + self.noise_sd * self._noise.take(1)[:, 0], self.best - mean


ENVIRONMENTS = {
    "phe_linear": PheLinear,
    "russo_finite": RussoFinite,
    "sphere_gaussian": SphereGaussian,
    "compact_sphere": CompactSphere,
}
