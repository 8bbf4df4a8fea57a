"""Planned looks (registry ``looks:``, ensemble_bandits.plans): the field's forms and its one-line
errors, each look's seeds and cost, and REPORT.md's "next look planned" (a plan that has not run
leaves the verdicts and the rest of the report as they are)."""
import copy

import pytest
import yaml

from ensemble_bandits import costs, plans, records, registry, report, validation
from ensemble_bandits.registry import RegistryError

from helpers import ROOT

SCHEMA = ROOT / "workflow" / "schemas" / "registry.schema.yaml"


def entry(**kw):
    e = {"id": "lines-x", "paper": "lines", "title": "t", "caption": "c", "kind": "regret_curves", "seeds": 50, "horizon": 40,
         "panels": [{"label": "p", "env": {"name": "russo_finite", "d": 3, "n_arms": 5}}],
         "curves": [{"label": "A", "agent": {"name": "lints"}}, {"label": "B", "agent": {"name": "linucb"}},
                    {"label": "C", "agent": {"name": "egreedy"}}],
         "claims": [{"id": "ab", "quote": "q", "checks": [{"fn": "outperforms", "args": {"better": "A", "worse": "B"}}]},
                    {"id": "ac", "quote": "q", "checks": [{"fn": "outperforms", "args": {"better": "A", "worse": "C"}}]}]}
    e.update(kw)
    return e


def load(tmp_path, e):
    (tmp_path / "figures").mkdir(exist_ok=True)
    body = {k: v for k, v in e.items() if k not in ("id", "paper")}
    (tmp_path / "figures" / "lines.yaml").write_text(yaml.safe_dump({e["id"]: body}))
    return registry.load_registry(tmp_path, SCHEMA)[e["id"]]


def test_both_forms_are_read(tmp_path):
    own = load(tmp_path, entry(looks=[10, 20, 50]))
    assert plans.studies(own) == [plans.Study(("ab", "ac"), 0, (10, 20, 50))]
    fresh = load(tmp_path, entry(looks=[{"claims": ["ab"], "start": 50, "n": [10, 20]},
                                        {"claims": ["ac"], "start": 60, "n": [30, 60, 120]}]))
    ab, ac = plans.studies(fresh)
    assert (ab.fresh, ab.seeds(1), ab.seeds(2), ac.seeds(3)) == (True, (50, 60), (60, 70), (120, 180))
    assert plans.study_of(fresh, "ac") == ac and plans.study_of(fresh, "zz") is None
    assert plans.studies(entry()) == []
    for e in (own, fresh):
        plans.check_looks("lines-x", e)


@pytest.mark.parametrize("looks", [
    pytest.param("10, 20", id="a-string"),
    pytest.param([], id="empty"),
    pytest.param([1, 2], id="a-look-below-2"),
    pytest.param([{"claims": ["ab"], "n": [10]}], id="no-start"),
    pytest.param([{"claims": ["ab"], "start": 50, "n": [10], "why": "x"}], id="unknown-key"),
])
def test_a_malformed_looks_is_refused_at_load_in_one_line(tmp_path, looks):
    with pytest.raises(RegistryError) as err:
        load(tmp_path, entry(looks=looks))
    msg = str(err.value)
    assert "'lines-x'" in msg and "key looks" in msg and "\n" not in msg


@pytest.mark.parametrize("looks, message", [
    ([20, 10, 50], r"looks must be increasing seed counts"),
    ([10, 20, 40], r"the last look \(40\) must be the figure's seeds \(50\)"),
    ([{"claims": ["ab"], "start": 10, "n": [10, 20]}], r"a study of \['ab'\] starts at seed 10, inside the figure's 50 seeds"),
    ([{"claims": ["zz"], "start": 50, "n": [10, 20]}], r"claim\(s\) \['zz'\] are not claims of the figure"),
    ([{"claims": ["ab"], "start": 50, "n": [10]}, {"claims": ["ab"], "start": 50, "n": [20]}],
     r"claim\(s\) \['ab'\] in more than one study"),
    ([10, {"claims": ["ab"], "start": 50, "n": [10]}], r"mixes seed counts and studies"),
    ([{"claims": ["ab"], "start": 99_990, "n": [10, 20]}], r"seeds up to 100,010 is more than 100,000"),
])
def test_an_unsound_plan_is_refused_eagerly_naming_the_figure(tmp_path, looks, message):
    e = entry(looks=looks)
    with pytest.raises(RegistryError, match=r"^figure 'lines-x', key looks: " + message):
        plans.check_looks("lines-x", e)
    if not (isinstance(looks[0], int) and isinstance(looks[-1], dict)):     # the schema refuses the mixed form
        loaded = load(tmp_path, e)
        with pytest.raises(RegistryError, match=message):   # and the workflow's check of every figure
            validation.check_figure(loaded, registry.resolve(loaded, "paper", {}), {})


def test_a_claim_the_look_rule_cannot_decide_is_refused_but_after_round_is_a_horizon_condition():
    claims = entry()["claims"]
    premised = [claims[0], {"id": "p", "quote": "q", "checks": [{"fn": "premise", "args": {"claim": "ab"}},
                                                               *claims[1]["checks"]]}]
    with pytest.raises(RegistryError, match=r"claim 'p' uses 'premise', which the look rule cannot decide"):
        plans.check_looks("lines-x", entry(claims=premised, looks=[10, 20, 50]))
    late = [{**claims[0], "checks": [{"fn": "after_round", "args": {"t": 5}}, *claims[0]["checks"]]}]
    e = entry(claims=late, looks=[10, 20, 50])
    plans.check_looks("lines-x", e)
    assert plans.study_curves(e, plans.studies(e)[0]) == ["A", "B"]


def test_the_registry_plans_the_six_underpowered_findings_on_fresh_seeds_and_the_neural_figures_in_looks(entries):
    """The live registry as data: the live registry's plans: the six underpowered findings on fresh seeds, the neural
    figures in looks."""
    fresh = {(fid, s.claims, s.start, s.n) for fid, e in entries.items() for s in plans.studies(e) if s.fresh}
    assert fresh == {("phe-fig2", ("posterior",), 100, (44, 88, 176, 352)),
                     ("lines-gauss-ts", ("remark5-ts",), 300, (100, 200, 400, 800)),
                     ("glmes-fig2a", ("large-m-marginal",), 50, (22, 44, 88, 176)),
                     ("glmes-fig2a", ("small-m",), 50, (280, 560, 1120, 2240)),
                     ("glmes-fig2c", ("small-sigma",), 50, (25, 50, 100, 200)),
                     ("glmes-fig1b", ("competitive",), 50, (21, 42, 84, 168)),
                     ("lines-dist", ("remark3-not-essential",), 50, (336, 672, 1344, 2688))}
    for fid, _, start, _ in fresh:        # fresh seeds: right after the seeds already run
        assert start == entries[fid]["seeds"]
    own = {fid: e["looks"] for fid, e in entries.items() if e.get("looks") and not plans.studies(e)[0].fresh}
    assert own == {f: [10, 20, 50] for f in ("glmes-fig1d", "glmes-fig1e", "glmes-fig2d", "glmes-fig4b")}
    for fid in own:
        assert entries[fid]["seeds"] == 50
    for fid in {f for f, *_ in fresh} | set(own):
        plans.check_looks(fid, entries[fid])


def test_range_blocks_cut_at_the_job_size():
    assert plans.range_blocks(100, 144, 50) == [(100, 144)]
    assert plans.range_blocks(144, 188, 50) == [(144, 150), (150, 188)]
    assert plans.range_blocks(0, 50, 10) == [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50)]


def test_a_looks_cost_is_the_cost_model_of_its_new_seeds_for_the_curves_of_its_claims():
    e = entry(looks=[{"claims": ["ab"], "start": 50, "n": [10, 30]}])
    fig = registry.resolve(e, "paper", {})
    study = plans.studies(e)[0]
    by = {s["curve"]: s["cell"] for s in fig["series"]}
    want = [sum(costs.cell_cost_seconds(by[c], n) for c in ("A", "B")) for n in (10, 20)]
    assert plans.look_costs(fig, study, 50) == pytest.approx(want)
    assert plans.look_cost(fig, study, 2, 50, curves={"A"}) == pytest.approx(want[1] / 2, rel=0.5)
    assert plans.look_cost(fig, study, 2, 50, curves={"A"}) < want[1]
    own = entry(looks=[10, 20, 50])       # every claim: every curve; the three looks add 10, 10 and 30 seeds
    fig = registry.resolve(own, "paper", {})
    got = plans.look_costs(fig, plans.studies(own)[0], 50)
    assert got == pytest.approx([sum(costs.cell_cost_seconds(by[c], n) for c in "ABC") for n in (10, 10, 30)])


def _record(status="inconclusive", **claim):
    return {"id": "lines-x", "claims": [{"id": "ab", "status": status, **claim}, {"id": "ac", "status": "inconclusive"}]}


def test_only_an_open_claim_of_a_fresh_study_gets_a_next_look_note():
    e = entry(looks=[{"claims": ["ab"], "start": 50, "n": [10, 30]}])
    figs = {"lines-x": registry.resolve(e, "paper", {})}
    notes = plans.planned_notes([_record()], {"lines-x": e}, figs, 50)
    assert list(notes) == [("lines-x", "ab")]
    note = notes["lines-x", "ab"]
    assert (note["look"], note["looks"], note["n"], note["first"], note["end"]) == (1, 2, 10, 50, 60)
    assert note["seconds"] == pytest.approx(plans.look_cost(figs["lines-x"], plans.studies(e)[0], 1, 50))
    assert plans.planned_notes([_record("reproduced")], {"lines-x": e}, figs, 50) == {}
    after = plans.planned_notes([_record(look=1, look_status="undecided")], {"lines-x": e}, figs, 50)
    assert (after["lines-x", "ab"]["look"], after["lines-x", "ab"]["first"]) == (2, 60)
    assert plans.planned_notes([_record(look=2)], {"lines-x": e}, figs, 50) == {}
    own = entry(looks=[10, 20, 50])        # the figure's own seeds: no "fresh seeds" note
    assert plans.planned_notes([_record()], {"lines-x": own}, {"lines-x": registry.resolve(own, "paper", {})}, 50) == {}


def test_the_report_states_the_planned_look_beside_an_unchanged_verdict():
    note = {"look": 1, "looks": 4, "n": 44, "first": 100, "end": 144, "seconds": 5400.0}
    assert plans.planned_text(note) == ("next look planned: look 1 of 4, n = 44 fresh seeds (100–143; a new "
                                        "sequential study, error 2.5 %), ≈ 1.50 CPU-h (1.5 h, cost model)")
    c = {"id": "ab", "status": "inconclusive", "cause": {"kind": "underpowered", "why": "few"}, "seeds_to_decide": 80}
    planned = report.with_planned_looks([{"id": "lines-x", "claims": [c]}], {("lines-x", "ab"): note})
    assert planned[0]["claims"][0]["status"] == "inconclusive"
    assert report._cause_text(planned[0]["claims"][0], 50) == (report._cause_text(c, 50) + "; "
                                                               + plans.planned_text(note))
    assert report.with_planned_looks([{"id": "lines-x", "claims": [c]}], {}) == [{"id": "lines-x", "claims": [c]}]


@pytest.fixture(scope="module")
def paper_records():
    return [records.read_record(p) for p in sorted((ROOT / "figures" / "paper" / "records").glob("*.json"))]


def test_without_looks_the_committed_records_report_as_before(entries, paper_records):
    """The live registry as data.

    A plan that has not run changes nothing but its own claims' "next look planned": the report of
    the committed records with the registry's plans equals, once those notes are removed, the report
    with no plans at all (no figure without looks changes)."""
    noted = report.with_registry_notes(paper_records, entries)
    bare = {fid: {k: v for k, v in e.items() if k != "looks"} for fid, e in entries.items()}
    assert report.with_registry_notes(paper_records, bare) == noted
    figs = {f["id"]: registry.resolve(entries[f["id"]], "paper", {}) for f in noted
            if any(s.fresh for s in plans.studies(entries[f["id"]]))}
    notes = plans.planned_notes(noted, entries, figs, 50)
    settled = {(f["id"], c["id"]) for f in noted for c in f["claims"]       # a study that stopped: no next look
               if c.get("look_status") in ("decided", "futile") or c.get("look") == c.get("looks", 0)}
    assert {k for k in notes} == {("phe-fig2", "posterior"), ("lines-gauss-ts", "remark5-ts"),
                                  ("glmes-fig2a", "large-m-marginal"), ("glmes-fig2a", "small-m"),
                                  ("glmes-fig2c", "small-sigma"), ("glmes-fig1b", "competitive")} - settled
    with_plans = report.report_markdown("paper", report.with_planned_looks(noted, notes))
    without = report.report_markdown("paper", copy.deepcopy(noted))
    with_plans, without = (text.split("\n", 3)[3] for text in (with_plans, without))   # not the provenance line
    stripped = with_plans
    for (fid, cid), note in notes.items():
        text = plans.planned_text(note)
        assert text in with_plans
        stripped = stripped.replace(f"; {fid}: {text}", "").replace(f"; {text}", "")
    assert stripped == without


# --------------------------------------------------------------------------------------------
# claims decided in the looks planned on the figure's own seeds (the claims step, at paper scale)
# --------------------------------------------------------------------------------------------
def _table(gap_b, gap_c, seeds=50, seed=5):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    base = rng.normal(10.0, 1.0, seeds)
    regret = {"A": base, "B": base + gap_b + rng.normal(0, 1.0, seeds), "C": base + gap_c + rng.normal(0, 1.0, seeds)}
    return pd.DataFrame([{"panel": "p", "curve": c, "seed": s, "t": 40, "regret": float(v[s])}
                         for c, v in regret.items() for s in range(seeds)])


def _decided(e, table, seeds=50):
    from ensemble_bandits.claims import evaluate

    results = evaluate(e, table, "paper")
    return results, plans.decided_in_looks(e, table, results, seeds)


def test_a_claim_of_an_own_seeds_plan_is_decided_at_its_looks_and_its_record_says_how():
    e = entry(looks=[10, 20, 50])
    _, got = _decided(e, _table(3.0, 0.0))
    ab, ac = got
    assert (ab["status"], ab["look"], ab["looks"], ab["n"], ab["look_status"]) == ("reproduced", 2, 3, 20, "decided")
    assert ab["z"] == pytest.approx(3.357, abs=1e-3) and ab["p"] == pytest.approx(0.000394, rel=1e-2)
    assert ab["continue"] == [] and "seeds_to_decide" not in ab
    assert ab["numbers"].endswith("decided at look 2 of 3 (n = 20; boundary z = 3.357, nominal p = 0.000394)")
    # A - C has no effect: at look 2 its z is inside the futility band (docs/sequential.md), so it stops
    assert (ac["status"], ac["look"], ac["look_status"], ac["continue"]) == ("inconclusive", 2, "futile", [])
    assert ac["numbers"].endswith("inconclusive (futile) at look 2 of 3 (n = 20; boundary z = 3.357, nominal p = 0.000394)")


def test_a_plan_decides_nothing_at_a_scale_of_fewer_seeds_before_its_first_look_or_without_looks():
    table = _table(3.0, 0.0)
    for e, seeds, t in [(entry(), 50, table), (entry(looks=[10, 20, 50]), 30, table[table["seed"] < 30]),
                        (entry(looks=[10, 20, 50]), 50, table[table["seed"] < 8]),
                        (entry(looks=[{"claims": ["ab"], "start": 50, "n": [10, 20]}]), 50, table)]:
        results, got = _decided(e, t, seeds)
        assert got is results or got == results


def test_a_look_with_only_part_of_the_seeds_is_undecided_until_the_next_look_runs():
    _, got = _decided(entry(looks=[10, 20, 50]), _table(0.3, 0.0, seeds=20))
    ab = got[0]
    assert (ab["look"], ab["n"], ab["look_status"], ab["status"]) == (2, 20, "undecided", "inconclusive")
    assert ab["numbers"].endswith("undecided at look 2 of 3 (n = 20; boundary z = 3.357, nominal p = 0.000394): "
                                  "the next look has not run")
    assert set(ab["continue"]) == {"A", "B"}


@pytest.mark.parametrize("look_status, look, words", [
    ("decided", 2, "decided at look 2 of 3 (n = 20; "),
    ("futile", 2, "inconclusive (futile) at look 2 of 3 (n = 20; "),
    ("undecided", 3, "inconclusive (budget) at look 3 of 3 (n = 50; "),
])
def test_the_report_says_at_which_look_a_claim_was_decided(look_status, look, words):
    c = {"id": "ab", "quote": "q", "source": "verbatim", "note": "", "numbers": "x",
         "status": "reproduced" if look_status == "decided" else "inconclusive",
         "look": look, "looks": 3, "n": {2: 20, 3: 50}[look], "z": 3.357, "p": 0.000394, "look_status": look_status}
    fig = {"id": "lines-x", "paper": "lines", "title": "t", "seeds": 50, "horizon": 40, "choices": "", "png": "x.png",
           "claims": [c], "run": records.run_info()}
    text = report.report_markdown("paper", [fig])
    assert f"<br>{words}" in text and text.count(words) == 2       # the summary and the figure's section
    rst = report.claims_rst("lines-x", [c])                         # the HTML report: beside the verdict
    assert rst.split("\n")[2].startswith(f"- **{c['status']}** ({report.rst_escape(words)}")
    assert report._look_text({k: v for k, v in c.items() if k != "look"}) == ""


def test_the_docs_table_of_the_plans_states_the_cost_models_cpu_time(entries, config):
    """The live registry as data: docs/sequential.md lists each registry plan with its CPU time per look: the cost
    model's."""
    import re

    text = (ROOT / "docs" / "sequential.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| (\S+)(?: · (\S+)| \(every claim\)) \|[^|]+\|(.*)\|$", line)
        if m and m.group(1) in entries:
            rows[m.group(1), m.group(2)] = [x.strip() for x in m.group(3).split("|")]
    planned = [(fid, s) for fid, e in entries.items() for s in plans.studies(e)]
    assert len(rows) == len(planned)
    for fid, s in planned:
        cells = rows[fid, s.claims[0] if s.fresh else None]
        each = plans.look_costs(registry.resolve(entries[fid], "paper", config["scales"]), s, config["seeds_per_job"])
        for got, want in zip(cells, [*each, *[None] * (4 - len(each)), sum(each)]):
            if want is None:
                assert got == ""
            else:          # as rounded in the table: to its last digit
                value, unit = got.split(" ")
                digits = len(value.split(".")[1]) if "." in value else 0
                assert float(value) == pytest.approx(want / {"s": 1, "h": 3600}[unit], abs=0.51 * 10 ** -digits), (fid, got)


# --------------------------------------------------------------------------------------------
# a look as a target: each curve's seeds at look k, from the record of look k - 1
# --------------------------------------------------------------------------------------------
def _runs(fig, per_job=50):
    return set(registry.figure_runs(fig, per_job))


def test_look_1_runs_the_first_seeds_and_the_plan_without_a_look_every_seed_in_the_same_blocks():
    fig = registry.resolve(entry(looks=[10, 20, 50]), "paper", {})
    first, every = plans.at_look(fig, 1), plans.at_look(fig, None)
    assert first["look"] == {"k": 1, "of": 3, "seeds": {"A": 10, "B": 10, "C": 10}}
    assert {(s["curve"], s["seeds"]) for s in first["series"]} == {("A", 10), ("B", 10), ("C", 10)}
    assert {r.rsplit("/", 1)[1] for r in _runs(first)} == {"seeds-0-10.npz"}
    assert {r.rsplit("/", 1)[1] for r in _runs(every)} == {"seeds-0-10.npz", "seeds-10-20.npz", "seeds-20-50.npz"}
    assert _runs(first) < _runs(every)
    plain = registry.resolve(entry(), "paper", {})
    assert plans.at_look(plain, 2) is plain                       # no plan: the figure as it is
    assert plans.at_look(fig, None)["series"][0]["cuts"] == [10, 20]
    small = registry.resolve(entry(looks=[10, 20, 50]), "smoke", {"smoke": {"max_seeds": 4}})
    assert plans.at_look(small, 1) is small                       # a scale of fewer seeds: no looks


def _record_of(fig, results):
    return records.make_record(fig, results, run={"commit": "x"})


def test_look_2_adds_seed_ranges_only_for_the_curves_its_open_claims_need():
    e = entry(looks=[10, 20, 50])
    fig = registry.resolve(e, "paper", {})
    one = plans.at_look(fig, 1)
    claims = [{"id": "ab", "status": "reproduced", "look": 1, "look_status": "decided", "continue": []},
              {"id": "ac", "status": "inconclusive", "look": 1, "look_status": "undecided", "continue": ["A", "C"]}]
    rec = _record_of(one, claims)
    assert rec["look"] == one["look"]
    two = plans.at_look(fig, 2, rec)
    assert two["look"]["seeds"] == {"A": 20, "B": 10, "C": 20}
    new = _runs(two) - _runs(one)
    assert _runs(one) < _runs(two) and len(new) == 2 and all(r.endswith("seeds-10-20.npz") for r in new)
    keys = {s["curve"]: s["key"] for s in two["series"]}
    assert {r.split("/")[3] for r in new} == {keys["A"], keys["C"]}
    again = plans.at_look(fig, 2, _record_of(two, claims))      # look 2 built again: the same figure
    assert again["series"] == two["series"]
    with pytest.raises(RegistryError, match=r"^figure 'lines-x': look 2 needs the record of look 1, and the figure's "
                                            r"record is absent: build look 1 first \(--config look=1\)$"):
        plans.at_look(fig, 2)
    with pytest.raises(RegistryError, match=r"look 3 needs the record of look 2, and the figure's record is of look 1"):
        plans.at_look(fig, 3, rec)
    with pytest.raises(RegistryError, match=r"look 4 is not a look of its plan \(3 looks at 10, 20, 50 seeds\)"):
        plans.at_look(fig, 4, rec)


def test_without_a_look_the_figure_is_built_at_the_look_its_record_states_else_at_every_seed():
    """A fresh clone's rebuild (no `look`) redraws the committed look from its archive; it never runs
    the seeds of later looks, which `look=k+1` asks for.  A record of no look of this plan, or one
    whose look is malformed, is as no record (every seed)."""
    fig = registry.resolve(entry(looks=[10, 20, 50]), "paper", {})
    one = plans.at_look(fig, 1)
    claims = [{"id": "ac", "status": "inconclusive", "look": 1, "look_status": "undecided", "continue": ["A"]}]
    rec1 = _record_of(one, claims)
    assert plans.at_look(fig, None, rec1)["series"] == one["series"]
    two = plans.at_look(fig, 2, rec1)
    rec2 = _record_of(two, claims)
    assert plans.at_look(fig, None, rec2)["series"] == two["series"] and two["look"]["seeds"]["A"] == 20
    every = plans.at_look(fig, None)
    for bad in ({"k": 4, "of": 3, "seeds": {"A": 10}}, {"k": 1, "of": 2, "seeds": {"A": 10}},
                {"k": "1", "of": 3, "seeds": {"A": 10}}, {"k": 1, "of": 3, "seeds": {"A": 20}},
                {"k": 2, "of": 3, "seeds": {"A": 7}}, {"k": 1, "of": 3, "seeds": ["A"]}, "1"):
        assert plans.at_look(fig, None, dict(rec1, look=bad))["series"] == every["series"], bad
    assert plans.at_look(fig, None, {"id": "lines-x"})["series"] == every["series"]


def test_claims_are_decided_on_a_table_whose_stopped_curves_have_fewer_seeds():
    table = _table(20.0, 0.0, seeds=20)
    table = table[(table["curve"] != "B") | (table["seed"] < 10)]   # B stopped at look 1
    _, (ab, ac) = _decided(entry(looks=[10, 20, 50]), table)
    assert (ab["look"], ab["look_status"], ab["status"]) == (1, "decided", "reproduced")
    assert (ac["look"], ac["n"]) == (2, 20) and ac["look_status"] in ("undecided", "futile")


def test_the_looks_that_decide_a_claim_are_part_of_its_rule():
    from ensemble_bandits import rules

    assert rules.rule_of(entry(looks=[10, 20, 50]), "ab")["looks"] == [10, 20, 50]
    fresh = entry(looks=[{"claims": ["ab"], "start": 50, "n": [10, 20]}])
    assert rules.rule_of(fresh, "ab")["looks"] == {"start": 50, "n": [10, 20]}
    assert rules.rule_of(fresh, "ac") == rules.rule_of(entry(), "ac")


def test_the_reports_planned_look_costs_follow_a_seeds_per_job_override(entries, paper_records, config):
    """The live registry as data.

    `--config seeds_per_job=...` reaches `cli report` (report.smk passes it): a planned look's
    cost is counted in jobs of that many seeds, not the config file's."""
    from ensemble_bandits import report

    fig2a = [r for r in paper_records if r["id"] == "glmes-fig2a"]
    fig = registry.resolve(entries["glmes-fig2a"], "paper", config["scales"])
    study = plans.study_of(entries["glmes-fig2a"], "small-m")
    costs = {}
    for per_job in (None, 10):
        noted = report._planned(str(ROOT / "config"), entries, fig2a, per_job)[0]
        costs[per_job] = next(c for c in noted["claims"] if c["id"] == "small-m")["next_look"]["seconds"]
    assert costs[None] == pytest.approx(plans.look_cost(fig, study, 1, config["seeds_per_job"]))
    assert costs[10] == pytest.approx(plans.look_cost(fig, study, 1, 10)) and costs[10] != costs[None]
