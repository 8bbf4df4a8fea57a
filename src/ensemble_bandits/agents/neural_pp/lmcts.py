"""LMC-TS (Xu et al. 2022; epp §2.10, epp-A27): the class :class:`LMCTSNeural`."""
from __future__ import annotations

import math

import numpy as np

from ...catalog import hyper
from ..torch_common import linear
from .base import MLP_CHOICES, NeuralAgent

class LMCTSNeural(NeuralAgent):
    """LMC-TS (Xu et al. 2022; epp §2.10, epp-A27): after every round (every ``reduce`` rounds), ``num_iter``
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
    choice_params = {**MLP_CHOICES, "variant": VARIANTS, "activation": ("relu", "leaky_relu")}
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
