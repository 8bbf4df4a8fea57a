"""tools/redraw_check.py groups figures by the look their committed record states: a figure planned in
looks on its own seeds is redrawn at that look (without ``look`` the workflow would build every look and
simulate), the others without one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ensemble_bandits import records

from helpers import load_tool

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    return load_tool("redraw_check")


def _write(project: Path, fid: str, **extra) -> None:
    record = {"id": fid, "run": {"commit": "abc"}, **extra}
    for key in records.RECORD_KEYS:
        record.setdefault(key, [] if key != "id" else fid)
    path = project / "figures/paper/records" / f"{fid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def test_figures_are_grouped_by_their_records_look(tmp_path):
    _write(tmp_path, "a-fig1", look={"k": 2, "of": 3, "seeds": {"A": 20}})
    _write(tmp_path, "a-fig2")
    _write(tmp_path, "a-fig3", look={"k": 1, "of": 3, "seeds": {"A": 10}})
    _write(tmp_path, "a-fig4", fresh=[{"claims": ["c"], "k": 4, "of": 4, "seeds": {"A": 5}, "start": 10}])
    groups = _tool().by_look(tmp_path, ["a-fig1", "a-fig2", "a-fig3", "a-fig4", "a-fig5"])
    assert groups == {2: ["a-fig1"], None: ["a-fig2", "a-fig4", "a-fig5"], 1: ["a-fig3"]}


def test_a_record_whose_look_is_no_look_number_is_refused(tmp_path):
    _write(tmp_path, "a-fig1", look={"k": "2; rm -rf /", "of": 3})
    with pytest.raises(SystemExit, match="not a look number"):
        _tool().by_look(tmp_path, ["a-fig1"])


def test_the_committed_looked_figures_are_redrawn_at_their_look():
    """The live records (as data): every figure whose record states an own-seeds look is grouped under it."""
    ids = sorted(p.stem for p in (ROOT / "figures/paper/records").glob("*.json"))
    groups = _tool().by_look(ROOT, ids)
    assert any(k is not None for k in groups), "no committed figure at a look of an own-seeds plan"
    for k, group in groups.items():
        for fid in group:
            look = json.loads((ROOT / "figures/paper/records" / f"{fid}.json").read_text()).get("look")
            assert (look or {}).get("k") == k, fid
