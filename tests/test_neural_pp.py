"""Neural Ensemble++ family (agents/neural_pp.py) and Ensemble++'s nonlinear bandits
(envs/epp_nonlinear.py): batched vs per-seed reference, hand-checked losses and Adam steps,
parameter counts, batch-split bit-identity, environments vs naive loops, lazy torch import."""
from __future__ import annotations


import numpy as np
import pytest
from helpers import run_fresh_python

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from ensemble_bandits.agents import AGENTS  # noqa: E402
from ensemble_bandits.agents import neural_pp as npp  # noqa: E402
from ensemble_bandits.envs import ENVIRONMENTS  # noqa: E402
from ensemble_bandits.protocol import Setting, play  # noqa: E402

SMALL = dict(d=6, n_arms=5, pool=30)
FAST = dict(hidden=8, batch_size=4, update_start=3, buffer_size=6)


def _env(name, seeds, **kw):
    return ENVIRONMENTS[name](seeds, **{**SMALL, **kw})


def _run(agent_name, seeds, T=10, env="epp_quadratic", env_kw=None, **kw):
    e = _env(env, seeds, **(env_kw or {}))
    base = {} if agent_name == "lmcts" else FAST               # LMC-TS: no minibatch, no buffer cap
    a = AGENTS[agent_name](e.setting, seeds, T, **{**base, **kw})
    arms = np.stack([r.arms for r in play(e, a, T)], axis=1)
    return a, arms


AGENT_KW = {"ensemble_pp_neural": dict(M=3), "ensemble_plus": dict(M=3), "epinet": dict(M=3),
            "greedy_neural": {}, "lmcts": dict(hidden=8, num_iter=2)}


def _kw(name):
    return dict(AGENT_KW[name])


# ---------------------------------------------------------------------------------------------
# environments


def test_quadratic_means_match_a_naive_loop_and_subsets_are_valid():
    e = _env("epp_quadratic", [0, 1], instance="per_seed")
    Theta = e.params[1]
    for t in (1, 2):
        obs = e.observe(t)
        assert obs is e.observe(t)                      # the same set twice in a round
        x = obs.features[1]
        assert np.allclose(np.linalg.norm(x, axis=1), 1.0)
        for k in range(e.K):
            naive = 0.01 * sum(sum(x[k, i] * Theta[i, j] for i in range(e.d)) ** 2 for j in range(e.d))
            assert e.means[1, k] == pytest.approx(naive, rel=1e-12)
        assert e.best[1] == pytest.approx(max(e.means[1]))
        e.step(np.zeros(2, dtype=int))
    idx = e.offered(3)
    assert all(len(set(row)) == e.K for row in idx)


def test_fixed_instance_is_shared_and_per_seed_instances_differ():
    fixed = _env("epp_quadratic", [0, 1, 2])
    f = fixed.observe(1).features
    assert np.array_equal(f[0], f[2]) and fixed.pool.shape[0] == 1
    per = _env("epp_quadratic", [0, 1], instance="per_seed")
    assert not np.array_equal(per.observe(1).features[0], per.observe(1).features[1])
    # common random numbers and batch invariance: seed 1 alone == seed 1 in a batch
    alone = _env("epp_quadratic", [1], instance="per_seed")
    assert np.array_equal(per.observe(1).features[1], alone.observe(1).features[0])
    r_b, _ = per.step(np.array([0, 2]))
    r_a, _ = alone.step(np.array([2]))
    assert r_a[0] == r_b[1]
    # noise_seed fixed: every seed sees the same noise on the same arm of the fixed instance
    nf = _env("epp_quadratic", [0, 5], noise_seed="fixed")
    nf.observe(1)
    r, _ = nf.step(np.array([0, 0]))
    assert r[0] == r[1]


def test_vector_quadratic_and_neural_bandit_vs_naive():
    e = _env("epp_vector_quadratic", [3], instance="per_seed")
    theta = e.params[0]
    assert np.linalg.norm(theta) <= 1.0
    x = e.observe(1).features[0]
    assert np.allclose(e.means[0], [10 * sum(x[k, i] * theta[i] for i in range(e.d)) ** 2 for k in range(e.K)])
    n = _env("epp_neural", [4], instance="per_seed")
    layers = n.params[0]
    assert [W.shape for W, _ in layers] == [(50, 6), (50, 50), (2, 50)]
    x = n.observe(1).features[0]
    for k in range(n.K):
        h = x[k]
        for i, (W, b) in enumerate(layers):
            h = np.array([sum(W[o, j] * h[j] for j in range(len(h))) + b[o] for o in range(len(b))])
            if i < 2:
                h = np.maximum(h, 0)
        p = np.exp(h / 0.1) / np.exp(h / 0.1).sum()
        assert n.means[0, k] == pytest.approx(p[1], rel=1e-9, abs=1e-12)
    rewards = [n.step(np.array([k]))[0][0] for k in range(3)]
    assert set(rewards) <= {0.0, 1.0}


# ---------------------------------------------------------------------------------------------
# the library side: lazy torch, parameter counts


def test_importing_the_agents_imports_no_torch():
    code = ("import sys; from ensemble_bandits.agents import AGENTS\n"
            "import ensemble_bandits.agents.neural_pp as n\n"
            "c = AGENTS['ensemble_pp_neural']; assert c.uses_accelerator\n"
            "assert c.ensemble_size({'M': 16}, 100) == 16 and AGENTS['lmcts'].ensemble_size({}, 9) == 1\n"
            "assert c.param_count({'M': 2}, 100) == 10945\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "print('ok')\n")
    run_fresh_python(code)


SPEC_C1 = {"ensemble_pp_neural": [10945, 11201, 11713, 12737, 14785, 18881],
           "ensemble_plus": [21508, 21768, 22288, 23328, 25408, 29568],
           "epinet": [14499, 15643, 17931, 22507, 31659, 49963]}
SPEC_C2 = {"ensemble_pp_neural": [11266, 11778, 12802, 14850, 18946, 27138],
           "ensemble_plus": [21768, 22288, 23328, 25408, 29568, 37888],
           "epinet": [14527, 15683, 17995, 22619, 31867, 50363]}


@pytest.mark.parametrize("name", sorted(SPEC_C1))
def test_param_counts_match_the_spec_tables(name):
    cls = AGENTS[name]
    for M, c1, c2 in zip([2, 4, 8, 16, 32, 64], SPEC_C1[name], SPEC_C2[name]):
        assert cls.param_count({"M": M}, 100) == c1
        assert cls.param_count({"M": M, "loss": "ce"}, 100) == c2
    assert npp.trunk_size(100) == 10624


def _numel(ts):
    return sum(int(t[0].numel()) for t in ts)


def test_built_networks_have_the_counted_parameters():
    s = Setting(1, 100, 5, "contexts")
    epp = AGENTS["ensemble_pp_neural"](s, [0], 10, M=4)
    assert _numel(epp.trunk + epp.base + [epp.W, epp.P0]) == AGENTS["ensemble_pp_neural"].param_count({"M": 4}, 100) - 1
    epp_b = AGENTS["ensemble_pp_neural"](s, [0], 10, M=4, base_bias=True, loss="ce")
    assert _numel(epp_b.trunk + epp_b.base + [epp_b.W, epp_b.P0]) == \
        AGENTS["ensemble_pp_neural"].param_count({"M": 4, "loss": "ce"}, 100)
    ep = AGENTS["ensemble_plus"](s, [0], 10, M=4)
    frozen_bias = 4                                            # the prior heads' zero biases (M C)
    assert _numel(ep.trainable() + ep.prior_trunk + [ep.prior_heads]) + frozen_bias == \
        AGENTS["ensemble_plus"].param_count({"M": 4}, 100)
    # EpiNet: built = paper formula + base head (D C + C) + M C(16) - 16 M - 16 C  (see docs)
    en = AGENTS["epinet"](s, [0], 10, M=4)
    built = _numel(en.trunk + en.base + en.epi + en.prior) + 4 * (5 + 5 + 1)     # + prior biases
    assert built == AGENTS["epinet"].param_count({"M": 4}, 100) + 64 + 1 + 16 * 4 - 16 * 4 - 16
    # the prior rows of Ensemble++ are unit vectors in R^M
    assert torch.allclose(epp.P0.norm(dim=-1), torch.ones(()))


# ---------------------------------------------------------------------------------------------
# hand-checked pieces


def test_symmetrised_coordinate_loss_on_two_points():
    """With the 2M vectors +-sqrt(M) e_m the cross terms cancel:
    mean_xi (y + s<xi,z> - b - <u,xi>)^2 = (y - b)^2 + M * mean_m (s z_m - u_m)^2 * ... = r^2 + sum_m (s z_m - u_m)^2."""
    s = Setting(1, 3, 2, "finite")
    a = AGENTS["ensemble_pp_neural"](s, [0], 10, M=3, hidden=4, dtype="float64", prior_scale=5.0, posterior_scale=1.0)
    x = torch.tensor(np.random.default_rng(0).standard_normal((1, 2, 3)), dtype=torch.float64)
    y = torch.tensor([[0.3, -1.2]], dtype=torch.float64)
    z = torch.tensor(np.random.default_rng(1).standard_normal((1, 2, 3)), dtype=torch.float64)
    loss = a.batch_loss(x, y, z, a.update_indices(2)).item()
    h = a.run_trunk(a.trunk, x)[0]
    b = (h @ a.base[0][0].T)[:, 0]
    u = torch.einsum("nd,dm->nm", h, (1.0 * a.W + 5.0 * a.P0)[0, :, 0, :])
    expected = (((y[0] - b) ** 2) + ((0.01 * z[0] - u) ** 2).sum(dim=1)).mean().item()
    assert loss == pytest.approx(expected, rel=1e-12)


def test_one_adam_step_with_the_decaying_weight_decay():
    """First Adam step: p <- p - lr g'/(|g'| + eps) with g' = g + (0.01 / len(buffer)) p."""
    e = _env("epp_quadratic", [0])
    a = AGENTS["greedy_neural"](e.setting, [0], 20, hidden=4, batch_size=3, update_start=10**9, dtype="float64", lr=0.1)
    for t in range(1, 6):
        obs = e.observe(t); arms = a.select(t, obs); r, _ = e.step(arms); a.update(t, obs, arms, r)
    before = [p.detach().clone() for p in a.trainable()]
    a.record = []
    a.train_step()
    u = a.record[0][1]
    idx = np.minimum((u[0] * 5).astype(int), 4)
    x, y = a.X[0, idx][None], a.Y[0, idx][None]
    params = [p.detach().clone().requires_grad_(True) for p in before]
    h = torch.relu(torch.relu(x @ params[0][0].T + params[1][0]) @ params[2][0].T + params[3][0])
    loss = (((h @ params[4][0].T)[..., 0] - y) ** 2).mean()
    grads = torch.autograd.grad(loss, params)
    for p0, g, p1 in zip(before, grads, a.trainable()):
        g2 = g + (0.01 / 5) * p0
        exp = p0 - 0.1 * g2 / (g2.abs() + 1e-8)
        assert torch.allclose(p1.detach(), exp, rtol=0, atol=1e-12), (p1.detach() - exp).abs().max()


# ---------------------------------------------------------------------------------------------
# batched == per-seed reference (float64, same draws), batch-split bit-identity


class _RefEnsemblePP(torch.nn.Module):
    """A per-seed, loop-based Ensemble++ built from one seed's initial weights."""

    def __init__(self, agent, b):
        super().__init__()
        D, d = agent.D, agent.d
        self.l1, self.l2 = torch.nn.Linear(d, D).double(), torch.nn.Linear(D, D).double()
        self.base = torch.nn.Linear(D, 1, bias=False).double()
        with torch.no_grad():
            self.l1.weight.copy_(agent.trunk[0][b]); self.l1.bias.copy_(agent.trunk[1][b])
            self.l2.weight.copy_(agent.trunk[2][b]); self.l2.bias.copy_(agent.trunk[3][b])
            self.base.weight.copy_(agent.base[0][b])
        self.W = torch.nn.Parameter(agent.W[b].detach().clone())            # (D, 1, M)
        self.P0 = agent.P0[b].detach().clone()
        self.ps, self.prs, self.M = agent.post_scale, agent.prior_scale, agent.M

    def f(self, x, xi):
        h = torch.relu(self.l2(torch.relu(self.l1(x))))
        out = self.base(h)[0]
        for m in range(self.M):
            out = out + xi[m] * (self.ps * h.detach() @ self.W[:, 0, m] + self.prs * h.detach() @ self.P0[:, 0, m])
        return out


def test_batched_ensemble_pp_matches_a_per_seed_reference():
    seeds, T, M = [0, 1], 9, 3
    e = _env("epp_quadratic", seeds, instance="per_seed")
    a = AGENTS["ensemble_pp_neural"](e.setting, seeds, T, M=M, dtype="float64", lr=0.01, prior_scale=5.0,
                                    posterior_scale=1.0, **FAST)
    refs = [_RefEnsemblePP(a, b) for b in range(2)]
    opts = [torch.optim.Adam(r.parameters(), lr=0.01) for r in refs]
    a.record = []
    Xi = npp.enumerated("coordinate", M)
    bufs = [[None] * a.capacity for _ in seeds]
    for t, rnd in enumerate(play(e, a, T), start=1):
        draws = {}
        for what, arr in a.record:
            draws.setdefault(what, []).append(arr)
        a.record.clear()
        for b, (ref, opt) in enumerate(zip(refs, opts)):
            zeta = torch.tensor(draws["reference"][0][b])
            feats = torch.tensor(rnd.obs.features[b])
            with torch.no_grad():
                scores = [ref.f(feats[k], zeta).item() for k in range(e.K)]
            assert int(np.argmax(scores)) == rnd.arms[b]
            bufs[b][(t - 1) % a.capacity] = (feats[rnd.arms[b]], float(rnd.rewards[b]), draws["perturbation"][0][b])
            n = min(t, a.capacity)
            for u in draws.get("minibatch", []):
                opt.param_groups[0]["weight_decay"] = 0.01 / n
                opt.zero_grad()
                terms = []
                for i in np.minimum((u[b] * n).astype(int), n - 1):
                    x, y, z = bufs[b][i]
                    for xi in Xi:
                        terms.append((y + 0.01 * float(xi @ z) - ref.f(x, torch.tensor(xi))) ** 2)
                torch.stack(terms).mean().backward()
                opt.step()
    assert a.steps == T - FAST["update_start"] + 1
    for b, ref in enumerate(refs):
        ours = [a.trunk[0][b], a.trunk[1][b], a.trunk[2][b], a.trunk[3][b], a.base[0][b], a.W[b]]
        theirs = [ref.l1.weight, ref.l1.bias, ref.l2.weight, ref.l2.bias, ref.base.weight, ref.W]
        for p, q in zip(ours, theirs):
            assert torch.allclose(p.detach(), q.detach(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", sorted(AGENT_KW))
def test_batch_split_is_bit_identical_on_cpu(name):
    kw = _kw(name)
    whole, arms = _run(name, [0, 1, 2, 3], **kw)
    parts = [_run(name, s, **kw) for s in ([0, 1], [2, 3])]
    assert np.array_equal(arms, np.concatenate([p[1] for p in parts]))
    for i, p in enumerate(whole.trainable()):
        joined = torch.cat([part[0].trainable()[i] for part in parts])
        assert torch.equal(p.detach(), joined.detach()), (name, i)
    assert whole.steps > 0


@pytest.mark.parametrize("name", sorted(AGENT_KW))
def test_classification_loss_and_float32_run(name):
    a, arms = _run(name, [0, 1], env="epp_neural", loss="ce", **_kw(name))
    assert arms.shape == (2, 10) and (arms >= 0).all() and (arms < 5).all()
    assert all(p.dtype == torch.float32 for p in a.trainable())
    assert all(torch.isfinite(p).all() for p in a.trainable())


@pytest.mark.parametrize("update", ["coordinate", "cube", "sparse", "gaussian", "sphere"])
def test_every_update_family_trains(update):
    a, _ = _run("ensemble_pp_neural", [0], M=3, update=update, reference="cube", perturbation="coordinate")
    expected = {"coordinate": 6, "cube": 8, "sparse": 12}.get(update)
    if expected:
        assert a.fixed_xi.shape == (expected, 3)
    assert a.steps > 0


def test_lmcts_uses_the_full_history_and_langevin_noise():
    a, _ = _run("lmcts", [0], T=6, hidden=8, num_iter=3)
    assert a.n_buf == 6 and a.capacity == 6 and a.steps == 18
