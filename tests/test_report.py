"""REPORT.md: the tally counts each paper finding once and leaves reported numbers out; claims
are marked verbatim, paraphrase or designed; the header says how claims are decided."""
import re

import pytest

from ensemble_bandits import report


def _claim(cid, quote, status, source="verbatim", note=""):
    return {"id": cid, "quote": quote, "source": source, "status": status, "numbers": "n", "note": note}


CUBE = "p(P_zeta) lower-bounds P(<zeta, v> >= 1) for every unit v"


def _fig(fid, paper, *claims):
    return {"id": fid, "paper": paper, "title": fid, "seeds": None, "horizon": 1, "choices": "", "claims": list(claims)}


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


def test_sources_are_marked(md):
    assert "| c1: “LinPHE \\| wins” *n* | ✅ reproduced |" in md
    assert re.search(r"\| isotropy: \(paraphrase\) Isotropy: Yes \| ✅ reproduced \|", md)
    assert "| finding: (designed) ours | 📏 reported |" in md
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
