"""The round protocol between an environment and an agent, for every model family.

An agent is built from static facts only, ``Agent(setting, seeds, horizon, **hyper)``: a
:class:`Setting`, the seeds that name its random streams and the horizon; never the environment,
theta*, the best arm or the mean rewards.  Each round of :func:`play` (the runner's loop)::

    obs = env.observe(t)                   # Observation: what a learner may see in round t
    arms = agent.select(t, obs)            # arm indices (B,), or action vectors (B, d) on the sphere
    rewards, regret = env.step(arms)       # the regret is for the record, never shown to the agent
    agent.update(t, obs, arms, rewards)
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


ACTION_SPACES = {"finite": "a finite arm set", "contexts": "per-round contexts", "sphere": "the unit sphere"}
"""The kinds of action set (:mod:`ensemble_bandits.envs.base`), and how an error message names them."""

TIMED_PARTS = ("select", "update")
"""The agent calls a timed run measures apart (arm selection, model update): run-file columns
``seconds_<part>``; the rest of a run's ``seconds`` is the environment and the round loop."""


def check_action_space(agent, action_space: str) -> None:
    """A ValueError unless the agent class ``agent`` (its ``name`` and ``action_spaces``) can play
    ``action_space``."""
    if action_space not in agent.action_spaces:
        plays = " or ".join(ACTION_SPACES.get(a, a) for a in agent.action_spaces)
        raise ValueError(f"agent {agent.name!r} plays {plays} only, not the action space {action_space!r} "
                         f"({ACTION_SPACES.get(action_space, 'unknown')})")


class AgentClass:
    """What the workflow needs to know about an agent class before it builds one; each class
    overrides what differs: whether it can use an accelerator (torch on a GPU: only such agents'
    simulate jobs request the `gpu` GPUs of the config), which hyper-parameters name a distribution
    family (checked while the job graph is built, see distributions.FAMILIES), its ensemble size
    (memory and cost models), its cost model, and the action spaces it can play
    (:data:`ACTION_SPACES`: the job graph refuses any other before a job runs)."""

    name = "agent"
    uses_accelerator = False
    batch_invariant = True      # False: the runner plays one seed per batch (see cells.batch_size)
    revision = 0                # bumped when a change alters this class's numbers: reruns its cells only
    distribution_params: dict = {}
    action_spaces: tuple[str, ...] = tuple(ACTION_SPACES)

    @classmethod
    def revision_of(cls, action_space: str) -> int:
        """The revision of the class's numbers on ``action_space`` (:attr:`revision`, unless a change
        altered the numbers of one action space only)."""
        return cls.revision

    @classmethod
    def check_action_space(cls, action_space: str) -> None:
        """A ValueError unless the agent can play ``action_space`` (:func:`check_action_space`)."""
        check_action_space(cls, action_space)

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        """Models the agent keeps per seed, given its registry spec (1 for a single model)."""
        return 1

    @classmethod
    def seed_block(cls, spec: dict) -> int | None:
        """None where a seed's numbers do not depend on the seeds batched with it; else k: the
        agent's batched arithmetic rounds with its batch, so the runner always plays the whole
        aligned block of k seeds (seeds k*i .. k*i + k - 1) that a seed belongs to, and a seed's
        numbers depend neither on its job nor on the seeds asked for with it."""
        return None

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """The agent's cost model: (seconds per round and batch, seconds per round and seed) for its
        registry ``spec`` and the cell's dimensions ``dims`` (``cells.cell_dimensions``: d, K,
        members, horizon), or None for the workflow's default model (``costs.py``, fitted on the
        linear agents, whose rounds cost microseconds).  A family whose rounds cost more (a GLM fit
        every round) declares its own."""
        return None


@dataclass(frozen=True)
class Setting:
    """Static facts an agent is built from: batch size B (seeds), dimension d, number of arms K
    (0 on the sphere) and the action space (:data:`ACTION_SPACES`): ``finite`` and ``contexts``
    (arm indices into the round's features) or ``sphere`` (unit action vectors)."""

    B: int
    d: int
    K: int
    action_space: str = "finite"


@dataclass(frozen=True, eq=False)
class Observation:
    """What an agent sees in one round: arm features (B, K, d) and their transposed contiguous
    copy (B, d, K) used for scoring; ``compact``: the action set is the unit sphere (no features).

    A fixed arm set returns the same Observation every round; per-round contexts return a new one,
    so an agent must not keep features across rounds."""

    features: np.ndarray | None = None
    features_t: np.ndarray | None = None
    compact: bool = False

    @classmethod
    def of(cls, features: np.ndarray) -> Observation:
        """The observation of a finite arm set ``features`` (B, K, d)."""
        return cls(features, np.ascontiguousarray(features.transpose(0, 2, 1)))

    def scores(self, theta: np.ndarray) -> np.ndarray:
        """x^T theta for every arm (B, K), theta (B, d)."""
        return np.matmul(theta[:, None, :], self.features_t)[:, 0, :]

    def chosen(self, arms: np.ndarray) -> np.ndarray:
        """Features (B, d) of the pulled ``arms``: the action vectors themselves on the sphere."""
        if self.compact:
            return arms
        return self.features[np.arange(len(arms)), arms]


class Round(NamedTuple):
    """One played round, as :func:`play` yields it."""

    t: int
    obs: Observation
    arms: np.ndarray
    rewards: np.ndarray
    regret: np.ndarray


def play(env, agent, horizon: int, start: int = 1) -> Iterator[Round]:
    """The round loop, written once: plays rounds start..horizon (1..horizon unless a resumed run
    starts later), yielding each after the agent's update (a generator: nothing is played until it
    is iterated)."""
    for t in range(int(start), int(horizon) + 1):
        obs = env.observe(t)
        arms = agent.select(t, obs)
        rewards, regret = env.step(arms)
        agent.update(t, obs, arms, rewards)
        yield Round(t, obs, arms, rewards, regret)
