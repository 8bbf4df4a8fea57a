"""Agents grouped by model family (linear here; GLM and neural families build on the same protocol)."""
from .linear import AGENTS as LINEAR_AGENTS

AGENTS = dict(LINEAR_AGENTS)
