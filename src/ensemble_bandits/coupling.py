"""Coupled experiments: runs that are not a plain (environment, agent) cell.

``coupled_es_phe`` is E-B1(a) of the Lee & Oh spec (Proposition 2): linear ensemble
sampling with m = T and round-robin selection is run by the library's
:class:`EnsembleSampling` (its own ``update``), which records every perturbation it draws;
generalised LinPHE (Alg. 2) is then replayed in its naive form, W_t := W^t and
Z_{t,i} := Z_i^t, on the same instance and reward noise.  Prop. 2 says the two action
sequences coincide.
"""
from __future__ import annotations

import numpy as np

from .agents.linear import EnsembleSampling
from .envs import ENVIRONMENTS
from .protocol import play


class _RecordingES(EnsembleSampling):
    """Ensemble sampling that keeps the initial (W) and reward (Z) perturbations it draws."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.W = self.S.copy()
        self.Z = []

    def perturbations(self):
        Z = super().perturbations()
        self.Z.append(Z)
        return Z


class _NaiveAlg2:
    """Generalised LinPHE (Alg. 2) on one seed, naive form: theta_t = V^{-1}(W_t + sum_{i<t} X_i
    (Y_i + Z_{t,i})) from the whole history, with given W (T, d) and Z (T, T); ``scores`` of the
    last selection are kept."""

    def __init__(self, W, Z, jitter, lam: float):
        self.W, self.Z, self.jitter = W, Z, jitter
        self.V = lam * np.eye(W.shape[1])
        self.hist_x, self.hist_y = [], []
        self.scores = None

    def select(self, t, obs):
        s = self.W[t - 1].copy()
        if self.hist_x:
            s += np.array(self.hist_x).T @ (np.array(self.hist_y) + self.Z[:t - 1, t - 1])
        self.scores = obs.features[0] @ np.linalg.solve(self.V, s) + self.jitter
        return np.array([int(np.argmax(self.scores))])

    def update(self, t, obs, arms, rewards):
        x = obs.features[0, arms[0]]
        self.V += np.outer(x, x)
        self.hist_x.append(x)
        self.hist_y.append(float(rewards[0]))


def coupled_es_phe(seeds, env: dict, horizon: int = 1000, lam: float = 1.0, perturbation: str = "gaussian",
                   scale: float = 0.5, init: str = "gaussian", tie_tol: float = 1e-9) -> dict:
    """Per seed: first round where ES(m = T, round robin) and naive Alg. 2 pick different arms.

    Returns numpy columns: seed, t (= T), first_mismatch (T + 1 when none), near_tie (whether the naive
    form's top-2 score gap was below ``tie_tol`` there), regret_es, regret_phe.
    """
    T = int(horizon)
    spec = dict(env)
    cls = ENVIRONMENTS[spec.pop("name")]
    rows = []
    for seed in seeds:
        es_env, phe_env = cls([seed], **spec), cls([seed], **spec)
        es = _RecordingES(es_env.setting, [seed], T, m="T", lam=lam, perturbation=perturbation, scale=scale,
                          init=init, selection="round_robin")
        arms_es, reg_es = [], 0.0
        for rnd in play(es_env, es, T):
            arms_es.append(int(rnd.arms[0]))
            reg_es += float(rnd.regret[0])
        Z = np.stack([z[0] for z in es.Z])          # Z[i, j]: perturbation of model j at observation i
        naive = _NaiveAlg2(es.W[0], Z, es.jitter[0], lam)
        first, near, reg_phe = T + 1, False, 0.0
        for rnd in play(phe_env, naive, T):
            if rnd.arms[0] != arms_es[rnd.t - 1] and first > T:
                top2 = np.sort(naive.scores)[-2:]
                first, near = rnd.t, bool(top2[1] - top2[0] < tie_tol)
            reg_phe += float(rnd.regret[0])
        rows.append({"seed": seed, "t": T, "first_mismatch": first, "near_tie": near,
                     "regret_es": reg_es, "regret_phe": reg_phe})
    return {key: np.array([row[key] for row in rows]) for key in rows[0]}



# What the workflow needs to know of the experiment before it runs (as agent classes declare it):
# the hyper-parameters naming a distribution family, and the ensemble size (m = T).
coupled_es_phe.distribution_params = {"perturbation": "scalar", "init": "init"}
coupled_es_phe.ensemble_size = lambda spec, horizon: int(horizon)

EXPERIMENTS = {"coupled_es_phe": coupled_es_phe}
