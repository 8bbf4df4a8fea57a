"""The committed paper-scale records (figures/paper/records)."""
import json
from pathlib import Path

import pytest

from ensemble_bandits import records, report

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "figures" / "paper"


def test_committed_records_are_complete_and_name_committed_figures():
    committed = sorted(PAPER.glob("records/*.json"))
    assert committed, "no committed paper-scale records"
    for path in committed:
        rec = records.read_record(path)
        assert rec["id"] == path.stem
        assert (PAPER / rec["png"]).is_file(), f"{path.name}: its figure {rec['png']} is not committed"
        assert rec["run"]["commit"] and rec["run"]["generated"].endswith("UTC")
        for claim in rec["claims"]:
            assert claim["status"] in report.ICON and claim["source"] in ("verbatim", "paraphrase", "designed")


def test_committed_report_lists_every_recorded_id():
    text = (PAPER / "REPORT.md").read_text(encoding="utf-8")
    for path in PAPER.glob("records/*.json"):
        assert f"### {path.stem} — " in text, path.stem


def test_pending_run_files_are_current_paper_cells_with_their_logs():
    """figures/paper/pending (a paper-scale figure run over several sessions): every kept run file
    is a cell of today's registry at paper scale (or of a pending reading, or of a timing figure with one:
    its curves are timed again beside the reading's, docs/performance.md), under that cell's key, with
    its job's log, and a figure of it is not committed yet, or committed with an archive that does not cover
    it (e.g. a panel added since: its files leave pending when an archive covers them), or committed with a
    record whose runs were made by uncommitted code (its rerun from a commit is being carried: docs/scales.md)."""
    import numpy as np
    from ensemble_bandits import archive, registry

    pending = PAPER / "pending"
    if not (pending / "runs").is_dir():
        pytest.skip("nothing pending")
    config = registry.load_yaml(ROOT / "config" / "config.yaml")
    entries = registry.load_registry(ROOT / "config", ROOT / "workflow" / "schemas" / "registry.schema.yaml")
    owners, cells, waiting, covered = {}, {}, set(), set()
    for fid, entry in entries.items():
        fig = registry.resolve(entry, "paper", config["scales"])
        record = PAPER / "records" / f"{fid}.json"
        made_uncommitted = record.exists() and json.loads(record.read_text())["run"]["commit"].endswith("+uncommitted")
        if record.exists() and not made_uncommitted:          # (fid, key) of the cells its archive covers
            covered |= {(fid, k) for k in archive.usable_keys(PAPER / "archives" / f"{fid}.parquet", fig)}
        for s in fig["series"] + fig.get("pending_series", []):
            owners.setdefault(s["key"], set()).add(fid)
            cells[s["key"]] = s["cell"]
        waiting |= {s["key"] for s in fig.get("pending_series", [])}
        if fig.get("pending_series") and all(s["cell"].get("timing") == "unbatched" for s in fig["series"]):
            waiting |= {s["key"] for s in fig["series"]}     # a timing figure's curves, timed again beside it
    runs = sorted((pending / "runs").glob("*/seeds-*.npz"))
    assert runs
    for run in runs:
        key = run.parent.name
        assert key in cells, f"{key}: not a cell of any figure at paper scale today"
        assert json.loads((run.parent / "cell.json").read_text()) == cells[key]
        assert "done in" in (pending / "logs" / "simulate" / f"{key}-{run.stem[len('seeds-'):]}.log").read_text()
        assert set(np.load(run).files) >= {"seed", "t", "regret"}
        if key in waiting:          # a pending reading's cell: kept until the reading is run and committed
            continue
        done = [fid for fid in owners[key] if (fid, key) in covered]
        assert set(done) != owners[key], \
            f"{key}: every figure of this cell is committed with an archive that covers it; its pending files should have gone"


def test_pending_checkpoints_are_current_jobs_without_a_run_file():
    """figures/paper/pending/checkpoints (a job longer than a session, stopped and committed to resume in
    the next): each checkpoint's header is today's identity of its job (cell key, algorithms version,
    seed range, horizon), so a stale one is caught here rather than when the job would resume, and its
    job has no run file yet (a finished job's checkpoint goes with it)."""
    from ensemble_bandits import registry
    from ensemble_bandits.cells import identity_of

    ckpts = sorted((PAPER / "pending" / "checkpoints").glob("*/seeds-*.ckpt"))
    if not ckpts:
        pytest.skip("no pending checkpoint")
    config = registry.load_yaml(ROOT / "config" / "config.yaml")
    entries = registry.load_registry(ROOT / "config", ROOT / "workflow" / "schemas" / "registry.schema.yaml")
    cells = {s["key"]: s["cell"] for entry in entries.values()
             for s in (lambda f: f["series"] + f.get("pending_series", []))(registry.resolve(entry, "paper", config["scales"]))}
    for path in ckpts:
        key = path.parent.name
        a, b = (int(x) for x in path.stem[len("seeds-"):].split("-"))
        assert key in cells, f"{path}: not a cell of any figure at paper scale today"
        with open(path, "rb") as fh:
            header = json.loads(fh.readline())
        assert header["identity"] == json.loads(str(identity_of(cells[key], list(range(a, b))))), f"{path}: stale"
        assert not (PAPER / "pending" / "runs" / key / f"{path.stem}.npz").exists(), f"{path}: its job is done"


def _records_with_registry_claims():
    """(record, {claim id: the registry's claim}) of every committed paper record."""
    from ensemble_bandits import registry

    entries = registry.load_registry(ROOT / "config", ROOT / "workflow" / "schemas" / "registry.schema.yaml")
    for path in sorted(PAPER.glob("records/*.json")):
        rec = records.read_record(path)
        yield rec, {c["id"]: c for c in entries[rec["id"]].get("claims", [])}


def test_every_committed_finding_that_is_not_reproduced_names_its_cause():
    """A not reproduced or inconclusive claim in a committed paper record has a cause in the
    registry (the report shows it), from the fixed list; so has a reading's not reproduced or
    inconclusive verdict on a claim the paper text reproduces (``reading_causes``)."""
    from ensemble_bandits.claims.evaluate import CAUSES

    missing = []
    for rec, declared in _records_with_registry_claims():
        for claim in rec["claims"]:
            if claim["status"] in ("not reproduced", "inconclusive"):
                cause = declared.get(claim["id"], {}).get("cause")
                if not cause:
                    missing.append(f"{rec['id']}: {claim['id']}")
                else:
                    assert cause["kind"] in CAUSES and cause["why"].strip()
                continue                     # its cause covers the readings (it names their verdicts)
            for r in claim.get("readings", []):
                if r["status"] in ("not reproduced", "inconclusive"):
                    cause = declared.get(claim["id"], {}).get("reading_causes", {}).get(r["reading"])
                    if not cause:
                        missing.append(f"{rec['id']}: {claim['id']} under reading {r['reading']!r}")
                    else:
                        assert cause["kind"] in CAUSES and cause["why"].strip()
    assert not missing, f"not reproduced or inconclusive without a cause: {missing}"


def test_every_committed_record_states_the_registrys_current_cause_and_note():
    """A claim's cause and note in a committed record are the registry's as they stand: an edit of the
    registry's text is followed by re-deciding the figure (from its archive: nothing is simulated), so the
    committed record never carries a cause the registry no longer gives (nor lacks one it gives)."""
    from ensemble_bandits.claims.evaluate import cause_of, claim_source

    stale = []
    for rec, declared in _records_with_registry_claims():
        for claim in rec["claims"]:
            entry = declared.get(claim["id"])
            assert entry is not None, f"{rec['id']}: claim {claim['id']!r} is not in the registry"
            if claim.get("cause") != (cause_of(entry["cause"]) if "cause" in entry else None):
                stale.append(f"{rec['id']}: {claim['id']} (cause)")
            if claim.get("note") != claim_source(entry)[1]:
                stale.append(f"{rec['id']}: {claim['id']} (note)")
    assert not stale, f"records whose text the registry has changed since (re-decide them): {stale}"
