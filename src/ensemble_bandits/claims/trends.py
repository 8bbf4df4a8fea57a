"""Checks of how one curve behaves: log-log slopes and the ratio of late to early per-round regret
(seed-bootstrap intervals), late per-round regret against a reference level (a uniformly random
policy's), a fraction that must stay above a level at every checkpoint, a
column's level at the last checkpoint, a column that falls below a level before the regret bends,
pathwise coupling, timing ratios and the linear fit of a derived table."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import stats
from ..stats import final_rows
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


def _window_rounds(ts, T, window):
    """The last checkpoints at or below window[0] x T and window[1] x T (indices into ``ts``)."""
    idx = np.searchsorted(ts, np.asarray(window, dtype=float) * T, side="right") - 1
    return int(idx[0]), int(idx[1])


@check(curves=("curves",))
def rate_ratio(table, relation, threshold, curves=None, early=(0.1, 0.2), late=(0.5, 1.0), panels=None, n_boot=2000):
    """Per-round regret late in the run over per-round regret early in it, on the means over seeds:
    r = [(R(t4) - R(t3)) / (t4 - t3)] / [(R(t2) - R(t1)) / (t2 - t1)], with t1 .. t4 the last
    checkpoints at or below early[0] T, early[1] T, late[0] T and late[1] T (T: the panel's last
    round).  Regret that stays linear keeps its rate (r = 1), regret that converges loses it (r -> 0);
    R ~ t^a gives r ~ 5^(a - 1) with the default windows, whatever an offset from the first rounds.
    ``relation`` "below" or "above" ``threshold``: the edge of its seed-bootstrap 95 % interval
    (``n_boot`` resamples, fixed generator) on that side; every curve of the panel without ``curves``."""
    if relation not in ("above", "below"):
        raise ClaimError(f"relation must be 'above' or 'below', got {relation!r}")
    if curves:
        curves_exist(table, curves)
    test = stats.below if relation == "below" else stats.above
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        sub = select(table, p)
        for c in (curves or list(dict.fromkeys(sub["curve"]))):
            R = sub[sub["curve"] == c].pivot_table(index="seed", columns="t", values="regret").dropna()
            ts = R.columns.to_numpy(dtype=float)
            (i1, i2), (i3, i4) = _window_rounds(ts, ts[-1], early), _window_rounds(ts, ts[-1], late)
            label = f"[{p}] {c}"
            if min(i1, i3) < 0 or i1 == i2 or i3 == i4:
                comparisons.append(Comparison(label, 1.0, 1.0))
                texts.append(f"{label}: too few checkpoints for the windows {early} and {late} of T = {int(ts[-1])}")
                continue
            Y = R.to_numpy()[:, [i1, i2, i3, i4]]
            n = len(Y)
            m = Y[stats.seed_resamples(n, n_boot)].mean(axis=1)                         # (1 + n_boot, 4)
            t1, t2, t3, t4 = ts[[i1, i2, i3, i4]]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = ((m[:, 3] - m[:, 2]) / (t4 - t3)) / ((m[:, 1] - m[:, 0]) / (t2 - t1))
            boot = stats.Bootstrap(r[0], r[1:])
            lo, hi = boot.interval()
            comparisons.append(Comparison(label, *test(boot, threshold)))
            texts.append(f"{label}: per-round regret over ({int(t3)}, {int(t4)}] / over ({int(t1)}, {int(t2)}] = "
                         f"{fmt(r[0])} [{fmt(lo)}, {fmt(hi)}] (bootstrap over {n} seeds) vs {relation} "
                         f"{fmt(threshold)}")
    return verdict(comparisons, texts)


# How the numbers name a reference level column of level_below.
REFERENCES = {"uniform_rate": "a uniformly random policy's"}


@check(curves=("curves",))
def level_below(table, fraction, curves=None, reference="uniform_rate", window=(0.5, 1.0), panels=None):
    """Each curve's per-round regret late in the run is below ``fraction`` of a reference level, the
    column ``reference`` (default ``uniform_rate``: a uniformly random policy's expected per-round
    regret on the same environment and seed, ``aggregate.figure_table``).  Per seed,
    q = [(R(t2) - R(t1)) / (t2 - t1)] / reference, with t1, t2 the last checkpoints at or below
    window[0] T and window[1] T (T: the panel's last round); below when the upper edge of the 95 %
    t-interval of q's mean over seeds is below ``fraction``, decided against when its lower edge is
    above it; every curve of the panel without ``curves``."""
    if curves:
        curves_exist(table, curves)
    if reference not in table.columns:
        raise ClaimError(f"no column {reference!r}: the figure's environments give no reference level")
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        sub = select(table, p)
        for c in (curves or list(dict.fromkeys(sub["curve"]))):
            rows = sub[sub["curve"] == c]
            R = rows.pivot_table(index="seed", columns="t", values="regret").dropna()
            ref = rows.groupby("seed")[reference].first().reindex(R.index)
            ts = R.columns.to_numpy(dtype=float)
            i1, i2 = _window_rounds(ts, ts[-1], window)
            label = f"[{p}] {c}"
            if i1 < 0 or i1 == i2:
                comparisons.append(Comparison(label, 1.0, 1.0))
                texts.append(f"{label}: too few checkpoints for the window {window} of T = {int(ts[-1])}")
                continue
            t1, t2 = ts[i1], ts[i2]
            rate = (R.iloc[:, i2] - R.iloc[:, i1]) / (t2 - t1)
            loc = stats.MeanT(rate / ref)
            lo, hi = loc.interval()
            comparisons.append(Comparison(label, *stats.below(loc, fraction), n=loc.n, estimate=loc.estimate,
                                          halfwidth=(hi - lo) / 2, bounds=(fraction,)))
            texts.append(f"{label}: per-round regret over ({int(t1)}, {int(t2)}] {fmt(rate.mean())} = "
                         f"{fmt(loc.estimate)} [{fmt(lo)}, {fmt(hi)}] of {REFERENCES.get(reference, reference)} "
                         f"{fmt(ref.mean())} (n = {loc.n}) vs below {fmt(fraction)}")
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


@check(curves=("curves",))
def final_level(table, column, threshold, relation, curves, panels=None, per=None):
    """The mean of ``column`` over seeds at each curve's last checkpoint is ``relation`` "above" or
    "below" ``threshold``: the edge of its 95 % t-interval on that side of it (e.g. a probe's ratio
    at the end of the run); with ``per``, of ``column / per`` seed by seed (e.g. the share of the
    regret from warm-up rounds, regret_warmup / regret).  A column the runs did not record (run files
    older than it) gives no comparison: "not recorded"."""
    if relation not in ("above", "below"):
        raise ClaimError(f"relation must be 'above' or 'below', got {relation!r}")
    curves_exist(table, curves)
    name = f"{column} / {per}" if per else column
    absent = [c for c in (column, per) if c and c not in table.columns]
    if absent or table[column].isna().all():
        return Verdict(INCONCLUSIVE, f"{name}: not recorded in these runs (run files written before "
                                     f"{', '.join(absent) or column} was recorded)")
    test = stats.above if relation == "above" else stats.below
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        fin = final_rows(select(table, p))
        for c in curves:
            rows = fin[fin["curve"] == c]
            loc = stats.MeanT(rows[column] / rows[per] if per else rows[column])
            lo, hi = loc.interval()
            comparisons.append(Comparison(f"[{p}] {c}", *test(loc, threshold), n=loc.n, estimate=loc.estimate,
                                          halfwidth=(hi - lo) / 2, bounds=(threshold,)))
            texts.append(f"[{p}] {c}: {name} at t = {int(fin['t'].max())} mean {fmt(loc.estimate)} [{fmt(lo)}, "
                         f"{fmt(hi)}] (n = {loc.n}) vs {relation} {fmt(threshold)}")
    return verdict(comparisons, texts)


def _first_t(ts, ok):
    """The first of the rounds ``ts`` at which ``ok`` (rows: resamples) holds, inf where it never does."""
    return np.where(ok.any(axis=1), ts[ok.argmax(axis=1)], np.inf)


@check(curves=("curve",))
def falls_before_bend(table, column, threshold, curve, max_slope=0.9, t_min=1, panels=None, n_boot=2000):
    """``column`` (e.g. a probe's ratio) falls below ``threshold`` before the curve's regret bends.

    On the mean over seeds at the checkpoints t >= ``t_min``: t_cross = the first at which the mean of
    ``column`` is below ``threshold``; t_bend = the first at which the local log-log slope of mean
    cumulative regret, log(R(t) / R(t')) / log(t / t') with t' the last checkpoint <= t/2, is at most
    ``max_slope`` (the per-round regret over (t', t] has fallen below the earlier rate; linear regret
    has slope 1).  Decided by a bootstrap over seeds (``n_boot`` resamples, fixed generator): for the
    claim when t_cross < t_bend in all but 2.5 % of them, against it when t_cross >= t_bend in all but
    2.5 %; a regret that does not bend by the last checkpoint leaves it undecided."""
    curves_exist(table, [curve])
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        s = select(table, p, curve)
        s = s[s["t"] >= 1]
        R = s.pivot_table(index="seed", columns="t", values="regret")
        V = s.pivot_table(index="seed", columns="t", values=column).reindex(index=R.index, columns=R.columns)
        keep = R.notna().all(axis=1) & V.notna().all(axis=1)
        R, V = R[keep], V[keep]
        ts = R.columns.to_numpy(dtype=float)
        n = len(R)
        label = f"[{p}] {curve}"
        prev = np.searchsorted(ts, ts / 2, side="right") - 1                  # t' = last checkpoint <= t/2
        use = (ts >= t_min) & (prev >= 0)
        if n == 0 or not use.any():
            comparisons.append(Comparison(label, 1.0, 1.0))
            texts.append(f"{label}: no checkpoint t >= {t_min} with one at or below t/2")
            continue
        rows = stats.seed_resamples(n, n_boot)
        Rm, Vm = R.to_numpy()[rows].mean(axis=1), V.to_numpy()[rows].mean(axis=1)   # (1 + n_boot, checkpoints)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.log(Rm / Rm[:, np.maximum(prev, 0)]) / np.log(ts / ts[np.maximum(prev, 0)])
        t_bend = _first_t(ts[use], slope[:, use] <= max_slope)
        t_cross = _first_t(ts[use], Vm[:, use] < threshold)
        first = t_cross < t_bend
        bend0, cross0 = t_bend[0], t_cross[0]
        share = float(first[1:].mean())
        if not np.isfinite(bend0):
            comparisons.append(Comparison(label, 1.0, 1.0))
        else:
            # the share of resamples in which the column falls first, tested above one half
            comparisons.append(Comparison(label, *stats.above(stats.Bootstrap(first[0], first[1:].astype(float)), 0.5)))
        when = lambda t: f"t = {int(t)}" if np.isfinite(t) else f"not by t = {int(ts[-1])}"   # noqa: E731
        texts.append(f"{label}: mean {column} below {fmt(threshold)} from {when(cross0)}, regret bends (local "
                     f"log-log slope <= {fmt(max_slope)}) {'at ' if np.isfinite(bend0) else ''}{when(bend0)}; "
                     f"{column} first in {share:.0%} of {n_boot} seed-bootstrap resamples (n = {n}, t >= {t_min})")
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


def _linear_fit_stats(df, x, y):
    """(slope, R^2, mean within-x range, range of x-means, observed count) of one replicate; a NaN y
    with a finite M_max_tried is censored there (its bound stands in for it in the spread)."""
    c, r2 = stats.fit_table_censored(df, x, y, r2_if_flat=1.0)   # flat y counts as fitted
    yv = df[y].astype(float)
    per_x = yv.where(yv.notna(), stats.censoring_bound(df)).groupby(df[x])
    within = float((per_x.max() - per_x.min()).mean())
    across = float(per_x.mean().max() - per_x.mean().min())
    return c, r2, within, across, int(np.isfinite(yv).sum())


def _replicate_stats(table, rep, x, y):
    """:func:`_linear_fit_stats` of every bootstrap replicate (rows ``rep`` > 0)."""
    return [_linear_fit_stats(sub, x, y) for _, sub in table[rep > 0].groupby(rep[rep > 0])]


def _ratio(within, across):
    return within / across if across > 0 else float("inf")


@check()
def linear_fit(table, x="d", y="M_min", r2_min=0.8, group="n_arms", rel_spread_max=0.5, interval="percentile"):
    """M_min ~ c x through the origin with R^2 >= r2_min, and the spread across ``group`` at equal x
    small next to the change across x (mean within-x range / range of x-means <= rel_spread_max).

    A NaN y with a finite ``M_max_tried`` (a setting whose largest M never matched: censored) enters
    the fit as "above M_max_tried" (stats.fit_through_origin_censored) and the spread at its bound;
    fewer than 3 uncensored values: inconclusive.  With bootstrap replicates (rows ``replicate`` > 0,
    aggregate.min_ensemble_size's ``boot``) slope, R^2 and the spread ratio get 95% intervals over
    seed resamples: reproduced when R^2's interval lies at or above r2_min and the ratio's at or below
    its max, not reproduced when either lies wholly on the wrong side, inconclusive otherwise.  Without
    replicates the point values decide.

    ``interval``: ``percentile`` (the resamples' quantiles) or ``bca`` (bias-corrected and
    accelerated, stats.Bootstrap).  The bias correction moves the interval back over the point
    estimate where the resamples sit on one side of it (M_min, the smallest grid M that matches, rises
    when seeds are resampled); the acceleration comes from the leave-one-seed-out rows (``replicate``
    < 0, min_ensemble_size's ``jackknife``), each replacing its panel's point row: one stratum per
    panel, since each panel's seeds are resampled apart.  M_min is a step statistic, for which the
    jackknife's acceleration is only a rough guide (most leave-one-out values equal the point value, a
    few jump by a grid step)."""
    if interval not in stats.INTERVALS:
        raise ClaimError(f"interval {interval!r}: known {', '.join(stats.INTERVALS)}")
    rep = table["replicate"] if "replicate" in table else pd.Series(0, index=table.index)
    point = table[rep == 0]
    c, r2, within, across, n_obs = _linear_fit_stats(point, x, y)
    censored = int(point[y].isna().sum())
    if n_obs < 3:
        return Verdict(INCONCLUSIVE, f"only {n_obs} finite {y} values (others not reached within the grid)")
    rel = _ratio(within, across)
    cens_text = (f"; {censored} setting(s) never matched TS within the grid, fitted as censored "
                 f"(above the largest M tried)" if censored else "")
    boots = _replicate_stats(table, rep, x, y)
    if not boots:
        return exact(bool(r2 >= r2_min and rel <= rel_spread_max),
                     f"slope {fmt(c)}, R^2 {fmt(r2)} (min {r2_min}); within-{x} spread across {group} "
                     f"{fmt(within)} vs across-{x} range {fmt(across)} (ratio {fmt(rel)}, max {rel_spread_max})"
                     + cens_text)
    slope_b, r2_b, rel_b, strata = _bootstraps(table, point, rep, boots, x, y, group, interval)
    (s_lo, s_hi), (r_lo, r_hi), (q_lo, q_hi) = (v.interval(method=interval) for v in (slope_b, r2_b, rel_b))
    bias_text = ""
    if not s_lo <= c <= s_hi and interval == "percentile":
        up = c < s_lo
        bias_text = (f"; the slope's point value lies {'below' if up else 'above'} its interval: {y}, the smallest grid "
                     f"value that matches, {'rises' if up else 'falls'} when the seeds are resampled"
                     f"{' (an M that only just matches fails in many resamples)' if up else ''}, so the interval describes the resampled "
                     f"statistic, not a range around the point")
    elif not s_lo <= c <= s_hi:
        bias_text = (f"; the slope's point value lies {'below' if c < s_lo else 'above'} its BCa interval: its bias "
                     f"correction (z0 {fmt(slope_b.bias_z0())}) takes the resamples' {_levels(slope_b)} quantiles, "
                     f"beyond the range where the BCa is reliable")
    how = f"95% intervals over {len(boots)} bootstrap resamples of the seeds"
    if interval == "bca":
        n_jack = sum(len(s) for s in strata)
        how = (f"95% BCa intervals over {len(boots)} bootstrap resamples of the seeds (bias z0: slope "
               f"{fmt(slope_b.bias_z0())}, R^2 {fmt(r2_b.bias_z0())}, ratio {fmt(rel_b.bias_z0())}; acceleration "
               f"{fmt(slope_b.acceleration())}, {fmt(r2_b.acceleration())}, {fmt(rel_b.acceleration())} from "
               f"{n_jack} leave-one-seed-out values in {len(strata)} panels, a rough guide for a step statistic "
               f"such as {y}; the resamples' quantiles taken: R^2 {_levels(r2_b)}, ratio {_levels(rel_b)}; "
               f"percentile intervals: slope [{fmt(slope_b.interval()[0])}, {fmt(slope_b.interval()[1])}], R^2 "
               f"[{fmt(r2_b.interval()[0])}, {fmt(r2_b.interval()[1])}], ratio [{fmt(rel_b.interval()[0])}, "
               f"{fmt(rel_b.interval()[1])}])")
    fit_status = REPRODUCED if r_lo >= r2_min else FAILED if r_hi < r2_min else INCONCLUSIVE
    spread_status = REPRODUCED if q_hi <= rel_spread_max else FAILED if q_lo > rel_spread_max else INCONCLUSIVE
    return Verdict(combine([fit_status, spread_status]),
                   f"slope {fmt(c)} [{fmt(s_lo)}, {fmt(s_hi)}], R^2 {fmt(r2)} [{fmt(r_lo)}, {fmt(r_hi)}] "
                   f"(min {r2_min}); within-{x} spread across {group} {fmt(within)} vs across-{x} range "
                   f"{fmt(across)}: ratio {fmt(rel)} [{fmt(q_lo)}, {fmt(q_hi)}] (max {rel_spread_max}); "
                   + how + bias_text + cens_text)


def _bootstraps(table, point, rep, boots, x, y, group, interval):
    """(slope, R^2, spread ratio) as stats.Bootstrap over the replicates' fit statistics ``boots``,
    with their leave-one-seed-out strata for ``interval: bca``, and the strata."""
    c, r2, within, across, _ = _linear_fit_stats(point, x, y)
    b = np.array(boots, dtype=float)
    jack, strata = [None, None, None], []
    if interval == "bca":
        strata = _jackknife_strata(table, point, rep, x, y, group)
        if not strata:
            raise ClaimError("interval: bca needs the derived table's leave-one-seed-out rows (replicate < 0: "
                             "min_ensemble_size's jackknife: true)")
        jack = [[s[:, 0] for s in strata], [s[:, 1] for s in strata],
                [[_ratio(w, a) for w, a in s[:, 2:4]] for s in strata]]
    return (stats.Bootstrap(c, b[:, 0], jack[0]), stats.Bootstrap(r2, b[:, 1], jack[1]),
            stats.Bootstrap(_ratio(within, across), [_ratio(w, a) for w, a in b[:, 2:4]], jack[2]), strata)


def fit_intervals(table, x="d", y="M_min", group="n_arms", interval="percentile"):
    """The 95% intervals ((lo, hi) of the slope, (lo, hi) of R^2) of the through-origin fit that
    :func:`linear_fit` decides on (``interval`` as there), from the table's bootstrap rows; None
    without any."""
    rep = table["replicate"] if "replicate" in table else pd.Series(0, index=table.index)
    boots = _replicate_stats(table, rep, x, y)
    if not boots:
        return None
    slope_b, r2_b, _, _ = _bootstraps(table, table[rep == 0], rep, boots, x, y, group, interval)
    return slope_b.interval(method=interval), r2_b.interval(method=interval)


def _jackknife_strata(table, point, rep, x, y, group):
    """[array (n_j, 4)] per panel (stratum) j: the fit statistics (slope, R^2, within, across) of the
    point table with panel j's row replaced by each of its leave-one-seed-out rows (``replicate`` < 0;
    a table without ``panel`` keys its rows by ``x`` and ``group``)."""
    jack = table[rep < 0]
    if jack.empty:
        return []

    def keys(df):
        if "panel" in df.columns:
            return df["panel"].astype(str).to_numpy()
        return (df[x].astype(str) + "|" + df[group].astype(str)).to_numpy()

    cols = [x, y] + (["M_max_tried"] if "M_max_tried" in table.columns else [])
    base = {c: point[c].to_numpy() for c in cols}
    point_keys = keys(point)
    jack_keys = keys(jack)
    out = []
    for k in dict.fromkeys(jack_keys):
        where = np.flatnonzero(point_keys == k)
        if where.size != 1:
            raise ClaimError(f"leave-one-seed-out rows of {k!r} match {where.size} point rows, not one")
        rows = jack[jack_keys == k]
        vals, known = [], {}
        for replaced in zip(*(rows[c].astype(float).to_numpy() for c in cols[1:])):
            memo = tuple("nan" if np.isnan(v) else v for v in replaced)     # most rows repeat the point value
            if memo not in known:
                frame = {c: v.copy() for c, v in base.items()}
                for c, v in zip(cols[1:], replaced):
                    frame[c][where[0]] = v
                known[memo] = _linear_fit_stats(pd.DataFrame(frame), x, y)[:4]
            vals.append(known[memo])
        out.append(np.array(vals, dtype=float))
    return out


def _levels(boot):
    """The quantile levels of a BCa interval, as percentages."""
    lo, hi = stats.bca_levels(boot.estimate, boot.samples, boot.jackknife)
    return f"{100 * lo:.2f} % and {100 * hi:.2f} %"
