"""The runner's probe of the neural ensemble agents' terms (probes.neural_terms, ``diagnostics: true``):
it leaves the run bit for bit as it is, its spreads equal a naive loop over seeds, arms and index
vectors, the terms add up to the agent's own prediction, and a zero prior scale gives no prior term."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from ensemble_bandits import probes  # noqa: E402
from ensemble_bandits.agents import AGENTS  # noqa: E402
from ensemble_bandits.envs import ENVIRONMENTS  # noqa: E402
from ensemble_bandits.protocol import play  # noqa: E402
from ensemble_bandits.rng import BlockStream  # noqa: E402
from ensemble_bandits.cells import check_cell  # noqa: E402
from ensemble_bandits.runner import simulate_columns  # noqa: E402

ENV = {"name": "epp_quadratic", "d": 6, "n_arms": 5, "pool": 30}
FAST = dict(M=3, hidden=8, batch_size=4, update_start=3, buffer_size=6, prior_scale=5.0, posterior_scale=1.0)
NEURAL = ("ensemble_pp_neural", "ensemble_plus", "epinet")
COLUMNS = {"trunk_norm", "prior_spread", "index_spread", "total_spread", "mean_spread", "reward_spread",
           "prior_ratio", "index_ratio", "total_ratio", "mean_ratio"}


def _played(name, seeds=(0, 1), T=25, **kw):
    """An agent trained for T rounds (float64) and its environment after round T."""
    e = ENVIRONMENTS[ENV["name"]](list(seeds), **{k: v for k, v in ENV.items() if k != "name"})
    a = AGENTS[name](e.setting, list(seeds), T, **{**FAST, "dtype": "float64", "diagnostics": True, **kw})
    for _ in play(e, a, T):
        pass
    return a, e


def _np(t):
    return t.detach().cpu().double().numpy()


def _relu(v):
    return np.maximum(v, 0.0)


def _trunk(params, x):
    W1, b1, W2, b2 = params
    return _relu(W2 @ _relu(W1 @ x + b1) + b2)


def _fixed_indices(name, M):
    """The probe's index set, drawn again here: 16 draws from its own generator (sphere for Ensemble++,
    Gaussian for EpiNet), the basis for Ensemble+."""
    if name == "ensemble_plus":
        return np.eye(M)
    raw = np.random.default_rng(probes.PROBE_SEED).standard_normal((probes.PROBE_INDICES, M))
    return raw if name == "epinet" else np.sqrt(M) * raw / np.linalg.norm(raw, axis=1, keepdims=True)


def _naive_terms(name, a, x):
    """Per seed b: h (K, D), mean (K,), index and prior (K, k), one arm and one index vector at a time."""
    M = a.M
    Z = _fixed_indices(name, M)
    out = []
    for b in range(a.B):
        trunk = [_np(p[b]) for p in a.trunk]
        h = np.array([_trunk(trunk, xa) for xa in x[b]])
        mean, index, prior = [], [], []
        for k, xa in enumerate(x[b]):
            if name == "ensemble_pp_neural":
                W, P0, base = _np(a.W[b])[:, 0, :], _np(a.P0[b])[:, 0, :], _np(a.base[0][b])[0]
                mean.append(float(base @ h[k]))
                index.append([a.post_scale * sum(h[k][d] * W[d, m] * z[m] for d in range(a.D) for m in range(M))
                              for z in Z])
                prior.append([a.prior_scale * sum(h[k][d] * P0[d, m] * z[m] for d in range(a.D) for m in range(M))
                              for z in Z])
            elif name == "ensemble_plus":
                heads, bias = _np(a.heads[b])[:, :, 0], _np(a.head_bias[b])[:, 0]
                h0 = _trunk([_np(p[b]) for p in a.prior_trunk], xa)
                post = [a.post_scale * (float(h[k] @ heads[:, m]) + bias[m]) for m in range(M)]
                mean.append(sum(post) / M)
                index.append([post[m] - mean[-1] for m in range(M)])
                prior.append([a.prior_scale * float(h0 @ _np(a.prior_heads[b])[:, m, 0]) for m in range(M)])
        out.append((h, np.array(mean), np.array(index), np.array(prior)))
    return out


@pytest.mark.parametrize("name", ["ensemble_pp_neural", "ensemble_plus"])
def test_spreads_equal_a_naive_loop_over_arms_and_index_vectors(name):
    a, e = _played(name)
    got = probes.neural_terms(a, e)
    assert set(got) == COLUMNS
    for b, (h, mean, index, prior) in enumerate(_naive_terms(name, a, e.features)):
        sd = lambda v: float(np.sqrt(np.mean((v - np.mean(v)) ** 2)))            # noqa: E731
        want = {"trunk_norm": np.mean([np.sqrt(np.sum(r ** 2)) for r in h]),
                "mean_spread": sd(mean),
                "index_spread": np.mean([sd(index[:, j]) for j in range(index.shape[1])]),
                "prior_spread": np.mean([sd(prior[:, j]) for j in range(prior.shape[1])]),
                "total_spread": np.mean([sd(index[:, j] + prior[:, j]) for j in range(index.shape[1])]),
                "reward_spread": sd(e.means[b])}
        for term in ("prior", "index", "total", "mean"):
            want[f"{term}_ratio"] = want[f"{term}_spread"] / want["reward_spread"]
        for col, v in want.items():
            assert got[col][b] == pytest.approx(v, rel=1e-9, abs=1e-12), (col, b)
        assert want["prior_spread"] > 0.01 and want["index_spread"] > 1e-4         # the terms are not trivial


@pytest.mark.parametrize("name", NEURAL)
def test_terms_add_up_to_the_agents_prediction(name):
    """mean + index + prior = f(x, zeta) at every probe index vector: the probe splits what the agent ranks by."""
    a, e = _played(name)
    x = a.tensor(e.features)
    xi = a.tensor(a.probe_indices(np.random.default_rng(probes.PROBE_SEED), probes.PROBE_INDICES))
    with torch.no_grad():
        terms = a.probe_terms(x, xi)
        f = a.predict(x, xi.expand(a.B, x.shape[1], *xi.shape))                    # (B, K, C, k)
    total = terms["mean"][..., None] + terms["index"] + terms["prior"]
    assert total.shape == f.shape == (a.B, e.K, 1, xi.shape[0])
    assert torch.allclose(total, f, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NEURAL)
def test_diagnostics_leave_the_run_bit_for_bit_as_it_is(name):
    cell = {"env": ENV, "agent": {"name": name, **FAST}, "horizon": 40}
    plain = simulate_columns(cell, [0, 1, 2])
    probed = simulate_columns({**cell, "agent": {**cell["agent"], "diagnostics": True}}, [0, 1, 2])
    assert set(probed) - set(plain) == COLUMNS
    assert np.array_equal(plain["regret"], probed["regret"])
    assert np.isfinite(probed["prior_ratio"]).all() and (probed["reward_spread"] > 0).all()


def _tensors(a):
    """Every tensor the agent holds (weights, buffers, Adam's moments), by attribute name."""
    out = {}
    for k, v in vars(a).items():
        for i, t in enumerate(v if isinstance(v, (list, tuple)) else [v]):
            if torch.is_tensor(t):
                out[f"{k}[{i}]"] = t
    for k, v in vars(a.opt).items():
        if torch.is_tensor(v):
            out[f"opt.{k}"] = v
    return out


@pytest.mark.parametrize("name", NEURAL)
def test_the_probe_changes_no_state_and_reads_the_same_twice(name):
    a, e = _played(name, T=12)
    before = {k: v.clone() for k, v in _tensors(a).items()}
    assert any(k.startswith("trunk") for k in before) and any(k.startswith("opt.") for k in before)
    first = probes.neural_terms(a, e)
    again = probes.neural_terms(a, e)
    after = _tensors(a)
    assert before.keys() == after.keys()
    for k, v in before.items():
        assert torch.equal(v, after[k]), k
    for k in first:
        assert np.array_equal(first[k], again[k], equal_nan=True), k
    # the agent's streams give the next draws they would have given without the probe
    b, _ = _played(name, T=12)
    streams = [k for k, v in vars(a).items() if isinstance(v, BlockStream)]
    assert len(streams) >= 2
    for k in streams:
        assert np.array_equal(getattr(a, k).take(5), getattr(b, k).take(5)), k


@pytest.mark.parametrize("name", NEURAL)
def test_no_prior_term_at_prior_scale_zero(name):
    a, e = _played(name, prior_scale=0.0)
    got = probes.neural_terms(a, e)
    assert np.array_equal(got["prior_spread"], np.zeros(a.B)) and np.array_equal(got["prior_ratio"], np.zeros(a.B))
    assert np.allclose(got["total_spread"], got["index_spread"], rtol=1e-12)
    assert (got["index_spread"] > 0).all()


def test_the_probe_is_asked_for_and_checked_like_a_hyper_parameter():
    a, _ = _played("ensemble_pp_neural", T=5)
    assert probes.for_agent(a) is probes.neural_terms
    a.diagnostics = False
    assert probes.for_agent(a) is None
    check_cell({"env": ENV, "agent": {"name": "ensemble_plus", "diagnostics": True}, "horizon": 5})
    with pytest.raises(ValueError, match="diagnostics"):
        check_cell({"env": ENV, "agent": {"name": "ensemble_plus", "diagnostics": "yes"}, "horizon": 5})
    with pytest.raises(ValueError, match="regression"):
        _played("ensemble_pp_neural", T=2, loss="ce")
