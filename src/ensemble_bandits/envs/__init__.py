"""Bandit environments behind an action-set abstraction (:mod:`.base`: a fixed arm set, per-round
contexts, the compact unit sphere), batched over seeds, with common random numbers across agents.

``ENVIRONMENTS`` maps each registry name to its class, imported only when the name is first used
(listing or checking names imports no environment module).
"""
from ..catalog import Catalog

ENVIRONMENTS = Catalog("environment", {
    "phe_linear": "ensemble_bandits.envs.linear:PheLinear",
    "russo_finite": "ensemble_bandits.envs.linear:RussoFinite",
    "sphere_gaussian": "ensemble_bandits.envs.linear:SphereGaussian",
    "sphere_contexts": "ensemble_bandits.envs.linear:SphereContexts",
    "compact_sphere": "ensemble_bandits.envs.linear:CompactSphere",
    "phe_logistic": "ensemble_bandits.envs.glm:PheLogistic",
    "sphere_logistic": "ensemble_bandits.envs.glm:SphereLogistic",
    "epp_quadratic": "ensemble_bandits.envs.epp_nonlinear:QuadraticBandit",
    "epp_vector_quadratic": "ensemble_bandits.envs.epp_nonlinear:VectorQuadraticBandit",
    "epp_neural": "ensemble_bandits.envs.epp_nonlinear:NeuralBandit",
    "glmes_distance": "ensemble_bandits.envs.glmes_nonlinear:DistanceBandit",
    "glmes_quadratic": "ensemble_bandits.envs.glmes_nonlinear:QuadraticBandit",
    "hate_speech": "ensemble_bandits.envs.text:HateSpeech",
    "uci_classification": "ensemble_bandits.envs.uci:UCIClassification",
})


