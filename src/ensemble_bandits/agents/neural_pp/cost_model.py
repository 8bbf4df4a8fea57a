"""The neural Ensemble++ family's cost model (``round_costs``, read by :mod:`ensemble_bandits.costs`):
CPU seconds of one round of a batch of B seeds =
per batch, the torch dispatch overhead of a select and an update (COST_ROUND_S) and of each
gradient step (COST_STEP_S per trainable tensor: forward, backward, one Adam update per tensor),
+ per seed, COST_MAC_S per multiply-add of the arm scores (K forward passes at one index) and of
the gradient steps (COST_BACKWARD x the forward pass of the minibatch at every index vector),
and COST_DRAW_S per random number a step draws in numpy (minibatch, index vectors, Langevin noise).
Each class counts its own multiply-adds (``act_macs``, ``step_macs``) and steps per round.  The
constants, with their units, fit and the command that refits them, are in
:mod:`ensemble_bandits.calibration` (model ``neural_pp``)."""
from __future__ import annotations

from ...calibration import constants
from ...catalog import hyper

COST_ROUND_S, COST_STEP_S, COST_MAC_S, COST_BACKWARD, COST_DRAW_S = constants(
    "neural_pp", "COST_ROUND_S", "COST_STEP_S", "COST_MAC_S", "COST_BACKWARD", "COST_DRAW_S")


def trunk_size(d: int, hidden: int = 64) -> int:
    """H: parameters of the feature MLP d -> D -> D with biases (10,624 at d = 100, D = 64)."""
    return d * hidden + hidden + hidden * hidden + hidden



class NeuralCostModel:
    """The cost model's class methods, mixed into :class:`.base.NeuralAgent`: a subclass counts its own
    multiply-adds (``input_macs``, ``update_vectors``, ``step_draws``, ...)."""

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
            from ..gpt_trunk import param_count
            return param_count(d - int(hyper(cls, spec, "init_blocks")))
        return trunk_size(d, int(hyper(cls, spec, "hidden")))

    @classmethod
    def trunk_macs(cls, spec: dict, d: int) -> int:
        if spec.get("backbone") == "gpt":                     # about its weights x tokens per input
            from ..gpt_trunk import SHAPE
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
