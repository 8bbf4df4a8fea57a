"""Small torch helpers shared by the neural agents (Neural-ES/TS/UCB/PHE, neural Ensemble++, ...).

This module imports torch only inside its functions, so a module that imports it at its top (an
agent module the workflow looks up while it builds the job graph) still imports no torch.

Randomness: every random number (initial weights, perturbations, index draws) is drawn in numpy
from :class:`ensemble_bandits.rng.Streams` -- per seed, named streams -- and converted with
:func:`from_stream`; no torch generator is used.  A seed's result therefore does not depend on the
batch or job it runs in (on CPU bit for bit; on CUDA up to the kernels' reductions).

Batched MLP weights: a network of widths ``[d, h1, ..., hL-1, 1]`` without biases is a list of
weight tensors ``W[l]`` of shape (B, M, out_l, in_l) -- B seeds x M members.  :func:`mlp_forward`
evaluates all B x M networks on shared inputs (B, K, d) or per-member inputs (B, M, K, d) with
batched matmuls (no Python loop over seeds or members).
"""
from __future__ import annotations

import numpy as np

DTYPES = ("float32", "float64")
DEVICES = ("cpu", "cuda")


def torch_dtype(name: str = "float32"):
    """The torch dtype named ``name``: "float32" (default) or "float64"."""
    import torch
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {name!r}")
    return torch.float32 if name == "float32" else torch.float64


def torch_device(name: str = "cpu"):
    """The torch device named ``name``: "cpu" (default) or "cuda" (a clear error when no GPU is present)."""
    import torch
    base = str(name).split(":")[0]
    if base not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES} (optionally 'cuda:<index>'), got {name!r}")
    if base == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but torch sees no CUDA device "
                           f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); use device: cpu")
    return torch.device(name)


def from_stream(array, dtype=None, device=None):
    """A tensor of the numpy ``array`` (e.g. draws from an rng.Streams block stream), converted to
    ``dtype`` (a torch dtype or its name; default float32) on ``device`` (default cpu).  The float64
    draws are rounded once to ``dtype`` here, identically whatever the batch."""
    import torch
    if dtype is None or isinstance(dtype, str):
        dtype = torch_dtype(dtype or "float32")
    if device is None or isinstance(device, str):
        device = torch_device(device or "cpu")
    return torch.as_tensor(np.ascontiguousarray(array)).to(device=device, dtype=dtype)


def mlp_forward(weights, x, act=None, return_hidden: bool = False):
    """Outputs (B, M, K) of B x M bias-free MLPs ``weights`` (list of (B, M, out, in)) on inputs
    ``x`` (B, K, d) shared by the members or (B, M, K, d); hidden layers use ``act`` (default ReLU),
    the last layer is linear.  With ``return_hidden``: also the list of pre-activations and
    activations [(z_1, a_1), ...] (each (B, M, K, width)) for hand-written backward passes."""
    import torch
    act = act or torch.relu
    h = x if x.dim() == 4 else x.unsqueeze(1)                      # (B, M|1, K, d)
    hidden = []
    for W in weights[:-1]:
        z = torch.matmul(h, W.transpose(-1, -2))                   # (B, M, K, out)
        h = act(z)
        hidden.append((z, h))
    out = torch.matmul(h, weights[-1].transpose(-1, -2))[..., 0]   # (B, M, K)
    return (out, hidden) if return_hidden else out


def n_params(widths) -> int:
    """Number of weights of a bias-free MLP of layer widths ``widths`` = [d, h1, ..., 1]."""
    return int(sum(a * b for a, b in zip(widths[:-1], widths[1:])))


def matmul(a, b):
    """``a @ b`` (batched, broadcasting as torch.matmul), bit for bit the same for a seed in any batch
    on the CPU: a product with one output column (b's last dim 1, a batched gemv) is a multiply-and-
    sum, because MKL's batched gemv rounds differently with the batch size; others are torch.matmul
    (batch-invariant on the CPU: tests/test_neural_pp.py at the papers' sizes)."""
    if b.shape[-1] == 1:
        return (a * b.transpose(-1, -2)).sum(-1, keepdim=True)
    return a @ b


def linear(x, W, bias=None):
    """Batched ``x W^T + bias``: x (B, n, in), W (B, out, in), bias (B, out) or None -> (B, n, out), via
    :func:`matmul` (one output: a multiply-and-sum)."""
    out = matmul(x, W.transpose(-1, -2))
    return out if bias is None else out + bias.unsqueeze(1)


class FlatAdam:
    """``torch.optim.Adam`` (coupled L2 ``weight_decay``, no amsgrad) over tensors re-homed into one
    flat buffer: the parameters and their gradients become views of two flat tensors, and a step is
    torch's single-tensor Adam arithmetic applied once to the buffer instead of once per tensor (about
    ten elementwise ops per step instead of ten per tensor: the dispatch overhead, not the arithmetic,
    dominates at the sizes of the neural bandits).  Elementwise, hence per seed: same values as
    ``torch.optim.Adam`` (tests/test_neural_pp.py).  ``weight_decay`` may be changed between steps."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        import torch
        params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps = float(lr), betas, float(eps)
        self.weight_decay, self.steps = float(weight_decay), 0
        with torch.no_grad():
            self.flat = torch.cat([p.detach().reshape(-1) for p in params])
            self.grad = torch.zeros_like(self.flat)
            self.exp_avg, self.exp_avg_sq = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
            offset = 0
            for p in params:
                n = p.numel()
                p.requires_grad_(True)
                p.data = self.flat[offset:offset + n].view_as(p)
                p.grad = self.grad[offset:offset + n].view_as(p)   # backward accumulates in place
                offset += n

    def zero_grad(self):
        self.grad.zero_()

    def step(self):
        """One step, as torch.optim.adam._single_tensor_adam (non-capturable branch)."""
        import torch
        with torch.no_grad():
            self.steps += 1
            grad = self.grad.add(self.flat, alpha=self.weight_decay) if self.weight_decay != 0 else self.grad
            self.exp_avg.lerp_(grad, 1 - self.beta1)
            self.exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
            step_size = self.lr / (1 - self.beta1 ** self.steps)
            denom = (self.exp_avg_sq.sqrt() / (1 - self.beta2 ** self.steps) ** 0.5).add_(self.eps)
            self.flat.addcdiv_(self.exp_avg, denom, value=-step_size)
