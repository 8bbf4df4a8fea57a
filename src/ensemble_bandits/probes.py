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


def for_agent(agent):
    """The probe the cell asks for (``diagnostics: true`` on ensemble sampling), or None."""
    return optimism if getattr(agent, "diagnostics", False) else None
