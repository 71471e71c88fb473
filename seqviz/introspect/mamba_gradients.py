"""Gradient flow through a transformers Mamba: G[t, k] = ‖∂L_t/∂h_k‖ and connectivity, exactly, by autograd.

The batched backward recursion of ``introspect.gradients`` writes out the Jacobians of seqviz's own
cells; a Mamba block's Jacobian (conv, input-dependent Δ, B, C, the gate) is not written out there, so
these run the blocks above the chosen layer again from that layer's residual stream h (a leaf) with a
time loop autograd can follow (``hf_mamba.mamba_block``'s equations), and take one gradient per loss,
the losses batched as rows (row b backpropagates L_(t_b) only: the rows never mix). The shared model is
never changed and never gets ``.grad`` (``torch.autograd.grad``).
"""

from __future__ import annotations

import numpy as np
import torch

from seqviz.hf_mamba import mamba_block

ROWS = 16  # losses backpropagated at once (each row holds a copy of the run: memory grows with it)


def loop_scan(f: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """c_t = f_t c_(t-1) + u_t over dim 1 for f, u [B, T, W], one step at a time (autograd follows it)."""
    c, out = torch.zeros_like(u[:, 0]), []
    for t in range(u.shape[1]):
        c = f[:, t] * c + u[:, t]
        out.append(c)
    return torch.stack(out, 1)


def _head(lm, h: torch.Tensor, start: int) -> torch.Tensor:
    """Logits [B, T, V] from the residual stream ``h`` [B, T, H] entering block ``start``."""
    backbone = lm.model.backbone
    for block in backbone.layers[start:]:
        h, _parts = mamba_block(block, h, frozenset(), scan=loop_scan)
    return lm.model.lm_head(backbone.norm_f(h))


def _stream(lm, ids: torch.Tensor, layer: int) -> torch.Tensor:
    """layers.{layer}.h [1, T, H], the residual stream after block ``layer`` (no autograd below it)."""
    return lm.trace(ids, names=[f"layers.{layer}.h"])[f"layers.{layer}.h"]


def gradient_matrix(lm, ids: torch.Tensor, layer: int = -1, wrt: str = "h", rows: int = ROWS) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂h^layer_k‖₂ for k ≤ t (NaN above the diagonal), L_t = −log p(ids[t+1] | ids[:t+1]);
    rows t = 0..T−2, columns k = 0..T−1, as ``introspect.gradients.gradient_matrix`` for seqviz's cells."""
    if wrt != "h":
        raise ValueError("a Mamba's gradient is taken with respect to its residual stream h")
    T = ids.shape[1]
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    layer = layer % lm.config.n_layers
    h = _stream(lm, ids, layer)  # [1, T, H]
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        for lo in range(0, T - 1, rows):
            t = torch.arange(lo, min(lo + rows, T - 1))  # the losses of this batch of rows
            leaf = h.detach().expand(len(t), -1, -1).clone().requires_grad_(True)
            logp = torch.log_softmax(_head(lm, leaf, layer + 1)[torch.arange(len(t)), t].float(), -1)
            loss = -logp[torch.arange(len(t)), ids[0, t + 1]].sum()  # row b: L_(t_b) alone
            (g,) = torch.autograd.grad(loss, leaf)
            G[t.numpy()] = g.double().norm(dim=-1).numpy()
    t_idx, k_idx = np.indices(G.shape)
    G[k_idx > t_idx] = np.nan
    return G


def connectivity(lm, ids: torch.Tensor, target: int) -> np.ndarray:
    """‖∂ logit_target[ids[target+1]] / ∂x_k‖ for every input embedding x_k, k ≤ target (Distill 2019)."""
    t = min(target, ids.shape[1] - 1)
    x = lm.model.backbone.embeddings(ids[:, : t + 1]).detach()
    with torch.enable_grad():
        x.requires_grad_(True)
        logits = _head(lm, x, 0)[0, t]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], x)
    return g[0].norm(dim=1).detach().numpy()
