"""One transformers xLSTM block, re-run from its weights with the mLSTM's recurrent equations, step by step.

``xlstm_block`` is ``xLSTMBlock.forward`` (RMSNorm, mLSTM layer, residual, RMSNorm, gated feed-forward, residual)
with the layer's backend replaced by ``mlstm_cell``: transformers' ``mlstm_recurrent_step_native`` (the kernel its
inference path runs on a remainder shorter than a chunk, and ``generate`` on each token), operation for operation,
with the states it hands on exposed and editable. Shapes (B batch, T steps, NH heads, DK key and DV value
dimensions per head, U = NH·DV units) are written where tensors are born; ``seqviz.hf_xlstm`` lists the trace.
The loop follows autograd (no in-place writes): ``introspect.xlstm_gradients`` differentiates through it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seqviz.families.xlstm import LEAVES
from seqviz.models.edits import _edited


def soft_cap(x: torch.Tensor, cap) -> torch.Tensor:
    """cap · tanh(x / cap) (transformers' ``soft_cap``; None: x as it is)."""
    return x if cap is None else cap * torch.tanh(x / cap)


def logits_of(model, h: torch.Tensor) -> torch.Tensor:
    """``xLSTMForCausalLM``'s head on the residual stream h [B, T, H]: out_norm, lm_head, soft cap -> [B, T, V]."""
    logits = model.lm_head(model.backbone.out_norm(h))
    logits = logits if logits.dtype == torch.float64 else logits.float()  # a float64 copy stays float64 (tests)
    return soft_cap(logits, model.config.output_logit_soft_cap)


def projections(layer, x: torch.Tensor):
    """``xLSTMLayer``'s projections of its normalised input x [B, T, H]: q, k [B, T, NH, DK], v and õ [B, T, NH, DV],
    ĩ and f̃ [B, T, NH] (soft-capped), for both of its weight modes."""
    cfg, heads = layer.config, layer.config.num_heads
    if cfg.weight_mode == "single":
        q, k, v, o = layer.q(x), layer.k(x), layer.v(x), layer.ogate_preact(x)
        i, f = soft_cap(layer.igate_preact(x), cfg.gate_soft_cap), soft_cap(layer.fgate_preact(x), cfg.gate_soft_cap)
    else:  # "fused": one projection for q, k, v, õ and one for ĩ, f̃
        q, k, v, o = torch.tensor_split(layer.qkv_opreact(x), (layer.qk_dim, 2 * layer.qk_dim,
                                                               2 * layer.qk_dim + layer.v_dim), dim=-1)
        i, f = torch.tensor_split(soft_cap(layer.ifgate_preact(x), cfg.gate_soft_cap), (heads,), dim=-1)
    B, T = x.shape[:2]
    return (q.reshape(B, T, heads, -1), k.reshape(B, T, heads, -1), v.reshape(B, T, heads, -1),
            o.reshape(B, T, heads, -1), i, f)


def to_units(C: torch.Tensor) -> torch.Tensor:
    """[B, NH, DK, DV] (transformers' layout) -> [B, U, DK]: column j of head h is unit h·DV + j."""
    return C.transpose(-1, -2).reshape(C.shape[0], -1, C.shape[2])


def from_units(C: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, U, DK] -> [B, NH, DK, DV]."""
    return C.reshape(C.shape[0], heads, -1, C.shape[2]).transpose(-1, -2)


def _read_edited(fns, C, qs, den, c, t):
    """The memory after edits of its read-out c_t [B, NH, DV]: each column of C [B, NH, DK, DV] moved along q̂_t by
    δ·den/‖q̂_t‖², the least change making it read c_t + δ (a head whose q̂_t = 0 cannot be read otherwise: kept)."""
    B, heads = c.shape[:2]
    wanted = c.reshape(B, -1)
    for fn in fns:
        wanted = _edited(fn, wanted, t, "c")
    delta = wanted.reshape(c.shape) - c
    norm = (qs * qs).sum(-1, keepdim=True)  # [B, NH, 1]
    step = torch.where(norm > 0, delta * den / norm.clamp_min(1e-30), 0.0)  # [B, NH, DV]
    return C + qs[..., :, None] * step[..., None, :]


def mlstm_cell(q, k, v, i_pre, f_pre, eps: float, state=None, edits=None, nudge=None, keep=()):
    """The mLSTM over T steps as ``mlstm_recurrent_step_native`` (Beck et al. 2024, eqs. 19-27, stabilised):
    q, k [B, T, NH, DK], v [B, T, NH, DV], ĩ, f̃ [B, T, NH]; ``state`` (C̃ [B, NH, DK, DV], ñ [B, NH, DK], m [B, NH, 1])
    or zeros. ``edits``: leaf ("C", "c") -> [fn(state, t)]; ``nudge`` [B, T, NH, DK, DV] is added to C̃_t (a zero leaf:
    autograd's ∂L/∂C_k). Returns (c [B, T, NH, DV], {name: [B, T, ...]} of ``keep`` ("input", "m", "n", "C"), the
    last state)."""
    B, T, heads, DK = q.shape
    if state is None:
        state = (q.new_zeros(B, heads, DK, v.shape[-1]), q.new_zeros(B, heads, DK), q.new_zeros(B, heads, 1))
    C, n, m = state
    qs = q * DK ** -0.5
    logf = F.logsigmoid(f_pre)[..., None]  # [B, T, NH, 1]
    i_pre = i_pre[..., None]
    on_C, on_c = (edits or {}).get("C", ()), (edits or {}).get("c", ())
    cs, kept = [], {name: [] for name in keep}
    for t in range(T):
        m_new = torch.maximum(logf[:, t] + m, i_pre[:, t])  # [B, NH, 1]
        fa, ia = torch.exp(logf[:, t] + m - m_new), torch.exp(i_pre[:, t] - m_new)
        C = fa[..., None] * C + ia[..., None] * (k[:, t, :, :, None] @ v[:, t, :, None, :])  # [B, NH, DK, DV]
        n = fa * n + ia * k[:, t]  # [B, NH, DK]
        m = m_new
        if nudge is not None:
            C = C + nudge[:, t]
        for fn in on_C:
            C = from_units(_edited(fn, to_units(C), t, "C"), heads)
        q_t = qs[:, t, :, None, :]  # [B, NH, 1, DK]
        den = torch.maximum((q_t @ n[..., None])[:, :, 0].abs(), torch.exp(-m)) + eps  # [B, NH, 1]
        c = (q_t @ C)[:, :, 0] / den  # [B, NH, DV]
        if on_c:
            C = _read_edited(on_c, C, qs[:, t], den, c, t)
            c = (q_t @ C)[:, :, 0] / den
        cs.append(c)
        for name, value in (("input", ia), ("m", m), ("n", n), ("C", C)):
            if name in kept:
                kept[name].append(to_units(C) if name == "C" else value)
    return torch.stack(cs, 1), {name: torch.stack(v, 1) for name, v in kept.items()}, (C, n, m)


def xlstm_block(block, h: torch.Tensor, leaves=frozenset(LEAVES), edits=None, state=None, nudge=None):
    """One ``xLSTMBlock`` on the residual stream h [B, T, H]: (the stream after it, {leaf: tensor} for ``leaves``,
    the layer's last (C̃, ñ, m)). ``edits``: leaf ("h", "c", "C") -> [fn(state, t)] (``XLSTMLM.trace``)."""
    layer, edits = block.mlstm_layer, edits or {}
    B, T = h.shape[:2]
    q, k, v, o, i_pre, f_pre = projections(layer, block.norm_mlstm(h))
    heads, DV = v.shape[2], v.shape[3]
    keep = [name for name, leaf in (("input", "gates.input"), ("m", "m"), ("n", "n"), ("C", "C")) if leaf in leaves]
    c, kept, last = mlstm_cell(q, k, v, i_pre, f_pre, layer.config.eps, state, edits, nudge, keep)
    gate = torch.sigmoid(o).reshape(B, T, -1)  # [B, T, U]
    out = h + layer.out_proj(gate * layer.multihead_norm(c).reshape(B, T, -1))
    out = out + block.ffn(block.norm_ffn(out))
    if edits.get("h"):  # a block's output feeds only the blocks above: editing it after the block is exact
        steps = []
        for t in range(T):
            h_t = out[:, t]
            for fn in edits["h"]:
                h_t = _edited(fn, h_t, t, "h")
            steps.append(h_t)
        out = torch.stack(steps, 1)

    def per_unit(x):  # [B, T, NH] -> [B, T, U]: a head's gate on each of its DV columns
        return x[..., None].expand(B, T, heads, DV).reshape(B, T, -1)

    parts = {"h": lambda: out, "q": lambda: q.reshape(B, T, -1), "k": lambda: k.reshape(B, T, -1),
             "v": lambda: v.reshape(B, T, -1), "gates.input": lambda: per_unit(kept["input"][..., 0]),
             "gates.forget": lambda: per_unit(torch.sigmoid(f_pre)), "gates.output": lambda: gate,
             "m": lambda: kept["m"][..., 0], "n": lambda: kept["n"].reshape(B, T, -1),
             "c": lambda: c.reshape(B, T, -1), "C": lambda: kept["C"]}
    return out, {leaf: parts[leaf]() for leaf in LEAVES if leaf in leaves}, last
