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
SPARSE_FAMILIES = ("coordinate", "sparse")  # vector families with 1 or s non-zeros of M
# Hyper-parameters (as the agents name them) that belong to some families of a kind only:
# name -> (kind, the families that take it, what it is).  Giving one with any other family is an
# error (check_applicable), never silently ignored or, worse, applied to the wrong family: lines-dist
# once drew "Rademacher" as a centred Binomial(4) because binomial_n reached every family.
FAMILY_HYPERS = {
    "binomial_n": ("scalar", ("binomial",), "the number of trials n of the centred binomial"),
    "init_scale": ("init", ("gaussian", "sphere"), "the scale of the initial perturbation W"),
}


def check_name(name: str, known) -> str:
    if name not in known:
        raise ValueError(f"unknown distribution {name!r}; known: {', '.join(known)}")
    return name


def check_applicable(declared: dict, spec: dict, defaults: dict | None = None) -> None:
    """A ValueError when ``spec`` gives a family-specific hyper-parameter (:data:`FAMILY_HYPERS`)
    that the family it chooses does not take, e.g. ``binomial_n`` with ``perturbation: rademacher``
    or ``init_scale`` with ``init: none``.

    ``declared``: the class's ``distribution_params`` (hyper-parameter -> kind); ``spec``: the agent
    (or experiment) spec; ``defaults``: the class's defaults of the declared hyper-parameters, for
    a family the spec leaves to its default.  Checks names only: nothing is built or imported."""
    defaults = defaults or {}
    for hyper, (kind, takers, what) in FAMILY_HYPERS.items():
        if hyper not in spec:
            continue
        chosen = {key: spec.get(key, defaults.get(key)) for key, k in declared.items() if k == kind}
        if not any(name in takers for name in chosen.values()):
            named = ", ".join(f"{key}: {name}" for key, name in chosen.items()) or f"no {kind} distribution"
            raise ValueError(f"{hyper} = {spec[hyper]!r} ({what}) does not apply to {named}; only "
                             f"{' and '.join(takers)} take{'s' if len(takers) == 1 else ''} it: remove it "
                             f"or choose that family")


def check_spec(cls, spec: dict) -> None:
    """:func:`check_applicable` for a class (an agent, or an experiment function) and its registry
    spec: the class's ``distribution_params`` and their defaults, read from its signature."""
    import inspect

    declared = getattr(cls, "distribution_params", {})
    params = inspect.signature(cls.__init__ if inspect.isclass(cls) else cls).parameters
    check_applicable(declared, spec, {k: params[k].default for k in declared if k in params})


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
    idx = smallest_keys(keys, s) if s < M else np.tile(np.arange(M), (B, 1))
    out = np.zeros((B, M))
    np.put_along_axis(out, idx, np.where(signs < 0.5, -1.0, 1.0) * np.sqrt(M / s), axis=1)
    return out


def smallest_keys(keys: np.ndarray, s: int) -> np.ndarray:
    """``np.argpartition(keys, s - 1, axis=1)[:, :s]``: the columns of each row's s smallest keys
    (B, s), in that function's order.  For s <= 2 that order is ascending and two argmins give it,
    about 20 times faster on M = 1024 keys than the selection (continuous keys have no ties)."""
    if s > 2:
        return np.argpartition(keys, s - 1, axis=1)[:, :s]
    first = keys.argmin(axis=1)
    if s == 1:
        return first[:, None]
    rows = np.arange(keys.shape[0])
    rest = keys.copy()
    rest[rows, first] = np.inf
    return np.stack([first, rest.argmin(axis=1)], axis=1)


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
    binomial (Bin(n, 1/2) - n/2) * 2s/sqrt(n)  (n = 1 is Rademacher; default n = 1); none: 0.

    ``n`` is the binomial's own parameter: given with any other family it is an error (the
    Rademacher family is always +-s).
    """

    def __init__(self, name: str = "gaussian", scale: float = 1.0, n: int | None = None):
        self.name = check_name(name, SCALAR_FAMILIES)
        self.scale = float(scale)
        if n is not None and (isinstance(n, bool) or int(n) != n):
            raise ValueError(f"binomial perturbation needs an integer n >= 1, got {n!r}")
        if self.name == "binomial":
            self.n = 1 if n is None else int(n)
            if self.n < 1:
                raise ValueError(f"binomial perturbation needs n >= 1, got {n!r}")
        else:
            if n is not None:
                raise ValueError(f"n = {n!r} does not apply to the {self.name} perturbation: only binomial "
                                 f"takes n (the number of trials)")
            self.n = 1       # rademacher = binomial with one trial; unused by the other families

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
