"""Gradient flow through time: G[t, k] = ||dL_t / dh_k|| by autograd, on real models.

BPTT multiplies one Jacobian per step, dh_j/dh_{j-1} = diag(1 - h_j^2) W_hh for the
vanilla RNN (Bengio et al. 1994; Pascanu et al. 2013), so the gradient a loss at t
sends back to step k shrinks or grows geometrically in t - k. The LSTM adds a second,
additive path through the cell state, dC_t/dC_{t-1} ~ f_t (Hochreiter & Schmidhuber
1997). minGRU and minLSTM (Feng et al. 2024) have a diagonal Jacobian, ∂h_j/∂h_{j−1} = diag(z_j) or
diag(f′_j): their gates read only x_j, so only the gate itself carries the gradient back in time (the
layers above still reach it through their inputs). ``gradient_matrix`` writes the backward recursion
out (no autograd); the other
functions run an unrolled copy of the model's cells built from its weights. Either way
the shared, cached model is never modified and never gets ``.grad``.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from seqviz.config import MAX_GRADIENT_TOKENS, MINIMAL_CELLS
from seqviz.families import of
from seqviz.introspect.memory import shift_retention_bias
from seqviz.models.recurrent import RecurrentLM


def unrolled(model: RecurrentLM, ids: torch.Tensor) -> dict:
    """Step-by-step forward that keeps every h_k (and c_k) as its own autograd node.

    ids [1, T]. Returns {"x": [1, T, E] leaf requiring grad, "h": per layer a list of T
    tensors [1, H], "c": (LSTM) same, "logits": [1, T, V]}.
    """
    cell = model.config.cell
    x = model.embed.weight[ids[:1]].detach().clone().requires_grad_(True)
    inputs = list(x.unbind(1))  # T x [1, E]
    hs_all, cs_all = [], []
    for rnn in model.layers:
        if cell in MINIMAL_CELLS:  # the layer's own step, one autograd node per h_k
            hs = []
            for xt in inputs:
                hs.append(rnn.step(xt, hs[-1] if hs else xt.new_zeros(1, rnn.hidden_size)))
            hs_all.append(hs)
            cs_all.append([])
            inputs = hs
            continue
        W_ih, W_hh, b_ih, b_hh = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
        h = W_hh.new_zeros(1, rnn.hidden_size)
        c = torch.zeros_like(h)
        hs, cs = [], []
        for xt in inputs:
            gi, gh = F.linear(xt, W_ih, b_ih), F.linear(h, W_hh, b_hh)
            if cell == "rnn":
                h = torch.tanh(gi + gh)
            elif cell == "gru":
                i_r, i_z, i_n = gi.chunk(3, -1)
                h_r, h_z, h_n = gh.chunk(3, -1)
                r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
                h = (1 - z) * torch.tanh(i_n + r * h_n) + z * h
            else:
                i, f, g, o = (gi + gh).chunk(4, -1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                cs.append(c)
            hs.append(h)
        hs_all.append(hs)
        cs_all.append(cs)
        inputs = hs
    logits = model.head(torch.stack(hs_all[-1], dim=1))  # [1, T, V]
    return {"x": x, "h": hs_all, "c": cs_all, "logits": logits}




def _layer_values(model: RecurrentLM, ids: torch.Tensor) -> list[dict]:
    """Per layer, the [T, ...] forward values the backward recursion needs (fused fast path)."""
    tr = model.trace(ids)
    out = []
    for i, rnn in enumerate(model.layers):
        p = f"layers.{i}."
        h = tr[p + "h"][0]
        if model.config.cell in MINIMAL_CELLS:  # the pre-activations of x_k alone (x: the layer's input)
            x = tr["embed"][0] if i == 0 else tr[f"layers.{i - 1}.h"][0]
            out.append({"h": h, "h_prev": torch.cat([torch.zeros_like(h[:1]), h[:-1]]), "W_ih": rnn.proj.weight,
                        "pre": rnn.proj(x).chunk(len(rnn.GATES), -1)})
            continue
        v = {"h": h, "h_prev": torch.cat([torch.zeros_like(h[:1]), h[:-1]]), "W_hh": rnn.weight_hh_l0,
             "W_ih": rnn.weight_ih_l0}
        if model.config.cell == "lstm":
            c = tr[p + "c"][0]
            v.update(c=c, c_prev=torch.cat([torch.zeros_like(c[:1]), c[:-1]]), tanh_c=torch.tanh(c),
                     i=tr[p + "gates.input"][0], f=tr[p + "gates.forget"][0], g=tr[p + "gates.cell"][0],
                     o=tr[p + "gates.output"][0])
        elif model.config.cell == "gru":
            gh = F.linear(v["h_prev"], rnn.weight_hh_l0, rnn.bias_hh_l0)
            v.update(r=tr[p + "gates.reset"][0], z=tr[p + "gates.update"][0], n=tr[p + "gates.new"][0],
                     hn=gh.chunk(3, -1)[2])  # W_hn h_{k-1} + b_hn, the part the reset gate scales
        out.append(v)
    return out


def _step_back(cell: str, v: dict, k: int, dh: torch.Tensor, dc: torch.Tensor | None, inputs: bool = True):
    """Backward through step k of one layer for a batch of cotangents (one row per loss).

    dh = dL/dh_k, dc = dL/dc_k through c_{k+1} only (LSTM). Returns (dL/dh_{k-1}, dL/dc_{k-1},
    dL/dx_k, dL/dc_k in total); the Jacobians are the cell's equations, written out.
    ``inputs=False`` skips dL/dx_k (None): nothing below the layer asked for is needed.
    """
    W_ih = v["W_ih"] if inputs else None
    if cell in MINIMAL_CELLS:
        return _minimal_back(cell, v, k, dh, inputs)
    if cell == "rnn":
        da = dh * (1 - v["h"][k] ** 2)
        return da @ v["W_hh"], None, da @ W_ih if inputs else None, None
    if cell == "gru":  # h = (1 - z) n + z h_prev, n = tanh(i_n + r (W_hn h_prev + b_hn))
        r, z, n, hn = v["r"][k], v["z"][k], v["n"][k], v["hn"][k]
        da_n = dh * (1 - z) * (1 - n ** 2)
        da_r = da_n * hn * r * (1 - r)
        da_z = dh * (v["h_prev"][k] - n) * z * (1 - z)
        d_prev = torch.cat([da_r, da_z, da_n * r], -1) @ v["W_hh"] + dh * z
        return d_prev, None, torch.cat([da_r, da_z, da_n], -1) @ W_ih if inputs else None, None
    i, f, g, o, tc = v["i"][k], v["f"][k], v["g"][k], v["o"][k], v["tanh_c"][k]
    dc_total = dc + dh * o * (1 - tc ** 2)  # c_k feeds h_k and c_{k+1}
    da = torch.cat([dc_total * g * i * (1 - i), dc_total * v["c_prev"][k] * f * (1 - f),
                    dc_total * i * (1 - g ** 2), dh * tc * o * (1 - o)], -1)
    return da @ v["W_hh"], dc_total * f, da @ W_ih if inputs else None, dc_total


def _minimal_back(cell: str, v: dict, k: int, dh: torch.Tensor, inputs: bool):
    """``_step_back`` for minGRU (h = z h_prev + (1 − z) g(p_n)) and minLSTM (h = f′ h_prev + (1 − f′) g(p_c),
    f′ = σ(p_f) / (σ(p_f) + σ(p_i))): the gates read x_k only, so h_{k−1} gets dh times the gate alone."""
    h_prev = v["h_prev"][k]
    pre = [p[k] for p in v["pre"]]
    cand = pre[-1]
    s = torch.sigmoid(cand)
    g, dg = torch.where(cand >= 0, cand + 0.5, s), torch.where(cand >= 0, torch.ones_like(s), s * (1 - s))
    if cell == "mingru":
        z = torch.sigmoid(pre[0])
        keep, dpre = z, [dh * (h_prev - g) * z * (1 - z), dh * (1 - z) * dg]
    else:
        i, f = torch.sigmoid(pre[0]), torch.sigmoid(pre[1])
        total = f + i
        keep, d_keep = f / total, dh * (h_prev - g) / total ** 2  # ∂f′/∂f = i/(f+i)², ∂f′/∂i = −f/(f+i)²
        dpre = [-d_keep * f * i * (1 - i), d_keep * i * f * (1 - f), dh * (1 - keep) * dg]
    return dh * keep, None, torch.cat(dpre, -1) @ v["W_ih"] if inputs else None, None


@torch.no_grad()
def gradient_matrix(model: RecurrentLM, ids: torch.Tensor, layer: int = -1, wrt: str = "h") -> np.ndarray:
    """G[t, k] = ||dL_t / d{h|c}^{layer}_k||_2 for k <= t (NaN above the diagonal).

    Rows t = 0..T-2 (each position with a next token), columns k = 0..T-1, where
    L_t = -log p(ids[t+1] | ids[:t+1]). Exact, by one forward pass and one backward
    recursion batched over the losses: going back from k = T-1 to 0, row t carries
    dL_t/dh_k for every loss t >= k still reachable (T^2 / 2 rows in all), through every
    layer at once. Tested against autograd (a backward pass per loss) and the BPTT product.
    """
    if own := _own_gradients(model):  # no written-out Jacobian: the family's own (autograd on its unrolled blocks)
        return own.gradient_matrix(model, ids, layer, wrt)
    if wrt == "c" and not of(model).applies("cell_path"):
        raise ValueError("only an LSTM has a cell state c")
    T = ids.shape[1]
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    if T > MAX_GRADIENT_TOKENS:
        raise ValueError(f"at most {MAX_GRADIENT_TOKENS} tokens for the exact gradient matrix, got {T}")
    cell, L = model.config.cell, model.config.n_layers
    target = layer % L
    values = _layer_values(model, ids)
    direct = loss_seeds(model, values[-1]["h"], ids)
    H = model.config.d_hidden
    zero_row = direct.new_zeros(1, H)
    dh_next = [direct.new_zeros(0, H) for _ in range(L)]  # dL_t/dh_k from step k+1, rows t = k..T-2
    dc_next = [direct.new_zeros(0, H) for _ in range(L)]
    G = np.full((T - 1, T), np.nan)
    for k in range(T - 2, -1, -1):  # h_{T-1} reaches no loss (its next token does not exist)
        from_above = None
        for l in range(L - 1, target - 1, -1):  # layers below the target never reach it
            dh = torch.cat([zero_row, dh_next[l]])  # row k (loss L_k) joins
            if l == L - 1:
                dh[0] += direct[k]
            if from_above is not None:
                dh = dh + from_above
            dc = torch.cat([zero_row, dc_next[l]]) if cell == "lstm" else None
            d_prev, dc_prev, dx, dc_total = _step_back(cell, values[l], k, dh, dc, inputs=l > target)
            if l == target:
                G[k:, k] = (dh if wrt == "h" else dc_total).double().norm(dim=1).cpu().numpy()
            dh_next[l], dc_next[l], from_above = d_prev, dc_prev, dx
    t_idx, k_idx = np.indices(G.shape)
    G[k_idx > t_idx] = np.nan
    return G


def loss_seeds(model: RecurrentLM, h_top: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """[T-1, H] dL_t/dh^top_t through the output layer alone, L_t = -log p(ids[t+1] | ids[:t+1]).

    h_top: [T, H] top-layer states. dL_t/dlogits_t = p_t - onehot(y_{t+1}), times W_out.
    """
    T = ids.shape[1]
    dlogits = torch.softmax(model.head(h_top[:-1]), -1)  # [T-1, V]: row t predicts ids[t+1]
    dlogits[torch.arange(T - 1), ids[0, 1:]] -= 1
    return dlogits @ model.head.weight


@torch.no_grad()
def chain_norms(seeds: torch.Tensor, W: torch.Tensor, gains: torch.Tensor | None = None) -> np.ndarray:
    """G[t, k] = ||seeds_t · J_t J_{t-1} ... J_{k+1}||, J_j = diag(gains_j) W (NaN for k > t).

    seeds [T-1, H] (dL_t/dh_t), W [H, H], gains [T, H] (tanh' = 1 - h_j^2 for a tanh RNN;
    None = 1 everywhere: the linear RNN h_t = W h_{t-1} + U x_t, whose chain is W^(t-k)).
    The same batched backward recursion as ``gradient_matrix``, in the dtype of ``seeds``.
    """
    T1, H = seeds.shape
    G = np.full((T1, T1 + 1), np.nan)
    carry = seeds.new_zeros(0, H)  # rows t = k..T-2: dL_t/dh_k
    for k in range(T1 - 1, -1, -1):
        carry = torch.cat([seeds[k: k + 1], carry])
        G[k:, k] = carry.norm(dim=1).cpu().numpy()
        carry = (carry * gains[k]) @ W if gains is not None else carry @ W  # to h_{k-1}, via J_k
    return G


def by_distance(G: np.ndarray, name: str = "") -> pd.DataFrame:
    """Mean, median and 10-90% spread of G[t, t-d] over t, for each distance d >= 0 (finite values only)."""
    T1 = G.shape[0]
    D = np.full((T1, T1), np.nan)  # row d: G[t, t - d] for t = d .. T1-1, then NaN
    for d in range(T1):
        diagonal = np.diagonal(G, offset=-d)
        D[d, : len(diagonal)] = diagonal
    D[~np.isfinite(D)] = np.nan  # inf and NaN are left out, as before any statistic
    count = np.isfinite(D).sum(1)
    keep = count > 0
    D, count = D[keep], count[keep]
    if not len(D):
        return pd.DataFrame(columns=["model", "distance", "mean", "median", "q10", "q90", "count"])
    with np.errstate(all="ignore"):  # one reduction per statistic over all distances at once
        q10, median, q90 = np.nanquantile(D, [0.1, 0.5, 0.9], axis=1)
        mean = np.nanmean(D, axis=1)
    return pd.DataFrame({"model": name, "distance": np.flatnonzero(keep), "mean": mean, "median": median,
                         "q10": q10, "q90": q90, "count": count})


def forget_product(forget: torch.Tensor) -> pd.DataFrame:
    """Mean over units and t of prod_{j=k+1}^{t} f_j against the distance t - k.

    forget: [T, H] (one row of a trace's ``layers.{i}.gates.forget``). The seeds'
    dC_t/dC_{t-1} ~ f_t: this product is the cell-state path's gain, ignoring the
    gates' own dependence on h.
    """
    logf = torch.log(forget.double().clamp_min(1e-300))
    cum = torch.cat([torch.zeros(1, logf.shape[1], dtype=logf.dtype), logf.cumsum(0)])  # S_t = sum_{j<=t}
    T = forget.shape[0]
    rows = []
    for d in range(T):
        t = torch.arange(d, T)
        prod = torch.exp(cum[t + 1] - cum[t - d + 1])  # prod_{j=t-d+1}^{t} f_j
        rows.append({"distance": d, "mean": float(prod.mean()), "median": float(prod.median())})
    return pd.DataFrame(rows)


def connectivity(model: RecurrentLM, ids: torch.Tensor, target: int) -> np.ndarray:
    """||d logit_target[ids[target+1]] / d x_k|| for every input position k (Distill 2019)."""
    if own := _own_gradients(model):
        return own.connectivity(model, ids, target)
    t = min(target, ids.shape[1] - 1)
    with torch.enable_grad():
        run = unrolled(model, ids[:, : t + 1])
        logits = run["logits"][0, t]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], run["x"])
    return g[0].norm(dim=1).detach().numpy()


# ------------------------------------------------------------------ what-if, on copies
def _own_gradients(model):
    """The family's own gradient module (``Family.gradients``: Mamba's autograd on its unrolled blocks), or None
    where seqviz's written-out backward step applies."""
    import importlib

    family = of(model)
    return importlib.import_module(family.gradients) if family.gradients else None


def _recurrent_weights(model) -> None:
    """ValueError with the family's sentence where it has no W_hh (minGRU, minLSTM, Mamba)."""
    if not of(model).applies("recurrent_weights"):
        raise ValueError(of(model).why_not("recurrent_weights"))


def recurrent_spectrum(model: RecurrentLM, layer: int = 0) -> pd.DataFrame:
    """Spectral norm ||W||_2 and spectral radius max|eig(W)| of each H x H recurrent block (one per gate, in the
    family's weight order; a tanh RNN's one W_hh)."""
    _recurrent_weights(model)
    W = model.layers[layer].weight_hh_l0.detach().double()
    H = W.shape[1]
    rows = []
    for name, block in zip(of(model).gates or ("W_hh",), W.split(H)):
        rows.append({"block": name, "spectral_norm": float(torch.linalg.matrix_norm(block, ord=2)),
                     "spectral_radius": float(torch.linalg.eigvals(block).abs().max())})
    return pd.DataFrame(rows)


def edited_copy(model: RecurrentLM, scale_to: float | None = None, forget_shift: float = 0.0,
                orthogonal: bool = False, seed: int = 0) -> RecurrentLM:
    """A private copy with its recurrent weights changed; the original is untouched.

    ``scale_to``: rescale every layer's W_hh block by block so each block's spectral norm
    equals this value. ``forget_shift``: add to the LSTM forget-gate bias. ``orthogonal``:
    re-initialise W_hh blocks orthogonally (spectral radius 1; Saxe et al. 2014).
    """
    if orthogonal or scale_to is not None:
        _recurrent_weights(model)
    clone = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for rnn in clone.layers:
            H = rnn.hidden_size
            for block in rnn.weight_hh_l0.split(H):
                if orthogonal:
                    q, r = torch.linalg.qr(torch.randn(H, H, generator=gen, dtype=torch.float64))
                    block.copy_((q * torch.sign(torch.diagonal(r))).to(block.dtype))
                if scale_to is not None:
                    norm = torch.linalg.matrix_norm(block.double(), ord=2)
                    if norm > 0:
                        block.mul_(float(scale_to / norm))
            if forget_shift and of(clone).applies("cell_path"):
                shift_retention_bias(rnn, of(clone).retention_chunk, forget_shift)
    return clone


def clipped_step(model: RecurrentLM, ids: torch.Tensor, lr: float = 0.1, clip: float | None = None) -> dict:
    """One SGD step on a copy: global gradient norm before/after clipping, update size.

    Clipping rescales g <- min(1, c / ||g||) g (Pascanu et al. 2013): it keeps the
    direction and only ever shrinks, so it tames explosions but cannot undo vanishing.
    """
    clone = copy.deepcopy(model).requires_grad_(True)
    params = [p for p in clone.parameters()]
    with torch.enable_grad():
        logits, _ = clone(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        grads = torch.autograd.grad(loss, params)
    norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
    scale = 1.0 if clip is None else min(1.0, clip / (norm + 1e-6))
    with torch.no_grad():
        for p, g in zip(params, grads):
            p -= lr * scale * g
    clone.requires_grad_(False).eval()
    return {"model": clone, "loss": float(loss.detach()), "grad_norm": norm, "clipped_norm": norm * scale,
            "update_norm": lr * norm * scale}
