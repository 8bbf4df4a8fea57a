"""Regularised logistic maximum likelihood, batched over seeds (leading axis B) and, where given,
ensemble members (axis M): the objective, its gradient and Hessian, Newton/IRLS and gradient descent.

One fit sees a :class:`Design` -- rows x_j (B, N, d) with weights n_j (B, N) -- and a linear term
c (B, d), or (B, M, d) for M members sharing the design::

    L(theta) = sum_j n_j b(x_j^T theta) - c^T theta + (lam/2) |theta|^2,      b(z) = log(1 + e^z)
    grad     = sum_j n_j mu(x_j^T theta) x_j - c + lam theta,                 mu = b' = sigmoid
    H        = sum_j n_j mu'(x_j^T theta) x_j x_j^T + lam I

The negative log-likelihood of a history (X_l, Y_l), l <= t, is sum_l [b(X_l^T theta) - Y_l X_l^T theta]
(for Y in {0, 1} the cross-entropy g(X_l^T theta, Y_l)), so:

* a fixed arm set (:class:`ArmData`): the rows are the K arms, n_k the pull counts, c = sum_k x_k s_k
  with s_k the reward sum of arm k -- the history grouped by arm, exactly, at a cost per round that
  does not grow with t;
* per-round contexts (:class:`History`): the rows are the past rounds, n_l = 1, c = sum_l X_l Y_l;
* perturbed targets change c only (reward perturbations Z: c = sum_l X_l (Y_l + Z_l); one c per
  ensemble member), pseudo-observations change n too (LogPHE: n_k = T_k + ceil(a T_k)).

``lam`` is the coefficient of (lam/2)|theta|^2 (GLM-ES's convention and a N(0, I/lam) prior); the
LinPHE paper's lam|theta|^2 is lam' = 2 lam here.  Everything is float64.

:func:`solve` is the one entry point of the agents: ``newton`` (the exact minimiser, default of the
LinPHE paper's agents) or gradient descent with one of three step rules (the GLM-ES paper's "100 GD
steps of size 0.01", glmes-A4).  Every fit is warm-started from the given theta0, and each row's
(seed's, member's) iterations depend on its own data only, so a seed's fit is the same bit for bit in
any batch.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..calibration import constants

SOLVERS = ("newton", "sum_safe", "sum_raw", "mean")
"""``newton``: Newton/IRLS to convergence; gradient descent on the summed loss with step
``min(lr, 1/L_hat)`` (``sum_safe``; L_hat = mu'_max lambda_max(sum_j n_j x_j x_j^T) + lam, the
loss's smoothness bound), a plain step ``lr`` (``sum_raw``), or ``lr`` on the loss divided by
sum_j n_j (``mean``)."""
NEWTON_MAX_ITER = 50       # Newton steps per fit at most (3-4 from a warm start in practice)
LINE_SEARCH_HALVINGS = 30  # step halvings per Newton step at most
MU_DOT_MAX = 0.25          # max of sigmoid'


class Design(NamedTuple):
    """Rows of a fit: features X (B, N, d) and weights n (B, N) (pull counts, or ones)."""

    X: np.ndarray
    n: np.ndarray

    def take(self, rows: np.ndarray) -> Design:
        """The design of the seeds ``rows`` (a copy)."""
        return Design(self.X[rows], self.n[rows])

    def gram(self) -> np.ndarray:
        """sum_j n_j x_j x_j^T (B, d, d)."""
        return np.matmul(self.X.transpose(0, 2, 1) * self.n[:, None, :], self.X)


def sigmoid(z):
    """The logistic link mu(z) = 1 / (1 + e^-z) (exact 0 where e^-z overflows)."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def softplus(z):
    """b(z) = log(1 + e^z), stable for any z."""
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def linear_term(X: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """c = sum_j targets_j x_j: (B, d) for targets (B, N), (B, M, d) for (B, M, N); X (B, N, d)."""
    if targets.ndim == 2:
        return np.matmul(targets[:, None, :], X)[:, 0, :]
    return np.matmul(targets, X)


def _members(theta: np.ndarray) -> np.ndarray:
    return theta[:, None, :] if theta.ndim == 2 else theta


def _scores(design: Design, theta: np.ndarray) -> np.ndarray:
    """x_j^T theta (B, M, N) for theta (B, M, d)."""
    return np.matmul(theta, design.X.transpose(0, 2, 1))


def _value(n, z, c, lam, theta):
    """L from the scores z (..., N) of theta (..., d)."""
    return (n * softplus(z)).sum(axis=-1) + np.einsum("...d,...d->...", 0.5 * lam * theta - c, theta)


def _weighted_gram(X, w):
    """sum_j w_j x_j x_j^T: X (B, N, d), w (B, M, N) -> (B, M, d, d)."""
    if w.shape[1] == 1:
        return np.matmul(X.transpose(0, 2, 1) * w, X)[:, None]
    return np.matmul(X.transpose(0, 2, 1)[:, None] * w[:, :, None, :], X[:, None])


def objective(design: Design, c: np.ndarray, lam: float, theta: np.ndarray) -> np.ndarray:
    """L(theta): (B,) for theta (B, d), (B, M) for theta (B, M, d)."""
    th = _members(theta)
    val = _value(design.n[:, None, :], _scores(design, th), _members(c), lam, th)
    return val[:, 0] if theta.ndim == 2 else val


def gradient(design: Design, c: np.ndarray, lam: float, theta: np.ndarray) -> np.ndarray:
    """grad L(theta), the shape of theta: (B, d) or (B, M, d)."""
    th = _members(theta)
    p = sigmoid(_scores(design, th)) * design.n[:, None, :]
    g = np.matmul(p, design.X) - _members(c) + lam * th
    return g[:, 0] if theta.ndim == 2 else g


def hessian(design: Design, lam: float, theta: np.ndarray) -> np.ndarray:
    """Hessian of L at theta: (B, d, d) for theta (B, d), (B, M, d, d) for theta (B, M, d)."""
    th = _members(theta)
    p = sigmoid(_scores(design, th))
    H = _weighted_gram(design.X, design.n[:, None, :] * p * (1.0 - p))
    H += lam * np.eye(theta.shape[-1])
    return H[:, 0] if theta.ndim == 2 else H


def newton(design: Design, c: np.ndarray, lam: float, theta0: np.ndarray, tol: float = 1e-6,
           max_iter: int = NEWTON_MAX_ITER) -> tuple[np.ndarray, np.ndarray]:
    """The minimiser of L by Newton's method from ``theta0``: (theta, Newton steps taken per row).

    theta0 (B, d) or (B, M, d); c of the same shape, or (B, d) shared by the members.  Each step
    solves H delta = grad and takes theta - s delta with s = 1, halved while the objective would rise
    (convex, so s = 1 near the optimum: quadratic convergence).  A row stops once its full step
    |delta| <= tol (its error is then of order tol^2) or after ``max_iter`` steps; rows are seeds x
    members, each iterating on its own data only (batch-invariant).  lam > 0 makes the minimiser
    unique for any targets, also outside [0, 1] (Gaussian rewards, perturbations)."""
    if lam <= 0:
        raise ValueError(f"the logistic fit needs lam > 0, got {lam}")
    B, d = theta0.shape[0], theta0.shape[-1]
    M = 1 if theta0.ndim == 2 else theta0.shape[1]
    theta = np.array(theta0, dtype=np.float64).reshape(B * M, d)
    cc = np.broadcast_to(_members(c), (B, M, d)).reshape(B * M, d)
    seed_of = np.repeat(np.arange(B), M)
    steps = np.zeros(B * M, dtype=np.int64)
    active = np.arange(B * M)
    eye = lam * np.eye(d)
    z = f = None                      # scores and objective of the active rows at their theta
    for _ in range(int(max_iter)):
        if active.size == 0:
            break
        # one row per (seed, member), its own copy of the seed's design unless nothing is gathered
        X, n = (design.X, design.n) if (M == 1 and active.size == B) else design.take(seed_of[active])
        th, ca = theta[active], cc[active]
        if z is None:
            z = np.matmul(X, th[:, :, None])[:, :, 0]
            f = _value(n, z, ca, lam, th)
        p = sigmoid(z)
        g = np.matmul((n * p)[:, None, :], X)[:, 0] - ca + lam * th
        H = np.matmul(X.transpose(0, 2, 1) * (n * p * (1.0 - p))[:, None, :], X) + eye
        delta = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        th, z, f = _line_search(X, n, ca, lam, th, delta, f)
        theta[active] = th
        steps[active] += 1
        going = np.linalg.norm(delta, axis=1) > tol
        active, z, f = active[going], z[going], f[going]
    return theta.reshape(theta0.shape), steps.reshape(theta0.shape[:-1])


def _line_search(X, n, c, lam, theta, delta, f0):
    """theta - s delta for s = 1, 1/2, ...: the first s at which the objective does not rise (up to
    rounding), row by row; returns the new theta, its scores and its objective."""
    slack = 1e-12 * (1.0 + np.abs(f0))
    new = theta - delta
    z = np.matmul(X, new[:, :, None])[:, :, 0]
    f = _value(n, z, c, lam, new)
    bad = f > f0 + slack
    s = np.ones(len(theta))
    for _ in range(LINE_SEARCH_HALVINGS):
        if not bad.any():
            break
        idx = np.flatnonzero(bad)
        s[idx] *= 0.5
        new[idx] = theta[idx] - s[idx, None] * delta[idx]
        z[idx] = np.matmul(X[idx], new[idx][:, :, None])[:, :, 0]
        f[idx] = _value(n[idx], z[idx], c[idx], lam, new[idx])
        bad[idx] = f[idx] > f0[idx] + slack[idx]
    return new, z, f


GD_CHUNK_BYTES = 4 << 20
"""Working-set budget of one block of seeds in :func:`gradient_descent` (bytes)."""


def gd_chunk(B: int, M: int, N: int, d: int, budget: int | None = None) -> int:
    """Seeds per block of :func:`gradient_descent`: as many as keep the block's arrays (-X^T, n X,
    the scores and the thetas) within ``budget`` bytes (default :data:`GD_CHUNK_BYTES`), at least 1."""
    per_seed = 8 * (2 * N * d + M * N + 3 * M * d)
    return int(max(1, min(B, (GD_CHUNK_BYTES if budget is None else budget) // per_seed)))


def gradient_descent(design: Design, c: np.ndarray, lam: float, theta0: np.ndarray, steps: int,
                     lr) -> np.ndarray:
    """``steps`` full-batch gradient steps theta <- theta - lr grad L(theta) from ``theta0`` (B, d) or
    (B, M, d); ``lr`` a scalar or one step size per seed (B,) (0 leaves a seed unchanged).

    :func:`gradient` regrouped for speed (same iterates up to rounding): with nX = n x formed once,
    grad = mu(theta X^T) nX - c + lam theta, mu = 1/(1 + exp(-z)) from one matmul with -X^T, so a
    step is two batched matmuls, one exp and a few in-place passes.

    Seeds are independent, so they are taken in blocks (:func:`gd_chunk`) that run all their steps
    while their arrays stay in the CPU cache: a big batch (d = 50, K = 500: 400 kB of X per seed)
    otherwise streams every seed's X from memory twice per step, about twice as slow.  Each seed's
    numbers are the same, bit for bit, in any block (the matmul is one product per seed)."""
    theta = np.array(_members(theta0), dtype=np.float64, copy=True)
    B, M, d = theta.shape
    N = design.X.shape[1]
    lr3 = np.broadcast_to(np.asarray(lr, dtype=np.float64), (B,)).reshape(B, 1, 1)
    shrink = 1.0 - lr3 * lam
    c = np.broadcast_to(_members(c), theta.shape)
    size = gd_chunk(B, M, N, d)
    with np.errstate(over="ignore"):                                       # exp overflow -> mu = 0 exactly
        for a in range(0, B, size):
            rows = slice(a, min(B, a + size))
            th, cc, l3, sh = theta[rows], c[rows], lr3[rows], shrink[rows]  # views: th updates theta
            X = design.X[rows]
            nX = design.n[rows, :, None] * X                               # (b, N, d)
            neg_xt = np.ascontiguousarray(-X.transpose(0, 2, 1))           # (b, d, N)
            S = np.empty((th.shape[0], M, N))
            G = np.empty_like(th)
            for _ in range(int(steps)):
                np.matmul(th, neg_xt, out=S)
                np.exp(S, out=S)
                S += 1.0
                np.reciprocal(S, out=S)                                    # mu(x_j^T theta)
                np.matmul(S, nX, out=G)
                G -= cc
                G *= l3
                th *= sh
                th -= G
    return theta[:, 0] if np.ndim(theta0) == 2 else theta


def safe_lr(gram: np.ndarray, lam: float, cap: float = 0.01) -> np.ndarray:
    """Per-seed step min(cap, 1/L_hat), L_hat = mu'_max lambda_max(gram) + lam (B,): gradient descent
    on the summed loss is stable with it (glmes §2.3, ``sum_safe``)."""
    top = np.linalg.eigvalsh(gram)[:, -1]
    return np.minimum(cap, 1.0 / (MU_DOT_MAX * top + lam))


def solve(design: Design, c: np.ndarray, lam: float, theta0: np.ndarray, solver: str = "newton",
          steps: int = 100, lr: float = 0.01, tol: float = 1e-6, gram: np.ndarray | None = None) -> np.ndarray:
    """The fit of the agents: ``solver`` one of :data:`SOLVERS`, warm-started from ``theta0`` (B, d)
    or (B, M, d).  Newton stops at ``tol``; gradient descent takes ``steps`` steps of base size
    ``lr``; ``gram`` = sum_j n_j x_j x_j^T (B, d, d) for ``sum_safe`` (computed from the design when
    not given)."""
    if check_solver(solver) == "newton":
        return newton(design, c, lam, theta0, tol)[0]
    if solver == "sum_safe":
        step = safe_lr(design.gram() if gram is None else gram, lam, lr)
    elif solver == "sum_raw":
        step = lr
    else:                                                   # mean: lr on L / sum_j n_j
        step = lr / np.maximum(design.n.sum(axis=1), 1.0)
    return gradient_descent(design, c, lam, theta0, steps, step)


def check_solver(solver: str) -> str:
    """``solver`` if it is one of :data:`SOLVERS`, else a ValueError naming them."""
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    return solver


# ---------------------------------------------------------------------------------------
# the data of a fit, per arm or per round


class ArmData:
    """Per-arm sufficient statistics of a fixed arm set, B seeds x K arms: pull counts n_k, reward
    sums s_k and the Gram matrix sum_k n_k x_k x_k^T (kept in step, for ``sum_safe``)."""

    def __init__(self, B: int, K: int, d: int):
        self.pulls = np.zeros((B, K), dtype=np.int64)
        self.sums = np.zeros((B, K))
        self.gram = np.zeros((B, d, d))
        self.rows = np.arange(B)

    @property
    def count(self) -> np.ndarray:
        """Rounds recorded per seed (B,)."""
        return self.pulls.sum(axis=1)

    def add(self, obs, arms, rewards) -> None:
        x = obs.chosen(arms)
        self.pulls[self.rows, arms] += 1
        self.sums[self.rows, arms] += rewards
        self.gram += x[:, :, None] * x[:, None, :]

    def design(self, obs, extra_pulls=None) -> Design:
        """The K arms with weights n_k (+ ``extra_pulls`` (B, K), e.g. pseudo-observations)."""
        n = self.pulls if extra_pulls is None else self.pulls + extra_pulls
        return Design(obs.features, n.astype(np.float64))

    def linear_term(self, obs, extra=None) -> np.ndarray:
        """c = sum_k x_k (s_k + extra_k); ``extra`` (B, K), or (B, M, K) for members: per-arm sums of
        target perturbations (or pseudo-rewards)."""
        return linear_term(obs.features, _plus(self.sums, extra))


class History:
    """The raw history of per-round contexts: the pulled features X_l (B, t, d), rewards Y_l and the
    Gram matrix sum_l X_l X_l^T; storage grows by doubling up to the horizon."""

    def __init__(self, B: int, T: int, d: int):
        self.T, self.t = int(T), 0
        size = min(self.T, 256)
        self.X, self.y, self.ones = np.zeros((B, size, d)), np.zeros((B, size)), np.ones((B, size))
        self.gram = np.zeros((B, d, d))

    @property
    def count(self) -> np.ndarray:
        return np.full(self.X.shape[0], self.t)

    def add(self, obs, arms, rewards) -> None:
        if self.t == self.X.shape[1]:
            size = min(max(self.T, self.t + 1), 2 * self.t)
            grow = size - self.t
            self.X = np.concatenate([self.X, np.zeros((self.X.shape[0], grow, self.X.shape[2]))], axis=1)
            self.y = np.concatenate([self.y, np.zeros((self.y.shape[0], grow))], axis=1)
            self.ones = np.ones(self.y.shape)
        x = obs.chosen(arms)
        self.X[:, self.t] = x
        self.y[:, self.t] = rewards
        self.t += 1
        self.gram += x[:, :, None] * x[:, None, :]

    def design(self, obs=None, extra_pulls=None) -> Design:
        """The past rounds, weight 1 each (``extra_pulls`` is for per-arm data only)."""
        if extra_pulls is not None:
            raise ValueError("pseudo-observations need per-arm statistics (a fixed arm set)")
        return Design(self.X[:, :self.t], self.ones[:, :self.t])

    def linear_term(self, obs=None, extra=None) -> np.ndarray:
        """c = sum_l X_l (Y_l + extra_l); ``extra`` (B, t) or (B, M, t): per-round target perturbations."""
        return linear_term(self.X[:, :self.t], _plus(self.y[:, :self.t], extra))


def _plus(targets: np.ndarray, extra) -> np.ndarray:
    """targets (B, N) + extra (B, N) or (B, M, N) (one row of targets per member)."""
    if extra is None:
        return targets
    return targets + extra if np.ndim(extra) == 2 else targets[:, None, :] + extra


def data_for(setting, horizon: int):
    """Per-arm statistics for a fixed arm set, the raw history for per-round contexts."""
    if setting.action_space == "finite":
        return ArmData(setting.B, setting.K, setting.d)
    if setting.action_space == "contexts":
        return History(setting.B, horizon, setting.d)
    raise ValueError(f"a logistic fit needs arm features, not the action space {setting.action_space!r}")


# ---------------------------------------------------------------------------------------
# cost model of the fits (what ``costs.cell_cost_seconds`` asks a GLM agent class: its
# ``round_costs``): per GD step and batch GD_CALL_S; per seed and step the products (GD_MAC_S per
# multiply-add), the scores (GD_SCORE_S), the design read (GD_READ_S) and theta's update (GD_SEED_S),
# with EIG_S for ``sum_safe``'s lambda_max, all scaled by GD_RUN_FACTOR (whole runs over these
# minima); NEWTON_S for Newton/IRLS; ROUND_S and SEED_ROUND_S for the round's other work.  Values,
# units, fits and the command that refits them: the calibration table (ensemble_bandits.calibration,
# model ``glm``).
(GD_CALL_S, GD_MAC_S, GD_SCORE_S, GD_READ_S, GD_SEED_S, EIG_S, GD_RUN_FACTOR, NEWTON_S, ROUND_S,
 SEED_ROUND_S) = constants("glm", "GD_CALL_S", "GD_MAC_S", "GD_SCORE_S", "GD_READ_S", "GD_SEED_S", "EIG_S",
                           "GD_RUN_FACTOR", "NEWTON_S", "ROUND_S", "SEED_ROUND_S")


def fit_costs(solver: str, steps: int, d: int, N: float, M: int = 1) -> tuple[float, float]:
    """(seconds per round and batch, seconds per round and seed) of one refit of M members on N rows
    (the arms of a fixed arm set, or the past rounds on per-round contexts) by ``solver``."""
    if check_solver(solver) == "newton":
        a, b, c = NEWTON_S
        return c, M * (a + b * N * d * d)
    per_seed = steps * (GD_MAC_S * 2 * M * N * d + GD_SCORE_S * M * N + GD_READ_S * N * d + GD_SEED_S)
    if solver == "sum_safe":
        per_seed += EIG_S[0] + EIG_S[1] * d ** 3
    return GD_RUN_FACTOR * steps * GD_CALL_S, GD_RUN_FACTOR * per_seed


def fit_rows(dims: dict, action_space: str) -> float:
    """Rows of a fit on average over the run: the K arms, or on per-round contexts the past rounds
    (T/2 on average)."""
    return dims["K"] if action_space == "finite" else dims["horizon"] / 2.0
