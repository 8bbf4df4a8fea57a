"""The group-sequential design (sequential.py) and the look-by-look claim rule (claims/looks.py):
boundaries against published tables and Monte Carlo, the decision at a look on synthetic
comparisons, the curves that go on, and the whole protocol replayed on the project's own agents.
"""
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from ensemble_bandits import runner, sequential as seq
from ensemble_bandits.claims import FAILED, INCONCLUSIVE, REPRODUCED, ClaimError, Comparison
from ensemble_bandits.claims.looks import DECIDED, FUTILE, UNDECIDED, claim_comparisons, curves_to_continue
from ensemble_bandits.claims.looks import decide_look, run_looks
from ensemble_bandits.claims.paired import compare_diff

EQUAL = {K: np.arange(1, K + 1) / K for K in (2, 3, 4, 5)}

# Lan-DeMets O'Brien-Fleming-type spending, one-sided alpha = 0.025, K equally spaced looks: the upper
# bounds of gsDesign(k = K, test.type = 1, alpha = 0.025, sfu = sfLDOF) (ldbounds and rpact agree), to
# the 4 decimals gsDesign prints.  Quoted from memory of that output, not from a file at hand; each
# first bound is also exact in closed form (Phi^-1(1 - alpha(t_1))), the rest are checked by Monte
# Carlo below, and SeqBounds.jl's printed table (next test) pins the same method to 5 decimals.
LAN_DEMETS_OBF = {
    2: (2.9626, 1.9686),
    3: (3.7103, 2.5114, 1.9930),
    4: (4.3326, 2.9631, 2.3590, 2.0141),
    5: (4.8769, 3.3569, 2.6803, 2.2898, 2.0310),
}
# The classical O'Brien-Fleming boundaries c_k = C_B(K) sqrt(K / k) (not a spending function), with
# C_B(K) from Jennison & Turnbull (2000), Table 2.3, two-sided 0.05 = one-sided 0.025: they spend
# exactly 0.025 in all, so the recursion must give that total.  (These are the numbers 2.797/1.977,
# 3.471/2.454/2.004, 4.049/2.863/2.337/2.024, 4.562/... sometimes quoted for Lan-DeMets: they are not;
# gsDesign's own unit test runit.output.R checks gsDesign(k = 4, sfu = "OF") against 4.05/2.86/2.34/2.02.)
CLASSICAL_OBF = {2: 1.977, 3: 2.004, 4: 2.024, 5: 2.040}


@pytest.mark.parametrize("K", sorted(LAN_DEMETS_OBF))
def test_lan_demets_obrien_fleming_boundaries_match_the_published_table(K):
    assert seq.boundaries(EQUAL[K]) == pytest.approx(LAN_DEMETS_OBF[K], abs=6e-4)


@pytest.mark.parametrize("K", sorted(CLASSICAL_OBF))
def test_classical_obrien_fleming_boundaries_spend_the_level(K):
    k = np.arange(1, K + 1)
    assert seq.crossing(CLASSICAL_OBF[K] * np.sqrt(K / k), EQUAL[K]).sum() == pytest.approx(0.025, abs=1e-4)


def test_one_sided_005_table_of_seqbounds():
    """The table printed in the README of SeqBounds.jl (PharmCat/SeqBounds.jl): O'Brien-Fleming
    spending, one-sided 0.05, looks at 25/50/75/100 %: z = 3.74955, 2.53993, 2.01604, 1.72014, nominal
    p = 8.85754e-5, 0.00554366, 0.0218979, 0.0427037.  Its default grid (h = 0.05) leaves the last two
    about 4e-5 low: the exact values are 2.01607, 1.72018 (test_crossing_against_genz)."""
    z = seq.boundaries([0.25, 0.5, 0.75, 1.0], alpha=0.05)
    assert z == pytest.approx([3.74955, 2.53993, 2.01604, 1.72014], abs=6e-5)
    assert norm.sf(z) == pytest.approx([8.85754e-5, 0.00554366, 0.0218979, 0.0427037], rel=1e-3)


def test_crossing_against_genz():
    """Each look's crossing probability P(Z_j < c_j for j < k, Z_k >= c_k) by scipy's multivariate
    normal CDF (Genz; corr(Z_i, Z_j) = sqrt(t_i / t_j)), a method independent of the recursion."""
    from scipy.stats import multivariate_normal

    t = np.array([0.15, 0.4, 0.7, 1.0])
    c = seq.boundaries(t)
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))

    def below(k, bounds):
        return multivariate_normal(np.zeros(k), corr[:k, :k], abseps=1e-12, releps=1e-12, maxpts=10**6).cdf(bounds)

    crossed = seq.crossing(c, t)
    for k in range(2, 5):
        # abs 1e-6: scipy's Genz integration is randomised (a CI run once differed by 1.1e-7)
        assert crossed[k - 1] == pytest.approx(below(k - 1, c[:k - 1]) - below(k, c[:k]), abs=1e-6)


@pytest.mark.parametrize("K,total", [(2, 0.042), (4, 0.063), (10, 0.097), (20, 0.124)])
def test_repeated_testing_at_the_unadjusted_level(K, total):
    """gsDesign's unit test runit.output.R (from K. Anderson's 2008 Deming presentation): testing K
    times at equal information increments at the unadjusted 1.96, stopping at +-1.96, crosses the
    upper bound with total probability 0.042, 0.063, 0.097, 0.124 (3 decimals)."""
    c = np.full(K, norm.isf(0.025))
    assert round(seq.crossing(c, np.arange(1, K + 1) / K, lower=-c).sum(), 3) == total


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
def test_first_boundary_is_closed_form_and_the_spending_is_spent(spending):
    t = [0.1, 0.3, 0.55, 1.0]
    spend = seq.SPENDING[spending]
    z = seq.boundaries(t, spending=spending)
    assert z[0] == pytest.approx(norm.isf(spend(0.1)), abs=1e-8)
    assert np.cumsum(seq.crossing(z, t)) == pytest.approx(spend(np.array(t)), abs=1e-9)
    assert seq.boundaries([1.0]) == pytest.approx([norm.isf(0.025)])


def _brownian_z(fractions, drift, paths, seed):
    t = np.asarray(fractions)
    dt = np.diff(np.concatenate([[0.0], t]))
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.standard_normal((paths, t.size)) * np.sqrt(dt) + drift * dt, axis=1) / np.sqrt(t)


@pytest.mark.parametrize("looks,spending", [((10, 20, 40, 80), "obrien-fleming"), ((10, 20, 50), "obrien-fleming"),
                                            ((10, 20, 50), "pocock")])
def test_crossing_probabilities_by_monte_carlo(looks, spending):
    """Brownian paths at the looks: under the null the total crossing is alpha; under a drift it is
    the design's power, with and without the futility band."""
    design = seq.Design(looks, spending=spending)
    paths = 400_000
    for drift, seed in ((0.0, 1), (3.0, 2)):
        Z = _brownian_z(design.fractions, drift, paths, seed)
        for optimism in (None, seq.OPTIMISM):
            band = design.futility_z(optimism) if optimism is not None else np.full(design.K, -np.inf)
            alive, crossed = np.ones(paths, bool), 0
            for k in range(design.K):
                crossed += np.sum(alive & (Z[:, k] >= design.z[k]))
                alive &= (np.abs(Z[:, k]) < design.z[k]) & ~(np.abs(Z[:, k]) < band[k])
            expected = design.power(drift, optimism)
            assert crossed / paths == pytest.approx(expected, abs=4 * math.sqrt(expected * (1 - expected) / paths))
    assert seq.crossing(design.z, design.fractions).sum() == pytest.approx(0.025, abs=1e-9)
    assert design.power(0.0) <= 0.025       # a path stopped against the claim cannot cross later


@pytest.mark.parametrize("looks", [(10, 20, 50), (10, 20, 40, 80)])
def test_holm_at_the_nominal_level_is_within_one_percent(looks):
    """Holm's step at alpha_k / m is not exactly the level-alpha/m design: a hypothesis tested at
    alpha_k / m at every look crosses under its null with probability within 1 % of alpha / m (m <= 5)."""
    design = seq.Design(looks)
    for m in (2, 3, 5):
        level = seq.crossing(norm.isf(design.nominal / m), design.fractions).sum()
        assert 0.025 / m <= level <= 1.01 * 0.025 / m


def test_design_table_and_doubling():
    design = seq.Design.doubling(25)
    assert design.looks == (25, 50, 100, 200) and design.K == 4
    rows = design.table()
    assert [r[1] for r in rows] == [25, 50, 100, 200] and rows[-1][5] == pytest.approx(0.025)
    assert all(r[4] == pytest.approx(norm.sf(r[3])) for r in rows)
    with pytest.raises(ValueError):
        seq.Design((20, 10))
    with pytest.raises(ValueError):
        seq.boundaries([0.5, 0.5, 1.0])


def test_drift_for_a_power():
    """Without futility a design needs a little more drift than the fixed-sample test (z_0.025 +
    z_0.1 = 3.242 for 90 %); the futility stops cost some more."""
    design = seq.Design.doubling(10)
    fixed = norm.isf(0.025) + norm.isf(0.1)
    plain, stopped = design.drift_for(0.9, None), design.drift_for(0.9)
    assert fixed < plain < 1.01 * fixed < stopped
    assert design.power(stopped, seq.OPTIMISM) == pytest.approx(0.9, abs=1e-6)


def test_a_fixed_test_before_the_looks_spends_more():
    """A finding already tested at n0 at the full 2.5 % and topped up by looks n0 x {1, 2, 4, 8}
    (the first look being that test) is decided against its null with probability about 4.7 %, not
    2.5 %: docs/sequential.md, "Findings already tested at a fixed n"."""
    design = seq.Design.doubling(10)
    z = design.z.copy()
    z[0] = norm.isf(0.025)
    assert seq.crossing(z, design.fractions).sum() == pytest.approx(0.0470, abs=2e-4)


def test_seeds_needed_is_the_futility_boundary():
    design = seq.Design((10, 20, 50))
    low = design.futility_z()
    assert low[-1] == -np.inf
    for k in (1, 2):
        above, below = norm.sf(low[k - 1] + 1e-6), norm.sf(low[k - 1] - 1e-6)
        assert seq.seeds_needed(above, design, k, seq.OPTIMISM) <= 50 < seq.seeds_needed(below, design, k, seq.OPTIMISM)
    assert seq.seeds_needed(0.5, design, 1) == math.inf
    assert seq.seeds_needed(norm.sf(design.z[-1]), design, 1) == 10


# --------------------------------------------------------------------------------------------
# the decision at a look
# --------------------------------------------------------------------------------------------
def comp(label, z_for, z_against=None):
    """A comparison whose one-sided tests have normal scores z_for (for the claim) and z_against."""
    z_against = -z_for if z_against is None else z_against
    return Comparison(label, float(norm.sf(z_for)), float(norm.sf(z_against)))


DESIGN = seq.Design((10, 20, 40, 80))   # z = 6.23, 4.33, 2.96, 1.97


def test_a_comparison_is_decided_by_the_looks_boundary():
    d = decide_look(DESIGN, 3, [comp("A - B", 3.0)])
    assert (d.status, d.verdict, d.look, d.looks, d.n) == (DECIDED, REPRODUCED, 3, 4, 40)
    assert d.boundary == pytest.approx(2.9631, abs=1e-3) and d.text == "reproduced, decided at look 3 of 4 (n = 40)"
    d = decide_look(DESIGN, 2, [comp("A - B", 3.0)])        # 3 < 4.33: not yet
    assert (d.status, d.verdict, d.settled) == (UNDECIDED, INCONCLUSIVE, (False,))
    assert d.text == "undecided at look 2 of 4 (n = 20)"
    d = decide_look(DESIGN, 2, [comp("A - B", -4.5)])       # against
    assert (d.status, d.verdict) == (DECIDED, FAILED)


def test_holm_and_equivalence_use_the_nominal_level():
    """Two comparisons against the claim at z = 2.9 and 3.1 at look 4 (alpha_4 = 0.0245): Holm
    multiplies the smaller p by 2 (0.0019 -> 0.0039) and decides; at look 3 (0.0015) it does not.
    A TOST comparison counts as decided for when both one-sided p are at alpha_k."""
    pair = [comp("A - B", -2.9), comp("A - C", -3.1)]
    assert decide_look(DESIGN, 4, pair).verdict == FAILED
    assert decide_look(DESIGN, 3, pair).status == UNDECIDED
    two_sides = [norm.sf(3.0), norm.sf(3.2)]                 # p of "> -margin" and of "< +margin"
    similar = Comparison("A ~ B", max(two_sides), min(norm.cdf(3.0), norm.cdf(3.2)))
    assert decide_look(DESIGN, 3, [similar]).verdict == REPRODUCED
    assert decide_look(DESIGN, 2, [similar]).status == UNDECIDED


def test_futility_and_budget():
    d = decide_look(DESIGN, 3, [comp("A - B", 0.1)])        # z + 0.84 < 1.97 sqrt(1/2) = 1.39 both ways
    assert (d.status, d.verdict, d.settled) == (FUTILE, INCONCLUSIVE, (True,))
    assert d.text == "inconclusive (futile) at look 3 of 4 (n = 40)"
    assert decide_look(DESIGN, 3, [comp("A - B", 1.0)]).status == UNDECIDED    # 1.84 > 1.39 for it
    assert decide_look(DESIGN, 3, [comp("A - B", -1.0)]).status == UNDECIDED   # ... or against it
    d = decide_look(DESIGN, 4, [comp("A - B", 0.1)])
    assert (d.status, d.text) == (UNDECIDED, "inconclusive (budget) at look 4 of 4 (n = 80)")
    # one comparison decided for, one futile for the claim and not against it: futile
    d = decide_look(DESIGN, 3, [comp("A - B", 3.5), comp("A - C", 0.2)])
    assert d.status == FUTILE
    # ... but one that may still be decided against keeps the claim open
    assert decide_look(DESIGN, 3, [comp("A - B", -1.5), comp("A - C", 0.2)]).status == UNDECIDED


def test_run_looks_freezes_comparisons_decided_early():
    """A - B decided at look 2 stays decided although later seeds would undo it; the claim is
    reproduced at look 3 when A - C is decided."""
    by_n = {10: [comp("A - B", 1.0), comp("A - C", 1.0)], 20: [comp("A - B", 4.5), comp("A - C", 2.0)],
            40: [comp("A - B", 0.5), comp("A - C", 3.0)], 80: [comp("A - B", 0.5), comp("A - C", 3.0)]}
    calls = []

    def at(n):
        calls.append(n)
        return by_n[n]

    d = run_looks(DESIGN, at)
    assert (d.status, d.verdict, d.look, d.n, calls) == (DECIDED, REPRODUCED, 3, 40, [10, 20, 40])
    assert run_looks(DESIGN, at, available=30).text == "undecided at look 2 of 4 (n = 20)"
    assert run_looks(DESIGN, at, available=5) is None
    undecided = decide_look(DESIGN, 2, by_n[20])
    assert undecided.settled == (True, False)


def test_curves_to_continue():
    d1 = decide_look(DESIGN, 2, [comp("A - B", 4.5), comp("A - C", 1.0)])    # A - B settled, A - C open
    d2 = decide_look(DESIGN, 2, [comp("D - B", 5.0)])                          # claim decided
    claims = [(d1, [("A", "B"), ("A", "C")]), (d2, [("D", "B")])]
    assert curves_to_continue(claims) == {"A", "C"}
    assert curves_to_continue([(d2, [("D", "B")])]) == set()


def test_a_registry_claim_in_looks_and_its_curves():
    """A registry claim "A outperforms B and C" on a figure table of 80 seeds: A - B (a large gap)
    is decided at look 2, A - C (a small one) at look 4; after look 2 only A and C go on, and a
    "similar" claim on B and D of the same table keeps B going too."""
    rng = np.random.default_rng(5)
    seeds = np.arange(80)
    base = rng.normal(10.0, 1.0, seeds.size)
    regret = {"A": base, "B": base + 3.0 + rng.normal(0, 1.0, seeds.size),
              "C": base + 0.45 + rng.normal(0, 1.0, seeds.size), "D": base + 3.0 + rng.normal(0, 1.0, seeds.size)}
    table = pd.DataFrame([{"panel": "p", "curve": c, "seed": int(s), "t": 100, "regret": float(v[s])}
                          for c, v in regret.items() for s in seeds])
    better = {"checks": [{"fn": "outperforms", "args": {"better": "A", "worse": ["B", "C"]}}]}
    close = {"checks": [{"fn": "similar", "args": {"a": "D", "b": "B", "rel_tol": 0.05}}]}
    assert [c.curves for c in claim_comparisons(table, better, 20)] == [("A", "B"), ("A", "C")]
    at_2 = decide_look(DESIGN, 2, claim_comparisons(table, better, 20))
    assert at_2.status == UNDECIDED and at_2.settled == (True, False)
    d = run_looks(DESIGN, lambda n: claim_comparisons(table, better, n))
    assert (d.verdict, d.look, d.n) == (REPRODUCED, 4, 80)
    same = decide_look(DESIGN, 2, claim_comparisons(table, close, 20))
    assert same.status == UNDECIDED
    claims = [(at_2, [c.curves for c in claim_comparisons(table, better, 20)]), (same, [("D", "B")])]
    assert curves_to_continue(claims) == {"A", "B", "C", "D"}
    assert curves_to_continue(claims[:1]) == {"A", "C"}
    with pytest.raises(ClaimError, match="premise"):
        claim_comparisons(table, {"checks": [{"fn": "premise", "args": {"claim": "x"}}]}, 20)


# --------------------------------------------------------------------------------------------
# the whole protocol replayed on the project's own agents
# --------------------------------------------------------------------------------------------
POOL_CELL = {"env": {"name": "russo_finite", "d": 3, "n_arms": 10}, "agent": {"name": "lints"}, "horizon": 30}


@pytest.fixture(scope="module")
def pool():
    """Final regrets of 4,000 seeds of one small linear cell (LinTS, d = 3, 10 arms, T = 30): about a
    second.  A replay draws its seeds from this pool without replacement: an A/A comparison pairs two
    disjoint sets of seeds of the same agent, so the null holds exactly (the pool's own distribution,
    skewed with a heavy right tail, as final regrets are)."""
    cols = runner.simulate_columns(POOL_CELL, range(4000))
    last = cols["t"] == cols["t"].max()
    return cols["regret"][last]


def replay(design, pool, replays, shift=0.0, relation="better", limit=0.0, seed=0, m=1):
    """Rates (for, against, futile) and the mean seeds of ``replays`` runs of the protocol on a claim of
    ``m`` paired comparisons a - b_j, a and each b_j final regrets of disjoint seed sets, a shifted by
    ``shift``."""
    rng = np.random.default_rng(seed)
    n_max, counts, seeds = design.looks[-1], {REPRODUCED: 0, FAILED: 0, FUTILE: 0}, 0
    for _ in range(replays):
        draw = pool[rng.choice(pool.size, (m + 1) * n_max, replace=False)].reshape(m + 1, n_max)
        diffs = [pd.Series(draw[0] + shift - b) for b in draw[1:]]
        d = run_looks(design, lambda n: [compare_diff(f"a - b{j}", x[:n], relation, limit)[0]
                                         for j, x in enumerate(diffs)])
        key = FUTILE if d.status == FUTILE else d.verdict
        counts[key] = counts.get(key, 0) + 1
        seeds += d.n
    return counts[REPRODUCED] / replays, counts[FAILED] / replays, counts[FUTILE] / replays, seeds / replays


def test_protocol_replays_hold_the_level_and_reach_the_planned_power(pool):
    """2,000 A/A replays of looks at 10/20/40/80 seeds decide for the claim at most at alpha (and against
    it at most at alpha), with a Monte Carlo allowance of 3 standard errors; a shift planned for 90 %
    power at n = 80 (drift 3.24: shift = 3.24 sd(a - b) / sqrt(80)) is decided for at the power the
    recursion gives with the futility stops, within 4 standard errors; an A/A equivalence claim at its
    margin ("similar" within +-shift, the truth on the band's edge) is decided at most at alpha, and a
    claim of two A/A comparisons (a better than b1 and than b2) is decided against, after Holm, at most
    at alpha."""
    design, replays = seq.Design.doubling(10), 2000
    allowance = 3 * math.sqrt(0.025 * 0.975 / replays)
    sd_diff = math.sqrt(2) * pool.std(ddof=1)
    shift = -3.24 * sd_diff / math.sqrt(design.looks[-1])              # a below b: "a better"
    aa = replay(design, pool, replays, seed=1)
    effect = replay(design, pool, replays, shift=shift, seed=2)
    margin = replay(design, pool, replays // 2, shift=-shift, relation="similar", limit=-shift, seed=3)
    holm = replay(design, pool, replays // 2, seed=4, m=2)
    planned = design.power(3.24, seq.OPTIMISM)
    print(f"\nlooks {design.looks}, z {np.round(design.z, 3).tolist()}, {replays} replays each")
    print(f"A/A: decided for {aa[0]:.4f}, against {aa[1]:.4f}, futile {aa[2]:.3f}, mean seeds {aa[3]:.1f}")
    print(f"shift {shift:.3f} (planned power {planned:.3f}; {design.power(3.24):.3f} without futility): "
          f"decided for {effect[0]:.4f}, against {effect[1]:.4f}, futile {effect[2]:.3f}, mean seeds {effect[3]:.1f}")
    print(f"similar at the margin: decided for {margin[0]:.4f}")
    print(f"A/A/A, a better than b1 and b2 (Holm over 2): decided for {holm[0]:.4f}, against {holm[1]:.4f}, "
          f"futile {holm[2]:.3f}, mean seeds {holm[3]:.1f}")
    assert aa[0] <= 0.025 + allowance and aa[1] <= 0.025 + allowance
    assert effect[0] == pytest.approx(planned, abs=4 * math.sqrt(planned * (1 - planned) / replays))
    assert margin[0] <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / (replays // 2))
    assert holm[1] <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / (replays // 2))
