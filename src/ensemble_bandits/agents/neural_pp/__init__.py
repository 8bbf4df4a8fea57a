"""Neural Ensemble++ and its baselines (epp §2.5, epp §2.7-2.10): Ensemble++, Ensemble+, EpiNet,
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
logits, cross-entropy, class 1 = reward 1, ambiguity epp-A17) or "ce_softmax" (the authors' EpiNet:
softmax, then cross-entropy: a double softmax, epp-A18; off by default); ``rank_by`` "prob" (default, epp-A17:
rank actions by softmax P(class 1), i.e. by l1 - l0), "logit" (the authors' Ensemble++: the raw
class-1 logit) or "max_logit" (the authors' Ensemble+: the largest logit of either class).  Optimiser (epp-A10, epp-A11): Adam, ``lr`` 1e-4, ``batch_size`` 128 drawn uniformly with
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
where it speaks (G = 1, epp-A8) and the authors' code elsewhere (prior_scale = posterior_scale = 0.1
unless the registry sets the per-game values of epp §2.5, epp-A9).

One module per algorithm: :mod:`.ensemble_pp` (Ensemble++), :mod:`.ensemble_plus` (Ensemble+),
:mod:`.epinet` (EpiNet), :mod:`.greedy` (Greedy) and :mod:`.lmcts` (LMC-TS), on the shared machinery
of :mod:`.base` (:class:`~.base.NeuralAgent`, and :class:`~.base.IndexedHeadsNeural` for Ensemble+ and
EpiNet), the index vectors of :mod:`.indices` and the cost model of :mod:`.cost_model` (its fitted
constants in :mod:`ensemble_bandits.calibration`).  Each agent's hyper-parameters, with their types and
defaults, are the keyword arguments of its ``__init__`` (the registry's validation reads them there,
``runner._checked``), with the names a text parameter takes in its ``choice_params``.

Every class is also importable from this package, under the path checkpoints written before the split
pickled it by (``ensemble_bandits.agents.neural_pp.EpiNetNeural``, ...): such a file still resumes
(tests/test_checkpoint_compat.py).

These modules import torch only inside functions and methods: the workflow reads the class
attributes (``ensemble_size``, ``uses_accelerator``, ...) while it builds the job graph without torch.
"""
from __future__ import annotations

from .base import LOSSES, RANK_BY, IndexedHeadsNeural, NeuralAgent, probe_flag
from .cost_model import trunk_size
from .ensemble_plus import EnsemblePlusNeural
from .ensemble_pp import PRIOR_INITS, EnsemblePlusPlusNeural
from .epinet import EpiNetNeural
from .greedy import GreedyNeural
from .indices import NPS, enumerated, probe_vectors, vectors
from .lmcts import LMCTSNeural

__all__ = ["LOSSES", "NPS", "PRIOR_INITS", "RANK_BY", "EnsemblePlusNeural", "EnsemblePlusPlusNeural", "EpiNetNeural",
           "GreedyNeural", "IndexedHeadsNeural", "LMCTSNeural", "NeuralAgent", "enumerated", "probe_flag",
           "probe_vectors", "trunk_size", "vectors"]
