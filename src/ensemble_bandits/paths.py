"""The one place that knows the layout of a checkout (``Snakefile``, ``config/config.yaml``) and
of the workflow's files under ``results/``; the rules and the command line both use these helpers.

A helper called with wildcard strings gives the rule's pattern, e.g.
``figure_file("{scale}", "{paper}-{fig}") == "results/{scale}/figures/{paper}-{fig}.json"``.
"""
from __future__ import annotations

from pathlib import Path

CONFIG = Path("config") / "config.yaml"


def is_project(path: Path) -> bool:
    return (path / "Snakefile").is_file() and (path / CONFIG).is_file()


def project_root(start: Path | str | None = None) -> Path | None:
    """The project directory holding ``start`` (default: the working directory), else the source
    checkout this package was installed from (``pip install -e .``), else None."""
    here = Path(start or Path.cwd()).resolve()
    for path in (here, *here.parents):
        if is_project(path):
            return path
    checkout = Path(__file__).resolve().parents[2]      # src/ensemble_bandits/paths.py -> checkout
    return checkout if is_project(checkout) else None


def enter_project(cmd: str, given: dict) -> dict:
    """Work from the project root (:func:`project_root`) when a command is started elsewhere: the paths
    ``given`` ({option: path}) made absolute first so that they stay valid, then the working directory
    changed; those paths returned.  A FileNotFoundError of one line when there is no project."""
    import os
    import sys

    root = project_root()
    if root is None:
        raise FileNotFoundError(f"{cmd}: no project here: run this in the directory holding the Snakefile and "
                                f"{CONFIG.as_posix()} (the clone of the repository), or pass --configfile")
    given = {name: os.path.abspath(path) for name, path in given.items()}
    print(f"(working in the project at {root})", file=sys.stderr)
    os.chdir(root)
    return given


def run_file(scale, key, start, end) -> str:
    """Run file of one simulate job: a cell (``key``) over seeds [start, end)."""
    return f"results/{scale}/runs/{key}/seeds-{start}-{end}.npz"


def checkpoint_file(scale, key, start, end) -> str:
    """Checkpoint of a running simulate job (:mod:`ensemble_bandits.checkpoint`), removed when its
    run file is written."""
    return f"results/{scale}/checkpoints/{key}/seeds-{start}-{end}.ckpt"


def run_key(path) -> str:
    """The cell key of a run file's path (see :func:`run_file`)."""
    return Path(path).parent.name


def run_seeds(path) -> tuple:
    """The seeds [start, end) of a run file's path (see :func:`run_file`)."""
    start, end = Path(path).stem.split("-")[1:3]
    return int(start), int(end)


def figure_file(scale, fid) -> str:
    """The resolved figure a job reads (written once per figure and scale by rule resolve_figure)."""
    return f"results/{scale}/figures/{fid}.json"


def table_markdown(scale, fid) -> str:
    """A table figure's markdown, published beside its PDF."""
    return f"figures/{scale}/{fid}.md"


def claims_file(scale, fid) -> str:
    """Verdicts of a figure's claims (JSON; the same name with ``.rst`` for the HTML report)."""
    return f"results/{scale}/claims/{fid}.json"


def archive_file(scale, fid) -> str:
    """A figure's archive: the compact per-seed rows of its cells (committed at paper scale)."""
    return f"figures/{scale}/archives/{fid}.parquet"


def staged_archive(scale, fid) -> str:
    """The archive as the aggregate job writes it (rule publish copies it to :func:`archive_file`)."""
    return f"results/{scale}/archives/{fid}.parquet"


def staged(path) -> str:
    """Where a job writes a published file first (``figures/<scale>/...`` -> ``results/<scale>/published/...``):
    rule publish copies it into place, so a failing job can never delete a committed file."""
    parts = Path(path).parts
    if parts[0] != "figures":
        raise ValueError(f"{path} is not a published file (figures/<scale>/...)")
    return str(Path("results", parts[1], "published", *parts[2:]))


def staged_source(path) -> str:
    """The staged file that becomes the committed ``path`` (the inverse of :func:`committed`): a
    figure's archive as its aggregate job writes it (:func:`staged_archive`), any other file where its
    job writes it (:func:`staged`)."""
    parts = Path(path).parts
    if len(parts) == 4 and parts[0] == "figures" and parts[2] == "archives" and path.endswith(".parquet"):
        return staged_archive(parts[1], Path(path).stem)
    return staged(path)


def record_file(scale, fid) -> str:
    """A figure's record: its REPORT.md section's content and the run that produced it (committed
    with the figure at paper scale, so a later report can reuse it)."""
    return f"figures/{scale}/records/{fid}.json"


def simulate_log(scale, key="", start="", end="") -> str:
    """Log of one simulate job; with only ``scale``, the directory of those logs."""
    if not key:
        return f"results/{scale}/logs/simulate"
    return f"results/{scale}/logs/simulate/{key}-{start}-{end}.log"


def committed(path) -> str | None:
    """The committed file a staged one becomes (``results/<scale>/published/...`` and a staged
    archive ``results/<scale>/archives/...`` -> ``figures/<scale>/...``); None for other paths."""
    parts = Path(path).parts
    i = next((n for n, p in enumerate(parts) if p == "results"), None)
    if i is None or len(parts) < i + 4:
        return None
    if parts[i + 2] == "published":
        return str(Path("figures", parts[i + 1], *parts[i + 3:]))
    if parts[i + 2] == "archives":
        return str(Path("figures", parts[i + 1], *parts[i + 2:]))
    return None


def restore_hint(path) -> str:
    """How to get a damaged published file back: a committed one (paper scale) from git, as its
    committed path names it; a staged one by rebuilding it, which leaves the committed file as it is."""
    norm = str(path).replace("\\", "/")
    final = committed(path)
    if final is not None:
        return (f"delete it and rebuild its figure (it was not published: {final} is as it was"
                + (f"; `git checkout -- {final}` restores the committed one)" if "/paper/" in norm else ")"))
    if "/paper/" in f"/{norm}" or norm.endswith(".parquet"):          # archives are committed (paper scale)
        return f"restore the committed file with `git checkout -- {path}`"
    return "delete it and rebuild its figure"
