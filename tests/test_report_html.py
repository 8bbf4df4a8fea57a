"""The HTML report (`snakemake --report`) opens on the verdicts: its landing page holds the counted
tally (as REPORT.md opens), a table per paper and each finding not reproduced or inconclusive with
its cause (ensemble_bandits.landing); each figure's caption holds its claims with causes and
readings, once (not again under the job's parameters); and Snakemake's per-file "Missing metadata"
warnings do not bury the report's own lines."""
from __future__ import annotations

import html.parser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docutils.core import publish_parts

from ensemble_bandits import findings, landing, paths, records, registry, report
from helpers import copy_project, timeout_s

ROOT = Path(__file__).resolve().parents[1]
CAUSE = {"kind": "genuine", "why": "not reproduced under either reading"}


def _claim(cid, status, paper_quote="q", **extra):
    return {"id": cid, "quote": paper_quote, "source": "verbatim", "status": status, "numbers": "n", **extra}


def _record(fid, paper, *claims):
    return {"id": fid, "paper": paper, "title": fid, "seeds": 10, "horizon": 1, "choices": "", "claims": list(claims),
            "png": f"{fid}.png", "run": {}}


def test_landing_page_leads_with_the_tally_a_table_per_paper_and_the_causes():
    figs = [_record("phe-fig1", "phe", _claim("c1", "reproduced", "a"), _claim("c2", "not reproduced", "b",
                                                                                    cause=CAUSE)),
            _record("epp-fig2a", "epp", _claim("c3", "inconclusive", "c"))]
    text = landing.landing_rst("paper", figs, not_built=["glmes-fig4b"])
    body = publish_parts(text, writer="html")["html_body"]       # valid reST, as the report renders it
    assert "Verdicts at scale" in body and "3 claims checked: 1 reproduced, 1 not reproduced, 1 inconclusive" in body
    rows = re.findall(r"<tr><td>(.*?)</tr>", body, re.S)
    assert len(rows) == 2 and "phe" in rows[0] and "epp" in rows[1]
    assert "phe-fig1" in body and "genuine: not reproduced under either reading" in body
    assert "epp-fig2a" in body and "no cause stated" in body
    assert "figures/paper/REPORT.md" in body and "glmes-fig4b" in body
    assert "system-message" not in body                                 # no reST error rendered into the page


def test_a_figure_caption_holds_its_causes_and_readings():
    c = _claim("c2", "not reproduced", cause=CAUSE,
               readings=[{"label": "code", "says": "G = 4", "status": "reproduced", "numbers": "m"}])
    rst = report.claims_rst("phe-fig1", [c])
    assert "*cause:* **genuine**: not reproduced" in rst and "*reading code* (G = 4): **reproduced** — m" in rst


class _Headings(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.headings, self._open = [], None

    def handle_starttag(self, tag, attrs):
        self._open = tag if tag in ("h1", "h2") else self._open

    def handle_endtag(self, tag):
        self._open = None if tag == self._open else self._open

    def handle_data(self, data):
        if self._open:
            self.headings.append(data)


@pytest.fixture(scope="module")
def paper_report(tmp_path_factory):
    """A fresh clone's report at paper scale (the committed files only): (project, report, its log)."""
    tmp = tmp_path_factory.mktemp("report")
    project = copy_project(tmp / "p")
    shutil.copytree(ROOT / "figures" / "paper", project / "figures" / "paper")
    out = tmp / "report.html"
    res = subprocess.run([sys.executable, "-m", "snakemake", "--report", str(out), "all", "--config", "scale=paper"],
                         cwd=project, capture_output=True, text=True, timeout=timeout_s(600))
    log = res.stdout + res.stderr
    assert res.returncode == 0, log[-3000:]
    return project, out, log


@pytest.mark.workflow
def test_the_paper_scale_report_of_a_fresh_clone_opens_on_the_tally(paper_report):
    project, out, log = paper_report
    assert "Missing metadata" not in log and len(log.splitlines()) < 150, log[-3000:]
    assert re.search(r"report: \d+ of \d+ figures are built at scale 'paper'", log)
    page = out.read_text(encoding="utf-8")
    desc = json.loads(re.search(r'var workflow_desc = (".*?");\n', page, re.S).group(1))   # the landing page's DOM
    parsed = _Headings()
    parsed.feed(desc)
    assert any("Verdicts at scale" in h for h in parsed.headings), parsed.headings
    entries = registry.load_registry(project / "config", project / "workflow/schemas/registry.schema.yaml")
    shown = [p.stem for p in (project / "figures/paper/records").glob("*.json")
             if (project / f"figures/paper/{p.stem}.png").exists()]
    recs = report.with_registry_notes([records.read_record(project / paths.record_file("paper", i)) for i in shown],
                                      entries)
    first = findings.tally(recs, "paper").split(".")[0]            # "56 claims checked: 27 reproduced, ..."
    assert first in desc, (first, desc[:2000])
    assert len(re.findall(r"<tr><td><strong>(?:phe|lines|glmes|epp)</strong>", desc)) == len(registry.PAPERS)
    assert "REPORT.md" in desc
    assert page.count("(status at this scale)") == sum(1 for r in recs if r["claims"])   # once per figure


def _browser():
    return next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.workflow
@pytest.mark.skipif(_browser() is None, reason="no headless browser (chromium) on this machine: "
                                              "apt-get install chromium to run this check")
def test_a_headless_browser_opens_the_report_on_the_tally(paper_report):
    """The report is a single-page app: its landing page exists only once a browser has run it."""
    _, out, _ = paper_report
    dom = subprocess.run([_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=timeout_s(120))
    rendered = re.sub(r"<script\b.*?</script>", "", dom.stdout, flags=re.S)   # what the page shows, not its data
    text = " ".join(re.sub(r"<[^>]+>", " ", rendered).split())
    assert "Verdicts at scale paper" in text, text[:3000]
    assert re.search(r"\d+ claims checked: \d+ reproduced, \d+ not reproduced, \d+ inconclusive", text)
    assert text.index("claims checked") < text.index("Not reproduced or inconclusive, with the cause")
