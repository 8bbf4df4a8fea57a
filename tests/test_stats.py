"""The statistics shared by the claims, the derived tables and the plots (stats.py).

The bands and the fit through the origin are also tested through ``plotting`` (test_plotting.py)
and the paired interval through ``claims`` (test_claims.py); here: what those do not reach.
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


def test_loglog_slope_of_a_power_law():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    slope, lo, hi = stats.loglog_slope(x, 3.0 * x ** 0.5)
    assert slope == pytest.approx(0.5) and lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    noisy = 3.0 * x ** 0.5 * np.array([1.1, 0.9, 1.05, 0.95, 1.0])
    slope, lo, hi = stats.loglog_slope(x, noisy)
    assert lo < slope < hi


def test_fit_through_origin_flat_y():
    c, r2 = stats.fit_through_origin([1.0, 2.0, 3.0], [4.0, 4.0, 4.0])
    assert c == pytest.approx(4.0 * 6 / 14) and np.isnan(r2)
    assert stats.fit_through_origin([1.0, 2.0, 3.0], [4.0, 4.0, 4.0], r2_if_flat=1.0)[1] == 1.0
    assert all(np.isnan(stats.fit_through_origin([0.0, 0.0], [1.0, 2.0])))


def test_unknown_band():
    with pytest.raises(ValueError, match="known bands: se, sd, ci95"):
        stats.halfwidth(1.0, 3, "iqr")
