"""Runner probes: diagnostics that need the truth, read from agent state and environment side by side.

A probe is a function ``(agent, env) -> {column: (B,) array}``; the runner calls it at every
checkpoint, after the round's update, and adds its columns to the long table.  Agents never see
the environment; a cell asks for a probe through its agent's hyper-parameters (:func:`for_agent`).
"""
from __future__ import annotations

import numpy as np

from .agents.linear import bmv


def optimism(agent, env) -> dict:
    """Ensemble sampling: the fraction of members j that are optimistic, max_x x^T theta_j >= x*^T
    theta* (``optfrac``), and, when the agent has a ``beta``, the fraction passing Lemma 2's test
    x*^T (theta_j - theta_hat) >= beta |x*|_{V^{-1}} (``lemma2frac``)."""
    Vinv = agent.ridge.Vinv
    thetas = np.matmul(agent.S, Vinv)                          # (B, m, d); Vinv symmetric
    if env.action_space == "sphere":
        top = np.linalg.norm(thetas, axis=2)
    else:
        top = np.matmul(thetas, env.features.transpose(0, 2, 1)).max(axis=2)
    out = {"optfrac": (top >= env.best[:, None]).mean(axis=1)}
    if agent.beta is not None:
        xs = env.x_star
        dev = np.einsum("bmd,bd->bm", thetas, xs) - np.einsum("bd,bd->b", agent.ridge.mean(), xs)[:, None]
        width = np.sqrt(np.einsum("bd,bd->b", xs, bmv(Vinv, xs)))
        out["lemma2frac"] = (dev >= agent.beta * width[:, None]).mean(axis=1)
    return out


# The fixed index vectors the neural probe averages a term's spread over: PROBE_INDICES draws of the
# agent's acting family from a generator of its own (seed PROBE_SEED), never from the agent's streams.
PROBE_INDICES, PROBE_SEED = 16, 20_251_030


def spread(values) -> np.ndarray:
    """Across-arm spread of a term: its standard deviation over the arms (axis 1; ddof 0), averaged
    over the index vectors when the term has them: values (B, K) or (B, K, k) -> (B,)."""
    v = np.asarray(values, dtype=np.float64)
    sd = v.std(axis=1)
    return sd.mean(axis=-1) if sd.ndim > 1 else sd


def neural_terms(agent, env) -> dict:
    """Neural ensemble agents (Ensemble++, Ensemble+, EpiNet; mean-squared loss): the terms of the
    prediction f(x, zeta) = mean(x) + index(x, zeta) + prior(x, zeta) (``agent.probe_terms``) on the
    round's K arms, against the spread of the true mean rewards.  Columns: ``trunk_norm`` (mean over
    arms of |h(x)|, the trainable trunk's features), ``prior_spread`` (the prior term), ``index_spread``
    (the learned index term, the posterior part), ``total_spread`` (the whole index term, learned +
    prior: what the round's index adds to the mean), ``mean_spread`` (the index-free mean prediction),
    ``reward_spread`` (of ``env.means``), and ``<term>_ratio`` = ``<term>_spread / reward_spread``
    (NaN where the rewards do not spread).  A spread (:func:`spread`) is averaged over the agent's fixed
    probe index set (``agent.probe_indices``); the probe reads the agent under ``torch.no_grad`` and
    changes nothing: no draw from its streams, no state."""
    torch = agent.torch
    with torch.no_grad():
        x = agent.tensor(env.features)                              # (B, K, d): the round's arms
        xi = agent.tensor(agent.probe_indices(np.random.default_rng(PROBE_SEED), PROBE_INDICES))   # (k, M)
        terms = {k: v.detach().cpu().double().numpy() for k, v in agent.probe_terms(x, xi).items()}
    # mean (B, K, C), index and prior (B, K, C, k), C = 1: the regression output
    terms.update({k: terms[k][:, :, 0] for k in ("mean", "index", "prior")})
    out = {"trunk_norm": np.linalg.norm(terms["h"], axis=2).mean(axis=1),
           "prior_spread": spread(terms["prior"]), "index_spread": spread(terms["index"]),
           "total_spread": spread(terms["index"] + terms["prior"]), "mean_spread": spread(terms["mean"]),
           "reward_spread": spread(env.means)}
    rs = out["reward_spread"]
    safe = np.where(rs > 0, rs, 1.0)                                # no division by zero: NaN there
    for term in ("prior", "index", "total", "mean"):
        out[f"{term}_ratio"] = np.where(rs > 0, out[f"{term}_spread"] / safe, np.nan)
    return out


def for_agent(agent):
    """The probe the cell asks for with ``diagnostics: true``: :func:`neural_terms` for an agent that
    splits its prediction into terms (``probe_terms``: the neural ensemble agents), else
    :func:`optimism` (linear ensemble sampling); None without it."""
    if not getattr(agent, "diagnostics", False):
        return None
    return neural_terms if hasattr(agent, "probe_terms") else optimism
