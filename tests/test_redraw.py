"""A record re-decided from committed archives keeps the run that made its numbers and names the
re-decision apart (ensemble_bandits.redraw); one that changes nothing else stays byte-identical.
Fast: the workflow's end-to-end check is in tests/test_archive.py (marked workflow)."""
from __future__ import annotations

import json

from ensemble_bandits import records, redraw, report

ARCHIVE_RUN = {"commit": "c0d6284", "generated": "2026-11-27 05:14 UTC", "machine": "vm, 2 cores, Linux",
               "algorithms": "3", "versions": "ensemble_bandits 0.1.0; numpy 2"}
TODAY = {**ARCHIVE_RUN, "commit": "d2ab500", "generated": "2026-11-29 07:00 UTC", "machine": "other, 2 cores"}


def _record(numbers="mean 1.0", run=ARCHIVE_RUN):
    return {"id": "glmes-fig2a", "paper": "glmes", "title": "t", "seeds": 10, "horizon": 100, "choices": "",
            "claims": [{"id": "c1", "quote": "q", "source": "verbatim", "status": "reproduced", "numbers": numbers}], "png": "glmes-fig2a.png",
            "run": run}


def test_a_redraw_that_changes_no_number_keeps_the_record_in_place():
    previous = _record()
    assert redraw.redrawn_record(_record(run=TODAY), previous) is previous
    # records carry their own hash, which covers their run: it is provenance too
    a, b = ({**r, "sha256": records.record_sha256(r)} for r in (_record(), _record(run=TODAY)))
    assert redraw.redrawn_record(b, a) is a


def test_a_record_decided_by_uncommitted_code_gets_its_committed_redecision():
    """Its numbers unchanged, a record last decided at '<commit>+uncommitted' records the re-decision at a
    commit once; a later redraw that changes nothing then keeps it byte for byte."""
    dirty = _record(run={**ARCHIVE_RUN, "commit": "c0d6284+uncommitted"})
    new = redraw.redrawn_record(_record(run=TODAY), dirty)
    assert new["run"] == dirty["run"] and new["redecided"] == TODAY
    assert records.stamped(new)["sha256"] == records.record_sha256(new)   # the writer's stamp covers the redecision
    assert redraw.redrawn_record(_record(run={**TODAY, "commit": "e7ff1fe"}), new) is new
    assert redraw.redrawn_record(_record(run={**TODAY, "commit": "e7ff1fe+uncommitted"}), dirty) is dirty


def test_a_redraw_that_changes_a_number_names_both_runs():
    new = redraw.redrawn_record(_record("mean 2.0", run=TODAY), _record())
    assert new["run"] == ARCHIVE_RUN                 # the run that made the archive
    assert new["redecided"] == TODAY                 # the commit that re-decided it
    assert new["claims"][0]["numbers"] == "mean 2.0"
    line = redraw.redecided_line(new)
    assert "d2ab500" in line and "c0d6284" in line and "vm, 2 cores" in line


def test_a_second_redraw_keeps_the_archive_run_and_the_first_redecision():
    once = redraw.redrawn_record(_record("mean 2.0", run=TODAY), _record())
    later = {**TODAY, "commit": "fffffff"}
    assert redraw.redrawn_record(_record("mean 2.0", run=later), once) is once
    twice = redraw.redrawn_record(_record("mean 3.0", run=later), once)
    assert twice["run"] == ARCHIVE_RUN and twice["redecided"] == later


def test_without_a_record_in_place_the_new_record_stands(tmp_path):
    assert redraw.previous_record(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert redraw.previous_record(tmp_path / "bad.json") is None
    new = _record(run=TODAY)
    assert redraw.redrawn_record(new, None) is new


def test_the_kept_record_is_written_byte_for_byte(tmp_path):
    path = tmp_path / "glmes-fig2a.json"
    records.write_record(_record(), path)
    before = path.read_bytes()
    kept = redraw.redrawn_record(_record(run=TODAY), redraw.previous_record(path))
    records.write_record(kept, path)
    assert path.read_bytes() == before
    assert json.loads(before)["run"] == ARCHIVE_RUN


def test_report_shows_the_redecision():
    rec = redraw.redrawn_record(_record("mean 2.0", run=TODAY), _record())
    text = report.report_markdown("paper", [rec])
    assert "*Re-decided* at commit d2ab500" in text and "archive of the run at commit c0d6284" in text
    assert "Re-decided" not in report.report_markdown("paper", [_record()])


def test_a_static_table_keeps_its_record_only_while_it_is_unchanged():
    previous = _record()
    assert redraw.redrawn_record(_record(run=TODAY), previous, archived=False) is previous
    new = _record("mean 2.0", run=TODAY)
    assert redraw.redrawn_record(new, previous, archived=False) is new


def test_a_report_of_unchanged_records_keeps_the_report_in_place(tmp_path):
    old = "# Replication report\n\nProvenance: commit c0d6284, generated 2026-11-27.\n\n56 claims checked.\n"
    path = tmp_path / "REPORT.md"
    path.write_text(old)
    assert redraw.unchanged_report(old.replace("c0d6284, generated 2026-11-27", "d2ab500, generated 2026-11-29"),
                                   path) == old
    changed = old.replace("c0d6284", "d2ab500").replace("56", "57")
    assert redraw.unchanged_report(changed, path) == changed
    assert redraw.unchanged_report(changed, tmp_path / "none.md") == changed
