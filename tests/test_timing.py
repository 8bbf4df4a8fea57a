"""Timing runs (cells with ``timing: unbatched``, e.g. phe-runtime): each seed alone, repeated, the
median and spread recorded; the numbers of every repeat identical, and identical to a batched run
(only the wall-time columns, all named ``seconds*``, depend on how a cell is run)."""
import itertools

import numpy as np
import pandas as pd
import pytest

from ensemble_bandits import cells, runner
from ensemble_bandits.aggregate import timing_table

CELL = {"env": {"name": "phe_linear", "d": 3, "n_arms": 8}, "agent": {"name": "linphe", "a": 0.5}, "horizon": 60}
TIMED = dict(CELL, timing="unbatched")


def _numbers(cols):
    return {k: v for k, v in cols.items() if not k.startswith("seconds") and k != "variates"}


def test_timed_cell_repeats_and_records_median_and_spread():
    cols = runner.simulate_columns(TIMED, [4, 1, 7], repeats=3)
    batched = runner.simulate_columns(CELL, [4, 1, 7])
    assert _numbers(cols).keys() == _numbers(batched).keys()
    for k, v in _numbers(batched).items():
        assert np.array_equal(cols[k], v), k
    assert set(cols) - set(batched) == {"seconds_min", "seconds_max", "seconds_repeats", "seconds_select",
                                        "seconds_update", "variates"}
    assert np.all(cols["seconds_repeats"] == 3)
    assert np.all((cols["seconds_min"] <= cols["seconds"]) & (cols["seconds"] <= cols["seconds_max"]))
    assert np.all(cols["seconds_min"] > 0)
    for c in ("seconds", "seconds_min", "seconds_max"):      # one value per seed
        assert pd.DataFrame({"seed": cols["seed"], c: cols[c]}).groupby("seed")[c].nunique().eq(1).all()


def test_variates_count_the_random_numbers_a_run_draws():
    """The hardware-free measure of a timed run: LinPHE takes words_for(ceil(a (t - 1)) + K) 64-bit words
    in each round t after its d basis rounds (rng.binomial_half_fixed), LinTS d normals every round,
    whichever way it factors; counted by a naive loop over the rounds."""
    import math

    from ensemble_bandits.rng import words_for

    d, K, T, a = 3, 8, 60, 0.5
    cols = runner.simulate_columns(TIMED, [4, 1], repeats=1)
    expected = sum(words_for(math.ceil(a * (t - 1)) + K) for t in range(d + 1, T + 1))
    assert np.all(cols["variates"] == expected)
    for sampler in ("sqrt", "cholesky", "numpy"):
        lints = dict(TIMED, agent={"name": "lints", "sampler": sampler})
        assert np.all(runner.simulate_columns(lints, [2], repeats=1)["variates"] == d * T)


def test_default_repeats():
    assert cells.timing_repeats(TIMED) == cells.TIMING_REPEATS == 5
    assert cells.timing_repeats(CELL) == 1
    assert cells.timing_repeats(dict(TIMED, timing_repeats=2)) == 2
    cols = runner.simulate_columns(TIMED, [0])
    assert np.all(cols["seconds_repeats"] == cells.TIMING_REPEATS)
    # a cell that does not ask for timing, run one seed at a time, is run once per seed
    assert np.all(runner.simulate_columns(CELL, [0], unbatched=True)["seconds_repeats"] == 1)
    # the job's stamp names the timed runs: a change of repeats reruns the job
    assert cells.run_stamp(TIMED).endswith("; timing: median of 5 runs per seed, run alone")
    assert cells.run_stamp(dict(TIMED, timing_repeats=1)).endswith("; timing: one timed run per seed, run alone")
    assert cells.run_stamp(CELL) == cells.algorithms_stamp(CELL)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "5"])
def test_bad_repeats(bad):
    with pytest.raises(ValueError, match="timing_repeats must be an integer >= 1"):
        cells.timing_repeats(dict(TIMED, timing_repeats=bad))


def test_median_min_max_of_the_timed_runs(monkeypatch):
    """Known durations per (pass, seed): the columns are their median, min and max per seed."""
    durations = {0: [5.0, 1.0, 3.0, 2.0, 4.0], 1: [0.5, 0.7, 9.0, 0.6, 0.4]}   # seed -> one per pass
    order = [(r, s) for r in range(5) for s in (0, 1)]                        # passes over all seeds
    clock = itertools.count()

    def fake_perf_counter():
        i = next(clock)
        if i % 2 == 0:
            return 0.0
        r, s = order[i // 2]
        return durations[s][r]

    monkeypatch.setattr(runner.time, "perf_counter", fake_perf_counter)
    cols = runner.simulate_columns(TIMED, [0, 1])
    per_seed = pd.DataFrame(cols).groupby("seed").first()
    assert per_seed.loc[0, "seconds"] == 3.0 and per_seed.loc[1, "seconds"] == 0.6
    assert per_seed.loc[0, "seconds_min"] == 1.0 and per_seed.loc[0, "seconds_max"] == 5.0
    assert per_seed.loc[1, "seconds_min"] == 0.4 and per_seed.loc[1, "seconds_max"] == 9.0


def test_a_repeat_with_other_numbers_is_an_error(monkeypatch):
    real = runner._run_batch
    calls = itertools.count()

    def drifting(cell, seeds, cps, progress=None, spent=None, data_dir=None):
        res, secs = real(cell, seeds, cps, spent=spent, data_dir=data_dir)
        if next(calls) == 3:                 # warm-up, pass 1 (seed 0), pass 2 (seed 0) ... changed
            res["regret"] = res["regret"] + 1e-12
        return res, secs

    monkeypatch.setattr(runner, "_run_batch", drifting)
    with pytest.raises(RuntimeError, match="timing repeat 3 of seed 0 gave other numbers"):
        runner.simulate_columns(TIMED, [0], repeats=4)


def test_select_and_update_are_timed_apart(monkeypatch):
    """A timing cell records the time of the agent's select and update calls (median over the
    repeats, like ``seconds``); they fit inside the run's time; a batched run does not read that
    clock at all and its numbers are those of the timed runs."""
    cols = runner.simulate_columns(TIMED, [3, 5], repeats=3)
    per_seed = pd.DataFrame(cols).groupby("seed").first()
    assert (per_seed["seconds_select"] > 0).all() and (per_seed["seconds_update"] > 0).all()
    assert (per_seed["seconds_select"] + per_seed["seconds_update"] <= per_seed["seconds_max"]).all()
    # known durations: each select call takes 2 ticks of the split clock, each update 3
    ticks = itertools.count()
    monkeypatch.setattr(runner, "_split_clock", lambda: float(next(ticks)))
    real_select, real_update = runner.AGENTS["linphe"].select, runner.AGENTS["linphe"].update

    def slow(method, extra):
        def call(self, *args):
            for _ in range(extra):
                next(ticks)
            return method(self, *args)
        return call

    monkeypatch.setattr(runner.AGENTS["linphe"], "select", slow(real_select, 1))
    monkeypatch.setattr(runner.AGENTS["linphe"], "update", slow(real_update, 2))
    cols = runner.simulate_columns(TIMED, [0], repeats=2)
    T = TIMED["horizon"]
    assert np.all(cols["seconds_select"] == 2 * T) and np.all(cols["seconds_update"] == 3 * T)
    calls = []
    monkeypatch.setattr(runner, "_split_clock", lambda: calls.append(1) or 0.0)
    batched = runner.simulate_columns(CELL, [0])
    assert not calls and "seconds_select" not in batched
    assert np.array_equal(batched["regret"], cols["regret"])


def test_timing_table_median_quartiles_and_repeat_spread():
    rows = []
    for s, sec in enumerate([1.0, 2.0, 3.0, 4.0, 100.0]):       # one slow outlier seed
        rows.append({"panel": "p", "curve": "timed", "seed": s, "t": 10, "regret": 1.0, "seconds": sec,
                     "seconds_min": 0.9 * sec, "seconds_max": 1.2 * sec, "seconds_repeats": 5})
        rows.append({"panel": "p", "curve": "batched", "seed": s, "t": 10, "regret": 1.0, "seconds": 0.5})
    out = timing_table(pd.DataFrame(rows)).set_index("curve")
    assert out.loc["timed", "seconds_median"] == 3.0
    assert out.loc["timed", "seconds_q1"] == 2.0 and out.loc["timed", "seconds_q3"] == 4.0
    assert out.loc["timed", "seconds_per_run"] == pytest.approx(22.0)       # the mean feels the outlier
    assert out.loc["timed", "repeats"] == 5 and out.loc["batched", "repeats"] == 1
    assert out.loc["timed", "repeat_spread"] == pytest.approx(0.3)
    assert np.isnan(out.loc["batched", "repeat_spread"])
    assert out.loc["timed", "us_per_round"] == pytest.approx(3e5)
    # a table without any timing cell (older run files) still works
    plain = timing_table(pd.DataFrame([r for r in rows if r["curve"] == "batched"]))
    assert plain["repeats"].tolist() == [1] and plain["seconds_median"].tolist() == [0.5]
    assert not any(c.startswith(("select", "update")) for c in out.columns)       # parts only when asked


def test_timing_table_parts():
    rows = []
    for s, (sel, upd) in enumerate([(1.0, 4.0), (2.0, 5.0), (3.0, 9.0)]):
        rows.append({"panel": "p", "curve": "timed", "seed": s, "t": 10, "regret": 1.0, "seconds": sel + upd + 1,
                     "seconds_select": sel, "seconds_update": upd, "seconds_repeats": 5})
        rows.append({"panel": "p", "curve": "batched", "seed": s, "t": 10, "regret": 1.0, "seconds": 0.5})
    out = timing_table(pd.DataFrame(rows), parts=True).set_index("curve")
    assert out.loc["timed", "select_median"] == 2.0 and out.loc["timed", "update_median"] == 5.0
    assert out.loc["timed", "select_per_run"] == pytest.approx(2.0) and out.loc["timed", "update_sd"] == pytest.approx(
        np.std([4.0, 5.0, 9.0], ddof=1))
    assert out.loc["timed", "update_share"] == pytest.approx(5.0 / 8.0)
    assert np.isnan(out.loc["batched", "select_median"])


def _reading_rows():
    """A timing figure's rows with a reading that re-times curve ``slow`` (its own series)."""
    rows = []
    for s in range(3):
        for curve, reading, base, sec in [("fast", "", "fast", 1.0), ("slow", "", "slow", 4.0),
                                          ("slow [refit]", "refit", "slow", 40.0)]:
            rows.append({"panel": "p", "curve": curve, "reading": reading, "base_curve": base, "seed": s, "t": 10,
                         "regret": 1.0, "seconds": sec + s, "seconds_repeats": 5})
    return pd.DataFrame(rows)


def test_timing_table_keeps_a_readings_rows_its_own():
    from ensemble_bandits.readings import primary_rows, reading_rows

    out = timing_table(_reading_rows())
    primary = primary_rows(out).set_index("curve")["seconds_median"]
    refit = reading_rows(out, "refit").set_index("curve")["seconds_median"]
    assert primary.to_dict() == {"fast": 2.0, "slow": 5.0}
    assert refit.to_dict() == {"fast": 2.0, "slow": 41.0}


def test_a_reading_whose_table_lost_its_rows_is_an_error_not_the_primary_verdict_again():
    from ensemble_bandits.claims.core import ClaimError
    from ensemble_bandits.claims.evaluate import evaluate

    entry = {"id": "t", "readings": {"refit": {"label": "refit", "says": "slow refits", "curves": ["slow"],
                                                "agent": {"per_datum": True}}},
             "claims": [{"id": "c", "quote": "fast is faster", "checks": [
                 {"fn": "ratio_below", "args": {"numerator": "fast", "denominator": "slow", "threshold": 1.0,
                                                "column": "seconds_median"}}]}]}
    kept = evaluate(entry, timing_table(_reading_rows()))
    assert [r["reading"] for r in kept[0]["readings"]] == ["refit"]
    lost = timing_table(_reading_rows().drop(columns=["reading", "base_curve"]).query("curve != 'slow [refit]'"))
    with pytest.raises(ClaimError, match="no rows of its own"):
        evaluate(entry, lost)


def test_runtime_footer_names_repeats_only_where_a_run_was_timed_more_than_once():
    """The runtime figure's footer count (glmes-fig1f times each run once: no "median of 1 repeats")."""
    from ensemble_bandits.plotting.runtime import runs_text

    once = pd.DataFrame({"runs": [50, 50], "repeats": [1, 1]})
    assert runs_text(once) == "n=50 runs"
    assert runs_text(once.assign(repeats=[5, 5])) == "n=50 runs, each the median of 5 repeats"
    assert runs_text(pd.DataFrame({"runs": [5, 25], "repeats": [1, 5]})) == "n=5–25 runs, each the median of 1–5 repeats"
    assert runs_text(pd.DataFrame({"runs": [25]})) == "n=25 runs"
