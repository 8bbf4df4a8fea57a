"""Greedy (epp §2.9, epp-A26): the class :class:`GreedyNeural`."""
from __future__ import annotations

from ..torch_common import linear
from .base import NeuralAgent

class GreedyNeural(NeuralAgent):
    """Greedy (epp §2.9, epp-A26): the Ensemble++ trunk and base head only (Ensemble++ with zeta = 0 and no
    ensemble or prior terms), the same optimiser and schedule, acting on argmax of the mean prediction;
    squared loss on the reward (cross-entropy for ``loss: ce``).  ``base_init``: "default" (PyTorch's
    Linear init, as Ensemble++'s base head) or "xavier" (xavier-normal: the authors' LLM ``linear`` head,
    epp §2.9; its zero-initialised bias is not modelled: the head has no bias)."""

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

