"""Griffin's residual blocks (De et al. 2024) re-run from a transformers RecurrentGemma's own weights: the RG-LRU
block, the local-attention block, and one-token steps of both for sampling (``seqviz.hf_rgemma`` traces them).

Every block is Griffin's residual block: h' = h + temporal(RMSNorm(h)), then h'' = h' + MLP(RMSNorm(h')). The
recurrent block's temporal part (transformers' ``RecurrentGemmaRecurrentBlock``, paper fig. 2) reads x_t, a causal
depthwise convolution of W_x u_t, and a gate branch GeLU(W_y u_t); its RG-LRU (eq. 1-4) is, per channel,

    r_t = σ(W_a x_t + b_a)          the recurrence gate        i_t = σ(W_x x_t + b_x)   the input gate
    a_t = σ(Λ)^(c·r_t), c = 8      its decay, in (0, 1)       s_t = a_t ⊙ s_(t−1) + √(1 − a_t²) ⊙ (i_t ⊙ x_t)

(transformers keeps −Λ: log a_t = −c·r_t·softplus(Λ'), the gates block-diagonal, one block per head), reset at
the first position (s_0 = i_0 ⊙ x_0: no √(1 − a²) there), and its output is W_out (s_t ⊙ GeLU(W_y u_t)). The local
attention block is causal multi-query attention over the last ``attention_window_size`` tokens with RoPE on half
of each head's dimensions. torch is imported inside the functions: importing this module costs none.
"""

from __future__ import annotations

C = 8.0  # Griffin's c in a_t = σ(Λ)^(c·r_t) (eq. 4): transformers' log a_t = −8 · r_t · softplus(Λ')


def lru_inputs(block, h):
    """What a recurrent residual block's RG-LRU reads, from the stream ``h`` [B, T, H] entering it: (x, y, i, r, a,
    b), each [B, T, W]: x_t the convolved input, y_t = GeLU(W_y u_t) the gate branch, the gates i_t and r_t, the
    decay a_t and the write b_t = √(1 − a_t²) ⊙ i_t ⊙ x_t (b_0 = i_0 ⊙ x_0: the reset at the first token)."""
    import torch.nn.functional as F

    temporal, T = block.temporal_block, h.shape[1]
    u = block.temporal_pre_norm(h)
    conv = temporal.conv_1d
    x = F.conv1d(temporal.linear_x(u).transpose(1, 2), conv.weight, conv.bias, padding=conv.kernel_size[0] - 1,
                 groups=conv.groups)[..., :T].transpose(1, 2)  # causal: the left padding only
    return _lru(block, u, x, first=True)


def _lru(block, u, x, first: bool):
    """(x, y, i, r, a, b) of ``lru_inputs`` from the normalised stream u and the convolved input x [B, T, W];
    ``first``: x's first step is the text's first token (the reset)."""
    import torch
    import torch.nn.functional as F

    temporal, lru = block.temporal_block, block.temporal_block.rg_lru
    y = temporal.act_fn(temporal.linear_y(u))
    heads = x.reshape(*x.shape[:2], lru.num_attention_heads, lru.block_width)  # one gate block per head

    def gate(weight, bias):  # σ(x_t W + b) block by block: [B, T, heads, width] x [heads, width, width]
        return torch.sigmoid(torch.einsum("bthi,hio->btho", heads, weight) + bias).reshape(x.shape)

    i, r = gate(lru.input_gate_weight, lru.input_gate_bias), gate(lru.recurrent_gate_weight, lru.recurrent_gate_bias)
    log_a = -C * r * F.softplus(lru.recurrent_param)
    scale = torch.sqrt(1 - torch.exp(2 * log_a))
    if first:  # position 0 resets the recurrence: its write is not normalised
        scale = torch.cat([torch.ones_like(scale[:, :1]), scale[:, 1:]], 1)
    return x, y, i, r, torch.exp(log_a), x * i * scale


def mlp(block, h):
    """The residual block's second half: h + MLP(RMSNorm(h))."""
    return h + block.mlp_block(block.channel_pre_norm(h))


def recurrent_block(block, h, leaves=frozenset(), scan=None, edits=None):
    """One recurrent residual block: (the stream after it, {leaf: tensor} for ``leaves`` of h, x, gates.input,
    gates.recurrence, gates.forget, gates.output, write, s). ``scan(f, b)`` runs s_t = f_t s_(t−1) + b_t over dim
    1 (``recurrent.cell_scan`` unless given: ``rgemma_gradients`` passes a loop autograd follows); ``edits``: leaf
    ("s", "h") -> [fn(state, t) -> state], each applied right after step t (then the state is scanned step by
    step, and the block's output at t reads the edited s_t, as the blocks above and step t + 1 do)."""
    import torch

    from seqviz.models.recurrent import cell_scan

    x, y, i, r, a, b = lru_inputs(block, h)
    edits = edits or {}
    f = torch.cat([torch.zeros_like(a[:, :1]), a[:, 1:]], 1)  # the reset: nothing before the first token
    if edits.get("s"):
        s, steps = torch.zeros_like(b[:, 0]), []
        for t in range(b.shape[1]):
            s = _each(edits["s"], f[:, t] * s + b[:, t], t, "s")
            steps.append(s)
        s = torch.stack(steps, 1)
    else:
        s = (scan or cell_scan)(f, b)
    out = mlp(block, h + block.temporal_block.linear_out(s * y))
    if edits.get("h"):  # the block's output feeds only the blocks above: editing it afterwards is exact
        out = torch.stack([_each(edits["h"], out[:, t], t, "h") for t in range(out.shape[1])], 1)
    parts = {"h": out, "x": x, "gates.input": i, "gates.recurrence": r, "gates.forget": a, "gates.output": y,
             "write": b, "s": s}
    return out, {k: v for k, v in parts.items() if k in leaves}


def _each(fns, state, t: int, leaf: str):
    """``state`` at step t through each edit of ``fns`` in order (each checked to keep its shape)."""
    from seqviz.models.edits import _edited

    for fn in fns:
        state = _edited(fn, state, t, leaf)
    return state


def _heads(attention, u, positions):
    """Queries [B, heads, T, d] and keys, values [B, kv heads, T, d] of ``u`` at ``positions`` [1, T], RoPE applied
    to the queries and keys (transformers' own rotary embedding: half of each head's dimensions)."""
    from transformers.models.recurrent_gemma.modeling_recurrent_gemma import apply_rotary_pos_emb

    shape = (*u.shape[:2], -1, attention.head_dim)
    q, k, v = (p(u).view(shape).transpose(1, 2) for p in (attention.q_proj, attention.k_proj, attention.v_proj))
    cos, sin = attention.rotary_emb(v, positions)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return q, k, v


def _attend(attention, q, k, v, allowed, weights: bool = False):
    """(softmax(q kᵀ / √d, where ``allowed``) v, the weights [B, heads, T_q, T_k] when ``weights`` else None); the
    keys are shared by groups of query heads (multi-query attention where there is one key head). Without the
    weights, torch's fused attention computes the same (transformers' default, "sdpa")."""
    import torch
    import torch.nn.functional as F

    groups = attention.num_key_value_groups
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    if weights:
        scores = (q @ k.transpose(2, 3)) * attention.scaling
        w = torch.softmax(scores.masked_fill(~allowed, float("-inf")).float(), -1).to(q.dtype)
        mixed = w @ v
    else:
        w, mixed = None, F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=attention.scaling)
    return mixed.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1), w


def attention_block(block, h, weights: bool = False):
    """One local-attention residual block: (the stream after it, the attention weights [B, heads, T, T] when
    ``weights``, else None). Query t sees keys j with t − window < j ≤ t (transformers' sliding-window mask)."""
    import torch

    attention, T = block.temporal_block, h.shape[1]
    positions = torch.arange(T)[None]
    q, k, v = _heads(attention, block.temporal_pre_norm(h), positions)
    t, j = torch.arange(T)[:, None], torch.arange(T)[None]
    mixed, w = _attend(attention, q, k, v, (j <= t) & (j > t - attention.sliding_window), weights)
    return mlp(block, h + attention.o_proj(mixed)), w


# ------------------------------------------------------------------ one token at a time (sampling)
def recurrent_step(block, h, conv, s, first: bool):
    """One token through a recurrent block: h [1, 1, H], conv [1, K − 1, W] (its last inputs to the
    convolution), s [1, W]; returns (h, conv, s). ``first``: the token at position 0 (the RG-LRU's reset)."""
    import torch

    temporal = block.temporal_block
    u = block.temporal_pre_norm(h)
    window = torch.cat([conv, temporal.linear_x(u)], 1)  # [1, K, W]: the causal convolution's inputs
    x = (window * temporal.conv_1d.weight[:, 0].T).sum(1, keepdim=True) + temporal.conv_1d.bias
    _x, y, _i, _r, a, b = _lru(block, u, x, first)
    s = (0 if first else a[:, 0] * s) + b[:, 0]
    return mlp(block, h + temporal.linear_out(s[:, None] * y)), window[:, 1:], s


def attention_step(block, h, keys, values, position: int):
    """One token through a local-attention block: h [1, 1, H]; keys, values [1, kv heads, ≤ window − 1, d] of the
    tokens before it inside the window (RoPE applied at their own positions); returns (h, keys, values) with this
    token's added and the oldest dropped once the window is full."""
    import torch

    attention = block.temporal_block
    q, k, v = _heads(attention, block.temporal_pre_norm(h), torch.tensor([[position]]))
    keys, values = torch.cat([keys, k], 2), torch.cat([values, v], 2)
    allowed = torch.ones(1, 1, 1, keys.shape[2], dtype=torch.bool)
    mixed, _w = _attend(attention, q, keys, values, allowed)
    keep = attention.sliding_window - 1
    return mlp(block, h + attention.o_proj(mixed)), keys[:, :, -keep:] if keep else keys[:, :, :0], \
        values[:, :, -keep:] if keep else values[:, :, :0]
