"""Neural Ensemble++ (Algorithm 1, eq. 12; epp §2.5): the class :class:`EnsemblePlusPlusNeural`."""
from __future__ import annotations

import math

import numpy as np

from ... import distributions as dist
from ...catalog import hyper
from ..torch_common import linear, matmul
from .base import NeuralAgent, probe_flag
from .indices import NPS, enumerated, probe_vectors, vectors

PRIOR_INITS = ("sphere_rows", "xavier")  # Ensemble++ prior P0: unit rows in R^M ("sDB"), or xavier-normal


class EnsemblePlusPlusNeural(NeuralAgent):
    """Neural Ensemble++ (Algorithm 1, eq. 12; epp §2.5):

    f(x, zeta) = b^T h(x) + posterior_scale sg(h(x))^T W zeta + prior_scale sg(h(x))^T P0 zeta,

    h the 64-64 ReLU trunk (PyTorch default init), b a Linear(D -> C) head without bias (epp-A19;
    ``base_bias: true`` adds it), W (C D x M) trainable, xavier-normal (fan_in M, fan_out C D), P0
    (C D x M) fixed, each row a unit vector in R^M times ``prior_std`` (the code's "sDB" init);
    stop-gradient: W's loss reaches neither h nor b through sg.  Acting index zeta ~ ``reference``
    (Sphere); ``prior_init`` "sphere_rows" (default, the code's "sDB") or "xavier" (xavier-normal, not
    row-normalised: the authors' LLM head, epp §2.6); each datum stores z ~ ``perturbation`` (Sphere); a
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


