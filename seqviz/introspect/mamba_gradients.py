"""Gradient flow through a transformers Mamba: G[t, k] = ‖∂L_t/∂s_k‖ (or ∂h_k) and connectivity, by autograd.

The batched backward recursion of ``introspect.gradients`` writes out the Jacobians of seqviz's own
cells; a Mamba block's Jacobian (conv, input-dependent Δ, B, C, the gate) is not written out there, so
these run the blocks above the chosen layer again from that layer's residual stream h (a leaf) with a
time loop autograd can follow (``hf_mamba.mamba_block``'s equations), and take one gradient per loss,
the losses batched as rows (row b backpropagates L_(t_b) only: the rows never mix). The shared model is
never changed and never gets ``.grad`` (``torch.autograd.grad``).

What a Mamba carries through time is the scan's state s_k [D, N] inside each block (s_t = exp(Δ_t A) s_(t−1)
+ Δ_t B_t u_t), not the residual stream h_k between blocks: h_k of the top block reaches only L_k. So
``wrt="state"`` takes ∂L_t/∂s_k of block ``layer``, the total derivative through every later state, by
adding a zero leaf ε_k to the scan's input at k (∂L/∂ε_k = ∂L/∂s_k); its decay with t − k is ∏ exp(Δ A).
"""

from __future__ import annotations

import numpy as np
import torch

from seqviz.hf_mamba import _mamba1_inputs, is_mamba2, mamba_block

ROWS = 16  # losses backpropagated at once (each row holds a copy of the run: memory grows with it)
ROW_BYTES = 256 << 20  # about what one batch of rows may hold in saved tensors (a 130 M Mamba: rows of 1)


def loop_scan(f: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """c_t = f_t c_(t-1) + u_t over dim 1 for f, u [B, T, W], one step at a time (autograd follows it).

    The steps come from ``unbind``: its backward stacks the T gradients once, where indexing ``f[:, t]``
    would write each into a zero tensor the size of the whole input (T times)."""
    c, out = torch.zeros_like(u[:, 0]), []
    for f_t, u_t in zip(f.unbind(1), u.unbind(1)):
        c = f_t * c + u_t
        out.append(c)
    return torch.stack(out, 1)


def _head(lm, h: torch.Tensor, start: int, nudge: torch.Tensor | None = None,
          at: torch.Tensor | None = None) -> torch.Tensor:
    """Logits [B, T, V] from the residual stream ``h`` [B, T, H] entering block ``start``; ``nudge`` [B, T, D·N]
    is added to that block's scan input (the state's perturbation). ``at`` [B]: row b's logits at position at[b]
    alone ([B, V]): the head of a 50k vocabulary is then read once a row, not at every position."""
    backbone = lm.model.backbone
    for i, block in enumerate(backbone.layers[start:]):
        scan = loop_scan if nudge is None or i else (lambda f, u: loop_scan(f, u + nudge))
        h, _parts = mamba_block(block, h, frozenset(), scan=scan)
    if at is not None:
        h = h[torch.arange(h.shape[0]), at]
    return lm.model.lm_head(backbone.norm_f(h))


def _stream(lm, ids: torch.Tensor, layer: int) -> torch.Tensor:
    """layers.{layer}.h [1, T, H], the residual stream after block ``layer`` (the embedding for −1)."""
    name = "embed" if layer < 0 else f"layers.{layer}.h"
    return lm.trace(ids, names=[name])[name]


def _rows(lm, T: int, blocks: int) -> int:
    """Losses per backward batch so that the saved tensors (T x D x N per block, a few each) fit ROW_BYTES."""
    per_row = 8 * 4 * T * lm.config.channels * lm.config.states * max(blocks, 1)
    return max(1, min(ROWS, ROW_BYTES // per_row))


def gradient_matrix(lm, ids: torch.Tensor, layer: int = -1, wrt: str = "h", rows: int = ROWS, head=None) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂h^layer_k‖₂ for k ≤ t (NaN above the diagonal), L_t = −log p(ids[t+1] | ids[:t+1]);
    rows t = 0..T−2, columns k = 0..T−1, as ``introspect.gradients.gradient_matrix`` for seqviz's cells.
    ``head(lm, h, start, nudge)``: another family's blocks and head (``rwkv_gradients``), in place of ``_head``."""
    head = head or _head
    if wrt not in ("h", "state"):
        raise ValueError("the gradient is taken with respect to the residual stream h or the state")
    T = ids.shape[1]
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    layer = layer % lm.config.n_layers
    state = wrt == "state"  # then from the stream entering block `layer`, its scan nudged
    h = _stream(lm, ids, layer - 1 if state else layer)  # [1, T, H]
    if head is _head and state and layer == lm.config.n_layers - 1 and not is_mamba2(lm.model.backbone.layers[layer].mixer):
        return top_state_gradients(lm, h, ids)
    start = layer if state else layer + 1
    rows = min(rows, _rows(lm, T, lm.config.n_layers - start))
    at = head is _head  # Mamba's head reads each row's own position alone; another family's gives every position

    def run(t):
        n = int(t[-1]) + 1  # L_t reads the first t + 1 tokens only (a causal model): the rest is not run
        stream = h[:, :n].detach().expand(len(t), -1, -1)
        leaf = (h.new_zeros(len(t), n, lm.config.channels * lm.config.states) if state
                else stream.clone()).requires_grad_(True)
        where = {"at": t} if at else {}
        return leaf, head(lm, stream, start, leaf, **where) if state else head(lm, leaf, start, **where)
    return by_rows(ids, rows, run)


def by_rows(ids: torch.Tensor, rows: int, run) -> np.ndarray:
    """G [T − 1, T] a batch of ``rows`` losses at a time, as every autograd family takes it: ``run(t)`` -> (leaf
    [len(t), n, ...], logits) for the losses L_t of the batch, the logits [len(t), V] at each row's own position
    t_b or [len(t), n, V] at every position, n > max t_b (a causal run may stop after the batch's last loss). Each
    row b of the leaf is its own copy, so one backward pass gives row b ‖∂L_(t_b)/∂leaf_k‖ over the leaf's other
    dimensions; NaN above the diagonal."""
    T = ids.shape[1]
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        for lo in range(0, T - 1, rows):
            t = torch.arange(lo, min(lo + rows, T - 1))  # the losses of this batch of rows
            leaf, logits = run(t)
            if logits.dim() == 3:
                logits = logits[torch.arange(len(t)), t]
            logp = torch.log_softmax(logits.float(), -1)
            loss = -logp[torch.arange(len(t)), ids[0, t + 1]].sum()  # row b: L_(t_b) alone
            (g,) = torch.autograd.grad(loss, leaf)
            G[t.numpy(), : leaf.shape[1]] = g.double().flatten(2).norm(dim=-1).numpy()
    t_idx, k_idx = np.indices(G.shape)
    G[k_idx > t_idx] = np.nan
    return G


def connectivity(lm, ids: torch.Tensor, target: int, head=None) -> np.ndarray:
    """‖∂ logit_target[ids[target+1]] / ∂x_k‖ for every input embedding x_k, k ≤ target (Distill 2019)."""
    t = min(target, ids.shape[1] - 1)
    x = lm.model.get_input_embeddings()(ids[:, : t + 1]).detach()
    with torch.enable_grad():
        x.requires_grad_(True)
        logits = head(lm, x, 0)[0, t] if head else _head(lm, x, 0, at=torch.tensor([t]))[0]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], x)
    return g[0].norm(dim=1).detach().numpy()


def top_state_gradients(lm, h: torch.Tensor, ids: torch.Tensor) -> np.ndarray:
    """``gradient_matrix`` of the top block's state of a Mamba, written out: no backward pass per loss.

    Above the top block's scan everything is per position (out_proj, the SiLU(z) gate, the residual, the final
    norm, the head), so L_t reads the scan only through y_t = C_t s_t + D u_t, and one backward pass of Σ_t L_t
    gives every g_t = ∂L_t/∂y_t. The state then carries s_k to s_t through the decays alone: ∂L_t/∂s_k[d, n] =
    g_t[d] C_t[n] ∏_(j=k+1..t) exp(Δ_j[d] A[d, n]) = g_t[d] C_t[n] exp(A[d, n] (S_t[d] − S_k[d])), S the running
    sum of Δ (float64: a sum over hundreds of steps); G[t, k] is its norm over the D × N lanes ([k, D, N] a row at a
    time, float32 terms in [0, 1] summed by one contraction)."""
    block = lm.model.backbone.layers[-1]
    mixer, T = block.mixer, ids.shape[1]
    with torch.no_grad():
        u, dt, B, C, z, A = _mamba1_inputs(mixer, block.norm(h))
        from seqviz.hf_mamba_scan import selective_scan

        y, _parts = selective_scan(dt, A, B, C, u, A.argmax(-1))
    with torch.enable_grad():
        read = y.detach().requires_grad_(True)
        out = h + mixer.out_proj((read + u * mixer.D) * torch.nn.functional.silu(z))
        logits = lm.model.lm_head(lm.model.backbone.norm_f(out[:, :-1]))
        loss = torch.nn.functional.cross_entropy(logits[0].float(), ids[0, 1:], reduction="sum")
        (g,) = torch.autograd.grad(loss, read)
    g2, c2 = g[0] ** 2, C[0] ** 2  # [T, D], [T, N]
    S, A2 = torch.cumsum(dt[0].double(), 0), 2 * A  # [T, D], [D, N]
    G = np.full((T - 1, T), np.nan)
    for t in range(T - 1):
        kept = torch.exp(A2 * (S[t] - S[: t + 1]).float()[..., None])  # [t + 1, D, N]: (∏ decay)² from k to t
        weights = g2[t][:, None] * c2[t][None, :]  # [D, N]
        G[t, : t + 1] = (kept.view(t + 1, -1) @ weights.view(-1)).double().sqrt().numpy()
    return G
