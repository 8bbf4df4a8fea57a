"""The shared pass: several agents played on ONE environment in lockstep, each as if alone.

The cells of a figure grid that share an environment spec and a horizon (e.g. TS and Ensemble++
for every M and distribution pair on one ``russo_finite`` panel) see the same instances and, per
(seed, round), the same reward noise (common random numbers, :mod:`ensemble_bandits.envs.base`).
A per-cell run regenerates the instances for each cell and scores each agent's theta against the
arm matrix (B, K, d) on its own: a matrix-vector product per instance and round, bound by memory
bandwidth.  The shared pass builds the environment once and, each round::

    obs = env.observe(t)
    thetas = [agent.propose(t, obs) ...]         # agents whose arm is greedy on one theta
    arms = greedy_many(agents, thetas, obs)      # one matrix-matrix product per instance
    [(rewards, regret) ...] = env.step_many(arms)  # one noise draw, every agent's own arm
    agent.update(t, obs, arms_a, rewards_a) for each agent

Agents that choose otherwise (and every agent on the sphere, where there are no arms to score)
call their own ``select`` inside the same pass.  Each agent draws from its own streams exactly as
in its own run, so a cell's chosen arms, and hence its run file, are those of the per-cell run:
the scores of the two products may differ in the last bit (GEMM vs GEMV summation order), which
changes no argmax unless two arms tie to within rounding (tests/test_shared_pass.py checks the
run files bit for bit).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from .agents.linear import LinearAgent

SCORE_BYTES = 4 * 2 ** 20
"""Size of the score block (instances x agents x arms, float64) scored by one product: the
instances of a batch are scored in chunks of at most this size (bench_numpy.py, section 5)."""


def proposes(agent) -> bool:
    """Whether ``agent``'s arm is ``greedy(propose(t, obs), obs)`` (its class says ``proposes`` and
    keeps the greedy ``select`` of :class:`LinearAgent`), so that its theta can be scored in a
    shared product."""
    return bool(getattr(agent, "proposes", False)) and type(agent).select is LinearAgent.select


def greedy_many(agents, thetas, obs, score_bytes: int = SCORE_BYTES) -> list:
    """Each agent's greedy arm, argmax_k x_k^T theta_a + jitter_a (B,), for the thetas (B, d) of
    ``agents`` on the finite arm set of ``obs``: one product (G, d) x (d, K) per instance, in
    chunks of instances whose scores fill at most ``score_bytes``."""
    theta = np.stack(thetas, axis=1)                       # (B, G, d)
    feats = obs.features_t                                 # (B, d, K)
    B, G, K = theta.shape[0], theta.shape[1], feats.shape[2]
    chunk = int(max(1, score_bytes // (8 * G * K)))
    arms = np.empty((G, B), dtype=np.int64)
    for c0 in range(0, B, chunk):
        c1 = min(B, c0 + chunk)
        scores = np.matmul(theta[c0:c1], feats[c0:c1])     # (c, G, K)
        for g, agent in enumerate(agents):
            scores[:, g] += agent.jitter[c0:c1]
        arms[:, c0:c1] = scores.argmax(axis=2).T
    return list(arms)


class GroupRound(NamedTuple):
    """One round of a shared pass: per agent (in the order given) its arms, rewards and regret."""

    t: int
    obs: object
    arms: list
    rewards: list
    regret: list


def play_group(env, agents, horizon: int, score_bytes: int = SCORE_BYTES) -> Iterator[GroupRound]:
    """The round loop of a shared pass (the many-agent :func:`protocol.play`): rounds 1..horizon,
    each yielded after every agent's update."""
    agents = list(agents)
    finite = env.action_space != "sphere"
    shared = [i for i, a in enumerate(agents) if finite and proposes(a)]
    alone = [i for i in range(len(agents)) if i not in set(shared)]
    for t in range(1, int(horizon) + 1):
        obs = env.observe(t)
        arms = [None] * len(agents)
        if shared:
            thetas = [agents[i].propose(t, obs) for i in shared]
            for i, a in zip(shared, greedy_many([agents[i] for i in shared], thetas, obs, score_bytes)):
                arms[i] = a
        for i in alone:
            arms[i] = agents[i].select(t, obs)
        steps = env.step_many(arms)
        for agent, a, (rewards, _) in zip(agents, arms, steps):
            agent.update(t, obs, a, rewards)
        yield GroupRound(t, obs, arms, [s[0] for s in steps], [s[1] for s in steps])
