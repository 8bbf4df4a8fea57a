"""The SLURM profile against a real scheduler: a single-node SLURM cluster (munged, slurmctld,
slurmd, no accounting database) started on this machine by workflow/scripts/slurm_ci_up.sh.

Marked ``slurm`` (about 6-7 minutes on 2 cores): ``pytest -m slurm`` runs it alone,
``pytest -m "not slurm"`` skips it.  Needs root (it installs the Debian packages slurmctld,
slurmd, slurm-client and munge if missing, and starts the daemons); elsewhere it is skipped
with the reason.  The daemons are always stopped at teardown (slurm_ci_down.sh, by PID).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
pytestmark = pytest.mark.slurm

TARGETS = ["figures/smoke/phe-fig1.pdf", "figures/smoke/glmes-fig1a.pdf", "figures/smoke/phe-tab1.pdf"]
CONFIG = ["--config", "scale=smoke", "seeds_per_job=2"]
# Without an accounting database the plugin's default status command (sacct) fails and Snakemake
# waits forever; squeue needs MinJobAge (300 s in slurm_ci_up.sh) >= 3 x the init seconds.
SLURM_FLAGS = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "8", "--jobs", "4"]
PROFILE_MAX_MEM_MB = 8000  # the largest mem_mb in workflow/profiles/slurm/config.yaml (aggregate)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A copy of the project and a running single-node SLURM cluster (stopped at teardown)."""
    if os.geteuid() != 0:
        pytest.skip("SLURM cluster test needs root (installs slurm/munge with apt-get and starts daemons)")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("SLURM cluster test: slurm is not installed and there is no apt-get to install it")
    base = tmp_path_factory.mktemp("slurm")
    project, state = base / "project", base / "state"
    project.mkdir()
    for item in ("Snakefile", "config", "workflow", "notebooks"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, project / item)
    try:
        up = subprocess.run(["timeout", "-k", "10", "300", "bash", str(SCRIPTS / "slurm_ci_up.sh"), str(state)],
                            capture_output=True, text=True)
        if up.returncode == 77:
            pytest.skip(f"SLURM cluster test: cannot install or start SLURM here: {up.stderr.strip()[-1000:]}")
        assert up.returncode == 0, f"slurm_ci_up.sh failed (rc {up.returncode}):\n{up.stdout}\n{up.stderr}"
        yield project, state
    finally:
        down = subprocess.run(["timeout", "-k", "5", "120", "bash", str(SCRIPTS / "slurm_ci_down.sh"), str(state)],
                              capture_output=True, text=True)
        if down.returncode != 0:
            print(f"slurm_ci_down.sh failed (rc {down.returncode}): {down.stdout}{down.stderr}", file=sys.stderr)


def _real_memory_mb():
    out = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True).stdout
    m = re.search(r"RealMemory=(\d+)", out)
    return int(m.group(1)) if m else 0


def test_profile_runs_jobs_through_real_slurm(cluster):
    project, state = cluster
    mem_flags = []
    real_mem = _real_memory_mb()
    if real_mem < PROFILE_MAX_MEM_MB:  # a small node: keep every request within RealMemory
        cap = max(500, real_mem // 4)
        mem_flags = ["--default-resources", f"mem_mb={cap}", "runtime=30", "cpus_per_task=1",
                     "--set-resources", f"simulate:mem_mb={cap}", f"aggregate:mem_mb={cap}"]
    cmd = ["timeout", "-k", "10", "900", sys.executable, "-m", "snakemake",
           "--workflow-profile", "workflow/profiles/slurm", *SLURM_FLAGS, *mem_flags, *TARGETS, *CONFIG]
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=project, capture_output=True, text=True)
    wall = time.monotonic() - t0
    out = res.stdout + res.stderr
    log = project.parent / "snakemake_slurm_run.log"
    log.write_text(" ".join(cmd) + f"\n# exit {res.returncode}, wall {wall:.1f} s\n" + out)
    where = f"(full log: {log}; wall {wall:.0f} s)"
    assert res.returncode == 0, f"snakemake exit {res.returncode} {where}\n{out[-6000:]}"

    for t in TARGETS:
        f = project / t
        assert f.is_file() and f.stat().st_size > 1000, f"{t} missing or empty {where}"

    # every job went through SLURM: snakemake names the SLURM job id of each submission ...
    ids = re.findall(r"has been submitted with SLURM jobid (\d+)", out)
    n_jobs = int(re.search(r"^total\s+(\d+)", out, re.M).group(1))
    n_sim = int(re.search(r"^simulate\s+(\d+)", out, re.M).group(1))
    assert len(ids) >= n_jobs >= n_sim > 0, \
        f"{len(ids)} SLURM submissions for {n_jobs} jobs ({n_sim} simulate) {where}; ids: {ids}"
    assert len(set(ids)) == len(ids), f"repeated SLURM job ids: {ids}"
    # ... and slurmctld really received, ran and completed each of them
    ctld = (state / "slurmctld.log").read_text()
    submitted = set(re.findall(r"_slurm_rpc_submit_batch_job: JobId=(\d+)", ctld))
    completed = set(re.findall(r"_job_complete: JobId=(\d+) WEXITSTATUS 0", ctld))
    missing = [i for i in ids if i not in submitted or i not in completed]
    assert not missing, f"job ids not submitted/completed per {state / 'slurmctld.log'}: {missing} {where}"
    # the controller still holds the recent ones (MinJobAge 300 s): squeue --states=all shows them done
    sq = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T"],
                        capture_output=True, text=True).stdout
    states = dict(line.split("|", 1) for line in sq.split())
    assert ids[-1] in states and states[ids[-1]] == "COMPLETED", f"squeue --states=all: {sq} {where}"
    bad = {i: s for i, s in states.items() if i in ids and s != "COMPLETED"}
    assert not bad, f"SLURM jobs not COMPLETED: {bad} {where}"
    # (the plugin deletes the SLURM logs of successful jobs, so .snakemake/slurm_logs is no evidence)

    summary = (f"SLURM profile test: {len(ids)} jobs ({n_sim} simulate) through real SLURM, "
               f"job ids {ids[0]}..{ids[-1]}, wall {wall:.0f} s")
    (project.parent / "summary.txt").write_text(summary + "\nids: " + " ".join(ids) + "\n")
    print(summary)
