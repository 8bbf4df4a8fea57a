"""Archives: a figure's compact per-seed rows, committed at paper scale, from which a fresh clone
redraws the figure and re-decides its claims without simulating (ensemble_bandits.archive)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ensemble_bandits import archive, cells, paths
from ensemble_bandits.aggregate import cell_frames, figure_table
from helpers import ROOT, copy_project, timeout_s


def _runs(seeds, rounds=(10, 20, 30)):
    rng = np.random.default_rng(0)
    rows = [{"seed": s, "t": t, "regret": float(rng.random() * t), "seconds": 0.1 * t} for s in range(seeds)
            for t in rounds]
    return pd.DataFrame(rows).astype({"seed": np.int64, "t": np.int64})


def _fig(mode="full", seeds=3):
    cell = {"env": {"name": "russo_finite", "d": 2, "n_arms": 3}, "agent": {"name": "lints"}, "horizon": 30}
    entry = {"id": "lines-x", "archive": mode} if mode != "full" else {"id": "lines-x"}
    return {"id": "lines-x", "scale": "paper", "entry": entry,
            "series": [{"key": "aaaaaaaaaaaa", "cell": cell, "panel": "", "curve": "A", "vars": {}, "seeds": seeds}]}


def test_compact_stores_float32_and_int32_and_finals_keeps_last_rounds():
    df = archive.reduce_runs(_runs(2), "full")
    assert df["regret"].dtype == np.float32 and df["seed"].dtype == np.int32 and df["t"].dtype == np.int32
    fin = archive.reduce_runs(_runs(2), "finals")
    assert fin["t"].tolist() == [30, 30] and fin["seed"].tolist() == [0, 1]


def test_an_archive_round_trips_and_says_what_it_is(tmp_path):
    fig, path = _fig(), tmp_path / "lines-x.parquet"
    frames = {"aaaaaaaaaaaa": archive.reduce_runs(_runs(3), "full")}
    archive.write_archive(fig, frames, path)
    meta = archive.read_meta(path, "lines-x")
    assert meta["cells"] == {"aaaaaaaaaaaa": {"seeds": 3, "algorithms": cells.algorithms_stamp(fig["series"][0]["cell"])}}
    assert archive.usable_keys(path, fig) == ["aaaaaaaaaaaa"]
    back = archive.read_cells(path, fig, ["aaaaaaaaaaaa"])
    pd.testing.assert_frame_equal(back["aaaaaaaaaaaa"], frames["aaaaaaaaaaaa"])
    pd.testing.assert_frame_equal(figure_table(fig, 50, frames=back), figure_table(fig, 50, frames=frames))
    import pyarrow.parquet as pq

    col = {c.path_in_schema: c for c in (pq.ParquetFile(path).metadata.row_group(0).column(i) for i in range(5))}
    assert all("BYTE_STREAM_SPLIT" in col[n].encodings for n in ("regret", "seconds"))   # a third smaller


def test_cells_of_another_version_more_seeds_or_another_mode_are_not_taken(tmp_path):
    fig, path = _fig(), tmp_path / "lines-x.parquet"
    archive.write_archive(fig, {"aaaaaaaaaaaa": archive.reduce_runs(_runs(3), "full")}, path)
    assert archive.usable_keys(path, _fig(seeds=4)) == []              # the figure now wants 4 seeds
    assert archive.usable_keys(path, _fig(seeds=2)) == ["aaaaaaaaaaaa"]  # fewer: a prefix
    assert archive.usable_keys(path, _fig(mode="finals")) == []
    meta = archive.read_meta(path, "lines-x")
    meta["cells"]["aaaaaaaaaaaa"]["algorithms"] = "0"
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    pq.write_table(t.replace_schema_metadata({archive.META_KEY: json.dumps(meta).encode()}), path)
    assert archive.usable_keys(path, fig) == []


def test_a_file_that_is_not_this_figures_archive_is_refused(tmp_path):
    path = tmp_path / "x.parquet"
    _runs(2).to_parquet(path)
    with pytest.raises(archive.ArchiveError, match="is not an archive of this project"):
        archive.read_meta(path, "lines-x")
    archive.write_archive(_fig(), {"aaaaaaaaaaaa": archive.reduce_runs(_runs(3), "full")}, path)
    with pytest.raises(archive.ArchiveError, match="is of figure 'lines-x', not 'lines-y'"):
        archive.read_meta(path, "lines-y")
    path.write_bytes(b"garbage")
    with pytest.raises(archive.ArchiveError, match=r"is unreadable .* restore the committed file with `git checkout -- "):
        archive.read_meta(path, "lines-x")


def test_cell_frames_take_archived_cells_and_read_run_files_for_the_others(tmp_path, monkeypatch):
    fig = _fig()
    other = dict(fig["series"][0], key="bbbbbbbbbbbb", curve="B")
    fig["series"].append(other)
    monkeypatch.chdir(tmp_path)
    from ensemble_bandits.atomic import write_columns_atomic
    from ensemble_bandits.cells import run_identity

    runs = _runs(3)
    write_columns_atomic({**{c: runs[c].to_numpy() for c in runs}, **run_identity(other["cell"], range(3))},
                         paths.run_file("paper", "bbbbbbbbbbbb", 0, 3))
    archived = {"aaaaaaaaaaaa": archive.reduce_runs(_runs(3), "full")}
    frames = cell_frames(fig, 50, archived)
    assert set(frames) == {"aaaaaaaaaaaa", "bbbbbbbbbbbb"}
    pd.testing.assert_frame_equal(frames["bbbbbbbbbbbb"], archive.reduce_runs(runs, "full"))


def test_an_archive_of_a_cells_first_seeds_supplies_them_at_a_block_edge_and_run_files_the_rest(tmp_path,
                                                                                                   monkeypatch):
    """A fresh study's seed ranges (ensemble_bandits.fresh): the committed archive holds seeds 0..2, the
    figure now runs 0..4 cut at 3; the archive supplies 0..2 and only the run file of 3..4 is read."""
    path = tmp_path / "lines-x.parquet"
    archive.write_archive(_fig(), {"aaaaaaaaaaaa": archive.reduce_runs(_runs(3), "full")}, path)
    more = _fig(seeds=5)
    assert archive.usable(path, more) == {}                            # no block edge at 3: not taken
    more["series"][0]["cuts"] = [3, 4, 5]
    assert archive.usable(path, more) == {"aaaaaaaaaaaa": 3}
    assert archive.covering(more, [path]) == [(str(path), {"aaaaaaaaaaaa": 3})]
    monkeypatch.chdir(tmp_path)
    from ensemble_bandits.atomic import write_columns_atomic
    from ensemble_bandits.cells import run_identity

    runs = _runs(5)
    fresh = runs[runs["seed"] >= 3]
    cell = more["series"][0]["cell"]
    write_columns_atomic({**{c: fresh[c].to_numpy() for c in fresh}, **run_identity(cell, range(3, 5))},
                         paths.run_file("paper", "aaaaaaaaaaaa", 3, 5))
    held = archive.read_covering(more, archive.covering(more, [path]))
    files = [paths.run_file("paper", "aaaaaaaaaaaa", a, b) for a, b in ((0, 3), (3, 5))]   # 0..2: never read
    frames = cell_frames(more, 50, held, files=files)
    pd.testing.assert_frame_equal(frames["aaaaaaaaaaaa"], archive.reduce_runs(runs, "full"))


def test_a_cell_missing_from_the_figures_archive_is_taken_from_another_figures(tmp_path):
    own = _fig()
    own["series"].append(dict(own["series"][0], key="bbbbbbbbbbbb", curve="B"))
    other = {**_fig(), "id": "lines-y", "entry": {"id": "lines-y"}}
    other["series"] = [dict(own["series"][0], key="bbbbbbbbbbbb"), dict(own["series"][0], key="cccccccccccc")]
    rows = {k: archive.reduce_runs(_runs(3, rounds=(10 + i, 30)), "full") for i, k in enumerate("abc")}
    mine, theirs = tmp_path / "lines-x.parquet", tmp_path / "lines-y.parquet"
    archive.write_archive(own | {"series": own["series"][:1]}, {"aaaaaaaaaaaa": rows["a"]}, mine)
    archive.write_archive(other, {"bbbbbbbbbbbb": rows["b"], "cccccccccccc": rows["c"]}, theirs)
    assert archive.committed(tmp_path, "lines-x") == [str(mine), str(theirs)]
    sources = archive.covering(own, archive.committed(tmp_path, "lines-x"))
    assert sources == [(str(mine), {"aaaaaaaaaaaa": 3}), (str(theirs), {"bbbbbbbbbbbb": 3})]
    back = archive.read_covering(own, sources)
    pd.testing.assert_frame_equal(back["bbbbbbbbbbbb"], rows["b"])
    with pytest.raises(archive.ArchiveError, match="is of figure 'lines-y', not 'lines-x'"):
        archive.read_cells(theirs, own, ["bbbbbbbbbbbb"])       # only as another figure's, by name
    (tmp_path / "lines-z.parquet").write_bytes(b"garbage")       # another figure's damaged archive
    assert archive.covering(own, archive.committed(tmp_path, "lines-x"), strict=False) == sources
    with pytest.raises(archive.ArchiveError, match="unreadable"):
        archive.covering(own, archive.committed(tmp_path, "lines-x"))
    mine.write_bytes(b"garbage")                                  # the figure's own: always an error
    with pytest.raises(archive.ArchiveError, match="unreadable"):
        archive.covering(own, archive.committed(tmp_path, "lines-x"), strict=False)


def _committed_archives():
    return sorted(p.stem for p in (ROOT / "figures" / "paper" / "archives").glob("*.parquet"))


def test_committed_archives_are_archives_of_their_figures_within_the_budget():
    names = _committed_archives()
    total = 0
    for fid in names:
        path = ROOT / "figures" / "paper" / "archives" / f"{fid}.parquet"
        meta = archive.read_meta(path, fid)
        assert meta["scale"] == "paper" and meta["cells"]
        total += path.stat().st_size
    assert total <= 40e6, f"archives take {total / 1e6:.1f} MB, over the 40 MB budget"


@pytest.mark.workflow
def test_a_committed_paper_figure_is_rebuilt_from_its_archive_bit_for_bit(tmp_path):
    """In a fresh copy (no results/), the figure, its record and its archive come back from the
    committed archive alone: no simulate job, the same PNG and claims, the same archive bytes."""
    fid = "lines-gauss-ts"
    if fid not in _committed_archives():
        pytest.fail(f"{fid} has no committed archive (figures/paper/archives/{fid}.parquet)")
    project = copy_project(tmp_path / "p")
    shutil.copytree(ROOT / "figures" / "paper", project / "figures" / "paper")
    committed = {p: (project / p).read_bytes() for p in
                 (f"figures/paper/{fid}.png", paths.archive_file("paper", fid))}
    record = json.loads((project / paths.record_file("paper", fid)).read_text())
    (project / paths.record_file("paper", fid)).unlink()
    (project / f"figures/paper/{fid}.png").unlink()
    res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", paths.record_file("paper", fid),
                          f"figures/paper/{fid}.png", paths.archive_file("paper", fid), "--config", "scale=paper",
                          "--forcerun", "publish"], cwd=project, capture_output=True, text=True, timeout=timeout_s(600))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "rule simulate" not in out and "simulate_group" not in out, out[-3000:]
    for p, data in committed.items():
        assert (project / p).read_bytes() == data, p
    again = json.loads((project / paths.record_file("paper", fid)).read_text())
    stamps = ("run", "redecided", "sha256", "archive_sha256")   # provenance, and the hashes a record carries
    assert {k: v for k, v in again.items() if k not in stamps} == {k: v for k, v in record.items() if k not in stamps}
    assert again["archive_sha256"] == archive.content_sha256(project / paths.archive_file("paper", fid))
def _git(project, *args):
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout


@pytest.mark.workflow
def test_a_redraw_from_the_archive_leaves_the_committed_tree_clean_and_keeps_provenance(tmp_path):
    """docs/scales.md's redraw in a committed copy: the record, PNG and PDF of a paper figure rebuilt
    from its committed archive leave `git status` clean (the record keeps the run that made the
    archive); where a number changes (here: the record in place was edited), the record says both the
    archive's run and the commit that re-decided it."""
    fid = "lines-gauss-ts"
    project = copy_project(tmp_path / "p")
    shutil.copytree(ROOT / "figures" / "paper", project / "figures" / "paper")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fresh clone")
    record_path = project / paths.record_file("paper", fid)
    archive_run = json.loads(record_path.read_text())["run"]
    targets = [paths.record_file("paper", fid), f"figures/paper/{fid}.png", f"figures/paper/{fid}.pdf"]

    def redraw():
        res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *targets, "--config", "scale=paper",
                              "--forcerun", "claims", "figure"], cwd=project, capture_output=True, text=True,
                             timeout=timeout_s(600))
        out = res.stdout + res.stderr
        assert res.returncode == 0, out[-3000:]
        assert "rule simulate" not in out and "simulate_group" not in out, out[-3000:]
        published = r"rule publish:\n(?:\s+\w+: .*\n)*?\s+output: " + re.escape(paths.record_file("paper", fid))
        assert re.search(published, out), out[-3000:]           # the record was rebuilt, not left alone

    redraw()
    assert _git(project, "status", "--porcelain", "--untracked-files=no") == ""

    edited = json.loads(record_path.read_text())
    edited["claims"][0]["numbers"] += " (edited)"
    record_path.write_text(json.dumps(edited, indent=1, ensure_ascii=False) + "\n")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "a record decided otherwise")
    head = _git(project, "rev-parse", "--short", "HEAD").strip()
    redraw()
    again = json.loads(record_path.read_text())
    assert again["run"] == archive_run, "the record lost the run that made the archive"
    assert again["redecided"]["commit"] == head
    assert "(edited)" not in again["claims"][0]["numbers"]
