"""Linear-bandit agents, batched over seeds (leading axis B) and ensemble members.

Protocol shared by every agent (:mod:`ensemble_bandits.protocol`)::

    agent = Cls(setting, seeds, horizon, **hyper_parameters)   # static facts only
    arms = agent.select(t, obs)            # t = 1..T; arm indices (B,) or action vectors (B, d)
    agent.update(t, obs, arms, rewards)    # obs.chosen(arms): features of the pulled arms (B, d)

Randomness comes from the agent's own streams (seed, "agent/<name>/<stream>").
Sherman-Morrison keeps every inverse Gram matrix in O(d^2) per round; tests check each
incremental form against a direct solve.
"""
from __future__ import annotations

import math

import numpy as np

from .. import distributions as dist
from ..calibration import constants
from ..catalog import hyper
from ..protocol import AgentClass, Setting
from ..rng import Streams, binomial_half_fixed, words_for

TIEBREAK = 1e-12  # fixed per-run random jitter: breaks exact ties (e.g. theta = 0) at random


def sherman_morrison(inv: np.ndarray, x: np.ndarray, w=1.0) -> None:
    """In place: inv <- (inv^{-1} + w x x^T)^{-1} for a batch (B, d, d), x (B, d), w scalar or (B,)."""
    v = np.matmul(inv, x[:, :, None])[:, :, 0]             # (B, d) = inv x
    c = w / (1.0 + w * np.einsum("bi,bi->b", x, v))
    inv -= (c[:, None] * v)[:, :, None] * v[:, None, :]


def bmv(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product (B, n, m) @ (B, m) -> (B, n)."""
    return np.matmul(a, v[:, :, None])[:, :, 0]


class LinearAgent(AgentClass):
    """Common state: the static setting, a per-run tie-break jitter and the agent streams.  What
    the workflow reads from the class (accelerator, distribution hyper-parameters, ensemble size,
    cost model, action spaces) is declared as in :class:`protocol.AgentClass`."""

    name = "linear"

    def __init__(self, setting: Setting, seeds, horizon: int):
        if not isinstance(setting, Setting):
            raise TypeError(f"an agent is built from a Setting (env.setting), not a {type(setting).__name__}")
        self.check_action_space(setting.action_space)
        self.setting = setting
        self.B, self.d, self.K, self.T = setting.B, setting.d, setting.K, int(horizon)
        self.sphere = setting.action_space == "sphere"
        self.streams = Streams(seeds, f"agent/{self.name}")
        self.rows = np.arange(self.B)
        if self.sphere:
            self.fallback = self.streams("zero_theta_direction", "normal")
        else:
            self.jitter = TIEBREAK * self.streams.per_seed("tiebreak", lambda g: g.random(self.K))

    proposes = False
    """Whether the agent's arm is always ``greedy(propose(t, obs), obs)``: then a shared pass
    (:mod:`ensemble_bandits.shared`) may score its theta together with other agents' thetas."""

    def propose(self, t: int, obs) -> np.ndarray:
        """The round's sampled parameter theta (B, d), whose greedy arm is the agent's choice (agents
        with ``proposes``); it draws exactly the random numbers ``select`` draws."""
        raise NotImplementedError(f"{self.name} chooses its arm otherwise than greedily on one theta")

    def select(self, t: int, obs) -> np.ndarray:
        """The round's arm: greedy on the proposed theta (agents that do otherwise override this)."""
        return self.greedy(self.propose(t, obs), obs)

    def greedy(self, theta: np.ndarray, obs) -> np.ndarray:
        """argmax_x x^T theta over the arm set (finite), or theta/|theta| (sphere; a uniformly random
        direction where theta = 0, as in the Ensemble++ authors' code)."""
        if self.sphere:
            direction = self.fallback.take(self.d)          # drawn every round: fixed consumption
            norm = np.linalg.norm(theta, axis=1, keepdims=True)
            zero = norm[:, 0] == 0.0
            if zero.any():
                theta = np.where(zero[:, None], direction, theta)
                norm = np.linalg.norm(theta, axis=1, keepdims=True)
            return theta / norm
        return np.argmax(obs.scores(theta) + self.jitter, axis=1)


OUTER_CHUNK_BYTES = 2 ** 20
"""Seeds per chunk of :func:`add_outer`'s dense update: about this many bytes of P, so that the
chunk's product stays in the CPU cache while it is added (bench_numpy.py, section 9)."""


def add_outer(P: np.ndarray, x: np.ndarray, z: np.ndarray, sparse: bool = False, zeta: np.ndarray | None = None,
              one_hot: bool = False):
    """In place: P[b] += x[b] z[b]^T for P (B, d, M), x (B, d), z (B, M) -- the same numbers, bit for
    bit, as ``P += x[:, :, None] * z[:, None, :]``, faster; with ``zeta`` (B, M), also returns the
    updated P[b] zeta[b] (B, d), bit for bit :func:`factor_times` (``one_hot``) after the update.

    ``sparse`` (z mostly zeros: the Coordinate and Sparse families, 1 or 2 non-zeros of M): only the
    columns of z's non-zeros change; the others would add x * 0 = +-0, which leaves every entry as it
    is (P holds no -0: +0 plus -0 is +0).  Otherwise, when P is bigger than the cache, the outer
    products are formed and added a chunk of seeds at a time, so that no (B, d, M) temporary streams
    through memory, and the chunk's product with zeta is taken while it is still in the cache."""
    B, d, M = P.shape
    c = max(1, OUTER_CHUNK_BYTES // (8 * d * M))
    if sparse:
        rows, cols = np.nonzero(z)
        P[rows, :, cols] += x[rows] * z[rows, cols][:, None]
    elif c >= B:
        P += x[:, :, None] * z[:, None, :]
    else:
        tmp = np.empty((c, d, M))
        out = None if zeta is None else np.empty((B, d))
        for a in range(0, B, c):
            n = min(c, B - a)
            np.multiply(x[a:a + n, :, None], z[a:a + n, None, :], out=tmp[:n])
            P[a:a + n] += tmp[:n]
            if out is not None:
                out[a:a + n] = factor_times(P[a:a + n], zeta[a:a + n], one_hot)
        return out
    return None if zeta is None else factor_times(P, zeta, one_hot)


def factor_times(P: np.ndarray, zeta: np.ndarray, one_hot: bool = False) -> np.ndarray:
    """P[b] zeta[b] (B, d), bit for bit :func:`bmv`; ``one_hot`` (a Coordinate reference: one
    non-zero per seed): one column per seed, P[b, :, k] zeta[b, k] (the product's other terms are
    exact zeros, so the sum is that one rounded product)."""
    if not one_hot:
        return bmv(P, zeta)
    rows = np.arange(zeta.shape[0])
    k = np.abs(zeta).argmax(axis=1)
    return P[rows, :, k] * zeta[rows, k][:, None]


class Ridge:
    """Batched ridge statistics: Vinv = (lam I + sum w x x^T)^{-1} and b = sum x y."""

    def __init__(self, B: int, d: int, lam: float):
        self.Vinv = np.tile(np.eye(d) / lam, (B, 1, 1))
        self.b = np.zeros((B, d))

    def add(self, x, y, w=1.0):
        sherman_morrison(self.Vinv, x, w)
        self.b += np.asarray(y)[:, None] * x

    def mean(self) -> np.ndarray:
        return bmv(self.Vinv, self.b)


def sqrt_downdate(F: np.ndarray, x: np.ndarray) -> None:
    """In place: F <- F (I - beta u u^T) with u = F^T x, so that F F^T becomes (V + x x^T)^{-1}
    when F F^T = V^{-1}.  beta = (1 - 1/sqrt(1 + |u|^2)) / |u|^2 makes (I - beta u u^T)^2 equal
    I - u u^T / (1 + |u|^2), the Sherman-Morrison factor: an exact O(d^2) square-root update."""
    u = np.matmul(x[:, None, :], F)[:, 0, :]                  # (B, d) = (F^T x)^T
    uu = np.einsum("bi,bi->b", u, u)
    beta = np.where(uu > 0, (1.0 - 1.0 / np.sqrt(1.0 + uu)) / np.where(uu > 0, uu, 1.0), 0.0)
    Fu = np.matmul(F, u[:, :, None])                           # (B, d, 1)
    F -= (beta[:, None, None] * Fu) * u[:, None, :]


SAMPLERS = ("sqrt", "cholesky", "numpy")    # LinTS's ways to draw theta ~ N(mu, Sigma)


class LinTS(LinearAgent):
    """Linear Thompson sampling with prior N(0, prior_var I) and Gaussian noise noise_sd.

    Posterior Sigma = noise_sd^2 V^{-1}, V = lam I + sum x x^T, lam = noise_sd^2/prior_var; each
    round theta ~ N(mu, Sigma) is drawn exactly.  ``sampler``: ``sqrt`` keeps a square root F of
    V^{-1} (F F^T = V^{-1}) by an exact rank-one update, theta = F (F^T b + noise_sd z), O(d^2) per
    round; ``cholesky`` factorises V^{-1} every round (the textbook way, O(d^3); same
    distribution, different draws) — used where the papers' run time is compared; ``numpy`` calls
    numpy's ``Generator.multivariate_normal(mu, Sigma)`` (its default: an SVD of Sigma per draw), one
    seed at a time, as a library user would (same distribution, different draws).
    """

    name = "lints"

    def __init__(self, setting, seeds, horizon, prior_var: float = 1.0, noise_sd: float = 0.5, sampler: str = "sqrt"):
        super().__init__(setting, seeds, horizon)
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(map(repr, SAMPLERS))}, got {sampler!r}")
        self.noise_sd, self.sampler = float(noise_sd), sampler
        lam = noise_sd ** 2 / prior_var
        if sampler == "sqrt":
            self.F = np.tile(np.eye(self.d) / np.sqrt(lam), (self.B, 1, 1))
            self._b = np.zeros((self.B, self.d))
        else:
            self.ridge = Ridge(self.B, self.d, lam)
        if sampler == "numpy":
            self.mvn = self.streams.generators("sample_mvn")
        else:
            self.z = self.streams("sample", "normal")

    proposes = True

    def propose(self, t, obs):
        if self.sampler == "numpy":
            mean, cov = self.ridge.mean(), self.noise_sd ** 2 * self.ridge.Vinv
            self.mvn.taken += self.d                 # numpy draws d standard normals per call
            return np.stack([g.multivariate_normal(m, c) for g, m, c in zip(self.mvn.gens, mean, cov)])
        z = self.z.take(self.d)
        if self.sampler == "cholesky":
            chol = np.linalg.cholesky(self.ridge.Vinv)
            return self.ridge.mean() + self.noise_sd * bmv(chol, z)
        w = np.matmul(self._b[:, None, :], self.F)[:, 0, :] + self.noise_sd * z
        return bmv(self.F, w)

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        if self.sampler != "sqrt":
            self.ridge.add(x, r)
        else:
            sqrt_downdate(self.F, x)
            self._b += np.asarray(r)[:, None] * x

    @property
    def Vinv(self) -> np.ndarray:
        """V^{-1} (B, d, d) = posterior covariance / noise_sd^2."""
        if self.sampler != "sqrt":
            return self.ridge.Vinv
        return np.matmul(self.F, self.F.transpose(0, 2, 1))

    @property
    def b(self) -> np.ndarray:
        return self._b if self.sampler == "sqrt" else self.ridge.b

    def mean(self) -> np.ndarray:
        """Posterior mean V^{-1} b."""
        return bmv(self.Vinv, self.b)


class LinUCB(LinearAgent):
    """LinUCB / OFUL: argmax x^T theta_hat + beta_t |x|_{V^{-1}}.

    ``beta``: ``oful`` uses beta_t = R sqrt(d log((1 + t L^2/lam)/delta)) + sqrt(lam) S
    (evaluated at t = T when ``fixed_width``); ``constant`` uses beta_t = alpha.
    delta defaults to 1/T.  ``gram_scale`` multiplies the data in the Gram matrix
    (1/sigma^2 in the lineage variant).
    """

    name = "linucb"
    action_spaces = ("finite", "contexts")

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, beta: str = "oful", R: float = 0.5,
                 S: float = 1.0, L: float = 1.0, delta: float | None = None, alpha: float = 1.0,
                 fixed_width: bool = False, gram_scale: float = 1.0):
        super().__init__(setting, seeds, horizon)
        if beta not in ("oful", "constant"):
            raise ValueError(f"beta must be 'oful' or 'constant', got {beta!r}")
        self.lam, self.beta_kind, self.alpha = lam, beta, alpha
        self.R, self.S, self.L = R, S, L
        self.delta = 1.0 / self.T if delta is None else delta
        self.fixed_width, self.gram_scale = fixed_width, gram_scale
        self.ridge = Ridge(self.B, self.d, lam)

    def width(self, t: int) -> float:
        if self.beta_kind == "constant":
            return self.alpha
        n = self.T if self.fixed_width else t
        return self.R * math.sqrt(self.d * math.log((1 + n * self.L ** 2 / self.lam) / self.delta)) + math.sqrt(self.lam) * self.S

    def select(self, t, obs):
        X = obs.features
        XV = np.matmul(X, self.ridge.Vinv)
        norms = np.sqrt(np.maximum(np.einsum("bkd,bkd->bk", XV, X), 0.0))
        scores = bmv(X, self.ridge.mean()) + self.width(t) * norms
        return np.argmax(scores + self.jitter, axis=1)

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        # V = lam I + g sum x x^T, b = g sum x y: the ridge mean is unchanged by g when lam scales too
        self.ridge.add(x, self.gram_scale * np.asarray(r), self.gram_scale)


class EpsilonGreedy(LinearAgent):
    """epsilon-greedy on the ridge estimate: explore with probability min(1, c sqrt(n) / (2 sqrt(t))).

    ``schedule``: ``sqrt_n`` (about c = 5 % exploration over n rounds; default, see phe spec
    A.2.3) or ``literal`` (the printed min(1, c / (2 sqrt t))).
    """

    name = "egreedy"
    action_spaces = ("finite", "contexts")

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, rate: float = 0.05, schedule: str = "sqrt_n"):
        super().__init__(setting, seeds, horizon)
        if schedule not in ("sqrt_n", "literal"):
            raise ValueError(f"schedule must be 'sqrt_n' or 'literal', got {schedule!r}")
        self.rate = rate * (math.sqrt(self.T) if schedule == "sqrt_n" else 1.0)
        self.ridge = Ridge(self.B, self.d, lam)
        self.u = self.streams("explore", "uniform")

    def select(self, t, obs):
        u = self.u.take(2)
        eps = min(1.0, self.rate / (2.0 * math.sqrt(t)))
        random_arm = np.minimum((u[:, 1] * self.K).astype(np.int64), self.K - 1)
        return np.where(u[:, 0] < eps, random_arm, self.greedy(self.ridge.mean(), obs))

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        self.ridge.add(x, r)


class ArmStats(LinearAgent):
    """Per-arm sufficient statistics (pull counts, reward sums) and the forced basis pulls: a fixed
    arm set only (the statistics of arm k mean nothing when the arms change every round)."""

    action_spaces = ("finite",)

    def __init__(self, setting, seeds, horizon, basis_init: bool):
        super().__init__(setting, seeds, horizon)
        self.pulls = np.zeros((self.B, self.K), dtype=np.int64)
        self.reward_sum = np.zeros((self.B, self.K))
        self.n_init = self.d if basis_init else 0

    def basis_arm(self, t):
        """Rounds 1..d pull the last d arms, I_t = K - t + 1 (1-based)."""
        return np.full(self.B, self.K - t, dtype=np.int64)

    def record_pull(self, arms, r):
        self.pulls[self.rows, arms] += 1
        self.reward_sum[self.rows, arms] += r

    def perturbed_mean(self, inv, extra, obs) -> np.ndarray:
        """inv @ sum_k x_k (reward_sum_k + extra_k)."""
        xs = np.matmul((self.reward_sum + extra)[:, None, :], obs.features)[:, 0, :]
        return bmv(inv, xs)


class LinPHE(ArmStats):
    """LinPHE of Kveton et al. (2019), efficient per-arm form (eq. 4), any a > 0.

    Round t > d: U_k ~ Binomial(ceil(a T_k), 1/2) fresh for every arm, theta =
    G^{-1} sum_k x_k (V_k + U_k) with G = sum_k (T_k + ceil(a T_k)) x_k x_k^T + reg I
    (equals eq. 2 for integer a when reg = lambda (a + 1)).  Rounds 1..d pull the basis arms.
    ``reg_scale``: ``absolute`` (reg = lam; default, lam = 1e-4) or ``times_a_plus_1``.
    """

    name = "linphe"

    def __init__(self, setting, seeds, horizon, a: float = 1.0, lam: float = 1e-4, reg_scale: str = "absolute"):
        super().__init__(setting, seeds, horizon, basis_init=True)
        if a <= 0:
            raise ValueError("linphe needs a > 0")
        if reg_scale not in ("absolute", "times_a_plus_1"):
            raise ValueError(f"reg_scale must be 'absolute' or 'times_a_plus_1', got {reg_scale!r}")
        reg = lam * (a + 1) if reg_scale == "times_a_plus_1" else lam
        self.a = float(a)
        self.counts = np.zeros((self.B, self.K), dtype=np.int64)   # ceil(a T_k), kept in step with pulls
        self.Ginv = np.tile(np.eye(self.d) / reg, (self.B, 1, 1))
        self.bits = self.streams("pseudo_rewards", "bits")

    def pseudo_counts(self, pulls):
        return np.ceil(self.a * pulls - 1e-9).astype(np.int64)

    def select(self, t, obs):
        if t <= self.n_init:
            return self.basis_arm(t)
        bound = math.ceil(self.a * (t - 1)) + self.K   # >= sum_k ceil(a T_k); depends on t only
        U = binomial_half_fixed(self.bits, self.counts, words_for(bound))
        return self.greedy(self.perturbed_mean(self.Ginv, U, obs), obs)

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        before = self.counts[self.rows, arms]
        self.record_pull(arms, r)
        after = self.pseudo_counts(self.pulls[self.rows, arms])
        self.counts[self.rows, arms] = after
        sherman_morrison(self.Ginv, x, 1.0 + (after - before))


class GeneralisedLinPHE(ArmStats):
    """Generalised LinPHE (Lee & Oh 2024, Alg. 2): all perturbations fresh every round.

    theta_t = V^{-1}(W_t + sum_i X_i (Y_i + Z_{t,i})), V = lam I + sum X X^T, with W_t ~ P_I
    and Z ~ P_R i.i.d.; the sum over history is grouped by arm (exact in distribution).
    """

    name = "glinphe"
    distribution_params = {"perturbation": "scalar", "init": "init"}

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, perturbation: str = "gaussian", scale: float = 0.5,
                 binomial_n: int | None = None, init: str = "none", init_scale: float | None = None, basis_init: bool = False):
        super().__init__(setting, seeds, horizon, basis_init=basis_init)
        self.ridge = Ridge(self.B, self.d, lam)
        self.pert = dist.ScalarPerturbation(perturbation, scale, binomial_n)
        self.init = init
        self.init_scale = math.sqrt(lam) * scale if init_scale is None else init_scale
        dist.check_name(init, dist.INIT_FAMILIES)
        self.z = self.streams("reward_perturbation", self.pert.kind)
        self.w = self.streams("initial_perturbation", "normal")

    def select(self, t, obs):
        if t <= self.n_init:
            return self.basis_arm(t)
        xi = self.pert.arm_sums(self.z, self.pulls, t - 1)
        W = dist.init_vectors(self.init, self.init_scale, self.w, 1, self.d)[:, 0]
        return self.greedy(self.perturbed_mean(self.ridge.Vinv, xi, obs) + bmv(self.ridge.Vinv, W), obs)

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        self.record_pull(arms, r)
        self.ridge.add(x, r)


class EnsembleSampling(LinearAgent):
    """Linear ensemble sampling (Lee & Oh 2024, Alg. 1); also Lin-ES and classic ES.

    m models theta_j = V^{-1} S_j with S_j = W_j + sum_i X_i (Y_i + Z_i^j), V = lam I + sum X X^T.
    W_j ~ P_W (``init``, per-coordinate std ``init_scale``, default sqrt(lam) * scale),
    Z ~ P_R (``perturbation`` with std ``scale``), one fresh Z per model per round, never
    resampled.  ``selection``: ``uniform`` j_t ~ U[m] or ``round_robin`` j_t = t (mod m).
    ``m: T`` (the string) means m equal to the horizon.  ``diagnostics`` and ``beta`` do not change
    the algorithm: they ask the runner's optimism probe (:mod:`ensemble_bandits.probes`) for the
    columns ``optfrac`` and ``lemma2frac``.
    """

    name = "ensemble_sampling"
    distribution_params = {"perturbation": "scalar", "init": "init"}
    symbolic_params = {"m": ("T", "horizon")}       # m = T: one member per round (lines-equiv)

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        m = hyper(cls, spec, "m")
        return int(horizon) if m in ("T", "horizon") else int(m)

    def __init__(self, setting, seeds, horizon, m: int | str = 10, lam: float = 1.0, perturbation: str = "gaussian",
                 scale: float = 0.5, binomial_n: int | None = None, init: str = "gaussian", init_scale: float | None = None,
                 selection: str = "uniform", diagnostics: bool = False, beta: float | None = None):
        super().__init__(setting, seeds, horizon)
        self.m = self.T if m in ("T", "horizon") else int(m)
        if selection not in ("uniform", "round_robin"):
            raise ValueError(f"selection must be 'uniform' or 'round_robin', got {selection!r}")
        self.selection = selection
        self.ridge = Ridge(self.B, self.d, lam)
        self.pert = dist.ScalarPerturbation(perturbation, scale, binomial_n)
        init_scale = math.sqrt(lam) * scale if init_scale is None else init_scale
        self.S = dist.init_vectors(init, init_scale, self.streams("initial_perturbation", "normal", block=self.m * self.d),
                                   self.m, self.d)
        self.z = self.streams("reward_perturbation", self.pert.kind)
        self.j = self.streams("selection", "uniform")
        self.diagnostics, self.beta = diagnostics, beta

    def member(self, t):
        if self.selection == "round_robin":
            return np.full(self.B, (t - 1) % self.m)
        return np.minimum((self.j.take(1)[:, 0] * self.m).astype(np.int64), self.m - 1)

    proposes = True

    def propose(self, t, obs):
        return bmv(self.ridge.Vinv, self.S[self.rows, self.member(t)])

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        self.ridge.add(x, r)
        Z = self.perturbations()
        self.S += (np.asarray(r)[:, None] + Z)[:, :, None] * x[:, None, :]

    def perturbations(self) -> np.ndarray:
        """The round's reward perturbations Z (B, m), one per member (the coupled experiment records them)."""
        return self.pert.draw(self.z, self.m)


class EnsemblePlusPlus(LinearAgent):
    """Linear Ensemble++ sampling (Li et al. 2025, eqs. 3-4), any reference x perturbation pair.

    Sigma^{-1} = I/prior_var + sum x x^T / noise^2;  mu = Sigma sum x y / noise^2;
    A = Sigma P with P_0 = Sigma_0^{-1} A_0 and P <- P + x z^T / noise (z ~ perturbation);
    action: theta = mu + A zeta = Sigma (p + P zeta), zeta ~ reference — O(dM + d^2) per round
    (A itself is never formed).  ``init``: ``perturbation_rows`` (authors' code: A_0 =
    Sigma_0^{1/2} B, rows of B from the perturbation family) or ``gaussian_columns`` (paper).

    Exact fast paths, bit for bit the plain form (tests/test_linear_agents.py): the update touches
    only the columns of P where z is non-zero (:func:`add_outer`), and otherwise works a few seeds
    at a time while P is in the cache, taking P zeta for the next round there (zeta from its own
    stream, so the same numbers); a Coordinate zeta reads one column (:func:`factor_times`).
    """

    name = "ensemble_pp"
    distribution_params = {"reference": "vector", "perturbation": "vector"}

    # The cost model's member work (costs.COST_MEMBER_S x M x d per seed and round, fitted to the plain
    # form's timings) of each pair, as the reference's plus the perturbation's share (fitted to bench_numpy.py
    # section 9; the calibration table, ensemble_bandits.calibration).  Coordinate and Sparse
    # perturbations touch 1 or 2 of the M columns, a Coordinate reference's P zeta is one column.
    MEMBER_SHARE_REFERENCE, MEMBER_SHARE_PERTURBATION = constants(
        "linear", "MEMBER_SHARE_REFERENCE", "MEMBER_SHARE_PERTURBATION")

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        return int(hyper(cls, spec, "M"))

    @classmethod
    def member_weight(cls, spec: dict) -> float:
        """This pair's member work relative to the cost model's dense default (costs.py)."""
        return (cls.MEMBER_SHARE_REFERENCE[hyper(cls, spec, "reference")]
                + cls.MEMBER_SHARE_PERTURBATION[hyper(cls, spec, "perturbation")])

    def __init__(self, setting, seeds, horizon, M: int = 8, reference: str = "gaussian", perturbation: str = "sphere",
                 prior_var: float = 10.0, noise_sd: float = 1.0, init: str = "perturbation_rows"):
        super().__init__(setting, seeds, horizon)
        self.M, self.ref, self.pert_name = int(M), reference, perturbation
        self.noise_sd = float(noise_sd)
        self.ridge = Ridge(self.B, self.d, 1.0 / prior_var)       # Vinv = Sigma (unit noise units)
        self.zeta = self.streams("reference", dist.vector_kind(reference))
        self.z = self.streams("perturbation", dist.vector_kind(perturbation))
        init_stream = self.streams("initial_factor", dist.vector_kind(perturbation))
        if init == "perturbation_rows":
            Bmat = dist.initial_factor(perturbation, init_stream, self.d, self.M)
        elif init == "gaussian_columns":
            Bmat = self.streams("initial_factor", "normal").shaped(self.d, self.M) / np.sqrt(self.M)
        else:
            raise ValueError(f"init must be 'perturbation_rows' or 'gaussian_columns', got {init!r}")
        self.P = Bmat / np.sqrt(prior_var)                        # Sigma_0^{-1} Sigma_0^{1/2} B
        self.next_Pz = None                                       # P zeta of the next round, if drawn

    def theta(self, zeta, Pz=None):
        """theta = Sigma (p + P zeta) (B, d); ``Pz``: P zeta when already known."""
        if Pz is None:
            Pz = factor_times(self.P, zeta, self.ref == "coordinate")
        return bmv(self.ridge.Vinv, self.ridge.b + Pz)

    proposes = True

    def propose(self, t, obs):
        Pz, self.next_Pz = self.next_Pz, None
        if Pz is None:
            return self.theta(dist.reference(self.ref, self.zeta, self.M))
        return self.theta(None, Pz)

    def update(self, t, obs, arms, r):
        x = obs.chosen(arms)
        s = self.noise_sd
        self.ridge.add(x / s, np.asarray(r) / s)
        z = dist.perturbation(self.pert_name, self.z, self.M)
        # the next round's reference vector (from its own stream: the numbers propose would draw)
        # is applied to P while the update has it in the cache; its product waits in next_Pz
        zeta = dist.reference(self.ref, self.zeta, self.M)
        self.next_Pz = add_outer(self.P, x / s, z, self.pert_name in dist.SPARSE_FAMILIES, zeta, self.ref == "coordinate")

    @property
    def factor(self) -> np.ndarray:
        """A = Sigma P (B, d, M)."""
        return np.matmul(self.ridge.Vinv, self.P)

