"""The rule history (config/rule_history.yaml): every claim decided at paper scale has an entry, and no
claim's rule differs from the history's latest without a recorded revision."""
import json
from pathlib import Path

import pytest

from ensemble_bandits import registry, rules

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "figures" / "paper"


def _entries():
    return registry.load_registry(ROOT / "config", ROOT / "workflow" / "schemas" / "registry.schema.yaml")


def _history():
    return rules.load_history(ROOT / rules.HISTORY)


def test_every_history_entry_is_complete():
    for fid, claims in _history().items():
        for cid, entry in claims.items():
            rules.check_entry(fid, cid, entry)


def test_no_rule_changed_without_a_recorded_revision():
    assert rules.unrecorded(_entries(), _history()) == []


def test_every_claim_decided_at_paper_scale_has_a_history():
    decided = {}
    for path in sorted(PAPER.glob("records/*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        decided[rec["id"]] = [c["id"] for c in rec["claims"]]
    assert rules.missing(decided, _history()) == []


ENTRY = {"id": "x-fig1", "claims": [
    {"id": "conv", "checks": [{"fn": "rate_ratio", "args": {"curves": ["A"], "max_ratio": 0.5}}]},
    {"id": "better", "checks": [{"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"]}},
                                {"fn": "premise", "args": {"claim": "conv", "if_failed": "inconclusive"}}]}]}


def _changed(margin):
    entry = json.loads(json.dumps(ENTRY))
    entry["claims"][0]["checks"][0]["args"]["max_ratio"] = margin
    return entry


def test_a_rule_change_without_a_revision_fails_and_one_with_a_revision_passes():
    history = {"x-fig1": {c: {"first": {"fingerprint": rules.fingerprint(rules.rule_of(ENTRY, c)), "commit": "a",
                                         "date": "2026-01-01"}} for c in ("conv", "better")}}
    assert rules.unrecorded({"x-fig1": ENTRY}, history) == []
    changed = _changed(0.6)     # the premise's margin: both claims' rules change
    found = rules.unrecorded({"x-fig1": changed}, history)
    assert [f.split(":")[0] for f in found] == ["x-fig1 · conv", "x-fig1 · better"]
    for cid in ("conv", "better"):
        history["x-fig1"][cid]["revisions"] = [{
            "earlier_rule": rules.rule_of(ENTRY, cid), "fingerprint": rules.fingerprint(rules.rule_of(changed, cid)),
            "commit": "b", "date": "2026-01-02", "after_numbers": True, "reason": "r"}]
        rules.check_entry("x-fig1", cid, history["x-fig1"][cid])
    assert rules.unrecorded({"x-fig1": changed}, history) == []
    assert rules.missing({"x-fig1": ["conv", "better", "new"]}, history) == ["x-fig1 · new"]


def test_the_fingerprint_ignores_key_order_and_text_but_not_margins():
    reordered = {"id": "x-fig1", "note": "other words", "claims": [
        {"checks": [{"args": {"max_ratio": 0.5, "curves": ["A"]}, "fn": "rate_ratio"}], "id": "conv", "quote": "q"}]}
    assert rules.fingerprint(rules.rule_of(reordered, "conv")) == rules.fingerprint(rules.rule_of(ENTRY, "conv"))
    assert rules.fingerprint(rules.rule_of(_changed(0.6), "conv")) != rules.fingerprint(rules.rule_of(ENTRY, "conv"))
    with pytest.raises(rules.RuleError):
        rules.rule_of(ENTRY, "absent")


def test_the_tally_counts_the_first_rule_unless_a_revision_fixes_a_named_error():
    rev = {"earlier_rule": {}, "fingerprint": "f", "commit": "c", "date": "d", "after_numbers": True, "reason": "r"}
    assert rules.counted_revision({"first": {}}) is None
    assert rules.counted_revision({"revisions": [rev]}) == 0                           # the first rule's
    assert rules.counted_revision({"revisions": [{**rev, "fixes_error": "e"}]}) is None  # the current rule's
    assert rules.counted_revision({"revisions": [{**rev, "fixes_error": "e"}, rev]}) == 1  # the fix's rule


def test_a_revised_claim_is_decided_again_under_its_first_rule_on_the_committed_archive():
    """epp-fig3a's converges-others-linear: its first rule (log-log slopes, before the rate ratio of
    0035be4) decided again on the committed archive with today's claim code; the tally counts it."""
    from ensemble_bandits import revisions
    from ensemble_bandits.aggregate import build_table
    from ensemble_bandits.data import config_data_dir

    fid, cid = "epp-fig3a", "converges-others-linear"
    if not (PAPER / "archives" / f"{fid}.parquet").exists():
        pytest.fail(f"{fid} has no committed archive")
    entries, history = _entries(), _history()
    first = history[fid][cid]["revisions"][0]["earlier_rule"]
    reduced = revisions.with_rule(entries[fid], cid, first)
    assert [c["id"] for c in reduced["claims"]] == [cid] and reduced["claims"][0]["checks"] == first["checks"]
    assert "readings" not in reduced
    configfile = ROOT / "config" / "config.yaml"
    config = registry.with_defaults(registry.load_yaml(configfile))
    notes = revisions.revision_notes(entries, {fid: {cid: history[fid][cid]}}, [fid], config,
                                     str(config_data_dir(configfile)), build_table)
    note = notes[fid, cid]
    assert note["first"]["how"] == "archive" and note["first"]["status"] in ("reproduced", "not reproduced",
                                                                               "inconclusive")
    assert note["counted"] == {"rule": "first", **note["first"]} and note["commits"] == ["0035be4"]


def test_an_earlier_rule_behind_a_change_in_code_shows_its_committed_verdict():
    from ensemble_bandits import revisions

    rev = {"earlier_rule": {"checks": []}, "fingerprint": "f", "commit": "c1", "date": "d", "after_numbers": True,
           "reason": "r", "recomputable": False, "earlier_verdict": {"status": "reproduced", "commit": "c0"}}
    got = revisions._verdict_under({}, "x", {"first": {}, "revisions": [rev]}, 0, {}, "", None)
    assert got["status"] == "reproduced" and got["how"].startswith("as committed at c0; the change at c1")


def test_the_committed_report_marks_every_revised_claim():
    """Every revised claim of a committed record is marked in figures/paper/REPORT.md with its revisions
    (the report was regenerated after the history last changed)."""
    text = (PAPER / "REPORT.md").read_text(encoding="utf-8")
    unmarked = []
    for fid, claims in _history().items():
        if f"### {fid} — " not in text:
            continue
        section = text.split(f"### {fid} — ", 1)[1].split("\n### ", 1)[0]
        for cid, entry in claims.items():
            commits = [r["commit"] for r in entry.get("revisions") or []]
            row = next((line for line in section.splitlines() if line.startswith(f"| {cid}: ")), "")
            if commits and not all(f"revised at {c}" in row for c in commits):
                unmarked.append(f"{fid} · {cid}")
    assert unmarked == [], f"regenerate figures/paper/REPORT.md (report_all): not marked revised: {unmarked}"


LEVEL_REVISION = "ccc45da"        # 'converged' of epp-fig11 and epp-fig12a-c: a level test instead of a rate ratio


def test_the_converged_premise_revision_is_listed_for_the_premise_and_every_claim_it_gates():
    """The level test that replaced the rate ratio of 'converged' (issue 52) is a recorded revision, after the
    numbers, of the premise and of each claim that rests on it: earlier rule the rate ratio below 0.5, later
    rule (today's) the level below 0.1 of a uniformly random policy's per-round regret; it names the error it
    fixes, so the tally counts the level test's verdict."""
    entries, history = _entries(), _history()
    gated = {"epp-fig11": ["converged", "slight-decrease", "c-10000-strong"],
             "epp-fig12a": ["converged", "discrete-update-better"],
             "epp-fig12b": ["converged", "continuous-reference-better"],
             "epp-fig12c": ["converged", "perturbation-insensitive"]}
    for fid, cids in gated.items():
        for cid in cids:
            rev = history[fid][cid]["revisions"][-1]
            assert rev["commit"] == LEVEL_REVISION and rev["date"] == "2026-11-29" and rev["after_numbers"] is True
            assert rev["fixes_error"] and rules.counted_revision(history[fid][cid]) is None
            before = rev["earlier_rule"] if cid == "converged" else rev["earlier_rule"]["premises"]["converged"]
            assert [c["fn"] for c in before["checks"]] == ["rate_ratio"]
            now = rules.rule_of(entries[fid], cid)
            assert rev["fingerprint"] == rules.fingerprint(now)
            level = now if cid == "converged" else now["premises"]["converged"]
            assert level["checks"] == [{"fn": "level_below", "args": {"fraction": 0.1}}]


def test_the_converged_premise_under_its_first_rule_is_decided_again_beside_the_level_test():
    """epp-fig11's converged: the rate ratio (first rule) decided again on the committed archive passes the
    G = 1 full history at 0.465; the committed record, under the level test, fails it (0.26 to 0.36 of the
    random policy's per-round regret); the section row shows both, and a gated claim's row the verdict
    committed under the rule its latest revision replaced."""
    from ensemble_bandits import records, revisions
    from ensemble_bandits.aggregate import build_table
    from ensemble_bandits.data import config_data_dir

    fid = "epp-fig11"
    if not (PAPER / "archives" / f"{fid}.parquet").exists():
        pytest.fail(f"{fid} has no committed archive")
    entries, history = _entries(), _history()
    configfile = ROOT / "config" / "config.yaml"
    config = registry.with_defaults(registry.load_yaml(configfile))
    notes = revisions.revision_notes(entries, {fid: {c: history[fid][c] for c in ("converged", "slight-decrease")}},
                                     [fid], config, str(config_data_dir(configfile)), build_table)
    first = notes[fid, "converged"]["first"]
    assert first["how"] == "archive" and first["status"] == "reproduced" and "= 0.4652 [" in first["numbers"]
    record = {c["id"]: c for c in records.read_record(PAPER / "records" / f"{fid}.json")["claims"]}
    assert record["converged"]["status"] == "not reproduced" and "of a uniformly random policy's" in \
        record["converged"]["numbers"]
    cell = revisions.revision_cell({"revision": notes[fid, "converged"]})
    assert f"revised at {LEVEL_REVISION}" in cell and "under the first rule (1a101d2): reproduced" in cell
    gated = revisions.revision_cell({"revision": notes[fid, "slight-decrease"]})
    assert (f"revised at {LEVEL_REVISION}: the premise 'converged' decided by a level test" in gated
            and "(the verdict before it: reproduced, committed at fc6c827)" in gated)
    assert "counted: the current verdict" in gated and record["slight-decrease"]["status"] == "inconclusive"
