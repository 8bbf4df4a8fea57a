"""Code-faithful variants of the Neural bandit (agents/neural_pp/, envs/epp_nonlinear.py; epp-A17,
epp-A18), named options that are off by default: ``rank_by: max_logit`` (the authors' Ensemble+: the
arm holding the largest logit of either class), ``rank_by: logit`` (their Ensemble++: the raw class-1
logit), ``loss: ce_softmax`` (their EpiNet: softmax, then cross-entropy) and the environment's
``temperature: 1.0``.  Each changes only what it names; the defaults give the numbers they gave
before the options existed; a misspelt value fails while the job graph is built; the ``code``
reading of epp-fig3b and epp-fig10 applies them."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from ensemble_bandits import cells, registry, runner  # noqa: E402
from ensemble_bandits.agents import AGENTS  # noqa: E402
from ensemble_bandits.envs import ENVIRONMENTS  # noqa: E402
from ensemble_bandits.protocol import Observation, Setting  # noqa: E402

# a network without a trunk (hidden 0) on one-hot arm features: arm k's logits are row k of the head
K = 3
LOGITS = np.array([[3.0, 0.0],      # largest logit of either class (class 0): max_logit picks arm 0
                   [0.0, 1.0],      # largest class-1 logit: logit picks arm 1
                   [-2.0, 0.5]])    # largest l1 - l0, i.e. P(class 1): prob picks arm 2
FAST = dict(hidden=8, batch_size=4, update_start=3, buffer_size=6)
ENV = {"name": "epp_neural", "d": 6, "n_arms": 5, "pool": 30}
AGENT_KW = {"ensemble_pp_neural": dict(M=3, reference="sphere", update="coordinate", perturbation="sphere"),
            "ensemble_plus": dict(M=3), "epinet": dict(M=3), "greedy_neural": {}}


def _fixed(name, logits, seeds=(0, 1), **kw):
    """Agent ``name`` on K one-hot arms whose network outputs ``logits`` (K, 2) for arm k at every
    index: Ensemble+ with every head (posterior scale 1) = the logits and zero priors; Ensemble++
    with the base head = the logits and zero ensemble and prior heads."""
    setting = Setting(B=len(seeds), d=K, K=K)
    a = AGENTS[name](setting, list(seeds), 10, hidden=0, loss="ce", posterior_scale=1.0, M=2, **kw)
    L = torch.as_tensor(logits, dtype=a.dtype)                                    # (K, C): row k for input e_k
    with torch.no_grad():
        if name == "ensemble_plus":
            a.heads.copy_(L[None, :, None, :].expand_as(a.heads))                 # (B, D, M, C)
            a.head_bias.zero_()
            a.prior_heads.zero_()
        else:
            a.base[0].copy_(L.T[None].expand_as(a.base[0]))                       # (B, C, D)
            a.W.zero_()
            a.P0.zero_()
    features = np.broadcast_to(np.eye(K), (len(seeds), K, K)).copy()
    return a, Observation.of(features)


def _chosen(name, logits=LOGITS, **kw):
    a, obs = _fixed(name, logits, **kw)
    return a.select(1, obs).tolist()


def _params(agent):
    return [p.detach().clone() for p in agent.trainable()]


def _env(seeds, **kw):
    return ENVIRONMENTS["epp_neural"](seeds, **{**{k: v for k, v in ENV.items() if k != "name"}, **kw})


# ---------------------------------------------------------------------------------------------
# rankings: the network is fixed, only the rule that turns its logits into an arm changes


def test_the_networks_are_the_fixed_logits():
    for name in ("ensemble_plus", "ensemble_pp_neural"):
        a, obs = _fixed(name, LOGITS)
        xi = torch.as_tensor(a.act_index(), dtype=a.dtype)
        out = a.predict(a.features(obs), xi[:, None, None, :].expand(-1, K, 1, -1))[..., 0]
        assert np.array_equal(out.detach().numpy(), np.broadcast_to(LOGITS, (2, K, 2))), name


def test_either_class_argmax_picks_the_arm_holding_the_largest_logit_where_class_1_picks_another():
    """Ensemble+ of the authors' code: arm 0 holds the largest logit (of class 0); P(class 1) picks arm 2."""
    assert _chosen("ensemble_plus", rank_by="max_logit") == [0, 0]
    assert _chosen("ensemble_plus") == [2, 2]                                      # the default: P(class 1)
    assert _chosen("ensemble_plus", rank_by="prob") == [2, 2]
    # the rule, not the arm's position: the same network with its arms in another order
    perm = [2, 0, 1]
    assert _chosen("ensemble_plus", LOGITS[perm], rank_by="max_logit") == [perm.index(0)] * 2


def test_raw_logit_ranking_differs_from_probability_only_through_the_class_0_logit():
    """Ensemble++ of the authors' code: the raw class-1 logit picks arm 1, P(class 1) = sigmoid(l1 - l0)
    arm 2.  With the same class-0 logit on every arm the two orders are the same."""
    assert _chosen("ensemble_pp_neural", rank_by="logit") == [1, 1]
    assert _chosen("ensemble_pp_neural") == [2, 2]
    same_l0 = LOGITS.copy()
    same_l0[:, 0] = 0.7
    for l1 in (LOGITS[:, 1], np.array([0.2, -1.0, 0.9]), np.array([1.5, 1.2, -0.3])):
        same_l0[:, 1] = l1
        assert _chosen("ensemble_pp_neural", same_l0, rank_by="logit") == _chosen("ensemble_pp_neural", same_l0)
        assert _chosen("ensemble_pp_neural", same_l0)[0] == int(np.argmax(l1))


def test_a_ranking_changes_neither_the_network_nor_its_draws_nor_its_loss():
    """rank_by changes the arm only: the same initial weights, the same random draws and the same loss
    on a batch as the default's, for each agent that takes it."""
    seeds = [0, 1]
    e = _env(seeds)
    for name, variant in (("ensemble_plus", "max_logit"), ("ensemble_pp_neural", "logit")):
        kw = {**FAST, **AGENT_KW[name], "loss": "ce"}
        plain = AGENTS[name](e.setting, seeds, 10, **kw)
        code = AGENTS[name](e.setting, seeds, 10, **kw, rank_by=variant)
        assert all(torch.equal(p, q) for p, q in zip(_params(plain), _params(code))), name
        assert np.array_equal(plain.act_index(), code.act_index()), name
        x = torch.randn(2, 4, e.d, generator=torch.Generator().manual_seed(3))
        y = torch.tensor([[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
        z = torch.zeros(2, 4, plain.Z.shape[-1])
        xi = plain.update_indices(4)
        assert torch.equal(plain.batch_loss(x, y, z, xi), code.batch_loss(x, y, z, code.update_indices(4))), name


# ---------------------------------------------------------------------------------------------
# EpiNet's loss: the only thing ce_softmax changes


def _epinets(seeds=(0, 1)):
    e = _env(list(seeds))
    kw = {**FAST, **AGENT_KW["epinet"]}
    return (e, AGENTS["epinet"](e.setting, list(seeds), 10, **kw, loss="ce"),
            AGENTS["epinet"](e.setting, list(seeds), 10, **kw, loss="ce_softmax"))


def _torch_ce(pred, y, softmax_first):
    """Per seed, torch's CrossEntropyLoss over every (datum, index vector) row; summed over seeds."""
    B, n, C, k = pred.shape
    total = 0.0
    for b in range(B):
        rows = pred[b].permute(0, 2, 1).reshape(n * k, C)                          # (datum, index) rows
        if softmax_first:
            rows = torch.softmax(rows, dim=1)
        labels = y[b].long().repeat_interleave(k)
        total = total + torch.nn.CrossEntropyLoss()(rows, labels)
    return total


def test_softmax_then_cross_entropy_is_cross_entropy_of_the_softmax_and_differs_from_the_default():
    e, plain, code = _epinets()
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 4, e.d, generator=g, dtype=code.dtype)
    y = torch.tensor([[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0]], dtype=code.dtype)
    z = torch.zeros(2, 4, code.Z.shape[-1], dtype=code.dtype)
    xi = code.update_indices(4)
    assert torch.equal(xi, plain.update_indices(4))                                # the same draws
    pred = code.predict(x, xi).detach()                                            # (B, n, 2, k)
    assert torch.equal(pred, plain.predict(x, xi).detach())                        # the same network
    double, single = _torch_ce(pred, y, True), _torch_ce(pred, y, False)
    assert float(code.batch_loss(x, y, z, xi).detach()) == pytest.approx(float(double), rel=1e-6)
    assert float(plain.batch_loss(x, y, z, xi).detach()) == pytest.approx(float(single), rel=1e-6)
    assert abs(float(double) - float(single)) > 1e-3
    # the double softmax squeezes the loss into [log(1 + e^-1), log(1 + e)]: its gradient is flatter
    assert np.log1p(np.exp(-1)) - 1e-6 <= float(double) / 2 <= np.log1p(np.e) + 1e-6


def test_softmax_then_cross_entropy_changes_the_training_only():
    """The same weights, the same arms before the first update, the same scores on any input."""
    e, plain, code = _epinets()
    assert all(torch.equal(p, q) for p, q in zip(_params(plain), _params(code)))
    obs = e.observe(1)
    assert np.array_equal(plain.select(1, obs), code.select(1, obs))
    x = plain.features(obs)
    zeta = torch.randn(2, 3, generator=torch.Generator().manual_seed(7))
    assert torch.equal(plain.scores(x, zeta), code.scores(x, zeta))


# ---------------------------------------------------------------------------------------------
# the environment's temperature


def test_temperature_one_changes_the_mean_rewards_only():
    """Temperature 1.0 (the authors' environment): the same pool, offered sets and best arms, means
    sigmoid(l1 - l0) instead of sigmoid(10 (l1 - l0))."""
    paper, code = _env([0, 1]), _env([0, 1], temperature=1.0)
    for t in (1, 2, 3):
        po, co = paper.observe(t), code.observe(t)
        assert np.array_equal(po.features, co.features)
        logit_code = np.log(code.means) - np.log1p(-code.means)                   # l1 - l0, the network's
        assert np.allclose(paper.means, expit(10.0 * logit_code), rtol=1e-9, atol=1e-12)
        assert np.array_equal(np.argmax(paper.means, axis=1), np.argmax(code.means, axis=1))
        assert not np.allclose(paper.means, code.means)
        paper.step(np.zeros(2, dtype=int))
        code.step(np.zeros(2, dtype=int))


# ---------------------------------------------------------------------------------------------
# defaults: the numbers from before the options (pinned), and explicit defaults = left out

# final regret (t = 40) of seeds 0 and 1 on a small neural bandit, computed before the options existed
PINNED = {"ensemble_pp_neural": (1.5190690229197505, 1.8162368319682234),
          "ensemble_plus": (0.983752893128653, 1.2748648146555597),
          "epinet": (0.9532784043342493, 1.2074770385980957),
          "greedy_neural": (0.7945271956523521, 1.908471841066635)}
VARIANT = {"ensemble_pp_neural": {"rank_by": "logit"}, "ensemble_plus": {"rank_by": "max_logit"},
           "epinet": {"loss": "ce_softmax"}}


def _final(agent, env=ENV, horizon=40):
    cols = runner.simulate_columns({"env": env, "agent": agent, "horizon": horizon}, [0, 1])
    return cols["regret"][cols["t"] == horizon]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_defaults_give_the_numbers_they_gave_before(name):
    agent = {"name": name, **FAST, **AGENT_KW[name], "loss": "ce"}
    default = _final(agent)
    assert default.tolist() == pytest.approx(PINNED[name], rel=1e-12)
    explicit = _final({**agent, "rank_by": "prob"})
    assert np.array_equal(default, explicit)
    assert np.array_equal(default, _final(agent, {**ENV, "temperature": 0.1}))
    if name in VARIANT:                   # and the variant is not the default in disguise (lr 0.01: it shows early)
        fast = {**agent, "lr": 0.01}
        assert not np.array_equal(_final(fast), _final({**fast, **VARIANT[name]}))


# ---------------------------------------------------------------------------------------------
# a misspelt value fails while the job graph is built, in one line naming agent, key, value, choices


@pytest.mark.parametrize("name,key,value,allowed", [
    ("ensemble_plus", "rank_by", "either_class", "prob, logit, max_logit"),
    ("ensemble_pp_neural", "rank_by", "raw_logit", "prob, logit, max_logit"),
    ("epinet", "loss", "softmax_cross_entropy", "mse, ce, ce_softmax"),
    ("ensemble_pp_neural", "prior_init", "sDB", "sphere_rows, xavier"),
    ("greedy_neural", "base_init", "kaiming", "default, xavier"),
    ("lmcts", "variant", "sqrtk", "final, sqrt_k"),
])
def test_an_unknown_choice_is_refused_before_any_job(name, key, value, allowed):
    cell = {"env": ENV, "agent": {"name": name, "loss": "ce", key: value}, "horizon": 10}
    with pytest.raises(ValueError) as err:
        cells.check_cell(cell)
    msg = str(err.value)
    assert msg == f"agent {name!r}: hyper-parameter {key} = {value!r} is not allowed: one of {allowed}"
    assert "\n" not in msg
    cells.check_cell({**cell, "agent": {"name": name, "loss": "ce"}})             # the rest of the cell is fine


# ---------------------------------------------------------------------------------------------
# the code reading of epp-fig3b and epp-fig10


@pytest.mark.parametrize("fid", ["epp-fig3b", "epp-fig10"])
def test_the_code_reading_runs_every_method_as_the_authors_code(fid, entries, config):
    """The live registry as data: the live entries' `code` readings (epp-fig3b, epp-fig10) run every method as the
    authors' code does."""
    expect = {"ensemble_pp_neural": {"rank_by": "logit"}, "ensemble_plus": {"rank_by": "max_logit"},
              "epinet": {"loss": "ce_softmax"}, "greedy_neural": {}}
    for scale in registry.SCALES:
        fig = registry.resolve(entries[fid], scale, config["scales"])
        primary = {(s["panel"], s["curve"]): s for s in fig["series"] if "reading" not in s}
        code = {(s["panel"], s["base_curve"]): s for s in fig["series"] if s.get("reading") == "code"}
        assert set(code) == set(primary), scale                                    # every method, every M
        for where, s in code.items():
            base = primary[where]
            agent = base["cell"]["agent"]
            assert agent.get("loss") == "ce" and "rank_by" not in agent and "temperature" not in base["cell"]["env"]
            assert s["cell"]["agent"] == {**agent, **expect[agent["name"]]}, where
            assert s["cell"]["env"] == {**base["cell"]["env"], "temperature": 1.0}, where
            cells.check_cell(s["cell"])
        if fid == "epp-fig10":      # its plot draws a line per method: the reading's are lines of their own
            assert {s["vars"]["method"] for s in code.values()} == {
                "Ensemble++ [authors' code]", "Ensemble+ [authors' code]", "EpiNet [authors' code]"}
            assert {s["vars"]["M"] for s in code.values()} == {s["vars"]["M"] for s in primary.values()}
