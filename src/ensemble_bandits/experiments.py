"""Special experiments that are not a plain (environment, agent) run.

``coupled_es_phe`` is E-B1(a) of the Lee & Oh spec (Proposition 2): linear ensemble
sampling with m = T and round-robin selection is run by the library's
:class:`EnsembleSampling`, which records every perturbation it draws; generalised LinPHE
(Alg. 2) is then replayed in its naive form, W_t := W^t and Z_{t,i} := Z_i^t, on the same
instance and reward noise.  Prop. 2 says the two action sequences coincide.
"""
from __future__ import annotations

import numpy as np

from .agents.linear import EnsembleSampling
from .environments import ENVIRONMENTS


class _RecordingES(EnsembleSampling):
    """Ensemble sampling that keeps the initial and reward perturbations it draws."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.W = self.S.copy()
        self.Z = []

    def update(self, t, arms, x, r):
        self.ridge.add(x, r)
        Z = self.pert.draw(self.z, self.m)
        self.Z.append(Z)
        self.S += (np.asarray(r)[:, None] + Z)[:, :, None] * x[:, None, :]


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
        es = _RecordingES(es_env, [seed], T, m="T", lam=lam, perturbation=perturbation, scale=scale,
                          init=init, selection="round_robin")
        X = phe_env.features[0]
        arms_es, reg_es = [], 0.0
        for t in range(1, T + 1):
            a = es.select(t)
            r, reg = es_env.step(a)
            es.update(t, a, es_env.chosen(a), r)
            arms_es.append(int(a[0]))
            reg_es += float(reg[0])
        Z = np.stack([z[0] for z in es.Z])          # Z[i, j]: perturbation of model j at observation i
        W = es.W[0]
        V = lam * np.eye(es_env.d)
        hist_x, hist_y = [], []
        first, near, reg_phe = T + 1, False, 0.0
        for t in range(1, T + 1):
            s = W[t - 1].copy()
            if hist_x:
                hx = np.array(hist_x)
                s += hx.T @ (np.array(hist_y) + Z[:t - 1, t - 1])
            scores = X @ np.linalg.solve(V, s) + es.jitter[0]
            a = int(np.argmax(scores))
            if a != arms_es[t - 1] and first > T:
                top2 = np.sort(scores)[-2:]
                first, near = t, bool(top2[1] - top2[0] < tie_tol)
            r, reg = phe_env.step(np.array([a]))
            reg_phe += float(reg[0])
            x = X[a]
            V += np.outer(x, x)
            hist_x.append(x)
            hist_y.append(float(r[0]))
        rows.append({"seed": seed, "t": T, "first_mismatch": first, "near_tie": near,
                     "regret_es": reg_es, "regret_phe": reg_phe})
    return {key: np.array([row[key] for row in rows]) for key in rows[0]}


EXPERIMENTS = {"coupled_es_phe": coupled_es_phe}
