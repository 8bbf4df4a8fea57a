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


def _cell_env(cell: dict):
    """(class, spec) of the environment of ``cell`` (a coupled experiment's included), or None for
    an unknown name (reported by the name checks)."""
    env = cell["experiment"].get("env", {}) if "experiment" in cell else cell["env"]
    return (ENVIRONMENTS[env["name"]], env) if env.get("name") in ENVIRONMENTS else None


def cell_datasets(cell: dict) -> list[str]:
    """Datasets the environment of ``cell`` reads at run time (``Environment.datasets``)."""
    found = _cell_env(cell)
    return list(found[0].datasets(found[1])) if found else []


def cell_derived_inputs(cell: dict) -> list[str]:
    """Rule-made files the environment of ``cell`` reads at run time (``Environment.derived_inputs``)."""
    found = _cell_env(cell)
    return list(found[0].derived_inputs(found[1])) if found else []


def uniform_regret(spec: dict, seeds):
    """Per seed, the expected per-round regret of a uniformly random policy on the environment of
    ``spec`` (its ``uniform_regret``, exact, no simulation), or None for an environment without one."""
    if spec.get("name") not in ENVIRONMENTS or not hasattr(ENVIRONMENTS[spec["name"]], "uniform_regret"):
        return None
    from ..runner import make_env

    return make_env(spec, seeds).uniform_regret()
