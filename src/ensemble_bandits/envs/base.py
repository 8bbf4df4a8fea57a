"""The action-set abstraction: what an agent chooses from, each round, in a batch of B instances.

Three kinds, named by the class attribute ``action_space`` (an agent class lists the kinds it can
play in its own ``action_spaces``):

- ``finite`` (:class:`FixedArms`): a fixed arm set ``features`` (B, K, d); ``observe`` returns the
  same :class:`Observation` every round (no copy);
- ``contexts`` (:class:`Contexts`): a new arm set (B, K, d) every round and a new Observation;
  ``features``, ``means``, ``best``, ``best_arm`` and ``x_star`` are those of the current round;
- ``sphere`` (:class:`Sphere`): the compact unit sphere S^{d-1}; agents return action vectors (B, d)
  and ``observe`` shows no features, only ``compact``.

Randomness (common random numbers): the instance (theta*, and a fixed arm set) of each seed is drawn
from the stream (seed, "env/instance") and the reward noise from (seed, "env/noise"), one scalar per
seed per round (a uniform for Bernoulli rewards, a standard normal for Gaussian rewards), so every
agent run on a seed sees the same instance and the same noise whichever arm it pulls, and a seed's
numbers do not depend on the batch it runs in.  Per-round contexts come from their own stream
(seed, "env/contexts").

An environment shows an agent only its static ``setting`` and, each round, ``observe(t)``
(:mod:`ensemble_bandits.protocol`); theta*, ``means``, ``best`` and ``x_star`` are for the runner
and its probes.

Files an environment reads at run time (the data hook).  An environment built from files (the UCI
classification bandits, :mod:`.uci`) declares them with two class methods of its registry spec,
which the workflow reads while it builds the job graph (no file is opened there):

- ``datasets(spec)``: names of :data:`ensemble_bandits.data.DATASETS` whose files the environment
  reads.  The workflow checks them (present, SHA-256: :func:`ensemble_bandits.data.verify`) and makes
  them inputs of the cell's simulation jobs, and passes ``--data-dir DIR`` to ``cli simulate`` /
  ``cli simulate-group``, which hands it to the constructor as the keyword ``data_dir``
  (:func:`ensemble_bandits.runner.make_env`).  ``data_dir`` is not a hyper-parameter: it never enters
  the cell spec or its key, so moving the data does not change a result.
- ``derived_inputs(spec)``: further files, relative to the project root, that the simulation jobs
  need and that a workflow rule produces (e.g. an embeddings cache computed from a dataset); they
  become inputs of the simulation jobs, so Snakemake builds them first.

A figure whose cells read datasets must list them under ``data:`` (or ``optional_data:``) of its
registry entry (checked by :func:`ensemble_bandits.validation.check_figure`).
"""
from __future__ import annotations

import numpy as np

from ..catalog import hyper
from ..protocol import Observation, Setting
from ..rng import Streams


def unit_rows(a: np.ndarray) -> np.ndarray:
    """Each row of ``a`` scaled to unit Euclidean norm."""
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


class Environment:
    """B independent instances (one per seed) of dimension d with K arms (0 on the sphere): the
    streams, the reward noise and the round's pseudo-regret ``best - mean``."""

    action_space: str
    noise_kind = "normal"
    records_accuracy = False        # the run file gets a column ``accuracy`` (fraction of optimal rounds)

    @classmethod
    def dimensions(cls, spec: dict) -> tuple[int, int]:
        """(d, K) of an environment spec, defaults from the class's signature (memory and cost models)."""
        return int(hyper(cls, spec, "d")), int(hyper(cls, spec, "n_arms"))

    @classmethod
    def datasets(cls, spec: dict) -> list[str]:
        """Datasets (names in ``data.DATASETS``) the environment of ``spec`` reads at run time; it is
        then built with the keyword ``data_dir`` (see the module docstring).  None by default."""
        return []

    @classmethod
    def derived_inputs(cls, spec: dict) -> list[str]:
        """Files (relative to the project root) made by a workflow rule that the environment of
        ``spec`` reads at run time (see the module docstring).  None by default."""
        return []

    def __init__(self, seeds, d: int, n_arms: int, noise_sd: float):
        self.seeds = [int(s) for s in seeds]
        self.B, self.d, self.K = len(self.seeds), int(d), int(n_arms)
        self.noise_sd = float(noise_sd)
        self.streams = Streams(self.seeds, "env")
        self._noise = self.streams("noise", self.noise_kind)
        self._rows = np.arange(self.B)

    @property
    def setting(self) -> Setting:
        """The static facts an agent may be built from."""
        return Setting(self.B, self.d, self.K, self.action_space)

    def observe(self, t: int) -> Observation:
        """What an agent sees in round t."""
        raise NotImplementedError

    def mean_reward(self, arms: np.ndarray) -> np.ndarray:
        """Mean reward (B,) of ``arms`` in the current round."""
        raise NotImplementedError

    def step(self, arms: np.ndarray):
        """Pull ``arms`` (B,) (action vectors (B, d) on the sphere): returns (rewards, pseudo-regret), each (B,)."""
        return self.step_many([arms])[0]

    def step_many(self, arms_list):
        """One round for several agents at once (a shared pass): each entry of ``arms_list`` is one
        agent's ``arms``; returns one (rewards, pseudo-regret) pair per entry.  The round's noise is
        drawn once and used for every entry, as each agent's own run would draw it, so every entry's
        numbers are those of :meth:`step` on its own copy of the environment."""
        noise = self._noise.take(1)[:, 0]
        out = []
        for arms in arms_list:
            mean = self.mean_reward(arms)
            out.append((self._reward(mean, noise), self.best - mean))
        return out

    def _reward(self, mean, noise):
        return mean + self.noise_sd * noise


class ArmSet(Environment):
    """K arms with features (B, K, d) and a linear truth theta* (B, d): the means, the best arm and
    the observation of the arm set on show (:meth:`show`)."""

    def show(self, features: np.ndarray) -> None:
        """Put the arm set ``features`` (B, K, d) on show: ``observe`` returns it from now on."""
        self.features = features
        self._obs = Observation.of(features)
        self.means = np.einsum("bkd,bd->bk", features, self.theta)
        self.best = self.means.max(axis=1)
        self.best_arm = self.means.argmax(axis=1)

    def observe(self, t: int) -> Observation:
        return self._obs

    @property
    def x_star(self) -> np.ndarray:
        """Features of the optimal arm (B, d)."""
        return self.features[self._rows, self.best_arm]

    def mean_reward(self, arms):
        return self.means[self._rows, arms]


class FixedArms(ArmSet):
    """A finite, fixed arm set: each seed's arms and theta* are one draw ``instance(g)`` -> (x (K, d),
    theta (d,)) from its stream (seed, "env/instance"); the same Observation every round."""

    action_space = "finite"

    def __init__(self, seeds, d: int, n_arms: int, noise_sd: float = 1.0):
        super().__init__(seeds, d, n_arms, noise_sd)
        n = self.K * self.d
        flat = self.streams.per_seed("instance", lambda g: np.concatenate([a.ravel() for a in self.instance(g)]))
        self.theta = flat[:, n:]
        self.show(flat[:, :n].reshape(-1, self.K, self.d))

    def instance(self, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


class Contexts(ArmSet):
    """Per-round contexts: theta* (d,) of each seed is drawn once, ``truth(g)``, from its stream
    (seed, "env/instance"); round t shows a new arm set ``contexts(t)`` (B, K, d) and a new Observation.

    ``observe(t)`` draws the arm set when t changes, so asking twice in a round gives the same one."""

    action_space = "contexts"

    def __init__(self, seeds, d: int, n_arms: int, noise_sd: float = 1.0):
        super().__init__(seeds, d, n_arms, noise_sd)
        self.theta = self.streams.per_seed("instance", self.truth)
        self.features, self._t = None, None

    def truth(self, g: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def contexts(self, t: int) -> np.ndarray:
        raise NotImplementedError

    def observe(self, t: int) -> Observation:
        if t != self._t:
            self.show(self.contexts(t))
            self._t = t
        return self._obs


class Sphere(Environment):
    """The compact unit sphere S^{d-1} as action set: theta* (d,) of each seed is drawn once,
    ``truth(g)``, from its stream (seed, "env/instance"); the optimal action is theta*/|theta*| and
    an action x scores <x, theta*>.  ``observe`` shows no features, only that the set is the sphere."""

    action_space = "sphere"

    @classmethod
    def dimensions(cls, spec: dict) -> tuple[int, int]:
        return int(hyper(cls, spec, "d")), 1          # one action vector is scored per round

    def __init__(self, seeds, d: int, noise_sd: float = 1.0):
        super().__init__(seeds, d, 0, noise_sd)
        self.theta = self.streams.per_seed("instance", self.truth)
        self.best = np.linalg.norm(self.theta, axis=1)
        self.features = None
        self._obs = Observation(compact=True)

    def truth(self, g: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def observe(self, t: int) -> Observation:
        return self._obs

    @property
    def x_star(self) -> np.ndarray:
        return self.theta / self.best[:, None]

    def mean_reward(self, actions):
        return np.einsum("bd,bd->b", actions, self.theta)
