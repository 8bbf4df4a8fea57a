"""The agent-conformance battery: one gate every registered agent passes (``AGENTS``, all of them, found
by name; a new agent is checked here without a line added).  Each property is a test parametrised over
the agents:

- **built from the Setting only**: ``Agent(setting, seeds, horizon, **hyper)`` refuses an environment
  in place of the Setting, and after playing holds neither the environment, its random streams nor its
  truth (theta*, the mean rewards, the best arm and its mean);
- **batch, split and thread invariance**: a seed's numbers are the same played in one batch, in a job of
  its own, in a split job, one seed per batch, and, for a torch agent, at one and at two torch threads
  (a numpy agent's job runs on one thread: ``cells.job_threads``);
- **a typed parameter spec**: every hyper-parameter a keyword argument of ``__init__`` with a default and
  a type annotation (what the registry's validation reads);
- **a version stamp**: an integer ``revision`` >= 0, carried in the algorithms stamp of its runs
  (``runner.algorithms_stamp``) and in the run files' identity;
- **a plot family**: its colour and line style in every figure (``plotting.methods.AGENT_FAMILY``).

Horizons and networks are small (the property is what is tested, not the algorithm), so the battery
takes a few minutes on a busy 2-core machine.  The hyper-parameters of ``SMALL`` shrink the torch agents
only; every other agent plays its defaults.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import reachable, run_history
from ensemble_bandits import ALGORITHMS_VERSION, cells, runner
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.cells import identity_of
from ensemble_bandits.envs.base import Environment
from ensemble_bandits.plotting.methods import AGENT_FAMILY, FAMILIES
from ensemble_bandits.protocol import Setting

ENVS = {"finite": {"name": "russo_finite", "d": 4, "n_arms": 6},
        "sphere": {"name": "compact_sphere", "d": 4}}
HORIZON = 12
SEEDS = [0, 1, 2, 3]
_NPP = {"hidden": 8, "batch_size": 4, "update_start": 3, "G": 2}
_NES = {"m": 2, "L": 3, "N": 4, "steps": 3, "warmup": 3}
SMALL = {                         # torch agents: small networks that train from round 3 on
    "ensemble_pp_neural": {"M": 3, **_NPP}, "ensemble_plus": {"M": 3, **_NPP}, "epinet": {"M": 3, **_NPP},
    "greedy_neural": _NPP, "lmcts": {"hidden": 8, "num_iter": 3},
    "neural_es": _NES, "neural_phe": {k: v for k, v in _NES.items() if k != "m"},
    "neural_ts": {k: v for k, v in _NES.items() if k != "m"}, "neural_ucb": {k: v for k, v in _NES.items() if k != "m"},
    "neural_es_anytime": {**_NES, "T0": 4},
}
TRUTH = ("theta", "best", "best_arm", "means", "scores", "pool_means", "streams")
NAMES = sorted(AGENTS)


def _cell(name: str, env: str = "finite", **extra) -> dict:
    spec = {"name": name, **SMALL.get(name, {}), **extra}
    return {"env": dict(ENVS[env]), "agent": spec, "horizon": HORIZON}


def _params(name: str) -> set:
    import inspect

    return set(inspect.signature(AGENTS[name].__init__).parameters)


def _uses_torch(name: str) -> bool:
    return cells.uses_torch({"agent": {"name": name}})


def test_every_small_spec_names_a_registered_agent_and_its_parameters():
    for name, spec in SMALL.items():
        assert name in AGENTS, name
        assert set(spec) <= _params(name), (name, set(spec) - _params(name))


@pytest.mark.parametrize("name", NAMES)
def test_every_hyper_parameter_is_declared_with_a_type_and_a_default(name):
    """The agent's parameter spec is its constructor's keyword arguments (what the registry's validation
    reads, ``runner._checked``): each has a default (whose type ``runner.check_value`` enforces) and a type
    annotation; the names a text parameter takes are its ``choice_params``."""
    import inspect

    params = list(inspect.signature(AGENTS[name].__init__).parameters.values())[4:]  # after self, setting, seeds, horizon
    for p in params:
        assert p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD), f"{name}: **{p.name} hides its hyper-parameters"
        assert p.default is not p.empty, f"{name}: hyper-parameter {p.name} has no default"
        assert p.annotation is not p.empty, f"{name}: hyper-parameter {p.name} has no type annotation"
    for key in getattr(AGENTS[name], "choice_params", {}):
        assert key in {p.name for p in params}, f"{name}: choice_params names {key}, not a hyper-parameter"


# ---- built from the Setting only, no truth reachable -------------------------------------------

@pytest.mark.parametrize("env_name", sorted(ENVS))
@pytest.mark.parametrize("name", NAMES)
def test_built_from_the_setting_only_with_no_truth_reachable(name, env_name):
    cls = AGENTS[name]
    for attr in ("name", "action_spaces", "revision", "select", "update"):          # the protocol (protocol.py)
        assert hasattr(cls, attr), f"{name}: no {attr}"
    cell = _cell(name, env_name)
    env = runner.make_env(cell["env"], [0, 1])
    assert env.setting == Setting(2, 4, env.setting.K, env.action_space)
    spec = {k: v for k, v in cell["agent"].items() if k != "name"}
    if env_name not in cls.action_spaces:              # e.g. a finite-only agent on the sphere: refused
        with pytest.raises(ValueError):
            cls(env.setting, [0, 1], HORIZON, **spec)
        return
    agent = cls(env.setting, [0, 1], HORIZON, **spec)
    run_history(agent, env, HORIZON)
    truth = [x for x in (getattr(env, k, None) for k in TRUTH) if x is not None]
    for value in reachable(agent):
        assert not isinstance(value, Environment), name
        assert not any(value is x for x in truth), (name, type(value))
    with pytest.raises(TypeError, match="built from a Setting"):
        cls(env, [0, 1], HORIZON, **spec)


# ---- the same numbers however the seeds are batched, split or threaded ----------------------------

def _numbers(cols: dict) -> dict:
    """A run table's columns but its wall times."""
    return {k: v for k, v in cols.items() if not k.startswith("seconds")}


def _per_seed(cols: dict, seed: int) -> dict:
    rows = np.asarray(cols["seed"]) == seed
    return {k: np.asarray(v)[rows] for k, v in _numbers(cols).items()}


def _assert_same(a: dict, b: dict, what: str) -> None:
    assert a.keys() == b.keys(), what
    for key in a:
        assert np.array_equal(a[key], b[key], equal_nan=True), f"{what}: column {key} differs"


@pytest.mark.parametrize("name", NAMES)
def test_a_seeds_numbers_do_not_depend_on_its_batch_or_job(name):
    cell = _cell(name)
    whole = runner.simulate_columns(cell, SEEDS)
    regret = np.asarray(whole["regret"])
    assert np.isfinite(regret).all() and len(np.unique(regret)) > 1, f"{name}: a degenerate run proves nothing"
    split = [runner.simulate_columns(cell, SEEDS[:1]), runner.simulate_columns(cell, SEEDS[1:3]),
             runner.simulate_columns(cell, SEEDS[3:])]
    one_per_batch = runner.simulate_columns(cell, SEEDS, max_batch=1)
    reordered = runner.simulate_columns(cell, [3, 0], max_batch=2)
    for s in SEEDS:
        ref = _per_seed(whole, s)
        part = next(p for p in split if s in np.asarray(p["seed"]))
        _assert_same(ref, _per_seed(part, s), f"{name}: seed {s} in a split job")
        _assert_same(ref, _per_seed(one_per_batch, s), f"{name}: seed {s} one seed per batch")
        if s in (3, 0):
            _assert_same(ref, _per_seed(reordered, s), f"{name}: seed {s} batched with other seeds, in another order")


@pytest.mark.parametrize("name", NAMES)
def test_a_seeds_numbers_do_not_depend_on_the_number_of_threads(name):
    cell = _cell(name)
    if not _uses_torch(name):
        assert cells.job_threads(cell, 4) == 1, f"{name}: a numpy agent's job must run on one thread"
        return
    import torch

    cell["env"]["n_arms"] = 600                 # enough arms for torch to split the acting pass over threads
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = runner.simulate_columns(cell, SEEDS[:2])
        torch.set_num_threads(2)
        two = runner.simulate_columns(cell, SEEDS[:2])
    finally:
        torch.set_num_threads(before)
    _assert_same(_numbers(one), _numbers(two), f"{name}: 1 vs 2 torch threads")


# ---- a version stamp and a plot family ----------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_every_agent_carries_a_version_stamp(name):
    import json

    cls, cell = AGENTS[name], _cell(name)
    revision = getattr(cls, "revision", None)
    assert isinstance(revision, int) and not isinstance(revision, bool) and revision >= 0, (name, revision)
    stamp = cells.algorithms_stamp(cell)
    assert stamp.startswith(ALGORITHMS_VERSION), (name, stamp)
    assert (f"revision {revision}" in stamp) == (revision > 0), (name, stamp)
    assert json.loads(str(identity_of(cell, SEEDS)))["algorithms"] == stamp


def test_revised_classes_have_distinct_stamps():
    """A revision is stamped with its class's ``name``: two registered agents of one revised class share
    their stamp (as they share the class), but two classes never share a name."""
    names = {}
    for reg_name in NAMES:
        cls = AGENTS[reg_name]
        names.setdefault(cls.name, set()).add(cls)
    assert all(len(classes) == 1 for classes in names.values()), {n: c for n, c in names.items() if len(c) > 1}


@pytest.mark.parametrize("name", NAMES)
def test_every_agent_has_a_plot_family(name):
    family = AGENT_FAMILY.get(name)
    assert family is not None, f"{name}: no method family in plotting/methods.py AGENT_FAMILY (its colour and style)"
    assert family in FAMILIES, (name, family)
