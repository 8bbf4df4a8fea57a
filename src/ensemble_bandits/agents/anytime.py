"""The doubling trick (glmes §2.5; glmes paper §6 L235-257, App. E): an anytime agent from any agent.

Epoch ends T_i = floor(T0 b^i) (:func:`ensemble_bandits.theory.doubling_schedule`); epoch i plays
rounds T_{i-1}+1 .. T_i (T_{-1} = 0) with a *fully restarted* inner agent -- a new object, no
history, new models -- built for the planned epoch length tau_i = T_i - T_{i-1} (never truncated at
the horizon, which an anytime agent does not know: the wrapper never reads it).  Per epoch:

* ensemble size m_i = max(1, round(m_coef ln tau_i)) (natural log, round half up; glmes-A11) and
  perturbation scale sigma_i = scale_coef ln tau_i (glmes paper §7.2: m = 2 log tau_i, sigma_R =
  0.02 log tau_i), unless ``m`` / ``scale`` fix them for every epoch;
* warm-up (``dt_warmup``, glmes-A10): ``per_epoch`` -- each epoch redoes the inner agent's warm-up,
  of length min(warmup, tau_i) (the inner agent caps its warm-up at its horizon); ``once`` -- only
  epoch 0 warms up, later epochs get ``warmup = 0``;
* random streams: the inner agent of epoch i draws from the namespace
  ``agent/<wrapper name>/epoch<i>/<inner name>`` (its ``name`` is set on the instance before its
  ``__init__`` runs; agents name their streams ``agent/<self.name>``), so every epoch has streams of
  its own, reproducible from (seed, epoch) and independent of the batch;
* the regret of warm-up rounds is recorded apart (``records_warmup``, when the inner agent has a
  warm-up): the run's column ``regret_warmup`` is the cumulative regret of the rounds that were an
  epoch's warm-up, so a figure can say how much of a DT curve's regret its warm-ups cost.

:func:`doubling_trick` makes the registered class: its signature is the wrapper's schedule
parameters followed by the inner agent's hyper-parameters (those set per epoch left out), so the
registry's hyper-parameter checks and defaults (``catalog.hyper``) read it like any other class.
"""
from __future__ import annotations

import inspect
import math

from ..theory import GOLDEN_B, doubling_epochs, doubling_schedule

DT_WARMUPS = ("per_epoch", "once")


def epoch_m(tau: int, coef: float = 2.0) -> int:
    """m_i = max(1, round(coef ln tau_i)), rounding halves up."""
    return max(1, math.floor(coef * math.log(tau) + 0.5))


def epoch_scale(tau: int, coef: float = 0.02) -> float:
    """sigma_i = coef ln tau_i."""
    return coef * math.log(tau)


class DoublingTrick:
    """Anytime wrapper around ``inner`` (set by :func:`doubling_trick`); see the module docstring.

    ``epoch``: the current epoch index; ``agent``: its inner agent; ``epochs``: one dict per epoch
    started so far (first round, planned last round, tau, and the per-epoch hyper-parameters)."""

    inner: type = None
    name = "doubling_trick"
    m_name, scale_name = "m", "scale"
    SCHEDULE = {"T0": 100, "b": GOLDEN_B, "m": None, "scale": None, "m_coef": 2.0, "scale_coef": 0.02,
                "dt_warmup": "per_epoch"}
    SCHEDULE_TYPES = {"T0": "int", "b": "float", "m": "int | None", "scale": "float | None", "m_coef": "float",
                      "scale_coef": "float", "dt_warmup": "str"}       # the annotations of its signature

    @classmethod
    def _split(cls, spec: dict) -> tuple[dict, dict]:
        own = {k: spec.get(k, v) for k, v in cls.SCHEDULE.items()}
        return own, {k: v for k, v in spec.items() if k not in cls.SCHEDULE}

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        """m if fixed, else the largest m_i over the epochs that start within the horizon."""
        own, _ = cls._split(spec)
        if own["m"] is not None:
            return int(own["m"])
        return max(epoch_m(e["tau"], own["m_coef"]) for e in doubling_epochs(own["T0"], own["b"], int(horizon)))

    @classmethod
    def seed_block(cls, spec: dict) -> int | None:
        """The inner agent's fixed seed block (:meth:`protocol.AgentClass.seed_block`)."""
        return cls.inner.seed_block(cls._split(spec)[1])

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """The inner agent's costs averaged over the rounds of the epochs within the horizon, each
        epoch with its own ensemble size m_i; None where the inner agent has no model of its own."""
        own, inner_spec = cls._split(spec)
        horizon = int(dims["horizon"])
        per_round = per_seed = 0.0
        for e in doubling_epochs(own["T0"], own["b"], horizon):
            m = int(own["m"]) if own["m"] is not None else epoch_m(e["tau"], own["m_coef"])
            got = cls.inner.round_costs({**inner_spec, cls.m_name: m}, {**dims, "members": m, "horizon": e["tau"]},
                                        action_space)
            if got is None:
                return None
            share = (e["last"] - e["first"] + 1) / horizon
            per_round, per_seed = per_round + share * got[0], per_seed + share * got[1]
        return per_round, per_seed

    def __init__(self, setting, seeds, horizon, **spec):
        own, self.inner_hyper = self._split(spec)
        if own["dt_warmup"] not in DT_WARMUPS:
            raise ValueError(f"dt_warmup must be one of {DT_WARMUPS}, got {own['dt_warmup']!r}")
        doubling_schedule(own["T0"], own["b"], 1)             # ValueError unless T0 >= 1, T0 (b - 1) >= 1
        self.T0, self.b = int(own["T0"]), float(own["b"])
        self.own = own
        self.setting, self.seeds = setting, list(seeds)
        self.epochs: list[dict] = []
        self.epoch, self.agent, self.last = -1, None, 0
        self._restart()                                       # epoch 0 (checks the setting too)

    def epoch_hyper(self, i: int, tau: int) -> dict:
        """The inner agent's hyper-parameters in epoch i of planned length tau."""
        hyper = dict(self.inner_hyper)
        o = self.own
        hyper[self.m_name] = int(o["m"]) if o["m"] is not None else epoch_m(tau, o["m_coef"])
        hyper[self.scale_name] = float(o["scale"]) if o["scale"] is not None else epoch_scale(tau, o["scale_coef"])
        if o["dt_warmup"] == "once" and i > 0:
            hyper["warmup"] = 0
        return hyper

    def _restart(self):
        i = self.epoch + 1
        end = int(doubling_schedule(self.T0, self.b, self.last + 1)[-1])   # the first T_j > last
        tau = end - self.last
        hyper = self.epoch_hyper(i, tau)
        agent = self.inner.__new__(self.inner)
        agent.name = f"{self.name}/epoch{i}/{self.inner.name}"  # the epoch's own stream namespace
        agent.__init__(self.setting, self.seeds, tau, **hyper)
        self.epochs.append({"epoch": i, "first": self.last + 1, "planned_last": end, "tau": tau, **{
            k: hyper[k] for k in (self.m_name, self.scale_name)}})
        self.epoch, self.agent, self.first, self.last = i, agent, self.last + 1, end

    def select(self, t, obs):
        if t > self.last:
            self._restart()
        return self.agent.select(t - self.first + 1, obs)

    def update(self, t, obs, arms, rewards):
        self.agent.update(t - self.first + 1, obs, arms, rewards)

    def in_warmup(self, t):
        """Seeds (B,) whose round t (of the current epoch) is a warm-up round of that epoch (inner
        agents with a warm-up only: ``records_warmup``)."""
        return self.agent.in_warmup(t - self.first + 1)


def doubling_trick(inner: type, name: str, m_name: str = "m", scale_name: str = "scale") -> type:
    """The anytime class of agent class ``inner``, registered as ``name``: hyper-parameters T0, b,
    m, scale (None: the per-epoch rules), m_coef, scale_coef, dt_warmup, then every hyper-parameter
    of ``inner`` except the per-epoch ones (``m_name``, ``scale_name``)."""
    params = list(inspect.signature(inner.__init__).parameters.values())
    head, inner_hyper = params[:4], [p for p in params[4:] if p.name not in (m_name, scale_name)]
    own = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v, annotation=DoublingTrick.SCHEDULE_TYPES[k])
           for k, v in DoublingTrick.SCHEDULE.items()]
    rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in inner_hyper]
    signature = inspect.Signature(head + own + rest)

    def __init__(self, setting, seeds, horizon, **spec):
        bound = signature.bind(self, setting, seeds, horizon, **spec)   # TypeError on an unknown name
        DoublingTrick.__init__(self, setting, seeds, horizon, **{k: v for k, v in bound.arguments.items()
                                                                   if k not in ("self", "setting", "seeds", "horizon")})

    __init__.__signature__ = signature
    attrs = {"__init__": __init__, "inner": inner, "name": name, "m_name": m_name, "scale_name": scale_name,
             "action_spaces": inner.action_spaces, "distribution_params": dict(inner.distribution_params),
             "uses_accelerator": getattr(inner, "uses_accelerator", False),
             "revision": getattr(inner, "revision", 0),          # the inner agent's numbers are its numbers
             "revision_of": inner.revision_of,
             # the runner splits the regret of warm-up rounds from the rest (column ``regret_warmup``)
             "records_warmup": hasattr(inner, "in_warmup"),
             # found by name where the inner class's module binds it (pickling: a job's checkpoint)
             "__module__": inner.__module__,
             "__doc__": f"Anytime {inner.__name__} by the doubling trick (:class:`DoublingTrick`)."}
    return type(f"{inner.__name__}Anytime", (DoublingTrick,), attrs)
