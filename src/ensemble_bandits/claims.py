"""Claim checks: small predicates over a figure's table, registered by name.

Each check returns ``(status, numbers)`` with status one of ``reproduced``,
``not reproduced`` or ``inconclusive`` and a one-line summary of the numbers behind it.
Comparisons of two curves are paired across seeds (common random numbers make pairs):
the paired difference of final regrets gets a 95 % Student-t confidence interval.
Thresholds are arguments written in the registry next to the quoted claim, fixed before
the numbers are seen; a claim that fails is reported as failing.

A check declares which of its arguments name curves (``@check(curves=("better", "worse"))``),
so that ``validate_names`` can check them against the registry.  The statistics themselves
(final rows, paired intervals, slopes, fits) live in ``stats``.
"""
from __future__ import annotations

import math

import pandas as pd
from scipy.stats import ks_2samp, mannwhitneyu

from .stats import final_rows, fit_through_origin, loglog_slope, paired, paired_ci

REPRODUCED, FAILED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
CHECKS = {}


def check(curves=()):
    """Register a check under its name; ``curves``: the names of its arguments that hold a curve
    name or a list of curve names."""
    def register(fn):
        fn.curve_args = tuple(curves)
        CHECKS[fn.__name__] = fn
        return fn

    return register


class ClaimError(ValueError):
    """A claim names a curve, panel or column that the figure does not have."""


def _select(table, panel=None, curve=None, where=None):
    sub = table
    if panel is not None:
        sub = sub[sub["panel"] == panel]
    if curve is not None:
        sub = sub[sub["curve"] == curve]
    for col, val in (where or {}).items():
        if col not in sub.columns:
            raise ClaimError(f"claim filters on column {col!r}, which the table lacks")
        sub = sub[isin(sub[col], val if isinstance(val, list) else [val])]
    return sub


def isin(column: pd.Series, values) -> pd.Series:
    """Membership test that matches 2 with 2.0 (grid columns with gaps become float)."""
    if pd.api.types.is_numeric_dtype(column) and all(isinstance(v, (int, float)) for v in values):
        return column.isin([float(v) for v in values])
    return column.astype(str).isin([str(v) for v in values])


def _finals(table, panel, curve, where=None, column="regret") -> pd.Series:
    sub = _select(final_rows(table), panel, curve, where)
    if sub.empty:
        raise ClaimError(f"no rows for curve {curve!r} in panel {panel!r} (filter {where})")
    return sub.groupby("seed")[column].mean()


def _mean(table, panel, curve, column):
    """Mean of ``column`` over a curve's final rows (or all its rows for derived tables without t)."""
    sub = _select(final_rows(table), panel, curve)
    if sub.empty:
        raise ClaimError(f"no rows for curve {curve!r} in panel {panel!r}")
    return float(sub[column].mean())


def _panels(table, panels):
    known = list(dict.fromkeys(table["panel"]))
    if panels is None:
        return known
    missing = [p for p in panels if p not in known]
    if missing:
        raise ClaimError(f"claim names unknown panel(s) {missing}; panels: {known}")
    return panels


def _curves_exist(table, curves):
    known = set(table["curve"])
    missing = [c for c in curves if c not in known]
    if missing:
        raise ClaimError(f"claim names unknown curve(s) {missing}; curves: {sorted(known)}")


def _pair(table, panel, a, b, column="regret"):
    """Paired difference a - b of final ``column`` over the seeds both curves have, and the mean of b."""
    fa, fb = paired(_finals(table, panel, a, column=column), _finals(table, panel, b, column=column))
    return fa - fb, float(fb.mean())


def combine(statuses) -> str:
    statuses = list(statuses)
    if statuses and all(s == REPRODUCED for s in statuses):
        return REPRODUCED
    if any(s == FAILED for s in statuses):
        return FAILED
    return INCONCLUSIVE


def _fmt(x):
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def _diff_text(label, mean, lo, hi, n):
    return f"{label}: diff {_fmt(mean)} [{_fmt(lo)}, {_fmt(hi)}] (n={n})"


def _verdict(results) -> tuple:
    """(status, numbers) of a check from its (status, text) parts."""
    return combine(s for s, _ in results), "; ".join(text for _, text in results)


# --------------------------------------------------------------------------------------------
# paired checks: a paired difference, its 95 % t-interval, and a decision from the interval
# --------------------------------------------------------------------------------------------
def _below(lo, hi, limit):
    """The difference is below ``limit``: the whole interval under it -> reproduced, the whole
    interval above it -> not reproduced, else inconclusive."""
    return REPRODUCED if hi < limit else FAILED if lo > limit else INCONCLUSIVE


def _inside(lo, hi, tol):
    """The difference is within +-tol: the whole interval inside the band -> reproduced, the
    whole interval outside it -> not reproduced, else inconclusive."""
    return REPRODUCED if -tol <= lo and hi <= tol else FAILED if lo > tol or hi < -tol else INCONCLUSIVE


def _judged(label, diff, decide, limit=0, note=""):
    """(status, text) of one paired difference: its t-interval, ``decide(lo, hi, limit)``, the numbers."""
    mean, lo, hi, n = paired_ci(diff)
    return decide(lo, hi, limit), _diff_text(label, mean, lo, hi, n) + note


def _paired(table, panels, pairs, decide, column="regret", rel_tol=None, limit_label=""):
    """The skeleton of the curve-pair checks.  In each panel and for each (a, b) of ``pairs``: the
    paired difference a - b of final ``column``, its t-interval and ``decide(lo, hi, limit)``.  The
    limit is 0, or with ``rel_tol`` rel_tol x |mean of b|, shown after the numbers as
    ``, <limit_label><limit>``.  Numbers: ``[panel] a - b: diff mean [lo, hi] (n=...)`` per pair."""
    results = []
    for p in _panels(table, panels):
        for a, b in pairs:
            diff, ref = _pair(table, p, a, b, column)
            limit, note = 0, ""
            if rel_tol is not None:
                limit = rel_tol * abs(ref)
                note = f", {limit_label}{_fmt(limit)}"
            results.append(_judged(f"[{p}] {a} - {b}", diff, decide, limit, note))
    return _verdict(results)


@check(curves=("better", "worse"))
def outperforms(table, better, worse, panels=None, column="regret"):
    """Every curve in ``better`` has lower final regret than every curve in ``worse`` (paired CI < 0)."""
    _curves_exist(table, list(better) + list(worse))
    return _paired(table, panels, [(b, w) for b in better for w in worse], _below, column)


@check(curves=("a", "b"))
def similar(table, a, b, rel_tol=0.2, panels=None, column="regret"):
    """Final regret of each curve in ``a`` is within +-rel_tol x mean(b): the whole paired CI inside
    the band -> reproduced; the whole CI outside it -> not reproduced."""
    a = [a] if isinstance(a, str) else list(a)
    _curves_exist(table, a + [b])
    return _paired(table, panels, [(c, b) for c in a], _inside, column, rel_tol, "band +-")


@check(curves=("a", "baselines"))
def not_worse(table, a, baselines, rel_tol=0.2, panels=None):
    """``a`` is not worse than each baseline by more than rel_tol x mean(baseline) (paired CI)."""
    _curves_exist(table, [a] + list(baselines))
    return _paired(table, panels, [(a, b) for b in baselines], _below, rel_tol=rel_tol, limit_label="margin ")


@check(curves=("a", "b"))
def same_distribution(table, a, b, alpha=0.01, panels=None):
    """Final regrets of ``a`` and ``b`` are indistinguishable: Mann-Whitney and KS p >= alpha."""
    _curves_exist(table, [a, b])
    results = []
    for p in _panels(table, panels):
        fa, fb = _finals(table, p, a), _finals(table, p, b)
        pmw = mannwhitneyu(fa, fb, alternative="two-sided").pvalue
        pks = ks_2samp(fa, fb).pvalue
        mean, lo, hi, n = paired_ci(fa - fb)
        results.append((REPRODUCED if min(pmw, pks) >= alpha else FAILED,
                        f"[{p}] means {_fmt(fa.mean())} vs {_fmt(fb.mean())}, MW p={_fmt(pmw)}, KS p={_fmt(pks)}, "
                        + _diff_text("paired", mean, lo, hi, n)))
    return _verdict(results)


@check(curves=("numerator", "denominator"))
def ratio_below(table, numerator, denominator, threshold, column="seconds", panels=None):
    """mean(column | numerator) / mean(column | denominator) < threshold."""
    _curves_exist(table, [numerator, denominator])
    results = []
    for p in _panels(table, panels):
        num, den = _mean(table, p, numerator, column), _mean(table, p, denominator, column)
        ratio = num / den
        results.append((REPRODUCED if ratio < threshold else FAILED,
                        f"[{p}] {numerator} / {denominator} = {_fmt(num)} / {_fmt(den)} = {_fmt(ratio)} "
                        f"(threshold {threshold})"))
    return _verdict(results)


@check(curves=("curves",))
def no_degradation(table, x, curves=None, panels=None, where=None):
    """Regret does not increase with ``x``: no grid point is significantly worse (paired CI > 0) than the
    best smaller grid point."""
    statuses, parts = [], []
    for p in _panels(table, panels):
        fin = _select(final_rows(table), p, None, where)
        if curves is not None:
            fin = fin[fin["curve"].isin(curves)]
        by_x = {v: g.groupby("seed")["regret"].mean() for v, g in fin.groupby(x)}
        xs = sorted(by_x, key=float)
        worst = None
        for i, v in enumerate(xs[1:], start=1):
            best = min(xs[:i], key=lambda u: by_x[u].mean())
            mean, lo, hi, n = paired_ci(by_x[v] - by_x[best])
            statuses.append(FAILED if lo > 0 else REPRODUCED)
            if worst is None or lo > worst[2]:
                worst = (v, best, lo, mean, hi, n)
        if worst:
            v, best, lo, mean, hi, n = worst
            parts.append(f"[{p}] means " + ", ".join(f"{x}={u}: {_fmt(by_x[u].mean())}" for u in xs)
                         + "; largest increase " + _diff_text(f"{x}={v} vs {x}={best}", mean, lo, hi, n))
    return combine(statuses), "; ".join(parts)


# others before reference: the order in which validate_names has always reported unknown names
@check(curves=("others", "reference"))
def within_factor(table, reference, others, factor=2.0, panels=None):
    """Mean final regret of each of ``others`` is within [1/factor, factor] x that of ``reference``."""
    _curves_exist(table, [reference] + list(others))
    results = []
    for p in _panels(table, panels):
        ref = _finals(table, p, reference).mean()
        for o in others:
            ratio = _finals(table, p, o).mean() / ref
            results.append((REPRODUCED if 1 / factor <= ratio <= factor else FAILED,
                            f"[{p}] {o}/{reference} = {_fmt(ratio)}"))
    status, numbers = _verdict(results)
    return status, numbers + f" (allowed factor {factor})"


@check(curves=("curves",))
def slope_at_most(table, x, max_slope, curves=None, panels=None, use_t=False):
    """log-log slope of mean final regret against ``x`` (a grid column, or the round t when
    ``use_t``) is at most ``max_slope`` (upper bounds of the theory)."""
    results = []
    for p in _panels(table, panels):
        sub = _select(table if use_t else final_rows(table), p)
        for c in (curves or list(dict.fromkeys(sub["curve"]))):
            s = sub[sub["curve"] == c]
            means = s.groupby("t" if use_t else x)["regret"].mean()
            means = means[(means.index.astype(float) >= (100 if use_t else 0)) & (means > 0)]
            slope, lo, hi = loglog_slope(means.index.astype(float), means.values)
            results.append((REPRODUCED if slope <= max_slope else FAILED,
                            f"[{p}] {c}: slope {_fmt(slope)} [{_fmt(lo)}, {_fmt(hi)}] vs at most {max_slope}"))
    return _verdict(results)


@check(curves=("curves",))
def fraction_at_least(table, column, threshold, curves, panels=None, t_min=1):
    """Seed-mean of ``column`` is at least ``threshold`` at every checkpoint t >= t_min."""
    _curves_exist(table, curves)
    results = []
    for p in _panels(table, panels):
        for c in curves:
            s = _select(table, p, c)
            s = s[s["t"] >= t_min]
            means = s.groupby("t")[column].mean()
            low = float(means.min())
            results.append((REPRODUCED if low >= threshold else FAILED,
                            f"[{p}] {c}: min over t of mean {column} = {_fmt(low)} (threshold {_fmt(threshold)}), "
                            f"overall mean {_fmt(float(means.mean()))}"))
    return _verdict(results)


@check(curves=("curve",))
def coupled_identical(table, curve):
    """Pathwise coupling: every seed's action sequences coincide (or first differ at a near-tie)."""
    _curves_exist(table, [curve])
    sub = table[table["curve"] == curve]
    T = int(sub["t"].max())
    bad = sub[(sub["first_mismatch"] <= T) & (~sub["near_tie"].astype(bool))]
    ties = int(((sub["first_mismatch"] <= T) & sub["near_tie"].astype(bool)).sum())
    status = REPRODUCED if bad.empty else FAILED
    return status, (f"{len(sub)} coupled runs of T={T}: {len(sub) - len(bad) - ties} identical, "
                    f"{ties} diverged at a near-tie (<1e-9), {len(bad)} diverged otherwise")


@check()  # better and worse are column filters, not curves
def group_outperforms(table, better, worse, match=(), panels=None):
    """Rows matching ``better`` (column filters) beat rows matching ``worse``: per seed, average the
    final regret over each group (within matched conditions ``match``), then a paired CI < 0."""
    results = []
    for p in _panels(table, panels):
        fin = _select(final_rows(table), p)
        gb = _select(fin, where=better)
        gw = _select(fin, where=worse)
        if gb.empty or gw.empty:
            raise ClaimError(f"[{p}] a group is empty: better={better} ({len(gb)} rows), worse={worse} ({len(gw)} rows)")
        keys = ["seed", *match]
        mb, mw = paired(gb.groupby(keys)["regret"].mean(), gw.groupby(keys)["regret"].mean())
        diff = (mb - mw).groupby(level="seed").mean()
        results.append(_judged(f"[{p}] better - worse", diff, _below,
                               note=f" (means {_fmt(float(mb.mean()))} vs {_fmt(float(mw.mean()))})"))
    return _verdict(results)


@check()
def spread_below(table, where, rel=0.25, by="curve", panels=None):
    """Among rows matching ``where``, (max - min)/min of the mean final regret across ``by`` <= rel."""
    results = []
    for p in _panels(table, panels):
        fin = _select(final_rows(table), p, None, where)
        means = fin.groupby(by)["regret"].mean()
        spread = float((means.max() - means.min()) / means.min())
        results.append((REPRODUCED if spread <= rel else FAILED,
                        f"[{p}] {len(means)} groups, min {_fmt(means.min())}, max {_fmt(means.max())}, "
                        f"relative spread {_fmt(spread)} (allowed {rel})"))
    return _verdict(results)


@check()
def linear_fit(table, x="d", y="M_min", r2_min=0.8, group="n_arms", rel_spread_max=0.5):
    """M_min ~ c x through the origin with R^2 >= r2_min, and the spread across ``group`` at equal x
    small next to the change across x (mean within-x range / range of x-means <= rel_spread_max)."""
    df = table.dropna(subset=[y])
    if len(df) < 3:
        return INCONCLUSIVE, f"only {len(df)} finite {y} values (others not reached within the grid)"
    # a y without spread counts as fitted (R^2 = 1), as it always has here
    c, r2 = fit_through_origin(df[x], df[y], r2_if_flat=1.0)
    per_x = df.groupby(x)[y]
    within = float((per_x.max() - per_x.min()).mean())
    across = float(per_x.mean().max() - per_x.mean().min())
    rel = within / across if across > 0 else float("inf")
    st1 = REPRODUCED if r2 >= r2_min else FAILED
    st2 = REPRODUCED if rel <= rel_spread_max else FAILED
    missing = int(table[y].isna().sum())
    return combine([st1, st2]), (f"slope {_fmt(c)}, R^2 {_fmt(r2)} (min {r2_min}); within-{x} spread across {group} "
                                 f"{_fmt(within)} vs across-{x} range {_fmt(across)} (ratio {_fmt(rel)}, max {rel_spread_max})"
                                 + (f"; {missing} setting(s) never matched TS within the grid" if missing else ""))


@check()
def value_close(table, where, column, expected, tol):
    """The value of ``column`` in the row(s) matching ``where`` (nearest match on numeric keys) is
    within ``tol`` of ``expected``."""
    sub = table
    for col, val in where.items():
        if col not in sub.columns:
            raise ClaimError(f"column {col!r} not in the table")
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            near = (sub[col].astype(float) - val).abs()
            sub = sub[near == near.min()]
        else:
            sub = sub[sub[col].astype(str) == str(val)]
    if sub.empty:
        raise ClaimError(f"no row matches {where}")
    value = float(sub[column].astype(float).iloc[0])
    status = REPRODUCED if abs(value - expected) <= tol else FAILED
    return status, f"{column} at {where} = {_fmt(value)} (expected {expected} +- {tol})"


@check()
def column_at_least(table, column, other, where=None):
    """Every row (matching ``where``) has table[column] >= table[other] (e.g. Monte Carlo >= bound)."""
    sub = _select(table, where=where)
    vals, bounds = pd.to_numeric(sub[column], errors="coerce"), pd.to_numeric(sub[other], errors="coerce")
    ok = vals.notna() & bounds.notna()
    bad = sub[ok & (vals < bounds)]
    status = REPRODUCED if ok.any() and bad.empty else FAILED
    return status, f"{int(ok.sum())} rows compared, {len(bad)} with {column} < {other}"


@check()
def insensitive(table, column, sensitive_to, insensitive_to, at, max_ratio):
    """``column`` varies little with ``insensitive_to`` next to ``sensitive_to``: the range over the
    ``insensitive_to`` grid (``sensitive_to`` nearest at[sensitive_to]) is at most ``max_ratio`` x the
    range over the ``sensitive_to`` grid (``insensitive_to`` = at[insensitive_to])."""
    def near(df, col, v):
        gap = (df[col].astype(float) - float(v)).abs()
        return df[gap <= gap.min() + 1e-12]

    def span(df):
        return float(df[column].max() - df[column].min())

    over_ins = near(table, sensitive_to, at[sensitive_to]).groupby(insensitive_to)[column].mean()
    over_sens = near(table, insensitive_to, at[insensitive_to])
    r_ins = float(over_ins.max() - over_ins.min())
    r_sens = span(over_sens)
    status = REPRODUCED if r_ins <= max_ratio * r_sens else FAILED
    ratio = r_ins / r_sens if r_sens > 0 else (float("inf") if r_ins > 0 else float("nan"))
    return status, (f"range over {insensitive_to} at {sensitive_to}~{at[sensitive_to]}: {_fmt(r_ins)}; range over "
                    f"{sensitive_to} at {insensitive_to}={at[insensitive_to]}: {_fmt(r_sens)} (ratio {_fmt(ratio)}, "
                    f"max {max_ratio})")


@check()
def column_is(table, column, value, ignore=()):
    """Every row's ``column`` equals ``value`` (rows whose value is in ``ignore`` are skipped)."""
    if column not in table.columns:
        raise ClaimError(f"column {column!r} not in the table; columns: {list(table.columns)}")
    vals = table[column].astype(str)
    kept = table[~vals.isin([str(v) for v in ignore])]
    bad = kept[kept[column].astype(str) != str(value)]
    label = table.columns[0]
    status = REPRODUCED if len(kept) and bad.empty else FAILED
    failing = ", ".join(str(v) for v in bad[label]) or "none"
    skipped = table[vals.isin([str(v) for v in ignore])]
    not_checked = "".join(f"; not checked ({v}): {', '.join(str(x) for x in skipped[label][vals[skipped.index] == v])}"
                          for v in dict.fromkeys(vals[skipped.index]))
    return status, f"{len(kept)} rows checked; {column} != {value!r} for: {failing}{not_checked}"


def validate_names(entry: dict, curves, panels) -> None:
    """Every curve/panel a claim names exists in the paper-scale figure (else a registry error);
    the curve names are the arguments each check declares with ``@check(curves=...)``."""
    for claim in entry.get("claims", []):
        for chk in claim["checks"]:
            if chk["fn"] not in CHECKS:
                raise ClaimError(f"{entry['id']}: claim {claim['id']!r} uses unknown check {chk['fn']!r}; "
                                 f"known: {', '.join(sorted(CHECKS))}")
            args = chk.get("args", {})
            for key in CHECKS[chk["fn"]].curve_args:
                if key in args:
                    vals = args[key] if isinstance(args[key], list) else [args[key]]
                    missing = [v for v in vals if isinstance(v, str) and v not in curves]
                    if missing and curves:
                        raise ClaimError(f"{entry['id']}: claim {claim['id']!r} names curve(s) {missing} that the "
                                         f"figure does not have; curves: {list(curves)}")
            missing = [p for p in args.get("panels") or [] if p not in panels]
            if missing:
                raise ClaimError(f"{entry['id']}: claim {claim['id']!r} names panel(s) {missing}; panels: {list(panels)}")


def evaluate(entry: dict, table: pd.DataFrame, scale: str = "paper") -> list:
    """All claims of a registry entry, as dicts (id, quote, status, numbers, note).

    A claim whose curves or grid points are not simulated at a reduced scale is reported as
    inconclusive ("not measured at this scale"); at paper scale that is an error.
    """
    results = []
    for claim in entry.get("claims", []):
        statuses, numbers = [], []
        for chk in claim["checks"]:
            try:
                st, nums = CHECKS[chk["fn"]](table, **chk.get("args", {}))
            except ClaimError as err:
                if scale == "paper":
                    raise ClaimError(f"{entry['id']}: claim {claim['id']!r}: {err}") from None
                st, nums = INCONCLUSIVE, f"not measured at scale {scale} (reduced grid): {err}"
            statuses.append(st)
            numbers.append(nums)
        results.append({"id": claim["id"], "quote": " ".join(claim["quote"].split()), "status": combine(statuses),
                        "numbers": " | ".join(numbers), "note": claim.get("note", "")})
    return results
