"""Neural Ensemble++ family (agents/neural_pp/, one module per algorithm) and Ensemble++'s nonlinear bandits
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


def test_flat_adam_equals_torch_adam_bit_for_bit():
    """FlatAdam (one flat buffer) and torch.optim.Adam (per tensor, coupled L2 weight decay changed
    between steps) give the same parameters, bit for bit, over several steps of a small network."""
    from ensemble_bandits.agents.torch_common import FlatAdam

    g = torch.Generator().manual_seed(3)
    shapes = [(3, 4, 5), (3, 4), (3, 1, 4)]
    init = [torch.randn(s, generator=g) for s in shapes]
    x, y = torch.randn(3, 7, 5, generator=g), torch.randn(3, 7, generator=g)
    ours, theirs = [p.clone() for p in init], [p.clone().requires_grad_(True) for p in init]
    flat = FlatAdam(ours, lr=0.01)
    ref = torch.optim.Adam(theirs, lr=0.01, foreach=False)

    def loss(W1, b1, W2):
        h = torch.relu(torch.baddbmm(b1.unsqueeze(1), x, W1.transpose(1, 2)))
        return ((torch.bmm(h, W2.transpose(1, 2))[..., 0] - y) ** 2).mean(dim=1).sum()

    for step in range(1, 6):
        flat.weight_decay = ref.param_groups[0]["weight_decay"] = 0.01 / step
        flat.zero_grad(); ref.zero_grad(set_to_none=True)
        loss(*ours).backward(); loss(*theirs).backward()
        flat.step(); ref.step()
    assert all(o.grad.data_ptr() >= flat.grad.data_ptr() for o in ours)        # grads stay in the buffer
    for o, t in zip(ours, theirs):
        assert torch.equal(o.detach(), t.detach())
    assert not torch.equal(ours[0].detach(), init[0])


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
    Xi = npp.enumerated("coordinate", M)
    bufs = [[None] * a.capacity for _ in seeds]
    for t, (rnd, draws) in enumerate(_draws_per_round(a, e, T), start=1):
        for b, (ref, opt) in enumerate(zip(refs, opts)):
            zeta = torch.tensor(draws["reference"][0][b])
            feats = torch.tensor(rnd.obs.features[b])
            with torch.no_grad():
                scores = [ref.f(feats[k], zeta).item() for k in range(e.K)]
            assert int(np.argmax(scores)) == rnd.arms[b]
            bufs[b][(t - 1) % a.capacity] = (feats[rnd.arms[b]], float(rnd.rewards[b]), draws["perturbation"][0][b])
            n = min(t, a.capacity)
            for u in draws.get("minibatch", []):
                terms = [(y + 0.01 * float(xi @ z) - ref.f(x, torch.tensor(xi))) ** 2
                         for x, y, z in (bufs[b][i] for i in _minibatch(u[b], n)) for xi in Xi]
                _adam_step(opt, torch.stack(terms).mean(), n)
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


def test_epinet_is_batch_invariant_at_the_papers_sizes():
    """EpiNet at d = 100, D = 64, M = 8, minibatch 128 x 16 index vectors (the sizes where its prior's
    einsum rounded differently with the batch): seed 1 alone and in a batch of three, bit for bit."""
    T = 170
    def run(seeds):
        e = ENVIRONMENTS["epp_quadratic"](seeds, d=100, n_arms=50, pool=1000)
        a = AGENTS["epinet"](e.setting, seeds, T, M=8)
        return a, np.stack([r.arms for r in play(e, a, T)], axis=1)
    (batch, arms3), (alone, arms1) = run([0, 1, 2]), run([1])
    assert alone.steps == T - 127 and np.array_equal(arms3[1], arms1[0])
    for p, q in zip(batch.trainable(), alone.trainable()):
        assert torch.equal(p[1:2].detach(), q.detach())


def test_algorithms_stamp_names_a_revised_agent_class():
    from ensemble_bandits.cells import algorithms_stamp
    from ensemble_bandits import ALGORITHMS_VERSION

    assert npp.EpiNetNeural.revision == 1
    assert algorithms_stamp({"agent": {"name": "epinet"}}) == f"{ALGORITHMS_VERSION}; epinet revision 1"
    assert algorithms_stamp({"agent": {"name": "ensemble_pp_neural"}}) == ALGORITHMS_VERSION
    assert algorithms_stamp({"experiment": {"name": "x"}}) == ALGORITHMS_VERSION


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


@pytest.mark.parametrize("d, beta_inv, finite", [(20, 0.01, True), (20, 0.05, False), (100, 0.002, True)])
def test_lmcts_quad_config_diverges_only_with_the_temperature_of_d_100(d, beta_inv, finite):
    """The official quad config (d = 20) stays finite; its inverse temperature beta_inv d log T at
    d = 100 (five times larger, here beta_inv x 5 at d = 20) takes the weights to NaN, while d = 100 at the
    temperature of d = 20 stays finite: epp-fig9c's degenerate Quadratic panel comes from the config's
    d-scaling of the temperature, not from the network's input size."""
    e = ENVIRONMENTS["epp_quadratic"]([0], d=d, n_arms=50, pool=1000)
    a = AGENTS["lmcts"](e.setting, [0], 10_000, layers=[20, 20, 20], activation="leaky_relu", num_iter=50,
                        beta_inv=beta_inv, lr=1e-3)
    for _ in play(e, a, 12):
        pass
    assert all(bool(torch.isfinite(p).all()) for p in a.layers) == finite


def test_lmcts_stops_stepping_once_every_weight_is_nan_with_the_same_run(monkeypatch):
    """The diverging d = 100 config: once every weight is NaN the Langevin steps are skipped, and the
    arms and regret are those of the run that keeps stepping (the naive form, ``diverged`` disabled)."""
    def run(skip):
        e = ENVIRONMENTS["epp_quadratic"]([0, 1], d=100, n_arms=50, pool=1000)
        a = AGENTS["lmcts"](e.setting, [0, 1], 10_000, layers=[20, 20, 20], activation="leaky_relu", num_iter=50,
                            beta_inv=0.01, lr=1e-3)
        if not skip:
            monkeypatch.setattr(a, "diverged", lambda: False)
        rounds = [(r.arms.copy(), r.regret.copy()) for r in play(e, a, 40)]
        return rounds, a
    fast, a = run(True)
    slow, b = run(False)
    assert a._nan and a.steps < b.steps                       # it diverged, and steps were skipped
    for (arms, reg), (arms2, reg2) in zip(fast, slow):
        assert np.array_equal(arms, arms2) and np.array_equal(reg, reg2)
    assert all(bool(torch.isnan(p).all()) for p in b.layers)


# ---------------------------------------------------------------------------------------------
# Ensemble+, EpiNet and LMC-TS against naive per-seed references (float64, the batched agent's draws)


def _draws_per_round(agent, env, T):
    """Play the batched agent; per round: the Round and {what: [draws in call order]}."""
    agent.record = []
    for rnd in play(env, agent, T):
        draws = {}
        for what, arr in agent.record:
            draws.setdefault(what, []).append(arr)
        agent.record.clear()
        yield rnd, draws


def _linear(W, b=None):
    """A torch Linear holding one seed's weights (copied; trainable)."""
    lin = torch.nn.Linear(W.shape[1], W.shape[0], bias=b is not None).double()
    with torch.no_grad():
        lin.weight.copy_(W)
        if b is not None:
            lin.bias.copy_(b)
    return lin


def _adam_step(opt, loss, n_buf):
    opt.param_groups[0]["weight_decay"] = 0.01 / n_buf
    opt.zero_grad()
    loss.backward()
    opt.step()


def _minibatch(u, n):
    return np.minimum((u * n).astype(int), n - 1)


class _RefEnsemblePlus(torch.nn.Module):
    """Ensemble+ for one seed, written plainly: a trainable trunk with M separate heads, a frozen
    prior trunk with M frozen heads; head m = ps head_m(h(x)) + prs prior_m(h0(x))."""

    def __init__(self, agent, b):
        super().__init__()
        t, p = agent.trunk, agent.prior_trunk
        self.l1, self.l2 = _linear(t[0][b], t[1][b]), _linear(t[2][b], t[3][b])
        self.heads = torch.nn.ModuleList(_linear(agent.heads[b][:, m, :].T, agent.head_bias[b, m])
                                         for m in range(agent.M))
        self.p1, self.p2 = _linear(p[0][b], p[1][b]), _linear(p[2][b], p[3][b])
        self.prior_heads = [agent.prior_heads[b][:, m, :].T.clone() for m in range(agent.M)]
        for q in (*self.p1.parameters(), *self.p2.parameters()):
            q.requires_grad_(False)
        self.ps, self.prs, self.M = agent.post_scale, agent.prior_scale, agent.M

    def head(self, x, m):
        h = torch.relu(self.l2(torch.relu(self.l1(x))))
        h0 = torch.relu(self.p2(torch.relu(self.p1(x))))
        return self.ps * self.heads[m](h) + self.prs * (self.prior_heads[m] @ h0)


def test_batched_ensemble_plus_matches_a_per_seed_reference():
    seeds, T, M = [0, 1], 9, 3
    e = _env("epp_quadratic", seeds, instance="per_seed")
    a = AGENTS["ensemble_plus"](e.setting, seeds, T, M=M, dtype="float64", lr=0.01, prior_scale=5.0,
                                posterior_scale=1.0, **FAST)
    refs = [_RefEnsemblePlus(a, b) for b in seeds]
    opts = [torch.optim.Adam(r.parameters(), lr=0.01) for r in refs]
    bufs = [[None] * a.capacity for _ in seeds]
    for t, (rnd, draws) in enumerate(_draws_per_round(a, e, T), start=1):
        for b, (ref, opt) in enumerate(zip(refs, opts)):
            m = min(int(draws["head"][0][b, 0] * M), M - 1)            # the round's head, uniform
            feats = torch.tensor(rnd.obs.features[b])
            with torch.no_grad():
                scores = [ref.head(feats[k], m).item() for k in range(e.K)]
            assert int(np.argmax(scores)) == rnd.arms[b]
            bufs[b][(t - 1) % a.capacity] = (feats[rnd.arms[b]], float(rnd.rewards[b]), draws["perturbation"][0][b])
            n = min(t, a.capacity)
            for u in draws.get("minibatch", []):
                terms = [(y + 0.01 * z[j] - ref.head(x, j)[0]) ** 2
                         for x, y, z in (bufs[b][i] for i in _minibatch(u[b], n)) for j in range(M)]
                _adam_step(opt, torch.stack(terms).mean(), n)
    assert a.steps == T - FAST["update_start"] + 1
    for b, ref in enumerate(refs):
        pairs = [(a.trunk[0][b], ref.l1.weight), (a.trunk[1][b], ref.l1.bias), (a.trunk[2][b], ref.l2.weight),
                 (a.trunk[3][b], ref.l2.bias)]
        pairs += [(a.heads[b][:, m, :].T, ref.heads[m].weight) for m in range(M)]
        pairs += [(a.head_bias[b, m], ref.heads[m].bias) for m in range(M)]
        for p, q in pairs:
            assert torch.allclose(p.detach(), q.detach(), rtol=0, atol=1e-10)


class _RefEpiNet(torch.nn.Module):
    """EpiNet for one seed, written plainly: base = trunk + Linear(D, C); epinet MLP [15, 15] on
    [x, sg(h), z] with M C outputs read as (M, C) and contracted with z; M frozen prior MLPs [5, 5]."""

    def __init__(self, agent, b):
        super().__init__()
        t, (Wx, Wh, Wz, b1, W2, b2, W3, b3) = agent.trunk, agent.epi
        self.l1, self.l2 = _linear(t[0][b], t[1][b]), _linear(t[2][b], t[3][b])
        self.base = _linear(agent.base[0][b], agent.base[1][b])
        self.e1 = _linear(torch.cat([Wx[b], Wh[b], Wz[b]], dim=1), b1[b])
        self.e2, self.e3 = _linear(W2[b], b2[b]), _linear(W3[b], b3[b])
        self.prior = [[P[b, m].clone() for P in agent.prior] for m in range(agent.M)]
        self.ps, self.prs, self.M, self.C = agent.post_scale, agent.prior_scale, agent.M, agent.C

    def f(self, x, z):
        h = torch.relu(self.l2(torch.relu(self.l1(x))))
        out = self.base(h)
        g = self.e3(torch.relu(self.e2(torch.relu(self.e1(torch.cat([x, h.detach(), z]))))))
        for m in range(self.M):
            P1, P2, P3 = self.prior[m]
            prior_m = P3 @ torch.relu(P2 @ torch.relu(P1 @ x))
            out = out + z[m] * (self.ps * g[m * self.C:(m + 1) * self.C] + self.prs * prior_m)
        return out


def test_batched_epinet_matches_a_per_seed_reference():
    seeds, T, M = [0, 1], 8, 3
    e = _env("epp_quadratic", seeds, instance="per_seed")
    a = AGENTS["epinet"](e.setting, seeds, T, M=M, dtype="float64", lr=0.01, prior_scale=5.0, posterior_scale=1.0,
                         **FAST)
    refs = [_RefEpiNet(a, b) for b in seeds]
    opts = [torch.optim.Adam(r.parameters(), lr=0.01) for r in refs]
    bufs = [[None] * a.capacity for _ in seeds]
    for t, (rnd, draws) in enumerate(_draws_per_round(a, e, T), start=1):
        for b, (ref, opt) in enumerate(zip(refs, opts)):
            zeta = torch.tensor(draws["reference"][0][b])
            feats = torch.tensor(rnd.obs.features[b])
            with torch.no_grad():
                scores = [ref.f(feats[k], zeta).item() for k in range(e.K)]
            assert int(np.argmax(scores)) == rnd.arms[b]
            z_buf = draws["perturbation"][0][b]
            assert np.linalg.norm(z_buf) == pytest.approx(1.0)            # Sphere buffer perturbation
            bufs[b][(t - 1) % a.capacity] = (feats[rnd.arms[b]], float(rnd.rewards[b]), z_buf)
            n = min(t, a.capacity)
            for u, xis in zip(draws.get("minibatch", []), draws.get("update", [])):
                terms = []
                for j, i in enumerate(_minibatch(u[b], n)):
                    x, y, z = bufs[b][i]
                    for xi in xis[b][j * npp.NPS:(j + 1) * npp.NPS]:     # 16 Gaussian index vectors per datum
                        terms.append((y + 0.01 * float(xi @ z) - ref.f(x, torch.tensor(xi))[0]) ** 2)
                _adam_step(opt, torch.stack(terms).mean(), n)
    assert a.steps == T - FAST["update_start"] + 1
    for b, ref in enumerate(refs):
        Wx, Wh, Wz, b1, W2, b2, W3, b3 = a.epi
        pairs = [(a.trunk[0][b], ref.l1.weight), (a.trunk[3][b], ref.l2.bias), (a.base[0][b], ref.base.weight),
                 (a.base[1][b], ref.base.bias), (torch.cat([Wx[b], Wh[b], Wz[b]], dim=1), ref.e1.weight),
                 (b1[b], ref.e1.bias), (W2[b], ref.e2.weight), (W3[b], ref.e3.weight), (b3[b], ref.e3.bias)]
        for p, q in pairs:
            assert torch.allclose(p.detach(), q.detach(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("variant", ["final", "sqrt_k"])
def test_batched_lmcts_matches_a_per_seed_langevin_reference(variant):
    """Full-history squared loss, num_iter Langevin steps per round, lr = base_lr / round every
    decay_step rounds.  final: the loss summed over the data, theta - lr_t (grad + wd theta + temp xi),
    temp = sqrt(2 beta_inv d log T / lr_0); sqrt_k: the mean loss, beta_k = sqrt(k + 5) beta_inv and
    the weight-decay term -2 wd theta."""
    seeds, T, lr, wd, num_iter, decay = [0, 1], 7, 0.05, 0.001, 2, 3
    beta_inv = 1e-4 if variant == "final" else 0.5                  # noise of a moderate size in both
    e = _env("epp_quadratic", seeds, instance="per_seed")
    a = AGENTS["lmcts"](e.setting, seeds, T, hidden=8, dtype="float64", lr=lr, beta_inv=beta_inv, weight_decay=wd,
                        num_iter=num_iter, decay_step=decay, variant=variant)
    temp = np.sqrt(2 * beta_inv * e.setting.d * np.log(T) / lr)
    nets = [[p[b].detach().clone() for p in a.layers] for b in range(len(seeds))]
    hist = [[] for _ in seeds]
    k, cur_lr = 0, lr

    def f(params, x):
        W0, b0, W1, b1, W2, b2 = params
        return torch.relu(torch.relu(x @ W0.T + b0) @ W1.T + b1) @ W2.T + b2

    for t, (rnd, draws) in enumerate(_draws_per_round(a, e, T), start=1):
        if t % decay == 0:
            cur_lr = lr / t
        noises = draws["langevin"]
        assert len(noises) == num_iter
        for b in range(len(seeds)):
            feats = torch.tensor(rnd.obs.features[b])
            assert int(torch.argmax(f(nets[b], feats)[:, 0])) == rnd.arms[b]
            hist[b].append((feats[rnd.arms[b]], float(rnd.rewards[b])))
            for j, noise in enumerate(noises):
                params = [p.clone().requires_grad_(True) for p in nets[b]]
                loss = sum((y - f(params, x)[0]) ** 2 for x, y in hist[b])
                grads = torch.autograd.grad(loss if variant == "final" else loss / len(hist[b]), params)
                beta = np.sqrt(k + j + 1 + 5) * beta_inv
                off, new = 0, []
                for p, g in zip(nets[b], grads):
                    xi = torch.tensor(noise[b, off:off + p.numel()]).reshape(p.shape)
                    off += p.numel()
                    if variant == "final":
                        new.append(p - cur_lr * (g + wd * p + temp * xi))
                    else:
                        new.append(p - cur_lr * g + np.sqrt(2 * cur_lr / beta) * xi - 2 * wd * p)
                nets[b] = new
        k += num_iter
    assert a.steps == T * num_iter
    for b in range(len(seeds)):
        for p, q in zip(a.layers, nets[b]):
            assert torch.allclose(p[b].detach(), q, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# what the workflow reads without torch: the parameter column, the cost model


def test_param_count_column_of_a_cell():
    from ensemble_bandits.cells import param_count

    quad = {"name": "epp_quadratic", "d": 100, "n_arms": 50, "pool": 1000}
    assert param_count({"env": quad, "agent": {"name": "epinet", "M": 8}, "horizon": 10}) == 17931
    assert param_count({"env": dict(quad, name="epp_neural"), "agent": {"name": "ensemble_plus", "M": 64, "loss": "ce"},
                        "horizon": 10}) == 37888
    assert param_count({"env": {"name": "russo_finite", "d": 5, "n_arms": 10}, "agent": {"name": "lints"},
                        "horizon": 10}) is None


def _cost(agent, horizon=1000, **env):
    from ensemble_bandits.costs import cell_cost_seconds

    cell = {"env": {"name": "epp_quadratic", "d": 100, "n_arms": 50, "pool": 1000, **env}, "agent": agent,
            "horizon": horizon}
    return cell_cost_seconds(cell, 5)


def test_the_cost_model_follows_the_work_of_a_round():
    epp = {"name": "ensemble_pp_neural", "M": 8}
    base = _cost(epp)
    assert _cost(dict(epp, update="cube")) > base                     # 256 index vectors vs 16
    assert _cost(dict(epp, G=4)) > 2 * base
    assert _cost(dict(epp, update_freq=10)) < base
    assert _cost(epp, n_arms=10000, pool=10000) > 5 * base            # scoring 10,000 arms
    assert _cost(epp, horizon=100) < base / 5                          # hardly a gradient step
    assert _cost({"name": "greedy_neural"}) < base < _cost({"name": "epinet", "M": 8})
    # LMC-TS: full-history steps, so its cost per round grows with the horizon
    lm = {"name": "lmcts", "num_iter": 5}
    assert _cost(lm, horizon=40_000) / 40_000 > 1.5 * _cost(lm, horizon=20_000) / 20_000


# ---------------------------------------------------------------------------------------------
# code-faithful variants of the authors' code (off by default): each changes only what it names


def test_max_logit_ranking_picks_the_arm_holding_the_largest_logit_of_either_class():
    """Ensemble+ of the authors' code: on a fixed network, the arm whose largest logit (class 0 or
    1) is the largest, where P(class 1) would pick another arm."""
    e = _env("epp_neural", [0, 1])
    for name in ("ensemble_plus", "ensemble_pp_neural", "epinet"):
        a = AGENTS[name](e.setting, [0, 1], 10, loss="ce", rank_by="max_logit", **{**FAST, **_kw(name)})
        x = a.features(e.observe(1))
        xi = None if a.act_index() is None else a.tensor(a.act_index())
        s = a.scores(x, xi)
        if xi is None:
            xi = torch.zeros((a.B, max(a.M, 1)), dtype=a.dtype)
        logits = a.predict(x, xi[:, None, None, :].expand(-1, x.shape[1], 1, -1))[..., 0]     # (B, K, 2)
        naive = np.array([[max(float(logits[b, k, 0]), float(logits[b, k, 1])) for k in range(e.K)]
                          for b in range(a.B)])
        assert np.array_equal(s.detach().numpy(), naive.astype(np.float32)), name
        prob = logits[..., 1] - logits[..., 0]
        assert torch.equal(AGENTS[name](e.setting, [0, 1], 10, loss="ce", **{**FAST, **_kw(name)}).scores(x, xi), prob) \
            or name == "ensemble_pp_neural"           # the default ranking: P(class 1) (same weights, same draws)


def test_softmax_then_cross_entropy_is_the_double_softmax_and_nothing_else_changes():
    """EpiNet of the authors' code: cross-entropy applied to softmax outputs.  The loss on one batch is
    the hand-written double softmax; the first round's arms (before any training) are the default's."""
    seeds = [0, 1]
    e = _env("epp_neural", seeds)
    kw = {**FAST, **_kw("epinet"), "loss": "ce"}
    plain = AGENTS["epinet"](e.setting, seeds, 10, **kw)
    double = AGENTS["epinet"](e.setting, seeds, 10, **{**kw, "loss": "ce_softmax"})
    x = torch.randn(2, 4, 6)
    y = torch.tensor([[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    xi = double.update_indices(4)
    z = torch.zeros(2, 4, 0)
    pred = double.predict(x, xi)                                      # (B, n, 2, k)
    p = torch.softmax(pred, dim=2)
    logp = p - torch.logsumexp(p, dim=2, keepdim=True)
    naive = sum(-float(logp[b, i, int(y[b, i]), j]) / (4 * pred.shape[3])
                for b in range(2) for i in range(4) for j in range(pred.shape[3]))
    assert float(double.batch_loss(x, y, z, xi)) == pytest.approx(naive, rel=1e-5)
    assert float(plain.batch_loss(x, y, z, xi)) != pytest.approx(naive, rel=1e-3)
    obs = e.observe(1)
    assert np.array_equal(plain.select(1, obs), double.select(1, obs))


def test_an_unknown_ranking_or_loss_is_refused():
    e = _env("epp_neural", [0])
    with pytest.raises(ValueError, match="rank_by must be one of prob, logit, max_logit"):
        AGENTS["ensemble_plus"](e.setting, [0], 10, loss="ce", rank_by="argmax", **{**FAST, **_kw("ensemble_plus")})
    with pytest.raises(ValueError, match="loss must be one of"):
        AGENTS["epinet"](e.setting, [0], 10, loss="softmax", **{**FAST, **_kw("epinet")})


def test_flush_denormal_flushes_subnormals_during_the_rounds_only(monkeypatch):
    """``flush_denormal: true`` runs the agent's rounds with subnormals flushed to zero (the runner enters
    ``agent.arithmetic()``), and leaves torch's default mode after the run; without it nothing changes."""
    from ensemble_bandits import runner

    tiny = lambda: float((torch.tensor([1e-39], dtype=torch.float32) * 1.0)[0])    # noqa: E731  a float32 subnormal
    seen = []
    cls = AGENTS["ensemble_pp_neural"]
    update = cls.update

    def spying(self, t, obs, arms, rewards):
        seen.append(tiny())
        return update(self, t, obs, arms, rewards)

    monkeypatch.setattr(cls, "update", spying)
    cell = {"env": {"name": "epp_quadratic", "d": 6, "n_arms": 5, "pool": 20}, "horizon": 6,
            "agent": {"name": "ensemble_pp_neural", "M": 2, "hidden": 8, "G": 2, "batch_size": 4, "update_start": 3,
                      "flush_denormal": True}}
    runner.simulate_columns(cell, [0, 1])
    assert seen and all(v == 0.0 for v in seen) and tiny() > 0.0
    seen.clear()
    runner.simulate_columns({**cell, "agent": {**cell["agent"], "flush_denormal": False}}, [0, 1])
    assert seen and all(v > 0.0 for v in seen)
