"""Online hate-speech moderation (epp §3.7, App. G.5) as a per-round-contexts bandit.

Round t shows one post x_t; the two actions are publish (arm 0) and block (arm 1), with the
deterministic rewards of the paper: publish a free post +1, publish a hate post -0.5, block +0.5
(``rewards``).  Regret = best - obtained reward (0.5 for blocking a free post, 1 for publishing a hate
post): a round is a mistake iff its regret is positive, so the run file's ``accuracy`` column
(:attr:`records_accuracy`; the fraction of rounds so far with the correct action, the y axis of
epp-fig3d/15/16) is exactly the authors' logged accuracy.

Posts: the Davidson corpus (the offline substitute of the Berkeley corpus, :mod:`ensemble_bandits.text`),
labelled by ``label``; their features phi (D) are the frozen encoder's (``encoder``, ``max_tokens``),
read from the cached features file.  Order: each seed draws a permutation of the corpus from its
stream (seed, "env/order"), and a fresh one for each further pass (a shuffled data loader, cycled):
every agent on a seed sees the same posts in the same order.  ``posts`` = n keeps the first n posts of
the corpus only (a reduced scale: smoke runs encode n posts, not 24,783).

Arm contexts (``features``): ``"disjoint"`` (default): publish shows [phi, 0], block [0, phi]
(d = 2 D).  A linear map of an arm's context, <x_a, w> with w = [w^publish; w^block], is then exactly
the per-action head <phi, w^a> of the paper's model f(x)[a] = <phi, b^a> + <sg phi, A^a zeta>: with a
linear body (``hidden: 0``) the neural Ensemble++ / Ensemble+ / Greedy agents of
:mod:`ensemble_bandits.agents.neural_pp` are the per-action heads of epp §2.6-2.9 on frozen features,
played through the common protocol (so any ``contexts`` agent can play this environment).
``"tokens"``: the raw post for an agent with its own backbone (``backbone: gpt``, epp-fig16): each
arm shows [byte token ids (``max_tokens``, default 64; bytes + 1, 0 = pad), one-hot action (2)]
(d = max_tokens + 2); no features file is read.

Inputs (the data hook of :mod:`.base`: :meth:`datasets`, :meth:`derived_inputs`): the Davidson CSV in ``data_dir`` (default ``resources/data``) and the
features file in ``cache_dir`` (default ``results/embeddings`` of the project), which
``python -m ensemble_bandits.text`` (rule ``embed_text``) writes; a missing file is an error that
says how to make it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import text
from ..catalog import hyper
from ..protocol import Observation
from ..rng import generator
from .base import ArmSet, Environment

FEATURES = ("disjoint", "tokens")
TOKENS = 64                     # byte tokens per post in ``features: tokens`` (epp §7.1: n_positions 64)

class HateSpeech(ArmSet):
    """The moderation bandit of the module docstring, B seeds in lockstep."""

    action_space = "contexts"
    records_accuracy = True
    PUBLISH, BLOCK = 0, 1

    @classmethod
    def dimensions(cls, spec: dict) -> tuple[int, int]:
        if hyper(cls, spec, "features") == "tokens":
            return int(hyper(cls, spec, "max_tokens") or TOKENS) + 2, 2
        return 2 * text.encoder(hyper(cls, spec, "encoder")).dim, 2

    @classmethod
    def datasets(cls, spec: dict) -> list[str]:
        """The data hook (:mod:`.base`): the Davidson corpus, read from ``data_dir``."""
        return [text.DATASET]

    @classmethod
    def derived_inputs(cls, spec: dict) -> list[str]:
        """The data hook (:mod:`.base`): the features file (relative to the project root) that rule
        ``embed_text`` makes; none for ``features: tokens``."""
        from ..data import DATASETS

        if hyper(cls, spec, "features") == "tokens":
            return []
        sha = DATASETS[text.DATASET].files[0].sha256
        return [str(text.embedding_file(text.DEFAULT_CACHE, sha, hyper(cls, spec, "encoder"),
                                        hyper(cls, spec, "max_tokens"), hyper(cls, spec, "posts")))]

    def __init__(self, seeds, encoder: str = "minilm", max_tokens: int | None = None, label: str = "not_neither",
                 rewards: tuple = (1.0, -0.5, 0.5), features: str = "disjoint", posts: int | None = None,
                 data_dir=None, cache_dir=None):
        if features not in FEATURES:
            raise ValueError(f"features must be one of {FEATURES}, got {features!r}")
        corpus = text.load_corpus(data_dir)
        if posts is not None and not 1 <= int(posts) <= len(corpus.text):
            raise ValueError(f"posts must be in 1..{len(corpus.text)} (the corpus), got {posts!r}")
        n = int(posts) if posts else len(corpus.text)       # the first n posts (a reduced scale), else all
        self.hate = corpus.hate(label)[:n]
        self.mode = features
        if features == "tokens":
            from ..agents.gpt_trunk import tokens

            self.phi = tokens(corpus.text[:n], max_tokens or TOKENS)
            d = self.phi.shape[1] + 2
        else:
            path = text.embedding_file(cache_dir or text.cache_dir_default(), corpus.sha256, encoder, max_tokens, posts)
            if not path.is_file():
                raise FileNotFoundError(
                    f"features of the hate-speech corpus not found: {path}; make them with `python -m ensemble_bandits"
                    f".text --encoder {encoder}` (or snakemake {Path(text.DEFAULT_CACHE) / path.name})")
            self.phi = text.read_embeddings(path, corpus.sha256, n)
            d = 2 * self.phi.shape[1]
        Environment.__init__(self, seeds, d, 2, 0.0)
        self.r_free, self.r_hate, self.r_block = (float(r) for r in rewards)
        self.N = len(self.hate)
        self._gens = [generator(s, "env/order") for s in self.seeds]
        self.order = np.empty((self.B, 0), dtype=np.int64)
        self.theta, self.features, self._t = None, None, None

    def post(self, t: int) -> np.ndarray:
        """Corpus indices (B,) of the posts shown in round t (1-based)."""
        while self.order.shape[1] < t:
            more = np.stack([g.permutation(self.N) for g in self._gens])
            self.order = np.concatenate([self.order, more], axis=1)
        return self.order[:, t - 1]

    def observe(self, t: int) -> Observation:
        if t != self._t:
            idx = self.post(t)
            phi = self.phi[idx].astype(np.float64)                     # (B, D) features, or (B, L) token ids
            feats = np.zeros((self.B, 2, self.d))
            D = phi.shape[1]
            if self.mode == "tokens":
                feats[:, :, :D] = phi[:, None, :]
                feats[:, self.PUBLISH, D + self.PUBLISH] = feats[:, self.BLOCK, D + self.BLOCK] = 1.0
            else:
                feats[:, self.PUBLISH, :D] = phi
                feats[:, self.BLOCK, D:] = phi
            self.features, self._obs = feats, Observation.of(feats)
            hate = self.hate[idx]
            self.means = np.stack([np.where(hate, self.r_hate, self.r_free), np.full(self.B, self.r_block)], axis=1)
            self.best_arm = self.means.argmax(axis=1)
            self.best = self.means[self._rows, self.best_arm]
            self._t = t
        return self._obs
