"""Agents grouped by model family (linear here; GLM and neural families build on the same protocol,
:mod:`ensemble_bandits.protocol`: built from a static Setting; ``select(t, obs)``;
``update(t, obs, arms, rewards)``).

``AGENTS`` maps each registry name to its class, imported only when the name is first used (a
torch family's module is not imported while the workflow builds its job graph, unless one of its
agents is looked up; such a module imports torch inside its classes, not at the top).
"""
from ..catalog import Catalog

AGENTS = Catalog("agent", {
    "lints": "ensemble_bandits.agents.linear:LinTS",
    "linucb": "ensemble_bandits.agents.linear:LinUCB",
    "egreedy": "ensemble_bandits.agents.linear:EpsilonGreedy",
    "linphe": "ensemble_bandits.agents.linear:LinPHE",
    "glinphe": "ensemble_bandits.agents.linear:GeneralisedLinPHE",
    "ensemble_sampling": "ensemble_bandits.agents.linear:EnsembleSampling",
    "ensemble_pp": "ensemble_bandits.agents.linear:EnsemblePlusPlus",
    "logphe": "ensemble_bandits.agents.glm:LogPHE",
    "logts": "ensemble_bandits.agents.glm:LogTS",
    "glm_ucb": "ensemble_bandits.agents.glm:GLMUCB",
    "ucb_glm": "ensemble_bandits.agents.glm:UCBGLM",
    "log_egreedy": "ensemble_bandits.agents.glm:LogisticEpsilonGreedy",
    "glm_tsl": "ensemble_bandits.agents.glm:GLMTSL",
    "glm_fpl": "ensemble_bandits.agents.glm:GLMFPL",
    "glm_es": "ensemble_bandits.agents.glm_es:GLMES",
    "glm_es_anytime": "ensemble_bandits.agents.glm_es:GLMESAnytime",
    "ensemble_pp_neural": "ensemble_bandits.agents.neural_pp.ensemble_pp:EnsemblePlusPlusNeural",
    "ensemble_plus": "ensemble_bandits.agents.neural_pp.ensemble_plus:EnsemblePlusNeural",
    "epinet": "ensemble_bandits.agents.neural_pp.epinet:EpiNetNeural",
    "greedy_neural": "ensemble_bandits.agents.neural_pp.greedy:GreedyNeural",
    "lmcts": "ensemble_bandits.agents.neural_pp.lmcts:LMCTSNeural",
    "neural_es": "ensemble_bandits.agents.neural_es:NeuralES",
    "neural_es_anytime": "ensemble_bandits.agents.neural_es:NeuralESAnytime",
    "neural_phe": "ensemble_bandits.agents.neural_es:NeuralPHE",
    "neural_ucb": "ensemble_bandits.agents.neural_es:NeuralUCB",
    "neural_ts": "ensemble_bandits.agents.neural_es:NeuralTS",
})
