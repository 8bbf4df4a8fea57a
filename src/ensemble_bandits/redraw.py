"""Provenance of a record re-decided from committed archives (a redraw: nothing simulated).

A record's ``run`` names the run that made its numbers.  A redraw makes no numbers: it reads them
from an archive that an earlier run made, so the record keeps that run (from the record it replaces,
committed with the archive) and names the redraw separately, under ``redecided`` (commit, date,
machine of the re-decision).  A redraw that changes nothing but this provenance keeps the record in
place byte for byte, so rebuilding a figure from its archive leaves a committed tree clean (unless the
record was decided by uncommitted code: then the re-decision at a commit is recorded); so does
a REPORT.md assembled again from unchanged records (:func:`unchanged_report`)."""
from __future__ import annotations

import json
import os

PROVENANCE = ("run", "redecided", "sha256")     # sha256: the record's own hash, which covers the provenance


def _content(record: dict) -> dict:
    """A record without its provenance: what a redraw can change."""
    return {k: v for k, v in record.items() if k not in PROVENANCE}



def previous_record(path) -> dict | None:
    """The record in place at ``path`` (None when there is none or it is unreadable: a redraw then
    writes a new record with this run's provenance)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("run"), dict) else None


def redrawn_record(record: dict, previous: dict | None, archived: bool = True) -> dict:
    """The record to write for ``record`` (decided now, ``run`` = this run) when nothing was simulated
    for it: its numbers came from committed archives (``archived``) or it has no simulated cells (a
    static table, computed again).  ``previous``: the record it replaces (None: no earlier run is
    known, so ``record`` stands as it is).  A record it builds anew carries the old ``sha256``: the
    writer stamps it again (:func:`records.stamped`)."""
    if previous is None:
        return record
    if _content(record) == _content(previous):
        if _uncommitted(previous) and not _uncommitted(record):
            # decided by code that was never committed: this re-decision at a commit is recorded
            return {**previous, "redecided": record["run"]}
        return previous                                   # nothing but provenance changed
    if not archived:
        return record                                     # a static table computed anew: this run made it
    return {**record, "run": previous["run"], "redecided": record["run"]}


def _uncommitted(record: dict) -> bool:
    """The verdicts of ``record`` were last decided by uncommitted code (its ``redecided`` run, else its run)."""
    run = record.get("redecided") or record.get("run") or {}
    return str(run.get("commit", "")).endswith("+uncommitted")


def redecided_line(record: dict) -> str:
    """REPORT.md's note on a re-decided record ('' for one decided by the run that made it)."""
    again = record.get("redecided")
    if not again:
        return ""
    return (f"*Re-decided* at commit {again['commit']} ({again['generated']}) from the archive of the run at commit "
            f"{record['run']['commit']} ({record['run']['generated']}, {record['run']['machine']}).")


def unchanged_report(text: str, previous_path) -> str:
    """``text``, a REPORT.md just assembled, or the one at ``previous_path`` when the two differ only
    in their provenance line (the commit, date and machine of the assembly): a report of unchanged
    records keeps the committed file byte for byte."""
    try:
        with open(previous_path, encoding="utf-8") as fh:
            previous = fh.read()
    except OSError:
        return text

    def body(t):
        return [line for line in t.splitlines() if not line.startswith("Provenance: ")]

    return previous if body(previous) == body(text) else text
