"""Closed-form theory quantities of the four papers, and Monte-Carlo checks of P_zeta.

Everything here is a plain formula (numpy/scipy), except the ``mc_*`` estimators at the
end, which draw reference vectors with the library's own sampler
(:func:`ensemble_bandits.distributions.reference`).

* LinPHE (Kveton et al. 2019): Table 1 constants and the Theorem 1 regret bound
  (phe §A.4; paper L174 and L228).
* Linear ensemble sampling (Lee & Oh 2024): beta_T, nu_T, gamma_T, p_N and the
  theoretical ensemble size (lines §B.3, lines §B.5).
* GLM-ES anytime variant: the doubling-trick constant l(gamma, delta, T0, b) and the
  epoch schedule T_i = floor(T0 b^i) (glmes §2.5, glmes §4 Figure 3(b)).
* Ensemble++: anti-concentration constants p(P_zeta), exact tail probabilities
  P(<zeta, v> >= 1), the Lemma 4.2 ensemble-size bounds, and Monte-Carlo estimators of
  isotropy and of tail probabilities (ensplusplus.md T1/T4, T5, epp §5.1, epp §5.3).

Logarithms are natural throughout.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

from .distributions import SPARSITY, VECTOR_FAMILIES, check_name, reference, vector_kind
from .rng import BlockStream
from .stats import ALPHA

# Events {<zeta, v> >= 1} sit on atoms for the discrete families (e.g. Cube at v = e_1);
# both the exact and the Monte-Carlo probabilities count values >= 1 - TAIL_TOL.
TAIL_TOL = 1e-9

# ---------------------------------------------------------------------------------------
# LinPHE (phe §A.4, Table 1 and Theorem 1)


def coordinate_basis(d: int) -> np.ndarray:
    """The lineage code's basis arms {e_1 + e_d, ..., e_{d-1} + e_d, e_d} as rows (phe §A.3)."""
    X = np.eye(d)
    X[:-1, -1] = 1.0
    return X


def phe_lambda(basis: np.ndarray) -> float:
    """Table 1's lambda = lambda_min(G_{d+1})/4 = lambda_min(sum_l X_l X_l^T)/3 over the basis pulls."""
    basis = np.asarray(basis, dtype=float)
    return float(np.linalg.eigvalsh(basis.T @ basis)[0] / 3.0)


def phe_constants(d: int, n: int, K: int, L: float, L_star: float, lam: float, a: int | None = None) -> dict:
    """The constants of Table 1 (phe §A.4): p1, p2, p3, c1, c2, c3 and a.

    a defaults to Table 1's ceil(16 c1^2); pass it to evaluate c2 at another scale.
    """
    c1 = 0.5 * math.sqrt(d * math.log(n + n**2 * L**2 / (d * lam))) + math.sqrt(lam) * L_star
    a = math.ceil(16.0 * c1**2) if a is None else a
    return {
        "p1": 1.0 / n,
        "p2": 1.0 / n**2,
        "p3": (0.5 - 128.0 * c1**2 / n**3) / (16.0 * math.log(n)),
        "c1": c1,
        "c2": math.sqrt(a * math.log(math.sqrt(2.0 * K) * n)),
        "c3": 2.0 * d * math.log(1.0 + n * L**2 / (d * lam)),
        "a": a,
    }


def phe_theorem1_bound(d: int, n: int, K: int, L: float, L_star: float, lam: float, a: int | None = None) -> float:
    """Theorem 1 (paper L174) with Table 1's constants:

    R(n) <= (c1 + c2) (1 + 2/(p3 - p2)) sqrt(c3 n) + (p1 + p2) n + d.

    The theorem assumes c1, c2 >= 1 and p3 > p2; a ValueError is raised otherwise.
    """
    c = phe_constants(d, n, K, L, L_star, lam, a)
    if min(c["c1"], c["c2"]) < 1.0 or c["p3"] <= c["p2"]:
        raise ValueError("Theorem 1 needs c1, c2 >= 1 and p3 > p2")
    optimism = 1.0 + 2.0 / (c["p3"] - c["p2"])
    return (c["c1"] + c["c2"]) * optimism * math.sqrt(c["c3"] * n) + (c["p1"] + c["p2"]) * n + d


# ---------------------------------------------------------------------------------------
# Linear ensemble sampling, Lee & Oh (lines §B.3, lines §B.5)


def p_N() -> float:
    """Fact 1: p_N = P(z >= 1) = 1 - Phi(1) for z ~ N(0, 1) (= 0.158655)."""
    return float(stats.norm.sf(1.0))


def _info_gain(t: float, d: int, lam: float) -> float:
    """d log(1 + t/(d lam)), the log-determinant term shared by beta_t and nu_T."""
    return d * math.log(1.0 + t / (d * lam))


def lines_beta(t: float, d: int, lam: float, sigma: float, S: float, delta: float) -> float:
    """Confidence radius (Lemma 1): beta_t = sigma sqrt(d log(1 + t/(d lam)) + 2 log(1/delta)) + sqrt(lam) S."""
    return sigma * math.sqrt(_info_gain(t, d, lam) + 2.0 * math.log(1.0 / delta)) + math.sqrt(lam) * S


def lines_nu(T: float, d: int, lam: float, sigma: float, S: float, delta: float) -> float:
    """Radius of the perturbation part, eq. (7) as reconstructed in lines §B.3:

    nu_T = beta_T (sqrt(d log(1 + T/(d lam)) + 2 log(2T/delta)) + sqrt(d) + sqrt(2 log(2T/delta))).
    """
    log_term = 2.0 * math.log(2.0 * T / delta)
    spread = math.sqrt(_info_gain(T, d, lam) + log_term) + math.sqrt(d) + math.sqrt(log_term)
    return lines_beta(T, d, lam, sigma, S, delta) * spread


def lines_gamma(T: float, d: int, lam: float, sigma: float, S: float, delta: float) -> float:
    """Radius of the sampled parameter: gamma_T = beta_T + nu_T."""
    return lines_beta(T, d, lam, sigma, S, delta) + lines_nu(T, d, lam, sigma, S, delta)


def lines_m_theory(K: int, T: float, delta: float) -> float:
    """Ensemble size used in Theorem 1's proof: m = (8/p_N^2)(K log T + log(1/delta))."""
    return 8.0 / p_N() ** 2 * (K * math.log(T) + math.log(1.0 / delta))


# ---------------------------------------------------------------------------------------
# GLM-ES doubling trick (glmes §2.5, glmes §4 Figure 3(b))

GOLDEN_B = (3.0 + math.sqrt(5.0)) / 2.0  # the optimal ratio b of the pure-b factor


def doubling_constant(T0, b, gamma: float = 0.5, delta: float = 1.5):
    """l(gamma, delta, T0, b) of Lemma E.1 (Besson & Kaufmann 2018, Thm 4):

    (log(T0(b-1) + 1) / log(T0(b-1)))^delta * b^gamma (b-1)^gamma / (b^gamma - 1).

    Vectorised over T0 and b. Needs T0(b - 1) > 1 when delta > 0 (ValueError otherwise).
    """
    T0, b = np.asarray(T0, dtype=float), np.asarray(b, dtype=float)
    if np.any(b <= 1.0):
        raise ValueError("doubling_constant needs b > 1")
    x = T0 * (b - 1.0)
    if delta > 0 and np.any(x <= 1.0):
        raise ValueError("doubling_constant needs T0 (b - 1) > 1 when delta > 0")
    log_ratio = np.log(x + 1.0) / np.log(x) if delta > 0 else 1.0
    out = log_ratio**delta * b**gamma * (b - 1.0) ** gamma / (b**gamma - 1.0)
    return float(out) if out.ndim == 0 else out


def doubling_schedule(T0: int, b: float, T: int) -> np.ndarray:
    """Epoch ends T_i = floor(T0 b^i), i = 0, 1, ..., up to the first T_i >= T.

    Needs T0 (b - 1) >= 1, which makes the T_i strictly increasing.
    """
    if T0 < 1 or T0 * (b - 1.0) < 1.0:
        raise ValueError("doubling_schedule needs T0 >= 1 and T0 (b - 1) >= 1")
    ends = [int(T0)]
    while ends[-1] < T:
        ends.append(math.floor(T0 * b ** len(ends)))
    return np.array(ends, dtype=np.int64)


def doubling_epochs(T0: int, b: float, T: int) -> list[dict]:
    """Epochs of the anytime variant (glmes §2.5): epoch i plays rounds T_{i-1}+1 .. min(T_i, T)
    (T_{-1} = 0) after a full restart tuned for the planned length tau_i = T_i - T_{i-1}."""
    ends = doubling_schedule(T0, b, T)
    starts = np.concatenate([[0], ends[:-1]])
    return [
        {"epoch": i, "first": int(s) + 1, "last": int(min(e, T)), "planned_last": int(e), "tau": int(e - s)}
        for i, (s, e) in enumerate(zip(starts, ends))
    ]


# ---------------------------------------------------------------------------------------
# Ensemble++ reference distributions (ensplusplus.md T1/T4, T5, epp §5.1, epp §5.3)


def epp_anticoncentration(name: str, M: int) -> float:
    """The paper's lower bound p(P_zeta) on P(<zeta, v> >= 1) over unit v (Tables 1, 4, 5).

    Gaussian 1/(4 sqrt(e pi)) = 0.0855496 (the paper's "≈ 0.0856" is an approximation within
    5.1e-5 of it, not an error); Sphere 1/2 - e^{1/12}/sqrt(2 pi) = 0.066388 (the
    paper prints "0.0668" in Thm E.2 and Table 5: a typo); Cube 7/32; Coordinate 1/(2M);
    Sparse: not characterised (nan).

    Caution: the Cube value 7/32 is false for the one-sided event.  At v = (1,1,1)/sqrt 3
    the probability is 1/8 and at v = (1,...,1)/sqrt 6 (M >= 6) it is 7/64 (see
    :func:`exact_tail_probability`).  7/32 is the two-sided bound P(|<zeta, v>| >= 1) of
    the Rademacher-sum literature; the one-sided optimum is 7/64.
    """
    bounds = {
        "gaussian": 1.0 / (4.0 * math.sqrt(math.e * math.pi)),
        "sphere": 0.5 - math.exp(1.0 / 12.0) / math.sqrt(2.0 * math.pi),
        "cube": 7.0 / 32.0,
        "coordinate": 1.0 / (2.0 * M),
        "sparse": math.nan,
    }
    return bounds[check_name(name, VECTOR_FAMILIES)]


def sphere_exact_tail(M: int) -> float:
    """P(<zeta, v> >= 1) for zeta ~ sqrt(M) U(S^{M-1}) and any unit v (epp §5.3):
    P(Beta((M-1)/2, (M-1)/2) > 1/2 + 1/(2 sqrt M)); for M = 1, zeta = +-1 and the value is 1/2."""
    if M == 1:
        return 0.5
    shape = (M - 1) / 2.0
    return float(stats.beta.sf(0.5 + 0.5 / math.sqrt(M), shape, shape))


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _signed_sum_tail(weights: np.ndarray) -> float:
    """P(sum_i eps_i w_i >= 1) over all sign patterns eps of the given weights (exact)."""
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(weights))))
    return float(np.mean(signs @ weights >= 1.0 - TAIL_TOL))


def exact_tail_probability(name: str, M: int, v) -> float:
    """Exact P(<zeta, v> >= 1) for the reference family ``name`` (v is scaled to unit norm).

    Gaussian 1 - Phi(1) and Sphere :func:`sphere_exact_tail` (both free of v); Cube by
    enumerating the signs on the support of v (at most 20 non-zeros); Coordinate
    (1/(2M)) #{j : sqrt(M)|v_j| >= 1}; Sparse (s = distributions.SPARSITY) by enumerating
    the s-subsets and their signs.
    """
    v = _unit(v)
    if v.shape != (M,):
        raise ValueError(f"v must have length M = {M}")
    name = check_name(name, VECTOR_FAMILIES)
    if name == "gaussian":
        return p_N()
    if name == "sphere":
        return sphere_exact_tail(M)
    if name == "coordinate":
        return float(np.sum(math.sqrt(M) * np.abs(v) >= 1.0 - TAIL_TOL)) / (2.0 * M)
    if name == "cube":
        support = v[v != 0.0]
        if len(support) > 20:
            raise ValueError("exact Cube tail enumerates signs: at most 20 non-zeros in v")
        return _signed_sum_tail(support)
    s = min(SPARSITY, M)
    subsets = itertools.combinations(range(M), s)
    return float(np.mean([_signed_sum_tail(math.sqrt(M / s) * v[list(idx)]) for idx in subsets]))


def epp_ensemble_sizes(d: int, T: int, delta: float = 0.1, s_min2: float = 0.1, s_max2: float = 0.1) -> dict:
    """Ensemble sizes of Lemma 4.2 / App. C.4 (epp §5.1), as real numbers:

    M1 = 1024 (d log 9 + log(4/delta)),
    M2 = 320 (d log((2 + (96/s_min) sqrt(s_max^2 + T))/delta) + log(1 + T/s_min^2)),
    M3 = max(M1, M2),

    with s_min^2 = inf_{|a|=1} a^T Sigma0^{-1} a and s_max^2 = sup (0.1, 0.1 for Sigma0 = 10 I).
    The paper labels these M1(1/4, delta/2) and M2(delta/2) but prints them in terms of delta;
    the spec table evaluates the printed expressions at delta = 0.1 (reproduced here after
    rounding to the nearest integer).
    """
    M1 = 1024.0 * (d * math.log(9.0) + math.log(4.0 / delta))
    spread = 2.0 + 96.0 / math.sqrt(s_min2) * math.sqrt(s_max2 + T)
    M2 = 320.0 * (d * math.log(spread / delta) + math.log(1.0 + T / s_min2))
    return {"M1": M1, "M2": M2, "M3": max(M1, M2)}


# ---------------------------------------------------------------------------------------
# Monte-Carlo estimators over the library's reference sampler (epp §5.3)


def reference_samples(name: str, M: int, n: int, seed: int = 0, batch: int = 1000) -> np.ndarray:
    """n reference vectors zeta (n, M) from :func:`distributions.reference`.

    A BlockStream over ``batch`` seeds yields ``batch`` independent vectors per call; the
    stream name carries ``seed`` so different seeds give independent sample sets.
    """
    batch = max(1, min(int(batch), int(n)))
    stream = BlockStream(range(batch), f"theory/{name}/M{M}/seed{seed}", vector_kind(name))
    calls = -(-int(n) // batch)
    return np.concatenate([reference(name, stream, M) for _ in range(calls)])[:n]


def isotropy_error(Z: np.ndarray) -> dict:
    """Deviation of the empirical second moment S = (1/n) sum zeta zeta^T from I_M.

    Returns max_abs_error = max_ij |S_ij - I_ij|; max_z = max_ij |S_ij - I_ij| / se_ij, where se_ij
    is the standard error of entry ij (entries with zero sample variance are deterministic and
    count as z = 0 if exact, inf otherwise); and confidence bounds on the deviation of the worst
    entry: ``upper`` = max_ij (|S_ij - I_ij| + z se_ij) with z the two-sided 95 % normal quantile
    (every entry's interval lies within +-upper), ``lower`` = max_ij (|S_ij - I_ij| - z' se_ij) with z'
    Bonferroni-corrected over the M(M+1)/2 distinct entries (some entry deviates by more than
    ``lower``, at family-wise level 2.5 % on that side).
    """
    n, M = Z.shape
    S = Z.T @ Z / n
    Z2 = Z * Z
    var = np.maximum(Z2.T @ Z2 / n - S**2, 0.0)
    se = np.sqrt(var / (n - 1))
    dev = np.abs(S - np.eye(M))
    exact = dev <= 1e-12
    z = np.where(se > 0, dev / np.where(se > 0, se, 1.0), np.where(exact, 0.0, np.inf))
    z95 = stats.norm.isf(ALPHA)
    z_family = stats.norm.isf(ALPHA / (M * (M + 1) / 2))
    return {"max_abs_error": float(dev.max()), "max_z": float(z.max()),
            "upper": float((dev + z95 * se).max()), "lower": float(np.maximum(dev - z_family * se, 0.0).max())}


def tail_probabilities(Z: np.ndarray, vs) -> tuple[np.ndarray, np.ndarray]:
    """Estimates and standard errors of P(<zeta, v> >= 1) for each direction v (scaled to unit norm)."""
    V = np.stack([_unit(v) for v in vs], axis=1)
    hits = Z @ V >= 1.0 - TAIL_TOL
    p = hits.mean(axis=0)
    return p, np.sqrt(p * (1.0 - p) / len(Z))


def mc_isotropy_error(name: str, M: int, n: int, seed: int = 0) -> dict:
    """:func:`isotropy_error` of n draws of the reference family ``name``."""
    return isotropy_error(reference_samples(name, M, n, seed))


def mc_tail_probability(name: str, M: int, v, n: int, seed: int = 0) -> tuple[float, float]:
    """Monte-Carlo estimate and standard error of P(<zeta, v> >= 1) from n draws."""
    p, se = tail_probabilities(reference_samples(name, M, n, seed), [v])
    return float(p[0]), float(se[0])


def probe_directions(M: int) -> dict:
    """Unit directions tried for the worst case: (e_1 + ... + e_k)/sqrt(k) for k in {1, 2, 3, 6, M}, k <= M.

    k = 2 is the Cube case P = 1/4 of epp §5.3; k = 3 and k = 6 give the one-sided Rademacher
    extremes 1/8 and 7/64.
    """
    out = {}
    for k in sorted({k for k in (1, 2, 3, 6, M) if k <= M}):
        label = {1: "e_1", 2: "(e_1+e_2)/√2"}.get(k, f"(e_1+...+e_{k})/√{k}")
        v = np.zeros(M)
        v[:k] = 1.0 / math.sqrt(k)
        out[label] = v
    return out
