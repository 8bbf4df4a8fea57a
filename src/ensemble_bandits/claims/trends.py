"""Checks of how one curve behaves: log-log slopes (seed-bootstrap interval), a fraction that
must stay above a level at every checkpoint, pathwise coupling, timing ratios and the linear fit
of a derived table."""
from __future__ import annotations

import pandas as pd

from .. import stats
from ..stats import final_rows, fit_through_origin
from .core import (FAILED, INCONCLUSIVE, REPRODUCED, ClaimError, Comparison, Verdict, check, combine, curves_exist,
                   exact, fmt, panels_of, select, verdict)


def _per_seed(sub, x):
    """Seeds x grid values of regret (seeds with every grid value; grid values with positive mean)."""
    wide = sub.pivot_table(index="seed", columns=x, values="regret").dropna()
    return wide.loc[:, wide.mean() > 0]


@check(curves=("curves",))
def slope_at_most(table, x, max_slope, curves=None, panels=None, use_t=False, t_min=100, t_share=None):
    """Least-squares log-log slope of mean final regret against the grid column ``x`` (or of mean
    regret against the round t >= t_min, with ``use_t``; t >= t_share x the panel's last round when
    ``t_share`` is given, so that one claim reads the same part of the run at every scale) is at
    most ``max_slope``: the upper edge of its seed-bootstrap interval below it (upper bounds of the
    theory; sublinear regret)."""
    return _slope_check(table, x, max_slope, "at most", curves, panels, use_t, t_min, t_share)


@check(curves=("curves",))
def slope_at_least(table, x, min_slope, curves=None, panels=None, use_t=False, t_min=100, t_share=None):
    """The same slope as :func:`slope_at_most` is at least ``min_slope``: the lower edge of its
    seed-bootstrap interval above it (e.g. regret that stays linear in t)."""
    return _slope_check(table, x, min_slope, "at least", curves, panels, use_t, t_min, t_share)


def _slope_check(table, x, limit, relation, curves, panels, use_t, t_min, t_share):
    """Each curve's log-log slope (see :func:`slope_at_most`) against ``limit``: ``relation`` is
    "at most" or "at least"."""
    test = stats.below if relation == "at most" else stats.above
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        sub = select(table if use_t else final_rows(table), p)
        if use_t and t_share is not None:
            t_min = t_share * sub["t"].max()
        for c in (curves or list(dict.fromkeys(sub["curve"]))):
            rows = sub[sub["curve"] == c]
            wide = _per_seed(rows[rows["t"] >= t_min] if use_t else rows, "t" if use_t else x)
            boot = stats.loglog_slope(wide.columns.astype(float), wide.to_numpy())
            lo, hi = boot.interval()
            comparisons.append(Comparison(f"[{p}] {c}", *test(boot, limit)))
            texts.append(f"[{p}] {c}: slope {fmt(boot.estimate)} [{fmt(lo)}, {fmt(hi)}] (bootstrap over "
                         f"{len(wide)} seeds, {wide.shape[1]} {'checkpoints' if use_t else 'grid points'}) "
                         f"vs {relation} {limit}")
    return verdict(comparisons, texts)


@check(curves=("curves",))
def fraction_at_least(table, column, threshold, curves, panels=None, t_min=1):
    """The mean of ``column`` over seeds is at least ``threshold`` at every checkpoint t >= t_min:
    at each one the lower edge of its t-interval above the threshold."""
    curves_exist(table, curves)
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        for c in curves:
            s = select(table, p, c)
            lows = []
            for t, g in s[s["t"] >= t_min].groupby("t"):
                loc = stats.MeanT(g[column])
                comparisons.append(Comparison(f"[{p}] {c} at t = {t}", *stats.above(loc, threshold)))
                lows.append((loc.interval()[0], loc.estimate, t, loc.n))
            lo, mean, t, n = min(lows)
            texts.append(f"[{p}] {c}: {len(lows)} checkpoints, lowest lower edge {fmt(lo)} (mean {fmt(mean)}, "
                         f"t = {t}, n = {n}) vs threshold {fmt(threshold)}")
    return verdict(comparisons, texts)


@check(curves=("curve",))
def coupled_identical(table, curve):
    """Pathwise coupling: every seed's action sequences coincide (or first differ at a near-tie)."""
    curves_exist(table, [curve])
    sub = table[table["curve"] == curve]
    T = int(sub["t"].max())
    bad = sub[(sub["first_mismatch"] <= T) & (~sub["near_tie"].astype(bool))]
    ties = int(((sub["first_mismatch"] <= T) & sub["near_tie"].astype(bool)).sum())
    return exact(bad.empty, f"{len(sub)} coupled runs of T={T}: {len(sub) - len(bad) - ties} identical, "
                            f"{ties} diverged at a near-tie (<1e-9), {len(bad)} diverged otherwise")


def _mean(table, panel, curve, column):
    """Mean of ``column`` over a curve's final rows (or all its rows for derived tables without t)."""
    sub = select(final_rows(table), panel, curve)
    if sub.empty:
        raise ClaimError(f"no rows for curve {curve!r} in panel {panel!r}")
    return float(sub[column].mean())


@check(curves=("numerator", "denominator"))
def ratio_below(table, numerator, denominator, threshold, column="seconds", panels=None, noise=None):
    """mean(column | numerator) / mean(column | denominator) < threshold, on a derived timing table.

    Without ``noise``: point estimates.  With ``noise`` (the relative timing noise the claim states,
    e.g. 0.3), an interval: the ratio of the curves' quartiles over instances (``<column>`` read as
    ``seconds_median`` -> ``seconds_q1`` and ``seconds_q3`` where the table has them), widened by the
    noise band; reproduced when the whole interval is below the threshold, not reproduced when the
    whole interval is above it, inconclusive when it straddles it."""
    curves_exist(table, [numerator, denominator])
    statuses, texts = [], []
    for p in panels_of(table, panels):
        num, den = _mean(table, p, numerator, column), _mean(table, p, denominator, column)
        ratio = num / den
        text = f"[{p}] {numerator} / {denominator} = {fmt(num)} / {fmt(den)} = {fmt(ratio)} (threshold {threshold})"
        if noise is None:
            statuses.append(REPRODUCED if ratio < threshold else FAILED)
        else:
            lo, hi = ratio, ratio
            q1, q3 = column.replace("median", "q1"), column.replace("median", "q3")
            if column.endswith("median") and q1 in table.columns and q3 in table.columns:
                lo = _mean(table, p, numerator, q1) / _mean(table, p, denominator, q3)
                hi = _mean(table, p, numerator, q3) / _mean(table, p, denominator, q1)
            lo, hi = lo / (1 + noise), hi * (1 + noise)
            statuses.append(REPRODUCED if hi < threshold else FAILED if lo > threshold else INCONCLUSIVE)
            text += f", interval [{fmt(lo)}, {fmt(hi)}] (quartiles over instances, widened by the +-{noise:.0%} noise)"
        texts.append(text)
    return Verdict(combine(statuses), "; ".join(texts))


@check()
def linear_fit(table, x="d", y="M_min", r2_min=0.8, group="n_arms", rel_spread_max=0.5):
    """M_min ~ c x through the origin with R^2 >= r2_min, and the spread across ``group`` at equal x
    small next to the change across x (mean within-x range / range of x-means <= rel_spread_max)."""
    df = table.dropna(subset=[y])
    if len(df) < 3:
        return Verdict(INCONCLUSIVE, f"only {len(df)} finite {y} values (others not reached within the grid)")
    # a y without spread counts as fitted (R^2 = 1), as it always has here
    c, r2 = fit_through_origin(df[x], df[y], r2_if_flat=1.0)
    per_x = df.groupby(x)[y]
    within = float((per_x.max() - per_x.min()).mean())
    across = float(per_x.mean().max() - per_x.mean().min())
    rel = within / across if across > 0 else float("inf")
    missing = int(pd.isna(table[y]).sum())
    return exact(bool(r2 >= r2_min and rel <= rel_spread_max),
                 f"slope {fmt(c)}, R^2 {fmt(r2)} (min {r2_min}); within-{x} spread across {group} "
                 f"{fmt(within)} vs across-{x} range {fmt(across)} (ratio {fmt(rel)}, max {rel_spread_max})"
                 + (f"; {missing} setting(s) never matched TS within the grid" if missing else ""))

