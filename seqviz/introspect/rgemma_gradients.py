"""Gradient flow through a transformers RecurrentGemma: G[t, k] = ‖∂L_t/∂s_k‖ (or ∂h_k) and connectivity, by autograd.

As for a Mamba (``introspect.mamba_gradients``, whose time loop ``loop_scan`` this reuses), an RG-LRU block's
Jacobian (the convolution, the input-dependent gates r_t and i_t, the gate branch) is not written out: the blocks
above the chosen one run again from the stream entering it with a loop autograd can follow, one gradient per
loss, the losses batched as rows (row b backpropagates L_(t_b) only). What a recurrent block carries through time
is its RG-LRU state s_k [W]: ``wrt="s"`` takes the total derivative ∂L_t/∂s_k through every later state by adding
a zero leaf ε_k to the write b_k (∂L/∂ε_k = ∂L/∂s_k), whose decay with t − k is ∏ a; ``wrt="h"`` takes it with
respect to the residual stream after the block. Local-attention blocks above are run as they are. The shared
model is never changed and never gets ``.grad`` (``torch.autograd.grad``). The gradient of √(1 − a²) is the
exact one (transformers clips it at 1,000 for bfloat16 training; a float32 run never reaches that).
"""

from __future__ import annotations

import numpy as np
import torch

from seqviz.hf_rgemma import head, outputs
from seqviz.hf_rgemma_blocks import attention_block, recurrent_block
from seqviz.introspect.mamba_gradients import ROW_BYTES, ROWS, loop_scan


def _run(lm, h: torch.Tensor, start: int, nudge: torch.Tensor | None = None) -> torch.Tensor:
    """Logits [B, T, V] from the stream ``h`` [B, T, H] entering block ``start`` (transformers' numbering);
    ``nudge`` [B, T, W] is added to that block's write b_t (the RG-LRU state's perturbation)."""
    model = lm.model.model
    for k in range(start, len(lm.config.blocks)):
        block = model.layers[k]
        if lm.config.blocks[k] == "attention":
            h, _w = attention_block(block, h)
            continue
        scan = loop_scan if nudge is None or k != start else (lambda f, b: loop_scan(f, b + nudge))
        h, _parts = recurrent_block(block, h, scan=scan)
    return head(lm.model, h)


def _blocks(lm, layer: int) -> int:
    """Transformers' block index of recurrent layer ``layer``."""
    return [k for k, kind in enumerate(lm.config.blocks) if kind == "recurrent"][layer]


def _stream(lm, ids: torch.Tensor, block: int) -> torch.Tensor:
    """The residual stream [1, T, H] after transformers' block ``block`` (the scaled embedding for −1)."""
    name = outputs(lm.config)[block] if block >= 0 else "embed"
    return lm.trace(ids, names=[name])[name]


def gradient_matrix(lm, ids: torch.Tensor, layer: int = -1, wrt: str = "s", rows: int = ROWS) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂s^layer_k‖₂ (``wrt="s"``) or ‖∂L_t/∂h^layer_k‖₂ (``"h"``) for k ≤ t (NaN above the
    diagonal), L_t = −log p(ids[t+1] | ids[:t+1]); rows t = 0..T−2, columns k = 0..T−1, as
    ``introspect.gradients.gradient_matrix`` for seqviz's cells."""
    if wrt not in ("h", "s"):
        raise ValueError("an RG-LRU's gradient is taken with respect to its residual stream h or its state s")
    T = ids.shape[1]
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    block = _blocks(lm, layer % lm.config.n_layers)
    state = wrt == "s"  # then from the stream entering the block, its write nudged
    h = _stream(lm, ids, block - 1 if state else block)
    start = block if state else block + 1
    per_row = 4 * 16 * T * max(lm.config.channels, lm.config.d_hidden) * (len(lm.config.blocks) - start + 1)
    rows = max(1, min(rows, ROW_BYTES // per_row))  # saved tensors: about 16 of T x W per block and row
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        for lo in range(0, T - 1, rows):
            t = torch.arange(lo, min(lo + rows, T - 1))  # the losses of this batch of rows
            stream = h.detach().expand(len(t), -1, -1)
            leaf = (h.new_zeros(len(t), T, lm.config.channels) if state else stream.clone()).requires_grad_(True)
            logits = _run(lm, stream, start, leaf) if state else _run(lm, leaf, start)
            logp = torch.log_softmax(logits[torch.arange(len(t)), t].float(), -1)
            (g,) = torch.autograd.grad(-logp[torch.arange(len(t)), ids[0, t + 1]].sum(), leaf)  # row b: L_(t_b)
            G[t.numpy()] = g.double().norm(dim=-1).numpy()
    t_idx, k_idx = np.indices(G.shape)
    G[k_idx > t_idx] = np.nan
    return G


def connectivity(lm, ids: torch.Tensor, target: int) -> np.ndarray:
    """‖∂ logit_target[ids[target+1]] / ∂x_k‖ for every input x_k (the scaled embedding), k ≤ target (Distill
    2019)."""
    t = min(target, ids.shape[1] - 1)
    x = lm.trace(ids[:, : t + 1], names=["embed"])["embed"]
    with torch.enable_grad():
        x.requires_grad_(True)
        logits = _run(lm, x, 0)[0, t]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], x)
    return g[0].norm(dim=1).detach().numpy()
