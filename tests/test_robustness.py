"""Robustness of the workflow under faults, in scratch copies of the project (smoke scale).

Marked ``workflow`` (about two minutes): ``pytest -m "not workflow"`` skips it.

1. Split invariance: a cell's run files hold bit-identical rows however its seeds are split into
   jobs (``seeds_per_job``), however many cores run them, and whether the cell is built alone or
   alongside other figures' cells.
2. Kill and resume: SIGKILL of the whole Snakemake process group mid-run leaves only complete run
   files; finished ones are kept (not recomputed).
3. Minimal recompute: editing one hyper-parameter of one curve schedules exactly that curve's
   cells and the aggregate, claims and figure jobs of the figure showing them.
4. Bad input: each fails with one message naming the cause, and nothing already computed is lost.

``BAD_INPUTS`` (input -> message) is the table printed in docs/reliability.md; tests/test_docs.py keeps the
two in step.
"""
from __future__ import annotations

import glob
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ensemble_bandits import registry
from ensemble_bandits.tables import read_run
from helpers import copy_project, repo_data_dir, timeout_s

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow

CHEAP = "results/smoke/tables/lines-gauss-ts.parquet"      # 2 cells x 4 seeds x 200 rounds
SMOKE = ("--config", "scale=smoke")


def _snakemake(cwd, *args, cores=2, idle_s=600):
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), *args]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s(idle_s))
    res.output = res.stdout + res.stderr
    return res


def _ok(res):
    assert res.returncode == 0, res.output[-6000:]
    return res


def _keys(project, fid, scale="smoke"):
    cfg = registry.with_defaults(registry.load_yaml(project / "config/config.yaml"))
    reg = registry.load_registry(project / "config", project / "workflow/schemas/registry.schema.yaml")
    fig = registry.resolve(reg[fid], scale, cfg["scales"])
    return {s["curve"] + " | " + s["panel"]: s["key"] for s in fig["series"]}


def _cell_rows(project, key, scale="smoke"):
    """All rows of a cell's run files, sorted by (seed, t); wall time (``seconds``) dropped."""
    files = sorted(glob.glob(str(project / f"results/{scale}/runs/{key}/seeds-*.npz")))
    assert files, f"no run files for cell {key}"
    df = __import__("pandas").concat([read_run(f) for f in files], ignore_index=True)
    df = df.drop(columns=["seconds"]).sort_values(["seed", "t"], kind="stable").reset_index(drop=True)
    return df


def _mtimes(project, scale="smoke"):
    return {f: os.stat(f).st_mtime_ns for f in glob.glob(str(project / f"results/{scale}/runs/*/seeds-*.npz"))}


def _job_counts(output: str) -> dict:
    """The `job count` table of a (dry) run."""
    counts = {}
    for rule, n in re.findall(r"^(\w+)\s+(\d+)\s*$", output, flags=re.M):
        if rule != "total":
            counts[rule] = int(n)
    return counts


# --------------------------------------------------------------------------------------------
# 1. split invariance
# --------------------------------------------------------------------------------------------

def test_split_invariance_through_the_workflow(tmp_path):
    """Same rows for seeds_per_job 1 vs 4, --cores 1 vs 2, one table alone vs three figures at once."""
    runs = {
        "spj1-cores1-alone": (1, 1, [CHEAP]),
        "spj4-cores2-alone": (4, 2, [CHEAP]),
        "spj2-cores2-with-others": (2, 2, [CHEAP, "results/smoke/tables/phe-fig1.parquet",
                                           "results/smoke/tables/lines-equiv.parquet"]),
    }
    rows = {}
    for name, (per_job, cores, targets) in runs.items():
        project = copy_project(tmp_path / name)
        _ok(_snakemake(project, *targets, "--config", "scale=smoke", f"seeds_per_job={per_job}", cores=cores))
        keys = _keys(project, "lines-gauss-ts")
        n_files = {k: len(glob.glob(str(project / f"results/smoke/runs/{k}/seeds-*.npz"))) for k in keys.values()}
        assert set(n_files.values()) == {-(-4 // per_job)}, n_files        # the split really differs
        rows[name] = {label: _cell_rows(project, key) for label, key in keys.items()}
    ref_name, ref = next(iter(rows.items()))
    for name, got in rows.items():
        assert got.keys() == ref.keys()
        for label in ref:
            a, b = ref[label], got[label]
            assert list(a.columns) == list(b.columns), (name, label)
            assert sorted(a["seed"].unique()) == [0, 1, 2, 3]
            for col in a.columns:
                assert np.array_equal(a[col].to_numpy(), b[col].to_numpy()), (ref_name, name, label, col)


# --------------------------------------------------------------------------------------------
# 2. kill and resume
# --------------------------------------------------------------------------------------------

def test_kill_and_resume(tmp_path):
    """SIGKILL of the whole process group mid-run, then resume.

    What a user types after a kill (or a power loss)::

        snakemake --unlock <targets> --config ...      # Snakemake refuses to run until unlocked:
                                                       # "Directory cannot be locked ... --unlock"
        snakemake --cores 2 <targets> --config ...     # resumes; finished run files are kept

    No flag beyond those: the workflow profile Snakemake reads by itself (profiles/default; a copy of
    the project has it) sets ``rerun-incomplete``, so a job killed after renaming its run file into
    place but before exiting is rerun rather than stopping the resume; and a simulation job writes
    its run file through a temp file and a rename, so no half-written file carries the final name.
    This test runs exactly the two commands above.
    """
    project = copy_project(tmp_path / "kill")
    target = ["results/smoke/tables/lines-msweep.parquet", "--config", "scale=smoke", "seeds_per_job=1"]
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", *target], cwd=project,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    runs, logs = project / "results/smoke/runs", project / "results/smoke/logs/simulate"
    deadline, started, done = time.monotonic() + (timeout_s(120) or math.inf), [], []
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            done = glob.glob(str(runs / "*/seeds-*.npz"))
            started = [p for p in glob.glob(str(logs / "*.log"))
                       if not (runs / "{}/seeds-{}-{}.npz".format(*Path(p).stem.rsplit("-", 2))).exists()]
            if len(done) >= 2 and started:
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert len(done) >= 2 and started

    # only complete, readable run files carry the final name; leftovers can only be temp files
    finished = _mtimes(project)
    assert len(finished) >= 2
    for f in finished:
        assert len(read_run(f)) > 0
    for f in glob.glob(str(runs / "*/*")):
        assert f.endswith((".npz", ".tmp", "cell.json")), f

    jobs = len(registry.figure_runs(registry.resolve(
        registry.load_registry(project / "config", project / "workflow/schemas/registry.schema.yaml")["lines-msweep"],
        "smoke", registry.load_yaml(project / "config/config.yaml")["scales"]), 1))
    assert len(finished) < jobs

    locked = _snakemake(project, *target)
    assert locked.returncode != 0 and "Directory cannot be locked" in locked.output and "--unlock" in locked.output
    _ok(_snakemake(project, "--unlock", *target))
    rerun = _ok(_snakemake(project, *target))                     # as documented: no extra flag
    assert _job_counts(rerun.output).get("simulate") == jobs - len(finished), rerun.output[-3000:]
    after = _mtimes(project)
    assert len(after) == jobs
    assert {f: after[f] for f in finished} == finished            # finished files were not recomputed
    assert (project / "results/smoke/tables/lines-msweep.parquet").is_file()


# --------------------------------------------------------------------------------------------
# 3. minimal recompute
# --------------------------------------------------------------------------------------------

def test_minimal_recompute_after_a_hyper_parameter_edit(tmp_path):
    project = copy_project(tmp_path / "recompute")
    args = ["figures/smoke/phe-fig1.pdf", "figures/smoke/phe-runtime.pdf", "--config", "scale=smoke",
            "seeds_per_job=4"]
    _ok(_snakemake(project, *args))
    assert "Nothing to be done" in _ok(_snakemake(project, "-n", *args)).output
    before = _keys(project, "phe-fig1")
    reg = project / "config/figures/phe.yaml"
    text = reg.read_text()
    old = "agent: {name: linucb, lam: 1.0, beta: oful, R: 0.5,"
    assert text.count(old) == 1
    reg.write_text(text.replace(old, "agent: {name: linucb, lam: 1.0, beta: oful, R: 0.6,"))
    after = _keys(project, "phe-fig1")
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {f"LinUCB | d = {d}" for d in (5, 10, 20)}

    dry = _ok(_snakemake(project, "-n", *args))
    assert _job_counts(dry.output) == {"simulate": 3, "resolve_figure": 1, "aggregate": 1, "claims": 1, "figure": 1,
                                       "publish_figure": 1}, \
        dry.output[-4000:]
    simulated = set(re.findall(r"output: results/smoke/runs/(\w+)/seeds-0-4\.npz", dry.output))
    assert simulated == {after[k] for k in changed}
    outputs = re.findall(r"^\s*output: (.*)$", dry.output, flags=re.M)
    assert any("figures/smoke/phe-fig1.pdf" in o for o in outputs)
    assert not any("phe-runtime" in o for o in outputs), outputs


# --------------------------------------------------------------------------------------------
# 4. bad input
# --------------------------------------------------------------------------------------------

def _edit(path: Path, section: str, old: str, new: str):
    """Replace ``old`` by ``new`` once inside the registry entry ``section`` of ``path``."""
    text = path.read_text()
    start = text.index(f"\n{section}:\n")
    end = text.find("\n\n", start + 2)
    end = len(text) if end < 0 else end
    seg = text[start:end]
    assert old in seg, (section, old)
    path.write_text(text[:start] + seg.replace(old, new, 1) + text[end:])


LINES = "config/figures/lines.yaml"
GAUSS = "lines-gauss-ts"

# (case, what the user gives, how: (registry edit or None, snakemake arguments), the message)
BAD_INPUTS = [
    ("unknown scale", "`--config scale=huge`", (None, [CHEAP, "--config", "scale=huge"]),
     "ValidationError: 'huge' is not one of ['smoke', 'default', 'paper']"),
    ("unknown figure id", "target `figures/smoke/phe-fig99.pdf`",
     (None, ["figures/smoke/phe-fig99.pdf", *SMOKE]), "unknown figure id 'phe-fig99'; known ids: epp-fig1,"),
    ("unknown agent", "registry `agent: {name: lintz, ...}`", ((GAUSS, "name: lints", "name: lintz"), [CHEAP, *SMOKE]),
     "invalid figure registry: figure 'lines-gauss-ts', panel 'd = 10, K = 100', curve 'LinTS': unknown agent "
     "'lintz'; known agents: egreedy, "),
    ("unknown environment", "registry `env: {name: sphere_gauss, ...}`",
     ((GAUSS, "name: sphere_gaussian", "name: sphere_gauss"), [CHEAP, *SMOKE]),
     "unknown environment 'sphere_gauss'; known environments: compact_sphere, "),
    ("unknown distribution", "registry `perturbation: gausian`",
     ((GAUSS, "perturbation: gaussian", "perturbation: gausian"), [CHEAP, *SMOKE]),
     "unknown distribution 'gausian'; known: gaussian, rademacher, uniform, binomial, none"),
    ("unknown hyper-parameter", "registry `prior_variance: 0.25` (LinTS)",
     ((GAUSS, "prior_var: 0.25", "prior_variance: 0.25"), [CHEAP, *SMOKE]),
     "agent 'lints': unknown hyper-parameter(s) ['prior_variance']; allowed: ['prior_var', 'noise_sd', 'sampler']"),
    ("wrong type in config", "`--config seeds_per_job=many`", (None, [CHEAP, "--config", "scale=smoke",
                                                                     "seeds_per_job=many"]),
     "ValidationError: 'many' is not of type 'integer'"),
    ("wrong type in registry", "registry `seeds: \"many\"`", ((GAUSS, "seeds: 300", 'seeds: "many"'), [CHEAP, *SMOKE]),
     "invalid figure registry: config/figures/lines.yaml: figure 'lines-gauss-ts', key seeds: 'many' is not of "
     "type 'integer'"),
    ("out of range in config", "`--config seeds_per_job=0`", (None, [CHEAP, "--config", "scale=smoke",
                                                                    "seeds_per_job=0"]),
     "ValidationError: 0 is less than the minimum of 1"),
    ("out of range in registry", "registry `horizon: -5`", ((GAUSS, "horizon: 2000", "horizon: -5"), [CHEAP, *SMOKE]),
     "invalid figure registry: config/figures/lines.yaml: figure 'lines-gauss-ts', key horizon: -5 is less than "
     "the minimum of 1"),
    ("claim naming a missing curve", "registry claim `b: LinTX`", ((GAUSS, "b: LinTS", "b: LinTX"), [CHEAP, *SMOKE]),
     "invalid figure registry: lines-gauss-ts: claim 'remark5-ts' names curve(s) ['LinTX'] that the figure does "
     "not have; curves: ['generalised LinPHE (Gaussian)', 'LinTS']"),
]
CORRUPT = ("corrupted cached run file", "a truncated `results/<scale>/runs/<key>/seeds-a-b.npz`",
           "cached result results/smoke/runs/<key>/seeds-0-4.npz is unreadable (...); delete it and rerun")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project = copy_project(tmp_path_factory.mktemp("bad-input"))
    _ok(_snakemake(project, CHEAP, *SMOKE))
    return project


@pytest.mark.parametrize("case,given,how,message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_fails_with_a_clear_message(built, case, given, how, message):
    edit, args = how
    registry = built / LINES
    saved = registry.read_text()
    before = _mtimes(built)
    assert before
    try:
        if edit:
            _edit(registry, *edit)
        res = _snakemake(built, *args)
    finally:
        registry.write_text(saved)
    assert res.returncode != 0
    assert message in res.output, res.output[-4000:]
    assert "Traceback (most recent call last)" not in res.output          # no raw Python traceback
    assert _mtimes(built) == before                                      # nothing computed was lost


def test_corrupted_run_file_names_the_file_and_recomputes_once_deleted(built):
    key = _keys(built, GAUSS)["LinTS | d = 10, K = 100"]
    bad = built / f"results/smoke/runs/{key}/seeds-0-4.npz"
    others = {f: m for f, m in _mtimes(built).items() if Path(f) != bad}
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    res = _snakemake(built, CHEAP, *SMOKE, "--forcerun", "aggregate")   # no --show-failed-logs
    assert res.returncode != 0
    expected = f"cached result results/smoke/runs/{key}/seeds-0-4.npz is unreadable ("
    cause = next((ln for ln in res.output.splitlines() if ln.startswith("error: ")), "")
    hint = ("); delete it and rerun, then rebuild it and what follows from it: snakemake --cores 2 "
            "figures/smoke/lines-gauss-ts.pdf --forcerun aggregate --config scale=smoke")
    assert expected in cause and hint in cause, res.output[-4000:]   # on the terminal
    assert cause.endswith("[log: results/smoke/logs/aggregate/lines-gauss-ts.log]")
    log = (built / "results/smoke/logs/aggregate/lines-gauss-ts.log").read_text()
    assert expected in log                                                 # also without --show-failed-logs
    assert "results/smoke/logs/aggregate/lines-gauss-ts.log" in _snakemake(built, CHEAP, *SMOKE).output
    bad.unlink()
    rerun = _ok(_snakemake(built, "figures/smoke/lines-gauss-ts.pdf", "--forcerun", "aggregate", *SMOKE))   # as told
    assert _job_counts(rerun.output).get("simulate") == 1
    assert len(read_run(bad)) > 0
    assert {f: m for f, m in _mtimes(built).items() if Path(f) != bad} == others


# --------------------------------------------------------------------------------------------
# 4b. bad data directories: one message naming the directory or file (with the expected SHA-256)
# --------------------------------------------------------------------------------------------

DATA_FIG = "figures/smoke/glmes-tab1.pdf"
DATA_TABLE = "results/smoke/tables/glmes-tab1.parquet"
MUSHROOM = "mushroom/agaricus-lepiota.data"
MUSHROOM_SHA = "e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e"


def _no_data_dir(base: Path) -> Path:
    return base / "no-such-dir"


def _without_mushroom(base: Path) -> Path:
    d = base / "data-missing"
    shutil.copytree(repo_data_dir(), d)
    os.chmod(d / "mushroom", 0o755)
    (d / MUSHROOM).unlink()
    return d


def _corrupt_mushroom(base: Path) -> Path:
    d = base / "data-corrupt"
    shutil.copytree(repo_data_dir(), d)
    os.chmod(d / MUSHROOM, 0o644)
    with open(d / MUSHROOM, "ab") as f:
        f.write(b"p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u\n")
    return d


# (case, what the user gives, how to make the directory, the message; <dir> = that directory)
DATA_INPUTS = [
    ("data directory missing", "`--config data_dir=<dir>` that does not exist", _no_data_dir,
     "glmes-tab1 cannot be built: data directory <dir> does not exist (config data_dir=<dir>); it must hold "
     "shuttle/shuttle.trn, shuttle/shuttle.tst, mushroom/agaricus-lepiota.data, adult/adult.data, adult/adult.test."),
    ("data file missing", "`data_dir` without `mushroom/agaricus-lepiota.data`", _without_mushroom,
     f"glmes-tab1 cannot be built: missing data file <dir>/{MUSHROOM} (dataset mushroom: Mushroom, UCI id 73; "
     f"expected SHA-256 {MUSHROOM_SHA}); get it with `python -m ensemble_bandits.cli data fetch mushroom "
     "--data-dir <dir>`"),
    ("data checksum mismatch", "`data_dir` whose `mushroom/agaricus-lepiota.data` has an extra line",
     _corrupt_mushroom,
     f"glmes-tab1 cannot be built: data file <dir>/{MUSHROOM} has SHA-256 <got>, expected {MUSHROOM_SHA} "
     "(dataset mushroom: Mushroom, UCI id 73, 373704 bytes; this file is 373750 bytes): it is corrupt or a "
     "different version; replace it"),
]


@pytest.fixture(scope="module")
def built_data(tmp_path_factory):
    project = copy_project(tmp_path_factory.mktemp("bad-data"))
    _ok(_snakemake(project, DATA_FIG, *SMOKE))
    return project


@pytest.mark.parametrize("case,given,make,message", DATA_INPUTS, ids=[b[0] for b in DATA_INPUTS])
def test_bad_data_directory_fails_with_the_file_and_checksum(built_data, tmp_path, case, given, make, message):
    table = built_data / DATA_TABLE
    before = table.stat().st_mtime_ns
    data_dir = make(tmp_path)
    res = _snakemake(built_data, DATA_FIG, *SMOKE, f"data_dir={data_dir}")
    assert res.returncode != 0
    pattern = re.escape(message.replace("<dir>", str(data_dir))).replace(re.escape("<got>"), "[0-9a-f]{64}")
    assert re.search(pattern, res.output), res.output[-4000:]
    assert "Nothing was run or deleted; to build the rest without it: --config skip='[glmes-tab1]'" in res.output
    assert "Traceback (most recent call last)" not in res.output
    assert table.stat().st_mtime_ns == before                           # nothing computed was lost
    # the good directory still works, and finds nothing to redo
    again = _ok(_snakemake(built_data, "-n", DATA_FIG, *SMOKE))
    assert "Nothing to be done" in again.output


def test_data_fetch_rule_checks_the_files_it_finds(built_data):
    """--config data_fetch=true: one fetch_data job per dataset; files already there are checked,
    not downloaded again, and recorded."""
    res = _ok(_snakemake(built_data, DATA_FIG, *SMOKE, "data_fetch=true"))
    assert _job_counts(res.output).get("fetch_data") == 3
    for name in ("shuttle", "mushroom", "adult"):
        stamp = (built_data / f"results/data/{name}.sha256").read_text()
        assert stamp.startswith(f"OK    {name}: {built_data / 'resources' / 'data'}"), stamp
        assert "present, checksum OK" in (built_data / f"results/logs/data/{name}.log").read_text()
