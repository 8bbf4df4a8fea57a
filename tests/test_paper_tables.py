"""The claim-bearing columns of the static tables: the Monte-Carlo isotropy bounds of Table 5 of
Ensemble++ (theory.isotropy_error) and the table that carries them."""
import numpy as np
import pytest
from scipy.stats import norm

from ensemble_bandits import stats, theory
from ensemble_bandits.paper_tables import epp_table5


def test_isotropy_bounds_exact_case():
    # rows +-sqrt(2) e_i, each once: the empirical second moment is exactly I, entries (1,1) and (2,2) vary
    Z = np.sqrt(2.0) * np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    err = theory.isotropy_error(Z)
    se = np.sqrt((4.0 * 2 / 4 - 1.0) / 3)                      # var of zeta_1^2 (values 2, 2, 0, 0) over n - 1
    assert err["max_abs_error"] == pytest.approx(0.0, abs=1e-12) and err["lower"] == 0.0
    assert err["upper"] == pytest.approx(norm.isf(stats.ALPHA) * se)


def test_isotropy_bounds_see_a_wrong_scale():
    Z = 1.2 * np.random.default_rng(0).standard_normal((20_000, 4))   # E[zeta zeta^T] = 1.44 I
    err = theory.isotropy_error(Z)
    assert err["lower"] <= err["max_abs_error"] <= err["upper"]
    assert err["lower"] > 0.4 and err["upper"] < 0.5


def test_table5_isotropy_columns():
    table = epp_table5(n=20_000)
    lo, hi = table["its lower bound, Bonferroni over entries (M=16)"], table["its 95 % upper bound (M=16)"]
    point = table["MC max|E[ζζᵀ] − I| (M=16)"]
    assert list(table["Distribution"]) == ["Sphere", "Cube", "Gaussian", "Coordinate", "s-sparse"]
    assert (lo <= point).all() and (point <= hi).all() and (table["Isotropy"] == "Yes").all()
