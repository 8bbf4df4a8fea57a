"""The text family: Davidson loader, the MiniLM encoder and its feature cache (text.py), the
hate-speech moderation bandit (envs/text.py) and the frozen-feature heads of neural_pp on it
(per-action reference, batch invariance)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from ensemble_bandits import text  # noqa: E402
from ensemble_bandits.agents import AGENTS  # noqa: E402
from ensemble_bandits.agents import neural_pp as npp  # noqa: E402
from ensemble_bandits.envs import ENVIRONMENTS  # noqa: E402
from ensemble_bandits.protocol import play  # noqa: E402
from ensemble_bandits.runner import simulate_columns  # noqa: E402
from helpers import repo_data_dir  # noqa: E402
from test_neural_pp import _draws_per_round, _minibatch  # noqa: E402

FIXTURE = (',count,hate_speech,offensive_language,neither,class,tweet\n'
           '0,3,0,0,3,2,!!! RT @a: a plain tweet\n'
           '1,3,2,1,0,0,"a tweet with ""quotes""\nand a newline"\n'
           '2,6,1,5,0,1,an offensive one\n')


@pytest.fixture
def fixture_csv(tmp_path):
    p = tmp_path / "labeled_data.csv"
    p.write_text(FIXTURE, encoding="utf-8")
    return p


def test_loader_reads_quoted_newlines_and_maps_labels(fixture_csv):
    c = text.read_corpus(fixture_csv)
    assert c.text[1] == 'a tweet with "quotes"\nand a newline'
    assert list(c.klass) == [2, 0, 1] and list(c.count) == [3, 3, 6] and list(c.hate_votes) == [0, 2, 1]
    assert list(c.hate()) == [False, True, True]                  # default: class 0 or 1 is not publishable
    assert list(c.hate("hate_class")) == [False, True, False]
    assert list(c.hate("hate_score")) == [False, True, False]     # 2/3 > 0.5, 1/6 not
    with pytest.raises(ValueError, match="unknown label mapping"):
        c.hate("nope")


def test_the_shipped_corpus_and_its_base_rate():
    c = text.load_corpus()
    assert len(c.text) == 24_783
    assert c.hate().mean() == pytest.approx(0.832, abs=1e-3)


def test_minilm_encoder_and_feature_cache(fixture_csv, tmp_path):
    enc = text.TextEncoder("minilm", threads=1)
    a = enc.encode(["the cat sat on the mat", "hello"])
    assert a.shape == (2, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a, enc.encode(["the cat sat on the mat", "hello"]))      # deterministic
    # batch padding does not change a post's features (mean over non-pad tokens)
    assert np.allclose(enc.encode(["hello"])[0], a[1], atol=1e-5)
    c = text.read_corpus(fixture_csv)
    logs = []
    f1 = text.embeddings(c, tmp_path / "cache", batch=2, threads=1, log=logs.append)
    path = text.embedding_file(tmp_path / "cache", c.sha256)
    assert path.is_file() and f1.shape == (3, 384) and logs
    assert np.allclose(f1, enc.encode(c.text), atol=1e-5)       # input order kept despite length sorting
    f2 = text.embeddings(c, tmp_path / "cache", log=lambda m: pytest.fail("cache miss"))
    assert np.array_equal(f1, f2)
    with pytest.raises(ValueError, match="another corpus"):
        text.read_embeddings(path, "0" * 64)


def test_gpt_encoders_need_local_weights(monkeypatch):
    monkeypatch.delenv("ENSEMBLE_BANDITS_GPT2", raising=False)
    with pytest.raises(FileNotFoundError, match="cannot be downloaded"):
        text.encoder("gpt2").path()
    with pytest.raises(ValueError, match="unknown encoder"):
        text.encoder("bert")


def test_last_token_pooling_reads_the_last_non_pad_state():
    hidden = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    assert torch.equal(text.pool(hidden, mask, "last"), torch.stack([hidden[0, 1], hidden[1, 3]]))
    assert torch.allclose(text.pool(hidden, mask, "mean")[0], hidden[0, :2].mean(dim=0))


# ---------------------------------------------------------------------------------------------
# the environment (features: random stand-ins with the real corpus's checksum, no encoding)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    c = text.load_corpus()
    d = tmp_path_factory.mktemp("emb")
    feats = np.random.default_rng(0).standard_normal((len(c.text), 384)).astype(np.float32)
    with open(text.embedding_file(d, c.sha256), "wb") as fh:
        np.savez(fh, features=feats, sha256=c.sha256)
    return d


def _env(seeds, cache, **kw):
    return ENVIRONMENTS["hate_speech"](seeds, cache_dir=cache, **kw)


def test_posts_keeps_the_first_posts_and_names_its_own_features_file(cache):
    c = text.load_corpus()
    with open(text.embedding_file(cache, c.sha256, posts=30), "wb") as fh:
        np.savez(fh, features=np.ones((30, 384), np.float32), sha256=c.sha256)
    e = _env([0, 1], cache, posts=30)
    assert e.N == 30 and np.array_equal(e.hate, c.hate("not_neither")[:30])
    assert all(0 <= e.post(t).max() < 30 for t in range(1, 70))              # only the first 30, cycled
    assert ENVIRONMENTS["hate_speech"].derived_inputs({"posts": 30}) == [
        "results/embeddings/hate_speech_davidson-fcb8bc7c6812-minilm-256-first30.npz"]
    with pytest.raises(ValueError, match="posts must be in 1"):
        _env([0], cache, posts=0)


def test_reward_and_regret_table(cache):
    e = _env([0, 1, 2], cache)
    assert e.setting.d == 768 and e.setting.K == 2 and e.setting.action_space == "contexts"
    assert ENVIRONMENTS["hate_speech"].dimensions({}) == (768, 2)
    assert ENVIRONMENTS["hate_speech"].datasets({}) == ["hate_speech_davidson"]
    assert ENVIRONMENTS["hate_speech"].derived_inputs({}) == [
        "results/embeddings/hate_speech_davidson-fcb8bc7c6812-minilm-256.npz"]
    for t in (1, 2, 3):
        obs = e.observe(t)
        idx = e.post(t)
        phi = e.phi[idx]
        assert np.array_equal(obs.features[:, 0, :384], phi) and not obs.features[:, 0, 384:].any()
        assert np.array_equal(obs.features[:, 1, 384:], phi) and not obs.features[:, 1, :384].any()
        for arm in (0, 1):
            r, reg = e.step(np.full(3, arm))
            for b in range(3):
                hate = e.hate[idx[b]]
                want = {(0, False): 1.0, (0, True): -0.5, (1, False): 0.5, (1, True): 0.5}[(arm, bool(hate))]
                best = 0.5 if hate else 1.0
                assert r[b] == want and reg[b] == best - want
                assert (reg[b] > 0) == (arm != (1 if hate else 0))     # a mistake iff positive regret


def test_post_order_is_a_per_seed_permutation_batch_invariant_and_reshuffled(cache):
    e = _env([0, 1, 2], cache)
    N = e.N
    first = np.stack([e.post(t) for t in range(1, N + 1)], axis=1)
    assert all(len(set(row)) == N for row in first)
    assert not np.array_equal(first[0], first[1])
    second = e.post(N + 1)
    assert not np.array_equal(second, first[:, 0])               # pass 2 is a new permutation (w.h.p.)
    alone = _env([1], cache)
    assert np.array_equal(alone.post(5), e.post(5)[1:2]) and np.array_equal(alone.post(N + 1), second[1:2])


def test_accuracy_column_counts_correct_actions(cache):
    cell = {"env": {"name": "hate_speech", "cache_dir": str(cache)}, "agent": {"name": "lints"}, "horizon": 50}
    cols = simulate_columns(cell, [0, 1], data_dir=repo_data_dir())
    for seed in (0, 1):
        rows = cols["seed"] == seed
        # a round's regret is 0 (correct), 0.5 (free post blocked) or 1 (hate post published)
        acc, reg, t = cols["accuracy"][rows], cols["regret"][rows], cols["t"][rows]
        assert np.all((acc >= 0) & (acc <= 1)) and acc[0] in (0.0, 1.0)
        wrong = (1 - acc) * t
        assert np.allclose(wrong, np.round(wrong)) and np.all(0.5 * wrong <= reg + 1e-9) and np.all(reg <= wrong + 1e-9)
    assert "accuracy" not in simulate_columns({"env": {"name": "russo_finite", "d": 3, "n_arms": 4},
                                               "agent": {"name": "lints"}, "horizon": 5}, [0], data_dir=repo_data_dir())


# ---------------------------------------------------------------------------------------------
# the frozen-feature heads: Ensemble++ on the disjoint encoding == the paper's per-action head


LLM = dict(hidden=0, init_blocks=2, batch_size=4, update_start=3, update_freq=2, buffer_size=6, weight_decay=0.1,
           prior_scale=0.2, posterior_scale=0.1)


def test_linear_body_initialises_like_per_action_heads(cache):
    e = _env([0], cache)
    a = AGENTS["ensemble_pp_neural"](e.setting, [0], 10, M=4, prior_init="xavier", **LLM)
    D = 384
    assert a.D == 768 and a.trunk == []
    b = a.base[0][0].detach().numpy()
    assert np.abs(b).max() <= 1 / np.sqrt(D) and np.abs(b).max() > 0.95 / np.sqrt(D)   # U(+-1/sqrt(D_phi))
    assert a.P0.std().item() == pytest.approx(np.sqrt(2 / (4 + 768)), rel=0.05)        # xavier, not unit rows
    g = AGENTS["greedy_neural"](e.setting, [0], 10, base_init="xavier", **{k: v for k, v in LLM.items()
                                                                           if "scale" not in k})
    assert g.base[0].std().item() == pytest.approx(np.sqrt(2 / (D + 2)), rel=0.1)       # Linear(D_phi -> 2)
    assert AGENTS["ensemble_pp_neural"].param_count({"hidden": 0, "M": 4}, 768) == 9 * 768 + 1
    with pytest.raises(ValueError, match="init_blocks"):
        AGENTS["greedy_neural"](e.setting, [0], 10, hidden=0, init_blocks=5)


def test_ensemble_pp_head_matches_a_per_action_reference(cache):
    seeds, T, M, D = [0, 1], 11, 4, 384
    e = _env(seeds, cache)
    a = AGENTS["ensemble_pp_neural"](e.setting, seeds, T, M=M, prior_init="xavier", dtype="float64", lr=0.01, **LLM)
    # the paper's model in phi space: f(phi, zeta)[a] = <phi, b^a> + 0.1 phi^T W^a zeta + 0.2 phi^T P^a zeta
    ref = []
    for b in range(2):
        base = a.base[0][b][0].detach().clone().reshape(2, D).requires_grad_(True)               # (action, D)
        W = a.W[b][:, 0, :].detach().clone().reshape(2, D, M).requires_grad_(True)              # (action, D, M)
        P = a.P0[b][:, 0, :].detach().clone().reshape(2, D, M)
        ref.append((base, W, P, torch.optim.Adam([base, W], lr=0.01)))

    def f(r, phi, zeta):
        base, W, P, _ = r
        head = 0.1 * W + 0.2 * P
        return base @ phi + torch.einsum("d,adm,m->a", phi, head, zeta)

    Xi = npp.enumerated("coordinate", M)
    bufs = [[None] * a.capacity for _ in seeds]
    for t, (rnd, draws) in enumerate(_draws_per_round(a, e, T), start=1):
        for b, r in enumerate(ref):
            phi = torch.tensor(e.phi[e.post(t)[b]], dtype=torch.float64)
            with torch.no_grad():
                assert int(torch.argmax(f(r, phi, torch.tensor(draws["reference"][0][b])))) == rnd.arms[b]
            bufs[b][(t - 1) % a.capacity] = (phi, int(rnd.arms[b]), float(rnd.rewards[b]), draws["perturbation"][0][b])
            n = min(t, a.capacity)
            for u in draws.get("minibatch", []):
                terms = [(y + 0.01 * float(xi @ z) - f(r, phi_i, torch.tensor(xi))[act]) ** 2
                         for phi_i, act, y, z in (bufs[b][i] for i in _minibatch(u[b], n)) for xi in Xi]
                r[3].param_groups[0]["weight_decay"] = 0.1 / n
                r[3].zero_grad()
                torch.stack(terms).mean().backward()
                r[3].step()
    assert a.steps == sum(1 for t in range(LLM["update_start"], T + 1) if t % LLM["update_freq"] == 0)
    for b, (base, W, _, _) in enumerate(ref):
        assert torch.allclose(a.base[0][b][0].detach(), base.detach().reshape(-1), rtol=0, atol=1e-10)
        assert torch.allclose(a.W[b][:, 0, :].detach(), W.detach().reshape(2 * D, M), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["ensemble_pp_neural", "ensemble_plus", "greedy_neural"])
def test_heads_are_batch_invariant(cache, name):
    kw = dict(LLM) if name != "greedy_neural" else {k: v for k, v in LLM.items() if "scale" not in k}
    kw.update({"ensemble_pp_neural": dict(M=4, prior_init="xavier"), "ensemble_plus": dict(M=4),
               "greedy_neural": dict(base_init="xavier")}[name])
    cell = {"env": {"name": "hate_speech", "cache_dir": str(cache)}, "agent": {"name": name, **kw}, "horizon": 40}
    many = simulate_columns(cell, [0, 1, 2], data_dir=repo_data_dir())
    one = simulate_columns(cell, [1], data_dir=repo_data_dir())
    rows = many["seed"] == 1
    for k in ("regret", "accuracy"):
        assert np.array_equal(many[k][rows], one[k])


@pytest.mark.skipif(not __import__("os").environ.get("ENSEMBLE_BANDITS_GPT2"), reason="no local GPT-2 weights")
def test_gpt2_last_token_features_where_weights_exist():
    enc = text.TextEncoder("gpt2", threads=1)
    a = enc.encode(["the cat sat on the mat", "hello"])
    assert a.shape == (2, 768) and np.allclose(enc.encode(["hello"])[0], a[1], atol=1e-4)


# ---------------------------------------------------------------------------------------------
# the moderation diagram (epp-fig14)


def test_moderation_diagram_draws():
    import matplotlib

    matplotlib.use("Agg")
    from ensemble_bandits.plotting import diagram

    fig = diagram.draw(None, {"id": "epp-fig14", "title": "t", "caption": "c"}, {"diagram": "moderation"})
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("human review" in t for t in texts) and any("auto-remove" in t for t in texts)


# ---------------------------------------------------------------------------------------------
# the GPT backbone (epp-fig16's substitute): token contexts, pooling, finetuned vs frozen


GPT = dict(backbone="gpt", init_blocks=2, batch_size=4, update_start=3, update_freq=2, buffer_size=6,
           weight_decay=0.1)


def test_byte_tokens_and_token_contexts(cache):
    from ensemble_bandits.agents.gpt_trunk import tokens

    ids = tokens(["ab", "é" * 40], 5)
    assert ids.tolist() == [[98, 99, 0, 0, 0], [196, 170, 196, 170, 196]]       # UTF-8 bytes + 1, truncated
    e = _env([0, 1], cache, features="tokens", max_tokens=16)
    assert e.setting.d == 18 and ENVIRONMENTS["hate_speech"].dimensions({"features": "tokens"}) == (66, 2)
    obs = e.observe(1)
    assert np.array_equal(obs.features[:, 0, :16], obs.features[:, 1, :16])
    assert obs.features[:, 0, 16:].tolist() == [[1, 0], [1, 0]] and obs.features[:, 1, 16:].tolist() == [[0, 1]] * 2
    assert ENVIRONMENTS["hate_speech"].derived_inputs({"features": "tokens"}) == []


def test_gpt_features_are_the_last_non_pad_state_per_action(cache):
    e = _env([0, 1], cache, features="tokens", max_tokens=16)
    a = AGENTS["greedy_neural"](e.setting, [0, 1], 10, **GPT)
    x = torch.tensor(e.observe(1).features, dtype=torch.float32)
    h = a.run_trunk(a.trunk, x)                                                  # (B, 2, 2 E)
    assert h.shape == (2, 2, 256) and not h[:, 0, 128:].any() and not h[:, 1, :128].any()
    for b in range(2):
        ids = x[b, 0, :16].long()
        n = int((ids > 0).sum())
        ref = a.models[b](input_ids=ids[None, :n]).last_hidden_state[0, -1]      # the unpadded post alone
        assert torch.allclose(h[b, 0, :128], ref, atol=1e-5) and torch.allclose(h[b, 1, 128:], ref, atol=1e-5)
    assert not torch.allclose(h[0, 0, :128], a.models[1](input_ids=x[0, 0, :1].long()[None]).last_hidden_state[0, -1])
    n_params = sum(p.numel() for p in a.models[0].parameters())
    assert AGENTS["greedy_neural"].param_count({"backbone": "gpt", "init_blocks": 2}, 18) == n_params + 256


@pytest.mark.parametrize("finetune", [True, False])
def test_gpt_backbone_trains_only_when_finetuned(cache, finetune):
    e = _env([0], cache, features="tokens", max_tokens=16)
    a = AGENTS["ensemble_pp_neural"](e.setting, [0], 12, M=4, prior_init="xavier", finetune=finetune, **GPT)
    before = [p.detach().clone() for p in a.models[0].parameters()]
    base = a.base[0].detach().clone()
    for _ in play(e, a, 12):
        pass
    moved = [not torch.equal(p0, p) for p0, p in zip(before, a.models[0].parameters())]
    assert all(moved) if finetune else not any(moved)        # finetuned: every tensor (weight decay too)
    assert not torch.equal(base, a.base[0])                                      # the heads train either way


@pytest.mark.parametrize("name", ["ensemble_pp_neural", "greedy_neural"])
def test_gpt_heads_are_batch_invariant(cache, name):
    kw = dict(GPT, **({"M": 4, "prior_init": "xavier"} if name == "ensemble_pp_neural" else {}))
    cell = {"env": {"name": "hate_speech", "features": "tokens", "max_tokens": 16}, "agent": {"name": name, **kw},
            "horizon": 16}
    many, one = simulate_columns(cell, [0, 1, 2], data_dir=repo_data_dir()), simulate_columns(cell, [1], data_dir=repo_data_dir())
    assert np.array_equal(many["accuracy"][many["seed"] == 1], one["accuracy"])
