"""Statistics over seeds, each in one place: the final rows of a long table, means with
standard-deviation, standard-error or Student-t half-widths, the paired difference of two
curves, and the machinery of the claim decisions: location estimates of a paired difference
with their intervals and one-sided p-values (Student-t of the mean, Wilcoxon signed-rank /
Hodges-Lehmann of the pseudo-median, bootstrap with percentile or BCa interval), one-sided and equivalence (TOST) tests, Holm's
correction, Fieller's interval of a paired ratio, the log-log slope with a seed-bootstrap
interval, collapse rates, and least-squares fits.

The claim checks (``claims``), the derived tables (``aggregate``), the closed-form tables
(``theory``) and the plots (``plotting``) all use these.  Standard deviations are sample ones
(``ddof=1``); intervals are two-sided at ``LEVEL`` = 95 %, and every decision is a one-sided test at
``ALPHA`` = 2.5 %, so that a decision reads one edge of the interval shown.
"""
from __future__ import annotations

import functools
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
ALPHA = 0.025           # one-sided level of every claim decision
LEVEL = 1 - 2 * ALPHA   # the two-sided intervals shown next to the decisions (95 %)


def paired(a, b):
    """Two per-seed series (indexed by seed) restricted to the seeds both have: (a, b)."""
    common = a.index.intersection(b.index)
    return a[common], b[common]


def _finite(values) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    return v[np.isfinite(v)]


def paired_ci(diff, level: float = LEVEL):
    """(mean, lo, hi, n): mean and t confidence interval of a paired difference series (NaNs
    dropped); with fewer than two pairs the interval is (-inf, inf)."""
    loc = MeanT(diff)
    return (loc.estimate, *loc.interval(level), loc.n)


class MeanT:
    """The mean of a paired difference: Student-t interval and one-sided t-tests (scipy).

    ``p_less(theta)``: p-value of H1 "mean < theta"; ``p_greater(theta)``: of H1 "mean > theta".
    A difference without spread decides by its value; fewer than two values decide nothing.
    """

    name = "mean"

    def __init__(self, diff):
        self.values = _finite(diff)
        self.n = self.values.size
        self.estimate = float(self.values.mean()) if self.n else float("nan")
        self.sd = float(self.values.std(ddof=1)) if self.n > 1 else float("nan")

    def interval(self, level: float = LEVEL):
        if self.n < 2:
            return float("-inf"), float("inf")
        half = t_quantile(level, self.n - 1) * self.sd / math.sqrt(self.n)
        return self.estimate - half, self.estimate + half

    def _p(self, theta, alternative):
        from scipy.stats import ttest_1samp

        if self.n < 2:
            return 1.0
        if self.sd == 0:
            below = self.estimate < theta if alternative == "less" else self.estimate > theta
            return 0.0 if below else 1.0
        return float(ttest_1samp(self.values, theta, alternative=alternative).pvalue)

    def p_less(self, theta=0.0):
        return self._p(theta, "less")

    def p_greater(self, theta=0.0):
        return self._p(theta, "greater")


def signed_rank_cdf(n: int) -> np.ndarray:
    """Exact null distribution of the Wilcoxon signed-rank statistic T+ of n differences:
    ``cdf[t] = P(T+ <= t)``, t = 0 .. n(n+1)/2 (each rank enters with probability 1/2)."""
    return _signed_rank_cdf(int(n)).copy()


@functools.lru_cache(maxsize=16)
def _signed_rank_cdf(n: int) -> np.ndarray:
    pmf = np.zeros(n * (n + 1) // 2 + 1)
    pmf[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(pmf)
        shifted[rank:] = pmf[:-rank]
        pmf = 0.5 * (pmf + shifted)
    return np.minimum(np.cumsum(pmf), 1.0)


class SignedRank:
    """The pseudo-median of a paired difference, which a few extreme seeds do not move: the
    Hodges-Lehmann estimate (median of the Walsh averages (d_i + d_j)/2, i <= j), its exact
    signed-rank interval, and exact one-sided Wilcoxon signed-rank tests of H1 "location < theta"
    and "location > theta".  T+ of d - theta is the number of Walsh averages above theta (ties at
    theta count one half), so a decision and the interval's edge always agree."""

    name = "pseudo-median"

    def __init__(self, diff):
        v = _finite(diff)
        self.n = v.size
        i, j = np.triu_indices(self.n)
        self.walsh = np.sort((v[i] + v[j]) / 2.0)
        self.estimate = float(np.median(self.walsh)) if self.n else float("nan")
        self.cdf = _signed_rank_cdf(self.n) if self.n else np.ones(1)

    def _t_plus(self, theta):
        above = self.walsh.size - np.searchsorted(self.walsh, theta, side="right")
        ties = np.searchsorted(self.walsh, theta, side="right") - np.searchsorted(self.walsh, theta, side="left")
        return above + 0.5 * ties

    def p_less(self, theta=0.0):
        if self.n == 0:
            return 1.0
        return float(self.cdf[math.floor(self._t_plus(theta))])

    def p_greater(self, theta=0.0):
        if self.n == 0:
            return 1.0
        total = self.walsh.size
        return float(self.cdf[total - math.ceil(self._t_plus(theta))])

    def interval(self, level: float = LEVEL):
        k = int(np.searchsorted(self.cdf, (1 - level) / 2, side="right"))   # T+ <= k - 1 rejects
        if k == 0:
            return float("-inf"), float("inf")
        return float(self.walsh[k - 1]), float(self.walsh[self.walsh.size - k])


INTERVALS = ("percentile", "bca")


class Bootstrap:
    """A statistic with ``samples`` of its bootstrap distribution: percentile interval (or, given
    its ``jackknife`` values, the bias-corrected and accelerated one, :meth:`interval` with
    ``method="bca"``) and bootstrap one-sided p-values (1 + #samples on the other side of theta) /
    (B + 1) (percentile ones, whatever the interval).

    ``jackknife``: the statistic with one unit left out, each unit in turn: one array (a bootstrap
    that resamples one set of units) or a list of arrays, one per stratum (a stratified bootstrap,
    which resamples each stratum apart: e.g. a figure's panels, each with its own seeds).
    Non-finite values are dropped."""

    name = "bootstrap"

    def __init__(self, estimate, samples, jackknife=None):
        self.estimate = float(estimate)
        self.samples = _finite(samples)
        self.n = self.samples.size
        if jackknife is None:
            self.jackknife = None
        else:
            strata = list(jackknife)
            if strata and np.ndim(strata[0]) == 0:      # one array of values: one stratum
                strata = [strata]
            self.jackknife = [_finite(v) for v in strata]

    def interval(self, level: float = LEVEL, method: str = "percentile"):
        """(lo, hi) at two-sided ``level``: ``percentile`` (the samples' quantiles) or ``bca``
        (:func:`bca_levels`; (-inf, inf) where every sample lies on one side of the estimate, so that
        the bias correction is unbounded)."""
        if method not in INTERVALS:
            raise ValueError(f"unknown bootstrap interval {method!r}; known: {', '.join(INTERVALS)}")
        if self.n == 0:
            return float("-inf"), float("inf")
        probs = [(1 - level) / 2, (1 + level) / 2]
        if method == "bca":
            if self.jackknife is None:
                raise ValueError("a BCa interval needs the statistic's jackknife values")
            probs = bca_levels(self.estimate, self.samples, self.jackknife, level)
            if not np.all(np.isfinite(probs)):
                return float("-inf"), float("inf")
        lo, hi = np.quantile(self.samples, probs)
        return float(lo), float(hi)

    def p_less(self, theta=0.0):
        return float((1 + np.sum(self.samples >= theta)) / (self.n + 1))

    def p_greater(self, theta=0.0):
        return float((1 + np.sum(self.samples <= theta)) / (self.n + 1))

    def bias_z0(self) -> float:
        """The BCa bias correction (:func:`bca_bias`)."""
        return bca_bias(self.estimate, self.samples)

    def acceleration(self) -> float:
        """The BCa acceleration from the jackknife values (:func:`bca_acceleration`)."""
        if self.jackknife is None:
            raise ValueError("the acceleration needs the statistic's jackknife values")
        return bca_acceleration(self.jackknife)


def bca_bias(estimate, samples) -> float:
    """z0 = Phi^-1(share of the bootstrap samples below the estimate, ties counted half): 0 when the
    estimate is the samples' median, negative when they sit above it (+-inf when all are on one side)."""
    from scipy.stats import norm

    s = _finite(samples)
    share = (np.sum(s < estimate) + 0.5 * np.sum(s == estimate)) / s.size
    return float(norm.ppf(share))


def bca_acceleration(jackknife) -> float:
    """a = sum_j sum_i U_ji^3 / n_j^3 / (6 (sum_j sum_i U_ji^2 / n_j^2)^1.5), U_ji = (n_j - 1)
    (mean_i theta_(ji) - theta_(ji)), theta_(ji) the statistic without unit i of stratum j (Efron &
    Tibshirani 1993, 14.15; the stratified form is scipy.stats.bootstrap's for several samples).  One
    stratum gives the usual sum d^3 / (6 (sum d^2)^1.5), d = mean - theta_(i).  0 where the jackknife
    values do not vary."""
    strata = [_finite(v) for v in jackknife]
    num = den = 0.0
    for v in strata:
        if v.size < 2:
            continue
        u = (v.size - 1) * (v.mean() - v)
        num += float(np.sum(u ** 3)) / v.size ** 3
        den += float(np.sum(u ** 2)) / v.size ** 2
    return num / (6.0 * den ** 1.5) if den > 0 else 0.0


def bca_levels(estimate, samples, jackknife, level: float = LEVEL) -> np.ndarray:
    """The bootstrap quantile levels (a1, a2) of the BCa interval at two-sided ``level``:
    a_k = Phi(z0 + (z0 + z_k) / (1 - a (z0 + z_k))), z_k = Phi^-1((1 -+ level) / 2), with z0 from
    :func:`bca_bias` and a from :func:`bca_acceleration` (Efron 1987).  Where 1 - a (z0 + z_k) <= 0
    (an acceleration beyond the formula's range) the level is taken at its limit, 0 or 1.  NaN where
    z0 is infinite (every sample on one side of the estimate)."""
    from scipy.stats import norm

    z0 = bca_bias(estimate, samples)
    if not np.isfinite(z0):
        return np.array([np.nan, np.nan])
    a = bca_acceleration(jackknife)
    out = []
    for z in norm.ppf([(1 - level) / 2, (1 + level) / 2]):
        w = z0 + z
        den = 1.0 - a * w
        out.append(norm.cdf(z0 + w / den) if den > 0 else (1.0 if w > 0 else 0.0))
    return np.array(out, dtype=float)


LOCATIONS = {"mean": MeanT, "signed-rank": SignedRank}


def location(diff, method: str = "mean"):
    """The location estimate of a paired difference used by a claim: ``mean`` (Student t) or
    ``signed-rank`` (Hodges-Lehmann pseudo-median, for heavy-tailed regrets)."""
    if method not in LOCATIONS:
        raise ValueError(f"unknown location method {method!r}; known: {', '.join(LOCATIONS)}")
    return LOCATIONS[method](diff)


# --------------------------------------------------------------------------------------------
# decisions: (p_confirm, p_contradict) of a relation, and Holm's step-down correction
# --------------------------------------------------------------------------------------------
def below(loc, limit=0.0):
    """The location is below ``limit`` (one-sided test): (p for it, p against it)."""
    return loc.p_less(limit), loc.p_greater(limit)


def above(loc, limit=0.0):
    """The location is above ``limit``: (p for it, p against it)."""
    return loc.p_greater(limit), loc.p_less(limit)


def tost(loc, low, high):
    """Equivalence of the location to the band [low, high] by two one-sided tests (TOST):
    (p of equivalence = the larger one-sided p, p of lying outside = the smaller of the two
    opposite one-sided p-values).  At level ALPHA the band contains the whole LEVEL interval
    exactly when p of equivalence <= ALPHA; an interval across an edge decides neither way."""
    p_eq = max(loc.p_greater(low), loc.p_less(high))
    p_out = min(loc.p_less(low), loc.p_greater(high))
    return p_eq, p_out


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order:
    the i-th smallest p is multiplied by (m - i + 1), made non-decreasing, capped at 1."""
    p = np.asarray(pvalues, dtype=float)
    p = np.where(np.isfinite(p), p, 1.0)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


# --------------------------------------------------------------------------------------------
# ratios, slopes and heavy tails
# --------------------------------------------------------------------------------------------
def ratio_interval(num, den, level: float = LEVEL):
    """(ratio, lo, hi, n): mean(num) / mean(den) of paired series and its Fieller interval, the
    set of R for which the paired t-test of num - R den does not reject (two-sided ``level``);
    (-inf, inf) when mean(den) is not clearly away from 0."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    ok = np.isfinite(num) & np.isfinite(den)
    num, den = num[ok], den[ok]
    n = num.size
    ratio = float(num.mean() / den.mean()) if n and den.mean() != 0 else float("nan")
    if n < 2:
        return ratio, float("-inf"), float("inf"), n
    q = t_quantile(level, n - 1) ** 2 / n
    cov = np.cov(num, den, ddof=1)
    a = den.mean() ** 2 - q * cov[1, 1]
    b = num.mean() * den.mean() - q * cov[0, 1]
    c = num.mean() ** 2 - q * cov[0, 0]
    disc = b * b - a * c
    if a <= 0 or disc < 0:
        return ratio, float("-inf"), float("inf"), n
    root = math.sqrt(disc)
    return ratio, float((b - root) / a), float((b + root) / a), n


def seed_resamples(n: int, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """Row indices (1 + n_boot, n) of a bootstrap over n seeds: row 0 takes every seed once (the
    estimate), the others n seeds drawn with replacement (``numpy`` generator seeded with ``seed``)."""
    return np.concatenate([np.arange(n)[None], np.random.default_rng(seed).integers(0, n, (n_boot, n))])


def loglog_slope(xs, per_seed, n_boot: int = 2000, seed: int = 0) -> Bootstrap:
    """Least-squares slope of log(mean over seeds) on log x, with a bootstrap over seeds.

    ``per_seed``: array (seeds, len(xs)) of positive values, one row per seed (the same seeds at
    every x); the estimate uses the means over all rows, each bootstrap sample the means over
    rows drawn with replacement (``numpy`` generator seeded with ``seed``).
    """
    lx = np.log(np.asarray(xs, dtype=float))
    Y = np.asarray(per_seed, dtype=float)
    means = Y[seed_resamples(Y.shape[0], n_boot, seed)].mean(axis=1)
    ly = np.log(np.where(means > 0, means, np.nan))
    cx = lx - lx.mean()
    slopes = (ly - ly.mean(axis=1, keepdims=True)) @ cx / (cx @ cx)
    return Bootstrap(slopes[0], slopes[1:])


def sd_log_ratio(a, b, n_boot: int = 4000, seed: int = 0) -> Bootstrap:
    """log(sd(a) / sd(b)) of paired samples (sample standard deviations, ddof=1), with a bootstrap
    that resamples the pairs (``numpy`` generator seeded with ``seed``): the spread of one curve's
    values against another's over the same seeds."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 3:
        return Bootstrap(float("nan"), [])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, a.size, size=(n_boot, a.size))
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.log(a.std(ddof=1) / b.std(ddof=1))
        samples = np.log(a[draws].std(axis=1, ddof=1) / b[draws].std(axis=1, ddof=1))
    return Bootstrap(est, samples)


def collapse_rate(values, threshold):
    """(count, n) of the finite values above ``threshold`` (runs that collapsed)."""
    v = _finite(values)
    return int(np.sum(v > threshold)), int(v.size)


# --------------------------------------------------------------------------------------------
# fits
# --------------------------------------------------------------------------------------------
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


def fit_through_origin_censored(x, y, bound, r2_if_flat: float = float("nan")):
    """:func:`fit_through_origin` where some y are censored from below: a finite y adds (y - c x)^2,
    a NaN y with a finite ``bound`` (y above the bound, e.g. a minimal M beyond the grid) adds
    max(0, bound - c x)^2, so only a line below the bound is penalised (x > 0).  The slope is the
    exact minimum of this convex piecewise quadratic (found per interval between the bounds' slopes
    b / x); R^2 = 1 - SS_res / SS_tot with SS_tot over the finite y and the bounds."""
    x, y, b = (np.asarray(v, dtype=float) for v in (x, y, bound))
    obs = np.isfinite(x) & np.isfinite(y)
    cen = np.isfinite(x) & ~np.isfinite(y) & np.isfinite(b) & (x > 0)
    xo, yo, xc, bc = x[obs], y[obs], x[cen], b[cen]
    if not cen.any():
        return fit_through_origin(xo, yo, r2_if_flat)
    kinks = np.sort(bc / xc)                   # the censored point j is active (penalised) while c < b_j / x_j
    edges = np.concatenate([[-np.inf], kinks, [np.inf]])
    c = float(kinks[-1])                       # no observed point, every bound met: the smallest such slope
    for lo, hi in zip(edges[:-1], edges[1:]):
        act = bc / xc >= hi
        den = np.sum(xo * xo) + np.sum(xc[act] ** 2)
        if den > 0:
            cand = (np.sum(xo * yo) + np.sum(xc[act] * bc[act])) / den
            if lo <= cand <= hi:
                c = float(cand)
                break
    ss_res = float(np.sum((yo - c * xo) ** 2) + np.sum(np.maximum(0.0, bc - c * xc) ** 2))
    v = np.concatenate([yo, bc])
    ss_tot = float(np.sum((v - v.mean()) ** 2))
    return c, 1.0 - ss_res / ss_tot if ss_tot > 0 else r2_if_flat


def censoring_bound(df, bound: str = "M_max_tried") -> np.ndarray:
    """A table's censoring bound per row as floats (the largest M tried, which a NaN minimal M lies
    above); NaN everywhere when the table has no ``bound`` column."""
    return df[bound].to_numpy(float) if bound in df.columns else np.full(len(df), np.nan)


def fit_table_censored(df, x: str, y: str, bound: str = "M_max_tried", r2_if_flat: float = float("nan")):
    """:func:`fit_through_origin_censored` on a table's columns: a NaN ``y`` is censored above the
    row's ``bound`` column where the table has one (a minimal M beyond the grid), else left out."""
    return fit_through_origin_censored(df[x], df[y], censoring_bound(df, bound), r2_if_flat)
