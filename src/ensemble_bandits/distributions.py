"""Index, reference and perturbation distributions, in one place.

* Ensemble++ *reference* vectors zeta in R^M (isotropic, norm about sqrt(M)) and
  *perturbation* vectors z in R^M (unit norm; Gaussian: N(0, I/M) as in the authors'
  code), for the five families of the Ensemble++ paper (Table 5 / App. E).
* Scalar reward perturbations (Gaussian, Rademacher, uniform, centred binomial) with a
  common standard deviation ``scale``, used by ensemble sampling and generalised LinPHE,
  together with exact samplers of their per-arm sums.
* Initial (prior) perturbation vectors W in R^d (Gaussian or spherical).

Samplers take :class:`~ensemble_bandits.rng.BlockStream` objects and return arrays with a
leading batch axis.
"""
from __future__ import annotations

import numpy as np

from .rng import BlockStream, binomial_half_fixed, words_for

VECTOR_FAMILIES = ("gaussian", "sphere", "cube", "coordinate", "sparse")
SCALAR_FAMILIES = ("gaussian", "rademacher", "uniform", "binomial", "none")
INIT_FAMILIES = ("gaussian", "sphere", "none")
# the families a hyper-parameter may name, by the kind a class declares (`distribution_params`)
FAMILIES = {"vector": VECTOR_FAMILIES, "scalar": SCALAR_FAMILIES, "init": INIT_FAMILIES}
SPARSITY = 2  # s of the Sparse family (authors' code; capped at M)


def check_name(name: str, known) -> str:
    if name not in known:
        raise ValueError(f"unknown distribution {name!r}; known: {', '.join(known)}")
    return name


def vector_kind(name: str) -> str:
    """Which block-stream kind a vector family consumes."""
    return "normal" if check_name(name, VECTOR_FAMILIES) in ("gaussian", "sphere") else "uniform"


def vector_draws(name: str, M: int) -> int:
    """Variates consumed per sample (fixed per family and M)."""
    check_name(name, VECTOR_FAMILIES)
    if name == "coordinate":
        return 2
    if name == "sparse":
        return M + min(SPARSITY, M)
    return M


def reference(name: str, stream: BlockStream, M: int) -> np.ndarray:
    """Reference vectors zeta (B, M): E[zeta zeta^T] = I_M, norm sqrt(M) (Gaussian: about)."""
    raw = stream.take(vector_draws(name, M))
    B = raw.shape[0]
    if name == "gaussian":
        return raw.copy()
    if name == "sphere":
        return np.sqrt(M) * raw / np.linalg.norm(raw, axis=1, keepdims=True)
    if name == "cube":
        return np.where(raw < 0.5, -1.0, 1.0)
    if name == "coordinate":
        idx = np.minimum((raw[:, 0] * M).astype(np.int64), M - 1)
        sign = np.where(raw[:, 1] < 0.5, -1.0, 1.0)
        out = np.zeros((B, M))
        out[np.arange(B), idx] = sign * np.sqrt(M)
        return out
    # sparse: s distinct coordinates chosen uniformly, random signs, scaled to norm sqrt(M)
    s = min(SPARSITY, M)
    keys, signs = raw[:, :M], raw[:, M:]
    idx = np.argpartition(keys, s - 1, axis=1)[:, :s] if s < M else np.tile(np.arange(M), (B, 1))
    out = np.zeros((B, M))
    np.put_along_axis(out, idx, np.where(signs < 0.5, -1.0, 1.0) * np.sqrt(M / s), axis=1)
    return out


def perturbation(name: str, stream: BlockStream, M: int) -> np.ndarray:
    """Perturbation vectors z (B, M) = zeta / sqrt(M); Gaussian is N(0, I/M), not renormalised."""
    return reference(name, stream, M) / np.sqrt(M)


def initial_factor(name: str, stream: BlockStream, d: int, M: int) -> np.ndarray:
    """Matrix B (batch, d, M) whose d rows are i.i.d. perturbation vectors (authors' A_0 rule)."""
    rows = [perturbation(name, stream, M) for _ in range(d)]
    return np.stack(rows, axis=1)


# ---------------------------------------------------------------------------------------
# scalar reward perturbations


class ScalarPerturbation:
    """i.i.d. scalar perturbations with standard deviation ``scale``.

    gaussian N(0, s^2); rademacher +-s; uniform U[-sqrt(3)s, sqrt(3)s];
    binomial (Bin(n, 1/2) - n/2) * 2s/sqrt(n)  (n = 1 is Rademacher); none: 0.
    """

    def __init__(self, name: str = "gaussian", scale: float = 1.0, n: int = 1):
        self.name = check_name(name, SCALAR_FAMILIES)
        self.scale = float(scale)
        self.n = int(n)
        if self.n < 1:
            raise ValueError("binomial perturbation needs n >= 1")

    @property
    def kind(self) -> str:
        return "normal" if self.name == "gaussian" else ("bits" if self.name in ("rademacher", "binomial") else "uniform")

    def draw(self, stream: BlockStream, count: int) -> np.ndarray:
        """(B, count) i.i.d. draws."""
        if self.name == "none":
            return np.zeros((len(stream.gens), count))
        if self.name == "gaussian":
            return self.scale * stream.take(count)
        if self.name == "uniform":
            return self.scale * np.sqrt(3.0) * (2.0 * stream.take(count) - 1.0)
        counts = np.full((len(stream.gens), count), self.n, dtype=np.int64)
        ones = binomial_half_fixed(stream, counts, words_for(self.n * count))
        return self._centre(ones, counts)

    def _centre(self, ones: np.ndarray, trials: np.ndarray) -> np.ndarray:
        return (ones - trials / 2.0) * (2.0 * self.scale / np.sqrt(self.n))

    def arm_sums(self, stream: BlockStream, pulls: np.ndarray, total: int) -> np.ndarray:
        """Per-arm sums xi_k of pulls[b, k] i.i.d. draws (B, K); ``total`` = sum_k pulls (same for all b).

        Exact in distribution: Gaussian sums are sqrt(n) N(0, s^2); Rademacher and binomial
        sums are centred Binomial(n * pulls, 1/2) draws (popcounts); uniform sums add
        ``total`` fresh draws grouped by arm (cumulative-sum trick).
        """
        pulls = np.asarray(pulls, dtype=np.int64)
        if self.name == "none" or total == 0:
            return np.zeros(pulls.shape)
        if self.name == "gaussian":
            return self.scale * np.sqrt(pulls) * stream.take(pulls.shape[1])
        if self.name in ("rademacher", "binomial"):
            trials = self.n * pulls
            ones = binomial_half_fixed(stream, trials, words_for(self.n * total))
            return self._centre(ones, trials)
        draws = self.draw(stream, total)
        cum = np.zeros((draws.shape[0], total + 1))
        np.cumsum(draws, axis=1, out=cum[:, 1:])
        ends = np.cumsum(pulls, axis=1)
        at_end = np.take_along_axis(cum, ends, axis=1)
        out = at_end.copy()
        out[:, 1:] -= at_end[:, :-1]
        return out


def init_vectors(name: str, scale: float, stream: BlockStream, count: int, d: int) -> np.ndarray:
    """Initial perturbations W (B, count, d): Gaussian s*N(0, I_d), spherical s*sqrt(d)*U(S^{d-1}), or 0."""
    check_name(name, INIT_FAMILIES)
    if name == "none" or scale == 0.0:
        return np.zeros((len(stream.gens), count, d))
    raw = stream.shaped(count, d)
    if name == "gaussian":
        return scale * raw
    return scale * np.sqrt(d) * raw / np.linalg.norm(raw, axis=2, keepdims=True)
