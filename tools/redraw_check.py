"""Redraw every committed paper figure from its committed archive in a fresh copy, and say which
files changed (docs/scales.md, "Archives"; tests/test_archive.py does the same for one figure):

    python tools/redraw_check.py results/redraw-check [id ...] [--cores 2]

The copy (the workflow, config, resources and figures/paper of HEAD, as a fresh clone has them) is
committed in a git repository of its own; each figure's record, PNG and PDF are rebuilt there with
`--forcerun claims figure` (a figure planned in looks on its own seeds at the look its record states,
as the workflow builds it without `look`), and `git status` must stay clean.  Nothing may be simulated (a dry run checks it first).  Exit 0
when every file redrew byte-identically; the changed files are listed otherwise.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("Snakefile", "config", "workflow", "profiles", "notebooks", "resources", "figures/paper")


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, check=True).stdout


def fresh_copy(dst: Path) -> Path:
    """HEAD's committed files of :data:`COPIED` in ``dst``, committed in a repository of its own."""
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "HEAD", *COPIED], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)
    git(dst, "init", "-q")
    git(dst, "add", "-A")
    git(dst, "-c", "user.name=redraw", "-c", "user.email=redraw@check", "commit", "-qm", "fresh clone")
    return dst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("where", type=Path, help="a scratch folder for the copy (emptied first)")
    p.add_argument("ids", nargs="*", help="figure ids (default: every committed archive)")
    p.add_argument("--cores", default="2")
    args = p.parse_args(argv)
    ids = args.ids or sorted(f.stem for f in (ROOT / "figures/paper/archives").glob("*.parquet"))
    project = fresh_copy(args.where.resolve())
    targets = [t for fid in ids for t in (f"figures/paper/records/{fid}.json", f"figures/paper/{fid}.png",
                                          f"figures/paper/{fid}.pdf")]
    log = []
    for dry in (True, False):
        res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", args.cores, *targets, "--config",
                              "scale=paper", "--forcerun", "claims", "figure", *(["--dry-run"] if dry else [])],
                             cwd=project, capture_output=True, text=True)
        log.append(res.stdout + res.stderr)
        (project / "redraw.log").write_text("".join(log))
        if res.returncode:
            print(f"snakemake failed ({res.returncode}); see {project / 'redraw.log'}")
            return 1
        if "rule simulate" in log[-1]:
            print(f"a cell would be simulated (an archive does not cover it); see {project / 'redraw.log'}")
            return 1
    changed = git(project, "status", "--porcelain", "--untracked-files=no").splitlines()
    print(f"{len(ids)} figures redrawn from their archives: "
          + ("every record, PNG and PDF byte-identical" if not changed else f"{len(changed)} files changed:"))
    print("\n".join(changed))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
