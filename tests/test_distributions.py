"""Scalar reward perturbations against their exact laws, and the rule that a family-specific
hyper-parameter (binomial_n, init_scale) given to a family that does not take it is an error.

Every scalar family is checked, for every n it accepts (binomial: a range of n across the 64-bit word
boundaries of the popcount sampler; the other families take no n), on its exact support and on its
moments E x, E x^2, E x^4 (and, for the lattice families, the frequency of every support point),
both for single draws and for the per-arm sums LinPHE uses.  The reference values are exact (closed
forms, or the binomial pmf); every tolerance is 5 standard errors computed from the *exact*
variance of the estimator (E x^8 - (E x^4)^2 for the fourth moment), never from the sample; seeds
are fixed, so the tests are deterministic.  Where the estimator has zero variance (Rademacher:
x^2 = s^2 always) the check is exact.

The bug these tests pin down: lines-dist gave every variant ``binomial_n: 4`` and the Rademacher
family used it, so "Rademacher" drew centred Binomial(4) values (identical regret to the binomial
variant).
"""
from math import comb, sqrt

import numpy as np
import pytest
from scipy import stats

from ensemble_bandits import distributions as dist
from ensemble_bandits import registry
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.rng import BlockStream

SCALE = 0.37
BINOMIAL_NS = [1, 2, 3, 4, 5, 7, 8, 16, 63, 64, 65, 200]
CASES = ([("gaussian", None), ("rademacher", None), ("uniform", None), ("none", None)]
         + [("binomial", n) for n in BINOMIAL_NS])
Z = 5.0  # standard errors


def lattice_pmf(name, n, s):
    """Support points and probabilities of the lattice families (rademacher = binomial, n = 1)."""
    n = 1 if name == "rademacher" else n
    k = np.arange(n + 1)
    return (k - n / 2) * 2 * s / sqrt(n), np.array([comb(n, int(j)) / 2 ** n for j in k], dtype=float)


def exact_moments(name, n, s, order=8):
    """E x^j, j = 0..order, of one draw (exact)."""
    m = np.zeros(order + 1)
    m[0] = 1.0
    if name == "none":
        return m
    for j in range(2, order + 1, 2):
        if name == "gaussian":
            m[j] = s ** j * np.prod(np.arange(j - 1, 0, -2))          # (j-1)!! s^j
        elif name == "uniform":
            m[j] = (sqrt(3) * s) ** j / (j + 1)                       # U[-a, a], a = sqrt(3) s
        else:
            pts, p = lattice_pmf(name, n, s)
            m[j] = float(np.sum(p * pts ** j))
    return m


def sum_moments(m, pulls):
    """E S^j of the sum S of ``pulls`` i.i.d. draws with moments m (exact, by convolution)."""
    out = np.zeros_like(m)
    out[0] = 1.0
    for _ in range(pulls):
        out = np.array([sum(comb(j, i) * out[i] * m[j - i] for i in range(j + 1)) for j in range(len(m))])
    return out


def check_moments(x, m, what):
    """Sample mean, E x^2 and E x^4 against exact m (axis 0 = samples), 5 exact standard errors."""
    N = x.shape[0]
    for j in (1, 2, 4):
        var = m[2 * j] - m[j] ** 2                        # exact variance of x^j
        err = np.abs(np.mean(x ** j, axis=0) - m[j])
        tol = Z * np.sqrt(var / N) + 1e-12 * max(m[j], 1e-300)
        assert np.all(err <= tol), f"{what}: E x^{j} off by {err} (tolerance {tol}, exact {m[j]})"


def check_lattice(x, pts, p, what):
    """Values on the exact support; the frequency of every support point within 5 standard errors."""
    N = x.size
    pos = (x.ravel() - pts[0]) / (pts[1] - pts[0])              # equally spaced support: its index
    k = np.rint(pos).astype(np.int64)
    assert np.all(np.abs(pos - k) < 1e-9 * len(pts)) and k.min() >= 0 and k.max() < len(pts), f"{what}: value off the support"
    counts = np.bincount(k, minlength=len(pts))
    sd = np.sqrt(N * p * (1 - p))
    assert np.all(np.abs(counts - N * p) <= Z * sd + 1), f"{what}: frequencies {counts} vs {N * p}"
    seen = set(np.unique(k))
    likely = {i for i in range(len(pts)) if N * p[i] >= 30}  # P(unseen) <= e^-30
    assert likely <= seen, f"{what}: support points {sorted(likely - seen)} never drawn"


@pytest.mark.parametrize("name,n", CASES)
def test_scalar_draws_exact_support_and_moments(name, n):
    p = dist.ScalarPerturbation(name, SCALE, n)
    st = BlockStream(list(range(40)), f"exact/{name}/{n}", p.kind)
    x = np.concatenate([p.draw(st, 2500) for _ in range(2)], axis=1).ravel()   # 200,000 draws
    assert x.shape == (200_000,)
    m = exact_moments(name, n, SCALE)
    what = f"{name} (n = {n})"
    if name == "none":
        assert np.all(x == 0)
        return
    check_moments(x, m, what)
    if name in ("rademacher", "binomial"):
        pts, pmf = lattice_pmf(name, n, SCALE)
        check_lattice(x, pts, pmf, what)
    if name == "rademacher" or (name == "binomial" and n == 1):
        assert set(np.unique(x)) == {-SCALE, SCALE}                            # exactly +-s
        assert np.all(x ** 2 == SCALE ** 2)
    if name == "uniform":
        a = sqrt(3) * SCALE
        assert -a <= x.min() and x.max() <= a
        assert x.min() < -a * (1 - 1e-3) and x.max() > a * (1 - 1e-3)             # fills [-a, a]
    if name == "gaussian":
        assert np.abs(x).max() > 4 * SCALE                                     # unbounded support
    # the fourth moment tells the families apart (Rademacher s^4, binomial (3 - 2/n) s^4, uniform
    # 9/5 s^4, Gaussian 3 s^4): the lines-dist bug gave "Rademacher" the binomial's 2.5 s^4
    kurtosis = {"gaussian": 3.0, "rademacher": 1.0, "uniform": 1.8}.get(name, 3.0 - 2.0 / (n or 1))
    assert m[4] == pytest.approx(kurtosis * SCALE ** 4, rel=1e-12)


@pytest.mark.parametrize("name,n", CASES)
def test_arm_sums_exact_law(name, n):
    """Per-arm sums of ``pulls`` draws: exact moments of the sum; lattice families on the exact
    centred Binomial(n * pulls) support with exact frequencies."""
    p = dist.ScalarPerturbation(name, SCALE, n)
    pulls = np.array([0, 1, 2, 3, 9, 40])
    B, reps = 250, 16
    st = BlockStream(list(range(B)), f"armsum/{name}/{n}", p.kind)
    x = np.concatenate([p.arm_sums(st, np.tile(pulls, (B, 1)), int(pulls.sum())) for _ in range(reps)])
    assert x.shape == (B * reps, len(pulls))
    assert np.all(x[:, 0] == 0)
    m = exact_moments(name, n, SCALE)
    for k, c in enumerate(pulls[1:], start=1):
        what = f"{name} (n = {n}), sum of {c}"
        if name == "none":
            assert np.all(x[:, k] == 0)
            continue
        check_moments(x[:, k], sum_moments(m, int(c)), what)
        if name in ("rademacher", "binomial"):
            trials = (1 if name == "rademacher" else n) * int(c)
            j = np.arange(trials + 1)
            step = 2 * SCALE / sqrt(1 if name == "rademacher" else n)
            pts = (j - trials / 2) * step
            pmf = stats.binom.pmf(j, trials, 0.5)
            check_lattice(x[:, k], pts, pmf, what)


@pytest.mark.parametrize("name", ["gaussian", "rademacher", "uniform", "none"])
@pytest.mark.parametrize("n", [2, 4, 10])
def test_n_applies_to_binomial_only(name, n):
    with pytest.raises(ValueError, match=f"n = {n} does not apply to the {name} perturbation: only binomial"):
        dist.ScalarPerturbation(name, 0.5, n)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_binomial_n_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="binomial perturbation needs"):
        dist.ScalarPerturbation("binomial", 0.5, bad)


def test_default_n_is_one_trial():
    assert dist.ScalarPerturbation("binomial", 0.5).n == 1
    assert dist.ScalarPerturbation("binomial", 0.5, 4.0).n == 4
    # n is the binomial's alone: even n = 1 with another family is an error, not silently ignored
    for name in ("gaussian", "rademacher", "uniform", "none"):
        with pytest.raises(ValueError, match=f"does not apply to the {name} perturbation"):
            dist.ScalarPerturbation(name, 0.5, 1)


def test_agents_refuse_binomial_n_with_another_family():
    """At construction (the agent builds its perturbation): the lines-dist bug cannot come back."""
    from ensemble_bandits.protocol import Setting

    setting = Setting(B=1, d=3, K=5, action_space="finite")
    for name in ("ensemble_sampling", "glinphe"):
        with pytest.raises(ValueError, match="n = 4 does not apply to the rademacher perturbation"):
            AGENTS[name](setting, [0], 10, perturbation="rademacher", binomial_n=4)
        AGENTS[name](setting, [0], 10, perturbation="binomial", binomial_n=4)


# --------------------------------------------------------------------------------------
# the job-graph form: which family a spec's family-specific hyper-parameters belong to


@pytest.mark.parametrize("spec,match", [
    ({"name": "ensemble_sampling", "perturbation": "rademacher", "binomial_n": 4},
     r"binomial_n = 4 \(the number of trials n of the centred binomial\) does not apply to perturbation: rademacher"),
    ({"name": "ensemble_sampling", "binomial_n": 4}, "does not apply to perturbation: gaussian"),   # the default
    ({"name": "glinphe", "perturbation": "uniform", "binomial_n": 1}, "does not apply to perturbation: uniform"),
    ({"name": "ensemble_sampling", "init": "none", "init_scale": 0.3}, "init_scale = 0.3 .* does not apply to init: none"),
    ({"name": "glinphe", "init_scale": 0.3}, "does not apply to init: none"),                       # glinphe's default
])
def test_check_spec_refuses_inapplicable(spec, match):
    cls = AGENTS[spec["name"]]
    with pytest.raises(ValueError, match=match):
        dist.check_spec(cls, {k: v for k, v in spec.items() if k != "name"})


@pytest.mark.parametrize("spec", [
    {"name": "ensemble_sampling", "perturbation": "binomial", "binomial_n": 4},
    {"name": "glinphe", "perturbation": "binomial", "binomial_n": 4, "init": "gaussian", "init_scale": 0.2},
    {"name": "ensemble_sampling", "init_scale": 0.3},                                   # default init: gaussian
    {"name": "ensemble_sampling", "perturbation": "rademacher", "init": "sphere"},
    {"name": "lints", "prior_var": 1.0},
])
def test_check_spec_accepts_applicable(spec):
    dist.check_spec(AGENTS[spec["name"]], {k: v for k, v in spec.items() if k != "name"})


def test_every_registered_cell_gives_each_family_only_its_own_parameters(entries, config):
    """The live registry as data: every cell of every live figure, at every scale, gives each distribution family only
    its own parameters."""
    from ensemble_bandits.coupling import EXPERIMENTS

    n = 0
    for fid, entry in entries.items():
        for scale in registry.SCALES:
            for s in registry.resolve(entry, scale, config["scales"])["series"]:
                cell = s["cell"]
                if "experiment" in cell:
                    spec = dict(cell["experiment"])
                    cls = EXPERIMENTS[spec.pop("name")]
                else:
                    spec = dict(cell["agent"])
                    cls = AGENTS[spec.pop("name")]
                dist.check_spec(cls, spec)
                n += 1
    assert n > 100


def test_lines_dist_rademacher_is_rademacher(entries, config):
    """The live registry as data.

    The lines-dist variants: only the binomial takes binomial_n, so the Rademacher and binomial
    cells differ, and each family's agents draw their own law."""
    fig = registry.resolve(entries["lines-dist"], "paper", config["scales"])
    cells = {s["curve"]: s["cell"] for s in fig["series"]}
    for method in ("ES (m = 10)", "ES (m = 100)", "LinPHE"):
        for fam in ("gaussian", "rademacher", "uniform", "binomial"):
            agent = cells[f"{method} / {fam}"]["agent"]
            assert agent["perturbation"] == fam
            assert ("binomial_n" in agent) == (fam == "binomial")
        assert cells[f"{method} / binomial"]["agent"]["binomial_n"] == 4
    assert len({s["key"] for s in fig["series"]}) == len(fig["series"])
