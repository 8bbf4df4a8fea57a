"""Per-seed random streams, batched over seeds.

Every seed owns independent streams derived with ``numpy.random.SeedSequence`` from
(seed, stream name).  A :class:`BlockStream` serves one kind of variate (normal, uniform
or raw 64-bit words) for all B seeds of a batch: it pre-draws a block per seed and
stacks the blocks, so no Python loop over seeds runs inside a round.  Because each stream
is consumed strictly sequentially, the numbers a seed sees do not depend on the block
size, on the batch it runs in, or on how seeds are split into jobs.
"""
from __future__ import annotations

import zlib

import numpy as np

_KINDS = ("normal", "uniform", "bits")


def generator(seed: int, name: str) -> np.random.Generator:
    """The generator of stream ``name`` of ``seed`` (independent across both)."""
    key = zlib.crc32(name.encode("utf-8"))
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), key])))


def _draw(gen: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "normal":
        return gen.standard_normal(n)
    if kind == "uniform":
        return gen.random(n)
    return gen.bit_generator.random_raw(n).astype(np.uint64, copy=False)


class BlockStream:
    """Sequential variates of one kind for a batch of seeds.

    ``take(n)`` returns an array of shape (B, n): the next n variates of every seed.
    """

    def __init__(self, seeds, name: str, kind: str, block: int = 4096):
        if kind not in _KINDS:
            raise ValueError(f"unknown variate kind {kind!r}; known: {_KINDS}")
        self.gens = [generator(s, name) for s in seeds]
        self.kind = kind
        self.block = int(block)
        dtype = np.uint64 if kind == "bits" else np.float64
        self._buf = np.empty((len(self.gens), 0), dtype=dtype)
        self._pos = 0
        self.taken = 0                      # variates handed out per seed so far (pre-drawn blocks not counted)

    def take(self, n: int) -> np.ndarray:
        n = int(n)
        self.taken += n
        if self._pos + n > self._buf.shape[1]:
            size = max(self.block, n)
            fresh = np.stack([_draw(g, self.kind, size) for g in self.gens])
            self._buf = np.concatenate([self._buf[:, self._pos:], fresh], axis=1)
            self._pos = 0
        out = self._buf[:, self._pos:self._pos + n]
        self._pos += n
        return out

    def shaped(self, *shape: int) -> np.ndarray:
        """The next prod(shape) variates per seed, reshaped to (B, *shape)."""
        return self.take(int(np.prod(shape, dtype=np.int64))).reshape((-1, *shape))


class SeedGenerators:
    """One generator per seed of a batch, for a numpy routine that draws from a generator itself (such
    as ``Generator.multivariate_normal``); the caller adds the variates each call takes per seed to
    ``taken``."""

    def __init__(self, seeds, name: str):
        self.gens = [generator(s, name) for s in seeds]
        self.taken = 0


class Streams:
    """Factory of named block streams for one batch of seeds and one namespace."""

    def __init__(self, seeds, namespace: str):
        self.seeds = [int(s) for s in seeds]
        self.namespace = namespace
        self.made: list[BlockStream] = []

    def __call__(self, name: str, kind: str, block: int = 4096) -> BlockStream:
        stream = BlockStream(self.seeds, f"{self.namespace}/{name}", kind, block)
        self.made.append(stream)
        return stream

    def generators(self, name: str) -> SeedGenerators:
        """Per-seed generators of stream ``name`` (:class:`SeedGenerators`), counted by :meth:`taken`."""
        gens = SeedGenerators(self.seeds, f"{self.namespace}/{name}")
        self.made.append(gens)
        return gens

    def taken(self) -> int:
        """Variates handed out per seed by this factory's block streams and generators (a normal, a uniform or a 64-bit
        word each): a count of the random numbers a run consumed that no hardware changes."""
        return sum(s.taken for s in self.made)

    def per_seed(self, name: str, fn) -> np.ndarray:
        """Stack ``fn(generator)`` over seeds: for one-off draws such as problem instances."""
        return np.stack([fn(generator(s, f"{self.namespace}/{name}")) for s in self.seeds])


def words_for(n_bits: int) -> int:
    return max(1, -(-int(n_bits) // 64))


def binomial_half_fixed(bits: BlockStream, counts: np.ndarray, n_words: int) -> np.ndarray:
    """Exact Binomial(counts, 1/2) draws, batched: popcounts of fresh random bits.

    ``counts`` is an integer array (B, K); arm k of seed b gets its own disjoint run of
    counts[b, k] fair bits and the draw is the number of ones among them.  Every seed
    consumes exactly ``n_words`` 64-bit words.

    ``n_words`` must be a bound on sum_k counts / 64 that does not depend on the data of
    other seeds (e.g. a function of the round only): this keeps seeds batch-invariant.
    """
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts, axis=1)
    if ends[:, -1].max() > 64 * n_words:
        raise ValueError("binomial_half_fixed: n_words too small for the counts")
    return _popcount_segments(bits.take(n_words), ends)


def _prefix_ones(words: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Number of one-bits among bit positions [0, p) of each row, for p in positions."""
    B, W = words.shape
    cum = np.zeros((B, W + 1), dtype=np.int64)
    np.cumsum(np.bitwise_count(words), axis=1, dtype=np.int64, out=cum[:, 1:])
    widx = positions >> 6
    rem = (positions & 63).astype(np.uint64)
    rows = np.arange(B)[:, None]
    full = cum.ravel()[rows * (W + 1) + widx]
    last = words.ravel()[rows * W + np.minimum(widx, W - 1)]
    mask = (np.uint64(1) << rem) - np.uint64(1)      # rem < 64: the low `rem` bits
    partial = np.bitwise_count(last & mask).astype(np.int64)
    return full + np.where(widx < W, partial, 0)


def _popcount_segments(words: np.ndarray, ends: np.ndarray) -> np.ndarray:
    prefix = _prefix_ones(words, ends)
    out = prefix.copy()
    out[:, 1:] -= prefix[:, :-1]
    return out
