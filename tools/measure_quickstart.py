"""Time the README's Quick start commands as a newcomer runs them, and write the page the README's
durations block reads (docs/timings-quickstart.md, ``ensemble_bandits.quickstart``):

    python tools/measure_quickstart.py      # about 1.5 h of both cores; writes the page, refreshes README.md

It clones this repository's committed HEAD into a new temporary directory with nothing beside the
clone, makes a new virtual environment in the clone, and runs the Quick start's commands one after
the other exactly as the clone's README.md writes them (in bash, that environment activated, none of
the caller's PYTHONPATH, VIRTUAL_ENV, CI or EB_* variables), timing each.  A command that fails
stops it, and no page is written.  ``--commands`` runs other commands instead (for tests: the README
then keeps its wording, since the page does not time its commands).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ensemble_bandits import quickstart, readme
from ensemble_bandits.atomic import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
DROPPED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CI")
VERSIONS = """\
import importlib.metadata as m, platform
def v(p):
    try:
        return m.version(p)
    except m.PackageNotFoundError:
        return "not installed"
print(f"Python {platform.python_version()}, numpy {v('numpy')}, torch {v('torch')} (in the new environment)")
"""


def newcomer_env(venv: Path) -> dict:
    """The caller's environment without its project settings, ``venv`` activated."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED and not k.startswith("EB_")}
    return {**env, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}


def _out(args, cwd, env=None) -> str:
    return subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def measure(repo: Path, commands=None, keep: bool = False) -> tuple[dict, dict]:
    """({command: wall seconds}, machine) of the Quick start's commands (or ``commands``) run in a
    fresh clone of ``repo``."""
    work = Path(tempfile.mkdtemp(prefix="eb-quickstart."))
    try:
        clone = work / "repo"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        commands = commands or quickstart.commands((clone / "README.md").read_text(encoding="utf-8"))
        subprocess.run(["python3", "-m", "venv", str(clone / ".venv")], check=True)
        env = newcomer_env(clone / ".venv")
        load_before, walls = os.getloadavg()[0], {}
        for cmd in commands:
            print(f"measure_quickstart: in {clone}: {cmd}", file=sys.stderr, flush=True)
            start = time.monotonic()
            rc = subprocess.run(["bash", "-c", cmd], cwd=clone, env=env).returncode
            walls[cmd] = time.monotonic() - start
            if rc:
                raise SystemExit(f"measure_quickstart: exit {rc} after {walls[cmd]:.0f} s: {cmd}; no page written")
        machine = dict(cores=os.cpu_count(), load_before=load_before, load_after=os.getloadavg()[0],
                       versions=_out(["python3", "-c", VERSIONS], clone, env),
                       commit=_out(["git", "rev-parse", "--short", "HEAD"], clone),
                       date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        return walls, machine
    finally:
        if keep:
            print(f"measure_quickstart: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Time the README's Quick start commands in a fresh clone.")
    ap.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone and write the page in")
    ap.add_argument("--commands", nargs="+", help="run these instead of the README's (tests)")
    ap.add_argument("--keep", action="store_true", help="keep the clone")
    args = ap.parse_args(argv)
    walls, machine = measure(args.repo, args.commands, args.keep)
    write_text_atomic(quickstart.page(walls, machine), args.repo / quickstart.PAGE)
    changed = readme.refresh(("durations",), root=args.repo)
    print(f"measure_quickstart: wrote {quickstart.PAGE}; README.md {'rewritten' if changed else 'up to date'}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
