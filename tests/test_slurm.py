"""The SLURM profile against a real scheduler: a single-node SLURM cluster (munged, slurmctld,
slurmd) started on this machine by tools/slurm_ci_up.sh, once without an accounting
database (status command squeue) and once with one (slurmdbd + MariaDB; the profile's default
status command, sacct).

Opt-in: it runs only with ``EB_SLURM_TEST=1`` in the environment (``.ci/run`` sets it) and is
skipped with that reason otherwise.  Marked ``slurm`` (about 7-8 minutes on 2 cores):
``EB_SLURM_TEST=1 pytest -m slurm`` runs it alone.  Needs root (it installs the Debian packages slurmctld,
slurmd, slurm-client, munge, slurmdbd and mariadb-server if missing, and starts the daemons);
elsewhere it is skipped with the reason.  The daemons are always stopped at teardown
(slurm_ci_down.sh, by PID).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import copy_project, timeout_argv

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tools"
# Opt-in: the test installs system packages and starts daemons, which a test suite must not do to
# the machine unless asked.  .ci/run asks.
OPT_IN = "EB_SLURM_TEST"
pytestmark = [pytest.mark.slurm,
              pytest.mark.skipif(os.environ.get(OPT_IN, "").strip().lower() not in ("1", "true", "yes"),
                                 reason=f"SLURM cluster test is opt-in: set {OPT_IN}=1 to run it (as root it "
                                        "apt-installs slurm, munge and mariadb-server and starts their daemons)")]

CONFIG = ["--config", "scale=smoke", "seeds_per_job=2"]
# first status poll 8 s after submission (the profile's 20 s suits a real cluster; a smoke job
# takes ~6 s here).  squeue needs MinJobAge (3600 s in slurm_ci_up.sh) >= 3 x this and >= the test's wall time.
FAST_POLL = ["--slurm-init-seconds-before-status-checks", "8", "--jobs", "4"]
PROFILE_MAX_MEM_MB = 8000  # the largest mem_mb in workflow/profiles/slurm/config.yaml (aggregate)


@contextlib.contextmanager
def slurm_cluster(base: Path, accounting: bool):
    """A running single-node SLURM cluster (with slurmdbd if ``accounting``), stopped on exit."""
    if os.geteuid() != 0:
        pytest.skip("SLURM cluster test needs root (installs slurm/munge with apt-get and starts daemons)")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("SLURM cluster test: slurm is not installed and there is no apt-get to install it")
    state = base / ("state-acct" if accounting else "state")
    env = {**os.environ, "WITH_SLURMDBD": "1" if accounting else "0"}
    try:
        up = subprocess.run([*timeout_argv(400), "bash", str(SCRIPTS / "slurm_ci_up.sh"), str(state)],
                            capture_output=True, text=True, env=env)
        if up.returncode == 77:
            pytest.skip(f"SLURM cluster test: cannot install or start SLURM here: {up.stderr.strip()[-1000:]}")
        assert up.returncode == 0, f"slurm_ci_up.sh failed (rc {up.returncode}):\n{up.stdout}\n{up.stderr}"
        yield state
    finally:
        down = subprocess.run([*timeout_argv(120, kill_after_s=5), "bash", str(SCRIPTS / "slurm_ci_down.sh"),
                               str(state)],
                              capture_output=True, text=True)
        if down.returncode != 0:
            print(f"slurm_ci_down.sh failed (rc {down.returncode}): {down.stdout}{down.stderr}", file=sys.stderr)
    conf = Path("/etc/slurm/slurm.conf")   # left behind, it would stall every later SLURM client call
    assert not (conf.exists() and conf.read_text().startswith("# written by tools/slurm_ci_up.sh")), \
        "slurm_ci_down.sh left its /etc/slurm/slurm.conf (naming a stopped controller) in place"


@pytest.fixture
def project(tmp_path):
    """A fresh copy of the workflow (no results) to run through SLURM."""
    return copy_project(tmp_path / "project")


def _real_memory_mb():
    out = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True).stdout
    m = re.search(r"RealMemory=(\d+)", out)
    return int(m.group(1)) if m else 0


def local_rules(project: Path) -> list:
    """The rule names the workflow declares in its ``localrules:`` blocks."""
    names = []
    for smk in (project / "workflow" / "rules").glob("*.smk"):
        for block in re.findall(r"^localrules:\n((?:[ \t]+\w+,?\n)+)", smk.read_text(), re.M):
            names += re.findall(r"\w+", block)
    return names


def run_profile(project: Path, state: Path, targets, flags, name):
    """Run ``targets`` through the SLURM workflow profile; check the figures exist and that every
    job was submitted to, run and completed by slurmctld.  Returns (job ids, log text, wall)."""
    mem_flags = []
    real_mem = _real_memory_mb()
    if real_mem < PROFILE_MAX_MEM_MB:  # a small node: keep every request within RealMemory
        cap = max(500, real_mem // 4)
        mem_flags = ["--default-resources", f"mem_mb={cap}", "runtime=30", "cpus_per_task=1",
                     "--set-resources", f"simulate:mem_mb={cap}", f"aggregate:mem_mb={cap}"]
    cmd = [*timeout_argv(900), sys.executable, "-m", "snakemake",
           "--workflow-profile", "workflow/profiles/slurm", *flags, *mem_flags, *targets, *CONFIG]
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=project, capture_output=True, text=True)
    wall = time.monotonic() - t0
    out = res.stdout + res.stderr
    log = project.parent / f"snakemake_slurm_{name}.log"
    log.write_text(" ".join(cmd) + f"\n# exit {res.returncode}, wall {wall:.1f} s\n" + out)
    where = f"(full log: {log}; wall {wall:.0f} s)"
    assert res.returncode == 0, f"snakemake exit {res.returncode} {where}\n{out[-6000:]}"

    for t in targets:
        f = project / t
        assert f.is_file() and f.stat().st_size > 1000, f"{t} missing or empty {where}"

    # every job went through SLURM: snakemake names the SLURM job id of each submission ...
    ids = re.findall(r"has been submitted with SLURM jobid (\d+)", out)
    # (local rules run in the Snakemake process itself, not through SLURM: the workflow's localrules)
    n_local = sum(int(m.group(1)) for rule in local_rules(project)
                  for m in [re.search(rf"^{rule}\s+(\d+)", out, re.M)] if m)
    n_jobs = int(re.search(r"^total\s+(\d+)", out, re.M).group(1)) - n_local
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
    # (the plugin deletes the SLURM logs of successful jobs, so .snakemake/slurm_logs is no evidence)
    summary = (f"SLURM profile test ({name}): {len(ids)} jobs ({n_sim} simulate) through real SLURM, "
               f"job ids {ids[0]}..{ids[-1]}, wall {wall:.0f} s")
    (project.parent / f"summary_{name}.txt").write_text(summary + "\nids: " + " ".join(ids) + "\n")
    print(summary + "\nSLURM job ids: " + " ".join(ids))      # shown in CI's log (pytest -rP)
    return ids, where


def _assert_all_completed(states: dict, ids, source, where):
    assert ids[-1] in states, f"{source} does not list job {ids[-1]}: {states} {where}"
    bad = {i: states.get(i) for i in ids if states.get(i) != "COMPLETED"}
    assert not bad, f"SLURM jobs not COMPLETED per {source}: {bad} {where}"


def test_profile_without_accounting_database_uses_squeue(project, tmp_path):
    """No slurmdbd: sacct cannot answer, so the documented override --slurm-status-command squeue."""
    targets = ["figures/smoke/phe-tab1.pdf", "figures/smoke/epp-fig6.pdf"]   # 16 jobs: seeds split, a group job
    with slurm_cluster(tmp_path, accounting=False) as state:
        ids, where = run_profile(project, state, targets, ["--slurm-status-command", "squeue", *FAST_POLL],
                                 "squeue")
        # the controller still holds the jobs (MinJobAge 3600 s, longer than the test): squeue --states=all shows them
        sq = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T"],
                            capture_output=True, text=True).stdout
        _assert_all_completed(dict(line.split("|", 1) for line in sq.split()), ids, "squeue --states=all", where)


def test_profile_with_accounting_database_uses_sacct(project, tmp_path):
    """slurmdbd + MariaDB: the profile as shipped (status command sacct); sacct records every job."""
    # glmes-tab1 reads the UCI data on the node (the copy's resources/data, shipped with the repository)
    targets = ["figures/smoke/lines-gauss-ts.pdf", "figures/smoke/glmes-tab1.pdf"]   # 14 jobs
    with slurm_cluster(tmp_path, accounting=True) as state:
        ids, where = run_profile(project, state, targets, FAST_POLL, "sacct")
        acct = subprocess.run(["sacct", "-X", "--parsable2", "--noheader", "--format=JobIDRaw,State",
                               "--starttime", "now-1days"], capture_output=True, text=True)
        assert acct.returncode == 0, f"sacct failed: {acct.stderr}"
        _assert_all_completed(dict(line.split("|", 1) for line in acct.stdout.split()), ids, "sacct", where)
