"""GLM-ES (glmes.md §2.1, §2.3): the per-arm form of the loss against the sum over past rounds, the
GD kernel against the generic one and a naive loop, the whole agent against a naive per-seed,
per-model implementation on the same random draws, and its options."""
from __future__ import annotations

import numpy as np
import pytest

from test_design import naive_design, naive_round
from ensemble_bandits import cells, runner
from ensemble_bandits.agents import AGENTS, glm_fit
from ensemble_bandits.agents.glm_es import GLMES, GLMESAnytime, Perturbations
from ensemble_bandits.agents.glm_fit import gradient_descent
from ensemble_bandits.protocol import Observation, Setting
from ensemble_bandits.rng import Streams, generator
from helpers import run_history

ENV = {"name": "sphere_logistic", "d": 4, "n_arms": 12}


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def random_history(seed, B=2, m=3, K=8, d=3, T=30):
    """A fixed arm set, T pulled arms, rewards and member perturbations (per round), as lists."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, K, d)) / np.sqrt(d)
    arms = rng.integers(0, K, (T, B))
    y = rng.uniform(-0.5, 1.5, (T, B))
    Z = 0.3 * rng.standard_normal((T, B, m))
    return X, arms, y, Z


def naive_gradient(theta, xs, ys, zs, lam):
    """lam theta + sum_l (mu(x_l^T theta) - y_l - z_l) x_l over the past rounds of one seed and model."""
    g = lam * theta
    for x, y, z in zip(xs, ys, zs):
        g = g + (sigmoid(x @ theta) - y - z) * x
    return g


def per_arm_state(X, arms, y, Z):
    setting = Setting(B=X.shape[0], d=X.shape[2], K=X.shape[1], action_space="finite")
    obs = Observation.of(X)
    data, perts = glm_fit.data_for(setting, len(arms)), Perturbations(setting, Z.shape[2])
    for a, r, z in zip(arms, y, Z):
        data.add(obs, a, r)
        perts.add(a, z)
    return obs, data, perts


# --------------------------------------------------------------------------------------
# exact algebra: per-arm statistics = the sum over past rounds


def test_per_arm_gradient_equals_the_sum_over_past_rounds():
    X, arms, y, Z = random_history(0)
    obs, data, perts = per_arm_state(X, arms, y, Z)
    B, K, d = X.shape
    m = Z.shape[2]
    assert np.array_equal(data.pulls.sum(axis=1), [len(arms)] * B)
    theta = np.random.default_rng(1).standard_normal((B, m, d))
    c = data.linear_term(obs, perts.extra())
    grad = glm_fit.gradient(data.design(obs), c, 0.7, theta)
    for b in range(B):
        xs = X[b, arms[:, b]]
        for j in range(m):
            ref = naive_gradient(theta[b, j], xs, y[:, b], Z[:, b, j], 0.7)
            np.testing.assert_allclose(grad[b, j], ref, rtol=0, atol=1e-10)
            # the per-member perturbation sums are the sums of that member's draws per arm
            np.testing.assert_allclose(perts.extra()[b, j], np.bincount(arms[:, b], Z[:, b, j], minlength=K),
                                       atol=1e-12)


def test_gd_kernel_equals_generic_gd_and_a_naive_loop():
    """100 GD steps after a few rounds: the regrouped kernel, glm_fit's generic GD and a naive loop
    over seeds, models and past rounds agree to 1e-10; lr 0 leaves a seed unchanged."""
    X, arms, y, Z = random_history(2, T=6)
    obs, data, perts = per_arm_state(X, arms, y, Z)
    B, m, d = X.shape[0], Z.shape[2], X.shape[2]
    theta0 = 0.1 * np.random.default_rng(3).standard_normal((B, m, d))
    design_, c = data.design(obs), data.linear_term(obs, perts.extra())
    lr = np.array([0.01, 0.03])
    fast = gradient_descent(design_, c, 1.0, theta0, 100, lr)
    generic = glm_fit.gradient_descent(design_, c, 1.0, theta0, 100, lr)
    np.testing.assert_allclose(fast, generic, rtol=0, atol=1e-12)
    for b in range(B):
        xs = X[b, arms[:, b]]
        for j in range(m):
            th = theta0[b, j].copy()
            for _ in range(100):
                th = th - lr[b] * naive_gradient(th, xs, y[:, b], Z[:, b, j], 1.0)
            np.testing.assert_allclose(fast[b, j], th, rtol=0, atol=1e-10)
    frozen = gradient_descent(design_, c, 1.0, theta0, 100, np.array([0.0, 0.01]))
    assert np.array_equal(frozen[0], theta0[0])
    big = gradient_descent(design_, 1e3 * c, 1.0, theta0, 5, 1.0)      # exp overflow: mu = 0, finite
    assert np.all(np.isfinite(big))


def test_gd_blocks_of_seeds_change_no_number(monkeypatch):
    """Seeds are run in cache-sized blocks (glm_fit.gd_chunk): any block size gives the same iterates,
    bit for bit, for members (B, m, d) and single models (B, d), with per-seed step sizes."""
    rng = np.random.default_rng(11)
    B, K, d, m = 7, 40, 6, 3
    design_ = glm_fit.Design(rng.standard_normal((B, K, d)) / np.sqrt(d), rng.integers(0, 4, (B, K)).astype(float))
    lr = rng.uniform(0.0, 0.02, B)
    for shape in ((B, m, d), (B, d)):
        theta0, c = 0.1 * rng.standard_normal(shape), rng.standard_normal(shape)
        whole = gradient_descent(design_, c, 1.0, theta0, 30, lr)
        for budget in (1, 3 * 8 * (2 * K * d + m * K + 3 * m * d)):          # one seed per block; three
            monkeypatch.setattr(glm_fit, "GD_CHUNK_BYTES", budget)
            assert glm_fit.gd_chunk(B, m, K, d) in (1, 3)
            assert np.array_equal(gradient_descent(design_, c, 1.0, theta0, 30, lr), whole)
        monkeypatch.undo()
    assert glm_fit.gd_chunk(50, 10, 500, 50) < 50 <= glm_fit.gd_chunk(50, 10, 50, 20)   # big designs are blocked


def test_contexts_history_gradient_equals_the_sum_over_past_rounds():
    """On per-round contexts the fit's rows are the past rounds and each member's perturbation of
    each round is stored."""
    rng = np.random.default_rng(4)
    B, K, d, m, T = 2, 5, 3, 2, 70                       # past the first capacity (64 rounds)
    setting = Setting(B=B, d=d, K=K, action_space="contexts")
    data, perts = glm_fit.data_for(setting, T), Perturbations(setting, m)
    xs, ys, zs = [], [], []
    for _ in range(T):
        obs = Observation.of(rng.standard_normal((B, K, d)))
        a, r, z = rng.integers(0, K, B), rng.standard_normal(B), rng.standard_normal((B, m))
        data.add(obs, a, r)
        perts.add(a, z)
        xs.append(obs.chosen(a))
        ys.append(r)
        zs.append(z)
    xs, ys, zs = np.stack(xs, 1), np.stack(ys, 1), np.stack(zs, 1)
    theta = rng.standard_normal((B, m, d))
    grad = glm_fit.gradient(data.design(), data.linear_term(None, perts.extra()), 1.0, theta)
    for b in range(B):
        for j in range(m):
            ref = naive_gradient(theta[b, j], xs[b], ys[b], zs[b, :, j], 1.0)
            np.testing.assert_allclose(grad[b, j], ref, atol=1e-10)


# --------------------------------------------------------------------------------------
# the whole agent against a naive per-seed, per-model implementation


def naive_glm_es(X, seed, rewards, m, T, warmup, scale=0.1, lam=1.0, steps=100, lr=0.01, ns="agent/glm_es",
                 solver="sum_safe"):
    """GLM-ES for one seed, written plainly: python loops over models, GD on the sum over all past
    rounds; the same streams as the agent (perturbations, model choice, tie-break jitter, warm-up
    order).  ``rewards(t, arm)`` returns the environment's reward.  Returns the arms and thetas."""
    K, d = X.shape
    streams = Streams([seed], ns)
    zs, js = streams("reward_perturbation", "normal"), streams("selection", "uniform")
    jitter = 1e-12 * generator(seed, f"{ns}/tiebreak").random(K)
    W = min(warmup, T)
    plan = []
    if W:
        zeta, _ = naive_design(X)
        plan = generator(seed, f"{ns}/warmup_order").permutation(np.repeat(np.arange(K), naive_round(zeta, W, d)))
    thetas = [np.zeros(d) for _ in range(m)]
    hist_x, hist_y, hist_z, arms = [], [], [[] for _ in range(m)], []
    for t in range(1, T + 1):
        j = min(int(js.take(1)[0, 0] * m), m - 1)
        arm = int(plan[t - 1]) if t <= W else int(np.argmax(X @ thetas[j] + jitter))
        arms.append(arm)
        y = rewards(t, arm)
        z = scale * zs.take(m)[0]
        hist_x.append(X[arm])
        hist_y.append(y)
        for i in range(m):
            hist_z[i].append(z[i])
        gram = sum(np.outer(x, x) for x in hist_x)
        eta = {"sum_raw": lr, "mean": lr / t,
               "sum_safe": min(lr, 1.0 / (0.25 * np.linalg.eigvalsh(gram)[-1] + lam))}[solver]
        for i in range(m):
            th = thetas[i]
            for _ in range(steps):
                th = th - eta * naive_gradient(th, hist_x, hist_y, hist_z[i], lam)
            thetas[i] = th
    return np.array(arms), np.array(thetas)


@pytest.mark.parametrize("warmup,solver,lr", [(20, "sum_safe", 0.01), (0, "sum_safe", 0.01), (12, "sum_safe", 0.3),
                                              (15, "sum_raw", 0.01), (10, "mean", 0.01)])
def test_agent_matches_naive_implementation(warmup, solver, lr):
    """Same draws, same arms every round, same final thetas (batched over 3 seeds vs one by one).
    With lr = 0.3 the safe step min(lr, 1/L_t) binds after a few dozen pulls."""
    seeds, T, m = [0, 1, 2], 45, 3
    env = runner.make_env(ENV, seeds)
    agent = GLMES(env.setting, seeds, T, m=m, warmup=warmup, solver=solver, lr=lr)
    arms, rewards = [], []
    for rnd in runner.play(env, agent, T):
        arms.append(rnd.arms.copy())
        rewards.append(np.asarray(rnd.rewards).copy())
    arms, rewards = np.stack(arms), np.stack(rewards)
    if warmup:
        assert np.array_equal(arms[:warmup].T, agent.plan)
    for b, s in enumerate(seeds):
        ref_arms, ref_theta = naive_glm_es(env.features[b], s, lambda t, a: rewards[t - 1, b], m, T, warmup,
                                           solver=solver, lr=lr)
        assert np.array_equal(ref_arms, arms[:, b]), (b, np.flatnonzero(ref_arms != arms[:, b]))
        np.testing.assert_allclose(agent.theta[b], ref_theta, rtol=0, atol=1e-9)


def test_perturbations_are_drawn_once_per_model_and_round():
    """The perturbation stream advances by exactly m draws per round (never resampled), and the
    per-arm sums are those of these draws."""
    seeds, T, m = [3, 4], 30, 4
    env = runner.make_env(ENV, seeds)
    agent = GLMES(env.setting, seeds, T, m=m, warmup=10, scale=0.2)
    X, _ = run_history(agent, env, T)
    draws = 0.2 * Streams(seeds, "agent/glm_es")("reward_perturbation", "normal").take(T * m + 1)
    assert np.array_equal(agent.z.take(1)[:, 0], draws[:, T * m] / 0.2)      # the next draw: m per round
    Z = draws[:, :T * m].reshape(len(seeds), T, m)
    pulls = agent.data.pulls
    for b in range(len(seeds)):
        arms = np.array([np.flatnonzero(np.all(env.features[b] == x, axis=1))[0] for x in X[b]])
        assert np.array_equal(np.bincount(arms, minlength=env.K), pulls[b])
        for j in range(m):
            np.testing.assert_allclose(agent.perts.extra()[b, j], np.bincount(arms, Z[b, :, j], minlength=env.K),
                                       atol=1e-12)


def assert_batch_invariant(cell, seeds):
    """The same regrets in one batch, split in batches of 2 and seed by seed."""
    full = runner.simulate(cell, seeds)["regret"].to_numpy()
    for kw in ({"max_batch": 2}, {"unbatched": True}):
        assert np.array_equal(full, runner.simulate(cell, seeds, **kw)["regret"].to_numpy()), kw


def test_agent_is_batch_and_split_invariant():
    assert_batch_invariant({"env": dict(ENV), "agent": {"name": "glm_es", "m": 3, "warmup": 10}, "horizon": 30},
                           [0, 1, 2, 3])


# --------------------------------------------------------------------------------------
# warm-up and options


def test_warmup_follows_the_rounded_g_optimal_design():
    seeds, T = [0, 1], 60
    env = runner.make_env({"name": "sphere_logistic", "d": 5, "n_arms": 20}, seeds)
    agent = GLMES(env.setting, seeds, T, m=2, warmup=40)
    arms = np.stack([rnd.arms.copy() for rnd in runner.play(env, agent, T)])
    N = agent.warmup_counts(env.features)
    assert np.all(N.sum(axis=1) == 40)
    for b in range(2):
        assert np.array_equal(np.bincount(arms[:40, b], minlength=20), N[b])
    assert np.array_equal(agent.wlen, [40, 40])
    short = GLMES(env.setting, seeds, 25, warmup=500)                   # the warm-up is min(tau, T)
    assert short.warmup == 25


def test_min_pulls_lengthens_the_warmup():
    env = runner.make_env({"name": "sphere_logistic", "d": 3, "n_arms": 10}, [0, 1])
    agent = GLMES(env.setting, [0, 1], 200, m=2, warmup=40, g_opt_min_pulls=True)
    agent.select(1, env.observe(1))
    assert np.all(agent.wlen >= 40) and np.all(agent.plan.shape[1] == agent.wlen.max())
    counts = np.stack([np.bincount(agent.plan[b, :agent.wlen[b]], minlength=10) for b in range(2)])
    assert np.all(counts >= 1)                                              # ceil(r(0.5)/K) = ceil(14/10)


def _fed(agent, env, T):
    run_history(agent, env, T)
    return agent


def test_newton_gives_each_members_regularised_mle():
    """solver newton: every member's theta is the minimiser of its own perturbed loss."""
    env = runner.make_env(ENV, [0, 1])
    agent = _fed(GLMES(env.setting, [0, 1], 40, m=3, warmup=10, solver="newton", tol=1e-10), env, 40)
    obs = env.observe(1)
    grad = glm_fit.gradient(agent.data.design(obs), agent.data.linear_term(obs, agent.perts.extra()), 1.0,
                            agent.theta)
    assert np.abs(grad).max() < 1e-8
    assert not np.allclose(agent.theta[:, 0], agent.theta[:, 1])          # members differ by their Z


def test_cold_start_and_fit_once():
    """warm_start False: each round's fit starts from 0; warmup_fit once: thetas stay 0 through the
    warm-up and the first fit is GD from 0 on the warm-up data."""
    env = runner.make_env(ENV, [0])
    obs = env.observe(1)
    cold = _fed(GLMES(env.setting, [0], 30, m=2, warmup=10, warm_start=False), env, 30)
    d_, c = cold.data.design(obs), cold.data.linear_term(obs, cold.perts.extra())
    ref = glm_fit.solve(d_, c, 1.0, np.zeros_like(cold.theta), "sum_safe", gram=cold.data.gram)
    np.testing.assert_allclose(cold.theta, ref, atol=1e-14)

    env = runner.make_env(ENV, [0])
    once = GLMES(env.setting, [0], 30, m=2, warmup=10, warmup_fit="once")
    thetas = [once.theta.copy() for _ in runner.play(env, once, 10)]
    assert all(np.all(th == 0.0) for th in thetas[:9]) and np.any(once.theta != 0.0)
    d_, c = once.data.design(obs), once.data.linear_term(obs, once.perts.extra())
    np.testing.assert_allclose(once.theta, gradient_descent(d_, c, 1.0, np.zeros_like(once.theta), 100, 0.01),
                               atol=1e-14)


def test_contexts_play_with_a_random_warmup():
    ctx = {"name": "sphere_contexts", "d": 3, "n_arms": 5}
    cell = {"env": ctx, "agent": {"name": "glm_es", "m": 2, "warmup": 5, "warmup_design": "random"}, "horizon": 20}
    cells.check_cell(cell)
    assert_batch_invariant(cell, [0, 1, 2])
    env = runner.make_env(ctx, [0])
    with pytest.raises(ValueError, match="G-optimal warm-up needs a fixed arm set; .* warmup_design: random"):
        GLMES(env.setting, [0], 20)


def test_bad_options_are_refused():
    setting = Setting(B=1, d=3, K=5)
    for kw, match in [({"solver": "lbfgs"}, "solver must be one of"), ({"warmup_fit": "never"}, "warmup_fit"),
                      ({"warmup_design": "sobol"}, "warmup_design"), ({"g_opt_solver": "x"}, "g_opt_solver"),
                      ({"m": 0}, "m >= 1"), ({"lam": 0.0}, "lam > 0"), ({"warmup": -1}, "warmup must be >= 0"),
                      ({"perturbation": "rademacher", "binomial_n": 3}, "does not apply")]:
        with pytest.raises(ValueError, match=match):
            GLMES(setting, [0], 10, **kw)
    with pytest.raises(ValueError, match="finite arm set or per-round contexts"):
        GLMES(Setting(B=1, d=3, K=0, action_space="sphere"), [0], 10)


def test_registered_with_its_ensemble_size_and_action_spaces():
    assert AGENTS["glm_es"] is GLMES and AGENTS["glm_es_anytime"] is GLMESAnytime
    assert GLMES.ensemble_size({}, 100) == 10 and GLMES.ensemble_size({"m": 50}, 100) == 50
    assert GLMES.action_spaces == ("finite", "contexts") and not GLMES.uses_accelerator
    cell = {"env": {"name": "sphere_logistic"}, "agent": {"name": "glm_es", "m": 5}, "horizon": 10_000}
    cells.check_cell(cell)
    assert cells.cell_dimensions(cell)["members"] == 5
    with pytest.raises(ValueError, match="unknown distribution 'gausian'"):
        cells.check_cell({**cell, "agent": {"name": "glm_es", "perturbation": "gausian"}})
    with pytest.raises(ValueError, match=r"unknown hyper-parameter\(s\) \['gd_steps'\]"):
        cells.check_cell({**cell, "agent": {"name": "glm_es", "gd_steps": 5}})
