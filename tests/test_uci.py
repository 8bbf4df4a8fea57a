"""The UCI classification bandits (envs/uci.py) on tiny fixture files in the real files' formats,
and the data hook that brings datasets into simulation jobs (Environment.datasets, runner.make_env,
cli simulate --data-dir, registry.without_datasets, pending curves)."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from helpers import timeout_s

from ensemble_bandits import cells, cli, data, registry, runner, validation
from ensemble_bandits.claims import evaluate
from ensemble_bandits.envs.uci import DIMENSIONS, UCIClassification, _CACHE

SHUTTLE_TRN = """50 21 77 0 28 0 27 48 22 1
55 0 92 0 0 26 36 92 56 2
53 0 82 0 52 -5 29 30 2 3
37 0 76 0 28 18 40 48 8 4
"""
SHUTTLE_TST = """41 -2 79 0 38 -3 38 40 2 5
44 0 78 0 42 0 34 36 2 6
59 0 80 0 58 -9 21 22 2 7
49 1 77 0 48 0 29 29 0 1
0 0 0 0 0 0 0 0 0 1
"""
MUSHROOM = """p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u
e,x,s,y,t,a,f,c,b,k,e,c,s,s,w,w,p,w,o,p,n,n,g
e,b,s,w,t,l,f,c,b,n,e,c,s,s,w,w,p,w,o,p,n,n,m
p,x,y,w,t,p,f,c,n,n,e,e,s,s,w,w,p,w,o,p,k,s,u
e,x,s,g,f,n,f,w,b,k,t,e,s,s,w,w,p,w,o,e,n,a,g
"""


def _install(tmp_path, monkeypatch, name, texts: dict) -> str:
    """Write fixture files under tmp_path/<name>/ and point the manifest at their checksums."""
    files = []
    for rel, text in texts.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        files.append(data.DataFile(rel, hashlib.sha256(text.encode()).hexdigest(), len(text), "file:///nowhere"))
    monkeypatch.setitem(data.DATASETS, name, data.Dataset(name, name, "fixture", tuple(files)))
    _CACHE.clear()
    return str(tmp_path)


@pytest.fixture
def shuttle_dir(tmp_path, monkeypatch):
    return _install(tmp_path, monkeypatch, "shuttle", {"shuttle/shuttle.trn": SHUTTLE_TRN,
                                                       "shuttle/shuttle.tst": SHUTTLE_TST})


@pytest.fixture
def mushroom_dir(tmp_path, monkeypatch):
    return _install(tmp_path, monkeypatch, "mushroom", {"mushroom/agaricus-lepiota.data": MUSHROOM})


def _env(data_dir, seeds=(0, 1, 2), **kw):
    return runner.make_env({"name": "uci_classification", **kw}, list(seeds), data_dir)


def test_dimensions_and_datasets_need_no_data():
    for name, (d0, K) in DIMENSIONS.items():
        assert UCIClassification.dimensions({"dataset": name}) == (K * d0, K)
        assert UCIClassification.datasets({"dataset": name}) == [name]
    assert UCIClassification.dimensions({}) == (63, 7)                     # default: Shuttle (glmes Table 1)
    assert cells.cell_datasets({"env": {"name": "uci_classification", "dataset": "adult"}}) == ["adult"]
    assert cells.cell_datasets({"env": {"name": "phe_linear"}}) == []
    assert cells.cell_derived_inputs({"env": {"name": "uci_classification"}}) == []
    with pytest.raises(ValueError, match="unknown dataset 'iris'"):
        UCIClassification.dimensions({"dataset": "iris"})


def test_disjoint_encoding_of_unit_rows(shuttle_dir):
    env = _env(shuttle_dir, noise_sd=0.1)
    X, y = data.load_classification("shuttle", shuttle_dir)
    assert env.n == 9 and env.d == 63 and env.K == 7
    for t in (1, 2, 9):
        obs = env.observe(t)
        rows = env.row_index(t)
        assert obs.features.shape == (3, 7, 63)
        for b in range(3):
            x = X[rows[b]]
            unit = x / np.linalg.norm(x) if np.linalg.norm(x) > 0 else x      # the all-zero row stays zero
            for a in range(7):
                block = obs.features[b, a].reshape(7, 9)
                assert np.allclose(block[a], unit)
                assert not np.delete(block, a, axis=0).any()                 # zeros outside block a
            assert env.best_arm[b] == y[rows[b]]
            assert np.array_equal(env.means[b], np.eye(7)[y[rows[b]]])


def test_mushroom_ordinal_rows_and_labels(mushroom_dir):
    env = _env(mushroom_dir, seeds=[4], dataset="mushroom")
    assert (env.d, env.K, env.n) == (44, 2, 5)
    assert np.allclose(np.linalg.norm(env.X, axis=1), 1.0)
    assert list(env.y) == [1, 0, 0, 1, 0]                                   # classes sorted: e = 0, p = 1


def test_regret_is_misclassification_and_rewards_are_common(shuttle_dir):
    env0, env1 = _env(shuttle_dir, noise_sd=0.0), _env(shuttle_dir, noise_sd=0.5)
    for t in range(1, 25):                                                   # wraps around after 9 rows
        env0.observe(t)
        env1.observe(t)
        arms = np.array([0, 3, 6])
        r0, reg0 = env0.step(arms)
        r1, reg1 = env1.step(arms)
        correct = (arms == env0.best_arm).astype(float)
        assert np.array_equal(reg0, 1.0 - correct) and np.array_equal(reg1, reg0)
        assert np.array_equal(r0, correct)                                   # noise_sd = 0: reward = 1 - regret
        assert np.all(np.abs(r1 - correct) > 0)                              # noise added, regret unchanged


def test_rows_wrap_around_and_shuffle_per_seed(shuttle_dir):
    env = _env(shuttle_dir, seeds=[0, 1, 2, 3])
    assert np.array_equal(env.row_index(1), env.row_index(10)) and np.array_equal(env.row_index(3), env.row_index(21))
    assert all(sorted(p) == list(range(9)) for p in env.perm)                # each seed: every row once per pass
    assert len({tuple(p) for p in env.perm}) == 4                            # a different order per seed
    alone = _env(shuttle_dir, seeds=[2])
    assert np.array_equal(alone.perm[0], env.perm[2])                       # a seed's order: not its batch's
    fixed = _env(shuttle_dir, seeds=[0, 5], order="fixed")
    idx = np.arange(9)
    np.random.RandomState(2022).shuffle(idx)
    assert np.array_equal(fixed.perm[0], idx) and np.array_equal(fixed.perm[1], idx)


def test_batch_invariance_of_a_run(shuttle_dir):
    cell = {"env": {"name": "uci_classification", "dataset": "shuttle", "noise_sd": 0.1},
            "agent": {"name": "ensemble_sampling", "m": 5, "scale": 0.1, "init": "none"}, "horizon": 30}
    both = runner.simulate_columns(cell, [0, 1, 2], data_dir=shuttle_dir)
    one = runner.simulate_columns(cell, [1], data_dir=shuttle_dir)
    split = runner.simulate_columns(cell, [0, 1, 2], max_batch=2, data_dir=shuttle_dir)
    sel = both["seed"] == 1
    assert np.array_equal(both["regret"][sel], one["regret"])
    assert np.array_equal(both["regret"], split["regret"])
    assert both["regret"].max() <= 30


def test_data_dir_is_given_at_run_time_never_in_the_spec(shuttle_dir, tmp_path):
    with pytest.raises(ValueError, match="reads dataset.*shuttle.*data directory"):
        runner.make_env({"name": "uci_classification"}, [0])
    with pytest.raises(ValueError, match=r"unknown hyper-parameter\(s\) \['data_dir'\]"):
        cells.check_cell({"env": {"name": "uci_classification", "data_dir": shuttle_dir},
                           "agent": {"name": "lints"}, "horizon": 5})
    with pytest.raises(data.DataError, match="elsewhere does not exist"):
        _env(str(tmp_path / "elsewhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(data.DataError, match="missing data file .*shuttle.trn"):
        _env(str(tmp_path / "empty"))


def test_loaded_data_must_match_the_stated_dimensions(tmp_path, monkeypatch):
    six = "\n".join(line for line in (SHUTTLE_TRN + SHUTTLE_TST).splitlines() if not line.endswith(" 7")) + "\n"
    root = _install(tmp_path, monkeypatch, "shuttle", {"shuttle/shuttle.trn": six, "shuttle/shuttle.tst": "1 2 3 4 5 6 7 8 9 1\n"})
    with pytest.raises(data.DataError, match="expected d0 = 9 features and K = 7 classes"):
        _env(root)


def test_cli_simulate_passes_data_dir(shuttle_dir, tmp_path):
    cell = {"env": {"name": "uci_classification", "dataset": "shuttle"}, "agent": {"name": "lints"}, "horizon": 12}
    out = tmp_path / "runs" / "k" / "seeds-0-2.npz"
    out.parent.mkdir(parents=True)
    cli.main(["simulate", "--cell", json.dumps(cell), "--seeds", "0", "2", "--out", str(out), "--data-dir", shuttle_dir])
    got = np.load(out)
    ref = runner.simulate_columns(cell, [0, 1], data_dir=shuttle_dir)
    assert np.array_equal(got["regret"], ref["regret"])
    assert "data_dir" not in json.loads((out.parent / "cell.json").read_text())["env"]


# ---- registry side: the data a figure lists, absent optional data, pending curves ----------------

def _entry(**kw):
    e = {"id": "glmes-x", "paper": "glmes", "kind": "regret_curves", "seeds": 2, "horizon": 10,
         "panels": [{"label": "S", "env": {"name": "uci_classification", "dataset": "shuttle"}},
                    {"label": "C", "env": {"name": "uci_classification", "dataset": "covertype"}}],
         "curves": [{"label": "TS", "agent": {"name": "lints"}},
                    {"label": "N", "agent": {"name": "neural_es", "warmup_design": "random"}, "pending": "later"}],
         "claims": [{"id": "a", "quote": "q", "checks": [{"fn": "final_level", "args": {
                        "column": "regret", "threshold": 1e9, "relation": "below", "curves": ["TS"]}}]},
                    {"id": "b", "quote": "q", "checks": [{"fn": "not_worse", "args": {"a": "N", "baselines": ["TS"]}}]}]}
    e.update(kw)
    return e


def test_pending_curves_are_registered_not_simulated():
    fig = registry.resolve(_entry(), "paper", {})
    assert fig["curves"] == ["TS"] and fig["pending_curves"] == {"N": "later"}
    assert {s["curve"] for s in fig["series"]} == {"TS"}


def test_a_figure_must_list_the_datasets_its_cells_read():
    e = _entry(data=["shuttle"])
    with pytest.raises(registry.RegistryError, match="reads dataset\\(s\\) covertype; list them under data:"):
        validation.check_figure(e, registry.resolve(e, "paper", {}), {})
    e = _entry(data=["shuttle"], optional_data=["covertype"])
    validation.check_figure(e, registry.resolve(e, "paper", {}), {})      # pending curve N: not checked


def test_absent_optional_data_leaves_its_panels_out():
    fig = registry.resolve(_entry(), "smoke", {})
    out = registry.without_datasets(fig, ["covertype"], cells.cell_datasets)
    assert {s["panel"] for s in out["series"]} == {"S"}
    assert out["absent_data"] == ["covertype"] and out["absent_panels"] == ["C"]
    assert registry.without_datasets(fig, [], cells.cell_datasets) is fig


def test_claims_of_pending_curves_and_absent_data_are_not_measured():
    e = _entry()
    res = evaluate(e, pd.DataFrame({"id": ["glmes-x"]}), "smoke", absent=["covertype"], pending={"N": "later"})
    assert [r["status"] for r in res] == ["inconclusive", "inconclusive"]
    assert "data absent: covertype" in res[0]["numbers"]
    assert "pending: N: later" in res[1]["numbers"]


# ---- through Snakemake (dry runs in a scratch copy of the project) --------------------------------

def _dry_run(cwd, *args):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=timeout_s(300))
    return res.returncode, res.stdout + res.stderr


@pytest.mark.workflow
def test_simulate_jobs_get_the_data_files_and_data_dir(tmp_path):
    from helpers import copy_project

    project = copy_project(tmp_path / "p")
    rc, out = _dry_run(project, "glmes-fig5a", "glmes-fig5d", "--config", "scale=smoke")
    assert rc == 0, out
    sims = [line for line in out.splitlines() if "ensemble_bandits.cli simulate " in line]
    assert len(sims) == 8 and all(f"--data-dir {project / 'resources' / 'data'}" in s for s in sims)
    assert "uci_classification" in sims[0] and "covertype" not in " ".join(sims)   # Covertype absent: no jobs
    assert f"{project / 'resources' / 'data' / 'shuttle' / 'shuttle.trn'}" in out    # an input of the jobs
    rc, out = _dry_run(project, "glmes-fig5a", "--config", "scale=smoke", f"data_dir={tmp_path / 'none'}")
    assert rc != 0 and "glmes-fig5a cannot be built" in out and "skip='[glmes-fig5a]'" in out


def test_fixed_order_is_the_public_loaders_seed_2022_shuffle(shuttle_dir):
    sk = pytest.importorskip("sklearn.utils")
    env = _env(shuttle_dir, seeds=[3], order="fixed")
    assert np.array_equal(env.perm[0], sk.shuffle(np.arange(env.n), random_state=2022))
