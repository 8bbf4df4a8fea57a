"""End to end: the whole workflow at smoke scale in a scratch copy of the project.

Marked ``workflow`` (several minutes): ``pytest -m "not workflow"`` skips it.  The smoke run's
wall-clock limit (2,400 s on an idle 2-core machine) is scaled to the machine's measured speed and
load (helpers.timeout_s; EB_TEST_TIMEOUT_FACTOR overrides it).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ensemble_bandits import paths, registry
from helpers import copy_project, timeout_s

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow


def _snakemake(cwd, *args, idle_s=2400):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s(idle_s))


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the project without outputs, caches or git metadata."""
    return copy_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def smoke_run(project):
    res = _snakemake(project, "all", "--config", "scale=smoke")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-8000:]
    (project / "smoke-run.out").write_text(res.stdout + res.stderr)
    return project


def test_smoke_all_builds_every_figure_and_the_report(smoke_run):
    entries = registry.load_registry(smoke_run / "config", smoke_run / "workflow/schemas/registry.schema.yaml")
    for fid in entries:
        for ext in ("pdf", "png"):
            out = smoke_run / "figures" / "smoke" / f"{fid}.{ext}"
            assert out.is_file() and out.stat().st_size > 1000, out
    report = (smoke_run / "figures/smoke/REPORT.md").read_text()
    for fid, entry in entries.items():
        assert f"### {fid}" in report
        claims = json.loads((smoke_run / paths.claims_file("smoke", fid)).read_text())["claims"]
        assert [c["id"] for c in claims] == [c["id"] for c in entry.get("claims", [])]
        for c in claims:
            assert c["status"] in ("reproduced", "not reproduced", "inconclusive", "reported")
            assert f"{c['id']}:" in report


def test_rerun_has_nothing_to_do(smoke_run):
    res = _snakemake(smoke_run, "-n", "all", "--config", "scale=smoke")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Nothing to be done" in res.stdout + res.stderr


def test_one_figure_alone_and_bad_targets(smoke_run):
    target = "figures/smoke/phe-tab1.pdf"
    (smoke_run / target).unlink()
    res = _snakemake(smoke_run, target, "--config", "scale=smoke")
    assert res.returncode == 0 and (smoke_run / target).is_file(), res.stderr[-3000:]
    bad = _snakemake(smoke_run, "-n", "figures/smoke/phe-fig99.pdf")
    assert bad.returncode != 0 and "unknown figure id 'phe-fig99'" in bad.stdout + bad.stderr
    bad_scale = _snakemake(smoke_run, "-n", "all", "--config", "scale=huge")
    assert bad_scale.returncode != 0 and "huge" in bad_scale.stdout + bad_scale.stderr


def test_lint_is_clean(project):
    res = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=project, capture_output=True,
                         text=True, timeout=timeout_s(300))
    assert "Congratulations" in res.stdout + res.stderr, res.stdout[-3000:] + res.stderr[-3000:]


def test_figure_jobs_keep_kernel_noise_in_their_logs(smoke_run):
    """papermill's progress bars and the kernel's shutdown chatter go to the figure job's log."""
    out = (smoke_run / "smoke-run.out").read_text()
    for noise in ("IPKernelApp", "Executing:", "KeyboardInterrupt", "cell/s]"):
        assert noise not in out, noise
    assert (smoke_run / "results/smoke/logs/figure/phe-fig1.log").is_file()


def test_report_covers_what_was_built(smoke_run):
    html = smoke_run / "report.html"
    res = _snakemake(smoke_run, "--report", str(html), "all", "--config", "scale=smoke")
    assert res.returncode == 0 and html.stat().st_size > 100_000, res.stderr[-3000:]
    png = smoke_run / "figures/smoke/phe-tab1.png"
    saved, stat = png.read_bytes(), png.stat()
    png.unlink()
    try:
        part = _snakemake(smoke_run, "--report", str(html), "all", "--config", "scale=smoke")
    finally:
        png.write_bytes(saved)
        os.utime(png, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert part.returncode == 0, part.stderr[-3000:]
    assert re.search(r"report: \d+ of \d+ figures are built at scale 'smoke'; not built, so left out: "
                     r"phe-tab1\n", part.stderr), part.stderr[-3000:]
    none = _snakemake(smoke_run, "--report", str(html), "all", "--config", "scale=default")
    assert none.returncode != 0
    assert "--report: no figure has been built at scale 'default' yet" in none.stdout + none.stderr


def test_snakemake_files_are_formatted():
    """Snakefile and workflow/**/*.smk as snakefmt writes them (pyproject: [tool.snakefmt])."""
    res = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow/"], cwd=ROOT,
                         capture_output=True, text=True, timeout=timeout_s(120))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def test_reuse_records_assembles_the_report_without_the_run_files(smoke_run):
    """reuse_records: the ids with a record are not rebuilt, though every run file is gone, and
    REPORT.md takes their sections from the records.  (Last in this module: it moves results/.)"""
    report = smoke_run / "figures/smoke/REPORT.md"
    before = report.read_text()
    (smoke_run / "results").rename(smoke_run / "results-moved")
    try:
        record = smoke_run / paths.record_file("smoke", "phe-tab1")
        record.rename(smoke_run / "phe-tab1.json")          # this one has no record: it is rebuilt
        res = _snakemake(smoke_run, "figures/smoke/REPORT.md", "--config", "scale=smoke", "reuse_records=true")
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        jobs = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", res.stdout + res.stderr, re.M))   # the `job count` table
        assert "simulate" not in jobs and jobs.get("claims") == "1" and jobs.get("report_all") == "1", jobs
        after = report.read_text()
        assert "### phe-tab1 — " in after and "Assembled from" not in after   # one code state: one run
        rows = lambda text: [line for line in text.splitlines() if line.startswith("| ")]   # noqa: E731
        assert rows(after) == rows(before)
    finally:
        if (smoke_run / "results").exists():
            shutil.rmtree(smoke_run / "results")
        (smoke_run / "results-moved").rename(smoke_run / "results")
