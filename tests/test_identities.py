"""Exactness identities and distributional equivalences between the algorithms.

* Ensemble++ ridge view (ensplusplus §5.4): incremental factor == batch formula.
* LinPHE efficient per-arm form == naive Algorithm 1 of Kveton et al. (phe §A.2.1), in distribution.
* Prop. 2 of Lee & Oh (lines E-B1a): ES(m = T, round robin) == generalised LinPHE, pathwise
  (the library's EnsembleSampling.update against the naive Alg. 2).
* Gaussian generalised LinPHE == LinTS (lines B.2), in distribution.
* Ensemble++ with large M tracks the TS posterior covariance (ensplusplus §5.1 / §11.9).

Monte-Carlo checks use fixed seeds (deterministic) and tolerances of several standard
errors; each block also contains a negative control showing that the check can fail.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import final_per_seed, run_history
from ensemble_bandits import distributions as dist
from ensemble_bandits import coupling, runner
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.agents.linear import EnsemblePlusPlus, EnsembleSampling
from ensemble_bandits.protocol import Observation, Setting


# --------------------------------------------------------------------------------------
# helpers: a fixed design replicated over B "seeds", so one select() gives B independent draws


def fixed_design(X: np.ndarray, B: int):
    """(setting, observation) of the arm set X (K, d), the same for B seeds."""
    K, d = X.shape
    return Setting(B, d, K), Observation.of(np.broadcast_to(X, (B, K, d)).copy())


def feed(agent, obs, arms, rewards):
    """Apply a fixed history (the same for every seed) through the agent's update()."""
    B = agent.B
    for t, (a, r) in enumerate(zip(arms, rewards), start=1):
        agent.update(t, obs, np.full(B, a), np.full(B, float(r)))


def sample_thetas(agent, obs, t, reps):
    """theta-tilde of round t, drawn reps times for every seed (greedy intercepted)."""
    got = []
    agent.greedy = lambda theta, obs: got.append(theta.copy()) or np.zeros(agent.B, dtype=np.int64)
    for _ in range(reps):
        agent.select(t, obs)
    del agent.greedy
    return np.concatenate(got)


def mean_ok(samples, mean, cov, z=5.0):
    """Every coordinate of the sample mean within z standard errors of ``mean``."""
    se = np.sqrt(np.diag(cov) / len(samples))
    return np.all(np.abs(samples.mean(axis=0) - mean) < z * se)


def whitened_error(C, S):
    """|| S^{-1/2} C S^{-1/2} - I ||_op (scale-free comparison of covariances)."""
    w, U = np.linalg.eigh(S)
    Sih = U @ np.diag(w ** -0.5) @ U.T
    return np.abs(np.linalg.eigvalsh(Sih @ C @ Sih) - 1).max()


def cov_tol(d, N, z=5.0):
    # op-norm error of a whitened sample covariance of N Gaussian-like draws: about 2 sqrt(d/N);
    # we allow z/2 times that
    return z * math.sqrt(d / N)


# a small fixed design: K = 6 arms in d = 3 and a history with odd pull counts
RNG = np.random.default_rng(2024)
X6 = RNG.uniform(-1, 1, (6, 3))
X6[:, -1] = 1.0                                          # a bias coordinate, as in phe_linear
HIST_ARMS = [0, 1, 3, 0, 3, 0, 1, 3, 0, 4, 3, 5, 0, 3, 1, 3, 4, 3]   # pulls [5, 3, 0, 7, 2, 1]
HIST_R = (RNG.random(len(HIST_ARMS)) < 0.5).astype(float)
PULLS = np.bincount(HIST_ARMS, minlength=6)
VSUM = np.bincount(HIST_ARMS, weights=HIST_R, minlength=6)


# --------------------------------------------------------------------------------------
# 3. Ensemble++ ridge view


@pytest.mark.parametrize("init", ["perturbation_rows", "gaussian_columns"])
@pytest.mark.parametrize("perturbation,noise_sd", [("sphere", 1.0), ("gaussian", 0.6), ("coordinate", 1.0),
                                                    ("cube", 2.0), ("sparse", 1.0)])
def test_ensemble_pp_ridge_view(init, perturbation, noise_sd, monkeypatch):
    """A_t = Sigma_t (Sigma_0^{-1} A_0 + sum_s X_s z_s^T / noise), Sigma_t^{-1} = I/pv + sum X X^T / noise^2."""
    seeds, T, pv, M = [0, 1], 80, 3.0, 7
    env = runner.make_env({"name": "russo_finite", "d": 4, "n_arms": 40}, seeds)
    agent = EnsemblePlusPlus(env.setting, seeds, T, M=M, reference="sphere", perturbation=perturbation,
                             prior_var=pv, noise_sd=noise_sd, init=init)
    A0 = agent.factor.copy()
    zs = []
    real = dist.perturbation
    monkeypatch.setattr(dist, "perturbation", lambda *a: zs.append(real(*a)) or zs[-1])
    X, Y = run_history(agent, env, T)
    assert len(zs) == T
    Z = np.stack(zs, 1)                                                   # (B,T,d) (B,T) (B,T,M)
    d = env.d
    for b in range(len(seeds)):
        Sigma0 = pv * np.eye(d)
        prec = np.linalg.inv(Sigma0) + X[b].T @ X[b] / noise_sd ** 2
        Sigma = np.linalg.inv(prec)
        np.testing.assert_allclose(agent.ridge.Vinv[b], Sigma, rtol=1e-8, atol=1e-12)
        mu = Sigma @ (X[b].T @ Y[b]) / noise_sd ** 2
        np.testing.assert_allclose(agent.ridge.mean()[b], mu, rtol=1e-8, atol=1e-10)
        A = Sigma @ (np.linalg.solve(Sigma0, A0[b]) + X[b].T @ Z[b] / noise_sd)
        np.testing.assert_allclose(agent.factor[b], A, rtol=1e-8, atol=1e-10)
        # the action parameter is mu + A zeta
        zeta = np.random.default_rng(b).standard_normal(M)
        theta = agent.theta(np.tile(zeta, (len(seeds), 1)))[b]
        np.testing.assert_allclose(theta, mu + A @ zeta, rtol=1e-8, atol=1e-10)
    # initial factor: A_0 = Sigma_0^{1/2} B; perturbation rows have unit norm (gaussian: about)
    if init == "perturbation_rows" and perturbation != "gaussian":
        np.testing.assert_allclose(np.linalg.norm(A0, axis=2), math.sqrt(pv))


def test_ensemble_pp_coordinate_reference_is_symmetrised_member():
    """Coordinate reference: theta = mu +- sqrt(M) A[:, i] (ES as a special case, ensplusplus §2.3)."""
    env = runner.make_env({"name": "russo_finite", "d": 3, "n_arms": 20}, [0])
    agent = EnsemblePlusPlus(env.setting, [0], 30, M=5, reference="coordinate")
    feed(agent, env.observe(1), [1, 2, 3, 4], [0.3, -1.0, 2.0, 0.1])
    zeta = dist.reference("coordinate", agent.zeta, 5)
    i = int(np.flatnonzero(zeta[0])[0])
    mu, A = agent.ridge.mean()[0], agent.factor[0]
    np.testing.assert_allclose(agent.theta(zeta)[0], mu + np.sign(zeta[0, i]) * math.sqrt(5) * A[:, i])


# --------------------------------------------------------------------------------------
# 4. LinPHE efficient per-arm form vs naive Algorithm 1


def _linphe_thetas(a, lam, reg_scale, B=4000, reps=5):
    setting, obs = fixed_design(X6, B)
    agent = AGENTS["linphe"](setting, list(range(B)), 100, a=a, lam=lam, reg_scale=reg_scale)
    feed(agent, obs, HIST_ARMS, HIST_R)
    assert np.array_equal(agent.pulls[0], PULLS)
    return agent, sample_thetas(agent, obs, len(HIST_ARMS) + 1, reps)


def _naive_alg1(a, lam, N, seed):
    """Kveton et al. Alg. 1: a fresh Bernoulli(1/2) pseudo-rewards per past round, G = (a+1)(sum X X^T + lam I)."""
    rng = np.random.default_rng(seed)
    Xh = X6[HIST_ARMS]
    G = (a + 1) * (Xh.T @ Xh + lam * np.eye(3))
    Zsum = rng.integers(0, 2, size=(N, len(HIST_ARMS), a), dtype=np.int8).sum(axis=2)   # sum_j Z_{j,l}
    return np.linalg.solve(G, (Xh.T @ (HIST_R[None, :] + Zsum).T)).T


def _phe_moments(a_counts, reg):
    """Exact mean and covariance of theta given the history, for pseudo-reward counts a_counts per arm."""
    G = (X6.T * (PULLS + a_counts)) @ X6 + reg * np.eye(3)
    Gi = np.linalg.inv(G)
    mean = Gi @ X6.T @ (VSUM + a_counts / 2)
    cov = Gi @ ((X6.T * (a_counts / 4)) @ X6) @ Gi
    return mean, cov


@pytest.mark.parametrize("a", [1, 2, 3])
def test_linphe_efficient_equals_naive_alg1(a):
    lam = 0.5
    _, eff = _linphe_thetas(float(a), lam, "times_a_plus_1")
    N = len(eff)
    naive = _naive_alg1(a, lam, N, seed=a)
    mean, cov = _phe_moments(a * PULLS, lam * (a + 1))
    tol = cov_tol(3, N)
    for s in (eff, naive):
        assert mean_ok(s, mean, cov)
        assert whitened_error(np.cov(s.T), cov) < tol
    # the two forms against each other (difference of two sample means / covariances)
    assert np.all(np.abs(eff.mean(0) - naive.mean(0)) < 5 * np.sqrt(2 * np.diag(cov) / N))
    assert whitened_error(np.cov(eff.T), np.cov(naive.T)) < 2 * tol
    # and the full law of a score: two-sample KS on x^T theta for two arms
    for k in (0, 2):
        assert stats.ks_2samp(eff @ X6[k], naive @ X6[k]).pvalue > 1e-3
    # negative control: a naive form with G missing the (a + 1) factor is far off
    wrong = naive / (a + 1)
    assert not mean_ok(wrong, mean, cov)


@pytest.mark.parametrize("a", [0.5, 1.5])
def test_linphe_non_integer_a_uses_ceil(a):
    reg = 1e-4
    _, eff = _linphe_thetas(a, reg, "absolute")
    N = len(eff)
    ceil_counts = np.ceil(a * PULLS)
    mean, cov = _phe_moments(ceil_counts, reg)
    assert mean_ok(eff, mean, cov)
    assert whitened_error(np.cov(eff.T), cov) < cov_tol(3, N)
    # negative control: Binomial(a T_k, 1/2) moments without the ceiling are rejected
    m2, c2 = _phe_moments(a * PULLS, reg)
    assert not (mean_ok(eff, m2, c2) and whitened_error(np.cov(eff.T), c2) < cov_tol(3, N))


def test_linphe_selects_argmax_of_its_theta():
    setting, obs = fixed_design(X6, 3)
    agent = AGENTS["linphe"](setting, [0, 1, 2], 100, a=1.0)
    feed(agent, obs, HIST_ARMS, HIST_R)
    thetas = []
    real = agent.greedy
    agent.greedy = lambda th, obs: thetas.append(th) or real(th, obs)
    arms = agent.select(len(HIST_ARMS) + 1, obs)
    expect = np.argmax(thetas[0] @ X6.T + agent.jitter, axis=1)
    assert np.array_equal(arms, expect)


# --------------------------------------------------------------------------------------
# 5. Prop. 2: ES(m = T, round robin) == generalised LinPHE, pathwise


@pytest.mark.parametrize("perturbation", ["gaussian", "rademacher", "uniform"])
def test_prop2_coupled_es_phe(perturbation):
    # the recorded ensemble runs the library's own update (it only observes the perturbation draws)
    assert coupling._RecordingES.update is EnsembleSampling.update
    T = 300
    df = pd.DataFrame(coupling.coupled_es_phe(seeds=[0, 1, 2], env={"name": "sphere_gaussian", "d": 5, "n_arms": 20},
                                                 horizon=T, perturbation=perturbation))
    assert list(df["seed"]) == [0, 1, 2] and np.all(df["t"] == T)
    ok = (df["first_mismatch"] == T + 1) | df["near_tie"]
    assert ok.all(), df
    same = df["first_mismatch"] == T + 1
    np.testing.assert_allclose(df.loc[same, "regret_es"], df.loc[same, "regret_phe"], rtol=1e-12)
    assert np.all(df["regret_es"] > 0)


def test_prop2_through_the_runner():
    """The experiment cell form (as the workflow writes it) runs through runner.simulate."""
    cell = {"experiment": {"name": "coupled_es_phe", "env": {"name": "phe_linear", "d": 4, "n_arms": 15},
                           "horizon": 150, "perturbation": "binomial", "scale": 0.5}}
    df = runner.simulate(cell, [3, 4])
    assert list(df["seed"]) == [3, 4]
    assert np.all((df["first_mismatch"] == 151) | df["near_tie"])


# --------------------------------------------------------------------------------------
# 6. Gaussian generalised LinPHE == LinTS


LAM, S = 1.0, 0.5


def _ridge(lam):
    V = lam * np.eye(3) + (X6.T * PULLS) @ X6
    Vi = np.linalg.inv(V)
    return Vi @ X6.T @ VSUM, Vi


@pytest.mark.parametrize("spec", [
    {"name": "glinphe", "lam": LAM, "scale": S, "init": "gaussian"},
    {"name": "glinphe", "lam": LAM, "scale": S, "init": "sphere"},
    {"name": "glinphe", "lam": LAM, "scale": S, "init": "gaussian", "perturbation": "rademacher"},
    {"name": "glinphe", "lam": LAM, "scale": S, "init": "gaussian", "perturbation": "uniform"},
    {"name": "lints", "prior_var": S ** 2 / LAM, "noise_sd": S},
])
def test_gaussian_glinphe_has_lints_moments(spec):
    """theta-tilde has mean V^{-1} b and covariance s^2 V^{-1} (any P_R with variance s^2, P_I with cov lam s^2 I)."""
    B = 4000
    setting, obs = fixed_design(X6, B)
    spec = dict(spec)
    agent = AGENTS[spec.pop("name")](setting, list(range(B)), 100, **spec)
    feed(agent, obs, HIST_ARMS, HIST_R)
    th = sample_thetas(agent, obs, len(HIST_ARMS) + 1, 5)
    N = len(th)
    mean, Vi = _ridge(LAM)
    cov = S ** 2 * Vi
    assert mean_ok(th, mean, cov)
    assert whitened_error(np.cov(th.T), cov) < cov_tol(3, N)
    rel = np.linalg.norm(np.cov(th.T) - cov) / np.linalg.norm(cov)
    assert rel < 0.05
    if spec.get("perturbation", "gaussian") == "gaussian" and spec.get("init", "gaussian") == "gaussian":
        # exactly Gaussian: the whitened draws are N(0, I)
        w, U = np.linalg.eigh(cov)
        white = (th - mean) @ U @ np.diag(w ** -0.5)
        for j in range(3):
            assert stats.kstest(white[:, j], "norm").pvalue > 1e-3


def test_glinphe_without_initial_perturbation_is_not_lints():
    """Negative control: P_I = 0 gives covariance s^2 V^{-1}(V - lam I)V^{-1}, which the check rejects."""
    B = 4000
    setting, obs = fixed_design(X6, B)
    agent = AGENTS["glinphe"](setting, list(range(B)), 100, lam=LAM, scale=S, init="none")
    feed(agent, obs, HIST_ARMS, HIST_R)
    th = sample_thetas(agent, obs, len(HIST_ARMS) + 1, 5)
    mean, Vi = _ridge(LAM)
    assert whitened_error(np.cov(th.T), S ** 2 * Vi) > cov_tol(3, len(th))
    V = np.linalg.inv(Vi)
    assert whitened_error(np.cov(th.T), S ** 2 * Vi @ (V - LAM * np.eye(3)) @ Vi) < cov_tol(3, len(th))


def test_glinphe_gaussian_vs_lints_final_regret():
    """Sanity check only (not a proof of equality): the final-regret distributions of Gaussian
    generalised LinPHE and LinTS (prior_var = s^2/lam, noise_sd = s) are not distinguishable
    by a Mann-Whitney test over 60 seeds (p > 0.001)."""
    seeds = list(range(60))
    env = {"name": "sphere_gaussian", "d": 5, "n_arms": 20, "noise_sd": S}
    T = 200
    a = final_per_seed(runner.simulate({"env": env, "agent": {"name": "glinphe", "lam": LAM, "scale": S,
                                                            "init": "gaussian"}, "horizon": T}, seeds))
    b = final_per_seed(runner.simulate({"env": env, "agent": {"name": "lints", "prior_var": S ** 2 / LAM,
                                                            "noise_sd": S}, "horizon": T}, seeds))
    p = stats.mannwhitneyu(a["regret"], b["regret"]).pvalue
    assert p > 1e-3, (a["regret"].mean(), b["regret"].mean())
    # the test has power: an over-exploring LinPHE (s = 3 instead of 0.5) is told apart
    c = final_per_seed(runner.simulate({"env": env, "agent": {"name": "glinphe", "lam": LAM, "scale": 3.0,
                                                            "init": "gaussian"}, "horizon": T}, seeds))
    assert stats.mannwhitneyu(a["regret"], c["regret"]).pvalue < 1e-6
    # and both learn: regret well below that of uniform play
    env_ = runner.make_env(env, seeds)
    uniform = T * (env_.best - env_.means.mean(axis=1))
    assert a["regret"].mean() < 0.5 * uniform.mean() and b["regret"].mean() < 0.5 * uniform.mean()


# --------------------------------------------------------------------------------------
# 7. Ensemble++ with large M tracks the TS covariance


def _run_epp(M, seeds, T=200, reference="gaussian"):
    env = runner.make_env({"name": "russo_finite", "d": 5, "n_arms": 100}, seeds)
    agent = EnsemblePlusPlus(env.setting, seeds, T, M=M, reference=reference, perturbation="sphere")
    run_history(agent, env, T)
    return agent


def _whitened_eigs(A, Sigma):
    w, U = np.linalg.eigh(Sigma)
    Sih = U @ np.diag(w ** -0.5) @ U.T
    return np.linalg.eigvalsh(Sih @ A @ A.T @ Sih)


def test_ensemble_pp_large_M_tracks_posterior_covariance():
    M, seeds = 2000, [0, 1]
    agent = _run_epp(M, seeds)
    Sigma, A, mu = agent.ridge.Vinv, agent.factor, agent.ridge.mean()
    for b in range(len(seeds)):
        ev = _whitened_eigs(A[b], Sigma[b])
        assert ev.min() >= 0.5 and ev.max() <= 1.5                  # Lemma 4.2's band
        assert np.abs(ev - 1).max() < 0.25                          # about 2 sqrt(d/M) = 0.1 expected
    # sample covariance of mu + A zeta, zeta ~ N(0, I_M) from the agent's own reference stream
    n = 6000
    th = np.stack([agent.theta(dist.reference("gaussian", agent.zeta, M)) for _ in range(n)], axis=1)
    for b in range(len(seeds)):
        C = np.cov(th[b].T)
        assert mean_ok(th[b], mu[b], Sigma[b])
        assert whitened_error(C, A[b] @ A[b].T) < cov_tol(5, n)      # Monte-Carlo error only
        assert whitened_error(C, Sigma[b]) < 0.25 + cov_tol(5, n)     # + the ensemble approximation
        assert np.linalg.norm(C - Sigma[b]) / np.linalg.norm(Sigma[b]) < 0.2


def test_ensemble_pp_small_M_does_not_track():
    """Negative control: M = 2 < d gives a rank-2 A A^T, far outside the band."""
    agent = _run_epp(2, [0], T=50)
    ev = _whitened_eigs(agent.factor[0], agent.ridge.Vinv[0])
    assert ev.min() < 0.5
