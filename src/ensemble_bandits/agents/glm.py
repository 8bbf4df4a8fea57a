"""Logistic (GLM) bandit agents built on a regularised maximum-likelihood fit, batched over seeds.

The fit (:mod:`.glm_fit`) uses per-arm sufficient statistics on a fixed arm set and the raw history
on per-round contexts, and is warm-started from the previous round's solution.  Common keywords:

* ``lam`` and ``penalty``: the penalty is lam |theta|^2 (``squared``, the phe glmes paper §3.3, used by
  LogPHE, GLM-UCB, UCB-GLM and epsilon-greedy there: phe spec A.6 #16) or (lam/2) |theta|^2
  (``half``: LogTS's N(0, I) prior, and the GLM-ES paper's loss for GLM-TSL and GLM-FPL);
* ``solver``: ``newton`` (exact minimiser; the LinPHE paper's agents) or gradient descent with
  ``steps`` steps of size ``lr``: ``sum_safe`` (min(lr, 1/L_hat)), ``sum_raw`` or ``mean`` (glmes
  glmes-A4; the GLM-ES paper's "100 iterations of step 0.01", default of its baselines, glmes paper §6);
  ``tol``: Newton's stopping step length;
* ``warmup``: rounds 1..warmup pull uniformly random arms (Li et al. 2017's initial exploration;
  0 by default: the papers' lam-regularisation replaces it, phe spec A.6 #8).

Randomness comes from the agent's own streams (seed, "agent/<name>/<stream>").
"""
from __future__ import annotations

import math

import numpy as np

from .. import distributions as dist
from ..calibration import constants
from ..catalog import hyper
from . import glm_fit
from .glm_fit import Design, linear_term, sigmoid
from .linear import LinearAgent, LinPHE, sherman_morrison


def _check(name: str, value: str, allowed: tuple) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be {' or '.join(repr(a) for a in allowed)}, got {value!r}")
    return value


def penalty_coefficient(lam: float, penalty: str) -> float:
    """The coefficient of (1/2)|theta|^2 in the fit's objective: 2 lam for lam |theta|^2 (``squared``),
    lam for (lam/2) |theta|^2 (``half``)."""
    if lam <= 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    return 2.0 * lam if _check("penalty", penalty, ("squared", "half")) == "squared" else float(lam)


class Fit:
    """The solver settings of an agent, applied to its data by :meth:`__call__`."""

    def __init__(self, lam: float, penalty: str, solver: str, steps: int, lr: float, tol: float):
        self.reg = penalty_coefficient(lam, penalty)
        self.solver = glm_fit.check_solver(solver)
        self.steps, self.lr, self.tol = int(steps), float(lr), float(tol)

    def __call__(self, design: Design, c, theta0, gram=None):
        return glm_fit.solve(design, c, self.reg, theta0, self.solver, self.steps, self.lr, self.tol, gram)


def ellipsoid_norms(X: np.ndarray, Vinv: np.ndarray) -> np.ndarray:
    """|x_k|_{V^{-1}} for every arm (B, K)."""
    return np.sqrt(np.maximum(np.einsum("bkd,bkd->bk", np.matmul(X, Vinv), X), 0.0))


class GLMAgent(LinearAgent):
    """A logistic model fitted to the data of the agent (per-arm statistics or raw history), the
    fit warm-started every round from ``self.theta``; optional uniformly random warm-up rounds.

    Subclasses choose the round's arm in :meth:`choose` (after the warm-up) and refit the estimate
    theta_hat in :meth:`update` when it depends on the data only (``refit = True``)."""

    name = "glm"
    action_spaces = ("finite", "contexts")
    refit = True
    # cost model (round_costs): seconds per seed and round of the arm choice beyond scoring the arms,
    # a + b K d^2 (GLM-UCB's widths; LogTS's Hessian and Cholesky factor)
    select_costs = (0.0, 0.0)

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """One fit per round (``solver``, ``steps``; :func:`glm_fit.fit_costs`) plus the arm choice."""
        d, K = dims["d"], dims["K"]
        per_round, per_seed = glm_fit.fit_costs(hyper(cls, spec, "solver"), int(hyper(cls, spec, "steps")), d,
                                                glm_fit.fit_rows(dims, action_space))
        a, b = cls.select_costs
        return per_round + glm_fit.ROUND_S, per_seed + glm_fit.SEED_ROUND_S + a + b * K * d * d

    def __init__(self, setting, seeds, horizon, lam, penalty, solver, steps, lr, tol, warmup):
        super().__init__(setting, seeds, horizon)
        self.fit = Fit(lam, penalty, solver, steps, lr, tol)
        self.lam = float(lam)
        self.data = glm_fit.data_for(setting, self.T)
        self.theta = np.zeros((self.B, self.d))
        self.warmup = int(warmup)
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.warmup_u = self.streams("warmup", "uniform") if self.warmup else None

    def estimate(self, obs, extra=None) -> np.ndarray:
        """Refit theta on the data (targets + ``extra`` perturbations), from the last theta."""
        design = self.data.design(obs)
        self.theta = self.fit(design, self.data.linear_term(obs, extra), self.theta, self.data.gram)
        return self.theta

    def select(self, t, obs):
        if t <= self.warmup:
            return np.minimum((self.warmup_u.take(1)[:, 0] * self.K).astype(np.int64), self.K - 1)
        return self.choose(t, obs)

    def choose(self, t, obs):
        raise NotImplementedError

    def update(self, t, obs, arms, r):
        self.data.add(obs, arms, r)
        if self.refit:
            self.estimate(obs)


class LogTS(GLMAgent):
    """Logistic Thompson sampling with the Laplace approximation (phe glmes paper §5.2, phe §A.2.4).

    theta_hat = MAP of sum_l g(X_l^T theta, Y_l) + (lam/2)|theta|^2 (prior N(0, I/lam), lam = 1);
    H = sum_k T_k mu'(x_k^T theta_hat) x_k x_k^T + lam I; each round theta ~ N(theta_hat, a^2 H^{-1})
    (``a``: the inflation of GLM-TSL, 1 here) drawn as theta_hat + a L^{-T} z with H = L L^T, and the
    arm argmax x^T theta.  The fit is refreshed every round (spec A.6 #6)."""

    name = "logts"
    select_costs = constants("glm", "LOGTS_SELECT_S")     # the Hessian at theta_hat, its Cholesky factor, one solve

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, a: float = 1.0, penalty: str = "half",
                 solver: str = "newton", steps: int = 100, lr: float = 0.01, tol: float = 1e-6, warmup: int = 0):
        super().__init__(setting, seeds, horizon, lam, penalty, solver, steps, lr, tol, warmup)
        self.a = float(a)
        self.z = self.streams("sample", "normal")
        self.sample = np.zeros((self.B, self.d))

    def choose(self, t, obs):
        z = self.z.take(self.d)
        H = glm_fit.hessian(self.data.design(obs), self.fit.reg, self.theta)
        L = np.linalg.cholesky(H)
        self.sample = self.theta + self.a * np.linalg.solve(L.transpose(0, 2, 1), z[:, :, None])[:, :, 0]
        return self.greedy(self.sample, obs)


class GLMTSL(LogTS):
    """GLM-TSL (Kveton et al. 2020), a GLM-ES baseline (glmes §2.6): LogTS with theta ~
    N(theta_hat, a^2 H(theta_hat)^{-1}), lam = 1, a = 1, the MLE by the GLM-ES paper's gradient descent
    (100 steps, step min(0.01, 1/L_hat); glmes §6, glmes-A4)."""

    name = "glm_tsl"

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, a: float = 1.0, penalty: str = "half",
                 solver: str = "sum_safe", steps: int = 100, lr: float = 0.01, tol: float = 1e-6, warmup: int = 0):
        super().__init__(setting, seeds, horizon, lam, a, penalty, solver, steps, lr, tol, warmup)


class GLMUCB(GLMAgent):
    """GLM-UCB (Filippi et al. 2010) as the LinPHE paper runs it (phe spec A.2.4): index
    mu(x^T theta_hat) + rho(t) |x|_{V^{-1}}, V = sum_l X_l X_l^T + lam I, theta_hat the lam|theta|^2-
    regularised MLE, lam = 1, and

        rho(t) = (2 k_mu kappa R_max / c_mu) sqrt(2 d log t log(2 d n / delta)),
        kappa = sqrt(3 + 2 log(1 + 2 L^2 / lam)),

    k_mu = 1/4, c_mu = 1/4 (the paper's "most optimistic" value), R_max = 1, delta = 1/n.  ``L``: the
    largest arm norm, None = of the round's arm set (seen by the agent).  ``fixed_width``: rho at
    t = n (the lineage code) instead of the time-varying rho(t) (Filippi)."""

    name = "glm_ucb"
    select_costs = constants("glm", "GLMUCB_SELECT_S")    # |x|_{V^-1} of every arm, Sherman-Morrison

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, k_mu: float = 0.25, c_mu: float = 0.25,
                 R_max: float = 1.0, delta: float | None = None, L: float | None = None, fixed_width: bool = False,
                 penalty: str = "squared", solver: str = "newton", steps: int = 100, lr: float = 0.01,
                 tol: float = 1e-6, warmup: int = 0):
        super().__init__(setting, seeds, horizon, lam, penalty, solver, steps, lr, tol, warmup)
        self.k_mu, self.c_mu, self.R_max, self.L = k_mu, c_mu, R_max, L
        self.delta = 1.0 / self.T if delta is None else float(delta)
        self.fixed_width = bool(fixed_width)
        self.Vinv = np.tile(np.eye(self.d) / self.lam, (self.B, 1, 1))

    def rho(self, t: int, L) -> np.ndarray:
        """rho(t) per seed (B,) for arm-norm bound ``L`` (scalar or (B,))."""
        n = self.T if self.fixed_width else t
        kappa = np.sqrt(3.0 + 2.0 * np.log(1.0 + 2.0 * np.square(L) / self.lam))
        scale = 2.0 * self.k_mu * kappa * self.R_max / self.c_mu
        return scale * math.sqrt(2.0 * self.d * math.log(n) * math.log(2.0 * self.d * self.T / self.delta))

    def choose(self, t, obs):
        L = np.linalg.norm(obs.features, axis=2).max(axis=1) if self.L is None else self.L
        rho = np.broadcast_to(self.rho(t, L), (self.B,))
        index = sigmoid(obs.scores(self.theta)) + rho[:, None] * ellipsoid_norms(obs.features, self.Vinv)
        return np.argmax(index + self.jitter, axis=1)

    def update(self, t, obs, arms, r):
        sherman_morrison(self.Vinv, obs.chosen(arms))
        super().update(t, obs, arms, r)


class UCBGLM(GLMUCB):
    """UCB-GLM (Li, Lu, Zhou 2017): index x^T theta_hat + alpha |x|_{V^{-1}}, V = sum X X^T + lam I.

    ``alpha``: ``theory`` = (sigma/kappa) sqrt((d/2) log(1 + 2n/d) + log(1/delta)) with sigma = 1/2,
    kappa = c_mu = 1/4, delta = 1/n (Li et al. Thm 2; LinPHE paper's runs, phe spec A.2.4), or a
    number (the GLM-ES baselines: alpha = 1, glmes §2.6).  Li et al.'s random initial exploration
    is ``warmup`` rounds (0 by default: replaced by lam = 1, phe spec A.6 #8)."""

    name = "ucb_glm"

    symbolic_params = {"alpha": ("theory",)}        # alpha: a number, or the theory value

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, alpha: float | str = "theory", sigma: float = 0.5,
                 c_mu: float = 0.25, delta: float | None = None, penalty: str = "squared", solver: str = "newton",
                 steps: int = 100, lr: float = 0.01, tol: float = 1e-6, warmup: int = 0):
        super().__init__(setting, seeds, horizon, lam, c_mu=c_mu, delta=delta, penalty=penalty, solver=solver,
                         steps=steps, lr=lr, tol=tol, warmup=warmup)
        if isinstance(alpha, str):
            _check("alpha", alpha, ("theory",))
            alpha = sigma / c_mu * math.sqrt(self.d / 2.0 * math.log(1.0 + 2.0 * self.T / self.d)
                                             + math.log(1.0 / self.delta))
        self.alpha = float(alpha)

    def choose(self, t, obs):
        index = obs.scores(self.theta) + self.alpha * ellipsoid_norms(obs.features, self.Vinv)
        return np.argmax(index + self.jitter, axis=1)


class LogisticEpsilonGreedy(GLMAgent):
    """epsilon-greedy with a logistic fit (phe glmes paper §5.2: "implemented as in Section 5.1"): explore
    a uniformly random arm with probability min(1, rate sqrt(n) / (2 sqrt(t))), else argmax x^T
    theta_hat with the lam|theta|^2-regularised MLE, lam = 1.  ``schedule`` as for ``egreedy``:
    ``sqrt_n`` (about 5 % exploration, phe spec A.2.3) or ``literal`` (min(1, rate / (2 sqrt t)))."""

    name = "log_egreedy"

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, rate: float = 0.05, schedule: str = "sqrt_n",
                 penalty: str = "squared", solver: str = "newton", steps: int = 100, lr: float = 0.01,
                 tol: float = 1e-6, warmup: int = 0):
        super().__init__(setting, seeds, horizon, lam, penalty, solver, steps, lr, tol, warmup)
        self.rate = rate * (math.sqrt(self.T) if _check("schedule", schedule, ("sqrt_n", "literal")) == "sqrt_n"
                            else 1.0)
        self.u = self.streams("explore", "uniform")

    def choose(self, t, obs):
        u = self.u.take(2)
        eps = min(1.0, self.rate / (2.0 * math.sqrt(t)))
        random_arm = np.minimum((u[:, 1] * self.K).astype(np.int64), self.K - 1)
        return np.where(u[:, 0] < eps, random_arm, self.greedy(self.theta, obs))


class GLMFPL(GLMAgent):
    """GLM-FPL (Kveton et al. 2020; = GLM-PHE), a GLM-ES baseline (glmes §2.6): every round the
    MLE of the history with *fresh* perturbed targets Y_l + Z_l, Z_l ~ N(0, scale^2) i.i.d. for all
    l < t, then argmax x^T theta.  Perturbations enter only through c = sum_l X_l (Y_l + Z_l): on a
    fixed arm set the per-arm sums sum_{l: arm k} Z_l are drawn directly (exact in distribution);
    on contexts each past round gets its own draw.  scale = 0.1 (= sigma_R), lam = 1 with
    (lam/2)|theta|^2, the GLM-ES paper's gradient descent warm-started from the last perturbed fit
    (glmes §6); ``perturbation``: any scalar family of the same standard deviation.  ``per_datum``: on a
    fixed arm set too, keep every past round and refit on all of them, each with its own fresh draw,
    as the paper describes PHE (Theta(t) draws and rows per round: the cost GLM-ES's paper argues
    against; the same distribution as the per-arm sums, different draws)."""

    name = "glm_fpl"
    refit = False
    distribution_params = {"perturbation": "scalar"}

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """As a fit on the past rounds (per-round contexts) when ``per_datum``."""
        return super().round_costs(spec, dims, "contexts" if spec.get("per_datum") else action_space)

    def __init__(self, setting, seeds, horizon, scale: float = 0.1, perturbation: str = "gaussian",
                 lam: float = 1.0, penalty: str = "half", solver: str = "sum_safe", steps: int = 100,
                 lr: float = 0.01, tol: float = 1e-6, warmup: int = 0, per_datum: bool = False):
        super().__init__(setting, seeds, horizon, lam, penalty, solver, steps, lr, tol, warmup)
        self.pert = dist.ScalarPerturbation(perturbation, scale)
        self.z = self.streams("reward_perturbation", self.pert.kind)
        self.per_datum = bool(per_datum)
        if self.per_datum:
            self.data = glm_fit.History(self.B, self.T, self.d)

    def choose(self, t, obs):
        if self.setting.action_space == "finite" and not self.per_datum:
            extra = self.pert.arm_sums(self.z, self.data.pulls, t - 1)
        else:
            extra = self.pert.draw(self.z, t - 1) if t > 1 else None
        return self.greedy(self.estimate(obs, extra), obs)


class LogPHE(LinPHE):
    """LogPHE (phe glmes paper §3.3, phe §A.2.2): LinPHE's round with the ridge solve replaced by
    the logistic fit.  Rounds 1..d pull the basis arms; then, with U_k ~ Binomial(ceil(a T_k), 1/2)
    fresh for every arm (LinPHE's draw), theta minimises

        sum_k [ (V_k + U_k) g(x_k^T theta, 1) + (T_k + ceil(a T_k) - V_k - U_k) g(x_k^T theta, 0) ] + lam |theta|^2,

    the paper's objective with a pseudo-rewards per observation grouped by arm (for Bernoulli
    rewards V_k counts the ones of arm k), and the arm is argmax x^T theta.  lam = 1 (``penalty``
    ``squared``: lam|theta|^2 as in phe paper §3.3; phe §A.6 #4); Newton/IRLS warm-started from the last
    round's theta, to convergence (``tol``)."""

    name = "logphe"

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """A fit per round on the K arms (pseudo-counts included) plus the binomial draws."""
        d, K = dims["d"], dims["K"]
        per_round, per_seed = glm_fit.fit_costs(hyper(cls, spec, "solver"), int(hyper(cls, spec, "steps")), d, K)
        return per_round + glm_fit.ROUND_S, per_seed + glm_fit.SEED_ROUND_S

    def __init__(self, setting, seeds, horizon, a: float = 1.0, lam: float = 1.0, penalty: str = "squared",
                 solver: str = "newton", steps: int = 100, lr: float = 0.01, tol: float = 1e-6):
        super().__init__(setting, seeds, horizon, a=a, lam=lam)
        self.fit = Fit(lam, penalty, solver, steps, lr, tol)
        self.Ginv = None                       # no ridge Gram matrix: the logistic fit replaces it
        self.theta = np.zeros((self.B, self.d))

    def perturbed_mean(self, inv, extra, obs):
        """The LogPHE estimate for pseudo-rewards ``extra`` = U (B, K) (``inv`` is unused)."""
        design = Design(obs.features, (self.pulls + self.counts).astype(np.float64))
        self.theta = self.fit(design, linear_term(obs.features, self.reward_sum + extra), self.theta)
        return self.theta

    def update(self, t, obs, arms, r):
        self.record_pull(arms, r)
        self.counts[self.rows, arms] = self.pseudo_counts(self.pulls[self.rows, arms])

