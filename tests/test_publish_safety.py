"""No failing, interrupted or deleting command removes a committed file under figures/paper/
(docs/reliability.md, "Committed files"): the publish rules' outputs are flagged update(), so
Snakemake neither removes them before the copy nor after it fails, and `--delete-all-output` is
refused when it reaches them.  Each case runs on the committed files in a scratch copy: a damaged
staged file makes each publish step fail, a staged file that never ends (a fifo) holds the copy
while Snakemake is interrupted."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ensemble_bandits import paths
from helpers import ROOT, copy_project, timeout_s

pytestmark = pytest.mark.workflow
FID = "lines-gauss-ts"
# what is published, the rule that copies it, the committed file it writes (its staged file:
# paths.staged_source of it)
PUBLISH = [
    ("record", "publish", paths.record_file("paper", FID)),
    ("archive", "publish", paths.archive_file("paper", FID)),
    ("figure", "publish_figure", f"figures/paper/{FID}.png"),
    ("report", "publish", "figures/paper/REPORT.md"),
]
staged_of = paths.staged_source


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = copy_project(tmp_path_factory.mktemp("publish"))
    shutil.copytree(ROOT / "figures" / "paper", root / "figures" / "paper")
    return root


def _ctrl_c_as_at_a_terminal():
    """Ctrl-C's default action in the child: a process started in the background of a shell (`cmd &`,
    nohup) inherits SIGINT ignored, and Snakemake and its jobs would then never see the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def snakemake(root: Path, *args, **kw):
    return subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", *args, "--config", "scale=paper"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_ctrl_c_as_at_a_terminal, **kw)


def committed_bytes(root: Path) -> dict:
    return {p: (root / p).read_bytes() for _, _, p in PUBLISH} | {
        f"figures/paper/{FID}.pdf": (root / f"figures/paper/{FID}.pdf").read_bytes()}


def publish_only(root: Path, rule: str, committed: str, *extra):
    """Run only ``rule`` for ``committed`` (its staged file as it is), as a failing rebuild would."""
    targets = [committed] if rule != "publish_figure" else [committed, committed.replace(".png", ".pdf")]
    return snakemake(root, *targets, "--allowed-rules", rule, "--force", *extra)


@pytest.mark.parametrize("what, rule, committed", PUBLISH, ids=[w for w, _, _ in PUBLISH])
def test_a_failing_publish_step_leaves_the_committed_file(project, what, rule, committed):
    before = committed_bytes(project)
    staged = project / staged_of(committed)
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_bytes(b"" if committed.endswith(".md") else b"{damaged")      # an empty report: damaged
    if rule == "publish_figure":
        (project / staged_of(committed.replace(".png", ".pdf"))).write_bytes(b"{damaged")
        claims = project / f"results/paper/claims/{FID}.rst"        # an input of the step
        claims.parent.mkdir(parents=True, exist_ok=True)
        claims.write_text("claims\n")
    proc = publish_only(project, rule, committed)
    out, _ = proc.communicate(timeout=timeout_s(600))
    assert proc.returncode != 0, out[-3000:]
    assert "cannot be published" in out or "is not a" in out, out[-3000:]
    assert committed_bytes(project) == before, out[-3000:]


LOGS = {"record": f"records/{FID}.json", "archive": f"archives/{FID}.parquet", "figure": f"figure-{FID}",
        "report": "REPORT.md"}


# (what, rule, committed file, signal): Ctrl-C and a kill of Snakemake's process group while each step
# copies; not Ctrl-C of the archive step, whose reader (pyarrow) does not return from a fifo on SIGINT
INTERRUPTS = [(what, rule, path, how) for what, rule, path in PUBLISH for how in (signal.SIGINT, signal.SIGKILL)
              if (what, how) != ("archive", signal.SIGINT)]


def _wait_until_a_process_opens_the_fifo(pgid: int) -> None:
    """Until a process of the group ``pgid`` waits in open() of the fifo (Linux: its wchan is
    wait_for_partner; where the kernel hides wchan, timeout_s(30) s), elsewhere 3 s.  A signal sent
    earlier, while the job still starts (slow on a loaded machine), would leave the copy to open the
    fifo afterwards and wait for ever."""
    if not Path("/proc/self/wchan").exists():
        time.sleep(3)
        return
    deadline = time.time() + timeout_s(30)
    while time.time() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                pgrp = int(stat.read_text().rsplit(")", 1)[1].split()[2])
                if pgrp == pgid and (stat.parent / "wchan").read_text() == "wait_for_partner":
                    return
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.2)


@pytest.mark.parametrize("what, rule, committed, how", INTERRUPTS,
                         ids=[f"{w}-{'ctrl-c' if h == signal.SIGINT else 'kill'}" for w, _, _, h in INTERRUPTS])
def test_an_interrupted_publish_step_leaves_the_committed_file(project, what, rule, committed, how):
    before = committed_bytes(project)
    staged = project / staged_of(committed.replace(".png", ".pdf"))      # the figure step reads its PDF first
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.unlink(missing_ok=True)
    os.mkfifo(staged)                  # the copy blocks reading it, until Snakemake is interrupted
    if rule == "publish_figure":
        (project / staged_of(committed)).write_bytes(b"\x89PNG\r\n\x1a\n")
        (project / f"results/paper/claims/{FID}.rst").parent.mkdir(parents=True, exist_ok=True)
        (project / f"results/paper/claims/{FID}.rst").write_text("claims\n")
    log = project / "results/paper/logs/publish" / f"{LOGS[what]}.log"
    log.unlink(missing_ok=True)        # the job's wrapper creates it when the job starts
    proc = publish_only(project, rule, committed)
    try:
        deadline = time.time() + 300
        while not log.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert log.exists(), "the publish job did not start"
        _wait_until_a_process_opens_the_fifo(proc.pid)
        os.killpg(proc.pid, how)
        out, _ = proc.communicate(timeout=timeout_s(120))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        staged.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-m", "snakemake", "--unlock", "--cores", "1", "--config", "scale=paper"],
                       cwd=project, capture_output=True, timeout=timeout_s(300))
    assert committed_bytes(project) == before, out[-3000:]


def test_delete_all_output_is_refused_where_it_reaches_committed_files(project):
    before = committed_bytes(project)
    for targets in ([FID], [paths.record_file("paper", FID)], ["all"]):
        proc = snakemake(project, "--delete-all-output", *targets)
        out, _ = proc.communicate(timeout=timeout_s(600))
        assert proc.returncode != 0, out[-3000:]
        assert "--delete-all-output would delete the committed paper results under figures/paper/" in out, out[-3000:]
        assert "Deleting" not in out
    # a committed file named as a target, at the configured scale (default): refused too
    res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--delete-all-output", "--dry-run",
                          paths.record_file("paper", FID)], cwd=project, capture_output=True, text=True, timeout=timeout_s(600))
    assert "--delete-all-output would delete the committed paper results" in res.stdout + res.stderr
    assert "Would delete" not in res.stdout + res.stderr
    assert committed_bytes(project) == before
