"""The network of the glmes neural agents (:mod:`.neural_es`; Sun, Wang & Xu 2025, glmes §2.4), in
batched torch: widths and initialisation, the forward pass, a hand-written backward pass and per-arm
gradients, the full-batch GD fit, and the inverse of U updated rank one at a time.

Network (glmes §2.4): f(x; theta) = sqrt(N) W_L phi(W_{L-1} phi(... phi(W_1 x))), phi = ReLU, no
biases, hidden widths N; d' = N d + N^2 (L - 2) + N weights (820 for d = 20, L = 3, N = 20).
Initialisation theta_0: W_1 = blockdiag(W, W) with W (N/2 x d/2) iid N(0, 4/N); W_l = blockdiag(W, W),
W (N/2 x N/2) iid N(0, 4/N) for 2 <= l <= L-1; W_L = (w, -w), w (1 x N/2) iid N(0, 2/N).
"""
from __future__ import annotations

import math
import sys

import numpy as np


def widths(d: int, L: int, N: int) -> list[int]:
    """Layer widths [d, N, ..., N, 1] of the L-layer network."""
    return [int(d)] + [int(N)] * (int(L) - 1) + [1]


def n_weights(d: int, L: int, N: int) -> int:
    """d' = N d + N^2 (L - 2) + N (glmes §2.4)."""
    return int(N) * int(d) + int(N) ** 2 * (int(L) - 2) + int(N)


def init_weights(g: np.random.Generator, d: int, L: int, N: int, init: str = "block") -> list[np.ndarray]:
    """theta_0 of one seed: the list of weight matrices (out, in), drawn from ``g`` (glmes §2.4, glmes-A12)."""
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


def _members_share(x, W1) -> bool:
    """Whether the M > 1 networks of first layers ``W1`` (B, M, N, d) read the same inputs ``x``
    (B, K, d), so that :func:`_first_layer` applies."""
    return W1.shape[1] > 1 and x.dim() == 3 and x.shape[0] == W1.shape[0]


def _first_layer(x, W1):
    """relu(W1_m x_k) (B, M, K, N) of every member m at once: x (B, K, d) times the members' first
    layers side by side (B, d, M N), then laid out member-major.  With ``shared_first`` (:func:`forward`,
    :func:`backward`) this and the first layer's gradient (one product of the stacked deltas with x)
    replace M products of a copy of x broadcast to every member: the same dot products, 1.3x faster
    a GD step over 1,000-5,000 history rows of 10 seeds x 10 members, but MKL may round them differently (it
    did at N = 10), so only the per-round-context fits use it (revision 2 of those cells)."""
    import torch
    B, M, N, d = W1.shape
    h = torch.relu(torch.matmul(x, W1.reshape(B, M * N, d).transpose(-1, -2)))   # (B, K, M N)
    return h.view(B, x.shape[1], M, N).transpose(1, 2).contiguous()


def forward(weights, x, out_scale: float, shared_first: bool = False):
    """Outputs (B, M, K) of the batched networks ``weights`` (list of (B, M, out, in)) on arms ``x``
    (B, K, d), and the activations [a_0 = x, a_1, ..., a_{L-1}] for :func:`backward`
    (``shared_first``: the members' first layers as one product, :func:`_first_layer`)."""
    import torch
    acts = [x.unsqueeze(1)]                                    # (B, 1, K, d): shared by the members
    h = acts[0]
    for layer, W in enumerate(weights[:-1]):
        if layer == 0 and shared_first and _members_share(x, W):
            h = _first_layer(x, W)
        else:
            h = torch.relu(torch.matmul(h, W.transpose(-1, -2)))    # (B, M, K, N)
        acts.append(h)
    # the one output: a multiply-and-sum, not a product with one column (MKL's batched gemv rounds
    # with the batch size: a seed's output would depend on its batch)
    return out_scale * (h * weights[-1]).sum(-1), acts


def backward(weights, acts, c, out_scale: float, shared_first: bool = False):
    """Gradients (list like ``weights``) of sum_k c_k f(x_k) for coefficients ``c`` (B, M, K)
    (``shared_first``: the first layer's as one product, :func:`_first_layer`)."""
    import torch
    grads = [None] * len(weights)
    delta = out_scale * c.unsqueeze(-1)                        # d/d(pre-output): (B, M, K, 1)
    for layer in range(len(weights) - 1, -1, -1):
        a = acts[layer]                                        # (B, M|1, K, in)
        if layer == 0 and shared_first and _members_share(a[:, 0], weights[0]):
            B, M, K, N = delta.shape
            grads[0] = torch.matmul(delta.transpose(-1, -2).reshape(B, M * N, K), a[:, 0]).view(B, M, N, -1)
        else:
            grads[layer] = torch.matmul(delta.transpose(-1, -2), a)  # (B, M, out, in): sum over arms
        if layer:
            delta = torch.ops.aten.threshold_backward(torch.matmul(delta, weights[layer]), a, 0)  # ReLU'(z) = 1{a > 0}
    return grads


def per_arm_grads(weights, acts, out_scale: float, first: bool = True):
    """Per-arm gradients grad_theta f(x_k) (B, K, d') of single networks (M = 1), in the order
    vec(W_1), ..., vec(W_L) (row-major).  ``first=False``: (delta_1 (B, K, N), the gradient's part
    after vec(W_1) (B, K, d' - N d)) instead, since vec(W_1)'s part is delta_1 (x) x_k
    (:class:`StructuredWidths`)."""
    import torch
    B, _, K, _ = acts[-1].shape
    parts = [None] * len(weights)
    delta = torch.full((B, K, 1), out_scale, dtype=acts[-1].dtype, device=acts[-1].device)
    for layer in range(len(weights) - 1, -1, -1):
        a = acts[layer][:, 0].expand(B, K, -1)                 # (B, K, in)
        if layer or first:
            parts[layer] = (delta.unsqueeze(-1) * a.unsqueeze(-2)).reshape(B, K, -1)
        if layer:
            delta = torch.matmul(delta, weights[layer][:, 0]) * (a > 0)
    return torch.cat(parts, dim=-1) if first else (delta, torch.cat(parts[1:], dim=-1))


class StructuredWidths:
    """The widths g_k^T U^{-1} g_k of a fixed arm set (B, K arms x_k), exactly, at a fraction of the
    dense K d'^2: the gradient is g_k = [delta_k (x) x_k; e_k] (delta_k: the N-vector of the first
    layer, e_k: the later layers' gradient), so with U^{-1} = [[A, B], [B^T, D]] split after vec(W_1),

        g_k^T U^{-1} g_k = delta_k^T C_k delta_k + 2 delta_k^T E_k e_k + e_k^T D e_k,
        C_k = (I (x) x_k)^T A (I (x) x_k) (N x N),   E_k = (I (x) x_k)^T B (N x (d' - N d)),

    and the rank-one step U^{-1} <- U^{-1} - c v v^T moves them by C_k -= c w_k w_k^T, E_k -= c w_k
    v_D^T with w_k = reshape(v_A, N x d) x_k.  Width cost K (N^2 + N p_D + p_D^2) with p_D = d' - N d
    instead of K d'^2: 3.6x fewer at d = 20 (d' = 820), 10.9x at d = 50 (1,420); float64, equal to the
    dense form up to rounding (tests/test_neural_es.py)."""

    def __init__(self, Uinv, x, N: int):
        import torch
        B, K, d = x.shape
        self.x, self.N, self.p1 = x.to(torch.float64), int(N), int(N) * d
        A = Uinv[:, :self.p1, :self.p1].reshape(B, N, d, N, d)
        Bm = Uinv[:, :self.p1, self.p1:].reshape(B, N, d, -1)
        self.C = torch.einsum("bkj,bijml,bkl->bkim", self.x, A, self.x)
        self.E = torch.einsum("bkj,bijp->bkip", self.x, Bm)

    def widths(self, Uinv, delta, e):
        """g_k^T U^{-1} g_k (B, K) for first-layer deltas (B, K, N) and later parts e (B, K, p_D)."""
        D = Uinv[:, self.p1:, self.p1:]
        q = (delta.unsqueeze(-2) @ self.C @ delta.unsqueeze(-1))[..., 0, 0]
        q = q + 2.0 * (delta.unsqueeze(-2) @ (self.E @ e.unsqueeze(-1)))[..., 0, 0]
        return q + (e @ D * e).sum(-1)

    def update(self, v, c):
        """C_k and E_k after U^{-1} <- U^{-1} - c v v^T (v (B, d'), c (B,))."""
        B = v.shape[0]
        w = self.x @ v[:, :self.p1].reshape(B, self.N, -1).transpose(1, 2)   # (B, K, N): V_A x_k
        cw = c[:, None, None] * w
        self.C -= cw.unsqueeze(-1) * w.unsqueeze(-2)
        self.E -= cw.unsqueeze(-1) * v[:, None, None, self.p1:]


def gd_step(weights, theta0, x, n, target, lr, reg: float, out_scale: float, shared_first: bool = False):
    """One step of :func:`descend`: the new weights (a fresh list; ``lr`` a float or a 0-d tensor)."""
    f, acts = forward(weights, x, out_scale, shared_first)
    grads = backward(weights, acts, f - target if n is None else n * f - target, out_scale, shared_first)
    return [w - lr * (g + reg * (w - w0)) for w, g, w0 in zip(weights, grads, theta0)]


_COMPILED = {}


def compiled_step(device):
    """:func:`gd_step` compiled by ``torch.compile`` for ``device`` (static shapes; on CUDA in mode
    "reduce-overhead", which replays the step's kernels as one CUDA graph), built once per process.
    Where the compiler cannot run (no C++ compiler or Triton), the first call says so on stderr and
    the process goes on with the eager step (the same fit to rounding)."""
    import torch
    kind = torch.device(device).type
    if kind not in _COMPILED:
        mode = "reduce-overhead" if kind == "cuda" else None
        fn = torch.compile(gd_step, dynamic=False, mode=mode)

        def first_call(*args):
            try:
                out = fn(*args)
            except Exception as exc:                           # the compiler's; a real error recurs eagerly
                print(f"neural_net: torch.compile failed on {kind} ({type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''}); the GD steps run uncompiled",
                      file=sys.stderr, flush=True)
                _COMPILED[kind] = gd_step
                return gd_step(*args)
            _COMPILED[kind] = fn
            return out

        _COMPILED[kind] = first_call
    return _COMPILED[kind]


def descend(weights, theta0, x, n, target, steps: int, lr: float, reg: float, out_scale: float,
            shared_first: bool = False, compiled: bool = False):
    """``steps`` full-batch GD steps from ``weights`` on 1/2 sum_r (n_r f(x_r)^2 - 2 f(x_r) target_r)
    + reg/2 |theta - theta0|^2 over the rows x (B, R, d): gradient sum_r (n_r f_r - target_r) grad f_r
    + reg (theta - theta0), with n (B, 1, R) (None: 1) and target (B, M|1, R); step ``lr``.  A row
    with n_r = 0 and target_r = 0 adds nothing (the padding of a bucketed history).  ``compiled``: each
    step by :func:`compiled_step` (``lr`` passed as a tensor, so a new value compiles nothing); the same
    arithmetic up to rounding (the compiler may fuse and reorder)."""
    import torch
    W = [w.clone() for w in weights]
    if compiled:
        lr = torch.tensor(lr, dtype=x.dtype, device=x.device)
    for _ in range(steps):
        if compiled and x.device.type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()
        step = compiled_step(x.device) if compiled else gd_step
        W = step(W, theta0, x, n, target, lr, reg, out_scale, shared_first)
    return [w.clone() for w in W] if compiled else W          # out of the graphs' memory pool


def sherman_morrison(Uinv, g, structured=None):
    """In place and returned: U^{-1} (B, p, p) <- (U + g g^T)^{-1} for g (B, p); a
    :class:`StructuredWidths` given follows the step.  One batched product for v = U^{-1} g and one
    in-place rank-one product: two passes over U^{-1}, no p x p temporaries (the products round with
    the batch, which the fixed seed blocks keep the same; seed by seed the batch is one seed)."""
    v = (Uinv @ g.unsqueeze(-1))[..., 0]                       # U^{-1} g (B, p)
    c = 1.0 / (1.0 + (g * v).sum(-1))
    Uinv.baddbmm_((-c[:, None] * v).unsqueeze(-1), v.unsqueeze(1))
    if structured is not None:
        structured.update(v, c)
    return Uinv
