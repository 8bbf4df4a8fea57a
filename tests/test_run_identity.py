"""Run files prove what they are: the cell key, algorithms version, seed range and horizon are stored
in each and checked when it is read; a mismatch is one clear error naming the file and what differs."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ensemble_bandits
from ensemble_bandits import cli, paths, registry
from ensemble_bandits.tables import CacheError, read_run

CELL = {"env": {"name": "russo_finite", "d": 3, "n_arms": 5}, "agent": {"name": "lints"}, "horizon": 30}
OTHER = {"env": {"name": "russo_finite", "d": 3, "n_arms": 5}, "agent": {"name": "linucb"}, "horizon": 30}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    out = {}
    for cell in (CELL, OTHER):
        path = paths.run_file("paper", registry.cell_key(cell), 0, 4)
        cli.main(["simulate", "--cell", json.dumps(cell), "--seeds", "0", "4", "--out", path])
        out[registry.cell_key(cell)] = path
    return out


def test_a_run_file_of_its_cell_is_read(runs):
    df = read_run(runs[registry.cell_key(CELL)], CELL)
    assert sorted(set(df["seed"])) == [0, 1, 2, 3] and "_identity" not in df.columns


def test_another_cells_file_copied_in_is_refused(runs):
    mine, other = runs[registry.cell_key(CELL)], runs[registry.cell_key(OTHER)]
    shutil.copyfile(other, mine)
    with pytest.raises(CacheError, match=rf"run file {mine} is not the run of this cell: key '{registry.cell_key(OTHER)}' "
                                         rf"\(expected '{registry.cell_key(CELL)}'\).*; delete it and rerun"):
        read_run(mine, CELL)


def test_a_file_of_another_algorithms_version_is_refused(runs, monkeypatch):
    monkeypatch.setattr(ensemble_bandits, "ALGORITHMS_VERSION", "99")
    with pytest.raises(CacheError, match=r"algorithms '\d+' \(expected '99'\)"):
        read_run(runs[registry.cell_key(CELL)], CELL)


def test_a_file_holding_part_of_its_seeds_is_refused(runs):
    path = runs[registry.cell_key(CELL)]
    with np.load(path) as data:
        cols = {k: data[k] for k in data.files}
    keep = cols["seed"] < 2
    cols = {k: (v[keep] if v.shape and k != "_identity" else v) for k, v in cols.items()}
    np.savez(path, **cols)
    with pytest.raises(CacheError, match=r"seeds present \[0, 1\] \(expected 0\.\.3\)"):
        read_run(path, CELL)


def test_a_file_that_does_not_say_what_it_is_is_refused(runs):
    path = runs[registry.cell_key(CELL)]
    with np.load(path) as data:
        cols = {k: data[k] for k in data.files if k != "_identity"}
    np.savez(path, **cols)
    with pytest.raises(CacheError, match=r"does not say what it is .*; delete it and rerun"):
        read_run(path, CELL)
