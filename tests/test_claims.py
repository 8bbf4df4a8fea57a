"""Claim checks on synthetic tables whose outcome is known by construction.

Every check registered in ``claims.CHECKS`` gets a table where it must say "reproduced",
one where it must say "not reproduced" and, where the check can be undecided, one where it
must say "inconclusive".  Tables are built with numpy from fixed seeds: decided cases use a
clear effect with tiny noise, undecided ones very few seeds with large noise.
"""
import numpy as np
import pandas as pd
import pytest

from ensemble_bandits import claims
from ensemble_bandits.claims import FAILED, INCONCLUSIVE, REPRODUCED, ClaimError
from ensemble_bandits.aggregate import timing_table

T = 100


def long_table(finals: dict, panel="P", extra=None, t_mid=T // 2):
    """Long table (panel, curve, seed, t, regret[, extra columns]) from final regrets per curve.

    ``finals``: curve -> array of final regrets (one per seed); a checkpoint at ``t_mid`` holds
    half of it, so that checks must use the last checkpoint.  ``extra``: curve -> {column: value}.
    """
    rows = []
    for curve, vals in finals.items():
        for seed, v in enumerate(np.asarray(vals, dtype=float)):
            for t, r in ((t_mid, v / 2), (T, v)):
                rows.append({"panel": panel, "curve": curve, "seed": seed, "t": t, "regret": r,
                             **(extra or {}).get(curve, {})})
    return pd.DataFrame(rows)


def concat(*tables):
    return pd.concat(tables, ignore_index=True)


def noise(seed, n, sd):
    return np.random.default_rng(seed).normal(0.0, sd, n)


BASE = 100.0 + noise(0, 30, 5.0)        # per-seed baseline regret (common random numbers)


def paired(delta, sd=0.01, n=30, seed=1, base=None):
    """Two curves A and B with A - B = delta + N(0, sd^2) per seed."""
    b = (BASE if base is None else base)[:n]
    return {"A": b + delta + noise(seed, n, sd), "B": b}


UNDECIDED = {"A": np.array([100.0, 160.0, 60.0]), "B": np.array([110.0, 100.0, 105.0])}   # n = 3, huge spread

# ---------------------------------------------------------------------------------------
# one builder per (check, expected status): returns (table, kwargs)


def _outperforms(status):
    delta = {REPRODUCED: -10.0, FAILED: 10.0}.get(status)
    t = long_table(UNDECIDED if delta is None else paired(delta))
    return t, {"better": ["A"], "worse": ["B"]}


def _similar(status):
    fin = {REPRODUCED: paired(1.0), FAILED: paired(50.0), INCONCLUSIVE: UNDECIDED}[status]
    return long_table(fin), {"a": "A", "b": "B", "rel_tol": 0.2}


def _not_worse(status):
    fin = {REPRODUCED: paired(5.0), FAILED: paired(40.0),
           INCONCLUSIVE: {"A": np.array([120.0, 200.0, 40.0]), "B": np.array([100.0, 100.0, 100.0])}}[status]
    return long_table(fin), {"a": "A", "baselines": ["B"], "rel_tol": 0.2}


def _same_distribution(status):
    x = 100.0 + noise(2, 40, 10.0)
    y = np.random.default_rng(3).permutation(x) if status == REPRODUCED else x + 100.0
    return long_table({"A": x, "B": y}), {"a": "A", "b": "B", "alpha": 0.01}


def _ratio_below(status):
    secs = {"fast": 1.0, "slow": 3.0 if status == REPRODUCED else 1.5}
    t = long_table({c: BASE[:5] for c in secs}, extra={c: {"seconds": s} for c, s in secs.items()})
    # as in the registry: the check runs on the derived timing table (no column t)
    return timing_table(t), {"numerator": "fast", "denominator": "slow", "threshold": 0.5,
                             "column": "seconds_per_run"}


def _no_degradation(status):
    ms = [1, 2, 5, 10]
    means = {1: 200.0, 2: 150.0, 5: 120.0, 10: 118.0 if status == REPRODUCED else 300.0}
    parts = [long_table({"ES": BASE + means[m] + noise(10 + m, 30, 0.5)}, extra={"ES": {"m": m}}) for m in ms]
    other = long_table({"other": BASE + 1000.0})          # a curve outside ``curves`` is ignored
    return concat(*parts, other), {"x": "m", "curves": ["ES"]}


def _within_factor(status):
    f = 1.5 if status == REPRODUCED else 3.0
    return long_table({"ref": BASE, "o1": BASE * 0.8, "o2": BASE * f}), {"reference": "ref", "others": ["o1", "o2"],
                                                                     "factor": 2.0}


def _slope_at_most(status):
    power = 1.0 if status == REPRODUCED else 2.0
    parts = [long_table({"ES": 3.0 * d ** power * (1 + noise(20 + d, 10, 0.01))}, extra={"ES": {"d": d}})
             for d in (2, 4, 8, 16, 32)]
    return concat(*parts), {"x": "d", "max_slope": 1.5}


def _fraction_at_least(status):
    low = 0.05 if status == REPRODUCED else 0.01
    rows = [{"panel": "P", "curve": "ES", "seed": s, "t": t, "regret": float(t),
             "frac": (low if t == 50 else 0.2) + 0.001 * s}
            for s in range(5) for t in (1, 10, 50, 100)]
    return pd.DataFrame(rows), {"column": "frac", "threshold": 0.04, "curves": ["ES"]}


def _coupled_identical(status):
    first = [T + 1, T + 1, 37, T + 1]                      # seed 2 diverges ...
    tie = [False, False, status == REPRODUCED, False]      # ... at a near-tie (fine) or not (failure)
    df = pd.DataFrame({"panel": "P", "curve": "coupled", "seed": range(4), "t": T, "first_mismatch": first,
                       "near_tie": tie, "regret_es": 1.0, "regret_phe": 1.0})
    return df, {"curve": "coupled"}


def _group_outperforms(status):
    delta = {REPRODUCED: -20.0, FAILED: 20.0, INCONCLUSIVE: 0.0}[status]
    n, sd = (30, 0.5) if status != INCONCLUSIVE else (3, 50.0)
    parts, k = [], 100
    for M in (2, 4):
        for ref in ("gaussian", "sphere", "coordinate"):
            for pert in ("sphere", "coordinate"):
                shift = delta if ref == "gaussian" else 0.0
                k += 1
                vals = BASE[:n] + 10 * M + shift + noise(k, n, sd)
                parts.append(long_table({f"{ref}-{pert} (M = {M})": vals},
                                        extra={f"{ref}-{pert} (M = {M})": {"M": M, "reference": ref,
                                                                           "perturbation": pert}}))
    parts.append(long_table({"TS": BASE[:n]}))              # M, reference NaN for TS
    args = {"better": {"reference": "gaussian", "M": [2, 4]}, "worse": {"reference": ["sphere", "coordinate"],
                                                                        "M": [2, 4]},
            "match": ["M", "perturbation"]}
    return concat(*parts), args


def _spread_below(status):
    top = 110.0 if status == REPRODUCED else 200.0
    fin = {"a (M = 64)": BASE[:5] * 0 + 100.0, "b (M = 64)": BASE[:5] * 0 + top,
           "coordinate (M = 64)": BASE[:5] * 0 + 1000.0}
    extra = {"a (M = 64)": {"M": 64, "reference": "a"}, "b (M = 64)": {"M": 64, "reference": "b"},
             "coordinate (M = 64)": {"M": 64, "reference": "coordinate"}}
    return long_table(fin, extra=extra), {"where": {"M": [64], "reference": ["a", "b"]}, "rel": 0.25}


def _linear_fit(status):
    d = np.array([10, 20, 30, 40] * 2, dtype=float)
    n_arms = np.repeat([100, 1000], 4)
    if status == REPRODUCED:
        m = 2.0 * d + np.array([0, 1, -1, 0, 1, 0, 0, -1])
    elif status == FAILED:
        m = np.array([60.0, 8.0, 40.0, 4.0, 2.0, 50.0, 6.0, 30.0])
    else:
        m = np.array([20.0, 40.0] + [np.nan] * 6)
    return pd.DataFrame({"d": d, "n_arms": n_arms, "M_min": m}), {"x": "d", "y": "M_min", "r2_min": 0.8,
                                                                    "group": "n_arms", "rel_spread_max": 0.5}


def _curve_table():
    """A function-curve table like doubling_constant_curves: l(T0, b), steep in b, flat in T0."""
    b = np.linspace(1.5, 6.0, 46)
    parts = [pd.DataFrame({"T0": T0, "b": b, "l": 3.3 + (b - 2.6) ** 2 + 0.001 * np.log(T0)})
             for T0 in (10, 100, 1000)]
    return pd.concat(parts, ignore_index=True)


def _value_close(status):
    expected = 3.3 if status == REPRODUCED else 4.0
    return _curve_table(), {"where": {"T0": 100, "b": 2.618}, "column": "l", "expected": expected, "tol": 0.05}


def _column_at_least(status):
    df = pd.DataFrame({"name": ["a", "b", "c"], "mc": [0.5, 0.3, 0.2], "bound": [0.1, 0.2, 0.1]})
    if status == FAILED:
        df.loc[2, "mc"] = 0.05
    return df, {"column": "mc", "other": "bound"}


def _insensitive(status):
    df = _curve_table()
    if status == FAILED:
        df["l"] += 0.5 * np.log(df["T0"])
    return df, {"column": "l", "sensitive_to": "b", "insensitive_to": "T0", "at": {"b": 2.618, "T0": 100},
                "max_ratio": 0.1}


def _column_is(status):
    df = pd.DataFrame({"family": ["gaussian", "sphere", "cube", "coordinate"],
                       "holds": ["yes", "yes", "N/A", "yes" if status == REPRODUCED else "no"]})
    return df, {"column": "holds", "value": "yes", "ignore": ["N/A"]}


CASES = {
    "outperforms": (_outperforms, (REPRODUCED, FAILED, INCONCLUSIVE)),
    "similar": (_similar, (REPRODUCED, FAILED, INCONCLUSIVE)),
    "not_worse": (_not_worse, (REPRODUCED, FAILED, INCONCLUSIVE)),
    "same_distribution": (_same_distribution, (REPRODUCED, FAILED)),
    "ratio_below": (_ratio_below, (REPRODUCED, FAILED)),
    "no_degradation": (_no_degradation, (REPRODUCED, FAILED)),
    "within_factor": (_within_factor, (REPRODUCED, FAILED)),
    "slope_at_most": (_slope_at_most, (REPRODUCED, FAILED)),
    "fraction_at_least": (_fraction_at_least, (REPRODUCED, FAILED)),
    "coupled_identical": (_coupled_identical, (REPRODUCED, FAILED)),
    "group_outperforms": (_group_outperforms, (REPRODUCED, FAILED, INCONCLUSIVE)),
    "spread_below": (_spread_below, (REPRODUCED, FAILED)),
    "linear_fit": (_linear_fit, (REPRODUCED, FAILED, INCONCLUSIVE)),
    "value_close": (_value_close, (REPRODUCED, FAILED)),
    "column_at_least": (_column_at_least, (REPRODUCED, FAILED)),
    "insensitive": (_insensitive, (REPRODUCED, FAILED)),
    "column_is": (_column_is, (REPRODUCED, FAILED)),
}


def test_every_check_has_cases():
    assert set(CASES) == set(claims.CHECKS), "add synthetic cases for new checks"
    for name, (_, statuses) in CASES.items():
        assert REPRODUCED in statuses and FAILED in statuses, name


@pytest.mark.parametrize("name,status", [(n, s) for n, (_, sts) in CASES.items() for s in sts])
def test_check_outcome(name, status):
    table, kwargs = CASES[name][0](status)
    got, numbers = claims.CHECKS[name](table, **kwargs)
    assert got == status, numbers
    assert isinstance(numbers, str) and numbers


def test_paired_checks_use_final_checkpoint_and_pair_by_seed():
    # A beats B at T by a tiny margin on every seed; at t = T/2 and unpaired the spread is huge
    fin = paired(-0.5, sd=0.01)
    assert claims.outperforms(long_table(fin), ["A"], ["B"])[0] == REPRODUCED
    # shuffling B's seeds breaks the pairing: the same marginal values no longer decide it
    shuffled = {"A": fin["A"], "B": np.random.default_rng(5).permutation(fin["B"])}
    assert claims.outperforms(long_table(shuffled), ["A"], ["B"])[0] == INCONCLUSIVE


def test_checks_are_per_panel():
    good = long_table(paired(-10.0), panel="p1")
    bad = long_table(paired(+10.0), panel="p2")
    table = concat(good, bad)
    assert claims.outperforms(table, ["A"], ["B"])[0] == FAILED
    assert claims.outperforms(table, ["A"], ["B"], panels=["p1"])[0] == REPRODUCED
    st, numbers = claims.outperforms(table, ["A"], ["B"], panels=["p2"])
    assert st == FAILED and "[p2]" in numbers and "[p1]" not in numbers


def test_slope_at_most_in_t():
    t = np.unique(np.geomspace(1, 10_000, 40).round()).astype(int)
    for power, expected in ((0.5, REPRODUCED), (1.0, FAILED)):
        df = pd.DataFrame([{"panel": "P", "curve": "ES", "seed": s, "t": tt, "regret": 2.0 * tt ** power}
                           for s in range(3) for tt in t])
        assert claims.slope_at_most(df, x="t", max_slope=0.66, use_t=True)[0] == expected


def test_insensitive_flat_sensitive_column_does_not_crash():
    df = pd.DataFrame({"T0": [10, 10, 100, 100], "b": [2.0, 3.0, 2.0, 3.0], "l": [4.0, 4.0, 5.0, 5.0]})
    st, numbers = claims.insensitive(df, "l", "b", "T0", {"b": 2.0, "T0": 100}, 0.1)
    assert st == FAILED and "inf" in numbers


def test_isin_matches_int_and_float():
    col = pd.Series([2.0, 4.0, np.nan])
    assert claims.isin(col, [2]).tolist() == [True, False, False]
    assert claims.isin(pd.Series(["a", "b"]), ["b"]).tolist() == [False, True]


def test_paired_ci():
    mean, lo, hi, n = claims.paired_ci(pd.Series([1.0]))
    assert (mean, lo, hi, n) == (1.0, float("-inf"), float("inf"), 1)
    mean, lo, hi, n = claims.paired_ci(pd.Series([1.0, 2.0, 3.0, np.nan]))
    assert n == 3 and mean == 2.0 and lo < 2.0 < hi
    assert hi - 2.0 == pytest.approx(4.302652729911275 * 1.0 / np.sqrt(3))


# ---------------------------------------------------------------------------------------
# errors for names the table lacks


@pytest.mark.parametrize("call", [
    lambda t: claims.outperforms(t, ["A"], ["nope"]),
    lambda t: claims.similar(t, "nope", "B"),
    lambda t: claims.outperforms(t, ["A"], ["B"], panels=["no panel"]),
    lambda t: claims.group_outperforms(t, {"missing_col": 1}, {"curve": "B"}),
    lambda t: claims.group_outperforms(t, {"curve": "zzz"}, {"curve": "B"}),
    lambda t: claims.value_close(t, {"missing_col": 1}, "regret", 1.0, 0.1),
    lambda t: claims.column_is(t, "missing_col", "yes"),
])
def test_unknown_names_raise_claim_error(call):
    with pytest.raises(ClaimError):
        call(long_table(paired(-1.0)))


def test_combine():
    assert claims.combine([]) == INCONCLUSIVE
    assert claims.combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert claims.combine([REPRODUCED, FAILED]) == FAILED
    assert claims.combine([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert claims.combine([INCONCLUSIVE, FAILED, REPRODUCED]) == FAILED
    assert claims.combine(iter([REPRODUCED])) == REPRODUCED


# ---------------------------------------------------------------------------------------
# evaluate and validate_names


def _entry(*checks, claim_id="c1"):
    return {"id": "x-fig", "claims": [{"id": claim_id, "quote": "A  beats\n B.", "note": "a note",
                                       "checks": list(checks)}]}


def test_evaluate_combines_checks_of_a_claim():
    table = long_table(paired(-10.0))
    good = {"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"]}}
    bad = {"fn": "outperforms", "args": {"better": ["B"], "worse": ["A"]}}
    [res] = claims.evaluate(_entry(good), table)
    assert res == {"id": "c1", "quote": "A beats B.", "status": REPRODUCED, "numbers": res["numbers"],
                   "note": "a note"}
    [res] = claims.evaluate(_entry(good, bad), table)
    assert res["status"] == FAILED and " | " in res["numbers"]
    assert claims.evaluate({"id": "x"}, table) == []


def test_evaluate_missing_curve_reduced_scale_vs_paper():
    table = long_table(paired(-10.0))
    entry = _entry({"fn": "outperforms", "args": {"better": ["A (M = 64)"], "worse": ["B"]}})
    [res] = claims.evaluate(entry, table, scale="smoke")
    assert res["status"] == INCONCLUSIVE
    assert "not measured at scale smoke" in res["numbers"]
    # a claim with one measurable and one unmeasured check stays inconclusive, not reproduced
    both = _entry({"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"]}},
                  {"fn": "outperforms", "args": {"better": ["A (M = 64)"], "worse": ["B"]}})
    assert claims.evaluate(both, table, scale="default")[0]["status"] == INCONCLUSIVE
    with pytest.raises(ClaimError, match="x-fig.*c1"):
        claims.evaluate(entry, table, scale="paper")


def test_validate_names():
    curves, panels = ["A", "B", "C"], ["p1", "p2"]
    ok = _entry({"fn": "outperforms", "args": {"better": ["A", "B"], "worse": "C", "panels": ["p2"]}},
                {"fn": "value_close", "args": {"where": {"T0": 100}, "column": "l", "expected": 1, "tol": 1}})
    claims.validate_names(ok, curves, panels)
    with pytest.raises(ClaimError, match=r"curve.*'D'"):
        claims.validate_names(_entry({"fn": "outperforms", "args": {"better": ["A"], "worse": ["D"]}}),
                              curves, panels)
    with pytest.raises(ClaimError, match=r"curve.*'D'"):
        claims.validate_names(_entry({"fn": "similar", "args": {"a": "D", "b": "A"}}), curves, panels)
    with pytest.raises(ClaimError, match=r"panel.*'p3'"):
        claims.validate_names(_entry({"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"],
                                                                    "panels": ["p3"]}}), curves, panels)
    with pytest.raises(ClaimError, match=r"unknown check 'beats'"):
        claims.validate_names(_entry({"fn": "beats", "args": {}}), curves, panels)
