"""Environments behind the action-set abstraction: per-round contexts against a naive per-seed
reference (draws, batch-split invariance, regret against the round's best arm), agents playing them,
agents refused on action spaces they cannot play (at construction and in the job-graph check), the
fixed arm set's one Observation, and the lazy catalog."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import timeout_s

from ensemble_bandits import cells, runner
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.agents.linear import LinPHE
from ensemble_bandits.envs import ENVIRONMENTS
from ensemble_bandits.protocol import play
from ensemble_bandits.rng import generator

D, K, T = 3, 5, 30
SEEDS = list(range(6))
CONTEXTS = {"name": "sphere_contexts", "d": D, "n_arms": K}


def unit(a):
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def naive_contexts(seed, rounds, d=D, n_arms=K, noise_sd=0.5):
    """One seed of sphere_contexts drawn the slow way: theta*, the arm set of each round, the noise."""
    theta = unit(generator(seed, "env/instance").standard_normal(d))
    g = generator(seed, "env/contexts")
    X = np.stack([unit(g.standard_normal(n_arms * d).reshape(n_arms, d)) for _ in range(rounds)])
    return theta, X, noise_sd * generator(seed, "env/noise").standard_normal(rounds)


def random_arms(rounds, seeds, n_arms=K):
    """Fixed pulls per (round, seed), whatever the batch: arm of seed s in round t."""
    return np.random.default_rng(7).integers(0, n_arms, (rounds, 64))[:, seeds]


def play_fixed_arms(env, seeds, rounds=T):
    feats, rewards, regret = [], [], []
    for t, arms in enumerate(random_arms(rounds, seeds), start=1):
        feats.append(env.observe(t).features)
        r, reg = env.step(arms)
        rewards.append(r)
        regret.append(reg)
    return np.array(feats), np.array(rewards), np.array(regret)


def test_contexts_match_a_naive_per_seed_loop():
    """Features, theta*, rewards and the regret against the round's best arm, seed by seed."""
    env = runner.make_env(CONTEXTS, SEEDS)
    assert env.setting.action_space == "contexts" and env.setting.K == K
    feats, rewards, regret = play_fixed_arms(env, SEEDS)
    arms = random_arms(T, SEEDS)
    for b, seed in enumerate(SEEDS):
        theta, X, noise = naive_contexts(seed, T)
        np.testing.assert_array_equal(env.theta[b], theta)
        np.testing.assert_array_equal(feats[:, b], X)
        for t in range(T):
            means = X[t] @ theta
            mean = means[arms[t, b]]
            assert regret[t, b] == pytest.approx(means.max() - mean, abs=1e-14)
            assert rewards[t, b] == pytest.approx(mean + noise[t], abs=1e-14)
    assert np.all(regret >= 0) and np.any(regret > 0)
    np.testing.assert_allclose(np.linalg.norm(feats, axis=3), 1.0)


def test_contexts_new_observation_every_round():
    env = runner.make_env(CONTEXTS, [0, 1])
    first = env.observe(1)
    assert env.observe(1) is first                       # asked twice in a round: the same arm set
    np.testing.assert_array_equal(first.features_t, first.features.transpose(0, 2, 1))
    np.testing.assert_array_equal(env.x_star, first.features[[0, 1], env.best_arm])
    env.step(np.zeros(2, dtype=np.int64))
    second = env.observe(2)
    assert second is not first and second.features is not first.features
    assert not np.any(np.isclose(second.features, first.features))          # fresh draws
    means = np.einsum("bkd,bd->bk", second.features, env.theta)
    np.testing.assert_array_equal(env.means, means)                         # means and best are per round
    np.testing.assert_array_equal(env.best, means.max(axis=1))
    np.testing.assert_array_equal(env.x_star, second.features[[0, 1], means.argmax(axis=1)])


def test_contexts_do_not_depend_on_the_batch_split():
    whole = play_fixed_arms(runner.make_env(CONTEXTS, SEEDS), SEEDS)
    parts = [play_fixed_arms(runner.make_env(CONTEXTS, s), s) for s in (SEEDS[:3], SEEDS[3:])]
    for a, b in zip(whole, (np.concatenate(p, axis=1) for p in zip(*parts))):
        np.testing.assert_array_equal(a, b)


def test_contexts_defaults_follow_sphere_gaussian():
    env = ENVIRONMENTS["sphere_contexts"]([0])
    ref = ENVIRONMENTS["sphere_gaussian"]([0])
    assert (env.d, env.K, env.noise_sd) == (ref.d, ref.K, ref.noise_sd) == (20, 50, 0.5)
    np.testing.assert_allclose(np.linalg.norm(env.theta, axis=1), 1.0)
    assert cells.cell_dimensions({"env": {"name": "sphere_contexts"}, "agent": {"name": "lints"},
                                   "horizon": 10})["K"] == 50


@pytest.mark.parametrize("spec", [{"name": "lints"}, {"name": "linucb"}, {"name": "egreedy"},
                                  {"name": "ensemble_sampling", "m": 4}, {"name": "ensemble_pp", "M": 4}])
def test_agents_play_contexts_with_the_rounds_features(spec):
    """Each agent's ridge statistics are those of the features shown in the round it pulled in."""
    env = runner.make_env(CONTEXTS, SEEDS[:3])
    agent = runner.make_agent(spec, env.setting, SEEDS[:3], 12)
    xs, ys = [], []
    for rnd in play(env, agent, 12):
        assert rnd.arms.shape == (3,) and np.all((rnd.arms >= 0) & (rnd.arms < K))
        xs.append(rnd.obs.features[np.arange(3), rnd.arms])
        ys.append(rnd.rewards)
        np.testing.assert_array_equal(rnd.regret, env.best - env.means[np.arange(3), rnd.arms])
    X, Y = np.array(xs), np.array(ys)
    if spec["name"] == "lints":
        b = agent.b
    elif spec["name"] == "ensemble_pp":
        b = agent.ridge.b * agent.noise_sd ** 2           # kept in unit-noise units
    else:
        b = agent.ridge.b
    np.testing.assert_allclose(b, np.einsum("tb,tbd->bd", Y, X), atol=1e-12)


def test_linucb_scores_the_rounds_arms():
    """LinUCB's choice in each round is the naive UCB argmax over that round's arm set."""
    env = runner.make_env(CONTEXTS, SEEDS[:2])
    agent = runner.make_agent({"name": "linucb", "beta": "constant", "alpha": 0.7}, env.setting, SEEDS[:2], 15)
    V, bvec = [np.eye(D) for _ in range(2)], [np.zeros(D) for _ in range(2)]
    for t in range(1, 16):
        obs = env.observe(t)
        arms = agent.select(t, obs)
        for b in range(2):
            Vinv = np.linalg.inv(V[b])
            X = obs.features[b]
            ucb = X @ (Vinv @ bvec[b]) + 0.7 * np.sqrt(np.einsum("kd,de,ke->k", X, Vinv, X))
            assert ucb[arms[b]] >= ucb.max() - 1e-9                       # ties (round 1) broken at random
        r, _ = env.step(arms)
        agent.update(t, obs, arms, r)
        for b in range(2):
            x = obs.features[b, arms[b]]
            V[b] += np.outer(x, x)
            bvec[b] += r[b] * x


@pytest.mark.parametrize("name", ["linphe", "glinphe"])
def test_per_arm_agents_are_refused_on_contexts(name):
    env = runner.make_env(CONTEXTS, [0])
    with pytest.raises(ValueError, match=rf"agent '{name}' plays a finite arm set only, not the action space "
                                         r"'contexts' \(per-round contexts\)"):
        AGENTS[name](env.setting, [0], 10)
    with pytest.raises(ValueError, match=rf"agent '{name}' cannot play environment 'sphere_contexts': its action "
                                         r"space 'contexts' is not one of the agent's \['finite'\]"):
        cells.check_cell({"env": CONTEXTS, "agent": {"name": name}, "horizon": 10})


def test_check_cell_reads_the_class_attributes_without_building(monkeypatch):
    class Unbuildable(LinPHE):
        def __init__(self, setting, seeds, horizon, a: float = 1.0):
            raise AssertionError("check_cell must not build the agent")

    monkeypatch.setitem(AGENTS, "unbuildable", Unbuildable)
    with pytest.raises(ValueError, match="'unbuildable' cannot play environment 'sphere_contexts'"):
        cells.check_cell({"env": CONTEXTS, "agent": {"name": "unbuildable", "a": 2.0}, "horizon": 10})
    cells.check_cell({"env": {"name": "phe_linear"}, "agent": {"name": "unbuildable"}, "horizon": 10})
    with pytest.raises(ValueError, match="'linucb' cannot play environment 'compact_sphere': its action space "
                                         "'sphere'"):
        cells.check_cell({"env": {"name": "compact_sphere"}, "agent": {"name": "linucb"}, "horizon": 10})
    for agent in ("lints", "linucb", "egreedy", "ensemble_sampling", "ensemble_pp"):
        cells.check_cell({"env": CONTEXTS, "agent": {"name": agent}, "horizon": 10})


def test_contexts_runs_are_split_invariant_end_to_end():
    cell = {"env": CONTEXTS, "agent": {"name": "ensemble_sampling", "m": 3, "diagnostics": True}, "horizon": 25}
    whole = runner.simulate_columns(cell, SEEDS, max_batch=6)
    split = runner.simulate_columns(cell, SEEDS, max_batch=2)
    for key in ("seed", "t", "regret", "optfrac"):
        np.testing.assert_array_equal(whole[key], split[key])


@pytest.mark.parametrize("name", ["phe_linear", "russo_finite", "sphere_gaussian", "compact_sphere"])
def test_fixed_action_sets_show_one_observation(name):
    env = runner.make_env({"name": name, "d": 4} | ({} if name == "compact_sphere" else {"n_arms": 9}), [0, 1])
    agent = runner.make_agent({"name": "lints"}, env.setting, [0, 1], 10)
    first = env.observe(1)
    assert first.features is env.features                                    # no copy
    assert first.compact == (name == "compact_sphere")
    assert all(rnd.obs is first for rnd in play(env, agent, 10))


def test_catalog_imports_environment_modules_lazily():
    """Listing the names (and importing the runner) imports no environment module; a lookup does."""
    module = "ensemble_bandits.envs.linear"
    code = ("import json, sys; from ensemble_bandits import runner; from ensemble_bandits.envs import ENVIRONMENTS\n"
            f"names, before = sorted(ENVIRONMENTS), {module!r} in sys.modules\n"
            "cls = ENVIRONMENTS['sphere_contexts']\n"
            f"print(json.dumps([names, before, cls.__module__, cls.__name__, {module!r} in sys.modules]))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s(120), check=False)
    assert res.returncode == 0, res.stderr
    names, *rest = json.loads(res.stdout)
    assert {"compact_sphere", "phe_linear", "russo_finite", "sphere_contexts", "sphere_gaussian"} <= set(names)
    assert rest == [False, module, "SphereContexts", True]
