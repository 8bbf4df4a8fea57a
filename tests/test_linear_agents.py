"""Agents, environments and the runner: the round protocol, batch/split invariance, common random
numbers, incremental algebra against direct solves, environment sanity, and clear input errors."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import final_per_seed, run_history
from ensemble_bandits import runner
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.agents.linear import EnsemblePlusPlus, EnsembleSampling, sherman_morrison
from ensemble_bandits.distributions import VECTOR_FAMILIES
from ensemble_bandits.envs import ENVIRONMENTS

ENVS = {
    "phe_linear": {"name": "phe_linear", "d": 4, "n_arms": 12},
    "russo_finite": {"name": "russo_finite", "d": 4, "n_arms": 30},
    "compact_sphere": {"name": "compact_sphere", "d": 4},
}
FINITE_AGENTS = {
    "lints": {"name": "lints"},
    "lints_numpy": {"name": "lints", "sampler": "numpy"},
    "linphe": {"name": "linphe", "a": 0.5},
    "glinphe": {"name": "glinphe"},
    "glinphe_rad": {"name": "glinphe", "perturbation": "rademacher", "init": "sphere"},
    "glinphe_unif": {"name": "glinphe", "perturbation": "uniform", "basis_init": True},
    "es_uniform": {"name": "ensemble_sampling", "m": 5},
    "es_binomial": {"name": "ensemble_sampling", "m": 4, "perturbation": "binomial", "binomial_n": 3,
                    "selection": "round_robin", "init": "sphere"},
    "epp_coordinate": {"name": "ensemble_pp", "M": 6, "reference": "coordinate"},
    "epp_sparse": {"name": "ensemble_pp", "M": 6, "reference": "sparse", "perturbation": "cube"},
    "egreedy": {"name": "egreedy"},
    "linucb": {"name": "linucb"},
}
SPHERE_AGENTS = ["lints", "es_uniform", "epp_coordinate", "epp_sparse"]
CASES = [(e, a) for e in ("phe_linear", "russo_finite") for a in FINITE_AGENTS] + \
        [("compact_sphere", a) for a in SPHERE_AGENTS]
SEEDS = list(range(6))
T = 40


def _cell(env, agent, horizon=T):
    return {"env": dict(ENVS[env]), "agent": dict(FINITE_AGENTS[agent]), "horizon": horizon}


def _trajectory(cell, seeds):
    """Play the protocol round by round; returns (actions (T, B, ...), env, agent)."""
    env = runner.make_env(cell["env"], seeds)
    agent = runner.make_agent(cell["agent"], env.setting, seeds, cell["horizon"])
    acts = [np.array(rnd.arms, copy=True) for rnd in runner.play(env, agent, cell["horizon"])]
    return np.stack(acts), env, agent


# --------------------------------------------------------------------------------------
# the round protocol


@pytest.mark.parametrize("env_name", list(ENVS))
def test_fixed_arm_set_observes_one_object(env_name):
    """A fixed arm set shows the same Observation every round (no copy; features_t computed once)."""
    env = runner.make_env(ENVS[env_name], [0, 1])
    agent = runner.make_agent({"name": "lints"}, env.setting, [0, 1], 15)
    first = env.observe(1)
    assert all(rnd.obs is first for rnd in runner.play(env, agent, 15))
    if env_name == "compact_sphere":
        assert first.compact and first.features is None
    else:
        assert not first.compact and first.features is env.features
        assert first.features_t.flags.c_contiguous
        np.testing.assert_array_equal(first.features_t, env.features.transpose(0, 2, 1))


def test_run_history_and_the_runner_use_play(monkeypatch):
    """The round loop is written once: run_history and the runner's batches go through runner.play."""
    calls = []
    real = runner.play

    def spy(env, agent, horizon, start=1):
        calls.append((env, agent, horizon))
        return real(env, agent, horizon, start)

    monkeypatch.setattr(runner, "play", spy)
    env = runner.make_env(ENVS["russo_finite"], [0])
    agent = runner.make_agent({"name": "lints"}, env.setting, [0], 5)
    X, _ = run_history(agent, env, 5)
    assert calls == [(env, agent, 5)] and X.shape == (1, 5, env.d)
    runner.simulate(_cell("russo_finite", "lints", horizon=5), [0])
    assert len(calls) == 2 and calls[1][2] == 5


# --------------------------------------------------------------------------------------
# batch / split invariance


@pytest.mark.parametrize("env,agent", CASES)
def test_simulate_is_batch_and_split_invariant(env, agent):
    cell = _cell(env, agent)
    full = runner.simulate(cell, SEEDS)
    assert list(full.columns[:3]) == ["seed", "t", "regret"]
    assert np.all(np.isfinite(full["regret"]))
    split = runner.simulate(cell, SEEDS, max_batch=2)
    assert np.array_equal(full["regret"].to_numpy(), split["regret"].to_numpy())
    assert np.array_equal(full["seed"].to_numpy(), split["seed"].to_numpy())
    alone = runner.simulate(cell, SEEDS, unbatched=True)
    assert np.array_equal(full["regret"].to_numpy(), alone["regret"].to_numpy())
    # a different batch composition and order
    other = runner.simulate(cell, [5, 2, 0], max_batch=3)
    for s in (5, 2, 0):
        assert np.array_equal(other.loc[other.seed == s, "regret"].to_numpy(),
                              full.loc[full.seed == s, "regret"].to_numpy())
    # seeds really differ
    fin = final_per_seed(full)["regret"].to_numpy()
    assert len(np.unique(fin)) >= 3


@pytest.mark.parametrize("env,agent", [("russo_finite", a) for a in FINITE_AGENTS] +
                         [("compact_sphere", a) for a in SPHERE_AGENTS])
def test_action_sequences_are_batch_invariant(env, agent):
    """Stronger than the regret table: every action of every round, and the final state."""
    cell = _cell(env, agent, horizon=25)
    acts, _, ag = _trajectory(cell, SEEDS)
    for i, s in enumerate(SEEDS):
        a1, _, ag1 = _trajectory(cell, [s])
        assert np.array_equal(a1[:, 0], acts[:, i])
        for attr in ("ridge", "Ginv"):
            if hasattr(ag, attr):
                if attr == "ridge":
                    assert np.array_equal(ag1.ridge.Vinv[0], ag.ridge.Vinv[i])
                    assert np.array_equal(ag1.ridge.b[0], ag.ridge.b[i])
                else:
                    assert np.array_equal(ag1.Ginv[0], ag.Ginv[i])


def test_common_random_numbers_across_agents():
    """Two agents on one seed see the same instance and the same reward noise."""
    spec = ENVS["russo_finite"]
    envs, noise = [], []
    for name in ("lints", "linucb", "ensemble_pp"):
        env = runner.make_env(spec, [3, 4])
        agent = runner.make_agent({"name": name}, env, [3, 4], 30)
        draws = []
        take = env._noise.take
        env._noise.take = lambda n, take=take, draws=draws: draws.append(take(n).copy()) or draws[-1]
        run_history(agent, env, 30)
        envs.append(env)
        noise.append(np.concatenate(draws, axis=1))
    for env, nz in zip(envs[1:], noise[1:]):
        assert np.array_equal(env.features, envs[0].features)
        assert np.array_equal(env.theta, envs[0].theta)
        assert np.array_equal(nz, noise[0])
    # and the instance of a seed does not depend on its batch
    env1 = runner.make_env(spec, [4])
    assert np.array_equal(env1.features[0], envs[0].features[1])
    assert np.array_equal(env1.theta[0], envs[0].theta[1])
    # different seeds: different instances
    assert not np.array_equal(envs[0].theta[0], envs[0].theta[1])


def test_agents_use_their_own_streams():
    """Same seed, different agents: different draws (namespaced streams)."""
    env = runner.make_env(ENVS["russo_finite"], [0])
    a = runner.make_agent({"name": "lints"}, env, [0], 10)
    b = runner.make_agent({"name": "ensemble_pp", "reference": "gaussian"}, env, [0], 10)
    assert not np.array_equal(a.z.take(4), b.zeta.take(4))
    assert not np.array_equal(a.jitter, b.jitter)


def test_simulate_output_layout():
    cell = _cell("russo_finite", "lints", horizon=50)
    df = runner.simulate(cell, [1, 2], max_batch=1)
    cps = runner.checkpoints(50)
    assert cps[0] == 1 and cps[-1] == 50 and np.all(np.diff(cps) > 0)
    assert len(df) == 2 * len(cps)
    for s in (1, 2):
        sub = df[df.seed == s]
        assert np.array_equal(sub["t"].to_numpy(), cps)
        assert np.all(np.diff(sub["regret"].to_numpy()) >= -1e-12)   # cumulative pseudo-regret
    assert np.all(df["seconds"] > 0)
    # diagnostics columns come through the table too
    cell = {"env": ENVS["russo_finite"], "agent": {"name": "ensemble_sampling", "m": 4, "diagnostics": True,
                                                   "beta": 0.5}, "horizon": 20}
    df = runner.simulate(cell, [0, 1])
    assert {"optfrac", "lemma2frac"} <= set(df.columns)
    assert df["optfrac"].between(0, 1).all()


# --------------------------------------------------------------------------------------
# exact algebra


def test_sherman_morrison_matches_inverse():
    rng = np.random.default_rng(0)
    B, d = 5, 6
    L = rng.standard_normal((B, d, d))
    V = L @ L.transpose(0, 2, 1) + np.eye(d)
    inv = np.linalg.inv(V)
    for w in (1.0, 2.5, rng.uniform(0.1, 3.0, B)):
        x = rng.standard_normal((B, d))
        sherman_morrison(inv, x, w)
        V = V + np.asarray(w).reshape(-1, 1, 1) * x[:, :, None] * x[:, None, :]
        direct = np.linalg.inv(V)
        assert np.linalg.norm(inv - direct) / np.linalg.norm(direct) < 1e-10


_history = run_history


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("name,kw,lam", [
    ("lints", {"prior_var": 2.0, "noise_sd": 0.5}, 0.125),
    ("lints", {"prior_var": 2.0, "noise_sd": 0.5, "sampler": "cholesky"}, 0.125),
    ("lints", {"prior_var": 2.0, "noise_sd": 0.5, "sampler": "numpy"}, 0.125),
    ("egreedy", {"lam": 0.3}, 0.3),
    ("glinphe", {"lam": 2.0}, 2.0),
    ("ensemble_sampling", {"lam": 1.5}, 1.5),
])
def test_ridge_statistics_match_direct_solve(name, kw, lam):
    env = runner.make_env(ENVS["russo_finite"], [0, 1, 2])
    agent = runner.make_agent({"name": name, **kw}, env, [0, 1, 2], 150)
    X, Y = _history(agent, env, 150)
    stats = agent if name == "lints" else agent.ridge      # LinTS keeps a square-root factor instead
    for b in range(3):
        V = lam * np.eye(env.d) + X[b].T @ X[b]
        assert _rel(stats.Vinv[b], np.linalg.inv(V)) < 1e-9
        np.testing.assert_allclose(stats.b[b], X[b].T @ Y[b], rtol=1e-10, atol=1e-10)
        assert _rel(stats.mean()[b], np.linalg.solve(V, X[b].T @ Y[b])) < 1e-9


def test_lints_numpy_sampler_is_numpys_multivariate_normal_at_the_posterior():
    """LinTS with ``sampler: numpy`` draws, in the round after a T-round history, what numpy's
    ``multivariate_normal`` draws from the seed's own generator (after its T earlier draws) at the
    posterior computed by a direct solve: mean V^{-1} X^T y, covariance noise_sd^2 V^{-1}."""
    from ensemble_bandits.rng import generator

    seeds, T, prior_var, noise_sd = [3, 8], 40, 2.0, 0.5
    env = runner.make_env(ENVS["russo_finite"], seeds)
    agent = runner.make_agent({"name": "lints", "prior_var": prior_var, "noise_sd": noise_sd, "sampler": "numpy"},
                              env, seeds, T + 1)
    X, Y = _history(agent, env, T)
    theta = agent.propose(T + 1, env.observe(T + 1))
    d = env.d
    for b, seed in enumerate(seeds):
        V = noise_sd ** 2 / prior_var * np.eye(d) + X[b].T @ X[b]
        g = generator(seed, "agent/lints/sample_mvn")
        for _ in range(T):                     # the earlier rounds' draws, each of d normals
            g.multivariate_normal(np.zeros(d), np.eye(d))
        expect = g.multivariate_normal(np.linalg.solve(V, X[b].T @ Y[b]), noise_sd ** 2 * np.linalg.inv(V))
        np.testing.assert_allclose(theta[b], expect, rtol=1e-8, atol=1e-10)
    assert agent.streams.taken() == d * (T + 1)


def test_linucb_gram_scale_and_width():
    env = runner.make_env(ENVS["russo_finite"], [0, 1])
    g, lam = 4.0, 0.5
    agent = runner.make_agent({"name": "linucb", "lam": lam, "gram_scale": g}, env, [0, 1], 80)
    X, Y = _history(agent, env, 80)
    for b in range(2):
        V = lam * np.eye(env.d) + g * X[b].T @ X[b]
        assert _rel(agent.ridge.Vinv[b], np.linalg.inv(V)) < 1e-9
        assert _rel(agent.ridge.mean()[b], np.linalg.solve(V, g * X[b].T @ Y[b])) < 1e-9
    # OFUL radius, and the constant/fixed variants
    d, R, S = env.d, 0.5, 1.0
    expect = R * np.sqrt(d * np.log((1 + 10 / lam) / (1 / 80))) + np.sqrt(lam) * S
    assert abs(agent.width(10) - expect) < 1e-12
    fixed = runner.make_agent({"name": "linucb", "lam": lam, "fixed_width": True}, env, [0, 1], 80)
    assert fixed.width(3) == fixed.width(80) == agent.width(80)
    const = runner.make_agent({"name": "linucb", "beta": "constant", "alpha": 0.7}, env, [0, 1], 80)
    assert const.width(5) == 0.7


def test_linucb_selects_the_ucb_argmax():
    env = runner.make_env(ENVS["russo_finite"], [0])
    agent = runner.make_agent({"name": "linucb"}, env, [0], 60)
    _history(agent, env, 30)
    Xf = env.features[0]
    Vinv, mu = agent.ridge.Vinv[0], agent.ridge.mean()[0]
    ucb = Xf @ mu + agent.width(31) * np.sqrt(np.einsum("kd,de,ke->k", Xf, Vinv, Xf))
    assert agent.select(31, env.observe(31))[0] == np.argmax(ucb)


@pytest.mark.parametrize("a,reg_scale", [(1.0, "absolute"), (2.0, "times_a_plus_1"), (0.5, "absolute"),
                                         (1.3, "times_a_plus_1"), (0.25, "absolute")])
def test_linphe_gram_matches_direct_inverse(a, reg_scale):
    env = runner.make_env(ENVS["phe_linear"], [0, 1, 2])
    lam = 0.5
    agent = runner.make_agent({"name": "linphe", "a": a, "lam": lam, "reg_scale": reg_scale}, env, [0, 1, 2], 120)
    X, Y = _history(agent, env, 120)
    reg = lam * (a + 1) if reg_scale == "times_a_plus_1" else lam
    for b in range(3):
        T_k = agent.pulls[b]
        assert T_k.sum() == 120
        w = T_k + np.ceil(a * T_k - 1e-9)
        F = env.features[b]
        G = (F.T * w) @ F + reg * np.eye(env.d)
        assert _rel(agent.Ginv[b], np.linalg.inv(G)) < 1e-8
        # per-arm sufficient statistics agree with the history
        np.testing.assert_allclose(agent.reward_sum[b] @ F, X[b].T @ Y[b], atol=1e-9)
        if float(a).is_integer() and reg_scale == "times_a_plus_1":
            # eq. (2): G = (a + 1)(sum X X^T + lam I)
            G2 = (a + 1) * (X[b].T @ X[b] + lam * np.eye(env.d))
            assert _rel(agent.Ginv[b], np.linalg.inv(G2)) < 1e-8


def test_linphe_pulls_basis_arms_first():
    env = runner.make_env(ENVS["phe_linear"], [0, 1])
    for name in ("linphe", "glinphe"):
        kw = {"basis_init": True} if name == "glinphe" else {}
        agent = runner.make_agent({"name": name, **kw}, env, [0, 1], 20)
        for rnd in runner.play(env, agent, env.d):
            assert np.all(rnd.arms == env.K - rnd.t)
        assert np.all(agent.pulls[:, env.K - env.d:] == 1)
    # without basis_init glinphe does not force
    agent = runner.make_agent({"name": "glinphe"}, env, [0, 1], 20)
    assert agent.n_init == 0


def test_ensemble_sampling_models_match_definition():
    """S_j = W_j + sum_i X_i (Y_i + Z_i^j); the selected model is V^{-1} S_{j_t}."""

    env = runner.make_env(ENVS["russo_finite"], [0, 1])
    ag = EnsembleSampling(env.setting, [0, 1], 60, m=7, lam=2.0, perturbation="uniform", scale=0.3)
    ag.Zs = []
    draw = ag.pert.draw
    ag.pert.draw = lambda *a: ag.Zs.append(draw(*a)) or ag.Zs[-1]          # record every Z drawn
    W = ag.S.copy()
    assert W.shape == (2, 7, env.d)
    # initial perturbation W_j: default Gaussian with per-coordinate std init_scale = sqrt(lam) * scale
    from ensemble_bandits.rng import BlockStream
    raw = BlockStream([0, 1], "agent/ensemble_sampling/initial_perturbation", "normal").take(7 * env.d)
    np.testing.assert_allclose(W, np.sqrt(2.0) * 0.3 * raw.reshape(2, 7, env.d), rtol=1e-14)
    X, Y = _history(ag, env, 60)
    Z = np.stack(ag.Zs, axis=1)                                     # (B, T, m)
    for b in range(2):
        S = W[b] + ((Y[b][:, None] + Z[b]).T @ X[b])
        np.testing.assert_allclose(ag.S[b], S, rtol=1e-10, atol=1e-10)
    # selection uses V^{-1} S_j: check one round with round robin on a fresh agent
    rr = EnsembleSampling(env.setting, [0, 1], 60, m=3, selection="round_robin")
    for t in (1, 2, 3, 4):
        j = (t - 1) % 3
        theta = np.einsum("bde,be->bd", rr.ridge.Vinv, rr.S[:, j])
        expect = np.argmax(np.einsum("bkd,bd->bk", env.features, theta) + rr.jitter, 1)
        assert np.array_equal(rr.select(t, env.observe(t)), expect)


def test_ensemble_sampling_m_equal_T_and_uniform_member():
    env = runner.make_env(ENVS["russo_finite"], list(range(100)))
    ag = EnsembleSampling(env.setting, list(range(100)), 30, m="T")
    assert ag.m == 30 and ag.S.shape == (100, 30, env.d)
    j = np.concatenate([ag.member(t) for t in range(1, 31)])
    assert j.min() >= 0 and j.max() < 30
    counts = np.bincount(j, minlength=30)
    from scipy import stats
    assert stats.chisquare(counts).pvalue > 1e-3


# --------------------------------------------------------------------------------------
# environments


def test_phe_linear_instance():
    d, K = 6, 40
    env = ENVIRONMENTS["phe_linear"](list(range(20)), d=d, n_arms=K)
    X = env.features
    assert X.shape == (20, K, d)
    assert np.all((env.means >= 0) & (env.means <= 1))
    np.testing.assert_allclose(X[:, :, -1], 1.0)
    np.testing.assert_allclose(np.linalg.norm(X[:, :, :-1], axis=2), 1.0)
    np.testing.assert_allclose(env.theta[:, -1], 0.5)
    np.testing.assert_allclose(np.linalg.norm(env.theta[:, :-1], axis=1), 0.5)
    for b in range(20):
        assert np.linalg.matrix_rank(X[b, K - d:]) == d            # the last d arms form a basis
        assert np.linalg.cond(X[b, K - d:]) < 1e6
    np.testing.assert_allclose(env.means, np.einsum("bkd,bd->bk", X, env.theta))
    np.testing.assert_allclose(env.best, env.means.max(axis=1))
    np.testing.assert_allclose(env.x_star, X[np.arange(20), env.means.argmax(1)])
    # Bernoulli rewards with the right means, and pseudo-regret = best - mean
    arms = np.tile(np.arange(K), 1)[:20]
    tot = np.zeros(20)
    for _ in range(4000):
        r, reg = env.step(arms)
        assert set(np.unique(r)) <= {0.0, 1.0}
        tot += r
    mu = env.means[np.arange(20), arms]
    assert np.all(np.abs(tot / 4000 - mu) < 5 * np.sqrt(mu * (1 - mu) / 4000) + 1e-9)
    np.testing.assert_allclose(reg, env.best - mu)


def test_phe_linear_coordinate_basis():
    d, K = 5, 20
    env = ENVIRONMENTS["phe_linear"]([0, 1], d=d, n_arms=K, basis="coordinate")
    expect = np.eye(d)
    expect[:d - 1, d - 1] = 1.0                                       # e_i + e_d, ..., e_d
    for b in range(2):
        np.testing.assert_array_equal(env.features[b, K - d:], expect)
        np.testing.assert_allclose(env.features[b, :K - d, -1], 1.0)
    assert np.all((env.means >= 0) & (env.means <= 1))
    rnd = ENVIRONMENTS["phe_linear"]([0, 1], d=d, n_arms=K)
    np.testing.assert_array_equal(rnd.theta, env.theta)                # same draw, different basis arms
    np.testing.assert_array_equal(rnd.features[:, :K - d], env.features[:, :K - d])


def test_russo_finite_instance():
    env = ENVIRONMENTS["russo_finite"](list(range(10)), d=8, n_arms=500)
    u = 1 / np.sqrt(5)
    assert np.abs(env.features).max() <= u
    assert np.abs(env.features).max() > 0.95 * u                       # fills the range
    assert abs(env.features.mean()) < 0.01
    assert abs(env.theta.var() - 10.0) < 5.0                           # N(0, 10 I), 80 draws
    env2 = ENVIRONMENTS["russo_finite"]([0], d=8, n_arms=500, feature_range=0.1, prior_var=1.0)
    assert np.abs(env2.features).max() <= 0.1
    r, reg = env.step(env.best_arm)
    np.testing.assert_allclose(reg, 0.0)


def test_sphere_gaussian_instance():
    env = ENVIRONMENTS["sphere_gaussian"]([0, 1, 2], d=5, n_arms=20)
    np.testing.assert_allclose(np.linalg.norm(env.features, axis=2), 1.0)
    np.testing.assert_allclose(np.linalg.norm(env.theta, axis=1), 1.0)
    assert env.noise_sd == 0.5


def test_compact_sphere_regret_nonnegative():
    env = ENVIRONMENTS["compact_sphere"](list(range(8)), d=6)
    rng = np.random.default_rng(0)
    for _ in range(50):
        x = rng.standard_normal((8, 6))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        _, reg = env.step(x)
        assert np.all(reg >= -1e-12)
    _, reg = env.step(env.x_star)
    np.testing.assert_allclose(reg, 0.0, atol=1e-12)
    np.testing.assert_allclose(env.best, np.linalg.norm(env.theta, axis=1))


def test_environment_noise_is_common_and_batch_invariant():
    e1 = ENVIRONMENTS["russo_finite"]([0, 1, 2], d=3, n_arms=5)
    e2 = ENVIRONMENTS["russo_finite"]([2], d=3, n_arms=5)
    for _ in range(20):
        r1, _ = e1.step(np.array([0, 1, 4]))
        r2, _ = e2.step(np.array([4]))
        assert r1[2] == r2[0]


# --------------------------------------------------------------------------------------
# bad input


def test_unknown_names_list_known_ones():
    from ensemble_bandits.envs import ENVIRONMENTS

    known = ", ".join(sorted(ENVIRONMENTS))
    assert "phe_linear, " in known and "sphere_contexts, sphere_gaussian" in known
    with pytest.raises(ValueError, match=f"unknown environment 'nope'; known environments: {known}$"):
        runner.make_env({"name": "nope"}, [0])
    env = runner.make_env({"name": "russo_finite", "d": 3, "n_arms": 5}, [0])
    with pytest.raises(ValueError, match="unknown agent 'ts'; known agents: .*linphe, lints"):
        runner.make_agent({"name": "ts"}, env, [0], 10)
    with pytest.raises(ValueError, match="unknown agent None"):
        runner.make_agent({}, env, [0], 10)
    with pytest.raises(ValueError, match="unknown experiment 'x'; known experiments: coupled_es_phe"):
        runner.simulate({"experiment": {"name": "x"}}, [0])
    with pytest.raises(ValueError, match="unknown distribution 'bogus'; known: gaussian, sphere"):
        runner.make_agent({"name": "ensemble_pp", "reference": "bogus"}, env, [0], 10)
    with pytest.raises(ValueError, match="unknown distribution 'bogus'; known: gaussian, sphere"):
        runner.make_agent({"name": "ensemble_pp", "perturbation": "bogus"}, env, [0], 10)
    with pytest.raises(ValueError, match="unknown distribution 'laplace'; known: gaussian, rademacher"):
        runner.make_agent({"name": "ensemble_sampling", "perturbation": "laplace"}, env, [0], 10)
    with pytest.raises(ValueError, match="unknown distribution 'cube'; known: gaussian, sphere, none"):
        runner.make_agent({"name": "glinphe", "init": "cube"}, env, [0], 10)


def test_unknown_hyperparameters_name_the_key():
    env = runner.make_env({"name": "russo_finite", "d": 3, "n_arms": 5}, [0])
    with pytest.raises(ValueError, match=r"agent 'lints': unknown hyper-parameter\(s\) \['prior_sd'\]; allowed: "
                                         r"\['prior_var', 'noise_sd', 'sampler'\]"):
        runner.make_agent({"name": "lints", "prior_sd": 1.0}, env, [0], 10)
    with pytest.raises(ValueError, match=r"environment 'russo_finite': unknown hyper-parameter\(s\) \['K'\]"):
        runner.make_env({"name": "russo_finite", "K": 4}, [0])
    with pytest.raises(ValueError, match=r"unknown hyper-parameter\(s\) \['horizon_'\]; allowed: \['env', 'horizon', 'lam'"):
        runner.simulate({"experiment": {"name": "coupled_es_phe", "env": {}, "horizon_": 3}}, [0])


@pytest.mark.parametrize("spec,match", [
    ({"name": "linphe", "a": 0.0}, "a > 0"),
    ({"name": "linphe", "reg_scale": "relative"}, "reg_scale"),
    ({"name": "linucb", "beta": "ts"}, "beta must be"),
    ({"name": "egreedy", "schedule": "exp"}, "schedule must be"),
    ({"name": "ensemble_sampling", "selection": "greedy"}, "selection must be"),
    ({"name": "ensemble_pp", "init": "zeros"}, "init must be"),
    ({"name": "glinphe", "perturbation": "binomial", "binomial_n": 0}, "n >= 1"),
])
def test_bad_hyperparameter_values(spec, match):
    env = runner.make_env({"name": "russo_finite", "d": 3, "n_arms": 5}, [0])
    with pytest.raises(ValueError, match=match):
        runner.make_agent(spec, env, [0], 10)


@pytest.mark.parametrize("name", ["linucb", "linphe", "glinphe", "egreedy"])
def test_finite_only_agents_reject_the_sphere(name):
    env = runner.make_env({"name": "compact_sphere", "d": 3}, [0])
    with pytest.raises(ValueError, match="finite arm set"):
        runner.make_agent({"name": name}, env, [0], 10)


def test_bad_environment_values():
    with pytest.raises(ValueError, match="basis must be"):
        runner.make_env({"name": "phe_linear", "basis": "identity"}, [0])
    with pytest.raises(ValueError, match="d >= 2"):
        runner.make_env({"name": "phe_linear", "d": 1}, [0])


def test_registry_is_complete():
    assert set(AGENTS) >= {"lints", "linucb", "egreedy", "linphe", "glinphe", "ensemble_sampling", "ensemble_pp"}
    assert AGENTS["ensemble_pp"] is EnsemblePlusPlus


def test_sphere_action_is_a_uniform_direction_where_theta_is_zero():
    """Coordinate reference x coordinate perturbation with M >> d leaves A with zero columns, so
    theta = 0 happens; the action must still be a unit vector (no NaN regret)."""
    cell = {"env": {"name": "compact_sphere", "d": 4},
            "agent": {"name": "ensemble_pp", "M": 256, "reference": "coordinate", "perturbation": "coordinate"},
            "horizon": 60}
    df = runner.simulate(cell, range(4))
    assert np.isfinite(df["regret"]).all() and (df["regret"] >= -1e-9).all()


# -- Ensemble++'s fast paths: the same numbers, bit for bit, as the naive forms --------------------

def _draws(family, B, M, seed):
    from ensemble_bandits import distributions as dist
    from ensemble_bandits.rng import Streams
    return dist.perturbation(family, Streams(range(seed, seed + B), "t")("z", dist.vector_kind(family)), M)


@pytest.mark.parametrize("family", VECTOR_FAMILIES)
@pytest.mark.parametrize("B,d,M", [(7, 5, 1), (7, 5, 6), (5, 50, 1024), (3, 100, 512)])
@pytest.mark.parametrize("chunk_bytes", [2 ** 20, 1])
def test_add_outer_matches_the_broadcast_update_bit_for_bit(family, B, d, M, chunk_bytes, monkeypatch):
    """Each path (sparse columns where the family has few non-zeros, else one broadcast or seed
    chunks) gives the broadcast update's numbers, and the fused P zeta is the product after it."""
    from ensemble_bandits import distributions as dist
    from ensemble_bandits.agents import linear
    monkeypatch.setattr(linear, "OUTER_CHUNK_BYTES", chunk_bytes)       # 1: one seed per chunk
    rng = np.random.default_rng(1)
    P = rng.standard_normal((B, d, M))
    P[:, :, ::3] = 0.0                                  # +0 entries (Coordinate / Sparse initial factors)
    naive = P.copy()
    for step in range(4):
        x = rng.standard_normal((B, d))
        z = _draws(family, B, M, 10 * step)
        zeta = _draws("gaussian", B, M, 10 * step + 5)
        naive += x[:, :, None] * z[:, None, :]
        Pz = linear.add_outer(P, x, z, family in dist.SPARSE_FAMILIES, zeta)
        assert P.tobytes() == naive.tobytes()           # sign of zero included
        assert Pz.tobytes() == linear.bmv(naive, zeta).tobytes()
        assert linear.add_outer(P.copy(), x, z, False) is None


@pytest.mark.parametrize("family", VECTOR_FAMILIES)
@pytest.mark.parametrize("M", [1, 2, 7, 1024])
def test_factor_times_matches_the_batched_product_bit_for_bit(family, M):
    from ensemble_bandits.agents.linear import bmv, factor_times
    from ensemble_bandits import distributions as dist
    from ensemble_bandits.rng import Streams
    B, d = 9, 50
    P = np.random.default_rng(3).standard_normal((B, d, M))
    zeta = dist.reference(family, Streams(range(B), "t")("zeta", dist.vector_kind(family)), M)
    assert factor_times(P, zeta, family == "coordinate").tobytes() == bmv(P, zeta).tobytes()


@pytest.mark.parametrize("s", [1, 2, 3])
@pytest.mark.parametrize("M", [3, 8, 1024])
def test_smallest_keys_is_argpartition(s, M):
    from ensemble_bandits.distributions import smallest_keys
    keys = np.random.default_rng(4).random((200, M))
    np.testing.assert_array_equal(smallest_keys(keys, s), np.argpartition(keys, s - 1, axis=1)[:, :s])


class NaiveEnsemblePlusPlus(EnsemblePlusPlus):
    """Ensemble++ in its plain form: theta = Sigma (p + P zeta) with zeta drawn in the round,
    P += x z^T / noise as one broadcast update (no fast path, nothing drawn ahead)."""

    def propose(self, t, obs):
        from ensemble_bandits import distributions as dist
        from ensemble_bandits.agents.linear import bmv
        zeta = dist.reference(self.ref, self.zeta, self.M)
        return bmv(self.ridge.Vinv, self.ridge.b + bmv(self.P, zeta))

    def update(self, t, obs, arms, r):
        from ensemble_bandits import distributions as dist
        x = obs.chosen(arms) / self.noise_sd
        self.ridge.add(x, np.asarray(r) / self.noise_sd)
        self.P += x[:, :, None] * dist.perturbation(self.pert_name, self.z, self.M)[:, None, :]


@pytest.mark.parametrize("reference", VECTOR_FAMILIES)
@pytest.mark.parametrize("perturbation", VECTOR_FAMILIES)
@pytest.mark.parametrize("env_spec,M", [({"name": "russo_finite", "d": 6, "n_arms": 40}, 5),
                                        ({"name": "russo_finite", "d": 50, "n_arms": 200}, 1024),
                                        ({"name": "compact_sphere", "d": 50}, 512)])
def test_ensemble_pp_is_its_plain_form_bit_for_bit(reference, perturbation, env_spec, M):
    """The fast paths (sparse columns, chunked updates fused with the next round's P zeta) change no
    number: the same pulls and rewards as the plain form, several seed chunks included."""
    seeds, T = list(range(5)), 12
    runs = []
    for cls in (EnsemblePlusPlus, NaiveEnsemblePlusPlus):
        env = runner.make_env(env_spec, seeds)
        agent = cls(env.setting, seeds, T, M=M, reference=reference, perturbation=perturbation)
        runs.append(run_history(agent, env, T))
    assert runs[0][0].tobytes() == runs[1][0].tobytes() and runs[0][1].tobytes() == runs[1][1].tobytes()
