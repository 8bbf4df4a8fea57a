"""A seed's numbers do not depend on the number of torch threads of its job (config
``torch_threads``): every torch agent class, played in fresh processes at 1 and at 2 threads,
chooses the same arms and gets the same regret, bit for bit.  The arm sets are large enough for
torch to split the acting pass over threads."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import timeout_s

pytest.importorskip("torch")

from ensemble_bandits import cells  # noqa: E402

NPP = dict(hidden=16, batch_size=16, update_start=8, buffer_size=64)
BIG = {"name": "epp_quadratic", "d": 20, "n_arms": 4000, "pool": 4000}
CELLS = {                                           # name: (env, agent, horizon)
    "ensemble_pp_neural": (BIG, {"name": "ensemble_pp_neural", "M": 4, **NPP}, 24),
    "ensemble_plus": (BIG, {"name": "ensemble_plus", "M": 4, **NPP}, 24),
    "epinet": (BIG, {"name": "epinet", "M": 4, **NPP}, 24),
    "greedy_neural": (BIG, {"name": "greedy_neural", **NPP}, 24),
    "lmcts": (BIG, {"name": "lmcts", "hidden": 16, "num_iter": 2}, 12),
    "neural_es": ({"name": "glmes_quadratic", "d": 20, "n_arms": 2000}, {"name": "neural_es", "m": 3, "steps": 5}, 30),
    "neural_ts": ({"name": "glmes_quadratic", "d": 20, "n_arms": 1000}, {"name": "neural_ts", "steps": 5}, 16),
}

PLAY = """
import json, sys
import numpy as np
from ensemble_bandits.protocol import play
from ensemble_bandits.runner import make_agent, make_env
out = {}
for name, (env, agent, T) in json.loads(sys.argv[1]).items():
    e = make_env(env, [0, 1, 2])
    rounds = list(play(e, make_agent(agent, e.setting, [0, 1, 2], T), T))
    out[name + ".arms"] = np.stack([r.arms for r in rounds])
    out[name + ".regret"] = np.stack([r.regret for r in rounds])
np.savez(sys.argv[2], **out)
"""


def _played(tmp_path, threads: int) -> dict:
    env = {**os.environ, **{k: str(threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
    out = tmp_path / f"threads-{threads}.npz"
    subprocess.run([sys.executable, "-c", PLAY, json.dumps(CELLS), str(out)], env=env, check=True, timeout=timeout_s(600))
    return dict(np.load(out))


def test_every_torch_agent_class_is_covered():
    from ensemble_bandits.agents import AGENTS

    torch_agents = {n for n, cls in AGENTS.items() if getattr(cls, "uses_accelerator", False)}
    assert torch_agents - {"neural_phe", "neural_ucb", "neural_es_anytime"} <= set(CELLS)       # as neural_es, neural_ts


def test_torch_agents_give_the_same_numbers_at_one_and_two_threads(tmp_path):
    one, two = _played(tmp_path, 1), _played(tmp_path, 2)
    assert one.keys() == two.keys()
    for key in one:
        assert np.array_equal(one[key], two[key]), key


def test_threads_of_a_job_follow_torch_threads_for_torch_agents_only():
    torch_cell = {"agent": {"name": "ensemble_pp_neural"}, "env": BIG}
    numpy_cell = {"agent": {"name": "lints"}, "env": {"name": "phe_linear"}}
    assert cells.job_threads(torch_cell, 4) == 4 and cells.job_threads(torch_cell, 1) == 1
    assert cells.job_threads(numpy_cell, 4) == 1                        # numpy agents: BLAS on one thread
    assert cells.job_threads({"experiment": {"name": "coupled_es_phe"}}, 4) == 1
