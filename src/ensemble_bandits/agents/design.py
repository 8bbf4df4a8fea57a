"""Approximate G-optimal design over a finite arm set and the rounding of Algorithm 3 (GLM-ES warm-up).

GLM-ES (glmes §2.3; paper App. B.4, Alg. 2 L1038 and Alg. 3 L1054-1072) pulls its first tau arms
by a G-optimal design zeta = argmin_{zeta in simplex} max_k x_k^T V(zeta)^{-1} x_k, V(zeta) =
sum_k zeta_k x_k x_k^T, rounded to integer pull counts N_k with sum_k N_k = tau.  By the
Kiefer-Wolfowitz theorem the optimal G-value is d (= the D-optimal design).

Everything is batched over seeds (arm sets X (B, K, d)); each seed's numbers are those it gets alone.

* :func:`g_optimal_design` -- Frank-Wolfe from the uniform design until max_k g_k <= d (1 + eps),
  eps = 0.01 (glmes-A8).  ``solver``:
  ``fedorov_wynn`` (default; the spec's pseudo-code: forward steps only, zeta <- (1 - gamma) zeta +
  gamma e_k*, gamma = (g*/d - 1)/(g* - 1), the exact line search of log det V) or ``wolfe_atwood``
  (forward and *away* steps, Wolfe 1970 / Atwood 1973: weights of arms outside the optimal support
  reach exactly 0, so "restrict Alg. 3 to supp(zeta)" (glmes-A9) removes them; fewer iterations).
  From the uniform start the forward-only solver leaves every weight positive, so its support is
  the whole arm set and every arm gets at least one warm-up pull.
  V^{-1} and g are kept by exact rank-one updates, recomputed from scratch every ``refresh``
  iterations and at the end (the returned G-value is the exact one).
* :func:`round_design` -- Algorithm 3 as written: N_i = ceil((tau - K/2) zeta_i), then +-1 on
  argmin / argmax_i (N_i - 1)/zeta_i (both over supp(zeta), glmes-A9) until sum N = tau; line 13
  (N_i <- max(N_i, r(a)/K), r(a) = (d(d+1)/2 + 1)/a) only with ``min_pulls=True`` (glmes-A9: off by
  default, so the warm-up is exactly tau; on = ceil(r(a)/K), which makes it longer than tau).
  One necessary guard: when tau < K/2 the printed start ceil((tau - K/2) zeta_i) is negative and
  the loop can end with negative counts, so the start is ceil(max(tau - K/2, 0) zeta_i) (identical
  whenever tau >= K/2, e.g. tau = 500 with K <= 1000).
* :func:`warmup_pulls` -- the pull sequence: a uniformly random permutation of the multiset
  {k repeated N_k times} (glmes-A8), from one generator per seed.
"""
from __future__ import annotations

import math

import numpy as np

SOLVERS = ("fedorov_wynn", "wolfe_atwood")


def g_values(X: np.ndarray, zeta: np.ndarray) -> np.ndarray:
    """g_k = x_k^T V(zeta)^{-1} x_k (B, K) for arm sets X (B, K, d) and designs zeta (B, K)."""
    V = np.matmul(X.transpose(0, 2, 1) * zeta[:, None, :], X)
    A = np.linalg.inv(V)
    return np.einsum("bkd,bkd->bk", np.matmul(X, A), X)


def _batched(X):
    X = np.asarray(X, dtype=np.float64)
    return (X[None], True) if X.ndim == 2 else (X, False)


def g_optimal_design(X, eps: float = 0.01, solver: str = "fedorov_wynn", max_iter: int = 100_000,
                     refresh: int = 50):
    """Approximate G-optimal designs of the arm sets X (B, K, d) (or one (K, d)).

    Returns (zeta (B, K), G (B,), iterations (B,)): the design, its exact G-value max_k g_k
    (<= d (1 + eps) unless ``max_iter`` ran out) and the Frank-Wolfe iterations it took.
    ValueError when an arm set does not span R^d (no design has a finite G-value).
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown G-optimal solver {solver!r}; known: {', '.join(SOLVERS)}")
    X, single = _batched(X)
    B, K, d = X.shape
    rank = np.linalg.matrix_rank(X)
    if np.any(rank < d):
        raise ValueError(f"the G-optimal design needs arms that span R^d: rank {int(rank.min())} < d = {d} "
                         f"(K = {K} arms); use a random warm-up instead")
    rows = np.arange(B)
    zeta = np.full((B, K), 1.0 / K)
    A = g = None
    active = np.ones(B, dtype=bool)
    iters = np.zeros(B, dtype=np.int64)
    target = d * (1.0 + eps)
    for it in range(max_iter + 1):
        if it % refresh == 0:                                   # exact V^{-1} and g (drift control)
            V = np.matmul(X.transpose(0, 2, 1) * zeta[:, None, :], X)
            A = np.linalg.inv(V)
            g = np.einsum("bkd,bkd->bk", np.matmul(X, A), X)
        jp = np.argmax(g, axis=1)
        gp = g[rows, jp]
        active &= gp > target
        if not active.any() or it == max_iter:
            break
        iters += active
        gamma = np.where(active, (gp / d - 1.0) / (gp - 1.0), 0.0)
        j, away = jp, np.zeros(B, dtype=bool)
        if solver == "wolfe_atwood":
            jm = np.argmin(np.where(zeta > 0, g, np.inf), axis=1)
            gm, zm = g[rows, jm], zeta[rows, jm]
            away = active & (1.0 - gm / d > gp / d - 1.0) & (zm < 1.0)
            bound = zm / np.where(away, 1.0 - zm, 1.0)
            line = (d - gm) / (d * np.where(gm > 1.0, gm - 1.0, 1.0))
            drop = away & ((gm <= 1.0) | (bound <= line))
            gamma = np.where(away, np.where(drop, bound, line), gamma)
            j = np.where(away, jm, jp)
        x = X[rows, j]                                          # (B, d)
        u = np.matmul(A, x[:, :, None])[:, :, 0]                # V^{-1} x_j
        w = np.matmul(X, u[:, :, None])[:, :, 0]                # x_k^T V^{-1} x_j
        gj = g[rows, j]
        # forward: V' = (1-gamma) V + gamma x x^T; away: V' = (1+gamma) V - gamma x x^T
        s = np.where(away, -1.0, 1.0)
        scale = 1.0 - s * gamma
        c = s * gamma / scale
        k = c / (1.0 + c * gj)                                  # Sherman-Morrison coefficient
        A = (A - k[:, None, None] * u[:, :, None] * u[:, None, :]) / scale[:, None, None]
        g = (g - k[:, None] * w * w) / scale[:, None]
        zeta = zeta * scale[:, None]
        zeta[rows, j] += s * gamma
        if solver == "wolfe_atwood":
            zeta[rows[drop], j[drop]] = 0.0
    G = g_values(X, zeta).max(axis=1)
    return (zeta[0], G[0], iters[0]) if single else (zeta, G, iters)


def rounding_r(d: int, a: float = 0.5) -> float:
    """r(a) = (d(d+1)/2 + 1)/a of Algorithm 3, line 1."""
    return (d * (d + 1) / 2.0 + 1.0) / a


def round_design(zeta, tau: int, d: int, a: float = 0.5, min_pulls: bool = False) -> np.ndarray:
    """Integer pull counts N (B, K) of Algorithm 3 for designs zeta (B, K) (or one (K,)) and a
    warm-up of ``tau`` pulls; sum_k N_k = tau unless ``min_pulls`` (line 13) raises some counts."""
    zeta = np.asarray(zeta, dtype=np.float64)
    single = zeta.ndim == 1
    zeta = zeta[None] if single else zeta
    B, K = zeta.shape
    tau = int(tau)
    if tau < 0:
        raise ValueError(f"the warm-up length must be >= 0, got {tau}")
    rows = np.arange(B)
    supp = zeta > 0
    safe = np.where(supp, zeta, 1.0)
    N = np.ceil(max(tau - K / 2.0, 0.0) * zeta).astype(np.int64)
    while True:
        total = N.sum(axis=1)
        if np.all(total == tau):
            break
        ratio = (N - 1) / safe
        up = np.argmin(np.where(supp, ratio, np.inf), axis=1)
        down = np.argmax(np.where(supp, ratio, -np.inf), axis=1)
        N[rows, up] += total < tau
        N[rows, down] -= total > tau
    if min_pulls:
        N = np.maximum(N, math.ceil(rounding_r(d, a) / K - 1e-12))
    return N[0] if single else N


def warmup_pulls(N: np.ndarray, gens) -> list[np.ndarray]:
    """Per seed, the warm-up arm sequence: the multiset {k x N_k} in a uniformly random order drawn
    from that seed's generator (one permutation each)."""
    return [g.permutation(np.repeat(np.arange(len(n)), n)) for n, g in zip(np.asarray(N), gens)]
