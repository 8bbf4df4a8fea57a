"""Neural-ES and its neural baselines (Sun, Wang & Xu 2025, glmes paper §4.3, glmes paper §7; glmes §2.4-2.6, glmes §3.6), in torch.

Network (glmes §2.4): an MLP f(x; theta) of L layers and hidden widths N, no biases, with symmetric
block initialisation theta_0 (:mod:`.neural_net`, its passes and fit).

Neural-ES keeps m models, all starting at the seed's theta_0.  Each round every model j gets one
fresh perturbation Z_t^j ~ N(0, scale^2) of the new reward, kept for ever, and is refitted by
``steps`` = 100 full-batch GD steps of size ``lr`` = 0.01, warm-started from its previous weights
(glmes-A5, glmes-A6), on

    L_j(theta) = [ 1/2 sum_{l<=t} (f(x_l; theta) - Y_l - Z_l^j)^2 + 1/2 lam N |theta - theta_0|^2 ] / n,

n = t for ``loss_scale: mean`` (the default, glmes-A4) and n = 1 for ``sum``.  It plays
argmax_k f(x_k; theta^{j_t}) for a model j_t drawn uniformly each round (ties at random).  The first
``warmup`` rounds are a warm-up (``warmup_design``): on a fixed arm set by default K rounds pulling
arms 1..K in index order ("pulling each arm once", glmes §2.4 and glmes-A13; the arms are an iid draw, so the
order carries no information); on per-round contexts, where that has no meaning, by default tau = 50
rounds of uniformly random arms (glmes §3.6).  Warm-up data are perturbed (glmes-A7) and, with
``warmup_fit: per_round``, fitted every round like any other.

The two action spaces, like GLM-ES (:mod:`.glm_es`): on a fixed arm set (``finite``) the squared
loss regroups per arm, sum_l (f(x_{a_l}) - Y_l - Z_l^j)^2 = sum_k [n_k f_k^2 - 2 f_k (s_k + P_jk)] + const,
so the gradient is sum_k (n_k f_k - s_k - P_jk) grad f_k with pull counts n_k, reward sums s_k and each
model's perturbation sums P_jk (:class:`glm_es.Perturbations`): a forward and backward pass over K
arms, whatever t.  On per-round contexts (``contexts``) the fit's rows are the t past rounds
(:class:`RoundHistory`: the pulled inputs x_l and rewards Y_l; each member's Z_l^j one column per round),
gradient sum_l (f(x_l) - Y_l - Z_l^j) grad f(x_l): the same loss and GD, at a per-round cost that grows
with t (linearly; the whole run's quadratically).  All B seeds x M models are one set of batched
weights (B, M, out, in), with a hand-written backward pass of batched matmuls (:func:`.neural_net.backward`);
tests check it against autograd on the naive history sum.

Baselines (glmes §2.6, glmes-A14, glmes-A15), the same network and GD:

* Neural-PHE (``neural_phe``, NPR of Jia et al. 2022): one network; every round *fresh* perturbations
  of all past rewards, N(0, scale^2) each.  On a fixed arm set only their per-arm sums enter the
  gradient, and the sum of n_k iid N(0, scale^2) is exactly N(0, n_k scale^2): we draw one normal per
  arm per round, P_k = scale sqrt(n_k) xi_k (the same distribution of the fit, at O(K) draws a round);
  on per-round contexts one normal per past round, t draws a round.  Warm start by
  default; ``phe_restart: true`` restarts GD from theta_0 every round (NPR's original).
* Neural-UCB (``neural_ucb``, Zhou et al. 2020): f(x) + gamma sqrt(g^T U^{-1} g / N), g = grad_theta f(x;
  theta_{t-1}) for each of the round's K arms (fixed, or the round's contexts); U_0 = lam I,
  U <- U + g(x_t) g(x_t)^T / N (gradient at the weights that chose the arm); unperturbed training.
  gamma = 1.
* Neural-TS (``neural_ts``, Zhang et al. 2021): r(x) ~ N(f(x), nu^2 lam g^T U^{-1} g / N) per arm
  independently; same U and training.  nu = 1.
  ``matrix``: ``auto`` (full U^{-1} by Sherman-Morrison when d' <= 2000, else its diagonal, glmes-A14),
  ``full`` or ``diag``.  U^{-1} is kept in float64 whatever ``dtype`` (10^4 rank-one updates).

Options common to all (defaults first): ``dtype`` float32 | float64 (glmes-A21); ``device`` cpu | cuda;
``loss_scale`` mean | sum (glmes-A4); ``warm_start`` True | False (glmes-A5); ``warmup`` None (K on a fixed arm
set, 50 on per-round contexts) or a number of rounds, capped at the horizon (an anytime epoch's planned
length: min(K, tau_i), glmes-A10/glmes-A13); ``warmup_design`` None (``each_arm`` on a fixed arm set, ``random`` on
per-round contexts, so a registry spec needs neither) | ``each_arm`` (arms 1..K in turn; fixed arm set
only) | ``random`` (uniform arms from the stream ``warmup_arms``, as GLM-ES's option of that name);
``warmup_fit`` per_round | once; ``init`` block (the stated symmetric blocks; an odd d uses blocks of
ceil(d/2) and floor(d/2) columns, the second the first's leading columns, glmes-A12: 32 and 31 for the UCI
Shuttle's 63) | standard (N(0, 2/fan_in), no symmetry); ``symmetric_input`` False | True (feed
[x; x]/sqrt(2), so f(x; theta_0) = 0 as the theory's Remark 5.9 wants, glmes-A12's alternative; the input
dimension doubles); ``compiled`` None (True on a CUDA device) | True | False: the GPU-shaped fit, each GD
step compiled by ``torch.compile`` (on CUDA replayed as one CUDA graph, :func:`.neural_net.compiled_step`)
over static shapes: on per-round contexts the history's storage in power-of-two buckets, its rows past
t at weight zero with zero targets (:meth:`RoundHistory.bucket`; the same fit, to rounding).

On per-round contexts the members share each fit row, so their first layers run as one product
(``shared_first``, :func:`.neural_net._first_layer`; 1.3x a GD step over 1,000-5,000 rows of 10 seeds x
10 members on the CPU): revision 2 of those cells, whose float32 numbers it may round differently; on a
fixed arm set the products stay per member (the committed figures' numbers).

Randomness: theta_0 from (seed, agent/<name>/init), perturbations, member choices, random warm-up
arms and posterior draws from their own per-seed streams (:mod:`ensemble_bandits.rng`), drawn in numpy
and converted (:func:`torch_common.from_stream`): a seed's draws do not depend on its batch.  Its
arithmetic does (MKL's batched products round differently with the batch size and alignment), so the
seeds are computed in fixed blocks (revision 1): all seeds x members of an aligned block of
:data:`SEED_BLOCK` seeds (0-9, 10-19, ...) in one set of batched products, and the runner always plays
the whole block a seed belongs to (:meth:`NeuralAgent.seed_block`), so a seed's numbers do not depend
on how jobs split the seeds.  ``seed_by_seed: true`` (the default before revision 1) runs every
product seed by seed instead (:meth:`NeuralAgent.per_seed`): batch-invariant, 1.1-6x slower on the
CPU.  torch is imported inside the classes only, so looking these names up while the job graph is
built imports no torch.
"""
from __future__ import annotations

import inspect
import math

import numpy as np

from ..calibration import constants
from ..catalog import hyper
from . import glm_fit
from .anytime import doubling_trick
from .glm_es import Perturbations
from .linear import LinearAgent
from .neural_net import (StructuredWidths, descend, forward, init_weights, n_weights, per_arm_grads,
                         sherman_morrison, widths)
from .torch_common import from_stream, torch_device, torch_dtype

LOSS_SCALES = ("mean", "sum")
WARMUP_FITS = ("per_round", "once")
WARMUP_DESIGNS = ("each_arm", "random")
CONTEXTS_WARMUP = 50       # tau on per-round contexts (glmes §3.6: Neural-ES tau = 50)
INITS = ("block", "standard")
MATRICES = ("auto", "full", "diag")

# Cost model (``round_costs``; what ``costs.cell_cost_seconds`` asks an agent class), in CPU seconds,
# torch on one thread: per GD step and batch NN_STEP_S (per seed with seed_by_seed), per seed and
# multiply-add of a GD step NN_MAC_S (over the K arms) or NN_ROW_MAC_S (on per-round contexts a GD step
# runs over the t past rounds: glm_fit.fit_rows, T/2 rows on average; cheaper, larger products), and for
# Neural-TS/UCB NN_WIDTH_MAC_S per multiply-add of the widths and NN_MATRIX_S per entry of U^-1.  Values,
# units, fits and the command that refits them: the calibration table (ensemble_bandits.calibration,
# model ``neural_es``).  A GPU is much faster for the big cells.
SEED_BLOCK = 10            # seeds computed together when batched (fixed, aligned blocks: revision 1)
NN_STEP_S, NN_MAC_S, NN_WIDTH_MAC_S, NN_MATRIX_S, NN_ROW_MAC_S = constants(
    "neural_es", "NN_STEP_S", "NN_MAC_S", "NN_WIDTH_MAC_S", "NN_MATRIX_S", "NN_ROW_MAC_S")


def _choice(value, known, what):
    if value not in known:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, known))}, got {value!r}")
    return value


def _seed_part(a, b: int):
    """Seed b's slice (1, ...) of ``a`` in a fresh allocation (lists element-wise, None as is)."""
    if a is None:
        return None
    if isinstance(a, (list, tuple)):
        return [_seed_part(x, b) for x in a]
    return a[b:b + 1].clone()


def _concat(parts):
    """The per-seed results ``parts`` (tensors, or tuples/lists of them) joined along the seed axis."""
    import torch
    if isinstance(parts[0], (list, tuple)):
        return type(parts[0])(_concat(list(p)) for p in zip(*parts))
    return torch.cat(parts)


class RoundHistory:
    """The fit's rows on per-round contexts: the pulled inputs x_l (B, t, d_in), a tensor on the agent's
    device, and the rewards Y_l (B, t) in float64; storage grows by doubling up to the horizon (``buckets``:
    in powers of two from 256, whatever the horizon, so that a compiled fit sees the same few shapes in
    every run and in every epoch of the doubling trick)."""

    def __init__(self, B: int, T: int, d_in: int, dtype, device, buckets: bool = False):
        import torch
        self.torch, self.t = torch, 0
        self.cap = None if buckets else int(T)                 # the storage's largest size (None: no cap)
        size = 256 if buckets else min(self.cap, 256)
        self.x = torch.zeros((B, size, d_in), dtype=dtype, device=device)
        self.y = np.zeros((B, size))

    def add(self, x, y) -> None:
        """Record the round's pulled inputs ``x`` (B, d_in) and rewards ``y`` (B,)."""
        if self.t == self.y.shape[1]:
            size = 2 * self.t if self.cap is None else min(max(self.cap, self.t + 1), 2 * self.t)
            grow = size - self.t
            self.x = self.torch.cat([self.x, self.x.new_zeros((self.x.shape[0], grow, self.x.shape[2]))], dim=1)
            self.y = np.concatenate([self.y, np.zeros((self.y.shape[0], grow))], axis=1)
        self.x[:, self.t] = x
        self.y[:, self.t] = y
        self.t += 1

    def rows(self):
        """Inputs (B, t, d_in) and rewards (B, t) of the past rounds."""
        return self.x[:, :self.t], self.y[:, :self.t]

    def bucket(self):
        """The whole storage as fit rows of a fixed shape (it grows by doubling, so a run sees about
        log2(T) shapes): inputs (B, S, d_in), weights (B, 1, S) one for the t past rounds and zero for
        the rest, rewards (B, S); a zero-weight row with a zero target adds nothing to the fit."""
        n = self.x.new_zeros((self.x.shape[0], 1, self.x.shape[1]))
        n[..., :self.t] = 1.0
        return self.x, n, self.y


class NeuralAgent(LinearAgent):
    """What Neural-ES and the neural baselines share: the network, theta_0, the fit's data (per-arm
    statistics or the round history), the warm-up and the GD fit of M = ``members`` networks per seed
    (see the module docstring)."""

    name = "neural"
    action_spaces = ("finite", "contexts")
    uses_accelerator = True
    members = 1
    revision = 1        # 1: batched in fixed blocks of SEED_BLOCK seeds by default; structured Neural-TS/UCB widths

    @classmethod
    def revision_of(cls, action_space: str) -> int:
        """2 on per-round contexts (the members' first layer as one product, ``neural_net._first_layer``),
        else :attr:`revision`."""
        return 2 if action_space == "contexts" else cls.revision

    @classmethod
    def seed_block(cls, spec: dict) -> int | None:
        """:data:`SEED_BLOCK` when the products run batched (the default), None seed by seed."""
        return None if hyper(cls, spec, "seed_by_seed") else SEED_BLOCK

    @classmethod
    def weights(cls, spec: dict, dims: dict) -> int:
        """d' of the spec's network on the cell's features (doubled by ``symmetric_input``)."""
        d_in = dims["d"] * (2 if hyper(cls, spec, "symmetric_input") else 1)
        return n_weights(d_in, int(hyper(cls, spec, "L")), int(hyper(cls, spec, "N")))

    @staticmethod
    def default_warmup(action_space: str, K: int) -> int:
        """The warm-up length when ``warmup`` is None: K on a fixed arm set, 50 on per-round contexts."""
        return int(K) if action_space == "finite" else CONTEXTS_WARMUP

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """``steps`` GD steps of the ``members`` networks over the fit's rows (the K arms, or on
        per-round contexts the past rounds: T/2 on average, :func:`glm_fit.fit_rows`) each fitted round
        (every round with ``warmup_fit: per_round``, else from the end of the warm-up on); see the
        constants above."""
        steps, M = int(hyper(cls, spec, "steps")), dims["members"]
        rows = glm_fit.fit_rows(dims, action_space)
        fitted = 1.0
        if hyper(cls, spec, "warmup_fit") == "once":
            warm = hyper(cls, spec, "warmup")
            warm = cls.default_warmup(action_space, dims["K"]) if warm is None else int(warm)
            fitted = max(dims["horizon"] - warm, 1) / dims["horizon"]
        mac = NN_MAC_S if action_space == "finite" else NN_ROW_MAC_S
        calls, work = fitted * steps * NN_STEP_S, fitted * steps * mac * 3 * M * rows * cls.weights(spec, dims)
        if hyper(cls, spec, "seed_by_seed") and str(hyper(cls, spec, "device")).startswith("cpu"):
            return 0.0, calls + work                          # every seed makes its own torch calls
        return calls, work

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, L: int = 3, N: int = 20, steps: int = 100,
                 lr: float = 0.01, loss_scale: str = "mean", warm_start: bool = True, warmup: int | None = None,
                 warmup_design: str | None = None, warmup_fit: str = "per_round", init: str = "block",
                 symmetric_input: bool = False, dtype: str = "float32", device: str = "cpu",
                 seed_by_seed: bool = False, compiled: bool | None = None):
        super().__init__(setting, seeds, horizon)
        import torch
        self.torch = torch
        self.lam, self.L, self.N = float(lam), int(L), int(N)
        if self.L < 2 or self.N < 2:
            raise ValueError(f"{self.name} needs L >= 2 and N >= 2, got L={L}, N={N}")
        self.steps, self.lr = int(steps), float(lr)
        self.loss_scale = _choice(loss_scale, LOSS_SCALES, "loss_scale")
        self.warmup_fit = _choice(warmup_fit, WARMUP_FITS, "warmup_fit")
        self.init = _choice(init, INITS, "init")
        self.warm_start, self.symmetric_input = bool(warm_start), bool(symmetric_input)
        self.dtype, self.device = torch_dtype(dtype), torch_device(device)
        self.per_arm = setting.action_space == "finite"
        if warmup_design is None:
            warmup_design = "each_arm" if self.per_arm else "random"
        self.warmup_design = _choice(warmup_design, WARMUP_DESIGNS, "warmup_design")
        if self.warmup_design == "each_arm" and not self.per_arm:
            raise ValueError(f"{self.name}: pulling each arm once needs a fixed arm set; on per-round contexts "
                             "use warmup_design: random (glmes §3.6)")
        warmup = self.default_warmup(setting.action_space, self.K) if warmup is None else int(warmup)
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.warmup = min(warmup, self.T)
        self.u = self.streams("warmup_arms", "uniform") if self.warmup_design == "random" else None
        self.d_in = 2 * self.d if self.symmetric_input else self.d
        self.out_scale = math.sqrt(self.N)
        shapes = list(zip(widths(self.d_in, self.L, self.N)[1:], widths(self.d_in, self.L, self.N)[:-1]))
        sizes = [o * i for o, i in shapes]
        flat = self.streams.per_seed("init", lambda g: np.concatenate(
            [w.ravel() for w in init_weights(g, self.d_in, self.L, self.N, self.init)]))
        offs = np.cumsum([0] + sizes)
        self.theta0 = [self.tensor(flat[:, a:b].reshape(self.B, 1, o, i))
                       for (o, i), a, b in zip(shapes, offs[:-1], offs[1:])]
        self.M = int(self.members)
        # the GPU-shaped fit (module docstring): compiled GD steps over static shapes
        self.compiled = self.device.type == "cuda" if compiled is None else bool(compiled)
        self.W = [w.expand(-1, self.M, -1, -1).clone() for w in self.theta0]
        if self.per_arm:
            self.n = np.zeros((self.B, self.K))                # pull counts
            self.s = np.zeros((self.B, self.K))                # reward sums
        else:
            self.history = RoundHistory(self.B, self.T, self.d_in, self.dtype, self.device, self.compiled)
        self.t_obs = 0
        # MKL's summation order in a product depends on its batch size and on memory alignment
        # (batched, Neural-UCB/TS's regret at d = 20, K = 50 differed between seeds {0, 1, 2} and {1}
        # alone within 400 rounds): batched products are reproducible for the same block of seeds, which
        # the runner fixes (seed_block); ``seed_by_seed: true`` makes any batch give the same numbers,
        # at 1.1-6x the cost on the CPU.  On CUDA a batch is the same up to kernel reductions.
        self.seed_by_seed = self.device.type == "cpu" and bool(seed_by_seed)
        self._x, self._xid = None, None
        self._jit = from_stream(self.jitter, torch.float64, self.device)

    def tensor(self, a):
        return from_stream(a, self.dtype, self.device)

    def per_seed(self, fn, *args):
        """``fn(*args)`` on tensors with a leading seed axis (or lists of them, or None): seed by seed
        (:func:`_seed_part`, :func:`_concat`) where ``seed_by_seed``, else in one batch."""
        if not self.seed_by_seed:
            return fn(*args)
        return _concat([fn(*(_seed_part(a, b) for a in args)) for b in range(self.B)])

    # -- helpers ---------------------------------------------------------------------------------

    def inputs(self, obs):
        """The network inputs (B, K, d_in) of the round's arm set (converted once for a fixed arm set)."""
        if self._xid is not obs.features:
            x = obs.features
            if self.symmetric_input:
                x = np.concatenate([x, x], axis=2) / math.sqrt(2.0)
            self._x, self._xid = self.tensor(x), obs.features
        return self._x

    def outputs(self, x, weights=None):
        """f (B, M, K) of the networks ``weights`` (default: the agent's) on inputs x (B, K, d_in)."""
        return self.per_seed(lambda x, W: forward(W, x, self.out_scale)[0], x, self.W if weights is None else weights)

    def fit_rows(self, obs):
        """The fit's rows (module docstring): inputs (B, R, d_in), pull counts (B, 1, R) (None: one row
        per round) and reward targets (B, R) in float64 -- the K arms with their counts and reward sums
        (fixed arm set), or the t past rounds (per-round contexts)."""
        if self.per_arm:
            return self.inputs(obs), self.tensor(self.n).unsqueeze(1), self.s
        if self.compiled:                                      # the history's bucket, zero-weight padding
            return self.history.bucket()
        x, y = self.history.rows()
        return x, None, y

    def extra(self):
        """Each member's target offsets P (B, M, R) on the fit's rows, added to the rewards (None: zero)."""
        return None

    def gd(self, rows, weights, P):
        """``steps`` full-batch GD steps from ``weights`` on the loss over ``rows`` (:meth:`fit_rows`)
        with target offsets ``P`` (module docstring; :func:`descend`)."""
        x, n, y = rows
        target = self.tensor(y).unsqueeze(1)                   # (B, 1, R)
        if P is not None:                                      # (a bucket's padded rows: zero offsets)
            target = target + self.tensor(np.pad(P, ((0, 0), (0, 0), (0, target.shape[-1] - P.shape[-1]))))
        div = float(max(self.t_obs, 1)) if self.loss_scale == "mean" else 1.0
        lr, reg = self.lr / div, self.lam * self.N
        shared = not self.per_arm                              # revision 2 of the per-round-context cells
        return self.per_seed(lambda W, W0, *data: descend(W, W0, *data, self.steps, lr, reg, self.out_scale,
                                                          shared, self.compiled),
                             weights, self.theta0, x, n, target)

    def fit(self, t, obs):
        fit_now = self.warmup_fit == "per_round" or t >= self.warmup
        if fit_now:
            start = self.W if self.warm_start else [w.expand(-1, self.M, -1, -1) for w in self.theta0]
            self.W = self.gd(self.fit_rows(obs), start, self.extra())

    def warm_arms(self, t):
        """The warm-up round t's arms: arm (t - 1) mod K (``each_arm``), or uniformly random (``random``)."""
        if self.u is not None:
            return np.minimum((self.u.take(1)[:, 0] * self.K).astype(np.int64), self.K - 1)
        return np.full(self.B, (t - 1) % self.K, dtype=np.int64)

    def argmax(self, scores):
        """argmax over arms of scores (B, K) plus the fixed tie-break jitter (in float64), as numpy indices."""
        return (scores.to(self.torch.float64) + self._jit).argmax(dim=1).cpu().numpy().astype(np.int64)

    def record(self, obs, arms, r):
        """Add the round (pulled ``arms``, rewards ``r``) to the fit's data."""
        if self.per_arm:
            self.n[self.rows, arms] += 1.0
            self.s[self.rows, arms] += r
        else:
            b, a = self.torch.as_tensor(self.rows), self.torch.as_tensor(arms)
            self.history.add(self.inputs(obs)[b.to(self.device), a.to(self.device)], r)
        self.t_obs += 1

    # -- protocol --------------------------------------------------------------------------------

    def select(self, t, obs):
        x = self.inputs(obs)
        arms = self.choose(t, x)                               # every round: fixed stream consumption
        return self.warm_arms(t) if t <= self.warmup else arms

    def update(self, t, obs, arms, r):
        self.record(obs, arms, np.asarray(r, dtype=np.float64))
        self.fit(t, obs)

    def choose(self, t, x):
        raise NotImplementedError


class NeuralES(NeuralAgent):
    """Neural-ES (glmes §2.4): m networks on their own perturbed histories, warm-up by pulling each
    arm once (random arms on per-round contexts).  Paper defaults (glmes paper §7.2): m = 10, scale = sigma_R = 0.1,
    lam = 1, L = 3, N = 20, 100 GD steps of size 0.01; options in the module docstring."""

    name = "neural_es"
    distribution_params = {}

    @classmethod
    def ensemble_size(cls, spec: dict, horizon: int) -> int:
        return int(hyper(cls, spec, "m"))

    def __init__(self, setting, seeds, horizon, m: int = 10, scale: float = 0.1, **kw):
        self.members = int(m)
        if self.members < 1:
            raise ValueError(f"neural_es needs m >= 1, got {m!r}")
        super().__init__(setting, seeds, horizon, **kw)
        self.scale = float(scale)
        self.z = self.streams("reward_perturbation", "normal", block=max(self.M, 4096))
        self.j = self.streams("selection", "uniform")
        self.perts = Perturbations(setting, self.M)           # per-arm sums, or one column per round

    def member(self):
        return np.minimum((self.j.take(1)[:, 0] * self.M).astype(np.int64), self.M - 1)

    def choose(self, t, x):
        j = self.torch.as_tensor(self.member(), device=self.device)
        b = self.torch.arange(self.B, device=self.device)
        Wj = [w[b, j].unsqueeze(1) for w in self.W]            # (B, 1, out, in)
        return self.argmax(self.outputs(x, Wj)[:, 0])

    def record(self, obs, arms, r):
        super().record(obs, arms, r)
        self.perts.add(arms, self.scale * self.z.take(self.M))

    def extra(self):
        return self.perts.extra()


class NeuralPHE(NeuralAgent):
    """Neural-PHE / NPR (glmes §2.6, glmes-A15): one network refitted each round on freshly perturbed past
    rewards (on a fixed arm set their per-arm sums, drawn exactly; module docstring); greedy choice.
    scale = 0.1."""

    name = "neural_phe"

    def __init__(self, setting, seeds, horizon, scale: float = 0.1, phe_restart: bool = False, **kw):
        super().__init__(setting, seeds, horizon, **kw)
        self.scale, self.phe_restart = float(scale), bool(phe_restart)
        self.xi = self.streams("fresh_perturbation", "normal")
        if self.phe_restart:
            self.warm_start = False

    def choose(self, t, x):
        return self.argmax(self.outputs(x)[:, 0])

    def extra(self):
        if self.per_arm:
            return (self.scale * np.sqrt(self.n) * self.xi.take(self.K))[:, None, :]
        return (self.scale * self.xi.take(self.t_obs))[:, None, :]


class NeuralUCBTS(NeuralAgent):
    """Neural-UCB and Neural-TS: the gradient-feature confidence matrix U (glmes §2.6)."""

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """The GD fit (:meth:`NeuralAgent.round_costs`) plus every round's widths over the K arms and
        the rank-one update of U^{-1} (full: K d'^2 and d'^2; diagonal: K d' and d')."""
        per_round, per_seed = super().round_costs(spec, dims, action_space)
        p, matrix = cls.weights(spec, dims), hyper(cls, spec, "matrix")
        size = p if matrix == "diag" or (matrix == "auto" and p > 2000) else p * p
        width = size
        if size == p * p and action_space == "finite" and not hyper(cls, spec, "seed_by_seed"):
            N = int(hyper(cls, spec, "N"))                     # StructuredWidths: p_D = p - N d_in
            p_d = N * N * (int(hyper(cls, spec, "L")) - 2) + N
            width = N * N + N * p_d + p_d * p_d
        return per_round, per_seed + NN_WIDTH_MAC_S * dims["K"] * width + NN_MATRIX_S * size

    def __init__(self, setting, seeds, horizon, matrix: str = "auto", **kw):
        super().__init__(setting, seeds, horizon, **kw)
        self.p = n_weights(self.d_in, self.L, self.N)
        matrix = _choice(matrix, MATRICES, "matrix")
        self.diag = matrix == "diag" or (matrix == "auto" and self.p > 2000)
        torch = self.torch
        f64 = torch.float64
        if self.diag:
            self.Uinv = torch.full((self.B, self.p), 1.0 / self.lam, dtype=f64, device=self.device)
        else:
            eye = torch.eye(self.p, dtype=f64, device=self.device) / self.lam
            self.Uinv = eye.expand(self.B, -1, -1).clone()
        # the widths' structured form on a fixed arm set (full U, batched; revision 1): built on the first round
        self.structured = None
        self.g_chosen = None

    def widths2(self, x):
        """f (B, K) and g^T U^{-1} g / N (B, K) at the current weights on the round's arms x (B, K, d_in);
        keeps the per-arm gradients (on a fixed arm set with the full U: their structured parts,
        :class:`StructuredWidths`)."""
        torch = self.torch
        if self.per_arm and not self.diag and not self.seed_by_seed and self.structured is None:
            self.structured = StructuredWidths(self.Uinv, x, self.N)

        def widths(x, W, Uinv, S=None):
            f, acts = forward(W, x, self.out_scale)
            if S is not None:
                delta, e = (g.to(torch.float64) for g in per_arm_grads(W, acts, self.out_scale, first=False))
                return f[:, 0], S.widths(Uinv, delta, e), (delta, e)
            g = per_arm_grads(W, acts, self.out_scale).to(torch.float64)   # (B, K, p)
            q = (g * g * Uinv.unsqueeze(1)).sum(-1) if self.diag else (torch.matmul(g, Uinv) * g).sum(-1)
            return f[:, 0], q, g

        f, q, self._g = self.per_seed(widths, x, self.W, self.Uinv, self.structured)
        return f, q.clamp_min(0.0) / self.N

    def select(self, t, obs):
        arms = super().select(t, obs)
        b, a = self.torch.arange(self.B), self.torch.as_tensor(arms)
        if self.structured is not None:                       # g = [delta (x) x_a; e] of the chosen arm
            delta, e = self._g
            xa = self.structured.x[b, a]
            g = self.torch.cat([(delta[b, a].unsqueeze(-1) * xa.unsqueeze(-2)).reshape(self.B, -1), e[b, a]], -1)
        else:
            g = self._g[b, a]
        self.g_chosen = g / math.sqrt(self.N)
        return arms

    def update(self, t, obs, arms, r):
        g = self.g_chosen                                      # (B, p), at the weights that chose
        if self.diag:
            self.Uinv = 1.0 / (1.0 / self.Uinv + g * g)
        else:
            self.Uinv = self.per_seed(sherman_morrison, self.Uinv, g, self.structured)
        super().update(t, obs, arms, r)



class NeuralUCB(NeuralUCBTS):
    """Neural-UCB (Zhou et al. 2020; glmes §2.6): f + gamma sqrt(g^T U^{-1} g / N), gamma = 1."""

    name = "neural_ucb"

    def __init__(self, setting, seeds, horizon, gamma: float = 1.0, **kw):
        super().__init__(setting, seeds, horizon, **kw)
        self.gamma = float(gamma)

    def choose(self, t, x):
        f, q = self.widths2(x)
        return self.argmax(f.to(self.torch.float64) + self.gamma * q.sqrt())


class NeuralTS(NeuralUCBTS):
    """Neural-TS (Zhang et al. 2021; glmes §2.6): r(x) ~ N(f, nu^2 lam g^T U^{-1} g / N) per arm, nu = 1."""

    name = "neural_ts"

    def __init__(self, setting, seeds, horizon, nu: float = 1.0, **kw):
        super().__init__(setting, seeds, horizon, **kw)
        self.nu = float(nu)
        self.zeta = self.streams("posterior", "normal")

    def choose(self, t, x):
        f, q = self.widths2(x)
        z = from_stream(self.zeta.take(self.K), self.torch.float64, self.device)
        return self.argmax(f.to(self.torch.float64) + self.nu * (self.lam * q).sqrt() * z)


_HEAD = ("self", "setting", "seeds", "horizon")


def _full_signature(cls):
    """Give ``cls.__init__`` the explicit signature (own hyper-parameters, then its bases', keyword
    only), so the registry's checks and defaults (``catalog.hyper``) and the doubling trick see every
    option although the subclasses pass the common ones on through ``**kw``."""
    params, seen = [], set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is LinearAgent or not issubclass(klass, NeuralAgent):
            continue
        raw = inspect.signature(getattr(init, "_raw", init))
        for p in raw.parameters.values():
            if p.name in _HEAD or p.kind is p.VAR_KEYWORD or p.name in seen:
                continue
            seen.add(p.name)
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
    head = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in _HEAD]
    init = cls.__dict__["__init__"]

    def __init__(self, setting, seeds, horizon, **spec):
        init(self, setting, seeds, horizon, **spec)

    __init__._raw = init
    __init__.__signature__ = inspect.Signature(head + params)
    __init__.__doc__ = init.__doc__
    cls.__init__ = __init__
    return cls


for _cls in (NeuralES, NeuralPHE, NeuralUCB, NeuralTS):
    _full_signature(_cls)

NeuralESAnytime = doubling_trick(NeuralES, "neural_es_anytime")
