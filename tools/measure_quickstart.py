"""Time the README's Quick start commands as a newcomer runs them, and write the page the README's
durations block reads (docs/timings-quickstart.md, ``ensemble_bandits.quickstart``):

    python tools/measure_quickstart.py            # about 2.5 h of both cores; writes the page, refreshes README.md
    python tools/measure_quickstart.py --only 2   # the second command alone (about 40 min); keeps the first's row

It clones this repository's committed HEAD into a new temporary directory with nothing beside the
clone, makes a new virtual environment in the clone, and runs the Quick start's commands one after
the other exactly as the clone's README.md writes them (in bash, that environment activated, none of
the caller's PYTHONPATH, VIRTUAL_ENV, CI or EB_* variables), timing each (``--only N``: the
N-th alone, in a clone of its own, keeping the page's row of the other, so that the two can be timed
in different sessions).  A command that fails stops it, and no page is written.  ``--commands``
runs other commands instead (for tests: the README then keeps its wording, since the page does not
time its commands).
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
    """({command: {wall, load_before, load_after, commit, date}}, machine) of the Quick start's
    commands (or ``commands``) run one after the other in a fresh clone of ``repo``."""
    work = Path(tempfile.mkdtemp(prefix="eb-quickstart."))
    try:
        clone = work / "repo"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        commands = commands or quickstart.commands((clone / "README.md").read_text(encoding="utf-8"))
        subprocess.run(["python3", "-m", "venv", str(clone / ".venv")], check=True)
        env = newcomer_env(clone / ".venv")
        commit, rows = _out(["git", "rev-parse", "--short", "HEAD"], clone), {}
        for cmd in commands:
            print(f"measure_quickstart: in {clone}: {cmd}", file=sys.stderr, flush=True)
            load_before, start = os.getloadavg()[0], time.monotonic()
            rc = subprocess.run(["bash", "-c", cmd], cwd=clone, env=env).returncode
            wall = time.monotonic() - start
            if rc:
                raise SystemExit(f"measure_quickstart: exit {rc} after {wall:.0f} s: {cmd}; no page written")
            rows[cmd] = dict(wall=wall, load_before=load_before, load_after=os.getloadavg()[0], commit=commit,
                             date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        machine = dict(cores=os.cpu_count(), versions=_out(["python3", "-c", VERSIONS], clone, env))
        return rows, machine
    finally:
        if keep:
            print(f"measure_quickstart: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Time the README's Quick start commands in a fresh clone.")
    ap.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone and write the page in")
    ap.add_argument("--commands", nargs="+", help="run these instead of the README's (tests)")
    ap.add_argument("--only", type=int, metavar="N", help="time only the README's N-th Quick start command (1, 2), "
                    "in a clone of its own, and keep the page's row of the other")
    ap.add_argument("--keep", action="store_true", help="keep the clone")
    args = ap.parse_args(argv)
    page = args.repo / quickstart.PAGE
    commands, kept, order = args.commands, {}, None
    if args.only is not None:
        given = quickstart.commands((args.repo / "README.md").read_text(encoding="utf-8"))
        if not 1 <= args.only <= len(given):
            raise SystemExit(f"measure_quickstart: --only {args.only}: the Quick start has {len(given)} commands")
        commands = [given[args.only - 1]]
        old = quickstart.rows(page.read_text(encoding="utf-8")) if page.exists() else {}
        kept, order = {cmd: old[cmd] for cmd in given if cmd in old}, given
    rows, machine = measure(args.repo, commands, args.keep)
    merged = {**kept, **rows}
    write_text_atomic(quickstart.page({c: merged[c] for c in order or rows if c in merged}, machine), page)
    changed = readme.refresh(("durations",), root=args.repo)
    print(f"measure_quickstart: wrote {quickstart.PAGE}; README.md {'rewritten' if changed else 'up to date'}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
