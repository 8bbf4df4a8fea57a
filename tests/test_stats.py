"""The statistics shared by the claims, the derived tables and the plots (stats.py), and the
machinery of the claim decisions, against scipy or exact small cases.

The bands and the fit through the origin are also tested through ``plotting`` (test_plotting.py)
and the checks built on these through ``claims`` (test_claims.py); here: what those do not reach.
"""
import numpy as np
import pandas as pd
import pytest

from ensemble_bandits import stats


def test_final_rows_per_group_and_without_t():
    df = pd.DataFrame({"panel": ["p", "p", "p", "q"], "curve": ["A", "A", "B", "A"], "t": [5, 10, 5, 3],
                       "seed": [0, 0, 0, 0]})
    assert stats.final_rows(df)["t"].tolist() == [10, 5, 3]
    assert stats.final_rows(df, keys=("panel",))["t"].tolist() == [10, 3]
    no_t = df.drop(columns="t")
    assert stats.final_rows(no_t) is no_t


def test_paired_keeps_common_seeds():
    a = pd.Series([1.0, 2.0, 3.0], index=[0, 1, 2])
    b = pd.Series([10.0, 30.0], index=[0, 2])
    pa, pb = stats.paired(a, b)
    assert pa.tolist() == [1.0, 3.0] and pb.tolist() == [10.0, 30.0]


def test_paired_ci_and_ci95_band_agree():
    values = np.array([1.0, 4.0, 2.0, 8.0, 5.0])
    mean, lo, hi, n = stats.paired_ci(pd.Series(values))
    assert (mean, lo, hi) == stats.band(values, "ci95") and n == 5


def test_fit_through_origin_flat_y():
    c, r2 = stats.fit_through_origin([1.0, 2.0, 3.0], [4.0, 4.0, 4.0])
    assert c == pytest.approx(4.0 * 6 / 14) and np.isnan(r2)
    assert stats.fit_through_origin([1.0, 2.0, 3.0], [4.0, 4.0, 4.0], r2_if_flat=1.0)[1] == 1.0
    assert all(np.isnan(stats.fit_through_origin([0.0, 0.0], [1.0, 2.0])))


def test_censored_fit_is_the_exact_minimum():
    """Against a fine grid search of the same objective: (y - c x)^2 for observed y, max(0, b - c x)^2
    for y censored above b."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(3, 10))
        x = rng.uniform(5, 100, n)
        y = 0.7 * x + rng.normal(0, 8, n)
        cen = rng.random(n) < 0.4
        b = np.where(cen, y * rng.uniform(0.5, 1.8, n), np.nan)
        y = np.where(cen, np.nan, y)

        def objective(c):
            return np.nansum((y - c * x) ** 2) + np.sum(np.where(cen, np.maximum(0, b - c * x) ** 2, 0))

        c, r2 = stats.fit_through_origin_censored(x, y, b)
        grid = np.linspace(c - 0.05, c + 0.05, 2001)
        assert objective(c) <= min(objective(g) for g in grid) + 1e-9
        v = np.concatenate([y[~cen], b[cen]])
        assert r2 == pytest.approx(1 - objective(c) / np.sum((v - v.mean()) ** 2))


def test_censored_fit_reduces_to_the_plain_fit_and_penalises_only_a_line_below_the_bound():
    x, y = np.array([10.0, 20.0, 30.0, 40.0]), np.array([7.0, 14.0, 20.0, 29.0])
    plain = stats.fit_through_origin(x, y)
    assert stats.fit_through_origin_censored(x, y, [np.nan] * 4) == plain
    with_low_bound = stats.fit_through_origin_censored([*x, 50.0], [*y, np.nan], [np.nan] * 4 + [20.0])
    assert with_low_bound[0] == pytest.approx(plain[0])           # the line passes above the bound: no cost
    with_high_bound = stats.fit_through_origin_censored([*x, 50.0], [*y, np.nan], [np.nan] * 4 + [64.0])
    assert with_high_bound[0] > plain[0] and with_high_bound[1] < plain[1]
    only_bounds = stats.fit_through_origin_censored([10.0, 20.0], [np.nan, np.nan], [5.0, 30.0])
    assert only_bounds[0] == pytest.approx(1.5)                    # the smallest slope meeting every bound


def test_unknown_band():
    with pytest.raises(ValueError, match="known bands: se, sd, ci95"):
        stats.halfwidth(1.0, 3, "iqr")


# ---------------------------------------------------------------------------------------
# the decision machinery: locations, one-sided and equivalence tests, Holm, ratios, slopes


def test_mean_t_matches_scipy():
    from scipy.stats import ttest_1samp

    x = np.random.default_rng(0).normal(0.3, 1.0, 25)
    loc = stats.MeanT(pd.Series(np.append(x, np.nan)))
    assert loc.n == 25 and loc.estimate == pytest.approx(x.mean())
    for theta in (-0.2, 0.0, 0.5):
        assert loc.p_less(theta) == pytest.approx(ttest_1samp(x, theta, alternative="less").pvalue)
        assert loc.p_greater(theta) == pytest.approx(ttest_1samp(x, theta, alternative="greater").pvalue)
    lo, hi = loc.interval()
    assert loc.p_less(hi) == pytest.approx(stats.ALPHA) and loc.p_greater(lo) == pytest.approx(stats.ALPHA)


def test_mean_t_degenerate_cases():
    assert stats.MeanT([1.0]).interval() == (float("-inf"), float("inf"))
    assert stats.MeanT([1.0]).p_less(5.0) == 1.0                 # one value decides nothing
    flat = stats.MeanT([2.0, 2.0, 2.0])                          # no spread: decided by the value
    assert flat.p_less(3.0) == 0.0 and flat.p_greater(3.0) == 1.0 and flat.p_greater(1.0) == 0.0


def test_signed_rank_null_distribution_small_n():
    # n = 3: T+ takes 0..6 with counts 1, 1, 1, 2, 1, 1, 1 over the 8 sign patterns
    assert stats.signed_rank_cdf(3) == pytest.approx(np.cumsum([1, 1, 1, 2, 1, 1, 1]) / 8)
    assert stats.signed_rank_cdf(0).tolist() == [1.0]


def test_signed_rank_matches_scipy_exact():
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(1)
    for n in (3, 8, 15, 24):
        x = rng.normal(0.4, 1.0, n)
        loc = stats.SignedRank(x)
        for theta in (-0.5, 0.0, 0.3, 1.0):
            for alt, p in (("less", loc.p_less(theta)), ("greater", loc.p_greater(theta))):
                assert p == pytest.approx(wilcoxon(x - theta, alternative=alt, method="exact").pvalue, abs=1e-12)


def test_hodges_lehmann_estimate_and_interval():
    loc = stats.SignedRank([1.0, 2.0, 3.0])       # Walsh averages 1, 1.5, 2, 2, 2.5, 3
    assert loc.estimate == 2.0
    assert loc.interval() == (float("-inf"), float("inf"))   # n = 3 can never reject at 2.5 %
    x = np.random.default_rng(2).standard_t(2, 60)
    loc = stats.SignedRank(x)
    lo, hi = loc.interval()
    # the interval is the set of theta that neither one-sided test rejects (test inversion)
    assert loc.p_less(hi) <= stats.ALPHA < loc.p_less(hi - 1e-9)
    assert loc.p_greater(lo) <= stats.ALPHA < loc.p_greater(lo + 1e-9)


def test_signed_rank_is_not_fooled_by_one_collapse():
    # 40 seeds where A beats B by about 10, one seed where A collapses (+5000)
    rng = np.random.default_rng(3)
    diff = np.append(-10.0 + rng.normal(0, 3, 40), 5000.0)
    assert stats.MeanT(diff).interval()[1] > 0                       # the mean no longer decides
    assert stats.SignedRank(diff).interval()[1] < 0                  # the pseudo-median still does
    assert stats.location(diff, "signed-rank").name == "pseudo-median"
    with pytest.raises(ValueError, match="known: mean, signed-rank"):
        stats.location(diff, "median")


def test_below_above_and_tost():
    loc = stats.MeanT(np.array([0.9, 1.1, 1.0, 0.95, 1.05]))         # mean 1, tight
    assert stats.below(loc, 2.0)[0] < stats.ALPHA < stats.below(loc, 2.0)[1]
    assert stats.above(loc, 0.0)[0] < stats.ALPHA
    p_eq, p_out = stats.tost(loc, -2.0, 2.0)
    assert p_eq < stats.ALPHA and p_out > 0.5
    p_eq, p_out = stats.tost(loc, -0.5, 0.5)                         # the whole interval beyond the band
    assert p_eq > 0.5 and p_out < stats.ALPHA
    lo, hi = loc.interval()
    p_eq, p_out = stats.tost(loc, -hi - 1.0, (lo + hi) / 2)          # the edge inside the interval: neither
    assert p_eq > stats.ALPHA and p_out > stats.ALPHA
    # TOST at ALPHA is the LEVEL interval inside the band
    for band in (hi + 1e-6, hi - 1e-6):
        assert (stats.tost(loc, -band, band)[0] <= stats.ALPHA) == (-band <= lo and hi <= band)


def test_holm_exact_cases():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5]) == pytest.approx([0.5])
    assert stats.holm([0.02, 0.02]) == pytest.approx([0.04, 0.04])
    assert stats.holm([0.6, np.nan, 0.001]) == pytest.approx([1.0, 1.0, 0.003])
    assert stats.holm([]).size == 0


def test_ratio_interval_is_the_inverted_paired_t_test():
    from scipy.stats import ttest_1samp

    rng = np.random.default_rng(4)
    den = 100.0 + rng.normal(0, 10, 30)
    num = 1.5 * den + rng.normal(0, 8, 30)
    ratio, lo, hi, n = stats.ratio_interval(num, den)
    assert n == 30 and ratio == pytest.approx(num.mean() / den.mean()) and lo < 1.5 < hi
    for edge in (lo, hi):   # at each edge the two-sided paired t-test of num - R den sits at 5 %
        assert ttest_1samp(num - edge * den, 0.0).pvalue == pytest.approx(0.05)
    assert stats.ratio_interval(num, rng.normal(0, 10, 30))[1:3] == (float("-inf"), float("inf"))


def test_loglog_slope_bootstrap():
    xs = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    exact = np.tile(3.0 * xs ** 1.5, (10, 1))
    boot = stats.loglog_slope(xs, exact)
    assert boot.estimate == pytest.approx(1.5) and boot.interval() == pytest.approx((1.5, 1.5))
    noisy = 3.0 * xs ** 0.5 * np.exp(np.random.default_rng(5).normal(0, 0.3, (40, 5)))
    boot = stats.loglog_slope(xs, noisy, seed=1)
    lo, hi = boot.interval()
    assert lo < 0.5 < hi and hi - lo < 0.3
    assert stats.loglog_slope(xs, noisy, seed=1).interval() == (lo, hi)       # a fixed seed, the same answer
    assert boot.p_less(hi + 0.05) <= stats.ALPHA and boot.p_greater(lo - 0.05) <= stats.ALPHA


def test_collapse_rate():
    assert stats.collapse_rate([100.0, 2500.0, np.nan, 1999.0, 2001.0], 2000) == (2, 4)


# --------------------------------------------------------------------------------------------
# the bias-corrected and accelerated (BCa) bootstrap interval
# --------------------------------------------------------------------------------------------
def _naive_bca(estimate, samples, jackknife_strata, level=0.95):
    """BCa written out from Efron & Tibshirani (1993, 14.3 and 14.15), with loops: the reference."""
    from statistics import NormalDist

    nd = NormalDist()
    below = sum(1.0 for s in samples if s < estimate) + sum(0.5 for s in samples if s == estimate)
    z0 = nd.inv_cdf(below / len(samples))
    num = den = 0.0
    for values in jackknife_strata:
        n = len(values)
        mean = sum(values) / n
        for v in values:
            u = (n - 1) * (mean - v)
            num += u ** 3 / n ** 3
            den += u ** 2 / n ** 2
    a = num / (6 * den ** 1.5)
    probs = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        z = nd.inv_cdf(q)
        probs.append(nd.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))
    ordered = sorted(samples)

    def quantile(p):                         # numpy's default (linear) quantile
        h = (len(ordered) - 1) * p
        lo = int(np.floor(h))
        return ordered[lo] + (h - lo) * (ordered[min(lo + 1, len(ordered) - 1)] - ordered[lo])

    return quantile(probs[0]), quantile(probs[1]), z0, a


def _jackknife(x, statistic):
    return np.array([statistic(np.delete(x, i, axis=0)) for i in range(len(x))])


def test_bca_matches_a_naive_implementation_one_sample_and_stratified():
    rng = np.random.default_rng(3)
    x = rng.exponential(size=40)
    draws = stats.seed_resamples(x.size, 999, 1)
    means = x[draws].mean(axis=1)
    jack = _jackknife(x, np.mean)
    b = stats.Bootstrap(means[0], means[1:], jack)
    lo, hi, z0, a = _naive_bca(means[0], list(means[1:]), [list(jack)])
    assert b.interval(method="bca") == pytest.approx((lo, hi), rel=1e-12)
    assert b.bias_z0() == pytest.approx(z0, rel=1e-12) and b.acceleration() == pytest.approx(a, rel=1e-12)
    assert a > 0.02                                   # a skewed statistic: the acceleration matters
    # two strata resampled apart (e.g. two panels): difference of means
    y = rng.exponential(scale=2.0, size=25)
    dy = stats.seed_resamples(y.size, 999, 2)
    diff = y[dy].mean(axis=1) - x[draws].mean(axis=1)
    strata = [-_jackknife(x, np.mean), _jackknife(y, np.mean)]
    b2 = stats.Bootstrap(diff[0], diff[1:], strata)
    lo2, hi2, z02, a2 = _naive_bca(diff[0], list(diff[1:]), [list(s) for s in strata])
    assert b2.interval(method="bca") == pytest.approx((lo2, hi2), rel=1e-12)
    assert b2.acceleration() == pytest.approx(a2, rel=1e-12)


@pytest.mark.parametrize("case", ["mean", "ratio of means", "difference of two means"])
def test_bca_agrees_with_scipy(case):
    """On scipy's own bootstrap distribution the interval is scipy's to rounding; on our own
    resamples of the seeds it agrees with scipy's within the Monte Carlo error."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(11)
    x = rng.lognormal(sigma=0.8, size=60)
    y = x + rng.normal(scale=0.5, size=60) + 1.0
    z = rng.gamma(2.0, size=45)
    if case == "mean":
        data, paired, stat = (x,), False, lambda a, axis=-1: np.mean(a, axis=axis)
        jack = _jackknife(x, np.mean)
        ours = x[stats.seed_resamples(x.size, 4000, 5)].mean(axis=1)
    elif case == "ratio of means":
        data, paired = (x, y), True
        stat = lambda a, b, axis=-1: np.mean(a, axis=axis) / np.mean(b, axis=axis)  # noqa: E731
        xy = np.column_stack([x, y])
        jack = _jackknife(xy, lambda v: v[:, 0].mean() / v[:, 1].mean())
        r = xy[stats.seed_resamples(x.size, 4000, 5)].mean(axis=1)
        ours = r[:, 0] / r[:, 1]
    else:
        data, paired = (z, x), False
        stat = lambda a, b, axis=-1: np.mean(a, axis=axis) - np.mean(b, axis=axis)  # noqa: E731
        jack = [_jackknife(z, np.mean), -_jackknife(x, np.mean)]
        ours = (z[stats.seed_resamples(z.size, 4000, 6)].mean(axis=1)
                - x[stats.seed_resamples(x.size, 4000, 7)].mean(axis=1))
    estimate = float(stat(*data))
    res = bootstrap(data, stat, paired=paired, vectorized=True, n_resamples=4000, method="BCa",
                    confidence_level=0.95, random_state=np.random.default_rng(0))
    ref = (res.confidence_interval.low, res.confidence_interval.high)
    same = stats.Bootstrap(estimate, res.bootstrap_distribution, jack).interval(method="bca")
    assert same == pytest.approx(ref, rel=1e-9)
    mine = stats.Bootstrap(ours[0], ours[1:], jack).interval(method="bca")
    width = ref[1] - ref[0]
    assert abs(mine[0] - ref[0]) < 0.08 * width and abs(mine[1] - ref[1]) < 0.08 * width


def test_bca_ties_counted_half_and_degenerate_cases():
    # one below, two tied (counted half): share 2 / 8
    assert stats.bca_bias(1.0, [0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0]) == pytest.approx(stats_norm_ppf(2 / 8))
    assert stats.bca_bias(2.0, [1.0, 3.0]) == 0.0
    assert stats.bca_acceleration([np.ones(5)]) == 0.0               # no spread: no acceleration
    b = stats.Bootstrap(0.0, [1.0, 2.0, 3.0], [0.1, -0.1, 0.0])
    assert b.interval(method="bca") == (float("-inf"), float("inf"))  # every sample above: z0 unbounded
    with pytest.raises(ValueError, match="jackknife"):
        stats.Bootstrap(0.0, [1.0, 2.0]).interval(method="bca")
    with pytest.raises(ValueError, match="unknown bootstrap interval"):
        stats.Bootstrap(0.0, [1.0, 2.0]).interval(method="basic")


def stats_norm_ppf(p):
    from scipy.stats import norm

    return float(norm.ppf(p))


def test_bca_without_bias_or_skew_is_the_percentile_interval_and_the_default_is_unchanged():
    samples = np.concatenate([np.linspace(-3, 3, 401), [0.0]])
    sym = np.array([-1.0, 1.0, -2.0, 2.0])                            # symmetric jackknife: a = 0
    b = stats.Bootstrap(0.0, samples, sym)
    assert b.bias_z0() == 0.0 and b.acceleration() == 0.0
    assert b.interval(method="bca") == pytest.approx(b.interval())
    assert b.interval() == tuple(float(v) for v in np.quantile(samples, [0.025, 0.975]))
    assert stats.Bootstrap(0.0, samples).interval() == b.interval()


def test_bca_cannot_cover_a_point_the_percentile_interval_excludes_without_acceleration():
    """With a = 0 the BCa upper level is Phi(2 z0 + z_0.975): where fewer than 2.5 % of the samples lie below
    the estimate (z0 < -1.96, the percentile interval above the point) it is below that share, so the
    BCa interval lies below the point (epp-fig2b's slope: z0 -2.33)."""
    samples = np.concatenate([np.linspace(-1.0, -0.01, 20), np.linspace(0.5, 3.0, 980)])   # 2 % below 0
    b = stats.Bootstrap(0.0, samples, [np.array([-1.0, 1.0])])
    assert b.interval()[0] > 0.0
    lo, hi = b.interval(method="bca")
    assert hi < 0.0
    assert stats.bca_levels(0.0, samples, [np.array([-1.0, 1.0])])[1] == pytest.approx(
        stats_norm_cdf(2 * b.bias_z0() + 1.959963984540054))


def stats_norm_cdf(z):
    from scipy.stats import norm

    return float(norm.cdf(z))
