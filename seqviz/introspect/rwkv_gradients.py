"""Gradient flow through a transformers RWKV-4: G[t, k] = ‖∂L_t/∂a_k‖ (or ∂h_k) and connectivity, by autograd.

``mamba_gradients``' loop (losses batched as rows, one backward pass per batch, the shared model never changed)
with the RWKV's blocks (``hf_rwkv.blocks``: the WKV as a time loop autograd follows) and head. What an RWKV carries
through time is each block's numerator a_k and denominator b_k (and the token shift), not the residual stream
between blocks; ``wrt="state"`` takes ∂L_t/∂a_k of block ``layer`` (a zero leaf added to a_k at its real scale
right after step k), whose decay with t − k is at most e^(−w(t−k)) through the state itself.
"""

from __future__ import annotations

import numpy as np
import torch

from seqviz.introspect import mamba_gradients

ROWS = mamba_gradients.ROWS


def _head(lm, h: torch.Tensor, start: int, nudge: torch.Tensor | None = None) -> torch.Tensor:
    """Logits [B, T, V] from the residual stream ``h`` [B, T, H] entering block ``start``; ``nudge`` [B, T, C] is
    added to that block's numerator a_t at every step."""
    from seqviz.hf_rwkv import blocks

    h, _parts = blocks(lm, h, start, nudge=nudge)
    return lm.model.head(lm.model.rwkv.ln_out(h))


def gradient_matrix(lm, ids: torch.Tensor, layer: int = -1, wrt: str = "h", rows: int = ROWS) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂h^layer_k‖₂ (``wrt="state"``: ∂a^layer_k) for k ≤ t, NaN above the diagonal."""
    return mamba_gradients.gradient_matrix(lm, ids, layer, wrt, rows, head=_head)


def connectivity(lm, ids: torch.Tensor, target: int) -> np.ndarray:
    """‖∂ logit_target[ids[target+1]] / ∂x_k‖ for every input embedding x_k, k ≤ target (Distill 2019)."""
    return mamba_gradients.connectivity(lm, ids, target, head=_head)
