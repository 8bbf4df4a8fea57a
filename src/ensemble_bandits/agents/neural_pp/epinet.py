"""EpiNet (epp §2.8): the class :class:`EpiNetNeural`."""
from __future__ import annotations

from ... import distributions as dist
from ...catalog import hyper
from ..torch_common import linear, matmul
from .base import IndexedHeadsNeural
from .cost_model import trunk_size
from .indices import NPS, probe_vectors, vectors

class EpiNetNeural(IndexedHeadsNeural):
    """EpiNet (epp §2.8): base = trunk + Linear(D -> C) with bias (default init); epinet MLP
    [15, 15] (ReLU, biases) on [x, sg(h(x)), z] with M C outputs contracted with z; prior = M frozen
    MLPs [5, 5] on the raw x, outputs C, combined as sum_m prior_m(x) z_m; epinet and prior weights
    xavier-normal, biases zero.  f = base + posterior_scale epinet + prior_scale prior.  Index z ~
    N(0, I_M) to act; NPS = 16 Gaussian index vectors per datum per step; buffer perturbation Sphere;
    targets Y + noise_scale <z, z_buf>; cross-entropy on logits for ``loss: ce`` (epp-A18)."""

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

