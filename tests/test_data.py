"""The data layer: directory checks (existence, SHA-256), downloads, loaders and glmes Table 1.

The datasets ship with the repository (resources/data); these tests read them from there and are
never skipped for want of them: a missing or changed file fails.  Loader tests compare with the
counts that resources/data/README.md states (from the sources' documentation), independently of
this code."""
from __future__ import annotations

import hashlib
import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ensemble_bandits import cells, data, registry, validation
from ensemble_bandits.claims import evaluate
from ensemble_bandits.paper_tables import glmes_table1
from helpers import ROOT, repo_data_dir

DATA = repo_data_dir()
SHIPPED = [f for d in data.DATASETS.values() if d.shipped for f in d.files]
SCHEMA = ROOT / "workflow" / "schemas" / "registry.schema.yaml"


@pytest.mark.parametrize("f", SHIPPED, ids=[f.path for f in SHIPPED])
def test_shipped_file_matches_its_size_and_sha256(f):
    path = DATA / f.path
    assert path.is_file(), f"{path} is missing: the datasets ship with the repository (git restore resources/data)"
    assert path.stat().st_size == f.size
    assert data.sha256(path) == f.sha256


def test_shipped_checksum_lists_match_the_manifest():
    """resources/data/SHA256SUMS and README.md state the manifest's checksums, and nothing else is
    shipped (Covertype is fetched on request)."""
    sums = dict(reversed(line.split()) for line in (DATA / "SHA256SUMS").read_text().splitlines() if line.strip())
    assert sums == {f.path: f.sha256 for f in SHIPPED}
    readme = (DATA / "README.md").read_text()
    for d in data.DATASETS.values():
        for f in d.files:
            assert f"`{f.path}`" in readme and f.sha256 in readme
            if f.size:
                assert f"| {f.size:,} |" in readme
    assert not data.DATASETS["covertype"].shipped
    shipped_dirs = {p.name for p in DATA.iterdir() if p.is_dir()} - {"covertype"}  # covertype: git-ignored, if fetched
    assert shipped_dirs == {d.name for d in data.DATASETS.values() if d.shipped}


def test_nothing_points_at_a_directory_outside_the_repository():
    """A fresh clone has nothing beside it: no code, config, notebook or test may name the shared
    directory next to the development checkout."""
    needle = "../" + "shared"
    hits = []
    skip = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}
    roots = [ROOT / d for d in ("src", "workflow", "config", "notebooks", "tests")]
    files = [ROOT / f for f in ("Snakefile", "pyproject.toml", "environment.yml", "README.md")]
    for root in roots:
        files += [p for p in root.rglob("*") if p.is_file() and not (skip & set(p.parts))
                  and not any(part.endswith(".egg-info") for part in p.parts)]
    for p in files:
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        hits += [f"{p.relative_to(ROOT)}:{i}" for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert not hits, f"{needle} named in: {', '.join(hits)}"


def test_relative_data_dir_is_relative_to_the_project_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                                         # not the project root
    assert data.absolute("resources/data", base=ROOT) == DATA
    assert data.absolute(DATA, base=tmp_path) == DATA                   # absolute stays
    assert data.absolute("x") == tmp_path / "x"                         # no base: the current directory
    cfg = ROOT / "config" / "config.yaml"
    assert data.config_data_dir(cfg) == DATA                            # the default config: the shipped data
    assert data.config_data_dir(cfg, "../elsewhere") == ROOT.parent / "elsewhere"
    assert len(data.verify(["mushroom"], "resources/data", base=ROOT)) == 1


def test_unknown_dataset_is_named():
    with pytest.raises(data.DataError, match=r"unknown dataset\(s\) 'shutle'; known: adult, covertype"):
        data.verify(["shutle"], DATA)


def test_missing_directory_names_the_expected_files(tmp_path):
    with pytest.raises(data.DataError) as err:
        data.verify(["mushroom"], tmp_path / "nowhere")
    msg = str(err.value)
    assert f"data directory {tmp_path / 'nowhere'} does not exist" in msg
    assert "mushroom/agaricus-lepiota.data" in msg and "data fetch mushroom" in msg


def test_missing_file_names_file_and_checksum(tmp_path):
    (tmp_path / "shuttle").mkdir()
    (tmp_path / "shuttle" / "shuttle.trn").write_text("1 2 3\n")
    with pytest.raises(data.DataError) as err:
        data.verify(["shuttle"], tmp_path)
    msg = str(err.value)
    assert "shuttle.trn has SHA-256" in msg  # the first file is checked first, and is wrong
    (tmp_path / "shuttle" / "shuttle.trn").unlink()
    with pytest.raises(data.DataError, match="missing data file .*shuttle.trn .*expected SHA-256 87b24ee9"):
        data.verify(["shuttle"], tmp_path)


def test_verify_accepts_the_shipped_data_and_rejects_a_changed_byte(tmp_path):
    assert len(data.verify(["shuttle", "mushroom", "adult", "hate_speech_davidson"], DATA)) == 6
    copy = tmp_path / "d"
    shutil.copytree(DATA / "mushroom", copy / "mushroom")
    f = copy / "mushroom" / "agaricus-lepiota.data"
    f.chmod(0o644)
    raw = bytearray(f.read_bytes())
    raw[100] ^= 1                               # one bit, same size
    f.write_bytes(bytes(raw))
    with pytest.raises(data.DataError, match="expected e65d0820.*this file is 373704 bytes"):
        data.verify(["mushroom"], copy)


def test_data_check_of_a_fresh_clone_passes_and_lists_covertype_as_absent(tmp_path, capsys, monkeypatch):
    from ensemble_bandits import cli

    monkeypatch.chdir(tmp_path)                                         # config data_dir: relative to the project root
    cli.main(["data", "check", "--configfile", str(ROOT / "config" / "config.yaml")])
    out = capsys.readouterr().out
    for d in data.DATASETS.values():
        for f in d.files if d.shipped else ():
            assert f"OK    {d.name}: {DATA / f.path}" in out
    if not data.present("covertype", DATA):                             # unless fetched into the checkout
        assert "ABSENT covertype: not shipped with the repository" in out
    with pytest.raises(SystemExit, match="1 of 1 dataset"):                # asked for by name: a failure
        cli.main(["data", "check", "covertype", "--data-dir", str(tmp_path)])


def _quiet(_msg):
    pass


def _fake_dataset(tmp_path, monkeypatch, payload: bytes):
    """A dataset 'toy' whose file comes from a local zip archive (file:// URL)."""
    archive = tmp_path / "toy.zip"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("toy/inner/readme.txt", b"ignored")
        z.writestr("toy/inner/values.csv", payload)
    archive.write_bytes(buf.getvalue())
    ds = data.Dataset("toy", "toy", "https://example.invalid", (
        data.DataFile("toy/values.csv", hashlib.sha256(payload).hexdigest(), len(payload),
                      f"{archive.as_uri()}#values.csv"),))
    monkeypatch.setitem(data.DATASETS, "toy", ds)
    return ds


def test_fetch_downloads_checks_and_never_overwrites(tmp_path, monkeypatch):
    _fake_dataset(tmp_path, monkeypatch, b"1,2,3\n")
    target = tmp_path / "data"
    logs = []
    paths = data.fetch(["toy"], target, log=logs.append)
    assert Path(paths[0]).read_bytes() == b"1,2,3\n"
    assert any("installed, checksum OK" in m for m in logs)
    assert not list((target / "toy").glob("*.part"))
    logs.clear()
    data.fetch(["toy"], target, log=logs.append)
    assert "present, checksum OK" in " ".join(logs)
    (target / "toy" / "values.csv").write_bytes(b"edited by hand\n")
    with pytest.raises(data.DataError, match="not replaced: move it away"):
        data.fetch(["toy"], target, log=_quiet)
    assert (target / "toy" / "values.csv").read_bytes() == b"edited by hand\n"


def test_fetch_names_the_file_when_the_source_cannot_be_read(tmp_path, monkeypatch):
    ds = _fake_dataset(tmp_path, monkeypatch, b"1,2,3\n")
    gone = data.DataFile(ds.files[0].path, ds.files[0].sha256, 6, f"{(tmp_path / 'gone.zip').as_uri()}#values.csv")
    monkeypatch.setitem(data.DATASETS, "toy", data.Dataset("toy", "toy", ds.page, (gone,)))
    with pytest.raises(data.DataError, match=r"cannot fetch toy/values.csv from file://.*download it by hand"):
        data.fetch(["toy"], tmp_path / "data", log=_quiet)
    wrong_member = data.DataFile(ds.files[0].path, ds.files[0].sha256, 6, ds.files[0].url.replace("#values", "#other"))
    monkeypatch.setitem(data.DATASETS, "toy", data.Dataset("toy", "toy", ds.page, (wrong_member,)))
    with pytest.raises(data.DataError, match="other.csv is not in the downloaded archive"):
        data.fetch(["toy"], tmp_path / "data", log=_quiet)


def test_fetch_refuses_a_download_with_the_wrong_checksum(tmp_path, monkeypatch):
    ds = _fake_dataset(tmp_path, monkeypatch, b"1,2,3\n")
    bad = data.DataFile(ds.files[0].path, "0" * 64, 6, ds.files[0].url)
    monkeypatch.setitem(data.DATASETS, "toy", data.Dataset("toy", "toy", ds.page, (bad,)))
    with pytest.raises(data.DataError, match="expected 0000.*not installed"):
        data.fetch(["toy"], tmp_path / "data", log=_quiet)
    assert not (tmp_path / "data" / "toy" / "values.csv").exists()


def test_loaders_match_the_counts_stated_with_the_data():
    X, y = data.load_classification("shuttle", DATA)
    assert X.shape == (58_000, 9) and np.bincount(y).tolist()[0] == 34_108 + 11_478
    assert np.bincount(y).tolist() == [34_108 + 11_478, 37 + 13, 132 + 39, 6_748 + 2_155, 2_458 + 809, 6 + 4, 11 + 2]
    X, y = data.load_classification("mushroom", DATA)
    assert X.shape == (8_124, 22) and np.bincount(y).tolist() == [4_208, 3_916]   # e, p
    assert int((X == -1).sum()) == 2_480 and int((X[:, 10] == -1).sum()) == 2_480  # '?' only in stalk-root
    X, y = data.load_classification("adult", DATA)
    assert X.shape == (48_842, 14) and np.bincount(y).tolist() == [24_720 + 12_435, 7_841 + 3_846]
    assert int((X == -1).any(axis=1).sum()) == 2_399 + 1_221                      # records with a '?'
    assert X[:, 0].min() == 17 and X[:, 0].max() == 90                            # age stays numeric


def test_glmes_table1_recomputes_present_datasets_and_marks_absent_ones(tmp_path):
    t = glmes_table1(str(DATA)).set_index("Environment")
    assert t.loc["Shuttle", "matches paper"] == "yes" and t.loc["Shuttle", "rows"] == "58000"
    assert t.loc["Mushroom", "d (recomputed)"] == "22" and t.loc["Adult", "K (recomputed)"] == "2"
    if not data.present("covertype", DATA):
        assert t.loc["Covertype", "matches paper"] == "data absent"
    only = tmp_path / "only-mushroom"
    shutil.copytree(DATA / "mushroom", only / "mushroom")
    t2 = glmes_table1(str(only)).set_index("Environment")
    assert t2["matches paper"].tolist() == ["data absent", "yes", "data absent", "data absent"]


def test_registry_rejects_an_unknown_dataset():
    entry = {"id": "x-tab", "kind": "table", "data": ["shutle"], "static": {"name": "glmes_table1"}}
    fig = {"id": "x-tab", "series": []}
    with pytest.raises(registry.RegistryError, match="figure 'x-tab': unknown dataset"):
        validation.check_figure(entry, fig, {})
    optional = {"id": "x-tab", "kind": "table", "optional_data": ["covtype"], "static": {"name": "glmes_table1"}}
    with pytest.raises(registry.RegistryError, match=r"figure 'x-tab': unknown dataset\(s\) 'covtype'"):
        validation.check_figure(optional, fig, {})
    both = {"id": "x-tab", "kind": "table", "data": ["adult"], "optional_data": ["adult"],
            "static": {"name": "glmes_table1"}}
    with pytest.raises(registry.RegistryError, match="adult listed under both data"):
        validation.check_figure(both, fig, {})


def test_glmes_tab1_builds_without_covertype_and_says_data_absent(tmp_path):
    """Covertype is optional data of glmes-tab1 (not required, so never checked at DAG build); without
    it the table has its row marked "data absent", and the claim (hence REPORT.md) says so: inconclusive,
    since the sentence is about all four datasets."""
    entry = registry.load_registry(ROOT / "config", SCHEMA)["glmes-tab1"]
    assert "covertype" not in entry["data"] and entry["optional_data"] == ["covertype"]
    assert all(data.DATASETS[n].shipped for n in entry["data"])        # a fresh clone builds it
    no_cov = tmp_path / "d"
    for name in entry["data"]:
        shutil.copytree(DATA / name, no_cov / name)
    table = glmes_table1(str(no_cov))
    assert table.set_index("Environment").loc["Covertype", "matches paper"] == "data absent"
    [claim] = evaluate(entry, table, "smoke")
    assert claim["status"] == "inconclusive"
    assert claim["numbers"] == "3 rows checked; matches paper != 'yes' for: none; not checked (data absent): Covertype"
    assert "data absent" in entry["choices"]


class _TorchAgent:
    uses_accelerator = True


def test_gpu_request_only_for_agents_that_can_use_one(monkeypatch):
    from ensemble_bandits import agents

    monkeypatch.setitem(agents.AGENTS, "torch_dummy", _TorchAgent)
    torch_cell = {"agent": {"name": "torch_dummy"}, "env": {}}
    numpy_cell = {"agent": {"name": "lints"}, "env": {}}
    assert cells.gpu_request(torch_cell, 1) == 1 and cells.gpu_request(torch_cell, 2) == 2
    assert cells.gpu_request(torch_cell, 0) == 0                    # not asked: no GPU
    assert cells.gpu_request(numpy_cell, 1) == 0                    # numpy agents never
    assert cells.gpu_request({"experiment": {"name": "coupled_es_phe"}}, 1) == 0


def test_job_device_moves_only_accelerator_agents_without_their_own_device(monkeypatch):
    from ensemble_bandits import agents

    monkeypatch.setitem(agents.AGENTS, "torch_dummy", _TorchAgent)
    torch_cell = {"agent": {"name": "torch_dummy"}, "env": {}}
    pinned = {"agent": {"name": "torch_dummy", "device": "cpu"}, "env": {}}
    numpy_cell = {"agent": {"name": "lints"}, "env": {}}
    assert cells.job_device(torch_cell) is None                      # default: the spec's (cpu)
    assert cells.job_device(torch_cell, "cuda") == "cuda"            # config device: cuda
    assert cells.job_device(torch_cell, "cpu", 1) == "cuda"          # a job given a GPU uses it
    assert cells.job_device(pinned, "cuda", 1) is None               # the spec's own device wins
    assert cells.job_device(numpy_cell, "cuda", 1) is None           # numpy agents never
    assert cells.job_device({"experiment": {"name": "coupled_es_phe"}}, "cuda") is None
    with pytest.raises(ValueError, match="device must be one of"):
        cells.job_device(torch_cell, "tpu")
