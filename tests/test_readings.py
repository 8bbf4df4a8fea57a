"""Readings (ensemble_bandits.readings): labelled alternatives decided beside the paper's text.

The registry's readings are the fixture registry's (tests/data/registry/figures/glmes.yaml:
glmes-readings), except in the tests of the live registry's timing readings, marked as such."""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from ensemble_bandits import readings, registry, runner
from ensemble_bandits.aggregate import figure_table
from ensemble_bandits.archive import reduce_runs
from ensemble_bandits.claims import evaluate
from ensemble_bandits.claims.core import INCONCLUSIVE, REPRODUCED
from ensemble_bandits.registry import RegistryError


def _without_readings(entry):
    return {k: v for k, v in entry.items() if k != "readings"}


def test_readings_add_cells_and_leave_the_primary_ones_unchanged(fixture_entries, config):
    entry = fixture_entries["glmes-readings"]
    assert "phe-ridge" in entry["readings"]
    ours = ["LinPHE (a = 2) [LinPHE ridge 0.001]", "LinPHE (a = 1) [LinPHE ridge 0.001]"]
    for scale in registry.SCALES:
        plain = registry.resolve(_without_readings(entry), scale, config["scales"])
        fig = registry.resolve(entry, scale, config["scales"])
        primary = [s for s in fig["series"] if "reading" not in s]
        assert primary == plain["series"]
        extra = [s for s in fig["series"] if s.get("reading") == "phe-ridge"]
        assert [s["curve"] for s in extra] == ours * 2                       # on each of the two panels
        assert all(s["cell"]["agent"]["lam"] == 0.001 for s in extra)
        assert not {s["key"] for s in extra} & {s["key"] for s in primary}
        assert fig["curves"][len(plain["curves"]):][:2] == ours


def test_a_readings_run_is_the_same_alone_in_a_batch_or_split(fixture_entries, config):
    """A reading's cell is an ordinary cell: its seeds' numbers do not depend on what ran with them."""
    fig = registry.resolve(fixture_entries["glmes-readings"], "smoke", config["scales"])
    cell = next(s["cell"] for s in fig["series"] if s.get("reading") == "phe-ridge")
    cell = dict(cell, horizon=120)
    primary = next(s["cell"] for s in fig["series"] if s["curve"] == "LinPHE (a = 2)")
    runner.simulate_columns(dict(primary, horizon=120), [0, 1])           # the primary first, same process
    together = runner.simulate_columns(cell, [0, 1, 2])
    alone = [runner.simulate_columns(cell, [s]) for s in (2, 0, 1)]
    for seed, cols in zip((2, 0, 1), alone):
        rows = together["seed"] == seed
        assert np.array_equal(cols["regret"], together["regret"][rows])


def _table(fig, shift):
    """A figure table whose reading rows are the primary rows moved by ``shift`` (per curve)."""
    rng = np.random.default_rng(1)
    frames = {}
    for s in fig["series"]:
        base = 100.0 + (shift.get(s["curve"], 0.0) if "reading" in s else 0.0)
        seeds = np.arange(s["seeds"])
        frames[s["key"]] = reduce_runs(pd.DataFrame({"seed": seeds, "t": np.full(seeds.size, 50),
                                                     "regret": base + rng.normal(0, 1, seeds.size),
                                                     "seconds": np.zeros(seeds.size)}), "full")
    return figure_table(fig, 50, frames=frames)


def _entry():
    return {"id": "glmes-x", "paper": "glmes", "title": "t", "caption": "c", "kind": "regret_curves",
            "seeds": 20, "horizon": 50,
            "panels": [{"label": "P", "env": {"name": "sphere_logistic", "d": 3, "n_arms": 4}}],
            "curves": [{"label": "A", "agent": {"name": "glm_es_anytime", "T0": 10, "b": 2.0}},
                       {"label": "B", "agent": {"name": "ucb_glm"}}],
            "readings": {"fast": {"label": "fast A", "says": "A another way", "curves": ["A"],
                                  "agent": {"dt_warmup": "once"}}},
            "claims": [{"id": "a-beats-b", "quote": "A beats B", "checks": [
                {"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"]}}]}]}


def test_claims_are_decided_per_reading_on_its_own_rows():
    entry = _entry()
    fig = registry.resolve(entry, "paper", {"paper": {}})
    table = _table(fig, {"A [fast A]": -10.0})              # A beats B only under the reading
    [res] = evaluate(entry, table)
    assert res["status"] != REPRODUCED
    [other] = res["readings"]
    assert other["label"] == "fast A" and other["status"] == REPRODUCED and other["says"] == "A another way"
    assert "A - B" in other["numbers"]


def test_a_claims_only_reading_reads_the_same_runs_another_way():
    entry = _entry()
    del entry["readings"]["fast"]["agent"], entry["readings"]["fast"]["curves"]
    entry["readings"]["fast"]["claims"] = {"a-beats-b": {"checks": [
        {"fn": "similar", "args": {"a": "A", "b": "B", "rel_tol": 0.2}}]}}
    fig = registry.resolve(entry, "paper", {"paper": {}})
    assert not any("reading" in s for s in fig["series"])
    [res] = evaluate(entry, _table(fig, {}))
    assert res["readings"][0]["status"] == REPRODUCED and "band" in res["readings"][0]["numbers"]


def test_a_pending_reading_adds_no_runs_and_its_claims_are_not_measured():
    """A reading declared before its runs exist (a paper run in parts): no series, no cells, and each
    claim lists it as not measured with the reason; the primary verdict is unchanged."""
    entry = _entry()
    entry["readings"]["fast"]["pending"] = "its cells run next session"
    fig = registry.resolve(entry, "paper", {"paper": {}})
    assert not any("reading" in s for s in fig["series"])
    # its cells are listed apart, under the keys they will have once it is run (run by key meanwhile)
    ran = registry.resolve(_entry(), "paper", {"paper": {}})
    assert fig["pending_series"] == [s for s in ran["series"] if "reading" in s] != []
    plain = _entry()
    del plain["readings"]
    [res] = evaluate(entry, _table(fig, {}))
    [ref] = evaluate(plain, _table(fig, {}))
    assert (res["status"], res["numbers"]) == (ref["status"], ref["numbers"])
    [other] = res["readings"]
    assert other["status"] == INCONCLUSIVE and other["label"] == "fast A"
    assert other["numbers"] == "not measured: this reading's runs are pending (its cells run next session)"


def test_a_reading_on_fewer_seeds_runs_and_decides_on_them_and_says_so():
    """``seeds:`` (e.g. the authors' code's 5): the reading's own cells run that many seeds, never more
    than the figure's, its claims are decided on them, and the record and REPORT.md give the count."""
    from ensemble_bandits.report import _readings_text

    entry = _entry()
    entry["readings"]["fast"]["seeds"] = 6
    fig = registry.resolve(entry, "paper", {"paper": {}})
    assert {s["curve"]: s["seeds"] for s in fig["series"]} == {"A": 20, "B": 20, "A [fast A]": 6}
    assert registry.resolve(entry, "smoke", {"smoke": {"max_seeds": 2}})["series"][-1]["seeds"] == 2
    [res] = evaluate(entry, _table(fig, {"A [fast A]": -10.0}))
    [other] = res["readings"]
    assert other["seeds"] == 6 and "seeds" not in res and other["status"] == REPRODUCED
    assert "(n=6)" in other["numbers"] and "(n=20)" in res["numbers"]
    assert _readings_text({**res, "status": "inconclusive"}).endswith("fast A: reproduced (6 seeds)")
    entry["readings"]["fast"]["partial"] = "panel P only"
    [res] = evaluate(entry, _table(fig, {"A [fast A]": -10.0}))
    assert _readings_text(res).endswith("fast A: reproduced (panel P only; 6 seeds)")
    plain = copy.deepcopy(entry)
    del plain["readings"]["fast"]["agent"], plain["readings"]["fast"]["curves"]
    plain["readings"]["fast"]["claims"] = {"a-beats-b": {"checks": [{"fn": "outperforms", "args": {}}]}}
    with pytest.raises(RegistryError, match="seeds applies to a reading's own cells"):
        registry.check_readings("glmes-x", plain, "f.yaml")


def test_a_reading_that_changes_nothing_or_names_an_unknown_claim_is_refused(tmp_path):
    entry = _entry()
    with pytest.raises(RegistryError, match="changes nothing"):
        registry.check_readings("glmes-x", {**entry, "readings": {"r": {"label": "l", "says": "s"}}}, "f.yaml")
    bad = copy.deepcopy(entry)
    bad["readings"]["fast"]["claims"] = {"nope": {"checks": [{"fn": "outperforms", "args": {}}]}}
    with pytest.raises(RegistryError, match=r"overrides claim\(s\) \['nope'\]"):
        registry.check_readings("glmes-x", bad, "f.yaml")
    with pytest.raises(RegistryError, match="lower-case letters"):
        registry.check_readings("glmes-x", {**entry, "readings": {"Bad Name": entry["readings"]["fast"]}}, "f.yaml")


def test_reading_rows_replace_only_the_curves_the_reading_changes():
    entry = _entry()
    fig = registry.resolve(entry, "paper", {"paper": {}})
    table = _table(fig, {"A [fast A]": -10.0})
    rows = readings.reading_rows(table, "fast")
    assert sorted(set(rows["curve"])) == ["A", "B"] and "reading" not in rows.columns
    assert rows[rows["curve"] == "A"]["regret"].mean() < 95
    assert readings.primary_rows(table)[lambda d: d["curve"] == "A"]["regret"].mean() > 95


def test_readings_change_each_panel_as_they_say_and_reach_the_agents(fixture_entries, config):
    """glmes-readings' ``ridge`` reading: ridge 0.1 on the d = 3 panel only (its own cells; none while it
    is marked pending); ``phe-ridge`` on every panel; every other hyper-parameter as the primary's, and
    the value reaches the agent."""
    from ensemble_bandits.runner import make_agent, make_env

    entry = copy.deepcopy(fixture_entries["glmes-readings"])
    entry["readings"]["ridge"]["pending"] = "not run yet"
    assert not any(s.get("reading") == "ridge"
                   for s in registry.resolve(entry, "smoke", config["scales"])["series"])
    del entry["readings"]["ridge"]["pending"]
    fig = registry.resolve(entry, "smoke", config["scales"])
    by_panel = {}
    for s in fig["series"]:
        if s.get("reading") in ("ridge", "phe-ridge"):
            by_panel.setdefault((s["reading"], s["panel"]), set()).add(s["cell"]["agent"]["lam"])
    assert by_panel == {("ridge", "d = 3"): {0.1}, ("phe-ridge", "d = 2"): {0.001}, ("phe-ridge", "d = 3"): {0.001}}
    primary = {(s["panel"], s["curve"]): s["cell"] for s in fig["series"] if "reading" not in s}
    extra = [s for s in fig["series"] if s.get("reading") in ("ridge", "phe-ridge")]
    for s in extra:
        base = primary[s["panel"], s["base_curve"]]
        assert {k: v for k, v in s["cell"]["agent"].items() if k != "lam"} == \
            {k: v for k, v in base["agent"].items() if k != "lam"}
        assert s["cell"]["env"] == base["env"]
    cell = next(s["cell"] for s in extra if s["reading"] == "ridge" and s["base_curve"] == "LinUCB")
    env = make_env(cell["env"], [0])
    assert make_agent(cell["agent"], env, [0], 10).lam == 0.1


def test_override_groups_change_each_curve_as_they_say(fixture_entries, config):
    """glmes-readings' ``groups`` reading, one override group per method: LinUCB's R 0.25, LinPHE's
    ridge 0.01, and every group runs the environment on 7 arms."""
    fig = registry.resolve(fixture_entries["glmes-readings"], "smoke", config["scales"])
    extra = {(s["panel"], s["base_curve"]): s["cell"] for s in fig["series"] if s.get("reading") == "groups"}
    assert len(extra) == 6 and all(cell["env"]["n_arms"] == 7 for cell in extra.values())
    assert {c: (cell["agent"].get("R"), cell["agent"]["lam"]) for (p, c), cell in extra.items() if p == "d = 3"} == {
        "LinUCB": (0.25, 1.0), "LinPHE (a = 2)": (None, 0.01), "LinPHE (a = 1)": (None, 0.01)}


def test_a_pending_timing_reading_waits_with_the_cells_it_would_time(entries, config):
    """A timing reading declared ``pending`` (docs/performance.md, "Timing runs prepared for an idle machine"),
    on a copy of phe-runtime with its numpy-sampler reading marked pending again: per panel, the curve's timed
    cell with the override waits as a valid cell the workflow can run by key, no series runs it, and without
    the mark it is run in place."""
    from ensemble_bandits import cells

    entry = copy.deepcopy(entries["phe-runtime"])
    entry["readings"]["numpy-sampler"]["pending"] = "its timed runs need an idle machine"
    fig = registry.resolve(entry, "paper", config["scales"])
    base = {s["panel"]: s["cell"] for s in fig["series"] if s["curve"] == "LinTS, one run at a time"}
    waiting = {s["panel"]: s for s in fig["pending_series"] if s["reading"] == "numpy-sampler"}
    assert set(waiting) == set(base) != set()
    assert not [s for s in fig["series"] if s.get("reading") == "numpy-sampler"]
    for panel, s in waiting.items():
        assert s["cell"] == dict(base[panel], agent={**base[panel]["agent"], "sampler": "numpy"})
        assert s["cell"]["timing"] == "unbatched" and s["key"] != registry.cell_key(base[panel])
        cells.check_cell(s["cell"])
    ran = registry.resolve(entries["phe-runtime"], "paper", config["scales"])
    assert {s["key"] for s in ran["series"] if s.get("reading") == "numpy-sampler"} == {s["key"] for s in waiting.values()}


@pytest.mark.parametrize("fid,name,curve,override,claim_id", [
    ("glmes-fig1c", "per-datum", "GLM-FPL", {"per_datum": True}, "reduced-cost"),
    ("phe-runtime", "numpy-sampler", "LinTS, one run at a time", {"sampler": "numpy"}, "c4-runtime"),
])
def test_a_timed_reading_is_decided_on_its_own_runs(entries, config, fid, name, curve, override, claim_id):
    """The live registry as data: a timing figure's reading that ran has, per panel, a timed cell of its own
    (the curve's with the override), and the committed record decides the claim on those runs (its ratios
    to the curve differ from the paper text's)."""
    import json

    from ensemble_bandits.paths import project_root

    fig = registry.resolve(entries[fid], "paper", config["scales"])
    base = {s["panel"]: s["cell"] for s in fig["series"] if s["curve"] == curve}
    own = {s["panel"]: s for s in fig["series"] if s.get("reading") == name}
    assert set(own) == set(base) != set()
    for panel, s in own.items():
        assert s["base_curve"] == curve and s["cell"]["timing"] == "unbatched"
        assert s["cell"] == dict(base[panel], agent={**base[panel]["agent"], **override})
    record = json.loads((project_root() / "figures/paper/records" / f"{fid}.json").read_text())
    claim = next(c for c in record["claims"] if c["id"] == claim_id)
    [reading] = [r for r in claim["readings"] if r["reading"] == name]
    ours = [part for part in reading["numbers"].replace(" | ", "; ").split("; ") if f"/ {curve} =" in part]
    assert ours and not any(part in claim["numbers"] for part in ours)
