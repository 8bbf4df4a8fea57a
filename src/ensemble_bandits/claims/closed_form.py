"""Checks of closed-form and static tables: a value, a column's entries, the shape of a function
l(T0, b) over a grid (evaluated at the same b for every T0), and Monte-Carlo bounds in a table."""
from __future__ import annotations

import pandas as pd

from .core import FAILED, INCONCLUSIVE, REPRODUCED, ClaimError, Verdict, check, exact, fmt, select


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
    return exact(abs(value - expected) <= tol, f"{column} at {where} = {fmt(value)} (expected {expected} +- {tol})")


@check()
def column_is(table, column, value, ignore=(), not_measured=()):
    """Every row's ``column`` equals ``value``.  Rows whose value is in ``ignore`` are skipped; rows
    whose value is in ``not_measured`` (e.g. "data absent") leave the check inconclusive when every
    measured row holds (a claim about all rows is not reproduced on some of them)."""
    if column not in table.columns:
        raise ClaimError(f"column {column!r} not in the table; columns: {list(table.columns)}")
    vals = table[column].astype(str)
    left_out = [str(v) for v in (*ignore, *not_measured)]
    kept = table[~vals.isin(left_out)]
    bad = kept[kept[column].astype(str) != str(value)]
    label = table.columns[0]
    failing = ", ".join(str(v) for v in bad[label]) or "none"
    skipped = table[vals.isin(left_out)]
    not_checked = "".join(f"; not checked ({v}): {', '.join(str(x) for x in skipped[label][vals[skipped.index] == v])}"
                          for v in dict.fromkeys(vals[skipped.index]))
    numbers = f"{len(kept)} rows checked; {column} != {value!r} for: {failing}{not_checked}"
    open_ = vals.isin([str(v) for v in not_measured]).any()
    if bad.empty and len(kept) and open_:
        return Verdict(INCONCLUSIVE, numbers)
    return exact(bool(len(kept)) and bad.empty, numbers)


@check()
def interval_below(table, lower, upper, margin, label=None):
    """In every row, the quantity whose bounds are the columns ``lower`` and ``upper`` (e.g. a
    Monte-Carlo error's lower and upper confidence bounds) is below ``margin``: every upper bound
    below it -> reproduced; a lower bound above it -> not reproduced; else inconclusive."""
    for col in (lower, upper):
        if col not in table.columns:
            raise ClaimError(f"column {col!r} not in the table; columns: {list(table.columns)}")
    names = table[label or table.columns[0]].astype(str)
    lo, hi = pd.to_numeric(table[lower]), pd.to_numeric(table[upper])
    above = list(names[lo > margin])
    open_ = list(names[(hi > margin) & ~(lo > margin)])
    status = FAILED if above else REPRODUCED if not open_ else INCONCLUSIVE
    rows = ", ".join(f"{n} [{fmt(a)}, {fmt(b)}]" for n, a, b in zip(names, lo, hi))
    return Verdict(status, f"{rows}; margin {fmt(margin)}; above it: {', '.join(above) or 'none'}; "
                           f"undecided: {', '.join(open_) or 'none'}")


# --------------------------------------------------------------------------------------------
# a function f(series, x) tabulated on a grid of x per series (glmes-fig3b: l(T0, b))
# --------------------------------------------------------------------------------------------
def at_common(table, column, over, value, by):
    """``column`` per ``by`` at the grid value of ``over`` nearest ``value``, which every ``by`` must
    share (a grid that differs between the ``by`` values cannot compare them at one point)."""
    grid = table[over].astype(float)
    point = float(grid.iloc[(grid - float(value)).abs().argmin()])
    rows = table[(grid - point).abs() <= 1e-12]
    missing = sorted(set(table[by]) - set(rows[by]))
    if missing:
        raise ClaimError(f"{over} = {point:.6g} is not on the grid of {by} = {missing}: each {by} has its own "
                         f"{over} grid, so the values cannot be compared at the same {over}")
    return point, rows.groupby(by)[column].mean().sort_index()


def _relative_range(values):
    return float((values.max() - values.min()) / values.min())


@check()
def insensitive(table, column, sensitive_to, insensitive_to, at, sensitive_range, max_rel_insensitive,
                min_rel_sensitive):
    """``column`` barely moves with ``insensitive_to`` but clearly with ``sensitive_to``: its relative
    range (max - min) / min over the ``insensitive_to`` grid, at the same ``sensitive_to`` =
    at[sensitive_to] for all, is at most ``max_rel_insensitive``; its relative range over
    ``sensitive_to`` in ``sensitive_range`` at ``insensitive_to`` = at[insensitive_to] is at least
    ``min_rel_sensitive``."""
    point, over_ins = at_common(table, column, sensitive_to, at[sensitive_to], insensitive_to)
    sub = select(table, where={insensitive_to: at[insensitive_to]})
    s = sub[sensitive_to].astype(float)
    over_sens = sub[(s >= sensitive_range[0]) & (s <= sensitive_range[1])][column]
    if over_sens.empty:
        raise ClaimError(f"no rows with {insensitive_to} = {at[insensitive_to]} and {sensitive_to} in "
                         f"{sensitive_range}")
    r_ins, r_sens = _relative_range(over_ins), _relative_range(over_sens)
    return exact(r_ins <= max_rel_insensitive and r_sens >= min_rel_sensitive,
                 f"{column} over {insensitive_to} {list(over_ins.index)} at {sensitive_to} = {point:.4g} (same for "
                 f"all): {fmt(over_ins.min())} to {fmt(over_ins.max())}, relative range {fmt(r_ins)} (at most "
                 f"{max_rel_insensitive}); over {sensitive_to} in {list(sensitive_range)} at {insensitive_to} = "
                 f"{at[insensitive_to]}: {fmt(over_sens.min())} to {fmt(over_sens.max())}, relative range "
                 f"{fmt(r_sens)} (at least {min_rel_sensitive})")


@check()
def near_minimum(table, column, over, at, by, rel_tol):
    """For every ``by``, ``column`` at ``over`` = ``at`` (the same grid point for all) is within
    ``rel_tol`` (relative) of its minimum over the ``over`` grid."""
    point, value = at_common(table, column, over, at, by)
    parts, ok = [], True
    for key, group in table.groupby(by):
        best = group.loc[group[column].idxmin()]
        rel = float(value[key] / best[column] - 1.0)
        ok &= rel <= rel_tol
        parts.append(f"{by} = {key}: {fmt(value[key])} vs min {fmt(float(best[column]))} at {over} = "
                     f"{float(best[over]):.4g} (+{rel:.2%})")
    return exact(ok, f"{column} at {over} = {point:.4g} against its minimum over {over}: " + "; ".join(parts)
                 + f" (allowed +{rel_tol:.0%})")


@check()
def decreasing(table, column, along, over, at):
    """``column`` at ``over`` = ``at`` (the same grid point for every ``along``) strictly decreases
    as ``along`` grows."""
    point, value = at_common(table, column, over, at, along)
    steps = value.diff().dropna()
    return exact(bool(len(steps)) and bool((steps < 0).all()),
                 f"{column} at {over} = {point:.4g} for {along} = {list(value.index)}: "
                 + ", ".join(fmt(v) for v in value))
