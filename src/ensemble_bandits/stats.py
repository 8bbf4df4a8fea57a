"""Statistics over seeds, each in one place: the final rows of a long table, means with
standard-deviation, standard-error or Student-t half-widths, the paired difference of two
curves and its t-interval, the log-log slope with its interval, and least-squares fits.

The claim checks (``claims``), the derived tables (``aggregate``) and the plots (``plotting``)
all use these.  Standard deviations are sample ones (``ddof=1``); intervals are two-sided.
"""
from __future__ import annotations

import math

import numpy as np

BANDS = {"se": "mean ± s.e.", "sd": "mean ± s.d.", "ci95": "mean ± 95% t-CI"}


def final_rows(df, keys=("panel", "curve"), t: str = "t"):
    """The rows at the maximum ``t`` of each group ``keys`` (all rows if there is no ``t``)."""
    if t not in df.columns:
        return df
    tmax = df.groupby(list(keys), sort=False, dropna=False)[t].transform("max")
    return df[df[t] == tmax]


def t_quantile(level, dof):
    """Critical value q of a two-sided Student-t interval: P(|T_dof| <= q) = ``level``."""
    from scipy.stats import t as student_t

    return student_t.ppf(0.5 + level / 2, dof)


# --------------------------------------------------------------------------------------------
# mean and band of independent values (one per seed)
# --------------------------------------------------------------------------------------------
def halfwidth(std, n, kind: str):
    """Half-width of the band ``kind`` for sample standard deviation(s) ``std`` over ``n`` seeds.

    ``sd``: s; ``se``: s/sqrt(n); ``ci95``: t_{0.975,n-1} s/sqrt(n).  Zero where n <= 1.
    """
    std = np.asarray(std, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "sd":
            hw = std * np.ones_like(n)
        elif kind == "se":
            hw = std / np.sqrt(n)
        elif kind == "ci95":
            hw = t_quantile(0.95, np.maximum(n - 1, 1)) * std / np.sqrt(n)
        else:
            raise ValueError(f"unknown band {kind!r}; known bands: {', '.join(BANDS)}")
        hw = np.where((n > 1) & np.isfinite(hw), hw, 0.0)
    return hw


def band(values, kind: str = "se"):
    """(mean, lo, hi) of ``values`` (one value per seed; NaNs dropped).

    ``se``: mean ± s/sqrt(n); ``sd``: mean ± s; ``ci95``: mean ± t_{0.975,n-1} s/sqrt(n), where
    s is the sample standard deviation (ddof=1).  With a single value the band has zero width.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise ValueError("band() needs at least one finite value")
    mean = float(v.mean())
    std = float(v.std(ddof=1)) if v.size > 1 else 0.0
    hw = float(halfwidth(std, v.size, kind))
    return mean, mean - hw, mean + hw


def summarise(df, by, y: str = "regret", kind: str = "se"):
    """Mean and band of column ``y`` grouped by ``by``: columns by + [mean, lo, hi, n]."""
    by = list(by)
    g = df.groupby(by, sort=False, dropna=False)[y]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    hw = halfwidth(out["std"].fillna(0.0).to_numpy(), out["n"].to_numpy(), kind)
    out["lo"] = out["mean"] - hw
    out["hi"] = out["mean"] + hw
    return out.drop(columns="std")


# --------------------------------------------------------------------------------------------
# paired differences (common random numbers: the same seed is the same instance and noise)
# --------------------------------------------------------------------------------------------
def paired(a, b):
    """Two per-seed series (indexed by seed) restricted to the seeds both have: (a, b)."""
    common = a.index.intersection(b.index)
    return a[common], b[common]


def paired_ci(diff, level: float = 0.95):
    """(mean, lo, hi, n): mean and t confidence interval of a paired difference series (NaNs
    dropped); with fewer than two pairs the interval is (-inf, inf)."""
    diff = diff.dropna()
    n = len(diff)
    mean = float(diff.mean()) if n else float("nan")
    if n < 2:
        return mean, float("-inf"), float("inf"), n
    half = t_quantile(level, n - 1) * float(diff.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half, n


# --------------------------------------------------------------------------------------------
# fits
# --------------------------------------------------------------------------------------------
def loglog_slope(xs, ys, level: float = 0.95):
    """(slope, lo, hi): least-squares slope of log y on log x and its t-interval."""
    from scipy.stats import linregress

    res = linregress(np.log(xs), np.log(ys))
    half = t_quantile(level, max(1, len(xs) - 2)) * res.stderr
    return res.slope, res.slope - half, res.slope + half


def fit_through_origin(x, y, r2_if_flat: float = float("nan")):
    """Least-squares slope c of y = c x (no intercept) over the finite pairs, and its
    R^2 = 1 - SS_res / SS_tot (centred); ``r2_if_flat`` where y does not vary (SS_tot = 0)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size == 0 or not np.any(x):
        return float("nan"), float("nan")
    c = float(np.sum(x * y) / np.sum(x * x))
    ss_res = float(np.sum((y - c * x) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else r2_if_flat
    return c, r2
