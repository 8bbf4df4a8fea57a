"""Per-seed random streams (rng.py) and the distribution samplers built on them (distributions.py).

All Monte-Carlo checks use fixed seeds, so they are deterministic; the tolerances are
about 5 standard errors (or p > 1e-3), so a correct sampler passes with a wide margin
and a sampler with a wrong mean, scale or shape fails.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ensemble_bandits import distributions as dist
from ensemble_bandits.rng import BlockStream, Streams, binomial_half_fixed, generator, words_for

SIZES = [3, 100, 1, 5000, 7, 0, 64, 129]


def _consume(seeds, name, kind, block, sizes=SIZES):
    s = BlockStream(seeds, name, kind, block=block)
    return np.concatenate([s.take(n) for n in sizes], axis=1)


# --------------------------------------------------------------------------------------
# BlockStream


@pytest.mark.parametrize("kind", ["normal", "uniform", "bits"])
def test_blockstream_independent_of_block_size(kind):
    seeds = [0, 1, 7]
    ref = _consume(seeds, "x/y", kind, block=4096)
    for block in (1, 2, 17, 100, 10_000):
        assert np.array_equal(_consume(seeds, "x/y", kind, block=block), ref)
    # one single take of the total gives the same numbers too
    one = BlockStream(seeds, "x/y", kind).take(sum(SIZES))
    assert np.array_equal(one, ref)
    assert ref.dtype == (np.uint64 if kind == "bits" else np.float64)


@pytest.mark.parametrize("kind", ["normal", "uniform", "bits"])
def test_blockstream_independent_of_batch(kind):
    batch = [4, 0, 9, 2, 13, 1]
    full = _consume(batch, "agent/a/s", kind, block=33)
    for i, s in enumerate(batch):
        alone = _consume([s], "agent/a/s", kind, block=4096)
        assert np.array_equal(alone[0], full[i])
    # another batch composition and order
    other = _consume([13, 4, 100], "agent/a/s", kind, block=5)
    assert np.array_equal(other[0], full[4])
    assert np.array_equal(other[1], full[0])


def test_blockstream_matches_plain_generator():
    """A stream is just the seed's generator consumed sequentially."""
    seq = _consume([3], "n", "normal", block=10)[0]
    assert np.array_equal(seq, generator(3, "n").standard_normal(len(seq)))
    seq = _consume([3], "u", "uniform", block=10)[0]
    assert np.array_equal(seq, generator(3, "u").random(len(seq)))
    seq = _consume([3], "b", "bits", block=10)[0]
    assert np.array_equal(seq, generator(3, "b").bit_generator.random_raw(len(seq)).astype(np.uint64))


def test_shaped_and_streams_namespace():
    st = Streams([1, 2], "agent/lints")
    a = st("sample", "normal").shaped(3, 4)
    b = BlockStream([1, 2], "agent/lints/sample", "normal").take(12).reshape(2, 3, 4)
    assert a.shape == (2, 3, 4) and np.array_equal(a, b)
    p = st.per_seed("inst", lambda g: g.random(5))
    assert p.shape == (2, 5)
    assert np.array_equal(p[1], generator(2, "agent/lints/inst").random(5))


def test_seeds_and_names_are_independent():
    """Different seeds, and different stream names of one seed, give uncorrelated streams."""
    n = 200_000
    x = BlockStream(list(range(6)), "s", "normal").take(n)
    y = BlockStream([0], "t", "normal").take(n)
    rows = np.vstack([x, y])
    corr = np.corrcoef(rows)
    off = corr[~np.eye(len(rows), dtype=bool)]
    # |corr| of independent N(0,1) sequences is about 1/sqrt(n) = 0.0022
    assert np.abs(off).max() < 5 / np.sqrt(n)
    # neighbouring seeds do not produce shifted copies of each other
    for lag in (1, 2, 3):
        assert abs(np.corrcoef(x[0, lag:], x[1, :-lag])[0, 1]) < 5 / np.sqrt(n)


def test_blockstream_rejects_unknown_kind():
    with pytest.raises(ValueError, match="unknown variate kind 'gamma'"):
        BlockStream([0], "x", "gamma")


def test_take_returns_independent_arrays():
    s = BlockStream([0], "x", "normal", block=8)
    a = s.take(5).copy()
    s.take(20)
    b = BlockStream([0], "x", "normal", block=8).take(5)
    assert np.array_equal(a, b)


# --------------------------------------------------------------------------------------
# binomial_half_fixed


def _naive_popcounts(words: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Unpack every word into its 64 bits (bit j of word w is position 64 w + j) and count."""
    B, W = words.shape
    shifts = np.arange(64, dtype=np.uint64)
    bits = ((words[:, :, None] >> shifts) & np.uint64(1)).reshape(B, W * 64).astype(np.int64)
    out = np.zeros(counts.shape, dtype=np.int64)
    for b in range(B):
        pos = 0
        for k, c in enumerate(counts[b]):
            out[b, k] = sum(int(v) for v in bits[b, pos:pos + c])
            pos += c
    return out


def test_words_for():
    assert [words_for(n) for n in (0, 1, 63, 64, 65, 128, 129)] == [1, 1, 1, 1, 2, 2, 3]


def test_binomial_half_fixed_equals_naive_popcount():
    rng = np.random.default_rng(12345)
    seeds = [0, 5, 11]
    stream = BlockStream(seeds, "bin", "bits", block=7)
    mirror = BlockStream(seeds, "bin", "bits", block=4096)   # same words, consumed separately
    for n_words, K in [(1, 4), (3, 6), (5, 3), (2, 1), (4, 10), (1, 1)]:
        counts = rng.integers(0, 64 * n_words // K + 1, size=(len(seeds), K))
        counts[:, rng.integers(K)] = 0                       # empty runs are allowed
        fast = binomial_half_fixed(stream, counts, n_words)
        words = mirror.take(n_words)
        assert np.array_equal(fast, _naive_popcounts(words, counts))
        assert fast.shape == counts.shape and np.all((fast >= 0) & (fast <= counts))
    # a run that fills the words exactly (positions at the end of the last word)
    counts = np.array([[64, 64, 0], [128, 0, 0], [1, 126, 1]])
    fast = binomial_half_fixed(stream, counts, 2)
    assert np.array_equal(fast, _naive_popcounts(mirror.take(2), counts))
    # both streams consumed the same number of words
    assert np.array_equal(stream.take(3), mirror.take(3))


def test_binomial_half_fixed_rejects_small_word_budget():
    s = BlockStream([0, 1], "x", "bits")
    with pytest.raises(ValueError, match="n_words too small"):
        binomial_half_fixed(s, np.array([[40, 30], [1, 1]]), 1)


def test_binomial_half_fixed_is_batch_invariant():
    counts = np.array([[3, 60, 0, 17], [100, 1, 2, 3], [5, 5, 5, 5]])
    full = BlockStream([0, 1, 2], "b", "bits")
    res = [binomial_half_fixed(full, counts, 3) for _ in range(4)]
    for i, s in enumerate([0, 1, 2]):
        alone = BlockStream([s], "b", "bits", block=2)
        for r in res:
            assert np.array_equal(binomial_half_fixed(alone, counts[i:i + 1], 3)[0], r[i])


@pytest.mark.parametrize("n", [1, 9, 37, 200])
def test_binomial_half_fixed_distribution(n):
    """Binomial(n, 1/2): mean n/2, variance n/4 (z-tests) and the pmf (chi-square)."""
    B, K, reps = 50, 8, 50
    stream = BlockStream(list(range(B)), f"binom/{n}", "bits")
    counts = np.full((B, K), n)
    x = np.concatenate([binomial_half_fixed(stream, counts, words_for(n * K)).ravel() for _ in range(reps)])
    N = x.size
    assert abs(x.mean() - n / 2) < 5 * np.sqrt(n / 4 / N)
    # var of the sample variance ~ (mu4 - sigma^4)/N, mu4 of Bin(n,1/2) = 3 (n/4)^2 - n/8
    mu4 = 3 * (n / 4) ** 2 - n / 8
    # (+ the squared-mean term, the only one left for n = 1 where var-hat = p-hat (1 - p-hat))
    assert abs(x.var() - n / 4) < 5 * np.sqrt((mu4 - (n / 4) ** 2) / N) + 25 * (n / 4) / N
    # chi-square goodness of fit, bins with expected count >= 5 pooled at the tails
    pmf = stats.binom.pmf(np.arange(n + 1), n, 0.5)
    obs = np.bincount(x, minlength=n + 1)
    keep = pmf * N >= 5
    lo, hi = np.argmax(keep), len(keep) - 1 - np.argmax(keep[::-1])
    e = np.concatenate([[pmf[:lo + 1].sum()], pmf[lo + 1:hi], [pmf[hi:].sum()]]) * N if hi > lo else pmf * N
    o = np.concatenate([[obs[:lo + 1].sum()], obs[lo + 1:hi], [obs[hi:].sum()]]) if hi > lo else obs
    assert stats.chisquare(o, e).pvalue > 1e-3


def test_binomial_half_fixed_arm_runs_are_independent():
    """Adjacent runs of bits (adjacent arms) are uncorrelated."""
    B = 400
    stream = BlockStream(list(range(B)), "indep", "bits")
    counts = np.tile([7, 13, 64, 1], (B, 1))
    x = np.concatenate([binomial_half_fixed(stream, counts, 2) for _ in range(25)]).astype(float)
    corr = np.corrcoef(x.T)
    assert np.abs(corr[~np.eye(4, dtype=bool)]).max() < 5 / np.sqrt(len(x))


# --------------------------------------------------------------------------------------
# distributions: reference / perturbation vectors


def _references(name, M, n_seeds=1000, reps=20):
    st = BlockStream(list(range(n_seeds)), f"ref/{name}", dist.vector_kind(name))
    return np.concatenate([dist.reference(name, st, M) for _ in range(reps)])


@pytest.mark.parametrize("name", dist.VECTOR_FAMILIES)
@pytest.mark.parametrize("M", [1, 2, 6])
def test_reference_isotropic_with_norm_sqrt_M(name, M):
    Z = _references(name, M)
    N = len(Z)
    assert Z.shape == (N, M)
    norms = np.linalg.norm(Z, axis=1)
    if name == "gaussian":
        sq = norms ** 2
        assert abs(sq.mean() - M) < 5 * np.sqrt(2 * M / N)
    else:
        np.testing.assert_allclose(norms, np.sqrt(M), rtol=1e-12)
    # mean zero
    se = Z.std(axis=0) / np.sqrt(N)
    assert np.all(np.abs(Z.mean(axis=0)) < 5 * se + 1e-12)
    # second moment = I: each entry within 5 standard errors (entries with zero spread must be exact)
    prods = Z[:, :, None] * Z[:, None, :]
    second = prods.mean(axis=0)
    se2 = prods.std(axis=0) / np.sqrt(N)
    assert np.all(np.abs(second - np.eye(M)) <= 5 * se2 + 1e-12)
    assert np.all(np.abs(second - np.eye(M)) < 0.15)


def test_reference_family_shapes():
    M = 7
    coord = _references("coordinate", M, 200, 10)
    nz = coord != 0
    assert np.all(nz.sum(axis=1) == 1)
    assert set(np.unique(coord[nz])) == {-np.sqrt(M), np.sqrt(M)}
    # the index is uniform over [M]
    assert stats.chisquare(np.bincount(np.argmax(nz, axis=1), minlength=M)).pvalue > 1e-3
    sparse = _references("sparse", M, 200, 10)
    assert np.all((sparse != 0).sum(axis=1) == dist.SPARSITY)
    np.testing.assert_allclose(np.abs(sparse[sparse != 0]), np.sqrt(M / dist.SPARSITY))
    assert stats.chisquare((sparse != 0).sum(axis=0)).pvalue > 1e-3
    cube = _references("cube", M, 200, 10)
    assert set(np.unique(cube)) == {-1.0, 1.0}


@pytest.mark.parametrize("name", dist.VECTOR_FAMILIES)
def test_perturbation_is_reference_over_sqrt_M(name):
    M = 5
    s1 = BlockStream([0, 3], "p", dist.vector_kind(name), block=11)
    s2 = BlockStream([0, 3], "p", dist.vector_kind(name), block=4096)
    for _ in range(5):
        z = dist.perturbation(name, s1, M)
        ref = dist.reference(name, s2, M)
        np.testing.assert_allclose(z, ref / np.sqrt(M), rtol=0, atol=1e-15)
        if name != "gaussian":
            np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0)
    # every sample consumes vector_draws(name, M) variates
    assert np.array_equal(s1.take(2), s2.take(2))
    s3 = BlockStream([0, 3], "p", dist.vector_kind(name))
    s3.take(5 * dist.vector_draws(name, M))
    assert np.array_equal(s3.take(2), BlockStream([0, 3], "p", dist.vector_kind(name)).take(5 * dist.vector_draws(name, M) + 2)[:, -2:])


def test_initial_factor_rows_are_perturbations():
    d, M = 4, 9
    st = BlockStream(list(range(300)), "init", "normal")
    Bm = dist.initial_factor("sphere", st, d, M)
    assert Bm.shape == (300, d, M)
    np.testing.assert_allclose(np.linalg.norm(Bm, axis=2), 1.0)
    # E[B B^T] = I_d
    BBt = np.matmul(Bm, Bm.transpose(0, 2, 1)).mean(axis=0)
    assert np.abs(BBt - np.eye(d)).max() < 0.05


@pytest.mark.parametrize("name", ["gaussian", "sphere"])
def test_init_vectors(name):
    scale, d = 0.7, 4
    st = BlockStream(list(range(500)), "w", "normal")
    W = dist.init_vectors(name, scale, st, 40, d).reshape(-1, d)
    N = len(W)
    if name == "sphere":
        np.testing.assert_allclose(np.linalg.norm(W, axis=1), scale * np.sqrt(d))
    cov = W.T @ W / N
    assert np.abs(cov - scale ** 2 * np.eye(d)).max() < 5 * scale ** 2 * np.sqrt(2 / N)
    assert np.abs(W.mean(axis=0)).max() < 5 * scale / np.sqrt(N)
    assert np.all(dist.init_vectors("none", scale, st, 3, d) == 0)
    assert np.all(dist.init_vectors(name, 0.0, st, 3, d) == 0)


# --------------------------------------------------------------------------------------
# scalar perturbations


SCALARS = [("gaussian", None), ("rademacher", None), ("uniform", None), ("binomial", 1), ("binomial", 5)]


@pytest.mark.parametrize("name,n", SCALARS)
def test_scalar_perturbation_mean_and_std(name, n):
    scale = 0.37
    p = dist.ScalarPerturbation(name, scale, n)
    st = BlockStream(list(range(100)), f"sc/{name}", p.kind)
    x = np.concatenate([p.draw(st, 1000).ravel() for _ in range(3)])
    N = x.size
    assert abs(x.mean()) < 5 * scale / np.sqrt(N)
    # second moment about the known mean 0 (exact for Rademacher, whence the 1e-12)
    m2, m4 = np.mean(x ** 2), np.mean(x ** 4)
    assert abs(m2 - scale ** 2) < 5 * np.sqrt(max(m4 - m2 ** 2, 0.0) / N) + 1e-12
    if name == "rademacher" or (name == "binomial" and n == 1):
        np.testing.assert_allclose(np.abs(x), scale)
    if name == "uniform":
        assert np.abs(x).max() <= np.sqrt(3) * scale
        assert stats.kstest(x[:20000], "uniform", args=(-np.sqrt(3) * scale, 2 * np.sqrt(3) * scale)).pvalue > 1e-3
    if name == "binomial":
        lattice = x / (2 * scale / np.sqrt(n)) + n / 2
        np.testing.assert_allclose(lattice, np.round(lattice), atol=1e-9)
    if name == "gaussian":
        assert stats.kstest(x[:20000] / scale, "norm").pvalue > 1e-3


def test_scalar_perturbation_none_and_errors():
    p = dist.ScalarPerturbation("none", 1.0)
    st = BlockStream([0, 1], "x", p.kind)
    assert np.all(p.draw(st, 5) == 0) and p.draw(st, 5).shape == (2, 5)
    assert np.all(p.arm_sums(st, np.ones((2, 3), dtype=int), 3) == 0)
    with pytest.raises(ValueError, match="unknown distribution 'cauchy'; known: gaussian, rademacher"):
        dist.ScalarPerturbation("cauchy")
    with pytest.raises(ValueError, match="n >= 1"):
        dist.ScalarPerturbation("binomial", 1.0, 0)


@pytest.mark.parametrize("name,n", SCALARS)
def test_arm_sums_mean_and_variance(name, n):
    scale = 0.5
    p = dist.ScalarPerturbation(name, scale, n)
    pulls = np.array([0, 1, 2, 7, 40, 150])
    B = 400
    P = np.tile(pulls, (B, 1))
    st = BlockStream(list(range(B)), f"arm/{name}", p.kind)
    x = np.concatenate([p.arm_sums(st, P, int(pulls.sum())) for _ in range(20)])
    N = len(x)
    assert np.all(x[:, 0] == 0)                                  # no pulls, no perturbation
    var = pulls * scale ** 2
    assert np.all(np.abs(x.mean(axis=0)) <= 5 * np.sqrt(var / N) + 1e-12)
    m2, m4 = np.mean(x ** 2, axis=0), np.mean(x ** 4, axis=0)
    assert np.all(np.abs(m2 - var) <= 5 * np.sqrt(np.maximum(m4 - m2 ** 2, 0) / N) + 1e-12)
    assert np.all(np.abs(m2[1:] / var[1:] - 1) < 0.2)
    if name in ("rademacher", "binomial"):
        # exact: centred Binomial(n * pulls, 1/2) scaled by 2 s / sqrt(n)
        n = p.n                                                  # 1 trial for Rademacher
        ones = x / (2 * scale / np.sqrt(n)) + n * pulls / 2
        np.testing.assert_allclose(ones, np.round(ones), atol=1e-9)
        assert np.all((np.round(ones) >= 0) & (np.round(ones) <= n * pulls))
    # arm sums of different arms are uncorrelated
    corr = np.corrcoef(x[:, 1:].T)
    assert np.abs(corr[~np.eye(len(pulls) - 1, dtype=bool)]).max() < 5 / np.sqrt(N)


def test_arm_sums_uniform_groups_fresh_draws():
    """Uniform arm sums are sums of consecutive draws of the same stream, grouped by arm."""
    p = dist.ScalarPerturbation("uniform", 0.3)
    pulls = np.array([[2, 0, 3, 1], [0, 6, 0, 0]])
    a = p.arm_sums(BlockStream([4, 8], "u", "uniform"), pulls, 6)
    draws = p.draw(BlockStream([4, 8], "u", "uniform"), 6)
    expect = np.array([[draws[0, :2].sum(), 0, draws[0, 2:5].sum(), draws[0, 5]],
                       [0, draws[1].sum(), 0, 0]])
    np.testing.assert_allclose(a, expect, atol=1e-14)


def test_check_name_lists_known():
    for bad, fn in [("foo", lambda: dist.vector_kind("foo")), ("bar", lambda: dist.vector_draws("bar", 3)),
                    ("baz", lambda: dist.init_vectors("baz", 1.0, BlockStream([0], "x", "normal"), 1, 2))]:
        with pytest.raises(ValueError, match=f"unknown distribution '{bad}'; known: "):
            fn()
    with pytest.raises(ValueError, match="gaussian, sphere, cube, coordinate, sparse"):
        dist.reference("nope", BlockStream([0], "x", "normal"), 3)
