"""Neural-ES and its neural baselines (Sun, Wang & Xu 2025, §4.3, §7; glmes.md §2.4-2.6), in torch.

Network (spec §2.4): f(x; theta) = sqrt(N) W_L phi(W_{L-1} phi(... phi(W_1 x))), phi = ReLU, no
biases, hidden widths N; d' = N d + N^2 (L - 2) + N weights (820 for d = 20, L = 3, N = 20).
Initialisation theta_0: W_1 = blockdiag(W, W) with W (N/2 x d/2) iid N(0, 4/N); W_l = blockdiag(W, W),
W (N/2 x N/2) iid N(0, 4/N) for 2 <= l <= L-1; W_L = (w, -w), w (1 x N/2) iid N(0, 2/N).

Neural-ES keeps m models, all starting at the seed's theta_0.  Each round every model j gets one
fresh perturbation Z_t^j ~ N(0, scale^2) of the new reward, kept for ever, and is refitted by
``steps`` = 100 full-batch GD steps of size ``lr`` = 0.01, warm-started from its previous weights
(spec A5, A6), on

    L_j(theta) = [ 1/2 sum_{l<=t} (f(x_l; theta) - Y_l - Z_l^j)^2 + 1/2 lam N |theta - theta_0|^2 ] / n,

n = t for ``loss_scale: mean`` (the default, spec A4) and n = 1 for ``sum``.  It plays
argmax_k f(x_k; theta^{j_t}) for a model j_t drawn uniformly each round (ties at random).  The first
``warmup`` rounds (default K: "pulling each arm once", spec §2.4 and A13) pull arms 1..K in index order
(the arms are an iid draw, so the order carries no information); their data are perturbed (A7) and,
with ``warmup_fit: per_round``, fitted every round like any other.

Exact algebra: on a fixed arm set the squared loss regroups per arm,
sum_l (f(x_{a_l}) - Y_l - Z_l^j)^2 = sum_k [n_k f_k^2 - 2 f_k (s_k + P_jk)] + const, so the gradient is
sum_k (n_k f_k - s_k - P_jk) grad f_k with pull counts n_k, reward sums s_k and each model's
perturbation sums P_jk: a forward and backward pass over K arms, whatever t.  All B seeds x M models
are one set of batched weights (B, M, out, in), with a hand-written backward pass of batched matmuls
(:func:`per_arm_step`); tests check it against autograd on the naive history sum.

Baselines (spec §2.6, A14, A15), the same network and GD:

* Neural-PHE (``neural_phe``, NPR of Jia et al. 2022): one network; every round *fresh* perturbations
  of all past rewards, N(0, scale^2) each.  Only their per-arm sums enter the gradient, and the sum of
  n_k iid N(0, scale^2) is exactly N(0, n_k scale^2): we draw one normal per arm per round,
  P_k = scale sqrt(n_k) xi_k (the same distribution of the fit, at O(K) draws a round).  Warm start by
  default; ``phe_restart: true`` restarts GD from theta_0 every round (NPR's original).
* Neural-UCB (``neural_ucb``, Zhou et al. 2020): f(x) + gamma sqrt(g^T U^{-1} g / N), g = grad_theta f(x;
  theta_{t-1}); U_0 = lam I, U <- U + g(x_t) g(x_t)^T / N (gradient at the weights that chose the arm);
  unperturbed training.  gamma = 1.
* Neural-TS (``neural_ts``, Zhang et al. 2021): r(x) ~ N(f(x), nu^2 lam g^T U^{-1} g / N) per arm
  independently; same U and training.  nu = 1.
  ``matrix``: ``auto`` (full U^{-1} by Sherman-Morrison when d' <= 2000, else its diagonal, A14),
  ``full`` or ``diag``.  U^{-1} is kept in float64 whatever ``dtype`` (10^4 rank-one updates).

Options common to all (defaults first): ``dtype`` float32 | float64 (A21); ``device`` cpu | cuda;
``loss_scale`` mean | sum (A4); ``warm_start`` True | False (A5); ``warmup`` None (= K) or a number of
rounds, capped at the horizon (an anytime epoch's planned length: min(K, tau_i), A10/A13);
``warmup_fit`` per_round | once; ``init`` block (the stated symmetric blocks; an odd d uses blocks of
ceil(d/2) and floor(d/2) columns, the second the first's leading columns, A12) | standard
(N(0, 2/fan_in), no symmetry); ``symmetric_input`` False | True (feed [x; x]/sqrt(2), so f(x; theta_0) = 0
as the theory's Remark 5.9 wants, A12's alternative; the input dimension doubles).

Randomness: theta_0 from (seed, agent/<name>/init), perturbations, member choices and posterior draws
from their own per-seed streams (:mod:`ensemble_bandits.rng`), drawn in numpy and converted
(:func:`torch_common.from_stream`): a seed's run does not depend on its batch.  torch is imported
inside the classes only, so looking these names up while the job graph is built imports no torch.
"""
from __future__ import annotations

import inspect
import math

import numpy as np

from ..catalog import hyper
from .anytime import doubling_trick
from .linear import LinearAgent
from .torch_common import from_stream, torch_device, torch_dtype

LOSS_SCALES = ("mean", "sum")
WARMUP_FITS = ("per_round", "once")
INITS = ("block", "standard")
MATRICES = ("auto", "full", "diag")

# Cost model (``round_costs``; what ``costs.cell_cost_seconds`` asks an agent class), in seconds on the
# 2-core machine of the README, on the CPU (torch, one thread), measured while other jobs kept both
# cores busy (load about 4, as the GLM calibration in glm_fit): the wall time of ``runner.simulate``
# over B = 1, 2, 5 seeds and 8-150 rounds for neural_es (m = 10; N = 20 and 50), neural_phe and
# neural_ts on the quadratic bandit with d = 20, K = 50 (d' = 820) and d = 50, K = 500 (d' = 1420);
# the constants are fitted by hand to those per-round costs, within a factor 1.5 of each
# (tests/test_config_errors.py keeps them within 2).  A GPU is much faster for the big cells.
NN_STEP_S = 2e-4           # per GD step and batch: the step's torch calls (per seed when a seed runs alone)
NN_MAC_S = 1e-10           # per seed and multiply-add of a GD step: forward and backward, 3 M K d'
NN_WIDTH_MAC_S = 1.1e-10   # per seed and float64 multiply-add of the widths g^T U^-1 g (K d'^2; K d' diagonal)
NN_MATRIX_S = 2.4e-8       # per seed and entry of U^-1 rewritten by the rank-one update (d'^2; d' diagonal)


def _choice(value, known, what):
    if value not in known:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, known))}, got {value!r}")
    return value


def widths(d: int, L: int, N: int) -> list[int]:
    """Layer widths [d, N, ..., N, 1] of the L-layer network."""
    return [int(d)] + [int(N)] * (int(L) - 1) + [1]


def n_weights(d: int, L: int, N: int) -> int:
    """d' = N d + N^2 (L - 2) + N (spec §2.4)."""
    return int(N) * int(d) + int(N) ** 2 * (int(L) - 2) + int(N)


def init_weights(g: np.random.Generator, d: int, L: int, N: int, init: str = "block") -> list[np.ndarray]:
    """theta_0 of one seed: the list of weight matrices (out, in), drawn from ``g`` (spec §2.4, A12)."""
    if N % 2:
        raise ValueError(f"the block initialisation needs an even width N, got {N}")
    w = widths(d, L, N)
    if init == "standard":
        return [g.standard_normal((o, i)) * math.sqrt(2.0 / i) for i, o in zip(w[:-1], w[1:])]
    out = []
    for layer, (i, o) in enumerate(zip(w[:-1], w[1:])):
        if layer == L - 1:                                     # W_L = (w, -w)
            v = g.standard_normal(N // 2) * math.sqrt(2.0 / N)
            out.append(np.concatenate([v, -v])[None, :])
            continue
        hi, lo = -(-i // 2), i // 2
        W = g.standard_normal((o // 2, hi)) * math.sqrt(4.0 / N)
        M = np.zeros((o, i))
        M[:o // 2, :hi] = W
        M[o // 2:, hi:] = W[:, :lo]
        out.append(M)
    return out


def forward(weights, x, out_scale: float):
    """Outputs (B, M, K) of the batched networks ``weights`` (list of (B, M, out, in)) on arms ``x``
    (B, K, d), and the activations [a_0 = x, a_1, ..., a_{L-1}] for :func:`backward`."""
    import torch
    acts = [x.unsqueeze(1)]                                    # (B, 1, K, d): shared by the members
    h = acts[0]
    for W in weights[:-1]:
        h = torch.relu(torch.matmul(h, W.transpose(-1, -2)))    # (B, M, K, N)
        acts.append(h)
    return out_scale * torch.matmul(h, weights[-1].transpose(-1, -2))[..., 0], acts


def backward(weights, acts, c, out_scale: float):
    """Gradients (list like ``weights``) of sum_k c_k f(x_k) for coefficients ``c`` (B, M, K)."""
    import torch
    grads = [None] * len(weights)
    delta = out_scale * c.unsqueeze(-1)                        # d/d(pre-output): (B, M, K, 1)
    for layer in range(len(weights) - 1, -1, -1):
        a = acts[layer]                                        # (B, M|1, K, in)
        grads[layer] = torch.matmul(delta.transpose(-1, -2), a)  # (B, M, out, in): sum over arms
        if layer:
            delta = torch.ops.aten.threshold_backward(torch.matmul(delta, weights[layer]), a, 0)  # ReLU'(z) = 1{a > 0}
    return grads


def per_arm_grads(weights, acts, out_scale: float):
    """Per-arm gradients grad_theta f(x_k) (B, K, d') of single networks (M = 1), in the order
    vec(W_1), ..., vec(W_L) (row-major)."""
    import torch
    B, _, K, _ = acts[-1].shape
    parts = [None] * len(weights)
    delta = torch.full((B, K, 1), out_scale, dtype=acts[-1].dtype, device=acts[-1].device)
    for layer in range(len(weights) - 1, -1, -1):
        a = acts[layer][:, 0].expand(B, K, -1)                 # (B, K, in)
        parts[layer] = (delta.unsqueeze(-1) * a.unsqueeze(-2)).reshape(B, K, -1)
        if layer:
            delta = torch.matmul(delta, weights[layer][:, 0]) * (a > 0)
    return torch.cat(parts, dim=-1)


class NeuralAgent(LinearAgent):
    """What Neural-ES and the neural baselines share: the network, theta_0, the per-arm statistics,
    the warm-up and the GD fit of M = ``members`` networks per seed (see the module docstring)."""

    name = "neural"
    action_spaces = ("finite",)
    uses_accelerator = True
    members = 1

    @classmethod
    def weights(cls, spec: dict, dims: dict) -> int:
        """d' of the spec's network on the cell's features (doubled by ``symmetric_input``)."""
        d_in = dims["d"] * (2 if hyper(cls, spec, "symmetric_input") else 1)
        return n_weights(d_in, int(hyper(cls, spec, "L")), int(hyper(cls, spec, "N")))

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """``steps`` GD steps of the ``members`` networks over the K arms each fitted round (every round
        with ``warmup_fit: per_round``, else from the end of the warm-up on); see the constants above."""
        steps, K, M = int(hyper(cls, spec, "steps")), dims["K"], dims["members"]
        fitted = 1.0
        if hyper(cls, spec, "warmup_fit") == "once":
            warm = hyper(cls, spec, "warmup")
            warm = K if warm is None else int(warm)
            fitted = max(dims["horizon"] - warm, 1) / dims["horizon"]
        return fitted * steps * NN_STEP_S, fitted * steps * NN_MAC_S * 3 * M * K * cls.weights(spec, dims)

    def __init__(self, setting, seeds, horizon, lam: float = 1.0, L: int = 3, N: int = 20, steps: int = 100,
                 lr: float = 0.01, loss_scale: str = "mean", warm_start: bool = True, warmup: int | None = None,
                 warmup_fit: str = "per_round", init: str = "block", symmetric_input: bool = False,
                 dtype: str = "float32", device: str = "cpu"):
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
        self.warmup = min(self.K if warmup is None else int(warmup), self.T)
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
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
        self.W = [w.expand(-1, self.M, -1, -1).clone() for w in self.theta0]
        self.n = np.zeros((self.B, self.K))                    # pull counts
        self.s = np.zeros((self.B, self.K))                    # reward sums
        self.t_obs = 0
        self._x, self._xid = None, None
        self._jit = None

    def tensor(self, a):
        return from_stream(a, self.dtype, self.device)

    # -- helpers ---------------------------------------------------------------------------------

    def inputs(self, obs):
        """The network inputs (B, K, d_in) of the arm set (converted once for a fixed arm set)."""
        if self._xid is not obs.features:
            x = obs.features
            if self.symmetric_input:
                x = np.concatenate([x, x], axis=2) / math.sqrt(2.0)
            self._x, self._xid = self.tensor(x), obs.features
            self._jit = from_stream(self.jitter, self.torch.float64, self.device)
        return self._x

    def outputs(self, x, weights=None):
        return forward(self.W if weights is None else weights, x, self.out_scale)[0]

    def extra(self):
        """Each member's per-arm target offsets P (B, M, K) added to the reward sums (None: zero)."""
        return None

    def gd(self, x, weights, P):
        """``steps`` full-batch GD steps from ``weights`` on the per-arm loss (module docstring)."""
        torch = self.torch
        n = self.tensor(self.n).unsqueeze(1)                    # (B, 1, K)
        target = self.tensor(self.s).unsqueeze(1)
        if P is not None:
            target = target + self.tensor(P)
        div = float(max(self.t_obs, 1)) if self.loss_scale == "mean" else 1.0
        lr, reg = self.lr / div, self.lam * self.N
        W = [w.clone() for w in weights]
        for _ in range(self.steps):
            f, acts = forward(W, x, self.out_scale)
            grads = backward(W, acts, n * f - target, self.out_scale)
            with torch.no_grad():
                for w, g, w0 in zip(W, grads, self.theta0):
                    w.sub_(lr * (g + reg * (w - w0)))
        return W

    def fit(self, t, obs):
        fit_now = self.warmup_fit == "per_round" or t >= self.warmup
        if fit_now:
            start = self.W if self.warm_start else [w.expand(-1, self.M, -1, -1) for w in self.theta0]
            self.W = self.gd(self.inputs(obs), start, self.extra())

    def warm_arms(self, t):
        return np.full(self.B, (t - 1) % self.K, dtype=np.int64)

    def argmax(self, scores):
        """argmax over arms of scores (B, K) plus the fixed tie-break jitter (in float64), as numpy indices."""
        return (scores.to(self.torch.float64) + self._jit).argmax(dim=1).cpu().numpy().astype(np.int64)

    def record(self, arms, r):
        self.n[self.rows, arms] += 1.0
        self.s[self.rows, arms] += r
        self.t_obs += 1

    # -- protocol --------------------------------------------------------------------------------

    def select(self, t, obs):
        x = self.inputs(obs)
        arms = self.choose(t, x)                               # every round: fixed stream consumption
        return self.warm_arms(t) if t <= self.warmup else arms

    def update(self, t, obs, arms, r):
        self.record(arms, np.asarray(r, dtype=np.float64))
        self.fit(t, obs)

    def choose(self, t, x):
        raise NotImplementedError


class NeuralES(NeuralAgent):
    """Neural-ES (glmes.md §2.4): m networks on their own perturbed histories, warm-up by pulling each
    arm once.  Paper defaults (§7.2): m = 10, scale = sigma_R = 0.1, lam = 1, L = 3, N = 20, 100 GD steps
    of size 0.01; options in the module docstring."""

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
        self.P = np.zeros((self.B, self.M, self.K))            # perturbation sums per member and arm

    def member(self):
        return np.minimum((self.j.take(1)[:, 0] * self.M).astype(np.int64), self.M - 1)

    def choose(self, t, x):
        j = self.torch.as_tensor(self.member(), device=self.device)
        b = self.torch.arange(self.B, device=self.device)
        Wj = [w[b, j].unsqueeze(1) for w in self.W]            # (B, 1, out, in)
        return self.argmax(self.outputs(x, Wj)[:, 0])

    def record(self, arms, r):
        super().record(arms, r)
        self.P[self.rows, :, arms] += self.scale * self.z.take(self.M)

    def extra(self):
        return self.P


class NeuralPHE(NeuralAgent):
    """Neural-PHE / NPR (spec §2.6, A15): one network refitted each round on freshly perturbed past
    rewards (per-arm sums drawn exactly, module docstring); greedy choice.  scale = 0.1."""

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
        return (self.scale * np.sqrt(self.n) * self.xi.take(self.K))[:, None, :]


class NeuralUCBTS(NeuralAgent):
    """Neural-UCB and Neural-TS: the gradient-feature confidence matrix U (spec §2.6)."""

    @classmethod
    def round_costs(cls, spec: dict, dims: dict, action_space: str = "finite"):
        """The GD fit (:meth:`NeuralAgent.round_costs`) plus every round's widths over the K arms and
        the rank-one update of U^{-1} (full: K d'^2 and d'^2; diagonal: K d' and d')."""
        per_round, per_seed = super().round_costs(spec, dims, action_space)
        p, matrix = cls.weights(spec, dims), hyper(cls, spec, "matrix")
        size = p if matrix == "diag" or (matrix == "auto" and p > 2000) else p * p
        return per_round, per_seed + NN_WIDTH_MAC_S * dims["K"] * size + NN_MATRIX_S * size

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
        self.g_chosen = None

    def widths2(self, x):
        """f (B, K) and g^T U^{-1} g / N (B, K) at the current weights; keeps the per-arm gradients."""
        f, acts = forward(self.W, x, self.out_scale)
        g = per_arm_grads(self.W, acts, self.out_scale).to(self.torch.float64)   # (B, K, p)
        if self.diag:
            q = (g * g * self.Uinv.unsqueeze(1)).sum(-1)
        else:
            q = (self.torch.matmul(g, self.Uinv) * g).sum(-1)
        self._g = g
        return f[:, 0], q.clamp_min(0.0) / self.N

    def select(self, t, obs):
        arms = super().select(t, obs)
        self.g_chosen = self._g[self.torch.arange(self.B), self.torch.as_tensor(arms)] / math.sqrt(self.N)
        return arms

    def update(self, t, obs, arms, r):
        g = self.g_chosen                                      # (B, p), at the weights that chose
        if self.diag:
            self.Uinv = 1.0 / (1.0 / self.Uinv + g * g)
        else:
            v = self.torch.matmul(self.Uinv, g.unsqueeze(-1))  # (B, p, 1)
            c = 1.0 / (1.0 + (g.unsqueeze(1) @ v)[:, 0, 0])
            self.Uinv -= c[:, None, None] * (v @ v.transpose(-1, -2))
        super().update(t, obs, arms, r)


class NeuralUCB(NeuralUCBTS):
    """Neural-UCB (Zhou et al. 2020; spec §2.6): f + gamma sqrt(g^T U^{-1} g / N), gamma = 1."""

    name = "neural_ucb"

    def __init__(self, setting, seeds, horizon, gamma: float = 1.0, **kw):
        super().__init__(setting, seeds, horizon, **kw)
        self.gamma = float(gamma)

    def choose(self, t, x):
        f, q = self.widths2(x)
        return self.argmax(f.to(self.torch.float64) + self.gamma * q.sqrt())


class NeuralTS(NeuralUCBTS):
    """Neural-TS (Zhang et al. 2021; spec §2.6): r(x) ~ N(f, nu^2 lam g^T U^{-1} g / N) per arm, nu = 1."""

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
