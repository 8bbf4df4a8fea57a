"""A GPT-architecture backbone as the trunk of the neural Ensemble++ heads (epp §2.6, epp §7.1): the
offline substitute of GPT-2 / Pythia-14m for the frozen-vs-finetuned ablation (epp-fig16).

The model is a *randomly initialised* small GPT-2 (``transformers.GPT2Model``; epp §7.1: 2 layers,
2 heads, 128-d, byte-level vocabulary, 64 positions; dropout 0, so a run is deterministic), one per
seed, fully finetuned through the mean head (``finetune: true``) or frozen (random features).  Its
feature of a post is the last hidden state at the last non-pad token (the authors' code).

Input layout (the hate-speech environment's ``features: tokens``): an arm's context is
[token ids (L), one-hot action (K)], token ids 1..256 (bytes + 1), 0 = pad.  The trunk returns the
disjoint encoding e_a (x) phi (K E), so the heads of :mod:`.neural_pp` are per-action heads on phi
(as with the frozen sentence features).  Per-seed weights: each seed's model is built under a torch
seed drawn from its own stream (seed, "agent/<name>/init/backbone"), so a seed's numbers do not
depend on its batch; the B models run in a loop over seeds (the backbone dominates a round's cost).
"""
from __future__ import annotations

import numpy as np

SHAPE = dict(n_layer=2, n_head=2, n_embd=128)     # epp §7.1
VOCAB = 257                                       # pad 0 + 256 byte values


def param_count(n_positions: int) -> int:
    """Parameters of the backbone (embeddings, n_layer blocks, final layer norm)."""
    E, L = SHAPE["n_embd"], SHAPE["n_layer"]
    block = 2 * E + (3 * E * E + 3 * E) + (E * E + E) + 2 * E + (4 * E * E + 4 * E) + (4 * E * E + E)
    return VOCAB * E + int(n_positions) * E + L * block + 2 * E


def build(agent, n_positions: int, finetune: bool) -> list:
    """One randomly initialised GPT2Model per seed; returns their parameters (a flat list)."""
    import torch
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=VOCAB, n_positions=n_positions, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=None, eos_token_id=None, **SHAPE)
    seeds = agent.streams.per_seed("init/backbone", lambda g: g.integers(0, 2**62, size=1))[:, 0]
    agent.models = []
    state = torch.random.get_rng_state()
    try:
        for s in seeds:
            torch.manual_seed(int(s))
            agent.models.append(GPT2Model(cfg).to(dtype=agent.dtype, device=agent.device).train(finetune))
    finally:
        torch.random.set_rng_state(state)
    params = [p for m in agent.models for p in m.parameters()]
    for p in params:
        p.requires_grad_(finetune)
    return params if finetune else []


def features(agent, x):
    """Disjoint per-action features (B, n, K E) of contexts x (B, n, L + K)."""
    import torch

    K = agent.K
    ids, onehot = x[..., :-K].long(), x[..., -K:]
    n = ids.shape[1]
    same = n > 1 and bool((ids == ids[:, :1]).all())            # acting: every arm shows the same post
    if same:
        ids = ids[:, :1]
    mask = (ids > 0).long()
    out = []
    with torch.set_grad_enabled(agent.finetune and torch.is_grad_enabled()):
        for b, model in enumerate(agent.models):
            B_ids, B_mask = ids[b], mask[b]
            hidden = model(input_ids=B_ids, attention_mask=B_mask).last_hidden_state            # (n, L, E)
            last = B_mask.sum(dim=1).clamp(min=1) - 1
            out.append(hidden[torch.arange(hidden.shape[0]), last])                              # (n, E)
    phi = torch.stack(out)                                                                        # (B, n, E)
    if same:
        phi = phi.expand(-1, n, -1)
    return (onehot[..., :, None] * phi[..., None, :]).flatten(-2)                                 # (B, n, K E)


def tokens(texts, max_tokens: int) -> np.ndarray:
    """Byte-level token ids (N, max_tokens) of ``texts``: UTF-8 bytes + 1, truncated, 0-padded."""
    out = np.zeros((len(texts), int(max_tokens)), dtype=np.int64)
    for i, t in enumerate(texts):
        b = np.frombuffer(t.encode("utf-8")[:max_tokens], dtype=np.uint8)
        out[i, :len(b)] = b.astype(np.int64) + 1
    return out
