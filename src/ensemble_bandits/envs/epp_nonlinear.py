"""Ensemble++'s nonlinear synthetic bandits (epp §3.3-3.5): the quadratic bandit, the vector
quadratic bandit and the neural (random-MLP, Bernoulli) bandit.

All three share one shape (:class:`PoolBandit`): a pool of ``pool`` candidate actions x ~ N(0, I_d)
normalised to |x| = 1; each round ``n_arms`` of them are offered, drawn uniformly without
replacement (per-round contexts, :class:`~.base.Contexts`; ``n_arms == pool`` offers every action
every round, the setting of epp-fig4); the regret is the noiseless max over the offered actions
minus the mean of the chosen one.  The mean of every pool action is computed once, so a round only
gathers.

Instances (spec ambiguity epp-A16) -- ``instance``:

- ``"fixed"`` (default, the authors' ``freq_task=1``): the reward function, the pool *and* the
  sequence of offered subsets are one draw shared by every seed, from the streams
  (``instance_seed``, "env/instance") and (``instance_seed``, "env/contexts"); only the reward noise
  and the agent change with the seed;
- ``"per_seed"``: each seed draws its own reward function and pool from (seed, "env/instance") and
  its own subsets from (seed, "env/contexts").

``noise_seed``: ``"per_seed"`` (default: reward noise from (seed, "env/noise"), common to all agents
on that seed) or ``"fixed"`` (the authors' code, which builds the environment before seeding: every
seed gets the noise stream (``instance_seed``, "env/noise")).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit, gammaln

from ..protocol import Observation
from ..rng import BlockStream, generator
from .base import Contexts, Environment, unit_rows

INSTANCES = ("fixed", "per_seed")
NOISE_SEEDS = ("per_seed", "fixed")


def expected_subset_max(values: np.ndarray, k: int) -> float:
    """E[max of ``k`` of ``values`` drawn uniformly without replacement], exact by order statistics:
    with v_(1) <= ... <= v_(n) sorted, the largest of the k drawn is v_(i) with probability
    C(i - 1, k - 1) / C(n, k) (the other k - 1 from the i - 1 below it)."""
    v = np.sort(np.asarray(values, dtype=float))
    n, k = v.size, int(k)
    if not 1 <= k <= n:
        raise ValueError(f"k = {k} must be between 1 and {n}")
    i = np.arange(k, n + 1)                                  # ranks that can be the largest drawn
    log_w = (gammaln(i) - gammaln(k) - gammaln(i - k + 1)) - (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1))
    return float(np.exp(log_w) @ v[k - 1:])


class PoolBandit(Contexts):
    """A pool of unit-norm actions with a nonlinear mean ``pool_means(x, params)``; ``n_arms`` offered
    per round (see the module docstring for ``instance`` and ``noise_seed``)."""

    def __init__(self, seeds, d: int, n_arms: int, pool: int, noise_sd: float, instance: str = "fixed",
                 instance_seed: int = 2022, noise_seed: str = "per_seed"):
        Environment.__init__(self, seeds, d, n_arms, noise_sd)
        if instance not in INSTANCES:
            raise ValueError(f"instance must be one of {INSTANCES}, got {instance!r}")
        if noise_seed not in NOISE_SEEDS:
            raise ValueError(f"noise_seed must be one of {NOISE_SEEDS}, got {noise_seed!r}")
        self.pool_size = int(pool)
        if not 1 <= self.K <= self.pool_size:
            raise ValueError(f"n_arms = {n_arms} must be between 1 and pool = {pool}")
        self.instance, self.instance_seed = instance, int(instance_seed)
        if instance == "fixed":
            draws = [self._instance(generator(self.instance_seed, "env/instance"))]
            self._contexts = BlockStream([self.instance_seed], "env/contexts", "uniform")
        else:
            draws = [self._instance(generator(s, "env/instance")) for s in self.seeds]
            self._contexts = self.streams("contexts", "uniform")
        self.pool = np.stack([x for x, _ in draws])                 # (1 or B, pool, d)
        self.params = [p for _, p in draws]                         # per instance
        self.pool_means = np.stack([self.pool_means_of(x, p) for x, p in draws])   # (1 or B, pool)
        if noise_seed == "fixed":
            self._noise = BlockStream([self.instance_seed] * self.B, "env/noise", self.noise_kind)
        self.theta = None
        self.features, self._t, self._all_shown = None, None, False

    def _instance(self, g):
        x = unit_rows(g.standard_normal((self.pool_size, self.d)))
        return x, self.reward_params(g)

    def reward_params(self, g):
        raise NotImplementedError

    def pool_means_of(self, x: np.ndarray, params) -> np.ndarray:
        """Mean rewards (pool,) of the actions ``x`` (pool, d) under ``params``."""
        raise NotImplementedError

    def uniform_regret(self) -> np.ndarray:
        """Per seed (B,), the expected per-round regret of a uniformly random choice among the offered
        actions: E[max of the ``n_arms`` offered means] - the mean of the pool's means (every pool action
        is offered, and chosen, with the same probability), exact (:func:`expected_subset_max`); the
        same in every round, the offered sets being independent uniform draws."""
        per_instance = np.array([expected_subset_max(m, self.K) - m.mean() for m in self.pool_means])
        return np.broadcast_to(per_instance, (self.B,)).copy() if per_instance.size == 1 else per_instance

    def offered(self, t: int) -> np.ndarray:
        """Pool indices (B, K) offered in round t: the K smallest of pool fresh uniforms, in pool order."""
        if self.K == self.pool_size:
            return np.broadcast_to(np.arange(self.K), (self.B, self.K))
        keys = self._contexts.take(self.pool_size)
        idx = np.sort(np.argpartition(keys, self.K - 1, axis=1)[:, :self.K], axis=1)
        return np.broadcast_to(idx, (self.B, self.K)) if idx.shape[0] == 1 else idx

    def observe(self, t: int) -> Observation:
        if t != self._t and not self._all_shown:
            idx = self.offered(t)
            src = np.zeros((self.B, 1), dtype=np.int64) if self.pool.shape[0] == 1 else self._rows[:, None]
            self.features = self.pool[src, idx]
            self._obs = Observation.of(self.features)
            self.means = self.pool_means[src, idx]
            self.best_arm = self.means.argmax(axis=1)
            self.best = self.means[self._rows, self.best_arm]
            self._all_shown = self.K == self.pool_size
            self._t = t
        return self._obs


class QuadraticBandit(PoolBandit):
    """f(x) = 0.01 x^T Theta Theta^T x, Theta (d, d) with i.i.d. N(0, 1) entries (epp §3.3); Gaussian
    noise of standard deviation ``noise_sd`` = 0.1 (ambiguity epp-A3: std, as in the code)."""

    def __init__(self, seeds, d: int = 100, n_arms: int = 50, pool: int = 1000, noise_sd: float = 0.1,
                 instance: str = "fixed", instance_seed: int = 2022, noise_seed: str = "per_seed"):
        super().__init__(seeds, d, n_arms, pool, noise_sd, instance, instance_seed, noise_seed)

    def reward_params(self, g):
        return g.standard_normal((self.d, self.d))

    def pool_means_of(self, x, Theta):
        return 0.01 * np.sum((x @ Theta) ** 2, axis=1)


class VectorQuadraticBandit(PoolBandit):
    """f(x) = 10 (x^T theta)^2 (epp §3.4); ``theta_on``: ``"ball"`` (default, ambiguity epp-A30: uniform in
    the unit ball, a uniform direction times U^{1/d}) or ``"sphere"`` (the NeuralUCB code)."""

    def __init__(self, seeds, d: int = 100, n_arms: int = 50, pool: int = 1000, noise_sd: float = 0.1,
                 instance: str = "fixed", instance_seed: int = 2022, noise_seed: str = "per_seed",
                 theta_on: str = "ball"):
        if theta_on not in ("ball", "sphere"):
            raise ValueError(f"theta_on must be 'ball' or 'sphere', got {theta_on!r}")
        self.theta_on = theta_on
        super().__init__(seeds, d, n_arms, pool, noise_sd, instance, instance_seed, noise_seed)

    def reward_params(self, g):
        direction = unit_rows(g.standard_normal(self.d))
        radius = g.random() ** (1.0 / self.d)
        return direction * (radius if self.theta_on == "ball" else 1.0)

    def pool_means_of(self, x, theta):
        return 10.0 * (x @ theta) ** 2


class NeuralBandit(PoolBandit):
    """A fixed random MLP d -> 50 -> 50 -> 2 logits with ReLU (epp §3.5): xavier-normal weights,
    PyTorch-default biases U(+-1/sqrt(fan_in)); mean reward softmax(logits / temperature)[1] (class 1
    = reward 1, ambiguity epp-A17) with ``temperature`` = 0.1; rewards Bernoulli(mean), drawn as
    1{U < mean} from the seed's uniform noise stream (no additive noise)."""

    noise_kind = "uniform"

    def __init__(self, seeds, d: int = 100, n_arms: int = 50, pool: int = 1000, temperature: float = 0.1,
                 hidden: int = 50, instance: str = "fixed", instance_seed: int = 2022, noise_seed: str = "per_seed"):
        self.temperature, self.hidden = float(temperature), int(hidden)
        super().__init__(seeds, d, n_arms, pool, 0.0, instance, instance_seed, noise_seed)

    def reward_params(self, g):
        widths = [self.d, self.hidden, self.hidden, 2]
        layers = []
        for fan_in, fan_out in zip(widths[:-1], widths[1:]):
            W = g.standard_normal((fan_out, fan_in)) * np.sqrt(2.0 / (fan_in + fan_out))
            b = (2.0 * g.random(fan_out) - 1.0) / np.sqrt(fan_in)
            layers.append((W, b))
        return layers

    @staticmethod
    def logits(x, layers):
        h = x
        for i, (W, b) in enumerate(layers):
            h = h @ W.T + b
            if i < len(layers) - 1:
                h = np.maximum(h, 0.0)
        return h

    def pool_means_of(self, x, layers):
        lg = self.logits(x, layers) / self.temperature
        return expit(lg[:, 1] - lg[:, 0])                          # softmax(.)[1], stably

    def _reward(self, mean, noise):
        return (noise < mean).astype(np.float64)
