"""GLM-ES: ensemble sampling for generalised linear bandits (Sun, Wang & Xu 2025, Alg. 1 with glmes paper §4.2;
glmes §2.1, glmes §2.3), and its anytime variant by the doubling trick (glmes §2.5, :mod:`.anytime`).

m models theta^j, all starting at 0 (no prior perturbation, glmes §2.1).  Each round, every model
gets one fresh perturbation Z_t^j ~ P_R of the new reward and is refitted by ``steps`` = 100
full-batch gradient-descent steps of size ``lr`` = 0.01 (warm-started from its previous theta, spec
glmes-A5/glmes-A6) on its own perturbed, lambda-regularised negative log-likelihood (sum form, eq. 4.2-4.3)

    L_j(theta) = lam/2 |theta|^2 - sum_{l<=t} [(Y_l + Z_l^j) x_l^T theta - b(x_l^T theta)],
    grad L_j   = lam theta + sum_{l<=t} (mu(x_l^T theta) - Y_l - Z_l^j) x_l;

perturbations are drawn once per (model, round) and never resampled.  The first tau rounds
(``warmup``, 500) pull the arms of a rounded G-optimal design (:mod:`.design`, App. B.4 Alg. 2-3)
in random order; their data are perturbed like every other round's (glmes-A7) and the models are
fitted on them during the warm-up (``warmup_fit``).  After the warm-up each round plays
argmax_x x^T theta^{j_t} for a model j_t drawn uniformly (mu is increasing); ties at random.

Exact algebra: on a fixed arm set the history enters the loss and gradient only through per-arm
statistics (:class:`glm_fit.ArmData`) -- pull counts n_k, reward sums s_k -- and each model's
perturbation sums P_jk (:class:`Perturbations`): grad L_j = lam theta + sum_k (n_k mu(x_k^T theta) -
s_k - P_jk) x_k, the same numbers as the sum over past rounds, at a per-round cost that does not grow
with t.  On per-round contexts the sum runs over the stored history (:class:`glm_fit.History`, one
row per past round: that cost grows with t).  Batched over seeds and members: thetas (B, m, d), two
batched matmuls per GD step (:func:`glm_fit.gradient_descent`).

Options for the spec's ambiguities (defaults first):

* ``solver`` (glmes-A4, the spec's ``loss_scale``; :mod:`.glm_fit`'s names): ``sum_safe`` -- the sum loss
  with step min(lr, 1/L_t), L_t = mu'_max lambda_max(sum_l x_l x_l^T) + lam, mu'_max = 1/4, which is
  the stated 0.01 while that step is stable; ``sum_raw`` -- step 0.01 always, as printed (it
  oscillates once lambda_max(sum x x^T) exceeds about 800); ``mean`` -- the loss divided by the
  number of observations, step 0.01; ``newton`` -- the exact regularised MLE of every member
  (:func:`glm_fit.newton`, stopping at step length ``tol``), what the analysis assumes.
* ``warm_start`` (glmes-A5): True (from the previous theta^j) or False (from 0 every round).
* ``warmup_fit`` (glmes-A7): ``per_round`` -- the update runs every round, warm-up rounds included, so
  the models are fitted on the (perturbed) warm-up data before the first ES round; ``once`` -- no
  update during the warm-up, one fit (from 0) at its last round.
* ``warmup_design``: ``g_optimal`` (fixed arm set only) or ``random`` (uniformly random arms, the
  only possibility on per-round contexts, glmes §3.6).  ``g_opt_solver`` / ``g_opt_eps`` (glmes-A8),
  ``g_opt_min_pulls`` / ``g_opt_a`` (glmes-A9): see :mod:`.design`.
* The warm-up lasts min(warmup, horizon) rounds: an anytime epoch passes its planned length as the
  horizon, which gives the per-epoch warm-up min(tau, epoch length) of glmes-A10.
"""
from __future__ import annotations

import numpy as np

from .. import distributions as dist
from ..catalog import hyper
from ..rng import generator
from . import design, glm_fit
from .anytime import doubling_trick
from .linear import LinearAgent

SOLVERS = glm_fit.SOLVERS                          # sum_safe (default) | sum_raw | mean | newton
WARMUP_DESIGNS = ("g_optimal", "random")
WARMUP_FITS = ("per_round", "once")


def _choice(value, known, what):
    if value not in known:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, known))}, got {value!r}")
    return value


class Perturbations:
    """Each member's perturbations of the history, in the layout of the fit's data: per-arm sums
    (B, m, K) on a fixed arm set, one column per past round (B, m, t) on per-round contexts."""

    def __init__(self, setting, m: int):
        self.per_arm = setting.action_space == "finite"
        self.rows, self.t = np.arange(setting.B), 0
        self.values = np.zeros((setting.B, m, setting.K if self.per_arm else 64))

    def add(self, arms, Z):
        """Record the round's perturbations Z (B, m) of the pulled ``arms``."""
        if self.per_arm:
            self.values[self.rows, :, arms] += Z
        else:
            if self.t == self.values.shape[2]:
                self.values = np.concatenate([self.values, np.zeros_like(self.values)], axis=2)
            self.values[:, :, self.t] = Z
        self.t += 1

    def extra(self) -> np.ndarray:
        """The ``extra`` targets of :meth:`glm_fit.ArmData.linear_term` / :meth:`glm_fit.History.linear_term`."""
        return self.values if self.per_arm else self.values[:, :, :self.t]


class GLMES(LinearAgent):
    """GLM-ES (glmes §2.3): m GD-fitted logistic models on perturbed histories, G-optimal warm-up.

    Hyper-parameters (paper defaults, glmes paper §7.2): m = 10 models, lam = 1 ((lam/2)|theta|^2), perturbation
    N(0, scale^2) with scale = sigma_R = 0.1, warm-up tau = 500, ``steps`` = 100 GD steps of size
    ``lr`` = 0.01.  The options that settle the spec's ambiguities are in the module docstring.
    """

    name = "glm_es"
    action_spaces = ("finite", "contexts")
    distribution_params = {"perturbation": "scalar"}

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        return int(hyper(cls, spec, "m"))

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """Every member refitted every round (:func:`glm_fit.fit_costs` with M = m), warm-up included;
        plus each member's linear term over the fit rows (m rows d)."""
        d, m = dims["d"], dims["members"]
        rows = glm_fit.fit_rows(dims, action_space)
        per_round, per_seed = glm_fit.fit_costs(hyper(cls, spec, "solver"), int(hyper(cls, spec, "steps")), d, rows, m)
        return per_round + glm_fit.ROUND_S, per_seed + glm_fit.SEED_ROUND_S + glm_fit.GD_MAC_S * m * rows * d

    def __init__(self, setting, seeds, horizon, m: int = 10, lam: float = 1.0, scale: float = 0.1,
                 perturbation: str = "gaussian", binomial_n: int | None = None, warmup: int = 500,
                 warmup_design: str = "g_optimal", warmup_fit: str = "per_round", solver: str = "sum_safe",
                 steps: int = 100, lr: float = 0.01, tol: float = 1e-6, warm_start: bool = True,
                 g_opt_solver: str = "fedorov_wynn", g_opt_eps: float = 0.01, g_opt_min_pulls: bool = False,
                 g_opt_a: float = 0.5):
        super().__init__(setting, seeds, horizon)
        self.m, self.lam = int(m), float(lam)
        if self.m < 1:
            raise ValueError(f"glm_es needs m >= 1, got {m!r}")
        if self.lam <= 0:
            raise ValueError(f"glm_es needs lam > 0, got {lam!r}")
        self.solver = glm_fit.check_solver(solver)
        self.warmup_design = _choice(warmup_design, WARMUP_DESIGNS, "warmup_design")
        self.warmup_fit = _choice(warmup_fit, WARMUP_FITS, "warmup_fit")
        _choice(g_opt_solver, design.SOLVERS, "g_opt_solver")
        if self.warmup_design == "g_optimal" and setting.action_space != "finite":
            raise ValueError("glm_es: the G-optimal warm-up needs a fixed arm set; on per-round contexts use "
                             "warmup_design: random (glmes §3.6)")
        if int(warmup) < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.steps, self.lr, self.tol, self.warm_start = int(steps), float(lr), float(tol), bool(warm_start)
        self.g_opt = {"solver": g_opt_solver, "eps": float(g_opt_eps), "min_pulls": bool(g_opt_min_pulls),
                      "a": float(g_opt_a)}
        self.warmup = min(int(warmup), self.T)
        self.pert = dist.ScalarPerturbation(perturbation, scale, binomial_n)
        self.z = self.streams("reward_perturbation", self.pert.kind, block=max(self.m, 4096))
        self.j = self.streams("selection", "uniform")
        self.u = self.streams("warmup_arms", "uniform")
        self.theta = np.zeros((self.B, self.m, self.d))
        self.data = glm_fit.data_for(setting, self.T)         # counts, reward sums, Gram (or the history)
        self.perts = Perturbations(setting, self.m)           # each member's perturbation sums
        self.plan = None                                      # warm-up arms (B, W), set in round 1
        self.wlen = np.full(self.B, self.warmup, dtype=np.int64)

    # -- warm-up ---------------------------------------------------------------------------------

    def warmup_counts(self, features) -> np.ndarray:
        """Pull counts N (B, K) of the rounded G-optimal design for the warm-up."""
        g = self.g_opt
        zeta, _, _ = design.g_optimal_design(features, eps=g["eps"], solver=g["solver"])
        return design.round_design(zeta, self.warmup, self.d, a=g["a"], min_pulls=g["min_pulls"])

    def _make_plan(self, obs):
        if self.warmup_design == "random" or self.warmup == 0:
            self.plan = np.zeros((self.B, 0), dtype=np.int64)
            return
        N = self.warmup_counts(obs.features)
        gens = [generator(s, f"{self.streams.namespace}/warmup_order") for s in self.streams.seeds]
        seqs = design.warmup_pulls(N, gens)
        self.wlen = np.array([len(s) for s in seqs], dtype=np.int64)
        self.plan = np.zeros((self.B, int(self.wlen.max())), dtype=np.int64)
        for b, s in enumerate(seqs):
            self.plan[b, :len(s)] = s

    def in_warmup(self, t) -> np.ndarray:
        """Seeds (B,) whose round t is a warm-up round."""
        return t <= self.wlen

    # -- protocol --------------------------------------------------------------------------------

    def member(self):
        """The model j_t of every seed (B,), uniform on {0..m-1}; drawn every round (fixed consumption)."""
        return np.minimum((self.j.take(1)[:, 0] * self.m).astype(np.int64), self.m - 1)

    def select(self, t, obs):
        if self.plan is None:
            self._make_plan(obs)
        j = self.member()
        warm = self.in_warmup(t)
        arms = np.zeros(self.B, dtype=np.int64) if warm.all() else self.greedy(self.theta[self.rows, j], obs)
        if self.warmup_design == "random":
            u = self.u.take(1)[:, 0]
            return np.where(warm, np.minimum((u * self.K).astype(np.int64), self.K - 1), arms)
        if warm.any():
            planned = self.plan[self.rows, np.minimum(t - 1, self.plan.shape[1] - 1)]
            arms = np.where(warm, planned, arms)
        return arms

    def update(self, t, obs, arms, r):
        Z = self.pert.draw(self.z, self.m)                    # one fresh perturbation per model, kept
        self.data.add(obs, arms, np.asarray(r, dtype=np.float64))
        self.perts.add(arms, Z)
        fit = np.ones(self.B, dtype=bool) if self.warmup_fit == "per_round" else t >= self.wlen
        if fit.any():                                         # ``once``: thetas stay 0 until then
            new = self.refit(obs, self.theta if self.warm_start else np.zeros_like(self.theta))
            self.theta = new if fit.all() else np.where(fit[:, None, None], new, self.theta)

    def refit(self, obs, theta0) -> np.ndarray:
        """Every member's fit (B, m, d) on its perturbed history, from ``theta0`` (:func:`glm_fit.solve`:
        ``steps`` GD steps, or Newton)."""
        c = self.data.linear_term(obs, self.perts.extra())    # sum_k x_k (s_k + P_jk): (B, m, d)
        return glm_fit.solve(self.data.design(obs), c, self.lam, theta0, self.solver, self.steps, self.lr,
                             self.tol, self.data.gram)


GLMESAnytime = doubling_trick(GLMES, "glm_es_anytime")
"""Anytime GLM-ES (glmes §2.5): restarts at T_i = floor(T0 b^i); epoch i uses m_i = max(1,
round(2 ln tau_i)) and scale = 0.02 ln tau_i, warm-up min(500, tau_i) per epoch (glmes-A10, glmes-A11)."""
