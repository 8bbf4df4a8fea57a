"""Every command the README shows runs as written: Snakemake commands as dry runs (``-n`` added),
in the repository; the HTML report and the command-line tool for real (each works, or stops with
its one documented line, e.g. "no timings" in a clone that has run nothing); ``eb-bench`` by its
``--help`` (the benchmark itself takes minutes). The install lines are what ``.ci/run`` runs."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import timeout_s

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def readme_commands() -> list:
    """The README's commands: every line of its bash blocks (continuations joined, comments cut),
    except the install lines."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and "pip install" not in line:
                out.append(line)
    return out


def test_the_readme_shows_the_commands_this_file_checks():
    cmds = readme_commands()
    assert any(c.startswith("snakemake --workflow-profile workflow/profiles/slurm") for c in cmds)
    assert {c.split()[0] for c in cmds} == {"snakemake", "ensemble-bandits", "eb-bench"}, cmds


def _run(argv, **kw):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout_s(600), **kw)


@pytest.mark.parametrize("cmd", [c for c in readme_commands() if c.startswith("snakemake") and "--report" not in c])
def test_snakemake_command_dry_runs_as_written(cmd):
    argv = shlex.split(cmd)
    if "-n" not in argv:
        argv.insert(1, "-n")
    res = _run(argv)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    # after the Quick start's first command every default-scale output exists: nothing to dry-run
    assert any(s in res.stdout + res.stderr for s in ("This was a dry-run", "Nothing to be done")), res.stdout[-2000:]


def test_report_command_writes_the_report_or_says_nothing_is_built(tmp_path):
    [cmd] = [c for c in readme_commands() if "--report" in c]
    argv = shlex.split(cmd)
    argv[argv.index("--report") + 1] = str(tmp_path / "report.html")      # not into the checkout
    res = _run(argv)
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out[-2000:]
    assert (res.returncode == 0 and (tmp_path / "report.html").is_file()) or "no figure has been built" in out, out


@pytest.mark.parametrize("cmd", [c for c in readme_commands() if not c.startswith("snakemake")])
def test_tool_command_runs_as_written(cmd):
    argv = shlex.split(cmd)
    if argv[0] == "eb-bench":
        argv.append("--help")
    res = _run(argv)
    out = res.stdout + res.stderr
    assert "Traceback" not in out and "usage:" not in res.stderr, f"{cmd}\n{out[-2000:]}"
    assert res.returncode == 0 or (res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1), \
        f"{cmd}: exit {res.returncode}\n{out[-2000:]}"
