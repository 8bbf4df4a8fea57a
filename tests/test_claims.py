"""Claim checks on synthetic tables whose outcome is known by construction.

Every check registered in ``claims.CHECKS`` gets a table where it must say "reproduced", one where
it must say "not reproduced" and, for every check with sampling error, one where it must say
"inconclusive".  Tables are built with numpy from fixed seeds: decided cases use a clear effect
with small noise, undecided ones few seeds with large noise or an interval across a threshold.
The claim-level conditions (premise, seed blocks, reported numbers) are tested through
``evaluate``; the glmes-fig3b checks also on the real l(T0, b) table, and on the per-T0 b grids
that once made the sensitivity claim impossible to fail.
"""
import re

import numpy as np
import pandas as pd
import pytest

from ensemble_bandits import claims, stats
from ensemble_bandits.aggregate import timing_table
from ensemble_bandits.claims import FAILED, INCONCLUSIVE, REPORTED, REPRODUCED, ClaimError, Comparison, Verdict
from ensemble_bandits.paper_tables import doubling_constant_curves

T = 100


def long_table(finals: dict, panel="P", extra=None, t_mid=T // 2, seeds=None):
    """Long table (panel, curve, seed, t, regret[, extra columns]) from final regrets per curve.

    ``finals``: curve -> array of final regrets (one per seed); a checkpoint at ``t_mid`` holds
    half of it, so that checks must use the last checkpoint.  ``extra``: curve -> {column: value}.
    ``seeds``: the seed numbers (default 0, 1, ...).
    """
    rows = []
    for curve, vals in finals.items():
        vals = np.asarray(vals, dtype=float)
        for seed, v in zip(range(len(vals)) if seeds is None else seeds, vals):
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


def _worse_by(status):
    fin = {REPRODUCED: paired(40.0), FAILED: paired(5.0),
           INCONCLUSIVE: {"A": np.array([120.0, 200.0, 40.0]), "B": np.array([100.0, 100.0, 100.0])}}[status]
    return long_table(fin), {"a": "A", "baselines": ["B"], "rel_tol": 0.2}


def _exceeds_by(status):
    """Higher is better: A - B above the absolute margin 5 (column regret stands in for accuracy)."""
    fin = {REPRODUCED: paired(10.0), FAILED: paired(1.0), INCONCLUSIVE: UNDECIDED}[status]
    return long_table(fin), {"a": "A", "b": "B", "margin": 5.0, "column": "regret"}


def _versus_levels(status):
    n, sd = (3, 60.0) if status == INCONCLUSIVE else (30, 1.0)
    top = {REPRODUCED: 5.0, FAILED: 60.0, INCONCLUSIVE: 5.0}[status]     # ES at m >= 500 minus the level
    parts = [long_table({"ES": BASE[:n] + shift + noise(40 + m, n, sd)}, extra={"ES": {"m": m}})
             for m, shift in ((10, 80.0), (500, top), (1000, top))]            # m = 10: outside the range
    parts.append(long_table({"ES (m = T)": BASE[:n], "LinPHE": BASE[:n] + 1.0}))
    return concat(*parts), {"curve": "ES", "x": "m", "levels": ["ES (m = T)", "LinPHE"], "relation": "not_worse",
                            "x_min": 500, "rel_tol": 0.2}


def _same_distribution(status):
    x = 100.0 + noise(2, 40, 10.0)
    y = {REPRODUCED: x + noise(3, 40, 1.0), FAILED: x + 100.0 + noise(3, 40, 1.0)}.get(status)
    fin = UNDECIDED if y is None else {"A": y, "B": x}
    return long_table(fin), {"a": "A", "b": "B", "rel_tol": 0.05}


def _within_factor(status):
    f, sd, n = {REPRODUCED: (1.5, 0.01, 30), FAILED: (3.0, 0.01, 30), INCONCLUSIVE: (2.0, 0.3, 10)}[status]
    o2 = BASE[:n] * f * (1 + noise(6, n, sd))
    fin = {"ref": BASE[:n], "o1": BASE[:n] * 0.8, "o2": o2}
    return long_table(fin), {"reference": "ref", "others": ["o1", "o2"], "factor": 2.0}


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


def _pairs_table(regrets, n=30, sd=0.5, M=64):
    """Heatmap-like final regrets: (reference, perturbation) -> level, at one M."""
    parts = []
    for k, ((ref, pert), level) in enumerate(regrets.items()):
        name = f"{ref}-{pert} (M = {M})"
        parts.append(long_table({name: BASE[:n] + level + noise(200 + k, n, sd)},
                                extra={name: {"M": M, "reference": ref, "perturbation": pert}}))
    return concat(*parts)


def _analogous(status):
    levels = {("gaussian", "sphere"): 0.0, ("sphere", "sphere"): 2.0, ("cube", "sphere"): -2.0,
              ("coordinate", "sphere"): 1.0, ("coordinate", "coordinate"): 900.0}     # excluded
    if status == FAILED:
        levels[("cube", "sphere")] = 150.0
    n, sd = (3, 60.0) if status == INCONCLUSIVE else (30, 0.5)
    args = {"where": {"M": [64], "exclude": {"reference": "coordinate", "perturbation": "coordinate"}},
            "rel_tol": 0.2, "match": ["M"]}
    return _pairs_table(levels, n, sd), args


def _similar_across_panels(status):
    shift, n, sd = {REPRODUCED: (2.0, 30, 0.5), FAILED: (60.0, 30, 0.5), INCONCLUSIVE: (2.0, 3, 60.0)}[status]
    parts = [long_table({"M = 2": BASE[:n] + k * shift + noise(30 + k, n, sd),
                         "M = 8": BASE[:n] + noise(40 + k, n, sd)}, panel=f"|X| = {x}")
             for k, x in enumerate((100, 1000, 10000))]
    return concat(*parts), {"curves": ["M = 2", "M = 8"], "rel_tol": 0.2}


def _slope_at_most(status):
    power, sd = {REPRODUCED: (1.0, 0.01), FAILED: (2.0, 0.01), INCONCLUSIVE: (1.5, 0.2)}[status]
    parts = [long_table({"ES": 3.0 * d ** power * np.exp(noise(20 + d, 10, sd))}, extra={"ES": {"d": d}})
             for d in (2, 4, 8, 16, 32)]
    return concat(*parts), {"x": "d", "max_slope": 1.5}


def _slope_at_least(status):
    power, sd = {REPRODUCED: (1.0, 0.01), FAILED: (0.5, 0.01), INCONCLUSIVE: (0.9, 0.2)}[status]
    parts = [long_table({"ES": 3.0 * d ** power * np.exp(noise(20 + d, 10, sd))}, extra={"ES": {"d": d}})
             for d in (2, 4, 8, 16, 32)]
    return concat(*parts), {"x": "d", "min_slope": 0.9}


def _fraction_at_least(status):
    low, sd = {REPRODUCED: (0.05, 0.001), FAILED: (0.01, 0.001), INCONCLUSIVE: (0.04, 0.02)}[status]
    rng = np.random.default_rng(7)
    rows = [{"panel": "P", "curve": "ES", "seed": s, "t": t, "regret": float(t),
             "frac": (low if t == 50 else 0.2) + rng.normal(0.0, sd)}
            for s in range(5) for t in (1, 10, 50, 100)]
    return pd.DataFrame(rows), {"column": "frac", "threshold": 0.04, "curves": ["ES"]}


def _final_level(status):
    """A ratio at the last checkpoint above 1 (reproduced), below it (failed), across it with 3 noisy seeds;
    at t = T/2 it says the opposite, so the check must read the last checkpoint."""
    level, sd, n = {REPRODUCED: (3.0, 0.1, 5), FAILED: (0.5, 0.1, 5), INCONCLUSIVE: (1.2, 1.0, 3)}[status]
    rows = [{"panel": "P", "curve": "A", "seed": s, "t": t, "regret": float(t),
             "ratio": (level if t == T else 2.0 - level) + e}
            for s, e in zip(range(n), noise(9, n, sd)) for t in (T // 2, T)]
    return pd.DataFrame(rows), {"column": "ratio", "threshold": 1.0, "relation": "above", "curves": ["A"]}


def _falls_before_bend(status):
    """Per-round regret 1 until round t_b, then 0.1; the ratio 5 until round t_c, then 0.5 (t_c and t_b
    jittered per seed): t_c < t_b (reproduced), t_c > t_b (failed), no bend by T = 1000 (inconclusive)."""
    t_c, t_b = {REPRODUCED: (200, 400), FAILED: (600, 300), INCONCLUSIVE: (200, 5000)}[status]
    ts = np.unique(np.concatenate([np.arange(10, 1001, 10), np.geomspace(1, 1000, 20).round()])).astype(int)
    rows = []
    for s in range(5):
        cb, cc = t_b + 7 * s, t_c + 5 * s
        for t in ts:
            regret = min(t, cb) + 0.1 * max(t - cb, 0)
            rows.append({"panel": "P", "curve": "A", "seed": s, "t": t, "regret": float(regret),
                         "ratio": 5.0 if t < cc else 0.5})
    return pd.DataFrame(rows), {"column": "ratio", "threshold": 1.0, "curve": "A", "t_min": 20}


def _power_curves(powers: dict, seeds=10, sd=0.01, offset=0.0, T=10_000):
    """Curves R(t) = offset + t^(a + e), a per curve, e ~ N(0, sd^2) per seed, at 60 log-spaced
    checkpoints up to T and at T/10, T/5, T/2, T."""
    ts = np.unique(np.concatenate([np.geomspace(1, T, 60).round(), [T / 10, T / 5, T / 2, T]])).astype(int)
    rows = [{"panel": "P", "curve": c, "seed": s, "t": t, "regret": offset + float(t) ** (a + e)}
            for c, a in powers.items() for s, e in zip(range(seeds), noise(7, seeds, sd)) for t in ts]
    return pd.DataFrame(rows)


def _rate_ratio(status):
    """t^0.5 (late rate 5^-0.5 = 0.45 of the early one) below 0.8; t^1 (ratio 1) is not; t^0.86
    (ratio 0.8) with 4 seeds of exponents 0.1 apart leaves it undecided."""
    power, seeds, sd = {REPRODUCED: (0.5, 10, 0.01), FAILED: (1.0, 10, 0.01), INCONCLUSIVE: (0.86, 4, 0.1)}[status]
    return _power_curves({"A": power}, seeds, sd), {"curves": ["A"], "relation": "below", "threshold": 0.8}


def _level_curves(rates, seeds=10, sd=0.0, uniform=0.5, T=10_000):
    """Curves that pay ``rates[c]`` (+ N(0, sd^2) per seed) regret per round after an early 500 rounds
    at the rate of a uniformly random policy, ``uniform`` (the column uniform_rate); checkpoints
    every T/20."""
    ts = np.arange(T // 20, T + 1, T // 20)
    rows = [{"panel": "P", "curve": c, "seed": s, "t": int(t), "uniform_rate": uniform,
             "regret": uniform * min(t, 500) + (r + e) * max(t - 500, 0)}
            for c, r in rates.items() for s, e in zip(range(seeds), noise(3, seeds, sd)) for t in ts]
    return pd.DataFrame(rows)


def _level_below(status):
    """A late rate of 0.02 (4 % of the uniform policy's 0.5) is below a tenth; 0.2 (40 %) is not; 0.05
    (10 %) with 4 seeds that scatter by 0.02 leaves it undecided."""
    rate, seeds, sd = {REPRODUCED: (0.02, 10, 0.002), FAILED: (0.2, 10, 0.002), INCONCLUSIVE: (0.05, 4, 0.02)}[status]
    return _level_curves({"A": rate}, seeds, sd), {"fraction": 0.1}


def _coupled_identical(status):
    first = [T + 1, T + 1, 37, T + 1]                      # seed 2 diverges ...
    tie = [False, False, status == REPRODUCED, False]      # ... at a near-tie (fine) or not (failure)
    df = pd.DataFrame({"panel": "P", "curve": "coupled", "seed": range(4), "t": T, "first_mismatch": first,
                       "near_tie": tie, "regret_es": 1.0, "regret_phe": 1.0})
    return df, {"curve": "coupled"}


def _ratio_below(status):
    secs = {"fast": 1.0, "slow": 3.0 if status == REPRODUCED else 1.5}
    t = long_table({c: BASE[:5] for c in secs}, extra={c: {"seconds": s} for c, s in secs.items()})
    # as in the registry: the check runs on the derived timing table (no column t)
    return timing_table(t), {"numerator": "fast", "denominator": "slow", "threshold": 0.5,
                             "column": "seconds_per_run"}


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


def _linear_fit_replicates(noise_sd, n_boot=200, seed=0):
    """A min_ensemble_size-like table: replicate 0 on the line M = 2 d, replicates scattered around it."""
    d = np.repeat(np.arange(10.0, 110.0, 10.0), 3)
    rng = np.random.default_rng(seed)
    reps = [pd.DataFrame({"d": d, "n_arms": np.tile([100, 1000, 10000], 10), "M_min": 2.0 * d, "M_max_tried": 400.0,
                          "replicate": 0})]
    for r in range(1, n_boot + 1):
        sd = noise_sd[r % len(noise_sd)]
        reps.append(reps[0].assign(M_min=2.0 * d + rng.normal(0, sd, d.size), replicate=r))
    return pd.concat(reps, ignore_index=True)


@pytest.mark.parametrize("noise_sd,status", [((2.0,), REPRODUCED), ((2.0, 40.0), INCONCLUSIVE), ((80.0,), FAILED)])
def test_linear_fit_decides_on_the_bootstrap_interval(noise_sd, status):
    """The point estimate is a perfect line every time: only the replicates' spread decides."""
    got, numbers = claims.linear_fit(_linear_fit_replicates(noise_sd), r2_min=0.8, rel_spread_max=0.5)
    assert got == status, numbers
    assert "95% intervals over 200 bootstrap resamples" in numbers
    assert "lies outside its interval" not in numbers


def test_linear_fit_says_when_a_point_value_lies_outside_its_interval():
    """Resampled M_min biased upward (every replicate's line steeper than the point's): the text says
    the slope's point lies outside its interval and why, and the verdict still reads R^2 and the spread."""
    table = _linear_fit_replicates((2.0,))
    table.loc[table["replicate"] > 0, "M_min"] *= 1.3
    got, numbers = claims.linear_fit(table, r2_min=0.8, rel_spread_max=0.5)
    assert got == REPRODUCED, numbers
    assert "the slope's point value lies below its interval: M_min, the smallest grid value that matches, rises" in numbers


def _with_jackknife(table, n_seeds=5, sd=2.0, seed=4):
    """Leave-one-seed-out rows (replicate -(s + 1), one per point row and seed, keyed by panel) around
    the point values, as min_ensemble_size's ``jackknife`` writes them."""
    point = table[table["replicate"] == 0].assign(panel=lambda df: [f"p{i}" for i in range(len(df))])
    rng = np.random.default_rng(seed)
    jack = [point.assign(M_min=point["M_min"] + rng.normal(0, sd, len(point)), replicate=-(s + 1))
            for s in range(n_seeds)]
    rest = table[table["replicate"] != 0].assign(panel=np.tile(point["panel"].to_numpy(), len(table) // len(point) - 1))
    return pd.concat([point, rest, *jack], ignore_index=True)


def test_linear_fit_default_interval_is_the_percentile_one_and_ignores_jackknife_rows():
    table = _linear_fit_replicates((2.0, 40.0))
    before = claims.linear_fit(table, r2_min=0.8, rel_spread_max=0.5)
    assert claims.linear_fit(table, r2_min=0.8, rel_spread_max=0.5, interval="percentile") == before
    assert claims.linear_fit(_with_jackknife(table), r2_min=0.8, rel_spread_max=0.5) == before
    with pytest.raises(ClaimError, match="leave-one-seed-out"):
        claims.linear_fit(table, r2_min=0.8, rel_spread_max=0.5, interval="bca")


def test_linear_fit_bca_intervals_are_stats_bca_on_the_replicates():
    """interval: bca takes each statistic's BCa interval (stats.Bootstrap) from the bootstrap replicates
    and, per panel (stratum), the fits with that panel's point row replaced by each jackknife row."""
    from ensemble_bandits.claims.trends import _linear_fit_stats

    table = _with_jackknife(_linear_fit_replicates((2.0, 40.0)))
    table.loc[table["replicate"] > 0, "M_min"] *= 1.05           # resamples biased upward, as for M_min
    got, numbers = claims.linear_fit(table, r2_min=0.8, rel_spread_max=0.5, interval="bca")
    rep = table["replicate"]
    point = table[rep == 0].reset_index(drop=True)
    boots = np.array([_linear_fit_stats(sub, "d", "M_min") for _, sub in table[rep > 0].groupby(rep[rep > 0])])
    strata = []
    for i, panel in enumerate(point["panel"]):
        vals = []
        for _, row in table[(rep < 0) & (table["panel"] == panel)].iterrows():
            t = point.copy()
            t.loc[i, "M_min"] = row["M_min"]
            vals.append(_linear_fit_stats(t, "d", "M_min"))
        strata.append(np.array(vals))
    est = _linear_fit_stats(point, "d", "M_min")
    slope = stats.Bootstrap(est[0], boots[:, 0], [s[:, 0] for s in strata]).interval(method="bca")
    r2 = stats.Bootstrap(est[1], boots[:, 1], [s[:, 1] for s in strata]).interval(method="bca")
    fmt = claims.core.fmt
    assert f"slope {fmt(est[0])} [{fmt(slope[0])}, {fmt(slope[1])}]" in numbers
    assert f"R^2 {fmt(est[1])} [{fmt(r2[0])}, {fmt(r2[1])}]" in numbers
    assert "95% BCa intervals over 200 bootstrap resamples" in numbers and "150 leave-one-seed-out values in 30 panels" in numbers
    expected = REPRODUCED if r2[0] >= 0.8 else FAILED if r2[1] < 0.8 else INCONCLUSIVE
    assert got in (expected, FAILED)
    # resamples biased upward: the bias correction moves both edges of the slope's interval down
    pct = stats.Bootstrap(est[0], boots[:, 0]).interval()
    assert slope[0] < pct[0] and slope[1] < pct[1]


def test_linear_fit_fits_a_censored_setting_as_a_bound():
    """A setting never matched within its grid (NaN, M_max_tried 64) far above the others' line: dropping it
    would pass the line; as a lower bound it pulls the fit and fails it."""
    d = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    table = pd.DataFrame({"d": d, "n_arms": 100, "M_min": [3.0, 6.0, 9.0, 12.0, np.nan], "M_max_tried": [64.0] * 5})
    got, numbers = claims.linear_fit(table, r2_min=0.8, rel_spread_max=0.5)
    assert got == FAILED and "1 setting(s) never matched TS" in numbers, numbers
    assert claims.linear_fit(table.dropna(), r2_min=0.8, rel_spread_max=0.5)[0] == REPRODUCED


def _spread_higher(status):
    z = noise(7, 40, 1.0)
    wide = {REPRODUCED: 3.0, FAILED: 0.3, INCONCLUSIVE: 1.05}[status]
    n = 40 if status != INCONCLUSIVE else 8
    base = 100.0 + 10.0 * z[:n]
    a = 100.0 + 10.0 * wide * noise(8, n, 1.0)
    return long_table({"A": a, "B": base}), {"a": "A", "b": "B"}


def _curve_table(f=lambda T0, b: 3.3 + (b - 2.6) ** 2 + 0.001 * np.log(T0)):
    """A function-curve table like doubling_constant_curves: f(T0, b) on one b grid for every T0."""
    b = np.linspace(1.5, 6.0, 46)
    return pd.concat([pd.DataFrame({"T0": T0, "b": b, "l": f(T0, b)}) for T0 in (10, 100, 1000)],
                     ignore_index=True)


def _value_close(status):
    expected = 3.3 if status == REPRODUCED else 4.0
    return _curve_table(), {"where": {"T0": 100, "b": 2.618}, "column": "l", "expected": expected, "tol": 0.05}


def _column_is(status):
    df = pd.DataFrame({"family": ["gaussian", "sphere", "cube", "coordinate"],
                       "holds": ["yes", "yes", "N/A", "yes" if status == REPRODUCED else "no"]})
    return df, {"column": "holds", "value": "yes", "ignore": ["N/A"]}


def test_column_is_leaves_a_claim_open_on_rows_not_measured():
    df = pd.DataFrame({"dataset": ["a", "b", "c"], "matches": ["yes", "yes", "data absent"]})
    status, numbers = claims.column_is(df, "matches", "yes", not_measured=["data absent"])
    assert status == INCONCLUSIVE and numbers == "2 rows checked; matches != 'yes' for: none; not checked (data absent): c"
    assert claims.column_is(df, "matches", "yes", ignore=["data absent"])[0] == REPRODUCED
    df.loc[0, "matches"] = "no"                      # a measured row that fails decides, whatever is absent
    assert claims.column_is(df, "matches", "yes", not_measured=["data absent"])[0] == FAILED


def _interval_below(status):
    lower = {REPRODUCED: 0.0, FAILED: 0.07, INCONCLUSIVE: 0.01}[status]
    upper = {REPRODUCED: 0.02, FAILED: 0.09, INCONCLUSIVE: 0.06}[status]
    df = pd.DataFrame({"Distribution": ["Sphere", "Coordinate"], "lo": [0.0, lower], "hi": [0.01, upper]})
    return df, {"lower": "lo", "upper": "hi", "margin": 0.05, "label": "Distribution"}


FIG3B_ARGS = {"column": "l", "sensitive_to": "b", "insensitive_to": "T0", "at": {"b": 2.618, "T0": 100},
              "sensitive_range": [1.5, 5.0], "max_rel_insensitive": 0.05, "min_rel_sensitive": 0.1}


def _insensitive(status):
    if status == REPRODUCED:
        return _curve_table(), FIG3B_ARGS
    return _curve_table(lambda T0, b: 3.3 + (b - 2.6) ** 2 + 0.5 * np.log(T0)), FIG3B_ARGS


def _near_minimum(status):
    centre = 2.6 if status == REPRODUCED else 3.5
    return (_curve_table(lambda T0, b: 3.3 + (b - centre) ** 2 + 1.0 / T0),
            {"column": "l", "over": "b", "at": 2.618, "by": "T0", "rel_tol": 0.01})


def _decreasing(status):
    sign = 1.0 if status == REPRODUCED else -1.0
    return (_curve_table(lambda T0, b: 3.3 + (b - 2.6) ** 2 + sign / T0),
            {"column": "l", "along": "T0", "over": "b", "at": 2.618})


ALL = (REPRODUCED, FAILED, INCONCLUSIVE)
EXACT = (REPRODUCED, FAILED)
CASES = {
    "outperforms": (_outperforms, ALL),
    "similar": (_similar, ALL),
    "not_worse": (_not_worse, ALL),
    "worse_by": (_worse_by, ALL),
    "exceeds_by": (_exceeds_by, ALL),
    "versus_levels": (_versus_levels, ALL),
    "same_distribution": (_same_distribution, ALL),
    "within_factor": (_within_factor, ALL),
    "spread_higher": (_spread_higher, ALL),
    "group_outperforms": (_group_outperforms, ALL),
    "analogous": (_analogous, ALL),
    "similar_across_panels": (_similar_across_panels, ALL),
    "slope_at_most": (_slope_at_most, ALL),
    "slope_at_least": (_slope_at_least, ALL),
    "rate_ratio": (_rate_ratio, ALL),
    "level_below": (_level_below, ALL),
    "fraction_at_least": (_fraction_at_least, ALL),
    "final_level": (_final_level, ALL),
    "falls_before_bend": (_falls_before_bend, ALL),
    "linear_fit": (_linear_fit, ALL),
    "interval_below": (_interval_below, ALL),
    "coupled_identical": (_coupled_identical, EXACT),
    "ratio_below": (_ratio_below, EXACT),
    "value_close": (_value_close, EXACT),
    "column_is": (_column_is, EXACT),
    "insensitive": (_insensitive, EXACT),
    "near_minimum": (_near_minimum, EXACT),
    "decreasing": (_decreasing, EXACT),
}


REPORT_ONLY = {"band_entry"}     # checks that show numbers and never decide (tested below)


def test_every_check_has_cases():
    assert set(CASES) | REPORT_ONLY == set(claims.CHECKS), "add synthetic cases for new checks"
    for name, (_, statuses) in CASES.items():
        assert REPRODUCED in statuses and FAILED in statuses, name


@pytest.mark.parametrize("name,status", [(n, s) for n, (_, sts) in CASES.items() for s in sts])
def test_check_outcome(name, status):
    table, kwargs = CASES[name][0](status)
    result = claims.CHECKS[name](table, **kwargs)
    got, numbers = result
    assert got == status, numbers
    assert isinstance(numbers, str) and numbers
    assert isinstance(result, Verdict)
    if CASES[name][1] == ALL and name not in ("linear_fit", "interval_below"):
        assert result.comparisons, "a statistical check hands its comparisons to the claim's decision"


def test_final_level_of_a_share_and_of_a_column_the_runs_did_not_record():
    table, kwargs = _final_level(REPRODUCED)
    table = table.assign(whole=4.0 * table["ratio"])             # ratio / whole = 0.25 at every row
    status, numbers = claims.final_level(table, **{**kwargs, "per": "whole", "threshold": 0.3, "relation": "below"})
    assert status == REPRODUCED and "ratio / whole at t = 100 mean 0.25 [0.25, 0.25]" in numbers
    result = claims.final_level(table, **{**kwargs, "column": "regret_warmup", "per": "regret"})
    status, numbers = result
    assert status == INCONCLUSIVE and not result.comparisons
    assert numbers == ("regret_warmup / regret: not recorded in these runs (run files written before "
                       "regret_warmup was recorded)")


def test_falls_before_bend_needs_every_resample_and_a_checkpoint_past_t_min():
    table, kwargs = _falls_before_bend(REPRODUCED)
    # seed 4 falls below only after its regret bends: 1 seed of 5 against keeps it undecided
    late = (table["seed"] == 4) & (table["t"] < 700)
    odd = table.assign(ratio=np.where(late, 5.0, table["ratio"]))
    assert claims.falls_before_bend(odd, **kwargs)[0] == INCONCLUSIVE
    assert claims.falls_before_bend(table[table["seed"] < 4], **kwargs)[0] == REPRODUCED
    status, numbers = claims.falls_before_bend(table, **{**kwargs, "t_min": 5000})
    assert status == INCONCLUSIVE and "no checkpoint" in numbers
    with pytest.raises(ClaimError):
        claims.final_level(*_final_level(REPRODUCED)[:1], column="ratio", threshold=1.0, relation="over", curves=["A"])


# ---------------------------------------------------------------------------------------
# paired comparisons


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


def test_exceeds_by_at_a_share_of_the_horizon():
    # A is ahead by 10 at t = T/4 and T/2 but behind by 10 at T: "ahead early" holds, "ahead at the end" not
    rows = []
    for curve, early, late in (("A", 60.0, 40.0), ("B", 50.0, 50.0)):
        for seed, e in enumerate(noise(7, 20, 0.5)):
            for t, v in ((T // 4, early), (T // 2, early), (T, late)):
                rows.append({"panel": "P", "curve": curve, "seed": seed, "t": t, "accuracy": v + e})
    table = pd.DataFrame(rows)
    assert claims.exceeds_by(table, "A", "B", margin=5.0)[0] == FAILED
    for share, t in ((0.1, T // 4), (0.25, T // 4), (0.3, T // 2), (0.5, T // 2)):
        status, numbers = claims.exceeds_by(table, "A", "B", margin=5.0, t_share=share)
        assert status == REPRODUCED and f"at t = {t} " in numbers
    assert claims.exceeds_by(table, "A", "B", margin=5.0, t_share=0.6)[0] == FAILED
    with pytest.raises(ClaimError, match="t_share"):
        claims.exceeds_by(table, "A", "B", t_share=0.0)


def test_similar_interval_across_the_band_edge_is_inconclusive():
    # B's mean is about 100, so the band is about +-20; A - B = 20 +- 2: the interval straddles the edge
    st, numbers = claims.similar(long_table(paired(20.0, sd=2.0)), "A", "B", rel_tol=0.2)
    assert st == INCONCLUSIVE, numbers
    # the same spread well inside the band is equivalent; well outside it is not
    assert claims.similar(long_table(paired(10.0, sd=2.0)), "A", "B", rel_tol=0.2)[0] == REPRODUCED
    assert claims.similar(long_table(paired(30.0, sd=2.0)), "A", "B", rel_tol=0.2)[0] == FAILED


def test_not_worse_across_the_margin_is_inconclusive():
    assert claims.not_worse(long_table(paired(20.0, sd=2.0)), "A", ["B"], rel_tol=0.2)[0] == INCONCLUSIVE


def test_robust_comparison_is_not_fooled_by_a_collapse():
    # A beats B by 10 on 39 seeds; on one seed A collapses (final regret 5000 > 2000)
    fin = paired(-10.0, sd=3.0)
    fin["A"][7] = 5000.0
    table = long_table(fin)
    assert claims.outperforms(table, ["A"], ["B"])[0] == INCONCLUSIVE                  # the mean is fooled
    st, numbers = claims.outperforms(table, ["A"], ["B"], robust=True, collapse=2000, location="pseudo-median")
    assert st == REPRODUCED, numbers
    assert "pseudo-median diff" in numbers and "medians" in numbers and "> 2000 in 1/30 vs 0/30 runs" in numbers


def test_the_mean_decides_unless_the_claim_names_another_location():
    """``robust`` shows the pseudo-median beside the mean; the mean still decides."""
    fin = paired(-10.0, sd=3.0)
    fin["A"][7] = 5000.0
    st, numbers = claims.outperforms(long_table(fin), ["A"], ["B"], robust=True, collapse=2000)
    assert st == INCONCLUSIVE and numbers.startswith("[P] A - B: diff ") and "(shown, not deciding)" in numbers
    with pytest.raises(ClaimError, match="location must be one of mean, pseudo-median"):
        claims.outperforms(long_table(fin), ["A"], ["B"], location="median")


def test_seeds_to_decide_follow_the_interval_and_the_nearest_bound():
    from ensemble_bandits.claims.core import Comparison, seeds_to_decide

    c = Comparison("x", 0.3, 0.3, n=100, estimate=10.0, halfwidth=20.0, bounds=(0.0,))
    assert c.seeds_to_decide() == 400                 # the half-width must halve: 4x the seeds
    band = Comparison("y", 0.3, 0.3, n=50, estimate=15.0, halfwidth=10.0, bounds=(-20.0, 20.0))
    assert band.seeds_to_decide() == 200              # 5 from the edge, half-width 10: 4x
    decided = Comparison("z", 0.001, 0.9, n=10, estimate=5.0, halfwidth=1.0, bounds=(0.0,))
    assert seeds_to_decide([c, band, decided]) == 400
    assert Comparison("w", 0.5, 0.5, n=9, estimate=0.0, halfwidth=1.0, bounds=(0.0,)).seeds_to_decide() == float("inf")


def test_versus_levels_needs_grid_points_in_its_range():
    table, kwargs = _versus_levels(REPRODUCED)
    with pytest.raises(ClaimError, match="no m in"):
        claims.versus_levels(table, **{**kwargs, "x_min": 5000})
    st, numbers = claims.versus_levels(table, **{**kwargs, "x_min": None, "x_max": 100, "relation": "better"})
    assert "[m = 10]" in numbers and "[m = 500]" not in numbers and st == FAILED     # m = 10 is 80 worse


def test_same_distribution_rejected_by_shape_alone():
    # equal means (paired diff inside the band) but a different spread: Kolmogorov-Smirnov fails it
    x = 100.0 + noise(2, 200, 1.0)
    y = 100.0 + noise(9, 200, 20.0)
    st, numbers = claims.same_distribution(long_table({"A": y, "B": x}), "A", "B", rel_tol=0.2)
    assert st == FAILED and "KS" in numbers


def test_group_outperforms_refuses_a_curve_in_both_groups():
    table, args = _group_outperforms(REPRODUCED)
    with pytest.raises(ClaimError, match="both groups"):
        claims.group_outperforms(table, better={"M": [2, 4]}, worse={"reference": "coordinate", "M": [2, 4]})
    # excluding the worse group's curves from the better group makes the comparison valid
    better = {"M": [2, 4], "exclude": {"reference": "coordinate"}}
    assert claims.group_outperforms(table, better, {"reference": "coordinate", "M": [2, 4]})[0] == REPRODUCED


def test_analogous_excludes_what_it_is_told():
    table, args = _analogous(REPRODUCED)
    assert claims.analogous(table, **args)[0] == REPRODUCED
    # without the exclusion, Coordinate-Coordinate (900 worse) breaks the analogy
    assert claims.analogous(table, {"M": [64]}, rel_tol=0.2)[0] == FAILED


def test_slope_at_most_in_t():
    t = np.unique(np.geomspace(1, 10_000, 40).round()).astype(int)
    for power, expected in ((0.5, REPRODUCED), (1.0, FAILED)):
        df = pd.DataFrame([{"panel": "P", "curve": "ES", "seed": s, "t": tt, "regret": 2.0 * tt ** power}
                           for s in range(3) for tt in t])
        assert claims.slope_at_most(df, x="t", max_slope=0.66, use_t=True)[0] == expected


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
# glmes-fig3b: l(T0, b) at the same b for every T0


def _per_t0_grids():
    """The table as the builder once made it: each T0 its own b grid on (1 + 1/T0, 6]."""
    from ensemble_bandits import theory

    parts = []
    for T0 in (10, 50, 100, 300, 1000):
        b = np.linspace(1.0 + 1.0 / T0, 6.0, 201)[1:]
        parts.append(pd.DataFrame({"T0": T0, "b": b, "l": theory.doubling_constant(T0, b)}))
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("check,args", [
    ("insensitive", FIG3B_ARGS),
    ("near_minimum", {"column": "l", "over": "b", "at": 2.618034, "by": "T0", "rel_tol": 0.01}),
    ("decreasing", {"column": "l", "along": "T0", "over": "b", "at": 2.618034}),
])
def test_fig3b_checks_refuse_a_b_grid_per_t0(check, args):
    with pytest.raises(ClaimError, match="own b grid"):
        claims.CHECKS[check](_per_t0_grids(), **args)


def test_fig3b_claims_on_the_real_table(entries):
    """The live registry as data: glmes-fig3b's claims, as the live registry states them, reproduced on the table the
    paper's constants give."""
    table = doubling_constant_curves()
    assert table.groupby("T0")["b"].apply(tuple).nunique() == 1          # one b grid for every T0
    results = {r["id"]: r for r in claims.evaluate(entries["glmes-fig3b"], table)}
    assert {r["status"] for r in results.values()} == {REPRODUCED}, results
    # the range over T0 at b = (3 + sqrt 5)/2 is 3.438 - 3.331, not the 0 of a single T0
    assert "3.331 to 3.438" in results["sensitivity"]["numbers"]
    assert "b = 2.889" in results["smaller-higher-t0-golden-b"]["numbers"]     # T0 = 10's own optimum


def test_insensitive_fails_when_b_barely_matters():
    flat_in_b = _curve_table(lambda T0, b: 3.3 + 0.001 * (b - 2.6) ** 2 + 0.0 * T0)
    st, numbers = claims.insensitive(flat_in_b, **FIG3B_ARGS)
    assert st == FAILED and "at least 0.1" in numbers


# ---------------------------------------------------------------------------------------
# deciding a claim: Holm over all its comparisons, statuses


def test_decide():
    yes, no, open_ = Comparison("y", 0.001, 0.9), Comparison("n", 0.9, 0.001), Comparison("o", 0.3, 0.3)
    assert claims.decide([yes, yes])[0] == REPRODUCED
    assert claims.decide([yes, open_])[0] == INCONCLUSIVE
    status, summary = claims.decide([yes, no])
    assert status == FAILED and "n (Holm p" in summary
    assert claims.decide([])[0] == INCONCLUSIVE
    # one of nine comparisons against the claim at p = 0.01: decided against alone, not after Holm
    marginal = Comparison("m", 0.9, 0.01)
    assert claims.decide([marginal])[0] == FAILED
    assert claims.decide([marginal] + [Comparison(f"c{i}", 0.9, 0.9) for i in range(8)])[0] == INCONCLUSIVE


def test_combine():
    assert claims.combine([]) == INCONCLUSIVE
    assert claims.combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert claims.combine([REPRODUCED, FAILED]) == FAILED
    assert claims.combine([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert claims.combine([INCONCLUSIVE, FAILED, REPRODUCED]) == FAILED
    assert claims.combine(iter([REPRODUCED])) == REPRODUCED
    assert claims.combine([REPORTED, REPRODUCED]) == REPRODUCED      # reported parts do not count
    assert claims.combine([REPORTED, REPORTED]) == REPORTED


# ---------------------------------------------------------------------------------------
# evaluate and validate_names


def _entry(*checks, claim_id="c1", note="a note"):
    return {"id": "x-fig", "claims": [{"id": claim_id, "quote": "A  beats\n B.", "note": note,
                                       "checks": list(checks)}]}


def _claim(claim_id, *checks, note=""):
    return {"id": claim_id, "quote": f"quote {claim_id}", "note": note, "checks": list(checks)}


BEATS = {"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"]}}


def test_evaluate_combines_checks_of_a_claim():
    table = long_table(paired(-10.0))
    bad = {"fn": "outperforms", "args": {"better": ["B"], "worse": ["A"]}}
    [res] = claims.evaluate(_entry(BEATS), table)
    assert res == {"id": "c1", "quote": "A beats B.", "source": "verbatim", "status": REPRODUCED,
                   "numbers": res["numbers"], "note": "a note", "decisive": "[P] A - B: diff -10 [-10, -9.998] (n=30)"}
    assert res["numbers"].endswith("all 1 comparison(s) decided for the claim")
    [res] = claims.evaluate(_entry(BEATS, bad), table)
    assert res["status"] == FAILED and " | " in res["numbers"]
    assert claims.evaluate({"id": "x"}, table) == []


def test_evaluate_decides_over_the_comparisons_of_all_checks(monkeypatch):
    """Holm runs over the claim, not over each check: a contradiction at p = 0.01 in one check does
    not fail a claim of nine comparisons, though it fails the check alone."""
    def one(table):
        return Verdict(FAILED, "one", [Comparison("m", 0.9, 0.01)])

    def eight(table):
        return Verdict(INCONCLUSIVE, "eight", [Comparison(f"c{i}", 0.9, 0.9) for i in range(8)])

    monkeypatch.setitem(claims.CHECKS, "one", one)
    monkeypatch.setitem(claims.CHECKS, "eight", eight)
    assert claims.evaluate(_entry({"fn": "one"}), pd.DataFrame())[0]["status"] == FAILED
    [res] = claims.evaluate(_entry({"fn": "one"}, {"fn": "eight"}), pd.DataFrame())
    assert res["status"] == INCONCLUSIVE and "Holm" not in res["numbers"]


def test_claim_source_from_the_note():
    assert claims.claim_source({"note": "Paraphrase: of Theorem 1. slope"}) == ("paraphrase", "of Theorem 1. slope")
    assert claims.claim_source({"note": "Designed: ours"}) == ("designed", "ours")
    assert claims.claim_source({"note": "read as ..."}) == ("verbatim", "read as ...")
    assert claims.claim_source({}) == ("verbatim", "")


def test_report_only_checks_report_without_a_verdict():
    table = long_table(paired(10.0))                      # A is worse: the check alone would fail
    reported = {"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"], "report_only": True}}
    [res] = claims.evaluate(_entry(reported), table)
    assert res["status"] == REPORTED and res["numbers"].startswith("reported, no verdict: ")
    worse_is_worse = {"fn": "outperforms", "args": {"better": ["B"], "worse": ["A"]}}
    [res] = claims.evaluate(_entry(worse_is_worse, reported), table)
    assert res["status"] == REPRODUCED                    # the reported part does not count


@pytest.mark.parametrize("premise_status", [REPRODUCED, FAILED, INCONCLUSIVE])
def test_premise(premise_status):
    """A claim takes the status of its premise: it cannot be reproduced on an undecided premise."""
    fin = {REPRODUCED: paired(-10.0), FAILED: paired(10.0), INCONCLUSIVE: UNDECIDED}[premise_status]
    table = concat(long_table(fin), long_table({"C": BASE - 10.0, "D": BASE}))
    entry = {"id": "x-fig", "claims": [
        _claim("first", BEATS),
        _claim("second", {"fn": "premise", "args": {"claim": "first"}},
               {"fn": "outperforms", "args": {"better": ["C"], "worse": ["D"]}})]}
    first, second = claims.evaluate(entry, table)
    assert first["status"] == premise_status
    assert second["status"] == premise_status and f"premise 'first': {premise_status}" in second["numbers"]
    entry["claims"][1]["checks"][0]["args"]["if_failed"] = INCONCLUSIVE      # a condition of the test, not a part
    first, second = claims.evaluate(entry, table)
    assert second["status"] == (INCONCLUSIVE if premise_status == FAILED else premise_status)
    assert f"premise 'first': {premise_status}" in second["numbers"]


def test_after_round():
    """A claim on runs that end by round t is not measured (inconclusive, even if its checks pass)."""
    table = long_table(paired(-10.0))                    # final checkpoint t = T
    [res] = claims.evaluate(_entry(BEATS, {"fn": "after_round", "args": {"t": T - 1}}), table)
    assert res["status"] == REPRODUCED
    [res] = claims.evaluate(_entry(BEATS, {"fn": "after_round", "args": {"t": T}}), table, scale="smoke")
    assert res["status"] == INCONCLUSIVE and f"the runs end at t = {T}, not after round {T}" in res["numbers"]
    with pytest.raises(ClaimError, match="after_round needs one integer round"):
        claims.validate_names(_entry(BEATS, {"fn": "after_round", "args": {"t": "50"}}), ["A", "B"], ["P"])


def test_reading_causes_name_readings_of_the_figure():
    entry = _entry(BEATS)
    entry["readings"] = {"code": {"label": "code", "says": "s", "agent": {"G": 4}}}
    entry["claims"][0]["reading_causes"] = {"code": {"kind": "genuine", "why": "w"}}
    claims.validate_names(entry, ["A", "B"], ["P"])
    entry["claims"][0]["reading_causes"]["cod"] = {"kind": "genuine", "why": "w"}
    with pytest.raises(ClaimError, match=r"reading_causes for \['cod'\], which are not readings"):
        claims.validate_names(entry, ["A", "B"], ["P"])


BLOCKS = {"fn": "seed_blocks", "args": {"primary": [0, 30], "replicate": [200, 230]}}


@pytest.mark.parametrize("first,second,expected", [
    (-10.0, -10.0, REPRODUCED), (10.0, 10.0, FAILED), (-10.0, 10.0, INCONCLUSIVE)])
def test_seed_blocks(first, second, expected):
    table = concat(long_table(paired(first)), long_table(paired(second, seed=8), seeds=range(200, 230)))
    [res] = claims.evaluate(_entry(BEATS, BLOCKS), table)
    assert res["status"] == expected, res["numbers"]
    assert "seeds [0, 30) (30 seeds)" in res["numbers"] and "seeds [200, 230) (30 seeds)" in res["numbers"]
    assert ("verdicts differ between the seed blocks" in res["numbers"]) == (first != second)


def test_seed_blocks_unmeasured_replicate():
    table = long_table(paired(-10.0))
    [res] = claims.evaluate(_entry(BEATS, BLOCKS), table, scale="default")
    assert res["status"] == INCONCLUSIVE and "not measured at scale default" in res["numbers"]
    assert res["numbers"].startswith("seeds [0, 30) (30 seeds): reproduced")
    with pytest.raises(ClaimError, match=r"x-fig.*c1.*no seeds in \[200, 230\)"):
        claims.evaluate(_entry(BEATS, BLOCKS), table, scale="paper")


def test_evaluate_missing_curve_reduced_scale_vs_paper():
    table = long_table(paired(-10.0))
    entry = _entry({"fn": "outperforms", "args": {"better": ["A (M = 64)"], "worse": ["B"]}})
    [res] = claims.evaluate(entry, table, scale="smoke")
    assert res["status"] == INCONCLUSIVE
    assert "not measured at scale smoke" in res["numbers"]
    # a claim with one measurable and one unmeasured check stays inconclusive, not reproduced
    both = _entry(BEATS, {"fn": "outperforms", "args": {"better": ["A (M = 64)"], "worse": ["B"]}})
    assert claims.evaluate(both, table, scale="default")[0]["status"] == INCONCLUSIVE
    with pytest.raises(ClaimError, match="x-fig.*c1"):
        claims.evaluate(entry, table, scale="paper")


@pytest.mark.parametrize("call", [
    lambda t: claims.outperforms(t, ["A"], ["nope"]),
    lambda t: claims.similar(t, "nope", "B"),
    lambda t: claims.outperforms(t, ["A"], ["B"], panels=["no panel"]),
    lambda t: claims.group_outperforms(t, {"missing_col": 1}, {"curve": "B"}),
    lambda t: claims.group_outperforms(t, {"curve": "zzz"}, {"curve": "B"}),
    lambda t: claims.value_close(t, {"missing_col": 1}, "regret", 1.0, 0.1),
    lambda t: claims.column_is(t, "missing_col", "yes"),
    lambda t: claims.interval_below(t, "lo", "hi", 0.05),
])
def test_unknown_names_raise_claim_error(call):
    with pytest.raises(ClaimError):
        call(long_table(paired(-1.0)))


def test_validate_names():
    curves, panels = ["A", "B", "C"], ["p1", "p2"]
    ok = _entry({"fn": "outperforms", "args": {"better": ["A", "B"], "worse": "C", "panels": ["p2"]}},
                {"fn": "value_close", "args": {"where": {"T0": 100}, "column": "l", "expected": 1, "tol": 1}},
                {"fn": "not_worse", "args": {"a": [{"curve": "A", "m": 500}], "baselines": ["B"]}})
    claims.validate_names(ok, curves, panels)
    with pytest.raises(ClaimError, match=r"curve.*'D'"):
        claims.validate_names(_entry({"fn": "outperforms", "args": {"better": ["A"], "worse": ["D"]}}),
                              curves, panels)
    with pytest.raises(ClaimError, match=r"curve.*'D'"):
        claims.validate_names(_entry({"fn": "similar", "args": {"a": "D", "b": "A"}}), curves, panels)
    with pytest.raises(ClaimError, match=r"curve.*'D'"):
        claims.validate_names(_entry({"fn": "not_worse", "args": {"a": [{"curve": "D", "m": 5}], "baselines": "A"}}),
                              curves, panels)
    with pytest.raises(ClaimError, match=r"panel.*'p3'"):
        claims.validate_names(_entry({"fn": "outperforms", "args": {"better": ["A"], "worse": ["B"],
                                                                    "panels": ["p3"]}}), curves, panels)
    with pytest.raises(ClaimError, match=r"unknown check 'beats'"):
        claims.validate_names(_entry({"fn": "beats", "args": {}}), curves, panels)


def test_validate_claim_level_conditions():
    curves, panels = ["A", "B"], ["p1"]
    later = {"id": "x-fig", "claims": [_claim("a", {"fn": "premise", "args": {"claim": "b"}}), _claim("b", BEATS)]}
    with pytest.raises(ClaimError, match="premise must name an earlier claim"):
        claims.validate_names(later, curves, panels)
    good = {"id": "x-fig", "claims": [_claim("b", BEATS), _claim("a", {"fn": "premise", "args": {"claim": "b"}})]}
    claims.validate_names(good, curves, panels)
    for args in ({"claim": "b", "if_failed": "reproduced"}, {"claim": "b", "iffailed": "inconclusive"}):
        odd = {"id": "x-fig", "claims": [_claim("b", BEATS), _claim("a", {"fn": "premise", "args": args})]}
        with pytest.raises(ClaimError, match="premise takes claim and, optionally, if_failed: inconclusive"):
            claims.validate_names(odd, curves, panels)
    for bad in ({"primary": [0, 200], "replicate": [100, 300]}, {"primary": [0, 200]},
                {"primary": [200, 0], "replicate": [200, 400]}):
        with pytest.raises(ClaimError, match="seed_blocks needs"):
            claims.validate_names(_entry(BEATS, {"fn": "seed_blocks", "args": bad}), curves, panels)
    claims.validate_names(_entry(BEATS, BLOCKS), curves, panels)


def test_slopes_in_t_over_a_share_of_the_horizon():
    """Regret linear up to T/2, flat after: sublinear over the last half (t_share 0.5), not over the
    whole run; a linear curve's slope is at least 0.9 at any share."""
    t = np.unique(np.geomspace(1, 10_000, 80).round()).astype(int)
    rows = [{"panel": "P", "curve": c, "seed": s, "t": tt,
             "regret": (min(tt, 5000) + 0.01 * tt if c == "flat" else float(tt)) * (1 + 0.01 * s)}
            for c in ("flat", "linear") for s in range(4) for tt in t]
    df = pd.DataFrame(rows)
    assert claims.slope_at_most(df, x="t", max_slope=0.9, curves=["flat"], use_t=True, t_share=0.5)[0] == REPRODUCED
    assert claims.slope_at_most(df, x="t", max_slope=0.9, curves=["flat"], use_t=True, t_min=1)[0] == FAILED
    assert claims.slope_at_least(df, x="t", min_slope=0.9, curves=["linear"], use_t=True, t_share=0.1)[0] == REPRODUCED
    assert claims.slope_at_least(df, x="t", min_slope=0.9, curves=["flat"], use_t=True, t_share=0.5)[0] == FAILED


def test_rate_ratio_against_its_closed_form():
    """On noise-free curves the ratio is the closed form over the checkpoints it names; an offset from the
    first rounds (Greedy's early mistakes) leaves a linear rate at 1, where the log-log slope over the
    last 90 % falls well below 0.9; a curve that stops (converges) has ratio 0."""
    df = _power_curves({"linear": 1.0, "root": 0.5}, seeds=4, sd=0.0, offset=0.0)
    late, early = (10_000 ** 0.5 - 5_000 ** 0.5) / 5_000, (2_000 ** 0.5 - 1_000 ** 0.5) / 1_000
    _, numbers = claims.rate_ratio(df, curves=["root"], relation="below", threshold=0.8)
    assert f"(5000, 10000] / over (1000, 2000] = {late / early:.4g} " in numbers
    offset = _power_curves({"linear": 1.0}, seeds=4, sd=0.0, offset=20_000.0)
    assert claims.rate_ratio(offset, curves=["linear"], relation="above", threshold=0.8)[0] == REPRODUCED
    assert "= 1 [1, 1]" in claims.rate_ratio(offset, curves=["linear"], relation="above", threshold=0.8)[1]
    assert claims.slope_at_most(offset, x="t", max_slope=0.9, use_t=True, t_share=0.1)[0] == REPRODUCED
    stops = offset.assign(regret=np.minimum(offset["t"], 1_500.0))
    _, numbers = claims.rate_ratio(stops, curves=["linear"], relation="below", threshold=0.5)
    assert "= 0 [0, 0]" in numbers
    few = offset[offset["t"] >= 5_000]
    status, numbers = claims.rate_ratio(few, curves=["linear"], relation="above", threshold=0.8)
    assert status == INCONCLUSIVE and "too few checkpoints" in numbers
    with pytest.raises(ClaimError):
        claims.rate_ratio(df, curves=["root"], relation="under", threshold=0.8)


def test_level_below_against_a_naive_computation():
    """The ratio per seed is (R(T) - R(T/2)) / (T/2) / uniform_rate, its mean and t-interval as computed by
    hand; a curve that flattened before T/10 (where the rate ratio fails: both windows flat) passes, and
    one still learning at a rate ratio of 0.47 (R ~ t^0.53) fails; a table without the reference column
    is an error, not a verdict."""
    from scipy import stats as sps

    df = _level_curves({"A": 0.03, "B": 0.06}, seeds=6, sd=0.003, uniform=0.4)
    df.loc[df["seed"] == 2, "uniform_rate"] = 0.5                   # the reference is read per seed
    status, numbers = claims.level_below(df, fraction=0.2, curves=["A"])
    a = df[df["curve"] == "A"].pivot_table(index="seed", columns="t", values="regret")
    ref = df[df["curve"] == "A"].groupby("seed")["uniform_rate"].first()
    q = ((a[10_000] - a[5_000]) / 5_000 / ref).to_numpy()
    half = sps.t.ppf(0.975, q.size - 1) * q.std(ddof=1) / np.sqrt(q.size)
    assert status == REPRODUCED
    assert (f"per-round regret over (5000, 10000] {((a[10_000] - a[5_000]) / 5_000).mean():.4g} = {q.mean():.4g} "
            f"[{q.mean() - half:.4g}, {q.mean() + half:.4g}] of a uniformly random policy's") in numbers
    assert claims.level_below(df, fraction=0.1, curves=["A", "B"])[0] == FAILED          # B pays 15 % of it
    flat = _power_curves({"early": 1.0}, seeds=5, sd=0.0)
    flat = flat.assign(regret=np.minimum(flat["t"], 800.0) + 1e-3 * flat["t"] * (1 + flat["seed"] / 10),
                       uniform_rate=1.0)
    assert claims.rate_ratio(flat, relation="below", threshold=0.5)[0] == FAILED        # 0.001 / 0.001: ratio ~1
    assert claims.level_below(flat, fraction=0.1)[0] == REPRODUCED                       # 0.1 % of random
    learning = _power_curves({"slow": 0.53}, seeds=5, sd=0.002).assign(uniform_rate=0.5 * 10_000 ** -0.47)
    assert claims.rate_ratio(learning, relation="below", threshold=0.5)[0] == REPRODUCED
    assert claims.level_below(learning, fraction=0.1)[0] == FAILED
    with pytest.raises(ClaimError, match="uniform_rate"):
        claims.level_below(df.drop(columns="uniform_rate"), fraction=0.1)


def test_the_uniform_policys_expected_regret_is_exact():
    """expected_subset_max against an enumeration of every subset; the pool bandit's uniform_regret against
    the mean, over 3,000 rounds of its own offered sets, of max - mean of the offered means (what a uniformly
    random choice pays in expectation each round), and the same for every seed of the fixed instance."""
    import itertools

    from ensemble_bandits.envs.epp_nonlinear import expected_subset_max
    from ensemble_bandits.runner import make_env

    v = noise(5, 9, 1.0)
    for k in (1, 3, 9):
        naive = np.mean([v[list(c)].max() for c in itertools.combinations(range(9), k)])
        assert expected_subset_max(v, k) == pytest.approx(naive, rel=1e-12)
    env = make_env({"name": "epp_quadratic", "d": 20, "n_arms": 10, "pool": 200}, range(3))
    u = env.uniform_regret()
    paid = []
    for t in range(1, 3001):
        env.observe(t)
        paid.append(env.best - env.means.mean(axis=1))
    paid = np.array(paid)
    assert u.shape == (3,) and np.all(u == u[0])
    assert u[0] == pytest.approx(paid[:, 0].mean(), abs=4 * paid[:, 0].std() / np.sqrt(len(paid)))
    every = make_env({"name": "epp_quadratic", "d": 20, "n_arms": 200, "pool": 200}, range(2))
    assert every.uniform_regret()[0] == pytest.approx(every.pool_means[0].max() - every.pool_means[0].mean())
    per_seed = make_env({"name": "epp_quadratic", "d": 20, "n_arms": 10, "pool": 200, "instance": "per_seed"},
                        range(2)).uniform_regret()
    assert per_seed[0] != per_seed[1]


def test_a_claim_below_the_minimum_seed_count_gets_no_verdict():
    from ensemble_bandits.claims.evaluate import MIN_SEEDS

    [few] = claims.evaluate(_entry(BEATS), long_table(paired(-10.0, n=MIN_SEEDS - 1)), "smoke")
    assert few["status"] == INCONCLUSIVE
    assert few["numbers"].startswith(f"not measured at scale smoke: {MIN_SEEDS - 1} seeds, fewer than the "
                                     f"{MIN_SEEDS} a verdict needs")
    [enough] = claims.evaluate(_entry(BEATS), long_table(paired(-10.0, n=MIN_SEEDS)), "smoke")
    assert enough["status"] == REPRODUCED


def test_an_inconclusive_claim_says_how_many_seeds_would_decide_it():
    rng = np.random.default_rng(3)
    fin = {"A": 100.0 + rng.normal(-1.0, 10.0, 30), "B": np.full(30, 100.0)}
    [res] = claims.evaluate(_entry(BEATS), long_table(fin))
    assert res["status"] == INCONCLUSIVE and res["seeds_to_decide"] > 30


def test_registry_causes_are_copied_into_the_claims_results():
    entry = _entry(BEATS)
    entry["claims"][0]["cause"] = {"kind": "underpowered", "why": "few  seeds"}
    entry["claims"][0]["finding"] = False
    [res] = claims.evaluate(entry, long_table(paired(-10.0)))
    assert res["cause"] == {"kind": "underpowered", "why": "few seeds"} and res["finding"] is False


def test_a_timing_ratio_inside_its_noise_band_is_not_decided():
    """ratio_below with the claim's stated noise: decided only when the interval (quartiles over
    instances, widened by the noise) lies on one side of the threshold."""
    def table(num, den):
        return pd.DataFrame([{"panel": "P", "curve": c, "seconds_median": m, "seconds_q1": m * 0.95,
                              "seconds_q3": m * 1.05} for c, m in (("A", num), ("B", den))])

    assert claims.ratio_below(table(1.08, 1.0), "A", "B", 1.0, column="seconds_median")[0] == FAILED     # point
    st, numbers = claims.ratio_below(table(1.08, 1.0), "A", "B", 1.0, column="seconds_median", noise=0.3)
    assert st == INCONCLUSIVE and "widened by the +-30% noise" in numbers
    assert claims.ratio_below(table(2.2, 1.0), "A", "B", 1.0, column="seconds_median", noise=0.3)[0] == FAILED
    assert claims.ratio_below(table(0.4, 1.0), "A", "B", 1.0, column="seconds_median", noise=0.3)[0] == REPRODUCED


def test_band_entry_is_the_first_size_from_which_every_larger_size_stays_in_the_band():
    """Pair A is inside TS's band at M = 4, outside at 8, inside at 16 and 32: it enters at 16, not
    4.  Pair B is never inside.  Checked against the t interval computed here by hand."""
    n, sd = 30, 0.5
    offsets = {"A": {4: 1.0, 8: 40.0, 16: 2.0, 32: -3.0}, "B": {4: 50.0, 8: 45.0, 16: 60.0, 32: 35.0}}
    parts, k = [long_table({"TS": BASE[:n]})], 0
    for pair, by_m in offsets.items():
        for M, off in by_m.items():
            k += 1
            name = f"{pair} (M = {M})"
            parts.append(long_table({name: BASE[:n] + off + noise(300 + k, n, sd)},
                                    extra={name: {"M": M, "pair": pair}}))
    table = concat(*parts)
    limit = 0.2 * float(np.mean(BASE[:n]))
    from scipy.stats import t as student

    def inside(pair, M):
        diff = table[(table.curve == f"{pair} (M = {M})") & (table.t == T)]["regret"].to_numpy() - BASE[:n]
        half = student.ppf(0.975, n - 1) * diff.std(ddof=1) / np.sqrt(n)
        return -limit < diff.mean() - half and diff.mean() + half < limit

    assert [inside("A", M) for M in (4, 8, 16, 32)] == [True, False, True, True]
    assert not any(inside("B", M) for M in (4, 8, 16, 32))
    result = claims.band_entry(table, b="TS", groups=["A", "B"], rel_tol=0.2)
    assert result[0] == REPORTED and not result.comparisons
    assert result[1] == f"[P] enters the band +-{claims.core.fmt(limit)} of TS at: A M = 16, B never (M <= 32)"
    with pytest.raises(ClaimError):
        claims.band_entry(table, b="TS", groups=["C"])


def test_within_factor_gives_each_comparison_its_ratio_and_interval():
    """A ratio claim decided in looks prints each comparison's own text (plans.decided_in_looks), so
    each must carry its ratio and Fieller interval, not only its label."""
    table, args = _within_factor(REPRODUCED)
    comps = claims.CHECKS["within_factor"](table, **args).comparisons
    assert [c.text.split(": ratio ")[0] for c in comps] == [c.label for c in comps]
    assert all(re.search(r": ratio \S+ \[\S+, \S+\] \(n=30\)$", c.text) for c in comps), comps
