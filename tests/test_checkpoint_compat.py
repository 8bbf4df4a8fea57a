"""Checkpoints written by earlier code resume under today's: a checkpoint pickles the agent by its
class's module path, and paper runs in progress hold checkpoints written before the neural Ensemble++
family was split into one module per algorithm (``agents/neural_pp.py`` -> the package
``agents/neural_pp/``).  The package re-exports every class under its old path, so such a file still
loads, and resumes with the numbers of an uninterrupted run.

``tests/data/checkpoints/`` holds one small checkpoint per agent of the family, written by the code
before the split (commit e715358) with :func:`write_fixture`, beside the uninterrupted run's columns
(``<agent>.npz``).  Regenerate them (``python tests/test_checkpoint_compat.py``) only where a change
of an agent's numbers bumps its revision, which makes the old files another job's.
"""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from helpers import Stop, stopping_at  # noqa: E402

from ensemble_bandits import runner  # noqa: E402
from ensemble_bandits.agents import AGENTS  # noqa: E402
from ensemble_bandits.cells import identity_of  # noqa: E402
from ensemble_bandits.checkpoint import Checkpoint  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "checkpoints"
QUAD = {"name": "epp_quadratic", "d": 6, "n_arms": 5, "pool": 20}
SMALL = {"hidden": 8, "G": 2, "batch_size": 4, "update_start": 3}
CELLS = {
    "ensemble_pp_neural": {"env": QUAD, "horizon": 14, "agent": {"name": "ensemble_pp_neural", "M": 2, **SMALL}},
    "ensemble_plus": {"env": QUAD, "horizon": 14, "agent": {"name": "ensemble_plus", "M": 2, **SMALL}},
    "epinet": {"env": QUAD, "horizon": 14, "agent": {"name": "epinet", "M": 2, "flush_denormal": True, **SMALL}},
    "greedy_neural": {"env": QUAD, "horizon": 14, "agent": {"name": "greedy_neural", **SMALL}},
    "lmcts": {"env": QUAD, "horizon": 14, "agent": {"name": "lmcts", "hidden": 8, "num_iter": 3}},
}
SEEDS = [0, 1]
STOP = 8                      # the round whose environment step raises: the checkpoint holds rounds 1-7
PENDING = Path(__file__).resolve().parents[1] / "figures/paper/pending/checkpoints/624dfa0125e3/seeds-5-10.ckpt"


def write_fixture(out: Path = DATA) -> None:
    """Each cell's checkpoint at round STOP - 1 (``<agent>.ckpt``) and its uninterrupted run's columns
    (``<agent>.npz``, wall times left out), written by the code of this checkout."""
    out.mkdir(parents=True, exist_ok=True)
    for name, cell in CELLS.items():
        whole = runner.simulate_columns(cell, SEEDS)
        np.savez(out / f"{name}.npz", **{k: v for k, v in whole.items() if not k.startswith("seconds")})
        ckpt = Checkpoint(out / f"{name}.ckpt", str(identity_of(cell, SEEDS)), every=0.0)
        with stopping_at(cell, STOP), contextlib.suppress(Stop):
            runner.simulate_columns(cell, SEEDS, checkpoint=ckpt)


def _header(path: Path) -> dict:
    with open(path, "rb") as fh:
        return json.loads(fh.readline())


@pytest.mark.parametrize("name", sorted(CELLS))
def test_a_checkpoint_of_the_code_before_the_split_resumes_bit_identically(name, tmp_path):
    cell, path = CELLS[name], DATA / f"{name}.ckpt"
    ident = str(identity_of(cell, SEEDS))
    # the run key and algorithms stamp are unchanged: the old file is still this job's
    assert _header(path)["identity"] == json.loads(ident)
    copy = tmp_path / path.name                 # a resumed run removes nothing here, but never touch the fixture
    copy.write_bytes(path.read_bytes())
    ckpt = Checkpoint(copy, ident, every=1e9)
    assert ckpt.load()
    agent = ckpt.batch[2]
    assert type(agent) is AGENTS[name], (type(agent), AGENTS[name])
    assert 1 <= ckpt.batch[4] < cell["horizon"]
    resumed = runner.simulate_columns(cell, SEEDS, checkpoint=ckpt)
    with np.load(DATA / f"{name}.npz") as before:
        assert sorted(before.files) == sorted(k for k in resumed if not k.startswith("seconds"))
        for key in before.files:
            assert np.array_equal(before[key], resumed[key]), key


def test_the_pending_paper_checkpoint_loads():
    """The EpiNet Shuttle checkpoint of the paper run in progress (committed under figures/paper/pending
    until that run finishes), written before the split: it unpickles to today's class and plays on."""
    if not PENDING.exists():
        pytest.skip(f"{PENDING.name} is gone (its run finished); the fixtures under tests/data/checkpoints cover this")
    header = _header(PENDING)
    ckpt = Checkpoint(PENDING, json.dumps(header["identity"]), every=1e9)
    assert ckpt.load()
    seeds, env, agent, rnd = ckpt.batch[0], ckpt.batch[1], ckpt.batch[2], ckpt.batch[4]
    assert type(agent) is AGENTS["epinet"]
    assert list(seeds) == list(range(*header["identity"]["seeds"]))
    obs = env.observe(rnd + 1)
    arms = agent.select(rnd + 1, obs)
    assert arms.shape == (len(seeds),) and ((0 <= arms) & (arms < env.setting.K)).all()


if __name__ == "__main__":
    sys.exit(write_fixture())
