"""Index vectors of the neural Ensemble++ family: n draws of a reference family per seed from the
agent's streams, the enumerated update index sets of the discrete families (epp §2.5, authors'
code), and the probe's own fixed index sets."""
from __future__ import annotations

import itertools

import numpy as np

from ... import distributions as dist

NPS = 16                               # index vectors per datum per step of a sampled update family


class _Rows:
    """A stand-in block stream serving pre-drawn rows (for drawing n vectors per seed at once)."""

    def __init__(self, raw):
        self.raw, self.gens = raw, [None] * raw.shape[0]

    def take(self, n):
        assert n == self.raw.shape[1]
        return self.raw


def vectors(family: str, stream, M: int, n: int) -> np.ndarray:
    """n vectors (B, n, M) of the reference ``family`` (distributions.reference) per seed, consuming
    the stream exactly as n successive single draws would."""
    k = dist.vector_draws(family, M)
    raw = stream.take(n * k)
    B = raw.shape[0]
    return dist.reference(family, _Rows(raw.reshape(B * n, k)), M).reshape(B, n, M)


def enumerated(family: str, M: int) -> np.ndarray | None:
    """The full update index set of a discrete family (epp §2.5, authors' code), or None for a
    sampled family (Gaussian, Sphere): Coordinate {+-sqrt(M) e_m} (2M), Cube {+-1}^M (2^M), Sparse all
    signed s-sparse vectors scaled sqrt(M/s) (C(M, s) 2^s)."""
    dist.check_name(family, dist.VECTOR_FAMILIES)
    if family == "coordinate":
        eye = np.sqrt(M) * np.eye(M)
        return np.concatenate([eye, -eye])
    if family == "cube":
        return np.array(list(itertools.product([-1.0, 1.0], repeat=M)))
    if family == "sparse":
        s = min(dist.SPARSITY, M)
        out = []
        for idx in itertools.combinations(range(M), s):
            for signs in itertools.product([-1.0, 1.0], repeat=s):
                v = np.zeros(M)
                v[list(idx)] = np.array(signs) * np.sqrt(M / s)
                out.append(v)
        return np.array(out)
    return None



def probe_vectors(family: str, rng, M: int, n: int) -> np.ndarray:
    """n index vectors (n, M) of the reference ``family`` drawn from the generator ``rng`` (the probe's
    own, never the agent's streams)."""
    shape = (n, dist.vector_draws(family, M))
    raw = rng.standard_normal(shape) if dist.vector_kind(family) == "normal" else rng.random(shape)
    return dist.reference(family, _Rows(raw), M)

