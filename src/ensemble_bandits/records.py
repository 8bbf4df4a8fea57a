"""A figure's record (``figures/<scale>/records/<id>.json``, written by its claims job): what its
REPORT.md section shows and the provenance of the run that produced it; made, stamped with its own
SHA-256, written and read back checked."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess

from . import ALGORITHMS_VERSION, __version__
from .atomic import write_text_atomic
from .paths import restore_hint


def run_info() -> dict:
    """Commit (``+uncommitted`` when code or config differ from it), time, machine and versions."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        # uncommitted changes to the code or config, not to the outputs under figures/
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!figures"],
                               capture_output=True, text=True, check=True).stdout.strip()
        commit += "+uncommitted" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git checkout)"
    return {"commit": commit, "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.node() or 'unknown host'}, {os.cpu_count()} cores, {platform.platform()}",
            "algorithms": ALGORITHMS_VERSION, "versions": f"ensemble_bandits {__version__}; {package_versions()}"}


def provenance_line(scale: str, run: dict) -> str:
    version, _, packages = run["versions"].partition("; ")
    return (f"Provenance: commit {run['commit']}, scale `{scale}`, generated {run['generated']}, machine "
            f"{run['machine']}; {version} (algorithms v{run['algorithms']}); {packages}.")


def provenance(scale: str) -> str:
    return provenance_line(scale, run_info())


def package_versions(names=("numpy", "scipy", "torch", "pandas", "snakemake", "papermill")) -> str:
    """``python 3.11.7, numpy 2.4.6, ...``: the versions that produced a report (read from the
    installed distributions' metadata, so torch is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {platform.python_version()}"]
    for name in names:
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} not installed")
    return ", ".join(parts)


RECORD_KEYS = ("id", "paper", "title", "seeds", "horizon", "choices", "claims", "png", "run")


def make_record(fig: dict, results: list, run: dict | None = None, archive_sha256: str | None = None) -> dict:
    """The record of a resolved figure ``fig`` whose claims gave ``results``; ``archive_sha256``: the
    content hash of the archive its table was built from (:func:`archive.content_sha256`).  The
    record carries the SHA-256 of its own content (``sha256``), so an edit after the job is seen."""
    entry = fig["entry"]
    simulated = bool(fig["series"])
    record = {"id": entry["id"], "paper": entry["paper"], "title": entry.get("title", entry["id"]),
              "seeds": fig["seeds"] if simulated else None, "horizon": fig["horizon"],
              "choices": entry.get("choices", ""), "claims": results, "png": f"{entry['id']}.png",
              "run": run or run_info(), **({"archive_sha256": archive_sha256} if archive_sha256 else {}),
              **({"look": fig["look"]} if fig.get("look") else {}),     # a figure planned in looks (plans.at_look)
              **({"fresh": fig["fresh"]} if fig.get("fresh") else {})}  # its fresh studies' looks (fresh.at_looks)
    return stamped(record)


def stamped(record: dict) -> dict:
    """``record`` with the SHA-256 of its content as it now is (unchanged if it already carries it)."""
    return {**record, "sha256": record_sha256(record)}


def record_sha256(record: dict) -> str:
    """SHA-256 of a record's content (its keys but ``sha256``, as canonical JSON)."""
    import hashlib

    body = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def write_record(record: dict, path) -> None:
    write_text_atomic(json.dumps(record, indent=1, ensure_ascii=False) + "\n", path)


def _restore(path) -> str:
    """How to get a damaged record back: a committed one from git (rebuilding a paper figure can take
    hours), any other by rebuilding its figure."""
    hint = restore_hint(path)
    return f"{hint} (or delete it and rebuild the figure, from its archive where it has one)" \
        if hint.startswith("restore") else hint


def read_record(path) -> dict:
    """A record, checked for the keys REPORT.md needs (a clear error names a damaged file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError) as err:
        raise ValueError(f"record {path} is unreadable ({err}): {_restore(path)}") from None
    if not isinstance(record, dict):
        raise ValueError(f"record {path} is not a record (a JSON {type(record).__name__}): {_restore(path)}")
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        raise ValueError(f"record {path} lacks {', '.join(missing)}: {_restore(path)}")
    name = os.path.splitext(os.path.basename(str(path)))[0]
    if record["id"] != name:
        raise ValueError(f"record {path} is the record of {str(record['id'])[:60]!r}, not of {name!r}: {_restore(path)}")
    if "sha256" in record and record["sha256"] != record_sha256(record):
        raise ValueError(f"record {path} was changed after its claims job wrote it (its content does not match its "
                         f"sha256): {_restore(path)}")
    return record


def record_or_none(path) -> dict | None:
    """The checked record at ``path`` (:func:`read_record`), or None when it is absent or damaged (a
    rebuild then writes it anew)."""
    try:
        return read_record(path) if os.path.exists(path) else None
    except ValueError:
        return None
