"""Committed results are verified when read, not taken on trust (docs/reliability.md, "Committed
results verified on read"): an archive's rows (finite, one per seed and checkpoint, every checkpoint
for every seed, the seeds its metadata says), its metadata, its content hash against its figure's
record; a record's id against its file name and its content against its own hash.  Each failure is
one line naming the file; another figure's bad archive never stops a figure that does not read it."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import timeout_s

from ensemble_bandits import archive, cli, paths
from ensemble_bandits.records import make_record, read_record, record_sha256, write_record

KEY = "aaaaaaaaaaaa"


def _rows(seeds=3, rounds=(10, 20, 30)):
    rng = np.random.default_rng(1)
    rows = [{"seed": s, "t": t, "regret": float(rng.random() * t), "seconds": 0.1 * t} for s in range(seeds)
            for t in rounds]
    return archive.reduce_runs(pd.DataFrame(rows).astype({"seed": np.int64, "t": np.int64}), "full")


def _fig(fid="lines-x", seeds=3):
    cell = {"env": {"name": "russo_finite", "d": 2, "n_arms": 3}, "agent": {"name": "lints"}, "horizon": 30}
    return {"id": fid, "scale": "paper", "entry": {"id": fid, "paper": "lines", "title": "t"}, "seeds": seeds,
            "horizon": 30, "series": [{"key": KEY, "cell": cell, "panel": "", "curve": "A", "vars": {}, "seeds": seeds}]}


def _tamper(path, change):
    """Rewrite the archive at ``path`` with ``change(df)`` applied to its rows, keeping its metadata."""
    table = pq.read_table(path)
    df = change(table.to_pandas())
    import pyarrow as pa

    pq.write_table(pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(table.schema.metadata), path)


@pytest.fixture
def committed(tmp_path):
    """A committed layout (figures/paper/archives, figures/paper/records) with one figure's archive
    and the record its claims job wrote."""
    fig = _fig()
    path = tmp_path / "figures" / "paper" / "archives" / "lines-x.parquet"
    archive.write_archive(fig, {KEY: _rows()}, path)
    record = tmp_path / "figures" / "paper" / "records" / "lines-x.json"
    write_record(make_record(fig, [], run={"commit": "c"}, archive_sha256=archive.content_sha256(path)), record)
    return fig, path, record


TAMPERED = [
    ("a NaN regret", lambda df: df.assign(regret=df["regret"].where(df.index != 4, np.nan)),
     r"has 1 NaN or infinite value\(s\) in column regret"),
    ("an infinite extra column", lambda df: df.assign(seconds=df["seconds"].where(df.index != 0, np.inf)),
     r"has 1 NaN or infinite value\(s\) in column seconds"),
    ("a dropped final checkpoint", lambda df: df[~((df["seed"] == 1) & (df["t"] == 30))],
     r"has other checkpoints for 1 seed\(s\) than for seed 0 \(first: seed 1\): every seed has every checkpoint"),
    ("every final checkpoint dropped", lambda df: df[df["t"] != 30],
     r"lacks its last checkpoint: seed 0 has the rounds \[10, 20\], the cell's horizon is 30"),
    ("a duplicated row", lambda df: pd.concat([df, df.iloc[[2]]], ignore_index=True),
     r"has 1 duplicated \(seed, t\) row\(s\)"),
    ("a dropped seed", lambda df: df[df["seed"] != 2], r"holds seeds \[0, 1\], its metadata says 3 \(0..2\)"),
    ("a seed copied over another", lambda df: df.assign(seed=df["seed"].replace(2, 1)),
     r"holds seeds \[0, 1\], its metadata says 3 \(0..2\)"),
]


@pytest.mark.parametrize("what, change, message", TAMPERED, ids=[t[0] for t in TAMPERED])
def test_an_archive_whose_rows_are_not_what_it_says_is_refused_naming_it(tmp_path, what, change, message):
    fig, path = _fig(), tmp_path / "lines-x.parquet"
    archive.write_archive(fig, {KEY: _rows()}, path)
    _tamper(path, change)
    with pytest.raises(archive.ArchiveError, match=rf"archive {path}: cell {KEY} {message}; restore the committed "
                                                   rf"file with `git checkout -- {path}`"):
        archive.read_cells(path, fig, [KEY])


def test_rescaled_values_fail_against_the_record_naming_both_files(committed):
    fig, path, record = committed
    assert archive.read_cells(path, fig, [KEY])[KEY]["regret"].notna().all()       # as written: read
    _tamper(path, lambda df: df.assign(regret=df["regret"] * 1.5))
    with pytest.raises(archive.ArchiveError, match=rf"archive {path} does not match its record {record} \(content "
                                                   rf"SHA-256 .*restore both with `git checkout -- {path} {record}`"):
        archive.read_cells(path, fig, [KEY])


def test_the_content_hash_does_not_depend_on_the_parquet_writer(tmp_path):
    fig = _fig()
    a, b = tmp_path / "a" / "lines-x.parquet", tmp_path / "b" / "lines-x.parquet"
    archive.write_archive(fig, {KEY: _rows()}, a)
    b.parent.mkdir()
    table = pq.read_table(a)
    pq.write_table(table, b, compression="snappy", row_group_size=2)
    assert a.read_bytes() != b.read_bytes() and archive.content_sha256(a) == archive.content_sha256(b)


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'{"format": 1, "figure": "lines-x", "cells": {"k": 3}}'])
def test_damaged_metadata_is_one_line_naming_the_file(tmp_path, raw):
    fig, path = _fig(), tmp_path / "lines-x.parquet"
    archive.write_archive(fig, {KEY: _rows()}, path)
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({archive.META_KEY: raw}), path)
    with pytest.raises(archive.ArchiveError, match=rf"archive {path} has damaged metadata"):
        archive.read_meta(path, "lines-x")


def test_another_figures_damaged_archive_does_not_stop_this_figure(tmp_path):
    folder = tmp_path / "archives"
    mine, theirs = folder / "lines-x.parquet", folder / "epp-y.parquet"
    archive.write_archive(_fig(), {KEY: _rows()}, mine)
    archive.write_archive(_fig("epp-y"), {KEY: _rows()}, theirs)
    table = pq.read_table(theirs)
    pq.write_table(table.replace_schema_metadata({archive.META_KEY: b"{damaged"}), theirs)
    assert archive.covering(_fig(), archive.committed(folder, "lines-x"), strict=False) == [(str(mine), {KEY: 3})]
    with pytest.raises(archive.ArchiveError, match=rf"archive {theirs} has damaged metadata"):
        archive.covering(_fig("epp-y"), archive.committed(folder, "epp-y"), strict=False)


def test_a_record_under_another_figures_name_is_refused(committed, tmp_path):
    _, _, record = committed
    other = record.parent / "lines-z.json"
    shutil.copy(record, other)
    with pytest.raises(ValueError, match=rf"record {other} is the record of 'lines-x', not of 'lines-z': restore the "
                                         r"committed file with `git checkout --"):
        read_record(other)


def test_a_record_edited_after_its_job_is_refused_and_an_old_one_is_read(committed):
    _, _, record = committed
    data = json.loads(record.read_text())
    assert read_record(record)["sha256"] == data["sha256"]
    record.write_text(json.dumps({**data, "seeds": 30}))
    with pytest.raises(ValueError, match=rf"record {record} was changed after its claims job wrote it"):
        read_record(record)
    record.write_text(json.dumps({k: v for k, v in data.items() if k not in ("sha256", "archive_sha256")}))
    assert read_record(record)["id"] == "lines-x"       # written before records carried hashes


def test_the_report_refuses_a_record_that_does_not_match_its_archive(committed, tmp_path, monkeypatch):
    fig, path, record = committed
    monkeypatch.chdir(tmp_path)
    data = json.loads(record.read_text())
    data = {**data, "archive_sha256": "0" * 64}
    record.write_text(json.dumps({**data, "sha256": record_sha256(data)}))
    config = tmp_path / "config"
    (config / "figures").mkdir(parents=True)
    (config / "figures" / "lines.yaml").write_text("lines-x: {title: t, caption: c, kind: table, static: {name: x}}\n")
    from helpers import ROOT

    with pytest.raises(SystemExit) as err:
        cli.main(["report", "--scale", "paper", "--ids", "lines-x", "--out", str(tmp_path / "R.md"),
                  "--config-dir", str(config),
                  "--schema", str(ROOT / "workflow" / "schemas" / "registry.schema.yaml")])
    msg = str(err.value)
    assert msg.startswith(f"report: archive {paths.archive_file('paper', 'lines-x')} does not match its record "
                          f"{paths.record_file('paper', 'lines-x')}"), msg
    assert not (tmp_path / "R.md").exists()


@pytest.mark.parametrize("staged, final", [
    ("results/paper/published/records/lines-x.json", "figures/paper/records/lines-x.json"),
    ("results/paper/archives/lines-x.parquet", "figures/paper/archives/lines-x.parquet"),
])
def test_a_damaged_staged_file_names_the_committed_path(staged, final):
    hint = paths.restore_hint(staged)
    assert f"{final} is as it was; `git checkout -- {final}` restores the committed one" in hint
    assert f"git checkout -- {staged}" not in hint


@pytest.mark.workflow
def test_a_redraw_from_committed_archives_announces_no_simulation_cost(tmp_path):
    """epp-fig3a's archive holds every cell: its redraw plans no simulation and prints no cost notice."""
    import subprocess
    import sys

    from helpers import ROOT, copy_project

    root = copy_project(tmp_path / "p")
    shutil.copytree(ROOT / "figures" / "paper", root / "figures" / "paper")
    (root / "figures/paper/epp-fig3a.png").unlink()
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "figures/paper/epp-fig3a.png",
                          "--config", "scale=paper"], cwd=root, capture_output=True, text=True, timeout=timeout_s(600))
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "aggregate" in out and "simulate" not in out, out[-3000:]
    assert "Estimated cost of this run" not in out, out[-3000:]


@pytest.mark.workflow
def test_a_damaged_archive_blocks_only_its_own_figure_in_the_workflow(tmp_path):
    """Damaged metadata in epp-fig8a's committed archive: lines-gauss-ts still plans its redraw from its
    own archive (no simulation); epp-fig8a's redraw fails naming the file, in one line, before any job."""
    import subprocess
    import sys

    from helpers import ROOT, copy_project

    root = copy_project(tmp_path / "p")
    shutil.copytree(ROOT / "figures" / "paper", root / "figures" / "paper")
    bad = root / paths.archive_file("paper", "epp-fig8a")
    table = pq.read_table(bad)
    pq.write_table(table.replace_schema_metadata({archive.META_KEY: b"{damaged"}), bad)
    for fid in ("lines-gauss-ts", "epp-fig8a"):
        (root / f"figures/paper/{fid}.png").unlink()

    def dry_run(fid):
        res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", f"figures/paper/{fid}.png",
                              "--config", "scale=paper"], cwd=root, capture_output=True, text=True, timeout=timeout_s(600))
        return res.returncode, res.stdout + res.stderr

    rc, out = dry_run("lines-gauss-ts")
    assert rc == 0 and "aggregate" in out and "simulate" not in out, out[-3000:]
    rc, out = dry_run("epp-fig8a")
    assert rc != 0 and f"archive {paths.archive_file('paper', 'epp-fig8a')} has damaged metadata" in out, out[-3000:]
    assert "JSONDecodeError" not in out


def test_every_committed_record_matches_its_committed_archive():
    """The committed records state the content hash of the committed archives beside them (after a
    merge that changed one but not the other, redraw the figure or run tools/stamp_records.py on the
    record written before hashes), and each reads as what its name says."""
    from helpers import ROOT

    folder = ROOT / "figures" / "paper"
    for path in sorted((folder / "records").glob("*.json")):
        record = read_record(path)
        data = folder / "archives" / f"{record['id']}.parquet"
        if data.exists() and "archive_sha256" in record:
            archive.matches_record(data, archive.read_meta(data, record["id"]))
