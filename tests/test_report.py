"""REPORT.md: the tally counts each paper finding once and leaves reported numbers out; claims
are marked verbatim, paraphrase or designed; the header says how claims are decided."""
import re

import pytest

from ensemble_bandits import findings, records, report


def _claim(cid, quote, status, source="verbatim", note=""):
    return {"id": cid, "quote": quote, "source": source, "status": status, "numbers": "n", "note": note}


CUBE = "p(P_zeta) lower-bounds P(<zeta, v> >= 1) for every unit v"


RUN = {"commit": "abc1234", "generated": "2026-01-01 00:00 UTC", "machine": "m", "algorithms": "2",
       "versions": "ensemble_bandits 0.1.0; python 3.11.7"}


def _fig(fid, paper, *claims):
    return {"id": fid, "paper": paper, "title": fid, "seeds": None, "horizon": 1, "choices": "", "claims": list(claims),
            "run": RUN}


@pytest.fixture
def md(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    figures = [
        _fig("epp-tab1", "epp", _claim("bounds", CUBE, "not reproduced", "paraphrase")),
        _fig("epp-tab4", "epp", _claim("bounds", CUBE, "not reproduced", "paraphrase")),
        _fig("epp-tab5", "epp", _claim("bounds", CUBE, "not reproduced", "paraphrase"),
             _claim("isotropy", "Isotropy: Yes", "reproduced", "paraphrase")),
        _fig("epp-fig8a", "epp", _claim("analogous", "all analogous", "reproduced")),
        _fig("epp-fig8b", "epp", _claim("analogous", "all analogous", "inconclusive")),
        _fig("lines-dscale", "lines", _claim("slope", "R(T) = O~(d^{3/2} sqrt(T))", "reported", "paraphrase"),
             _claim("finding", "ours", "reported", "designed")),
        _fig("phe-fig1", "phe", _claim("c1", "LinPHE | wins", "reproduced", note="n")),
    ]
    return report.report_markdown("paper", figures)


def test_each_finding_counts_once(md):
    # Cube bound once (not three times), the analogy once (inconclusive: not reproduced in each figure)
    assert "4 claims checked: 2 reproduced, 1 not reproduced, 1 inconclusive." in md
    assert "(3 rows repeat a finding)" in md
    assert "2 rows report numbers without a verdict (*reported*) and are not counted." in md
    rows = [line for line in md.splitlines() if line.startswith("| bounds:")]
    assert len(rows) == 3 and "counted once" not in rows[0]
    assert all("*(the finding of epp-tab1, counted once)*" in r for r in rows[1:])


def test_a_designed_condition_is_its_figures_own(monkeypatch):
    # the same worded condition of ours in two figures: two rows, each with its own verdict, not one finding
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    cond = {**_claim("converged", "curves converged", "reproduced", "designed"), "finding": False}
    figures = [_fig("epp-fig11", "epp", cond),
               _fig("epp-fig12a", "epp", {**cond, "status": "not reproduced"})]
    assert len(findings.findings(figures)) == 2
    summary = [line for line in report.report_markdown("paper", figures).splitlines() if "· converged]" in line]
    assert len(summary) == 2
    assert "epp-fig11 · converged" in summary[0] and "designed, not counted (its runs: reproduced)" in summary[0]
    assert "epp-fig12a · converged" in summary[1] and "(its runs: not reproduced)" in summary[1]
    assert "counted once" not in report.report_markdown("paper", figures)


def test_sources_are_marked(md):
    assert "| c1: “LinPHE \\| wins” *n* | ✅ reproduced |" in md
    assert re.search(r"\| isotropy: \(paraphrase\) Isotropy: Yes \| ✅ reproduced \|", md)
    assert "| finding: (designed) ours *(designed: shown, not counted)* | 📏 reported |" in md
    assert "“Isotropy" not in md and "“ours" not in md          # only the paper's own words are quoted


def test_header_says_how_claims_are_read_and_decided(md):
    for phrase in ("A claim in quotation marks is the paper's own sentence", "*(paraphrase)*", "*(designed)*",
                   "one-sided test at 2.5 %", "Holm's correction", "equivalence tests",
                   "premise is undecided", "second block of seeds", "*Reported*"):
        assert phrase in md, phrase
    assert "Each claim is the paper's own sentence" not in md


def test_claims_rst_marks_sources():
    rst = report.claims_rst("x", [_claim("a", "words", "reproduced"), _claim("b", "ours", "reported", "designed")])
    assert "“words”" in rst and "(designed) ours" in rst


# ---------------------------------------------------------------------------------------
# records: REPORT.md assembled from figures' records, some from earlier runs


def _resolved(fid="phe-fig1", series=True):
    return {"entry": {"id": fid, "paper": fid.split("-")[0], "title": "T", "choices": "c"},
            "series": [1] if series else [], "seeds": 7, "horizon": 100}


def test_records_of_several_commits_name_their_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: now.")
    old = records.make_record(_resolved("phe-fig1"), [_claim("c1", "q", "reproduced")], run=RUN)
    records.write_record(old, tmp_path / "phe-fig1.json")
    new = records.make_record(_resolved("phe-tab1", series=False), [])
    assert new["run"]["algorithms"] == records.ALGORITHMS_VERSION and new["seeds"] is None
    figures = [records.read_record(tmp_path / "phe-fig1.json"), new]
    md = report.report_markdown("paper", figures)
    assert "Assembled from the records of runs at 2 commits (`figures/paper/records/`" in md
    assert "commit abc1234 (algorithms v2): 1 figure; commit " in md
    assert md.count("*Run:* commit ") == 2
    assert "*Run:* commit abc1234 (algorithms v2), generated 2026-01-01 00:00 UTC." in md
    assert "1 claims checked: 1 reproduced" in md and "7 seeds × 100 rounds" in md
    # records of one commit (at any times) read as one run's report: no run lines
    later = dict(RUN, generated="2026-02-02 00:00 UTC")
    same = [old, records.make_record(_resolved("phe-tab1", series=False), [], run=later)]
    plain = report.report_markdown("paper", same)
    assert "*Run:*" not in plain and "Assembled from" not in plain


def test_a_verdict_decided_under_an_earlier_rule_is_marked_and_a_new_claim_listed(monkeypatch):
    """A record's claim whose note the registry has changed since (or that now rests on a premise the
    record lacks) is marked "earlier rule" and counted as such; a registry claim the record lacks is
    listed as not decided yet."""
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    old = _claim("slope", "sublinear", "reproduced")
    old["note"] = "slope at most 0.9"
    same = _claim("same", "beats B", "reproduced")
    same["note"] = "paired"
    gated = _claim("gated", "beats C", "reproduced")
    gated["note"] = "paired"
    entries = {"epp-fig11": {"claims": [
        {"id": "slope", "quote": "sublinear", "note": "rate ratio below 0.8", "checks": []},
        {"id": "same", "quote": "beats B", "note": "paired", "checks": []},
        {"id": "converged", "quote": "converged", "note": "Designed: rate ratio below 0.5", "checks": [], "finding": False},
        {"id": "gated", "quote": "beats C", "note": "paired",
         "checks": [{"fn": "premise", "args": {"claim": "converged"}}]}]}}
    figs = report.with_registry_notes([_fig("epp-fig11", "epp", old, same, gated)], entries)
    marks = {c["id"]: c.get("earlier_rule", False) for c in figs[0]["claims"]}
    assert marks == {"slope": True, "same": False, "gated": True} and figs[0]["undecided"] == ["converged"]
    md = report.report_markdown("paper", figs)
    assert "2 of these verdicts were decided under an earlier rule" in md
    assert "Decided under an earlier rule (" in md and "epp-fig11 · slope, epp-fig11 · gated." in md
    assert "Not decided yet (" in md and "epp-fig11 · converged." in md
    summary = md[md.index("## Summary"):md.index("## Contents")]
    assert summary.count("✅ reproduced (earlier rule)") == 2


def test_read_record_names_a_damaged_file(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json is unreadable"):
        records.read_record(tmp_path / "bad.json")
    (tmp_path / "short.json").write_text('{"id": "x"}')
    with pytest.raises(ValueError, match="lacks paper, title"):
        records.read_record(tmp_path / "short.json")


def test_provenance_line_is_built_from_run_info():
    line = records.provenance_line("smoke", RUN)
    assert line == ("Provenance: commit abc1234, scale `smoke`, generated 2026-01-01 00:00 UTC, machine m; "
                    "ensemble_bandits 0.1.0 (algorithms v2); python 3.11.7.")


def test_summary_table_gives_cause_paper_figure_and_readings(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    dt = _claim("dt", "DT is competitive", "not reproduced")
    dt["cause"] = {"kind": "reading", "why": "the warm-up is redone every epoch"}
    dt["decisive"] = "[P] DT - UCB: diff 229 [159, 298] (n=20)"
    dt["readings"] = [{"reading": "once", "label": "warm-up once", "says": "the warm-up is done once",
                       "status": "reproduced", "numbers": "m"}]
    weak = _claim("weak", "m = 10 suffices", "inconclusive")
    weak["cause"] = {"kind": "underpowered", "why": "the interval is wider than the band"}
    weak["seeds_to_decide"] = 120
    moved = _claim("moved", "cheaper elsewhere", "not reproduced", "designed")
    moved["finding"] = False
    figures = [dict(_fig("glmes-fig10", "glmes", weak), title="Later (Fig. 10)", seeds=20),
               dict(_fig("glmes-fig2", "glmes", dt, moved), title="Logistic (Fig. 2)")]
    md = report.report_markdown("paper", figures, archived={"glmes-fig2"})
    assert "2 claims checked: 0 reproduced, 1 not reproduced, 1 inconclusive." in md
    assert "Of the 2 not reproduced or inconclusive, 1 is reproduced under another documented reading." in md
    assert "Their causes: reading 1, underpowered 1." in md
    assert "1 designed claim(s)" in md
    summary = md[md.index("## Summary"):md.index("## Contents")]
    rows = [line for line in summary.splitlines() if line.startswith("| [")]
    assert rows[0].startswith("| [glmes-fig2 · dt](#glmes-fig2) | Fig. 2, arXiv 2510.10730 | ❌ not reproduced | "
                              "reading: the warm-up is redone every epoch | [P] DT - UCB: diff 229")
    assert rows[0].endswith("| paper text: not reproduced · warm-up once: reproduced |")
    dt["readings"][0]["partial"] = "the first panel only"            # decides part of the claim: not counted
    md = report.report_markdown("paper", figures, archived={"glmes-fig2"})
    assert "Of the 2 not reproduced or inconclusive, 0 are reproduced under another documented reading." in md
    assert "warm-up once: reproduced (the first panel only) |" in md
    assert "🛠 designed, not counted (its runs: not reproduced)" in rows[1]
    assert "underpowered: the interval is wider than the band (about 120 seeds would decide it; this run has 20)" \
        in rows[2]
    assert md.index('<a id="glmes-fig2"></a>') < md.index('<a id="glmes-fig10"></a>')   # natural order
    assert "No archive (" in md and "glmes-fig10" in md.split("No archive (")[1].split("\n")[0]


def test_a_not_reproduced_claim_without_a_cause_says_so(md):
    assert "cause: not stated" in md


def test_a_table_figure_is_shown_as_a_table(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    fig = {**_fig("epp-tab1", "epp"), "png": "epp-tab1.png"}
    md_table = "**Table 1**\n\n| P | rho |\n|:--|:--|\n| Gaussian | 0.0856 |\n\n_caption_\n"
    md = report.report_markdown("paper", [fig], tables={"epp-tab1": md_table})
    section = md[md.index("### epp-tab1"):]
    assert "| Gaussian | 0.0856 |" in section and "![epp-tab1]" not in section
    assert "[epp-tab1.png](epp-tab1.png)" in section
    plain = report.report_markdown("paper", [fig])
    assert "![epp-tab1](epp-tab1.png)" in plain


def test_a_reduced_scale_report_says_causes_are_the_paper_scales(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    figures = [_fig("epp-fig8b", "epp", _claim("analogous", "all analogous", "inconclusive"))]
    paper, default = report.report_markdown("paper", figures), report.report_markdown("default", figures)
    assert "no cause stated 1." in paper and report.REDUCED_CAUSES not in paper
    assert "no cause stated (reduced scale; see below) 1." in default and report.REDUCED_CAUSES in default


def test_a_reading_verdict_shows_its_own_cause(monkeypatch):
    """A claim reproduced under the paper text but not under a reading shows the registry's
    ``reading_causes`` entry beside that reading's verdict (and its kind in the summary); a reading
    verdict without one says the cause is not stated, as the paper text's would."""
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")

    def fig():
        c = _claim("c10k", "C = 10,000 is strong", "reproduced")
        c["readings"] = [{"reading": "converging", "label": "G = 4, lr 1e-3", "says": "s", "status": "inconclusive",
                          "numbers": "m", "seeds": 5},
                         {"reading": "code", "label": "G = 4", "says": "s", "status": "reproduced", "numbers": "m"}]
        return _fig("epp-fig11", "epp", c)

    entries = {"epp-fig11": {"claims": [{"id": "c10k", "quote": "C = 10,000 is strong", "note": "", "checks": [],
                                         "reading_causes": {"converging": {"kind": "measurement",
                                                                           "why": "the curves  flattened early"}}}]}}
    md = report.report_markdown("paper", report.with_registry_notes([fig()], entries))
    assert "G = 4, lr 1e-3: inconclusive (5 seeds) — measurement · G = 4: reproduced |" in md
    assert "❔ inconclusive (5 seeds) — cause: **measurement**: the curves flattened early" in md
    bare = report.report_markdown("paper", report.with_registry_notes([fig()], {}))
    assert "G = 4, lr 1e-3: inconclusive (5 seeds) — cause not stated" in bare
    assert "❔ inconclusive (5 seeds) — cause: not stated" in bare


def test_numbers_read_as_prose_and_a_deciding_number_names_its_bound():
    assert report.readable("diff 1.125e+04 [1.053e+04, 1.197e+04] (n=10), p 1e-09") == \
        "diff 11,250 [10,530, 11,970] (n=10), p 1e-09"
    assert report.readable("ratio 2.5e-01 at t = 1e5x") == "ratio 0.25 at t = 1e5x"
    numbers = "[P] A - B: diff 239.6 [140.4, 338.7] (n=200), means 948 vs 708, band +-141.8 | [P] C - B: diff 1 [0, 2]"
    assert report._with_threshold("[P] A - B: diff 239.6 [140.4, 338.7] (n=200)", numbers).endswith(", band +-141.8")
    assert report._with_threshold("[P] C - D: diff -3 [-5, -1] (n=9)", "other").endswith("(against 0)")
    assert report._with_threshold("[P] A - B", numbers).startswith("[P] A - B: diff 239.6")


def _revised(status, counted_status, rule="first"):
    claim = _claim("c", f"quote {counted_status} {rule}", status)
    claim["revision"] = {"commits": ["abc1234"], "reasons": ["why"], "fixes_error": None if rule != "current" else "e",
                         "after_numbers": True, "first_commit": "0001111",
                         "first": {"status": counted_status, "how": "archive"},
                         "counted": {"rule": rule, "status": counted_status} if rule != "current" else {"rule": rule}}
    return claim


def test_a_revised_finding_counts_its_first_rule_unless_the_revision_fixes_an_error(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    figures = [_fig("epp-fig2a", "epp", _revised("inconclusive", "not reproduced")),
               _fig("epp-fig6", "epp", _revised("inconclusive", "reproduced", rule="current"))]
    md = report.report_markdown("paper", figures)
    assert "2 claims checked: 0 reproduced, 1 not reproduced, 1 inconclusive." in md
    assert "2 of these findings are *revised*" in md and "except 1 whose revision fixes a named error" in md
    assert "- **epp**: 2 checked: 0 reproduced, 1 not reproduced, 1 inconclusive" in md
    summary = md[md.index("## Summary"):md.index("## Contents")]
    assert "revised at abc1234; first rule (0001111): not reproduced; counted: **not reproduced**" in summary
    assert "Revised rules." in md and "epp-fig2a · c (first decided 0001111; revised abc1234)" in md
    assert "across the 1 decided findings at most about 0.025 false verdicts are expected" in md


def test_every_paper_sentence_counts_and_only_designed_statements_do_not():
    """One rule for what counts: a claim is left out of the count (``finding: false``) exactly when it
    is a designed statement or transposition of ours (its note starts with ``Designed:``)."""
    from pathlib import Path

    from ensemble_bandits import registry
    from ensemble_bandits.claims.evaluate import claim_source

    root = Path(__file__).resolve().parents[1]
    entries = registry.load_registry(root / "config", root / "workflow" / "schemas" / "registry.schema.yaml")
    mismatched = [f"{fid} · {c['id']}" for fid, e in entries.items() for c in e.get("claims") or []
                  if (c.get("finding", True) is False) != (claim_source(c)[0] == "designed")]
    assert mismatched == []
    designed = _claim("d", "ours", "reproduced", "designed")
    assert not findings.counted([("x", designed)]) and findings.counted([("x", _claim("p", "q", "inconclusive",
                                                                                   "paraphrase"))])


def test_a_deciding_number_without_its_bound_gets_the_registry_bound():
    strict = {"checks": [{"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"]}},
                         {"fn": "premise", "args": {"claim": "c"}}]}
    band = {"checks": [{"fn": "similar_across_panels", "args": {"curves": ["A"], "rel_tol": 0.2}}]}
    mixed = {"checks": [*strict["checks"], *band["checks"]]}
    assert report.rule_bounds(strict) == "0"
    assert report.rule_bounds(band) == "rel_tol 0.2"
    assert report.rule_bounds(mixed) == "0 for the strict comparisons, rel_tol 0.2"
    text = "M = 2 [P] - other panels: diff -6969 [-9886, -4052] (n=10)"
    assert report._with_threshold(text, "unrelated", "rel_tol 0.2").endswith("(rule: rel_tol 0.2)")
    assert report._with_threshold(text, "unrelated", "0").endswith("(against 0)")


def test_a_claim_added_after_the_numbers_says_so(monkeypatch):
    from ensemble_bandits import rules

    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    history = {"epp-tab5": {"isotropy": {"first": {"fingerprint": "f", "commit": "588a485", "date": "d",
                                                   "added_after": "6baa918"}}}}
    assert rules.added_later(history) == {("epp-tab5", "isotropy"): "6baa918"}
    figures = report.with_revisions([_fig("epp-tab5", "epp", _claim("isotropy", "Isotropy: Yes", "reproduced"))],
                                    {}, rules.added_later(history))
    md = report.report_markdown("paper", figures)
    assert "added after the numbers" in md[md.index("## Summary"):md.index("## Contents")]
    assert "epp-tab5 · isotropy (after 6baa918)" in md
    assert "*added to the figure after its first paper-scale numbers (6baa918)*" in md


def test_two_quotes_decided_on_the_same_runs_are_flagged_as_one_piece_of_evidence(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    same = "[Q] A - B: diff 1.312e+04 [1.185e+04, 1.439e+04] (n=10)"
    one = {**_claim("beats", "outperforms baselines", "not reproduced"), "numbers": same}
    two = {**_claim("better", "sublinear and better", "not reproduced"),
           "numbers": f"{same}; [Q] C - B: diff 1 [0, 2] (n=10)"}
    ours = {**_claim("cond", "ours", "reproduced", "designed"), "numbers": same, "finding": False}
    other = {**_claim("else", "other runs", "reproduced"), "numbers": "[Q] A - B: diff 5 [4, 6] (n=10)"}
    figures = [_fig("epp-fig1", "epp", one, other), _fig("epp-fig9a", "epp", two, ours)]
    assert findings.shared_evidence(figures) == {("epp", "outperforms baselines"): ["epp-fig9a · better"],
                                               ("epp", "sublinear and better"): ["epp-fig1 · beats"]}
    md = report.report_markdown("paper", figures)
    assert "2 counted findings state an estimate of the same runs as another counted finding" in md
    assert "<br>same runs as epp-fig9a · better" in md


def test_a_reproduced_finding_on_weak_evidence_is_marked_with_why(monkeypatch):
    """The registry's ``weak`` line reaches the summary, the figure's table and the tally, for a counted
    reproduced finding only (a finding that is not reproduced needs no such mark)."""
    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    entries = {"glmes-fig3b": {"claims": [
        {"id": "l-value", "quote": "l ~ 3.3", "note": "n", "checks": [], "weak": "checks the paper's  arithmetic"},
        {"id": "other", "quote": "b matters", "note": "n", "checks": [], "weak": "never shown"}]}}
    figs = report.with_registry_notes(
        [_fig("glmes-fig3b", "glmes", _claim("l-value", "l ~ 3.3", "reproduced", note="n"),
              _claim("other", "b matters", "not reproduced", note="n"))], entries)
    md = report.report_markdown("paper", figs)
    assert "1 of the 1 reproduced rest on weak evidence" in md
    summary = md[md.index("## Summary"):md.index("## Contents")]
    assert "⚠ weak evidence: checks the paper's arithmetic" in summary
    assert "never shown" not in md
    assert "— ⚠ weak evidence: checks the paper's arithmetic" in md[md.index("## Contents"):]
    assert "*weak evidence:* checks the paper's arithmetic" in report.claims_rst("glmes-fig3b", figs[0]["claims"])


def test_every_counted_finding_shows_the_commit_its_rule_was_first_decided_at(monkeypatch):
    """A counted finding whose rule was never revised says since which commit its rule stands."""
    from ensemble_bandits import rules

    monkeypatch.setattr(report, "provenance", lambda scale: "Provenance: test.")
    history = {"epp-fig1": {"beats": {"first": {"fingerprint": "f", "commit": "5b2b9e4", "date": "2026-11-24",
                                                "status": "not reproduced"}}}}
    assert rules.first_decided(history) == {("epp-fig1", "beats"): "5b2b9e4 (2026-11-24)"}
    figures = report.with_revisions([_fig("epp-fig1", "epp", _claim("beats", "outperforms", "not reproduced")),
                                     _fig("epp-fig3a", "epp", _claim("conv", "converges", "reproduced"))],
                                    {}, {}, rules.first_decided(history))
    summary = report.report_markdown("paper", figures)
    summary = summary[summary.index("## Summary"):summary.index("## Contents")]
    assert "rule unchanged since first decided at 5b2b9e4 (2026-11-24)" in summary
    assert summary.count("rule unchanged since") == 1
    assert "rule unchanged" not in "".join(report.report_markdown("smoke", figures))


def test_the_seeds_that_would_decide_a_finding_are_set_beside_the_seeds_it_was_decided_on():
    """A finding decided in looks shows its look's n, not the figure's seeds; an infinite estimate
    reads as words: in looks an estimate on the claim's wrong side, else one on a bound."""
    under = {"status": "inconclusive", "cause": {"kind": "underpowered", "text": "t"}}
    assert report._seeds_text({**under, "seeds_to_decide": 120}, 20) == \
        " (about 120 seeds would decide it; this run has 20)"
    look = {**under, "look": 2, "looks": 3, "n": 20}
    assert report._seeds_text({**look, "seeds_to_decide": 396, "first": 50}, 50) == \
        " (about 396 seeds would decide it; look 2 of 3 has 20 fresh)"
    never = report._seeds_text({**look, "seeds_to_decide": _never()}, 50)
    assert never == " (at the effects seen no number of seeds would decide it: an estimate lies on the wrong side " \
        "of its bound; look 2 of 3 has 20)"
    assert "the estimate sits on a bound; this run has 50)" in report._seeds_text(
        {**under, "seeds_to_decide": _never()}, 50)


def _never():
    from ensemble_bandits.claims.core import NEVER, seeds_record

    assert seeds_record(float("inf")) == NEVER and seeds_record(7) == 7
    return NEVER
