"""Fresh sequential studies run look by look (ensemble_bandits.fresh, docs/sequential.md): each look
adds new seed ranges for the study's curves only, a later look only for the curves its open claims
need, and the study's claims are decided on its fresh seeds alone."""
import pytest

from ensemble_bandits import fresh, plans, records, registry
from ensemble_bandits.registry import RegistryError
from test_plans import _table, entry

STUDY = [{"claims": ["ab"], "start": 50, "n": [10, 20]}]


def _fig(looks=STUDY):
    return registry.resolve(entry(looks=looks), "paper", {})


def _runs(fig):
    return set(registry.figure_runs(fig, 50))


def test_without_a_look_run_the_figure_is_as_without_a_plan():
    fig = _fig()
    assert fresh.at_looks(fig) is fig and fresh.at_looks(fig, {"ac": 1}) is fig
    late = _fig([{"claims": ["ab"], "start": 60, "n": [10, 20]}])   # not right after the figure's seeds
    assert fresh.at_looks(late, 1) is late


def test_look_1_adds_the_fresh_seed_range_of_the_studys_curves_and_keeps_every_earlier_run_file():
    fig = _fig()
    one = fresh.at_looks(fig, {"ab": "1"})            # as Snakemake's --config look='{ab: 1}' gives it
    assert one["fresh"] == [{"claims": ["ab"], "start": 50, "k": 1, "of": 2, "seeds": {"A": 60, "B": 60}}]
    assert {s["curve"]: s["seeds"] for s in one["series"]} == {"A": 60, "B": 60, "C": 50}
    new = _runs(one) - _runs(fig)
    assert _runs(fig) < _runs(one) and {r.rsplit("/", 1)[1] for r in new} == {"seeds-50-60.npz"}
    assert fresh.at_looks(fig, 1)["series"] == one["series"]


def test_look_2_goes_on_only_for_the_curves_an_open_claim_needs_and_the_archive_alone_rebuilds_a_look():
    fig = _fig([{"claims": ["ab"], "start": 50, "n": [10, 20, 40]}])
    one = fresh.at_looks(fig, 1)
    open_ = [{"id": "ab", "status": "inconclusive", "look": 1, "look_status": "undecided", "continue": ["A"]}]
    rec = records.make_record(one, open_, run={"commit": "x"})
    assert rec["fresh"] == one["fresh"]
    two = fresh.at_looks(fig, 2, rec)
    assert two["fresh"][0]["seeds"] == {"A": 70, "B": 60}
    assert {r.rsplit("/", 1)[1] for r in _runs(two) - _runs(one)} == {"seeds-60-70.npz"}
    rec2 = records.make_record(two, open_, run={"commit": "x"})
    assert fresh.at_looks(fig, None, rec2)["series"] == two["series"]            # rebuilt: the same look
    assert fresh.at_looks(fig, None, None, two["fresh"])["series"] == two["series"]   # from the archive's state
    with pytest.raises(RegistryError, match=r"look 3 needs the record of look 2, and the figure's record is of look 1"):
        fresh.at_looks(fig, 3, rec)
    with pytest.raises(RegistryError, match=r"look 4 is not a look of its plan"):
        fresh.at_looks(fig, 4, rec2)
    done = records.make_record(one, [{**open_[0], "look_status": "decided", "continue": []}], run={"commit": "x"})
    with pytest.raises(RegistryError, match=r"its claims were settled at look 1 \(decided or futile\): no look 2"):
        fresh.at_looks(fig, 2, done)


def test_a_fresh_studys_claim_is_decided_on_its_fresh_seeds_alone():
    """The figure's own seeds 0..49 favour B over A; the fresh seeds 50..69 favour A by far: the
    study's claim is reproduced on the fresh seeds, its other claim keeps its fixed-seed verdict."""
    from ensemble_bandits.claims import evaluate

    e = entry(looks=STUDY)
    own, later = _table(-3.0, 0.0, seeds=50), _table(20.0, 0.0, seeds=70, seed=6)
    rows = later[later["seed"] >= 50]
    results = evaluate(e, own, "paper")
    assert results[0]["status"] == "not reproduced"
    state = fresh.at_looks(registry.resolve(e, "paper", {}), 2, {"fresh": [
        {"claims": ["ab"], "start": 50, "k": 1, "of": 2, "seeds": {"A": 60, "B": 60}}], "claims": [
        {"id": "ab", "look": 1, "look_status": "undecided", "continue": ["A", "B"]}]})["fresh"][0]
    ab, ac = plans.decided_in_looks(e, own, results, 50, [(state, rows)])
    assert (ab["status"], ab["look"], ab["n"], ab["first"], ab["look_status"]) == ("reproduced", 1, 10, 50, "decided")
    assert "(n = 10 fresh seeds, 50–59; boundary z = " in ab["numbers"]
    assert ac == results[1]
    assert plans.decided_in_looks(e, own, results, 50) == results      # no look run: the fixed-seed verdicts
