"""Neural Ensemble++ and its baselines (epp spec §2.5, §2.7-2.10): Ensemble++, Ensemble+, EpiNet,
Greedy and LMC-TS, for a finite arm set or per-round contexts, batched over B seeds.

Every network is a set of weight tensors with a leading seed axis (B, ...); the M ensemble members
are a further axis (or, for Ensemble++, the columns of a linear head), so a round runs batched
matmuls only: no Python loop over seeds or members.  Each network is written as one function
``predict(x, xi)``: inputs x (B, n, d) and index vectors xi (B, n, k, M) -> outputs (B, n, C, k), used
both to act (k = 1, the round's index) and to train (k = the update index set).

Randomness: all of it (initial weights, index and perturbation vectors, minibatch indices, Langevin
noise) is drawn in numpy from the seed's named streams (:class:`ensemble_bandits.rng.Streams`,
namespace "agent/<name>") and converted with :func:`.torch_common.from_stream`, each stream consumed
by a fixed amount per round, so a seed's result does not depend on its batch or job (bit for bit on
CPU).

Common options: ``dtype`` "float32" (default) or "float64"; ``device`` "cpu" (default) or "cuda";
``loss`` "mse" (regression rewards, C = 1 output), "ce" (the neural classification bandit: C = 2
logits, cross-entropy, class 1 = reward 1, ambiguity A17) or "ce_softmax" (the authors' EpiNet:
softmax, then cross-entropy: a double softmax, A18; off by default); ``rank_by`` "prob" (default, A17:
rank actions by softmax P(class 1), i.e. by l1 - l0), "logit" (the authors' Ensemble++: the raw
class-1 logit) or "max_logit" (the authors' Ensemble+: the largest logit of either class).  Optimiser (A10, A11): Adam, ``lr`` 1e-4, ``batch_size`` 128 drawn uniformly with
replacement from a FIFO buffer of ``buffer_size`` 10,000, coupled L2 weight decay
``weight_decay``/len(buffer) recomputed every step, ``G`` gradient steps every ``update_freq``
rounds from round ``update_start`` = 128 on.  Body: ``hidden`` = D units of the 2-layer ReLU trunk
(64), or 0 for no trunk (the identity: heads on the input itself, D = d; the frozen-feature heads of
the text bandit, :mod:`ensemble_bandits.envs.text`).  ``init_blocks`` = k (default 1): the input is
the disjoint encoding of one feature vector into k per-action blocks (x_a = e_a (x) phi), and a head's
initialisation uses the fans of the per-action head Linear(D/k -> k C) of the authors' LLM code
(fan-in D/k, fan-out k C) instead of Linear(D -> C).  ``backbone: gpt`` (Ensemble++ and Greedy): the
trunk is a random-init small GPT-2 on token-id contexts, finetuned or frozen (``finetune``;
:mod:`.gpt_trunk`, the offline substitute of epp-fig16's Pythia-14m).  Defaults follow the paper
where it speaks (G = 1, A8) and the authors' code elsewhere (prior_scale = posterior_scale = 0.1
unless the registry sets the per-game values of spec §2.5, A9).

This module imports torch only inside functions and methods: the workflow reads the class
attributes (``ensemble_size``, ``uses_accelerator``, ...) while it builds the job graph without torch.
"""
from __future__ import annotations

import inspect
import itertools
import math

import numpy as np

from .. import distributions as dist
from ..catalog import hyper
from ..protocol import AgentClass, Setting
from ..rng import Streams
from .torch_common import FlatAdam, from_stream, linear, matmul, torch_device, torch_dtype

# loss -> number of outputs C; "ce_softmax" is the authors' EpiNet: softmax applied to the logits before
# the cross-entropy (which applies its own: a double softmax), a code-faithful variant, off by default
LOSSES = {"mse": 1, "ce": 2, "ce_softmax": 2}
# rank_by: "prob" (default: P(class 1), i.e. l1 - l0), "logit" (the raw class-1 logit: the authors'
# Ensemble++), "max_logit" (the arm holding the largest logit of either class: the authors' Ensemble+)
RANK_BY = ("prob", "logit", "max_logit")
PRIOR_INITS = ("sphere_rows", "xavier")  # Ensemble++ prior P0: unit rows in R^M ("sDB"), or xavier-normal
NPS = 16                               # index vectors per datum per step of a sampled update family

# Cost model (``round_costs``, read by costs.py): CPU seconds of one round of a batch of B seeds =
# per batch, the torch dispatch overhead of a select and an update (COST_ROUND_S) and of each
# gradient step (COST_STEP_S per trainable tensor: forward, backward, one Adam update per tensor),
# + per seed, COST_MAC_S per multiply-add of the arm scores (K forward passes at one index) and of
# the gradient steps (COST_BACKWARD x the forward pass of the minibatch at every index vector),
# and COST_DRAW_S per random number a step draws in numpy (minibatch, index vectors, Langevin noise).
# Each class counts its own multiply-adds (``act_macs``, ``step_macs``) and steps per round.
# Fitted on this 2-core machine (torch 2.13 CPU, one thread, float32) to the CPU seconds of the
# paper-scale jobs of epp-fig3a, 3b, 10, 11 and 12a-c (38 jobs of 10 seeds, 10^4-10^5 rounds, idle
# machine; `cli timings --cells`): a non-negative least-squares fit of the four constants to the
# relative error.  Model / measured is 0.8-1.4 on every job but EpiNet's (0.56-0.69) and 0.94 over
# all.  The earlier fit, on short runs (300-600 rounds) under load, over-estimated these jobs 1.3-4.8x.
# An estimate: epp-fig4's 10,000-arm scoring, LMC-TS's history and the text backbone are not in the fit.
COST_ROUND_S = 3.3e-4
COST_STEP_S = 1.7e-4
COST_MAC_S = 4.7e-11
COST_BACKWARD = 3.0
COST_DRAW_S = 3.5e-8


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
    """The full update index set of a discrete family (spec §2.5, authors' code), or None for a
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


def trunk_size(d: int, hidden: int = 64) -> int:
    """H: parameters of the feature MLP d -> D -> D with biases (10,624 at d = 100, D = 64)."""
    return d * hidden + hidden + hidden * hidden + hidden


def _flushed(torch):
    """Flush subnormals to zero inside the ``with`` block, and stop after it (torch's default)."""
    import contextlib

    @contextlib.contextmanager
    def mode():
        torch.set_flush_denormal(True)
        try:
            yield
        finally:
            torch.set_flush_denormal(False)
    return mode()


class NeuralAgent(AgentClass):
    """Common machinery: the setting, the streams, the torch dtype/device, the 2-layer ReLU trunk,
    the FIFO buffer, the minibatch draw, the loss over index sets and the Adam step."""

    name = "neural"
    uses_accelerator = True
    action_spaces: tuple[str, ...] = ("finite", "contexts")
    buffer_family: str | None = None          # perturbation family stored with each datum (None: none)
    # the names a text hyper-parameter takes, checked while the job graph is built (runner._checked):
    # a registry typo (or a code-faithful variant misspelt) fails before any job runs
    choice_params = {"loss": tuple(LOSSES), "rank_by": RANK_BY, "backbone": ("mlp", "gpt")}

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        """M, the index dimension or number of heads, for the classes that take one; else 1."""
        return int(hyper(cls, spec, "M")) if "M" in inspect.signature(cls.__init__).parameters else 1

    @classmethod
    def feature_dim(cls, spec: dict, d: int) -> int:
        """D, the width of the features the heads read: ``hidden``, or d without a trunk (hidden 0),
        or K E for the GPT backbone (K = ``init_blocks`` actions)."""
        if spec.get("backbone") == "gpt":
            from .gpt_trunk import SHAPE
            return int(hyper(cls, spec, "init_blocks")) * SHAPE["n_embd"]
        return int(hyper(cls, spec, "hidden")) or int(d)

    @classmethod
    def check_choice(cls, key: str, value) -> None:
        """ValueError unless ``value`` is one of the names ``choice_params[key]`` allows."""
        allowed = cls.choice_params[key]
        if value not in allowed:
            raise ValueError(f"{key} must be one of {', '.join(map(str, allowed))}, got {value!r}")

    @classmethod
    def outputs(cls, spec: dict) -> int:
        loss = hyper(cls, spec, "loss")
        cls.check_choice("loss", loss)
        return LOSSES[loss]

    # ---- cost model (see COST_* above) ----------------------------------------------------------
    trainable_tensors = 6                     # tensors Adam updates (dispatch overhead per step)

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """(seconds per round and batch, seconds per round and seed), averaged over the horizon."""
        d, K, T = int(dims["d"]), max(int(dims["K"]), 1), max(int(dims["horizon"]), 1)
        steps = cls.steps_per_round(spec, T)
        per_batch = COST_ROUND_S + steps * COST_STEP_S * cls.trainable_tensors
        per_seed = (COST_MAC_S * (cls.act_macs(spec, d, K) + COST_BACKWARD * steps * cls.step_macs(spec, d, T))
                    + COST_DRAW_S * steps * cls.step_draws(spec, d))
        return per_batch, per_seed

    @classmethod
    def steps_per_round(cls, spec: dict, horizon: int) -> float:
        """Gradient steps per round, averaged over the horizon: G every ``update_freq`` rounds from
        ``update_start`` on."""
        start, freq = int(hyper(cls, spec, "update_start")), int(hyper(cls, spec, "update_freq"))
        return int(hyper(cls, spec, "G")) * max(0, horizon - start + 1) / (freq * horizon)

    @classmethod
    def trunk_params(cls, spec: dict, d: int) -> int:
        """Parameters of the trunk: the MLP's (H, :func:`trunk_size`) or the GPT backbone's."""
        if spec.get("backbone") == "gpt":
            from .gpt_trunk import param_count
            return param_count(d - int(hyper(cls, spec, "init_blocks")))
        return trunk_size(d, int(hyper(cls, spec, "hidden")))

    @classmethod
    def trunk_macs(cls, spec: dict, d: int) -> int:
        if spec.get("backbone") == "gpt":                     # about its weights x tokens per input
            from .gpt_trunk import SHAPE
            E = SHAPE["n_embd"]
            return 12 * E * E * SHAPE["n_layer"] * d
        D = int(hyper(cls, spec, "hidden"))
        return d * D + D * D                                  # 0 without a trunk

    @classmethod
    def act_macs(cls, spec: dict, d: int, K: int) -> float:
        """Multiply-adds of one seed's arm scores (K inputs at one index vector)."""
        return K * cls.input_macs(spec, d, 1)

    @classmethod
    def step_macs(cls, spec: dict, d: int, horizon: int) -> float:
        """Multiply-adds of the forward pass of one seed's gradient step (the minibatch at every index
        vector of the step)."""
        return int(hyper(cls, spec, "batch_size")) * cls.input_macs(spec, d, cls.update_vectors(spec))

    @classmethod
    def update_vectors(cls, spec: dict) -> int:
        """Index vectors per datum in a gradient step."""
        return 1

    @classmethod
    def step_draws(cls, spec: dict, d: int) -> int:
        """Random numbers one seed draws per gradient step (the minibatch indices)."""
        return int(hyper(cls, spec, "batch_size"))

    @classmethod
    def input_macs(cls, spec: dict, d: int, k: int) -> float:
        """Multiply-adds of one input at k index vectors."""
        raise NotImplementedError

    def __init__(self, setting: Setting, seeds, horizon: int, *, hidden: int = 64, loss: str = "mse",
                 lr: float = 1e-4, batch_size: int = 128, weight_decay: float = 0.01, G: int = 1,
                 update_start: int = 128, update_freq: int = 1, buffer_size: int = 10_000,
                 noise_scale: float = 0.01, prior_scale: float = 0.1, posterior_scale: float = 0.1,
                 rank_by: str = "prob", dtype: str = "float32", device: str = "cpu", M: int = 1,
                 init_blocks: int = 1, backbone: str = "mlp", finetune: bool = True, flush_denormal: bool = False):
        import torch

        if not isinstance(setting, Setting):
            raise TypeError(f"an agent is built from a Setting (env.setting), not a {type(setting).__name__}")
        self.check_action_space(setting.action_space)
        self.check_choice("loss", loss)
        self.check_choice("rank_by", rank_by)
        self.torch = torch
        self.setting = setting
        self.B, self.d, self.K, self.T = setting.B, setting.d, setting.K, int(horizon)
        self.M, self.C, self.loss = int(M), LOSSES[loss], loss
        self.hidden = int(hidden)
        self.check_choice("backbone", backbone)
        self.backbone, self.finetune = backbone, bool(finetune)
        if backbone == "gpt":
            from .gpt_trunk import SHAPE
            if int(init_blocks) != setting.K:
                raise ValueError(f"backbone gpt reads per-action contexts: init_blocks must be K = {setting.K}")
            self.D = setting.K * SHAPE["n_embd"]
        else:
            self.D = self.hidden or self.d                      # features the heads read
        self.blocks = int(init_blocks)
        if self.blocks < 1 or self.D % self.blocks:
            raise ValueError(f"init_blocks = {init_blocks} must be >= 1 and divide the feature width D = {self.D}")
        self.lr, self.batch_size, self.wd = float(lr), int(batch_size), float(weight_decay)
        self.G, self.update_start, self.update_freq = int(G), int(update_start), int(update_freq)
        self.noise_scale, self.prior_scale, self.post_scale = float(noise_scale), float(prior_scale), float(posterior_scale)
        self.rank_by = rank_by
        self.flush_denormal = bool(flush_denormal)
        self.dtype, self.device = torch_dtype(dtype), torch_device(device)
        self.streams = Streams(seeds, f"agent/{self.name}")
        self.rows = torch.arange(self.B, device=self.device)
        self.capacity = int(min(buffer_size, self.T)) if buffer_size else self.T
        self.n_buf = self.ptr = 0
        self.X = torch.zeros((self.B, self.capacity, self.d), dtype=self.dtype, device=self.device)
        self.Y = torch.zeros((self.B, self.capacity), dtype=self.dtype, device=self.device)
        zdim = self.M if self.buffer_family else 0
        self.Z = torch.zeros((self.B, self.capacity, zdim), dtype=self.dtype, device=self.device)
        self._minibatch = self.streams("minibatch", "uniform")
        if self.buffer_family:
            self._z = self.streams("perturbation", dist.vector_kind(self.buffer_family))
        self.record = None                     # a list to append (what, numpy draw) to, for tests
        self.steps = 0
        self._seen = self._seen_x = None        # the last Observation and its features as a tensor

    def arithmetic(self):
        """The floating-point mode the agent's rounds run in (the runner enters it around its rounds):
        with ``flush_denormal``, subnormal numbers (below about 1.2e-38 in float32) are flushed to zero
        on the CPU.  Long runs with many gradient steps per round (the UCI bandits' G = 100) drift weights
        and Adam's moments into subnormals, which the CPU computes in slow microcode: measured here on
        Shuttle, a round of Ensemble++ at 5 seeds grew from 36 ms to 640 ms between rounds 130 and 250
        without it, and stays near 105 ms with it.  A numerical mode, not a change of the algorithm: it
        changes the last bits of numbers that are already below float32's normal range."""
        import contextlib

        if not self.flush_denormal or self.device.type != "cpu":
            return contextlib.nullcontext()
        return _flushed(self.torch)

    # ---- randomness -------------------------------------------------------------------------
    def tensor(self, a):
        return from_stream(a, self.dtype, self.device)

    def _drawn(self, what: str, a: np.ndarray) -> np.ndarray:
        if self.record is not None:
            self.record.append((what, np.array(a)))
        return a

    def normal(self, what: str, *shape: int) -> np.ndarray:
        return self.streams(f"init/{what}", "normal").shaped(*shape)

    def uniform(self, what: str, *shape: int) -> np.ndarray:
        return self.streams(f"init/{what}", "uniform").shaped(*shape)

    def linear_default(self, what: str, fan_out: int, fan_in: int, bias: bool = True, init_fan_in: int | None = None):
        """PyTorch's default Linear init: weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (``init_fan_in``
        in the bound instead of the shape's ``fan_in`` when given)."""
        bound = 1.0 / math.sqrt(init_fan_in or fan_in)
        W = self.tensor(bound * (2.0 * self.uniform(f"{what}.weight", fan_out, fan_in) - 1.0))
        b = self.tensor(bound * (2.0 * self.uniform(f"{what}.bias", fan_out) - 1.0)) if bias else None
        return W, b

    def xavier(self, what: str, *shape: int, fan_in: int, fan_out: int):
        return self.tensor(math.sqrt(2.0 / (fan_in + fan_out)) * self.normal(what, *shape))

    def head_fans(self) -> dict:
        """Fans of a head Linear(D -> C) for its initialisation: fan-in D/k, fan-out k C (``init_blocks`` k)."""
        return {"fan_in": self.D // self.blocks, "fan_out": self.blocks * self.C}

    # ---- network pieces ---------------------------------------------------------------------
    def make_trunk(self, what: str = "trunk"):
        """The trunk's weights [W1, b1, W2, b2], or [] without a trunk (hidden 0); the GPT backbone's
        trainable parameters ([] when frozen)."""
        if self.backbone == "gpt":
            from . import gpt_trunk
            return gpt_trunk.build(self, self.d - self.K, self.finetune)
        if not self.hidden:
            return []
        W1, b1 = self.linear_default(f"{what}.0", self.D, self.d)
        W2, b2 = self.linear_default(f"{what}.1", self.D, self.D)
        return [W1, b1, W2, b2]

    def run_trunk(self, params, x):
        """ReLU(ReLU(x W1^T + b1) W2^T + b2): x (B, n, d) -> (B, n, D); x itself without a trunk; the
        GPT backbone's per-action features."""
        if self.backbone == "gpt":
            from . import gpt_trunk
            return gpt_trunk.features(self, x)
        if not params:
            return x
        torch = self.torch
        W1, b1, W2, b2 = params
        h = torch.baddbmm(b1.unsqueeze(1), x, W1.transpose(1, 2)).relu_()
        return torch.baddbmm(b2.unsqueeze(1), h, W2.transpose(1, 2)).relu_()

    def predict(self, x, xi):
        """Outputs (B, n, C, k) on inputs x (B, n, d) at index vectors xi (B, n, k, M)."""
        raise NotImplementedError

    def trainable(self) -> list:
        raise NotImplementedError

    def make_optimizer(self):
        # Adam is elementwise, hence per seed (batch-split bit-identity); one flat buffer for all tensors
        self.opt = FlatAdam(self.trainable(), lr=self.lr)

    # ---- acting -----------------------------------------------------------------------------
    def act_index(self) -> np.ndarray | None:
        """The round's index vector (B, M), or None for an agent without one."""
        return None

    def scores(self, x, xi):
        """Ranking scores (B, K) of the arms x (B, K, d) at the round's index xi (B, M) or None."""
        if xi is None:
            xi = self.torch.zeros((self.B, max(self.M, 1)), dtype=self.dtype, device=self.device)
        out = self.predict(x, xi[:, None, None, :].expand(-1, x.shape[1], 1, -1))[..., 0]    # (B, K, C)
        if self.C == 1:
            return out[..., 0]
        if self.rank_by == "max_logit":
            return out.max(dim=2).values
        return out[..., 1] - out[..., 0] if self.rank_by == "prob" else out[..., 1]

    def features(self, obs):
        """The arm features of ``obs`` as a tensor, converted once per Observation: a fixed arm set is
        the same Observation every round (protocol.Observation), e.g. all 10,000 actions of epp-fig4."""
        if obs is not self._seen:
            self._seen, self._seen_x = obs, self.tensor(obs.features)
        return self._seen_x

    def select(self, t, obs):
        torch = self.torch
        zeta = self.act_index()
        with torch.no_grad():
            s = self.scores(self.features(obs), None if zeta is None else self.tensor(zeta))
            return torch.argmax(s, dim=1).cpu().numpy()

    # ---- learning ---------------------------------------------------------------------------
    def push(self, x, y, z):
        self.X[:, self.ptr] = self.tensor(x)
        self.Y[:, self.ptr] = self.tensor(y)
        if z is not None:
            self.Z[:, self.ptr] = self.tensor(z)
        self.ptr = (self.ptr + 1) % self.capacity
        self.n_buf = min(self.n_buf + 1, self.capacity)

    def update(self, t, obs, arms, rewards):
        x = obs.features[np.arange(self.B), np.asarray(arms)]
        z = self._drawn("perturbation", dist.perturbation(self.buffer_family, self._z, self.M)) \
            if self.buffer_family else None
        self.push(x, np.asarray(rewards, dtype=np.float64), z)
        if t >= self.update_start and t % self.update_freq == 0:
            for _ in range(self.G):
                self.train_step()

    def minibatch(self):
        """Indices (B, batch) drawn uniformly with replacement from the buffer."""
        u = self._drawn("minibatch", self._minibatch.take(self.batch_size))
        return np.minimum((u * self.n_buf).astype(np.int64), self.n_buf - 1)

    def update_indices(self, n: int):
        """Index vectors (B, n, k, M) of a training step, a set (k, M) shared by every datum, or None."""
        return None

    def batch_loss(self, x, y, z, xi):
        """Sum over seeds of each seed's mean loss over (datum, index vector)."""
        torch = self.torch
        pred = self.predict(x, xi)                                    # (B, n, C, k)
        if self.loss in ("ce", "ce_softmax"):
            if self.loss == "ce_softmax":                                # the authors' EpiNet: softmax first
                pred = torch.softmax(pred, dim=2)
            logp = torch.log_softmax(pred, dim=2)
            label = y.long()[:, :, None, None].expand(-1, -1, 1, pred.shape[3])
            return -torch.gather(logp, 2, label)[:, :, 0].mean(dim=(1, 2)).sum()
        target = y[:, :, None]
        if z is not None and z.shape[-1] and xi is not None:                       # + noise_scale <xi, z_i>
            noise = matmul(z, xi.T) if xi.dim() == 2 else matmul(xi, z[:, :, :, None])[..., 0]
            target = target + self.noise_scale * noise
        return ((pred[:, :, 0] - target) ** 2).mean(dim=(1, 2)).sum()

    def train_step(self):
        idx = self.torch.as_tensor(self.minibatch(), device=self.device)
        flat = (self.rows[:, None] * self.capacity + idx).reshape(-1)       # index_select: faster than X[rows, idx]
        B, n, cap = self.B, self.batch_size, self.capacity
        x = self.X.view(B * cap, -1).index_select(0, flat).view(B, n, -1)
        y = self.Y.view(B * cap).index_select(0, flat).view(B, n)
        z = self.Z.view(B * cap, -1).index_select(0, flat).view(B, n, -1)
        xi = self.update_indices(self.batch_size)
        self.opt.weight_decay = self.wd / self.n_buf
        self.opt.zero_grad()
        loss = self.batch_loss(x, y, z, xi)
        loss.backward()
        self.opt.step()
        self.steps += 1
        return loss


class EnsemblePlusPlusNeural(NeuralAgent):
    """Neural Ensemble++ (Algorithm 1, eq. 12; spec §2.5):

    f(x, zeta) = b^T h(x) + posterior_scale sg(h(x))^T W zeta + prior_scale sg(h(x))^T P0 zeta,

    h the 64-64 ReLU trunk (PyTorch default init), b a Linear(D -> C) head without bias (A19;
    ``base_bias: true`` adds it), W (C D x M) trainable, xavier-normal (fan_in M, fan_out C D), P0
    (C D x M) fixed, each row a unit vector in R^M times ``prior_std`` (the code's "sDB" init);
    stop-gradient: W's loss reaches neither h nor b through sg.  Acting index zeta ~ ``reference``
    (Sphere); ``prior_init`` "sphere_rows" (default, the code's "sDB") or "xavier" (xavier-normal, not
    row-normalised: the authors' LLM head, spec §2.6); each datum stores z ~ ``perturbation`` (Sphere); a
    step's index set is ``update``
    (Coordinate: all 2M vectors +-sqrt(M) e_m; Cube and Sparse enumerated; Gaussian and Sphere NPS =
    16 fresh vectors per datum); regression targets Y + noise_scale <xi, z> (symmetrised loss), a
    cross-entropy at every xi for ``loss: ce`` (z unused, as in the paper and code)."""

    name = "ensemble_pp_neural"
    distribution_params = {"reference": "vector", "update": "vector", "perturbation": "vector"}
    choice_params = {**NeuralAgent.choice_params, "prior_init": PRIOR_INITS}

    @classmethod
    def param_count(cls, spec: dict, d: int) -> int:
        """The paper's count H + (2M + 1) D C + C (A.7.1; prior head included, base bias counted)."""
        M, D, C = int(hyper(cls, spec, "M")), cls.feature_dim(spec, d), cls.outputs(spec)
        return cls.trunk_params(spec, d) + (2 * M + 1) * D * C + C

    @classmethod
    def update_vectors(cls, spec):
        """|Xi|: the enumerated set of a discrete update family (2M, 2^M, C(M, s) 2^s), else NPS."""
        M, fam = int(hyper(cls, spec, "M")), hyper(cls, spec, "update")
        s = min(dist.SPARSITY, M)
        return {"coordinate": 2 * M, "cube": 2 ** M, "sparse": math.comb(M, s) * 2 ** s}.get(fam, NPS)

    @classmethod
    def step_draws(cls, spec, d):
        """The minibatch, and NPS fresh index vectors per datum for a sampled update family."""
        M, fam, n = int(hyper(cls, spec, "M")), hyper(cls, spec, "update"), int(hyper(cls, spec, "batch_size"))
        return n + (0 if fam in ("coordinate", "cube", "sparse") else n * NPS * dist.vector_draws(fam, M))

    @classmethod
    def input_macs(cls, spec, d, k):
        """Trunk, mean head, the (C D x M) heads, and their contraction with k index vectors."""
        M, D, C = int(hyper(cls, spec, "M")), cls.feature_dim(spec, d), cls.outputs(spec)
        return cls.trunk_macs(spec, d) + D * C + D * C * M + k * C * M

    def __init__(self, setting, seeds, horizon, M: int = 8, reference: str = "sphere", update: str = "coordinate",
                 perturbation: str = "sphere", prior_std: float = 1.0, base_bias: bool = False, hidden: int = 64,
                 loss: str = "mse", lr: float = 1e-4, batch_size: int = 128, weight_decay: float = 0.01, G: int = 1,
                 update_start: int = 128, update_freq: int = 1, buffer_size: int = 10_000, noise_scale: float = 0.01,
                 prior_scale: float = 0.1, posterior_scale: float = 0.1, rank_by: str = "prob",
                 dtype: str = "float32", device: str = "cpu", prior_init: str = "sphere_rows", init_blocks: int = 1,
                 backbone: str = "mlp", finetune: bool = True, flush_denormal: bool = False,
                 diagnostics: bool = False):
        for fam in (reference, update, perturbation):
            dist.check_name(fam, dist.VECTOR_FAMILIES)
        self.check_choice("prior_init", prior_init)
        self.buffer_family = perturbation
        super().__init__(setting, seeds, horizon, hidden=hidden, loss=loss, lr=lr, batch_size=batch_size,
                         weight_decay=weight_decay, G=G, update_start=update_start, update_freq=update_freq,
                         buffer_size=buffer_size, noise_scale=noise_scale, prior_scale=prior_scale,
                         posterior_scale=posterior_scale, rank_by=rank_by, dtype=dtype, device=device, M=M,
                         init_blocks=init_blocks, backbone=backbone, finetune=finetune, flush_denormal=flush_denormal)
        self.ref, self.upd = reference, update
        D, C, M = self.D, self.C, self.M
        self.trunk = self.make_trunk()
        Wb, bb = self.linear_default("base", C, D, bias=base_bias, init_fan_in=self.head_fans()["fan_in"])
        self.base = [Wb] + ([bb] if base_bias else [])
        # W and P0 as (B, D, C, M): row (c, d) of the paper's (C D x M) matrices is [:, d, c, :]
        self.W = self.xavier("ensemble", C, D, M, fan_in=M, fan_out=C * D).permute(0, 2, 1, 3).contiguous()
        if prior_init == "xavier":
            self.P0 = self.xavier("prior", C, D, M, fan_in=M, fan_out=C * D).permute(0, 2, 1, 3).contiguous()
        else:
            p0 = self.normal("prior", C, D, M)
            p0 = float(prior_std) * p0 / np.linalg.norm(p0, axis=-1, keepdims=True)
            self.P0 = self.tensor(p0).permute(0, 2, 1, 3).contiguous()
        self._zeta = self.streams("reference", dist.vector_kind(reference))
        self._xi = self.streams("update", dist.vector_kind(update))
        fixed = enumerated(update, M)
        self.fixed_xi = None if fixed is None else self.tensor(fixed)
        self.make_optimizer()
        self.diagnostics = probe_flag(self, diagnostics)

    def trainable(self):
        return self.trunk + self.base + [self.W]

    def act_index(self):
        return self._drawn("reference", dist.reference(self.ref, self._zeta, self.M))

    def update_indices(self, n):
        if self.fixed_xi is not None:
            return self.fixed_xi                                                   # (k, M), shared
        return self.tensor(self._drawn("update", vectors(self.upd, self._xi, self.M, n * NPS)).reshape(self.B, n, NPS, self.M))

    def predict(self, x, xi):
        torch = self.torch
        B, n = x.shape[0], x.shape[1]
        h = self.run_trunk(self.trunk, x)                                          # (B, n, D)
        base = self.base_head(h)                                                     # (B, n, C)
        head = self.post_scale * self.W + self.prior_scale * self.P0               # (B, D, C, M)
        U = torch.bmm(h.detach(), head.reshape(B, self.D, self.C * self.M)).reshape(B, n, self.C, self.M)
        return base[..., None] + matmul(U, xi.transpose(-1, -2))  # (B, n, C, k); xi (B, n, k, M) or shared (k, M)

    def base_head(self, h):
        """The index-free mean b^T h (+ bias): (B, n, D) -> (B, n, C)."""
        base = linear(h, self.base[0])
        return base + self.base[1].unsqueeze(1) if len(self.base) > 1 else base

    def probe_indices(self, rng, n):
        """The probe's fixed index set (n, M): n vectors of the acting (reference) family from ``rng``."""
        return probe_vectors(self.ref, rng, self.M, n)

    def probe_terms(self, x, xi):
        """The terms of f(x, xi) = mean + index + prior at a shared index set xi (k, M), for the runner's
        probe (:func:`ensemble_bandits.probes.neural_terms`): the trunk's features h (B, n, D), the mean
        b^T h(x) (B, n, C), the learned index term posterior_scale h^T W xi and the prior term
        prior_scale h^T P0 xi (B, n, C, k)."""
        torch = self.torch
        B, n = x.shape[0], x.shape[1]
        h = self.run_trunk(self.trunk, x)
        mean = self.base_head(h)

        def term(A):                                                                # A (B, D, C, M)
            U = torch.bmm(h, A.reshape(B, self.D, self.C * self.M)).reshape(B, n, self.C, self.M)
            return matmul(U, xi.transpose(-1, -2))

        return {"h": h, "mean": mean, "index": term(self.post_scale * self.W),
                "prior": term(self.prior_scale * self.P0)}


class GreedyNeural(NeuralAgent):
    """Greedy (spec §2.9, A26): the Ensemble++ trunk and base head only (Ensemble++ with zeta = 0 and no
    ensemble or prior terms), the same optimiser and schedule, acting on argmax of the mean prediction;
    squared loss on the reward (cross-entropy for ``loss: ce``).  ``base_init``: "default" (PyTorch's
    Linear init, as Ensemble++'s base head) or "xavier" (xavier-normal: the authors' LLM ``linear`` head,
    spec §2.9; its zero-initialised bias is not modelled: the head has no bias)."""

    name = "greedy_neural"
    trainable_tensors = 5
    choice_params = {**NeuralAgent.choice_params, "base_init": ("default", "xavier")}

    @classmethod
    def param_count(cls, spec, d):
        D, C = cls.feature_dim(spec, d), cls.outputs(spec)
        return cls.trunk_params(spec, d) + D * C

    @classmethod
    def input_macs(cls, spec, d, k):
        return cls.trunk_macs(spec, d) + cls.feature_dim(spec, d) * cls.outputs(spec)

    def __init__(self, setting, seeds, horizon, hidden: int = 64, loss: str = "mse", lr: float = 1e-4,
                 batch_size: int = 128, weight_decay: float = 0.01, G: int = 1, update_start: int = 128,
                 update_freq: int = 1, buffer_size: int = 10_000, rank_by: str = "prob", dtype: str = "float32",
                 device: str = "cpu", base_init: str = "default", init_blocks: int = 1, backbone: str = "mlp",
                 finetune: bool = True, flush_denormal: bool = False):
        self.check_choice("base_init", base_init)
        super().__init__(setting, seeds, horizon, hidden=hidden, loss=loss, lr=lr, batch_size=batch_size,
                         weight_decay=weight_decay, G=G, update_start=update_start, update_freq=update_freq,
                         buffer_size=buffer_size, rank_by=rank_by, dtype=dtype, device=device, init_blocks=init_blocks,
                         backbone=backbone, finetune=finetune, flush_denormal=flush_denormal)
        self.trunk = self.make_trunk()
        fans = self.head_fans()
        if base_init == "xavier":
            self.base = [self.xavier("base", self.C, self.D, **fans)]
        else:
            self.base = [self.linear_default("base", self.C, self.D, bias=False, init_fan_in=fans["fan_in"])[0]]
        self.make_optimizer()

    def trainable(self):
        return self.trunk + self.base

    def predict(self, x, xi):
        out = linear(self.run_trunk(self.trunk, x), self.base[0])                          # (B, n, C)
        return out[..., None]


class IndexedHeadsNeural(NeuralAgent):
    """Ensemble+ and EpiNet: the same hyper-parameters (an index dimension M and the training
    settings of :class:`NeuralAgent`); each builds its networks in ``build``."""

    def __init__(self, setting, seeds, horizon, M: int = 8, hidden: int = 64, loss: str = "mse", lr: float = 1e-4,
                 batch_size: int = 128, weight_decay: float = 0.01, G: int = 1, update_start: int = 128,
                 update_freq: int = 1, buffer_size: int = 10_000, noise_scale: float = 0.01, prior_scale: float = 0.1,
                 posterior_scale: float = 0.1, rank_by: str = "prob", dtype: str = "float32", device: str = "cpu",
                 init_blocks: int = 1, flush_denormal: bool = False,
                 diagnostics: bool = False):
        super().__init__(setting, seeds, horizon, hidden=hidden, loss=loss, lr=lr, batch_size=batch_size,
                         weight_decay=weight_decay, G=G, update_start=update_start, update_freq=update_freq,
                         buffer_size=buffer_size, noise_scale=noise_scale, prior_scale=prior_scale,
                         posterior_scale=posterior_scale, rank_by=rank_by, dtype=dtype, device=device, M=M,
                         init_blocks=init_blocks, flush_denormal=flush_denormal)
        self.build()
        self.diagnostics = probe_flag(self, diagnostics)

    def build(self):
        raise NotImplementedError


class EnsemblePlusNeural(IndexedHeadsNeural):
    """Ensemble+ (randomised-prior ensemble; spec §2.7): the trainable 64-64 trunk and M trainable heads
    Linear(D -> C) (xavier-normal weights, zero biases), plus a separate frozen prior trunk (default
    init) with M frozen prior heads (xavier-normal, zero bias); head m outputs
    posterior_scale head_m(h(x)) + prior_scale priorhead_m(h0(x)).  Acting: a uniform head (one-hot
    index); training: every datum trains all M heads (index set I_M) with targets Y + noise_scale z_m,
    z ~ N(0, I/M) stored with the datum; no stop-gradient (all heads train the trunk).  Without a trunk
    (``hidden: 0``) both trunks are the identity: the heads and prior heads read the same input, the
    LLM variant of spec §2.7 (its per-action head biases are one bias per head here, shared by the arms)."""

    name = "ensemble_plus"
    buffer_family = "gaussian"

    @classmethod
    def param_count(cls, spec, d):
        """The paper's count 2H + 2MDC + 2MC (prior network included)."""
        M, D, C = int(hyper(cls, spec, "M")), cls.feature_dim(spec, d), cls.outputs(spec)
        return 2 * trunk_size(d, int(hyper(cls, spec, "hidden"))) + 2 * M * D * C + 2 * M * C

    @classmethod
    def update_vectors(cls, spec):
        return int(hyper(cls, spec, "M"))                                     # I_M: every head

    @classmethod
    def input_macs(cls, spec, d, k):
        """Trainable and prior trunks, M trainable and M prior heads, the contraction with k indices."""
        M, D, C = int(hyper(cls, spec, "M")), cls.feature_dim(spec, d), cls.outputs(spec)
        return 2 * cls.trunk_macs(spec, d) + 2 * D * M * C + k * M * C

    def build(self):
        B, D, C, M = self.B, self.D, self.C, self.M
        self.trunk = self.make_trunk()
        self.heads = self.xavier("heads", M, C, D, **self.head_fans()).permute(0, 3, 1, 2).contiguous()  # (B,D,M,C)
        self.head_bias = self.torch.zeros((B, M, C), dtype=self.dtype, device=self.device)
        self.prior_trunk = self.make_trunk("prior_trunk")
        self.prior_heads = self.xavier("prior_heads", M, C, D, **self.head_fans()).permute(0, 3, 1, 2).contiguous()
        self._head = self.streams("head", "uniform")
        self.eye = self.torch.eye(M, dtype=self.dtype, device=self.device)
        self.make_optimizer()

    def trainable(self):
        return self.trunk + [self.heads, self.head_bias]

    def act_index(self):
        u = self._drawn("head", self._head.take(1))[:, 0]
        m = np.minimum((u * self.M).astype(np.int64), self.M - 1)
        return np.eye(self.M)[m]

    def update_indices(self, n):
        return self.eye                                                            # I_M, shared

    def head_outputs(self, x):
        """The trunk's features h (B, n, D), every head's trainable output (B, n, M, C) and every prior
        head's output on the frozen prior trunk (B, n, M, C; no gradient)."""
        torch = self.torch
        B, n, D, M, C = x.shape[0], x.shape[1], self.D, self.M, self.C
        h = self.run_trunk(self.trunk, x)
        out = torch.bmm(h, self.heads.reshape(B, D, M * C)).reshape(B, n, M, C) + self.head_bias.unsqueeze(1)
        with torch.no_grad():
            h0 = self.run_trunk(self.prior_trunk, x)
            prior = torch.bmm(h0, self.prior_heads.reshape(B, D, M * C)).reshape(B, n, M, C)
        return h, out, prior

    def predict(self, x, xi):
        _h, out, prior = self.head_outputs(x)
        out = self.post_scale * out + self.prior_scale * prior                    # (B, n, M, C)
        return matmul(out.transpose(2, 3), xi.transpose(-1, -2))                     # (B, n, C, k)

    def probe_indices(self, rng, n):
        """The probe's index set: every head, the M basis vectors (the acting index is one of them)."""
        return np.eye(self.M)

    def probe_terms(self, x, xi):
        """The terms of head m's output f(x, e_m) = mean + index + prior (:meth:`EnsemblePlusPlusNeural.probe_terms`)
        at a shared index set xi (k, M) of heads: h the trainable trunk's features, the mean = the
        ensemble's mean posterior part posterior_scale mean_m (head_m(h) + bias_m), the learned index
        term = head m's posterior part minus that mean, the prior term prior_scale priorhead_m(h0(x))."""
        h, q, prior = self.head_outputs(x)
        q = self.post_scale * q                                                      # (B, n, M, C)
        mean = q.mean(dim=2)
        xt = xi.transpose(-1, -2)
        return {"h": h, "mean": mean, "index": matmul((q - mean[:, :, None]).transpose(2, 3), xt),
                "prior": matmul((self.prior_scale * prior).transpose(2, 3), xt)}


class EpiNetNeural(IndexedHeadsNeural):
    """EpiNet (spec §2.8): base = trunk + Linear(D -> C) with bias (default init); epinet MLP
    [15, 15] (ReLU, biases) on [x, sg(h(x)), z] with M C outputs contracted with z; prior = M frozen
    MLPs [5, 5] on the raw x, outputs C, combined as sum_m prior_m(x) z_m; epinet and prior weights
    xavier-normal, biases zero.  f = base + posterior_scale epinet + prior_scale prior.  Index z ~
    N(0, I_M) to act; NPS = 16 Gaussian index vectors per datum per step; buffer perturbation Sphere;
    targets Y + noise_scale <z, z_buf>; cross-entropy on logits for ``loss: ce`` (A18)."""

    name = "epinet"
    # 1: batched (its prior's einsum, whose rounding depended on the batch, is a multiply-and-sum)
    revision = 1
    buffer_family = "sphere"
    EPI, PRIOR = 15, 5

    @classmethod
    def param_count(cls, spec, d):
        """The paper's count H + 15d + 15D + 31M + 255 + 16C + M(5d + 35 + 6C)."""
        M, D, C = int(hyper(cls, spec, "M")), cls.feature_dim(spec, d), cls.outputs(spec)
        H = trunk_size(d, int(hyper(cls, spec, "hidden")))
        return H + 15 * d + 15 * D + 31 * M + 255 + 16 * C + M * (5 * d + 35 + 6 * C)

    trainable_tensors = 14

    @classmethod
    def update_vectors(cls, spec):
        return NPS

    @classmethod
    def step_draws(cls, spec, d):
        n = int(hyper(cls, spec, "batch_size"))
        return n + n * NPS * int(hyper(cls, spec, "M"))                  # minibatch, Gaussian index vectors

    @classmethod
    def input_macs(cls, spec, d, k):
        """Trunk and base head, the epinet's first layer on [x, h] and the M prior MLPs once per input;
        per index vector the epinet's index input, hidden and output layers and both contractions."""
        M, D, C = int(hyper(cls, spec, "M")), cls.feature_dim(spec, d), cls.outputs(spec)
        E, P = cls.EPI, cls.PRIOR
        per_input = cls.trunk_macs(spec, d) + D * C + (d + D) * E + M * (P * d + P * P + C * P)
        return per_input + k * (M * E + E * E + E * M * C + 2 * M * C)

    def build(self):
        torch, B, d, D, C, M, E, P = self.torch, self.B, self.d, self.D, self.C, self.M, self.EPI, self.PRIOR
        zeros = lambda *s: torch.zeros((B, *s), dtype=self.dtype, device=self.device)   # noqa: E731
        self.trunk = self.make_trunk()
        self.base = list(self.linear_default("base", C, D, init_fan_in=self.head_fans()["fan_in"]))
        w1 = self.xavier("epinet.0", E, d + D + M, fan_in=d + D + M, fan_out=E)
        self.epi = [w1[:, :, :d].contiguous(), w1[:, :, d:d + D].contiguous(), w1[:, :, d + D:].contiguous(), zeros(E),
                    self.xavier("epinet.1", E, E, fan_in=E, fan_out=E), zeros(E),
                    self.xavier("epinet.2", M * C, E, fan_in=E, fan_out=M * C), zeros(M * C)]
        self.prior = [self.xavier("prior.0", M, P, d, fan_in=d, fan_out=P),
                      self.xavier("prior.1", M, P, P, fan_in=P, fan_out=P),
                      self.xavier("prior.2", M, C, P, fan_in=P, fan_out=C)]          # zero biases omitted
        self._zeta = self.streams("reference", "normal")
        self._xi = self.streams("update", "normal")
        self.make_optimizer()

    def trainable(self):
        return self.trunk + self.base + self.epi

    def act_index(self):
        return self._drawn("reference", dist.reference("gaussian", self._zeta, self.M))

    def update_indices(self, n):
        return self.tensor(self._drawn("update", vectors("gaussian", self._xi, self.M, n * NPS)).reshape(self.B, n, NPS, self.M))

    def predict(self, x, xi):
        torch = self.torch
        B, n, k, M, C, E = x.shape[0], x.shape[1], xi.shape[2], self.M, self.C, self.EPI
        h = self.run_trunk(self.trunk, x)
        base = linear(h, self.base[0], self.base[1])                                              # (B, n, C)
        Wx, Wh, Wz, b1, W2, b2, W3, b3 = self.epi
        a = torch.baddbmm(b1.unsqueeze(1), x, Wx.transpose(1, 2)) + torch.bmm(h.detach(), Wh.transpose(1, 2))
        pre = a[:, :, None, :] + (xi.reshape(B, n * k, M) @ Wz.transpose(1, 2)).reshape(B, n, k, E)
        g = torch.baddbmm(b2.unsqueeze(1), pre.relu().reshape(B, n * k, E), W2.transpose(1, 2)).relu()
        epi = linear(g, W3, b3).reshape(B, n, k, M, C)
        epi = (epi * xi[..., None]).sum(dim=3)                                                      # (B, n, k, C)
        with torch.no_grad():
            prior = matmul(xi, self.prior_outputs(x))                                              # (B, n, k, C)
        out = base[:, :, None, :] + self.post_scale * epi + self.prior_scale * prior
        return out.transpose(2, 3)                                                                  # (B, n, C, k)

    def prior_outputs(self, x):
        """The M prior networks' outputs on x: (B, n, d) -> (B, n, M, C)."""
        torch = self.torch
        B, n, M = x.shape[0], x.shape[1], self.M
        P1, P2, P3 = self.prior
        p = torch.bmm(x, P1.reshape(B, M * self.PRIOR, -1).transpose(1, 2)).reshape(B, n, M, self.PRIOR).relu()
        p = (p.unsqueeze(3) * P2.unsqueeze(1)).sum(-1).relu()      # (B, n, M, P): einsum is not batch-invariant
        return (p.unsqueeze(3) * P3.unsqueeze(1)).sum(-1)          # (B, n, M, C): C may be 1, no gemv

    def probe_indices(self, rng, n):
        """The probe's fixed index set (n, M): n Gaussian index vectors (the acting family) from ``rng``."""
        return probe_vectors("gaussian", rng, self.M, n)

    def probe_terms(self, x, xi):
        """The terms of f(x, z) = mean + index + prior (:meth:`EnsemblePlusPlusNeural.probe_terms`) at a
        shared index set xi (k, M): h the trunk's features, the mean = the base head (f at z = 0), the
        prior term prior_scale sum_m z_m prior_m(x), the learned index term posterior_scale epinet(x, h, z)
        z = f - mean - prior."""
        B, n, k, M = x.shape[0], x.shape[1], xi.shape[0], self.M
        h = self.run_trunk(self.trunk, x)
        mean = linear(h, self.base[0], self.base[1])                                              # (B, n, C)
        p = self.prior_outputs(x)                                                                 # (B, n, M, C)
        prior = self.prior_scale * matmul(p.transpose(2, 3), xi.transpose(-1, -2))               # (B, n, C, k)
        f = self.predict(x, xi.expand(B, n, k, M))
        return {"h": h, "mean": mean, "index": f - mean[..., None] - prior, "prior": prior}


class LMCTSNeural(NeuralAgent):
    """LMC-TS (Xu et al. 2022; spec §2.10, A27): after every round (every ``reduce`` rounds), ``num_iter``
    Langevin steps on the squared loss over the *full* history, and greedy action on the current
    network.  Network: the 64-64 ReLU trunk plus Linear(D -> C) with bias (``hidden``;
    ``layers``/``activation`` give the official [20, 20, 20] LeakyReLU variant).  ``lr_decay`` (default
    true): lr = base_lr / round every ``decay_step`` = 20 rounds.  Its per-round cost grows with t: that
    is what epp-fig9c shows.  ``variant``, the Langevin step (the official repository changed it):

    - ``final`` (default; devzhk/LMCTS ``algo/langevin.py`` and ``train_utils/helper.py`` in their last
      form): the loss summed over the history (``MSELoss(reduction='sum')``), inverse temperature
      beta^-1 = ``beta_inv`` d log T, and theta <- theta - lr_t (grad + weight_decay theta +
      sqrt(2 beta^-1 / lr_0) sigma xi), the noise scale fixed at the initial lr; ``weight_decay`` 2
      (the helper's) unless given;
    - ``sqrt_k`` (the earlier ``LangevinMC`` the spec quotes): the mean loss and theta <- theta - lr grad
      - 2 weight_decay theta + sqrt(2 lr / beta_k) sigma xi, beta_k = sqrt(k + 5) ``beta_inv`` (k: the
      step count); ``weight_decay`` 0 unless given.  With the official configs' beta_inv (0.01, 1e-4,
      1e-6) its noise outgrows the network: the weights reach NaN within 300 rounds on all three
      epp-fig9c panels, and argmax then always picks arm 0."""

    name = "lmcts"
    revision = 1                # 1: the official final Langevin step (variant "final"; was "sqrt_k")
    VARIANTS = ("final", "sqrt_k")
    choice_params = {**NeuralAgent.choice_params, "variant": VARIANTS, "activation": ("relu", "leaky_relu")}
    # batched, a seed's weights on the CPU differ in the last bits with its batch (paper sizes: d = 100,
    # 300 rounds), although its arms do not yet; the runner plays it one seed per batch instead
    batch_invariant = False

    @classmethod
    def param_count(cls, spec, d):
        layers = hyper(cls, spec, "layers") or [int(hyper(cls, spec, "hidden"))] * 2
        widths = [d, *layers, cls.outputs(spec)]
        return int(sum(a * b + b for a, b in zip(widths[:-1], widths[1:])))

    @classmethod
    def steps_per_round(cls, spec, horizon):
        """``num_iter`` Langevin steps every ``reduce`` rounds, from the first round on."""
        return int(hyper(cls, spec, "num_iter")) / int(hyper(cls, spec, "reduce"))

    @classmethod
    def input_macs(cls, spec, d, k):
        return cls.param_count(spec, d)

    @classmethod
    def step_macs(cls, spec, d, horizon):
        """The whole history: (T + 1) / 2 inputs on average over the horizon (its cost grows with t)."""
        return (horizon + 1) / 2 * cls.input_macs(spec, d, 1)

    @classmethod
    def step_draws(cls, spec, d):
        return cls.param_count(spec, d)                                     # Langevin noise, one per weight

    def __init__(self, setting, seeds, horizon, hidden: int = 64, layers: list | None = None,
                 activation: str = "relu", loss: str = "mse", lr: float = 1e-3, beta_inv: float = 0.01,
                 sigma: float = 1.0, weight_decay: float | None = None, num_iter: int = 50, reduce: int = 1,
                 lr_decay: bool = True, decay_step: int = 20, variant: str = "final", rank_by: str = "prob",
                 dtype: str = "float32", device: str = "cpu", flush_denormal: bool = False):
        self.check_choice("activation", activation)
        self.check_choice("variant", variant)
        if weight_decay is None:
            weight_decay = 2.0 if variant == "final" else 0.0
        if not layers and int(hidden) < 1:
            raise ValueError("LMC-TS needs hidden >= 1 (or layers): it has no trunk-free variant")
        super().__init__(setting, seeds, horizon, hidden=hidden, loss=loss, lr=lr, weight_decay=weight_decay,
                         update_start=1, buffer_size=0, rank_by=rank_by, dtype=dtype, device=device,
                         flush_denormal=flush_denormal)
        widths = [self.d, *(layers or [self.D, self.D]), self.C]
        self.layers = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            self.layers += list(self.linear_default(f"net.{i}", b, a))
        self.activation = activation
        self.beta_inv, self.sigma, self.num_iter, self.reduce = float(beta_inv), float(sigma), int(num_iter), int(reduce)
        self.base_lr, self.lr_decay, self.decay_step = float(lr), bool(lr_decay), int(decay_step)
        self.variant = variant
        # "final": the noise scale of the gradient, fixed at the initial lr (beta^-1 = beta_inv d log T)
        self.temp = math.sqrt(2.0 * self.beta_inv * self.d * math.log(self.T) / self.base_lr) * self.sigma
        self._langevin = self.streams("langevin", "normal", block=1 << 16)
        self.n_weights = int(sum(p[0].numel() for p in self.layers))
        self.rounds, self._nan = 0, False
        for p in self.layers:
            p.requires_grad_(True)

    def trainable(self):
        return self.layers

    def predict(self, x, xi):
        torch = self.torch
        act = torch.relu if self.activation == "relu" else torch.nn.functional.leaky_relu
        h = x
        for i in range(0, len(self.layers), 2):
            h = linear(h, self.layers[i], self.layers[i + 1])
            if i + 2 < len(self.layers):
                h = act(h)
        return h[..., None]

    def update(self, t, obs, arms, rewards):
        x = obs.features[np.arange(self.B), np.asarray(arms)]
        self.push(x, np.asarray(rewards, dtype=np.float64), None)
        self.rounds += 1
        if self.reduce > 1 and self.rounds % self.reduce:
            return
        if self.lr_decay and self.rounds % self.decay_step == 0:
            self.lr = self.base_lr / self.rounds
        if self.diverged():
            return
        X, Y = self.X[:, :self.n_buf], self.Y[:, :self.n_buf]
        for _ in range(self.num_iter):
            self.langevin_step(X, Y)

    def diverged(self) -> bool:
        """Every weight of every seed is NaN: a Langevin step would leave them NaN (NaN + anything is
        NaN), and the greedy action on NaN outputs no longer changes, so the steps are skipped -- exactly
        the same run, without hours of NaN arithmetic (epp-fig9c's Quadratic panel reaches it in round 2-3).
        Once true it stays true (``_nan``)."""
        if not self._nan:
            self._nan = all(bool(self.torch.isnan(p).all()) for p in self.layers)
        return self._nan

    def langevin_step(self, X, Y):
        torch = self.torch
        for p in self.layers:
            p.grad = None
        loss = self.batch_loss(X, Y, None, None)                      # sum over seeds of each seed's mean
        (loss * X.shape[1] if self.variant == "final" else loss).backward()     # "final": summed over data
        self.steps += 1
        noise = self._drawn("langevin", self._langevin.take(self.n_weights))
        final = self.variant == "final"
        if not final:
            scale = math.sqrt(2.0 * self.lr / (math.sqrt(self.steps + 5) * self.beta_inv)) * self.sigma
        off = 0
        with torch.no_grad():
            for p in self.layers:
                m = p[0].numel()
                xi = self.tensor(noise[:, off:off + m]).reshape(p.shape)
                off += m
                if final:                                  # theta - lr_t (grad + wd theta + temp xi)
                    g = p.grad + self.temp * xi
                    if self.wd:
                        g.add_(p, alpha=self.wd)
                    p.add_(g, alpha=-self.lr)
                else:                                      # theta - lr grad - 2 wd theta + scale xi
                    delta = -self.lr * p.grad + scale * xi
                    if self.wd:
                        delta.add_(p, alpha=-2.0 * self.wd)
                    p.add_(delta)


# ---- the runner's probe of the prediction's terms (probes.neural_terms; ``diagnostics: true``) ---------

def probe_vectors(family: str, rng, M: int, n: int) -> np.ndarray:
    """n index vectors (n, M) of the reference ``family`` drawn from the generator ``rng`` (the probe's
    own, never the agent's streams)."""
    shape = (n, dist.vector_draws(family, M))
    raw = rng.standard_normal(shape) if dist.vector_kind(family) == "normal" else rng.random(shape)
    return dist.reference(family, _Rows(raw), M)


def probe_flag(agent, diagnostics) -> bool:
    """``diagnostics``: whether the runner reads the agent's terms at each checkpoint
    (:func:`ensemble_bandits.probes.neural_terms`); it does not change the algorithm.  The probe reads
    the regression output: a ValueError for a classification loss."""
    if diagnostics and agent.C != 1:
        raise ValueError(f"{agent.name}: diagnostics reads the regression output (loss: mse), not loss {agent.loss!r}")
    return bool(diagnostics)
