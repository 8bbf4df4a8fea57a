"""The shared machinery of the neural Ensemble++ family (:mod:`ensemble_bandits.agents.neural_pp`):
:class:`NeuralAgent` (the setting, the streams, the torch dtype/device, the 2-layer ReLU trunk, the FIFO
buffer, the minibatch draw, the loss over index sets and the Adam step) and :class:`IndexedHeadsNeural`,
the common constructor of Ensemble+ and EpiNet."""
from __future__ import annotations

import inspect
import math

import numpy as np

from ... import distributions as dist
from ...catalog import hyper
from ...protocol import AgentClass, Setting
from ...rng import Streams
from ..torch_common import FlatAdam, from_stream, matmul, torch_device, torch_dtype
from .cost_model import NeuralCostModel

# loss -> number of outputs C; "ce_softmax" is the authors' EpiNet: softmax applied to the logits before
# the cross-entropy (which applies its own: a double softmax), a code-faithful variant, off by default
LOSSES = {"mse": 1, "ce": 2, "ce_softmax": 2}
# rank_by: "prob" (default: P(class 1), i.e. l1 - l0), "logit" (the raw class-1 logit: the authors'
# Ensemble++), "max_logit" (the arm holding the largest logit of either class: the authors' Ensemble+)
RANK_BY = ("prob", "logit", "max_logit")
BACKBONES = ("mlp", "gpt")             # the trunk: the 2-layer MLP, or the GPT backbone (Ensemble++ and Greedy)
# the names the text hyper-parameters of every class take (an agent with the MLP trunk only: these)
MLP_CHOICES = {"loss": tuple(LOSSES), "rank_by": RANK_BY}


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


class NeuralAgent(NeuralCostModel, AgentClass):
    """Common machinery: the setting, the streams, the torch dtype/device, the 2-layer ReLU trunk,
    the FIFO buffer, the minibatch draw, the loss over index sets and the Adam step."""

    name = "neural"
    uses_accelerator = True
    action_spaces: tuple[str, ...] = ("finite", "contexts")
    buffer_family: str | None = None          # perturbation family stored with each datum (None: none)
    # the names a text hyper-parameter takes, checked while the job graph is built (runner._checked):
    # a registry typo (or a code-faithful variant misspelt) fails before any job runs
    choice_params = {**MLP_CHOICES, "backbone": BACKBONES}

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        """M, the index dimension or number of heads, for the classes that take one; else 1."""
        return int(hyper(cls, spec, "M")) if "M" in inspect.signature(cls.__init__).parameters else 1

    @classmethod
    def feature_dim(cls, spec: dict, d: int) -> int:
        """D, the width of the features the heads read: ``hidden``, or d without a trunk (hidden 0),
        or K E for the GPT backbone (K = ``init_blocks`` actions)."""
        if spec.get("backbone") == "gpt":
            from ..gpt_trunk import SHAPE
            return int(hyper(cls, spec, "init_blocks")) * SHAPE["n_embd"]
        return int(hyper(cls, spec, "hidden")) or int(d)

    @classmethod
    def check_choice(cls, key: str, value) -> None:
        """ValueError unless ``value`` is one of the names ``choice_params[key]`` allows."""
        allowed = BACKBONES if key == "backbone" else cls.choice_params[key]      # backbone: also where not taken
        if value not in allowed:
            raise ValueError(f"{key} must be one of {', '.join(map(str, allowed))}, got {value!r}")

    @classmethod
    def outputs(cls, spec: dict) -> int:
        loss = hyper(cls, spec, "loss")
        cls.check_choice("loss", loss)
        return LOSSES[loss]

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
            from ..gpt_trunk import SHAPE
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
            from .. import gpt_trunk
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
            from .. import gpt_trunk
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

class IndexedHeadsNeural(NeuralAgent):
    """Ensemble+ and EpiNet: the same hyper-parameters (an index dimension M and the training
    settings of :class:`NeuralAgent`); each builds its networks in ``build``."""

    choice_params = MLP_CHOICES                                                   # the MLP trunk only

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


def probe_flag(agent, diagnostics) -> bool:
    """``diagnostics``: whether the runner reads the agent's terms at each checkpoint
    (:func:`ensemble_bandits.probes.neural_terms`); it does not change the algorithm.  The probe reads
    the regression output: a ValueError for a classification loss."""
    if diagnostics and agent.C != 1:
        raise ValueError(f"{agent.name}: diagnostics reads the regression output (loss: mse), not loss {agent.loss!r}")
    return bool(diagnostics)
