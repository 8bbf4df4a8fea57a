"""UCI classification bandits (glmes §3.6, glmes §10.5, glmes-A19; epp §3.6, epp-A28): Shuttle,
Mushroom, Adult, Covertype as contextual bandits with per-round contexts.

Construction (the public Neural-TS / NeuralUCB loader, re-implemented; glmes §10.5):

1. rows X (n, d0) from :func:`ensemble_bandits.data.load_classification` (train and test files
   together, categoricals ordinal-coded, missing values -> -1), each row scaled to unit L2 norm;
   classes 0..K-1;
2. the stream of rows: round t shows row ``order[(t - 1) mod n]`` (wraps around when T > n).
   ``order``: ``"shuffle"`` (default; glmes §3.6 step 2, epp §3.6) -- a permutation per seed from the
   seed's stream (seed, "env/instance"), the same for every agent on that seed; ``"fixed"`` -- the
   public loader's single order for every seed, ``numpy.random.RandomState(2022).shuffle`` of the row
   indices (what ``sklearn.utils.shuffle(random_state=2022)`` does; applied to our row order, which
   need not be OpenML's);
3. disjoint encoding: arm a's context is the K d0 vector with the row in block a and zeros elsewhere
   (d = K d0: Shuttle 63, Mushroom 44, Adult 28, Covertype 378);
4. reward 1 for the arm of the row's class, 0 otherwise, plus ``noise_sd`` times a standard normal
   from (seed, "env/noise") (one per seed per round, common to all agents).  glmes states 1/0
   rewards (noise_sd = 0, the default); Ensemble++ adds N(0, 0.1) noise (std 0.1, epp-A3) and its code
   uses std 1.0 on Mushroom (epp-A28): the registry sets ``noise_sd`` per figure.

Pseudo-regret: best mean minus the pulled arm's mean = 1 - 1[pulled arm = class], the number of
misclassifications (noise never enters it); it equals the spec's realised regret 1 - reward when
``noise_sd`` = 0.  The rewards are deterministic given the row, so agents on one seed see the same
rows and the same noise (common random numbers) by construction.

(d0, K) of each dataset is stated in :data:`DIMENSIONS` (glmes Table 1), so that the cost and memory
models need no data; the loaded data are checked against it.  The data directory is passed at run
time (``data_dir``; :mod:`.base`, "the data hook"); it is not a hyper-parameter.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..catalog import hyper
from ..protocol import Observation
from .base import Contexts, Environment

DIMENSIONS = {"shuttle": (9, 7), "mushroom": (22, 2), "adult": (14, 2), "covertype": (54, 7)}
ORDERS = ("shuffle", "fixed")
FIXED_ORDER_SEED = 2022
_CACHE: dict[tuple, tuple] = {}     # (dataset, data_dir) -> (unit rows, labels), per process


def rows_and_labels(dataset: str, data_dir) -> tuple[np.ndarray, np.ndarray]:
    """(X with unit-norm rows (n, d0), y (n,)) of ``dataset`` in ``data_dir`` (files checked;
    read once per process), checked against :data:`DIMENSIONS`."""
    from .. import data

    key = (dataset, str(Path(data_dir).resolve()))
    if key not in _CACHE:
        X, y = data.load_classification(dataset, data_dir)
        d0, K = DIMENSIONS[dataset]
        if X.shape[1] != d0 or len(np.unique(y)) != K or y.min() != 0 or y.max() != K - 1:
            raise data.DataError(f"dataset {dataset} in {data_dir}: {X.shape[1]} features and classes "
                                 f"{sorted(set(y.tolist()))[:10]}; expected d0 = {d0} features and K = {K} classes")
        norm = np.linalg.norm(X, axis=1, keepdims=True)
        _CACHE[key] = (X / np.where(norm > 0, norm, 1.0), y.astype(np.int64))
    return _CACHE[key]


class UCIClassification(Contexts):
    """A UCI classification dataset as a K-armed contextual bandit (module docstring).

    ``dataset``: shuttle (default) | mushroom | adult | covertype; ``noise_sd``: std of the Gaussian
    reward noise (0: the 1/0 rewards of glmes); ``order``: shuffle (per seed) | fixed (seed 2022 for
    all); ``data_dir``: the directory holding the datasets (given at run time, not a hyper-parameter).
    """

    @classmethod
    def _dataset(cls, spec: dict) -> str:
        name = hyper(cls, spec, "dataset")
        if name not in DIMENSIONS:
            raise ValueError(f"uci_classification: unknown dataset {name!r}; known: {', '.join(DIMENSIONS)}")
        return name

    @classmethod
    def dimensions(cls, spec: dict) -> tuple[int, int]:
        d0, K = DIMENSIONS[cls._dataset(spec)]
        return K * d0, K

    @classmethod
    def datasets(cls, spec: dict) -> list[str]:
        return [cls._dataset(spec)]

    def __init__(self, seeds, dataset: str = "shuttle", noise_sd: float = 0.0, order: str = "shuffle",
                 data_dir=None):
        dataset = self._dataset({"dataset": dataset})
        if order not in ORDERS:
            raise ValueError(f"uci_classification: order must be one of {ORDERS}, got {order!r}")
        if data_dir is None:
            raise ValueError(f"uci_classification: dataset {dataset!r} needs its data directory: data_dir "
                             f"(the workflow passes --data-dir; `python -m ensemble_bandits.cli simulate "
                             f"--data-dir DIR`)")
        d, K = self.dimensions({"dataset": dataset})
        Environment.__init__(self, seeds, d, K, noise_sd)
        self.dataset, self.order = dataset, order
        self.X, self.y = rows_and_labels(dataset, data_dir)
        self.d0, self.n = self.X.shape[1], self.X.shape[0]
        if order == "shuffle":
            self.perm = self.streams.per_seed("instance", lambda g: g.permutation(self.n))
        else:
            idx = np.arange(self.n)
            np.random.RandomState(FIXED_ORDER_SEED).shuffle(idx)
            self.perm = np.broadcast_to(idx, (self.B, self.n))
        self.theta = None
        self.features, self._t = None, None
        self._blocks = np.arange(self.K)

    def row_index(self, t: int) -> np.ndarray:
        """Dataset row (B,) shown in round t (wrapping around after n rounds)."""
        return self.perm[:, (t - 1) % self.n]

    def observe(self, t: int) -> Observation:
        if t != self._t:
            rows = self.row_index(t)
            x, label = self.X[rows], self.y[rows]                                  # (B, d0), (B,)
            feats = np.zeros((self.B, self.K, self.K, self.d0))
            feats[:, self._blocks, self._blocks, :] = x[:, None, :]                # block a of arm a
            self.features = feats.reshape(self.B, self.K, self.d)
            self._obs = Observation.of(self.features)
            self.means = (self._blocks[None, :] == label[:, None]).astype(np.float64)
            self.best_arm, self.best = label, np.ones(self.B)
            self._t = t
        return self._obs
