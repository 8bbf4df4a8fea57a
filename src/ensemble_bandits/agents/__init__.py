"""Agents grouped by model family (linear here; GLM and neural families build on the same protocol,
:mod:`ensemble_bandits.protocol`: built from a static Setting; ``select(t, obs)``;
``update(t, obs, arms, rewards)``)."""
from .linear import AGENTS as LINEAR_AGENTS

AGENTS = dict(LINEAR_AGENTS)
