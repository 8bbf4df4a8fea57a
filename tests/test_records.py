"""The committed paper-scale records (figures/paper/records) and the migration that split the
pre-record REPORT.md into them."""
import importlib.util
import json
from pathlib import Path

import pytest

from ensemble_bandits import report

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "figures" / "paper"


def _migration():
    spec = importlib.util.spec_from_file_location("records_from_report",
                                                  ROOT / "workflow" / "scripts" / "records_from_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_records_are_complete_and_name_committed_figures():
    records = sorted(PAPER.glob("records/*.json"))
    assert records, "no committed paper-scale records"
    for path in records:
        rec = report.read_record(path)
        assert rec["id"] == path.stem
        assert (PAPER / rec["png"]).is_file(), f"{path.name}: its figure {rec['png']} is not committed"
        assert rec["run"]["commit"] and rec["run"]["generated"].endswith("UTC")
        for claim in rec["claims"]:
            assert claim["status"] in report.ICON and claim["source"] in ("verbatim", "paraphrase", "designed")


def test_committed_report_lists_every_recorded_id():
    text = (PAPER / "REPORT.md").read_text(encoding="utf-8")
    for path in PAPER.glob("records/*.json"):
        assert f"### {path.stem} — " in text, path.stem


@pytest.mark.parametrize("row, expected", [
    ("| c1: “A \\| B” *a note* | ✅ reproduced | d \\| e |",
     {"id": "c1", "quote": "A | B", "source": "verbatim", "note": "a note", "numbers": "d | e", "status": "reproduced"}),
    ("| c2: (paraphrase) x *y* *(the finding of epp-tab1, counted once)* | ❌ not reproduced | n |",
     {"id": "c2", "quote": "x", "source": "paraphrase", "note": "y", "numbers": "n", "status": "not reproduced"}),
    ("| c3: (designed) p: q | 📏 reported | m |",
     {"id": "c3", "quote": "p: q", "source": "designed", "note": "", "numbers": "m", "status": "reported"}),
])
def test_migration_parses_report_rows(row, expected):
    assert _migration().parse_claim(row) == expected


def test_migration_refuses_a_report_it_cannot_render_again(tmp_path, monkeypatch):
    mod = _migration()
    figures = [report.make_record({"entry": {"id": "phe-fig1", "paper": "phe", "title": "T", "choices": ""},
                                   "series": [1], "seeds": 3, "horizon": 10},
                                  [{"id": "c1", "quote": "q", "source": "verbatim", "status": "reproduced",
                                    "numbers": "n", "note": ""}])]
    text = report.report_markdown("smoke", figures)
    (tmp_path / "R.md").write_text(text)
    monkeypatch.chdir(tmp_path)
    mod.main(str(tmp_path / "R.md"))
    rec = json.loads((tmp_path / "figures/smoke/records/phe-fig1.json").read_text())
    assert rec["claims"][0]["quote"] == "q" and rec["run"]["algorithms"] == report.ALGORITHMS_VERSION
    (tmp_path / "R.md").write_text(text.replace("*Size at this scale:*", "A stray line.\n\n*Size at this scale:*"))
    with pytest.raises(SystemExit, match="do not render"):
        mod.main(str(tmp_path / "R.md"))
