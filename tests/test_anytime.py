"""The doubling-trick wrapper (glmes.md §2.5, A10-A11): the spec's epoch tables, full restarts with
per-epoch streams, and its registration as the anytime GLM-ES."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from test_glm_es import assert_batch_invariant
from ensemble_bandits import cells, runner, theory
from ensemble_bandits.agents.anytime import doubling_trick, epoch_m, epoch_scale
from ensemble_bandits.agents.glm_es import GLMES, GLMESAnytime
from ensemble_bandits.agents.linear import LinearAgent
from ensemble_bandits.catalog import hyper
from ensemble_bandits.protocol import Setting

ENV = {"name": "sphere_logistic", "d": 4, "n_arms": 12}


class Recorder(LinearAgent):
    """An inner agent that records how it was built and the rounds it saw."""

    name = "recorder"
    action_spaces = ("finite",)
    built: list = []

    def __init__(self, setting, seeds, horizon, m: int = 10, scale: float = 0.1, warmup: int = 5):
        super().__init__(setting, seeds, horizon)
        self.m, self.scale, self.warmup, self.rounds = m, scale, warmup, []
        self.first_draw = self.streams("draw", "uniform").take(1)[:, 0]
        Recorder.built.append(self)

    def select(self, t, obs):
        self.rounds.append(t)
        return np.zeros(self.B, dtype=np.int64)

    def update(self, t, obs, arms, rewards):
        assert t == self.rounds[-1]


RecorderAnytime = doubling_trick(Recorder, "recorder_anytime")

# glmes.md §2.5, epoch tables for T = 10^4: (first, last played, planned tau, m_i, sigma_i)
TABLES = {
    100: [(1, 100, 100, 9, 0.0921), (101, 261, 161, 10, 0.1016), (262, 685, 424, 12, 0.1210),
          (686, 1794, 1109, 14, 0.1402), (1795, 4697, 2903, 16, 0.1595), (4698, 10000, 7602, 18, 0.1787)],
    300: [(1, 300, 300, 11, 0.1141), (301, 785, 485, 12, 0.1237), (786, 2056, 1271, 14, 0.1430),
          (2057, 5383, 3327, 16, 0.1622), (5384, 10000, 8710, 18, 0.1814)],
}


@pytest.mark.parametrize("T0", [100, 300])
def test_epochs_match_the_spec_tables(T0):
    Recorder.built = []
    agent = RecorderAnytime(Setting(B=2, d=2, K=3), [0, 1], 10_000, T0=T0)
    for t in range(1, 10_001):
        agent.update(t, None, agent.select(t, None), None)
    table = TABLES[T0]
    assert len(agent.epochs) == len(Recorder.built) == len(table)
    for e, inner, (first, last, tau, m, sigma) in zip(agent.epochs, Recorder.built, table):
        assert (e["first"], e["tau"], e["m"]) == (first, tau, m)
        assert round(e["scale"], 4) == sigma
        assert (inner.m, round(inner.scale, 4), inner.T) == (m, sigma, tau)          # built for the planned tau
        assert inner.rounds == list(range(1, last - first + 2))                       # local rounds from 1
    assert agent.epochs[-1]["planned_last"] == (12299 if T0 == 100 else 14093)
    ref = theory.doubling_epochs(T0, theory.GOLDEN_B, 10_000)
    assert [(e["first"], e["tau"]) for e in agent.epochs] == [(e["first"], e["tau"]) for e in ref]


def test_epoch_rules():
    assert [epoch_m(tau) for tau in (100, 161, 424, 1109, 2903, 7602)] == [9, 10, 12, 14, 16, 18]
    assert epoch_m(1) == 1 and epoch_m(2) == 1                                        # max(1, round(1.39))
    assert epoch_m(np.exp(2.25)) == 5                                                 # 4.5: half up
    assert epoch_scale(100) == pytest.approx(0.02 * np.log(100))


def test_epoch_streams_are_their_own_and_reproducible():
    """Each epoch's inner agent draws from (seed, wrapper/epoch<i>/inner) streams: different across
    epochs, the same for the same seed in any batch."""
    Recorder.built = []
    agent = RecorderAnytime(Setting(B=2, d=2, K=3), [5, 6], 10, T0=2, b=2.0)
    for t in range(1, 11):
        agent.select(t, None)
    spaces = [r.streams.namespace for r in Recorder.built]
    assert spaces == [f"agent/recorder_anytime/epoch{i}/recorder" for i in range(len(spaces))]
    draws = np.stack([r.first_draw for r in Recorder.built])
    assert len(np.unique(draws)) == draws.size                                        # epochs and seeds differ
    Recorder.built = []
    alone = RecorderAnytime(Setting(B=1, d=2, K=3), [6], 10, T0=2, b=2.0)
    for t in range(1, 11):
        alone.select(t, None)
    assert np.array_equal(np.stack([r.first_draw for r in Recorder.built])[:, 0], draws[:, 1])


def test_fixed_m_scale_and_warmup_once():
    Recorder.built = []
    agent = RecorderAnytime(Setting(B=1, d=2, K=3), [0], 100, T0=10, b=2.0, m=4, scale=0.3, dt_warmup="once",
                            warmup=7)
    for t in range(1, 80):
        agent.select(t, None)
    assert [(r.m, r.scale) for r in Recorder.built] == [(4, 0.3)] * 4
    assert [r.warmup for r in Recorder.built] == [7, 0, 0, 0]
    Recorder.built = []
    per_epoch = RecorderAnytime(Setting(B=1, d=2, K=3), [0], 100, T0=10, b=2.0, warmup=7)
    for t in range(1, 80):
        per_epoch.select(t, None)
    assert [r.warmup for r in Recorder.built] == [7] * 4


# --------------------------------------------------------------------------------------
# the anytime GLM-ES


def _play(agent, env, T):
    arms, rewards, obs = [], [], []
    for rnd in runner.play(env, agent, T):
        arms.append(rnd.arms.copy())
        rewards.append(np.asarray(rnd.rewards).copy())
        obs.append(rnd.obs)
    return np.stack(arms), np.stack(rewards), obs


def test_restart_resets_state_and_equals_fresh_glm_es_per_epoch():
    """Each epoch plays exactly like a fresh GLM-ES with the epoch's namespace, m_i, sigma_i and
    horizon tau_i fed the epoch's rounds: no state crosses a restart (data, models, streams)."""
    seeds, T = [0, 1], 45
    env = runner.make_env(ENV, seeds)
    agent = GLMESAnytime(env.setting, seeds, T, T0=10, b=2.0, warmup=6, m_coef=1.0, scale_coef=0.05)
    seen, pulls = [], []
    for rnd in runner.play(env, agent, T):
        seen.append(agent.agent)
        pulls.append(agent.agent.data.pulls.sum(axis=1).copy())
    arms, rewards, obs = _play(GLMESAnytime(env.setting, seeds, T, T0=10, b=2.0, warmup=6, m_coef=1.0,
                                            scale_coef=0.05), runner.make_env(ENV, seeds), T)
    bounds = [(e["first"], min(e["planned_last"], T)) for e in agent.epochs]
    assert bounds == [(1, 10), (11, 20), (21, 40), (41, 45)]
    for i, (first, last) in enumerate(bounds):
        assert all(seen[t - 1] is seen[first - 1] for t in range(first, last + 1))
        assert i == 0 or seen[first - 1] is not seen[first - 2]
        assert [p.tolist() for p in pulls[first - 1:last]] == [[k, k] for k in range(1, last - first + 2)]
        e = agent.epochs[i]
        inner = seen[first - 1]
        assert inner.streams.namespace == f"agent/glm_es_anytime/epoch{i}/glm_es"
        assert (inner.m, inner.warmup, inner.T) == (max(1, round(np.log(e["tau"]))), min(6, e["tau"]), e["tau"])
        fresh = GLMES.__new__(GLMES)
        fresh.name = f"glm_es_anytime/epoch{i}/glm_es"
        fresh.__init__(env.setting, seeds, e["tau"], m=e["m"], scale=e["scale"], warmup=6)
        for t in range(first, last + 1):
            a = fresh.select(t - first + 1, obs[t - 1])
            assert np.array_equal(a, arms[t - 1]), (i, t)
            fresh.update(t - first + 1, obs[t - 1], a, rewards[t - 1])
        np.testing.assert_array_equal(fresh.theta, inner.theta)


def test_anytime_ignores_the_horizon_and_is_batch_invariant():
    seeds = [0, 1, 2]
    spec = {"T0": 10, "b": 2.0, "warmup": 5}
    a1, _, _ = _play(GLMESAnytime(runner.make_env(ENV, seeds).setting, seeds, 35, **spec), runner.make_env(ENV, seeds), 35)
    a2, _, _ = _play(GLMESAnytime(runner.make_env(ENV, seeds).setting, seeds, 10 ** 6, **spec),
                     runner.make_env(ENV, seeds), 35)
    assert np.array_equal(a1, a2)
    assert_batch_invariant({"env": dict(ENV), "agent": {"name": "glm_es_anytime", **spec}, "horizon": 35}, seeds)


def test_registration_signature_and_ensemble_size():
    params = inspect.signature(GLMESAnytime.__init__).parameters
    assert list(params)[:4] == ["self", "setting", "seeds", "horizon"]
    assert {"T0", "b", "m_coef", "scale_coef", "dt_warmup", "lam", "warmup", "solver"} <= set(params)
    assert hyper(GLMESAnytime, {}, "T0") == 100 and hyper(GLMESAnytime, {}, "b") == theory.GOLDEN_B
    assert hyper(GLMESAnytime, {}, "warmup") == 500 and hyper(GLMESAnytime, {}, "m") is None
    assert GLMESAnytime.action_spaces == GLMES.action_spaces
    assert GLMESAnytime.distribution_params == {"perturbation": "scalar"}
    cell = {"env": {"name": "sphere_logistic"}, "agent": {"name": "glm_es_anytime", "T0": 300}, "horizon": 10_000}
    cells.check_cell(cell)
    assert cells.cell_dimensions(cell)["members"] == 18
    assert GLMESAnytime.ensemble_size({}, 10_000) == 18
    assert GLMESAnytime.ensemble_size({}, 100) == 9 and GLMESAnytime.ensemble_size({}, 101) == 10
    assert GLMESAnytime.ensemble_size({"m": 7}, 10_000) == 7
    with pytest.raises(ValueError, match=r"unknown hyper-parameter\(s\) \['tau'\]"):
        cells.check_cell({**cell, "agent": {"name": "glm_es_anytime", "tau": 3}})
    setting = Setting(B=1, d=3, K=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tau'"):
        GLMESAnytime(setting, [0], 10, tau=3)
    with pytest.raises(ValueError, match="T0 \\(b - 1\\) >= 1"):
        GLMESAnytime(setting, [0], 10, T0=100, b=1.001)
    with pytest.raises(ValueError, match="dt_warmup"):
        GLMESAnytime(setting, [0], 10, dt_warmup="never")
    with pytest.raises(ValueError, match="finite arm set or per-round contexts"):
        GLMESAnytime(Setting(B=1, d=3, K=0, action_space="sphere"), [0], 10)


@pytest.mark.parametrize("dt_warmup", ["per_epoch", "once"])
def test_warmup_regret_is_the_regret_of_the_warmup_rounds_of_the_schedule(dt_warmup):
    """regret_warmup against a naive reference: per-round regret (the differences of the cumulative
    regret, every round a checkpoint) summed over the rounds that open an epoch, min(warmup, tau_i)
    of them (epoch 0 only under ``once``), from the schedule alone."""
    T, T0, b, warmup = 80, 10, 2.0, 4
    cell = {"env": {"name": "sphere_logistic", "d": 3, "n_arms": 5}, "horizon": T,
            "agent": {"name": "glm_es_anytime", "T0": T0, "b": b, "warmup": warmup, "dt_warmup": dt_warmup}}
    cols = runner.simulate_columns(cell, [0, 1, 2])
    ends = theory.doubling_schedule(T0, b, T)
    starts = np.concatenate([[1], np.asarray(ends[:-1]) + 1])
    warm = np.zeros(T + 1, dtype=bool)
    for i, (s, e) in enumerate(zip(starts, ends)):
        if i == 0 or dt_warmup == "per_epoch":
            warm[s:s + min(warmup, e - s + 1)] = True
    for seed in range(3):
        rows = cols["seed"] == seed
        t, R = cols["t"][rows], cols["regret"][rows]
        assert np.array_equal(t, np.arange(1, T + 1))          # T < 100: every round is a checkpoint
        per_round = np.diff(np.concatenate([[0.0], R]))
        assert np.allclose(cols["regret_warmup"][rows], np.cumsum(np.where(warm[1:], per_round, 0.0)))
    assert (cols["regret_warmup"] <= cols["regret"] + 1e-12).all()
