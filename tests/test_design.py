"""The G-optimal design and Algorithm 3's rounding (GLM-ES warm-up, glmes.md §2.3, A8-A9): the
Kiefer-Wolfowitz value d at the optimum, exact pull totals, batch invariance, and agreement with
naive per-seed reference implementations."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble_bandits.agents import design

EPS = 0.01


def unit_arms(seed, B, K, d):
    X = np.random.default_rng(seed).standard_normal((B, K, d))
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


# --------------------------------------------------------------------------------------
# naive references: one arm set, Python loops, V^{-1} recomputed from scratch every iteration


def naive_design(X, eps=EPS, solver="fedorov_wynn", max_iter=100_000):
    K, d = X.shape
    zeta = np.full(K, 1.0 / K)
    for it in range(max_iter + 1):
        V = sum(zeta[k] * np.outer(X[k], X[k]) for k in range(K))
        A = np.linalg.inv(V)
        g = np.array([X[k] @ A @ X[k] for k in range(K)])
        jp = int(np.argmax(g))
        if g[jp] <= d * (1 + eps) or it == max_iter:
            return zeta, it
        support = [k for k in range(K) if zeta[k] > 0]
        jm = min(support, key=lambda k: g[k])
        if solver == "wolfe_atwood" and 1 - g[jm] / d > g[jp] / d - 1 and zeta[jm] < 1:
            bound = zeta[jm] / (1 - zeta[jm])
            line = (d - g[jm]) / (d * (g[jm] - 1)) if g[jm] > 1 else math.inf
            gamma = min(bound, line)
            zeta = (1 + gamma) * zeta
            zeta[jm] -= gamma
            if bound <= line:
                zeta[jm] = 0.0
        else:
            gamma = (g[jp] / d - 1) / (g[jp] - 1)
            zeta = (1 - gamma) * zeta
            zeta[jp] += gamma
    raise AssertionError("unreachable")


def naive_round(zeta, tau, d, a=0.5, min_pulls=False):
    """Algorithm 3 line by line (start clipped at tau - K/2 >= 0), restricted to supp(zeta)."""
    K = len(zeta)
    support = [i for i in range(K) if zeta[i] > 0]
    N = [math.ceil(max(tau - K / 2, 0) * z) for z in zeta]
    while sum(N) != tau:
        if sum(N) < tau:
            j = min(support, key=lambda i: (N[i] - 1) / zeta[i])
            N[j] += 1
        if sum(N) > tau:
            j = max(support, key=lambda i: (N[i] - 1) / zeta[i])
            N[j] -= 1
    if min_pulls:
        r = (d * (d + 1) / 2 + 1) / a
        N = [max(n, math.ceil(r / K)) for n in N]
    return np.array(N)


# --------------------------------------------------------------------------------------
# the design


@pytest.mark.parametrize("solver", design.SOLVERS)
@pytest.mark.parametrize("K,d", [(30, 6), (50, 20)])
def test_kiefer_wolfowitz_value_d(solver, K, d):
    """At the returned design max_k g_k is d within the tolerance eps (and never below d: the
    zeta-weighted mean of g is exactly d), and its D-criterion is within d*eps of the optimum."""
    X = unit_arms(0, 4, K, d)
    zeta, G, iters = design.g_optimal_design(X, eps=EPS, solver=solver)
    assert zeta.shape == (4, K) and np.all(zeta >= 0) and np.allclose(zeta.sum(axis=1), 1.0)
    assert np.all(G <= d * (1 + EPS)) and np.all(G >= d * (1 - 1e-9)) and np.all(iters > 0)
    g = design.g_values(X, zeta)
    np.testing.assert_allclose((zeta * g).sum(axis=1), d, rtol=1e-9)
    np.testing.assert_allclose(g.max(axis=1), G, rtol=1e-12)
    fine, G_fine, _ = design.g_optimal_design(X, eps=1e-7, solver="wolfe_atwood")
    assert np.all(G_fine <= d * (1 + 1e-7))

    def logdet(z):
        return np.linalg.slogdet(np.matmul(X.transpose(0, 2, 1) * z[:, None, :], X))[1]

    gap = logdet(fine) - logdet(zeta)
    assert np.all(gap >= -1e-6) and np.all(gap <= d * EPS)


def test_known_optimum_basis_and_interior_points():
    """Arms: the basis e_1..e_d and points of norm 1/2 inside its ellipsoid.  The optimum is uniform
    on the basis (G = d); away steps put exactly zero weight on the interior points."""
    d = 5
    inner = 0.5 * unit_arms(1, 1, 7, d)[0]
    X = np.concatenate([np.eye(d), inner])
    zeta, G, _ = design.g_optimal_design(X, eps=1e-6, solver="wolfe_atwood")
    assert np.all(zeta[d:] == 0.0)
    np.testing.assert_allclose(zeta[:d], 1.0 / d, atol=1e-6)
    assert d <= G <= d * (1 + 1e-6)
    zeta_fw, G_fw, _ = design.g_optimal_design(X, eps=1e-3)
    assert np.all(zeta_fw > 0) and G_fw <= d * (1 + 1e-3)      # forward steps only: positive weights


@pytest.mark.parametrize("solver", design.SOLVERS)
def test_design_matches_naive_reference(solver):
    X = unit_arms(2, 3, 12, 4)
    zeta, _, iters = design.g_optimal_design(X, solver=solver)
    for b in range(3):
        ref, it = naive_design(X[b], solver=solver)
        assert iters[b] == it
        np.testing.assert_allclose(zeta[b], ref, atol=1e-10)
        assert np.array_equal(zeta[b] == 0, ref == 0)


@pytest.mark.parametrize("solver", design.SOLVERS)
def test_design_is_batch_invariant(solver):
    """A seed's design is bit-identical alone and in a batch (stopping is per seed)."""
    X = unit_arms(3, 5, 40, 8)
    zeta, G, iters = design.g_optimal_design(X, solver=solver)
    assert len(set(iters.tolist())) > 1                        # the seeds stop at different iterations
    for b in (0, 3):
        z1, G1, it1 = design.g_optimal_design(X[b], solver=solver)
        assert np.array_equal(z1, zeta[b]) and G1 == G[b] and it1 == iters[b]


def test_design_refuses_arms_that_do_not_span():
    X = unit_arms(4, 1, 10, 5)
    X[..., 0] = 0.0
    with pytest.raises(ValueError, match="span R\\^d: rank 4 < d = 5"):
        design.g_optimal_design(X)
    with pytest.raises(ValueError, match="unknown G-optimal solver 'newton'"):
        design.g_optimal_design(unit_arms(4, 1, 10, 5), solver="newton")


# --------------------------------------------------------------------------------------
# the rounding (Algorithm 3)


def test_r_of_a_values():
    """r(0.5) of Algorithm 3 for the experiments' dimensions (spec §2.3: 422 and 2552)."""
    assert design.rounding_r(20) == 422 and design.rounding_r(50) == 2552


@pytest.mark.parametrize("solver", design.SOLVERS)
@pytest.mark.parametrize("tau", [0, 1, 7, 12, 25, 100, 500, 2001])
def test_rounding_sums_to_tau_and_matches_naive(solver, tau):
    K, d = 30, 6
    X = unit_arms(5, 4, K, d)
    zeta, _, _ = design.g_optimal_design(X, solver=solver)
    N = design.round_design(zeta, tau, d)
    assert N.shape == (4, K) and N.dtype == np.int64
    assert np.all(N.sum(axis=1) == tau) and np.all(N >= 0)
    assert np.all(N[zeta == 0] == 0)
    for b in range(4):
        assert np.array_equal(N[b], naive_round(zeta[b], tau, d))
    assert np.array_equal(design.round_design(zeta[1], tau, d), N[1])          # one seed alone


def test_rounding_min_pulls_line_13():
    """g_opt_min_pulls on: every arm gets at least ceil(r(a)/K) pulls, so the warm-up exceeds tau."""
    K, d = 50, 20
    zeta, _, _ = design.g_optimal_design(unit_arms(6, 2, K, d))
    N = design.round_design(zeta, 500, d, min_pulls=True)
    assert np.all(N >= 9) and np.all(N.sum(axis=1) > 500)                      # ceil(422/50) = 9
    for b in range(2):
        assert np.array_equal(N[b], naive_round(zeta[b], 500, d, min_pulls=True))
    N4 = design.round_design(zeta, 500, d, a=0.25, min_pulls=True)
    assert np.all(N4 >= 17)                                                    # ceil(844/50)


def test_rounded_design_keeps_the_g_value():
    """With enough pulls the rounded allocation N/tau is nearly as good as the design (G close to d),
    and far better than uniform pulls on a skewed arm set."""
    K, d = 50, 20
    X = unit_arms(7, 3, K, d)
    X[:, :25] *= 0.3                                          # half the arms well inside: uniform is poor
    zeta, G, _ = design.g_optimal_design(X)
    for tau in (500, 5000):
        N = design.round_design(zeta, tau, d)
        g = design.g_values(X, N / tau).max(axis=1)
        assert np.all(g <= d * (1.2 if tau == 500 else 1.03))
    uniform = design.g_values(X, np.full((3, K), 1.0 / K)).max(axis=1)
    assert np.all(uniform > 1.5 * d)


def test_warmup_pulls_is_a_permutation_of_the_multiset():
    from ensemble_bandits.rng import generator

    N = np.array([[3, 0, 2, 1], [0, 4, 1, 1]])
    seqs = design.warmup_pulls(N, [generator(s, "t/warmup_order") for s in (0, 1)])
    for n, s in zip(N, seqs):
        assert np.array_equal(np.bincount(s, minlength=4), n)
    again = design.warmup_pulls(N, [generator(s, "t/warmup_order") for s in (0, 1)])
    assert all(np.array_equal(a, b) for a, b in zip(seqs, again))
    other = design.warmup_pulls(N[:1], [generator(5, "t/warmup_order")])
    assert len(other[0]) == 6
