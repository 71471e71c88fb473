"""Gradient flow through a transformers xLSTM: G[t, k] = ‖∂L_t/∂C_k‖ (or ∂h_k) and connectivity, by autograd.

As for a Mamba (``introspect.mamba_gradients``, whose batching of losses as rows and byte budget this reuses), the
blocks above the chosen layer are run again from that layer's residual stream with ``hf_xlstm_cell.xlstm_block``'s
step-by-step loop, which autograd follows, and one gradient is taken per batch of losses (row b backpropagates
L_(t_b) only). The shared model is never changed and never gets ``.grad`` (``torch.autograd.grad``).

What an xLSTM carries through time is each head's matrix memory C̃_k [NH, DK, DV] inside a block, not the residual
stream h_k between blocks (h_k of the top block reaches only L_k). So ``wrt="C"`` takes ∂L_t/∂C̃_k of block
``layer``, the total derivative through every later memory, by adding a zero leaf ε_k to C̃_k (∂L/∂ε_k = ∂L/∂C̃_k);
its decay with t − k is the product of the stabilised forget gates. C̃ = C e^(−m): the norm is that of the memory
the model carries, in its own scale.
"""

from __future__ import annotations

import numpy as np
import torch

from seqviz.hf_xlstm_cell import logits_of, xlstm_block
from seqviz.introspect.mamba_gradients import ROW_BYTES, ROWS, _stream


def _head(lm, h: torch.Tensor, start: int, nudge: torch.Tensor | None = None) -> torch.Tensor:
    """Logits [B, T, V] from the residual stream ``h`` [B, T, H] entering block ``start``; ``nudge``
    [B, T, NH, DK, DV] is added to that block's memory at every step."""
    for i, block in enumerate(lm.model.backbone.blocks[start:]):
        h, _parts, _state = xlstm_block(block, h, frozenset(), nudge=nudge if i == 0 else None)
    return logits_of(lm.model, h)


def _memory(lm) -> tuple[int, int, int]:
    cfg = lm.config
    return cfg.heads, cfg.key_dim, cfg.value_dim


def _rows(lm, T: int, blocks: int) -> int:
    """Losses per backward batch so that the saved memories (T x NH x DK x DV per block, a few each) fit."""
    heads, dk, dv = _memory(lm)
    per_row = 8 * 4 * T * heads * dk * dv * max(blocks, 1)
    return max(1, min(ROWS, ROW_BYTES // per_row))


def gradient_matrix(lm, ids: torch.Tensor, layer: int = -1, wrt: str = "C", rows: int = ROWS) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂C̃^layer_k‖₂ (``wrt="C"``, all heads together) or ‖∂L_t/∂h^layer_k‖₂ (``wrt="h"``) for
    k ≤ t (NaN above the diagonal), L_t = −log p(ids[t+1] | ids[:t+1]); rows t = 0..T−2, columns k = 0..T−1, as
    ``introspect.gradients.gradient_matrix`` for seqviz's cells."""
    if wrt not in ("h", "C"):
        raise ValueError("an xLSTM's gradient is taken with respect to its residual stream h or its memory C")
    T = ids.shape[1]
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    layer = layer % lm.config.n_layers
    memory = wrt == "C"  # then from the stream entering block `layer`, its memory nudged
    h = _stream(lm, ids, layer - 1 if memory else layer)  # [1, T, H]
    start = layer if memory else layer + 1
    rows = min(rows, _rows(lm, T, lm.config.n_layers - start))
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        for lo in range(0, T - 1, rows):
            t = torch.arange(lo, min(lo + rows, T - 1))  # the losses of this batch of rows
            leaf = (h.new_zeros(len(t), T, *_memory(lm)) if memory
                    else h.detach().expand(len(t), -1, -1).clone()).requires_grad_(True)
            logits = _head(lm, h.detach().expand(len(t), -1, -1), start, leaf) if memory else _head(lm, leaf, start)
            logp = torch.log_softmax(logits[torch.arange(len(t)), t].float(), -1)
            loss = -logp[torch.arange(len(t)), ids[0, t + 1]].sum()  # row b: L_(t_b) alone
            (g,) = torch.autograd.grad(loss, leaf)
            G[t.numpy()] = g.double().flatten(2).norm(dim=-1).numpy()
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
