"""Helpers shared by the test modules."""
import numpy as np


def run_history(agent, env, T):
    """Drive ``agent`` on ``env`` for T rounds; returns the pulled features (B, T, d) and rewards (B, T)."""
    X, Y = [], []
    for t in range(1, T + 1):
        a = agent.select(t)
        x = env.chosen(a)
        r, _ = env.step(a)
        agent.update(t, a, x, r)
        X.append(x.copy())
        Y.append(np.asarray(r).copy())
    return np.stack(X, axis=1), np.stack(Y, axis=1)
