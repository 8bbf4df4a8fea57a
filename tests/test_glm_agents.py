"""Logistic environments, the batched logistic fit and the MLE-based GLM agents.

The fit's per-arm sufficient statistics against naive sums over past rounds; Newton against scipy's
minimiser; gradient descent against a plain loop; every agent against a naive per-seed reference of
its definition (same random draws, same arms, same theta); the environments against a naive loop;
batch-split invariance; agents built from static facts only."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy.special import expit

from ensemble_bandits import cells, runner
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.agents import glm_fit
from ensemble_bandits.agents.glm_fit import ArmData, Design, History
from ensemble_bandits.agents.linear import TIEBREAK
from ensemble_bandits.envs import ENVIRONMENTS
from ensemble_bandits.envs.base import Environment
from ensemble_bandits.protocol import Observation, play
from ensemble_bandits.rng import BlockStream, _popcount_segments, generator, words_for
from helpers import reachable

SEEDS = list(range(6))
GLM_AGENTS = ["logphe", "logts", "glm_ucb", "ucb_glm", "log_egreedy", "glm_tsl", "glm_fpl"]
CONTEXT_AGENTS = [a for a in GLM_AGENTS if a != "logphe"]
PHE = {"name": "phe_logistic", "d": 4, "n_arms": 10}
SPHERE = {"name": "sphere_logistic", "d": 4, "n_arms": 10}
CONTEXTS = {"name": "sphere_contexts", "d": 3, "n_arms": 6}


# --------------------------------------------------------------------------------------
# naive forms: sums over the list of past rounds


def naive_objective(X, y, w, reg, theta):
    """sum_l w_l [b(x_l^T theta) - y_l x_l^T theta] + (reg/2)|theta|^2, with its gradient and Hessian."""
    z = X @ theta
    p = expit(z)
    f = np.sum(w * (np.logaddexp(0.0, z) - y * z)) + 0.5 * reg * theta @ theta
    g = X.T @ (w * (p - y)) + reg * theta
    H = (X.T * (w * p * (1 - p))) @ X + reg * np.eye(len(theta))
    return f, g, H


def naive_newton(X, y, w, reg, d):
    """The exact minimiser by plain Newton steps from 0 over the rows of the history."""
    theta = np.zeros(d)
    for _ in range(200):
        _, g, H = naive_objective(np.asarray(X).reshape(-1, d), np.asarray(y, float), np.asarray(w, float), reg,
                                  theta)
        step = np.linalg.solve(H, g)
        theta = theta - step
        if np.linalg.norm(step) < 1e-14:
            break
    return theta


def scipy_minimiser(fun, jac, hess, d):
    """scipy's trust-region minimiser, polished by its root finder on the gradient (trust-exact alone
    may stop at |grad| ~ 1e-7)."""
    x = optimize.minimize(fun, np.zeros(d), jac=jac, hess=hess, method="trust-exact", options={"gtol": 1e-12}).x
    res = optimize.root(jac, x, jac=hess, method="hybr", options={"xtol": 1e-15})
    assert np.abs(jac(res.x)).max() < 1e-10
    return res.x


def scipy_fit(X, y, w, reg, d):
    return scipy_minimiser(lambda th: naive_objective(X, y, w, reg, th)[0],
                           lambda th: naive_objective(X, y, w, reg, th)[1],
                           lambda th: naive_objective(X, y, w, reg, th)[2], d)


def random_history(rng, B, K, d, T, rewards="bernoulli"):
    """Arm features (B, K, d), and a history of T pulls per seed: arms (B, T), rewards (B, T)."""
    feats = rng.standard_normal((B, K, d)) / math.sqrt(d)
    arms = rng.integers(0, K, (B, T))
    if rewards == "bernoulli":
        r = (rng.random((B, T)) < 0.4).astype(float)
    else:
        r = 0.5 + rng.standard_normal((B, T))            # outside [0, 1], as in the GLM-ES environment
    return feats, arms, r


def arm_data(feats, arms, r):
    B, K, d = feats.shape
    data, obs = ArmData(B, K, d), Observation.of(feats)
    for t in range(arms.shape[1]):
        data.add(obs, arms[:, t], r[:, t])
    return data, obs


def _rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


# --------------------------------------------------------------------------------------
# the fit


@pytest.mark.parametrize("rewards", ["bernoulli", "gaussian"])
def test_sufficient_statistics_match_naive_sums(rewards):
    """Objective, gradient and Hessian from per-arm counts and reward sums equal the sums over rounds."""
    rng = np.random.default_rng(1)
    B, K, d, T, M = 3, 7, 4, 60, 5
    feats, arms, r = random_history(rng, B, K, d, T, rewards)
    data, obs = arm_data(feats, arms, r)
    design, c = data.design(obs), data.linear_term(obs)
    theta = rng.standard_normal((B, d))
    reg = 0.7
    f, g, H = (glm_fit.objective(design, c, reg, theta), glm_fit.gradient(design, c, reg, theta),
               glm_fit.hessian(design, reg, theta))
    for b in range(B):
        X = feats[b, arms[b]]
        nf, ng, nH = naive_objective(X, r[b], np.ones(T), reg, theta[b])
        assert abs(f[b] - nf) <= 1e-10 * abs(nf)
        assert _rel(g[b], ng) < 1e-10 and _rel(H[b], nH) < 1e-10
        np.testing.assert_allclose(data.gram[b], X.T @ X, rtol=1e-12)
    # members: one linear term each (perturbed targets per round, grouped by arm), one design
    Z = rng.standard_normal((B, M, T))
    extra = np.zeros((B, M, K))
    for b in range(B):
        for t in range(T):
            extra[b, :, arms[b, t]] += Z[b, :, t]
    cm = data.linear_term(obs, extra)
    thm = rng.standard_normal((B, M, d))
    fm, gm, Hm = (glm_fit.objective(design, cm, reg, thm), glm_fit.gradient(design, cm, reg, thm),
                  glm_fit.hessian(design, reg, thm))
    assert fm.shape == (B, M) and gm.shape == (B, M, d) and Hm.shape == (B, M, d, d)
    for b in range(B):
        for m in range(M):
            nf, ng, nH = naive_objective(feats[b, arms[b]], r[b] + Z[b, m], np.ones(T), reg, thm[b, m])
            assert abs(fm[b, m] - nf) <= 1e-10 * abs(nf)
            assert _rel(gm[b, m], ng) < 1e-10 and _rel(Hm[b, m], nH) < 1e-10


def test_history_design_matches_naive_sums():
    rng = np.random.default_rng(2)
    B, K, d, T = 2, 5, 3, 300                       # more rounds than the first storage block
    feats, arms, r = random_history(rng, B, K, d, T, "gaussian")
    hist = History(B, T, d)
    for t in range(T):
        ctx = rng.standard_normal((B, K, d))          # a new arm set every round
        hist.add(Observation.of(ctx), arms[:, t], r[:, t])
        feats_t = ctx[np.arange(B), arms[:, t]]
        if t == 0:
            X = feats_t[:, None]
        else:
            X = np.concatenate([X, feats_t[:, None]], axis=1)
    theta = rng.standard_normal((B, d))
    design, c = hist.design(), hist.linear_term()
    g, H = glm_fit.gradient(design, c, 1.0, theta), glm_fit.hessian(design, 1.0, theta)
    for b in range(B):
        _, ng, nH = naive_objective(X[b], r[b], np.ones(T), 1.0, theta[b])
        assert _rel(g[b], ng) < 1e-10 and _rel(H[b], nH) < 1e-10
        np.testing.assert_allclose(hist.gram[b], X[b].T @ X[b], rtol=1e-12)
    with pytest.raises(ValueError, match="per-arm statistics"):
        hist.design(extra_pulls=np.ones((B, T)))


@pytest.mark.parametrize("case", ["bernoulli", "gaussian", "pseudo", "far_start", "members"])
def test_newton_matches_scipy(case):
    """The Newton fit is the exact minimiser (scipy's trust-region solver on the naive sums) to 1e-8."""
    rng = np.random.default_rng(3)
    B, K, d, T, M = 3, 8, 4, 80, 3
    feats, arms, r = random_history(rng, B, K, d, T, "gaussian" if case == "gaussian" else "bernoulli")
    data, obs = arm_data(feats, arms, r)
    reg = 2.0
    extra_n = extra_s = None
    if case == "pseudo":                           # LogPHE-style pseudo-observations
        extra_n = np.ceil(0.5 * data.pulls).astype(np.int64)
        extra_s = rng.binomial(extra_n, 0.5).astype(float)
    design = data.design(obs, extra_n)
    c = data.linear_term(obs, extra_s)
    theta0 = np.full((B, d), 20.0) if case == "far_start" else np.zeros((B, d))
    if case == "members":
        c = c[:, None, :] + rng.standard_normal((B, M, d))
        theta0 = np.zeros((B, M, d))
    theta, steps = glm_fit.newton(design, c, reg, theta0, tol=1e-10)
    assert steps.shape == theta0.shape[:-1] and steps.max() < glm_fit.NEWTON_MAX_ITER
    for b in range(B):
        for m in range(M if case == "members" else 1):
            # naive: the K arms as rows, weights = counts; the linear term folded into y
            X, w = feats[b], design.n[b]
            cb = c[b, m] if case == "members" else c[b]
            ref = scipy_minimiser(
                lambda th: (np.sum(w * np.logaddexp(0, X @ th)) - cb @ th + 0.5 * reg * th @ th),
                lambda th: X.T @ (w * expit(X @ th)) - cb + reg * th,
                lambda th: (X.T * (w * expit(X @ th) * (1 - expit(X @ th)))) @ X + reg * np.eye(d), d)
            got = theta[b, m] if case == "members" else theta[b]
            assert np.max(np.abs(got - ref)) < 1e-8, (b, m, got, ref)


def test_newton_fit_of_a_history_equals_the_naive_fit():
    """Per-arm fit == fit of the raw history == scipy on the list of past rounds."""
    rng = np.random.default_rng(4)
    B, K, d, T = 2, 6, 3, 40
    feats, arms, r = random_history(rng, B, K, d, T)
    data, obs = arm_data(feats, arms, r)
    hist = History(B, T, d)
    for t in range(T):
        hist.add(obs, arms[:, t], r[:, t])
    per_arm = glm_fit.newton(data.design(obs), data.linear_term(obs), 1.0, np.zeros((B, d)), tol=1e-10)[0]
    raw = glm_fit.newton(hist.design(), hist.linear_term(), 1.0, np.zeros((B, d)), tol=1e-10)[0]
    for b in range(B):
        ref = scipy_fit(feats[b, arms[b]], r[b], np.ones(T), 1.0, d)
        assert np.max(np.abs(per_arm[b] - ref)) < 1e-8 and np.max(np.abs(raw[b] - ref)) < 1e-8


def test_newton_is_batch_invariant():
    """A seed's fit, iterations included, does not depend on the seeds it is batched with."""
    rng = np.random.default_rng(5)
    B, K, d, T = 5, 6, 3, 50
    feats, arms, r = random_history(rng, B, K, d, T)
    data, obs = arm_data(feats, arms, r)
    theta0 = rng.standard_normal((B, d)) * np.array([0.0, 0.1, 3.0, 10.0, 0.01])[:, None]   # uneven work
    whole, steps = glm_fit.newton(data.design(obs), data.linear_term(obs), 1.0, theta0)
    assert len(set(steps.tolist())) > 1
    for b in range(B):
        one = Design(feats[b:b + 1], data.design(obs).n[b:b + 1])
        alone, s1 = glm_fit.newton(one, data.linear_term(obs)[b:b + 1], 1.0, theta0[b:b + 1])
        assert np.array_equal(alone[0], whole[b]) and s1[0] == steps[b]


def test_gradient_descent_matches_a_plain_loop():
    rng = np.random.default_rng(6)
    B, K, d, T = 3, 6, 3, 70
    feats, arms, r = random_history(rng, B, K, d, T, "gaussian")
    data, obs = arm_data(feats, arms, r)
    theta0 = rng.standard_normal((B, d)) * 0.1
    for solver in ("sum_safe", "sum_raw", "mean"):
        got = glm_fit.solve(data.design(obs), data.linear_term(obs), 1.0, theta0, solver, steps=25, lr=0.01)
        for b in range(B):
            X, y = feats[b, arms[b]], r[b]
            top = np.linalg.eigvalsh(X.T @ X)[-1]
            lr = {"sum_safe": min(0.01, 1 / (0.25 * top + 1.0)), "sum_raw": 0.01, "mean": 0.01 / T}[solver]
            th = theta0[b].copy()
            for _ in range(25):
                th = th - lr * naive_objective(X, y, np.ones(T), 1.0, th)[1]
            assert _rel(got[b], th) < 1e-12, solver
    # the gram passed in equals the design's own
    np.testing.assert_allclose(data.design(obs).gram(), data.gram, rtol=1e-12)
    with pytest.raises(ValueError, match="solver must be one of newton, sum_safe, sum_raw, mean"):
        glm_fit.solve(data.design(obs), data.linear_term(obs), 1.0, theta0, "lbfgs")
    with pytest.raises(ValueError, match="lam > 0"):
        glm_fit.newton(data.design(obs), data.linear_term(obs), 0.0, theta0)


# --------------------------------------------------------------------------------------
# environments


def _play_arms(env, rounds, seeds):
    arms = np.random.default_rng(9).integers(0, env.K, (rounds, 64))[:, seeds]
    out = [env.step(a) for a in arms]
    return arms, np.array([o[0] for o in out]), np.array([o[1] for o in out])


def test_phe_logistic_matches_a_naive_loop():
    d, K, T = 5, 30, 40
    env = ENVIRONMENTS["phe_logistic"](SEEDS, d=d, n_arms=K)
    lin = ENVIRONMENTS["phe_linear"](SEEDS, d=d, n_arms=K)
    np.testing.assert_array_equal(env.features, lin.features)                 # the same arms
    np.testing.assert_allclose(env.theta[:, :-1], 3.0 * lin.theta[:, :-1])    # direction of v, radius 1.5
    np.testing.assert_array_equal(env.theta[:, -1], 0.0)
    np.testing.assert_allclose(np.linalg.norm(env.theta, axis=1), 1.5)
    scores = np.einsum("bkd,bd->bk", env.features, env.theta)
    assert np.abs(scores).max() <= 1.5 + 1e-12
    np.testing.assert_allclose(env.means, 1 / (1 + np.exp(-scores)), rtol=1e-14)
    np.testing.assert_array_equal(env.best_arm, scores.argmax(axis=1))
    arms, rewards, regret = _play_arms(env, T, SEEDS)
    for b, seed in enumerate(SEEDS):
        u = generator(seed, "env/noise").random(T)                            # the linear env's coupling
        for t in range(T):
            mean = 1 / (1 + math.exp(-scores[b, arms[t, b]]))
            assert rewards[t, b] == float(u[t] < mean)
            assert regret[t, b] == pytest.approx(1 / (1 + math.exp(-scores[b].max())) - mean, abs=1e-15)
    assert np.all(regret >= 0)
    coord = ENVIRONMENTS["phe_logistic"]([0], d=d, n_arms=K, basis="coordinate")
    np.testing.assert_array_equal(coord.features[0, K - 1], np.eye(d)[-1])
    assert coord.means[0, K - 1] == 0.5                                       # e_d scores 0: mean exactly 1/2


def test_sphere_logistic_matches_a_naive_loop():
    d, K, T = 4, 12, 30
    env = ENVIRONMENTS["sphere_logistic"](SEEDS, d=d, n_arms=K)
    lin = ENVIRONMENTS["sphere_gaussian"](SEEDS, d=d, n_arms=K)
    np.testing.assert_array_equal(env.features, lin.features)
    np.testing.assert_array_equal(env.theta, lin.theta)
    assert env.action_space == "finite" and env.noise_sd == 0.5
    default = ENVIRONMENTS["sphere_logistic"]([0])
    assert (default.d, default.K) == (20, 50)
    arms, rewards, regret = _play_arms(env, T, SEEDS)
    for b, seed in enumerate(SEEDS):
        x = env.features[b]
        theta = env.theta[b]
        noise = generator(seed, "env/noise").standard_normal(T)
        for t in range(T):
            mean = 1 / (1 + math.exp(-(x[arms[t, b]] @ theta)))
            assert rewards[t, b] == pytest.approx(mean + 0.5 * noise[t], abs=1e-14)
            assert regret[t, b] == pytest.approx(np.max(1 / (1 + np.exp(-(x @ theta)))) - mean, abs=1e-15)
    assert rewards.min() < 0 or rewards.max() > 1                             # Gaussian noise, not Bernoulli


def test_logistic_environments_do_not_depend_on_the_batch():
    for spec in (PHE, SPHERE):
        whole = _play_arms(runner.make_env(spec, SEEDS), 25, SEEDS)
        parts = [_play_arms(runner.make_env(spec, s), 25, s) for s in (SEEDS[:2], SEEDS[2:])]
        for a, b in zip(whole[1:], (np.concatenate(p, axis=1) for p in list(zip(*parts))[1:])):
            np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------------------
# agents against naive per-seed references


class Record:
    """A batched run: per round the arm set shown, the arms, the rewards and an agent attribute."""

    def __init__(self, agent_spec, env_spec, seeds, T, attr):
        self.env = runner.make_env(env_spec, seeds)
        self.agent = runner.make_agent(agent_spec, self.env.setting, seeds, T)
        rows = [(rnd.obs.features.copy(), rnd.arms.copy(), np.array(rnd.rewards), getattr(self.agent, attr).copy())
                for rnd in play(self.env, self.agent, T)]
        self.features, self.arms, self.rewards, self.state = (np.array(z) for z in zip(*rows))
        self.seeds, self.T = list(seeds), T


def replay(rec, b, choose):
    """Seed b's naive run: ``choose(t, X, hist_x, hist_y)`` -> (arm, state to compare) every round,
    from the list of past rounds; the recorded arm and state must agree."""
    hist_x, hist_y = [], []
    for t in range(1, rec.T + 1):
        X = rec.features[t - 1, b]
        arm, state = choose(t, X, np.array(hist_x).reshape(-1, X.shape[1]), np.array(hist_y))
        assert arm == rec.arms[t - 1, b], (t, arm, rec.arms[t - 1, b])
        if state is not None:
            assert np.max(np.abs(state - rec.state[t - 1, b])) < 1e-8, (t, state, rec.state[t - 1, b])
        hist_x.append(X[arm])
        hist_y.append(rec.rewards[t - 1, b])


def jitter(seed, name, K):
    return TIEBREAK * generator(seed, f"agent/{name}/tiebreak").random(K)


def stream(seed, name, sub, kind):
    return BlockStream([seed], f"agent/{name}/{sub}", kind)


def ucb_norms(X, hx, lam):
    Vinv = np.linalg.inv(lam * np.eye(X.shape[1]) + hx.T @ hx)
    return np.sqrt(np.einsum("kd,de,ke->k", X, Vinv, X))


@pytest.mark.parametrize("env_spec", [PHE, SPHERE, CONTEXTS], ids=["phe", "sphere", "contexts"])
def test_ucb_glm_matches_reference(env_spec):
    T, lam = 30, 1.0
    rec = Record({"name": "ucb_glm"}, env_spec, SEEDS[:3], T, "theta")
    d = rec.env.d
    alpha = 0.5 / 0.25 * math.sqrt(d / 2 * math.log(1 + 2 * T / d) + math.log(T))
    assert rec.agent.alpha == pytest.approx(alpha, rel=1e-14)
    for b, seed in enumerate(rec.seeds):
        jit = jitter(seed, "ucb_glm", rec.env.K)

        def choose(t, X, hx, hy):
            theta = naive_newton(hx, hy, np.ones(len(hy)), 2 * lam, d)              # lam |theta|^2
            arm = int(np.argmax(X @ theta + alpha * ucb_norms(X, hx, lam) + jit))
            theta_after = naive_newton(np.vstack([hx, X[arm]]), np.append(hy, rec.rewards[t - 1, b]),
                                       np.ones(len(hy) + 1), 2 * lam, d)
            return arm, theta_after
        replay(rec, b, choose)


@pytest.mark.parametrize("env_spec", [PHE, CONTEXTS], ids=["phe", "contexts"])
def test_glm_ucb_matches_reference(env_spec):
    T, lam = 30, 1.0
    rec = Record({"name": "glm_ucb"}, env_spec, SEEDS[:3], T, "theta")
    d = rec.env.d
    for b, seed in enumerate(rec.seeds):
        jit = jitter(seed, "glm_ucb", rec.env.K)

        def choose(t, X, hx, hy):
            theta = naive_newton(hx, hy, np.ones(len(hy)), 2 * lam, d)
            L = np.linalg.norm(X, axis=1).max()
            kappa = math.sqrt(3 + 2 * math.log(1 + 2 * L ** 2 / lam))
            rho = 2 * 0.25 * kappa / 0.25 * math.sqrt(2 * d * math.log(t) * math.log(2 * d * T * T))
            arm = int(np.argmax(expit(X @ theta) + rho * ucb_norms(X, hx, lam) + jit))
            return arm, None
        replay(rec, b, choose)
    # the lineage code's width: rho at t = n every round
    fixed = runner.make_agent({"name": "glm_ucb", "fixed_width": True}, rec.env.setting, [0], T)
    assert fixed.rho(2, 1.0) == fixed.rho(T, 1.0) == rec.agent.rho(T, 1.0)
    assert rec.agent.rho(1, 1.0) == 0.0


@pytest.mark.parametrize("name,env_spec", [("logts", PHE), ("logts", CONTEXTS), ("glm_tsl", SPHERE),
                                           ("glm_tsl", CONTEXTS)])
def test_laplace_ts_matches_reference(name, env_spec):
    """theta ~ N(theta_hat, a^2 H^{-1}) with H = sum mu'(x^T theta_hat) x x^T + lam I: LogTS with the
    exact MAP, GLM-TSL with 100 GD steps a round warm-started (the naive loop repeats them)."""
    T, lam, a = 25, 1.0, 1.5
    rec = Record({"name": name, "a": a}, env_spec, SEEDS[:3], T, "sample")
    d = rec.env.d
    for b, seed in enumerate(rec.seeds):
        jit, z = jitter(seed, name, rec.env.K), stream(seed, name, "sample", "normal")
        state = {"theta": np.zeros(d)}

        def fit(hx, hy):
            if name == "logts":
                return naive_newton(hx, hy, np.ones(len(hy)), lam, d)
            th = state["theta"]
            lr = min(0.01, 1 / (0.25 * np.linalg.eigvalsh(hx.T @ hx)[-1] + lam))
            for _ in range(100):
                th = th - lr * naive_objective(hx, hy, np.ones(len(hy)), lam, th)[1]
            return th

        def choose(t, X, hx, hy):
            theta = state["theta"]
            _, _, H = naive_objective(hx, hy, np.ones(len(hy)), lam, theta)
            sample = theta + a * np.linalg.solve(np.linalg.cholesky(H).T, z.take(d)[0])
            arm = int(np.argmax(X @ sample + jit))
            state["theta"] = fit(np.vstack([hx, X[arm]]), np.append(hy, rec.rewards[t - 1, b]))
            return arm, sample
        replay(rec, b, choose)


@pytest.mark.parametrize("env_spec", [PHE, CONTEXTS], ids=["phe", "contexts"])
def test_log_egreedy_matches_reference(env_spec):
    T, lam = 40, 1.0
    rec = Record({"name": "log_egreedy", "rate": 0.3}, env_spec, SEEDS[:3], T, "theta")
    d, K = rec.env.d, rec.env.K
    explored = 0
    for b, seed in enumerate(rec.seeds):
        jit, u = jitter(seed, "log_egreedy", K), stream(seed, "log_egreedy", "explore", "uniform")

        def choose(t, X, hx, hy):
            nonlocal explored
            theta = naive_newton(hx, hy, np.ones(len(hy)), 2 * lam, d)
            draw = u.take(2)[0]
            eps = min(1.0, 0.3 * math.sqrt(T) / (2 * math.sqrt(t)))
            explored += draw[0] < eps
            arm = min(int(draw[1] * K), K - 1) if draw[0] < eps else int(np.argmax(X @ theta + jit))
            return arm, None
        replay(rec, b, choose)
    assert 0 < explored < 3 * T


@pytest.mark.parametrize("env_spec,solver,per_datum", [(PHE, "sum_safe", False), (SPHERE, "newton", False),
                                                       (CONTEXTS, "sum_safe", False), (CONTEXTS, "newton", False),
                                                       (SPHERE, "sum_safe", True), (PHE, "newton", True)])
def test_glm_fpl_matches_reference(env_spec, solver, per_datum):
    """Fresh perturbed targets every round: per-arm sums sqrt(n_k) a z_k on a fixed arm set, one
    Z_l per past round on contexts or with ``per_datum``; the perturbed MLE (GD warm-started from the
    last one, or Newton)."""
    T, lam, scale = 25, 1.0, 0.3
    spec = {"name": "glm_fpl", "scale": scale, "solver": solver, **({"per_datum": True} if per_datum else {})}
    rec = Record(spec, env_spec, SEEDS[:3], T, "theta")
    d, K = rec.env.d, rec.env.K
    finite = env_spec is not CONTEXTS and not per_datum
    for b, seed in enumerate(rec.seeds):
        jit, z = jitter(seed, "glm_fpl", K), stream(seed, "glm_fpl", "reward_perturbation", "normal")
        state = {"theta": np.zeros(d), "arms": []}

        def choose(t, X, hx, hy):
            if finite:                             # Z summed per arm: sum_{l: arm k} Z_l = sqrt(n_k) a z_k
                n = np.bincount(np.array(state["arms"], dtype=np.int64), minlength=K)
                xi = scale * np.sqrt(n) * z.take(K)[0] if t > 1 else np.zeros(K)   # nothing drawn before data
                hx2, hy2 = np.vstack([hx, X]), np.append(hy, xi)                # xi as extra targets, weight 0
                w = np.append(np.ones(len(hy)), np.zeros(K))
            else:
                hx2, hy2, w = hx, hy + scale * z.take(t - 1)[0], np.ones(len(hy))
            if solver == "newton":
                theta = naive_newton_weighted(hx2, hy2, w, lam, d)
            else:
                theta = state["theta"]
                lr = min(0.01, 1 / (0.25 * np.linalg.eigvalsh(hx.T @ hx)[-1] + lam)) if len(hy) else 0.01
                for _ in range(100):
                    theta = theta - lr * naive_objective_targets(hx2, hy2, w, lam, theta)
            state["theta"] = theta
            arm = int(np.argmax(X @ theta + jit))
            state["arms"].append(arm)
            return arm, theta
        replay(rec, b, choose)


def naive_objective_targets(X, y, w, reg, theta):
    """Gradient sum_l [w_l mu(x_l^T theta) - y_l] x_l + reg theta: rows with weight 0 add targets only."""
    return X.T @ (w * expit(X @ theta) - y) + reg * theta


def naive_newton_weighted(X, y, w, reg, d):
    theta = np.zeros(d)
    for _ in range(200):
        p = expit(X @ theta)
        g = X.T @ (w * p - y) + reg * theta
        H = (X.T * (w * p * (1 - p))) @ X + reg * np.eye(d)
        step = np.linalg.solve(H, g)
        theta = theta - step
        if np.linalg.norm(step) < 1e-14:
            break
    return theta


def phe_bits(words, counts):
    """The individual fair bits behind binomial_half_fixed: arm k's run of counts[k] bits, in order."""
    bits = ((words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.int64).ravel()
    ends = np.cumsum(counts)
    return [bits[e - c:e] for e, c in zip(ends, counts)]


@pytest.mark.parametrize("a", [1.0, 2.0, 0.5])
def test_logphe_matches_the_papers_objective(a):
    """Rounds 1..d: the basis arms; then theta minimises sum_l [g(X_l theta, Y_l) + sum_j g(X_l theta,
    Z_jl)] + lam |theta|^2, with a fresh fair bit Z_jl per pseudo-observation (ceil(a T_k) per arm)."""
    T, lam = 30, 1.0
    rec = Record({"name": "logphe", "a": a}, PHE, SEEDS[:3], T, "theta")
    d, K = rec.env.d, rec.env.K
    for b, seed in enumerate(rec.seeds):
        jit, bits = jitter(seed, "logphe", K), stream(seed, "logphe", "pseudo_rewards", "bits")
        pulls = np.zeros(K, dtype=np.int64)

        def choose(t, X, hx, hy):
            if t <= d:
                arm, theta = K - t, None
            else:
                counts = np.ceil(a * pulls - 1e-9).astype(np.int64)
                words = bits.take(words_for(math.ceil(a * (t - 1)) + K))[0]
                runs = phe_bits(words, counts)
                px = [X[k] for k in range(K) for _ in runs[k]]
                py = [z for k in range(K) for z in runs[k]]
                rows_x = np.vstack([hx] + ([np.array(px)] if px else []))
                rows_y = np.concatenate([hy, np.array(py, float)])
                theta = naive_newton(rows_x, rows_y, np.ones(len(rows_y)), 2 * lam, d)
                arm = int(np.argmax(X @ theta + jit))
                # the runs' sums are LinPHE's U_k (the library's popcounts of the same words)
                U = _popcount_segments(words[None], np.cumsum(counts)[None])[0]
                assert np.array_equal([r.sum() for r in runs], U)
            pulls[arm] += 1
            return arm, theta
        replay(rec, b, choose)
    assert rec.agent.Ginv is None


def test_warmup_pulls_uniform_random_arms():
    T, tau = 20, 8
    rec = Record({"name": "ucb_glm", "warmup": tau, "alpha": 0.5}, SPHERE, SEEDS[:3], T, "theta")
    for b, seed in enumerate(rec.seeds):
        u = stream(seed, "ucb_glm", "warmup", "uniform").take(tau)[0]
        np.testing.assert_array_equal(rec.arms[:tau, b], np.minimum((u * rec.env.K).astype(int), rec.env.K - 1))
        X = rec.features[tau - 1, b]
        hx = X[rec.arms[:tau, b]]
        ref = naive_newton(hx, rec.rewards[:tau, b], np.ones(tau), 2.0, rec.env.d)
        assert np.max(np.abs(rec.state[tau - 1, b] - ref)) < 1e-8              # fitted during the warm-up too


# --------------------------------------------------------------------------------------
# batch invariance, static facts, errors


def _cases(agents_by_env):
    return [pytest.param(a, spec, id=f"{a}-{spec['name']}") for spec, agents in agents_by_env for a in agents]


@pytest.mark.parametrize("agent,env_spec", _cases([(PHE, GLM_AGENTS), (SPHERE, GLM_AGENTS),
                                                   (CONTEXTS, CONTEXT_AGENTS)]))
def test_runs_are_batch_and_split_invariant(agent, env_spec):
    cell = {"env": env_spec, "agent": {"name": agent}, "horizon": 40}
    whole = runner.simulate_columns(cell, SEEDS)
    assert np.all(np.isfinite(whole["regret"])) and np.all(whole["regret"] >= 0)
    for kw in ({"max_batch": 2}, {"max_batch": 4}):
        split = runner.simulate_columns(cell, SEEDS, **kw)
        for key in ("seed", "t", "regret"):
            np.testing.assert_array_equal(whole[key], split[key])
    other = runner.simulate_columns(cell, [5, 2, 0])
    for s in (5, 2, 0):
        np.testing.assert_array_equal(other["regret"][other["seed"] == s], whole["regret"][whole["seed"] == s])


@pytest.mark.parametrize("agent,env_spec", _cases([(SPHERE, GLM_AGENTS), (CONTEXTS, ["logts", "ucb_glm", "glm_fpl"])]))
def test_estimates_are_batch_invariant(agent, env_spec):
    """Stronger than the regret table: the agent's theta after every round, bit for bit."""
    spec = {"name": agent}
    attr = "sample" if agent in ("logts", "glm_tsl") else "theta"
    whole = Record(spec, env_spec, SEEDS, 30, attr)
    for b, s in enumerate(SEEDS):
        alone = Record(spec, env_spec, [s], 30, attr)
        np.testing.assert_array_equal(alone.arms[:, 0], whole.arms[:, b])
        np.testing.assert_array_equal(alone.state[:, 0], whole.state[:, b])


@pytest.mark.parametrize("env_spec", [PHE, CONTEXTS], ids=["phe", "contexts"])
def test_agents_are_built_from_static_facts_only(env_spec):
    env = runner.make_env(env_spec, [0, 1])
    for name in GLM_AGENTS:
        cls = AGENTS[name]
        if env.action_space not in cls.action_spaces:
            with pytest.raises(ValueError, match="plays a finite arm set only"):
                cls(env.setting, [0, 1], 10)
            continue
        agent = cls(env.setting, [0, 1], 10)
        for _ in play(env, agent, 10):
            pass
        truth = [env.theta, env.best, env.means]
        for value in reachable(agent):
            assert not isinstance(value, Environment), name
            assert not any(value is x for x in truth), name
        with pytest.raises(TypeError, match="built from a Setting"):
            cls(env, [0, 1], 10)


def test_agents_refuse_the_sphere_and_check_cell():
    env = runner.make_env({"name": "compact_sphere", "d": 3}, [0])
    for name in GLM_AGENTS:
        with pytest.raises(ValueError, match="finite arm set"):
            AGENTS[name](env.setting, [0], 10)
    for name in CONTEXT_AGENTS:
        cells.check_cell({"env": CONTEXTS, "agent": {"name": name}, "horizon": 10})
    with pytest.raises(ValueError, match="'logphe' cannot play environment 'sphere_contexts'"):
        cells.check_cell({"env": CONTEXTS, "agent": {"name": "logphe"}, "horizon": 10})
    with pytest.raises(ValueError, match="unknown distribution 'cauchy'"):
        cells.check_cell({"env": SPHERE, "agent": {"name": "glm_fpl", "perturbation": "cauchy"}, "horizon": 10})


@pytest.mark.parametrize("spec,match", [
    ({"name": "logts", "solver": "adam"}, "solver must be one of"),
    ({"name": "ucb_glm", "penalty": "l1"}, "penalty must be"),
    ({"name": "ucb_glm", "alpha": "oful"}, "alpha = .oful. is not allowed: a number or one of theory"),
    ({"name": "glm_ucb", "lam": 0.0}, "lam must be > 0"),
    ({"name": "log_egreedy", "schedule": "exp"}, "schedule must be"),
    ({"name": "glm_tsl", "warmup": -1}, "warmup must be >= 0"),
    ({"name": "logphe", "a": 0.0}, "a > 0"),
    ({"name": "logphe", "penalty": "none"}, "penalty must be"),
])
def test_bad_hyperparameter_values(spec, match):
    env = runner.make_env(PHE, [0])
    with pytest.raises(ValueError, match=match):
        runner.make_agent(spec, env, [0], 10)


def test_defaults_follow_the_specs():
    env = runner.make_env(PHE, [0])
    make = lambda name, **kw: runner.make_agent({"name": name, **kw}, env, [0], 100)   # noqa: E731
    assert make("logphe").fit.reg == 2.0 and make("logphe").fit.solver == "newton" and make("logphe").a == 1.0
    assert make("logts").fit.reg == 1.0 and make("logts").fit.solver == "newton"
    assert make("glm_ucb").fit.reg == 2.0 and make("ucb_glm").fit.reg == 2.0 and make("log_egreedy").fit.reg == 2.0
    for name in ("glm_tsl", "glm_fpl"):
        agent = make(name)
        assert agent.fit.reg == 1.0 and agent.fit.solver == "sum_safe" and agent.fit.steps == 100
        assert agent.fit.lr == 0.01
    assert make("glm_fpl").pert.scale == 0.1 and make("glm_fpl").pert.name == "gaussian"
    assert make("ucb_glm", alpha=1.0).alpha == 1.0
    # GLM-UCB's width at n = 10^4, d = 10, L = sqrt(2): about 300 (phe spec A.2.4)
    big = runner.make_agent({"name": "glm_ucb"}, runner.make_env({"name": "phe_logistic"}, [0]), [0], 10000)
    assert 250 < big.rho(10000, math.sqrt(2)) < 350
