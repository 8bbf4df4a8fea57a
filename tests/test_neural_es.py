"""The glmes neural family (agents/neural_es.py, agents/torch_common.py, envs/glmes_nonlinear.py):
batched networks against a per-seed, per-member autograd reference on the naive history sum, the
per-arm loss regrouping, each baseline's update on small hand-checked cases, parameter counts, batch
invariance bit for bit, the environments against a naive loop, and no torch at job-graph time."""
from __future__ import annotations

import math
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest
from helpers import run_fresh_python

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from ensemble_bandits.agents import AGENTS, neural_es as ne, neural_net as nn_   # noqa: E402
from ensemble_bandits.agents.torch_common import from_stream, n_params, torch_device, torch_dtype  # noqa: E402
from ensemble_bandits.envs import ENVIRONMENTS                           # noqa: E402
from ensemble_bandits.protocol import play                               # noqa: E402
from ensemble_bandits.rng import generator                               # noqa: E402

F64 = torch.float64
SMALL = dict(L=3, N=4, steps=4, lr=0.05, dtype="float64")


def small_env(seeds, d=4, K=6, kind="glmes_quadratic"):
    return ENVIRONMENTS[kind](seeds, d=d, n_arms=K)


def ref_f(Ws, x, N):
    """f(x; theta) of one network (list of (out, in) tensors) on arms x (K, d), the naive way."""
    h = x
    for W in Ws[:-1]:
        h = torch.relu(h @ W.T)
    return math.sqrt(N) * (h @ Ws[-1].T)[:, 0]


def ref_gd(Ws, W0, X, Y, lam, N, steps, lr, mean=True):
    """steps GD steps by autograd on 1/n [1/2 sum_l (f(x_l) - y_l)^2 + 1/2 lam N |theta - theta0|^2]."""
    Ws = [w.clone() for w in Ws]
    div = len(Y) if mean else 1.0
    for _ in range(steps):
        Ws = [w.detach().requires_grad_(True) for w in Ws]
        loss = 0.5 * ((ref_f(Ws, X, N) - Y) ** 2).sum() + 0.5 * lam * N * sum(((w - w0) ** 2).sum()
                                                                              for w, w0 in zip(Ws, W0))
        grads = torch.autograd.grad(loss / div, Ws)
        Ws = [(w - lr * g).detach() for w, g in zip(Ws, grads)]
    return Ws


def theta0_of(seed, name, d, L, N):
    return [torch.as_tensor(w) for w in nn_.init_weights(generator(seed, f"agent/{name}/init"), d, L, N)]


# -- torch_common -----------------------------------------------------------------------------------

def test_torch_common_helpers():
    assert torch_dtype() is torch.float32 and torch_dtype("float64") is torch.float64
    with pytest.raises(ValueError, match="dtype must be one of"):
        torch_dtype("float16")
    assert torch_device() == torch.device("cpu")
    with pytest.raises(ValueError, match="device must be one of"):
        torch_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            torch_device("cuda")
    t = from_stream(np.arange(3.0))
    assert t.dtype is torch.float32 and t.device.type == "cpu"
    assert from_stream(np.arange(3.0), "float64").dtype is torch.float64


# -- network ----------------------------------------------------------------------------------------

def test_parameter_counts_and_initialisation():
    assert nn_.n_weights(20, 3, 20) == 820 and nn_.n_weights(50, 3, 20) == 1420      # spec §2.4
    assert n_params(nn_.widths(20, 3, 20)) == 820 and n_params(nn_.widths(20, 5, 20)) == 20 * 20 + 3 * 400 + 20
    Ws = nn_.init_weights(np.random.default_rng(0), 20, 3, 20)
    assert [w.shape for w in Ws] == [(20, 20), (20, 20), (1, 20)]
    W1, W2, WL = Ws
    assert np.array_equal(W1[:10, :10], W1[10:, 10:]) and not W1[:10, 10:].any() and not W1[10:, :10].any()
    assert np.array_equal(W2[:10, :10], W2[10:, 10:]) and not W2[:10, 10:].any()
    assert np.array_equal(WL[0, :10], -WL[0, 10:])
    # variances 4/N (blocks) and 2/N (last layer), on many draws
    g = np.random.default_rng(1)
    many = [nn_.init_weights(g, 20, 3, 20) for _ in range(400)]
    assert abs(np.var([w[0][:10, :10] for w in many]) - 4 / 20) < 0.01
    assert abs(np.var([w[2][0, :10] for w in many]) - 2 / 20) < 0.01
    # odd d: blocks of ceil(d/2) and floor(d/2) columns
    W1 = nn_.init_weights(np.random.default_rng(0), 5, 3, 4)[0]
    assert W1.shape == (4, 5) and np.array_equal(W1[2:, 3:], W1[:2, :2]) and not W1[:2, 3:].any()
    # symmetric input [x; x]/sqrt(2): f(x; theta_0) = 0 (Remark 5.9)
    env = small_env([0, 1], d=4, K=6)
    a = AGENTS["neural_es"](env.setting, [0, 1], 10, m=2, symmetric_input=True, **SMALL)
    assert torch.allclose(a.outputs(a.inputs(env.observe(1))), torch.zeros(2, 2, 6, dtype=F64), atol=1e-14)


def test_per_arm_gradient_equals_naive_history_sum():
    """sum_l (f(x_{a_l}) - y_l - z_l)^2 regroups per arm: loss and gradient equal the history sum."""
    g = np.random.default_rng(3)
    B, M, K, d, N, t = 2, 3, 5, 4, 6, 40
    Ws = [torch.as_tensor(g.standard_normal((B, M, o, i))) for o, i in [(N, d), (N, N), (1, N)]]
    X = torch.as_tensor(g.standard_normal((B, K, d)))
    arms = g.integers(0, K, (B, t))
    y = g.standard_normal((B, t))
    z = g.standard_normal((B, M, t))
    n, s, P = np.zeros((B, K)), np.zeros((B, K)), np.zeros((B, M, K))
    for b in range(B):
        np.add.at(n[b], arms[b], 1.0)
        np.add.at(s[b], arms[b], y[b])
        for j in range(M):
            np.add.at(P[b, j], arms[b], z[b, j])
    f, acts = nn_.forward(Ws, X, math.sqrt(N))
    c = torch.as_tensor(n)[:, None] * f - torch.as_tensor(s)[:, None] - torch.as_tensor(P)
    grads = nn_.backward(Ws, acts, c, math.sqrt(N))
    for b in range(B):
        for j in range(M):
            W = [w[b, j].clone().requires_grad_(True) for w in Ws]
            fx = ref_f(W, X[b][torch.as_tensor(arms[b])], N)
            target = torch.as_tensor(y[b] + z[b, j])
            naive = 0.5 * ((fx - target) ** 2).sum()
            ref = torch.autograd.grad(naive, W)
            for gr, r in zip(grads, ref):
                torch.testing.assert_close(gr[b, j], r, rtol=0, atol=1e-10)
            fk = f[b, j].detach()
            per_arm = 0.5 * (torch.as_tensor(n[b]) * fk ** 2 - 2 * fk * torch.as_tensor(s[b] + P[b, j])).sum() \
                + 0.5 * (target ** 2).sum()
            assert abs(float((per_arm - naive).detach())) < 1e-10


def test_per_arm_jacobian_equals_autograd():
    g = np.random.default_rng(4)
    B, K, d, N = 2, 5, 4, 6
    Ws = [torch.as_tensor(g.standard_normal((B, 1, o, i))) for o, i in [(N, d), (N, N), (1, N)]]
    X = torch.as_tensor(g.standard_normal((B, K, d)))
    _, acts = nn_.forward(Ws, X, math.sqrt(N))
    G = nn_.per_arm_grads(Ws, acts, math.sqrt(N))
    assert G.shape == (B, K, nn_.n_weights(d, 3, N))
    for b in range(B):
        for k in range(K):
            W = [w[b, 0].clone().requires_grad_(True) for w in Ws]
            ref = torch.autograd.grad(ref_f(W, X[b, k:k + 1], N)[0], W)
            torch.testing.assert_close(G[b, k], torch.cat([r.reshape(-1) for r in ref]), rtol=0, atol=1e-12)


# -- Neural-ES against a per-seed, per-member reference ---------------------------------------------

def test_neural_es_matches_per_seed_per_member_reference():
    seeds, T, m, d, K, scale = [3, 8], 9, 3, 4, 6, 0.1
    env = small_env(seeds, d, K)
    agent = AGENTS["neural_es"](env.setting, seeds, T, m=m, scale=scale, **SMALL)
    arms_run = [r.arms.copy() for r in play(env, agent, T)]
    L, N, steps, lr = SMALL["L"], SMALL["N"], SMALL["steps"], SMALL["lr"]
    for b, seed in enumerate(seeds):
        renv = small_env([seed], d, K)
        X = torch.as_tensor(renv.features[0])
        W0 = theta0_of(seed, "neural_es", d, L, N)
        Ws = [[w.clone() for w in W0] for _ in range(m)]
        Z = scale * generator(seed, "agent/neural_es/reward_perturbation").standard_normal(T * m).reshape(T, m)
        U = generator(seed, "agent/neural_es/selection").random(T)
        jit = 1e-12 * generator(seed, "agent/neural_es/tiebreak").random(K)
        pulled, ys = [], []
        for t in range(1, T + 1):
            j = min(int(U[t - 1] * m), m - 1)
            a = (t - 1) % K if t <= K else int(np.argmax(ref_f(Ws[j], X, N).numpy() + jit))
            assert a == arms_run[t - 1][b], (seed, t)
            y, _ = renv.step(np.array([a]))
            pulled.append(a)
            ys.append(y[0])
            Xh = X[torch.as_tensor(pulled)]
            for jj in range(m):                                      # one member at a time
                Ws[jj] = ref_gd(Ws[jj], W0, Xh, torch.as_tensor(np.array(ys) + Z[:t, jj]), 1.0, N, steps, lr)
        for jj in range(m):
            for w_b, w_r in zip(agent.W, Ws[jj]):
                torch.testing.assert_close(w_b[b, jj], w_r, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["neural_es", "neural_ts"])
def test_batch_split_is_bit_identical_seed_by_seed(name):
    """float32 on CPU, seed_by_seed: seeds [0..3] together give the very same bits as [0, 1] and [2, 3]."""
    T, kw = 10, dict(L=3, N=6, steps=3, seed_by_seed=True)
    if name == "neural_es":
        kw["m"] = 3

    def run(seeds):
        env = small_env(seeds, 4, 5)
        agent = AGENTS[name](env.setting, seeds, T, **kw)
        arms = np.stack([r.arms for r in play(env, agent, T)], axis=1)
        return arms, agent.W

    arms, W = run([0, 1, 2, 3])
    for part in ([0, 1], [2, 3]):
        a2, W2 = run(part)
        sl = slice(part[0], part[-1] + 1)
        assert np.array_equal(arms[sl], a2)
        for w, w2 in zip(W, W2):
            assert torch.equal(w[sl], w2)


@pytest.mark.parametrize("env", [{"name": "glmes_quadratic", "d": 4, "n_arms": 5},
                                 {"name": "sphere_contexts", "d": 4, "n_arms": 5}])
@pytest.mark.parametrize("name", ["neural_es", "neural_ts", "neural_phe", "neural_es_anytime"])
def test_fixed_seed_blocks_make_a_seed_independent_of_its_job(name, env):
    """Batched (the default), a seed's numbers depend on its batch, so the runner plays the seed's whole
    aligned block of SEED_BLOCK seeds: seed 3 alone, seeds 0..11 in one job and the split [0, 5), [5, 12)
    give the same bits, on a fixed arm set and on per-round contexts; seed_by_seed: true declares no block."""
    from ensemble_bandits import cells, runner
    kw = {"m": 2} if name == "neural_es" else {"T0": 4, "m": 2} if name == "neural_es_anytime" else {}
    kw.update({"warmup": 3} if env["name"] == "sphere_contexts" else {})
    cell = {"env": env, "horizon": 8,
            "agent": {"name": name, "L": 3, "N": 4, "steps": 2, **kw}}
    assert cells.seed_block(cell) == ne.SEED_BLOCK
    assert cells.seed_block({**cell, "agent": {**cell["agent"], "seed_by_seed": True}}) is None
    alone = runner.simulate_columns(cell, [3])
    whole = runner.simulate_columns(cell, list(range(12)))
    parts = [runner.simulate_columns(cell, list(range(a, b))) for a, b in ((0, 5), (5, 12))]
    assert np.array_equal(whole["seed"], np.repeat(np.arange(12), len(runner.checkpoints(8))))
    assert np.array_equal(alone["regret"], whole["regret"][whole["seed"] == 3])
    assert np.array_equal(whole["regret"], np.concatenate([p["regret"] for p in parts]))


def test_structured_widths_equal_the_dense_form():
    """StructuredWidths against g^T U^{-1} g with the full matrix, over 400 Sherman-Morrison steps of
    gradients g = [delta (x) x_a; e] of random arms (float64: equal up to rounding)."""
    B, K, d, N, pD, lam = 2, 7, 5, 4, 9, 0.5
    g_ = torch.Generator().manual_seed(0)
    x = torch.randn(B, K, d, generator=g_, dtype=F64)
    p = N * d + pD
    Uinv = torch.eye(p, dtype=F64).expand(B, -1, -1).clone() / lam
    S = nn_.StructuredWidths(Uinv, x, N)
    worst = 0.0
    for step in range(400):
        delta, e = torch.randn(B, K, N, generator=g_, dtype=F64), torch.randn(B, K, pD, generator=g_, dtype=F64)
        g = torch.cat([(delta.unsqueeze(-1) * x.unsqueeze(-2)).reshape(B, K, -1), e], -1)
        dense = (g @ Uinv * g).sum(-1)
        worst = max(worst, float(((S.widths(Uinv, delta, e) - dense).abs() / dense.abs()).max()))
        a = torch.randint(K, (B,), generator=g_)
        nn_.sherman_morrison(Uinv, g[torch.arange(B), a] * 0.3, S)
    assert worst < 1e-11
    # and the per-arm blocks are those of the final U^{-1}
    fresh = nn_.StructuredWidths(Uinv, x, N)
    torch.testing.assert_close(S.C, fresh.C, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(S.E, fresh.E, rtol=1e-10, atol=1e-12)


# -- baselines ----------------------------------------------------------------------------------------

def test_neural_phe_update_one_gd_step_by_hand():
    """steps = 1: theta_1 = theta_0 - lr/t [grad of 1/2 sum_k (n_k f_k^2 - 2 f_k (s_k + scale sqrt(n_k) xi_k))]
    with fresh xi (K per round, from the seed's stream); the regulariser vanishes at theta_0."""
    seeds, K, d, N, T = [5], 4, 4, 4, 6
    env = small_env(seeds, d, K)
    agent = AGENTS["neural_phe"](env.setting, seeds, T, scale=0.3, phe_restart=True, L=3, N=N, steps=1, lr=0.1,
                                 dtype="float64")
    hist = [(r.arms[0], r.rewards[0]) for r in play(env, agent, T)]
    xi = generator(5, "agent/neural_phe/fresh_perturbation").standard_normal(K * T).reshape(T, K)[-1]
    n = np.bincount([a for a, _ in hist], minlength=K).astype(float)
    s = np.bincount([a for a, _ in hist], weights=[y for _, y in hist], minlength=K)
    W0 = [w.clone().requires_grad_(True) for w in theta0_of(5, "neural_phe", d, 3, N)]
    f = ref_f(W0, torch.as_tensor(env.features[0]), N)
    loss = 0.5 * (torch.as_tensor(n) * f ** 2 - 2 * f * torch.as_tensor(s + 0.3 * np.sqrt(n) * xi)).sum()
    grads = torch.autograd.grad(loss / T, W0)
    for w, w0, g in zip(agent.W, W0, grads):
        torch.testing.assert_close(w[0, 0], (w0 - 0.1 * g).detach(), rtol=0, atol=1e-12)
    assert [a for a, _ in hist[:K]] == list(range(K))                  # warm-up: each arm once


@pytest.mark.parametrize("name", ["neural_ucb", "neural_ts"])
@pytest.mark.parametrize("matrix", ["full", "diag"])
def test_neural_ucb_ts_scores_and_matrix_by_hand(name, matrix):
    seeds, K, d, N, T, lam = [2], 5, 4, 4, 7, 2.0
    env = small_env(seeds, d, K)
    agent = AGENTS[name](env.setting, seeds, T + 1, matrix=matrix, lam=lam, L=3, N=N, steps=2, lr=0.05,
                         dtype="float64")
    X = torch.as_tensor(env.features[0])
    p = nn_.n_weights(d, 3, N)
    U = lam * torch.eye(p, dtype=F64)
    for rnd in play(env, agent, T):
        pass
    # U from the gradients at the weights that chose each arm: replay by recording them
    env = small_env(seeds, d, K)
    agent = AGENTS[name](env.setting, seeds, T + 1, matrix=matrix, lam=lam, L=3, N=N, steps=2, lr=0.05,
                         dtype="float64")
    for t in range(1, T + 1):
        obs = env.observe(t)
        W = [w[0, 0].clone().requires_grad_(True) for w in agent.W]
        arms = agent.select(t, obs)
        g = torch.cat([r.reshape(-1) for r in torch.autograd.grad(ref_f(W, X[arms[0]:arms[0] + 1], N)[0], W)])
        U += torch.outer(g, g) / N
        r, _ = env.step(arms)
        agent.update(t, obs, arms, r)
    Uinv = torch.linalg.inv(U) if matrix == "full" else 1.0 / torch.diagonal(U)
    got = agent.Uinv[0]
    torch.testing.assert_close(got, Uinv, rtol=1e-9, atol=1e-12)
    # scores of round T+1 against the formulas of spec §2.6
    W = [w[0, 0].clone().requires_grad_(True) for w in agent.W]
    q, f = [], ref_f(W, X, N).detach()
    for k in range(K):
        g = torch.cat([r.reshape(-1) for r in torch.autograd.grad(ref_f(W, X[k:k + 1], N)[0], W)])
        q.append(float(g @ (Uinv @ g)) / N if matrix == "full" else float((g * g * Uinv).sum()) / N)
    q = np.array(q)
    jit = 1e-12 * generator(2, f"agent/{name}/tiebreak").random(K)
    if name == "neural_ucb":
        expect = f.numpy() + np.sqrt(q)
    else:
        zeta = generator(2, "agent/neural_ts/posterior").standard_normal(K * (T + 1)).reshape(T + 1, K)[T]
        expect = f.numpy() + np.sqrt(lam * q) * zeta
    assert agent.choose(T + 1, agent.inputs(env.observe(T + 1)))[0] == int(np.argmax(expect + jit))
    fk, qk = agent.widths2(agent.inputs(env.observe(T + 1)))
    np.testing.assert_allclose(qk[0].numpy(), q, rtol=1e-9, atol=1e-14)


def test_anytime_neural_es_restarts_with_epoch_hyper_parameters():
    env = small_env([0, 1], 4, 6)
    a = AGENTS["neural_es_anytime"](env.setting, [0, 1], 40, T0=10, steps=2, L=3, N=4)
    for _ in play(env, a, 40):
        pass
    assert [e["first"] for e in a.epochs] == [1, 11, 27]
    assert a.epochs[1]["m"] == max(1, math.floor(2 * math.log(16) + 0.5)) and a.agent.M == a.epochs[-1]["m"]
    assert AGENTS["neural_es_anytime"].uses_accelerator and AGENTS["neural_es"].ensemble_size({}, 100) == 10


def test_options_are_checked_and_visible_to_the_registry():
    import inspect
    from ensemble_bandits import cells
    params = inspect.signature(AGENTS["neural_ucb"].__init__).parameters
    assert {"gamma", "matrix", "lam", "dtype", "device", "warmup"} <= set(params)
    cell = {"env": {"name": "glmes_quadratic"}, "agent": {"name": "neural_es", "m": 4, "dtype": "float64"},
            "horizon": 10}
    cells.check_cell(cell)
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        cells.check_cell({**cell, "agent": {"name": "neural_es", "M": 4}})
    env = small_env([0], 4, 6)
    with pytest.raises(ValueError, match="loss_scale"):
        AGENTS["neural_es"](env.setting, [0], 10, loss_scale="median")


# -- environments -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["glmes_distance", "glmes_quadratic"])
def test_environments_against_naive_loop(kind):
    seeds, d, K = [0, 7], 5, 8
    env = ENVIRONMENTS[kind](seeds, d=d, n_arms=K)
    lin = ENVIRONMENTS["sphere_logistic"](seeds, d=d, n_arms=K)
    assert np.array_equal(env.features, lin.features)                   # common random numbers
    for b, seed in enumerate(seeds):
        g = generator(seed, "env/instance")
        x = g.standard_normal((K, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        if kind == "glmes_distance":
            th = g.standard_normal(d)
            th /= np.linalg.norm(th)
            h = [-math.sqrt(sum((x[k, i] - th[i]) ** 2 for i in range(d))) for k in range(K)]
        else:
            A = g.standard_normal((d, d))
            h = [0.01 * sum((sum(x[k, i] * A[i, c] for i in range(d))) ** 2 for c in range(d)) for k in range(K)]
        np.testing.assert_allclose(env.means[b], h, rtol=1e-12, atol=1e-14)
        assert env.best_arm[b] == int(np.argmax(h))
    noise = np.stack([generator(s, "env/noise").standard_normal(3) for s in seeds])
    for t in range(3):
        arms = np.array([t, K - 1 - t])
        r, reg = env.step(arms)
        mean = env.means[[0, 1], arms]
        np.testing.assert_allclose(r, mean + 0.5 * noise[:, t], rtol=0, atol=1e-14)
        np.testing.assert_allclose(reg, env.means.max(axis=1) - mean, rtol=0, atol=1e-14)
    big = ENVIRONMENTS[kind]([0], d=50, n_arms=500)
    assert big.features.shape == (1, 500, 50) and big.setting.K == 500


def test_looking_up_the_neural_agents_imports_no_torch():
    code = ("import sys\nfrom ensemble_bandits.agents import AGENTS\nfrom ensemble_bandits.catalog import hyper\n"
            "for n in ('neural_es', 'neural_es_anytime', 'neural_phe', 'neural_ucb', 'neural_ts'):\n"
            "    c = AGENTS[n]; c.ensemble_size({}, 10000); assert c.uses_accelerator\n"
            "from ensemble_bandits.envs import ENVIRONMENTS\nENVIRONMENTS['glmes_quadratic'].dimensions({})\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\nprint('ok')\n")
    run_fresh_python(code)


# -- per-round contexts: the members' shared first layer, the bucketed history, the compiled step ----

def _random_net(g, B, M, d, N, L=3):
    shapes = [(N, d)] + [(N, N)] * (L - 2) + [(1, N)]
    return [torch.as_tensor(g.standard_normal((B, M, o, i))) for o, i in shapes]


def test_members_first_layer_as_one_product_equals_the_broadcast_one():
    """shared_first: the M members' first layers as one product with x, and its gradient as one product
    of the stacked deltas with x, give the broadcast per-member products' numbers (float64, to rounding)."""
    g = np.random.default_rng(11)
    B, M, R, d, N = 2, 3, 7, 5, 4
    Ws = _random_net(g, B, M, d, N)
    x = torch.as_tensor(g.standard_normal((B, R, d)))
    c = torch.as_tensor(g.standard_normal((B, M, R)))
    f0, acts0 = nn_.forward(Ws, x, 2.0)
    f1, acts1 = nn_.forward(Ws, x, 2.0, shared_first=True)
    torch.testing.assert_close(f1, f0, rtol=0, atol=1e-12)
    assert acts1[1].shape == (B, M, R, N) and acts1[1].is_contiguous()
    for g1, g0 in zip(nn_.backward(Ws, acts1, c, 2.0, shared_first=True), nn_.backward(Ws, acts0, c, 2.0)):
        torch.testing.assert_close(g1, g0, rtol=0, atol=1e-12)


def test_a_bucketed_history_fits_as_the_unpadded_one():
    """The fit over a history's whole storage, rows past t at weight zero with zero targets (the bucket
    a compiled fit runs on), equals the fit over the t rows (float64, to rounding)."""
    g = np.random.default_rng(12)
    B, M, t, S, d, N = 2, 3, 9, 16, 5, 4
    W0 = _random_net(g, B, M, d, N)
    x = torch.zeros((B, S, d), dtype=F64)
    x[:, :t] = torch.as_tensor(g.standard_normal((B, t, d)))
    target = torch.zeros((B, M, S), dtype=F64)
    target[..., :t] = torch.as_tensor(g.standard_normal((B, M, t)))
    n = torch.zeros((B, 1, S), dtype=F64)
    n[..., :t] = 1.0
    args = (6, 0.01, 4.0, 2.0, True)
    plain = nn_.descend(W0, W0, x[:, :t], None, target[..., :t], *args)
    padded = nn_.descend(W0, W0, x, n, target, *args)
    for a, b in zip(padded, plain):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_a_bucketed_history_grows_in_powers_of_two_whatever_its_horizon():
    """compiled fits see few shapes: 256, 512, 1024 rows for a horizon of 300 or 700 alike; the plain
    history stops growing at its horizon."""
    for T in (300, 700):
        h, plain = ne.RoundHistory(1, T, 2, F64, "cpu", buckets=True), ne.RoundHistory(1, T, 2, F64, "cpu")
        sizes = set()
        for t in range(min(T, 600)):
            h.add(torch.ones((1, 2), dtype=F64), np.ones(1))
            plain.add(torch.ones((1, 2), dtype=F64), np.ones(1))
            sizes.add(h.bucket()[0].shape[1])
        assert sizes == ({256, 512} if T == 300 else {256, 512, 1024})
        assert plain.x.shape[1] == T and h.bucket()[1].sum() == min(T, 600)


def test_compiled_fit_on_contexts_plays_as_the_eager_one():
    """compiled: true (the default on CUDA) runs each GD step compiled (torch.compile, here on the CPU)
    over the history's bucket: the same arms and weights to rounding as the eager fit over the t rows
    (one compile, some 20-60 s: Neural-ES only; the padding of other agents' offsets is the same line)."""
    seeds, T = [0, 1], 10
    kw = dict(m=3, L=3, N=4, steps=3, lr=0.05, dtype="float64", warmup=3)

    def run(compiled):
        env = ENVIRONMENTS["sphere_contexts"](seeds, d=3, n_arms=4)
        agent = AGENTS["neural_es"](env.setting, seeds, T, compiled=compiled, **kw)
        return np.stack([r.arms for r in play(env, agent, T)], axis=1), agent

    arms, eager = run(False)
    arms_c, comp = run(True)
    assert comp.compiled and not eager.compiled and comp.history.x.shape[1] == 256   # the first bucket
    assert np.array_equal(arms_c, arms)
    for a, b in zip(comp.W, eager.W):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_a_compiler_that_cannot_run_falls_back_to_the_eager_step(monkeypatch, capsys):
    """Without a working compiler (no Triton on a GPU, no C++ compiler) the first compiled step says so
    and the fit goes on eagerly, with the eager numbers."""
    def broken(fn, **kw):
        def call(*args):
            raise RuntimeError("Cannot find a working triton installation\nmore")
        return call

    monkeypatch.setattr(torch, "compile", broken)
    monkeypatch.setattr(nn_, "_COMPILED", {})
    g = np.random.default_rng(13)
    W0 = _random_net(g, 2, 3, 4, 4)
    x = torch.as_tensor(g.standard_normal((2, 5, 4)))
    target = torch.as_tensor(g.standard_normal((2, 3, 5)))
    args = (3, 0.01, 4.0, 2.0, True)
    out = nn_.descend(W0, W0, x, None, target, *args, compiled=True)
    err = capsys.readouterr().err
    assert err.count("torch.compile failed on cpu (RuntimeError: Cannot find a working triton installation)") == 1
    for a, b in zip(out, nn_.descend(W0, W0, x, None, target, *args)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_context_cells_of_the_neural_agents_are_revision_2():
    """The shared first layer changed the per-round-context cells' numbers (to rounding) only: their
    stamp says revision 2, the fixed-arm cells' (committed) stays revision 1."""
    from ensemble_bandits.cells import algorithms_stamp
    for name in ("neural_es", "neural_es_anytime", "neural_ts"):
        assert algorithms_stamp({"env": {"name": "uci_classification"}, "agent": {"name": name}}).endswith(
            f"{name} revision 2")
        assert algorithms_stamp({"env": {"name": "glmes_quadratic"}, "agent": {"name": name}}).endswith(
            f"{name} revision 1")
