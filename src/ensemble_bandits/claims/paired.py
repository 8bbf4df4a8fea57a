"""Checks that compare curves seed by seed (common random numbers make pairs).

Each comparison is one paired difference a - b of final regret and a relation it must satisfy:
``better`` (a - b < 0), ``not_worse`` (a - b < margin), ``worse`` (a - b > margin) or ``similar``
(|a - b| < margin, an equivalence test: the whole interval inside the band).  Margins are
``rel_tol`` x |mean of b|, written in the registry next to the quoted claim.  The location that
decides is fixed per claim: its mean (Student t, what the papers plot) unless the claim's
``location: pseudo-median`` says otherwise (Wilcoxon signed-rank, Hodges-Lehmann interval);
``robust`` shows the other location, means and medians beside it, for cells whose regrets have
heavy tails; ``collapse`` adds the share of runs whose final regret exceeds it.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from .. import stats
from ..stats import final_rows, paired
from .core import (REPORTED, ClaimError, Comparison, Verdict, as_list, check, condition, curve_spec, curves_exist,
                   finals, fmt, interval_text, panels_of, select, up_to_share, verdict)

BAND = {"not_worse": "margin ", "worse": "margin ", "similar": "band +-"}


def relation_test(loc, relation, limit):
    """(p for, p against) the relation of a location to ``limit`` (0 for ``better``)."""
    if relation == "similar":
        return stats.tost(loc, -limit, limit)
    if relation in ("better", "not_worse"):
        return stats.below(loc, limit)
    if relation == "worse":
        return stats.above(loc, limit)
    raise ValueError(f"unknown relation {relation!r}; known: better, not_worse, worse, similar")


LOCATION_NAMES = {"mean": "mean", "pseudo-median": "signed-rank"}


def compare_diff(label, diff, relation, limit=0.0, location="mean"):
    """Comparison and numbers of one paired difference against ``limit`` by ``relation``, decided on
    its ``location`` (``mean``, or ``pseudo-median``: Hodges-Lehmann)."""
    if location not in LOCATION_NAMES:
        raise ClaimError(f"location must be one of {', '.join(LOCATION_NAMES)}; got {location!r}")
    loc = stats.location(diff, LOCATION_NAMES[location])
    p_for, p_against = relation_test(loc, relation, limit)
    lo, hi = loc.interval()
    text = interval_text(label, loc.estimate, lo, hi, loc.n, "pseudo-median diff" if location != "mean" else "diff")
    bounds = (-limit, limit) if relation == "similar" else (limit,)
    return Comparison(label, p_for, p_against, loc.n, loc.estimate, (hi - lo) / 2, bounds, text), text


def compare_pair(label, fa, fb, relation, rel_tol=0.0, robust=False, collapse=None, location="mean"):
    """Comparison and numbers of the paired difference a - b (per-seed series); the limit is 0 for
    ``better``, else rel_tol x |mean(b)|.  The claim's ``location`` decides (the mean unless the
    registry says otherwise); ``robust`` shows the other location, means and medians beside it."""
    fa, fb = paired(fa, fb)
    diff = fa - fb
    limit = 0.0 if relation == "better" else rel_tol * abs(float(fb.mean()))
    comp, text = compare_diff(label, diff, relation, limit, location)
    if robust:
        other = "pseudo-median" if location == "mean" else "mean"
        o = stats.location(diff, LOCATION_NAMES[other])
        text += (f", {other} diff {fmt(o.estimate)} [{fmt(o.interval()[0])}, {fmt(o.interval()[1])}] (shown, not "
                 f"deciding), means {fmt(float(fa.mean()))} vs {fmt(float(fb.mean()))}, medians "
                 f"{fmt(float(fa.median()))} vs {fmt(float(fb.median()))}")
    if collapse is not None:
        (ka, n), (kb, _) = stats.collapse_rate(fa, collapse), stats.collapse_rate(fb, collapse)
        text += f", final regret > {fmt(collapse)} in {ka}/{n} vs {kb}/{n} runs"
    if relation in BAND:
        text += f", {BAND[relation]}{fmt(limit)}"
    return comp, text


def _paired(table, panels, pairs, relation, rel_tol=0.0, robust=False, collapse=None, column="regret",
            location="mean"):
    """The skeleton of the curve-pair checks: in each panel, every (a, b) of ``pairs`` (a list, or
    a function of the panel) compared by ``relation``."""
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        for a, b in (pairs(p) if callable(pairs) else pairs):
            label = f"[{p}] {curve_spec(a)[2]} - {curve_spec(b)[2]}"
            comp, text = compare_pair(label, finals(table, p, a, column), finals(table, p, b, column), relation,
                                      rel_tol, robust, collapse, location)
            comparisons.append(replace(comp, curves=(curve_spec(a)[0], curve_spec(b)[0])))
            texts.append(text)
    return verdict(comparisons, texts)


@check(curves=("better", "worse"))
def outperforms(table, better, worse, panels=None, column="regret", robust=False, collapse=None, location="mean"):
    """Every curve in ``better`` has lower final ``column`` than every curve in ``worse``."""
    better, worse = as_list(better), as_list(worse)
    curves_exist(table, better + worse)
    return _paired(table, panels, list(itertools.product(better, worse)), "better", robust=robust,
                   collapse=collapse, column=column, location=location)


@check(curves=("a", "b"))
def similar(table, a, b, rel_tol=0.2, panels=None, column="regret", robust=False, collapse=None, location="mean"):
    """Final ``column`` of each curve in ``a`` is equivalent to that of ``b`` within +-rel_tol x
    mean(b): the whole interval inside the band (TOST)."""
    a = as_list(a)
    curves_exist(table, a + [b])
    return _paired(table, panels, [(c, b) for c in a], "similar", rel_tol, robust, collapse, column, location)


@check(curves=("a", "baselines"))
def not_worse(table, a, baselines, rel_tol=0.2, panels=None, robust=False, collapse=None, location="mean"):
    """Each curve in ``a`` is not worse than each baseline by more than rel_tol x mean(baseline)."""
    a, baselines = as_list(a), as_list(baselines)
    curves_exist(table, a + baselines)
    return _paired(table, panels, list(itertools.product(a, baselines)), "not_worse", rel_tol, robust, collapse,
                   location=location)


@check(curves=("a", "baselines"))
def worse_by(table, a, baselines, rel_tol, panels=None, robust=False, collapse=None, location="mean"):
    """Each curve in ``a`` is worse than each baseline by more than rel_tol x mean(baseline)."""
    a, baselines = as_list(a), as_list(baselines)
    curves_exist(table, a + baselines)
    return _paired(table, panels, list(itertools.product(a, baselines)), "worse", rel_tol, robust, collapse,
                   location=location)


@check(curves=("a", "b"))
def exceeds_by(table, a, b, margin=0.0, column="accuracy", panels=None, t_share=None):
    """Final ``column`` of each curve in ``a`` exceeds that of each curve in ``b`` by more than the
    absolute ``margin`` (higher is better, e.g. accuracy): the paired mean difference a - b above it.
    With ``t_share``: at the first recorded round t >= t_share x the last round instead of the last
    (e.g. "... faster": ahead early on)."""
    a, b = as_list(a), as_list(b)
    curves_exist(table, a + b)
    if t_share is not None:
        table = up_to_share(table, t_share)
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        for x, y in itertools.product(a, b):
            fa, fb = paired(finals(table, p, x, column), finals(table, p, y, column))
            comp, text = compare_diff(f"[{p}] {curve_spec(x)[2]} - {curve_spec(y)[2]}", fa - fb, "worse", margin)
            comparisons.append(comp)
            at = "" if t_share is None else f" at t = {int(select(table, p, curve_spec(x)[0])['t'].max())}"
            texts.append(f"{text}, {column}{at} {fmt(float(fa.mean()))} vs {fmt(float(fb.mean()))}, margin {fmt(margin)}")
    return verdict(comparisons, texts)


@check(curves=("curve", "levels"))
def versus_levels(table, curve, x, levels, relation, x_min=None, x_max=None, rel_tol=0.0, panels=None):
    """Each grid point of ``curve`` with ``x`` in [x_min, x_max] against each curve of ``levels``
    (curves without that grid, e.g. the m = T limit) by ``relation``."""
    levels = as_list(levels)
    curves_exist(table, [curve] + levels)
    lo = float("-inf") if x_min is None else x_min
    hi = float("inf") if x_max is None else x_max

    def pairs(panel):
        grid = sorted(set(select(final_rows(table), panel, curve)[x].dropna()), key=float)
        points = [v for v in grid if lo <= float(v) <= hi]
        if not points:
            raise ClaimError(f"[{panel}] {curve} has no {x} in [{lo}, {hi}] (grid {grid})")
        return [({"curve": curve, x: v}, level) for v in points for level in levels]

    return _paired(table, panels, pairs, relation, rel_tol)


@check(curves=("a", "b"))
def same_distribution(table, a, b, rel_tol=0.05, panels=None):
    """Final regrets of ``a`` and ``b`` have the same distribution: the mean paired difference is
    equivalent to 0 within +-rel_tol x mean(b) (TOST), and neither Mann-Whitney nor
    Kolmogorov-Smirnov tells them apart (a rejection is evidence against; their silence is none)."""
    from scipy.stats import ks_2samp, mannwhitneyu    # here, not at import: scipy.stats takes 1.4 s

    curves_exist(table, [a, b])
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        fa, fb = paired(finals(table, p, a), finals(table, p, b))
        comp, text = compare_pair(f"[{p}] {a} - {b}", fa, fb, "similar", rel_tol)
        pmw = float(mannwhitneyu(fa, fb, alternative="two-sided").pvalue)
        pks = float(ks_2samp(fa, fb).pvalue)
        comparisons += [comp, Comparison(f"[{p}] Mann-Whitney", 0.0, pmw), Comparison(f"[{p}] KS", 0.0, pks)]
        texts.append(f"{text}; means {fmt(float(fa.mean()))} vs {fmt(float(fb.mean()))}, MW p={fmt(pmw)}, "
                     f"KS p={fmt(pks)}")
    return verdict(comparisons, texts)


@check(curves=("a", "b"))
def spread_higher(table, a, b, panels=None, column="regret", n_boot=4000):
    """The spread of final ``column`` over seeds is larger for ``a`` than for ``b`` ("higher variance"):
    the log ratio of their standard deviations, with a bootstrap over the paired seeds (the same seeds
    resampled for both curves), above 0 (one-sided bootstrap p-value, as for slopes)."""
    curves_exist(table, [a, b])
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        fa, fb = paired(finals(table, p, a, column), finals(table, p, b, column))
        boot = stats.sd_log_ratio(fa.to_numpy(), fb.to_numpy(), n_boot=n_boot)
        lo, hi = boot.interval()
        label = f"[{p}] sd({a}) / sd({b})"
        comparisons.append(Comparison(label, *stats.above(boot, 0.0)))
        texts.append(f"{label}: {fmt(float(fa.std()))} / {fmt(float(fb.std()))} = {fmt(float(np.exp(boot.estimate)))} "
                     f"[{fmt(float(np.exp(lo)))}, {fmt(float(np.exp(hi)))}] (bootstrap over {len(fa)} paired seeds)")
    return verdict(comparisons, texts)


# others before reference: the order in which validate_names has always reported unknown names
@check(curves=("others", "reference"))
def within_factor(table, reference, others, factor=2.0, panels=None):
    """Mean final regret of each of ``others`` is within [1/factor, factor] x that of ``reference``:
    the paired ratio's Fieller interval inside that range (two one-sided t-tests of
    other - factor x reference < 0 and other - reference / factor > 0)."""
    others = as_list(others)
    curves_exist(table, [reference] + others)
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        for o in others:
            fo, fr = paired(finals(table, p, o), finals(table, p, reference))
            upper = stats.MeanT(fo - factor * fr)          # claim: below 0
            lower = stats.MeanT(fo - fr / factor)          # claim: above 0
            label = f"[{p}] ({o}) / ({reference})"
            ratio, lo, hi, n = stats.ratio_interval(fo, fr)
            texts.append(interval_text(label, ratio, lo, hi, n, "ratio"))
            comparisons.append(Comparison(label, max(upper.p_less(), lower.p_greater()),
                                          min(upper.p_greater(), lower.p_less()), text=texts[-1]))
    return verdict(comparisons, texts + [f"allowed ratio [{fmt(1 / factor)}, {fmt(factor)}]"])


@check()  # better and worse are column filters, not curves
def group_outperforms(table, better, worse, match=(), panels=None):
    """Rows matching ``better`` beat rows matching ``worse`` (filters {column: values}, each with an
    optional ``exclude`` filter): per seed, average the final regret over each group within matched
    conditions ``match``, then the paired difference < 0.  No curve may sit in both groups."""
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        fin = select(final_rows(table), p)
        gb, gw = select(fin, where=better), select(fin, where=worse)
        if gb.empty or gw.empty:
            raise ClaimError(f"[{p}] a group is empty: better={better} ({len(gb)} rows), "
                             f"worse={worse} ({len(gw)} rows)")
        both = sorted(set(gb["curve"]) & set(gw["curve"]))
        if both:
            raise ClaimError(f"[{p}] curve(s) in both groups of the comparison: {both[:3]}")
        keys = ["seed", *match]
        mb, mw = paired(gb.groupby(keys)["regret"].mean(), gw.groupby(keys)["regret"].mean())
        diff = (mb - mw).groupby(level="seed").mean()
        comp, text = compare_diff(f"[{p}] better - worse", diff, "better")
        comparisons.append(comp)
        texts.append(f"{text} (means {fmt(float(mb.mean()))} vs {fmt(float(mw.mean()))})")
    return verdict(comparisons, texts)


@check()
def analogous(table, where, rel_tol=0.2, match=("M",), panels=None):
    """Among rows matching ``where`` (with its ``exclude``), at each ``match`` condition, every curve's
    final regret is equivalent to the mean of the other curves (same seed) within +-rel_tol x that
    mean: each curve against the rest, so that no curve sits on both sides of a comparison."""
    comparisons, texts = [], []
    for p in panels_of(table, panels):
        fin = select(final_rows(table), p, where=where)
        if fin.empty:
            raise ClaimError(f"[{p}] no rows match {where}")
        for key, group in fin.groupby(list(match), sort=True):
            wide = group.pivot_table(index="seed", columns="curve", values="regret").dropna()
            if wide.shape[1] < 2:
                raise ClaimError(f"[{p}] fewer than two curves at {dict(zip(match, as_list(key)))}")
            cond = ", ".join(condition(m, v) for m, v in zip(match, as_list(key)))
            worst = None
            for c in wide.columns:
                rest = wide.drop(columns=c).mean(axis=1)
                comp, text = compare_pair(f"[{p}, {cond}] {c} - others", wide[c], rest, "similar", rel_tol)
                comparisons.append(comp)
                if worst is None or comp.p_confirm > worst[0].p_confirm:
                    worst = (comp, text)
            texts.append(f"[{p}, {cond}] {wide.shape[1]} curves, least similar: {worst[1]}")
    return verdict(comparisons, texts)


@check(curves=("curves",))
def similar_across_panels(table, curves, rel_tol=0.2, panels=None, column="regret"):
    """Each curve's final ``column`` in every panel is equivalent to its mean over the other panels
    (same seed) within +-rel_tol x that mean (TOST): a result unaffected by what the panels vary (e.g.
    the decision-set size), each panel against the rest, as :func:`analogous` does with curves."""
    curves_exist(table, curves)
    chosen = panels_of(table, panels)
    if len(chosen) < 2:
        raise ClaimError(f"fewer than two panels to compare: {chosen}")
    comparisons, texts = [], []
    for c in curves:
        wide = {p: finals(table, p, c, column) for p in chosen}
        worst = None
        for p in chosen:
            rest = sum(wide[q] for q in chosen if q != p) / (len(chosen) - 1)
            comp, text = compare_pair(f"{c} [{p}] - other panels", wide[p], rest.dropna(), "similar", rel_tol)
            comparisons.append(comp)
            if worst is None or comp.p_confirm > worst[0].p_confirm:
                worst = (comp, text)
        texts.append(f"{c}: {len(chosen)} panels, least similar: {worst[1]}")
    return verdict(comparisons, texts)


@check(curves=("b",))
def band_entry(table, b, groups, rel_tol=0.2, group="pair", size="M", panels=None):
    """Reports, never decides: per panel and per ``group`` value in ``groups`` (e.g. a distribution
    pair), the smallest ``size`` on the grid from which on (it and every larger size) the 95 %
    interval of the mean paired difference of final regret to ``b`` lies inside +-rel_tol x mean(b),
    the band of :func:`similar`; "never" with the largest size tried when no such size exists."""
    curves_exist(table, [b])
    fin = final_rows(table)
    texts = []
    for p in panels_of(table, panels):
        fb = finals(table, p, b)
        limit = rel_tol * abs(float(fb.mean()))
        entries = []
        for g in as_list(groups):
            rows = select(fin, p, where={group: g})
            if rows.empty:
                raise ClaimError(f"[{p}] no rows with {group} = {g!r}")
            sizes, entry = sorted(float(m) for m in rows[size].unique()), None
            for m in reversed(sizes):                         # from the largest size down, while inside
                comp, _ = compare_pair(g, rows[rows[size] == m].groupby("seed")["regret"].mean(), fb, "similar",
                                       rel_tol)
                lo, hi = comp.estimate - comp.halfwidth, comp.estimate + comp.halfwidth
                if not (comp.bounds[0] < lo and hi < comp.bounds[1]):
                    break
                entry = m
            entries.append(f"{g} {size} = {fmt(entry)}" if entry is not None
                           else f"{g} never ({size} <= {fmt(sizes[-1])})")
        texts.append(f"[{p}] enters the band +-{fmt(limit)} of {b} at: " + ", ".join(entries))
    return Verdict(REPORTED, "; ".join(texts))
