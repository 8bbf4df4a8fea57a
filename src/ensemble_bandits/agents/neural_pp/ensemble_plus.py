"""Ensemble+ (randomised-prior ensemble; epp §2.7): the class :class:`EnsemblePlusNeural`."""
from __future__ import annotations

import numpy as np

from ...catalog import hyper
from ..torch_common import matmul
from .base import IndexedHeadsNeural
from .cost_model import trunk_size

class EnsemblePlusNeural(IndexedHeadsNeural):
    """Ensemble+ (randomised-prior ensemble; epp §2.7): the trainable 64-64 trunk and M trainable heads
    Linear(D -> C) (xavier-normal weights, zero biases), plus a separate frozen prior trunk (default
    init) with M frozen prior heads (xavier-normal, zero bias); head m outputs
    posterior_scale head_m(h(x)) + prior_scale priorhead_m(h0(x)).  Acting: a uniform head (one-hot
    index); training: every datum trains all M heads (index set I_M) with targets Y + noise_scale z_m,
    z ~ N(0, I/M) stored with the datum; no stop-gradient (all heads train the trunk).  Without a trunk
    (``hidden: 0``) both trunks are the identity: the heads and prior heads read the same input, the
    LLM variant of epp §2.7 (its per-action head biases are one bias per head here, shared by the arms)."""

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

